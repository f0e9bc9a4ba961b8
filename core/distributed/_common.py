"""Pieces shared by the pool, the sweep and the worker: Ray import and connection, the picklable
scene factory, provenance, and the error payload a worker sends back instead of raising.

Nothing here imports Ray at module import: ``import polyphys.distributed`` works without the
``ray`` extra, and the first use says which extra to install (docs/distributed.md).
"""

from __future__ import annotations

import hashlib
import os
import traceback

from ..errors import OptionError, PolyphysError, WorkerError

EXTRA = "ray"


def require_ray():
    """Import Ray, or raise MissingExtraError naming ``pip install 'polyphys[ray]'``."""
    from ..viewer._extras import require

    return require("ray", EXTRA)


def connect(address: str | None = None, *, num_cpus: int | None = None, runtime_env: dict | None = None,
            **init_kwargs):
    """Connect to a Ray cluster, or start a local one; returns the ``ray`` module.

    ``address=None``: reuse the connection if Ray is initialised, else start a local Ray instance
    (no dashboard, ``num_cpus`` default: the cores available). ``"auto"``: the cluster started on
    this machine with ``ray start --head``; ``"HOST:PORT"``: that cluster's head (its GCS port,
    6379 by default). Extra keyword arguments go to ``ray.init``.
    """
    ray = require_ray()
    if ray.is_initialized():
        return ray
    if address is not None and not isinstance(address, str):
        raise OptionError(f"address = {address!r}: None (a local Ray instance), 'auto' or 'HOST:PORT'")
    kwargs = dict(init_kwargs)
    if runtime_env is not None:
        kwargs["runtime_env"] = runtime_env
    kwargs.setdefault("log_to_driver", True)
    if address is None or address == "local":
        kwargs.setdefault("include_dashboard", False)
        if num_cpus is not None:
            kwargs["num_cpus"] = num_cpus
        # "local": always a new instance; a bare ray.init() would join the cluster named in
        # /tmp/ray/ray_current_cluster, which may be dead (ray start --head then killed)
        ray.init(address="local", **kwargs)
    else:
        _check_reachable(address)
        try:
            ray.init(address=address, **kwargs)
        except ConnectionError as exc:
            raise OptionError(f"address = {address!r}: no Ray cluster answered there ({exc}); start one "
                              f"with `ray start --head` (docs/distributed.md)") from None
    return ray


def _check_reachable(address: str) -> None:
    """HOST:PORT: fail at once when nothing listens there (Ray itself retries for minutes)."""
    import socket

    if address == "auto" or address.startswith("ray://") or ":" not in address:
        return
    host, _, port = address.rpartition(":")
    try:
        port_n = int(port)
    except ValueError:
        raise OptionError(f"address = {address!r}: expected 'auto' or 'HOST:PORT' (PORT a number)") from None
    try:
        socket.create_connection((host, port_n), timeout=10.0).close()
    except OSError as exc:
        raise OptionError(f"address = {address!r}: no Ray cluster answers there ({exc}); start one with "
                          f"`ray start --head --port={port_n}` on {host} (docs/distributed.md)") from None


def versions() -> dict:
    """polyphys, Warp, NumPy, Ray and every registered plugin distribution's version (provenance)."""
    from importlib import metadata

    from .. import __version__
    from ..registry import registry

    out = {"polyphys": __version__}
    for dist in ("warp-lang", "numpy", "ray"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    plugins = {}
    for r in registry().plugin_rows():
        plugins[f"{r['kind']}:{r['name']}"] = f"{r['distribution']} {r['version']}"
    out["plugins"] = plugins
    return out


# -- the scene factory -------------------------------------------------------------------------
class SceneFactory:
    """What a worker builds: ``fn(n_envs=N, **kwargs)`` returning a built, batched Scene, or a scene
    file (docs/running.md) whose text travels with the factory, so workers need not see the file.

    A scene file's relative model paths (``morph.file``) are resolved against the file's folder on
    the driver: on a cluster that folder must exist on every node (a shared filesystem or the
    same image), or the file must name absolute paths that do.
    """

    def __init__(self, fn=None, *, text: str | None = None, source: str | None = None,
                 base_dir: str | None = None, kwargs: dict | None = None):
        self.fn = fn
        self.text = text
        self.source = source
        self.base_dir = base_dir
        self.kwargs = dict(kwargs or {})
        self.plan = None          # the parsed plan, on the worker (scene files)
        self.entities_by_name: dict = {}

    @classmethod
    def of(cls, factory, kwargs: dict | None = None) -> SceneFactory:
        """Normalise what the user gave: a SceneFactory, a callable or a scene-file path."""
        if isinstance(factory, SceneFactory):
            return factory
        if isinstance(factory, (str, os.PathLike)):
            path = os.fspath(factory)
            if not path.endswith(".toml"):
                raise OptionError(f"factory = {path!r}: a scene file must be a .toml file (docs/running.md), "
                                  f"or give a function factory(n_envs) returning a built Scene")
            from ..run import parse_file

            parse_file(path)              # validate on the driver: a typo costs no worker
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            return cls(text=text, source=path, base_dir=os.path.dirname(os.path.abspath(path)), kwargs=kwargs)
        if callable(factory):
            return cls(factory, kwargs=kwargs)
        raise OptionError(f"factory = {factory!r}: expected a function factory(n_envs) returning a built "
                          f"polyphys Scene, or the path of a scene .toml file")

    def describe(self) -> str:
        if self.fn is not None:
            mod = getattr(self.fn, "__module__", "?")
            name = getattr(self.fn, "__qualname__", type(self.fn).__name__)
            return f"function {mod}.{name}" + (f" with {self.kwargs}" if self.kwargs else "")
        digest = hashlib.sha256(self.text.encode()).hexdigest()[:16]
        return f"scene file {self.source} (sha256 {digest})"

    def check_picklable(self) -> bytes:
        """Pickle with Ray's cloudpickle, or raise an OptionError saying what cannot travel."""
        ray = require_ray()
        try:
            return ray.cloudpickle.dumps(self)
        except Exception as exc:      # cloudpickle raises TypeError, PicklingError, AttributeError, ...
            what = self.describe()
            raise OptionError(f"factory = {what}: cannot be pickled for the Ray workers ({type(exc).__name__}: "
                              f"{exc}); give a module-level function whose arguments and closure hold "
                              f"only picklable values, or a scene .toml file") from None

    def build(self, n_envs: int):
        """Build the scene with ``n_envs`` envs (on the worker). Returns the built Scene."""
        if self.fn is not None:
            scene = self.fn(n_envs=n_envs, **self.kwargs)
            from ..scene import Scene

            if not isinstance(scene, Scene):
                raise OptionError(f"factory {self.describe()} returned {type(scene).__name__}: it must return "
                                  f"a built polyphys Scene")
            if not scene.built or scene.n_envs != n_envs or not scene.batched:
                raise OptionError(f"factory {self.describe()} returned a scene with n_envs = "
                                  f"{scene.n_envs if scene.built else 'unbuilt'}: it must call "
                                  f"scene.build(n_envs=n_envs) with the n_envs it is given ({n_envs})")
            self.entities_by_name = {e.name: e for e in scene.entities if getattr(e, "name", None)}
            return scene
        from ..run import build_scene, parse_string

        plan = parse_string(self.text, source=self.source, base_dir=self.base_dir)
        plan.n_envs = n_envs
        scene, entities = build_scene(plan)
        self.plan = plan
        from ..run import _entity_name

        self.entities_by_name = {_entity_name(e, ep): e for ep, e in zip(plan.entities, entities, strict=True)}
        self.plan_entities = entities
        return scene


# -- errors travel as payloads ---------------------------------------------------------------------
def error_payload(exc: BaseException, where: str) -> dict:
    """What a worker returns instead of raising: type, message and its formatted traceback."""
    return {"type": type(exc).__name__, "polyphys": isinstance(exc, PolyphysError), "message": str(exc),
            "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)), "where": where}


def raise_payload(payload: dict, worker: int, info: dict | None) -> None:
    """Raise the driver-side WorkerError for a worker's error payload."""
    node = ""
    if info:
        node = f" (node {str(info.get('node_id', '?'))[:12]}, host {info.get('host', '?')}, pid {info.get('pid', '?')})"
    msg = (f"worker {worker}{node} failed in {payload['where']}: {payload['type']}: {payload['message']}\n"
           f"--- worker traceback ---\n{payload['traceback'].rstrip()}")
    raise WorkerError(msg, worker=worker, cause_type=payload["type"], remote_traceback=payload["traceback"])
