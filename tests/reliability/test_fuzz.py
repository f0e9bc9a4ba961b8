"""Hypothesis fuzz tests of scene files and the public setters (issue 19, item 7).

Property: every input gives a valid result or a polyphys error (a subclass of
``polyphys.errors.PolyphysError``) — never another exception and never a crash of the process.
``fuzz_worker.py`` describes the inputs. CI runs a bounded number of examples (a few seconds each);
``-m validate`` (``tox -e validate``) runs thousands. The worker runs in a subprocess (a crash
fails the test; an address-space limit turns a fuzzed terabyte request into a MemoryError).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

WORKER = Path(__file__).with_name("fuzz_worker.py")


def fuzz(mode: str, examples: int, seed: int) -> dict:
    proc = subprocess.run([sys.executable, str(WORKER), mode, str(examples), str(seed)], capture_output=True,
                          text=True, timeout=7200)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert proc.returncode == 0 and lines, f"fuzz worker died (rc {proc.returncode}):\n{proc.stderr[-4000:]}"
    res = json.loads(lines[-1])
    found = "\n\n".join(f"{f['key']}\n  input: {f['input']}\n{f['traceback']}" for f in res["found"])
    assert not res["found"], f"{len(res['found'])} raw exception(s) in {res['tried']} inputs:\n{found}"
    assert res["tried"] >= examples
    return res


def test_fuzz_scene_files():
    res = fuzz("scenes", 40, seed=0)
    assert res["outcomes"].get("SceneFileError", 0) > 0


def test_fuzz_public_setters():
    res = fuzz("setters", 150, seed=0)
    assert res["outcomes"].get("ok", 0) > 0 and res["outcomes"].get("OptionError", 0) > 0


@pytest.mark.validate
@pytest.mark.parametrize("seed", [1, 2])
def test_fuzz_scene_files_many(seed):
    fuzz("scenes", 3000, seed=seed)


@pytest.mark.validate
@pytest.mark.parametrize("seed", [1, 2])
def test_fuzz_public_setters_many(seed):
    fuzz("setters", 5000, seed=seed)
