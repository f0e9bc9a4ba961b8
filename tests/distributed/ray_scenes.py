"""Scene factories for the distributed tests: module level, so Ray workers import them by name
(the tests put this folder on the workers' PYTHONPATH through the job's runtime_env)."""

import os
import tempfile
import warnings

import numpy as np

# A 2-link arm with two motors swinging its links into a floor, and a box dropped on the floor
# beside it, spinning: contacts (link-floor, box-floor) and per-env controls.
ARM_XML = """<mujoco model="arm2">
  <worldbody>
    <body name="base" pos="0.13 -0.07 0.42" euler="0 0 17">
      <joint name="shoulder" type="hinge" axis="0 1 0" damping="0.05"/>
      <geom type="capsule" fromto="0 0 0 0.31 0 0" size="0.045" density="900"/>
      <body name="fore" pos="0.31 0 0">
        <joint name="elbow" type="hinge" axis="0 1 0" damping="0.03"/>
        <geom type="capsule" fromto="0 0 0 0.27 0 -0.05" size="0.035" density="900"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor joint="shoulder" gear="1" ctrllimited="true" ctrlrange="-30 30"/>
    <motor joint="elbow" gear="1" ctrllimited="true" ctrlrange="-20 20"/>
  </actuator>
</mujoco>
"""


def _arm_file() -> str:
    path = os.path.join(tempfile.gettempdir(), f"polyphys_ray_arm2_{os.getuid()}.xml")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as fh:
            fh.write(ARM_XML)
        os.replace(tmp, path)
    return path


def arm_and_box(n_envs: int, threads: int = 1):
    """Rigid scene with contacts and controls; every env starts the same (actions differ per env)."""
    import polyphys
    from polyphys import morphs
    from polyphys.plugins.rigid import RigidOptions
    from polyphys.plugins.rigid.materials import Rigid

    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.004, substeps=2, precision="32", cpu_threads=threads),
                           rigid=RigidOptions())
    arm = scene.add_entity(morphs.MJCF(file=_arm_file()), Rigid(), name="arm")
    box = scene.add_entity(morphs.Box(size=(0.17, 0.11, 0.08), pos=(-0.23, 0.19, 0.31), euler=(12, -7, 33)),
                           Rigid(rho=700.0, friction=0.8), name="box")
    scene.add_entity(morphs.Plane(), Rigid(friction=0.9), name="floor")
    # noise-free sensors: noise streams are keyed by the env index local to a worker (docs/distributed.md)
    scene.add_sensor("imu", box, name="imu", link="box", offset_pos=(0.03, -0.02, 0.01))
    scene.add_sensor("joint", arm, name="joints")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scene.build(n_envs=n_envs)
    box = scene.entities[1]
    box.set_dofs_velocity(np.array([0.4, -0.2, 0.0, 1.5, -2.0, 3.0]))
    return scene


def actions(n_envs: int, call: int) -> np.ndarray:
    """Per-env, per-call controls (n_envs, 2): every env its own, changing with the call."""
    e = np.arange(n_envs)[:, None]
    return np.concatenate([12.0 * np.sin(0.7 * e + 0.3 * call + 0.1), -9.0 * np.cos(0.45 * e - 0.2 * call)], axis=1)


def broken(n_envs: int):
    """A factory whose build fails inside the worker."""
    import polyphys
    from polyphys import morphs

    scene = polyphys.Scene()
    scene.add_entity(morphs.Box(size=(0.1, 0.1, 0.1)), material=polyphys.materials.Rigid(rho=-1.0))
    scene.build(n_envs=n_envs)
    return scene


def slow_ctrl(scene, actions):
    """An action function that hangs (60 s) when the first env's first control is above 1e3."""
    import time

    if actions[0, 0] > 1e3:
        time.sleep(60.0)
    scene.entities[0].set_ctrl(actions)


def set_box_friction(scene, params, seeds):
    """A sweep `apply`: the box's friction from the plain parameter "mu" (one value per env)."""
    box = next(e for e in scene.entities if e.name == "box")
    box.set_friction(params["mu"][:, None])
