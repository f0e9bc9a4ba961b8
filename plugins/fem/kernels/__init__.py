"""Warp kernels of the FEM solver: ``elastic`` (constitutive models, explicit stage, boundary
conditions, stress/energy readbacks) and ``implicit`` (backward Euler: Newton, PCG, line search).

Each file serves both precisions: imported normally it is float32; ``load("64")`` loads the same
file a second time under the name ``<module>_f64``, where its scalar type is float64 (a real file,
so Warp caches each precision's module like any other).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys


def _load_f64(stem: str):
    name = f"{__name__}.{stem}_f64"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, os.path.join(os.path.dirname(__file__), f"{stem}.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def load(precision: str):
    """(elastic, implicit) kernel modules of the given precision ("32" or "64")."""
    if precision == "64":
        return _load_f64("elastic"), _load_f64("implicit")
    return importlib.import_module(f"{__name__}.elastic"), importlib.import_module(f"{__name__}.implicit")
