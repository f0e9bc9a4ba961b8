"""README and docs/capabilities.md carry the capability table generated from the registry; sources
and docs cite documents of this repository."""

import importlib.util
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "update_capability_tables.py"


@pytest.mark.parametrize("doc", ["README.md", "docs/capabilities.md"])
def test_capability_table_in_sync(doc):
    if not TOOL.exists():
        pytest.skip("source tree not available")
    spec = importlib.util.spec_from_file_location("update_capability_tables", TOOL)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    m = tool.PATTERN.search((ROOT / doc).read_text())
    assert m, f"{doc} lacks the capability markers"
    assert m.group(2).strip() == tool.builtin_table(), (
        f"{doc} is out of date: regenerate with `python tools/update_capability_tables.py`")


OUTSIDE = re.compile(r"\bSPEC\s+§?[SRFC]\d|\bSPEC:|\(SPEC[;)]|\b[Ss]eed \d{3}\b|\bthe seed's\b|shared/(SPEC|DESIGN|STYLE|seeds)")


def test_sources_and_docs_cite_documents_of_this_repository():
    """Comments, docstrings, error messages and docs cite docs/semantics.md (or a plugin's doc, or a
    paper), never a specification or seed text that is not in the repository."""
    if not (ROOT / "docs" / "semantics.md").exists():
        pytest.skip("source tree not available")
    bad = []
    for sub in ("core", "plugins", "couplers", "importers", "docs", "tests", "benchmarks", "examples", "tools"):
        for path in sorted((ROOT / sub).rglob("*")):
            rel = path.relative_to(ROOT).as_posix()
            if path.suffix not in (".py", ".md", ".toml"):
                continue
            for i, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if OUTSIDE.search(line):
                    bad.append(f"{rel}:{i}: {line.strip()[:100]}")
    assert not bad, "references to documents outside the repository:\n" + "\n".join(bad)
