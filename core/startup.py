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
    # The calling thread is one of the workers: Warp keeps a precompiled header per thread, built
    # by the thread's first compile, and the modules an owner left undeclared compile later on
    # this thread — so they reuse its header instead of building a third one.
    queue = list(todo)
    lock = threading.Lock()
    errors: list = []

    def drain():
        while True:
            with lock:
                if not queue or errors:
                    return
                item = queue.pop(0)
            try:
                load(item)
            except BaseException as exc:     # reported after every worker stopped
                with lock:
                    errors.append(exc)
                return

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


# -- ahead of time: polyphys warmup -------------------------------------------------------------------
def warmup(scene_files: list | None = None, everything: bool = False, device: str | None = None) -> dict:
    """Fill the kernel cache ahead of time (``polyphys warmup``): what a Docker image or a cluster
    node runs once, so that later runs find every module compiled.

    ``scene_files``: scene files (docs/running.md) to build and step once each — everything they
    launch is then cached, in their precision. ``everything``: also the contract scene of every
    registered solver in each precision it declares (built and stepped), then every kernel module
    the installed plugins have imported with concrete overloads (couplers, sensors, features the
    contract scenes do not reach). With neither, the bundled default scene. Returns a summary:
    ``{"scenes": [(label, seconds)], "modules": [ModuleLoad], "seconds": total}``."""
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
            for precision in sorted(rec.spec.capabilities.precisions):
                t = time.perf_counter()
                sim = {"precision": precision}
                if device is not None:
                    sim["device"] = device
                scene = build_scene(rec, 0, **sim)
                scene.step()
                record(f"contract scene of {rec.name} (float{precision})", scene, t)
        groups = []
        for kind in ("solver", "coupler", "sensor"):
            for rec in registry().all(kind):
                cls = rec.load()
                groups.append((f"{rec.name} {kind}" if kind != "solver" else rec.name, package_kernel_modules(cls)))
        for r in load_kernel_modules(groups, device or "cpu"):
            loads.setdefault(r.name, r)
    return {"scenes": done, "modules": list(loads.values()), "seconds": time.perf_counter() - t0}


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
