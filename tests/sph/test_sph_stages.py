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


@pytest.mark.parametrize("kernel", ["cubic", "wendland"])
def test_lattice_particle_next_to_a_domain_wall_has_rest_density(kernel):
    """A liquid lattice filling the domain box: with the flat-wall calibration and every box-wall
    site at the flat-wall volume, the particles next to one wall, along an edge and in a corner all
    have exactly ρ₀ (float32 rounding, 1e-5). (The calibration was once evaluated off the lattice,
    which gave 1.04 ρ₀ at a Wendland wall and 1.096 ρ₀ in a corner; with Akinci's per-site volumes
    the face sites next to an edge had 0.95-0.97 of the flat-wall volume: edge particles 0.994 /
    0.997 ρ₀, corner particles 0.986 / 0.992 ρ₀ for cubic / Wendland.)"""
    import polyphys
    from polyphys import morphs
    from polyphys.plugins.sph import Liquid, SPHOptions

    dx, W = 0.02, 0.16
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.004, substeps=2),
                           sph=SPHOptions(particle_size=dx, kernel=kernel, lower_bound=(0, 0, 0),
                                          upper_bound=(W, W, W)))
    w = scene.add_entity(morphs.Box(size=(W, W, W), pos=(W / 2, W / 2, W / 2)), material=Liquid(gamma=0.0))
    scene.build()
    x, rho = w.get_particles_pos(), w.get_particles_density() / 1000.0

    def at(p):
        return rho[np.argmin(np.linalg.norm(x - np.array(p), axis=1))]

    mid = W / 2 - dx / 2
    assert abs(at((mid, mid, dx / 2)) - 1.0) < 1e-5            # floor
    assert abs(at((dx / 2, mid, mid)) - 1.0) < 1e-5            # side wall
    assert abs(at((dx / 2, mid, dx / 2)) - 1.0) < 1e-5          # edge
    assert abs(at((dx / 2, dx / 2, dx / 2)) - 1.0) < 1e-5       # corner
    assert np.abs(rho - 1.0).max() < 1e-5                       # every particle


def test_extrapolated_boundary_pressure_matches_brute_force(make_scene):
    """WCSPH: Adami et al. (2012) wall pressure p_b = max((Σ_f p_f W_bf + g·Σ_f ρ_f (x_b − x_f) W_bf)/Σ_f W_bf,
    0) on a disordered state, NaN-filled first. (DFSPH's pairwise wall offset is checked with its
    non-pressure stage in test_sph_dfsph_stages.py.)"""
    scene, water = make_scene(n_envs=2, solver="wcsph")
    s = scene.solver("sph")
    rng = np.random.default_rng(2)
    pos = water.get_particles_pos() + rng.uniform(-0.015, 0.015, size=(2, water.n_particles, 3))
    water.set_particles_pos(np.clip(pos, 0.0, None))
    scene.forward()
    s.bp.fill_(float("nan"))
    for part in scene.layout.partitions:
        s._boundary_pressure(part, s._parts[part.index])
    bp = s.bp.numpy()
    b = s.boundary_positions
    H, g = s.options.support, np.asarray(scene.layout.gravity)
    rho, p = water.get_particles_density(), water.get_particles_pressure()
    for env in range(2):
        x = water.get_particles_pos()[env]
        d = b[:, None] - x[None]
        w = sampling.kernel_w(np.linalg.norm(d, axis=-1), H, "cubic")
        sp = (w * rho[env][None] * (d @ g)).sum(1)
        assert np.abs(p[env]).max() > 0              # a pressure field that matters
        sp += (w * p[env][None]).sum(1)
        sw = w.sum(1)
        ref = np.where(sw > 0, np.maximum(sp / np.where(sw > 0, sw, 1), 0), 0)
        assert (ref > 0).sum() > 50                  # many wall particles carry a pressure
        # float32 sums of ~10 terms: 1e-4 relative to the largest wall pressure
        np.testing.assert_allclose(bp[env, : s.n_boundary], ref, rtol=1e-4, atol=1e-4 * ref.max())


@pytest.mark.parametrize("solver", ["wcsph", "dfsph"])
def test_scans_skip_only_cells_beyond_the_support(make_scene, solver):
    """The density and wall-pressure scans leave out the cells of a row that lie H or more from the
    particle (kernels/fluid.py, row_near): the neighbour lists, densities and wall pressures are
    bitwise those of the full 27-cell scan (cell_slack = inf: nothing left out), here with many
    particles on or within a few ulp of cell faces and some on the domain's upper bound; a margin that cuts
    into the support (negative slack) changes them, so the comparison can fail."""
    scene, water = make_scene(n_envs=2, solver=solver)
    s = scene.solver("sph")
    H = s.options.support
    rng = np.random.default_rng(4)
    pos = water.get_particles_pos() + rng.uniform(-0.02, 0.02, size=(2, water.n_particles, 3))
    faces = np.round(pos / H) * H                    # the nearest cell face (lower bound 0)
    snap = rng.random(pos.shape) < 0.4
    pos = np.where(snap, faces * (1 + rng.integers(-3, 4, size=pos.shape) * 6e-8), pos)
    hi = np.nextafter(np.asarray(s.options.upper_bound, np.float32), np.float32(0))   # float32, inside
    pos = np.clip(pos.astype(np.float32), np.float32(0), hi)
    pos[:, :5, 0] = hi[0]                            # on the upper bound: in (or clamped into) the last cell
    water.set_particles_pos(pos)
    slack = s.model.cell_slack

    def scan(cell_slack):
        s.model.cell_slack = cell_slack
        for a in (s.rho, s.nbr_grad, s.bp):
            a.fill_(float("nan"))
        s.nbr_list.fill_(-7)
        scene.forward()
        if solver == "wcsph":                        # (DFSPH has no extrapolated wall pressure)
            for part in scene.layout.partitions:
                s._boundary_pressure(part, s._parts[part.index])
        return [a.numpy().copy() for a in (s.rho, s.nbrs, s.nbr_list, s.nbr_grad, s.bp)]

    full, trimmed, cut = scan(1e30), scan(slack), scan(-0.3 * H)
    s.model.cell_slack = slack
    assert full[1].min() >= 0 and full[1].mean() > 10  # lists not overflowed, neighbourhoods not empty
    for a, b in zip(full, trimmed):
        np.testing.assert_array_equal(a, b)
    assert any(not np.array_equal(a, b, equal_nan=True) for a, b in zip(full, cut))


@pytest.mark.parametrize("solver", ["wcsph", "dfsph"])
def test_claimed_sort_scatter_and_integration_equal_fixed_shares_for_1_2_3_threads(solver):
    """The sort's scatter and the integration as claimed blocks (``claim_sort``, ``claim_integrate``),
    and the cell keys and counts too (``claim_count``: blocks taken two-ended), give the same state bit
    for bit as their fixed shares, for 1, 2 and 3 worker threads (a block of 1300 particles: 3 blocks of
    512, so the workers' home ranges differ and blocks may be taken from another's range)."""
    import polyphys
    from polyphys import morphs
    from polyphys.plugins.sph import Liquid, SPHOptions
    from polyphys.plugins.sph.solver import SPHSolver

    def run(threads, claim):
        SPHSolver.claim_sort = SPHSolver.claim_integrate = claim != "fixed"
        SPHSolver.claim_count = claim == "count"
        try:
            scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.002, substeps=4, cpu_threads=threads),
                                   sph=SPHOptions(pressure_solver=solver, particle_size=0.015, lower_bound=(0, 0, 0),
                                                  upper_bound=(0.4, 0.24, 0.32), max_density_iters=4,
                                                  max_divergence_iters=2))
            water = scene.add_entity(morphs.Box(size=(0.16, 0.16, 0.2), pos=(0.1, 0.12, 0.1)),
                                     material=Liquid(gamma=0.0, stiffness=2000.0), name="water")
            scene.build()
        finally:
            SPHSolver.claim_sort = SPHSolver.claim_integrate = SPHSolver.claim_count = True
        assert water.n_particles > 2 * 512
        s = scene.solver("sph")
        part = scene.layout.partitions[0]
        assert s.binsort.claims_count(part, s.blocks if s._claim_sort else None,
                                      () if s._claim_count else None) == (claim == "count" and threads > 1)
        random_velocities(scene, water, seed=4)
        for _ in range(3):
            scene.step()
        return water.get_particles_pos(), water.get_particles_vel()

    ref = run(1, "fixed")
    for threads in (1, 2, 3):
        for claim in ("fixed", "scatter", "count"):
            if (threads, claim) == (1, "fixed"):
                continue
            got = run(threads, claim)
            for a, b in zip(ref, got):
                np.testing.assert_array_equal(a, b, err_msg=f"cpu_threads={threads}, claimed={claim}")
