"""P2G's slab-sorted particle lists on CPU (kernels/transfer.py slab_starts/slab_place): each
worker's share of the particles sorted by slab, each slab's in index order, equals a stable
argsort of the share's slabs; the scatter reads only these lists (docs/mpm.md, "Threads")."""

import numpy as np
import polyphys
from polyphys import morphs
from polyphys.plugins.mpm import MPMOptions

from .mpm_helpers import LO


def test_slab_lists_are_each_share_stably_sorted_by_slab():
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=1e-3, substeps=2, cpu_threads=3, graph_capture=True),
                           mpm=MPMOptions(lower_bound=tuple(LO), upper_bound=tuple(LO + 0.625), grid_density=32.0))
    M = polyphys.materials.MPM
    # two bodies at different heights and x spans; the first one's particles shuffled, so every
    # share holds particles of several slabs in an order not already sorted by slab (checked below)
    a = scene.add_entity(morphs.Box(size=(0.31, 0.13, 0.17), pos=tuple(LO + (0.27, 0.21, 0.19))),
                         M.Elastic(E=2e4, nu=0.3, rho=900.0))
    scene.add_entity(morphs.Box(size=(0.09, 0.22, 0.11), pos=tuple(LO + (0.41, 0.37, 0.42))),
                     M.ElastoPlastic(E=3e4, nu=0.25, rho=1100.0))
    scene.build(n_envs=1)
    pos = a.get_particles_pos()
    a.set_particles_pos(pos[..., np.random.default_rng(5).permutation(a.n_particles), :])
    active = np.ones(a.n_particles, bool)
    active[::7] = False                         # inactive particles have no slab and are left out
    a.set_particles_active(active)
    s = a.solver
    s.slab_order.fill_(-1)
    s.slab_cursor.fill_(-1)
    scene.step()
    slab, order = s.slab.numpy()[0], s.slab_order.numpy()[0]
    counts, cursor = s.slab_counts.numpy()[0], s.slab_cursor.numpy()[0]
    part = scene.layout.partitions[0]
    assert part.workers == 3
    assert (slab[: a.n_particles][~active] == -1).all()
    for q in range(part.workers):
        lo, hi = part.chunk(q, s.n_particles)
        sl = slab[lo:hi]
        keep = np.nonzero(sl >= 0)[0]
        expect = lo + keep[np.argsort(sl[keep], kind="stable")]
        assert len(np.unique(sl[keep])) > 1 and (np.diff(sl[keep]) < 0).any()   # not sorted already
        np.testing.assert_array_equal(order[lo:lo + len(expect)], expect)
        np.testing.assert_array_equal(counts[q], np.bincount(sl[keep], minlength=s.n_slabs))
        np.testing.assert_array_equal(cursor[q], np.cumsum(counts[q]))
