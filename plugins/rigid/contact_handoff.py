"""Contact hand-off stage (docs/rigid.md, "Contacts solved by a coupler"; docs/sap.md): the rigid
solver's side of a coupler that solves the contact problem itself (the SAP coupler), through core's
``RigidDynamicsView``. After ``cede_contacts`` a substep runs

    pre-coupling:  kinematics → bias → actuation → inertia + factorization (M + h·D)⁻¹ (free
                   acceleration qacc_smooth, so v* = qvel + h·qacc_smooth) + dense M + h·D (one launch,
                   factorization.crb_factor_solve) →
                   [non-contact rows: the constraint rows stage (make_rows) with no contacts, so rows
                   0 .. b−1 are the equality, DOF frictionloss and joint-limit rows — hinge/slide
                   limits also within Drake's window 2h·max(|v|, |v*|) — b copied to ``row0``]
                   → collision → contact parameters → contact Jacobian rows b + 3k
                   (kernels/contact_handoff.py)
    [the coupler writes qfrc_constraint = Jᵀ·γ/h and the row forces efc_force = γ/h of every row]
    post-coupling: [bias again when another coupler (Legacy) also acts on the solver: its reaction
                   wrench of this substep] → total force → (M + h·D) solve → contact forces (per-contact and per-link
                   wrenches from the coupler's row forces, as after the solver's own solve) →
                   [readback] → integration

The solver's own constraint solve does not run. SAP takes over every row: contacts and, in the same
convex problem, joint limits, DOF frictionloss and connect/weld/joint equalities (their Jacobians,
positions, types and owners go out through ``RigidDynamics.n_rows``/``row_*``; their forces come back
in efc_force, so ``get_constraint_forces`` reports them). The solver's impedance, solref/solimp and
aref of those rows are built but not used by the coupler (it has its own parameters, SapOptions).
Without collision detection (no contact geoms) only those rows are handed over (ncon stays 0).
Refused with a CapabilityError: torsional/rolling friction (condim 4, 6), explicit contact pairs, a
model with neither collision nor such rows, and a row budget that cannot hold both the non-contact rows and three rows
per contact slot.
"""

from __future__ import annotations

import numpy as np
import warp as wp
from polyphys.arrays import env_slice
from polyphys.errors import CapabilityError
from polyphys.views import ROW_EQUALITY, ROW_FRICTION, ROW_LIMIT, RigidDynamics

from . import actuation, bias, constraint_rows, contact_forces, factorization, integration, kinematics, readback
from .codes import ConstraintType, EqType
from .kernels import contact_handoff as K
from .model import EQ_ROWS, scratch_block

# the row codes core's RigidDynamics names are the rigid solver's own ConstraintType values
assert (ROW_EQUALITY, ROW_FRICTION, ROW_LIMIT) == (ConstraintType.EQUALITY, ConstraintType.FRICTION, ConstraintType.LIMIT)


def extra_rows_bound(hm) -> int:
    """The most non-contact rows a substep can build: one per dof with frictionloss, two per limited
    joint (both sides within the margin), and each equality's rows (connect 3, weld 6, joint 1)."""
    return (int((hm.dof_frictionloss > 0).sum()) + 2 * len(hm.lim_dof)
            + sum(EQ_ROWS[EqType(int(k))] for k in hm.eq_type))


def _contact_rows(solver) -> int:
    """Rows the contact slots need: three per slot, none without collision detection."""
    return 3 * solver.model.max_con if solver.collision is not None else 0


def cede(solver, owner: str) -> None:
    """Check that ``owner`` can take the contacts of ``solver`` and switch the solver to the hand-off
    stages; CapabilityError naming what is unsupported otherwise."""
    hm = solver.hm
    if solver.n_dofs == 0:
        solver._dyn = None           # nothing moves: its geoms are static obstacles, no contacts to hand over
        return
    why = None
    if solver.collision is None and not hm.has_constraint_rows:
        why = "collision detection is off (RigidOptions / Morph(collision=False)): there are no contacts to hand over"
    elif not solver.has_constraint:
        why = "the rigid solver builds no contact data (disable_constraint=True or no dofs)"
    elif solver.n_pairs:
        why = "the model lists explicit contact pairs (<contact><pair>); only dynamic geom pairs are handed over"
    else:
        condim = solver.model.geom_condim.numpy()
        if (condim > 3).any():
            g = int(np.nonzero(condim > 3)[0][0])
            why = (f"geom {g} has condim {int(condim[g])}; torsional/rolling friction (condim 4, 6) is not "
                   f"handed over (allowed: 1, 3)")
        elif solver.model.max_rows < _contact_rows(solver) + extra_rows_bound(hm):
            why = (f"the row budget max_rows={solver.model.max_rows} is below 3·max_contacts="
                   f"{_contact_rows(solver)} plus the {extra_rows_bound(hm)} limit/frictionloss/equality rows")
    if why is not None:
        raise CapabilityError(owner, "rigid contact hand-off", f"rigid solver {solver.name!r}: {why}")
    solver._contact_owner = owner
    # the build's forward() queried the solver's own contact forces: drop them (no rows, zero forces,
    # flagged stale until the first step's SAP solve)
    solver.data.nefc.zero_()
    solver.data.con_efc_adr.fill_(-1)
    solver.data.efc_force.zero_()
    solver.data.efc_pad.fill_(solver.model.max_rows)     # rows written outside the convex solve: it pads them all next
    solver._query_at = None
    solver._forward_at = solver._steps_done()
    qm = solver.data.qM
    if scratch_block(qm) is not qm:
        # the hand-off reads each env's dense M after the smooth pass wrote all of them: per env again
        # (model._qm_scratch gave the convex solve one block per View)
        solver.data.qM = qm = wp.zeros(qm.shape, dtype=qm.dtype, device=qm.device)
        for v in solver.views.values():
            v.d.qM = qm[v.start:v.stop]
    solver._dyn = {}
    # b: the non-contact rows of the substep (rows 0 .. b−1; the contacts follow), per env
    solver._handoff_rows = bool(hm.has_constraint_rows)
    solver._row0 = wp.zeros(solver.layout.n_envs, dtype=wp.int32, device=solver.layout.device)
    for part in solver.layout.partitions:
        d = solver.views[part.index].d
        rows = solver._handoff_rows
        solver._dyn[part.index] = RigidDynamics(
            qvel=d.qvel, qacc_free=d.qacc_smooth, mass=d.qM, n_contacts=d.ncon, dist=d.con_dist, pos=d.con_pos,
            frame=d.con_frame, geom=d.con_geom, link=d.con_link, condim=d.con_dim, friction=d.con_friction, jac=d.efc_J,
            geom_friction=solver.views[part.index].m.geom_friction,
            geom_friction_ratio=solver.views[part.index].m.geom_friction_ratio, qfrc_contact=d.qfrc_constraint,
            contact_force=d.efc_force, dof_parent=solver.model.dof_parent, link_dof_last=solver.model.link_dof_last,
            cdof_w=d.cdof_w, cdof_v=d.cdof_v, dof_ref=d.dof_ref,
            n_rows=env_slice(solver._row0, part.start, part.stop), row_type=d.efc_type if rows else None,
            row_id=d.efc_id if rows else None, row_pos=d.efc_pos if rows else None,
            row_frictionloss=d.efc_frictionloss if rows else None)


def pre_coupling(solver, part) -> None:
    """Free dynamics, dense M + h·D, contacts and their Jacobian rows (launches only)."""
    v = solver.views[part.index]
    d, h = v.d, solver.layout.h
    kinematics.kinematics(v)
    bias.rne(v)
    actuation.actuation(v)
    # inertia.crb + factor_solve(h) + mass_dense(h) in one launch (the same numbers; actuation reads none of them)
    factorization.crb_factor_solve(v, h, d.qfrc_smooth, d.qacc_smooth, dense=True)
    row0 = solver._dyn[part.index].n_rows
    if solver._handoff_rows:
        # the solver's own rows builder with no contacts: equality, frictionloss, limit rows first
        d.ncon.zero_()
        # limit rows within Drake's window 2h·max(|v|, |v*|) as well as the joint margin (docs/sap.md)
        constraint_rows.make_rows(v, h)
        wp.copy(row0, d.nefc)
    if solver.collision is not None:
        solver._collide(part, export=True)     # and the export into the whole-batch arrays (sliced by the partition)
        constraint_rows.contact_params(v)          # per-contact condim and mixed friction
    m = v.m
    wp.launch(K.contact_jacobian, dim=(v.n, d.con_dist.shape[1]),
              inputs=[m.dof_parent, m.link_dof_last, d.cdof_w, d.cdof_v, d.dof_ref, d.ncon, d.con_pos, d.con_frame,
                      d.con_link, row0],
              outputs=[d.efc_J, d.efc_span, d.efc_chain, d.efc_seg, d.efc_type, d.efc_id, d.con_efc_adr, d.nefc, d.efc_overflow],
              device=v.device)


def post_coupling(solver, f: int, part) -> None:
    """Integrate with the coupler's generalized contact force d.qfrc_constraint (launches only)."""
    v = solver.views[part.index]
    last = f == solver.layout.substeps - 1
    if _coupled_by_others(solver):
        # another coupler (Legacy) wrote this substep's reaction wrench after pre-coupling's bias
        # stage: recompute it so the integration applies that wrench (explicitly, as without SAP)
        bias.rne(v)
    integration.total_force(v)
    factorization.factor_solve(v, solver.layout.h, v.d.qfrc_total, v.d.qacc)
    integration.gyro_resolve(v, v.d.qfrc_total)
    contact_forces.contact_link_wrench(v, contact_forces.RESTART if f == 0 else contact_forces.ACCUMULATE)
    if last and solver._readback_on:
        readback.rne_post_constraint(v, v.d.qacc)
    integration.integrate(v, last, v.d.qfrc_total)


def _coupled_by_others(solver) -> bool:
    """Whether a coupler other than the contact owner acts on this solver (host side, static)."""
    got = getattr(solver, "_others_cached", None)
    if got is None:
        got = any(c.name != solver._contact_owner and any(solver in pair for pair in c.pairs)
                  for c in getattr(solver.scene, "couplers", []))
        solver._others_cached = got
    return got
