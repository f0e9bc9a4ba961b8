"""Every registered solver is run through what its capabilities promise (DESIGN "contract test")."""

import pytest
from polyphys import contract, registry


def _cases():
    cases = []
    for rec in registry().all("solver"):
        if rec.spec.contract is None:
            cases.append(pytest.param(rec.name, "declares_contract_scene", id=f"{rec.name}-contract"))
            continue
        for check in contract.checks_for(rec):
            cases.append(pytest.param(rec.name, check, id=f"{rec.name}-{check}"))
    return cases


@pytest.mark.parametrize("solver, check", _cases())
def test_contract(solver, check, tmp_path):
    rec = registry().get("solver", solver)
    if check == "declares_contract_scene":
        pytest.fail(f"solver {solver!r} ({rec.provider.distribution}) names no contract scene: its "
                    f"capabilities cannot be tested")
    contract.run_check(rec, check, tmp_path)


def test_kinematic_declares_what_issue_promises():
    caps = registry().get("solver", "kinematic").spec.capabilities
    assert caps.batch and caps.reset_envs and caps.checkpoint
    assert caps.precisions == {"32", "64"} and caps.devices == {"cpu", "cuda"}
