"""polyphys.sampling, shared by the particle solvers: the winding-number inside test against exact
geometry, primitive membership, and a Mesh morph sampled by every particle solver (SPH's mesh
sampling needed rtree before, through trimesh's ray test, and failed without it)."""

import numpy as np
import pytest
import trimesh
from polyphys import morphs
from polyphys.sampling import inside_mesh, inside_primitive, to_world, winding_number


def test_winding_number_inside_a_sphere_mesh():
    """An icosphere of radius 1 (subdivision 3: its faces lie within 0.2 % of the sphere): points
    clearly inside (|x| < 0.99) and outside (|x| > 1.01) are classified exactly, either orientation."""
    ico = trimesh.creation.icosphere(subdivisions=3, radius=1.0)
    rng = np.random.default_rng(0)
    p = rng.uniform(-1.5, 1.5, (3000, 3))
    r = np.linalg.norm(p, axis=1)
    clear = (r < 0.99) | (r > 1.01)
    assert np.array_equal(inside_mesh(p[clear], ico.vertices, ico.faces), r[clear] < 1)
    flipped = ico.faces[:, ::-1]
    assert np.array_equal(inside_mesh(p[clear], ico.vertices, flipped), r[clear] < 1)
    np.testing.assert_allclose(winding_number(p[r < 0.9][:50], ico.vertices, ico.faces), 1.0, atol=1e-9)


@pytest.mark.parametrize("morph,inside", [
    (morphs.Sphere(radius=0.3), lambda q: np.linalg.norm(q, axis=1) <= 0.3),
    (morphs.Cylinder(radius=0.2, height=0.5), lambda q: (np.hypot(q[:, 0], q[:, 1]) <= 0.2) & (np.abs(q[:, 2]) <= 0.25)),
    (morphs.Capsule(radius=0.1, height=0.4),
     lambda q: np.hypot(np.hypot(q[:, 0], q[:, 1]), q[:, 2] - np.clip(q[:, 2], -0.2, 0.2)) <= 0.1),
])
def test_inside_primitive(morph, inside):
    q = np.random.default_rng(1).uniform(-0.5, 0.5, (5000, 3))
    assert np.array_equal(inside_primitive(morph, q), inside(q))


def test_to_world_places_by_the_morphs_pose():
    m = morphs.Box(pos=(0.1, -0.2, 0.3), euler=(0, 0, 90))
    np.testing.assert_allclose(to_world(m, np.array([[1.0, 0.0, 0.0]])), [[0.1, 0.8, 0.3]], atol=1e-12)


def test_every_particle_solver_samples_a_mesh_morph():
    """A closed box mesh of 0.21 × 0.17 × 0.09 m sampled at 0.02 m: each solver's lattice gives
    about volume/spacing³ particles (within its lattice's rounding: at most one layer per face)."""
    from polyphys.plugins.mpm.sampling import sample as mpm_sample
    from polyphys.plugins.pbd.sampling import sample_volume as pbd_sample
    from polyphys.plugins.sph.sampling import sample_volume as sph_sample

    box = trimesh.creation.box((0.21, 0.17, 0.09))
    m = morphs.Mesh(vertices=box.vertices, faces=box.faces, pos=(0.1, 0.2, 0.3), euler=(0, 0, 30))
    expect = 0.21 * 0.17 * 0.09 / 0.02**3
    for pts in (mpm_sample(m, 0.02)[0], pbd_sample(m, 0.02), sph_sample(m, 0.02)):
        assert 0.5 * expect < len(pts) <= 1.3 * expect
        local = (pts - m.pos) @ np.asarray(trimesh.transformations.rotation_matrix(np.pi / 6, (0, 0, 1)))[:3, :3]
        assert np.all(np.abs(local) <= np.array([0.105, 0.085, 0.045]) + 1e-9)
