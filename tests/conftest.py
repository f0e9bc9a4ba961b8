import importlib.util
import os
import sys
import tempfile

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


# Nothing the run writes may land in the source tree: hypothesis keeps its example database and MuJoCo
# its warning log (MUJOCO_LOG.TXT, else written to the working directory) under the temp folder.
_SCRATCH = os.path.join(tempfile.gettempdir(), f"polyphys-tests-{os.getuid() if hasattr(os, 'getuid') else 0}")


def _redirect_tool_output():
    if importlib.util.find_spec("hypothesis") is not None:
        from hypothesis import configuration, settings
        from hypothesis.database import DirectoryBasedExampleDatabase

        home = os.path.join(_SCRATCH, "hypothesis")
        configuration.set_hypothesis_home_dir(home)          # its caches (constants, unicode data)
        settings.register_profile("polyphys", database=DirectoryBasedExampleDatabase(os.path.join(home, "examples")))
        settings.load_profile("polyphys")


_redirect_tool_output()


def pytest_runtest_setup(item):
    """MuJoCo's default warning handler appends to ./MUJOCO_LOG.TXT: once a test module has imported
    mujoco, its warnings go to a log in the temp folder instead."""
    mj = sys.modules.get("mujoco")
    if mj is not None and not getattr(mj, "_polyphys_log_redirected", False) and hasattr(mj, "set_mju_user_warning"):
        os.makedirs(_SCRATCH, exist_ok=True)
        log = os.path.join(_SCRATCH, "MUJOCO_LOG.TXT")

        def _to_log(msg, _log=log):
            with open(_log, "a") as fh:
                fh.write(f"{msg}\n")
        mj.set_mju_user_warning(_to_log)
        mj._polyphys_log_redirected = True


@pytest.fixture(autouse=True, scope="session")
def _quiet_warp():
    try:
        import warp as wp

        wp.config.quiet = True
    except ImportError:  # core-only environments
        pass
    yield
