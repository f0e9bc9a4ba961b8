"""ScenePool: one scene of ``n_workers × n_envs_per_worker`` envs spread over Ray actors.

Global env ``g`` lives on worker ``g // n_envs_per_worker`` as its local env ``g % n_envs_per_worker``.
Every call goes to all workers at once and is gathered in worker order, so a pool behaves like one
batched scene (docs/distributed.md): the trajectories of a pool of 2 × 8 envs equal, bit for bit on
CPU, those of one 16-env scene given the same per-env actions (tests/distributed).

Fault tolerance. The pool keeps a *base* — the last committed pool checkpoint, held in the
driver's memory (and on disk when saved) — and the log of every state-changing call since then
(steps with their actions, resets, setter calls). A worker that dies (its node lost, its process
killed) or does not answer within ``timeout_s`` is replaced by a new actor, preferably on another
node, which builds the scene, loads its shard of the base and replays the log: checkpoints continue
bit-exactly (docs/architecture.md) and replay is deterministic, so the pool ends where a run
without the failure would be. A call that raises in a worker (bad input) is rolled back: every
worker returns to the base plus the log without that call, and the WorkerError carries the
worker's traceback.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Callable

import numpy as np

from ..errors import CheckpointError, OptionError, WorkerError, WorkerLostError
from ._common import SceneFactory, connect, raise_payload, require_ray

MANIFEST = "manifest.json"
POOL_CHECKPOINT_FORMAT = 1
PLACEMENTS = ("spread", "default")
RESOURCE_KEYS = ("num_cpus", "num_gpus", "memory", "resources", "accelerator_type")


def _lost_errors(ray) -> tuple:
    ex = ray.exceptions
    return tuple(getattr(ex, n) for n in ("RayActorError", "ObjectLostError", "WorkerCrashedError", "NodeDiedError",
                                          "LocalRayletDiedError", "ActorUnavailableError") if hasattr(ex, n))


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_file(path: str, data) -> None:
    with open(path, "wb") as fh:
        fh.write(memoryview(data))
        fh.flush()
        os.fsync(fh.fileno())


class ScenePool:
    """A batched scene split across Ray actors.

    :param factory: a function ``factory(n_envs=N)`` returning a built Scene with N envs (module
        level, or any value Ray's cloudpickle can ship), or the path of a scene ``.toml`` file
        (docs/running.md; its ``[run] n_envs`` is replaced by ``n_envs_per_worker``).
    :param n_workers: number of actors; ``n_envs_per_worker``: envs in each actor's scene.
    :param resources: Ray resources of each actor: ``num_cpus`` (default 1), ``num_gpus``, ``memory``,
        ``resources`` (custom, e.g. ``{"node_a": 1}``).
    :param action: how a step's per-env actions reach the scene: ``"entity/set_..."`` (a setter
        called with the worker's batch-first slice, e.g. ``"arm/set_ctrl"``) or a function
        ``action(scene, actions)``; applied before every step.
    :param action_shape: per-env action shape; default: learned from the setter's getter
        (``set_ctrl`` → ``get_ctrl``) or fixed by the first ``step``.
    :param observe: default observation names for ``step``/``observe`` (see :meth:`observe`).
    :param address: Ray address when Ray is not yet initialised (None: a local instance, "auto",
        "HOST:PORT").
    :param placement: "spread" (default: actors spread over the nodes, so one lost node costs few
        workers) or "default" (Ray's own policy, which fills a node before the next).
    :param timeout_s: how long a call waits for a worker before treating it as lost;
        ``build_timeout_s`` the same for building (kernels load on first use).
    :param max_recoveries: worker replacements allowed over the pool's life before
        :class:`~polyphys.errors.WorkerLostError`.
    :param checkpoint_every: take a checkpoint (the new base) every this many steps, which bounds
        the replay log; ``checkpoint_dir``: also write those checkpoints there (atomically, keeping
        ``keep_checkpoints`` generations).
    :param runtime_env: Ray runtime environment of the actors (e.g. ``{"env_vars": {"PYTHONPATH": ...}}``
        so that they import the module defining ``factory``).
    """

    def __init__(self, factory, n_workers: int, n_envs_per_worker: int, *, resources: dict | None = None,
                 action=None, action_shape=None, observe=None, address: str | None = None,
                 placement: str = "spread", timeout_s: float = 600.0, build_timeout_s: float = 1800.0,
                 max_recoveries: int = 8, checkpoint_every: int | None = None, checkpoint_dir=None,
                 keep_checkpoints: int = 2, runtime_env: dict | None = None, factory_kwargs: dict | None = None):
        for key, val, lo in (("n_workers", n_workers, 1), ("n_envs_per_worker", n_envs_per_worker, 1),
                             ("keep_checkpoints", keep_checkpoints, 1), ("max_recoveries", max_recoveries, 0)):
            if isinstance(val, bool) or not isinstance(val, (int, np.integer)) or val < lo:
                raise OptionError(f"ScenePool({key}={val!r}): must be an integer >= {lo}")
        if checkpoint_every is not None and (isinstance(checkpoint_every, bool) or not isinstance(checkpoint_every, int)
                                             or checkpoint_every < 1):
            raise OptionError(f"ScenePool(checkpoint_every={checkpoint_every!r}): None or an integer >= 1")
        for key, val in (("timeout_s", timeout_s), ("build_timeout_s", build_timeout_s)):
            if isinstance(val, bool) or not isinstance(val, (int, float)) or not val > 0:
                raise OptionError(f"ScenePool({key}={val!r}): must be a number of seconds > 0")
        if placement not in PLACEMENTS:
            raise OptionError(f"ScenePool(placement={placement!r}): allowed {list(PLACEMENTS)}")
        resources = dict({"num_cpus": 1} if resources is None else resources)
        bad = sorted(set(resources) - set(RESOURCE_KEYS))
        if bad:
            raise OptionError(f"ScenePool(resources=...): unknown keys {bad}; allowed {list(RESOURCE_KEYS)}")
        if action is not None and not isinstance(action, str) and not callable(action):
            raise OptionError(f"ScenePool(action={action!r}): 'entity/set_...' or a function action(scene, actions)")
        self.factory = SceneFactory.of(factory, factory_kwargs)
        self.factory.check_picklable()
        if callable(action):
            try:
                require_ray().cloudpickle.dumps(action)
            except Exception as exc:
                raise OptionError(f"ScenePool(action={action!r}): cannot be pickled for the workers "
                                  f"({type(exc).__name__}: {exc})") from None
        self.n_workers = int(n_workers)
        self.n_envs_per_worker = int(n_envs_per_worker)
        self.n_envs = self.n_workers * self.n_envs_per_worker
        self.action = action
        self.action_shape = tuple(action_shape) if action_shape is not None else None
        self.default_obs = observe
        self.resources = resources
        self.placement = placement
        self.timeout_s = float(timeout_s)
        self.build_timeout_s = float(build_timeout_s)
        self.max_recoveries = int(max_recoveries)
        self.checkpoint_every = checkpoint_every
        self.checkpoint_dir = os.fspath(checkpoint_dir) if checkpoint_dir is not None else None
        self.keep_checkpoints = int(keep_checkpoints)
        self.runtime_env = runtime_env
        self.step_count = 0                  # steps taken by the pool since it was built
        self.recoveries = 0
        self.events: list[dict] = []         # worker losses, recoveries, checkpoints (with times)
        self._log: list[tuple] = []          # state-changing calls since the base
        self._base: list[np.ndarray] | None = None
        self._base_step = 0
        self._base_gen = 0
        self._gen = 0
        self.ray = connect(address)
        from .worker import SceneWorker

        self._actor_cls = self.ray.remote(SceneWorker)
        self.workers: list = [None] * self.n_workers
        self.info: list[dict] = [{} for _ in range(self.n_workers)]
        self._closed = False
        try:
            self._start_all()
            self._checkpoint(None, None)       # the base: every worker's state right after build
        except BaseException:
            self.close()
            raise

    # -- actors ---------------------------------------------------------------------------------
    def _options(self, avoid_node: str | None = None) -> dict:
        opts = {k: v for k, v in self.resources.items()}
        opts["max_restarts"] = 0
        if self.runtime_env is not None:
            opts["runtime_env"] = self.runtime_env
        if avoid_node is not None:
            target = self._pick_node(avoid_node)
            if target is not None:
                from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

                opts["scheduling_strategy"] = NodeAffinitySchedulingStrategy(target, soft=True)
                return opts
        if self.placement == "spread":
            opts["scheduling_strategy"] = "SPREAD"
        return opts

    def _pick_node(self, avoid: str) -> str | None:
        """An alive node other than ``avoid`` with the CPUs an actor needs, holding the fewest of our
        workers (None: let Ray choose)."""
        need = float(self.resources.get("num_cpus", 1) or 0)
        try:
            nodes = [n for n in self.ray.nodes() if n.get("Alive") and n["NodeID"] != avoid
                     and n.get("Resources", {}).get("CPU", 0.0) >= need]
        except Exception:
            return None
        if not nodes:
            return None
        load = {}
        for inf in self.info:
            if inf.get("node_id"):
                load[inf["node_id"]] = load.get(inf["node_id"], 0) + 1
        nodes.sort(key=lambda n: (load.get(n["NodeID"], 0), n["NodeID"]))
        return nodes[0]["NodeID"]

    def _new_actor(self, w: int, avoid_node: str | None = None):
        return self._actor_cls.options(**self._options(avoid_node)).remote(
            self.factory, self.n_envs_per_worker, w, self.action)

    def _start_all(self) -> None:
        for w in range(self.n_workers):
            self.workers[w] = self._new_actor(w)
        refs = [a.build.remote() for a in self.workers]
        results, lost = self._gather(refs, self.build_timeout_s, "build()")
        if lost:
            try:
                free = {k: v for k, v in self.ray.available_resources().items() if not k.startswith("node:")}
            except Exception:   # the cluster itself is gone
                free = "unknown"
            raise WorkerLostError(f"workers {sorted(lost)} were lost while building the scene: "
                                  f"{'; '.join(lost.values())} (each actor asks for {self.resources}; the cluster "
                                  f"has free {free}: an actor that cannot be placed waits until build_timeout_s)")
        for w, r in enumerate(results):
            if r[0] == "err":
                raise_payload(r[1], w, None)
            self.info[w] = r[1]
        shapes = {inf.get("action_shape") for inf in self.info}
        if self.action_shape is None and len(shapes) == 1 and None not in shapes:
            self.action_shape = next(iter(shapes))

    def _gather(self, refs: list, timeout: float, where: str):
        """Results in worker order; ``lost``: {worker: reason} for workers that died or timed out."""
        ray = self.ray
        lost_types = _lost_errors(ray)
        results: list = [None] * len(refs)
        lost: dict[int, str] = {}
        deadline = time.monotonic() + timeout
        pending = {ref: w for w, ref in enumerate(refs) if ref is not None}
        while pending:
            left = deadline - time.monotonic()
            ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=max(left, 0.0))
            if not ready and left <= 0:
                break
            for ref in ready:
                w = pending.pop(ref)
                try:
                    results[w] = ray.get(ref)
                except lost_types as exc:
                    lost[w] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        for _ref, w in pending.items():
            lost[w] = f"no answer to {where} within {timeout:g} s (timeout_s)"
        return results, lost

    def _event(self, kind: str, **kw) -> None:
        self.events.append({"event": kind, "time": time.time(), "step": self.step_count, **kw})

    # -- the log --------------------------------------------------------------------------------
    def _slice(self, w: int) -> slice:
        return slice(w * self.n_envs_per_worker, (w + 1) * self.n_envs_per_worker)

    def _local_idx(self, envs: np.ndarray | None, w: int):
        if envs is None:
            return None
        lo = w * self.n_envs_per_worker
        sel = envs[(envs >= lo) & (envs < lo + self.n_envs_per_worker)]
        return (sel - lo).astype(np.int64)

    def _local_op(self, op: tuple, w: int) -> tuple:
        kind = op[0]
        if kind == "step":
            acts = op[2]
            return ("step", op[1], None if acts is None else acts[self._slice(w)], op[3])
        if kind == "reset":
            return ("reset", self._local_idx(op[1], w))
        if kind == "set":
            vals, envs = op[2], op[3]
            if envs is None:
                return ("set", op[1], vals[self._slice(w)] if op[4] else vals, None)
            mine = (envs >= w * self.n_envs_per_worker) & (envs < (w + 1) * self.n_envs_per_worker)
            return ("set", op[1], vals[mine] if op[4] else vals, self._local_idx(envs, w))
        raise AssertionError(kind)

    def _send(self, op: tuple, w: int):
        local = self._local_op(op, w)
        a = self.workers[w]
        if local[0] == "step":
            return None  # steps are sent with their observations by _run
        if local[0] == "reset":
            return a.reset.remote(local[1])
        return a.set.remote(local[1], local[2], local[3])

    # -- recovery -------------------------------------------------------------------------------
    def _recover(self, lost: dict[int, str], upto: int | None = None) -> None:
        """Replace the lost workers: new actors (another node where one is free) build the scene,
        load their shard of the base and replay the log (``upto``: only its first entries)."""
        ray = self.ray
        for w, why in sorted(lost.items()):
            self.recoveries += 1
            self._event("worker_lost", worker=w, node_id=self.info[w].get("node_id"), reason=why)
            if self.recoveries > self.max_recoveries:
                raise WorkerLostError(f"worker {w} lost ({why}) after {self.recoveries - 1} recoveries: more "
                                      f"than max_recoveries={self.max_recoveries}")
        for w in lost:
            try:
                ray.kill(self.workers[w], no_restart=True)
            except Exception:   # already gone
                pass
            self.workers[w] = self._new_actor(w, avoid_node=self.info[w].get("node_id"))
        ws = sorted(lost)
        t0 = time.perf_counter()
        results, again = self._gather([self.workers[w].build.remote() for w in ws], self.build_timeout_s,
                                      "build() of a replacement")
        for i, w in enumerate(ws):
            if i in again:
                continue
            if results[i][0] == "err":
                raise_payload(results[i][1], w, None)
            self.info[w] = results[i][1]
        ops = self._log if upto is None else self._log[:upto]
        loads, refs = [], []
        for i, w in enumerate(ws):
            if i in again:
                loads.append(None)
                refs.append(None)
                continue
            a = self.workers[w]
            loads.append(a.load.remote(ray.put(self._base[w])))     # actor calls run in order
            refs.append(a.replay.remote([self._local_op(op, w) for op in ops]))
        loaded, again_l = self._gather(loads, self.build_timeout_s, "load() of the base")
        results, again2 = self._gather(refs, self.build_timeout_s, "replay()")
        again_all = {ws[i]: r for i, r in {**again, **again_l, **again2}.items()}
        for i, w in enumerate(ws):
            if w in again_all:
                continue
            for r in (loaded[i], results[i]):
                if r is not None and r[0] == "err":
                    raise_payload(r[1], w, self.info[w])
        for w in ws:
            if w not in again_all:
                self._event("worker_recovered", worker=w, node_id=self.info[w].get("node_id"), replayed=len(ops),
                            base_generation=self._base_gen, seconds=time.perf_counter() - t0)
        if again_all:
            self._recover(again_all, upto)

    def _rollback(self) -> None:
        """Every worker back to the base plus the log (after a call that raised part-way)."""
        ray = self.ray
        loads, refs = [], []
        for w, a in enumerate(self.workers):
            loads.append(a.load.remote(ray.put(self._base[w])))
            refs.append(a.replay.remote([self._local_op(op, w) for op in self._log]))
        loaded, lost_l = self._gather(loads, self.timeout_s, "load() of the base")
        results, lost = self._gather(refs, self.timeout_s, "replay()")
        lost = {**lost_l, **lost}
        if lost:
            self._recover(lost)
        for w in range(self.n_workers):
            if w in lost:
                continue
            for r in (loaded[w], results[w]):
                if r is not None and r[0] == "err":
                    raise_payload(r[1], w, self.info[w])
        self._event("rolled_back", replayed=len(self._log))

    def _run(self, op: tuple | None, call: Callable, result_call: Callable | None, where: str):
        """Send ``call(w)`` to every worker; on a lost worker recover it (replaying the log, which
        already holds ``op``) and ask it ``result_call(w)``. Returns the results in worker order."""
        if op is not None:
            self._log.append(op)
        results, lost = self._gather([call(w) for w in range(self.n_workers)], self.timeout_s, where)
        while lost:
            self._recover(lost)
            redo = result_call if op is not None else call
            ws = sorted(lost)
            if redo is None:
                for w in ws:
                    results[w] = ("ok", None)
                break
            got, lost2 = self._gather([redo(w) for w in ws], self.timeout_s, where)
            for w, r in zip(ws, got, strict=True):
                results[w] = r
            lost = {ws[i]: why for i, why in lost2.items()}
        errs = [(w, r[1]) for w, r in enumerate(results) if r is not None and r[0] == "err"]
        if errs:
            if op is not None:
                self._log.pop()
                self._rollback()
            raise_payload(errs[0][1], errs[0][0], self.info[errs[0][0]])
        return [r[1] for r in results]

    # -- public API -----------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise OptionError("the pool is closed")

    def _gather_obs(self, parts: list) -> dict | None:
        if parts[0] is None:
            return None
        return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}

    def step(self, actions=None, k: int = 1, *, per_step: bool = False, obs=None) -> dict | None:
        """Advance every env ``k`` steps. ``actions``: one batch-first array, shape
        ``(n_envs, *action_shape)`` (held for the k steps) or, with ``per_step=True``,
        ``(n_envs, k, *action_shape)``; each worker gets its slice. ``obs``: names to return after
        the steps (default: the pool's ``observe``); returns ``{name: (n_envs, ...)}`` or None."""
        self._check_open()
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise OptionError(f"step(k={k!r}): must be an integer >= 1")
        k = int(k)
        if actions is not None:
            a = np.array(actions, copy=True)     # the log keeps its own copy
            lead = (self.n_envs, k) if per_step else (self.n_envs,)
            what = "(n_envs, k, *action_shape)" if per_step else "(n_envs, *action_shape)"
            if a.ndim < len(lead) or a.shape[:len(lead)] != lead:
                raise OptionError(f"step(actions of shape {a.shape}): expected {what} = {lead + (self.action_shape or ())} "
                                  f"for {self.n_workers} workers x {self.n_envs_per_worker} envs")
            tail = a.shape[len(lead):]
            if self.action_shape is not None and tail != self.action_shape:
                raise OptionError(f"step(actions of shape {a.shape}): the per-env action shape is {tail}, this pool's "
                                  f"is {self.action_shape}; expected {lead + self.action_shape}")
            if self.action is None:
                raise OptionError("step(actions=...) on a pool built without action=: give ScenePool(action="
                                  "'entity/set_...' or a function action(scene, actions))")
        else:
            a = None
        names = self.default_obs if obs is None else obs
        op = ("step", k, a, per_step)
        local = [self._local_op(op, w) for w in range(self.n_workers)]
        parts = self._run(op, lambda w: self.workers[w].step.remote(k, local[w][2], per_step, names),
                          (lambda w: self.workers[w].observe.remote(names)) if names else None, f"step(k={k})")
        if a is not None and self.action_shape is None:
            self.action_shape = a.shape[(2 if per_step else 1):]
        self.step_count += k
        if self.checkpoint_every is not None and self.step_count - self._base_step >= self.checkpoint_every:
            self._checkpoint(self.checkpoint_dir, None)
        return self._gather_obs(parts) if names else None

    def observe(self, names=None) -> dict:
        """Observations of every env, batch-first: ``"entity/get_..."`` (an entity getter without
        arguments), ``"sensors/<entity>/<sensor>"`` (the reading's value; ``sensors_truth/...``
        its ground truth), ``"time"``, ``"step_count"``, the record keys of a scene file, or a
        function ``fn(scene) -> {name: batch-first array}``."""
        self._check_open()
        names = self.default_obs if names is None else names
        if not names:
            raise OptionError("observe(): no names given and the pool has no default observe=")
        parts = self._run(None, lambda w: self.workers[w].observe.remote(names), None, "observe()")
        return self._gather_obs(parts)

    def _envs(self, envs_idx, what: str) -> np.ndarray | None:
        if envs_idx is None:
            return None
        e = np.asarray(envs_idx)
        if e.ndim == 0:
            e = e[None]
        if e.ndim != 1 or not np.issubdtype(e.dtype, np.integer) or (e.size and (e.min() < 0 or e.max() >= self.n_envs)):
            raise OptionError(f"{what}(envs_idx={envs_idx!r}): expected global env indices in 0..{self.n_envs - 1}")
        if np.unique(e).size != e.size:
            raise OptionError(f"{what}(envs_idx={envs_idx!r}): an env is named twice")
        return e.astype(np.int64)

    def reset(self, envs_idx=None) -> None:
        """Reset every env (None) or the envs with these global indices to the initial state."""
        self._check_open()
        envs = self._envs(envs_idx, "reset")
        op = ("reset", envs)
        self._run(op, lambda w: self._send(op, w), None, "reset()")

    def set(self, name: str, values, envs_idx=None, *, per_env: bool = True) -> None:
        """Call an entity setter (``"entity/set_..."``) on every worker with its slice of the
        batch-first ``values`` (``per_env=False``: the same value for every env). Logged, so it
        survives a worker loss."""
        self._check_open()
        envs = self._envs(envs_idx, "set")
        vals = np.array(values, copy=True)
        if per_env:
            want = self.n_envs if envs is None else len(envs)
            if vals.ndim == 0 or vals.shape[0] != want:
                raise OptionError(f"set({name!r}, values of shape {vals.shape}): per-env values need a first axis of "
                                  f"{want} ({'n_envs' if envs is None else 'len(envs_idx)'}); per_env=False sends "
                                  f"one value to every env")
        op = ("set", name, vals, envs, per_env)
        self._run(op, lambda w: self._send(op, w), None, f"set({name!r})")

    # -- checkpoints ----------------------------------------------------------------------------
    def _checkpoint(self, path: str | None, progress) -> str | None:
        """Fetch every worker's shard; commit them as the new base (and under ``path``)."""
        attempts = 0
        while True:
            attempts += 1
            self._gen += 1
            gen = self._gen
            staging = None
            if path is not None:
                os.makedirs(path, exist_ok=True)
                staging = os.path.join(path, f".gen-{gen:06d}.{uuid.uuid4().hex[:8]}.tmp")
                os.makedirs(staging)
            outer = [a.save.remote() for a in self.workers]
            shards: list = [None] * self.n_workers
            lost: dict[int, str] = {}
            try:
                for w in range(self.n_workers):
                    got, lw = self._gather([outer[w]], self.timeout_s, "save()")
                    if lw:
                        lost[w] = lw[0]
                        break
                    if got[0][0] == "err":
                        raise_payload(got[0][1], w, self.info[w])
                    inner = got[0][1][0]
                    got2, lw2 = self._gather([inner], self.timeout_s, "fetching a checkpoint shard")
                    if lw2:
                        lost[w] = lw2[0]
                        break
                    shards[w] = np.array(got2[0], dtype=np.uint8, copy=True)
                    if staging is not None:
                        _write_file(os.path.join(staging, f"worker-{w:03d}.npz"), shards[w])
                    if progress is not None:
                        progress(w, self.n_workers)
            except BaseException:
                if staging is not None:
                    shutil.rmtree(staging, ignore_errors=True)
                raise
            if lost:
                if staging is not None:
                    shutil.rmtree(staging, ignore_errors=True)
                self._event("checkpoint_aborted", generation=gen, path=path, lost=sorted(lost))
                # the log since the previous base is intact: recover from it, then try again
                self._recover(lost)
                continue
            manifest_path = None
            if path is not None:
                final = os.path.join(path, f"gen-{gen:06d}")
                _fsync_dir(staging)
                os.replace(staging, final)
                manifest = self._manifest(gen, shards, os.path.basename(final))
                tmp = os.path.join(path, f".{MANIFEST}.{uuid.uuid4().hex[:8]}.tmp")
                _write_file(tmp, json.dumps(manifest, indent=2).encode())
                os.replace(tmp, os.path.join(path, MANIFEST))
                _fsync_dir(path)
                manifest_path = os.path.join(path, MANIFEST)
                self._prune(path)
            self._base = shards
            self._base_step = self.step_count
            self._base_gen = gen
            self._log = []
            self._event("checkpoint", generation=gen, path=path, attempts=attempts,
                        bytes=int(sum(s.nbytes for s in shards)))
            return manifest_path

    def _manifest(self, gen: int, shards: list, folder: str) -> dict:
        inf0 = self.info[0]
        return {
            "format": POOL_CHECKPOINT_FORMAT,
            "generation": gen,
            "step": self.step_count,
            "n_workers": self.n_workers,
            "n_envs_per_worker": self.n_envs_per_worker,
            "n_envs": self.n_envs,
            "factory": self.factory.describe(),
            "versions": inf0.get("versions"),
            "created": time.time(),
            "shards": [{"file": f"{folder}/worker-{w:03d}.npz", "sha256": hashlib.sha256(s).hexdigest(),
                        "bytes": int(s.nbytes), "envs": [w * self.n_envs_per_worker, (w + 1) * self.n_envs_per_worker],
                        "node_id": self.info[w].get("node_id"), "host": self.info[w].get("host")}
                       for w, s in enumerate(shards)],
        }

    def _prune(self, path: str) -> None:
        gens = sorted(d for d in os.listdir(path) if d.startswith("gen-") and os.path.isdir(os.path.join(path, d)))
        for d in gens[:-self.keep_checkpoints]:
            shutil.rmtree(os.path.join(path, d), ignore_errors=True)

    def save_checkpoint(self, path, progress: Callable | None = None) -> str:
        """Write a pool-wide checkpoint into the folder ``path``: one scene checkpoint per worker
        (``gen-NNNNNN/worker-WWW.npz``) and ``manifest.json`` (layout, step, versions, each shard's
        sha256), committed atomically — the shards go to a staging folder that is renamed, then
        the manifest replaces the old one in one rename. A crash or a lost worker before that
        leaves the previous checkpoint valid; a lost worker is recovered and the save retried.
        ``progress(worker, n_workers)`` is called after each shard is written. Returns the
        manifest's path. The checkpoint becomes the pool's base (the replay log restarts empty)."""
        self._check_open()
        return self._checkpoint(os.fspath(path), progress)

    @staticmethod
    def read_manifest(path) -> dict:
        """The manifest of a pool checkpoint folder, every shard's sha256 verified."""
        path = os.fspath(path)
        mpath = os.path.join(path, MANIFEST)
        try:
            with open(mpath, encoding="utf-8") as fh:
                manifest = json.load(fh)
        except FileNotFoundError:
            raise CheckpointError(f"{path}: no pool checkpoint ({MANIFEST} missing)") from None
        except (OSError, ValueError) as exc:
            raise CheckpointError(f"{mpath}: unreadable manifest ({exc})") from None
        if manifest.get("format") != POOL_CHECKPOINT_FORMAT:
            raise CheckpointError(f"{mpath}: format = {manifest.get('format')!r}; this polyphys reads "
                                  f"{POOL_CHECKPOINT_FORMAT}")
        for sh in manifest["shards"]:
            f = os.path.join(path, sh["file"])
            try:
                with open(f, "rb") as fh:
                    digest = hashlib.sha256(fh.read()).hexdigest()
            except OSError as exc:
                raise CheckpointError(f"{path}: shard {sh['file']} unreadable ({exc})") from None
            if digest != sh["sha256"]:
                raise CheckpointError(f"{path}: shard {sh['file']} sha256 {digest[:12]}… differs from the manifest's "
                                      f"{sh['sha256'][:12]}… (corrupt or partly written)")
        return manifest

    def load_checkpoint(self, path) -> None:
        """Load a pool checkpoint written by :meth:`save_checkpoint` for the same layout (n_workers,
        n_envs_per_worker, scene); every shard's sha256 is checked first. It becomes the base."""
        self._check_open()
        path = os.fspath(path)
        manifest = self.read_manifest(path)
        for key in ("n_workers", "n_envs_per_worker"):
            if manifest[key] != getattr(self, key):
                raise CheckpointError(f"{path}: written for {key} = {manifest[key]}, this pool has {getattr(self, key)} "
                                      f"(a pool checkpoint loads into the same layout)")
        shards = []
        for sh in manifest["shards"]:
            shards.append(np.fromfile(os.path.join(path, sh["file"]), dtype=np.uint8))
        refs = [self.workers[w].load.remote(self.ray.put(shards[w])) for w in range(self.n_workers)]
        results, lost = self._gather(refs, self.timeout_s, "load()")
        errs = [(w, r[1]) for w, r in enumerate(results) if r is not None and r[0] == "err"]
        if errs:
            # workers that loaded are now out of step with the base: restore them first
            self._rollback()
            raise_payload(errs[0][1], errs[0][0], self.info[errs[0][0]])
        self._base = shards
        self._log = []
        self.step_count = self._base_step = int(manifest["step"])
        self._base_gen = int(manifest["generation"])
        self._gen = max(self._gen, self._base_gen)
        if lost:
            self._recover(lost)
        self._event("checkpoint_loaded", generation=self._base_gen, path=path)

    # -- life -----------------------------------------------------------------------------------
    def worker_nodes(self) -> list:
        """The node id of each worker, in worker order."""
        return [inf.get("node_id") for inf in self.info]

    def close(self) -> None:
        """Kill the actors (the Ray connection stays)."""
        if self._closed:
            return
        self._closed = True
        for a in self.workers:
            if a is not None:
                try:
                    self.ray.kill(a, no_restart=True)
                except Exception:   # already dead
                    pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return (f"<ScenePool {self.n_workers} workers x {self.n_envs_per_worker} envs, step {self.step_count}, "
                f"{self.recoveries} recoveries>")


__all__ = ["ScenePool", "WorkerError", "WorkerLostError"]
