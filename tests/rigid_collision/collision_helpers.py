"""Helpers for the collision tests: run the pipeline on batches of two-geom configurations, and
the same geoms in MuJoCo (one single-pair MJCF model built here)."""

from __future__ import annotations

import numpy as np
from polyphys.description import Geom
from polyphys.layout import Partition
from polyphys.plugins.rigid import RigidOptions
from polyphys.plugins.rigid.collision import CollisionPipeline, set_poses_host

SIZE3 = {"plane": lambda s: (0.0, 0.0, 1.0)}


def geom(t, size, link, **kw):
    size = tuple(size) + (0.0,) * (3 - len(size))
    return Geom(name=f"{t}{link}", type=t, link=link, size=size, **kw)


def run_pairs(t1, s1, t2, s2, poses, precision="64", margin=0.0, options=None):
    """poses: list of (pos1, quat1, pos2, quat2); one env per pose. Returns (pipeline,
    contacts per env)."""
    g = [geom(t1, s1, 0, margin=margin), geom(t2, s2, 1, margin=margin)]
    opts = options or RigidOptions(max_contacts_per_pair=8, mujoco_compatible=True)
    pipe = CollisionPipeline(g, [0, 1], [-1, -1], [True, True], opts)
    n = len(poses)
    pipe.build(n, "cpu", precision)
    pos = np.array([[p[0], p[2]] for p in poses], dtype=float)
    quat = np.array([[p[1], p[3]] for p in poses], dtype=float)
    quat /= np.linalg.norm(quat, axis=-1, keepdims=True)
    set_poses_host(pipe, pos, quat)
    pipe.run(Partition(0, 0, n))
    pipe.check()
    return pipe, pipe.contacts()


def random_quat(rng):
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def axis_quat(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    return np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * axis])


# -- MuJoCo -------------------------------------------------------------------------------------
def _mj_size(t, s):
    if t == "plane":
        return "0 0 1"
    n = {"sphere": 1, "capsule": 2, "cylinder": 2, "box": 3, "ellipsoid": 3}[t]
    return " ".join(repr(float(v)) for v in s[:n])


def mujoco_model(t1, s1, t2, s2, margin=0.0, plane_pose=((0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0))):
    """Two free bodies with one geom each; a plane (static in MuJoCo) sits in the world body at
    ``plane_pose``."""
    import mujoco

    if t1 == "plane":
        pp = " ".join(repr(float(v)) for v in plane_pose[0])
        pq = " ".join(repr(float(v)) for v in plane_pose[1])
        first = (f'<geom name="g1" type="plane" size="0 0 1" pos="{pp}" quat="{pq}" '
                 f'margin="{margin!r}"/>')
    else:
        first = (f'<body name="b1"><freejoint/><geom name="g1" type="{t1}" '
                 f'size="{_mj_size(t1, s1)}" margin="{margin!r}"/></body>')
    xml = f"""<mujoco><option><flag gravity="disable"/></option><worldbody>
      {first}
      <body name="b2"><freejoint/><geom name="g2" type="{t2}" size="{_mj_size(t2, s2)}"
        margin="{margin!r}"/></body>
    </worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    return m, mujoco.MjData(m)


def mujoco_contacts(m, d, pose):
    """MuJoCo's contacts for one pose: list of (dist, normal geom1→geom2, pos, geom1, geom2)."""
    import mujoco

    if m.nq == 7:
        d.qpos[:] = np.concatenate([pose[2], pose[3]])
    else:
        d.qpos[:] = np.concatenate([pose[0], pose[1], pose[2], pose[3]])
    mujoco.mj_kinematics(m, d)
    mujoco.mj_collision(m, d)
    return [(float(c.dist), np.array(c.frame[:3]), np.array(c.pos), int(c.geom1), int(c.geom2))
            for c in d.contact[: d.ncon]]


# -- manifold polygons --------------------------------------------------------------------------
def plane_basis(n):
    n = np.asarray(n, float) / np.linalg.norm(n)
    a = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.57 else np.array([0.0, 1.0, 0.0])
    u = np.cross(n, a)
    u /= np.linalg.norm(u)
    return u, np.cross(n, u)


def hull2d(p, tol):
    """Convex hull vertices (Andrew's monotone chain) of 2-D points, collinear points dropped."""
    pts = sorted({(round(x / tol) * tol, round(y / tol) * tol) for x, y in p})
    if len(pts) <= 2:
        return np.array(pts)

    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower, upper = [], []
    for q in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], q) <= tol * tol:
            lower.pop()
        lower.append(q)
    for q in reversed(pts):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], q) <= tol * tol:
            upper.pop()
        upper.append(q)
    return np.array(lower[:-1] + upper[:-1])


def assert_same_polygon(points, depths, normal, expected_pts, expected_depths, tol):
    """The convex hull of ``points`` projected on the plane ⟂ normal equals the expected polygon
    (vertex sets within tol), and the depth at every expected vertex matches."""
    u, v = plane_basis(normal)
    P = np.stack([points @ u, points @ v], axis=1)
    E = np.stack([np.asarray(expected_pts) @ u, np.asarray(expected_pts) @ v], axis=1)
    hp, he = hull2d(P, tol), hull2d(E, tol)
    assert len(hp) == len(he), f"polygon has {len(hp)} vertices, expected {len(he)}:\n{hp}\n{he}"
    for q in he:
        assert np.min(np.linalg.norm(hp - q, axis=1)) <= 2 * tol, f"missing vertex {q}: {hp}"
    for q, dq in zip(E, expected_depths):
        k = int(np.argmin(np.linalg.norm(P - q, axis=1)))
        assert np.linalg.norm(P[k] - q) <= 2 * tol
        assert abs(depths[k] - dq) <= tol, (depths[k], dq)


def box_sat(p1, R1, h1, p2, R2, h2):
    """Numpy separating-axis reference: (separation along the best axis, unit axis from box 1 to
    box 2, best face separation, best edge separation)."""
    axes = [R1[:, i] for i in range(3)] + [R2[:, i] for i in range(3)]
    kinds = ["face"] * 6
    for i in range(3):
        for j in range(3):
            c = np.cross(R1[:, i], R2[:, j])
            if np.linalg.norm(c) > 1e-6:
                axes.append(c / np.linalg.norm(c))
                kinds.append("edge")
    d = p2 - p1
    best = {"face": (-np.inf, None), "edge": (-np.inf, None)}
    for L, k in zip(axes, kinds):
        s = abs(d @ L) - np.sum(h1 * np.abs(R1.T @ L)) - np.sum(h2 * np.abs(R2.T @ L))
        if s > best[k][0]:
            best[k] = (s, L if d @ L >= 0 else -L)
    top = max(best.values(), key=lambda x: x[0])
    return top[0], top[1], best["face"][0], best["edge"][0]


def capsule_box_sat(p1, R1, s1, p2, R2, hb):
    """Numpy reference for a capsule whose axis segment meets a box: the separation along the
    best of the box face normals and axis × box edge directions (the face normals of the
    segment ⊕ box zonotope, a complete set), minus the radius; returns (dist, unit axis from
    capsule to box)."""
    u = R1[:, 2]
    axes = [R2[:, i] for i in range(3)]
    for i in range(3):
        c = np.cross(u, R2[:, i])
        if np.linalg.norm(c) > 1e-9:
            axes.append(c / np.linalg.norm(c))
    d = p2 - p1
    best = (-np.inf, None)
    for L in axes:
        s = abs(d @ L) - s1[1] * abs(u @ L) - np.sum(np.asarray(hb) * np.abs(R2.T @ L))
        if s > best[0]:
            best = (s, L if d @ L >= 0 else -L)
    return best[0] - s1[0], best[1]


# -- support functions (numpy) for the iterative pairs --------------------------------------------
def support_h(t, s, p, R, n):
    """Support function h(n) = max over the shape of n·x, for unit n (rows of n allowed)."""
    n = np.atleast_2d(n)
    dl = n @ R
    s = np.asarray(s, float)
    if t == "mesh":                         # s: the vertices (geom frame)
        return n @ p + np.max(dl @ s.T, axis=1)
    if t == "sphere":
        e = s[0] * np.ones(len(n))
    elif t == "capsule":
        e = s[0] + s[1] * np.abs(dl[:, 2])
    elif t == "cylinder":
        e = s[0] * np.hypot(dl[:, 0], dl[:, 1]) + s[1] * np.abs(dl[:, 2])
    elif t == "box":
        e = np.abs(dl) @ s[:3]
    else:
        e = np.linalg.norm(dl * s[:3], axis=1)
    return n @ p + e


def separation(t1, s1, p1, R1, t2, s2, p2, R2, n):
    """Separation of the shapes along unit n (from 1 to 2); the signed distance is its maximum
    over n (negative: penetration depth)."""
    n = np.atleast_2d(n)
    n = n / np.linalg.norm(n, axis=1, keepdims=True)
    return -support_h(t1, s1, p1, R1, n) - support_h(t2, s2, p2, R2, -n)
