"""Helpers of the distributed tests: a real Ray instance per test module (never a mock). Ray's files
(/tmp/ray by default), never into the source tree. The machine running CI is shared and loaded:
timeouts are generous."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

# the workers import ray_scenes (the factories) by name: put this folder on their PYTHONPATH
RUNTIME_ENV = {"env_vars": {"PYTHONPATH": os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}}
OBJECT_STORE = 96 * 1024 * 1024          # per node: small, CI machines are small


def import_ray():
    return pytest.importorskip("ray", reason="Ray is not installed: pip install 'polyphys[ray]'")


def start_or_skip(fn):
    """Run ``fn`` (which starts Ray); skip the module, saying why, when Ray cannot start here."""
    try:
        return fn()
    except Exception as exc:   # Ray raises several types when it cannot start (ports, shm, ...)
        pytest.skip(f"Ray cannot start on this machine: {type(exc).__name__}: {exc}")
