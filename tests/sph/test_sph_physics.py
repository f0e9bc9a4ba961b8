"""Cheap physics checks of the SPH solver for CI (the long versions are in test_sph_validate.py)."""

import math

import numpy as np
import polyphys
from polyphys import morphs


def test_small_hydrostatic_column_wcsph_pressure_is_rho_g_h():
    """A 0.08 x 0.08 x 0.12 m WCSPH column (96 particles, dx = 0.02 m, c0 = 19 m/s, 26 substeps of
    0.38 ms at the CFL limit) at rest for 1 s with the extrapolated wall pressure (Adami et al.
    2012). The pressure averaged over 0.5-1 s, read as a straight line below the two surface layers,
    has slope ρg and p(0) = ρgH within 5 % (the issue's bound; measured 1.016 ρg, 0.977 ρgH) and
    the mean density is within 1 % of rest (measured +0.2 %). With the mirrored wall pressure
    p_b = pᵢ the floor under-supports the column (see docs/sph.md)."""
    from polyphys.plugins.sph import Liquid, SPHOptions

    dx, H, W, stiffness = 0.02, 0.12, 0.08, 5e4
    c0 = math.sqrt(stiffness * 7 / 1000.0)
    h_max = 0.4 * dx / (c0 + math.sqrt(2 * 9.81 * (H + 0.04)))
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=math.ceil(0.01 / h_max)),
                           sph=SPHOptions(pressure_solver="wcsph", particle_size=dx, lower_bound=(0, 0, 0),
                                          upper_bound=(W, W, H + 0.04)))
    w = scene.add_entity(morphs.Box(size=(W, W, H), pos=(W / 2, W / 2, H / 2)),
                         material=Liquid(gamma=0.0, mu=10.0, stiffness=stiffness))
    scene.build()
    ps = []
    for k in range(100):
        scene.step()
        if k >= 50:
            ps.append(w.get_particles_pressure())
    p = np.mean(ps, axis=0)
    z, rho = w.get_particles_pos()[:, 2], w.get_particles_density()
    inner = z < z.max() - 1.5 * dx
    slope, p0 = np.polyfit(z[inner], p[inner], 1)
    assert abs(-slope / (1000 * 9.81) - 1) < 0.05
    assert abs(p0 / (1000 * 9.81 * H) - 1) < 0.05
    assert abs(rho[inner].mean() / 1000 - 1) < 0.01


def _wendland_grad(d, r, H):
    """∇ᵢW(xᵢ − xⱼ) of the Wendland C2 kernel with support H (Dehnen & Aly 2012), NumPy."""
    q = r / H
    s = 21.0 / (2.0 * np.pi * H ** 3)
    dw = s / H * (-20.0 * q * np.clip(1.0 - q, 0.0, None) ** 3)
    dw[(q >= 1.0) | (r == 0.0)] = 0.0
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(r[..., None] > 0, d * (dw / np.where(r > 0, r, 1.0))[..., None], 0.0)


def test_wendland_column_balances_gravity_with_its_lattice_gradient_factor():
    """A DFSPH column with the Wendland C2 kernel (0.16 x 0.16 x 0.24 m, dx = 0.02 m, support 2dx,
    768 particles, in a tank off the origin) at rest for 1 s: (1) in the interior (more than one
    support from every wall and the surface) the pressure's own symmetric SPH gradient, evaluated
    here by brute force with the Wendland kernel, holds the liquid against gravity within 5 %
    (measured 1.006 g); (2) the pressure's slope is ρg/F within 5 %, F the gradient factor of the
    kernel on the sampled lattice, F = −Σⱼ Vⱼ zⱼ ∂W/∂z with the calibrated particle volume
    V = m/ρ₀ (the mass makes the lattice density exactly ρ₀): F = 0.950 for Wendland at 2dx, so
    the slope reads 1.053 ρg (measured 1.071; a 4 x 4 x 6 column reads 1.108, its particles all
    within 1.5 dx of a wall). A wrong Wendland gradient (e.g. halved) breaks both."""
    from polyphys.plugins.sph import Liquid, SPHOptions

    dx, H, W = 0.02, 0.24, 0.16
    lo = np.array([0.013, -0.021, 0.0])
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=4),
                           sph=SPHOptions(pressure_solver="dfsph", kernel="wendland", particle_size=dx,
                                          lower_bound=tuple(lo), upper_bound=tuple(lo + (W, W, H + 0.04))))
    w = scene.add_entity(morphs.Box(size=(W, W, H), pos=tuple(lo + (W / 2, W / 2, H / 2))),
                         material=Liquid(gamma=0.0, mu=10.0))
    scene.build()
    ps, rs = [], []
    for k in range(100):
        scene.step()
        if k >= 50:
            ps.append(w.get_particles_pressure())
            rs.append(w.get_particles_density())
    p, rho = np.mean(ps, axis=0), np.mean(rs, axis=0)
    x = w.get_particles_pos().astype(float)
    z = x[:, 2]
    Hk = 2 * dx
    m = float(scene.solver("sph").mass.numpy()[0, 0])
    # (1) interior force balance
    d = x[:, None] - x[None]
    r = np.linalg.norm(d, axis=2)
    c = p / rho ** 2
    a = -((m * (c[:, None] + c[None]))[..., None] * _wendland_grad(d, r, Hk)).sum(axis=1)
    centre = lo[:2] + W / 2
    deep = (z > Hk) & (z < z.max() - Hk) & np.all(np.abs(x[:, :2] - centre) < W / 2 - Hk, axis=1)
    assert deep.sum() >= 50
    assert abs(a[deep, 2].mean() / 9.81 - 1) < 0.05, a[deep, 2].mean() / 9.81
    # (2) the slope against the lattice gradient factor
    k = np.arange(-3, 4) * dx
    L = np.stack(np.meshgrid(k, k, k, indexing="ij"), -1).reshape(-1, 3)
    F = -(m / 1000.0 * L[:, 2] * _wendland_grad(L, np.linalg.norm(L, axis=1), Hk)[:, 2]).sum()
    assert abs(F - 0.950) < 0.002                       # the figure docs/sph.md gives
    inner = z < z.max() - 1.5 * dx
    slope = -np.polyfit(z[inner], p[inner], 1)[0] / (1000 * 9.81)
    assert abs(slope * F - 1) < 0.05, (slope, F)


def test_dam_break_front_short():
    """The shortened CI form of the validate-only dam break (test_sph_validate.py): DFSPH, column
    a = 0.2 m, dx = 0.02 m (600 particles), to T = 2. Bounds from the physics: no gate and no bed
    friction, so the front may run ahead of Martin & Moyce (1952) but not lag it by more than the
    experiment's scatter (15 %); it cannot outrun Ritter's shallow-water front Z = 1 + 2T."""
    import importlib.util
    import os

    path = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "sph_demo.py")
    spec = importlib.util.spec_from_file_location("sph_demo", path)
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    a = 0.2
    rows = demo.run(a=a, dx=0.02, solver="dfsph", t_end=2.0 / math.sqrt(2 * 9.81 / a))
    mm = demo.MARTIN_MOYCE
    window = (mm[:, 0] >= 1.0) & (mm[:, 0] <= 2.0)
    sim = np.interp(mm[window, 0], rows[:, 0], rows[:, 1])
    assert (sim >= 0.85 * mm[window, 1]).all(), (sim / mm[window, 1]).round(3)
    assert (sim <= 1 + 2 * mm[window, 0]).all()
