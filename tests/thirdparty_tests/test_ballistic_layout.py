"""House rules of a plugin, checked on polyphys-ballistic's source (no install needed): it imports
polyphys core and its own modules only — never another plugin, coupler or importer — and its
``__init__`` imports nothing heavy (no Warp, none of its own solver modules)."""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "tests" / "thirdparty" / "polyphys_ballistic"
FORBIDDEN = ("polyphys.plugins", "polyphys.couplers", "polyphys.importers")
ALLOWED_TOP = {"polyphys", "warp", "numpy", "attrs", "__future__", "math", "os", "sys", "types", "typing",
               "tomllib", "tomli"}   # tomli: the declared backport of tomllib for Python 3.10


def _imports(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            yield node.module


def test_imports_only_core_and_its_own_modules():
    files = sorted(PACKAGE.glob("*.py"))
    assert len(files) >= 8
    for path in files:
        for mod in _imports(path):
            assert not mod.startswith(FORBIDDEN), f"{path.name} imports {mod}: a plugin never imports another"
            assert mod.split(".")[0] in ALLOWED_TOP, f"{path.name} imports {mod}, not declared as a dependency"


def test_init_is_light():
    mods = set(_imports(PACKAGE / "__init__.py"))
    assert mods == {"polyphys", "polyphys.specs"}


def test_version_agrees_with_pyproject():
    import re

    pyproject = (ROOT / "tests" / "thirdparty" / "pyproject.toml").read_text()
    init = (PACKAGE / "__init__.py").read_text()
    want = re.search(r'^version = "([^"]+)"', pyproject, re.M).group(1)
    assert re.search(r'^__version__ = "([^"]+)"', init, re.M).group(1) == want
