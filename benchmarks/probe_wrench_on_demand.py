"""The post-solve stages (benchmarks/results/constraint.md, "Round 12 (post-solve stages)") as in-process A/Bs of
whole steps of one scene. ``--variant wrench``: the contact + link wrench stage skipped in the step (A: computed
by the first host read after it, solver._wrench_sync) or run in every substep (B: the behaviour before).
``--variant fuse``: the substep's tail in one launch (A: integration.post_solve) or as the separate launches
(B: total_force, ld_solve + gyro_resolve or the copy of the solve's acceleration, integrate).

One scene per benchmark scene (bench_constraint's MJCF, settled state, graph capture on, one thread); the
variants alternate (ABBA) by switching ``_wrench_on_since`` and invalidating the captured graph (one
uncounted step recaptures it), ``samples`` samples of ``steps`` steps each; prints min / median CPU µs per
env-step. Bit identity of the readings is tests/rigid/test_rigid_wrench_on_demand.py's job.

    PYTHONPATH=. python benchmarks/probe_wrench_on_demand.py [--variant wrench|fuse] [--n 1024]
        [--scenes boxes,humanoid] [--samples 8] [--steps 10]
"""

from __future__ import annotations

import argparse
import os

import numpy as np
import warp as wp

from benchmarks import bench_constraint as B
from benchmarks import profile_constraint as P

wp.config.quiet = True


_FUSED = None


def _separate(v, clear_ext, solve, prefetch=1):
    """integration.post_solve as the separate launches (the code before the fusion)."""
    from polyphys.plugins.rigid import factorization, integration

    integration.total_force(v)
    if solve:
        factorization.ld_solve(v, v.d.qfrc_total, v.d.qacc)
        integration.gyro_resolve(v, v.d.qfrc_total)
    else:
        wp.copy(v.d.qacc, v.d.qacc_warmstart)
    integration.integrate(v, clear_ext, v.d.qfrc_total)


def _mode(scene, variant: str, a: bool) -> None:
    global _FUSED
    from polyphys.plugins.rigid import integration

    s = scene.solver("rigid")
    if variant == "wrench":
        s._wrench_on_since = None if a else -1
    else:
        _FUSED = _FUSED or integration.post_solve
        integration.post_solve = _FUSED if a else _separate
    scene.simulator.invalidate()
    scene.step()                    # recapture (not timed)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--variant", default="wrench", choices=("wrench", "fuse"))
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
                _mode(scene, args.variant, lazy)
                res[lazy].append(P.step_cpu_us(scene, args.n, args.steps))
        a, b = np.array(res[True]), np.array(res[False])
        print(f"{name}, n_envs {args.n}, {args.samples} x {args.steps} steps, load {min(loads):.2f}-{max(loads):.2f}: "
              f"{args.variant} A min {a.min():.2f} med {np.median(a):.2f} | B min {b.min():.2f} "
              f"med {np.median(b):.2f} µs/env-step; saved {b.min() - a.min():.2f} (min) {np.median(b) - np.median(a):.2f} (med)")


if __name__ == "__main__":
    main()
