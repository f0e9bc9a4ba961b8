"""polyphys benchmarks: ``python -m benchmarks [--quick] [--only NAME] [--markdown FILE]``.

Every module ``benchmarks/bench_<topic>.py`` exposes ``run(quick: bool = False) -> list[dict]``
returning rows ``{case, metric, unit, polyphys, reference, reference_name, ratio, notes}``; the
reference is measured in the same run (MuJoCo, an uncaptured step, one thread, ...). The harness
discovers the modules, runs each (one failing to import or run is reported and the others go on),
and prints an aligned table with the machine description. Helpers shared by benchmark modules live
here (``machine_info``, ``time_steps``, ``row``).
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from importlib import metadata

ROW_KEYS = ("case", "metric", "unit", "polyphys", "reference", "reference_name", "ratio", "notes")


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def machine_info() -> dict:
    """CPU model, cores (online and usable by this process), Python, Warp, NumPy, MuJoCo versions."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    try:
        load = round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        load = None
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "load_1min": load,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "polyphys": _version("polyphys"),
        "warp": _version("warp-lang"),
        "numpy": _version("numpy"),
        "mujoco": _version("mujoco"),
    }


def row(case: str, metric: str, unit: str, polyphys: float, reference: float | None = None,
        reference_name: str = "", ratio: float | None = None, notes: str = "") -> dict:
    """A result row; ``ratio`` defaults to reference / polyphys for times (a speed-up > 1 means
    polyphys is faster) — pass it explicitly for rates."""
    if ratio is None and reference is not None and polyphys:
        ratio = reference / polyphys
    return {"case": case, "metric": metric, "unit": unit, "polyphys": float(polyphys),
            "reference": None if reference is None else float(reference),
            "reference_name": reference_name, "ratio": None if ratio is None else float(ratio),
            "notes": notes}


def time_steps(step, min_time: float = 0.3, min_steps: int = 5, warmup: int = 3,
               repeats: int = 3) -> float:
    """Seconds per call of ``step()``: after ``warmup`` calls, the best of ``repeats`` timed blocks
    of at least ``min_steps`` calls lasting about ``min_time`` each (best-of filters out the noise
    of other processes on a shared machine)."""
    for _ in range(warmup):
        step()
    t0 = time.perf_counter()
    step()
    one = max(time.perf_counter() - t0, 1e-7)
    n = max(min_steps, int(min_time / one))
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def critical_path(scene, steps: int = 3) -> dict:
    """Replay ``steps`` captured steps of ``scene`` (already warm and captured) measuring each
    worker's thread CPU time per segment of its partitions' programs (core/simulator.py): returns
    ``cpu`` (all workers' CPU time per step), ``critical`` (per step, the sum over segments of the
    slowest worker's CPU time: the step's wall time on dedicated cores, without wake-up latency) and
    ``segments`` (per step: serial graphs and parallel stages, loops unrolled). On a shared machine
    whose scheduler gives each process group a fixed share of the cores (Linux autogroup), wall
    time cannot show thread scaling; this figure can. Partitions are replayed one after another. A plan
(a stretch replayed in one launch per worker, core/simulator.py ``_Plan``) is timed by its workers'
clocks per op: a segment's CPU is each worker's replays in it, not the barrier's wait."""
    import concurrent.futures as cf

    import warp as wp
    from polyphys.simulator import _flag, _Loop, _Plan

    sim = scene.simulator
    if not sim._warm or sim._graphs is None:
        raise RuntimeError("critical_path: step the scene twice first (warm-up and capture)")

    def timed(fn):
        t0 = time.thread_time()
        fn()
        return time.thread_time() - t0

    acc = {"cpu": 0.0, "critical": 0.0, "segments": 0}
    state = {"helpers": None}
    pool = cf.ThreadPoolExecutor(max(p.workers for p in sim.parts))

    def run(program):
        for seg in program:
            if isinstance(seg, _Loop):
                while _flag(seg.cond):
                    run(seg.body)
                continue
            if isinstance(seg, _Plan):   # a stretch replayed in one launch per worker: its clocks per op
                if not seg.times[0].shape[0]:
                    seg.timed(True)
                seg.run(state["helpers"])
                for busy in seg.segment_times()["busy"]:
                    ts = [b[1] for b in busy]
                    acc["segments"] += 1
                    acc["cpu"] += sum(ts)
                    acc["critical"] += max(ts)
                continue
            acc["segments"] += 1
            if isinstance(seg, tuple):
                own, others = seg        # a parallel stage: the calls its workers make
                ts = [f.result() for f in [pool.submit(timed, fn) for fn in [own, *others] if fn is not None]]
            else:
                ts = [timed(lambda seg=seg: wp.capture_launch(seg))]
            acc["cpu"] += sum(ts)
            acc["critical"] += max(ts, default=0.0)

    try:
        for _ in range(steps):
            for i in range(len(sim.parts)):
                prog = sim._graphs[i]
                state["helpers"] = sim._helpers.get(i)
                run(prog if isinstance(prog, list) else [prog])
    finally:
        pool.shutdown()
        _untime(sim)
    sim._after_step()
    return {k: v / steps for k, v in acc.items()}


def _untime(sim) -> None:
    """Stop the per-op clocks of every plan of ``sim``'s programs (the simulator's own replays)."""
    from polyphys.simulator import _Loop, _Plan

    def walk(program):
        for seg in program:
            if isinstance(seg, _Plan) and seg.times[0].shape[0]:
                seg.timed(False)
            elif isinstance(seg, _Loop):
                walk(seg.body)

    for prog in sim._graphs or []:
        if isinstance(prog, list):
            walk(prog)


def off_cpu_counters(tids=()) -> dict:
    """What takes a core from this process's threads, cumulative (differences between two calls measure
    a stretch): ``steal`` the seconds the hypervisor ran something else on this virtual machine's CPUs
    (``/proc/stat``, all CPUs summed; a KVM guest's thread CPU time does not count them), ``run_delay``
    per thread id in ``tids`` the seconds it was runnable but waiting for a core of this machine (another
    process or thread had it: ``/proc/self/task/TID/schedstat``). Zeros where Linux does not say."""
    out = {"steal": 0.0, "run_delay": {}}
    try:
        with open("/proc/stat") as fh:
            cpu = fh.readline().split()
        out["steal"] = int(cpu[8]) / os.sysconf("SC_CLK_TCK") if cpu[0] == "cpu" and len(cpu) > 8 else 0.0
    except (OSError, ValueError, IndexError):
        pass
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as fh:
                out["run_delay"][tid] = int(fh.read().split()[1]) * 1e-9
        except (OSError, ValueError, IndexError):
            out["run_delay"][tid] = 0.0
    return out


def steal_ticks() -> tuple[int, int]:
    """(steal, busy) clock ticks of all this machine's CPUs so far (``/proc/stat``): steal the time the
    hypervisor ran something else while a virtual CPU wanted to run, busy the time they ran anything
    (user, nice, system, irq, softirq) plus the steal; (0, 0) where Linux does not say. Over a stretch,
    Δsteal / Δbusy is the share of the time wanted on a core that the host took: wall time lost that no
    thread CPU clock counts."""
    try:
        with open("/proc/stat") as fh:
            f = fh.readline().split()
        if f[0] != "cpu" or len(f) < 9:
            return 0, 0
        v = [int(x) for x in f[1:9]]
        return v[7], v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
    except (OSError, ValueError, IndexError):
        return 0, 0


def off_cpu_since(before: dict) -> dict:
    """``off_cpu_counters`` now less ``before`` (same thread ids)."""
    now = off_cpu_counters(before["run_delay"].keys())
    return {"steal": now["steal"] - before["steal"],
            "run_delay": {t: now["run_delay"][t] - v for t, v in before["run_delay"].items()}}


def worker_tids(scene) -> list[int]:
    """Native thread ids of partition 0's workers: the calling thread, then its helpers (parked ones where
    the plans run on them, else the Python helpers started so far)."""
    import threading

    sim = scene.simulator
    helpers = (sim._parked.get(0) if hasattr(sim, "_parked") else None) or sim._helpers.get(0)
    threads = getattr(helpers, "_threads", None) or []
    return [threading.get_native_id()] + [t.native_id for t in threads if t.native_id is not None]


def threads_note(scene) -> str:
    """How many threads a scene's step uses: partitions × workers (core/layout.py)."""
    parts = scene.layout.partitions
    workers = sorted({p.workers for p in parts})
    return (f"polyphys {scene.layout.threads} thread(s): {len(parts)} env partition(s) × "
            f"{'/'.join(map(str, workers))} worker(s)")


def _steal_note(lo: list, hi: list, ratio: float, t_lo: int, t_hi: int) -> str:
    """The hypervisor's steal during the timed blocks of each scene, and the wall ratio with it taken out."""
    if not lo[1] or not hi[1]:
        return "hypervisor steal: not reported by this machine"
    s_lo, s_hi = lo[0] / lo[1], hi[0] / hi[1]
    return (f"hypervisor steal {100 * s_lo:.1f} % / {100 * s_hi:.1f} % of the busy CPU time during the "
            f"cpu_threads={t_lo} / {t_hi} blocks (all their rounds), the wall ratio without it "
            f"{ratio * (1 - s_lo) / (1 - s_hi):.2f}x")


def scaling_rows(make, case: str, items: float, unit_name: str, threads=(1, 2), quick: bool = False,
                 min_time: float = 1.0) -> list[dict]:
    """Thread scaling of one scene: ``make(cpu_threads)`` builds it (``items`` work items per step,
    e.g. particles × substeps). Rows: wall-clock rate with max(threads) against min(threads), the
    scenes stepped alternately in the same process (best of several blocks), and the critical-path
    rate (``critical_path``: each stage's slowest worker, by thread CPU time) — the figure that
    survives a machine whose scheduler gives each process group a fixed share of the cores. Rounds
    (one block of each scene): 10 (3 quick), more up to 40 while they took under ``min_time`` seconds.
    The wall row's note also gives the median of the rounds' paired ratios (the two scenes' blocks of
    the same round), which one lucky block does not move."""
    lo, hi = min(threads), max(threads)
    scenes = {t: make(t) for t in (lo, hi)}
    for sc in scenes.values():
        for _ in range(3):
            sc.step()
    best = dict.fromkeys(scenes, float("inf"))
    crit, cpu = dict.fromkeys(scenes, float("inf")), dict.fromkeys(scenes, float("inf"))
    n = 2 if quick else 3
    # alternately, best of several blocks (the load varies); each block times the wall clock and then
    # the critical path of the next steps, so both figures describe the same stretch of the scene (a
    # scene whose cost per step changes as it evolves — the granular block's impact — would otherwise
    # compare its wall ratio and its critical-path ratio at different times; benchmarks/results/pbd.md).
    # At least 3 (quick) or 5 rounds, more while the rounds so far took under ``min_time`` seconds (at
    # most 40): a scene of a few ms per step (FEM explicit 100k: a block of ~7 ms on 2 threads) gets enough
    # blocks that one of each scene misses the other processes' bursts (benchmarks/results/fem.md, round 12)
    # the hypervisor's steal over each scene's timed blocks (``steal_ticks``): wall time no CPU clock counts
    # 10 rounds at least (5 before 2026-12-02: the best of 5 blocks still missed the 100k scenes' 1 -> 2 thread
    # ratio by ±10 % between two idle runs, benchmarks/results/sph.md round 16)
    steal = {t: [0, 0] for t in scenes}
    walls = {t: [] for t in scenes}
    t_start, rounds = time.perf_counter(), 0
    while rounds < (3 if quick else 10) or (rounds < 40 and time.perf_counter() - t_start < min_time):
        rounds += 1
        for t, sc in scenes.items():
            s0 = steal_ticks()
            t0 = time.perf_counter()
            for _ in range(n):
                sc.step()
            walls[t].append((time.perf_counter() - t0) / n)
            best[t] = min(best[t], walls[t][-1])
            s1 = steal_ticks()
            steal[t][0] += s1[0] - s0[0]
            steal[t][1] += s1[1] - s0[1]
            r = critical_path(sc, 2)
            crit[t], cpu[t] = min(crit[t], r["critical"]), min(cpu[t], r["cpu"])
    rows = [row(f"{case}, thread scaling {lo} -> {hi}", f"{unit_name}, wall clock, cpu_threads={hi}", "1/s",
                items / best[hi], items / best[lo], f"polyphys cpu_threads={lo}", best[lo] / best[hi],
                f"{threads_note(scenes[hi])}; wall time: on a machine shared with other process groups the "
                f"scheduler caps this process's share of the cores, so this ratio understates the scaling; "
                f"{_steal_note(steal[lo], steal[hi], best[lo] / best[hi], lo, hi)}; best of {rounds} rounds, the "
                f"median of the rounds' paired ratios {statistics.median(a / b for a, b in zip(walls[lo], walls[hi])):.2f}x"),
            row(f"{case}, thread scaling {lo} -> {hi}", f"{unit_name}, critical path, cpu_threads={hi}", "1/s",
                items / crit[hi], items / crit[lo], f"polyphys cpu_threads={lo}", crit[lo] / crit[hi],
                f"critical path: per stage the slowest worker's thread CPU time, summed (the wall time on "
                f"free cores, less wake-ups); CPU time of all workers {cpu[hi] / cpu[lo]:.3f}x that of "
                f"cpu_threads={lo}")]
    for sc in scenes.values():
        sc.simulator.close()
    return rows
