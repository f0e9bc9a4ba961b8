"""Particle <-> grid transfers of MLS-MPM with APIC (Hu et al. 2018), quadratic B-splines.

P2G: F <- (I + h C) F, plastic return mapping, Kirchhoff stress τ, then scatter
    m_i += w m_p,  (m v)_i += w (m_p v_p + (m_p C_p − h V_p D⁻¹ τ)(x_i − x_p)),  D⁻¹ = 4/dx².
G2P: v_p = Σ w v_i,  C_p = D⁻¹ Σ w v_i (x_i − x_p)ᵀ,  x_p += h v_p.
Launch grids are (n_envs, n_particles); every env has its own grid rows, so envs never interact.
The scatter uses atomics: on CPU a launch runs on one thread, so sums are in a fixed order.
"""

import warp as wp

from .constitutive import LIQUID, SAND, SNOW, diag3, kirchhoff, project_sigma


@wp.func
def base_and_fx(x: wp.vec3, lo: wp.vec3, inv_dx: float):
    g = (x - lo) * inv_dx
    b = wp.vec3i(int(wp.floor(g[0] - 0.5)), int(wp.floor(g[1] - 0.5)), int(wp.floor(g[2] - 0.5)))
    return b, g - wp.vec3(float(b[0]), float(b[1]), float(b[2]))


@wp.func
def bspline_w(f: float, k: int):
    """Quadratic B-spline weight of node k ∈ {0,1,2} for the offset f ∈ [0.5, 1.5) to node 0."""
    if k == 0:
        return 0.5 * (1.5 - f) * (1.5 - f)
    if k == 1:
        return 0.75 - (f - 1.0) * (f - 1.0)
    return 0.5 * (f - 0.5) * (f - 0.5)


@wp.kernel
def p2g(
    # Model:
    p_type: wp.array(dtype=int),
    p_mu: wp.array(dtype=float),
    p_lam: wp.array(dtype=float),
    p_par: wp.array(dtype=wp.vec4),
    p_mass: wp.array(dtype=float),
    p_vol: wp.array(dtype=float),
    lo: wp.vec3,
    inv_dx: float,
    dx: float,
    ny: int,
    nz: int,
    h: float,
    # Data in:
    pos_in: wp.array2d(dtype=wp.vec3),
    vel_in: wp.array2d(dtype=wp.vec3),
    C_in: wp.array2d(dtype=wp.mat33),
    active_in: wp.array2d(dtype=wp.int32),
    # Data out:
    F_out: wp.array2d(dtype=wp.mat33),
    Jp_out: wp.array2d(dtype=float),
    grid_mv_out: wp.array2d(dtype=wp.vec3),
    grid_m_out: wp.array2d(dtype=float),
):
    env, p = wp.tid()
    if active_in[env, p] == 0:
        return
    x = pos_in[env, p]
    C = C_in[env, p]
    I = wp.identity(n=3, dtype=float)
    F = (I + h * C) * F_out[env, p]
    typ = p_type[p]
    mu = p_mu[p]
    lam = p_lam[p]
    par = p_par[p]
    Jp = Jp_out[env, p]
    tau = wp.mat33()
    if typ == LIQUID:
        J = wp.determinant(F)
        c = wp.sign(J) * wp.pow(wp.abs(J), 1.0 / 3.0)
        F = wp.mat33(c, 0.0, 0.0, 0.0, c, 0.0, 0.0, 0.0, c)
        tau = lam * J * (J - 1.0) * I
    else:
        U = wp.mat33()
        sig = wp.vec3()
        V = wp.mat33()
        wp.svd3(F, U, sig, V)
        sig_e = project_sigma(typ, mu, lam, par, sig)
        if typ == SNOW or typ == SAND:
            # plastic volume ratio: the volume the return mapping moved out of the elastic part
            Jp = Jp * wp.max(wp.abs(sig[0] * sig[1] * sig[2]), 1.0e-12) / wp.max(
                wp.abs(sig_e[0] * sig_e[1] * sig_e[2]), 1.0e-12)
        if typ == SNOW:
            hard = wp.exp(par[2] * (1.0 - Jp))
            mu = mu * hard
            lam = lam * hard
        F = U * diag3(sig_e) * wp.transpose(V)
        tau = kirchhoff(typ, mu, lam, U, sig_e, V)
    F_out[env, p] = F
    Jp_out[env, p] = Jp
    m = p_mass[p]
    affine = (-h * p_vol[p] * 4.0 * inv_dx * inv_dx) * tau + m * C
    mv = m * vel_in[env, p]
    b, fx = base_and_fx(x, lo, inv_dx)
    for i in range(3):
        wi = bspline_w(fx[0], i)
        for j in range(3):
            wij = wi * bspline_w(fx[1], j)
            for k in range(3):
                w = wij * bspline_w(fx[2], k)
                dpos = (wp.vec3(float(i), float(j), float(k)) - fx) * dx
                node = ((b[0] + i) * ny + (b[1] + j)) * nz + (b[2] + k)
                wp.atomic_add(grid_mv_out, env, node, w * (mv + affine * dpos))
                wp.atomic_add(grid_m_out, env, node, w * m)


@wp.kernel
def g2p(
    # Model:
    lo: wp.vec3,
    inv_dx: float,
    dx: float,
    ny: int,
    nz: int,
    h: float,
    x_min: wp.vec3,
    x_max: wp.vec3,
    # Data in:
    grid_v_in: wp.array2d(dtype=wp.vec3),
    active_in: wp.array2d(dtype=wp.int32),
    # Data out:
    pos_out: wp.array2d(dtype=wp.vec3),
    vel_out: wp.array2d(dtype=wp.vec3),
    C_out: wp.array2d(dtype=wp.mat33),
    flags_out: wp.array(dtype=wp.int32),
    vmax_out: wp.array(dtype=float),
):
    env, p = wp.tid()
    if active_in[env, p] == 0:
        return
    x = pos_out[env, p]
    b, fx = base_and_fx(x, lo, inv_dx)
    v = wp.vec3()
    B = wp.mat33()
    for i in range(3):
        wi = bspline_w(fx[0], i)
        for j in range(3):
            wij = wi * bspline_w(fx[1], j)
            for k in range(3):
                w = wij * bspline_w(fx[2], k)
                dpos = (wp.vec3(float(i), float(j), float(k)) - fx) * dx
                node = ((b[0] + i) * ny + (b[1] + j)) * nz + (b[2] + k)
                vi = grid_v_in[env, node]
                v = v + w * vi
                B = B + w * wp.outer(vi, dpos)
    xn = x + h * v
    xc = wp.vec3(wp.clamp(xn[0], x_min[0], x_max[0]), wp.clamp(xn[1], x_min[1], x_max[1]),
                 wp.clamp(xn[2], x_min[2], x_max[2]))
    if wp.length_sq(xc - xn) > 0.0:
        flags_out[env] = 1           # a particle reached the edge of the grid: clamped
    pos_out[env, p] = xc
    vel_out[env, p] = v
    C_out[env, p] = (4.0 * inv_dx * inv_dx) * B
    wp.atomic_max(vmax_out, env, wp.length(v))
