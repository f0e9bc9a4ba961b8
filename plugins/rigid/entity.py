"""RigidEntity: the control, force, dynamics and contact API of a rigid joint tree. The q, dof,
link and base getters and setters of docs/semantics.md §S1-§S4 are core's ``ArticulatedEntity`` (shared with the
kinematic solver).

Getters return NumPy copies (batch axis first; none for n_envs=0). Setters write the device arrays
in place outside the step and refresh kinematics and dynamics (``solver.forward()``).
"""

from __future__ import annotations

import numpy as np
from polyphys.articulated import ArticulatedEntity, JointInfo  # noqa: F401  (JointInfo: re-exported)
from polyphys.description import EntityDescription
from polyphys.errors import OptionError
from polyphys.kinematics import quat_mul, quat_rotate

from .codes import CtrlMode


class RigidEntity(ArticulatedEntity):
    ZERO_VELOCITY = True            # docs/semantics.md §S4: rigid set_qpos zeroes the velocity by default

    def __init__(self, solver, idx, morph, material, surface, name, desc: EntityDescription):
        super().__init__(solver, idx, morph, material, surface, name, desc)
        self.n_actuators = len(desc.actuators)

    def _bind(self, link_start, joint_start, q_start, dof_start):
        super()._bind(link_start, joint_start, q_start, dof_start)
        a0 = sum(e.n_actuators for e in self.solver.entities[:self.idx])
        self._as = slice(a0, a0 + self.n_actuators)

    @property
    def actuators(self):
        return [a.name for a in self.description.actuators]

    def _one_link(self, link_idx_local) -> int:
        li = self._local_idx([link_idx_local], self.n_links, "link_idx_local")
        if li.size != 1:
            raise OptionError(f"link_idx_local = {link_idx_local!r}: expected one link index")
        return int(li[0])

    def _set(self, arr, name, value, idx_local, n, base: int, envs_idx, what="dofs_idx_local"):
        envs = self._envs(envs_idx)
        idx = self._local_idx(idx_local, n, what)
        vals = self._in(name, value, (len(idx),), envs)
        self.solver._write(arr, envs, base + idx, vals)
        return envs, idx

    def get_qacc(self, envs_idx=None):
        """Acceleration of the last step (or M⁻¹f after forward())."""
        return self._read(self.solver.data.qacc, self._ds, None, self._envs(envs_idx))

    # -- forces ----------------------------------------------------------------------------------
    def get_qfrc(self, kind: str = "smooth", envs_idx=None):
        """Generalized forces of the last forward/step: kind = bias (gravity, Coriolis, centrifugal;
        MuJoCo qfrc_bias), passive, actuator (MJCF actuators), control (PD/velocity/force control),
        external (gravity compensation and link wrenches), smooth (passive + actuator + control +
        applied + external − bias: M·qacc without constraints), constraint (Jᵀλ of the last
        constraint solve; zero without one)."""
        kinds = ("bias", "passive", "actuator", "control", "external", "smooth", "constraint")
        if kind not in kinds:
            raise OptionError(f"get_qfrc(kind={kind!r}): allowed {list(kinds)}")
        envs = self._envs(envs_idx)
        if kind == "constraint" and not self.solver.has_constraint:
            return self._out(np.zeros((self.solver.layout.n_envs, self.n_dofs)), envs)
        arr = getattr(self.solver.data, "qfrc_ext" if kind == "external" else f"qfrc_{kind}")
        return self._read(arr, self._ds, None, envs)

    def get_dofs_force(self, dofs_idx_local=None, envs_idx=None):
        """Actuation force per dof: MJCF actuators plus PD/velocity/force control."""
        idx = self._local_idx(dofs_idx_local, self.n_dofs, "dofs_idx_local")
        envs = self._envs(envs_idx)
        a = self.solver.data.qfrc_actuator.numpy() + self.solver.data.qfrc_control.numpy()
        return self._out(a[:, self._ds][:, idx].astype(float), envs)

    def get_mass_mat(self, envs_idx=None):
        """The joint-space mass matrix (armature included) of this entity, (n_dofs, n_dofs) per env."""
        envs = self._envs(envs_idx)
        return self._out(self.solver.mass_matrix(self._ds, envs))

    # -- control ---------------------------------------------------------------------------------
    def _control(self, mode, arr, name, value, dofs_idx_local, envs_idx):
        if mode == CtrlMode.POSITION:
            idx = self._local_idx(dofs_idx_local, self.n_dofs, "dofs_idx_local")
            types = [self._dof_joint_type(i) for i in idx]
            bad = [int(i) for i, t in zip(idx, types) if t not in ("revolute", "prismatic")]
            if bad:
                raise OptionError(f"control_dofs_position: dofs {bad} belong to free/spherical joints; "
                                  f"position control is for revolute/prismatic dofs (use velocity)")
        envs, idx = self._set(arr, name, value, dofs_idx_local, self.n_dofs, self._ds.start, envs_idx)
        self.solver._write(self.solver.data.dof_mode, envs, self._ds.start + idx,
                           np.full((len(envs), len(idx)), int(mode), np.int32))

    def _dof_joint_type(self, i):
        for j in self.joints:
            if i in j.dof_idx_local:
                return j.type
        return None

    def control_dofs_force(self, force, dofs_idx_local=None, envs_idx=None):
        """Force (torque) on each dof, kept until changed (clamped to the dof force range)."""
        self._control(CtrlMode.FORCE, self.solver.data.dof_target_force, "force", force, dofs_idx_local, envs_idx)

    set_dofs_force = control_dofs_force

    def control_dofs_position(self, position, dofs_idx_local=None, envs_idx=None):
        """PD target in dofs-position units (q − ref): τ = kp·(target − pos) − kv·vel."""
        self._control(CtrlMode.POSITION, self.solver.data.dof_target_pos, "position", position, dofs_idx_local,
                      envs_idx)
        idx = self._local_idx(dofs_idx_local, self.n_dofs, "dofs_idx_local")
        kp = self.solver.model.dof_kp.numpy()[self._envs(envs_idx)][:, self._ds.start + idx]
        if (kp == 0).any():   # the default: a position target alone would do nothing
            self._warn_once("zero_kp", f"control_dofs_position: dofs {idx[(kp == 0).any(axis=0)].tolist()} have kp = 0, "
                                       f"so the position target has no effect; set gains with set_dofs_kp (and "
                                       f"set_dofs_kv)")

    def control_dofs_velocity(self, velocity, dofs_idx_local=None, envs_idx=None):
        """Velocity target: τ = kv·(target − vel)."""
        self._control(CtrlMode.VELOCITY, self.solver.data.dof_target_vel, "velocity", velocity, dofs_idx_local,
                      envs_idx)

    def _param(self, name, value, dofs_idx_local, envs_idx, check=None):
        arr = getattr(self.solver.model, name)
        envs = self._envs(envs_idx)
        idx = self._local_idx(dofs_idx_local, self.n_dofs, "dofs_idx_local")
        vals = self._in(name, value, (len(idx),), envs)
        if check is not None:
            check(vals)
        self.solver._write(arr, envs, self._ds.start + idx, vals)
        self.solver.forward()

    @staticmethod
    def _nonneg(what):
        def check(vals):
            if np.any(vals < 0):
                raise OptionError(f"{what} = {vals.tolist()}: values must be >= 0")
        return check

    def set_dofs_kp(self, kp, dofs_idx_local=None, envs_idx=None):
        self._param("dof_kp", kp, dofs_idx_local, envs_idx, self._nonneg("kp"))

    def set_dofs_kv(self, kv, dofs_idx_local=None, envs_idx=None):
        self._param("dof_kv", kv, dofs_idx_local, envs_idx, self._nonneg("kv"))

    def set_dofs_force_range(self, lower, upper, dofs_idx_local=None, envs_idx=None):
        # both bounds are checked before either is written
        envs = self._envs(envs_idx)
        n = len(self._local_idx(dofs_idx_local, self.n_dofs, "dofs_idx_local"))
        lo, hi = self._in("lower", lower, (n,), envs), self._in("upper", upper, (n,), envs)
        if np.any(lo > hi):
            raise OptionError(f"set_dofs_force_range: lower {lo.tolist()} > upper {hi.tolist()}")
        self._param("dof_force_lo", lower, dofs_idx_local, envs_idx)
        self._param("dof_force_hi", upper, dofs_idx_local, envs_idx)

    def set_dofs_damping(self, damping, dofs_idx_local=None, envs_idx=None):
        self._param("dof_damping", damping, dofs_idx_local, envs_idx, self._nonneg("damping"))

    def set_dofs_armature(self, armature, dofs_idx_local=None, envs_idx=None):
        self._param("dof_armature", armature, dofs_idx_local, envs_idx, self._nonneg("armature"))

    def set_dofs_stiffness(self, stiffness, dofs_idx_local=None, envs_idx=None):
        self._param("dof_stiffness", stiffness, dofs_idx_local, envs_idx, self._nonneg("stiffness"))

    def get_dofs_param(self, name: str, dofs_idx_local=None, envs_idx=None):
        """Per-env dof parameter: damping, armature, stiffness, kp, kv, force_lo, force_hi."""
        key = f"dof_{name}"
        if name not in ("damping", "armature", "stiffness", "kp", "kv", "force_lo", "force_hi"):
            raise OptionError(f"get_dofs_param({name!r}): allowed damping, armature, stiffness, kp, kv, "
                              f"force_lo, force_hi")
        idx = self._local_idx(dofs_idx_local, self.n_dofs, "dofs_idx_local")
        return self._read(getattr(self.solver.model, key), self._ds, idx, self._envs(envs_idx))

    # -- MJCF actuators --------------------------------------------------------------------------
    def set_ctrl(self, ctrl, actuators_idx_local=None, envs_idx=None):
        """Actuator controls (MuJoCo's ctrl; clamped to ctrlrange when ctrllimited)."""
        if self.n_actuators == 0:
            raise OptionError(f"entity {self.name!r} has no actuators")
        self._set(self.solver.data.ctrl, "ctrl", ctrl, actuators_idx_local, self.n_actuators, self._as.start,
                  envs_idx, "actuators_idx_local")
        self.solver.forward()

    def get_ctrl(self, envs_idx=None):
        return self._read(self.solver.data.ctrl, self._as, None, self._envs(envs_idx))

    def get_actuator_force(self, envs_idx=None):
        return self._read(self.solver.data.act_force, self._as, None, self._envs(envs_idx))

    # -- external forces -------------------------------------------------------------------------
    def apply_links_external_force(self, force, links_idx_local=None, envs_idx=None, pos=None,
                                   local: bool = False):
        """Force (world frame, N) on links for the next step, at ``pos`` (world point; default the
        link CoM). ``local=True``: force and pos are in the link frame (pos relative to its origin).
        The wrench is converted to force + torque about the CoM at the current pose."""
        envs = self._envs(envs_idx)
        idx = self._local_idx(links_idx_local, self.n_links, "links_idx_local")
        f = self._in("force", force, (len(idx), 3), envs)
        gl = self._ls.start + idx
        self.solver.sync_kinematics()
        xq = self.solver.data.link_quat.numpy()[envs][:, gl].astype(float)[..., [3, 0, 1, 2]]
        xp = self.solver.data.link_pos.numpy()[envs][:, gl].astype(float)
        com = self.solver.data.link_xipos.numpy()[envs][:, gl].astype(float)
        if local:
            f = quat_rotate(xq, f)
        torque = np.zeros_like(f)
        if pos is not None:
            p = self._in("pos", pos, (len(idx), 3), envs)
            p = xp + quat_rotate(xq, p) if local else p
            torque = np.cross(p - com, f)
        self._add([(self.solver.data.xfrc_force, f), (self.solver.data.xfrc_torque, torque)], envs, gl)

    def apply_links_external_torque(self, torque, links_idx_local=None, envs_idx=None, local: bool = False):
        envs = self._envs(envs_idx)
        idx = self._local_idx(links_idx_local, self.n_links, "links_idx_local")
        t = self._in("torque", torque, (len(idx), 3), envs)
        gl = self._ls.start + idx
        if local:
            self.solver.sync_kinematics()
            xq = self.solver.data.link_quat.numpy()[envs][:, gl].astype(float)[..., [3, 0, 1, 2]]
            t = quat_rotate(xq, t)
        self._add([(self.solver.data.xfrc_torque, t)], envs, gl)

    def _add(self, items, envs, cols):
        """arr[envs, cols] += vals for every (arr, vals) in ``items``; all sums are checked first."""
        hosts = []
        for arr, vals in items:
            host = arr.numpy()
            total = host[envs[:, None], cols[None, :]].astype(np.float64) + vals
            big = float(np.finfo(host.dtype).max)
            if not np.all(np.abs(total) <= big):   # the sum (or a torque p x f) leaves the storage precision
                raise OptionError(f"external force/torque: the accumulated value {float(np.abs(total).max()):.4g} is "
                                  f"not finite in the {host.dtype} storage (|x| <= {big:.4g}); nothing was applied")
            hosts.append((arr, host, total))
        for arr, host, total in hosts:
            host[envs[:, None], cols[None, :]] = total
            arr.assign(host)

    # -- links ----------------------------------------------------------------------------------
    def get_links_com(self, links_idx_local=None, envs_idx=None):
        """Link centres of mass (world)."""
        return self._links(self.solver.data.link_xipos, links_idx_local, envs_idx)

    def get_links_mass(self, links_idx_local=None, envs_idx=None):
        return self._links(self.solver.model.link_mass, links_idx_local, envs_idx)

    def set_links_mass(self, mass, links_idx_local=None, envs_idx=None):
        """Per-env link mass (the inertia tensor scales with it: constant density)."""
        envs = self._envs(envs_idx)
        idx = self._local_idx(links_idx_local, self.n_links, "links_idx_local")
        vals = self._in("mass", mass, (len(idx),), envs)
        if np.any(vals < 0):
            raise OptionError(f"set_links_mass: mass {vals.tolist()} must be >= 0")
        gl = self._ls.start + idx
        p = self.solver.model
        old = p.link_mass.numpy()[envs][:, gl].astype(float)
        inertia = p.link_inertia.numpy()[envs][:, gl].astype(float)
        scale = np.divide(vals, old, out=np.ones_like(vals), where=old > 0)
        self.solver._write(p.link_mass, envs, gl, vals)
        self.solver._write(p.link_inertia, envs, gl, inertia * scale[..., None, None])
        self.solver.forward()
        try:
            self.solver._check_masses()
        except Exception as exc:
            self.solver._write(p.link_mass, envs, gl, old)
            self.solver._write(p.link_inertia, envs, gl, inertia)
            self.solver.forward()
            raise OptionError(f"set_links_mass({vals.tolist()}): {exc} (unchanged)") from None

    def set_links_com(self, com, links_idx_local=None, envs_idx=None):
        """Per-env CoM offset in the link frame (the inertia about the CoM is kept)."""
        envs = self._envs(envs_idx)
        idx = self._local_idx(links_idx_local, self.n_links, "links_idx_local")
        vals = self._in("com", com, (len(idx), 3), envs)
        self.solver._write(self.solver.model.link_com, envs, self._ls.start + idx, vals)
        self.solver.forward()

    # -- dynamics and kinematics queries ---------------------------------------------------------
    def inverse_dynamics(self, qacc, envs_idx=None):
        """Generalized force that produces ``qacc`` at the current state (MuJoCo's qfrc_inverse):
        M·qacc + bias − passive − external, i.e. the actuation (MJCF actuators, control, applied)."""
        envs = self._envs(envs_idx)
        a = self._in("qacc", qacc, (self.n_dofs,), envs)
        M = self.solver.mass_matrix(self._ds, envs)
        d = self.solver.data
        rest = sum(getattr(d, k).numpy()[envs][:, self._ds].astype(float) * sgn
                   for k, sgn in (("qfrc_bias", 1.0), ("qfrc_passive", -1.0), ("qfrc_ext", -1.0)))
        return self._out(np.einsum("eij,ej->ei", M, a) + rest)

    def get_jacobian(self, link_idx_local: int, point=None, envs_idx=None):
        """Jacobian (6, n_dofs) per env of a point fixed to a link: rows 0-2 map dof velocities to
        the point's world linear velocity, rows 3-5 to the link's world angular velocity. ``point``:
        world position(s), (3,) or (n_envs, 3); default the link origin (as MuJoCo's mj_jac)."""
        envs = self._envs(envs_idx)
        li = self._one_link(link_idx_local)
        return self._out(self._jacobian(li, point, envs))

    def _jacobian(self, li: int, point, envs: np.ndarray) -> np.ndarray:
        s, d = self.solver, self.solver.data
        s.sync_kinematics()
        gl = self.link_start + li
        if point is None:
            p = d.link_pos.numpy()[envs, gl].astype(float)
        else:
            p = self._in("point", point, (3,), envs)
        ref = d.link_pos.numpy()[envs, s.hm.link_root[gl]].astype(float)
        w = d.cdof_w.numpy()[envs][:, self._ds].astype(float)          # (n, nd, 3)
        v = d.cdof_v.numpy()[envs][:, self._ds].astype(float)
        lin = v + np.cross(w, (p - ref)[:, None, :])
        mask = s.hm.link_dof_mask[gl, self._ds]
        J = np.concatenate([lin, w], axis=2).transpose(0, 2, 1) * mask[None, None, :]
        return J

    def inverse_kinematics(self, link_idx_local: int, pos, quat=None, dofs_idx_local=None, init_qpos=None,
                           max_iters: int = 50, tol: float = 1e-8, damping: float = 1e-4, envs_idx=None):
        """Batched damped-least-squares IK for one link: every env iterates at once
        (Δq = Jᵀ(JJᵀ + λ²I)⁻¹e over the chosen dofs). ``pos`` (3,) or (n_envs, 3) world target of the
        link origin; ``quat`` optional (w, x, y, z) target orientation. Returns ``(qpos, err)``: the
        solution (n_envs, n_qs) and the final error norm per env. The simulation state is untouched.
        """
        envs = self._envs(envs_idx)
        li = self._one_link(link_idx_local)
        dofs = self._local_idx(dofs_idx_local, self.n_dofs, "dofs_idx_local")
        if not (isinstance(max_iters, int) and max_iters >= 1):
            raise OptionError(f"inverse_kinematics(max_iters={max_iters!r}): must be an integer >= 1")
        if not damping >= 0:
            raise OptionError(f"inverse_kinematics(damping={damping!r}): must be >= 0")
        tgt_p = self._in("pos", pos, (3,), envs)
        tgt_q = None
        if quat is not None:
            tgt_q = self._in("quat", quat, (4,), envs)
            tgt_q = tgt_q / np.linalg.norm(tgt_q, axis=1, keepdims=True)
        s = self.solver
        saved_q, saved_v = s.data.qpos.numpy().copy(), s.data.qvel.numpy().copy()
        q = saved_q[envs][:, self._qs].astype(float) if init_qpos is None else \
            self._normalize_quats(self._in("init_qpos", init_qpos, (self.n_qs,), envs))
        gl = self.link_start + li
        err = np.full(len(envs), np.inf)
        try:
            for _ in range(max_iters):
                host = saved_q.copy()
                host[envs[:, None], np.arange(host.shape[1])[self._qs][None, :]] = q
                s.data.qpos.assign(host)
                s.kinematics()
                x = s.data.link_pos.numpy()[envs, gl].astype(float)
                e = tgt_p - x
                J = self._jacobian(li, None, envs)[:, :, dofs]
                if tgt_q is not None:
                    xq = s.data.link_quat.numpy()[envs, gl].astype(float)[:, [3, 0, 1, 2]]
                    conj = xq * np.array([1.0, -1.0, -1.0, -1.0])
                    dq = quat_mul(tgt_q, conj)
                    dq *= np.sign(dq[:, :1] + (dq[:, :1] == 0))
                    sin = np.linalg.norm(dq[:, 1:], axis=1, keepdims=True)
                    ang = 2 * np.arctan2(sin, dq[:, :1])
                    rotvec = np.where(sin > 1e-15, dq[:, 1:] / np.maximum(sin, 1e-300) * ang, 2 * dq[:, 1:])
                    e = np.concatenate([e, rotvec], axis=1)
                else:
                    J = J[:, :3]
                err = np.linalg.norm(e, axis=1)
                if np.all(err < tol):
                    break
                JJt = J @ J.transpose(0, 2, 1) + damping ** 2 * np.eye(J.shape[1])[None]
                step = (J.transpose(0, 2, 1) @ np.linalg.solve(JJt, e[..., None]))[..., 0]
                full = np.zeros((len(envs), self.n_dofs))
                full[:, dofs] = step
                q = self._integrate_host(q, full)
        finally:
            s.data.qpos.assign(saved_q)
            s.data.qvel.assign(saved_v)
            s.forward()
        return self._out(q), (float(err[0]) if not self.scene.batched else err)

    def _integrate_host(self, q: np.ndarray, dv: np.ndarray) -> np.ndarray:
        """q ⊕ dv on the host (quaternions right-multiplied by exp(local rotation vector))."""
        q = q.copy()
        for j in self.joints:
            qs, ds = j.q_idx_local, j.dof_idx_local
            if j.type in ("revolute", "prismatic"):
                q[:, qs[0]] += dv[:, ds[0]]
            elif j.type in ("free", "spherical"):
                r0 = 0
                if j.type == "free":
                    q[:, qs[0]:qs[0] + 3] += dv[:, ds[0]:ds[0] + 3]
                    r0 = 3
                w = dv[:, ds[0] + r0:ds[0] + r0 + 3]
                ang = np.linalg.norm(w, axis=1, keepdims=True)
                axis = np.where(ang > 0, w / np.maximum(ang, 1e-300), 0.0)
                dq = np.concatenate([np.cos(ang / 2), axis * np.sin(ang / 2)], axis=1)
                a = qs[0] + r0
                nq = quat_mul(q[:, a:a + 4], dq)
                q[:, a:a + 4] = nq / np.linalg.norm(nq, axis=1, keepdims=True)
        return q

    def get_raw_contacts(self, envs_idx=None) -> dict:
        """The solver's raw contact set (``RigidSolver.get_raw_contacts``) with ``valid`` limited
        to the contacts that involve one of this entity's geoms (indices stay global)."""
        envs = self._envs(envs_idx)
        out = self.solver._raw_contacts(envs)
        g0 = sum(len(e.description.geoms) for e in self.solver.entities[:self.idx])
        g1 = g0 + len(self.description.geoms)
        mine = lambda g: (g >= g0) & (g < g1)  # noqa: E731
        out["valid"] = out["valid"] & (mine(out["geom_a"]) | mine(out["geom_b"]))
        out["count"] = out["valid"].sum(axis=1).astype(np.int32)
        return {k: self._out(v) for k, v in out.items()}

    def get_contacts(self, with_entity=None, exclude_self_contact=False, is_padded=False, envs_idx=None) -> dict:
        """Contacts of this entity's geoms with the forces of the last substep's constraint solve
        (docs/semantics.md §R9, §F2): geom_a, geom_b, link_a, link_b (global indices, −1: world), position (world,
        midway between the surfaces), normal (world, unit, from B to A), penetration (> 0 overlap),
        force_a (world N, the force on geom A), force_b = −force_a, torque_a (world, about the
        contact point; torsional/rolling couples), wrench (6D on A in the contact frame: F_n, F_t1,
        F_t2, T_n, T_t1, T_t2), solved_at (time the substep started; NaN after forward()'s query),
        query_at (the time of forward()'s fresh query; NaN for a step's solve; docs/semantics.md §F1), active
        (the contact is a constraint row; False for a detected contact in the gap band, whose zero force
        means "not in the solve", docs/semantics.md §F2), stale (True after
        set_qpos-style setters / reset / forward until the next step: the geometry is current, the
        forces are not). with_entity: keep contacts whose other geom belongs to that entity;
        exclude_self_contact: drop contacts between two geoms of this entity. Batched scenes (or
        is_padded=True) keep the (n_envs, K) slots with valid_mask; an unbatched unpadded scene
        returns only the valid contacts (no batch axis, no valid_mask)."""
        envs = self._envs(envs_idx)
        out = self.solver._contact_forces(envs)
        ents = self.solver.entities
        starts = np.cumsum([0] + [len(e.description.geoms) for e in ents])
        mine = lambda g, e=self: (g >= starts[e.idx]) & (g < starts[e.idx + 1])  # noqa: E731
        a, b = out["geom_a"], out["geom_b"]
        keep = out["valid"] & (mine(a) | mine(b))
        if with_entity is not None:
            if not isinstance(with_entity, RigidEntity) or with_entity.solver is not self.solver:
                raise OptionError(f"get_contacts(with_entity={with_entity!r}): expected an entity of this rigid solver")
            keep &= (mine(a) & mine(b, with_entity)) | (mine(b) & mine(a, with_entity))
        if exclude_self_contact:
            keep &= ~(mine(a) & mine(b))
        out.pop("valid")
        out.pop("count")
        tags = {k: out.pop(k) for k in ("solved_at", "query_at", "stale")}
        if self.solver.scene.batched or is_padded:
            for k, v in out.items():
                pad = -1 if v.dtype.kind == "i" else 0
                out[k] = np.where(keep.reshape(keep.shape + (1,) * (v.ndim - 2)), v, pad)
            out["valid_mask"] = keep
            out.update(tags)
            return {k: self._out(v) for k, v in out.items()}
        res = {k: v[0][keep[0]] for k, v in out.items()}
        res.update({k: v[0] for k, v in tags.items()})
        return res

    def get_links_net_contact_wrench(self, envs_idx=None) -> dict:
        """Per link of this entity (n_envs, n_links, 3, world frame): ``force`` and ``torque`` (about
        the link CoM) — the net contact wrench of the last substep's solve (solved at the start of
        that substep) — and ``impulse_force`` / ``impulse_torque``: Σ h·f over the substeps of the
        last step (docs/semantics.md §F4: m·Δv − h·Σ(gravity + external forces) for a single body)."""
        envs = self._envs(envs_idx)
        out = self.solver._link_contact_wrench(envs)
        sl = slice(self.link_start, self.link_start + len(self.description.links))
        return {k: self._out(v[:, sl]) for k, v in out.items()}

    # -- post-solve readbacks (readback.py, sensor_view.py, docs/sensors.md) --------------------------
    def _readback(self, names: dict, envs_idx, cols) -> dict:
        out = self.solver._readback_read(self._envs(envs_idx), names)
        return {k: self._out(v[:, cols] if k in names else v) for k, v in out.items()}

    def get_cfrc_int(self, envs_idx=None) -> dict:
        """Per link (n_envs, n_links, 3, world frame): ``force`` and ``torque`` (about the link CoM)
        that the parent exerts on the link through their joint, carrying the link's whole subtree —
        MuJoCo's cfrc_int (post-solve Newton–Euler pass); ``solved_at``: the state of the last
        step's last solve (the start of its last substep, as MuJoCo's sensors), or ``query_at``: a
        fresh query at the current state (the first call before a step computes it); ``stale``: a
        setter or reset changed the state since."""
        return self._readback({"force": "cfrc_int_force", "torque": "cfrc_int_torque"}, envs_idx, self._ls)

    def get_cfrc_ext(self, envs_idx=None) -> dict:
        """Per link: the external wrench on it (applied and coupling forces, contacts, connect/weld
        equalities; torque about the link CoM; MuJoCo's cfrc_ext), tagged as ``get_cfrc_int``."""
        return self._readback({"force": "cfrc_ext_force", "torque": "cfrc_ext_torque"}, envs_idx, self._ls)

    def get_qfrc_constraint(self, envs_idx=None) -> dict:
        """``qfrc_constraint`` (n_envs, n_dofs): the generalized constraint force Jᵀλ of the last
        solve (contacts, limits, friction loss, equalities), tagged as ``get_cfrc_int``."""
        return self._readback({"qfrc_constraint": "snap_qfrc_constraint"}, envs_idx, self._ds)

    # -- contact parameters (the solver's setters on this entity's geoms) -------------------------
    def _geoms_global(self, geoms_idx_local):
        g0 = sum(len(e.description.geoms) for e in self.solver.entities[:self.idx])
        return g0 + self._local_idx(geoms_idx_local, len(self.description.geoms), "geoms_idx_local")

    def set_friction(self, friction, geoms_idx_local=None, envs_idx=None):
        """Sliding friction of this entity's geoms, in [0.01, 5]; per env with envs_idx
        (``scene.solver("rigid").set_friction`` on the entity's global geom indices)."""
        self.solver.set_friction(friction, geoms_idx=self._geoms_global(geoms_idx_local), envs_idx=envs_idx)

    def get_friction(self, geoms_idx_local=None, envs_idx=None):
        """Per-env (sliding, torsional, rolling) friction of this entity's geoms."""
        return self.solver.get_friction(geoms_idx=self._geoms_global(geoms_idx_local), envs_idx=envs_idx)

    def set_friction_ratio(self, ratio, geoms_idx_local=None, envs_idx=None):
        """Per-env friction scale of this entity's geoms (docs/semantics.md §R5)."""
        self.solver.set_friction_ratio(ratio, geoms_idx=self._geoms_global(geoms_idx_local), envs_idx=envs_idx)
