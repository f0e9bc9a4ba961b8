"""Constitutive models of linear tetrahedra and the explicit (symplectic Euler) stage.

F = Ds·Dm⁻¹ with Ds = [x1-x0, x2-x0, x3-x0]; the nodal elastic gradient of an element is
V·P(F)·Dm⁻ᵀ (columns: vertices 1..3; vertex 0 gets minus their sum). Models (code):
0 linear: P = 2μ ε + λ tr(ε) I, ε = sym(F) - I;
1 corotated: F = R S (polar), P = R (2μ (S - I) + λ tr(S - I) I);
2 stable Neo-Hookean (Smith et al. 2018): P = μ (1 - 1/(I_C + 1)) F + λ (J - α) ∂J/∂F.
Stiffness-proportional Rayleigh damping uses the corotated linear differential with the rotation R
of the element (identity for the linear model).
"""

import warp as wp
from polyphys.kernels.blocks import block_after, next_block

wp.set_module_options({"enable_backward": False})   # nothing here is differentiated

# One source, two precisions: this file is imported as ``elastic`` (float32) and loaded a second time
# as ``elastic_f64`` (float64) by ``kernels.load("64")``; S, vec3 and mat33 follow the module name.
S = wp.float64 if __name__.endswith("_f64") else wp.float32
vec3 = wp.vec3d if S is wp.float64 else wp.vec3f
mat33 = wp.mat33d if S is wp.float64 else wp.mat33f

MODEL_LINEAR = wp.constant(0)
MODEL_COROTATED = wp.constant(1)
MODEL_NEOHOOKEAN = wp.constant(2)


@wp.func
def ds_matrix(x: wp.array2d(dtype=vec3), env: int, t: wp.vec4i):
    x0 = x[env, t[0]]
    return wp.matrix_from_cols(x[env, t[1]] - x0, x[env, t[2]] - x0, x[env, t[3]] - x0)


@wp.func
def ds_trial(x: wp.array2d(dtype=vec3), d: wp.array2d(dtype=vec3), s: S, env: int,
             t: wp.vec4i):
    """Ds at the trial positions x + s·d."""
    x0 = x[env, t[0]] + s * d[env, t[0]]
    return wp.matrix_from_cols(x[env, t[1]] + s * d[env, t[1]] - x0, x[env, t[2]] + s * d[env, t[2]] - x0,
                               x[env, t[3]] + s * d[env, t[3]] - x0)


@wp.func
def polar_rotation(F: mat33):
    """Rotation R of the polar decomposition F = R S (proper: det R = +1, also for inverted F)."""
    U = mat33()
    sig = vec3()
    V = mat33()
    wp.svd3(F, U, sig, V)
    if wp.determinant(U) * wp.determinant(V) < S(0.0):
        k = int(0)
        if sig[1] < sig[k]:
            k = 1
        if sig[2] < sig[k]:
            k = 2
        for r in range(3):
            U[r, k] = -U[r, k]
    return U * wp.transpose(V)


@wp.func
def cofactor(F: mat33):
    """∂J/∂F: columns f1×f2, f2×f0, f0×f1 of F's columns f0, f1, f2."""
    f0 = vec3(F[0, 0], F[1, 0], F[2, 0])
    f1 = vec3(F[0, 1], F[1, 1], F[2, 1])
    f2 = vec3(F[0, 2], F[1, 2], F[2, 2])
    return wp.matrix_from_cols(wp.cross(f1, f2), wp.cross(f2, f0), wp.cross(f0, f1))


@wp.func
def cofactor_diff(F: mat33, dF: mat33):
    """Directional derivative of ∂J/∂F along dF."""
    f0 = vec3(F[0, 0], F[1, 0], F[2, 0])
    f1 = vec3(F[0, 1], F[1, 1], F[2, 1])
    f2 = vec3(F[0, 2], F[1, 2], F[2, 2])
    d0 = vec3(dF[0, 0], dF[1, 0], dF[2, 0])
    d1 = vec3(dF[0, 1], dF[1, 1], dF[2, 1])
    d2 = vec3(dF[0, 2], dF[1, 2], dF[2, 2])
    return wp.matrix_from_cols(wp.cross(d1, f2) + wp.cross(f1, d2), wp.cross(d2, f0) + wp.cross(f2, d0),
                               wp.cross(d0, f1) + wp.cross(f0, d1))


@wp.func
def damping_rotation(model: int, F: mat33):
    """The element rotation: polar R of F (corotated, Neo-Hookean damping), identity for linear."""
    if model == MODEL_LINEAR:
        return wp.identity(n=3, dtype=S)
    return polar_rotation(F)


@wp.func
def model_rotation(model: int, F: mat33):
    """The rotation the model's stress needs: polar R of F for corotated, identity otherwise."""
    if model == MODEL_COROTATED:
        return polar_rotation(F)
    return wp.identity(n=3, dtype=S)


@wp.func
def nh_alpha(mu: S, lam: S):
    return S(1.0) + S(0.75) * mu / lam


@wp.func
def stress(model: int, mu: S, lam: S, F: mat33):
    """First Piola-Kirchhoff stress P(F)."""
    return stress_rot(model, mu, lam, F, model_rotation(model, F))


@wp.func
def stress_rot(model: int, mu: S, lam: S, F: mat33, R: mat33):
    """P(F) given the polar rotation R of F (used by the corotated model only)."""
    I = wp.identity(n=3, dtype=S)
    if model == MODEL_LINEAR:
        eps = S(0.5) * (F + wp.transpose(F)) - I
        return S(2.0) * mu * eps + lam * wp.trace(eps) * I
    if model == MODEL_COROTATED:
        Sm = wp.transpose(R) * F
        Sm = S(0.5) * (Sm + wp.transpose(Sm))
        return R * (S(2.0) * mu * (Sm - I) + lam * wp.trace(Sm - I) * I)
    ic = wp.ddot(F, F)
    J = wp.determinant(F)
    return mu * (S(1.0) - S(1.0) / (ic + S(1.0))) * F + lam * (J - nh_alpha(mu, lam)) * cofactor(F)


@wp.func
def energy_density(model: int, mu: S, lam: S, F: mat33):
    """Strain energy per rest volume Psi(F), zero at F = I."""
    return energy_density_rot(model, mu, lam, F, model_rotation(model, F))


@wp.func
def energy_density_rot(model: int, mu: S, lam: S, F: mat33, R: mat33):
    """Psi(F) given the polar rotation R of F (used by the corotated model only)."""
    I = wp.identity(n=3, dtype=S)
    if model == MODEL_LINEAR:
        eps = S(0.5) * (F + wp.transpose(F)) - I
        tr = wp.trace(eps)
        return mu * wp.ddot(eps, eps) + S(0.5) * lam * tr * tr
    if model == MODEL_COROTATED:
        Sm = wp.transpose(R) * F
        Sm = S(0.5) * (Sm + wp.transpose(Sm)) - I
        tr = wp.trace(Sm)
        return mu * wp.ddot(Sm, Sm) + S(0.5) * lam * tr * tr
    ic = wp.ddot(F, F)
    J = wp.determinant(F)
    a = nh_alpha(mu, lam)
    rest = S(0.5) * lam * (S(1.0) - a) * (S(1.0) - a) - S(0.5) * mu * wp.log(S(4.0))
    return S(0.5) * mu * (ic - S(3.0)) + S(0.5) * lam * (J - a) * (J - a) - S(0.5) * mu * wp.log(ic + S(1.0)) - rest


@wp.func
def nh_hessian_cache(mu: S, lam: S, F: mat33):
    """The stable Neo-Hookean Hessian ∂P/∂F projected to positive semi-definite, in the analytic
    eigensystem of Smith et al. 2018 (§4): with F = U Σ Vᵀ (rotations U, V; σ₃ < 0 when inverted),
    twist modes have eigenvalues μ(1-q) + λ(J-α)σ_k, flip modes μ(1-q) - λ(J-α)σ_k (q = 1/(I_C+1),
    k the axis the pair (i, j) leaves out), and the three scaling modes the eigenvalues of
    A = μ(1-q) I + 2μq² σσᵀ + λ g gᵀ + λ(J-α) H, g = (σ₂σ₃, σ₁σ₃, σ₁σ₂), H = [[0,σ₃,σ₂],[σ₃,0,σ₁],
    [σ₂,σ₁,0]]. Negative eigenvalues are clamped to 0. Returns (U, V, A⁺, [twist; flip; 0])."""
    U = mat33()
    sig = vec3()
    V = mat33()
    wp.svd3(F, U, sig, V)
    if wp.determinant(U) < S(0.0):
        for r in range(3):
            U[r, 2] = -U[r, 2]
        sig[2] = -sig[2]
    if wp.determinant(V) < S(0.0):
        for r in range(3):
            V[r, 2] = -V[r, 2]
        sig[2] = -sig[2]
    ic = wp.dot(sig, sig)
    q = S(1.0) / (ic + S(1.0))
    J = sig[0] * sig[1] * sig[2]
    k1 = mu * (S(1.0) - q)
    k2 = lam * (J - nh_alpha(mu, lam))
    g = vec3(sig[1] * sig[2], sig[0] * sig[2], sig[0] * sig[1])
    H = mat33(S(0.0), sig[2], sig[1], sig[2], S(0.0), sig[0], sig[1], sig[0], S(0.0))
    A = k1 * wp.identity(n=3, dtype=S) + (S(2.0) * mu * q * q) * wp.outer(sig, sig) + lam * wp.outer(g, g) + k2 * H
    # A⁺ = A when A is positive definite (Sylvester: its leading principal minors are positive; the
    # usual case, e.g. near rest), which skips the 3×3 eigensolve (as costly as the SVD)
    Ap = A
    if A[0, 0] <= S(0.0) or A[0, 0] * A[1, 1] - A[0, 1] * A[1, 0] <= S(0.0) or wp.determinant(A) <= S(0.0):
        Q = mat33()
        d = vec3()
        wp.eig3(A, Q, d)
        Ap = Q * wp.diag(vec3(wp.max(d[0], S(0.0)), wp.max(d[1], S(0.0)), wp.max(d[2], S(0.0)))) * wp.transpose(Q)
    TF = mat33(S(0.0))
    for k in range(3):
        TF[0, k] = wp.max(k1 + k2 * sig[k], S(0.0))
        TF[1, k] = wp.max(k1 - k2 * sig[k], S(0.0))
    return U, V, Ap, TF


@wp.func
def nh_projected_diff(U: mat33, V: mat33, Ap: mat33, TF: mat33, dF: mat33):
    """dP = (projected ∂P/∂F) : dF from the cache of nh_hessian_cache."""
    return U * nh_projected_frame(Ap, TF, wp.transpose(U) * dF * V) * wp.transpose(V)


@wp.func
def nh_projected_frame(Ap: mat33, TF: mat33, D: mat33):
    """The projected Hessian applied in the singular frame: Uᵀ dP V from D = Uᵀ dF V."""
    r = Ap * vec3(D[0, 0], D[1, 1], D[2, 2])
    out = wp.diag(r)
    c = S(0.7071067811865476)
    for k in range(3):
        i = (k + 1) % 3
        j = (k + 2) % 3
        t = TF[0, k] * (D[i, j] - D[j, i]) * c
        l = TF[1, k] * (D[i, j] + D[j, i]) * c
        out[i, j] = (t + l) * c
        out[j, i] = (l - t) * c
    return out


@wp.func
def corotated_diff(R: mat33, mu: S, lam: S, dF: mat33):
    """R (μ (Rᵀ dF + dFᵀ R) + λ tr(Rᵀ dF) I): the corotated linear differential with R held fixed
    (positive semi-definite)."""
    A = wp.transpose(R) * dF
    return R * (mu * (A + wp.transpose(A)) + lam * wp.trace(A) * wp.identity(n=3, dtype=S))


@wp.func
def stress_diff(model: int, mu: S, lam: S, F: mat33, dF: mat33):
    """dP = ∂P/∂F : dF (the corotated model holds R fixed: the usual warped-stiffness Jacobian)."""
    return stress_diff_rot(model, mu, lam, F, model_rotation(model, F), dF)


@wp.func
def stress_diff_rot(model: int, mu: S, lam: S, F: mat33, R: mat33, dF: mat33):
    """dP given the polar rotation R of F (identity for the linear model)."""
    if model != MODEL_NEOHOOKEAN:
        return corotated_diff(R, mu, lam, dF)
    ic = wp.ddot(F, F)
    J = wp.determinant(F)
    C = cofactor(F)
    q = S(1.0) / (ic + S(1.0))
    return (mu * (S(1.0) - q) * dF + (S(2.0) * mu * q * q * wp.ddot(F, dF)) * F + (lam * wp.ddot(C, dF)) * C
            + lam * (J - nh_alpha(mu, lam)) * cofactor_diff(F, dF))


# Items per block of the fixed-order sums (``red`` arrays, solver.py): a worker's share of a stage is
# whole blocks, each block summed in index order by one thread, the blocks then summed in order
# (``finish_sum``), so a sum has the same bits for any number of workers (docs/fem.md, "Threads").
RED_BLOCK = wp.constant(256)


@wp.func
def store_corners(corner_out: wp.array2d(dtype=vec3), env: int, o: wp.vec4i, H: mat33, sign: S):
    """Write an element's four nodal vectors from its per-element matrix H (V P Dm⁻ᵀ or V dP Dm⁻ᵀ):
    sign·(column c) for its vertex c + 1, -sign·(sum of the columns) for its vertex 0, at the
    element's corner positions o in the gather order (``corner_sum``)."""
    c1 = vec3(H[0, 0], H[1, 0], H[2, 0])
    c2 = vec3(H[0, 1], H[1, 1], H[2, 1])
    c3 = vec3(H[0, 2], H[1, 2], H[2, 2])
    corner_out[env, o[0]] = -sign * (c1 + c2 + c3)
    corner_out[env, o[1]] = sign * c1
    corner_out[env, o[2]] = sign * c2
    corner_out[env, o[3]] = sign * c3


@wp.func
def zero_corners(corner_out: wp.array2d(dtype=vec3), env: int, o: wp.vec4i):
    """An inactive element's nodal vectors: zero (it exerts no force)."""
    z = vec3(S(0.0))
    corner_out[env, o[0]] = z
    corner_out[env, o[1]] = z
    corner_out[env, o[2]] = z
    corner_out[env, o[3]] = z


@wp.func
def corner_sum(env: int, i: int, v_start: wp.array(dtype=wp.int32), corner_in: wp.array2d(dtype=vec3), acc: vec3):
    """acc + Σ vertex i's nodal vectors, in ascending element order. The element stages write each
    element's four nodal vectors (store_corners) at its corners' positions in the gather order
    (vertex by vertex, each vertex's elements ascending; built at build time), so a vertex reads one
    contiguous range: no scatter (no race between workers, and the order of the sum is that of the
    elements), no branch and no index per corner."""
    q = wp.max(v_start[i], 0)     # a while loop from ≥ 0: no step-sign test, no index wrap (docs/fem.md)
    q_end = v_start[i + 1]
    while q < q_end:
        acc = acc + corner_in[env, q]
        q += 1
    return acc


@wp.kernel
def explicit_forces(
    # Model:
    tets: wp.array(dtype=wp.vec4i),
    dm_inv: wp.array(dtype=mat33),
    rest_vol: wp.array(dtype=S),
    model: wp.array(dtype=wp.int32),
    mu: wp.array(dtype=S),
    lam: wp.array(dtype=S),
    mu_lin: wp.array(dtype=S),
    lam_lin: wp.array(dtype=S),
    beta: wp.array(dtype=S),
    corner_slot: wp.array(dtype=wp.vec4i),
    e_first: int,
    # Data in:
    pos_in: wp.array2d(dtype=vec3),
    vel_in: wp.array2d(dtype=vec3),
    active_in: wp.array2d(dtype=wp.int32),
    # Data out:
    corner_out: wp.array2d(dtype=vec3),
):
    """Elastic + stiffness-damping nodal forces of every element, -V P Dm⁻ᵀ (columns: vertices
    1..3, vertex 0 minus their sum), written at its corners (gathered by explicit_velocity); zero
    for an inactive element. Any model; a mesh of undamped Neo-Hookean elements only takes
    explicit_forces_nh."""
    env, q = wp.tid()
    e = e_first + q
    o = corner_slot[e]
    if active_in[env, e] == 0:
        zero_corners(corner_out, env, o)
        return
    t = tets[e]
    m = model[e]
    Dinv = dm_inv[e]
    F = ds_matrix(pos_in, env, t) * Dinv
    R = model_rotation(m, F)
    P = stress_rot(m, mu[e], lam[e], F, R)
    if beta[e] > S(0.0):
        dFv = ds_matrix(vel_in, env, t) * Dinv
        if m == MODEL_NEOHOOKEAN:
            R = polar_rotation(F)
        P = P + beta[e] * corotated_diff(R, mu_lin[e], lam_lin[e], dFv)
    store_corners(corner_out, env, o, rest_vol[e] * P * wp.transpose(Dinv), -S(1.0))


@wp.func
def nh_element_forces(
    tets: wp.array(dtype=wp.vec4i),
    gram: wp.array(dtype=mat33),
    nh_coef: wp.array(dtype=vec3),
    corner_slot: wp.array(dtype=wp.vec4i),
    env: int,
    e: int,
    pos_in: wp.array2d(dtype=vec3),
    active_in: wp.array2d(dtype=wp.int32),
    corner_out: wp.array2d(dtype=vec3),
):
    """Element e of explicit_forces_nh: explicit_forces for a mesh whose elements are all stable
    Neo-Hookean without stiffness damping, in fewer operations and loads, without forming F: with Ds = [d1 d2 d3] (dₖ = xₖ - x0)
    and G = Dm⁻¹Dm⁻ᵀ (gram), F Dm⁻ᵀ = Ds G and I_C = tr(Ds G Dsᵀ) = Σ dₖ·yₖ (yₖ the columns of
    Ds G); cof(F) Dm⁻ᵀ = det(Dm⁻¹) cof(Ds) with V det(Dm⁻¹) = 1/6, cof(Ds) = [d2×d3, d3×d1, d1×d2]
    and J = det(Ds)/(6V). So V P Dm⁻ᵀ = a Ds G + b cof(Ds) with a = Vμ (1 - 1/(I_C + 1)) and
    b = λ(J - α)/6 = k₁ det(Ds) - k₂; nh_coef = (Vμ, λ/(36V), λα/6) per element (built in float64).
    Equal to explicit_forces in exact arithmetic (the tests compare the two)."""
    o = corner_slot[e]
    if active_in[env, e] == 0:
        zero_corners(corner_out, env, o)
        return
    t = tets[e]
    x0 = pos_in[env, t[0]]
    d1 = pos_in[env, t[1]] - x0
    d2 = pos_in[env, t[2]] - x0
    d3 = pos_in[env, t[3]] - x0
    G = gram[e]
    k = nh_coef[e]
    c1 = wp.cross(d2, d3)
    c2 = wp.cross(d3, d1)
    c3 = wp.cross(d1, d2)
    y1 = G[0, 0] * d1 + G[1, 0] * d2 + G[2, 0] * d3
    y2 = G[0, 1] * d1 + G[1, 1] * d2 + G[2, 1] * d3
    y3 = G[0, 2] * d1 + G[1, 2] * d2 + G[2, 2] * d3
    ic = wp.dot(d1, y1) + wp.dot(d2, y2) + wp.dot(d3, y3)
    a = k[0] * (S(1.0) - S(1.0) / (ic + S(1.0)))
    b = k[1] * wp.dot(d1, c1) - k[2]
    f1 = a * y1 + b * c1
    f2 = a * y2 + b * c2
    f3 = a * y3 + b * c3
    corner_out[env, o[0]] = f1 + f2 + f3
    corner_out[env, o[1]] = -f1
    corner_out[env, o[2]] = -f2
    corner_out[env, o[3]] = -f3


@wp.kernel
def explicit_forces_nh(
    # Model:
    tets: wp.array(dtype=wp.vec4i),
    gram: wp.array(dtype=mat33),
    nh_coef: wp.array(dtype=vec3),
    corner_slot: wp.array(dtype=wp.vec4i),
    e_first: int,
    e_count: int,
    chunk: int,
    # Data in:
    pos_in: wp.array2d(dtype=vec3),
    active_in: wp.array2d(dtype=wp.int32),
    claim: int,
    # Data out:
    corner_out: wp.array2d(dtype=vec3),
    claims_inout: wp.array2d(dtype=wp.int32),
):
    """nh_element_forces for elements e_first + [c·chunk, (c+1)·chunk) ∩ [0, e_count) of thread
    (env, c): on CPU a thread per element costs about a fifth of the element's work in launch
    bookkeeping, so the solver gives each thread a run of elements there (one on CUDA). The same
    operations per element whatever the chunk. With ``claim`` (one thread per env and worker) the
    thread takes unclaimed runs until none is left (polyphys.blocks)."""
    env, c0 = wp.tid()
    n_runs = (e_count + chunk - 1) / chunk
    c = next_block(claims_inout, claim, env, c0, n_runs)
    while c < n_runs:
        for q in range(c * chunk, wp.min((c + 1) * chunk, e_count)):
            nh_element_forces(tets, gram, nh_coef, corner_slot, env, e_first + q, pos_in, active_in, corner_out)
        c = block_after(claims_inout, claim, env, n_runs)


@wp.kernel
def explicit_velocity(
    # Model:
    inv_mass: wp.array(dtype=S),
    alpha: wp.array(dtype=S),
    gravity: vec3,
    h: S,
    fixed: wp.array2d(dtype=wp.int32),
    v_start: wp.array(dtype=wp.int32),
    i_first: int,
    i_count: int,
    chunk: int,
    claim: int,
    # Data in:
    corner_in: wp.array2d(dtype=vec3),
    force_in: wp.array2d(dtype=vec3),
    # Data out:
    vel_out: wp.array2d(dtype=vec3),
    force_out: wp.array2d(dtype=vec3),
    claims_inout: wp.array2d(dtype=wp.int32),
):
    """v += h (f/m + g - α v) (mass damping implicit in v), f = the force buffer plus the elements'
    nodal forces (gathered: corner_sum); the force buffer is cleared. Thread (env, c): vertices
    i_first + [c·chunk, (c+1)·chunk) ∩ [0, i_count) (a run per thread on CPU, claimed as in
    explicit_forces_nh)."""
    env, c0 = wp.tid()
    n_runs = (i_count + chunk - 1) / chunk
    c = next_block(claims_inout, claim, env, c0, n_runs)
    while c < n_runs:
        for q in range(c * chunk, wp.min((c + 1) * chunk, i_count)):
            i = i_first + q
            f = corner_sum(env, i, v_start, corner_in, force_in[env, i])
            force_out[env, i] = vec3(S(0.0))
            if fixed[env, i] != 0:
                vel_out[env, i] = vec3(S(0.0))
            else:
                v = vel_out[env, i] + h * (f * inv_mass[i] + gravity)
                vel_out[env, i] = v / (S(1.0) + h * alpha[i])
        c = block_after(claims_inout, claim, env, n_runs)


@wp.func
def coulomb(vt: vec3, dvn: S, friction: S):
    """Tangential velocity after a normal impulse removing dvn (>= 0): |vt| shrinks by friction·dvn,
    stopping at zero."""
    lt = wp.length(vt)
    scale = S(0.0)
    if lt > S(0.0):
        scale = wp.max(S(0.0), S(1.0) - friction * dvn / lt)
    return vt * scale


@wp.func
def position_step(h: S, plane_point: wp.array(dtype=vec3), plane_normal: wp.array(dtype=vec3), friction: S, x_base: vec3,
                  v: vec3):
    """(x, v) after x = x_base + h v and the static planes (integrate_positions)."""
    x = x_base + h * v
    for k in range(plane_point.shape[0]):
        n = plane_normal[k]
        d = wp.dot(x - plane_point[k], n)
        if d < S(0.0):
            x = x - d * n
            vn = wp.dot(v, n)
            if vn < S(0.0):
                vt = v - vn * n
                v = coulomb(vt, -vn, friction)
                x = x - h * (vt - v)          # the step moves with the velocity friction left
    return x, v


@wp.kernel
def integrate_positions(
    # Model:
    h: S,
    fixed: wp.array2d(dtype=wp.int32),
    plane_point: wp.array(dtype=vec3),
    plane_normal: wp.array(dtype=vec3),
    friction: S,
    i_first: int,
    i_count: int,
    chunk: int,
    claim: int,
    # Data in:
    base_in: wp.array2d(dtype=vec3),
    # Data out:
    pos_out: wp.array2d(dtype=vec3),
    vel_out: wp.array2d(dtype=vec3),
    claims_inout: wp.array2d(dtype=wp.int32),
):
    """x = x_base + h v, then static planes: a vertex behind a plane is put back on it, its inward
    normal velocity removed and its tangential velocity reduced by friction·|Δv_n| (Coulomb); its
    tangential step is that of the reduced velocity (taking the step with the velocity before
    friction let a block that should stick on an incline creep at ~h g sinθ per substep's worth:
    1.5 cm/s at 20°, μ = 0.6, h = 1.25 ms). (The
    implicit solve's contacts already sit on their plane and got their friction inside the solve;
    this catches the vertices it did not predict.) Thread (env, c): a run of vertices, as
    explicit_velocity."""
    env, c0 = wp.tid()
    n_runs = (i_count + chunk - 1) / chunk
    c = next_block(claims_inout, claim, env, c0, n_runs)
    while c < n_runs:
        for q in range(c * chunk, wp.min((c + 1) * chunk, i_count)):
            i = i_first + q
            if fixed[env, i] == 0:
                x, v = position_step(h, plane_point, plane_normal, friction, base_in[env, i], vel_out[env, i])
                pos_out[env, i] = x
                vel_out[env, i] = v
        c = block_after(claims_inout, claim, env, n_runs)


@wp.kernel
def explicit_vertex_step(
    # Model:
    inv_mass: wp.array(dtype=S),
    alpha: wp.array(dtype=S),
    gravity: vec3,
    h: S,
    fixed: wp.array2d(dtype=wp.int32),
    v_start: wp.array(dtype=wp.int32),
    plane_point: wp.array(dtype=vec3),
    plane_normal: wp.array(dtype=vec3),
    friction: S,
    i_first: int,
    i_count: int,
    chunk: int,
    claim: int,
    # Data in:
    corner_in: wp.array2d(dtype=vec3),
    force_in: wp.array2d(dtype=vec3),
    # Data out:
    pos_out: wp.array2d(dtype=vec3),
    vel_out: wp.array2d(dtype=vec3),
    force_out: wp.array2d(dtype=vec3),
    claims_inout: wp.array2d(dtype=wp.int32),
):
    """explicit_velocity then integrate_positions in one pass (the same operations, the same bits):
    the substep of a scene without couplers (nothing acts between the two halves). Thread (env, c)
    steps vertices i_first + [c·chunk, (c+1)·chunk) ∩ [0, i_count) (a run per thread on CPU, claimed
    as in explicit_forces_nh)."""
    env, c0 = wp.tid()
    n_runs = (i_count + chunk - 1) / chunk
    c = next_block(claims_inout, claim, env, c0, n_runs)
    while c < n_runs:
        for q in range(c * chunk, wp.min((c + 1) * chunk, i_count)):
            i = i_first + q
            f = corner_sum(env, i, v_start, corner_in, force_in[env, i])
            force_out[env, i] = vec3(S(0.0))
            if fixed[env, i] != 0:
                vel_out[env, i] = vec3(S(0.0))
            else:
                v = vel_out[env, i] + h * (f * inv_mass[i] + gravity)
                x, v = position_step(h, plane_point, plane_normal, friction, pos_out[env, i], v / (S(1.0) + h * alpha[i]))
                pos_out[env, i] = x
                vel_out[env, i] = v
        c = block_after(claims_inout, claim, env, n_runs)


@wp.kernel
def element_stress(
    # Model:
    tets: wp.array(dtype=wp.vec4i),
    dm_inv: wp.array(dtype=mat33),
    model: wp.array(dtype=wp.int32),
    mu: wp.array(dtype=S),
    lam: wp.array(dtype=S),
    # Data in:
    pos_in: wp.array2d(dtype=vec3),
    # Data out:
    F_out: wp.array2d(dtype=mat33),
    P_out: wp.array2d(dtype=mat33),
    psi_out: wp.array2d(dtype=S),
):
    """Deformation gradient, first Piola-Kirchhoff stress and energy density of every element."""
    env, e = wp.tid()
    F = ds_matrix(pos_in, env, tets[e]) * dm_inv[e]
    F_out[env, e] = F
    P_out[env, e] = stress(model[e], mu[e], lam[e], F)
    psi_out[env, e] = energy_density(model[e], mu[e], lam[e], F)
