"""Post-solve readback of the rigid solver (plugins/rigid/readback.py): MuJoCo's
``mj_rnePostConstraint`` — link accelerations ``cacc``, external wrenches ``cfrc_ext`` and the
interaction wrenches ``cfrc_int`` from the solved qacc and the constraint forces — and a snapshot of
the joint quantities at the same state. One thread per env walks its links (tree passes).

Spatial quantities of the dynamics kernel refer to a per-tree point (the tree root's origin, see
kernels/dynamics.py); a parent and child in different trees (a link welded to the world and the
moving tree below it) have different points, so a child's wrench is moved to its parent's point
before it is added, and the outputs are converted to per-link conventions: accelerations of the
link CoM (true acceleration, gravity not included), wrenches with the torque about the link CoM,
world frame (core/views.py, RigidSensorData).
"""

from typing import Any

import warp as wp

wp.set_module_options({"enable_backward": False})

EQUALITY = wp.constant(0)      # constraint row type (kernels/constraint_solve.py)
EQ_CONNECT = wp.constant(0)
EQ_WELD = wp.constant(1)


@wp.func
def weld_torque(link_quat: wp.array2d(dtype=Any), e: int, l1: int, l2: int, eq_data: wp.array2d(dtype=Any),
                q: int, efc_force: wp.array2d(dtype=Any), r: int):
    """World torque on link 1 of a weld's rotational rows (forces f at rows r+3..r+5): the rows are
    J·ω = ½·ts·vec(q2⁻¹ ⊗ (0, ω1 − ω2) ⊗ q1 ⊗ relpose) (kernels/constraint_solve.py), so the torque
    is τ = Jᵀ·f, column k of J from the world axis e_k."""
    one = eq_data[q, 10] * type(eq_data[q, 10])(0.0) + type(eq_data[q, 10])(1.0)
    zero = one * type(one)(0.0)
    qi = wp.quaternion(zero, zero, zero, one)
    q1 = qi
    q2 = qi
    if l1 >= 0:
        q1 = link_quat[e, l1]
    if l2 >= 0:
        q2 = link_quat[e, l2]
    rel = wp.quaternion(eq_data[q, 7], eq_data[q, 8], eq_data[q, 9], eq_data[q, 6])
    qq = q1 * rel
    q2n = wp.quat_inverse(q2)
    half = type(one)(0.5) * eq_data[q, 10]
    f = wp.vector(efc_force[e, r + 3], efc_force[e, r + 4], efc_force[e, r + 5])
    t = wp.vector(zero, zero, zero)
    for k in range(3):
        ax = wp.vector(zero, zero, zero)
        ax[k] = one
        w = (q2n * wp.quaternion(ax[0], ax[1], ax[2], zero)) * qq
        t[k] = half * (w[0] * f[0] + w[1] * f[1] + w[2] * f[2])
    return t


@wp.kernel
def rne_post_constraint(
    # Model:
    gravity: Any,
    link_parent: wp.array(dtype=wp.int32),
    link_root: wp.array(dtype=wp.int32),
    link_dof_adr: wp.array(dtype=wp.int32),
    eq_type: wp.array(dtype=wp.int32),
    eq_obj: wp.array2d(dtype=wp.int32),
    eq_data: wp.array2d(dtype=Any),
    n_dofs: wp.int32,
    n_act: wp.int32,
    has_rows: wp.int32,
    # Data in (the state the last solve belongs to):
    qpos_in: wp.array2d(dtype=Any),
    qvel_in: wp.array2d(dtype=Any),
    qacc_in: wp.array2d(dtype=Any),
    qfrc_actuator_in: wp.array2d(dtype=Any),
    qfrc_constraint_in: wp.array2d(dtype=Any),
    act_force_in: wp.array2d(dtype=Any),
    cdof_w: wp.array2d(dtype=Any),
    cdof_v: wp.array2d(dtype=Any),
    cdofdot_w: wp.array2d(dtype=Any),
    cdofdot_v: wp.array2d(dtype=Any),
    cvel_w: wp.array2d(dtype=Any),
    cvel_v: wp.array2d(dtype=Any),
    cinert_m: wp.array2d(dtype=Any),
    cinert_mc: wp.array2d(dtype=Any),
    cinert_i: wp.array2d(dtype=Any),
    link_pos: wp.array2d(dtype=Any),
    link_quat: wp.array2d(dtype=Any),
    link_com: wp.array2d(dtype=Any),
    link_ang: wp.array2d(dtype=Any),
    link_vel: wp.array2d(dtype=Any),
    xfrc_force_in: wp.array2d(dtype=Any),
    xfrc_torque_in: wp.array2d(dtype=Any),
    coupling_force_in: wp.array2d(dtype=Any),
    coupling_torque_in: wp.array2d(dtype=Any),
    contact_force_in: wp.array2d(dtype=Any),
    contact_torque_in: wp.array2d(dtype=Any),
    n_efc: wp.array(dtype=wp.int32),
    efc_type: wp.array2d(dtype=wp.int32),
    efc_id: wp.array2d(dtype=wp.int32),
    efc_force: wp.array2d(dtype=Any),
    # Data out:
    qpos_out: wp.array2d(dtype=Any),
    qvel_out: wp.array2d(dtype=Any),
    qacc_out: wp.array2d(dtype=Any),
    qfrc_actuator_out: wp.array2d(dtype=Any),
    qfrc_constraint_out: wp.array2d(dtype=Any),
    act_force_out: wp.array2d(dtype=Any),
    acc_ang_out: wp.array2d(dtype=Any),
    acc_out: wp.array2d(dtype=Any),
    int_force_out: wp.array2d(dtype=Any),
    int_torque_out: wp.array2d(dtype=Any),
    ext_force_out: wp.array2d(dtype=Any),
    ext_torque_out: wp.array2d(dtype=Any),
):
    e = wp.tid()
    nl = link_parent.shape[0]
    zero = gravity * type(gravity[0])(0.0)
    for i in range(qpos_in.shape[1]):
        qpos_out[e, i] = qpos_in[e, i]
    for d in range(n_dofs):
        qvel_out[e, d] = qvel_in[e, d]
        qacc_out[e, d] = qacc_in[e, d]
        qfrc_actuator_out[e, d] = qfrc_actuator_in[e, d]
        qfrc_constraint_out[e, d] = qfrc_constraint_in[e, d]
    for a in range(n_act):
        act_force_out[e, a] = act_force_in[e, a]

    # -- cfrc_ext (world, torque about the link CoM): applied and coupling wrenches at the CoM, the
    # net contact wrench, connect/weld equality forces (each at its anchor; a weld's rotational rows
    # as the torque Jᵀ·f); gravity compensation is a passive force, not an external wrench (MuJoCo)
    for l in range(nl):
        ext_force_out[e, l] = xfrc_force_in[e, l] + coupling_force_in[e, l] + contact_force_in[e, l]
        ext_torque_out[e, l] = xfrc_torque_in[e, l] + coupling_torque_in[e, l] + contact_torque_in[e, l]
    if has_rows != 0:
        r = int(0)
        while r < n_efc[e]:
            if efc_type[e, r] != EQUALITY:
                r = r + 1
                continue
            q = efc_id[e, r]
            tp = eq_type[q]
            if tp != EQ_CONNECT and tp != EQ_WELD:
                r = r + 1
                continue
            f = type(zero)(efc_force[e, r], efc_force[e, r + 1], efc_force[e, r + 2])
            tq = zero
            o1 = 0
            o2 = 3
            l1 = eq_obj[q, 0]
            l2 = eq_obj[q, 1]
            if tp == EQ_WELD:
                o1 = 3
                o2 = 0
                tq = weld_torque(link_quat, e, l1, l2, eq_data, q, efc_force, r)
            if l1 >= 0:
                a1 = type(zero)(eq_data[q, o1], eq_data[q, o1 + 1], eq_data[q, o1 + 2])
                p1 = link_pos[e, l1] + wp.quat_rotate(link_quat[e, l1], a1)
                ext_force_out[e, l1] = ext_force_out[e, l1] + f
                ext_torque_out[e, l1] = ext_torque_out[e, l1] + tq + wp.cross(p1 - link_com[e, l1], f)
            if l2 >= 0:
                a2 = type(zero)(eq_data[q, o2], eq_data[q, o2 + 1], eq_data[q, o2 + 2])
                p2 = link_pos[e, l2] + wp.quat_rotate(link_quat[e, l2], a2)
                ext_force_out[e, l2] = ext_force_out[e, l2] - f
                ext_torque_out[e, l2] = ext_torque_out[e, l2] - tq - wp.cross(p2 - link_com[e, l2], f)
            if tp == EQ_WELD:
                r = r + 6
            else:
                r = r + 3

    # -- forward pass: spatial acceleration about the tree's point (the world's: (0, −g)), the
    # body wrench I·a + v ×* I·v, and cfrc_int = body wrench − external wrench (about the point)
    for l in range(nl):
        p = link_parent[l]
        ref = link_pos[e, link_root[l]]
        aw = zero
        av = -gravity
        if p >= 0:
            aw = acc_ang_out[e, p]
            av = acc_out[e, p] + wp.cross(aw, ref - link_pos[e, link_root[p]])
        for d in range(link_dof_adr[l], link_dof_adr[l + 1]):
            aw = aw + cdofdot_w[e, d] * qvel_in[e, d] + cdof_w[e, d] * qacc_in[e, d]
            av = av + cdofdot_v[e, d] * qvel_in[e, d] + cdof_v[e, d] * qacc_in[e, d]
        acc_ang_out[e, l] = aw
        acc_out[e, l] = av
        m = cinert_m[e, l]
        mc = cinert_mc[e, l]
        ii = cinert_i[e, l]
        w = cvel_w[e, l]
        v = cvel_v[e, l]
        hw = ii * w + wp.cross(mc, v)
        hv = v * m - wp.cross(mc, w)
        ft = ii * aw + wp.cross(mc, av) + wp.cross(w, hw) + wp.cross(v, hv)
        ff = av * m - wp.cross(mc, aw) + wp.cross(w, hv)
        ef = ext_force_out[e, l]
        et = ext_torque_out[e, l] + wp.cross(link_com[e, l] - ref, ef)
        int_force_out[e, l] = ff - ef
        int_torque_out[e, l] = ft - et

    # -- backward pass: a link's interaction wrench carries its subtree's (moved to the parent's point)
    for k in range(nl):
        l = nl - 1 - k
        p = link_parent[l]
        if p >= 0:
            f = int_force_out[e, l]
            dr = link_pos[e, link_root[l]] - link_pos[e, link_root[p]]
            int_force_out[e, p] = int_force_out[e, p] + f
            int_torque_out[e, p] = int_torque_out[e, p] + int_torque_out[e, l] + wp.cross(dr, f)

    # -- per-link conventions: torque about the CoM; CoM acceleration a = a_point + α × (c − point)
    # + ω × v_c (spatial to classical), plus g (the world's −g offset removed)
    for l in range(nl):
        ref = link_pos[e, link_root[l]]
        c = link_com[e, l]
        int_torque_out[e, l] = int_torque_out[e, l] + wp.cross(ref - c, int_force_out[e, l])
        aw = acc_ang_out[e, l]
        acc_out[e, l] = acc_out[e, l] + wp.cross(aw, c - ref) + wp.cross(link_ang[e, l], link_vel[e, l]) + gravity


def _overloads():
    for s in (wp.float32, wp.float64):
        V = wp.types.vector(3, s)
        Q = wp.types.quaternion(s)
        M = wp.types.matrix((3, 3), s)
        a2, v2 = wp.array2d(dtype=s), wp.array2d(dtype=V)
        sig = {"gravity": V, "eq_data": a2, "link_quat": wp.array2d(dtype=Q), "cinert_i": wp.array2d(dtype=M)}
        for k in ("qpos_in", "qvel_in", "qacc_in", "qfrc_actuator_in", "qfrc_constraint_in", "act_force_in",
                  "cinert_m", "efc_force", "qpos_out", "qvel_out", "qacc_out", "qfrc_actuator_out",
                  "qfrc_constraint_out", "act_force_out"):
            sig[k] = a2
        for k in ("cdof_w", "cdof_v", "cdofdot_w", "cdofdot_v", "cvel_w", "cvel_v", "cinert_mc", "link_pos",
                  "link_com", "link_ang", "link_vel", "xfrc_force_in", "xfrc_torque_in", "coupling_force_in",
                  "coupling_torque_in", "contact_force_in", "contact_torque_in", "acc_ang_out", "acc_out",
                  "int_force_out", "int_torque_out", "ext_force_out", "ext_torque_out"):
            sig[k] = v2
        wp.overload(rne_post_constraint, sig)


_overloads()
