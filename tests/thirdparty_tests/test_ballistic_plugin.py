"""polyphys-ballistic as a third-party distribution: listed, composed with the kinematic plugin,
stepped, reset per env and checkpointed (issue 2 item 7). Skips when it is not installed."""

import json
import subprocess
import sys

import numpy as np
import pytest
from ballistic_helpers import composed_scene, drive, require_ballistic, states_equal

ballistic = require_ballistic()

import polyphys  # noqa: E402
from polyphys import morphs  # noqa: E402
from polyphys.errors import OptionError  # noqa: E402
from polyphys.views import ParticleView  # noqa: E402


# -- registration ---------------------------------------------------------------------------------
def test_listed_by_registry_with_its_distribution():
    rows = [r for r in polyphys.registry().plugin_rows() if r["name"] == "ballistic"]
    assert len(rows) == 1
    row = rows[0]
    assert row["kind"] == "solver"
    assert row["distribution"] == "polyphys-ballistic"
    assert row["version"] == ballistic.__version__
    assert row["entry_point"] == "ballistic"
    assert row["capabilities"] == {"batch": True, "reset_envs": True, "checkpoint": True,
                                   "differentiable": False, "devices": ["cpu"], "tested_devices": ["cpu"],
                                   "precisions": ["32", "64"], "deterministic": ["cpu"]}
    from polyphys_ballistic.materials import Ballistic

    assert polyphys.materials.Ballistic is Ballistic
    mat = polyphys.registry().get("material", "Ballistic")
    assert mat.spec.solver == "ballistic" and mat.provider.distribution == "polyphys-ballistic"


def test_listing_imports_neither_solver_nor_kernels():
    code = ("import sys, polyphys; rows = polyphys.registry().plugin_rows(); "
            "assert any(r['name'] == 'ballistic' for r in rows), rows; "
            "print(sorted(m for m in sys.modules if m.startswith('polyphys_ballistic')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['polyphys_ballistic']"


def test_listed_by_polyphys_plugins_json():
    out = subprocess.run([sys.executable, "-m", "polyphys", "plugins", "--json"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    rows = [r for r in json.loads(out.stdout) if r["name"] == "ballistic"]
    assert len(rows) == 1
    assert rows[0]["kind"] == "solver" and rows[0]["distribution"] == "polyphys-ballistic"
    assert rows[0]["entry_point"] == "ballistic"
    assert rows[0]["capabilities"]["precisions"] == ["32", "64"]


# -- composition with the kinematic plugin -------------------------------------------------------
def test_composes_with_kinematic_and_steps():
    scene, box, block, ball = composed_scene(n_envs=2, substeps=2)
    assert [s.name for s in scene.solvers] == ["kinematic", "ballistic"]
    caps = scene.capabilities()
    assert caps.batch and caps.reset_envs and caps.checkpoint
    assert caps.devices == frozenset({"cpu"}) and caps.precisions == frozenset({"32", "64"})
    assert not scene.simulator.fast_path      # two solvers: the two-stage substep loop runs
    v = np.array([[0.5, 0.0, 0.0, 0, 0, 0], [0.0, -0.3, 0.0, 0, 0, 0]])
    box.set_dofs_velocity(v)
    z0 = ball.get_pos()[:, :, 2]
    n_steps, g = 10, 9.81
    for _ in range(n_steps):
        scene.step()
    h, n = scene.sim_options.h, n_steps * scene.sim_options.substeps
    # the kinematic box moves by v·t
    np.testing.assert_allclose(box.get_qpos()[:, :3] - [-1.0, 0.0, 0.5], v[:, :3] * n * h, atol=1e-6)
    # the ball (lowest particle 0.3 m above the floor, falls 0.05 m) has not bounced yet: symplectic
    # Euler free fall from rest is exactly z_n = z0 - g h² n(n+1)/2 (float32 rounding: ~1e-6 m)
    np.testing.assert_allclose(ball.get_pos()[:, :, 2], z0 - g * h * h * n * (n + 1) / 2, atol=1e-5)
    np.testing.assert_allclose(ball.get_vel()[:, :, 2], -g * h * n, rtol=1e-5)
    assert np.all(block.get_pos()[:, :, 2] >= 0.05 - 1e-6)    # nothing sinks below the floor


def test_unbatched_scene_has_no_batch_axis():
    scene, box, block, ball = composed_scene(n_envs=0)
    scene.step()
    assert block.get_pos().shape == (27, 3) and ball.get_vel().shape == (19, 3)
    assert block.get_active().shape == (27,) and block.get_active().all()


def test_reset_one_env_isolated_and_equal_to_fresh_scene():
    steps = 15
    scene, *_ = composed_scene(n_envs=2)
    drive(scene, seed=1)
    for _ in range(steps):
        scene.step()
    before = scene.get_state()
    scene.reset(envs_idx=[0])
    after = scene.get_state()
    assert states_equal(before, after, env=1)            # env 1 untouched
    assert not states_equal(before, after, env=0)
    assert list(scene.get_step_count()) == [0, steps]
    # a twin that never reset: env 1 must go on exactly as there
    twin, *_ = composed_scene(n_envs=2)
    drive(twin, seed=1)
    for _ in range(steps):
        twin.step()
    fresh, *_ = composed_scene(n_envs=2)
    for _ in range(steps):
        scene.step()
        twin.step()
        fresh.step()
    s, t, f = scene.get_state(), twin.get_state(), fresh.get_state()
    assert states_equal(s, f, env=0)                     # env 0 == a freshly built scene, bit for bit
    assert states_equal(s, t, env=1)


def test_checkpoint_continues_bit_exactly(tmp_path):
    a, *_ = composed_scene(n_envs=3)
    drive(a, seed=2)
    for _ in range(8):
        a.step()
    path = a.save_checkpoint(tmp_path / "ballistic.npz")
    for _ in range(12):
        a.step()
    b, *_ = composed_scene(n_envs=3)
    b.load_checkpoint(path)
    for _ in range(12):
        b.step()
    assert states_equal(a.get_state(), b.get_state())
    assert list(b.get_step_count()) == [20, 20, 20]
    # reset() after a load restores the checkpoint's registered initial state (zero velocities)
    b.reset()
    assert np.all(b.entities[1].get_vel() == 0)


def test_captured_uncaptured_and_thread_counts_agree_bit_for_bit():
    states = []
    for capture, threads in ((True, 1), (False, 1), (True, 2)):
        scene, *_ = composed_scene(n_envs=3, graph_capture=capture, cpu_threads=threads)
        drive(scene, seed=3)
        for _ in range(10):
            scene.step()
        states.append(scene.get_state())
    assert states_equal(states[0], states[1]) and states_equal(states[0], states[2])


def test_batched_run_equals_single_env_runs():
    n, steps = 3, 10
    rng = np.random.default_rng(4)
    batched, _, block, ball = composed_scene(n_envs=n)
    vb, vs = rng.normal(size=(n, block.n_particles, 3)), rng.normal(size=(n, ball.n_particles, 3))
    block.set_vel(vb)
    ball.set_vel(vs)
    for _ in range(steps):
        batched.step()
    for env in range(n):
        single, _, sblock, sball = composed_scene(n_envs=0)
        sblock.set_vel(vb[env])
        sball.set_vel(vs[env])
        for _ in range(steps):
            single.step()
        assert sblock.get_pos().tobytes() == block.get_pos(envs_idx=[env])[0].tobytes()
        assert sball.get_vel().tobytes() == ball.get_vel(envs_idx=[env])[0].tobytes()


def test_precision_64_state_is_float64():
    scene, _, block, ball = composed_scene(n_envs=2, precision="64")
    st = scene.solver("ballistic").state_arrays()
    assert st["pos"].numpy().dtype == np.float64 and st["vel"].numpy().dtype == np.float64
    z0 = ball.get_pos()[:, :, 2]
    for _ in range(5):
        scene.step()
    n, h = 10, scene.sim_options.h
    # float64: the closed form of symplectic Euler free fall holds to ~1e-15 m
    np.testing.assert_allclose(ball.get_pos()[:, :, 2], z0 - 9.81 * h * h * n * (n + 1) / 2, atol=1e-12)


# -- ParticleView (what the built-in Legacy coupler uses) --------------------------------------------
def test_particle_view_exposes_partition_views_of_the_state():
    import warp as wp

    scene, _, block, ball = composed_scene(n_envs=3, cpu_threads=2)
    solver = scene.solver("ballistic")
    assert isinstance(solver, ParticleView) and solver.view(ParticleView) is solver
    n = block.n_particles + ball.n_particles
    parts = scene.layout.partitions
    assert len(parts) == 2
    for part in parts:
        c = solver.particle_carriers(part)
        assert c.kind == "particles"
        for arr in (c.pos, c.vel, c.mass, c.active):
            assert arr.shape == (part.n_envs, n)
        assert c.active.dtype == wp.int32
        expected = np.r_[[1000.0] * 27, [500.0] * 19] * 0.1 ** 3      # rho · particle_size³
        np.testing.assert_allclose(c.mass.numpy(), np.tile(expected, (part.n_envs, 1)), rtol=1e-6)
        # a coupler writes velocities in place: the solver's state sees it
        c.vel.fill_(wp.vec3(0.0, 0.0, float(part.index + 1)))
    vel = block.get_vel()
    assert np.all(vel[0, :, 2] == 1.0) and np.all(vel[1, :, 2] == 1.0) and np.all(vel[2, :, 2] == 2.0)


def test_velocity_set_between_the_stages_moves_particles_in_that_substep():
    """What a coupler relies on: pre-coupling updates velocities, post-coupling moves by them."""
    import warp as wp

    scene, _, block, ball = composed_scene(n_envs=2, cpu_threads=1)
    solver = scene.solver("ballistic")
    (part,) = scene.layout.partitions
    h = scene.sim_options.h
    x0 = ball.get_pos()
    solver.substep_pre_coupling(0, part)
    np.testing.assert_allclose(ball.get_vel()[..., 2], -9.81 * h, rtol=1e-6)    # gravity only
    solver.particle_carriers(part).vel.fill_(wp.vec3(0.5, 0.0, 2.0))           # "the coupler"
    solver.substep_post_coupling(0, part)
    np.testing.assert_allclose(ball.get_pos() - x0, np.broadcast_to([0.5 * h, 0.0, 2.0 * h], x0.shape),
                               atol=1e-6)


def test_inactive_particles_are_frozen():
    scene, _, block, ball = composed_scene(n_envs=2)
    mask = np.zeros(block.n_particles, bool)
    mask[:5] = True
    block.set_active(mask, envs_idx=[1])
    block.set_vel(np.ones((block.n_particles, 3)), envs_idx=[1])
    p0 = block.get_pos()
    scene.step()
    p1 = block.get_pos()
    assert np.array_equal(p1[1, 5:], p0[1, 5:])          # frozen
    assert not np.array_equal(p1[1, :5], p0[1, :5])
    assert not np.array_equal(p1[0], p0[0])


# -- sampling ----------------------------------------------------------------------------------------
def test_sampling_box_and_sphere_on_a_regular_lattice():
    from polyphys_ballistic.sampling import sample_morph

    box = sample_morph(morphs.Box(size=(0.3, 0.3, 0.3), pos=(1.0, 2.0, 3.0)), 0.1)
    assert box.shape == (27, 3)
    np.testing.assert_allclose(box.mean(axis=0), [1.0, 2.0, 3.0], atol=1e-12)
    np.testing.assert_allclose(np.unique(np.round(box[:, 0], 9)), [0.9, 1.0, 1.1])
    sphere = sample_morph(morphs.Sphere(radius=0.15), 0.1)
    assert sphere.shape == (19, 3)         # 3×3×3 lattice minus its 8 corners (|p| = 0.173 > 0.15)
    assert np.all(np.linalg.norm(sphere, axis=1) <= 0.15 + 1e-12)
    rotated = sample_morph(morphs.Box(size=(0.4, 0.2, 0.2), euler=(0, 0, 90)), 0.1)
    np.testing.assert_allclose(np.ptp(rotated, axis=0), [0.1, 0.3, 0.1], atol=1e-12)


# -- bad input ---------------------------------------------------------------------------------------
def test_bad_input_names_field_value_and_what_is_allowed():
    from polyphys_ballistic.options import BallisticOptions

    with pytest.raises(OptionError, match=r"Ballistic.restitution = 1.5: must be in \[0.0, 1.0\]"):
        polyphys.materials.Ballistic(restitution=1.5)
    with pytest.raises(OptionError, match=r"Ballistic.rho = -1.0: must be a finite number > 0"):
        polyphys.materials.Ballistic(rho=-1.0)
    with pytest.raises(OptionError, match=r"BallisticOptions.particle_size = 0: must be a finite"):
        BallisticOptions(particle_size=0)
    with pytest.raises(OptionError, match=r"BallisticOptions.ground_height = nan: must be a finite"):
        BallisticOptions(ground_height=float("nan"))
    scene = polyphys.Scene(ballistic=BallisticOptions(particle_size=0.1))
    with pytest.raises(OptionError, match=r"morph Capsule cannot be sampled.*allowed morphs: \['Box', "
                                          r"'Sphere'\]"):
        scene.add_entity(morphs.Capsule(), polyphys.materials.Ballistic())
    with pytest.raises(OptionError, match=r"holds no particle at particle_size = 0.1"):
        scene.add_entity(morphs.Sphere(radius=0.02), polyphys.materials.Ballistic())
    with pytest.raises(OptionError, match=r"unknown arguments \['spin'\]"):
        scene.add_entity(morphs.Box(size=(0.2, 0.2, 0.2)), polyphys.materials.Ballistic(), spin=1)
    ent = scene.add_entity(morphs.Box(size=(0.2, 0.2, 0.2)), polyphys.materials.Ballistic())
    scene.build(n_envs=2)
    with pytest.raises(OptionError, match=r"vel has shape \(2, 7, 3\); expected \(2, 8, 3\)"):
        ent.set_vel(np.zeros((2, 7, 3)))
    with pytest.raises(OptionError, match=r"envs_idx contains \[5\]"):
        ent.get_pos(envs_idx=[5])
