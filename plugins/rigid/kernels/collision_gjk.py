"""The narrowphase of the pairs without an analytic routine: GJK + EPA (collision_convex.py) and, for a
pair with a heightfield prism, the internal-edge correction and face manifold (collision_hfield.py).

A module of its own, launched and compiled only when a scene has such pairs (CollisionPipeline.run,
RigidSolver.kernel_modules): the GJK, EPA and prism code is most of the collision compile time, and a
scene of spheres, capsules and boxes on a plane never needs it. Same outputs as
the pair-family narrowphase kernels (collision_plane.py, ...); generic over precision (types.declare_overloads).
"""

from typing import Any

import warp as wp

from ..types import overloads
from .collision_convex import convex_pair
from .collision_driver import BOX, CAPSULE, SPHERE, _is_convex, _pair_margin, _store
from .collision_hfield import prism_contact
from .collision_primitive import _empty

wp.set_module_options({"enable_backward": False})


@wp.kernel
def narrowphase_convex(
    # Model:
    geom_type: wp.array(dtype=wp.int32),
    geom_size: wp.array(dtype=Any),
    geom_margin: wp.array(dtype=Any),
    pair_margin: wp.array(dtype=Any),
    margin_sum: int,
    mesh_vert: wp.array(dtype=Any),
    geom_prism: wp.array(dtype=wp.int32),
    prism_nrm: wp.array2d(dtype=Any),
    prism_vcone: wp.array(dtype=wp.vec3i),
    cone_nrm: wp.array2d(dtype=Any),
    cone_cnt: wp.array(dtype=wp.int32),
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
    """The GJK + EPA pairs (one contact each), same outputs as narrowphase. A pair with one
    heightfield prism (geom_prism >= 0) gets the internal-edge correction and, for a face contact
    of a sphere, capsule, cylinder or box, the face manifold (collision_hfield.prism_contact)."""
    env, k = wp.tid()
    npairs = wp.min(pair_count_in[env], pairs_in.shape[1])
    if k < npairs:
        p = pairs_in[env, k]
        g1 = p[0]
        g2 = p[1]
        t1 = geom_type[g1]
        t2 = geom_type[g2]
        if _is_convex(t1, t2):
            margin = _pair_margin(p, geom_margin, pair_margin, margin_sum)
            pr1 = geom_prism[g1]
            pr2 = geom_prism[g2]
            # a sphere or capsule against a heightfield prism: GJK on its core (the centre or the
            # axis segment, as a zero-size box) with the radius added to the margin and taken off
            # the distance afterwards — exact while the core stays outside the prism (penetration
            # < radius, the usual case); when the core overlaps (or GJK reports so: a point on a
            # flat polytope face is degenerate in float32), the full shapes are collided again
            zero = margin - margin
            s1 = geom_size[g1]
            s2 = geom_size[g2]
            ct1 = t1
            ct2 = t2
            rad = zero
            if pr2 >= 0 and pr1 < 0 and (t1 == SPHERE or t1 == CAPSULE):
                rad = s1[0]
                s1 = wp.vector(zero, zero, s1[1])
                if t1 == SPHERE:
                    s1 = wp.vector(zero, zero, zero)
                ct1 = BOX
            elif pr1 >= 0 and pr2 < 0 and (t2 == SPHERE or t2 == CAPSULE):
                rad = s2[0]
                s2 = wp.vector(zero, zero, s2[1])
                if t2 == SPHERE:
                    s2 = wp.vector(zero, zero, zero)
                ct2 = BOX
            cnt = int(0)
            n = s1
            pts, d = _empty(s1)
            tries = int(2)
            for attempt in range(tries):
                if attempt == 0 or (cnt > 0 and d[0] < zero and rad > zero):
                    if attempt == 1:
                        ct1 = t1
                        ct2 = t2
                        s1 = geom_size[g1]
                        s2 = geom_size[g2]
                        rad = zero
                    cnt, n, pts, d = convex_pair(ct1, geom_xpos_in[env, g1],
                                                 geom_xmat_in[env, g1], s1, ct2,
                                                 geom_xpos_in[env, g2], geom_xmat_in[env, g2], s2,
                                                 margin + rad, mesh_vert)
            if cnt > 0 and rad > zero:
                # the core's witness moves onto the surface: by rad towards the prism
                sg = type(zero)(1.0)
                if pr1 >= 0:
                    sg = type(zero)(-1.0)
                pts[0] = pts[0] + n * (sg * type(zero)(0.5) * rad)
                d[0] = d[0] - rad
            if pr2 >= 0 and pr1 < 0:
                cnt, n, pts, d = prism_contact(pr2, geom_xpos_in[env, g2], geom_xmat_in[env, g2],
                                               geom_size[g2], t1, geom_xpos_in[env, g1],
                                               geom_xmat_in[env, g1], geom_size[g1], False, cnt,
                                               n, pts, d, margin, mesh_vert, prism_nrm,
                                               prism_vcone, cone_nrm, cone_cnt)
            elif pr1 >= 0 and pr2 < 0:
                cnt, n, pts, d = prism_contact(pr1, geom_xpos_in[env, g1], geom_xmat_in[env, g1],
                                               geom_size[g1], t2, geom_xpos_in[env, g2],
                                               geom_xmat_in[env, g2], geom_size[g2], True, cnt,
                                               n, pts, d, margin, mesh_vert, prism_nrm,
                                               prism_vcone, cone_nrm, cone_cnt)
            _store(env, k, cnt, n, pts, d, pair_cand_out, cand_pos_out, cand_normal_out,
                   cand_dist_out, cand_count_out, cand_pool_out)


@overloads
def _overloads(s):
    V = wp.types.vector(3, s)
    M = wp.types.matrix((3, 3), s)
    A = wp.array
    A2 = wp.array2d
    wp.overload(narrowphase_convex, {"geom_size": A(dtype=V), "geom_margin": A(dtype=s),
                              "pair_margin": A(dtype=s), "mesh_vert": A(dtype=V),
                              "prism_nrm": A2(dtype=V), "cone_nrm": A2(dtype=V),
                              "geom_xpos_in": A2(dtype=V),
                              "geom_xmat_in": A2(dtype=M), "cand_pos_out": A(dtype=V),
                              "cand_normal_out": A(dtype=V), "cand_dist_out": A(dtype=s)})
