"""Island labels kept between substeps, in-process A/B: ``python -m benchmarks.probe_island_keep
[--scenes boxes,humanoid,pile] [--samples 9] [--n 1024]``.

Per scene of profile_constraint (same settled state as probe_convex_solve; the pile with 64 envs, islands on,
graph capture off): (1) the labels stage alone (kernels/convex_solve.py ``label_islands``) relaunched over the
rows of one step, "relabel" (the copies invalidated before each launch: every env relabels, as before the
copies existed, plus taking the copies) against "keep" (unchanged rows: each env compares and keeps); (2) the
whole step, alternating blocks of steps with ``convex_solve.label_islands`` wrapped to invalidate first
(relabel) and plain (keep). Least and median CPU µs per env of ``samples`` samples, the load with them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from . import profile_constraint as P


def _time(fn, n, reps):
    import warp as wp

    wp.synchronize()
    t0 = time.process_time()
    for _ in range(reps):
        fn()
    wp.synchronize()
    return (time.process_time() - t0) / (reps * n) * 1e6


def probe(path, d, dt, n, samples, reps, steps, **extra):
    from polyphys.plugins.rigid import convex_solve as CS

    scene = P.polyphys_scene(path, d, dt, n, constraint_islands=True, **extra)
    rs = scene.solver("rigid")
    v = rs.views["all"]
    orig = CS.label_islands

    def relabel():
        CS.invalidate_labels(rs.data)
        orig(v)

    def invalidating(vv, prefetch=2):
        CS.invalidate_labels(vv.d)
        orig(vv, prefetch)

    def step_relabel():
        CS.label_islands = invalidating
        try:
            scene.step()
        finally:
            CS.label_islands = orig

    out = {k: [] for k in ("labels relabel", "labels keep", "step relabel", "step keep")}
    for _ in range(samples):
        out["labels relabel"].append(_time(relabel, n, reps))
        out["labels keep"].append(_time(lambda: orig(v), n, reps))
        out["step relabel"].append(_time(step_relabel, n, steps))
        out["step keep"].append(_time(scene.step, n, steps))
    kept = float((rs.data.island_key_nefc.numpy() == rs.data.nefc.numpy()).mean())
    return {k: (min(x), statistics.median(x)) for k, x in out.items()}, kept


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--pile-n", type=int, default=64)
    ap.add_argument("--scenes", default="boxes,humanoid,pile")
    ap.add_argument("--samples", type=int, default=9)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--steps", type=int, default=5)
    args = ap.parse_args()
    import warp as wp

    wp.config.quiet = True
    for name, path, m, d, n, extra in P.settled_scenes(args.scenes.split(","), args.n, args.pile_n):
        load0 = os.getloadavg()[0]
        res, kept = probe(path, d, float(m.opt.timestep), n, args.samples, args.reps, args.steps, **extra)
        load1 = os.getloadavg()[0]
        txt = ", ".join(f"{k} {a:.2f} / {b:.2f}" for k, (a, b) in res.items())
        print(f"{name} n_envs={n}: {txt} (µs per env, min / median); envs keeping labels after the last step "
              f"{kept:.2f}; load {load0:.2f}-{load1:.2f}", flush=True)


if __name__ == "__main__":
    main()
