"""Kernels of ``polyphys.blocks``: a stage's blocks of items claimed by the workers one at a time.

A claiming kernel is launched by every worker of a partition with one thread per env, which takes
unclaimed blocks of env (``next_block``, ``block_after``) until every block is taken. The blocks are
split into one contiguous *home range* per worker (as ``Partition.chunk`` splits items); each range has
a counter (an atomic fetch-and-add across the workers' threads). A worker claims the blocks of its own
range in order, then those left in the other ranges (from the next worker's on), so that with equally
fast workers each computes one contiguous run of blocks (the neighbour data a block reads stays in that
core's caches for the next block) and a slower or descheduled worker's blocks are still taken by the
others. Launched with a thread per block and ``claim`` 0 (one worker, or CUDA), thread c computes block
c. Each block is computed by exactly one worker, with the same operations whoever takes it, so a gather
stage's results do not depend on the number of workers or on which worker was faster. ``release`` (one
thread per env, launched by each worker after its claiming launch) counts the workers through; the
last one resets the counters for the next stage (the barrier after the stage publishes the reset).

``claim`` is 0 (no claiming) or ``claim_code(w, workers)`` (worker w of ``workers``).
Warp's own ``atomic_add`` is a plain read-modify-write on CPU (a CPU launch runs on one thread), so
the claim is a native function: GCC/Clang's ``__atomic_fetch_add`` on CPU, ``atomicAdd`` on CUDA.
"""

import warp as wp

# forward only: nothing here is differentiated
wp.set_module_options({"enable_backward": False})

# counters per env: a row of ROW int32 (64 bytes, a cache line) per worker of the partition: in row k,
# [0] the blocks claimed so far from worker k's home range; in row 0 also [1] the workers through the
# stage. Each range's counter on its own line, so that a worker's claims in its own range do not
# contend with the others'.
ROW = wp.constant(16)
# ``claim`` = 1 + w + workers * CLAIM_STRIDE for worker w of ``workers`` (0: no claiming)
CLAIM_STRIDE = wp.constant(65536)


def claim_code(worker: int, workers: int) -> int:
    """The ``claim`` argument of worker ``worker``'s claiming launch in a partition of ``workers``."""
    return 1 + worker + workers * CLAIM_STRIDE


_FETCH_ADD = """
#if defined(__CUDA_ARCH__)
    return atomicAdd(wp::address(counters, env, slot), 1);
#else
    return __atomic_fetch_add(wp::address(counters, env, slot), 1, __ATOMIC_ACQ_REL);
#endif
"""

_LOAD = """
#if defined(__CUDA_ARCH__)
    return atomicAdd(wp::address(counters, env, slot), 0);
#else
    return __atomic_load_n(wp::address(counters, env, slot), __ATOMIC_ACQUIRE);
#endif
"""


_FETCH_ADD_N = """
#if defined(__CUDA_ARCH__)
    return atomicAdd(wp::address(counters, env, slot), value);
#else
    return __atomic_fetch_add(wp::address(counters, env, slot), value, __ATOMIC_ACQ_REL);
#endif
"""


@wp.func_native(_FETCH_ADD_N)
def fetch_add_n(counters: wp.array2d(dtype=wp.int32), env: int, slot: int, value: int) -> int:
    """counters[env, slot] += value atomically across threads; the value before."""
    ...


@wp.func_native(_FETCH_ADD)
def fetch_add(counters: wp.array2d(dtype=wp.int32), env: int, slot: int) -> int:
    """counters[env, slot] += 1 atomically across threads; the value before."""
    ...


@wp.func_native(_LOAD)
def load(counters: wp.array2d(dtype=wp.int32), env: int, slot: int) -> int:
    """counters[env, slot], read atomically (another worker may be adding to it)."""
    ...


@wp.func
def claim_block(counters: wp.array2d(dtype=wp.int32), claim: int, env: int, n_blocks: int):
    """The next unclaimed block of env for the worker coded in ``claim`` (``claim_code``), or n_blocks
    when none is left: from its own home range first, then from the others' in turn (a range whose
    counter is past its size is skipped without a claim)."""
    code = claim - 1
    w = code % CLAIM_STRIDE
    workers = code / CLAIM_STRIDE
    for t in range(workers):
        k = (w + t) % workers
        a = (k * n_blocks) / workers
        size = ((k + 1) * n_blocks) / workers - a
        if load(counters, env, k * ROW) < size:
            i = fetch_add(counters, env, k * ROW)
            if i < size:
                return a + i
    return n_blocks


@wp.func
def next_block(counters: wp.array2d(dtype=wp.int32), claim: int, env: int, c: int, n_blocks: int):
    """The first block thread (env, c) computes: c itself when the launch does not claim (one
    worker, a thread per block), else the first unclaimed block of env for the claiming worker
    (``claim_block``; n_blocks once all are taken)."""
    if claim == 0:
        return c
    return claim_block(counters, claim, env, n_blocks)


@wp.func
def block_after(counters: wp.array2d(dtype=wp.int32), claim: int, env: int, n_blocks: int):
    """The block a thread computes after one: none (n_blocks) without claiming, else the next
    unclaimed one. A claiming kernel loops ``b = next_block(...)``, ``while b < n_blocks: ...;
    b = block_after(...)``, so a worker's single thread takes blocks until none is left."""
    if claim == 0:
        return n_blocks
    return claim_block(counters, claim, env, n_blocks)


# a two-ended range's counter: the blocks claimed from its front in the low 16 bits, from its back above
ENDS = wp.constant(65536)


@wp.func
def claim_two_ended(counters: wp.array2d(dtype=wp.int32), claim: int, env: int, n_blocks: int):
    """The next block of env for the worker coded in ``claim`` in a two-ended claim, as (block, row):
    worker w takes the blocks of its own home range from the front (row 2w), then those left of the
    next worker's range (w + 1 mod workers) from the back (row 2(w + 1) + 1); (n_blocks, 0) when none
    is left. One counter per range holds both ends' claims (front + ENDS · back), so a block is taken
    once: a claim is valid while the claims before it, from either end, are fewer than the range's
    blocks. Each row is thus written by one worker, front rows in ascending blocks and back rows in
    descending ones: what an order-dependent stage (a counting sort's ranks, ``polyphys.binsort``)
    needs to give the same result whoever took what. At most ENDS / 2 − 1 blocks per range."""
    code = claim - 1
    w = code % CLAIM_STRIDE
    workers = code / CLAIM_STRIDE
    for t in range(2):
        k = (w + t) % workers
        a = (k * n_blocks) / workers
        size = ((k + 1) * n_blocks) / workers - a
        v = load(counters, env, k * ROW)
        if v % ENDS + v / ENDS < size:
            old = fetch_add_n(counters, env, k * ROW, wp.where(t == 0, 1, ENDS))
            taken = old % ENDS + old / ENDS
            if taken < size:
                if t == 0:
                    return wp.vec2i(a + old % ENDS, 2 * k)
                return wp.vec2i(a + size - 1 - old / ENDS, 2 * k + 1)
    return wp.vec2i(n_blocks, 0)


@wp.kernel
def release(
    # Model:
    workers: int,
    # Data out:
    counters_out: wp.array2d(dtype=wp.int32),
):
    """A worker is through its claiming launch; the last of the ``workers`` resets env's counters."""
    env = wp.tid()
    if fetch_add(counters_out, env, 1) == workers - 1:
        for k in range(workers):
            counters_out[env, k * ROW] = 0
        counters_out[env, 1] = 0
