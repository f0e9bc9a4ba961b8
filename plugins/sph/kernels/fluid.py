"""SPH stages: smoothing kernels, density (+ DFSPH factor α), accelerations, DFSPH solves, integration.

The neighbour stages run in cell order: thread k of a launch is the particle at place k of the
substep's sorted list (``sorted[env, k]`` = particle i, see grid.py), and every per-neighbour read
goes to arrays in that order (positions, velocities, masses, densities, pressures: ``*_s``), so a
particle's neighbours — and the next thread's — lie in a few contiguous runs of memory instead of
all over the state arrays. The state (pos, vel, κ totals) and the reported fields (ρ, p, α) stay in
particle order; a stage reads and writes them once per particle, through i.
Neighbours are visited row by row in a fixed order (z, y offsets −1..1; a row is the up to three
cells x−1..x+1, consecutive in the sorted list): a row's liquid particles in cell order and, inside
a cell, in ascending particle index (see grid.py), then the row's boundary particles — so every sum
has one fixed order on every device and for any number of workers. Launch grids are (n_envs, n)
over a range of sorted places (boundary particles) from ``k0`` (a worker's share).
``density`` also writes each particle's neighbour list of the substep with the kernel gradient
factor of every pair (∇ᵢWᵢⱼ = dᵢⱼ·f, ``grad_factor``): the later stages read the list instead of
scanning cells and evaluating the kernel again (a DFSPH Jacobi step does both twice per pair).
Boundary particles (Akinci et al. 2012) are static and shared by every env: a boundary particle b
of volume V_b acts on liquid particle i as a mass ψ_b = ρ₀ᵢ·V_b at rest; its pressure is the
liquid's, extrapolated to it (Adami et al. 2012, ``boundary_pressure``), mirrored or the single
own term (Model.b_press, Model.b_extrap).
"""

import warp as wp
from polyphys.kernels.blocks import block_after, next_block

from .grid import cell_of

# forward only: no adjoint code (this solver is not differentiable); halves the compile time
wp.set_module_options({"enable_backward": False})

KERNEL_CUBIC = wp.constant(0)
KERNEL_WENDLAND = wp.constant(1)
PI = wp.constant(3.14159265358979)


@wp.struct
class Model:
    lower: wp.vec3
    upper: wp.vec3
    inv_cell: float
    dims: wp.vec3i
    n_cells: int
    H: float                                # kernel support radius
    kernel: int
    h: float                                # substep
    gravity: wp.vec3
    xsph: float
    omega: float                            # Jacobi relaxation of the DFSPH solves
    b_press: float                          # boundary pressure factor of pᵢ (DFSPH κᵢ): 2 = mirrored
    b_extrap: int                           # 1: add the extrapolated boundary pressure (Adami 2012)
    rest_rho: wp.array(dtype=float)         # per particle (same in every env)
    stiffness: wp.array(dtype=float)
    exponent: wp.array(dtype=float)
    mu: wp.array(dtype=float)
    gamma: wp.array(dtype=float)
    b_pos: wp.array(dtype=wp.vec3)          # boundary particles, sorted by cell
    b_vol: wp.array(dtype=float)
    b_start: wp.array(dtype=wp.int32)       # (n_cells + 1) cell starts of the boundary particles
    plane_p: wp.array(dtype=wp.vec3)        # static planes (point, normal) for the safety clamp
    plane_n: wp.array(dtype=wp.vec3)
    n_planes: int
    nbr_cap: int                            # room per particle in the neighbour lists (density writes them)
    cell_slack: float                       # rounding margin of the cell-distance test (row_near)


@wp.func
def kernel_w(r: float, H: float, kind: int) -> float:
    q = r / H
    if q >= 1.0:
        return 0.0
    if kind == KERNEL_WENDLAND:
        s = 21.0 / (2.0 * PI * H * H * H)
        a = 1.0 - q
        return s * a * a * a * a * (1.0 + 4.0 * q)
    s = 8.0 / (PI * H * H * H)
    if q <= 0.5:
        return s * (6.0 * q * q * q - 6.0 * q * q + 1.0)
    a = 1.0 - q
    return s * 2.0 * a * a * a


@wp.func
def grad_factor(r: float, H: float, kind: int) -> float:
    """f with ∇ᵢW(xᵢ − xⱼ) = d·f, d = xᵢ − xⱼ, r = |d| (dW/dr / r; 0 beyond the support and at r = 0)."""
    q = r / H
    if q >= 1.0 or r < 1.0e-9 * H:
        return 0.0
    dw = float(0.0)
    if kind == KERNEL_WENDLAND:
        s = 21.0 / (2.0 * PI * H * H * H)
        a = 1.0 - q
        dw = s / H * (-20.0 * q * a * a * a)
    else:
        s = 8.0 / (PI * H * H * H)
        if q <= 0.5:
            dw = s / H * (18.0 * q * q - 12.0 * q)
        else:
            a = 1.0 - q
            dw = s / H * (-6.0 * a * a)
    return dw / r


@wp.func
def kernel_scale(H: float, kind: int) -> float:
    """The normalisation s of kernel_w and grad_factor (computed by the same operations)."""
    if kind == KERNEL_WENDLAND:
        return 21.0 / (2.0 * PI * H * H * H)
    return 8.0 / (PI * H * H * H)


@wp.func
def w_and_grad(r: float, H: float, kind: int, s: float, s_h: float) -> wp.vec2:
    """(kernel_w(r), grad_factor(r)) given s = kernel_scale(H) and s_h = s / H: the same operations
    and bits as the two functions, with one q = r/H and the normalisation computed once per particle
    by the caller instead of twice per neighbour."""
    q = r / H
    if q >= 1.0:
        return wp.vec2(0.0, 0.0)
    w = float(0.0)
    dw = float(0.0)
    if kind == KERNEL_WENDLAND:
        a = 1.0 - q
        w = s * a * a * a * a * (1.0 + 4.0 * q)
        dw = s_h * (-20.0 * q * a * a * a)
    else:
        if q <= 0.5:
            w = s * (6.0 * q * q * q - 6.0 * q * q + 1.0)
            dw = s_h * (18.0 * q * q - 12.0 * q)
        else:
            a = 1.0 - q
            w = s * 2.0 * a * a * a
            dw = s_h * (-6.0 * a * a)
    f = float(0.0)
    if r >= 1.0e-9 * H:
        f = dw / r
    return wp.vec2(w, f)


@wp.func
def cohesion(r: float, H: float) -> float:
    """Akinci et al. (2013) cohesion spline C(r)."""
    if r >= H or r <= 0.0:
        return 0.0
    s = 32.0 / (PI * wp.pow(H, 9.0))
    a = (H - r) * (H - r) * (H - r) * r * r * r
    if 2.0 * r > H:
        return s * a
    return s * (2.0 * a - wp.pow(H, 6.0) / 64.0)


@wp.func
def row_cells(ci: wp.vec3i, dy: int, dz: int, dims: wp.vec3i) -> wp.vec2i:
    """First and last cell id of the x-row (ci.x − 1 .. ci.x + 1, ci.y + dy, ci.z + dz) clipped to the
    grid; (0, −1) when the row lies outside (its ranges are then empty)."""
    y = ci[1] + dy
    z = ci[2] + dz
    if y < 0 or z < 0 or y >= dims[1] or z >= dims[2]:
        return wp.vec2i(0, -1)
    base = (z * dims[1] + y) * dims[0]
    return wp.vec2i(base + wp.max(ci[0] - 1, 0), base + wp.min(ci[0] + 1, dims[0] - 1))


@wp.func
def face_gap(x: float, lo: float, c: int, side: int, H: float, slack: float) -> float:
    """Least distance along one axis from coordinate x (of a point in cell c) to a point of cell
    c + side (side −1, 0, +1; cells of width H from lo), less ``slack``, at least 0. A cell's points
    lie below its upper face and above its lower face except at the grid's edges, where the
    clamped points lie farther out (grid.cell_of): the bound holds for them too."""
    g = float(0.0)
    if side < 0:
        g = x - (lo + float(c) * H)
    elif side > 0:
        g = lo + float(c + 1) * H - x
    return wp.max(g - slack, 0.0)


@wp.func
def row_near(x: wp.vec3, ci: wp.vec3i, dy: int, dz: int, m: Model) -> wp.vec2i:
    """row_cells without the cells that hold no point within the support H of x (x in cell ci): the
    row itself when its y/z gap is H or more, else its end cells whose gap with the x gap is. The
    cells left out hold only points at r ≥ H, which the scans skip anyway (r² < H² tests), so the
    accepted neighbours and their order are those of the full row, bit for bit; a particle in the
    middle of its cell scans ~21 of the 27 cells. ``m.cell_slack`` covers the rounding of the gaps
    and of the cell assignment (docs/sph.md)."""
    row = row_cells(ci, dy, dz, m.dims)
    if row[1] < row[0]:
        return row
    H2 = m.H * m.H
    gy = face_gap(x[1], m.lower[1], ci[1], dy, m.H, m.cell_slack)
    gz = face_gap(x[2], m.lower[2], ci[2], dz, m.H, m.cell_slack)
    yz = gy * gy + gz * gz
    if yz >= H2:
        return wp.vec2i(0, -1)
    a = row[0]
    b = row[1]
    if ci[0] > 0:
        gl = face_gap(x[0], m.lower[0], ci[0], -1, m.H, m.cell_slack)
        if gl * gl + yz >= H2:
            a = a + 1
    if ci[0] < m.dims[0] - 1:
        gr = face_gap(x[0], m.lower[0], ci[0], 1, m.H, m.cell_slack)
        if gr * gr + yz >= H2:
            b = b - 1
    return wp.vec2i(a, b)


@wp.func
def density_at(
    # Model:
    m: Model, wcsph: int, env: int, kk: int,
    mass_in: wp.array2d(dtype=float),
    # Data in:
    vel_in: wp.array2d(dtype=wp.vec3), active_in: wp.array2d(dtype=wp.int32),
    start_in: wp.array2d(dtype=wp.int32), sorted_in: wp.array2d(dtype=wp.int32),
    spos_in: wp.array2d(dtype=wp.vec3),
    # Data out:
    rho_out: wp.array2d(dtype=float), pressure_out: wp.array2d(dtype=float),
    alpha_out: wp.array2d(dtype=float),
    rho_s_out: wp.array2d(dtype=float), press_s_out: wp.array2d(dtype=float), pr2_s_out: wp.array2d(dtype=float),
    alpha_s_out: wp.array2d(dtype=float), vel_s_out: wp.array2d(dtype=wp.vec3), mass_s_out: wp.array2d(dtype=float),
    nbrs_out: wp.array2d(dtype=wp.int32), list_out: wp.array2d(dtype=wp.int32), grad_out: wp.array2d(dtype=float),
):
    """ρᵢ = Σⱼ mⱼWᵢⱼ + Σ_b ψ_b Wᵢ_b; WCSPH: Tait pressure; DFSPH: αᵢ = ρᵢ/(|g_f + c·g_b|² + Σ|mⱼ∇Wᵢⱼ|²)
    with g_f = Σⱼ mⱼ∇Wᵢⱼ, g_b = Σ_b ψ_b∇Wᵢ_b and c = b_press (the wall counted as the velocity
    update and the density rate of the solves count it). Thread k: the particle at sorted place k.

    Writes ρ, p, α in particle order and, in sorted order, what the later stages read of a
    neighbour: ρ, p, p/ρ² (WCSPH), α, the velocity and the mass. Also the neighbour list of the
    substep (positions do not change until the post-coupling integration): every liquid neighbour
    (as its sorted place) and boundary particle b (as −b − 1) within the support, in the visiting
    order of the cell loops, with its gradient factor f (∇ᵢW = d·f), so the later stages sum in the
    same order as a scan of the 27 cells would, bit for bit, at a fraction of the cost. nbrs_out
    counts them; more than Model.nbr_cap: −1, and the readers scan the cells for that particle."""
    i = sorted_in[env, kk]
    rho0 = m.rest_rho[i]
    vel_s_out[env, kk] = vel_in[env, i]
    mass_s_out[env, kk] = mass_in[env, i]
    if active_in[env, i] == 0:
        rho_out[env, i] = rho0
        pressure_out[env, i] = 0.0
        alpha_out[env, i] = 0.0
        rho_s_out[env, kk] = rho0
        press_s_out[env, kk] = 0.0
        pr2_s_out[env, kk] = 0.0
        alpha_s_out[env, kk] = 0.0
        nbrs_out[env, kk] = 0
        return
    xi = spos_in[env, kk]
    ci = cell_of(xi, m.lower, m.inv_cell, m.dims)
    rho = float(0.0)
    gsum = wp.vec3(0.0)
    gb = wp.vec3(0.0)
    gsq = float(0.0)
    nl = int(0)
    cap = m.nbr_cap
    base = kk * cap
    H2 = m.H * m.H
    ks = kernel_scale(m.H, m.kernel)
    ks_h = ks / m.H
    for dz in range(-1, 2):
        for dy in range(-1, 2):
            row = row_near(xi, ci, dy, dz, m)
            k = wp.max(start_in[env, row[0]], 0)     # ≥ 0 as it is: lets the compiler drop the index wrap
            k_end = start_in[env, row[1] + 1]
            while k < k_end:
                d = xi - spos_in[env, k]            # positions in cell order: a streaming read
                r2 = wp.dot(d, d)
                if r2 < H2:
                    r = wp.sqrt(r2)
                    mj = mass_in[env, sorted_in[env, k]]
                    wf = w_and_grad(r, m.H, m.kernel, ks, ks_h)
                    rho += mj * wf[0]
                    f = wf[1]
                    if wcsph == 0:                  # α (DFSPH only) needs the gradients
                        g = mj * (d * f)
                        gsum += g
                        gsq += wp.dot(g, g)
                    if k != kk:
                        if nl < cap:
                            list_out[env, base + nl] = k
                            grad_out[env, base + nl] = f
                        nl += 1
                k += 1
            k = wp.max(m.b_start[row[0]], 0)
            k_end = m.b_start[row[1] + 1]
            while k < k_end:
                d = xi - m.b_pos[k]
                r2 = wp.dot(d, d)
                if r2 < H2:
                    r = wp.sqrt(r2)
                    psi = rho0 * m.b_vol[k]
                    wf = w_and_grad(r, m.H, m.kernel, ks, ks_h)
                    rho += psi * wf[0]
                    f = wf[1]
                    if wcsph == 0:
                        gb += psi * (d * f)
                    if nl < cap:
                        list_out[env, base + nl] = -k - 1
                        grad_out[env, base + nl] = f
                    nl += 1
                k += 1
    rho_out[env, i] = rho
    rho_s_out[env, kk] = rho
    if nl > cap:
        nl = -1
    nbrs_out[env, kk] = nl
    if wcsph != 0:
        # Tait equation of state, clamped at 0: a free surface must not pull (tensile instability)
        p = wp.max(m.stiffness[i] * (wp.pow(rho / rho0, m.exponent[i]) - 1.0), 0.0)
        pressure_out[env, i] = p
        press_s_out[env, kk] = p
        pr2_s_out[env, kk] = p / (rho * rho)
        alpha_out[env, i] = 0.0
        alpha_s_out[env, kk] = 0.0
    else:
        pressure_out[env, i] = 0.0
        press_s_out[env, kk] = 0.0
        pr2_s_out[env, kk] = 0.0
        den = wp.dot(gsum + m.b_press * gb, gsum + m.b_press * gb) + gsq
        a = float(0.0)
        if den > 1.0e-6:
            a = rho / den
        alpha_out[env, i] = a
        alpha_s_out[env, kk] = a


PLACE_BLOCK = wp.constant(64)   # sorted places per block of the claimed neighbour stages (docs/sph.md, "Threads")


@wp.kernel
def density(
    # Model:
    m: Model, wcsph: int, n: int, claim: int,
    mass_in: wp.array2d(dtype=float),
    # Data in:
    vel_in: wp.array2d(dtype=wp.vec3), active_in: wp.array2d(dtype=wp.int32),
    start_in: wp.array2d(dtype=wp.int32), sorted_in: wp.array2d(dtype=wp.int32),
    spos_in: wp.array2d(dtype=wp.vec3),
    # Data out:
    rho_out: wp.array2d(dtype=float), pressure_out: wp.array2d(dtype=float),
    alpha_out: wp.array2d(dtype=float),
    rho_s_out: wp.array2d(dtype=float), press_s_out: wp.array2d(dtype=float), pr2_s_out: wp.array2d(dtype=float),
    alpha_s_out: wp.array2d(dtype=float), vel_s_out: wp.array2d(dtype=wp.vec3), mass_s_out: wp.array2d(dtype=float),
    nbrs_out: wp.array2d(dtype=wp.int32), list_out: wp.array2d(dtype=wp.int32), grad_out: wp.array2d(dtype=float),
    claims_inout: wp.array2d(dtype=wp.int32),
):
    """``density_at`` for the sorted places of a block of PLACE_BLOCK: thread (env, c) block c of the
    n places, or with ``claim`` (one thread per env and worker) unclaimed blocks until none is left
    (polyphys.blocks)."""
    env, c = wp.tid()
    n_blocks = (n + PLACE_BLOCK - 1) / PLACE_BLOCK
    b = next_block(claims_inout, claim, env, c, n_blocks)
    while b < n_blocks:
        for kk in range(b * PLACE_BLOCK, wp.min((b + 1) * PLACE_BLOCK, n)):
            density_at(m, wcsph, env, kk, mass_in, vel_in, active_in, start_in, sorted_in, spos_in, rho_out, pressure_out,
                       alpha_out, rho_s_out, press_s_out, pr2_s_out, alpha_s_out, vel_s_out, mass_s_out, nbrs_out, list_out,
                       grad_out)
        b = block_after(claims_inout, claim, env, n_blocks)


BP_BLOCK = wp.constant(64)    # boundary particles per block of boundary_pressure


@wp.func
def boundary_pressure_at(
    m: Model, env: int, b: int,
    start_in: wp.array2d(dtype=wp.int32), spos_in: wp.array2d(dtype=wp.vec3),
    rho_s_in: wp.array2d(dtype=float), press_s_in: wp.array2d(dtype=float),
    bp_out: wp.array2d(dtype=float),
):
    """p_b of boundary particle b (``boundary_pressure``)."""
    xb = m.b_pos[b]
    ci = cell_of(xb, m.lower, m.inv_cell, m.dims)
    sw = float(0.0)
    sp = float(0.0)
    H2 = m.H * m.H
    for dz in range(-1, 2):
        for dy in range(-1, 2):
            row = row_near(xb, ci, dy, dz, m)
            k = wp.max(start_in[env, row[0]], 0)     # ≥ 0 as it is: lets the compiler drop the index wrap
            k_end = start_in[env, row[1] + 1]
            while k < k_end:
                d = xb - spos_in[env, k]
                r2 = wp.dot(d, d)
                if r2 < H2:
                    w = kernel_w(wp.sqrt(r2), m.H, m.kernel)
                    sw += w
                    sp += w * rho_s_in[env, k] * wp.dot(m.gravity, d)
                    sp += w * press_s_in[env, k]
                k += 1
    p = float(0.0)
    if sw > 0.0:
        p = wp.max(sp / sw, 0.0)
    bp_out[env, b] = p


@wp.kernel
def boundary_pressure(
    # Model:
    m: Model, n_b: int, claim: int,
    # Data in:
    start_in: wp.array2d(dtype=wp.int32), spos_in: wp.array2d(dtype=wp.vec3),
    rho_s_in: wp.array2d(dtype=float), press_s_in: wp.array2d(dtype=float),
    # Data out:
    bp_out: wp.array2d(dtype=float), claims_inout: wp.array2d(dtype=wp.int32),
):
    """WCSPH: pressure of boundary particle b extrapolated from the liquid (Adami et al. 2012,
    static wall): p_b = (Σ_f p_f W_bf + g·Σ_f ρ_f (x_b − x_f) W_bf) / Σ_f W_bf, clamped at 0 (a wall
    pushes, never pulls); 0 without liquid neighbours. (DFSPH has no pressure field before its
    solves: its wall pressure is formed pairwise in ``accelerate`` and the solves.) The liquid's
    positions, densities and pressures are read in sorted order (inactive particles are never in
    a cell that is scanned). Thread (env, c): block c of ``BP_BLOCK`` boundary particles, or with
    ``claim`` unclaimed blocks until none is left (polyphys.blocks: the walls' busy parts, where the
    liquid is, go to whichever worker is free; a block spans whole cache lines of ``bp_out``); each
    p_b is the same whichever worker computes it."""
    env, c = wp.tid()
    n_blocks = (n_b + BP_BLOCK - 1) / BP_BLOCK
    blk = next_block(claims_inout, claim, env, c, n_blocks)
    while blk < n_blocks:
        for b in range(blk * BP_BLOCK, wp.min((blk + 1) * BP_BLOCK, n_b)):
            boundary_pressure_at(m, env, b, start_in, spos_in, rho_s_in, press_s_in, bp_out)
        blk = block_after(claims_inout, claim, env, n_blocks)


@wp.func
def accel_liquid(m: Model, env: int, k: int, d: wp.vec3, f: float, with_pressure: int, vi: wp.vec3, rhoi: float,
                 rho0: float, pi: float, nu10: float, gam: float, eps: float, a: wp.vec3, xs: wp.vec3,
                 mass_s: wp.array2d(dtype=float), vel_s: wp.array2d(dtype=wp.vec3), rho_s: wp.array2d(dtype=float),
                 pr2_s: wp.array2d(dtype=float)):
    """The liquid neighbour at sorted place k (d = xᵢ − xₖ, ∇ᵢW = d·f): its pressure, viscosity and
    cohesion terms added to a, its XSPH term to xs."""
    r = wp.length(d)
    if r < m.H:
        mj = mass_s[env, k]
        rhoj = rho_s[env, k]
        g = d * f
        vij = vi - vel_s[env, k]
        if with_pressure != 0:
            a -= mj * (pi + pr2_s[env, k]) * g
        a += nu10 * (mj / rhoj) * wp.dot(vij, d) / (r * r + eps) * g
        if gam > 0.0:
            kij = 2.0 * rho0 / (rhoi + rhoj)
            a -= gam * kij * mj * cohesion(r, m.H) * d / r
        if m.xsph > 0.0:
            xs -= (2.0 * mj / (rhoi + rhoj)) * kernel_w(r, m.H, m.kernel) * vij
    return a, xs


@wp.func
def accel_wall(m: Model, env: int, b: int, d: wp.vec3, f: float, with_pressure: int, xi: wp.vec3, rhoi: float,
               rho0: float, pi: float, kest: float, a: wp.vec3, bp_in: wp.array2d(dtype=float)):
    """Boundary particle b's pressure term added to a (d = xᵢ − x_b, ∇ᵢW = d·f; see ``accelerate``)."""
    r = wp.length(d)
    if r < m.H:
        pb = float(0.0)
        if with_pressure != 0:
            pb = m.b_press * pi
        if m.b_extrap != 0:
            if with_pressure != 0:
                pb += bp_in[env, b] / (rhoi * rhoi)
            else:
                pb += wp.max(wp.dot(m.gravity, m.b_pos[b] - xi), -kest) / rhoi
        a -= rho0 * m.b_vol[b] * pb * (d * f)
    return a


@wp.func
def accelerate_at(
    # Model:
    m: Model, with_pressure: int, out_sorted: int, env: int, kk: int,
    # Data in:
    active_in: wp.array2d(dtype=wp.int32), start_in: wp.array2d(dtype=wp.int32),
    sorted_in: wp.array2d(dtype=wp.int32), spos_in: wp.array2d(dtype=wp.vec3),
    mass_s_in: wp.array2d(dtype=float), vel_s_in: wp.array2d(dtype=wp.vec3), rho_s_in: wp.array2d(dtype=float),
    pr2_s_in: wp.array2d(dtype=float),
    nbrs_in: wp.array2d(dtype=wp.int32), list_in: wp.array2d(dtype=wp.int32), grad_in: wp.array2d(dtype=float),
    bp_in: wp.array2d(dtype=float), kappa_in: wp.array2d(dtype=float),
    # Data out:
    dv_out: wp.array2d(dtype=wp.vec3), vel_out: wp.array2d(dtype=wp.vec3),
):
    """Velocity change of one substep: dv = h·(gravity + viscosity + cohesion [+ pressure]) + XSPH,
    in particle order, and v + dv in ``vel_out`` — at sorted place k (out_sorted, DFSPH: the density
    solve goes on from it) or at particle i (WCSPH). The neighbours' velocities are read from the
    sorted copy, so writing v + dv at once is safe.
    Boundary pressure force −Σ_b ψ_b (b_press·pᵢ + p_b)/ρᵢ² ∇Wᵢ_b (b_extrap):
    WCSPH: pᵢ the Tait pressure and p_b from ``boundary_pressure`` (Adami et al. 2012);
    DFSPH (with_pressure = 0): the solves apply the mirrored κ (b_press = 2) and this stage the
    wall's hydrostatic offset from particle i, p_b − pᵢ = max(ρᵢ g·(x_b − xᵢ), −ρᵢκᵢ) — the liquid's
    pressure carried linearly from i to the boundary particle's own depth, bounded so that the
    wall pressure pᵢ + (p_b − pᵢ) never turns negative for the pressure pᵢ = ρᵢκᵢ the density solve
    carries into this substep (``kappa_in``, particle order; a wall pushes, never pulls)."""
    i = sorted_in[env, kk]
    vi = vel_s_in[env, kk]
    if active_in[env, i] == 0:
        dv_out[env, i] = wp.vec3(0.0)
        if out_sorted != 0:
            vel_out[env, kk] = vi
        return
    xi = spos_in[env, kk]
    rhoi = rho_s_in[env, kk]
    rho0 = m.rest_rho[i]
    pi = pr2_s_in[env, kk]
    kest = kappa_in[env, i]
    nu10 = 10.0 * m.mu[i] / rhoi          # 2(d+2)·ν with d = 3
    gam = m.gamma[i]
    eps = 0.01 * m.H * m.H
    a = m.gravity
    xs = wp.vec3(0.0)
    walls = with_pressure != 0 or m.b_extrap != 0
    nl = nbrs_in[env, kk]
    if nl >= 0:
        base = kk * m.nbr_cap
        t = wp.max(base, 0)                     # ≥ 0 as it is (see density_at)
        t_end = t + nl
        while t < t_end:
            q = list_in[env, t]
            f = grad_in[env, t]
            if q >= 0:
                a, xs = accel_liquid(m, env, q, xi - spos_in[env, q], f, with_pressure, vi, rhoi, rho0, pi, nu10, gam,
                                     eps, a, xs, mass_s_in, vel_s_in, rho_s_in, pr2_s_in)
            elif walls:
                wb = -q - 1
                a = accel_wall(m, env, wb, xi - m.b_pos[wb], f, with_pressure, xi, rhoi, rho0, pi, kest, a, bp_in)
            t += 1
    else:
        ci = cell_of(xi, m.lower, m.inv_cell, m.dims)
        for dz in range(-1, 2):
            for dy in range(-1, 2):
                row = row_cells(ci, dy, dz, m.dims)
                for k in range(start_in[env, row[0]], start_in[env, row[1] + 1]):
                    if k != kk:
                        d = xi - spos_in[env, k]
                        a, xs = accel_liquid(m, env, k, d, grad_factor(wp.length(d), m.H, m.kernel), with_pressure, vi,
                                             rhoi, rho0, pi, nu10, gam, eps, a, xs, mass_s_in, vel_s_in, rho_s_in,
                                             pr2_s_in)
                if walls:
                    for b in range(m.b_start[row[0]], m.b_start[row[1] + 1]):
                        d = xi - m.b_pos[b]
                        a = accel_wall(m, env, b, d, grad_factor(wp.length(d), m.H, m.kernel), with_pressure, xi, rhoi,
                                       rho0, pi, kest, a, bp_in)
    dv = m.h * a + m.xsph * xs
    dv_out[env, i] = dv
    if out_sorted != 0:
        vel_out[env, kk] = vi + dv
    else:
        vel_out[env, i] = vi + dv


@wp.kernel
def accelerate(
    # Model:
    m: Model, with_pressure: int, out_sorted: int, n: int, claim: int,
    # Data in:
    active_in: wp.array2d(dtype=wp.int32), start_in: wp.array2d(dtype=wp.int32),
    sorted_in: wp.array2d(dtype=wp.int32), spos_in: wp.array2d(dtype=wp.vec3),
    mass_s_in: wp.array2d(dtype=float), vel_s_in: wp.array2d(dtype=wp.vec3), rho_s_in: wp.array2d(dtype=float),
    pr2_s_in: wp.array2d(dtype=float),
    nbrs_in: wp.array2d(dtype=wp.int32), list_in: wp.array2d(dtype=wp.int32), grad_in: wp.array2d(dtype=float),
    bp_in: wp.array2d(dtype=float), kappa_in: wp.array2d(dtype=float),
    # Data out:
    dv_out: wp.array2d(dtype=wp.vec3), vel_out: wp.array2d(dtype=wp.vec3),
    claims_inout: wp.array2d(dtype=wp.int32),
):
    """``accelerate_at`` for the sorted places of a block of PLACE_BLOCK (as ``density``)."""
    env, c = wp.tid()
    n_blocks = (n + PLACE_BLOCK - 1) / PLACE_BLOCK
    b = next_block(claims_inout, claim, env, c, n_blocks)
    while b < n_blocks:
        for kk in range(b * PLACE_BLOCK, wp.min((b + 1) * PLACE_BLOCK, n)):
            accelerate_at(m, with_pressure, out_sorted, env, kk, active_in, start_in, sorted_in, spos_in, mass_s_in,
                          vel_s_in, rho_s_in, pr2_s_in, nbrs_in, list_in, grad_in, bp_in, kappa_in, dv_out, vel_out)
        b = block_after(claims_inout, claim, env, n_blocks)


@wp.func
def solve_kappa_at(
    # Model:
    m: Model, env: int, kk: int,
    done_in: wp.array(dtype=wp.int32),
    # Data in:
    active_in: wp.array2d(dtype=wp.int32), start_in: wp.array2d(dtype=wp.int32),
    sorted_in: wp.array2d(dtype=wp.int32), spos_in: wp.array2d(dtype=wp.vec3),
    mass_s_in: wp.array2d(dtype=float), vel_s_in: wp.array2d(dtype=wp.vec3),
    nbrs_in: wp.array2d(dtype=wp.int32), list_in: wp.array2d(dtype=wp.int32), grad_in: wp.array2d(dtype=float),
    rho_s_in: wp.array2d(dtype=float), alpha_s_in: wp.array2d(dtype=float),
    base_in: wp.array2d(dtype=float),
    # Data out:
    kappa_out: wp.array2d(dtype=float), kr_s_out: wp.array2d(dtype=float), err_out: wp.array2d(dtype=float),
    total_inout: wp.array2d(dtype=float), pressure_out: wp.array2d(dtype=float),
):
    """DFSPH Jacobi step (Bender & Koschier 2015, 2017): the density predicted from the current
    velocities ρ*ᵢ = ρᵢ + h·(Σⱼ mⱼ(vᵢ − vⱼ)·∇Wᵢⱼ + c·Σ_b ψ_b vᵢ·∇Wᵢ_b), its compression
    e = max(ρ*ᵢ − ρ₀, 0) (a liquid pushes, never pulls), κᵢ = ω·e·αᵢ/h², error e/ρ₀. The wall's
    rate counts c = b_press times, as ``solve_update`` counts the wall's pressure: rate and update
    are then transposes of each other and the solve is an exact projection (c = 2, the mirrored
    wall, with the physical rate c = 1: resting-column jitter 25–40 % higher, docs/sph.md). The same form serves the
    divergence solve (e/h is then the clamped density change rate). total += κ (it starts as the
    carried half of the last substep's total, see SPHSolver._solve). Both solves apply
    pressure-like impulses: pressure_out = base + total·ρ, with base the divergence solve's share
    in the density solve. Thread k: the particle at sorted place k (velocities in sorted order);
    κ, the error, the total and the pressure in particle order, κ/ρ (what ``solve_update`` reads
    of a neighbour) in sorted order."""
    if done_in[env] != 0:
        return
    i = sorted_in[env, kk]
    if active_in[env, i] == 0:
        kappa_out[env, i] = 0.0
        kr_s_out[env, kk] = 0.0
        err_out[env, i] = 0.0
        return
    xi = spos_in[env, kk]
    vi = vel_s_in[env, kk]
    rho0 = m.rest_rho[i]
    drho = float(0.0)
    nl = nbrs_in[env, kk]
    if nl >= 0:
        base = kk * m.nbr_cap
        t = wp.max(base, 0)                     # ≥ 0 as it is (see density_at)
        t_end = t + nl
        while t < t_end:
            nb = list_in[env, t]
            f = grad_in[env, t]
            if nb >= 0:
                drho += mass_s_in[env, nb] * wp.dot(vi - vel_s_in[env, nb], (xi - spos_in[env, nb]) * f)
            else:
                wb = -nb - 1
                drho += m.b_press * rho0 * m.b_vol[wb] * wp.dot(vi, (xi - m.b_pos[wb]) * f)
            t += 1
    else:
        ci = cell_of(xi, m.lower, m.inv_cell, m.dims)
        for dz in range(-1, 2):
            for dy in range(-1, 2):
                row = row_cells(ci, dy, dz, m.dims)
                for k in range(start_in[env, row[0]], start_in[env, row[1] + 1]):
                    d = xi - spos_in[env, k]
                    r = wp.length(d)
                    if r < m.H and k != kk:
                        drho += mass_s_in[env, k] * wp.dot(vi - vel_s_in[env, k], d * grad_factor(r, m.H, m.kernel))
                for b in range(m.b_start[row[0]], m.b_start[row[1] + 1]):
                    d = xi - m.b_pos[b]
                    r = wp.length(d)
                    if r < m.H:
                        drho += m.b_press * rho0 * m.b_vol[b] * wp.dot(vi, d * grad_factor(r, m.H, m.kernel))
    h = m.h
    rho = rho_s_in[env, kk]
    e = wp.max(rho + h * drho - rho0, 0.0)
    kap = m.omega * e * alpha_s_in[env, kk] / (h * h)
    tot = total_inout[env, i] + kap
    total_inout[env, i] = tot
    pressure_out[env, i] = base_in[env, i] + tot * rho
    kappa_out[env, i] = kap
    kr_s_out[env, kk] = kap / rho
    err_out[env, i] = e / rho0

@wp.kernel
def solve_kappa(
    # Model:
    m: Model, n: int, claim: int,
    done_in: wp.array(dtype=wp.int32),
    # Data in:
    active_in: wp.array2d(dtype=wp.int32), start_in: wp.array2d(dtype=wp.int32),
    sorted_in: wp.array2d(dtype=wp.int32), spos_in: wp.array2d(dtype=wp.vec3),
    mass_s_in: wp.array2d(dtype=float), vel_s_in: wp.array2d(dtype=wp.vec3),
    nbrs_in: wp.array2d(dtype=wp.int32), list_in: wp.array2d(dtype=wp.int32), grad_in: wp.array2d(dtype=float),
    rho_s_in: wp.array2d(dtype=float), alpha_s_in: wp.array2d(dtype=float),
    base_in: wp.array2d(dtype=float),
    # Data out:
    kappa_out: wp.array2d(dtype=float), kr_s_out: wp.array2d(dtype=float), err_out: wp.array2d(dtype=float),
    total_inout: wp.array2d(dtype=float), pressure_out: wp.array2d(dtype=float),
    claims_inout: wp.array2d(dtype=wp.int32),
):
    """``solve_kappa_at`` for the sorted places of a block of PLACE_BLOCK (as ``density``)."""
    env, c = wp.tid()
    n_blocks = (n + PLACE_BLOCK - 1) / PLACE_BLOCK
    b = next_block(claims_inout, claim, env, c, n_blocks)
    while b < n_blocks:
        for kk in range(b * PLACE_BLOCK, wp.min((b + 1) * PLACE_BLOCK, n)):
            solve_kappa_at(m, env, kk, done_in, active_in, start_in, sorted_in, spos_in, mass_s_in, vel_s_in, nbrs_in, list_in,
                           grad_in, rho_s_in, alpha_s_in, base_in, kappa_out, kr_s_out, err_out, total_inout, pressure_out)
        b = block_after(claims_inout, claim, env, n_blocks)



@wp.kernel
def kappa_over_rho(
    # Model:
    scale: float, factor: float, k0: int,
    # Data in:
    sorted_in: wp.array2d(dtype=wp.int32), rho_s_in: wp.array2d(dtype=float),
    # Data out:
    kr_s_out: wp.array2d(dtype=float), kappa_inout: wp.array2d(dtype=float),
):
    """kr[k] = scale·κᵢ/ρᵢ in sorted order (what ``solve_update`` applies), then κᵢ ← factor·κᵢ
    (the DFSPH warm start: apply half of the last total, carry that half)."""
    env, q = wp.tid()
    kk = k0 + q
    i = sorted_in[env, kk]
    kap = kappa_inout[env, i]
    kr_s_out[env, kk] = scale * kap / rho_s_in[env, kk]
    kappa_inout[env, i] = factor * kap


@wp.func
def solve_update_at(
    # Model:
    m: Model, env: int, kk: int,
    done_in: wp.array(dtype=wp.int32),
    # Data in:
    active_in: wp.array2d(dtype=wp.int32), start_in: wp.array2d(dtype=wp.int32),
    sorted_in: wp.array2d(dtype=wp.int32), spos_in: wp.array2d(dtype=wp.vec3),
    mass_s_in: wp.array2d(dtype=float),
    nbrs_in: wp.array2d(dtype=wp.int32), list_in: wp.array2d(dtype=wp.int32), grad_in: wp.array2d(dtype=float),
    kr_s_in: wp.array2d(dtype=float),
    # Data out:
    vel_s_inout: wp.array2d(dtype=wp.vec3),
):
    """DFSPH: vᵢ −= h·(Σⱼ mⱼ(κᵢ/ρᵢ + κⱼ/ρⱼ)∇Wᵢⱼ + c·Σ_b ψ_b κᵢ/ρᵢ·∇Wᵢ_b), with κ/ρ from ``kr_s_in``
    and the velocities in sorted order (thread k: the particle at sorted place k)."""
    if done_in[env] != 0:
        return
    i = sorted_in[env, kk]
    if active_in[env, i] == 0:
        return
    xi = spos_in[env, kk]
    ki = kr_s_in[env, kk]
    rho0 = m.rest_rho[i]
    dv = wp.vec3(0.0)
    nl = nbrs_in[env, kk]
    if nl >= 0:
        base = kk * m.nbr_cap
        t = wp.max(base, 0)                     # ≥ 0 as it is (see density_at)
        t_end = t + nl
        while t < t_end:
            nb = list_in[env, t]
            f = grad_in[env, t]
            if nb >= 0:
                dv -= mass_s_in[env, nb] * (ki + kr_s_in[env, nb]) * ((xi - spos_in[env, nb]) * f)
            else:
                wb = -nb - 1
                dv -= m.b_press * rho0 * m.b_vol[wb] * ki * ((xi - m.b_pos[wb]) * f)
            t += 1
    else:
        ci = cell_of(xi, m.lower, m.inv_cell, m.dims)
        for dz in range(-1, 2):
            for dy in range(-1, 2):
                row = row_cells(ci, dy, dz, m.dims)
                for k in range(start_in[env, row[0]], start_in[env, row[1] + 1]):
                    d = xi - spos_in[env, k]
                    r = wp.length(d)
                    if r < m.H and k != kk:
                        dv -= mass_s_in[env, k] * (ki + kr_s_in[env, k]) * (d * grad_factor(r, m.H, m.kernel))
                for b in range(m.b_start[row[0]], m.b_start[row[1] + 1]):
                    d = xi - m.b_pos[b]
                    r = wp.length(d)
                    if r < m.H:
                        dv -= m.b_press * rho0 * m.b_vol[b] * ki * (d * grad_factor(r, m.H, m.kernel))
    vel_s_inout[env, kk] = vel_s_inout[env, kk] + m.h * dv

@wp.kernel
def solve_update(
    # Model:
    m: Model, n: int, claim: int,
    done_in: wp.array(dtype=wp.int32),
    # Data in:
    active_in: wp.array2d(dtype=wp.int32), start_in: wp.array2d(dtype=wp.int32),
    sorted_in: wp.array2d(dtype=wp.int32), spos_in: wp.array2d(dtype=wp.vec3),
    mass_s_in: wp.array2d(dtype=float),
    nbrs_in: wp.array2d(dtype=wp.int32), list_in: wp.array2d(dtype=wp.int32), grad_in: wp.array2d(dtype=float),
    kr_s_in: wp.array2d(dtype=float),
    # Data out:
    vel_s_inout: wp.array2d(dtype=wp.vec3),
    claims_inout: wp.array2d(dtype=wp.int32),
):
    """``solve_update_at`` for the sorted places of a block of PLACE_BLOCK (as ``density``)."""
    env, c = wp.tid()
    n_blocks = (n + PLACE_BLOCK - 1) / PLACE_BLOCK
    b = next_block(claims_inout, claim, env, c, n_blocks)
    while b < n_blocks:
        for kk in range(b * PLACE_BLOCK, wp.min((b + 1) * PLACE_BLOCK, n)):
            solve_update_at(m, env, kk, done_in, active_in, start_in, sorted_in, spos_in, mass_s_in, nbrs_in, list_in, grad_in,
                            kr_s_in, vel_s_inout)
        b = block_after(claims_inout, claim, env, n_blocks)



@wp.kernel
def scatter_vel(
    # Model:
    k0: int,
    # Data in:
    sorted_in: wp.array2d(dtype=wp.int32),
    vel_s_in: wp.array2d(dtype=wp.vec3),
    # Data out:
    vel_out: wp.array2d(dtype=wp.vec3),
):
    """vᵢ = the velocity at sorted place k (the end of DFSPH's solves, which work in sorted order)."""
    env, q = wp.tid()
    kk = k0 + q
    vel_out[env, sorted_in[env, kk]] = vel_s_in[env, kk]


@wp.kernel
def zero_rows(
    # Model:
    i0: int,
    # Data out:
    values_out: wp.array2d(dtype=float),
):
    env, q = wp.tid()
    i = i0 + q
    values_out[env, i] = 0.0


@wp.func
def integrate_at(
    m: Model, cfl_dist: float, env: int, i: int,
    active_in: wp.array2d(dtype=wp.int32),
    pos_inout: wp.array2d(dtype=wp.vec3), vel_inout: wp.array2d(dtype=wp.vec3),
    cfl_out: wp.array(dtype=wp.int32),
):
    """x += h·v and the safety clamps into the domain and above static planes for particle i. A
    particle that travels more than ``cfl_dist`` in one substep flags its env."""
    if active_in[env, i] == 0:
        return
    v = vel_inout[env, i]
    x = pos_inout[env, i] + m.h * v
    if wp.length(v) * m.h > cfl_dist:
        cfl_out[env] = 1
    for p in range(m.n_planes):
        n = m.plane_n[p]
        s = wp.dot(x - m.plane_p[p], n)
        if s < 0.0:
            x = x - s * n
            vn = wp.dot(v, n)
            if vn < 0.0:
                v = v - vn * n
    for ax in range(3):
        if x[ax] < m.lower[ax]:
            x[ax] = m.lower[ax]
            if v[ax] < 0.0:
                v[ax] = 0.0
        if x[ax] > m.upper[ax]:
            x[ax] = m.upper[ax]
            if v[ax] > 0.0:
                v[ax] = 0.0
    pos_inout[env, i] = x
    vel_inout[env, i] = v


@wp.kernel
def integrate(
    # Model:
    m: Model, cfl_dist: float, i0: int,
    # Data in:
    active_in: wp.array2d(dtype=wp.int32),
    # Data out:
    pos_inout: wp.array2d(dtype=wp.vec3), vel_inout: wp.array2d(dtype=wp.vec3),
    cfl_out: wp.array(dtype=wp.int32),
):
    """``integrate_at`` for the particles from i0 on (particle order; a worker's share)."""
    env, q = wp.tid()
    integrate_at(m, cfl_dist, env, i0 + q, active_in, pos_inout, vel_inout, cfl_out)


INTEGRATE_BLOCK = wp.constant(512)    # particles per block of the claimed integration


@wp.kernel
def integrate_blocks(
    # Model:
    m: Model, cfl_dist: float, n: int, claim: int,
    # Data in:
    active_in: wp.array2d(dtype=wp.int32),
    # Data out:
    pos_inout: wp.array2d(dtype=wp.vec3), vel_inout: wp.array2d(dtype=wp.vec3),
    cfl_out: wp.array(dtype=wp.int32),
    claims_inout: wp.array2d(dtype=wp.int32),
):
    """``integrate_at`` over blocks of INTEGRATE_BLOCK particles that the workers claim (polyphys.blocks):
    thread (env, c) block c, or with ``claim`` unclaimed blocks until none is left."""
    env, c = wp.tid()
    n_blocks = (n + INTEGRATE_BLOCK - 1) / INTEGRATE_BLOCK
    b = next_block(claims_inout, claim, env, c, n_blocks)
    while b < n_blocks:
        for i in range(b * INTEGRATE_BLOCK, wp.min((b + 1) * INTEGRATE_BLOCK, n)):
            integrate_at(m, cfl_dist, env, i, active_in, pos_inout, vel_inout, cfl_out)
        b = block_after(claims_inout, claim, env, n_blocks)
