"""Noslip stage kernel (docs/semantics.md §R8; MuJoCo's mj_solNoSlip semantics; docs/constraint.md "Noslip").

Reads ``m.opt`` (noslip_iterations, noslip_tolerance, noslip_scale); ``d``: qM, qacc_smooth, the rows
and efc_force of the main solve. Writes ``d``: efc_force, qacc_warmstart, qfrc_constraint,
efc_MiJ, solver_LM, noslip_niter, noslip_stat.
"""

from typing import Any

import warp as wp

from ..types import ConstraintType, overload
from .linalg import cholesky_factor
from .row_pool import pool_rows2, pool_rows3

wp.set_module_options({"enable_backward": False})


@wp.func
def ns_row_solve(nv: int, env: int, L: wp.array3d(dtype=Any), efc_J: wp.array3d(dtype=Any), r: int,
                 X: wp.array3d(dtype=Any)):
    """X[r] = M⁻¹ J_rᵀ with L the Cholesky factor of M."""
    for i in range(nv):
        s = efc_J[env, r, i]
        for k in range(i):
            s = s - L[env, i, k] * X[env, r, k]
        X[env, r, i] = s / L[env, i, i]
    for ii in range(nv):
        i = nv - 1 - ii
        s = X[env, r, i]
        for k in range(i + 1, nv):
            s = s - L[env, k, i] * X[env, r, k]
        X[env, r, i] = s / L[env, i, i]


@wp.func
def ns_dot(nv: int, env: int, efc_J: wp.array3d(dtype=Any), a: int, X: wp.array3d(dtype=Any), b: int):
    """J_a · M⁻¹ J_bᵀ (an entry of A = J M⁻¹ Jᵀ)."""
    s = efc_J[env, a, 0] * X[env, b, 0]
    for k in range(1, nv):
        s = s + efc_J[env, a, k] * X[env, b, k]
    return s


@wp.func
def ns_res(nv: int, env: int, efc_J: wp.array3d(dtype=Any), a: int, v: wp.array2d(dtype=Any),
           efc_aref: wp.array2d(dtype=Any)):
    """Unregularized residual of row a: J_a·qacc(f) − aref_a with qacc(f) = a₀ + M⁻¹Jᵀf."""
    s = efc_J[env, a, 0] * v[env, 0]
    for k in range(1, nv):
        s = s + efc_J[env, a, k] * v[env, k]
    return s - efc_aref[env, a]


@wp.kernel
def noslip(m: Any, d: Any):
    """Noslip post-pass after the main solve (MuJoCo's mj_solNoSlip semantics): projected
    Gauss–Seidel sweeps over the DOF frictionloss rows (clamped to ±frictionloss) and the pyramidal
    contact edge pairs (the pair's sum — the normal force — held, its difference minimized over
    [−sum, sum]) on the UNREGULARIZED problem A = J M⁻¹ Jᵀ, residual J·qacc(f) − aref. A pair update
    that would raise the cost by more than 1e-10 is undone. The sweep improvement (the first sweep
    also counts ½Σ R f², the removed regularization) times scale (fixed_scale, or 1/trace M when
    0) below ``tolerance`` stops; ``iterations`` caps. Then qfrc_constraint = Jᵀf and
    qacc = qacc_smooth + M⁻¹ qfrc_constraint. Matrix-free: M⁻¹J_rᵀ per row from one Cholesky of M."""
    env = wp.tid()
    # the arrays under their short names (Model: m, Data: d)
    nv = m.nv
    iterations = m.opt.noslip_iterations
    tolerance = m.opt.noslip_tolerance
    fixed_scale = m.opt.noslip_scale
    M = d.qM
    qacc_smooth = d.qacc_smooth
    n_efc = d.nefc
    # the env's rows at its address in the row pool (kernels/row_pool.py; efc_MiJ is the solve's scratch, per env)
    off = d.efc_off[env]
    efc_J = pool_rows3(d.efc_J, off)
    efc_type = pool_rows2(d.efc_type, off)
    efc_aref = pool_rows2(d.efc_aref, off)
    efc_R = pool_rows2(d.efc_R, off)
    efc_floss = pool_rows2(d.efc_frictionloss, off)
    LM = d.solver_LM
    efc_MiJ = d.efc_MiJ
    qacc = d.qacc_warmstart
    efc_force = pool_rows2(d.efc_force, off)
    qfrc_constraint = d.qfrc_constraint
    noslip_niter = d.noslip_niter
    noslip_stat = d.noslip_stat
    nrow = n_efc[env]
    zero = tolerance * type(tolerance)(0.0)
    one = zero + type(tolerance)(1.0)
    half = type(tolerance)(0.5)
    for j in range(nv):
        for k in range(nv):
            LM[env, j, k] = M[env, j, k]
    cholesky_factor(nv, env, LM)
    scale = fixed_scale
    if scale <= zero:
        tr = zero
        for j in range(nv):
            tr = tr + M[env, j, j]
        scale = one / wp.max(tr, type(tolerance)(1.0e-15))
    # M⁻¹Jᵀ of every row; qacc(f) = qacc_smooth + Σ_r M⁻¹J_rᵀ f_r
    for j in range(nv):
        qacc[env, j] = qacc_smooth[env, j]
    for r in range(nrow):
        ns_row_solve(nv, env, LM, efc_J, r, efc_MiJ)
        fr = efc_force[env, r]
        for j in range(nv):
            qacc[env, j] = qacc[env, j] + efc_MiJ[env, r, j] * fr
    niter = int(0)
    improvement = zero
    done = int(0)
    for it in range(iterations):
        if done == 1:
            continue
        improvement = zero
        if it == 0:
            for r in range(nrow):
                improvement = improvement + half * efc_force[env, r] * efc_force[env, r] * efc_R[env, r]
        i = int(0)
        while i < nrow:
            tp = efc_type[env, i]
            if tp == ConstraintType.FRICTION:
                res = ns_res(nv, env, efc_J, i, qacc, efc_aref)
                a = wp.max(type(tolerance)(1.0e-15), ns_dot(nv, env, efc_J, i, efc_MiJ, i))
                old = efc_force[env, i]
                f = old - res / a
                fl = efc_floss[env, i]
                if f < -fl:
                    f = -fl
                elif f > fl:
                    f = fl
                dl = f - old
                improvement = improvement - (half * dl * dl * a + dl * res)
                efc_force[env, i] = f
                for j in range(nv):
                    qacc[env, j] = qacc[env, j] + efc_MiJ[env, i, j] * dl
                i = i + 1
            elif tp == ConstraintType.CONTACT_PYRAMIDAL:
                k = i + 1
                r0 = ns_res(nv, env, efc_J, i, qacc, efc_aref)
                r1 = ns_res(nv, env, efc_J, k, qacc, efc_aref)
                a00 = wp.max(type(tolerance)(1.0e-10), ns_dot(nv, env, efc_J, i, efc_MiJ, i))
                a11 = wp.max(type(tolerance)(1.0e-10), ns_dot(nv, env, efc_J, k, efc_MiJ, k))
                a01 = ns_dot(nv, env, efc_J, i, efc_MiJ, k)
                a10 = ns_dot(nv, env, efc_J, k, efc_MiJ, i)
                o0 = efc_force[env, i]
                o1 = efc_force[env, k]
                b0 = r0 - (a00 * o0 + a01 * o1)
                b1 = r1 - (a10 * o0 + a11 * o1)
                mid = half * (o0 + o1)
                k1 = a00 + a11 - a01 - a10
                k0 = mid * (a00 - a11) + b0 - b1
                f0 = mid
                f1 = mid
                if k1 >= type(tolerance)(1.0e-15):
                    y = -k0 / k1
                    if y < -mid:
                        f0 = zero
                        f1 = type(tolerance)(2.0) * mid
                    elif y > mid:
                        f0 = type(tolerance)(2.0) * mid
                        f1 = zero
                    else:
                        f0 = mid + y
                        f1 = mid - y
                d0 = f0 - o0
                d1 = f1 - o1
                ch = half * (d0 * (a00 * d0 + a01 * d1) + d1 * (a10 * d0 + a11 * d1)) + d0 * r0 + d1 * r1
                if ch > type(tolerance)(1.0e-10):
                    ch = zero
                else:
                    efc_force[env, i] = f0
                    efc_force[env, k] = f1
                    for j in range(nv):
                        qacc[env, j] = qacc[env, j] + efc_MiJ[env, i, j] * d0 + efc_MiJ[env, k, j] * d1
                improvement = improvement - ch
                i = i + 2
            else:
                i = i + 1
        improvement = improvement * scale
        niter = niter + 1
        if improvement < tolerance:
            done = 1
    # map to joint space (exact, as after a dual solve)
    for j in range(nv):
        s = zero
        for r in range(nrow):
            s = s + efc_J[env, r, j] * efc_force[env, r]
        qfrc_constraint[env, j] = s
    if nrow > 0:
        for j in range(nv):
            s = zero
            for r in range(nrow):
                s = s + efc_MiJ[env, r, j] * efc_force[env, r]
            qacc[env, j] = qacc_smooth[env, j] + s
    noslip_niter[env] = niter
    noslip_stat[env] = improvement


overload(noslip)
