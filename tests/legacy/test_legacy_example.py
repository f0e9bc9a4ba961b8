"""The Legacy coupler's example scene (examples/legacy_sand_and_ball.toml) runs through
`polyphys run` and writes its pictures; `tox -e demo` runs it in full (300 steps)."""

import os

import numpy as np
import pytest
from polyphys import run as runmod

pytest.importorskip("polyphys.plugins.mpm.options")
pytest.importorskip("polyphys.plugins.rigid")

EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                       "examples", "legacy_sand_and_ball.toml")


def test_example_runs_couples_and_writes_snapshots(tmp_path):
    pytest.importorskip("matplotlib")
    res = runmod.run_file(EXAMPLE, out_dir=tmp_path, steps=40, progress=False)
    assert res.summary["scene"]["couplers"] == ["legacy"]
    assert set(res.summary["scene"]["solvers"]) == {"rigid", "mpm"}
    for f in ("plot.png", "snapshots.png", "trajectories.npz", "summary.json"):
        assert os.path.getsize(tmp_path / f) > 0, f
    tr = res.trajectories
    ball, box = tr["ball/get_pos"], tr["box/get_pos"]
    t = tr["time"]
    # 0.16 s of free fall: the ball (dropped from 0.4 m, above the liquid) follows g t²/2
    np.testing.assert_allclose(ball[-1, 2], 0.4 - 0.5 * 9.81 * t[-1] ** 2, atol=2e-3)
    assert abs(box[-1, 2] - box[0, 2]) < 0.02 and np.all(np.isfinite(tr["sand/get_particles_pos"]))


def test_snapshots_key_is_validated(tmp_path):
    text = open(EXAMPLE).read().replace("snapshots = 8", "snapshots = -1")
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(runmod.SceneFileError, match="run.snapshots = -1"):
        runmod.parse_file(str(path))
