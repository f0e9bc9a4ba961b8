"""XPBD constraint projection (Macklin, Müller, Chentanez 2016): distance, dihedral bending and tet
volume constraints, one launch per graph colour (no two constraints of a colour share a particle,
so each colour is solved Gauss-Seidel style with no race and no float atomics, and its constraints
may be split over a partition's workers), and shape matching (Müller et al. 2005) of sampled
elastic bodies, one thread per (env, body).

Each XPBD update: dλ = (-C - α̃ λ) / (Σ w_k |∇_k C|² + α̃), α̃ = α / h², x_k += w_k ∇_k C dλ.
"""

import warp as wp

wp.set_module_options({"enable_backward": False})   # nothing here is differentiated


@wp.func
def eff_inv_mass(inv_mass0: wp.array(dtype=float), free: wp.array2d(dtype=wp.int32), env: int, i: int):
    if free[env, i] == 0:
        return 0.0
    return inv_mass0[i]


@wp.func
def distance_update(
    env: int,
    k: int,
    lam_offset: int,
    con_i: wp.array(dtype=wp.int32),
    con_j: wp.array(dtype=wp.int32),
    rest: wp.array(dtype=float),
    compliance: wp.array(dtype=float),
    inv_mass0: wp.array(dtype=float),
    inv_h2: float,
    free_in: wp.array2d(dtype=wp.int32),
    pos_out: wp.array2d(dtype=wp.vec3),
    lam_out: wp.array2d(dtype=float),
):
    """Distance constraint k of env ``env``: one XPBD update."""
    i = con_i[k]
    j = con_j[k]
    wi = eff_inv_mass(inv_mass0, free_in, env, i)
    wj = eff_inv_mass(inv_mass0, free_in, env, j)
    w = wi + wj
    if w == 0.0:
        return
    d = pos_out[env, i] - pos_out[env, j]
    ln = wp.length(d)
    if ln < 1.0e-12:
        return
    n = d / ln
    a = compliance[k] * inv_h2
    lam = lam_out[env, lam_offset + k]
    dl = (-(ln - rest[k]) - a * lam) / (w + a)
    lam_out[env, lam_offset + k] = lam + dl
    pos_out[env, i] = pos_out[env, i] + (wi * dl) * n
    pos_out[env, j] = pos_out[env, j] - (wj * dl) * n


@wp.kernel
def solve_distance(
    # Model:
    offset: int,
    lam_offset: int,
    con_i: wp.array(dtype=wp.int32),
    con_j: wp.array(dtype=wp.int32),
    rest: wp.array(dtype=float),
    compliance: wp.array(dtype=float),
    inv_mass0: wp.array(dtype=float),
    inv_h2: float,
    # Data in:
    free_in: wp.array2d(dtype=wp.int32),
    # Data out:
    pos_out: wp.array2d(dtype=wp.vec3),
    lam_out: wp.array2d(dtype=float),
):
    """One thread per (env, constraint) of a colour from ``offset``."""
    env, t = wp.tid()
    distance_update(env, offset + t, lam_offset, con_i, con_j, rest, compliance, inv_mass0, inv_h2, free_in,
                    pos_out, lam_out)


@wp.kernel
def solve_distance_range(
    # Model:
    k0: int,
    k1: int,
    lam_offset: int,
    con_i: wp.array(dtype=wp.int32),
    con_j: wp.array(dtype=wp.int32),
    rest: wp.array(dtype=float),
    compliance: wp.array(dtype=float),
    inv_mass0: wp.array(dtype=float),
    inv_h2: float,
    # Data in:
    free_in: wp.array2d(dtype=wp.int32),
    # Data out:
    pos_out: wp.array2d(dtype=wp.vec3),
    lam_out: wp.array2d(dtype=float),
):
    """One thread per env: constraints k0 .. k1 - 1 in order (a share of one colour, or several whole
    colours one after the other: the same updates as ``solve_distance`` colour by colour). A CPU
    grid thread costs ~9 ns of launch overhead, more than half of a distance update (docs/pbd.md,
    "Constraint loops"); the loop is a ``while`` from max(k0, 0) (no per-iteration step sign test)."""
    env = wp.tid()
    k = wp.max(k0, 0)
    while k < k1:
        distance_update(env, k, lam_offset, con_i, con_j, rest, compliance, inv_mass0, inv_h2, free_in, pos_out,
                        lam_out)
        k += 1


@wp.func
def wrap_angle(a: float):
    if a > wp.pi:
        return a - 2.0 * wp.pi
    if a < -wp.pi:
        return a + 2.0 * wp.pi
    return a


@wp.func
def bending_update(
    env: int,
    k: int,
    lam_offset: int,
    quads: wp.array(dtype=wp.vec4i),
    rest_angle: wp.array(dtype=float),
    compliance: wp.array(dtype=float),
    inv_mass0: wp.array(dtype=float),
    inv_h2: float,
    free_in: wp.array2d(dtype=wp.int32),
    pos_out: wp.array2d(dtype=wp.vec3),
    lam_out: wp.array2d(dtype=float),
):
    """Dihedral angle θ across the shared edge (x3, x4) of triangles (x1, x3, x4), (x2, x4, x3);
    exact gradients of Bridson et al. 2003; C = θ - θ0."""
    q = quads[k]
    w1 = eff_inv_mass(inv_mass0, free_in, env, q[0])
    w2 = eff_inv_mass(inv_mass0, free_in, env, q[1])
    w3 = eff_inv_mass(inv_mass0, free_in, env, q[2])
    w4 = eff_inv_mass(inv_mass0, free_in, env, q[3])
    if w1 + w2 + w3 + w4 == 0.0:
        return
    x1 = pos_out[env, q[0]]
    x2 = pos_out[env, q[1]]
    x3 = pos_out[env, q[2]]
    x4 = pos_out[env, q[3]]
    n1 = wp.cross(x3 - x1, x4 - x1)
    n2 = wp.cross(x4 - x2, x3 - x2)
    l1 = wp.length(n1)
    l2 = wp.length(n2)
    e = x4 - x3
    el = wp.length(e)
    if l1 < 1.0e-12 or l2 < 1.0e-12 or el < 1.0e-12:
        return
    n1 = n1 / l1
    n2 = n2 / l2
    eh = e / el
    theta = wp.atan2(wp.dot(wp.cross(n1, n2), eh), wp.dot(n1, n2))
    g1 = n1 * (-el / l1)
    g2 = n2 * (-el / l2)
    g3 = -(n1 * (wp.dot(x1 - x4, eh) / l1) + n2 * (wp.dot(x2 - x4, eh) / l2))
    g4 = -(n1 * (wp.dot(x3 - x1, eh) / l1) + n2 * (wp.dot(x3 - x2, eh) / l2))
    denom = w1 * wp.dot(g1, g1) + w2 * wp.dot(g2, g2) + w3 * wp.dot(g3, g3) + w4 * wp.dot(g4, g4)
    a = compliance[k] * inv_h2
    if denom + a < 1.0e-20:
        return
    lam = lam_out[env, lam_offset + k]
    c = wrap_angle(theta - rest_angle[k])
    dl = (-c - a * lam) / (denom + a)
    lam_out[env, lam_offset + k] = lam + dl
    pos_out[env, q[0]] = x1 + (w1 * dl) * g1
    pos_out[env, q[1]] = x2 + (w2 * dl) * g2
    pos_out[env, q[2]] = x3 + (w3 * dl) * g3
    pos_out[env, q[3]] = x4 + (w4 * dl) * g4


@wp.kernel
def solve_bending(
    # Model:
    offset: int,
    lam_offset: int,
    quads: wp.array(dtype=wp.vec4i),
    rest_angle: wp.array(dtype=float),
    compliance: wp.array(dtype=float),
    inv_mass0: wp.array(dtype=float),
    inv_h2: float,
    # Data in:
    free_in: wp.array2d(dtype=wp.int32),
    # Data out:
    pos_out: wp.array2d(dtype=wp.vec3),
    lam_out: wp.array2d(dtype=float),
):
    """One thread per (env, constraint) of a colour from ``offset`` (``bending_update``)."""
    env, t = wp.tid()
    bending_update(env, offset + t, lam_offset, quads, rest_angle, compliance, inv_mass0, inv_h2, free_in, pos_out,
                   lam_out)


@wp.kernel
def solve_bending_range(
    # Model:
    k0: int,
    k1: int,
    lam_offset: int,
    quads: wp.array(dtype=wp.vec4i),
    rest_angle: wp.array(dtype=float),
    compliance: wp.array(dtype=float),
    inv_mass0: wp.array(dtype=float),
    inv_h2: float,
    # Data in:
    free_in: wp.array2d(dtype=wp.int32),
    # Data out:
    pos_out: wp.array2d(dtype=wp.vec3),
    lam_out: wp.array2d(dtype=float),
):
    """One thread per env: bending constraints k0 .. k1 - 1 in order (``solve_distance_range``)."""
    env = wp.tid()
    k = wp.max(k0, 0)
    while k < k1:
        bending_update(env, k, lam_offset, quads, rest_angle, compliance, inv_mass0, inv_h2, free_in, pos_out,
                       lam_out)
        k += 1


@wp.kernel
def solve_volume(
    # Model:
    offset: int,
    lam_offset: int,
    tets: wp.array(dtype=wp.vec4i),
    rest_volume: wp.array(dtype=float),
    compliance: wp.array(dtype=float),
    inv_mass0: wp.array(dtype=float),
    inv_h2: float,
    # Data in:
    free_in: wp.array2d(dtype=wp.int32),
    # Data out:
    pos_out: wp.array2d(dtype=wp.vec3),
    lam_out: wp.array2d(dtype=float),
):
    """C = V - V0 with V = (x2-x1)×(x3-x1)·(x4-x1)/6 (Macklin et al. 2016, volume conservation)."""
    env, t = wp.tid()
    k = offset + t
    q = tets[k]
    w1 = eff_inv_mass(inv_mass0, free_in, env, q[0])
    w2 = eff_inv_mass(inv_mass0, free_in, env, q[1])
    w3 = eff_inv_mass(inv_mass0, free_in, env, q[2])
    w4 = eff_inv_mass(inv_mass0, free_in, env, q[3])
    if w1 + w2 + w3 + w4 == 0.0:
        return
    x1 = pos_out[env, q[0]]
    x2 = pos_out[env, q[1]]
    x3 = pos_out[env, q[2]]
    x4 = pos_out[env, q[3]]
    g2 = wp.cross(x3 - x1, x4 - x1) / 6.0
    g3 = wp.cross(x4 - x1, x2 - x1) / 6.0
    g4 = wp.cross(x2 - x1, x3 - x1) / 6.0
    g1 = -(g2 + g3 + g4)
    vol = wp.dot(x2 - x1, g2)
    denom = w1 * wp.dot(g1, g1) + w2 * wp.dot(g2, g2) + w3 * wp.dot(g3, g3) + w4 * wp.dot(g4, g4)
    a = compliance[k] * inv_h2
    if denom + a < 1.0e-30:
        return
    lam = lam_out[env, lam_offset + k]
    dl = (-(vol - rest_volume[k]) - a * lam) / (denom + a)
    lam_out[env, lam_offset + k] = lam + dl
    pos_out[env, q[0]] = x1 + (w1 * dl) * g1
    pos_out[env, q[1]] = x2 + (w2 * dl) * g2
    pos_out[env, q[2]] = x3 + (w3 * dl) * g3
    pos_out[env, q[3]] = x4 + (w4 * dl) * g4


@wp.kernel
def shape_match(
    # Model:
    body_start: wp.array(dtype=wp.int32),
    body_count: wp.array(dtype=wp.int32),
    body_ref: wp.array(dtype=wp.int32),
    body_inv_mass: wp.array(dtype=float),
    body_stiffness: wp.array(dtype=float),
    rest_offset: wp.array(dtype=wp.vec3),
    mass: wp.array(dtype=float),
    inv_mass0: wp.array(dtype=float),
    b0: int,
    # Data in:
    free_in: wp.array2d(dtype=wp.int32),
    # Data out:
    pos_out: wp.array2d(dtype=wp.vec3),
):
    """Rigid shape matching of one body (Müller et al. 2005): goal g_i = c + R q_i, R the rotation
    of the polar decomposition of A = Σ m_i (x_i - c) q_iᵀ; free particles move by
    stiffness · (g_i - x_i). Sums run serially in particle order (deterministic).

    Every sum is taken relative to the body's reference particle x_r (the one nearest its rest
    centre of mass), c = x_r + d with d = Σ m_i (x_i - x_r) / M, and the correction is formed as
    (x_r - x_i) + (d + R q_i): summing absolute float32 positions instead biases c by up to
    n·eps·|x| (1e-4 m for 1000 particles 2 m from the origin), more than a substep's fall, and
    every iteration then moves the whole body by that bias (docs/pbd.md, "Shape matching")."""
    env, q = wp.tid()
    b = b0 + q
    s = body_start[b]
    n = body_count[b]
    xr = pos_out[env, body_ref[b]]
    d = wp.vec3(0.0)
    for k in range(n):
        i = s + k
        d += mass[i] * (pos_out[env, i] - xr)
    d = d * body_inv_mass[b]
    # A and its polar decomposition in float64: float32 svd3 of the symmetric A of a body at rest in
    # a rotated frame (A = Σ m q qᵀ) returns R off the identity by up to 2e-4 (measured on random
    # rotations of a 0.2 x 0.14 x 0.1 m box's A), a fixed error that every iteration turns into a
    # rigid rotation: the body spun up at 5 rad/s² at 10 substeps. In float64 the error is 1e-15.
    A = wp.mat33d(wp.float64(0.0))
    for k in range(n):
        i = s + k
        A += wp.mat33d(mass[i] * wp.outer((pos_out[env, i] - xr) - d, rest_offset[i]))
    U = wp.mat33d()
    sig = wp.vec3d()
    V = wp.mat33d()
    wp.svd3(A, U, sig, V)
    Rd = U * wp.transpose(V)
    if wp.determinant(Rd) < wp.float64(0.0):
        U = wp.mat33d(U[0, 0], U[0, 1], -U[0, 2], U[1, 0], U[1, 1], -U[1, 2], U[2, 0], U[2, 1], -U[2, 2])
        Rd = U * wp.transpose(V)
    R = wp.mat33(Rd)
    st = body_stiffness[b]
    for k in range(n):
        i = s + k
        if free_in[env, i] != 0 and inv_mass0[i] > 0.0:
            x = pos_out[env, i]
            pos_out[env, i] = x + st * ((xr - x) + (d + R * rest_offset[i]))


@wp.kernel
def solve_tethers(
    # Model:
    n_tethers: int,
    anchor: wp.array(dtype=wp.int32),
    length: wp.array(dtype=float),
    inv_mass0: wp.array(dtype=float),
    i0: int,
    # Data in:
    free_in: wp.array2d(dtype=wp.int32),
    # Data out:
    pos_out: wp.array2d(dtype=wp.vec3),
):
    """Long-range attachments (Kim et al. 2012): |x_i - x_a| <= L_ia for each anchor a of i that
    is pinned in this env; only x_i moves (the anchor is pinned), so threads never write a position
    another thread reads."""
    env, q = wp.tid()
    i = i0 + q
    if free_in[env, i] == 0 or inv_mass0[i] == 0.0:
        return
    x = pos_out[env, i]
    for k in range(n_tethers):
        a = anchor[i * n_tethers + k]
        if a < 0:
            continue
        if free_in[env, a] != 0:
            continue
        d = x - pos_out[env, a]
        ln = wp.length(d)
        lim = length[i * n_tethers + k]
        if ln > lim:
            x = x - d * ((ln - lim) / ln)
    pos_out[env, i] = x
