"""One test per hook of ``polyphys.hookspecs`` (``test_hook_<name>``), each through an in-process
plugin (tests/core/recording_plugin.py): the core calls the hook, validates the records and uses
them. A meta-test (datasette's) checks that every hook is documented — a docstring with ``:return:``
and a row in docs/writing-a-plugin.md's hook table — and has its ``test_hook_`` test."""

from __future__ import annotations

import inspect
import pathlib
import re

import numpy as np
import polyphys
import pytest
from polyphys import hookspecs, morphs
from polyphys.errors import ImportError_, PolyphysWarning

ROOT = pathlib.Path(__file__).resolve().parents[2]
HOOKS = sorted(n for n, f in vars(hookspecs).items() if n.startswith("polyphys_") and callable(f))


def test_hook_polyphys_solvers(rec):
    recs = {r.name: r for r in polyphys.registry().all("solver")}
    assert recs["rec_a"].provider.distribution == "<in-process>"
    scene = polyphys.Scene(sim=polyphys.SimOptions(substeps=2))
    scene.add_entity(morphs.Box(), material=rec.RecA())
    scene.build(n_envs=2)
    scene.step()
    names = [c[:2] for c in rec.CALLS]
    assert names[:2] == [("rec_a", "add_entity"), ("rec_a", "build")]
    assert ("rec_a", "fast") in names            # the only solver: the fast path


def test_hook_polyphys_materials(rec):
    assert polyphys.materials.RecA is rec.RecA
    scene = polyphys.Scene()
    sub = scene.add_entity(morphs.Box(), material=rec.RecBSub())
    assert sub.solver.name == "rec_a"            # the most-derived registered class decides


def test_hook_polyphys_couplers(rec):
    scene = polyphys.Scene(sim=polyphys.SimOptions(substeps=1), coupler="rec_coupler")
    scene.add_entity(morphs.Box(), material=rec.RecA())
    scene.add_entity(morphs.Box(), material=rec.RecB())
    scene.build()
    scene.step()
    assert [c.name for c in scene.couplers] == ["rec_coupler"]
    calls = [c[:2] for c in rec.CALLS if c[1] in ("pre", "couple", "post")]
    assert calls == [("rec_a", "pre"), ("rec_b", "pre"), ("rec_coupler", "couple"), ("rec_a", "post"),
                     ("rec_b", "post")]


def test_hook_polyphys_sensors(rec):
    scene = polyphys.Scene()
    ent = scene.add_entity(morphs.Box(), material=rec.RecA())
    sensor = scene.add_sensor("rec_x", ent, name="x")
    scene.build(n_envs=2)
    scene.step()
    np.testing.assert_array_equal(sensor.read_ground_truth().value, ent.get_x())
    assert ("x", "sensor_build") in [c[:2] for c in rec.CALLS]


def test_hook_polyphys_importers(rec, tmp_path):
    path = tmp_path / "two.rec"
    path.write_text("links 2")
    with pytest.warns(PolyphysWarning, match=r"two.rec: a .rec note"):
        desc = polyphys.describe(str(path))            # found by the suffix
    assert [lk.name for lk in desc.links] == ["l0", "l1"] and desc.n_dofs == 2
    bad = tmp_path / "bad.rec"
    bad.write_text("joints 2")
    with pytest.raises(ImportError_, match=r"bad.rec: expected 'links N'"):   # the file is named
        polyphys.describe(str(bad))
    scene = polyphys.Scene()
    with pytest.warns(PolyphysWarning):
        ent = scene.add_entity(morphs.FileMorph(file=str(path)), material=polyphys.materials.Kinematic())
    assert ent.n_dofs == 2


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_is_documented_and_tested(hook):
    doc = inspect.getdoc(getattr(hookspecs, hook)) or ""
    assert ":return:" in doc and len(doc) > 80, f"hookspec {hook} needs a docstring with :return:"
    tutorial = (ROOT / "docs" / "writing-a-plugin.md").read_text()
    assert re.search(rf"^\| `{hook}` \|.*\| `test_hook_{hook}` \|$", tutorial, re.M), \
        f"docs/writing-a-plugin.md's hook table lacks {hook}"
    tests = "\n".join(p.read_text() for p in (ROOT / "tests").rglob("test_*.py"))
    assert re.search(rf"^def test_hook_{hook}\(", tests, re.M), f"no test_hook_{hook} in tests/"
