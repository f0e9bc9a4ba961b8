"""Warp kernels of the ballistic solver.

House conventions: kernels at module level; parameters grouped ``# Model:`` (constant during a
step), ``# Data in:`` (``_in``), ``# Data out:`` (``_out``); launched over (n_envs, n) grids where
the env index comes from the launch grid, never a Python loop over envs. Passing the same array as
``x_in`` and ``x_out`` is allowed: each thread reads and writes only its own element.

Each kernel is generic (``Any``); ``declare_overloads(precision)`` adds its float32 or float64
overload before the first launch, so a scene compiles only the precision it uses, once, into the
kernel cache.
"""

from typing import Any

import warp as wp

wp.set_module_options({"enable_backward": False})   # not differentiable: no adjoint code to compile


@wp.kernel
def integrate_velocity(
    # Model:
    gravity: Any,
    h: Any,
    # Data in:
    active_in: wp.array2d(dtype=wp.int32),
    vel_in: wp.array2d(dtype=Any),
    # Data out:
    vel_out: wp.array2d(dtype=Any),
):
    """v ← v + g·h (first half of symplectic Euler; a coupler may change v afterwards)."""
    env, i = wp.tid()
    v = vel_in[env, i]
    if active_in[env, i] != 0:
        v = v + gravity * h
    vel_out[env, i] = v


@wp.kernel
def advance_and_bounce(
    # Model:
    h: Any,
    floor_z: Any,
    restitution: wp.array(dtype=Any),
    friction: wp.array(dtype=Any),
    # Data in:
    active_in: wp.array2d(dtype=wp.int32),
    pos_in: wp.array2d(dtype=Any),
    vel_in: wp.array2d(dtype=Any),
    # Data out:
    pos_out: wp.array2d(dtype=Any),
    vel_out: wp.array2d(dtype=Any),
):
    """x ← x + v·h, with a bounce where the particle reaches the floor inside the substep.

    floor_z is the height of a particle's centre when it touches the ground (ground + radius). At
    impact, after the fraction s = (z - floor_z)/(-v_z·h) of the substep: the normal speed v_n
    reverses to e·v_n; the tangential velocity loses at most μ·(1 + e)·v_n (Coulomb: tangential
    impulse <= μ × normal impulse) and never reverses; the rest of the substep runs at the new
    velocity. A particle below the floor moving up is lifted onto it.
    """
    env, i = wp.tid()
    x = pos_in[env, i]
    v = vel_in[env, i]
    if active_in[env, i] == 0:
        pos_out[env, i] = x
        vel_out[env, i] = v
        return
    zero = h - h
    one = zero + type(h)(1.0)
    xn = x + v * h
    if xn[2] < floor_z and v[2] < zero:
        e = restitution[i]
        mu = friction[i]
        vn = -v[2]
        s = wp.clamp((x[2] - floor_z) / (vn * h), zero, one)
        vt = type(v)(v[0], v[1], zero)
        vt_len = wp.length(vt)
        if vt_len > zero:
            vt = vt * wp.max(zero, one - mu * (one + e) * vn / vt_len)
        v_new = type(v)(vt[0], vt[1], e * vn)
        rest = (one - s) * h
        xn = type(x)(x[0] + v[0] * s * h + vt[0] * rest,
                     x[1] + v[1] * s * h + vt[1] * rest,
                     floor_z + e * vn * rest)
        v = v_new
    elif xn[2] < floor_z:
        xn = type(x)(xn[0], xn[1], floor_z)
    pos_out[env, i] = xn
    vel_out[env, i] = v


_declared = set()


def declare_overloads(precision: str) -> None:
    """The float32 ("32") or float64 ("64") overloads of every kernel above. The solver calls this
    from ``kernel_modules(layout)`` before the first launch, so a scene compiles only its precision."""
    if precision in _declared:
        return
    s = wp.float64 if precision == "64" else wp.float32
    V = wp.types.vector(3, s)
    wp.overload(integrate_velocity, {"gravity": V, "h": s, "vel_in": wp.array2d(dtype=V),
                                     "vel_out": wp.array2d(dtype=V)})
    wp.overload(advance_and_bounce, {
        "h": s, "floor_z": s, "restitution": wp.array(dtype=s), "friction": wp.array(dtype=s),
        "pos_in": wp.array2d(dtype=V), "vel_in": wp.array2d(dtype=V),
        "pos_out": wp.array2d(dtype=V), "vel_out": wp.array2d(dtype=V)})
    _declared.add(precision)
