"""ScenePool and sweep on a real local Ray instance (one per module, 2 CPUs, no dashboard).

Bit-exactness: a pool of 2 workers × 8 envs must give exactly the trajectories of one 16-env scene
given the same per-env actions — the envs do not interact and Warp's CPU kernels are deterministic
(docs/architecture.md: results are bit-identical for any partitioning), so any difference is a bug
in how the pool splits, orders, logs or gathers.
"""

import math
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
import ray_scenes as rs
from polyphys.errors import CheckpointError, OptionError, WorkerError
from ray_support import OBJECT_STORE, RUNTIME_ENV, import_ray, start_or_skip

ray = import_ray()
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OBS = ["arm/get_qpos", "arm/get_dofs_velocity", "box/get_pos", "box/get_quat", "sensors/box/imu",
       "sensors/arm/joints", "time"]


@pytest.fixture(scope="module")
def local_ray():
    # 4 logical CPUs on a 2-core machine: the module's pool holds 2, the error tests start more
    start_or_skip(lambda: ray.init(address="local", num_cpus=4, include_dashboard=False,
                                   object_store_memory=OBJECT_STORE, runtime_env=RUNTIME_ENV, log_to_driver=False))
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def pool(local_ray):
    from polyphys.distributed import ScenePool

    p = ScenePool(rs.arm_and_box, 2, 8, action="arm/set_ctrl", observe=OBS, timeout_s=900)
    yield p
    p.close()


def _ref_obs(scene) -> dict:
    arm, box = scene.entities[:2]
    r = scene.read_sensors()
    return {"arm/get_qpos": arm.get_qpos(), "arm/get_dofs_velocity": arm.get_dofs_velocity(),
            "box/get_pos": box.get_pos(), "box/get_quat": box.get_quat(), "sensors/box/imu": r["box/imu"].value,
            "sensors/arm/joints": r["arm/joints"].value, "time": scene.get_time()}


def _assert_same(got: dict, want: dict, where: str) -> None:
    assert sorted(got) == sorted(want)
    for k in want:
        assert got[k].shape == want[k].shape, (where, k)
        assert np.array_equal(got[k], want[k], equal_nan=True), \
            f"{where}: {k} differs, max |d| = {np.nanmax(np.abs(got[k] - want[k]))}"


def test_pool_2x8_equals_one_scene_of_16_bit_for_bit(pool, tmp_path):
    """Per-env controls changing every call, contacts (arm links and box on the floor), held and
    per-step actions, a reset of envs on both workers, a logged per-env setter, a pool checkpoint
    and its reload: every observation equals the 16-env scene's, bit for bit."""
    assert pool.n_envs == 16 and pool.action_shape == (2,)
    ref = rs.arm_and_box(16)
    arm, box = ref.entities[:2]
    _assert_same(pool.observe(), _ref_obs(ref), "after build")
    for call in range(12):
        a = rs.actions(16, call)
        if call % 3 == 2:                                   # per-step actions: (n_envs, k, 2)
            per = np.stack([a, rs.actions(16, call + 50)], axis=1)
            got = pool.step(per, k=2, per_step=True)
            for i in range(2):
                arm.set_ctrl(per[:, i])
                ref.step()
        else:
            got = pool.step(a, k=3)
            for _ in range(3):
                arm.set_ctrl(a)
                ref.step()
        _assert_same(got, _ref_obs(ref), f"call {call}")
        if call == 4:
            pool.reset([3, 12])                            # one env on each worker
            ref.reset(envs_idx=[3, 12])
            _assert_same(pool.observe(), _ref_obs(ref), "after reset([3, 12])")
        if call == 6:
            fr = np.linspace(0.3, 1.2, 16)[:, None]          # per-env box friction, logged
            pool.set("box/set_friction", fr)
            box.set_friction(fr)
        if call == 7:
            manifest = pool.save_checkpoint(tmp_path / "ck")
            ref.save_checkpoint(tmp_path / "ref.npz")
            saved_obs = _ref_obs(ref)
    # the envs differ (per-env actions), so a swapped or misplaced slice cannot pass
    assert np.unique(got["arm/get_qpos"][:, 0]).size == 16
    # back to the checkpoint: the pool and the reference both continue from it
    pool.load_checkpoint(tmp_path / "ck")
    ref.load_checkpoint(tmp_path / "ref.npz")
    # state getters right after the load (a sensor's reading right after load_checkpoint is not the
    # one it had at save time in a single scene either: compared after the next steps)
    state = [k for k in OBS if not k.startswith("sensors/")]
    _assert_same(pool.observe(state), {k: saved_obs[k] for k in state}, "after load_checkpoint")
    a = rs.actions(16, 99)
    got = pool.step(a, k=4)
    for _ in range(4):
        arm.set_ctrl(a)
        ref.step()
    _assert_same(got, _ref_obs(ref), "after load + 4 steps")
    m = pool.read_manifest(tmp_path / "ck")
    assert m["n_envs"] == 16 and len(m["shards"]) == 2 and os.path.basename(manifest) == "manifest.json"
    assert [s["envs"] for s in m["shards"]] == [[0, 8], [8, 16]]


def test_bad_actions_and_names_are_clear_errors_and_leave_the_pool_unchanged(pool):
    before = pool.observe(["box/get_pos", "arm/get_qpos", "time"])
    with pytest.raises(OptionError, match=r"actions of shape \(16, 3\).*per-env action shape is \(3,\).*\(16, 2\)"):
        pool.step(np.zeros((16, 3)))
    with pytest.raises(OptionError, match=r"actions of shape \(8, 2\).*expected \(n_envs, \*action_shape\) = \(16, 2\)"):
        pool.step(np.zeros((8, 2)))
    with pytest.raises(OptionError, match=r"\(n_envs, k, \*action_shape\)"):
        pool.step(np.zeros((16, 2)), k=3, per_step=True)
    with pytest.raises(OptionError, match="global env indices in 0..15"):
        pool.reset([16])
    with pytest.raises(WorkerError, match=r"(?s)worker 0 .*observe\(\).*OptionError.*'box/get_nothing'.*its getters.*"
                                          r"worker traceback"):
        pool.observe(["box/get_nothing"])
    # a setter refusing its value in the workers: the call is rolled back on every worker
    with pytest.raises(WorkerError, match=r"(?s)set\('box/set_friction'\).*OptionError.*worker traceback"):
        pool.set("box/set_friction", np.full((16, 1), -1.0))
    after = pool.observe(["box/get_pos", "arm/get_qpos", "time"])
    for k in before:
        assert np.array_equal(before[k], after[k])
    assert any(e["event"] == "rolled_back" for e in pool.events)


def test_factory_errors(local_ray):
    from polyphys.distributed import ScenePool

    lock = threading.Lock()

    def holds_a_lock(n_envs):
        with lock:
            return rs.arm_and_box(n_envs)

    with pytest.raises(OptionError, match=r"factory = function .*holds_a_lock: cannot be pickled for the Ray workers"):
        ScenePool(holds_a_lock, 1, 2)
    with pytest.raises(WorkerError) as info:
        ScenePool(rs.broken, 1, 2, timeout_s=600)
    msg = str(info.value)
    assert "worker 0" in msg and "build()" in msg and "OptionError" in msg and "rho" in msg
    assert "--- worker traceback ---" in msg and "ray_scenes.py" in msg and "in broken" in msg
    assert info.value.cause_type == "OptionError" and "Traceback" in info.value.remote_traceback
    with pytest.raises(OptionError, match=r"factory = 42: expected a function"):
        ScenePool(42, 1, 2)
    with pytest.raises(OptionError, match=r"n_envs_per_worker=0"):
        ScenePool(rs.arm_and_box, 1, 0)
    with pytest.raises(OptionError, match=r"resources=.*unknown keys \['cpus'\]"):
        ScenePool(rs.arm_and_box, 1, 2, resources={"cpus": 1})


def test_a_worker_that_does_not_answer_within_timeout_s_counts_as_lost(local_ray):
    """timeout_s: a step that hangs makes its worker count as lost; with max_recoveries=0 that is a
    WorkerLostError naming the call and the timeout (with recoveries allowed, the worker would be
    replaced and the log replayed, as the cluster tests show)."""
    from polyphys.distributed import ScenePool
    from polyphys.errors import WorkerLostError

    p = ScenePool(rs.arm_and_box, 1, 2, action=rs.slow_ctrl, timeout_s=4, max_recoveries=0)
    try:
        p.step(np.zeros((2, 2)))
        with pytest.raises(WorkerLostError, match=r"worker 0 lost \(no answer to step\(k=1\) within 4 s \(timeout_s\)\).*"
                                                  r"max_recoveries=0"):
            p.step(np.full((2, 2), 5e3))
        assert [e["event"] for e in p.events][-1] == "worker_lost"
    finally:
        p.close()


def test_checkpoint_folder_errors(pool, tmp_path):
    with pytest.raises(CheckpointError, match="no pool checkpoint"):
        pool.load_checkpoint(tmp_path / "nothing")
    pool.save_checkpoint(tmp_path / "ck")
    m = pool.read_manifest(tmp_path / "ck")
    shard = tmp_path / "ck" / m["shards"][1]["file"]
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"shard gen-\d+/worker-001.npz sha256 .* differs"):
        pool.load_checkpoint(tmp_path / "ck")


def test_sweep_of_32_frictions_finds_the_stick_slide_boundary(local_ray, tmp_path):
    """examples/sweeps/incline_friction.toml: a box on a 25° incline for 1 s, 32 friction values in
    [0.2, 0.8]. Coulomb: it slides when μ < tan θ = 0.4663, x(1 s) = g(sinθ − μcosθ)/2.

    Checks: (1) every run at least 0.004 from the boundary is on the right side — slid (x > 5 cm)
    iff μ < tan θ; sticking runs only creep (soft friction rows, docs/rigid.md) and slip ~3 mm at the
    start while the contact builds up (the box starts 1 mm deep; ½·g·sinθ·(0.04 s)² ≈ 3.3 mm),
    measured ≤ 2.5 cm even at μ = tanθ + 0.005, sliding ones move ≥ 6.5 cm; (2) the straight line
    through the sliding runs' x(μ) crosses zero at tan θ within 0.005 (the onset slip shifts it by
    3.3 mm / (½·g·cosθ·1 s²) ≈ 0.001); its slope is −½·g·cosθ within 2 %; (3) provenance: each row's
    friction read back from its env equals its parameter, seeds are seed + run, every row names its
    worker, node, pid and versions."""
    from polyphys import __version__
    from polyphys.distributed.sweeps import SweepResult, run_sweep_file

    res = run_sweep_file(os.path.join(ROOT, "examples", "sweeps", "incline_friction.toml"),
                         out_dir=tmp_path / "out", workers=2, progress=False)
    th = math.radians(25.0)
    tan = math.tan(th)
    mu = res.params("box/set_friction")[:, 0]
    x = res.metric("box/get_pos")[:, 0]
    assert res.n_runs == 32 and np.allclose(mu, np.linspace(0.2, 0.8, 32))
    far = np.abs(mu - tan) > 0.004
    slid = x > 0.05
    assert np.array_equal(slid[far], (mu < tan)[far]), list(zip(mu.round(4), x.round(4), strict=True))
    sl = mu < tan - 0.004
    slope, icpt = np.polyfit(mu[sl], x[sl], 1)
    assert abs(-icpt / slope - tan) < 0.005, -icpt / slope
    assert slope == pytest.approx(-0.5 * 9.81 * math.cos(th), rel=0.02)
    # provenance: the parameter reached its env, and each row names where it ran
    np.testing.assert_array_equal(res.metric("box/get_friction")[:, 0, 0], mu)
    np.testing.assert_array_equal(res.table["seed"], np.arange(32))
    assert set(res.table["worker"].tolist()) <= {0, 1} and np.all(res.table["pid"] > 0)
    assert np.all(res.table["polyphys"] == __version__) and all(len(n) > 8 for n in res.table["node_id"])
    row = res.row(20)
    assert row["param/box/set_friction"] == [mu[20]] and row["run"] == 20 and '"plugins"' in row["versions"]
    # the files: one table as .npz and .csv, a plot, a summary
    back = SweepResult.load(res.files["npz"])
    np.testing.assert_array_equal(back.metric("box/get_pos"), res.metric("box/get_pos"))
    header = open(res.files["csv"]).readline().strip().split(",")
    assert header[:4] == ["run", "seed", "param/box/set_friction[0]", "metric/box/get_pos[0]"]
    assert "versions" in header and "node_id" in header
    assert os.path.getsize(res.files["plot"]) > 10_000


def test_sweep_apply_grid_and_batching_do_not_change_results(local_ray):
    """The same runs through an ``apply`` function (plain parameter names, grid of 2 axes), with
    batches of 3 envs on 2 workers (padding in the last batch), equal the setter route's results
    bit for bit: a run's result does not depend on its batch, slot or worker."""
    from polyphys.distributed import grid, sweep

    scene = os.path.join(ROOT, "examples", "rigid_incline.toml")
    p = grid(mu=[0.3, 0.6], rep=[0, 1, 2])                      # 6 runs, mu slowest
    assert p["mu"].tolist() == [0.3] * 3 + [0.6] * 3 and p["rep"].tolist() == [0, 1, 2] * 2
    a = sweep(scene, p, ["box/get_pos", "box/get_friction"], steps=20, apply=rs.set_box_friction,
              envs_per_worker=4, n_workers=2, plot=False)
    b = sweep(scene, {"box/set_friction": p["mu"][:, None]}, ["box/get_pos"], steps=20, envs_per_worker=6,
              n_workers=1, plot=False)
    assert a.table["batch"].tolist() == [0, 0, 0, 0, 1, 1] and b.table["batch"].tolist() == [0] * 6
    np.testing.assert_array_equal(a.metric("box/get_pos"), b.metric("box/get_pos"))
    np.testing.assert_array_equal(a.metric("box/get_friction")[:, 0, 0], p["mu"])
    assert np.array_equal(a.metric("box/get_pos")[0], a.metric("box/get_pos")[2])    # same mu, same result
    assert not np.array_equal(a.metric("box/get_pos")[0], a.metric("box/get_pos")[3])
    with pytest.raises(OptionError, match=r"grid\(mu=...\): expected a non-empty sequence"):
        grid(mu=[])
    with pytest.raises(OptionError, match=r"sweep\(metric=3\)"):
        sweep(scene, p, 3, steps=1)


def test_cli_run_workers_equals_single_process(local_ray, tmp_path, capsys):
    """`polyphys run SCENE --workers 2` writes the trajectories one process writes, bit for bit
    (the scene file's recorded getters and sensors; n_envs = 4 split 2 + 2)."""
    from polyphys import cli
    from polyphys import run as runmod

    src = open(os.path.join(ROOT, "examples", "rigid_incline.toml")).read().replace("n_envs = 0", "n_envs = 4") \
        .replace("steps = 200", "steps = 30\nrecord_every = 7")
    scene_file = tmp_path / "incline4.toml"
    scene_file.write_text(src)
    assert cli.main(["run", str(scene_file), "--workers", "2", "--out", str(tmp_path / "dist"), "--no-progress",
                     "--no-plot"]) == 0
    out = capsys.readouterr().out
    assert "n_envs=4 on 2 workers" in out
    one = runmod.run_file(scene_file, out_dir=tmp_path / "one", progress=False, plot=False)
    dist = np.load(tmp_path / "dist" / "trajectories.npz")
    for key in ("time", "step", "box/get_pos", "box/get_dofs_velocity"):
        assert np.array_equal(dist[key], one.trajectories[key]), key
    assert dist["step"].tolist() == [0, 7, 14, 21, 28, 30]
    assert cli.main(["run", str(scene_file), "--workers", "3", "--no-progress"]) == 2
    assert "positive multiple of 3" in capsys.readouterr().err


def test_cli_sweep_errors(local_ray, tmp_path, capsys):
    from polyphys import cli

    bad = tmp_path / "bad.toml"
    bad.write_text('[sweep]\nscene = "nothere.toml"\nsteps = 3\nmetric = ["box/get_pos"]\n[params]\nx = [1]\n')
    assert cli.main(["sweep", str(bad)]) == 2
    assert "sweep.scene = 'nothere.toml': no such scene file" in capsys.readouterr().err
    bad.write_text(f'[sweep]\nscene = "{ROOT}/examples/rigid_incline.toml"\nsteps = 3\nmetric = ["box/get_pos"]\n'
                   f'[params]\n"box/set_friction" = {{ linspace = [0.1, 0.2] }}\n')
    assert cli.main(["sweep", str(bad)]) == 2
    assert "linspace" in capsys.readouterr().err


def test_importing_polyphys_does_not_import_ray_and_a_missing_extra_is_named():
    code = ("import sys, polyphys, polyphys.distributed as d, polyphys.cli\n"
            "assert 'ray' not in sys.modules, 'ray imported'\n"
            "sys.modules['ray'] = None\n"
            "try:\n    d.ScenePool(lambda n_envs: None, 1, 1)\nexcept Exception as e:\n"
            "    print(type(e).__name__, e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "MissingExtraError" in r.stdout and "pip install 'polyphys[ray]'" in r.stdout
    # an address where no cluster listens fails at once (Ray itself would retry for minutes)
    r = subprocess.run([sys.executable, "-m", "polyphys", "sweep", os.path.join(ROOT, "examples", "sweeps",
                        "incline_friction.toml"), "--address", "127.0.0.1:9", "--no-progress"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "address = '127.0.0.1:9': no Ray cluster answers there" in r.stderr, r.stderr
