"""Collision pipeline kernels every scene with collision launches: geom poses, AABBs, the all-vs-all
broadphase over the build-filtered pair list, per-pair contact pruning, the contact counts and the
export to the constraint builder. The rest is in modules a scene compiles and launches only when it
needs them (docs/collision.md, "Kernel modules"): the sweep-and-prune broadphase
(collision_sap.py), the narrowphase of each pair family with an analytic routine
(collision_plane.py, collision_sphere.py, collision_capsule.py, collision_box.py) and the GJK + EPA /
heightfield-prism pairs (collision_gjk.py). Generic over precision: the float32/float64 overloads at
the bottom are registered per precision (types.declare_overloads), as in polyphys.kernels.fk.

Budgets: every stage counts with an atomic counter per env and writes only below its budget; the
counter keeps counting past it, so after the step the host reads the count that would have been
needed (CollisionPipeline.check).

Launch grids: a per-slot stage (geoms, pairs, contacts) takes ``slot_stride`` and launches over
(n_envs of a partition, width) with ``slot_stride = width`` — one slot per thread (GPU) — or over
(n_envs, 1) with ``slot_stride = 1``: one thread per env looping over its slots in order (CPU, where
the per-thread cost of the unused slots dominated: 126 pair slots for the humanoid's 27 pairs). Thread
(env, j) handles slots j, j + slot_stride, ...: the same order of the per-env atomic counters on CPU
(bit-identical to one thread per slot run in order), one kernel for both devices.
"""

from typing import Any

import warp as wp

from ..types import overloads
from . import native
from .collision_primitive import _any_perp

PLANE = wp.constant(0)
SPHERE = wp.constant(1)
CAPSULE = wp.constant(2)
CYLINDER = wp.constant(3)
BOX = wp.constant(4)
ELLIPSOID = wp.constant(5)
MESH = wp.constant(6)

BIG = wp.constant(1.0e30)

# collision is not differentiated: no adjoint code (halves the compile time)
wp.set_module_options({"enable_backward": False})


@wp.kernel
def geom_poses(
    # Model:
    geom_link: wp.array(dtype=wp.int32),
    geom_pos: wp.array(dtype=Any),
    geom_quat: wp.array(dtype=Any),
    slot_stride: int,
    # Data in:
    link_xpos_in: wp.array2d(dtype=Any),
    link_xquat_in: wp.array2d(dtype=Any),
    # Data out:
    geom_xpos_out: wp.array2d(dtype=Any),
    geom_xquat_out: wp.array2d(dtype=Any),
):
    """World pose of each geom from its link's pose (link -1: the world frame)."""
    env, j = wp.tid()
    for g in range(j, geom_link.shape[0], slot_stride):
        lk = geom_link[g]
        if lk < 0:
            geom_xpos_out[env, g] = geom_pos[g]
            geom_xquat_out[env, g] = geom_quat[g]
        else:
            q = link_xquat_in[env, lk]
            geom_xpos_out[env, g] = link_xpos_in[env, lk] + wp.quat_rotate(q, geom_pos[g])
            geom_xquat_out[env, g] = wp.normalize(q * geom_quat[g])


@wp.kernel
def aabb_update(
    # Model:
    geom_type: wp.array(dtype=wp.int32),
    geom_half: wp.array(dtype=Any),
    geom_margin: wp.array(dtype=Any),
    slot_stride: int,
    # Data in:
    geom_xpos_in: wp.array2d(dtype=Any),
    geom_xquat_in: wp.array2d(dtype=Any),
    # Data out:
    geom_xmat_out: wp.array2d(dtype=Any),
    aabb_lo_out: wp.array2d(dtype=Any),
    aabb_hi_out: wp.array2d(dtype=Any),
    pair_count_out: wp.array(dtype=wp.int32),
    cand_count_out: wp.array(dtype=wp.int32),
    contact_raw_out: wp.array(dtype=wp.int32),
    cand_pool_out: wp.array(dtype=wp.int32),
):
    """Rotation matrix and world AABB (inflated by the geom margin) of each geom; the thread of an
    env's geom 0 also clears that env's stage counters (env 0's: the partition's candidate pool too)."""
    env, j = wp.tid()
    for g in range(j, geom_type.shape[0], slot_stride):
        if g == 0:
            pair_count_out[env] = 0
            cand_count_out[env] = 0
            contact_raw_out[env] = 0
            if env == 0:
                cand_pool_out[0] = 0
        R = wp.quat_to_matrix(geom_xquat_in[env, g])
        geom_xmat_out[env, g] = R
        c = geom_xpos_in[env, g]
        h = geom_half[g]
        m = geom_margin[g]
        one = m - m + type(m)(1.0)
        if geom_type[g] == PLANE:
            big = one * type(m)(BIG)
            e = wp.vector(big, big, big)
            aabb_lo_out[env, g] = -e
            aabb_hi_out[env, g] = e
        else:
            e = wp.vector(m, m, m)
            for i in range(3):
                e[i] = e[i] + wp.abs(R[i, 0]) * h[0] + wp.abs(R[i, 1]) * h[1] + wp.abs(R[i, 2]) * h[2]
            aabb_lo_out[env, g] = c - e
            aabb_hi_out[env, g] = c + e


@wp.func
def _poses_aabb_env(
    env: int,
    j: int,
    # Model:
    geom_link: wp.array(dtype=wp.int32),
    geom_pos: wp.array(dtype=Any),
    geom_quat: wp.array(dtype=Any),
    geom_type: wp.array(dtype=wp.int32),
    geom_half: wp.array(dtype=Any),
    geom_margin: wp.array(dtype=Any),
    slot_stride: int,
    # Data in:
    link_xpos_in: wp.array2d(dtype=Any),
    link_xquat_in: wp.array2d(dtype=Any),
    # Data out:
    geom_xpos_out: wp.array2d(dtype=Any),
    geom_xquat_out: wp.array2d(dtype=Any),
    geom_xmat_out: wp.array2d(dtype=Any),
    aabb_lo_out: wp.array2d(dtype=Any),
    aabb_hi_out: wp.array2d(dtype=Any),
    pair_count_out: wp.array(dtype=wp.int32),
    cand_count_out: wp.array(dtype=wp.int32),
    contact_raw_out: wp.array(dtype=wp.int32),
    cand_pool_out: wp.array(dtype=wp.int32),
):
    """One thread's geoms of ``poses_aabb`` (also the first part of ``poses_aabb_broadphase``)."""
    for g in range(j, geom_link.shape[0], slot_stride):
        lk = geom_link[g]
        c = geom_pos[g]
        qg = geom_quat[g]
        if lk >= 0:
            q = link_xquat_in[env, lk]
            zero = c[0] - c[0]
            if (c[0] == zero and c[1] == zero and c[2] == zero and qg[0] == zero and qg[1] == zero
                    and qg[2] == zero and qg[3] == zero + type(zero)(1.0)):
                c = link_xpos_in[env, lk]
                qg = wp.normalize(q)
            else:
                c = link_xpos_in[env, lk] + wp.quat_rotate(q, geom_pos[g])
                qg = wp.normalize(q * geom_quat[g])
        geom_xpos_out[env, g] = c
        geom_xquat_out[env, g] = qg
        if g == 0:
            pair_count_out[env] = 0
            cand_count_out[env] = 0
            contact_raw_out[env] = 0
            if env == 0:
                cand_pool_out[0] = 0
        R = wp.quat_to_matrix(qg)
        geom_xmat_out[env, g] = R
        h = geom_half[g]
        m = geom_margin[g]
        one = m - m + type(m)(1.0)
        if geom_type[g] == PLANE:
            big = one * type(m)(BIG)
            e = wp.vector(big, big, big)
            aabb_lo_out[env, g] = -e
            aabb_hi_out[env, g] = e
        else:
            e = wp.vector(m, m, m)
            for i in range(3):
                e[i] = e[i] + wp.abs(R[i, 0]) * h[0] + wp.abs(R[i, 1]) * h[1] + wp.abs(R[i, 2]) * h[2]
            aabb_lo_out[env, g] = c - e
            aabb_hi_out[env, g] = c + e


@wp.kernel
def poses_aabb(
    # Model:
    geom_link: wp.array(dtype=wp.int32),
    geom_pos: wp.array(dtype=Any),
    geom_quat: wp.array(dtype=Any),
    geom_type: wp.array(dtype=wp.int32),
    geom_half: wp.array(dtype=Any),
    geom_margin: wp.array(dtype=Any),
    slot_stride: int,
    # Data in:
    link_xpos_in: wp.array2d(dtype=Any),
    link_xquat_in: wp.array2d(dtype=Any),
    # Data out:
    geom_xpos_out: wp.array2d(dtype=Any),
    geom_xquat_out: wp.array2d(dtype=Any),
    geom_xmat_out: wp.array2d(dtype=Any),
    aabb_lo_out: wp.array2d(dtype=Any),
    aabb_hi_out: wp.array2d(dtype=Any),
    pair_count_out: wp.array(dtype=wp.int32),
    cand_count_out: wp.array(dtype=wp.int32),
    contact_raw_out: wp.array(dtype=wp.int32),
    cand_pool_out: wp.array(dtype=wp.int32),
):
    """``geom_poses`` and ``aabb_update`` in one launch (CollisionPipeline.collide): each thread
    computes its geoms' world poses and then their rotation matrices and AABBs, the same operations
    in the same order as the two kernels (bit-identical); one launch and one pass over the geoms. A geom
    at its link's origin with the identity rotation (a free body's box or sphere) takes the link's
    position and normalised rotation directly: rotating the zero offset and multiplying by the identity
    quaternion add only zeros (exact, up to the sign of a zero)."""
    env, j = wp.tid()
    _poses_aabb_env(env, j, geom_link, geom_pos, geom_quat, geom_type, geom_half, geom_margin, slot_stride,
                    link_xpos_in, link_xquat_in, geom_xpos_out, geom_xquat_out, geom_xmat_out, aabb_lo_out,
                    aabb_hi_out, pair_count_out, cand_count_out, contact_raw_out, cand_pool_out)


@wp.func
def _overlap(lo_a: Any, hi_a: Any, lo_b: Any, hi_b: Any):
    return (lo_a[0] <= hi_b[0] and lo_b[0] <= hi_a[0] and lo_a[1] <= hi_b[1] and lo_b[1] <= hi_a[1]
            and lo_a[2] <= hi_b[2] and lo_b[2] <= hi_a[2])


@wp.func
def _emit_pair(env: int, ga: int, gb: int, pid: int, geom_type: wp.array(dtype=wp.int32),
               pairs_out: wp.array2d(dtype=wp.vec3i), pair_count_out: wp.array(dtype=wp.int32),
               pair_cand_out: wp.array2d(dtype=wp.vec2i)):
    """Append (geom1, geom2, explicit pair id) with geom1 of the lower type (MuJoCo's order), the
    lower index first among equal types (the same order from either broadphase), with an empty
    candidate block: the narrowphase module of the pair's family overwrites it (a pair no routine
    handles keeps it: no contacts)."""
    g1 = ga
    g2 = gb
    if geom_type[gb] < geom_type[ga] or (geom_type[gb] == geom_type[ga] and gb < ga):
        g1 = gb
        g2 = ga
    slot = wp.atomic_add(pair_count_out, env, 1)
    if slot < pairs_out.shape[1]:
        pairs_out[env, slot] = wp.vec3i(g1, g2, pid)
        pair_cand_out[env, slot] = wp.vec2i(0, 0)


@wp.func
def _welded(env: int, ga: int, gb: int, geom_weld: wp.array(dtype=wp.int32),
            weld_pairs: wp.array(dtype=wp.vec2i), weld_active: wp.array2d(dtype=wp.int32)):
    """Whether an active equality weld of this env joins the two geoms' weld groups (welds can be
    switched per env at run time)."""
    wa = geom_weld[ga]
    wb = geom_weld[gb]
    out = bool(False)
    for k in range(weld_pairs.shape[0]):
        if weld_active[env, k] != 0:
            w = weld_pairs[k]
            if (w[0] == wa and w[1] == wb) or (w[0] == wb and w[1] == wa):
                out = True
    return out


@wp.func
def _pair_margin(p: wp.vec3i, geom_margin: Any, pair_margin: Any, margin_sum: int):
    margin = wp.max(geom_margin[p[0]], geom_margin[p[1]])
    if margin_sum != 0:
        margin = geom_margin[p[0]] + geom_margin[p[1]]
    if p[2] >= 0:
        margin = pair_margin[p[2]]
    return margin


@wp.func
def _plane_apart(env: int, ga: int, gb: int, margin: Any, geom_type: wp.array(dtype=wp.int32),
                 geom_xpos_in: wp.array2d(dtype=Any), geom_xmat_in: wp.array2d(dtype=Any),
                 aabb_lo_in: wp.array2d(dtype=Any), aabb_hi_in: wp.array2d(dtype=Any)):
    """For a plane pair (exactly one of the geoms a plane): whether the other geom's AABB lies above
    the plane by more than the pair's detection margin plus a round-off slack (1e-5 of the
    coordinates' scale). The plane routines emit only points of the geom within the margin of the
    plane and the AABB holds the geom (inflated by its own margin), so such a pair has no contact:
    the broadphase drops it instead of handing the narrowphase a pair it rejects (a plane's AABB is
    infinite: the AABB test passes every plane pair). The pairs kept keep their order."""
    tp = geom_type[ga]
    to = geom_type[gb]
    apart = bool(False)
    if (tp == PLANE) != (to == PLANE):
        gp = ga
        go = gb
        if to == PLANE:
            gp = gb
            go = ga
        R = geom_xmat_in[env, gp]
        nx = R[0, 2]
        ny = R[1, 2]
        nz = R[2, 2]
        lo = aabb_lo_in[env, go]
        hi = aabb_hi_in[env, go]
        half = margin - margin + type(margin)(0.5)
        c = (lo + hi) * half
        e = (hi - lo) * half
        p = geom_xpos_in[env, gp]
        dc = (c[0] - p[0]) * nx + (c[1] - p[1]) * ny + (c[2] - p[2]) * nz
        reach = wp.abs(nx) * e[0] + wp.abs(ny) * e[1] + wp.abs(nz) * e[2]
        scale = (wp.max(wp.max(wp.abs(c[0]), wp.abs(c[1])), wp.abs(c[2]))
                 + wp.max(wp.max(wp.abs(p[0]), wp.abs(p[1])), wp.abs(p[2])) + reach + wp.abs(margin))
        apart = dc - reach > margin + type(margin)(1.0e-5) * scale
    return apart


@wp.func
def _broadphase_list_env(
    env: int,
    j: int,
    # Model:
    pair_list: wp.array(dtype=wp.vec3i),
    geom_type: wp.array(dtype=wp.int32),
    geom_margin: wp.array(dtype=Any),
    pair_margin: wp.array(dtype=Any),
    margin_sum: int,
    geom_weld: wp.array(dtype=wp.int32),
    weld_pairs: wp.array(dtype=wp.vec2i),
    slot_stride: int,
    # Data in:
    weld_active_in: wp.array2d(dtype=wp.int32),
    geom_xpos_in: wp.array2d(dtype=Any),
    geom_xmat_in: wp.array2d(dtype=Any),
    aabb_lo_in: wp.array2d(dtype=Any),
    aabb_hi_in: wp.array2d(dtype=Any),
    # Data out:
    pairs_out: wp.array2d(dtype=wp.vec3i),
    pair_count_out: wp.array(dtype=wp.int32),
    pair_cand_out: wp.array2d(dtype=wp.vec2i),
):
    """One thread's pairs of ``broadphase_list`` (also the second part of ``poses_aabb_broadphase``)."""
    for k in range(j, pair_list.shape[0], slot_stride):
        p = pair_list[k]
        lo = aabb_lo_in[env, p[0]]
        hi = aabb_hi_in[env, p[0]]
        if p[2] >= 0:
            m = pair_margin[p[2]]
            e = wp.vector(m, m, m)
            lo = lo - e
            hi = hi + e
        if _overlap(lo, hi, aabb_lo_in[env, p[1]], aabb_hi_in[env, p[1]]):
            if not _plane_apart(env, p[0], p[1], _pair_margin(p, geom_margin, pair_margin, margin_sum), geom_type,
                                geom_xpos_in, geom_xmat_in, aabb_lo_in, aabb_hi_in):
                if p[2] >= 0 or not _welded(env, p[0], p[1], geom_weld, weld_pairs, weld_active_in):
                    _emit_pair(env, p[0], p[1], p[2], geom_type, pairs_out, pair_count_out, pair_cand_out)


@wp.kernel
def broadphase_list(
    # Model:
    pair_list: wp.array(dtype=wp.vec3i),
    geom_type: wp.array(dtype=wp.int32),
    geom_margin: wp.array(dtype=Any),
    pair_margin: wp.array(dtype=Any),
    margin_sum: int,
    geom_weld: wp.array(dtype=wp.int32),
    weld_pairs: wp.array(dtype=wp.vec2i),
    slot_stride: int,
    # Data in:
    weld_active_in: wp.array2d(dtype=wp.int32),
    geom_xpos_in: wp.array2d(dtype=Any),
    geom_xmat_in: wp.array2d(dtype=Any),
    aabb_lo_in: wp.array2d(dtype=Any),
    aabb_hi_in: wp.array2d(dtype=Any),
    # Data out:
    pairs_out: wp.array2d(dtype=wp.vec3i),
    pair_count_out: wp.array(dtype=wp.int32),
    pair_cand_out: wp.array2d(dtype=wp.vec2i),
):
    """All-vs-all over the pairs that passed the filters at build (and the explicit pairs, whose
    own margin inflates the AABB test); a plane pair also passes the half-space test (_plane_apart,
    with the narrowphase's detection margin)."""
    env, j = wp.tid()
    _broadphase_list_env(env, j, pair_list, geom_type, geom_margin, pair_margin, margin_sum, geom_weld, weld_pairs,
                         slot_stride, weld_active_in, geom_xpos_in, geom_xmat_in, aabb_lo_in, aabb_hi_in, pairs_out,
                         pair_count_out, pair_cand_out)


@wp.func
def _low_bit(w: int):
    """Index of the single set bit of ``w`` (a power of two below 2**16)."""
    i = int(0)
    if (w & 0xFF00) != 0:
        i += 8
    if (w & 0xF0F0) != 0:
        i += 4
    if (w & 0xCCCC) != 0:
        i += 2
    if (w & 0xAAAA) != 0:
        i += 1
    return i


@wp.func
def _broadphase_sorted_env(
    env: int,
    # Model:
    pair_list: wp.array(dtype=wp.vec3i),
    n_dyn: int,
    pair_index: wp.array2d(dtype=wp.int32),
    geom_type: wp.array(dtype=wp.int32),
    geom_margin: wp.array(dtype=Any),
    pair_margin: wp.array(dtype=Any),
    margin_sum: int,
    geom_weld: wp.array(dtype=wp.int32),
    weld_pairs: wp.array(dtype=wp.vec2i),
    # Data in:
    weld_active_in: wp.array2d(dtype=wp.int32),
    geom_xpos_in: wp.array2d(dtype=Any),
    geom_xmat_in: wp.array2d(dtype=Any),
    aabb_lo_in: wp.array2d(dtype=Any),
    aabb_hi_in: wp.array2d(dtype=Any),
    # Data in/out (scratch kept between launches):
    sweep_order_out: wp.array2d(dtype=wp.int32),
    sweep_key_out: wp.array2d(dtype=Any),
    sweep_found_out: wp.array2d(dtype=wp.int32),
    sweep_lo_out: wp.array2d(dtype=Any),
    sweep_hi_out: wp.array2d(dtype=Any),
    # Data out:
    pairs_out: wp.array2d(dtype=wp.vec3i),
    pair_count_out: wp.array(dtype=wp.int32),
    pair_cand_out: wp.array2d(dtype=wp.vec2i),
):
    """One env of ``broadphase_list_sorted`` (also the second part of ``poses_aabb_broadphase_sorted``)."""
    ns = sweep_order_out.shape[1]
    # the sweep axis: the largest spread of the geom centres (planes have no finite extent)
    lo_c = wp.vec3d(1.0e300, 1.0e300, 1.0e300)
    hi_c = wp.vec3d(-1.0e300, -1.0e300, -1.0e300)
    for k in range(ns):
        g = sweep_order_out[env, k]
        if geom_type[g] != PLANE:
            c = geom_xpos_in[env, g]
            for i in range(3):
                x = wp.float64(c[i])
                lo_c[i] = wp.min(lo_c[i], x)
                hi_c[i] = wp.max(hi_c[i], x)
    ax = int(0)
    best = hi_c[0] - lo_c[0]
    for i in range(1, 3):
        if hi_c[i] - lo_c[i] > best:
            best = hi_c[i] - lo_c[i]
            ax = i
    # insertion sort by the lower bound (a NaN bound sorts first: such a geom overlaps nothing)
    for k in range(ns):
        g = sweep_order_out[env, k]
        key = aabb_lo_in[env, g][ax]
        if wp.isnan(key):
            key = type(key)(-1.0e30)
        j = k
        while j > 0:
            if sweep_key_out[env, j - 1] <= key:
                break
            sweep_key_out[env, j] = sweep_key_out[env, j - 1]
            sweep_order_out[env, j] = sweep_order_out[env, j - 1]
            j -= 1
        sweep_key_out[env, j] = key
        sweep_order_out[env, j] = g
    # the AABBs in sorted order (contiguous reads in the sweep)
    for k in range(ns):
        g = sweep_order_out[env, k]
        sweep_lo_out[env, k] = aabb_lo_in[env, g]
        sweep_hi_out[env, k] = aabb_hi_in[env, g]
    # sweep: mark the AABB-overlapping dynamic pairs of the list (the AABB test is symmetric in its geoms)
    for a in range(ns):
        lo_a = sweep_lo_out[env, a]
        hi_a = sweep_hi_out[env, a]
        lim = hi_a[ax]
        for b in range(a + 1, ns):
            if sweep_key_out[env, b] > lim:
                break
            if _overlap(lo_a, hi_a, sweep_lo_out[env, b], sweep_hi_out[env, b]):
                ga = sweep_order_out[env, a]
                gb = sweep_order_out[env, b]
                k = pair_index[wp.min(ga, gb), wp.max(ga, gb)]
                if k >= 0:
                    w = k >> 4
                    sweep_found_out[env, w] = sweep_found_out[env, w] | (1 << (k & 15))
    # emit in list order (the bitmap is left zero)
    for w in range(sweep_found_out.shape[1]):
        bits = sweep_found_out[env, w]
        if bits != 0:
            sweep_found_out[env, w] = 0
            while bits != 0:
                low = bits & (-bits)
                bits = bits ^ low
                p = pair_list[w * 16 + _low_bit(low)]
                if not _plane_apart(env, p[0], p[1], _pair_margin(p, geom_margin, pair_margin, margin_sum), geom_type,
                                    geom_xpos_in, geom_xmat_in, aabb_lo_in, aabb_hi_in):
                    if not _welded(env, p[0], p[1], geom_weld, weld_pairs, weld_active_in):
                        _emit_pair(env, p[0], p[1], p[2], geom_type, pairs_out, pair_count_out, pair_cand_out)
    # the explicit pairs (after the dynamic ones in the list), as broadphase_list
    for k in range(n_dyn, pair_list.shape[0]):
        p = pair_list[k]
        m = pair_margin[p[2]]
        e = wp.vector(m, m, m)
        if _overlap(aabb_lo_in[env, p[0]] - e, aabb_hi_in[env, p[0]] + e, aabb_lo_in[env, p[1]], aabb_hi_in[env, p[1]]):
            if not _plane_apart(env, p[0], p[1], _pair_margin(p, geom_margin, pair_margin, margin_sum), geom_type,
                                geom_xpos_in, geom_xmat_in, aabb_lo_in, aabb_hi_in):
                _emit_pair(env, p[0], p[1], p[2], geom_type, pairs_out, pair_count_out, pair_cand_out)


@wp.kernel
def broadphase_list_sorted(
    # Model:
    pair_list: wp.array(dtype=wp.vec3i),
    n_dyn: int,
    pair_index: wp.array2d(dtype=wp.int32),
    geom_type: wp.array(dtype=wp.int32),
    geom_margin: wp.array(dtype=Any),
    pair_margin: wp.array(dtype=Any),
    margin_sum: int,
    geom_weld: wp.array(dtype=wp.int32),
    weld_pairs: wp.array(dtype=wp.vec2i),
    # Data in:
    weld_active_in: wp.array2d(dtype=wp.int32),
    geom_xpos_in: wp.array2d(dtype=Any),
    geom_xmat_in: wp.array2d(dtype=Any),
    aabb_lo_in: wp.array2d(dtype=Any),
    aabb_hi_in: wp.array2d(dtype=Any),
    # Data in/out (scratch kept between launches):
    sweep_order_out: wp.array2d(dtype=wp.int32),
    sweep_key_out: wp.array2d(dtype=Any),
    sweep_found_out: wp.array2d(dtype=wp.int32),
    sweep_lo_out: wp.array2d(dtype=Any),
    sweep_hi_out: wp.array2d(dtype=Any),
    # Data out:
    pairs_out: wp.array2d(dtype=wp.vec3i),
    pair_count_out: wp.array(dtype=wp.int32),
    pair_cand_out: wp.array2d(dtype=wp.vec2i),
):
    """``broadphase_list`` with the AABB overlaps found by sort-and-sweep (CPU grid: one thread per
    env; docs/collision.md, "Broadphase"). The collidable geoms are kept sorted by their AABB's lower
    bound along the axis of the largest spread of the (non-plane) geom centres (insertion sort of the
    previous launch's order: nearly sorted from one substep to the next); a geom is swept against the
    following ones while their lower bound does not exceed its upper bound (exact comparisons of the
    stored bounds, so no overlapping pair is missed), and each AABB-overlapping dynamic pair of the
    list (``pair_index``: its list index) is marked in a per-env bitmap, 16 list entries per word.
    The marked pairs are then emitted in list order, then the explicit pairs, with the same tests as
    ``broadphase_list`` (the AABB test, the plane half-space test, the welds): the same pairs in the
    same order, bit for bit."""
    env = wp.tid()
    _broadphase_sorted_env(env, pair_list, n_dyn, pair_index, geom_type, geom_margin, pair_margin, margin_sum,
                           geom_weld, weld_pairs, weld_active_in, geom_xpos_in, geom_xmat_in, aabb_lo_in, aabb_hi_in,
                           sweep_order_out, sweep_key_out, sweep_found_out, sweep_lo_out, sweep_hi_out, pairs_out,
                           pair_count_out, pair_cand_out)


@wp.kernel
def poses_aabb_broadphase(
    # Model:
    geom_link: wp.array(dtype=wp.int32),
    geom_pos: wp.array(dtype=Any),
    geom_quat: wp.array(dtype=Any),
    geom_type: wp.array(dtype=wp.int32),
    geom_half: wp.array(dtype=Any),
    geom_margin: wp.array(dtype=Any),
    pair_list: wp.array(dtype=wp.vec3i),
    pair_margin: wp.array(dtype=Any),
    margin_sum: int,
    geom_weld: wp.array(dtype=wp.int32),
    weld_pairs: wp.array(dtype=wp.vec2i),
    # Data in:
    link_xpos_in: wp.array2d(dtype=Any),
    link_xquat_in: wp.array2d(dtype=Any),
    weld_active_in: wp.array2d(dtype=wp.int32),
    # Data out:
    geom_xpos_out: wp.array2d(dtype=Any),
    geom_xquat_out: wp.array2d(dtype=Any),
    geom_xmat_out: wp.array2d(dtype=Any),
    aabb_lo_out: wp.array2d(dtype=Any),
    aabb_hi_out: wp.array2d(dtype=Any),
    pair_count_out: wp.array(dtype=wp.int32),
    cand_count_out: wp.array(dtype=wp.int32),
    contact_raw_out: wp.array(dtype=wp.int32),
    cand_pool_out: wp.array(dtype=wp.int32),
    pairs_out: wp.array2d(dtype=wp.vec3i),
    pair_cand_out: wp.array2d(dtype=wp.vec2i),
):
    """``poses_aabb`` and then ``broadphase_list`` in one launch on the CPU grid (one thread per env,
    CollisionPipeline.collide): the env's geom poses and AABBs, then its pairs, with the same functions
    in the same order as the two launches (bit-identical), while the env's AABBs are still in L1 and
    with one launch less (docs/collision.md, "Kernel modules")."""
    env = wp.tid()
    _poses_aabb_env(env, 0, geom_link, geom_pos, geom_quat, geom_type, geom_half, geom_margin, 1, link_xpos_in,
                    link_xquat_in, geom_xpos_out, geom_xquat_out, geom_xmat_out, aabb_lo_out, aabb_hi_out,
                    pair_count_out, cand_count_out, contact_raw_out, cand_pool_out)
    _broadphase_list_env(env, 0, pair_list, geom_type, geom_margin, pair_margin, margin_sum, geom_weld, weld_pairs, 1,
                         weld_active_in, geom_xpos_out, geom_xmat_out, aabb_lo_out, aabb_hi_out, pairs_out,
                         pair_count_out, pair_cand_out)


@wp.kernel
def poses_aabb_broadphase_sorted(
    # Model:
    geom_link: wp.array(dtype=wp.int32),
    geom_pos: wp.array(dtype=Any),
    geom_quat: wp.array(dtype=Any),
    geom_type: wp.array(dtype=wp.int32),
    geom_half: wp.array(dtype=Any),
    geom_margin: wp.array(dtype=Any),
    pair_list: wp.array(dtype=wp.vec3i),
    n_dyn: int,
    pair_index: wp.array2d(dtype=wp.int32),
    pair_margin: wp.array(dtype=Any),
    margin_sum: int,
    geom_weld: wp.array(dtype=wp.int32),
    weld_pairs: wp.array(dtype=wp.vec2i),
    # Data in:
    link_xpos_in: wp.array2d(dtype=Any),
    link_xquat_in: wp.array2d(dtype=Any),
    weld_active_in: wp.array2d(dtype=wp.int32),
    # Data in/out (scratch kept between launches):
    sweep_order_out: wp.array2d(dtype=wp.int32),
    sweep_key_out: wp.array2d(dtype=Any),
    sweep_found_out: wp.array2d(dtype=wp.int32),
    sweep_lo_out: wp.array2d(dtype=Any),
    sweep_hi_out: wp.array2d(dtype=Any),
    # Data out:
    geom_xpos_out: wp.array2d(dtype=Any),
    geom_xquat_out: wp.array2d(dtype=Any),
    geom_xmat_out: wp.array2d(dtype=Any),
    aabb_lo_out: wp.array2d(dtype=Any),
    aabb_hi_out: wp.array2d(dtype=Any),
    pair_count_out: wp.array(dtype=wp.int32),
    cand_count_out: wp.array(dtype=wp.int32),
    contact_raw_out: wp.array(dtype=wp.int32),
    cand_pool_out: wp.array(dtype=wp.int32),
    pairs_out: wp.array2d(dtype=wp.vec3i),
    pair_cand_out: wp.array2d(dtype=wp.vec2i),
):
    """``poses_aabb`` and then ``broadphase_list_sorted`` in one launch (CPU grid, one thread per env), as
    ``poses_aabb_broadphase``: the same functions in the same order (bit-identical), one launch less."""
    env = wp.tid()
    _poses_aabb_env(env, 0, geom_link, geom_pos, geom_quat, geom_type, geom_half, geom_margin, 1, link_xpos_in,
                    link_xquat_in, geom_xpos_out, geom_xquat_out, geom_xmat_out, aabb_lo_out, aabb_hi_out,
                    pair_count_out, cand_count_out, contact_raw_out, cand_pool_out)
    _broadphase_sorted_env(env, pair_list, n_dyn, pair_index, geom_type, geom_margin, pair_margin, margin_sum, geom_weld,
                           weld_pairs, weld_active_in, geom_xpos_out, geom_xmat_out, aabb_lo_out, aabb_hi_out,
                           sweep_order_out, sweep_key_out, sweep_found_out, sweep_lo_out, sweep_hi_out, pairs_out,
                           pair_count_out, pair_cand_out)


# -- narrowphase helpers (the pair-family modules and collision_gjk.py) ---------------------------------
@wp.func
def _is_convex(t1: int, t2: int):
    """Pairs without an analytic routine, handled by GJK + EPA (collision_gjk.narrowphase_convex)."""
    analytic = (t1 == PLANE or (t1 == SPHERE and t2 <= BOX)
                or (t1 == CAPSULE and (t2 == CAPSULE or t2 == BOX)) or (t1 == BOX and t2 == BOX))
    return (not analytic) and t1 >= SPHERE and t2 <= MESH


@wp.func
def _reserve(env: int, cnt: int, cand_count_out: wp.array(dtype=wp.int32), cand_pool_out: wp.array(dtype=wp.int32),
             pool_size: int):
    """(start, stored) of a pair's block of ``cnt`` candidate points (docs/collision.md, "The candidate
    pool"): the env's count grows by ``cnt`` (its budget, max_candidate_contacts = pool size / envs, is
    checked on it, and it keeps counting past the budget for check()); a block within the budget is
    taken from the partition's pool, one array for all its envs filled in launch order (on the CPU grid
    the envs' blocks of a family's launch follow each other, so the points share cache lines and pages
    instead of lying one budget apart). stored = 0: no block (no points, or over the budget)."""
    start = int(0)
    stored = int(0)
    if cnt > 0:
        used = wp.atomic_add(cand_count_out, env, cnt)
        if used + cnt <= pool_size // cand_count_out.shape[0]:
            start = wp.atomic_add(cand_pool_out, 0, cnt)
            stored = cnt
    return start, stored


@wp.func
def _store(env: int, k: int, cnt: int, n: Any, pts: Any, d: Any,
           pair_cand_out: wp.array2d(dtype=wp.vec2i), cand_pos_out: Any, cand_normal_out: Any,
           cand_dist_out: Any, cand_count_out: wp.array(dtype=wp.int32), cand_pool_out: wp.array(dtype=wp.int32)):
    """Write the pair's points as a contiguous block of the partition's candidate pool (_reserve)."""
    start, stored = _reserve(env, cnt, cand_count_out, cand_pool_out, cand_pos_out.shape[0])
    for i in range(stored):
        cand_pos_out[start + i] = pts[i]
        cand_normal_out[start + i] = n
        cand_dist_out[start + i] = d[i]
    pair_cand_out[env, k] = wp.vec2i(start, stored)


# -- pruning -----------------------------------------------------------------------------------------
@wp.func
def _pick(sel: int, i: int):
    return (sel & (1 << i)) != 0


@wp.func
def _prune_at(env: int, k: int, geom_orig: wp.array(dtype=wp.int32), geom_type: wp.array(dtype=wp.int32),
              keep_boxbox: int, geom_margin: wp.array(dtype=Any),
              geom_gap: wp.array(dtype=Any), pair_margin: wp.array(dtype=Any), pair_gap: wp.array(dtype=Any),
              margin_sum: int, gap_outside: int, max_per_pair: int, pairs_in: wp.array2d(dtype=wp.vec3i),
              pair_count_in: wp.array(dtype=wp.int32), pair_cand_in: wp.array2d(dtype=wp.vec2i),
              cand_pos_in: wp.array(dtype=Any), cand_normal_in: wp.array(dtype=Any),
              cand_dist_in: wp.array(dtype=Any), contact_raw_out: wp.array(dtype=wp.int32),
              contact_geom_out: wp.array2d(dtype=wp.vec2i), contact_pos_out: wp.array2d(dtype=Any),
              contact_frame_out: wp.array2d(dtype=Any), contact_depth_out: wp.array2d(dtype=Any),
              contact_includemargin_out: wp.array2d(dtype=Any), contact_pair_out: wp.array2d(dtype=wp.int32),
              corners_apart: int, geom_size: wp.array(dtype=Any), geom_xpos_in: wp.array2d(dtype=Any)):
    npairs = wp.min(pair_count_in[env], pairs_in.shape[1])
    if k < npairs:
        pc = pair_cand_in[env, k]
        start = pc[0]
        cnt = pc[1]
        if cnt > 0:
            p = pairs_in[env, k]
            g1 = p[0]
            g2 = p[1]
            margin = wp.max(geom_margin[g1], geom_margin[g2])
            gap = wp.max(geom_gap[g1], geom_gap[g2])
            if margin_sum != 0:
                margin = geom_margin[g1] + geom_margin[g2]
                gap = geom_gap[g1] + geom_gap[g2]
            if p[2] >= 0:
                margin = pair_margin[p[2]]
                gap = pair_gap[p[2]]
            # the distance below which the contact makes rows: margin − gap (gap inside the
            # margin: polyphys's default, MuJoCo < 4) or margin (gap outside it: MuJoCo 4.0)
            incl = margin - gap
            if gap_outside != 0:
                incl = margin
            zero = margin - margin
            one = zero + type(margin)(1.0)
            # duplicates: a candidate within tol of an earlier kept one is dropped (clipping two
            # aligned faces emits a corner twice when a vertex lies on a clip plane within
            # round-off). tol: 1e-6 of the candidates' span (the manifold size) plus 8 ulps of
            # the coordinates (the round-off of a clipped point)
            eps = type(margin)(2.2e-16)
            if one + type(margin)(1e-10) == one:
                eps = type(margin)(1.2e-7)          # float32
            xa = cand_pos_in[start]
            # MuJoCo-compatible mode: MuJoCo's box-box set as it is (its own near-duplicate rule): no
            # duplicate search, every point kept
            whole = keep_boxbox != 0 and geom_type[g1] == BOX and geom_type[g2] == BOX
            # plane–box with at most max_per_pair corners (``corners_apart``): the points of two corners lie at least
            # the box's smallest half size apart (x = c − n (c − p1)·n / 2, so |x_i − x_j|² = |v|² − ¾ (v·n)² ≥ |v|² / 4,
            # v = c_i − c_j, |v| ≥ 2 min |s|), and tol ≤ 2e-6 of the box's size plus 16 ulps of the coordinates; a box
            # that is not tiny against both (by a factor ≥ 5 over the rounding of the points) has no duplicate, so the
            # search and its tolerance (read nowhere else below max_per_pair points) are skipped: the same contacts
            apart = bool(False)
            if corners_apart != 0 and cnt <= max_per_pair and geom_type[g1] == PLANE and geom_type[g2] == BOX:
                sz = geom_size[g2]
                hmin = wp.min(wp.abs(sz[0]), wp.min(wp.abs(sz[1]), wp.abs(sz[2])))
                hsum = wp.abs(sz[0]) + wp.abs(sz[1]) + wp.abs(sz[2])
                p1 = geom_xpos_in[env, g1]
                p2 = geom_xpos_in[env, g2]
                reach = (wp.max(wp.abs(p1[0]), wp.max(wp.abs(p1[1]), wp.abs(p1[2])))
                         + wp.max(wp.abs(p2[0]), wp.max(wp.abs(p2[1]), wp.abs(p2[2]))) + hsum)
                apart = hmin > type(margin)(1.0e-5) * hsum + type(margin)(512.0) * eps * reach
            span = zero
            scale = zero
            skip = int(0)
            nu = cnt
            # tol is read only by the duplicate search and the picks below, which need two points or more
            if not whole and not apart and cnt > 1:
                for i in range(cnt):
                    x = cand_pos_in[start + i]
                    span = wp.max(span, wp.length(x - xa))
                    scale = wp.max(scale, wp.max(wp.abs(x[0]), wp.max(wp.abs(x[1]), wp.abs(x[2]))))
            tol = type(margin)(1e-6) * span + type(margin)(8.0) * eps * scale
            if not whole and not apart:
                for i in range(1, cnt):
                    xi = cand_pos_in[start + i]
                    for j in range(i):
                        if not _pick(skip, j) and not _pick(skip, i):
                            if wp.length(xi - cand_pos_in[start + j]) <= tol:
                                skip = skip | (1 << i)
                                nu -= 1
            sel = int(0)
            if whole:
                sel = (1 << cnt) - 1
            elif nu <= max_per_pair:
                sel = ((1 << cnt) - 1) - skip          # skip is a subset of the bits
            else:
                # 1) deepest; among points as deep within tol (a flat face-face contact: the
                # clipped polygon also has points along its edges, where an edge lies on a clip
                # plane within round-off) the one farthest from the candidates' centroid, which
                # is a corner of their hull
                dmin = cand_dist_in[start]
                cen = xa * zero
                for i in range(cnt):
                    if not _pick(skip, i):
                        dmin = wp.min(dmin, cand_dist_in[start + i])
                        cen = cen + cand_pos_in[start + i]
                cen = cen / type(margin)(nu)
                i0 = int(0)
                best = zero - one
                for i in range(cnt):
                    if not _pick(skip, i) and cand_dist_in[start + i] <= dmin + tol:
                        v = wp.length(cand_pos_in[start + i] - cen)
                        if v > best:
                            best = v
                            i0 = i
                sel = 1 << i0
                x0 = cand_pos_in[start + i0]
                i1 = int(-1)
                i2 = int(-1)
                if max_per_pair >= 2:
                    # 2) the farthest from it
                    best = zero - one
                    for i in range(cnt):
                        v = wp.length(cand_pos_in[start + i] - x0)
                        if not _pick(sel | skip, i) and v > best:
                            best = v
                            i1 = i
                    sel = sel | (1 << i1)
                if max_per_pair >= 3:
                    # 3) the farthest from their line
                    x1 = cand_pos_in[start + i1]
                    best = zero - one
                    for i in range(cnt):
                        v = wp.length(wp.cross(x1 - x0, cand_pos_in[start + i] - x0))
                        if not _pick(sel | skip, i) and v > best:
                            best = v
                            i2 = i
                    sel = sel | (1 << i2)
                if max_per_pair >= 4:
                    # 4) the one adding the largest area to the triangle x0 x1 x2: the signed
                    # areas (against the triangle's normal) of the edges it lies outside of; a
                    # point inside the triangle or on a picked corner adds nothing
                    x1 = cand_pos_in[start + i1]
                    x2 = cand_pos_in[start + i2]
                    nt = wp.cross(x1 - x0, x2 - x0)
                    ln = wp.length(nt)
                    best = zero - one
                    i3 = int(-1)
                    for i in range(cnt):
                        x = cand_pos_in[start + i]
                        v = zero
                        if ln > zero:
                            nh = nt / ln
                            v = (wp.max(zero, -wp.dot(wp.cross(x1 - x0, x - x0), nh))
                                 + wp.max(zero, -wp.dot(wp.cross(x2 - x1, x - x1), nh))
                                 + wp.max(zero, -wp.dot(wp.cross(x0 - x2, x - x2), nh)))
                        else:
                            # collinear first three: the largest triangle on one of their edges
                            v = wp.max(wp.max(wp.length(wp.cross(x - x0, x1 - x0)),
                                              wp.length(wp.cross(x - x1, x2 - x1))),
                                       wp.length(wp.cross(x - x2, x0 - x2)))
                        if not _pick(sel | skip, i) and v > best:
                            best = v
                            i3 = i
                    sel = sel | (1 << i3)
                # 5+) farthest-point: the largest distance to the nearest picked point
                for _q in range(4, max_per_pair):
                    best = zero - one
                    iq = int(-1)
                    for i in range(cnt):
                        if not _pick(sel | skip, i):
                            x = cand_pos_in[start + i]
                            v = wp.length(x - x0)
                            for j in range(cnt):
                                if _pick(sel, j):
                                    v = wp.min(v, wp.length(x - cand_pos_in[start + j]))
                            if v > best:
                                best = v
                                iq = i
                    sel = sel | (1 << iq)
            nsel = int(0)
            for i in range(cnt):
                if _pick(sel, i):
                    nsel += 1
            out = wp.atomic_add(contact_raw_out, env, nsel)
            if out + nsel <= contact_pos_out.shape[1]:
                m = int(0)
                for i in range(cnt):
                    if _pick(sel, i):
                        nrm = -cand_normal_in[start + i]
                        t1 = _any_perp(nrm)
                        t2 = wp.cross(nrm, t1)
                        contact_frame_out[env, out + m] = wp.matrix_from_rows(nrm, t1, t2)
                        contact_geom_out[env, out + m] = wp.vec2i(geom_orig[g1], geom_orig[g2])
                        contact_pos_out[env, out + m] = cand_pos_in[start + i]
                        contact_depth_out[env, out + m] = -cand_dist_in[start + i]
                        contact_includemargin_out[env, out + m] = incl
                        contact_pair_out[env, out + m] = p[2]
                        m += 1


@wp.kernel
def prune(
    # Model:
    geom_orig: wp.array(dtype=wp.int32),
    geom_type: wp.array(dtype=wp.int32),
    keep_boxbox: int,
    geom_margin: wp.array(dtype=Any),
    geom_gap: wp.array(dtype=Any),
    pair_margin: wp.array(dtype=Any),
    pair_gap: wp.array(dtype=Any),
    margin_sum: int,
    gap_outside: int,
    max_per_pair: int,
    slot_stride: int,
    corners_apart: int,
    geom_size: wp.array(dtype=Any),
    # Data in:
    geom_xpos_in: wp.array2d(dtype=Any),
    pairs_in: wp.array2d(dtype=wp.vec3i),
    pair_count_in: wp.array(dtype=wp.int32),
    pair_cand_in: wp.array2d(dtype=wp.vec2i),
    cand_pos_in: wp.array(dtype=Any),
    cand_normal_in: wp.array(dtype=Any),
    cand_dist_in: wp.array(dtype=Any),
    # Data out:
    contact_raw_out: wp.array(dtype=wp.int32),
    contact_geom_out: wp.array2d(dtype=wp.vec2i),
    contact_pos_out: wp.array2d(dtype=Any),
    contact_frame_out: wp.array2d(dtype=Any),
    contact_depth_out: wp.array2d(dtype=Any),
    contact_includemargin_out: wp.array2d(dtype=Any),
    contact_pair_out: wp.array2d(dtype=wp.int32),
):
    """Per pair: drop duplicate points (within 1e-6 of the point set's span plus 8 ulps), keep at
    most ``max_per_pair`` (the deepest — among the points as deep within that tolerance the one
    farthest from their centroid —, the farthest from it, the one farthest from their line, the one
    adding the largest area to their triangle, then farthest-point), and write the contacts with
    the polyphys frame: row 0 the normal from geom B (= geom 2) to geom A (= geom 1), rows 1-2 the
    tangents; depth = penetration (positive when overlapping). geom_margin / pair_margin here are
    the force margins (without the gap when ``gap_outside``: the narrowphase got margin + gap).
    ``keep_boxbox`` (MuJoCo-compatible mode): box–box pairs keep every point of MuJoCo's collider,
    neither deduplicated nor cut to ``max_per_pair``."""
    env, j = wp.tid()
    for k in range(j, wp.min(pair_count_in[env], pairs_in.shape[1]), slot_stride):
        _prune_at(env, k, geom_orig, geom_type, keep_boxbox, geom_margin, geom_gap, pair_margin, pair_gap, margin_sum,
                  gap_outside,
                  max_per_pair, pairs_in, pair_count_in, pair_cand_in, cand_pos_in, cand_normal_in,
                  cand_dist_in, contact_raw_out, contact_geom_out, contact_pos_out, contact_frame_out,
                  contact_depth_out, contact_includemargin_out, contact_pair_out, corners_apart, geom_size, geom_xpos_in)


@wp.func_native(native.body(__file__, "prune_export_prefetch_native"))
def prune_export_prefetch_native(env: int, prefetch: int, contact_count: wp.array(dtype=wp.int32),
                                 contact_geom: wp.array2d(dtype=wp.vec2i), contact_pos: wp.array2d(dtype=Any),
                                 contact_frame: wp.array2d(dtype=Any), contact_depth: wp.array2d(dtype=Any),
                                 contact_includemargin: wp.array2d(dtype=Any), contact_pair: wp.array2d(dtype=wp.int32),
                                 con_dist: wp.array2d(dtype=Any), con_link: wp.array3d(dtype=wp.int32)): ...


@wp.kernel
def prune_export(
    # Model:
    geom_orig: wp.array(dtype=wp.int32),
    geom_type: wp.array(dtype=wp.int32),
    keep_boxbox: int,
    geom_margin: wp.array(dtype=Any),
    geom_gap: wp.array(dtype=Any),
    pair_margin: wp.array(dtype=Any),
    pair_gap: wp.array(dtype=Any),
    margin_sum: int,
    gap_outside: int,
    max_per_pair: int,
    max_contacts: int,
    geom_link: wp.array(dtype=wp.int32),
    copy_set: int,
    prefetch: int,
    corners_apart: int,
    geom_size: wp.array(dtype=Any),
    # Data in:
    geom_xpos_in: wp.array2d(dtype=Any),
    pairs_in: wp.array2d(dtype=wp.vec3i),
    pair_count_in: wp.array(dtype=wp.int32),
    pair_cand_in: wp.array2d(dtype=wp.vec2i),
    cand_pos_in: wp.array(dtype=Any),
    cand_normal_in: wp.array(dtype=Any),
    cand_dist_in: wp.array(dtype=Any),
    # Data out:
    contact_raw_out: wp.array(dtype=wp.int32),
    contact_count_out: wp.array(dtype=wp.int32),
    contact_geom_out: wp.array2d(dtype=wp.vec2i),
    contact_pos_out: wp.array2d(dtype=Any),
    contact_frame_out: wp.array2d(dtype=Any),
    contact_depth_out: wp.array2d(dtype=Any),
    contact_includemargin_out: wp.array2d(dtype=Any),
    contact_pair_out: wp.array2d(dtype=wp.int32),
    n_con_out: wp.array(dtype=wp.int32),
    con_pos_out: wp.array2d(dtype=Any),
    con_frame_out: wp.array2d(dtype=Any),
    con_dist_out: wp.array2d(dtype=Any),
    con_margin_out: wp.array2d(dtype=Any),
    con_link_out: wp.array3d(dtype=wp.int32),
):
    """``prune``, ``finalize_counts`` and ``export_contacts`` in one launch over (n_envs,): one
    thread per env prunes its pairs in order, writes the usable count and copies the contacts into
    the constraint builder's arrays — the operations of the three kernels in their order
    (bit-identical). For the CPU launch grid only (slot_stride 1: the env's whole contact set is in
    one thread) and only without contacts in the gap (no ``split_inactive`` between prune and export:
    CollisionPipeline.collide). ``copy_set`` 0: con_pos / con_frame / con_margin are the contact set's
    own pos / frame / includemargin arrays (the rigid solver's, aliased at build), so only the count,
    dist and links are written: each contact is written once. ``prefetch`` 1: the next env's contact rows are
    prefetched for writing first (prune_export_prefetch_native; no value changes)."""
    env = wp.tid()
    prune_export_prefetch_native(env, prefetch, contact_count_out, contact_geom_out, contact_pos_out, contact_frame_out,
                                 contact_depth_out, contact_includemargin_out, contact_pair_out, con_dist_out, con_link_out)
    for k in range(wp.min(pair_count_in[env], pairs_in.shape[1])):
        _prune_at(env, k, geom_orig, geom_type, keep_boxbox, geom_margin, geom_gap, pair_margin, pair_gap, margin_sum,
                  gap_outside,
                  max_per_pair, pairs_in, pair_count_in, pair_cand_in, cand_pos_in, cand_normal_in,
                  cand_dist_in, contact_raw_out, contact_geom_out, contact_pos_out, contact_frame_out,
                  contact_depth_out, contact_includemargin_out, contact_pair_out, corners_apart, geom_size, geom_xpos_in)
    count = wp.min(contact_raw_out[env], max_contacts)
    contact_count_out[env] = count
    n = wp.min(count, con_pos_out.shape[1])
    n_con_out[env] = n
    for c in range(n):
        g = contact_geom_out[env, c]
        if copy_set != 0:
            con_pos_out[env, c] = contact_pos_out[env, c]
            con_frame_out[env, c] = contact_frame_out[env, c]
            con_margin_out[env, c] = contact_includemargin_out[env, c]
        con_dist_out[env, c] = -contact_depth_out[env, c]
        con_link_out[env, c, 0] = geom_link[g[0]]
        con_link_out[env, c, 1] = geom_link[g[1]]


@wp.kernel
def finalize_counts(
    # Data in:
    contact_raw_in: wp.array(dtype=wp.int32),
    max_contacts: int,
    # Data out:
    contact_count_out: wp.array(dtype=wp.int32),
):
    """The usable contact count: min(contacts produced, budget)."""
    env = wp.tid()
    contact_count_out[env] = wp.min(contact_raw_in[env], max_contacts)


@wp.kernel
def split_inactive(
    # Data in:
    contact_count_in: wp.array(dtype=wp.int32),
    # Data out:
    contact_active_out: wp.array(dtype=wp.int32),
    contact_geom_out: wp.array2d(dtype=wp.vec2i),
    contact_pos_out: wp.array2d(dtype=Any),
    contact_frame_out: wp.array2d(dtype=Any),
    contact_depth_out: wp.array2d(dtype=Any),
    contact_includemargin_out: wp.array2d(dtype=Any),
    contact_pair_out: wp.array2d(dtype=wp.int32),
):
    """MuJoCo 4.0's gap (gap outside the margin): one thread per env moves the active contacts
    (depth >= -includemargin, i.e. distance <= margin) to the front of the env's contact set, the
    contacts in the gap (margin < distance < margin + gap) behind them, and writes the active
    count: export hands only those to the constraint builder (MuJoCo: efc_address = -1, no rows)."""
    env = wp.tid()
    n = wp.min(contact_count_in[env], contact_depth_out.shape[1])
    i = int(0)
    j = n - 1
    while i <= j:
        if contact_depth_out[env, i] >= -contact_includemargin_out[env, i]:
            i += 1
        elif contact_depth_out[env, j] < -contact_includemargin_out[env, j]:
            j -= 1
        else:
            g = contact_geom_out[env, i]
            contact_geom_out[env, i] = contact_geom_out[env, j]
            contact_geom_out[env, j] = g
            x = contact_pos_out[env, i]
            contact_pos_out[env, i] = contact_pos_out[env, j]
            contact_pos_out[env, j] = x
            fr = contact_frame_out[env, i]
            contact_frame_out[env, i] = contact_frame_out[env, j]
            contact_frame_out[env, j] = fr
            dp = contact_depth_out[env, i]
            contact_depth_out[env, i] = contact_depth_out[env, j]
            contact_depth_out[env, j] = dp
            im = contact_includemargin_out[env, i]
            contact_includemargin_out[env, i] = contact_includemargin_out[env, j]
            contact_includemargin_out[env, j] = im
            pr = contact_pair_out[env, i]
            contact_pair_out[env, i] = contact_pair_out[env, j]
            contact_pair_out[env, j] = pr
            i += 1
            j -= 1
    contact_active_out[env] = i


@wp.kernel
def export_contacts(
    # Model:
    geom_link: wp.array(dtype=wp.int32),
    slot_stride: int,
    copy_set: int,
    # Data in:
    contact_count_in: wp.array(dtype=wp.int32),
    contact_geom_in: wp.array2d(dtype=wp.vec2i),
    contact_pos_in: wp.array2d(dtype=Any),
    contact_frame_in: wp.array2d(dtype=Any),
    contact_depth_in: wp.array2d(dtype=Any),
    contact_includemargin_in: wp.array2d(dtype=Any),
    # Data out:
    n_con_out: wp.array(dtype=wp.int32),
    con_pos_out: wp.array2d(dtype=Any),
    con_frame_out: wp.array2d(dtype=Any),
    con_dist_out: wp.array2d(dtype=Any),
    con_margin_out: wp.array2d(dtype=Any),
    con_link_out: wp.array3d(dtype=wp.int32),
):
    """Copy the contact set into a constraint builder's inputs: signed distance (MuJoCo's dist =
    -depth), the links of geoms A and B (-1: world). ``copy_set`` 0: con_pos / con_frame / con_margin
    are the contact set's own pos / frame / includemargin arrays (aliased): only the count, dist and
    links are written."""
    env, j = wp.tid()
    n = wp.min(contact_count_in[env], con_pos_out.shape[1])
    if j == 0:
        n_con_out[env] = n
    for c in range(j, n, slot_stride):
        g = contact_geom_in[env, c]
        if copy_set != 0:
            con_pos_out[env, c] = contact_pos_in[env, c]
            con_frame_out[env, c] = contact_frame_in[env, c]
            con_margin_out[env, c] = contact_includemargin_in[env, c]
        con_dist_out[env, c] = -contact_depth_in[env, c]
        con_link_out[env, c, 0] = geom_link[g[0]]
        con_link_out[env, c, 1] = geom_link[g[1]]


@overloads
def _overloads(s):
    V = wp.types.vector(3, s)
    Q = wp.types.quaternion(s)
    M = wp.types.matrix((3, 3), s)
    A = wp.array
    A2 = wp.array2d
    wp.overload(geom_poses, {"geom_pos": A(dtype=V), "geom_quat": A(dtype=Q),
                             "link_xpos_in": A2(dtype=V), "link_xquat_in": A2(dtype=Q),
                             "geom_xpos_out": A2(dtype=V), "geom_xquat_out": A2(dtype=Q)})
    wp.overload(aabb_update, {"geom_half": A(dtype=V), "geom_margin": A(dtype=s),
                              "geom_xpos_in": A2(dtype=V), "geom_xquat_in": A2(dtype=Q),
                              "geom_xmat_out": A2(dtype=M), "aabb_lo_out": A2(dtype=V),
                              "aabb_hi_out": A2(dtype=V)})
    wp.overload(broadphase_list, {"geom_margin": A(dtype=s), "pair_margin": A(dtype=s), "geom_xpos_in": A2(dtype=V),
                                  "geom_xmat_in": A2(dtype=M), "aabb_lo_in": A2(dtype=V),
                                  "aabb_hi_in": A2(dtype=V)})
    wp.overload(broadphase_list_sorted, {"geom_margin": A(dtype=s), "pair_margin": A(dtype=s),
                                         "geom_xpos_in": A2(dtype=V), "geom_xmat_in": A2(dtype=M),
                                         "aabb_lo_in": A2(dtype=V), "aabb_hi_in": A2(dtype=V),
                                         "sweep_key_out": A2(dtype=s), "sweep_lo_out": A2(dtype=V),
                                         "sweep_hi_out": A2(dtype=V)})
    wp.overload(export_contacts, {
        "contact_pos_in": A2(dtype=V), "contact_frame_in": A2(dtype=M),
        "contact_depth_in": A2(dtype=s), "contact_includemargin_in": A2(dtype=s),
        "con_pos_out": A2(dtype=V), "con_frame_out": A2(dtype=M), "con_dist_out": A2(dtype=s),
        "con_margin_out": A2(dtype=s)})
    wp.overload(split_inactive, {"contact_pos_out": A2(dtype=V), "contact_frame_out": A2(dtype=M),
                                 "contact_depth_out": A2(dtype=s),
                                 "contact_includemargin_out": A2(dtype=s)})
    wp.overload(poses_aabb, {"geom_pos": A(dtype=V), "geom_quat": A(dtype=Q), "geom_half": A(dtype=V),
                             "geom_margin": A(dtype=s), "link_xpos_in": A2(dtype=V), "link_xquat_in": A2(dtype=Q),
                             "geom_xpos_out": A2(dtype=V), "geom_xquat_out": A2(dtype=Q), "geom_xmat_out": A2(dtype=M),
                             "aabb_lo_out": A2(dtype=V), "aabb_hi_out": A2(dtype=V)})
    wp.overload(poses_aabb_broadphase, {
        "geom_pos": A(dtype=V), "geom_quat": A(dtype=Q), "geom_half": A(dtype=V), "geom_margin": A(dtype=s),
        "pair_margin": A(dtype=s), "link_xpos_in": A2(dtype=V), "link_xquat_in": A2(dtype=Q),
        "geom_xpos_out": A2(dtype=V), "geom_xquat_out": A2(dtype=Q), "geom_xmat_out": A2(dtype=M),
        "aabb_lo_out": A2(dtype=V), "aabb_hi_out": A2(dtype=V)})
    wp.overload(poses_aabb_broadphase_sorted, {
        "geom_pos": A(dtype=V), "geom_quat": A(dtype=Q), "geom_half": A(dtype=V), "geom_margin": A(dtype=s),
        "pair_margin": A(dtype=s), "link_xpos_in": A2(dtype=V), "link_xquat_in": A2(dtype=Q),
        "sweep_key_out": A2(dtype=s), "sweep_lo_out": A2(dtype=V), "sweep_hi_out": A2(dtype=V),
        "geom_xpos_out": A2(dtype=V), "geom_xquat_out": A2(dtype=Q), "geom_xmat_out": A2(dtype=M),
        "aabb_lo_out": A2(dtype=V), "aabb_hi_out": A2(dtype=V)})
    wp.overload(prune_export, {"geom_size": A(dtype=V), "geom_xpos_in": A2(dtype=V),
                               "geom_margin": A(dtype=s), "geom_gap": A(dtype=s),
                               "pair_margin": A(dtype=s), "pair_gap": A(dtype=s),
                               "cand_pos_in": A(dtype=V), "cand_normal_in": A(dtype=V),
                               "cand_dist_in": A(dtype=s), "contact_pos_out": A2(dtype=V),
                               "contact_frame_out": A2(dtype=M), "contact_depth_out": A2(dtype=s),
                               "contact_includemargin_out": A2(dtype=s), "con_pos_out": A2(dtype=V),
                               "con_frame_out": A2(dtype=M), "con_dist_out": A2(dtype=s),
                               "con_margin_out": A2(dtype=s)})
    wp.overload(prune, {"geom_size": A(dtype=V), "geom_xpos_in": A2(dtype=V),
                        "geom_margin": A(dtype=s), "geom_gap": A(dtype=s),
                        "pair_margin": A(dtype=s), "pair_gap": A(dtype=s),
                        "cand_pos_in": A(dtype=V), "cand_normal_in": A(dtype=V),
                        "cand_dist_in": A(dtype=s), "contact_pos_out": A2(dtype=V),
                        "contact_frame_out": A2(dtype=M), "contact_depth_out": A2(dtype=s),
                        "contact_includemargin_out": A2(dtype=s)})
