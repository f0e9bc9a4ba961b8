"""Tool solver: bad input, per-env pose/velocity setters, pose integration, the reaction readback
through the Legacy coupler (scooping MPM sand: weight and momentum balance), targets."""

import numpy as np
import polyphys
import pytest
from polyphys import morphs
from polyphys.errors import OptionError
from polyphys.plugins.mpm.options import MPMOptions

Tool = polyphys.materials.Tool


def quat_mul(a, b):
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array([aw * bw - ax * bx - ay * by - az * bz, aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx, aw * bz + ax * by - ay * bx + az * bw])


def test_bad_input_is_refused_clearly():
    sc = polyphys.Scene()
    with pytest.raises(OptionError, match=r"no solver 'mmp' is registered; registered solvers: \[.*'mpm'"):
        sc.add_entity(morphs.Box(size=(0.1, 0.1, 0.1)), material=Tool(target="mmp"))
    with pytest.raises(OptionError, match="cannot be a tool"):
        sc.add_entity(morphs.Plane(), material=Tool())
    with pytest.raises(OptionError, match="Tool.target"):
        Tool(target=[])
    with pytest.raises(OptionError, match="Tool.coup_restitution"):
        Tool(coup_restitution=2.0)


PLATE = morphs.Box(size=(0.26, 0.22, 0.08), pos=(0.013, -0.021, 0.2), euler=(0, 0, 12))


def _sand_scene(tool_materials, tool_morph=PLATE, **solver_options):
    sc = polyphys.Scene(sim=polyphys.SimOptions(dt=0.004, substeps=5),
                        mpm=MPMOptions(lower_bound=(-0.3, -0.3, -0.09375), upper_bound=(0.3, 0.3, 0.5),
                                       grid_density=32.0, boundary="slip"), **solver_options)
    tools = [sc.add_entity(tool_morph, material=m, name=f"plate{i}") for i, m in enumerate(tool_materials)]
    sand = sc.add_entity(morphs.Box(size=(0.12, 0.1, 0.06), pos=(0.02, -0.01, 0.275)),
                         material=polyphys.materials.MPM.Sand(E=5e4, nu=0.3, rho=1600.0, friction_angle=35.0),
                         name="sand")
    return sc, tools, sand


@pytest.mark.parametrize("target, match", [("sph", r"'sph', which is not in this scene .* \['mpm'\]"),
                                           ("kinematic", "'kinematic', which is not in this scene")])
def test_target_must_be_a_particle_solver_of_the_scene(target, match):
    sc, _, _ = _sand_scene([Tool(target=target)])
    with pytest.raises(OptionError, match=match):
        sc.build()


def test_target_without_particles_and_mixed_targets_are_refused():
    sc, _, _ = _sand_scene([Tool(target="tool")])
    with pytest.raises(OptionError, match=r"'tool', which has no particles"):
        sc.build()
    sc, _, _ = _sand_scene([Tool(target="mpm"), Tool()])
    with pytest.raises(OptionError, match="must share one Tool.target"):
        sc.build()


def test_pose_integration_and_setters_honour_envs_idx():
    """A rotated, off-origin box tool with v and ω per env: after N steps pos = p0 + v·t and
    quat = exp(ω t) ⊗ q0 (exact for constant ω, up to float32 rounding); setters touch only the named envs."""
    sc = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=4))
    t = sc.add_entity(morphs.Box(size=(0.2, 0.1, 0.05), pos=(0.3, -0.2, 0.5), euler=(10, 20, 30)), material=Tool())
    sc.build(n_envs=3)
    q0 = t.get_quat()[0]
    v = np.array([[0.1, -0.2, 0.3], [0.0, 0.0, 0.0], [-0.4, 0.1, 0.05]])
    w = np.array([[0.5, -1.0, 2.0], [0.0, 0.0, 0.0], [0.0, 3.0, 0.0]])
    t.set_velocity(v[[0, 2]], envs_idx=[0, 2])
    t.set_angular_velocity(w[[0, 2]], envs_idx=[0, 2])
    for _ in range(25):
        sc.step()
    T = 0.25
    np.testing.assert_allclose(t.get_pos(), np.array([0.3, -0.2, 0.5]) + v * T, atol=2e-6)
    for e in range(3):
        wn = np.linalg.norm(w[e])
        dq = np.r_[np.cos(wn * T / 2), (np.sin(wn * T / 2) / wn) * w[e]] if wn else np.array([1.0, 0, 0, 0])
        ref = quat_mul(dq, q0)
        got = t.get_quat()[e]
        np.testing.assert_allclose(got * np.sign(got[0] * ref[0]), ref, atol=5e-6)
    t.set_pos([1.0, 2.0, 3.0], envs_idx=[1])
    t.set_euler([0.0, 0.0, 90.0], envs_idx=[1])
    np.testing.assert_allclose(t.get_pos()[1], [1, 2, 3], atol=1e-6)
    np.testing.assert_allclose(t.get_quat()[1], [np.sqrt(0.5), 0, 0, np.sqrt(0.5)], atol=1e-6)
    np.testing.assert_allclose(t.get_pos()[0], np.array([0.3, -0.2, 0.5]) + v[0] * T, atol=2e-6)
    with pytest.raises(OptionError, match="zero quaternion"):
        t.set_quat([0, 0, 0, 0])


def test_scooping_sand_reads_its_weight_and_momentum_balances():
    """Sand (φ = 35°) settles on a rotated, off-centre plate tool, which then lifts it at 5 cm/s: the
    material's force on the tool (the step-mean reaction) is the weight of the sand moving up with it
    within 5 % (a steady lift: no acceleration), pointing down; each step the sand's momentum change
    equals -(tool impulse) + M g dt (the sand touches nothing else) to float32 rounding."""
    sc, (plate,), sand = _sand_scene([Tool(coup_friction=0.5)])
    sc.build()
    m = sc.solver("mpm").particle_mass()
    g, dt = 9.81, 0.004
    for _ in range(75):                      # settle 0.3 s on the still plate
        sc.step()
    plate.set_velocity([0.0, 0.0, 0.05])
    fz = []
    for _ in range(60):
        v0 = sand.get_particles_vel()
        sc.step()
        r = plate.get_reaction()
        v1 = sand.get_particles_vel()
        dp = (m[:, None] * (v1 - v0)).sum(0)
        # float32 velocities: the sums round at ~eps·Σ|m v| (64x margin for the transfers' own rounding)
        bound = 64 * np.finfo(np.float32).eps * np.abs(m[:, None] * v1).sum()
        assert np.abs(dp + r["impulse"] - m.sum() * np.array([0.0, 0.0, -g]) * dt).max() < bound
        fz.append(r["force"][2])
    lifted = sand.get_particles_vel()[:, 2] > 0.025
    weight = m[lifted].sum() * g
    assert lifted.mean() > 0.9
    assert -np.mean(fz[-20:]) == pytest.approx(weight, rel=0.05)
    np.testing.assert_allclose(plate.get_pos(), [0.013, -0.021, 0.2 + 0.05 * 60 * dt], atol=1e-5)


def test_tool_couples_only_with_its_target():
    """With MPM sand and an SPH tank in one scene, a tool targeting "mpm" is coupled to MPM only."""
    from polyphys.plugins.sph import SPHOptions

    sc, _, _ = _sand_scene([Tool(target="mpm")], sph=SPHOptions(particle_size=0.04, lower_bound=(1.0, 0, 0),
                                                                upper_bound=(1.4, 0.24, 0.32)))
    sc.add_entity(morphs.Box(size=(0.12, 0.12, 0.12), pos=(1.1, 0.12, 0.1)), material=polyphys.materials.SPH.Liquid())
    sc.build()
    (legacy,) = sc.couplers
    assert [(r.name, p.name) for r, p, *_ in legacy._pairs] == [("tool", "mpm")]


def test_mesh_tool_carries_the_same_sand_as_the_primitive():
    """A Mesh tool (the plate's 12 triangles, its frame off the mesh's centre) holds the settled sand
    like the primitive box: the same reaction within 2 % (the coupler's grid SDF is exact near flat
    faces, docs/legacy.md)."""
    import trimesh

    box = trimesh.creation.box(extents=(0.26, 0.22, 0.08))
    shift = np.array([0.03, -0.02, 0.01])
    mesh = morphs.Mesh(vertices=np.asarray(box.vertices) + shift, faces=np.asarray(box.faces),
                       pos=tuple(np.array(PLATE.pos) - _rotz(12) @ shift), euler=(0, 0, 12))
    forces = []
    for morph in (PLATE, mesh):
        sc, (plate,), _ = _sand_scene([Tool(coup_friction=0.5)], tool_morph=morph)
        sc.build()
        f = []
        for i in range(75):
            sc.step()
            if i >= 55:
                f.append(plate.get_force()[2])
        forces.append(np.mean(f))
        weight = sc.solver("mpm").particle_mass().sum() * 9.81
    assert forces[1] == pytest.approx(forces[0], rel=0.02)
    assert -forces[1] == pytest.approx(weight, rel=0.05)


def _rotz(deg):
    c, s = np.cos(np.radians(deg)), np.sin(np.radians(deg))
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
