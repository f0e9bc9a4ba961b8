"""Stage tests: each kernel's outputs are poisoned (NaN / -7) before it runs and compared with a
NumPy reference, so an unwritten element or a wrong formula shows up at once."""

import numpy as np
import polyphys
import pytest
from polyphys import morphs
from polyphys.plugins.pbd import PBDOptions


def _random_scene(n=120, seed=0, friction=0.0, wide=False):
    """``wide``: a domain of too many cells for dense keys (the grid hashes the cells)."""
    rng = np.random.default_rng(seed)
    pts = rng.uniform(-0.06, 0.06, (n, 3))
    big = 60.0 if wide else 0.2
    sc = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=1),
                        pbd=PBDOptions(iterations=1, relaxation=1.3, lower_bound=(-big, -big, 0), upper_bound=(big, big, 0.4)))
    e = sc.add_entity(morphs.Box(pos=(0, 0, 0.2)), polyphys.materials.PBD.Particle(particle_size=0.02, friction=friction),
                      particles=pts, pinned=[3, 7])
    sc.build(n_envs=2)
    # env 1 differs from env 0
    x = e.get_particles_pos()
    x[1] += rng.normal(scale=0.003, size=x[1].shape)
    e.set_particles_pos(x)
    return sc, e


def _grid(s, scan=False):
    """Build the grid and the neighbour lists (outputs poisoned first); scan=True marks every
    particle's list as overflowed, so the readers take the grid-scan path instead."""
    g = s._grid
    for a in (s.cell_start, s.sorted_idx, s.nbr_count, s.nbr_list):
        a.fill_(-7)
    s.cell_ijk.fill_(-7)
    s.pos_sorted.fill_(float("nan"))
    for part in s.layout.partitions:
        s.build_grid(part)
    if scan:
        s.nbr_count.fill_(-1)
    return g


def _lists(s):
    return [s.cell_ijk, s.cell_start, s.sorted_idx, s.nbr_count, s.nbr_list]


@pytest.mark.parametrize("wide", [False, True], ids=["dense-keys", "hashed-keys"])
def test_neighbour_lists_hold_every_pair_within_one_cell_in_grid_order(wide):
    sc, e = _random_scene(wide=wide)
    s = sc.solver("pbd")
    g = _grid(s)
    pos, cnt, lst = s.pos.numpy().astype(float), s.nbr_count.numpy(), s.nbr_list.numpy()
    cap = s.nbr_cap
    for env in range(2):
        d2 = ((pos[env][:, None] - pos[env][None]) ** 2).sum(-1)
        for i in range(s.n_particles):
            want = set(np.nonzero((d2[i] < g.cell ** 2) & (np.arange(s.n_particles) != i))[0].tolist())
            assert 0 <= cnt[env, i] <= cap
            got = lst[env, i * cap:i * cap + cnt[env, i]].tolist()
            assert set(got) == want and len(got) == len(want)
    # more neighbours than the capacity: the count says so (-1) and nothing is half-written as valid
    import warp as wp
    from polyphys.plugins.pbd.kernels import neighbors as NB
    assert g.dense == (0 if wide else 1)
    wp.launch(NB.build_neighbors, dim=(2, -(-s.n_particles // NB.ITEM_BLOCK)),
              inputs=[g.cell * g.cell, 1, g.dense, g.dims, g.mask, g.lower, g.inv_cell, s.n_particles, 0, s.pos, s.cell_ijk,
                      s.cell_start, s.sorted_idx, s.pos_sorted], outputs=[s.nbr_count, s.nbr_list, s.blocks.counters],
              device="cpu")
    n_nb = np.array([[((pos[env] - pos[env, i]) ** 2).sum(1).__lt__(g.cell ** 2).sum() - 1
                      for i in range(s.n_particles)] for env in range(2)])
    np.testing.assert_array_equal(s.nbr_count.numpy(), np.where(n_nb > 1, -1, n_nb))


def _np_hash(c, mask):
    c = c.astype(np.uint32)
    h = (c[:, 0] * np.uint32(73856093)) ^ (c[:, 1] * np.uint32(19349663)) ^ (c[:, 2] * np.uint32(83492791))
    return (h & np.uint32(mask)).astype(np.int64)


@pytest.mark.parametrize("wide", [False, True], ids=["dense-keys", "hashed-keys"])
def test_grid_is_a_stable_counting_sort(wide):
    sc, e = _random_scene(wide=wide)
    s = sc.solver("pbd")
    g = _grid(s)
    pos = s.pos.numpy()
    lo = np.array([g.lower[0], g.lower[1], g.lower[2]])
    dims = np.array([g.dims[0], g.dims[1], g.dims[2]])
    for env in range(2):
        cell = np.clip(np.floor((pos[env] - lo) * np.float32(g.inv_cell)).astype(int), 0, dims - 1)
        np.testing.assert_array_equal(s.cell_ijk.numpy()[env], cell)
        key = (cell[:, 2] * dims[1] + cell[:, 1]) * dims[0] + cell[:, 0] if g.dense else _np_hash(cell, g.mask)
        start, srt = s.cell_start.numpy()[env], s.sorted_idx.numpy()[env]
        for b in range(g.n_keys):
            np.testing.assert_array_equal(srt[start[b]:start[b + 1]], np.nonzero(key == b)[0])
        assert sorted(srt.tolist()) == list(range(s.n_particles))
        np.testing.assert_array_equal(s.pos_sorted.numpy()[env], pos[env][srt])


@pytest.mark.parametrize("wide", [False, True], ids=["dense-keys", "hashed-keys"])
@pytest.mark.parametrize("scan", [False, True], ids=["lists", "grid-scan"])
def test_contact_gather_matches_numpy(scan, wide):
    import warp as wp
    from polyphys.plugins.pbd.kernels import neighbors as NB

    sc, e = _random_scene(wide=wide)
    s, m = sc.solver("pbd"), sc.solver("pbd").model
    _grid(s, scan)
    wp.copy(s.pos_prev, s.pos)                # no displacement: friction terms vanish
    s.delta.fill_(float("nan"))
    wp.launch(NB.particle_gather, dim=(2, -(-s.n_particles // NB.ITEM_BLOCK)),
              inputs=[m.kind, m.group, m.self_collide, m.rest_pos, m.radius, m.friction, m.mass, m.inv_mass0,
                      m.rest_density, s.fluid_h, s._grid.cell ** 2, 1.3, s._grid.dense, s._grid.dims, s._grid.mask,
                      s.nbr_cap, s.n_particles, 0, s.free, s.pos, s.pos_prev, s.lam_fluid, *_lists(s)],
              outputs=[s.delta, s.blocks.counters], device="cpu")
    got = s.delta.numpy()
    pos, free = s.pos.numpy().astype(float), s.free.numpy()
    w0, r = m.inv_mass0.numpy(), m.radius.numpy()
    for env in range(2):
        w = w0 * free[env]
        ref = np.zeros((s.n_particles, 3))
        for i in range(s.n_particles):
            if w[i] == 0:
                continue
            d = pos[env, i] - pos[env]
            dist = np.linalg.norm(d, axis=1)
            hit = (dist < r[i] + r) & (np.arange(s.n_particles) != i)
            if hit.any():
                pen = (r[i] + r - dist)[hit]
                corr = d[hit] / dist[hit, None] * (pen * w[i] / (w[i] + w[hit]))[:, None]
                ref[i] = corr.sum(0) * 1.3 / hit.sum()
        assert np.isfinite(got[env]).all()
        np.testing.assert_allclose(got[env], ref, atol=1e-7)   # float32 sums of ~1e-3 m terms


def test_distance_colour_matches_numpy_xpbd_update():
    """One substep of the solver itself (prediction, every distance colour, boundaries, velocity)
    on an edge network at rest with gravity off, against NumPy XPBD with the compliance scaled by
    the substep this test derives from its own SimOptions (h = dt/substeps), not a value handed to
    the kernel: a solver passing the wrong 1/h² fails here."""
    rng = np.random.default_rng(3)
    pts = rng.uniform(-0.05, 0.05, (6, 3))
    edges = np.array([[0, 1], [2, 3], [4, 5], [1, 2]])
    dt, substeps, alpha = 0.012, 3, 1e-4
    sc = polyphys.Scene(sim=polyphys.SimOptions(dt=dt, substeps=substeps, gravity=(0, 0, 0), graph_capture=False),
                        pbd=PBDOptions(iterations=1))
    e = sc.add_entity(morphs.Box(pos=(0.3, -0.2, 0.5), euler=(10, 20, 30)),
                      polyphys.materials.PBD.Particle(particle_size=1e-4, edge_compliance=alpha), particles=pts,
                      edges=edges, pinned=[5])
    sc.build()
    s = sc.solver("pbd")
    x = e.get_particles_pos().astype(np.float64) + rng.normal(scale=0.01, size=(6, 3))
    e.set_particles_pos(x)
    part = sc.layout.partitions[0]
    s.substep_pre_coupling(0, part)
    s.substep_post_coupling(0, part)
    got = e.get_particles_pos()
    h = dt / substeps
    ref = x.copy()
    w = np.array([1.0 / e.get_mass()[k] for k in range(6)])
    w[5] = 0.0
    rest0 = np.linalg.norm(pts[edges[:, 0]] - pts[edges[:, 1]], axis=1)
    # the solver's colour order: (0, 1), (2, 3), (4, 5) share no particle (colour 0), (1, 2) follows
    for k in (0, 1, 2, 3):
        i, j = edges[k]
        d = ref[i] - ref[j]
        L = np.linalg.norm(d)
        at = alpha / h ** 2
        dl = (-(L - rest0[k])) / (w[i] + w[j] + at)
        ref[i] += w[i] * dl * d / L
        ref[j] -= w[j] * dl * d / L
    np.testing.assert_allclose(got, ref, atol=2e-7)
    assert len(s._dcol) - 1 == 2                   # (1, 2) shares particles: it is in the second colour
    np.testing.assert_allclose(e.get_particles_vel(), (ref - x) / h, atol=2e-7 / h)


@pytest.mark.parametrize("scan", [False, True], ids=["lists", "grid-scan"])
def test_fluid_lambda_matches_numpy(scan):
    import warp as wp
    from polyphys.plugins.pbd.kernels import neighbors as NB

    rng = np.random.default_rng(4)
    d = 0.02
    g = (np.arange(5) - 2) * d
    pts = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3) + rng.normal(scale=0.002, size=(125, 3))
    sc = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01), pbd=PBDOptions(fluid_cfm=1e-3))
    sc.add_entity(morphs.Box(pos=(0, 0, 0.5)), polyphys.materials.PBD.Liquid(particle_size=d), particles=pts,
                  pinned=[0])
    sc.build()
    s, m = sc.solver("pbd"), sc.solver("pbd").model
    _grid(s, scan)
    s.lam_fluid.fill_(float("nan"))
    wp.launch(NB.fluid_lambda, dim=(1, s.n_particles),
              inputs=[m.kind, m.mass, m.inv_mass0, m.rest_density, s.fluid_h, 1e-3, s._grid.dense, s._grid.dims,
                      s._grid.mask, s.nbr_cap, 0, s.free, s.pos, *_lists(s)], outputs=[s.lam_fluid], device="cpu")
    got = s.lam_fluid.numpy()[0]
    x = s.pos.numpy()[0].astype(float)
    mass = m.mass.numpy().astype(float)
    w = m.inv_mass0.numpy() * s.free.numpy()[0]
    h, rho0 = s.fluid_h, 1000.0
    ref = np.zeros(len(x))
    for i in range(len(x)):
        r = x[i] - x
        r2 = (r ** 2).sum(1)
        nb = (r2 < h * h) & (np.arange(len(x)) != i)
        rho = mass[i] * 315 / (64 * np.pi * h ** 9) * h ** 6 + np.sum(
            mass[nb] * 315 / (64 * np.pi * h ** 9) * (h * h - r2[nb]) ** 3)
        rr = np.sqrt(r2[nb])
        grad = r[nb] * (-45 / (np.pi * h ** 6) * (h - rr) ** 2 / rr)[:, None] * (mass[nb] / rho0)[:, None]
        denom = (w[i] * np.sum(grad.sum(0) ** 2) + np.sum(w[nb] * (grad ** 2).sum(1))) * (1 + 1e-3)
        ref[i] = -max(rho / rho0 - 1, 0) / denom
    assert np.isfinite(got).all() and (got < 0).any()
    np.testing.assert_allclose(got, ref, rtol=2e-4, atol=1e-12)   # float32 kernel sums vs float64


def _one_solve(kind):
    """One XPBD solve (compliance 0) of a single perturbed bending quad or tet; returns
    (x before, x after, masses, solver)."""
    import warp as wp
    from polyphys.plugins.pbd.kernels import constraints as C

    rng = np.random.default_rng(5)
    sc = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01), pbd=PBDOptions())
    PBD = polyphys.materials.PBD
    if kind == "bend":
        v = np.array([[0, 0, 0], [0.1, 0, 0], [0.05, 0.08, 0], [0.05, -0.08, 0]], float)
        e = sc.add_entity(morphs.Mesh(vertices=v, faces=[[0, 1, 2], [1, 0, 3]], pos=(0, 0, 0.5)),
                          PBD.Cloth(bending_compliance=0.0, self_collision=False))
    else:
        v = np.array([[0, 0, 0], [0.1, 0, 0], [0, 0.1, 0], [0, 0, 0.1]], float)
        e = sc.add_entity(morphs.Mesh(vertices=v, faces=[[0, 1, 2, 3]], pos=(0, 0, 0.5)), PBD.Elastic())
    sc.build()
    s, m = sc.solver("pbd"), sc.solver("pbd").model
    x0 = e.get_particles_pos() + rng.normal(scale=0.004, size=(4, 3))
    e.set_particles_pos(x0)
    s.lam.zero_()
    if kind == "bend":
        wp.launch(C.solve_bending, dim=(1, 1), inputs=[0, s.n_dist, m.b_quad, m.b_rest, m.b_comp, m.inv_mass0,
                                                       1e4, s.free], outputs=[s.pos, s.lam], device="cpu")
    else:
        wp.launch(C.solve_volume, dim=(1, 1), inputs=[0, s.n_dist + s.n_bend, m.t_quad, m.t_rest, m.t_comp,
                                                      m.inv_mass0, 1e4, s.free], outputs=[s.pos, s.lam], device="cpu")
    return x0, e.get_particles_pos(), e.get_mass(), s


def test_bending_solve_restores_angle_and_conserves_momentum():
    """One Gauss-Newton step of the exact dihedral gradient from a 4 mm perturbation: the angle error
    drops by more than 10x (linearisation error is second order) and Σ m Δx = 0 (the gradients of a
    translation-invariant constraint sum to zero)."""
    from polyphys.plugins.pbd.sampling import dihedral_angle

    x0, x1, mass, s = _one_solve("bend")
    q = s.model.b_quad.numpy()
    rest = s.model.b_rest.numpy()
    e0 = abs(dihedral_angle(x0, q) - rest)[0]
    e1 = abs(dihedral_angle(x1, q) - rest)[0]
    assert e0 > 0.01 and e1 < e0 / 10
    # float32 positions near z = 0.5 m are resolved to 6e-8 m: that bounds each m·Δx term
    np.testing.assert_allclose((mass[:, None] * (x1 - x0)).sum(0), 0.0, atol=4 * mass.max() * 6e-8)


def test_volume_solve_restores_volume_and_conserves_momentum():
    x0, x1, mass, s = _one_solve("tet")

    def vol(x):
        return np.dot(np.cross(x[1] - x[0], x[2] - x[0]), x[3] - x[0]) / 6

    v0 = s.model.t_rest.numpy()[0]
    assert abs(vol(x0) - v0) > 1e-6 and abs(vol(x1) - v0) < abs(vol(x0) - v0) / 10
    # float32 positions near z = 0.5 m are resolved to 6e-8 m: that bounds each m·Δx term
    np.testing.assert_allclose((mass[:, None] * (x1 - x0)).sum(0), 0.0, atol=4 * mass.max() * 6e-8)


@pytest.mark.parametrize("grain", [1, 6, 64], ids=["every-stage-split", "small-stages-serial", "all-colours-one-launch"])
@pytest.mark.parametrize("wide", [False, True], ids=["dense-keys", "hashed-keys"])
def test_one_env_is_bit_identical_for_1_2_3_threads_with_every_stage_split(monkeypatch, wide, grain):
    """The contract scene (cloth, sand, liquid, shape-matched ball) plus a tet-meshed elastic block,
    one env, stepped by 1, 2 and 3 worker threads with a share of one item per worker (so every
    stage, constraint colour and body loop is split, unlike at the default grain): the same bits.
    Grain 6: the larger distance colours split, the smaller ones fit in one share and are launched
    on the partition's own thread, between split stages (PBDSolver._rows, round 17c); grain 64:
    every colour fits in one share, so each constraint kind is one launch looping over all its
    colours (PBDSolver._colours), as at one thread: the same bits too."""
    from polyphys.plugins.pbd import contract as pbd_contract
    from polyphys.plugins.pbd.solver import PBDSolver
    from scipy.spatial.transform import Rotation

    monkeypatch.setattr(PBDSolver, "grain", grain)
    ents, opts, drive = pbd_contract.scene()
    if wide:
        opts = PBDOptions(iterations=2, lower_bound=(-40.0, -40.0, 0.0), upper_bound=(40.0, 40.0, 0.5))
    # a unit cube in five tets, scaled, rotated, placed off-origin
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 1], [1, 0, 1], [0, 1, 1], [1, 1, 1]], float)
    v = Rotation.from_euler("xyz", [0.3, -0.2, 0.5]).apply((v - 0.5) * [0.05, 0.04, 0.03])
    tets = [[0, 1, 2, 4], [1, 3, 2, 7], [1, 4, 5, 7], [2, 6, 4, 7], [1, 2, 4, 7]]
    runs = []
    for threads in (1, 2, 3):
        sc = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=2, cpu_threads=threads), pbd=opts)
        for morph, material, kw in ents:
            sc.add_entity(morph, material=material, **kw)
        sc.add_entity(morphs.Mesh(vertices=v, faces=tets, pos=(0.1, 0.13, 0.2)), polyphys.materials.PBD.Elastic())
        sc.build()
        s = sc.solver("pbd")
        assert s.layout.partitions[0].workers == threads and s._grid.dense == (0 if wide else 1)
        assert s.n_dist and s.n_bend and s.n_lam > s.n_dist + s.n_bend and s.n_bodies and s.has_liquid
        if grain == 6:      # both kinds of stage: split colours and one-share colours
            sizes = np.diff(s._dcol)
            assert (sizes >= 2 * grain).any() and (sizes < 2 * grain).any()
        drive(sc, np.random.default_rng(3))
        states = []
        for _ in range(3):
            sc.step()
            states.append({k: a.numpy().copy() for k, a in s.state_arrays().items()})
        runs.append(states)
    assert np.all(np.isfinite(runs[0][-1]["pos"]))
    for threads, states in zip((2, 3), runs[1:], strict=True):
        for step, (a, b) in enumerate(zip(runs[0], states, strict=True)):
            for k in a:
                np.testing.assert_array_equal(b[k], a[k], err_msg=f"{k}, step {step + 1}, cpu_threads={threads} vs 1")


def test_range_kernels_equal_the_colour_launches_bit_for_bit():
    """``solve_distance_range`` / ``solve_bending_range`` (one thread per env looping over a range:
    all colours of a kind in one launch, or a worker's share of one colour) against the grid kernels
    launched colour by colour, from the same perturbed cloth in two envs with nonzero multipliers:
    the same position and multiplier bits; a share [a, b) of a colour leaves every particle outside
    it alone (NaN there stays NaN)."""
    import warp as wp
    from polyphys.plugins.pbd import grid_cloth
    from polyphys.plugins.pbd.kernels import constraints as C

    sc = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=1),
                        pbd=PBDOptions(iterations=1, lower_bound=(-1, -1, 0), upper_bound=(1, 1, 2)))
    sc.add_entity(grid_cloth(size=(0.3, 0.3), res=(9, 9), pos=(0, 0, 1.0)),
                  polyphys.materials.PBD.Cloth(stretch_compliance=1e-4, bending_compliance=0.01, self_collision=False,
                                               tethers=False), pinned=[0, 8])
    sc.build(n_envs=2)
    s, m = sc.solver("pbd"), sc.solver("pbd").model
    rng = np.random.default_rng(5)
    x0 = s.pos.numpy() + rng.normal(scale=0.01, size=(*s.pos.shape, 3)).astype(np.float32)
    l0 = rng.normal(scale=1e-3, size=s.lam.shape).astype(np.float32)
    kinds = [(C.solve_distance, C.solve_distance_range, s._dcol, 0, [m.d_i, m.d_j, m.d_rest, m.d_comp]),
             (C.solve_bending, C.solve_bending_range, s._bcol, s.n_dist, [m.b_quad, m.b_rest, m.b_comp])]
    assert len(s._dcol) > 2 and len(s._bcol) > 2
    tail = [m.inv_mass0, 1e4, s.free]
    for grid_k, range_k, cols, off, model in kinds:
        s.pos.assign(x0)
        s.lam.assign(l0)
        for c in range(len(cols) - 1):
            wp.launch(grid_k, dim=(2, int(cols[c + 1] - cols[c])), inputs=[int(cols[c]), off, *model, *tail],
                      outputs=[s.pos, s.lam], device="cpu")
        ref_x, ref_l = s.pos.numpy().copy(), s.lam.numpy().copy()      # .numpy() of a CPU array is a view
        assert (ref_l[:, off + cols[0]:off + cols[-1]] != l0[:, off + cols[0]:off + cols[-1]]).mean() > 0.9
        s.pos.assign(x0)
        s.lam.assign(l0)
        wp.launch(range_k, dim=2, inputs=[int(cols[0]), int(cols[-1]), off, *model, *tail], outputs=[s.pos, s.lam],
                  device="cpu")
        np.testing.assert_array_equal(s.pos.numpy().view(np.uint32), ref_x.view(np.uint32))
        np.testing.assert_array_equal(s.lam.numpy().view(np.uint32), ref_l.view(np.uint32))
        # a share [a, b) of colour 0: its particles as the grid launch moves them, the rest untouched
        a, b = int(cols[0]) + 1, int(cols[1]) - 1
        ends = (np.stack([m.d_i.numpy(), m.d_j.numpy()], 1) if off == 0 else m.b_quad.numpy())[a:b].ravel()
        s.pos.assign(x0)
        s.lam.assign(l0)
        wp.launch(grid_k, dim=(2, b - a), inputs=[a, off, *model, *tail], outputs=[s.pos, s.lam], device="cpu")
        want_x, want_l = s.pos.numpy().copy(), s.lam.numpy().copy()
        outside = np.ones(x0.shape[1], bool)
        outside[ends] = False
        poison = x0.copy()
        poison[:, outside] = np.nan
        s.pos.assign(poison)
        s.lam.assign(l0)
        wp.launch(range_k, dim=2, inputs=[a, b, off, *model, *tail], outputs=[s.pos, s.lam], device="cpu")
        got = s.pos.numpy()
        assert np.isnan(got[:, outside]).all()
        np.testing.assert_array_equal(got[:, ~outside].view(np.uint32), want_x[:, ~outside].view(np.uint32))
        np.testing.assert_array_equal(s.lam.numpy().view(np.uint32), want_l.view(np.uint32))


def test_zero_lambda_clears_its_range_only():
    """``zero_lambda`` (one thread per env looping over [k0, k1)): the range is zero in every env, the
    multipliers outside it keep their (NaN) values."""
    import warp as wp
    from polyphys.plugins.pbd.kernels import integrate as I

    lam = wp.full((3, 100), float("nan"), dtype=float, device="cpu")
    wp.launch(I.zero_lambda, dim=3, inputs=[10, 60], outputs=[lam], device="cpu")
    a = lam.numpy()
    assert (a[:, 10:60] == 0.0).all() and np.isnan(a[:, :10]).all() and np.isnan(a[:, 60:]).all()


def test_particle_range_kernels_write_their_share_only():
    """The particle stages (one thread per env looping over [i0, i1)): over a share, the particles in
    it as over the whole range, every other particle's outputs left as they were (NaN)."""
    import warp as wp
    from polyphys.plugins.pbd.kernels import integrate as I

    rng = np.random.default_rng(2)
    n, a, b = 50, 7, 31
    v = lambda: wp.array(rng.normal(size=(2, n, 3)).astype(np.float32), dtype=wp.vec3, device="cpu")  # noqa: E731
    x, xp, vel = v(), v(), v()

    def run(i0, i1, poison):
        out = wp.array(np.full((2, n, 3), np.nan if poison else 0.0, np.float32), dtype=wp.vec3, device="cpu")
        wp.launch(I.update_velocity, dim=2, inputs=[50.0, 0.99, i0, i1, x, xp, vel], outputs=[out], device="cpu")
        return out.numpy().copy()

    whole, share = run(0, n, False), run(a, b, True)
    np.testing.assert_array_equal(share[:, a:b].view(np.uint32), whole[:, a:b].view(np.uint32))
    assert np.isnan(share[:, :a]).all() and np.isnan(share[:, b:]).all()
    ref = (vel.numpy() + (x.numpy() - xp.numpy()) * np.float32(50.0)) * np.float32(0.99)
    np.testing.assert_allclose(whole, ref, rtol=1e-6)
    pos = wp.array(np.full((2, n, 3), np.nan, np.float32), dtype=wp.vec3, device="cpu")
    pos_in = x.numpy()
    pos.numpy()[:, a:b] = pos_in[:, a:b]
    prev = wp.array(np.full((2, n, 3), np.nan, np.float32), dtype=wp.vec3, device="cpu")
    pred = wp.array(np.full((2, n, 3), np.nan, np.float32), dtype=wp.vec3, device="cpu")
    wp.launch(I.predict_position, dim=2, inputs=[0.01, a, b, vel], outputs=[pos, prev, pred], device="cpu")
    for arr in (pos, prev, pred):
        got = arr.numpy()
        assert np.isnan(got[:, :a]).all() and np.isnan(got[:, b:]).all() and np.isfinite(got[:, a:b]).all()
    np.testing.assert_array_equal(prev.numpy()[:, a:b], pos_in[:, a:b])
    np.testing.assert_array_equal(pred.numpy()[:, a:b], pos.numpy()[:, a:b])
