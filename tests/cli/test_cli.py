"""The polyphys command: plugins listing, the scene-file runner (`polyphys run`), inspect."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from polyphys import cli
from polyphys import run as runmod
from polyphys.registry import registry
from polyphys.run import SceneFileError, parse_string

PY = sys.executable


def _subprocess(*args, cwd=None, timeout=120):
    env = dict(os.environ)
    env.pop("POLYPHYS_DISABLE_PLUGIN_AUTOLOAD", None)
    return subprocess.run([PY, *args], capture_output=True, text=True, cwd=cwd, timeout=timeout, env=env)


# -- polyphys plugins -------------------------------------------------------------------------------
PROBE = textwrap.dedent("""
    import contextlib, io, json, sys
    from polyphys.cli import main
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["plugins", "--json"])
    from polyphys.registry import registry
    targets = {r.spec.target.partition(":")[0] for k in ("solver", "coupler", "importer", "sensor")
               for r in registry().all(k)}
    heavy = sorted(m for m in sys.modules if m == "warp" or m.startswith("warp.") or m in targets)
    print(json.dumps({"rc": rc, "rows": json.loads(buf.getvalue()), "heavy": heavy,
                      "targets": sorted(targets)}))
""")

KINEMATIC_CAPS = {"batch": True, "reset_envs": True, "checkpoint": True, "differentiable": False,
                  "devices": ["cpu", "cuda"], "tested_devices": ["cpu"], "precisions": ["32", "64"],
                  "deterministic": ["cpu"]}


def test_plugins_json_lists_kinematic_and_imports_no_warp_or_plugin_target():
    proc = _subprocess("-c", PROBE)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["rc"] == 0
    # listing loads the hookimpl modules only: no plugin target (solver/coupler/importer/sensor
    # class module) and no Warp
    assert "polyphys.plugins.kinematic.solver" in out["targets"]
    assert out["heavy"] == [], out["heavy"]
    rows = out["rows"]
    for r in rows:
        assert set(r) == {"kind", "name", "distribution", "version", "entry_point", "capabilities", "notes",
                          "description"}
        assert set(r["capabilities"]) == set(KINEMATIC_CAPS)
    kin = [r for r in rows if r["name"] == "kinematic"]
    assert len(kin) == 1
    assert kin[0]["kind"] == "solver" and kin[0]["distribution"] == "polyphys"
    assert kin[0]["entry_point"] == "kinematic"
    assert kin[0]["capabilities"] == KINEMATIC_CAPS


def test_python_dash_m_polyphys_plugins_json():
    proc = _subprocess("-m", "polyphys", "plugins", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert "kinematic" in [r["name"] for r in rows]


def test_plugins_table_and_markdown(capsys):
    assert cli.main(["plugins"]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[0].split()
    assert header[:4] == ["kind", "name", "distribution", "version"]
    line = next(ln for ln in out.splitlines() if ln.split()[:2] == ["solver", "kinematic"])
    assert line.split()[4:] == ["yes", "yes", "yes", "no", "cpu,cuda", "cpu", "32,64", "cpu"]
    notes = out.split("\nnotes:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    for r in registry().plugin_rows():        # every plugin's Capabilities.notes, one line each
        if r["notes"]:
            assert any(ln.split()[:2] == [r["kind"], r["name"]] and ln.endswith(r["notes"]) for ln in notes), r
    assert cli.main(["plugins", "--markdown"]) == 0
    md = capsys.readouterr().out
    assert "| `kinematic` | solver | yes | yes | yes | no | cpu, cuda | cpu | cpu | 32, 64 |" in md
    assert "`polyphys.materials.Kinematic` | `kinematic`" in md
    # one row per registered solver/coupler/importer/sensor
    n_rows = sum(1 for ln in md.split("\n\n")[0].splitlines()[2:])
    assert n_rows == len(registry().plugin_rows())


# -- polyphys run: the default scene ---------------------------------------------------------------
def test_run_default_composed_scene(tmp_path):
    """The main job: kinematic platform, MPM jelly and a rigid box coupled by the Legacy coupler.
    The box (dropped from 0.45 m) must end caught on top of the jelly, which must rest on the
    platform: nothing falls through, everything finite, momentum exchanged both ways."""
    out = tmp_path / "res"
    proc = _subprocess("-m", "polyphys", "run", "--out", str(out), "--no-progress")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["scene"]["solvers"] == ["kinematic", "rigid", "mpm"]
    assert summary["scene"]["couplers"] == ["legacy"]
    traj = np.load(out / "trajectories.npz")
    box_z = traj["box/get_pos"][:, 2]
    jelly = traj["jelly/get_particles_pos"]
    platform_top = 0.1 + 0.025
    assert np.all(np.isfinite(jelly)) and np.all(np.isfinite(box_z))
    # the jelly stays on the platform (within one grid cell, dx = 1/32 m, of its top face)
    assert jelly[:, :, 2].min() > platform_top - 1 / 32
    jelly_top = jelly[-1, :, 2].max()
    # the box comes to rest on the jelly: its bottom face within a cell of the jelly's top surface
    assert abs((box_z[-1] - 0.03) - jelly_top) < 1 / 32
    assert abs(traj["box/get_vel"][-1, 2]) < 0.05
    assert box_z.min() > jelly_top - 1 / 32                   # never sank through
    assert (out / "plot.png").is_file() or "plot: skipped" in proc.stdout
    # the default scene writes a video of its camera (docs/cameras.md) and a checkpoint of the end state
    assert summary["video"]["frames"] == 100 // 4 + 1 and (out / "checkpoint.npz").is_file()
    assert (out / summary["video"]["file"].split("/")[-1]).is_file()


def test_run_kinematic_example_writes_results_and_the_motion_is_exact(tmp_path):
    out = tmp_path / "res"
    proc = _subprocess("-m", "polyphys", "run", os.path.join(EXAMPLES, "kinematic_primitives.toml"), "--out", str(out),
                       "--steps", "50", "--no-progress")
    assert proc.returncode == 0, proc.stderr
    assert (out / "trajectories.npz").is_file() and (out / "summary.json").is_file()
    try:
        import matplotlib  # noqa: F401

        assert (out / "plot.png").stat().st_size > 1000
    except ImportError:
        assert "plot: skipped" in proc.stdout
    traj = np.load(out / "trajectories.npz")
    summary = json.loads((out / "summary.json").read_text())
    dt = 0.01                                                     # the file's [sim] dt
    t = traj["time"]
    np.testing.assert_array_equal(traj["step"], np.arange(51))
    np.testing.assert_allclose(t, np.arange(51) * dt, rtol=0, atol=1e-12)
    # Kinematic free joints: q' = q + h*v exactly, so pos(t) = pos0 + v t. In float32 each of the
    # 2*50 substep additions rounds by <= ulp(1.4)/2 = 6e-8, so 100 of them stay below 1e-5.
    tol = 1e-5
    np.testing.assert_allclose(traj["box/get_pos"], [0, 0, 1] + np.outer(t, [0.5, 0, 0.2]), atol=tol)
    np.testing.assert_allclose(traj["ball/get_pos"], [0, 1, 0.5] + np.outer(t, [0, -0.3, 0]), atol=tol)
    np.testing.assert_allclose(traj["capsule/get_pos"], [-1, 0, 1] + np.outer(t, [0, 0, -0.2]), atol=tol)
    np.testing.assert_allclose(traj["post/get_pos"], np.tile([1, 0, 0.25], (51, 1)), atol=0)
    np.testing.assert_allclose(traj["box/get_vel"], np.tile([0.5, 0, 0.2], (51, 1)), atol=1e-6)
    # the box spins about its (= world) z at 1.5 rad/s: q = (cos(0.75 t), 0, 0, sin(0.75 t)); the
    # float32 quaternion update error per substep is ~1e-7 (rounding), 100 substeps -> < 1e-5
    q = traj["box/get_quat"]
    np.testing.assert_allclose(q, np.stack([np.cos(0.75 * t), 0 * t, 0 * t, np.sin(0.75 * t)], 1),
                               atol=2e-5)
    assert summary["n_envs"] == 0 and summary["steps"] == 50 and summary["n_records"] == 51
    assert summary["scene"]["solvers"] == ["kinematic"]
    assert [e["name"] for e in summary["scene"]["entities"]] == ["box", "ball", "capsule", "post"]
    assert summary["versions"]["polyphys"]
    tm = summary["timings"]
    assert tm["build_s"] > 0 and tm["env_steps_per_s"] > 0
    assert summary["final"]["box/get_pos"]["all_finite"] is True
    np.testing.assert_allclose(summary["final"]["box/get_pos"]["value"], [0.25, 0, 1.1], atol=tol)
    assert "env-steps/s" in proc.stdout


def test_default_scene_is_package_data():
    path = runmod.default_scene_path()
    assert os.path.isfile(path)
    assert os.path.basename(path) == "default.toml"
    plan = runmod.parse_file(path)
    assert plan.name == "default" and len(plan.entities) == 3


BATCHED = """
[sim]
dt = 0.02
precision = "64"
[[entities]]
name = "cube"
morph = { type = "Box", size = [0.1, 0.1, 0.1], pos = [0.0, 0.0, 1.0] }
material = { type = "Kinematic" }
init = { set_dofs_velocity = [[1.0, 0, 0, 0, 0, 0], [2.0, 0, 0, 0, 0, 0], [3.0, 0, 0, 0, 0, 0]] }
record = ["get_pos", { getter = "get_links_pos", as = "links" }]
[run]
n_envs = 3
steps = 10
record_every = 4
"""


def test_run_batched_per_env_init_and_record_every(tmp_path):
    plan = parse_string(BATCHED, "batched.toml")
    res = runmod.run_plan(plan, out_dir=tmp_path, progress=False, plot=False)
    traj = res.trajectories
    # records: step 0, every 4th step, and the last step
    np.testing.assert_array_equal(traj["step"], [0, 4, 8, 10])
    pos = traj["cube/get_pos"]
    assert pos.shape == (4, 3, 3)
    assert traj["cube/links"].shape == (4, 3, 1, 3)
    t = traj["time"]
    expect_x = np.outer(t, [1.0, 2.0, 3.0])          # float64: exact to rounding
    np.testing.assert_allclose(pos[..., 0], expect_x, atol=1e-12)
    np.testing.assert_allclose(pos[..., 2], 1.0, atol=1e-12)
    assert res.summary["n_envs"] == 3
    assert "plot" not in res.files


def test_progress_bar_writes_to_its_stream():
    import io

    buf = io.StringIO()
    bar = runmod.Progress(10, True, stream=buf, delay=0.0)
    for i in range(1, 11):
        bar.update(i)
    assert "10/10 steps" in buf.getvalue() and buf.getvalue().endswith("\n")
    quick = io.StringIO()
    bar = runmod.Progress(10, True, stream=quick, delay=3600.0)   # a run shorter than the delay
    for i in range(1, 11):
        bar.update(i)
    assert quick.getvalue() == ""
    silent = io.StringIO()
    bar = runmod.Progress(10, False, stream=silent)
    bar.update(10)
    assert silent.getvalue() == ""


# -- malformed scene files ---------------------------------------------------------------------------
ENT = '[[entities]]\nmorph = { type = "Box" }\nmaterial = { type = "Kinematic" }\n'

BAD = [
    ("bogus = 1\n" + ENT, ["bogus = 1", "allowed keys", "entities"]),
    ('[[entities]]\nmorph = { type = "Cube" }\nmaterial = { type = "Kinematic" }\n',
     ["entities[0].morph.type = 'Cube'", "unknown morph type", "Box", "Sphere"]),
    ('[[entities]]\nmorph = { size = [1, 1, 1] }\nmaterial = { type = "Kinematic" }\n',
     ["entities[0].morph.type", "missing", "Box"]),
    ('[[entities]]\nmorph = { type = "Box", sise = [1, 1, 1] }\nmaterial = { type = "Kinematic" }\n',
     ["entities[0].morph.sise = [1, 1, 1]", "unknown field 'sise' of Box", "did you mean 'size'?"]),
    ('[[entities]]\nmorph = { type = "Box", size = [1, -1, 1] }\nmaterial = { type = "Kinematic" }\n',
     ["entities[0].morph", "Box.size", "-1.0", "> 0"]),
    ('[[entities]]\nmorph = { type = "Box" }\nmaterial = { type = "Kinematc" }\n',
     ["entities[0].material.type = 'Kinematc'", "unknown material", "Kinematic"]),
    ('[[entities]]\nmorph = { type = "Box" }\nmaterial = { type = "Kinematic", rho = 3 }\n',
     ["entities[0].material.rho = 3", "unknown field 'rho' of Kinematic", "allowed fields"]),
    ('[[entities]]\nmorph = { type = "Box" }\n', ["entities[0].material", "missing"]),
    ('[[entities]]\nmorph = { type = "Box" }\nmaterial = { type = "Kinematic" }\ncolour = 1\n',
     ["entities[0].colour = 1", "allowed keys", "surface"]),
    ("[sim]\ndt = -1\n" + ENT, ["sim", "SimOptions.dt = -1", "> 0"]),
    ('[sim]\nprecision = "16"\n' + ENT, ["SimOptions.precision = '16'", "'32'", "'64'"]),
    ("[sim]\ndtt = 0.1\n" + ENT, ["sim.dtt = 0.1", "unknown field 'dtt' of SimOptions", "did you mean 'dt'?"]),
    ("[solvers.nosuch]\n" + ENT, ["solvers.nosuch", "unknown solver 'nosuch'", "kinematic"]),
    ("[solvers.kinematic]\nfoo = 1\n" + ENT, ["solvers.kinematic.foo = 1", "KinematicOptions"]),
    (ENT + "[run]\nsteps = -3\n", ["run.steps = -3", "integer >= 0"]),
    (ENT + "[run]\nsteps = 2.5\n", ["run.steps = 2.5", "integer >= 0"]),
    (ENT + "[run]\nn_envs = true\n", ["run.n_envs = True", "integer >= 0"]),
    (ENT + "[run]\nrecord_every = 0\n", ["run.record_every = 0", "integer >= 1"]),
    (ENT + "[run]\nrecord = [\"pos\"]\n", ["run.record[0].getter = 'pos'", "'get_'"]),
    (ENT + "[run]\nrecords = 1\n", ["run.records = 1", "allowed keys", "record"]),
    (ENT + '[run]\nrecord = ["get_pos", "get_pos"]\n', ["run.record = 'get_pos'", "'as'"]),
    ('[[entities]]\nmorph = { type = "Box" }\nmaterial = { type = "Kinematic" }\ninit = { get_pos = 1 }\n',
     ["entities[0].init.get_pos = 1", "set_"]),
    ("[run]\nsteps = 3\n", ["entities = None", "at least one"]),
    ('[scene]\nname = 3\n' + ENT, ["scene.name = 3", "non-empty string"]),
    ('[[entities]]\nmorph = { type = "Box" \n', ["not valid TOML", "line 2"]),
    ('[[entities]]\nmorph = { type = "MJCF", file = "missing.xml" }\nmaterial = { type = "Kinematic" }\n',
     ["entities[0].morph", "MJCF.file", "missing.xml", "no such file"]),
    ('[[entities]]\nname = "a"\nmorph = { type = "Box" }\nmaterial = { type = "Kinematic" }\n'
     '[[entities]]\nname = "a"\nmorph = { type = "Box" }\nmaterial = { type = "Kinematic" }\n',
     ["entities[*].name = 'a'", "unique"]),
]


@pytest.mark.parametrize("text,needles", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_malformed_scene_file_names_key_value_and_allowed(text, needles):
    with pytest.raises(SceneFileError) as info:
        parse_string(text, "bad.toml")
    msg = str(info.value)
    assert msg.startswith("bad.toml: ")
    for n in needles:
        assert n in msg, (n, msg)


@pytest.mark.parametrize("init,needles", [
    ("{ set_dofs_velocity = [1.0, 2.0] }", ["init.set_dofs_velocity = [1.0, 2.0]", "(6,)"]),
    ("{ set_spin = 1.0 }", ["init.set_spin = 1.0", "has no setter 'set_spin'", "set_dofs_velocity"]),
])
def test_bad_init_setter_is_reported_with_key_and_value(init, needles, tmp_path):
    plan = parse_string(f'[[entities]]\nmorph = {{ type = "Box" }}\nmaterial = {{ type = "Kinematic" }}\n'
                        f"init = {init}\n[run]\nsteps = 1\n", "bad.toml")
    with pytest.raises(SceneFileError) as info:
        runmod.run_plan(plan, out_dir=tmp_path, progress=False, plot=False)
    for n in needles:
        assert n in str(info.value), (n, str(info.value))


def test_bad_getter_args_name_the_record_entry(tmp_path):
    plan = parse_string(ENT + '[run]\nsteps = 1\nrecord = [{ getter = "get_links_pos", as = "tip", '
                              'args = { links_idx_local = [7] } }]\n', "bad.toml")
    with pytest.raises(SceneFileError, match=r"bad.toml: record 'get_links_pos' .*/tip'.*links_idx_local.*\[7\]"):
        runmod.run_plan(plan, out_dir=tmp_path, progress=False, plot=False)


def test_unknown_recorded_getter_lists_the_entities_getters(tmp_path):
    plan = parse_string(ENT + '[run]\nsteps = 1\nrecord = ["get_particles_pos"]\n', "bad.toml")
    with pytest.raises(SceneFileError, match=r"run.record = 'get_particles_pos'.*get_pos"):
        runmod.run_plan(plan, out_dir=tmp_path, progress=False, plot=False)


def test_cli_error_is_one_line_on_stderr_with_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[entities]]\nmorph = { type = "Cube" }\nmaterial = { type = "Kinematic" }\n')
    assert cli.main(["run", str(bad), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("polyphys: error: ") and "entities[0].morph.type = 'Cube'" in err[0]
    assert not (tmp_path / "o").exists()
    assert cli.main(["run", str(tmp_path / "nope.toml")]) == 2
    assert "no such scene file" in capsys.readouterr().err
    assert cli.main(["run", "--steps", "x"]) == 2
    assert "--steps" in capsys.readouterr().err
    assert cli.main(["nosuchcommand"]) == 2
    assert "invalid choice" in capsys.readouterr().err
    assert cli.main(["inspect", str(tmp_path / "nope.xml")]) == 2
    assert "no such file" in capsys.readouterr().err


# -- polyphys inspect --------------------------------------------------------------------------------
ARM_XML = """
<mujoco model="arm">
  <worldbody>
    <body name="upper" pos="0 0 0.1">
      <joint name="shoulder" type="hinge" axis="0 1 0"/>
      <geom name="upper_geom" type="capsule" size="0.05 0.25" pos="0 0 0.25" mass="1.0"/>
      <body name="lower" pos="0 0 0.5">
        <joint name="elbow" type="hinge" axis="0 1 0"/>
        <geom name="lower_geom" type="box" size="0.05 0.05 0.2" pos="0 0 0.2" mass="0.5"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="m_shoulder" joint="shoulder"/>
  </actuator>
</mujoco>
"""


def test_inspect_hand_written_mjcf(tmp_path, capsys):
    if not any(".xml" in r.spec.suffixes or "MJCF" in r.spec.morphs for r in registry().all("importer")):
        pytest.skip("no MJCF importer registered yet")
    f = tmp_path / "arm.xml"
    f.write_text(ARM_XML.strip())
    assert cli.main(["inspect", str(f), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["n_qs"] == 2 and d["n_dofs"] == 2
    assert d["total_mass"] == pytest.approx(1.5)
    joints = {j["name"]: j for j in d["joints"]}
    assert joints["shoulder"]["q_start"] == 0 and joints["elbow"]["q_start"] == 1
    names = [lk["name"] for lk in d["links"]]
    assert "upper" in names and "lower" in names
    assert [a["name"] for a in d["actuators"]] == ["m_shoulder"]
    assert cli.main(["inspect", str(f)]) == 0
    text = capsys.readouterr().out
    assert "shoulder" in text and "n_dofs=2" in text


def test_with_plugin_autoload_off_plugins_lists_nothing_and_run_says_why(tmp_path):
    env = dict(os.environ, POLYPHYS_DISABLE_PLUGIN_AUTOLOAD="1")
    proc = subprocess.run([PY, "-m", "polyphys", "plugins", "--json"], capture_output=True, text=True,
                          env=env, timeout=60)
    assert proc.returncode == 0 and json.loads(proc.stdout) == []
    proc = subprocess.run([PY, "-m", "polyphys", "run", "--out", str(tmp_path / "o")], capture_output=True,
                          text=True, env=env, timeout=60)
    assert proc.returncode == 2
    err = [ln for ln in proc.stderr.splitlines() if ln.startswith("polyphys: error:")]
    assert len(err) == 1
    assert "solvers.mpm" in err[0] and "POLYPHYS_DISABLE_PLUGIN_AUTOLOAD" in err[0]


EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        "examples")
EXAMPLE_FILES = sorted(f for f in os.listdir(EXAMPLES) if f.endswith(".toml")) if os.path.isdir(EXAMPLES) else []


@pytest.mark.parametrize("name", EXAMPLE_FILES)
def test_every_example_scene_file_is_valid(name):
    """Parse-only (nothing is built): every examples/*.toml follows the format of examples/README.md.
    Running them is `tox -e demo`."""
    plan = runmod.parse_file(os.path.join(EXAMPLES, name))
    assert plan.entities and plan.steps >= 0
