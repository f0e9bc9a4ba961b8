"""WCSPH per core against the Taichi reference, in one process (issue 25, round 17).

``python -m benchmarks.probe_sph_core [N] [--rounds=R] [--steps=K] [--dfsph] [--envs=E]``: builds polyphys' dam
break (``bench_sph._pp_scene``, WCSPH or DFSPH, n_envs E (1), ``cpu_threads`` 1) and the Taichi reference on one CPU
thread (``cpu_max_num_threads=1``), warms both up, then alternates them R rounds (order rotated), each
round K steps of each; per engine the process CPU time and the wall time per step, min and median over
the rounds, and their ratio (Taichi / polyphys: above 1 polyphys is faster; with E envs Taichi's time per step
is counted E times, one scene after the other). Then per stage, ms per
substep: polyphys' kernels (``bench_sph.stage_times``, thread CPU, uncaptured) and Taichi's four kernels
(process CPU around each call, a CPU launch returns when done; WCSPH only), best of the rounds. DFSPH:
the Jacobi iterations per substep of both engines' timed steps (polyphys' from ``solve_iters``). The load
(``/proc/loadavg``) is printed at the start and the end.
"""

from __future__ import annotations

import sys
import time

import numpy as np


def _load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def _taichi_stages(step, rounds: int = 3) -> dict:
    import taichi as ti

    best = {}
    for _ in range(rounds):
        acc = dict.fromkeys(step.stages, 0.0)
        for _ in range(6):
            for name, k in step.stages.items():
                t0 = time.process_time()
                k()
                ti.sync()
                acc[name] += time.process_time() - t0
        for name, t in acc.items():
            best[name] = min(best.get(name, 1e9), 1e3 * t / 6)
    return best


def main(argv) -> None:
    from .bench_sph import _pp_scene, _taichi, _taichi_dfsph, stage_times

    n = int(next((a for a in argv if a.isdigit()), 20000))
    rounds = int(next((a.split("=")[1] for a in argv if a.startswith("--rounds=")), 8))
    steps = int(next((a.split("=")[1] for a in argv if a.startswith("--steps=")), 2))
    print(f"load at start {_load()}  n={n} rounds={rounds} steps/round={steps} {' '.join(argv)}", flush=True)
    solver = "dfsph" if "--dfsph" in argv else "wcsph"
    print(f"solver {solver}", flush=True)
    envs = int(next((a.split("=")[1] for a in argv if a.startswith("--envs=")), 1))
    scene, pps = _pp_scene(n, envs, solver, 1)
    tstep, tps = (_taichi_dfsph if solver == "dfsph" else _taichi)(n, 1)
    engines = {"polyphys": scene.step, "taichi": tstep}
    for f in engines.values():
        for _ in range(3):
            f()
    cpu = {k: [] for k in engines}
    wall = {k: [] for k in engines}
    names = list(engines)
    for r in range(rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            f = engines[name]
            c0, w0 = time.process_time(), time.perf_counter()
            for _ in range(steps):
                f()
            cpu[name].append((time.process_time() - c0) / steps)
            wall[name].append((time.perf_counter() - w0) / steps)
    for what, d in (("CPU", cpu), ("wall", wall)):
        pp, ti_ = np.array(d["polyphys"]), envs * np.array(d["taichi"])
        print(f"{what} ms/step min/median: polyphys {1e3 * pp.min():.1f} / {1e3 * np.median(pp):.1f}, "
              f"taichi {1e3 * ti_.min():.1f} / {1e3 * np.median(ti_):.1f}; ratio taichi/polyphys "
              f"{ti_.min() / pp.min():.3f} (min) / {np.median(ti_) / np.median(pp):.3f} (median); "
              f"paired median {np.median(ti_ / pp):.3f}; polyphys {pps / pp.min():.3g} particle-substeps/s")
    if solver == "dfsph":
        k = max(tstep.n_substeps, 1)
        print(f"taichi iterations per substep over all its steps: {tstep.div_iters / k:.2f} divergence + "
              f"{tstep.density_iters / k:.2f} density")
    st = stage_times(scene, 3)
    total = sum(t for t, _ in st.values())
    print(f"polyphys per substep (thread CPU, uncaptured): total {total:.2f} ms: "
          + ", ".join(f"{k} {t:.2f}" + (f" ({c:.0f}x)" if c > 1.05 else "") for k, (t, c) in st.items()))
    if solver == "dfsph":
        print(f"load at end {_load()}", flush=True)
        return
    ts = _taichi_stages(tstep)
    print(f"taichi per substep (process CPU, best of 3): total {sum(ts.values()):.2f} ms: "
          + ", ".join(f"{k} {t:.2f}" for k, t in ts.items()))
    print(f"load at end {_load()}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
