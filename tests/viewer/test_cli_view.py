"""`polyphys view` as a command: replay a run folder, step a model file live, and its bad input."""

from __future__ import annotations

import subprocess
import sys

import pytest
from viewer_scenes import run_scene

pytest.importorskip("viser", reason="viser is not installed (pip install 'polyphys[viewer]')")

MJCF = """<mujoco model="drop">
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1" rgba="0.2 0.6 0.3 1"/>
    <body name="box" pos="0.1 -0.2 0.5" euler="20 10 0">
      <freejoint/>
      <geom name="box" type="box" size="0.05 0.04 0.03" rgba="0.9 0.1 0.1 1"/>
    </body>
  </worldbody>
</mujoco>
"""


def _view(*args, timeout=240):
    return subprocess.run([sys.executable, "-m", "polyphys", "view", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_view_replays_a_run_folder_and_steps_a_model_live(tmp_path):
    res = run_scene(tmp_path, steps=10, every=10)
    p = _view(res.out_dir, "--port", "0", "--duration", "0.5")
    assert p.returncode == 0, p.stderr
    assert "replay of 2 records, 2 env(s): open http://127.0.0.1:" in p.stdout
    model = tmp_path / "drop.xml"
    model.write_text(MJCF)
    p = _view(str(model), "--port", "0", "--steps", "5", "--duration", "20", "--n-envs", "3")
    assert p.returncode == 0, p.stderr
    assert "live, 3 env(s): open http://127.0.0.1:" in p.stdout


def test_view_bad_input(tmp_path):
    res = run_scene(tmp_path, steps=1, every=1)
    p = _view(str(tmp_path / "nothing_here"), "--port", "0")
    assert p.returncode == 2 and "no such file or folder" in p.stderr
    (tmp_path / "empty").mkdir()
    p = _view(str(tmp_path / "empty"), "--port", "0")
    assert p.returncode == 2 and "no recorded states" in p.stderr
    p = _view(res.out_dir, "--port", "0", "--color-by", "temperature")
    assert p.returncode == 2 and "colour by 'temperature': unknown field" in p.stderr
    (tmp_path / "x.obj").write_text("v 0 0 0\n")
    p = _view(str(tmp_path / "x.obj"), "--port", "0")
    assert p.returncode == 2 and "not a run folder, scene file (.toml) or model file" in p.stderr
