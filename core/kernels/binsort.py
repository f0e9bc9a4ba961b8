"""Kernels of ``polyphys.binsort``: a per-env stable counting sort of items by an integer key.

Each worker of a partition counts the keys of its share of the items in a row of its own
(``counts[env, w, key]``; the launch runs its items in index order on CPU, so an item's rank is its
place among the share's items of that key) and of each block of ``BLOCK`` keys, the keys are then
scanned in blocks (each worker scans its share of the block counts, then the keys of those blocks,
turning each worker's counts into its offsets), and every item lands at ``offset[w, key] + rank``. Items of one key therefore come
in ascending index, whatever the number of workers, and no two workers ever write the same word.
On CUDA the ranks come from integer atomics in no fixed order; ``sort_bins`` restores the index
order inside each key there.
"""

import warp as wp

from .blocks import block_after, claim_two_ended, next_block

# forward only: nothing here is differentiated
wp.set_module_options({"enable_backward": False})

BLOCK = 256      # keys per block of the two-level scan
# items per block of the claimed scatter (``scatter_claimed``) and count (``count_claimed``): 100k items make
# ~200 blocks, two claims each
SCATTER_BLOCK = wp.constant(512)


@wp.kernel
def zero_counts(
    # Model:
    w: int,
    k0: int,
    # Data out:
    counts_out: wp.array3d(dtype=wp.int32),
):
    env, q = wp.tid()
    counts_out[env, w, k0 + q] = 0


@wp.kernel
def clear_item_counts(
    # Model:
    w: int,
    i0: int,
    # Data in:
    key_in: wp.array2d(dtype=wp.int32),
    # Data out:
    counts_out: wp.array3d(dtype=wp.int32),
):
    """counts[env, w, key[i]] = 0 for worker w's items: with the keys of the last sort, the only
    entries of row w that sort left non-zero (``scan_local`` writes offsets where there are counts)."""
    env, q = wp.tid()
    counts_out[env, w, key_in[env, i0 + q]] = 0


@wp.kernel
def count_keys(
    # Model:
    w: int,
    i0: int,
    # Data in:
    key_in: wp.array2d(dtype=wp.int32),
    # Data out:
    rank_out: wp.array2d(dtype=wp.int32),
    counts_out: wp.array3d(dtype=wp.int32),
    block_counts_out: wp.array3d(dtype=wp.int32),
):
    """Worker w's count of each key (an item's rank: its count before it) and of each block of keys."""
    env, q = wp.tid()
    i = i0 + q
    k = key_in[env, i]
    rank_out[env, i] = wp.atomic_add(counts_out, env, w, k, 1)
    wp.atomic_add(block_counts_out, env, w, k / BLOCK, 1)


@wp.kernel
def clear_rows(
    # Model:
    w: int,
    workers: int,
    # Data out:
    counts_out: wp.array3d(dtype=wp.int32),
    block_counts_out: wp.array3d(dtype=wp.int32),
):
    """Zero the two rows worker w counts into in a claimed count (``count_block``: the front of its own
    range, the back of the next one), only in the blocks of keys its last sort's block counts say it
    had items in: elsewhere the rows are zero already (``scan_local`` writes where there are counts)."""
    env = wp.tid()
    n_keys = counts_out.shape[2]
    for t in range(2):
        row = wp.where(t == 0, 2 * w, 2 * ((w + 1) % workers) + 1)
        for kb in range(block_counts_out.shape[2]):
            if block_counts_out[env, row, kb] != 0:
                for k in range(kb * BLOCK, wp.min((kb + 1) * BLOCK, n_keys)):
                    counts_out[env, row, k] = 0
                block_counts_out[env, row, kb] = 0


@wp.func
def count_block(
    env: int,
    block: wp.vec2i,
    n: int,
    key_in: wp.array2d(dtype=wp.int32),
    rank_out: wp.array2d(dtype=wp.int32),
    counts_out: wp.array3d(dtype=wp.int32),
    block_counts_out: wp.array3d(dtype=wp.int32),
):
    """Count the items of a claimed block (``claim_two_ended``: (block, row)) of SCATTER_BLOCK items in its row:
    a front row's block in ascending index (rank: the row's count of the key before the item), a back
    row's in descending index (rank −1 − the count of the key among the row's items after it); the row
    is written by this thread alone in the stage, so plain increments."""
    row = block[1]
    i0 = block[0] * SCATTER_BLOCK
    i1 = wp.min(i0 + SCATTER_BLOCK, n)
    back = row % 2
    for t in range(i1 - i0):
        i = wp.where(back == 0, i0 + t, i1 - 1 - t)
        k = key_in[env, i]
        c = counts_out[env, row, k]
        counts_out[env, row, k] = c + 1
        block_counts_out[env, row, k / BLOCK] = block_counts_out[env, row, k / BLOCK] + 1
        rank_out[env, i] = wp.where(back == 0, c, -1 - c)


@wp.kernel
def count_claimed(
    # Model:
    n: int,
    claim: int,
    # Data out:
    key_inout: wp.array2d(dtype=wp.int32),
    rank_out: wp.array2d(dtype=wp.int32),
    counts_out: wp.array3d(dtype=wp.int32),
    block_counts_out: wp.array3d(dtype=wp.int32),
    claims_inout: wp.array2d(dtype=wp.int32),
):
    """The claimed count (``BinSort.sort(..., count=(count_claimed, [], []))``) of items whose keys the
    caller wrote in ``key`` before the sort (read only here; one thread per env and worker): blocks of
    SCATTER_BLOCK items taken two-ended (``claim_two_ended``) and counted (``count_block``)."""
    env = wp.tid()
    n_blocks = (n + SCATTER_BLOCK - 1) / SCATTER_BLOCK
    block = claim_two_ended(claims_inout, claim, env, n_blocks)
    while block[0] < n_blocks:
        count_block(env, block, n, key_inout, rank_out, counts_out, block_counts_out)
        block = claim_two_ended(claims_inout, claim, env, n_blocks)


@wp.kernel
def scan_blocks(
    # Model:
    b0: int,
    b1: int,
    # Data in:
    block_counts_in: wp.array3d(dtype=wp.int32),
    # Data out:
    block_out: wp.array2d(dtype=wp.int32),
):
    """block[b] = the items of every block before b (all workers' block counts), for the blocks b in
    [b0, b1): the items before b0 summed first, so that each worker scans its own share of the blocks
    in the stage of its local scans (integer sums: the same offsets for any split)."""
    env = wp.tid()
    n_w = block_counts_in.shape[1]
    run = int(0)
    for b in range(b0):
        for w in range(n_w):
            run += block_counts_in[env, w, b]
    for b in range(b0, b1):
        block_out[env, b] = run
        for w in range(n_w):
            run += block_counts_in[env, w, b]


@wp.kernel
def scan_local(
    # Model:
    n_keys: int,
    b0: int,
    two_ended: int,
    # Data in:
    block_in: wp.array2d(dtype=wp.int32),
    block_counts_in: wp.array3d(dtype=wp.int32),
    # Data out:
    counts_inout: wp.array3d(dtype=wp.int32),
    start_out: wp.array2d(dtype=wp.int32),
):
    """start[key] = items of smaller keys; each row's non-zero count becomes its offset
    start[key] + the counts of the rows before it (a zero count stays zero: no item of that
    row has that key, and the row stays zero but for the keys of its items). A row with no
    item in the block (its block count is zero) has only zeros there: it is not read. ``two_ended``
    (a claimed count, ``count_block``): the odd rows are back rows, whose offset is the end of their
    run (their ranks count down from it)."""
    env, q = wp.tid()
    b = b0 + q
    run = block_in[env, b]
    k0 = b * BLOCK
    k1 = wp.min(k0 + BLOCK, n_keys)
    n_w = counts_inout.shape[1]
    n_busy = int(0)                  # workers with items in this block, and the last of them
    w1 = int(0)
    for w in range(n_w):
        if block_counts_in[env, w, b] != 0:
            n_busy += 1
            w1 = w
    if n_busy == 0:
        k = wp.max(k0, 0)           # while loops from ≥ 0: no step-sign test, no index wrap (docs/sph.md)
        while k < k1:
            start_out[env, k] = run
            k += 1
    elif n_busy == 1:
        k = wp.max(k0, 0)
        while k < k1:
            start_out[env, k] = run
            c = counts_inout[env, w1, k]
            if c != 0:
                counts_inout[env, w1, k] = wp.where(two_ended * (w1 % 2) != 0, run + c, run)
                run += c
            k += 1
    else:
        k = wp.max(k0, 0)
        while k < k1:
            start_out[env, k] = run
            for w in range(n_w):
                if block_counts_in[env, w, b] != 0:
                    c = counts_inout[env, w, k]
                    if c != 0:
                        counts_inout[env, w, k] = wp.where(two_ended * (w % 2) != 0, run + c, run)
                        run += c
            k += 1
    if b == block_in.shape[1] - 1:
        start_out[env, n_keys] = run


@wp.kernel
def scatter_items(
    # Model:
    w: int,
    i0: int,
    # Data in:
    key_in: wp.array2d(dtype=wp.int32),
    rank_in: wp.array2d(dtype=wp.int32),
    offsets_in: wp.array3d(dtype=wp.int32),
    # Data out:
    order_out: wp.array2d(dtype=wp.int32),
):
    env, q = wp.tid()
    i = i0 + q
    order_out[env, offsets_in[env, w, key_in[env, i]] + rank_in[env, i]] = i


@wp.kernel
def scatter_items_vec3(
    # Model:
    w: int,
    i0: int,
    # Data in:
    key_in: wp.array2d(dtype=wp.int32),
    rank_in: wp.array2d(dtype=wp.int32),
    offsets_in: wp.array3d(dtype=wp.int32),
    payload_in: wp.array2d(dtype=wp.vec3),
    # Data out:
    order_out: wp.array2d(dtype=wp.int32),
    payload_out: wp.array2d(dtype=wp.vec3),
):
    """``scatter_items`` that also copies each item's vec3 (a position) to its sorted place."""
    env, q = wp.tid()
    i = i0 + q
    k = offsets_in[env, w, key_in[env, i]] + rank_in[env, i]
    order_out[env, k] = i
    payload_out[env, k] = payload_in[env, i]


@wp.func
def counting_worker(i: int, workers: int, n: int):
    """The worker whose counting share (``Partition.chunk(w, n)``: near-equal contiguous shares, the
    first ones one larger) holds item i: the row of counts its offset is in."""
    k = wp.min(workers, n)
    base = n / k
    extra = n - base * k
    if i < extra * (base + 1):
        return i / (base + 1)
    return extra + (i - extra * (base + 1)) / base


@wp.func
def count_range(b: int, workers: int, n_blocks: int):
    """The home range (``claim_two_ended``) that block b of n_blocks is in."""
    r = int(0)
    while ((r + 1) * n_blocks) / workers <= b:
        r += 1
    return r


@wp.kernel
def scatter_claimed(
    # Model:
    workers: int,
    n: int,
    two_ended: int,
    claim: int,
    # Data in:
    key_in: wp.array2d(dtype=wp.int32),
    rank_in: wp.array2d(dtype=wp.int32),
    offsets_in: wp.array3d(dtype=wp.int32),
    with_payload: int,
    payload_in: wp.array2d(dtype=wp.vec3),
    # Data out:
    claims_inout: wp.array2d(dtype=wp.int32),
    order_out: wp.array2d(dtype=wp.int32),
    payload_out: wp.array2d(dtype=wp.vec3),
):
    """``scatter_items_vec3`` over blocks of SCATTER_BLOCK items that the workers claim
    (polyphys.blocks): thread (env, c) block c, or with ``claim`` unclaimed blocks until none is left.
    An item's offset is in the row that counted it, whoever scatters it: its counting worker's
    (``counting_worker``) after a count in fixed shares, or (``two_ended`` 1: a claimed count over
    the same blocks, ``count_claimed``) its block's home range's front row, or back row where its rank
    is negative; every item lands on its own place, so the blocks may go in any order. The payload
    (``with_payload`` 1) is copied as ``scatter_items_vec3`` does."""
    env, c = wp.tid()
    n_blocks = (n + SCATTER_BLOCK - 1) / SCATTER_BLOCK
    b = next_block(claims_inout, claim, env, c, n_blocks)
    while b < n_blocks:
        front = int(0)
        if two_ended != 0:
            front = 2 * count_range(b, workers, n_blocks)
        for i in range(b * SCATTER_BLOCK, wp.min((b + 1) * SCATTER_BLOCK, n)):
            rank = rank_in[env, i]
            row = front + wp.where(rank < 0, 1, 0)
            if two_ended == 0:
                row = counting_worker(i, workers, n)
            k = offsets_in[env, row, key_in[env, i]] + rank
            order_out[env, k] = i
            if with_payload != 0:
                payload_out[env, k] = payload_in[env, i]
        b = block_after(claims_inout, claim, env, n_blocks)


@wp.kernel
def sort_bins(
    # Data in:
    start_in: wp.array2d(dtype=wp.int32),
    # Data out:
    order_inout: wp.array2d(dtype=wp.int32),
):
    """Insertion sort of each key's items by index (CUDA, where atomics gave the ranks)."""
    env, k = wp.tid()
    a = start_in[env, k]
    b = start_in[env, k + 1]
    for t in range(a + 1, b):
        v = order_inout[env, t]
        m = t - 1
        while m >= a and order_inout[env, m] > v:
            order_inout[env, m + 1] = order_inout[env, m]
            m -= 1
        order_inout[env, m + 1] = v


@wp.kernel
def gather_vec3(
    # Data in:
    order_in: wp.array2d(dtype=wp.int32),
    payload_in: wp.array2d(dtype=wp.vec3),
    # Data out:
    payload_out: wp.array2d(dtype=wp.vec3),
):
    """payload_out[k] = payload_in[order[k]] (CUDA, after ``sort_bins`` reordered the items)."""
    env, k = wp.tid()
    payload_out[env, k] = payload_in[env, order_in[env, k]]
