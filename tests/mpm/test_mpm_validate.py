"""Long MPM validations (``pytest -m validate``, ``tox -e validate``): sand angle of repose and the
dam break of Martin & Moyce (1952)."""

import math

import numpy as np
import pytest
from mpm_helpers import M

import polyphys
from polyphys import morphs
from polyphys.plugins.mpm import MPMOptions

pytestmark = pytest.mark.validate

# Martin & Moyce (1952), "An experimental study of the collapse of liquid columns on a rigid
# horizontal plane", Phil. Trans. R. Soc. A 244: surge front of a column of width a = 2.25 in and
# height 2a (n² = 2), dimensionless front Z = x/a against T = t·sqrt(2g/a) (their table, as used in
# SPH/MPM dam-break validations).
MARTIN_MOYCE_T = np.array([0.41, 0.84, 1.19, 1.43, 1.63, 1.83, 1.98, 2.20, 2.32, 2.51, 2.65, 2.83, 2.98, 3.11])
MARTIN_MOYCE_Z = np.array([1.11, 1.22, 1.44, 1.67, 1.89, 2.11, 2.33, 2.56, 2.78, 3.00, 3.22, 3.44, 3.67, 3.89])


def test_dam_break_front_follows_martin_moyce():
    # column a = 0.1 m wide, 2a tall, 0.05 m thick between free-slip walls (a slab: the flow is 2D);
    # grid dx = a/12.8, 8 particles per cell; weakly compressible water with sound speed ~20 m/s,
    # 10× the front speed sqrt(2 g · 2a) ≈ 2 m/s (density varies by < 1 %)
    a, g = 0.1, 9.81
    dens = 128.0
    dx = 1 / dens
    pad = 3 * dx
    water = M.Liquid(E=1.44e6, nu=0.2, rho=1000.0)
    opts = MPMOptions(lower_bound=(0, 0, 0), upper_bound=(0.6, 0.05 + 2 * pad + 2 * dx, 0.25 + pad),
                      grid_density=dens, boundary="slip")
    h = 0.8 * opts.cfl_number * dx / water.wave_speed
    substeps = 4
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=h * substeps, substeps=substeps), mpm=opts)
    wall = pad                      # the wall layer ends here: x = 0 of the experiment
    col = scene.add_entity(morphs.Box(size=(a, 0.05, 2 * a), pos=(wall + a / 2, pad + dx + 0.025, pad + a)),
                           water)
    scene.build()
    T, Z = [], []
    t_end = 3.2 / math.sqrt(2 * g / a)
    for i in range(int(t_end / (h * substeps)) + 1):
        scene.step()
        t = (i + 1) * h * substeps
        T.append(t * math.sqrt(2 * g / a))
        Z.append((col.get_particles_pos()[:, 0].max() - wall) / a)
    T, Z = np.array(T), np.array(Z)
    sim = np.interp(MARTIN_MOYCE_T, T, Z)
    window = (MARTIN_MOYCE_T >= 1.0) & (MARTIN_MOYCE_T <= 3.0)
    err = np.abs(sim[window] - MARTIN_MOYCE_Z[window]) / MARTIN_MOYCE_Z[window]
    print("T", MARTIN_MOYCE_T[window].round(2).tolist(), "\nZ sim", sim[window].round(3).tolist(),
          "\nZ exp", MARTIN_MOYCE_Z[window].tolist(), "\nrel err", err.round(3).tolist())
    assert err.max() <= 0.15


def _angle_of_repose(phi_deg):
    """A 55° cone of sand avalanches on a sticky floor; the surface slope of the pile it leaves,
    fitted over the band 20-80 % of the pile height, is the angle of repose."""
    import trimesh

    dens = 64.0
    dx = 1 / dens
    floor = 3 * dx
    sand = M.Sand(E=5e4, nu=0.3, rho=2200.0, friction_angle=phi_deg)
    opts = MPMOptions(lower_bound=(0, 0, 0), upper_bound=(0.6, 0.6, 0.3), grid_density=dens, boundary="sticky")
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=4e-3, substeps=4), mpm=opts)
    cone = trimesh.creation.cone(radius=0.1, height=0.143, sections=32)
    pile = scene.add_entity(morphs.Mesh(vertices=cone.vertices, faces=cone.faces, pos=(0.3, 0.3, floor + 0.002)),
                            sand)
    scene.build()
    for _ in range(150):                       # 0.6 s: the avalanche stops by ~0.3 s
        scene.step()
    p = pile.get_particles_pos().astype(float)
    r = np.hypot(p[:, 0] - 0.3, p[:, 1] - 0.3)
    z = p[:, 2] - floor
    edges = np.arange(0, r.max() + dx, dx / 2)
    k = np.digitize(r, edges)
    rc, top = [], []
    for b in np.unique(k):
        rc.append(r[k == b].mean())
        top.append(z[k == b].max())
    rc, top = np.array(rc), np.array(top)
    H = top.max()
    band = (top > 0.2 * H) & (top < 0.8 * H)
    slope = np.polyfit(rc[band], top[band], 1)[0]
    return math.degrees(math.atan(-slope)), float(np.abs(pile.get_particles_vel()).max())


@pytest.mark.parametrize("phi", [25.0, 40.0])
def test_sand_angle_of_repose(phi):
    angle, speed = _angle_of_repose(phi)
    print(f"friction angle {phi}: angle of repose {angle:.1f}°, max speed {speed:.3f} m/s")
    assert speed < 0.05
    assert abs(angle - phi) <= 5.0
