"""Worker process of the NaN-injection tests: every fault scene, substep counts 1 and 4, many injections.

Run as ``python nan_worker.py [--scenes a,b] [--substeps 1,4] [--values nan,inf,1e30] [--steps 3]
[--where first,last] [--skip N]``. For every scene and substep count, every float state array of every
solver and coupler, every value and position (``where``: the first or last scalar of env 1's row), it:

1. restores the scene's driven start state S0 (3 envs, each different) with ``reset(state=S0)``;
2. writes the value into one scalar of env 1 of that array (straight into the Warp array, the
   zero-copy path a user has, so no setter check stops it);
3. steps STEPS times.

Each case prints one JSON line: which steps flagged env 1 (``scene.nan_envs``), whether envs 0 and 2
equal an untouched run bit for bit, whether env 1 (reset by the NaN policy) equals the untouched run
at its own step count, and whether every state value is finite at the end. A line ``START ...`` goes
out before each case (with a case id), so that when the process dies (a segfault) the parent names
the case and can start a new process after it (``--skip``); ``DONE n`` ends a complete run.
A crash of the process is exactly what the parent test checks for: it runs this in a subprocess.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import fault_scenes  # noqa: E402

N_ENVS, BAD_ENV = 3, 1


def _states(scene) -> dict:
    return {f"{p.name}.{k}": a.numpy().copy() for p in fault_scenes.state_owners(scene)
            for k, a in p.state_arrays().items()}


def _float_arrays(scene):
    import warp as wp

    for p in fault_scenes.state_owners(scene):
        for k, a in p.state_arrays().items():
            st = getattr(a.dtype, "_wp_scalar_type_", a.dtype)
            if a.size and st in (wp.float32, wp.float64):
                yield p, k, a


def _equal(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.array_equal(a.view(np.uint8), b.view(np.uint8))


def _finite(states: dict) -> bool:
    return all(np.all(np.isfinite(v)) for v in states.values() if np.issubdtype(v.dtype, np.floating))


def run_scene(name: str, substeps: int, values: list[float], steps: int, where: list[str], first_id: int,
              skip: int) -> int:
    """Run the cases of one scene; case ids start at ``first_id``; returns the next free id."""
    # the same substep h = 5 ms for every substep count (the MPM contract scene needs h <= 6.3 ms)
    scene = fault_scenes.build(name, N_ENVS, substeps, dt=0.005 * substeps)
    s0 = scene.get_state()
    scene.reset(state=s0)
    ref = [_states(scene)]
    for _ in range(steps):
        scene.step()
        ref.append(_states(scene))
    if scene.nan_envs or not _finite(ref[-1]):
        raise AssertionError(f"the untouched run of {name} is not finite: {scene.nan_envs}")
    cases = [(p.name, k, v, w) for p, k, _ in _float_arrays(scene) for v in values for w in where]
    for i, (owner, k, value, w) in enumerate(cases, start=first_id):
        if i < skip:
            continue
        case = {"id": i, "scene": name, "substeps": substeps, "array": f"{owner}.{k}", "value": repr(value),
                "where": w}
        print("START " + json.dumps(case), flush=True)
        try:
            scene.reset(state=s0)
            scene.nan_envs.clear()
            arr = next(a for p, kk, a in _float_arrays(scene) if p.name == owner and kk == k)
            host = arr.numpy()
            row = host[BAD_ENV].reshape(-1)
            row[0 if w == "first" else row.size - 1] = value
            arr.assign(host)
            for _ in range(steps):
                scene.step()
            end = _states(scene)
            others = [e for e in range(N_ENVS) if e != BAD_ENV]
            case["others_equal"] = all(_equal(end[a][others], ref[-1][a][others]) for a in end)
            flagged = [s for s, e in scene.nan_envs if e == BAD_ENV]
            case["flagged"] = flagged
            count = int(scene.get_step_count()[BAD_ENV])
            case["bad_env_steps"] = count
            if flagged:
                # reset to S0 at the flagged step, then stepped `count` more times: as the untouched run
                case["bad_env_matches_ref"] = all(_equal(end[a][BAD_ENV], ref[count][a][BAD_ENV]) for a in end)
            case["finite"] = _finite(end)
            case["other_flagged"] = sorted({e for _, e in scene.nan_envs if e != BAD_ENV})
        except Exception as exc:  # reported, and the parent fails the case
            case["error"] = f"{type(exc).__name__}: {exc}"
            case["traceback"] = traceback.format_exc()[-2000:]
        print("CASE " + json.dumps(case), flush=True)
    return first_id + len(cases)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenes", default="all", help="comma-separated names (fault_scenes.scene_names()) or 'all'")
    ap.add_argument("--substeps", default="1,4")
    ap.add_argument("--values", default="nan,inf,1e30")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--where", default="first", help="'first', 'last' or both: the scalar of env 1's row poisoned")
    ap.add_argument("--skip", type=int, default=0, help="start at this case id (resume after a case that crashed)")
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    names = fault_scenes.scene_names() if a.scenes == "all" else a.scenes.split(",")
    values = [float(v) for v in a.values.split(",")]
    next_id = 0
    for name in names:
        for substeps in (int(s) for s in a.substeps.split(",")):
            next_id = run_scene(name, substeps, values, a.steps, a.where.split(","), next_id, a.skip)
    print(f"DONE {next_id}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
