"""The all-vs-all broadphase by sort-and-sweep on the CPU grid (collision_driver.broadphase_list_sorted,
docs/collision.md "Broadphase"): the same pairs in the same order as the list kernel, bit for bit."""

import numpy as np
import pytest
import warp as wp
from collision_helpers import geom
from polyphys.layout import Partition
from polyphys.plugins.rigid import RigidOptions
from polyphys.plugins.rigid import collision as C
from polyphys.plugins.rigid.collision import CollisionPipeline, set_poses_host

PARTS = (Partition(0, 0, 2), Partition(1, 2, 4))
N_ENVS = 4


def _scene(rng, n=40):
    """Generic sizes, types, masks, links; a plane, a second geom on link 0, two explicit pairs (one
    with a margin that inflates its AABB test), an exclude and a weld."""
    types = rng.choice(["sphere", "capsule", "box", "cylinder"], size=n)
    g = [geom(t, tuple(rng.uniform(0.08, 0.3, size=3)), i, margin=float(rng.choice([0.0, 0.01])),
              contype=int(rng.integers(1, 4)), conaffinity=int(rng.integers(1, 4)))
         for i, t in enumerate(types)]
    g.append(geom("plane", (0, 0, 1), -1))
    g.append(geom("sphere", (0.2,), 0))
    parent = [-1] + [int(rng.integers(-1, i)) for i in range(1, n)]
    moves = list(rng.random(n) < 0.9)
    ent = [i % 2 for i in range(n + 2)]
    pairs = [{"geom1": 3, "geom2": 17, "margin": 0.4}, {"geom1": n, "geom2": 5}]
    welds = [(8, 9, 1), (11, 30, 0)]
    return g, ent, parent, moves, pairs, welds


def _poses(rng, G, k):
    """Poses packed in a 1.2 m cube (many overlapping AABBs), moved a little from one call to the next
    (the kept sort order is nearly sorted), one geom's pose NaN in env 3."""
    pos = rng.uniform(-0.6, 0.6, size=(N_ENVS, G, 3)) + 0.02 * k
    pos[:, :, 2] += 0.3
    quat = rng.normal(size=(N_ENVS, G, 4))
    quat /= np.linalg.norm(quat, axis=-1, keepdims=True)
    pos[3, 7] = np.nan
    return pos, quat


def _pipe(monkeypatch, min_pairs, scene, precision, capture=False):
    monkeypatch.setattr(C, "SORTED_MIN_PAIRS", min_pairs)
    g, ent, parent, moves, pairs, welds = scene
    opts = RigidOptions(broadphase="all_vs_all", max_collision_pairs=900, max_contacts=3000)
    pipe = CollisionPipeline(g, ent, parent, moves, opts, local_masks=[False, True],
                             excludes=[(3, 5)], pairs=pairs, welds=welds)
    pipe.build(N_ENVS, "cpu", precision, partitions=PARTS)
    pipe.set_weld_active([0, 1], envs_idx=[2])
    return pipe


def _state(pipe):
    cnt = pipe.pair_count.numpy()
    out = [cnt.tobytes()]
    for name in ("pairs_buf", "pair_cand"):
        a = getattr(pipe, name).numpy()
        out += [a[e, :cnt[e]].tobytes() for e in range(N_ENVS)]
    cc = pipe.contact_count.numpy()
    for name in ("contact_geom", "contact_pos", "contact_frame", "contact_depth", "contact_pair"):
        a = getattr(pipe, name).numpy()
        out += [a[e, :cc[e]].tobytes() for e in range(N_ENVS)]
    return out


@pytest.mark.parametrize("precision", ["64", "32"])
def test_sorted_broadphase_equals_the_list(monkeypatch, precision):
    """Poses changing over 6 calls (the sort order kept between launches) and a captured graph replayed:
    the pair buffer (filled with -7 first), its count, the candidate blocks and the contacts equal the
    list kernel's byte for byte; the scene has enough overlaps for the test to see a missed or
    reordered pair."""
    scene = _scene(np.random.default_rng(5))
    G = len(scene[0])
    ref = _pipe(monkeypatch, 10**9, scene, precision)
    new = _pipe(monkeypatch, 0, scene, precision)
    assert new._sorted_bp and not ref._sorted_bp
    rng = np.random.default_rng(11)
    graphs = None
    n_pairs = 0
    for k in range(6):
        pos, quat = _poses(rng, G, k)
        for pipe in (ref, new):
            pipe.pairs_buf.fill_(wp.vec3i(-7, -7, -7))
            set_poses_host(pipe, pos, quat)
        for p in PARTS:
            ref.run(p)
        if k < 2:
            for p in PARTS:
                new.run(p)
        else:
            if graphs is None:
                graphs = []
                for p in PARTS:
                    with wp.ScopedCapture(device="cpu", force_module_load=False) as cap:
                        new.run(p)
                    graphs.append(cap.graph)
                set_poses_host(new, pos, quat)
            for gr in graphs:
                wp.capture_launch(gr)
        a, b = _state(ref), _state(new)
        assert a == b, f"call {k}"
        n_pairs += int(ref.pair_count.numpy().sum())
        # the sweep's bitmap is left zero for the next launch
        assert not new._parts[0].sweep_found.numpy().any() and not new._parts[1].sweep_found.numpy().any()
    assert n_pairs > 6 * N_ENVS * 20
    ref.check()
    new.check()


def test_sorted_broadphase_is_used_where_it_pays(monkeypatch):
    """All-vs-all on the CPU from SORTED_MIN_PAIRS listed pairs on; the list kernel below it and with
    sweep-and-prune."""
    scene = _scene(np.random.default_rng(5))
    g, ent, parent, moves, pairs, welds = scene
    for bp, n_min, used in (("all_vs_all", 0, True), ("all_vs_all", 10**9, False), ("sweep_and_prune", 0, False)):
        monkeypatch.setattr(C, "SORTED_MIN_PAIRS", n_min)
        pipe = CollisionPipeline(g, ent, parent, moves, RigidOptions(broadphase=bp)).build(2, "cpu", "64")
        assert pipe._sorted_bp is used
