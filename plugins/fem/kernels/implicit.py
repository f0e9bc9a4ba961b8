"""Backward Euler as the minimisation of the incremental potential (one substep, per env):

    E(x) = Σ m/(2h²)|x - x̂|² - m g·(x - xₙ) + α m/(2h)|x - xₙ|²
         + Σₑ Vₑ [Ψ(F(x)) + β/(2h) δF:D(Rₙ)[δF]],   x̂ = xₙ + h vₙ,  δF = Ds(x - xₙ) Dm⁻¹,

(α, β: Rayleigh damping; D the corotated linear differential at the rotation Rₙ of the substep's
start, so the damping term is a fixed convex quadratic), plus at each plane contact the lagged,
smoothed Coulomb friction potential of Incremental Potential Contact (Li et al. 2020):
μ λ f₀(|T(x - xₙ)|), λ the contact's normal force at the current Newton iterate (see
contact_friction). E is minimised by Newton iterations whose linear systems are solved by
(block-)Jacobi-preconditioned CG (matrix-free Hessian-vector products), each followed by a
backtracking line search on E. Every iteration count is fixed (the step is graph-captured); an env
whose residual fell below its tolerance is masked out on the device.

Per-env scalars live in one float64 buffer ``scal`` (n_envs, W) at the offsets of ``ScalarLayout``
in solver.py: E0[k], Et[k, t], rz[k, j], pAp[k, j], step[k]. A stage sums into per-block partial
sums ``red`` (blocks of RED_BLOCK vertices or elements, each summed in index order by one worker)
and ``finish_sum`` adds the blocks in order: the same bits for any number of workers. Elements do
not scatter: an element stage writes the nodal columns of V P Dm⁻ᵀ at its corners' positions in
the gather order and each vertex sums its contiguous range, in ascending element order
(``corner_sum``), so vertex and element ranges split over a
partition's workers with no race (docs/fem.md, "Threads").
"""

import warp as wp

wp.set_module_options({"enable_backward": False})   # nothing here is differentiated

# One source, two precisions: this file is imported as ``implicit`` (float32) and loaded a second time
# as ``implicit_f64`` (float64) by ``kernels.load("64")``; S, vec3 and mat33 follow the module name.
S = wp.float64 if __name__.endswith("_f64") else wp.float32
vec3 = wp.vec3d if S is wp.float64 else wp.vec3f
mat33 = wp.mat33d if S is wp.float64 else wp.mat33f

if __name__.endswith("_f64"):
    from .elastic_f64 import (
        MODEL_NEOHOOKEAN,
        RED_BLOCK,
        corner_sum,
        corotated_diff,
        damping_rotation,
        ds_matrix,
        ds_trial,
        energy_density,
        energy_density_rot,
        model_rotation,
        nh_hessian_cache,
        nh_projected_frame,
        store_corners,
        stress_diff_rot,
        stress_rot,
        zero_corners,
    )
else:
    from .elastic import (
        MODEL_NEOHOOKEAN,
        RED_BLOCK,
        corner_sum,
        corotated_diff,
        damping_rotation,
        ds_matrix,
        ds_trial,
        energy_density,
        energy_density_rot,
        model_rotation,
        nh_hessian_cache,
        nh_projected_frame,
        store_corners,
        stress_diff_rot,
        stress_rot,
        zero_corners,
    )


@wp.func
def cg_active(scal: wp.array2d(dtype=wp.float64), env: int, rz_k: int, rz0: int, j: int, cg_tol2: S,
              newton_tol2: S, k: int):
    """CG iteration j of Newton iteration k still runs for this env."""
    r0 = scal[env, rz_k]
    if r0 <= wp.float64(0.0):
        return False
    if k > 0 and r0 <= wp.float64(newton_tol2) * scal[env, rz0]:
        return False
    return scal[env, rz_k + j] > wp.float64(cg_tol2) * r0


@wp.kernel
def zero_scalars(
    # Data out:
    scal_out: wp.array2d(dtype=wp.float64),
):
    env, i = wp.tid()
    scal_out[env, i] = wp.float64(0.0)


@wp.kernel
def begin_substep(
    # Model:
    h: S,
    gravity: vec3,
    fixed: wp.array2d(dtype=wp.int32),
    plane_point: wp.array(dtype=vec3),
    plane_normal: wp.array(dtype=vec3),
    i_first: int,
    # Data in:
    vel_in: wp.array2d(dtype=vec3),
    # Data out:
    pos_out: wp.array2d(dtype=vec3),
    pos_n_out: wp.array2d(dtype=vec3),
    step_hat_out: wp.array2d(dtype=vec3),
    disp_out: wp.array2d(dtype=vec3),
    contact_n_out: wp.array2d(dtype=vec3),
    contact_lam_out: wp.array2d(dtype=S),
):
    """xₙ = x, x̂ = x + h v; the Newton start is x̂ (fixed vertices stay). The vertex terms of E and
    the velocity update use displacements, not positions: step_hat = x̂ - xₙ (h v, 0 at fixed
    vertices) and disp = x - x̂ (carried alongside x through the Newton steps). Differences of
    absolute float32 positions are quantised to ulp(|x|) (2.4e-7 m at 2 m, against a substep's
    gravity step h²g = 3.9e-7 m at h = 0.2 ms): the solve and v = (x - xₙ)/h would see that
    quantisation (a block falling from 2 m lost 5 % of its speed in 10 ms). A vertex whose free
    flight x̂ + h² g lies behind a plane becomes a contact: its start is projected onto the
    (deepest) plane and the solve keeps it there (its normal component is filtered out of the Newton
    directions, as in Baraff & Witkin's filtered CG) unless the gradient pulls it off
    (contact_friction releases it). The projection also applies when x̂ is still in front of the
    plane (by less than the substep's fall h²|g·n|): holding the normal coordinate of x̂ instead left
    a landed body hovering that gap (up to 4 mm at h = 20 ms) above the plane for good, with
    friction acting across it. Moving such a vertex down stretches its elements at the start
    iterate, so that its gradient there points off the plane whatever the load: contact_lam = 1
    marks these contacts, which contact_friction holds through the first Newton iteration (releasing
    them there made a resting block alternate between contact and free flight every substep)."""
    env, q = wp.tid()
    i = i_first + q
    x = pos_out[env, i]
    pos_n_out[env, i] = x
    xh = x + h * vel_in[env, i]
    if fixed[env, i] != 0:
        xh = x
    step_hat_out[env, i] = h * vel_in[env, i]
    if fixed[env, i] != 0:
        step_hat_out[env, i] = vec3(S(0.0))
    cn = vec3(S(0.0))
    depth = S(0.0)
    xf = xh + (h * h) * gravity
    if fixed[env, i] == 0:
        for k in range(plane_point.shape[0]):
            d = wp.dot(xf - plane_point[k], plane_normal[k])
            if d < depth:
                depth = d
                cn = plane_normal[k]
    contact_n_out[env, i] = cn
    contact_lam_out[env, i] = S(0.0)
    dx = vec3(S(0.0))
    if wp.dot(cn, cn) > S(0.0):
        dd = wp.dot(xh - xf, cn) + depth          # signed distance of x̂ to the plane
        if dd > S(0.0):
            contact_lam_out[env, i] = S(1.0)       # moved from in front: held at the first iteration
        dx = -dd * cn
    pos_out[env, i] = xh + dx
    disp_out[env, i] = dx


@wp.func
def filter_contact(v: vec3, n: vec3):
    """Remove the component along a contact normal (n = 0: no contact)."""
    return v - wp.dot(v, n) * n


@wp.kernel
def rotations_at_start(
    # Model:
    tets: wp.array(dtype=wp.vec4i),
    dm_inv: wp.array(dtype=mat33),
    model: wp.array(dtype=wp.int32),
    e_first: int,
    # Data in:
    pos_n_in: wp.array2d(dtype=vec3),
    # Data out:
    rot_out: wp.array2d(dtype=mat33),
):
    env, q = wp.tid()
    e = e_first + q
    rot_out[env, e] = damping_rotation(model[e], ds_matrix(pos_n_in, env, tets[e]) * dm_inv[e])


@wp.func
def vertex_energy(m: S, alpha: S, h: S, g: vec3, a: vec3, b: vec3):
    """Inertia, gravity and mass damping of one vertex at y, from a = y - x̂ and b = y - xₙ."""
    return m / (S(2.0) * h * h) * wp.dot(a, a) - m * wp.dot(g, b) + alpha * m / (S(2.0) * h) * wp.dot(b, b)


@wp.kernel
def gradient_vertices(
    # Model:
    mass: wp.array(dtype=S),
    alpha: wp.array(dtype=S),
    gravity: vec3,
    h: S,
    i_first: int,
    # Data in:
    step_hat_in: wp.array2d(dtype=vec3),
    disp_in: wp.array2d(dtype=vec3),
    # Data out:
    grad_out: wp.array2d(dtype=vec3),
    red_out: wp.array2d(dtype=wp.float64),
):
    """Inertia, gravity and mass-damping part of the gradient (overwrites) and of E0 (block sums)."""
    env, q = wp.tid()
    i = i_first + q
    m = mass[i]
    a = disp_in[env, i]
    b = step_hat_in[env, i] + a
    grad_out[env, i] = m / (h * h) * a - m * gravity + alpha[i] * m / h * b
    en = vertex_energy(m, alpha[i], h, gravity, a, b)
    wp.atomic_add(red_out, env, i / RED_BLOCK, wp.float64(en))


@wp.kernel
def gradient_elements(
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
    h: S,
    project: int,
    corner_slot: wp.array(dtype=wp.vec4i),
    e_first: int,
    # Data in:
    pos_in: wp.array2d(dtype=vec3),
    pos_n_in: wp.array2d(dtype=vec3),
    rot_n_in: wp.array2d(dtype=mat33),
    active_in: wp.array2d(dtype=wp.int32),
    # Data out:
    corner_out: wp.array2d(dtype=vec3),
    red_out: wp.array2d(dtype=wp.float64),
    hess_u_out: wp.array2d(dtype=mat33),
    hess_v_out: wp.array2d(dtype=mat33),
    hess_a_out: wp.array2d(dtype=mat33),
    hess_tf_out: wp.array2d(dtype=mat33),
):
    """Elastic and stiffness-damping part of the gradient (the nodal columns of V P Dm⁻ᵀ at the
    element's corners, gathered by the vertices: gather_gradient; zero for an inactive element) and
    of E0 (block sums). What this
    Newton iteration's Hessian products need is kept per element (one SVD per element): the rotation
    R (linear: I, corotated: polar), or for the Neo-Hookean F (project = 0) or its projected
    eigensystem U, Dm⁻¹V (so that the products need no dF), A⁺, twist/flip (project = 1)."""
    env, q = wp.tid()
    e = e_first + q
    if active_in[env, e] == 0:
        zero_corners(corner_out, env, corner_slot[e])
        return
    t = tets[e]
    Dinv = dm_inv[e]
    Ds = ds_matrix(pos_in, env, t)
    F = Ds * Dinv
    m = model[e]
    R = model_rotation(m, F)
    hess_v_out[env, e] = R
    if m == MODEL_NEOHOOKEAN:
        if project != 0:
            U, V, Ap, TF = nh_hessian_cache(mu[e], lam[e], F)
            hess_u_out[env, e] = U
            hess_v_out[env, e] = Dinv * V         # hessian_product: dF V = Ds(p) (Dm⁻¹ V)
            hess_a_out[env, e] = Ap
            hess_tf_out[env, e] = TF
        else:
            hess_u_out[env, e] = F
    P = stress_rot(m, mu[e], lam[e], F, R)
    psi = energy_density_rot(m, mu[e], lam[e], F, R)
    if beta[e] > S(0.0):
        dF = (Ds - ds_matrix(pos_n_in, env, t)) * Dinv
        D = corotated_diff(rot_n_in[env, e], mu_lin[e], lam_lin[e], dF)
        P = P + beta[e] / h * D
        psi = psi + S(0.5) * beta[e] / h * wp.ddot(dF, D)
    store_corners(corner_out, env, corner_slot[e], rest_vol[e] * P * wp.transpose(Dinv), S(1.0))
    wp.atomic_add(red_out, env, e / RED_BLOCK, wp.float64(rest_vol[e] * psi))


@wp.kernel
def gather_gradient(
    # Model:
    v_start: wp.array(dtype=wp.int32),
    i_first: int,
    # Data in:
    corner_in: wp.array2d(dtype=vec3),
    # Data out:
    grad_out: wp.array2d(dtype=vec3),
):
    """∇E at each vertex += its elements' nodal gradients (gradient_elements), in element order."""
    env, q = wp.tid()
    i = i_first + q
    grad_out[env, i] = corner_sum(env, i, v_start, corner_in, grad_out[env, i])


@wp.func
def friction_f0(y: S, c: S):
    """IPC's smoothed Coulomb potential per unit normal force (Li et al. 2020), c = ε_v h:
    f₀(y) = y for y >= c, else y²/c - y³/(3c²) + c/3 (C² at c), f₀' = f₁ = min(2y/c - y²/c², 1)."""
    if y >= c:
        return y
    return y * y / c - y * y * y / (S(3.0) * c * c) + c / S(3.0)


@wp.func
def friction_f1_over_y(y: S, c: S):
    """f₁(y)/y (finite at y = 0: 2/c)."""
    if y >= c:
        return S(1.0) / y
    return S(2.0) / c - y / (c * c)


@wp.func
def friction_hessian(y: S, n: vec3, c: S, scale: S):
    """The curvature used for the friction potential scale·f₀(|u|) on the tangent plane of n:
    scale·f₁(y)/y·T, T = I - nnᵀ (positive definite on the plane). Not the exact Hessian
    scale·[f₁'(y) ûûᵀ + f₁(y)/y (T - ûûᵀ)]: f₀(√t) is concave in t = |u|² (f₁(y)/y does not increase),
    so the quadratic with this curvature through the current u lies above f₀ everywhere
    (a majoriser, as in iteratively reweighted least squares). The Newton step then never jumps over
    the kink at u = 0, which the exact Hessian (zero curvature along û while sliding) does: one
    line-search step length for all the vertices of an env then stalled at 1/16 in a rocking body."""
    T = wp.identity(n=3, dtype=S) - wp.outer(n, n)
    return (scale * friction_f1_over_y(y, c)) * T


@wp.kernel
def contact_friction(
    # Model:
    friction: S,
    stick: S,
    first: int,
    i_first: int,
    # Data in:
    step_hat_in: wp.array2d(dtype=vec3),
    disp_in: wp.array2d(dtype=vec3),
    # Data out:
    grad_out: wp.array2d(dtype=vec3),
    contact_n_out: wp.array2d(dtype=vec3),
    contact_lam_out: wp.array2d(dtype=S),
    fric_h_out: wp.array2d(dtype=mat33),
    red_out: wp.array2d(dtype=wp.float64),
):
    """Contacts of Newton iteration k, once the gradient of the other terms is complete.
    A contact whose gradient points off the plane (the energy decreases by leaving) is released
    (at the first iteration, k = 0, not those begin_substep moved from in front of the plane:
    contact_lam = 1 there). Otherwise its normal force is λ = ∇E·n at this iterate: the multiplier
    of the constraint that holds it on the plane, carrying weight, inertia and the elastic load
    through the body (taking the vertex's own weight only made friction 4x too weak). λ is lagged:
    held fixed for this iteration's step and line search, recomputed at the next iterate (as in
    IPC). The friction potential μ λ f₀(|u|) of the tangential displacement over the substep
    u = T(x - xₙ) (T = I - nnᵀ; stick = ε_v h) adds its gradient μ λ f₁(|u|) û to ∇E, its value to
    E0 and its curvature block (friction_hessian) for the CG products and the preconditioner.
    Friction is tangential, so it does not change λ."""
    env, q = wp.tid()
    i = i_first + q
    cn = contact_n_out[env, i]
    g = grad_out[env, i]
    lam = wp.dot(g, cn)
    Hf = mat33(S(0.0))
    if lam <= S(0.0):
        if (first == 0 or contact_lam_out[env, i] <= S(0.0)) and wp.dot(cn, cn) > S(0.0):
            contact_n_out[env, i] = vec3(S(0.0))
        lam = S(0.0)
    elif friction > S(0.0):
        b = step_hat_in[env, i] + disp_in[env, i]
        u = b - wp.dot(b, cn) * cn
        y = wp.length(u)
        scale = friction * lam
        grad_out[env, i] = g + (scale * friction_f1_over_y(y, stick)) * u
        Hf = friction_hessian(y, cn, stick, scale)
        wp.atomic_add(red_out, env, i / RED_BLOCK, wp.float64(scale * friction_f0(y, stick)))
    contact_lam_out[env, i] = lam
    fric_h_out[env, i] = Hf


@wp.func
def precond_apply(m: S, alpha: S, h: S, diag_k: vec3, kscale: S, Hf: mat33, r: vec3):
    """Block-Jacobi: (diag(M/h² + αM/h + kscale·diag K_rest) + H_friction)⁻¹ r (the friction block
    is zero off contacts)."""
    dd = (m / (h * h) + alpha * m / h) * vec3(S(1.0)) + kscale * diag_k
    if wp.trace(Hf) > S(0.0):
        return wp.inverse(wp.diag(dd) + Hf) * r
    return vec3(r[0] / dd[0], r[1] / dd[1], r[2] / dd[2])


@wp.kernel
def cg_init(
    # Model:
    mass: wp.array(dtype=S),
    alpha: wp.array(dtype=S),
    diag_k: wp.array(dtype=vec3),
    kscale: S,
    h: S,
    fixed: wp.array2d(dtype=wp.int32),
    i_first: int,
    # Data in:
    grad_in: wp.array2d(dtype=vec3),
    contact_n_in: wp.array2d(dtype=vec3),
    fric_h_in: wp.array2d(dtype=mat33),
    # Data out:
    r_out: wp.array2d(dtype=vec3),
    z_out: wp.array2d(dtype=vec3),
    p_out: wp.array2d(dtype=vec3),
    d_out: wp.array2d(dtype=vec3),
    ap_out: wp.array2d(dtype=vec3),
    red_out: wp.array2d(dtype=wp.float64),
):
    """r = -g (0 at fixed vertices, tangential at contacts), z = P⁻¹r, p = z, d = 0; rz[k, 0] = r·z."""
    env, q = wp.tid()
    i = i_first + q
    cn = contact_n_in[env, i]
    r = filter_contact(-grad_in[env, i], cn)
    if fixed[env, i] != 0:
        r = vec3(S(0.0))
    z = filter_contact(precond_apply(mass[i], alpha[i], h, diag_k[i], kscale, fric_h_in[env, i], r), cn)
    r_out[env, i] = r
    z_out[env, i] = z
    p_out[env, i] = z
    d_out[env, i] = vec3(S(0.0))
    ap_out[env, i] = vec3(S(0.0))
    wp.atomic_add(red_out, env, i / RED_BLOCK, wp.float64(wp.dot(r, z)))


@wp.kernel
def hessian_product(
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
    h: S,
    k: int,
    j: int,
    rz_k: int,
    rz0: int,
    cg_tol2: S,
    newton_tol2: S,
    project: int,
    corner_slot: wp.array(dtype=wp.vec4i),
    e_first: int,
    # Data in:
    hess_u_in: wp.array2d(dtype=mat33),
    hess_v_in: wp.array2d(dtype=mat33),
    hess_a_in: wp.array2d(dtype=mat33),
    hess_tf_in: wp.array2d(dtype=mat33),
    rot_n_in: wp.array2d(dtype=mat33),
    active_in: wp.array2d(dtype=wp.int32),
    p_in: wp.array2d(dtype=vec3),
    scal_in: wp.array2d(dtype=wp.float64),
    # Data out:
    corner_out: wp.array2d(dtype=vec3),
):
    """(K(x) + β/h K_rot) p of each active element: the nodal columns of V dP Dm⁻ᵀ (element data
    from the gradient pass) at its corners, gathered into Ap by cg_curvature (zero for an inactive
    element)."""
    env, q = wp.tid()
    e = e_first + q
    if not cg_active(scal_in, env, rz_k, rz0, j, cg_tol2, newton_tol2, k):
        return
    if active_in[env, e] == 0:
        zero_corners(corner_out, env, corner_slot[e])
        return
    t = tets[e]
    Dinv = dm_inv[e]
    Ds = ds_matrix(p_in, env, t)
    m = model[e]
    H = mat33()
    if m == MODEL_NEOHOOKEAN and project != 0:
        # V dP Dm⁻ᵀ = V U [Ĥ(Uᵀ dF V)] Vᵀ Dm⁻ᵀ with dF V = Ds W, Vᵀ Dm⁻ᵀ = Wᵀ, W = Dm⁻¹ V (cached):
        # dF itself is not needed
        U = hess_u_in[env, e]
        W = hess_v_in[env, e]
        H = rest_vol[e] * (U * nh_projected_frame(hess_a_in[env, e], hess_tf_in[env, e], wp.transpose(U) * Ds * W)
                           * wp.transpose(W))
        if beta[e] > S(0.0):
            dF = Ds * Dinv
            H = H + rest_vol[e] * (beta[e] / h * corotated_diff(rot_n_in[env, e], mu_lin[e], lam_lin[e], dF)) \
                * wp.transpose(Dinv)
    else:
        dF = Ds * Dinv
        dP = stress_diff_rot(m, mu[e], lam[e], hess_u_in[env, e], hess_v_in[env, e], dF)
        if beta[e] > S(0.0):
            dP = dP + beta[e] / h * corotated_diff(rot_n_in[env, e], mu_lin[e], lam_lin[e], dF)
        H = rest_vol[e] * dP * wp.transpose(Dinv)
    store_corners(corner_out, env, corner_slot[e], H, S(1.0))


@wp.kernel
def cg_curvature(
    # Model:
    mass: wp.array(dtype=S),
    alpha: wp.array(dtype=S),
    h: S,
    fixed: wp.array2d(dtype=wp.int32),
    k: int,
    j: int,
    rz_k: int,
    rz0: int,
    cg_tol2: S,
    newton_tol2: S,
    v_start: wp.array(dtype=wp.int32),
    i_first: int,
    # Data in:
    p_in: wp.array2d(dtype=vec3),
    contact_n_in: wp.array2d(dtype=vec3),
    fric_h_in: wp.array2d(dtype=mat33),
    corner_in: wp.array2d(dtype=vec3),
    scal_in: wp.array2d(dtype=wp.float64),
    # Data out:
    ap_out: wp.array2d(dtype=vec3),
    red_out: wp.array2d(dtype=wp.float64),
):
    """Ap += (elements' K p, gathered) + (M/h² + αM/h + H_friction) p, filtered (0 at fixed
    vertices, tangential at contacts); pAp[k, j] (block sums)."""
    env, q = wp.tid()
    i = i_first + q
    if not cg_active(scal_in, env, rz_k, rz0, j, cg_tol2, newton_tol2, k):
        return
    p = p_in[env, i]
    m = mass[i]
    ap = corner_sum(env, i, v_start, corner_in, ap_out[env, i])
    ap = ap + (m / (h * h) + alpha[i] * m / h) * p + fric_h_in[env, i] * p
    ap = filter_contact(ap, contact_n_in[env, i])
    if fixed[env, i] != 0:
        ap = vec3(S(0.0))
    ap_out[env, i] = ap
    wp.atomic_add(red_out, env, i / RED_BLOCK, wp.float64(wp.dot(p, ap)))


@wp.kernel
def cg_update(
    # Model:
    mass: wp.array(dtype=S),
    alpha: wp.array(dtype=S),
    diag_k: wp.array(dtype=vec3),
    kscale: S,
    h: S,
    k: int,
    j: int,
    rz_k: int,
    rz0: int,
    pap_k: int,
    cg_tol2: S,
    newton_tol2: S,
    i_first: int,
    # Data in:
    p_in: wp.array2d(dtype=vec3),
    ap_in: wp.array2d(dtype=vec3),
    contact_n_in: wp.array2d(dtype=vec3),
    fric_h_in: wp.array2d(dtype=mat33),
    scal_in: wp.array2d(dtype=wp.float64),
    # Data out:
    d_out: wp.array2d(dtype=vec3),
    r_out: wp.array2d(dtype=vec3),
    z_out: wp.array2d(dtype=vec3),
    red_out: wp.array2d(dtype=wp.float64),
):
    """d += a p, r -= a Ap, z = P⁻¹ r, rz[k, j+1] = r·z with a = rz/pAp. Non-positive curvature
    ends this env's CG (at j = 0 the preconditioned steepest-descent direction is kept)."""
    env, q = wp.tid()
    i = i_first + q
    if not cg_active(scal_in, env, rz_k, rz0, j, cg_tol2, newton_tol2, k):
        return
    pap = scal_in[env, pap_k + j]
    if pap <= wp.float64(0.0):
        if j == 0:
            d_out[env, i] = p_in[env, i]
        return
    a = S(scal_in[env, rz_k + j] / pap)
    d_out[env, i] = d_out[env, i] + a * p_in[env, i]
    r = r_out[env, i] - a * ap_in[env, i]
    cn = contact_n_in[env, i]
    z = filter_contact(precond_apply(mass[i], alpha[i], h, diag_k[i], kscale, fric_h_in[env, i], r), cn)
    r_out[env, i] = r
    z_out[env, i] = z
    wp.atomic_add(red_out, env, i / RED_BLOCK, wp.float64(wp.dot(r, z)))


@wp.kernel
def cg_direction(
    # Model:
    k: int,
    j: int,
    rz_k: int,
    rz0: int,
    cg_tol2: S,
    newton_tol2: S,
    i_first: int,
    # Data in:
    z_in: wp.array2d(dtype=vec3),
    scal_in: wp.array2d(dtype=wp.float64),
    # Data out:
    p_out: wp.array2d(dtype=vec3),
    ap_out: wp.array2d(dtype=vec3),
):
    """p = z + (rz[j+1]/rz[j]) p for envs whose CG continues; Ap = 0."""
    env, q = wp.tid()
    i = i_first + q
    if not cg_active(scal_in, env, rz_k, rz0, j + 1, cg_tol2, newton_tol2, k):
        return
    b = S(scal_in[env, rz_k + j + 1] / scal_in[env, rz_k + j])
    p_out[env, i] = z_in[env, i] + b * p_out[env, i]
    ap_out[env, i] = vec3(S(0.0))


@wp.kernel
def trial_energy_vertices(
    # Model:
    mass: wp.array(dtype=S),
    alpha: wp.array(dtype=S),
    gravity: vec3,
    h: S,
    friction: S,
    stick: S,
    s: S,
    step_k: int,
    i_first: int,
    # Data in:
    d_in: wp.array2d(dtype=vec3),
    step_hat_in: wp.array2d(dtype=vec3),
    disp_in: wp.array2d(dtype=vec3),
    contact_n_in: wp.array2d(dtype=vec3),
    contact_lam_in: wp.array2d(dtype=S),
    scal_in: wp.array2d(dtype=wp.float64),
    # Data out:
    red_out: wp.array2d(dtype=wp.float64),
):
    """Vertex terms of E at x + s d: inertia, gravity, mass damping and the contact's friction
    potential μ λ f₀(|T(x - xₙ)|) with this iteration's λ (contact_friction)."""
    env, q = wp.tid()
    i = i_first + q
    if scal_in[env, step_k] > wp.float64(0.0):
        return
    a = disp_in[env, i] + s * d_in[env, i]
    b = step_hat_in[env, i] + a
    en = vertex_energy(mass[i], alpha[i], h, gravity, a, b)
    lam = contact_lam_in[env, i]
    if lam > S(0.0) and friction > S(0.0):
        cn = contact_n_in[env, i]
        en = en + friction * lam * friction_f0(wp.length(b - wp.dot(b, cn) * cn), stick)
    wp.atomic_add(red_out, env, i / RED_BLOCK, wp.float64(en))


@wp.kernel
def trial_energy_elements(
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
    h: S,
    s: S,
    step_k: int,
    e_first: int,
    # Data in:
    pos_in: wp.array2d(dtype=vec3),
    d_in: wp.array2d(dtype=vec3),
    pos_n_in: wp.array2d(dtype=vec3),
    rot_n_in: wp.array2d(dtype=mat33),
    active_in: wp.array2d(dtype=wp.int32),
    scal_in: wp.array2d(dtype=wp.float64),
    # Data out:
    red_out: wp.array2d(dtype=wp.float64),
):
    """Element terms of E at x + s d (block sums)."""
    env, q = wp.tid()
    e = e_first + q
    if active_in[env, e] == 0:
        return
    if scal_in[env, step_k] > wp.float64(0.0):
        return
    t = tets[e]
    Dinv = dm_inv[e]
    Ds = ds_trial(pos_in, d_in, s, env, t)
    F = Ds * Dinv
    m = model[e]
    psi = energy_density(m, mu[e], lam[e], F)
    if beta[e] > S(0.0):
        dF = (Ds - ds_matrix(pos_n_in, env, t)) * Dinv
        psi = psi + S(0.5) * beta[e] / h * wp.ddot(dF, corotated_diff(rot_n_in[env, e], mu_lin[e], lam_lin[e], dF))
    wp.atomic_add(red_out, env, e / RED_BLOCK, wp.float64(rest_vol[e] * psi))


@wp.kernel
def finish_sum(
    # Model:
    slot: int,
    # Data out:
    red_out: wp.array2d(dtype=wp.float64),
    scal_out: wp.array2d(dtype=wp.float64),
):
    """scal[slot] += the block sums in block order; the blocks are cleared for the next sum. One
    thread per env, on the partition's thread, after the stage that filled the blocks."""
    env = wp.tid()
    acc = scal_out[env, slot]
    for b in range(red_out.shape[1]):
        acc += red_out[env, b]
        red_out[env, b] = wp.float64(0.0)
    scal_out[env, slot] = acc


@wp.kernel
def line_search_accept(
    # Model:
    s: S,
    e0: int,
    et: int,
    step_k: int,
    # Data out:
    scal_out: wp.array2d(dtype=wp.float64),
):
    """Accept the first trial step whose energy does not exceed E0."""
    env = wp.tid()
    if scal_out[env, step_k] > wp.float64(0.0):
        return
    if scal_out[env, et] <= scal_out[env, e0]:
        scal_out[env, step_k] = wp.float64(s)


@wp.kernel
def apply_step(
    # Model:
    step_k: int,
    i_first: int,
    # Data in:
    d_in: wp.array2d(dtype=vec3),
    scal_in: wp.array2d(dtype=wp.float64),
    # Data out:
    pos_out: wp.array2d(dtype=vec3),
    disp_out: wp.array2d(dtype=vec3),
):
    env, q = wp.tid()
    i = i_first + q
    s = S(scal_in[env, step_k])
    if s > S(0.0):
        pos_out[env, i] = pos_out[env, i] + s * d_in[env, i]
        disp_out[env, i] = disp_out[env, i] + s * d_in[env, i]


@wp.kernel
def end_substep(
    # Model:
    h: S,
    fixed: wp.array2d(dtype=wp.int32),
    i_first: int,
    # Data in:
    disp_in: wp.array2d(dtype=vec3),
    # Data out:
    vel_out: wp.array2d(dtype=vec3),
):
    """v = (x - xₙ)/h, formed as vₙ + (x - x̂)/h from the accumulated displacement disp = x - x̂:
    equal in exact arithmetic, but (x - xₙ)/h carries the rounding of x (½ ulp of |x| per substep,
    ulp/(2h) in velocity: 6e-4 m/s at 2 m with h = 0.2 ms, a 5 % error in a 10 ms free fall);
    0 at fixed vertices. vel_out holds vₙ on entry."""
    env, q = wp.tid()
    i = i_first + q
    v = vel_out[env, i] + disp_in[env, i] / h
    if fixed[env, i] != 0:
        v = vec3(S(0.0))
    vel_out[env, i] = v
