"""``polyphys run`` videos and ``polyphys render`` pictures (docs/cameras.md, "Videos and pictures")."""

import json
import sys

import numpy as np
import pytest
from polyphys.cli import main
from polyphys.errors import OptionError
from polyphys.run import parse_string, run_plan

SCENE = """
[scene]
name = "drop"
[sim]
dt = 0.02
[[entities]]
name = "floor"
morph = { type = "Plane" }
material = { type = "Rigid" }
[[entities]]
name = "ball"
morph = { type = "Sphere", radius = 0.1, pos = [0.0, 0.0, 0.6] }
material = { type = "Rigid" }
surface = { color = [0.9, 0.3, 0.1, 1.0] }
[[sensors]]
kind = "camera"
name = "side"
pos = [1.2, -1.2, 0.5]
lookat = [0.0, 0.0, 0.35]
resolution = [64, 48]
fov = 45
in_step = false
[run]
steps = 12
checkpoint = true
"""


def _frames(path):
    import imageio

    return np.stack([f for f in imageio.get_reader(path)])


@pytest.mark.parametrize("video, every, size", [
    ('{ camera = "side", fps = 25 }', 2, (64, 48)),
    ('{ fps = 50, camera = { pos = [1.0, -1.0, 0.8], lookat = [0, 0, 0.3], resolution = [48, 32] } }', 1, (48, 32)),
    ("true", 2, (480, 360))])                       # 30 fps by default: round(1 / (30 · 0.02)) = 2
def test_run_writes_a_video_of_the_chosen_camera(tmp_path, video, every, size):
    """A frame after every k-th step (k = round(1 / (fps·dt))), the scene's motion visible in it."""
    pytest.importorskip("imageio_ffmpeg")
    plan = parse_string(SCENE.replace("checkpoint = true", f"checkpoint = true\nvideo = {video}"), "drop.toml")
    res = run_plan(plan, out_dir=tmp_path, progress=False, plot=False)
    v = res.summary["video"]
    assert v["every_steps"] == every and v["frames"] == 12 // every + 1 and v["format"] == "mp4"
    frames = _frames(res.files["video"])
    assert len(frames) == v["frames"] and frames.shape[1:3] == (size[1], size[0])
    assert np.abs(frames[0].astype(int) - frames[-1].astype(int)).max() > 40      # the ball fell
    assert "sensors/side" not in res.trajectories                                  # images go to the video


def test_gif_when_ffmpeg_is_missing_and_a_clear_error_without_imageio(tmp_path, monkeypatch):
    plan = parse_string(SCENE.replace("checkpoint = true", "video = { fps = 25 }"), "drop.toml")
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)
    res = run_plan(plan, out_dir=tmp_path / "a", progress=False, plot=False)
    assert res.files["video"].endswith("video.gif") and res.summary["video"]["format"] == "gif"
    assert len(_frames(res.files["video"])) == res.summary["video"]["frames"]
    monkeypatch.setitem(sys.modules, "imageio", None)
    from polyphys.viewer._extras import MissingExtraError

    with pytest.raises(MissingExtraError, match=r"optional extra 'video': pip install 'polyphys\[video\]'"):
        run_plan(plan, out_dir=tmp_path / "b", progress=False, plot=False)


def test_unknown_video_camera_is_named(tmp_path):
    plan = parse_string(SCENE.replace("checkpoint = true", 'video = { camera = "top" }'), "drop.toml")
    with pytest.raises(OptionError, match=r"run.video.camera = 'top': the scene has no camera sensor of that name; "
                                          r"camera sensors: \['side'\]"):
        run_plan(plan, out_dir=tmp_path, progress=False, plot=False)


def test_render_a_checkpoint_to_png(tmp_path, capsys):
    """``polyphys render RUN_DIR/checkpoint.npz``: the scene named by the run's summary, its end state,
    the automatic camera or a named one; rgb, depth and segmentation pictures."""
    from PIL import Image

    scene_file = tmp_path / "drop.toml"
    scene_file.write_text(SCENE)
    res = run_plan(parse_string(SCENE, str(scene_file)), out_dir=tmp_path / "run", progress=False, plot=False)
    ck = res.files["checkpoint"]
    summ = json.loads((tmp_path / "run" / "summary.json").read_text())
    summ["scene"]["file"] = str(scene_file)
    (tmp_path / "run" / "summary.json").write_text(json.dumps(summ))
    assert main(["render", ck]) == 0
    assert "at step 12" in capsys.readouterr().out
    img = np.asarray(Image.open(tmp_path / "run" / "checkpoint.png"))
    assert img.shape == (360, 480, 3) and img.std() > 10
    out = tmp_path / "side.png"
    assert main(["render", ck, "--camera", "side", "--output", "segmentation", "--out", str(out)]) == 0
    seg = np.asarray(Image.open(out))
    assert seg.shape == (48, 64, 3) and len(np.unique(seg.reshape(-1, 3), axis=0)) >= 2
    assert main(["render", ck, "--output", "heat"]) == 2
    assert "output = 'heat'" in capsys.readouterr().err
    assert main(["render", str(tmp_path / "nope.npz")]) == 2
    assert "no such file" in capsys.readouterr().err
