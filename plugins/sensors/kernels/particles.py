"""Ground-truth kernel of the particle region sensor (plugins/sensors/particles.py)."""

from typing import Any

import warp as wp

wp.set_module_options({"enable_backward": False})


@wp.kernel
def region_sensor(
    # Model:
    lo: wp.array(dtype=Any),
    hi: wp.array(dtype=Any),
    col: wp.array(dtype=wp.int32),
    slot: wp.array2d(dtype=wp.int32),
    # Data in:
    pos_in: wp.array2d(dtype=Any),
    vel_in: wp.array2d(dtype=Any),
    active_in: wp.array2d(dtype=wp.int32),
    # Data out:
    truth_out: wp.array2d(dtype=Any),
):
    """Outputs: pos_in, vel_in (mean position and velocity of the active_in particles inside the box
    [lo, hi]; NaN when none is), count. One thread per (env, sensor) walks the particles in order,
    so the sums do not depend on thread scheduling."""
    e, i = wp.tid()
    b0 = lo[i]
    b1 = hi[i]
    zero = type(b0[0])(0.0)
    sp = b0 * zero
    sv = b0 * zero
    n = int(0)
    for k in range(pos_in.shape[1]):
        if active_in[e, k] == 0:
            continue
        p = pos_in[e, k]
        if p[0] >= b0[0] and p[0] <= b1[0] and p[1] >= b0[1] and p[1] <= b1[1] and p[2] >= b0[2] and p[2] <= b1[2]:
            sp = sp + p
            sv = sv + vel_in[e, k]
            n = n + 1
    c = col[i]
    mp = b0 * zero
    mv = b0 * zero
    if n > 0:
        mp = sp / type(zero)(n)
        mv = sv / type(zero)(n)
    else:
        nan = type(zero)(wp.nan)
        mp = type(b0)(nan, nan, nan)
        mv = mp
    if slot[i, 0] >= 0:
        for k in range(3):
            truth_out[e, c + slot[i, 0] + k] = mp[k]
    if slot[i, 1] >= 0:
        for k in range(3):
            truth_out[e, c + slot[i, 1] + k] = mv[k]
    if slot[i, 2] >= 0:
        truth_out[e, c + slot[i, 2]] = type(zero)(n)


_declared: set = set()


def declare_overloads(precision: str) -> None:
    """The float32 ("32") or float64 ("64") overloads of this module's kernels (the sensor's
    ``kernel_modules``): a scene compiles only its own precision."""
    if precision in _declared:
        return
    s = wp.float64 if precision == "64" else wp.float32
    V = wp.types.vector(3, s)
    v1, v2 = wp.array(dtype=V), wp.array2d(dtype=V)
    wp.overload(region_sensor, {"lo": v1, "hi": v1, "pos_in": v2, "vel_in": v2, "truth_out": wp.array2d(dtype=s)})
    _declared.add(precision)
