"""MuJoCo scenes at a frozen state and their conversion into ConstraintStage inputs."""

from __future__ import annotations

import mujoco
import numpy as np
from polyphys.plugins.rigid.constraint import ConstraintOptions, ConstraintStage

# MuJoCo efc_type → polyphys row type, and the polyphys row order key (eq, friction, contact, limit)
MJ2PP = {0: 0, 1: 1, 3: 2, 5: 3, 6: 4, 7: 5}
ORDER = {0: 0, 1: 1, 5: 2, 6: 2, 7: 2, 3: 3}

ARTICULATED = """
<mujoco>
  <option timestep="0.004" cone="{cone}" impratio="{impratio}" tolerance="1e-12" iterations="1000"
          ls_iterations="100" ls_tolerance="1e-6"/>
  <default><geom solref="{solref}" solimp="0.85 0.97 0.002 0.4 3"/></default>
  <worldbody>
    <geom type="plane" size="3 3 .1" friction="0.7 0.02 0.001"/>
    <body name="box" pos="0 0 0.098">
      <freejoint/>
      <geom type="box" size=".1 .08 .1" mass="2" condim="{condim}" friction="0.9 0.03 0.002"/>
    </body>
    <body name="ball" pos="0.6 0 0.047">
      <freejoint/>
      <geom type="sphere" size=".05" mass="0.5" condim="{condim_ball}"/>
    </body>
    <body name="arm" pos="-0.6 0 0.5">
      <joint name="j0" type="hinge" axis="0 1 0" range="-30 60" frictionloss="0.3" damping="0"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.25" size="0.03" mass="1"/>
      <body name="fore" pos="0 0 -0.25">
        <joint name="j1" type="hinge" axis="0 1 0" range="-10 90" frictionloss="0.1"/>
        <joint name="j2" type="slide" axis="0 0 1" range="-0.05 0.05"/>
        <geom type="capsule" fromto="0 0 0 0.1 0 -0.22" size="0.03" mass="0.7" condim="{condim}"/>
        <body name="hand" pos="0.1 0 -0.25">
          <joint name="j3" type="hinge" axis="1 0 0"/>
          <geom type="sphere" size="0.04" mass="0.3"/>
        </body>
      </body>
    </body>
    <body name="pend" pos="0 0.6 0.6">
      <joint name="p0" type="hinge" axis="1 0 0"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.02" mass="0.4"/>
    </body>
    <body name="cone" pos="-0.3 -0.6 0.6">
      <joint name="bj" type="ball" range="0 30"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.2" size="0.02" mass="0.3" contype="0" conaffinity="0"/>
    </body>
    <body name="wb" pos="0.3 0.6 0.6">
      <freejoint name="wbj"/>
      <geom type="box" size=".03 .03 .03" mass="0.2" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
  <equality>
    <weld body1="wb" body2="pend" torquescale="2" solref="0.02 0.7"/>
    <connect body1="pend" body2="world" anchor="0 0 -0.3" solref="0.03 0.8"/>
    <joint joint1="j3" joint2="j1" polycoef="0.1 0.5 0.2 0 0"/>
  </equality>
</mujoco>
"""


def make(cone="pyramidal", impratio=1.0, condim=3, condim_ball=6, solref="0.02 1"):
    m = mujoco.MjModel.from_xml_string(ARTICULATED.format(cone=cone, impratio=impratio, condim=condim,
                                                          condim_ball=condim_ball, solref=solref))
    d = mujoco.MjData(m)
    rng = np.random.default_rng(3)
    mujoco.mj_resetData(m, d)
    # frozen state: box tilted and penetrating, arm at a limit, random velocities
    d.qpos[3:7] = [0.999, 0.02, -0.03, 0.0]
    d.qpos[3:7] /= np.linalg.norm(d.qpos[3:7])
    d.qpos[2] = 0.095
    d.qpos[9] = 0.045
    j = lambda n: m.jnt_qposadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n)]  # noqa: E731
    d.qpos[j("j0")] = np.deg2rad(62)
    d.qpos[j("j1")] = np.deg2rad(-12)
    d.qpos[j("j2")] = 0.051
    d.qpos[j("p0")] = 0.05
    b = j("bj")
    d.qpos[b:b + 4] = [np.cos(0.3), np.sin(0.3) * 0.6, -np.sin(0.3) * 0.8, 0.0]   # 34.4° > 30°
    w = j("wbj")
    d.qpos[w:w + 3] += [0.01, -0.02, 0.015]
    d.qpos[w + 3:w + 7] = [0.995, 0.05, -0.06, 0.03]
    d.qpos[w + 3:w + 7] /= np.linalg.norm(d.qpos[w + 3:w + 7])
    d.qvel[:] = rng.normal(scale=0.3, size=m.nv)
    mujoco.mj_forward(m, d)
    return m, d


def _qmul(a, b):
    out = np.zeros(4)
    mujoco.mju_mulQuat(out, np.asarray(a, float), np.asarray(b, float))
    return out


def weld_jdot_qvel(m, d, e):
    """J̇·q̇ of a weld's 6 rows (MuJoCo 4 subtracts it from aref): translation from mj_jacDot at
    the anchors; rotation from d/dt of 0.5·ts·vec(conj(q1)⊗(0,ω0−ω1)⊗q0⊗rel) at qacc = 0."""
    nv = m.nv
    b = [m.eq_obj1id[e], m.eq_obj2id[e]]
    data = m.eq_data[e]
    out = np.zeros(6)
    w, al = [], []
    for j, sg in ((0, 1.0), (1, -1.0)):
        anchor = data[3 * (1 - j):3 * (1 - j) + 3]
        pnt = d.xpos[b[j]] + d.xmat[b[j]].reshape(3, 3) @ anchor
        jp, jr = np.zeros((3, nv)), np.zeros((3, nv))
        mujoco.mj_jacDot(m, d, jp, jr, pnt, b[j])
        out[:3] += sg * jp @ d.qvel
        jpr = np.zeros((3, nv))
        mujoco.mj_jac(m, d, None, jpr, pnt, b[j])
        w.append(jpr @ d.qvel)
        al.append(jr @ d.qvel)
    ts = data[10]
    q1c = d.xquat[b[1]] * [1, -1, -1, -1]
    qq = _qmul(d.xquat[b[0]], data[6:10])
    wr, ar = w[0] - w[1], al[0] - al[1]
    pure = lambda v: np.r_[0.0, v]  # noqa: E731
    t1 = -0.5 * _qmul(_qmul(_qmul(q1c, pure(w[1])), pure(wr)), qq)
    t2 = _qmul(_qmul(q1c, pure(ar)), qq)
    t3 = 0.5 * _qmul(_qmul(_qmul(q1c, pure(wr)), pure(w[0])), qq)
    out[3:] = 0.5 * ts * (t1 + t2 + t3)[1:]
    return out


def link_dof_last(m):
    out = np.full(m.nbody, -1, np.int32)
    for b in range(m.nbody):
        c = b
        while c > 0 and m.body_dofnum[c] == 0:
            c = m.body_parentid[c]
        if c > 0:
            out[b] = m.body_dofadr[c] + m.body_dofnum[c] - 1
    return out


def stage_for(m, d, max_rows=80, precision="64", with_bias=True, n_envs=1, **opt):
    """ConstraintStage with MuJoCo's model arrays, contacts copied in; returns (stage, tree inputs)."""
    nv = m.nv
    lims = [i for i in range(m.njnt) if m.jnt_limited[i] and m.jnt_type[i] in (1, 2, 3)]
    eqs = list(range(m.neq))
    eq_obj = np.zeros((len(eqs), 4), np.int32)
    eq_data = np.zeros((len(eqs), 11))
    eq_type = []
    for k, e in enumerate(eqs):
        if m.eq_type[e] == mujoco.mjtEq.mjEQ_CONNECT:
            eq_type.append(0)
            eq_obj[k, :2] = [m.eq_obj1id[e], m.eq_obj2id[e]]
            eq_data[k, :6] = m.eq_data[e, :6]
        elif m.eq_type[e] == mujoco.mjtEq.mjEQ_WELD:
            eq_type.append(1)
            eq_obj[k, :2] = [m.eq_obj1id[e], m.eq_obj2id[e]]
            eq_data[k] = m.eq_data[e, :11]
        else:
            eq_type.append(2)
            j1, j2 = m.eq_obj1id[e], m.eq_obj2id[e]
            eq_obj[k] = [m.jnt_qposadr[j1], m.jnt_qposadr[j2], m.jnt_dofadr[j1], m.jnt_dofadr[j2]]
            eq_data[k, :7] = [m.qpos0[m.jnt_qposadr[j1]], m.qpos0[m.jnt_qposadr[j2]], *m.eq_data[e, :5]]
    t = lambda x: np.ascontiguousarray(np.repeat(np.asarray(x)[None], n_envs, axis=0))  # noqa: E731
    sol = lambda ref, imp: np.concatenate([ref, imp], axis=-1)  # noqa: E731
    opts = ConstraintOptions(cone="elliptic" if m.opt.cone == 1 else "pyramidal", impratio=m.opt.impratio,
                             timeconst_floor=2 * m.opt.timestep, **opt)
    E = n_envs
    st = ConstraintStage(
        E, nv, m.nbody, max(d.ncon, 1), max_rows, precision=precision, options=opts,
        dof_parent=m.dof_parentid, link_dof_last=link_dof_last(m), link_invweight=m.body_invweight0,
        dof_invweight=m.dof_invweight0, dof_frictionloss=np.tile(m.dof_frictionloss, (E, 1)),
        dof_sol=sol(m.dof_solref, m.dof_solimp), lim_dof=[m.jnt_dofadr[i] for i in lims],
        lim_qadr=[m.jnt_qposadr[i] for i in lims], lim_ball=[int(m.jnt_type[i] == 1) for i in lims],
        lim_range=m.jnt_range[lims], lim_margin=m.jnt_margin[lims],
        lim_sol=sol(m.jnt_solref[lims], m.jnt_solimp[lims]), eq_type=eq_type, eq_obj=eq_obj, eq_data=eq_data,
        eq_sol=np.tile(sol(m.eq_solref, m.eq_solimp)[None], (E, 1, 1)))
    n = d.ncon
    st.n_con.assign(np.full(E, n, np.int32))
    if n:
        c = d.contact
        st.con_pos.assign(t(c.pos))
        st.con_frame.assign(t(c.frame.reshape(n, 3, 3)))
        st.con_dist.assign(t(c.dist))
        st.con_margin.assign(t(c.includemargin))
        st.con_link.assign(t(np.stack([m.geom_bodyid[c.geom[:, 1]], m.geom_bodyid[c.geom[:, 0]]], -1).astype(np.int32)))
        st.con_dim.assign(t(c.dim.astype(np.int32)))
        st.con_friction.assign(t(c.friction))
        st.con_sol.assign(t(sol(c.solref, c.solimp)))
    bias = np.zeros((1, max(m.neq, 1), 6))
    for k, e in enumerate(eqs):
        if m.eq_type[e] == mujoco.mjtEq.mjEQ_CONNECT:
            for j, sg in ((0, 1.0), (1, -1.0)):
                b = [m.eq_obj1id[e], m.eq_obj2id[e]][j]
                pnt = d.xpos[b] + d.xmat[b].reshape(3, 3) @ m.eq_data[e, 3 * j:3 * j + 3]
                jp = np.zeros((3, nv))
                mujoco.mj_jacDot(m, d, jp, None, pnt, b)
                bias[0, k, :3] += sg * jp @ d.qvel
    for k, e in enumerate(eqs):
        if m.eq_type[e] == mujoco.mjtEq.mjEQ_WELD:
            bias[0, k] = weld_jdot_qvel(m, d, e)
    if with_bias:
        st.eq_acc_bias.assign(np.repeat(bias, E, axis=0))
    cdof = d.cdof
    ref = d.subtree_com[m.body_rootid[m.dof_bodyid]]
    tree = dict(qpos=t(d.qpos), qvel=t(d.qvel), cdof_w=t(cdof[:, :3]), cdof_v=t(cdof[:, 3:]),
                dof_ref=t(ref), link_pos=t(d.xpos), link_quat=t(d.xquat))
    return st, tree


def build(st, tree):
    import warp as wp
    s = st.scalar
    a = lambda x, dt=s: wp.array(np.asarray(x), dtype=dt, device=st.device)  # noqa: E731
    st.build_rows(a(tree["qpos"]), a(tree["qvel"]), a(tree["cdof_w"], st.V), a(tree["cdof_v"], st.V),
                  a(tree["dof_ref"], st.V), a(tree["link_pos"], st.V), a(tree["link_quat"][..., [1, 2, 3, 0]], st.Q))


def mj_order(m, d):
    """Permutation of MuJoCo's rows into polyphys's row order (stable within a type)."""
    return np.array(sorted(range(d.nefc), key=lambda i: (ORDER[int(d.efc_type[i])], i)))


def solve_with_mj_inputs(m, d, precision="64", **opt):
    """Feed MuJoCo's M, qacc_smooth, efc_J/aref/R and cone data into the polyphys solver."""
    import warp as wp
    st, _ = stage_for(m, d, max_rows=max(d.nefc, 1), precision=precision, **opt)
    nv, nefc = m.nv, d.nefc
    M = np.zeros((nv, nv))
    mujoco.mj_fullM(m, d, M)
    J = d.efc_J.reshape(nefc, nv)
    tp = np.array([MJ2PP[int(t)] for t in d.efc_type], np.int32)
    mu = np.zeros(nefc)
    dim = np.zeros(nefc, np.int32)
    i = 0
    while i < nefc:
        if d.efc_type[i] == 7:
            c = d.contact[d.efc_id[i]]
            dim[i] = c.dim
            mu[i] = c.mu
            mu[i + 1:i + c.dim] = c.friction[:c.dim - 1]
            i += c.dim
        else:
            i += 1
    st.n_efc.assign(np.array([nefc], np.int32))
    st.efc_J.assign(J[None])
    st.efc_type.assign(tp[None])
    st.efc_aref.assign(d.efc_aref[None])
    st.efc_R.assign(d.efc_R[None])
    st.efc_D.assign(d.efc_D[None])
    st.efc_floss.assign(d.efc_frictionloss[None])
    st.efc_mu.assign(mu[None])
    st.efc_dim.assign(dim[None])
    s = st.scalar
    qs = wp.array(d.qacc_smooth[None], dtype=s)
    st.solve(wp.array(M[None], dtype=s), qs, qs)
    return st


def humanoid(cone="pyramidal", impratio=1.0):
    """gymnasium's humanoid.xml (nv 23, hinge limits, self and floor contacts) lying on the floor with
    random joint angles and velocities; None when gymnasium's assets are not installed."""
    import importlib.util
    import os
    spec = importlib.util.find_spec("gymnasium")
    if spec is None:
        return None
    path = os.path.join(os.path.dirname(spec.origin), "envs", "mujoco", "assets", "humanoid.xml")
    if not os.path.exists(path):
        return None
    m = mujoco.MjModel.from_xml_path(path)
    m.opt.cone = 1 if cone == "elliptic" else 0
    m.opt.impratio = impratio
    m.opt.tolerance = 1e-12
    m.opt.iterations = 1000
    m.opt.ls_iterations = 100
    d = mujoco.MjData(m)
    rng = np.random.default_rng(7)
    d.qpos[:] = m.qpos0
    d.qpos[2] = 0.12
    d.qpos[3:7] = [np.cos(np.pi / 4), 0, np.sin(np.pi / 4), 0]     # lying on its back
    lo, hi = m.jnt_range[1:, 0], m.jnt_range[1:, 1]
    d.qpos[7:] = lo + (hi - lo) * rng.uniform(0.0, 1.0, m.nq - 7) * 1.02 - 0.01 * (hi - lo)
    d.qvel[:] = rng.normal(scale=0.5, size=m.nv)
    mujoco.mj_forward(m, d)
    return m, d
