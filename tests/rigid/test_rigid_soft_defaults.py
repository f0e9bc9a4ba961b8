"""Soft defaults a user would not expect to be silent: position control with zero gains (the
default kp) warns once per entity; a Plane added where the model already has its floor warns."""

import warnings

import polyphys
import pytest
from polyphys import morphs
from polyphys.errors import PolyphysWarning

PENDULUM = """<mujoco><worldbody>
  <body name="arm" pos="0.1 -0.2 1.0"><joint name="hinge" type="hinge" axis="0 1 0"/>
    <geom type="capsule" size="0.03 0.2" pos="0 0 -0.2" contype="0" conaffinity="0"/></body>
</worldbody></mujoco>"""

FLOOR = """<mujoco><worldbody>
  <geom name="floor" type="plane" size="5 5 0.1" pos="0 0 {z}" euler="{euler}"/>
  <body name="box" pos="0 0 1"><freejoint/><geom type="box" size="0.1 0.1 0.1"/></body>
</worldbody></mujoco>"""


def _pendulum(tmp_path):
    path = tmp_path / "pendulum.xml"
    path.write_text(PENDULUM)
    scene = polyphys.Scene()
    arm = scene.add_entity(morphs.MJCF(file=str(path)), material=polyphys.materials.Rigid())
    scene.build()
    return scene, arm


def test_position_control_with_zero_gains_warns_once(tmp_path):
    scene, arm = _pendulum(tmp_path)
    with pytest.warns(PolyphysWarning, match=r"control_dofs_position: dofs \[0\] have kp = 0.*set_dofs_kp") as rec:
        arm.control_dofs_position([0.3])
    assert rec[0].filename == __file__               # attributed to the user's line
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        arm.control_dofs_position([0.4])             # once per entity


def test_position_control_with_gains_is_silent(tmp_path):
    scene, arm = _pendulum(tmp_path)
    arm.set_dofs_kp([50.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        arm.control_dofs_position([0.3])
        scene.step()


def _floor_model(tmp_path, z=0.0, euler="0 0 0"):
    path = tmp_path / f"floor_{z}_{euler.replace(' ', '_')}.xml"
    path.write_text(FLOOR.format(z=z, euler=euler))
    return morphs.MJCF(file=str(path))


@pytest.mark.parametrize("order", ["model first", "plane first"])
def test_a_plane_on_the_models_own_floor_warns(tmp_path, order):
    scene = polyphys.Scene()
    add = [lambda: scene.add_entity(_floor_model(tmp_path, z=0.25), material=polyphys.materials.Rigid(), name="robot"),
           lambda: scene.add_entity(morphs.Plane(pos=(3.0, -1.0, 0.25)), material=polyphys.materials.Rigid(),
                                    name="ground")]
    if order == "plane first":
        add.reverse()
    add[0]()
    with pytest.warns(PolyphysWarning, match=r"coincides with plane .*counted twice"):
        add[1]()


@pytest.mark.parametrize("plane", [morphs.Plane(pos=(0, 0, 0.1)),                       # lower
                                   morphs.Plane(normal=(0, 0.6, 0.8), pos=(0, 0, 0.25)),  # tilted
                                   morphs.Plane(normal=(0, 0, -1), pos=(0, 0, 0.25))])   # facing down
def test_a_different_plane_is_silent(tmp_path, plane):
    scene = polyphys.Scene()
    scene.add_entity(_floor_model(tmp_path, z=0.25), material=polyphys.materials.Rigid())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scene.add_entity(plane, material=polyphys.materials.Rigid())


def test_a_rotated_floor_is_compared_in_the_world(tmp_path):
    """The model's floor tilted by 30° about x, the model placed 0.5 m up: the same plane given as a
    Plane morph (normal (0, -sin 30°, cos 30°) through (0, 0, 0.5)) is recognised."""
    import math

    scene = polyphys.Scene()
    m = _floor_model(tmp_path, euler="30 0 0")
    m.pos = (0.0, 0.0, 0.5)
    scene.add_entity(m, material=polyphys.materials.Rigid())
    with pytest.warns(PolyphysWarning, match="coincides"):
        scene.add_entity(morphs.Plane(normal=(0, -math.sin(math.pi / 6), math.cos(math.pi / 6)), pos=(0, 0, 0.5)),
                         material=polyphys.materials.Rigid())


def test_a_plane_morph_uses_its_normal():
    """Plane(normal=...) was once ignored (every plane lay flat): a ball dropped on a plane tilted by
    37° (normal (0, 0.6, 0.8), through the origin) lands on it — its centre one radius from the plane
    (contact softness: within 5 mm) — and rolls down it: its velocity lies in the plane, downhill."""
    import numpy as np

    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=4))
    scene.add_entity(morphs.Plane(normal=(0, 0.6, 0.8)), material=polyphys.materials.Rigid(friction=1.0))
    ball = scene.add_entity(morphs.Sphere(radius=0.1, pos=(0.2, 0.3, 0.6)), material=polyphys.materials.Rigid(friction=1.0))
    scene.build()
    for _ in range(150):
        scene.step()
    x = ball.get_pos()
    n = np.array([0.0, 0.6, 0.8])
    assert abs(x @ n - 0.1) < 5e-3, x @ n
    v = ball.get_vel()
    downhill = np.array([0.0, 0.8, -0.6])
    assert abs(v @ n) < 0.02 and v @ downhill > 0.99 * np.linalg.norm(v) and np.linalg.norm(v) > 1.0
