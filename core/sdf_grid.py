"""Grid signed distance fields of triangle meshes, built once at build time.

A mesh geom has no analytic SDF, so a coupler samples one on a regular grid in the geom frame:
the distance to the closest triangle at every node, negative inside, computed with a Warp BVH
(``wp.Mesh``) in one launch per mesh (``polyphys.kernels.sdf.mesh_sdf_grid``). The sign comes from
the angle-weighted pseudo-normal of the closest feature (face, edge or vertex; exact for a closed,
consistently oriented mesh, flipped first if it faces inward) and from the generalized winding
number otherwise (open or self-intersecting meshes; a few times slower). The grid covers the
mesh bounds plus a band on every side; queries (``sdf_grid_query``) interpolate trilinearly and
take the normal from the interpolant's gradient. Since an SDF is 1-Lipschitz and the trilinear
weights w_c of the cell corners c have Σ w_c |x − c|² = h² Σ_a t_a (1 − t_a) ≤ 3h²/4, the
interpolated distance is within (√3/2)·h of the exact one (h: grid spacing), and exact where the
SDF is linear over a cell (near a face, away from edges and the medial axis).

The grids of several geoms are packed into one :class:`polyphys.views.SdfGrids`, so one kernel
queries any of them by geom index.

Heightfields need no grid: their surface is a height map, so ``polyphys.kernels.sdf.sdf_hfield``
finds the closest point on the surface triangles of the cells near the query point directly
(exact within a chosen horizontal ``reach``); :func:`hfield_heights` turns a ``Geom.hfield`` into
heights and :func:`pack_height_fields` packs several for one kernel
(:class:`polyphys.views.HeightFields`).
"""

from __future__ import annotations

import math

import numpy as np

from .errors import OptionError
from .views import HeightFields, SdfGrids

DEFAULT_RES = 64                 # cells along the longest side of a mesh's bounding box
MIN_BAND_CELLS = 2               # the grid reaches at least this many cells beyond the mesh bounds
MAX_NODES = 32_000_000           # per grid (128 MB of float32): a larger request is refused


def grid_layout(vertices, spacing: float | None = None, res: int = DEFAULT_RES, band: float = 0.0):
    """Origin, spacing and node counts of the grid of a mesh: the bounds of ``vertices`` padded by
    max(band, MIN_BAND_CELLS·h) on every side; h = ``spacing`` or the longest side / ``res``."""
    v = np.asarray(vertices, dtype=float).reshape(-1, 3)
    lo, hi = v.min(0), v.max(0)
    ext = hi - lo
    if spacing is None:
        if res < 1:
            raise OptionError(f"sdf grid res = {res!r}: must be a positive integer")
        spacing = float(max(ext.max(), 1e-9)) / res
    spacing = float(spacing)
    if not spacing > 0.0:
        raise OptionError(f"sdf grid spacing = {spacing!r}: must be > 0")
    pad = max(float(band), MIN_BAND_CELLS * spacing)
    cells = np.maximum(np.ceil((ext + 2.0 * pad) / spacing - 1e-9).astype(np.int64), 1)
    dims = cells + 1
    if int(np.prod(dims)) > MAX_NODES:
        raise OptionError(f"sdf grid spacing = {spacing:g} m over a mesh of extent {tuple(ext.round(6))} m "
                          f"needs {tuple(int(x) for x in dims)} nodes (> {MAX_NODES}); use a larger spacing "
                          f"or a smaller res")
    origin = (lo + hi) / 2.0 - cells * spacing / 2.0
    return origin, spacing, tuple(int(x) for x in dims)


def mesh_sdf_values(vertices, faces, origin, spacing: float, dims, device=None) -> np.ndarray:
    """Signed distances to the mesh at the grid nodes, shape ``dims`` (float32)."""
    import warp as wp

    from .kernels.sdf import mesh_sdf_grid

    v = np.asarray(vertices, dtype=np.float32).reshape(-1, 3)
    f = np.asarray(faces)
    if f.ndim != 2 or f.shape[1] != 3 or len(f) == 0:
        raise OptionError(f"mesh faces shape {f.shape}: a grid SDF needs (m >= 1, 3) triangles")
    if f.min() < 0 or f.max() >= len(v):
        raise OptionError(f"mesh faces index range [{f.min()}, {f.max()}] outside [0, {len(v) - 1}]")
    closed = _is_closed(v, f)
    if closed and _signed_volume(v, f) < 0.0:
        f = f[:, ::-1]                     # inward-facing triangles: flip so that inside is negative
    f = np.ascontiguousarray(f, dtype=np.int32)
    fn, en, vn = _pseudo_normals(v, f)

    def arr(a, dtype):
        return wp.array(a, dtype=dtype, device=device)

    mesh = wp.Mesh(points=arr(v, wp.vec3), indices=arr(f.reshape(-1), wp.int32), support_winding_number=not closed)
    n = int(np.prod(dims))
    out = wp.empty(n, dtype=wp.float32, device=device)
    # every vertex lies inside the grid box, so no node is farther than its diagonal from the mesh
    max_dist = float(np.linalg.norm((np.asarray(dims) - 1) * spacing)) * 1.001 + 1e-6
    wp.launch(mesh_sdf_grid, dim=tuple(dims),
              inputs=[mesh.id, arr(f.reshape(-1), wp.int32), arr(fn, wp.vec3), arr(en.reshape(-1, 3), wp.vec3),
                      arr(vn, wp.vec3), wp.vec3(*(float(x) for x in origin)), float(spacing), wp.vec3i(*dims),
                      max_dist, int(not closed)],
              outputs=[out], device=device)
    return out.numpy().reshape(dims)


def _is_closed(v, f) -> bool:
    """Every edge shared by exactly two triangles, traversed once in each direction (a closed,
    consistently oriented surface: the pseudo-normal sign test is then exact)."""
    e = np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]).astype(np.int64)
    key = e[:, 0] * (len(v) + 1) + e[:, 1]
    rev = e[:, 1] * (len(v) + 1) + e[:, 0]
    if len(np.unique(key)) != len(key):
        return False                       # an edge used twice in the same direction
    return bool(np.isin(rev, key).all())


def _pseudo_normals(v, f):
    """Face normals (F, 3); per face corner c the normal of the edge opposite it, the sum of the
    normals of the two faces sharing that edge (F, 3, 3); angle-weighted vertex normals (V, 3)."""
    v = v.astype(float)
    a, b, c = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    fn = np.cross(b - a, c - a)
    norm = np.linalg.norm(fn, axis=1, keepdims=True)
    fn = np.divide(fn, norm, out=np.zeros_like(fn), where=norm > 0)
    vn = np.zeros_like(v)
    corners = (a, b, c)
    for i in range(3):                    # interior angle at corner i
        e1 = corners[(i + 1) % 3] - corners[i]
        e2 = corners[(i + 2) % 3] - corners[i]
        cos = (e1 * e2).sum(1) / np.maximum(np.linalg.norm(e1, axis=1) * np.linalg.norm(e2, axis=1), 1e-300)
        np.add.at(vn, f[:, i], np.arccos(np.clip(cos, -1.0, 1.0))[:, None] * fn)
    # the edge opposite corner i joins corners i+1 and i+2
    ends = np.stack([np.sort(np.stack([f[:, (i + 1) % 3], f[:, (i + 2) % 3]], 1), axis=1) for i in range(3)], 1)
    _, inv = np.unique(ends.reshape(-1, 2), axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    acc = np.zeros((inv.max() + 1, 3))
    np.add.at(acc, inv, np.repeat(fn, 3, axis=0))
    en = acc[inv].reshape(-1, 3, 3)
    return fn.astype(np.float32), en.astype(np.float32), vn.astype(np.float32)


def _signed_volume(v, f) -> float:
    a, b, c = (v[f[:, i]].astype(float) for i in range(3))
    return float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0)


def build_sdf_grids(meshes, spacing: float | None = None, res: int = DEFAULT_RES, band=0.0,
                    device=None) -> SdfGrids:
    """Packed grid SDFs for a list of geoms: ``meshes[i]`` is geom i's ``(vertices, faces)`` in its
    frame, or None (no grid: ``geom[i] = -1``). ``band`` (m): how far beyond the mesh bounds the
    grid reaches at least (a number, or one per geom)."""
    import warp as wp

    bands = list(band) if np.ndim(band) else [band] * len(meshes)
    values, origins, spacings, dims_l, offsets, geom = [], [], [], [], [], []
    total = 0
    for i, m in enumerate(meshes):
        if m is None:
            geom.append(-1)
            continue
        vertices, faces = m
        o, h, d = grid_layout(vertices, spacing, res, bands[i])
        try:
            vals = mesh_sdf_values(vertices, faces, o, h, d, device)
        except OptionError as exc:
            raise OptionError(f"geom {i}: {exc}") from None
        geom.append(len(origins))
        values.append(vals.reshape(-1))
        origins.append(o)
        spacings.append(h)
        dims_l.append(d)
        offsets.append(total)
        total += vals.size
    flat = np.concatenate(values).astype(np.float32) if values else np.zeros(0, np.float32)
    return SdfGrids(
        values=wp.array(flat, dtype=wp.float32, device=device),
        origin=wp.array(np.asarray(origins, np.float32).reshape(-1, 3), dtype=wp.vec3, device=device),
        spacing=wp.array(np.asarray(spacings, np.float32), dtype=wp.float32, device=device),
        dims=wp.array(np.asarray(dims_l, np.int32).reshape(-1, 3), dtype=wp.vec3i, device=device),
        offset=wp.array(np.asarray(offsets, np.int32), dtype=wp.int32, device=device),
        geom=wp.array(np.asarray(geom, np.int32), dtype=wp.int32, device=device))


def empty_sdf_grids(n_geoms: int, device=None) -> SdfGrids:
    """No grid for any of ``n_geoms`` geoms (kernels still get valid, empty arrays)."""
    return build_sdf_grids([None] * n_geoms, device=device)


def query_sdf_grids(grids: SdfGrids, grid, points, device=None):
    """Host-side query (tests, tools): distances (n,) and outward normals (n, 3) of grid ``grid``
    (an index, or one per point) at ``points`` (n, 3) in that grid's geom frame."""
    import warp as wp

    from .kernels.sdf import query_sdf_grids as kernel

    pts = np.asarray(points, dtype=np.float32).reshape(-1, 3)
    idx = np.broadcast_to(np.asarray(grid, dtype=np.int32), (len(pts),)).copy()
    n_grids = grids.origin.shape[0]
    if len(idx) and (idx.min() < 0 or idx.max() >= n_grids):
        raise OptionError(f"query_sdf_grids grid = {grid!r}: there are {n_grids} grids")
    dev = grids.values.device if device is None else device
    out = wp.empty(len(pts), dtype=wp.vec4, device=dev)
    wp.launch(kernel, dim=len(pts), inputs=[grids.values, grids.origin, grids.spacing, grids.dims, grids.offset,
                                            wp.array(idx, dtype=wp.int32, device=dev),
                                            wp.array(pts, dtype=wp.vec3, device=dev)],
              outputs=[out], device=dev)
    r = out.numpy()
    return r[:, 0].astype(float), r[:, 1:].astype(float)


def interpolation_bound(spacing: float) -> float:
    """The largest difference between a trilinearly interpolated exact SDF and the SDF itself."""
    return math.sqrt(3.0) / 2.0 * float(spacing)


# -- heightfields ------------------------------------------------------------------------------------
MAX_REACH_CELLS = 8              # the closest-point search covers at most this many cells each side


def hfield_heights(hfield, name: str = "hfield"):
    """``(heights (nrow, ncol), (rx, ry, z_bottom))`` of a heightfield in its geom frame from a
    ``Geom.hfield`` dict as the MJCF importer stores it: ``size`` = MuJoCo's (rx, ry, z_top,
    z_bottom), ``data`` (nrow, ncol) in [0, 1] with row 0 at -y; heights = data × z_top. None when
    it has no elevation data. Errors name the geom: fewer than 2 × 2 samples, non-finite data, a
    bottom that is not below the surface."""
    if hfield is None or "data" not in hfield:
        return None
    data = np.asarray(hfield["data"], dtype=float)
    if data.ndim != 2 or min(data.shape) < 2:
        raise OptionError(f"{name}: heightfield data has shape {data.shape}; needs at least 2 x 2 samples")
    if not np.isfinite(data).all():
        raise OptionError(f"{name}: heightfield data has non-finite values")
    rx, ry, ztop, zbot = (float(v) for v in tuple(hfield["size"])[:4])
    if not (rx > 0 and ry > 0):
        raise OptionError(f"{name}: heightfield size (rx, ry) = ({rx}, {ry}); both must be > 0")
    z = data * ztop
    if not -zbot < z.min():
        raise OptionError(f"{name}: heightfield bottom size[3] = {zbot}: the base z = {-zbot} must lie "
                          f"below the lowest surface point {z.min()}")
    return z, (rx, ry, zbot)


def hfield_cell(hfield) -> float:
    """The smaller grid step (m) of a ``(heights, (rx, ry, z_bottom))`` heightfield."""
    z, (rx, ry, _) = hfield
    return min(2.0 * rx / (z.shape[1] - 1), 2.0 * ry / (z.shape[0] - 1))


def pack_height_fields(hfields, reach=0.0, device=None) -> HeightFields:
    """Packed heightfields for a list of geoms: ``hfields[i]`` is geom i's ``(heights, (rx, ry,
    z_bottom))`` (:func:`hfield_heights`) or None (``geom[i] = -1``). ``reach`` (m, a number or one
    per geom): the SDF is exact within it; raised to one cell and capped at MAX_REACH_CELLS cells."""
    import warp as wp

    reaches = list(reach) if np.ndim(reach) else [reach] * len(hfields)
    heights, shapes, extents, offsets, reach_l, geom = [], [], [], [], [], []
    total = 0
    for i, hf in enumerate(hfields):
        if hf is None:
            geom.append(-1)
            continue
        z, (rx, ry, zbot) = hf
        z = np.asarray(z, dtype=np.float32)
        cell = hfield_cell((z, (rx, ry, zbot)))
        geom.append(len(shapes))
        heights.append(z.reshape(-1))
        shapes.append(z.shape)
        extents.append((rx, ry, zbot, float(z.max())))
        offsets.append(total)
        reach_l.append(min(max(float(reaches[i]), cell), MAX_REACH_CELLS * cell))
        total += z.size
    flat = np.concatenate(heights).astype(np.float32) if heights else np.zeros(0, np.float32)
    return HeightFields(
        heights=wp.array(flat, dtype=wp.float32, device=device),
        shape=wp.array(np.asarray(shapes, np.int32).reshape(-1, 2), dtype=wp.vec2i, device=device),
        extent=wp.array(np.asarray(extents, np.float32).reshape(-1, 4), dtype=wp.vec4, device=device),
        offset=wp.array(np.asarray(offsets, np.int32), dtype=wp.int32, device=device),
        reach=wp.array(np.asarray(reach_l, np.float32), dtype=wp.float32, device=device),
        geom=wp.array(np.asarray(geom, np.int32), dtype=wp.int32, device=device))


def query_height_fields(hfields: HeightFields, index, points, device=None):
    """Host-side query (tests, tools): signed distances (n,) and outward normals (n, 3) of packed
    heightfield ``index`` (one, or one per point) at ``points`` (n, 3) in its geom frame."""
    import warp as wp

    from .kernels.sdf import query_height_fields as kernel

    pts = np.asarray(points, dtype=np.float32).reshape(-1, 3)
    idx = np.broadcast_to(np.asarray(index, dtype=np.int32), (len(pts),)).copy()
    n = hfields.shape.shape[0]
    if len(idx) and (idx.min() < 0 or idx.max() >= n):
        raise OptionError(f"query_height_fields index = {index!r}: there are {n} heightfields")
    dev = hfields.heights.device if device is None else device
    out = wp.empty(len(pts), dtype=wp.vec4, device=dev)
    wp.launch(kernel, dim=len(pts), inputs=[hfields.heights, hfields.shape, hfields.extent, hfields.offset,
                                            hfields.reach, wp.array(idx, dtype=wp.int32, device=dev),
                                            wp.array(pts, dtype=wp.vec3, device=dev)],
              outputs=[out], device=dev)
    r = out.numpy()
    return r[:, 0].astype(float), r[:, 1:].astype(float)
