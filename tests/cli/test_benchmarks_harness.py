"""The benchmark harness (`python -m benchmarks`): discovery, a failing module reported while the
others run, row validation, text and Markdown output."""

from __future__ import annotations

import os
import sys
import types

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

bm = pytest.importorskip("benchmarks.__main__")


def _fake(monkeypatch, name, run):
    mod = types.ModuleType(f"benchmarks.bench_{name}")
    mod.run = run
    monkeypatch.setitem(sys.modules, f"benchmarks.bench_{name}", mod)


def test_discover_finds_bench_core():
    assert "core" in bm.discover()


def test_failing_module_is_reported_and_others_run(monkeypatch, tmp_path, capsys):
    from benchmarks import row

    def ok(quick=False):
        return [row("case a", "step time", "us/step", 2.0, 6.0, "uncaptured", notes="q" if quick else "")]

    def broken(quick=False):
        raise RuntimeError("boom")

    _fake(monkeypatch, "zz_ok", ok)
    _fake(monkeypatch, "zz_broken", broken)
    _fake(monkeypatch, "zz_badrows", lambda quick=False: [{"case": "x"}])
    monkeypatch.setattr(bm, "discover", lambda: ["zz_badrows", "zz_broken", "zz_ok"])
    md = tmp_path / "out.md"
    rc = bm.main(["--quick", "--markdown", str(md)])
    out = capsys.readouterr()
    assert rc == 1
    assert "bench_zz_broken: RuntimeError: boom" in out.out
    assert "bench_zz_badrows" in out.out and "lacks keys" in out.out
    line = next(ln for ln in out.out.splitlines() if ln.startswith("zz_ok"))
    assert "3.00x" in line and "us/step" in line          # ratio = reference / polyphys
    text = md.read_text()
    assert "| zz_ok | case a | step time | 2 | 6 | uncaptured | 3.00x | us/step | q |" in text
    assert "Machine:" in text and "Failed modules" in text


def test_only_unknown_name_is_an_error(capsys):
    assert bm.main(["--only", "nosuch"]) == 2
    assert "no such benchmark module" in capsys.readouterr().err


def test_machine_info_keys():
    from benchmarks import machine_info

    info = machine_info()
    for k in ("cpu", "cores", "python", "warp", "numpy"):
        assert k in info
    assert info["cores"] >= 1
