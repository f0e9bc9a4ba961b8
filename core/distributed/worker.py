"""The worker: one Ray actor process holding one scene of ``n_envs`` envs.

The class is plain Python (no Ray import here); the pool and the sweep wrap it with ``ray.remote``
when they start. Every public method returns ``("ok", value)`` or ``("err", payload)`` — a
worker's exception travels back as its type, message and formatted traceback (``_common.
error_payload``) and the driver raises a :class:`polyphys.errors.WorkerError` with it.

Per call, the worker loops over steps, never over envs: actions arrive as one batch-first array
(the worker's slice of the pool's), observations leave as one batch-first array per name.
"""

from __future__ import annotations

import os
import socket
import tempfile
import time

import numpy as np

from ..errors import OptionError
from ._common import error_payload, versions

OBS_SPECIAL = ("time", "step_count")


def _ok(value=None):
    return ("ok", value)


class SceneWorker:
    def __init__(self, factory, n_envs: int, index: int, action=None, quiet: bool = True):
        self.factory = factory
        self.n_envs = int(n_envs)
        self.index = int(index)
        self.action = action
        self.quiet = quiet
        self.scene = None
        self.info: dict = {}
        self._initial = None            # sweep: the state every batch starts from
        self._tmp = None

    # -- plumbing -----------------------------------------------------------------------------
    def _guard(self, where: str, fn, *args):
        try:
            return _ok(fn(*args))
        except Exception as exc:   # every error goes back to the driver with its traceback
            return ("err", error_payload(exc, where))

    def _tmpdir(self) -> str:
        if self._tmp is None:
            self._tmp = tempfile.mkdtemp(prefix=f"polyphys-worker{self.index}-")
        return self._tmp

    def _entity(self, name: str):
        ents = self.factory.entities_by_name
        if name not in ents:
            raise OptionError(f"no entity named {name!r} in the worker's scene; named entities: {sorted(ents)}")
        return ents[name]

    def _bound(self, name: str, prefix: str):
        """``"entity/method"`` → the bound method; ``prefix`` is "get_" or "set_"."""
        if not isinstance(name, str) or name.count("/") != 1:
            raise OptionError(f"{name!r}: expected 'entity/{prefix}...' (an entity name and one of its "
                              f"{'getters' if prefix == 'get_' else 'setters'})")
        ent_name, meth = name.split("/")
        ent = self._entity(ent_name)
        fn = getattr(ent, meth, None)
        if not meth.startswith(prefix) or fn is None or not callable(fn):
            known = sorted(n for n in dir(ent) if n.startswith(prefix))
            raise OptionError(f"{name!r}: entity {ent_name!r} ({type(ent).__name__}) has no {meth!r}; its "
                              f"{'getters' if prefix == 'get_' else 'setters'}: {known}")
        return fn

    # -- build --------------------------------------------------------------------------------
    def build(self):
        return self._guard("build()", self._build)

    def _build(self) -> dict:
        if self.quiet:
            try:
                import warp as wp

                wp.config.quiet = True
                wp.config.log_level = getattr(wp, "LOG_WARNING", 30)
            except ImportError:
                pass
        t0 = time.perf_counter()
        self.scene = self.factory.build(self.n_envs)
        # global env w·n .. w·n + n − 1 of the pool: sensor noise streams as in one scene of all envs
        self.scene.set_global_env_offset(self.index * self.n_envs)
        build_s = time.perf_counter() - t0
        try:
            import ray

            node_id = ray.get_runtime_context().get_node_id()
        except Exception:   # outside Ray (tests of the class itself)
            node_id = None
        self._recorders = {}
        if self.factory.plan is not None:       # a scene file: its [run].record keys are names too
            from ..run import _recorders

            for key, fn, kwargs, _ in _recorders(self.factory.plan, self.factory.plan_entities):
                self._recorders[key] = (fn, kwargs)
        action_shape = None
        if isinstance(self.action, str):
            setter = self._bound(self.action, "set_")
            getter = getattr(setter.__self__, "get_" + self.action.split("/")[1][4:], None)
            if callable(getter):
                try:
                    action_shape = tuple(np.shape(getter()))[1:]
                except Exception:   # a getter needing arguments: the shape is learned from the first step
                    action_shape = None
        self.info = {
            "worker": self.index, "node_id": node_id, "host": socket.gethostname(), "pid": os.getpid(),
            "build_s": build_s, "n_envs": self.scene.n_envs, "versions": versions(),
            "entities": sorted(self.factory.entities_by_name), "sensors": [s.full_name for s in self.scene.sensors],
            "records": sorted(self._recorders), "action_shape": action_shape,
        }
        return self.info

    def ping(self):
        return _ok(self.info)

    # -- acting and observing -----------------------------------------------------------------
    def _apply(self, a) -> None:
        if self.action is None:
            raise OptionError("step(actions=...) on a pool built without action=: give ScenePool(action="
                              "'entity/set_...' or a function action(scene, actions))")
        if isinstance(self.action, str):
            self._bound(self.action, "set_")(a)
        else:
            self.action(self.scene, a)

    def _step(self, k: int, actions, per_step: bool) -> None:
        for i in range(k):
            if actions is not None:
                self._apply(actions[:, i] if per_step else actions)
            self.scene.step()

    def _observe(self, names) -> dict:
        if callable(names):
            out = names(self.scene)
            if not isinstance(out, dict):
                raise OptionError(f"observation function returned {type(out).__name__}: expected a dict of "
                                  f"batch-first arrays")
            return {k: np.asarray(v) for k, v in out.items()}
        out = {}
        readings = truths = None
        for name in names:
            if name in self._recorders:
                fn, kwargs = self._recorders[name]
                out[name] = np.asarray(fn(**kwargs))
            elif name == "time":
                out[name] = np.asarray(self.scene.get_time())
            elif name == "step_count":
                out[name] = np.asarray(self.scene.get_step_count())
            elif name.startswith("sensors/") or name.startswith("sensors_truth/"):
                truth = name.startswith("sensors_truth/")
                full = name.split("/", 1)[1]
                if truth:
                    truths = truths if truths is not None else self.scene.read_sensors(ground_truth=True)
                    src = truths
                else:
                    readings = readings if readings is not None else self.scene.read_sensors()
                    src = readings
                if full not in src:
                    raise OptionError(f"observation {name!r}: the scene has no sensor {full!r}; sensors: "
                                      f"{sorted(src)}")
                out[name] = np.asarray(src[full].value)
            else:
                out[name] = np.asarray(self._bound(name, "get_")())
        return out

    def step(self, k: int, actions, per_step: bool, obs):
        def run():
            self._step(k, actions, per_step)
            return self._observe(obs) if obs else None
        return self._guard(f"step(k={k})", run)

    def observe(self, names):
        return self._guard("observe()", self._observe, names)

    def _reset(self, local_idx) -> None:
        if local_idx is None:
            self.scene.reset()
        elif len(local_idx):
            self.scene.reset(envs_idx=np.asarray(local_idx, dtype=np.int64))

    def reset(self, local_idx):
        return self._guard("reset()", self._reset, local_idx)

    def _set(self, name: str, values, local_idx) -> None:
        fn = self._bound(name, "set_")
        if local_idx is None:
            fn(values)
        elif len(local_idx):
            fn(values, envs_idx=np.asarray(local_idx, dtype=np.int64))

    def set(self, name: str, values, local_idx):
        return self._guard(f"set({name!r})", self._set, name, values, local_idx)

    def replay(self, ops):
        """Apply logged operations (already sliced to this worker) in order."""
        def run():
            for op in ops:
                self._do(op)
        return self._guard("replay()", run)

    def _do(self, op) -> None:
        kind = op[0]
        if kind == "step":
            self._step(op[1], op[2], op[3])
        elif kind == "reset":
            self._reset(op[1])
        elif kind == "set":
            self._set(op[1], op[2], op[3])
        else:   # pragma: no cover - the pool writes the log
            raise OptionError(f"unknown logged operation {kind!r}")

    # -- checkpoints --------------------------------------------------------------------------
    def save(self):
        """The scene's checkpoint as bytes, put in this node's object store; returns its ObjectRef
        (owned by this worker: if the worker dies before the driver fetched it, the fetch fails —
        the driver never commits a checkpoint with a missing shard)."""
        def run():
            import ray

            path = os.path.join(self._tmpdir(), "shard.npz")
            self.scene.save_checkpoint(path)
            data = np.fromfile(path, dtype=np.uint8)
            os.remove(path)
            return [ray.put(data)]      # in a list: the driver receives the reference itself
        return self._guard("save()", run)

    def load(self, data):
        def run():
            path = os.path.join(self._tmpdir(), "load.npz")
            np.asarray(data, dtype=np.uint8).tofile(path)
            try:
                self.scene.load_checkpoint(path)
            finally:
                os.remove(path)
        return self._guard("load()", run)

    # -- sweeps -------------------------------------------------------------------------------
    def run_batch(self, params: dict, seeds, steps: int, apply, metric):
        """One batch of sweep runs, one per env: restore the state the scene had after build, set
        the per-env parameters, step, evaluate the metric."""
        def run():
            t0 = time.perf_counter()
            if self._initial is None:
                self._initial = self.scene.get_state()
            self.scene.reset(state=self._initial)
            plain = {}
            for name, values in params.items():
                if "/" in name:
                    self._bound(name, "set_")(values)
                else:
                    plain[name] = values
            if apply is not None:
                apply(self.scene, plain, seeds)
            elif plain:
                raise OptionError(f"parameters {sorted(plain)} are not entity setters ('entity/set_...'): give "
                                  f"sweep(apply=...) a function apply(scene, params, seeds) that sets them")
            for _ in range(steps):
                self.scene.step()
            m = self._observe(metric)
            return {"metric": m, "seconds": time.perf_counter() - t0, "worker": self.index,
                    "node_id": self.info.get("node_id"), "host": self.info.get("host"), "pid": self.info.get("pid")}
        return self._guard("run_batch()", run)
