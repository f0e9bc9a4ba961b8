"""Rigid–FEM point contact of the SAP coupler (docs/sap.md, "Rigid–FEM contact").

Candidates: every boundary vertex of a deformable solver (``DeformableDynamics.surface``) against
every rigid geom the rigid solver lists (``RigidGeoms``, in the geom frame, at the vertex's
substep-start position: the analytic SDFs of polyphys.kernels.sdf for primitives, the packed grid SDF
the coupler builds for a mesh geom, ``sdf_grid_query``, and the closest point on the surface
triangles near the vertex for a heightfield geom, ``sdf_hfield``; ``geom_query_any``). A pair with signed distance φ below
the margin is a contact: normal n = the geom's outward SDF normal (from the rigid geom B to the
vertex A), contact point p = x − φ·n/2 (midway between the vertex and the geom surface, as the
rigid pipeline's), frame rows (n, t1, t2).

``count_contacts`` (env × surface vertex): contacts per vertex; a vertex without any loses its
warm start. ``scan_contacts`` (env): the slots (contacts of a vertex are contiguous; vertices with
contacts get consecutive vertex slots), the per-env counts and the overflow beyond the capacity
(reported by the coupler after the step, never silently). ``fill_contacts`` (env × surface vertex):
per contact its vertex slot, geom, link, φ, point, frame and pair parameters (stiffness in series,
τ_d summed, Drake's friction mean); per vertex slot its vertex, contacts, mass, inverse mass (0 for
a fixed vertex: its velocity is not an unknown) and free velocity. ``point_jacobian`` (env ×
contact slot): the rows R·P of the rigid link's point Jacobian P at p (``RigidDynamics``: cdof
along the link's dof chain). ``apply_velocities`` (env × vertex slot): the solved vertex
velocities into the deformable solver's velocity array.
"""

from typing import Any

import warp as wp
from polyphys.description import GeomType
from polyphys.kernels.sdf import sdf_grid_query, sdf_hfield, sdf_normal, sdf_primitive

wp.set_module_options({"enable_backward": False})


@wp.func
def v3d(x: Any):
    return wp.vec3d(wp.float64(x[0]), wp.float64(x[1]), wp.float64(x[2]))


@wp.func
def geom_frame(g: int, e: int, geom_link: wp.array(dtype=wp.int32), geom_pos: wp.array(dtype=Any),
               geom_quat: wp.array(dtype=Any), link_pos: wp.array2d(dtype=Any), link_quat: wp.array2d(dtype=Any)):
    """World pose (position, quaternion) of geom g in env e, float64."""
    lk = geom_link[g]
    lq = link_quat[e, lk]
    ql = wp.quatd(wp.float64(lq[0]), wp.float64(lq[1]), wp.float64(lq[2]), wp.float64(lq[3]))
    gq = geom_quat[g]
    qg = wp.quatd(wp.float64(gq[0]), wp.float64(gq[1]), wp.float64(gq[2]), wp.float64(gq[3]))
    pos = v3d(link_pos[e, lk]) + wp.quat_rotate(ql, v3d(geom_pos[g]))
    return pos, ql * qg


@wp.func
def geom_query(x: wp.vec3d, pos: wp.vec3d, q: wp.quatd, gtype: int, size: Any):
    """(φ, outward world normal) of the point x against a geom at (pos, q)."""
    pl = wp.quat_rotate_inv(q, x - pos)
    p32 = wp.vec3(float(pl[0]), float(pl[1]), float(pl[2]))
    s32 = wp.vec3(float(size[0]), float(size[1]), float(size[2]))
    phi = wp.float64(sdf_primitive(gtype, s32, p32))
    nl = sdf_normal(gtype, s32, p32)
    n = wp.quat_rotate(q, wp.vec3d(wp.float64(nl[0]), wp.float64(nl[1]), wp.float64(nl[2])))
    return phi, wp.normalize(n)


@wp.func
def geom_query_any(
    g: int,
    x: wp.vec3d,
    pos: wp.vec3d,
    q: wp.quatd,
    gtype: int,
    size: Any,
    geom_grid: wp.array(dtype=wp.int32),
    grid_values: wp.array(dtype=wp.float32),
    grid_origin: wp.array(dtype=wp.vec3),
    grid_spacing: wp.array(dtype=wp.float32),
    grid_dims: wp.array(dtype=wp.vec3i),
    grid_offset: wp.array(dtype=wp.int32),
    geom_hfield: wp.array(dtype=wp.int32),
    hfield_heights: wp.array(dtype=wp.float32),
    hfield_shape: wp.array(dtype=wp.vec2i),
    hfield_extent: wp.array(dtype=wp.vec4),
    hfield_offset: wp.array(dtype=wp.int32),
    hfield_reach: wp.array(dtype=wp.float32),
):
    """(φ, outward world normal) of the point x against geom g at (pos, q): a primitive's analytic SDF
    (``geom_query``, unchanged), a mesh geom's grid SDF (trilinear, within (√3/2)·spacing of the exact
    distance), a heightfield's closest surface point (exact within its reach); φ = 1e10 (no contact)
    for a mesh or heightfield without data, which the coupler refuses at build."""
    phi = wp.float64(1.0e10)
    n = wp.vec3d(wp.float64(0.0), wp.float64(0.0), wp.float64(1.0))
    if gtype == GeomType.MESH or gtype == GeomType.HFIELD:
        pl = wp.quat_rotate_inv(q, x - pos)
        p32 = wp.vec3(float(pl[0]), float(pl[1]), float(pl[2]))
        r = wp.vec4(1.0e10, 0.0, 0.0, 1.0)
        if gtype == GeomType.MESH:
            gi = geom_grid[g]
            if gi >= 0:
                r = sdf_grid_query(grid_values, grid_origin[gi], grid_spacing[gi], grid_dims[gi], grid_offset[gi], p32)
        else:
            hi = geom_hfield[g]
            if hi >= 0:
                r = sdf_hfield(hfield_heights, hfield_offset[hi], hfield_shape[hi], hfield_extent[hi],
                               hfield_reach[hi], p32)
        phi = wp.float64(r[0])
        n = wp.normalize(wp.quat_rotate(q, wp.vec3d(wp.float64(r[1]), wp.float64(r[2]), wp.float64(r[3]))))
    else:
        phi, n = geom_query(x, pos, q, gtype, size)
    return phi, n


@wp.func
def tangent_frame(n: wp.vec3d):
    """Rows n, t1, t2 (right-handed, orthonormal; t1 ⟂ the world axis least aligned with n)."""
    a = wp.vec3d(wp.float64(1.0), wp.float64(0.0), wp.float64(0.0))
    if wp.abs(n[0]) > wp.float64(0.57):
        a = wp.vec3d(wp.float64(0.0), wp.float64(1.0), wp.float64(0.0))
    t1 = wp.normalize(wp.cross(n, a))
    t2 = wp.cross(n, t1)
    return wp.mat33d(n[0], n[1], n[2], t1[0], t1[1], t1[2], t2[0], t2[1], t2[2])


@wp.kernel
def count_contacts(
    # model in
    margin: wp.float64,
    surface_in: wp.array(dtype=wp.int32),
    geom_link_in: wp.array(dtype=wp.int32),
    geom_type_in: wp.array(dtype=wp.int32),
    geom_size_in: wp.array(dtype=Any),
    geom_pos_in: wp.array(dtype=Any),
    geom_quat_in: wp.array(dtype=Any),
    geom_grid_in: wp.array(dtype=wp.int32),
    grid_values_in: wp.array(dtype=wp.float32),
    grid_origin_in: wp.array(dtype=wp.vec3),
    grid_spacing_in: wp.array(dtype=wp.float32),
    grid_dims_in: wp.array(dtype=wp.vec3i),
    grid_offset_in: wp.array(dtype=wp.int32),
    geom_hfield_in: wp.array(dtype=wp.int32),
    hfield_heights_in: wp.array(dtype=wp.float32),
    hfield_shape_in: wp.array(dtype=wp.vec2i),
    hfield_extent_in: wp.array(dtype=wp.vec4),
    hfield_offset_in: wp.array(dtype=wp.int32),
    hfield_reach_in: wp.array(dtype=wp.float32),
    # data in
    link_pos_in: wp.array2d(dtype=Any),
    link_quat_in: wp.array2d(dtype=Any),
    pos0_in: wp.array2d(dtype=Any),
    # data out
    count_out: wp.array2d(dtype=wp.int32),
    warm_ok_out: wp.array2d(dtype=wp.int32),
):
    e, q = wp.tid()
    i = surface_in[q]
    x = v3d(pos0_in[e, i])
    cnt = int(0)
    for g in range(geom_type_in.shape[0]):
        gp, gq = geom_frame(g, e, geom_link_in, geom_pos_in, geom_quat_in, link_pos_in, link_quat_in)
        phi, n = geom_query_any(g, x, gp, gq, geom_type_in[g], geom_size_in[g], geom_grid_in, grid_values_in,
                                grid_origin_in, grid_spacing_in, grid_dims_in, grid_offset_in, geom_hfield_in,
                                hfield_heights_in, hfield_shape_in, hfield_extent_in, hfield_offset_in,
                                hfield_reach_in)
        if phi < margin:
            cnt = cnt + 1
    count_out[e, q] = cnt
    if cnt == 0:
        warm_ok_out[e, i] = 0


@wp.kernel
def scan_contacts(
    # model in
    capacity: int,
    # data in
    count_in: wp.array2d(dtype=wp.int32),
    # data out
    off_c_out: wp.array2d(dtype=wp.int32),
    off_v_out: wp.array2d(dtype=wp.int32),
    n_contacts_out: wp.array(dtype=wp.int32),
    n_verts_out: wp.array(dtype=wp.int32),
    overflow_out: wp.array(dtype=wp.int32),
    overflow_step_out: wp.array(dtype=wp.int32),
):
    """Exclusive scans of the per-vertex counts; n_contacts ≤ capacity, overflow = what did not fit
    (also the step's largest, restarted by ``first`` in the coupler's step_stats)."""
    e = wp.tid()
    tc = int(0)
    tv = int(0)
    for q in range(count_in.shape[1]):
        c = count_in[e, q]
        off_c_out[e, q] = tc
        off_v_out[e, q] = tv
        if c > 0 and tc < capacity:
            tv = tv + 1
        tc = tc + c
    n_contacts_out[e] = wp.min(tc, capacity)
    n_verts_out[e] = tv
    over = wp.max(tc - capacity, 0)
    overflow_out[e] = over
    overflow_step_out[e] = wp.max(overflow_step_out[e], over)


@wp.kernel
def fill_contacts(
    # model in
    margin: wp.float64,
    k_fem: wp.float64,
    tau_fem: wp.float64,
    mu_fem: wp.float64,
    geom_k_in: wp.array(dtype=wp.float64),
    geom_tau_in: wp.array(dtype=wp.float64),
    surface_in: wp.array(dtype=wp.int32),
    geom_link_in: wp.array(dtype=wp.int32),
    geom_type_in: wp.array(dtype=wp.int32),
    geom_size_in: wp.array(dtype=Any),
    geom_pos_in: wp.array(dtype=Any),
    geom_quat_in: wp.array(dtype=Any),
    geom_mu_in: wp.array(dtype=Any),
    geom_grid_in: wp.array(dtype=wp.int32),
    grid_values_in: wp.array(dtype=wp.float32),
    grid_origin_in: wp.array(dtype=wp.vec3),
    grid_spacing_in: wp.array(dtype=wp.float32),
    grid_dims_in: wp.array(dtype=wp.vec3i),
    grid_offset_in: wp.array(dtype=wp.int32),
    geom_hfield_in: wp.array(dtype=wp.int32),
    hfield_heights_in: wp.array(dtype=wp.float32),
    hfield_shape_in: wp.array(dtype=wp.vec2i),
    hfield_extent_in: wp.array(dtype=wp.vec4),
    hfield_offset_in: wp.array(dtype=wp.int32),
    hfield_reach_in: wp.array(dtype=wp.float32),
    # data in
    link_pos_in: wp.array2d(dtype=Any),
    link_quat_in: wp.array2d(dtype=Any),
    pos0_in: wp.array2d(dtype=Any),
    vel_in: wp.array2d(dtype=Any),
    mass_in: wp.array2d(dtype=Any),
    fixed_in: wp.array2d(dtype=wp.int32),
    count_in: wp.array2d(dtype=wp.int32),
    off_c_in: wp.array2d(dtype=wp.int32),
    off_v_in: wp.array2d(dtype=wp.int32),
    # data out
    c_vslot_out: wp.array2d(dtype=wp.int32),
    c_geom_out: wp.array2d(dtype=wp.int32),
    c_link_out: wp.array2d(dtype=wp.int32),
    c_dist_out: wp.array2d(dtype=wp.float64),
    c_pos_out: wp.array2d(dtype=wp.vec3d),
    c_frame_out: wp.array2d(dtype=wp.mat33d),
    c_k_out: wp.array2d(dtype=wp.float64),
    c_tau_out: wp.array2d(dtype=wp.float64),
    c_mu_out: wp.array2d(dtype=wp.float64),
    v_index_out: wp.array2d(dtype=wp.int32),
    v_first_out: wp.array2d(dtype=wp.int32),
    v_count_out: wp.array2d(dtype=wp.int32),
    v_mass_out: wp.array2d(dtype=wp.float64),
    v_minv_out: wp.array2d(dtype=wp.float64),
    v_us_out: wp.array2d(dtype=wp.vec3d),
):
    e, q = wp.tid()
    cap = c_dist_out.shape[1]
    cnt = count_in[e, q]
    c = off_c_in[e, q]
    if cnt == 0 or c >= cap:
        return
    s = off_v_in[e, q]
    i = surface_in[q]
    x = v3d(pos0_in[e, i])
    m = wp.float64(mass_in[e, i])
    v_index_out[e, s] = i
    v_first_out[e, s] = c
    v_count_out[e, s] = wp.min(cnt, cap - c)
    v_mass_out[e, s] = m
    minv = wp.float64(1.0) / m
    if fixed_in[e, i] != 0:
        minv = wp.float64(0.0)
    v_minv_out[e, s] = minv
    v_us_out[e, s] = v3d(vel_in[e, i])
    for g in range(geom_type_in.shape[0]):
        if c >= cap:
            break
        gp, gq = geom_frame(g, e, geom_link_in, geom_pos_in, geom_quat_in, link_pos_in, link_quat_in)
        phi, n = geom_query_any(g, x, gp, gq, geom_type_in[g], geom_size_in[g], geom_grid_in, grid_values_in,
                                grid_origin_in, grid_spacing_in, grid_dims_in, grid_offset_in, geom_hfield_in,
                                hfield_heights_in, hfield_shape_in, hfield_extent_in, hfield_offset_in,
                                hfield_reach_in)
        if phi < margin:
            c_vslot_out[e, c] = s
            c_geom_out[e, c] = g
            c_link_out[e, c] = geom_link_in[g]
            c_dist_out[e, c] = phi
            c_pos_out[e, c] = x - n * (wp.float64(0.5) * phi)
            c_frame_out[e, c] = tangent_frame(n)
            # the pair: stiffness in series (inf: the other side's), τ_d summed, μ = 2μ_Aμ_B/(μ_A + μ_B)
            k_geom = geom_k_in[g]
            k = k_geom * k_fem / (k_geom + k_fem)
            if wp.isinf(k_geom):
                k = k_fem
            if wp.isinf(k_fem):
                k = k_geom
            c_k_out[e, c] = k
            c_tau_out[e, c] = geom_tau_in[g] + tau_fem
            mg = wp.float64(geom_mu_in[g])
            mu = wp.float64(0.0)
            if mg + mu_fem > wp.float64(0.0):
                mu = wp.float64(2.0) * mg * mu_fem / (mg + mu_fem)
            c_mu_out[e, c] = mu
            c = c + 1


@wp.kernel
def point_jacobian(
    # model in
    dof_parent_in: wp.array(dtype=wp.int32),
    link_dof_last_in: wp.array(dtype=wp.int32),
    # data in
    cdof_w_in: wp.array2d(dtype=Any),
    cdof_v_in: wp.array2d(dtype=Any),
    dof_ref_in: wp.array2d(dtype=Any),
    n_contacts_in: wp.array(dtype=wp.int32),
    c_link_in: wp.array2d(dtype=wp.int32),
    c_pos_in: wp.array2d(dtype=wp.vec3d),
    c_frame_in: wp.array2d(dtype=wp.mat33d),
    # data out
    jac_out: wp.array3d(dtype=wp.float64),
):
    """Rows 3c + r: frame row r · (velocity of the point p fixed to the contact's link) per dof."""
    e, c = wp.tid()
    if c >= n_contacts_in[e]:
        return
    nv = jac_out.shape[2]
    p = c_pos_in[e, c]
    fr = c_frame_in[e, c]
    for r in range(3):
        for j in range(nv):
            jac_out[e, 3 * c + r, j] = wp.float64(0.0)
    d = link_dof_last_in[c_link_in[e, c]]
    while d >= 0:
        u = v3d(cdof_v_in[e, d]) + wp.cross(v3d(cdof_w_in[e, d]), p - v3d(dof_ref_in[e, d]))
        for r in range(3):
            jac_out[e, 3 * c + r, d] = jac_out[e, 3 * c + r, d] + wp.dot(fr[r], u)
        d = dof_parent_in[d]


@wp.kernel
def apply_velocities(
    # data in
    n_verts_in: wp.array(dtype=wp.int32),
    v_index_in: wp.array2d(dtype=wp.int32),
    v_u_in: wp.array2d(dtype=wp.vec3d),
    # data out
    vel_out: wp.array2d(dtype=Any),
):
    e, s = wp.tid()
    if s >= n_verts_in[e]:
        return
    i = v_index_in[e, s]
    u = v_u_in[e, s]
    vel_out[e, i] = type(vel_out[e, i])(type(vel_out[e, i][0])(u[0]), type(vel_out[e, i][0])(u[1]),
                                         type(vel_out[e, i][0])(u[2]))


_declared: set = set()


def declare_overloads(precision: str) -> None:
    """The overloads of the scene's precision (see kernels/sap.py ``declare_overloads``)."""
    if precision in _declared:
        return
    s = wp.float64 if precision == "64" else wp.float32
    V, Q = wp.types.vector(3, s), wp.types.quaternion(s)
    a1v, a1q, a1 = wp.array(dtype=V), wp.array(dtype=Q), wp.array(dtype=s)
    a2v, a2q, a2 = wp.array2d(dtype=V), wp.array2d(dtype=Q), wp.array2d(dtype=s)
    geoms = {"geom_size_in": a1v, "geom_pos_in": a1v, "geom_quat_in": a1q}
    wp.overload(count_contacts, {**geoms, "link_pos_in": a2v, "link_quat_in": a2q, "pos0_in": a2v})
    wp.overload(fill_contacts, {**geoms, "geom_mu_in": a1, "link_pos_in": a2v, "link_quat_in": a2q, "pos0_in": a2v,
                                "vel_in": a2v, "mass_in": a2})
    wp.overload(point_jacobian, {"cdof_w_in": a2v, "cdof_v_in": a2v, "dof_ref_in": a2v})
    wp.overload(apply_velocities, {"vel_out": a2v})
    _declared.add(precision)
