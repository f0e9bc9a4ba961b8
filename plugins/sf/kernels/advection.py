"""Advection of MAC-grid fields by the gas velocity.

Semi-Lagrangian (Stam 1999): the value at a storage point x is the field at the RK2 back-trace
x - h·v(x - ½h·v(x)). MacCormack (Selle, Fedkiw, Kim, Liu, Osher 2008): a forward semi-Lagrangian
step φ̂, a backward one φ̃ = SL(φ̂, -h), and φ̂ + ½(φ - φ̃), limited to the min/max of the 8 values
the forward interpolation read (so no new extrema). Generic over float32/float64.
"""

from typing import Any

import warp as wp

from .sample import sample, stencil_max, stencil_min, storage_point, velocity_at


@wp.func
def backtrace(u: wp.array4d(dtype=Any), v: wp.array4d(dtype=Any), w: wp.array4d(dtype=Any), env: int,
              lo: Any, inv_dx: Any, x: Any, h: Any):
    """RK2 (midpoint) trace of x over -h through the velocity field."""
    v1 = velocity_at(u, v, w, env, lo, inv_dx, x)
    xm = x - (type(h)(0.5) * h) * v1
    v2 = velocity_at(u, v, w, env, lo, inv_dx, xm)
    return x - h * v2


@wp.kernel
def advect_sl(
    # Model:
    lo: Any,
    dx: Any,
    inv_dx: Any,
    off: Any,
    h: Any,
    # Data in:
    u_in: wp.array4d(dtype=Any),
    v_in: wp.array4d(dtype=Any),
    w_in: wp.array4d(dtype=Any),
    field_in: wp.array4d(dtype=Any),
    # Data out:
    field_out: wp.array4d(dtype=Any),
):
    """field_out(x) = field_in(back-trace of x over h); h < 0 traces forward."""
    env, i, j, k = wp.tid()
    x = storage_point(lo, dx, off, i, j, k)
    xp = backtrace(u_in, v_in, w_in, env, lo, inv_dx, x, h)
    field_out[env, i, j, k] = sample(field_in, env, (xp - lo) * inv_dx - off)


@wp.kernel
def maccormack_correct(
    # Model:
    lo: Any,
    dx: Any,
    inv_dx: Any,
    off: Any,
    h: Any,
    # Data in:
    u_in: wp.array4d(dtype=Any),
    v_in: wp.array4d(dtype=Any),
    w_in: wp.array4d(dtype=Any),
    field_in: wp.array4d(dtype=Any),
    fwd_in: wp.array4d(dtype=Any),
    bwd_in: wp.array4d(dtype=Any),
    # Data out:
    field_out: wp.array4d(dtype=Any),
):
    """field_out = fwd + ½(field - bwd), clamped to the forward stencil's min/max."""
    env, i, j, k = wp.tid()
    x = storage_point(lo, dx, off, i, j, k)
    xp = backtrace(u_in, v_in, w_in, env, lo, inv_dx, x, h)
    g = (xp - lo) * inv_dx - off
    val = fwd_in[env, i, j, k] + type(h)(0.5) * (field_in[env, i, j, k] - bwd_in[env, i, j, k])
    field_out[env, i, j, k] = wp.clamp(val, stencil_min(field_in, env, g), stencil_max(field_in, env, g))
