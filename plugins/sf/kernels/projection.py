"""Pressure projection: the discrete Poisson problem, a multigrid V-cycle and masked PCG steps.

Unknown p (m²/s: pressure·h/ρ) on the fluid cells of each env; the update u ← u - ∇p on free faces
makes div u = 0. With A = -Δ (7-point, 1/dx²): for a fluid cell, every neighbour across a free face
adds 1 to the diagonal and -1 off it; a fixed face (wall, obstacle) adds nothing (Neumann); a face on
an open domain face adds 1 to the diagonal (p = 0 outside, Dirichlet). Then A p = b with
b = -div u*, and the residual r = b - A p equals -div u after the update: the convergence test
max|r| <= tol over fluid cells is the divergence test itself.

Multigrid (McAdams, Sifakis, Teran 2010, simplified): cell-centred levels of halved resolution; a
coarse cell is fluid when any of its (up to 8) children is; the coarse operator is rediscretized
(spacing 2^l dx); restriction is the sum of the children's residuals over 8, prolongation copies a
coarse value to its children (so the correction is symmetric), red-black Gauss-Seidel smoothing
(red then black before the coarse correction, black then red after: the V-cycle is a symmetric
preconditioner). Reductions are two-stage (per env and x-slab, then per env) in a fixed order:
deterministic on every device; dot products and means are summed in float64 (with float32 sums
the CG lost its last digits and diverged below ~1e-6 of the initial residual). Every iteration
kernel skips envs whose ``done`` flag is set.
"""

from typing import Any

import warp as wp

wp.set_module_options({"enable_backward": False})   # nothing here is differentiated (Capabilities: differentiable=False)


@wp.func
def lap_parts(x: wp.array4d(dtype=Any), ct: wp.array4d(dtype=wp.int32), env: int, i: int, j: int, k: int,
              open_lo: wp.vec3i, open_hi: wp.vec3i):
    """(number of non-Neumann neighbours, sum of the fluid neighbours' values) of cell (i, j, k)."""
    nx = ct.shape[1]
    ny = ct.shape[2]
    nz = ct.shape[3]
    diag = int(0)
    off = x[env, i, j, k] * type(x[env, i, j, k])(0.0)
    if i > 0:
        if ct[env, i - 1, j, k] != 0:
            diag = diag + 1
            off = off + x[env, i - 1, j, k]
    elif open_lo[0] != 0:
        diag = diag + 1
    if i < nx - 1:
        if ct[env, i + 1, j, k] != 0:
            diag = diag + 1
            off = off + x[env, i + 1, j, k]
    elif open_hi[0] != 0:
        diag = diag + 1
    if j > 0:
        if ct[env, i, j - 1, k] != 0:
            diag = diag + 1
            off = off + x[env, i, j - 1, k]
    elif open_lo[1] != 0:
        diag = diag + 1
    if j < ny - 1:
        if ct[env, i, j + 1, k] != 0:
            diag = diag + 1
            off = off + x[env, i, j + 1, k]
    elif open_hi[1] != 0:
        diag = diag + 1
    if k > 0:
        if ct[env, i, j, k - 1] != 0:
            diag = diag + 1
            off = off + x[env, i, j, k - 1]
    elif open_lo[2] != 0:
        diag = diag + 1
    if k < nz - 1:
        if ct[env, i, j, k + 1] != 0:
            diag = diag + 1
            off = off + x[env, i, j, k + 1]
    elif open_hi[2] != 0:
        diag = diag + 1
    return diag, off


# -- cell types ------------------------------------------------------------------------------------
@wp.kernel
def fluid_types(
    # Data in:
    solid_in: wp.array4d(dtype=wp.int32),
    # Data out:
    ct_out: wp.array4d(dtype=wp.int32),
):
    env, i, j, k = wp.tid()
    ct_out[env, i, j, k] = 1 - solid_in[env, i, j, k]


@wp.kernel
def coarsen_types(
    # Data in:
    ct_in: wp.array4d(dtype=wp.int32),
    # Data out:
    ct_out: wp.array4d(dtype=wp.int32),
):
    """A coarse cell is fluid when any of its children is."""
    env, i, j, k = wp.tid()
    c = int(0)
    for a in range(2):
        for b in range(2):
            for e in range(2):
                fi = 2 * i + a
                fj = 2 * j + b
                fk = 2 * k + e
                if fi < ct_in.shape[1] and fj < ct_in.shape[2] and fk < ct_in.shape[3]:
                    c = c | ct_in[env, fi, fj, fk]
    ct_out[env, i, j, k] = c


# -- divergence and gradient -----------------------------------------------------------------------
@wp.kernel
def divergence(
    # Model:
    inv_dx: Any,
    scale: Any,
    # Data in:
    u_in: wp.array4d(dtype=Any),
    v_in: wp.array4d(dtype=Any),
    w_in: wp.array4d(dtype=Any),
    ct_in: wp.array4d(dtype=wp.int32),
    # Data out:
    out: wp.array4d(dtype=Any),
):
    """out = scale · div u on fluid cells, 0 elsewhere (scale -1: the Poisson right-hand side)."""
    env, i, j, k = wp.tid()
    if ct_in[env, i, j, k] == 0:
        out[env, i, j, k] = inv_dx * type(inv_dx)(0.0)
        return
    d = (u_in[env, i + 1, j, k] - u_in[env, i, j, k]) + (v_in[env, i, j + 1, k] - v_in[env, i, j, k]) \
        + (w_in[env, i, j, k + 1] - w_in[env, i, j, k])
    out[env, i, j, k] = scale * d * inv_dx


@wp.kernel
def subtract_gradient(
    # Model:
    axis: int,
    inv_dx: Any,
    open_lo: wp.vec3i,
    open_hi: wp.vec3i,
    # Data in:
    p_in: wp.array4d(dtype=Any),
    fixed_in: wp.array4d(dtype=wp.int32),
    # Data in/out:
    vel: wp.array4d(dtype=Any),
):
    """vel -= (p_b - p_a)/dx on free faces (component ``axis``); p = 0 outside an open face."""
    env, i, j, k = wp.tid()
    if fixed_in[env, i, j, k] != 0:
        return
    n = p_in.shape[1 + axis]
    idx = i
    ai = i - 1
    aj = j
    ak = k
    if axis == 1:
        idx = j
        ai = i
        aj = j - 1
    if axis == 2:
        idx = k
        ai = i
        ak = k - 1
    zero = inv_dx * type(inv_dx)(0.0)
    pa = zero
    pb = zero
    if idx > 0:
        pa = p_in[env, ai, aj, ak]
    if idx < n:
        pb = p_in[env, i, j, k]
    vel[env, i, j, k] = vel[env, i, j, k] - (pb - pa) * inv_dx


# -- operator, smoother, transfers -----------------------------------------------------------------
@wp.kernel
def residual(
    # Model:
    open_lo: wp.vec3i,
    open_hi: wp.vec3i,
    inv_dx2: Any,
    # Data in:
    done_in: wp.array(dtype=wp.int32),
    b_in: wp.array4d(dtype=Any),
    x_in: wp.array4d(dtype=Any),
    ct_in: wp.array4d(dtype=wp.int32),
    # Data out:
    r_out: wp.array4d(dtype=Any),
):
    """r = b - A x on fluid cells (0 elsewhere)."""
    env, i, j, k = wp.tid()
    if done_in[env] != 0:
        return
    if ct_in[env, i, j, k] == 0:
        r_out[env, i, j, k] = inv_dx2 * type(inv_dx2)(0.0)
        return
    diag, off = lap_parts(x_in, ct_in, env, i, j, k, open_lo, open_hi)
    r_out[env, i, j, k] = b_in[env, i, j, k] - (type(inv_dx2)(diag) * x_in[env, i, j, k] - off) * inv_dx2


@wp.kernel
def apply_a(
    # Model:
    open_lo: wp.vec3i,
    open_hi: wp.vec3i,
    inv_dx2: Any,
    # Data in:
    done_in: wp.array(dtype=wp.int32),
    x_in: wp.array4d(dtype=Any),
    ct_in: wp.array4d(dtype=wp.int32),
    # Data out:
    q_out: wp.array4d(dtype=Any),
):
    """q = A x on fluid cells (0 elsewhere)."""
    env, i, j, k = wp.tid()
    if done_in[env] != 0:
        return
    if ct_in[env, i, j, k] == 0:
        q_out[env, i, j, k] = inv_dx2 * type(inv_dx2)(0.0)
        return
    diag, off = lap_parts(x_in, ct_in, env, i, j, k, open_lo, open_hi)
    q_out[env, i, j, k] = (type(inv_dx2)(diag) * x_in[env, i, j, k] - off) * inv_dx2


@wp.kernel
def rbgs(
    # Model:
    color: int,
    open_lo: wp.vec3i,
    open_hi: wp.vec3i,
    inv_dx2: Any,
    # Data in:
    done_in: wp.array(dtype=wp.int32),
    b_in: wp.array4d(dtype=Any),
    ct_in: wp.array4d(dtype=wp.int32),
    # Data in/out:
    x: wp.array4d(dtype=Any),
):
    """One Gauss-Seidel half sweep over the cells with (i + j + k) % 2 == color; launched over
    (n_envs, nx, ny, ceil(nz/2)): thread kh is cell k = 2·kh + (i + j + color) % 2."""
    env, i, j, kh = wp.tid()
    if done_in[env] != 0:
        return
    k = 2 * kh + (i + j + color) % 2
    if k >= ct_in.shape[3]:
        return
    if ct_in[env, i, j, k] == 0:
        return
    diag, off = lap_parts(x, ct_in, env, i, j, k, open_lo, open_hi)
    if diag > 0:
        x[env, i, j, k] = (b_in[env, i, j, k] / inv_dx2 + off) / type(inv_dx2)(diag)


@wp.kernel
def jacobi_precond(
    # Model:
    open_lo: wp.vec3i,
    open_hi: wp.vec3i,
    inv_dx2: Any,
    # Data in:
    done_in: wp.array(dtype=wp.int32),
    r_in: wp.array4d(dtype=Any),
    ct_in: wp.array4d(dtype=wp.int32),
    # Data out:
    z_out: wp.array4d(dtype=Any),
):
    """z = D⁻¹ r (the diagonal preconditioner of pressure_solver="pcg")."""
    env, i, j, k = wp.tid()
    if done_in[env] != 0:
        return
    zero = inv_dx2 * type(inv_dx2)(0.0)
    z_out[env, i, j, k] = zero
    if ct_in[env, i, j, k] != 0:
        diag, off = lap_parts(r_in, ct_in, env, i, j, k, open_lo, open_hi)
        if diag > 0:
            z_out[env, i, j, k] = r_in[env, i, j, k] / (type(inv_dx2)(diag) * inv_dx2)


@wp.kernel
def restrict(
    # Data in:
    done_in: wp.array(dtype=wp.int32),
    r_in: wp.array4d(dtype=Any),
    # Data out:
    b_out: wp.array4d(dtype=Any),
):
    """Coarse right-hand side: the sum of the children's residuals over 8."""
    env, i, j, k = wp.tid()
    if done_in[env] != 0:
        return
    s = r_in[env, 0, 0, 0] * type(r_in[env, 0, 0, 0])(0.0)
    for a in range(2):
        for b in range(2):
            for e in range(2):
                fi = 2 * i + a
                fj = 2 * j + b
                fk = 2 * k + e
                if fi < r_in.shape[1] and fj < r_in.shape[2] and fk < r_in.shape[3]:
                    s = s + r_in[env, fi, fj, fk]
    b_out[env, i, j, k] = s * type(s)(0.125)


@wp.kernel
def prolong_add(
    # Data in:
    done_in: wp.array(dtype=wp.int32),
    xc_in: wp.array4d(dtype=Any),
    ct_in: wp.array4d(dtype=wp.int32),
    # Data in/out:
    x: wp.array4d(dtype=Any),
):
    """x += the parent's coarse value, on fluid cells."""
    env, i, j, k = wp.tid()
    if done_in[env] != 0:
        return
    if ct_in[env, i, j, k] != 0:
        x[env, i, j, k] = x[env, i, j, k] + xc_in[env, i / 2, j / 2, k / 2]


@wp.kernel
def zero_cells(
    # Data in:
    done_in: wp.array(dtype=wp.int32),
    # Data out:
    x_out: wp.array4d(dtype=Any),
):
    env, i, j, k = wp.tid()
    if done_in[env] != 0:
        return
    x_out[env, i, j, k] = type(x_out[env, i, j, k])(0.0)


# -- reductions (two-stage, fixed order) -------------------------------------------------------------
@wp.kernel
def partial_dot(
    # Data in:
    done_in: wp.array(dtype=wp.int32),
    a_in: wp.array4d(dtype=Any),
    b_in: wp.array4d(dtype=Any),
    # Data out:
    out: wp.array2d(dtype=wp.float64),
):
    """out[env, i] = Σ_jk a·b over the x-slab i (non-fluid cells hold 0 in a or b), summed in
    float64 whatever the field precision (float32 sums lose the CG's last digits)."""
    env, i = wp.tid()
    if done_in[env] != 0:
        return
    s = wp.float64(0.0)
    for j in range(a_in.shape[2]):
        for k in range(a_in.shape[3]):
            s = s + wp.float64(a_in[env, i, j, k]) * wp.float64(b_in[env, i, j, k])
    out[env, i] = s


@wp.kernel
def partial_absmax(
    # Data in:
    done_in: wp.array(dtype=wp.int32),
    a_in: wp.array4d(dtype=Any),
    # Data out:
    out: wp.array2d(dtype=Any),
):
    env, i = wp.tid()
    if done_in[env] != 0:
        return
    s = a_in[env, i, 0, 0] * type(a_in[env, i, 0, 0])(0.0)
    for j in range(a_in.shape[2]):
        for k in range(a_in.shape[3]):
            s = wp.max(s, wp.abs(a_in[env, i, j, k]))
    out[env, i] = s


@wp.kernel
def partial_sum_count(
    # Data in:
    a_in: wp.array4d(dtype=Any),
    ct_in: wp.array4d(dtype=wp.int32),
    # Data out:
    sum_out: wp.array2d(dtype=wp.float64),
    count_out: wp.array2d(dtype=wp.float64),
):
    """Per env and x-slab: Σ a and the count over the fluid cells (float64)."""
    env, i = wp.tid()
    s = wp.float64(0.0)
    c = wp.float64(0.0)
    for j in range(a_in.shape[2]):
        for k in range(a_in.shape[3]):
            if ct_in[env, i, j, k] != 0:
                s = s + wp.float64(a_in[env, i, j, k])
                c = c + wp.float64(1.0)
    sum_out[env, i] = s
    count_out[env, i] = c


@wp.kernel
def finish_mean(
    # Data in:
    sum_in: wp.array2d(dtype=Any),
    count_in: wp.array2d(dtype=Any),
    # Data out:
    mean_out: wp.array(dtype=Any),
):
    env = wp.tid()
    s = sum_in[env, 0] * type(sum_in[env, 0])(0.0)
    c = s
    for i in range(sum_in.shape[1]):
        s = s + sum_in[env, i]
        c = c + count_in[env, i]
    if c > type(c)(0.0):
        mean_out[env] = s / c
    else:
        mean_out[env] = c


@wp.kernel
def subtract_mean(
    # Data in:
    mean_in: wp.array(dtype=Any),
    ct_in: wp.array4d(dtype=wp.int32),
    # Data in/out:
    b: wp.array4d(dtype=Any),
):
    """Make a closed domain's right-hand side compatible (zero sum over the fluid cells)."""
    env, i, j, k = wp.tid()
    if ct_in[env, i, j, k] != 0:
        b[env, i, j, k] = b[env, i, j, k] - type(b[env, i, j, k])(mean_in[env])


# -- per-env CG scalars -------------------------------------------------------------------------------
@wp.func
def _sum_row(a: wp.array2d(dtype=Any), env: int):
    s = a[env, 0] * type(a[env, 0])(0.0)
    for i in range(a.shape[1]):
        s = s + a[env, i]
    return s


@wp.func
def _max_row(a: wp.array2d(dtype=Any), env: int):
    s = a[env, 0]
    for i in range(a.shape[1]):
        s = wp.max(s, a[env, i])
    return s


@wp.kernel
def cg_start(
    # Model:
    tol: Any,
    # Data in:
    rz_part_in: wp.array2d(dtype=wp.float64),
    rmax_part_in: wp.array2d(dtype=Any),
    # Data out:
    rz_out: wp.array(dtype=wp.float64),
    rmax_out: wp.array(dtype=Any),
    rbest_out: wp.array(dtype=Any),
    done_out: wp.array(dtype=wp.int32),
    state_out: wp.array(dtype=wp.int32),
    iters_out: wp.array(dtype=wp.int32),
):
    """Start of a solve: an env whose initial max|r| is within tol is done at once (state 1)."""
    env = wp.tid()
    rz_out[env] = _sum_row(rz_part_in, env)
    rmax = _max_row(rmax_part_in, env)
    rmax_out[env] = rmax
    rbest_out[env] = rmax
    iters_out[env] = 0
    done_out[env] = 0
    state_out[env] = 0
    if rmax <= tol:
        done_out[env] = 1
        state_out[env] = 1


@wp.kernel
def cg_alpha(
    # Data in:
    done_in: wp.array(dtype=wp.int32),
    dq_part_in: wp.array2d(dtype=wp.float64),
    rz_in: wp.array(dtype=wp.float64),
    # Data out:
    alpha_out: wp.array(dtype=wp.float64),
):
    env = wp.tid()
    if done_in[env] != 0:
        return
    dq = _sum_row(dq_part_in, env)
    zero = dq * type(dq)(0.0)
    alpha_out[env] = zero
    if dq > zero:
        alpha_out[env] = rz_in[env] / dq


@wp.kernel
def cg_update(
    # Data in:
    done_in: wp.array(dtype=wp.int32),
    alpha_in: wp.array(dtype=Any),
    d_in: wp.array4d(dtype=Any),
    # Data in/out:
    p: wp.array4d(dtype=Any),
):
    """p += α d. The residual is then recomputed as b - A p (not updated as r - α A d): the
    convergence test sees the true divergence, which the recursive residual drifts away from in
    float32 once it is ~1e-6 of the initial one."""
    env, i, j, k = wp.tid()
    if done_in[env] != 0:
        return
    p[env, i, j, k] = p[env, i, j, k] + type(p[env, i, j, k])(alpha_in[env]) * d_in[env, i, j, k]


@wp.kernel
def cg_check(
    # Model:
    tol: Any,
    stall: Any,
    # Data in:
    rmax_part_in: wp.array2d(dtype=Any),
    # Data in/out:
    done: wp.array(dtype=wp.int32),
    state: wp.array(dtype=wp.int32),
    iters: wp.array(dtype=wp.int32),
    rmax: wp.array(dtype=Any),
    rbest: wp.array(dtype=Any),
    # Data out:
    improved_out: wp.array(dtype=wp.int32),
):
    """Count the iteration and test the env: max|r| <= tol: converged (state 1); above ``stall``
    times the best so far: stalled at the precision floor (state 2, done: the best iterate is
    restored at the end); ``improved`` marks a new best iterate (kept by ``keep_best``)."""
    env = wp.tid()
    improved_out[env] = 0
    if done[env] != 0:
        return
    iters[env] = iters[env] + 1
    m = _max_row(rmax_part_in, env)
    rmax[env] = m
    if m <= tol:
        done[env] = 1
        state[env] = 1
        rbest[env] = m
        improved_out[env] = 1
    elif m < rbest[env]:
        rbest[env] = m
        improved_out[env] = 1
    elif m > stall * rbest[env]:
        done[env] = 1
        state[env] = 2


@wp.kernel
def keep_best(
    # Data in:
    improved_in: wp.array(dtype=wp.int32),
    p_in: wp.array4d(dtype=Any),
    # Data out:
    best_out: wp.array4d(dtype=Any),
):
    env, i, j, k = wp.tid()
    if improved_in[env] != 0:
        best_out[env, i, j, k] = p_in[env, i, j, k]


@wp.kernel
def restore_best(
    # Data in:
    state_in: wp.array(dtype=wp.int32),
    best_in: wp.array4d(dtype=Any),
    # Data out:
    p_out: wp.array4d(dtype=Any),
):
    """An env that did not converge ends with its best iterate (smallest max|r|)."""
    env, i, j, k = wp.tid()
    if state_in[env] != 1:
        p_out[env, i, j, k] = best_in[env, i, j, k]


@wp.kernel
def cg_beta(
    # Data in:
    done_in: wp.array(dtype=wp.int32),
    rz_part_in: wp.array2d(dtype=wp.float64),
    # Data in/out:
    rz: wp.array(dtype=wp.float64),
    # Data out:
    beta_out: wp.array(dtype=wp.float64),
):
    env = wp.tid()
    if done_in[env] != 0:
        return
    new = _sum_row(rz_part_in, env)
    old = rz[env]
    zero = new * type(new)(0.0)
    beta_out[env] = zero
    if old != zero:
        beta_out[env] = new / old
    rz[env] = new


@wp.kernel
def cg_direction(
    # Data in:
    done_in: wp.array(dtype=wp.int32),
    beta_in: wp.array(dtype=Any),
    z_in: wp.array4d(dtype=Any),
    # Data in/out:
    d: wp.array4d(dtype=Any),
):
    env, i, j, k = wp.tid()
    if done_in[env] != 0:
        return
    d[env, i, j, k] = z_in[env, i, j, k] + type(z_in[env, i, j, k])(beta_in[env]) * d[env, i, j, k]


@wp.kernel
def loop_condition(
    # Model:
    cap: int,
    # Data in:
    done_in: wp.array(dtype=wp.int32),
    # Data in/out:
    count: wp.array(dtype=wp.int32),
    # Data out:
    cond_out: wp.array(dtype=wp.int32),
):
    """One thread per partition: count the iteration; go on while an env is unconverged and under the cap."""
    count[0] = count[0] + 1
    busy = int(0)
    for e in range(done_in.shape[0]):
        if done_in[e] == 0:
            busy = 1
    if count[0] >= cap:
        busy = 0
    cond_out[0] = busy


@wp.kernel
def loop_start(
    # Data in:
    done_in: wp.array(dtype=wp.int32),
    # Data out:
    count_out: wp.array(dtype=wp.int32),
    cond_out: wp.array(dtype=wp.int32),
):
    count_out[0] = 0
    busy = int(0)
    for e in range(done_in.shape[0]):
        if done_in[e] == 0:
            busy = 1
    cond_out[0] = busy


@wp.kernel
def cg_finish(
    # Data in:
    state_in: wp.array(dtype=wp.int32),
    rbest_in: wp.array(dtype=Any),
    # Data in/out:
    rmax: wp.array(dtype=Any),
    cap_hit: wp.array(dtype=wp.int32),
):
    """Flag the envs that did not converge (cap reached or stalled; read after the step); their
    reported residual is the best iterate's."""
    env = wp.tid()
    if state_in[env] != 1:
        cap_hit[env] = cap_hit[env] + 1
        rmax[env] = rbest_in[env]


_declared: set = set()


def _types(precision: str):
    """Scalar, vec3 and quat of a precision ("32" or "64"), as SFSolver.build makes them."""
    if precision == "64":
        return wp.float64, wp.vec3d, wp.quatd
    return wp.float32, wp.vec3, wp.quat


def declare_overloads(precision: str) -> None:
    """The overloads of the scene precision's types of every generic kernel of this module
    (SFSolver.kernel_modules). The CG scalars alpha, beta and the mean are float64 in both precisions."""
    if precision in _declared:
        return
    s, _, _ = _types(precision)
    a1, a2, a4 = wp.array(dtype=s), wp.array2d(dtype=s), wp.array4d(dtype=s)
    d1, d2 = wp.array(dtype=wp.float64), wp.array2d(dtype=wp.float64)
    wp.overload(divergence, {"inv_dx": s, "scale": s, "u_in": a4, "v_in": a4, "w_in": a4, "out": a4})
    wp.overload(subtract_gradient, {"inv_dx": s, "p_in": a4, "vel": a4})
    wp.overload(residual, {"inv_dx2": s, "b_in": a4, "x_in": a4, "r_out": a4})
    wp.overload(apply_a, {"inv_dx2": s, "x_in": a4, "q_out": a4})
    wp.overload(rbgs, {"inv_dx2": s, "b_in": a4, "x": a4})
    wp.overload(jacobi_precond, {"inv_dx2": s, "r_in": a4, "z_out": a4})
    wp.overload(restrict, {"r_in": a4, "b_out": a4})
    wp.overload(prolong_add, {"xc_in": a4, "x": a4})
    wp.overload(zero_cells, {"x_out": a4})
    wp.overload(partial_dot, {"a_in": a4, "b_in": a4})
    wp.overload(partial_absmax, {"a_in": a4, "out": a2})
    wp.overload(partial_sum_count, {"a_in": a4})
    wp.overload(finish_mean, {"sum_in": d2, "count_in": d2, "mean_out": d1})
    wp.overload(subtract_mean, {"mean_in": d1, "b": a4})
    wp.overload(cg_start, {"tol": s, "rmax_part_in": a2, "rmax_out": a1, "rbest_out": a1})
    wp.overload(cg_update, {"alpha_in": d1, "d_in": a4, "p": a4})
    wp.overload(cg_check, {"tol": s, "stall": s, "rmax_part_in": a2, "rmax": a1, "rbest": a1})
    wp.overload(keep_best, {"p_in": a4, "best_out": a4})
    wp.overload(restore_best, {"best_in": a4, "p_out": a4})
    wp.overload(cg_direction, {"beta_in": d1, "z_in": a4, "d": a4})
    wp.overload(cg_finish, {"rbest_in": a1, "rmax": a1})
    _declared.add(precision)
