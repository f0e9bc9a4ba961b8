"""docs/writing-a-plugin.md stays true to the plugin it teaches (tests/thirdparty).

Every ```python/```toml block of the tutorial is preceded by ``<!-- from: PATH -->`` and appears
verbatim in PATH (split at ``# ...`` elision lines, the pieces in order). Reads files only: it needs
neither the polyphys-ballistic distribution installed nor Warp.
"""

import importlib.util
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "writing-a-plugin.md"
PLUGIN = ROOT / "tests" / "thirdparty"
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)
MARK = re.compile(r"<!-- from: (\S+) -->\n$")
ELISION = re.compile(r"^[ \t]*# \.\.\.[ \t]*$", re.M)


def _blocks():
    """(language, code, marked path or None, line number) of every fenced block of the tutorial."""
    text = DOC.read_text()
    out = []
    for m in BLOCK.finditer(text):
        before = text[:m.start()]
        mark = MARK.search(before[-300:])
        out.append((m.group(1), m.group(2), mark.group(1) if mark else None, before.count("\n") + 1))
    return out


def _excerpts():
    return [pytest.param(path, code, id=f"{path}@L{line}")
            for lang, code, path, line in _blocks() if path is not None]


def test_tutorial_has_excerpts():
    assert DOC.exists()
    assert len(_excerpts()) >= 10


def test_every_code_block_is_checked():
    """A Python or TOML block without a source file would be free to drift: there is none."""
    unchecked = [line for lang, _, path, line in _blocks() if lang in ("python", "toml") and path is None]
    assert not unchecked, f"blocks at lines {unchecked} of {DOC.name} name no source file"


def test_every_file_of_the_plugin_is_shown():
    shown = {path for lang, _, path, _ in _blocks() if path}
    files = {str(p.relative_to(ROOT)) for p in (PLUGIN / "polyphys_ballistic").glob("*.py")}
    files.add("tests/thirdparty/pyproject.toml")
    assert files <= shown, f"not shown in the tutorial: {sorted(files - shown)}"


@pytest.mark.parametrize("path,code", _excerpts())
def test_excerpt_appears_verbatim(path, code):
    source = (ROOT / path).read_text()
    pos = 0
    for piece in ELISION.split(code):
        piece = piece.strip("\n")
        if not piece.strip():
            continue
        found = source.find(piece, pos)
        assert found >= 0, f"{DOC.name}: this excerpt is not (or not in this order) in {path}:\n{piece}"
        pos = found + len(piece)


def test_capability_table_matches_the_declared_capabilities():
    spec = importlib.util.spec_from_file_location("_tutorial_ballistic_init",
                                                  PLUGIN / "polyphys_ballistic" / "__init__.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    caps = mod.CAPABILITIES
    text = DOC.read_text()
    rows = dict(re.findall(r"^\| `(\w+)` \| ([^|]+) \|", text, re.M))
    assert rows["batch"].strip() == str(caps.batch)
    assert rows["reset_envs"].strip() == str(caps.reset_envs)
    assert rows["checkpoint"].strip() == str(caps.checkpoint)
    assert rows["differentiable"].strip() == str(caps.differentiable)
    assert set(re.findall(r'"(\w+)"', rows["precisions"])) == set(caps.precisions)
    assert set(re.findall(r'"(\w+)"', rows["devices"])) == set(caps.devices)


def test_install_command_and_entry_point_agree_with_pyproject():
    text = DOC.read_text()
    pyproject = (PLUGIN / "pyproject.toml").read_text()
    assert "pip install -e tests/thirdparty" in text
    name = re.search(r'^name = "([^"]+)"', pyproject, re.M).group(1)
    assert name == "polyphys-ballistic" and f"**{name}**" in text
    assert re.search(r'^\[project.entry-points.polyphys\]\nballistic = "polyphys_ballistic"$', pyproject, re.M)
