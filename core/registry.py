"""The plugin registry: the core's own entry-point loader around pluggy.

Why not ``PluginManager.load_setuptools_entrypoints``: it imports in ``sys.path`` order, lets the
first of two same-named plugins win silently and turns one broken plugin into a dead program. This
loader sorts entry points by name, de-duplicates the same (distribution, target) seen twice, reports
each failure with the entry point, distribution, version and original exception (warning, or raising
under ``POLYPHYS_STRICT_PLUGINS=1``), and refuses one plugin name provided by two distributions.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import threading
import warnings
from typing import Any

import attrs
import pluggy

from . import hookspecs
from .errors import OptionError, PluginConflictError, PluginLoadError, PluginLoadWarning
from .specs import SPEC_KINDS, load_target

GROUP = "polyphys"
HOOKS = {
    "solver": "polyphys_solvers",
    "coupler": "polyphys_couplers",
    "importer": "polyphys_importers",
    "sensor": "polyphys_sensors",
    "material": "polyphys_materials",
}
IN_PROCESS = "<in-process>"


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _env_list(name: str) -> frozenset[str]:
    return frozenset(s.strip() for s in os.environ.get(name, "").split(",") if s.strip())


@attrs.frozen
class Provider:
    """Where a plugin comes from."""

    entry_point: str          # entry-point name, or the name given to register()
    distribution: str         # distribution name, or "<in-process>"
    version: str
    value: str                # entry-point value ("pkg.module") or the object's repr


@attrs.frozen
class Registered:
    """A validated spec record plus its provider."""

    kind: str
    spec: Any
    provider: Provider

    @property
    def name(self) -> str:
        return self.spec.name

    def load(self) -> Any:
        """Import and return the spec's target (a class)."""
        return load_target(self.spec.target)


class Registry:
    """Holds every plugin the process can use. ``polyphys.registry()`` returns the shared one."""

    def __init__(self, autoload: bool | None = None):
        self.autoload = (not _env_flag("POLYPHYS_DISABLE_PLUGIN_AUTOLOAD")) if autoload is None else autoload
        self.strict = _env_flag("POLYPHYS_STRICT_PLUGINS")
        self.disabled = _env_list("POLYPHYS_DISABLE_PLUGINS")
        self.pm = pluggy.PluginManager(GROUP)
        self.pm.add_hookspecs(hookspecs)
        self._providers: dict[str, Provider] = {}    # pluggy plugin name -> provider
        self._records: dict[str, list[Registered]] | None = None
        self._entry_points_loaded = False
        self.load_failures: list[str] = []
        self._lock = threading.RLock()
        self._material_cache: dict[type, Registered] = {}

    # -- loading -------------------------------------------------------------------------------
    def _load_entry_points(self) -> None:
        if self._entry_points_loaded:
            return
        self._entry_points_loaded = True
        if not self.autoload:
            return
        seen: dict[tuple[str, str], str] = {}
        eps = sorted(md.entry_points(group=GROUP), key=lambda ep: (ep.name, ep.value))
        for ep in eps:
            dist = ep.dist
            dist_name = dist.metadata["Name"] if dist is not None else "<unknown>"
            version = dist.version if dist is not None else "?"
            key = (dist_name.lower().replace("_", "-"), ep.value)
            if key in seen:
                continue   # the same distribution and target seen twice (editable + stray metadata)
            seen[key] = ep.name
            if ep.name in self.disabled:
                continue
            plugin_name = f"{ep.name}@{dist_name}"
            if plugin_name in self._providers:
                plugin_name = f"{ep.name}@{dist_name}:{ep.value}"
            try:
                obj = ep.load()
                self.pm.register(obj, name=plugin_name)
            except Exception as exc:   # one broken plugin must not kill the program
                msg = (f"polyphys plugin entry point {ep.name!r} = {ep.value!r} from distribution "
                       f"{dist_name} {version} failed to load: {type(exc).__name__}: {exc}")
                self.load_failures.append(msg)
                if self.strict:
                    raise PluginLoadError(msg) from exc
                warnings.warn(msg + " (skipped; set POLYPHYS_STRICT_PLUGINS=1 to raise)",
                              PluginLoadWarning, stacklevel=3)
                continue
            self._providers[plugin_name] = Provider(ep.name, dist_name, version, ep.value)

    def register(self, obj: Any, name: str | None = None) -> str:
        """Register an in-process plugin (a module or object with ``@hookimpl`` functions)."""
        with self._lock:
            self._load_entry_points()
            name = name or getattr(obj, "__name__", None) or type(obj).__name__
            if self.pm.is_registered(obj):
                return self.pm.get_name(obj)
            if name in self._providers:
                raise PluginConflictError(f"a plugin named {name!r} is already registered")
            self.pm.register(obj, name=name)
            self._providers[name] = Provider(name, IN_PROCESS, "", repr(obj))
            self._records = None
            self._material_cache.clear()
            return name

    def unregister(self, obj_or_name: Any) -> None:
        with self._lock:
            obj = self.pm.get_plugin(obj_or_name) if isinstance(obj_or_name, str) else obj_or_name
            if obj is None or not self.pm.is_registered(obj):
                raise OptionError(f"plugin {obj_or_name!r} is not registered")
            name = self.pm.get_name(obj)
            self.pm.unregister(obj)
            self._providers.pop(name, None)
            self._records = None
            self._material_cache.clear()

    def _collect(self) -> dict[str, list[Registered]]:
        with self._lock:
            if self._records is not None:
                return self._records
            self._load_entry_points()
            records: dict[str, list[Registered]] = {k: [] for k in HOOKS}
            for kind, hook_name in HOOKS.items():
                hook = getattr(self.pm.hook, hook_name)
                by_name: dict[str, Registered] = {}
                for impl in sorted(hook.get_hookimpls(), key=lambda i: i.plugin_name):
                    provider = self._providers[impl.plugin_name]
                    result = impl.function() or []
                    for spec in result:
                        self._validate(kind, spec, provider)
                        if spec.name in self.disabled:
                            continue
                        key = (f"{spec.family}.{spec.name}" if kind == "material" and spec.family
                               else spec.name)
                        reg = Registered(kind, spec, provider)
                        old = by_name.get(key)
                        if old is not None:
                            if (old.provider.distribution, old.spec.target) == (
                                    provider.distribution, spec.target):
                                continue
                            raise PluginConflictError(
                                f"{kind} {key!r} is provided twice: by {old.provider.distribution} "
                                f"{old.provider.version} (entry point {old.provider.entry_point!r}, "
                                f"target {old.spec.target}) and by {provider.distribution} "
                                f"{provider.version} (entry point {provider.entry_point!r}, target "
                                f"{spec.target}); uninstall one or disable it with "
                                f"POLYPHYS_DISABLE_PLUGINS")
                        by_name[key] = reg
                records[kind] = [by_name[k] for k in sorted(by_name)]
            self._records = records
            return records

    @staticmethod
    def _validate(kind: str, spec: Any, provider: Provider) -> None:
        expected = SPEC_KINDS[kind]
        if not isinstance(spec, expected):
            raise PluginLoadError(
                f"plugin {provider.entry_point!r} ({provider.distribution}) returned "
                f"{type(spec).__name__} from {HOOKS[kind]}(); expected {expected.__name__} records")
        if spec.api_version != hookspecs.API_VERSION:
            raise PluginLoadError(
                f"{kind} {spec.name!r} from {provider.distribution} declares api_version "
                f"{spec.api_version}; this polyphys supports {hookspecs.API_VERSION}")
        if kind == "coupler":
            from .views import VIEW_PROTOCOLS

            couples = spec.couples
            if not isinstance(couples, (tuple, list)) or len(couples) != 2 or \
                    not all(isinstance(v, str) and v in VIEW_PROTOCOLS for v in couples):
                raise PluginLoadError(
                    f"coupler {spec.name!r} from {provider.distribution} (entry point {provider.entry_point!r}): "
                    f"couples = {couples!r}; expected two view protocol names of polyphys.views, allowed: "
                    f"{sorted(VIEW_PROTOCOLS)}")

    # -- queries -------------------------------------------------------------------------------
    def all(self, kind: str, plugins: frozenset[str] | None = None) -> list[Registered]:
        recs = self._collect()[kind]
        if plugins is not None:
            recs = [r for r in recs if r.name in plugins or r.provider.entry_point in plugins]
        return recs

    def check_plugin_names(self, plugins, what: str = "plugins") -> frozenset[str]:
        """Validate a plugin selection (``Scene(plugins=[...])``): a list of names, each the name of a
        registered solver/coupler/importer/sensor/material or of an entry point."""
        if isinstance(plugins, (str, bytes)) or not hasattr(plugins, "__iter__"):
            raise OptionError(f"{what} = {plugins!r}: must be a list of plugin names")
        names = list(plugins)
        bad_type = [p for p in names if not isinstance(p, str)]
        if bad_type:
            raise OptionError(f"{what} = {plugins!r}: every entry must be a plugin name (a string); got "
                              f"{bad_type[0]!r}")
        known = sorted({r.name for kind in HOOKS for r in self.all(kind)}
                       | {r.provider.entry_point for kind in HOOKS for r in self.all(kind)})
        unknown = sorted(set(names) - set(known))
        if unknown:
            hint = (" (plugin autoloading is disabled by POLYPHYS_DISABLE_PLUGIN_AUTOLOAD)"
                    if not self.autoload else "")
            raise OptionError(f"{what} = {names!r}: unknown plugin name(s) {unknown}; installed plugins: "
                              f"{known}{hint}")
        return frozenset(names)

    def get(self, kind: str, name: str, plugins: frozenset[str] | None = None) -> Registered:
        recs = self.all(kind, plugins)
        for r in recs:
            if r.name == name:
                return r
        known = [r.name for r in recs]
        hint = ""
        if not self.autoload:
            hint = " (plugin autoloading is disabled by POLYPHYS_DISABLE_PLUGIN_AUTOLOAD)"
        raise OptionError(f"unknown {kind} {name!r}; known {kind}s: {known}{hint}")

    def material_owner(self, material: Any, plugins: frozenset[str] | None = None) -> Registered:
        """The registered material record of the most-derived registered class in the MRO."""
        cls = type(material)
        best, best_rank = None, None
        for rec in self.all("material", plugins):
            mat_cls = rec.load()
            if isinstance(material, mat_cls):
                rank = cls.__mro__.index(mat_cls)
                if best_rank is None or rank < best_rank:
                    best, best_rank = rec, rank
        if best is None:
            known = [(f"{r.spec.family}." if r.spec.family else "") + r.name
                     for r in self.all("material", plugins)]
            raise OptionError(f"material {cls.__module__}.{cls.__qualname__} is not owned by any "
                              f"registered solver; known materials: {known}")
        return best

    def plugin_rows(self) -> list[dict]:
        """One row per registered solver/coupler/importer/sensor, for ``polyphys plugins``."""
        rows = []
        for kind in ("solver", "coupler", "importer", "sensor"):
            for rec in self.all(kind):
                rows.append({
                    "kind": kind,
                    "name": rec.name,
                    "distribution": rec.provider.distribution,
                    "version": rec.provider.version,
                    "entry_point": rec.provider.entry_point,
                    "capabilities": rec.spec.capabilities.to_dict(),
                    "notes": rec.spec.capabilities.notes,
                    "description": getattr(rec.spec, "description", ""),
                })
        return rows


_REGISTRY: Registry | None = None
_REG_LOCK = threading.Lock()


def registry() -> Registry:
    """The process-wide registry (created on first use; loading entry points is lazy)."""
    global _REGISTRY
    with _REG_LOCK:
        if _REGISTRY is None:
            _REGISTRY = Registry()
        return _REGISTRY


def reset_registry(autoload: bool | None = None) -> Registry:
    """Forget every loaded plugin and start over (tests; after changing the environment variables)."""
    global _REGISTRY
    with _REG_LOCK:
        _REGISTRY = Registry(autoload=autoload)
        return _REGISTRY


def register(obj: Any, name: str | None = None) -> str:
    """Register an in-process plugin object or module; returns its registered name."""
    return registry().register(obj, name)


def unregister(obj_or_name: Any) -> None:
    registry().unregister(obj_or_name)
