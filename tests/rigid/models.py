"""MJCF fixtures for the MuJoCo comparisons (written for this test suite)."""

import os

GYM = None
try:
    import gymnasium as _g  # noqa: F401
except Exception:   # pragma: no cover - assets may exist without the package importable
    pass


def gym_asset(name: str) -> str | None:
    """Path of a gymnasium MuJoCo asset if the files are installed (no import needed)."""
    import importlib.util
    import site

    roots = list(site.getsitepackages())
    spec = importlib.util.find_spec("mujoco")
    if spec and spec.origin:
        roots.append(os.path.dirname(os.path.dirname(spec.origin)))
    for r in roots:
        p = os.path.join(r, "gymnasium", "envs", "mujoco", "assets", name)
        if os.path.exists(p):
            return p
    return None


def dm_asset(rel: str) -> str | None:
    import importlib.util

    spec = importlib.util.find_spec("mujoco")
    if not (spec and spec.origin):
        return None
    p = os.path.join(os.path.dirname(os.path.dirname(spec.origin)), "dm_control", rel)
    return p if os.path.exists(p) else None


# every joint type, several joints on one body, damping, armature, stiffness, gravcomp, all
# actuator shortcuts with gear/ctrlrange/forcerange
ZOO = """
<mujoco>
  <option timestep="0.002" gravity="0.3 -0.2 -9.81"/>
  <worldbody>
    <body name="base" pos="0.1 0.2 1.0" euler="10 20 30">
      <freejoint name="root"/>
      <inertial pos="0.01 -0.02 0.03" mass="2.0" fullinertia="0.05 0.04 0.03 0.001 -0.002 0.003"/>
      <body name="a" pos="0.2 0 0" quat="0.9 0.1 0.3 0.2">
        <joint name="hinge_a" type="hinge" axis="0.2 1 0.3" pos="-0.05 0 0" damping="0.3" armature="0.02"
               stiffness="2.0" springref="0.3" ref="0.1"/>
        <inertial pos="0.1 0.01 0" mass="0.7" diaginertia="0.01 0.02 0.015"/>
        <body name="b" pos="0.2 0.05 0">
          <joint name="ball_b" type="ball" pos="0 0.01 0" damping="0.1" armature="0.01"/>
          <inertial pos="0.05 0 0.02" quat="0.8 0.2 0.1 0.3" mass="0.4" diaginertia="0.004 0.005 0.006"/>
          <body name="c" pos="0.1 0 0" gravcomp="0.5">
            <joint name="slide_c" type="slide" axis="1 0.5 0" damping="1.0" stiffness="5"/>
            <joint name="hinge_c" type="hinge" axis="0 0 1" pos="0.02 0 0" damping="0.05"/>
            <inertial pos="0.03 0 0" mass="0.3" diaginertia="0.002 0.003 0.001"/>
          </body>
        </body>
      </body>
      <body name="d" pos="-0.2 0 0">
        <joint name="hinge_d" type="hinge" axis="1 0 0" armature="0.05"/>
        <inertial pos="0 0 -0.1" mass="0.5" diaginertia="0.003 0.003 0.001"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor joint="hinge_a" gear="2.0" ctrllimited="true" ctrlrange="-1 1"/>
    <position joint="hinge_d" kp="20" kv="1.5" forcelimited="true" forcerange="-3 3"/>
    <velocity joint="slide_c" kv="4"/>
    <general joint="hinge_c" gaintype="affine" gainprm="1.5 0.2 -0.3" biastype="affine"
             biasprm="0.1 -0.5 -0.2" gear="1.5"/>
  </actuator>
</mujoco>
"""

PENDULUM = """
<mujoco>
  <option timestep="0.001" gravity="0 0 -9.81"/>
  <worldbody>
    <body name="bob" pos="0 0 0">
      <joint name="pin" type="hinge" axis="0 1 0"/>
      <inertial pos="0 0 -1" mass="1" diaginertia="1e-12 1e-12 1e-12"/>
    </body>
  </worldbody>
</mujoco>
"""
