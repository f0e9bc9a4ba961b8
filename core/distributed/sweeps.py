"""Parameter sweeps and domain randomisation on a Ray cluster (docs/distributed.md).

``sweep(factory, params, metric, steps=...)`` runs one simulation per parameter set. Runs are
batched: each worker (a Ray actor) builds the scene once with ``envs_per_worker`` envs, and every
batch of runs restores the scene's state after build, sets each env's parameters (per-env setters:
friction, masses, sol_params, ...), steps and evaluates the metric. Envs do not interact, so a run's
result does not depend on its batch, its env slot or its worker; a batch lost with its worker is
simply run again (results equal a run without the failure, bit for bit on CPU).

Results come back as one table (``.npz`` and ``.csv``) with one row per run: its parameters, seed,
metric values and provenance (worker, node, host, pid, batch, env slot, polyphys and plugin
versions).
"""

from __future__ import annotations

import csv
import itertools
import json
import os
import sys
import time
from collections.abc import Callable

import attrs
import numpy as np

from ..errors import OptionError, WorkerLostError
from ._common import SceneFactory, connect, raise_payload

try:   # Python 3.11+
    import tomllib as _toml
except ModuleNotFoundError:   # pragma: no cover - Python 3.10
    import tomli as _toml


# -- parameter sets -------------------------------------------------------------------------------
def grid(**axes) -> dict:
    """The cartesian product of the axes: ``grid(a=[1, 2], b=[3, 4])`` → 4 runs, ``a`` slowest."""
    if not axes:
        raise OptionError("grid(): give at least one axis, e.g. grid(friction=[0.2, 0.4])")
    names = list(axes)
    vals = [np.asarray(axes[n]) for n in names]
    for n, v in zip(names, vals, strict=True):
        if v.ndim == 0 or len(v) == 0:
            raise OptionError(f"grid({n}=...): expected a non-empty sequence of values, got {axes[n]!r}")
    idx = np.array(list(itertools.product(*[range(len(v)) for v in vals])), dtype=np.int64)
    return {n: v[idx[:, i]] for i, (n, v) in enumerate(zip(names, vals, strict=True))}


def zipped(**columns) -> dict:
    """Runs given column by column (equal lengths): ``zipped(a=[1, 2], b=[3, 4])`` → 2 runs."""
    cols = {n: np.asarray(v) for n, v in columns.items()}
    lens = {n: (len(v) if v.ndim else -1) for n, v in cols.items()}
    if not cols or len(set(lens.values())) != 1 or -1 in lens.values():
        raise OptionError(f"zipped(...): every column needs the same number of runs; got lengths {lens}")
    return cols


def _normalize_params(params) -> dict:
    if isinstance(params, dict):
        return zipped(**params)
    if isinstance(params, (list, tuple)) and params and all(isinstance(p, dict) for p in params):
        keys = list(params[0])
        for i, p in enumerate(params):
            if list(p) != keys:
                raise OptionError(f"params[{i}] has keys {sorted(p)}, params[0] has {sorted(keys)}: every run "
                                  f"names the same parameters")
        return {k: np.asarray([p[k] for p in params]) for k in keys}
    raise OptionError(f"params = {params!r}: a dict of equal-length columns (see grid() and zipped()) or a list of "
                      f"dicts, one per run")


# -- the result table -------------------------------------------------------------------------------
@attrs.define
class SweepResult:
    """One row per run. ``table``: column name → array (n_runs, ...): ``run``, ``seed``,
    ``param/<name>``, ``metric/<name>``, ``worker``, ``node_id``, ``host``, ``pid``, ``batch``,
    ``env``, ``seconds`` (the batch's wall time), ``polyphys``, ``versions`` (JSON: Warp, NumPy,
    Ray, every plugin distribution). ``files``: what was written."""

    table: dict
    files: dict = attrs.field(factory=dict)
    summary: dict = attrs.field(factory=dict)

    @property
    def n_runs(self) -> int:
        return len(self.table["run"])

    def params(self, name: str) -> np.ndarray:
        return self.table[f"param/{name}"]

    def metric(self, name: str) -> np.ndarray:
        return self.table[f"metric/{name}"]

    def row(self, i: int) -> dict:
        """Run ``i`` as a dict (everything needed to trace it back to its parameters)."""
        return {k: (v[i].tolist() if isinstance(v[i], np.ndarray) else v[i].item() if hasattr(v[i], "item") else v[i])
                for k, v in self.table.items()}

    @staticmethod
    def load(path) -> SweepResult:
        """Read a ``results.npz`` written by :func:`sweep`."""
        with np.load(os.fspath(path), allow_pickle=False) as z:
            return SweepResult(table={k: z[k] for k in z.files})


def _csv_columns(table: dict) -> list[tuple[str, np.ndarray]]:
    out = []
    for k, v in table.items():
        if v.ndim <= 1:
            out.append((k, v))
        else:
            flat = v.reshape(len(v), -1)
            shape = v.shape[1:]
            for j in range(flat.shape[1]):
                idx = np.unravel_index(j, shape)
                out.append((f"{k}[{','.join(str(i) for i in idx)}]", flat[:, j]))
    return out


def write_table(table: dict, out_dir: str) -> dict:
    os.makedirs(out_dir, exist_ok=True)
    files = {"npz": os.path.join(out_dir, "results.npz"), "csv": os.path.join(out_dir, "results.csv")}
    np.savez(files["npz"], **table)
    cols = _csv_columns(table)
    with open(files["csv"], "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow([c for c, _ in cols])
        for i in range(len(table["run"])):
            w.writerow([(repr(float(v[i])) if np.issubdtype(v.dtype, np.floating) else
                         v[i].item() if hasattr(v[i], "item") else v[i]) for _, v in cols])
    return files


def write_plot(result: SweepResult, path: str, x: str | None = None, y: list | None = None,
               title: str = "") -> str | None:
    """Each scalar metric column against a parameter (the first, or ``x``). None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    cols = dict(_csv_columns(result.table))
    pcols = [c for c in cols if c.startswith("param/")]
    if not pcols:
        return None

    def column(name: str, prefix: str) -> str:
        key = name if name.startswith(prefix) else prefix + name
        if key not in cols and f"{key}[0]" in cols and f"{key}[1]" not in cols:
            key = f"{key}[0]"                     # a one-element value, e.g. friction of shape (1,)
        if key not in cols:
            raise OptionError(f"plot {'x' if prefix == 'param/' else 'y'} = {name!r}: not a column; columns: "
                              f"{[c[len(prefix):] for c in cols if c.startswith(prefix)]}")
        return key

    xk = column(x, "param/") if x is not None else pcols[0]
    if y:
        ys = [column(c, "metric/") for c in y]
    else:
        ys = [c for c in cols if c.startswith("metric/")
              and np.issubdtype(cols[c].dtype, np.number) and np.ptp(cols[c].astype(float)) > 0][:6]
    if not ys:
        return None
    n = len(ys)
    ncol = min(n, 3)
    nrow = (n + ncol - 1) // ncol
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.6 * ncol, 3.4 * nrow), squeeze=False)
    xs = cols[xk].astype(float)
    order = np.argsort(xs, kind="stable")
    for ax, c in zip(axes.flat, ys, strict=False):
        ax.plot(xs[order], cols[c].astype(float)[order], "o-", ms=3, lw=1)
        ax.set_xlabel(xk[6:].removesuffix("[0]"))
        ax.set_ylabel(c[7:])
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.suptitle(title or f"sweep: {result.n_runs} runs")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


# -- the sweep ------------------------------------------------------------------------------------
def sweep(factory, params, metric, *, steps: int, apply: Callable | None = None, seed: int = 0,
          seeds=None, envs_per_worker: int = 16, n_workers: int | None = None, resources: dict | None = None,
          address: str | None = None, out_dir=None, timeout_s: float = 1800.0, max_in_flight: int = 2,
          max_recoveries: int = 8, runtime_env: dict | None = None, progress: Callable | None = None,
          plot: bool = True, plot_x: str | None = None, plot_y: list | None = None,
          factory_kwargs: dict | None = None) -> SweepResult:
    """Run one simulation per parameter set across the cluster; gather one table.

    :param factory: as :class:`~polyphys.distributed.ScenePool`'s: ``factory(n_envs=N)`` returning a
        built Scene, or a scene ``.toml`` path.
    :param params: ``{name: values}`` with one row of values per run (``grid(...)``,
        ``zipped(...)``), or a list of dicts. A name ``"entity/set_..."`` is an entity setter called
        with the batch's values, batch-first — shape ``(batch, *value_shape)``, so a scalar per
        run gives ``(batch,)`` and ``set_friction`` on an entity with one geom wants values of
        shape ``(n_runs, 1)``. Other names go to ``apply``.
    :param metric: names as :meth:`ScenePool.observe` (``"box/get_pos"``, ``"sensors/..."``,
        ``"time"``), or a function ``metric(scene) -> {name: batch-first array}``, evaluated after
        ``steps`` steps.
    :param apply: ``apply(scene, params, seeds)`` sets the parameters that are not setters (each a
        batch-first array) for every env of the batch; it must set every value it changes, for
        every env, on every call (batches reuse the scene).
    :param seed: run ``i``'s seed is ``seed + i`` (or ``seeds[i]``), recorded and passed to ``apply``.
    :param envs_per_worker: runs per batch (the envs of each worker's scene); the last batch is
        padded with copies of its last run, which are dropped.
    :param n_workers: actors (default: the cluster's CPUs / num_cpus per actor, at most the
        number of batches).
    :param max_in_flight: batches queued on one worker at a time (backpressure: the driver holds
        no more than ``n_workers × max_in_flight`` pending results).
    :param timeout_s: a batch not done within this time counts its worker as lost.
    :param out_dir: write ``results.npz``, ``results.csv``, ``summary.json`` and ``plot.png`` there.
    :param progress: ``progress(runs_done, n_runs, batch)`` after each batch; ``batch`` says which
        batch finished and where (``{"batch", "worker", "node_id", "host"}``).
    """
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
        raise OptionError(f"sweep(steps={steps!r}): must be an integer >= 0")
    for key, val, lo in (("envs_per_worker", envs_per_worker, 1), ("max_in_flight", max_in_flight, 1),
                         ("max_recoveries", max_recoveries, 0)):
        if isinstance(val, bool) or not isinstance(val, (int, np.integer)) or val < lo:
            raise OptionError(f"sweep({key}={val!r}): must be an integer >= {lo}")
    if not (callable(metric) or (isinstance(metric, (list, tuple)) and metric and all(isinstance(m, str) for m in metric))):
        raise OptionError(f"sweep(metric={metric!r}): a list of observation names or a function metric(scene)")
    cols = _normalize_params(params)
    n_runs = len(next(iter(cols.values())))
    if seeds is None:
        run_seeds = seed + np.arange(n_runs, dtype=np.int64)
    else:
        run_seeds = np.asarray(seeds, dtype=np.int64)
        if run_seeds.shape != (n_runs,):
            raise OptionError(f"sweep(seeds of shape {run_seeds.shape}): expected one seed per run ({n_runs},)")
    fac = SceneFactory.of(factory, factory_kwargs)
    fac.check_picklable()
    ray = connect(address)
    for what, obj in (("apply", apply), ("metric", metric if callable(metric) else None)):
        if obj is not None:
            try:
                ray.cloudpickle.dumps(obj)
            except Exception as exc:
                raise OptionError(f"sweep({what}={obj!r}): cannot be pickled for the workers ({type(exc).__name__}: "
                                  f"{exc})") from None
    resources = dict({"num_cpus": 1} if resources is None else resources)
    B = int(envs_per_worker)
    n_batches = (n_runs + B - 1) // B
    if n_workers is None:
        cpus = ray.cluster_resources().get("CPU", 1.0)
        n_workers = max(1, int(cpus // max(float(resources.get("num_cpus", 1) or 1), 1e-9)))
    n_workers = max(1, min(int(n_workers), n_batches))
    batches = []
    for b in range(n_batches):
        idx = np.arange(b * B, min((b + 1) * B, n_runs))
        pad = np.concatenate([idx, np.full(B - len(idx), idx[-1])]) if len(idx) < B else idx
        batches.append((idx, pad))

    from .worker import SceneWorker

    actor_cls = ray.remote(SceneWorker)
    opts = {**resources, "max_restarts": 0, "scheduling_strategy": "SPREAD"}
    if runtime_env is not None:
        opts["runtime_env"] = runtime_env
    lost_types = tuple(getattr(ray.exceptions, n) for n in ("RayActorError", "ObjectLostError", "WorkerCrashedError",
                                                            "NodeDiedError", "ActorUnavailableError")
                       if hasattr(ray.exceptions, n))
    t_start = time.perf_counter()
    actors: dict[int, object] = {}
    infos: dict[int, dict] = {}
    builds: dict = {}
    for w in range(n_workers):
        actors[w] = actor_cls.options(**opts).remote(fac, B, w, None)
        builds[actors[w].build.remote()] = w
    queue = list(range(n_batches))
    inflight: dict = {}                       # ref -> (worker, batch, submitted)
    per_worker: dict[int, int] = {w: 0 for w in range(n_workers)}
    results: dict[int, dict] = {}
    recoveries = 0
    events: list[dict] = []
    metric_arg = list(metric) if not callable(metric) else metric

    def submit(w: int) -> None:
        while queue and per_worker[w] < max_in_flight and w in infos:
            b = queue.pop(0)
            idx, pad = batches[b]
            p = {k: v[pad] for k, v in cols.items()}
            ref = actors[w].run_batch.remote(p, run_seeds[pad], int(steps), apply, metric_arg)
            inflight[ref] = (w, b, time.monotonic())
            per_worker[w] += 1

    def lose(w: int, why: str) -> None:
        nonlocal recoveries
        recoveries += 1
        events.append({"event": "worker_lost", "worker": w, "node_id": infos.get(w, {}).get("node_id"),
                       "reason": why, "time": time.time()})
        if recoveries > max_recoveries:
            raise WorkerLostError(f"sweep: worker {w} lost ({why}) after {recoveries - 1} recoveries: more than "
                                  f"max_recoveries={max_recoveries}")
        for ref, (ww, b, _) in list(inflight.items()):
            if ww == w:
                del inflight[ref]
                queue.insert(0, b)
        per_worker[w] = 0
        try:
            ray.kill(actors[w], no_restart=True)
        except Exception:   # already gone
            pass
        infos.pop(w, None)
        actors[w] = actor_cls.options(**opts).remote(fac, B, w, None)
        builds[actors[w].build.remote()] = w

    done_runs = 0
    try:
        while len(results) < n_batches:
            waiting = list(builds) + list(inflight)
            ready, _ = ray.wait(waiting, num_returns=1, timeout=5.0)
            now = time.monotonic()
            for ref in ready:
                if ref in builds:
                    w = builds.pop(ref)
                    try:
                        r = ray.get(ref)
                    except lost_types as exc:
                        lose(w, f"{type(exc).__name__} while building")
                        continue
                    if r[0] == "err":
                        raise_payload(r[1], w, None)
                    infos[w] = r[1]
                    submit(w)
                    continue
                w, b, _ = inflight.pop(ref)
                per_worker[w] -= 1
                try:
                    r = ray.get(ref)
                except lost_types as exc:
                    per_worker[w] += 1
                    inflight[ref] = (w, b, 0)   # requeued by lose() with the others of this worker
                    lose(w, f"{type(exc).__name__}")
                    continue
                if r[0] == "err":
                    raise_payload(r[1], w, infos.get(w))
                results[b] = r[1]
                done_runs += len(batches[b][0])
                if progress is not None:
                    progress(done_runs, n_runs, {"batch": b, "worker": w, "node_id": r[1]["node_id"],
                                                 "host": r[1]["host"]})
                submit(w)
            for ref, (w, b, t0) in list(inflight.items()):
                if t0 and now - t0 > timeout_s and ref in inflight:
                    lose(w, f"batch {b} not done within {timeout_s:g} s (timeout_s)")
            for w in range(n_workers):
                submit(w)
    finally:
        for a in actors.values():
            try:
                ray.kill(a, no_restart=True)
            except Exception:   # already gone
                pass
    wall = time.perf_counter() - t_start

    # -- the table, in run order ----------------------------------------------------------------
    table: dict[str, np.ndarray] = {"run": np.arange(n_runs, dtype=np.int64), "seed": run_seeds}
    for k, v in cols.items():
        table[f"param/{k}"] = v
    first = results[0]["metric"]
    for k in first:
        parts = [np.asarray(results[b]["metric"][k])[: len(batches[b][0])] for b in range(n_batches)]
        table[f"metric/{k}"] = np.concatenate(parts)
    prov = {"worker": [], "node_id": [], "host": [], "pid": [], "batch": [], "env": [], "seconds": []}
    for b in range(n_batches):
        r = results[b]
        n = len(batches[b][0])
        prov["worker"] += [r["worker"]] * n
        prov["node_id"] += [str(r["node_id"])] * n
        prov["host"] += [str(r["host"])] * n
        prov["pid"] += [r["pid"]] * n
        prov["batch"] += [b] * n
        prov["env"] += list(range(n))
        prov["seconds"] += [r["seconds"]] * n
    table["worker"] = np.asarray(prov["worker"], dtype=np.int64)
    table["node_id"] = np.asarray(prov["node_id"], dtype=str)
    table["host"] = np.asarray(prov["host"], dtype=str)
    table["pid"] = np.asarray(prov["pid"], dtype=np.int64)
    table["batch"] = np.asarray(prov["batch"], dtype=np.int64)
    table["env"] = np.asarray(prov["env"], dtype=np.int64)
    table["seconds"] = np.asarray(prov["seconds"], dtype=float)
    vers = {w: infos.get(w, {}).get("versions") for w in range(n_workers)}
    any_vers = next((v for v in vers.values() if v), {}) or {}
    table["polyphys"] = np.asarray([str(any_vers.get("polyphys"))] * n_runs, dtype=str)
    table["versions"] = np.asarray([json.dumps(vers.get(int(w)) or any_vers, sort_keys=True)
                                    for w in table["worker"]], dtype=str)
    summary = {"factory": fac.describe(), "n_runs": n_runs, "steps": int(steps), "envs_per_worker": B,
               "n_workers": n_workers, "batches": n_batches, "wall_s": wall,
               "runs_per_s": n_runs / wall if wall > 0 else None, "recoveries": recoveries, "events": events,
               "params": sorted(cols), "metric": sorted(first), "versions": any_vers}
    result = SweepResult(table=table, summary=summary)
    if out_dir is not None:
        out_dir = os.fspath(out_dir)
        result.files.update(write_table(table, out_dir))
        spath = os.path.join(out_dir, "summary.json")
        with open(spath, "w") as fh:
            json.dump(summary, fh, indent=2, default=str)
        result.files["summary"] = spath
        if plot:
            p = write_plot(result, os.path.join(out_dir, "plot.png"), plot_x, plot_y, title=fac.describe())
            if p is not None:
                result.files["plot"] = p
    return result


# -- sweep files (``polyphys sweep SWEEP.toml``) -------------------------------------------------------
SWEEP_KEYS = ("scene", "steps", "metric", "seed", "combine", "out", "envs_per_worker", "workers", "num_cpus",
              "timeout_s", "max_in_flight", "max_recoveries")
PARAM_KEYS = ("values", "linspace", "logspace", "uniform", "n", "shape")
PLOT_KEYS = ("x", "y")


@attrs.define
class SweepPlan:
    source: str
    scene: str
    steps: int
    metric: list
    params: dict
    seed: int
    out: str | None
    envs_per_worker: int
    workers: int | None
    num_cpus: float
    timeout_s: float
    max_in_flight: int
    max_recoveries: int
    plot_x: str | None = None
    plot_y: list | None = None


def _perr(source, key, value, allowed):
    from ..run import SceneFileError

    return SceneFileError(f"{source}: {key} = {value!r}: {allowed}")


def _param_values(source: str, name: str, spec, seed: int, idx: int) -> np.ndarray:
    key = f"params.{name!r}"
    if isinstance(spec, list):
        spec = {"values": spec}
    if not isinstance(spec, dict):
        raise _perr(source, key, spec, "a list of values or a table {values | linspace | logspace | uniform, n, shape}")
    bad = sorted(set(spec) - set(PARAM_KEYS))
    if bad:
        raise _perr(source, f"{key}.{bad[0]}", spec[bad[0]], f"unknown key; allowed keys: {list(PARAM_KEYS)}")
    kinds = [k for k in ("values", "linspace", "logspace", "uniform") if k in spec]
    if len(kinds) != 1:
        raise _perr(source, key, spec, "give exactly one of values, linspace = [lo, hi, n], logspace = [lo, hi, n], "
                                       "uniform = [lo, hi] (with n)")
    kind = kinds[0]
    try:
        if kind == "values":
            v = np.asarray(spec["values"], dtype=float)
            if v.ndim == 0 or len(v) == 0:
                raise ValueError("empty")
        elif kind in ("linspace", "logspace"):
            lo, hi, n = spec[kind]
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise ValueError("n must be an integer >= 1")
            v = (np.linspace if kind == "linspace" else np.logspace)(float(lo), float(hi), n)
        else:
            lo, hi = spec["uniform"]
            n = spec.get("n")
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise _perr(source, f"{key}.n", n, "uniform needs n, an integer >= 1 (the number of draws)")
            # one stream per parameter: its position in the file, from the sweep seed
            v = np.random.default_rng([seed, idx]).uniform(float(lo), float(hi), n)
    except (TypeError, ValueError) as exc:
        raise _perr(source, f"{key}.{kind}", spec[kind], f"not usable ({exc})") from None
    if "shape" in spec:
        shape = spec["shape"]
        if not isinstance(shape, list) or not all(isinstance(s, int) and s >= 1 for s in shape):
            raise _perr(source, f"{key}.shape", shape, "a list of positive integers (each run's value shape)")
        per = int(np.prod(shape))
        if v.ndim == 1 and per == 1:
            v = v.reshape((len(v), *shape))
        elif v.ndim >= 1 and int(np.prod(v.shape[1:])) == per:
            v = v.reshape((len(v), *shape))
        else:
            raise _perr(source, f"{key}.shape", shape, f"does not fit values of shape {v.shape}")
    return v


def load_sweep_file(path) -> SweepPlan:
    """Read and validate a sweep file (format: docs/distributed.md); builds nothing."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            data = _toml.load(fh)
    except FileNotFoundError:
        raise _perr(path, "file", path, f"no such sweep file (looked at {os.path.abspath(path)})") from None
    except _toml.TOMLDecodeError as exc:
        raise _perr(path, "file", path, f"not valid TOML: {exc}") from None
    for k in data:
        if k not in ("sweep", "params", "plot"):
            raise _perr(path, k, data[k], "unknown table; allowed: [sweep], [params], [plot]")
    sw = data.get("sweep")
    if not isinstance(sw, dict):
        raise _perr(path, "sweep", sw, "a [sweep] table is required (scene, steps, metric, ...)")
    for k in sw:
        if k not in SWEEP_KEYS:
            raise _perr(path, f"sweep.{k}", sw[k], f"unknown key; allowed keys: {list(SWEEP_KEYS)}")
    base = os.path.dirname(os.path.abspath(path))
    scene = sw.get("scene")
    if not isinstance(scene, str) or not scene.endswith(".toml"):
        raise _perr(path, "sweep.scene", scene, "the scene file (.toml, relative to this file)")
    scene = os.path.normpath(os.path.join(base, scene))
    if not os.path.isfile(scene):
        raise _perr(path, "sweep.scene", sw["scene"], f"no such scene file (looked at {scene})")

    def integer(key, default, lo, none_ok=False):
        v = sw.get(key, default)
        if v is None and none_ok:
            return None
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise _perr(path, f"sweep.{key}", v, f"must be an integer >= {lo}")
        return v

    def number(key, default):
        v = sw.get(key, default)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
            raise _perr(path, f"sweep.{key}", v, "must be a number > 0")
        return float(v)

    if "steps" not in sw:
        raise _perr(path, "sweep.steps", None, "required: the number of steps of each run")
    steps = integer("steps", None, 0)
    metric = sw.get("metric")
    if isinstance(metric, str):
        metric = [metric]
    if not isinstance(metric, list) or not metric or not all(isinstance(m, str) for m in metric):
        raise _perr(path, "sweep.metric", metric, "a list of observation names, e.g. [\"box/get_pos\"]")
    seed = integer("seed", 0, 0)
    combine = sw.get("combine", "grid")
    if combine not in ("grid", "zip"):
        raise _perr(path, "sweep.combine", combine, "allowed: 'grid' (cartesian product) or 'zip' (equal lengths)")
    ptab = data.get("params")
    if not isinstance(ptab, dict) or not ptab:
        raise _perr(path, "params", ptab, "a [params] table naming at least one parameter")
    vals = {name: _param_values(path, name, spec, seed, i) for i, (name, spec) in enumerate(ptab.items())}
    if combine == "zip":
        lens = {n: len(v) for n, v in vals.items()}
        if len(set(lens.values())) != 1:
            raise _perr(path, "sweep.combine", "zip", f"zip needs equal lengths; got {lens}")
        params = vals
    elif len(vals) == 1:
        params = vals
    else:
        idx = np.array(list(itertools.product(*[range(len(v)) for v in vals.values()])), dtype=np.int64)
        params = {n: v[idx[:, i]] for i, (n, v) in enumerate(vals.items())}
    out = sw.get("out")
    if out is not None and not isinstance(out, str):
        raise _perr(path, "sweep.out", out, "a folder path")
    plot = data.get("plot", {})
    if not isinstance(plot, dict) or set(plot) - set(PLOT_KEYS):
        raise _perr(path, "plot", plot, f"a table with keys {list(PLOT_KEYS)}")
    py = plot.get("y")
    if isinstance(py, str):
        py = [py]
    return SweepPlan(source=path, scene=scene, steps=steps, metric=metric, params=params, seed=seed,
                     out=(os.path.normpath(os.path.join(base, out)) if out and not os.path.isabs(out) else out),
                     envs_per_worker=integer("envs_per_worker", 16, 1), workers=integer("workers", None, 1, True),
                     num_cpus=number("num_cpus", 1.0), timeout_s=number("timeout_s", 1800.0),
                     max_in_flight=integer("max_in_flight", 2, 1), max_recoveries=integer("max_recoveries", 8, 0),
                     plot_x=plot.get("x"), plot_y=py)


def run_sweep_file(path, *, address: str | None = None, out_dir=None, workers: int | None = None,
                   progress: bool | None = None, plot: bool = True, runtime_env: dict | None = None) -> SweepResult:
    """``polyphys sweep``: read a sweep file and run it (a progress bar on a terminal)."""
    from ..run import Progress

    plan = load_sweep_file(path)
    n_runs = len(next(iter(plan.params.values())))
    if progress is None:
        progress = sys.stderr.isatty()
    bar = Progress(n_runs, progress, label="runs")
    out = out_dir if out_dir is not None else (plan.out or os.path.join(
        "results", os.path.splitext(os.path.basename(plan.source))[0]))
    return sweep(plan.scene, plan.params, plan.metric, steps=plan.steps, seed=plan.seed,
                 envs_per_worker=plan.envs_per_worker, n_workers=workers or plan.workers,
                 resources={"num_cpus": plan.num_cpus}, address=address, out_dir=out, timeout_s=plan.timeout_s,
                 max_in_flight=plan.max_in_flight, max_recoveries=plan.max_recoveries, runtime_env=runtime_env,
                 progress=lambda done, total, batch: bar.update(done), plot=plot, plot_x=plan.plot_x,
                 plot_y=plan.plot_y)
