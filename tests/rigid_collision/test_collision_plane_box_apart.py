"""Pruning without the duplicate search for a plane–box pair whose corners are provably apart
(collision_driver._prune_at, ``CollisionPipeline.corners_apart``): the same contacts as with the search, byte for
byte, for boxes where it is skipped and for boxes where it must run (a flat box whose corners coincide, a tiny box
far from the origin in float32, more corners within the margin than max_contacts_per_pair)."""

import numpy as np
import pytest
import warp as wp
from collision_helpers import geom
from polyphys.layout import Partition
from polyphys.plugins.rigid import RigidOptions
from polyphys.plugins.rigid.collision import CollisionPipeline

OUTS = ("pair_count", "pairs_buf", "pair_cand", "cand_count", "cand_pos", "cand_normal", "cand_dist", "contact_raw",
        "contact_count", "contact_geom", "contact_pos", "contact_frame", "contact_depth", "contact_includemargin",
        "contact_pair")
# box half sizes: generic, cubes, a flat box (two corners per point: duplicates), a tiny box (placed far away)
SIZES = [(0.1, 0.2, 0.3), (0.05, 0.05, 0.05), (0.2, 0.1, 0.0), (3e-6, 4e-6, 2e-6), (0.4, 0.02, 0.1)]
PARTS = (Partition(0, 0, 3), Partition(1, 3, 6))
N_ENVS = 6


def _pipe(precision, apart, per_pair, mujoco):
    g = [geom("plane", (0, 0, 1), -1)] + [geom("box", s, i, margin=0.01) for i, s in enumerate(SIZES)]
    n = len(SIZES)
    opts = RigidOptions(mujoco_compatible=mujoco, max_contacts_per_pair=per_pair, broadphase="all_vs_all")
    pipe = CollisionPipeline(g, [0] * (n + 1), [-1] * n, [True] * n, opts)
    pipe.build(N_ENVS, "cpu", precision, partitions=PARTS)
    pipe.corners_apart = apart
    return pipe


def _links(rng, precision, k):
    """Boxes resting on the plane (a face, an edge or a corner down, by a small random rotation or a large one),
    sunk into it (up to 8 corners within the margin) or above it; the tiny box 1e3 m away in some envs."""
    npf = np.float64 if precision == "64" else np.float32
    n = len(SIZES)
    pos = np.zeros((N_ENVS, n, 3))
    quat = np.zeros((N_ENVS, n, 4))
    quat[..., 3] = 1.0                                    # warp order x, y, z, w
    for e in range(N_ENVS):
        for b, s in enumerate(SIZES):
            pos[e, b, :2] = 1.5 * b + rng.uniform(-0.1, 0.1, size=2)
            kind = (e + b + k) % 4
            q = np.array([0.0, 0.0, 0.0, 1.0])
            if kind == 1:
                q[:3] = rng.normal(scale=1e-3, size=3)
            elif kind == 2:
                q[:3] = rng.normal(size=3)
            q /= np.linalg.norm(q)
            quat[e, b] = q
            pos[e, b, 2] = [s[2] - 0.004, s[2] + 0.002, 0.3 * max(s), -0.5 * max(s)][kind]
            if b == 3 and e % 2 == 0:
                pos[e, b, :2] += 1.0e3
    return pos.astype(npf), quat.astype(npf)


def _fill(pipe, extra=()):
    for a in [getattr(pipe, name) for name in OUTS] + list(extra):
        if a.dtype in (wp.int32, wp.vec2i, wp.vec3i):
            a.fill_(-7)
        else:
            a.fill_(float("nan"))


def _state(pipe, extra=()):
    return [getattr(pipe, name).numpy().tobytes() for name in OUTS] + [a.numpy().tobytes() for a in extra]


@pytest.mark.parametrize("precision", ["64", "32"])
@pytest.mark.parametrize("per_pair, mujoco", [(4, True), (4, False), (8, False)])
def test_skipped_duplicate_search_changes_nothing(precision, per_pair, mujoco):
    """prune (run) and prune_export (collide with an export into separate arrays), the search skipped where the
    corners are apart against always run, on 8 sets of poses: every output NaN / -7 filled first and equal byte
    for byte; the flat box's duplicates are dropped in both."""
    ref = _pipe(precision, False, per_pair, mujoco)
    new = _pipe(precision, True, per_pair, mujoco)
    V, Q = wp.types.vector(3, ref.scalar), wp.types.quaternion(ref.scalar)
    K, n = ref.max_contacts, N_ENVS
    M = wp.types.matrix((3, 3), ref.scalar)
    ex = {id(p): (wp.zeros(n, dtype=wp.int32), wp.zeros((n, K), dtype=V), wp.zeros((n, K), dtype=M),
                  wp.zeros((n, K), dtype=ref.scalar), wp.zeros((n, K), dtype=ref.scalar),
                  wp.zeros((n, K, 2), dtype=wp.int32)) for p in (ref, new)}
    rng = np.random.default_rng(4)
    n_contacts = flat_dups = 0
    for k in range(8):
        pos, quat = _links(rng, precision, k)
        lp, lq = wp.array(pos, dtype=V), wp.array(quat, dtype=Q)
        # run(): geom poses written from the host, pruning by prune
        gq = quat[..., [3, 0, 1, 2]]
        for pipe in (ref, new):
            _fill(pipe)
            pipe.geom_xpos.assign(np.concatenate([np.zeros((n, 1, 3)), pos], axis=1).astype(pos.dtype))
            pipe.geom_xquat.assign(np.concatenate([np.tile([0, 0, 0, 1.0], (n, 1, 1)), gq[..., [1, 2, 3, 0]]],
                                                  axis=1).astype(pos.dtype))
            for p in PARTS:
                pipe.run(p)
        assert _state(ref) == _state(new), f"run, call {k}"
        # collide(): prune_export
        for pipe in (ref, new):
            _fill(pipe, ex[id(pipe)])
            for p in PARTS:
                pipe.collide(p, lp, lq, ex[id(pipe)])
        assert _state(ref, ex[id(ref)]) == _state(new, ex[id(new)]), f"collide, call {k}"
        n_contacts += int(ref.contact_count.numpy().sum())
        cand = ref.cand_count.numpy().sum()
        flat_dups += int(cand - ref.contact_raw.numpy().sum())
    assert n_contacts > 8 * N_ENVS * 8 and flat_dups > 0
    ref.check()
    new.check()
