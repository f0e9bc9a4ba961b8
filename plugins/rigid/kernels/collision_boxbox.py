"""Box–box contacts as MuJoCo 4.0 computes them (docs/collision.md, "Box–box in MuJoCo-compatible mode"):
the collider of the MuJoCo-compatible narrowphase (collision_box.narrowphase_box_mujoco). A native body
(collision_boxbox.cpp, loaded by native.py), generic over precision, that also stores the pair's points
into its candidate block; the kernel lives in collision_box.py. Native because the Warp function it replaced
(the same operations in the same order: bit-identical) passed and returned the clipped polygon as a 12×3
matrix by value through each clip: the pile of 50 boxes' collision stage −16 % at 64 envs and −21 % at 1 env
(benchmarks/results/constraint.md, Round 14 (collision)).

Stage 1, separating axes: the 3 face axes of each box, then the 9 edge-cross axes; an edge axis wins
only when its separation beats the best face axis by a relative bias (1e-6), and a winning edge axis
within ~8° of the best face axis (|cos| > 0.99) that is not 5 % deeper gives way to the face. The first
axis separating the boxes by more than the margin ends the test (no contact; the axes after it cannot
change that). An edge axis whose unnormalised separation plus a round-off bound is below 0 and below the best
face separation, directly or divided by the axis' length (compared squared), can do neither (its separation is
at most that) and is passed over before its square root and division (EDGE_SKIP in the body; docs/collision.md:
the result is the same).
Stage 2, face axis: the incident face (the face of the other box most opposed to the reference normal)
is clipped against the four side planes of the reference face (Sutherland–Hodgman, depth carried as
an attribute); every clipped vertex within the margin is a contact (near-duplicates within 1e-7 of
the face size dropped), at the vertex's in-plane position and midway between the reference face and
the incident surface along the normal, with the vertex's signed distance. Edge axis: one contact at
the midpoint of the closest points of the two supporting edges (both sign choices tried where an axis
component is within 1e-9 of zero), distance along the axis. The normal points from geom 1 to geom 2.
"""

from typing import Any

import warp as wp

from . import native


@wp.func_native(native.body(__file__, "box_box_mujoco_native"))
def box_box_mujoco_native(env: int, k: int, pos1: Any, rot1: Any, size1: Any, pos2: Any, rot2: Any, size2: Any, margin: Any,
                          pair_cand_out: wp.array2d(dtype=wp.vec2i), cand_pos_out: wp.array(dtype=Any),
                          cand_normal_out: wp.array(dtype=Any), cand_dist_out: wp.array(dtype=Any),
                          cand_count_out: wp.array(dtype=wp.int32), cand_pool_out: wp.array(dtype=wp.int32)):
    """Box 1 (centre pos1, rotation rot1, half sizes size1) against box 2 within ``margin`` (the module
    docstring): the points (normal geom 1 → geom 2, MuJoCo's signed distance) as the block of pair ``k`` of env
    ``env`` in the candidate pool (collision_driver._store: the env's count grows by the point count, the
    block is taken within the env's budget, ``pair_cand_out[env, k]`` = (start, stored))."""
    ...
