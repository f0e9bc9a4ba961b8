"""Per-env neighbour grid, particle-particle contacts with friction, and position-based fluids.

The grid is the core's per-env stable counting sort (``polyphys.binsort``) of the particles by cell,
split over a partition's workers: cells are keyed densely (x fastest) when the domain has few enough
cells, else by a hash of the cell (``cell_keys``). A key's particles are in ascending index and the
sort copies the positions in key order, so a neighbour scan reads them as a stream: densely keyed,
9 rows of three consecutive cells; hashed, the 27 cells' buckets, whose particles are checked to lie
in the cell (hash collisions never count a particle twice). Both visit cells in the same order
(z, y, x offsets −1..1), so every neighbour sum below runs in a fixed order and the results are
bit-reproducible for any number of workers (no atomics on floats).

Contacts: Jacobi projection (Macklin et al. 2014, "Unified particle physics"), each particle gathers
its corrections from all overlapping neighbours, averaged over the contact count and scaled by the
relaxation factor; Coulomb friction from the relative displacement since the substep start.
Fluids: Macklin & Müller 2013, density constraint C_i = ρ_i/ρ0 - 1 (unilateral: only compression is
corrected, which also removes the tensile clustering at the free surface), poly6 density, spiky
gradient; XSPH viscosity on the velocities.
"""

import warp as wp
from polyphys.kernels.blocks import block_after, next_block

# neighbour loops must stay loops: unrolling the 27 cells multiplies the compile time
wp.set_module_options({"max_unroll": 1, "enable_backward": False})

KIND_CLOTH = wp.constant(0)
KIND_ELASTIC = wp.constant(1)
KIND_GRANULAR = wp.constant(2)
KIND_LIQUID = wp.constant(3)


@wp.func
def cell_of(x: wp.vec3, lower: wp.vec3, inv_cell: float, dims: wp.vec3i):
    # clamped as floats before the int conversion (float clamp maps NaN to the lower bound), so a
    # NaN/inf/huge position gives an edge cell, never an undefined conversion or an index off the grid
    c = (x - lower) * inv_cell
    return wp.vec3i(int(wp.floor(wp.clamp(c[0], 0.0, float(dims[0] - 1)))),
                    int(wp.floor(wp.clamp(c[1], 0.0, float(dims[1] - 1)))),
                    int(wp.floor(wp.clamp(c[2], 0.0, float(dims[2] - 1)))))


NEIGHBOR_CELLS = wp.constant(27)


@wp.func
def neighbor_cell(c: wp.vec3i, q: int):
    """The q-th (0..26) cell of the 3x3x3 block around c."""
    return wp.vec3i(c[0] + q % 3 - 1, c[1] + (q // 3) % 3 - 1, c[2] + q // 9 - 1)


@wp.func
def hash_cell(c: wp.vec3i, mask: int):
    hx = wp.uint32(c[0]) * wp.uint32(73856093)
    hy = wp.uint32(c[1]) * wp.uint32(19349663)
    hz = wp.uint32(c[2]) * wp.uint32(83492791)
    return int((hx ^ hy ^ hz) & wp.uint32(mask))


@wp.func
def poly6(r2: float, h: float):
    if r2 >= h * h:
        return 0.0
    d = h * h - r2
    return 315.0 / (64.0 * wp.pi * wp.pow(h, 9.0)) * d * d * d


@wp.func
def spiky_grad(d: wp.vec3, r: float, h: float):
    if r >= h or r < 1.0e-12:
        return wp.vec3(0.0)
    t = h - r
    return d * (-45.0 / (wp.pi * wp.pow(h, 6.0)) * t * t / r)


@wp.kernel
def cell_keys(
    # Model:
    dense: int,
    mask: int,
    lower: wp.vec3,
    inv_cell: float,
    dims: wp.vec3i,
    i0: int,
    # Data in:
    pos_in: wp.array2d(dtype=wp.vec3),
    # Data out:
    cell_ijk_out: wp.array2d(dtype=wp.vec3i),
    key_out: wp.array2d(dtype=wp.int32),
):
    """Each particle's cell and sort key: the dense cell index, or the hash of the cell."""
    env, q = wp.tid()
    i = i0 + q
    cc = cell_of(pos_in[env, i], lower, inv_cell, dims)
    cell_ijk_out[env, i] = cc
    if dense != 0:
        key_out[env, i] = (cc[2] * dims[1] + cc[1]) * dims[0] + cc[0]
    else:
        key_out[env, i] = hash_cell(cc, mask)


@wp.func
def scan_count(dense: int):
    """Ranges a neighbour scan visits: 9 x-rows (dense keys) or 27 hashed cells."""
    if dense != 0:
        return 9
    return NEIGHBOR_CELLS


@wp.func
def scan_range(env: int, ci: wp.vec3i, q: int, dense: int, dims: wp.vec3i, mask: int,
               start_in: wp.array2d(dtype=wp.int32)):
    """Range q of the sorted list a scan around cell ci visits: dense, the x-row (ci.x − 1 .. ci.x + 1,
    ci.y + q % 3 − 1, ci.z + q // 3 − 1) clipped to the grid (three consecutive cells); hashed, the
    bucket of the q-th cell of the 3×3×3 block (its particles need the cell check)."""
    if dense != 0:
        y = ci[1] + q % 3 - 1
        z = ci[2] + q / 3 - 1
        if y < 0 or z < 0 or y >= dims[1] or z >= dims[2]:
            return wp.vec2i(0, 0)
        base = (z * dims[1] + y) * dims[0]
        return wp.vec2i(start_in[env, base + wp.max(ci[0] - 1, 0)], start_in[env, base + wp.min(ci[0] + 1, dims[0] - 1) + 1])
    hc = hash_cell(neighbor_cell(ci, q), mask)
    return wp.vec2i(start_in[env, hc], start_in[env, hc + 1])


@wp.func
def in_scan_cell(dense: int, ci: wp.vec3i, q: int, cj: wp.vec3i):
    """Whether a particle of cell cj found in range q belongs to it (always, for dense keys)."""
    if dense != 0:
        return True
    c = neighbor_cell(ci, q)
    return cj[0] == c[0] and cj[1] == c[1] and cj[2] == c[2]


# particles per block of the claimed stages (build_neighbors, particle_gather; docs/pbd.md "Threads")
ITEM_BLOCK = wp.constant(64)


@wp.func
def build_neighbors_at(
    # Model:
    reach2: float,
    cap: int,
    dense: int,
    dims: wp.vec3i,
    mask: int,
    lower: wp.vec3,
    inv_cell: float,
    env: int,
    i: int,
    # Data in:
    pos_in: wp.array2d(dtype=wp.vec3),
    cell_ijk_in: wp.array2d(dtype=wp.vec3i),
    start_in: wp.array2d(dtype=wp.int32),
    sorted_in: wp.array2d(dtype=wp.int32),
    spos_in: wp.array2d(dtype=wp.vec3),
    # Data out:
    nbr_count_out: wp.array2d(dtype=wp.int32),
    nbr_list_out: wp.array2d(dtype=wp.int32),
):
    """Each particle's neighbours within the grid's reach (one cell) at the substep's predicted
    positions, in the grid's visiting order (so sums over the list keep one fixed order): built
    once per substep and read by every constraint iteration (Macklin & Müller 2013, Algorithm 1),
    instead of scanning 27 cells (~6x more candidates than neighbours) in each. The candidates'
    positions are read in sorted order (``spos_in``, a stream). More than ``cap`` neighbours: count
    -1, and the readers scan the grid for that particle (nothing is dropped)."""
    xi = pos_in[env, i]
    ci = cell_ijk_in[env, i]
    n = int(0)
    for q in range(scan_count(dense)):
        rg = scan_range(env, ci, q, dense, dims, mask, start_in)
        k = wp.max(rg[0], 0)     # a while loop from ≥ 0: no step-sign test, no index wrap (docs/pbd.md)
        k_end = rg[1]
        while k < k_end:
            xj = spos_in[env, k]
            d = xi - xj
            if wp.dot(d, d) < reach2:
                j = sorted_in[env, k]
                ok = j != i
                if ok and dense == 0:
                    ok = in_scan_cell(dense, ci, q, cell_of(xj, lower, inv_cell, dims))
                if ok:
                    if n < cap:
                        nbr_list_out[env, i * cap + n] = j
                    n += 1
            k += 1
    if n > cap:
        n = -1
    nbr_count_out[env, i] = n


@wp.kernel
def build_neighbors(
    # Model:
    reach2: float,
    cap: int,
    dense: int,
    dims: wp.vec3i,
    mask: int,
    lower: wp.vec3,
    inv_cell: float,
    n: int,
    claim: int,
    # Data in:
    pos_in: wp.array2d(dtype=wp.vec3),
    cell_ijk_in: wp.array2d(dtype=wp.vec3i),
    start_in: wp.array2d(dtype=wp.int32),
    sorted_in: wp.array2d(dtype=wp.int32),
    spos_in: wp.array2d(dtype=wp.vec3),
    # Data out:
    nbr_count_out: wp.array2d(dtype=wp.int32),
    nbr_list_out: wp.array2d(dtype=wp.int32),
    claims_inout: wp.array2d(dtype=wp.int32),
):
    """``build_neighbors_at`` for the particles of a block of ITEM_BLOCK: thread (env, c) block c of the
    n particles, or with ``claim`` (one thread per env and worker) unclaimed blocks until none is left
    (polyphys.blocks)."""
    env, c = wp.tid()
    n_blocks = (n + ITEM_BLOCK - 1) / ITEM_BLOCK
    b = next_block(claims_inout, claim, env, c, n_blocks)
    while b < n_blocks:
        for i in range(b * ITEM_BLOCK, wp.min((b + 1) * ITEM_BLOCK, n)):
            build_neighbors_at(reach2, cap, dense, dims, mask, lower, inv_cell, env, i, pos_in, cell_ijk_in,
                               start_in, sorted_in, spos_in, nbr_count_out, nbr_list_out)
        b = block_after(claims_inout, claim, env, n_blocks)



@wp.func
def lambda_pair(
    env: int, j: int, xi: wp.vec3, rho0: float, h: float,
    kind: wp.array(dtype=wp.int32), mass: wp.array(dtype=float), inv_mass0: wp.array(dtype=float),
    free_in: wp.array2d(dtype=wp.int32), pos_in: wp.array2d(dtype=wp.vec3),
):
    """Neighbour j's share of particle i's PBF density, constraint gradient and Σ w|∇C|²."""
    d = xi - pos_in[env, j]
    r2 = wp.dot(d, d)
    if r2 >= h * h or kind[j] != KIND_LIQUID:
        return 0.0, wp.vec3(0.0), 0.0
    g = spiky_grad(d, wp.sqrt(r2), h) * (mass[j] / rho0)
    wj = float(0.0)
    if free_in[env, j] != 0:
        wj = inv_mass0[j]
    return mass[j] * poly6(r2, h), g, wj * wp.dot(g, g)


@wp.kernel
def fluid_lambda(
    # Model:
    kind: wp.array(dtype=wp.int32),
    mass: wp.array(dtype=float),
    inv_mass0: wp.array(dtype=float),
    rest_density: wp.array(dtype=float),
    h: float,
    cfm: float,
    dense: int,
    dims: wp.vec3i,
    mask: int,
    cap: int,
    i0: int,
    # Data in:
    free_in: wp.array2d(dtype=wp.int32),
    pos_in: wp.array2d(dtype=wp.vec3),
    cell_ijk_in: wp.array2d(dtype=wp.vec3i),
    start_in: wp.array2d(dtype=wp.int32),
    sorted_in: wp.array2d(dtype=wp.int32),
    nbr_count_in: wp.array2d(dtype=wp.int32),
    nbr_list_in: wp.array2d(dtype=wp.int32),
    # Data out:
    lam_out: wp.array2d(dtype=float),
):
    """λ_i = -C_i / (Σ_k w_k |∇_k C_i|² (1 + cfm)) of the PBF density constraint."""
    env, qq = wp.tid()
    i = i0 + qq
    if kind[i] != KIND_LIQUID:
        lam_out[env, i] = 0.0
        return
    xi = pos_in[env, i]
    rho0 = rest_density[i]
    rho = mass[i] * poly6(0.0, h)
    grad_i = wp.vec3(0.0)
    sum_g2 = float(0.0)
    nn = nbr_count_in[env, i]
    if nn >= 0:
        for t in range(nn):
            dr, g, g2 = lambda_pair(env, nbr_list_in[env, i * cap + t], xi, rho0, h, kind, mass, inv_mass0,
                                    free_in, pos_in)
            rho += dr
            grad_i += g
            sum_g2 += g2
    else:
        ci = cell_ijk_in[env, i]
        for q in range(scan_count(dense)):
            rg = scan_range(env, ci, q, dense, dims, mask, start_in)
            for k in range(rg[0], rg[1]):
                j = sorted_in[env, k]
                if j == i or not in_scan_cell(dense, ci, q, cell_ijk_in[env, j]):
                    continue
                dr, g, g2 = lambda_pair(env, j, xi, rho0, h, kind, mass, inv_mass0, free_in, pos_in)
                rho += dr
                grad_i += g
                sum_g2 += g2
    wi = float(0.0)
    if free_in[env, i] != 0:
        wi = inv_mass0[i]
    cval = wp.max(rho / rho0 - 1.0, 0.0)
    denom = (wi * wp.dot(grad_i, grad_i) + sum_g2) * (1.0 + cfm)
    if denom < 1.0e-20:
        lam_out[env, i] = 0.0
    else:
        lam_out[env, i] = -cval / denom


@wp.func
def contact_pair(
    env: int, i: int, j: int, xi: wp.vec3, dxi: wp.vec3, ki: int, gi: int, ri: float, wi: float, lam_i: float,
    h: float, reach2: float,
    kind: wp.array(dtype=wp.int32), group: wp.array(dtype=wp.int32), self_collide: wp.array(dtype=wp.int32),
    rest_pos: wp.array(dtype=wp.vec3), radius: wp.array(dtype=float), friction: wp.array(dtype=float),
    mass: wp.array(dtype=float), inv_mass0: wp.array(dtype=float),
    free_in: wp.array2d(dtype=wp.int32), pos_in: wp.array2d(dtype=wp.vec3), pos_prev_in: wp.array2d(dtype=wp.vec3),
    lam_in: wp.array2d(dtype=float),
):
    """Neighbour j's PBF correction (liquid pairs), contact correction with friction (other
    pairs) and contact count for particle i."""
    zero = wp.vec3(0.0)
    d = xi - pos_in[env, j]
    r2 = wp.dot(d, d)
    if r2 >= reach2:         # nothing interacts beyond one cell: most candidates end here
        return zero, zero, 0
    kj = kind[j]
    if ki == KIND_LIQUID and kj == KIND_LIQUID:
        if r2 < h * h:
            return (lam_i * mass[j] + lam_in[env, j] * mass[i]) * spiky_grad(d, wp.sqrt(r2), h), zero, 0
        return zero, zero, 0
    rsum = ri + radius[j]
    if gi == group[j]:
        if ki == KIND_ELASTIC:
            return zero, zero, 0
        if ki == KIND_CLOTH:
            if self_collide[i] == 0:
                return zero, zero, 0
            if wp.length(rest_pos[i] - rest_pos[j]) < 2.0 * rsum:
                return zero, zero, 0
    if r2 >= rsum * rsum or r2 < 1.0e-24:
        return zero, zero, 0
    dist = wp.sqrt(r2)
    wj = float(0.0)
    if free_in[env, j] != 0:
        wj = inv_mass0[j]
    share = wi / (wi + wj)
    n = d / dist
    pen = rsum - dist
    corr = n * (pen * share)
    rel = dxi - (pos_in[env, j] - pos_prev_in[env, j])
    tang = rel - wp.dot(rel, n) * n
    lt = wp.length(tang)
    mu = 0.5 * (friction[i] + friction[j])
    if lt <= mu * pen:
        corr -= tang * share
    else:
        corr -= tang * (share * mu * pen / lt)
    return zero, corr, 1


@wp.func
def particle_gather_at(
    # Model:
    kind: wp.array(dtype=wp.int32),
    group: wp.array(dtype=wp.int32),
    self_collide: wp.array(dtype=wp.int32),
    rest_pos: wp.array(dtype=wp.vec3),
    radius: wp.array(dtype=float),
    friction: wp.array(dtype=float),
    mass: wp.array(dtype=float),
    inv_mass0: wp.array(dtype=float),
    rest_density: wp.array(dtype=float),
    h: float,
    reach2: float,
    relax: float,
    dense: int,
    dims: wp.vec3i,
    mask: int,
    cap: int,
    env: int,
    i: int,
    # Data in:
    free_in: wp.array2d(dtype=wp.int32),
    pos_in: wp.array2d(dtype=wp.vec3),
    pos_prev_in: wp.array2d(dtype=wp.vec3),
    lam_in: wp.array2d(dtype=float),
    cell_ijk_in: wp.array2d(dtype=wp.vec3i),
    start_in: wp.array2d(dtype=wp.int32),
    sorted_in: wp.array2d(dtype=wp.int32),
    nbr_count_in: wp.array2d(dtype=wp.int32),
    nbr_list_in: wp.array2d(dtype=wp.int32),
    # Data out:
    delta_out: wp.array2d(dtype=wp.vec3),
):
    wi = float(0.0)
    if free_in[env, i] != 0:
        wi = inv_mass0[i]
    if wi == 0.0:
        delta_out[env, i] = wp.vec3(0.0)
        return
    xi = pos_in[env, i]
    dxi = xi - pos_prev_in[env, i]
    ki = kind[i]
    gi = group[i]
    ri = radius[i]
    lam_i = lam_in[env, i]
    acc_c = wp.vec3(0.0)
    acc_f = wp.vec3(0.0)
    cnt = int(0)
    nn = nbr_count_in[env, i]
    if nn >= 0:
        base = wp.max(i * cap, 0)     # ≥ 0, a while loop: no step-sign test, no index wrap
        t = int(0)
        while t < nn:
            f, c_, n_ = contact_pair(env, i, nbr_list_in[env, base + t], xi, dxi, ki, gi, ri, wi, lam_i, h, reach2,
                                     kind, group, self_collide, rest_pos, radius, friction, mass, inv_mass0,
                                     free_in, pos_in, pos_prev_in, lam_in)
            acc_f += f
            acc_c += c_
            cnt += n_
            t += 1
    else:
        ci = cell_ijk_in[env, i]
        for q in range(scan_count(dense)):
            rg = scan_range(env, ci, q, dense, dims, mask, start_in)
            for k in range(rg[0], rg[1]):
                j = sorted_in[env, k]
                if j == i or not in_scan_cell(dense, ci, q, cell_ijk_in[env, j]):
                    continue
                f, c_, n_ = contact_pair(env, i, j, xi, dxi, ki, gi, ri, wi, lam_i, h, reach2, kind, group,
                                         self_collide, rest_pos, radius, friction, mass, inv_mass0, free_in, pos_in,
                                         pos_prev_in, lam_in)
                acc_f += f
                acc_c += c_
                cnt += n_
    out = acc_f * (wi / rest_density[i])
    if cnt > 0:
        out += acc_c * (relax / float(cnt))
    delta_out[env, i] = out


@wp.kernel
def particle_gather(
    # Model:
    kind: wp.array(dtype=wp.int32),
    group: wp.array(dtype=wp.int32),
    self_collide: wp.array(dtype=wp.int32),
    rest_pos: wp.array(dtype=wp.vec3),
    radius: wp.array(dtype=float),
    friction: wp.array(dtype=float),
    mass: wp.array(dtype=float),
    inv_mass0: wp.array(dtype=float),
    rest_density: wp.array(dtype=float),
    h: float,
    reach2: float,
    relax: float,
    dense: int,
    dims: wp.vec3i,
    mask: int,
    cap: int,
    n: int,
    claim: int,
    # Data in:
    free_in: wp.array2d(dtype=wp.int32),
    pos_in: wp.array2d(dtype=wp.vec3),
    pos_prev_in: wp.array2d(dtype=wp.vec3),
    lam_in: wp.array2d(dtype=float),
    cell_ijk_in: wp.array2d(dtype=wp.vec3i),
    start_in: wp.array2d(dtype=wp.int32),
    sorted_in: wp.array2d(dtype=wp.int32),
    nbr_count_in: wp.array2d(dtype=wp.int32),
    nbr_list_in: wp.array2d(dtype=wp.int32),
    # Data out:
    delta_out: wp.array2d(dtype=wp.vec3),
    claims_inout: wp.array2d(dtype=wp.int32),
):
    """``particle_gather_at`` for the particles of a block of ITEM_BLOCK (as ``build_neighbors``)."""
    env, c = wp.tid()
    n_blocks = (n + ITEM_BLOCK - 1) / ITEM_BLOCK
    b = next_block(claims_inout, claim, env, c, n_blocks)
    while b < n_blocks:
        for i in range(b * ITEM_BLOCK, wp.min((b + 1) * ITEM_BLOCK, n)):
            particle_gather_at(kind, group, self_collide, rest_pos, radius, friction, mass, inv_mass0, rest_density,
                               h, reach2, relax, dense, dims, mask, cap, env, i, free_in, pos_in, pos_prev_in,
                               lam_in, cell_ijk_in, start_in, sorted_in, nbr_count_in, nbr_list_in, delta_out)
        b = block_after(claims_inout, claim, env, n_blocks)



@wp.func
def xsph_pair(
    env: int, j: int, xi: wp.vec3, vi: wp.vec3, rho0: float, h: float,
    kind: wp.array(dtype=wp.int32), mass: wp.array(dtype=float), pos_in: wp.array2d(dtype=wp.vec3),
    vel_in: wp.array2d(dtype=wp.vec3),
):
    d = xi - pos_in[env, j]
    r2 = wp.dot(d, d)
    if r2 >= h * h or kind[j] != KIND_LIQUID:
        return wp.vec3(0.0)
    return (vel_in[env, j] - vi) * (mass[j] / rho0 * poly6(r2, h))


@wp.kernel
def xsph_viscosity(
    # Model:
    kind: wp.array(dtype=wp.int32),
    mass: wp.array(dtype=float),
    rest_density: wp.array(dtype=float),
    viscosity: wp.array(dtype=float),
    h: float,
    dense: int,
    dims: wp.vec3i,
    mask: int,
    cap: int,
    i0: int,
    # Data in:
    pos_in: wp.array2d(dtype=wp.vec3),
    vel_in: wp.array2d(dtype=wp.vec3),
    cell_ijk_in: wp.array2d(dtype=wp.vec3i),
    start_in: wp.array2d(dtype=wp.int32),
    sorted_in: wp.array2d(dtype=wp.int32),
    nbr_count_in: wp.array2d(dtype=wp.int32),
    nbr_list_in: wp.array2d(dtype=wp.int32),
    # Data out:
    vel_out: wp.array2d(dtype=wp.vec3),
):
    """v_i += c Σ_j (m_j/ρ0) (v_j - v_i) W_ij for liquid particles; a plain copy for the rest."""
    env, qq = wp.tid()
    i = i0 + qq
    vi = vel_in[env, i]
    if kind[i] != KIND_LIQUID or viscosity[i] == 0.0:
        vel_out[env, i] = vi
        return
    xi = pos_in[env, i]
    acc = wp.vec3(0.0)
    nn = nbr_count_in[env, i]
    if nn >= 0:
        for t in range(nn):
            acc += xsph_pair(env, nbr_list_in[env, i * cap + t], xi, vi, rest_density[i], h, kind, mass, pos_in, vel_in)
    else:
        ci = cell_ijk_in[env, i]
        for q in range(scan_count(dense)):
            rg = scan_range(env, ci, q, dense, dims, mask, start_in)
            for k in range(rg[0], rg[1]):
                j = sorted_in[env, k]
                if j == i or not in_scan_cell(dense, ci, q, cell_ijk_in[env, j]):
                    continue
                acc += xsph_pair(env, j, xi, vi, rest_density[i], h, kind, mass, pos_in, vel_in)
    vel_out[env, i] = vi + viscosity[i] * acc
