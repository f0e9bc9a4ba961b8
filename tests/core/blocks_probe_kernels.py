"""A probe kernel for tests/core/test_blocks.py: a claimed stage that records who computed each item."""

import warp as wp
from polyphys.kernels.blocks import block_after, next_block


@wp.kernel
def probe_claimed(
    # Model:
    n: int,
    block: int,
    worker: int,
    claim: int,
    work: int,
    # Data out:
    value_out: wp.array2d(dtype=float),
    who_out: wp.array2d(dtype=wp.int32),
    hits_out: wp.array2d(dtype=wp.int32),
    claims_inout: wp.array2d(dtype=wp.int32),
):
    """Thread (env, c): the items of block c, or with ``claim`` of unclaimed blocks until none is
    left; each gets a value that depends only on the item — ``work`` terms of a series, enough to
    keep a worker busy — the worker's id and one hit (plain increments: an item computed twice
    shows as 2)."""
    env, c = wp.tid()
    n_blocks = (n + block - 1) / block
    b = next_block(claims_inout, claim, env, c)
    while b < n_blocks:
        for i in range(b * block, wp.min((b + 1) * block, n)):
            s = float(0.0)  # noqa: UP018 - a Warp variable (a literal would be a constant)
            for k in range(work):
                s += wp.sin(float(i + 1) * 0.001 + float(k) * 0.1) / float(k + 1)
            value_out[env, i] = s
            who_out[env, i] = worker
            hits_out[env, i] = hits_out[env, i] + 1
        b = block_after(claims_inout, claim, env, n_blocks)
