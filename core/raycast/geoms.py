"""Host-side geometry for ray casting: a rigid-side solver's geoms as :class:`polyphys.views.RenderGeoms`
(``render_geoms_of``), the closed triangle mesh of a heightfield, and local bounding boxes.

No Warp import here: a solver's ``render_geoms()`` calls :func:`render_geoms_of` with its entities
and where each entity's links start in its arrays.
"""

from __future__ import annotations

import numpy as np

from ..description import GeomType
from ..geometry import GEOM_CODES
from ..views import RenderGeoms

HIDDEN_GROUP = 3          # geoms of group >= 3 are not drawn (MuJoCo's default visible groups are 0, 1, 2)
DEFAULT_CHECKER = 0.5     # checker square (m) of a plane without texture and without a grid spacing
CHECKER_DARK = 0.75       # the second checker colour of an untextured plane: its rgba times this


def _surface_rgba(entity):
    surf = getattr(entity, "surface", None)
    col = getattr(surf, "color", None) if surf is not None else None
    if col is None:
        return None
    c = tuple(float(x) for x in tuple(col)[:4])
    return c + (1.0,) * (4 - len(c))


def render_geoms_of(entities, link_starts) -> RenderGeoms:
    """The :class:`RenderGeoms` of ``entities`` (each with a ``description``), whose links start at
    ``link_starts[i]`` in the solver's link arrays. Visual geoms and geoms that are both visual and
    collision are kept, collision-only geoms are not (a URDF's collision meshes), nor geoms of group
    >= HIDDEN_GROUP (MuJoCo draws groups 0–2 by default), nor any geom of an entity whose morph has
    ``visualization = False``. Colours: the entity's
    Surface colour when it has one, else the geom's rgba; a plane gets a checker (its texture, or
    its rgba and CHECKER_DARK times it with squares of its grid spacing ``size[2]``, else
    DEFAULT_CHECKER m)."""
    from ..sdf_grid import hfield_heights

    rows = []
    names, tex, meshes, hfs = [], [], [], []
    links: dict = {}
    for e, ls in zip(entities, link_starts, strict=True):
        desc = e.description
        links[e.uid] = tuple(int(ls) + i for i in range(len(desc.links)))
        if getattr(getattr(e, "morph", None), "visualization", True) is False:
            continue
        surf = _surface_rgba(e)
        for gi, g in enumerate(desc.geoms):
            if g.role == "collision" or g.group >= HIDDEN_GROUP:
                continue
            code = GEOM_CODES[g.type]
            mesh = hf = None
            size = tuple(float(x) for x in (tuple(g.size) + (0.0, 0.0, 0.0))[:3])
            if code == GeomType.MESH:
                if g.mesh is None:
                    continue
                mesh = (np.asarray(g.mesh.vertices, float).reshape(-1, 3), np.asarray(g.mesh.faces, np.int64).reshape(-1, 3))
            elif code == GeomType.HFIELD:
                hf = hfield_heights(g.hfield, f"geom {g.name!r}")
                if hf is None:
                    continue
                size = tuple(float(x) for x in hf[1])
            rgba = surf if surf is not None else tuple(float(x) for x in g.rgba)
            t = None
            if g.texture is not None:
                rgb1, rgb2, square = g.texture
                t = (np.asarray(rgb1, float)[:3] * rgba[:3], np.asarray(rgb2, float)[:3] * rgba[:3], float(square))
            elif code == GeomType.PLANE:
                square = size[2] if size[2] > 0 else DEFAULT_CHECKER
                t = (np.asarray(rgba[:3]), CHECKER_DARK * np.asarray(rgba[:3]), float(square))
            rows.append((int(ls) + int(g.link), code, size, tuple(g.pos), tuple(g.quat), rgba, e.uid, int(g.link)))
            names.append(f"{e.name}/{g.name or f'geom{gi}'}")
            tex.append(t)
            meshes.append(mesh)
            hfs.append(hf)
    col = list(zip(*rows)) if rows else [[]] * 8
    return RenderGeoms(link=np.asarray(col[0], np.int64), type=np.asarray(col[1], np.int64),
                       size=np.asarray(col[2], float).reshape(-1, 3), pos=np.asarray(col[3], float).reshape(-1, 3),
                       quat=np.asarray(col[4], float).reshape(-1, 4), rgba=np.asarray(col[5], float).reshape(-1, 4),
                       entity=np.asarray(col[6], np.int64), entity_link=np.asarray(col[7], np.int64),
                       name=tuple(names), texture=tuple(tex), meshes=tuple(meshes), hfields=tuple(hfs), links=links)


def hfield_mesh(hf) -> tuple[np.ndarray, np.ndarray]:
    """A closed triangle mesh of a heightfield solid (geom frame): the surface triangulated as the
    collision SDF does (cell (r, c) split along its (r, c)–(r+1, c+1) diagonal), four walls down to
    z = -z_bottom and the bottom; outward winding."""
    z, (rx, ry, zb) = hf
    nr, nc = z.shape
    xs, ys = np.linspace(-rx, rx, nc), np.linspace(-ry, ry, nr)
    X, Y = np.meshgrid(xs, ys)
    top = np.stack([X, Y, z], -1).reshape(-1, 3)
    idx = np.arange(nr * nc).reshape(nr, nc)
    a, b, c, d = idx[:-1, :-1], idx[:-1, 1:], idx[1:, 1:], idx[1:, :-1]
    faces = [np.stack([a, b, c], -1).reshape(-1, 3), np.stack([a, c, d], -1).reshape(-1, 3)]
    # walls: the boundary ring (counter-clockwise seen from +z) with a bottom copy of each vertex
    ring = np.concatenate([idx[0, :-1], idx[:-1, -1], idx[-1, :0:-1], idx[:0:-1, 0]])
    base = len(top)
    bot = top[ring].copy()
    bot[:, 2] = -zb
    verts = np.concatenate([top, bot])
    k = np.arange(len(ring))
    k1 = (k + 1) % len(ring)
    t0, t1 = ring[k], ring[k1]
    b0, b1 = base + k, base + k1
    faces += [np.stack([t0, b0, b1], -1), np.stack([t0, b1, t1], -1)]
    # bottom: a fan over the bottom ring, facing -z
    faces.append(np.stack([np.full(len(ring) - 2, base), base + k[2:], base + k[1:-1]], -1))
    return verts, np.concatenate(faces).astype(np.int64)


def local_bounds(code: int, size, mesh=None) -> tuple[np.ndarray, np.ndarray]:
    """(centre, half extent) of a geom's bounding box in its own frame (planes: unbounded, not used)."""
    s = np.asarray(size, float)
    if code == GeomType.SPHERE:
        return np.zeros(3), np.full(3, s[0])
    if code == GeomType.CAPSULE:
        return np.zeros(3), np.array([s[0], s[0], s[1] + s[0]])
    if code == GeomType.CYLINDER:
        return np.zeros(3), np.array([s[0], s[0], s[1]])
    if code in (GeomType.BOX, GeomType.ELLIPSOID):
        return np.zeros(3), s.copy()
    if code in (GeomType.MESH, GeomType.HFIELD) and mesh is not None:
        v = np.asarray(mesh[0], float)
        lo, hi = v.min(0), v.max(0)
        return (lo + hi) / 2, (hi - lo) / 2
    return np.zeros(3), np.zeros(3)
