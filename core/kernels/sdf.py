"""Signed distance functions of primitives, in the primitive's own frame (float32).

Positive outside, negative inside; each returns the distance and the outward unit normal (the SDF
gradient). Codes: ``polyphys.description.GeomType`` (plane 0, sphere 1, capsule 2, cylinder 3, box 4,
ellipsoid 5; mesh 6 has a grid SDF, heightfield 7 its own closest-point SDF, below). Sizes are
MuJoCo half sizes.
"""

import warp as wp

from ..description import GeomType  # MESH: no analytic SDF, a grid (sdf_grid_query); HFIELD: sdf_hfield

wp.set_module_options({"enable_backward": False})   # nothing here is differentiated


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
    if geom_type == GeomType.PLANE:
        return p[2]
    if geom_type == GeomType.SPHERE:
        return sdf_sphere(p, size[0])
    if geom_type == GeomType.CAPSULE:
        return sdf_capsule(p, size[0], size[1])
    if geom_type == GeomType.CYLINDER:
        return sdf_cylinder(p, size[0], size[1])
    if geom_type == GeomType.BOX:
        return sdf_box(p, size)
    if geom_type == GeomType.ELLIPSOID:
        return sdf_ellipsoid(p, size)
    return 1.0e10


@wp.func
def sdf_normal(geom_type: int, size: wp.vec3, p: wp.vec3):
    """Outward unit normal: analytic for plane/sphere/capsule, central differences otherwise."""
    if geom_type == GeomType.PLANE:
        return wp.vec3(0.0, 0.0, 1.0)
    if geom_type == GeomType.SPHERE:
        if wp.length(p) > 1.0e-9:
            return wp.normalize(p)
        return wp.vec3(0.0, 0.0, 1.0)
    if geom_type == GeomType.CAPSULE:
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


# -- heightfields: closest point on the triangulated surface in a neighbourhood -----------------------
# Heightfield h: shape (nrow, ncol) surface heights (geom frame) flat from offset (r·ncol + c), sample
# (r, c) at x = -rx + c·dx, y = -ry + r·dy; every cell cut along its (r, c)-(r+1, c+1) diagonal as
# MuJoCo and the rigid collision do; the solid reaches down to z = -z_bottom. Packed by
# ``polyphys.sdf_grid.pack_height_fields``.

@wp.func
def closest_point_on_triangle(p: wp.vec3, a: wp.vec3, b: wp.vec3, c: wp.vec3):
    """The point of triangle abc closest to p (Ericson, Real-Time Collision Detection 5.1.5)."""
    ab = b - a
    ac = c - a
    ap = p - a
    d1 = wp.dot(ab, ap)
    d2 = wp.dot(ac, ap)
    if d1 <= 0.0 and d2 <= 0.0:
        return a
    bp = p - b
    d3 = wp.dot(ab, bp)
    d4 = wp.dot(ac, bp)
    if d3 >= 0.0 and d4 <= d3:
        return b
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        return a + ab * (d1 / (d1 - d3))
    cp = p - c
    d5 = wp.dot(ab, cp)
    d6 = wp.dot(ac, cp)
    if d6 >= 0.0 and d5 <= d6:
        return c
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        return a + ac * (d2 / (d2 - d6))
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        return b + (c - b) * ((d4 - d3) / ((d4 - d3) + (d5 - d6)))
    inv = 1.0 / (va + vb + vc)
    return a + ab * (vb * inv) + ac * (vc * inv)


@wp.func
def _hf_z(heights: wp.array(dtype=float), offset: int, ncol: int, r: int, c: int):
    return heights[offset + r * ncol + c]


@wp.func
def sdf_hfield(heights: wp.array(dtype=float), offset: int, shape: wp.vec2i, extent: wp.vec4, reach: float,
               p: wp.vec3):
    """Signed distance and outward normal of a heightfield solid at ``p`` (geom frame), as vec4(d, n).

    The solid: below the triangulated surface over the footprint [-rx, rx] × [-ry, ry], down to
    z = -z_bottom (``extent`` = (rx, ry, z_bottom, highest surface z)). d = max(d_s, d_b): d_s the
    distance to the closest point of the surface triangles of the cells within ``reach`` (horizontal)
    of p's projection onto the footprint, signed by p against the surface height there; d_b the SDF
    of the footprint prism z ≥ -z_bottom (walls and bottom). Exact (to float32) wherever |d| ≤
    reach — the closest surface point then lies in the searched cells — except beside the footprint
    (outside it) below a boundary where a taller wall part is nearer than the surface (there: within
    [d_b, d]); beyond reach |d| > reach (an upper bound, or outside the bounding box its lower bound).
    The normal is the closest face's normal when the closest point is inside that face (or p is
    within 1e-5 cells of the surface), (p - closest point)/d with the sign of d when it is on an
    edge or vertex, and the wall or bottom normal where d_b wins."""
    nr = shape[0]
    nc = shape[1]
    rx = extent[0]
    ry = extent[1]
    zb = extent[2]
    dx = 2.0 * rx / float(nc - 1)
    dy = 2.0 * ry / float(nr - 1)
    # d_b: the footprint prism, unbounded above (its SDF and gradient)
    qx = wp.abs(p[0]) - rx
    qy = wp.abs(p[1]) - ry
    qz = -zb - p[2]
    sx = wp.where(p[0] < 0.0, -1.0, 1.0)
    sy = wp.where(p[1] < 0.0, -1.0, 1.0)
    qo = wp.vec3(sx * wp.max(qx, 0.0), sy * wp.max(qy, 0.0), -wp.max(qz, 0.0))
    out_len = wp.length(qo)
    db = out_len + wp.min(wp.max(qx, wp.max(qy, qz)), 0.0)
    nb = wp.vec3(0.0, 0.0, -1.0)
    if out_len > 0.0:
        nb = qo / out_len
    elif qx >= qy and qx >= qz:
        nb = wp.vec3(sx, 0.0, 0.0)
    elif qy >= qz:
        nb = wp.vec3(0.0, sy, 0.0)
    # far above the bounding box: its distance is a lower bound > reach; skip the search
    above = p[2] - extent[3]
    if above > reach:
        dbox = wp.length(wp.vec3(wp.max(qx, 0.0), wp.max(qy, 0.0), above))
        nbox = wp.vec3(sx * wp.max(qx, 0.0), sy * wp.max(qy, 0.0), above) / dbox
        return wp.vec4(dbox, nbox[0], nbox[1], nbox[2])
    if db > reach:
        return wp.vec4(db, nb[0], nb[1], nb[2])
    # surface height at the projection onto the footprint (the sign of d_s)
    cx = wp.clamp(p[0], -rx, rx)
    cy = wp.clamp(p[1], -ry, ry)
    u = (cx + rx) / dx
    v = (cy + ry) / dy
    c = wp.clamp(int(wp.floor(u)), 0, nc - 2)
    r = wp.clamp(int(wp.floor(v)), 0, nr - 2)
    fu = u - float(c)
    fv = v - float(r)
    z00 = _hf_z(heights, offset, nc, r, c)
    z01 = _hf_z(heights, offset, nc, r, c + 1)
    z10 = _hf_z(heights, offset, nc, r + 1, c)
    z11 = _hf_z(heights, offset, nc, r + 1, c + 1)
    hs = float(0.0)
    if fu >= fv:
        hs = z00 + fu * (z01 - z00) + fv * (z11 - z01)
    else:
        hs = z00 + fv * (z10 - z00) + fu * (z11 - z10)
    sgn = wp.where(p[2] - hs < 0.0, -1.0, 1.0)
    # closest point on the triangles of the cells within reach of the projection
    c0 = wp.clamp(int(wp.floor((cx - reach + rx) / dx)), 0, nc - 2)
    c1 = wp.clamp(int(wp.floor((cx + reach + rx) / dx)), 0, nc - 2)
    r0 = wp.clamp(int(wp.floor((cy - reach + ry) / dy)), 0, nr - 2)
    r1 = wp.clamp(int(wp.floor((cy + reach + ry) / dy)), 0, nr - 2)
    best = float(1.0e30)
    q = p
    fn = wp.vec3(0.0, 0.0, 1.0)
    for rr in range(r0, r1 + 1):
        y0 = -ry + float(rr) * dy
        for cc in range(c0, c1 + 1):
            x0 = -rx + float(cc) * dx
            a = wp.vec3(x0, y0, _hf_z(heights, offset, nc, rr, cc))
            b = wp.vec3(x0 + dx, y0, _hf_z(heights, offset, nc, rr, cc + 1))
            e = wp.vec3(x0 + dx, y0 + dy, _hf_z(heights, offset, nc, rr + 1, cc + 1))
            f = wp.vec3(x0, y0 + dy, _hf_z(heights, offset, nc, rr + 1, cc))
            q1 = closest_point_on_triangle(p, a, b, e)           # (r, c), (r, c+1), (r+1, c+1)
            d1 = wp.length_sq(p - q1)
            if d1 < best:
                best = d1
                q = q1
                fn = wp.cross(b - a, e - a)
            q2 = closest_point_on_triangle(p, a, e, f)           # (r, c), (r+1, c+1), (r+1, c)
            d2 = wp.length_sq(p - q2)
            if d2 < best:
                best = d2
                q = q2
                fn = wp.cross(e - a, f - a)
    dmin = wp.sqrt(best)
    ds = sgn * dmin
    ns = wp.normalize(fn)
    # off a face's interior (an edge or vertex is closest) the gradient is (p - q)/d; in the interior
    # it is the face normal, taken as is (no round-off from q)
    if dmin > 1.0e-5 * wp.min(dx, dy) and wp.abs(wp.dot(p - q, ns)) < (1.0 - 1.0e-6) * dmin:
        ns = (p - q) * (sgn / dmin)
    if db > ds:
        return wp.vec4(db, nb[0], nb[1], nb[2])
    return wp.vec4(ds, ns[0], ns[1], ns[2])


@wp.kernel
def query_height_fields(
    # Model:
    heights: wp.array(dtype=float),
    shape: wp.array(dtype=wp.vec2i),
    extent: wp.array(dtype=wp.vec4),
    offset: wp.array(dtype=wp.int32),
    reach: wp.array(dtype=float),
    # Data in:
    hfield_in: wp.array(dtype=wp.int32),
    points_in: wp.array(dtype=wp.vec3),
    # Data out:
    result_out: wp.array(dtype=wp.vec4),
):
    """Host-side queries (tests, tools): vec4(d, n) of heightfield ``hfield_in[t]`` at ``points_in[t]``."""
    t = wp.tid()
    h = hfield_in[t]
    result_out[t] = sdf_hfield(heights, offset[h], shape[h], extent[h], reach[h], points_in[t])
