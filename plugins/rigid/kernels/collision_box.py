"""Narrowphase of the box pairs with an analytic routine beyond the plane and sphere families:
capsule–box and box–box (collision_primitive.py; box–box clips faces into a manifold of up to 8
points). A pair-family module of the collision pipeline, as collision_plane.py (docs/collision.md,
"Kernel modules"); generic over precision (types.declare_overloads). ``narrowphase_box_mujoco`` is
the MuJoCo-compatible mode's kernel: the same, with MuJoCo 4.0's box–box (collision_boxbox.py).
"""

from typing import Any

import warp as wp

from ..types import overloads
from .collision_boxbox import box_box_mujoco_native
from .collision_driver import BOX, CAPSULE, _pair_margin, _store
from .collision_primitive import box_box, capsule_box

wp.set_module_options({"enable_backward": False})


@wp.kernel
def narrowphase_box(
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
    """The stored pairs of a capsule or a box with a box; each routine stores from its own branch
    (collision_plane._plane_store)."""
    env, j = wp.tid()
    for k in range(j, wp.min(pair_count_in[env], pairs_in.shape[1]), slot_stride):
        p = pairs_in[env, k]
        g1 = p[0]
        g2 = p[1]
        t1 = geom_type[g1]
        if geom_type[g2] == BOX and (t1 == CAPSULE or t1 == BOX):
            margin = _pair_margin(p, geom_margin, pair_margin, margin_sum)
            if t1 == CAPSULE:
                c11, n11, q11, d11 = capsule_box(geom_xpos_in[env, g1], geom_xmat_in[env, g1], geom_size[g1],
                                                 geom_xpos_in[env, g2], geom_xmat_in[env, g2], geom_size[g2], margin)
                _store(env, k, c11, n11, q11, d11, pair_cand_out, cand_pos_out, cand_normal_out, cand_dist_out,
                       cand_count_out, cand_pool_out)
            else:
                c12, n12, q12, d12 = box_box(geom_xpos_in[env, g1], geom_xmat_in[env, g1], geom_size[g1],
                                             geom_xpos_in[env, g2], geom_xmat_in[env, g2], geom_size[g2], margin)
                _store(env, k, c12, n12, q12, d12, pair_cand_out, cand_pos_out, cand_normal_out, cand_dist_out,
                       cand_count_out, cand_pool_out)


@wp.kernel
def narrowphase_box_mujoco(
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
    """narrowphase_box in MuJoCo-compatible mode: box–box is MuJoCo 4.0's collider (every point it
    gives is kept: prune leaves box–box pairs whole in this mode), capsule–box as narrowphase_box."""
    env, j = wp.tid()
    for k in range(j, wp.min(pair_count_in[env], pairs_in.shape[1]), slot_stride):
        p = pairs_in[env, k]
        g1 = p[0]
        g2 = p[1]
        t1 = geom_type[g1]
        if geom_type[g2] == BOX and (t1 == CAPSULE or t1 == BOX):
            margin = _pair_margin(p, geom_margin, pair_margin, margin_sum)
            if t1 == CAPSULE:
                c11, n11, q11, d11 = capsule_box(geom_xpos_in[env, g1], geom_xmat_in[env, g1], geom_size[g1],
                                                 geom_xpos_in[env, g2], geom_xmat_in[env, g2], geom_size[g2], margin)
                _store(env, k, c11, n11, q11, d11, pair_cand_out, cand_pos_out, cand_normal_out, cand_dist_out,
                       cand_count_out, cand_pool_out)
            else:
                box_box_mujoco_native(env, k, geom_xpos_in[env, g1], geom_xmat_in[env, g1], geom_size[g1],
                                      geom_xpos_in[env, g2], geom_xmat_in[env, g2], geom_size[g2], margin, pair_cand_out,
                                      cand_pos_out, cand_normal_out, cand_dist_out, cand_count_out, cand_pool_out)


@overloads
def _overloads(s):
    V = wp.types.vector(3, s)
    M = wp.types.matrix((3, 3), s)
    A = wp.array
    A2 = wp.array2d
    wp.overload(narrowphase_box, {"geom_size": A(dtype=V), "geom_margin": A(dtype=s), "pair_margin": A(dtype=s),
                                  "mesh_vert": A(dtype=V), "geom_xpos_in": A2(dtype=V), "geom_xmat_in": A2(dtype=M),
                                  "cand_pos_out": A(dtype=V), "cand_normal_out": A(dtype=V),
                                  "cand_dist_out": A(dtype=s)})
    wp.overload(narrowphase_box_mujoco, {"geom_size": A(dtype=V), "geom_margin": A(dtype=s), "pair_margin": A(dtype=s),
                                         "mesh_vert": A(dtype=V), "geom_xpos_in": A2(dtype=V),
                                         "geom_xmat_in": A2(dtype=M), "cand_pos_out": A(dtype=V),
                                         "cand_normal_out": A(dtype=V), "cand_dist_out": A(dtype=s)})
