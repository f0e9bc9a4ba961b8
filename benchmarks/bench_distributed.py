"""polyphys.distributed on a local Ray instance (docs/distributed.md): weak scaling and the cost of
gathering observations.

Scene: examples/rigid_incline.toml (a box with 4 contacts on a plane, float64), cpu_threads = 1 in every
process, so a worker process is one core's worth of stepping. References are measured in the same
run, in this process:

- weak scaling: env-steps/s of a pool of W worker processes × n envs (W = 1, 2), k steps per call,
  against one process stepping the same W·n envs (ratio > 1: the pool is faster), measured in
  alternating blocks (best of each). On a machine with W free cores the ideal ratio is W (each
  process steps its envs on its own core; the in-process reference has one thread). On a loaded
  machine W processes also get a larger share of the cores than one (the OS shares CPU time per
  runnable thread), which inflates the ratio: read it with the load.
- per-call overhead: the time of ``pool.step(k=1)`` minus the worker's own step time, with and
  without gathering observations (two getters, batch-first arrays of every env), and
  ``pool.observe()`` alone; reference: one in-process step.

Needs the ``ray`` extra; without it the module reports nothing and says why.
"""

from __future__ import annotations

import os
import time

from . import row, time_steps

HERE = os.path.dirname(os.path.abspath(__file__))
SCENE = os.path.join(os.path.dirname(HERE), "examples", "rigid_incline.toml")
OBS = ["box/get_pos", "box/get_dofs_velocity"]


def _factory_file(tmp: str) -> str:
    """The incline scene with one thread per process (cpu_threads = 1)."""
    text = open(SCENE).read().replace('precision = "64"', 'precision = "64"\ncpu_threads = 1')
    path = os.path.join(tmp, "incline_1thread.toml")
    with open(path, "w") as fh:
        fh.write(text)
    return path


def _local_scene(path: str, n_envs: int):
    from polyphys import run as runmod

    plan = runmod.parse_file(path)
    plan.n_envs = n_envs
    scene, _ = runmod.build_scene(plan)
    return scene


def _measure(path: str, w: int, n: int, k: int, min_time: float, repeats: int, load: float) -> list[dict]:
    from polyphys.distributed import ScenePool

    rows = []
    ref = _local_scene(path, w * n)

    def ref_k():
        for _ in range(k):
            ref.step()

    t0 = time.perf_counter()
    pool = ScenePool(path, w, n, timeout_s=1800)
    build = time.perf_counter() - t0
    try:
        # alternate blocks of the reference and the pool, best of each: both see the same load
        t_ref = t_pool = float("inf")
        for _ in range(repeats):
            t_ref = min(t_ref, time_steps(ref_k, min_time=min_time, repeats=1))
            t_pool = min(t_pool, time_steps(lambda: pool.step(k=k), min_time=min_time, repeats=1))
        rate, rate_ref = w * n * k / t_pool, w * n * k / t_ref
        rows.append(row(f"incline box, {w} worker(s) x {n} envs, {k} steps/call",
                        "weak scaling: env-steps/s", "env-steps/s", rate, rate_ref,
                        f"1 process, {w * n} envs, 1 thread", ratio=rate / rate_ref,
                        notes=f"pool build {build:.1f} s; ideal ratio {w} with {w} free cores; "
                              f"load {load:.1f} on {os.cpu_count()} cores"))
        if w == 2:
            one = _local_scene(path, n)
            t_one = time_steps(one.step, min_time=min_time, repeats=repeats)
            t1 = time_steps(lambda: pool.step(k=1), min_time=min_time, repeats=repeats)
            t1_obs = time_steps(lambda: pool.step(k=1, obs=OBS), min_time=min_time, repeats=repeats)
            t_obs = time_steps(lambda: pool.observe(OBS), min_time=min_time, repeats=repeats)
            rows.append(row(f"{w} workers x {n} envs, 1 step/call", "pool call overhead (no observations)",
                            "us/call", (t1 - t_one) * 1e6,
                            notes=f"pool.step(k=1) {t1 * 1e6:.0f} us minus one in-process step of a "
                                  f"worker's envs {t_one * 1e6:.0f} us: actor calls, scheduling, gather"))
            rows.append(row(f"{w} workers x {n} envs, 1 step/call", "gathering observations per step",
                            "us/call", (t1_obs - t1) * 1e6,
                            notes=f"pool.step(k=1, obs) {t1_obs * 1e6:.0f} us minus pool.step(k=1) "
                                  f"{t1 * 1e6:.0f} us; {OBS}: {w * n} envs x 9 float64 gathered into "
                                  f"one batch-first array each"))
            rows.append(row(f"{w} workers x {n} envs", "pool.observe() alone", "us/call", t_obs * 1e6,
                            notes="one round trip to every worker and the concatenation"))
    finally:
        pool.close()
    return rows


def run(quick: bool = False) -> list[dict]:
    import tempfile

    try:
        import ray
    except ImportError:
        return [row("polyphys.distributed", "skipped", "-", float("nan"),
                    notes="Ray is not installed: pip install 'polyphys[ray]'")]
    import warp as wp

    wp.config.log_level = getattr(wp, "LOG_WARNING", 30)
    min_time = 0.3 if quick else 1.0
    repeats = 2 if quick else 4
    n = 32 if quick else 128          # envs per worker
    k = 10                            # steps per pool call
    load = os.getloadavg()[0]
    rows = []
    started = False
    if not ray.is_initialized():
        ray.init(address="local", num_cpus=2, include_dashboard=False, object_store_memory=128 * 1024 * 1024,
                 log_to_driver=False)
        started = True
    try:
        with tempfile.TemporaryDirectory(prefix="polyphys-bench-dist-") as tmp:
            path = _factory_file(tmp)
            for w in (1, 2):
                rows += _measure(path, w, n, k, min_time, repeats, load)
    finally:
        if started:
            ray.shutdown()
    return rows
