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
    ``segments`` (per step: serial graphs and parallel stages). On a shared machine whose
    scheduler gives each process group a fixed share of the cores (Linux autogroup), wall time
    cannot show thread scaling; this figure can. Partitions are replayed one after another."""
    import concurrent.futures as cf

    import warp as wp

    sim = scene.simulator
    if not sim._warm or sim._graphs is None:
        raise RuntimeError("critical_path: step the scene twice first (warm-up and capture)")

    def timed(g):
        t0 = time.thread_time()
        wp.capture_launch(g)
        return time.thread_time() - t0

    cpu = crit = 0.0
    n_seg = 0
    pool = cf.ThreadPoolExecutor(max(p.workers for p in sim.parts))
    try:
        for _ in range(steps):
            for i in range(len(sim.parts)):
                prog = sim._graphs[i]
                for seg in (prog if isinstance(prog, list) else [prog]):
                    n_seg += 1
                    if not isinstance(seg, tuple):
                        t = timed(seg)
                        cpu += t
                        crit += t
                        continue
                    ts = [f.result() for f in [pool.submit(timed, g) for g in seg if g is not None]]
                    cpu += sum(ts)
                    crit += max(ts, default=0.0)
    finally:
        pool.shutdown()
    sim._after_step()
    return {"cpu": cpu / steps, "critical": crit / steps, "segments": n_seg / steps}
