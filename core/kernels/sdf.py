"""Signed distance functions of primitives, in the primitive's own frame (float32).

Positive outside, negative inside; each returns the distance and the outward unit normal (the SDF
gradient). Codes as in ``polyphys.geometry`` (plane 0, sphere 1, capsule 2, cylinder 3, box 4,
ellipsoid 5; mesh 6 has a grid SDF, below). Sizes are MuJoCo half sizes.
"""

import warp as wp

GEOM_PLANE = wp.constant(0)
GEOM_SPHERE = wp.constant(1)
GEOM_CAPSULE = wp.constant(2)
GEOM_CYLINDER = wp.constant(3)
GEOM_BOX = wp.constant(4)
GEOM_ELLIPSOID = wp.constant(5)
GEOM_MESH = wp.constant(6)         # no analytic SDF: a grid (sdf_grid_query)


@wp.func
def sdf_sphere(p: wp.vec3, r: float):
    return wp.length(p) - r


@wp.func
def sdf_capsule(p: wp.vec3, r: float, hl: float):
    c = wp.vec3(0.0, 0.0, wp.clamp(p[2], -hl, hl))
    return wp.length(p - c) - r


@wp.func
def sdf_cylinder(p: wp.vec3, r: float, hl: float):
    dx = wp.sqrt(p[0] * p[0] + p[1] * p[1]) - r
    dz = wp.abs(p[2]) - hl
    outside = wp.length(wp.vec2(wp.max(dx, 0.0), wp.max(dz, 0.0)))
    return outside + wp.min(wp.max(dx, dz), 0.0)


@wp.func
def sdf_box(p: wp.vec3, half: wp.vec3):
    q = wp.vec3(wp.abs(p[0]) - half[0], wp.abs(p[1]) - half[1], wp.abs(p[2]) - half[2])
    outside = wp.length(wp.vec3(wp.max(q[0], 0.0), wp.max(q[1], 0.0), wp.max(q[2], 0.0)))
    return outside + wp.min(wp.max(q[0], wp.max(q[1], q[2])), 0.0)


@wp.func
def sdf_ellipsoid(p: wp.vec3, radii: wp.vec3):
    # Inigo Quilez's bound: exact on the surface, a close estimate elsewhere
    k0 = wp.length(wp.cw_div(p, radii))
    k1 = wp.length(wp.cw_div(p, wp.cw_mul(radii, radii)))
    if k1 < 1.0e-12:
        return -wp.min(radii[0], wp.min(radii[1], radii[2]))
    return k0 * (k0 - 1.0) / k1


@wp.func
def sdf_primitive(geom_type: int, size: wp.vec3, p: wp.vec3):
    if geom_type == GEOM_PLANE:
        return p[2]
    if geom_type == GEOM_SPHERE:
        return sdf_sphere(p, size[0])
    if geom_type == GEOM_CAPSULE:
        return sdf_capsule(p, size[0], size[1])
    if geom_type == GEOM_CYLINDER:
        return sdf_cylinder(p, size[0], size[1])
    if geom_type == GEOM_BOX:
        return sdf_box(p, size)
    if geom_type == GEOM_ELLIPSOID:
        return sdf_ellipsoid(p, size)
    return 1.0e10


@wp.func
def sdf_normal(geom_type: int, size: wp.vec3, p: wp.vec3):
    """Outward unit normal: analytic for plane/sphere/capsule, central differences otherwise."""
    if geom_type == GEOM_PLANE:
        return wp.vec3(0.0, 0.0, 1.0)
    if geom_type == GEOM_SPHERE:
        if wp.length(p) > 1.0e-9:
            return wp.normalize(p)
        return wp.vec3(0.0, 0.0, 1.0)
    if geom_type == GEOM_CAPSULE:
        d = p - wp.vec3(0.0, 0.0, wp.clamp(p[2], -size[1], size[1]))
        if wp.length(d) > 1.0e-9:
            return wp.normalize(d)
        return wp.vec3(1.0, 0.0, 0.0)
    eps = 1.0e-4 * wp.max(size[0], wp.max(size[1], size[2]))
    ex = wp.vec3(eps, 0.0, 0.0)
    ey = wp.vec3(0.0, eps, 0.0)
    ez = wp.vec3(0.0, 0.0, eps)
    g = wp.vec3(sdf_primitive(geom_type, size, p + ex) - sdf_primitive(geom_type, size, p - ex),
                sdf_primitive(geom_type, size, p + ey) - sdf_primitive(geom_type, size, p - ey),
                sdf_primitive(geom_type, size, p + ez) - sdf_primitive(geom_type, size, p - ez))
    if wp.length(g) > 1.0e-12:
        return wp.normalize(g)
    return wp.vec3(0.0, 0.0, 1.0)


# -- grid SDFs (meshes): a packed set of regular grids in the geom frame ----------------------------
# Grid g holds dims[g] = (nx, ny, nz) node values at origin[g] + (i, j, k)·spacing[g], stored flat
# from offset[g] (index offset + (i·ny + j)·nz + k). Built by ``polyphys.sdf_grid``.

@wp.func
def _grid_node(values: wp.array(dtype=float), offset: int, dims: wp.vec3i, i: int, j: int, k: int):
    return values[offset + (i * dims[1] + j) * dims[2] + k]


@wp.func
def sdf_grid_query(values: wp.array(dtype=float), origin: wp.vec3, spacing: float, dims: wp.vec3i,
                   offset: int, p: wp.vec3):
    """Signed distance and outward normal of a grid SDF at ``p`` (geom frame), as vec4(d, n).

    Inside the grid box: trilinear interpolation of the node values, the normal the normalized
    gradient of that interpolant. Outside: the distance to the grid box plus the value at the
    nearest box point (an upper bound of the true distance, since an SDF is 1-Lipschitz), the
    normal pointing from that box point to ``p``."""
    u = (p - origin) / spacing
    hx = float(dims[0] - 1)
    hy = float(dims[1] - 1)
    hz = float(dims[2] - 1)
    uc = wp.vec3(wp.clamp(u[0], 0.0, hx), wp.clamp(u[1], 0.0, hy), wp.clamp(u[2], 0.0, hz))
    i = wp.min(int(wp.floor(uc[0])), dims[0] - 2)
    j = wp.min(int(wp.floor(uc[1])), dims[1] - 2)
    k = wp.min(int(wp.floor(uc[2])), dims[2] - 2)
    tx = uc[0] - float(i)
    ty = uc[1] - float(j)
    tz = uc[2] - float(k)
    c000 = _grid_node(values, offset, dims, i, j, k)
    c001 = _grid_node(values, offset, dims, i, j, k + 1)
    c010 = _grid_node(values, offset, dims, i, j + 1, k)
    c011 = _grid_node(values, offset, dims, i, j + 1, k + 1)
    c100 = _grid_node(values, offset, dims, i + 1, j, k)
    c101 = _grid_node(values, offset, dims, i + 1, j, k + 1)
    c110 = _grid_node(values, offset, dims, i + 1, j + 1, k)
    c111 = _grid_node(values, offset, dims, i + 1, j + 1, k + 1)
    # interpolate along z, then y, then x
    c00 = c000 + (c001 - c000) * tz
    c01 = c010 + (c011 - c010) * tz
    c10 = c100 + (c101 - c100) * tz
    c11 = c110 + (c111 - c110) * tz
    c0 = c00 + (c01 - c00) * ty
    c1 = c10 + (c11 - c10) * ty
    d = c0 + (c1 - c0) * tx
    gx = c1 - c0
    gy = (c01 - c00) * (1.0 - tx) + (c11 - c10) * tx
    dz0 = (c001 - c000) * (1.0 - ty) + (c011 - c010) * ty
    dz1 = (c101 - c100) * (1.0 - ty) + (c111 - c110) * ty
    gz = dz0 * (1.0 - tx) + dz1 * tx
    n = wp.vec3(gx, gy, gz)
    e = (u - uc) * spacing
    el = wp.length(e)
    if el > 0.0:
        d = d + el
        n = e
    nl = wp.length(n)
    if nl > 1.0e-20:
        n = n / nl
    else:
        n = wp.vec3(0.0, 0.0, 1.0)
    return wp.vec4(d, n[0], n[1], n[2])


@wp.kernel
def mesh_sdf_grid(
    # Model:
    mesh: wp.uint64,
    tri_indices: wp.array(dtype=wp.int32),
    face_normal: wp.array(dtype=wp.vec3),
    edge_normal: wp.array(dtype=wp.vec3),
    vertex_normal: wp.array(dtype=wp.vec3),
    origin: wp.vec3,
    spacing: float,
    dims: wp.vec3i,
    max_dist: float,
    winding: int,
    # Data out:
    values_out: wp.array(dtype=float),
):
    """Signed distance to a triangle mesh at every grid node: the distance to the closest point;
    the sign from the angle-weighted pseudo-normal of the closest feature (``winding`` 0: exact for
    a closed, consistently oriented mesh — Bærentzen & Aanæs 2005; face, edge (sum of the two face
    normals, per face corner opposite it) or vertex normal by the closest point's barycentric
    coordinates) or from the generalized winding number (``winding`` 1: open or self-intersecting
    meshes, a few times slower)."""
    i, j, k = wp.tid()
    p = origin + wp.vec3(float(i), float(j), float(k)) * spacing
    d = max_dist
    if winding != 0:
        qw = wp.mesh_query_point_sign_winding_number(mesh, p, max_dist)
        if qw.result:
            d = qw.sign * wp.length(p - wp.mesh_eval_position(mesh, qw.face, qw.u, qw.v))
    else:
        q = wp.mesh_query_point_no_sign(mesh, p, max_dist)
        if q.result:
            e = p - wp.mesh_eval_position(mesh, q.face, q.u, q.v)
            b = wp.vec3(q.u, q.v, 1.0 - q.u - q.v)      # weights of the face's vertices 0, 1, 2
            f = q.face
            n = face_normal[f]
            eps = 1.0e-6
            on_vertex = int(0)
            for c in range(3):
                if b[c] >= 1.0 - eps:
                    n = vertex_normal[tri_indices[f * 3 + c]]
                    on_vertex = 1
            if on_vertex == 0:
                for c in range(3):
                    if b[c] <= eps:
                        n = edge_normal[f * 3 + c]
            d = wp.length(e)
            if wp.dot(e, n) < 0.0:
                d = -d
    values_out[(i * dims[1] + j) * dims[2] + k] = d


@wp.kernel
def query_sdf_grids(
    # Model:
    values: wp.array(dtype=float),
    origin: wp.array(dtype=wp.vec3),
    spacing: wp.array(dtype=float),
    dims: wp.array(dtype=wp.vec3i),
    offset: wp.array(dtype=wp.int32),
    # Data in:
    grid_in: wp.array(dtype=wp.int32),
    points_in: wp.array(dtype=wp.vec3),
    # Data out:
    result_out: wp.array(dtype=wp.vec4),
):
    """Host-side queries (tests, tools): vec4(d, n) of grid ``grid_in[t]`` at ``points_in[t]``."""
    t = wp.tid()
    g = grid_in[t]
    result_out[t] = sdf_grid_query(values, origin[g], spacing[g], dims[g], offset[g], points_in[t])
