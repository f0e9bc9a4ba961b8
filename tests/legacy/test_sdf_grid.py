"""Grid SDFs of triangle meshes (polyphys.sdf_grid) against the analytic SDFs of the same shapes.

Bound: the grid nodes hold exact distances (float32) and an SDF is 1-Lipschitz, so the trilinear
interpolant is within Σ_c w_c |x − c| ≤ sqrt(Σ_c w_c |x − c|²) ≤ (√3/2)·h of the exact value
(h: spacing); a faceted sphere adds its facet error r − min(face-plane distance). Where the SDF is
linear over the cell (near a face of the box, away from edges and the medial axis) the
interpolant is exact to float32 and the gradient normal is the face normal.
"""

import numpy as np
import pytest
import trimesh
from polyphys.errors import OptionError
from polyphys.sdf_grid import build_sdf_grids, grid_layout, interpolation_bound, query_sdf_grids

HALF = np.array([0.15, 0.1, 0.05])
R = 0.1


def _box_sdf(p):
    q = np.abs(p) - HALF
    return np.linalg.norm(np.maximum(q, 0.0), axis=1) + np.minimum(q.max(1), 0.0)


@pytest.fixture(scope="module")
def grids():
    box = trimesh.creation.box(extents=2 * HALF)
    sphere = trimesh.creation.icosphere(subdivisions=3, radius=R)
    g = build_sdf_grids([(box.vertices, box.faces), None, (sphere.vertices, sphere.faces)], res=32)
    return g, sphere


def _inside_grid(g, i, n, rng):
    o = g.origin.numpy()[i].astype(float)
    ext = (g.dims.numpy()[i] - 1) * float(g.spacing.numpy()[i])
    return o + rng.uniform(0.0, 1.0, (n, 3)) * ext


def test_packing_and_layout(grids):
    g, _ = grids
    assert g.geom.numpy().tolist() == [0, -1, 1]                # geom 1 has no mesh: no grid
    dims, off = g.dims.numpy(), g.offset.numpy()
    assert off.tolist() == [0, int(np.prod(dims[0]))]
    assert g.values.shape[0] == int(np.prod(dims, axis=1).sum())
    assert np.isfinite(g.values.numpy()).all()                 # every node written (wp.empty outputs)
    h = g.spacing.numpy()
    np.testing.assert_allclose(h, [0.3 / 32, 0.2 / 32], rtol=1e-6)
    o = g.origin.numpy()
    # the grid reaches at least 2 cells beyond the mesh bounds on every side
    assert np.all(o[0] <= -HALF - 2 * h[0] + 1e-7)
    assert np.all(o[0] + (dims[0] - 1) * h[0] >= HALF + 2 * h[0] - 1e-7)


def test_mesh_box_grid_sdf_matches_the_analytic_box(grids):
    g, _ = grids
    rng = np.random.default_rng(0)
    p = _inside_grid(g, 0, 20000, rng)
    d, n = query_sdf_grids(g, 0, p)
    h = float(g.spacing.numpy()[0])
    err = np.abs(d - _box_sdf(p))
    assert err.max() <= interpolation_bound(h) + 1e-6, (err.max(), interpolation_bound(h))   # measured ≈ 0.4 h
    # within a cell of the top face, 3 cells from its edges: every node of the cell is nearer the
    # top face than any other, so the SDF is linear there and the grid exact
    m = 4000
    q = np.c_[rng.uniform(-HALF[0] + 3 * h, HALF[0] - 3 * h, m), rng.uniform(-HALF[1] + 3 * h, HALF[1] - 3 * h, m),
              rng.uniform(HALF[2] - h, HALF[2] + 2 * h, m)]
    d, n = query_sdf_grids(g, 0, q)
    np.testing.assert_allclose(d, _box_sdf(q), atol=2e-6)
    np.testing.assert_allclose(n, np.tile([0.0, 0.0, 1.0], (m, 1)), atol=1e-5)


def test_mesh_sphere_grid_sdf_matches_the_analytic_sphere(grids):
    g, sphere = grids
    rng = np.random.default_rng(1)
    p = _inside_grid(g, 1, 20000, rng)
    d, n = query_sdf_grids(g, 1, p)
    h = float(g.spacing.numpy()[1])
    facet = R - np.abs((sphere.triangles_center * sphere.face_normals).sum(1)).min()   # ≈ 4.5e-4 m
    exact = np.linalg.norm(p, axis=1) - R
    err = np.abs(d - exact)
    assert err.max() <= interpolation_bound(h) + facet + 1e-6, (err.max(), interpolation_bound(h), facet)
    # near the surface the gradient normal is radial up to the faceting (adjacent faces of this
    # icosphere differ by up to 5.75°) plus the interpolation's O(h/R) (3.6°); measured max 5.9°
    near = np.abs(exact) < 2 * h
    cos = (n[near] * p[near]).sum(1) / np.linalg.norm(p[near], axis=1)
    allowed = sphere.face_adjacency_angles.max() + h / R
    assert near.sum() > 1000 and cos.min() > np.cos(allowed), (np.degrees(np.arccos(cos.min())), np.degrees(allowed))


def test_outside_the_grid_distance_to_the_box_plus_boundary_value(grids):
    g, _ = grids
    p = np.array([[0.0, 0.0, 1.0], [2.0, 0.0, 0.0], [0.5, -0.5, 0.3]])
    d, n = query_sdf_grids(g, 0, p)
    exact = _box_sdf(p)
    h = float(g.spacing.numpy()[0])
    # an upper bound of the true distance (1-Lipschitz), tight up to the boundary's interpolation error
    assert np.all(d >= exact - interpolation_bound(h)) and np.all(d <= exact + 0.1)
    np.testing.assert_allclose(d[0], exact[0], atol=1e-5)       # straight above the top face: exact
    np.testing.assert_allclose(n[0], [0, 0, 1], atol=1e-6)
    np.testing.assert_allclose(n[1], [1, 0, 0], atol=1e-6)


def test_open_and_inward_facing_meshes_are_signed_correctly():
    """A box with its top face removed (signed by the generalized winding number) and a box whose
    triangles face inward (flipped before the pseudo-normal test): negative inside, positive
    outside. The closed, inward box gives the same grid as the outward one."""
    box = trimesh.creation.box(extents=2 * HALF)
    keep = box.face_normals[:, 2] < 0.5
    g = build_sdf_grids([(box.vertices, box.faces[keep]), (box.vertices, box.faces[:, ::-1]),
                         (box.vertices, box.faces)], res=16)
    pts = [[0.0, 0.0, 0.0], [0.0, 0.0, -0.2], [0.1, 0.05, 0.03]]
    for i in range(2):
        d, _ = query_sdf_grids(g, i, pts)
        assert d[0] < 0.0 and d[1] > 0.0 and d[2] < 0.0, (i, d)
    v = g.values.numpy()
    n = int(np.prod(g.dims.numpy()[1]))
    o = g.offset.numpy()
    np.testing.assert_array_equal(v[o[1]:o[1] + n], v[o[2]:o[2] + n])


def test_bad_input_is_refused_with_the_field_and_value():
    box = trimesh.creation.box(extents=(0.1, 0.1, 0.1))
    with pytest.raises(OptionError, match=r"geom 0: mesh faces shape \(3, 4\)"):
        build_sdf_grids([(box.vertices, np.zeros((3, 4), int))])
    with pytest.raises(OptionError, match="spacing = -0.1"):
        grid_layout(box.vertices, spacing=-0.1)
    with pytest.raises(OptionError, match="nodes"):
        grid_layout(box.vertices, spacing=1e-5)
    from polyphys.couplers.legacy.options import LegacyOptions
    with pytest.raises((OptionError, ValueError), match="sdf_grid_spacing"):
        LegacyOptions(sdf_grid_spacing=0.0)
    with pytest.raises((OptionError, ValueError), match="sdf_grid_res"):
        LegacyOptions(sdf_grid_res=0)
