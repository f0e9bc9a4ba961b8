"""Particle <-> grid transfers of MLS-MPM with APIC (Hu et al. 2018), quadratic B-splines.

P2G, in two stages:
  ``p2g_stress`` (over particles): F <- (I + h C) F, plastic return mapping, Kirchhoff stress τ, and
    the particle's affine momentum matrix A = m_p C_p − h V_p D⁻¹ τ (D⁻¹ = 4/dx²) and slab (below);
  ``p2g_scatter_slabs`` (CPU: one thread per slab of one colour, over the slab-sorted particle lists
    of ``slab_place``; ``p2g_scatter`` on CUDA: over all particles in one pass):
    m_i += w m_p,  (m v)_i += w (m_p v_p + A (x_i − x_p)),
    and, when a coupler reads the nodes (``grid_mx_out`` not empty), (m x̄)_i += w m_p (x_p − x_i): the node's
    material centroid x̄_i, where the coupler evaluates the rigid SDF (docs/legacy.md).
G2P: v_p = Σ w v_i,  C_p = D⁻¹ Σ w v_i (x_i − x_p)ᵀ,  x_p += h v_p.

Race-free scatter in a fixed order (docs/mpm.md, "Threads"): a particle whose 3×3×3 nodes start at
x-layer b belongs to slab b // SLAB; the nodes of slabs two apart never overlap, so the even slabs
are scattered first, then the odd ones, each slab's particles in index order. A node then sums
the particles of its (at most two) slabs in an order fixed by the geometry alone, whichever
worker scatters a slab: results do not depend on the worker count. Each worker scatters a
contiguous range of slabs holding about its share of the particles (``slab_ranges``, from the slab
counts of the stress stage), and reads only those slabs' particles from slab-sorted lists: on CPU each
claimed block's particles, sorted by the worker that computed the block (``p2g_stress_blocks``), or
with fixed shares each worker's share, sorted after ``p2g_stress`` (``slab_starts``, ``slab_place``).
Launch grids are (n_envs, n) with an element offset (a worker's share); every env has its own grid
rows, so envs never interact. Kernels are generic over float32/float64: ``declare_overloads(precision)``
adds one precision's overloads before the first launch.
"""

from typing import Any

import warp as wp
from polyphys.kernels.blocks import CLAIM_STRIDE, block_after, next_block

from .constitutive import LIQUID, SAND, SNOW, kirchhoff, project_sigma

wp.set_module_options({"enable_backward": False})   # nothing here is differentiated


@wp.func
def grid_base(x: Any, lo: Any, inv_dx: Any):
    """Index of the first of the 3×3×3 nodes a particle at x reaches."""
    g = (x - lo) * inv_dx
    half = type(inv_dx)(0.5)
    return wp.vec3i(int(wp.floor(g[0] - half)), int(wp.floor(g[1] - half)), int(wp.floor(g[2] - half)))


@wp.func
def grid_inside(x: Any, lo: Any, inv_dx: Any, n_nodes: int, ny: int, nz: int):
    """True when the 3×3×3 nodes a particle at x reaches all lie inside the grid (n_nodes nodes,
    ny·nz per x layer). False for a NaN, infinite or far-away x: the test is made on floats, before
    any conversion to an index, so a bad position never becomes an out-of-bounds node."""
    g = (x - lo) * inv_dx
    lo_g = type(inv_dx)(0.5)
    hi_g = wp.vec3i(n_nodes / (ny * nz), ny, nz)
    inside = True
    for d in range(3):
        if not (g[d] >= lo_g and g[d] < type(inv_dx)(hi_g[d]) - type(inv_dx)(1.5)):
            inside = False
    return inside


@wp.func
def grid_offset(x: Any, lo: Any, inv_dx: Any, b: wp.vec3i):
    """Position of x relative to node ``b`` in cells, in [0.5, 1.5)³."""
    g = (x - lo) * inv_dx
    return g - type(x)(type(inv_dx)(b[0]), type(inv_dx)(b[1]), type(inv_dx)(b[2]))


@wp.func
def bspline_w(f: Any, k: int):
    """Quadratic B-spline weight of node k ∈ {0,1,2} for the offset f ∈ [0.5, 1.5) to node 0."""
    half = type(f)(0.5)
    if k == 0:
        return half * (type(f)(1.5) - f) * (type(f)(1.5) - f)
    if k == 1:
        return type(f)(0.75) - (f - type(f)(1.0)) * (f - type(f)(1.0))
    return half * (f - half) * (f - half)


SLAB = wp.constant(2)    # slab width in cells along x (>= 2: slabs two apart share no node)


@wp.func
def slab_of(b: wp.vec3i):
    return b[0] / SLAB


@wp.kernel
def clear_counts(
    # Model:
    w: int,
    # Data out:
    counts_out: wp.array3d(dtype=wp.int32),
):
    env, s = wp.tid()
    counts_out[env, w, s] = 0


@wp.func
def stress_particle(
    env: int,
    p: int,
    p_type: wp.array(dtype=int),
    p_mu: wp.array(dtype=Any),
    p_lam: wp.array(dtype=Any),
    p_par: wp.array(dtype=Any),
    p_mass: wp.array(dtype=Any),
    p_vol: wp.array(dtype=Any),
    lo: Any,
    inv_dx: Any,
    ny: int,
    nz: int,
    n_nodes: int,
    h: Any,
    pos_in: wp.array2d(dtype=Any),
    C_in: wp.array2d(dtype=Any),
    active_in: wp.array2d(dtype=wp.int32),
    F_out: wp.array2d(dtype=Any),
    Jp_out: wp.array2d(dtype=Any),
    affine_out: wp.array2d(dtype=Any),
    slab_out: wp.array2d(dtype=wp.int32),
):
    """P2G's stress stage for particle p: F, Jp, the affine matrix and the slab (returned; -1: no
    scatter, the particle inactive or off the grid)."""
    if active_in[env, p] == 0:
        slab_out[env, p] = -1
        return -1
    x = pos_in[env, p]
    C = C_in[env, p]
    one = type(h)(1.0)
    I = wp.diag(type(x)(one, one, one))
    F = (I + h * C) * F_out[env, p]
    typ = p_type[p]
    mu = p_mu[p]
    lam = p_lam[p]
    par = p_par[p]
    Jp = Jp_out[env, p]
    tau = type(C)()
    if typ == LIQUID:
        J = wp.determinant(F)
        c = wp.sign(J) * wp.pow(wp.abs(J), one / type(h)(3.0))
        F = wp.diag(type(x)(c, c, c))
        tau = lam * J * (J - one) * I
    else:
        U = type(C)()
        sig = type(x)()
        V = type(C)()
        wp.svd3(F, U, sig, V)
        sig_e = project_sigma(typ, mu, lam, par, sig)
        if typ == SNOW or typ == SAND:
            # plastic volume ratio: the volume the return mapping moved out of the elastic part
            tiny = type(h)(1.0e-12)
            Jp = Jp * wp.max(wp.abs(sig[0] * sig[1] * sig[2]), tiny) / wp.max(
                wp.abs(sig_e[0] * sig_e[1] * sig_e[2]), tiny)
        if typ == SNOW:
            hard = wp.exp(par[2] * (one - Jp))
            mu = mu * hard
            lam = lam * hard
        F = U * wp.diag(sig_e) * wp.transpose(V)
        tau = kirchhoff(typ, mu, lam, U, sig_e, V)
    if not grid_inside(x, lo, inv_dx, n_nodes, ny, nz):
        # NaN/inf/out-of-grid position (a poisoned env): no scatter, and F is made NaN so that the
        # env's NaN check flags it after the step (docs/mpm.md, "Bad values")
        F_out[env, p] = F * type(h)(wp.nan)
        slab_out[env, p] = -1
        return -1
    F_out[env, p] = F
    Jp_out[env, p] = Jp
    affine_out[env, p] = (-h * p_vol[p] * type(h)(4.0) * inv_dx * inv_dx) * tau + p_mass[p] * C
    s = slab_of(grid_base(x, lo, inv_dx))
    slab_out[env, p] = s
    return s


@wp.kernel
def p2g_stress(
    # Model:
    p_type: wp.array(dtype=int),
    p_mu: wp.array(dtype=Any),
    p_lam: wp.array(dtype=Any),
    p_par: wp.array(dtype=Any),
    p_mass: wp.array(dtype=Any),
    p_vol: wp.array(dtype=Any),
    lo: Any,
    inv_dx: Any,
    ny: int,
    nz: int,
    n_nodes: int,
    h: Any,
    p0: int,
    w: int,
    # Data in:
    pos_in: wp.array2d(dtype=Any),
    C_in: wp.array2d(dtype=Any),
    active_in: wp.array2d(dtype=wp.int32),
    # Data out:
    F_out: wp.array2d(dtype=Any),
    Jp_out: wp.array2d(dtype=Any),
    affine_out: wp.array2d(dtype=Any),
    slab_out: wp.array2d(dtype=wp.int32),
    counts_out: wp.array3d(dtype=wp.int32),
):
    env, i = wp.tid()
    p = p0 + i
    s = stress_particle(env, p, p_type, p_mu, p_lam, p_par, p_mass, p_vol, lo, inv_dx, ny, nz, n_nodes, h, pos_in,
                        C_in, active_in, F_out, Jp_out, affine_out, slab_out)
    if s >= 0:
        wp.atomic_add(counts_out, env, w, s, 1)


STRESS_BLOCK = wp.constant(256)   # particles per block of the claimed stress stage (CPU; docs/mpm.md "Threads")


@wp.kernel
def p2g_stress_blocks(
    # Model:
    p_type: wp.array(dtype=int),
    p_mu: wp.array(dtype=Any),
    p_lam: wp.array(dtype=Any),
    p_par: wp.array(dtype=Any),
    p_mass: wp.array(dtype=Any),
    p_vol: wp.array(dtype=Any),
    lo: Any,
    inv_dx: Any,
    ny: int,
    nz: int,
    n_nodes: int,
    h: Any,
    n_p: int,
    claim: int,
    # Data in:
    pos_in: wp.array2d(dtype=Any),
    C_in: wp.array2d(dtype=Any),
    active_in: wp.array2d(dtype=wp.int32),
    # Data out:
    F_out: wp.array2d(dtype=Any),
    Jp_out: wp.array2d(dtype=Any),
    affine_out: wp.array2d(dtype=Any),
    slab_out: wp.array2d(dtype=wp.int32),
    counts_out: wp.array3d(dtype=wp.int32),
    cursor_out: wp.array3d(dtype=wp.int32),
    order_out: wp.array2d(dtype=wp.int32),
    claims_inout: wp.array2d(dtype=wp.int32),
):
    """The stress stage over blocks of STRESS_BLOCK particles that the workers claim (polyphys.blocks;
    thread (env, c) block c without claiming): per block the particles' stress (``stress_particle``),
    then the block's particles sorted by slab into order[first particle of the block : ...] — each slab's
    in index order, counts_out[env, block, slab] and cursor_out the end of each slab's run (as
    ``slab_starts`` and ``slab_place`` do for a worker's share). A block's lists are written by the
    worker that computed it alone, so the scatter (``p2g_scatter_slabs`` with the blocks as its shares)
    reads each slab's particles in index order whoever computed which block."""
    env, c = wp.tid()
    n_blocks = (n_p + STRESS_BLOCK - 1) / STRESS_BLOCK
    n_slabs = counts_out.shape[2]
    b = next_block(claims_inout, claim, env, c, n_blocks)
    while b < n_blocks:
        p0 = b * STRESS_BLOCK
        p1 = wp.min(p0 + STRESS_BLOCK, n_p)
        for s0 in range(n_slabs):
            counts_out[env, b, s0] = 0
        for p in range(p0, p1):
            s1 = stress_particle(env, p, p_type, p_mu, p_lam, p_par, p_mass, p_vol, lo, inv_dx, ny, nz, n_nodes, h,
                                 pos_in, C_in, active_in, F_out, Jp_out, affine_out, slab_out)
            if s1 >= 0:
                counts_out[env, b, s1] = counts_out[env, b, s1] + 1
        run = int(0)
        for s2 in range(n_slabs):
            cursor_out[env, b, s2] = run
            run += counts_out[env, b, s2]
        for q in range(p0, p1):
            s3 = slab_out[env, q]
            if s3 >= 0:
                k = cursor_out[env, b, s3]
                order_out[env, p0 + k] = q
                cursor_out[env, b, s3] = k + 1
        b = block_after(claims_inout, claim, env, n_blocks)


@wp.kernel
def slab_ranges(
    # Model:
    w: int,
    n_workers: int,
    # Data in:
    counts_in: wp.array3d(dtype=wp.int32),
    # Data out:
    ranges_out: wp.array2d(dtype=wp.vec2i),
):
    """Worker w's contiguous range of slabs [lo, hi) of ``n_workers``' ranges: slab s goes to the worker
    whose share of the particles holds the middle of s (cumulative counts over all the slab counts' rows:
    the workers' shares, or the stress stage's claimed blocks)."""
    env = wp.tid()
    n_rows = counts_in.shape[1]
    n_slabs = counts_in.shape[2]
    total = wp.int64(0)
    for s in range(n_slabs):
        for q in range(n_rows):
            total += wp.int64(counts_in[env, q, s])
    lo = n_slabs
    hi = n_slabs
    before = wp.int64(0)
    for s in range(n_slabs):
        c = wp.int64(0)
        for q in range(n_rows):
            c += wp.int64(counts_in[env, q, s])
        owner = 0
        if total > wp.int64(0):
            owner = int(wp.min((wp.int64(2 * n_workers) * before + wp.int64(n_workers) * c) / (wp.int64(2) * total),
                               wp.int64(n_workers - 1)))
        if owner >= w and lo == n_slabs:
            lo = s
        if owner > w and hi == n_slabs:
            hi = s
        before += c
    ranges_out[env, w] = wp.vec2i(lo, hi)


@wp.kernel
def slab_starts(
    # Model:
    w: int,
    # Data in:
    counts_in: wp.array3d(dtype=wp.int32),
    # Data out:
    cursor_out: wp.array3d(dtype=wp.int32),
):
    """Where each slab's particles of worker w's share start in that share's slab-sorted list
    (an exclusive sum of the share's slab counts); ``slab_place`` advances them to the ends."""
    env = wp.tid()
    t = int(0)
    for s in range(counts_in.shape[2]):
        cursor_out[env, w, s] = t
        t += counts_in[env, w, s]


@wp.kernel
def slab_place(
    # Model:
    p0: int,
    w: int,
    # Data in:
    slab_in: wp.array2d(dtype=wp.int32),
    # Data out:
    cursor_out: wp.array3d(dtype=wp.int32),
    order_out: wp.array2d(dtype=wp.int32),
):
    """Worker w's share [p0, ...) of the particles sorted by slab into order[p0 : ...], each slab's
    particles in index order (a CPU launch runs its elements in order, so the cursor's old value is
    the particle's rank in its slab). Particles without a slab (inactive, bad position) are left out."""
    env, i = wp.tid()
    p = p0 + i
    s = slab_in[env, p]
    if s < 0:
        return
    t = wp.atomic_add(cursor_out, env, w, s, 1)
    order_out[env, p0 + t] = p


@wp.func
def scatter_particle(
    env: int,
    p: int,
    p_mass: wp.array(dtype=Any),
    lo: Any,
    inv_dx: Any,
    dx: Any,
    ny: int,
    nz: int,
    pos_in: wp.array2d(dtype=Any),
    vel_in: wp.array2d(dtype=Any),
    affine_in: wp.array2d(dtype=Any),
    grid_mv_out: wp.array2d(dtype=Any),
    grid_m_out: wp.array2d(dtype=Any),
    grid_mx_out: wp.array2d(dtype=Any),
):
    """Particle p's APIC momentum and mass (and, when asked, centroid moment) onto its 3×3×3 nodes."""
    x = pos_in[env, p]
    m = p_mass[p]
    affine = affine_in[env, p]
    mv = m * vel_in[env, p]
    b = grid_base(x, lo, inv_dx)
    fx = grid_offset(x, lo, inv_dx, b)
    for i in range(3):
        wi = bspline_w(fx[0], i)
        for j in range(3):
            wij = wi * bspline_w(fx[1], j)
            for k in range(3):
                wt = wij * bspline_w(fx[2], k)
                dpos = (type(x)(type(dx)(float(i)), type(dx)(float(j)), type(dx)(float(k))) - fx) * dx
                node = ((b[0] + i) * ny + (b[1] + j)) * nz + (b[2] + k)
                wp.atomic_add(grid_mv_out, env, node, wt * (mv + affine * dpos))
                wp.atomic_add(grid_m_out, env, node, wt * m)
                if grid_mx_out.shape[0] > 0:
                    # Σ w m (x_p − x_i): the node's material centroid, relative to the node
                    wp.atomic_add(grid_mx_out, env, node, (-wt * m) * dpos)


@wp.kernel
def p2g_scatter_slabs(
    # Model:
    p_mass: wp.array(dtype=Any),
    lo: Any,
    inv_dx: Any,
    dx: Any,
    ny: int,
    nz: int,
    w: int,
    colour: int,
    share_lo: wp.array(dtype=wp.int32),
    # Data in:
    ranges_in: wp.array2d(dtype=wp.vec2i),
    counts_in: wp.array3d(dtype=wp.int32),
    cursor_in: wp.array3d(dtype=wp.int32),
    order_in: wp.array2d(dtype=wp.int32),
    pos_in: wp.array2d(dtype=Any),
    vel_in: wp.array2d(dtype=Any),
    affine_in: wp.array2d(dtype=Any),
    # Data out:
    grid_mv_out: wp.array2d(dtype=Any),
    grid_m_out: wp.array2d(dtype=Any),
    grid_mx_out: wp.array2d(dtype=Any),
):
    """Scatter slab 2j + colour when it is one of worker w's (CPU): its particles of each worker's
    share (``share_lo``: where share q starts), shares in order, each share's in index order from
    the slab-sorted lists of ``slab_place`` — the slab's particles in index order, touching no other."""
    env, j = wp.tid()
    s = 2 * j + colour
    r = ranges_in[env, w]
    if s < r[0] or s >= r[1]:
        return
    for q in range(counts_in.shape[1]):
        end = cursor_in[env, q, s]
        base = share_lo[q]
        for t in range(end - counts_in[env, q, s], end):
            scatter_particle(env, order_in[env, base + t], p_mass, lo, inv_dx, dx, ny, nz, pos_in, vel_in,
                             affine_in, grid_mv_out, grid_m_out, grid_mx_out)


@wp.kernel
def p2g_scatter(
    # Model:
    p_mass: wp.array(dtype=Any),
    lo: Any,
    inv_dx: Any,
    dx: Any,
    ny: int,
    nz: int,
    # Data in:
    slab_in: wp.array2d(dtype=wp.int32),
    pos_in: wp.array2d(dtype=Any),
    vel_in: wp.array2d(dtype=Any),
    affine_in: wp.array2d(dtype=Any),
    # Data out:
    grid_mv_out: wp.array2d(dtype=Any),
    grid_m_out: wp.array2d(dtype=Any),
    grid_mx_out: wp.array2d(dtype=Any),
):
    """Scatter every particle in one pass (CUDA: float atomics, no fixed order)."""
    env, p = wp.tid()
    if slab_in[env, p] < 0:
        return                       # no scatter (inactive, bad position)
    scatter_particle(env, p, p_mass, lo, inv_dx, dx, ny, nz, pos_in, vel_in, affine_in, grid_mv_out, grid_m_out,
                     grid_mx_out)


@wp.func
def g2p_particle(
    env: int,
    p: int,
    lo: Any,
    inv_dx: Any,
    dx: Any,
    ny: int,
    nz: int,
    h: Any,
    x_min: Any,
    x_max: Any,
    wall_lo: Any,
    wall_hi: Any,
    slot: int,
    grid_v_in: wp.array2d(dtype=Any),
    active_in: wp.array2d(dtype=wp.int32),
    pos_out: wp.array2d(dtype=Any),
    vel_out: wp.array2d(dtype=Any),
    C_out: wp.array2d(dtype=Any),
    flags_out: wp.array(dtype=wp.int32),
    vmax_out: wp.array2d(dtype=Any),
):
    """G2P and advection of particle p (0: inactive or off the grid, skipped); its speed into the
    env's maximum at ``slot`` (the worker's own slot)."""
    if active_in[env, p] == 0:
        return 0
    x = pos_out[env, p]
    if not grid_inside(x, lo, inv_dx, grid_v_in.shape[1], ny, nz):
        return 0                     # P2G made this env's F NaN: it is flagged after the step
    b = grid_base(x, lo, inv_dx)
    fx = grid_offset(x, lo, inv_dx, b)
    v = type(x)()
    B = wp.outer(v, v)
    for i in range(3):
        wi = bspline_w(fx[0], i)
        for j in range(3):
            wij = wi * bspline_w(fx[1], j)
            for k in range(3):
                wt = wij * bspline_w(fx[2], k)
                dpos = (type(x)(type(dx)(float(i)), type(dx)(float(j)), type(dx)(float(k))) - fx) * dx
                node = ((b[0] + i) * ny + (b[1] + j)) * nz + (b[2] + k)
                vi = grid_v_in[env, node]
                v = v + wt * vi
                B = B + wt * wp.outer(vi, dpos)
    xn = x + h * v
    if xn[0] < x_min[0] or xn[1] < x_min[1] or xn[2] < x_min[2] or xn[0] > x_max[0] or xn[1] > x_max[1] or \
            xn[2] > x_max[2]:
        flags_out[env] = 1           # a particle would have left the grid (held at the wall)
    # particles are held inside [wall_lo, wall_hi] (the wall surfaces with MPMOptions.wall_surface,
    # as Genesis' CubeBoundary on the particles; else the grid's edge): the position is projected
    # onto that face and the velocity into it removed
    zero = type(h)(0.0)
    for d in range(3):
        if xn[d] < wall_lo[d]:
            xn[d] = wall_lo[d]
            v[d] = wp.max(v[d], zero)
        if xn[d] > wall_hi[d]:
            xn[d] = wall_hi[d]
            v[d] = wp.min(v[d], zero)
    pos_out[env, p] = xn
    vel_out[env, p] = v
    C_out[env, p] = (type(h)(4.0) * inv_dx * inv_dx) * B
    # the fastest particle of each worker's share (its own slot: workers never write the same one)
    wp.atomic_max(vmax_out, env, slot, wp.length(v))
    return 1


@wp.kernel
def g2p(
    # Model:
    lo: Any,
    inv_dx: Any,
    dx: Any,
    ny: int,
    nz: int,
    h: Any,
    x_min: Any,
    x_max: Any,
    wall_lo: Any,
    wall_hi: Any,
    p0: int,
    w: int,
    # Data in:
    grid_v_in: wp.array2d(dtype=Any),
    active_in: wp.array2d(dtype=wp.int32),
    # Data out:
    pos_out: wp.array2d(dtype=Any),
    vel_out: wp.array2d(dtype=Any),
    C_out: wp.array2d(dtype=Any),
    flags_out: wp.array(dtype=wp.int32),
    vmax_out: wp.array2d(dtype=Any),
):
    env, q = wp.tid()
    g2p_particle(env, p0 + q, lo, inv_dx, dx, ny, nz, h, x_min, x_max, wall_lo, wall_hi, w, grid_v_in, active_in, pos_out,
                 vel_out, C_out, flags_out, vmax_out)


@wp.kernel
def g2p_blocks(
    # Model:
    lo: Any,
    inv_dx: Any,
    dx: Any,
    ny: int,
    nz: int,
    h: Any,
    x_min: Any,
    x_max: Any,
    wall_lo: Any,
    wall_hi: Any,
    n_p: int,
    slot_stride: int,
    claim: int,
    # Data in:
    grid_v_in: wp.array2d(dtype=Any),
    active_in: wp.array2d(dtype=wp.int32),
    # Data out:
    pos_out: wp.array2d(dtype=Any),
    vel_out: wp.array2d(dtype=Any),
    C_out: wp.array2d(dtype=Any),
    flags_out: wp.array(dtype=wp.int32),
    vmax_out: wp.array2d(dtype=Any),
    claims_inout: wp.array2d(dtype=wp.int32),
):
    """G2P over blocks of STRESS_BLOCK particles that the workers claim (polyphys.blocks; thread (env, c)
    block c without claiming); a particle's speed goes to the claiming worker's slot (w · slot_stride)."""
    env, c = wp.tid()
    slot = int(0)
    if claim > 0:
        slot = ((claim - 1) % CLAIM_STRIDE) * slot_stride
    n_blocks = (n_p + STRESS_BLOCK - 1) / STRESS_BLOCK
    b = next_block(claims_inout, claim, env, c, n_blocks)
    while b < n_blocks:
        for p in range(b * STRESS_BLOCK, wp.min((b + 1) * STRESS_BLOCK, n_p)):
            g2p_particle(env, p, lo, inv_dx, dx, ny, nz, h, x_min, x_max, wall_lo, wall_hi, slot, grid_v_in, active_in,
                         pos_out, vel_out, C_out, flags_out, vmax_out)
        b = block_after(claims_inout, claim, env, n_blocks)


_declared: set = set()


def declare_overloads(precision: str) -> None:
    """The float32 ("32") or float64 ("64") overloads of p2g_stress, p2g_scatter and g2p
    (MPMSolver.kernel_modules)."""
    if precision in _declared:
        return
    s = wp.float64 if precision == "64" else wp.float32
    V, V4, M = wp.types.vector(3, s), wp.types.vector(4, s), wp.types.matrix((3, 3), s)
    a1, a2, v2, m2 = wp.array(dtype=s), wp.array2d(dtype=s), wp.array2d(dtype=V), wp.array2d(dtype=M)
    stress = {"p_mu": a1, "p_lam": a1, "p_par": wp.array(dtype=V4), "p_mass": a1, "p_vol": a1, "lo": V, "inv_dx": s,
              "h": s, "pos_in": v2, "C_in": m2, "F_out": m2, "Jp_out": a2, "affine_out": m2}
    wp.overload(p2g_stress, stress)
    wp.overload(p2g_stress_blocks, stress)
    scatter = {"p_mass": a1, "lo": V, "inv_dx": s, "dx": s, "pos_in": v2, "vel_in": v2, "affine_in": m2,
               "grid_mv_out": v2, "grid_m_out": a2, "grid_mx_out": v2}
    wp.overload(p2g_scatter, scatter)
    wp.overload(p2g_scatter_slabs, scatter)
    gather = {"lo": V, "inv_dx": s, "dx": s, "h": s, "x_min": V, "x_max": V, "wall_lo": V, "wall_hi": V, "grid_v_in": v2,
              "pos_out": v2, "vel_out": v2, "C_out": m2, "vmax_out": a2}
    wp.overload(g2p, gather)
    wp.overload(g2p_blocks, gather)
    _declared.add(precision)
