"""Kernels of the sensor measurement pipeline (``polyphys.sensors.SensorHub``), shared by every
sensor, a third party's included: the ground truth of all sensors of a scene is one (n_envs, D)
array; these kernels turn it into the measured reading (docs/sensors.md, "Measurement models").

Per column j of an env: y = truth + bias + drift + noise (drift a random walk), then quantization
to a multiple of the resolution, then saturation to [lo, hi]; y enters a ring buffer of the last L
readings and the reading ``delay`` steps old leaves it. Random numbers come from Warp's counter-based
generator (a PCG hash): each (column seed, env, tick) starts its own stream — env the global index
(Scene.set_global_env_offset: a ScenePool worker's env 0 is the pool's env w·n), tick the env's
count of measured steps — so a draw depends neither on partitioning, thread order nor device.
"""

from typing import Any

import warp as wp

wp.set_module_options({"enable_backward": False})

# column datatypes (MuJoCo's sensor datatypes; bool: contact flags, no noise)
COL_REAL = wp.constant(0)
COL_POSITIVE = wp.constant(1)
COL_QUAT = wp.constant(2)        # first column of a (w, x, y, z) quaternion: the 4 are one value
COL_AXIS = wp.constant(3)        # first column of a unit vector: the 3 are one value
COL_BOOL = wp.constant(4)
COL_TAIL = wp.constant(5)        # a later column of a quaternion or axis (handled by its first column)


@wp.func
def _stream(seed: wp.int32, env: wp.int32, tick: wp.int32):
    s = wp.rand_init(seed, env)
    return wp.rand_init(wp.int32(s), tick)


@wp.func
def _quat_noise(w: Any, x: Any, y: Any, z: Any, angle_std: Any, rng: wp.uint32):
    """Right-multiply (w, x, y, z) by a rotation about a random unit axis by an N(0, std²) angle
    (MuJoCo's noise on quaternion sensors)."""
    ang = angle_std * type(w)(wp.randn(rng))
    ax = type(w)(wp.randn(rng))
    ay = type(w)(wp.randn(rng))
    az = type(w)(wp.randn(rng))
    nrm = wp.sqrt(ax * ax + ay * ay + az * az)
    if nrm > type(w)(0.0):
        ax = ax / nrm
        ay = ay / nrm
        az = az / nrm
    s = wp.sin(ang * type(w)(0.5))
    c = wp.cos(ang * type(w)(0.5))
    bx = ax * s
    by = ay * s
    bz = az * s
    return wp.vector(w * c - x * bx - y * by - z * bz, w * bx + x * c + y * bz - z * by,
                     w * by - x * bz + y * c + z * bx, w * bz + x * by - y * bx + z * c)


@wp.func
def _normal_pair(rng: wp.uint32):
    """Two independent standard normal draws (Box–Muller on two uniforms)."""
    u1 = wp.max(wp.randf(rng), float(1.0e-30))
    u2 = wp.randf(rng)
    r = wp.sqrt(float(-2.0) * wp.log(u1))
    a = float(6.283185307179586) * u2
    return wp.vec2(r * wp.cos(a), r * wp.sin(a))


@wp.kernel
def sensor_measure(
    # Model:
    env_offset: wp.int32,
    env_base: wp.array(dtype=wp.int32),
    sqrt_dt: Any,
    col_type: wp.array(dtype=wp.int32),
    col_plain: wp.array(dtype=wp.int32),
    col_sensor: wp.array(dtype=wp.int32),
    col_seed: wp.array(dtype=wp.int32),
    col_drift: wp.array(dtype=Any),
    col_resolution: wp.array(dtype=Any),
    col_lo: wp.array(dtype=Any),
    col_hi: wp.array(dtype=Any),
    noise: wp.array2d(dtype=Any),
    bias: wp.array2d(dtype=Any),
    delay: wp.array2d(dtype=wp.int32),
    # Data in:
    truth_in: wp.array2d(dtype=Any),
    # Data in/out (state):
    head: wp.array(dtype=wp.int32),
    count: wp.array(dtype=wp.int32),
    tick: wp.array(dtype=wp.int32),
    drift: wp.array2d(dtype=Any),
    buffer: wp.array3d(dtype=Any),
    # Data out:
    measured_out: wp.array2d(dtype=Any),
):
    """One thread per env (a loop over its columns: on CPU the per-thread cost of a (env, column)
    grid dominated): advance the ring buffer, measure every column, read the delayed value. Columns
    without noise and drift draw no random numbers (the streams of the others do not depend on it);
    ``col_plain`` columns (no measurement model, no delay buffer) are copied."""
    e = wp.tid()
    L = buffer.shape[1]
    h = (head[e] + 1) % L
    c = wp.min(count[e] + 1, L)
    tk = tick[e] + 1
    head[e] = h
    count[e] = c
    tick[e] = tk
    for j in range(truth_in.shape[1]):
        t = col_type[j]
        if t == COL_TAIL:
            continue
        if col_plain[j] != 0:
            w = 1
            if t == COL_QUAT:
                w = 4
            elif t == COL_AXIS:
                w = 3
            for i in range(w):
                measured_out[e, j + i] = truth_in[e, j + i]
            continue
        k = wp.min(delay[e, col_sensor[j]], c - 1)
        src = (h - k + L) % L
        x = truth_in[e, j]
        zero = type(x)(0.0)
        if t == COL_QUAT or t == COL_AXIS:
            w = 4
            if t == COL_AXIS:
                w = 3
            if noise[e, j] > zero:
                rng = _stream(col_seed[j], env_base[0] + env_offset + e, tk)
                if t == COL_QUAT:
                    q = _quat_noise(truth_in[e, j], truth_in[e, j + 1], truth_in[e, j + 2], truth_in[e, j + 3],
                                    noise[e, j], rng)
                    for i in range(4):
                        buffer[e, h, j + i] = q[i]
                else:
                    q = _quat_noise(type(x)(1.0), zero, zero, zero, noise[e, j], rng)
                    v = wp.vector(truth_in[e, j], truth_in[e, j + 1], truth_in[e, j + 2])
                    r = wp.quat_rotate(wp.quaternion(q[1], q[2], q[3], q[0]), v)
                    for i in range(3):
                        buffer[e, h, j + i] = r[i]
            else:
                for i in range(w):
                    buffer[e, h, j + i] = truth_in[e, j + i]
            for i in range(w):
                measured_out[e, j + i] = buffer[e, src, j + i]
            continue
        y = x
        if t != COL_BOOL:
            d = drift[e, j]
            ns = noise[e, j]
            if col_drift[j] > zero or ns > zero:
                g = _normal_pair(_stream(col_seed[j], env_base[0] + env_offset + e, tk))
                d = d + col_drift[j] * sqrt_dt * type(x)(g[0])
                drift[e, j] = d
                y = x + bias[e, j] + d + ns * type(x)(g[1])
            else:
                y = x + bias[e, j] + d
            if t == COL_POSITIVE:
                # MuJoCo's positive datatype: a zero reading stays zero, a positive one stays >= 0
                if x > zero:
                    y = wp.max(zero, y)
                else:
                    y = x
            res = col_resolution[j]
            if res > zero:
                y = wp.round(y / res) * res
            if not wp.isnan(y):                 # no reading (a NaN) stays NaN
                y = wp.min(wp.max(y, col_lo[j]), col_hi[j])
        buffer[e, h, j] = y
        measured_out[e, j] = buffer[e, src, j]


@wp.kernel
def sensor_reset_rows(
    # Model:
    env_mask: wp.array(dtype=wp.int32),
    # Data out:
    head_out: wp.array(dtype=wp.int32),
    count_out: wp.array(dtype=wp.int32),
    drift_out: wp.array2d(dtype=Any),
    buffer_out: wp.array3d(dtype=Any),
):
    """Per-env reset of the measurement state (the draw counter ``tick`` is not rewound)."""
    e = wp.tid()
    if env_mask[e] == 0:
        return
    head_out[e] = 0
    count_out[e] = 0
    zero = type(drift_out[e, 0])(0.0)
    for j in range(drift_out.shape[1]):
        drift_out[e, j] = zero
    for i in range(buffer_out.shape[1]):
        for j in range(buffer_out.shape[2]):
            buffer_out[e, i, j] = zero


def _overloads():
    for s in (wp.float32, wp.float64):
        a1, a2, a3 = wp.array(dtype=s), wp.array2d(dtype=s), wp.array3d(dtype=s)
        wp.overload(sensor_measure, {"sqrt_dt": s, "col_drift": a1, "col_resolution": a1, "col_lo": a1,
                                     "col_hi": a1, "noise": a2, "bias": a2, "truth_in": a2, "drift": a2,
                                     "buffer": a3, "measured_out": a2})
        wp.overload(sensor_reset_rows, {"drift_out": a2, "buffer_out": a3})


_overloads()
