"""SAP coupler kernels (docs/sap.md; A. Castro, F. Permenter, X. Han, "An Unconstrained Convex
Formulation of Compliant Contact", IEEE T-RO 2022). Everything is float64 inside; inputs of the rigid
solver are read in its precision and the outputs written back in it.

``contact_params`` (env × contact slot): per contact the pair stiffness k (series combination of the
geoms' point stiffness), the dissipation time constant τ_d (sum of the geoms'), and the friction
coefficient μ (Drake's 2μ_Aμ_B/(μ_A+μ_B), or the rigid solver's mixed value; 0 for condim 1).

``sap_solve`` (one thread per env): the whole SAP solve of an env for one substep —

  v* = qvel + h·qacc_free,  A = M + h·D  (Cholesky once: the Delassus estimates w_i = ‖W_ii‖_F/3,
  W_ii = J_i A⁻¹ J_iᵀ, give R_n = max(β²/(4π²)·w_i, 1/(h·k·(h+τ_d))), R_t = σ·w_i,
  v̂_n = −φ₀/(h + τ_d));
  ℓ(v) = ½‖v − v*‖²_A + Σ_i ½ γ_iᵀ R_i γ_i,  γ_i = P_i(y_i), y_i = −R_i⁻¹(J_i v − v̂_i)
  (P_i: the projection onto the friction cone in the R_i-norm, the paper's analytical inverse
  dynamics: stiction γ = y; separation γ = 0; sliding γ_n = (y_n + μ̂‖y_t‖)/(1 + μμ̂), μ̂ = μR_t/R_n,
  γ_t = μγ_n·y_t/‖y_t‖);
  ∇ℓ = A(v − v*) − Jᵀγ,  H = A + Σ J_iᵀ G_i J_i,  G_i = −∂γ_i/∂v_c,i;
  Newton: dv = −H⁻¹∇ℓ (Cholesky over the envelope of H: dense within each row's profile), α from the
  line search, v ← v + α·dv, until
  ‖D∇ℓ‖ ≤ atol + rtol·max(‖D·A·v‖, ‖D·Jᵀγ‖) with D = diag(A)^(-1/2), or max_iterations.

The Jacobian rows are read sparsely: the nonzero columns of each contact's three rows are listed
once per solve (a contact touches the dofs of its two bodies' chains only).

The rigid solver's other constraint rows (rows 0 .. b−1 of the Jacobian, b = ``row0``; contact c
then occupies rows b + 3c .. b + 3c + 2) join the same problem as scalar constraints r, each with
v_c = J_r·v, a regularisation R_r, a bias v̂_r and an impulse set [lo_r, hi_r]; their impulse is the
projection γ_r = clamp(y_r, lo_r, hi_r), y_r = −(v_c − v̂_r)/R_r, and their cost
ℓ_r = R_r·γ_r·(y_r − γ_r/2) (= ½R_rγ_r² where γ_r = y_r or 0; linear in v_c on a saturated box side):
  joint limit (Drake's SapLimitConstraint): [0, ∞), v̂ = −g/(h + τ), g ≥ 0 inside the range;
  equality (SapHolonomicConstraint, connect/weld/joint rows): (−∞, ∞), v̂ = −g/(h + τ);
  R = max(β_c²/(4π²)·w_r, 1/(h·k·(h + τ))), w_r = J_r A⁻¹ J_rᵀ (exact, from the Cholesky factor);
  DOF frictionloss F: [−h·F, h·F], v̂ = 0, R = σ_f·w_r (regularised Coulomb friction of the dof).
"""

from typing import Any

import warp as wp

wp.set_module_options({"enable_backward": False})

F64 = wp.float64
TWO_PI_SQ = wp.constant(wp.float64(39.47841760435743))     # (2π)²
LS_EXACT = wp.constant(0)
LS_BACKTRACKING = wp.constant(1)
ROW_FRICTION = wp.constant(1)       # RigidDynamics.row_type codes (core/views.py): 0 equality, 1 frictionloss, 2 limit
ROW_LIMIT = wp.constant(2)


@wp.kernel
def contact_params(
    # model in
    mode: int,
    geom_k_in: wp.array(dtype=wp.float64),
    geom_tau_in: wp.array(dtype=wp.float64),
    # data in
    ncon_in: wp.array(dtype=wp.int32),
    con_geom_in: wp.array3d(dtype=wp.int32),
    con_dim_in: wp.array2d(dtype=wp.int32),
    con_friction_in: wp.array3d(dtype=Any),
    geom_friction_in: wp.array3d(dtype=Any),
    geom_friction_ratio_in: wp.array2d(dtype=Any),
    # data out
    k_out: wp.array2d(dtype=wp.float64),
    tau_out: wp.array2d(dtype=wp.float64),
    mu_out: wp.array2d(dtype=wp.float64),
):
    env, c = wp.tid()
    zero = wp.float64(0.0)
    if c >= ncon_in[env]:
        k_out[env, c] = zero
        tau_out[env, c] = zero
        mu_out[env, c] = zero
        return
    ga = con_geom_in[env, c, 0]
    gb = con_geom_in[env, c, 1]
    ka = geom_k_in[ga]
    kb = geom_k_in[gb]
    k = ka * kb / (ka + kb)
    if wp.isinf(ka):
        k = kb
    if wp.isinf(kb):
        k = ka
    k_out[env, c] = k
    tau_out[env, c] = geom_tau_in[ga] + geom_tau_in[gb]
    mu = wp.float64(con_friction_in[env, c, 0])
    if mode == 0:
        ma = wp.float64(geom_friction_in[env, ga, 0]) * wp.float64(geom_friction_ratio_in[env, ga])
        mb = wp.float64(geom_friction_in[env, gb, 0]) * wp.float64(geom_friction_ratio_in[env, gb])
        mu = zero
        if ma + mb > zero:
            mu = wp.float64(2.0) * ma * mb / (ma + mb)
    if con_dim_in[env, c] == 1:
        mu = zero
    mu_out[env, c] = mu


# ---------------------------------------------------------------- per-contact inverse dynamics


@wp.func
def project(vc: wp.vec3d, vhat: wp.float64, rn: wp.float64, rt: wp.float64, mu: wp.float64):
    """γ = P(y), y = −R⁻¹(v_c − v̂) (components: normal, tangent 1, tangent 2)."""
    zero = wp.float64(0.0)
    yn = -(vc[0] - vhat) / rn
    y1 = -vc[1] / rt
    y2 = -vc[2] / rt
    yr = wp.sqrt(y1 * y1 + y2 * y2)
    muh = mu * rt / rn
    if muh * yr <= -yn:
        return wp.vec3d(zero, zero, zero)
    if yr <= mu * yn:
        return wp.vec3d(yn, y1, y2)
    gn = (yn + muh * yr) / (wp.float64(1.0) + mu * muh)
    return wp.vec3d(gn, mu * gn * y1 / yr, mu * gn * y2 / yr)


@wp.func
def project_hessian(vc: wp.vec3d, vhat: wp.float64, rn: wp.float64, rt: wp.float64, mu: wp.float64):
    """G = −∂γ/∂v_c = (∂γ/∂y)·R⁻¹ (symmetric positive semi-definite)."""
    zero = wp.float64(0.0)
    one = wp.float64(1.0)
    yn = -(vc[0] - vhat) / rn
    y1 = -vc[1] / rt
    y2 = -vc[2] / rt
    yr = wp.sqrt(y1 * y1 + y2 * y2)
    muh = mu * rt / rn
    G = wp.mat33d(zero, zero, zero, zero, zero, zero, zero, zero, zero)
    if muh * yr <= -yn:
        return G
    if yr <= mu * yn:
        G[0, 0] = one / rn
        G[1, 1] = one / rt
        G[2, 2] = one / rt
        return G
    c = one / (one + mu * muh)
    gn = (yn + muh * yr) * c
    t1 = y1 / yr
    t2 = y2 / yr
    s = mu * gn / yr
    # ∂γ/∂y, then scale its columns by R⁻¹
    G[0, 0] = c / rn
    G[0, 1] = muh * c * t1 / rt
    G[0, 2] = muh * c * t2 / rt
    G[1, 0] = mu * c * t1 / rn
    G[2, 0] = mu * c * t2 / rn
    G[1, 1] = (mu * muh * c * t1 * t1 + s * (one - t1 * t1)) / rt
    G[1, 2] = (mu * muh * c * t1 * t2 - s * t1 * t2) / rt
    G[2, 1] = G[1, 2]
    G[2, 2] = (mu * muh * c * t2 * t2 + s * (one - t2 * t2)) / rt
    return G


@wp.func
def contact_cost(g: wp.vec3d, rn: wp.float64, rt: wp.float64):
    return wp.float64(0.5) * (rn * g[0] * g[0] + rt * (g[1] * g[1] + g[2] * g[2]))


# ---------------------------------------------------------------- envelope (skyline) Cholesky
# A symmetric matrix is stored by its lower triangle; row i's nonzeros left of the diagonal lie in
# columns [lo[i], i]. The Cholesky factor L keeps that envelope (fill-in stays inside it), so the
# factorisation and the solves cost Σ_i (i − lo[i])² instead of n³/6. M + h·D is block diagonal over
# the kinematic trees; a contact between two trees widens the envelope of the later tree's rows.


@wp.func
def cholesky_env(M: wp.array3d(dtype=wp.float64), lo: wp.array2d(dtype=wp.int32), e: int, n: int):
    """M[e] ← L over the envelope (lower triangle). Returns 0 if not positive definite."""
    zero = wp.float64(0.0)
    for i in range(n):
        li = lo[e, i]
        for j in range(li, i + 1):
            t = M[e, i, j]
            for k in range(wp.max(li, lo[e, j]), j):
                t = t - M[e, i, k] * M[e, j, k]
            if j == i:
                if t <= zero:
                    return 0
                M[e, i, i] = wp.sqrt(t)
            else:
                M[e, i, j] = t / M[e, j, j]
    return 1


@wp.func
def forward_env(L: wp.array3d(dtype=wp.float64), lo: wp.array2d(dtype=wp.int32), e: int, n: int, start: int,
                x: wp.array2d(dtype=wp.float64)):
    """x ← L⁻¹x, for x zero before ``start``."""
    for i in range(start, n):
        t = x[e, i]
        for k in range(wp.max(lo[e, i], start), i):
            t = t - L[e, i, k] * x[e, k]
        x[e, i] = t / L[e, i, i]


@wp.func
def back_env(L: wp.array3d(dtype=wp.float64), lo: wp.array2d(dtype=wp.int32), e: int, n: int,
             x: wp.array2d(dtype=wp.float64)):
    """x ← L⁻ᵀx (column-oriented over the envelope)."""
    for ii in range(n):
        i = n - 1 - ii
        xi = x[e, i] / L[e, i, i]
        x[e, i] = xi
        for k in range(lo[e, i], i):
            x[e, k] = x[e, k] - L[e, i, k] * xi


@wp.func
def mat_vec(A: wp.array3d(dtype=Any), lo: wp.array2d(dtype=wp.int32), hi: wp.array2d(dtype=wp.int32), e: int, i: int,
            x: wp.array2d(dtype=wp.float64)):
    """(A·x)_i over row i's nonzero columns [lo[i], hi[i]]."""
    t = wp.float64(0.0)
    for j in range(lo[e, i], hi[e, i] + 1):
        t = t + wp.float64(A[e, i, j]) * x[e, j]
    return t


# ---------------------------------------------------------------- helpers of the solve


@wp.func
def jrow3(jac: wp.array3d(dtype=Any), e: int, b0: int, c: int, j: int):
    """Column j of contact c's three rows (rows b0 + 3c, +1, +2)."""
    r = b0 + 3 * c
    return wp.vec3d(wp.float64(jac[e, r, j]), wp.float64(jac[e, r + 1, j]), wp.float64(jac[e, r + 2, j]))


@wp.func
def contact_velocity(jac: wp.array3d(dtype=Any), cols: wp.array3d(dtype=wp.int32), ncols: wp.array2d(dtype=wp.int32),
                     e: int, b0: int, c: int, x: wp.array2d(dtype=wp.float64)):
    """J_c·x over the contact's nonzero columns."""
    out = wp.vec3d(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0))
    for a in range(ncols[e, c]):
        j = cols[e, c, a]
        out = out + jrow3(jac, e, b0, c, j) * x[e, j]
    return out


# ---------------------------------------------------------------- scalar constraint rows (limits, equalities,
# frictionloss): γ = clamp(y, lo, hi), y = −(v_c − v̂)/R


@wp.func
def row_project(vc: wp.float64, vhat: wp.float64, R: wp.float64, lo: wp.float64, hi: wp.float64):
    return wp.min(hi, wp.max(lo, -(vc - vhat) / R))


@wp.func
def row_hessian(vc: wp.float64, vhat: wp.float64, R: wp.float64, lo: wp.float64, hi: wp.float64):
    """G = −∂γ/∂v_c: 1/R inside the impulse set, 0 on its boundary."""
    y = -(vc - vhat) / R
    if y > lo and y < hi:
        return wp.float64(1.0) / R
    return wp.float64(0.0)


@wp.func
def row_cost(vc: wp.float64, vhat: wp.float64, R: wp.float64, lo: wp.float64, hi: wp.float64):
    """ℓ_r = max over γ in [lo, hi] of (γ·R·y − ½Rγ²) = R·γ·(y − γ/2) at γ = clamp(y, lo, hi)."""
    y = -(vc - vhat) / R
    g = wp.min(hi, wp.max(lo, y))
    return R * g * (y - wp.float64(0.5) * g)


@wp.func
def row_velocity(jac: wp.array3d(dtype=Any), e: int, r: int, first: int, last: int, x: wp.array2d(dtype=wp.float64)):
    """J_r·x over the row's columns [first, last]."""
    t = wp.float64(0.0)
    for j in range(first, last + 1):
        t = t + wp.float64(jac[e, r, j]) * x[e, j]
    return t


@wp.func
def rows_slope(alpha: wp.float64, nr: int, e: int, rvc: wp.array2d(dtype=wp.float64),
               rdvc: wp.array2d(dtype=wp.float64), rvhat: wp.array2d(dtype=wp.float64),
               rR: wp.array2d(dtype=wp.float64), rlo: wp.array2d(dtype=wp.float64),
               rhi: wp.array2d(dtype=wp.float64)):
    """The scalar rows' part of (dℓ/dα, d²ℓ/dα²)."""
    d1 = wp.float64(0.0)
    d2 = wp.float64(0.0)
    for r in range(nr):
        u = rvc[e, r] + alpha * rdvc[e, r]
        g = row_project(u, rvhat[e, r], rR[e, r], rlo[e, r], rhi[e, r])
        d1 = d1 - g * rdvc[e, r]
        d2 = d2 + row_hessian(u, rvhat[e, r], rR[e, r], rlo[e, r], rhi[e, r]) * rdvc[e, r] * rdvc[e, r]
    return wp.vec2d(d1, d2)


@wp.func
def rows_cost(alpha: wp.float64, nr: int, e: int, rvc: wp.array2d(dtype=wp.float64),
              rdvc: wp.array2d(dtype=wp.float64), rvhat: wp.array2d(dtype=wp.float64),
              rR: wp.array2d(dtype=wp.float64), rlo: wp.array2d(dtype=wp.float64), rhi: wp.array2d(dtype=wp.float64)):
    out = wp.float64(0.0)
    for r in range(nr):
        out = out + row_cost(rvc[e, r] + alpha * rdvc[e, r], rvhat[e, r], rR[e, r], rlo[e, r], rhi[e, r])
    return out


@wp.func
def slope(alpha: wp.float64, a0: wp.float64, aa: wp.float64, nc: int, e: int,
          vc: wp.array2d(dtype=wp.vec3d), dvc: wp.array2d(dtype=wp.vec3d), vhat: wp.array2d(dtype=wp.float64),
          rn: wp.array2d(dtype=wp.float64), rt: wp.array2d(dtype=wp.float64), mu: wp.array2d(dtype=wp.float64)):
    """(dℓ/dα, d²ℓ/dα²) at v + α·dv."""
    d1 = a0 + alpha * aa
    d2 = aa
    for c in range(nc):
        u = vc[e, c] + dvc[e, c] * alpha
        g = project(u, vhat[e, c], rn[e, c], rt[e, c], mu[e, c])
        G = project_hessian(u, vhat[e, c], rn[e, c], rt[e, c], mu[e, c])
        d1 = d1 - wp.dot(g, dvc[e, c])
        d2 = d2 + wp.dot(dvc[e, c], G * dvc[e, c])
    return wp.vec2d(d1, d2)


@wp.func
def cost_along(alpha: wp.float64, a0: wp.float64, aa: wp.float64, base: wp.float64, nc: int, e: int,
               vc: wp.array2d(dtype=wp.vec3d), dvc: wp.array2d(dtype=wp.vec3d), vhat: wp.array2d(dtype=wp.float64),
               rn: wp.array2d(dtype=wp.float64), rt: wp.array2d(dtype=wp.float64), mu: wp.array2d(dtype=wp.float64)):
    """ℓ(v + α·dv), base = ½‖v − v*‖²_A."""
    out = base + alpha * a0 + wp.float64(0.5) * alpha * alpha * aa
    for c in range(nc):
        u = vc[e, c] + dvc[e, c] * alpha
        g = project(u, vhat[e, c], rn[e, c], rt[e, c], mu[e, c])
        out = out + contact_cost(g, rn[e, c], rt[e, c])
    return out


# ---------------------------------------------------------------- rigid–FEM contacts (kernels/fem.py)
# A contact c between the deformable vertex of slot s (velocity u_s, lumped mass m_s) and a rigid
# geom has the contact velocity v_c = R_c·u_s − (R_c·P_c)·v (R_c: frame rows; P_c: the rigid link's
# point Jacobian; fjac holds R_c·P_c), so J_c = [−R_c·P_c on the rigid dofs, R_c on u_s].


@wp.func
def fem_velocity(fjac: wp.array3d(dtype=wp.float64), fcols: wp.array3d(dtype=wp.int32),
                 fncols: wp.array2d(dtype=wp.int32), fframe: wp.array2d(dtype=wp.mat33d),
                 fvslot: wp.array2d(dtype=wp.int32), e: int, c: int, x: wp.array2d(dtype=wp.float64),
                 u: wp.array2d(dtype=wp.vec3d)):
    """v_c of contact c for rigid velocities x and vertex velocities u."""
    out = fframe[e, c] * u[e, fvslot[e, c]]
    for a in range(fncols[e, c]):
        j = fcols[e, c, a]
        out = out - wp.vec3d(fjac[e, 3 * c, j], fjac[e, 3 * c + 1, j], fjac[e, 3 * c + 2, j]) * x[e, j]
    return out


@wp.func
def fem_slope(alpha: wp.float64, nf: int, e: int, fvc: wp.array2d(dtype=wp.vec3d), fdvc: wp.array2d(dtype=wp.vec3d),
              fvhat: wp.array2d(dtype=wp.float64), frn: wp.array2d(dtype=wp.float64),
              frt: wp.array2d(dtype=wp.float64), fmu: wp.array2d(dtype=wp.float64)):
    """The FEM contacts' part of (dℓ/dα, d²ℓ/dα²)."""
    d1 = wp.float64(0.0)
    d2 = wp.float64(0.0)
    for c in range(nf):
        u = fvc[e, c] + fdvc[e, c] * alpha
        g = project(u, fvhat[e, c], frn[e, c], frt[e, c], fmu[e, c])
        G = project_hessian(u, fvhat[e, c], frn[e, c], frt[e, c], fmu[e, c])
        d1 = d1 - wp.dot(g, fdvc[e, c])
        d2 = d2 + wp.dot(fdvc[e, c], G * fdvc[e, c])
    return wp.vec2d(d1, d2)


@wp.func
def fem_cost(alpha: wp.float64, nf: int, e: int, fvc: wp.array2d(dtype=wp.vec3d), fdvc: wp.array2d(dtype=wp.vec3d),
             fvhat: wp.array2d(dtype=wp.float64), frn: wp.array2d(dtype=wp.float64),
             frt: wp.array2d(dtype=wp.float64), fmu: wp.array2d(dtype=wp.float64)):
    out = wp.float64(0.0)
    for c in range(nf):
        u = fvc[e, c] + fdvc[e, c] * alpha
        g = project(u, fvhat[e, c], frn[e, c], frt[e, c], fmu[e, c])
        out = out + contact_cost(g, frn[e, c], frt[e, c])
    return out


@wp.kernel
def sap_solve(
    # model in
    h: wp.float64,
    beta: wp.float64,
    sigma: wp.float64,
    atol: wp.float64,
    rtol: wp.float64,
    max_iterations: int,
    ls_mode: int,
    ls_alpha_max: wp.float64,
    ls_max_iterations: int,
    ls_tolerance: wp.float64,
    ls_c: wp.float64,
    ls_rho: wp.float64,
    k_lim: wp.float64,
    tau_lim: wp.float64,
    k_eq: wp.float64,
    tau_eq: wp.float64,
    beta_c: wp.float64,
    sigma_f: wp.float64,
    # data in
    qvel_in: wp.array2d(dtype=Any),
    qacc_free_in: wp.array2d(dtype=Any),
    mass_in: wp.array3d(dtype=Any),
    ncon_in: wp.array(dtype=wp.int32),
    dist_in: wp.array2d(dtype=Any),
    jac_in: wp.array3d(dtype=Any),
    k_in: wp.array2d(dtype=wp.float64),
    tau_in: wp.array2d(dtype=wp.float64),
    mu_in: wp.array2d(dtype=wp.float64),
    # the non-contact rows 0 .. row0 − 1 of jac_in (limits, frictionloss, equalities)
    row0_in: wp.array(dtype=wp.int32),
    rtype_in: wp.array2d(dtype=wp.int32),
    rpos_in: wp.array2d(dtype=Any),
    rfloss_in: wp.array2d(dtype=Any),
    # data in/out: the warm start (the last solution, valid where warm_ok = 1)
    warm_v: wp.array2d(dtype=wp.float64),
    warm_ok: wp.array(dtype=wp.int32),
    # scratch
    lo_A: wp.array2d(dtype=wp.int32),
    hi_A: wp.array2d(dtype=wp.int32),
    lo_H: wp.array2d(dtype=wp.int32),
    LA: wp.array3d(dtype=wp.float64),
    H: wp.array3d(dtype=wp.float64),
    Z: wp.array3d(dtype=wp.float64),
    cols: wp.array3d(dtype=wp.int32),
    ncols: wp.array2d(dtype=wp.int32),
    v: wp.array2d(dtype=wp.float64),
    vs: wp.array2d(dtype=wp.float64),
    dv: wp.array2d(dtype=wp.float64),
    grad: wp.array2d(dtype=wp.float64),
    tmp: wp.array2d(dtype=wp.float64),
    vc: wp.array2d(dtype=wp.vec3d),
    dvc: wp.array2d(dtype=wp.vec3d),
    gam: wp.array2d(dtype=wp.vec3d),
    rn: wp.array2d(dtype=wp.float64),
    rt: wp.array2d(dtype=wp.float64),
    vhat: wp.array2d(dtype=wp.float64),
    rfirst: wp.array2d(dtype=wp.int32),
    rlast: wp.array2d(dtype=wp.int32),
    rR: wp.array2d(dtype=wp.float64),
    rvhat: wp.array2d(dtype=wp.float64),
    rlo: wp.array2d(dtype=wp.float64),
    rhi: wp.array2d(dtype=wp.float64),
    rvc: wp.array2d(dtype=wp.float64),
    rdvc: wp.array2d(dtype=wp.float64),
    rgam: wp.array2d(dtype=wp.float64),
    # rigid–FEM contacts (kernels/fem.py), in: per contact slot < fnc
    fnc_in: wp.array(dtype=wp.int32),
    fnv_in: wp.array(dtype=wp.int32),
    fvslot_in: wp.array2d(dtype=wp.int32),
    fdist_in: wp.array2d(dtype=wp.float64),
    fframe_in: wp.array2d(dtype=wp.mat33d),
    fjac_in: wp.array3d(dtype=wp.float64),
    fk_in: wp.array2d(dtype=wp.float64),
    ftau_in: wp.array2d(dtype=wp.float64),
    fmu_in: wp.array2d(dtype=wp.float64),
    # per vertex slot < fnv: vertex index, first contact and count, mass, inverse mass (0: fixed), v*
    fvindex_in: wp.array2d(dtype=wp.int32),
    fvfirst_in: wp.array2d(dtype=wp.int32),
    fvcount_in: wp.array2d(dtype=wp.int32),
    fvmass_in: wp.array2d(dtype=wp.float64),
    fvminv_in: wp.array2d(dtype=wp.float64),
    fvus_in: wp.array2d(dtype=wp.vec3d),
    # FEM warm start per vertex (in/out)
    fwarm: wp.array2d(dtype=wp.vec3d),
    fwarm_ok: wp.array2d(dtype=wp.int32),
    # FEM scratch
    fcols: wp.array3d(dtype=wp.int32),
    fncols: wp.array2d(dtype=wp.int32),
    frn: wp.array2d(dtype=wp.float64),
    frt: wp.array2d(dtype=wp.float64),
    fvhat: wp.array2d(dtype=wp.float64),
    fvc: wp.array2d(dtype=wp.vec3d),
    fdvc: wp.array2d(dtype=wp.vec3d),
    fG: wp.array2d(dtype=wp.mat33d),
    fvg: wp.array2d(dtype=wp.vec3d),
    fvdu: wp.array2d(dtype=wp.vec3d),
    fvHinv: wp.array2d(dtype=wp.mat33d),
    # data out
    fgamma_out: wp.array2d(dtype=wp.vec3d),
    fvu_out: wp.array2d(dtype=wp.vec3d),
    gamma_out: wp.array2d(dtype=wp.vec3d),
    qfrc_out: wp.array2d(dtype=Any),
    force_out: wp.array2d(dtype=Any),
    iterations_out: wp.array(dtype=wp.int32),
    converged_out: wp.array(dtype=wp.int32),
    cost_out: wp.array2d(dtype=wp.float64),
    residual_out: wp.array(dtype=wp.float64),
    residual_history_out: wp.array2d(dtype=wp.float64),
):
    e = wp.tid()
    zero = wp.float64(0.0)
    half = wp.float64(0.5)
    one = wp.float64(1.0)
    nv = vs.shape[1]
    K = dist_in.shape[1]
    b0 = wp.min(row0_in[e], rR.shape[1])                # scalar rows, then the contacts from row b0
    nr = b0
    nc = wp.min(wp.min(ncon_in[e], K), (jac_in.shape[1] - b0) // 3)
    for it in range(cost_out.shape[1]):
        cost_out[e, it] = -one          # unused slots: −1 (a cost and a norm are >= 0)
        residual_history_out[e, it] = -one
    # the nonzero structure of A: row i spans columns [lo_A, hi_A]
    for i in range(nv):
        vs[e, i] = wp.float64(qvel_in[e, i]) + h * wp.float64(qacc_free_in[e, i])
        f = i
        for j in range(i):
            if wp.float64(mass_in[e, i, j]) != zero:
                f = j
                break
        u = i
        for jj in range(nv - 1 - i):
            j = nv - 1 - jj
            if wp.float64(mass_in[e, i, j]) != zero:
                u = j
                break
        lo_A[e, i] = f
        hi_A[e, i] = u
        lo_H[e, i] = f
        for j in range(f, i + 1):
            LA[e, i, j] = wp.float64(mass_in[e, i, j])
    cholesky_env(LA, lo_A, e, nv)
    # contact setup: nonzero columns (ascending), Delassus estimate, regularisation, bias velocity
    for c in range(nc):
        cnt = int(0)
        for j in range(nv):
            jj3 = jrow3(jac_in, e, b0, c, j)
            if jj3[0] != zero or jj3[1] != zero or jj3[2] != zero:
                cols[e, c, cnt] = j
                cnt = cnt + 1
        ncols[e, c] = cnt
        if cnt == 0:
            rn[e, c] = one
            rt[e, c] = one
            vhat[e, c] = zero
            continue
        first = cols[e, c, 0]
        for a in range(cnt):
            i = cols[e, c, a]
            lo_H[e, i] = wp.min(lo_H[e, i], first)      # J_cᵀ G J_c couples the contact's columns
        wsq = zero
        last_all = first
        for r in range(3):
            # z_r = L⁻¹ J_rᵀ: zero before ``first``; a later row whose envelope starts after the last
            # nonzero so far, and with no Jacobian entry of its own, stays zero (another tree)
            last = int(-1)
            for i in range(first, nv):
                t = wp.float64(jac_in[e, b0 + 3 * c + r, i])
                if t != zero or lo_A[e, i] <= last:
                    for k in range(wp.max(lo_A[e, i], first), i):
                        t = t - LA[e, i, k] * Z[e, r, k]
                    t = t / LA[e, i, i]
                Z[e, r, i] = t
                if t != zero:
                    last = i
            last_all = wp.max(last_all, last)
        for r in range(3):
            for q in range(3):
                wrq = zero
                for j in range(first, last_all + 1):
                    wrq = wrq + Z[e, r, j] * Z[e, q, j]
                wsq = wsq + wrq * wrq
        w = wp.sqrt(wsq) / wp.float64(3.0)
        tau = tau_in[e, c]
        rn_c = one / (h * k_in[e, c] * (h + tau))
        rn[e, c] = wp.max(beta * beta / TWO_PI_SQ * w, rn_c)
        rt[e, c] = sigma * w
        vhat[e, c] = -wp.float64(dist_in[e, c]) / (h + tau)
    # scalar rows: nonzero column range, exact Delassus w = ‖L⁻¹J_rᵀ‖², regularisation, bias, impulse set
    big = wp.float64(1.0e300)
    for r in range(nr):
        first = int(-1)
        lastc = int(-1)
        for j in range(nv):
            if wp.float64(jac_in[e, r, j]) != zero:
                if first < 0:
                    first = j
                lastc = j
        rfirst[e, r] = wp.max(first, 0)
        rlast[e, r] = lastc                          # an empty row: [0, −1], no columns, γ = 0
        rR[e, r] = one
        rvhat[e, r] = zero
        rlo[e, r] = zero
        rhi[e, r] = zero
        if first < 0:
            continue
        for i in range(first, lastc + 1):
            if wp.float64(jac_in[e, r, i]) != zero:
                lo_H[e, i] = wp.min(lo_H[e, i], first)
        last = int(-1)
        w = zero
        for i in range(first, nv):
            t = wp.float64(jac_in[e, r, i])
            if i > lastc:
                t = zero
            if t != zero or lo_A[e, i] <= last:
                for k in range(wp.max(lo_A[e, i], first), i):
                    t = t - LA[e, i, k] * Z[e, 0, k]
                t = t / LA[e, i, i]
            Z[e, 0, i] = t
            if t != zero:
                last = i
            w = w + t * t
        tp = rtype_in[e, r]
        g0 = wp.float64(rpos_in[e, r])
        if tp == ROW_FRICTION:
            hf = h * wp.float64(rfloss_in[e, r])
            rR[e, r] = sigma_f * w
            rlo[e, r] = -hf
            rhi[e, r] = hf
        else:
            kk = k_eq
            tt = tau_eq
            rlo[e, r] = -big
            if tp == ROW_LIMIT:
                kk = k_lim
                tt = tau_lim
                rlo[e, r] = zero
            rhi[e, r] = big
            rR[e, r] = wp.max(beta_c * beta_c / TWO_PI_SQ * w, one / (h * kk * (h + tt)))
            rvhat[e, r] = -g0 / (h + tt)
    # rigid–FEM contacts: nonzero rigid columns, Delassus estimate W = R(m⁻¹I + P A⁻¹ Pᵀ)Rᵀ, regularisation
    nf = fnc_in[e]
    nfv = fnv_in[e]
    for c in range(nf):
        cnt = int(0)
        for j in range(nv):
            if fjac_in[e, 3 * c, j] != zero or fjac_in[e, 3 * c + 1, j] != zero or fjac_in[e, 3 * c + 2, j] != zero:
                fcols[e, c, cnt] = j
                cnt = cnt + 1
        fncols[e, c] = cnt
        minv = fvminv_in[e, fvslot_in[e, c]]
        wr = wp.mat33d(minv, zero, zero, zero, minv, zero, zero, zero, minv)
        if cnt > 0:
            first = fcols[e, c, 0]
            last_all = first
            for r in range(3):
                last = int(-1)
                for i in range(first, nv):
                    t = fjac_in[e, 3 * c + r, i]
                    if t != zero or lo_A[e, i] <= last:
                        for k in range(wp.max(lo_A[e, i], first), i):
                            t = t - LA[e, i, k] * Z[e, r, k]
                        t = t / LA[e, i, i]
                    Z[e, r, i] = t
                    if t != zero:
                        last = i
                last_all = wp.max(last_all, last)
            for r in range(3):
                for q in range(3):
                    for j in range(first, last_all + 1):
                        wr[r, q] = wr[r, q] + Z[e, r, j] * Z[e, q, j]
        wsq = zero
        for r in range(3):
            for q in range(3):
                wsq = wsq + wr[r, q] * wr[r, q]
        w = wp.sqrt(wsq) / wp.float64(3.0)
        if w == zero:
            # a fixed vertex against a geom that cannot move: nothing to solve
            frn[e, c] = one
            frt[e, c] = one
            fvhat[e, c] = zero
            continue
        tau = ftau_in[e, c]
        frn[e, c] = wp.max(beta * beta / TWO_PI_SQ * w, one / (h * fk_in[e, c] * (h + tau)))
        frt[e, c] = sigma * w
        fvhat[e, c] = -fdist_in[e, c] / (h + tau)
    for sv in range(nfv):
        # a vertex couples the rigid columns of all its contacts (Schur complement): widen the envelope
        c0 = fvfirst_in[e, sv]
        f0 = nv
        for c in range(c0, c0 + fvcount_in[e, sv]):
            if fncols[e, c] > 0:
                f0 = wp.min(f0, fcols[e, c, 0])
        for c in range(c0, c0 + fvcount_in[e, sv]):
            for a in range(fncols[e, c]):
                i = fcols[e, c, a]
                lo_H[e, i] = wp.min(lo_H[e, i], f0)
        u0 = fvus_in[e, sv]
        iv = fvindex_in[e, sv]
        if fwarm_ok[e, iv] != 0 and fvminv_in[e, sv] > zero:
            u0 = fwarm[e, iv]
        fvu_out[e, sv] = u0
    for i in range(nv):
        if warm_ok[e] != 0:
            v[e, i] = warm_v[e, i]
        else:
            v[e, i] = vs[e, i]
        dv[e, i] = v[e, i] - vs[e, i]
    iters = int(0)
    conv = int(0)
    res = zero
    for it in range(max_iterations + 1):
        # cost, impulses and gradient at v (dv holds v − v* here)
        for i in range(nv):
            t = mat_vec(mass_in, lo_A, hi_A, e, i, dv)
            tmp[e, i] = t                     # A(v − v*)
            grad[e, i] = t
        base = zero
        for i in range(nv):
            base = base + half * tmp[e, i] * dv[e, i]
        for sv in range(nfv):
            d3 = fvu_out[e, sv] - fvus_in[e, sv]
            base = base + half * fvmass_in[e, sv] * wp.dot(d3, d3)
            fvg[e, sv] = d3 * fvmass_in[e, sv]
        cost = base
        for c in range(nc):
            u3 = contact_velocity(jac_in, cols, ncols, e, b0, c, v)
            vc[e, c] = u3
            g = project(u3, vhat[e, c], rn[e, c], rt[e, c], mu_in[e, c])
            gam[e, c] = g
            cost = cost + contact_cost(g, rn[e, c], rt[e, c])
            for a in range(ncols[e, c]):
                j = cols[e, c, a]
                grad[e, j] = grad[e, j] - wp.dot(jrow3(jac_in, e, b0, c, j), g)
        for r in range(nr):
            fr0 = rfirst[e, r]
            fr1 = rlast[e, r]
            u1 = row_velocity(jac_in, e, r, fr0, fr1, v)
            rvc[e, r] = u1
            g1 = row_project(u1, rvhat[e, r], rR[e, r], rlo[e, r], rhi[e, r])
            rgam[e, r] = g1
            cost = cost + row_cost(u1, rvhat[e, r], rR[e, r], rlo[e, r], rhi[e, r])
            for j in range(fr0, fr1 + 1):
                grad[e, j] = grad[e, j] - wp.float64(jac_in[e, r, j]) * g1
        for c in range(nf):
            u3 = fem_velocity(fjac_in, fcols, fncols, fframe_in, fvslot_in, e, c, v, fvu_out)
            fvc[e, c] = u3
            g = project(u3, fvhat[e, c], frn[e, c], frt[e, c], fmu_in[e, c])
            fgamma_out[e, c] = g
            cost = cost + contact_cost(g, frn[e, c], frt[e, c])
            for a in range(fncols[e, c]):
                j = fcols[e, c, a]
                grad[e, j] = grad[e, j] + wp.dot(wp.vec3d(fjac_in[e, 3 * c, j], fjac_in[e, 3 * c + 1, j],
                                                          fjac_in[e, 3 * c + 2, j]), g)
            sv = fvslot_in[e, c]
            fvg[e, sv] = fvg[e, sv] - wp.transpose(fframe_in[e, c]) * g
        cost_out[e, it] = cost
        # the stopping rule, mass-weighted: D = diag(A)^(-1/2)
        ng = zero
        nm = zero
        nj = zero
        for i in range(nv):
            dii = one / wp.float64(mass_in[e, i, i])
            p = mat_vec(mass_in, lo_A, hi_A, e, i, v)
            ji = tmp[e, i] - grad[e, i]          # (Jᵀγ)_i
            ng = ng + dii * grad[e, i] * grad[e, i]
            nm = nm + dii * p * p
            nj = nj + dii * ji * ji
        for sv in range(nfv):
            mi = fvminv_in[e, sv]
            if mi > zero:
                gs = fvg[e, sv]
                us = fvu_out[e, sv]
                js = (us - fvus_in[e, sv]) * fvmass_in[e, sv] - gs
                ng = ng + mi * wp.dot(gs, gs)
                nm = nm + fvmass_in[e, sv] * wp.dot(us, us)
                nj = nj + mi * wp.dot(js, js)
        ng = wp.sqrt(ng)
        res = ng
        residual_history_out[e, it] = ng
        if ng <= atol + rtol * wp.max(wp.sqrt(nm), wp.sqrt(nj)):
            conv = 1
            break
        if it == max_iterations:
            break
        # Newton direction: H = A + Σ J_cᵀ G_c J_c (lower triangle, envelope lo_H), dv = −H⁻¹∇ℓ
        for i in range(nv):
            for j in range(lo_H[e, i], i + 1):
                if j >= lo_A[e, i]:
                    H[e, i, j] = wp.float64(mass_in[e, i, j])
                else:
                    H[e, i, j] = zero
        for c in range(nc):
            G = project_hessian(vc[e, c], vhat[e, c], rn[e, c], rt[e, c], mu_in[e, c])
            for a in range(ncols[e, c]):
                i = cols[e, c, a]
                b3 = G * jrow3(jac_in, e, b0, c, i)
                for bb in range(a + 1):
                    j = cols[e, c, bb]
                    H[e, i, j] = H[e, i, j] + wp.dot(b3, jrow3(jac_in, e, b0, c, j))
        for r in range(nr):
            gr = row_hessian(rvc[e, r], rvhat[e, r], rR[e, r], rlo[e, r], rhi[e, r])
            if gr == zero:
                continue
            fr0 = rfirst[e, r]
            for i in range(fr0, rlast[e, r] + 1):
                ji = wp.float64(jac_in[e, r, i])
                if ji == zero:
                    continue
                for j in range(fr0, i + 1):
                    H[e, i, j] = H[e, i, j] + gr * ji * wp.float64(jac_in[e, r, j])
        for c in range(nf):
            G = project_hessian(fvc[e, c], fvhat[e, c], frn[e, c], frt[e, c], fmu_in[e, c])
            fG[e, c] = G
            for a in range(fncols[e, c]):
                i = fcols[e, c, a]
                b3 = G * wp.vec3d(fjac_in[e, 3 * c, i], fjac_in[e, 3 * c + 1, i], fjac_in[e, 3 * c + 2, i])
                for bb in range(a + 1):
                    j = fcols[e, c, bb]
                    H[e, i, j] = H[e, i, j] + wp.dot(b3, wp.vec3d(fjac_in[e, 3 * c, j], fjac_in[e, 3 * c + 1, j],
                                                                   fjac_in[e, 3 * c + 2, j]))
        # eliminate the vertex blocks m·I + Σ RᵀGR (Schur complement onto the rigid dofs):
        # H ← H − Σ_s B_sᵀ (m_s I + W_s)⁻¹ B_s,  B_s = Σ_c R_cᵀ G_c (R_c P_c)
        for sv in range(nfv):
            c0 = fvfirst_in[e, sv]
            c1 = c0 + fvcount_in[e, sv]
            Wsum = wp.mat33d(zero, zero, zero, zero, zero, zero, zero, zero, zero)
            f0 = nv
            for c in range(c0, c1):
                R = fframe_in[e, c]
                Wsum = Wsum + wp.transpose(R) * fG[e, c] * R
                if fncols[e, c] > 0:
                    f0 = wp.min(f0, fcols[e, c, 0])
            mi = fvminv_in[e, sv]
            Hinv = wp.inverse(wp.identity(n=3, dtype=wp.float64) + Wsum * mi) * mi
            fvHinv[e, sv] = Hinv
            if mi == zero or f0 == nv:
                continue
            for r in range(3):
                for j in range(f0, nv):
                    Z[e, r, j] = zero
            for c in range(c0, c1):
                RG = wp.transpose(fframe_in[e, c]) * fG[e, c]
                for a in range(fncols[e, c]):
                    j = fcols[e, c, a]
                    b3 = RG * wp.vec3d(fjac_in[e, 3 * c, j], fjac_in[e, 3 * c + 1, j], fjac_in[e, 3 * c + 2, j])
                    for r in range(3):
                        Z[e, r, j] = Z[e, r, j] + b3[r]
            for i in range(f0, nv):
                bi = wp.vec3d(Z[e, 0, i], Z[e, 1, i], Z[e, 2, i])
                if bi[0] == zero and bi[1] == zero and bi[2] == zero:
                    continue
                hb = Hinv * bi
                for j in range(f0, i + 1):
                    bj = wp.vec3d(Z[e, 0, j], Z[e, 1, j], Z[e, 2, j])
                    if bj[0] != zero or bj[1] != zero or bj[2] != zero:
                        H[e, i, j] = H[e, i, j] - wp.dot(hb, bj)
        cholesky_env(H, lo_H, e, nv)
        for i in range(nv):
            dv[e, i] = -grad[e, i]
        for sv in range(nfv):
            # right-hand side −∇ℓ_r − Σ_s B_sᵀ (m_s I + W_s)⁻¹ ∇ℓ_s
            y = fvHinv[e, sv] * fvg[e, sv]
            c0 = fvfirst_in[e, sv]
            for c in range(c0, c0 + fvcount_in[e, sv]):
                t3 = fG[e, c] * (fframe_in[e, c] * y)
                for a in range(fncols[e, c]):
                    j = fcols[e, c, a]
                    dv[e, j] = dv[e, j] - wp.dot(wp.vec3d(fjac_in[e, 3 * c, j], fjac_in[e, 3 * c + 1, j],
                                                          fjac_in[e, 3 * c + 2, j]), t3)
        forward_env(H, lo_H, e, nv, 0, dv)
        back_env(H, lo_H, e, nv, dv)
        for sv in range(nfv):
            # the vertex directions: du_s = (m_s I + W_s)⁻¹ (−∇ℓ_s + B_s·dv)
            r3 = -fvg[e, sv]
            c0 = fvfirst_in[e, sv]
            for c in range(c0, c0 + fvcount_in[e, sv]):
                jd = wp.vec3d(zero, zero, zero)
                for a in range(fncols[e, c]):
                    j = fcols[e, c, a]
                    jd = jd + wp.vec3d(fjac_in[e, 3 * c, j], fjac_in[e, 3 * c + 1, j], fjac_in[e, 3 * c + 2, j]) * dv[e, j]
                r3 = r3 + wp.transpose(fframe_in[e, c]) * (fG[e, c] * jd)
            fvdu[e, sv] = fvHinv[e, sv] * r3
        # line search along dv
        a0 = zero
        aa = zero
        d0 = zero
        for i in range(nv):
            adv = mat_vec(mass_in, lo_A, hi_A, e, i, dv)
            a0 = a0 + tmp[e, i] * dv[e, i]
            aa = aa + dv[e, i] * adv
            d0 = d0 + grad[e, i] * dv[e, i]
        for sv in range(nfv):
            du3 = fvdu[e, sv]
            m3 = fvmass_in[e, sv]
            a0 = a0 + m3 * wp.dot(fvu_out[e, sv] - fvus_in[e, sv], du3)
            aa = aa + m3 * wp.dot(du3, du3)
            d0 = d0 + wp.dot(fvg[e, sv], du3)
        for c in range(nc):
            dvc[e, c] = contact_velocity(jac_in, cols, ncols, e, b0, c, dv)
        for r in range(nr):
            rdvc[e, r] = row_velocity(jac_in, e, r, rfirst[e, r], rlast[e, r], dv)
        for c in range(nf):
            fdvc[e, c] = fem_velocity(fjac_in, fcols, fncols, fframe_in, fvslot_in, e, c, dv, fvdu)
        iters = it + 1
        if d0 >= zero:
            break                              # no descent left at round-off: not converged
        alpha = ls_alpha_max
        if ls_mode == LS_EXACT:
            s_hi = slope(ls_alpha_max, a0, aa, nc, e, vc, dvc, vhat, rn, rt, mu_in) + fem_slope(
                ls_alpha_max, nf, e, fvc, fdvc, fvhat, frn, frt, fmu_in) + rows_slope(
                ls_alpha_max, nr, e, rvc, rdvc, rvhat, rR, rlo, rhi)
            if s_hi[0] > zero:
                lo = zero
                hi = ls_alpha_max
                alpha = wp.min(one, ls_alpha_max)
                for _ls in range(ls_max_iterations):
                    sl = slope(alpha, a0, aa, nc, e, vc, dvc, vhat, rn, rt, mu_in) + fem_slope(
                        alpha, nf, e, fvc, fdvc, fvhat, frn, frt, fmu_in) + rows_slope(
                        alpha, nr, e, rvc, rdvc, rvhat, rR, rlo, rhi)
                    if wp.abs(sl[0]) <= ls_tolerance * wp.abs(d0):
                        break
                    if sl[0] > zero:
                        hi = alpha
                    else:
                        lo = alpha
                    nxt = alpha - sl[0] / sl[1]
                    if nxt <= lo or nxt >= hi:
                        nxt = half * (lo + hi)
                    alpha = nxt
        else:
            for _ls in range(ls_max_iterations):
                c_a = cost_along(alpha, a0, aa, base, nc, e, vc, dvc, vhat, rn, rt, mu_in) + fem_cost(
                    alpha, nf, e, fvc, fdvc, fvhat, frn, frt, fmu_in) + rows_cost(
                    alpha, nr, e, rvc, rdvc, rvhat, rR, rlo, rhi)
                if c_a <= cost + ls_c * alpha * d0:
                    break
                alpha = alpha * ls_rho
        for i in range(nv):
            v[e, i] = v[e, i] + alpha * dv[e, i]
            dv[e, i] = v[e, i] - vs[e, i]
        for sv in range(nfv):
            fvu_out[e, sv] = fvu_out[e, sv] + fvdu[e, sv] * alpha
    iterations_out[e] = iters
    converged_out[e] = conv
    residual_out[e] = res
    # outputs: impulses, generalized force Jᵀγ/h, row forces γ/h, the warm start
    inv_h = one / h
    for i in range(nv):
        qfrc_out[e, i] = type(qfrc_out[e, i])(inv_h * (tmp[e, i] - grad[e, i]))
        warm_v[e, i] = v[e, i]
    warm_ok[e] = 1
    for sv in range(nfv):
        # the vertex velocity the impulses give, u = u* + m⁻¹Σ_c R_cᵀγ_c = u − m⁻¹∇ℓ_s (the iterate up to the
        # stopping tolerance): the vertex receives exactly the opposite of what the rigid side does
        fvu_out[e, sv] = fvu_out[e, sv] - fvg[e, sv] * fvminv_in[e, sv]
        fwarm[e, fvindex_in[e, sv]] = fvu_out[e, sv]
        fwarm_ok[e, fvindex_in[e, sv]] = 1
    for c in range(K):
        g = wp.vec3d(zero, zero, zero)
        if c < nc:
            g = gam[e, c]
        gamma_out[e, c] = g
    # row forces γ/h: the scalar rows, then the contacts' three rows each, 0 beyond
    for r in range(force_out.shape[1]):
        fo = zero
        if r < nr:
            fo = inv_h * rgam[e, r]
        elif r < b0 + 3 * nc:
            q = r - b0
            fo = inv_h * gam[e, q // 3][q % 3]
        force_out[e, r] = type(force_out[e, r])(fo)


@wp.kernel
def step_stats(
    # model in
    first: int,
    # data in
    iterations_in: wp.array(dtype=wp.int32),
    converged_in: wp.array(dtype=wp.int32),
    # data out
    iterations_step_out: wp.array(dtype=wp.int32),
    cap_hits_step_out: wp.array(dtype=wp.int32),
):
    """Per env over the step's substeps: Newton iterations summed, solves that did not converge
    counted (restarted by the step's first substep)."""
    e = wp.tid()
    cap = 1 - converged_in[e]
    if first != 0:
        iterations_step_out[e] = iterations_in[e]
        cap_hits_step_out[e] = cap
    else:
        iterations_step_out[e] = iterations_step_out[e] + iterations_in[e]
        cap_hits_step_out[e] = cap_hits_step_out[e] + cap


_declared: set = set()


def declare_overloads(precision: str) -> None:
    """The float32 ("32") or float64 ("64") overloads of the generic kernels, whose rigid-solver inputs and
    outputs are in the scene's precision (SapCoupler.kernel_modules, docs/running.md "First run"): declared
    before the module loads, a scene compiles only its own precision and its first step rebuilds nothing."""
    if precision in _declared:
        return
    s = wp.float64 if precision == "64" else wp.float32
    a2, a3 = wp.array2d(dtype=s), wp.array3d(dtype=s)
    wp.overload(contact_params, {"con_friction_in": a3, "geom_friction_in": a3, "geom_friction_ratio_in": a2})
    wp.overload(sap_solve, {"qvel_in": a2, "qacc_free_in": a2, "mass_in": a3, "dist_in": a2, "jac_in": a3,
                            "rpos_in": a2, "rfloss_in": a2, "qfrc_out": a2, "force_out": a2})
    _declared.add(precision)
