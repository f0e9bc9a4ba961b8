"""A resting MPM liquid keeps its volume: MPMOptions(wall_surface=True).

Liquid (Genesis' defaults E = 1e6 Pa, ν = 0.2, ρ = 1000: λ = 2.78e5 Pa) in a box at dx = 1/32 m, 8
particles per cell, h = 0.8 ms (0.43 of dx/c). Bounds (derived here, measured values in comments):

- volume: Σ J·V0 over the particles (J = det F; a liquid keeps F = J^(1/3)·I). The column starts
  uncompressed under suddenly applied gravity: its hydrostatic state J = 1 − ρg(H − z)/λ (mean
  1 − ε/2, ε = ρgH/λ) is overshot at most twice (a step load on a linear elastic column), so
  Σ J·V0/ΣV0 lies in [1 − ε, 1] (+ float32 rounding);
- height: for a liquid of a given volume in a box the flat surface is the potential-energy minimum,
  so the particles' mean height above the floor is never below half the flat depth V/A less the
  compression; the hydrostatic state lowers z̄ by 2ε/3 of itself, twice that at the overshoot:
  z̄ ≥ (V/A)/2·(1 − 4ε/3) whatever the sloshing;
- filling the box: each dx-column's top particle stays within twice the hydrostatic shortening
  ε·H/2 plus one cell (the surface resolution) of where it started;
- no particle enters the wall layer (the walls hold them on the wall surface).

With wall_surface=False (the old behaviour; the default is True) the node layer on the wall surface is
free: the pressure of the liquid above pushes it into the wall and the liquid keeps flowing into the
3-cell wall layers while J stays ≈ 1 (measured for the box-filling column below: mean height 0.42 of
the start after 1.5 s, 12.5 particles per cell next to the floor instead of 8; docs/mpm.md).
"""

import numpy as np
import pytest
from mpm_helpers import LO, M, make_scene
from polyphys import morphs
from polyphys.errors import OptionError
from polyphys.plugins.mpm import MPMOptions

DX = 1 / 32                        # the walls are the domain's faces: the floor surface is at z = LO[2]
RHO, G = 1000.0, 9.81


def _column(boundary, width_x, box_x, T):
    """A liquid block 0.14 m high, width_x × 4 cells, at the -x wall of a box box_x wide (y filled)."""
    H, D = 0.14, 4 * DX
    water = M.Liquid(E=1e6, nu=0.2, rho=RHO)
    scene, (e,) = make_scene([(morphs.Box(size=(width_x, D, H), pos=(width_x / 2, D / 2, H / 2)), water, {})],
                             dt=4e-3, substeps=5, boundary=boundary, wall_surface=True, grid_density=32.0,
                             size=(box_x, D, 9 * DX))
    p0 = e.get_particles_pos() - LO
    V0 = scene.solver("mpm").particle_volume()
    for _ in range(int(round(T / 4e-3))):
        scene.step()
    p = e.get_particles_pos() - LO
    J = np.linalg.det(e.get_particles_F().astype(np.float64))
    eps = RHO * G * H / water.lam          # hydrostatic compression at the floor: 0.49 %
    return H, D, eps, p0, p, float(np.sum(J * V0) / np.sum(V0))


def _inside_walls(p, box_x, D):
    tol = 1e-6                                 # float32 rounding of the projection
    lo, hi = np.zeros(3), np.array([box_x, D, 1.0])          # positions relative to LO
    return bool(np.all(p >= lo - tol) and np.all(p <= hi + tol))


def _column_tops(p):
    key = np.floor(p[:, 0] / DX).astype(int) * 1000 + np.floor(p[:, 1] / DX).astype(int)
    return {k: p[key == k, 2].max() for k in np.unique(key)}


@pytest.mark.parametrize("boundary", ["slip", "separate", "sticky"])
def test_liquid_filling_the_box_keeps_volume_and_height(boundary):
    W = 8 * DX
    H, D, eps, p0, p, vol = _column(boundary, W, W, T=1.0)
    # volume (measured at 1 s: 0.9971 slip, 0.9971 separate, 0.9975 sticky; ≥ 1 − ε = 0.9951)
    assert 1 - eps - 1e-5 <= vol <= 1 + 1e-5, vol
    # mean height over its start (measured at 1 s: 0.9957 slip, 0.9959 separate, 0.9964 sticky; the
    # hydrostatic state 1 − 2ε/3 = 0.9967 (0.9969 at 1.5 s); bound 1 − 4ε/3 = 0.9934)
    zbar, zbar0 = p[:, 2].mean(), p0[:, 2].mean()
    assert zbar >= zbar0 * (1 - 4 * eps / 3), zbar / zbar0
    # each column's top (measured within 1.3 mm; bound ε·H + dx = 3.2 cm)
    t0, t1 = _column_tops(p0), _column_tops(p)
    assert set(t1) <= set(t0)                  # no column outside the block's footprint
    shortening = eps * H + DX
    assert all(abs(t1[k] - t0[k]) <= shortening for k in t1), max(abs(t1[k] - t0[k]) for k in t1)
    assert _inside_walls(p, W, D)


def test_spreading_liquid_keeps_its_volume():
    # the same block in a box twice as wide spreads (and sloshes) over twice the floor area
    W = 8 * DX
    H, D, eps, p0, p, vol = _column("slip", W, 2 * W, T=1.5)
    assert 1 - eps - 1e-5 <= vol <= 1 + 1e-5, vol          # measured 0.9986
    # the flat depth is H/2: z̄ ≥ H/4·(1 − 4ε/3) at any time (measured 0.269 H at 1.5 s)
    zbar = p[:, 2].mean()
    assert zbar >= H / 4 * (1 - 4 * eps / 3), zbar / H
    assert _inside_walls(p, 2 * W, D)
    assert p[:, 0].max() > 1.5 * W                          # it did spread


def test_wall_surface_must_be_a_bool():
    with pytest.raises(OptionError, match=r"wall_surface = 'yes'.*True or False"):
        MPMOptions(wall_surface="yes")
    assert MPMOptions().wall_surface is True        # the default: walls do not leak
