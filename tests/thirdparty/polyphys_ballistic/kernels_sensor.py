"""Warp kernel of the ``ballistic_apex`` sensor (sensors.py); generic over precision like kernels.py."""

from typing import Any

import warp as wp

wp.set_module_options({"enable_backward": False})


@wp.kernel
def apex_sensor(
    # Model:
    start: wp.array(dtype=wp.int32),
    count: wp.array(dtype=wp.int32),
    col: wp.array(dtype=wp.int32),
    # Data in:
    active_in: wp.array2d(dtype=wp.int32),
    pos_in: wp.array2d(dtype=Any),
    vel_in: wp.array2d(dtype=Any),
    # Data out:
    truth_out: wp.array2d(dtype=Any),
):
    """The ``ballistic_apex`` sensor (sensors.py), one thread per env and sensor i: the highest
    centre height and the largest speed of the active particles start[i] .. start[i] + count[i] - 1,
    into columns col[i] and col[i] + 1 of the scene's ground-truth array (NaN: none is active)."""
    env, i = wp.tid()
    z0 = pos_in[env, start[i]][2]
    top = type(z0)(-1.0e30)
    fast = type(z0)(0.0)
    n = wp.int32(0)
    for k in range(start[i], start[i] + count[i]):
        if active_in[env, k] != 0:
            top = wp.max(top, pos_in[env, k][2])
            fast = wp.max(fast, wp.length(vel_in[env, k]))
            n = n + 1
    if n == 0:
        top = type(z0)(wp.nan)
        fast = type(z0)(wp.nan)
    truth_out[env, col[i]] = top
    truth_out[env, col[i] + 1] = fast


_declared = set()


def declare_overloads(precision: str) -> None:
    """The float32 ("32") or float64 ("64") overload of ``apex_sensor`` (called by the sensor's
    ``kernel_modules``)."""
    if precision in _declared:
        return
    s = wp.float64 if precision == "64" else wp.float32
    V = wp.types.vector(3, s)
    wp.overload(apex_sensor, {"pos_in": wp.array2d(dtype=V), "vel_in": wp.array2d(dtype=V),
                              "truth_out": wp.array2d(dtype=s)})
    _declared.add(precision)
