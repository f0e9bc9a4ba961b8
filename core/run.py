"""The main job: build a scene from a declarative TOML file, step it, write a results folder.

``polyphys run SCENE.toml`` (or :func:`run_file`) reads the file, validates every key before anything
is built (an error names the key, the value and what is allowed), composes the scene through the
registry, steps it, records entity getters and writes ``trajectories.npz``, ``summary.json``,
when matplotlib is installed ``plot.png``, and what ``[run]`` asks for: a video of a camera
(``video``, docs/cameras.md) and a checkpoint of the end state (``checkpoint``). The format is
documented in examples/README.md and docs/running.md.
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
import time
from importlib import resources
from typing import Any

import attrs

from .errors import OptionError, PolyphysError

try:   # Python 3.11+
    import tomllib as _toml
except ModuleNotFoundError:   # pragma: no cover - Python 3.10
    import tomli as _toml

TOP_KEYS = ("scene", "sim", "solvers", "couplers", "entities", "sensors", "run")
SCENE_KEYS = ("name", "description", "plugins", "couplers")
ENTITY_KEYS = ("name", "morph", "material", "surface", "options", "init", "record")
RUN_KEYS = ("n_envs", "steps", "record", "record_every", "snapshots", "states", "video", "checkpoint")
STATES_KEYS = ("enabled", "every", "fields", "contacts")   # [run.states]: what the viewer replays
RECORD_KEYS = ("getter", "as", "args")
SENSOR_KEYS = ("kind", "entity", "name")    # the rest of a [[sensors]] table: add_sensor keywords
# Morph classes a file can name; Description needs an in-memory object, so it is not offered.
MORPH_TYPES = ("Plane", "Box", "Sphere", "Capsule", "Cylinder", "Mesh", "MJCF", "URDF")
DEFAULT_STEPS = 100


class SceneFileError(OptionError):
    """A scene file that cannot be used as written; the message names the key and the value."""


def default_scene_path() -> str:
    """Path of the bundled default scene (package data, so the wheel carries it)."""
    return str(resources.files("polyphys.scenes").joinpath("default.toml"))


# -- parsing --------------------------------------------------------------------------------------
@attrs.define
class RecordItem:
    getter: str
    key: str                      # the name under which it is stored (``as`` or the getter name)
    args: dict
    explicit: bool                # named in the entity's own record list (then it must exist)


@attrs.define
class EntityPlan:
    index: int
    name: str | None
    morph: Any
    material: Any
    surface: Any
    options: dict
    init: list                    # [(setter name, args tuple, kwargs dict)]
    record: list | None           # [RecordItem] or None (use [run].record)


@attrs.define
class SensorPlan:
    index: int
    kind: str
    entity: str                   # the name of a scene-file entity
    name: str | None
    options: dict                 # add_sensor keyword arguments


@attrs.define
class ScenePlan:
    """Everything a scene file says, validated; nothing built yet."""

    source: str
    name: str
    description: str
    sim: Any
    solver_options: dict
    plugins: list | None
    coupler: Any
    entities: list
    n_envs: int
    steps: int
    record: list
    record_every: int
    snapshots: int = 0            # pictures at this many recorded times (snapshots.png); 0: none
    states: dict = attrs.field(factory=dict)   # [run.states] (docs/viewer.md); {} = the defaults
    sensors: list = attrs.field(factory=list)     # [SensorPlan]
    video: dict | None = None     # [run] video (docs/cameras.md): camera, fps, env, file; None: no video
    checkpoint: bool = False      # [run] checkpoint: write RUN_DIR/checkpoint.npz at the end


def _fmt(value) -> str:
    return repr(value)


def _tuplify(value):
    """TOML arrays become tuples (attrs option classes expect tuples), recursively."""
    if isinstance(value, list):
        return tuple(_tuplify(v) for v in value)
    if isinstance(value, dict):
        return {k: _tuplify(v) for k, v in value.items()}
    return value


class _Parser:
    def __init__(self, source: str, base_dir: str):
        self.source = source
        self.base_dir = base_dir

    def err(self, key: str, value, allowed: str) -> SceneFileError:
        return SceneFileError(f"{self.source}: {key} = {_fmt(value)}: {allowed}")

    def table(self, key: str, value, allowed_keys=None) -> dict:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.err(key, value, "must be a table")
        if allowed_keys is not None:
            for k in value:
                if k not in allowed_keys:
                    raise self.err(f"{key}.{k}" if key else k, value[k],
                                   f"unknown key; allowed keys: {list(allowed_keys)}")
        return value

    def integer(self, key: str, value, lo: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < lo:
            raise self.err(key, value, f"must be an integer >= {lo}")
        return value

    def construct(self, key: str, cls, kwargs: dict):
        """``cls(**kwargs)`` with errors turned into one line naming ``key``."""
        if attrs.has(cls):
            from .options import init_fields, unknown_field_hint

            fields = init_fields(cls)
            for k, v in kwargs.items():
                if k not in fields:
                    raise self.err(f"{key}.{k}", v, unknown_field_hint(cls, k))
        try:
            return cls(**_tuplify(kwargs))
        except PolyphysError as exc:
            raise SceneFileError(f"{self.source}: {key}: {exc}") from None
        except (TypeError, ValueError) as exc:
            raise SceneFileError(f"{self.source}: {key} = {_fmt(kwargs)}: {cls.__name__} refused it: "
                                 f"{exc}") from None

    # -- sections ---------------------------------------------------------------------------------
    def parse(self, data: dict, default_name: str) -> ScenePlan:
        from .options import SimOptions

        self.table("", data, TOP_KEYS)
        scene = self.table("scene", data.get("scene"), SCENE_KEYS)
        name = scene.get("name", default_name)
        if not isinstance(name, str) or not name:
            raise self.err("scene.name", name, "must be a non-empty string")
        description = scene.get("description", "")
        if not isinstance(description, str):
            raise self.err("scene.description", description, "must be a string")
        plugins = scene.get("plugins")
        if plugins is not None and (not isinstance(plugins, list)
                                    or not all(isinstance(p, str) for p in plugins)):
            raise self.err("scene.plugins", plugins, "must be a list of plugin names")
        if plugins is not None:
            from .registry import registry

            try:
                registry().check_plugin_names(plugins, "scene.plugins")
            except OptionError as exc:
                raise SceneFileError(f"{self.source}: {exc}") from None
        sim = self.construct("sim", SimOptions, self.table("sim", data.get("sim")))
        solver_options = self.solvers(self.table("solvers", data.get("solvers")), plugins)
        coupler = self.couplers(scene, self.table("couplers", data.get("couplers")), plugins)
        run = self.table("run", data.get("run"), RUN_KEYS)
        n_envs = self.integer("run.n_envs", run.get("n_envs", 0), 0)
        steps = self.integer("run.steps", run.get("steps", DEFAULT_STEPS), 0)
        record_every = self.integer("run.record_every", run.get("record_every", 1), 1)
        snapshots = self.integer("run.snapshots", run.get("snapshots", 0), 0)
        record = self.record_list("run.record", run.get("record", ["get_pos"]), explicit=False)
        states = self.states(run.get("states", {}))
        from .raycast.recording import check_video_table

        try:
            video = check_video_table(self.source, run.get("video"))
        except OptionError as exc:
            raise SceneFileError(str(exc)) from None
        checkpoint = run.get("checkpoint", False)
        if not isinstance(checkpoint, bool):
            raise self.err("run.checkpoint", checkpoint, "must be true or false")
        ents = data.get("entities")
        if ents is None or ents == []:
            raise self.err("entities", ents, "a scene needs at least one [[entities]] table")
        if not isinstance(ents, list):
            raise self.err("entities", ents, "must be an array of tables ([[entities]])")
        entities = [self.entity(i, e, plugins) for i, e in enumerate(ents)]
        names = [e.name for e in entities if e.name is not None]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise self.err("entities[*].name", dup[0], "entity names must be unique")
        sensors = self.sensors(data.get("sensors"), names, plugins)
        return ScenePlan(source=self.source, name=name, description=description, sim=sim,
                         solver_options=solver_options, plugins=plugins, coupler=coupler,
                         entities=entities, n_envs=n_envs, steps=steps, record=record,
                         record_every=record_every, snapshots=snapshots, states=states,
                         sensors=sensors, video=video, checkpoint=checkpoint)

    def states(self, value) -> dict:
        """[run.states]: enabled (default true), every (default run.record_every), fields (particle
        getters recorded for colouring, e.g. ["vel"]), contacts (default true)."""
        if isinstance(value, bool):
            value = {"enabled": value}
        t = dict(self.table("run.states", value, STATES_KEYS))
        if not isinstance(t.get("enabled", True), bool):
            raise self.err("run.states.enabled", t["enabled"], "must be true or false")
        if not isinstance(t.get("contacts", True), bool):
            raise self.err("run.states.contacts", t["contacts"], "must be true or false")
        if "every" in t:
            self.integer("run.states.every", t["every"], 1)
        fields = t.get("fields", [])
        if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
            raise self.err("run.states.fields", fields, "must be a list of particle field names, e.g. [\"vel\"]")
        return t

    def sensors(self, tables, entity_names: list, plugins) -> list:
        """``[[sensors]]``: kind, entity (a named entity of the file; none: a sensor of the scene, e.g.
        a camera fixed in the world), optional name; every other key is an ``add_sensor`` keyword of
        that kind (checked when the scene is built)."""
        from .registry import registry

        if tables is None:
            return []
        if not isinstance(tables, list):
            raise self.err("sensors", tables, "must be an array of tables ([[sensors]])")
        known = [r.name for r in registry().all("sensor", frozenset(plugins) if plugins is not None else None)]
        out = []
        for i, t in enumerate(tables):
            key = f"sensors[{i}]"
            t = self.table(key, t)
            kind = t.get("kind")
            if kind not in known:
                raise self.err(f"{key}.kind", kind, f"must name a sensor kind; registered: {known}")
            ent = t.get("entity")
            if ent is not None and ent not in entity_names:
                raise self.err(f"{key}.entity", ent, f"must name an entity of the file (give it a name); "
                                                     f"named entities: {entity_names}")
            name = t.get("name")
            if name is not None and (not isinstance(name, str) or not name or "/" in name):
                raise self.err(f"{key}.name", name, "must be a non-empty string without '/'")
            opts = _tuplify({k: v for k, v in t.items() if k not in SENSOR_KEYS})
            out.append(SensorPlan(i, kind, ent, name, opts))
        return out

    def solvers(self, tables: dict, plugins) -> dict:
        from .registry import registry
        from .specs import load_target

        reg = registry()
        out = {}
        for sname, opts in tables.items():
            key = f"solvers.{sname}"
            opts = self.table(key, opts)
            try:
                rec = reg.get("solver", sname, frozenset(plugins) if plugins is not None else None)
            except OptionError as exc:
                raise self.err(key, opts, str(exc)) from None
            if rec.spec.options is None:
                if opts:
                    raise self.err(key, opts, f"solver {sname!r} has no options; leave the table empty")
                continue
            out[sname] = self.construct(key, load_target(rec.spec.options), opts)
        return out

    def couplers(self, scene: dict, tables: dict, plugins):
        from .registry import registry
        from .specs import load_target

        reg = registry()
        pl = frozenset(plugins) if plugins is not None else None
        names = scene.get("couplers")
        if names is False:
            if tables:
                raise self.err("couplers", sorted(tables), "scene.couplers = false selects no coupler")
            return False
        if names is not None and names is not True and (
                not isinstance(names, list) or not all(isinstance(n, str) for n in names)):
            raise self.err("scene.couplers", names, "must be a list of coupler names, or false")
        chosen: list = []
        for cname in list(names or []) + [n for n in tables if n not in (names or [])]:
            key = f"couplers.{cname}" if cname in tables else "scene.couplers"
            try:
                rec = reg.get("coupler", cname, pl)
            except OptionError as exc:
                raise self.err(key, cname, str(exc)) from None
            opts = self.table(key, tables.get(cname))
            if rec.spec.options is not None and cname in tables:
                chosen.append(self.construct(key, load_target(rec.spec.options), opts))
            elif opts:
                raise self.err(key, opts, f"coupler {cname!r} has no options; leave the table empty")
            else:
                chosen.append(cname)
        return chosen if chosen else None

    def morph(self, key: str, spec) -> Any:
        from . import morphs

        spec = dict(self.table(key, spec))
        mtype = spec.pop("type", None)
        if mtype is None:
            raise self.err(f"{key}.type", None, f"missing; known morph types: {list(MORPH_TYPES)}")
        if mtype not in MORPH_TYPES:
            raise self.err(f"{key}.type", mtype, f"unknown morph type; known: {list(MORPH_TYPES)}")
        cls = getattr(morphs, mtype)
        if "file" in spec and isinstance(spec["file"], str) and not os.path.isabs(spec["file"]):
            spec["file"] = os.path.normpath(os.path.join(self.base_dir, spec["file"]))
        return self.construct(key, cls, spec)

    def material(self, key: str, spec, plugins) -> Any:
        from . import materials
        from .registry import registry

        spec = dict(self.table(key, spec))
        mtype = spec.pop("type", None)
        recs = registry().all("material", frozenset(plugins) if plugins is not None else None)
        known = sorted((f"{r.spec.family}." if r.spec.family else "") + r.name for r in recs)
        if not isinstance(mtype, str):
            raise self.err(f"{key}.type", mtype, f"must name a material; registered: {known}")
        parts = mtype.split(".")
        try:
            cls = materials.lookup(parts[0])
            for p in parts[1:]:
                cls = getattr(cls, p)
        except AttributeError:
            raise self.err(f"{key}.type", mtype, f"unknown material; registered: {known}") from None
        if not isinstance(cls, type):
            raise self.err(f"{key}.type", mtype, f"is a material family, name one of its members; "
                                                 f"registered: {known}")
        return self.construct(key, cls, spec)

    def record_list(self, key: str, value, explicit: bool) -> list:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            raise self.err(key, value, "must be a list of getter names (or tables {getter, as, args})")
        out = []
        for i, item in enumerate(value):
            k = f"{key}[{i}]"
            if isinstance(item, str):
                item = {"getter": item}
            item = self.table(k, item, RECORD_KEYS)
            getter = item.get("getter")
            if not isinstance(getter, str) or not getter.startswith("get_"):
                raise self.err(f"{k}.getter", getter, "must be an entity getter name starting with 'get_'")
            as_ = item.get("as", getter)
            if not isinstance(as_, str) or not as_ or "/" in as_:
                raise self.err(f"{k}.as", as_, "must be a non-empty name without '/'")
            args = self.table(f"{k}.args", item.get("args"))
            out.append(RecordItem(getter, as_, dict(args), explicit))
        keys = [r.key for r in out]
        dup = sorted({x for x in keys if keys.count(x) > 1})
        if dup:
            raise self.err(key, dup[0], "recorded twice under the same name; use 'as' to rename")
        return out

    def entity(self, i: int, spec, plugins) -> EntityPlan:
        key = f"entities[{i}]"
        spec = self.table(key, spec, ENTITY_KEYS)
        name = spec.get("name")
        if name is not None and (not isinstance(name, str) or not name or "/" in name):
            raise self.err(f"{key}.name", name, "must be a non-empty string without '/'")
        if "morph" not in spec:
            raise self.err(f"{key}.morph", None,
                           f"missing; e.g. morph = {{ type = \"Box\", size = [0.1, 0.1, 0.1] }}; "
                           f"known types: {list(MORPH_TYPES)}")
        if "material" not in spec:
            raise self.err(f"{key}.material", None, "missing; e.g. material = { type = \"Kinematic\" }")
        morph = self.morph(f"{key}.morph", spec["morph"])
        material = self.material(f"{key}.material", spec["material"], plugins)
        surface = None
        if "surface" in spec:
            from .materials import Surface

            surface = self.construct(f"{key}.surface", Surface, self.table(f"{key}.surface", spec["surface"]))
        options = _tuplify(self.table(f"{key}.options", spec.get("options")))
        init = []
        for setter, args in self.table(f"{key}.init", spec.get("init")).items():
            if not setter.startswith("set_"):
                raise self.err(f"{key}.init.{setter}", args, "init calls setters: names start with 'set_'")
            if isinstance(args, dict):
                init.append((setter, (), dict(args)))
            else:
                init.append((setter, (args,), {}))
        record = None
        if "record" in spec:
            record = self.record_list(f"{key}.record", spec["record"], explicit=True)
        return EntityPlan(i, name, morph, material, surface, options, init, record)


def parse_file(path: str | os.PathLike) -> ScenePlan:
    """Read and validate a scene file; builds nothing."""
    try:
        path = os.fspath(path)
    except TypeError:
        raise SceneFileError(f"scene file = {path!r}: expected a path") from None
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise SceneFileError(f"{path}: no such scene file (looked at {os.path.abspath(path)})") from None
    except OSError as exc:        # a folder, no permission, ...
        raise SceneFileError(f"{path}: cannot read the scene file ({type(exc).__name__}: {exc})") from None
    data = _loads(raw, path)
    stem = os.path.splitext(os.path.basename(path))[0]
    return _Parser(path, os.path.dirname(os.path.abspath(path))).parse(data, stem)


def _loads(raw: bytes | str, source: str) -> dict:
    """TOML text (bytes: UTF-8, as TOML requires) -> dict, or SceneFileError naming the problem."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SceneFileError(f"{source}: not a UTF-8 text file (byte {exc.start}: {raw[exc.start:exc.start + 1]!r}); "
                                 f"a scene file is TOML, which is UTF-8") from None
    if not isinstance(raw, str):
        raise SceneFileError(f"{source}: scene text = {type(raw).__name__}: expected a string")
    try:
        return _toml.loads(raw)
    except _toml.TOMLDecodeError as exc:
        raise SceneFileError(f"{source}: not valid TOML: {exc}") from None
    except RecursionError:        # deeply nested arrays/tables
        raise SceneFileError(f"{source}: not usable TOML: nested too deeply") from None


def parse_string(text: str, source: str = "<string>", base_dir: str = ".") -> ScenePlan:
    return _Parser(source, base_dir).parse(_loads(text, source), "scene")


# -- building and running -----------------------------------------------------------------------
def build_scene(plan: ScenePlan):
    """Compose and build the scene a plan describes; apply the init setter calls. Returns
    ``(scene, entities)``."""
    from .scene import Scene

    scene = Scene(sim=plan.sim, plugins=plan.plugins, coupler=plan.coupler, **plan.solver_options)
    entities = []
    for ep in plan.entities:
        key = f"entities[{ep.index}]"
        try:
            entities.append(scene.add_entity(morph=ep.morph, material=ep.material, surface=ep.surface,
                                             name=ep.name, **ep.options))
        except PolyphysError as exc:
            raise SceneFileError(f"{plan.source}: {key}: {exc}") from None
    by_name = {ep.name: ent for ep, ent in zip(plan.entities, entities, strict=True) if ep.name is not None}
    for sp in plan.sensors:
        try:
            scene.add_sensor(sp.kind, by_name[sp.entity] if sp.entity is not None else None, name=sp.name,
                             **sp.options)
        except PolyphysError as exc:
            raise SceneFileError(f"{plan.source}: sensors[{sp.index}]: {exc}") from None
    try:
        scene.build(n_envs=plan.n_envs)
    except PolyphysError as exc:
        raise SceneFileError(f"{plan.source}: building the scene: {type(exc).__name__}: {exc}") from None
    for ep, ent in zip(plan.entities, entities, strict=True):
        for setter, args, kwargs in ep.init:
            key = f"{plan.source}: entities[{ep.index}].init.{setter}"
            fn = getattr(ent, setter, None)
            if fn is None or not callable(fn):
                known = sorted(n for n in dir(ent) if n.startswith("set_"))
                raise SceneFileError(f"{key} = {_fmt(args[0] if args else kwargs)}: entity "
                                     f"{_entity_name(ent, ep)!r} ({type(ent).__name__}) has no setter "
                                     f"{setter!r}; its setters: {known}")
            try:
                fn(*args, **kwargs)
            except PolyphysError as exc:
                raise SceneFileError(f"{key} = {_fmt(args[0] if args else kwargs)}: {exc}") from None
            except TypeError as exc:
                raise SceneFileError(f"{key} = {_fmt(args[0] if args else kwargs)}: {exc}") from None
    return scene, entities


def _entity_name(ent, ep: EntityPlan) -> str:
    return ep.name or getattr(ent, "name", None) or f"entity{ep.index}"


def _recorders(plan: ScenePlan, entities) -> list:
    """[(npz key, bound getter, kwargs)] for every entity and recorded getter."""
    out = []
    used = set()
    for ep, ent in zip(plan.entities, entities, strict=True):
        ename = _entity_name(ent, ep)
        items = ep.record if ep.record is not None else plan.record
        for item in items:
            fn = getattr(ent, item.getter, None)
            if fn is None or not callable(fn):
                if item.explicit:
                    known = sorted(n for n in dir(ent) if n.startswith("get_"))
                    raise SceneFileError(f"{plan.source}: entities[{ep.index}].record = {item.getter!r}: "
                                         f"entity {ename!r} has no such getter; its getters: {known}")
                continue
            out.append((f"{ename}/{item.key}", fn, item.args, item.getter))
            used.add(item.key)
    uses_default = any(ep.record is None for ep in plan.entities)
    for item in plan.record if uses_default else []:
        if item.key not in used:
            getters = {n for ent in entities for n in dir(ent) if n.startswith("get_")}
            raise SceneFileError(f"{plan.source}: run.record = {item.getter!r}: no entity has this "
                                 f"getter; getters of the scene's entities: {sorted(getters)}")
    return out


class Progress:
    """A one-line progress bar on stderr (no dependency); silent when disabled, and on runs that
    finish within ``delay`` seconds."""

    def __init__(self, total: int, enabled: bool, label: str = "steps", stream=None, delay: float = 0.5):
        self.total, self.enabled, self.label = total, enabled and total > 0, label
        self.delay = delay              # seconds before the bar first appears
        self._drawn = False
        self.stream = stream or sys.stderr
        self.t0 = time.perf_counter()
        self._last = -1.0

    def update(self, done: int) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if done < self.total and now - self._last < 0.1:
            return
        if not self._drawn and now - self.t0 < self.delay and done < self.total:
            return                      # short runs show no bar at all
        if not self._drawn and done >= self.total and now - self.t0 < self.delay:
            return
        self._drawn = True
        self._last = now
        frac = done / self.total
        width = 30
        bar = "#" * int(frac * width) + "-" * (width - int(frac * width))
        el = now - self.t0
        eta = el / frac - el if frac > 0 else float("nan")
        eta_s = f"{eta:5.1f}s" if math.isfinite(eta) else "  ?  "
        self.stream.write(f"\r[{bar}] {done}/{self.total} {self.label}  {el:5.1f}s elapsed, eta {eta_s}")
        if done >= self.total:
            self.stream.write("\n")
        self.stream.flush()


@attrs.define
class RunResult:
    out_dir: str
    files: dict
    summary: dict
    trajectories: dict


def _versions() -> dict:
    from importlib import metadata

    from . import __version__

    out = {"polyphys": __version__, "python": platform.python_version()}
    for dist in ("warp-lang", "numpy"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def _value_summary(arr) -> dict:
    import numpy as np

    a = np.asarray(arr, dtype=float)
    finite = bool(np.all(np.isfinite(a)))
    out = {"shape": list(a.shape), "all_finite": finite}
    if a.size and finite:
        out.update(min=float(a.min()), max=float(a.max()), mean=float(a.mean()))
    if a.size <= 32:
        out["value"] = a.tolist()
    return out


def run_plan(plan: ScenePlan, out_dir: str | os.PathLike | None = None, steps: int | None = None,
             progress: bool | None = None, plot: bool = True, video: bool = True) -> RunResult:
    """Build, step and record a parsed scene; write the results folder (``video=False``: no video
    even when the scene file asks for one)."""
    import numpy as np

    if steps is not None:
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
            raise OptionError(f"steps = {steps!r}: must be an integer >= 0")
        plan.steps = steps
    out_dir = os.fspath(out_dir) if out_dir is not None else os.path.join("results", plan.name)
    if progress is None:
        progress = sys.stderr.isatty()
    if video and plan.video is not None:      # a missing extra or a bad path fails before the run
        from .raycast.media import check_writable
        from .viewer._extras import require

        require("imageio", "video")
        check_writable(os.path.join(out_dir, plan.video.get("file", "video.mp4")), "run.video.file")
    t0 = time.perf_counter()
    scene, entities = build_scene(plan)
    build_s = time.perf_counter() - t0
    recs = _recorders(plan, entities)
    # every sensor of the scene evaluated in the step (the file's [[sensors]] and those of MJCF
    # models) but images: the measured reading and its ground truth, key sensors/<entity>/<sensor>
    # and sensors_truth/<entity>/<sensor>
    traj_sensors = [s for s in scene.sensors if s.in_step and s.trajectory]
    sensor_keys = {s.full_name: (f"sensors/{s.full_name}", f"sensors_truth/{s.full_name}") for s in traj_sensors}
    data: dict[str, list] = {k: [] for k, *_ in recs}
    data.update({k: [] for pair in sensor_keys.values() for k in pair})
    times, step_idx = [], []

    def record(step: int) -> None:
        t = scene.get_time()
        times.append(float(np.max(t)) if np.ndim(t) else float(t))
        step_idx.append(step)
        for key, fn, kwargs, _ in recs:
            data[key].append(np.asarray(fn(**kwargs)))
        if sensor_keys:
            for truth, readings in ((0, scene.read_sensors()), (1, scene.read_sensors(ground_truth=True))):
                for full, r in readings.items():
                    if full in sensor_keys:
                        data[sensor_keys[full][truth]].append(np.asarray(r.value, dtype=float))

    states = _states_recorder(plan, scene, out_dir)
    if states is not None:
        states.record(step=0, time=float(np.max(scene.get_time())))
    try:
        record(0)       # the first call validates every recorded getter and its args
    except (PolyphysError, TypeError) as exc:
        bad = next((r for r in recs if not data[r[0]]), None)
        what = f"record {bad[3]!r} (as {bad[0]!r}) with args {bad[2]}" if bad else "record"
        raise SceneFileError(f"{plan.source}: {what}: {exc}") from None
    vid = None
    if video and plan.video is not None:
        from .raycast.recording import Video

        try:
            vid = Video(scene, plan.video, out_dir, plan.source,
                        {_entity_name(e, ep): e for ep, e in zip(plan.entities, entities, strict=True)})
        except PolyphysError as exc:
            raise SceneFileError(f"{plan.source}: run.video: {exc}") from None
        vid.maybe_frame(0)
    render_s = 0.0
    bar = Progress(plan.steps, progress, label="steps" if vid is None else f"steps (video every {vid.every})")
    first_step_s = 0.0
    t_loop = time.perf_counter()
    step_s = 0.0
    for i in range(1, plan.steps + 1):
        ts = time.perf_counter()
        scene.step()
        dt_step = time.perf_counter() - ts
        if i == 1:
            first_step_s = dt_step
        else:
            step_s += dt_step
        if i % plan.record_every == 0 or i == plan.steps:
            record(i)
        if states is not None and (i % states.every == 0 or i == plan.steps):
            states.record(step=i, time=float(np.max(scene.get_time())))
        if vid is not None:
            tr = time.perf_counter()
            vid.maybe_frame(i)
            render_s += time.perf_counter() - tr
        bar.update(i)
    loop_s = time.perf_counter() - t_loop
    n_env = max(1, plan.n_envs)
    timed = plan.steps - 1
    traj = {"time": np.asarray(times), "step": np.asarray(step_idx, dtype=np.int64)}
    for key in data:
        traj[key] = np.stack(data[key]) if data[key] else np.zeros((0,))
    os.makedirs(out_dir, exist_ok=True)
    files = {"trajectories": os.path.join(out_dir, "trajectories.npz"),
             "summary": os.path.join(out_dir, "summary.json")}
    np.savez(files["trajectories"], **traj)
    if states is not None:
        files["states"] = states.close()
    if vid is not None:
        files["video"] = vid.close()
    if plan.checkpoint:
        files["checkpoint"] = scene.save_checkpoint(os.path.join(out_dir, "checkpoint.npz"))
    caps = scene.capabilities()
    summary = {
        "scene": {
            "name": plan.name,
            "file": os.path.abspath(plan.source) if os.path.exists(plan.source) else plan.source,
            "description": plan.description,
            "solvers": [s.name for s in scene.solvers],
            "couplers": [c.name for c in scene.couplers],
            "entities": [{"name": _entity_name(e, ep), "solver": e.solver.name,
                          "morph": type(ep.morph).__name__, "material": type(ep.material).__name__}
                         for ep, e in zip(plan.entities, entities, strict=True)],
            "capabilities": caps.to_dict(),
            "sim": {k: (list(v) if isinstance(v, tuple) else v)
                    for k, v in attrs.asdict(plan.sim).items()},
        },
        "n_envs": plan.n_envs,
        "steps": plan.steps,
        "record_every": plan.record_every,
        "n_records": len(times),
        "recorded": sorted(data),
        "sensors": {full: {"kind": s.kind, "outputs": [list(f) for f in s.fields], "stage": s.stage,
                           "in_step": s.in_step, "recorded": full in sensor_keys}
                    for full, s in ((s.full_name, s) for s in scene.sensors)},
        "video": dict(vid.summary(), render_s=render_s) if vid is not None else None,
        "final_time": times[-1],
        "timings": {
            "build_s": build_s,
            "first_step_s": first_step_s,
            "step_s": step_s,
            "loop_s": loop_s,
            "mean_step_s": step_s / timed if timed > 0 else None,
            "env_steps_per_s": n_env * timed / step_s if timed > 0 and step_s > 0 else None,
            "note": "first_step_s includes kernel loading/compilation and graph capture; step_s, "
                    "mean_step_s and env_steps_per_s cover steps 2..N (recording excluded)",
        },
        "final": {k: _value_summary(v[-1]) for k, v in traj.items() if k not in ("time", "step")},
        "versions": _versions(),
        "device": plan.sim.device,
        "nan_resets": [list(x) for x in scene.nan_envs],
        "states": ({"dir": files["states"], "n_records": states.n_records, "every": states.every,
                    "bytes": states.nbytes()} if states is not None else None),
    }
    with open(files["summary"], "w") as fh:
        json.dump(summary, fh, indent=2)
    if plot:
        path = write_plot(traj, os.path.join(out_dir, "plot.png"), plan.name)
        if path is not None:
            files["plot"] = path
        if plan.snapshots:
            path = write_snapshots(traj, os.path.join(out_dir, "snapshots.png"), plan.snapshots, plan.name)
            if path is not None:
                files["snapshots"] = path
            path = write_slices(traj, os.path.join(out_dir, "slices.png"), plan.snapshots, plan.name)
            if path is not None:
                files["slices"] = path
        if sensor_keys:
            path = write_sensor_plot(traj, {f: s for f, s in ((s.full_name, s) for s in traj_sensors)},
                                     os.path.join(out_dir, "sensors.png"), plan.name)
            if path is not None:
                files["sensors"] = path
    return RunResult(out_dir=out_dir, files=files, summary=summary, trajectories=traj)


def _states_recorder(plan: ScenePlan, scene, out_dir: str):
    """The recorder of RUN_DIR/states (docs/viewer.md), or None when [run.states] enabled = false."""
    st = plan.states
    if not st.get("enabled", True):
        return None
    from .viewer.recording import STATES_DIR, Recorder

    try:
        return Recorder(scene, os.path.join(out_dir, STATES_DIR), every=st.get("every", plan.record_every),
                        fields=st.get("fields", []), contacts=st.get("contacts", True), attach=False,
                        name=plan.name, record_now=False)
    except PolyphysError as exc:
        raise SceneFileError(f"{plan.source}: run.states: {exc}") from None


def run_file(path: str | os.PathLike | None = None, out_dir=None, steps: int | None = None,
             progress: bool | None = None, plot: bool = True, video: bool = True) -> RunResult:
    """``polyphys run``: parse ``path`` (default: the bundled default scene) and run it."""
    plan = parse_file(path if path is not None else default_scene_path())
    return run_plan(plan, out_dir=out_dir, steps=steps, progress=progress, plot=plot, video=video)


# -- plotting -----------------------------------------------------------------------------------
def _is_particles(key: str) -> bool:
    return "particle" in key or "vert" in key


def write_plot(traj: dict, path: str, title: str = "") -> str | None:
    """A 3D view of every recorded position path, x/y/z over time per position getter (env 0, first
    link), and for particle getters a 3D scatter of the final particle positions (env 0). Returns the
    path, or None when matplotlib is not installed or nothing is plottable."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    import numpy as np

    t = traj["time"]
    n_rec = len(t)
    series, clouds = [], []
    for key, arr in traj.items():
        if key in ("time", "step") or key.startswith("sensors") or arr.ndim < 2 or arr.shape[-1] != 3 \
                or arr.shape[0] != n_rec:
            continue
        if _is_particles(key):
            final = arr[-1].reshape(-1, arr.shape[-2], 3) if arr.ndim > 2 else arr[-1][None]
            clouds.append((key, final[0]))           # env 0
            if arr.ndim > 2:                         # the centroid's path: (n_rec, [env], 3)
                c = arr.mean(axis=-2)
                series.append((f"{key} (mean)", c[:, 0] if c.ndim > 2 else c))
        elif "pos" in key.rsplit("/", 1)[-1]:
            a = arr
            while a.ndim > 2:
                a = a[:, 0]        # (n_rec, [env], [link], 3): env 0, first link
            series.append((key, a))
    if not series and not clouds:
        return None
    n = len(series) + len(clouds) + (1 if series else 0)
    cols = min(n, 3)
    rows = (n + cols - 1) // cols
    fig = plt.figure(figsize=(5 * cols, 3.8 * rows))
    i = 0
    if series:
        i += 1
        ax = fig.add_subplot(rows, cols, i, projection="3d")
        for key, a in series:
            line, = ax.plot(a[:, 0], a[:, 1], a[:, 2], label=key)
            ax.scatter(*a[-1], color=line.get_color(), s=12)
        pts = np.concatenate([a for _, a in series])
        mid = (pts.max(0) + pts.min(0)) / 2
        half = max(float((pts.max(0) - pts.min(0)).max()) / 2, 0.05) * 1.05   # equal axes
        ax.set_xlim(mid[0] - half, mid[0] + half)
        ax.set_ylim(mid[1] - half, mid[1] + half)
        ax.set_zlim(mid[2] - half, mid[2] + half)
        ax.set_title("paths (env 0; dot: final)", fontsize=9)
        ax.set_xlabel("x [m]")
        ax.set_ylabel("y [m]")
        ax.set_zlabel("z [m]")
        ax.legend(fontsize=7)
    for key, a in series:
        i += 1
        ax = fig.add_subplot(rows, cols, i)
        for c, lab in enumerate("xyz"):
            ax.plot(t, a[:, c], label=lab)
        ax.set_xlabel("time [s]")
        ax.set_ylabel("position [m]")
        ax.set_title(key, fontsize=9)
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    for key, pts in clouds:
        i += 1
        ax = fig.add_subplot(rows, cols, i, projection="3d")
        p = np.asarray(pts).reshape(-1, 3)
        ax.scatter(p[:, 0], p[:, 1], p[:, 2], s=2, c=p[:, 2], cmap="viridis")
        ax.set_title(f"{key} (final, env 0)", fontsize=9)
        ax.set_xlabel("x [m]")
        ax.set_ylabel("y [m]")
        ax.set_zlabel("z [m]")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_sensor_plot(traj: dict, sensors: dict, path: str, title: str = "") -> str | None:
    """One panel per sensor: each output component over time (env 0), the measured reading as a
    line and the ground truth dashed. Returns the path, or None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    import numpy as np

    t = traj["time"]
    names = sorted(sensors)
    if not names:
        return None
    cols = min(len(names), 3)
    rows = (len(names) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.2 * rows), squeeze=False)
    for ax, full in zip(axes.flat, names, strict=False):
        meas, truth = traj[f"sensors/{full}"], traj[f"sensors_truth/{full}"]
        while meas.ndim > 2:            # (n_records, n_envs, dim): env 0
            meas, truth = meas[:, 0], truth[:, 0]
        labels = [f"{name}[{i}]" if w > 1 else name for name, w, _ in sensors[full].fields for i in range(w)]
        for c in range(meas.shape[1]):
            line, = ax.plot(t, meas[:, c], lw=1, label=labels[c] if c < len(labels) else str(c))
            if not np.array_equal(meas[:, c], truth[:, c], equal_nan=True):
                ax.plot(t, truth[:, c], lw=1, ls="--", color=line.get_color())
        ax.set_title(f"{full} ({sensors[full].kind})", fontsize=9)
        ax.set_xlabel("time [s]")
        ax.grid(alpha=0.3)
        if meas.shape[1] <= 9:
            ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    fig.suptitle(f"{title}: sensors (env 0; dashed: ground truth)" if title else "sensors (env 0)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_snapshots(traj: dict, path: str, n: int, title: str = "") -> str | None:
    """Side views (x horizontal, z up; env 0) of the scene at ``n`` evenly spaced recorded times:
    every recorded particle getter as a point cloud, every other recorded position (first link)
    as a large marker. Returns the path, or None without matplotlib or anything to draw."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    import numpy as np

    t = traj["time"]
    n_rec = len(t)
    layers = []                                   # (key, is_particles, (n_rec, m, 3))
    for key, arr in traj.items():
        if key in ("time", "step") or key.startswith("sensors") or arr.ndim < 2 or arr.shape[-1] != 3 \
                or arr.shape[0] != n_rec:
            continue
        if _is_particles(key):
            a = arr
            while a.ndim > 3:
                a = a[:, 0]                       # env 0
            layers.append((key, True, a.reshape(n_rec, -1, 3)))
        elif "pos" in key.rsplit("/", 1)[-1]:
            a = arr
            while a.ndim > 2:
                a = a[:, 0]                       # env 0, first link
            layers.append((key, False, a[:, None, :]))
    if not layers or n_rec == 0:
        return None
    idx = sorted({int(round(i)) for i in np.linspace(0, n_rec - 1, min(int(n), n_rec))})
    pts = np.concatenate([a[idx].reshape(-1, 3) for _, _, a in layers])
    lo, hi = pts.min(0), pts.max(0)
    pad = 0.05 * max(float((hi - lo)[[0, 2]].max()), 0.05)
    cols = min(len(idx), 4)
    rows = (len(idx) + cols - 1) // cols
    aspect = float(hi[2] - lo[2] + 2 * pad) / float(hi[0] - lo[0] + 2 * pad)
    panel_h = min(max(4.2 * aspect, 1.2), 6.0) + 1.0
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, panel_h * rows + 0.6), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, r in zip(axes.flat, idx, strict=False):
        for c, (key, cloud, a) in enumerate(layers):
            p = a[r]
            if cloud:
                ax.scatter(p[:, 0], p[:, 2], s=1, color=colors[c % len(colors)], label=key)
            else:
                ax.scatter(p[:, 0], p[:, 2], s=60, marker="o", edgecolors="k",
                           color=colors[c % len(colors)], label=key, zorder=3)
        ax.set_xlim(lo[0] - pad, hi[0] + pad)
        ax.set_ylim(lo[2] - pad, hi[2] + pad)
        ax.set_aspect("equal")
        ax.set_title(f"t = {t[r]:.3f} s", fontsize=9)
        ax.set_xlabel("x [m]")
        ax.set_ylabel("z [m]")
    for ax in list(axes.flat)[len(idx):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=6, markerscale=2, loc="upper right")
    fig.suptitle(f"{title} (side view, env 0)" if title else "side view, env 0")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _is_slice(key: str) -> bool:
    return "slice" in key.rsplit("/", 1)[-1]


def write_slices(traj: dict, path: str, n: int, title: str = "") -> str | None:
    """Every recorded 2D field — a getter or ``as`` name containing "slice", e.g. a grid solver's
    density on a plane, (n_records, [n_envs,] n1, n2) — as images at ``n`` evenly spaced recorded
    times (env 0; first axis horizontal, second vertical; one colour scale per field). Returns the
    path, or None without matplotlib or any such field."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    import numpy as np

    t = traj["time"]
    n_rec = len(t)
    fields = []
    for key, arr in traj.items():
        if key in ("time", "step") or not _is_slice(key) or arr.ndim < 3 or arr.shape[0] != n_rec:
            continue
        a = arr
        while a.ndim > 3:
            a = a[:, 0]                            # env 0
        fields.append((key, np.asarray(a, dtype=float)))
    if not fields or n_rec == 0:
        return None
    idx = sorted({int(round(i)) for i in np.linspace(0, n_rec - 1, min(int(n), n_rec))})
    n1, n2 = fields[0][1].shape[1:]
    panel = 2.6
    fig, axes = plt.subplots(len(fields), len(idx), squeeze=False,
                             figsize=(panel * len(idx) + 1.2, panel * len(fields) * min(max(n2 / n1, 0.4), 2.5) + 0.6))
    for r, (key, a) in enumerate(fields):
        lo, hi = float(np.nanmin(a[idx])), float(np.nanmax(a[idx]))
        im = None
        for c, i in enumerate(idx):
            ax = axes[r, c]
            im = ax.imshow(a[i].T, origin="lower", vmin=lo, vmax=hi if hi > lo else lo + 1e-12, cmap="viridis")
            ax.set_title(f"{key}\nt = {t[i]:.3f} s" if c == 0 else f"t = {t[i]:.3f} s", fontsize=8)
            ax.set_xticks([])
            ax.set_yticks([])
        fig.colorbar(im, ax=axes[r, :].tolist(), shrink=0.85)
    fig.suptitle(f"{title} (slices, env 0)" if title else "slices, env 0")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
