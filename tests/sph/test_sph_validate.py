"""Long physics validations of the SPH solver (``tox -e validate``; deselected in CI).

They state the acceptance criteria of issue 9 with the figures measured (docs/sph.md).
"""

import functools
import importlib.util
import math
import os

import numpy as np
import polyphys
import pytest
from polyphys import morphs

pytestmark = pytest.mark.validate

HERE = os.path.dirname(os.path.abspath(__file__))


def _demo():
    path = os.path.join(HERE, "..", "..", "examples", "sph_demo.py")
    spec = importlib.util.spec_from_file_location("sph_demo", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@functools.cache
def column(solver, substeps, seconds, mu=10.0):
    """A 0.16 x 0.16 x 0.24 m column at rest in a closed tank (dx = 0.02 m, 768 particles; WCSPH
    c0 = 37 m/s, 60 substeps of 1/6 ms at the CFL limit). Returns the entity, dx, H, the max speed
    over the second half and the pressure averaged over the steps of the second half (cached: the
    hydrostatic and the still-liquid tests share one run)."""
    from polyphys.plugins.sph import Liquid, SPHOptions

    dx, H, W = 0.02, 0.24, 0.16
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=substeps),
                           sph=SPHOptions(pressure_solver=solver, particle_size=dx, lower_bound=(0, 0, 0),
                                          upper_bound=(W, W, H + 0.04)))
    w = scene.add_entity(morphs.Box(size=(W, W, H), pos=(W / 2, W / 2, H / 2)),
                         material=Liquid(gamma=0.0, mu=mu, stiffness=2e5))
    scene.build()
    vmax, ps = 0.0, []
    for k in range(int(round(seconds / 0.01))):
        scene.step()
        if k * 0.01 >= seconds / 2:
            vmax = max(vmax, float(np.linalg.norm(w.get_particles_vel(), axis=1).max()))
            ps.append(w.get_particles_pressure())
    return w, dx, H, vmax, np.mean(ps, axis=0)


def sph_pressure_acceleration(x, p, rho, m, H):
    """−Σⱼ mⱼ(pᵢ/ρᵢ² + pⱼ/ρⱼ²)∇Wᵢⱼ (cubic spline, support H) by brute force: the acceleration the
    solver's symmetric pressure term gives for the pressure field p."""
    d = x[:, None, :] - x[None, :, :]
    r = np.linalg.norm(d, axis=2)
    q = r / H
    s = 8.0 / (np.pi * H ** 3)
    dw = np.where(q <= 0.5, s / H * (18 * q * q - 12 * q), s / H * (-6 * (1 - q) ** 2))
    dw[(q >= 1) | (r == 0)] = 0.0
    with np.errstate(invalid="ignore", divide="ignore"):
        g = np.where(r[..., None] > 0, d * (dw / np.where(r > 0, r, 1))[..., None], 0.0)
    c = p / rho ** 2
    return -((m * (c[:, None] + c[None, :]))[..., None] * g).sum(axis=1)


def wall_pressure_acceleration(x, p, rho, b, psi, H, g):
    """The walls' share of the DFSPH pressure acceleration on liquid particle i (extrapolated
    mode): −Σ_b ψ_b (2pᵢ + ρᵢ g·(x_b − xᵢ))/ρᵢ² ∇Wᵢ_b — the mirrored pressure plus the hydrostatic
    offset to the boundary particle's depth (its bound p_b ≥ 0 is inactive more than one support
    below the surface)."""
    d = x[:, None, :] - b[None, :, :]
    r = np.linalg.norm(d, axis=2)
    q = r / H
    s = 8.0 / (np.pi * H ** 3)
    dw = np.where(q <= 0.5, s / H * (18 * q * q - 12 * q), s / H * (-6 * (1 - q) ** 2))
    dw[(q >= 1) | (r == 0)] = 0.0
    with np.errstate(invalid="ignore", divide="ignore"):
        gw = np.where(r[..., None] > 0, d * (dw / np.where(r > 0, r, 1))[..., None], 0.0)
    pb = 2 * p[:, None] + rho[:, None] * ((b[None] - x[:, None]) @ g)
    return -((psi[None] * pb / rho[:, None] ** 2)[..., None] * gw).sum(axis=1)


def test_hydrostatic_column_dfsph_pressure_balances_gravity():
    """The reported DFSPH pressure p = (κ_divergence + κ_density)·ρ is the pressure whose SPH
    gradient moved the particles in the substep. Averaged over the second half second, its
    symmetric SPH gradient (liquid neighbours and walls) holds the interior against gravity."""
    from polyphys.plugins.sph import sampling

    w, dx, H, vmax, p = column("dfsph", 4, 1.0)
    s = w.solver
    x, rho = w.get_particles_pos(), w.get_particles_density()
    z = x[:, 2]
    top = z.max() + dx / 2
    inner = (z < top - 2 * dx) & (z > 1.5 * dx)
    m = sampling.lattice_mass(1000.0, dx, 2 * dx, "cubic")
    psi = 1000.0 * s.model.b_vol.numpy()[: s.n_boundary].astype(float)
    a = sph_pressure_acceleration(x, p, rho, m, 2 * dx) \
        + wall_pressure_acceleration(x, p, rho, s.boundary_positions, psi, 2 * dx, np.array([0, 0, -9.81]))
    # 5 %: the pressure bound, applied to the force the pressure exerts (measured 1.008 g)
    assert abs(a[inner, 2].mean() / 9.81 - 1) < 0.05
    # DFSPH: the mean density below the free-surface layer within 1 % of rest
    assert abs(rho[z < top - 2 * dx].mean() / 1000 - 1) < 0.01


def test_hydrostatic_column_dfsph():
    """DFSPH with the pairwise extrapolated wall pressure and the carried half warm start: the
    pressure averaged over 0.5-1 s read as a straight line over the interior: slope ρg and p(0) =
    ρgH within 5 % (measured 0.992 ρg, 0.994 ρgH; 1.12 / 1.11 before 2026-11-30 — docs/sph.md)."""
    _check_hydrostatic_line(*column("dfsph", 4, 1.0))


def test_hydrostatic_column_wcsph():
    """WCSPH with the extrapolated wall pressure (Adami et al. 2012): the pressure read as a
    straight line over the interior (averaged over 1-2 s) has slope ρg and p(0) = ρgH within 5 %
    (measured 0.984 ρg, 0.984 ρgH), density within 1 % (measured +0.1 %)."""
    w, dx, H, vmax, p = column("wcsph", 60, 2.0)
    _check_hydrostatic_line(w, dx, H, vmax, p)
    z, rho = w.get_particles_pos()[:, 2], w.get_particles_density()
    assert abs(rho[z < z.max() - 1.5 * dx].mean() / 1000 - 1) < 0.01


def _check_hydrostatic_line(w, dx, H, vmax, p):
    x = w.get_particles_pos()
    z = x[:, 2]
    top = z.max() + dx / 2
    inner = (z < top - 2 * dx) & (z > 1.5 * dx)
    slope, p0 = np.polyfit(z[inner], p[inner], 1)
    # 5 %: the bound; the SPH gradient error of the cubic spline at H = 2dx on the
    # initial lattice is 2 %
    assert abs(p0 / (1000 * 9.81 * H) - 1) < 0.05
    assert abs(-slope / (1000 * 9.81) - 1) < 0.05


def test_still_liquid_stays_still_dfsph():
    """Measured max 0.009 m/s, median of the per-step maxima 0.008 over 1-2 s (0.156 / 0.104
    before 2026-11-30: the side walls under-supported the liquid next to them and the warm start
    alternated; 0.021 without the default XSPH — docs/sph.md)."""
    w, dx, H, vmax, p = column("dfsph", 4, 2.0)
    # bound: 1 % of the free-fall speed over the column, sqrt(2gH) = 2.2 m/s
    assert vmax < 0.01 * math.sqrt(2 * 9.81 * H)


def test_still_liquid_stays_still_wcsph():
    """Measured max 0.014 m/s, median 0.003 over 1-2 s with the extrapolated wall pressure (0.29
    with the mirrored one p_b = pᵢ, which under-supports the floor: the column sank and stirred)."""
    w, dx, H, vmax, p = column("wcsph", 60, 2.0)
    # bound: 1 % of the free-fall speed over the column, sqrt(2gH) = 2.2 m/s
    assert vmax < 0.01 * math.sqrt(2 * 9.81 * H)


@pytest.mark.parametrize("solver", [
    "dfsph",   # measured max |Z/Z_MM - 1| = 0.051 (at T = 1.19; 0.122 before 2026-11-30)
    # measured 0.146 at T = 1.68, the front 6-15 % ahead (0.133 before the box-wall sites all
    # got the flat-wall volume on 2026-11-30; 0.235 with the mirrored
    # p_b = pᵢ: the front ran 12-18 % ahead for 1 <= T <= 1.5)
    "wcsph"])
def test_dam_break_front_vs_martin_moyce(solver):
    """Column a = 0.2 m wide, 2a high, dx = 0.02 m (Martin & Moyce 1952, n² = 2), 1 <= T <= 3.

    The bounds come from the physics, not from the figures measured above: the simulated liquid has
    no gate and no bed friction, so its front may run ahead of the experiment but not lag it by more
    than the experiment's scatter (15 %, the issue's figure); and no front outruns Ritter's
    dam-break solution of the shallow-water equations, Z = 1 + 2T (front speed 2√(g·2a)), which
    drops the vertical acceleration that slows a real front."""
    demo = _demo()
    rows = demo.run(a=0.2, dx=0.02, solver=solver)
    ref = np.interp(rows[:, 0], demo.MARTIN_MOYCE[:, 0], demo.MARTIN_MOYCE[:, 1])
    sel = (rows[:, 0] >= 1.0) & (rows[:, 0] <= 3.0)
    T, Z = rows[sel, 0], rows[sel, 1]
    assert (Z >= 0.85 * ref[sel]).all(), (Z / ref[sel]).min()
    assert (Z <= 1 + 2 * T).all(), (Z - (1 + 2 * T)).max()


def test_dam_break_keeps_every_particle_in_the_tank_and_moves_the_front():
    demo = _demo()
    scene, water = demo.build(a=0.2, dx=0.02, solver="dfsph")
    o = scene.solver("sph").options
    lo, hi = np.float32(o.lower_bound).astype(float), np.float32(o.upper_bound).astype(float)
    for _ in range(60):
        scene.step()
        x = water.get_particles_pos()
        assert np.all(x >= lo) and np.all(x <= hi)
    # after t = 0.3 s (T = 2.97) the front has run out well beyond the initial column (Z > 3)
    assert demo.front(water.get_particles_pos(), 0.2) / 0.2 > 3.0
