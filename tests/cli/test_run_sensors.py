"""Sensors in scene files (`[[sensors]]`): readings and ground truth in trajectories.npz, their
description in summary.json, sensors.png, and errors naming the key."""

import os

import numpy as np
import pytest
from polyphys import run as runmod
from polyphys.run import SceneFileError, parse_string

SCENE = """
[sim]
dt = 0.01
substeps = 2
precision = "64"

[[entities]]
name = "box"
morph = { type = "Box", size = [0.2, 0.3, 0.4], pos = [0.3, -0.2, 3.0], euler = [10, 20, 30] }
material = { type = "Rigid" }
init = { set_dofs_velocity = [0.0, 0.0, 0.0, 1.0, 2.0, 3.0] }

[[sensors]]
kind = "imu"
entity = "box"
name = "imu"
link = "box"
offset_pos = [0.05, 0.0, 0.1]
outputs = ["acc", "gyro"]
noise = { gyro = 0.01 }
seed = 3

[[sensors]]
kind = "frame"
entity = "box"
link = "box"
outputs = ["pos"]

[run]
n_envs = 2
steps = 10
"""


def test_scene_file_sensors_are_recorded(tmp_path):
    res = runmod.run_plan(parse_string(SCENE, "s.toml"), out_dir=tmp_path, progress=False)
    t = res.trajectories
    assert t["sensors/box/imu"].shape == (11, 2, 6) and t["sensors/box/frame0"].shape == (11, 2, 3)
    assert np.all(np.isnan(t["sensors/box/imu"][0]))          # step 0: no reading yet
    gyro, truth = t["sensors/box/imu"][1:, :, 3:], t["sensors_truth/box/imu"][1:, :, 3:]
    assert 0.003 < np.std(gyro - truth) < 0.03                  # noise 0.01 on the gyro
    np.testing.assert_array_equal(t["sensors/box/frame0"], t["sensors_truth/box/frame0"])
    # a spinning body with the IMU off its CoM: centripetal specific force, not zero
    assert np.abs(t["sensors/box/imu"][-1, :, :3]).max() > 0.1
    assert res.summary["sensors"]["box/imu"] == {"kind": "imu", "outputs": [["acc", 3, "real"], ["gyro", 3, "real"]],
                                                 "stage": "solve", "in_step": True, "recorded": True}
    saved = np.load(res.files["trajectories"])
    assert "sensors/box/imu" in saved.files
    if "sensors" in res.files:                                  # matplotlib installed
        assert os.path.getsize(res.files["sensors"]) > 1000


@pytest.mark.parametrize("extra,needles", [
    ('[[sensors]]\nkind = "sonar"\nentity = "box"\n', ["sensors[2].kind = 'sonar'", "registered", "imu"]),
    ('[[sensors]]\nkind = "imu"\nentity = "crate"\nlink = "box"\n', ["sensors[2].entity = 'crate'", "['box']"]),
    ('[[sensors]]\nkind = "imu"\nentity = "box"\nsite = "nowhere"\n', ["site = 'nowhere'"]),
    ('[[sensors]]\nkind = "imu"\nentity = "box"\nlink = "box"\nnoise = -1\n', ["sensors[2]", "noise = -1"]),
])
def test_scene_file_sensor_errors(extra, needles, tmp_path):
    text = SCENE.replace("[run]", extra + "\n[run]")
    with pytest.raises(SceneFileError) as info:
        runmod.run_plan(parse_string(text, "s.toml"), out_dir=tmp_path, progress=False, plot=False)
    for n in needles:
        assert n in str(info.value), (n, str(info.value))
