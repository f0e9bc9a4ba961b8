"""Fault tolerance on a real multi-node Ray cluster on one machine (``ray.cluster_utils.Cluster``):
a head without CPUs (only the driver uses it) and two worker nodes of 2 CPUs; the pool spreads its
2 workers over them. Killing a node (its raylet and every process on it, as a lost machine) must
cost nothing: the lost worker is rebuilt on the surviving node from the last pool checkpoint and
replays the log, and every later observation equals the run without the failure, bit for bit
(the reference is one 16-env scene; test_pool_local shows that a pool without failure equals it).
"""

import os

import numpy as np
import pytest
import ray_scenes as rs
from ray_support import OBJECT_STORE, RUNTIME_ENV, import_ray, start_or_skip

ray = import_ray()
OBS = ["arm/get_qpos", "arm/get_dofs_velocity", "box/get_pos", "box/get_quat", "time"]


@pytest.fixture(scope="module")
def cluster():
    from ray.cluster_utils import Cluster

    def start():
        c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False,
                                                          "object_store_memory": OBJECT_STORE})
        try:
            for _ in range(2):
                c.add_node(num_cpus=2, object_store_memory=OBJECT_STORE)
            ray.init(address=c.address, runtime_env=RUNTIME_ENV, log_to_driver=False)
            c.wait_for_nodes()
        except BaseException:
            c.shutdown()
            raise
        return c

    c = start_or_skip(start)
    yield c
    ray.shutdown()
    c.shutdown()


def _nodes(cluster) -> dict:
    return {n.node_id: n for n in cluster.worker_nodes}


def _ensure_two_worker_nodes(cluster) -> None:
    alive = {n["NodeID"] for n in ray.nodes() if n["Alive"]}
    live = [n for n in cluster.worker_nodes if n.node_id in alive]
    for _ in range(2 - len(live)):
        cluster.add_node(num_cpus=2, object_store_memory=OBJECT_STORE)
    cluster.wait_for_nodes()


def _ref_obs(scene) -> dict:
    arm, box = scene.entities[:2]
    return {"arm/get_qpos": arm.get_qpos(), "arm/get_dofs_velocity": arm.get_dofs_velocity(),
            "box/get_pos": box.get_pos(), "box/get_quat": box.get_quat(), "time": scene.get_time()}


def _same(got, want, where):
    for k in want:
        assert np.array_equal(got[k], want[k]), f"{where}: {k} differs by {np.abs(got[k] - want[k]).max()}"


def _step_ref(ref, call, k=3):
    a = rs.actions(16, call)
    for _ in range(k):
        ref.entities[0].set_ctrl(a)
        ref.step()


def _step_both(pool, ref, call, k=3):
    got = pool.step(rs.actions(16, call), k=k)
    _step_ref(ref, call, k)
    return got


def test_node_killed_mid_run_recovers_bit_exact(cluster):
    from polyphys.distributed import ScenePool

    _ensure_two_worker_nodes(cluster)
    pool = ScenePool(rs.arm_and_box, 2, 8, action="arm/set_ctrl", observe=OBS, timeout_s=900, checkpoint_every=9)
    try:
        nodes = pool.worker_nodes()
        assert nodes[0] != nodes[1], "placement='spread' puts the two workers on different nodes"
        ref = rs.arm_and_box(16)
        for call in range(5):                   # 15 steps: an automatic checkpoint at step 9
            _step_both(pool, ref, call)
        assert [e["step"] for e in pool.events if e["event"] == "checkpoint"] == [0, 9]
        victim = nodes[1]
        cluster.remove_node(_nodes(cluster)[victim], allow_graceful=False)   # the machine is gone
        for call in range(5, 9):
            got = _step_both(pool, ref, call)
            _same(got, _ref_obs(ref), f"call {call}, after losing node {victim[:8]}")
        lost = [e for e in pool.events if e["event"] == "worker_lost"]
        rec = [e for e in pool.events if e["event"] == "worker_recovered"]
        assert [e["worker"] for e in lost] == [1] and lost[0]["node_id"] == victim
        assert len(rec) == 1 and rec[0]["node_id"] == nodes[0] and rec[0]["base_generation"] >= 2
        # replayed: the calls since the checkpoint at step 9 (steps 10-12, 13-15) and the one in flight (16-18)
        assert rec[0]["replayed"] == 3
        assert pool.worker_nodes()[1] == nodes[0] and pool.recoveries == 1
        assert np.unique(got["arm/get_qpos"][:, 0]).size == 16
    finally:
        pool.close()


def test_node_killed_during_checkpoint_write_keeps_the_previous_one(cluster, tmp_path):
    """The node of worker 1 dies while the pool writes a checkpoint (after worker 0's shard is
    written, before worker 1's is fetched). At that moment the folder's manifest still names the
    previous generation, and it verifies (every shard's sha256). The save then recovers worker 1
    (from that previous checkpoint plus the log) and commits a new generation; no staging folder
    is left; the run goes on equal to the run without failure."""
    from polyphys.distributed import ScenePool

    _ensure_two_worker_nodes(cluster)
    ck = tmp_path / "ck"
    pool = ScenePool(rs.arm_and_box, 2, 8, action="arm/set_ctrl", observe=OBS, timeout_s=900)
    try:
        nodes = pool.worker_nodes()
        assert nodes[0] != nodes[1]
        ref = rs.arm_and_box(16)
        for call in range(2):
            _step_both(pool, ref, call)
        pool.save_checkpoint(ck)
        first = pool.read_manifest(ck)
        for call in range(2, 4):
            _step_both(pool, ref, call)
        seen = []

        def kill_after_first_shard(w, n):
            seen.append(w)
            if len(seen) == 1:
                assert w == 0
                staging = [d for d in os.listdir(ck) if d.endswith(".tmp")]
                assert len(staging) == 1 and os.listdir(ck / staging[0]) == ["worker-000.npz"]
                cluster.remove_node(_nodes(cluster)[nodes[1]], allow_graceful=False)
                m = pool.read_manifest(ck)            # verifies every shard of the previous checkpoint
                assert m["generation"] == first["generation"] and m["step"] == 6

        pool.save_checkpoint(ck, progress=kill_after_first_shard)
        kinds = [e["event"] for e in pool.events]
        i = kinds.index("checkpoint_aborted")
        assert kinds[i:i + 4] == ["checkpoint_aborted", "worker_lost", "worker_recovered", "checkpoint"]
        rec = pool.events[i + 2]
        assert rec["base_generation"] == first["generation"] and rec["replayed"] == 2
        assert seen == [0, 0, 1]
        new = pool.read_manifest(ck)
        assert new["generation"] > first["generation"] and new["step"] == 12
        assert not [d for d in os.listdir(ck) if d.endswith(".tmp")]
        assert sorted(d for d in os.listdir(ck) if d.startswith("gen-")) == \
            [f"gen-{first['generation']:06d}", f"gen-{new['generation']:06d}"]       # keep_checkpoints=2
        for call in range(4, 6):
            got = _step_both(pool, ref, call)
            _same(got, _ref_obs(ref), f"call {call}")
        # the committed checkpoint continues exactly: back to step 12, redo the steps
        pool.load_checkpoint(ck)
        ref2 = rs.arm_and_box(16)
        for call in range(4):
            _step_ref(ref2, call)
        for call in range(4, 6):
            got = _step_both(pool, ref2, call)
        _same(got, _ref_obs(ref2), "after load_checkpoint")
    finally:
        pool.close()


@pytest.mark.validate
def test_sweep_survives_a_node_loss_with_identical_results(cluster, tmp_path):
    """A sweep whose worker node dies mid-way (after 2 of 8 batches) gives the table of a sweep
    without failure, bit for bit: the batches lost with the worker run again on the other node."""
    from polyphys.distributed.sweeps import load_sweep_file, sweep

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    plan = load_sweep_file(os.path.join(root, "examples", "sweeps", "incline_friction.toml"))
    kw = dict(steps=plan.steps, envs_per_worker=4, n_workers=2, plot=False)
    _ensure_two_worker_nodes(cluster)
    clean = sweep(plan.scene, plan.params, plan.metric, out_dir=tmp_path / "a", **kw)
    _ensure_two_worker_nodes(cluster)
    killed = []

    def kill_once(done, total, batch):
        if done >= 8 and not killed:         # the node that just ran a batch: it holds a worker
            killed.append(batch["node_id"])
            cluster.remove_node(_nodes(cluster)[batch["node_id"]], allow_graceful=False)

    hit = sweep(plan.scene, plan.params, plan.metric, out_dir=tmp_path / "b", progress=kill_once, **kw)
    assert killed and hit.summary["recoveries"] >= 1
    assert set(hit.table["node_id"]) - {killed[0]}          # runs finished on the survivor
    for k in clean.table:
        if k.startswith(("param/", "metric/")) or k in ("run", "seed"):
            assert np.array_equal(clean.table[k], hit.table[k]), k
