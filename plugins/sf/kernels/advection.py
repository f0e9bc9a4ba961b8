"""Advection of MAC-grid fields by the gas velocity.

Semi-Lagrangian (Stam 1999): the value at a storage point x is the field at the RK2 back-trace
x - h·v(x - ½h·v(x)). MacCormack (Selle, Fedkiw, Kim, Liu, Osher 2008): a forward semi-Lagrangian
step φ̂, a backward one φ̃ = SL(φ̂, -h), and φ̂ + ½(φ - φ̃), limited to the min/max of the 8 values
the forward interpolation read (so no new extrema). Generic over float32/float64.
"""

from typing import Any

import warp as wp

from .sample import sample, stencil_max, stencil_min, storage_point, velocity_at

wp.set_module_options({"enable_backward": False})   # nothing here is differentiated (Capabilities: differentiable=False)


@wp.func
def backtrace(u: wp.array4d(dtype=Any), v: wp.array4d(dtype=Any), w: wp.array4d(dtype=Any), env: int,
              lo: Any, inv_dx: Any, x: Any, h: Any):
    """RK2 (midpoint) trace of x over -h through the velocity field."""
    v1 = velocity_at(u, v, w, env, lo, inv_dx, x)
    xm = x - (type(h)(0.5) * h) * v1
    v2 = velocity_at(u, v, w, env, lo, inv_dx, xm)
    return x - h * v2


@wp.kernel
def trace(
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
    # Data out:
    x_out: wp.array4d(dtype=Any),
):
    """The RK2 trace over -h of every storage point of a field with offset ``off`` (h < 0: forward);
    shared by every field with that staggering."""
    env, i, j, k = wp.tid()
    x_out[env, i, j, k] = backtrace(u_in, v_in, w_in, env, lo, inv_dx, storage_point(lo, dx, off, i, j, k), h)


@wp.kernel
def sample_at(
    # Model:
    lo: Any,
    inv_dx: Any,
    off: Any,
    # Data in:
    x_in: wp.array4d(dtype=Any),
    field_in: wp.array4d(dtype=Any),
    # Data out:
    field_out: wp.array4d(dtype=Any),
):
    """field_out = field_in interpolated at the traced points x_in (a semi-Lagrangian step)."""
    env, i, j, k = wp.tid()
    field_out[env, i, j, k] = sample(field_in, env, (x_in[env, i, j, k] - lo) * inv_dx - off)


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
    """field_out(x) = field_in(back-trace of x over h); h < 0 traces forward (trace and sample fused)."""
    env, i, j, k = wp.tid()
    x = storage_point(lo, dx, off, i, j, k)
    xp = backtrace(u_in, v_in, w_in, env, lo, inv_dx, x, h)
    field_out[env, i, j, k] = sample(field_in, env, (xp - lo) * inv_dx - off)


@wp.kernel
def maccormack_correct(
    # Model:
    lo: Any,
    inv_dx: Any,
    off: Any,
    # Data in:
    xb_in: wp.array4d(dtype=Any),
    xf_in: wp.array4d(dtype=Any),
    field_in: wp.array4d(dtype=Any),
    fwd_in: wp.array4d(dtype=Any),
    # Data out:
    field_out: wp.array4d(dtype=Any),
):
    """The backward step bwd = fwd at the forward-traced point xf, then field_out = fwd + ½(field -
    bwd), clamped to the min/max of the 8 values of ``field`` the forward step read at the
    back-traced point xb."""
    env, i, j, k = wp.tid()
    bwd = sample(fwd_in, env, (xf_in[env, i, j, k] - lo) * inv_dx - off)
    g = (xb_in[env, i, j, k] - lo) * inv_dx - off
    val = fwd_in[env, i, j, k] + type(inv_dx)(0.5) * (field_in[env, i, j, k] - bwd)
    field_out[env, i, j, k] = wp.clamp(val, stencil_min(field_in, env, g), stencil_max(field_in, env, g))


# -- density conservation (a per-env correction of the advected total) ---------------------------------
@wp.kernel
def density_totals(
    # Model:
    open_lo: wp.vec3i,
    open_hi: wp.vec3i,
    flux_scale: Any,
    # Data in:
    density_in: wp.array4d(dtype=Any),
    u_in: wp.array4d(dtype=Any),
    v_in: wp.array4d(dtype=Any),
    w_in: wp.array4d(dtype=Any),
    # Data out:
    total_out: wp.array2d(dtype=Any),
    flux_out: wp.array2d(dtype=Any),
):
    """Per env and x-slab i: Σ density, and the density carried out through the open domain faces of
    the slab in one substep (flux_scale = h/dx: the outflow u·n·s·h·dx² in cell units), the face value
    being the adjacent cell's (what the clamped back-trace brings in or takes out)."""
    env, i = wp.tid()
    nx = density_in.shape[1]
    ny = density_in.shape[2]
    nz = density_in.shape[3]
    s = flux_scale * type(flux_scale)(0.0)
    f = s
    for j in range(ny):
        for k in range(nz):
            c = density_in[env, i, j, k]
            s = s + c
            if i == 0 and open_lo[0] != 0:
                f = f - u_in[env, 0, j, k] * c
            if i == nx - 1 and open_hi[0] != 0:
                f = f + u_in[env, nx, j, k] * c
            if j == 0 and open_lo[1] != 0:
                f = f - v_in[env, i, 0, k] * c
            if j == ny - 1 and open_hi[1] != 0:
                f = f + v_in[env, i, ny, k] * c
            if k == 0 and open_lo[2] != 0:
                f = f - w_in[env, i, j, 0] * c
            if k == nz - 1 and open_hi[2] != 0:
                f = f + w_in[env, i, j, nz] * c
    total_out[env, i] = s
    flux_out[env, i] = f * flux_scale


@wp.kernel
def density_target(
    # Data in:
    total_in: wp.array2d(dtype=Any),
    flux_in: wp.array2d(dtype=Any),
    # Data out:
    target_out: wp.array(dtype=Any),
):
    """What the advected total must be: the total before minus the net outflow."""
    env = wp.tid()
    s = total_in[env, 0] * type(total_in[env, 0])(0.0)
    for i in range(total_in.shape[1]):
        s = s + total_in[env, i] - flux_in[env, i]
    target_out[env] = wp.max(s, type(s)(0.0))


@wp.kernel
def density_scale(
    # Data in:
    total_in: wp.array2d(dtype=Any),
    target_in: wp.array(dtype=Any),
    # Data out:
    scale_out: wp.array(dtype=Any),
):
    env = wp.tid()
    s = total_in[env, 0] * type(total_in[env, 0])(0.0)
    for i in range(total_in.shape[1]):
        s = s + total_in[env, i]
    one = type(s)(1.0)
    scale_out[env] = one
    if s > type(s)(1.0e-20):
        scale_out[env] = target_in[env] / s


@wp.kernel
def scale_cells(
    # Data in:
    scale_in: wp.array(dtype=Any),
    # Data in/out:
    field: wp.array4d(dtype=Any),
):
    env, i, j, k = wp.tid()
    field[env, i, j, k] = field[env, i, j, k] * scale_in[env]


_declared: set = set()


def _types(precision: str):
    """Scalar, vec3 and quat of a precision ("32" or "64"), as SFSolver.build makes them."""
    if precision == "64":
        return wp.float64, wp.vec3d, wp.quatd
    return wp.float32, wp.vec3, wp.quat


def declare_overloads(precision: str) -> None:
    """The overloads of the scene precision's types of every kernel of this module (SFSolver.kernel_modules):
    a scene compiles the module once, before build, and only its own precision."""
    if precision in _declared:
        return
    s, V, _ = _types(precision)
    a1, a2, a4, v4 = wp.array(dtype=s), wp.array2d(dtype=s), wp.array4d(dtype=s), wp.array4d(dtype=V)
    wp.overload(trace, {"lo": V, "dx": s, "inv_dx": s, "off": V, "h": s, "u_in": a4, "v_in": a4, "w_in": a4,
                        "x_out": v4})
    wp.overload(sample_at, {"lo": V, "inv_dx": s, "off": V, "x_in": v4, "field_in": a4, "field_out": a4})
    wp.overload(advect_sl, {"lo": V, "dx": s, "inv_dx": s, "off": V, "h": s, "u_in": a4, "v_in": a4, "w_in": a4,
                            "field_in": a4, "field_out": a4})
    wp.overload(maccormack_correct, {"lo": V, "inv_dx": s, "off": V, "xb_in": v4, "xf_in": v4, "field_in": a4,
                                     "fwd_in": a4, "field_out": a4})
    wp.overload(density_totals, {"flux_scale": s, "density_in": a4, "u_in": a4, "v_in": a4, "w_in": a4,
                                 "total_out": a2, "flux_out": a2})
    wp.overload(density_target, {"total_in": a2, "flux_in": a2, "target_out": a1})
    wp.overload(density_scale, {"total_in": a2, "target_in": a1, "scale_out": a1})
    wp.overload(scale_cells, {"scale_in": a1, "field": a4})
    _declared.add(precision)
