"""The candidate pool (docs/collision.md, "The candidate pool"): the narrowphase families write each pair's
points as a block of one array per partition, filled in launch order, instead of one budget-sized row per env.
Stage test: the pool NaN-filled first, a scene with every analytic family and a GJK pair, 5 envs in two
partitions (one env over its candidate budget), against the same envs run one per pipeline (a pool of one env)."""

import numpy as np
import pytest
import warp as wp
from collision_helpers import geom, random_quat
from polyphys.errors import PolyphysWarning
from polyphys.layout import Partition
from polyphys.plugins.rigid import RigidOptions
from polyphys.plugins.rigid.collision import CollisionPipeline, set_poses_host

PARTS = (Partition(0, 0, 3), Partition(1, 3, 5))
N_ENVS = 5


def _scene():
    # plane, 3 boxes, 2 spheres, 2 capsules, a cylinder (cylinder-box / cylinder-capsule: GJK + EPA)
    kinds = [("box", (0.31, 0.22, 0.17)), ("box", (0.27, 0.19, 0.23)), ("box", (0.2, 0.3, 0.25)),
             ("sphere", (0.21,)), ("sphere", (0.17,)), ("capsule", (0.12, 0.24)), ("capsule", (0.15, 0.2)),
             ("cylinder", (0.18, 0.22))]
    g = [geom("plane", (0, 0, 1), -1, margin=0.01)]
    g += [geom(t, s, i, margin=0.01) for i, (t, s) in enumerate(kinds)]
    n = len(kinds)
    return g, [0] * (n + 1), [-1] * n, [True] * n


def _poses(rng):
    G = 9
    pos = np.zeros((N_ENVS, G, 3))
    quat = np.zeros((N_ENVS, G, 4))
    quat[:, 0] = random_quat(rng) * [1, 0.05, 0.05, 1]        # a slightly tilted floor
    quat[:, 0] /= np.linalg.norm(quat[:, 0], axis=-1, keepdims=True)
    pos[:, 0] = [0.2, -0.3, 0.05]
    for e in range(N_ENVS):
        spread = 0.45 if e != 3 else 0.28                    # env 3 packed: over its candidate budget
        pos[e, 1:] = rng.uniform(-spread, spread, size=(G - 1, 3)) + [0.2, -0.3, 0.3]
        for i in range(1, G):
            quat[e, i] = random_quat(rng)
    return pos, quat


def _pipe(g, ent, parent, moves, n_envs, parts, budget):
    opts = RigidOptions(max_candidate_contacts=budget, max_contacts=400, collision_overflow="warn",
                        max_contacts_per_pair=8)
    pipe = CollisionPipeline(g, ent, parent, moves, opts)
    pipe.build(n_envs, "cpu", "64", partitions=parts)
    for a in (pipe.cand_pos, pipe.cand_normal):
        a.fill_(a.dtype(np.nan, np.nan, np.nan))
    pipe.cand_dist.fill_(np.nan)
    return pipe


def _contacts(pipe, env):
    c = pipe.contacts([env])[0]
    return [c[k].tobytes() for k in ("geom_a", "geom_b", "pos", "frame", "depth", "pair")]


def test_candidate_pool_equals_one_env_per_pipeline():
    """Every env's contacts and candidate points equal, byte for byte, the same env run alone (a pool of one
    env); each partition's blocks tile its slice of the pool from its start without overlap and
    nothing else is written (NaN-filled); the env over its candidate budget warns with its needed count, its
    blocks stay within the budget and the others are unaffected; a second run (the pool restarted) repeats
    the blocks and contacts."""
    rng = np.random.default_rng(11)
    scene = _scene()
    pos, quat = _poses(rng)
    # the budget: below env 3's needed count, above every other env's (found with a generous budget first)
    probe = _pipe(*scene, N_ENVS, PARTS, 2000)
    set_poses_host(probe, pos, quat)
    for p in PARTS:
        probe.run(p)
    need = probe.cand_count.numpy()
    others = np.delete(need, 3)
    assert need[3] > others.max() + 2 and others.min() > 0, need
    budget = int(others.max()) + 1

    pipe = _pipe(*scene, N_ENVS, PARTS, budget)
    set_poses_host(pipe, pos, quat)
    for rerun in range(2):
        for p in PARTS:
            pipe.run(p)
        with pytest.warns(PolyphysWarning, match=rf"max_candidate_contacts exceeded in env 3: {need[3]} needed"):
            pipe.check()
        np.testing.assert_array_equal(pipe.cand_count.numpy(), need)
        blocks = pipe.pair_cand.numpy()
        npairs = np.minimum(pipe.pair_count.numpy(), pipe.max_pairs)
        cdist = pipe.cand_dist.numpy()
        written = np.zeros(cdist.shape[0], dtype=bool)
        for p in PARTS:
            base, spans = p.start * budget, []
            for e in range(p.start, p.stop):
                stored = 0
                for k in range(npairs[e]):
                    start, cnt = blocks[e, k]
                    if cnt:
                        spans.append((start, cnt))
                        stored += cnt
                        written[base + start:base + start + cnt] = True
                assert stored <= budget
                if e != 3:
                    assert stored == need[e]
            # the blocks tile the slice from its start (each family's launch appends its envs' blocks)
            cursor = 0
            for start, cnt in sorted(spans):
                assert start == cursor
                cursor += cnt
            assert cursor <= (p.stop - p.start) * budget
        assert np.isfinite(cdist[written]).all() and np.isnan(cdist[~written]).all()
        assert np.isnan(pipe.cand_pos.numpy()[~written]).all()
        for e in range(N_ENVS):
            if e == 3:
                continue
            alone = _pipe(*scene, 1, None, budget)
            set_poses_host(alone, pos[e:e + 1], quat[e:e + 1])
            alone.run(Partition(0, 0, 1))
            alone.check()
            assert _contacts(pipe, e) == _contacts(alone, 0), e
            a, b = pipe.candidates(e), alone.candidates(0)
            assert len(a) == len(b) and len(a) > 0
            for x, y in zip(a, b):
                assert x[:2] == y[:2]
                for u, v in zip(x[2:], y[2:]):
                    assert (u is None and v is None) or np.asarray(u).tobytes() == np.asarray(v).tobytes()
        if rerun == 0:
            first = [_contacts(pipe, e) for e in range(N_ENVS)], blocks.copy()
        else:
            assert [_contacts(pipe, e) for e in range(N_ENVS)] == first[0]
            np.testing.assert_array_equal(blocks, first[1])
    assert written.sum() > 40


def test_pool_on_the_launch_grid_of_a_captured_graph():
    """The pool restarts in every replay of a captured CPU graph (the pose kernel resets it): two replays give
    the blocks of a direct run."""
    rng = np.random.default_rng(4)
    scene = _scene()
    pos, quat = _poses(rng)
    pipe = _pipe(*scene, N_ENVS, PARTS, 2000)
    set_poses_host(pipe, pos, quat)
    for p in PARTS:
        pipe.run(p)
    def stored_blocks():
        npairs, pc = np.minimum(pipe.pair_count.numpy(), pipe.max_pairs), pipe.pair_cand.numpy()
        return [pc[e, :npairs[e]].tobytes() for e in range(N_ENVS)]

    want = stored_blocks(), [_contacts(pipe, e) for e in range(N_ENVS)]
    pipe.pair_cand.fill_(wp.vec2i(-5, -5))
    with wp.ScopedCapture(device="cpu", force_module_load=False) as cap:
        for p in PARTS:
            pipe.run(p)
    for _ in range(2):
        wp.capture_launch(cap.graph)
        assert stored_blocks() == want[0]
        assert [_contacts(pipe, e) for e in range(N_ENVS)] == want[1]
