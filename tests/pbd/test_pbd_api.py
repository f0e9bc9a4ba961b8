"""PBD plugin API: registration, bad input, getters/setters, per-env pinning, views, per-env
reset isolation, checkpoints and batching (bit-exact on CPU)."""


import numpy as np
import polyphys
import pytest
from polyphys import morphs
from polyphys.errors import OptionError, PolyphysWarning
from polyphys.plugins.pbd import PBDOptions, grid_cloth
from polyphys.views import ParticleView, SurfaceMeshView


def PBD():
    return polyphys.materials.PBD


def _scene(n_substeps=2, **opts):
    return polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=n_substeps), pbd=PBDOptions(**opts))


def test_materials_and_options_are_registered():
    for name in ("Cloth", "Elastic", "Particle", "Liquid"):
        cls = getattr(PBD(), name)
        assert cls.__module__ == "polyphys.plugins.pbd.materials"
    spec = polyphys.registry().get("solver", "pbd").spec
    caps = spec.capabilities
    assert caps.batch and caps.reset_envs and caps.checkpoint
    assert spec.options == "polyphys.plugins.pbd.options:PBDOptions"


# -- bad input ------------------------------------------------------------------------------------
@pytest.mark.parametrize("field", ["stretch_compliance", "bending_compliance"])
def test_negative_cloth_compliance_is_rejected(field):
    with pytest.raises(OptionError, match=f"Cloth.{field} = -0.1: must be a finite number >= 0"):
        PBD().Cloth(**{field: -0.1})


@pytest.mark.parametrize("cls, field", [("Elastic", "volume_compliance"), ("Particle", "edge_compliance")])
def test_negative_compliance_other_materials(cls, field):
    with pytest.raises(OptionError, match=f"{cls}.{field} = -1"):
        getattr(PBD(), cls)(**{field: -1.0})


def test_bad_options_are_named():
    with pytest.raises(OptionError, match="PBDOptions.iterations = 0"):
        PBDOptions(iterations=0)
    with pytest.raises(OptionError, match="upper_bound"):
        PBDOptions(lower_bound=(0, 0, 0), upper_bound=(1, 0, 1))
    with pytest.raises(OptionError, match="planes\\[0\\] normal"):
        PBDOptions(planes=[((0, 0, 0), (0, 0, 0))])
    with pytest.raises(OptionError, match="static_spheres\\[0\\] radius"):
        PBDOptions(static_spheres=[((0, 0, 0), -1.0)])


def test_degenerate_triangle_is_rejected_naming_it():
    v = np.array([[0, 0, 1], [0.1, 0, 1], [0, 0.1, 1], [0.2, 0, 1]], float)
    f = np.array([[0, 1, 2], [0, 1, 3]])            # triangle 1 is collinear
    sc = _scene()
    with pytest.raises(OptionError, match=r"degenerate \(zero-area\) triangle\(s\) \[1\]"):
        sc.add_entity(morphs.Mesh(vertices=v, faces=f), PBD().Cloth())


def test_non_manifold_cloth_warns_naming_the_edge():
    v = np.array([[0, 0, 1], [0.1, 0, 1], [0.05, 0.1, 1], [0.05, -0.1, 1], [0.05, 0, 1.1]], float)
    f = np.array([[0, 1, 2], [1, 0, 3], [0, 1, 4]])   # edge (0, 1) in three triangles
    sc = _scene()
    with pytest.warns(PolyphysWarning, match=r"non-manifold: edge\(s\) \[\[0, 1\]\]"):
        e = sc.add_entity(morphs.Mesh(vertices=v, faces=f), PBD().Cloth())
    sc.build()
    assert sc.solver("pbd").n_bend == 0          # no bending across the non-manifold edge
    sc.step()
    assert np.all(np.isfinite(e.get_particles_pos()))


def test_degenerate_tet_is_rejected():
    v = np.array([[0, 0, 1], [0.1, 0, 1], [0, 0.1, 1], [0, 0, 1.1], [0.1, 0.1, 1]], float)
    t = np.array([[0, 1, 2, 3], [0, 1, 2, 4]])      # tet 1 is flat
    with pytest.raises(OptionError, match=r"degenerate \(zero-volume\) tetrahedra \[1\]"):
        _scene().add_entity(morphs.Mesh(vertices=v, faces=t), PBD().Elastic())


def test_pinned_indices_out_of_range():
    sc = _scene()
    with pytest.raises(OptionError, match=r"pinned contains \[25\]: entity 'c' has 25 particles, allowed "
                                          r"indices are 0..24"):
        sc.add_entity(grid_cloth(size=(0.2, 0.2), res=(5, 5)), PBD().Cloth(), name="c", pinned=[0, 25])
    e = sc.add_entity(grid_cloth(size=(0.2, 0.2), res=(5, 5)), PBD().Cloth(), name="c2", pinned=[-0 + 4])
    sc.build(n_envs=2)
    with pytest.raises(OptionError, match=r"particles_idx_local contains \[-1\]"):
        e.set_particles_free(False, particles_idx_local=[-1])
    with pytest.raises(OptionError, match=r"free has shape \(3,\); expected \(2, 2\)"):
        e.set_particles_free([True, False, True], particles_idx_local=[0, 1])


def test_other_bad_inputs():
    sc = _scene()
    with pytest.raises(OptionError, match="needs a triangle Mesh morph"):
        sc.add_entity(morphs.Box(size=(0.1, 0.1, 0.1), pos=(0, 0, 0.5)), PBD().Cloth())
    with pytest.raises(OptionError, match="outside the PBD domain box"):
        sc.add_entity(morphs.Box(size=(0.1, 0.1, 0.1), pos=(0, 0, 5.0)), PBD().Particle())
    with pytest.raises(OptionError, match="unknown arguments \\['colour'\\]"):
        sc.add_entity(morphs.Box(size=(0.1, 0.1, 0.1), pos=(0, 0, 0.5)), PBD().Particle(), colour=1)
    with pytest.raises(OptionError, match="edges=... is only allowed for PBD.Particle"):
        sc.add_entity(morphs.Box(size=(0.1, 0.1, 0.1), pos=(0, 0, 0.5)), PBD().Liquid(), edges=[[0, 1]])
    with pytest.raises(OptionError, match="edges contains \\[2\\]"):
        sc.add_entity(morphs.Box(pos=(0, 0, 0.5)), PBD().Particle(), particles=[[0, 0, 0], [0, 0, 0.1]],
                      edges=[[0, 2]])
    with pytest.raises(OptionError, match="no particle fits"):
        sc.add_entity(morphs.Box(size=(0.01, 0.1, 0.1), pos=(0, 0, 0.5)), PBD().Particle(particle_size=0.02))


# -- state, setters, views ------------------------------------------------------------------------
def _mixed(n_envs, **sim):
    sc = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=2, **sim),
                        pbd=PBDOptions(iterations=2, lower_bound=(-0.25, -0.25, 0.0), upper_bound=(0.25, 0.25, 0.5)))
    cloth = sc.add_entity(grid_cloth(size=(0.2, 0.2), res=(5, 5), pos=(0, 0, 0.3)), PBD().Cloth(), pinned=[0, 4])
    sand = sc.add_entity(morphs.Box(size=(0.06, 0.06, 0.06), pos=(0, 0, 0.1)), PBD().Particle())
    water = sc.add_entity(morphs.Box(size=(0.06, 0.06, 0.06), pos=(0.12, 0, 0.05)), PBD().Liquid())
    sc.build(n_envs=n_envs)
    return sc, cloth, sand, water


def test_getters_shapes_and_per_env_pinning():
    sc, cloth, sand, water = _mixed(2)
    assert cloth.get_particles_pos().shape == (2, 25, 3)
    assert sand.get_particles_vel().shape == (2, sand.n_particles, 3)
    free = cloth.get_particles_free()
    assert free.shape == (2, 25) and not free[:, 0].any() and free[:, 1:4].all()
    # env 1: pin the whole cloth; env 0: release corner 0
    cloth.set_particles_free(False, envs_idx=[1])
    cloth.set_particles_free([True], particles_idx_local=[0], envs_idx=[0])
    x0 = cloth.get_particles_pos()
    for _ in range(5):
        sc.step()
    x = cloth.get_particles_pos()
    np.testing.assert_array_equal(x[1], x0[1])               # fully pinned env does not move
    assert np.all(x[0][[0, 1, 2, 3]][:, 2] < x0[0][[0, 1, 2, 3]][:, 2])
    np.testing.assert_array_equal(x[0][4], x0[0][4])         # still pinned in env 0
    np.testing.assert_array_equal(cloth.get_particles_vel()[1], 0.0)
    # setters write in place (graphs keep their pointers)
    ptr = sc.solver("pbd").pos.ptr
    sand.set_particles_pos(sand.get_particles_pos()[0] + 0.01, envs_idx=[0])
    sand.set_particles_vel(np.zeros((sand.n_particles, 3)))
    assert sc.solver("pbd").pos.ptr == ptr
    with pytest.raises(OptionError, match="density is defined for Liquid"):
        sand.get_particles_density()


def test_unbatched_scene_has_no_batch_axis():
    sc, cloth, sand, water = _mixed(0)
    sc.step()
    assert cloth.get_particles_pos().shape == (25, 3)
    assert water.get_particles_density().shape == (water.n_particles,)
    assert cloth.get_particles_free().shape == (25,)


def test_views():
    sc, cloth, sand, water = _mixed(2)
    s = sc.solver("pbd")
    part = sc.layout.partitions[0]
    assert s.view(ParticleView) is s and s.view(SurfaceMeshView) is s
    pc = s.particle_carriers(part)
    n = s.n_particles
    assert pc.pos.shape == (part.n_envs, n) and pc.mass.shape == (part.n_envs, n)
    np.testing.assert_allclose(pc.mass.numpy()[0, :25], cloth.get_mass(), rtol=1e-6)
    sm = s.surface_mesh(part)
    assert sm.triangles.shape == (32, 3)
    np.testing.assert_array_equal(sm.triangles.numpy(), cloth.get_triangles())   # cloth is entity 0
    only_sand = _scene()
    only_sand.add_entity(morphs.Box(size=(0.06, 0.06, 0.06), pos=(0, 0, 0.1)), PBD().Particle())
    only_sand.build()
    assert only_sand.solver("pbd").view(SurfaceMeshView) is None


def test_reset_env0_isolates_env1_and_matches_fresh_scene_for_50_steps():
    sc, cloth, sand, water = _mixed(2)
    rng = np.random.default_rng(1)
    sand.set_particles_vel(rng.normal(size=(2, sand.n_particles, 3)))
    cloth.set_particles_free([True], particles_idx_local=[4], envs_idx=[1])
    for _ in range(10):
        sc.step()
    before = sc.solver("pbd").get_state()
    sc.reset(envs_idx=[0])
    after = sc.solver("pbd").get_state()
    for k in before:
        np.testing.assert_array_equal(before[k][1], after[k][1])
    fresh, *_ = _mixed(2)
    for _ in range(50):
        sc.step()
        fresh.step()
    a, b = sc.solver("pbd").get_state(), fresh.solver("pbd").get_state()
    for k in a:
        np.testing.assert_array_equal(a[k][0], b[k][0])
    assert not np.array_equal(a["free"][1], b["free"][1])     # env 1 kept its own pinning


def test_checkpoint_continues_bit_exactly(tmp_path):
    sc, cloth, sand, water = _mixed(2)
    water.set_particles_vel(np.full((water.n_particles, 3), 0.3))
    cloth.set_particles_free(False, particles_idx_local=[2], envs_idx=[0])
    for _ in range(5):
        sc.step()
    path = sc.save_checkpoint(tmp_path / "pbd.npz")
    for _ in range(10):
        sc.step()
    ref = sc.solver("pbd").get_state()
    other, *_ = _mixed(2)
    other.load_checkpoint(path)
    for _ in range(10):
        other.step()
    got = other.solver("pbd").get_state()
    for k in ref:
        np.testing.assert_array_equal(ref[k], got[k])


def test_three_envs_equal_three_single_runs_and_capture_is_exact():
    rng = np.random.default_rng(2)
    vel = rng.normal(scale=0.5, size=(3, 25, 3))
    batched, cloth, *_ = _mixed(3, graph_capture=True)
    cloth.set_particles_vel(vel)
    for _ in range(8):
        batched.step()
    end = cloth.get_particles_pos()
    for i in range(3):
        single, c1, *_ = _mixed(1, graph_capture=False, cpu_threads=1)
        c1.set_particles_vel(vel[i:i + 1])
        for _ in range(8):
            single.step()
        np.testing.assert_array_equal(c1.get_particles_pos()[0], end[i])


def test_sampling_closed_mesh_matches_primitive_and_open_mesh_is_refused():
    import trimesh
    from polyphys.plugins.pbd.sampling import sample_volume

    box = trimesh.creation.box(extents=(0.1, 0.08, 0.06))
    from_mesh = sample_volume(morphs.Mesh(vertices=box.vertices, faces=box.faces, pos=(0, 0, 0.5)), 0.02)
    from_box = sample_volume(morphs.Box(size=(0.1, 0.08, 0.06), pos=(0, 0, 0.5)), 0.02)
    assert len(from_mesh) == len(from_box) == 5 * 4 * 3
    np.testing.assert_allclose(np.sort(from_mesh, axis=0), np.sort(from_box, axis=0), atol=1e-12)
    sphere = sample_volume(morphs.Sphere(radius=0.05, pos=(0, 0, 0.5)), 0.01)
    # lattice count ~ sphere volume / spacing³ (523.6) within the surface-layer error
    assert abs(len(sphere) - 523.6) < 0.1 * 523.6
    open_mesh = morphs.Mesh(vertices=box.vertices, faces=box.faces[:-1])
    with pytest.raises(OptionError, match="closed \\(watertight\\)"):
        sample_volume(open_mesh, 0.02)


def test_particle_view_couples_to_a_kinematic_ball_through_the_default_coupler():
    """A kinematic ball ploughs through a layer of sand: the default coupler acts on the PBD
    ParticleView between the two halves of each substep, so the particles in its path are pushed
    ahead (x grows), much more than those beside its path (which the pushed grains jostle)."""
    sc = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=4), pbd=PBDOptions(iterations=2))
    sand = sc.add_entity(morphs.Box(size=(0.2, 0.2, 0.06), pos=(0, 0, 0.03)), PBD().Particle(particle_size=0.02))
    ball = sc.add_entity(morphs.Sphere(radius=0.05, pos=(-0.3, 0, 0.03)), polyphys.materials.Kinematic())
    sc.build()
    if not sc.couplers:
        pytest.skip("no default coupler for ParticleView/RigidView installed")
    ball.set_dofs_velocity([1.0, 0, 0, 0, 0, 0])
    x0 = sand.get_particles_pos()
    for _ in range(40):
        sc.step()
    x = sand.get_particles_pos()
    in_path = np.abs(x0[:, 1]) < 0.03
    far = np.abs(x0[:, 1]) > 0.08
    push = (x[in_path, 0] - x0[in_path, 0]).mean()
    assert push > 0.05
    assert np.abs(x[far, 0] - x0[far, 0]).mean() < push / 3
    assert np.all(np.isfinite(x))
