"""Kernels of ``polyphys.blocks``: a stage's blocks of items claimed by the workers one at a time.

A claiming kernel is launched by every worker of a partition with one thread per env, which takes
the next unclaimed block of env from a counter (``next_block``, ``block_after``: an atomic
fetch-and-add across the workers' threads) until every block is taken. Launched with a thread per
block and ``claim`` 0 (one worker, or CUDA), thread c computes block c. Each block
is computed by exactly one worker, with the same operations whoever takes it, so a gather stage's
results do not depend on the number of workers or on which worker was faster. ``release`` (one
thread per env, launched by each worker after its claiming launch) counts the workers through; the
last one resets the counters for the next stage (the barrier after the stage publishes the reset).

Warp's own ``atomic_add`` is a plain read-modify-write on CPU (a CPU launch runs on one thread), so
the claim is a native function: GCC/Clang's ``__atomic_fetch_add`` on CPU, ``atomicAdd`` on CUDA.
"""

import warp as wp

# forward only: nothing here is differentiated
wp.set_module_options({"enable_backward": False})

# counters per env: [0] the next block to claim, [1] the workers through the stage; a row is 64
# bytes (a cache line) so that two envs' counters do not share one
ROW = 16

_FETCH_ADD = """
#if defined(__CUDA_ARCH__)
    return atomicAdd(wp::address(counters, env, slot), 1);
#else
    return __atomic_fetch_add(wp::address(counters, env, slot), 1, __ATOMIC_ACQ_REL);
#endif
"""


@wp.func_native(_FETCH_ADD)
def fetch_add(counters: wp.array2d(dtype=wp.int32), env: int, slot: int) -> int:
    """counters[env, slot] += 1 atomically across threads; the value before."""
    ...


@wp.func
def next_block(counters: wp.array2d(dtype=wp.int32), claim: int, env: int, c: int):
    """The first block thread (env, c) computes: c itself when the launch does not claim (one
    worker, a thread per block), else the next unclaimed block of env (>= the block count once all
    are taken)."""
    if claim == 0:
        return c
    return fetch_add(counters, env, 0)


@wp.func
def block_after(counters: wp.array2d(dtype=wp.int32), claim: int, env: int, n_blocks: int):
    """The block a thread computes after one: none (n_blocks) without claiming, else the next
    unclaimed one. A claiming kernel loops ``b = next_block(...)``, ``while b < n_blocks: ...;
    b = block_after(...)``, so a worker's single thread takes blocks until none is left."""
    if claim == 0:
        return n_blocks
    return fetch_add(counters, env, 0)


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
        counters_out[env, 0] = 0
        counters_out[env, 1] = 0
