"""Sweep-and-prune broadphase (RigidOptions.broadphase = "sweep_and_prune", or "auto" above
collision.SAP_THRESHOLD collidable geoms): per env, the geoms sorted by their AABB's lower bound
along one axis, each swept against the following ones. A module of its own, compiled and launched
only by scenes that use it (CollisionPipeline.kernel_modules); the all-vs-all broadphase is in
collision_driver.py. Generic over precision (types.declare_overloads).
"""

from typing import Any

import warp as wp

from ..types import overloads
from .collision_driver import PLANE, _emit_pair, _overlap, _plane_apart, _welded

wp.set_module_options({"enable_backward": False})


@wp.kernel
def sap_keys(
    # Data in:
    aabb_lo_in: wp.array2d(dtype=Any),
    axis: int,
    # Data out:
    keys_out: wp.array(dtype=wp.float32),
    values_out: wp.array(dtype=wp.int32),
):
    """Sort keys of one partition: the AABB lower bound along ``axis`` rounded down to float32."""
    env, g = wp.tid()
    n = aabb_lo_in.shape[1]
    lo = aabb_lo_in[env, g][axis]
    k = wp.float32(lo)
    if type(lo)(k) > lo:
        k = wp.float32(k - wp.abs(k) * wp.float32(1.0e-6) - wp.float32(1.0e-30))
    keys_out[env * n + g] = k
    values_out[env * n + g] = g


@wp.func
def _has_key(keys: wp.array(dtype=wp.int64), key: wp.int64):
    lo = int(0)
    hi = keys.shape[0]
    while lo < hi:
        mid = (lo + hi) // 2
        if keys[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    found = False
    if lo < keys.shape[0]:
        found = keys[lo] == key
    return found


@wp.func
def _pair_allowed(ga: int, gb: int, n_geoms: int, weld_base: int,
                  geom_contype: wp.array(dtype=wp.int32), geom_conaffinity: wp.array(dtype=wp.int32),
                  geom_local_contype: wp.array(dtype=wp.int32),
                  geom_local_conaffinity: wp.array(dtype=wp.int32),
                  geom_entity: wp.array(dtype=wp.int32), geom_weld: wp.array(dtype=wp.int32),
                  geom_weld_parent: wp.array(dtype=wp.int32), flags: int,
                  exclude_keys: wp.array(dtype=wp.int64), explicit_keys: wp.array(dtype=wp.int64)):
    """The device form of CollisionPipeline's filter rule (docs/semantics.md §R4); the numpy form in
    collision.py is the reference and the tests check that both agree."""
    masks = (flags & 4) != 0          # filtering on: masks, self/adjacent options, excludes
    ok = (geom_contype[ga] & geom_conaffinity[gb]) != 0 or (geom_contype[gb] & geom_conaffinity[ga]) != 0
    if not masks:
        ok = True
    ea = geom_entity[ga]
    eb = geom_entity[gb]
    if ok and masks and ea == eb:
        ok = ((geom_local_contype[ga] & geom_local_conaffinity[gb]) != 0
              or (geom_local_contype[gb] & geom_local_conaffinity[ga]) != 0)
        if (flags & 1) == 0:          # self collision off
            ok = False
    wa = geom_weld[ga]
    wb = geom_weld[gb]
    if wa == wb:                      # same link, links welded together, or both fixed to the world
        ok = False
    if ok and masks and (flags & 2) == 0:       # adjacent (parent-child) links off
        if (geom_weld_parent[ga] == wb and wb >= 0) or (geom_weld_parent[gb] == wa and wa >= 0):
            ok = False
    if ok and masks and exclude_keys.shape[0] > 0:
        lo = wp.min(wa, wb) + 1
        hi = wp.max(wa, wb) + 1
        if _has_key(exclude_keys, wp.int64(lo) * wp.int64(weld_base) + wp.int64(hi)):
            ok = False
    if ok and explicit_keys.shape[0] > 0:
        lo = wp.min(ga, gb)
        hi = wp.max(ga, gb)
        if _has_key(explicit_keys, wp.int64(lo) * wp.int64(n_geoms) + wp.int64(hi)):
            ok = False               # handled by the explicit pair (its own parameters)
    return ok


@wp.kernel
def sap_sweep(
    # Model:
    geom_type: wp.array(dtype=wp.int32),
    geom_collide: wp.array(dtype=wp.int32),
    geom_contype: wp.array(dtype=wp.int32),
    geom_conaffinity: wp.array(dtype=wp.int32),
    geom_local_contype: wp.array(dtype=wp.int32),
    geom_local_conaffinity: wp.array(dtype=wp.int32),
    geom_entity: wp.array(dtype=wp.int32),
    geom_weld: wp.array(dtype=wp.int32),
    geom_weld_parent: wp.array(dtype=wp.int32),
    flags: int,
    weld_base: int,
    exclude_keys: wp.array(dtype=wp.int64),
    explicit_keys: wp.array(dtype=wp.int64),
    axis: int,
    weld_pairs: wp.array(dtype=wp.vec2i),
    geom_margin: wp.array(dtype=Any),
    margin_sum: int,
    # Data in:
    weld_active_in: wp.array2d(dtype=wp.int32),
    keys_in: wp.array(dtype=wp.float32),
    values_in: wp.array(dtype=wp.int32),
    geom_xpos_in: wp.array2d(dtype=Any),
    geom_xmat_in: wp.array2d(dtype=Any),
    aabb_lo_in: wp.array2d(dtype=Any),
    aabb_hi_in: wp.array2d(dtype=Any),
    # Data out:
    pairs_out: wp.array2d(dtype=wp.vec3i),
    pair_count_out: wp.array(dtype=wp.int32),
    pair_cand_out: wp.array2d(dtype=wp.vec2i),
):
    """Sweep from the i-th geom in sorted order over the following ones while their lower bound
    does not exceed its upper bound; every overlapping pair is found once (from the earlier one). A
    plane pair also passes the half-space test first (collision_driver._plane_apart: a plane's AABB is
    infinite, so the plane, sorted first, sweeps every geom), before the filter rule."""
    env, i = wp.tid()
    n = aabb_lo_in.shape[1]
    base = env * n
    ga = values_in[base + i]
    if geom_collide[ga] != 0:
        hi_a = aabb_hi_in[env, ga]
        lo_a = aabb_lo_in[env, ga]
        lim = wp.float32(hi_a[axis])
        if type(hi_a[axis])(lim) < hi_a[axis]:
            lim = lim + wp.abs(lim) * wp.float32(1.0e-6) + wp.float32(1.0e-30)
        for j in range(i + 1, n):
            if keys_in[base + j] > lim:
                break
            gb = values_in[base + j]
            if geom_collide[gb] != 0:
                if _overlap(lo_a, hi_a, aabb_lo_in[env, gb], aabb_hi_in[env, gb]):
                    margin = wp.max(geom_margin[ga], geom_margin[gb])
                    if margin_sum != 0:
                        margin = geom_margin[ga] + geom_margin[gb]
                    if not (geom_type[ga] == PLANE and geom_type[gb] == PLANE) and not _plane_apart(
                            env, ga, gb, margin, geom_type, geom_xpos_in, geom_xmat_in, aabb_lo_in, aabb_hi_in):
                        if _pair_allowed(ga, gb, n, weld_base, geom_contype, geom_conaffinity,
                                         geom_local_contype, geom_local_conaffinity, geom_entity,
                                         geom_weld, geom_weld_parent, flags, exclude_keys,
                                         explicit_keys):
                            if not _welded(env, ga, gb, geom_weld, weld_pairs, weld_active_in):
                                _emit_pair(env, ga, gb, -1, geom_type, pairs_out,
                                           pair_count_out, pair_cand_out)



@overloads
def _overloads(s):
    V = wp.types.vector(3, s)
    A2 = wp.array2d
    wp.overload(sap_keys, {"aabb_lo_in": A2(dtype=V)})
    M = wp.types.matrix((3, 3), s)
    wp.overload(sap_sweep, {"geom_margin": wp.array(dtype=s), "geom_xpos_in": A2(dtype=V), "geom_xmat_in": A2(dtype=M),
                            "aabb_lo_in": A2(dtype=V), "aabb_hi_in": A2(dtype=V)})
