"""Narrowphase of the sphere pairs with an analytic routine: sphere–sphere, –capsule, –cylinder and
–box (collision_primitive.py). A pair-family module of the collision pipeline, as collision_plane.py
(docs/collision.md, "Kernel modules"); generic over precision (types.declare_overloads).
"""

from typing import Any

import warp as wp

from ..types import overloads
from .collision_driver import BOX, CAPSULE, CYLINDER, SPHERE, _pair_margin, _store
from .collision_primitive import sphere_box, sphere_capsule, sphere_cylinder, sphere_sphere

wp.set_module_options({"enable_backward": False})


@wp.func
def _sphere_store(t2: int, p1: Any, R1: Any, s1: Any, p2: Any, R2: Any, s2: Any, margin: Any, env: int, k: int,
                  pair_cand_out: wp.array2d(dtype=wp.vec2i), cand_pos_out: Any, cand_normal_out: Any,
                  cand_dist_out: Any, cand_count_out: wp.array(dtype=wp.int32),
                  cand_pool_out: wp.array(dtype=wp.int32)):
    """The routine of a sphere against type ``t2`` and the store of its points, each from its own
    branch (collision_plane._plane_store)."""
    if t2 == SPHERE:
        c6, n6, q6, d6 = sphere_sphere(p1, R1, s1, p2, R2, s2, margin)
        _store(env, k, c6, n6, q6, d6, pair_cand_out, cand_pos_out, cand_normal_out, cand_dist_out, cand_count_out, cand_pool_out)
    elif t2 == CAPSULE:
        c7, n7, q7, d7 = sphere_capsule(p1, R1, s1, p2, R2, s2, margin)
        _store(env, k, c7, n7, q7, d7, pair_cand_out, cand_pos_out, cand_normal_out, cand_dist_out, cand_count_out, cand_pool_out)
    elif t2 == CYLINDER:
        c8, n8, q8, d8 = sphere_cylinder(p1, R1, s1, p2, R2, s2, margin)
        _store(env, k, c8, n8, q8, d8, pair_cand_out, cand_pos_out, cand_normal_out, cand_dist_out, cand_count_out, cand_pool_out)
    elif t2 == BOX:
        c9, n9, q9, d9 = sphere_box(p1, R1, s1, p2, R2, s2, margin)
        _store(env, k, c9, n9, q9, d9, pair_cand_out, cand_pos_out, cand_normal_out, cand_dist_out, cand_count_out, cand_pool_out)


@wp.kernel
def narrowphase_sphere(
    # Model:
    geom_type: wp.array(dtype=wp.int32),
    geom_size: wp.array(dtype=Any),
    geom_margin: wp.array(dtype=Any),
    pair_margin: wp.array(dtype=Any),
    margin_sum: int,
    mesh_vert: wp.array(dtype=Any),          # unused here: every family kernel takes the same arguments
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
    """The stored pairs whose geom 1 is a sphere and geom 2 a sphere, capsule, cylinder or box."""
    env, j = wp.tid()
    for k in range(j, wp.min(pair_count_in[env], pairs_in.shape[1]), slot_stride):
        p = pairs_in[env, k]
        g1 = p[0]
        g2 = p[1]
        t2 = geom_type[g2]
        if geom_type[g1] == SPHERE and t2 <= BOX:
            margin = _pair_margin(p, geom_margin, pair_margin, margin_sum)
            _sphere_store(t2, geom_xpos_in[env, g1], geom_xmat_in[env, g1], geom_size[g1], geom_xpos_in[env, g2],
                          geom_xmat_in[env, g2], geom_size[g2], margin, env, k, pair_cand_out, cand_pos_out,
                          cand_normal_out, cand_dist_out, cand_count_out, cand_pool_out)


@overloads
def _overloads(s):
    V = wp.types.vector(3, s)
    M = wp.types.matrix((3, 3), s)
    A = wp.array
    A2 = wp.array2d
    wp.overload(narrowphase_sphere, {"geom_size": A(dtype=V), "geom_margin": A(dtype=s), "pair_margin": A(dtype=s),
                                     "mesh_vert": A(dtype=V), "geom_xpos_in": A2(dtype=V), "geom_xmat_in": A2(dtype=M),
                                     "cand_pos_out": A(dtype=V), "cand_normal_out": A(dtype=V),
                                     "cand_dist_out": A(dtype=s)})
