"""Contact forces stage kernels (docs/semantics.md §R9, §F2, §F4): per-contact wrenches from the row forces and the
per-link net contact wrench with its impulse over a step. Runs after the solve (and noslip); a
post-solve readback stage (cacc, cfrc_int, cfrc_ext for sensors) follows it in solver.py.

``contact_wrench`` reads ``d``: ncon, con_frame, con_dim, con_friction, con_efc_adr, efc_type,
efc_force; writes ``d``: con_wrench, con_force_world, con_torque_world, con_valid.
``link_contact_wrench`` reads ``m.opt.timestep``; ``d``: ncon, con_pos, con_link, con_valid,
con_force_world, con_torque_world, link_xipos; writes ``d``: link_contact_force,
link_contact_torque and (accumulate 1: add, 2: restart) link_impulse_force, link_impulse_torque.
"""

from typing import Any

import warp as wp

from ..types import ConstraintType, overload

wp.set_module_options({"enable_backward": False})


@wp.kernel
def contact_wrench(m: Any, d: Any):
    """Per contact the 6D wrench on side A (F_n, F_t1, F_t2, T_n, T_t1, T_t2) in the contact frame
    (pyramidal edges recombined as MuJoCo's mj_contactForce: F_n = Σ edges, F_k = μ_k (f⁺ − f⁻)),
    and in the world frame (F_w = Cᵀ F, T_w = Cᵀ T, about the contact point); side B gets the
    negation. Slots beyond d.ncon, and contacts without rows, are zero with valid 0 (a slot beyond
    d.ncon whose valid flag is already 0 was cleared by an earlier call and is skipped)."""
    env = wp.tid()
    C = d.con_dim.shape[1]
    nc = d.ncon[env]
    for c in range(C):
        if c >= nc and d.con_valid[env, c] == 0:
            continue
        zero = d.con_friction[env, c, 0] * type(d.con_friction[env, c, 0])(0.0)
        for j in range(6):
            d.con_wrench[env, c, j] = zero
        d.con_valid[env, c] = 0
        adr = int(-1)
        if c < d.ncon[env]:
            adr = d.con_efc_adr[env, c]
        fr = d.con_frame[env, c]
        if adr >= 0:
            d.con_valid[env, c] = 1
            dim = d.con_dim[env, c]
            tp = d.efc_type[env, adr]
            if tp == ConstraintType.CONTACT_PYRAMIDAL:
                for j in range(2 * (dim - 1)):
                    d.con_wrench[env, c, 0] = d.con_wrench[env, c, 0] + d.efc_force[env, adr + j]
                for k in range(1, dim):
                    d.con_wrench[env, c, k] = d.con_friction[env, c, k - 1] * (
                        d.efc_force[env, adr + 2 * (k - 1)] - d.efc_force[env, adr + 2 * (k - 1) + 1])
            else:
                for j in range(dim):
                    d.con_wrench[env, c, j] = d.efc_force[env, adr + j]
        f = wp.vector(zero, zero, zero)
        t = wp.vector(zero, zero, zero)
        for k in range(3):
            ax = wp.vector(fr[k, 0], fr[k, 1], fr[k, 2])
            f = f + d.con_wrench[env, c, k] * ax
            t = t + d.con_wrench[env, c, 3 + k] * ax
        d.con_force_world[env, c] = f
        d.con_torque_world[env, c] = t


@wp.kernel
def link_contact_wrench(m: Any, d: Any, accumulate: int):
    """Net contact wrench per link (world frame, torque about the link CoM): A gets (F, T + (p − c)×F),
    B the negation moved to its own CoM. accumulate = 1 adds h·wrench to the impulse buffers, 2
    restarts them with it (first substep of a step) — docs/semantics.md §F4: Σ h_k f_k over the substeps of a step."""
    env = wp.tid()
    h = m.opt.timestep
    nl = d.link_xipos.shape[1]
    for l in range(nl):
        d.link_contact_force[env, l] = d.link_xipos[env, l] * h * type(h)(0.0)
        d.link_contact_torque[env, l] = d.link_xipos[env, l] * h * type(h)(0.0)
    for c in range(d.ncon[env]):
        if d.con_valid[env, c] == 0:
            continue
        f = d.con_force_world[env, c]
        t = d.con_torque_world[env, c]
        p = d.con_pos[env, c]
        la = d.con_link[env, c, 0]
        lb = d.con_link[env, c, 1]
        if la >= 0:
            d.link_contact_force[env, la] = d.link_contact_force[env, la] + f
            d.link_contact_torque[env, la] = d.link_contact_torque[env, la] + t + wp.cross(p - d.link_xipos[env, la], f)
        if lb >= 0:
            d.link_contact_force[env, lb] = d.link_contact_force[env, lb] - f
            d.link_contact_torque[env, lb] = d.link_contact_torque[env, lb] - t - wp.cross(p - d.link_xipos[env, lb], f)
    if accumulate == 1:
        for l in range(nl):
            d.link_impulse_force[env, l] = d.link_impulse_force[env, l] + h * d.link_contact_force[env, l]
            d.link_impulse_torque[env, l] = d.link_impulse_torque[env, l] + h * d.link_contact_torque[env, l]
    elif accumulate == 2:   # first substep of a step: restart the sums
        for l in range(nl):
            d.link_impulse_force[env, l] = h * d.link_contact_force[env, l]
            d.link_impulse_torque[env, l] = h * d.link_contact_torque[env, l]


overload(contact_wrench)
overload(link_contact_wrench)
