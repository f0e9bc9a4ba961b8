"""What rays see in a built scene (:class:`RayScene`) and sets of rays cast in one launch (:class:`RaySet`).

A RayScene reads the solvers through core's view protocols only (docs/cameras.md, "What a camera
sees"): rigid-side solvers through ``RenderView`` (every geom, visual and collision) or, lacking it,
``RigidView`` (collision geoms, grey); cloth and FEM surfaces through ``SurfaceMeshView``; particles
through ``ParticleStateView`` or a ``ParticleView`` of particles. It owns per-partition arrays and
acceleration structures, updated by :meth:`RayScene.prepare` (launches only: graph-capturable).
One RayScene per scene (:func:`ray_scene`), shared by every camera and ray sensor.
"""

from __future__ import annotations

import math
import warnings

import attrs
import numpy as np

from ..description import GeomType
from ..errors import OptionError, PolyphysWarning
from ..views import ParticleStateView, ParticleView, RenderGeoms, RenderView, RigidView, SurfaceMeshView
from .geoms import hfield_mesh, local_bounds

# 9 samples of matplotlib's viridis colour map (0, 1/8, ..., 1), interpolated linearly
VIRIDIS = ((0.267004, 0.004874, 0.329415), (0.278826, 0.175490, 0.483397), (0.229739, 0.322361, 0.545706),
           (0.172719, 0.448791, 0.557885), (0.127568, 0.566949, 0.550556), (0.157851, 0.683765, 0.501686),
           (0.369214, 0.788888, 0.382914), (0.678489, 0.863742, 0.189503), (0.993248, 0.906157, 0.143936))
GREY = (0.6, 0.6, 0.6, 1.0)


def ray_scene(scene) -> RayScene:
    """The scene's RayScene, built on first use (once the solvers are built: sensors make it inside
    ``scene.build()``)."""
    rs = getattr(scene, "_ray_scene", None)
    if rs is None:
        if getattr(scene, "layout", None) is None:
            from ..errors import SceneStateError

            raise SceneStateError("ray casting reads a built scene: call scene.build() first")
        import warp as wp

        with wp.ScopedDevice(scene.layout.device):
            rs = RayScene(scene)
        scene._ray_scene = rs
    return rs


def quat_to_rot(q) -> np.ndarray:
    """3×3 rotation of a unit quaternion (w, x, y, z)."""
    w, x, y, z = np.asarray(q, float) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def rot_to_quat(R) -> np.ndarray:
    """Unit quaternion (w, x, y, z), w >= 0, of a rotation matrix (Shepperd's method)."""
    R = np.asarray(R, float)
    tr = np.trace(R)
    if tr > 0:
        s = 2.0 * math.sqrt(tr + 1.0)
        q = [0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s]
    elif R[0, 0] > R[1, 1] and R[0, 0] > R[2, 2]:
        s = 2.0 * math.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2])
        q = [(R[2, 1] - R[1, 2]) / s, 0.25 * s, (R[0, 1] + R[1, 0]) / s, (R[0, 2] + R[2, 0]) / s]
    elif R[1, 1] > R[2, 2]:
        s = 2.0 * math.sqrt(1.0 + R[1, 1] - R[0, 0] - R[2, 2])
        q = [(R[0, 2] - R[2, 0]) / s, (R[0, 1] + R[1, 0]) / s, 0.25 * s, (R[1, 2] + R[2, 1]) / s]
    else:
        s = 2.0 * math.sqrt(1.0 + R[2, 2] - R[0, 0] - R[1, 1])
        q = [(R[1, 0] - R[0, 1]) / s, (R[0, 2] + R[2, 0]) / s, (R[1, 2] + R[2, 1]) / s, 0.25 * s]
    q = np.asarray(q)
    q = q / np.linalg.norm(q)
    return q if q[0] >= 0 else -q


def _with_env_axis(a, batched: bool) -> np.ndarray:
    a = np.asarray(a)
    return a if batched else a[None]


def _spacing(points: np.ndarray) -> float:
    """Median nearest-neighbour distance of (n, 3) points (a sampled lattice: its spacing)."""
    p = np.asarray(points, float).reshape(-1, 3)
    p = p[np.isfinite(p).all(1)]
    if len(p) < 2:
        return 0.01
    from scipy.spatial import cKDTree

    d, _ = cKDTree(p).query(p, k=2)
    d = d[:, 1][np.isfinite(d[:, 1]) & (d[:, 1] > 0)]
    return float(np.median(d)) if d.size else 0.01


def _entity_color(entity) -> tuple:
    from ..viewer.content import PALETTE

    surf = getattr(entity, "surface", None)
    col = getattr(surf, "color", None) if surf is not None else None
    if col is not None:
        c = tuple(float(x) for x in tuple(col)[:4])
        return c + (1.0,) * (4 - len(c))
    key = type(getattr(entity, "material", None)).__name__
    return tuple(PALETTE[sum(ord(ch) for ch in key) % len(PALETTE)]) + (1.0,)


def _find_block(haystack: np.ndarray, needle: np.ndarray) -> int:
    """Start of the block of rows of ``haystack`` equal to ``needle`` (bitwise), or -1."""
    if len(needle) == 0 or len(needle) > len(haystack):
        return -1
    cand = np.flatnonzero((haystack[: len(haystack) - len(needle) + 1] == needle[0]).all(1))
    for c in cand:
        if np.array_equal(haystack[c:c + len(needle)], needle):
            return int(c)
    return -1


@attrs.define
class Mount:
    """Where a ray sensor sits: ``source`` (index of a rigid source, -1: fixed in the world), the
    link in that source's arrays, the scene link id (-1: world), and the pose in that frame."""

    source: int = -1
    link: int = -1
    scene_link: int = -1
    pos: np.ndarray = attrs.field(factory=lambda: np.zeros(3))
    rot: np.ndarray = attrs.field(factory=lambda: np.eye(3))


@attrs.define
class _RigidSource:
    solver: object
    view: object
    geoms: RenderGeoms
    link_base: int                # scene link id of the solver's global link 0
    slots: np.ndarray             # scene geom slot of each of its geoms
    sync: object = None           # view.sync_links or None
    arrays: dict = attrs.field(factory=dict)


@attrs.define
class _ParticleSource:
    solver: object
    get: object                   # part -> ParticleCarriers
    offset: int
    n: int
    has_active: bool


@attrs.define
class _SurfaceSource:
    solver: object
    view: object
    offset: int                   # first vertex in the flat per-env vertex block
    n_verts: int


class RayScene:
    """Geometry tables and per-partition buffers of a scene for ray casting (docs/cameras.md)."""

    def __init__(self, scene):
        import warp as wp

        from ..kernels import raycast as K

        self.scene = scene
        self.layout = lay = scene.layout
        self.device = dev = lay.device
        self.n_envs = n = lay.n_envs
        self.objects: list[dict] = []          # drawable objects: name, entity, link, rgba, rgb2, checker
        self.link_names: list[str] = []        # scene link id -> "entity/link"
        self.entity_names = {e.uid: e.name for e in scene.entities}
        self.rigid: list[_RigidSource] = []
        self.particles: list[_ParticleSource] = []
        self.surfaces: list[_SurfaceSource] = []
        self._meshes: list = []                # wp.Mesh objects kept alive
        self.skipped: list[str] = []
        ents = {e.uid: e for e in scene.entities}

        # -- rigid sources ---------------------------------------------------------------------
        gtype, gsize, gmesh, glink, gobj, gbox = [], [], [], [], [], []
        for solver in scene.solvers:
            rv = solver.view(RenderView)
            rg = solver.view(RigidView) if rv is None else None
            if rv is None and rg is None:
                continue
            geoms = rv.render_geoms() if rv is not None else self._from_rigid_geoms(rg.rigid_geoms())
            n_links = 1 + max([max(v) for v in geoms.links.values() if len(v)] + [int(np.max(geoms.link, initial=-1))])
            base = len(self.link_names)
            names = [f"{solver.name}/link{i}" for i in range(n_links)]
            for uid, lk in geoms.links.items():
                desc = getattr(ents.get(uid), "description", None)
                for i, gl in enumerate(lk):
                    lname = desc.links[i].name if desc is not None else f"link{i}"
                    names[gl] = f"{self.entity_names.get(uid, uid)}/{lname}"
            self.link_names += names
            slots = []
            for i in range(len(geoms.type)):
                code = int(geoms.type[i])
                mesh = None
                if code == GeomType.MESH:
                    mesh = geoms.meshes[i]
                elif code == GeomType.HFIELD:
                    mesh = hfield_mesh(geoms.hfields[i])
                mid = 0
                if mesh is not None:
                    m = wp.Mesh(points=wp.array(np.asarray(mesh[0], np.float32), dtype=wp.vec3, device=dev),
                                indices=wp.array(np.asarray(mesh[1], np.int32).reshape(-1), dtype=wp.int32, device=dev))
                    self._meshes.append(m)
                    mid = m.id
                tex = geoms.texture[i] if i < len(geoms.texture) else None
                rgba = np.asarray(geoms.rgba[i], float)
                obj = len(self.objects)
                self.objects.append(dict(
                    name=geoms.name[i] if i < len(geoms.name) else f"{solver.name}/geom{i}",
                    entity=int(geoms.entity[i]), link=base + int(geoms.link[i]), rgba=rgba,
                    rgb2=np.asarray(tex[1], float) if tex is not None else rgba[:3],
                    checker=float(tex[2]) if tex is not None else 0.0))
                if tex is not None:
                    self.objects[-1]["rgba"] = np.r_[np.asarray(tex[0], float)[:3], rgba[3]]
                slots.append(len(gtype))
                gtype.append(code)
                gsize.append(np.asarray(geoms.size[i], float))
                gmesh.append(mid)
                glink.append(base + int(geoms.link[i]))
                gobj.append(obj)
                gbox.append(local_bounds(code, geoms.size[i], mesh))
            sync = getattr(rv, "sync_links", None) if rv is not None else None
            self.rigid.append(_RigidSource(solver, rv if rv is not None else rg, geoms, base, np.asarray(slots, np.int64),
                                           sync if callable(sync) else None))
        self.n_geoms = G = len(gtype)
        planes = [g for g in range(G) if gtype[g] == GeomType.PLANE]
        bvh_geoms = [g for g in range(G) if gtype[g] != GeomType.PLANE]
        self.n_bvh = B = len(bvh_geoms)
        bvh_slot = np.full(G, -1, np.int64)
        bvh_slot[bvh_geoms] = np.arange(B)

        def arr(a, dtype, shape=None):
            a = np.asarray(a)
            if shape is not None:
                a = a.reshape(shape)
            return wp.array(np.ascontiguousarray(a), dtype=dtype, device=dev)

        i32 = lambda a: arr(np.asarray(a, np.int32).reshape(-1), wp.int32)  # noqa: E731
        f32v = lambda a: arr(np.asarray(a, np.float32).reshape(-1, 3), wp.vec3)  # noqa: E731
        gm = K.GeomModel()
        gm.n = G
        gm.type = i32(gtype)
        gm.size = f32v(gsize)
        gm.mesh = arr(np.asarray(gmesh, np.uint64).reshape(-1), wp.uint64)
        gm.link = i32(glink)
        gm.obj = i32(gobj)
        gm.planes = i32(planes)
        gm.n_planes = len(planes)
        gm.bvh_geom = i32(bvh_geoms)
        gm.n_bvh = B
        self.gm = gm
        for src in self.rigid:
            g = src.geoms
            sl = src.slots
            rot = np.stack([quat_to_rot(q) for q in g.quat]) if len(g.quat) else np.zeros((0, 3, 3))
            src.arrays = dict(
                link=i32(g.link), pos=f32v(g.pos), rot=arr(rot.astype(np.float32), wp.mat33),
                center=f32v([gbox[s][0] for s in sl]), half=f32v([gbox[s][1] for s in sl]),
                slot=i32(sl), bvh_slot=i32(bvh_slot[sl]))
        self.geom_pos = wp.zeros((n, max(G, 1)), dtype=wp.vec3, device=dev)
        self.geom_rot = wp.zeros((n, max(G, 1)), dtype=wp.mat33, device=dev)

        # -- particles and surfaces --------------------------------------------------------------
        radius, pobj, pdrawn = [], [], []
        self.entity_particles: dict = {}      # entity uid -> (first index among the drawn particles, count)
        tris, tobj = [], []
        n_verts = 0
        for solver in scene.solvers:
            if solver.view(RenderView) is not None or solver.view(RigidView) is not None:
                continue
            sview = solver.view(SurfaceMeshView)
            st = solver.view(ParticleStateView)
            pv = solver.view(ParticleView)
            part0 = lay.partitions[0]
            surface_entities = set()
            if sview is not None:
                sm = sview.surface_mesh(part0)
                t = np.asarray(sm.triangles.numpy() if hasattr(sm.triangles, "numpy") else sm.triangles,
                               np.int64).reshape(-1, 3)
                nv = int(sm.pos.shape[1])
                v0 = self._host_rows(sview, "surface_mesh", "pos", nv)
                owner = np.full(nv, -1, np.int64)
                for e in solver_entities(scene, solver):
                    pos = _entity_points(e, scene.batched, surface=True)
                    if pos is None:
                        continue
                    start = _find_block(v0, pos.astype(v0.dtype))
                    if start < 0:
                        continue
                    obj = len(self.objects)
                    self.objects.append(dict(name=e.name, entity=e.uid, link=self._entity_link(e), rgba=np.asarray(
                        _entity_color(e)), rgb2=np.asarray(_entity_color(e))[:3], checker=0.0))
                    owner[start:start + len(pos)] = obj
                    surface_entities.add(e.uid)
                if len(t):
                    fallback = None
                    if (owner[t[:, 0]] < 0).any():
                        fallback = len(self.objects)
                        self.objects.append(dict(name=f"{solver.name}/surface", entity=-1, link=-1,
                                                 rgba=np.asarray(GREY), rgb2=np.asarray(GREY[:3]), checker=0.0))
                    o = owner[t[:, 0]]
                    o[o < 0] = fallback if fallback is not None else -1
                    tris.append(t + n_verts)
                    tobj.append(o)
                self.surfaces.append(_SurfaceSource(solver, sview, n_verts, nv))
                n_verts += nv
            source = st.particle_state if st is not None else None
            if source is None and pv is not None and pv.particle_carriers(part0).kind == "particles":
                source = pv.particle_carriers
            if source is None:
                continue
            c0 = source(part0)
            npart = int(c0.pos.shape[1])
            p0 = np.asarray(c0.pos.numpy()[0], float)
            drawn = np.zeros(npart, bool)
            obj_of = np.full(npart, -1, np.int64)
            rad = np.zeros(npart)
            for e in solver_entities(scene, solver):
                if e.uid in surface_entities:
                    continue
                pos = _entity_points(e, scene.batched, surface=False)
                if pos is None:
                    continue
                start = _find_block(p0.astype(np.float64), pos.astype(np.float64))
                if start < 0:
                    start = _find_block(p0.astype(np.float32), pos.astype(np.float32))
                if start < 0:
                    self.skipped.append(f"{e.name}: its particles were not found in solver {solver.name!r}'s arrays")
                    continue
                obj = len(self.objects)
                col = _entity_color(e)
                self.objects.append(dict(name=e.name, entity=e.uid, link=self._entity_link(e), rgba=np.asarray(col),
                                         rgb2=np.asarray(col)[:3], checker=0.0))
                sl = slice(start, start + len(pos))
                self.entity_particles[e.uid] = (sum(len(r) for r in radius) + start, len(pos))
                drawn[sl] = True
                obj_of[sl] = obj
                rad[sl] = 0.5 * _spacing(pos)
            if not drawn.any() and not surface_entities:
                # no entity offers particle getters to match (a third-party solver): every particle
                # of the view is drawn as one object, sized by the spacing of the whole set
                ents = solver_entities(scene, solver)
                e0 = ents[0] if len(ents) == 1 else None
                col = _entity_color(e0) if e0 is not None else GREY
                obj = len(self.objects)
                self.objects.append(dict(name=e0.name if e0 is not None else solver.name,
                                         entity=e0.uid if e0 is not None else -1,
                                         link=self._entity_link(e0) if e0 is not None else -1,
                                         rgba=np.asarray(col), rgb2=np.asarray(col)[:3], checker=0.0))
                drawn[:] = True
                obj_of[:] = obj
                rad[:] = 0.5 * _spacing(p0)
                if e0 is not None:
                    self.entity_particles[e0.uid] = (sum(len(r) for r in radius), npart)
            if not drawn.any():
                continue
            offset = sum(len(r) for r in radius)
            radius.append(np.where(drawn, rad, 0.0))
            pobj.append(obj_of)
            pdrawn.append(drawn)
            self.particles.append(_ParticleSource(solver, source, offset, npart, c0.active is not None))
        if self.skipped:
            warnings.warn(PolyphysWarning("ray casting: " + "; ".join(self.skipped)), stacklevel=3)
        self.n_particles = NP = sum(len(r) for r in radius)
        rad_all = np.concatenate(radius) if radius else np.zeros(0)
        self.particle_radius = float(rad_all.max()) if NP else 0.0
        pm = K.ParticleModel()
        pm.n = NP
        pm.radius = arr(rad_all.astype(np.float32), wp.float32)
        pm.obj = i32(np.concatenate(pobj) if pobj else np.zeros(0))
        pm.cell = max(2.0 * self.particle_radius, 1e-6)
        self.pm = pm
        self.particle_drawn = i32(np.concatenate(pdrawn) if pdrawn else np.zeros(0))
        self.particle_objects = np.concatenate(pobj) if pobj else np.zeros(0, np.int64)
        sm_ = K.SurfaceModel()
        T = np.concatenate(tris) if tris else np.zeros((0, 3), np.int64)
        sm_.n = len(T)
        sm_.n_verts = n_verts
        sm_.tris = arr(T.astype(np.int32), wp.vec3i)
        sm_.obj = i32(np.concatenate(tobj) if tobj else np.zeros(0))
        self.sm = sm_

        # -- objects ----------------------------------------------------------------------------
        ob = K.Objects()
        ob.entity = i32([o["entity"] for o in self.objects] or [0])
        ob.link = i32([o["link"] for o in self.objects] or [0])
        ob.rgba = arr(np.asarray([o["rgba"] for o in self.objects] or [GREY], np.float32).reshape(-1, 4), wp.vec4)
        ob.rgb2 = f32v([o["rgb2"] for o in self.objects] or [GREY[:3]])
        ob.checker = arr(np.asarray([o["checker"] for o in self.objects] or [0.0], np.float32), wp.float32)
        self.objs = ob

        # -- per-partition buffers ---------------------------------------------------------------
        self.p_pos = wp.zeros(max(n * NP, 1), dtype=wp.vec3, device=dev)
        self.p_vel = wp.zeros(max(n * NP, 1), dtype=wp.vec3, device=dev)
        self.p_field = wp.zeros(max(n * NP, 1), dtype=wp.float32, device=dev)
        self.p_group = wp.zeros(max(n * NP, 1), dtype=wp.int32, device=dev)
        self.p_lo = wp.zeros(n, dtype=wp.vec3, device=dev)
        self.p_hi = wp.zeros(n, dtype=wp.vec3, device=dev)
        self.verts = wp.zeros(max(n * n_verts, 1), dtype=wp.vec3, device=dev)
        self.parts = []
        for part in lay.partitions:
            ne = part.n_envs
            P = {"part": part}
            gd = K.GeomData()
            gd.pos = self.geom_pos[part.start:part.stop]
            gd.rot = self.geom_rot[part.start:part.stop]
            gd.bvh = wp.uint64(0)
            if B:
                P["lowers"] = wp.zeros(ne * B, dtype=wp.vec3, device=dev)
                P["uppers"] = wp.zeros(ne * B, dtype=wp.vec3, device=dev)
            pd = K.ParticleData()
            sl = slice(part.start * NP, part.stop * NP) if NP else slice(0, 1)
            pd.pos, pd.vel, pd.field = self.p_pos[sl], self.p_vel[sl], self.p_field[sl]
            pd.lo, pd.hi = self.p_lo[part.start:part.stop], self.p_hi[part.start:part.stop]
            pd.grid = wp.uint64(0)
            P["group"] = self.p_group[sl]
            if NP:
                dim = int(np.clip(round((ne * NP) ** (1.0 / 3.0)), 16, 128))
                P["grid"] = wp.HashGrid(dim, dim, dim, device=dev)
                P["grid"].reserve(ne * NP, with_groups=True)
            sd = K.SurfaceData()
            vs = slice(part.start * n_verts, part.stop * n_verts) if n_verts else slice(0, 1)
            sd.verts = self.verts[vs]
            sd.bvh = wp.uint64(0)
            if sm_.n:
                P["t_lowers"] = wp.zeros(ne * sm_.n, dtype=wp.vec3, device=dev)
                P["t_uppers"] = wp.zeros(ne * sm_.n, dtype=wp.vec3, device=dev)
            P["gd"], P["pd"], P["sd"] = gd, pd, sd
            self.parts.append(P)
        self.field_values: dict = {}
        self.structures_built = False

    def build_structures(self) -> None:
        """Build the acceleration structures (geom and triangle BVHs, particle hash grids) from the
        current state; later ``prepare`` calls refit them (their topology stays). Once, outside the
        captured step: the scene's in-step ray sensors call it when they are built; otherwise the
        first on-demand use (``prepare``, ``bounds``) does — a scene whose only cameras render on
        demand launches no ray-casting kernel (compiles none) until a picture is taken."""
        if self.structures_built:
            return
        import warp as wp

        dev, B, NP, T = self.device, self.n_bvh, self.n_particles, self.sm.n
        with wp.ScopedDevice(dev):
            for P in self.parts:
                part = P["part"]
                self._geoms(P, part)
                if B:
                    groups = wp.array(np.repeat(np.arange(part.n_envs), B).astype(np.int32), dtype=wp.int32, device=dev)
                    P["bvh"] = wp.Bvh(P["lowers"], P["uppers"], groups=groups)
                    P["gd"].bvh = P["bvh"].id
                self._surfaces(P, part)
                if T:
                    groups = wp.array(np.repeat(np.arange(part.n_envs), T).astype(np.int32), dtype=wp.int32, device=dev)
                    P["t_bvh"] = wp.Bvh(P["t_lowers"], P["t_uppers"], groups=groups)
                    P["sd"].bvh = P["t_bvh"].id
                if NP:
                    P["pd"].grid = P["grid"].id
                    self._particles(P, part)
        self.structures_built = True

    # -- helpers -----------------------------------------------------------------------------------
    def _entity_link(self, entity) -> int:
        """A scene link id for a particle or surface entity (segmentation by link)."""
        self.link_names.append(f"{entity.name}")
        return len(self.link_names) - 1

    def _host_rows(self, view, method, field, n):
        arr = getattr(getattr(view, method)(self.layout.partitions[0]), field)
        return np.asarray(arr.numpy()[0], float).reshape(n, 3)

    def _from_rigid_geoms(self, rg) -> RenderGeoms:
        q = rg.quat.numpy().reshape(-1, 4)[:, [3, 0, 1, 2]]
        n = len(q)
        return RenderGeoms(link=rg.link.numpy().astype(np.int64), type=rg.type.numpy().astype(np.int64),
                           size=rg.size.numpy().astype(float).reshape(-1, 3), pos=rg.pos.numpy().astype(float).reshape(-1, 3),
                           quat=q.astype(float), rgba=np.tile(GREY, (n, 1)), entity=np.full(n, -1),
                           entity_link=np.full(n, -1), meshes=tuple(rg.meshes) or (None,) * n,
                           hfields=tuple(rg.hfields) or (None,) * n, texture=(None,) * n, links={})

    # -- preparation (inside or outside the captured step) ------------------------------------------
    def _geoms(self, P, part) -> None:
        import warp as wp

        from ..kernels import raycast as K

        for src in self.rigid:
            if src.sync is not None:
                src.sync(part)
            links = src.view.rigid_links(part)
            a = src.arrays
            n = len(src.slots)
            if n == 0:
                continue
            lo = P.get("lowers", self.geom_pos[0])
            hi = P.get("uppers", self.geom_pos[0])
            wp.launch(K.geom_poses, dim=(part.n_envs, n), device=self.device, inputs=[
                a["link"], a["pos"], a["rot"], a["center"], a["half"], a["slot"], a["bvh_slot"], self.n_bvh,
                links.pos, links.quat], outputs=[P["gd"].pos, P["gd"].rot, lo, hi])

    def _particles(self, P, part) -> None:
        import warp as wp

        from ..kernels import raycast as K

        pd = P["pd"]
        wp.launch(K.reset_boxes, dim=part.n_envs, device=self.device, outputs=[pd.lo, pd.hi])
        for src in self.particles:
            c = src.get(part)
            outs = [pd.pos, pd.vel, P["group"], pd.lo, pd.hi]
            if src.has_active:
                wp.launch(K.copy_particles, dim=(part.n_envs, src.n), device=self.device,
                          inputs=[src.offset, self.n_particles, self.pm.radius, self.particle_drawn, c.pos, c.vel,
                                  c.active], outputs=outs)
            else:
                wp.launch(K.copy_particles_all_active, dim=(part.n_envs, src.n), device=self.device,
                          inputs=[src.offset, self.n_particles, self.pm.radius, self.particle_drawn, c.pos, c.vel],
                          outputs=outs)
        P["grid"].build(pd.pos, self.pm.cell, groups=P["group"])

    def _surfaces(self, P, part) -> None:
        import warp as wp

        from ..kernels import raycast as K

        if not self.sm.n:
            return
        sd = P["sd"]
        for src in self.surfaces:
            m = src.view.surface_mesh(part)
            wp.launch(K.copy_vertices, dim=(part.n_envs, src.n_verts), device=self.device,
                      inputs=[src.offset, self.sm.n_verts, m.pos], outputs=[sd.verts])
        wp.launch(K.triangle_bounds, dim=(part.n_envs, self.sm.n), device=self.device,
                  inputs=[self.sm.tris, self.sm.n, self.sm.n_verts, sd.verts], outputs=[P["t_lowers"], P["t_uppers"]])

    def prepare(self, part) -> None:
        """Bring partition ``part``'s poses, bounds and acceleration structures to the current state
        (launches, BVH refits and a hash-grid build: graph-capturable)."""
        self.build_structures()          # once (outside the step: in-step ray sensors built them)
        P = self.parts[part.index]
        self._geoms(P, part)
        if self.n_bvh:
            P["bvh"].refit()
        if self.sm.n:
            self._surfaces(P, part)
            P["t_bvh"].refit()
        if self.n_particles:
            self._particles(P, part)

    def prepare_all(self) -> None:
        import warp as wp

        with wp.ScopedDevice(self.device):
            for part in self.layout.partitions:
                self.prepare(part)

    def upload_field(self, field: str, owner: str) -> tuple:
        """Write the per-particle value of ``field`` (entity getters ``get_particles_<field>``: vectors
        by their length, matrices by their Frobenius norm) for colouring; returns its (min, max)."""
        ents = {e.uid: e for e in self.scene.entities}
        host = np.zeros((self.n_envs, self.n_particles), np.float32)
        found = False
        for uid, (start, n) in self.entity_particles.items():
            fn = getattr(ents[uid], f"get_particles_{field}", None)
            if not callable(fn):
                continue
            v = _with_env_axis(fn(), self.scene.batched).astype(float).reshape(self.n_envs, n, -1)
            host[:, start:start + n] = np.linalg.norm(v, axis=2) if v.shape[2] > 1 else v[:, :, 0]
            found = True
        if not found:
            known = sorted({n[len("get_particles_"):] for uid in self.entity_particles for n in dir(ents[uid])
                            if n.startswith("get_particles_")} | {"material", "speed"})
            raise OptionError(f"{owner}: particle_color = {field!r}: no particle entity has get_particles_{field}; "
                              f"allowed: {known}")
        self.p_field.assign(host.reshape(-1))
        fin = host[np.isfinite(host)]
        lo, hi = (float(fin.min()), float(fin.max())) if fin.size else (0.0, 1.0)
        return (lo, hi if hi > lo else lo + 1.0)

    def bounds(self, env: int) -> tuple[np.ndarray, np.ndarray] | None:
        """World bounding box (lo, hi) of env ``env``'s finite content (not infinite planes) after a
        ``prepare``; None when it holds nothing finite."""
        self.build_structures()
        lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
        P = next(P for P in self.parts if P["part"].start <= env < P["part"].stop)
        e = env - P["part"].start
        if self.n_bvh:
            lo = np.minimum(lo, P["lowers"].numpy().reshape(-1, self.n_bvh, 3)[e].min(0))
            hi = np.maximum(hi, P["uppers"].numpy().reshape(-1, self.n_bvh, 3)[e].max(0))
        for k in range(self.gm.n_planes):       # finite planes count, infinite ones do not
            g = int(self.gm.planes.numpy()[k])
            sz = self.gm.size.numpy()[g]
            if sz[0] > 0 and sz[1] > 0:
                c = self.geom_pos.numpy()[env, g]
                R = self.geom_rot.numpy()[env, g]
                ext = np.abs(R) @ np.array([sz[0], sz[1], 0.0])
                lo, hi = np.minimum(lo, c - ext), np.maximum(hi, c + ext)
        if self.n_particles:
            plo, phi = self.p_lo.numpy()[env], self.p_hi.numpy()[env]
            if (plo <= phi).all():
                lo, hi = np.minimum(lo, plo), np.maximum(hi, phi)
        if self.sm.n:
            v = self.verts.numpy().reshape(self.n_envs, -1, 3)[env]
            lo, hi = np.minimum(lo, v.min(0)), np.maximum(hi, v.max(0))
        if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
            return None
        return lo, hi

    # -- names ---------------------------------------------------------------------------------------
    def segmentation_names(self, mode: str) -> dict:
        """{id: name} of the segmentation ids of ``mode`` ("entity", "link", "geom"); -1 is no hit."""
        if mode == "entity":
            return {uid: name for uid, name in self.entity_names.items()}
        if mode == "link":
            return dict(enumerate(self.link_names))
        return {i: o["name"] for i, o in enumerate(self.objects)}

    def resolve_mount(self, owner: str, entity=None, link=None, site=None, pos=(0.0, 0.0, 0.0), rot=None) -> Mount:
        """A sensor's mount: fixed in the world (entity None and no link/site), or on ``link`` / ``site``
        of ``entity`` (its root link when neither is named), ``pos``/``rot`` in that frame."""
        R = np.eye(3) if rot is None else np.asarray(rot, float)
        pos = np.asarray(pos, float)
        if entity is None:
            if link is not None or site is not None:
                raise OptionError(f"{owner}: link = {link!r}, site = {site!r} need entity=... (the entity they belong to)")
            return Mount(pos=pos, rot=R)
        for si, src in enumerate(self.rigid):
            if entity.uid in src.geoms.links:
                desc = entity.description
                lk = src.geoms.links[entity.uid]
                if site is not None:
                    if link is not None:
                        raise OptionError(f"{owner}: give link = ... or site = ..., not both (link = {link!r}, "
                                          f"site = {site!r})")
                    sites = {s.name: s for s in desc.sites}
                    if site not in sites:
                        raise OptionError(f"{owner}: site = {site!r}: entity {entity.name!r} has no such site; its "
                                          f"sites: {sorted(sites)}")
                    s = sites[site]
                    Rs = quat_to_rot(s.quat)
                    li, pos, R = s.link, np.asarray(s.pos, float) + Rs @ pos, Rs @ R
                else:
                    names = [lnk.name for lnk in desc.links]
                    if link is None:
                        li = 0
                    elif link not in names:
                        raise OptionError(f"{owner}: link = {link!r}: entity {entity.name!r} has no such link; its "
                                          f"links: {names}")
                    else:
                        li = names.index(link)
                gl = lk[li]
                return Mount(source=si, link=gl, scene_link=src.link_base + gl, pos=pos, rot=R)
        raise OptionError(f"{owner}: entity {entity.name!r} (solver {entity.solver.name!r}) has no links a sensor "
                          f"can be attached to: allowed entities of a solver exposing polyphys.views.RenderView "
                          f"(rigid, kinematic); or no entity (fixed in the world)")


def solver_entities(scene, solver) -> list:
    return [e for e in scene.entities if e.solver is solver]


def _entity_points(entity, batched: bool, surface: bool):
    """Env-0 positions of an entity's particles (or, ``surface``, of its surface's vertices), or None."""
    if surface:
        getter = getattr(entity, "get_vertices_pos", None) if getattr(entity, "surface_triangles", None) is not None \
            else None
        if getter is None and callable(getattr(entity, "get_triangles", None)):
            try:
                entity.get_triangles()
            except Exception:       # noqa: BLE001 - a particle entity without triangles (not cloth)
                return None
            getter = getattr(entity, "get_particles_pos", None)
    else:
        getter = getattr(entity, "get_particles_pos", None)
        if getter is None:
            getter = getattr(entity, "get_vertices_pos", None)
    if getter is None:
        return None
    return np.asarray(_with_env_axis(getter(), batched)[0], float).reshape(-1, 3)


class RaySet:
    """Rays of several sensors, cast together in one launch per partition (docs/cameras.md).

    ``specs``: :class:`polyphys.raycast.camera.RaySpec` objects; ``columns[i]``: {output: first column}
    of spec i in the arrays ``cast`` writes (its outputs: "depth", "distance", "points", "normals",
    "segmentation", "rgb"). Everything is allocated here; ``cast`` only launches.
    """

    def __init__(self, rs: RayScene, specs: list, columns: list):
        import warp as wp

        from ..kernels import raycast as K

        self.rs, self.specs = rs, specs
        dev, n = rs.device, rs.n_envs
        S = len(specs)
        rsens, relem, rdir, rorg = [], [], [], []
        lights = []
        cols = {k: [] for k in ("depth", "distance", "points", "normals", "segmentation", "rgb")}
        per = {k: [] for k in ("min", "max", "nohit", "excl", "spin", "seg", "amb", "bg", "sh", "l0", "l1", "cm",
                               "clo", "chi")}
        self.mounts = []
        for i, (sp, col) in enumerate(zip(specs, columns, strict=True)):
            m = sp.mount
            self.mounts.append(m)
            nr = len(sp.dirs)
            rsens.append(np.full(nr, i))
            relem.append(np.arange(nr))
            rdir.append(np.asarray(sp.dirs, float))
            rorg.append(np.zeros((nr, 3)) if sp.origins is None else np.asarray(sp.origins, float))
            for k in cols:
                cols[k].append(int(col.get(k, -1)))
            per["min"].append(sp.min_range)
            per["max"].append(sp.max_range)
            per["nohit"].append(sp.no_hit)
            per["excl"].append(m.scene_link if sp.exclude_parent and m.scene_link >= 0 else -1)
            per["spin"].append(sp.spin)
            per["seg"].append({"entity": 0, "link": 1, "geom": 2}[sp.segmentation])
            per["amb"].append(sp.shading.ambient)
            per["bg"].append(sp.shading.background)
            per["sh"].append(int(sp.shading.shadows))
            per["l0"].append(len(lights))
            lights += list(sp.shading.lights)
            per["l1"].append(len(lights))
            per["cm"].append({"material": 0, "speed": 1}.get(sp.shading.particle_color, 2))
            lo, hi = sp.shading.color_range if sp.shading.color_range is not None else (0.0, 1.0)
            per["clo"].append(lo)
            per["chi"].append(hi)

        def arr(a, dtype):
            return wp.array(np.ascontiguousarray(a), dtype=dtype, device=dev)

        i32 = lambda a: arr(np.asarray(a, np.int32).reshape(-1), wp.int32)  # noqa: E731
        f32 = lambda a: arr(np.asarray(a, np.float32).reshape(-1), wp.float32)  # noqa: E731
        v3 = lambda a: arr(np.asarray(a, np.float32).reshape(-1, 3), wp.vec3)  # noqa: E731
        R = K.Rays()
        R.n = int(sum(len(x) for x in rsens))
        R.ray_sensor, R.ray_elem = i32(np.concatenate(rsens)), i32(np.concatenate(relem))
        R.ray_dir, R.ray_org = v3(np.concatenate(rdir)), v3(np.concatenate(rorg))
        R.min_range, R.max_range, R.no_hit = f32(per["min"]), f32(per["max"]), f32(per["nohit"])
        R.exclude_link, R.spin = i32(per["excl"]), f32(per["spin"])
        R.col_depth, R.col_dist, R.col_point = i32(cols["depth"]), i32(cols["distance"]), i32(cols["points"])
        R.col_normal, R.col_seg, R.col_rgb = i32(cols["normals"]), i32(cols["segmentation"]), i32(cols["rgb"])
        R.seg_mode = i32(per["seg"])
        R.ambient, R.background, R.shadows = v3(per["amb"]), v3(per["bg"]), i32(per["sh"])
        R.light_start, R.light_end = i32(per["l0"]), i32(per["l1"])
        lt = lights or [None]
        R.light_type = i32([0 if li is None else (1 if li.type == "point" else 0) for li in lt])
        R.light_vec = v3([(0, 0, -1) if li is None else (li.pos if li.type == "point" else li.dir) for li in lt])
        R.light_rgb = v3([(0, 0, 0) if li is None else np.asarray(li.color) * li.intensity for li in lt])
        R.light_camera = i32([0 if li is None else int(li.frame == "camera") for li in lt])
        R.color_mode, R.color_lo, R.color_hi = i32(per["cm"]), f32(per["clo"]), f32(per["chi"])
        R.cmap = v3(VIRIDIS)
        self.rays = R
        self.n_sensors = S
        self.sensor_pos = wp.zeros((n, max(S, 1)), dtype=wp.vec3, device=dev)
        self.sensor_rot = wp.zeros((n, max(S, 1)), dtype=wp.mat33, device=dev)
        self.zero_tick = wp.zeros(n, dtype=wp.int32, device=dev)
        # mounts grouped by rigid source (-1: the world)
        self.mount_groups = []
        for src in sorted({m.source for m in self.mounts}):
            idx = [i for i, m in enumerate(self.mounts) if m.source == src]
            self.mount_groups.append(dict(
                source=src, n=len(idx), link=i32([self.mounts[i].link for i in idx]),
                pos=v3([self.mounts[i].pos for i in idx]),
                rot=arr(np.asarray([self.mounts[i].rot for i in idx], np.float32).reshape(-1, 3, 3), wp.mat33),
                slot=i32(idx)))
        self._dummy_links = (wp.zeros((n, 1), dtype=wp.vec3, device=dev), wp.zeros((n, 1), dtype=wp.quat, device=dev))

    def update_shading(self, i: int, color_range) -> None:
        """Change sensor i's particle colour-map range (outside the step)."""
        lo, hi = color_range
        for arr_, v in ((self.rays.color_lo, lo), (self.rays.color_hi, hi)):
            a = arr_.numpy()
            a[i] = v
            arr_.assign(a)

    def poses(self, part) -> None:
        import warp as wp

        from ..kernels import raycast as K

        sl = slice(part.start, part.stop)
        for g in self.mount_groups:
            if g["source"] >= 0:
                links = self.rs.rigid[g["source"]].view.rigid_links(part)
                lp, lq = links.pos, links.quat
            else:
                lp, lq = self._dummy_links[0][sl], self._dummy_links[1][sl]
            wp.launch(K.sensor_poses, dim=(part.n_envs, g["n"]), device=self.rs.device,
                      inputs=[g["link"], g["pos"], g["rot"], g["slot"], lp, lq],
                      outputs=[self.sensor_pos[sl], self.sensor_rot[sl]])

    def cast(self, part, out, tick=None, env_offset: int = 0, n_rows: int | None = None) -> None:
        """Launch the rays for rows [0, n_rows) of ``out`` = envs env_offset.. of partition ``part``
        (after ``rs.prepare(part)`` and ``poses(part)``). ``tick``: the partition's per-env sensor
        tick (spinning patterns), None: 0."""
        import warp as wp

        from ..kernels import raycast as K

        rs, P = self.rs, self.rs.parts[part.index]
        sl = slice(part.start, part.stop)
        n_rows = part.n_envs if n_rows is None else n_rows
        if self.rays.n == 0 or n_rows == 0:
            return
        wp.launch(K.cast_rays, dim=(n_rows, self.rays.n), device=rs.device, inputs=[
            self.rays, rs.objs, rs.gm, rs.pm, rs.sm, int(env_offset), P["gd"], P["pd"], P["sd"],
            self.sensor_pos[sl], self.sensor_rot[sl], self.zero_tick[sl] if tick is None else tick], outputs=[out])

    def world_poses(self) -> tuple[np.ndarray, np.ndarray]:
        """(n_envs, S, 3) positions and (n_envs, S, 3, 3) rotations of every sensor now (outside the
        step: the links are synchronised first)."""
        import warp as wp

        with wp.ScopedDevice(self.rs.device):
            for part in self.rs.layout.partitions:
                for src in self.rs.rigid:
                    if src.sync is not None:
                        src.sync(part)
                self.poses(part)
        return self.sensor_pos.numpy()[:, : self.n_sensors], self.sensor_rot.numpy()[:, : self.n_sensors]
