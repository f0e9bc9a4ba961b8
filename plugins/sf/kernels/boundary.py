"""Solid obstacles and the boundary conditions of the face velocities.

A cell whose centre lies inside a rigid geom (signed distance < 0, evaluated in float32 in the geom
frame with ``polyphys.kernels.sdf``: analytic primitives, grid SDFs of meshes, heightfields) is
solid and moves with the geom's link: v = v_link + ω × (x - c). A face is fixed when a cell beside
it is solid (it takes the mean normal velocity of its solid cells) or it lies on a closed domain
wall (zero normal velocity; a solid cell beside the wall still imposes its velocity). Faces on an
open domain face are free (the pressure outside is zero).
"""

from typing import Any

import warp as wp
from polyphys.description import GeomType
from polyphys.kernels.sdf import sdf_grid_query, sdf_hfield, sdf_primitive

wp.set_module_options({"enable_backward": False})   # nothing here is differentiated (Capabilities: differentiable=False)


@wp.func
def _v3f(a: Any):
    return wp.vec3(wp.float32(a[0]), wp.float32(a[1]), wp.float32(a[2]))


@wp.kernel
def clear_solids(
    # Data out:
    solid_out: wp.array4d(dtype=wp.int32),
    vsolid_out: wp.array4d(dtype=wp.vec3),
):
    env, i, j, k = wp.tid()
    solid_out[env, i, j, k] = 0
    vsolid_out[env, i, j, k] = wp.vec3(0.0, 0.0, 0.0)


@wp.kernel
def mark_solids(
    # Model:
    geom_link: wp.array(dtype=wp.int32),
    geom_type: wp.array(dtype=wp.int32),
    geom_size: wp.array(dtype=wp.vec3),
    geom_pos: wp.array(dtype=wp.vec3),
    geom_quat: wp.array(dtype=wp.quat),
    geom_grid: wp.array(dtype=wp.int32),
    grid_values: wp.array(dtype=float),
    grid_origin: wp.array(dtype=wp.vec3),
    grid_spacing: wp.array(dtype=float),
    grid_dims: wp.array(dtype=wp.vec3i),
    grid_offset: wp.array(dtype=wp.int32),
    geom_hfield: wp.array(dtype=wp.int32),
    hfield_heights: wp.array(dtype=float),
    hfield_shape: wp.array(dtype=wp.vec2i),
    hfield_extent: wp.array(dtype=wp.vec4),
    hfield_offset: wp.array(dtype=wp.int32),
    hfield_reach: wp.array(dtype=float),
    lo: wp.vec3,
    dx: float,
    # Data in:
    link_pos_in: wp.array2d(dtype=Any),
    link_quat_in: wp.array2d(dtype=Any),
    link_com_in: wp.array2d(dtype=Any),
    link_vel_in: wp.array2d(dtype=Any),
    link_ang_in: wp.array2d(dtype=Any),
    # Data out:
    solid_out: wp.array4d(dtype=wp.int32),
    vsolid_out: wp.array4d(dtype=wp.vec3),
):
    """Mark the cells whose centre lies inside a geom of one RigidView solver, with its velocity."""
    env, i, j, k = wp.tid()
    x = lo + wp.vec3(float(i) + 0.5, float(j) + 0.5, float(k) + 0.5) * dx
    for g in range(geom_type.shape[0]):
        l = geom_link[g]
        q = link_quat_in[env, l]
        lq = wp.quat(wp.float32(q[0]), wp.float32(q[1]), wp.float32(q[2]), wp.float32(q[3]))
        gq = lq * geom_quat[g]
        gp = _v3f(link_pos_in[env, l]) + wp.quat_rotate(lq, geom_pos[g])
        pl = wp.quat_rotate_inv(gq, x - gp)
        d = float(1.0e10)
        if geom_type[g] == GeomType.MESH:
            gi = geom_grid[g]
            if gi >= 0:
                d = sdf_grid_query(grid_values, grid_origin[gi], grid_spacing[gi], grid_dims[gi],
                                   grid_offset[gi], pl)[0]
        elif geom_type[g] == GeomType.HFIELD:
            hi = geom_hfield[g]
            if hi >= 0:
                d = sdf_hfield(hfield_heights, hfield_offset[hi], hfield_shape[hi], hfield_extent[hi],
                               hfield_reach[hi], pl)[0]
        else:
            d = sdf_primitive(geom_type[g], geom_size[g], pl)
        if d < 0.0:
            solid_out[env, i, j, k] = 1
            com = _v3f(link_com_in[env, l])
            vsolid_out[env, i, j, k] = _v3f(link_vel_in[env, l]) + wp.cross(_v3f(link_ang_in[env, l]), x - com)


@wp.kernel
def face_bc(
    # Model:
    axis: int,
    open_lo: wp.vec3i,
    open_hi: wp.vec3i,
    # Data in:
    solid_in: wp.array4d(dtype=wp.int32),
    vsolid_in: wp.array4d(dtype=wp.vec3),
    # Data out:
    vel_out: wp.array4d(dtype=Any),
    fixed_out: wp.array4d(dtype=wp.int32),
):
    """Fix the faces (component ``axis``) beside solid cells and on closed walls, with their velocity."""
    env, i, j, k = wp.tid()
    n = solid_in.shape[1 + axis]
    idx = i
    ai = i - 1
    aj = j
    ak = k
    if axis == 1:
        idx = j
        ai = i
        aj = j - 1
    if axis == 2:
        idx = k
        ai = i
        ak = k - 1
    count = int(0)
    vs = float(0.0)
    if idx > 0:
        if solid_in[env, ai, aj, ak] != 0:
            count = count + 1
            vs = vs + vsolid_in[env, ai, aj, ak][axis]
    if idx < n:
        if solid_in[env, i, j, k] != 0:
            count = count + 1
            vs = vs + vsolid_in[env, i, j, k][axis]
    wall = (idx == 0 and open_lo[axis] == 0) or (idx == n and open_hi[axis] == 0)
    if count > 0:
        vel_out[env, i, j, k] = type(vel_out[env, i, j, k])(vs / float(count))
        fixed_out[env, i, j, k] = 1
    elif wall:
        vel_out[env, i, j, k] = type(vel_out[env, i, j, k])(0.0)
        fixed_out[env, i, j, k] = 1
    else:
        fixed_out[env, i, j, k] = 0


_declared: set = set()


def _types(precision: str):
    """Scalar, vec3 and quat of a precision ("32" or "64"), as SFSolver.build makes them."""
    if precision == "64":
        return wp.float64, wp.vec3d, wp.quatd
    return wp.float32, wp.vec3, wp.quat


def declare_overloads(precision: str) -> None:
    """The overloads of the scene precision's types of this module's generic kernels (SFSolver.kernel_modules):
    the link state of a RigidView solver is in the scene's precision."""
    if precision in _declared:
        return
    s, V, Q = _types(precision)
    v2 = wp.array2d(dtype=V)
    wp.overload(mark_solids, {"link_pos_in": v2, "link_quat_in": wp.array2d(dtype=Q), "link_com_in": v2,
                              "link_vel_in": v2, "link_ang_in": v2})
    wp.overload(face_bc, {"vel_out": wp.array4d(dtype=s)})
    _declared.add(precision)
