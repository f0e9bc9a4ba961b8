"""Core step overhead: an empty-ish scene and the kinematic plugin at n_envs 1/64/4096, graph capture
on vs off (reference: the uncaptured step, ratio: the capture speed-up), cpu_threads 1 vs 2
(reference: one thread), and env-steps/s.

"Empty-ish" is the smallest scene the core builds: one fixed kinematic box (no joint, no dof), so a
step is the core's loop plus the fewest launches a solver makes. The kinematic scene is the
plugin's contract scene: a free box and a fixed-base arm (revolute + spherical joint), every env
given its own dof velocities.
"""

from __future__ import annotations

import numpy as np

from . import row, time_steps

DT, SUBSTEPS = 0.01, 2


def _scene(kind: str, n_envs: int, capture: bool, threads: int):
    import polyphys
    from polyphys import morphs
    from polyphys.plugins.kinematic import contract
    from polyphys.plugins.kinematic.materials import Kinematic

    sim = polyphys.SimOptions(dt=DT, substeps=SUBSTEPS, graph_capture=capture, cpu_threads=threads)
    scene = polyphys.Scene(sim=sim)
    if kind == "empty":
        scene.add_entity(morphs.Box(size=(0.1, 0.1, 0.1), fixed=True), Kinematic())
        scene.build(n_envs=n_envs)
    else:
        entities, _, drive = contract.scene()
        for morph, material, kw in entities:
            scene.add_entity(morph, material, **kw)
        scene.build(n_envs=n_envs)
        drive(scene, np.random.default_rng(0))
    return scene


def run(quick: bool = False) -> list[dict]:
    import warp as wp

    wp.config.log_level = getattr(wp, "LOG_WARNING", 30)
    min_time = 0.1 if quick else 0.5
    repeats = 2 if quick else 5
    rows = []
    for kind, label in (("empty", "empty-ish scene (1 fixed box)"),
                        ("kinematic", "kinematic: free box + 2-joint arm")):
        for n in (1, 64, 4096):
            t = {}
            for capture in (True, False):
                scene = _scene(kind, n, capture, threads=1)
                t[capture] = time_steps(scene.step, min_time=min_time, repeats=repeats)
            rows.append(row(f"{label}, n_envs={n}", "step time, graph capture on (1 thread)", "us/step",
                            t[True] * 1e6, t[False] * 1e6, "same step uncaptured",
                            notes=f"ratio = capture speed-up; {SUBSTEPS} substeps/step"))
            rows.append(row(f"{label}, n_envs={n}", "env-steps/s, captured (1 thread)", "env-steps/s",
                            n / t[True], n / t[False], "same step uncaptured",
                            ratio=t[False] / t[True]))
    n = 4096
    t = {}
    for threads in (2, 1):
        scene = _scene("kinematic", n, True, threads=threads)
        t[threads] = time_steps(scene.step, min_time=min_time, repeats=repeats)
    rows.append(row(f"kinematic: free box + 2-joint arm, n_envs={n}", "step time, cpu_threads=2 (captured)",
                    "us/step", t[2] * 1e6, t[1] * 1e6, "cpu_threads=1",
                    notes="ratio = thread speed-up; bounded by the cores free on a shared machine"))
    rows.append(row(f"kinematic: free box + 2-joint arm, n_envs={n}", "env-steps/s, cpu_threads=2",
                    "env-steps/s", n / t[2], n / t[1], "cpu_threads=1", ratio=t[1] / t[2]))
    return rows
