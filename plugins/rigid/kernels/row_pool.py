"""The compact row pool's addressing (docs/constraint.md, "The row pool"): ``pool_rows2(a, off)`` (2-d arrays) and
``pool_rows3(a, off)`` (3-d) are a row array
of the pool (model.ROW_POOL_FIELDS, (n, max_rows[, k])) moved ``off`` rows on, so that an env's kernel reads its
rows a[env, r] — Warp indexing and native bodies alike — at the env's pool address (row env·max_rows +
d.efc_off[env]). Each kernel that reads or writes the rows takes its pooled arrays through it once, at the
top (``a = pool_rows2(d.a, d.efc_off[env])``); the offset 0 is the array itself. Native body:
kernels/row_pool.cpp (one body for every overload: the pointer moves by ``off`` rows of the array's own
row stride). One name per dimension, overloaded per scalar type (float64, float32, int32): Warp resolves the
overloads of a native function by dtype but takes the first overload's dimension for its result."""

import warp as wp

from . import native

wp.set_module_options({"enable_backward": False})

_BODY = native.body(__file__, "pool_rows_native")


@wp.func_native(_BODY)
def pool_rows2(a: wp.array2d(dtype=wp.float64), off: int) -> wp.array2d(dtype=wp.float64): ...


@wp.func_native(_BODY)
def pool_rows2(a: wp.array2d(dtype=wp.float32), off: int) -> wp.array2d(dtype=wp.float32): ...  # noqa: F811


@wp.func_native(_BODY)
def pool_rows2(a: wp.array2d(dtype=wp.int32), off: int) -> wp.array2d(dtype=wp.int32): ...  # noqa: F811


@wp.func_native(_BODY)
def pool_rows3(a: wp.array3d(dtype=wp.float64), off: int) -> wp.array3d(dtype=wp.float64): ...  # noqa: F811


@wp.func_native(_BODY)
def pool_rows3(a: wp.array3d(dtype=wp.float32), off: int) -> wp.array3d(dtype=wp.float32): ...  # noqa: F811


@wp.func_native(_BODY)
def pool_rows3(a: wp.array3d(dtype=wp.int32), off: int) -> wp.array3d(dtype=wp.int32): ...  # noqa: F811
