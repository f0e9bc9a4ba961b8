"""The smooth stages (kinematics, bias/RNE, actuation, crb_factor_solve) in the step and alone:
``python -m benchmarks.probe_smooth [--scenes boxes,humanoid,pile] [--rounds 3] [--n 1024]``.

Per scene of profile_constraint (same settled state; the pile with 64 envs): (1) each stage's CPU time per
env in the step (its host function wrapped by a timer, as profile_constraint does; least of ``rounds``
rounds of 5 steps); (2) the stage relaunched alone over the whole batch ("1024"); (3) relaunched on the
first 64 envs, whose data then stays in cache, less the launch's fixed cost (measured with one env) —
"hot", the stage's arithmetic. In step ≫ hot means the batch's memory traffic, hot ≈ in step means the
arithmetic (benchmarks/results/constraint.md, Round 12).

``--dense-ab``: where the convex solve's dense M is written (Round 15): by the smooth pass (``dense=True``, the
solve's next-env prefetch over M's whole rows: before Round 15) against by the solve itself at each env's start
(``RigidSolver._dense_in_solve``, convex_solve.solve ``mass_hd``), with the prefetch over M's whole rows or tree by
tree (the default); alternated in one process, ``rounds`` rounds of 3 steps: the smooth pass, the solve and the whole
step in CPU µs per env-step (``time.thread_time``), least and median.

``--ab``: instead, the solver's smooth pass (``RigidSolver._smooth``) as one launch (factorization.smooth,
the default) against the four launches (``_fused_smooth = False``), alternated ABBA in one process: its CPU time
per env in the step (least and median of ``rounds`` rounds of 5 steps), relaunched alone over the whole batch,
and the whole step (Round 13).
"""

from __future__ import annotations

import argparse
import collections
import os
import time

from . import profile_constraint as P

_STAGES = (("kinematics", "kinematics"), ("bias", "rne"), ("actuation", "actuation"),
           ("factorization", "crb_factor_solve"))


def in_step(scene, n, steps=5):
    """{stage: µs of CPU per env-step} of the smooth stages over ``steps`` steps."""
    import importlib

    import warp as wp

    acc = collections.defaultdict(float)
    saved = []
    for mod, attr in _STAGES:
        mm = importlib.import_module(f"polyphys.plugins.rigid.{mod}")
        fn = getattr(mm, attr)
        saved.append((mm, attr, fn))

        def timed(*a, _fn=fn, _k=attr, **k):
            wp.synchronize()
            t0 = time.process_time()
            out = _fn(*a, **k)
            wp.synchronize()
            acc[_k] += time.process_time() - t0
            return out

        setattr(mm, attr, timed)
    try:
        for _ in range(steps):
            scene.step()
    finally:
        for mm, attr, fn in saved:
            setattr(mm, attr, fn)
    return {k: v / (steps * n) * 1e6 for k, v in acc.items()}


def alone(scene, n_hot=64, samples=7):
    """{stage: (hot µs per env, whole-batch µs per env)} of each smooth stage relaunched on its own."""
    import warp as wp
    from polyphys.plugins.rigid import actuation, bias, factorization, kinematics
    from polyphys.plugins.rigid.model import view

    sol = scene.solver("rigid")
    h = sol.layout.h
    fns = {"kinematics": kinematics.kinematics, "rne": bias.rne, "actuation": actuation.actuation,
           "crb_factor_solve": lambda v: factorization.crb_factor_solve(v, 0.0, v.d.qfrc_smooth, v.d.qacc_smooth, True,
                                                                        hd_int=h)}
    prec = "64" if sol.views["all"].scalar is wp.float64 else "32"
    vall = sol.views["all"]
    v1 = view(sol.model, sol.data, 0, 1, prec, "cpu")
    vh = view(sol.model, sol.data, 0, min(n_hot, vall.n), prec, "cpu")

    def best(fn, v, reps):
        t = float("inf")
        for _ in range(samples):
            wp.synchronize()
            t0 = time.process_time()
            for _ in range(reps):
                fn(v)
            wp.synchronize()
            t = min(t, (time.process_time() - t0) / reps)
        return t * 1e6

    out = {}
    for k, fn in fns.items():
        one = best(fn, v1, 100)
        hot = (best(fn, vh, 20) - one) / max(vh.n - 1, 1)
        out[k] = (hot, best(fn, vall, 3) / vall.n)
    return out


def fused_ab(scene, n, rounds):
    """{variant: ([µs per env of _smooth in the step], [whole batch alone], [whole step])}, variants alternated ABBA."""
    import warp as wp

    sol = scene.solver("rigid")
    h = sol.layout.h
    vall = sol.views["all"]
    inner = sol._smooth
    acc = [0.0]

    def timed(*a, **k):
        wp.synchronize()
        t0 = time.process_time()
        inner(*a, **k)
        wp.synchronize()
        acc[0] += time.process_time() - t0

    out = {True: ([], [], []), False: ([], [], [])}
    for r in range(rounds):
        for fused in ((True, False) if r % 2 == 0 else (False, True)):
            sol._fused_smooth = fused
            scene.step()
            sol._smooth = timed
            acc[0] = 0.0
            t0 = time.process_time()
            for _ in range(5):
                scene.step()
            wp.synchronize()
            whole = time.process_time() - t0
            del sol._smooth
            out[fused][0].append(acc[0] / (5 * n) * 1e6)
            out[fused][2].append((whole - acc[0]) / (5 * n) * 1e6)
            wp.synchronize()
            t0 = time.process_time()
            for _ in range(3):
                inner(vall, 0.0, vall.d.qacc_smooth, True, hd_int=h)
            wp.synchronize()
            out[fused][1].append((time.process_time() - t0) / (3 * n) * 1e6)
            out[fused][2][-1] += out[fused][0][-1]
    sol._fused_smooth = True
    return out


def dense_ab(scene, n, rounds, steps=3):
    """{variant: {what: [µs per env-step]}} of the dense M's writer (see the module docstring), alternated."""
    import warp as wp
    from polyphys.plugins.rigid import convex_solve

    sol = scene.solver("rigid")
    variants = {"smooth pass, whole rows": (False, 6), "solve, whole rows": (True, 6), "solve, tree by tree": (True, 2)}
    out = {k: collections.defaultdict(list) for k in variants}
    names = list(variants)
    orig = convex_solve.solve
    try:
        for r in range(rounds):
            order = names[r % 3:] + names[:r % 3]
            for name in order[::-1] if r % 2 else order:
                in_solve, pf = variants[name]
                sol._dense_in_solve = in_solve
                convex_solve.solve = lambda v, w, mass_hd=None, _pf=pf: orig(v, w, prefetch=_pf, mass_hd=mass_hd)
                scene.step()
                acc = collections.defaultdict(float)
                for attr in ("_smooth", "_solve"):
                    def timed(*a, _f=getattr(sol, attr), _k=attr, _acc=acc, **k):
                        wp.synchronize()
                        t0 = time.thread_time()
                        _f(*a, **k)
                        wp.synchronize()
                        _acc[_k] += time.thread_time() - t0
                    setattr(sol, attr, timed)
                t0 = time.thread_time()
                for _ in range(steps):
                    scene.step()
                wp.synchronize()
                whole = time.thread_time() - t0
                del sol._smooth, sol._solve
                for k, x in (("smooth", acc["_smooth"]), ("solve", acc["_solve"]),
                             ("smooth + solve", acc["_smooth"] + acc["_solve"]), ("whole step", whole)):
                    out[name][k].append(x / (steps * n) * 1e6)
    finally:
        convex_solve.solve = orig
        sol._dense_in_solve = True
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--pile-n", type=int, default=64)
    ap.add_argument("--scenes", default="boxes,humanoid,pile")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ab", action="store_true", help="fused smooth launch vs the four launches (Round 13)")
    ap.add_argument("--dense-ab", action="store_true", help="the dense M written by the smooth pass or the solve (Round 15)")
    args = ap.parse_args()
    import warp as wp

    wp.config.quiet = True
    for name, path, m, d, n, extra in P.settled_scenes(args.scenes.split(","), args.n, args.pile_n):
        from polyphys.plugins.rigid import model as M

        # --dense-ab switches the dense M's writer per step: d.qM per env (one block per View, model._qm_scratch,
        # leaves it to the solve)
        M._qm_scratch = not args.dense_ab
        try:
            scene = P.polyphys_scene(path, d, float(m.opt.timestep), n, constraint_islands=True, **extra)
        finally:
            M._qm_scratch = True
        if args.dense_ab:
            import statistics

            ab = dense_ab(scene, n, args.rounds)
            print(f"{name} ({n} envs), load {os.getloadavg()[0]:.2f}: CPU µs per env-step, min / median")
            for variant, res in ab.items():
                print(f"  {variant:24s} " + "  ".join(f"{k} {min(x):7.2f} / {statistics.median(x):7.2f}"
                                                      for k, x in res.items()), flush=True)
            continue
        if args.ab:
            import statistics

            ab = fused_ab(scene, n, args.rounds)
            print(f"{name} ({n} envs), load {os.getloadavg()[0]:.2f}: µs per env, min / median, fused vs four launches")
            for i, what in enumerate(("smooth in the step", "smooth alone, batch", "whole step")):
                f, s4 = ab[True][i], ab[False][i]
                print(f"  {what:20s} {min(f):7.2f} / {statistics.median(f):7.2f}  vs  {min(s4):7.2f} / "
                      f"{statistics.median(s4):7.2f}", flush=True)
            continue
        scene.solver("rigid")._fused_smooth = False      # the four launches, so that each stage is timed in the step
        step = collections.defaultdict(lambda: float("inf"))
        for _ in range(args.rounds):
            for k, x in in_step(scene, n).items():
                step[k] = min(step[k], x)
        lone = alone(scene)
        print(f"{name} ({n} envs), load {os.getloadavg()[0]:.2f}: µs per env, hot / whole batch alone / in the step")
        for k, (hot, full) in lone.items():
            print(f"  {k:18s} {hot:6.2f} / {full:6.2f} / {step[k]:6.2f}", flush=True)


if __name__ == "__main__":
    main()
