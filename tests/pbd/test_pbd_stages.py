"""Stage tests: each kernel's outputs are poisoned (NaN / -7) before it runs and compared with a
NumPy reference, so an unwritten element or a wrong formula shows up at once."""

import numpy as np
import polyphys
from polyphys import morphs
from polyphys.plugins.pbd import PBDOptions


def _random_scene(n=120, seed=0, friction=0.0):
    rng = np.random.default_rng(seed)
    pts = rng.uniform(-0.06, 0.06, (n, 3))
    sc = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=1),
                        pbd=PBDOptions(iterations=1, relaxation=1.3, lower_bound=(-0.2, -0.2, 0), upper_bound=(0.2, 0.2, 0.4)))
    e = sc.add_entity(morphs.Box(pos=(0, 0, 0.2)), polyphys.materials.PBD.Particle(particle_size=0.02, friction=friction),
                      particles=pts, pinned=[3, 7])
    sc.build(n_envs=2)
    # env 1 differs from env 0
    x = e.get_particles_pos()
    x[1] += rng.normal(scale=0.003, size=x[1].shape)
    e.set_particles_pos(x)
    return sc, e


def _grid(s):
    import warp as wp
    from polyphys.plugins.pbd.kernels import neighbors as NB

    g = s._grid
    for a in (s.cell_start, s.cell_end, s.sorted_idx):
        a.fill_(-7)
    wp.launch(NB.build_grid, dim=s.layout.n_envs, inputs=[s.n_particles, g.mask, g.lower, g.inv_cell, g.dims, s.pos],
              outputs=[s.cell_ijk, s.cell_start, s.cell_end, s.sorted_idx], device="cpu")
    return g


def _np_hash(c, mask):
    c = c.astype(np.uint32)
    h = (c[:, 0] * np.uint32(73856093)) ^ (c[:, 1] * np.uint32(19349663)) ^ (c[:, 2] * np.uint32(83492791))
    return (h & np.uint32(mask)).astype(np.int64)


def test_grid_is_a_stable_counting_sort():
    sc, e = _random_scene()
    s = sc.solver("pbd")
    g = _grid(s)
    pos = s.pos.numpy()
    lo = np.array([g.lower[0], g.lower[1], g.lower[2]])
    dims = np.array([g.dims[0], g.dims[1], g.dims[2]])
    for env in range(2):
        cell = np.clip(np.floor((pos[env] - lo) * np.float32(g.inv_cell)).astype(int), 0, dims - 1)
        np.testing.assert_array_equal(s.cell_ijk.numpy()[env], cell)
        h = _np_hash(cell, g.mask)
        start, end, srt = s.cell_start.numpy()[env], s.cell_end.numpy()[env], s.sorted_idx.numpy()[env]
        for b in range(g.mask + 1):
            np.testing.assert_array_equal(srt[start[b]:end[b]], np.nonzero(h == b)[0])
        assert sorted(srt.tolist()) == list(range(s.n_particles))


def test_contact_gather_matches_numpy():
    import warp as wp
    from polyphys.plugins.pbd.kernels import neighbors as NB

    sc, e = _random_scene()
    s, m = sc.solver("pbd"), sc.solver("pbd").model
    _grid(s)
    wp.copy(s.pos_prev, s.pos)                # no displacement: friction terms vanish
    s.delta.fill_(float("nan"))
    wp.launch(NB.particle_gather, dim=(2, s.n_particles),
              inputs=[m.kind, m.group, m.self_collide, m.rest_pos, m.radius, m.friction, m.mass, m.inv_mass0,
                      m.rest_density, s.fluid_h, s._grid.cell ** 2, 1.3, s._grid.mask, s.free, s.pos, s.pos_prev, s.lam_fluid,
                      s.cell_ijk, s.cell_start, s.cell_end, s.sorted_idx],
              outputs=[s.delta], device="cpu")
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
    import warp as wp
    from polyphys.plugins.pbd.kernels import constraints as C

    rng = np.random.default_rng(3)
    pts = rng.uniform(-0.05, 0.05, (6, 3))
    edges = np.array([[0, 1], [2, 3], [4, 5], [1, 2]])
    sc = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01), pbd=PBDOptions())
    e = sc.add_entity(morphs.Box(pos=(0, 0, 0.5)), polyphys.materials.PBD.Particle(edge_compliance=1e-4), particles=pts,
                      edges=edges, pinned=[5])
    sc.build()
    s, m = sc.solver("pbd"), sc.solver("pbd").model
    x = e.get_particles_pos() + rng.normal(scale=0.01, size=(6, 3))
    e.set_particles_pos(x)
    a, b = int(s._dcol[0]), int(s._dcol[1])
    s.lam.fill_(0.25)
    h = 0.01
    wp.launch(C.solve_distance, dim=(1, b - a), inputs=[a, 0, m.d_i, m.d_j, m.d_rest, m.d_comp, m.inv_mass0, 1 / h**2, s.free],
              outputs=[s.pos, s.lam], device="cpu")
    got = s.pos.numpy()[0]
    ref = x.copy()
    w = m.inv_mass0.numpy() * s.free.numpy()[0]
    di, dj, rest = m.d_i.numpy(), m.d_j.numpy(), m.d_rest.numpy()
    lam_ref = np.full(s.n_dist, 0.25)
    for k in range(a, b):
        i, j = di[k], dj[k]
        d = ref[i] - ref[j]
        L = np.linalg.norm(d)
        at = 1e-4 / h**2
        dl = (-(L - rest[k]) - at * 0.25) / (w[i] + w[j] + at)
        lam_ref[k] += dl
        ref[i] += w[i] * dl * d / L
        ref[j] -= w[j] * dl * d / L
    np.testing.assert_allclose(got, ref, atol=2e-7)
    np.testing.assert_allclose(s.lam.numpy()[0, a:b], lam_ref[a:b], rtol=1e-4)
    assert b - a == 3                     # (1, 2) shares particles: it is in the second colour
