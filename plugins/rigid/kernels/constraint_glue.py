"""Glue between the rigid dynamics kernel and the constraint stage (plugins/rigid/constraint.py).

- ``dof_reference``: the point the linear part of each motion subspace ``cdof`` refers to — the
  origin of the dof's tree root link (the dynamics kernel's per-tree reference point);
- ``apply_constraint_force`` / ``restore_applied``: the constrained substep hands the constraint
  force ``qfrc_constraint`` to the dynamics kernel's integrating launch through ``qfrc_applied``
  (saved first, restored after; cleared on the last substep as the kernel does), so the kernel's
  own (M + h·D) solve and integrator give MuJoCo's Euler / implicitfast step with
  ``qfrc_smooth + qfrc_constraint``.
Generic over float32/float64 (Warp generates the overloads on first launch).
"""

from typing import Any

import warp as wp

wp.set_module_options({"enable_backward": False})


@wp.kernel
def dof_reference(
    # Model:
    link_root: wp.array(dtype=wp.int32),
    dof_link: wp.array(dtype=wp.int32),
    # Data in:
    link_pos_in: wp.array2d(dtype=Any),
    # Data out:
    dof_ref_out: wp.array2d(dtype=Any),
):
    e, d = wp.tid()
    dof_ref_out[e, d] = link_pos_in[e, link_root[dof_link[d]]]


@wp.kernel
def apply_constraint_force(
    # Data in:
    qfrc_constraint_in: wp.array2d(dtype=Any),
    # Data out:
    qfrc_applied: wp.array2d(dtype=Any),
    saved_out: wp.array2d(dtype=Any),
):
    e, d = wp.tid()
    a = qfrc_applied[e, d]
    saved_out[e, d] = a
    qfrc_applied[e, d] = a + qfrc_constraint_in[e, d]


@wp.kernel
def restore_applied(
    last: wp.int32,
    # Data in:
    saved_in: wp.array2d(dtype=Any),
    # Data out:
    qfrc_applied: wp.array2d(dtype=Any),
):
    e, d = wp.tid()
    v = saved_in[e, d]
    if last != 0:
        v = v * type(v)(0.0)
    qfrc_applied[e, d] = v


@wp.kernel
def connect_bias(
    # Model:
    eq_type: wp.array(dtype=wp.int32),
    eq_obj: wp.array2d(dtype=wp.int32),
    eq_data: wp.array2d(dtype=Any),
    link_dof_last: wp.array(dtype=wp.int32),
    dof_parent: wp.array(dtype=wp.int32),
    # Data in:
    qvel_in: wp.array2d(dtype=Any),
    cdof_w_in: wp.array2d(dtype=Any),
    cdof_v_in: wp.array2d(dtype=Any),
    cdofdot_w_in: wp.array2d(dtype=Any),
    cdofdot_v_in: wp.array2d(dtype=Any),
    dof_ref_in: wp.array2d(dtype=Any),
    link_pos_in: wp.array2d(dtype=Any),
    link_quat_in: wp.array2d(dtype=Any),
    # Data out:
    eq_acc_bias_out: wp.array3d(dtype=Any),
):
    """J̇·q̇ of connect (3) and weld (6) rows (MuJoCo 4 subtracts it from aref). Translation: world
    acceleration of anchor1 − anchor2 at qacc = 0 (mj_jacDot: Σ_d (ċdof_v + ċdof_w × (p − ref) +
    cdof_w × ṗ)·q̇_d along each link's dof chain). Weld rotation: d/dt of
    0.5·ts·vec(q̄2⊗(0, ω1−ω2)⊗q1⊗rel) at qacc = 0 (tests/rigid_constraint/mjscenes.py::weld_jdot_qvel)."""
    env, e = wp.tid()
    typ = eq_type[e]
    if typ > 1:
        return
    one = type(eq_data[e, 0])(1.0)
    zero = link_pos_in[env, 0] * (one - one)
    acc = zero
    w0 = zero
    w1 = zero
    al0 = zero
    al1 = zero
    for j in range(2):
        l = eq_obj[e, j]
        if l < 0:
            continue
        c = 3 * j
        if typ == 1:
            c = 3 * (1 - j)
        anchor = type(zero)(eq_data[e, c], eq_data[e, c + 1], eq_data[e, c + 2])
        p = link_pos_in[env, l] + wp.quat_rotate(link_quat_in[env, l], anchor)
        pd = zero
        w = zero
        al = zero
        d = link_dof_last[l]
        while d >= 0:
            qd = qvel_in[env, d]
            pd = pd + (cdof_v_in[env, d] + wp.cross(cdof_w_in[env, d], p - dof_ref_in[env, d])) * qd
            w = w + cdof_w_in[env, d] * qd
            al = al + cdofdot_w_in[env, d] * qd
            d = dof_parent[d]
        a = zero
        d = link_dof_last[l]
        while d >= 0:
            a = a + (cdofdot_v_in[env, d] + wp.cross(cdofdot_w_in[env, d], p - dof_ref_in[env, d])
                     + wp.cross(cdof_w_in[env, d], pd)) * qvel_in[env, d]
            d = dof_parent[d]
        if j == 0:
            acc = acc + a
            w0 = w
            al0 = al
        else:
            acc = acc - a
            w1 = w
            al1 = al
    for k in range(3):
        eq_acc_bias_out[env, e, k] = acc[k]
    if typ == 1:
        l0 = eq_obj[e, 0]
        l1 = eq_obj[e, 1]
        q0 = link_quat_in[env, l0]
        q1 = wp.quaternion(zero[0], zero[1], zero[2], one)
        if l1 >= 0:
            q1 = link_quat_in[env, l1]
        rel = wp.quaternion(eq_data[e, 7], eq_data[e, 8], eq_data[e, 9], eq_data[e, 6])
        ts = eq_data[e, 10]
        q1c = wp.quat_inverse(q1)
        qq = q0 * rel
        wr = w0 - w1
        ar = al0 - al1
        half = one * type(one)(0.5)
        pw1 = wp.quaternion(w1[0], w1[1], w1[2], zero[0])
        pwr = wp.quaternion(wr[0], wr[1], wr[2], zero[0])
        pw0 = wp.quaternion(w0[0], w0[1], w0[2], zero[0])
        par = wp.quaternion(ar[0], ar[1], ar[2], zero[0])
        t = (q1c * pw1 * pwr * qq) * (-half) + q1c * par * qq + (q1c * pwr * pw0 * qq) * half
        for k in range(3):
            eq_acc_bias_out[env, e, 3 + k] = half * ts * t[k]
