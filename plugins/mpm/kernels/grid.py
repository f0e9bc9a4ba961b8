"""Grid stages: clear, and the grid update (momentum -> velocity, gravity, boundary conditions).

Launch grids are (n_envs, n) over a range of nodes starting at ``n0`` (a worker's share), or (n_envs,
blocks) for the grid update (``grid_update_blocks``).
Node index n = (i·ny + j)·nz + k, position lo + (i, j, k)·dx. Walls act on the outer ``pad`` nodes
of each axis (and, with ``surface`` = 1, one-sidedly on the node layer on the wall surface, index
``pad``: a node moving into the wall is zeroed by a sticky wall, loses its normal part with friction
by slip/separate walls), static planes on the nodes behind them. Boundary codes
(one per axis: the walls normal to x, y, z; planes use the z code): 0 sticky (v = 0), 1 slip
(normal component removed), 2 separate (normal component removed only when it points into the
wall); slip/separate apply Coulomb friction μ to the tangential part. Generic over float32/float64:
``declare_overloads(precision)`` adds one precision's overloads before the first launch.
"""

from typing import Any

import warp as wp
from polyphys.kernels.blocks import block_after, next_block

wp.set_module_options({"enable_backward": False})   # nothing here is differentiated

STICKY = wp.constant(0)
SLIP = wp.constant(1)
SEPARATE = wp.constant(2)


@wp.kernel
def clear_grid(
    # Model:
    n0: int,
    # Data out:
    grid_mv_out: wp.array2d(dtype=Any),
    grid_m_out: wp.array2d(dtype=Any),
    grid_mx_out: wp.array2d(dtype=Any),
):
    env, q = wp.tid()
    n = n0 + q
    grid_mv_out[env, n] = type(grid_mv_out[env, n])()
    grid_m_out[env, n] = type(grid_m_out[env, n])(0.0)
    if grid_mx_out.shape[0] > 0:
        grid_mx_out[env, n] = type(grid_mv_out[env, n])()


@wp.func
def apply_bc(v: Any, nrm: Any, boundary: int, friction: Any):
    zero = type(friction)(0.0)
    if boundary == STICKY:
        return type(v)()
    vn = wp.dot(v, nrm)
    if boundary == SEPARATE and vn >= zero:
        return v
    vt = v - vn * nrm
    if friction > zero and vn < zero:
        lt = wp.length(vt)
        if lt > zero:
            vt = vt * (wp.max(zero, lt + friction * vn) / lt)
    return vt


@wp.func
def apply_surface_bc(v: Any, nrm: Any, boundary: int, friction: Any):
    # the node layer on a wall's surface: only a velocity into the wall is acted on, so material the
    # wall does not press on is free. A sticky wall zeroes such a node whole (no slip while in
    # contact: the surface is as rough as the nodes behind it), slip/separate remove the normal part
    # with Coulomb friction
    if wp.dot(v, nrm) >= type(friction)(0.0):
        return v
    if boundary == STICKY:
        return type(v)()
    return apply_bc(v, nrm, SEPARATE, friction)


@wp.func
def update_node(
    env: int,
    n: int,
    lo: Any,
    dx: Any,
    nx: int,
    ny: int,
    nz: int,
    pad: int,
    surface: int,
    boundary: wp.vec3i,
    friction: Any,
    plane_pos: wp.array(dtype=Any),
    plane_nrm: wp.array(dtype=Any),
    gravity: Any,
    h: Any,
    grid_mv_in: wp.array2d(dtype=Any),
    grid_m_in: wp.array2d(dtype=Any),
    grid_mx_in: wp.array2d(dtype=Any),
    grid_v_out: wp.array2d(dtype=Any),
    grid_active_out: wp.array2d(dtype=wp.int32),
    grid_pos_out: wp.array2d(dtype=Any),
):
    """The grid update of node n of env."""
    m = grid_m_in[env, n]
    zero = type(h)(0.0)
    one = type(h)(1.0)
    i = n / (ny * nz)
    j = (n / nz) % ny
    k = n % nz
    x = lo + type(lo)(type(h)(i), type(h)(j), type(h)(k)) * dx
    if m <= zero:
        grid_v_out[env, n] = type(lo)()
        grid_active_out[env, n] = 0
        if grid_mx_in.shape[0] > 0:
            grid_pos_out[env, n] = x
        return
    if grid_mx_in.shape[0] > 0:
        # the node's material centroid: where a coupler sees this carrier (docs/legacy.md)
        grid_pos_out[env, n] = x + grid_mx_in[env, n] / m
    v = grid_mv_in[env, n] / m + h * gravity
    # walls
    if i < pad:
        v = apply_bc(v, type(lo)(one, zero, zero), boundary[0], friction)
    if i > nx - 1 - pad:
        v = apply_bc(v, type(lo)(-one, zero, zero), boundary[0], friction)
    if j < pad:
        v = apply_bc(v, type(lo)(zero, one, zero), boundary[1], friction)
    if j > ny - 1 - pad:
        v = apply_bc(v, type(lo)(zero, -one, zero), boundary[1], friction)
    if k < pad:
        v = apply_bc(v, type(lo)(zero, zero, one), boundary[2], friction)
    if k > nz - 1 - pad:
        v = apply_bc(v, type(lo)(zero, zero, -one), boundary[2], friction)
    if surface != 0:
        # the node layer on the wall surface: one-sided (only a velocity into the wall is acted on)
        if i == pad:
            v = apply_surface_bc(v, type(lo)(one, zero, zero), boundary[0], friction)
        if i == nx - 1 - pad:
            v = apply_surface_bc(v, type(lo)(-one, zero, zero), boundary[0], friction)
        if j == pad:
            v = apply_surface_bc(v, type(lo)(zero, one, zero), boundary[1], friction)
        if j == ny - 1 - pad:
            v = apply_surface_bc(v, type(lo)(zero, -one, zero), boundary[1], friction)
        if k == pad:
            v = apply_surface_bc(v, type(lo)(zero, zero, one), boundary[2], friction)
        if k == nz - 1 - pad:
            v = apply_surface_bc(v, type(lo)(zero, zero, -one), boundary[2], friction)
    for q in range(plane_pos.shape[0]):
        nrm = plane_nrm[q]
        if wp.dot(x - plane_pos[q], nrm) < zero:
            v = apply_bc(v, nrm, boundary[2], friction)
    grid_v_out[env, n] = v
    grid_active_out[env, n] = 1


@wp.kernel
def grid_update_blocks(
    # Model:
    lo: Any,
    dx: Any,
    nx: int,
    ny: int,
    nz: int,
    pad: int,
    surface: int,
    boundary: wp.vec3i,
    friction: Any,
    plane_pos: wp.array(dtype=Any),
    plane_nrm: wp.array(dtype=Any),
    gravity: Any,
    h: Any,
    n_nodes: int,
    chunk: int,
    claim: int,
    # Data in:
    grid_mv_in: wp.array2d(dtype=Any),
    grid_m_in: wp.array2d(dtype=Any),
    grid_mx_in: wp.array2d(dtype=Any),
    # Data out:
    grid_v_out: wp.array2d(dtype=Any),
    grid_active_out: wp.array2d(dtype=wp.int32),
    grid_pos_out: wp.array2d(dtype=Any),
    claims_inout: wp.array2d(dtype=wp.int32),
):
    """The grid update over blocks of ``chunk`` nodes: with ``claim`` non-zero (several workers, one thread each
    per env) the workers claim the blocks until none is left (polyphys.blocks: a node with material
    costs more than an empty one, and the material is not spread evenly in x); with ``claim`` 0 (one
    worker) thread c updates block c. A node has the same operations either way."""
    env, c0 = wp.tid()
    n_blocks = (n_nodes + chunk - 1) / chunk
    c = next_block(claims_inout, claim, env, c0, n_blocks)
    while c < n_blocks:
        for n in range(c * chunk, wp.min((c + 1) * chunk, n_nodes)):
            update_node(env, n, lo, dx, nx, ny, nz, pad, surface, boundary, friction, plane_pos, plane_nrm, gravity,
                        h, grid_mv_in, grid_m_in, grid_mx_in, grid_v_out, grid_active_out, grid_pos_out)
        c = block_after(claims_inout, claim, env, n_blocks)


_declared: set = set()


def declare_overloads(precision: str) -> None:
    """The float32 ("32") or float64 ("64") overloads of this module's kernels (MPMSolver.kernel_modules),
    so that the module compiles once, with the scene's precision only."""
    if precision in _declared:
        return
    s = wp.float64 if precision == "64" else wp.float32
    V = wp.types.vector(3, s)
    a2, v2 = wp.array2d(dtype=s), wp.array2d(dtype=V)
    wp.overload(clear_grid, {"grid_mv_out": v2, "grid_m_out": a2, "grid_mx_out": v2})
    update = {"lo": V, "dx": s, "friction": s, "plane_pos": wp.array(dtype=V), "plane_nrm": wp.array(dtype=V),
              "gravity": V, "h": s, "grid_mv_in": v2, "grid_m_in": a2, "grid_mx_in": v2, "grid_v_out": v2,
              "grid_pos_out": v2}
    wp.overload(grid_update_blocks, update)
    _declared.add(precision)
