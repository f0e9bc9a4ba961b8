"""The solve's scratch, one block per View against one block per env, in-process A/B: ``python -m
benchmarks.probe_scratch [--scenes boxes,humanoid,pile] [--rounds 20] [--steps 10] [--n 1024] [--pile-n 64]
[--stages] [--pad] [--qm] [--smooth] [--qld]``.

Per scene of profile_constraint (the settled states of bench_constraint; the pile with 64 envs; graph capture on,
one thread, islands on): the same scene built twice in one process, the View's solve scratch (plugins/rigid/model.py
``SCRATCH_FIELDS``) one block for all its envs (``_shared_scratch``, the default) and one block per env. Rounds of
``steps`` captured steps alternate the variants (rotated, reversed every other round); least and median CPU µs per
env-step over the rounds, the load with them. Each variant's qpos after the last round is checked equal to the
first's (the same numbers). ``--stages``: graph capture off, ONE scene whose Views' scratch arrays are swapped
between the shared blocks and arrays of one block per env before each sample (everything else the same memory:
no scene-to-scene placement noise), each sample the stage profile of profile_constraint (``polyphys_profile``);
least and median per stage that reads the scratch (solve, labels), of the row builder (a control: it reads none)
and of the step. ``--pad`` (with ``--stages``): the same one-scene A/B of the convex solve's padding rows instead,
from d.efc_pad (``RigidSolver._pad_mark``, the default) against the whole row budget with non-temporal stores.
``--qm``: the dense M d.qM one block per View (``model._qm_scratch``, the default) against one block per env
instead of the scratch (the scratch shared in both), two scenes captured or (``--stages``) swapped in one scene.
``--smooth``: the smooth pass's intermediates (``model.SMOOTH_SCRATCH_FIELDS``: joint anchors and axes, composite
inertias, the RNE's accelerations and subtree wrenches) one block per View (``model._smooth_scratch``, the default)
against one block per env, two scenes captured or (``--stages``) swapped in one scene (the smooth pass's stage).
``--qld --stages``: the smooth pass's factor d.qld alone (a smooth-pass intermediate since Round 17) one block per
View against one block per env, swapped in one scene.
"""

from __future__ import annotations

import argparse
import os
import statistics

import numpy as np

from . import bench_constraint as B
from . import profile_constraint as P


def _build(path, d, dt, n, shared, capture=True, qm=None, smooth=None, **extra):
    """``shared``: the solve's scratch one block per View; ``qm`` (not None): d.qM one block per View
    (model._qm_scratch) or per env, the scratch shared; ``smooth`` (not None): the smooth pass's intermediates
    one block per View (model._smooth_scratch) or per env."""
    from polyphys.plugins.rigid import model as M

    M._shared_scratch = shared
    M._qm_scratch = shared if qm is None else qm
    M._smooth_scratch = shared if smooth is None else smooth
    try:
        scene, ent = B._pp_scene(path, dt, n, 1, capture=capture, constraint_islands=True, **extra)
        B._pp_set(scene, ent, d, n)
        for _ in range(3):
            scene.step()
    finally:
        M._shared_scratch = True
        M._qm_scratch = True
        M._smooth_scratch = True
    return scene, ent


_SMOOTH_KEY = "kinematics + RNE + actuation + CRB + factor + solve (+ dense M), fused"
_STAGE_KEYS = ("convex solve", "island labels", "noslip", "signorini solve", "constraint rows", _SMOOTH_KEY)


def _swap_sets(scene):
    """{label: [(view struct, field, array)]}: the scene's Views' scratch as built (shared blocks) and as arrays
    of one block per env (new, zero-filled)."""
    import warp as wp
    from polyphys.plugins.rigid import model as M

    s = scene.solver("rigid")
    shared, per_env = [], []
    for v in s.views.values():
        for name in M.SCRATCH_FIELDS:
            a = getattr(v.d, name)
            shared.append((v.d, name, a))
            b = wp.zeros(a.shape, dtype=a.dtype, device=a.device)
            M._advise_huge(b)
            per_env.append((v.d, name, b))
    return {"per env": per_env, "one block": shared}


def _qm_sets(scene):
    """{label: [(view struct, "qM", array)]}: the Views' dense M as built (one block per env) and as one block per
    View (the convex solve writes each env's M at its start and nothing after it in the step reads it)."""
    from polyphys.plugins.rigid import model as M

    s = scene.solver("rigid")
    per_env, block = [], []
    for v in s.views.values():
        a = v.d.qM
        per_env.append((v.d, "qM", a))
        block.append((v.d, "qM", M._one_env_block(a.shape, a.dtype, a.device)))
    return {"qM per env": per_env, "qM one block": block}


def _smooth_sets(scene):
    """{label: [(view struct, field, array)]}: the Views' smooth-pass intermediates as built (one block per View)
    and as arrays of one block per env (new, zero-filled)."""
    import warp as wp
    from polyphys.plugins.rigid import model as M

    s = scene.solver("rigid")
    per_env, block = [], []
    for v in s.views.values():
        for name in M.SMOOTH_SCRATCH_FIELDS:
            a = getattr(v.d, name)
            block.append((v.d, name, a))
            b = wp.zeros(a.shape, dtype=a.dtype, device=a.device)
            M._advise_huge(b)
            per_env.append((v.d, name, b))
    return {"smooth per env": per_env, "smooth block": block}


def _qld_sets(scene):
    """{label: [(view struct, "qld", array)]}: the Views' factor d.qld as built (one block per View, Round 17) and as
    one block per env (new, zero-filled): the smooth pass's solve reads it in the same env's pass, nothing later."""
    import warp as wp
    from polyphys.plugins.rigid import model as M

    s = scene.solver("rigid")
    per_env, block = [], []
    for v in s.views.values():
        a = v.d.qld
        block.append((v.d, "qld", a))
        b = wp.zeros(a.shape, dtype=a.dtype, device=a.device)
        M._advise_huge(b)
        per_env.append((v.d, "qld", b))
    return {"qld per env": per_env, "qld one block": block}


def _stages_in_one_scene(args, name, path, d, dt, n, extra):
    scene, ent = _build(path, d, dt, n, True, capture=False, **extra)
    if args.pad:
        s = scene.solver("rigid")
        sets = {"pad budget": [(s, "_pad_mark", False)], "pad from mark": [(s, "_pad_mark", True)]}
    elif args.qm:
        sets = _qm_sets(scene)
    elif args.smooth:
        sets = _smooth_sets(scene)
    elif args.qld:
        sets = _qld_sets(scene)
    else:
        sets = _swap_sets(scene)
    res = {k: [] for k in sets}
    stages = {k: {} for k in sets}
    load0 = os.getloadavg()[0]
    order = list(sets)
    for r in range(args.rounds):
        k = r % len(order)
        rot = order[k:] + order[:k]
        for label in (rot if r % 2 == 0 else rot[::-1]):
            for vd, field, arr in sets[label]:
                setattr(vd, field, arr)
            per, total = P.polyphys_profile(scene, n, args.steps)
            res[label].append(total)
            for key in _STAGE_KEYS:
                if key in per:
                    stages[label].setdefault(key, []).append(per[key])
    load1 = os.getloadavg()[0]
    print(f"== {name} n_envs={n}, one scene, {args.rounds} rounds of {args.steps} steps (capture off), "
          f"load {load0:.2f}-{load1:.2f}")
    for label, xs in res.items():
        print(f"   {label:12s} {min(xs):9.2f} / {statistics.median(xs):9.2f} µs per env-step (min / median)", flush=True)
        for key, ys in stages[label].items():
            lab = "smooth pass" if key == _SMOOTH_KEY else key
            print(f"      {lab:18s} {min(ys):9.2f} / {statistics.median(ys):9.2f}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--pile-n", type=int, default=64)
    ap.add_argument("--scenes", default="boxes,humanoid,pile")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--stages", action="store_true", help="capture off, stage profile per round")
    ap.add_argument("--pad", action="store_true", help="with --stages: the padding rows' A/B instead")
    ap.add_argument("--qm", action="store_true", help="the dense M d.qM per env against one block per View "
                    "(model._qm_scratch; with --stages: swapped in one scene)")
    ap.add_argument("--smooth", action="store_true", help="the smooth pass's intermediates per env against one "
                    "block per View (model._smooth_scratch; with --stages: swapped in one scene)")
    ap.add_argument("--qld", action="store_true", help="with --stages: the smooth pass's factor d.qld per env against "
                    "one block per View (Round 17), swapped in one scene")
    args = ap.parse_args()
    if args.qld and not args.stages:
        ap.error("--qld needs --stages")
    import warp as wp

    wp.config.quiet = True
    for name, path, m, d, n, extra in P.settled_scenes(args.scenes.split(","), args.n, args.pile_n):
        dt = float(m.opt.timestep)
        if args.stages:
            _stages_in_one_scene(args, name, path, d, dt, n, extra)
            continue
        if args.qm:
            built = {label: _build(path, d, dt, n, True, qm=qm, **extra)
                     for label, qm in (("qM per env", False), ("qM one block", True))}
        elif args.smooth:
            built = {label: _build(path, d, dt, n, True, smooth=sm, **extra)
                     for label, sm in (("smooth per env", False), ("smooth block", True))}
        else:
            built = {label: _build(path, d, dt, n, shared, **extra)
                     for label, shared in (("per env", False), ("one block", True))}
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
            print(f"   {label:12s} {min(xs):9.2f} / {statistics.median(xs):9.2f} µs per env-step (min / median)", flush=True)
        del built


if __name__ == "__main__":
    main()
