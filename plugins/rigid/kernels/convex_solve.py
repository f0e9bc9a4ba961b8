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
and the solver_* scratch.
"""

from typing import Any

import warp as wp

from ..types import ConstraintType, EfcState, SolverType, overload
from . import native
from .linalg import cholesky_factor, cholesky_solve, hess_add_pair, hess_copy, jac_mul, jac_tmul_grad, mat_mul, spans_fill
from .line_search import exact_line_search

wp.set_module_options({"enable_backward": False})

I2 = wp.array2d(dtype=wp.int32)
A2 = wp.array2d(dtype=Any)


@wp.func_native(native.body(__file__, "update_rows_native"))
def update_rows_native(env: int, nrow: int, efc_type: I2, efc_dim: I2, efc_D: A2, efc_R: A2, efc_floss: A2,
                       efc_mu: A2, jar: A2, efc_force: A2, efc_state: I2, out: A2): ...


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
    updated incrementally by the caller (jar += α·J·p, ma += α·M·p, as MuJoCo does); full = 2: the
    cost at qacc = qacc_smooth only (no Jᵀf, no gradient)."""
    zero = qacc[env, 0] * type(qacc[env, 0])(0.0)
    half = type(zero)(0.5)
    if full >= 1:
        jac_mul(env, nrow, nv, efc_J, qacc, efc_aref, 1, jar, sc_a, sc_b, sc_mode)
    update_rows_native(env, nrow, efc_type, efc_dim, efc_D, efc_R, efc_floss, efc_mu, jar, efc_force, efc_state,
                       scratch)
    cost = scratch[env, 2]
    if full == 2:
        # cost only, at qacc = qacc_smooth (the Gauss part is exactly 0 there); gradient not formed
        return cost
    jac_tmul_grad(env, nrow, nv, full, efc_J, efc_force, M, qacc, qacc_smooth, qfrc_constraint, ma, grad, sc_a, sc_b,
                  sc_mode)
    # Gauss part ½(a − a₀)ᵀM(a − a₀)
    for j in range(nv):
        cost = cost + half * (qacc[env, j] - qacc_smooth[env, j]) * ma[env, j]
    return cost


@wp.func
def span_mode(nrow: int, nv: int, solver: int):
    """Where the row spans are cached (see kernels/linalg.cpp): 1 in LM (Newton), 2 in H (CG), 0 nowhere
    (the scratch matrix is too small: 2(nrow + nv) > nv², each product scans its rows)."""
    sc_mode = int(0)
    if 2 * (nrow + nv) <= nv * nv:
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
):
    """Newton or CG iterations of one problem (an env, or one island gathered into the island arrays) from
    the state update_constraint left (qacc, jar, forces, gradient, ma; cost cost_in), with its own line
    search and stopping test. Returns (scaled improvement, scaled gradient, cost, iterations)."""
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
    for j in range(nv):
        gnorm = gnorm + grad[env, j] * grad[env, j]
    gnorm = wp.sqrt(gnorm)
    if scale * gnorm < tolerance:
        done = 1
    for _it in range(iterations):
        if done == 1:
            continue
        if solver == SolverType.NEWTON:
            # H = M + Jᵀ D J over quadratic rows + cone middle-zone block Hessians
            hess_copy(env, nv, M, H)
            i = int(0)
            while i < nrow:
                if efc_type[env, i] == ConstraintType.CONTACT_ELLIPTIC and efc_state[env, i] == EfcState.CONE:
                    dim = efc_dim[env, i]
                    mu = efc_mu[env, i]
                    dm = efc_D[env, i] / (mu * mu * (one + mu * mu))
                    n = mu * jar[env, i]
                    tt = zero
                    for j in range(1, dim):
                        u = efc_mu[env, i + j] * jar[env, i + j]
                        tt = tt + u * u
                    t = wp.sqrt(tt)
                    nmt = n - mu * t
                    # jar-space block: dm (g gᵀ − nmt·μ/t · F(I − ûûᵀ)F), g = (μ, −μ f_j u_j / t)
                    for a in range(dim):
                        ga = mu
                        fa = zero
                        ua = zero
                        if a > 0:
                            fa = efc_mu[env, i + a]
                            ua = fa * jar[env, i + a] / t
                            ga = -mu * fa * ua
                        for bb in range(dim):
                            gb = mu
                            fb = zero
                            ub = zero
                            if bb > 0:
                                fb = efc_mu[env, i + bb]
                                ub = fb * jar[env, i + bb] / t
                                gb = -mu * fb * ub
                            hab = ga * gb
                            if a > 0 and bb > 0:
                                idn = zero
                                if a == bb:
                                    idn = one
                                hab = hab - nmt * mu / t * fa * fb * (idn - ua * ub)
                            hab = dm * hab
                            hess_add_pair(env, nv, i + a, i + bb, hab, efc_J, H, LM, H, sc_mode)
                    i = i + dim
                else:
                    if efc_state[env, i] == EfcState.QUADRATIC:
                        hess_add_pair(env, nv, i, i, efc_D[env, i], efc_J, H, LM, H, sc_mode)
                    i = i + 1
            cholesky_factor(nv, env, H)
            cholesky_solve(nv, env, H, grad, search)
            for j in range(nv):
                search[env, j] = -search[env, j]
        # ---- exact line search along search: derivative root of the convex 1-D cost
        mat_mul(env, nv, M, search, mv, LM, H, sc_mode)
        pmp = zero
        pg0 = zero
        snorm = zero
        for j in range(nv):
            pmp = pmp + search[env, j] * mv[env, j]
            pg0 = pg0 + search[env, j] * ma[env, j]
            snorm = snorm + search[env, j] * search[env, j]
        jac_mul(env, nrow, nv, efc_J, search, jv, 0, jv, LM, H, sc_mode)
        alpha = exact_line_search(env, nrow, 0, ls_iterations, ls_tolerance, pg0, pmp, efc_type, efc_dim, efc_D, efc_R,
                                  efc_floss, efc_mu, efc_D, jar, jv, solver_stat)
        # ---- update
        for j in range(nv):
            qacc[env, j] = qacc[env, j] + alpha * search[env, j]
            ma[env, j] = ma[env, j] + alpha * mv[env, j]
        for r in range(nrow):
            jar[env, r] = jar[env, r] + alpha * jv[env, r]
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
        gnorm = zero
        for j in range(nv):
            gnorm = gnorm + grad[env, j] * grad[env, j]
        gnorm = scale * wp.sqrt(gnorm)
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
def solve_convex(m: Any, d: Any, qacc_warm: wp.array2d(dtype=Any)):
    env = wp.tid()
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
    efc_J = d.efc_J
    efc_type = d.efc_type
    efc_aref = d.efc_aref
    efc_R = d.efc_R
    efc_D = d.efc_D
    efc_floss = d.efc_frictionloss
    efc_mu = d.efc_mu
    efc_dim = d.efc_dim
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
    qfrc_smooth = d.solver_ma0
    qacc = d.qacc_warmstart
    efc_force = d.efc_force
    efc_state = d.efc_state
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
    for i in range(nrow, efc_force.shape[1]):   # padding rows read as inactive, zero force
        efc_force[env, i] = zero
        efc_state[env, i] = EfcState.INACTIVE
    if whole == 1:
        scale = mass_scale(env, nv, M, tolerance)
        # row spans cached in the scratch matrix this solver does not use (see _SPAN_HEAD)
        sc_mode = span_mode(nrow, nv, solver)
        spans_fill(env, nrow, nv, d.efc_span, M, LM, H, sc_mode)
        mat_mul(env, nv, M, qacc_smooth, qfrc_smooth, LM, H, sc_mode)

        # warm start (optionally the lower-cost of warm and smooth, MuJoCo's rule); no rows: qacc_smooth
        # (the warm start is copied to scratch first: qacc_warm may be qacc itself, warm-started in place)
        for j in range(nv):
            search[env, j] = qacc_warm[env, j]
            qacc[env, j] = search[env, j]
            if nrow == 0:
                qacc[env, j] = qacc_smooth[env, j]
        c2 = zero
        if warm_pick_lower == 1:
            # smooth first, then the warm start: when the warm start wins (the usual case) its
            # evaluation is the one in place and no third evaluation is needed
            for j in range(nv):
                qacc[env, j] = qacc_smooth[env, j]
            c2 = update_constraint(nv, env, efc_J, efc_type, efc_D, efc_R, efc_floss, efc_mu, efc_dim, nrow,
                                   qfrc_smooth, M, qacc_smooth, qacc, efc_aref, jar, efc_force, efc_state,
                                   qfrc_constraint, grad, ma, 2, solver_stat, LM, H, sc_mode)
            for j in range(nv):
                qacc[env, j] = search[env, j]
                if nrow == 0:
                    qacc[env, j] = qacc_smooth[env, j]
        cost = update_constraint(nv, env, efc_J, efc_type, efc_D, efc_R, efc_floss, efc_mu, efc_dim, nrow, qfrc_smooth,
                                 M, qacc_smooth, qacc, efc_aref, jar, efc_force, efc_state, qfrc_constraint, grad, ma, 1,
                                 solver_stat, LM, H, sc_mode)
        if warm_pick_lower == 1:
            if not (cost < c2):
                for j in range(nv):
                    qacc[env, j] = qacc_smooth[env, j]
                cost = update_constraint(nv, env, efc_J, efc_type, efc_D, efc_R, efc_floss, efc_mu, efc_dim, nrow,
                                         qfrc_smooth, M, qacc_smooth, qacc, efc_aref, jar, efc_force, efc_state,
                                         qfrc_constraint, grad, ma, 1, solver_stat, LM, H, sc_mode)
        res = solve_iterate(env, nv, nrow, solver, iterations, tolerance, ls_iterations, ls_tolerance,
                            stop_needs_gradient, scale, sc_mode, cost, M, qacc_smooth, qfrc_smooth, efc_J, efc_type,
                            efc_aref, efc_R, efc_D, efc_floss, efc_mu, efc_dim, qacc, efc_force, efc_state,
                            qfrc_constraint, H, LM, jar, jv, grad, mgrad, mgrad_old, search, ma, mv, solver_stat)
        niter = int(res[3])
        solver_niter[env] = niter
        solver_stat[env, 0] = res[0]
        solver_stat[env, 1] = res[1]
        solver_stat[env, 2] = res[2]
        if nisl == 1:
            d.island_niter[env, 0] = niter
    else:
        # ---- several islands (MuJoCo's mj_fwdConstraint with islands): the warm start is picked for the
        # whole env, the dofs in no island take qacc_smooth, then each island is gathered into the
        # island arrays (its dofs and rows in ascending order) and solved as its own problem
        for j in range(nv):
            search[env, j] = qacc_warm[env, j]
            qacc[env, j] = search[env, j]
        if warm_pick_lower == 1:
            sc_mode = span_mode(nrow, nv, solver)
            spans_fill(env, nrow, nv, d.efc_span, M, LM, H, sc_mode)
            for j in range(nv):
                qacc[env, j] = qacc_smooth[env, j]
            c2 = update_constraint(nv, env, efc_J, efc_type, efc_D, efc_R, efc_floss, efc_mu, efc_dim, nrow,
                                   qfrc_smooth, M, qacc_smooth, qacc, efc_aref, jar, efc_force, efc_state,
                                   qfrc_constraint, grad, ma, 2, solver_stat, LM, H, sc_mode)
            for j in range(nv):
                qacc[env, j] = search[env, j]
            cw = update_constraint(nv, env, efc_J, efc_type, efc_D, efc_R, efc_floss, efc_mu, efc_dim, nrow,
                                   qfrc_smooth, M, qacc_smooth, qacc, efc_aref, jar, efc_force, efc_state,
                                   qfrc_constraint, grad, ma, 1, solver_stat, LM, H, sc_mode)
            if not (cw < c2):
                for j in range(nv):
                    qacc[env, j] = qacc_smooth[env, j]
        for j in range(nv):
            if d.dof_island[env, j] < 0:
                qacc[env, j] = qacc_smooth[env, j]
                qfrc_constraint[env, j] = zero
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
        iacc_smooth = d.iacc_smooth
        iacc = d.iacc
        ifrc = d.ifrc_constraint
        dofs = d.island_dofs
        rows = d.island_efcs
        best = int(-1)
        best_imp = zero
        best_g = zero
        total = zero
        for k in range(nisl):
            d0 = d.island_dofadr[env, k]
            nd = d.island_dofadr[env, k + 1] - d0
            r0 = d.island_efcadr[env, k]
            nr = d.island_efcadr[env, k + 1] - r0
            isc = span_mode(nr, nd, solver)
            # gather: M block, accelerations, rows (their J restricted to the island's dofs)
            for a in range(nd):
                da = dofs[env, d0 + a]
                iacc_smooth[env, a] = qacc_smooth[env, da]
                iacc[env, a] = qacc[env, da]
                for b in range(nd):
                    iM[env, a, b] = M[env, da, dofs[env, d0 + b]]
            for q in range(nr):
                r = rows[env, r0 + q]
                itype[env, q] = efc_type[env, r]
                idim[env, q] = efc_dim[env, r]
                iD[env, q] = efc_D[env, r]
                iR[env, q] = efc_R[env, r]
                ifloss[env, q] = efc_floss[env, r]
                imu[env, q] = efc_mu[env, r]
                iaref[env, q] = efc_aref[env, r]
                lo = wp.max(d.efc_span[env, r, 0], 0)
                hi = wp.min(d.efc_span[env, r, 1], nv)
                if isc == 0:
                    for c in range(nd):
                        iJ[env, q, c] = zero
                clo = nd
                chi = int(0)
                for kk in range(lo, hi):
                    if d.dof_island[env, kk] == k:
                        c = d.dof_idof[env, kk]
                        iJ[env, q, c] = efc_J[env, r, kk]
                        clo = wp.min(clo, c)
                        chi = wp.max(chi, c + 1)
                if chi < clo:
                    chi = clo
                ispan[env, q, 0] = clo
                ispan[env, q, 1] = chi
            iscale = mass_scale(env, nd, iM, tolerance)
            spans_fill(env, nr, nd, ispan, iM, LM, H, isc)
            cost = update_constraint(nd, env, iJ, itype, iD, iR, ifloss, imu, idim, nr, qfrc_smooth, iM, iacc_smooth,
                                     iacc, iaref, jar, iforce, istate, ifrc, grad, ma, 1, solver_stat, LM, H, isc)
            res = solve_iterate(env, nd, nr, solver, iterations, tolerance, ls_iterations, ls_tolerance,
                                stop_needs_gradient, iscale, isc, cost, iM, iacc_smooth, qfrc_smooth, iJ, itype, iaref,
                                iR, iD, ifloss, imu, idim, iacc, iforce, istate, ifrc, H, LM, jar, jv, grad, mgrad,
                                mgrad_old, search, ma, mv, solver_stat)
            # scatter
            for a in range(nd):
                da = dofs[env, d0 + a]
                qacc[env, da] = iacc[env, a]
                qfrc_constraint[env, da] = ifrc[env, a]
            for q in range(nr):
                r = rows[env, r0 + q]
                efc_force[env, r] = iforce[env, q]
                efc_state[env, r] = istate[env, q]
            it = int(res[3])
            d.island_niter[env, k] = it
            total = total + res[2]
            if it > best:
                best = it
                best_imp = res[0]
                best_g = res[1]
        # the env's figures: the iterations and stopping statistics of its island that iterated most,
        # the summed cost
        solver_niter[env] = best
        solver_stat[env, 0] = best_imp
        solver_stat[env, 1] = best_g
        solver_stat[env, 2] = total


@wp.func
def _find(uf: wp.array3d(dtype=wp.int32), env: int, t: int):
    """Representative of tree t in the union-find forest uf[env, 0] (with path compression)."""
    r = t
    while uf[env, 0, r] != r:
        r = uf[env, 0, r]
    c = t
    while uf[env, 0, c] != r:
        nxt = uf[env, 0, c]
        uf[env, 0, c] = r
        c = nxt
    return r


@wp.func
def _close_group(m: Any, d: Any, env: int, start: int, stop: int, gtree: int, tp: int, ob: int):
    """Rows [start, stop) of one constraint: those scanned before its first nonzero column get the
    group's tree; a constraint with no nonzero column takes its dof's tree (frictionloss, limit: as
    MuJoCo, which reads these from the dof) or, if it has none, returns 1 (the env becomes one island)."""
    t = gtree
    if t < 0:
        if tp == ConstraintType.FRICTION:
            t = d.dof_island[env, ob]
        elif tp == ConstraintType.LIMIT:
            t = d.dof_island[env, m.lim_dof[ob]]
    if t < 0:
        return 1
    for r in range(start, stop):
        if d.efc_island[env, r] < 0:
            d.efc_island[env, r] = t
    return 0


@wp.kernel
def label_islands(m: Any, d: Any):
    """Constraint islands of each env (MuJoCo's mj_island): the kinematic trees (a dof's tree: the root of
    its dof chain) joined by the rows of one constraint (consecutive rows of one type and object: a
    contact's rows, an equality's) through the dofs where a row's J is nonzero. Islands are numbered in
    the order of their first tree; dofs and rows keep ascending order inside an island. Writes nisland,
    dof_island (−1: in no island), efc_island, island_dofadr / island_dofs, dof_idof (index inside
    the island), island_efcadr / island_efcs. A constraint whose rows have no nonzero entry makes the
    env one island of all dofs and rows (solved as without islands)."""
    env = wp.tid()
    nv = m.nv
    nrow = d.nefc[env]
    efc_J = d.efc_J
    sc = d.island_scratch           # [0]: union-find parent, [1]: counts / cursor, [2]: island of a representative
    root = d.dof_island             # first the tree (root dof) of each dof, then its island
    zero = efc_J[env, 0, 0] * type(efc_J[env, 0, 0])(0.0)
    for j in range(nv):
        p = m.dof_parent[j]
        r = j
        if p >= 0:
            r = root[env, p]
        root[env, j] = r
        sc[env, 0, j] = j
        sc[env, 1, j] = 0
        sc[env, 2, j] = -1
    degenerate = int(0)
    gtree = int(-1)
    gstart = int(0)
    ptype = int(-1)
    pid = int(-1)
    for r in range(nrow):
        tp = d.efc_type[env, r]
        ob = d.efc_id[env, r]
        if tp != ptype or ob != pid:
            if r > 0:
                degenerate = degenerate + _close_group(m, d, env, gstart, r, gtree, ptype, pid)
            gtree = -1
            gstart = r
        ptype = tp
        pid = ob
        lo = wp.max(d.efc_span[env, r, 0], 0)
        hi = wp.min(d.efc_span[env, r, 1], nv)
        last = int(-1)
        for k in range(lo, hi):
            if efc_J[env, r, k] != zero:
                t = root[env, k]
                if t != last:
                    last = t
                    a = _find(sc, env, t)
                    if gtree < 0:
                        gtree = a
                    else:
                        b = _find(sc, env, gtree)
                        if a < b:
                            sc[env, 0, b] = a
                        elif b < a:
                            sc[env, 0, a] = b
        d.efc_island[env, r] = gtree
    if nrow > 0:
        degenerate = degenerate + _close_group(m, d, env, gstart, nrow, gtree, ptype, pid)
    nisl = int(0)
    if degenerate > 0:
        nisl = 1
        for j in range(nv):
            root[env, j] = 0
            d.dof_idof[env, j] = j
            d.island_dofs[env, j] = j
        for r in range(nrow):
            d.efc_island[env, r] = 0
            d.island_efcs[env, r] = r
        d.island_dofadr[env, 0] = 0
        d.island_dofadr[env, 1] = nv
        d.island_efcadr[env, 0] = 0
        d.island_efcadr[env, 1] = nrow
    else:
        # constrained trees: those some row touches (flagged at their representative)
        for r in range(nrow):
            a = _find(sc, env, d.efc_island[env, r])
            sc[env, 1, a] = 1
        # island numbers in the order of each island's first tree (MuJoCo's flood fill order)
        for j in range(nv):
            if root[env, j] == j:
                a = _find(sc, env, j)
                if sc[env, 1, a] == 1 and sc[env, 2, a] < 0:
                    sc[env, 2, a] = nisl
                    nisl = nisl + 1
        for r in range(nrow):
            d.efc_island[env, r] = sc[env, 2, _find(sc, env, d.efc_island[env, r])]
        for j in range(nv):
            root[env, j] = sc[env, 2, _find(sc, env, root[env, j])]
        # CSR lists: counts, offsets, then each island's dofs and rows in ascending order
        for k in range(nisl + 1):
            sc[env, 1, k] = 0
        for j in range(nv):
            k = root[env, j]
            if k >= 0:
                sc[env, 1, k] = sc[env, 1, k] + 1
        acc = int(0)
        for k in range(nisl):
            d.island_dofadr[env, k] = acc
            acc = acc + sc[env, 1, k]
            sc[env, 1, k] = 0
        d.island_dofadr[env, nisl] = acc
        for j in range(nv):
            k = root[env, j]
            d.dof_idof[env, j] = -1
            if k >= 0:
                c = sc[env, 1, k]
                d.island_dofs[env, d.island_dofadr[env, k] + c] = j
                d.dof_idof[env, j] = c
                sc[env, 1, k] = c + 1
        for k in range(nisl + 1):
            sc[env, 1, k] = 0
        for r in range(nrow):
            k = d.efc_island[env, r]
            sc[env, 1, k] = sc[env, 1, k] + 1
        acc = int(0)
        for k in range(nisl):
            d.island_efcadr[env, k] = acc
            acc = acc + sc[env, 1, k]
            sc[env, 1, k] = 0
        d.island_efcadr[env, nisl] = acc
        for r in range(nrow):
            k = d.efc_island[env, r]
            c = sc[env, 1, k]
            d.island_efcs[env, d.island_efcadr[env, k] + c] = r
            sc[env, 1, k] = c + 1
    d.nisland[env] = nisl
    for k in range(nisl, nv):
        d.island_niter[env, k] = 0


overload(label_islands)
overload(solve_convex, qacc_warm=lambda s: wp.array2d(dtype=s))
