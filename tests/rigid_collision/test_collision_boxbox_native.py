"""The MuJoCo-compatible box–box stage alone (kernels/collision_box.narrowphase_box_mujoco, whose collider is the
native body kernels/collision_boxbox.cpp: docs/collision.md, "Box–box in MuJoCo-compatible mode"): the candidate
pool is NaN-filled and the pair blocks set to −7, then only this kernel runs. Each env's block holds exactly
MuJoCo's contacts for that pose (mj_collision on the same two boxes: count, point, normal geom 1 → geom 2,
distance), the blocks tile the pool from its start in env order, and nothing else is written.

Poses are generic (unequal non-unit half-sizes, off the origin, rotated): face–face manifolds, a tilted face,
free rotations (edge–edge single points), a pair inside the margin band only, and pairs apart (an empty block).
Tolerances: float64 both sides closed form, the clipping divides by differences of vertex distances, so points
agree to ~1e-12 × size (1e-9 m, as test_collision_boxbox_mujoco.py); float32: its rounding (1.2e-7) of
coordinates up to 3 m, amplified by the clipping's divisions, 2e-5 m.
"""

import numpy as np
import pytest
import warp as wp
from collision_helpers import axis_quat, mujoco_contacts, mujoco_model, random_quat, run_pairs
from polyphys.plugins.rigid import RigidOptions

mujoco = pytest.importorskip("mujoco")

S1 = (0.31, 0.17, 0.23)
S2 = (0.26, 0.41, 0.12)
MARGIN = 0.02


def _poses(rng):
    """(pos1, quat1, pos2, quat2) per env: contact families and apart pairs."""
    out = []
    q1 = random_quat(rng)
    R1 = _rot(q1)
    p1 = np.array([0.7, -1.3, 2.1])
    # face–face: box 2 on box 1's +z face, same orientation, shifted in the face plane
    out.append((p1, q1, p1 + R1 @ np.array([0.05, -0.08, S1[2] + S2[2] - 0.004]), q1))
    # face–face inside the margin band only (0.01 apart)
    out.append((p1, q1, p1 + R1 @ np.array([-0.11, 0.06, S1[2] + S2[2] + 0.01]), q1))
    # tilted about a face axis (the incident face crosses the reference face)
    qt = _mul(q1, axis_quat((0.3, 1.0, 0.2), 0.21))
    out.append((p1, q1, p1 + R1 @ np.array([0.02, 0.03, S1[2] + S2[2] - 0.01]), qt))
    # free rotations, centres 0.3-0.9 of the reach apart (edge–edge singles and tilted faces)
    reach = np.linalg.norm(S1) + np.linalg.norm(S2)
    for f in (0.45, 0.6, 0.75, 0.85):
        d = rng.normal(size=3)
        out.append((p1, random_quat(rng), p1 + d / np.linalg.norm(d) * reach * f, random_quat(rng)))
    # apart: beyond the bounding spheres, and apart along a face axis while the AABBs still overlap
    out.append((p1, q1, p1 + np.array([reach + 0.1, 0.0, 0.0]), random_quat(rng)))
    out.append((p1, q1, p1 + R1 @ np.array([0.0, 0.0, S1[2] + S2[2] + 0.05]), q1))
    return out


def _rot(q):
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _mul(a, b):
    w0, v0, w1, v1 = a[0], a[1:], b[0], b[1:]
    return np.concatenate([[w0 * w1 - v0 @ v1], w0 * v1 + w1 * v0 + np.cross(v0, v1)])


def _rerun_alone(pipe):
    """Fill the candidate pool with NaN and the pair blocks with −7, reset the counters, run only the box family."""
    from polyphys.plugins.rigid.kernels import collision_box as CB

    v, m, n = pipe._parts[0], pipe.model, pipe.n_envs
    for a in (v.cand_pos, v.cand_normal, v.cand_dist):
        a.fill_(float("nan"))
    v.pair_cand.fill_(-7)
    v.cand_count.zero_()
    v.cand_pool.zero_()
    dim, st = pipe._slots(n, pipe.max_pairs)
    wp.launch(CB.narrowphase_box_mujoco, dim=dim,
              inputs=[m.geom_type, m.geom_size, m.geom_margin, m.pair_margin, pipe._msum, m.mesh_vert, st, v.geom_xpos,
                      v.geom_xmat, v.pairs_buf, v.pair_count],
              outputs=[v.pair_cand, v.cand_pos, v.cand_normal, v.cand_dist, v.cand_count, v.cand_pool], device="cpu")
    return v


@pytest.mark.parametrize("precision,tol", [("64", 1e-9), ("32", 2e-5)])
def test_box_box_stage_alone_writes_mujocos_points_into_its_blocks(precision, tol):
    rng = np.random.default_rng(23)
    poses = _poses(rng)
    pipe, _ = run_pairs("box", S1, "box", S2, poses, precision, MARGIN, options=RigidOptions.mujoco())
    v = _rerun_alone(pipe)
    m, d = mujoco_model("box", S1, "box", S2, MARGIN)
    pc = v.pair_cand.numpy()
    npairs = v.pair_count.numpy()
    pos, nrm, dist = v.cand_pos.numpy(), v.cand_normal.numpy(), v.cand_dist.numpy()
    counts = v.cand_count.numpy()
    nxt, kinds, empty = 0, set(), 0
    for e, pose in enumerate(poses):
        theirs = mujoco_contacts(m, d, pose)
        if npairs[e] == 0:                          # AABBs apart: the broadphase stored no pair
            assert not theirs and (pc[e] == -7).all()
            continue
        assert npairs[e] == 1
        start, cnt = pc[e, 0]
        assert cnt == len(theirs), (e, cnt, len(theirs))
        assert counts[e] == cnt
        if cnt:
            assert start == nxt                     # blocks tile the pool in env order
            nxt += cnt
            kinds.add(min(cnt, 2))
            used = set()
            for dd, n_, p_, _, _ in theirs:
                err = [max(np.abs(pos[start + j] - p_).max(), np.abs(nrm[start + j] - n_).max(), abs(dist[start + j] - dd))
                       if j not in used else np.inf for j in range(cnt)]
                j = int(np.argmin(err))
                assert err[j] <= tol, (e, err[j])
                used.add(j)
        else:
            assert start == 0
            empty += 1
        assert (pc[e, 1:] == -7).all()              # no other pair slot written
    assert kinds == {1, 2}                          # single points (edge–edge) and manifolds were both compared
    assert empty >= 1                               # ...and a pair the kernel found apart (AABBs overlapping)
    assert v.cand_pool.numpy()[0] == nxt
    assert np.isnan(pos[nxt:]).all() and np.isnan(nrm[nxt:]).all() and np.isnan(dist[nxt:]).all()


def test_box_box_stage_over_the_candidate_budget_counts_and_stores_nothing():
    """An env whose pair needs more points than its candidate budget: the count says how many were needed, no
    block is taken, nothing is written (check() then raises: test_collision_candidate_pool.py)."""
    q = axis_quat((0.2, -0.4, 1.0), 0.7)
    p1 = np.array([0.3, 0.2, 0.9])
    pose = (p1, q, p1 + _rot(q) @ np.array([0.01, 0.02, S1[2] + S2[2] - 0.003]), q)
    m, d = mujoco_model("box", S1, "box", S2, 0.0)
    need = len(mujoco_contacts(m, d, pose))
    assert need >= 4
    with pytest.raises(Exception, match="max_candidate_contacts"):
        run_pairs("box", S1, "box", S2, [pose], "64", 0.0,
                  options=RigidOptions.mujoco(max_candidate_contacts=need - 1, max_contacts=8))
    from polyphys.layout import Partition

    pipe, _ = run_pairs("box", S1, "box", S2, [pose], "64", 0.0,
                        options=RigidOptions.mujoco(max_candidate_contacts=need - 1, max_contacts=8,
                                                    collision_overflow="warn"))
    pipe.run(Partition(0, 0, 1))
    v = _rerun_alone(pipe)
    assert v.cand_count.numpy()[0] == need
    assert tuple(v.pair_cand.numpy()[0, 0]) == (0, 0)
    assert v.cand_pool.numpy()[0] == 0
    assert np.isnan(v.cand_pos.numpy()).all()
