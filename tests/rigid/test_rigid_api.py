"""Entity API of the rigid solver: indices, getters/setters, per-env parameters, bad input."""

import numpy as np
import polyphys
import pytest
from polyphys import morphs
from polyphys.description import EntityDescription, Inertial, Joint, Link
from polyphys.errors import BuildError, OptionError
from polyphys.plugins.rigid import Integrator, RigidOptions
from polyphys.plugins.rigid.materials import Rigid

mujoco = pytest.importorskip("mujoco")

from rigid_mjref import ZOO, desc_from_mjmodel, no_constraint_model  # noqa: E402


def _scene(gravity=(0, 0, -9.81), precision="64", **opts):
    opts.setdefault("disable_constraint", True)
    return polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, gravity=gravity, precision=precision),
                          rigid=RigidOptions(enable_collision=False, **opts))


def _zoo(n_envs=0, **kw):
    m = no_constraint_model(ZOO)
    scene = _scene(**kw)
    ent = scene.add_entity(morphs.Description(description=desc_from_mjmodel(m)), Rigid())
    scene.build(n_envs=n_envs)
    return m, scene, ent


def test_indices_follow_mujoco_qpos_qvel_order():
    m, scene, ent = _zoo()
    assert (ent.n_qs, ent.n_dofs) == (m.nq, m.nv)
    for j, info in enumerate(ent.joints):
        assert info.q_start == m.jnt_qposadr[j] and info.dof_start == m.jnt_dofadr[j]
        assert info.name == mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j)
    ball = ent.get_joint("ball_b")
    assert (ball.n_qs, ball.n_dofs, len(ball.q_idx_local), len(ball.dof_idx_local)) == (4, 3, 4, 3)
    assert np.allclose(ent.get_qpos(), m.qpos0)


def test_set_qpos_zeroes_velocity_by_default_and_getters_copy():
    m, scene, ent = _zoo()
    ent.set_dofs_velocity(np.ones(m.nv))
    q = ent.get_qpos()
    q[7] += 0.2
    ent.set_qpos(q)
    assert np.all(ent.get_dofs_velocity() == 0)
    ent.set_dofs_velocity(np.ones(m.nv))
    ent.set_qpos(q, zero_velocity=False)
    assert np.all(ent.get_dofs_velocity() == 1)
    got = ent.get_qpos()
    got[:] = 0
    assert ent.get_qpos()[7] == pytest.approx(q[7])


def test_dofs_position_meaning():
    """revolute: q − ref; free: position + three angles."""
    m, scene, ent = _zoo()
    hinge = ent.get_joint("hinge_a")
    qa = hinge.q_idx_local[0]
    q = ent.get_qpos()
    q[qa] += 0.25
    ent.set_qpos(q)
    pos = ent.get_dofs_position()
    assert m.qpos0[qa] != 0 and pos[hinge.dof_idx_local[0]] == pytest.approx(q[qa] - m.qpos0[qa])
    assert np.allclose(pos[:3], ent.get_qpos()[:3])
    new = pos.copy()
    new[3:6] = [0.1, -0.2, 0.3]
    ent.set_dofs_position(new)
    assert np.allclose(ent.get_dofs_position()[3:6], [0.1, -0.2, 0.3])


def test_base_pos_vel_relative():
    """relative=False: the CoM; its velocity is v + ω × (com − origin) (docs/semantics.md §S2)."""
    m, scene, ent = _zoo()
    v = np.zeros(m.nv)
    v[:6] = [0.1, 0.2, 0.3, 1.0, -2.0, 0.5]
    ent.set_dofs_velocity(v)
    origin, com = ent.get_pos(), ent.get_pos(relative=False)
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = ent.get_qpos(), v
    mujoco.mj_forward(m, d)
    assert np.allclose(origin, d.xpos[1], atol=1e-14) and np.allclose(com, d.xipos[1], atol=1e-14)
    w = ent.get_ang()
    assert np.allclose(ent.get_vel(), v[:3])
    assert np.allclose(ent.get_vel(relative=False), v[:3] + np.cross(w, com - origin))
    # MuJoCo: the local angular velocity rotated to the world
    assert np.allclose(w, d.xmat[1].reshape(3, 3) @ v[3:6])


def test_per_env_parameters_and_isolation():
    """Doubling a link mass in env 1 halves its acceleration under the same force; env 0 unchanged."""
    scene = _scene(gravity=(0, 0, 0))
    box = scene.add_entity(morphs.Box(size=(0.2, 0.2, 0.2), pos=(0, 0, 1)), Rigid(rho=1000.0))
    scene.build(n_envs=3)
    m0 = box.get_links_mass()[0, 0]
    box.set_links_mass([2 * m0], links_idx_local=[0], envs_idx=[1])
    assert np.allclose(box.get_links_mass()[:, 0], [m0, 2 * m0, m0])
    box.control_dofs_force(np.array([1.0, 0, 0, 0, 0, 0]))
    scene.step()
    acc = box.get_qacc()[:, 0]
    assert acc[0] == pytest.approx(1 / m0) and acc[1] == pytest.approx(0.5 / m0)
    box.set_dofs_damping([3.0] * 6, envs_idx=[2])
    assert np.allclose(box.get_dofs_param("damping")[:, 0], [0, 0, 3.0])
    # mass matrix scales with the mass (inertia scaled too: constant density)
    M = box.get_mass_mat()
    assert np.allclose(M[1], 2 * M[0])


def test_mjcf_actuators_ctrlrange_and_forcerange():
    m, scene, ent = _zoo()
    assert ent.actuators and ent.n_actuators == m.nu
    ent.set_ctrl([5.0, 0, 0, 0])            # motor ctrlrange [-1, 1], gear 2
    scene.forward()
    assert ent.get_actuator_force()[0] == pytest.approx(1.0)
    hinge = ent.get_joint("hinge_a").dof_idx_local[0]
    assert ent.get_qfrc("actuator")[hinge] == pytest.approx(2.0)
    ent.set_ctrl([0, 10.0, 0, 0])           # position actuator, forcerange [-3, 3]
    scene.forward()
    assert ent.get_actuator_force()[1] == pytest.approx(3.0)


def test_inverse_dynamics_returns_the_applied_force():
    m, scene, ent = _zoo()
    rng = np.random.default_rng(0)
    v = rng.normal(size=m.nv)
    tau = rng.normal(size=m.nv)
    ent.set_dofs_velocity(v)
    ent.control_dofs_force(tau)
    scene.forward()
    # MuJoCo's qfrc_inverse: everything but passive and external forces, i.e. all actuation
    assert np.allclose(ent.inverse_dynamics(ent.get_qacc()), tau + ent.get_qfrc("actuator"), atol=1e-10)


def test_jacobian_matches_mujoco():
    m, scene, ent = _zoo()
    rng = np.random.default_rng(1)
    q = m.qpos0 + rng.normal(size=m.nq) * 0.3
    mujoco.mj_normalizeQuat(m, q)
    ent.set_qpos(q)
    d = mujoco.MjData(m)
    d.qpos[:] = q
    mujoco.mj_forward(m, d)
    for li in range(ent.n_links):
        point = d.xipos[li + 1] + [0.01, -0.02, 0.03]
        jp, jr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
        mujoco.mj_jac(m, d, jp, jr, point, li + 1)
        J = ent.get_jacobian(li, point=point)
        assert np.allclose(J[:3], jp, atol=1e-12) and np.allclose(J[3:], jr, atol=1e-12)


def test_batched_ik_reaches_targets():
    """DLS IK on every env at once: targets from known configurations are reached to 1e-6 m."""
    m, scene, ent = _zoo(n_envs=4)
    rng = np.random.default_rng(2)
    q_goal = np.tile(m.qpos0, (4, 1))
    hinge = [ent.get_joint(n).q_idx_local[0] for n in ("hinge_a", "slide_c", "hinge_c")]
    q_goal[:, hinge] += rng.uniform(-0.4, 0.4, size=(4, 3))
    ent.set_qpos(q_goal)
    link = ent.links.index("c")
    target = ent.get_links_pos([link])[:, 0]
    ent.set_qpos(np.tile(m.qpos0, (4, 1)))
    before = ent.get_qpos()
    q_sol, err = ent.inverse_kinematics(link, target, dofs_idx_local=[6, 7, 8, 9, 10, 11], max_iters=100)
    assert np.all(err < 1e-6)
    assert np.allclose(ent.get_qpos(), before)        # the state is left untouched
    ent.set_qpos(q_sol)
    assert np.allclose(ent.get_links_pos([link])[:, 0], target, atol=1e-6)


# -- bad input ----------------------------------------------------------------------------------
def test_bad_options_and_materials():
    with pytest.raises(OptionError, match="integrator.*allowed"):
        RigidOptions(integrator="RK4")
    assert RigidOptions(integrator=Integrator.Euler).integrator is Integrator.Euler
    with pytest.raises(OptionError, match="friction"):
        Rigid(friction=10.0)
    with pytest.raises(OptionError, match="rho"):
        Rigid(rho=-1.0)


def test_bad_setter_input_names_expected_shape():
    m, scene, ent = _zoo()
    with pytest.raises(OptionError, match=r"expected \(15,\)"):
        ent.set_qpos(np.zeros(3))
    with pytest.raises(OptionError, match="allowed 0..12"):
        ent.get_dofs_velocity(dofs_idx_local=[13])
    with pytest.raises(OptionError, match="NaN"):
        ent.control_dofs_force([np.nan], dofs_idx_local=[6])
    with pytest.raises(OptionError, match="free/spherical"):
        ent.control_dofs_position([0.0], dofs_idx_local=[0])
    with pytest.raises(OptionError, match="zero quaternion"):
        ent.set_qpos(np.zeros(m.nq))


def test_set_links_mass_rejects_a_massless_moving_body_and_keeps_the_old_mass():
    scene = _scene()
    box = scene.add_entity(morphs.Box(size=(0.2, 0.2, 0.2)), Rigid())
    scene.build()
    m0 = box.get_links_mass()[0]
    with pytest.raises(OptionError, match="zero-mass moving body"):
        box.set_links_mass([0.0])
    assert box.get_links_mass()[0] == m0
    with pytest.raises(OptionError, match="free/spherical"):
        box.control_dofs_position([0.0], dofs_idx_local=[0])
    assert np.all(scene.solver("rigid").data.dof_target_pos.numpy() == 0)


def test_zero_mass_moving_body_is_rejected():
    links = [Link(name="ghost", joints=[0], inertial=Inertial(mass=0.0))]
    desc = EntityDescription(name="g", links=links,
                             joints=[Joint(name="j", type="revolute", link=0)]).finalize()
    scene = _scene()
    scene.add_entity(morphs.Description(description=desc), Rigid())
    with pytest.raises(BuildError, match="zero-mass moving body"):
        scene.build()


def test_nonfinite_state_is_flagged():
    """A NaN reaching the state (here through a huge force) is caught by the core's NaN check."""
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, nan_policy="raise", precision="32"),
                           rigid=RigidOptions(enable_collision=False, disable_constraint=True))
    box = scene.add_entity(morphs.Box(size=(0.1, 0.1, 0.1)), Rigid())
    scene.build()
    box.control_dofs_force([3e38, 3e38, 0, 0, 0, 0])
    with pytest.raises(polyphys.errors.SimulationError, match="env"):
        for _ in range(3):
            scene.step()


def test_reset_clears_control_keeps_parameters_and_checkpoint_restores_them(tmp_path):
    """docs/semantics.md §S6: reset sets control back to zero force and clears wrenches; per-env parameters are
    not state (reset keeps them) but a checkpoint carries them."""
    def build():
        scene = _scene(gravity=(0, 0, 0))
        box = scene.add_entity(morphs.Box(size=(0.2, 0.2, 0.2)), Rigid())
        scene.build(n_envs=2)
        return scene, box

    scene, box = build()
    m0 = box.get_links_mass()[0, 0]
    box.set_links_mass([3 * m0], envs_idx=[1])
    box.control_dofs_force(np.array([1.0, 0, 0, 0, 0, 0]))
    scene.step()
    scene.reset()
    assert np.all(box.get_dofs_velocity() == 0)
    scene.step()
    assert np.all(box.get_dofs_velocity() == 0)                      # control is zero force again
    assert box.get_links_mass()[1, 0] == pytest.approx(3 * m0)       # parameters kept
    box.control_dofs_force(np.array([1.0, 0, 0, 0, 0, 0]))
    path = scene.save_checkpoint(tmp_path / "rigid.npz")
    other_scene, other = build()
    other_scene.load_checkpoint(path)
    assert other.get_links_mass()[1, 0] == pytest.approx(3 * m0)
    scene.step()
    other_scene.step()
    assert np.array_equal(box.get_dofs_velocity(), other.get_dofs_velocity())
    assert box.get_dofs_velocity()[1, 0] == pytest.approx(0.01 / (3 * m0))


def test_scene_of_static_bodies_steps():
    """A plane and a fixed box: no dof at all; build, step, getters work."""
    scene = _scene()
    plane = scene.add_entity(morphs.Plane(), Rigid())
    box = scene.add_entity(morphs.Box(size=(0.1, 0.1, 0.1), pos=(0, 0, 1), fixed=True), Rigid())
    scene.build(n_envs=2)
    scene.step()
    assert box.n_dofs == 0 and plane.get_qpos().shape == (2, 0)
    assert np.allclose(box.get_pos(), [[0, 0, 1]] * 2)


def test_link_velocities_match_mujoco():
    """get_links_vel (link origin) and get_links_ang against MuJoCo's mj_objectVelocity (CoM, world)."""
    m, scene, ent = _zoo()
    rng = np.random.default_rng(4)
    q = m.qpos0 + rng.normal(size=m.nq) * 0.3
    mujoco.mj_normalizeQuat(m, q)
    v = rng.normal(size=m.nv)
    ent.set_qpos(q)
    ent.set_dofs_velocity(v)
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = q, v
    mujoco.mj_forward(m, d)
    lin, ang = ent.get_links_vel(), ent.get_links_ang()
    for b in range(1, m.nbody):
        res = np.zeros(6)
        mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_BODY, b, res, 0)
        w, v_com = res[:3], res[3:]
        assert np.allclose(ang[b - 1], w, atol=1e-12)
        assert np.allclose(lin[b - 1], v_com + np.cross(w, d.xpos[b] - d.xipos[b]), atol=1e-12)


def test_mjcf_free_body_takes_the_morph_placement(tmp_path):
    """An MJCF free body sits under the world body's link: the morph's pos/euler place it."""
    path = tmp_path / "ball.xml"
    path.write_text('<mujoco><worldbody><body name="ball" pos="0 0 1"><freejoint/>'
                    '<geom type="sphere" size="0.1"/></body></worldbody></mujoco>')
    scene = _scene()
    ent = scene.add_entity(morphs.MJCF(file=str(path), pos=(1.0, 2.0, 0.5), euler=(0, 0, 90)), Rigid())
    scene.build()
    link = ent.links.index("ball")
    assert np.allclose(ent.get_links_pos([link])[0], [1.0, 2.0, 1.5], atol=1e-12)
    assert np.allclose(ent.get_links_quat([link])[0], [np.cos(np.pi / 4), 0, 0, np.sin(np.pi / 4)], atol=1e-12)


def test_base_of_an_mjcf_model_is_its_root_body_and_set_pos_quat_move_a_fixed_base(tmp_path):
    path = tmp_path / "arm.xml"
    path.write_text('<mujoco><worldbody><body name="base" pos="0.1 0 0.2"><geom type="box" size="0.1 0.1 0.1"/>'
                    '<body name="link" pos="0 0 0.3"><joint type="hinge" axis="0 1 0"/>'
                    '<geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/></body></body></worldbody></mujoco>')
    scene = _scene()
    arm = scene.add_entity(morphs.MJCF(file=str(path)), Rigid())
    scene.build()
    assert arm.links[arm.base_link] == "base"
    assert np.allclose(arm.get_pos(), [0.1, 0, 0.2])
    arm.set_pos([1.0, 2.0, 3.0])
    assert np.allclose(arm.get_pos(), [1.0, 2.0, 3.0])
    q = [np.cos(0.3), 0, 0, np.sin(0.3)]
    arm.set_quat(q)
    assert np.allclose(arm.get_quat(), q) and np.allclose(arm.get_pos(), [1.0, 2.0, 3.0])
    link = arm.links.index("link")
    from polyphys.kinematics import quat_rotate
    assert np.allclose(arm.get_links_pos([link])[0], np.array([1.0, 2.0, 3.0]) + quat_rotate(q, [0, 0, 0.3]))


def test_articulated_entity_api_is_defined_once():
    """The q, dof, link and base getters and setters of the rigid and kinematic entities are core's
    ArticulatedEntity (polyphys.articulated): neither plugin redefines one (the rigid entity only
    extends __init__ and _bind), so the two cannot drift apart."""
    from polyphys.articulated import ArticulatedEntity
    from polyphys.plugins.kinematic.entity import KinematicEntity
    from polyphys.plugins.rigid.entity import RigidEntity

    shared = {n for n, v in vars(ArticulatedEntity).items() if callable(v) and not n.startswith("__")}
    assert {"get_qpos", "set_qpos", "get_dofs_position", "set_dofs_position", "get_dofs_velocity",
            "set_dofs_velocity", "get_links_pos", "get_links_quat", "get_links_vel", "get_links_ang", "get_pos",
            "get_quat", "get_vel", "get_ang", "set_pos", "set_quat", "get_joint"} <= shared
    for cls in (RigidEntity, KinematicEntity):
        redefined = (shared & set(vars(cls))) - {"_bind"}
        assert not redefined, (cls.__name__, sorted(redefined))
    assert RigidEntity.ZERO_VELOCITY and not KinematicEntity.ZERO_VELOCITY      # docs/semantics.md §S4



@pytest.mark.parametrize("kind", ["rigid", "kinematic"])
def test_articulated_methods_are_guarded_entity_calls(kind):
    """The getters and setters that live in core's ArticulatedEntity are wrapped by the Entity call
    guard (polyphys.interfaces._entity_call) like the solvers' own methods: before build they raise
    SceneStateError, and after build a call from a second thread while the scene is inside a step
    in the first is refused (SceneStateError) and changes nothing."""
    import threading

    from polyphys.articulated import ArticulatedEntity
    from polyphys.errors import SceneStateError
    from polyphys.plugins.kinematic.entity import KinematicEntity
    from polyphys.plugins.rigid.entity import RigidEntity

    cls = RigidEntity if kind == "rigid" else KinematicEntity
    shared = [n for n, v in vars(ArticulatedEntity).items() if callable(v) and not n.startswith("_")]
    unguarded = [n for n in shared if not getattr(getattr(cls, n), "_polyphys_entity_call", False)]
    assert shared and not unguarded, unguarded
    material = Rigid() if kind == "rigid" else polyphys.materials.Kinematic()
    sc = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, graph_capture=False))
    ent = sc.add_entity(morphs.Box(size=(0.2, 0.3, 0.4), pos=(0.1, 0.2, 1.0), euler=(10, 20, 30)), material)
    assert type(ent) is cls
    q = np.r_[0.1, 0.2, 1.0, 1.0, 0.0, 0.0, 0.0]
    for call in (ent.get_qpos, ent.get_links_pos, ent.get_pos, lambda: ent.set_qpos(q),
                 lambda: ent.set_dofs_velocity(np.zeros(6))):
        with pytest.raises(SceneStateError, match=rf"{cls.__name__}\.\w+\(\) before build"):
            call()
    sc.build(n_envs=2)
    before = ent.get_qpos()
    entered, release, errors = threading.Event(), threading.Event(), []

    def hold(scene):
        entered.set()
        release.wait(30)

    def run():
        try:
            sc.step()
        except BaseException as exc:     # reported below
            errors.append(exc)

    sc.add_pre_step_callback(hold)
    t = threading.Thread(target=run)
    t.start()
    try:
        assert entered.wait(30)
        for call in (ent.get_qpos, ent.get_links_quat, lambda: ent.set_qpos(np.tile(q, (2, 1))),
                     lambda: ent.set_dofs_velocity(np.ones((2, 6))), lambda: ent.set_pos([[0, 0, 2.0]] * 2)):
            with pytest.raises(SceneStateError, match="called from two threads"):
                call()
    finally:
        release.set()
        t.join(30)
    assert not errors
    sc._pre_step_callbacks.remove(hold)
    np.testing.assert_array_equal(sc.get_step_count(), [1, 1])
    ref = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, graph_capture=False))
    r = ref.add_entity(morphs.Box(size=(0.2, 0.3, 0.4), pos=(0.1, 0.2, 1.0), euler=(10, 20, 30)), material)
    ref.build(n_envs=2)
    np.testing.assert_array_equal(r.get_qpos(), before)
    ref.step()
    np.testing.assert_array_equal(ent.get_qpos(), r.get_qpos())     # the refused setters wrote nothing
