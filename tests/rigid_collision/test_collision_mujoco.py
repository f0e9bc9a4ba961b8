"""Randomized poses (hypothesis) against MuJoCo's collision (mj_collision) on the same two geoms,
float64. Both sides are closed-form, so they agree to rounding: depth 1e-9 and normal 1e-7
(absolute; the normal loses digits as 1/|centre distance| for nearly concentric shapes, such
poses are skipped). Polyphys's normal points from B to A, MuJoCo's from geom1 to geom2: with
A = geom1 the normals are opposite. MuJoCo sums the two geoms' margins (margin_combine="sum").
"""

import numpy as np
import pytest
from collision_helpers import box_sat, capsule_box_sat, mujoco_contacts, mujoco_model, random_quat, run_pairs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polyphys.description import quat_to_mat
from polyphys.plugins.rigid import RigidOptions

mujoco = pytest.importorskip("mujoco")

PAIRS = [
    ("plane", "sphere"), ("plane", "capsule"), ("plane", "box"), ("plane", "cylinder"),
    ("plane", "ellipsoid"), ("sphere", "sphere"), ("sphere", "capsule"), ("sphere", "cylinder"),
    ("sphere", "box"), ("capsule", "capsule"), ("capsule", "box"),
]
N_POSES = 12
SETTINGS = settings(max_examples=12, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


def _size(t, rng):
    s = rng.uniform(0.05, 0.4, size=3)
    return {"plane": (0.0, 0.0, 1.0), "sphere": (s[0],), "capsule": (s[0], s[1]),
            "cylinder": (s[0], s[1]), "box": tuple(s), "ellipsoid": tuple(s)}[t]


def _extent(t, s):
    return float(np.linalg.norm(s[:3])) if t != "plane" else 0.0


def _poses(t1, s1, t2, s2, rng, plane_pose):
    poses = []
    reach = _extent(t1, s1) + _extent(t2, s2)
    for _ in range(N_POSES):
        if t1 == "plane":
            p1, q1 = plane_pose
            n = quat_to_mat(q1)[:, 2]
            p2 = np.asarray(p1) + rng.normal(size=3) * 0.3 + n * rng.uniform(-0.3, 1.0) * _extent(t2, s2)
        else:
            p1, q1 = rng.normal(size=3) * 0.2, random_quat(rng)
            d = rng.normal(size=3)
            p2 = p1 + d / np.linalg.norm(d) * reach * rng.uniform(0.1, 0.9)
        poses.append((np.asarray(p1, float), np.asarray(q1, float), p2, random_quat(rng)))
    return poses


@pytest.mark.parametrize("t1,t2", PAIRS)
@SETTINGS
@given(seed=st.integers(0, 2**31 - 1), use_margin=st.booleans())
def test_random_poses_match_mujoco(t1, t2, seed, use_margin):
    rng = np.random.default_rng(seed)
    s1, s2 = _size(t1, rng), _size(t2, rng)
    margin = 0.02 if use_margin and t2 != "box" else 0.0
    plane_pose = (rng.normal(size=3) * 0.2, random_quat(rng))
    poses = _poses(t1, s1, t2, s2, rng, plane_pose)
    m, d = mujoco_model(t1, s1, t2, s2, margin, plane_pose)
    _, ours = run_pairs(t1, s1, t2, s2, poses, "64", margin)
    compared = 0
    for pose, c in zip(poses, ours):
        mc = mujoco_contacts(m, d, pose)
        mj_d = min((x[0] for x in mc), default=np.inf)
        our_d = -c["depth"].max() if len(c["depth"]) else np.inf
        if min(abs(mj_d - 2 * margin), abs(our_d - 2 * margin)) < 1e-9:
            continue                           # on the margin boundary: either answer is right
        assert np.isfinite(mj_d) == np.isfinite(our_d), (pose, mc, c)
        if not np.isfinite(mj_d):
            continue
        if np.linalg.norm(pose[0] - pose[2]) < 1e-6:
            continue
        k_mj = int(np.argmin([x[0] for x in mc]))
        k = int(np.argmax(c["depth"]))
        if t1 == "box" and t2 == "box":
            R1, R2 = quat_to_mat(pose[1]), quat_to_mat(pose[3])
            sep, axis, face, edge = box_sat(pose[0], R1, np.array(s1), pose[2], R2, np.array(s2))
            assert abs(our_d - sep) <= 1e-9                      # the exact SAT depth
            np.testing.assert_allclose(-c["normal"][k], axis, atol=1e-7)
            # MuJoCo prefers face axes unless an edge axis is better by 5% (ODE's fudge factor):
            # compare only where the face axis wins clearly
            if not face > edge + 0.1 * abs(edge):
                continue
        if t1 == "capsule" and t2 == "box" and our_d <= -s1[0]:
            # the axis segment meets the box: polyphys gives the exact minimum translation
            # (numpy reference); MuJoCo's capsule-box is not exact this deep (it reports shallower
            # penetrations than the minimum, checked against a brute-force search over
            # directions), so it is not the reference here
            ref, axis = capsule_box_sat(pose[0], quat_to_mat(pose[1]), s1, pose[2],
                                        quat_to_mat(pose[3]), s2)
            assert abs(our_d - ref) <= 1e-9
            np.testing.assert_allclose(-c["normal"][k], axis, atol=1e-7)
            continue
        assert abs(our_d - mj_d) <= 1e-9, (pose, our_d, mj_d)
        np.testing.assert_allclose(-c["normal"][k], mc[k_mj][1], atol=1e-7)
        if (t1, t2) in (("plane", "box"), ("plane", "capsule"), ("sphere", "sphere"), ("capsule", "box"),
                        ("plane", "sphere"), ("sphere", "box"), ("sphere", "capsule")) \
                and len(mc) == len(c["depth"]) <= 4:
            # the same points: match each MuJoCo point to ours
            for x in mc:
                j = int(np.argmin(np.linalg.norm(c["pos"] - x[2], axis=1)))
                np.testing.assert_allclose(c["pos"][j], x[2], atol=1e-9)
                assert abs(-c["depth"][j] - x[0]) <= 1e-9
        compared += 1
    if (t1, t2) not in (("box", "box"), ("capsule", "box")):
        assert compared >= 1          # every example compares at least one contact with MuJoCo


@SETTINGS
@given(seed=st.integers(0, 2**31 - 1))
def test_random_box_pairs(seed):
    """Box-box: the default mode's routine gives the exact separating-axis depth and axis (numpy
    reference); the MuJoCo-compatible mode gives MuJoCo's whole contact set (count, positions,
    normals, distances; test_collision_boxbox_mujoco.py covers the configurations in detail)."""
    rng = np.random.default_rng(seed)
    s1, s2 = _size("box", rng), _size("box", rng)
    poses = _poses("box", s1, "box", s2, rng, None)
    m, d = mujoco_model("box", s1, "box", s2, 0.0)
    _, ours = run_pairs("box", s1, "box", s2, poses, "64", 0.0)
    _, dflt = run_pairs("box", s1, "box", s2, poses, "64", 0.0, options=RigidOptions(max_contacts_per_pair=8))
    compared = 0
    for pose, c, cd in zip(poses, ours, dflt):
        mc = mujoco_contacts(m, d, pose)
        assert len(c["depth"]) == len(mc)
        R1, R2 = quat_to_mat(pose[1]), quat_to_mat(pose[3])
        sep, axis, _, _ = box_sat(pose[0], R1, np.array(s1), pose[2], R2, np.array(s2))
        assert bool(len(cd["depth"])) == (sep < 0.0)
        if not mc:
            continue
        kd = int(np.argmax(cd["depth"]))
        assert abs(-cd["depth"][kd] - sep) <= 1e-9
        np.testing.assert_allclose(-cd["normal"][kd], axis, atol=1e-7)
        used = set()
        for x in mc:
            err = [np.inf if j in used else max(np.abs(c["pos"][j] - x[2]).max(), np.abs(-c["normal"][j] - x[1]).max(),
                                                 abs(-c["depth"][j] - x[0])) for j in range(len(mc))]
            j = int(np.argmin(err))
            assert err[j] <= 1e-9, (pose, mc, c)
            used.add(j)
        compared += 1
    assert compared >= 1
