"""examples/sap_fem_press.py runs and writes its plot; the floor force ends at the total weight."""

import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_example_writes_plot(tmp_path):
    pytest.importorskip("matplotlib")
    pytest.importorskip("polyphys.plugins.fem")
    path = os.path.join(ROOT, "examples", "sap_fem_press.py")
    spec = importlib.util.spec_from_file_location("sap_fem_press", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    png, floor, on_box, weight, box_weight = mod.main([str(tmp_path), "--steps", "160"])
    assert os.path.getsize(png) > 10_000
    # after 0.8 s the block's residual vibration moves the last substep's forces by ~1-2 %, and the
    # FEM mass damping (hα = 1.5 %) lowers the block's share of the floor force: 3 % and 4 %
    assert abs(floor[-1] / weight - 1.0) < 0.03
    assert abs(on_box[-1] / box_weight - 1.0) < 0.04
