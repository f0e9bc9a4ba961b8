"""Tool stages: pose integration and the reaction readback. Generic over float32/float64."""

from typing import Any

import warp as wp


@wp.kernel
def integrate_pose(
    # Model:
    h: Any,
    # Data in:
    vel_in: wp.array2d(dtype=Any),
    ang_in: wp.array2d(dtype=Any),
    # Data in/out:
    pos: wp.array2d(dtype=Any),
    quat: wp.array2d(dtype=Any),
):
    """pos += h·v; quat = exp(h·ω) ⊗ quat (ω in the world frame), renormalized."""
    env, t = wp.tid()
    pos[env, t] = pos[env, t] + h * vel_in[env, t]
    w = ang_in[env, t]
    wn = wp.length(w)
    q = quat[env, t]
    if wn > h * type(h)(0.0):
        half = type(h)(0.5) * wn * h
        s = wp.sin(half) / wn
        dq = type(q)(w[0] * s, w[1] * s, w[2] * s, wp.cos(half))
        quat[env, t] = wp.normalize(dq * q)


@wp.kernel
def begin_step(
    # Data out:
    impulse_out: wp.array2d(dtype=Any),
    angular_impulse_out: wp.array2d(dtype=Any),
):
    env, t = wp.tid()
    impulse_out[env, t] = type(impulse_out[env, t])()
    angular_impulse_out[env, t] = type(angular_impulse_out[env, t])()


@wp.kernel
def take_reaction(
    # Model:
    h: Any,
    # Data in/out:
    coupling_force: wp.array2d(dtype=wp.vec3),
    coupling_torque: wp.array2d(dtype=wp.vec3),
    # Data out:
    force_out: wp.array2d(dtype=Any),
    torque_out: wp.array2d(dtype=Any),
    impulse_out: wp.array2d(dtype=Any),
    angular_impulse_out: wp.array2d(dtype=Any),
):
    """Read this substep's coupling reaction (force on the tool, torque about its origin; written by a
    coupler), add h·f to the step's impulse, clear the buffer. The tool's motion is prescribed: the
    reaction moves nothing."""
    env, t = wp.tid()
    f = coupling_force[env, t]
    tq = coupling_torque[env, t]
    fo = type(force_out[env, t])(type(h)(f[0]), type(h)(f[1]), type(h)(f[2]))
    to = type(torque_out[env, t])(type(h)(tq[0]), type(h)(tq[1]), type(h)(tq[2]))
    force_out[env, t] = fo
    torque_out[env, t] = to
    impulse_out[env, t] = impulse_out[env, t] + h * fo
    angular_impulse_out[env, t] = angular_impulse_out[env, t] + h * to
    coupling_force[env, t] = wp.vec3(0.0, 0.0, 0.0)
    coupling_torque[env, t] = wp.vec3(0.0, 0.0, 0.0)
