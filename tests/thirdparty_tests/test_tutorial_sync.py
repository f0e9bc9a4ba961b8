"""docs/writing-a-plugin.md is the plugin it teaches (tests/thirdparty), file for file.

Every ```python/```toml block of the tutorial is preceded by a marker:

- ``<!-- file: PATH -->``: the blocks marked with one PATH, in the order of the page, *are* that file —
  joined, they equal it line for line (runs of blank lines count as one, so a file may be cut
  between two definitions) — so the tutorial shows every line of the distribution, nothing elided;
- ``<!-- excerpt: PATH -->``: a verbatim, contiguous piece of PATH (used for the plugin's tests).

Every file of the distribution is shown whole. Reads files only: it needs neither the
polyphys-ballistic distribution installed nor Warp.
"""

import ast
import importlib.util
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "writing-a-plugin.md"
PLUGIN = ROOT / "tests" / "thirdparty"
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)
MARK = re.compile(r"<!-- (file|excerpt): (\S+) -->\n$")


def _blocks():
    """(language, code, kind, path, line) of every fenced block of the tutorial."""
    text = DOC.read_text()
    out = []
    for m in BLOCK.finditer(text):
        before = text[:m.start()]
        mark = MARK.search(before[-300:])
        out.append((m.group(1), m.group(2), mark.group(1) if mark else None, mark.group(2) if mark else None,
                    before.count("\n") + 1))
    return out


def _normal(text: str) -> str:
    """Trailing spaces dropped, runs of blank lines made one, no leading/trailing blank lines."""
    lines = [ln.rstrip() for ln in text.strip("\n").splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n")


def _distribution_files():
    files = {p.relative_to(ROOT).as_posix() for p in (PLUGIN / "polyphys_ballistic").glob("*.py")}
    return files | {"tests/thirdparty/pyproject.toml"}


def test_every_code_block_is_checked():
    """A Python or TOML block without a source file would be free to drift: there is none."""
    unchecked = [line for lang, _, kind, _, line in _blocks() if lang in ("python", "toml") and kind is None]
    assert not unchecked, f"blocks at lines {unchecked} of {DOC.name} name no source file"


@pytest.mark.parametrize("path", sorted(_distribution_files()))
def test_the_tutorial_shows_every_file_whole(path):
    pieces = [code for _, code, kind, p, _ in _blocks() if kind == "file" and p == path]
    assert pieces, f"{DOC.name} does not show {path}"
    shown = _normal("\n\n".join(_normal(c) for c in pieces))
    source = _normal((ROOT / path).read_text())
    if shown != source:
        import difflib

        diff = "\n".join(difflib.unified_diff(source.splitlines(), shown.splitlines(), path, DOC.name, lineterm="",
                                              n=1))
        pytest.fail(f"{DOC.name}'s blocks of {path} differ from the file:\n{diff[:3000]}")


def test_file_blocks_name_files_of_the_distribution():
    named = {p for _, _, kind, p, _ in _blocks() if kind == "file"}
    assert named <= _distribution_files(), sorted(named - _distribution_files())


@pytest.mark.parametrize("path,code", [pytest.param(p, c, id=f"{p}@L{ln}")
                                       for _, c, kind, p, ln in _blocks() if kind == "excerpt"])
def test_excerpts_appear_verbatim(path, code):
    assert code.strip("\n") in (ROOT / path).read_text(), f"{DOC.name}: this excerpt is not in {path}:\n{code}"


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


def test_install_from_the_project_folder_and_a_complete_pyproject():
    """The reader starts from an empty folder: the commands run there (``pip install -e .``), and
    the pyproject shown is a whole one, with its build system."""
    text = DOC.read_text()
    pyproject = (PLUGIN / "pyproject.toml").read_text()
    assert "pip install -e ." in text
    assert "tests/thirdparty" not in "\n".join(c for lang, c, *_ in _blocks() if lang in ("", "bash", "console"))
    assert "[build-system]" in pyproject and 'build-backend = "setuptools.build_meta"' in pyproject
    name = re.search(r'^name = "([^"]+)"', pyproject, re.M).group(1)
    assert name == "polyphys-ballistic" and f"**{name}**" in text
    assert re.search(r'^\[project.entry-points.polyphys\]\nballistic = "polyphys_ballistic"$', pyproject, re.M)


def test_the_distribution_implements_every_hook():
    """Each kind of plugin has its chapter and its code: the example implements every hook."""
    from polyphys import hookspecs

    hooks = {n for n in dir(hookspecs) if n.startswith("polyphys_")}
    tree = ast.parse((PLUGIN / "polyphys_ballistic" / "__init__.py").read_text())
    implemented = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert hooks <= implemented, sorted(hooks - implemented)
