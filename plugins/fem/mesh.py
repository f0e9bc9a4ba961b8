"""Tetrahedral meshes for the FEM solver (NumPy only; no mesher dependency).

- Box: a structured grid whose cubes are split into the 6 tetrahedra around a main diagonal
  (Kuhn split), mirrored from cube to cube so that the pattern is symmetric; neighbouring faces
  match (conforming) and there is no sliver (every tet has volume cell/6).
- Cylinder: the same grid on a square, mapped to the disc ring by ring (concentric squares to
  circles), which keeps every tet positively oriented.
- Sphere, Capsule, and a closed triangle surface (Mesh with (m, 3) faces or a trimesh-readable file):
  the cubes of a grid whose centre lies inside the surface (generalized winding number) are split as
  above: a voxelized volume (staircase boundary; refine with ``resolution``, cells along the longest
  edge, default 8). An open surface is refused.
- Tetrahedra: Mesh(vertices=..., faces=(m, 4)) or a .msh/.vtk/.vtu/.mesh file read with meshio
  (optional dependency, imported only then).

Why our own: the permissive tetrahedralizers (TetWild/fTetWild: MPL; pygalmesh/CGAL, TetGen: GPL or
AGPL) are either copyleft or heavy native builds; boxes, cylinders and voxelized volumes cover the
scenes this project needs, and real meshes come in through meshio.
"""

from __future__ import annotations

import itertools
import os

import numpy as np
from polyphys import morphs as M
from polyphys.errors import OptionError
from polyphys.sampling import inside_mesh

TET_FILE_SUFFIXES = (".msh", ".vtk", ".vtu", ".mesh", ".xdmf", ".med", ".inp")


def _cube_tets() -> np.ndarray:
    """The 6 tets of the unit cube around the (0,0,0)-(1,1,1) diagonal, as corner bit codes
    (bit 0: +x, bit 1: +y, bit 2: +z), each positively oriented."""
    out = []
    for perm in itertools.permutations(range(3)):
        code, path = 0, [0]
        for axis in perm:
            code |= 1 << axis
            path.append(code)
        corners = np.array([[(c >> a) & 1 for a in range(3)] for c in path], dtype=float)
        if np.linalg.det((corners[1:] - corners[0]).T) < 0:
            path[2], path[3] = path[3], path[2]
        out.append(path)
    return np.array(out, dtype=np.int64)


CUBE_TETS = _cube_tets()


def grid_tets(n: tuple[int, int, int], cell_mask: np.ndarray | None = None):
    """Vertices (in grid units) and tets of an nx×ny×nz grid of cubes (optionally only the cubes
    where ``cell_mask`` is True); unreferenced vertices are dropped."""
    nx, ny, nz = n
    idx = np.arange((nx + 1) * (ny + 1) * (nz + 1)).reshape(nx + 1, ny + 1, nz + 1)
    cx, cy, cz = np.meshgrid(np.arange(nx), np.arange(ny), np.arange(nz), indexing="ij")
    cells = np.stack([cx.ravel(), cy.ravel(), cz.ravel()], axis=1)
    if cell_mask is not None:
        cells = cells[cell_mask.reshape(-1)]
    corner = np.array([[(c >> a) & 1 for a in range(3)] for c in range(8)])
    # mirror the split of a cube along every axis whose cell index is odd: neighbouring cubes are
    # mirror images, so shared faces still match (conforming) and the mesh has no diagonal bias
    # (the uniform Freudenthal split is markedly stiffer in bending)
    flip = cells % 2                                                       # (nc, 3)
    local = corner[CUBE_TETS][None]                                        # (1, 6, 4, 3)
    local = np.where(flip[:, None, None, :] == 1, 1 - local, local)       # (nc, 6, 4, 3)
    odd = flip.sum(axis=1) % 2 == 1                                        # mirrored: orientation flips
    local[odd] = local[odd][:, :, [0, 1, 3, 2]]
    # tets (n_cells*6, 4) of global grid indices
    verts_of = cells[:, None, None, :] + local                             # (nc, 6, 4, 3)
    tets = idx[verts_of[..., 0], verts_of[..., 1], verts_of[..., 2]].reshape(-1, 4)
    gx, gy, gz = np.meshgrid(np.arange(nx + 1), np.arange(ny + 1), np.arange(nz + 1), indexing="ij")
    pts = np.stack([gx.ravel(), gy.ravel(), gz.ravel()], axis=1).astype(float)
    used, inv = np.unique(tets, return_inverse=True)
    return pts[used], inv.reshape(-1, 4)


def _resolution(res, size) -> tuple[int, int, int]:
    size = np.asarray(size, dtype=float)
    if res is None:
        res = 4
    if np.isscalar(res):
        if isinstance(res, bool) or int(res) != res or res < 1:
            raise OptionError(f"resolution = {res!r}: must be an integer >= 1 (cells along the longest "
                              f"edge) or three integers")
        cell = size.max() / int(res)
        return tuple(int(max(1, round(s / cell))) for s in size)
    try:
        out = tuple(int(r) for r in res)
    except (TypeError, ValueError):
        raise OptionError(f"resolution = {res!r}: expected an integer or three integers") from None
    if len(out) != 3 or min(out) < 1 or any(int(r) != r for r in res):
        raise OptionError(f"resolution = {res!r}: expected three integers >= 1")
    return out


def box_mesh(size, resolution=None):
    n = _resolution(resolution, size)
    pts, tets = grid_tets(n)
    size = np.asarray(size, dtype=float)
    return pts / np.asarray(n, dtype=float) * size - size / 2.0, tets


def cylinder_mesh(radius: float, height: float, resolution=None):
    """Grid on [-1, 1]² × [0, 1] whose square rings map to circles (radius ∝ ring index)."""
    if resolution is None:
        resolution = 4
    if not np.isscalar(resolution):
        raise OptionError(f"resolution = {resolution!r}: a Cylinder takes one integer (cells across "
                          f"the diameter)")
    nr = max(2, int(resolution) + (int(resolution) % 2))
    nz = max(1, int(round(height / (2 * radius) * nr)))
    pts, tets = grid_tets((nr, nr, nz))
    u = pts[:, 0] / nr * 2 - 1
    v = pts[:, 1] / nr * 2 - 1
    ring = np.maximum(np.abs(u), np.abs(v))
    t = _square_param(u, v, ring)
    x = ring * np.cos(t) * radius
    y = ring * np.sin(t) * radius
    z = pts[:, 2] / nz * height - height / 2
    out = np.stack([x, y, z], axis=1)
    return out, tets


def _square_param(u, v, ring):
    """Polar angle proportional to arc length along the square ring of half-width ``ring``."""
    r = np.where(ring > 0, ring, 1.0)
    a, b = u / r, v / r
    eps = 1e-12
    # counter-clockwise from (1, 0): side a=1 (s = b in [-1, 1]), b=1, a=-1, b=-1; perimeter 8
    s = np.where((a >= 1 - eps) & (b > -1 + eps), b,
                 np.where((b >= 1 - eps) & (a < 1 - eps), 1 + (1 - a),
                          np.where((a <= -1 + eps) & (b < 1 - eps), 3 + (1 - b), 5 + (a + 1))))
    return s * np.pi / 4.0


def check_closed(faces: np.ndarray, what: str) -> None:
    edges = np.sort(np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]]), axis=1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    bad = int((counts != 2).sum())
    if bad:
        raise OptionError(f"{what}: the surface is not closed ({bad} edges are not shared by exactly two "
                          f"triangles); the FEM solver needs a closed (watertight) surface to fill with "
                          f"tetrahedra")


def voxel_mesh(v: np.ndarray, f: np.ndarray, resolution=None, what="Mesh"):
    check_closed(f, what)
    lo, hi = v.min(axis=0), v.max(axis=0)
    n = _resolution(8 if resolution is None else resolution, hi - lo)
    cell = (hi - lo) / np.asarray(n)
    cx, cy, cz = np.meshgrid(*(np.arange(k) + 0.5 for k in n), indexing="ij")
    centres = lo + np.stack([cx.ravel(), cy.ravel(), cz.ravel()], axis=1) * cell
    inside = inside_mesh(centres, v, f)
    if not inside.any():
        raise OptionError(f"{what}: no grid cell centre lies inside the surface at resolution {n}; "
                          f"raise resolution")
    pts, tets = grid_tets(n, inside)
    return lo + pts * cell, tets


def read_tet_file(path: str):
    try:
        import meshio
    except ImportError:
        raise OptionError(f"Mesh(file={path!r}): reading tetrahedral meshes needs the optional "
                          f"dependency meshio (pip install meshio)") from None
    m = meshio.read(path)
    tets = [c.data for c in m.cells if c.type == "tetra"]
    if not tets:
        raise OptionError(f"Mesh(file={path!r}): no 'tetra' cells in the file (found "
                          f"{sorted({c.type for c in m.cells})}); the FEM solver needs linear tetrahedra")
    return np.asarray(m.points, dtype=float)[:, :3], np.concatenate(tets).astype(np.int64)


def morph_tets(morph, resolution=None):
    """(vertices in the morph's local frame (n, 3), tets (m, 4)) for a morph."""
    if isinstance(morph, M.Box):
        return box_mesh(morph.size, resolution)
    if isinstance(morph, M.Cylinder):
        return cylinder_mesh(morph.radius, morph.height, resolution)
    if isinstance(morph, (M.Sphere, M.Capsule)):
        import trimesh

        tm = (trimesh.creation.icosphere(subdivisions=3, radius=morph.radius) if isinstance(morph, M.Sphere)
              else trimesh.creation.capsule(height=morph.height, radius=morph.radius, count=(24, 24)))
        return voxel_mesh(np.asarray(tm.vertices, dtype=float), np.asarray(tm.faces, dtype=np.int64),
                          resolution, what=type(morph).__name__)
    if isinstance(morph, M.Mesh):
        scale = np.asarray(morph.scale)
        if morph.file is not None and os.path.splitext(morph.file)[1].lower() in TET_FILE_SUFFIXES:
            v, t = read_tet_file(morph.file)
            if not morph.file_meshes_are_zup:
                v = np.stack([v[:, 0], -v[:, 2], v[:, 1]], axis=1)
            return v * scale, t
        if morph.vertices is not None and morph.faces.shape[1] == 4:
            return morph.vertices * scale, morph.faces
        tm = morph.load_trimesh()
        return voxel_mesh(np.asarray(tm.vertices, dtype=float), np.asarray(tm.faces, dtype=np.int64),
                          resolution, what=f"Mesh({morph.file or 'vertices/faces'})")
    raise OptionError(f"the FEM solver meshes Box, Cylinder, Sphere, Capsule and Mesh morphs (tetrahedra, "
                      f"tet files, closed surfaces); got {type(morph).__name__}")


def validate_tets(v: np.ndarray, t: np.ndarray, what: str) -> np.ndarray:
    """Signed rest volumes; raises naming the inverted or degenerate elements."""
    if t.ndim != 2 or t.shape[1] != 4 or len(t) == 0:
        raise OptionError(f"{what}: expected (m, 4) tetrahedra with m >= 1, got shape {t.shape}")
    if t.min() < 0 or t.max() >= len(v):
        raise OptionError(f"{what}: tet vertex indices span [{t.min()}, {t.max()}] outside [0, {len(v) - 1}]")
    x = v[t]
    e = x[:, 1:] - x[:, :1]
    vol = np.linalg.det(np.transpose(e, (0, 2, 1))) / 6.0
    edges = np.concatenate([e, x[:, [2, 3, 3]] - x[:, [1, 1, 2]]], axis=1)
    lrms3 = np.sqrt((edges ** 2).sum(-1).mean(-1)) ** 3
    # a regular tet has V = l³/(6√2) ≈ 0.118 l³; 1e-6 of that is a sliver no step survives
    degenerate = np.abs(vol) <= 1e-7 * np.maximum(lrms3, 1e-300)
    if degenerate.any():
        ids = np.nonzero(degenerate)[0]
        raise OptionError(f"{what}: {ids.size} degenerate (zero-volume) tetrahedra, elements "
                          f"{ids[:10].tolist()}{' ...' if ids.size > 10 else ''}")
    if (vol < 0).any():
        ids = np.nonzero(vol < 0)[0]
        raise OptionError(f"{what}: {ids.size} inverted tetrahedra (negative volume), elements "
                          f"{ids[:10].tolist()}{' ...' if ids.size > 10 else ''}; order each tet's "
                          f"vertices so that (x1-x0)·((x2-x0)×(x3-x0)) > 0")
    return vol


def boundary_triangles(t: np.ndarray) -> np.ndarray:
    """Faces used by exactly one tet, oriented outward (for positively oriented tets)."""
    faces = np.concatenate([t[:, [0, 2, 1]], t[:, [0, 1, 3]], t[:, [0, 3, 2]], t[:, [1, 2, 3]]])
    key = np.sort(faces, axis=1)
    _, inv, counts = np.unique(key, axis=0, return_inverse=True, return_counts=True)
    return faces[counts[inv.reshape(-1)] == 1]
