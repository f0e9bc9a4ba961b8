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


@wp.kernel
def flag_nonfinite_f32(
    # Data in:
    values_in: wp.array2d(dtype=wp.float32),
    # Data out:
    flags_out: wp.array(dtype=wp.int32),
):
    env, i = wp.tid()
    if not wp.isfinite(values_in[env, i]):
        flags_out[env] = 1


@wp.kernel
def flag_nonfinite_f64(
    # Data in:
    values_in: wp.array2d(dtype=wp.float64),
    # Data out:
    flags_out: wp.array(dtype=wp.int32),
):
    env, i = wp.tid()
    if not wp.isfinite(values_in[env, i]):
        flags_out[env] = 1
