"""Plane–sphere and plane–capsule written straight into the candidate block (collision_plane.
_plane_sphere_capsule_store): the candidates, NaN-filled first, against the closed form (docs/collision.md,
"Narrowphase": the centre's / each end sphere's distance to the plane, the point halfway between the sphere's
surface and the plane)."""

import numpy as np
import pytest
import warp as wp
from collision_helpers import geom, random_quat
from polyphys.layout import Partition
from polyphys.plugins.rigid import RigidOptions
from polyphys.plugins.rigid.collision import CollisionPipeline, set_poses_host


def _rot(q):
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


@pytest.mark.parametrize("precision", ["64", "32"])
@pytest.mark.parametrize("kind", ["sphere", "capsule"])
def test_plane_sphere_capsule_candidates(kind, precision):
    """A tilted, off-origin plane and a sphere / capsule (radius 0.13, half-length 0.21, margin 0.02) at
    generic poses: both ends in, one end in (the other at 0.05 above), in the margin only, apart, and a
    capsule lying flat (line contact). Every candidate the routine writes equals the closed form
    (1e-12 in float64: a few roundings of O(1) values; 1e-5 in float32), the pair's block holds exactly the
    points within the margin, +axis end first, and no other candidate slot is written."""
    rng = np.random.default_rng(7)
    r, hl, margin = 0.13, 0.21, 0.02
    qp = random_quat(rng)
    Rp = _rot(qp)
    n, p0 = Rp[:, 2], np.array([0.3, -0.7, 0.45])
    size = (r, hl) if kind == "capsule" else (r,)
    poses = []
    for target in (-0.03, 0.01, 0.05, 0.3, "flat", "one_in"):
        q = random_quat(rng)
        ax = _rot(q)[:, 2]
        if target == "flat":                      # axis in the plane
            t = np.cross(n, rng.normal(size=3))
            t /= np.linalg.norm(t)
            q = _quat_from_z(t)
            ax = _rot(q)[:, 2]
            target = -0.01
        inplane = np.cross(n, rng.normal(size=3))
        c = p0 + inplane
        if target == "one_in" and kind == "capsule":     # the lower end 0.03 deep, the upper one 2 h higher
            c = c + n * (r - 0.03 + hl * abs(ax @ n))
        elif target == "one_in":
            c = c + n * (r - 0.03)
        else:
            lift = hl * abs(ax @ n) if kind == "capsule" else 0.0
            c = c + n * (r + target + lift)
        poses.append((c, q))
    N = len(poses)
    g = [geom("plane", (0, 0, 1), -1, margin=margin), geom(kind, size, 0, margin=margin)]
    pipe = CollisionPipeline(g, [0, 1], [-1], [True], RigidOptions(max_contacts_per_pair=8))
    pipe.build(N, "cpu", precision)
    pos = np.zeros((N, 2, 3))
    quat = np.zeros((N, 2, 4))
    pos[:, 0] = p0
    quat[:, 0] = qp
    for e, (c, q) in enumerate(poses):
        pos[e, 1], quat[e, 1] = c, q
    set_poses_host(pipe, pos, quat)
    for a in (pipe.cand_pos, pipe.cand_normal):
        a.fill_(a.dtype(np.nan, np.nan, np.nan))
    pipe.cand_dist.fill_(np.nan)
    pipe.pair_cand.fill_(wp.vec2i(-5, -5))
    pipe.run(Partition(0, 0, N))
    tol = 1e-12 if precision == "64" else 1e-5
    cpos, cnrm, cdist = pipe.cand_pos.numpy(), pipe.cand_normal.numpy(), pipe.cand_dist.numpy()
    blocks, counts = pipe.pair_cand.numpy(), pipe.cand_count.numpy()
    seen = 0
    written = np.zeros(cdist.shape[0], dtype=bool)
    for e, (c, q) in enumerate(poses):
        ax = _rot(q)[:, 2]
        ends = [c + ax * hl, c - ax * hl] if kind == "capsule" else [c]
        want = [(x - n * (r + 0.5 * d), d) for x in ends for d in [(x - p0) @ n - r] if d < margin]
        if pipe.pair_count.numpy()[e] == 0:          # dropped by the broadphase: no block
            assert not want and counts[e] == 0
            continue
        start, cnt = blocks[e, 0]
        assert cnt == len(want) and counts[e] == cnt
        seen += cnt
        for i, (x, d) in enumerate(want):         # the block: positions in the candidate pool
            np.testing.assert_allclose(cpos[start + i], x, atol=tol)
            np.testing.assert_allclose(cnrm[start + i], n, atol=tol)
            np.testing.assert_allclose(cdist[start + i], d, atol=tol)
        assert not written[start:start + cnt].any()
        written[start:start + cnt] = True
    assert seen == (5 if kind == "capsule" else 4)
    # the blocks follow each other from the pool's start, and nothing else is written
    assert written[:seen].all() and np.isnan(cdist[~written]).all() and np.isnan(cpos[~written]).all()


def _quat_from_z(t):
    """A unit quaternion (w, x, y, z) turning +z onto the unit vector t."""
    z = np.array([0.0, 0.0, 1.0])
    v = np.cross(z, t)
    w = 1.0 + z @ t
    q = np.array([w, *v])
    return q / np.linalg.norm(q)
