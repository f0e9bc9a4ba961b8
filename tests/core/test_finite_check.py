"""polyphys.arrays.flag_nonfinite (the per-env NaN check inside every step): a NaN/inf anywhere in an
env row flags that env and no other — in the part read as 64-byte vectors, in the scalar tail, in
column slices (a worker's share), float32 and float64 — against NumPy's isfinite."""

import itertools

import numpy as np
import pytest
import warp as wp
from polyphys import arrays


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_flags_exactly_the_envs_with_a_nonfinite_value(dtype):
    rng = np.random.default_rng(5)
    n_envs = 3
    for n in (1, 7, 8, 15, 16, 17, 33, 1000, 2 * 16 * arrays.NONFINITE_CHUNK + 5):
        for bad, pos in itertools.product((np.nan, np.inf, -np.inf), (0, n // 2, n - 1)):
            a = rng.uniform(-1e3, 1e3, size=(n_envs, n)).astype(dtype)
            a[1, pos] = bad
            a[2, (pos * 7 + 3) % n] = bad if n > 1 else a[2, 0]
            want = (~np.isfinite(a)).any(axis=1).astype(np.int32)
            v = wp.array(a, device="cpu")
            flags = wp.zeros(n_envs, dtype=wp.int32, device="cpu")
            arrays.flag_nonfinite([v], flags)
            np.testing.assert_array_equal(flags.numpy(), want, err_msg=f"n={n} bad={bad} pos={pos}")
            # column shares, as a partition's workers check a big state (interfaces.Solver.nan_check)
            flags.zero_()
            for s in range(0, n, 37):
                arrays.flag_nonfinite([v[:, s:min(n, s + 37)]], flags)
            np.testing.assert_array_equal(flags.numpy(), want, err_msg=f"slices n={n} bad={bad} pos={pos}")


def test_finite_rows_flag_nothing():
    a = np.full((2, 4099), np.finfo(np.float32).max, np.float32)      # huge but finite: value * 0 = 0
    a[1] = -np.finfo(np.float32).tiny
    flags = wp.zeros(2, dtype=wp.int32, device="cpu")
    arrays.flag_nonfinite([wp.array(a, device="cpu")], flags)
    assert flags.numpy().tolist() == [0, 0]
