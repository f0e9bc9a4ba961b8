"""Sampling of MAC-grid fields: trilinear interpolation and the gas velocity at a point.

Every field is a batch-first 4D array (env, i, j, k). Storage point of index (i, j, k) of a field
with staggering offset ``off`` (cells: (½, ½, ½); x-faces u: (0, ½, ½); y-faces v: (½, 0, ½);
z-faces w: (½, ½, 0)) is lo + ((i, j, k) + off)·dx. A point outside the storage points is clamped
to the nearest one (constant extrapolation). Generic over float32/float64.
"""

from typing import Any

import warp as wp


@wp.func
def axis_coord(g: Any, n: int):
    """Clamped lower index, upper index and weight of index-space coordinate g on an axis of n points."""
    zero = type(g)(0.0)
    gc = wp.clamp(g, zero, type(g)(n - 1))
    i0 = wp.min(int(gc), n - 1)
    i1 = wp.min(i0 + 1, n - 1)
    return i0, i1, gc - type(g)(i0)


@wp.func
def sample(f: wp.array4d(dtype=Any), env: int, g: Any):
    """Trilinear interpolation of f at index-space point g (vec3)."""
    i0, i1, tx = axis_coord(g[0], f.shape[1])
    j0, j1, ty = axis_coord(g[1], f.shape[2])
    k0, k1, tz = axis_coord(g[2], f.shape[3])
    one = type(tx)(1.0)
    c00 = f[env, i0, j0, k0] * (one - tx) + f[env, i1, j0, k0] * tx
    c10 = f[env, i0, j1, k0] * (one - tx) + f[env, i1, j1, k0] * tx
    c01 = f[env, i0, j0, k1] * (one - tx) + f[env, i1, j0, k1] * tx
    c11 = f[env, i0, j1, k1] * (one - tx) + f[env, i1, j1, k1] * tx
    c0 = c00 * (one - ty) + c10 * ty
    c1 = c01 * (one - ty) + c11 * ty
    return c0 * (one - tz) + c1 * tz


@wp.func
def stencil_min(f: wp.array4d(dtype=Any), env: int, g: Any):
    """Smallest of the 8 values the trilinear interpolation at g reads."""
    i0, i1, tx = axis_coord(g[0], f.shape[1])
    j0, j1, ty = axis_coord(g[1], f.shape[2])
    k0, k1, tz = axis_coord(g[2], f.shape[3])
    a = wp.min(wp.min(f[env, i0, j0, k0], f[env, i1, j0, k0]), wp.min(f[env, i0, j1, k0], f[env, i1, j1, k0]))
    b = wp.min(wp.min(f[env, i0, j0, k1], f[env, i1, j0, k1]), wp.min(f[env, i0, j1, k1], f[env, i1, j1, k1]))
    return wp.min(a, b)


@wp.func
def stencil_max(f: wp.array4d(dtype=Any), env: int, g: Any):
    """Largest of the 8 values the trilinear interpolation at g reads."""
    i0, i1, tx = axis_coord(g[0], f.shape[1])
    j0, j1, ty = axis_coord(g[1], f.shape[2])
    k0, k1, tz = axis_coord(g[2], f.shape[3])
    a = wp.max(wp.max(f[env, i0, j0, k0], f[env, i1, j0, k0]), wp.max(f[env, i0, j1, k0], f[env, i1, j1, k0]))
    b = wp.max(wp.max(f[env, i0, j0, k1], f[env, i1, j0, k1]), wp.max(f[env, i0, j1, k1], f[env, i1, j1, k1]))
    return wp.max(a, b)


@wp.func
def velocity_at(u: wp.array4d(dtype=Any), v: wp.array4d(dtype=Any), w: wp.array4d(dtype=Any), env: int,
                lo: Any, inv_dx: Any, x: Any):
    """Gas velocity at world point x from the three face grids."""
    g = (x - lo) * inv_dx
    half = type(inv_dx)(0.5)
    gu = type(x)(g[0], g[1] - half, g[2] - half)
    gv = type(x)(g[0] - half, g[1], g[2] - half)
    gw = type(x)(g[0] - half, g[1] - half, g[2])
    return type(x)(sample(u, env, gu), sample(v, env, gv), sample(w, env, gw))


@wp.func
def storage_point(lo: Any, dx: Any, off: Any, i: int, j: int, k: int):
    """World position of storage index (i, j, k) of a field with offset ``off``."""
    return lo + (type(off)(type(dx)(i), type(dx)(j), type(dx)(k)) + off) * dx
