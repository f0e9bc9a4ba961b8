"""Particle sampling of morphs: a regular lattice inside the shape's volume.

Box: the box is split into round(size/spacing) cells per axis and a particle sits at each cell
centre, so the particles fill the box exactly (particle volume = box volume / count). Sphere,
Capsule, Cylinder and Mesh: the lattice of the given spacing centred on the shape, particles kept
where they lie inside (particle volume = spacing³). A mesh's inside is decided by the generalised
winding number (robust to small holes; needs no spatial index package).
"""

from __future__ import annotations

import numpy as np
from polyphys import morphs as M
from polyphys.errors import OptionError
from polyphys.sampling import inside_mesh, inside_primitive, to_world


def _lattice(half_extent: np.ndarray, spacing: float) -> np.ndarray:
    """Points of a lattice of ``spacing`` centred at 0 covering [-half, half] on each axis."""
    axes = []
    for h in half_extent:
        n = int(np.floor(2 * h / spacing + 1e-9))
        n = max(n, 1)
        axes.append((np.arange(n) - (n - 1) / 2.0) * spacing)
    g = np.meshgrid(*axes, indexing="ij")
    return np.stack([a.reshape(-1) for a in g], axis=1)


def sample(morph, spacing: float) -> tuple[np.ndarray, float]:
    """World positions (n, 3) of the particles of ``morph`` and the volume of one particle."""
    if isinstance(morph, M.Box):
        size = np.asarray(morph.size)
        n = np.maximum(np.round(size / spacing).astype(int), 1)
        cell = size / n
        axes = [(np.arange(k) + 0.5) * c - s / 2 for k, c, s in zip(n, cell, size)]
        g = np.meshgrid(*axes, indexing="ij")
        local = np.stack([a.reshape(-1) for a in g], axis=1)
        vol = float(np.prod(cell))
    elif isinstance(morph, M.Sphere):
        r = morph.radius
        local = _lattice(np.full(3, r), spacing)
        local = local[inside_primitive(morph, local)]
        vol = spacing ** 3
    elif isinstance(morph, M.Cylinder):
        r, hh = morph.radius, morph.height / 2
        local = _lattice(np.array([r, r, hh]), spacing)
        local = local[inside_primitive(morph, local)]
        vol = spacing ** 3
    elif isinstance(morph, M.Capsule):
        r, hh = morph.radius, morph.height / 2
        local = _lattice(np.array([r, r, hh + r]), spacing)
        local = local[inside_primitive(morph, local)]
        vol = spacing ** 3
    elif isinstance(morph, M.Mesh):
        mesh = morph.load_trimesh()
        v, f = np.asarray(mesh.vertices, float), np.asarray(mesh.faces, np.int64)
        if f.shape[1] != 3:
            raise OptionError("MPM Mesh morph: needs a triangle surface mesh (faces of 3 vertices)")
        lo, hi = v.min(axis=0), v.max(axis=0)
        centre = (lo + hi) / 2
        pts = _lattice((hi - lo) / 2, spacing) + centre
        local = pts[inside_mesh(pts, v, f)]
        vol = spacing ** 3
    else:
        raise OptionError(f"the MPM solver samples Box, Sphere, Cylinder, Capsule and Mesh morphs; got "
                          f"{type(morph).__name__}")
    if len(local) == 0:
        raise OptionError(f"{type(morph).__name__} morph at {morph.pos}: no particle fits inside at "
                          f"particle spacing {spacing} m; lower MPMOptions.particle_size")
    return to_world(morph, local), vol
