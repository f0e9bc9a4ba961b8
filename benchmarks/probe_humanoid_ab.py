"""Round 17 (rigidhum) A/Bs, in one process (benchmarks/results/constraint.md): ``python -m benchmarks.probe_humanoid_ab
[--stage factor|labels|both] [--scenes humanoid,boxes] [--rounds 12] [--steps 3] [--n 1024] [--captured]``.

Per scene of profile_constraint (the settled states of bench_constraint; graph capture off, one thread, islands on),
ONE scene; variant "new" runs the landed code, variant "old" sets bit 16 of the ``prefetch`` argument of the
stage(s) under test (``--stage``), which selects the code before the round:
- factor: factorization.smooth's two factors (M + hd·D for qacc_smooth, M + hd_int·D for the integration) one after
  the other instead of in one pass over the tree;
- labels: convex_solve.label_islands as before the round: no one-tree keep (the rows' keys compared row by row), the
  next env's label outputs prefetched (not its keys).
First the outputs of each variant are compared byte for byte (factor: d.qld, d.qld_int, qacc_smooth, d.mass, d.qM
after a relaunch of the smooth pass, NaN-filled before; labels: the label arrays after a relabelling with the keys
invalidated and the outputs garbage-filled, then after a second launch that keeps them). Then rounds alternate the
variants (reversed every other round): "stage relaunched" relaunches the stage over the whole batch (3 launches; CPU
µs per env), "step" runs ``steps`` scene steps with the variant (CPU µs per env-step) and "in the step" is the
stage's share of them (thread time inside its launches); least / median. ``--captured``: the whole captured step
instead, two scenes of the same state — "old" captured with every switch of the round off (factor and labels bit 16,
d.qld one block per env: the graph keeps the arguments of its capture), "new" as landed — rounds of 5 steps
alternated, qpos compared after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from . import bench_constraint as B
from . import profile_constraint as P

FACTOR_OUT = ("qld", "qld_int", "qacc_smooth", "mass", "qM")
LABEL_OUT = ("nisland", "dof_island", "efc_island", "island_dofadr", "island_dofs", "dof_idof", "island_efcadr",
             "island_efcs")


def main():
    import warp as wp
    from polyphys.plugins.rigid import convex_solve as CS
    from polyphys.plugins.rigid import factorization as F

    wp.config.quiet = True
    ap = argparse.ArgumentParser()
    ap.add_argument("--stage", default="both", choices=("factor", "labels", "both"))
    ap.add_argument("--scenes", default="humanoid,boxes")
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--captured", action="store_true", help="two captured scenes per scene instead: 'old' captured "
                    "with all of the round's switches off (factor and labels bit 16, d.qld one block per env), 'new' as "
                    "landed; rounds of 5 steps alternated")
    a = ap.parse_args()
    if a.captured:
        _captured(a)
        return
    kinds = ("new", "old")
    fac = a.stage in ("factor", "both")
    lab = a.stage in ("labels", "both")
    orig_smooth, orig_label = F.smooth, CS.label_islands
    cur = {"old": False, "t": 0.0}

    def smooth(v, hd, qfrc, qacc_out, dense, hd_int=None, prefetch=2):
        t0 = time.thread_time()
        orig_smooth(v, hd, qfrc, qacc_out, dense, hd_int=hd_int, prefetch=prefetch | (16 if cur["old"] and fac else 0))
        cur["t"] += (time.thread_time() - t0) if fac else 0.0

    def label(v, prefetch=2):
        t0 = time.thread_time()
        orig_label(v, prefetch | (16 if cur["old"] and lab else 0))
        cur["t"] += (time.thread_time() - t0) if lab else 0.0

    for name, path, m, d, n, extra in P.settled_scenes(a.scenes.split(","), a.n, 64):
        scene, ent = B._pp_scene(path, float(m.opt.timestep), n, 1, capture=False, constraint_islands=True, **extra)
        B._pp_set(scene, ent, d, n)
        for _ in range(3):
            scene.step()
        s = scene.solver("rigid")
        dd = s.data
        v = s.views["all"]
        hd_int = None if s._approx else s.layout.h
        dense = not s._m_in_solve()

        def stage(v=v, s=s, dd=dd, dense=dense, hd_int=hd_int):
            if fac:
                smooth(v, s._hd_solve, dd.qfrc_smooth, dd.qacc_smooth, dense, hd_int=hd_int)
            if lab:
                label(v)

        ref = None
        for k in kinds:
            cur["old"] = k == "old"
            got = []
            if fac:
                for f in FACTOR_OUT:
                    getattr(dd, f).fill_(float("nan"))
                smooth(v, s._hd_solve, dd.qfrc_smooth, dd.qacc_smooth, dense, hd_int=hd_int)
                wp.synchronize()
                got += [getattr(dd, f).numpy().tobytes() for f in FACTOR_OUT]
            if lab:
                CS.invalidate_labels(dd)
                for f in LABEL_OUT:
                    getattr(dd, f).fill_(-7)
                label(v)
                wp.synchronize()
                got += [getattr(dd, f).numpy().tobytes() for f in LABEL_OUT]
                label(v)
                wp.synchronize()
                got += [getattr(dd, f).numpy().tobytes() for f in LABEL_OUT]
                kept = float((dd.island_key_nefc.numpy() == dd.nefc.numpy()).mean())
                print(f"{name}: {k}: envs keeping labels {kept:.2f}, islands {np.unique(dd.nisland.numpy())}", flush=True)
            ref = got if ref is None else ref
            print(f"{name}: {k}: outputs byte-identical to {kinds[0]}: {got == ref}", flush=True)
        res = {k: ([], [], []) for k in kinds}
        loads = [os.getloadavg()[0]]
        F.smooth, CS.label_islands = smooth, label
        try:
            for r in range(a.rounds):
                order = list(kinds) if r % 2 == 0 else list(kinds)[::-1]
                for k in order:
                    cur["old"] = k == "old"
                    wp.synchronize()
                    t0 = time.thread_time()
                    for _ in range(3):
                        stage()
                    wp.synchronize()
                    res[k][0].append((time.thread_time() - t0) / (3 * n) * 1e6)
                    cur["t"] = 0.0
                    t0 = time.thread_time()
                    for _ in range(a.steps):
                        scene.step()
                    wp.synchronize()
                    res[k][1].append((time.thread_time() - t0) / (a.steps * n) * 1e6)
                    res[k][2].append(cur["t"] / (a.steps * n) * 1e6)
        finally:
            F.smooth, CS.label_islands = orig_smooth, orig_label
        loads.append(os.getloadavg()[0])
        for k in kinds:
            ps, st, ins = res[k]
            print(f"  {a.stage} {k}: stage relaunched {min(ps):7.3f} / {statistics.median(ps):7.3f}   in the step "
                  f"{min(ins):7.3f} / {statistics.median(ins):7.3f}   step {min(st):7.2f} / {statistics.median(st):7.2f}"
                  f"  µs/env (min / med of {a.rounds})", flush=True)
        print(f"  load {loads[0]:.2f}-{loads[1]:.2f}", flush=True)


def _captured(a):
    """The whole captured step, before the round against as landed: two scenes of one settled state, the 'old' one
    captured while factorization.smooth and convex_solve.label_islands get bit 16 and with its Views' d.qld one block
    per env (the graph keeps the launch arguments of its capture)."""
    import warp as wp
    from polyphys.plugins.rigid import convex_solve as CS
    from polyphys.plugins.rigid import factorization as F
    from polyphys.plugins.rigid import model as M

    wp.config.quiet = True
    orig_s, orig_l = F.smooth, CS.label_islands

    def smooth_old(v, hd, qfrc, qacc_out, dense, hd_int=None, prefetch=2):
        orig_s(v, hd, qfrc, qacc_out, dense, hd_int=hd_int, prefetch=prefetch | 16)

    def label_old(v, prefetch=2):
        orig_l(v, prefetch | 16)

    for name, path, m, d, n, extra in P.settled_scenes(a.scenes.split(","), a.n, 64):
        built = {}
        for lab in ("old", "new"):
            if lab == "old":
                F.smooth, CS.label_islands = smooth_old, label_old
            try:
                scene, ent = B._pp_scene(path, float(m.opt.timestep), n, 1, capture=True, constraint_islands=True,
                                         **extra)
                if lab == "old":
                    s = scene.solver("rigid")
                    for v in s.views.values():
                        b = wp.zeros(v.d.qld.shape, dtype=v.d.qld.dtype, device=v.d.qld.device)
                        M._advise_huge(b)
                        v.d.qld = b
                    s.data.qld = s.views["all"].d.qld
                B._pp_set(scene, ent, d, n)
                for _ in range(3):
                    scene.step()
            finally:
                F.smooth, CS.label_islands = orig_s, orig_l
            built[lab] = scene
        res = {k: [] for k in built}
        l0 = os.getloadavg()[0]
        for r in range(a.rounds):
            for lab in (list(built) if r % 2 == 0 else list(built)[::-1]):
                res[lab].append(P.step_cpu_us(built[lab], n, 5))
        l1 = os.getloadavg()[0]
        q = [built[k].solver("rigid").data.qpos.numpy().tobytes() for k in built]
        print(f"{name}: qpos equal across the two scenes: {q[0] == q[1]}", flush=True)
        for lab, xs in res.items():
            print(f"  captured {lab}: {min(xs):.2f} / {statistics.median(xs):.2f} µs per env-step (min / med of "
                  f"{a.rounds} × 5), load {l0:.2f}-{l1:.2f}", flush=True)


if __name__ == "__main__":
    main()
