"""The contact + link wrench stage on demand (benchmarks/results/constraint.md, "Round 12 (post-solve stages)"):
whole steps of one scene with the stage skipped in the step (A: computed by the first host read after it,
solver._wrench_sync) and run in every substep (B: the behaviour before), as an in-process A/B.

One scene per benchmark scene (bench_constraint's MJCF, settled state, graph capture on, one thread); the
variants alternate (ABBA) by switching ``_wrench_on_since`` and invalidating the captured graph (one
uncounted step recaptures it), ``samples`` samples of ``steps`` steps each; prints min / median CPU µs per
env-step. Bit identity of the readings is tests/rigid/test_rigid_wrench_on_demand.py's job.

    PYTHONPATH=. python benchmarks/probe_wrench_on_demand.py [--n 1024] [--scenes boxes,humanoid] [--samples 8]
        [--steps 10]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import warp as wp

from benchmarks import bench_constraint as B
from benchmarks import profile_constraint as P

wp.config.quiet = True


def _mode(scene, lazy: bool) -> None:
    s = scene.solver("rigid")
    s._wrench_on_since = None if lazy else -1
    scene.simulator.invalidate()
    scene.step()                    # recapture (not timed)


def _time(scene, n, steps) -> float:
    wp.synchronize()
    t0 = time.process_time()
    for _ in range(steps):
        scene.step()
    wp.synchronize()
    return (time.process_time() - t0) / (steps * n) * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--scenes", default="boxes,humanoid")
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args()
    for name, path, settle, _flags in P.scenes(args.scenes.split(",")):
        m = B._mj_model(path)
        d = B._settle(name, m, settle)
        scene, ent = B._pp_scene(path, float(m.opt.timestep), args.n, 1, capture=True, constraint_islands=True)
        B._pp_set(scene, ent, d, args.n)
        for _ in range(3):
            scene.step()
        res = {True: [], False: []}
        loads = []
        for k in range(args.samples):
            loads.append(os.getloadavg()[0])
            for lazy in ((True, False) if k % 2 == 0 else (False, True)):
                _mode(scene, lazy)
                res[lazy].append(_time(scene, args.n, args.steps))
        a, b = np.array(res[True]), np.array(res[False])
        print(f"{name}, n_envs {args.n}, {args.samples} x {args.steps} steps, load {min(loads):.2f}-{max(loads):.2f}: "
              f"on demand min {a.min():.2f} med {np.median(a):.2f} | every substep min {b.min():.2f} "
              f"med {np.median(b):.2f} µs/env-step; saved {b.min() - a.min():.2f} (min) {np.median(b) - np.median(a):.2f} (med)")


if __name__ == "__main__":
    main()
