"""Sampling a morph into particles on a regular lattice (NumPy, host side, at build)."""

from __future__ import annotations

import numpy as np
from polyphys import morphs as M
from polyphys.errors import OptionError
from polyphys.kinematics import quat_rotate

SAMPLED_MORPHS = (M.Box, M.Sphere)


def _axis(extent: float, spacing: float) -> np.ndarray:
    """Centred lattice coordinates along one axis: floor(extent/spacing) points, spacing apart."""
    n = int(np.floor(extent / spacing + 1e-9))
    return (np.arange(n) - (n - 1) / 2.0) * spacing


def sample_morph(morph, spacing: float) -> np.ndarray:
    """World positions (n, 3) of the lattice points of ``morph`` at ``spacing``.

    A Box of edges (a, b, c) gets floor(a/s)·floor(b/s)·floor(c/s) points centred in the box; a
    Sphere keeps the points of the centred lattice over its bounding cube that lie inside it. The
    lattice is then rotated by the morph's orientation and moved to its ``pos``.
    """
    if isinstance(morph, M.Box):
        axes = [_axis(e, spacing) for e in morph.size]
        local = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    elif isinstance(morph, M.Sphere):
        ax = _axis(2.0 * morph.radius, spacing)
        local = np.stack(np.meshgrid(ax, ax, ax, indexing="ij"), axis=-1).reshape(-1, 3)
        local = local[np.linalg.norm(local, axis=1) <= morph.radius * (1 + 1e-9)]
    else:
        raise OptionError(f"ballistic: morph {type(morph).__name__} cannot be sampled into particles; "
                          f"allowed morphs: {[c.__name__ for c in SAMPLED_MORPHS]}")
    if len(local) == 0:
        raise OptionError(f"ballistic: {morph!r} holds no particle at particle_size = {spacing}; "
                          f"make the morph larger or BallisticOptions.particle_size smaller")
    return quat_rotate(morph.orientation, local) + np.asarray(morph.pos, dtype=float)
