"""The third-party sensor of polyphys-ballistic (``ballistic_apex``, docs/writing-a-plugin.md
section 12): registered through its distribution's entry point, its ground truth equals NumPy on the
particles, and core's measurement models, per-env reset and checkpoints work for it unchanged.
Skips when the distribution is not installed."""

import numpy as np
import pytest
from ballistic_helpers import require_ballistic

ballistic = require_ballistic()

import polyphys  # noqa: E402
from polyphys import morphs  # noqa: E402
from polyphys.errors import OptionError  # noqa: E402
from polyphys_ballistic.options import BallisticOptions  # noqa: E402


def _scene(n_envs=3, **sensor):
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=2, precision="64"),
                           ballistic=BallisticOptions(particle_size=0.1))
    ball = scene.add_entity(morphs.Sphere(radius=0.15, pos=(0.2, -0.1, 0.5)),
                            polyphys.materials.Ballistic(restitution=0.8), name="ball")
    s = scene.add_sensor("ballistic_apex", ball, name="apex", **sensor)
    scene.build(n_envs=n_envs)
    ball.set_vel(np.broadcast_to([0.3, 0.0, 2.0], (n_envs, ball.n_particles, 3)) * np.array([1.0, 1.5, 2.0])[:, None, None])
    return scene, ball, s


def test_registered_by_its_distribution():
    rec = polyphys.registry().get("sensor", "ballistic_apex")
    assert rec.provider.distribution == "polyphys-ballistic" and rec.provider.entry_point == "ballistic"


def test_ground_truth_is_the_highest_particle_and_the_fastest():
    scene, ball, s = _scene()
    for _ in range(40):
        scene.step()
        r = s.read_ground_truth()
        pos, vel = ball.get_pos(), ball.get_vel()
        np.testing.assert_array_equal(r["height"][:, 0], pos[..., 2].max(axis=1))
        np.testing.assert_allclose(r["speed"][:, 0], np.linalg.norm(vel, axis=-1).max(axis=1), rtol=1e-14)
        np.testing.assert_allclose(r.query_at, scene.get_time())      # a query of the end state
    assert s.read().value.shape == (3, 2)


def test_core_measurement_models_state_and_checkpoints(tmp_path):
    scene, ball, s = _scene(noise={"height": 0.01}, delay=2)
    for _ in range(10):
        scene.step()
    path = scene.save_checkpoint(tmp_path / "ck.npz")
    ref = [(scene.step(), s.read().value.copy())[1] for _ in range(5)]
    scene2, _, s2 = _scene(noise={"height": 0.01}, delay=2)
    scene2.load_checkpoint(path)
    np.testing.assert_array_equal([(scene2.step(), s2.read().value.copy())[1] for _ in range(5)], ref)
    scene.reset(envs_idx=[1])
    r = s.read()
    assert np.isnan(r.value[1]).all() and not np.isnan(r.value[[0, 2]]).any()


def test_wrong_entity():
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01))
    box = scene.add_entity(morphs.Box(size=(0.1, 0.1, 0.1)), polyphys.materials.Kinematic())
    with pytest.raises(OptionError, match="allowed: an entity with a Ballistic material"):
        scene.add_sensor("ballistic_apex", box)
