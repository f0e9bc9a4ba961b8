"""RigidSolver.kernel_modules (docs/rigid.md, "Internals"; docs/running.md, "First run"): the stage
modules a scene declares before build are the ones its build and first steps launch — every launched
rigid module declared (so the parallel precompile covers it), none declared in vain for these
scenes, and none compiled again after it was loaded (an overload not registered at import)."""

import warnings

import polyphys
import pytest
from polyphys import morphs
from polyphys.plugins.rigid import RigidOptions
from polyphys.plugins.rigid.materials import Rigid
from polyphys.startup import rebuilt_modules

PKG = "polyphys.plugins.rigid.kernels."

BOXES = """<mujoco><worldbody>
  <geom name="floor" type="plane" size="5 5 0.1"/>
  <body pos="0.3 -0.2 0.12" euler="5 7 11"><freejoint/><geom type="box" size="0.1 0.07 0.1" mass="1.3"/></body>
  <body pos="-0.4 0.3 0.3" euler="20 0 35"><freejoint/><geom type="sphere" size="0.06" mass="0.4"/></body>
</worldbody></mujoco>"""

PENDULUM = """<mujoco><worldbody>
  <body name="arm" pos="0.1 -0.2 1.0" euler="0 15 0"><joint name="hinge" type="hinge" axis="0 1 0" damping="0.2"/>
    <geom type="capsule" size="0.03 0.2" pos="0 0 -0.2" contype="0" conaffinity="0"/></body>
</worldbody></mujoco>"""

LIMITED = PENDULUM.replace('damping="0.2"', 'damping="0.2" limited="true" range="-10 20"')

SMOOTH = {"kinematics", "bias", "inertia", "actuation", "factorization", "integration"}
CONTACT = SMOOTH | {"collision_driver", "constraint_rows", "contact_forces"}


@pytest.fixture
def launched(monkeypatch):
    """The Warp modules of every kernel launched from now on (the stages call ``wp.launch``)."""
    import warp as wp

    seen = set()
    launch = wp.launch

    def recording(kernel, *args, **kwargs):
        seen.add(kernel.module.name)
        return launch(kernel, *args, **kwargs)

    monkeypatch.setattr(wp, "launch", recording)
    return seen


@pytest.mark.parametrize("xml, options, sensor, precision, expected", [
    (PENDULUM, {}, False, "64", SMOOTH),
    (LIMITED, {"integrator": "Euler"}, False, "32", SMOOTH | {"constraint_rows", "convex_solve"}),
    (BOXES, {}, False, "64", CONTACT | {"convex_solve"}),
    (BOXES, {"friction_cone": "elliptic"}, False, "32", CONTACT | {"signorini_solve"}),
    (BOXES, {"noslip_iterations": 5}, True, "64", CONTACT | {"convex_solve", "noslip", "readback"}),
], ids=["smooth-only", "limit", "contacts", "signorini", "noslip-sensor"])
def test_declared_modules_are_the_launched_ones(tmp_path, launched, xml, options, sensor, precision, expected):
    path = tmp_path / "model.xml"
    path.write_text(xml)
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.005, substeps=2, precision=precision),
                           rigid=RigidOptions(**options))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ent = scene.add_entity(morphs.MJCF(file=str(path)), Rigid())
        if sensor:
            scene.add_sensor("force_torque", ent, link=ent.links[-1])
        scene.build(n_envs=2)
    for _ in range(3):
        scene.step()
    if sensor:
        scene.read_sensors()
    mine = [r for r in scene.kernel_loads if r.owner == "rigid"]
    declared = {r.name for r in mine if r.name.startswith(PKG)}
    assert declared == {PKG + m for m in expected}
    ran = {m for m in launched if m.startswith(PKG)}
    assert ran == declared, f"launched, not declared: {sorted(ran - declared)}; declared, not launched: {sorted(declared - ran)}"
    assert rebuilt_modules(mine, scene.layout.device) == []
