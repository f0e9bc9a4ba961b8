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
