"""Signorini solve stage kernel (docs/semantics.md §R8, docs/constraint.md "Signorini").

Elliptic contact rows, but each contact's friction is not the coupled cone program of the convex
path. The normal row is a one-sided quadratic (force −D_n·x_n ≥ 0); a normal load ℓ is latched per
Newton iteration; each friction block (sliding rows 1-2, torsional row 3, rolling rows 4-5) is a
quadratic "stick" segment saturated at the radius μ_block·ℓ: f = −D·e when D‖e‖ ≤ μℓ, else
f = −μℓ·e/‖e‖ (cost r‖e‖ − r²/2D: convex, C¹). ℓ stays fixed during the line search (the shared
exact line search, kernels/line_search.py) and is re-latched after the update, with a half step when
a contact's load oscillates without contracting. Stopping requires both the improvement and the
gradient test.

Reads ``m.opt``; ``d``: qM, qacc_smooth, the rows and the warm start ``qacc_warm``. Writes ``d``:
qacc_warmstart (the solution), efc_force, efc_state, efc_load, efc_dload, qfrc_constraint,
solver_niter, solver_stat, solver_nhalf and the solver_* scratch.
"""

from typing import Any

import warp as wp

from ..types import ConstraintType, EfcState, overload
from .linalg import cholesky_factor, cholesky_solve
from .line_search import exact_line_search, sig_block_size
from .row_pool import pool_rows2, pool_rows3

wp.set_module_options({"enable_backward": False})


@wp.func
def sig_update(
    nv: int,
    env: int,
    efc_J: wp.array3d(dtype=Any),
    efc_type: wp.array2d(dtype=wp.int32),
    efc_D: wp.array2d(dtype=Any),
    efc_R: wp.array2d(dtype=Any),
    efc_floss: wp.array2d(dtype=Any),
    efc_mu: wp.array2d(dtype=Any),
    efc_dim: wp.array2d(dtype=wp.int32),
    efc_load: wp.array2d(dtype=Any),
    nrow: int,
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
):
    """Forces, states (1 quadratic / stick, 2 saturated friction block, 0 inactive), qfrc = Jᵀf,
    gradient M(a − a₀) − Jᵀf and the total cost of the signorini problem at the latched loads.
    full = 1 recomputes jar = J·qacc − aref and ma = M(qacc − qacc_smooth); 0 uses the caller's."""
    zero = qacc[env, 0] * type(qacc[env, 0])(0.0)
    half = type(zero)(0.5)
    if full == 1:
        for i in range(nrow):
            s = zero
            for j in range(nv):
                s = s + efc_J[env, i, j] * qacc[env, j]
            jar[env, i] = s - efc_aref[env, i]
    cost = zero
    i = int(0)
    while i < nrow:
        tp = efc_type[env, i]
        x = jar[env, i]
        d = efc_D[env, i]
        f = zero
        st = EfcState.INACTIVE
        if tp == ConstraintType.CONTACT_ELLIPTIC:
            dim = efc_dim[env, i]
            if x < zero:
                f = -d * x
                st = EfcState.QUADRATIC
                cost = cost + half * d * x * x
            efc_force[env, i] = f
            efc_state[env, i] = st
            b = int(1)
            while b < dim:
                sz = sig_block_size(dim, b)
                ee = zero
                for k in range(sz):
                    ee = ee + jar[env, i + b + k] * jar[env, i + b + k]
                db = efc_D[env, i + b]
                r = efc_mu[env, i + b] * efc_load[env, i]
                en = wp.sqrt(ee)
                if db * en <= r:
                    cost = cost + half * db * ee
                    for k in range(sz):
                        efc_force[env, i + b + k] = -db * jar[env, i + b + k]
                        efc_state[env, i + b + k] = EfcState.QUADRATIC
                else:
                    cost = cost + r * en - half * r * r / db
                    for k in range(sz):
                        efc_force[env, i + b + k] = -r * jar[env, i + b + k] / en
                        efc_state[env, i + b + k] = EfcState.CONE
                b = b + sz
            i = i + dim
        else:
            if tp == ConstraintType.EQUALITY:
                f = -d * x
                st = EfcState.QUADRATIC
                cost = cost + half * d * x * x
            elif tp == ConstraintType.FRICTION:
                fl = efc_floss[env, i]
                rf = efc_R[env, i] * fl
                if x <= -rf:
                    f = fl
                    cost = cost - fl * x - half * rf * fl
                elif x >= rf:
                    f = -fl
                    cost = cost + fl * x - half * rf * fl
                else:
                    f = -d * x
                    st = EfcState.QUADRATIC
                    cost = cost + half * d * x * x
            elif x < zero:
                f = -d * x
                st = EfcState.QUADRATIC
                cost = cost + half * d * x * x
            efc_force[env, i] = f
            efc_state[env, i] = st
            i = i + 1
    for j in range(nv):
        s = zero
        for r2 in range(nrow):
            s = s + efc_J[env, r2, j] * efc_force[env, r2]
        qfrc_constraint[env, j] = s
        m = ma[env, j]
        if full == 1:
            m = zero
            for k in range(nv):
                m = m + M[env, j, k] * (qacc[env, k] - qacc_smooth[env, k])
            ma[env, j] = m
        grad[env, j] = m - s
    for j in range(nv):
        cost = cost + half * (qacc[env, j] - qacc_smooth[env, j]) * ma[env, j]
    return cost


@wp.func
def sig_hess_add(nv: int, env: int, efc_J: wp.array3d(dtype=Any), H: wp.array3d(dtype=Any), ra: int, rb: int,
                 w: Any):
    """H += w·J_raᵀ J_rb."""
    zero = w * type(w)(0.0)
    for j in range(nv):
        ja = efc_J[env, ra, j] * w
        if ja != zero:
            for k in range(nv):
                H[env, j, k] = H[env, j, k] + ja * efc_J[env, rb, k]


@wp.func
def sig_relatch(env: int, nrow: int, efc_type: wp.array2d(dtype=wp.int32), efc_D: wp.array2d(dtype=Any),
                efc_dim: wp.array2d(dtype=wp.int32), jar: wp.array2d(dtype=Any), efc_load: wp.array2d(dtype=Any),
                efc_dload: wp.array2d(dtype=Any)):
    """Re-latch each contact's normal load to its developed normal force max(0, −D_n·x_n); a
    change that reverses the previous one without shrinking it (non-contracting oscillation) is
    halved. Returns (largest |change|, number of halved changes)."""
    zero = jar[env, 0] * type(jar[env, 0])(0.0)
    half = type(zero)(0.5)
    big = zero
    nh = zero
    i = int(0)
    while i < nrow:
        if efc_type[env, i] == ConstraintType.CONTACT_ELLIPTIC:
            c = wp.max(zero, -efc_D[env, i] * jar[env, i])
            dl = c - efc_load[env, i]
            dp = efc_dload[env, i]
            if dl * dp < zero and wp.abs(dl) >= wp.abs(dp):
                dl = half * dl
                nh = nh + type(zero)(1.0)
            efc_load[env, i] = efc_load[env, i] + dl
            efc_dload[env, i] = dl
            big = wp.max(big, wp.abs(dl))
            i = i + efc_dim[env, i]
        else:
            i = i + 1
    return wp.vector(big, nh)


@wp.kernel
def solve_signorini(m: Any, d: Any, qacc_warm: wp.array2d(dtype=Any), pool: int):
    """Newton on the signorini problem (elliptic rows as built by make_rows (kernels/constraint_rows.py)): per iteration
    the Hessian M + Σ D JᵀJ (active quadratic rows, normal rows in contact, sticking blocks) +
    Σ (r/‖e‖) Jᵀ(I − êêᵀ)J (saturated blocks), Cholesky, exact line search at fixed loads, update,
    re-latch. Stops when scale·improvement < tolerance AND scale·‖g‖ < tolerance (scale = 1/trace M),
    or when the line search cannot move and the loads did not change; ``iterations`` is a cap
    (in float32 the gradient test can sit on rounding for stiff stacks: the cap then ends the solve).
    solver_stat = (improvement, gradient, cost) as the convex kernel; sig_nhalf counts the halved
    load changes of the solve. The rows at the env's address in the row pool (kernels/row_pool.py); ``pool`` = 1:
    the rows past the count are the next env's, so they are not padded (0: zero force, inactive, no load)."""
    env = wp.tid()
    # the arrays under their short names (Model: m, Data: d)
    nv = m.nv
    iterations = m.opt.iterations
    tolerance = m.opt.tolerance
    ls_iterations = m.opt.ls_iterations
    ls_tolerance = m.opt.ls_tolerance
    M = d.qM
    qacc_smooth = d.qacc_smooth
    n_efc = d.nefc
    off = d.efc_off[env]
    efc_J = pool_rows3(d.efc_J, off)
    efc_type = pool_rows2(d.efc_type, off)
    efc_aref = pool_rows2(d.efc_aref, off)
    efc_R = pool_rows2(d.efc_R, off)
    efc_D = pool_rows2(d.efc_D, off)
    efc_floss = pool_rows2(d.efc_frictionloss, off)
    efc_mu = pool_rows2(d.efc_mu, off)
    efc_dim = pool_rows2(d.efc_dim, off)
    H = d.solver_H
    jar = d.solver_jar
    jv = d.solver_jv
    grad = d.solver_grad
    search = d.solver_search
    ma = d.solver_ma
    mv = d.solver_mv
    efc_load = pool_rows2(d.efc_load, off)
    efc_dload = pool_rows2(d.efc_dload, off)
    qacc = d.qacc_warmstart
    efc_force = pool_rows2(d.efc_force, off)
    efc_state = pool_rows2(d.efc_state, off)
    qfrc_constraint = d.qfrc_constraint
    solver_niter = d.solver_niter
    solver_stat = d.solver_stat
    sig_nhalf = d.solver_nhalf
    nrow = n_efc[env]
    zero = tolerance * type(tolerance)(0.0)
    one = zero + type(tolerance)(1.0)
    trace = zero
    for j in range(nv):
        trace = trace + M[env, j, j]
    scale = one / wp.max(trace, type(tolerance)(1.0e-15))
    pad_hi = efc_force.shape[1]
    if pool == 1:
        pad_hi = nrow
    for i in range(nrow, pad_hi):
        efc_force[env, i] = zero
        efc_state[env, i] = EfcState.INACTIVE
        efc_load[env, i] = zero
        efc_dload[env, i] = zero
    for j in range(nv):
        search[env, j] = qacc_warm[env, j]
        qacc[env, j] = search[env, j]
        if nrow == 0:
            qacc[env, j] = qacc_smooth[env, j]
    for i in range(nrow):
        s = zero
        for j in range(nv):
            s = s + efc_J[env, i, j] * qacc[env, j]
        jar[env, i] = s - efc_aref[env, i]
        efc_load[env, i] = zero
        efc_dload[env, i] = zero
    sig_relatch(env, nrow, efc_type, efc_D, efc_dim, jar, efc_load, efc_dload)
    for i in range(nrow):
        efc_dload[env, i] = zero
    cost = sig_update(nv, env, efc_J, efc_type, efc_D, efc_R, efc_floss, efc_mu, efc_dim, efc_load, nrow, M,
                      qacc_smooth, qacc, efc_aref, jar, efc_force, efc_state, qfrc_constraint, grad, ma, 1)
    niter = int(0)
    nhalf = int(0)
    improvement = zero
    gnorm = zero
    for j in range(nv):
        gnorm = gnorm + grad[env, j] * grad[env, j]
    gnorm = scale * wp.sqrt(gnorm)
    done = int(0)
    if nrow == 0 or gnorm < tolerance:
        done = 1
    for _it in range(iterations):
        if done == 1:
            continue
        # ---- Newton direction
        for j in range(nv):
            for k in range(nv):
                H[env, j, k] = M[env, j, k]
        i = int(0)
        while i < nrow:
            if efc_type[env, i] == ConstraintType.CONTACT_ELLIPTIC:
                dim = efc_dim[env, i]
                if efc_state[env, i] == EfcState.QUADRATIC:
                    sig_hess_add(nv, env, efc_J, H, i, i, efc_D[env, i])
                b = int(1)
                while b < dim:
                    sz = sig_block_size(dim, b)
                    if efc_state[env, i + b] == EfcState.QUADRATIC:
                        for k in range(sz):
                            sig_hess_add(nv, env, efc_J, H, i + b + k, i + b + k, efc_D[env, i + b])
                    else:
                        ee = zero
                        for k in range(sz):
                            ee = ee + jar[env, i + b + k] * jar[env, i + b + k]
                        en = wp.sqrt(ee)
                        w = efc_mu[env, i + b] * efc_load[env, i] / en
                        for ka in range(sz):
                            for kb in range(sz):
                                idn = zero
                                if ka == kb:
                                    idn = one
                                hab = w * (idn - jar[env, i + b + ka] * jar[env, i + b + kb] / ee)
                                sig_hess_add(nv, env, efc_J, H, i + b + ka, i + b + kb, hab)
                    b = b + sz
                i = i + dim
            else:
                if efc_state[env, i] == EfcState.QUADRATIC:
                    sig_hess_add(nv, env, efc_J, H, i, i, efc_D[env, i])
                i = i + 1
        cholesky_factor(nv, env, H)
        cholesky_solve(nv, env, H, grad, search)
        for j in range(nv):
            search[env, j] = -search[env, j]
        # ---- exact line search at the latched loads (convex piecewise 1-D cost)
        for j in range(nv):
            s = zero
            for k in range(nv):
                s = s + M[env, j, k] * search[env, k]
            mv[env, j] = s
        pmp = zero
        pg0 = zero
        for j in range(nv):
            pmp = pmp + search[env, j] * mv[env, j]
            pg0 = pg0 + search[env, j] * ma[env, j]
        for r in range(nrow):
            s = zero
            for k in range(nv):
                s = s + efc_J[env, r, k] * search[env, k]
            jv[env, r] = s
        alpha = exact_line_search(env, nrow, 1, ls_iterations, ls_tolerance, pg0, pmp, efc_type, efc_dim, efc_D, efc_R,
                                  efc_floss, efc_mu, efc_load, jar, jv, solver_stat)
        for j in range(nv):
            qacc[env, j] = qacc[env, j] + alpha * search[env, j]
            ma[env, j] = ma[env, j] + alpha * mv[env, j]
        for r in range(nrow):
            jar[env, r] = jar[env, r] + alpha * jv[env, r]
        old = cost
        # full recompute of jar and ma (not the incremental update): the loads are re-latched from jar
        cost = sig_update(nv, env, efc_J, efc_type, efc_D, efc_R, efc_floss, efc_mu, efc_dim, efc_load, nrow, M,
                          qacc_smooth, qacc, efc_aref, jar, efc_force, efc_state, qfrc_constraint, grad, ma, 1)
        improvement = scale * (old - cost)
        # ---- re-latch the loads; forces, gradient and cost at the new loads
        rl = sig_relatch(env, nrow, efc_type, efc_D, efc_dim, jar, efc_load, efc_dload)
        dmax = rl[0]
        nhalf = nhalf + int(rl[1])
        if dmax > zero:
            cost = sig_update(nv, env, efc_J, efc_type, efc_D, efc_R, efc_floss, efc_mu, efc_dim, efc_load, nrow, M,
                              qacc_smooth, qacc, efc_aref, jar, efc_force, efc_state, qfrc_constraint, grad, ma, 0)
        niter = niter + 1
        gnorm = zero
        for j in range(nv):
            gnorm = gnorm + grad[env, j] * grad[env, j]
        gnorm = scale * wp.sqrt(gnorm)
        if (improvement < tolerance and gnorm < tolerance) or (alpha == zero and dmax == zero):
            done = 1
    solver_niter[env] = niter
    solver_stat[env, 0] = improvement
    solver_stat[env, 1] = gnorm
    solver_stat[env, 2] = cost
    sig_nhalf[env] = nhalf


overload(solve_signorini, qacc_warm=lambda s: wp.array2d(dtype=s))
