"""Per-env uniform neighbour grid: cell keys for the core's counting sort, and chunked reductions.

Why not ``wp.HashGrid``: a HashGrid indexes one array, so n_envs envs would need n_envs grids and
a Python loop of rebuilds per substep; its rebuild is a host-side call whose order inside a cell is
not fixed. This grid instead is the core's per-env stable counting sort (``polyphys.binsort``) of
the particles by cell, inside the captured step and split over a partition's workers: every cell
lists its particles in ascending index on every device and for any number of workers, so
neighbour sums run in a fixed order (bit-exact checkpoints, n_envs = N equals N single runs, any
cpu_threads) and nothing reallocates.

Cell c of an env holds sorted_idx[env, cell_start[env, c] : cell_start[env, c + 1]]. Inactive
particles go to the extra cell n_cells, which is never visited. Cells are numbered x fastest, so
the three cells of an x-row are consecutive: a neighbour scan visits 9 rows of 3 cells, each one
contiguous range of the sorted list (``row_range`` in fluid.py).
"""

import warp as wp
from polyphys.kernels.binsort import SCATTER_BLOCK, count_block
from polyphys.kernels.blocks import claim_two_ended

# forward only: no adjoint code (this solver is not differentiable); halves the compile time
wp.set_module_options({"enable_backward": False})

CHUNK = 256   # cells (or particles) per chunk of the two-level scans and reductions


@wp.func
def cell_of(x: wp.vec3, lower: wp.vec3, inv_cell: float, dims: wp.vec3i) -> wp.vec3i:
    # clamped as floats before the int conversion (float clamp maps NaN to the lower bound), so a
    # NaN/inf/huge position gives an edge cell, never an undefined conversion or an index off the grid
    cx = int(wp.floor(wp.clamp((x[0] - lower[0]) * inv_cell, 0.0, float(dims[0] - 1))))
    cy = int(wp.floor(wp.clamp((x[1] - lower[1]) * inv_cell, 0.0, float(dims[1] - 1))))
    cz = int(wp.floor(wp.clamp((x[2] - lower[2]) * inv_cell, 0.0, float(dims[2] - 1))))
    return wp.vec3i(cx, cy, cz)


@wp.func
def cell_index(c: wp.vec3i, dims: wp.vec3i) -> int:
    return (c[2] * dims[1] + c[1]) * dims[0] + c[0]


@wp.kernel
def cell_keys(
    # Model:
    lower: wp.vec3, inv_cell: float, dims: wp.vec3i, n_cells: int, i0: int,
    # Data in:
    pos_in: wp.array2d(dtype=wp.vec3), active_in: wp.array2d(dtype=wp.int32),
    # Data out:
    key_out: wp.array2d(dtype=wp.int32),
):
    """Each particle's cell (the sort key); inactive particles: the extra cell n_cells."""
    env, q = wp.tid()
    i = i0 + q
    c = n_cells
    if active_in[env, i] != 0:
        c = cell_index(cell_of(pos_in[env, i], lower, inv_cell, dims), dims)
    key_out[env, i] = c


@wp.kernel
def cell_keys_claimed(
    # Model:
    lower: wp.vec3, inv_cell: float, dims: wp.vec3i, n_cells: int, n: int, claim: int,
    # Data in:
    pos_in: wp.array2d(dtype=wp.vec3), active_in: wp.array2d(dtype=wp.int32),
    # Data out:
    key_out: wp.array2d(dtype=wp.int32), rank_out: wp.array2d(dtype=wp.int32),
    counts_out: wp.array3d(dtype=wp.int32), block_counts_out: wp.array3d(dtype=wp.int32),
    claims_inout: wp.array2d(dtype=wp.int32),
):
    """``cell_keys`` and the sort's count as one claimed stage (``BinSort.sort(..., count=...)``): per
    block of SCATTER_BLOCK particles the worker claims (two-ended), their cells, then their count."""
    env = wp.tid()
    n_blocks = (n + SCATTER_BLOCK - 1) / SCATTER_BLOCK
    block = claim_two_ended(claims_inout, claim, env, n_blocks)
    while block[0] < n_blocks:
        for i in range(block[0] * SCATTER_BLOCK, wp.min((block[0] + 1) * SCATTER_BLOCK, n)):
            c = n_cells
            if active_in[env, i] != 0:
                c = cell_index(cell_of(pos_in[env, i], lower, inv_cell, dims), dims)
            key_out[env, i] = c
        count_block(env, block, n, key_out, rank_out, counts_out, block_counts_out)
        block = claim_two_ended(claims_inout, claim, env, n_blocks)


@wp.kernel
def reduce_chunks(
    # Model:
    n: int, k0: int,
    # Data in:
    value_in: wp.array2d(dtype=float), active_in: wp.array2d(dtype=wp.int32),
    skip_in: wp.array(dtype=wp.int32),
    # Data out:
    sum_out: wp.array2d(dtype=float), cnt_out: wp.array2d(dtype=float),
):
    """Per (env, chunk): the sum of ``value`` over active particles, in index order (chunks from k0)."""
    env, q = wp.tid()
    k = k0 + q
    if skip_in[env] != 0:
        return
    s = float(0.0)
    a = float(0.0)
    for i in range(k * CHUNK, wp.min((k + 1) * CHUNK, n)):
        if active_in[env, i] != 0:
            s += value_in[env, i]
            a += 1.0
    sum_out[env, k] = s
    cnt_out[env, k] = a


@wp.kernel
def check_converged(
    # Model:
    n_chunks: int, tol: float, min_iters: int,
    # Data in:
    sum_in: wp.array2d(dtype=float), cnt_in: wp.array2d(dtype=float), iter_in: wp.array(dtype=wp.int32),
    # Data out:
    done_inout: wp.array(dtype=wp.int32), err_out: wp.array(dtype=float),
):
    """done[env] = 1 once the mean error over active particles is below tol (chunk order fixed),
    from the min_iters-th iteration on (iter_in[0]: iterations done before this one)."""
    env = wp.tid()
    if done_inout[env] != 0:
        return
    s = float(0.0)
    a = float(0.0)
    for k in range(n_chunks):
        s += sum_in[env, k]
        a += cnt_in[env, k]
    err = s / wp.max(a, 1.0)
    err_out[env] = err
    if iter_in[0] + 1 >= min_iters and err <= tol:
        done_inout[env] = 1


@wp.kernel
def loop_begin(
    # Model:
    max_iters: int,
    # Data out:
    iter_out: wp.array(dtype=wp.int32), go_out: wp.array(dtype=wp.int32),
):
    """Start of a solve's iterations: no iteration done; go on if there may be one."""
    iter_out[0] = 0
    go_out[0] = wp.where(max_iters > 0, 1, 0)


@wp.kernel
def loop_next(
    # Model:
    max_iters: int,
    # Data in:
    done_in: wp.array(dtype=wp.int32),
    # Data out:
    iter_inout: wp.array(dtype=wp.int32), go_out: wp.array(dtype=wp.int32),
):
    """After an iteration: go on while some env of the partition has not converged and the cap is
    not reached (the condition of the solve's device-side loop)."""
    it = iter_inout[0] + 1
    iter_inout[0] = it
    go = int(0)
    if it < max_iters:
        for e in range(done_in.shape[0]):
            if done_in[e] == 0:
                go = 1
    go_out[0] = go


@wp.kernel
def zero_flags(
    # Data out:
    done_out: wp.array(dtype=wp.int32),
):
    env = wp.tid()
    done_out[env] = 0
