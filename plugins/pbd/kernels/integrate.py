"""Stage kernels around the constraint loop: velocity prediction, position prediction, static
boundaries (domain box, planes, spheres) with friction, and the XPBD velocity update. One thread per
env loops over a range of particles [i0, i1) (a worker's share): a CPU grid thread per particle costs
more than these stages' work (update_velocity over 4096 particles: 27 µs as a grid, 7 as a loop)."""

import warp as wp

wp.set_module_options({"enable_backward": False})   # nothing here is differentiated


@wp.func
def project_halfspace(x: wp.vec3, x_prev: wp.vec3, d: float, n: wp.vec3, mu: float):
    """Push x out along n by the penetration -d (d < 0) and remove tangential displacement since the
    substep start up to mu times the penetration (Coulomb, Macklin et al. 2014 §6.1)."""
    if d >= 0.0:
        return x
    x = x - d * n
    dx = x - x_prev
    dt = dx - wp.dot(dx, n) * n
    lt = wp.length(dt)
    pen = -d
    if lt <= mu * pen:
        x = x - dt
    else:
        x = x - dt * (mu * pen / lt)
    return x


@wp.kernel
def predict_velocity(
    # Model:
    inv_mass0: wp.array(dtype=float),
    gravity: wp.vec3,
    h: float,
    i0: int,
    i1: int,
    # Data in:
    free_in: wp.array2d(dtype=wp.int32),
    # Data out:
    vel_out: wp.array2d(dtype=wp.vec3),
):
    env = wp.tid()
    i = wp.max(i0, 0)
    while i < i1:
        if free_in[env, i] == 0 or inv_mass0[i] == 0.0:
            vel_out[env, i] = wp.vec3(0.0)
        else:
            vel_out[env, i] = vel_out[env, i] + gravity * h
        i += 1


@wp.kernel
def predict_position(
    # Model:
    h: float,
    i0: int,
    i1: int,
    # Data in:
    vel_in: wp.array2d(dtype=wp.vec3),
    # Data out:
    pos_out: wp.array2d(dtype=wp.vec3),
    pos_prev_out: wp.array2d(dtype=wp.vec3),
    pos_pred_out: wp.array2d(dtype=wp.vec3),
):
    env = wp.tid()
    i = wp.max(i0, 0)
    while i < i1:
        x = pos_out[env, i]
        pos_prev_out[env, i] = x
        xp = x + vel_in[env, i] * h
        pos_out[env, i] = xp
        pos_pred_out[env, i] = xp
        i += 1


@wp.kernel
def zero_lambda(
    # Model:
    k0: int,
    k1: int,
    # Data out:
    lam_out: wp.array2d(dtype=float),
):
    """λ[env, k0:k1] = 0, one thread per env looping over the range (a grid thread per multiplier
    costs more than the store: 44 µs for a 64 x 64 cloth's 23 814 multipliers as a grid)."""
    env = wp.tid()
    k = wp.max(k0, 0)
    while k < k1:
        lam_out[env, k] = 0.0
        k += 1


@wp.func
def bound_one(
    env: int,
    i: int,
    inv_mass0: wp.array(dtype=float),
    radius: wp.array(dtype=float),
    lower: wp.vec3,
    upper: wp.vec3,
    plane_p: wp.array(dtype=wp.vec3),
    plane_n: wp.array(dtype=wp.vec3),
    sphere_c: wp.array(dtype=wp.vec3),
    sphere_r: wp.array(dtype=float),
    mu: float,
    free_in: wp.array2d(dtype=wp.int32),
    pos_prev_in: wp.array2d(dtype=wp.vec3),
    delta_in: wp.array2d(dtype=wp.vec3),
    pos_out: wp.array2d(dtype=wp.vec3),
):
    """Particle i of env ``env``: x += Δ, then the static boundaries."""
    if free_in[env, i] == 0 or inv_mass0[i] == 0.0:
        return
    r = radius[i]
    xp = pos_prev_in[env, i]
    x = pos_out[env, i] + delta_in[env, i]
    for k in range(plane_p.shape[0]):
        n = plane_n[k]
        x = project_halfspace(x, xp, wp.dot(x - plane_p[k], n) - r, n, mu)
    for k in range(sphere_c.shape[0]):
        dv = x - sphere_c[k]
        ld = wp.length(dv)
        if ld > 1.0e-9:
            x = project_halfspace(x, xp, ld - sphere_r[k] - r, dv / ld, mu)
    x = project_halfspace(x, xp, x[0] - lower[0] - r, wp.vec3(1.0, 0.0, 0.0), mu)
    x = project_halfspace(x, xp, upper[0] - x[0] - r, wp.vec3(-1.0, 0.0, 0.0), mu)
    x = project_halfspace(x, xp, x[1] - lower[1] - r, wp.vec3(0.0, 1.0, 0.0), mu)
    x = project_halfspace(x, xp, upper[1] - x[1] - r, wp.vec3(0.0, -1.0, 0.0), mu)
    x = project_halfspace(x, xp, x[2] - lower[2] - r, wp.vec3(0.0, 0.0, 1.0), mu)
    x = project_halfspace(x, xp, upper[2] - x[2] - r, wp.vec3(0.0, 0.0, -1.0), mu)
    pos_out[env, i] = x


@wp.kernel
def apply_and_bound(
    # Model:
    inv_mass0: wp.array(dtype=float),
    radius: wp.array(dtype=float),
    lower: wp.vec3,
    upper: wp.vec3,
    plane_p: wp.array(dtype=wp.vec3),
    plane_n: wp.array(dtype=wp.vec3),
    sphere_c: wp.array(dtype=wp.vec3),
    sphere_r: wp.array(dtype=float),
    mu: float,
    i0: int,
    i1: int,
    # Data in:
    free_in: wp.array2d(dtype=wp.int32),
    pos_prev_in: wp.array2d(dtype=wp.vec3),
    delta_in: wp.array2d(dtype=wp.vec3),
    # Data out:
    pos_out: wp.array2d(dtype=wp.vec3),
):
    env = wp.tid()
    i = wp.max(i0, 0)
    while i < i1:
        bound_one(env, i, inv_mass0, radius, lower, upper, plane_p, plane_n, sphere_c, sphere_r, mu, free_in,
                  pos_prev_in, delta_in, pos_out)
        i += 1


@wp.kernel
def update_velocity(
    # Model:
    inv_h: float,
    damp: float,
    i0: int,
    i1: int,
    # Data in:
    pos_in: wp.array2d(dtype=wp.vec3),
    pos_pred_in: wp.array2d(dtype=wp.vec3),
    vel_in: wp.array2d(dtype=wp.vec3),
    # Data out:
    vel_out: wp.array2d(dtype=wp.vec3),
):
    """v = (x - x_prev)/h written as v_pred + (x - x_pred)/h: the same in exact arithmetic, but the
    rounding of x_pred = x_prev + v h (up to ½ ulp of |x|, i.e. ulp/(2h) in velocity: 6e-4 m/s at
    2 m with h = 0.2 ms) no longer enters the velocity; only the constraint corrections do, so free
    flight is exact symplectic Euler in v (docs/pbd.md)."""
    env = wp.tid()
    i = wp.max(i0, 0)
    while i < i1:
        vel_out[env, i] = (vel_in[env, i] + (pos_in[env, i] - pos_pred_in[env, i]) * inv_h) * damp
        i += 1
