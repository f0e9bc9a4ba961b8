"""The SF and Tool example scenes run through `polyphys run` and write their pictures; `tox -e demo`
runs them in full."""

import os

import numpy as np
import pytest
from polyphys import run as runmod

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_smoke_plume_example_rises_and_writes_slices(tmp_path):
    pytest.importorskip("matplotlib")
    res = runmod.run_file(os.path.join(ROOT, "examples", "sf_smoke_plume.toml"), out_dir=tmp_path, steps=24,
                          progress=False)
    assert set(res.summary["scene"]["solvers"]) == {"sf", "kinematic"}
    for f in ("slices.png", "trajectories.npz", "summary.json"):
        assert os.path.getsize(tmp_path / f) > 0, f
    tr = res.trajectories
    d = tr["source/density_slice"]                     # (n_records, nx, nz) on y = 0
    z = np.arange(d.shape[-1])
    top = [(z * (di.sum(0) > 1e-3)).max() for di in d]   # highest cell row holding smoke
    # the source's top is at z = 0.24 m; after 0.48 s the hot smoke reaches > 10 cm above it (cells of 1/32 m)
    assert (top[-1] + 1) / 32 > 0.24 + 0.1 and top[-1] > top[1]
    assert tr["source/solid_slice"][-1].sum() > 10     # the plate's cells are obstacles


def test_tool_press_example_reads_a_growing_reaction(tmp_path):
    pytest.importorskip("matplotlib")
    res = runmod.run_file(os.path.join(ROOT, "examples", "tool_press_sand.toml"), out_dir=tmp_path, steps=40,
                          progress=False)
    assert res.summary["scene"]["couplers"] == ["legacy"]
    assert os.path.getsize(tmp_path / "snapshots.png") > 0
    tr = res.trajectories
    fz, z = tr["tool/get_force"][:, 2], tr["tool/get_pos"][:, 2]
    np.testing.assert_allclose(z, 0.16 - 0.25 * tr["time"], atol=1e-5)     # prescribed motion, not pushed back
    assert fz[0] == 0.0 and fz[-1] > 5.0 and fz[-1] > fz[len(fz) // 2]    # the sand pushes up, harder as it sinks
