"""Run by `tox -e core` (POLYPHYS_DISABLE_PLUGIN_AUTOLOAD=1): core alone imports, lists nothing, and
fails clearly when a scene needs a plugin."""

import os

import polyphys
import pytest
from polyphys.errors import OptionError

pytestmark = pytest.mark.skipif(os.environ.get("POLYPHYS_DISABLE_PLUGIN_AUTOLOAD") != "1",
                                reason="run by `tox -e core` with plugin autoloading disabled")


def test_lists_nothing():
    assert polyphys.registry().plugin_rows() == []


def test_scene_errors_clearly():
    with pytest.raises(OptionError, match="unknown solver 'rigid'.*autoloading is disabled"):
        polyphys.Scene(rigid=None)
    with pytest.raises(AttributeError, match="no material or family 'Rigid'"):
        polyphys.materials.Rigid
    sc = polyphys.Scene()

    class M(polyphys.materials.Material):
        pass

    with pytest.raises(OptionError, match="not owned by any registered solver"):
        sc.add_entity(polyphys.morphs.Box(), material=M())


def test_in_process_plugin_still_works():
    """Autoload off does not stop polyphys.register (notebooks, tests)."""
    class P:
        @polyphys.hookimpl
        def polyphys_solvers(self):
            return [polyphys.SolverSpec(name="mine", target="m:S")]

    p = P()
    polyphys.register(p, name="mine")
    try:
        assert [r["name"] for r in polyphys.registry().plugin_rows()] == ["mine"]
    finally:
        polyphys.unregister(p)
