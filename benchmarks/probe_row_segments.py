"""Row segments recorded by the row builder (benchmarks/results/constraint.md, "Round 10 (row segments)"):
make_rows with and without recording each row's nonzero segments (``segs``), the convex solve reading them
or scanning J, and whole steps, as an in-process A/B.

Two scenes of the same settled state (A: ``make_rows(segs=False)``, efc_seg[r][0] = −1, the solve scans J;
B: segments recorded, the solve reads them) are built in one process; each probe alternates the variants
(ABBA), ``samples`` samples each, and prints min / median CPU µs per env. Before timing it checks that B's
recorded segments equal a NumPy scan of J inside the recorded spans (the bounds the solve found by scanning)
and that one step leaves both scenes' state, forces and Jᵀf byte for byte equal.

    PYTHONPATH=. python benchmarks/probe_row_segments.py [--n 1024] [--scenes boxes,humanoid,pile]
        [--islands on,off] [--samples 16] [--steps 10]
"""

from __future__ import annotations

import argparse
import os
import time
from functools import partial

import numpy as np
import warp as wp

from benchmarks import profile_constraint as P

wp.config.quiet = True


def scan_segments(J, span, nrow, nv):
    """(nrow, 4) lo, g0, g1, hi of each row: its first and last nonzero inside the span and the longest inner
    run of zeros (the first of equal ones); empty row: all four = the clipped span's end."""
    out = np.zeros((nrow, 4), np.int64)
    for r in range(nrow):
        lo, hi = max(int(span[r, 0]), 0), min(int(span[r, 1]), nv)
        hi = max(hi, lo)
        nz = [k for k in range(lo, hi) if J[r, k] != 0]
        if not nz:
            out[r] = hi
            continue
        g0 = g1 = nz[-1] + 1
        best = 0
        for a, b in zip(nz, nz[1:]):
            if b - a - 1 > best:
                best, g0, g1 = b - a - 1, a + 1, b
        out[r] = (nz[0], g0, g1, nz[-1] + 1)
    return out


def build(path, d, dt, n, islands, segs, **extra):
    """A scene of n envs at the settled state, stepped once with make_rows(segs=...); returns (scene, captured
    make_rows / solve arguments of that step, the warm start before the solve)."""
    from polyphys.plugins.rigid import constraint_rows as CR
    from polyphys.plugins.rigid import convex_solve as CS

    scene = P.polyphys_scene(path, d, dt, n, constraint_islands=islands, **extra)
    got = {}
    o_rows, o_solve = CR.make_rows, CS.solve

    def rows(v, h=0.0, segs_=None):
        got.setdefault("rows", (v, h))
        return o_rows(v, h, segs)

    def solve(v, qw, *a, **k):
        if "solve" not in got:
            got["solve"], got["keep"] = (v, qw), wp.clone(v.d.qacc_warmstart)
        return o_solve(v, qw, *a, **k)

    CR.make_rows, CS.solve = rows, solve
    try:
        scene.step()
    finally:
        CR.make_rows, CS.solve = o_rows, o_solve
    return scene, got


def t_rows(g, segs, reps, n):
    """make_rows relaunched reps times; CPU µs per env."""
    from polyphys.plugins.rigid import constraint_rows as CR
    v, h = g["rows"]
    wp.synchronize()
    t0 = time.process_time()
    for _ in range(reps):
        CR.make_rows(v, h, segs)
    wp.synchronize()
    return (time.process_time() - t0) / (reps * n) * 1e6


def t_solve(g, reps, n):
    """The convex solve relaunched reps times from the same warm start; CPU µs per env."""
    from polyphys.plugins.rigid import convex_solve as CS
    v, qw = g["solve"]
    wp.synchronize()
    t0 = time.process_time()
    for _ in range(reps):
        wp.copy(v.d.qacc_warmstart, g["keep"])
        CS.solve(v, qw)
    wp.synchronize()
    return (time.process_time() - t0) / (reps * n) * 1e6


def t_step(scene, segs, steps, n):
    """steps whole steps with make_rows(segs=...); CPU µs per env-step."""
    from polyphys.plugins.rigid import constraint_rows as CR
    o = CR.make_rows
    CR.make_rows = lambda v, h=0.0, s=None: o(v, h, segs)
    try:
        wp.synchronize()
        t0 = time.process_time()
        for _ in range(steps):
            scene.step()
        wp.synchronize()
    finally:
        CR.make_rows = o
    return (time.process_time() - t0) / (steps * n) * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--pile-n", type=int, default=64)
    ap.add_argument("--scenes", default="boxes,humanoid,pile")
    ap.add_argument("--islands", default="on,off")
    ap.add_argument("--samples", type=int, default=16)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--what", default="rows,solve,step")
    a = ap.parse_args()
    what = a.what.split(",")
    for name, path, m, d, n, extra in P.settled_scenes(a.scenes.split(","), a.n, a.pile_n):
        for isl in a.islands.split(","):
            on = isl == "on"
            sA, gA = build(path, d, float(m.opt.timestep), n, on, False, **extra)
            sB, gB = build(path, d, float(m.opt.timestep), n, on, True, **extra)
            vA, vB = gA["solve"][0], gB["solve"][0]
            same = all(getattr(vA.d, f).numpy().tobytes() == getattr(vB.d, f).numpy().tobytes()
                       for f in ("qpos", "qvel", "qacc_warmstart", "efc_force", "qfrc_constraint", "efc_J", "efc_span"))
            J, sp, sg, ne = vB.d.efc_J.numpy(), vB.d.efc_span.numpy(), vB.d.efc_seg.numpy(), vB.d.nefc.numpy()
            nv = J.shape[2]
            seg_ok = all((scan_segments(J[e], sp[e], ne[e], nv) == sg[e, :ne[e]]).all() for e in range(min(n, 8)))
            sa = vA.d.efc_seg.numpy()
            unrec = all((sa[e, :ne[e], 0] == -1).all() for e in range(n))
            cols = [int((sg[e, :ne[e], 1] - sg[e, :ne[e], 0] + sg[e, :ne[e], 3] - sg[e, :ne[e], 2]).sum())
                    for e in range(min(n, 8))]
            spans = [int((np.clip(sp[e, :ne[e], 1], 0, nv) - np.clip(sp[e, :ne[e], 0], 0, nv)).clip(0).sum())
                     for e in range(min(n, 8))]
            print(f"{name} islands {isl} n={n}: one step A/B byte-identical {same}; recorded = scanned segments {seg_ok}; "
                  f"A unrecorded {unrec}; rows {int(ne.max())}, columns in segments / spans (env 0-7 max) "
                  f"{max(cols)} / {max(spans)}", flush=True)
            reps = max(3, 5 * 1024 // n // 8)
            probes = {"rows": (partial(t_rows, gA, False, reps, n), partial(t_rows, gB, True, reps, n)),
                      "solve": (partial(t_solve, gA, reps, n), partial(t_solve, gB, reps, n)),
                      "step": (partial(t_step, sA, False, a.steps, n), partial(t_step, sB, True, a.steps, n))}
            for w in what:
                if w == "rows" and isl != a.islands.split(",")[0]:
                    continue      # the builder does not depend on islands: timed with the first setting only
                res = ([], [])
                fa, fb = probes[w]
                for s in range(a.samples):
                    for k in ((0, 1) if s % 2 == 0 else (1, 0)):
                        res[k].append((fa, fb)[k]())
                med = [sorted(r)[len(r) // 2] for r in res]
                print(f"  {w:5s} µs/env  A scan {min(res[0]):8.2f} / {med[0]:8.2f}   B segments {min(res[1]):8.2f} / "
                      f"{med[1]:8.2f}   (min / med of {a.samples}); load {os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    main()
