"""Contact forces stage kernels (docs/semantics.md §R9, §F2, §F4): per-contact wrenches from the row forces and the
per-link net contact wrench with its impulse over a step. Runs after the solve (and noslip); a
post-solve readback stage (cacc, cfrc_int, cfrc_ext for sensors) follows it in solver.py.

``contact_wrench`` reads ``d``: ncon, con_frame, con_dim, con_friction, con_efc_adr, efc_type,
efc_force; writes ``d``: con_wrench, con_force_world, con_torque_world, con_valid.
``link_contact_wrench`` reads ``m.opt.timestep``; ``d``: ncon, con_pos, con_link, con_valid,
con_force_world, con_torque_world, link_xipos; writes ``d``: link_contact_force,
link_contact_torque and (accumulate 1: add, 2: restart) link_impulse_force, link_impulse_torque.
``contact_link_wrench`` is both in one launch (the solver's step uses it).
"""

from typing import Any

import warp as wp

from ..types import overload
from . import native
from .row_pool import pool_rows2

wp.set_module_options({"enable_backward": False})


I1 = wp.array(dtype=wp.int32)
I2 = wp.array2d(dtype=wp.int32)
I3 = wp.array3d(dtype=wp.int32)
A2 = wp.array2d(dtype=Any)
A3 = wp.array3d(dtype=Any)


@wp.func_native(native.body(__file__, "contact_wrench_native"))
def contact_wrench_native(env: int, C: int, nc: int, con_valid: I2, con_wrench: A3, con_efc_adr: I2, con_frame: A2,
                          con_dim: I2, con_friction: A3, efc_type: I2, efc_force: A2, con_force_world: A2,
                          con_torque_world: A2): ...


@wp.func_native(native.body(__file__, "link_contact_wrench_native"))
def link_contact_wrench_native(env: int, nl: int, nc: int, h: Any, accumulate: int, link_xipos: A2, con_valid: I2,
                               con_force_world: A2, con_torque_world: A2, con_pos: A2, con_link: I3,
                               link_contact_force: A2, link_contact_torque: A2, link_impulse_force: A2,
                               link_impulse_torque: A2): ...


@wp.func_native(native.body(__file__, "contact_link_wrench_native"))
def contact_link_wrench_native(env: int, C: int, nl: int, ncon: I1, h: Any, accumulate: int, prefetch: int,
                               con_valid: I2, con_wrench: A3, con_efc_adr: I2, con_frame: A2, con_dim: I2,
                               con_friction: A3, efc_type: I2, efc_force: A2, con_force_world: A2, con_torque_world: A2,
                               link_xipos: A2, con_pos: A2, con_link: I3, link_contact_force: A2,
                               link_contact_torque: A2, link_impulse_force: A2, link_impulse_torque: A2, doff: int): ...


@wp.kernel
def contact_wrench(m: Any, d: Any):
    """Per contact the 6D wrench on side A (F_n, F_t1, F_t2, T_n, T_t1, T_t2) in the contact frame
    (pyramidal edges recombined as MuJoCo's mj_contactForce: F_n = Σ edges, F_k = μ_k (f⁺ − f⁻)),
    and in the world frame (F_w = Cᵀ F, T_w = Cᵀ T, about the contact point); side B gets the
    negation. Slots beyond d.ncon, and contacts without rows, are zero with valid 0 (a slot beyond
    d.ncon whose valid flag is already 0 was cleared by an earlier call and is skipped). Native body:
    kernels/contact_forces.cpp."""
    env = wp.tid()
    off = d.efc_off[env]      # the env's rows at its address in the row pool (kernels/row_pool.py)
    contact_wrench_native(env, d.con_dim.shape[1], d.ncon[env], d.con_valid, d.con_wrench, d.con_efc_adr, d.con_frame,
                          d.con_dim, d.con_friction, pool_rows2(d.efc_type, off), pool_rows2(d.efc_force, off),
                          d.con_force_world, d.con_torque_world)


@wp.kernel
def link_contact_wrench(m: Any, d: Any, accumulate: int):
    """Net contact wrench per link (world frame, torque about the link CoM): A gets (F, T + (p − c)×F),
    B the negation moved to its own CoM. accumulate = 1 adds h·wrench to the impulse buffers, 2
    restarts them with it (first substep of a step) — docs/semantics.md §F4: Σ h_k f_k over the substeps
    of a step. Native body: kernels/contact_forces.cpp."""
    env = wp.tid()
    link_contact_wrench_native(env, d.link_xipos.shape[1], d.ncon[env], m.opt.timestep, accumulate, d.link_xipos,
                               d.con_valid, d.con_force_world, d.con_torque_world, d.con_pos, d.con_link,
                               d.link_contact_force, d.link_contact_torque, d.link_impulse_force, d.link_impulse_torque)


@wp.kernel
def contact_link_wrench(m: Any, d: Any, accumulate: int, prefetch: int):
    """contact_wrench then link_contact_wrench for each env in one launch (the same native parts: the same
    numbers), the link sums reading the world wrenches while they are in cache. Native body:
    kernels/contact_forces.cpp."""
    env = wp.tid()
    off = d.efc_off[env]      # the env's rows at its address in the row pool (kernels/row_pool.py)
    doff = int(0)             # (the next env's, for its prefetch)
    if env + 1 < d.ncon.shape[0]:
        doff = d.efc_off[env + 1] - off
    contact_link_wrench_native(env, d.con_dim.shape[1], d.link_xipos.shape[1], d.ncon, m.opt.timestep, accumulate,
                               prefetch, d.con_valid, d.con_wrench, d.con_efc_adr, d.con_frame, d.con_dim, d.con_friction,
                               pool_rows2(d.efc_type, off), pool_rows2(d.efc_force, off), d.con_force_world,
                               d.con_torque_world, d.link_xipos,
                               d.con_pos, d.con_link, d.link_contact_force, d.link_contact_torque,
                               d.link_impulse_force, d.link_impulse_torque, doff)


overload(contact_wrench)
overload(link_contact_wrench)
overload(contact_link_wrench)
