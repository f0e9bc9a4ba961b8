"""Convex meshes (their convex hull): a box-shaped mesh collides exactly like the analytic box
(plane: hull vertices, exact; other shapes: GJK + EPA within their tolerance), and an octahedron
against a plane, a sphere and a box matches MuJoCo (mesh geoms built from the same vertices in an
MJCF model) and the support-function checks of test_collision_convex.py."""

import numpy as np
import pytest
import trimesh
from collision_helpers import geom, random_quat, separation
from polyphys.description import Geom, MeshData, quat_to_mat
from polyphys.layout import Partition
from polyphys.plugins.rigid import RigidOptions
from polyphys.plugins.rigid.collision import CollisionPipeline, set_poses_host

mujoco = pytest.importorskip("mujoco")


def _run(g1, g2, poses):
    # the default mode: its box-box is the exact separating-axis routine (MuJoCo-compatible mode runs
    # MuJoCo's, which prefers face axes within 5 %, test_collision_boxbox_mujoco.py); no margins here,
    # so the modes' margin rules do not differ
    p = CollisionPipeline([g1, g2], [0, 1], [-1, -1], [True, True], RigidOptions(max_contacts_per_pair=8))
    p.build(len(poses), "cpu", "64")
    set_poses_host(p, np.array([[a[0], a[2]] for a in poses]), np.array([[a[1], a[3]] for a in poses]))
    p.run(Partition(0, 0, len(poses)))
    p.check()
    return p.contacts()


def _poses(rng, n, plane=False):
    out = []
    for _ in range(n):
        p1 = np.zeros(3) if plane else rng.normal(size=3) * 0.1
        q1 = np.array([1.0, 0, 0, 0]) if plane else random_quat(rng)
        out.append((p1, q1, rng.normal(size=3) * 0.2, random_quat(rng)))
    return out


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("other", ["plane", "sphere", "capsule", "box"])
def test_box_mesh_collides_like_the_box(other):
    box = trimesh.creation.box(extents=(0.6, 0.4, 0.2))
    mesh = Geom(name="m", type="mesh", link=1, mesh=MeshData(vertices=box.vertices, faces=box.faces))
    o = geom(other, {"plane": (0, 0, 1), "sphere": (0.2,), "capsule": (0.1, 0.2),
                     "box": (0.2, 0.3, 0.1)}[other], 0)
    poses = _poses(np.random.default_rng(2), 24, other == "plane")
    a = _run(o, mesh, poses)
    b = _run(o, geom("box", (0.3, 0.2, 0.1), 1), poses)
    # plane: exact (the same corners); otherwise GJK/EPA against the analytic routine: 1e-4 of
    # the size (test_collision_convex.py), measured 3e-10 on polytopes
    tol = 1e-12 if other == "plane" else 1e-4
    n = 0
    for x, y in zip(a, b):
        assert bool(len(x["depth"])) == bool(len(y["depth"]))
        if len(x["depth"]):
            assert abs(x["depth"].max() - y["depth"].max()) <= tol
            n += 1
    assert n >= 5


def _octahedron(a, b, c):
    v = np.array([[a, 0, 0], [-a, 0, 0], [0, b, 0], [0, -b, 0], [0, 0, c], [0, 0, -c]])
    return v, trimesh.convex.convex_hull(v).faces


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("other", ["plane", "sphere", "box"])
def test_octahedron_against_mujoco_and_support_functions(other):
    v, f = _octahedron(0.3, 0.2, 0.15)
    mesh = Geom(name="m", type="mesh", link=1, mesh=MeshData(vertices=v, faces=f))
    osize = {"plane": (0, 0, 1), "sphere": (0.15,), "box": (0.2, 0.1, 0.12)}[other]
    o = geom(other, osize, 0)
    rng = np.random.default_rng(5)
    poses = _poses(rng, 24, other == "plane")
    ours = _run(o, mesh, poses)
    verts = " ".join(repr(float(x)) for x in v.reshape(-1))
    first = ('<geom type="plane" size="0 0 1"/>' if other == "plane" else
             f'<body><freejoint/><geom type="{other}" size="{" ".join(map(str, osize[:3 if other == "box" else 1]))}"/></body>')
    m = mujoco.MjModel.from_xml_string(
        f'<mujoco><asset><mesh name="oct" vertex="{verts}"/></asset><worldbody>{first}'
        f'<body><freejoint/><geom type="mesh" mesh="oct"/></body></worldbody></mujoco>')
    d = mujoco.MjData(m)
    scale = 0.6
    checked = 0
    for pose, c in zip(poses, ours):
        d.qpos[:] = np.concatenate(([] if other == "plane" else [pose[0], pose[1]]) + [pose[2], pose[3]])
        mujoco.mj_kinematics(m, d)
        mujoco.mj_collision(m, d)
        mj = [(float(x.dist), np.array(x.frame[:3])) for x in d.contact[:d.ncon]]
        if not len(c["depth"]):
            assert not mj or min(x[0] for x in mj) >= -1e-9
            continue
        assert mj, pose
        dist = -float(c["depth"].max())
        k = int(np.argmax(c["depth"]))
        if other == "plane":
            # hull vertices below the plane: exact; MuJoCo stores mesh vertices in float32 (after
            # moving them to the mesh's inertial frame): 1e-7 (float32 rounding of O(1) values)
            assert abs(dist - min(x[0] for x in mj)) <= 1e-7
            np.testing.assert_allclose(-c["normal"][k], mj[0][1], atol=1e-12)
        else:
            R1, R2 = quat_to_mat(pose[1]), quat_to_mat(pose[3])

            def sep(n, pose=pose, R1=R1, R2=R2):
                return separation(other, osize, pose[0], R1, "mesh", v, pose[2], R2, n)

            n = -c["normal"][k]
            assert abs(float(sep(n)[0]) - dist) <= 1e-9 * scale
            assert float(np.max(sep(rng.normal(size=(2000, 3))))) <= dist + 1e-4 * scale
            kk = int(np.argmin([x[0] for x in mj]))
            assert float(sep(mj[kk][1])[0]) <= dist + 1e-4 * scale
            assert abs(mj[kk][0] - dist) <= 1e-4 * scale     # MuJoCo's own GJK/EPA tolerance
        checked += 1
    assert checked >= 5
