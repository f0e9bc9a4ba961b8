"""Analytic configurations of every primitive pair: depth and normal against closed-form values
(float64: 1e-12, a few ulps of the O(1) inputs; float32: 1e-5, float32 rounding of the same
inputs), face manifolds compared as polygons with their depths."""

import numpy as np
import pytest
from collision_helpers import assert_same_polygon, axis_quat, run_pairs

I4 = (1.0, 0.0, 0.0, 0.0)
Z = np.array([0.0, 0.0, 1.0])
TOL = {"64": 1e-12, "32": 1e-5}


def one(t1, s1, p1, q1, t2, s2, p2, q2, precision="64", margin=0.0):
    _, cs = run_pairs(t1, s1, t2, s2, [(p1, q1, p2, q2)], precision, margin)
    return cs[0]


@pytest.mark.parametrize("precision", ["64", "32"])
def test_plane_sphere(precision):
    tol = TOL[precision]
    # penetrating on a tilted plane through (1, 2, 3)
    q = axis_quat([1, 1, 0], 0.7)
    n = np.array([np.sin(0.7) / np.sqrt(2), -np.sin(0.7) / np.sqrt(2), np.cos(0.7)])
    c = one("plane", (0, 0, 1), (1, 2, 3), q, "sphere", (0.5,), np.array([1, 2, 3]) + 0.3 * n, I4,
            precision)
    assert len(c["depth"]) == 1
    assert abs(c["depth"][0] - 0.2) <= tol
    np.testing.assert_allclose(c["normal"][0], -n, atol=tol)      # B (sphere) -> A (plane)
    np.testing.assert_allclose(c["pos"][0], np.array([1, 2, 3]) + n * (0.3 - 0.5 + 0.1), atol=tol)
    np.testing.assert_allclose(c["frame"][0] @ c["frame"][0].T, np.eye(3), atol=10 * tol)
    assert np.linalg.det(c["frame"][0]) > 0
    # separated: nothing; inside the margin (0.1 + 0.1, summed): a contact with negative depth
    assert len(one("plane", (0, 0, 1), (0, 0, 0), I4, "sphere", (0.5,), (0, 0, 0.6), I4,
                   precision)["depth"]) == 0
    c = one("plane", (0, 0, 1), (0, 0, 0), I4, "sphere", (0.5,), (0, 0, 0.6), I4, precision, 0.1)
    assert abs(c["depth"][0] + 0.1) <= tol and abs(c["includemargin"][0] - 0.2) <= tol
    # exactly touching is not a contact without margin (dist < margin)
    assert len(one("plane", (0, 0, 1), (0, 0, 0), I4, "sphere", (0.5,), (0, 0, 0.5), I4,
                   precision)["depth"]) == 0


def test_plane_capsule_line_and_tilted():
    c = one("plane", (0, 0, 1), (0, 0, 0), I4, "capsule", (0.1, 0.5), (0, 0, 0.08),
            axis_quat([1, 0, 0], np.pi / 2))
    assert len(c["depth"]) == 2
    np.testing.assert_allclose(c["depth"], [0.02, 0.02], atol=1e-12)
    np.testing.assert_allclose(sorted(c["pos"][:, 1]), [-0.5, 0.5], atol=1e-12)
    np.testing.assert_allclose(c["normal"], [-Z, -Z], atol=1e-12)
    # tilted by 30 degrees: only the lower end touches
    a = np.pi / 6
    c = one("plane", (0, 0, 1), (0, 0, 0), I4, "capsule", (0.1, 0.5), (0, 0, 0.5 * np.sin(a) + 0.05),
            axis_quat([1, 0, 0], np.pi / 2 - a))
    assert len(c["depth"]) == 1 and abs(c["depth"][0] - 0.05) <= 1e-12


@pytest.mark.parametrize("precision", ["64", "32"])
def test_plane_box_face_edge_corner(precision):
    tol = TOL[precision]
    h = np.array([0.3, 0.2, 0.1])
    # resting face: the bottom square, every vertex at depth 0.01
    c = one("plane", (0, 0, 1), (0, 0, 0), I4, "box", h, (0.5, -0.2, 0.09), I4, precision)
    sq = np.array([[0.5 + sx * 0.3, -0.2 + sy * 0.2, -0.01] for sx in (-1, 1) for sy in (-1, 1)])
    assert_same_polygon(c["pos"], c["depth"], Z, sq, [0.01] * 4, tol)
    np.testing.assert_allclose(c["normal"], np.tile(-Z, (4, 1)), atol=tol)
    # on an edge (rotated 45 degrees about x): two points
    q = axis_quat([1, 0, 0], np.pi / 4)
    zc = (0.2 + 0.1) / np.sqrt(2) - 0.03
    c = one("plane", (0, 0, 1), (0, 0, 0), I4, "box", h, (0, 0, zc), q, precision)
    assert len(c["depth"]) == 2
    np.testing.assert_allclose(c["depth"], [0.03, 0.03], atol=tol)
    np.testing.assert_allclose(sorted(c["pos"][:, 0]), [-0.3, 0.3], atol=tol)
    # on a corner: one point at the corner's depth
    q = axis_quat([1, 1, 0], 0.3)
    from polyphys.description import quat_to_mat

    R = quat_to_mat(q)
    low = min((R @ (h * s))[2] for s in np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).T.reshape(-1, 3))
    c = one("plane", (0, 0, 1), (0, 0, 0), I4, "box", h, (0, 0, -low - 0.004), q, precision)
    assert len(c["depth"]) == 1 and abs(c["depth"][0] - 0.004) <= tol


def test_plane_box_pruned_to_four():
    """Deeper than the box is thick: 8 corners penetrate, pruning keeps 4 (the budgeted max)."""
    _, cs = run_pairs("plane", (0, 0, 1), "box", (0.3, 0.2, 0.1),
                      [((0, 0, 0), I4, (0, 0, -0.5), I4)])
    assert len(cs[0]["depth"]) == 8
    from polyphys.plugins.rigid import RigidOptions

    _, cs = run_pairs("plane", (0, 0, 1), "box", (0.3, 0.2, 0.1),
                      [((0, 0, 0), I4, (0, 0, -0.5), I4)], options=RigidOptions())
    c = cs[0]
    assert len(c["depth"]) == 4
    assert abs(c["depth"].max() - 0.6) <= 1e-12        # the deepest corner is kept


def test_plane_cylinder_standing_and_lying():
    # standing: rim points of the bottom disk, all at depth 0.02
    c = one("plane", (0, 0, 1), (0, 0, 0), I4, "cylinder", (0.2, 0.3), (0, 0, 0.28), I4)
    assert len(c["depth"]) == 3
    np.testing.assert_allclose(c["depth"], 0.02, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(c["pos"][:, :2], axis=1), 0.2, atol=1e-12)
    # lying on its side: the line of two rim points at both ends
    c = one("plane", (0, 0, 1), (0, 0, 0), I4, "cylinder", (0.2, 0.3), (0, 0, 0.19),
            axis_quat([0, 1, 0], np.pi / 2))
    assert len(c["depth"]) == 2
    np.testing.assert_allclose(c["depth"], 0.01, atol=1e-12)
    np.testing.assert_allclose(sorted(c["pos"][:, 0]), [-0.3, 0.3], atol=1e-12)
    # tilted: deepest rim point at the analytic depth
    a = 0.4
    c = one("plane", (0, 0, 1), (0, 0, 0), I4, "cylinder", (0.2, 0.3), (0, 0, 0.3), axis_quat([1, 0, 0], a))
    low = 0.3 - 0.3 * np.cos(a) - 0.2 * np.sin(a)
    assert abs(c["depth"].max() + low) <= 1e-12
    np.testing.assert_allclose(c["normal"][0], -Z, atol=1e-12)


def test_plane_ellipsoid_support_point():
    r = np.array([0.3, 0.2, 0.1])
    q = axis_quat([0, 1, 0], 0.5)
    from polyphys.description import quat_to_mat

    R = quat_to_mat(q)
    # support extent along z of the rotated ellipsoid: sqrt(sum (r_i R_zi)^2)
    ext = np.sqrt(np.sum((r * R[2]) ** 2))
    c = one("plane", (0, 0, 1), (0, 0, 0), I4, "ellipsoid", r, (0, 0, ext - 0.01), q)
    assert len(c["depth"]) == 1 and abs(c["depth"][0] - 0.01) <= 1e-12


@pytest.mark.parametrize("precision", ["64", "32"])
def test_sphere_sphere(precision):
    tol = TOL[precision]
    d = np.array([0.3, -0.4, 0.5])
    d /= np.linalg.norm(d)
    c = one("sphere", (0.4,), (1, 1, 1), I4, "sphere", (0.3,), np.array([1, 1, 1]) + 0.6 * d, I4,
            precision)
    assert abs(c["depth"][0] - 0.1) <= tol
    np.testing.assert_allclose(c["normal"][0], -d, atol=tol)     # from sphere B to sphere A
    np.testing.assert_allclose(c["pos"][0], np.array([1, 1, 1]) + d * (0.4 - 0.05), atol=tol)
    # degenerate: concentric spheres: depth r1 + r2 and some unit normal
    c = one("sphere", (0.4,), (0, 0, 0), I4, "sphere", (0.3,), (0, 0, 0), I4, precision)
    assert abs(c["depth"][0] - 0.7) <= tol and abs(np.linalg.norm(c["normal"][0]) - 1) <= tol


def test_sphere_capsule_side_and_cap():
    q = axis_quat([0, 1, 0], np.pi / 2)        # capsule axis along x
    c = one("sphere", (0.2,), (0.1, 0.25, 0), I4, "capsule", (0.1, 0.5), (0, 0, 0), q)
    assert abs(c["depth"][0] - 0.05) <= 1e-12
    np.testing.assert_allclose(c["normal"][0], [0, 1, 0], atol=1e-12)   # capsule (B) -> sphere (A)
    c = one("sphere", (0.2,), (0.7, 0, 0.1), I4, "capsule", (0.1, 0.5), (0, 0, 0), q)
    e = np.array([0.2, 0, 0.1])
    assert abs(c["depth"][0] - (0.3 - np.linalg.norm(e))) <= 1e-12
    np.testing.assert_allclose(c["normal"][0], e / np.linalg.norm(e), atol=1e-12)


def test_capsule_capsule_crossed_and_parallel():
    qx = axis_quat([0, 1, 0], np.pi / 2)
    qy = axis_quat([1, 0, 0], np.pi / 2)
    c = one("capsule", (0.1, 0.5), (0, 0, 0), qx, "capsule", (0.1, 0.5), (0.2, 0.1, 0.15), qy)
    assert len(c["depth"]) == 1 and abs(c["depth"][0] - 0.05) <= 1e-12
    np.testing.assert_allclose(c["normal"][0], [0, 0, -1], atol=1e-12)
    np.testing.assert_allclose(c["pos"][0], [0.2, 0, 0.075], atol=1e-12)
    # parallel, overlapping over x in [0.3, 0.5]: two points at the ends of the overlap
    c = one("capsule", (0.1, 0.5), (0, 0, 0), qx, "capsule", (0.1, 0.5), (0.8, 0, 0.15), qx)
    assert len(c["depth"]) == 2
    np.testing.assert_allclose(c["depth"], 0.05, atol=1e-12)
    np.testing.assert_allclose(sorted(c["pos"][:, 0]), [0.3, 0.5], atol=1e-12)
    # parallel and end to end on one line: one point between the caps
    c = one("capsule", (0.1, 0.5), (0, 0, 0), qx, "capsule", (0.1, 0.5), (1.15, 0, 0), qx)
    assert len(c["depth"]) == 1 and abs(c["depth"][0] - 0.05) <= 1e-12
    np.testing.assert_allclose(c["normal"][0], [-1, 0, 0], atol=1e-12)


@pytest.mark.parametrize("where,center,depth,normal", [
    ("face", (0.0, 0.0, 0.35), 0.05, (0, 0, 1)),
    ("edge", (0.4, 0.0, 0.3), 0.2 - np.hypot(0.1, 0.1), (1 / np.sqrt(2), 0, 1 / np.sqrt(2))),
    ("corner", (0.35, 0.25, 0.25), 0.2 - np.sqrt(3) * 0.05, np.ones(3) / np.sqrt(3)),
    ("inside", (0.0, 0.1, 0.05), 0.2 + 0.1, (0, 1, 0)),
])
def test_sphere_box_regions(where, center, depth, normal):
    c = one("sphere", (0.2,), center, I4, "box", (0.3, 0.2, 0.2), (0, 0, 0), I4)
    assert abs(c["depth"][0] - depth) <= 1e-12
    np.testing.assert_allclose(c["normal"][0], normal, atol=1e-12)   # box (B) -> sphere (A)


@pytest.mark.parametrize("center,depth,normal", [
    ((0.0, 0.4, 0.0), 0.05, (0, 1, 0)),                          # side
    ((0.0, 0.1, 0.45), 0.05, (0, 0, 1)),                          # cap
    ((0.0, 0.35, 0.4), 0.2 - np.hypot(0.1, 0.1), (0, 1 / np.sqrt(2), 1 / np.sqrt(2))),   # rim
    ((0.0, -0.22, 0.0), 0.2 + 0.03, (0, -1, 0)),                  # centre inside, near the side
])
def test_sphere_cylinder_regions(center, depth, normal):
    c = one("sphere", (0.2,), center, I4, "cylinder", (0.25, 0.3), (0, 0, 0), I4)
    assert abs(c["depth"][0] - depth) <= 1e-12
    np.testing.assert_allclose(c["normal"][0], normal, atol=1e-12)


@pytest.mark.parametrize("precision", ["64", "32"])
def test_box_box_face_manifolds(precision):
    tol = TOL[precision]
    # degenerate parallel faces, offset: the overlap rectangle
    c = one("box", (0.5, 0.5, 0.1), (0, 0, 0), I4, "box", (0.2, 0.3, 0.1), (0.4, 0.1, 0.19), I4,
            precision)
    rect = [[x, y, 0.095] for x in (0.2, 0.5) for y in (-0.2, 0.4)]
    assert_same_polygon(c["pos"], c["depth"], Z, rect, [0.01] * 4, tol)
    np.testing.assert_allclose(c["normal"], np.tile(-Z, (len(c["depth"]), 1)), atol=tol)
    # a square turned by 45 degrees on a square: the regular octagon, 8 points at equal depth
    q = axis_quat(Z, np.pi / 4)
    c = one("box", (0.5, 0.5, 0.1), (0, 0, 0), I4, "box", (0.5, 0.5, 0.1), (0, 0, 0.18), q,
            precision)
    assert len(c["depth"]) == 8
    s, t = 0.5, 0.5 * (np.sqrt(2) - 1)
    octo = [[sx * a, sy * b, 0.09] for (a, b) in ((s, t), (t, s)) for sx in (-1, 1) for sy in (-1, 1)]
    assert_same_polygon(c["pos"], c["depth"], Z, octo, [0.02] * 8, tol)


def test_box_box_edge_edge_and_corner():
    # two edges crossing: lower box turned 45 deg about x, upper about y; edge-edge along z
    h = np.array([0.2, 0.2, 0.2])
    e = 0.2 * np.sqrt(2)
    c = one("box", h, (0, 0, 0), axis_quat([1, 0, 0], np.pi / 4), "box", h, (0, 0, 2 * e - 0.02),
            axis_quat([0, 1, 0], np.pi / 4))
    assert len(c["depth"]) == 1
    assert abs(c["depth"][0] - 0.02) <= 1e-12
    np.testing.assert_allclose(c["normal"][0], [0, 0, -1], atol=1e-12)
    np.testing.assert_allclose(c["pos"][0], [0, 0, e - 0.01], atol=1e-12)
    # a corner into a face: depth of the corner below the face
    from polyphys.description import quat_to_mat

    q = axis_quat([1, 1, 0], np.arctan(np.sqrt(2)))      # the (1,1,1) diagonal turned onto z
    R = quat_to_mat(q)
    ext = np.abs(R @ h).max()
    low = max((-(R @ (h * s))[2]) for s in np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).T.reshape(-1, 3))
    c = one("box", (1.0, 1.0, 0.2), (0, 0, 0), I4, "box", h, (0, 0, 0.2 + low - 0.015), q)
    assert ext > 0
    assert abs(c["depth"].max() - 0.015) <= 1e-12
    np.testing.assert_allclose(c["normal"][int(np.argmax(c["depth"]))], [0, 0, -1], atol=1e-12)


def test_capsule_box_face_edge_and_deep():
    qx = axis_quat([0, 1, 0], np.pi / 2)          # capsule axis along x
    qy = axis_quat([1, 0, 0], np.pi / 2)          # along y
    hb = (0.5, 0.5, 0.1)
    # lying on the top face: a line contact, both ends at depth 0.02
    c = one("capsule", (0.1, 0.3), (0, 0, 0.18), qx, "box", hb, (0, 0, 0), I4)
    assert len(c["depth"]) == 2
    np.testing.assert_allclose(c["depth"], 0.02, atol=1e-12)
    np.testing.assert_allclose(sorted(c["pos"][:, 0]), [-0.3, 0.3], atol=1e-12)
    np.testing.assert_allclose(c["normal"], np.tile(Z, (2, 1)), atol=1e-12)   # box (B) -> capsule (A)
    # hanging over the edge x = 0.5: the axis clipped to the face, x in [0.2, 0.5]
    c = one("capsule", (0.1, 0.3), (0.5, 0, 0.18), qx, "box", hb, (0, 0, 0), I4)
    np.testing.assert_allclose(sorted(c["pos"][:, 0]), [0.2, 0.5], atol=1e-12)
    np.testing.assert_allclose(c["depth"], 0.02, atol=1e-12)
    # standing on its end: one point
    c = one("capsule", (0.1, 0.3), (0, 0.2, 0.45), I4, "box", hb, (0, 0, 0), I4)
    assert len(c["depth"]) == 1 and abs(c["depth"][0] - 0.05) <= 1e-12
    # across the edge (x = 0.5, z = 0.1) along y: normal along the bisector
    c = one("capsule", (0.1, 0.3), (0.55, 0, 0.15), qy, "box", hb, (0, 0, 0), I4)
    assert len(c["depth"]) == 1
    assert abs(c["depth"][0] - (0.1 - np.hypot(0.05, 0.05))) <= 1e-12
    np.testing.assert_allclose(c["normal"][0], np.array([1, 0, 1]) / np.sqrt(2), atol=1e-12)
    # separated within the margin over the edge
    c = one("capsule", (0.1, 0.3), (0.6, 0, 0.2), qy, "box", hb, (0, 0, 0), I4, margin=0.05)
    assert abs(c["depth"][0] + (np.hypot(0.1, 0.1) - 0.1)) <= 1e-12
    # axis inside the box near the top face: pushed out through it, depth 0.05 + r, two points
    c = one("capsule", (0.1, 0.3), (0, 0, 0.05), qy, "box", hb, (0, 0, 0), I4)
    assert len(c["depth"]) == 2
    np.testing.assert_allclose(c["depth"], 0.15, atol=1e-12)
    np.testing.assert_allclose(c["normal"], np.tile(Z, (2, 1)), atol=1e-12)
