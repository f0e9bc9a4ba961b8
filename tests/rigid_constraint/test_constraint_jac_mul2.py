"""The convex solve's warm-start pick computes J·qacc_smooth − aref and J·qacc − aref in one pass over J
(kernels/linalg.cpp `jac_mul2_native`, kernels/convex_solve.py `solve_convex`): each output must equal, bit
for bit, the single product `jac_mul` gives (the same sums in the same order), and J·x − aref of NumPy to
float rounding. J has generic entries with exact-zero runs inside the rows (the zero gap the products skip),
rows of several widths and an all-zero row; both outputs are NaN-filled first, and the rows past the env's
count must stay NaN (not written)."""

from typing import Any

import numpy as np
import pytest
import warp as wp
from polyphys.plugins.rigid.kernels import linalg as L


@wp.kernel
def _products(nrow: wp.array(dtype=wp.int32), nv: int, J: wp.array3d(dtype=Any), xa: wp.array2d(dtype=Any),
              xb: wp.array2d(dtype=Any), sub: wp.array2d(dtype=Any), out_a: wp.array2d(dtype=Any),
              out_b: wp.array2d(dtype=Any), ref_a: wp.array2d(dtype=Any), ref_b: wp.array2d(dtype=Any),
              sc: wp.array3d(dtype=Any)):
    env = wp.tid()
    L.jac_mul2(env, nrow[env], nv, J, xa, xb, sub, out_a, out_b, sc, sc, 0)
    L.jac_mul(env, nrow[env], nv, J, xa, sub, 1, ref_a, sc, sc, 0)
    L.jac_mul(env, nrow[env], nv, J, xb, sub, 1, ref_b, sc, sc, 0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_jac_mul2_equals_two_single_products(dtype):
    rng = np.random.default_rng(7)
    n, rows, nv = 3, 9, 13
    J = rng.normal(size=(n, rows, nv)) * rng.uniform(0.3, 4.0, size=(n, rows, 1))
    J[:, :, 3:8] = 0.0                      # an inner run of zeros in every row (a contact's two dof chains)
    J[:, 2, :] = 0.0                        # an all-zero row
    J[:, 4, :5] = 0.0                       # a row starting late
    J[:, 5, 10:] = 0.0                      # a row ending early
    xa = rng.normal(size=(n, nv)) * 2.5 - 0.7
    xb = rng.normal(size=(n, nv)) * 0.4 + 1.3
    aref = rng.normal(size=(n, rows))
    nrow = np.array([rows, rows - 2, 0], dtype=np.int32)
    dev = "cpu"
    arr = lambda a: wp.array(a.astype(dtype), device=dev)  # noqa: E731
    nan = lambda: wp.array(np.full((n, rows), np.nan, dtype=dtype), device=dev)  # noqa: E731
    out_a, out_b, ref_a, ref_b = nan(), nan(), nan(), nan()
    sc = wp.zeros((n, 1, 1), dtype=wp.dtype_from_numpy(np.dtype(dtype)), device=dev)
    wp.launch(_products, dim=n, inputs=[wp.array(nrow, dtype=wp.int32, device=dev), nv, arr(J), arr(xa), arr(xb), arr(aref),
                                        out_a, out_b, ref_a, ref_b, sc], device=dev)
    oa, ob, ra, rb = (a.numpy() for a in (out_a, out_b, ref_a, ref_b))
    eps = np.finfo(dtype).eps
    Jd, xad, xbd, ard = (a.astype(dtype).astype(np.float64) for a in (J, xa, xb, aref))
    for e in range(n):
        k = nrow[e]
        # bit for bit the single products
        assert oa[e, :k].tobytes() == ra[e, :k].tobytes()
        assert ob[e, :k].tobytes() == rb[e, :k].tobytes()
        # NumPy to rounding: nv products summed, each term bounded by |J||x|
        for o, x in ((oa, xad), (ob, xbd)):
            want = Jd[e, :k] @ x[e] - ard[e, :k]
            bound = 4 * nv * eps * (np.abs(Jd[e, :k]) @ np.abs(x[e]) + np.abs(ard[e, :k]))
            assert np.all(np.isfinite(o[e, :k]))
            assert np.all(np.abs(o[e, :k] - want) <= bound)
        # the rows past the env's count are not written
        assert np.all(np.isnan(oa[e, k:])) and np.all(np.isnan(ob[e, k:]))
