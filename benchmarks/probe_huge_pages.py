"""Large CPU arrays on transparent huge pages, in-process A/B: ``python -m benchmarks.probe_huge_pages
[--scenes boxes,humanoid,pile] [--rounds 20] [--steps 10] [--n 1024] [--pile-n 64] [--budget N]``.

Per scene of profile_constraint (the settled states of bench_constraint; the pile with 64 envs; graph capture on,
one thread, islands on): the same scene built twice in one process, its rigid arrays on huge pages
(plugins/rigid/model.py ``_advise_huge``, the default) and on the allocator's 4 KiB pages (``_huge_pages``
False); with ``--budget N`` also both with max_contacts = N (a small contact budget: the per-env blocks of the row
and contact arrays closer together, the same contacts in use). Rounds of ``steps`` captured steps alternate the
variants (rotated, reversed every other round); least and median CPU µs per env-step over the rounds, the load
with them. Each variant's qpos after the last round is checked equal to the first's (the same numbers).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from . import bench_constraint as B
from . import profile_constraint as P


def _anon_huge_kb() -> int:
    try:
        for line in open("/proc/self/smaps_rollup"):
            if line.startswith("AnonHugePages:"):
                return int(line.split()[1])
    except OSError:
        pass
    return -1


def _build(path, d, dt, n, huge, **extra):
    from polyphys.plugins.rigid import model as M

    M._huge_pages = huge
    try:
        before = _anon_huge_kb()
        t0 = time.perf_counter()
        scene, ent = B._pp_scene(path, dt, n, 1, capture=True, constraint_islands=True, **extra)
        build_s = time.perf_counter() - t0
        B._pp_set(scene, ent, d, n)
        for _ in range(3):
            scene.step()
    finally:
        M._huge_pages = True
    return scene, ent, build_s, (_anon_huge_kb() - before) // 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--pile-n", type=int, default=64)
    ap.add_argument("--scenes", default="boxes,humanoid,pile")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--budget", type=int, default=0, help="also a max_contacts=N pair (0: none)")
    args = ap.parse_args()
    import warp as wp

    wp.config.quiet = True
    for name, path, m, d, n, extra in P.settled_scenes(args.scenes.split(","), args.n, args.pile_n):
        dt = float(m.opt.timestep)
        variants = [("4k", False, {}), ("huge", True, {})]
        if args.budget:
            variants += [(f"4k max_contacts {args.budget}", False, {"max_contacts": args.budget}),
                         (f"huge max_contacts {args.budget}", True, {"max_contacts": args.budget})]
        built = {}
        for label, huge, ex in variants:
            scene, ent, build_s, huge_mb = _build(path, d, dt, n, huge, **dict(extra, **ex))
            built[label] = (scene, ent)
            rm = scene.solver("rigid").model
            print(f"{name}: {label}: max_rows {rm.max_rows}, max_con {rm.max_con}, build {build_s:.1f} s, "
                  f"the process's AnonHugePages {huge_mb:+d} MB over the build", flush=True)
        res = {k: [] for k in built}
        load0 = os.getloadavg()[0]
        order = list(built)
        for r in range(args.rounds):
            k = r % len(order)
            rot = order[k:] + order[:k]
            for label in (rot if r % 2 == 0 else rot[::-1]):
                res[label].append(P.step_cpu_us(built[label][0], n, args.steps))
        load1 = os.getloadavg()[0]
        q = [np.asarray(e.get_qpos()) for _, e in built.values()]
        same = all(np.array_equal(q[0], x) for x in q[1:])
        print(f"== {name} n_envs={n}, {args.rounds} rounds of {args.steps} captured steps, load {load0:.2f}-{load1:.2f}; "
              f"qpos equal across variants: {same}")
        for label, xs in res.items():
            print(f"   {label:28s} {min(xs):9.2f} / {statistics.median(xs):9.2f} µs per env-step (min / median)", flush=True)
        del built


if __name__ == "__main__":
    main()
