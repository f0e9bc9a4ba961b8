"""Physics of the PBD plugin against analytic results (XPBD compliance, inextensible cloth, granular
non-penetration, incompressible fluid). Each tolerance says where it comes from."""

import numpy as np
import polyphys
import pytest
from polyphys import morphs
from polyphys.plugins.pbd import PBDOptions, grid_cloth
from scipy.spatial import cKDTree

G = 9.81


def PBD():
    return polyphys.materials.PBD


def _scene(dt, substeps, **opts):
    return polyphys.Scene(sim=polyphys.SimOptions(dt=dt, substeps=substeps), pbd=PBDOptions(**opts))


# -- XPBD: a mass on one compliant distance constraint ---------------------------------------------
def _hanging_mass_stretch(substeps, alpha, pose=((0, 0, 1.5), None)):
    pos, euler = pose
    sc = _scene(0.01, substeps, iterations=1, damping=5.0, lower_bound=(-1.5, -1.5, 0.0), upper_bound=(1.5, 1.5, 2.5))
    e = sc.add_entity(morphs.Box(pos=pos, euler=euler),
                      PBD().Particle(rho=1000.0, particle_size=0.1, edge_compliance=alpha),
                      particles=[[0, 0, 0], [0, 0, -0.5]], edges=[[0, 1]], pinned=[0])
    sc.build()
    for _ in range(300):        # 3 s; damping 5/s leaves e^-7.5 of the initial swing
        sc.step()
    p = e.get_particles_pos()
    m = e.get_mass()[1]
    return np.linalg.norm(p[0] - p[1]) - 0.5, m


@pytest.mark.parametrize("alpha, pose", [(1e-3, ((0, 0, 1.5), None)), (1e-4, ((0.37, -0.29, 1.6), (25, -40, 10)))],
                         ids=["origin", "offset-tilted"])
def test_xpbd_hanging_mass_stretch_is_mg_alpha_for_any_substep_count(alpha, pose):
    """XPBD (Macklin 2016, eq. 18): compliance α is the inverse stiffness, so a mass m on one
    distance constraint settles at stretch m·g·α, and unlike PBD it does not depend on the substep
    count. 2 %: the issue's bound; the remaining error is the e^-7.5 residue of the swing and
    float32 rounding of positions ~1 m (6e-8 m against a stretch of 1e-3 m or more). The tilted
    variant starts the string 38° off the vertical at an offset pin: it swings down and settles."""
    for substeps in (1, 4, 16):
        stretch, m = _hanging_mass_stretch(substeps, alpha, pose)
        assert m == pytest.approx(1.0)
        assert stretch == pytest.approx(m * G * alpha, rel=0.02), substeps


# -- cloth ------------------------------------------------------------------------------------------
def _edges(tris):
    return np.unique(np.sort(np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]]), 1), axis=0)


def test_hanging_cloth_pinned_at_two_corners_stretches_under_one_percent():
    """Documented settings (docs/pbd.md): dt = 1/60, 40 substeps, 4 iterations, stretch compliance
    0, default bending compliance and tethers. A 0.5 m cloth of 21 x 21 vertices starts horizontal,
    pinned at the two corners of one edge, falls and swings; the largest edge stretch over the whole
    first second stays under 1 % (the issue's bound; with zero compliance the residual is the
    iteration error: 0.4 % here, 8 % without tethers)."""
    res = 21
    pins = [0, res - 1]
    sc = _scene(1 / 60, 40, iterations=4)
    cloth = sc.add_entity(grid_cloth(size=(0.5, 0.5), res=(res, res), pos=(0, 0, 1.0)), PBD().Cloth(), pinned=pins)
    sc.build()
    x0 = cloth.get_particles_pos()
    e = _edges(cloth.get_triangles())
    rest = np.linalg.norm(x0[e[:, 0]] - x0[e[:, 1]], axis=1)
    worst = 0.0
    for _ in range(60):
        sc.step()
        x = cloth.get_particles_pos()
        worst = max(worst, (np.linalg.norm(x[e[:, 0]] - x[e[:, 1]], axis=1) / rest - 1).max())
    assert worst < 0.01
    np.testing.assert_array_equal(x[pins], x0[pins])                  # pinned corners stay
    assert x[:, 2].min() < 1.0 - 0.3                                   # it swung down


# -- granular ---------------------------------------------------------------------------------------
def _pour(n_side, steps):
    d = 0.02
    sc = _scene(1 / 60, 20, iterations=8, relaxation=1.5, lower_bound=(-0.15, -0.15, 0.0),
                upper_bound=(0.15, 0.15, 1.0))
    rng = np.random.default_rng(0)
    side = n_side * d * 1.05
    g = (np.arange(n_side) - (n_side - 1) / 2) * d * 1.05
    pts = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    pts += rng.uniform(-0.002, 0.002, pts.shape)     # break the lattice symmetry: it really pours
    e = sc.add_entity(morphs.Box(size=(side,) * 3, pos=(0, 0, 0.1 + side / 2)),
                      PBD().Particle(particle_size=d, friction=0.3), particles=pts)
    sc.build()
    for _ in range(steps):
        sc.step()
    x = e.get_particles_pos()
    dist, _ = cKDTree(x).query(x, k=2)
    return x, (d - dist[:, 1]).max() / (d / 2)


def test_granular_pour_no_overlap_over_one_percent_of_radius():
    """216 particles poured into a 0.3 m box (1000 in the validate run). The Jacobi contact
    projection leaves at most 1 % of the radius of overlap (the issue's bound) at the documented
    granular settings (20 substeps, 8 iterations, relaxation 1.5; with 4 iterations the
    1000-particle pile keeps 1.0 % of overlap at rest)."""
    x, overlap = _pour(6, 60)
    assert overlap < 0.01
    assert x[:, 2].min() >= 0.01 - 1e-6          # above the floor by one radius
    assert x[:, 2].max() < 0.1 + 0.02            # it fell


@pytest.mark.validate
def test_granular_pour_1000_particles_no_overlap():
    x, overlap = _pour(10, 120)
    assert len(x) == 1000
    assert overlap < 0.01


# -- fluid ------------------------------------------------------------------------------------------
def _column(d, substeps, steps):
    W, H = 0.1, 0.15
    sc = _scene(1 / 60, substeps, iterations=4, lower_bound=(-W / 2, -W / 2, 0.0), upper_bound=(W / 2, W / 2, 0.5))
    e = sc.add_entity(morphs.Box(size=(W, W, H), pos=(0, 0, H / 2)), PBD().Liquid(particle_size=d))
    sc.build()
    rho0 = e.get_particles_density()
    np.testing.assert_allclose(rho0.max(), 1000.0, rtol=1e-4)   # mass calibration of the lattice
    worst = 0.0
    for k in range(steps):
        sc.step()
        if k % 15 == 14:
            rho = e.get_particles_density()
            x = e.get_particles_pos()
            bulk = x[:, 2] < x[:, 2].max() - 2 * d       # particles with a full neighbourhood
            worst = max(worst, abs(rho.max() / 1000 - 1), abs(rho[bulk].mean() / 1000 - 1))
    return worst, e


def test_pbf_liquid_column_keeps_density_within_two_percent():
    """A 0.1 x 0.1 x 0.15 m PBF column (768 particles) under gravity in a box of its width: the
    largest particle density and the mean density of the bulk stay within 2 % of the rest
    density (the issue's bound; PBF's iteration error, Macklin & Müller 2013 §7 report 1-2 %)."""
    worst, e = _column(0.0125, 10, 45)
    assert worst < 0.02
    assert np.all(np.isfinite(e.get_particles_pos()))


@pytest.mark.validate
def test_pbf_column_long_run_fine():
    worst, _ = _column(0.01, 10, 120)
    assert worst < 0.02


# -- elastic ----------------------------------------------------------------------------------------
def _cube_tets():
    v = np.array([[x, y, z] for z in (0, 1) for y in (0, 1) for x in (0, 1)], float) - 0.5
    t = np.array([[0, 1, 3, 5], [0, 3, 2, 6], [0, 5, 4, 6], [3, 5, 6, 7], [0, 3, 5, 6]])
    return v, t


def test_tet_elastic_cube_keeps_its_volume_landing():
    """A 5-tet cube (volume and edge compliance 0) dropped on the floor: the total volume stays
    within 1 % (zero compliance: the residual is the iteration error of 8 substeps x 4 its)."""
    v, t = _cube_tets()
    sc = _scene(1 / 60, 8, iterations=4, lower_bound=(-1, -1, 0), upper_bound=(1, 1, 2))
    e = sc.add_entity(morphs.Mesh(vertices=v * 0.2, faces=t, pos=(0.23, -0.17, 0.5), euler=(20, 30, 0)), PBD().Elastic())
    sc.build()
    for _ in range(60):
        sc.step()
    x = e.get_particles_pos()
    vol = sum(abs(np.dot(np.cross(x[b] - x[a], x[c] - x[a]), x[d] - x[a])) / 6 for a, b, c, d in t)
    assert vol == pytest.approx(0.2 ** 3, rel=0.01)
    assert x[:, 2].min() < 0.05                       # it landed


@pytest.mark.parametrize("morph", [morphs.Sphere(radius=0.05, pos=(0, 0, 0.3)),
                                   morphs.Box(size=(0.12, 0.08, 0.06), pos=(0.41, -0.33, 0.3), euler=(15, 25, 35))],
                         ids=["ball", "offset-rotated-box"])
def test_shape_matched_ball_stays_rigid_when_it_lands(morph):
    """Shape matching with stiffness 1 restores the rest shape every iteration; the floor
    projection that follows it in the iteration flattens the bottom layer by what gravity
    predicts into the floor in one substep, g·h² = 9.81 · (1/480)² = 0.04 mm, plus what the
    goal step left. Pairwise distances stay within 5 % of the particle spacing (1 mm) after
    landing: the bound allows a few substeps of that residual, not a collapse of the shape."""
    sc = _scene(1 / 60, 8, iterations=4)
    e = sc.add_entity(morph, PBD().Elastic(particle_size=0.02))
    sc.build()
    x0 = e.get_particles_pos()
    for _ in range(40):
        sc.step()
    x = e.get_particles_pos()
    d0 = np.linalg.norm(x0[:, None] - x0[None], axis=-1)
    d1 = np.linalg.norm(x[:, None] - x[None], axis=-1)
    assert np.abs(d1 - d0).max() < 0.05 * 0.02
    assert x[:, 2].min() < 0.03


# -- cloth self-collision ---------------------------------------------------------------------------
def _two_layer_cloth(self_collision):
    """One cloth entity made of two disconnected 8x8 sheets, the upper one 5 cm above the lower."""
    a = grid_cloth(size=(0.2, 0.2), res=(8, 8))
    v = np.concatenate([a.vertices, a.vertices + [0.01, 0.01, 0.05]])
    f = np.concatenate([a.faces, a.faces + len(a.vertices)])
    sc = _scene(1 / 60, 10, iterations=4, lower_bound=(-0.3, -0.3, 0.0), upper_bound=(0.3, 0.3, 0.5))
    e = sc.add_entity(morphs.Mesh(vertices=v, faces=f, pos=(0, 0, 0.05)),
                      PBD().Cloth(thickness=0.01, self_collision=self_collision))
    sc.build()
    for _ in range(40):
        sc.step()
    x = e.get_particles_pos()
    return x[:64], x[64:]


def test_cloth_self_collision_keeps_layers_apart():
    """The upper sheet lands on the lower one (which lies on the floor). With self-collision its
    particles stay one thickness (contact distance 2 r = 1 cm) above the lower sheet's, within the
    1 % overlap bound of the granular test; without it they fall through to the floor."""
    low, up = _two_layer_cloth(True)
    np.testing.assert_allclose(low[:, 2], 0.005, atol=1e-4)           # lower sheet on the floor
    gap = cKDTree(low).query(up)[0]
    assert gap.min() > 0.01 * 0.99
    assert up[:, 2].max() < 0.03                                       # it did land
    low, up = _two_layer_cloth(False)
    assert up[:, 2].max() < 0.006                                      # fell through to the floor


# -- static planes ----------------------------------------------------------------------------------
def test_particles_rest_on_an_offset_tilted_plane():
    """A static plane through (0.31, -0.17, 0.42) with its normal tilted 25° (about an oblique axis),
    boundary friction 1.5 > tan 25°: a jittered granular block dropped on it comes to rest on the
    plane — every particle at least one radius on the normal side (to 1 % of the radius: the
    iteration error of the projection), the lowest ones touching it (within 1 % of the radius),
    and at rest. A plane that ignored its anchor point (the plane through the origin) would leave
    them 0.27 m lower."""
    th = np.radians(25.0)
    axis = np.array([0.6, 0.8, 0.0])
    n = np.cos(th) * np.array([0.0, 0.0, 1.0]) + np.sin(th) * np.cross(axis, [0.0, 0.0, 1.0])
    p0 = np.array([0.31, -0.17, 0.42])
    sc = _scene(1 / 60, 20, iterations=8, relaxation=1.5, boundary_friction=1.5, lower_bound=(-0.5, -0.6, -0.5),
                upper_bound=(1.0, 0.5, 1.5), planes=[(tuple(p0), tuple(n))])
    d = 0.02
    e = sc.add_entity(morphs.Box(size=(0.08, 0.06, 0.1), pos=tuple(p0 + 0.15 * n), euler=(10, 20, 30)),
                      PBD().Particle(particle_size=d, friction=0.5), jitter=0.2)
    sc.build()
    for _ in range(90):
        sc.step()
    x = e.get_particles_pos().astype(float)
    dist = (x - p0) @ n
    r = d / 2
    assert dist.min() >= r * 0.99, dist.min()
    assert dist.min() <= r * 1.01, dist.min()
    assert np.linalg.norm(e.get_particles_vel(), axis=1).max() < 0.02
