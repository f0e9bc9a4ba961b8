"""Per-env uniform neighbour grid built by a counting sort, inside the captured step.

Why not ``wp.HashGrid``: a HashGrid indexes one array, so n_envs envs would need n_envs grids and
a Python loop of rebuilds per substep; its rebuild is a host-side call whose order inside a cell is
not fixed. This grid instead is a handful of launches over (envs, particles) and (envs, cells):
integer counts, a two-level prefix sum, a scatter and a per-cell insertion sort by particle index.
Every cell therefore lists its particles in ascending index on every device, so neighbour sums run
in a fixed order (bit-exact checkpoints, n_envs = N equals N single runs) and nothing reallocates.

Cell c of an env holds sorted_idx[env, cell_start[env, c] : cell_start[env, c + 1]]. Inactive
particles go to the extra cell n_cells, which is never visited.
"""

import warp as wp

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
def zero_counts(
    # Data out:
    count_out: wp.array2d(dtype=wp.int32),
):
    env, c = wp.tid()
    count_out[env, c] = 0


@wp.kernel
def count_cells(
    # Model:
    lower: wp.vec3, inv_cell: float, dims: wp.vec3i, n_cells: int,
    # Data in:
    pos_in: wp.array2d(dtype=wp.vec3), active_in: wp.array2d(dtype=wp.int32),
    # Data out:
    cell_out: wp.array2d(dtype=wp.int32), rank_out: wp.array2d(dtype=wp.int32),
    count_out: wp.array2d(dtype=wp.int32),
):
    env, i = wp.tid()
    c = n_cells
    if active_in[env, i] != 0:
        c = cell_index(cell_of(pos_in[env, i], lower, inv_cell, dims), dims)
    cell_out[env, i] = c
    # integer atomics: the counts are exact on any device; the rank only fixes a free slot
    rank_out[env, i] = wp.atomic_add(count_out, env, c, 1)


@wp.kernel
def chunk_sums(
    # Model:
    n: int,
    # Data in:
    count_in: wp.array2d(dtype=wp.int32),
    # Data out:
    chunk_out: wp.array2d(dtype=wp.int32),
):
    env, k = wp.tid()
    s = int(0)
    for c in range(k * CHUNK, wp.min((k + 1) * CHUNK, n)):
        s += count_in[env, c]
    chunk_out[env, k] = s


@wp.kernel
def scan_chunks(
    # Model:
    n_chunks: int,
    # Data out:
    chunk_inout: wp.array2d(dtype=wp.int32),
):
    env = wp.tid()
    run = int(0)
    for k in range(n_chunks):
        v = chunk_inout[env, k]
        chunk_inout[env, k] = run
        run += v


@wp.kernel
def scan_local(
    # Model:
    n: int,
    # Data in:
    count_in: wp.array2d(dtype=wp.int32), chunk_in: wp.array2d(dtype=wp.int32),
    # Data out:
    start_out: wp.array2d(dtype=wp.int32),
):
    env, k = wp.tid()
    run = chunk_in[env, k]
    for c in range(k * CHUNK, wp.min((k + 1) * CHUNK, n)):
        start_out[env, c] = run
        run += count_in[env, c]


@wp.kernel
def scatter(
    # Data in:
    cell_in: wp.array2d(dtype=wp.int32), rank_in: wp.array2d(dtype=wp.int32),
    start_in: wp.array2d(dtype=wp.int32),
    # Data out:
    sorted_out: wp.array2d(dtype=wp.int32),
):
    env, i = wp.tid()
    sorted_out[env, start_in[env, cell_in[env, i]] + rank_in[env, i]] = i


@wp.kernel
def sort_cells(
    # Data in:
    start_in: wp.array2d(dtype=wp.int32), count_in: wp.array2d(dtype=wp.int32),
    # Data out:
    sorted_inout: wp.array2d(dtype=wp.int32),
):
    """Insertion sort of each cell's particle list by index (already sorted on CPU: one pass)."""
    env, c = wp.tid()
    a = start_in[env, c]
    b = a + count_in[env, c]
    for k in range(a + 1, b):
        v = sorted_inout[env, k]
        m = k - 1
        while m >= a and sorted_inout[env, m] > v:
            sorted_inout[env, m + 1] = sorted_inout[env, m]
            m -= 1
        sorted_inout[env, m + 1] = v


@wp.kernel
def reduce_chunks(
    # Model:
    n: int,
    # Data in:
    value_in: wp.array2d(dtype=float), active_in: wp.array2d(dtype=wp.int32),
    skip_in: wp.array(dtype=wp.int32),
    # Data out:
    sum_out: wp.array2d(dtype=float), cnt_out: wp.array2d(dtype=float),
):
    """Per (env, chunk): the sum of ``value`` over active particles, in index order."""
    env, k = wp.tid()
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
    n_chunks: int, tol: float, may_stop: int,
    # Data in:
    sum_in: wp.array2d(dtype=float), cnt_in: wp.array2d(dtype=float),
    # Data out:
    done_inout: wp.array(dtype=wp.int32), err_out: wp.array(dtype=float),
):
    """done[env] = 1 once the mean error over active particles is below tol (chunk order fixed)."""
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
    if may_stop != 0 and err <= tol:
        done_inout[env] = 1


@wp.kernel
def zero_flags(
    # Data out:
    done_out: wp.array(dtype=wp.int32),
):
    env = wp.tid()
    done_out[env] = 0
