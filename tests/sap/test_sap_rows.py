"""SAP coupler with the rigid solver's own constraint rows in the same convex problem (docs/sap.md,
"Which rows SAP takes over"): joint limits (Drake's SapLimitConstraint), DOF frictionloss (a
regularised box constraint) and connect/weld/joint equalities (SapHolonomicConstraint).

Near-rigid regime (k = inf): a row's R = β²/(4π²)·w (β = constraint_near_rigid_threshold = 0.1, w =
J A⁻¹ Jᵀ = 1/I for a lone hinge of inertia I about its axis) and v̂ = −g/(h + τ), τ = h. At rest v_c = 0,
so γ = v̂/R and a limit held by a torque T (γ = h·T) is passed by exactly
|g| = (h + τ)·R·h·T = 2h²·β²/(4π²)·T/I (rad) — the penetration bound of the tests below."""

import math

import numpy as np
import polyphys
import pytest
from polyphys import morphs as M
from polyphys.couplers.sap.options import SapOptions
from polyphys.options import SimOptions
from polyphys.plugins.rigid.codes import ConstraintType
from polyphys.plugins.rigid.materials import Rigid
from sapscenes import sap

G = 9.81
BETA = 0.1
TWO_PI_SQ = 4.0 * math.pi ** 2

# pendulum: a hinge off the origin with a tilted axis, the body rotated; explicit mass properties so
# that MuJoCo, Drake and polyphys share them; the joint's upper limit lies before the bottom of the
# swing, so gravity holds the pendulum against it
P_POS = np.array([0.3, -0.2, 0.7])
P_QUAT = np.array([0.9, 0.2, -0.1, 0.3]) / np.linalg.norm([0.9, 0.2, -0.1, 0.3])    # w x y z
P_AXIS = np.array([0.2, 1.0, 0.1]) / np.linalg.norm([0.2, 1.0, 0.1])
P_COM = np.array([0.25, 0.03, -0.04])
P_MASS = 0.8
P_I = np.array([0.004, 0.02, 0.018])
P_RANGE = (-0.7, 0.45)
P_MARGIN = 0.1


def _pendulum_xml(margin):
    return f"""<mujoco><compiler angle="radian"/><option gravity="0 0 -{G}"/><worldbody>
  <geom type="plane" size="3 3 .1" pos="0 0 -3"/>
  <body pos="{' '.join(map(str, P_POS))}" quat="{' '.join(map(str, P_QUAT))}">
    <joint name="j" type="hinge" axis="{' '.join(map(str, P_AXIS))}" range="{P_RANGE[0]} {P_RANGE[1]}" limited="true"
      margin="{margin}"/>
    <inertial pos="{' '.join(map(str, P_COM))}" mass="{P_MASS}" diaginertia="{' '.join(map(str, P_I))}"/>
    <geom type="sphere" size=".03" pos="{' '.join(map(str, P_COM))}" contype="0" conaffinity="0" mass="0"/>
  </body></worldbody></mujoco>"""


def _axis_inertia():
    """Inertia about the hinge axis (body frame): the central inertia plus m·(|r|² − (a·r)²)."""
    a, r = P_AXIS, P_COM
    return float(a @ np.diag(P_I) @ a + P_MASS * (r @ r - (a @ r) ** 2))


def _polyphys_pendulum(tmp_path, h, steps, opts=None, margin=P_MARGIN):
    xml = tmp_path / "pendulum.xml"
    xml.write_text(_pendulum_xml(margin))
    scene = polyphys.Scene(sim=SimOptions(dt=h, substeps=1, precision="64"), coupler=opts or SapOptions())
    arm = scene.add_entity(M.MJCF(file=str(xml)), Rigid())
    scene.build()
    solver = next(s for s in scene.solvers if s.name == "rigid")
    q = []
    for _ in range(steps):
        scene.step()
        q.append(float(arm.get_dofs_position()[0]))
    return scene, arm, solver, np.array(q)


def _mujoco_gravity_torque(q):
    mujoco = pytest.importorskip("mujoco")
    m = mujoco.MjModel.from_xml_string(_pendulum_xml(0.0))
    d = mujoco.MjData(m)
    d.qpos[0] = q
    mujoco.mj_forward(m, d)
    return float(d.qfrc_bias[0])          # at v = 0: the generalized gravity force, sign-flipped (M·a = −bias)


def test_pendulum_rests_on_its_limit(tmp_path):
    """Settled against the upper limit: the limit's row force equals the gravity torque (MuJoCo's
    qfrc_bias at the settled angle) within 1e-3, and the angle is past the limit by the near-rigid
    penetration 2h²β²/(4π²)·T/I to 1 % (an exact steady state of the discrete problem)."""
    h = 0.002
    scene, arm, solver, q = _polyphys_pendulum(tmp_path, h, 600)
    q_end = q[-1]
    T = _mujoco_gravity_torque(q_end)               # the torque the limit must hold (about the dof)
    cf = solver.get_constraint_forces()
    rows = np.nonzero(cf["valid"] & (cf["type"] == ConstraintType.LIMIT))[0]
    assert len(rows) == 1
    f = cf["force"][rows[0]]
    # the upper side's row: J = −1, so qfrc = −f balances the gravity generalized force −bias
    assert abs(cf["qfrc_constraint"][0] - T) <= 1e-3 * abs(T), (cf["qfrc_constraint"], T)
    assert f > 0 and abs(f + T) <= 1e-3 * abs(T)              # a limit pushes: f ≥ 0, qfrc = −f = T
    I = _axis_inertia()
    pen = 2.0 * h * h * BETA ** 2 / TWO_PI_SQ * abs(T) / I
    assert abs((q_end - P_RANGE[1]) - pen) <= 0.01 * pen, (q_end - P_RANGE[1], pen)
    # at rest up to the stopping rule: ‖D∇ℓ‖ ≤ rtol·‖D·Jᵀγ‖ and H ≥ A bound the velocity by rtol·h·|T|/I
    assert abs(arm.get_dofs_velocity()[0]) <= 1e-6 * h * abs(T) / I


def test_pendulum_angle_against_mujoco(tmp_path):
    """MuJoCo's own limit is soft (solref 0.02 s, solimp 0.9–0.95): at rest its row force
    f = aref/R with aref = −K·imp·pos and R = (1 − imp)/imp·invweight, so MuJoCo settles past the
    limit by pen = T·(1 − imp(pen))·invweight/(K·imp(pen)²), K = 1/(dmax²·tc²): the expected difference between its
    settled angle and SAP's (whose penetration is ~1e-7 rad). Agreement within 2 % of that
    difference (MuJoCo's invweight is its dof_invweight0; its implicit step adds no torque at rest)."""
    mujoco = pytest.importorskip("mujoco")
    h = 0.002
    _, _, _, q = _polyphys_pendulum(tmp_path, h, 600, margin=0.0)
    m = mujoco.MjModel.from_xml_string(_pendulum_xml(0.0))
    m.opt.timestep = h
    d = mujoco.MjData(m)
    for _ in range(3000):
        mujoco.mj_step(m, d)
    assert abs(d.qvel[0]) < 1e-6
    T = _mujoco_gravity_torque(d.qpos[0])
    dmin, dmax, width, mid, power = m.jnt_solimp[0]
    tc = m.jnt_solref[0, 0]
    K = 1.0 / (dmax ** 2 * tc ** 2)

    def imp(pos):                                    # MuJoCo's impedance curve of solimp
        x = min(1.0, pos / width)
        y = x ** power / mid ** (power - 1) if x <= mid else 1 - (1 - x) ** power / (1 - mid) ** (power - 1)
        return dmin + y * (dmax - dmin)

    lo, hi = 0.0, 0.1                                # bisection on pen = T·(1 − imp)·invweight/(K·imp²)
    for _ in range(100):
        pen = 0.5 * (lo + hi)
        i = imp(pen)
        lo, hi = (pen, hi) if abs(T) * (1 - i) * m.dof_invweight0[0] / (K * i * i) > pen else (lo, pen)
    want = pen
    assert (d.qpos[0] - P_RANGE[1]) > 1000 * (q[-1] - P_RANGE[1]) > 0
    assert abs((d.qpos[0] - q[-1]) - want) <= 0.02 * want, (d.qpos[0] - q[-1], want)


def _drake_pendulum(h, steps):
    from pydrake.all import (
        AddMultibodyPlant,
        DiagramBuilder,
        FixedOffsetFrame,
        MultibodyPlantConfig,
        Quaternion,
        RevoluteJoint,
        RigidTransform,
        RotationalInertia,
        Simulator,
        SpatialInertia,
    )

    b = DiagramBuilder()
    plant, _ = AddMultibodyPlant(MultibodyPlantConfig(time_step=h, discrete_contact_approximation="sap"), b)
    body = plant.AddRigidBody("pendulum", SpatialInertia.MakeFromCentralInertia(
        P_MASS, P_COM, RotationalInertia(*P_I)))
    X_WJ = RigidTransform(Quaternion(P_QUAT), P_POS)
    frame = plant.AddFrame(FixedOffsetFrame("hinge", plant.world_frame(), X_WJ))
    plant.AddJoint(RevoluteJoint("j", frame, body.body_frame(), P_AXIS, P_RANGE[0], P_RANGE[1], 0.0))
    plant.Finalize()
    diagram = b.Build()
    sim = Simulator(diagram)
    ctx = plant.GetMyMutableContextFromRoot(sim.get_mutable_context())
    out = []
    for i in range(steps):
        sim.AdvanceTo((i + 1) * h)
        out.append(float(plant.GetPositions(ctx)[0]))
    return np.array(out)


def test_pendulum_limit_matches_drake(tmp_path):
    """Drake's discrete SAP (MultibodyPlant, time step h, its joint limits: SapLimitConstraint with
    β = 0.1, τ = h, k = 1e12, added within a window 2h·max(|v|, |v*|) of the limit) on the same
    pendulum, with a joint margin (0.1 rad) wider than that window: polyphys then builds the limit row
    earlier than Drake, but a row whose limit is at least 2h·|v| away is inactive (v̂ = −g/(2h) ≤ v: γ =
    0), so the problems have the same solution and the swing, the impact and the rest agree: angles
    within 1e-6 rad over the whole run (the solvers' rtol 1e-6 on velocities ~3 rad/s moves the angle
    by ~h·3e-6 per step), the settled angle within 1e-9 rad (Drake's 1/(h·k·(h+τ)) = 1.25e-7 is
    negligible beside β²w/(4π²) = 1.7e-2 s/kg·m²). Margin 0: the next test."""
    pytest.importorskip("pydrake.all")
    h = 0.002
    d = _drake_pendulum(h, 600)
    _, _, _, q = _polyphys_pendulum(tmp_path, h, 600)
    np.testing.assert_allclose(q, d, atol=1e-6)
    assert abs(q[-1] - d[-1]) < 1e-9


def test_pendulum_swings_into_its_limit_like_drake(tmp_path):
    """Margin 0 (MJCF's default): the limit row exists only through Drake's window (docs/sap.md,
    "Which rows SAP takes over"), and acts speculatively (v̂ = −g/(2h) with g > 0), so like Drake the
    pendulum is stopped AT the limit (the gap halves each step) instead of passing it by up to h·|v|
    for a step (margin-only activation: 2e-3 rad here, and a 6e-3 rad difference after). The problems
    are the same each step; both solvers stop when ‖D∇ℓ‖ ≤ rtol·max(‖D·A·v‖, ‖D·Jᵀγ‖) (rtol 1e-6, also
    Drake's default), H ≥ A, so a step's velocity is off by at most rtol·max(|v|, |γ|/I) ≤ rtol·v_max
    (the impact impulse γ ≤ I·v_max) and the angles drift apart by ≤ 2·rtol·v_max·h per step:
    2·rtol·v_max·N·h over the run, doubled for the gravity torque's sensitivity to the angle over the
    swing (cosh(ω·t_impact) ≈ 1.5). At rest the gap contracts by ½ a step (near-rigid, τ = h), so the
    settled angles differ by ≤ 2h·rtol·|γ|/I = 2h²·rtol·|T|/I. Approaching the limit critically damped,
    the angle never passes it by more than the rest penetration 2h²β²/(4π²)·|T|/I (1 % as above)."""
    pytest.importorskip("pydrake.all")
    h, n = 0.002, 600
    rtol = SapOptions().rtol
    d = _drake_pendulum(h, n)
    _, _, _, q = _polyphys_pendulum(tmp_path, h, n, margin=0.0)
    v_max = np.abs(np.diff(np.concatenate([[0.0], d]))).max() / h
    assert v_max > 4.0                                          # it swings into the limit fast
    np.testing.assert_allclose(q, d, rtol=0, atol=2 * (2 * rtol * v_max * n * h))
    T = _mujoco_gravity_torque(q[-1])
    I = _axis_inertia()
    assert abs(q[-1] - d[-1]) <= 2 * h * h * rtol * abs(T) / I, (q[-1] - d[-1])
    pen = 2.0 * h * h * BETA ** 2 / TWO_PI_SQ * abs(T) / I
    assert q.max() - P_RANGE[1] <= 1.01 * pen, (q.max() - P_RANGE[1], pen)


def test_ball_limit_keeps_the_margin_activation(tmp_path):
    """A ball joint's limit (its rotation angle against max(range), MuJoCo's; Drake has none) keeps
    the margin-only activation under SAP: no speculative window. Spinning at a constant ω about a
    fixed axis (gravity off, isotropic inertia), the angle is ω·t exactly until the first step that
    starts past the limit; the step that crosses it has no limit row, however close to the limit it
    starts (within 2h·ω), and ends past the limit by ω·t − max(range)."""
    h, w, lim = 0.002, 3.0, 0.5
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    xml = tmp_path / "ball.xml"
    xml.write_text(f"""<mujoco><compiler angle="radian"/><option gravity="0 0 0"/><worldbody>
      <body pos="0.4 -0.3 0.5" quat="{' '.join(map(str, P_QUAT))}">
        <joint name="b" type="ball" range="0 {lim}" limited="true"/>
        <inertial pos="0 0 0" mass="0.6" diaginertia="0.01 0.01 0.01"/>
        <geom type="sphere" size=".03" contype="0" conaffinity="0" mass="0"/>
      </body></worldbody></mujoco>""")
    scene = polyphys.Scene(sim=SimOptions(dt=h, substeps=1, precision="64"), coupler=SapOptions())
    ball = scene.add_entity(M.MJCF(file=str(xml)), Rigid())
    scene.build()
    solver = next(s for s in scene.solvers if s.name == "rigid")
    ball.set_dofs_velocity(w * axis)
    crossed = None
    for i in range(1, 120):
        scene.step()
        qw, *qv = ball.get_qpos()
        ang = 2.0 * math.atan2(np.linalg.norm(qv), qw)
        cf = solver.get_constraint_forces()
        n_lim = int((cf["valid"] & (cf["type"] == ConstraintType.LIMIT)).sum())
        if ang <= lim:
            assert n_lim == 0 and abs(ang - w * i * h) <= 1e-12, (i, ang, n_lim)
            continue
        crossed = i
        break
    assert crossed is not None
    start = w * (crossed - 1) * h
    assert 0 < lim - start < 2 * h * w                          # inside Drake's window at the step's start
    assert n_lim == 0 and abs(ang - w * crossed * h) <= 1e-12, (ang, n_lim)


# ---------------------------------------------------------------- DOF frictionloss

F_LOSS = 0.3


def _rotor(tmp_path, torque, h=0.002, steps=500, sigma=1e-3):
    """A rotor on a tilted hinge (gravity off, the centre of mass on the axis: no other torque) with
    frictionloss F_LOSS, driven by a constant dof torque."""
    xml = tmp_path / "rotor.xml"
    xml.write_text(f"""<mujoco><compiler angle="radian"/><option gravity="0 0 0"/><worldbody>
      <body pos="-0.3 0.4 0.6" quat="{' '.join(map(str, P_QUAT))}">
        <joint name="j" type="hinge" axis="{' '.join(map(str, P_AXIS))}" frictionloss="{F_LOSS}"/>
        <inertial pos="0 0 0" mass="{P_MASS}" diaginertia="{' '.join(map(str, P_I))}"/>
        <geom type="sphere" size=".03" contype="0" conaffinity="0" mass="0"/>
      </body></worldbody></mujoco>""")
    scene = polyphys.Scene(sim=SimOptions(dt=h, substeps=1, precision="64"),
                           coupler=SapOptions(frictionloss_sigma=sigma))
    rotor = scene.add_entity(M.MJCF(file=str(xml)), Rigid())
    scene.build()
    rotor.control_dofs_force(np.array([torque]))
    q, v = [], []
    for _ in range(steps):
        scene.step()
        q.append(float(rotor.get_dofs_position()[0]))
        v.append(float(rotor.get_dofs_velocity()[0]))
    I = float(P_AXIS @ np.diag(P_I) @ P_AXIS)
    return scene, np.array(q), np.array(v), I


def test_frictionloss_holds_below_its_value(tmp_path):
    """|τ| < F: the box constraint |γ| ≤ h·F holds the rotor up to its regularisation R = σ·w (w =
    1/I): v_{n+1} = (v_n + h·τ/I)/(1 + 1/(I·R)) creeps towards v_∞ = h·τ·R = σ·h·τ/I (< σ·h·F/I),
    from below. Checked: 0 < v ≤ v_∞ (+ the stopping rule's rtol·h·τ/I), the angle ≤ v_∞·t, and the
    row force −τ (it balances the torque)."""
    h, tau, sigma = 0.002, 0.7 * F_LOSS, 1e-3
    scene, q, v, I = _rotor(tmp_path, tau, h=h, sigma=sigma)
    v_inf = sigma * h * tau / I
    slack = 1e-6 * h * tau / I
    assert np.all(v > 0) and np.all(v <= v_inf + slack), (v.max(), v_inf)
    assert abs(v[-1] - v_inf) <= 1e-3 * v_inf + slack          # the recursion contracts by σ/(1 + σ) a step
    assert 0 < q[-1] <= v_inf * h * len(q) * (1 + 1e-9)
    solver = next(s for s in scene.solvers if s.name == "rigid")
    cf = solver.get_constraint_forces()
    rows = np.nonzero(cf["valid"] & (cf["type"] == ConstraintType.FRICTION))[0]
    assert len(rows) == 1 and abs(cf["force"][rows[0]] + tau) <= 1e-3 * tau


def test_frictionloss_slides_above_its_value(tmp_path):
    """τ > F: the box side −h·F is active once the rotor moves, so it accelerates at (τ − F)/I
    (within 1 %; exact but for the first substep, where v starts from rest inside the box)."""
    h, tau = 0.002, 2.5 * F_LOSS
    _, q, v, I = _rotor(tmp_path, tau, h=h, steps=300)
    a = (v[-1] - v[100]) / (h * (len(v) - 1 - 100))
    want = (tau - F_LOSS) / I
    assert abs(a - want) <= 0.01 * want, (a, want)


# ---------------------------------------------------------------- equalities

ARM = """<mujoco><compiler angle="radian"/><option gravity="0 0 -{g}"/><worldbody>
  <body name="l0" pos="0.2 -0.1 1.0" quat="0.95 0.1 0.2 -0.15"><joint name="j0" type="hinge" axis="0.1 1 0.2"/>
    <inertial pos="0.15 0 0" mass="1.2" diaginertia="0.002 0.012 0.011"/>
    <geom type="sphere" size=".02" contype="0" conaffinity="0" mass="0"/>
    <body name="l1" pos="0.3 0 0.02" quat="0.98 0 0.2 0"><joint name="j1" type="hinge" axis="0 0.9 0.3"/>
      <inertial pos="0.12 0.01 0" mass="0.7" diaginertia="0.001 0.006 0.006"/>
      <geom type="sphere" size=".02" contype="0" conaffinity="0" mass="0"/>
    </body></body>
  <body name="box" pos="{bx}"><freejoint/><inertial pos="0 0 0" mass="0.5" diaginertia="0.002 0.003 0.004"/>
    <geom type="sphere" size=".02" contype="0" conaffinity="0" mass="0"/></body>
  </worldbody><equality>{eq}</equality></mujoco>"""
ANCHOR = np.array([0.24, 0.0, 0.0])           # on l1 (its frame)
LEVER = 0.3 + 0.02 + 0.24                      # ≥ the anchor's distance from j0's axis


def _arm_anchor_world():
    mujoco = pytest.importorskip("mujoco")
    m = mujoco.MjModel.from_xml_string(ARM.format(g=G, eq="", bx="0 0 0"))
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    return d.xpos[2] + d.xmat[2].reshape(3, 3) @ ANCHOR


def _initial_rel(m):
    """q_l1⁻¹ ⊗ q_box at qpos0 (the pose a weld without relpose holds)."""
    mujoco = pytest.importorskip("mujoco")
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    rel, inv = np.empty(4), np.empty(4)
    mujoco.mju_negQuat(inv, d.xquat[2])
    mujoco.mju_mulQuat(rel, inv, d.xquat[3])
    return rel


def _run_arm(tmp_path, eq, bx, h, steps, coupler=True):
    """Run the arm; per step: the model's energy (MuJoCo's mj_energyPos/Vel of the same model at
    polyphys' state), the connect violation |p_l1(anchor) − p_box|, |q̇0| + |q̇1| and, under SAP,
    max R·|γ| over the equality rows."""
    mujoco = pytest.importorskip("mujoco")
    xml_text = ARM.format(g=G, eq=eq, bx=bx)
    xml = tmp_path / "arm.xml"
    xml.write_text(xml_text)
    kw = {"coupler": SapOptions()} if coupler else {}
    scene = polyphys.Scene(sim=SimOptions(dt=h, substeps=1, precision="64"), **kw)
    arm = scene.add_entity(M.MJCF(file=str(xml)), Rigid())
    scene.build()
    m = mujoco.MjModel.from_xml_string(xml_text)
    m.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
    d = mujoco.MjData(m)
    out = {"E": [], "g": [], "w": [], "Rg": [], "q": [], "gr": [], "Rgr": [], "ww": []}
    b = sap(scene)._rigid["rigid"] if coupler else None
    rel0 = None
    for _ in range(steps):
        scene.step()
        d.qpos[:] = arm.get_qpos()
        d.qvel[:] = arm.get_dofs_velocity()
        mujoco.mj_forward(m, d)
        mujoco.mj_energyPos(m, d)
        mujoco.mj_energyVel(m, d)
        out["E"].append(d.energy.sum())
        out["g"].append(np.linalg.norm(d.xpos[2] + d.xmat[2].reshape(3, 3) @ ANCHOR - d.xpos[3]))
        out["w"].append(abs(d.qvel[0]) + abs(d.qvel[1]))
        out["q"].append(d.qpos[:2].copy())
        # |d(ω_l1)/dt| along a step at constant joint rates: |q̇0·q̇1·(a0 × a1)| (a1 turns about a0)
        out["ww"].append(abs(d.qvel[0] * d.qvel[1]) * np.linalg.norm(np.cross(d.xaxis[0], d.xaxis[1])))
        # the weld's rotational violation sin(θ/2) = |vec(q_rel0⁻¹ ⊗ q_rel)|, q_rel = q_l1⁻¹ ⊗ q_box (the
        # norm of the weld rows' error quaternion, docs/constraint.md; torquescale 1)
        rel = np.empty(4)
        inv = np.empty(4)
        mujoco.mju_negQuat(inv, d.xquat[2])
        mujoco.mju_mulQuat(rel, inv, d.xquat[3])
        if rel0 is None:
            rel0 = _initial_rel(m)
        err = np.empty(4)
        mujoco.mju_negQuat(inv, rel0)
        mujoco.mju_mulQuat(err, inv, rel)
        out["gr"].append(np.linalg.norm(err[1:]))
        if b is not None:
            n = int(b.rigid.rigid_dynamics(scene.layout.partitions[0]).n_rows.numpy()[0])
            Rg = np.abs(b.rR.numpy()[0, :n] * b.rgam.numpy()[0, :n])
            out["Rg"].append(Rg[:3].max())                     # translational rows (0 .. 2)
            out["Rgr"].append(np.linalg.norm(Rg[3:6]) if n >= 6 else 0.0)    # a weld's rotational rows (3 .. 5)
    return {k: np.array(x) for k, x in out.items()}


@pytest.mark.parametrize("eq", ['<connect body1="l1" body2="box" anchor="0.24 0 0"/>',
                                '<weld body1="l1" body2="box"/>'], ids=["connect", "weld"])
def test_equality_holds_a_body_on_a_swinging_arm(tmp_path, eq):
    """A free body held at a two-hinge arm's tip by a connect (ball) or weld equality (6 rows: its
    translation rows at the body's centre, the initial relative pose), swinging under gravity for
    2 s; the translational violation is checked. Per row (near-rigid, τ = h):
    g_{n+1} = g_n/2 − h·R·γ + ½h²·g̈_curv (the linearisation's error: the anchor's centripetal
    acceleration ≤ (|q̇0| + |q̇1|)²·lever), so
    |g| ≤ 2h·max R|γ| + h²·max(|q̇0| + |q̇1|)²·lever. The energy drift (semi-implicit Euler of the
    swing, O(h)) is at most twice the rigid solver's own constraint solve's on the same model.

    The weld's rotational rows: g_r = vec(e) (e the error quaternion, |g_r| = sin(θ/2), θ the
    relative rotation; torquescale 1), ġ_r = J·v = ½·vec(ω_rel ⊗ e) in the box's frame, ω_rel = ω_l1
    − ω_box. Over a step at constant joint rates the box turns at a constant ω, l1's ω changes at
    q̇0·q̇1·(a0 × a1) (its second axis a1 turns about a0), so the linearisation's error per step is
    ½h²·|g̈_r| ≤ ¼h²·|q̇0·q̇1|·|a0 × a1| plus terms in ω_rel·ω (|ω_rel| ≈ 2|v_c| ≤ |g_r|/h near-rigid) that
    weaken the ½ contraction by at most h·max(|q̇0| + |q̇1|):
    |g_r| ≤ (h·max‖R·γ_r‖ + ¼h²·max|q̇0·q̇1|·|a0 × a1|)/(½ − h·max(|q̇0| + |q̇1|))."""
    h = 0.002
    bx = " ".join(map(str, _arm_anchor_world()))
    r = _run_arm(tmp_path, eq, bx, h, 1000)
    bound = 2 * h * r["Rg"].max() + h * h * r["w"].max() ** 2 * LEVER
    assert r["g"].max() <= bound, (r["g"].max(), bound)
    if "weld" in eq:
        bound_r = (h * r["Rgr"].max() + 0.25 * h * h * r["ww"].max()) / (0.5 - h * r["w"].max())
        assert r["gr"].max() <= bound_r, (r["gr"].max(), bound_r)
        assert r["gr"].max() > 0.1 * bound_r             # the curvature term dominates: the bound is not vacuous
    assert r["w"].max() > 5.0                                  # it does swing
    own = _run_arm(tmp_path, eq, bx, h, 1000, coupler=False)
    assert np.abs(r["E"] - r["E"][0]).max() <= 2 * np.abs(own["E"] - own["E"][0]).max()


def test_joint_coupler_keeps_the_ratio(tmp_path):
    """A joint equality q1 = 0.5·q0 (linear: no curvature term): |q1 − 0.5·q0| ≤ 2h·max R|γ| over 2 s
    of swinging."""
    h = 0.002
    r = _run_arm(tmp_path, '<joint joint1="j1" joint2="j0" polycoef="0 0.5 0 0 0"/>', "1 1 1", h, 1000)
    err = np.abs(r["q"][:, 1] - 0.5 * r["q"][:, 0])
    assert err.max() <= 2 * h * r["Rg"].max() * (1 + 1e-6), (err.max(), 2 * h * r["Rg"].max())
    assert np.ptp(r["q"][:, 0]) > 1.0


# ---------------------------------------------------------------- limits and contacts together (gymnasium reacher)

TORQUES = np.array([[4.0, 3.0, 0.5, -0.2], [3.0, -3.0, -0.2, 0.4]])    # joint0, joint1, target_x, target_y
REACH_H = 0.0025                                                        # dt 0.005, 2 substeps
TARGET_MASS = 1000.0 * 4.0 / 3.0 * math.pi * 0.009 ** 3                 # the target sphere (inertiafromgeom)


def _reacher(n_envs, rows, opts=None, steps=0, substeps=2, capture=True):
    """The gymnasium reacher (joint1 and the target's slides are limited, the arm's joints have
    armature and damping) with a box on a plane in the arm's sweep; constant dof torques drive the
    arm into the box and the target's slides against their limits."""
    path = _gym_asset("reacher.xml")
    scene = polyphys.Scene(sim=SimOptions(dt=REACH_H * substeps, substeps=substeps, precision="64",
                                          graph_capture=capture),
                           coupler=opts or SapOptions(point_stiffness=1e5))
    with pytest.warns(Warning, match="RK4"):
        arm = scene.add_entity(M.MJCF(file=path), Rigid())
    scene.add_entity(morph=M.Plane(pos=(0.02, -0.01, -0.05)), material=Rigid(friction=0.6))
    box = scene.add_entity(morph=M.Box(size=(0.05, 0.07, 0.08), pos=(0.13, 0.1, -0.01), euler=(0, 0, 30)),
                           material=Rigid(rho=300.0, friction=0.6))
    scene.build(n_envs=n_envs)
    arm.control_dofs_force(TORQUES[rows] if n_envs else TORQUES[rows[0]])
    traj = [_reacher_state(arm, box) for _ in range(steps) if scene.step() or True]
    return scene, arm, box, np.array(traj)


def _reacher_state(arm, box):
    return np.concatenate([np.atleast_2d(arm.get_dofs_position()), np.atleast_2d(arm.get_dofs_velocity()),
                           np.atleast_2d(box.get_pos()), np.atleast_2d(box.get_quat())], axis=1)


def _gym_asset(name):
    gymnasium = pytest.importorskip("gymnasium")
    import os

    path = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", name)
    if not os.path.exists(path):
        pytest.skip("gymnasium MuJoCo assets not installed")
    return path


def test_reacher_limits_and_contacts_batch_equals_single_runs():
    """n_envs = 2 equals two single runs bit for bit; the arm pushes the box (env 0) while the target's
    slides rest on their limits: penetration 2h²β²/(4π²)·F/m (w = 1/m) to 1 %, limit rows reported."""
    scene, arm, box, batch = _reacher(2, [0, 1], steps=160)
    for e in range(2):
        _, _, _, single = _reacher(0, [e], steps=160)
        np.testing.assert_array_equal(batch[:, e], single[:, 0])
    assert np.linalg.norm(batch[-1, 0, 8:10] - [0.13, 0.1]) > 0.05          # the arm moved the box
    solver = next(s for s in scene.solvers if s.name == "rigid")
    cf = solver.get_constraint_forces()
    for e in range(2):
        lim = cf["valid"][e] & (cf["type"][e] == ConstraintType.LIMIT)
        con = cf["valid"][e] & (cf["type"][e] >= ConstraintType.CONTACT_FRICTIONLESS)
        assert lim.sum() == 2 and con.sum() > 0 and np.all(cf["force"][e][lim] > 0)
        for d in (2, 3):                   # target_x, target_y: q − ref against ±0.27 − ref
            F = abs(TORQUES[e, d])
            lim_q = (0.27 if TORQUES[e, d] > 0 else -0.27) - (0.1 if d == 2 else -0.1)
            pen = 2 * REACH_H ** 2 * BETA ** 2 / TWO_PI_SQ * F / TARGET_MASS
            got = (batch[-1, e, d] - lim_q) * np.sign(TORQUES[e, d])
            assert abs(got - pen) <= 0.01 * pen, (e, d, got, pen)


def test_reacher_checkpoint_and_reset(tmp_path):
    """Checkpoint continuation is bit-exact (the warm start is state); resetting env 1 leaves env 0's
    trajectory unchanged and restarts env 1 as a fresh env."""
    scene, arm, box, _ = _reacher(2, [0, 1], steps=60)
    path = scene.save_checkpoint(tmp_path / "reacher.ckpt")
    want = [_reacher_state(arm, box) for _ in range(40) if scene.step() or True]
    other, oarm, obox, _ = _reacher(2, [0, 1])
    other.load_checkpoint(path)
    got = [_reacher_state(oarm, obox) for _ in range(40) if other.step() or True]
    np.testing.assert_array_equal(np.array(got), np.array(want))
    ref, rarm, rbox, _ = _reacher(2, [0, 1], steps=60)
    ref.reset(envs_idx=[1])
    rarm.control_dofs_force(TORQUES[[1]], envs_idx=[1])        # reset clears the env's controls
    after = [_reacher_state(rarm, rbox) for _ in range(40) if ref.step() or True]
    np.testing.assert_array_equal(np.array(after)[:, 0], np.array(want)[:, 0])
    fresh, farm, fbox, _ = _reacher(2, [0, 1])
    farm.control_dofs_force(TORQUES[[0, 1]])
    start = [_reacher_state(farm, fbox) for _ in range(40) if fresh.step() or True]
    np.testing.assert_array_equal(np.array(after)[:, 1], np.array(start)[:, 1])


def test_cost_monotone_with_limit_rows_active():
    """The solve of a substep with limit rows and contacts active (the reacher pushing the box):
    ℓ(v_k) never increases over the Newton iterations (exact line search on a convex cost; the
    tolerance is float64 round-off of ℓ's sum), and the solve converges to rtol 1e-10."""
    scene, arm, box, _ = _reacher(0, [0], opts=SapOptions(point_stiffness=1e5, rtol=1e-10), steps=228, substeps=1)
    sap(scene)._rigid["rigid"].warm_ok.zero_()                  # a cold solve (from v*), the arm on the box
    scene.step()
    st = sap(scene).get_solver_stats()
    solver = next(s for s in scene.solvers if s.name == "rigid")
    cf = solver.get_constraint_forces()
    assert (cf["valid"] & (cf["type"] == ConstraintType.LIMIT)).sum() == 2
    assert (cf["valid"] & (cf["type"] >= ConstraintType.CONTACT_FRICTIONLESS)).sum() >= 3
    cost = st["cost"][st["cost"] >= 0]
    assert st["converged"] and st["iterations"] >= 3, st
    assert np.all(np.diff(cost) <= 1e-12 * abs(cost[0]) + 1e-15)


def test_row_impulses_readback(tmp_path):
    """get_impulses lists the rows SAP solved: the limit's γ equals the rigid readback's force·h."""
    h = 0.002
    scene, _, solver, _ = _polyphys_pendulum(tmp_path, h, 300)
    imp = sap(scene).get_impulses()
    cf = solver.get_constraint_forces()
    assert imp["row_count"] == cf["count"] == 1
    assert imp["row_gamma"][0] == pytest.approx(cf["force"][0] * h, rel=1e-12)
    assert np.isnan(imp["row_gamma"][1:]).all()


def test_reacher_captured_step_equals_uncaptured():
    """The hand-off's row stages (rows builder, row0 copy) and the solve replay as a Warp graph: the
    same trajectory bit for bit as launched from Python."""
    _, _, _, a = _reacher(2, [0, 1], steps=60, capture=True)
    _, _, _, b = _reacher(2, [0, 1], steps=60, capture=False)
    np.testing.assert_array_equal(a, b)
