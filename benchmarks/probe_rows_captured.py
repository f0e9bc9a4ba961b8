"""The whole captured step with make_rows' ``prefetch`` bits of an A/B set in one scene (benchmarks/results/constraint.md,
Round 17b): ``python -m benchmarks.probe_rows_captured [--scenes humanoid,boxes] [--bits 48] [--rounds 20] [--n 1024]
[--pile-n 64]``.

Per scene of profile_constraint (the settled states of bench_constraint; one thread, islands on): two captured scenes
of one settled state, "old" captured while constraint_rows.make_rows gets ``prefetch | bits`` (the graph keeps the
launch arguments of its capture; 48 = bits 16 and 32: Round 17b's condim-3 pyramidal values by the general loop and no
prefetch of the contact parameters' inputs), "new" as the solver calls it; rounds of 5 steps alternated (reversed every
other round), least / median CPU µs per env-step, the load, and whether qpos is equal across the two scenes after the
run (the bits change no number)."""

from __future__ import annotations

import argparse
import os
import statistics

from . import bench_constraint as B
from . import profile_constraint as P


def main():
    import warp as wp
    from polyphys.plugins.rigid import constraint_rows as CR

    wp.config.quiet = True
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenes", default="humanoid,boxes")
    ap.add_argument("--bits", type=int, default=48)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--pile-n", type=int, default=64)
    a = ap.parse_args()
    orig = CR.make_rows

    def rows_old(v, lim_window_h=0.0, segs=True, prefetch=2, params=False, **kw):
        orig(v, lim_window_h, segs, prefetch | a.bits, params, **kw)

    for name, path, m, d, n, extra in P.settled_scenes(a.scenes.split(","), a.n, a.pile_n):
        built = {}
        for lab in ("old", "new"):
            if lab == "old":
                CR.make_rows = rows_old
            try:
                scene, ent = B._pp_scene(path, float(m.opt.timestep), n, 1, capture=True, constraint_islands=True,
                                         **extra)
                B._pp_set(scene, ent, d, n)
                for _ in range(3):
                    scene.step()
            finally:
                CR.make_rows = orig
            built[lab] = scene
        res = {k: [] for k in built}
        l0 = os.getloadavg()[0]
        for r in range(a.rounds):
            for lab in (list(built) if r % 2 == 0 else list(built)[::-1]):
                res[lab].append(P.step_cpu_us(built[lab], n, 5))
        l1 = os.getloadavg()[0]
        q = [built[k].solver("rigid").data.qpos.numpy().tobytes() for k in built]
        print(f"{name} n={n}: qpos equal across the two scenes: {q[0] == q[1]}", flush=True)
        for lab, xs in res.items():
            print(f"  captured {lab}: {min(xs):.2f} / {statistics.median(xs):.2f} µs per env-step (min / med of "
                  f"{a.rounds} × 5), load {l0:.2f}-{l1:.2f}", flush=True)


if __name__ == "__main__":
    main()
