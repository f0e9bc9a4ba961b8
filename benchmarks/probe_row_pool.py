"""The row pool against one block per env, in-process A/B: ``python -m benchmarks.probe_row_pool [--scenes
boxes,humanoid,pile] [--rounds 12] [--steps 3] [--n 1024] [--pile-n 64] [--captured]``.

Per scene of profile_constraint (the settled states of bench_constraint; the pile with 64 envs; one thread, islands
on): ONE scene (graph capture off) whose make_rows puts each env's rows right after the previous env's in its View
(``RigidSolver._row_pool`` True, the default on CPU: d.efc_off; docs/constraint.md, "The row pool") or at the start
of the env's own row-budget block (False, d.efc_off = 0), the switch flipped before each sample — the same memory,
only the rows' addresses differ. Rounds alternate the variants (rotated, reversed every other round); each sample
the stage profile of profile_constraint (``polyphys_profile``); least and median CPU µs per env-step of the stages
that read the rows (rows, labels, solve, contact wrenches, integration; the smooth pass: a control) and of
the step, the load with them.
``--captured``: two scenes instead, each captured with its variant (graph capture on), ``steps`` captured steps per
sample; qpos after the last round checked equal across the variants (the same numbers). ``--slack 0,16``: one pool
variant per slack, one-scene and captured (make_rows keeps an env's last address while it lies at most that many
rows past the previous env's new end; ``RigidSolver._row_slack``); ``--variants 0:0,64:32``: slack:head pairs
instead (``head``: where an env that has to move lands, ``RigidSolver._row_head``); ``--kick 0.2``: each env's
velocities kicked by its own noise and 20 steps before timing (envs whose counts change independently).
"""

from __future__ import annotations

import argparse
import os
import statistics

import numpy as np

from . import bench_constraint as B
from . import profile_constraint as P

_STAGE_KEYS = ("constraint rows", "island labels", "convex solve", "noslip", "signorini solve", "contact",
               "total force", "readback", "kinematics + RNE")


def _build(path, d, dt, n, pool, capture, slack=0, head=0, kick=0.0, **extra):
    scene, ent = B._pp_scene(path, dt, n, 1, capture=capture, constraint_islands=True, **extra)
    scene.solver("rigid")._row_pool = pool
    scene.solver("rigid")._row_slack = slack
    scene.solver("rigid")._row_head = head
    B._pp_set(scene, ent, d, n)
    if kick:
        # each env's velocities kicked by its own noise (the same in every variant): the envs' row counts then
        # change independently from step to step, not all together as in the copies of one settled state
        rng = np.random.default_rng(0)
        ent.set_dofs_velocity(np.tile(d.qvel, (n, 1)) + kick * rng.standard_normal((n, len(d.qvel))))
    for _ in range(20 if kick else 3):
        scene.step()
    return scene, ent


def _variants(args):
    """label -> (pool, slack, head): the block per env, then the pool's (``--slack`` or ``--variants``)."""
    out = {"block per env": (False, 0, 0)}
    if args.variants:
        for v in args.variants.split(","):
            k, h = (int(x) for x in v.split(":"))
            out[f"pool slack {k} head {h}"] = (True, k, h)
    else:
        for k in args.slack.split(","):
            out[f"pool slack {k}"] = (True, int(k), 0)
    return out


def _order(r, labels):
    k = r % len(labels)
    rot = labels[k:] + labels[:k]
    return rot if r % 2 == 0 else rot[::-1]


def _one_scene(args, name, path, d, dt, n, extra):
    scene, _ = _build(path, d, dt, n, True, False, kick=args.kick, **extra)
    s = scene.solver("rigid")
    variants = _variants(args)
    res = {k: [] for k in variants}
    stages = {k: {} for k in variants}
    moved = False
    load0 = os.getloadavg()[0]
    for r in range(args.rounds):
        for label in _order(r, list(variants)):
            s._row_pool, s._row_slack, s._row_head = variants[label]
            scene.step()        # one step to settle the layout (the rows move), not timed
            moved |= bool(s._row_pool and s.data.efc_off.numpy().any())
            per, total = P.polyphys_profile(scene, n, args.steps)
            res[label].append(total)
            for key, v in per.items():
                if any(key.startswith(k) for k in _STAGE_KEYS):
                    stages[label].setdefault(key, []).append(v)
    load1 = os.getloadavg()[0]
    print(f"== {name} n_envs={n}, one scene, {args.rounds} rounds of {args.steps} steps (capture off), "
          f"load {load0:.2f}-{load1:.2f}; efc_off nonzero in the pool: {moved}")
    for label, xs in res.items():
        print(f"   {label:16s} step {min(xs):9.2f} / {statistics.median(xs):9.2f} µs per env-step (min / median)",
              flush=True)
        for key, ys in sorted(stages[label].items()):
            print(f"      {key:34s} {min(ys):9.2f} / {statistics.median(ys):9.2f}", flush=True)


def _captured(args, name, path, d, dt, n, extra):
    built = {label: _build(path, d, dt, n, pool, True, slack, head, args.kick, **extra)
             for label, (pool, slack, head) in _variants(args).items()}
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
        print(f"   {label:14s} {min(xs):9.2f} / {statistics.median(xs):9.2f} µs per env-step (min / median)", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--pile-n", type=int, default=64)
    ap.add_argument("--scenes", default="boxes,humanoid,pile")
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--captured", action="store_true", help="two captured scenes instead of one swapped")
    ap.add_argument("--slack", default="0", help="one-scene: the pool's variants, make_rows' slack in rows (comma list)")
    ap.add_argument("--variants", default="", help="the pool's variants as slack:head pairs (comma list; instead of "
                    "--slack)")
    ap.add_argument("--kick", type=float, default=0.0, help="each env's velocities kicked by this much noise, then 20 "
                    "steps: counts that change env by env")
    args = ap.parse_args()
    import warp as wp

    wp.config.quiet = True
    for name, path, m, d, n, extra in P.settled_scenes(args.scenes.split(","), args.n, args.pile_n):
        dt = float(m.opt.timestep)
        (_captured if args.captured else _one_scene)(args, name, path, d, dt, n, extra)


if __name__ == "__main__":
    main()
