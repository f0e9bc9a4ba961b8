"""Record and compare 50-step rigid trajectories: the bit-identity check of rigid refactors.

A refactor that keeps the algorithm must keep every recorded number bit for bit. Record on the code
before the change, compare after it:

    python tools/rigid_trajectories.py record /tmp/rigid_ref.npz
    python tools/rigid_trajectories.py compare /tmp/rigid_ref.npz       # exit 1 on any difference

Each scene is built through the public API only (Scene, add_entity, the entity getters), with two
envs started at different velocities, and records qpos, qvel and the contact forces (force on geom
A of every contact slot, and the per-link net contact wrench) after every step. Scenes: 8 boxes
dropped on a plane (default mode: approximate_implicitfast, pyramidal, Newton; MuJoCo-compatible
implicitfast), gymnasium's humanoid lying on the floor (MuJoCo-compatible; default mode in float32),
an articulated chain with joint limits, a ball limit, frictionloss and connect / weld / joint
equalities (``CHAIN``, the model of tests/rigid_constraint/mjscenes.py; default mode and Euler), the boxes with
the elliptic cone (signorini; convex with CG; convex with Newton, islands on and off) and with noslip, the
humanoid in the air with random controls (no constraint), each in float64 and float32 where listed. ``--only
NAME`` runs one scene.

``--sensors`` adds sensors (IMU, force/torque, subtree, joint, contact force, contact, and actuator
where the model has actuators) on the entity's links and reads them and the readback getters
(``get_cfrc_int``, ``get_qfrc_constraint``) after every step: the readback stage then runs in
every step and forward() queries run in between, and the trajectory must still be bit-identical
to the one recorded without sensors.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import warnings

import numpy as np

STEPS = 50

BOXES = """<mujoco model="boxes">
  <option timestep="0.005"/>
  <worldbody>
    <geom name="floor" type="plane" size="10 10 0.1"/>
{bodies}
  </worldbody>
</mujoco>
"""


def boxes_xml() -> str:
    bodies = []
    for i in range(8):
        x, y = (i % 4) * 0.5 - 0.75, (i // 4) * 0.5 - 0.25
        bodies.append(f'    <body name="box{i}" pos="{x} {y} {0.15 + 0.05 * i:.2f}" euler="{7 * i} {5 * i} {11 * i}">'
                      f'<freejoint/><geom type="box" size="0.1 0.1 0.1" mass="1"/></body>')
    return BOXES.format(bodies="\n".join(bodies))


def humanoid_path() -> str:
    import importlib.util

    spec = importlib.util.find_spec("gymnasium")
    return os.path.join(os.path.dirname(spec.origin), "envs", "mujoco", "assets", "humanoid.xml")


CHAIN = """
<mujoco>
  <option timestep="0.004" cone="pyramidal" impratio="1" tolerance="1e-12" iterations="1000"
          ls_iterations="100" ls_tolerance="1e-6"/>
  <default><geom solref="0.02 1" solimp="0.85 0.97 0.002 0.4 3"/></default>
  <worldbody>
    <geom type="plane" size="3 3 .1" friction="0.7 0.02 0.001"/>
    <body name="box" pos="0 0 0.098">
      <freejoint/>
      <geom type="box" size=".1 .08 .1" mass="2" condim="3" friction="0.9 0.03 0.002"/>
    </body>
    <body name="ball" pos="0.6 0 0.047">
      <freejoint/>
      <geom type="sphere" size=".05" mass="0.5" condim="6"/>
    </body>
    <body name="arm" pos="-0.6 0 0.5">
      <joint name="j0" type="hinge" axis="0 1 0" range="-30 60" frictionloss="0.3" damping="0"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.25" size="0.03" mass="1"/>
      <body name="fore" pos="0 0 -0.25">
        <joint name="j1" type="hinge" axis="0 1 0" range="-10 90" frictionloss="0.1"/>
        <joint name="j2" type="slide" axis="0 0 1" range="-0.05 0.05"/>
        <geom type="capsule" fromto="0 0 0 0.1 0 -0.22" size="0.03" mass="0.7" condim="3"/>
        <body name="hand" pos="0.1 0 -0.25">
          <joint name="j3" type="hinge" axis="1 0 0"/>
          <geom type="sphere" size="0.04" mass="0.3"/>
        </body>
      </body>
    </body>
    <body name="pend" pos="0 0.6 0.6">
      <joint name="p0" type="hinge" axis="1 0 0"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.02" mass="0.4"/>
    </body>
    <body name="cone" pos="-0.3 -0.6 0.6">
      <joint name="bj" type="ball" range="0 30"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.2" size="0.02" mass="0.3" contype="0" conaffinity="0"/>
    </body>
    <body name="wb" pos="0.3 0.6 0.6">
      <freejoint name="wbj"/>
      <geom type="box" size=".03 .03 .03" mass="0.2" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
  <equality>
    <weld body1="wb" body2="pend" torquescale="2" solref="0.02 0.7"/>
    <connect body1="pend" body2="world" anchor="0 0 -0.3" solref="0.03 0.8"/>
    <joint joint1="j3" joint2="j1" polycoef="0.1 0.5 0.2 0 0"/>
  </equality>
</mujoco>
"""


# name -> (model, RigidOptions kwargs, mujoco preset, precision, dt, substeps, start)
SCENES = {
    "boxes_default_f64": ("boxes", {}, False, "64", 0.005, 1, "drop"),
    "boxes_default_f32": ("boxes", {}, False, "32", 0.005, 1, "drop"),
    "boxes_mujoco_f64": ("boxes", {"integrator": "implicitfast"}, True, "64", 0.005, 1, "drop"),
    "boxes_euler_f64": ("boxes", {"integrator": "Euler"}, False, "64", 0.005, 2, "drop"),
    "boxes_signorini_f64": ("boxes", {"friction_cone": "elliptic"}, False, "64", 0.005, 1, "drop"),
    "boxes_signorini_f32": ("boxes", {"friction_cone": "elliptic"}, False, "32", 0.005, 1, "drop"),
    "boxes_elliptic_cg_f64": ("boxes", {"friction_cone": "elliptic", "constraint_solver": "CG",
                                        "contact_resolution": "convex"}, False, "64", 0.005, 1, "drop"),
    "boxes_elliptic_newton_f64": ("boxes", {"friction_cone": "elliptic", "contact_resolution": "convex"}, False, "64",
                                  0.005, 1, "drop"),
    "boxes_elliptic_newton_whole_f32": ("boxes", {"friction_cone": "elliptic", "contact_resolution": "convex",
                                                  "constraint_islands": False}, False, "32", 0.005, 1, "drop"),
    "boxes_noslip_f64": ("boxes", {"noslip_iterations": 10}, False, "64", 0.005, 1, "drop"),
    "humanoid_floor_mujoco_f64": ("humanoid", {"integrator": "implicitfast"}, True, "64", 0.005, 1, "floor"),
    "humanoid_floor_default_f32": ("humanoid", {}, False, "32", 0.005, 1, "floor"),
    "humanoid_air_euler_f64": ("humanoid", {"integrator": "Euler", "enable_collision": False}, False, "64", 0.005, 1,
                               "air"),
    "chain_default_f64": ("chain", {}, False, "64", 0.004, 1, "chain"),
    "chain_euler_f64": ("chain", {"integrator": "Euler"}, False, "64", 0.004, 2, "chain"),
    "chain_mujoco_f32": ("chain", {"integrator": "implicitfast"}, True, "32", 0.004, 1, "chain"),
}


def add_sensors(scene, ent) -> None:
    links = ent.links
    base, tip = links[ent.base_link], links[-1]
    scene.add_sensor("imu", ent, link=base)
    scene.add_sensor("imu", ent, link=tip)
    scene.add_sensor("force_torque", ent, link=tip)
    scene.add_sensor("subtree", ent, link=base)
    scene.add_sensor("contact_force", ent, link=base)
    scene.add_sensor("contact", ent)
    if ent.n_dofs:
        scene.add_sensor("joint", ent)
    if ent.n_actuators:
        scene.add_sensor("actuator", ent)


def run_scene(name: str, sensors: bool = False) -> dict:
    import polyphys
    from polyphys import morphs
    from polyphys.plugins.rigid import RigidOptions
    from polyphys.plugins.rigid.materials import Rigid

    model, kw, compat, prec, dt, substeps, start = SCENES[name]
    with tempfile.TemporaryDirectory() as tmp:
        if model == "humanoid":
            path = humanoid_path()
        else:
            path = os.path.join(tmp, f"{model}.xml")
            with open(path, "w") as fh:
                fh.write(boxes_xml() if model == "boxes" else CHAIN)
        opts = RigidOptions.mujoco(**kw) if compat else RigidOptions(**kw)
        scene = polyphys.Scene(sim=polyphys.SimOptions(dt=dt, substeps=substeps, precision=prec), rigid=opts)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ent = scene.add_entity(morphs.MJCF(file=path), Rigid())
            if sensors:
                add_sensors(scene, ent)
            scene.build(n_envs=2)
    rng = np.random.default_rng(7)
    nq, nv = ent.n_qs, ent.n_dofs
    q = ent.get_qpos()
    if start == "floor":
        q[:, 2] = 0.12
        q[:, 3:7] = [np.cos(np.pi / 4), 0, np.sin(np.pi / 4), 0]
        q[:, 7:] += rng.uniform(-0.2, 0.2, size=(2, nq - 7))
    elif start == "air":
        q[:, 7:] += rng.uniform(-0.3, 0.3, size=(2, nq - 7))
    ent.set_qpos(q)
    v = rng.normal(scale=0.5, size=(2, nv))
    v[0] *= 0.3
    ent.set_dofs_velocity(v)
    if ent.n_actuators:
        ent.set_ctrl(rng.uniform(-0.4, 0.4, size=(2, ent.n_actuators)))
    out = {k: [] for k in ("qpos", "qvel", "force_a", "link_force", "link_impulse")}
    for _ in range(STEPS):
        scene.step()
        out["qpos"].append(ent.get_qpos())
        out["qvel"].append(ent.get_dofs_velocity())
        c = ent.get_contacts(is_padded=True)
        out["force_a"].append(c["force_a"])
        w = ent.get_links_net_contact_wrench()
        out["link_force"].append(np.concatenate([w["force"], w["torque"]], axis=-1))
        out["link_impulse"].append(np.concatenate([w["impulse_force"], w["impulse_torque"]], axis=-1))
        if sensors:
            readings = scene.read_sensors()
            assert all(np.all(np.isfinite(np.asarray(r.value))) for r in _leaves(readings)), "non-finite reading"
            ent.get_cfrc_int()
            ent.get_qfrc_constraint()
    return {k: np.asarray(v) for k, v in out.items()}


def _leaves(readings):
    """The Reading objects of scene.read_sensors() (nested dicts)."""
    if isinstance(readings, dict):
        for v in readings.values():
            yield from _leaves(v)
    else:
        yield readings


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=("record", "compare"))
    ap.add_argument("path")
    ap.add_argument("--only", action="append", default=None)
    ap.add_argument("--sensors", action="store_true", help="add sensors and read them every step (compare)")
    a = ap.parse_args(argv)
    import warp as wp

    wp.config.quiet = True
    names = a.only or list(SCENES)
    if a.mode == "record":
        data = {}
        if os.path.exists(a.path):
            data = dict(np.load(a.path))
        for n in names:
            for k, v in run_scene(n).items():
                data[f"{n}/{k}"] = v
            print(f"recorded {n}", flush=True)
        np.savez(a.path, **data)
        return 0
    ref = dict(np.load(a.path))
    bad = 0
    for n in names:
        got = run_scene(n, sensors=a.sensors)
        diffs, zero_signs = [], 0
        for k, v in got.items():
            r = ref.get(f"{n}/{k}")
            if r is None:
                diffs.append(f"{k}: not recorded")
                continue
            if r.shape != v.shape:
                diffs.append(f"{k}: shape {v.shape} vs recorded {r.shape}")
                continue
            same = np.array_equal(r, v, equal_nan=True)
            if not same:
                diffs.append(f"{k}: max |diff| {np.nanmax(np.abs(r - v)):.3e}")
            elif r.tobytes() != v.tobytes():
                # equal values, different bits: only the sign of an exact zero can differ (NaN payloads aside)
                zero_signs += int(np.sum(np.signbit(r) != np.signbit(v)))
        bad += bool(diffs)
        if diffs:
            print(f"{n}: DIFFERS " + "; ".join(diffs), flush=True)
        elif zero_signs:
            print(f"{n}: equal values ({zero_signs} exact zeros differ in sign)", flush=True)
        else:
            print(f"{n}: bit-identical", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
