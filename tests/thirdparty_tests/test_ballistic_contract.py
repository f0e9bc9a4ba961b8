"""The contract checks of polyphys.contract, run from the plugin's own tests: what a third party
puts in its own CI (polyphys's tests/core/test_contract.py runs the same checks for every
registered solver, but it ships with polyphys's sources, not with the wheel)."""

import pytest
from ballistic_helpers import require_ballistic

require_ballistic()

import polyphys  # noqa: E402
from polyphys.contract import checks_for, run_check  # noqa: E402

SOLVER = polyphys.registry().get("solver", "ballistic")


@pytest.mark.parametrize("check", checks_for(SOLVER))
def test_contract(check, tmp_path):
    run_check(SOLVER, check, tmp_path)
