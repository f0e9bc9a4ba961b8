"""Where a partition's 2-worker step loses against half its 1-worker step (issue 25).

``python -m benchmarks.profile_threads CASE [CASE ...]`` with CASE one of ``wcsph20k wcsph100k dfsph100k
mpm100k pbd100k fem100k``: builds the scene at ``cpu_threads`` 1 and 2 (n_envs 1), warms both up, then
replays the 2-worker scene's program of segments (core/simulator.py) the way the simulator does, timing
each segment: its wall time, each worker's busy time (wall and thread CPU) and the helper's wake-up
latency (its start after worker 0's, or after the barrier before a segment). Prints per kind of segment (serial
graph, parallel stage) the count per step and the time, and the step's budget: the 1-thread step, the
2-thread step, the sum of the slowest workers' busy times (the step on two free cores with free
barriers), the serial graphs, the barrier overhead (segment wall less its slowest worker) and the
imbalance (slowest worker less the mean). Then the off-CPU budget of the same steps (means): the 1-thread
step's wall as its thread CPU plus its off-CPU time, split into run-queue wait (runnable while another thread
of this machine had the core: ``/proc/self/task/TID/schedstat``) and the rest (in a KVM guest the hypervisor's
steal, which no thread CPU clock counts); the 2-worker step's wall as its CPU critical path plus the off-CPU
time on it (the slowest worker's wall less its CPU, per segment) plus barriers, wake-ups and the plan's start
and end; and the machine's steal (``/proc/stat``) over each.

``--segments``: per segment of the 2-worker program, its wall time and each worker's busy time. ``--kernels``:
per kernel, the thread CPU time per substep of the uncaptured step (``bench_sph.stage_times``) on 1 worker,
on 2 workers one after the other (``run_stage`` made serial: each worker's share without the other running)
and on 2 workers at once, rounds alternated in one process, best of the rounds. What 2-serial costs above
1 is work the split adds (per-worker launches, rescans); what 2-at-once costs above 2-serial is what the
workers do to each other (false sharing, shared caches and memory bandwidth).
"""

from __future__ import annotations

import sys
import threading
import time

import numpy as np


def _make(case: str, threads: int):
    if case.startswith(("wcsph", "dfsph")):
        from .bench_sph import _pp_scene

        n = 20000 if case.endswith("20k") else 100000
        return _pp_scene(n, 1, case[:5], threads)[0]
    if case == "mpm100k":
        from .bench_mpm import _polyphys

        return _polyphys(46, 1, 4, threads)[0]
    if case == "pbd100k":
        from .bench_pbd import _pp_granular_scene

        return _pp_granular_scene(47, 1, threads)
    if case == "fem100k":
        from .bench_fem import SIZES, _scene

        return _scene(SIZES["100k"], "explicit", 1, "neo_hookean", threads=threads)[0]
    raise SystemExit(f"unknown case {case!r}")


def _walk(program, helpers, rec):
    """``_run_program`` with timing: rec gets (kind, wall, [(busy wall, busy cpu, wake latency)]). A plan
    (one launch per worker for a stretch of segments, core/simulator.py) is timed by its workers' clocks
    per op: a segment's wall is its slowest worker's busy time plus the wake-up after the barrier that
    ends it (the last worker's arrival to the latest exit), a helper's wake latency the wake-up after the
    barrier before the segment (its start after worker 0's for the first)."""
    import warp as wp
    from polyphys.simulator import _flag, _Loop, _Plan, _Stage

    for seg in program:
        if isinstance(seg, _Loop):
            while _flag(seg.cond):
                _walk(seg.body, helpers, rec)
            continue
        if isinstance(seg, _Plan):
            if not seg.times[0].shape[0]:
                seg.timed(True)
            seg.run(helpers)
            t = seg.segment_times()
            for s, (part, busy) in enumerate(zip(seg.segments, t["busy"])):
                ends = max(t["exit"][s]) if s < len(t["exit"]) else 0.0
                wake = t["entry"] if s == 0 else t["exit"][s - 1]
                if isinstance(part, _Stage):
                    ws = [(b[0], b[1], wake[w]) for w, b in enumerate(busy) if seg.segments[s].graphs[w]]
                    rec.append(("parallel", max(b[0] for b in busy) + ends, ws or [(0.0, 0.0, 0.0)]))
                else:
                    rec.append(("serial", busy[0][0] + ends, [(busy[0][0], busy[0][1], 0.0)]))
            continue
        if isinstance(seg, tuple):
            own, others = seg[0], seg[1]
            res = {}

            def wrap(i, fn, t_rel, res=res):
                def task():
                    t0, c0 = time.perf_counter(), time.thread_time()
                    fn()
                    res[i] = (time.perf_counter() - t0, time.thread_time() - c0, t0 - t_rel[0])
                return task

            t_rel = [0.0]
            tasks = [None if fn is None else wrap(i + 1, fn, t_rel) for i, fn in enumerate(others)]
            t0 = time.perf_counter()
            t_rel[0] = t0
            helpers.run(tasks, None if own is None else wrap(0, own, t_rel))
            wall = time.perf_counter() - t0
            rec.append(("parallel", wall, [res[k] for k in sorted(res)]))
        else:
            t0, c0 = time.perf_counter(), time.thread_time()
            wp.capture_launch(seg)
            w = time.perf_counter() - t0
            rec.append(("serial", w, [(w, time.thread_time() - c0, 0.0)]))


def profile(case: str, steps: int = 6) -> None:
    import os

    sc1, sc2 = _make(case, 1), _make(case, 2)
    for sc in (sc1, sc2):
        for _ in range(3):
            sc.step()
    t1 = t2 = float("inf")
    for _ in range(3):
        for sc, k in ((sc1, 1), (sc2, 2)):
            t0 = time.perf_counter()
            for _ in range(3):
                sc.step()
            dt = (time.perf_counter() - t0) / 3
            if k == 1:
                t1 = min(t1, dt)
            else:
                t2 = min(t2, dt)
    sim = sc2.simulator
    prog, helpers = sim._graphs[0], sim._parked.get(0) or sim._helpers[0]
    # the 1-thread reference step (thread CPU) and the profiled 2-worker replays alternate, so both
    # describe the same stretch of the scene (the granular block's cost per step grows at its impact)
    from . import off_cpu_counters, off_cpu_since, worker_tids

    best, c1, w1 = None, float("inf"), float("inf")
    tids = worker_tids(sc2)
    # the off-CPU budget, summed over the steps (means of the same steps, so the parts add up)
    acc = {k: 0.0 for k in ("w1", "c1", "rd1", "st1", "w2", "crit", "busy", "st2")}
    acc["rd2"], acc["off2"] = [0.0] * len(tids), [0.0] * sim.parts[0].workers
    for _ in range(steps):
        oc = off_cpu_counters(tids[:1])
        c0, t0 = time.thread_time(), time.perf_counter()
        sc1.step()
        dc, dw = time.thread_time() - c0, time.perf_counter() - t0
        d = off_cpu_since(oc)
        acc["w1"] += dw
        acc["c1"] += dc
        acc["rd1"] += d["run_delay"][tids[0]]
        acc["st1"] += d["steal"]
        c1, w1 = min(c1, dc), min(w1, dw)
        rec = []
        oc = off_cpu_counters(tids)
        t0 = time.perf_counter()
        _walk(prog, helpers, rec)
        wall = time.perf_counter() - t0
        d = off_cpu_since(oc)
        acc["w2"] += wall
        acc["st2"] += d["steal"]
        for j, t in enumerate(tids):
            acc["rd2"][j] += d["run_delay"][t]
        for r in rec:
            acc["crit"] += max(b[1] for b in r[2])
            acc["busy"] += max(b[0] for b in r[2])
            for j, b in enumerate(r[2]):
                if j < len(acc["off2"]):
                    acc["off2"][j] += b[0] - b[1]
        if best is None or wall < best[0]:
            best = (wall, rec)
        sim._after_step()
    from . import _untime

    _untime(sim)
    wall, rec = best
    par = [r for r in rec if r[0] == "parallel"]
    ser = [r for r in rec if r[0] == "serial"]
    crit = sum(max(b[0] for b in r[2]) for r in par) + sum(r[1] for r in ser)
    barrier = sum(r[1] - max(b[0] for b in r[2]) for r in par)
    imbalance = sum(max(b[0] for b in r[2]) - np.mean([b[0] for b in r[2]]) for r in par if len(r[2]) > 1)
    wake = [b[2] for r in par for b in r[2][1:]] or [0.0]
    one_sided = sum(1 for r in par if len(r[2]) < 2)
    short = [r[1] for r in par if r[1] < 200e-6]
    print(f"== {case}: load {os.getloadavg()[0]:.2f}")
    print(f"  step wall: 1 thread {t1 * 1e3:.2f} ms, 2 threads {t2 * 1e3:.2f} ms ({t1 / t2:.2f}x); "
          f"profiled replay {wall * 1e3:.2f} ms")
    print(f"  segments per step: {len(par)} parallel ({one_sided} with one worker busy), {len(ser)} serial")
    print(f"  serial graphs {sum(r[1] for r in ser) * 1e3:.2f} ms; parallel stages {sum(r[1] for r in par) * 1e3:.2f} ms "
          f"of which barrier overhead {barrier * 1e3:.2f} ms ({barrier / max(len(par), 1) * 1e6:.0f} us each), "
          f"imbalance {imbalance * 1e3:.2f} ms")
    print(f"  helper wake-up latency: median {np.median(wake) * 1e6:.0f} us, max {max(wake) * 1e6:.0f} us; "
          f"stages under 200 us: {len(short)} ({sum(short) * 1e3:.2f} ms)")
    ccrit = sum(max(b[1] for b in r[2]) for r in rec)
    cimb = sum(max(b[1] for b in r[2]) - np.mean([b[1] for b in r[2]]) for r in par if len(r[2]) > 1)
    print(f"  by thread CPU time: 1-thread step {c1 * 1e3:.2f} ms; 2 workers: critical path {ccrit * 1e3:.2f} ms "
          f"({c1 / ccrit:.2f}x), imbalance {cimb * 1e3:.2f} ms, serial {sum(r[2][0][1] for r in ser) * 1e3:.2f} ms, "
          f"both workers {sum(b[1] for r in rec for b in r[2]) / c1:.3f}x the 1-thread CPU")
    print(f"  critical path (slowest worker, wall) {crit * 1e3:.2f} ms -> {w1 / crit:.2f}x of the 1-thread step "
          f"at the same steps ({w1 * 1e3:.2f} ms); "
          f"busy CPU both workers {sum(b[1] for r in rec for b in r[2]) * 1e3:.2f} ms")
    m = {k: (v / steps * 1e3 if not isinstance(v, list) else [x / steps * 1e3 for x in v]) for k, v in acc.items()}
    print(f"  off-CPU budget (ms per step, mean of {steps}; run-queue wait: runnable, another thread of this machine "
          f"had the core; the rest of a thread's off-CPU time while it replays: the hypervisor's steal): "
          f"1 thread: wall {m['w1']:.2f} = CPU {m['c1']:.2f} + off-CPU {m['w1'] - m['c1']:.2f} (run-queue wait "
          f"{m['rd1']:.2f}, rest {m['w1'] - m['c1'] - m['rd1']:.2f}); machine's steal {m['st1']:.2f} (all cores)")
    print(f"  2 workers: wall {m['w2']:.2f} = CPU critical path {m['crit']:.2f} + off-CPU on it "
          f"{m['busy'] - m['crit']:.2f} + barriers, wake-ups, plan start/end {m['w2'] - m['busy']:.2f}; per worker "
          f"off-CPU while replaying " + " / ".join(f"{x:.2f}" for x in m["off2"]) + ", run-queue wait (whole step) "
          + " / ".join(f"{x:.2f}" for x in m["rd2"]) + f"; machine's steal {m['st2']:.2f} (all cores)")
    print(f"  wall ratio {m['w1'] / m['w2']:.2f}x, CPU critical-path ratio {m['c1'] / m['crit']:.2f}x (same steps)")




def per_segment(case: str, steps: int = 5) -> None:
    """Per segment of one substep-long stretch: median wall, worker busy times, overhead."""
    sc = _make(case, 2)
    for _ in range(3):
        sc.step()
    sim = sc.simulator
    import os
    helpers = sim._parked.get(0) or sim._helpers[0]
    if os.environ.get("PIN"):      # pinned: the Python helpers (a parked helper runs no Python to pin itself)
        os.sched_setaffinity(0, {0})
        sim._helpers[0].run([lambda: os.sched_setaffinity(0, {1})], None)
        helpers = sim._helpers[0]
    recs = []
    for _ in range(steps):
        rec = []
        _walk(sim._graphs[0], helpers, rec)
        recs.append(rec)
    sim._after_step()
    from . import _untime

    _untime(sim)
    n = min(len(r) for r in recs)
    print(f"== {case} per segment (median of {steps} steps, us): kind wall w0 w1 overhead")
    for k in range(n):
        kind = recs[0][k][0]
        wall = np.median([r[k][1] for r in recs]) * 1e6
        ws = [np.median([r[k][2][j][0] for r in recs]) * 1e6 for j in range(len(recs[0][k][2]))]
        cs = [np.median([r[k][2][j][1] for r in recs]) * 1e6 for j in range(len(recs[0][k][2]))]
        print(f"  {k:3d} {kind:8s} {wall:9.0f} " + " ".join(f"{x:9.0f}" for x in ws) + f" {wall - max(ws):7.0f}  cpu "
              + " ".join(f"{x:9.0f}" for x in cs))


def per_kernel(case: str, rounds: int = 6) -> None:
    """Per kernel: thread CPU ms per substep on 1 worker, 2 workers one after the other, 2 at once."""
    import os

    from polyphys import simulator

    from .bench_sph import stage_times

    def serial(part, stage, tag=None, after=None):
        for w in range(part.workers):
            stage(w)

    at_once = simulator.run_stage
    scenes = {1: _make(case, 1), 2: _make(case, 2)}
    for sc in scenes.values():
        for _ in range(2):
            sc.step()
    modes = ("1", "2 serial", "2 at once")
    res = {m: [] for m in modes}
    loads = []
    try:
        for _ in range(rounds):
            for m in modes:
                simulator.run_stage = serial if m == "2 serial" else at_once
                res[m].append(stage_times(scenes[1 if m == "1" else 2], steps=1))
            loads.append(os.getloadavg()[0])
    finally:
        simulator.run_stage = at_once
    print(f"== {case} per kernel (thread CPU ms per substep, best of {rounds} rounds; load {min(loads):.2f}-{max(loads):.2f})")
    print(f"  {'kernel':24s} " + " ".join(f"{m:>9s}" for m in modes) + "  serial/1  at once/serial")
    best = {m: {} for m in modes}
    for m in modes:
        for d in res[m]:
            for name, (t, _) in d.items():
                best[m][name] = min(best[m].get(name, float("inf")), t)
    for name in best["2 at once"]:
        v = [best[m].get(name, 0.0) for m in modes]
        print(f"  {name:24s} " + " ".join(f"{x:9.2f}" for x in v)
              + (f"  {v[1] / v[0]:8.2f}  {v[2] / v[1]:13.2f}" if v[0] and v[1] else ""))
    tot = [sum(best[m].values()) for m in modes]
    print(f"  {'sum of the bests':24s} " + " ".join(f"{x:9.2f}" for x in tot)
          + f"  {tot[1] / tot[0]:8.2f}  {tot[2] / tot[1]:13.2f}")
    for m in modes:
        print(f"  round totals, {m}: " + ", ".join(f"{sum(t for t, _ in d.values()):.1f}" for d in res[m]))


def claim_ab(case: str, rounds: int = 8, busy: bool = False, what: str = "sort") -> None:
    """In-process A/B of SPHSolver's claimed sort scatter and integration (``claim_sort``,
    ``claim_integrate``) against their fixed shares (``what`` "sort"), or of the claimed cell keys and
    counts (``claim_count``) against theirs, both with the scatter and integration claimed (``what``
    "count"): two 2-worker scenes, one step of each per round
    (order rotated), each segment of the replayed program timed (``_walk``). Prints per variant the
    step wall and the sum of the parallel segments other than the three claimed neighbour stages per
    substep (the sort's stages and the integration: all but the 3 · substeps longest segments, which are
    density, accelerate and wall pressure), min and median over the rounds, and the first segments. ``busy``: the
    calling worker pinned to cpu0, the helper to cpu1, and a busy loop pinned to cpu1 while the
    rounds run (one core shared: the unequal-core case)."""
    import os
    import subprocess

    from polyphys.plugins.sph.solver import SPHSolver

    from . import _untime, worker_tids

    variants = {"fixed": False, "claimed": True}
    scenes = {}
    try:
        for name, on in variants.items():
            if what == "count":
                SPHSolver.claim_count = on
            else:
                SPHSolver.claim_sort = SPHSolver.claim_integrate = on
                SPHSolver.claim_count = False
            scenes[name] = _make(case, 2)
    finally:
        SPHSolver.claim_sort = SPHSolver.claim_integrate = SPHSolver.claim_count = True
    for sc in scenes.values():
        for _ in range(2):
            sc.step()
    substeps = scenes["fixed"].simulator.layout.substeps
    loop = None
    if busy:
        for sc in scenes.values():
            tids = worker_tids(sc)
            os.sched_setaffinity(tids[0], {0})
            for t in tids[1:]:
                os.sched_setaffinity(t, {1})
            print("  pinned worker threads (tid: cpus): " + ", ".join(f"{t}: {sorted(os.sched_getaffinity(t))}"
                                                                 for t in tids))
        loop = subprocess.Popen([sys.executable, "-c", "import os; os.sched_setaffinity(0, {1})\nwhile True: pass"])
    res = {k: {"wall": [], "small": [], "segs": []} for k in variants}
    loads = []
    try:
        for r in range(rounds):
            names = list(variants) if r % 2 == 0 else list(variants)[::-1]
            for name in names:
                sim = scenes[name].simulator
                helpers = sim._parked.get(0) or sim._helpers[0]
                rec = []
                t0 = time.perf_counter()
                _walk(sim._graphs[0], helpers, rec)
                res[name]["wall"].append(time.perf_counter() - t0)
                sim._after_step()
                par = sorted(x[1] for x in rec if x[0] == "parallel")
                res[name]["small"].append(sum(par[:-3 * substeps]))
                res[name]["segs"].append([x[1] for x in rec[:10]])
            loads.append(os.getloadavg()[0])
    finally:
        if loop is not None:
            loop.kill()
            loop.wait()
        for sc in scenes.values():
            _untime(sc.simulator)
    print(f"== {case} claimed vs fixed {'cell keys + counts' if what == 'count' else 'sort scatter + integration'}, "
          f"2 workers{' (cpu1 busy)' if busy else ''}: "
          f"{rounds} rounds, load {min(loads):.2f}-{max(loads):.2f}")
    for name in variants:
        w, sm = np.array(res[name]["wall"]) * 1e3, np.array(res[name]["small"]) * 1e3
        print(f"  {name:8s} step wall min {w.min():8.2f} median {np.median(w):8.2f} ms; sort + integration "
              f"segments min {sm.min():6.2f} median {np.median(sm):6.2f} ms")
        segs = np.median(np.array(res[name]["segs"]), axis=0) * 1e6
        print("    first segments (median us): " + " ".join(f"{x:.0f}" for x in segs))


if __name__ == "__main__":
    threading.current_thread().name = "profile"
    # ``--claim[=count] [--busy] [--rounds=N]``: claim_ab (SPH cases)
    args = sys.argv[1:] or ["wcsph20k"]
    detail, kernels = "--segments" in args, "--kernels" in args
    for c in [a for a in args if not a.startswith("--")]:
        claim = [a for a in args if a.startswith("--claim")]
        if claim:
            rounds = [int(a.split("=")[1]) for a in args if a.startswith("--rounds=")]
            claim_ab(c, *rounds[:1], busy="--busy" in args, what=claim[0].partition("=")[2] or "sort")
        else:
            per_kernel(c) if kernels else per_segment(c) if detail else profile(c)
