"""Worker process of the thread tests: several different scenes, each built and stepped in its own
thread at the same time, against the same scenes run one after another in the main thread.

``python thread_worker.py ROUNDS STEPS`` prints one JSON line per round ({"round", "mismatch": [...],
"errors": [...]}) and ``DONE``. Every round builds the scenes in their threads (builds overlap),
waits at a barrier so that the first steps — module loading and graph capture — coincide, steps
them with a setter call between steps (a host write while other threads replay or capture), and
compares every state array bit for bit with the sequential run. It runs in a subprocess because the
failures it looks for include aborts of the process (Warp's bad_alloc, SIGABRT).
"""

from __future__ import annotations

import json
import sys
import threading
import traceback
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import fault_scenes  # noqa: E402

SCENES = ("contract:mpm", "contract:sph", "contract:rigid", "contract:pbd", "contract:mpm", "legacy_mpm")


def _available() -> list[str]:
    have = set(fault_scenes.scene_names())
    return [s for s in SCENES if s in have]


def _poke(scene, step: int) -> None:
    """A host write between steps: the first entity's velocity of env 0 (deterministic)."""
    e = scene.entities[0]
    if hasattr(e, "set_particles_vel"):
        v = e.get_particles_vel()
        v[0, 0] = (0.01 * step, 0.0, 0.0)
        e.set_particles_vel(v)
    elif hasattr(e, "set_dofs_velocity"):
        v = e.get_dofs_velocity()
        v[0, 0] = 0.01 * step
        e.set_dofs_velocity(v)


def run_one(name: str, steps: int, barrier: threading.Barrier | None) -> dict:
    scene = fault_scenes.build(name, 2, 2, dt=0.005 * 2)
    if barrier is not None:
        barrier.wait()
    for i in range(steps):
        scene.step()
        _poke(scene, i)
    out = {f"{p.name}.{k}": v for p in fault_scenes.state_owners(scene) for k, v in p.get_state().items()}
    out["step_count"] = scene.get_step_count()
    return out


def main(argv: list[str]) -> int:
    rounds, steps = int(argv[0]), int(argv[1])
    warnings.simplefilter("ignore")
    names = _available()
    ref = [run_one(n, steps, None) for n in names]
    for r in range(rounds):
        results: list = [None] * len(names)
        barrier = threading.Barrier(len(names))

        def work(i, results=results, barrier=barrier):
            try:
                results[i] = run_one(names[i], steps, barrier)
            except BaseException as exc:  # reported by the parent test
                results[i] = f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-1500:]}"
                barrier.abort()

        threads = [threading.Thread(target=work, args=(i,)) for i in range(len(names))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        errors = [f"{names[i]}: {res}" for i, res in enumerate(results) if isinstance(res, str)]
        mismatch = [f"{names[i]}: {k}" for i, res in enumerate(results) if isinstance(res, dict)
                    for k in ref[i] if not np.array_equal(res[k], ref[i][k], equal_nan=True)]
        print(json.dumps({"round": r, "scenes": names, "errors": errors, "mismatch": mismatch}), flush=True)
    print("DONE", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
