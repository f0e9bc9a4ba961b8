"""``polyphys run SCENE.toml --workers N``: a batched scene file split across N Ray workers.

The file's ``[run] n_envs`` envs are split into N equal parts, one scene per worker
(:class:`~polyphys.distributed.ScenePool`); the recorded getters and sensors are gathered every
``record_every`` steps and written as ``polyphys run`` writes them (docs/running.md):
``trajectories.npz`` (the same keys and shapes as one process would write), ``summary.json`` (with
the workers, their nodes and the pool's events) and ``plot.png``.
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

from ..errors import OptionError


def run_file_distributed(path, workers: int, *, out_dir=None, steps: int | None = None, address: str | None = None,
                         progress: bool | None = None, plot: bool = True, num_cpus: float = 1.0,
                         runtime_env: dict | None = None, timeout_s: float = 600.0):
    from .. import run as runmod
    from .pool import ScenePool

    plan = runmod.parse_file(path)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise OptionError(f"--workers {workers!r}: must be an integer >= 1")
    if plan.n_envs < 1 or plan.n_envs % workers:
        raise OptionError(f"{plan.source}: run.n_envs = {plan.n_envs}: --workers {workers} splits the envs into equal "
                          f"parts, so n_envs must be a positive multiple of {workers}")
    if steps is not None:
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
            raise OptionError(f"steps = {steps!r}: must be an integer >= 0")
        plan.steps = steps
    out_dir = os.fspath(out_dir) if out_dir is not None else os.path.join("results", plan.name)
    if progress is None:
        progress = sys.stderr.isatty()
    t0 = time.perf_counter()
    pool = ScenePool(path, workers, plan.n_envs // workers, resources={"num_cpus": num_cpus}, address=address,
                     runtime_env=runtime_env, timeout_s=timeout_s)
    try:
        build_s = time.perf_counter() - t0
        info = pool.info[0]
        names = list(info["records"]) + [f"sensors/{s}" for s in info["sensors"]] + \
            [f"sensors_truth/{s}" for s in info["sensors"]]
        names.append("time")
        data: dict[str, list] = {n: [] for n in names}
        steps_rec = []

        def keep(obs, step):
            steps_rec.append(step)
            for n in names:
                data[n].append(obs[n])

        keep(pool.observe(names), 0)
        bar = runmod.Progress(plan.steps, progress)
        done = 0
        t_loop = time.perf_counter()
        first_s = None
        while done < plan.steps:
            k = min(plan.record_every - done % plan.record_every, plan.steps - done)
            ts = time.perf_counter()
            obs = pool.step(k=k, obs=names)
            if first_s is None:
                first_s = time.perf_counter() - ts
            done += k
            keep(obs, done)
            bar.update(done)
        loop_s = time.perf_counter() - t_loop
        traj = {"time": np.asarray([float(np.max(t)) for t in data.pop("time")]),
                "step": np.asarray(steps_rec, dtype=np.int64)}
        for n, v in data.items():
            traj[n] = np.stack(v) if v else np.zeros((0,))
        os.makedirs(out_dir, exist_ok=True)
        files = {"trajectories": os.path.join(out_dir, "trajectories.npz"),
                 "summary": os.path.join(out_dir, "summary.json")}
        np.savez(files["trajectories"], **traj)
        summary = {
            "scene": {"name": plan.name, "file": os.path.abspath(plan.source), "description": plan.description},
            "n_envs": plan.n_envs, "steps": plan.steps, "record_every": plan.record_every,
            "n_records": len(steps_rec), "recorded": sorted(k for k in traj if k not in ("time", "step")),
            "final_time": float(traj["time"][-1]),
            "workers": [{k: inf.get(k) for k in ("worker", "node_id", "host", "pid", "build_s", "n_envs")}
                        for inf in pool.info],
            "timings": {"build_s": build_s, "loop_s": loop_s, "first_call_s": first_s,
                        "env_steps_per_s": plan.n_envs * plan.steps / loop_s if loop_s > 0 and plan.steps else None,
                        "note": "loop_s covers every step and the gathering of the recorded values"},
            "events": pool.events, "versions": info.get("versions"),
        }
        with open(files["summary"], "w") as fh:
            json.dump(summary, fh, indent=2, default=str)
        if plot:
            p = runmod.write_plot(traj, os.path.join(out_dir, "plot.png"), plan.name)
            if p is not None:
                files["plot"] = p
    finally:
        pool.close()
    return runmod.RunResult(out_dir=out_dir, files=files, summary=summary, trajectories=traj)
