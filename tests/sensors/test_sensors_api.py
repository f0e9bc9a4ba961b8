"""The sensor plugin's registration, the add_sensor API, shapes and tags of readings, the rigid
entity's post-solve getters, and the errors for bad input (each naming field, value and what is
allowed)."""

import warnings

import numpy as np
import polyphys
import pytest
from polyphys import morphs
from polyphys.errors import OptionError, PolyphysWarning, SceneStateError
from polyphys.materials import Rigid
from polyphys.registry import registry

KINDS = ("actuator", "contact", "contact_force", "force_torque", "frame", "imu", "joint", "particle_region",
         "subtree", "touch")


def test_every_kind_is_registered_through_the_entry_point():
    recs = {r.name: r for r in registry().all("sensor")}
    assert set(KINDS) <= set(recs)
    for k in KINDS:
        r = recs[k]
        assert r.provider.entry_point == "sensors" and r.provider.distribution == "polyphys"
        assert r.spec.target.startswith("polyphys.plugins.sensors.")
        caps = r.spec.capabilities
        assert caps.batch and caps.reset_envs and caps.checkpoint and caps.precisions == {"32", "64"}
    rows = [row for row in registry().plugin_rows() if row["kind"] == "sensor"]
    assert {row["name"] for row in rows} >= set(KINDS)


def test_plugin_module_is_light():
    import subprocess
    import sys

    code = ("import sys, polyphys; polyphys.registry().all('sensor'); "
            "print(any(m.startswith('warp') for m in sys.modules), "
            "'polyphys.plugins.sensors.rigid' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


def _box_scene(n_envs=0, pos=(0.3, -0.2, 0.6), euler=(10, 20, 30)):
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=2, precision="64"))
    box = scene.add_entity(morphs.Box(size=(0.2, 0.3, 0.4), pos=pos, euler=euler), Rigid(), name="box")
    scene.add_entity(morphs.Plane(), Rigid(), name="ground")
    return scene, box


def test_shapes_names_and_tags_batched_and_unbatched():
    for n_envs in (0, 3):
        scene, box = _box_scene()
        imu = scene.add_sensor("imu", box, link="box", outputs=("gyro", "acc", "mag"))
        frame = scene.add_sensor("frame", box, name="pose", link="box", outputs=("pos", "quat", "zaxis"))
        c = scene.add_sensor("contact", box)
        assert imu.name == "imu0" and frame.full_name == "box/pose" and set(box.sensors) == {"imu0", "pose", "contact0"}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PolyphysWarning)
            scene.build(n_envs=n_envs)
        r = imu.read()
        lead = (n_envs,) if n_envs else ()
        assert r.value.shape == lead + (9,) and np.all(np.isnan(r.value))          # no reading before a step
        assert np.all(np.isnan(r.solved_at)) and np.all(np.asarray(r.reading_step) == -1)
        for _ in range(3):
            scene.step()
        r = imu.read()
        assert r.value.shape == lead + (9,) and r["gyro"].shape == lead + (3,) and r["mag"].shape == lead + (3,)
        assert np.all(r.step == 3) and np.allclose(r.solved_at, 0.03 - 0.005) and np.all(np.isnan(r.query_at))
        p = frame.read()
        q = p["quat"]
        assert np.allclose(np.linalg.norm(q, axis=-1), 1.0)
        assert c.read().value.dtype == bool and c.read().value.shape == lead + (1,)
        readings = scene.read_sensors()
        assert set(readings) == {"box/imu0", "box/pose", "box/contact0"}
        assert scene.sensor("box/pose") is frame


def test_rigid_readback_getters():
    """get_cfrc_int / get_cfrc_ext / get_qfrc_constraint: before any step a fresh query at the
    current state (query_at = now); after steps the last solve (solved_at = t − h); at rest on the
    floor the interaction wrench of a free body is zero and its external wrench carries the weight."""
    scene, box = _box_scene(pos=(0.3, -0.2, 0.21), euler=(0, 0, 30))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build()
    w = box.get_cfrc_ext()
    assert w["force"].shape == (1, 3) and w["query_at"] == 0.0 and np.isnan(w["solved_at"])
    np.testing.assert_allclose(w["force"], 0.0, atol=1e-12)           # in the air: nothing external
    for _ in range(150):
        scene.step()
    m = float(scene.solver("rigid").model.link_mass.numpy()[0, 0])
    ext, cint, qc = box.get_cfrc_ext(), box.get_cfrc_int(), box.get_qfrc_constraint()
    assert ext["solved_at"] == pytest.approx(1.5 - 0.005) and np.isnan(ext["query_at"])
    np.testing.assert_allclose(ext["force"][0], [0, 0, m * 9.81], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(cint["force"][0], 0.0, atol=1e-6 * m * 9.81)
    assert qc["qfrc_constraint"].shape == (6,) and qc["qfrc_constraint"][2] == pytest.approx(m * 9.81, rel=1e-6)
    box.set_pos([0.3, -0.2, 0.6])
    assert box.get_cfrc_ext()["stale"]


def _err(scene_fn, match):
    with pytest.raises(OptionError, match=match):
        scene_fn()


def test_bad_input_errors():
    scene, box = _box_scene()
    # unknown names: the field, the value and the names there are
    scene.add_sensor("imu", box, site="nowhere")
    with pytest.raises(OptionError, match=r"site = 'nowhere'.*no such site; its sites: \[\]"):
        scene.build()
    scene, box = _box_scene()
    scene.add_sensor("frame", box, link="hand")
    with pytest.raises(OptionError, match=r"link = 'hand'.*its links: \['box'\]"):
        scene.build()
    scene, box = _box_scene()
    _err(lambda: scene.add_sensor("imu", box, link="box", noise=-0.1), r"noise = -0\.1: must be >= 0")
    _err(lambda: scene.add_sensor("imu", box, link="box", drift=[0.1, -1, 0, 0, 0, 0]), "drift.*must be >= 0")
    _err(lambda: scene.add_sensor("imu", box, link="box", delay=4, delay_buffer=2),
         r"delay = 4: longer than the delay buffer \(delay_buffer = 2\); allowed 0\.\.2")
    _err(lambda: scene.add_sensor("imu", box, link="box", delay=-1), r"delay = -1: must be an integer >= 0")
    _err(lambda: scene.add_sensor("imu", box, link="box", outputs=("acc", "speed")), r"outputs = .*allowed.*'acc'")
    _err(lambda: scene.add_sensor("imu", box, link="box", colour="red"), r"colour.*allowed arguments: \[.*'site'")
    _err(lambda: scene.add_sensor("imu", link="box"), "needs entity=")
    _err(lambda: scene.add_sensor("sonar", box), r"unknown sensor 'sonar'; known sensors: \[.*'imu'")
    _err(lambda: scene.add_sensor("frame", box, link="box", ref_link="box", outputs=("linacc",)), "world-frame")
    _err(lambda: scene.add_sensor("contact_force", box, link="box", frame="local", outputs=("impulse",)),
         "allowed: frame='world'")
    _err(lambda: scene.add_sensor("frame", box, com="box", outputs=("quat",)), "a CoM is a point")
    scene.add_sensor("imu", box, name="a", link="box")
    _err(lambda: scene.add_sensor("imu", box, name="a", link="box"), "has a sensor of that name")
    s = scene.add_sensor("frame", box, name="q", link="box", outputs=("quat",), noise=0.01)
    with pytest.raises(SceneStateError, match="before scene.build"):
        s.read()
    # quaternion outputs take an angle noise and delay only
    scene2, box2 = _box_scene()
    scene2.add_sensor("frame", box2, link="box", outputs=("quat",), bias=0.1)
    with pytest.raises(OptionError, match="bias on output 'quat' .quat.: a quat output takes noise"):
        scene2.build()
    # run-time setters
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=0)
    with pytest.raises(OptionError, match=r"delay = 3: allowed 0\.\.0 steps"):
        s.set_delay(3)
    with pytest.raises(OptionError, match=r"noise = -1\.0: must be >= 0"):
        s.set_noise(-1.0)
    with pytest.raises(SceneStateError, match="add_sensor after build"):
        scene.add_sensor("imu", box, link="box")


def test_sensor_on_a_solver_without_the_view():
    """An IMU on a kinematic entity (no RigidSensorView) and a region sensor on a rigid entity (no
    particle view): errors naming the solver, the view and what is allowed."""
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01))
    k = scene.add_entity(morphs.Box(size=(0.1, 0.1, 0.1)), polyphys.materials.Kinematic(), name="kin")
    scene.add_sensor("imu", k, link=0)
    with pytest.raises(OptionError, match=r"solver 'kinematic', which does not expose the RigidSensorView.*allowed"):
        scene.build()
    scene, box = _box_scene()
    scene.add_sensor("particle_region", box, lo=(0, 0, 0), hi=(1, 1, 1))
    with pytest.raises(OptionError, match=r"solver 'rigid', which exposes neither ParticleStateView"):
        scene.build()


def test_get_state_and_reset_state_carry_sensor_state():
    scene, box = _box_scene(n_envs=2)
    s = scene.add_sensor("imu", box, link="box", noise=0.1, delay=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=2)
    for _ in range(5):
        scene.step()
    st = scene.get_state()
    assert set(st["sensors"]) == {"truth", "measured", "drift", "buffer", "head", "count", "tick"}
    ref = [(scene.step(), s.read().value.copy())[1] for _ in range(4)]
    scene.reset(st)
    np.testing.assert_array_equal([(scene.step(), s.read().value.copy())[1] for _ in range(4)], ref)
