"""Measurement models (noise, bias, drift, quantization, saturation, delay) and the sensor state:
statistics, exactness, per-env reset, checkpoints, graph capture and partitions, the launch bound."""

import warnings

import numpy as np
import polyphys
import pytest
from polyphys import morphs
from polyphys.errors import PolyphysWarning
from polyphys.materials import Rigid

DT = 0.01


def _falling(n_envs, capture=True, threads=None, precision="64", **sensor):
    """Boxes in free fall, spinning: the accelerometer's truth is 0 (to round-off), the velocity and
    the position change every step (delay checks)."""
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=DT, substeps=2, precision=precision, graph_capture=capture,
                                                   cpu_threads=threads))
    box = scene.add_entity(morphs.Box(size=(0.2, 0.3, 0.4), pos=(0.3, -0.2, 50.0), euler=(10, 20, 30)), Rigid(rho=500))
    s = scene.add_sensor("imu", box, name="imu", link=box.links[0], offset_pos=(0.02, -0.01, 0.03),
                         outputs=("acc", "vel"), **sensor)
    scene.build(n_envs=n_envs)
    if n_envs:
        rng = np.random.default_rng(0)
        box.set_dofs_velocity(rng.normal(size=(n_envs, 6)) * [1, 1, 1, 0, 0, 0])
    return scene, box, s


def test_noise_and_bias_statistics():
    """1000 envs × 100 steps × 3 components of a zero-truth output: mean − bias and the standard
    deviation within 3 % of the set values (3e5 samples: 3 % is > 10 standard errors)."""
    scene, _, s = _falling(1000, noise={"acc": 0.2}, bias={"acc": (0.5, -0.25, 1.0)})
    err = []
    for _ in range(100):
        scene.step()
        err.append(s.read()["acc"] - s.read_ground_truth()["acc"])
    err = np.asarray(err)                                     # (steps, envs, 3)
    bias = np.array([0.5, -0.25, 1.0])
    np.testing.assert_allclose(err.mean(axis=(0, 1)), bias, rtol=0.03)
    np.testing.assert_allclose((err - bias).std(axis=(0, 1)), 0.2, rtol=0.03)
    # independent across envs, steps and components: correlations ~1/√N
    flat = (err - bias).reshape(-1, 3)
    assert np.abs(np.corrcoef(flat.T)[np.triu_indices(3, 1)]).max() < 0.02
    assert abs(np.corrcoef(err[1:, :, 0].ravel(), err[:-1, :, 0].ravel())[0, 1]) < 0.02
    assert abs(np.corrcoef(err[:, 1:, 0].ravel(), err[:, :-1, 0].ravel())[0, 1]) < 0.02
    # the velocity output has no noise: measured == truth
    np.testing.assert_array_equal(s.read()["vel"], s.read_ground_truth()["vel"])


def test_drift_is_a_random_walk_with_the_set_rate():
    """drift σ (unit/√s): the per-step increments of measured − truth are N(0, σ²·dt) (1e5 samples,
    3 %); the walk's variance after k steps grows as k·σ²·dt."""
    sigma = 0.3
    scene, _, s = _falling(1000, drift={"acc": sigma})
    err = []
    for _ in range(100):
        scene.step()
        err.append((s.read()["acc"] - s.read_ground_truth()["acc"])[:, 0])
    err = np.asarray(err)
    inc = np.diff(err, axis=0)
    assert inc.mean() == pytest.approx(0.0, abs=0.03 * sigma * np.sqrt(DT))
    assert inc.std() == pytest.approx(sigma * np.sqrt(DT), rel=0.03)
    assert err[-1].var() == pytest.approx(100 * sigma ** 2 * DT, rel=0.15)     # 1000 samples: ±9 % (2σ)


def test_quantization_and_saturation():
    scene, _, s = _falling(8, noise=0.05, resolution={"acc": 0.1, "vel": 0.0}, limits=({"acc": -0.15}, {"acc": 0.12}))
    for _ in range(30):
        scene.step()
        acc = s.read()["acc"]
        k = acc / 0.1
        assert np.all((np.abs(k - np.round(k)) < 1e-9) | np.isclose(acc, -0.15) | np.isclose(acc, 0.12))
        assert acc.min() >= -0.15 and acc.max() <= 0.12
    sat = _falling(2, bias={"vel": 100.0}, limits=(None, {"vel": 3.0}))
    sat[0].step()
    np.testing.assert_array_equal(sat[2].read()["vel"], 3.0)


def test_noise_is_reproducible_from_the_seed():
    a = _falling(3, noise=0.1, seed=5)
    b = _falling(3, noise=0.1, seed=5)
    c = _falling(3, noise=0.1, seed=6)
    for sc in (a, b, c):
        for _ in range(3):
            sc[0].step()
    np.testing.assert_array_equal(a[2].read().value, b[2].read().value)
    assert not np.array_equal(a[2].read().value, c[2].read().value)
    assert not np.array_equal(a[2].read().value[0], a[2].read().value[1])     # per env streams


def test_split_scenes_with_global_env_offsets_draw_what_one_scene_draws():
    """Two scenes of 2 envs with global offsets 0 and 2 (a ScenePool's workers) read bitwise what one
    scene of 4 envs reads (noise and drift keyed by the global env index); without the offset the
    second scene repeats the first one's streams. Set after a (captured) step, the offset applies
    from the next step on (noise only here: drift accumulates the draws made before)."""
    v = np.random.default_rng(7).normal(size=(4, 6)) * [1, 1, 1, 0, 0, 0]

    def run(kw, late):
        whole, lo, hi, plain = _falling(4, **kw), _falling(2, **kw), _falling(2, **kw), _falling(2, **kw)
        for sc, sl in ((whole, slice(0, 4)), (lo, slice(0, 2)), (hi, slice(2, 4)), (plain, slice(2, 4))):
            sc[1].set_dofs_velocity(v[sl])
        if not late:
            hi[0].set_global_env_offset(2)
        for sc in (whole, lo, hi, plain):
            sc[0].step()
        if late:
            hi[0].set_global_env_offset(2)
        for sc in (whole, lo, hi, plain):
            for _ in range(3):
                sc[0].step()
        split = np.concatenate([lo[2].read().value, hi[2].read().value])
        np.testing.assert_array_equal(split, whole[2].read().value)
        assert not np.array_equal(plain[2].read().value, whole[2].read().value[2:])
        return hi[0]

    run(dict(noise=0.1, drift=0.3, seed=3), late=False)
    hi = run(dict(noise=0.1, seed=3), late=True)
    for bad in (-1, 1.5, True, 2**31):
        with pytest.raises(polyphys.errors.OptionError, match="set_global_env_offset"):
            hi.set_global_env_offset(bad)


def test_delay_returns_the_truth_of_k_steps_earlier_with_tags():
    """delay = 3: each reading is exactly (bitwise) the ground truth of 3 steps earlier; before 3
    steps have passed the oldest reading is returned and the tags say which step it belongs to."""
    scene, _, s = _falling(2, delay=3)
    truth = []
    for n in range(1, 12):
        scene.step()
        truth.append(s.read_ground_truth().value.copy())
        r = s.read()
        k = min(3, n - 1)
        np.testing.assert_array_equal(r.value, truth[n - 1 - k])
        np.testing.assert_array_equal(r.reading_step, n - k)
        np.testing.assert_array_equal(r.step, n)
        np.testing.assert_allclose(r.solved_at, (n - k) * DT - DT / 2)
    # per-env delay (domain randomisation), bounded by the buffer
    s.set_delay([0, 2], envs_idx=[0, 1])
    scene.step()
    truth.append(s.read_ground_truth().value.copy())
    r = s.read()
    np.testing.assert_array_equal(r.value[0], truth[-1][0])
    np.testing.assert_array_equal(r.value[1], truth[-3][1])


def test_delay_with_noise_delays_the_measurement():
    """The noisy measurement is delayed as a whole: the delayed sensor reads, at step n, exactly what
    the same sensor without delay read at step n − 2 (same name and seed: same noise stream)."""
    a = _falling(2, noise=0.1, drift=0.2, delay=2)
    b = _falling(2, noise=0.1, drift=0.2, delay=0, delay_buffer=2)
    hist = []
    for n in range(8):
        a[0].step()
        b[0].step()
        hist.append(b[2].read().value.copy())
        if n >= 2:
            np.testing.assert_array_equal(a[2].read().value, hist[n - 2])


def _run(scene, s, steps):
    return np.array([(scene.step(), s.read().value.copy())[1] for _ in range(steps)])


def test_per_env_reset_resets_exactly_the_named_envs():
    """Noise, drift and delay on 4 envs; reset(envs_idx=[1, 3]) after 10 steps: envs 0 and 2 read
    bitwise what a twin scene without the reset reads; envs 1 and 3 have no reading until the next
    step and their delay buffers start over (the first reading after the reset is of step 1)."""
    kw = dict(noise=0.1, drift=0.3, bias=0.2, delay=2)
    a, b = _falling(4, **kw), _falling(4, **kw)
    _run(a[0], a[2], 10)
    _run(b[0], b[2], 10)
    a[0].reset(envs_idx=[1, 3])
    r = a[2].read()
    assert np.all(np.isnan(r.value[[1, 3]])) and np.all(r.reading_step[[1, 3]] == -1)
    np.testing.assert_array_equal(r.value[[0, 2]], b[2].read().value[[0, 2]])
    ra, rb = _run(a[0], a[2], 6), _run(b[0], b[2], 6)
    np.testing.assert_array_equal(ra[:, [0, 2]], rb[:, [0, 2]])
    r = a[2].read()
    np.testing.assert_array_equal(r.reading_step[[1, 3]], [4, 4])
    st = a[0].get_state()["sensors"]
    assert st["count"].tolist() == [3, 3, 3, 3] and st["tick"].tolist() == [16, 16, 16, 16]


def test_checkpoint_and_state_continue_bit_exactly(tmp_path):
    kw = dict(noise=0.1, drift=0.3, bias=0.2, delay=3, delay_buffer=5)
    a = _falling(3, **kw)
    _run(a[0], a[2], 12)
    a[2].set_bias(0.7, envs_idx=[2])
    path = a[0].save_checkpoint(tmp_path / "ck.npz")
    state = a[0].get_state()
    saved = [a[2].read().value, a[2].read_ground_truth().value]
    ref = _run(a[0], a[2], 8)
    b = _falling(3, **kw)
    b[0].step()                     # b's own last readings differ from the checkpoint's
    b[0].load_checkpoint(path)
    # right after the load the readings are those of the saved scene (measured and truth), bit for bit
    np.testing.assert_array_equal(b[2].read().value, saved[0])
    np.testing.assert_array_equal(b[2].read_ground_truth().value, saved[1])
    np.testing.assert_array_equal(_run(b[0], b[2], 8), ref)
    a[0].reset(state)
    np.testing.assert_array_equal(a[2].read().value, saved[0])
    np.testing.assert_array_equal(_run(a[0], a[2], 8), ref)


@pytest.mark.parametrize("capture,threads", [(False, 1), (True, 2)])
def test_capture_and_partitions_give_identical_readings(capture, threads):
    kw = dict(noise=0.1, drift=0.3, delay=1)
    ref = _falling(5, capture=True, threads=1, **kw)
    other = _falling(5, capture=capture, threads=threads, **kw)
    np.testing.assert_array_equal(_run(*ref[::2], 6), _run(*other[::2], 6))


def _count_launches(monkeypatch, scene, steps=1):
    import warp as wp

    n = [0]
    real = wp.launch

    def counting(*a, **k):
        n[0] += 1
        return real(*a, **k)

    monkeypatch.setattr(wp, "launch", counting)
    for _ in range(steps):
        scene.step()
    monkeypatch.setattr(wp, "launch", real)
    return n[0]


def test_launches_per_step_do_not_grow_with_sensors_or_envs(monkeypatch):
    """Sensors of one kind are one launch (per partition): a step with 20 sensors of 4 kinds on 64
    envs launches as many kernels as one with 4 sensors on 2 envs (uncaptured steps, one thread)."""

    def scene_with(n_sensors, n_envs):
        scene = polyphys.Scene(sim=polyphys.SimOptions(dt=DT, graph_capture=False, cpu_threads=1))
        box = scene.add_entity(morphs.Box(size=(0.2, 0.3, 0.4), pos=(0, 0, 1)), Rigid())
        kinds = ("imu", "frame", "subtree", "contact_force")
        for i in range(n_sensors):
            k = kinds[i % 4]
            kw = {"link": box.links[0]} if k != "frame" else {"link": box.links[0], "outputs": ("pos", "linvel")}
            scene.add_sensor(k, box, noise=0.01 if k != "frame" else 0.0, **kw)
        scene.build(n_envs=n_envs)
        scene.step()        # compile/warm
        return scene

    few = _count_launches(monkeypatch, scene_with(4, 2))
    many = _count_launches(monkeypatch, scene_with(20, 64))
    assert many == few
    plain = polyphys.Scene(sim=polyphys.SimOptions(dt=DT, graph_capture=False, cpu_threads=1))
    plain.add_entity(morphs.Box(size=(0.2, 0.3, 0.4), pos=(0, 0, 1)), Rigid())
    plain.build(n_envs=2)
    plain.step()
    # the sensors' share: a readback, 4 groups, the measurement launch, and the split last substep (+1)
    assert many - _count_launches(monkeypatch, plain) == 1 + 4 + 1 + 1


@pytest.mark.parametrize("contacts", [False, True])
def test_sensors_do_not_change_the_physics(contacts):
    """A scene steps bit-identically with and without sensors (the last substep is split into
    forward / readback / integrate only when a sensor asks: the same arithmetic as the one launch)."""

    def run(with_sensors):
        scene = polyphys.Scene(sim=polyphys.SimOptions(dt=DT, substeps=3, precision="64"))
        box = scene.add_entity(morphs.Box(size=(0.2, 0.3, 0.4), pos=(0.1, 0.2, 0.3 if contacts else 2),
                                          euler=(10, 20, 30)), Rigid())
        if contacts:
            scene.add_entity(morphs.Plane(), Rigid())
        if with_sensors:
            scene.add_sensor("imu", box, link=box.links[0])
            scene.add_sensor("contact_force", box, link=box.links[0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PolyphysWarning)
            scene.build(n_envs=2)
        box.set_dofs_velocity([[0.1, 0.2, 0.3, 1.0, -2.0, 0.5], [0.0, 0.0, 0.0, 0.3, 0.2, 0.1]])
        return np.array([(scene.step(), box.get_qpos().copy())[1] for _ in range(40)])

    np.testing.assert_array_equal(run(True), run(False))
