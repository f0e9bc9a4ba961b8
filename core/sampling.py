"""Sampling morphs into particles (NumPy, host side, at build): what the particle solvers share.

- ``inside_mesh``: the generalized winding number of a closed triangle mesh (solid angles, Van
  Oosterom & Strackee 1983), > 1/2 in magnitude inside — robust to the parity failures of grazing
  rays, independent of the faces' orientation, and without a spatial index;
- ``inside_primitive``: membership of local points in a Sphere, Cylinder or Capsule morph;
- ``to_world``: local lattice points placed by the morph's pose.

The lattices themselves stay each solver's, because they mean different things: MPM fills a Box
with ``round(size/spacing)`` cells per axis stretched to the box (particle volume = cell volume, so
the mass is the box's), SPH and PBD put ``floor(size/spacing)`` particles per axis at exactly the
particle spacing, centred (the spacing is what their kernels and rest densities assume);
docs/mpm.md, docs/sph.md and docs/pbd.md state them.
"""

from __future__ import annotations

import numpy as np

from . import morphs as M
from .rotations import to_world as _to_world


def winding_number(points: np.ndarray, vertices: np.ndarray, faces: np.ndarray, chunk: int = 2048) -> np.ndarray:
    """Generalized winding number of the triangle mesh (vertices (n, 3), faces (m, 3)) at each point:
    about ±1 inside (the sign follows the faces' orientation), 0 outside."""
    tri = np.asarray(vertices, dtype=float)[np.asarray(faces, dtype=np.int64)]      # (m, 3, 3)
    points = np.asarray(points, dtype=float)
    out = np.empty(len(points))
    for s in range(0, len(points), chunk):
        p = points[s:s + chunk]
        a, b, c = (tri[None, :, k, :] - p[:, None, :] for k in range(3))
        la, lb, lc = (np.linalg.norm(v, axis=2) for v in (a, b, c))
        det = np.einsum("pfi,pfi->pf", a, np.cross(b, c))
        den = (la * lb * lc + np.einsum("pfi,pfi->pf", a, b) * lc + np.einsum("pfi,pfi->pf", b, c) * la
               + np.einsum("pfi,pfi->pf", c, a) * lb)
        out[s:s + chunk] = np.arctan2(det, den).sum(axis=1) / (2.0 * np.pi)
    return out


def inside_mesh(points: np.ndarray, vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Boolean mask of the points inside a closed triangle mesh (|winding number| > 1/2)."""
    return np.abs(winding_number(points, vertices, faces)) > 0.5


def inside_primitive(morph, local: np.ndarray) -> np.ndarray:
    """Boolean mask of the local points (the morph's frame) inside a Sphere, Cylinder (axis z, full
    ``height``) or Capsule (cylinder part ``height`` along z plus two hemispheres)."""
    local = np.asarray(local, dtype=float)
    if isinstance(morph, M.Sphere):
        return np.linalg.norm(local, axis=1) <= morph.radius
    if isinstance(morph, M.Cylinder):
        return (np.linalg.norm(local[:, :2], axis=1) <= morph.radius) & (np.abs(local[:, 2]) <= morph.height / 2)
    if isinstance(morph, M.Capsule):
        zc = np.clip(local[:, 2], -morph.height / 2, morph.height / 2)
        return np.linalg.norm(local - np.stack([0 * zc, 0 * zc, zc], axis=1), axis=1) <= morph.radius
    raise TypeError(f"inside_primitive: {type(morph).__name__} is not a Sphere, Cylinder or Capsule")


def to_world(morph, local: np.ndarray) -> np.ndarray:
    """Points (n, 3) in the morph's frame -> world coordinates (its ``orientation``, then ``pos``)."""
    return _to_world(morph.pos, morph.orientation, local)
