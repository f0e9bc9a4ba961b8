"""Convex solve stage kernel (docs/semantics.md §R8; MuJoCo's mj_solNewton / mj_solCG; docs/constraint.md).

Minimizes, for frozen M, J, aref, R, the convex primal cost ½(a − a₀)ᵀM(a − a₀) + Σ s_i(J a − aref)
with Newton (dense Cholesky of M + Jᵀ D J plus the elliptic cone block Hessians) or M⁻¹-
preconditioned nonlinear CG (Hager–Zhang), the shared exact line search (kernels/line_search.py)
and MuJoCo's stopping rule with τ = tolerance·trace(M). Iteration caps are fixed; an env that has
converged stops updating (device-side flag), so the launch is graph-capturable and needs no host
sync. The per-row update is native (kernels/convex_solve.cpp), the dense products are in
kernels/linalg.py.

Reads ``m.opt``; ``d``: qM, qacc_smooth, the rows (nefc, efc_J, efc_type, efc_aref, efc_R, efc_D,
efc_frictionloss, efc_mu, efc_dim) and the warm start ``qacc_warm``. Writes ``d``: qacc_warmstart
(the solution, next warm start), efc_force, efc_state, qfrc_constraint, solver_niter, solver_stat
and the solver_* scratch. With ``mdense`` = 1 it first writes ``d.qM`` = M + hd·D itself, per env, from ``d``:
mass and dof_dv (factorization.mass_dense's body: the same entries), so that the env's M lines are fetched once,
right before the solve reads them (benchmarks/results/constraint.md, Round 15 (smooth)).
"""

from typing import Any

import warp as wp

from ..types import SolverType, overload
from . import native
from .factorization import mass_dense_native
from .linalg import (
    cholesky_factor,
    cholesky_solve,
    jac_mul,
    jac_mul2,
    jac_tmul_grad,
    mat_mul,
    spans_fill,
)
from .line_search import exact_line_search
from .row_pool import pool_rows2, pool_rows3

wp.set_module_options({"enable_backward": False})

I2 = wp.array2d(dtype=wp.int32)
A2 = wp.array2d(dtype=Any)


@wp.func_native(native.body(__file__, "update_rows_native"))
def update_rows_native(env: int, nrow: int, efc_type: I2, efc_dim: I2, efc_D: A2, efc_R: A2, efc_floss: A2,
                       efc_mu: A2, jar: A2, efc_force: A2, efc_state: I2, out: A2): ...


I1 = wp.array(dtype=wp.int32)
I3 = wp.array3d(dtype=wp.int32)
A3 = wp.array3d(dtype=Any)


@wp.func_native(native.body(__file__, "solve_prefetch_native"))
def solve_prefetch_native(env: int, nv: int, n_efc: I1, efc_J: A3, efc_span: I3, qM: A3, efc_aref: A2, efc_D: A2,
                          efc_R: A2, jar: A2, efc_force: A2, efc_type: I2, efc_seg: I3, level: int, mtree: int,
                          dof_parent: I1, mdense: int, mass: A2, dof_dv: A2, doff: int): ...


@wp.func_native(native.body(__file__, "island_label_native"))
def island_label_native(env: int, nv: int, nrow: int, dof_parent: I1, lim_dof: I1, link_dof_last: I1, eq_type: I1,
                        eq_obj: I2, con_link: I3, efc_J: A3, efc_span: I3, efc_type: I2, efc_id: I2, dof_island: I2,
                        efc_island: I2, island_dofadr: I2, island_dofs: I2, dof_idof: I2, island_efcadr: I2,
                        island_efcs: I2, scratch: I3, nisland: I1, key_nefc: I1, key_type: I2, key_id: I2,
                        key_link: I3, mode: int): ...


@wp.func_native(native.body(__file__, "island_label_next_native"))
def island_label_next_native(env: int, nv: int, prefetch: int, dof_parent: I1, nefc: I1, ncon: I1, con_link: I3,
                             efc_type: I2, efc_id: I2, dof_island: I2, efc_island: I2, island_dofadr: I2,
                             island_dofs: I2, dof_idof: I2, island_efcadr: I2, island_efcs: I2, scratch: I3,
                             nisland: I1, island_niter: I2, key_nefc: I1, key_type: I2, key_id: I2,
                             key_link: I3): ...


@wp.func_native(native.body(__file__, "island_gather_native"))
def island_gather_native(env: int, nv: int, k: int, d0: int, nd: int, r0: int, nr: int, zero_rows: int, packed: int,
                         sc_mode: int, sc_a: A3, island_dofs: I2, island_efcs: I2, dof_island: I2, dof_idof: I2,
                         dof_parent: I1, M: A3, qacc_smooth: A2, qacc: A2, J: A3, span: I3,
                         seg: I3, efc_type: I2, efc_dim: I2, efc_D: A2, efc_R: A2, efc_floss: A2, efc_mu: A2, efc_aref: A2,
                         iM: A3,
                         iacc_smooth: A2, iacc: A2, iJ: A3, ispan: I3, itype: I2, idim: I2, iD: A2, iR: A2, ifloss: A2,
                         imu: A2, iaref: A2, jar: A2, efc_force: A2, efc_state: I2, qfrc_constraint: A2, grad: A2, ma: A2,
                         ijar: A2, iforce: A2, istate: I2, ifrc: A2, igrad: A2, ima: A2): ...


@wp.func_native(native.body(__file__, "island_scatter_native"))
def island_scatter_native(env: int, d0: int, nd: int, r0: int, nr: int, island_dofs: I2, island_efcs: I2, qacc: A2,
                          qfrc_constraint: A2, iacc: A2, ifrc: A2, efc_force: A2, efc_state: I2, iforce: A2,
                          istate: I2): ...


@wp.func_native(native.body(__file__, "pad_rows_native"))
def pad_rows(env: int, nrow: int, efc_force: A2, efc_state: I2, efc_pad: I1, nt: int): ...


@wp.func_native(native.body(__file__, "line_dots_native"))
def line_dots(env: int, nv: int, search: A2, mv: A2, ma: A2, out: A2): ...


@wp.func_native(native.body(__file__, "step_update_native"))
def step_update(env: int, nv: int, nrow: int, alpha: Any, search: A2, mv: A2, jv: A2, qacc: A2, ma: A2, jar: A2): ...


@wp.func_native(native.body(__file__, "gauss_cost_native"))
def gauss_cost(env: int, nv: int, qacc: A2, qacc_smooth: A2, ma: A2, out: A2): ...


@wp.func_native(native.body(__file__, "sumsq_native"))
def sumsq(env: int, nv: int, x: A2, out: A2, k: int): ...


@wp.func_native(native.body(__file__, "island_inplace_start_native"))
def island_inplace_start_native(env: int, fd: int, nd: int, fr: int, nr: int, sc_mode: int, M: A3, J: A3, efc_seg: I3,
                                efc_type: I2, efc_dim: I2, efc_D: A2, efc_R: A2, efc_floss: A2, efc_mu: A2, jar: A2,
                                efc_force: A2, efc_state: I2, qacc: A2, qacc_smooth: A2, ma: A2, sc_a: A3, sc_b: A3,
                                out: A2): ...


@wp.func_native(native.body(__file__, "newton_solve_native"))
def newton_solve_native(env: int, nv: int, nrow: int, dof0: int, row0: int, iterations: int, tolerance: Any, ls_iterations: int,
                        ls_tolerance: Any, stop_needs_gradient: int, scale: Any, sc_mode: int, cost_in: Any, M: A3,
                        qacc_smooth: A2, efc_J: A3, efc_type: I2, efc_D: A2, efc_R: A2, efc_floss: A2, efc_mu: A2,
                        efc_dim: I2, qacc: A2, efc_force: A2, efc_state: I2, qfrc_constraint: A2, H: A3, LM: A3, jar: A2,
                        jv: A2, grad: A2, search: A2, ma: A2, mv: A2, out: A2, niter_out: I1, packed: int): ...


@wp.func
def update_constraint(
    nv: int,
    env: int,
    efc_J: wp.array3d(dtype=Any),
    efc_type: wp.array2d(dtype=wp.int32),
    efc_D: wp.array2d(dtype=Any),
    efc_R: wp.array2d(dtype=Any),
    efc_floss: wp.array2d(dtype=Any),
    efc_mu: wp.array2d(dtype=Any),
    efc_dim: wp.array2d(dtype=wp.int32),
    nrow: int,
    qfrc_smooth: wp.array2d(dtype=Any),
    M: wp.array3d(dtype=Any),
    qacc_smooth: wp.array2d(dtype=Any),
    qacc: wp.array2d(dtype=Any),
    efc_aref: wp.array2d(dtype=Any),
    jar: wp.array2d(dtype=Any),
    efc_force: wp.array2d(dtype=Any),
    efc_state: wp.array2d(dtype=wp.int32),
    qfrc_constraint: wp.array2d(dtype=Any),
    grad: wp.array2d(dtype=Any),
    ma: wp.array2d(dtype=Any),
    full: int,
    scratch: wp.array2d(dtype=Any),
    sc_a: wp.array3d(dtype=Any),
    sc_b: wp.array3d(dtype=Any),
    sc_mode: int,
):
    """jar = J·qacc − aref, forces, states (1 quadratic, 2 cone middle zone), qfrc_constraint = Jᵀf,
    gradient g = M·(qacc − qacc_smooth) − Jᵀf; returns the total cost. full = 0: jar and ma were
    updated incrementally by the caller (jar += α·J·p, ma += α·M·p, as MuJoCo does); full = 3: as 1
    with jar = J·qacc − aref already in jar (jac_mul2 wrote it with the smooth start's J·qacc_smooth − aref)."""
    if full == 1:
        jac_mul(env, nrow, nv, efc_J, qacc, efc_aref, 1, jar, sc_a, sc_b, sc_mode)
    update_rows_native(env, nrow, efc_type, efc_dim, efc_D, efc_R, efc_floss, efc_mu, jar, efc_force, efc_state,
                       scratch)
    fm = full
    if full == 3:
        fm = 1
    jac_tmul_grad(env, nrow, nv, fm, efc_J, efc_force, M, qacc, qacc_smooth, qfrc_constraint, ma, grad, sc_a, sc_b,
                  sc_mode)
    # Gauss part ½(a − a₀)ᵀM(a − a₀), added to the rows' sum in scratch[env, 2]
    gauss_cost(env, nv, qacc, qacc_smooth, ma, scratch)
    return scratch[env, 2]


@wp.func
def span_mode(nrow: int, nv: int, solver: int, cap: int):
    """Where the row spans of a problem of nv dofs and nrow rows are cached (see kernels/linalg.cpp): 1 in LM
    (Newton), 2 in H (CG), 0 nowhere (the scratch matrix, cap entries per env, is too small: 2(nrow + nv) >
    cap, or nv > 4096, past the packed segment bounds; each product scans its rows)."""
    sc_mode = int(0)
    if 2 * (nrow + nv) <= cap and nv <= 4096:
        sc_mode = 1
        if solver == SolverType.CG:
            sc_mode = 2
    return sc_mode


@wp.func
def mass_scale(env: int, nv: int, M: wp.array3d(dtype=Any), tolerance: Any):
    """1 / trace(M) of the problem's first nv dofs (the stopping rule's scale, docs/semantics.md §R8)."""
    trace = tolerance * type(tolerance)(0.0)
    for j in range(nv):
        trace = trace + M[env, j, j]
    return type(tolerance)(1.0) / wp.max(trace, type(tolerance)(1.0e-15))


@wp.func
def solve_iterate(
    env: int,
    nv: int,
    nrow: int,
    dof0: int,
    row0: int,
    solver: int,
    iterations: int,
    tolerance: Any,
    ls_iterations: int,
    ls_tolerance: Any,
    stop_needs_gradient: int,
    scale: Any,
    sc_mode: int,
    cost_in: Any,
    M: wp.array3d(dtype=Any),
    qacc_smooth: wp.array2d(dtype=Any),
    qfrc_smooth: wp.array2d(dtype=Any),
    efc_J: wp.array3d(dtype=Any),
    efc_type: wp.array2d(dtype=wp.int32),
    efc_aref: wp.array2d(dtype=Any),
    efc_R: wp.array2d(dtype=Any),
    efc_D: wp.array2d(dtype=Any),
    efc_floss: wp.array2d(dtype=Any),
    efc_mu: wp.array2d(dtype=Any),
    efc_dim: wp.array2d(dtype=wp.int32),
    qacc: wp.array2d(dtype=Any),
    efc_force: wp.array2d(dtype=Any),
    efc_state: wp.array2d(dtype=wp.int32),
    qfrc_constraint: wp.array2d(dtype=Any),
    H: wp.array3d(dtype=Any),
    LM: wp.array3d(dtype=Any),
    jar: wp.array2d(dtype=Any),
    jv: wp.array2d(dtype=Any),
    grad: wp.array2d(dtype=Any),
    mgrad: wp.array2d(dtype=Any),
    mgrad_old: wp.array2d(dtype=Any),
    search: wp.array2d(dtype=Any),
    ma: wp.array2d(dtype=Any),
    mv: wp.array2d(dtype=Any),
    solver_stat: wp.array2d(dtype=Any),
    niter_out: wp.array(dtype=wp.int32),
):
    """Newton or CG iterations of one problem (an env, or one island gathered into the island arrays) from
    the state update_constraint left (qacc, jar, forces, gradient, ma; cost cost_in), with its own line
    search and stopping test. Returns (scaled improvement, scaled gradient, cost, iterations; niter_out[env]:
    scratch for the count). Newton runs
    natively in one call (newton_solve_native, kernels/convex_solve.cpp); CG below. dof0 / row0 (Newton only; CG
    takes 0 / 0): the problem is the env arrays' dofs [dof0, dof0 + nv) and rows [row0, row0 + nrow) (an island
    solved in place). sc_mode + 8 (Newton): a 6-dof problem runs the copy of the loop compiled for nv = 6; + 16·b:
    a problem of at least b diagonal blocks of M factors H over its block pattern (kernels/linalg.cpp la_blk_*)."""
    if solver == SolverType.NEWTON:
        newton_solve_native(env, nv, nrow, dof0, row0, iterations, tolerance, ls_iterations, ls_tolerance,
                            stop_needs_gradient, scale, sc_mode, cost_in, M, qacc_smooth, efc_J, efc_type, efc_D, efc_R,
                            efc_floss, efc_mu, efc_dim, qacc, efc_force, efc_state, qfrc_constraint, H, LM, jar, jv, grad,
                            search, ma, mv, solver_stat, niter_out, 0)
        return wp.vector(solver_stat[env, 0], solver_stat[env, 1], solver_stat[env, 2], type(tolerance)(niter_out[env]))
    zero = tolerance * type(tolerance)(0.0)
    one = zero + type(tolerance)(1.0)
    cost = cost_in
    # M factor for CG preconditioning
    if solver == SolverType.CG:
        for j in range(nv):
            for k in range(nv):
                LM[env, j, k] = M[env, j, k]
        cholesky_factor(nv, env, LM)
        cholesky_solve(nv, env, LM, grad, mgrad)
        for j in range(nv):
            search[env, j] = -mgrad[env, j]

    niter = int(0)
    gnorm = zero
    improvement = zero
    done = int(0)
    if nrow == 0:
        done = 1
    sumsq(env, nv, grad, solver_stat, 0)
    gnorm = wp.sqrt(solver_stat[env, 0])
    if scale * gnorm < tolerance:
        done = 1
    for _it in range(iterations):
        if done == 1:
            continue
        # ---- exact line search along search: derivative root of the convex 1-D cost
        mat_mul(env, nv, M, search, mv, LM, H, sc_mode)
        line_dots(env, nv, search, mv, ma, solver_stat)
        pmp = solver_stat[env, 0]
        pg0 = solver_stat[env, 1]
        jac_mul(env, nrow, nv, efc_J, search, jv, 0, jv, LM, H, sc_mode)
        alpha = exact_line_search(env, nrow, 0, ls_iterations, ls_tolerance, pg0, pmp, efc_type, efc_dim, efc_D, efc_R,
                                  efc_floss, efc_mu, efc_D, jar, jv, solver_stat)
        # ---- update
        step_update(env, nv, nrow, alpha, search, mv, jv, qacc, ma, jar)
        if solver == SolverType.CG:
            for j in range(nv):
                mgrad_old[env, j] = mgrad[env, j]
                mv[env, j] = grad[env, j]
        old = cost
        cost = update_constraint(nv, env, efc_J, efc_type, efc_D, efc_R, efc_floss, efc_mu, efc_dim, nrow, qfrc_smooth,
                                 M, qacc_smooth, qacc, efc_aref, jar, efc_force, efc_state, qfrc_constraint, grad, ma, 0,
                                 solver_stat, LM, H, sc_mode)
        niter = niter + 1
        improvement = scale * (old - cost)
        sumsq(env, nv, grad, solver_stat, 0)
        gnorm = scale * wp.sqrt(solver_stat[env, 0])
        if solver == SolverType.CG:
            cholesky_solve(nv, env, LM, grad, mgrad)
            # Hager–Zhang β (M⁻¹-preconditioned) with the CG_DESCENT lower bound
            # η = −1/(‖p‖·min(0.01, ‖g_old‖)); y = g − g_old, My = M⁻¹y
            dy = zero
            ymy = zero
            pn = zero
            gon = zero
            for j in range(nv):
                yj = grad[env, j] - mv[env, j]
                dy = dy + search[env, j] * yj
                ymy = ymy + yj * (mgrad[env, j] - mgrad_old[env, j])
                pn = pn + search[env, j] * search[env, j]
                gon = gon + mv[env, j] * mv[env, j]
            beta = zero
            if wp.abs(dy) > type(tolerance)(1.0e-30):
                num = zero
                for j in range(nv):
                    num = num + (mgrad[env, j] - mgrad_old[env, j] - type(tolerance)(2.0) * ymy / dy
                                 * search[env, j]) * grad[env, j]
                beta = num / dy
                eta = -one / wp.max(wp.sqrt(pn) * wp.min(type(tolerance)(0.01), wp.sqrt(gon)),
                                    type(tolerance)(1.0e-30))
                beta = wp.max(beta, eta)
            for j in range(nv):
                search[env, j] = -mgrad[env, j] + beta * search[env, j]
        # docs/semantics.md §R8: MuJoCo's rule stops on either test; the default-mode Newton path needs both
        # (a small line-search improvement alone does not prove the gradient is small)
        if stop_needs_gradient == 1:
            if (improvement < tolerance and gnorm < tolerance) or alpha == zero:
                done = 1
        elif improvement < tolerance or gnorm < tolerance or alpha == zero:
            done = 1
    return wp.vector(improvement, gnorm, cost, type(tolerance)(niter))


@wp.kernel
def solve_convex(m: Any, d: Any, qacc_warm: wp.array2d(dtype=Any), prefetch: int, inplace: int, pad_nt: int,
                 fixed6: int, blocks: int, mdense: int, hd: Any, incremental: int):
    env = wp.tid()
    if mdense == 1:
        # the dense M + hd·D of this env from the tree-sparse M (factorization.mass_dense's body: the same
        # entries), written now that the solve reads it next (its lines are fetched once, not written by the
        # smooth pass and fetched again here)
        mass_dense_native(env, m.nv, hd, m.dof_madr, m.dof_depth, m.m_col, d.mass, d.dof_dv, d.qM)
    # the arrays under their short names (Model: m, Data: d)
    nv = m.nv
    solver = m.opt.solver
    iterations = m.opt.iterations
    tolerance = m.opt.tolerance
    ls_iterations = m.opt.ls_iterations
    ls_tolerance = m.opt.ls_tolerance
    warm_pick_lower = m.opt.warm_pick_lower
    stop_needs_gradient = m.opt.stop_needs_gradient
    M = d.qM
    qacc_smooth = d.qacc_smooth
    n_efc = d.nefc
    # the env's rows at its address in the row pool (kernels/row_pool.py; offset 0 without the pool)
    off = d.efc_off[env]
    efc_J = pool_rows3(d.efc_J, off)
    efc_span = pool_rows3(d.efc_span, off)
    efc_seg = pool_rows3(d.efc_seg, off)
    efc_type = pool_rows2(d.efc_type, off)
    efc_aref = pool_rows2(d.efc_aref, off)
    efc_R = pool_rows2(d.efc_R, off)
    efc_D = pool_rows2(d.efc_D, off)
    efc_floss = pool_rows2(d.efc_frictionloss, off)
    efc_mu = pool_rows2(d.efc_mu, off)
    efc_dim = pool_rows2(d.efc_dim, off)
    H = d.solver_H
    LM = d.solver_LM
    jar = d.solver_jar
    jv = d.solver_jv
    grad = d.solver_grad
    mgrad = d.solver_mgrad
    mgrad_old = d.solver_mgrad_old
    search = d.solver_search
    ma = d.solver_ma
    mv = d.solver_mv
    qfrc_smooth = d.solver_ma0    # (update_constraint's and solve_iterate's unused argument)
    qacc = d.qacc_warmstart
    efc_force = pool_rows2(d.efc_force, off)
    efc_state = pool_rows2(d.efc_state, off)
    qfrc_constraint = d.qfrc_constraint
    solver_niter = d.solver_niter
    solver_stat = d.solver_stat
    nrow = n_efc[env]
    zero = tolerance * type(tolerance)(0.0)
    # islands (docs/semantics.md §R8, labelled by label_islands): the env is solved as one problem when
    # islands are off, when it has no rows, or when its one island holds every dof (the same code and
    # numbers as without islands); else island by island
    nisl = int(0)
    whole = int(1)
    if m.opt.islands == 1:
        nisl = d.nisland[env]
        if nisl > 1 or (nisl == 1 and d.island_dofadr[env, 1] < nv):
            whole = 0
    if prefetch >= 1:
        # CPU: the next env's rows and M while this one is solved (kernels/convex_solve.cpp; 2: into L2 only)
        # (the next env's rows: efc_off[env + 1] − efc_off[env] rows on from where its own block is seen from here)
        doff = int(0)
        if env + 1 < n_efc.shape[0]:
            doff = d.efc_off[env + 1] - off
        solve_prefetch_native(env, nv, n_efc, efc_J, efc_span, M, efc_aref, efc_D, efc_R, jar, efc_force, efc_type,
                              efc_seg, prefetch & 3, int(prefetch < 4), m.dof_parent, mdense, d.mass, d.dof_dv, doff)
    pad_rows(env, nrow, efc_force, efc_state, d.efc_pad, pad_nt)   # padding rows read as inactive, zero force
    scale = mass_scale(env, nv, M, tolerance)
    # row spans cached in the scratch matrix this solver does not use (kernels/linalg.cpp): M's from the dof
    # tree, J's the segments make_rows recorded (efc_seg)
    sc_mode = span_mode(nrow, nv, solver, nv * nv)
    spans_fill(env, nrow, nv, efc_span, efc_seg, efc_J, M, LM, H, sc_mode, m.dof_parent, 1)
    # (no M·qacc_smooth: nothing reads it — update_constraint forms M·(a − a₀) from qacc − qacc_smooth; Round 16)

    # warm start (optionally the lower-cost of warm and smooth, MuJoCo's rule: for the whole env, as
    # MuJoCo does with islands too); no rows: qacc_smooth
    # (the warm start is copied to scratch first: qacc_warm may be qacc itself, warm-started in place)
    for j in range(nv):
        search[env, j] = qacc_warm[env, j]
        qacc[env, j] = search[env, j]
        if nrow == 0:
            qacc[env, j] = qacc_smooth[env, j]
    c2 = zero
    full = int(1)
    if warm_pick_lower == 1:
        # the cost at qacc_smooth first, then the warm start's evaluation: when the warm start wins (the usual
        # case) its evaluation is the one in place and no third evaluation is needed. Both J products in one
        # pass over J (J·qacc_smooth − aref into jv, scratch until the first line search; J·qacc − aref into
        # jar); the smooth rows' forces and states are overwritten by the warm start's below
        jac_mul2(env, nrow, nv, efc_J, qacc_smooth, qacc, efc_aref, jv, jar, LM, H, sc_mode)
        update_rows_native(env, nrow, efc_type, efc_dim, efc_D, efc_R, efc_floss, efc_mu, jv, efc_force, efc_state,
                           solver_stat)
        c2 = solver_stat[env, 2]
        full = 3
    cost = update_constraint(nv, env, efc_J, efc_type, efc_D, efc_R, efc_floss, efc_mu, efc_dim, nrow, qfrc_smooth,
                             M, qacc_smooth, qacc, efc_aref, jar, efc_force, efc_state, qfrc_constraint, grad, ma, full,
                             solver_stat, LM, H, sc_mode)
    if warm_pick_lower == 1:
        if not (cost < c2):
            for j in range(nv):
                qacc[env, j] = qacc_smooth[env, j]
            cost = update_constraint(nv, env, efc_J, efc_type, efc_D, efc_R, efc_floss, efc_mu, efc_dim, nrow,
                                     qfrc_smooth, M, qacc_smooth, qacc, efc_aref, jar, efc_force, efc_state,
                                     qfrc_constraint, grad, ma, 1, solver_stat, LM, H, sc_mode)
    # blocks: Newton builds and factors the Hessian over its block pattern when M has at least `blocks` diagonal
    # blocks (sc_mode + 16·blocks; kernels/linalg.cpp la_blk_*)
    # incremental: the Newton factor updated by the rows that changed state after the first iteration (sc_mode
    # + 4096; kernels/convex_solve.cpp newton_solve_native)
    blk = int(0)
    if solver == SolverType.NEWTON:
        blk = 16 * blocks + 4096 * incremental
    if whole == 1:
        sc_w = sc_mode
        if sc_mode != 0:
            sc_w = sc_mode + blk
        res = solve_iterate(env, nv, nrow, 0, 0, solver, iterations, tolerance, ls_iterations, ls_tolerance,
                            stop_needs_gradient, scale, sc_w, cost, M, qacc_smooth, qfrc_smooth, efc_J, efc_type,
                            efc_aref, efc_R, efc_D, efc_floss, efc_mu, efc_dim, qacc, efc_force, efc_state,
                            qfrc_constraint, H, LM, jar, jv, grad, mgrad, mgrad_old, search, ma, mv, solver_stat,
                            solver_niter)
        niter = int(res[3])
        solver_niter[env] = niter
        solver_stat[env, 0] = res[0]
        solver_stat[env, 1] = res[1]
        solver_stat[env, 2] = res[2]
        if nisl == 1:
            d.island_niter[env, 0] = niter
    else:
        # ---- several islands (MuJoCo's mj_fwdConstraint with islands): the dofs in no island take
        # qacc_smooth (no row touches them: their Jᵀf is 0); each island, unless its own scaled gradient
        # already meets the tolerance, is solved as its own problem (own trace(M) scale, Hessian, line search
        # and stop): in place when its dofs and rows are contiguous blocks (Newton, inplace = 1), else gathered
        # into the island arrays (its dofs and rows in ascending order, with its part of the evaluation
        # above) and scattered back
        for j in range(nv):
            if d.dof_island[env, j] < 0:
                qacc[env, j] = qacc_smooth[env, j]
        iM = d.iM
        iJ = d.iefc_J
        ispan = d.iefc_span
        itype = d.iefc_type
        idim = d.iefc_dim
        istate = d.iefc_state
        iD = d.iefc_D
        iR = d.iefc_R
        ifloss = d.iefc_frictionloss
        imu = d.iefc_mu
        iaref = d.iefc_aref
        iforce = d.iefc_force
        ijar = d.iefc_jar
        iacc_smooth = d.iacc_smooth
        iacc = d.iacc
        ifrc = d.ifrc_constraint
        igrad = d.igrad
        ima = d.ima
        dofs = d.island_dofs
        rows = d.island_efcs
        best = int(-1)
        best_imp = zero
        best_g = zero
        total = cost
        for k in range(nisl):
            d0 = d.island_dofadr[env, k]
            nd = d.island_dofadr[env, k + 1] - d0
            r0 = d.island_efcadr[env, k]
            nr = d.island_efcadr[env, k + 1] - r0
            # the island's scale 1/trace(M_island) and scaled gradient at its start, from the evaluation above
            tr = zero
            g0 = zero
            for a in range(nd):
                da = dofs[env, d0 + a]
                tr = tr + M[env, da, da]
                g0 = g0 + grad[env, da] * grad[env, da]
            iscale = type(tolerance)(1.0) / wp.max(tr, type(tolerance)(1.0e-15))
            g0 = iscale * wp.sqrt(g0)
            if g0 < tolerance:
                # converged at its start: the evaluation above already holds its forces and Jᵀf
                d.island_niter[env, k] = 0
                if best < 0:
                    best = 0
                    best_g = g0
                continue
            isc = span_mode(nr, nd, solver, nv * nv)   # the env's scratch matrix holds the island's spans
            # an island whose dofs and rows are each one contiguous block of the env's (lists ascending: first +
            # count − 1 = last) is solved in place by Newton, over the env arrays at those offsets: the same
            # entries in the same order as its gathered copy, so the same numbers, without gather and scatter
            fd = dofs[env, d0]
            fr = rows[env, r0]
            if (inplace == 1 and solver == SolverType.NEWTON and isc != 0 and dofs[env, d0 + nd - 1] == fd + nd - 1
                    and rows[env, r0 + nr - 1] == fr + nr - 1):
                island_inplace_start_native(env, fd, nd, fr, nr, isc, M, efc_J, efc_seg, efc_type, efc_dim, efc_D,
                                            efc_R, efc_floss, efc_mu, jar, efc_force, efc_state, qacc, qacc_smooth, ma,
                                            LM, H, solver_stat)
                c0 = solver_stat[env, 2]
                # fixed6: a 6-dof island's Newton iterations from their copy compiled for nv = 6 (sc_mode + 8)
                isc_it = isc + blk
                if fixed6 == 1:
                    isc_it = isc_it + 8
                res = solve_iterate(env, nd, nr, fd, fr, solver, iterations, tolerance, ls_iterations, ls_tolerance,
                                    stop_needs_gradient, iscale, isc_it, c0, M, qacc_smooth, qfrc_smooth, efc_J, efc_type,
                                    efc_aref, efc_R, efc_D, efc_floss, efc_mu, efc_dim, qacc, efc_force, efc_state,
                                    qfrc_constraint, H, LM, jar, jv, grad, mgrad, mgrad_old, search, ma, mv, solver_stat,
                                    solver_niter)
            else:
                zero_rows = int(0)
                if isc == 0:
                    zero_rows = 1
                # Newton: the island's M block, J rows and Hessian packed at row stride nd (its rows one after
                # another: a few KB instead of a row per 8·nv bytes), the span cache filled by the gather; CG reads
                # the island arrays at their own strides
                packed = int(0)
                if solver == SolverType.NEWTON:
                    packed = 1
                island_gather_native(env, nv, k, d0, nd, r0, nr, zero_rows, packed, isc, LM, dofs, rows, d.dof_island,
                                     d.dof_idof, m.dof_parent, M, qacc_smooth, qacc, efc_J, efc_span, efc_seg,
                                     efc_type, efc_dim, efc_D, efc_R, efc_floss, efc_mu, efc_aref, iM, iacc_smooth, iacc,
                                     iJ, ispan, itype, idim, iD, iR, ifloss, imu, iaref, jar, efc_force, efc_state,
                                     qfrc_constraint, grad, ma, ijar, iforce, istate, ifrc, igrad, ima)
                if packed == 0:
                    # (the island's J segments: found by the gather while it wrote the rows, in ispan)
                    spans_fill(env, nr, nd, ispan, ispan, iJ, iM, LM, H, isc, m.dof_parent, 0)
                # the island's cost at its start: its rows' costs and its Gauss term
                update_rows_native(env, nr, itype, idim, iD, iR, ifloss, imu, ijar, iforce, istate, solver_stat)
                gauss_cost(env, nd, iacc, iacc_smooth, ima, solver_stat)
                c0 = solver_stat[env, 2]
                if packed == 1:
                    # (a 6-dof island gathered runs the nv = 6 copy too: sc_mode + 8)
                    isc_g = isc + blk
                    if fixed6 == 1:
                        isc_g = isc_g + 8
                    newton_solve_native(env, nd, nr, 0, 0, iterations, tolerance, ls_iterations, ls_tolerance,
                                        stop_needs_gradient, iscale, isc_g, c0, iM, iacc_smooth, iJ, itype, iD, iR, ifloss,
                                        imu, idim, iacc, iforce, istate, ifrc, H, LM, ijar, jv, igrad, search, ima, mv,
                                        solver_stat, solver_niter, 1)
                    res = wp.vector(solver_stat[env, 0], solver_stat[env, 1], solver_stat[env, 2],
                                    type(tolerance)(solver_niter[env]))
                else:
                    res = solve_iterate(env, nd, nr, 0, 0, solver, iterations, tolerance, ls_iterations, ls_tolerance,
                                        stop_needs_gradient, iscale, isc, c0, iM, iacc_smooth, qfrc_smooth, iJ, itype,
                                        iaref, iR, iD, ifloss, imu, idim, iacc, iforce, istate, ifrc, H, LM, ijar, jv,
                                        igrad, mgrad, mgrad_old, search, ima, mv, solver_stat, solver_niter)
                island_scatter_native(env, d0, nd, r0, nr, dofs, rows, qacc, qfrc_constraint, iacc, ifrc, efc_force,
                                      efc_state, iforce, istate)
            it = int(res[3])
            d.island_niter[env, k] = it
            total = total + res[2] - c0
            if it > best:
                best = it
                best_imp = res[0]
                best_g = res[1]
        # the env's figures: the iterations and stopping statistics of its island that iterated most,
        # the total cost after the solve
        solver_niter[env] = best
        solver_stat[env, 0] = best_imp
        solver_stat[env, 1] = best_g
        solver_stat[env, 2] = total


@wp.kernel
def label_islands(m: Any, d: Any, prefetch: int):
    """Constraint islands of each env (MuJoCo's mj_island; native body island_label_native): the kinematic
    trees (a dof's tree: the root of its dof chain) joined by each constraint (consecutive rows of one
    type and object) through what it acts on (a contact's two links, a connect/weld's two links, a joint
    equality's two dofs, a limit's or frictionloss's dof; else the nonzero columns of its rows' J).
    Islands are numbered in the order of their first tree; dofs and rows keep ascending order inside an
    island. Writes nisland, dof_island (−1: in no island), efc_island, island_dofadr /
    island_dofs, dof_idof (index inside the island), island_efcadr / island_efcs, and clears the
    island_niter entries past the count (island_label_next_native, which with ``prefetch`` = 1 (into L1) or
    2 (into L2 only) also prefetches the next env's rows and outputs on CPU; no effect on the numbers).
    The labels are a function of the rows' (type, id), the contacts' links and the model; when these equal
    the copies taken at the env's last relabelling (island_key_*), the labels are kept as they are (the
    same numbers by construction); a relabelling that read J (a constraint with no tree from what it acts
    on) takes no copy (island_key_nefc = −1), so the next substep relabels."""
    env = wp.tid()
    nv = m.nv
    # the env's rows at its address in the row pool (kernels/row_pool.py); the labels and their keys are per env
    off = d.efc_off[env]
    island_label_native(env, nv, d.nefc[env], m.dof_parent, m.lim_dof, m.link_dof_last, m.eq_type, m.eq_obj, d.con_link,
                        pool_rows3(d.efc_J, off), pool_rows3(d.efc_span, off), pool_rows2(d.efc_type, off),
                        pool_rows2(d.efc_id, off), d.dof_island, d.efc_island, d.island_dofadr, d.island_dofs, d.dof_idof,
                        d.island_efcadr, d.island_efcs, d.island_scratch, d.nisland, d.island_key_nefc,
                        d.island_key_type, d.island_key_id, d.island_key_link, prefetch)
    # (its rows here only for the next env's prefetch: at the next env's address)
    off1 = off
    if env + 1 < d.nefc.shape[0]:
        off1 = d.efc_off[env + 1]
    island_label_next_native(env, nv, prefetch, m.dof_parent, d.nefc, d.ncon, d.con_link, pool_rows2(d.efc_type, off1),
                             pool_rows2(d.efc_id, off1), d.dof_island, d.efc_island, d.island_dofadr, d.island_dofs,
                             d.dof_idof, d.island_efcadr, d.island_efcs, d.island_scratch, d.nisland, d.island_niter,
                             d.island_key_nefc, d.island_key_type, d.island_key_id, d.island_key_link)


overload(label_islands)
overload(solve_convex, qacc_warm=lambda s: wp.array2d(dtype=s), hd=lambda s: s)
