"""Where the rigid step's 2-thread wall clock goes, against mujoco.rollout's 1 -> 2 thread scaling (issue 16).

``python -m benchmarks.probe_rigid_threads [--scenes boxes,humanoid] [--n 1024,64] [--rounds 6] [--steps 4]``

The scenes of bench_constraint (settled state, MuJoCo-compatible options) at ``cpu_threads`` 1 and 2 (2: two
env partitions of one worker each, core/layout.split_envs, stepped by the simulator's partition threads), in
one process, rounds alternated (order rotated), per round ``steps`` steps of each:

- wall per env-step: polyphys 1 and 2 threads, mujoco.rollout nthread 1 and 2 (default chunks: nbatch/20 rollouts
  per task, taken by whichever thread is free) and nthread 2 with ``chunk_size = n/2`` (one static half per thread,
  as our partitions), same copies, ``nstep = steps``; MuJoCo's process CPU time (both threads) per env-step;
- the 2-thread step taken apart (the simulator's own replay, instrumented): per partition its wall and thread
  CPU time (wall - CPU: time the thread was runnable but not running, or waiting), the dispatch (step start to
  the partition's start), the join (last partition's end to the step's end of the replays) and the checks after
  the step (``Simulator._after_step``: collision budgets, row overflow, NaN flags) — the serial part;
- the same two partitions replayed one after the other on one thread (``alone``): their thread CPU without the
  other partition running, so ``at once / alone`` is what the two threads cost each other (shared L3, memory
  bandwidth) and ``alone / 1 thread`` what the split itself adds.

Figures per env-step (µs): min and median over the rounds; ``loadavg`` printed per scene.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time

import numpy as np

from . import bench_constraint as B


def _instrument(sim, rec):
    """Wrap ``sim._replay`` and ``sim._after_step`` (instance attributes) to append timings to ``rec``."""
    replay, after = sim._replay, sim._after_step

    def timed_replay(i):
        t0, c0 = time.perf_counter(), time.thread_time()
        replay(i)
        rec.append(("part", i, t0, time.perf_counter(), time.thread_time() - c0, threading.get_ident()))

    def timed_after():
        t0 = time.perf_counter()
        after()
        rec.append(("after", -1, t0, time.perf_counter(), 0.0, 0))

    sim._replay, sim._after_step = timed_replay, timed_after

    def undo():
        del sim._replay, sim._after_step
    return undo


def _step_parts(scene, steps, alone=False):
    """Per step: dict of the 2-thread step's parts (seconds). ``alone``: the partitions one after the other
    on this thread (the simulator's pool set aside)."""
    sim = scene.simulator
    rec: list = []
    undo = _instrument(sim, rec)
    pool = sim._pool
    if alone:
        sim._pool = None
    out = []
    try:
        for _ in range(steps):
            rec.clear()
            t0 = time.perf_counter()
            scene.step()
            t1 = time.perf_counter()
            parts = sorted((r for r in rec if r[0] == "part"), key=lambda r: r[1])
            aft = [r for r in rec if r[0] == "after"]
            first, last = min(r[2] for r in parts), max(r[3] for r in parts)
            a = (aft[0][3] - aft[0][2]) if aft else 0.0
            out.append(dict(step=t1 - t0, wall=[r[3] - r[2] for r in parts], cpu=[r[4] for r in parts],
                            dispatch=first - t0, join=(aft[0][2] if aft else t1) - last, after=a,
                            tail=t1 - (aft[0][3] if aft else last), threads=len({r[5] for r in parts})))
    finally:
        sim._pool = pool
        undo()
    return out


def _cpu_step(scene, steps):
    """Thread CPU (this thread) and wall per step of a one-thread scene."""
    c0, t0 = time.thread_time(), time.perf_counter()
    for _ in range(steps):
        scene.step()
    return (time.thread_time() - c0) / steps, (time.perf_counter() - t0) / steps


def _mj_runner(m, d, n, nstep):
    import mujoco
    from mujoco import rollout

    state0, warm0 = B._mj_initial(m, d, n)
    datas = {k: [mujoco.MjData(m) for _ in range(k)] for k in (1, 2)}
    models = [m] * n

    def run(threads, chunk=None):
        p0, t0 = time.process_time(), time.perf_counter()
        rollout.rollout(models, datas[threads], state0, nstep=nstep, initial_warmstart=warm0, chunk_size=chunk)
        return time.perf_counter() - t0, time.process_time() - p0

    run(1), run(2), run(2, n // 2)
    return run


def probe(which, path, settle, n, rounds, steps):
    import warp as wp

    m = B._mj_model(path)
    d = B._settle(which, m, settle)
    dt = float(m.opt.timestep)
    sc = {}
    for k in (1, 2):
        sc[k], ent = B._pp_scene(path, dt, n, k)
        B._pp_set(sc[k], ent, d, n)
        for _ in range(3):
            sc[k].step()
    mj = _mj_runner(m, d, n, steps)
    res = {key: [] for key in ("pp1 wall", "pp1 cpu", "pp2 wall", "mj1 wall", "mj1 cpu", "mj2 wall", "mj2 cpu",
                               "mj2 static wall", "mj2 static cpu")}
    parts2, alone = [], []
    loads = []
    jobs = ["pp1", "pp2", "pp2 parts", "pp2 alone", "mj1", "mj2", "mj2 static"]
    for r in range(rounds):
        loads.append(os.getloadavg()[0])
        order = jobs[r % len(jobs):] + jobs[:r % len(jobs)]
        for job in order:
            if job == "pp1":
                c, w = _cpu_step(sc[1], steps)
                res["pp1 cpu"].append(c / n)
                res["pp1 wall"].append(w / n)
            elif job == "pp2":
                t0 = time.perf_counter()
                for _ in range(steps):
                    sc[2].step()
                res["pp2 wall"].append((time.perf_counter() - t0) / steps / n)
            elif job == "pp2 parts":
                parts2 += _step_parts(sc[2], steps)
            elif job == "pp2 alone":
                alone += _step_parts(sc[2], steps, alone=True)
            else:
                w, c = mj(int(job[2]), n // 2 if job.endswith("static") else None)
                res[f"{job} wall"].append(w / (n * steps))
                res[f"{job} cpu"].append(c / (n * steps))
    for k in sc:
        sc[k].simulator.close()
    wp.synchronize()
    us = 1e6

    def mm(xs):
        return f"{min(xs) * us:7.2f} / {np.median(xs) * us:7.2f}"

    print(f"== {which}, n_envs {n}: {rounds} rounds × {steps} steps; load {min(loads):.2f}-{max(loads):.2f} "
          f"(min / median, µs per env-step)")
    for key, xs in res.items():
        print(f"  {key:18s} {mm(xs)}")
    pp1w, pp2w = min(res["pp1 wall"]), min(res["pp2 wall"])
    mj1w, mj2w = min(res["mj1 wall"]), min(res["mj2 wall"])
    print(f"  1->2 thread wall scaling (mins): polyphys {pp1w / pp2w:.2f}x, mujoco.rollout {mj1w / mj2w:.2f}x "
          f"(static halves {mj1w / min(res['mj2 static wall']):.2f}x); 2-thread ratio MuJoCo/ours {mj2w / pp2w:.2f}x; "
          f"1-thread wall ratio {mj1w / pp1w:.2f}x")
    print(f"  CPU both threads / 1 thread (medians): polyphys "
          f"{np.median([sum(p['cpu']) for p in parts2]) / n / np.median(res['pp1 cpu']):.3f}x, mujoco "
          f"{np.median(res['mj2 cpu']) / np.median(res['mj1 cpu']):.3f}x")
    for name, rows in (("2 threads", parts2), ("alone (serial)", alone)):
        def col(f, rows=rows):
            xs = [f(p) for p in rows]
            return f"{min(xs) * us / n:6.2f} / {np.median(xs) * us / n:6.2f}"
        print(f"  {name:15s} step {col(lambda p: p['step'])} | part wall {col(lambda p: p['wall'][0])}, "
              f"{col(lambda p: p['wall'][1])} | part cpu {col(lambda p: p['cpu'][0])}, {col(lambda p: p['cpu'][1])}")
        print(f"  {'':15s} dispatch {col(lambda p: p['dispatch'])} | join {col(lambda p: p['join'])} | "
              f"after {col(lambda p: p['after'])} | tail {col(lambda p: p['tail'])} | "
              f"wall-cpu (max part) {col(lambda p: max(w - c for w, c in zip(p['wall'], p['cpu'])))} | "
              f"|cpu0-cpu1| {col(lambda p: abs(p['cpu'][0] - p['cpu'][1]))}")
    at_once = np.median([sum(p["cpu"]) for p in parts2])
    al = np.median([sum(p["cpu"]) for p in alone])
    print(f"  partitions' CPU (sum, median): at once {at_once * us / n:.2f}, alone {al * us / n:.2f} "
          f"(at once / alone {at_once / al:.3f}x); alone / 1 thread {al / n / np.median(res['pp1 cpu']):.3f}x")
    print(f"  serial per step (median µs, whole step): dispatch {np.median([p['dispatch'] for p in parts2]) * us:.0f}, "
          f"join {np.median([p['join'] for p in parts2]) * us:.0f}, after {np.median([p['after'] for p in parts2]) * us:.0f}, "
          f"tail {np.median([p['tail'] for p in parts2]) * us:.0f}; step {np.median([p['step'] for p in parts2]) * 1e3:.2f} ms")


def ab(which, path, settle, n, rounds, steps, variants):
    """In-process A/B of the 2-thread step's dispatch: per variant (``static``: two partitions, the calling
    thread waits for the pool — the step before round 15; ``caller``: two partitions, the calling thread
    takes partitions too; ``pK``: K partitions per thread taken in turn) the wall and the process CPU time
    per env-step, with polyphys 1 thread and mujoco.rollout nthread 1 and 2 in the same rounds."""
    import warp as wp

    m = B._mj_model(path)
    d = B._settle(which, m, settle)
    dt = float(m.opt.timestep)
    sc = {}
    for v in ["1 thread"] + variants:
        threads, per = (1, 1) if v == "1 thread" else (2, 1 if v in ("static", "caller") else int(v[1:]))
        sc[v], ent = B._pp_scene(path, dt, n, threads, per_thread=per)
        B._pp_set(sc[v], ent, d, n)
        if v == "static":
            sc[v].simulator.caller_takes = False
        for _ in range(3):
            sc[v].step()
    mj = _mj_runner(m, d, n, steps)
    jobs = list(sc) + ["mj1", "mj2"]
    wall = {j: [] for j in jobs}
    cpu = {j: [] for j in jobs}
    idle = {j: [] for j in jobs}        # per step: (a thread's wait at the join, step wall, threads that took part)
    loads = []
    for r in range(rounds):
        loads.append(os.getloadavg()[0])
        for job in jobs[r % len(jobs):] + jobs[:r % len(jobs)]:
            if job.startswith("mj"):
                w, c = mj(int(job[2]))
            else:
                rec: list = []
                undo = _instrument(sc[job].simulator, rec) if job != "1 thread" else None
                p0, t0 = time.process_time(), time.perf_counter()
                for _ in range(steps):
                    rec.clear()
                    s0 = time.perf_counter()
                    sc[job].step()
                    s1 = time.perf_counter()
                    if undo is not None:
                        parts = [x for x in rec if x[0] == "part"]
                        last = {}
                        for x in parts:
                            last[x[5]] = max(last.get(x[5], 0.0), x[3])
                        idle[job].append(((max(last.values()) - min(last.values())) if len(last) > 1
                                          else max(last.values()) - min(x[2] for x in parts), s1 - s0, len(last)))
                w, c = time.perf_counter() - t0, time.process_time() - p0
                if undo is not None:
                    undo()
            wall[job].append(w / (n * steps))
            cpu[job].append(c / (n * steps))
    parts = {v: len(s.layout.partitions) for v, s in sc.items()}
    for s in sc.values():
        s.simulator.close()
    wp.synchronize()
    print(f"== A/B {which}, n_envs {n}: {rounds} rounds × {steps} steps; load {min(loads):.2f}-{max(loads):.2f}; "
          f"µs per env-step, min / median")
    best2 = min(wall["mj2"])
    for j in jobs:
        extra = f"  ({parts[j]} partitions)" if j in parts else ""
        print(f"  {j:9s} wall {min(wall[j]) * 1e6:7.2f} / {np.median(wall[j]) * 1e6:7.2f}   process CPU "
              f"{min(cpu[j]) * 1e6:7.2f} / {np.median(cpu[j]) * 1e6:7.2f}   MuJoCo 2-thread / this (mins) "
              f"{best2 / min(wall[j]):.2f}x, medians {np.median(wall['mj2']) / np.median(wall[j]):.2f}x{extra}")
        if idle[j]:
            frac = [a / b for a, b, _ in idle[j]]
            wait = np.median([a for a, _, _ in idle[j]])
            print(f"  {'':9s} join wait (one thread idle at the step's end): median {wait * 1e3:.2f} ms "
                  f"= {np.median(frac) * 100:.1f} % of the step (mean {np.mean(frac) * 100:.1f} %, max {max(frac) * 100:.1f} %); "
                  f"steps run by one thread alone: {sum(1 for *_, k in idle[j] if k < 2)} of {len(idle[j])}")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenes", default="boxes,humanoid")
    ap.add_argument("--n", default="1024,64")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--ab", default="", help="A/B variants of the 2-thread dispatch, e.g. static,caller,p4,p8")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        scenes = {which: (path, settle) for _, which, path, settle in B._scenes(tmp)}
        for which in a.scenes.split(","):
            for n in (int(x) for x in a.n.split(",")):
                steps = a.steps if n >= 256 else a.steps * 8
                if a.ab:
                    ab(which, *scenes[which], n, a.rounds, steps, a.ab.split(","))
                else:
                    probe(which, *scenes[which], n, a.rounds, steps)


if __name__ == "__main__":
    threading.current_thread().name = "probe"
    main()
