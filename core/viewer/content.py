"""What a scene shows: static content (bodies with their geoms, particle sets, surfaces, cameras)
and per-step frames, read from a built scene through public entity getters only.

No plugin is imported. An entity is classified by what it offers (docs/viewer.md, "What is drawn"):

- a *body*: ``description`` (a :class:`polyphys.description.EntityDescription`) and
  ``get_links_pos()`` / ``get_links_quat()`` (rigid and kinematic entities); contacts through
  ``get_contacts(is_padded=True)`` where the entity has it;
- a *surface*: ``surface_triangles`` with ``get_vertices_pos()`` (FEM), or ``get_triangles()`` with
  ``get_particles_pos()`` (PBD cloth);
- a *particle set*: ``get_particles_pos()`` (MPM, SPH, PBD); any other ``get_particles_<field>``
  getter is a field the viewer can colour by (vectors by their length, matrices by their norm);
- a *camera*: a scene sensor with ``fov_y`` (degrees), ``resolution`` (width, height) and
  ``get_pose(envs_idx=None)`` returning world ``(pos, quat wxyz)``.

A frame is a dict of float32 arrays, always with the env axis (``n_envs`` = max(1, scene n_envs)):
``b{i}.pos`` (E, L, 3) and ``b{i}.quat`` (E, L, 4, wxyz) per body, ``p{i}.pos`` (E, n, 3) and
``p{i}.f.<field>`` (E, n) per particle set, ``s{i}.verts`` (E, nv, 3) per surface, ``c{i}.pos`` /
``c{i}.quat`` per camera, and contacts as flat lists ``contact.pos`` (K, 3), ``contact.force``
(K, 3, world N on geom A), ``contact.env`` (K,).
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from .. import rotations as _rot
from ..errors import OptionError, PolyphysError

# Colours of entities without a Surface colour, chosen by material class (one material, one colour).
PALETTE = ((0.90, 0.45, 0.10), (0.12, 0.47, 0.71), (0.17, 0.63, 0.17), (0.58, 0.40, 0.74),
           (0.55, 0.34, 0.29), (0.89, 0.47, 0.76), (0.74, 0.74, 0.13), (0.09, 0.75, 0.81))
PLANE_DEFAULT_HALF = 5.0     # half size (m) drawn for an infinite plane (MJCF size 0)


@attrs.define
class GeomInfo:
    name: str
    type: str                 # polyphys.description GEOM_TYPES
    link: int                 # link index within the body
    size: tuple
    pos: tuple                # in the link frame
    quat: tuple               # wxyz, in the link frame
    rgba: tuple
    role: str                 # "visual", "collision" or "both"
    mesh: int = -1            # index into Content.meshes (mesh and hfield geoms)


@attrs.define
class BodyInfo:
    name: str
    uid: int
    solver: str
    link_names: list
    geoms: list               # [GeomInfo]
    has_contacts: bool = False


@attrs.define
class ParticleInfo:
    name: str
    uid: int
    solver: str
    material: str
    n: int
    radius: float             # half the particle spacing (m): point size and USD width / 2
    color: tuple
    fields: list              # colourable fields available live (getter suffixes)
    recorded_fields: list = attrs.field(factory=list)


@attrs.define
class SurfaceInfo:
    name: str
    uid: int
    solver: str
    material: str
    n_verts: int
    triangles: Any            # (m, 3) int32, local vertex indices
    color: tuple


@attrs.define
class CameraInfo:
    name: str
    fov_y: float              # degrees
    aspect: float             # width / height


@attrs.define
class Content:
    """The static part of what a scene shows (shared by the live viewer, recordings and USD)."""

    n_envs: int               # >= 1 (env axis of every frame array)
    batched: bool
    dt: float
    bodies: list = attrs.field(factory=list)
    particles: list = attrs.field(factory=list)
    surfaces: list = attrs.field(factory=list)
    cameras: list = attrs.field(factory=list)
    meshes: list = attrs.field(factory=list)      # [(vertices (n, 3) float32, faces (m, 3) int32)]
    skipped: list = attrs.field(factory=list)     # "name: reason" for entities not drawn
    scene_name: str = "scene"

    def to_meta(self) -> dict:
        """JSON-able form (meshes and triangles are stored as arrays beside it)."""
        def body(b):
            return {"name": b.name, "uid": b.uid, "solver": b.solver, "link_names": list(b.link_names),
                    "has_contacts": b.has_contacts,
                    "geoms": [{"name": g.name, "type": g.type, "link": g.link, "size": list(g.size),
                               "pos": list(g.pos), "quat": list(g.quat), "rgba": list(g.rgba),
                               "role": g.role, "mesh": g.mesh} for g in b.geoms]}

        return {
            "n_envs": self.n_envs, "batched": self.batched, "dt": self.dt, "scene_name": self.scene_name,
            "bodies": [body(b) for b in self.bodies],
            "particles": [{"name": p.name, "uid": p.uid, "solver": p.solver, "material": p.material, "n": p.n,
                           "radius": p.radius, "color": list(p.color), "fields": list(p.fields),
                           "recorded_fields": list(p.recorded_fields)} for p in self.particles],
            "surfaces": [{"name": s.name, "uid": s.uid, "solver": s.solver, "material": s.material,
                          "n_verts": s.n_verts, "color": list(s.color)} for s in self.surfaces],
            "cameras": [{"name": c.name, "fov_y": c.fov_y, "aspect": c.aspect} for c in self.cameras],
            "n_meshes": len(self.meshes),
            "skipped": list(self.skipped),
        }

    @classmethod
    def from_meta(cls, meta: dict, meshes: list, triangles: list) -> Content:
        bodies = [BodyInfo(b["name"], b["uid"], b["solver"], b["link_names"],
                           [GeomInfo(g["name"], g["type"], g["link"], tuple(g["size"]), tuple(g["pos"]),
                                     tuple(g["quat"]), tuple(g["rgba"]), g["role"], g["mesh"])
                            for g in b["geoms"]], b.get("has_contacts", False)) for b in meta["bodies"]]
        parts = [ParticleInfo(p["name"], p["uid"], p["solver"], p["material"], p["n"], p["radius"],
                              tuple(p["color"]), list(p["fields"]), list(p.get("recorded_fields", [])))
                 for p in meta["particles"]]
        surfs = [SurfaceInfo(s["name"], s["uid"], s["solver"], s["material"], s["n_verts"], tri,
                             tuple(s["color"])) for s, tri in zip(meta["surfaces"], triangles, strict=True)]
        cams = [CameraInfo(c["name"], c["fov_y"], c["aspect"]) for c in meta.get("cameras", [])]
        return cls(n_envs=meta["n_envs"], batched=meta["batched"], dt=meta["dt"], bodies=bodies,
                   particles=parts, surfaces=surfs, cameras=cams, meshes=list(meshes),
                   skipped=list(meta.get("skipped", [])), scene_name=meta.get("scene_name", "scene"))

    # -- convenience -------------------------------------------------------------------------------
    def field_names(self, recorded: bool = False) -> list:
        names = []
        for p in self.particles:
            for f in (p.recorded_fields if recorded else p.fields):
                if f not in names:
                    names.append(f)
        return names


# -- reading a scene ------------------------------------------------------------------------------
def _color_of(entity, fallback_key: str) -> tuple:
    surf = getattr(entity, "surface", None)
    col = getattr(surf, "color", None) if surf is not None else None
    if col is not None:
        return tuple(float(c) for c in tuple(col)[:3])
    idx = sum(ord(ch) for ch in fallback_key) % len(PALETTE)
    return PALETTE[idx]


def _spacing(points: np.ndarray) -> float:
    """Median nearest-neighbour distance of (n, 3) points (a sampled lattice: its spacing)."""
    p = np.asarray(points, dtype=float).reshape(-1, 3)
    if len(p) < 2:
        return 0.01
    if len(p) > 4000:
        p = p[np.linspace(0, len(p) - 1, 4000).astype(int)]
    from scipy.spatial import cKDTree

    d, _ = cKDTree(p).query(p, k=2)
    d = d[:, 1][np.isfinite(d[:, 1]) & (d[:, 1] > 0)]
    return float(np.median(d)) if d.size else 0.01


def _with_env_axis(arr, batched: bool) -> np.ndarray:
    a = np.asarray(arr)
    return a if batched else a[None]


def primitive_mesh(g: GeomInfo) -> tuple[np.ndarray, np.ndarray]:
    """Triangles of a primitive geom in its own frame (MuJoCo half sizes; see core/description.py)."""
    import trimesh

    s = tuple(g.size) + (0.0, 0.0, 0.0)
    t = g.type
    if t == "sphere":
        m = trimesh.creation.icosphere(subdivisions=2, radius=s[0])
    elif t == "ellipsoid":
        m = trimesh.creation.icosphere(subdivisions=2, radius=1.0)
        m.apply_scale(np.array([s[0], s[1], s[2]]))
    elif t == "capsule":
        m = trimesh.creation.capsule(height=2 * s[1], radius=s[0], count=[16, 16])
    elif t == "cylinder":
        m = trimesh.creation.cylinder(radius=s[0], height=2 * s[1], sections=24)
    elif t == "box":
        m = trimesh.creation.box(extents=[2 * s[0], 2 * s[1], 2 * s[2]])
    elif t == "plane":
        hx = s[0] if s[0] > 0 else PLANE_DEFAULT_HALF
        hy = s[1] if s[1] > 0 else PLANE_DEFAULT_HALF
        v = np.array([[-hx, -hy, 0], [hx, -hy, 0], [hx, hy, 0], [-hx, hy, 0]], dtype=np.float32)
        return v, np.array([[0, 1, 2], [0, 2, 3]], dtype=np.int32)
    else:
        raise OptionError(f"geom {g.name!r}: type {t!r} has no primitive mesh")
    return np.asarray(m.vertices, np.float32), np.asarray(m.faces, np.int32)


def _hfield_mesh(hf) -> tuple[np.ndarray, np.ndarray]:
    z, (rx, ry, _zb) = hf
    nrow, ncol = z.shape
    xs = np.linspace(-rx, rx, ncol)
    ys = np.linspace(-ry, ry, nrow)
    X, Y = np.meshgrid(xs, ys)
    v = np.stack([X, Y, z], axis=-1).reshape(-1, 3).astype(np.float32)
    idx = np.arange(nrow * ncol).reshape(nrow, ncol)
    a, b, c, d = idx[:-1, :-1], idx[:-1, 1:], idx[1:, 1:], idx[1:, :-1]
    f = np.concatenate([np.stack([a, b, c], -1).reshape(-1, 3), np.stack([a, c, d], -1).reshape(-1, 3)])
    return v, f.astype(np.int32)


def _particle_fields(entity) -> list:
    out = []
    for n in sorted(dir(entity)):
        if n.startswith("get_particles_") and n != "get_particles_pos" and callable(getattr(entity, n, None)):
            out.append(n[len("get_particles_"):])
    return out


def scene_content(scene, name: str = "scene") -> Content:
    """The static content of a built scene (entities classified as documented in the module)."""
    if not getattr(scene, "built", False):
        from ..errors import SceneStateError

        raise SceneStateError("the viewer reads a built scene: call scene.build() first")
    n = max(1, int(scene.n_envs))
    content = Content(n_envs=n, batched=bool(scene.batched), dt=float(scene.sim_options.dt), scene_name=name)
    for e in scene.entities:
        morph = getattr(e, "morph", None)
        if morph is not None and getattr(morph, "visualization", True) is False:
            content.skipped.append(f"{e.name}: morph.visualization = False")
            continue
        solver = getattr(e.solver, "name", "?")
        mat = type(getattr(e, "material", None)).__name__
        desc = getattr(e, "description", None)
        if desc is not None and callable(getattr(e, "get_links_pos", None)) \
                and callable(getattr(e, "get_links_quat", None)):
            content.bodies.append(_body(content, e, desc, solver))
            continue
        surf = _surface(e)
        if surf is not None:
            tris, getter = surf
            v0 = _with_env_axis(getter(), scene.batched)
            content.surfaces.append(SurfaceInfo(e.name, e.uid, solver, mat, int(v0.shape[1]),
                                                np.asarray(tris, np.int32).reshape(-1, 3),
                                                _color_of(e, mat)))
            continue
        if callable(getattr(e, "get_particles_pos", None)):
            p0 = _with_env_axis(e.get_particles_pos(), scene.batched)
            content.particles.append(ParticleInfo(e.name, e.uid, solver, mat, int(p0.shape[1]),
                                                  0.5 * _spacing(p0[0]), _color_of(e, mat),
                                                  _particle_fields(e)))
            continue
        content.skipped.append(f"{e.name}: {type(e).__name__} offers no drawable getter "
                               f"(get_links_pos, get_particles_pos, get_vertices_pos)")
    for s in getattr(scene, "sensors", []):
        if all(hasattr(s, a) for a in ("fov_y", "resolution", "get_pose")):
            w, h = s.resolution
            content.cameras.append(CameraInfo(getattr(s, "name", f"camera{len(content.cameras)}"),
                                              float(s.fov_y), float(w) / float(h)))
    return content


def _surface(e):
    tris = getattr(e, "surface_triangles", None)
    if tris is not None and callable(getattr(e, "get_vertices_pos", None)):
        return tris, e.get_vertices_pos
    if callable(getattr(e, "get_triangles", None)) and callable(getattr(e, "get_particles_pos", None)):
        try:
            return e.get_triangles(), e.get_particles_pos
        except PolyphysError:        # e.g. a PBD entity that is not cloth
            return None
    return None


def _body(content: Content, e, desc, solver: str) -> BodyInfo:
    from ..sdf_grid import hfield_heights

    color = None
    surf = getattr(e, "surface", None)
    if surf is not None and getattr(surf, "color", None) is not None:
        color = tuple(float(c) for c in tuple(surf.color)[:4]) + (1.0,) * (4 - len(tuple(surf.color)[:4]))
    geoms = []
    for g in desc.geoms:
        rgba = color if color is not None else tuple(float(c) for c in g.rgba)
        gi = GeomInfo(g.name, g.type, int(g.link), tuple(float(x) for x in tuple(g.size)),
                      tuple(g.pos), tuple(g.quat), rgba, g.role)
        if g.type == "mesh":
            if g.mesh is None:
                content.skipped.append(f"{e.name}/{g.name}: mesh geom without triangles")
                continue
            content.meshes.append((np.asarray(g.mesh.vertices, np.float32), np.asarray(g.mesh.faces, np.int32)))
            gi.mesh = len(content.meshes) - 1
        elif g.type == "hfield":
            hf = hfield_heights(g.hfield, f"geom {g.name!r}")
            if hf is None:
                content.skipped.append(f"{e.name}/{g.name}: heightfield without elevation data")
                continue
            content.meshes.append(_hfield_mesh(hf))
            gi.mesh = len(content.meshes) - 1
        geoms.append(gi)
    return BodyInfo(e.name, e.uid, solver, [lk.name for lk in desc.links], geoms,
                    has_contacts=callable(getattr(e, "get_contacts", None)))


# -- frames ---------------------------------------------------------------------------------------
class FrameReader:
    """Reads frames of a live scene for a :class:`Content` (the same entity order)."""

    def __init__(self, scene, content: Content, fields=(), contacts: bool = True):
        self.scene = scene
        self.content = content
        by_uid = {e.uid: e for e in scene.entities}
        self.bodies = [by_uid[b.uid] for b in content.bodies]
        self.particles = [by_uid[p.uid] for p in content.particles]
        self.surfaces = [by_uid[s.uid] for s in content.surfaces]
        self.cameras = [s for s in getattr(scene, "sensors", [])
                        if all(hasattr(s, a) for a in ("fov_y", "resolution", "get_pose"))]
        self.fields = check_fields(content, fields, recorded=False)
        self.contacts = contacts and any(b.has_contacts for b in content.bodies)
        # contacts are read once per solver: a contact is kept by the entity owning its geom A
        self._geom_owner: dict[str, np.ndarray] = {}
        for e in self.bodies:
            sname = e.solver.name
            if sname not in self._geom_owner and callable(getattr(e, "get_contacts", None)):
                ents = list(getattr(e.solver, "entities", []))
                counts = [len(x.description.geoms) if hasattr(x, "description") else 0 for x in ents]
                self._geom_owner[sname] = np.repeat(np.arange(len(ents)), counts)
        self.batched = bool(scene.batched)

    def read(self) -> dict:
        b = self.batched
        out: dict[str, np.ndarray] = {}
        for i, e in enumerate(self.bodies):
            out[f"b{i}.pos"] = _with_env_axis(e.get_links_pos(), b).astype(np.float32)
            out[f"b{i}.quat"] = _with_env_axis(e.get_links_quat(), b).astype(np.float32)
        for i, e in enumerate(self.particles):
            out[f"p{i}.pos"] = _with_env_axis(e.get_particles_pos(), b).astype(np.float32)
            for f in self.fields:
                fn = getattr(e, f"get_particles_{f}", None)
                if fn is not None:
                    out[f"p{i}.f.{f}"] = field_scalar(_with_env_axis(fn(), b), self.content.n_envs,
                                                      self.content.particles[i].n)
        for i, e in enumerate(self.surfaces):
            getter = e.get_vertices_pos if hasattr(e, "surface_triangles") else e.get_particles_pos
            out[f"s{i}.verts"] = _with_env_axis(getter(), b).astype(np.float32)
        for i, c in enumerate(self.cameras):
            pos, quat = c.get_pose()
            out[f"c{i}.pos"] = _with_env_axis(pos, b).astype(np.float32).reshape(-1, 3)
            out[f"c{i}.quat"] = _with_env_axis(quat, b).astype(np.float32).reshape(-1, 4)
        if self.contacts:
            out.update(self._contacts())
        return out

    def _contacts(self) -> dict:
        pos, force, env = [], [], []
        for e in self.bodies:
            owner = self._geom_owner.get(e.solver.name)
            if owner is None:
                continue
            try:
                c = e.get_contacts(is_padded=True)
            except PolyphysError:
                continue
            valid = np.asarray(c.get("valid_mask", np.ones(np.shape(c["geom_a"]), bool)))
            ga, gb = np.asarray(c["geom_a"]), np.asarray(c["geom_b"])
            p, f = np.asarray(c["position"]), np.asarray(c["force_a"])
            if valid.ndim == 1:                       # unbatched scene: no env axis
                valid, ga, gb, p, f = valid[None], ga[None], gb[None], p[None], f[None]

            oa, ob = _owner(owner, ga), _owner(owner, gb)
            keeper = np.where(oa >= 0, oa, ob)
            keep = valid & (keeper == e.idx)
            ei, ki = np.nonzero(keep)
            pos.append(p[ei, ki])
            force.append(f[ei, ki])
            env.append(ei)
        if not pos:
            return {"contact.pos": np.zeros((0, 3), np.float32), "contact.force": np.zeros((0, 3), np.float32),
                    "contact.env": np.zeros((0,), np.int32)}
        return {"contact.pos": np.concatenate(pos).astype(np.float32).reshape(-1, 3),
                "contact.force": np.concatenate(force).astype(np.float32).reshape(-1, 3),
                "contact.env": np.concatenate(env).astype(np.int32)}


def _owner(owner: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Solver entity index owning each geom index (-1: the world or another solver)."""
    if len(owner) == 0:
        return np.full(np.shape(g), -1)
    gc = np.clip(g, 0, len(owner) - 1)
    return np.where((g >= 0) & (g < len(owner)), owner[gc], -1)


def field_scalar(values: np.ndarray, n_envs: int, n: int) -> np.ndarray:
    """Per-particle scalar of a getter's output (E, n, ...): itself, a vector's length or a matrix's
    Frobenius norm; booleans as 0/1."""
    a = np.asarray(values)
    if a.dtype == bool:
        a = a.astype(np.float32)
    a = a.reshape(n_envs, n, -1).astype(np.float64)
    s = a[..., 0] if a.shape[-1] == 1 else np.sqrt((a * a).sum(-1))
    return s.astype(np.float32)


def check_fields(content: Content, fields, recorded: bool) -> list:
    """Validate field names to colour by; an unknown one is an OptionError naming the known ones."""
    if fields is None:
        return []
    if isinstance(fields, str):
        fields = [fields]
    known = content.field_names(recorded=recorded)
    out = []
    for f in fields:
        if f == "material":
            continue
        if f not in known:
            where = "recorded in this run" if recorded else "offered by the scene's particle getters"
            raise OptionError(f"colour by {f!r}: unknown field; fields {where}: {['material', *known]}"
                              + ("; record more with [run.states] fields = [...]" if recorded else ""))
        out.append(f)
    return out


# -- geometry helpers shared by the viewer and the USD export ---------------------------------------
def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product of (..., 4) wxyz quaternions, in the inputs' precision (polyphys.rotations)."""
    return _rot.quat_mul(a, b, dtype=None)


def quat_rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate (..., 3) vectors by (..., 4) wxyz unit quaternions, in the inputs' precision."""
    return _rot.quat_rotate(q, v, dtype=None)


def geom_world_poses(link_pos: np.ndarray, link_quat: np.ndarray, geoms: list) -> tuple[np.ndarray, np.ndarray]:
    """World (pos (E, G, 3), quat (E, G, 4)) of each geom from link poses (E, L, 3/4)."""
    if not geoms:
        E = link_pos.shape[0]
        return np.zeros((E, 0, 3), np.float32), np.zeros((E, 0, 4), np.float32)
    li = np.array([g.link for g in geoms])
    gp = np.array([g.pos for g in geoms], dtype=np.float64)
    gq = np.array([g.quat for g in geoms], dtype=np.float64)
    lp = link_pos[:, li].astype(np.float64)
    lq = link_quat[:, li].astype(np.float64)
    pos = lp + quat_rotate(lq, np.broadcast_to(gp, lp.shape))
    quat = quat_mul(lq, np.broadcast_to(gq, lq.shape))
    return pos.astype(np.float32), quat.astype(np.float32)


def frame_bbox(content: Content, frame: dict, env: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Axis-aligned bounds (lo, hi) of one env's content in a frame (planes excluded: they are
    drawn larger than the scene)."""
    pts = [np.zeros((1, 3), np.float32)]
    for i, b in enumerate(content.bodies):
        gp, _ = geom_world_poses(frame[f"b{i}.pos"][env:env + 1], frame[f"b{i}.quat"][env:env + 1],
                                 [g for g in b.geoms if g.type != "plane"])
        pts += [gp.reshape(-1, 3), frame[f"b{i}.pos"][env].reshape(-1, 3)]
    for i in range(len(content.particles)):
        pts.append(frame[f"p{i}.pos"][env].reshape(-1, 3))
    for i in range(len(content.surfaces)):
        pts.append(frame[f"s{i}.verts"][env].reshape(-1, 3))
    p = np.concatenate(pts)
    p = p[np.all(np.isfinite(p), axis=1)]
    return p.min(0), p.max(0)


def env_spacing(bbox) -> float:
    """Distance (m) between neighbouring envs in the grid layout: 1.5 × the horizontal extent + 0.5 m,
    at least 1 m."""
    ext = float(np.max(bbox[1][:2] - bbox[0][:2]))
    return max(1.0, 1.5 * ext + 0.5)


def grid_offsets(n: int, spacing: float) -> np.ndarray:
    """(n, 3) offsets laying n envs on a square grid in the xy plane (env 0 at the origin)."""
    cols = max(1, math.ceil(math.sqrt(n)))
    i = np.arange(n)
    return np.stack([(i % cols) * spacing, (i // cols) * spacing, np.zeros(n)], axis=-1).astype(np.float32)
