"""Kernels that act on whole env rows of any batch-first array (reset, finite checks).

Arrays of any dtype are reinterpreted as 2D arrays of 32-bit words (or of their float scalar) with
one row per env, so one compiled kernel serves every solver's state.
"""

import warp as wp

wp.set_module_options({"enable_backward": False})   # nothing here is differentiated


@wp.kernel
def copy_env_rows(
    # Model:
    env_mask: wp.array(dtype=wp.int32),
    # Data in:
    src_in: wp.array2d(dtype=wp.uint32),
    # Data out:
    dst_out: wp.array2d(dtype=wp.uint32),
):
    env, i = wp.tid()
    if env_mask[env] != 0:
        dst_out[env, i] = src_in[env, i]


# Finite checks (core/arrays.py, flag_nonfinite). A Warp CPU kernel pays a few ns per thread and per
# array index, about 10x the test itself, so an env row is read as 64-byte vectors (16 float32 or 8
# float64), a run of ``chunk`` vectors per thread, summing value * 0 (0 for a finite value, NaN for
# NaN/inf); the last few values of a row that fill no vector go to the scalar kernel.
vec16f = wp.types.vector(length=16, dtype=wp.float32)
vec8d = wp.types.vector(length=8, dtype=wp.float64)


@wp.kernel
def flag_nonfinite_f32(
    # Model:
    chunk: int,
    # Data in:
    values_in: wp.array2d(dtype=wp.float32),
    # Data out:
    flags_out: wp.array(dtype=wp.int32),
):
    # thread (env, c) checks values [c * chunk, (c + 1) * chunk) of its env row
    env, c = wp.tid()
    acc = wp.float32(0.0)
    for i in range(c * chunk, wp.min((c + 1) * chunk, values_in.shape[1])):
        acc = acc + values_in[env, i] * wp.float32(0.0)
    if not wp.isfinite(acc):
        flags_out[env] = 1


@wp.kernel
def flag_nonfinite_f64(
    # Model:
    chunk: int,
    # Data in:
    values_in: wp.array2d(dtype=wp.float64),
    # Data out:
    flags_out: wp.array(dtype=wp.int32),
):
    env, c = wp.tid()
    acc = wp.float64(0.0)
    for i in range(c * chunk, wp.min((c + 1) * chunk, values_in.shape[1])):
        acc = acc + values_in[env, i] * wp.float64(0.0)
    if not wp.isfinite(acc):
        flags_out[env] = 1


@wp.kernel
def flag_nonfinite_vec16f(
    # Model:
    chunk: int,
    # Data in:
    values_in: wp.array2d(dtype=vec16f),
    # Data out:
    flags_out: wp.array(dtype=wp.int32),
):
    env, c = wp.tid()
    acc = vec16f()
    for i in range(c * chunk, wp.min((c + 1) * chunk, values_in.shape[1])):
        acc = acc + values_in[env, i] * wp.float32(0.0)
    if not wp.isfinite(acc):
        flags_out[env] = 1


@wp.kernel
def flag_nonfinite_vec8d(
    # Model:
    chunk: int,
    # Data in:
    values_in: wp.array2d(dtype=vec8d),
    # Data out:
    flags_out: wp.array(dtype=wp.int32),
):
    env, c = wp.tid()
    acc = vec8d()
    for i in range(c * chunk, wp.min((c + 1) * chunk, values_in.shape[1])):
        acc = acc + values_in[env, i] * wp.float64(0.0)
    if not wp.isfinite(acc):
        flags_out[env] = 1
