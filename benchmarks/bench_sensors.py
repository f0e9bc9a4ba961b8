"""Sensor cost: the gymnasium humanoid (MJCF through polyphys's importer; tendons removed, Euler,
Newton, elliptic cones, contacts and joint limits on, float64, dt = the model's 0.003 s) with 10
MJCF sensors — accelerometer, gyro, velocimeter, force, torque, touch, framepos, framequat,
subtreecom, jointpos — at 1024 envs, against MuJoCo computing the same sensordata for the same
model in the same run.

Cost = CPU time per env-step with the sensors minus without them (polyphys: the same file without
its <sensor> block; MuJoCo: the same model with ``mjDSBL_SENSOR`` set), one thread each (process
CPU time: robust when other processes share the cores), from the same initial state (the humanoid
falls: limits active, then contacts). polyphys's share holds the post-solve readback
(rnePostConstraint), one launch per sensor kind and the measurement launch; MuJoCo's holds
mj_sensorPos/Vel/Acc (its rnePostConstraint included). Rows: the cost per env-step (ratio > 1:
polyphys cheaper), the share of the step (the issue's goal: under 10 %), and ``read_sensors()``,
the host copy of every reading of every env.
"""

from __future__ import annotations

import os
import tempfile
import time
import xml.etree.ElementTree as ET

from . import row

SENSORS = """
<sensor>
  <accelerometer name="acc" site="imu"/><gyro name="gyro" site="imu"/><velocimeter name="vel" site="imu"/>
  <force name="f" site="wrist"/><torque name="t" site="wrist"/><touch name="touch" site="sole"/>
  <framepos name="pos" objtype="site" objname="imu"/><framequat name="quat" objtype="xbody" objname="torso"/>
  <subtreecom name="com" body="torso"/><jointpos name="knee" joint="right_knee"/>
</sensor>
"""


def _humanoid_path() -> str | None:
    import importlib.util

    spec = importlib.util.find_spec("mujoco")
    if not (spec and spec.origin):
        return None
    p = os.path.join(os.path.dirname(os.path.dirname(spec.origin)), "gymnasium", "envs", "mujoco", "assets",
                     "humanoid.xml")
    return p if os.path.exists(p) else None


def _models(path: str, folder: str) -> tuple[str, str]:
    """(file with sensors, file without): tendons removed (polyphys does not simulate them), Euler,
    Newton, elliptic cones; sites at generic poses on the torso, the right lower arm, the right foot."""
    root = ET.parse(path).getroot()
    for el in root.findall("tendon"):
        root.remove(el)
    opt = root.find("option")
    for k in ("integrator", "solver", "iterations"):
        opt.attrib.pop(k, None)
    opt.set("integrator", "Euler")
    opt.set("cone", "elliptic")
    bodies = {b.get("name"): b for b in root.iter("body")}
    for body, name, attrs in (("torso", "imu", {"pos": "0.02 -0.01 0.05", "euler": "10 -20 30"}),
                              ("right_lower_arm", "wrist", {"pos": "0.05 0.03 -0.02", "euler": "-15 25 40"}),
                              ("right_foot", "sole", {"pos": "0 0 -0.02", "type": "box", "size": "0.2 0.2 0.1"})):
        ET.SubElement(bodies[body], "site", name=name, **attrs)
    plain = os.path.join(folder, "humanoid_plain.xml")
    ET.ElementTree(root).write(plain)
    root.append(ET.fromstring(SENSORS))
    with_sensors = os.path.join(folder, "humanoid_sensors.xml")
    ET.ElementTree(root).write(with_sensors)
    return with_sensors, plain


def _polyphys_scene(path: str, n: int):
    import warnings

    import polyphys
    from polyphys import morphs
    from polyphys.plugins.rigid import RigidOptions
    from polyphys.plugins.rigid.materials import Rigid

    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.003, precision="64", cpu_threads=1),
                           rigid=RigidOptions.mujoco(integrator="Euler", friction_cone="elliptic"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scene.add_entity(morphs.MJCF(file=path), Rigid())
        scene.build(n_envs=n)
    state = scene.get_state()
    for _ in range(3):
        scene.step()

    def block(steps):
        scene.reset(state)
        t0 = time.process_time()
        for _ in range(steps):
            scene.step()
        return (time.process_time() - t0) / (steps * n)

    return scene, block


def _mujoco_block(path: str, n: int, sensors: bool):
    import mujoco
    import numpy as np
    from mujoco import rollout

    m = mujoco.MjModel.from_xml_path(path)
    if not sensors:
        m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_SENSOR)
    d = mujoco.MjData(m)
    size = mujoco.mj_stateSize(m, mujoco.mjtState.mjSTATE_FULLPHYSICS)
    state0 = np.zeros((n, size))
    mujoco.mj_getState(m, d, state0[0], mujoco.mjtState.mjSTATE_FULLPHYSICS)
    state0[:] = state0[0]
    datas = [mujoco.MjData(m)]
    rollout.rollout([m] * n, datas, state0, nstep=2)

    def block(steps):
        t0 = time.process_time()
        rollout.rollout([m] * n, datas, state0, nstep=steps)
        return (time.process_time() - t0) / (steps * n)

    return block


def _best_pair(with_block, without_block, steps: int, repeats: int) -> tuple[float, float]:
    """Best CPU time per env-step of each variant, the two measured alternately (a load change then
    hits both)."""
    a, b = float("inf"), float("inf")
    for _ in range(repeats):
        a = min(a, with_block(steps))
        b = min(b, without_block(steps))
    return a, b


def _sensor_launches(scene, n: int, k: int) -> dict:
    """CPU time per env of the sensors' own work, each part timed alone: the rigid readback stage,
    each sensor group (one launch per kind) and the measurement launch (no step in between: the
    same inputs each time)."""
    from polyphys.plugins.rigid import readback

    sv, hub = scene.solver("rigid"), scene.sensor_hub
    qacc = (lambda v: v.d.qacc_warmstart) if sv.has_constraint else (lambda v: v.d.qacc_smooth)  # noqa: E731
    parts = scene.layout.partitions

    def best(fn):
        b = float("inf")
        for _ in range(3):
            t0 = time.process_time()
            for _ in range(k):
                for part in parts:
                    fn(part)
            b = min(b, (time.process_time() - t0) / (k * n))
        return b

    def stage(part):
        v = sv.views[part.index]
        readback.rne_post_constraint(v, qacc(v))

    out = {"readback (rnePostConstraint)": best(stage)}
    for g in hub.groups:
        kind = g.sensors[0].kind
        out[f"{kind} group ({len(g.sensors)} sensors)"] = best(lambda part, g=g: g.evaluate(part, hub._part(part)["truth"]))
    out["all sensor launches (groups + measurement)"] = best(hub.evaluate)
    return out


def run(quick: bool = False) -> list[dict]:
    import warp as wp

    wp.config.quiet = True
    src = _humanoid_path()
    if src is None:
        return [row("humanoid, 10 sensors", "sensor cost", "us", float("nan"),
                    notes="gymnasium's humanoid.xml not installed: skipped")]
    n = 64 if quick else 1024
    steps, repeats = (5, 2) if quick else (30, 5)
    try:
        load = f"load {os.getloadavg()[0]:.1f}"
    except OSError:
        load = ""
    with tempfile.TemporaryDirectory() as tmp:
        with_s, plain = _models(src, tmp)
        scene, pp_with = _polyphys_scene(with_s, n)
        _, pp_without = _polyphys_scene(plain, n)
        pp_s, pp_0 = _best_pair(pp_with, pp_without, steps, repeats)
        mj_s, mj_0 = _best_pair(_mujoco_block(with_s, n, True), _mujoco_block(with_s, n, False), steps, repeats)
    parts = _sensor_launches(scene, n, 5 if quick else 20)
    alone = parts["readback (rnePostConstraint)"] + parts["all sensor launches (groups + measurement)"]
    case = f"humanoid, 10 sensors, n_envs={n}"
    pp_cost, mj_cost = pp_s - pp_0, mj_s - mj_0
    rows = [
        row(case, "sensor CPU time per env-step (with − without), 1 thread", "us", pp_cost * 1e6, mj_cost * 1e6,
            "MuJoCo sensors (rollout, 1 thread)",
            notes=f"ratio > 1: polyphys cheaper; a difference of two noisy times ({load})"),
        row(case, "sensor share of the step", "%", 100 * pp_cost / pp_s, 100 * mj_cost / mj_s, "MuJoCo's share",
            notes=f"goal < 10 %; step {pp_s * 1e6:.1f} us (polyphys) vs {mj_s * 1e6:.1f} us (MuJoCo) per env-step "
                  f"with sensors"),
        row(case, "sensor launches timed alone (readback + groups + measurement)", "us", alone * 1e6,
            mj_cost * 1e6, "MuJoCo sensors (with − without)",
            notes=f"{100 * alone / pp_s:.1f} % of polyphys's step; ratio > 1: polyphys cheaper"),
    ]
    for name, v in parts.items():
        rows.append(row(case, f"  of which: {name}", "us", v * 1e6, notes="CPU time per env, timed alone"))
    t0 = time.perf_counter()
    k = 3 if quick else 10
    for _ in range(k):
        scene.read_sensors()
    rows.append(row(case, "read_sensors() per step (host copies, all envs)", "us", (time.perf_counter() - t0) / k * 1e6,
                    notes="10 Reading objects with time tags"))
    return rows
