"""Bad inputs through the scene API and scene files (issue 19, items 4 and 5): each is a polyphys
error naming the field, the value and what is allowed, raised before any state changes.

Before the fix: set_pos([1e300, 0, 1]) and apply_links_external_force(1e39) were accepted and
stored as inf (checked in float64, stored in float32); batched setters given strings/dicts/ragged
lists raised numpy's ValueError/TypeError and complex arrays lost their imaginary part silently;
entity calls before build raised AttributeError; SimOptions(dt=None) failed in build with a
TypeError; seed was never validated; build(n_envs=2**62) raised numpy's ValueError;
set_dofs_force_range wrote the lower bound before rejecting the upper; get_jacobian(point=[0, 0])
raised a broadcast error; a non-UTF-8 scene file raised UnicodeDecodeError, wrong setter value
types in ``init`` tracebacks, and ``plugins = ["nope"]`` reported "known materials: []".
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import polyphys
import pytest
from polyphys import morphs
from polyphys.errors import OptionError, PolyphysError, SceneStateError

pytest.importorskip("polyphys.plugins.rigid")


def _rigid(n_envs: int, build: bool = True):
    from polyphys.plugins.rigid.materials import Rigid

    sc = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01))
    box = sc.add_entity(morphs.Box(size=(0.2, 0.3, 0.1), pos=(0.1, -0.2, 1.0), euler=(10, 20, 30)), Rigid(),
                        name="box")
    if build:
        sc.build(n_envs=n_envs)
    return sc, box


def _state(sc) -> dict:
    return {k: v.copy() for k, v in sc.solver("rigid").get_state().items()}


def _unchanged(sc, before) -> None:
    after = _state(sc)
    for k in before:
        np.testing.assert_array_equal(after[k], before[k], err_msg=k)


@pytest.fixture(scope="module", params=[0, 2], ids=["unbatched", "batched"])
def scene(request):
    return _rigid(request.param)


def test_values_outside_the_float32_storage_are_refused(scene):
    sc, box = scene
    before = _state(sc)
    with pytest.raises(OptionError, match=r"pos = \[1e\+300, 0, 1\]: 1e\+300 at index .* outside the float32 "
                                          r"range of this scene's state \(\|x\| <= 3\.403e\+38"):
        box.set_pos([1e300, 0, 1])
    with pytest.raises(OptionError, match="force = .*1e\\+39.*outside the float32 range"):
        box.apply_links_external_force(np.full((1, 3), 1e39))
    with pytest.raises(OptionError, match="velocity = .*outside the float32 range"):
        box.set_dofs_velocity([0, 0, 0, 0, 0, -3.5e38])
    _unchanged(sc, before)
    box.apply_links_external_force(np.full((1, 3), 3e38))    # finite in float32: accepted, twice not
    with pytest.raises(OptionError, match="accumulated value 6e\\+38 is not finite in the float32 storage"):
        box.apply_links_external_force(np.full((1, 3), 3e38))
    with pytest.raises(OptionError, match="accumulated value .* not finite"):    # torque = (p - com) x f
        box.apply_links_external_force(np.array([[0, 0, 1e37]]), pos=np.array([[1e3, 0, 0]]))
    assert np.all(np.isfinite(sc.solver("rigid").get_state()["xfrc_torque"]))
    box.set_dofs_velocity([0, 0, 0, 0, 0, 3.4e38])          # finite in float32: accepted
    assert np.all(np.isfinite(sc.solver("rigid").get_state()["qvel"]))
    sc.reset()


def test_float64_scene_stores_what_float32_cannot():
    from polyphys.plugins.rigid.materials import Rigid

    sc = polyphys.Scene(sim=polyphys.SimOptions(precision="64"))
    box = sc.add_entity(morphs.Box(pos=(0, 0, 1)), Rigid())
    sc.build()
    box.set_pos([1e300, 0, 1])
    assert box.get_pos()[0] == 1e300
    with pytest.raises(OptionError, match="outside the float64 range|NaN/inf"):
        box.set_pos([np.inf, 0, 1])


@pytest.mark.parametrize("value, match", [
    ("abc", "expected real numbers, got strings"),
    ({"x": 1}, "expected real numbers, got a dict"),
    (None, "expected real numbers, got None"),
    ([[0, 0], [1, 2, 3]], "not an array of numbers"),
    ([1j, 0, 1], "complex numbers are not allowed"),
    (np.array([1 + 0j, 0, 1]), "complex numbers are not allowed"),     # even a zero imaginary part
    (["1", "0", "1"], "expected real numbers, got strings"),
    ([2**70, 0, 1], "integers too large for 64 bits"),
])
def test_setters_refuse_non_numbers_batched_and_not(scene, value, match):
    sc, box = scene
    before = _state(sc)
    with pytest.raises(OptionError, match=r"pos = .*" + match):
        box.set_pos(value)
    _unchanged(sc, before)


def test_flags_and_indices(scene):
    sc, box = scene
    before = _state(sc)
    with pytest.raises(OptionError, match=r"zero_velocity = .*expected True or False"):
        box.set_qpos(box.get_qpos(), zero_velocity=np.ones(3))
    with pytest.raises(OptionError, match=r"dofs_idx_local = .*expected an integer index"):
        box.set_dofs_velocity([0.0], dofs_idx_local=[[0], [1, 2]])
    if sc.batched:
        with pytest.raises(OptionError, match=r"envs_idx = .*expected a 1D sequence of integer env indices"):
            box.set_pos([0, 0, 1], envs_idx=[[0], [1, 2]])
    _unchanged(sc, before)


def test_force_range_checks_both_bounds_before_writing(scene):
    sc, box = scene
    lo0 = box.get_dofs_param("force_lo").copy()
    hi0 = box.get_dofs_param("force_hi").copy()
    with pytest.raises(OptionError, match=r"upper = .*NaN/inf"):
        box.set_dofs_force_range([-1.0] * 6, [1, 1, 1, 1, 1, np.nan])
    with pytest.raises(OptionError, match=r"upper has shape \(2,\); expected"):
        box.set_dofs_force_range([-1.0] * 6, [1.0, 2.0])
    np.testing.assert_array_equal(box.get_dofs_param("force_lo"), lo0)       # the lower bound was not written
    np.testing.assert_array_equal(box.get_dofs_param("force_hi"), hi0)


def test_jacobian_point_is_checked(scene):
    sc, box = scene
    with pytest.raises(OptionError, match=r"point has shape \(2,\); expected .*point = \[0, 0\]"):
        box.get_jacobian(0, point=[0, 0])
    J = box.get_jacobian(0, point=[0.1, -0.2, 1.0])
    assert J.shape[-2:] == (6, 6) and np.all(np.isfinite(J))


def test_entity_calls_before_build_are_scene_state_errors():
    sc, box = _rigid(0, build=False)
    for call in (box.get_pos, lambda: box.set_pos([0, 0, 1]), box.get_qpos,
                 lambda: box.set_dofs_velocity(np.zeros(6)), lambda: box.apply_links_external_force(np.zeros((1, 3)))):
        with pytest.raises(SceneStateError, match=r"RigidEntity\.\w+\(\) before build: call scene.build\(\) first"):
            call()
    sc.build()
    box.get_pos()


def test_sim_options_and_build_arguments():
    with pytest.raises(OptionError, match="SimOptions.dt = None: a value is required"):
        polyphys.SimOptions(dt=None)
    with pytest.raises(OptionError, match="SimOptions.substeps = None"):
        polyphys.SimOptions(substeps=None)
    for seed in (-1, 1.5, "7", 2**64, True):
        with pytest.raises(OptionError, match=r"SimOptions.seed = .*integer in \[0, 2\*\*63\)"):
            polyphys.SimOptions(seed=seed)
    with pytest.raises(OptionError, match="SimOptions.gravity = 'abc': expected 3 numbers"):
        polyphys.SimOptions(gravity="abc")
    with pytest.raises(OptionError, match="SimOptions.graph_capture = 1: expected True or False"):
        polyphys.SimOptions(graph_capture=1)
    with pytest.raises(OptionError, match="Sphere.radius = 'x': expected real numbers"):
        morphs.Sphere(radius="x")
    with pytest.raises(OptionError, match="Box.fixed = 'yes': expected True or False"):
        morphs.Box(fixed="yes")
    for n in (2**62, 2**31, -1, 1.0, "2"):
        sc, _ = _rigid(0, build=False)
        with pytest.raises(OptionError, match=r"build\(n_envs=.*\): must be an integer in \[0, 2147483647\]"):
            sc.build(n_envs=n)
    with pytest.raises(OptionError, match=r"unknown plugin name\(s\) \['nope'\]; installed plugins: .*'rigid'"):
        polyphys.Scene(plugins=["nope"])


# -- scene files ------------------------------------------------------------------------------------
BOX = """
[sim]
dt = 0.01
[[entities]]
name = "box"
morph = { type = "Box", size = [0.2, 0.2, 0.2], pos = [0.0, 0.0, 1.0] }
material = { type = "Rigid" }
"""


def _run(tmp_path, text: str | bytes, **kw):
    from polyphys.run import run_file

    path = tmp_path / "scene.toml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_file(path, out_dir=tmp_path / "out", steps=kw.pop("steps", 1), progress=False, plot=False)


@pytest.mark.parametrize("extra, match", [
    ("[run]\nn_envs = 1e12\n", r"run.n_envs = 1000000000000.0: must be an integer >= 0"),
    ("[run]\nn_envs = 1000000000000\n", r"n_envs=1000000000000\): must be an integer in \[0, 2147483647\]"),
    ('[scene]\nplugins = ["nope"]\n', r"unknown plugin name\(s\) \['nope'\]; installed plugins"),
])
def test_scene_file_values(tmp_path, extra, match):
    from polyphys.run import SceneFileError

    with pytest.raises(SceneFileError, match=match):
        _run(tmp_path, extra + BOX)


@pytest.mark.parametrize("init, match", [
    ('{ set_pos = "up" }', "pos = 'up': expected real numbers, got strings"),
    ("{ set_pos = [1, 2] }", r"pos has shape \(2,\); expected \(3,\)"),
    ("{ set_pos = [[1, 2], [3]] }", "not an array of numbers"),
    ("{ set_pos = { x = 1 } }", "unexpected keyword|got an unexpected"),
    ("{ set_pos = [1e300, 0, 1] }", "outside the float32 range"),
    ('{ set_dofs_velocity = [true, false, 1, 0, 0, "a"] }', "expected real numbers"),
])
def test_scene_file_init_setter_values(tmp_path, init, match):
    from polyphys.run import SceneFileError

    with pytest.raises(SceneFileError, match=r"entities\[0\].init.set_\w+ = .*" + match):
        _run(tmp_path, BOX + f"init = {init}\n")


@pytest.mark.parametrize("raw", [b"\xff\xfe\x00\x01binary", "[sim]\ndt = 0.01\n".encode("utf-16"),
                                 BOX.encode() + b"\n# \xe9t\xe9\n"])
def test_scene_file_not_utf8(tmp_path, raw):
    from polyphys.run import SceneFileError

    with pytest.raises(SceneFileError, match="not a UTF-8 text file"):
        _run(tmp_path, raw)


def test_cli_reports_a_binary_scene_file_without_traceback(tmp_path):
    path = tmp_path / "bin.toml"
    path.write_bytes(bytes(range(256)))
    proc = subprocess.run([sys.executable, "-m", "polyphys", "run", str(path), "--no-progress"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert "not a UTF-8 text file" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_scene_file_still_runs(tmp_path):
    res = _run(tmp_path, BOX + "init = { set_pos = [0.1, 0.2, 1.5] }\n", steps=2)
    assert res.summary["steps"] == 2
    assert isinstance(res.summary, dict) and not isinstance(res, PolyphysError)
