"""Box–box's edge-axis skip (kernels/collision_boxbox.cpp, ``EDGE_SKIP``; docs/collision.md, "Box–box in
MuJoCo-compatible mode"): an edge-cross axis whose unnormalised separation (plus a round-off bound) is below
0 and the best face separation — directly, or divided by the axis' length (tested squared) — is passed over
without its square root and division. The collider with the
skip (the shipped body) and the same body compiled with ``EDGE_SKIP = false`` and ``CLIP_SWAP = false`` (the
clipped polygon copied back after each clip instead of the buffers' pointers swapped) run on the same pairs: every output
(the pair's block, the candidate points, normals, distances, the counters; NaN / −7 filled first) is equal byte
for byte. Poses: resting stacks (yawed, slightly tilted, sunk or inside the margin band), exactly aligned and
near-parallel boxes (the edge axes that nearly coincide with a face axis), free rotations at various reaches
(edge–edge points, face manifolds, apart), a flat and an elongated box, a tiny pair 1 km out; float64 and float32.
Variants that skip every edge axis, or whose squared test is off by 2x, differ on these poses (the test can
see a wrong skip).
"""

from typing import Any

import numpy as np
import pytest
import warp as wp
from collision_helpers import axis_quat, random_quat
from polyphys.plugins.rigid.kernels import collision_boxbox as BB
from polyphys.plugins.rigid.kernels import native

_BODY = native.body(BB.__file__, "box_box_mujoco_native")
_ON = "constexpr bool EDGE_SKIP = true;"
assert _ON in _BODY
_SKIP = "if (su < zero && su < sep_face) continue;"
_SQ = "wp::add(one, wp::mul(T(64.0), ulp))"
assert _SKIP in _BODY and _SQ in _BODY


# the Python signature of box_box_mujoco_native (wp.func_native takes it from a function)
def _box_box_signature(env: int, k: int, pos1: Any, rot1: Any, size1: Any, pos2: Any, rot2: Any, size2: Any,
                       margin: Any,
                       pair_cand_out: wp.array2d(dtype=wp.vec2i), cand_pos_out: wp.array(dtype=Any),
                       cand_normal_out: wp.array(dtype=Any), cand_dist_out: wp.array(dtype=Any),
                       cand_count_out: wp.array(dtype=wp.int32), cand_pool_out: wp.array(dtype=wp.int32)):
    ...


_SWAP = "constexpr bool CLIP_SWAP = true;"
assert _SWAP in _BODY
# the body as before round 17b: no edge skip, the clipped polygon copied back after each clip
_off = wp.func_native(_BODY.replace(_ON, "constexpr bool EDGE_SKIP = false;")
                      .replace(_SWAP, "constexpr bool CLIP_SWAP = false;"))(_box_box_signature)
_all = wp.func_native(_BODY.replace(_SKIP, "continue;"))(_box_box_signature)
_loose = wp.func_native(_BODY.replace(_SQ, "T(0.25)"))(_box_box_signature)


@wp.kernel
def _collide(variant: int, pos: wp.array2d(dtype=Any), rot: wp.array2d(dtype=Any), size: wp.array2d(dtype=Any),
             margin: wp.array(dtype=Any), pair_cand_out: wp.array2d(dtype=wp.vec2i), cand_pos_out: wp.array(dtype=Any),
             cand_normal_out: wp.array(dtype=Any), cand_dist_out: wp.array(dtype=Any),
             cand_count_out: wp.array(dtype=wp.int32), cand_pool_out: wp.array(dtype=wp.int32)):
    e = wp.tid()
    if variant == 0:
        BB.box_box_mujoco_native(e, 0, pos[e, 0], rot[e, 0], size[e, 0], pos[e, 1], rot[e, 1], size[e, 1], margin[e],
                                 pair_cand_out, cand_pos_out, cand_normal_out, cand_dist_out, cand_count_out,
                                 cand_pool_out)
    elif variant == 1:
        _off(e, 0, pos[e, 0], rot[e, 0], size[e, 0], pos[e, 1], rot[e, 1], size[e, 1], margin[e], pair_cand_out,
             cand_pos_out, cand_normal_out, cand_dist_out, cand_count_out, cand_pool_out)
    elif variant == 2:
        _all(e, 0, pos[e, 0], rot[e, 0], size[e, 0], pos[e, 1], rot[e, 1], size[e, 1], margin[e], pair_cand_out,
             cand_pos_out, cand_normal_out, cand_dist_out, cand_count_out, cand_pool_out)
    else:
        _loose(e, 0, pos[e, 0], rot[e, 0], size[e, 0], pos[e, 1], rot[e, 1], size[e, 1], margin[e], pair_cand_out,
               cand_pos_out, cand_normal_out, cand_dist_out, cand_count_out, cand_pool_out)


for _s in (wp.float32, wp.float64):
    _V, _M = wp.types.vector(3, _s), wp.types.matrix((3, 3), _s)
    wp.overload(_collide, {"pos": wp.array2d(dtype=_V), "rot": wp.array2d(dtype=_M), "size": wp.array2d(dtype=_V),
                           "margin": wp.array(dtype=_s), "cand_pos_out": wp.array(dtype=_V),
                           "cand_normal_out": wp.array(dtype=_V), "cand_dist_out": wp.array(dtype=_s)})


def _rot(q):
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _poses(rng):
    """[(pos1, rot1, size1, pos2, rot2, size2, margin)]"""
    sizes = [((0.1, 0.1, 0.1), (0.1, 0.1, 0.1)), ((0.31, 0.17, 0.23), (0.26, 0.41, 0.12)),
             ((0.5, 0.5, 0.01), (0.2, 0.03, 0.6)), ((2e-6, 3e-6, 1.5e-6), (2.5e-6, 1e-6, 2e-6))]
    out = []
    for si, (s1, s2) in enumerate(sizes):
        s1, s2 = np.array(s1), np.array(s2)
        base = np.array([1000.0, -1000.0, 1000.0]) if si == 3 else np.array([0.7, -1.3, 2.1])
        for _ in range(60):
            kind = rng.integers(6)
            yaw1, yaw2 = rng.uniform(-np.pi, np.pi, 2)
            r1 = _rot(axis_quat((0, 0, 1), yaw1))
            if kind == 0:       # resting stack: box 2 on box 1, yawed, sunk or within / beyond the margin band
                r2 = _rot(axis_quat((0, 0, 1), yaw2))
                gap = rng.choice([-0.02, -1e-3, -1e-6, 0.0, 1e-6, 5e-3, 0.03]) * s1.max()
                p2 = base + np.array([*rng.uniform(-0.8, 0.8, 2) * s1[:2], s1[2] + s2[2] + gap])
            elif kind == 1:     # exactly aligned (edge axes degenerate)
                r2 = r1.copy()
                p2 = base + r1 @ np.array([*rng.uniform(-0.5, 0.5, 2) * s1[:2], s1[2] + s2[2] - 1e-3 * s1.max()])
            elif kind == 2:     # near-parallel: tilted by 1e-9 .. 1e-2 rad about a random axis
                r2 = r1 @ _rot(axis_quat(rng.normal(size=3), 10.0 ** rng.uniform(-9, -2)))
                p2 = base + r1 @ np.array([*rng.uniform(-0.9, 0.9, 2) * s1[:2],
                                           s1[2] + s2[2] + rng.uniform(-0.02, 0.01) * s1.max()])
            elif kind == 3:     # side by side, yawed (face axes in the plane, edge axes vertical)
                r2 = _rot(axis_quat((0, 0, 1), yaw2))
                p2 = base + r1 @ np.array([s1[0] + s2.min() + rng.uniform(-0.05, 0.02) * s1.max(),
                                           rng.uniform(-0.5, 0.5) * s1[1], rng.uniform(-0.3, 0.3) * s1[2]])
            else:               # free rotations at 0.3 .. 1.05 of the reach
                r1 = _rot(random_quat(rng))
                r2 = _rot(random_quat(rng))
                d = rng.normal(size=3)
                p2 = base + d / np.linalg.norm(d) * (np.linalg.norm(s1) + np.linalg.norm(s2)) * rng.uniform(0.3, 1.05)
            out.append((base, r1, s1, p2, r2, s2, rng.choice([0.0, 0.01 * s1.max()])))
    return out


def _run_all(variant, poses, precision):
    f = np.float64 if precision == "64" else np.float32
    s = wp.float64 if precision == "64" else wp.float32
    V, M = wp.types.vector(3, s), wp.types.matrix((3, 3), s)
    n = len(poses)
    pos = wp.array(np.array([[p[0], p[3]] for p in poses], dtype=f), dtype=V)
    rot = wp.array(np.array([[p[1], p[4]] for p in poses], dtype=f), dtype=M)
    size = wp.array(np.array([[p[2], p[5]] for p in poses], dtype=f), dtype=V)
    margin = wp.array(np.array([p[6] for p in poses], dtype=f), dtype=s)
    cap = 12 * n
    pair_cand = wp.array(np.full((n, 2, 2), -7, dtype=np.int32), dtype=wp.vec2i)
    cpos = wp.array(np.full((cap, 3), np.nan, dtype=f), dtype=V)
    cnrm = wp.array(np.full((cap, 3), np.nan, dtype=f), dtype=V)
    cdist = wp.array(np.full(cap, np.nan, dtype=f), dtype=s)
    count = wp.zeros(n, dtype=wp.int32)
    pool = wp.zeros(1, dtype=wp.int32)
    wp.launch(_collide, dim=n, inputs=[variant, pos, rot, size, margin],
              outputs=[pair_cand, cpos, cnrm, cdist, count, pool], device="cpu")
    return [a.numpy() for a in (pair_cand, cpos, cnrm, cdist, count, pool)]


@pytest.mark.parametrize("precision", ["64", "32"])
def test_edge_skip_keeps_box_box_byte_for_byte(precision):
    poses = _poses(np.random.default_rng(31))
    on, off, every, loose = (_run_all(v, poses, precision) for v in (0, 1, 2, 3))
    for a, b in zip(on, off):
        assert a.tobytes() == b.tobytes()
    pc, cnt = on[0][:, 0], on[0][:, 0, 1]
    assert (cnt == 1).sum() >= 10 and (cnt >= 4).sum() >= 40 and (cnt == 0).sum() >= 20   # points, manifolds, apart
    assert (pc[:, 0] >= 0).all()
    assert any(a.tobytes() != b.tobytes() for a, b in zip(on, every))      # an always-skip would be seen
    assert any(a.tobytes() != b.tobytes() for a, b in zip(on, loose))      # ...and a squared test off by 2x
