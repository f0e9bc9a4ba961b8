"""The viewer's server side without a browser: live mode (scene.add_viewer, run_live), camera
frusta from a camera-like sensor, replay controls, colour by a field, bad input."""

from __future__ import annotations

import threading
import time

import numpy as np
import polyphys
import pytest
from polyphys import morphs
from polyphys.errors import OptionError, SceneStateError
from viewer_scenes import FakeCameraPlugin, run_scene

pytest.importorskip("viser", reason="viser is not installed (pip install 'polyphys[viewer]')")


@pytest.fixture
def camera_plugin():
    plugin = FakeCameraPlugin()
    name = polyphys.register(plugin, name="fake_camera_plugin")
    yield
    polyphys.unregister(name)


def _scene(n_envs):
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=2))
    scene.add_entity(morphs.Plane(), material=polyphys.materials.Rigid(), name="floor")
    box = scene.add_entity(morphs.Box(size=(0.3, 0.2, 0.1), pos=(0.3, -0.2, 0.6), euler=(25, -10, 40)),
                           material=polyphys.materials.Rigid(rho=500.0), name="box")
    return scene, box


def test_add_viewer_follows_the_scene_and_draws_camera_frusta(camera_plugin):
    scene, box = _scene(2)
    scene.add_sensor("fake_camera", pos=(0.5, -1.0, 0.8), quat=(0.9238795, 0.3826834, 0.0, 0.0))
    with pytest.raises(SceneStateError, match="add_viewer"):
        scene.add_viewer(port=0)
    scene.build(n_envs=2)
    v = scene.add_viewer(port=0, shadows=False, max_fps=1000.0)
    try:
        assert v.live and v.url.startswith("http://127.0.0.1:")
        (cam,) = v.content.cameras
        assert cam.fov_y == 60.0 and cam.aspect == pytest.approx(640 / 480)
        h = v._nodes[("c", 0, 0)]
        np.testing.assert_allclose(h.position, (0.5, -1.0, 0.8), atol=1e-6)
        np.testing.assert_allclose(h.wxyz, (0.9238795, 0.3826834, 0.0, 0.0), atol=1e-6)
        pushed = v._frames_pushed
        for _ in range(5):
            scene.step()                       # each step goes through the viewer (scene recorder)
        assert v._frames_pushed == pushed + 5
        geom = v._nodes[("g", 1, 0)]
        from polyphys.viewer.content import geom_world_poses

        f = v.reader.read()
        gp, gq = geom_world_poses(f["b1.pos"][:1], f["b1.quat"][:1], v.content.bodies[1].geoms)
        np.testing.assert_allclose(geom.batched_positions[0], gp[0, 0], atol=1e-6)
        np.testing.assert_allclose(geom.batched_wxyzs[0], gq[0, 0], atol=1e-6)
        # the grid layout: both envs drawn, env 1 moved by one grid spacing along x
        v.set_grid(True)
        geom = v._nodes[("g", 1, 0)]
        assert geom.batched_positions.shape == (2, 3)
        assert geom.batched_positions[1, 0] - geom.batched_positions[0, 0] == pytest.approx(v.spacing, abs=1e-5)
        # run_live steps the scene and reports the rate
        done = v.run_live(duration=1.2)
        assert done > 0 and v.step_rate > 0
        assert "steps/s" in v.status.content and "env-steps/s" in v.status.content
        with pytest.raises(OptionError, match=r"env = 7: the scene has envs 0..1"):
            v.set_env(7)
        with pytest.raises(OptionError, match="show_record: a live viewer"):
            v.show_record(0)
    finally:
        v.close()


def test_live_colour_by_a_particle_getter_and_errors(tmp_path):
    from polyphys import run
    from polyphys import viewer as pv
    from viewer_scenes import write_scene

    scene, _ = run.build_scene(run.parse_file(write_scene(tmp_path, steps=2)))
    with pytest.raises(OptionError, match=r"colour by 'heat': unknown field; fields offered by the scene's "
                                          r"particle getters: \['material', 'C', 'F', 'Jp', 'active', 'vel'\]"):
        pv.live(scene, port=0, color_by="heat")
    v = pv.live(scene, port=0, color_by="Jp", shadows=False)
    try:
        v.set_color_by("vel")
        for _ in range(3):
            scene.step()
        v.update(force=True)
        cols = v._nodes[("p", 0)].colors
        assert cols.shape == (v.content.particles[0].n, 3)
        assert len(np.unique(cols, axis=0)) > 1            # speeds differ: colours differ
        lo, hi = v.field_range
        speed = np.linalg.norm(scene.entities[2].get_particles_vel()[0], axis=-1)
        assert lo == pytest.approx(speed.min(), rel=1e-5, abs=1e-7) and hi == pytest.approx(speed.max(), rel=1e-5)
        v.set_color_by("material")
        assert np.array_equal(v._nodes[("p", 0)].colors, np.array([38, 76, 242], np.uint8))
    finally:
        v.close()


def test_replay_controls(tmp_path):
    from polyphys import viewer as pv

    res = run_scene(tmp_path, steps=20, every=10)
    v = pv.replay(res.out_dir, port=0, color_by="vel", shadows=False)
    try:
        assert not v.live and v.recording.n_records == 3
        v.show_record(2)
        f = v.recording.frame(2)
        np.testing.assert_allclose(v._nodes[("p", 0)].points, f["p0.pos"][0], atol=0)
        v.set_env(1)
        np.testing.assert_allclose(v._nodes[("p", 0)].points, f["p0.pos"][1], atol=0)
        with pytest.raises(OptionError, match=r"record 3: the recording has records 0..2"):
            v.show_record(3)
        # play: serve() advances the records in a loop at play fps while play is ticked
        v.show_record(0)
        v.play.value = True
        v.playing = True
        v.play_fps.value = 20
        seen = set()
        th = threading.Thread(target=v.serve, kwargs={"duration": 1.0})
        th.start()
        while th.is_alive():
            seen.add(v.record_index)
            time.sleep(0.01)
        th.join()
        assert seen == {0, 1, 2}
        assert v.slider.value == v.record_index
        with pytest.raises(OptionError, match="update\\(\\): only a live viewer"):
            v.update()
    finally:
        v.close()
    with pytest.raises(OptionError, match=r"env = 2: the scene has envs 0..1"):
        pv.replay(res.out_dir, port=0, env=2)
    with pytest.raises(OptionError, match=r"port = 70000: must be an integer in 0..65535"):
        pv.replay(res.out_dir, port=70000)
