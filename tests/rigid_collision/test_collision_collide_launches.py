"""CollisionPipeline.collide's launches (docs/collision.md, "Launch replay"): on the CPU grid the geom poses, AABBs
and the all-vs-all broadphase in one launch (collision_driver.poses_aabb_broadphase[_sorted]), and the launches
recorded by the first call and replayed by the next calls with the same arrays. Both bit-identical to the separate
launches issued each time: every output NaN / -7 filled before each call, compared byte for byte."""

import numpy as np
import pytest
import warp as wp
from collision_helpers import geom
from polyphys.layout import Partition
from polyphys.plugins.rigid import RigidOptions
from polyphys.plugins.rigid import collision as C
from polyphys.plugins.rigid.collision import CollisionPipeline

PARTS = (Partition(0, 0, 2), Partition(1, 2, 5))
N_ENVS = 5
N_LINKS = 24

OUTS = ("geom_xpos", "geom_xquat", "geom_xmat", "aabb_lo", "aabb_hi", "pair_count", "pairs_buf", "pair_cand",
        "cand_count", "cand_pos", "cand_normal", "cand_dist", "contact_raw", "contact_count", "contact_geom",
        "contact_pos", "contact_frame", "contact_depth", "contact_includemargin", "contact_pair")


def _scene(rng):
    """Spheres, capsules and boxes on 24 links (some with offsets from their link, some at its origin), a plane,
    an explicit pair with an inflating margin, an exclude and a weld."""
    types = rng.choice(["sphere", "capsule", "box"], size=N_LINKS)
    g = []
    for i, t in enumerate(types):
        off = {} if i % 3 == 0 else {"pos": tuple(rng.uniform(-0.05, 0.05, size=3))}
        g.append(geom(t, tuple(rng.uniform(0.08, 0.25, size=3)), i, margin=float(rng.choice([0.0, 0.01])), **off))
    g.append(geom("plane", (0, 0, 1), -1))
    parent = [-1] + [int(rng.integers(-1, i)) for i in range(1, N_LINKS)]
    moves = [True] * N_LINKS
    pairs = [{"geom1": 3, "geom2": 17, "margin": 0.3}]
    return g, [i % 2 for i in range(len(g))], parent, moves, pairs, [(8, 9, 1)]


def _pipe(monkeypatch, min_pairs, scene, precision, fused, cached):
    monkeypatch.setattr(C, "SORTED_MIN_PAIRS", min_pairs)
    g, ent, parent, moves, pairs, welds = scene
    opts = RigidOptions(broadphase="all_vs_all", mujoco_compatible=True, max_collision_pairs=400, max_contacts=800)
    pipe = CollisionPipeline(g, ent, parent, moves, opts, excludes=[(3, 5)], pairs=pairs, welds=welds)
    pipe.build(N_ENVS, "cpu", precision, partitions=PARTS)
    pipe.fused_broadphase = fused
    pipe.cache_launches = cached
    return pipe


def _links(rng, precision, k):
    """Link poses packed in a 1 m cube, moved from one call to the next, one link's pose NaN in env 4."""
    S = wp.float64 if precision == "64" else wp.float32
    npf = np.float64 if precision == "64" else np.float32
    pos = rng.uniform(-0.5, 0.5, size=(N_ENVS, N_LINKS, 3)) + 0.02 * k
    pos[..., 2] += 0.25
    quat = rng.normal(size=(N_ENVS, N_LINKS, 4))
    quat /= np.linalg.norm(quat, axis=-1, keepdims=True)
    pos[4, 6] = np.nan
    return pos.astype(npf), quat.astype(npf), wp.types.vector(3, S), wp.types.quaternion(S)


def _export(pipe):
    """Separate export arrays (the copying path of the export)."""
    n, K = N_ENVS, pipe.max_contacts
    V, M, S = wp.types.vector(3, pipe.scalar), wp.types.matrix((3, 3), pipe.scalar), pipe.scalar
    return (wp.zeros(n, dtype=wp.int32), wp.zeros((n, K), dtype=V), wp.zeros((n, K), dtype=M),
            wp.zeros((n, K), dtype=S), wp.zeros((n, K), dtype=S), wp.zeros((n, K, 2), dtype=wp.int32))


def _fill(pipe, export):
    for a in [getattr(pipe, name) for name in OUTS] + list(export):
        if a.dtype in (wp.int32, wp.vec2i, wp.vec3i):
            a.fill_(-7)
        else:
            a.fill_(float("nan"))


def _state(pipe, export):
    return [getattr(pipe, name).numpy().tobytes() for name in OUTS] + [a.numpy().tobytes() for a in export]


@pytest.mark.parametrize("precision", ["64", "32"])
@pytest.mark.parametrize("sorted_bp", [False, True], ids=["list", "sorted"])
def test_fused_and_replayed_launches_equal_the_separate_ones(monkeypatch, precision, sorted_bp):
    """Six calls on moving link poses (written into the same arrays: the replays must read them), then new link
    pose arrays (a new record: the replay of the old arrays' launches would read the old poses), then a captured
    graph of the replayed launches: the fused + replayed pipeline's outputs and export equal the separate launches'
    byte for byte at every call; the replays issue no wp.launch."""
    scene = _scene(np.random.default_rng(3))
    min_pairs = 0 if sorted_bp else 10**9
    ref = _pipe(monkeypatch, min_pairs, scene, precision, fused=False, cached=False)
    new = _pipe(monkeypatch, min_pairs, scene, precision, fused=True, cached=True)
    assert new._sorted_bp is sorted_bp and ref._sorted_bp is sorted_bp
    ex_ref, ex_new = _export(ref), _export(new)
    rng = np.random.default_rng(7)
    pos, quat, V, Q = _links(rng, precision, 0)
    arrs = {id(p): (wp.array(pos, dtype=V), wp.array(quat, dtype=Q)) for p in (ref, new)}
    launches = []
    real = wp.launch

    def counting(*a, **k):
        launches.append(a[0].key)
        return real(*a, **k)

    monkeypatch.setattr(wp, "launch", counting)
    n_pairs = n_contacts = 0
    for k in range(9):
        pos, quat, V, Q = _links(rng, precision, k)
        if k == 6:          # new arrays: a new record
            arrs = {id(p): (wp.array(pos, dtype=V), wp.array(quat, dtype=Q)) for p in (ref, new)}
        for pipe, ex in ((ref, ex_ref), (new, ex_new)):
            lp, lq = arrs[id(pipe)]
            lp.assign(pos)
            lq.assign(quat)
            _fill(pipe, ex)
        del launches[:]
        if k < 8:
            for p in PARTS:
                new.collide(p, *arrs[id(new)], ex_new)
        else:               # the replayed launches captured as a graph
            graphs = []
            for p in PARTS:
                with wp.ScopedCapture(device="cpu", force_module_load=False) as cap:
                    new.collide(p, *arrs[id(new)], ex_new)
                graphs.append(cap.graph)
            _fill(new, ex_new)
            for gr in graphs:
                wp.capture_launch(gr)
        assert bool(launches) == (k in (0, 6))          # recorded at the first call with these arrays only
        if k in (0, 6):
            fused = "poses_aabb_broadphase_sorted" if sorted_bp else "poses_aabb_broadphase"
            assert launches.count(fused) == len(PARTS) and "poses_aabb" not in launches
        for p in PARTS:
            ref.collide(p, *arrs[id(ref)], ex_ref)
        assert _state(ref, ex_ref) == _state(new, ex_new), f"call {k}"
        n_pairs += int(ref.pair_count.numpy().sum())
        n_contacts += int(ref.contact_count.numpy().sum())
    assert len(new._launches) == 2 * len(PARTS) and not ref._launches
    assert n_pairs > 9 * N_ENVS * 10 and n_contacts > 9 * N_ENVS * 10
    ref.check()
    new.check()


def test_recorded_calls_are_bounded(monkeypatch):
    """A caller passing new arrays at each call: the pipeline keeps at most MAX_RECORDED_CALLS records."""
    monkeypatch.setattr(C, "MAX_RECORDED_CALLS", 3)
    scene = _scene(np.random.default_rng(3))
    pipe = _pipe(monkeypatch, 10**9, scene, "64", fused=True, cached=True)
    rng = np.random.default_rng(1)
    for k in range(7):
        pos, quat, V, Q = _links(rng, "64", k)
        pipe.collide(PARTS[0], wp.array(pos, dtype=V), wp.array(quat, dtype=Q))
        assert 1 <= len(pipe._launches) <= 3
