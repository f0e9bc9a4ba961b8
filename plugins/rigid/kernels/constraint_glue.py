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
    """J̇·q̇ of a connect: world acceleration of anchor1 − anchor2 at qacc = 0 (MuJoCo's mj_jacDot:
    Σ_d (ċdof_v + ċdof_w × (p − ref) + cdof_w × ṗ)·q̇_d along each link's dof chain)."""
    env, e = wp.tid()
    if eq_type[e] != 0:
        return
    zero = link_pos_in[env, 0] * eq_data[e, 0] * type(eq_data[e, 0])(0.0)
    acc = zero
    for j in range(2):
        l = eq_obj[e, j]
        if l < 0:
            continue
        anchor = type(zero)(eq_data[e, 3 * j], eq_data[e, 3 * j + 1], eq_data[e, 3 * j + 2])
        p = link_pos_in[env, l] + wp.quat_rotate(link_quat_in[env, l], anchor)
        pd = zero
        d = link_dof_last[l]
        while d >= 0:
            pd = pd + (cdof_v_in[env, d] + wp.cross(cdof_w_in[env, d], p - dof_ref_in[env, d])) * qvel_in[env, d]
            d = dof_parent[d]
        a = zero
        d = link_dof_last[l]
        while d >= 0:
            a = a + (cdofdot_v_in[env, d] + wp.cross(cdofdot_w_in[env, d], p - dof_ref_in[env, d])
                     + wp.cross(cdof_w_in[env, d], pd)) * qvel_in[env, d]
            d = dof_parent[d]
        if j == 0:
            acc = acc + a
        else:
            acc = acc - a
    for k in range(3):
        eq_acc_bias_out[env, e, k] = acc[k]
