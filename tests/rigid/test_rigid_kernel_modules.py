"""RigidSolver.kernel_modules (docs/rigid.md, "Internals"; docs/running.md, "First run"): the stage
modules a scene declares before build are the ones its build and first steps launch — every launched
rigid module declared (so the parallel precompile covers it), none declared in vain for these
scenes, and none compiled again after it was loaded (an overload not declared before it loaded).
Each module holds the scene's precision only; a scene of the other precision in the same process
adds it and steps as it would alone."""

import json
import os
import subprocess
import sys
import warnings

import numpy as np
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

# a cylinder and an ellipsoid: their pair has no analytic routine (GJK + EPA, kernels/collision_gjk.py)
ROUND = """<mujoco><worldbody>
  <geom name="floor" type="plane" size="5 5 0.1"/>
  <body pos="0.2 -0.1 0.12" euler="90 7 11"><freejoint/><geom type="cylinder" size="0.08 0.1" mass="1.1"/></body>
  <body pos="0.25 -0.05 0.4" euler="20 0 35"><freejoint/><geom type="ellipsoid" size="0.09 0.06 0.05" mass="0.4"/></body>
</worldbody></mujoco>"""

LIMITED = PENDULUM.replace('damping="0.2"', 'damping="0.2" limited="true" range="-10 20"')

# a sphere torso with two capsule legs of two links each over a floor (the gymnasium ant's geom types): the
# plane, sphere and capsule narrowphase families; no box code
WALKER = """<mujoco><worldbody>
  <geom name="floor" type="plane" size="5 5 0.1"/>
  <body pos="0.1 -0.2 0.5" euler="3 -4 20"><freejoint/><geom type="sphere" size="0.12"/>
    <body pos="0.1 0.1 0"><joint type="hinge" axis="0 1 0" limited="true" range="-40 40"/>
      <geom type="capsule" fromto="0 0 0 0.2 0.2 0" size="0.04"/>
      <body pos="0.2 0.2 0"><joint type="hinge" axis="1 -1 0" limited="true" range="-30 70"/>
        <geom type="capsule" fromto="0 0 0 0.15 0.15 -0.3" size="0.04"/></body></body>
    <body pos="-0.1 0.1 0"><joint type="hinge" axis="0 1 0" limited="true" range="-40 40"/>
      <geom type="capsule" fromto="0 0 0 -0.2 0.2 0" size="0.04"/>
      <body pos="-0.2 0.2 0"><joint type="hinge" axis="1 1 0" limited="true" range="-30 70"/>
        <geom type="capsule" fromto="0 0 0 -0.15 0.15 -0.3" size="0.04"/></body></body>
  </body>
</worldbody></mujoco>"""

# the smooth stages (kinematics, RNE, actuation, CRBA) run inside factorization's fused launch (factorization.smooth):
# kernels/bias.py, actuation.py and inertia.py are not launched in these scenes' steps; kernels/kinematics.py by the
# getters' refresh of the end-of-step link frames (the test reads link positions after the steps)
SMOOTH = {"factorization", "integration", "kinematics"}
CONTACT = SMOOTH | {"collision_driver", "constraint_rows", "contact_forces"}
BOX_SPHERE = {"collision_plane", "collision_sphere"}     # narrowphase families: plane–box/sphere, sphere–box


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
    (BOXES, {}, False, "64", CONTACT | BOX_SPHERE | {"convex_solve"}),
    (BOXES, {"friction_cone": "elliptic"}, False, "32", CONTACT | BOX_SPHERE | {"signorini_solve"}),
    (BOXES, {"noslip_iterations": 5}, True, "64", CONTACT | BOX_SPHERE | {"convex_solve", "noslip", "readback"}),
    (ROUND, {}, False, "64", CONTACT | {"collision_plane", "collision_gjk", "convex_solve"}),
    (WALKER, {}, False, "32", CONTACT | {"collision_plane", "collision_sphere", "collision_capsule", "convex_solve"}),
    (BOXES, {"broadphase": "sweep_and_prune"}, False, "64", CONTACT | BOX_SPHERE | {"collision_sap", "convex_solve"}),
], ids=["smooth-only", "limit", "contacts", "signorini", "noslip-sensor", "gjk", "capsule-walker", "sap"])
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
    ent.get_links_pos()
    if sensor:
        scene.read_sensors()
    mine = [r for r in scene.kernel_loads if r.owner == "rigid"]
    declared = {r.name for r in mine if r.name.startswith(PKG)}
    assert declared == {PKG + m for m in expected}
    ran = {m for m in launched if m.startswith(PKG)}
    assert ran == declared, f"launched, not declared: {sorted(ran - declared)}; declared, not launched: {sorted(declared - ran)}"
    assert rebuilt_modules(mine, scene.layout.device) == []


def _boxes_run(tmp_path, precision: str, steps: int = 30):
    """qpos after ``steps`` steps of BOXES (2 envs) in ``precision``, as float64."""
    path = tmp_path / "boxes.xml"
    path.write_text(BOXES)
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.005, substeps=1, precision=precision))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ent = scene.add_entity(morphs.MJCF(file=str(path)), Rigid())
        scene.build(n_envs=2)
    ent.set_dofs_velocity(np.array([[0.3, -0.2, 0.0, 0.5, 0.1, -0.4] * 2, [-0.1, 0.4, 0.2, 0.0, -0.6, 0.3] * 2]))
    for _ in range(steps):
        scene.step()
    return np.asarray(ent.get_qpos(), dtype=np.float64), scene


def test_both_precisions_in_one_process(tmp_path):
    """A float64 scene, a float32 one, then the float64 one again in the same process: the float32
    scene adds its overloads to the loaded modules (built again, holding both), the second float64
    run is bit-identical to the first, and the float32 run agrees with it to float32 precision."""
    q0, _ = _boxes_run(tmp_path, "64", steps=0)
    q64, _ = _boxes_run(tmp_path, "64")
    q32, _ = _boxes_run(tmp_path, "32")
    q64b, _ = _boxes_run(tmp_path, "64")
    assert np.abs(q64 - q0).max() > 1e-2
    assert np.array_equal(q64, q64b)
    # 30 steps of a box and a sphere dropping onto the floor and sliding: float32 rounding (eps 1.2e-7
    # relative) accumulates through the contact solve; 1e-4 m / rad is far above that and far below the
    # motion (the bodies move by ~1e-1)
    assert np.all(np.isfinite(q32))
    np.testing.assert_allclose(q32, q64, atol=1e-4)


PROBE = """
import json, sys, warnings
from typing import Any
import warp as wp
import polyphys
from polyphys import morphs
from polyphys.plugins.rigid import RigidOptions
from polyphys.plugins.rigid.materials import Rigid
from polyphys.plugins.rigid.solver import _stage_modules
from polyphys.plugins.rigid.types import DATA, MODEL
from polyphys.startup import rebuilt_modules

STRUCTS = {id(t): p for p in ("32", "64") for t in (MODEL[p], DATA[p])}
FLOATS = {wp.float32: "32", wp.float64: "64"}

def precisions(kernel, ovl):
    # the float precisions of the generic parameters of one overload (a fixed float32 parameter, such as
    # sweep-and-prune's sort keys, does not count)
    out = set()
    for name, t in ovl.adj.arg_types.items():
        tmpl = kernel.adj.arg_types[name]
        if not (tmpl is Any or (wp.types.is_array(tmpl) and tmpl.dtype is Any)):
            continue
        if id(t) in STRUCTS:
            out.add(STRUCTS[id(t)])
        else:
            d = t.dtype if wp.types.is_array(t) else t
            s = getattr(d, "_wp_scalar_type_", d)
            if s in FLOATS:
                out.add(FLOATS[s])
    return out

scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.005, precision=sys.argv[2]),
                       rigid=RigidOptions(noslip_iterations=2))
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    ent = scene.add_entity(morphs.MJCF(file=sys.argv[1]), Rigid())
    scene.add_sensor("force_torque", ent, link=ent.links[-1])
    scene.build(n_envs=2)
for _ in range(2):
    scene.step()
scene.read_sensors()
held = {}
for mod in _stage_modules():
    for k in vars(mod).values():
        if isinstance(k, wp.Kernel) and k.is_generic and k.module.name == mod.__name__:
            for ovl in k.overloads.values():
                held.setdefault(mod.__name__.rsplit(".", 1)[1], set()).update(precisions(k, ovl))
mine = [r for r in scene.kernel_loads if r.owner == "rigid"]
loaded = sorted(r.name.rsplit(".", 1)[1] for r in mine if r.name.startswith("polyphys.plugins.rigid.kernels."))
rebuilt = [str(m) for m in rebuilt_modules(mine, scene.layout.device)]
print("PROBE " + json.dumps({"held": {k: sorted(v) for k, v in held.items()}, "loaded": loaded, "rebuilt": rebuilt}))
"""


@pytest.mark.parametrize("precision", ["64", "32"])
def test_modules_hold_the_scene_precision_only(tmp_path, precision):
    """In a fresh process, every rigid stage module (launched or not) holds only the overloads of the
    scene's precision: a float64 scene compiles no float32 code and the reverse — also the collision
    modules of the float32 scene, whose build runs the neutral-overlap probe (the two bodies of one MJCF
    entity) in the scene's precision (docs/rigid.md, "Internals"); none rebuilt."""
    path = tmp_path / "round.xml"
    path.write_text(ROUND)
    env = dict(os.environ, POLYPHYS_VERBOSITY="quiet")
    proc = subprocess.run([sys.executable, "-c", PROBE, str(path), precision], capture_output=True, text=True,
                          timeout=900, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("PROBE "))
    res = json.loads(line[len("PROBE "):])
    assert set(res["loaded"]) >= {"collision_driver", "collision_plane", "collision_gjk", "noslip", "readback",
                                  "factorization"}
    assert res["held"], "no overloads found"
    assert {m: p for m, p in res["held"].items() if p != [precision]} == {}
    assert res["rebuilt"] == []

