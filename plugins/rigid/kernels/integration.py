"""Integration stage kernels (docs/semantics.md §R2): semi-implicit Euler v' = v + h·a, q' = q ⊕ h·v' (native loop in
kernels/integration.cpp; why: kernels/native.py) and the implicit midpoint branch of free bodies
(Warp, below), ``gyro_resolve`` (native: the gyroscopic re-solve of standalone free bodies, MuJoCo-compatible
implicitfast), plus ``total_force``: the force of the integrating solve after a constraint solve.

``integrate`` reads ``m``: the joints, joint_midpoint, dof_damping/armature, link mass properties,
opt.timestep/gravity; ``d``: qacc, dof_mode, qfrc_bias, the rows of the substep (nefc, efc_J: a free
body with a row on it is not free this substep) and the force ``qfrc_in`` the acceleration was solved
with (for the midpoint bodies). Writes ``d``: qpos, qvel, joint_mid_active; clears
coupling_force/torque (every substep) and, with ``clear_ext``, xfrc_force/torque and qfrc_applied.

``gyro_resolve`` (MuJoCo-compatible implicitfast, docs/semantics.md §R2a) reads ``m``: joint_gyro, the dof tree,
link_parent, link mass properties, opt.timestep; ``d``: mass, dof_dv, link_pos/quat/xipos (the substep's kinematics:
a link with fixed-joint descendants is their composite body), qpos, qvel and ``qfrc_in``; writes ``d.qacc`` on the dofs of each
standalone free joint: the solve of its 6×6 block of M + h·D + h·∂qfrc_bias/∂v for qfrc_in (native, integration.cpp).

``total_force`` reads ``d``: qfrc_passive, qfrc_actuator, qfrc_control, qfrc_applied,
qfrc_constraint, qfrc_ext, qfrc_bias; writes ``d.qfrc_total`` =
passive + actuator + control + (applied + constraint) + ext − bias (MuJoCo: qfrc_smooth +
qfrc_constraint, summed in this order).

``post_solve`` is the tail of a constrained substep in one launch: ``total_force``, then (solve = 1) the
integration's (M + h·D)⁻¹ solve from the smooth pass's factor (kernels/factorization.py ``ld_solve_native``)
and (gyro = 1) ``gyro_resolve`` (the solve skipped when gyro_resolve re-solves every dof: its result would be
overwritten everywhere), or (solve = 0: approximate_implicitfast) d.qacc = d.qacc_warmstart, then
``integrate`` with qfrc_in = d.qfrc_total: the same functions on the same arrays in the same order per env (each
env's stages read only that env's rows), so the same numbers as the separate launches.
"""

from typing import Any

import warp as wp

from ..types import overload
from . import native
from .factorization import ld_solve_native
from .row_pool import pool_rows3

wp.set_module_options({"enable_backward": False, "optimization_level": 3})

I1 = wp.array(dtype=wp.int32)
I2 = wp.array2d(dtype=wp.int32)
A2 = wp.array2d(dtype=Any)


@wp.func_native(native.body(__file__, "integrate_native"))
def integrate_native(env: int, n: int, nl: int, h: Any, clear_ext: int, joint_midpoint: I1, joint_type: I1,
                     joint_q_start: I1, joint_dof_start: I1, dof_joint: I1, dof_damping: A2, dof_armature: A2,
                     dof_mode: I2, qacc: A2, qpos: A2, qvel: A2, joint_mid_active: I2, coupling_force: A2,
                     coupling_torque: A2, xfrc_force: A2, xfrc_torque: A2, qfrc_applied: A2, nefc: I1,
                     efc_J: wp.array3d(dtype=Any)): ...


@wp.func_native(native.body(__file__, "gyro_resolve_native"))
def gyro_resolve_native(env: int, h: Any, joint_gyro: I1, joint_q_start: I1, joint_dof_start: I1, dof_link: I1,
                        dof_madr: I1, dof_depth: I1, m_col: I1, link_parent: I1, link_mass: A2, link_com: A2,
                        link_inertia: A2, mass: A2, dof_dv: A2, link_pos: A2, link_quat: A2, link_xipos: A2, qpos: A2,
                        qvel: A2, qfrc_in: A2, qacc: A2): ...


@wp.func
def midpoint_free_joint(env: int, qs: int, ds: int, h: Any, gravity: Any, mass: Any, cb: Any, ib: Any,
                        qfrc_in: wp.array2d(dtype=Any), qfrc_bias: wp.array2d(dtype=Any),
                        qpos: wp.array2d(dtype=Any), qvel: wp.array2d(dtype=Any)):
    """One substep of a free body by implicit midpoint (docs/semantics.md §R2): the CoM velocity by v' = v + h·F/m
    (gravity, wrenches and dof forces reduced to a CoM wrench), Euler's equations
    2I(x − ω) = h·τ − h·x × I·x solved for the midpoint body angular velocity x by Newton with
    backtracking, ω' = 2x − ω, the orientation by the Cayley map of h·x (keeps R·I·ω and the kinetic
    energy of a torque-free body to the Newton tolerance). mass, cb, ib: the link's mass, CoM (link
    frame) and inertia about the CoM."""
    s1 = type(h)(1.0)
    zero = gravity * type(h)(0.0)
    tl = zero
    ta = zero
    for k in range(3):
        tl[k] = (qfrc_in[env, ds + k] + qfrc_bias[env, ds + k])
        ta[k] = (qfrc_in[env, ds + 3 + k] + qfrc_bias[env, ds + 3 + k])
    pos = type(zero)(qpos[env, qs], qpos[env, qs + 1], qpos[env, qs + 2])
    qr = wp.normalize(wp.quaternion(qpos[env, qs + 4], qpos[env, qs + 5], qpos[env, qs + 6], qpos[env, qs + 3]))
    vo = type(zero)(qvel[env, ds], qvel[env, ds + 1], qvel[env, ds + 2])
    wb = type(zero)(qvel[env, ds + 3], qvel[env, ds + 4], qvel[env, ds + 5])
    doff = wp.quat_rotate(qr, cb)
    # generalized forces on (v_origin, ω_body) as a wrench at the CoM, plus gravity
    fw = tl + gravity * mass
    tb = ta + wp.quat_rotate_inv(qr, wp.cross(tl, doff))
    wwo = wp.quat_rotate(qr, wb)
    vc = vo + wp.cross(wwo, doff) + fw * (h / mass)
    # Euler's equations by implicit midpoint: 2I(x − ω) = h·τ − h·x × I·x, Newton on x
    x = wb
    # stop at round-off: 1e-13 relative in float64, 1e-5 in float32 (1 + 1e-10 == 1 there)
    tol = type(h)(1e-13)
    if s1 + type(h)(1e-10) == s1:
        tol = type(h)(1e-5)
    scale = wp.length(ib * wb) * type(h)(2.0) + wp.length(tb) * h + type(h)(1e-30)
    for _it in range(12):
        gres = ib * (x - wb) * type(h)(2.0) - tb * h + wp.cross(x, ib * x) * h
        if wp.length(gres) <= tol * scale:
            break
        jac = ib * type(h)(2.0) + (wp.skew(x) * ib - wp.skew(ib * x)) * h
        dx = wp.inverse(jac) * gres
        alpha = s1
        gn = wp.length(gres)
        for _bt in range(6):
            xn = x - dx * alpha
            g2 = ib * (xn - wb) * type(h)(2.0) - tb * h + wp.cross(xn, ib * xn) * h
            if wp.length(g2) < gn:
                break
            alpha = alpha * type(h)(0.5)
        x = x - dx * alpha
    wb_new = x * type(h)(2.0) - wb
    # Cayley rotation by h·x keeps R·I·ω exactly (torque-free) and the kinetic energy
    hv = x * (h * type(h)(0.5))
    qc = wp.normalize(wp.quaternion(hv[0], hv[1], hv[2], s1))
    qn = wp.normalize(qr * qc)
    com_new = pos + doff + vc * h
    d_new = wp.quat_rotate(qn, cb)
    pos_new = com_new - d_new
    vo_new = vc - wp.cross(wp.quat_rotate(qn, wb_new), d_new)
    for k in range(3):
        qpos[env, qs + k] = pos_new[k]
        qvel[env, ds + k] = vo_new[k]
        qvel[env, ds + 3 + k] = wb_new[k]
    qpos[env, qs + 3] = qn[3]
    qpos[env, qs + 4] = qn[0]
    qpos[env, qs + 5] = qn[1]
    qpos[env, qs + 6] = qn[2]


@wp.func
def integrate_env(env: int, m: Any, d: Any, clear_ext: int, qfrc_in: wp.array2d(dtype=Any)):
    h = m.opt.timestep
    integrate_native(env, m.nv, m.nl, h, clear_ext, m.joint_midpoint, m.joint_type, m.joint_q_start,
                     m.joint_dof_start, m.dof_joint, m.dof_damping, m.dof_armature, d.dof_mode, d.qacc, d.qpos, d.qvel,
                     d.joint_mid_active, d.coupling_force, d.coupling_torque, d.xfrc_force, d.xfrc_torque,
                     d.qfrc_applied, d.nefc, pool_rows3(d.efc_J, d.efc_off[env]))
    for j in range(m.nj):
        if d.joint_mid_active[env, j] != 0:
            ds = m.joint_dof_start[j]
            lk = m.dof_link[ds]
            midpoint_free_joint(env, m.joint_q_start[j], ds, h, m.opt.gravity, m.link_mass[env, lk],
                                m.link_com[env, lk], m.link_inertia[env, lk], qfrc_in, d.qfrc_bias, d.qpos, d.qvel)


@wp.kernel
def integrate(m: Any, d: Any, clear_ext: int, qfrc_in: wp.array2d(dtype=Any)):
    env = wp.tid()
    integrate_env(env, m, d, clear_ext, qfrc_in)


@wp.func
def gyro_resolve_env(env: int, m: Any, d: Any, qfrc_in: wp.array2d(dtype=Any)):
    gyro_resolve_native(env, m.opt.timestep, m.joint_gyro, m.joint_q_start, m.joint_dof_start, m.dof_link, m.dof_madr,
                        m.dof_depth, m.m_col, m.link_parent, m.link_mass, m.link_com, m.link_inertia, d.mass, d.dof_dv,
                        d.link_pos, d.link_quat, d.link_xipos, d.qpos, d.qvel, qfrc_in, d.qacc)


@wp.kernel
def gyro_resolve(m: Any, d: Any, qfrc_in: wp.array2d(dtype=Any)):
    env = wp.tid()
    gyro_resolve_env(env, m, d, qfrc_in)


@wp.func
def total_force_env(env: int, m: Any, d: Any):
    for i in range(m.nv):
        applied = d.qfrc_applied[env, i] + d.qfrc_constraint[env, i]
        d.qfrc_total[env, i] = (d.qfrc_passive[env, i] + d.qfrc_actuator[env, i] + d.qfrc_control[env, i] + applied
                                + d.qfrc_ext[env, i] - d.qfrc_bias[env, i])


@wp.kernel
def total_force(m: Any, d: Any):
    env = wp.tid()
    total_force_env(env, m, d)


@wp.func
def all_dofs_gyro(m: Any):
    """1 when every dof belongs to a joint that ``gyro_resolve`` re-solves (Model.joint_gyro != 0), else 0."""
    for i in range(m.nv):
        if m.joint_gyro[m.dof_joint[i]] == 0:
            return 0
    return 1


@wp.kernel
def post_solve(m: Any, d: Any, clear_ext: int, solve: int, gyro: int, prefetch: int):
    """total_force → (M + h·D)⁻¹ solve (+ gyro_resolve) or the solve's acceleration → integrate, per env."""
    env = wp.tid()
    total_force_env(env, m, d)
    if solve != 0:
        # where gyro_resolve re-solves every dof (only standalone free bodies, e.g. a pile of boxes), the (M + h·D)
        # solve's result would be overwritten on every dof: skipped (each re-solved block is decoupled from the rest,
        # so the numbers are the same)
        if gyro == 0 or all_dofs_gyro(m) == 0:
            ld_solve_native(env, m.nv, prefetch, m.dof_madr, m.dof_depth, m.m_col, d.qld_int, d.qfrc_total, d.qacc)
        if gyro != 0:
            gyro_resolve_env(env, m, d, d.qfrc_total)
    else:
        for i in range(d.qacc.shape[1]):        # the whole row, as wp.copy(d.qacc, d.qacc_warmstart)
            d.qacc[env, i] = d.qacc_warmstart[env, i]
    integrate_env(env, m, d, clear_ext, d.qfrc_total)


overload(integrate, qfrc_in=lambda s: wp.array2d(dtype=s))
overload(gyro_resolve, qfrc_in=lambda s: wp.array2d(dtype=s))
overload(total_force)
overload(post_solve)
