"""Each smooth-dynamics stage of the rigid solver run alone against MuJoCo's function for it.

For every stage: the state (and the stage's inputs from the stages before it) in place, the stage's
outputs filled with NaN, only that stage launched (plugins/rigid/<stage>.py on the whole batch's
View), then every output compared with MuJoCo's — so an unwritten element shows as NaN and a wrong
one as a mismatch. Models: gymnasium's humanoid and ant, dm_control's cheetah (planar slide/hinge
root) and the hand-written zoo (every joint type, several joints per body, damping, armature,
springs, gravcomp, all actuator kinds), each through ``desc_from_mjmodel`` (link l = MuJoCo body
l + 1), float64, two envs at generic states (random joint values and quaternions, random velocities
and controls, different per env), constraints off in both engines.

Tolerance 1e-10 (absolute, on quantities of order 1-100): the same algorithms in a different
floating-point order (measured ~1e-14). MuJoCo refers spatial quantities to each tree's subtree CoM,
polyphys to the tree root's origin: motion vectors are compared after moving the reference point,
v_MuJoCo = v + ω × (ref_MuJoCo − ref) (a rigid-body velocity field; cdof_dot transforms the same way
as it is a spatial cross product in a frame fixed at the instant). The constraint stages are run
alone against MuJoCo's efc rows, efc_J, mj_solve's forces and mj_contactForce in
tests/rigid_constraint/test_constraint_mujoco.py (on MuJoCo's own inputs).
"""

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from rigid_mjref import FREE_BODIES, ZOO, dm_asset, gym_asset, no_constraint_model  # noqa: E402
from rigid_mjref import make_scene as _make_scene  # noqa: E402

TOL = 1e-10


@pytest.fixture(autouse=True)
def _smooth_intermediates_per_env(monkeypatch):
    """These tests read the smooth pass's intermediates (joint anchors, composite inertias, RNE accelerations and
    wrenches) per env after a stage: built per env here (model._smooth_scratch, one block per View by default)."""
    from polyphys.plugins.rigid import model as M

    monkeypatch.setattr(M, "_smooth_scratch", False)


def _models():
    out = [pytest.param(ZOO, id="zoo"), pytest.param(FREE_BODIES, id="free-bodies")]
    for name in ("humanoid.xml", "ant.xml"):
        p = gym_asset(name)
        if p:
            out.append(pytest.param(p, id=f"gym-{name[:-4]}"))
    p = dm_asset("suite/cheetah.xml")
    if p:
        out.append(pytest.param(p, id="dmc-cheetah"))
    return out


def _nan(*arrays):
    for a in arrays:
        a.assign(np.full(a.numpy().shape, np.nan))


class Case:
    """A polyphys scene and one MuJoCo MjData per env at the same generic state."""

    def __init__(self, model, integrator="implicitfast", n=2, seed=11):
        m = no_constraint_model(model, integrator={"Euler": 0, "implicitfast": 3}[integrator])
        self.m = m
        self.scene, self.ent = _make_scene(m, integrator, n_envs=n)
        self.s = self.scene.solver("rigid")
        self.v = self.s.views["all"]
        rng = np.random.default_rng(seed)
        qs = np.tile(m.qpos0, (n, 1)) + rng.normal(size=(n, m.nq)) * 0.4
        for j in range(m.njnt):
            if m.jnt_type[j] in (0, 1):
                a = m.jnt_qposadr[j] + (3 if m.jnt_type[j] == 0 else 0)
                qs[:, a:a + 4] /= np.linalg.norm(qs[:, a:a + 4], axis=1, keepdims=True)
        vs = rng.normal(size=(n, m.nv))
        us = rng.uniform(-1.0, 1.0, size=(n, m.nu))
        xf = rng.normal(size=(n, m.nbody, 6)) * 2.0
        xf[:, 0] = 0.0
        self.ent.set_qpos(qs)
        self.ent.set_dofs_velocity(vs)
        if m.nu:
            self.ent.set_ctrl(us)
        d = self.s.data
        host_f, host_t = d.xfrc_force.numpy(), d.xfrc_torque.numpy()
        host_f[:, :m.nbody - 1] = xf[:, 1:, :3]
        host_t[:, :m.nbody - 1] = xf[:, 1:, 3:]
        d.xfrc_force.assign(host_f)
        d.xfrc_torque.assign(host_t)
        self.s.forward()                         # every stage's inputs at this state
        self.mj = []
        for e in range(n):
            dd = mujoco.MjData(m)
            dd.qpos[:], dd.qvel[:] = qs[e], vs[e]
            if m.nu:
                dd.ctrl[:] = us[e]
            dd.xfrc_applied[:] = xf[e]
            mujoco.mj_forward(m, dd)
            self.mj.append(dd)
        self.n = n

    def g(self, name):
        return getattr(self.s.data, name).numpy().astype(float)

    def ref_shift(self, e):
        """ref_MuJoCo − ref_polyphys per dof (env e)."""
        m, dd = self.m, self.mj[e]
        return dd.subtree_com[m.body_rootid[m.dof_bodyid]] - self.g("dof_ref")[e, :m.nv]


def _xfrc_qfrc(m, dd):
    """MuJoCo's generalized force of the applied link wrenches (xfrc_applied at each body's CoM):
    mj_applyFT per body, as mj_xfrcAccumulate does."""
    out = np.zeros(m.nv)
    for b in range(1, m.nbody):
        mujoco.mj_applyFT(m, dd, dd.xfrc_applied[b, :3], dd.xfrc_applied[b, 3:], dd.xipos[b], b, out)
    return out


def _motion(w, v, shift):
    return np.concatenate([w, v + np.cross(w, shift)], axis=-1)


@pytest.mark.parametrize("model", _models())
def test_kinematics_stage(model):
    """kinematics.kinematics vs mj_kinematics + mj_comPos + mj_comVel: link frames (xpos, xquat),
    CoMs (xipos), joint anchors and axes (xanchor, xaxis; every joint type), motion subspaces cdof,
    link velocities cvel and cdof_dot."""
    from polyphys.plugins.rigid import kinematics

    c = Case(model)
    m, d = c.m, c.s.data
    outs = [d.link_pos, d.link_quat, d.link_vel, d.link_ang, d.link_xipos, d.link_com_vel, d.joint_anchor,
            d.joint_xaxis, d.dof_ref, d.cinert_m, d.cinert_mc, d.cinert_i, d.cvel_w, d.cvel_v, d.cdof_w, d.cdof_v,
            d.cdofdot_w, d.cdofdot_v]
    _nan(*outs)
    kinematics.kinematics(c.v)
    for a in outs:
        assert np.isfinite(a.numpy()[:, :max(1, a.shape[1])]).all()
    nb, nv = m.nbody - 1, m.nv
    for e, dd in enumerate(c.mj):
        np.testing.assert_allclose(c.g("link_pos")[e, :nb], dd.xpos[1:], atol=TOL)
        q = c.g("link_quat")[e, :nb][:, [3, 0, 1, 2]]
        sign = np.sign(np.sum(q * dd.xquat[1:], axis=1))[:, None]
        np.testing.assert_allclose(q * sign, dd.xquat[1:], atol=TOL)
        np.testing.assert_allclose(c.g("link_xipos")[e, :nb], dd.xipos[1:], atol=TOL)
        np.testing.assert_allclose(c.g("joint_anchor")[e, :m.njnt], dd.xanchor, atol=TOL)
        np.testing.assert_allclose(c.g("joint_xaxis")[e, :m.njnt], dd.xaxis, atol=TOL)
        shift = c.ref_shift(e)
        cdof = _motion(c.g("cdof_w")[e, :nv], c.g("cdof_v")[e, :nv], shift)
        np.testing.assert_allclose(cdof, dd.cdof, atol=TOL)
        cdd = _motion(c.g("cdofdot_w")[e, :nv], c.g("cdofdot_v")[e, :nv], shift)
        np.testing.assert_allclose(cdd, dd.cdof_dot, atol=TOL)
        # link spatial velocity about the tree reference point (one shift per link's tree)
        lshift = dd.subtree_com[m.body_rootid[1:]] - c.g("link_pos")[e, c.s.hm.link_root]
        np.testing.assert_allclose(_motion(c.g("cvel_w")[e, :nb], c.g("cvel_v")[e, :nb], lshift), dd.cvel[1:],
                                   atol=TOL)
        np.testing.assert_allclose(c.g("link_ang")[e, :nb], dd.cvel[1:, :3], atol=TOL)


@pytest.mark.parametrize("model", _models())
def test_bias_stage(model):
    """bias.rne vs mj_rne (qfrc_bias: Coriolis, centrifugal, gravity at qacc = 0) and the external
    forces vs MuJoCo's gravity compensation + the generalized force of the applied link wrenches
    (mj_applyFT at each CoM, as mj_xfrcAccumulate)."""
    from polyphys.plugins.rigid import bias

    c = Case(model)
    m, d = c.m, c.s.data
    _nan(d.cacc_w, d.cacc_v, d.cfrc_t, d.cfrc_f, d.cext_t, d.cext_f, d.qfrc_bias, d.qfrc_ext)
    bias.rne(c.v)
    for e, dd in enumerate(c.mj):
        np.testing.assert_allclose(c.g("qfrc_bias")[e, :m.nv], dd.qfrc_bias, atol=TOL)
        np.testing.assert_allclose(c.g("qfrc_ext")[e, :m.nv], dd.qfrc_gravcomp + _xfrc_qfrc(m, dd), atol=TOL)


@pytest.mark.parametrize("model", _models())
def test_inertia_stage(model):
    """inertia.crb vs mj_crb: the dense mass matrix (armature included) equals mj_fullM."""
    from polyphys.plugins.rigid import inertia

    c = Case(model)
    m, d = c.m, c.s.data
    _nan(d.crb_m, d.crb_mc, d.crb_i, d.mass)
    inertia.crb(c.v)
    assert np.isfinite(d.mass.numpy()[:, :max(1, int(c.s.hm.nnz))]).all()
    Ms = c.s.mass_matrix()
    for e, dd in enumerate(c.mj):
        M = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, dd, M)
        np.testing.assert_allclose(Ms[e], M, atol=TOL)


@pytest.mark.parametrize("model", _models())
def test_inertia_free_joint_block(model):
    """inertia.crb's closed-form 6×6 block of a free joint on a root link (kernels/inertia.cpp: taken where the
    dofs' cdof are exactly (0, e_k) / (a_k, 0)) against the general loop (``general=True``) with every output
    NaN-filled first: the same values (the sign of an exact zero may differ) at the kinematics stage's cdof, and
    the same bytes once one free body's cdof no longer has that pattern (the block is then not taken) or every
    cdof is random (no block is)."""
    from polyphys.plugins.rigid import inertia

    c = Case(model)
    m, d = c.m, c.s.data
    outs = (d.crb_m, d.crb_mc, d.crb_i, d.mass)
    free_roots = [j for j in range(m.njnt) if m.jnt_type[j] == 0]

    def both():
        got = []
        for general in (False, True):
            _nan(*outs)
            inertia.crb(c.v, general=general)
            got.append([a.numpy().copy() for a in outs])
        return got

    fast, general = both()
    for a, b in zip(fast, general):
        np.testing.assert_array_equal(a, b)
    nnz = int(c.s.hm.nnz)
    assert np.isfinite(fast[3][:, :nnz]).all()
    if free_roots:
        # the first free body's rotation dof 3 gets a cdof_v off zero: its block must take the general loop
        cv = d.cdof_v.numpy()
        cv[:, m.jnt_dofadr[free_roots[0]] + 3] += np.array([1e-3, -2e-3, 5e-4])
        d.cdof_v.assign(cv)
        fast, general = both()
        for a, b in zip(fast, general):
            assert a.tobytes() == b.tobytes()
    rng = np.random.default_rng(9)
    d.cdof_w.assign(rng.normal(size=d.cdof_w.numpy().shape))
    d.cdof_v.assign(rng.normal(size=d.cdof_v.numpy().shape))
    fast, general = both()
    for a, b in zip(fast, general):
        assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("model", _models())
def test_actuation_stage(model):
    """actuation.actuation vs mj_passive + mj_fwdActuation: spring + damper forces, actuator forces
    (per actuator and per dof) and qfrc_smooth = passive + actuator + ext − bias (MuJoCo's
    qfrc_smooth, which holds gravcomp and the applied wrenches too)."""
    from polyphys.plugins.rigid import actuation

    c = Case(model)
    m, d = c.m, c.s.data
    _nan(d.qfrc_passive, d.qfrc_actuator, d.qfrc_control, d.qfrc_smooth, d.dof_dv, d.act_force)
    actuation.actuation(c.v)
    for e, dd in enumerate(c.mj):
        np.testing.assert_allclose(c.g("qfrc_passive")[e, :m.nv], dd.qfrc_spring + dd.qfrc_damper, atol=TOL)
        np.testing.assert_allclose(c.g("qfrc_actuator")[e, :m.nv], dd.qfrc_actuator, atol=TOL)
        if m.nu:
            np.testing.assert_allclose(c.g("act_force")[e, :m.nu], dd.actuator_force, atol=TOL)
        np.testing.assert_allclose(c.g("qfrc_smooth")[e, :m.nv], dd.qfrc_smooth, atol=TOL)
        assert not c.g("qfrc_control")[e, :m.nv].any()


@pytest.mark.parametrize("model", _models())
def test_factorization_stage(model):
    """factorization.factor_solve vs mj_factorM/mj_solveM: M⁻¹·f for a random f (hd = 0), and
    (M + h·D)⁻¹·f (hd = h) against a dense solve with the stage's D (dof_dv)."""
    import warp as wp
    from polyphys.plugins.rigid import factorization

    c = Case(model)
    m, d = c.m, c.s.data
    f = np.random.default_rng(3).normal(size=(c.n, d.qacc.shape[1]))
    fw = wp.array(f, dtype=wp.float64)
    out = wp.zeros_like(d.qacc)
    for hd in (0.0, 0.01):
        _nan(d.qld, out)
        factorization.factor_solve(c.v, hd, fw, out)
        x = out.numpy()
        Ms = c.s.mass_matrix()
        for e, dd in enumerate(c.mj):
            if hd == 0.0:
                ref = np.zeros(m.nv)
                mujoco.mj_solveM(m, dd, ref[None], f[e, :m.nv][None])
            else:
                A = Ms[e] + hd * np.diag(c.g("dof_dv")[e, :m.nv])
                ref = np.linalg.solve(A, f[e, :m.nv])
            np.testing.assert_allclose(x[e, :m.nv], ref, rtol=1e-10, atol=TOL)


@pytest.mark.parametrize("model", _models())
def test_integration_stage(model):
    """integration.integrate with a given qacc (MuJoCo-compatible mode: no midpoint branch) vs
    MuJoCo's update: v' = v + h·a exactly, q' = mj_integratePos(q, v', h) (quaternions by the
    rotation-vector increment) to 1e-12; then one full step of the stages vs mj_step (Euler and
    implicitfast, MuJoCo's mj_Euler / mj_implicit)."""
    from polyphys.plugins.rigid import integration

    c = Case(model)
    m, d = c.m, c.s.data
    h = float(m.opt.timestep)
    a = np.random.default_rng(5).normal(size=d.qacc.shape)
    d.qacc.assign(a)
    q0, v0 = c.g("qpos"), c.g("qvel")
    integration.integrate(c.v, False, d.qfrc_smooth)
    v1 = c.g("qvel")
    np.testing.assert_array_equal(v1[:, :m.nv], v0[:, :m.nv] + h * a[:, :m.nv])
    for e in range(c.n):
        q = q0[e, :m.nq].copy()
        mujoco.mj_integratePos(m, q, v1[e, :m.nv], h)
        np.testing.assert_allclose(c.g("qpos")[e, :m.nq], q, atol=1e-12)
    for integrator in ("Euler", "implicitfast"):
        c = Case(model, integrator=integrator)
        c.scene.step()
        for e, dd in enumerate(c.mj):
            mujoco.mj_step(c.m, dd)
            np.testing.assert_allclose(c.g("qvel")[e, :c.m.nv], dd.qvel, atol=TOL)
            np.testing.assert_allclose(c.g("qpos")[e, :c.m.nq], dd.qpos, atol=TOL)


@pytest.mark.parametrize("model", _models())
def test_core_fk_and_rigid_kinematics_are_twins(model):
    """Forward kinematics exists twice: core's Warp kernels (polyphys.kernels.fk, used by the
    kinematic solver) and the rigid kinematics stage (native). On the same tree and states they give
    the same link poses, origin velocities and angular velocities, and core's integrate_qpos the same
    q update as the rigid integration stage (qacc = 0), to float64 rounding (1e-12: the two normalise
    quaternions at different points)."""
    import warp as wp
    from polyphys.kinematics import JointTree
    from polyphys.plugins.rigid import integration, kinematics

    c = Case(model)
    s, d = c.s, c.s.data
    kinematics.kinematics(c.v)
    n = c.n
    core = s.tree.to_warp(n, "64", "cpu")
    core.root_pos, core.root_quat = d.root_pos, d.root_quat
    out = {k: wp.zeros_like(getattr(d, k)) for k in ("link_pos", "link_quat", "link_vel", "link_ang")}
    JointTree.launch_fk(core, d.qpos, d.qvel, out["link_pos"], out["link_quat"], out["link_vel"], out["link_ang"])
    for k, a in out.items():
        got, ref = a.numpy(), c.g(k)
        if k == "link_quat":
            got = got * np.sign(np.sum(got * ref, axis=-1, keepdims=True))
        np.testing.assert_allclose(got, ref, atol=1e-12, err_msg=k)
    h = 0.01
    q = wp.clone(d.qpos)
    JointTree.launch_integrate(core, h, d.qvel, q)
    d.qacc.zero_()
    c.v.m.opt.timestep = h
    integration.integrate(c.v, False, d.qfrc_smooth)
    np.testing.assert_allclose(q.numpy(), c.g("qpos"), atol=1e-12)


@pytest.mark.parametrize("model", _models())
def test_crb_factor_fused_stage(model):
    """factorization.crb_factor_solve (inertia.crb + factor_solve + mass_dense in one launch, the solver's
    smooth pass) with every output NaN-filled: M equals mj_fullM, qacc = (M + h·D)⁻¹·f against a dense
    solve, the dense M + h·D on M's tree pattern against mj_fullM + h·D with the entries off it left
    untouched (still NaN) — and every output bit for bit the separate stages' from the same inputs.
    dense=False writes no entry of d.qM."""
    import warp as wp
    from polyphys.plugins.rigid import factorization, inertia

    c = Case(model)
    m, d = c.m, c.s.data
    hd = 0.01
    f = np.random.default_rng(4).normal(size=(c.n, d.qacc.shape[1]))
    fw = wp.array(f, dtype=wp.float64)
    out = wp.zeros_like(d.qacc)
    outs = (d.crb_m, d.crb_mc, d.crb_i, d.mass, d.qld, out, d.qM)
    rows, cols = c.s.hm.m_rows, c.s.hm.m_cols
    pattern = np.zeros((m.nv, m.nv), bool)
    pattern[rows, cols] = pattern[cols, rows] = True

    results = {}
    for prefetch in (2, 1, 0):
        _nan(*outs)
        factorization.crb_factor_solve(c.v, hd, fw, out, dense=True, prefetch=prefetch)
        results[prefetch] = [a.numpy().copy() for a in outs]
    _nan(*outs)
    inertia.crb(c.v)
    factorization.factor_solve(c.v, hd, fw, out)
    factorization.mass_dense(c.v, hd)
    separate = [a.numpy().copy() for a in outs]
    for fused in results.values():
        for a, b in zip(fused, separate):
            np.testing.assert_array_equal(a, b)      # bit for bit, NaN in the same (untouched) places

    qM = results[2][-1]
    x = results[2][-2]
    Ms = c.s.mass_matrix()
    for e, dd in enumerate(c.mj):
        M = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, dd, M)
        np.testing.assert_allclose(Ms[e], M, atol=TOL)
        A = M + hd * np.diag(c.g("dof_dv")[e, :m.nv])
        block = qM[e, :m.nv, :m.nv]
        np.testing.assert_allclose(block[pattern], A[pattern], atol=TOL)
        assert np.isnan(block[~pattern]).all()
        np.testing.assert_allclose(x[e, :m.nv], np.linalg.solve(A, f[e, :m.nv]), rtol=1e-10, atol=TOL)

    _nan(d.qM, d.qld_int)
    factorization.crb_factor_solve(c.v, hd, fw, out, dense=False)
    assert np.isnan(d.qM.numpy()).all() and np.isnan(d.qld_int.numpy()).all()
    np.testing.assert_array_equal(out.numpy(), results[2][-2])


@pytest.mark.parametrize("model", _models())
def test_integration_factor_and_ld_solve_stage(model):
    """crb_factor_solve(..., hd_int=h) also factors M + h·D into d.qld_int (NaN-filled first) while the
    first solve uses M + hd·D; factorization.ld_solve then gives (M + h·D)⁻¹·f from it (output NaN-filled
    first): against a dense solve, and bit for bit factor_solve(v, h, f) (its factor and its result)."""
    import warp as wp
    from polyphys.plugins.rigid import factorization

    c = Case(model)
    m, d = c.m, c.s.data
    h = 0.02
    f = np.random.default_rng(6).normal(size=(c.n, d.qacc.shape[1]))
    fw = wp.array(f, dtype=wp.float64)
    out, x = wp.zeros_like(d.qacc), wp.zeros_like(d.qacc)
    _nan(d.qld_int, x)
    factorization.crb_factor_solve(c.v, 0.0, fw, out, dense=False, hd_int=h)
    qld_int = d.qld_int.numpy().copy()
    nnz = int(c.s.hm.nnz)
    assert np.isfinite(qld_int[:, :nnz]).all()
    factorization.ld_solve(c.v, fw, x)
    _nan(d.qld, out)
    factorization.factor_solve(c.v, h, fw, out)
    np.testing.assert_array_equal(qld_int[:, :nnz], d.qld.numpy()[:, :nnz])
    np.testing.assert_array_equal(x.numpy(), out.numpy())
    for prefetch in (2, 0):      # the prefetch modes (none, L1: the default above, L2) give the same bits
        _nan(x)
        factorization.ld_solve(c.v, fw, x, prefetch=prefetch)
        np.testing.assert_array_equal(x.numpy(), out.numpy())
    Ms = c.s.mass_matrix()
    for e in range(c.n):
        A = Ms[e] + h * np.diag(c.g("dof_dv")[e, :m.nv])
        np.testing.assert_allclose(x.numpy()[e, :m.nv], np.linalg.solve(A, f[e, :m.nv]), rtol=1e-10, atol=TOL)
    with pytest.raises(ValueError, match="hd_int=-1"):
        factorization.crb_factor_solve(c.v, 0.0, fw, out, dense=False, hd_int=-1.0)
    # the second factor is copied from the first where it is the same matrix (hd_int == hd, or D = 0 on an
    # env's every dof) and computed otherwise: env 0 gets D = 0, the others a generic positive D, and each
    # env's qld_int must be bit for bit factor_solve's factor of M + h·D, and equal qld only when hd_int == hd
    rng = np.random.default_rng(7)
    dv = rng.uniform(0.5, 2.0, size=d.dof_dv.shape)
    dv[0] = 0.0
    d.dof_dv.assign(dv)
    # where both are computed they are factored in one pass (the part factor_pair; prefetch bit 16: one after the
    # other, as before): the same bits as each alone — the first factor and its solve those of factor_solve(v, hd)
    for hd in (0.0, h):
        res = {}
        for pf in (2, 18, 16):
            _nan(d.qld, d.qld_int, out)
            factorization.crb_factor_solve(c.v, hd, fw, out, dense=False, hd_int=h, prefetch=pf)
            res[pf] = (d.qld.numpy()[:, :nnz].copy(), d.qld_int.numpy()[:, :nnz].copy(), out.numpy().copy())
        for pf in (18, 16):
            for a, b in zip(res[2], res[pf]):
                np.testing.assert_array_equal(a, b)
        qld_first, qld_int, acc = res[2]
        _nan(d.qld, out)
        factorization.factor_solve(c.v, hd, fw, out)
        np.testing.assert_array_equal(qld_first, d.qld.numpy()[:, :nnz])
        np.testing.assert_array_equal(acc, out.numpy())
        _nan(d.qld, out)
        factorization.factor_solve(c.v, h, fw, out)
        np.testing.assert_array_equal(qld_int, d.qld.numpy()[:, :nnz])
        same = np.all(qld_first == qld_int, axis=1)
        assert same.all() if hd == h else (same[0] and not same[1:].any())


_SMOOTH_OUTS = ("link_pos", "link_quat", "link_vel", "link_ang", "link_xipos", "link_com_vel", "joint_anchor",
                "joint_xaxis", "dof_ref", "cinert_m", "cinert_mc", "cinert_i", "cvel_w", "cvel_v", "cdof_w", "cdof_v",
                "cdofdot_w", "cdofdot_v",                                                    # kinematics
                "cacc_w", "cacc_v", "cfrc_t", "cfrc_f", "cext_t", "cext_f", "qfrc_bias", "qfrc_ext",   # bias
                "qfrc_passive", "qfrc_actuator", "qfrc_control", "qfrc_smooth", "dof_dv", "act_force",  # actuation
                "crb_m", "crb_mc", "crb_i", "mass", "qld", "qld_int", "qM")                  # crb_factor_solve


def _smooth_models():
    out = [pytest.param(ZOO, id="zoo-actuators"), pytest.param(FREE_BODIES, id="free-bodies-no-actuators")]
    p = gym_asset("humanoid.xml")
    if p:
        out.append(pytest.param(p, id="gym-humanoid-actuators"))
    return out


@pytest.mark.parametrize("mujoco_compatible", [False, True], ids=["default-mode", "mujoco-mode"])
@pytest.mark.parametrize("model", _smooth_models())
def test_smooth_fused_launch_stage(model, mujoco_compatible):
    """factorization.smooth (the solver's smooth pass: kinematics, bias, actuation and crb_factor_solve in one
    launch) against the four stages launched one after the other, from the same generic state (3 envs, random
    joint values, velocities, controls, link wrenches), every output of the four stages NaN-filled before each
    run: bit for bit equal (NaN in the same places), with and without the dense M and the integration's second
    factor, in polyphys' default mode and the MuJoCo-compatible one, on models with actuators (the zoo: every
    actuator kind; the humanoid) and without (free bodies)."""
    import polyphys
    import warp as wp
    from polyphys import morphs
    from polyphys.plugins.rigid import actuation, bias, factorization, kinematics
    from polyphys.plugins.rigid.materials import Rigid
    from polyphys.plugins.rigid.options import RigidOptions
    from rigid_mjref import desc_from_mjmodel

    m = no_constraint_model(model, integrator=3)
    n = 3
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=float(m.opt.timestep), precision="64", graph_capture=False),
                           rigid=RigidOptions(mujoco_compatible=mujoco_compatible, enable_collision=False,
                                              disable_constraint=True))
    ent = scene.add_entity(morphs.Description(description=desc_from_mjmodel(m)), Rigid())
    scene.build(n_envs=n)
    s = scene.solver("rigid")
    v, d = s.views["all"], s.data
    rng = np.random.default_rng(17)
    qs = np.tile(m.qpos0, (n, 1)) + rng.normal(size=(n, m.nq)) * 0.4
    for j in range(m.njnt):
        if m.jnt_type[j] in (0, 1):
            a = m.jnt_qposadr[j] + (3 if m.jnt_type[j] == 0 else 0)
            qs[:, a:a + 4] /= np.linalg.norm(qs[:, a:a + 4], axis=1, keepdims=True)
    ent.set_qpos(qs)
    ent.set_dofs_velocity(rng.normal(size=(n, m.nv)))
    if m.nu:
        ent.set_ctrl(rng.uniform(-1.0, 1.0, size=(n, m.nu)))
    host_f = d.xfrc_force.numpy()
    host_f[:, :m.nbody - 1] = rng.normal(size=(n, m.nbody - 1, 3))
    d.xfrc_force.assign(host_f)
    outs = [getattr(d, k) for k in _SMOOTH_OUTS]
    qacc = wp.zeros_like(d.qacc)
    h = float(m.opt.timestep)
    for dense, hd_int in ((True, h), (False, None), (True, None)):
        _nan(*outs, qacc)
        kinematics.kinematics(v)
        bias.rne(v)
        actuation.actuation(v)
        factorization.crb_factor_solve(v, h, d.qfrc_smooth, qacc, dense, hd_int=hd_int)
        separate = [a.numpy().copy() for a in (*outs, qacc)]
        _nan(*outs, qacc)
        factorization.smooth(v, h, d.qfrc_smooth, qacc, dense, hd_int=hd_int)
        fused = [a.numpy().copy() for a in (*outs, qacc)]
        for name, a, b in zip((*_SMOOTH_OUTS, "qacc"), fused, separate):
            np.testing.assert_array_equal(a, b, err_msg=f"{name} (dense={dense}, hd_int={hd_int})")
        assert not np.isnan(fused[-1][:, :m.nv]).any() and not np.isnan(fused[_SMOOTH_OUTS.index("qfrc_smooth")][:, :m.nv]).any()
