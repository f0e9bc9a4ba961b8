"""Scale-out on a Ray cluster (docs/distributed.md): batched rollouts (:class:`ScenePool`) and
parameter sweeps / domain randomisation (:func:`sweep`).

Needs the optional extra ``polyphys[ray]``; importing this package does not import Ray (the first
use without it raises :class:`~polyphys.viewer.MissingExtraError` naming the extra).
"""

from __future__ import annotations

from ..errors import WorkerError, WorkerLostError

__all__ = ["ScenePool", "sweep", "grid", "zipped", "SweepResult", "connect", "WorkerError", "WorkerLostError",
           "run_file_distributed", "load_sweep_file", "run_sweep_file"]


def __getattr__(name: str):
    if name == "ScenePool":
        from .pool import ScenePool

        return ScenePool
    if name in ("sweep", "grid", "zipped", "SweepResult", "load_sweep_file", "run_sweep_file"):
        from . import sweeps as _sweep

        return getattr(_sweep, name)
    if name == "connect":
        from ._common import connect

        return connect
    if name == "run_file_distributed":
        from .runfile import run_file_distributed

        return run_file_distributed
    raise AttributeError(f"module 'polyphys.distributed' has no attribute {name!r}")
