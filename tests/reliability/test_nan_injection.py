"""No crash, per-env isolation and the NaN policy under injected NaN/inf/huge values (issue 19, item 1).

For every fault scene (every registered solver's contract scene, rigid scenes with collisions —
primitives, a heightfield, a convex mesh —, Legacy-coupled rigid + MPM/SPH/PBD) at substeps 1 and
4, a NaN or 1e30 (CI; -m validate adds inf, -inf, ±3e38 and denormals, both ends of every row,
substeps 2, more steps) is written into one scalar of env 1 of every float state array
(``nan_worker.py`` explains the run). Each case must: not kill the process (the worker runs in a
subprocess, so a segfault fails the test and names the case instead of killing pytest); leave envs
0 and 2 bit-identical to an untouched run; end with every state value finite; and, when the NaN
policy reset env 1, leave env 1 equal to the untouched run at its own step count (reset to the
start state, then stepped on). Before the fix, MPM crashed the process with a NaN/inf/1e30 position
at any substep count and a bad vel/C/F with substeps >= 2 (an out-of-bounds grid write in P2G).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

WORKER = Path(__file__).with_name("nan_worker.py")


def run_cases(args: list[str], timeout: float = 1200) -> tuple[list[dict], list[dict]]:
    """Run the worker; after a crash, start it again after the crashing case. Returns (cases,
    crashes) — crashes name the case that was running when the process died."""
    cases, crashes, skip = [], [], 0
    while True:
        proc = subprocess.run([sys.executable, str(WORKER), *args, "--skip", str(skip)], capture_output=True,
                              text=True, timeout=timeout)
        lines = proc.stdout.splitlines()
        cases += [json.loads(ln[5:]) for ln in lines if ln.startswith("CASE ")]
        if proc.returncode == 0 and lines and lines[-1].startswith("DONE"):
            return cases, crashes
        started = [json.loads(ln[6:]) for ln in lines if ln.startswith("START ")]
        done = {c["id"] for c in cases}
        running = [c for c in started if c["id"] not in done]
        if not running:
            raise AssertionError(f"worker failed outside a case (rc {proc.returncode}):\n{proc.stderr[-3000:]}")
        crashes.append({**running[-1], "returncode": proc.returncode})
        skip = running[-1]["id"] + 1


def failures(cases: list[dict]) -> list[str]:
    out = []
    for c in cases:
        what = f"{c['scene']} substeps={c['substeps']} {c['array']}[{c['where']}] = {c['value']}"
        if "error" in c:
            out.append(f"{what}: raised {c['error']}\n{c['traceback']}")
            continue
        if not c["others_equal"] or c["other_flagged"]:
            out.append(f"{what}: envs 0/2 changed (flagged {c['other_flagged']})")
        if not c["finite"]:
            out.append(f"{what}: non-finite state left after the steps (the NaN policy did not reset env 1)")
        if c["flagged"] and not c["bad_env_matches_ref"]:
            out.append(f"{what}: env 1 after its NaN reset differs from an untouched run at step {c['bad_env_steps']}")
    return out


def check(args: list[str]) -> list[dict]:
    cases, crashes = run_cases(args)
    msgs = [f"process died (rc {c['returncode']}): {c['scene']} substeps={c['substeps']} {c['array']}"
            f"[{c['where']}] = {c['value']}" for c in crashes] + failures(cases)
    assert not msgs, f"{len(msgs)} of {len(cases) + len(crashes)} injections failed:\n" + "\n".join(msgs[:40])
    assert cases, "no injection ran"
    return cases


def test_injected_nan_inf_huge_values_never_crash_and_stay_in_their_env():
    cases = check(["--values", "nan,1e30", "--substeps", "1,4", "--steps", "3"])
    # the fault must have been seen: a NaN in a state array that the step reads is flagged at once
    flagged = [c for c in cases if c["flagged"]]
    assert len(flagged) > len(cases) // 4, (len(flagged), len(cases))
    mpm = [c for c in cases if c["array"] in ("mpm.pos", "mpm.vel", "mpm.C", "mpm.F") and c["value"] == "nan"]
    assert mpm and all(c["flagged"] == [1] for c in mpm), mpm


@pytest.mark.validate
def test_injected_values_all_kinds_both_row_ends_more_steps():
    check(["--values", "nan,inf,-inf,1e30,-1e30,3e38,-3e38,1e-45", "--substeps", "1,2,4", "--steps", "5",
           "--where", "first,last"])
