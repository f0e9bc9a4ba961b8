"""Glue between the rigid dynamics kernel and the constraint stage (plugins/rigid/constraint.py).

- ``dof_reference``: the point the linear part of each motion subspace ``cdof`` refers to — the
  origin of the dof's tree root link (the dynamics kernel's per-tree reference point);
- ``apply_constraint_force`` / ``restore_applied``: the constrained substep hands the constraint
  force ``qfrc_constraint`` to the dynamics kernel's integrating launch through ``qfrc_applied``
  (saved first, restored after; cleared on the last substep as the kernel does), so the kernel's
  own (M + h·D) solve and integrator give MuJoCo's Euler / implicitfast step with
  ``qfrc_smooth + qfrc_constraint``;
- ``contact_params_env``: per-contact friction / sol_params / condim from per-env geom friction
  (domain randomisation) and explicit MJCF ``<pair>`` parameters (SPEC R5, MuJoCo's rules).
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


# one thread per env looping over its dofs (CPU: the per-thread launch cost dominated these
# one-line kernels); the same values, bit-identical
@wp.kernel
def dof_reference_env(
    nv: int,
    # Model:
    link_root: wp.array(dtype=wp.int32),
    dof_link: wp.array(dtype=wp.int32),
    # Data in:
    link_pos_in: wp.array2d(dtype=Any),
    # Data out:
    dof_ref_out: wp.array2d(dtype=Any),
):
    e = wp.tid()
    for d in range(nv):
        dof_ref_out[e, d] = link_pos_in[e, link_root[dof_link[d]]]


@wp.kernel
def apply_constraint_force_env(
    nv: int,
    # Data in:
    qfrc_constraint_in: wp.array2d(dtype=Any),
    # Data out:
    qfrc_applied: wp.array2d(dtype=Any),
    saved_out: wp.array2d(dtype=Any),
):
    e = wp.tid()
    for d in range(nv):
        a = qfrc_applied[e, d]
        saved_out[e, d] = a
        qfrc_applied[e, d] = a + qfrc_constraint_in[e, d]


@wp.kernel
def restore_applied_env(
    nv: int,
    last: wp.int32,
    # Data in:
    saved_in: wp.array2d(dtype=Any),
    # Data out:
    qfrc_applied: wp.array2d(dtype=Any),
):
    e = wp.tid()
    for d in range(nv):
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


@wp.kernel
def contact_params_env(
    # Model:
    mujoco_mode: int,
    tc_floor: Any,
    friction_floor: Any,
    geom_sol: wp.array2d(dtype=Any),
    geom_solmix: wp.array(dtype=Any),
    geom_priority: wp.array(dtype=wp.int32),
    geom_condim: wp.array(dtype=wp.int32),
    pair_condim: wp.array(dtype=wp.int32),
    pair_friction: wp.array2d(dtype=Any),
    pair_sol: wp.array2d(dtype=Any),
    # Data in:
    geom_friction_in: wp.array3d(dtype=Any),
    friction_ratio_in: wp.array2d(dtype=Any),
    n_con_in: wp.array(dtype=wp.int32),
    con_geom_in: wp.array3d(dtype=wp.int32),
    con_pair_in: wp.array2d(dtype=wp.int32),
    # Data out:
    con_friction_out: wp.array3d(dtype=Any),
    con_sol_out: wp.array3d(dtype=Any),
    con_dim_out: wp.array2d(dtype=wp.int32),
):
    """Per-contact parameters with per-env geom friction (n_envs, G, 3: sliding, torsional,
    rolling) and explicit pairs (SPEC R5, MuJoCo's mj_contactParam / <contact><pair>).

    A contact of an explicit pair (con_pair >= 0) takes the pair's condim, 5 friction coefficients
    and sol_params outright (MuJoCo: pair_dim, pair_friction, pair_solref/solimp; no mixing, no
    friction_ratio), floored like any contact (friction floor; default mode: timeconst >= 2h).
    Otherwise, default mode: μ_k = max(μ_A,k·s_A, μ_B,k·s_B, floor), sol_params averaged then
    timeconst floored at tc_floor, condim max; MuJoCo mode: priority wins outright, else friction
    max, solref solmix-weighted (elementwise min when either is direct), solimp solmix-weighted."""
    env = wp.tid()
    zero = tc_floor * type(tc_floor)(0.0)
    one = zero + type(tc_floor)(1.0)
    for c in range(n_con_in[env]):
        ga = con_geom_in[env, c, 0]
        gb = con_geom_in[env, c, 1]
        p = con_pair_in[env, c]
        if p >= 0:
            for k in range(5):
                con_friction_out[env, c, k] = wp.max(pair_friction[p, k], friction_floor)
            for k in range(7):
                con_sol_out[env, c, k] = pair_sol[p, k]
            if mujoco_mode == 0 and pair_sol[p, 0] > zero:
                con_sol_out[env, c, 0] = wp.max(pair_sol[p, 0], tc_floor)
            con_dim_out[env, c] = pair_condim[p]
            continue
        f0 = zero
        f1 = zero
        f2 = zero
        dim = wp.max(geom_condim[ga], geom_condim[gb])
        if mujoco_mode == 1 and geom_priority[ga] != geom_priority[gb]:
            g = ga
            if geom_priority[gb] > geom_priority[ga]:
                g = gb
            f0 = geom_friction_in[env, g, 0]
            f1 = geom_friction_in[env, g, 1]
            f2 = geom_friction_in[env, g, 2]
            dim = geom_condim[g]
            for k in range(7):
                con_sol_out[env, c, k] = geom_sol[g, k]
        else:
            sa = one
            sb = one
            if mujoco_mode == 0:
                sa = friction_ratio_in[env, ga]
                sb = friction_ratio_in[env, gb]
            f0 = wp.max(geom_friction_in[env, ga, 0] * sa, geom_friction_in[env, gb, 0] * sb)
            f1 = wp.max(geom_friction_in[env, ga, 1] * sa, geom_friction_in[env, gb, 1] * sb)
            f2 = wp.max(geom_friction_in[env, ga, 2] * sa, geom_friction_in[env, gb, 2] * sb)
            mix = type(tc_floor)(0.5)
            if mujoco_mode == 1:
                ma = geom_solmix[ga]
                mb = geom_solmix[gb]
                mv = type(tc_floor)(1.0e-15)
                if ma >= mv and mb >= mv:
                    mix = ma / (ma + mb)
                elif ma < mv and mb >= mv:
                    mix = zero
                elif ma >= mv and mb < mv:
                    mix = one
            direct = mujoco_mode == 1 and (geom_sol[ga, 0] <= zero or geom_sol[gb, 0] <= zero)
            for k in range(7):
                v = mix * geom_sol[ga, k] + (one - mix) * geom_sol[gb, k]
                if direct and k < 2:
                    v = wp.min(geom_sol[ga, k], geom_sol[gb, k])
                con_sol_out[env, c, k] = v
            if mujoco_mode == 0 and con_sol_out[env, c, 0] > zero:
                con_sol_out[env, c, 0] = wp.max(con_sol_out[env, c, 0], tc_floor)
        f0 = wp.max(f0, friction_floor)
        f1 = wp.max(f1, friction_floor)
        f2 = wp.max(f2, friction_floor)
        con_friction_out[env, c, 0] = f0
        con_friction_out[env, c, 1] = f0
        con_friction_out[env, c, 2] = f1
        con_friction_out[env, c, 3] = f2
        con_friction_out[env, c, 4] = f2
        con_dim_out[env, c] = dim
