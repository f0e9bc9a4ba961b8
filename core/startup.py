"""First use of Warp: a quiet start, kernel modules compiled in parallel with one notice per plugin,
and ahead-of-time warm-up (``polyphys warmup``). docs/running.md, "First run and the kernel cache".

Verbosity (``polyphys.set_verbosity``, ``POLYPHYS_VERBOSITY``, ``polyphys run --verbose``):

- ``"quiet"`` (0): nothing on stderr from polyphys or Warp but warnings and errors;
- ``"normal"`` (1, the default): one line per plugin whose kernels compile ("compiling rigid kernels for
  cpu, first run only…") and, on a terminal, a progress bar; Warp's start-up banner, its
  ``Module ... took N ms`` lines and the CUDA-driver warning printed by Warp's native library when no
  GPU driver exists are hidden;
- ``"verbose"`` (2): Warp's own messages as well.

Warp compiles a *module* (every kernel of one Python file) on its first launch, one after another.
Before a scene is built, the core asks every solver, coupler and sensor for the Warp modules it will
launch in this scene (``kernel_modules(layout)``; they declare generic overloads for the scene's
precision there) and compiles the ones missing from the kernel cache in parallel on the available
cores (Warp generates the C++ of one module at a time, under its code-generation lock, and the
native compile — most of the time — runs without the GIL). A module with a generic kernel that has no
overload yet is left to load at its first launch (compiling it now would compile it twice).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import threading
import time
import types
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import attrs

from .errors import OptionError

VERBOSITY = {"quiet": 0, "normal": 1, "verbose": 2}
_state = {"level": None}
_init_lock = threading.Lock()
_native_init_output = {"text": ""}     # what Warp's native library printed while it initialised


def _level_from(value: Any, what: str) -> int:
    if isinstance(value, str) and value.strip().lower() in VERBOSITY:
        return VERBOSITY[value.strip().lower()]
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, int) and not isinstance(value, bool) and value in VERBOSITY.values():
        return value
    raise OptionError(f"{what} = {value!r}: allowed {list(VERBOSITY)} or {sorted(VERBOSITY.values())}")


def get_verbosity() -> int:
    """The current verbosity: 0 quiet, 1 normal (default), 2 verbose."""
    if _state["level"] is None:
        env = os.environ.get("POLYPHYS_VERBOSITY", "").strip()
        _state["level"] = _level_from(env, "POLYPHYS_VERBOSITY") if env else 1
    return _state["level"]


def set_verbosity(level: str | int) -> None:
    """``"quiet"``/0, ``"normal"``/1 (default) or ``"verbose"``/2: what polyphys and Warp print while
    a scene is built and its kernels compile (module docstring)."""
    _state["level"] = _level_from(level, "set_verbosity(level)")
    wp = sys.modules.get("warp")
    if wp is not None:
        _apply_log_level(wp)


def notice(message: str) -> None:
    """One line on stderr at normal verbosity and above."""
    if get_verbosity() >= 1:
        sys.stderr.write(message + "\n")
        sys.stderr.flush()


def _apply_log_level(wp) -> None:
    info, warning = getattr(wp, "LOG_INFO", 20), getattr(wp, "LOG_WARNING", 30)
    wp.config.log_level = info if get_verbosity() >= 2 else warning


def _warp_initialized(wp) -> bool:
    ctx = getattr(getattr(wp, "_src", None), "context", None)
    return getattr(ctx, "runtime", None) is not None


@contextlib.contextmanager
def _native_stderr_captured():
    """Route file descriptor 2 to a temporary file (what a C library prints there) and yield a
    function returning what was captured."""
    captured = {"text": ""}
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):   # no usable fd 2 (embedded interpreters)
        yield lambda: captured["text"]
        return
    with tempfile.TemporaryFile() as tmp:
        try:
            os.dup2(tmp.fileno(), 2)
            yield lambda: captured["text"]
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            captured["text"] = tmp.read().decode("utf-8", "replace")


def init_warp():
    """Import and initialise Warp with polyphys's verbosity applied; returns the ``warp`` module.

    Every polyphys path that issues Warp work calls this first (``Scene`` does on ``add_entity``,
    ``add_sensor`` and ``build``), so Warp's banner and the native CUDA-driver warning stay hidden
    unless the verbosity is ``"verbose"``. What Warp's native library printed is kept in
    ``native_init_output()``."""
    import warp as wp

    _apply_log_level(wp)
    if _warp_initialized(wp):
        return wp
    with _init_lock:
        if _warp_initialized(wp):
            return wp
        if get_verbosity() >= 2:
            wp.init()
            return wp
        with _native_stderr_captured() as text:
            wp.init()
        _native_init_output["text"] = text()
    return wp


def native_init_output() -> str:
    """What Warp's native library printed on stderr while polyphys initialised it quietly."""
    return _native_init_output["text"]


# -- kernel modules -----------------------------------------------------------------------------------
def warp_module(module) -> Any:
    """The Warp module (``warp.Module``) of a Python module, a module name or a Warp module."""
    import warp as wp

    if isinstance(module, types.ModuleType):
        return wp.get_module(module.__name__)
    if isinstance(module, str):
        return wp.get_module(module)
    if hasattr(module, "kernels") and hasattr(module, "load"):
        return module
    raise OptionError(f"kernel_modules(): {module!r} is not a Python module, a module name or a warp Module")


def package_kernel_modules(obj) -> list:
    """The Warp modules with kernels imported so far from the package that holds ``obj``'s class
    (``polyphys.plugins.mpm.solver.MPMSolver`` -> every ``polyphys.plugins.mpm.*`` module).

    A plugin whose package imports kernel modules it does not launch in every scene should return
    its own list from ``kernel_modules(layout)`` instead (the core compiles what it is given)."""
    import warp._src.context as ctx

    package = package_of(obj)
    return [m for key, m in sorted(ctx.user_modules.items())
            if (key == package or key.startswith(package + ".")) and m.kernels]


@attrs.define
class ModuleLoad:
    """One module of a scene: who asked for it, and what loading it took."""

    name: str
    owner: str
    status: str             # "compiled", "cached", "loaded" (already in this process), "lazy" (left to first launch)
    seconds: float = 0.0
    note: str = ""
    hash: str = ""          # the module's hash when it was loaded (a later launch that adds an overload changes it)


def _unresolved_generic(m) -> list[str]:
    return sorted(k.key for k in list(m.kernels.values()) if getattr(k, "is_generic", False) and not k.overloads)


def _block_dim(m, device) -> int:
    return 1 if device.is_cpu else int(m.options.get("block_dim", 256))


def _loaded(m, device, block_dim) -> bool:
    ex = m.execs.get((None if device.is_cpu else device.context, block_dim))
    if ex is None:
        return False
    try:
        return ex.module_hash == m.get_module_hash(block_dim)
    except Exception:
        return False


def _cached(m, device, block_dim) -> bool | None:
    """Whether the module's binary for ``device`` is in the kernel cache (None: cannot tell)."""
    import warp as wp

    try:
        folder = os.path.join(wp.config.kernel_cache_dir, m.get_module_identifier(block_dim))
        binary = os.path.join(folder, m._get_compile_output_name(device, block_dim=block_dim))
        meta = os.path.join(folder, m._get_meta_name(block_dim=block_dim))
    except Exception:
        return None
    return os.path.exists(binary) and os.path.exists(meta)


def _package_in_cache(package: str) -> bool:
    """Whether the kernel cache holds any module of ``package`` (Warp names its folders
    ``wp_<module name>_<hash>``): False on a plugin's first run with this cache."""
    import warp as wp

    try:
        names = os.listdir(wp.config.kernel_cache_dir)
    except (OSError, TypeError):
        return True
    return any(n.startswith(f"wp_{package}.") or n.startswith(f"wp_{package}_") for n in names)


def package_of(obj) -> str:
    """The package holding ``obj``'s class (``polyphys.plugins.rigid`` for the rigid solver)."""
    cls = obj if isinstance(obj, type) else type(obj)
    name = cls.__module__
    mod = sys.modules.get(name)
    return name if getattr(mod, "__path__", None) is not None else name.rpartition(".")[0] or name


def _cost(m) -> int:
    """A rough size of a module (kernels and overloads) to start the largest compiles first."""
    return sum(max(1, len(k.overloads)) for k in list(m.kernels.values()))


class _Bar:
    """A one-line progress bar on a terminal (stderr); nothing elsewhere."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.enabled, self.done = total, enabled, 0
        self.t0 = time.perf_counter()
        self._lock = threading.Lock()
        self._draw()

    def _draw(self, final: bool = False) -> None:
        if not self.enabled:
            return
        width = 30
        n = int(width * self.done / max(1, self.total))
        el = time.perf_counter() - self.t0
        line = f"\r  [{'#' * n}{'-' * (width - n)}] {self.done}/{self.total} kernel modules  {el:5.1f}s"
        sys.stderr.write(line + ("\n" if final else ""))
        sys.stderr.flush()

    def step(self) -> None:
        with self._lock:
            self.done += 1
            self._draw(final=self.done >= self.total)


def _default_workers() -> int:
    """``POLYPHYS_COMPILE_WORKERS`` when set, else the cores this process may use."""
    env = os.environ.get("POLYPHYS_COMPILE_WORKERS", "").strip()
    if env:
        if not env.isdigit() or int(env) < 1:
            raise OptionError(f"POLYPHYS_COMPILE_WORKERS = {env!r}: must be an integer >= 1")
        return int(env)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def load_kernel_modules(groups: list, device=None, *, workers: int | None = None,
                        progress: bool | None = None) -> list[ModuleLoad]:
    """Load the Warp modules of ``groups`` on ``device``, compiling the ones missing from the kernel
    cache in parallel (``workers`` threads, default the cores available).

    ``groups`` is ``[(owner label, modules, package), ...]``; ``modules`` None means the owner did not
    declare its modules: nothing of it is loaded now (its modules load at their first launch), and its
    notice is printed when the kernel cache holds no module of its package yet (its first run).
    Before compiling, one notice per owner with something to compile is printed ("compiling rigid
    kernels for cpu, first run only…"), and on a terminal a progress bar. A module listed by two
    owners is loaded once (for the first). Returns one record per module."""
    wp = init_warp()
    device = wp.get_device(device)
    seen: dict[str, ModuleLoad] = {}
    todo: list[tuple[Any, ModuleLoad]] = []
    owners: list[str] = []
    for owner, mods, *rest in groups:
        if mods is None:      # undeclared: lazy; a notice on a first run
            package = rest[0] if rest else None
            if package and not _package_in_cache(package) and owner not in owners:
                owners.append(owner)
            continue
        for mod in mods:
            m = warp_module(mod)
            if m.name in seen or not m.kernels:
                continue
            rec = ModuleLoad(m.name, owner, "")
            seen[m.name] = rec
            generic = _unresolved_generic(m)
            if generic:
                rec.status, rec.note = "lazy", f"generic kernels without an overload yet: {generic}"
                continue
            bd = _block_dim(m, device)
            rec.hash = m.get_module_hash(bd).hex()
            if _loaded(m, device, bd):
                rec.status = "loaded"
                continue
            rec.status = "cached" if _cached(m, device, bd) else "compiled"
            todo.append((m, rec))
            if rec.status == "compiled" and owner not in owners:
                owners.append(owner)
    for owner in owners:
        notice(f"compiling {owner} kernels for {device.alias}, first run only…")
    to_compile = sum(1 for _, r in todo if r.status == "compiled")
    if progress is None:
        progress = get_verbosity() >= 1 and sys.stderr.isatty()
    bar = _Bar(to_compile, bool(progress) and to_compile > 0)

    def load(item):
        m, rec = item
        t0 = time.perf_counter()
        wp.force_load(device=device, modules=[m], max_workers=0)
        rec.seconds = time.perf_counter() - t0
        if rec.status == "compiled":
            bar.step()
        return rec

    todo.sort(key=lambda it: (it[1].status != "compiled", -_cost(it[0])))
    n = min(len(todo), workers or _default_workers())
    # The calling thread is one of the workers: the modules an owner left undeclared compile later on
    # this thread, with the precompiled headers it holds by then (_HeaderPool).
    headers = _HeaderPool(wp, device)
    queue = list(todo)
    cond = threading.Condition()
    errors: list = []

    def pick():
        """The next item for this thread (removed from the queue), or None to wait: the largest module
        whose precompiled header exists; else the smallest of a header no thread builds yet (it builds
        it and the others get it soon); else wait for a header another thread is building."""
        ready = [it for it in queue if it[1].status != "compiled" or headers.ready(it[0])]
        if ready:
            item = ready[0]
        else:
            fresh = [it for it in queue if not headers.building(it[0])]
            if not fresh:
                return None
            key = headers.key(fresh[0][0])
            item = [it for it in fresh if headers.key(it[0]) == key][-1]
            headers.start(item[0])
        queue.remove(item)
        return item

    def drain():
        while True:
            with cond:
                item = None
                while item is None:
                    if not queue or errors:
                        return
                    item = pick()
                    if item is None:
                        cond.wait(0.5)
            try:
                headers.fetch()
                load(item)
                headers.publish(item[0])
            except BaseException as exc:     # reported after every worker stopped
                with cond:
                    errors.append(exc)
                    cond.notify_all()
                return
            with cond:
                cond.notify_all()

    if n <= 1:
        drain()
    else:
        with ThreadPoolExecutor(max_workers=n - 1, thread_name_prefix="polyphys-compile") as pool:
            futures = [pool.submit(drain) for _ in range(n - 1)]
            drain()
            for fut in futures:
                fut.result()
    if errors:
        raise errors[0]
    return list(seen.values())


class _HeaderPool:
    """Precompiled headers shared by the compile threads of one ``load_kernel_modules`` call.

    Warp's CPU compiler (clang) precompiles its builtin header once per thread and per set of compile
    options — one file per optimization level, ``builtin_..._o2_<hash>.pch``, about 2.5 s of CPU each —
    in a folder of the thread's own (no two threads write one file). A scene whose modules use two
    levels (the rigid smooth stages -O3, the rest -O2) made every compile thread build both. Here each
    header is built once, by the first thread that compiles a module of its level (the smallest such
    module, so that it is ready soon), and copied into the folder of every thread before its next
    compile; a thread waits for a header another thread is building rather than build it again. CPU
    only (the CUDA compiler's headers are left as they are); without Warp's per-thread folder
    (another Warp version) nothing is shared and every thread builds its own, as before."""

    def __init__(self, wp, device):
        self.wp, self.device = wp, device
        self.files: dict[str, str] = {}           # header file name -> a complete copy
        self.state: dict = {}                     # key -> "building" | "ready"
        self._lock = threading.Lock()
        rt = getattr(getattr(wp, "_src", None), "context", None)
        rt = getattr(rt, "runtime", None)
        self._dir_of_thread = getattr(rt, "get_clang_pch_dir", None) if device.is_cpu else None

    def key(self, m) -> tuple:
        o = m.options
        opt = o.get("optimization_level")
        if opt is None:
            opt = getattr(self.wp.config, "optimization_level", None)
        if opt is None:
            opt = 2 if self.device.is_cpu else 3
        return (opt, o.get("mode") or getattr(self.wp.config, "mode", None), bool(o.get("fast_math", False)))

    def ready(self, m) -> bool:
        return self.state.get(self.key(m)) == "ready"

    def building(self, m) -> bool:
        return self.key(m) in self.state

    def start(self, m) -> None:
        self.state[self.key(m)] = "building"

    def _folder(self) -> str | None:
        try:
            return self._dir_of_thread() if self._dir_of_thread is not None else None
        except Exception:
            return None

    def fetch(self) -> None:
        """Copy the headers this thread lacks into its folder (before it compiles)."""
        folder = self._folder()
        if folder is None:
            return
        with self._lock:
            files = dict(self.files)
        for name, src in files.items():
            dst = os.path.join(folder, name)
            if os.path.exists(dst):
                continue
            try:
                tmp = dst + ".part"
                shutil.copyfile(src, tmp)
                os.replace(tmp, dst)
            except OSError:
                pass

    def publish(self, m) -> None:
        """After this thread loaded ``m``: its headers (complete: the compile finished) go to the pool,
        and ``m``'s level is ready for every thread."""
        folder = self._folder()
        if folder is not None:
            try:
                names = [f for f in os.listdir(folder) if f.endswith(".pch")]
            except OSError:
                names = []
            with self._lock:
                for f in names:
                    self.files.setdefault(f, os.path.join(folder, f))
        self.state[self.key(m)] = "ready"


# -- ahead of time: polyphys warmup -------------------------------------------------------------------
def warmup(scene_files: list | None = None, everything: bool = False, device: str | None = None,
           precision: str | None = None) -> dict:
    """Fill the kernel cache ahead of time (``polyphys warmup``): what a Docker image or a cluster
    node runs once, so that later runs find every module compiled.

    ``scene_files``: scene files (docs/running.md) to build and step once each — everything they
    launch is then cached, in their precision. ``everything``: also the contract scene of every
    registered solver in each precision it declares (built and stepped), then every kernel module
    the installed plugins have imported with concrete overloads (couplers, sensors, features the
    contract scenes do not reach). With neither, the bundled default scene. Returns a summary:
    ``{"scenes": [(label, seconds)], "modules": [ModuleLoad], "seconds": total}``.

    A module holds the overloads of every precision launched in its process, and its cache entry is
    keyed by them: a float32 + float64 module is a cache entry no single-precision run asks for. So
    when the work spans two precisions each precision is warmed in a process of its own
    (``precision``: only the scenes and contract scenes of that precision, in this process)."""
    from . import run as runmod
    from .registry import registry

    t0 = time.perf_counter()
    done: list = []
    loads: dict[str, ModuleLoad] = {}

    def record(label, scene, t):
        done.append((label, time.perf_counter() - t))
        for r in getattr(scene, "kernel_loads", []):
            loads.setdefault(r.name, r)

    from .errors import PolyphysError

    files = list(scene_files or [])
    if not files and not everything:
        files = [runmod.default_scene_path()]
    default = runmod.default_scene_path()
    if everything and default not in files:
        files.append(default)
    file_precision = {}
    for path in files:
        try:
            file_precision[path] = str(runmod.parse_file(path).sim.precision)
        except PolyphysError:
            file_precision[path] = None          # the error is raised where the file is built
    if precision is None:
        wanted = {p for p in file_precision.values() if p is not None}
        if everything:
            wanted |= {str(p) for rec in registry().all("solver") if rec.spec.contract is not None
                       for p in rec.spec.capabilities.precisions}
        if len(wanted) > 1:
            return _warmup_per_precision(scene_files, everything, device, sorted(wanted), t0)
    else:       # a file that does not parse raises (or, the default scene under --all, is skipped) in each child
        files = [f for f in files if file_precision[f] in (precision, None)]
    for path in files:
        t = time.perf_counter()
        try:
            plan = runmod.parse_file(path)
            if device is not None:
                plan.sim = attrs.evolve(plan.sim, device=device)
            scene, _ = runmod.build_scene(plan)
        except PolyphysError as exc:
            if not (everything and path == default and path not in (scene_files or [])):
                raise
            done.append((f"scene default: skipped ({exc})", 0.0))   # a plugin it needs is not installed
            continue
        scene.step()
        record(f"scene {plan.name} ({os.path.basename(str(path))})", scene, t)
    if everything:
        from .contract import build_scene

        for rec in registry().all("solver"):
            if rec.spec.contract is None:
                continue
            for p in sorted(rec.spec.capabilities.precisions):
                if precision is not None and str(p) != precision:
                    continue
                t = time.perf_counter()
                sim = {"precision": p}
                if device is not None:
                    sim["device"] = device
                scene = build_scene(rec, 0, **sim)
                scene.step()
                record(f"contract scene of {rec.name} (float{p})", scene, t)
        groups = []
        for kind in ("solver", "coupler", "sensor"):
            for rec in registry().all(kind):
                cls = rec.load()
                groups.append((f"{rec.name} {kind}" if kind != "solver" else rec.name, package_kernel_modules(cls)))
        for r in load_kernel_modules(groups, device or "cpu"):
            loads.setdefault(r.name, r)
    return {"scenes": done, "modules": list(loads.values()), "seconds": time.perf_counter() - t0}


_CHILD_MARK = "polyphys-warmup-summary:"


def _warmup_per_precision(scene_files, everything, device, precisions, t0) -> dict:
    """warmup() once per precision, each in a fresh interpreter (same kernel cache, same verbosity;
    its notices go to this process's stderr); the summaries joined."""
    import json
    import subprocess

    from .errors import PolyphysError

    done, loads = [], {}
    for p in precisions:
        payload = json.dumps({"scene_files": [str(f) for f in scene_files or []], "everything": bool(everything),
                              "device": device, "precision": p, "verbosity": get_verbosity()})
        code = "import sys; from polyphys.startup import _warmup_child; _warmup_child(sys.argv[1])"
        r = subprocess.run([sys.executable, "-c", code, payload], stdout=subprocess.PIPE, text=True)
        lines = [ln for ln in r.stdout.splitlines() if ln.startswith(_CHILD_MARK)]
        if not lines:
            raise PolyphysError(f"warmup of the float{p} work: the child process exited with {r.returncode} "
                                f"without a summary (its messages are above)")
        out = json.loads(lines[-1][len(_CHILD_MARK):])
        if "error" in out:
            raise PolyphysError(f"warmup of the float{p} work: {out['error']}")
        done += [tuple(x) for x in out["scenes"]]
        for m in out["modules"]:
            loads.setdefault((m["name"], p), ModuleLoad(**m))
    return {"scenes": done, "modules": list(loads.values()), "seconds": time.perf_counter() - t0}


def _warmup_child(payload: str) -> None:
    """The child of _warmup_per_precision: one precision's warmup, its summary as one JSON line."""
    import json

    from .errors import PolyphysError

    a = json.loads(payload)
    set_verbosity(a["verbosity"])
    try:
        r = warmup(a["scene_files"] or None, everything=a["everything"], device=a["device"], precision=a["precision"])
        out = {"scenes": r["scenes"], "modules": [attrs.asdict(m) for m in r["modules"]]}
    except PolyphysError as exc:
        out = {"error": f"{type(exc).__name__}: {exc}"}
    print(_CHILD_MARK + json.dumps(out), flush=True)


def rebuilt_modules(loads: list, device=None) -> list[str]:
    """The modules of ``loads`` (a scene's ``kernel_loads``) whose hash changed since they were
    loaded — a launch added an overload their owner did not declare, so they compiled again — and
    those declared with generic kernels left without overloads (compiled at their first launch)."""
    import warp as wp

    device = wp.get_device(device)
    out = []
    for r in loads:
        if r.status == "lazy" and r.note.startswith("generic"):
            out.append(f"{r.name} ({r.owner}): {r.note}")
        elif r.hash:
            m = wp.get_module(r.name)
            now = m.get_module_hash(_block_dim(m, device)).hex()
            if now != r.hash:
                out.append(f"{r.name} ({r.owner}): rebuilt after loading: a launch used an overload not declared "
                           f"in kernel_modules()")
    return out
