"""The Simulator: runs the substep loop over env partitions, captures it as Warp graphs, and checks
device-side flags after each step.

Per step: for each substep f (h = dt/N): the fast path ``solver.substep`` when one solver and no
coupler are active, otherwise ``coupler.preprocess -> solver.substep_pre_coupling (each) ->
coupler.couple -> solver.substep_post_coupling (each)``; then ``solver.end_step`` (clear external
forces), the sensors (every group's ground truth, then the measurement models: a bounded number of
launches however many envs and sensors, ``polyphys.sensors.SensorHub.evaluate``) and the NaN check.
On CPU the envs are split into partitions, each with its own captured graph, which the
scene's threads (the calling thread and a pool) take in turn (``_run_parts``; Warp releases the GIL
while a launch or a replay runs); with more partitions than threads a thread slowed by another
process takes fewer of them.

Threads within a partition: a partition with more than one worker (fewer envs than threads) runs a
solver's parallel stages (``Solver.parallel(part, stage)``: ``stage(w)`` issues worker ``w``'s
launches, usually over ``part.chunk(w, n)`` of the elements) on all its workers at once, with a
barrier after each stage. Captured, such a partition's step is a program of segments: the launches
between parallel stages as one serial graph, each parallel stage as one graph per worker. Its replay
(``_replay``) runs each stretch without a host-condition loop as a ``_Plan``: one launch per worker
(``polyphys.kernels.workers.run_plan``) that replays the worker's graph of each stage (worker 0: also
the serial graphs) with a native barrier between two segments, so Python runs once per plan (per step,
or per pass of a ``run_loop`` loop), never per stage or launch. The helpers stay in native code between
plans (``_Parked``): worker 0's one launch posts their jobs and waits for them. A stage declared to follow another
worker by worker (``parallel(..., after=tag)`` right after a stage tagged ``tag``, nothing launched in
between) joins that stage's segment: each worker replays both graphs in turn and one barrier ends them.
Solvers keep results independent of the worker count (docs/architecture.md).
"""

from __future__ import annotations

import concurrent.futures as cf
import itertools
import threading
import warnings
import weakref
from contextlib import contextmanager

import numpy as np

from .concurrency import WARP_LOCK
from .errors import SimulationError
from .layout import Layout, Partition

_active = threading.local()       # the stage runner of the partition this thread is stepping


def run_stage(part: Partition, stage, tag=None, after=None) -> None:
    """Run ``stage(w)`` for every worker ``w`` of ``part``, then return (a barrier): at once on the
    partition's workers inside a step of the simulator, worker after worker elsewhere (the first
    step, ``forward()``, getters) — the same launches either way. ``tag`` names the stage; ``after``
    (a tag) says that this stage may run right after the stage so tagged worker by worker, without a
    barrier between them (see ``Solver.parallel``): captured, it then joins that stage's segment."""
    runner = getattr(_active, "runner", None)
    if part.workers == 1:
        stage(0)
    elif runner is None or runner.part.index != part.index:
        for w in range(part.workers):
            stage(w)
    else:
        runner.run(stage, tag, after)


def run_loop(part: Partition, cond, body) -> None:
    """``body()`` while ``cond[0] != 0`` (a one-element int32 Warp array that the body updates): a
    loop on the device's data without a host synchronisation inside a captured step. One worker:
    ``wp.capture_while`` (captured, a while node of the graph — on CUDA that needs conditional graph
    nodes, CUDA 12.4+; uncaptured, Warp reads the flag between iterations); several workers inside
    a step: a loop segment of the partition's program, whose replay reads the flag (CPU memory)
    before each pass over its stages; elsewhere a loop reading the flag."""
    import warp as wp

    runner = getattr(_active, "runner", None)
    if part.workers == 1:
        wp.capture_while(cond, body)
    elif runner is None or runner.part.index != part.index or runner.mode == "threads":
        while _flag(cond):
            body()
    else:
        runner.loop(cond, body)


def _flag(cond) -> bool:
    """cond[0] != 0 for a one-element int32 array in CPU memory (no copy, no launch)."""
    import ctypes

    return ctypes.cast(cond.ptr, ctypes.POINTER(ctypes.c_int32)).contents.value != 0


class _Loop:
    """A loop segment of a partition's program: its body program, run while ``cond[0] != 0``."""

    def __init__(self, cond, body: list):
        self.cond, self.body = cond, body


class _Stage:
    """A parallel segment of a partition's program: per worker the graphs it replays in turn (one
    per stage joined into the segment; empty shares left out), and the tag of its last stage."""

    def __init__(self, graphs: list, tag):
        self.graphs, self.tag = graphs, tag


@contextmanager
def _running(runner):
    prev = getattr(_active, "runner", None)
    _active.runner = runner
    try:
        yield
    finally:
        _active.runner = prev


def _nonempty(graph) -> bool:
    cap = getattr(graph, "_apic_capture", None)
    count = getattr(cap, "operation_count", None)
    return True if count is None else count > 0


class _Helpers:
    """A partition's workers but the first (which is the partition's own thread): persistent
    threads, started at their first task, each waiting on a semaphore for the next one — a task
    (a plan, or a stage of an uncaptured step) costs two semaphore operations per worker and the
    helper's wake-up (~25 µs here when idle, ~80 µs measured inside steps). Closed when the simulator
    is collected (``weakref.finalize``)."""

    _STOP = object()

    def __init__(self, n: int, name: str):
        self.n, self.name = n, name
        self._go = [threading.Semaphore(0) for _ in range(n)]
        self._done = threading.Semaphore(0)
        self._task: list = [None] * n
        self._err: list = [None] * n
        self._threads: list | None = None

    def _loop(self, i: int) -> None:
        while True:
            self._go[i].acquire()
            task = self._task[i]
            if task is self._STOP:
                return
            try:
                task()
            except BaseException as exc:     # raised by run() in the calling thread
                self._err[i] = exc
            finally:
                self._task[i] = None
                self._done.release()

    def run(self, tasks: list, own) -> None:
        """Run ``tasks[i]`` (None: nothing) on helper i and ``own()`` here; return when all are done,
        raising the first exception."""
        if self._threads is None:
            self._threads = [threading.Thread(target=self._loop, args=(i,), daemon=True, name=f"{self.name}-w{i + 1}")
                             for i in range(self.n)]
            for t in self._threads:
                t.start()
        started = []
        for i, task in enumerate(tasks):
            if task is not None:
                self._task[i], self._err[i] = task, None
                self._go[i].release()
                started.append(i)
        errors = []
        try:
            if own is not None:
                own()
        except BaseException as exc:
            errors.append(exc)
        finally:
            for _ in started:
                self._done.acquire()
        for i in started:
            if self._err[i] is not None:
                errors.append(self._err[i])
                self._err[i] = None
        if errors:
            # a worker that only left because another failed (``_Aborted``) does not hide that failure
            raise next((e for e in errors if not isinstance(e, _Aborted)), errors[0])

    def close(self) -> None:
        if self._threads is not None:
            for i in range(self.n):
                self._task[i] = self._STOP
                self._go[i].release()
            self._threads = None


class _StageRunner:
    """Runs a partition's parallel stages: on its helper threads ("threads"; worker 0 is the calling
    thread), or records them ("capture": the launches so far close a serial graph, then each
    worker's share is captured into a graph of its own)."""

    def __init__(self, part: Partition, device: str, mode: str, helpers=None):
        self.part, self.device, self.mode, self.helpers = part, device, mode, helpers
        self.segments: list = []
        self._capturing = False

    def _worker(self, stage, w):
        import warp as wp

        with wp.ScopedDevice(self.device):
            stage(w)

    def run(self, stage, tag=None, after=None) -> None:
        if self.mode == "threads":
            self.helpers.run([lambda w=w: self._worker(stage, w) for w in range(1, self.part.workers)],
                             lambda: stage(0))
            return
        import warp as wp

        self._end_serial()
        graphs = []
        for w in range(self.part.workers):
            wp.capture_begin(device=self.device, force_module_load=False)
            self._capturing = True
            try:
                stage(w)
            finally:
                graph = wp.capture_end(device=self.device)
                self._capturing = False
            graphs.append([graph] if _nonempty(graph) else [])
        last = self.segments[-1] if self.segments else None
        if after is not None and isinstance(last, _Stage) and last.tag == after:
            # nothing launched since the stage tagged ``after`` (a serial graph or a loop would be the
            # last segment): each worker replays this stage's share right after that one's
            for mine, new in zip(last.graphs, graphs):
                mine.extend(new)
            last.tag = tag
        else:
            self.segments.append(_Stage(graphs, tag))
        self._begin_serial()

    def loop(self, cond, body) -> None:
        """Record ``body()`` as the program of a loop segment (capture mode)."""
        self._end_serial()
        outer, self.segments = self.segments, []
        self._begin_serial()
        body()
        self._end_serial()
        outer.append(_Loop(cond, self.segments))
        self.segments = outer
        self._begin_serial()

    # -- capture ------------------------------------------------------------------------------------
    def _begin_serial(self) -> None:
        import warp as wp

        wp.capture_begin(device=self.device, force_module_load=False)
        self._capturing = True

    def _end_serial(self) -> None:
        import warp as wp

        graph = wp.capture_end(device=self.device)
        self._capturing = False
        if _nonempty(graph):
            self.segments.append(graph)

    def record(self, step) -> list:
        """Capture ``step()`` (one partition's step) as a program of segments."""
        import warp as wp

        self._begin_serial()
        try:
            with _running(self):
                step()
            self._end_serial()
        except BaseException:
            if self._capturing:
                wp.capture_end(device=self.device)
                self._capturing = False
            raise
        return self.segments


def _legacy() -> bool:
    """The per-stage replay (``POLYPHYS_STAGE_REPLAY=python``): each parallel stage a Python-driven
    ``_Helpers.run``; kept to compare against the plans (benchmarks/results/fem.md)."""
    import os

    return os.environ.get("POLYPHYS_STAGE_REPLAY", "") == "python"


def _prepare(program: list, workers: int = 1, device: str = "cpu") -> list:
    """A recorded program as its replay runs it: each loop-free stretch of segments with a parallel
    stage a ``_Plan`` (every worker replays its share of the stretch in one launch), a stretch of a
    serial graph alone that graph, a loop a ``_Loop`` of its prepared body. With
    ``POLYPHYS_STAGE_REPLAY=python`` each parallel stage is (own launch, [helpers' launches]) instead."""
    if _legacy():
        return _prepare_stages(program, workers, device)
    out, run = [], []

    def flush():
        if not any(isinstance(x, _Stage) for x in run):
            out.extend(run)
        elif _plans_available(run):
            out.append(_Plan(list(run), workers, device))
        else:
            out.extend(_prepare_stages(run))
        run.clear()

    for seg in program:
        if isinstance(seg, _Loop):
            flush()
            out.append(_Loop(seg.cond, _prepare(seg.body, workers, device)))
        else:
            run.append(seg)
    flush()
    return out


def _prepare_stages(program: list, workers: int = 1, device: str = "cpu") -> list:
    """The per-stage replay's program: each parallel stage (own launch, [helpers' launches])."""
    out = []
    for seg in program:
        if isinstance(seg, _Stage):
            out.append((_launcher(seg.graphs[0]), [_launcher(x) for x in seg.graphs[1:]]))
        elif isinstance(seg, _Loop):
            out.append(_Loop(seg.cond, _prepare(seg.body, workers, device)))
        else:
            out.append(seg)
    return out


def _plans_available(segments: list) -> bool:
    """Whether Warp exposes the replay parts a ``_Plan`` calls natively (kernels/workers.py); when it
    does not (another Warp version), the per-stage replay runs the same graphs, with a warning."""
    from .kernels import workers as K

    graphs = [g for seg in segments for g in (sum(seg.graphs, []) if isinstance(seg, _Stage) else [seg])]
    if K.available(graphs):
        return True
    warnings.warn("this Warp version does not expose its CPU graph replay (wp_apic_cpu_replay_state): the "
                  "threads of a captured step synchronise per stage from Python (same results, slower; "
                  "docs/architecture.md, 'Threads within a partition')", RuntimeWarning, stacklevel=3)
    return False


class _Aborted(Exception):
    """A worker left its plan because another worker's failed (that one's error is raised)."""


class _Plan:
    """A loop-free stretch of a partition's program (serial graphs and parallel stages) as one launch
    per worker (``polyphys.kernels.workers.run_plan``): worker w replays its graph of each parallel
    stage, worker 0 also the serial graphs, and all workers meet at a native barrier between two
    segments, so no worker returns to Python between the stages of the stretch. The calling thread is
    worker 0; the helpers are started together and joined once per stretch (``_Helpers.run``)."""

    def __init__(self, segments: list, workers: int, device: str):
        import warp as wp

        from .kernels import workers as K

        self.segments, self.workers, self.device = segments, workers, device
        ops: list[list[int]] = [[] for _ in range(workers)]
        for i, seg in enumerate(segments):
            for w in range(workers):
                if i > 0:
                    ops[w] += [K.OP_BARRIER, 0]
                graphs = seg.graphs[w] if isinstance(seg, _Stage) else ([seg] if w == 0 else [])
                for g in graphs:
                    ops[w] += [K.OP_REPLAY, int(g.apic_state)]
        self.n_ops = [len(o) // 2 for o in ops]
        self.ops = [wp.array(np.array(o or [0, 0], dtype=np.uint64), dtype=wp.uint64, device=device) for o in ops]
        self.natives = wp.array(K.natives(), dtype=wp.uint64, device=device)
        self.bar = wp.zeros(K.BAR_WORDS, dtype=wp.int32, device=device)
        self._bar = self.bar.numpy()
        self.status = [wp.zeros(1, dtype=wp.int32, device=device) for _ in range(workers)]
        self._status = [s.numpy() for s in self.status]
        self._none64 = wp.zeros(0, dtype=wp.uint64, device=device)
        self._none32 = wp.zeros(0, dtype=wp.int32, device=device)
        self.timed(False)

    def timed(self, on: bool) -> None:
        """Record per op each worker's monotonic and thread CPU clocks (``self.times[w]``: [entry,
        after op 0, ...] then the same for CPU, ns) for benchmarks/profile_threads, or stop."""
        import warp as wp

        from .kernels import workers as K

        n = [2 * (k + 1) if on else 0 for k in self.n_ops]
        self.times = [wp.zeros(m, dtype=wp.int64, device=self.device) for m in n]
        self.cmds = [self._cmd(w, K.MODE_RUN, self._none64) for w in range(self.workers)]
        self._lead = None          # (parked helpers, worker 0's lead launch, its job arrays): made at first use

    def _cmd(self, w: int, mode: int, jobs):
        import warp as wp

        from .kernels import workers as K

        return wp.launch(K.run_plan, dim=1, inputs=[self.ops[w], self.n_ops[w], self.workers, self.natives, K.SPIN, K.YIELDS,
                                                    mode, jobs, self.bar, self._none32],
                         outputs=[self.status[w], self.times[w]], device=self.device, record_cmd=True)

    def segment_times(self) -> dict:
        """After a timed run (``timed(True)``): ``busy`` per segment the (wall, thread CPU) seconds each
        worker spent in its replays, ``exit`` per barrier each worker's wall time from the last arrival
        to its own exit (the wake-up), ``entry`` each worker's start after worker 0's (seconds)."""
        from .kernels import workers as K

        out = {"busy": [], "exit": [], "entry": []}
        t = [x.numpy() for x in self.times]
        kinds = [o.numpy()[0::2][:n] for o, n in zip(self.ops, self.n_ops)]
        segs = len(self.segments)
        busy = [[[0.0, 0.0] for _ in range(self.workers)] for _ in range(segs)]
        arrive = [[0.0] * self.workers for _ in range(segs - 1)]
        leave = [[0.0] * self.workers for _ in range(segs - 1)]
        for w in range(self.workers):
            n, s = self.n_ops[w], 0
            wall, cpu = t[w][:n + 1], t[w][n + 1:]
            for k in range(n):
                if kinds[w][k] == K.OP_BARRIER:
                    arrive[s][w], leave[s][w] = wall[k], wall[k + 1]
                    s += 1
                else:
                    busy[s][w][0] += float(wall[k + 1] - wall[k]) * 1e-9
                    busy[s][w][1] += float(cpu[k + 1] - cpu[k]) * 1e-9
        out["busy"] = busy
        out["exit"] = [[float(leave[b][w] - max(arrive[b])) * 1e-9 for w in range(self.workers)] for b in range(segs - 1)]
        out["entry"] = [float(t[w][0] - t[0][0]) * 1e-9 for w in range(self.workers)]
        return out

    def _task(self, w: int) -> None:
        try:
            self.cmds[w].launch()
        except BaseException:
            self._abort()
            raise
        st = int(self._status[w][0])
        if st > 0:
            from warp._src.context import runtime

            raise RuntimeError(f"CPU graph replay failed in worker {w}'s plan (op {st - 1}): {runtime.get_error_string()}")
        if st < 0:
            raise _Aborted()

    def _abort(self) -> None:
        from .kernels import workers as K

        self._bar[K.BAR_ABORT] = 1       # the waiting workers see it within their futex timeout

    def run(self, helpers) -> None:
        """Run the plan: on parked helpers (``_Parked``: one launch from this thread), or on Python
        helpers (``_Helpers``: each worker's launch from its thread)."""
        if isinstance(helpers, _Parked):
            self._run_parked(helpers)
            return
        from .kernels import workers as K

        try:
            helpers.run([lambda w=w: self._task(w) for w in range(1, self.workers)], lambda: self._task(0))
        finally:
            if self._bar[K.BAR_ABORT]:    # every worker has left: ready for the next replay
                self._bar[K.BAR_COUNT] = 0
                self._bar[K.BAR_SLEEPERS] = 0
                self._bar[K.BAR_ABORT] = 0


    def _run_parked(self, parked) -> None:
        import warp as wp

        from .kernels import workers as K

        if self._lead is None or self._lead[0] is not parked:
            recs = [wp.array(np.array([self.ops[w].ptr, self.n_ops[w], self.bar.ptr, self.times[w].ptr or 0,
                                       self.times[w].shape[0], self.status[w].ptr], dtype=np.uint64), dtype=wp.uint64,
                             device=self.device) for w in range(1, self.workers)]
            jobs = wp.array(np.array([x for h, r in enumerate(recs) for x in (parked.mail[h].ptr, r.ptr)], dtype=np.uint64),
                            dtype=wp.uint64, device=self.device)
            self._lead = (parked, self._cmd(0, K.MODE_LEAD, jobs), jobs, recs)
        parked.start()
        for st in self._status:
            st[0] = 0
        try:
            self._lead[1].launch()
        finally:
            if self._bar[K.BAR_ABORT]:    # every worker has left: ready for the next replay
                self._bar[K.BAR_COUNT] = 0
                self._bar[K.BAR_SLEEPERS] = 0
                self._bar[K.BAR_ABORT] = 0
        st = [int(x[0]) for x in self._status]
        failed = next((w for w in range(self.workers) if st[w] > 0), None)
        if failed is not None:
            from warp._src.context import runtime

            raise RuntimeError(f"CPU graph replay failed in worker {failed}'s plan (op {st[failed] - 1}): "
                               f"{runtime.get_error_string()}")
        if st[0] <= -3:
            raise SimulationError(f"the threads of partition {parked.name}: helper {-3 - st[0] + 1} is not running "
                                  f"(its thread left: {parked.error(-3 - st[0])}); the step was not completed — reset "
                                  f"the scene (docs/architecture.md, 'Threads within a partition')")
        if any(x < 0 for x in st):
            raise _Aborted()


class _Parked:
    """A partition's workers but the first, parked in native code between plans (kernels/workers.py,
    MODE_SERVE): each helper thread makes one launch that serves jobs from its mailbox until stopped,
    so a plan costs worker 0's one launch (MODE_LEAD: post the jobs, run its own ops, wait for the
    helpers) — no Python on the helpers and no semaphore per step. An idle helper spins briefly, then
    sleeps on its mailbox (a futex wait with a 50 ms timeout to see a stop). Started at the first plan;
    stopped by ``close`` (the simulator's close or collection, or interpreter exit: ``weakref.finalize``),
    after which a helper leaves within the timeout. A helper whose thread left (an exception before or in
    its launch) is seen by the lead, which then aborts the plan: a ``SimulationError``, never a wait.
    Used where the idle helper can sleep on a futex (``_parked_ok``); a forked child starts its own."""

    START_TIMEOUT = 30.0

    def __init__(self, n: int, workers: int, name: str, device: str):
        import warp as wp

        from .kernels import workers as K

        self.n, self.name, self.device = n, name, device
        self.mail = [wp.zeros(K.MAIL_WORDS, dtype=wp.int32, device=device) for _ in range(n)]
        self._mail = [m.numpy() for m in self.mail]
        self._errors: list = [None] * n
        none64 = wp.zeros(0, dtype=wp.uint64, device=device)
        self._keep = [none64, wp.zeros(2, dtype=wp.uint64, device=device), wp.zeros(K.BAR_WORDS, dtype=wp.int32, device=device),
                      wp.array(K.natives(), dtype=wp.uint64, device=device)]
        self._status = [wp.zeros(1, dtype=wp.int32, device=device) for _ in range(n)]
        self._cmds = [wp.launch(K.run_plan, dim=1, inputs=[self._keep[1], 0, workers, self._keep[3], K.SPIN, K.YIELDS,
                                                           K.MODE_SERVE, none64, self._keep[2], self.mail[h]],
                                outputs=[self._status[h], wp.zeros(0, dtype=wp.int64, device=device)],
                                device=device, record_cmd=True) for h in range(n)]
        self._threads: list | None = None
        self._pid = 0

    def _serve(self, h: int) -> None:
        from .kernels import workers as K

        try:
            self._cmds[h].launch()
        except BaseException as exc:
            self._errors[h] = exc
        finally:
            self._mail[h][K.MAIL_STATE] = 2

    def start(self) -> None:
        """Start the helpers (once per process) and wait until each serves; raise if one does not."""
        import os

        if self._threads is not None and self._pid == os.getpid():
            return
        import time

        from .kernels import workers as K

        # a forked child has none of the parent's threads: its mailboxes start afresh
        for m in self._mail:
            m[:] = 0
        self._pid = os.getpid()

        self._threads = [threading.Thread(target=self._serve, args=(h,), daemon=True, name=f"{self.name}-n{h + 1}")
                         for h in range(self.n)]
        for t in self._threads:
            t.start()
        t0 = time.monotonic()
        while any(m[K.MAIL_STATE] == 0 for m in self._mail):
            if time.monotonic() - t0 > self.START_TIMEOUT:
                break
            time.sleep(0.0001)
        bad = next((h for h, m in enumerate(self._mail) if m[K.MAIL_STATE] != 1), None)
        if bad is not None:
            self.close()
            raise SimulationError(f"the threads of partition {self.name}: helper {bad + 1} did not start serving "
                                  f"({self.error(bad)})")

    def error(self, h: int) -> str:
        exc = self._errors[h]
        return "no error recorded" if exc is None else f"{type(exc).__name__}: {exc}"

    def close(self, join: float = 1.0) -> None:
        """Ask every helper to stop (each leaves its launch within the idle timeout); wait up to ``join``
        seconds for the threads."""
        from .kernels import workers as K

        for m in self._mail:
            m[K.MAIL_STOP] = 1
        threads, self._threads = self._threads, None
        for t in threads or []:
            t.join(join)


def _parked_ok() -> bool:
    """Plans run on parked helpers where an idle helper can sleep on a futex (Linux), unless
    ``POLYPHYS_PLAN_HELPERS=python`` (the semaphore-driven helpers, kept to compare against:
    benchmarks/results/fem.md); elsewhere an idle parked helper could only yield in a loop, taking a
    core between steps, so the plans keep the Python helpers there."""
    import os

    from .kernels import workers as K

    return os.environ.get("POLYPHYS_PLAN_HELPERS", "") != "python" and K.natives()[2] != 0


def _run_program(program: list, helpers) -> None:
    import warp as wp

    parked = None
    if isinstance(helpers, tuple):          # (Python helpers, parked helpers or None)
        helpers, parked = helpers
    for seg in program:
        if isinstance(seg, _Plan):
            seg.run(parked or helpers)
        elif isinstance(seg, tuple):        # a parallel stage (POLYPHYS_STAGE_REPLAY=python)
            helpers.run(seg[1], seg[0])
        elif isinstance(seg, _Loop):
            while _flag(seg.cond):
                _run_program(seg.body, (helpers, parked))
        else:
            wp.capture_launch(seg)


def _launcher(graphs: list):
    """A call that replays ``graphs`` in turn (None for none)."""
    if not graphs:
        return None
    import warp as wp

    if len(graphs) == 1:
        graph = graphs[0]
        return lambda: wp.capture_launch(graph)

    def replay():
        for g in graphs:
            wp.capture_launch(g)

    return replay


def _close_helpers(helpers: list) -> None:
    for h in helpers:
        h.close()


def _walk_plans(program: list):
    """The plans of a prepared program, loops' bodies included."""
    for seg in program:
        if isinstance(seg, _Loop):
            yield from _walk_plans(seg.body)
        elif isinstance(seg, _Plan):
            yield seg


class Simulator:
    def __init__(self, scene, solvers: list, couplers: list, layout: Layout, graph_capture: bool,
                 nan_policy: str, sensors=None):
        import warp as wp

        self.scene = scene
        self.solvers = solvers
        self.couplers = couplers
        self.sensors = sensors          # the scene's SensorHub, or None
        self.layout = layout
        self.parts: tuple[Partition, ...] = layout.partitions
        self.graph_capture = graph_capture
        self.nan_policy = nan_policy
        self.fast_path = len(solvers) == 1 and not couplers
        self.nan_flags = wp.zeros(layout.n_envs, dtype=wp.int32, device=layout.device)
        # on CPU a NumPy view of the flags, made once (the check after every step reads it: no copy,
        # no view creation per step); elsewhere None (a copy per step)
        self._nan_host = self.nan_flags.numpy() if self.nan_flags.device.is_cpu else None
        # the checks after a step: only solvers and couplers that define one (the base is a no-op)
        from .interfaces import Solver
        self._checks = [s.check_after_step for s in solvers if type(s).check_after_step is not Solver.check_after_step]
        self._checks += [c.check_after_step for c in couplers if hasattr(c, "check_after_step")]
        self._graphs: list | None = None      # per partition: a Graph, or a program of segments
        self._warm = False
        # the threads stepping the partitions: the calling thread and a pool; each takes the next partition
        # not yet taken until none is left (``_run_parts``), so with more partitions than threads
        # (SimOptions.cpu_partitions_per_thread) a thread slowed by another process takes fewer envs
        self._n_threads = min(layout.thread_count or len(self.parts), len(self.parts))
        self._pool = cf.ThreadPoolExecutor(self._n_threads) if self._n_threads > 1 else None
        # per partition with several workers: its workers but the first (the partition's own thread)
        self._helpers = {p.index: _Helpers(p.workers - 1, f"polyphys-p{p.index}") for p in self.parts if p.workers > 1}
        # the captured steps' plans run on helpers parked in native code (made at the first replay)
        self._parked = {}
        self._all_helpers: list = list(self._helpers.values())
        self._finalizer = weakref.finalize(self, _close_helpers, self._all_helpers)
        self.n_steps = 0

    # -- one partition's step: exactly the launches a graph records -----------------------------
    def _step_part(self, part: Partition) -> None:
        n = self.layout.substeps
        for f in range(n):
            if self.fast_path:
                self.solvers[0].substep(f, part)
            else:
                for c in self.couplers:
                    c.preprocess(f, part)
                for s in self.solvers:
                    s.substep_pre_coupling(f, part)
                for c in self.couplers:
                    c.couple(f, part)
                for s in self.solvers:
                    s.substep_post_coupling(f, part)
        for s in self.solvers:
            s.end_step(part)
        if self.sensors is not None:
            self.sensors.evaluate(part)
        for s in self.solvers:
            s.nan_check(part, self.nan_flags)

    def _capture(self) -> None:
        import warp as wp

        graphs = []
        dev = self.layout.device
        for part in self.parts:
            with wp.ScopedDevice(dev):
                if part.workers == 1:
                    with wp.ScopedCapture(device=dev, force_module_load=False) as cap:
                        self._step_part(part)
                    graphs.append(cap.graph)
                else:
                    runner = _StageRunner(part, dev, "capture")
                    graphs.append(_prepare(runner.record(lambda part=part: self._step_part(part)), part.workers, dev))
        self._graphs = graphs

    def _replay(self, i: int) -> None:
        """Replay partition i's captured step: one graph, or its program of segments (a serial graph
        on this thread; a parallel stage's graphs on the partition's workers, then a barrier)."""
        import warp as wp

        g = self._graphs[i]
        if not isinstance(g, list):
            wp.capture_launch(g)
            return
        _run_program(g, (self._helpers[i], self._parked_helpers(i)))

    def _parked_helpers(self, i: int):
        """Partition i's parked helpers for its plans (None: its plans use the Python helpers)."""
        from .kernels import workers as K

        if i not in self._parked:
            part = self.parts[i]
            ok = _parked_ok() and part.workers - 1 <= K.MAX_PARKED and any(True for _ in _walk_plans(self._graphs[i]))
            name = f"polyphys-p{part.index}"
            self._parked[i] = _Parked(part.workers - 1, part.workers, name, self.layout.device) if ok else None
            if self._parked[i] is not None:
                self._all_helpers.append(self._parked[i])
        return self._parked[i]

    def invalidate(self) -> None:
        """Forget captured graphs (after a solver reallocated arrays)."""
        self._graphs = None

    # the calling thread takes partitions too (False: it only waits for the pool's threads, as before
    # round 15; kept for the A/B of benchmarks/probe_rigid_threads.py)
    caller_takes = True

    def _run_parts(self, fn) -> None:
        """``fn(i, part)`` for every partition: ``_n_threads`` threads (this one and the pool's) each take
        the next partition not yet taken (a shared counter, in partition order) until none is left."""
        parts = self.parts
        if self._pool is None:
            for i, part in enumerate(parts):
                fn(i, part)
            return
        taken = itertools.count()        # next() is atomic under the GIL

        def take():
            while (i := next(taken)) < len(parts):
                fn(i, parts[i])

        own = self.caller_takes
        futures = [self._pool.submit(take) for _ in range(self._n_threads - own)]
        error = None
        if own:
            try:
                take()
            except BaseException as exc:
                error = exc
        # wait for every partition before raising: no partition may still run into the next call
        cf.wait(futures)
        for fut in futures:
            fut.result()
        if error is not None:
            raise error

    def step(self) -> None:
        """One step of every partition, then the device-side checks. Locking (polyphys.concurrency):
        the replay of captured graphs holds the process-wide Warp lock shared, so scenes in other
        threads replay at the same time; the first step (module loading), the capture, uncaptured
        steps and the checks after the step hold it exclusively (a replayed step with no check to run
        and no env flagged reads the flags under the shared hold and takes no exclusive one)."""

        quiet = False
        if self.graph_capture and self._warm and self._graphs is not None:
            with WARP_LOCK.shared():
                self._run_parts(lambda i, part: self._replay(i))
                # nothing to check (no solver or coupler check, no env flagged non-finite: a read of
                # CPU memory, no Warp call): the exclusive hold for the checks is skipped
                quiet = not self._checks and self._nan_host is not None and not self._nan_host.any()
        else:
            with WARP_LOCK.exclusive():
                self._step_exclusive()
        self.n_steps += 1
        if quiet:
            return
        with WARP_LOCK.exclusive():
            self._after_step()

    def _step_exclusive(self) -> None:
        import warp as wp

        if self.graph_capture and self._warm:
            self._capture()
            self._run_parts(lambda i, part: self._replay(i))
            return

        def run(i, part):
            runner = None
            if part.workers > 1 and self._warm:
                runner = _StageRunner(part, self.layout.device, "threads", self._helpers[part.index])
            with wp.ScopedDevice(self.layout.device), _running(runner):
                self._step_part(part)

        if self._warm:
            self._run_parts(run)
        else:
            # first step on one thread (a partition's workers one after another): Warp
            # compiles/loads modules here, and two threads loading the same module at once would
            # compile it twice
            for i, part in enumerate(self.parts):
                run(i, part)
            self._warm = True     # modules are loaded: later steps may be captured

    def _after_step(self) -> None:
        for check in self._checks:
            check()
        flags = self._nan_host if self._nan_host is not None else self.nan_flags.numpy()
        if not flags.any():
            return
        bad = np.nonzero(flags)[0]
        self.nan_flags.zero_()
        envs = bad.tolist()
        if self.nan_policy == "raise":
            raise SimulationError(f"non-finite state (NaN/inf) in env(s) {envs} after step "
                                  f"{self.n_steps}; SimOptions(nan_policy='reset') resets them instead")
        warnings.warn(f"non-finite state (NaN/inf) in env(s) {envs} after step {self.n_steps}: those "
                      f"envs were reset to the initial state (other envs untouched); see "
                      f"scene.nan_envs", stacklevel=3)
        self.scene._reset_envs_after_nan(bad)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None
        self._finalizer()
        self._helpers = {}
        self._parked = {}
