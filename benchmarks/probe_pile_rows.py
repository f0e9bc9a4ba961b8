"""The row builder inside the step, its variants swapped in one scene (benchmarks/results/constraint.md, Round 16
"pile rows"): ``python -m benchmarks.probe_pile_rows [--scenes pile,boxes,humanoid] [--kinds 2,6] [--rounds 12]
[--steps 3] [--n 1024] [--pile-n 64]``.

Per scene of profile_constraint (the settled states of bench_constraint; graph capture off, one thread, islands
on): ONE scene, whose make_rows launches run with the ``prefetch`` value of the current variant (``--kinds``: the
values of make_rows' ``prefetch`` argument); rounds of ``steps`` steps alternate the variants (rotated, reversed
every other round). Per variant the least and median CPU µs (thread clock) per env-step of the row builder inside
the step and of the whole step, with the load. Before timing, every variant rebuilds the rows of the same state and
its written arrays are compared byte for byte with the first variant's. Also printed: the share of the contact
rows whose two links are those of the row's last build (their J needs no zeroing: kernels/constraint_rows.cpp).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from . import bench_constraint as B
from . import profile_constraint as P

WRITTEN = ("efc_J", "efc_span", "efc_chain", "efc_seg", "efc_type", "efc_id", "efc_dim", "efc_pos", "efc_margin",
           "efc_vel", "efc_aref", "efc_R", "efc_D", "efc_imp", "efc_frictionloss", "efc_mu", "nefc", "con_efc_adr")


def main():
    import warp as wp
    from polyphys.plugins.rigid import constraint_rows as CR
    from polyphys.plugins.rigid import model as MD

    wp.config.quiet = True
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenes", default="pile")
    ap.add_argument("--kinds", default="2")
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--pile-n", type=int, default=64)
    ap.add_argument("--check", type=int, default=1, help="0: skip the byte-for-byte check of the variants")
    a = ap.parse_args()
    kinds = [int(k) for k in a.kinds.split(",")]
    orig = CR.make_rows
    cur = {"pf": kinds[0], "t": 0.0}

    def rows(v, lim_window_h=0.0, segs=True, prefetch=2, params=False, **pool):
        t0 = time.thread_time()
        orig(v, lim_window_h, segs, cur["pf"], params, **pool)
        cur["t"] += time.thread_time() - t0

    for name, path, m, d, n, extra in P.settled_scenes(a.scenes.split(","), a.n, a.pile_n):
        scene, ent = B._pp_scene(path, float(m.opt.timestep), n, 1, capture=False, constraint_islands=True, **extra)
        B._pp_set(scene, ent, d, n)
        for _ in range(3):
            scene.step()
        s = scene.solver("rigid")
        dd = s.data
        views = [s.views[p.index] for p in s.layout.partitions]
        # the rows whose links are the last build's
        ch0 = dd.efc_chain.numpy().copy()
        CR.make_rows = rows
        try:
            scene.step()
        finally:
            CR.make_rows = orig
        ch1 = dd.efc_chain.numpy()
        ne = dd.nefc.numpy()
        # in the row pool env e's row r is row e·R + efc_off[e] + r of the (n·R) rows (the same slot before and after)
        adr = np.arange(ch1.shape[0]) * ch1.shape[1] + dd.efc_off.numpy()
        ch0, ch1 = ch0.reshape(-1, 2), ch1.reshape(-1, 2)
        rows_in_use = np.concatenate([np.arange(a0, a0 + k) for a0, k in zip(adr, ne)])
        ch0, ch1 = ch0[rows_in_use], ch1[rows_in_use]
        con = ch1[:, 0] >= -1
        same = con & (ch0 == ch1).all(-1)
        print(f"{name} n={n}: rows per env {ne.min()}-{ne.max()}, contact rows {con.sum()}, of them with the last "
              f"build's links {same.sum() / max(con.sum(), 1):.3f}", flush=True)
        if a.check:
            ref = None
            for k in kinds:
                for v in views:
                    orig(v, 0.0, True, k, s.collision is not None, pool=s._row_pool_on(),
                         slack=getattr(s, "_row_slack", MD._row_pool_slack), head=getattr(s, "_row_head", MD._row_pool_head))
                wp.synchronize()
                got = [getattr(dd, f).numpy().tobytes() for f in WRITTEN]
                ref = got if ref is None else ref
                bad = [f for f, x, y in zip(WRITTEN, got, ref) if x != y]
                print(f"  pf {k}: written arrays byte-identical to pf {kinds[0]}: {not bad} {bad if bad else ''}",
                      flush=True)
        res = {k: ([], []) for k in kinds}
        loads = [os.getloadavg()[0]]
        CR.make_rows = rows
        try:
            for r in range(a.rounds):
                order = kinds[r % len(kinds):] + kinds[:r % len(kinds)]
                if r % 2:
                    order = order[::-1]
                for k in order:
                    cur["pf"], cur["t"] = k, 0.0
                    t0 = time.thread_time()
                    for _ in range(a.steps):
                        scene.step()
                    t = time.thread_time() - t0
                    res[k][0].append(cur["t"] / (a.steps * n) * 1e6)
                    res[k][1].append(t / (a.steps * n) * 1e6)
        finally:
            CR.make_rows = orig
        loads.append(os.getloadavg()[0])
        for k in kinds:
            rr, st = res[k]
            print(f"  pf {k:3d}: rows {min(rr):8.2f} / {statistics.median(rr):8.2f}   step {min(st):8.2f} / "
                  f"{statistics.median(st):8.2f}  µs/env-step (min / med of {a.rounds} × {a.steps})", flush=True)
        print(f"  load {loads[0]:.2f}-{loads[1]:.2f}", flush=True)


if __name__ == "__main__":
    main()
