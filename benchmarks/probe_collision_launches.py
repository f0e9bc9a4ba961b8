"""The collision stage's launches, in-process A/B: ``python -m benchmarks.probe_collision_launches [--scenes
boxes,humanoid,pile] [--rounds 10] [--steps 3] [--n 1024] [--pile-n 64] [--captured]``.

Per scene of profile_constraint (the settled states of bench_constraint; the pile with 64 envs; one thread, islands
on), four variants of ``CollisionPipeline`` (docs/collision.md, "Launch replay"): "separate" (poses + AABBs and the
broadphase in two launches, every launch packed each call, the duplicate search of every plane–box pair:
``fused_broadphase = cache_launches = corners_apart = False``, the code before round 17), "fused"
(``fused_broadphase``), "fused + replay" (and ``cache_launches``), "+ corners apart" (all three, the default).
Default: ONE scene, graph capture off, the switches flipped before each sample; rounds alternate the variants
(rotated, reversed every other round); each sample the stage profile of profile_constraint (``polyphys_profile``):
least and median CPU µs per env-step of the collision stage (Python included, as the profile counts it) and of the
step. Also: each variant's launches recorded once and replayed inside the step (``--stage``), timed launch by launch
(what a captured graph runs), and MuJoCo's ``mj_collision`` on the settled state (one MjData, hot), with its
COL_BROAD / COL_NARROW / POS_COLLISION timers of profile_constraint.mujoco_profile (wall, least of 2).
``--captured``: two scenes instead (separate / all three: the replay is the graph's own), each captured with its
variant, ``steps`` captured steps per sample; qpos after the last round checked equal across the variants.
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import time

import numpy as np

from . import bench_constraint as B
from . import profile_constraint as P

# (fused_broadphase, cache_launches, corners_apart)
VARIANTS = {"separate": (False, False, False), "fused": (True, False, False), "fused + replay": (True, True, False),
            "+ corners apart": (True, True, True)}
_SWITCHES = ("fused_broadphase", "cache_launches", "corners_apart")


def _set(col, values):
    for name, v in zip(_SWITCHES, values):
        setattr(col, name, v)


def _build(path, d, dt, n, capture, values=(True, True, True), **extra):
    scene, ent = B._pp_scene(path, dt, n, 1, capture=capture, constraint_islands=True, **extra)
    _set(scene.solver("rigid").collision, values)
    B._pp_set(scene, ent, d, n)
    for _ in range(3):
        scene.step()
    return scene, ent


def _order(r, labels):
    k = r % len(labels)
    rot = labels[k:] + labels[:k]
    return rot if r % 2 == 0 else rot[::-1]


def _mujoco(m, d, n):
    import mujoco

    dd = mujoco.MjData(m)
    dd.qpos[:], dd.qvel[:] = d.qpos, d.qvel
    mujoco.mj_kinematics(m, dd)
    best = float("inf")
    for _ in range(20):
        t0 = time.perf_counter()
        for _ in range(200):
            mujoco.mj_collision(m, dd)
        best = min(best, (time.perf_counter() - t0) / 200 * 1e6)
    timers = {}
    for _ in range(2):
        r, _ = P.mujoco_profile(m, d, n, 5)
        timers = {k: min(v, timers.get(k, float("inf"))) for k, v in r.items()}
    return best, dd.ncon, timers


def _in_step(scene, n, variants, rounds):
    """Each variant's collide launches recorded at its first call and replayed in the step, launch by launch."""
    import warp as wp

    col = scene.solver("rigid").collision
    orig = col.collide
    cache, acc, cur = {}, {k: collections.defaultdict(list) for k in variants}, [None]

    def collide(part, lp, lq, export=None):
        key = (cur[0], part.index, export is None)
        if key not in cache:
            cmds, real = [], wp.launch

            def rec(kernel, *a, **k):
                k["record_cmd"] = True
                c = real(kernel, *a, **k)
                cmds.append((kernel.key, c))
                return c

            col.cache_launches = False
            wp.launch = rec
            try:
                orig(part, lp, lq, export)
            finally:
                wp.launch = real
            for _, c in cmds:
                c.launch()
            cache[key] = cmds
            return
        t00 = time.perf_counter()
        for k, c in cache[key]:
            t0 = time.perf_counter()
            c.launch()
            acc[cur[0]][k].append(time.perf_counter() - t0)
        acc[cur[0]]["stage"].append(time.perf_counter() - t00)

    col.collide = collide
    try:
        for r in range(rounds):
            for label in _order(r, list(variants)):
                cur[0] = label
                _set(col, variants[label][:1] + (False,) + variants[label][2:])
                for _ in range(3 if n >= 256 else 12):
                    scene.step()
    finally:
        del col.collide
    return {label: {k: (min(v) / n * 1e6, statistics.median(v) / n * 1e6) for k, v in a.items()}
            for label, a in acc.items()}


def _one_scene(args, name, path, m, d, dt, n, extra):
    scene, _ = _build(path, d, dt, n, False, **extra)
    col = scene.solver("rigid").collision
    res = {k: [] for k in VARIANTS}
    stage = {k: [] for k in VARIANTS}
    load0 = os.getloadavg()[0]
    for r in range(args.rounds):
        for label in _order(r, list(VARIANTS)):
            _set(col, VARIANTS[label])
            scene.step()        # the variant's first call records (not timed)
            per, total = P.polyphys_profile(scene, n, args.steps)
            res[label].append(total)
            stage[label].append(per.get("collision: total", float("nan")))
    load1 = os.getloadavg()[0]
    print(f"== {name} n_envs={n}, one scene, {args.rounds} rounds of {args.steps} steps (capture off), "
          f"load {load0:.2f}-{load1:.2f}")
    for label in VARIANTS:
        xs, ys = res[label], stage[label]
        print(f"   {label:15s} step {min(xs):8.2f} / {statistics.median(xs):8.2f}   collision {min(ys):7.2f} / "
              f"{statistics.median(ys):7.2f} µs per env-step (min / median)", flush=True)
    if args.stage:
        load0 = os.getloadavg()[0]
        st = _in_step(scene, n, {k: v for k, v in VARIANTS.items() if k != "fused + replay"}, args.rounds)
        print(f"   launches replayed in the step (µs per env, min / median), load {load0:.2f}-{os.getloadavg()[0]:.2f}:")
        for label, ks in st.items():
            print(f"      {label}: " + ", ".join(f"{k} {a:.3f} / {b:.3f}" for k, (a, b) in ks.items()), flush=True)
    hot, ncon, timers = _mujoco(m, d, n)
    print(f"   MuJoCo mj_collision on the settled state (one MjData, hot): {hot:.3f} µs ({ncon} contacts); timers "
          f"(wall, least of 2): " + ", ".join(f"{k} {timers.get(k, float('nan')):.2f}" for k in
                                              ("COL_BROAD", "COL_NARROW", "POS_COLLISION", "POS_KINEMATICS", "STEP")),
          flush=True)


def _captured(args, name, path, m, d, dt, n, extra):
    built = {label: _build(path, d, dt, n, True, values, **extra)
             for label, values in VARIANTS.items() if label in ("separate", "+ corners apart")}
    res = {k: [] for k in built}
    load0 = os.getloadavg()[0]
    for r in range(args.rounds):
        for label in _order(r, list(built)):
            res[label].append(P.step_cpu_us(built[label][0], n, args.steps))
    load1 = os.getloadavg()[0]
    q = [np.asarray(e.get_qpos()) for _, e in built.values()]
    same = all(np.array_equal(q[0], x) for x in q[1:])
    print(f"== {name} n_envs={n}, two scenes, {args.rounds} rounds of {args.steps} captured steps, "
          f"load {load0:.2f}-{load1:.2f}; qpos equal across variants: {same}")
    for label, xs in res.items():
        print(f"   {label:15s} {min(xs):9.2f} / {statistics.median(xs):9.2f} µs per env-step (min / median)", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--pile-n", type=int, default=64)
    ap.add_argument("--scenes", default="boxes,humanoid,pile")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--captured", action="store_true", help="two captured scenes instead of one switched")
    ap.add_argument("--stage", action="store_true", help="also the launches replayed in the step, one by one")
    args = ap.parse_args()
    import warp as wp

    wp.config.quiet = True
    for name, path, m, d, n, extra in P.settled_scenes(args.scenes.split(","), args.n, args.pile_n):
        dt = float(m.opt.timestep)
        (_captured if args.captured else _one_scene)(args, name, path, m, d, dt, n, extra)


if __name__ == "__main__":
    main()
