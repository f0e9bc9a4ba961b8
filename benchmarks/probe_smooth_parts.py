"""The smooth pass and the substep's tail part by part, next to MuJoCo's functions for the same work:
``python -m benchmarks.probe_smooth_parts [--scenes boxes,humanoid] [--samples 8] [--mujoco]``.

Per scene of profile_constraint (the settled state, 1024 envs; MuJoCo-compatible implicitfast as the benchmark),
each native launch of the fused smooth pass (kinematics, RNE, actuation, crb_factor_solve — also without the
integration's second factor and the dense M) and of the tail (total_force, ld_solve, gyro_resolve, integrate, the
fused post_solve) is launched alone on the same state, variants alternated; CPU µs per env, least / median of
``samples``: "batch" relaunches the whole batch (each env's rows come from memory), "hot" the first 64 envs
(their rows stay in cache) less the launch's fixed cost measured with one env — the arithmetic. ``--mujoco``: the
MuJoCo functions of the same stages on one MjData at the same state (a Python loop; the call overhead, measured
with ``mju_zero`` on one number, subtracted: ±0.2 µs), as MuJoCo's rollout keeps one MjData in cache
(benchmarks/results/constraint.md, Round 14).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from . import profile_constraint as P


def _best(fn, reps):
    import warp as wp

    wp.synchronize()
    t0 = time.process_time()
    for _ in range(reps):
        fn()
    wp.synchronize()
    return (time.process_time() - t0) / reps


def polyphys_parts(scene, samples):
    """{part: ([batch µs per env], [hot µs per env])}."""
    import warp as wp
    from polyphys.plugins.rigid import actuation, bias, factorization, integration, kinematics
    from polyphys.plugins.rigid.model import view

    sol = scene.solver("rigid")
    vall = sol.views["all"]
    h, hd = sol.layout.h, sol._hd_solve
    hd_int = None if sol._approx else h
    prec = "64" if vall.scalar is wp.float64 else "32"
    views = {"batch": vall, "hot": view(sol.model, sol.data, 0, min(64, vall.n), prec, "cpu"),
             "one": view(sol.model, sol.data, 0, 1, prec, "cpu")}
    d = sol.data
    qpos, qvel = wp.clone(d.qpos), wp.clone(d.qvel)

    def restore():
        wp.copy(d.qpos, qpos)
        wp.copy(d.qvel, qvel)

    def parts(v):
        return {
            "kinematics": lambda: kinematics.kinematics(v),
            "rne": lambda: bias.rne(v),
            "actuation": lambda: actuation.actuation(v),
            "crb + factor + solve": lambda: factorization.crb_factor_solve(v, hd, d.qfrc_smooth, d.qacc_smooth, False),
            " + integration factor": lambda: factorization.crb_factor_solve(v, hd, d.qfrc_smooth, d.qacc_smooth, False,
                                                                            hd_int=hd_int),
            " + dense M (as in the step)": lambda: factorization.crb_factor_solve(v, hd, d.qfrc_smooth, d.qacc_smooth,
                                                                                 True, hd_int=hd_int),
            "smooth pass (fused)": lambda: factorization.smooth(v, hd, d.qfrc_smooth, d.qacc_smooth, True, hd_int=hd_int),
            "total_force": lambda: integration.total_force(v),
            "ld_solve": lambda: factorization.ld_solve(v, d.qfrc_total, d.qacc),
            "gyro_resolve": lambda: integration.gyro_resolve(v, d.qfrc_total),
            "integrate (+ state restore)": lambda: (integration.integrate(v, False, d.qfrc_total), restore()),
            "tail post_solve (+ state restore)": lambda: (integration.post_solve(v, False, solve=not sol._approx),
                                                          restore()),
        }

    fns = {k: parts(v) for k, v in views.items()}
    out = {k: ([], []) for k in fns["batch"]}
    keys = list(out)
    for s in range(samples):
        for k in (keys if s % 2 == 0 else keys[::-1]):
            out[k][0].append(_best(fns["batch"][k], 3) / vall.n * 1e6)
            one = _best(fns["one"][k], 30)
            out[k][1].append((_best(fns["hot"][k], 30) - one) / max(views["hot"].n - 1, 1) * 1e6)
    restore()
    return out


def mujoco_parts(m, d, reps=3000):
    """{MuJoCo function: µs per call} on one MjData at ``d``'s state, the Python call overhead subtracted."""
    import mujoco

    dd = mujoco.MjData(m)
    dd.qpos[:], dd.qvel[:], dd.qacc_warmstart[:] = d.qpos, d.qvel, d.qacc_warmstart
    mujoco.mj_forward(m, dd)
    d2 = mujoco.MjData(m)
    z = np.zeros(1)

    def per_call(f):
        def loop():
            for _ in range(reps):
                f()
        return min(_best(loop, 1) for _ in range(5)) / reps * 1e6

    base = per_call(lambda: mujoco.mju_zero(z))
    copy = per_call(lambda: mujoco.mj_copyData(d2, m, dd)) - base
    fns = {"mj_kinematics": lambda: mujoco.mj_kinematics(m, dd), "mj_comPos": lambda: mujoco.mj_comPos(m, dd),
           "mj_crb": lambda: mujoco.mj_crb(m, dd), "mj_factorM": lambda: mujoco.mj_factorM(m, dd),
           "mj_comVel": lambda: mujoco.mj_comVel(m, dd), "mj_passive": lambda: mujoco.mj_passive(m, dd),
           "mj_rne (flg_acc 0)": lambda: mujoco.mj_rne(m, dd, 0, dd.qfrc_bias),
           "mj_fwdActuation": lambda: mujoco.mj_fwdActuation(m, dd),
           "mj_fwdVelocity (comVel, passive, constraint reference, rne)": lambda: mujoco.mj_fwdVelocity(m, dd)}
    out = {k: per_call(f) - base for k, f in fns.items()}
    # the integrators change the state: each call on a fresh copy, the copy's cost subtracted
    out["mj_implicit (ADVANCE, implicitfast)"] = per_call(lambda: (mujoco.mj_copyData(d2, m, dd),
                                                                  mujoco.mj_implicit(m, d2))) - base - copy
    out["mj_Euler"] = per_call(lambda: (mujoco.mj_copyData(d2, m, dd), mujoco.mj_Euler(m, d2))) - base - copy
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--scenes", default="boxes,humanoid")
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--mujoco", action="store_true", help="also MuJoCo's functions on one MjData")
    args = ap.parse_args()
    import warp as wp

    wp.config.quiet = True
    for name, path, m, d, n, extra in P.settled_scenes(args.scenes.split(","), args.n, 64):
        scene = P.polyphys_scene(path, d, float(m.opt.timestep), n, constraint_islands=True, **extra)
        pp = polyphys_parts(scene, args.samples)
        print(f"{name} ({n} envs), load {os.getloadavg()[0]:.2f}: µs per env, batch min / median | hot min / median")
        for k, (b, hot) in pp.items():
            print(f"  {k:36s} {min(b):6.2f} / {statistics.median(b):6.2f} | {min(hot):6.2f} / "
                  f"{statistics.median(hot):6.2f}", flush=True)
        if args.mujoco:
            for k, x in mujoco_parts(m, d).items():
                print(f"  MuJoCo {k:60s} {x:6.2f}", flush=True)


if __name__ == "__main__":
    main()
