"""Graph capture, CPU worker threads and checkpoints: all bit-identical to the plain path."""

import numpy as np
import polyphys
import pytest
import warp as wp
from polyphys import SimOptions, morphs
from polyphys.errors import CapabilityError, CheckpointError


def _run(rec, steps=20, n_envs=5, **sim):
    sc = polyphys.Scene(sim=SimOptions(dt=0.01, substeps=3, **sim), coupler="rec_coupler")
    a = sc.add_entity(morphs.Box(), material=rec.RecA())
    b = sc.add_entity(morphs.Box(), material=rec.RecB())
    sc.build(n_envs=n_envs)
    a.set_v(np.arange(n_envs * 3, dtype=float).reshape(n_envs, 3) * 0.1)
    b.set_v(-np.arange(n_envs * 3, dtype=float).reshape(n_envs, 3) * 0.2)
    for _ in range(steps):
        sc.step()
    return sc, a, b


@pytest.mark.parametrize("precision", ["32", "64"])
def test_captured_equals_uncaptured(rec, precision):
    _, a1, b1 = _run(rec, graph_capture=False, cpu_threads=1, precision=precision)
    _, a2, b2 = _run(rec, graph_capture=True, cpu_threads=1, precision=precision)
    np.testing.assert_array_equal(a1.get_x(), a2.get_x())
    np.testing.assert_array_equal(b1.get_x(), b2.get_x())


def test_threads_equal_one_thread(rec):
    sc1, a1, b1 = _run(rec, graph_capture=True, cpu_threads=1)
    sc2, a2, b2 = _run(rec, graph_capture=True, cpu_threads=2)
    assert len(sc2.layout.partitions) == 2 and len(sc1.layout.partitions) == 1
    np.testing.assert_array_equal(a1.get_x(), a2.get_x())
    np.testing.assert_array_equal(b1.get_x(), b2.get_x())
    sc3, a3, _ = _run(rec, graph_capture=False, cpu_threads=2)
    np.testing.assert_array_equal(a1.get_x(), a3.get_x())


def test_more_partitions_than_threads_equal_one_thread(rec):
    """cpu_partitions_per_thread: 2 threads take 5 one-env partitions in turn, captured and not."""
    sc1, a1, b1 = _run(rec, graph_capture=True, cpu_threads=1)
    for capture in (True, False):
        sc, a, b = _run(rec, graph_capture=capture, cpu_threads=2, cpu_partitions_per_thread=3)
        assert len(sc.layout.partitions) == 5 and sc.layout.threads == 2
        assert all(p.workers == 1 for p in sc.layout.partitions)
        np.testing.assert_array_equal(a1.get_x(), a.get_x())
        np.testing.assert_array_equal(b1.get_x(), b.get_x())


def test_split_envs_partitions_per_thread():
    """Partitions per thread: tiles of the envs, one worker each; the automatic count keeps 64 envs or
    more per partition, up to 8 per thread; fewer envs than threads keep the workers within partitions."""
    from polyphys.layout import partitions_per_thread, split_envs

    parts = split_envs(10, 2, 3)
    assert [(p.start, p.stop, p.workers) for p in parts] == [(0, 2, 1), (2, 4, 1), (4, 6, 1), (6, 8, 1), (8, 9, 1),
                                                            (9, 10, 1)]
    assert len(split_envs(3, 2, 8)) == 3
    assert [(p.start, p.stop, p.workers) for p in split_envs(1, 3, 4)] == [(0, 1, 3)]
    assert [partitions_per_thread(n, t, None) for n, t in ((64, 2), (255, 2), (256, 2), (1024, 2), (4096, 2),
                                                           (1024, 1))] == [1, 1, 2, 8, 8, 1]
    assert partitions_per_thread(64, 2, 5) == 5


def test_a_failing_partition_raises_after_every_partition_ran():
    """The threads taking partitions in turn: every partition runs once, the calling thread takes some,
    and a partition's error is raised once all have finished."""
    import threading

    from polyphys.layout import split_envs
    from polyphys.simulator import Simulator

    sim = Simulator.__new__(Simulator)
    sim.parts, sim._n_threads = split_envs(12, 3, 4), 3
    import concurrent.futures as cf

    sim._pool = cf.ThreadPoolExecutor(3)
    seen, lock = [], threading.Lock()

    def fn(i, part):
        with lock:
            seen.append((i, threading.get_ident()))
        if i == 4:
            raise ValueError("partition 4")

    with pytest.raises(ValueError, match="partition 4"):
        sim._run_parts(fn)
    assert sorted(i for i, _ in seen) == list(range(12))
    sim._pool.shutdown()


def test_replay_issues_no_python_launch(rec, monkeypatch):
    sc, a, b = _run(rec, steps=3, graph_capture=True, cpu_threads=2)
    calls = {"n": 0}
    real = wp.launch

    def counting(*args, **kw):
        calls["n"] += 1
        return real(*args, **kw)

    monkeypatch.setattr(wp, "launch", counting)
    rec.CALLS.clear()
    x0 = a.get_x()
    for _ in range(5):
        sc.step()
    assert calls["n"] == 0 and rec.CALLS == []       # no launch, no solver method ran
    assert not np.array_equal(a.get_x(), x0)         # ... and yet the state advanced


def test_checkpoint_round_trip_bit_exact(rec, tmp_path):
    sc, a, b = _run(rec, steps=7)
    path = sc.save_checkpoint(tmp_path / "ck.npz")
    for _ in range(11):
        sc.step()
    ref_a, ref_b, ref_t = a.get_x(), b.get_x(), sc.get_time()
    sc.load_checkpoint(path)
    np.testing.assert_array_equal(sc.get_step_count(), [7] * 5)
    for _ in range(11):
        sc.step()
    np.testing.assert_array_equal(a.get_x(), ref_a)
    np.testing.assert_array_equal(b.get_x(), ref_b)
    np.testing.assert_array_equal(sc.get_time(), ref_t)
    # a freshly built identical scene loads it too
    sc2, a2, b2 = _run(rec, steps=0)
    sc2.load_checkpoint(path)
    for _ in range(11):
        sc2.step()
    np.testing.assert_array_equal(a2.get_x(), ref_a)


def test_checkpoint_from_another_scene_is_refused(rec, tmp_path):
    sc, a, b = _run(rec, steps=1)
    path = sc.save_checkpoint(tmp_path / "ck.npz")
    other, _, _ = _run(rec, steps=0, n_envs=4)
    with pytest.raises(CheckpointError, match="n_envs = 5.*has 4"):
        other.load_checkpoint(path)
    other2, _, _ = _run(rec, steps=0, precision="64")
    with pytest.raises(CheckpointError, match="precision"):
        other2.load_checkpoint(path)
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="not a polyphys checkpoint"):
        sc.load_checkpoint(bad)


def test_reset_state_registers_it(rec):
    sc, a, b = _run(rec, steps=4)
    st = sc.get_state()
    for _ in range(3):
        sc.step()
    sc.reset(st)
    np.testing.assert_array_equal(a.get_x(), st["solvers"]["rec_a"]["x"])
    for _ in range(3):
        sc.step()
    sc.reset()                                         # back to the registered state, not build's
    np.testing.assert_array_equal(a.get_x(), st["solvers"]["rec_a"]["x"])
    np.testing.assert_array_equal(sc.get_step_count(), [0] * 5)


def test_capability_errors(rec, tmp_path):
    from polyphys.specs import Capabilities, MaterialSpec, SolverSpec

    class Weak:
        @polyphys.hookimpl
        def polyphys_solvers(self):
            return [SolverSpec(name="weak", target="recording_plugin:RecASolver",
                               capabilities=Capabilities(batch=False))]

        @polyphys.hookimpl
        def polyphys_materials(self):
            return [MaterialSpec(name="WeakMat", target="recording_plugin:RecA", solver="weak")]

    w = Weak()
    polyphys.register(w, name="weak")
    try:
        def scene(**sim):
            sc = polyphys.Scene(sim=SimOptions(**sim), plugins=["weak"])
            sc.add_entity(morphs.Box(), material=rec.RecA())
            return sc

        with pytest.raises(CapabilityError, match="'weak'.*'batch'"):
            scene().build(n_envs=2)
        with pytest.raises(CapabilityError, match="'weak'.*precisions=64"):
            scene(precision="64").build()
        sc = scene()
        sc.build()
        with pytest.raises(CapabilityError, match="'weak'.*'checkpoint'"):
            sc.save_checkpoint(tmp_path / "x.npz")
        assert sc.capabilities().checkpoint is False
    finally:
        polyphys.unregister(w)


@pytest.mark.parametrize("workers, n, grain", [(1, 10, 1), (3, 10, 1), (3, 2, 1), (3, 10, 4), (3, 9000, 4096), (4, 7, 8)])
def test_partition_chunks_tile_the_range_with_shares_of_at_least_grain(workers, n, grain):
    """A worker's share of a stage: the shares tile [0, n) in worker order, the non-empty ones are
    at least ``grain`` long (or the whole range) and differ by at most one; workers past them get
    an empty share."""
    from polyphys.layout import Partition

    shares = Partition(0, 0, 1, workers).chunks(n, grain)
    assert len(shares) == workers
    flat = [i for a, b in shares for i in range(a, b)]
    assert flat == list(range(n))
    sizes = [b - a for a, b in shares if b > a]
    assert max(sizes) - min(sizes) <= 1
    assert min(sizes) >= min(grain, n)
    assert len(sizes) == max(1, min(workers, n // grain))


def test_a_stage_after_its_tagged_predecessor_joins_its_segment():
    """Captured parallel stages (core/simulator.py): ``after=tag`` right after the stage tagged
    ``tag`` adds each worker's graph to that segment (one barrier); a launch in between, another
    tag or no tag keeps them apart; the replayed program writes what the stages launch."""
    from polyphys.kernels import binsort as K
    from polyphys.layout import Partition
    from polyphys.simulator import _Helpers, _prepare, _run_program, _Stage, _StageRunner, run_stage

    part, dev, nk = Partition(0, 0, 1, 2), "cpu", 7
    counts = wp.full((1, 2, nk), 5, dtype=wp.int32, device=dev)
    other = wp.full((1, 1, 1), 3, dtype=wp.int32, device=dev)

    def zero(k0, n):                  # worker w zeroes counts[0, w, k0:k0 + n]
        return lambda w: wp.launch(K.zero_counts, dim=(1, n), inputs=[w, k0], outputs=[counts], device=dev)

    def record(step):
        with wp.ScopedDevice(dev):
            return _StageRunner(part, dev, "capture").record(step)

    def joined(prog):
        return [len(s.graphs[0]) for s in prog if isinstance(s, _Stage)]

    def fused():
        run_stage(part, zero(0, 2), tag="rows")
        run_stage(part, zero(2, 2), tag="rows", after="rows")
        run_stage(part, zero(4, 3), after="rows")

    prog = record(fused)
    assert joined(prog) == [3] and len(prog) == 1
    assert np.all(counts.numpy() == 5)                      # captured, not run
    helpers = _Helpers(1, "test")
    try:
        _run_program(_prepare(prog, part.workers, dev), helpers)
    finally:
        helpers.close()
    assert np.all(counts.numpy() == 0)

    def apart():
        run_stage(part, zero(0, 2), tag="rows")
        wp.launch(K.zero_counts, dim=(1, 1), inputs=[0, 0], outputs=[other], device=dev)  # a launch between
        run_stage(part, zero(2, 2), tag="rows", after="rows")
        run_stage(part, zero(4, 3), tag="other", after="cols")                       # another tag
        run_stage(part, zero(0, 1), after="other")
        run_stage(part, zero(1, 1))                                                   # no after

    prog = record(apart)
    assert joined(prog) == [1, 1, 2, 1]
    assert [type(s).__name__ for s in prog] == ["_Stage", "Graph", "_Stage", "_Stage", "_Stage"]


@pytest.mark.parametrize("claimed", [False, True, "count"])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_binsort_repeated_sorts_with_keys_match_a_stable_argsort(threads, claimed):
    """BinSort with a keys launch clears only the counts its items' last keys left (core/binsort.py):
    sort after sort, with keys that move, clustered or spread, and after ``clear()``, ``order`` and
    ``start`` equal NumPy's stable argsort and bin edges, for 1, 2 and 3 workers, with the scatter in
    fixed shares or claimed blocks (``blocks``; the payload then too, NaN-filled before each sort), and
    with the count claimed too ("count": ``count_claimed``, blocks taken two-ended; 2100 items make 5
    blocks of 512, so the home ranges differ in size). Run worker after worker here (the first worker
    takes its range and the back of the next); concurrent claims: tests/sph/test_sph_stages.py."""
    from polyphys.binsort import BinSort
    from polyphys.blocks import BlockQueue
    from polyphys.kernels import binsort as K
    from polyphys.layout import Layout, split_envs
    from polyphys.simulator import run_stage

    n_items, n_keys = (2100 if claimed == "count" else 1000), 600                 # 3 blocks of 256 keys
    lay = Layout(n_envs=1, batched=False, device="cpu", precision="32", dt=0.01, substeps=1, gravity=(0, 0, 0),
                 partitions=split_envs(1, threads))
    part = lay.partitions[0]
    assert part.workers == threads
    bs = BinSort(lay, n_items, n_keys)
    blocks = BlockQueue(lay) if claimed else None
    pay = np.random.default_rng(5).normal(size=(1, n_items, 3)).astype(np.float32)
    pay_in = wp.array(pay, dtype=wp.vec3, device="cpu")
    pay_out = wp.zeros((1, n_items), dtype=wp.vec3, device="cpu")
    src = wp.zeros(n_items, dtype=wp.int32, device="cpu")
    key, order, start = bs.views(part)

    class Runner:                               # run_stage outside a step: worker after worker
        def parallel(self, part, stage, tag=None, after=None):
            run_stage(part, stage, tag, after)

    def keys(w, a, b):
        wp.copy(key, src, dest_offset=a, src_offset=a, count=b - a)

    count = (K.count_claimed, [], []) if claimed == "count" else None
    assert bs.claims_count(part, blocks, count) == (claimed == "count" and threads > 1)

    rng = np.random.default_rng(3)
    draws = [rng.integers(0, n_keys, n_items), rng.integers(0, 5, n_items) * 97, np.full(n_items, n_keys - 1),
             rng.integers(0, n_keys, n_items), np.sort(rng.integers(0, n_keys, n_items))[::-1].copy()]
    for t, k in enumerate(draws):
        if t == 3:
            bs.clear()
        src.assign(k.astype(np.int32))
        order.fill_(-1)
        bs.rank.fill_(-12345)                   # every item's rank is written by the count
        pay_out.fill_(wp.vec3(np.nan, np.nan, np.nan))
        if count is not None and threads > 1:
            key.assign(k.astype(np.int32)[None])       # count_claimed reads the keys written before the sort
        bs.sort(Runner(), part, keys, payload=(pay_in, pay_out) if t % 2 == 0 else None, blocks=blocks, count=count)
        np.testing.assert_array_equal(order.numpy()[0], np.argsort(k, kind="stable"))
        if t % 2 == 0:
            np.testing.assert_array_equal(pay_out.numpy()[0], pay[0][np.argsort(k, kind="stable")])
        np.testing.assert_array_equal(start.numpy()[0], np.searchsorted(np.sort(k), np.arange(n_keys + 1)))


def _ring_plan(workers, stages, dev="cpu"):
    """A plan of ``stages`` parallel stages of probe_ring (each worker reads its neighbour's result of
    the stage before) with a serial graph after every fifth, and the NumPy result of the same ops."""
    from polyphys.simulator import _Plan, _Stage

    from .blocks_probe_kernels import probe_ring

    a = wp.array(np.arange(1, workers + 1, dtype=np.int64) * 7, dtype=wp.int64, device=dev)
    b = wp.zeros(workers, dtype=wp.int64, device=dev)
    wp.launch(probe_ring, dim=1, inputs=[0, workers, 0, a], outputs=[b], device=dev)     # load the module
    ref = {"a": a.numpy().copy(), "b": np.zeros(workers, np.int64)}
    start = a.numpy().copy()

    def ring(x, y, w, s):
        y[w] = (x[(w + 1) % workers] * 3 + s + w) % 1000003

    def capture(fn):
        with wp.ScopedCapture(device=dev, force_module_load=False) as cap:
            fn()
        return cap.graph

    segs = []
    for s in range(stages):
        src, dst, rs, rd = (a, b, "a", "b") if s % 2 == 0 else (b, a, "b", "a")
        def share(w, s=s, src=src, dst=dst):
            return capture(lambda: wp.launch(probe_ring, dim=1, inputs=[w, workers, s, src], outputs=[dst], device=dev))

        segs.append(_Stage([[share(w)] for w in range(workers)], None))
        x = ref[rs].copy()
        for w in range(workers):
            ring(x, ref[rd], w, s)
        if s % 5 == 4:     # worker 0 alone: dst[0] from dst[1], read by the next stage's last worker
            segs.append(capture(lambda dst=dst, s=s: wp.launch(probe_ring, dim=1, inputs=[0, workers, -s, dst], outputs=[dst],
                                                               device=dev)))
            ring(ref[rd].copy(), ref[rd], 0, -s)
    return _Plan(segs, workers, dev), (a, b), (ref["a"], ref["b"]), start


def _within(fn, seconds=120.0):
    """fn() on a thread; its exception (or None); fails if it is still running after ``seconds``."""
    import threading

    out = {}

    def run():
        try:
            fn()
            out["exc"] = None
        except BaseException as exc:
            out["exc"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "the plan's replay did not return (a worker waits at a barrier forever)"
    return out["exc"]


def _helpers(kind, workers):
    from polyphys.simulator import _Helpers, _Parked

    return _Helpers(workers - 1, "test") if kind == "python" else _Parked(workers - 1, workers, "test", "cpu")


@pytest.mark.parametrize("kind", ["python", "parked"])
@pytest.mark.parametrize("workers", [2, 3])
def test_a_plan_orders_its_stages_with_barriers(workers, kind):
    """A plan (core/simulator.py ``_Plan``: each worker replays its share of a stretch of parallel stages
    and serial graphs in one launch, kernels/workers.cpp's barrier between segments) gives the result
    of the same ops run one after another, replay after replay: every stage reads what another worker
    wrote in the stage before, every serial graph what a helper wrote — with the helpers driven from
    Python (``_Helpers``) or parked in native code between plans (``_Parked``)."""
    plan, (a, b), (ra, rb), start = _ring_plan(workers, 41)
    helpers = _helpers(kind, workers)
    try:
        for _ in range(5):
            a.assign(start)
            b.zero_()
            assert _within(lambda: plan.run(helpers)) is None
            assert np.array_equal(a.numpy(), ra) and np.array_equal(b.numpy(), rb)
    finally:
        helpers.close()


def test_a_failing_worker_aborts_the_plan_and_its_error_surfaces():
    """A worker whose replay fails (a null graph state: Warp's replay returns false) or whose launch
    raises in Python aborts the plan's barrier: the other workers return at their next barrier, the
    failure (not the others' abort) is raised, and the plan replays again afterwards."""
    from polyphys.simulator import _Helpers

    plan, (a, b), (ra, rb), start = _ring_plan(3, 12)
    helpers = _Helpers(2, "test")
    try:
        good = plan.ops[1].numpy().copy()
        bad = good.copy()
        bad[1] = 0                            # worker 1's first replay: no graph
        plan.ops[1].assign(bad)
        for _ in range(2):
            exc = _within(lambda: plan.run(helpers))
            assert isinstance(exc, RuntimeError) and "worker 1" in str(exc)
        plan.ops[1].assign(good)

        class Raises:
            def launch(self):
                raise ValueError("launch refused")

        cmd, plan.cmds[0] = plan.cmds[0], Raises()
        exc = _within(lambda: plan.run(helpers))
        assert isinstance(exc, ValueError)
        plan.cmds[0] = cmd
        a.assign(start)
        b.zero_()
        assert _within(lambda: plan.run(helpers)) is None
        assert np.array_equal(a.numpy(), ra) and np.array_equal(b.numpy(), rb)
    finally:
        helpers.close()


def test_parked_helpers_surface_a_failing_share_and_a_helper_that_left():
    """On parked helpers: a worker whose replay fails aborts the plan (the failure is raised, the plan
    replays again afterwards); a helper whose thread leaves (stopped here) is seen by worker 0, which
    aborts the plan with a SimulationError instead of waiting; a helper whose launch raises before it
    serves fails the start with a SimulationError naming the error; close() stops the threads."""
    from polyphys.errors import SimulationError
    from polyphys.kernels import workers as K
    from polyphys.simulator import _Parked

    plan, (a, b), (ra, rb), start = _ring_plan(3, 12)
    parked = _Parked(2, 3, "test", "cpu")
    try:
        good = plan.ops[2].numpy().copy()
        bad = good.copy()
        bad[1] = 0                            # worker 2's first replay: no graph
        plan.ops[2].assign(bad)
        for _ in range(2):
            exc = _within(lambda: plan.run(parked))
            assert isinstance(exc, RuntimeError) and "worker 2" in str(exc)
        plan.ops[2].assign(good)
        a.assign(start)
        b.zero_()
        assert _within(lambda: plan.run(parked)) is None
        assert np.array_equal(a.numpy(), ra) and np.array_equal(b.numpy(), rb)
        parked._mail[0][K.MAIL_STOP] = 1       # helper 1 leaves (within its idle timeout)
        parked._threads[0].join(10)
        assert not parked._threads[0].is_alive()
        exc = _within(lambda: plan.run(parked))
        assert isinstance(exc, SimulationError) and "helper 1 is not running" in str(exc)
    finally:
        parked.close()
    assert parked._threads is None

    class Raises:
        def launch(self):
            raise ValueError("launch refused")

    parked = _Parked(2, 3, "test", "cpu")
    parked._cmds[1] = Raises()
    try:
        exc = _within(lambda: plan.run(parked))
        assert isinstance(exc, SimulationError) and "helper 2 did not start" in str(exc) and "launch refused" in str(exc)
    finally:
        parked.close()


def test_without_warps_replay_parts_the_stages_replay_one_by_one_with_a_warning(monkeypatch):
    """Plans call Warp's CPU graph replay natively (a private part of Warp 1.19, kernels/workers.py
    ``available``); under a Warp without it the same program replays stage by stage from Python, with
    a warning, and gives the same result."""
    from polyphys.kernels import workers as K
    from polyphys.simulator import _Helpers, _Plan, _prepare, _run_program

    plan, (a, b), (ra, rb), start = _ring_plan(2, 12)
    assert K.available([g for seg in plan.segments for g in (sum(seg.graphs, []) if hasattr(seg, "graphs") else [seg])])
    monkeypatch.setattr(K, "available", lambda graphs: False)
    with pytest.warns(RuntimeWarning, match="wp_apic_cpu_replay_state"):
        program = _prepare(plan.segments, 2, plan.device)
    assert program and not any(isinstance(seg, _Plan) for seg in program)
    helpers = _Helpers(1, "test")
    try:
        a.assign(start)
        b.zero_()
        assert _within(lambda: _run_program(program, helpers)) is None
        assert np.array_equal(a.numpy(), ra) and np.array_equal(b.numpy(), rb)
    finally:
        helpers.close()
