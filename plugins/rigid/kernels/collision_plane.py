"""Narrowphase of the plane pairs: plane–sphere, –capsule, –cylinder, –box, –ellipsoid (analytic,
collision_primitive.py) and –mesh (the hull's vertices, collision_convex.plane_mesh).

One of the pair-family modules of the collision pipeline (docs/collision.md, "Kernel modules"): a
scene compiles and launches the family modules of the geom type pairs it can produce
(collision.narrowphase_families). Each family kernel writes the raw contact points of its own pairs
(normal geom1→geom2, MuJoCo's signed distance) to a contiguous block of the env's candidate buffer
and leaves the other pairs alone (the broadphase gave every stored pair an empty block). Launch grid
and ``slot_stride`` as in collision_driver.py; generic over precision (types.declare_overloads).
"""

from typing import Any

import warp as wp

from ..types import overloads
from .collision_convex import plane_mesh
from .collision_driver import BOX, CAPSULE, CYLINDER, ELLIPSOID, MESH, PLANE, SPHERE, _pair_margin, _reserve, _store
from .collision_primitive import plane_cylinder, plane_ellipsoid

wp.set_module_options({"enable_backward": False})


@wp.func
def _plane_store(t2: int, p1: Any, R1: Any, s1: Any, p2: Any, R2: Any, s2: Any, margin: Any, mv: Any, env: int,
                 k: int, pair_cand_out: wp.array2d(dtype=wp.vec2i), cand_pos_out: Any, cand_normal_out: Any,
                 cand_dist_out: Any, cand_count_out: wp.array(dtype=wp.int32),
                 cand_pool_out: wp.array(dtype=wp.int32)):
    """The routine of a plane against type ``t2`` and the store of its points, each from its own
    branch (no contact set flows out of a branch: Warp would select every variable reassigned in a
    branch after it, 8×3 points and 8 distances per branch per pair)."""
    if t2 == SPHERE or t2 == CAPSULE:
        _plane_sphere_capsule_store(t2, p1, R1, p2, R2, s2, margin, env, k, pair_cand_out, cand_pos_out,
                                    cand_normal_out, cand_dist_out, cand_count_out,
               cand_pool_out)
    elif t2 == CYLINDER:
        c2, n2, q2, d2 = plane_cylinder(p1, R1, s1, p2, R2, s2, margin)
        _store(env, k, c2, n2, q2, d2, pair_cand_out, cand_pos_out, cand_normal_out, cand_dist_out, cand_count_out,
               cand_pool_out)
    elif t2 == BOX:
        _plane_box_store(p1, R1, p2, R2, s2, margin, env, k, pair_cand_out, cand_pos_out, cand_normal_out,
                         cand_dist_out, cand_count_out,
               cand_pool_out)
    elif t2 == ELLIPSOID:
        c4, n4, q4, d4 = plane_ellipsoid(p1, R1, s1, p2, R2, s2, margin)
        _store(env, k, c4, n4, q4, d4, pair_cand_out, cand_pos_out, cand_normal_out, cand_dist_out, cand_count_out,
               cand_pool_out)
    elif t2 == MESH:
        c5, n5, q5, d5 = plane_mesh(p1, R1, s1, p2, R2, s2, margin, mv)
        _store(env, k, c5, n5, q5, d5, pair_cand_out, cand_pos_out, cand_normal_out, cand_dist_out, cand_count_out,
               cand_pool_out)


@wp.func
def _plane_sphere_capsule_store(t2: int, p1: Any, R1: Any, p2: Any, R2: Any, s2: Any, margin: Any, env: int, k: int,
                                pair_cand_out: wp.array2d(dtype=wp.vec2i), cand_pos_out: Any, cand_normal_out: Any,
                                cand_dist_out: Any, cand_count_out: wp.array(dtype=wp.int32),
                 cand_pool_out: wp.array(dtype=wp.int32)):
    """Plane–sphere (the centre's distance, one point) and plane–capsule (one point per end sphere, the +axis
    end first: a line contact when the capsule lies flat), written straight into the env's candidate block
    (as _plane_box_store) instead of an 8×3 point set built, returned and copied (the routines before,
    in collision_primitive.py: the same expressions in the same order, bit-identical). Each point lies
    halfway between the sphere's surface and the plane."""
    n = wp.vector(R1[0, 2], R1[1, 2], R1[2, 2])
    r = s2[0]
    half = type(r)(0.5)
    c0 = p2
    c1 = p2
    if t2 == CAPSULE:
        ax = wp.vector(R2[0, 2], R2[1, 2], R2[2, 2]) * s2[1]
        c0 = p2 + ax * type(r)(1.0)
        c1 = p2 + ax * type(r)(-1.0)
    d0 = wp.dot(c0 - p1, n) - r
    d1 = d0
    cnt = int(0)
    if d0 < margin:
        cnt += 1
    if t2 == CAPSULE:
        d1 = wp.dot(c1 - p1, n) - r
        if d1 < margin:
            cnt += 1
    start, stored = _reserve(env, cnt, cand_count_out, cand_pool_out, cand_pos_out.shape[0])
    if stored > 0:
        i = start
        if d0 < margin:
            cand_pos_out[i] = c0 - n * (r + half * d0)
            cand_normal_out[i] = n
            cand_dist_out[i] = d0
            i += 1
        if t2 == CAPSULE and d1 < margin:
            cand_pos_out[i] = c1 - n * (r + half * d1)
            cand_normal_out[i] = n
            cand_dist_out[i] = d1
    pair_cand_out[env, k] = wp.vec2i(start, stored)


@wp.func
def _box_corner(p2: Any, R2: Any, s2: Any, c8: int):
    """Corner c8 of the box (center p2, rotation R2, half sizes s2): bit k of c8 set = the negative side along
    axis k."""
    sx = type(s2[0])(1.0)
    sy = type(s2[0])(1.0)
    sz = type(s2[0])(1.0)
    if (c8 & 1) != 0:
        sx = -sx
    if (c8 & 2) != 0:
        sy = -sy
    if (c8 & 4) != 0:
        sz = -sz
    return p2 + R2 * wp.vector(sx * s2[0], sy * s2[1], sz * s2[2])


@wp.func
def _plane_box_store(p1: Any, R1: Any, p2: Any, R2: Any, s2: Any, margin: Any, env: int, k: int,
                     pair_cand_out: wp.array2d(dtype=wp.vec2i), cand_pos_out: Any, cand_normal_out: Any,
                     cand_dist_out: Any, cand_count_out: wp.array(dtype=wp.int32),
                 cand_pool_out: wp.array(dtype=wp.int32)):
    """Plane–box: every box corner within the margin (up to 8; pruning keeps at most 4 per pair),
    written straight into the env's candidate block (as _store): the corners' distances first (kept
    in a register vector), then the block is reserved and each corner within the margin is
    recomputed by the same expression and stored (its point halfway to the plane), in corner order.
    No 8×3 point set is built and copied as the other routines do."""
    n = wp.vector(R1[0, 2], R1[1, 2], R1[2, 2])
    half = type(s2[0])(0.5)
    dv = wp.vector(length=8, dtype=type(half))
    cnt = int(0)
    for c8 in range(8):
        c = _box_corner(p2, R2, s2, c8)
        dist = wp.dot(c - p1, n)
        dv[c8] = dist
        if dist < margin:
            cnt += 1
    start, stored = _reserve(env, cnt, cand_count_out, cand_pool_out, cand_pos_out.shape[0])
    if stored > 0:
        i = int(0)
        for c8 in range(8):
            if dv[c8] < margin:
                c = _box_corner(p2, R2, s2, c8)
                cand_pos_out[start + i] = c - n * (half * dv[c8])
                cand_normal_out[start + i] = n
                cand_dist_out[start + i] = dv[c8]
                i += 1
    pair_cand_out[env, k] = wp.vec2i(start, stored)


@wp.kernel
def narrowphase_plane(
    # Model:
    geom_type: wp.array(dtype=wp.int32),
    geom_size: wp.array(dtype=Any),
    geom_margin: wp.array(dtype=Any),
    pair_margin: wp.array(dtype=Any),
    margin_sum: int,
    mesh_vert: wp.array(dtype=Any),
    slot_stride: int,
    # Data in:
    geom_xpos_in: wp.array2d(dtype=Any),
    geom_xmat_in: wp.array2d(dtype=Any),
    pairs_in: wp.array2d(dtype=wp.vec3i),
    pair_count_in: wp.array(dtype=wp.int32),
    # Data out:
    pair_cand_out: wp.array2d(dtype=wp.vec2i),
    cand_pos_out: wp.array(dtype=Any),
    cand_normal_out: wp.array(dtype=Any),
    cand_dist_out: wp.array(dtype=Any),
    cand_count_out: wp.array(dtype=wp.int32),
    cand_pool_out: wp.array(dtype=wp.int32),
):
    """The stored pairs whose geom 1 is a plane."""
    env, j = wp.tid()
    for k in range(j, wp.min(pair_count_in[env], pairs_in.shape[1]), slot_stride):
        p = pairs_in[env, k]
        g1 = p[0]
        g2 = p[1]
        if geom_type[g1] == PLANE:
            margin = _pair_margin(p, geom_margin, pair_margin, margin_sum)
            _plane_store(geom_type[g2], geom_xpos_in[env, g1], geom_xmat_in[env, g1], geom_size[g1],
                         geom_xpos_in[env, g2], geom_xmat_in[env, g2], geom_size[g2], margin, mesh_vert, env, k,
                         pair_cand_out, cand_pos_out, cand_normal_out, cand_dist_out, cand_count_out, cand_pool_out)


@overloads
def _overloads(s):
    V = wp.types.vector(3, s)
    M = wp.types.matrix((3, 3), s)
    A = wp.array
    A2 = wp.array2d
    wp.overload(narrowphase_plane, {"geom_size": A(dtype=V), "geom_margin": A(dtype=s), "pair_margin": A(dtype=s),
                                    "mesh_vert": A(dtype=V), "geom_xpos_in": A2(dtype=V), "geom_xmat_in": A2(dtype=M),
                                    "cand_pos_out": A(dtype=V), "cand_normal_out": A(dtype=V),
                                    "cand_dist_out": A(dtype=s)})
