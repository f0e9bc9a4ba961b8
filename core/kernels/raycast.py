"""Warp kernels of the ray caster (docs/cameras.md): ray–primitive intersections, the closest hit
over a scene's rigid geoms, meshes, heightfields, particles and surface triangles, shading, and the
per-partition preparation launches (geom poses and bounds, particle grid, triangle bounds).

Everything is float32 (images, depths and hit points are float32 quantities); link poses of a
float64 solver are converted when they are read. Front faces only: a ray that starts inside a
primitive, mesh or heightfield does not see it from inside (as a renderer culls back faces); surface
triangles (cloth, FEM surfaces) are two-sided; planes are seen from their +z side only.

Acceleration structures, one per env partition: rigid geoms (but planes) in a Warp BVH grouped by
env (refit every frame; traversal from the env's group root, the query's max distance shrinking
with the closest hit so far); particles in a Warp hash grid grouped by env, walked cell by cell
along the ray (3D DDA, Amanatides & Woo 1987, "A fast voxel traversal algorithm for ray tracing")
inside the env's particle bounding box; surface triangles in a BVH grouped by env. Mesh geoms and
heightfields are static ``wp.Mesh`` objects in their own frame.
"""

from typing import Any

import warp as wp

from ..description import GeomType

wp.set_module_options({"enable_backward": False})


HIT_NONE = wp.constant(0)
HIT_GEOM = wp.constant(1)
HIT_PARTICLE = wp.constant(2)
HIT_TRIANGLE = wp.constant(3)

BIG = wp.constant(1.0e30)

LIGHT_DIRECTIONAL = wp.constant(0)
LIGHT_POINT = wp.constant(1)

COLOR_OBJECT = wp.constant(0)      # particles: their entity's colour
COLOR_SPEED = wp.constant(1)       # particles: |v| through the colour map
COLOR_FIELD = wp.constant(2)       # particles: a host-supplied per-particle value through the colour map


@wp.struct
class Hit:
    t: float                      # distance along the unit ray direction
    kind: int                     # HIT_*
    index: int                    # geom slot, particle index (env-local) or triangle index
    n: wp.vec3                    # unit normal (world), not yet turned towards the ray


@wp.struct
class GeomModel:
    """Rigid geoms of the scene (every env the same): type, size, mesh id (wp.Mesh in the geom frame
    for meshes and heightfields, else 0), scene link id, drawable object id; planes listed apart;
    ``bvh_geom[b]``: the geom of BVH item b (item e·n_bvh + b of env e)."""

    n: int
    type: wp.array(dtype=int)
    size: wp.array(dtype=wp.vec3)
    mesh: wp.array(dtype=wp.uint64)
    link: wp.array(dtype=int)
    obj: wp.array(dtype=int)
    planes: wp.array(dtype=int)
    n_planes: int
    bvh_geom: wp.array(dtype=int)
    n_bvh: int


@wp.struct
class GeomData:
    """One partition's geom world poses (env-local rows) and the id of its grouped BVH (0: none)."""

    pos: wp.array2d(dtype=wp.vec3)
    rot: wp.array2d(dtype=wp.mat33)
    bvh: wp.uint64


@wp.struct
class ParticleModel:
    """Particles drawn as spheres (every env the same count): radius, object id; the grid's cell
    width (>= the largest radius, so a sphere reaching a cell has its centre in a neighbour)."""

    n: int
    radius: wp.array(dtype=float)
    obj: wp.array(dtype=int)
    cell: float


@wp.struct
class ParticleData:
    """One partition's particles: positions and velocities (flat, env-local e·n + i), a value per
    particle for colouring by a field, each env's bounding box of its active particles (grown by the
    largest radius; empty: lo > hi) and the grouped hash grid (0: none)."""

    pos: wp.array(dtype=wp.vec3)
    vel: wp.array(dtype=wp.vec3)
    field: wp.array(dtype=float)
    lo: wp.array(dtype=wp.vec3)
    hi: wp.array(dtype=wp.vec3)
    grid: wp.uint64


@wp.struct
class SurfaceModel:
    """Surface triangles (cloth, FEM boundaries; every env the same): vertex indices into the
    partition's flat vertex array (env-local e·n_verts + v), object id per triangle."""

    n: int
    n_verts: int
    tris: wp.array(dtype=wp.vec3i)
    obj: wp.array(dtype=int)


@wp.struct
class SurfaceData:
    verts: wp.array(dtype=wp.vec3)
    bvh: wp.uint64


@wp.struct
class Objects:
    """Per drawable object (a geom, a particle entity, a surface entity): segmentation ids (entity
    uid, scene link id, the object id itself is the geom id), colour and checker texture."""

    entity: wp.array(dtype=int)
    link: wp.array(dtype=int)
    rgba: wp.array(dtype=wp.vec4)
    rgb2: wp.array(dtype=wp.vec3)
    checker: wp.array(dtype=float)      # square side (m); 0: plain colour


@wp.struct
class Rays:
    """A set of rays of several sensors, cast in one launch (ray r belongs to sensor ray_sensor[r]
    and is its element ray_elem[r]; direction and origin in the sensor frame). Per sensor: range,
    no-hit value, excluded link (rays ignore its geoms; -1: none), spin (rad per sensor tick about
    the sensor z axis), output columns (-1: not written), segmentation mode (0 entity, 1 link,
    2 geom), shading (ambient, lights [light_start, light_end), shadows, background), particle
    colouring (COLOR_*, colour-map range)."""

    n: int
    ray_sensor: wp.array(dtype=int)
    ray_elem: wp.array(dtype=int)
    ray_dir: wp.array(dtype=wp.vec3)
    ray_org: wp.array(dtype=wp.vec3)
    min_range: wp.array(dtype=float)
    max_range: wp.array(dtype=float)
    no_hit: wp.array(dtype=float)
    exclude_link: wp.array(dtype=int)
    spin: wp.array(dtype=float)
    col_depth: wp.array(dtype=int)
    col_dist: wp.array(dtype=int)
    col_point: wp.array(dtype=int)
    col_normal: wp.array(dtype=int)
    col_seg: wp.array(dtype=int)
    col_rgb: wp.array(dtype=int)
    seg_mode: wp.array(dtype=int)
    ambient: wp.array(dtype=wp.vec3)
    background: wp.array(dtype=wp.vec3)
    shadows: wp.array(dtype=int)
    light_start: wp.array(dtype=int)
    light_end: wp.array(dtype=int)
    light_type: wp.array(dtype=int)
    light_vec: wp.array(dtype=wp.vec3)        # direction (directional) or position (point)
    light_rgb: wp.array(dtype=wp.vec3)
    light_camera: wp.array(dtype=int)         # 1: direction/position in the sensor frame (a headlight)
    color_mode: wp.array(dtype=int)
    color_lo: wp.array(dtype=float)
    color_hi: wp.array(dtype=float)
    cmap: wp.array(dtype=wp.vec3)


# -- ray–primitive intersections (primitive frame; d unit; entering root only) -------------------------
@wp.func
def hit_none() -> Hit:
    h = Hit()
    h.t = BIG
    h.kind = HIT_NONE
    h.index = -1
    h.n = wp.vec3(0.0, 0.0, 0.0)
    return h


@wp.func
def ray_sphere(o: wp.vec3, d: wp.vec3, r: float) -> wp.vec4:
    """Entering distance and outward normal (vec4(t, n)); t = BIG when missed or o is inside. The
    discriminant r² − |o × d|² has no cancellation of the large terms b² and |o|² (float32)."""
    b = wp.dot(o, d)
    x = wp.cross(o, d)
    disc = r * r - wp.dot(x, x)
    if disc < 0.0 or b > 0.0:
        return wp.vec4(BIG, 0.0, 0.0, 0.0)
    t = -b - wp.sqrt(disc)
    if t < 0.0:
        return wp.vec4(BIG, 0.0, 0.0, 0.0)
    n = (o + d * t) / r
    return wp.vec4(t, n[0], n[1], n[2])


@wp.func
def ray_plane(o: wp.vec3, d: wp.vec3, size: wp.vec3) -> wp.vec4:
    """The z = 0 plane seen from +z; finite where size[0], size[1] > 0 (half extents)."""
    if o[2] <= 0.0 or d[2] >= 0.0:
        return wp.vec4(BIG, 0.0, 0.0, 0.0)
    t = -o[2] / d[2]
    p = o + d * t
    if size[0] > 0.0 and wp.abs(p[0]) > size[0]:
        return wp.vec4(BIG, 0.0, 0.0, 0.0)
    if size[1] > 0.0 and wp.abs(p[1]) > size[1]:
        return wp.vec4(BIG, 0.0, 0.0, 0.0)
    return wp.vec4(t, 0.0, 0.0, 1.0)


@wp.func
def ray_side(o: wp.vec3, d: wp.vec3, r: float, hl: float) -> wp.vec4:
    """The side of the z-axis cylinder of radius r between z = ±hl (entering root)."""
    a = d[0] * d[0] + d[1] * d[1]
    if a < 1.0e-12:
        return wp.vec4(BIG, 0.0, 0.0, 0.0)
    b = o[0] * d[0] + o[1] * d[1]
    cr = o[0] * d[1] - o[1] * d[0]
    disc = a * r * r - cr * cr
    if disc < 0.0 or b > 0.0:
        return wp.vec4(BIG, 0.0, 0.0, 0.0)
    t = (-b - wp.sqrt(disc)) / a
    if t < 0.0:
        return wp.vec4(BIG, 0.0, 0.0, 0.0)
    z = o[2] + t * d[2]
    if wp.abs(z) > hl:
        return wp.vec4(BIG, 0.0, 0.0, 0.0)
    px = o[0] + t * d[0]
    py = o[1] + t * d[1]
    return wp.vec4(t, px / r, py / r, 0.0)


@wp.func
def closer(a: wp.vec4, b: wp.vec4) -> wp.vec4:
    if b[0] < a[0]:
        return b
    return a


@wp.func
def ray_capsule(o: wp.vec3, d: wp.vec3, r: float, hl: float) -> wp.vec4:
    """The union of the side and two spheres: the first entry into the union is the first entry into
    any of them (the side's entry counts only between the caps)."""
    h = ray_side(o, d, r, hl)
    c = wp.vec3(0.0, 0.0, hl)
    s1 = ray_sphere(o - c, d, r)
    s2 = ray_sphere(o + c, d, r)
    return closer(closer(h, s1), s2)


@wp.func
def ray_cylinder(o: wp.vec3, d: wp.vec3, r: float, hl: float) -> wp.vec4:
    h = ray_side(o, d, r, hl)
    if d[2] < 0.0 and o[2] > hl:
        t = (hl - o[2]) / d[2]
        px = o[0] + t * d[0]
        py = o[1] + t * d[1]
        if px * px + py * py <= r * r:
            h = closer(h, wp.vec4(t, 0.0, 0.0, 1.0))
    if d[2] > 0.0 and o[2] < -hl:
        t = (-hl - o[2]) / d[2]
        px = o[0] + t * d[0]
        py = o[1] + t * d[1]
        if px * px + py * py <= r * r:
            h = closer(h, wp.vec4(t, 0.0, 0.0, -1.0))
    return h


@wp.func
def ray_box(o: wp.vec3, d: wp.vec3, s: wp.vec3) -> wp.vec4:
    """Slab test; the entering slab gives the normal."""
    tn = float(-BIG)
    tf = float(BIG)
    ax = int(-1)
    sg = float(0.0)
    for i in range(3):
        if wp.abs(d[i]) < 1.0e-20:
            if wp.abs(o[i]) > s[i]:
                return wp.vec4(BIG, 0.0, 0.0, 0.0)
        else:
            t1 = (-s[i] - o[i]) / d[i]
            t2 = (s[i] - o[i]) / d[i]
            lo = wp.min(t1, t2)
            hi = wp.max(t1, t2)
            if lo > tn:
                tn = lo
                ax = i
                sg = wp.where(d[i] > 0.0, -1.0, 1.0)
            tf = wp.min(tf, hi)
    if tn > tf or tn < 0.0 or ax < 0:
        return wp.vec4(BIG, 0.0, 0.0, 0.0)
    n = wp.vec3(0.0, 0.0, 0.0)
    n[ax] = sg
    return wp.vec4(tn, n[0], n[1], n[2])


@wp.func
def ray_ellipsoid(o: wp.vec3, d: wp.vec3, rad: wp.vec3) -> wp.vec4:
    """The unit sphere after scaling by 1/radii (t is unchanged by the scaling); the discriminant
    |d'|² − |o' × d'|² avoids cancellation."""
    os = wp.cw_div(o, rad)
    ds = wp.cw_div(d, rad)
    a = wp.dot(ds, ds)
    b = wp.dot(os, ds)
    x = wp.cross(os, ds)
    disc = a - wp.dot(x, x)
    if disc < 0.0 or b > 0.0:
        return wp.vec4(BIG, 0.0, 0.0, 0.0)
    t = (-b - wp.sqrt(disc)) / a
    if t < 0.0:
        return wp.vec4(BIG, 0.0, 0.0, 0.0)
    p = o + d * t
    n = wp.normalize(wp.cw_div(p, wp.cw_mul(rad, rad)))
    return wp.vec4(t, n[0], n[1], n[2])


@wp.func
def ray_mesh(mesh: wp.uint64, o: wp.vec3, d: wp.vec3, tmax: float) -> wp.vec4:
    """The closest triangle of a mesh (geom frame); a back face (the ray leaving) is no hit."""
    q = wp.mesh_query_ray(mesh, o, d, tmax)
    if not q.result or q.sign < 0.0:
        return wp.vec4(BIG, 0.0, 0.0, 0.0)
    n = wp.normalize(q.normal)
    return wp.vec4(q.t, n[0], n[1], n[2])


@wp.func
def ray_geom(typ: int, size: wp.vec3, mesh: wp.uint64, o: wp.vec3, d: wp.vec3, tmax: float) -> wp.vec4:
    if typ == GeomType.SPHERE:
        return ray_sphere(o, d, size[0])
    if typ == GeomType.CAPSULE:
        return ray_capsule(o, d, size[0], size[1])
    if typ == GeomType.CYLINDER:
        return ray_cylinder(o, d, size[0], size[1])
    if typ == GeomType.BOX:
        return ray_box(o, d, size)
    if typ == GeomType.ELLIPSOID:
        return ray_ellipsoid(o, d, size)
    if typ == GeomType.PLANE:
        return ray_plane(o, d, size)
    if typ == GeomType.MESH or typ == GeomType.HFIELD:
        if mesh != wp.uint64(0):
            return ray_mesh(mesh, o, d, tmax)
    return wp.vec4(BIG, 0.0, 0.0, 0.0)


@wp.func
def ray_triangle(o: wp.vec3, d: wp.vec3, a: wp.vec3, b: wp.vec3, c: wp.vec3) -> wp.vec4:
    """Möller–Trumbore, two-sided; the normal is the face normal (b − a) × (c − a) normalised."""
    e1 = b - a
    e2 = c - a
    p = wp.cross(d, e2)
    det = wp.dot(e1, p)
    if wp.abs(det) < 1.0e-20:
        return wp.vec4(BIG, 0.0, 0.0, 0.0)
    inv = 1.0 / det
    s = o - a
    u = wp.dot(s, p) * inv
    if u < 0.0 or u > 1.0:
        return wp.vec4(BIG, 0.0, 0.0, 0.0)
    q = wp.cross(s, e1)
    v = wp.dot(d, q) * inv
    if v < 0.0 or u + v > 1.0:
        return wp.vec4(BIG, 0.0, 0.0, 0.0)
    t = wp.dot(e2, q) * inv
    if t < 0.0:
        return wp.vec4(BIG, 0.0, 0.0, 0.0)
    n = wp.normalize(wp.cross(e1, e2))
    return wp.vec4(t, n[0], n[1], n[2])


# -- closest hits per kind of content ---------------------------------------------------------------
@wp.func
def geom_hit(gm: GeomModel, gd: GeomData, e: int, g: int, o: wp.vec3, d: wp.vec3, tmax: float) -> wp.vec4:
    """Geom g of env e in world coordinates: the ray moved into the geom frame and the normal back."""
    R = gd.rot[e, g]
    ol = wp.transpose(R) @ (o - gd.pos[e, g])
    dl = wp.transpose(R) @ d
    r = ray_geom(gm.type[g], gm.size[g], gm.mesh[g], ol, dl, tmax)
    if r[0] >= BIG:
        return r
    n = R @ wp.vec3(r[1], r[2], r[3])
    return wp.vec4(r[0], n[0], n[1], n[2])


@wp.func
def trace_geoms(gm: GeomModel, gd: GeomData, e: int, o: wp.vec3, d: wp.vec3, tmax: float, skip_link: int,
                best: Hit) -> Hit:
    h = best
    for k in range(gm.n_planes):
        g = gm.planes[k]
        if gm.link[g] != skip_link:
            r = geom_hit(gm, gd, e, g, o, d, wp.min(h.t, tmax))
            if r[0] < h.t and r[0] <= tmax:
                h.t = r[0]
                h.kind = HIT_GEOM
                h.index = g
                h.n = wp.vec3(r[1], r[2], r[3])
    if gm.n_bvh > 0:
        root = wp.bvh_get_group_root(gd.bvh, e)
        q = wp.bvh_query_ray(gd.bvh, o, d, root)
        item = int(0)
        while wp.bvh_query_next(q, item, wp.min(h.t, tmax)):
            g = gm.bvh_geom[item - e * gm.n_bvh]
            if gm.link[g] != skip_link:
                r = geom_hit(gm, gd, e, g, o, d, wp.min(h.t, tmax))
                if r[0] < h.t and r[0] <= tmax:
                    h.t = r[0]
                    h.kind = HIT_GEOM
                    h.index = g
                    h.n = wp.vec3(r[1], r[2], r[3])
    return h


@wp.func
def slab_range(o: wp.vec3, d: wp.vec3, lo: wp.vec3, hi: wp.vec3) -> wp.vec2:
    """The parameter interval of the ray inside the box [lo, hi] (empty: x > y)."""
    t0 = float(0.0)
    t1 = float(BIG)
    for i in range(3):
        if wp.abs(d[i]) < 1.0e-20:
            if o[i] < lo[i] or o[i] > hi[i]:
                return wp.vec2(1.0, 0.0)
        else:
            a = (lo[i] - o[i]) / d[i]
            b = (hi[i] - o[i]) / d[i]
            t0 = wp.max(t0, wp.min(a, b))
            t1 = wp.min(t1, wp.max(a, b))
    return wp.vec2(t0, t1)


@wp.func
def trace_particles(pm: ParticleModel, pd: ParticleData, e: int, o: wp.vec3, d: wp.vec3, tmax: float,
                    best: Hit) -> Hit:
    """Walk the cells of width ``pm.cell`` along the ray inside env e's particle box; in each cell test
    the spheres centred in it and its 26 neighbours; stop once the closest hit found lies within the
    cells walked (a sphere hit at t has its centre within one cell of the cell holding the point at t,
    so every sphere that could be hit sooner has been tested)."""
    h = best
    if pm.n == 0:
        return h
    lo = pd.lo[e]
    hi = pd.hi[e]
    if lo[0] > hi[0]:
        return h
    span = slab_range(o, d, lo, hi)
    t = span[0]
    t_end = wp.min(span[1], wp.min(h.t, tmax))
    if t > t_end:
        return h
    w = pm.cell
    inv = 1.0 / w
    p = o + d * t
    ix = int(wp.floor(p[0] * inv))
    iy = int(wp.floor(p[1] * inv))
    iz = int(wp.floor(p[2] * inv))
    step = wp.vec3i(0, 0, 0)
    tnext = wp.vec3(BIG, BIG, BIG)
    tdelta = wp.vec3(BIG, BIG, BIG)
    cell = wp.vec3i(ix, iy, iz)
    for a in range(3):
        if d[a] > 1.0e-20:
            step[a] = 1
            tnext[a] = (float(cell[a] + 1) * w - o[a]) / d[a]
            tdelta[a] = w / d[a]
        elif d[a] < -1.0e-20:
            step[a] = -1
            tnext[a] = (float(cell[a]) * w - o[a]) / d[a]
            tdelta[a] = -w / d[a]
    base = e * pm.n
    while t <= t_end:
        c = wp.vec3((float(cell[0]) + 0.5) * w, (float(cell[1]) + 0.5) * w, (float(cell[2]) + 0.5) * w)
        q = wp.hash_grid_query(pd.grid, c, w, e)
        i = int(0)
        while wp.hash_grid_query_next(q, i):
            k = i - base
            r = ray_sphere(o - pd.pos[i], d, pm.radius[k])
            if r[0] < h.t and r[0] <= tmax:
                h.t = r[0]
                h.kind = HIT_PARTICLE
                h.index = k
                h.n = wp.vec3(r[1], r[2], r[3])
        t_exit = wp.min(tnext[0], wp.min(tnext[1], tnext[2]))
        if h.t <= t_exit:
            return h
        a = int(0)
        if tnext[1] < tnext[a]:
            a = 1
        if tnext[2] < tnext[a]:
            a = 2
        t = tnext[a]
        tnext[a] = tnext[a] + tdelta[a]
        cell[a] = cell[a] + step[a]
    return h


@wp.func
def trace_surfaces(sm: SurfaceModel, sd: SurfaceData, e: int, o: wp.vec3, d: wp.vec3, tmax: float, best: Hit) -> Hit:
    h = best
    if sm.n == 0:
        return h
    root = wp.bvh_get_group_root(sd.bvh, e)
    q = wp.bvh_query_ray(sd.bvh, o, d, root)
    item = int(0)
    vb = e * sm.n_verts
    while wp.bvh_query_next(q, item, wp.min(h.t, tmax)):
        k = item - e * sm.n
        tri = sm.tris[k]
        r = ray_triangle(o, d, sd.verts[vb + tri[0]], sd.verts[vb + tri[1]], sd.verts[vb + tri[2]])
        if r[0] < h.t and r[0] <= tmax:
            h.t = r[0]
            h.kind = HIT_TRIANGLE
            h.index = k
            h.n = wp.vec3(r[1], r[2], r[3])
    return h


@wp.func
def trace(gm: GeomModel, gd: GeomData, pm: ParticleModel, pd: ParticleData, sm: SurfaceModel, sd: SurfaceData,
          e: int, o: wp.vec3, d: wp.vec3, tmax: float, skip_link: int) -> Hit:
    """The closest hit within tmax of everything env e holds (d unit)."""
    h = hit_none()
    h = trace_geoms(gm, gd, e, o, d, tmax, skip_link, h)
    h = trace_surfaces(sm, sd, e, o, d, tmax, h)
    h = trace_particles(pm, pd, e, o, d, tmax, h)
    return h


@wp.func
def hit_object(gm: GeomModel, pm: ParticleModel, sm: SurfaceModel, h: Hit) -> int:
    if h.kind == HIT_GEOM:
        return gm.obj[h.index]
    if h.kind == HIT_PARTICLE:
        return pm.obj[h.index]
    if h.kind == HIT_TRIANGLE:
        return sm.obj[h.index]
    return -1


@wp.func
def colormap(cmap: wp.array(dtype=wp.vec3), x: float, lo: float, hi: float) -> wp.vec3:
    n = cmap.shape[0]
    u = float(0.0)
    if hi > lo:
        u = wp.clamp((x - lo) / (hi - lo), 0.0, 1.0)
    f = u * float(n - 1)
    i = wp.min(int(f), n - 2)
    a = f - float(i)
    return cmap[i] * (1.0 - a) + cmap[i + 1] * a


@wp.func
def albedo(rays: Rays, s: int, objs: Objects, gm: GeomModel, gd: GeomData, pm: ParticleModel, pd: ParticleData,
           e: int, h: Hit, obj: int, p: wp.vec3) -> wp.vec3:
    if h.kind == HIT_PARTICLE and rays.color_mode[s] != COLOR_OBJECT:
        k = e * pm.n + h.index
        x = float(0.0)
        if rays.color_mode[s] == COLOR_SPEED:
            x = wp.length(pd.vel[k])
        else:
            x = pd.field[k]
        return colormap(rays.cmap, x, rays.color_lo[s], rays.color_hi[s])
    c = objs.rgba[obj]
    rgb = wp.vec3(c[0], c[1], c[2])
    sq = objs.checker[obj]
    if sq > 0.0 and h.kind == HIT_GEOM:
        R = gd.rot[e, h.index]
        pl = wp.transpose(R) @ (p - gd.pos[e, h.index])
        parity = int(wp.floor(pl[0] / sq)) + int(wp.floor(pl[1] / sq))
        if parity % 2 != 0:
            rgb = objs.rgb2[obj]
    return rgb


@wp.func
def store(out: wp.array2d(dtype=wp.float32), row: int, col: int, v: float):
    out[row, col] = v


@wp.func
def store(out: wp.array2d(dtype=wp.float64), row: int, col: int, v: float):  # noqa: F811 - a Warp overload
    out[row, col] = wp.float64(v)


# -- the ray launch -----------------------------------------------------------------------------------
@wp.kernel
def cast_rays(
    # Model:
    rays: Rays,
    objs: Objects,
    gm: GeomModel,
    pm: ParticleModel,
    sm: SurfaceModel,
    env_offset: int,
    # Data in:
    geoms_in: GeomData,
    particles_in: ParticleData,
    surfaces_in: SurfaceData,
    sensor_pos_in: wp.array2d(dtype=wp.vec3),
    sensor_rot_in: wp.array2d(dtype=wp.mat33),
    tick_in: wp.array(dtype=wp.int32),
    # Data out:
    values_out: wp.array2d(dtype=Any),
):
    """One thread per (env, ray) of every sensor of the set: the closest hit, then each requested
    output into the sensor's columns of ``values_out`` (row = the launch's env index; the partition's env is
    ``env_offset`` + it)."""
    row, r = wp.tid()
    e = env_offset + row
    s = rays.ray_sensor[r]
    k = rays.ray_elem[r]
    Rs = sensor_rot_in[e, s]
    dl = rays.ray_dir[r]
    ol = rays.ray_org[r]
    spin = rays.spin[s]
    if spin != 0.0:
        a = spin * float(tick_in[e])
        ca = wp.cos(a)
        sa = wp.sin(a)
        dl = wp.vec3(ca * dl[0] - sa * dl[1], sa * dl[0] + ca * dl[1], dl[2])
        ol = wp.vec3(ca * ol[0] - sa * ol[1], sa * ol[0] + ca * ol[1], ol[2])
    dlen = wp.length(dl)
    dn = dl / dlen
    d = Rs @ dn
    o = sensor_pos_in[e, s] + Rs @ ol
    t0 = rays.min_range[s]
    h = trace(gm, geoms_in, pm, particles_in, sm, surfaces_in, e, o + d * t0, d, rays.max_range[s] - t0, rays.exclude_link[s])
    hit = h.kind != HIT_NONE
    t = h.t + t0
    p = o + d * t
    n = h.n
    if wp.dot(n, d) > 0.0:
        n = -n
    obj = hit_object(gm, pm, sm, h)
    c = rays.col_dist[s]
    if c >= 0:
        if hit:
            store(values_out, row, c + k, t)
        else:
            store(values_out, row, c + k, rays.no_hit[s])
    c = rays.col_depth[s]
    if c >= 0:
        if hit:
            store(values_out, row, c + k, t * dn[2])
        else:
            store(values_out, row, c + k, rays.no_hit[s])
    c = rays.col_point[s]
    if c >= 0:
        for i in range(3):
            if hit:
                store(values_out, row, c + 3 * k + i, p[i])
            else:
                store(values_out, row, c + 3 * k + i, wp.nan)
    c = rays.col_normal[s]
    if c >= 0:
        for i in range(3):
            if hit:
                store(values_out, row, c + 3 * k + i, n[i])
            else:
                store(values_out, row, c + 3 * k + i, 0.0)
    c = rays.col_seg[s]
    if c >= 0:
        sid = int(-1)
        if hit:
            m = rays.seg_mode[s]
            if m == 0:
                sid = objs.entity[obj]
            elif m == 1:
                sid = objs.link[obj]
            else:
                sid = obj
        store(values_out, row, c + k, float(sid))
    c = rays.col_rgb[s]
    if c >= 0:
        rgb = rays.background[s]
        if hit:
            alb = albedo(rays, s, objs, gm, geoms_in, pm, particles_in, e, h, obj, p)
            lit = rays.ambient[s]
            q = p + n * (1.0e-4 + 1.0e-6 * t)
            for li in range(rays.light_start[s], rays.light_end[s]):
                lv = rays.light_vec[li]
                point = rays.light_type[li] == LIGHT_POINT
                if rays.light_camera[li] != 0:
                    if point:
                        lv = sensor_pos_in[e, s] + Rs @ lv
                    else:
                        lv = Rs @ lv
                L = -wp.normalize(lv)
                dist = float(BIG)
                if point:
                    L = lv - p
                    dist = wp.length(L)
                    L = L / wp.max(dist, 1.0e-12)
                ndl = wp.dot(n, L)
                if ndl > 0.0:
                    lit_by = int(1)
                    if rays.shadows[s] != 0:
                        sh = trace(gm, geoms_in, pm, particles_in, sm, surfaces_in, e, q, L, dist, -1)
                        if sh.kind != HIT_NONE:
                            lit_by = 0
                    if lit_by != 0:
                        lit = lit + rays.light_rgb[li] * ndl
            rgb = wp.cw_mul(alb, lit)
        for i in range(3):
            store(values_out, row, c + 3 * k + i, wp.clamp(rgb[i], 0.0, 1.0))


# -- preparation launches (per partition) ------------------------------------------------------------
@wp.func
def to_vec3f(v: Any) -> wp.vec3:
    return wp.vec3(float(v[0]), float(v[1]), float(v[2]))


@wp.func
def to_rotf(q: Any) -> wp.mat33:
    """Rotation matrix of a Warp quaternion (x y z w) of either precision, renormalised in float32."""
    qf = wp.normalize(wp.quat(float(q[0]), float(q[1]), float(q[2]), float(q[3])))
    return wp.quat_to_matrix(qf)


@wp.func
def abs_mat(m: wp.mat33) -> wp.mat33:
    return wp.mat33(wp.abs(m[0, 0]), wp.abs(m[0, 1]), wp.abs(m[0, 2]), wp.abs(m[1, 0]), wp.abs(m[1, 1]),
                    wp.abs(m[1, 2]), wp.abs(m[2, 0]), wp.abs(m[2, 1]), wp.abs(m[2, 2]))


@wp.kernel
def geom_poses(
    # Model:
    src_link: wp.array(dtype=int),
    local_pos: wp.array(dtype=wp.vec3),
    local_rot: wp.array(dtype=wp.mat33),
    box_center: wp.array(dtype=wp.vec3),
    box_half: wp.array(dtype=wp.vec3),
    slot: wp.array(dtype=int),
    bvh_slot: wp.array(dtype=int),
    n_bvh: int,
    # Data in:
    link_pos_in: wp.array2d(dtype=Any),
    link_quat_in: wp.array2d(dtype=Any),
    # Data out:
    pos_out: wp.array2d(dtype=wp.vec3),
    rot_out: wp.array2d(dtype=wp.mat33),
    lowers_out: wp.array(dtype=wp.vec3),
    uppers_out: wp.array(dtype=wp.vec3),
):
    """World pose of geom i of one rigid source in env e, and its bounding box for the BVH."""
    e, i = wp.tid()
    lk = src_link[i]
    R = to_rotf(link_quat_in[e, lk])
    p = to_vec3f(link_pos_in[e, lk]) + R @ local_pos[i]
    G = R @ local_rot[i]
    g = slot[i]
    pos_out[e, g] = p
    rot_out[e, g] = G
    b = bvh_slot[i]
    if b >= 0:
        c = p + G @ box_center[i]
        ext = abs_mat(G) @ box_half[i] + wp.vec3(1.0e-5, 1.0e-5, 1.0e-5)
        lowers_out[e * n_bvh + b] = c - ext
        uppers_out[e * n_bvh + b] = c + ext


@wp.kernel
def sensor_poses(
    # Model:
    src_link: wp.array(dtype=int),
    local_pos: wp.array(dtype=wp.vec3),
    local_rot: wp.array(dtype=wp.mat33),
    slot: wp.array(dtype=int),
    # Data in:
    link_pos_in: wp.array2d(dtype=Any),
    link_quat_in: wp.array2d(dtype=Any),
    # Data out:
    pos_out: wp.array2d(dtype=wp.vec3),
    rot_out: wp.array2d(dtype=wp.mat33),
):
    """World pose of sensor i (mounted on a link of one rigid source; src_link -1: fixed in the world)."""
    e, i = wp.tid()
    lk = src_link[i]
    p = local_pos[i]
    G = local_rot[i]
    if lk >= 0:
        R = to_rotf(link_quat_in[e, lk])
        p = to_vec3f(link_pos_in[e, lk]) + R @ p
        G = R @ G
    pos_out[e, slot[i]] = p
    rot_out[e, slot[i]] = G


@wp.kernel
def copy_particles(
    # Model:
    offset: int,
    n_total: int,
    radius: wp.array(dtype=float),
    drawn: wp.array(dtype=wp.int32),
    # Data in:
    pos_in: wp.array2d(dtype=Any),
    vel_in: wp.array2d(dtype=Any),
    active_in: wp.array2d(dtype=wp.int32),
    # Data out:
    pos_out: wp.array(dtype=wp.vec3),
    vel_out: wp.array(dtype=wp.vec3),
    group_out: wp.array(dtype=wp.int32),
    lo_out: wp.array(dtype=wp.vec3),
    hi_out: wp.array(dtype=wp.vec3),
):
    """Particle i of one source into the partition's flat arrays (env e at e·n_total + offset + i);
    an inactive or undrawn particle gets group −1 (never found); the env's box grows by the sphere of
    each drawn one."""
    e, i = wp.tid()
    j = e * n_total + offset + i
    p = to_vec3f(pos_in[e, i])
    pos_out[j] = p
    vel_out[j] = to_vec3f(vel_in[e, i])
    if active_in[e, i] != 0 and drawn[offset + i] != 0:
        group_out[j] = e
        r = radius[offset + i]
        wp.atomic_min(lo_out, e, p - wp.vec3(r, r, r))
        wp.atomic_max(hi_out, e, p + wp.vec3(r, r, r))
    else:
        group_out[j] = -1


@wp.kernel
def copy_particles_all_active(
    # Model:
    offset: int,
    n_total: int,
    radius: wp.array(dtype=float),
    drawn: wp.array(dtype=wp.int32),
    # Data in:
    pos_in: wp.array2d(dtype=Any),
    vel_in: wp.array2d(dtype=Any),
    # Data out:
    pos_out: wp.array(dtype=wp.vec3),
    vel_out: wp.array(dtype=wp.vec3),
    group_out: wp.array(dtype=wp.int32),
    lo_out: wp.array(dtype=wp.vec3),
    hi_out: wp.array(dtype=wp.vec3),
):
    """As copy_particles for a source without an active flag (every particle drawn)."""
    e, i = wp.tid()
    j = e * n_total + offset + i
    p = to_vec3f(pos_in[e, i])
    pos_out[j] = p
    vel_out[j] = to_vec3f(vel_in[e, i])
    if drawn[offset + i] == 0:
        group_out[j] = -1
        return
    group_out[j] = e
    r = radius[offset + i]
    wp.atomic_min(lo_out, e, p - wp.vec3(r, r, r))
    wp.atomic_max(hi_out, e, p + wp.vec3(r, r, r))


@wp.kernel
def reset_boxes(lo_out: wp.array(dtype=wp.vec3), hi_out: wp.array(dtype=wp.vec3)):
    e = wp.tid()
    lo_out[e] = wp.vec3(BIG, BIG, BIG)
    hi_out[e] = wp.vec3(-BIG, -BIG, -BIG)


@wp.kernel
def copy_vertices(
    # Model:
    offset: int,
    n_total: int,
    # Data in:
    pos_in: wp.array2d(dtype=Any),
    # Data out:
    verts_out: wp.array(dtype=wp.vec3),
):
    e, i = wp.tid()
    verts_out[e * n_total + offset + i] = to_vec3f(pos_in[e, i])


@wp.kernel
def triangle_bounds(
    # Model:
    tris: wp.array(dtype=wp.vec3i),
    n_tris: int,
    n_verts: int,
    # Data in:
    verts_in: wp.array(dtype=wp.vec3),
    # Data out:
    lowers_out: wp.array(dtype=wp.vec3),
    uppers_out: wp.array(dtype=wp.vec3),
):
    e, k = wp.tid()
    t = tris[k]
    b = e * n_verts
    a = verts_in[b + t[0]]
    c = verts_in[b + t[1]]
    f = verts_in[b + t[2]]
    pad = wp.vec3(1.0e-6, 1.0e-6, 1.0e-6)
    lowers_out[e * n_tris + k] = wp.min(a, wp.min(c, f)) - pad
    uppers_out[e * n_tris + k] = wp.max(a, wp.max(c, f)) + pad


def _overloads():
    for s in (wp.float32, wp.float64):
        v, q = wp.types.vector(3, s), wp.types.quaternion(s)
        a2v, a2q = wp.array2d(dtype=v), wp.array2d(dtype=q)
        wp.overload(geom_poses, {"link_pos_in": a2v, "link_quat_in": a2q})
        wp.overload(sensor_poses, {"link_pos_in": a2v, "link_quat_in": a2q})
        wp.overload(copy_particles, {"pos_in": a2v, "vel_in": a2v})
        wp.overload(copy_particles_all_active, {"pos_in": a2v, "vel_in": a2v})
        wp.overload(copy_vertices, {"pos_in": a2v})
        wp.overload(cast_rays, {"values_out": wp.array2d(dtype=s)})


_overloads()
