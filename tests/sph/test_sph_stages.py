"""SPH stages against brute-force NumPy: the neighbour grid, densities, lattice rest density."""

import numpy as np
import pytest
from polyphys.plugins.sph import sampling

from .conftest import random_velocities  # noqa: F401


def brute_density(x, mass, bpos, bvol, rho0, H, kind):
    d = np.linalg.norm(x[:, None] - x[None], axis=-1)
    rf = (mass[None] * sampling.kernel_w(d, H, kind)).sum(1)
    db = np.linalg.norm(x[:, None] - bpos[None], axis=-1)
    rb = (rho0 * bvol[None] * sampling.kernel_w(db, H, kind)).sum(1)
    return rf + rb


@pytest.mark.parametrize("kernel", ["cubic", "wendland"])
def test_density_matches_brute_force_on_a_disordered_state(make_scene, kernel):
    scene, water = make_scene(n_envs=2, kernel=kernel)
    s = scene.solver("sph")
    rng = np.random.default_rng(1)
    pos = water.get_particles_pos() + rng.uniform(-0.015, 0.015, size=(2, water.n_particles, 3))
    water.set_particles_pos(np.clip(pos, 0.0, None))
    s.rho.fill_(float("nan"))               # an unwritten density shows up as NaN
    scene.forward()
    rho = water.get_particles_density()
    m = s.mass.numpy()[0]
    b, v = s.boundary_positions, s.model.b_vol.numpy()[: s.n_boundary]
    for env in range(2):
        ref = brute_density(water.get_particles_pos()[env], m, b, v, 1000.0, s.options.support, kernel)
        # float32 sums of ~40 terms of size ~rho: relative error ~1e-6
        np.testing.assert_allclose(rho[env], ref, rtol=2e-5)


def test_grid_lists_every_particle_once_in_index_order(make_scene):
    scene, water = make_scene(n_envs=2)
    random_velocities(scene, water)
    for _ in range(3):
        scene.step()
    s = scene.solver("sph")
    scene.forward()
    start, srt, cell = s.start.numpy(), s.sorted.numpy(), s.cell.numpy()
    for env in range(2):
        assert sorted(srt[env].tolist()) == list(range(s.N))
        for c in np.unique(cell[env]):
            members = srt[env, start[env, c]:start[env, c] + (cell[env] == c).sum()]
            assert np.all(np.diff(members) > 0)
            assert np.all(cell[env, members] == c)


@pytest.mark.parametrize("kernel", ["cubic", "wendland"])
def test_interior_lattice_particle_has_rest_density(kernel):
    # the lattice-calibrated mass makes an interior particle exactly rho0 (float64 host mirror);
    # the Warp kernel agrees with the host mirror to float32 rounding (test above)
    dx, H = 0.02, 0.04
    m = sampling.lattice_mass(1000.0, dx, H, kernel)
    k = np.arange(-3, 4) * dx
    X, Y, Z = np.meshgrid(k, k, k, indexing="ij")
    r = np.sqrt(X ** 2 + Y ** 2 + Z ** 2)
    assert abs(m * sampling.kernel_w(r, H, kernel).sum() - 1000.0) < 1e-9
    # and the kernel is normalised: its integral over the support is 1 (midpoint rule, 1e-3)
    h = H / 40
    g = (np.arange(-40, 40) + 0.5) * h
    X, Y, Z = np.meshgrid(g, g, g, indexing="ij")
    integral = sampling.kernel_w(np.sqrt(X ** 2 + Y ** 2 + Z ** 2), H, kernel).sum() * h ** 3
    assert abs(integral - 1.0) < 1e-3
