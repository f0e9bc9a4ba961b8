"""README and docs/capabilities.md carry the capability table generated from the registry."""

import importlib.util
import pathlib

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
