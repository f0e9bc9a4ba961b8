"""Contact forces of the rigid solver: the constraint stages (plugins/rigid/constraint_rows.py, convex_solve.py) wired into
the substep (plugins/rigid/solver.py, docs/rigid.md "Contacts"). Box resting on / dropped onto a
plane, sphere energy, graph capture / reset / checkpoint with active contacts, MuJoCo's settled
height for the same MJCF file in MuJoCo-compatible mode."""

import warnings

import numpy as np
import polyphys
import pytest
from polyphys import morphs
from polyphys.errors import OptionError, PolyphysWarning
from polyphys.plugins.rigid import RigidOptions
from polyphys.plugins.rigid.materials import Rigid

G = 9.81
HALF = 0.1                  # box half edge (m); Rigid() density 1000 → m = 8 kg


def _scene(shape="box", n_envs=0, pos=(0, 0, 0.3), euler=(0, 0, 0), dt=0.01, substeps=1, capture=True,
           threads=None, precision="64", **opts):
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=dt, substeps=substeps, gravity=(0, 0, -G), precision=precision,
                                                   graph_capture=capture, cpu_threads=threads),
                           rigid=RigidOptions(**opts))
    morph = (morphs.Box(size=(2 * HALF,) * 3, pos=pos, euler=euler) if shape == "box"
             else morphs.Sphere(radius=HALF, pos=pos))
    body = scene.add_entity(morph, Rigid(), name=shape)
    scene.add_entity(morphs.Plane(), Rigid(), name="ground")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=n_envs)
    return scene, body, scene.solver("rigid")


def test_box_resting_on_plane_carries_its_weight_without_sinking():
    scene, box, s = _scene()
    m = float(s.model.link_mass.numpy()[0, 0])
    assert m == pytest.approx(8.0)
    z = []
    for _ in range(150):
        scene.step()
        z.append(float(box.get_pos()[2]))
    st = s.data
    n = int(st.ncon.numpy()[0])
    assert n == 4
    fn = st.con_wrench.numpy()[0, :n, 0]          # normal force on A (the plane) ...
    # ... and the generalized constraint force on the box's z dof (free joint: dofs 0-2 linear)
    fz = float(st.qfrc_constraint.numpy()[0, 2])
    # docs/constraint.md's bound: Σ normal force = m·g within 0.5 % after settling (measured: ~1e-10 relative)
    assert fn.sum() == pytest.approx(m * G, rel=5e-3)
    assert fz == pytest.approx(m * G, rel=5e-3)
    assert np.all(fn > 0)
    # the four corners share the load (symmetric box): each m·g/4
    np.testing.assert_allclose(fn, m * G / 4, rtol=5e-3)
    # no sinking: the penetration is bounded (soft contact, default solref/solimp: ~1.1 mm) and steady
    pen = HALF - np.array(z[-50:])
    assert np.all(pen > 0) and np.all(pen < 2e-3)
    assert np.ptp(pen) < 1e-9
    v = np.asarray(box.get_dofs_velocity())
    assert np.abs(v).max() < 1e-8


def test_box_dropped_tilted_comes_to_rest_on_a_face():
    scene, box, s = _scene(pos=(0, 0, 0.5), euler=(10, 20, 30))
    for _ in range(200):
        scene.step()
    v = np.asarray(box.get_dofs_velocity())
    assert np.abs(v).max() < 1e-3                       # at rest after 2 s
    z = float(box.get_pos()[2])
    assert HALF - 2e-3 < z < HALF                       # lying on a face, slightly penetrating
    q = np.asarray(box.get_quat())
    # a face down: the world z axis is one of the box axes (up to sign)
    R = np.array([[1 - 2 * (q[2] ** 2 + q[3] ** 2), 2 * (q[1] * q[2] - q[0] * q[3]), 2 * (q[1] * q[3] + q[0] * q[2])],
                  [2 * (q[1] * q[2] + q[0] * q[3]), 1 - 2 * (q[1] ** 2 + q[3] ** 2), 2 * (q[2] * q[3] - q[0] * q[1])],
                  [2 * (q[1] * q[3] - q[0] * q[2]), 2 * (q[2] * q[3] + q[0] * q[1]), 1 - 2 * (q[1] ** 2 + q[2] ** 2)]])
    assert np.abs(R[2]).max() == pytest.approx(1.0, abs=1e-4)


def test_sphere_dropped_never_gains_energy():
    """E = ½mv² + ½ωᵀIω + m·g·z must never exceed its initial value: the soft contact (impedance +
    reference-acceleration damping) and the implicit integrator only dissipate. Tolerance: float64
    rounding of E over the run, 1e-9·E0."""
    scene, ball, s = _scene("sphere", pos=(0, 0, 0.5), integrator="Euler")
    m = float(s.model.link_mass.numpy()[0, 0])
    I = s.model.link_inertia.numpy()[0, 0]

    def energy():
        v = np.asarray(ball.get_dofs_velocity(), float)
        return 0.5 * m * v[:3] @ v[:3] + 0.5 * v[3:] @ I @ v[3:] + m * G * float(ball.get_pos()[2])

    e0 = energy()
    es = []
    for _ in range(150):
        scene.step()
        es.append(energy())
    es = np.array(es)
    assert es.max() <= e0 + 1e-9 * e0
    assert es[-1] < 0.5 * e0                      # it did hit and lose energy (settles at z ≈ r)
    assert float(ball.get_pos()[2]) == pytest.approx(HALF, abs=2e-3)


def _run(scene, k):
    for _ in range(k):
        scene.step()
    return {n: a.numpy().copy() for n, a in scene.solver("rigid").state_arrays().items()}


@pytest.mark.parametrize("precision", ["32", "64"])
def test_contacts_captured_equals_uncaptured_two_partitions(precision):
    kw = dict(shape="box", n_envs=2, pos=(0, 0, 0.25), euler=(5, 10, 0), precision=precision)
    a, _, _ = _scene(capture=True, threads=2, **kw)
    b, _, _ = _scene(capture=False, threads=1, **kw)
    sa, sb = _run(a, 40), _run(b, 40)
    for n in sa:
        np.testing.assert_array_equal(sa[n], sb[n], err_msg=n)


def test_reset_and_checkpoint_bit_exact_mid_contact(tmp_path):
    kw = dict(shape="box", n_envs=2, pos=(0, 0, 0.25), euler=(5, 10, 0))
    a, box, s = _scene(**kw)
    _run(a, 20)                                         # landed: contacts active, warm start non-zero
    assert int(s.data.ncon.numpy()[0]) > 0
    assert np.abs(s.data.qacc_warmstart.numpy()).max() > 0
    p = a.save_checkpoint(tmp_path / "mid")
    ref = _run(a, 15)
    a.load_checkpoint(p)
    again = _run(a, 15)
    for n in ref:
        np.testing.assert_array_equal(ref[n], again[n], err_msg=n)
    # reset of env 0: its next steps equal a fresh scene's bit for bit (warm start cleared too)
    a.reset(envs_idx=[0])
    fresh, _, _ = _scene(**kw)
    ra, rf = _run(a, 25), _run(fresh, 25)
    for n in ra:
        np.testing.assert_array_equal(ra[n][0], rf[n][0], err_msg=n)


def test_contact_option_errors():
    with pytest.raises(OptionError, match="friction_cone"):
        RigidOptions(friction_cone="round")
    with pytest.raises(OptionError, match="signorini"):
        _scene(contact_resolution="signorini")        # signorini needs elliptic + Newton (docs/semantics.md §R2)
    with pytest.raises(OptionError, match="noslip"):
        _scene(friction_cone="elliptic", noslip_iterations=3)     # noslip needs the pyramidal cone


def test_elliptic_convex_box_rests():
    scene, box, s = _scene(friction_cone="elliptic", contact_resolution="convex")
    for _ in range(100):
        scene.step()
    s._wrench_sync()            # a one-substep step leaves the wrench stage to the first read (docs/rigid.md)
    st = s.data
    n = int(st.ncon.numpy()[0])
    assert st.con_wrench.numpy()[0, :n, 0].sum() == pytest.approx(8.0 * G, rel=5e-3)


BOX_XML = """<mujoco>
  <option timestep="0.005" integrator="Euler" cone="pyramidal" impratio="1"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="box" pos="0 0 0.3">
      <freejoint/>
      <geom type="box" size="0.1 0.1 0.1" mass="8"/>
    </body>
  </worldbody>
</mujoco>"""


def test_mjcf_box_on_plane_settles_to_mujocos_height(tmp_path):
    """Same MJCF file, MuJoCo-compatible mode, Euler, pyramidal cone, convex resolution, impratio 1,
    400 steps (2 s): drop, impact, rest. Both engines build the same rows (same formulas, float64)
    and minimize the same regularized problem; each solve stops at scale·|g| < 1e-8 (scale =
    1/trace(M) = 1/(3·8 + 3·I) ≈ 1/24) → force differences ≲ 1e-8·24 N, i.e. position differences
    ≲ Σ h²·Δf/m ≈ 400·2.5e-5·3e-7/8 ≈ 4e-10 m. Tolerance 1e-8 m on the whole trajectory
    (measured: 2e-12, final height 4e-14)."""
    mujoco = pytest.importorskip("mujoco")
    path = tmp_path / "box.xml"
    path.write_text(BOX_XML)
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    z_mj = []
    for _ in range(400):
        mujoco.mj_step(m, d)
        z_mj.append(float(d.qpos[2]))
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.005, gravity=(0, 0, -G), precision="64"),
                           rigid=RigidOptions.mujoco(integrator="Euler"))
    e = scene.add_entity(morphs.MJCF(file=str(path)), Rigid(), name="mj")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=0)
    z = []
    for _ in range(400):
        scene.step()
        z.append(float(np.asarray(e.get_qpos())[2]))
    z, z_mj = np.array(z), np.array(z_mj)
    assert HALF - z[-1] > 1e-4                  # it rests in the soft contact (penetration ~ 1 mm) ...
    np.testing.assert_allclose(z, z_mj, rtol=0, atol=1e-8)   # ... on MuJoCo's trajectory and height
    # penetration within 10 % of MuJoCo's (issue 6), here far tighter
    assert HALF - z[-1] == pytest.approx(HALF - z_mj[-1], rel=0.1)
    scene.solver("rigid")._wrench_sync()     # a one-substep step leaves the wrench stage to the first read
    st = scene.solver("rigid").data
    n = int(st.ncon.numpy()[0])
    assert st.con_wrench.numpy()[0, :n, 0].sum() == pytest.approx(8.0 * G, rel=5e-3)


LIMIT_XML = """<mujoco>
  <option timestep="0.005" integrator="Euler"/>
  <worldbody>
    <body name="arm" pos="0 0 1">
      <joint name="hinge" type="hinge" axis="0 1 0" limited="true" range="-30 30" frictionloss="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.05" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
</mujoco>"""


def test_mjcf_hinge_limit_and_frictionloss_match_mujoco(tmp_path):
    """A pendulum falling onto its 30° limit, with friction loss, no collidable pair: the constraint
    stage runs for the limit alone. Same rows and problem as MuJoCo (Euler, MuJoCo-compatible);
    tolerance 1e-9 rad over 300 steps from the solve tolerance as in the box test (measured 7e-13)."""
    mujoco = pytest.importorskip("mujoco")
    path = tmp_path / "lim.xml"
    path.write_text(LIMIT_XML)
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    q_mj = []
    for _ in range(300):
        mujoco.mj_step(m, d)
        q_mj.append(float(d.qpos[0]))
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.005, gravity=(0, 0, -G), precision="64"),
                           rigid=RigidOptions.mujoco(integrator="Euler"))
    e = scene.add_entity(morphs.MJCF(file=str(path)), Rigid(), name="mj")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=0)
    s = scene.solver("rigid")
    assert s.collision is None and s.has_constraint
    q = []
    for _ in range(300):
        scene.step()
        q.append(float(np.asarray(e.get_qpos())[0]))
    q = np.array(q)
    assert q[-1] == pytest.approx(np.deg2rad(30), abs=2e-3)      # resting at the limit (soft: ~0.6 mrad past)
    np.testing.assert_allclose(q, q_mj, rtol=0, atol=1e-9)


def test_no_constraint_stage_without_pairs_limits_or_frictionloss():
    """The fast path stays: a lone free box (no collidable pair, no limit) has no constraint stage."""
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, gravity=(0, 0, -G), precision="64"),
                           rigid=RigidOptions())
    scene.add_entity(morphs.Box(size=(0.2,) * 3, pos=(0, 0, 1)), Rigid())
    scene.build(n_envs=0)
    s = scene.solver("rigid")
    assert s.collision is None and not s.has_constraint


def test_material_friction_decides_stick_or_slide_on_incline():
    """A box on a 20° incline (gravity tilted by 20° about y, the plane stays z-up): tan 20° = 0.364,
    so μ = 0.5 holds it and μ = 0.2 (< tan 20°) lets it slide g(sin20° − μ cos20°)t²/2 = 0.75 m in
    1 s (default mode mixes friction as the max of the two materials' μ). "Holds" = creep of the
    soft pyramidal rows: steady, a = 0, each edge pair of the 4 contacts gives f₊ − f₋ =
    −2·B·μ·v/R (friction has K = 0 on the tangential part), so Σμ(f₊ − f₋) = m·g·sinθ ⇒
    v ≈ m·g·sinθ·R/(8·B·μ²), B = 2/(dmax·timeconst), R the edge regularization the stage built.
    Measured 1.8 mm/s, 1.6× that estimate (the estimate ignores the normal/rotational coupling of
    the rows); bound: 3× the estimate."""
    th = np.deg2rad(20)
    out = {}
    for mu in (0.5, 0.2):
        scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.005, gravity=(G * np.sin(th), 0, -G * np.cos(th)),
                                                       precision="64"), rigid=RigidOptions())
        box = scene.add_entity(morphs.Box(size=(2 * HALF,) * 3, pos=(0, 0, HALF - 1e-3)), Rigid(friction=mu))
        scene.add_entity(morphs.Plane(), Rigid(friction=mu))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PolyphysWarning)
            scene.build(n_envs=0)
        for _ in range(200):
            scene.step()
        st = scene.solver("rigid").data
        out[mu] = (float(box.get_pos()[0]), float(np.asarray(box.get_dofs_velocity())[0]),
                   float(st.efc_R.numpy()[0, 0]))
    x, v, R = out[0.5]
    B = 2 / (0.95 * 0.02)
    v_est = 8.0 * G * np.sin(th) * R / (8 * B * 0.5 ** 2)
    assert 0 <= v < 3 * v_est and x < 3 * v_est * 1.0
    expect = 0.5 * G * (np.sin(th) - 0.2 * np.cos(th)) * 1.0 ** 2
    assert out[0.2][0] == pytest.approx(expect, rel=0.05)


def test_get_contacts_forces_frames_and_staleness():
    """entity.get_contacts (docs/semantics.md §R9/§F2): for the resting box, A = the plane, B = the box, normal B→A
    = −z; the plane is pushed along the normal (force_a = −m·g ẑ in sum), the box gets force_b =
    −force_a; the contact-frame wrench's F_n is the normal component; padded/batched shapes;
    a set_pos makes the forces stale until the next step."""
    for n_envs in (0, 2):
        scene, box, s = _scene(n_envs=n_envs, pos=(0, 0, HALF))
        plane = scene.entities[1]
        for _ in range(100):
            scene.step()
        c = box.get_contacts()
        if n_envs == 0:
            assert c["force_a"].shape == (4, 3) and "valid_mask" not in c
            fa, fb, w, nrm = c["force_a"], c["force_b"], c["wrench"], c["normal"]
        else:
            K = s.collision.max_contacts
            assert c["force_a"].shape == (2, K, 3) and c["valid_mask"].shape == (2, K)
            assert c["valid_mask"].sum(axis=1).tolist() == [4, 4]
            np.testing.assert_array_equal(c["force_a"][0], c["force_a"][1])
            v = c["valid_mask"][0]
            fa, fb, w, nrm = c["force_a"][0][v], c["force_b"][0][v], c["wrench"][0][v], c["normal"][0][v]
            assert np.all(c["geom_a"][0][~v] == -1) and np.all(c["force_a"][0][~v] == 0)
        np.testing.assert_allclose(nrm, np.tile([0, 0, -1.0], (4, 1)), atol=1e-12)
        np.testing.assert_allclose(fa.sum(axis=0), [0, 0, -8.0 * G], rtol=0, atol=1e-6)
        np.testing.assert_array_equal(fb, -fa)
        np.testing.assert_allclose(w[:, 0], -fa[:, 2], rtol=1e-12)       # F_n along the normal −z
        assert not np.any(c["stale"]) and np.all(np.asarray(c["solved_at"]) == pytest.approx(0.99))
        # the same contacts from the plane's side, filters
        assert len(np.atleast_1d(plane.get_contacts(with_entity=box)["valid_mask" if n_envs else "geom_a"])) > 0
        assert not box.get_contacts(exclude_self_contact=True, is_padded=True)["stale"].any()
        box.set_pos(np.array([0.0, 0, HALF]) if n_envs == 0 else np.array([[0.0, 0, HALF]] * 2))
        assert np.all(box.get_contacts(is_padded=True)["stale"])
        scene.step()
        assert not np.any(box.get_contacts(is_padded=True)["stale"])


def test_step_impulse_equals_momentum_change_minus_gravity():
    """Newton–Euler per step with substeps = 4 (Euler integrator): the contact impulse accumulated
    over the step's substeps on the box equals m·Δv_com − dt·m·g, to rounding (1e-9 relative to
    m·g·dt), through the drop, the impact and the rest; at rest the net force is m·g ẑ."""
    scene, box, s = _scene(pos=(0, 0, 0.2), euler=(10, 5, 0), dt=0.01, substeps=4, integrator="Euler")
    m = 8.0
    gvec = np.array([0, 0, -G])
    worst = 0.0
    for _ in range(60):
        v0 = np.asarray(box.get_dofs_velocity())[:3].copy()
        scene.step()
        v1 = np.asarray(box.get_dofs_velocity())[:3]
        imp = box.get_links_net_contact_wrench()["impulse_force"][0]
        worst = max(worst, np.abs(imp - (m * (v1 - v0) - 0.01 * m * gvec)).max())
    # rounding: the largest impulse is ~3.4 N·s (impact); float64 → ~1e-15 per operation, a few
    # substeps: 1e-12 N·s (measured 3e-15)
    assert worst < 1e-12
    w = box.get_links_net_contact_wrench()
    assert w["impulse_force"][0][2] > 0.5 * m * G * 0.01   # it is in contact at the end


def test_friction_setters_per_env_and_errors():
    """set_friction_ratio per env (domain randomisation): on the 20° incline with μ = 0.5, env 0
    keeps ratio 1 (holds), env 1 gets 0.4 on both geoms (μ = 0.2 < tan 20°: slides ~0.75 m in 1 s).
    Bad values raise naming the field and the range."""
    th = np.deg2rad(20)
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.005, gravity=(G * np.sin(th), 0, -G * np.cos(th)),
                                                   precision="64"), rigid=RigidOptions())
    box = scene.add_entity(morphs.Box(size=(2 * HALF,) * 3, pos=(0, 0, HALF - 1e-3)), Rigid(friction=0.5))
    scene.add_entity(morphs.Plane(), Rigid(friction=0.5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=2)
    s = scene.solver("rigid")
    s.set_friction_ratio(0.4, envs_idx=[1])
    np.testing.assert_array_equal(s.model.geom_friction_ratio.numpy(), [[1, 1], [0.4, 0.4]])
    for _ in range(200):
        scene.step()
    x = box.get_pos()[:, 0]
    assert abs(x[0]) < 5e-3
    assert x[1] == pytest.approx(0.5 * G * (np.sin(th) - 0.2 * np.cos(th)), rel=0.05)
    with pytest.raises(OptionError, match=r"friction=9\.0.*\[0\.01, 5\]"):
        s.set_friction(9.0)
    with pytest.raises(OptionError, match="friction_ratio"):
        s.set_friction_ratio(-1.0)
    with pytest.raises(OptionError, match="geoms_idx contains 7"):
        s.set_friction(0.5, geoms_idx=[7])
    with pytest.warns(PolyphysWarning, match="dmax"):
        s.set_sol_params((0.02, 1.0, 0.9, 1.5, 0.001, 0.5, 2.0))
    assert s.model.geom_sol.numpy()[0, 3] == pytest.approx(0.9999)
    s.set_friction(1.0, geoms_idx=[0])
    assert s.geom_friction0[:, 0].tolist() == [1.0, 0.5]


EQ_XML = """<mujoco>
  <option timestep="0.002" integrator="Euler"/>
  <worldbody>
    <body name="a" pos="0 0 1">
      <joint name="h1" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.03" contype="0" conaffinity="0"/>
    </body>
    <body name="b" pos="0.5 0 1">
      <joint name="h2" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" contype="0" conaffinity="0"/>
    </body>
    <body name="c" pos="1 0 1">
      <freejoint/>
      <geom type="box" size="0.05 0.05 0.05" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
  <equality>
    <joint joint1="h2" joint2="h1" polycoef="0 0.5 0 0 0"/>
    <connect body1="c" anchor="0.05 0 0.05"/>
  </equality>
</mujoco>"""


def test_mjcf_joint_and_connect_equality_match_mujoco(tmp_path):
    """Two hinges coupled by a joint equality q2 = 0.5·q1 (no J̇ term for a linear polynomial) and a
    free box hanging from the world by a connect at a corner (rows with MuJoCo 4's J̇·q̇ term): the
    same rows and problem as MuJoCo → trajectories equal to the solve tolerance (1e-9, measured
    2e-16 over 250 steps; without the J̇·q̇ term the box differs by 1.5 mm)."""
    mujoco = pytest.importorskip("mujoco")
    path = tmp_path / "eq.xml"
    path.write_text(EQ_XML)
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    ref = []
    for _ in range(250):
        mujoco.mj_step(m, d)
        ref.append(d.qpos.copy())
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.002, gravity=(0, 0, -G), precision="64"),
                           rigid=RigidOptions.mujoco(integrator="Euler"))
    e = scene.add_entity(morphs.MJCF(file=str(path)), Rigid(), name="mj")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=0)
    q = []
    for _ in range(250):
        scene.step()
        q.append(np.asarray(e.get_qpos()).copy())
    q, ref = np.array(q), np.array(ref)
    assert abs(q[-1, 1] - 0.5 * q[-1, 0]) < 1e-3 and abs(q[-1, 0]) > 0.5      # coupled and moving
    np.testing.assert_allclose(q, ref, rtol=0, atol=1e-9)


WELD_XML = """<mujoco>
  <option timestep="0.002" integrator="Euler"/>
  <worldbody>
    <body name="a" pos="0 0 1">
      <joint name="h1" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.03" contype="0" conaffinity="0"/>
    </body>
    <body name="c" pos="0.45 0 1">
      <freejoint/>
      <geom type="box" size="0.05 0.05 0.05" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
  <equality>
    <weld body1="c" body2="a" solref="0.05 1"/>
  </equality>
</mujoco>"""


def test_mjcf_weld_with_velocity_matches_mujoco(tmp_path):
    """A free box welded (soft, solref 0.05) to a swinging hinge arm, started with velocities on all
    7 dofs: the weld rows include MuJoCo 4's J̇·q̇ (translation and the quaternion rotation term).
    Tolerance 1e-9 (solve tolerance as above; measured 1.6e-15 over 250 steps — without the J̇·q̇
    term 7 cm)."""
    mujoco = pytest.importorskip("mujoco")
    path = tmp_path / "weld.xml"
    path.write_text(WELD_XML)
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    v0 = np.linspace(-1, 1, m.nv)
    d.qvel[:] = v0
    ref = []
    for _ in range(250):
        mujoco.mj_step(m, d)
        ref.append(d.qpos.copy())
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.002, gravity=(0, 0, -G), precision="64"),
                           rigid=RigidOptions.mujoco(integrator="Euler"))
    e = scene.add_entity(morphs.MJCF(file=str(path)), Rigid(), name="mj")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=0)
    e.set_dofs_velocity(v0)
    q = []
    for _ in range(250):
        scene.step()
        q.append(np.asarray(e.get_qpos()).copy())
    np.testing.assert_allclose(np.array(q), np.array(ref), rtol=0, atol=1e-9)


def test_fused_contact_and_link_wrench_stage():
    """contact_forces.contact_link_wrench (the step's one launch for contact_wrench + link_contact_wrench)
    with its outputs NaN-filled, at a mid-contact state of two tilted boxes (2 envs, different poses and
    velocities): bit for bit the two separate stages from the same inputs in each mode (query, restart,
    accumulate); the per-link net wrench also against NumPy sums over the contacts (A gets F and
    T + (p − c_A)×F, B the negation about its own CoM; h·wrench added to / restarting the impulse sums)."""
    import warp as wp
    from polyphys.plugins.rigid import contact_forces as CF

    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.005, gravity=(0, 0, -G), graph_capture=False, precision="64"))
    a = scene.add_entity(morphs.Box(size=(0.2, 0.3, 0.16), pos=(0.31, -0.2, 0.09), euler=(7, -5, 30)), Rigid(), name="a")
    scene.add_entity(morphs.Box(size=(0.18, 0.14, 0.22), pos=(0.36, -0.17, 0.3), euler=(-12, 9, 55)), Rigid(),
                     name="b")
    scene.add_entity(morphs.Plane(), Rigid(), name="ground")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=2)
    a.set_dofs_velocity(np.array([[0.3, -0.1, -0.4, 1.0, 0.5, -0.7], [-0.2, 0.2, -0.1, 0.3, -0.6, 0.2]]))
    for _ in range(30):
        scene.step()
    s = scene.solver("rigid")
    d, v = s.data, s.views["all"]
    nc = d.ncon.numpy()
    assert (nc >= 4).all()
    assert (d.con_link.numpy()[:, :, :2] >= 0).all(axis=-1).any()     # some contact between the two boxes
    outs = (d.con_wrench, d.con_force_world, d.con_torque_world, d.con_valid, d.link_contact_force,
            d.link_contact_torque, d.link_impulse_force, d.link_impulse_torque)
    rng = np.random.default_rng(2)
    imp0 = [rng.normal(size=d.link_impulse_force.numpy().shape), rng.normal(size=d.link_impulse_torque.numpy().shape)]
    h = float(v.m.opt.timestep)

    def run(fn):
        for x in outs:
            x.assign(np.full(x.numpy().shape, -7 if x.dtype == wp.int32 else np.nan))
        d.link_impulse_force.assign(imp0[0])
        d.link_impulse_torque.assign(imp0[1])
        fn()
        return [x.numpy().copy() for x in outs]

    for mode in (CF.NONE, CF.RESTART, CF.ACCUMULATE):
        ref = run(lambda mode=mode: (CF.contact_wrench(v), CF.link_contact_wrench(v, mode)))
        for pf in (2, 1, 0):
            got = run(lambda mode=mode, pf=pf: CF.contact_link_wrench(v, mode, prefetch=pf))
            for x, y in zip(got, ref):
                np.testing.assert_array_equal(x, y)
        W, Fw, Tw, valid, LF, LT, IF, IT = got
        xi, cp, cl = d.link_xipos.numpy(), d.con_pos.numpy(), d.con_link.numpy()
        for e in range(2):
            lf, lt = np.zeros_like(LF[e]), np.zeros_like(LT[e])
            for c in range(nc[e]):
                assert valid[e, c] == 1
                f, t, p = Fw[e, c], Tw[e, c], cp[e, c]
                la, lb = cl[e, c]
                if la >= 0:
                    lf[la] += f
                    lt[la] += t + np.cross(p - xi[e, la], f)
                if lb >= 0:
                    lf[lb] -= f
                    lt[lb] -= t + np.cross(p - xi[e, lb], f)
            assert (valid[e, nc[e]:] == 0).all() and not W[e, nc[e]:].any()
            np.testing.assert_allclose(LF[e], lf, rtol=1e-12, atol=1e-9)
            np.testing.assert_allclose(LT[e], lt, rtol=1e-12, atol=1e-9)
            if mode == CF.NONE:
                np.testing.assert_array_equal(IF[e], imp0[0][e])
            else:
                base = imp0 if mode == CF.ACCUMULATE else [np.zeros_like(imp0[0]), np.zeros_like(imp0[1])]
                np.testing.assert_allclose(IF[e], base[0][e] + h * lf, rtol=1e-12, atol=1e-9)
                np.testing.assert_allclose(IT[e], base[1][e] + h * lt, rtol=1e-12, atol=1e-9)
