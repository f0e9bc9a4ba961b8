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
    b = next_block(claims_inout, claim, env, c, n_blocks)
    while b < n_blocks:
        for i in range(b * block, wp.min((b + 1) * block, n)):
            s = float(0.0)  # noqa: UP018 - a Warp variable (a literal would be a constant)
            for k in range(work):
                s += wp.sin(float(i + 1) * 0.001 + float(k) * 0.1) / float(k + 1)
            value_out[env, i] = s
            who_out[env, i] = worker
            hits_out[env, i] = hits_out[env, i] + 1
        b = block_after(claims_inout, claim, env, n_blocks)


@wp.kernel
def probe_claims(
    # Model:
    claim: int,
    n_blocks: int,
    count: int,
    # Data out:
    blocks_out: wp.array(dtype=wp.int32),
    claims_inout: wp.array2d(dtype=wp.int32),
):
    """The first ``count`` blocks (of env 0) the worker coded in ``claim`` claims, in order."""
    blocks_out[0] = next_block(claims_inout, claim, 0, 0, n_blocks)
    for k in range(1, count):
        blocks_out[k] = block_after(claims_inout, claim, 0, n_blocks)


@wp.kernel
def probe_ring(
    # Model:
    worker: int,
    workers: int,
    stage: int,
    # Data in:
    x_in: wp.array(dtype=wp.int64),
    # Data out:
    y_out: wp.array(dtype=wp.int64),
):
    """For tests/core/test_capture_threads_checkpoint.py's plans: worker ``worker`` writes
    y[worker] = (3·x[its neighbour] + stage + worker) mod 1000003 (a read of what another worker wrote
    the stage before: wrong without the barrier between the stages)."""
    y_out[worker] = (x_in[(worker + 1) % workers] * wp.int64(3) + wp.int64(stage + worker)) % wp.int64(1000003)
