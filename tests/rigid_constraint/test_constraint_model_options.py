"""MJCF ``<option>`` in MuJoCo-compatible mode (docs/semantics.md §R2a): solver settings the user left at None
(iterations, tolerance, ls_iterations, impratio) come from the model, fields with a non-None
default keep the RigidOptions value and warn when the model differs, conflicting models are an
OptionError, the default (Genesis) mode ignores the model. Validated against MuJoCo running the
same file: a box creeping on an incline with impratio 10 given by the file only."""

import warnings

import numpy as np
import polyphys
import pytest
from polyphys import morphs
from polyphys.errors import OptionError, PolyphysWarning
from polyphys.plugins.rigid import RigidOptions
from polyphys.plugins.rigid.codes import ConeType
from polyphys.plugins.rigid.materials import Rigid
from polyphys.plugins.rigid.options import F32_TOLERANCE_FLOOR, Integrator, resolve_model_options

G = 9.81
SETTINGS = """<mujoco>
  <option timestep="0.002" impratio="10" iterations="7" tolerance="1e-10" cone="elliptic"/>
  <worldbody>
    <geom type="plane" size="2 2 .1"/>
    <body pos="0 0 0.0995"><freejoint/><geom type="box" size="0.1 0.1 0.1" mass="8"/></body>
  </worldbody>
</mujoco>"""
RESOLVE = "MuJoCo-compatible mode keeps"     # the start of the resolution's mismatch warning


def _build(path, rigid, dt=0.002, gravity=(0.0, 0.0, -G), precision="64", names=("mj",), record=None):
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=dt, gravity=gravity, precision=precision), rigid=rigid)
    ents = [scene.add_entity(morphs.MJCF(file=str(p)), Rigid(), name=n) for p, n in zip(path, names)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scene.build(n_envs=0)
    if record is not None:
        record.extend(str(w.message) for w in caught if issubclass(w.category, PolyphysWarning))
    return scene, ents


def _file(tmp_path, xml, name="m.xml"):
    p = tmp_path / name
    p.write_text(xml)
    return p


def test_compat_mode_takes_solver_settings_from_the_file(tmp_path):
    """<option impratio="10" iterations="7" tolerance="1e-10" cone="elliptic"> with
    RigidOptions.mujoco(): the solver and its constraint stage run with the file's impratio,
    iterations, tolerance (and MuJoCo's ls_iterations default 50 the importer fills in); the cone
    stays the RigidOptions value (pyramidal: non-None default) and the warning names the MJCF
    option, both values and the field to set. An explicit RigidOptions value wins over the file."""
    path = _file(tmp_path, SETTINGS)
    msgs = []
    scene, _ = _build([path], RigidOptions.mujoco(), record=msgs)
    solver = scene.solver("rigid")
    o, st = solver.options, solver.model.opt          # the options and what the kernels read
    assert (o.impratio, o.iterations, o.tolerance, o.ls_iterations) == (10.0, 7, 1e-10, 50)
    assert (st.impratio, st.iterations, st.tolerance, st.ls_iterations) == (10.0, 7, 1e-10, 50)
    assert o.friction_cone == "pyramidal" and st.cone == ConeType.PYRAMIDAL
    mismatch = [m for m in msgs if m.startswith(RESOLVE)]
    assert len(mismatch) == 1, msgs
    assert "<option cone> = 'elliptic' in 'mj' but RigidOptions.friction_cone = 'pyramidal'" in mismatch[0]
    # the file omits integrator: MuJoCo's Euler differs from the approximate_implicitfast default
    assert "RigidOptions.integrator = 'approximate_implicitfast'" in mismatch[0]
    msgs.clear()
    scene, _ = _build([path], RigidOptions.mujoco(iterations=30, friction_cone="elliptic", integrator="Euler"),
                      record=msgs)
    st = scene.solver("rigid").model.opt
    assert (st.iterations, st.impratio, st.tolerance, st.cone) == (30, 10.0, 1e-10, ConeType.ELLIPTIC)
    assert not [m for m in msgs if m.startswith(RESOLVE)], msgs


def test_default_mode_ignores_the_file(tmp_path):
    """Genesis (default) mode: the same file changes nothing — the solver keeps the user's
    options object, the stage has the docs/semantics.md §R2 defaults (elliptic: impratio 100, 25 iterations,
    tolerance 1e-9 in float64), and the resolution gives no warning."""
    msgs = []
    rigid = RigidOptions(friction_cone="elliptic")
    scene, _ = _build([_file(tmp_path, SETTINGS)], rigid, record=msgs)
    solver = scene.solver("rigid")
    assert solver.options is rigid
    st = solver.model.opt
    assert (st.impratio, st.iterations, st.tolerance, st.ls_iterations) == (100.0, 25, 1e-9, 50)
    assert not [m for m in msgs if m.startswith(RESOLVE) or "<option" in m], msgs


INCLINE = """<mujoco>
  <option timestep="0.002" integrator="Euler" cone="elliptic" impratio="{imp}" tolerance="1e-12"
          iterations="1000" ls_iterations="100" ls_tolerance="1e-6" gravity="{gx!r} 0 {gz!r}"/>
  <worldbody>
    <geom type="plane" size="3 3 .1" friction="1 0.005 0.0001"/>
    <body pos="0 0 0.0995">
      <freejoint/>
      <geom type="box" size="0.1 0.1 0.1" mass="8" friction="1 0.005 0.0001"/>
    </body>
  </worldbody>
</mujoco>"""


def test_impratio_from_the_file_only_matches_mujoco(tmp_path):
    """A box (μ = 1) 0.5 mm deep on a 20° incline, elliptic cone, 200 steps of 2 ms. The soft
    friction lets it creep at a speed ∝ R_t = R_n/impratio: MuJoCo with impratio 10 ends 3e-4 m
    from MuJoCo with impratio 1. polyphys in MuJoCo-compatible mode is given the cone, Euler and
    ls_tolerance (non-None defaults) but not impratio, tolerance, iterations or ls_iterations: it
    takes them from the file and its trajectory equals MuJoCo's impratio-10 run to 1e-8 m (both
    solve the same convex problems to the file's 1e-12, as test_constraint_pairs; measured in the
    print), 3e4 times closer than the impratio-1 trajectory."""
    th = np.deg2rad(20.0)
    gx, gz = float(G * np.sin(th)), float(-G * np.cos(th))
    n = 200

    def mj(imp):
        import mujoco

        m = mujoco.MjModel.from_xml_string(INCLINE.format(imp=imp, gx=gx, gz=gz))
        d = mujoco.MjData(m)
        out = []
        for _ in range(n):
            mujoco.mj_step(m, d)
            out.append(d.qpos.copy())
        return np.array(out)

    pytest.importorskip("mujoco")
    ref, ref1 = mj(10.0), mj(1.0)
    assert np.abs(ref[-1, :3] - ref1[-1, :3]).max() > 2e-4
    msgs = []
    path = _file(tmp_path, INCLINE.format(imp=10.0, gx=gx, gz=gz))
    scene, (ent,) = _build([path], RigidOptions.mujoco(integrator="Euler", friction_cone="elliptic", ls_tolerance=1e-6),
                           gravity=(gx, 0.0, gz), record=msgs)
    assert not [m for m in msgs if m.startswith(RESOLVE) or "<option" in m], msgs
    st = scene.solver("rigid").model.opt
    assert (st.impratio, st.tolerance, st.iterations, st.ls_iterations) == (10.0, 1e-12, 1000, 100)
    q = []
    for _ in range(n):
        scene.step()
        q.append(np.asarray(ent.get_qpos()).copy())
    q = np.array(q)
    err = np.abs(q - ref).max()
    print(f"[measured] incline creep, impratio 10 from the file: max |q - q_mj| = {err:.1e} "
          f"(MuJoCo impratio 1 vs 10: {np.abs(ref1 - ref).max():.1e})")
    np.testing.assert_allclose(q, ref, rtol=0, atol=1e-8)


def test_conflicting_files_are_an_option_error(tmp_path):
    """Two MJCF entities with different <option impratio>, impratio left at None: OptionError at
    build naming both entities, their values and the field; an explicit impratio resolves it."""
    a = _file(tmp_path, SETTINGS, "a.xml")
    b = _file(tmp_path, SETTINGS.replace('impratio="10"', 'impratio="3"').replace('pos="0 0 0.0995"', 'pos="1 0 0.0995"'),
              "b.xml")
    with pytest.raises(OptionError, match=r"<option impratio> differ \('a': 10.0, 'b': 3.0\); set "
                                          r"RigidOptions.impratio"):
        _build([a, b], RigidOptions.mujoco(), names=("a", "b"))
    scene, _ = _build([a, b], RigidOptions.mujoco(impratio=5.0), names=("a", "b"))
    assert scene.solver("rigid").model.opt.impratio == 5.0


def test_resolution_rules():
    """The pure function: default mode returns the same object and no message; None fields are
    taken, explicit ones kept; non-None-default fields warn (one message listing each model's
    value); float32 floors a model tolerance at 1e-5 (MuJoCo's default 1e-8 silently, a file's
    tighter value with a message); timestep and gravity mismatches with the scene are reported and
    nothing else changes; models with no options (primitives, URDF) take no part."""
    mo = {"dt": 0.002, "gravity": (0.0, 0.0, -9.81), "integrator": "euler", "friction_cone": "pyramidal",
          "constraint_solver": "Newton", "iterations": 100, "tolerance": 1e-8, "ls_iterations": 50,
          "ls_tolerance": 0.01, "noslip_iterations": 0, "noslip_tolerance": 1e-6, "impratio": 1.0}
    user = RigidOptions(integrator="Euler")
    assert resolve_model_options(user, [("a", dict(mo, impratio=10.0))]) == (user, [])
    compat = RigidOptions.mujoco(integrator="Euler")
    # MuJoCo's defaults everywhere: the compat defaults, no message
    o, notes = resolve_model_options(compat, [("a", mo), ("prim", {})], h=0.002, gravity=(0, 0, -9.81))
    assert notes == [] and (o.iterations, o.tolerance, o.ls_iterations, o.impratio) == (100, 1e-8, 50, 1.0)
    assert o.effective_iterations() == 100 and o.effective_tolerance("64") == 1e-8
    # float32: MuJoCo's default maps silently to the floor, a tighter file value says so
    o, notes = resolve_model_options(compat, [("a", mo)], precision="32")
    assert o.tolerance == F32_TOLERANCE_FLOOR and notes == []
    o, notes = resolve_model_options(compat, [("a", dict(mo, tolerance=1e-10))], precision="32")
    assert o.tolerance == F32_TOLERANCE_FLOOR and "tolerance=1e-10" in notes[0]
    o, _ = resolve_model_options(compat, [("a", dict(mo, tolerance=1e-4))], precision="32")
    assert o.tolerance == 1e-4
    # explicit values win; the same value in two models is no conflict
    o, notes = resolve_model_options(RigidOptions.mujoco(integrator="Euler", tolerance=1e-6, impratio=2.0),
                                     [("a", dict(mo, impratio=10.0)), ("b", dict(mo, impratio=3.0, iterations=100))])
    assert (o.tolerance, o.impratio, o.iterations) == (1e-6, 2.0, 100) and notes == []
    # non-None defaults: kept, one message with every differing model value
    o, notes = resolve_model_options(compat, [("a", dict(mo, constraint_solver="CG", noslip_iterations=4)),
                                              ("b", dict(mo, integrator="implicitfast", enable_collision=False))])
    assert (o.constraint_solver, o.noslip_iterations, o.integrator, o.enable_collision) == (
        "Newton", 0, Integrator.Euler, True)
    assert len(notes) == 1
    for part in ("<option solver> = 'CG' in 'a' but RigidOptions.constraint_solver = 'Newton'",
                 "<option noslip_iterations> = 4 in 'a' but RigidOptions.noslip_iterations = 0",
                 "<option integrator> = 'implicitfast' in 'b' but RigidOptions.integrator = 'Euler'",
                 "<option flag contact> = False in 'b' but RigidOptions.enable_collision = True"):
        assert part in notes[0]
    # timestep / gravity belong to the scene: reported, not applied
    o, notes = resolve_model_options(compat, [("a", mo)], h=0.001, gravity=(0.0, 0.0, -9.8))
    assert o.dt is None and len(notes) == 2
    assert "<option timestep> = 0.002 in 'a' but the scene substep is 0.001" in notes[0]
    assert "<option gravity> = (0.0, 0.0, -9.81) in 'a' but SimOptions.gravity = (0.0, 0.0, -9.8)" in notes[1]
    with pytest.raises(OptionError, match=r"<option iterations> differ \('a': 100, 'b': 7\); set RigidOptions.iterations"):
        resolve_model_options(compat, [("a", mo), ("b", dict(mo, iterations=7))])
