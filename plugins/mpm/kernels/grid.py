"""Grid stages: clear, and the grid update (momentum -> velocity, gravity, boundary conditions).

Node index n = (i·ny + j)·nz + k, position lo + (i, j, k)·dx. Walls act on the outer ``pad`` nodes
of each axis, static planes on the nodes behind them. Boundary codes: 0 sticky (v = 0), 1 slip
(normal component removed), 2 separate (normal component removed only when it points into the
wall); slip/separate apply Coulomb friction μ to the tangential part.
"""

import warp as wp

STICKY = wp.constant(0)
SLIP = wp.constant(1)
SEPARATE = wp.constant(2)


@wp.kernel
def clear_grid(
    # Data out:
    grid_mv_out: wp.array2d(dtype=wp.vec3),
    grid_m_out: wp.array2d(dtype=float),
):
    env, n = wp.tid()
    grid_mv_out[env, n] = wp.vec3()
    grid_m_out[env, n] = 0.0


@wp.func
def apply_bc(v: wp.vec3, nrm: wp.vec3, boundary: int, friction: float):
    if boundary == STICKY:
        return wp.vec3()
    vn = wp.dot(v, nrm)
    if boundary == SEPARATE and vn >= 0.0:
        return v
    vt = v - vn * nrm
    if friction > 0.0 and vn < 0.0:
        lt = wp.length(vt)
        if lt > 0.0:
            vt = vt * (wp.max(0.0, lt + friction * vn) / lt)
    return vt


@wp.kernel
def grid_update(
    # Model:
    lo: wp.vec3,
    dx: float,
    nx: int,
    ny: int,
    nz: int,
    pad: int,
    boundary: int,
    friction: float,
    plane_pos: wp.array(dtype=wp.vec3),
    plane_nrm: wp.array(dtype=wp.vec3),
    gravity: wp.vec3,
    h: float,
    # Data in:
    grid_mv_in: wp.array2d(dtype=wp.vec3),
    grid_m_in: wp.array2d(dtype=float),
    # Data out:
    grid_v_out: wp.array2d(dtype=wp.vec3),
    grid_active_out: wp.array2d(dtype=wp.int32),
):
    env, n = wp.tid()
    m = grid_m_in[env, n]
    if m <= 0.0:
        grid_v_out[env, n] = wp.vec3()
        grid_active_out[env, n] = 0
        return
    v = grid_mv_in[env, n] / m + h * gravity
    i = n / (ny * nz)
    j = (n / nz) % ny
    k = n % nz
    # walls
    if i < pad:
        v = apply_bc(v, wp.vec3(1.0, 0.0, 0.0), boundary, friction)
    if i > nx - 1 - pad:
        v = apply_bc(v, wp.vec3(-1.0, 0.0, 0.0), boundary, friction)
    if j < pad:
        v = apply_bc(v, wp.vec3(0.0, 1.0, 0.0), boundary, friction)
    if j > ny - 1 - pad:
        v = apply_bc(v, wp.vec3(0.0, -1.0, 0.0), boundary, friction)
    if k < pad:
        v = apply_bc(v, wp.vec3(0.0, 0.0, 1.0), boundary, friction)
    if k > nz - 1 - pad:
        v = apply_bc(v, wp.vec3(0.0, 0.0, -1.0), boundary, friction)
    x = lo + wp.vec3(float(i), float(j), float(k)) * dx
    for q in range(plane_pos.shape[0]):
        nrm = plane_nrm[q]
        if wp.dot(x - plane_pos[q], nrm) < 0.0:
            v = apply_bc(v, nrm, boundary, friction)
    grid_v_out[env, n] = v
    grid_active_out[env, n] = 1
