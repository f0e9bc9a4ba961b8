"""MuJoCo scenes at a frozen state, and the constraint stages run alone on MuJoCo's arrays.

``MjStage`` fills a blank View (plugins/rigid/model.py) with MuJoCo's model arrays (dof tree,
inverse weights, limits, frictionloss, equalities) and state (cdof, link poses, contacts), then runs
the stage functions of the rigid plugin on it: constraint_rows.make_rows, convex_solve /
signorini_solve, noslip, contact_forces, factorization.mass_dense. The frozen-state tests compare
their outputs with MuJoCo's (efc rows, efc_J, mj_solve's forces, mj_contactForce).
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

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


@dataclass
class StageOptions:
    """Solver settings of MjStage, written into the View's Option struct before each launch."""

    solver: str = "Newton"
    cone: str = "pyramidal"
    iterations: int = 25
    tolerance: float = 1e-9
    ls_iterations: int = 50
    ls_tolerance: float = 0.01
    impratio: float = 1.0
    timeconst_floor: float = 0.0
    warm_pick_lower: bool = False
    resolution: str = "convex"
    noslip_iterations: int = 0
    noslip_tolerance: float = 1e-6
    noslip_scale: float = 0.0
    islands: bool = False

    def apply(self, opt, s):
        from polyphys.plugins.rigid.codes import ConeType, SolverType
        opt.cone = int(ConeType[self.cone.upper()])
        opt.solver = int(SolverType[self.solver.upper()])
        opt.iterations = int(self.iterations)
        opt.tolerance = s(self.tolerance)
        opt.ls_iterations = int(self.ls_iterations)
        opt.ls_tolerance = s(self.ls_tolerance)
        opt.impratio = s(self.impratio)
        opt.tc_floor = s(self.timeconst_floor)
        opt.warm_pick_lower = int(self.warm_pick_lower)
        opt.stop_needs_gradient = 0
        opt.noslip_iterations = int(self.noslip_iterations)
        opt.noslip_tolerance = s(self.noslip_tolerance)
        opt.noslip_scale = s(self.noslip_scale)
        opt.islands = int(self.islands)


# old stage attribute names -> Data fields
_DATA = {"n_efc": "nefc", "qacc": "qacc_warmstart", "efc_floss": "efc_frictionloss", "overflow": "efc_overflow",
         "n_con": "ncon", "M": "qM", "link_force": "link_contact_force", "link_torque": "link_contact_torque",
         "sig_nhalf": "solver_nhalf", "efc_load": "efc_load"}


class MjStage:
    """The rigid plugin's constraint stages on a View holding MuJoCo's arrays (n_envs envs, nv dofs,
    nbody links, max_contacts contacts, max_rows rows). Attributes read the View's Data under the
    stage names of these tests (``n_efc`` → nefc, ``qacc`` → qacc_warmstart, ...)."""

    def __init__(self, n_envs, nv, nbody, max_contacts, max_rows, device="cpu", precision="64", options=None, *,
                 dof_parent, link_dof_last, link_invweight, dof_invweight, dof_frictionloss=None, dof_sol=None,
                 lim_dof=(), lim_qadr=(), lim_ball=None, lim_range=None, lim_margin=None, lim_sol=None, eq_type=(),
                 eq_obj=None, eq_data=None, eq_sol=None):
        import warp as wp
        from polyphys.plugins.rigid.model import blank_view

        self.opt = options or StageOptions()
        self.n_envs, self.nv, self.max_rows, self.max_contacts, self.device = n_envs, nv, max_rows, max_contacts, device
        self.precision = precision
        v = self.v = blank_view(precision, n_envs, device)
        s = self.scalar = v.scalar
        npf = np.float64 if precision == "64" else np.float32
        self.V, self.Q, self.Mt = wp.types.vector(3, s), wp.types.quaternion(s), wp.types.matrix((3, 3), s)
        E, nl, neq = n_envs, len(lim_dof), len(eq_type)

        def arr(x, dtype=s, shape=None):
            x = np.zeros(shape) if x is None else np.asarray(x)
            x = x.reshape(shape) if shape is not None else x
            x = x.astype(np.int32) if dtype == wp.int32 else x.astype(npf)
            return wp.array(np.ascontiguousarray(x), dtype=dtype, device=device)

        m, d = v.m, v.d
        m.nv, m.nl, m.nlim, m.neq, m.max_rows, m.max_con = nv, nbody, nl, neq, max_rows, max_contacts
        m.dof_parent = arr(dof_parent, wp.int32, (nv,))
        m.link_dof_last = arr(link_dof_last, wp.int32, (nbody,))
        m.link_invweight = arr(link_invweight, s, (nbody, 2))
        m.dof_invweight = arr(dof_invweight, s, (nv,))
        m.dof_frictionloss = arr(np.zeros((E, nv)) if dof_frictionloss is None else dof_frictionloss, s, (E, nv))
        dsol = np.tile([0.02, 1.0, 0.9, 0.95, 0.001, 0.5, 2.0], (nv, 1)) if dof_sol is None else dof_sol
        m.dof_sol = arr(np.tile(np.asarray(dsol)[None], (E, 1, 1)), s, (E, nv, 7))
        m.lim_dof = arr(lim_dof, wp.int32, (nl,))
        m.lim_qadr = arr(lim_qadr, wp.int32, (nl,))
        m.lim_ball = arr(lim_ball, wp.int32, (nl,))
        m.lim_range = arr(lim_range, s, (nl, 2))
        m.lim_margin = arr(lim_margin, s, (nl,))
        m.lim_sol = arr(np.tile(np.zeros((max(nl, 1), 7)) if lim_sol is None or nl == 0 else
                                np.asarray(lim_sol).reshape(nl, 7)[None], (E, 1, 1)), s)
        m.eq_type = arr(eq_type, wp.int32, (neq,))
        m.eq_obj = arr(eq_obj, wp.int32, (neq, 4))
        m.eq_data = arr(eq_data, s, (neq, 11))
        m.eq_sol = arr(np.zeros((E, max(neq, 1), 7)) if eq_sol is None or neq == 0 else eq_sol, s)
        z = lambda *sh, dt=s: wp.zeros(sh, dtype=dt, device=device)  # noqa: E731
        C, R = max_contacts, max_rows
        d.eq_active = arr(np.ones((E, max(neq, 1))), wp.int32)
        d.eq_acc_bias = z(E, max(neq, 1), 6)
        d.ncon = z(E, dt=wp.int32)
        d.con_pos, d.con_frame = z(E, C, dt=self.V), z(E, C, dt=self.Mt)
        d.con_dist, d.con_margin = z(E, C), z(E, C)
        d.con_link = z(E, C, 2, dt=wp.int32)
        d.con_dim, d.con_efc_adr = z(E, C, dt=wp.int32), z(E, C, dt=wp.int32)
        d.con_friction, d.con_sol, d.con_solreffriction = z(E, C, 5), z(E, C, 7), z(E, C, 2)
        d.con_wrench = z(E, C, 6)
        d.con_force_world, d.con_torque_world = z(E, C, dt=self.V), z(E, C, dt=self.V)
        d.con_valid = z(E, C, dt=wp.int32)
        d.nefc, d.efc_overflow = z(E, dt=wp.int32), z(E, dt=wp.int32)
        d.efc_pad = z(E, dt=wp.int32)
        d.efc_J = z(E, R, nv)
        # rows assigned here from MuJoCo's efc_J: every column may be nonzero (make_rows narrows them)
        d.efc_span = arr(np.tile(np.array([0, nv]), (E, R, 1)), wp.int32)
        d.efc_chain = arr(np.full((E, R, 2), -2), wp.int32)
        d.efc_seg = arr(np.full((E, R, 4), -1), wp.int32)      # no segments recorded: the solve scans J
        for name in ("efc_type", "efc_id", "efc_dim", "efc_state"):
            setattr(d, name, z(E, R, dt=wp.int32))
        for name in ("efc_pos", "efc_margin", "efc_vel", "efc_aref", "efc_R", "efc_D", "efc_imp", "efc_frictionloss",
                     "efc_mu", "efc_force", "solver_jar", "solver_jv", "efc_load", "efc_dload"):
            setattr(d, name, z(E, R))
        d.efc_MiJ = z(E, R, nv)
        for name in ("qM", "solver_H", "solver_LM"):
            setattr(d, name, z(E, nv, nv))
        for name in ("qacc_smooth", "qacc_warmstart", "qfrc_constraint", "solver_grad", "solver_mgrad",
                     "solver_mgrad_old", "solver_search", "solver_ma", "solver_mv", "solver_ma0", "dof_dv"):
            setattr(d, name, z(E, nv))
        d.solver_niter, d.solver_nhalf, d.noslip_niter = z(E, dt=wp.int32), z(E, dt=wp.int32), z(E, dt=wp.int32)
        d.solver_stat, d.noslip_stat = z(E, 3), z(E)
        d.nisland = z(E, dt=wp.int32)
        for name in ("island_niter", "dof_island", "island_dofs", "dof_idof"):
            setattr(d, name, z(E, nv, dt=wp.int32))
        d.island_dofadr, d.island_efcadr = z(E, nv + 1, dt=wp.int32), z(E, nv + 1, dt=wp.int32)
        for name in ("efc_island", "island_efcs", "iefc_type", "iefc_dim", "iefc_state"):
            setattr(d, name, z(E, R, dt=wp.int32))
        d.island_scratch = z(E, 3, nv + 1, dt=wp.int32)
        d.island_key_nefc = wp.full(E, -1, dtype=wp.int32, device=device)     # no labels yet: the first labelling relabels
        d.island_key_type, d.island_key_id = z(E, R, dt=wp.int32), z(E, R, dt=wp.int32)
        d.island_key_link = z(E, max(C, 1), 2, dt=wp.int32)
        d.iM, d.iefc_J, d.iefc_span = z(E, nv, nv), z(E, R, nv), z(E, R, 4, dt=wp.int32)
        for name in ("iefc_D", "iefc_R", "iefc_frictionloss", "iefc_mu", "iefc_aref", "iefc_force", "iefc_jar"):
            setattr(d, name, z(E, R))
        d.iacc_smooth, d.iacc, d.ifrc_constraint, d.igrad, d.ima = (z(E, nv) for _ in range(5))
        d.qpos = z(E, 1)
        d.qvel = z(E, nv)
        for name in ("cdof_w", "cdof_v", "dof_ref"):
            setattr(d, name, z(E, nv, dt=self.V))
        d.link_pos, d.link_quat = z(E, nbody, dt=self.V), z(E, nbody, dt=self.Q)
        d.link_xipos = z(E, nbody, dt=self.V)
        for name in ("link_contact_force", "link_contact_torque", "link_impulse_force", "link_impulse_torque"):
            setattr(d, name, z(E, nbody, dt=self.V))
        self.model = m

    def __getattr__(self, name):
        if name.startswith("_") or name in ("v",):
            raise AttributeError(name)
        return getattr(self.v.d, _DATA.get(name, name))

    def _view(self, part):
        from polyphys.plugins.rigid.model import view
        self.opt.apply(self.v.m.opt, self.scalar)
        if part is None:
            return self.v
        return view(self.v.m, self.v.d, part.start, part.stop, self.precision, self.device)

    def build_rows(self, qpos, qvel, cdof_w, cdof_v, dof_ref, link_pos, link_quat, part=None):
        import warp as wp
        from polyphys.plugins.rigid import constraint_rows
        d = self.v.d
        if d.qpos.shape != qpos.shape:
            d.qpos = wp.zeros(qpos.shape, dtype=self.scalar, device=self.device)
        for name, a in (("qpos", qpos), ("qvel", qvel), ("cdof_w", cdof_w), ("cdof_v", cdof_v), ("dof_ref", dof_ref),
                        ("link_pos", link_pos), ("link_quat", link_quat)):
            wp.copy(getattr(d, name), a)
        constraint_rows.make_rows(self._view(part))

    def solve(self, M, qacc_smooth, qacc_warm, part=None):
        """qacc into d.qacc_warmstart (as the solver's step), forces, qfrc_constraint; then noslip."""
        import warp as wp
        from polyphys.plugins.rigid import convex_solve, noslip, signorini_solve
        d = self.v.d
        if M is not d.qM:
            wp.copy(d.qM, M)
        if qacc_smooth is not d.qacc_smooth:
            wp.copy(d.qacc_smooth, qacc_smooth)
        v = self._view(part)
        warm = qacc_warm if part is None else qacc_warm[part.start:part.stop]
        (signorini_solve if self.opt.resolution == "signorini" else convex_solve).solve(v, warm)
        if self.opt.noslip_iterations > 0:
            noslip.noslip(v)

    def noslip(self, M, qacc_smooth, part=None):
        import warp as wp
        from polyphys.plugins.rigid import noslip
        wp.copy(self.v.d.qM, M)
        wp.copy(self.v.d.qacc_smooth, qacc_smooth)
        noslip.noslip(self._view(part))

    def mass_from_tree(self, dof_madr, dof_depth, m_col, mass, diag_add, part=None):
        """d.qM = dense M from tree-sparse rows + diag_add on the diagonal (factorization.mass_dense
        with hd = 1 and D = diag_add)."""
        import warp as wp
        from polyphys.plugins.rigid import factorization
        m, d = self.v.m, self.v.d
        m.dof_madr, m.dof_depth, m.m_col = dof_madr, dof_depth, m_col
        d.mass = mass
        wp.copy(d.dof_dv, diag_add)
        factorization.mass_dense(self._view(part), 1.0)

    def contact_params(self, con_geom, geom_friction, geom_sol, geom_condim, friction_ratio, mujoco_mode=False,
                       geom_solmix=None, geom_priority=None, h=0.0, part=None, con_pair=None, pair_condim=None,
                       pair_friction=None, pair_sol=None):
        """constraint_rows.contact_params with these geom / pair tables (docs/semantics.md §R5 or mj_contactParam)."""
        import warp as wp
        from polyphys.plugins.rigid import constraint_rows
        from polyphys.plugins.rigid.constraint import FRICTION_FLOOR, FRICTION_FLOOR_MUJOCO
        m, d, s = self.v.m, self.v.d, self.scalar
        G = geom_friction.shape[-2]
        a = lambda x, dt=s: wp.array(np.ascontiguousarray(x), dtype=dt, device=self.device)  # noqa: E731
        gf = geom_friction.numpy()
        m.geom_friction = a(np.broadcast_to(gf, (self.n_envs, G, 3)) if gf.ndim == 2 else gf)
        m.geom_sol, m.geom_condim, m.geom_friction_ratio = geom_sol, geom_condim, friction_ratio
        m.geom_solmix = geom_solmix if geom_solmix is not None else a(np.ones(G))
        m.geom_priority = geom_priority if geom_priority is not None else a(np.zeros(G), wp.int32)
        m.pair_condim = pair_condim if pair_condim is not None else a(np.zeros(1), wp.int32)
        pf = pair_friction.numpy() if pair_friction is not None else np.zeros((1, 5))
        m.pair_friction = a(np.broadcast_to(pf, (self.n_envs,) + pf.shape) if pf.ndim == 2 else pf)
        m.pair_solreffriction = a(np.zeros((pf.shape[-2], 2)))
        m.pair_sol = pair_sol if pair_sol is not None else a(np.zeros((1, 7)))
        d.con_geom = con_geom
        d.con_pair = con_pair if con_pair is not None else a(np.full((self.n_envs, self.max_contacts), -1), wp.int32)
        self.opt.timeconst_floor = 2.0 * h
        v = self._view(part)
        m.opt.mujoco_mode = int(mujoco_mode)
        m.opt.friction_floor = s(FRICTION_FLOOR_MUJOCO if mujoco_mode else FRICTION_FLOOR)
        if part is not None:
            v = self._view(part)
        constraint_rows.contact_params(v)

    def contact_wrenches(self, part=None, fused=False):
        """contact_forces.contact_wrench; ``fused``: contact_forces.contact_link_wrench (the step's one launch
        for it and the link sums; query mode: the impulse sums untouched)."""
        from polyphys.plugins.rigid import contact_forces
        if fused:
            contact_forces.contact_link_wrench(self._view(part), contact_forces.NONE)
        else:
            contact_forces.contact_wrench(self._view(part))

    def link_wrenches(self, link_com, h=0.0, accumulate=False, first_substep=False, part=None):
        import warp as wp
        from polyphys.plugins.rigid import contact_forces
        wp.copy(self.v.d.link_xipos, link_com)
        self.v.m.opt.timestep = self.scalar(h)
        contact_forces.link_contact_wrench(self._view(part), 2 if first_substep else int(bool(accumulate)))

    def check(self):
        from polyphys.errors import SimulationError
        ov = self.v.d.efc_overflow.numpy()
        if ov.any():
            e = int(np.nonzero(ov)[0][0])
            raise SimulationError(f"constraint rows exceed max_rows={self.max_rows} in env {e}; raise max_rows")


def stage_for(m, d, max_rows=80, precision="64", with_bias=True, n_envs=1, **opt):
    """MjStage with MuJoCo's model arrays, contacts copied in; returns (stage, tree inputs)."""
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
    opts = StageOptions(cone="elliptic" if m.opt.cone == 1 else "pyramidal", impratio=m.opt.impratio,
                             timeconst_floor=2 * m.opt.timestep, **opt)
    E = n_envs
    st = MjStage(
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
        st.con_solreffriction.assign(t(c.solreffriction))
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
    st.efc_id.assign(np.asarray(d.efc_id, np.int32)[None])
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
