"""Contact hand-off stage kernel (docs/rigid.md, "Contacts solved by a coupler"; docs/sap.md): when a
coupler owns the contacts (SAP), the rigid solver builds no contact rows of its own; this kernel
writes, per contact slot k < ncon, the three rows b + 3k (normal), b + 3k + 1, b + 3k + 2 (tangents)
of ``efc_J``, b = ``row0`` (the solver's non-contact rows, built before it by the constraint rows
stage, occupy rows 0 .. b−1; b = 0 without them): the velocity of A's contact point relative to B's
along the contact frame's rows, per dof (the dof chain of each link walked with its motion subspace
cdof, as the constraint rows stage does). It also tags the rows so that the contact-forces stage
and the integrator read them like elliptic contact rows: efc_type = CONTACT_ELLIPTIC, efc_id = k,
efc_span = [0, nv), con_efc_adr[k] = b + 3k, and nefc = b + 3·ncon. A contact whose rows would pass
the row budget gets con_efc_adr −1 and sets efc_overflow (the solver reports it after the step).

``contact_jacobian`` (env × contact slot) reads the model's dof_parent and link_dof_last, ``d``:
cdof_w, cdof_v, dof_ref, ncon, con_pos, con_frame, con_link and the hand-off's row0. Writes ``d``:
efc_J, efc_span, efc_chain, efc_seg (−1: no segments recorded), efc_type, efc_id, con_efc_adr, nefc,
efc_overflow (set only).
"""

from typing import Any

import warp as wp

from ..codes import ConstraintType
from ..types import overloads

wp.set_module_options({"enable_backward": False})

ELLIPTIC = wp.constant(int(ConstraintType.CONTACT_ELLIPTIC))


@wp.kernel
def contact_jacobian(
    # model in
    dof_parent_in: wp.array(dtype=wp.int32),
    link_dof_last_in: wp.array(dtype=wp.int32),
    # data in
    cdof_w_in: wp.array2d(dtype=Any),
    cdof_v_in: wp.array2d(dtype=Any),
    dof_ref_in: wp.array2d(dtype=Any),
    ncon_in: wp.array(dtype=wp.int32),
    con_pos_in: wp.array2d(dtype=Any),
    con_frame_in: wp.array2d(dtype=Any),
    con_link_in: wp.array3d(dtype=wp.int32),
    row0_in: wp.array(dtype=wp.int32),
    # data out
    efc_J_out: wp.array3d(dtype=Any),
    efc_span_out: wp.array3d(dtype=wp.int32),
    efc_chain_out: wp.array3d(dtype=wp.int32),
    efc_seg_out: wp.array3d(dtype=wp.int32),
    efc_type_out: wp.array2d(dtype=wp.int32),
    efc_id_out: wp.array2d(dtype=wp.int32),
    con_efc_adr_out: wp.array2d(dtype=wp.int32),
    nefc_out: wp.array(dtype=wp.int32),
    efc_overflow_out: wp.array(dtype=wp.int32),
):
    env, k = wp.tid()
    nv = efc_J_out.shape[2]
    base = row0_in[env]
    fit = (efc_J_out.shape[1] - base) // 3         # contacts whose three rows fit the budget
    nc = ncon_in[env]
    if k == 0:
        nefc_out[env] = base + 3 * wp.min(nc, fit)
    if k >= nc:
        con_efc_adr_out[env, k] = -1
        return
    if k >= fit:
        con_efc_adr_out[env, k] = -1
        efc_overflow_out[env] = 1
        return
    p = con_pos_in[env, k]
    fr = con_frame_in[env, k]
    con_efc_adr_out[env, k] = base + 3 * k
    for r in range(3):
        row = base + 3 * k + r
        for j in range(nv):
            efc_J_out[env, row, j] = fr[0, 0] * type(fr[0, 0])(0.0)
        efc_span_out[env, row, 0] = 0
        efc_span_out[env, row, 1] = nv
        efc_chain_out[env, row, 0] = -2          # no links recorded: the next clear takes the whole span
        efc_chain_out[env, row, 1] = -2
        efc_seg_out[env, row, 0] = -1            # no segments recorded: a convex solve would scan the row
        efc_type_out[env, row] = ELLIPTIC
        efc_id_out[env, row] = k
        ax = fr[r]
        for side in range(2):
            link = con_link_in[env, k, side]
            if link < 0:
                continue
            sign = fr[0, 0] * type(fr[0, 0])(0.0) + type(fr[0, 0])(1.0)
            if side == 1:
                sign = -sign
            d = link_dof_last_in[link]
            while d >= 0:
                val = wp.dot(ax, cdof_v_in[env, d] + wp.cross(cdof_w_in[env, d], p - dof_ref_in[env, d]))
                efc_J_out[env, row, d] = efc_J_out[env, row, d] + sign * val
                d = dof_parent_in[d]


@overloads
def _overloads(s):
    V, M = wp.types.vector(3, s), wp.types.matrix((3, 3), s)
    wp.overload(contact_jacobian, {"cdof_w_in": wp.array2d(dtype=V), "cdof_v_in": wp.array2d(dtype=V),
                                   "dof_ref_in": wp.array2d(dtype=V), "con_pos_in": wp.array2d(dtype=V),
                                   "con_frame_in": wp.array2d(dtype=M), "efc_J_out": wp.array3d(dtype=s)})
