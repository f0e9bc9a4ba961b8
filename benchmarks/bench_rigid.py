"""Rigid solver throughput: the gymnasium humanoid (MJCF through polyphys's importer) falling with
contacts and constraints off, float64, implicitfast, dt = the model's 0.003 s, against MuJoCo stepping
the same number of copies of the same model (constraints disabled, fluid off, implicitfast) in the same
run: ``mujoco.rollout`` with 1 and 2 threads and a plain ``mj_step`` loop.

Rows: polyphys env-steps/s at n_envs 1, 64, 1024 with graph capture on/off and cpu_threads 1/2; the
reference of each row is the best MuJoCo figure for the same number of copies (ratio > 1: polyphys
faster). Link poses are refreshed lazily by polyphys getters (none are called here), as mj_step
leaves its kinematics at the pre-step state.
"""

from __future__ import annotations

import os
import time

import numpy as np

from . import row, time_steps


def _humanoid_path() -> str | None:
    import importlib.util

    spec = importlib.util.find_spec("mujoco")
    if not (spec and spec.origin):
        return None
    p = os.path.join(os.path.dirname(os.path.dirname(spec.origin)), "gymnasium", "envs", "mujoco",
                     "assets", "humanoid.xml")
    return p if os.path.exists(p) else None


def _mj_model(path):
    import mujoco

    m = mujoco.MjModel.from_xml_path(path)
    m.opt.integrator = int(mujoco.mjtIntegrator.mjINT_IMPLICITFAST)
    m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    m.opt.density = 0.0
    m.opt.viscosity = 0.0
    return m


def _mujoco_rates(m, n: int, nstep: int, repeats: int) -> dict:
    import mujoco
    from mujoco import rollout

    d = mujoco.MjData(m)
    size = mujoco.mj_stateSize(m, mujoco.mjtState.mjSTATE_FULLPHYSICS)
    state0 = np.zeros((n, size))
    mujoco.mj_getState(m, d, state0[0], mujoco.mjtState.mjSTATE_FULLPHYSICS)
    state0[:] = state0[0]
    out = {}
    for threads in (1, 2):
        datas = [mujoco.MjData(m) for _ in range(threads)]
        rollout.rollout([m] * n, datas, state0, nstep=2)      # warm-up (thread pool, allocation)
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            rollout.rollout([m] * n, datas, state0, nstep=nstep)
            best = min(best, time.perf_counter() - t0)
        out[f"mujoco.rollout nthread={threads}"] = n * nstep / best
    datas = [mujoco.MjData(m) for _ in range(n)]
    steps = max(2, nstep // 4)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(steps):
            for dd in datas:
                mujoco.mj_step(m, dd)
        best = min(best, time.perf_counter() - t0)
    out["mj_step loop"] = n * steps / best
    return out


def _mujoco_cpu(m, n: int, nstep: int, repeats: int) -> float:
    import mujoco
    from mujoco import rollout

    d = mujoco.MjData(m)
    size = mujoco.mj_stateSize(m, mujoco.mjtState.mjSTATE_FULLPHYSICS)
    state0 = np.zeros((n, size))
    mujoco.mj_getState(m, d, state0[0], mujoco.mjtState.mjSTATE_FULLPHYSICS)
    state0[:] = state0[0]
    datas = [mujoco.MjData(m)]
    rollout.rollout([m] * n, datas, state0, nstep=2)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        rollout.rollout([m] * n, datas, state0, nstep=nstep)
        best = min(best, (time.process_time() - t0) / (n * nstep))
    return best


def _scene(path, dt, n_envs, capture, threads, precision="64"):
    import polyphys
    from polyphys import morphs
    from polyphys.plugins.rigid import RigidOptions
    from polyphys.plugins.rigid.materials import Rigid

    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=dt, precision=precision, graph_capture=capture,
                                                   cpu_threads=threads),
                           rigid=RigidOptions(integrator="implicitfast", enable_collision=False,
                                              disable_constraint=True, mujoco_compatible=True))
    scene.add_entity(morphs.MJCF(file=path), Rigid())
    scene.build(n_envs=n_envs)
    return scene


def run(quick: bool = False) -> list[dict]:
    import warnings

    import warp as wp

    wp.config.quiet = True
    path = _humanoid_path()
    if path is None:
        return [row("humanoid", "env-steps/s", "env-steps/s", float("nan"), None, "",
                    notes="gymnasium's humanoid.xml not installed: skipped")]
    m = _mj_model(path)
    dt = float(m.opt.timestep)
    sizes = (1, 64) if quick else (1, 64, 1024)
    min_time, repeats = (0.1, 2) if quick else (0.5, 3)
    rows = []
    for n in sizes:
        nstep = max(5, int((0.05 if quick else 0.3) * 150000 / (n * 1.0)))
        ref = _mujoco_rates(m, n, min(nstep, 2000), repeats)
        best_name = max(ref, key=ref.get)
        for name, rate in ref.items():
            rows.append(row(f"humanoid no contact, {n} copies", f"env-steps/s, {name}", "env-steps/s", rate,
                            None, "", notes="MuJoCo reference (float64, implicitfast)"))
        for capture in (True, False):
            for threads in (1, 2):
                if n == 1 and threads == 2:
                    continue
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    scene = _scene(path, dt, n, capture, threads)
                t = time_steps(scene.step, min_time=min_time, repeats=repeats)
                rate = n / t
                rows.append(row(f"humanoid no contact, n_envs={n}",
                                f"env-steps/s, capture={'on' if capture else 'off'}, cpu_threads={threads}",
                                "env-steps/s", rate, ref[best_name], best_name, ratio=rate / ref[best_name],
                                notes="float64, implicitfast; ratio > 1: polyphys faster"))
    # CPU time (process_time) per env-step on one thread: robust when other processes share the
    # cores, which makes the wall-clock rates above vary by 2-5x between runs
    n = 64 if quick else 1024
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scene = _scene(path, dt, n, True, 1)
    for _ in range(3):
        scene.step()
    k = 5 if quick else 20
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        for _ in range(k):
            scene.step()
        best = min(best, (time.process_time() - t0) / (k * n))
    mj = _mujoco_cpu(m, n, max(2, 2 * k // 4), repeats)
    rows.append(row(f"humanoid no contact, n_envs={n}", "CPU time per env-step, 1 thread", "us",
                    best * 1e6, mj * 1e6, "mujoco.rollout nthread=1 (CPU time)",
                    notes="process_time: insensitive to other processes; ratio > 1: polyphys faster"))
    if not quick:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scene = _scene(path, dt, 1024, True, 2, precision="32")
        t = time_steps(scene.step, min_time=min_time, repeats=repeats)
        rows.append(row("humanoid no contact, n_envs=1024", "env-steps/s, float32, capture on, cpu_threads=2",
                        "env-steps/s", 1024 / t, None, "", notes="float32 (MuJoCo has no float32 mode)"))
    return rows
