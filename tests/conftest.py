import os
import sys

import pytest

# importlib import mode (pyproject) lets test files share basenames across folders; helper modules
# next to the tests stay importable by name through these path entries.
# tests/thirdparty is a separate distribution (its build leaves egg-info metadata there): never on
# sys.path, or importlib.metadata would see the plugin where it is not installed.
_here = os.path.dirname(__file__)
_NOT_TEST_DIRS = {"thirdparty", "fixtures"}
for _d in sorted(os.listdir(_here)):
    _p = os.path.join(_here, _d)
    if (os.path.isdir(_p) and not _d.startswith((".", "_")) and _d not in _NOT_TEST_DIRS
            and _p not in sys.path):
        sys.path.append(_p)


@pytest.fixture(autouse=True, scope="session")
def _quiet_warp():
    try:
        import warp as wp

        wp.config.quiet = True
    except ImportError:  # core-only environments
        pass
    yield
