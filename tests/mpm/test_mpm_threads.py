"""P2G's slab-sorted particle lists on CPU: each list — a claimed block of the stress stage
(kernels/transfer.py p2g_stress_blocks, the default) or a worker's share (slab_starts/slab_place,
``MPMSolver.claim_stress = False``) — holds its particles sorted by slab, each slab's in index order,
i.e. a stable argsort of the list's slabs; the scatter reads only these lists (docs/mpm.md, "Threads").
Both ways give bit-identical steps for any number of workers."""

import numpy as np
import polyphys
import pytest
from polyphys import morphs
from polyphys.plugins.mpm import MPMOptions
from polyphys.plugins.mpm.kernels import transfer
from polyphys.plugins.mpm.solver import MPMSolver

from .mpm_helpers import LO


def _two_bodies(threads: int):
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=1e-3, substeps=2, cpu_threads=threads, graph_capture=True),
                           mpm=MPMOptions(lower_bound=tuple(LO), upper_bound=tuple(LO + 0.625), grid_density=32.0))
    M = polyphys.materials.MPM
    a = scene.add_entity(morphs.Box(size=(0.31, 0.13, 0.17), pos=tuple(LO + (0.27, 0.21, 0.19))),
                         M.Elastic(E=2e4, nu=0.3, rho=900.0))
    scene.add_entity(morphs.Box(size=(0.09, 0.22, 0.11), pos=tuple(LO + (0.41, 0.37, 0.42))),
                     M.ElastoPlastic(E=3e4, nu=0.25, rho=1100.0))
    scene.build(n_envs=1)
    pos = a.get_particles_pos()
    a.set_particles_pos(pos[..., np.random.default_rng(5).permutation(a.n_particles), :])
    return scene, a


def test_claimed_stress_blocks_match_the_shares_bit_for_bit(monkeypatch):
    """The claimed stress stage (any worker computes any block) and the workers' fixed shares give the
    same bits after captured steps, for 1, 2 and 3 workers (a node sums each slab's particles in index
    order either way)."""
    out = {}
    for claim in (False, True):
        monkeypatch.setattr(MPMSolver, "claim_stress", claim)
        for threads in (1, 2, 3):
            scene, a = _two_bodies(threads)
            assert a.solver._claim_stress is claim
            for _ in range(6):
                scene.step()
            s = a.solver
            out[claim, threads] = [x.numpy().copy() for x in (s.pos, s.vel, s.C, s.F, s.Jp)]
            scene.simulator.close()
    ref = out[False, 1]
    assert np.isfinite(ref[0]).all() and np.abs(ref[1]).max() > 0
    for key, arrays in out.items():
        for x, y in zip(ref, arrays):
            np.testing.assert_array_equal(x, y, err_msg=str(key))


@pytest.mark.parametrize("claim", [True, False])
def test_slab_lists_are_each_share_stably_sorted_by_slab(claim, monkeypatch):
    monkeypatch.setattr(MPMSolver, "claim_stress", claim)
    # two bodies at different heights and x spans; the first one's particles shuffled, so every
    # list holds particles of several slabs in an order not already sorted by slab (checked below)
    scene, a = _two_bodies(3)
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
    B = transfer.STRESS_BLOCK
    lists = [(q * B, min((q + 1) * B, s.n_particles)) for q in range(-(-s.n_particles // B))] if claim else \
        [part.chunk(q, s.n_particles) for q in range(part.workers)]
    assert len(lists) == counts.shape[0] > 1
    shuffled = 0
    for q, (lo, hi) in enumerate(lists):
        sl = slab[lo:hi]
        keep = np.nonzero(sl >= 0)[0]
        expect = lo + keep[np.argsort(sl[keep], kind="stable")]
        shuffled += len(np.unique(sl[keep])) > 1 and (np.diff(sl[keep]) < 0).any()   # not sorted already
        np.testing.assert_array_equal(order[lo:lo + len(expect)], expect)
        np.testing.assert_array_equal(counts[q], np.bincount(sl[keep], minlength=s.n_slabs))
        np.testing.assert_array_equal(cursor[q], np.cumsum(counts[q]))
    assert shuffled >= len(lists) // 2       # the first body's lists (the second body is one slab, in order)
