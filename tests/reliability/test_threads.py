"""Threads (issue 19, item 2): different scenes step in parallel threads with the results of
sequential runs; one scene used from two threads at once is an error; a step that fails midway
leaves the step count unchanged and the scene unusable until reset()/load_checkpoint().

Before the fix, scenes stepped together failed on their first steps in every run ("Graph capture
already in progress": a CPU capture records every thread's launches; KeyError in module loading;
aborts), and two threads stepping one scene silently NaN-reset envs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest
from polyphys.errors import SceneStateError

sys.path.insert(0, str(Path(__file__).parent))
import fault_scenes  # noqa: E402

WORKER = Path(__file__).with_name("thread_worker.py")


def _parallel(rounds: int, steps: int) -> None:
    proc = subprocess.run([sys.executable, str(WORKER), str(rounds), str(steps)], capture_output=True, text=True,
                          timeout=1800)
    lines = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert proc.returncode == 0 and proc.stdout.rstrip().endswith("DONE"), (
        f"worker died (rc {proc.returncode}) after {len(lines)} rounds:\n{proc.stderr[-3000:]}")
    bad = [ln for ln in lines if ln["errors"] or ln["mismatch"]]
    assert not bad, json.dumps(bad, indent=1)[:4000]
    assert len(lines) == rounds and len(lines[0]["scenes"]) >= 2


def test_different_scenes_in_parallel_threads_equal_sequential_runs():
    """Six scenes (two of them the same MPM scene) built and stepped in six threads at once, the
    first steps (module loading, graph capture) released together, setters between steps."""
    _parallel(rounds=2, steps=5)


@pytest.mark.validate
def test_parallel_threads_many_rounds():
    _parallel(rounds=25, steps=8)


def _scene(**sim):
    names = fault_scenes.scene_names()
    name = "contract:rigid" if "contract:rigid" in names else names[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fault_scenes.build(name, 2, 2, **sim)


def _inside_step(scene):
    """Start ``scene.step()`` in a thread and hold it inside the step (a pre-step callback waits);
    returns (release, thread, errors)."""
    entered, release, errors = threading.Event(), threading.Event(), []

    def hold(sc):
        entered.set()
        release.wait(30)

    scene.add_pre_step_callback(hold)

    def run():
        try:
            scene.step()
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=run)
    t.start()
    assert entered.wait(30)
    return release, t, errors, hold


def test_one_scene_from_two_threads_is_an_error():
    scene = _scene()
    scene.step()
    before = scene.get_state()
    release, t, errors, hold = _inside_step(scene)
    try:
        with pytest.raises(SceneStateError, match=r"step\(\) called from two threads"):
            scene.step()
        with pytest.raises(SceneStateError, match="called from two threads"):
            scene.entities[0].set_dofs_velocity(np.zeros((2, 6)))
        with pytest.raises(SceneStateError, match="called from two threads"):
            scene.reset()
    finally:
        release.set()
        t.join(30)
    assert not errors
    scene._pre_step_callbacks.remove(hold)
    # exactly one more step happened (the held one); the refused calls changed nothing
    np.testing.assert_array_equal(scene.get_step_count(), [2, 2])
    ref = _scene()
    ref.reset(state=before)
    ref.step()
    for k, v in ref.solver("rigid").get_state().items():
        np.testing.assert_array_equal(scene.solver("rigid").get_state()[k], v, err_msg=k)


def test_step_failing_midway_keeps_step_count_and_marks_scene_unusable():
    scene = _scene(graph_capture=False)
    for _ in range(2):
        scene.step()
    solver = scene.solver("rigid")
    original = solver.substep_post_coupling
    calls = []

    def failing(f, part):
        calls.append(f)
        if len(calls) == 2:          # the second substep: the state is half advanced
            raise RuntimeError("injected failure")
        original(f, part)

    solver.substep_post_coupling = failing
    solver.substep = lambda f, part: (solver.substep_pre_coupling(f, part), failing(f, part))
    with pytest.raises(RuntimeError, match="injected failure"):
        scene.step()
    np.testing.assert_array_equal(scene.get_step_count(), [2, 2])
    del solver.substep_post_coupling, solver.substep
    for call in (scene.step, scene.get_state, lambda: scene.entities[0].get_pos(),
                 lambda: scene.reset(envs_idx=[0])):
        with pytest.raises(SceneStateError, match="unusable: step 3 failed midway with RuntimeError: injected"):
            call()
    scene.reset()                     # all envs: a consistent state again
    fresh = _scene(graph_capture=False)
    fresh.reset(state=scene.get_state())
    for _ in range(3):
        scene.step()
        fresh.step()
    for k, v in fresh.solver("rigid").get_state().items():
        np.testing.assert_array_equal(scene.solver("rigid").get_state()[k], v, err_msg=k)
