"""The rigid solver against MuJoCo (float64, constraints off in both engines, fluid/wind zeroed).

Tolerances: M, qfrc_bias and qacc are computed by the same algorithms (CRBA, RNE, LᵀDL along the tree)
in a different order of floating-point operations, so they agree to a few ulps times the condition
of the sums; 1e-8 relative (the issue's bound) leaves 6+ orders of margin. One step: the same update
from identical states, 1e-10 in norm. Trajectories: chaotic growth of round-off, bounded by 10× the
divergence of MuJoCo from itself under a 1e-12 perturbation (or 1e-6 when that is smaller).
"""

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from rigid_mjref import URDF_ARM, ZOO, dm_asset, gym_asset, no_constraint_model  # noqa: E402
from rigid_mjref import make_scene as _make_scene  # noqa: E402

MJ_INT = {"Euler": 0, "implicitfast": 3, "approximate_implicitfast": 3}


def _models():
    """Every model of the comparison; one whose package (a test extra) is not installed is listed
    as a visible skip naming the package, never dropped."""
    def param(path, ident, package, rel):
        if path:
            return pytest.param(path, id=ident)
        return pytest.param(None, id=ident, marks=pytest.mark.skip(
            reason=f"{rel} not found: {package} (a test extra) is not installed, or its version lacks the file"))

    out = [pytest.param(ZOO, id="zoo")]
    for name in ("humanoid.xml", "ant.xml", "half_cheetah.xml", "hopper.xml", "walker2d.xml",
                 "inverted_double_pendulum.xml", "reacher.xml", "swimmer.xml",
                 "humanoidstandup.xml", "inverted_pendulum.xml", "pusher.xml", "walker2d_v5.xml", "point.xml"):
        out.append(param(gym_asset(name), f"gym-{name[:-4]}", "gymnasium", name))
    for rel in ("suite/humanoid.xml", "suite/cartpole.xml", "suite/acrobot.xml", "suite/humanoid_CMU.xml",
                "suite/cheetah.xml", "suite/walker.xml", "suite/hopper.xml", "suite/finger.xml",
                "suite/pendulum.xml", "suite/reacher.xml", "suite/swimmer.xml", "suite/ball_in_cup.xml"):
        out.append(param(dm_asset(rel), f"dmc-{rel.split('/')[1][:-4]}", "dm-control", rel))
    return out


def _random_states(m, n, rng, scale=0.3):
    qs = np.tile(m.qpos0, (n, 1)) + rng.normal(size=(n, m.nq)) * scale
    for j in range(m.njnt):
        if m.jnt_type[j] in (0, 1):
            a = m.jnt_qposadr[j] + (3 if m.jnt_type[j] == 0 else 0)
            qs[:, a:a + 4] /= np.linalg.norm(qs[:, a:a + 4], axis=1, keepdims=True)
    return qs, rng.normal(size=(n, m.nv)), rng.uniform(-1.5, 1.5, size=(n, m.nu))


def _unsupported(m):
    """Models using what this version does not simulate (tendon actuators/springs, non-joint
    transmissions, activation dynamics). Fixed tendons without stiffness or damping act only through
    limits, i.e. constraints, which are off."""
    passive_tendons = m.ntendon > 0 and ((m.tendon_stiffness != 0).any() or (m.tendon_damping != 0).any())
    B = mujoco.mjtDisableBit
    flags = int(B.mjDSBL_SPRING) | int(B.mjDSBL_DAMPER) | int(B.mjDSBL_ACTUATION) | int(B.mjDSBL_CLAMPCTRL)
    unsupported_act = m.nu and ((m.actuator_trntype != 0).any() or (m.actuator_dyntype != 0).any())
    return passive_tendons or bool(m.opt.disableflags & flags) or m.nbody < 2 or bool(unsupported_act)


def _rel(a, b):
    return np.abs(a - b).max() / max(np.abs(b).max(), 1e-300)


@pytest.mark.parametrize("source", ["mjmodel", "importer"])
@pytest.mark.parametrize("xml", _models())
def test_mass_bias_qacc_vs_mujoco(xml, source, tmp_path):
    """``mjmodel``: the description is read from MuJoCo's compiled model; ``importer``: the same file
    through polyphys's MJCF importer (so both the dynamics and the import are checked)."""
    m = no_constraint_model(xml)
    if _unsupported(m):
        pytest.skip("model uses tendons or non-joint actuators")
    path = None
    if source == "importer":
        path = xml
        if xml.lstrip().startswith("<"):
            path = str(tmp_path / "model.xml")
            with open(path, "w") as fh:
                fh.write(xml.strip())
    n = 20
    scene, ent = _make_scene(m, n_envs=n, mjcf_file=path)
    rng = np.random.default_rng(1)
    qs, vs, us = _random_states(m, n, rng)
    ent.set_qpos(qs)
    ent.set_dofs_velocity(vs)
    if m.nu:
        ent.set_ctrl(us)
    d = mujoco.MjData(m)
    M_p, bias_p = ent.get_mass_mat(), ent.get_qfrc("bias")
    pas_p = ent.get_qfrc("passive") + ent.get_qfrc("external")
    act_p, qacc_p = ent.get_qfrc("actuator"), ent.get_qacc()
    for i in range(n):
        d.qpos[:], d.qvel[:] = qs[i], vs[i]
        if m.nu:
            d.ctrl[:] = us[i]
        mujoco.mj_forward(m, d)
        M = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, M)
        assert _rel(M_p[i], M) < 1e-8, f"state {i}: mass matrix"
        assert _rel(bias_p[i], d.qfrc_bias) < 1e-8, f"state {i}: qfrc_bias"
        assert np.abs(pas_p[i] - d.qfrc_passive).max() <= 1e-8 * max(1.0, np.abs(d.qfrc_passive).max())
        assert np.abs(act_p[i] - d.qfrc_actuator).max() <= 1e-8 * max(1.0, np.abs(d.qfrc_actuator).max())
        assert _rel(qacc_p[i], d.qacc) < 1e-8, f"state {i}: qacc"
        ids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, nm) for nm in ent.links]
        mine = [k for k, b in enumerate(ids) if b > 0]
        assert mine, "no link name matches a MuJoCo body"
        assert np.abs(ent.get_links_pos()[i][mine] - d.xpos[[ids[k] for k in mine]]).max() < 1e-12


@pytest.mark.parametrize("integrator", ["Euler", "implicitfast", "approximate_implicitfast"])
@pytest.mark.parametrize("xml", [pytest.param(ZOO, id="zoo"),
                                 pytest.param(gym_asset("humanoid.xml"), id="gym-humanoid")])
def test_one_step_vs_mujoco(xml, integrator):
    if xml is None:
        pytest.skip("gymnasium assets not installed")
    m = no_constraint_model(xml, integrator=MJ_INT[integrator])
    n = 5
    scene, ent = _make_scene(m, integrator=integrator, n_envs=n)
    qs, vs, us = _random_states(m, n, np.random.default_rng(2))
    ent.set_qpos(qs)
    ent.set_dofs_velocity(vs)
    if m.nu:
        ent.set_ctrl(us)
    scene.step()
    d = mujoco.MjData(m)
    for i in range(n):
        d.qpos[:], d.qvel[:] = qs[i], vs[i]
        if m.nu:
            d.ctrl[:] = us[i]
        mujoco.mj_step(m, d)
        assert np.linalg.norm(ent.get_qpos()[i] - d.qpos) < 1e-10
        assert np.linalg.norm(ent.get_dofs_velocity()[i] - d.qvel) < 1e-10


@pytest.mark.parametrize("integrator", ["Euler", "implicitfast"])
@pytest.mark.parametrize("xml, dt", [pytest.param(ZOO, 0.001, id="zoo"),
                                     pytest.param(gym_asset("humanoid.xml"), None, id="gym-humanoid")])
def test_trajectory_vs_mujoco(xml, dt, integrator):
    """0.5 s: ZOO (every joint type, actuators, damping, springs; a smaller step keeps its light
    bodies stable under explicit Euler) and the gymnasium humanoid falling without contacts."""
    if xml is None:
        pytest.skip("gymnasium assets not installed")
    m = no_constraint_model(xml, integrator=MJ_INT[integrator])
    if dt is not None:
        m.opt.timestep = dt
    qs, vs, us = _random_states(m, 1, np.random.default_rng(3))
    us[:] = 0.0     # ZOO's affine actuator has negative damping for some controls: physically unstable
    steps = int(round(0.5 / m.opt.timestep))

    def mj_run(q0):
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:], d.ctrl[:] = q0, vs[0], us[0]
        for _ in range(steps):
            mujoco.mj_step(m, d)
        return d.qpos.copy()

    ref = mj_run(qs[0])
    pert = qs[0].copy()
    pert[7] += 1e-12                     # a hinge angle
    self_div = np.linalg.norm(mj_run(pert) - ref)
    tol = max(1e-6, 10 * self_div)
    scene, ent = _make_scene(m, integrator=integrator)
    ent.set_qpos(qs[0])
    ent.set_dofs_velocity(vs[0])
    ent.set_ctrl(us[0])
    for _ in range(steps):
        scene.step()
    assert np.linalg.norm(ent.get_qpos() - ref) < tol


@pytest.mark.parametrize("xml", [pytest.param(ZOO, id="zoo"),
                                 pytest.param(gym_asset("humanoid.xml"), id="gym-humanoid")])
def test_float32_vs_mujoco(xml):
    """float32: M and qfrc_bias are sums of at most a few dozen products, so their relative error is
    ~30 ulp (float32 ulp 6e-8): 1e-5 bounds it; qacc = M⁻¹f is further amplified by cond(M)
    (~1e2-1e3 for these models): 1e-3."""
    if xml is None:
        pytest.skip("gymnasium assets not installed")
    m = no_constraint_model(xml)
    n = 10
    scene, ent = _make_scene(m, n_envs=n, precision="32")
    qs, vs, us = _random_states(m, n, np.random.default_rng(5))
    ent.set_qpos(qs)
    ent.set_dofs_velocity(vs)
    if m.nu:
        ent.set_ctrl(us)
    d = mujoco.MjData(m)
    for i in range(n):
        d.qpos[:], d.qvel[:] = qs[i], vs[i]
        if m.nu:
            d.ctrl[:] = us[i]
        mujoco.mj_forward(m, d)
        M = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, M)
        assert _rel(ent.get_mass_mat()[i], M) < 1e-5
        assert _rel(ent.get_qfrc("bias")[i], d.qfrc_bias) < 1e-5
        assert _rel(ent.get_qacc()[i], d.qacc) < 1e-3


@pytest.mark.validate
@pytest.mark.parametrize("integrator", ["Euler", "implicitfast"])
@pytest.mark.parametrize("xml", _models())
def test_trajectory_vs_mujoco_all_models(xml, integrator, tmp_path):
    """(tox -e validate) 0.5 s of every fixture through the MJCF importer, zero ctrl, from a random
    state: within max(1e-6, 10× MuJoCo's divergence from itself under a 1e-12 perturbation)."""
    m = no_constraint_model(xml, integrator=MJ_INT[integrator])
    if _unsupported(m):
        pytest.skip("model uses tendons or non-joint actuators")
    path = xml
    if xml.lstrip().startswith("<"):
        path = str(tmp_path / "model.xml")
        with open(path, "w") as fh:
            fh.write(xml.strip())
    qs, vs, _ = _random_states(m, 1, np.random.default_rng(7), scale=0.1)
    steps = int(round(0.5 / m.opt.timestep))

    def mj_run(q0):
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:] = q0, vs[0]
        for _ in range(steps):
            mujoco.mj_step(m, d)
        return d.qpos.copy()

    ref = mj_run(qs[0])
    pert = qs[0].copy()
    pert[-1] += 1e-12
    tol = max(1e-6, 10 * np.linalg.norm(mj_run(pert) - ref))
    scene, ent = _make_scene(m, integrator=integrator, mjcf_file=path)
    ent.set_qpos(qs[0])
    ent.set_dofs_velocity(vs[0])
    for _ in range(steps):
        scene.step()
    assert np.linalg.norm(ent.get_qpos() - ref) < tol


def test_urdf_through_the_importer_vs_mujoco_urdf(tmp_path):
    """MuJoCo compiles URDF itself: M, qfrc_bias, qacc of polyphys's URDF import agree to 1e-8."""
    import polyphys
    from polyphys import morphs
    from polyphys.plugins.rigid import RigidOptions
    from polyphys.plugins.rigid.materials import Rigid

    path = tmp_path / "arm.urdf"
    path.write_text(URDF_ARM)
    m = mujoco.MjModel.from_xml_path(str(path))
    m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=float(m.opt.timestep), precision="64",
                                                   gravity=tuple(m.opt.gravity)),
                           rigid=RigidOptions(enable_collision=False, disable_constraint=True))
    ent = scene.add_entity(morphs.URDF(file=str(path)), Rigid())
    scene.build(n_envs=5)
    qs, vs, _ = _random_states(m, 5, np.random.default_rng(9))
    ent.set_qpos(qs)
    ent.set_dofs_velocity(vs)
    d = mujoco.MjData(m)
    for i in range(5):
        d.qpos[:], d.qvel[:] = qs[i], vs[i]
        mujoco.mj_forward(m, d)
        M = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, M)
        assert _rel(ent.get_mass_mat()[i], M) < 1e-8
        assert _rel(ent.get_qfrc("bias")[i], d.qfrc_bias) < 1e-8
        assert _rel(ent.get_qacc()[i], d.qacc) < 1e-8


SPINNER = """<mujoco><option timestep="0.01" gravity="0 0 0"/><worldbody>
  <body pos="0.31 -0.27 0.53" euler="23 -31 47"><freejoint/>
    <inertial pos="0.07 -0.04 0.05" quat="0.9 0.1 0.3 -0.2" mass="1.7" diaginertia="0.31 0.19 0.14"/></body>
</worldbody></mujoco>"""
# the same body with a welded (jointless) child: MuJoCo counts it standalone, its composite body is re-solved
SPINNER_WELDED = SPINNER.replace("</body>", """<body pos="0.2 0.1 -0.05" euler="10 50 -20">
    <inertial pos="0.03 0 0.02" mass="0.5" diaginertia="0.01 0.02 0.025"/></body></body>""")


# the CoM at the body origin (rotated principal axes): the re-solve's exact-zero branch (kernels/integration.cpp)
SPINNER_CENTRED = SPINNER.replace('pos="0.07 -0.04 0.05"', 'pos="0 0 0"')


@pytest.mark.parametrize("xml", [pytest.param(SPINNER, id="single"), pytest.param(SPINNER_WELDED, id="welded-child"),
                                 pytest.param(SPINNER_CENTRED, id="centred")])
@pytest.mark.parametrize("w", [pytest.param((4.0, -7.0, 9.0), id="tumbling"), pytest.param((0.3, 25.0, -0.4), id="fast")])
def test_spinning_free_body_vs_mujoco(xml, w):
    """A standalone asymmetric free body (CoM off the body origin, rotated principal axes, generic pose, no
    gravity; alone or with a welded child) spinning fast, 200 implicitfast steps in MuJoCo-compatible mode
    against mj_step: MuJoCo >= 3.11 re-solves its 6×6 block with the bias-force derivative (docs/semantics.md
    §R2a); without that re-solve one step already differs by 2e-3 to 0.14 in qvel. Tolerance: the two engines
    take the same update in a different order of operations, ~10 ulp (float64, 2e-15 relative) per step; a
    torque-free spin away from the separatrix is not exponentially unstable, so the round-off grows at most
    linearly (phase drift): 200 steps × 2e-15 × |state| (~30) ≈ 1e-11; 1e-9 in norm leaves two orders of
    margin."""
    m = no_constraint_model(xml, integrator=MJ_INT["implicitfast"])
    v0 = np.array([0.4, -0.3, 0.2, *w])
    d = mujoco.MjData(m)
    d.qvel[:] = v0
    scene, ent = _make_scene(m, integrator="implicitfast")
    ent.set_qpos(d.qpos.copy())
    ent.set_dofs_velocity(v0)
    err = 0.0
    for _ in range(200):
        mujoco.mj_step(m, d)
        scene.step()
        err = max(err, np.linalg.norm(ent.get_qpos() - d.qpos) + np.linalg.norm(ent.get_dofs_velocity() - d.qvel))
    assert err < 1e-9
    assert np.linalg.norm(d.qvel[3:] - v0[3:]) > 0.1     # it tumbles: the body rates change (gyroscopic term)
