"""The convex solve stage alone, relaunched from one warm start: ``python -m benchmarks.probe_convex_solve
[--scenes boxes,humanoid,pile] [--islands on,off] [--samples 15] [--n 1024]``.

Per scene of profile_constraint (same settled state; the pile with 64 envs) and islands setting: the
scene is stepped once with ``convex_solve.solve`` wrapped to keep its View and warm start of the first
substep; then the stage (labels included) is relaunched ``reps`` times per sample from that warm start
(``d.qacc_warmstart`` restored before each launch: the solve warm-starts in place), and the least CPU time
per env of ``samples`` samples is printed with the mean iteration count. It isolates the stage from the
whole-step noise of a shared machine (benchmarks/results/constraint.md, Round 8).
"""

from __future__ import annotations

import argparse
import os
import time

from . import profile_constraint as P


def probe(path, d, dt, n, islands, reps, samples, **extra):
    """(least µs of CPU per env of one solve-stage launch, mean solver_niter)."""
    import warp as wp
    from polyphys.plugins.rigid import convex_solve as CS

    scene = P.polyphys_scene(path, d, dt, n, constraint_islands=islands, **extra)
    got = {}
    orig = CS.solve

    def grab(v, qw, **kw):
        # (the step's own arguments, e.g. mass_hd: the relaunch repeats the step's call)
        if not got:
            got["v"], got["qw"], got["keep"], got["kw"] = v, qw, wp.clone(v.d.qacc_warmstart), kw
        return orig(v, qw, **kw)

    CS.solve = grab
    try:
        scene.step()
    finally:
        CS.solve = orig
    v, qw, keep, kw = got["v"], got["qw"], got["keep"], got["kw"]
    best = float("inf")
    for _ in range(samples):
        wp.synchronize()
        t0 = time.process_time()
        for _ in range(reps):
            wp.copy(v.d.qacc_warmstart, keep)
            orig(v, qw, **kw)
        wp.synchronize()
        best = min(best, (time.process_time() - t0) / (reps * n) * 1e6)
    return best, float(v.d.solver_niter.numpy().mean())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--pile-n", type=int, default=64)
    ap.add_argument("--scenes", default="boxes,humanoid,pile")
    ap.add_argument("--islands", default="on,off")
    ap.add_argument("--samples", type=int, default=15)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    import warp as wp

    wp.config.quiet = True
    for name, path, m, d, n, extra in P.settled_scenes(args.scenes.split(","), args.n, args.pile_n):
        for isl in args.islands.split(","):
            us, it = probe(path, d, float(m.opt.timestep), n, isl == "on", args.reps, args.samples, **extra)
            print(f"{name} islands {isl}: solve stage {us:.2f} µs per env (mean niter {it:.2f}), "
                  f"load {os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    main()
