"""MJCF ``<contact><pair>`` parameters (issue 6): a pair's condim, 5 friction coefficients, solref,
solimp, margin and gap replace the per-geom mixing for its contacts, as in MuJoCo. Validated in
MuJoCo-compatible mode against MuJoCo running the same file (float64, Euler, convex resolution):
a sliding, spinning box (trajectory) and the constraint forces at a frozen state. Also: the
importer fills MuJoCo's pair defaults, and rolling friction without torsional friction is an
OptionError (docs/semantics.md §R2)."""

import warnings

import numpy as np
import polyphys
import pytest
from polyphys import morphs
from polyphys.errors import OptionError, PolyphysWarning
from polyphys.plugins.rigid import RigidOptions
from polyphys.plugins.rigid.materials import Rigid

mujoco = pytest.importorskip("mujoco")

G = 9.81

# geoms: μ = 1 (the box would stop within 0.2 m); the pair: anisotropic μ (0.3, 0.5), torsional
# 0.02 with condim 4 (the geoms have 3), a softer solref/solimp and a margin of its own. No gap:
# MuJoCo 4.0 makes a contact's includemargin = margin (gap ignored; probed: margin .003, gap .001
# → includemargin .003), the collision pipeline margin − gap — a collision-side difference.
PAIR = ('<pair geom1="floor" geom2="box" condim="4" friction="0.3 0.5 0.02 0.0001 0.0001" '
        'solref="0.04 0.7" solimp="0.85 0.95 0.002 0.4 3" margin="0.003"/>')
XML = """<mujoco>
  <option timestep="0.002" integrator="Euler" cone="{cone}" impratio="{impratio}" tolerance="1e-12"
          iterations="1000" ls_iterations="100" ls_tolerance="1e-6"/>
  <worldbody>
    <geom name="floor" type="plane" size="3 3 .1" friction="1 0.005 0.0001"/>
    <body name="box" pos="0 0 0.1">
      <freejoint/>
      <geom name="box" type="box" size="0.1 0.1 0.1" friction="1 0.005 0.0001"/>
    </body>
  </worldbody>
  <contact>{pair}</contact>
</mujoco>"""
# both engines solve to 1e-12 (the file's option; the same settings given to polyphys): the
# comparison tests the model, not where two iterative solvers stop (at MuJoCo's default 1e-8 the
# elliptic run differs by ~1e-6 after 300 steps; pyramidal by 2e-15)
TIGHT = dict(tolerance=1e-12, iterations=1000, ls_iterations=100, ls_tolerance=1e-6)
QVEL0 = np.array([2.0, 0.6, 0.0, 0.0, 0.0, 3.0])       # sliding and spinning about z


def _scene(path, cone, impratio, n_envs=0, capture=True, **opts):
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.002, gravity=(0, 0, -G), precision="64",
                                                   graph_capture=capture),
                           rigid=RigidOptions.mujoco(integrator="Euler", friction_cone=cone, impratio=impratio,
                                                     **opts))
    ent = scene.add_entity(morphs.MJCF(file=str(path)), Rigid(), name="mj")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=n_envs)
    return scene, ent


def _mujoco(xml, n):
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    d.qvel[:] = QVEL0
    out = []
    for _ in range(n):
        mujoco.mj_step(m, d)
        out.append(d.qpos.copy())
    return np.array(out)


def test_importer_fills_mujoco_pair_defaults(tmp_path):
    """A pair without attributes (or a partial vector) takes MuJoCo's pair defaults, not the
    geoms' values: the description equals MuJoCo's compiled pair_* arrays."""
    xml = XML.format(cone="pyramidal", impratio=1,
                     pair='<pair geom1="floor" geom2="box"/><pair geom1="floor" geom2="box" friction="0.3" '
                          'solimp="0.8" solref="0.05"/>')
    path = tmp_path / "p.xml"
    path.write_text(xml)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        desc = polyphys.describe(str(path))
    m = mujoco.MjModel.from_xml_string(xml)
    for i, p in enumerate(desc.contact_pairs):
        assert p["condim"] == m.pair_dim[i]
        np.testing.assert_array_equal(p["friction"], m.pair_friction[i])
        np.testing.assert_array_equal(p["solref"], m.pair_solref[i])
        np.testing.assert_array_equal(p["solimp"], m.pair_solimp[i])
        assert (p["margin"], p["gap"]) == (m.pair_margin[i], m.pair_gap[i])


@pytest.mark.parametrize("cone,impratio", [("pyramidal", 1.0), ("elliptic", 10.0)])
def test_pair_parameters_sliding_box_follows_mujoco(cone, impratio, tmp_path):
    """A box sliding (2, 0.6) m/s and spinning 3 rad/s on the floor, 300 steps of 2 ms, the pair
    of the file giving its contacts condim 4, μ (0.3, 0.5, 0.02), solref/solimp, margin/gap: the
    trajectory equals MuJoCo's to 1e-8 (same rows and problem; each solve stops at the tolerance
    1e-8 scaled by trace(M) ≈ 24 + 0.3, so position errors ≲ Σh²·Δf/m ≈ 300·4e-6·3e-7/8 ≈ 5e-14
    per unit force — 1e-8 leaves room for the contact-set switching; measured in the docs). The
    pair matters: MuJoCo without the pair (geom mixing, μ = 1) ends > 0.1 m away."""
    n = 300
    xml = XML.format(cone=cone, impratio=impratio, pair=PAIR)
    ref = _mujoco(xml, n)
    ref_nopair = _mujoco(XML.format(cone=cone, impratio=impratio, pair=""), n)
    assert np.abs(ref[-1, :2] - ref_nopair[-1, :2]).max() > 0.1
    path = tmp_path / "pair.xml"
    path.write_text(xml)
    scene, ent = _scene(path, cone, impratio, **TIGHT)
    ent.set_dofs_velocity(QVEL0)
    q = []
    for _ in range(n):
        scene.step()
        q.append(np.asarray(ent.get_qpos()).copy())
    q = np.array(q)
    err = np.abs(q - ref).max()
    print(f"[measured] pair sliding box {cone}/{impratio}: max |q - q_mj| = {err:.1e}, "
          f"x = {q[-1, 0]:.4f} m (no pair: {ref_nopair[-1, 0]:.4f})")
    np.testing.assert_allclose(q, ref, rtol=0, atol=1e-8)
    # the contacts carry the pair's parameters (condim 4, friction, solref/solimp)
    st = scene.solver("rigid").data
    nc = int(st.ncon.numpy()[0])
    assert nc > 0
    np.testing.assert_array_equal(st.con_dim.numpy()[0, :nc], 4)
    np.testing.assert_allclose(st.con_friction.numpy()[0, :nc], np.tile([0.3, 0.5, 0.02, 1e-4, 1e-4], (nc, 1)))
    np.testing.assert_allclose(st.con_sol.numpy()[0, :nc], np.tile([0.04, 0.7, 0.85, 0.95, 0.002, 0.4, 3], (nc, 1)))


@pytest.mark.parametrize("cone,impratio", [("pyramidal", 1.0), ("elliptic", 10.0)])
def test_pair_parameters_frozen_state_forces_match_mujoco(cone, impratio, tmp_path):
    """Frozen state through the solver: a tilted box pressed into the floor with a sliding and
    spinning velocity; one polyphys step solves at exactly that state, MuJoCo's mj_forward the same
    problem (both convex, tolerance 1e-12, 1000 iterations). Rows matched by Jacobian
    (test_constraint_validate._match_rows); forces agree to the issue's 1e-6·(1 + max|f|)."""
    from test_constraint_validate import _match_rows

    xml = XML.format(cone=cone, impratio=impratio, pair=PAIR)
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    ang = np.deg2rad(4.0)
    d.qpos[:] = [0.0, 0.0, 0.1 * (np.cos(ang) + np.sin(ang)) - 0.002, np.cos(ang / 2), np.sin(ang / 2), 0, 0]
    d.qvel[:] = [0.8, -0.3, -0.05, 0.1, 0.2, 1.5]
    mujoco.mj_forward(m, d)
    assert d.ncon >= 2 and np.all(d.contact.dim[:d.ncon] == 4)
    path = tmp_path / "pair.xml"
    path.write_text(xml)
    scene, ent = _scene(path, cone, impratio, capture=False, **TIGHT)
    st = scene.solver("rigid").data
    st.efc_force.fill_(np.nan)
    ent.set_qpos(d.qpos.copy())
    ent.set_dofs_velocity(d.qvel.copy())
    scene.step()
    n = int(st.nefc.numpy()[0])
    assert n == d.nefc and int(st.ncon.numpy()[0]) == d.ncon
    match, jerr = _match_rows(st, d, m.nv)
    assert jerr < 1e-9
    idx = np.array([j for j, _ in match])
    sg = np.array([s_ for _, s_ in match])
    f, f_mj = st.efc_force.numpy()[0, :n], sg * d.efc_force[idx]
    scale = 1 + np.abs(d.efc_force).max()
    print(f"[measured] pair frozen state {cone}/{impratio}: J {jerr:.1e}, force {np.abs(f - f_mj).max() / scale:.1e}")
    np.testing.assert_allclose(f, f_mj, rtol=0, atol=1e-6 * scale)
    np.testing.assert_allclose(st.efc_R.numpy()[0, :n], d.efc_R[idx], rtol=1e-9)
    np.testing.assert_allclose(st.efc_aref.numpy()[0, :n], sg * d.efc_aref[idx], rtol=1e-9, atol=1e-9)


def test_rolling_without_torsional_is_an_option_error(tmp_path):
    """docs/semantics.md §R2: rolling friction requires torsional friction — a condim-6 geom (or pair) with a
    rolling coefficient > 0 and a zero torsional one is refused at build, naming the geom and the
    values (default mode; MuJoCo-compatible mode keeps MuJoCo's behaviour)."""
    xml = XML.format(cone="pyramidal", impratio=1, pair="").replace(
        'friction="1 0.005 0.0001"/>\n    </body>', 'friction="1 0 0.001" condim="6"/>\n    </body>')
    assert 'condim="6"' in xml
    path = tmp_path / "roll.xml"
    path.write_text(xml)
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.002, gravity=(0, 0, -G), precision="64"),
                           rigid=RigidOptions())
    scene.add_entity(morphs.MJCF(file=str(path)), Rigid(), name="mj")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        with pytest.raises(OptionError, match=r"geom 1 \(box\): rolling friction 0\.001 with torsional friction 0\.0"):
            scene.build(n_envs=0)
    pair = ('<pair geom1="floor" geom2="box" condim="6" friction="0.5 0.5 0 0.001 0.001"/>')
    path.write_text(XML.format(cone="pyramidal", impratio=1, pair=pair))
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.002, gravity=(0, 0, -G), precision="64"),
                           rigid=RigidOptions())
    scene.add_entity(morphs.MJCF(file=str(path)), Rigid(), name="mj")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        with pytest.raises(OptionError, match=r"contact pair 0: rolling friction .* torsional friction 0\.0"):
            scene.build(n_envs=0)
    scene, ent = _scene(path, "pyramidal", 1.0)     # MuJoCo-compatible: accepted, as MuJoCo does
    scene.step()
