"""Semantics of the constrained step that the smooth stages and MuJoCo comparisons do not cover (issue
16): the integrators' treatment of D_v around the constraint solve (docs/semantics.md §R2), the implicit midpoint
branch and constraint rows, Morph(collision=False), the friction rows of a pair's solreffriction,
per-env friction of explicit pairs, and the public constraint-force getters. Each test fails on the
code before these semantics were implemented."""

import warnings

import numpy as np
import polyphys
import pytest
from polyphys import morphs
from polyphys.errors import PolyphysWarning
from polyphys.plugins.rigid import RigidOptions
from polyphys.plugins.rigid.codes import ConstraintType
from polyphys.plugins.rigid.constraint import impedance, ref_coefficients
from polyphys.plugins.rigid.materials import Rigid

G = 9.81

SLIDER = """<mujoco>
  <option timestep="{h}" gravity="0 0 -9.81"/>
  <worldbody>
    <body name="slider" pos="0 0 0">
      <joint name="s" type="slide" axis="0 0 1" range="-0.5 0.5" damping="{b}" limited="true"
             solreflimit="0.05 1" solimplimit="0.9 0.9 0.001 0.5 2"/>
      <geom type="sphere" size="0.05" mass="{m}" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
</mujoco>"""


def _build(scene, n_envs=0):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=n_envs)
    return scene


@pytest.mark.parametrize("integrator", ["approximate_implicitfast", "implicitfast", "Euler"])
def test_integrators_and_the_constraint_solve(tmp_path, integrator):
    """A damped slider (mass m, damping b) 1 cm into its lower limit, moving into it: one step of
    h = 10 ms, one quadratic limit row (impedance I = 0.9 constant, R = W(1 − I)/I with W = 1/m,
    aref = −B·v − K·I·pos), closed forms (f = −m·g − b·v the smooth force):
    approximate_implicitfast solves the constraint problem with M + h·b (docs/semantics.md §R2):
    a = (f + D·aref)/(m + h·b + D); implicitfast and Euler solve it with M — a_s = (f + D·aref)/(m + D)
    — and integrate (M + h·b)⁻¹(f + D·(aref − a_s)) (b is passive damping: in D_v for both). The
    solve of one quadratic row is exact in one Newton step, so v' = v + h·a to rounding (1e-12)."""
    m, b, h = 2.0, 40.0, 0.01
    path = tmp_path / "slider.xml"
    path.write_text(SLIDER.format(h=h, b=b, m=m))
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=h, gravity=(0, 0, -G), precision="64"),
                           rigid=RigidOptions(integrator=integrator, tolerance=1e-14))
    e = scene.add_entity(morphs.MJCF(file=str(path)), Rigid())
    _build(scene)
    q0, v0 = -0.51, -0.3
    e.set_qpos([q0])
    e.set_dofs_velocity([v0])
    sol = (0.05, 1.0, 0.9, 0.9, 0.001, 0.5, 2.0)
    pos = q0 + 0.5                                   # the lower side's distance (negative: inside)
    imp = impedance(sol, pos)
    K, B = ref_coefficients(sol)
    W = 1.0 / m                                      # dof_invweight0 of a lone slider
    D = imp / (W * (1 - imp))
    aref = -B * v0 - K * imp * pos
    f = -m * G - b * v0
    if integrator == "approximate_implicitfast":
        a = (f + D * aref) / (m + h * b + D)
    else:
        a_s = (f + D * aref) / (m + D)
        a = (f + D * (aref - a_s)) / (m + h * b)
    assert a - aref < 0                              # the row is active in the closed form
    scene.step()
    np.testing.assert_allclose(e.get_dofs_velocity()[0], v0 + h * a, rtol=1e-12, atol=1e-14)
    # the two formulations differ here by far more than rounding
    a_other = (f + D * aref) / (m + h * b + D)
    if integrator != "approximate_implicitfast":
        assert abs(a - a_other) > 1e-3 * abs(a)


def _box_on_plane(n_envs=0, **opts):
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.005, precision="64"), rigid=RigidOptions(**opts))
    box = scene.add_entity(morphs.Box(size=(0.2, 0.3, 0.1), pos=(0.3, -0.2, 0.0495), euler=(0, 0, 25)), Rigid())
    scene.add_entity(morphs.Plane(), Rigid())
    _build(scene, n_envs)
    return scene, box


def test_midpoint_branch_only_for_a_body_without_constraint_rows():
    """docs/semantics.md §R2: implicit midpoint is for a free body with no constraint on it this substep. A box
    resting on a plane (4 contacts) integrates by semi-implicit Euler; the same box in flight, and a
    second box far above the plane, take the midpoint branch (approximate_implicitfast, the default)."""
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.005, precision="64"), rigid=RigidOptions())
    resting = scene.add_entity(morphs.Box(size=(0.2, 0.3, 0.1), pos=(0.3, -0.2, 0.0495), euler=(0, 0, 25)),
                               Rigid())
    flying = scene.add_entity(morphs.Box(size=(0.2, 0.2, 0.2), pos=(-1.0, 0.5, 3.0), euler=(10, 20, 30)), Rigid())
    scene.add_entity(morphs.Plane(), Rigid())
    _build(scene)
    s = scene.solver("rigid")
    for _ in range(5):
        scene.step()
        active = s.data.joint_mid_active.numpy()[0]
        assert active[resting.joint_start] == 0
        assert active[flying.joint_start] == 1
    assert len(resting.get_contacts()["position"]) == 4


def test_morph_collision_false_collides_with_nothing():
    """Morph(collision=False): a box dropped on a plane falls through it (no contact rows, no
    contact), a box without the flag rests on it; the flagged box is no coupling geometry either."""
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.005, precision="64"), rigid=RigidOptions())
    ghost = scene.add_entity(morphs.Box(size=(0.2, 0.2, 0.2), pos=(0.0, 0.0, 0.15), collision=False), Rigid())
    solid = scene.add_entity(morphs.Box(size=(0.2, 0.2, 0.2), pos=(1.0, 0.0, 0.15)), Rigid())
    scene.add_entity(morphs.Plane(), Rigid())
    _build(scene)
    for _ in range(100):            # 0.5 s: a free fall of 1.2 m
        scene.step()
    assert ghost.get_pos()[2] < -1.0
    assert solid.get_pos()[2] == pytest.approx(0.1, abs=2e-3)
    assert len(ghost.get_contacts()["position"]) == 0
    links = set(scene.solver("rigid").rigid_geoms().link.numpy().tolist())
    assert ghost.link_start not in links and solid.link_start in links


PAIR_XML = """<mujoco>
  <option timestep="0.005" cone="elliptic" impratio="1" gravity="{gx!r} 0 {gz!r}"/>
  <worldbody>
    <geom name="floor" type="plane" size="3 3 .1"/>
    <body pos="0 0 0.0995"><freejoint/><geom name="box" type="box" size=".1 .1 .1" mass="2"/></body>
  </worldbody>
  <contact><pair geom1="floor" geom2="box" condim="3" friction="{mu} {mu} 0.005 1e-4 1e-4"
                 solreffriction="{srf}"/></contact>
</mujoco>"""


@pytest.mark.parametrize("srf", ["0.05 0.3", "-100 -20"])
def test_pair_solreffriction_sets_the_friction_rows_damping(tmp_path, srf):
    """An explicit pair's solreffriction (standard or direct form) gives the damping B of its elliptic
    friction rows (MuJoCo: aref = −B·vel on those rows); MuJoCo-compatible mode at a frozen sliding,
    spinning state: per row kind (normal, friction) the rows' |aref| equal MuJoCo's |efc_aref| to
    1e-10 (float64 rounding of the same formula; the engines order the 4 contacts and orient the
    tangents differently), and differ from the solref-only rows by more than 1 %."""
    mujoco = pytest.importorskip("mujoco")
    xml = PAIR_XML.format(gx=0.0, gz=-G, mu=0.8, srf=srf)
    path = tmp_path / "pair.xml"
    path.write_text(xml)
    qvel = [0.3, -0.2, -0.1, 0.5, 0.2, -0.4]
    ref = {}
    for s in (srf, "0 0"):
        mm = mujoco.MjModel.from_xml_string(PAIR_XML.format(gx=0.0, gz=-G, mu=0.8, srf=s))
        dd = mujoco.MjData(mm)
        dd.qvel[:] = qvel
        mujoco.mj_forward(mm, dd)
        ref[s] = dd.efc_aref.copy()
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.005, gravity=(0, 0, -G), precision="64"),
                           rigid=RigidOptions.mujoco(friction_cone="elliptic"))
    e = scene.add_entity(morphs.MJCF(file=str(path)), Rigid())
    _build(scene)
    e.set_dofs_velocity(qvel)
    scene.solver("rigid").forward()
    d = scene.solver("rigid").data
    n = int(d.nefc.numpy()[0])
    assert n == len(ref[srf]) == 12
    got = d.efc_aref.numpy()[0, :n]
    key = lambda a, k: np.sort(np.abs(a.reshape(4, 3)[:, k].ravel()))  # noqa: E731  k: normal 0, friction 1:
    np.testing.assert_allclose(key(got, 0), key(ref[srf], 0), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(key(got, slice(1, 3)), key(ref[srf], slice(1, 3)), rtol=1e-10, atol=1e-10)
    assert np.abs(key(ref[srf], slice(1, 3)) - key(ref["0 0"], slice(1, 3))).max() > 1e-2 * np.abs(ref["0 0"]).max()


def test_pair_friction_per_env_and_friction_ratio(tmp_path):
    """A box on a 20° incline (gravity tilted) held by an explicit pair with μ = 0.5 > tan 20° = 0.36:
    env 0 sticks; env 1 slides after set_pair_friction(0.2) for it alone; env 2 slides with the
    friction_ratio 0.4 of both geoms (the pair's μ times the larger ratio: 0.2, default mode). The
    sliding envs move as g(sinθ − μcosθ)t²/2 within 5 % (the soft friction rows' creep is O(mm))."""
    th = np.deg2rad(20.0)
    gx, gz = float(G * np.sin(th)), float(-G * np.cos(th))
    path = tmp_path / "pair.xml"
    path.write_text(PAIR_XML.format(gx=gx, gz=gz, mu=0.5, srf="0 0").replace('cone="elliptic" ', ""))
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.005, gravity=(gx, 0, gz), precision="64"),
                           rigid=RigidOptions())
    e = scene.add_entity(morphs.MJCF(file=str(path)), Rigid())
    _build(scene, 3)
    s = scene.solver("rigid")
    assert s.get_pair_friction().shape == (3, 1, 5)
    s.set_pair_friction([0.2, 0.2, 0.005, 1e-4, 1e-4], envs_idx=[1])
    s.set_friction_ratio(0.4, envs_idx=[2])
    np.testing.assert_array_equal(s.get_pair_friction()[:, 0, 0], [0.5, 0.2, 0.5])
    steps = 200
    for _ in range(steps):
        scene.step()
    x = np.asarray(e.get_qpos())[:, 0]
    t = steps * 0.005
    expect = 0.5 * G * (np.sin(th) - 0.2 * np.cos(th)) * t * t
    assert abs(x[0]) < 5e-3
    np.testing.assert_allclose(x[1:], expect, rtol=0.05)


def test_constraint_force_getters():
    """get_constraint_forces: a box resting on a plane (pyramidal, 4 contacts × 4 edge rows): 16
    contact rows, each naming its contact slot; per contact the edge forces sum to its normal force
    m·g/4 (1e-6 relative: rest); qfrc_constraint = Jᵀf carries m·g on the vertical dof and equals
    entity.get_qfrc("constraint")."""
    scene, box = _box_on_plane(n_envs=2)
    for _ in range(200):
        scene.step()
    s = scene.solver("rigid")
    r = s.get_constraint_forces()
    mass = float(s.model.link_mass.numpy()[0, box.link_start])
    for env in range(2):
        n = int(r["count"][env])
        assert n == 16 and r["valid"][env].sum() == 16
        assert np.all(r["type"][env, :n] == ConstraintType.CONTACT_PYRAMIDAL)
        assert np.all(r["type"][env, n:] == -1)
        slots = r["contact"][env, :n]
        assert sorted(set(slots.tolist())) == [0, 1, 2, 3]
        np.testing.assert_array_equal(r["object"][env, :n], slots)
        normal = np.array([r["force"][env, :n][slots == k].sum() for k in range(4)])
        np.testing.assert_allclose(normal, mass * G / 4, rtol=1e-6)
        qc = r["qfrc_constraint"][env]
        assert qc[box.dof_start + 2] == pytest.approx(mass * G, rel=1e-6)
    np.testing.assert_array_equal(box.get_qfrc("constraint"), r["qfrc_constraint"][:, box.dof_start:box.dof_start + 6])


def test_limit_rows_name_their_joint(tmp_path):
    """A limit row's ``object`` is the limited joint's global index; a scene without a constraint
    solve has no rows and a zero qfrc_constraint."""
    m, b, h = 2.0, 1.0, 0.01
    path = tmp_path / "slider.xml"
    path.write_text(SLIDER.format(h=h, b=b, m=m))
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=h, gravity=(0, 0, -G), precision="64"), rigid=RigidOptions())
    scene.add_entity(morphs.Box(size=(0.2, 0.2, 0.2), pos=(3, 0, 1)), Rigid())
    e = scene.add_entity(morphs.MJCF(file=str(path)), Rigid())
    _build(scene)
    e.set_qpos([-0.51])
    scene.step()
    r = scene.solver("rigid").get_constraint_forces()
    assert r["count"] == 1 and r["type"][0] == ConstraintType.LIMIT
    assert r["object"][0] == e.joint_start + e.joints.index(e.get_joint("s")) and r["contact"][0] == -1
    assert r["force"][0] > 0
    free = polyphys.Scene(sim=polyphys.SimOptions(dt=h), rigid=RigidOptions())
    box = free.add_entity(morphs.Box(size=(0.2, 0.2, 0.2), pos=(0, 0, 1)), Rigid())
    _build(free)
    free.step()
    assert free.solver("rigid").get_constraint_forces()["count"] == 0
    assert not box.get_qfrc("constraint").any()
