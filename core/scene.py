"""Scene: entities, solvers and couplers composed through the registry, and the user-facing loop.

``Scene.step()``: pre-step callbacks (one returning True skips the step) -> pre-step recorders ->
``Simulator.step()`` (sensors are evaluated inside it, in the captured step) -> recorders.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
import time
import warnings
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

import numpy as np

from . import arrays
from .concurrency import WARP_LOCK, SceneGuard
from .errors import (
    BuildError,
    CapabilityError,
    CheckpointError,
    OptionError,
    PolyphysError,
    PolyphysWarning,
    SceneStateError,
)
from .interfaces import Entity, check_options
from .layout import Layout, partitions_per_thread, split_envs
from .morphs import Morph
from .options import SimOptions
from .registry import registry
from .specs import Capabilities, load_target
from .views import VIEW_PROTOCOLS

CHECKPOINT_FORMAT = 2       # 2: a content digest of every array in the metadata
MAX_ENVS = 2**31 - 1         # Warp launch dimensions are 32-bit


class Scene:
    """A composed simulation.

    :param sim: SimOptions (dt, substeps, gravity, precision, device, graph_capture, cpu_threads).
    :param plugins: restrict the scene to these plugin names (entry-point or spec names).
    :param coupler: None (default couplers attach where views match), False (no coupler), a coupler
        name, a coupler options object, or a list of names/options.
    :param solver_options: ``<solver name>=<its options>``, e.g. ``kinematic=KinematicOptions()``.
    """

    def __init__(self, sim: SimOptions | None = None, *, plugins=None, coupler=None, **solver_options):
        if sim is None:
            sim = SimOptions()
        if not isinstance(sim, SimOptions):
            raise OptionError(f"Scene(sim=...) must be polyphys.SimOptions, got {type(sim).__name__}")
        self.sim_options = sim
        reg = registry()
        self._plugins = reg.check_plugin_names(plugins, "Scene(plugins=...)") if plugins is not None else None
        self._solver_options: dict[str, Any] = {}
        for name, opts in solver_options.items():
            rec = reg.get("solver", name, self._plugins)   # unknown name -> lists the known ones
            opt_type = load_target(rec.spec.options) if rec.spec.options else None
            if opt_type is not None:
                opts = check_options(name, opt_type, opts)
            self._solver_options[name] = opts
        self._coupler_request = coupler
        self.entities: list[Entity] = []
        self._solvers: dict[str, Any] = {}
        self.couplers: list = []
        self.sensors: list = []
        self._pre_step_callbacks: list[Callable] = []
        self._recorders: list[tuple[str, Callable]] = []
        self.built = False
        self.batched = False
        self.n_envs = 0
        self.layout: Layout | None = None
        self.simulator = None
        self.sensor_hub = None
        self._global_env_offset = 0          # set_global_env_offset: keys the per-env noise streams
        self.kernel_loads: list = []         # polyphys.startup.ModuleLoad records of build()
        self._step_count: np.ndarray | None = None
        self.nan_envs: list[tuple[int, int]] = []      # (step, env) of every NaN reset
        self.timings = {"build_s": 0.0, "step_s": 0.0, "steps": 0}
        self._guard = SceneGuard()           # one thread inside the scene at a time
        self._broken: str | None = None      # why the scene is unusable (a step failed midway)

    # -- composition ---------------------------------------------------------------------------
    def _solver_for(self, name: str):
        if name in self._solvers:
            return self._solvers[name]
        rec = registry().get("solver", name, self._plugins)
        from .startup import init_warp

        init_warp()         # before any plugin code can touch Warp: quiet start-up (polyphys.startup)
        cls = rec.load()
        opt_type = load_target(rec.spec.options) if rec.spec.options else getattr(cls, "options_type", None)
        opts = self._solver_options.get(name)
        if opt_type is not None:
            opts = check_options(name, opt_type, opts)
        solver = cls(self, opts, rec.spec)
        self._solvers[name] = solver
        return solver

    def add_entity(self, morph: Morph, material=None, surface=None, name: str | None = None, **kwargs) -> Entity:
        """Add an entity; the solver owning the material's most-derived registered class takes it."""
        if self.built:
            raise SceneStateError("add_entity after build: add every entity before scene.build()")
        if not isinstance(morph, Morph):
            raise OptionError(f"morph must be a polyphys.morphs.Morph, got {type(morph).__name__}")
        if material is None:
            raise OptionError("add_entity(material=None): give a material, e.g. "
                              "polyphys.materials.Kinematic(); known materials are listed by "
                              "`polyphys plugins`")
        rec = registry().material_owner(material, self._plugins)
        solver = self._solver_for(rec.spec.solver)
        if name is not None and any(e.name == name for e in self.entities):
            raise OptionError(f"add_entity(name={name!r}): an entity with that name exists")
        try:
            entity = solver.add_entity(morph, material, surface, name=name, **kwargs)
        except (MemoryError, ValueError, RuntimeError) as exc:
            if not _out_of_memory(exc):
                raise
            raise OptionError(f"add_entity({type(morph).__name__}, {type(material).__name__}): the entity is too "
                              f"large to sample or allocate ({type(exc).__name__}: {exc}); check the morph's size "
                              f"and the solver's particle spacing") from None
        entity.uid = len(self.entities)
        self.entities.append(entity)
        self._add_described_sensors(entity)
        return entity

    def solver(self, name: str):
        """The live solver object named ``name`` (e.g. ``scene.solver("rigid")``)."""
        if name not in self._solvers:
            raise OptionError(f"scene has no solver {name!r}; active solvers: {sorted(self._solvers)}")
        return self._solvers[name]

    @property
    def solvers(self) -> list:
        """Active solvers in their documented run order: ascending (spec.order, name)."""
        return sorted(self._solvers.values(), key=lambda s: (s.spec.order, s.name))

    def add_pre_step_callback(self, fn: Callable[[Scene], Any]) -> None:
        """``fn(scene)`` runs before each step; returning True skips that step."""
        self._pre_step_callbacks.append(fn)

    def add_recorder(self, fn: Callable[[Scene], Any], when: str = "post") -> None:
        if when not in ("pre", "post"):
            raise OptionError(f"add_recorder(when={when!r}): allowed 'pre' or 'post'")
        self._recorders.append((when, fn))

    def add_viewer(self, port: int = 8080, **kwargs):
        """Serve this built scene in the browser and follow every step (``polyphys.viewer.live``;
        needs the ``viewer`` extra). Returns the Viewer (``.url``, ``.close()``)."""
        self._require_built("add_viewer()")
        from .viewer import live

        return live(self, port=port, **kwargs)

    def add_sensor(self, kind: str, entity: Entity | None = None, name: str | None = None, **kwargs):
        """Add a sensor of a registered kind (``polyphys plugins`` lists them; docs/sensors.md) to
        ``entity``; ``name`` must be unique among the entity's sensors (default: the kind, numbered).
        Measurement-model keywords (noise, bias, drift, resolution, limits, delay, delay_buffer,
        seed) apply to every kind; the rest are the kind's own."""
        if self.built:
            raise SceneStateError("add_sensor after build: add sensors before scene.build()")
        rec = registry().get("sensor", kind, self._plugins)
        if entity is not None and not isinstance(entity, Entity):
            raise OptionError(f"add_sensor({kind!r}, entity={entity!r}): expected an entity from scene.add_entity")
        taken = entity.sensors if entity is not None else {s.name: s for s in self.sensors if s.entity is None}
        if name is None:
            i = 0
            while f"{kind}{i}" in taken:
                i += 1
            name = f"{kind}{i}"
        if not isinstance(name, str) or not name or "/" in name:
            raise OptionError(f"add_sensor({kind!r}, name={name!r}): a non-empty name without '/'")
        if name in taken:
            where = f"entity {entity.name!r}" if entity is not None else "the scene"
            raise OptionError(f"add_sensor({kind!r}, name={name!r}): {where} has a sensor of that name")
        from .startup import init_warp

        init_warp()
        cls = rec.load()
        try:
            sensor = cls(self, rec.spec, entity, name=name, **kwargs)
        except TypeError as exc:
            import inspect

            from .options import suggest

            allowed = sorted({p for k in type.mro(cls) if "__init__" in k.__dict__
                              for p in inspect.signature(k.__init__).parameters
                              if p not in ("self", "scene", "spec", "entity", "kwargs")})
            unknown = [k for k in kwargs if k not in allowed]
            hints = [f"{k!r}: did you mean {h!r}?" for k in unknown if (h := suggest(k, allowed)) is not None]
            raise OptionError(f"add_sensor({kind!r}): {exc}" + (f"; {' '.join(hints)}" if hints else "")
                              + f"; allowed arguments: {allowed}") from None
        self.sensors.append(sensor)
        if entity is not None:
            entity.sensors[name] = sensor
        return sensor

    def _add_described_sensors(self, entity: Entity) -> None:
        """Sensors an importer found in the entity's model file (MJCF <sensor>): added as the
        polyphys kinds the importer mapped them to; a kind that is not installed is named in one
        warning."""
        desc = getattr(entity, "description", None)
        records = getattr(desc, "sensors", None) or []
        missing = []
        known = {r.name for r in registry().all("sensor", self._plugins)}
        for rec in records:
            if rec.kind not in known:
                missing.append(f"{rec.name} ({rec.source or rec.kind})")
                continue
            self.add_sensor(rec.kind, entity, name=rec.name, **dict(rec.options))
        if missing:
            import warnings

            from .errors import PolyphysWarning

            warnings.warn(PolyphysWarning(
                f"entity {entity.name!r}: sensors of its model file not added (their sensor kinds are not "
                f"installed or are disabled): {', '.join(missing)}"), stacklevel=3)

    def capabilities(self) -> Capabilities:
        """The composed scene's capabilities: the intersection over solvers, couplers, sensors."""
        return Capabilities.intersect([p.capabilities for p in self._parts()])

    def _parts(self) -> list:
        return [*self.solvers, *self.couplers, *[s for s in self.sensors]]

    def _require(self, capability: str, detail: str = "", value=None) -> None:
        for p in self._parts():
            caps = p.capabilities
            ok = getattr(caps, capability) if value is None else value in getattr(caps, capability)
            if not ok:
                raise CapabilityError(p.name if hasattr(p, "name") else type(p).__name__,
                                      capability if value is None else f"{capability}={value}", detail)

    # -- build ---------------------------------------------------------------------------------
    def build(self, n_envs: int = 0) -> None:
        if self.built:
            raise SceneStateError("scene.build() called twice")
        if isinstance(n_envs, bool) or not isinstance(n_envs, (int, np.integer)) or not 0 <= n_envs <= MAX_ENVS:
            raise OptionError(f"build(n_envs={n_envs!r}): must be an integer in [0, {MAX_ENVS}] (0: no batch "
                              f"axis; Warp launch dimensions are 32-bit)")
        if not self._solvers:
            raise SceneStateError("scene.build() with no entity: add at least one entity first")
        with self._guard.enter("build()"), WARP_LOCK.exclusive():
            try:
                self._build(int(n_envs))
            except (MemoryError, ValueError, RuntimeError) as exc:
                if not _out_of_memory(exc):
                    raise
                self.layout = None
                raise BuildError(f"build(n_envs={n_envs}): out of memory allocating the scene's arrays "
                                 f"({type(exc).__name__}: {exc}); use fewer envs or smaller solver domains") from None

    def _build(self, n_envs: int) -> None:
        t0 = time.perf_counter()
        sim = self.sim_options
        n_envs = int(n_envs)
        if n_envs > 0:
            self._require("batch", f"n_envs={n_envs} needs a batched solver (use n_envs=0)")
        self._require("precisions", "set SimOptions(precision=...) to a supported one", sim.precision)
        self._require("devices", f"SimOptions(device={sim.device!r})", sim.device_kind)
        from .startup import init_warp

        wp = init_warp()
        if sim.device_kind == "cuda" and not wp.is_cuda_available():
            raise OptionError(f"SimOptions(device={sim.device!r}): no CUDA device is available here; "
                              f"use device='cpu'")
        self._check_dt()
        n = max(1, n_envs)
        threads = sim.threads_for(n)
        parts = split_envs(n, threads, partitions_per_thread(n, threads, sim.cpu_partitions_per_thread))
        self.layout = Layout(n_envs=n, batched=n_envs > 0, device=sim.device, precision=sim.precision,
                             dt=sim.dt, substeps=sim.substeps, gravity=sim.gravity, partitions=parts,
                             thread_count=threads if len(parts) > threads else 0)
        self.batched, self.n_envs = n_envs > 0, n_envs
        with wp.ScopedDevice(sim.device):
            # couplers are chosen (not built) before the solvers are built, so that every kernel
            # module the scene launches compiles in one parallel batch first
            self.couplers = self._make_couplers()
            self.kernel_loads = self._load_kernels()
            for s in self.solvers:
                s.layout = self.layout
                s.build(self.layout)
            self._require("precisions", "set SimOptions(precision=...) to one every coupler supports",
                          sim.precision)
            self._require("devices", f"SimOptions(device={sim.device!r})", sim.device_kind)
            self._warn_untested_device(sim.device_kind)
            for c in self.couplers:
                c.build(self.layout)
            self.sensor_hub = None
            if self.sensors:
                from .sensors import SensorHub

                self.sensor_hub = SensorHub(self, self.sensors, self.layout)
                self.sensor_hub.env_base.fill_(self._global_env_offset)
            for p in [*self.solvers, *self.couplers]:
                p.register_initial()
        from .simulator import Simulator

        self.simulator = Simulator(self, self.solvers, self.couplers, self.layout, sim.graph_capture,
                                   sim.nan_policy, sensors=self.sensor_hub)
        self._step_count = np.zeros(n, dtype=np.int64)
        self.built = True
        self.timings["build_s"] = time.perf_counter() - t0

    def _warn_untested_device(self, kind: str) -> None:
        untested = [getattr(p, "name", type(p).__name__) for p in self._parts()
                    if kind not in p.capabilities.tested_devices]
        if untested:
            warnings.warn(f"device {kind!r}: the kernels of {untested} compile for it but their tests have "
                          f"never run there (Capabilities.tested_devices)", PolyphysWarning, stacklevel=3)

    def _load_kernels(self) -> list:
        """Compile (in parallel) and load the Warp modules the solvers, couplers and sensors declare
        for this layout, with one notice per plugin that compiles (polyphys.startup)."""
        from .kernels import envs
        from .startup import load_kernel_modules, package_of

        layout = self.layout
        groups = []
        for label, part in ([(s.name, s) for s in self.solvers] + [(f"{c.name} coupler", c) for c in self.couplers]
                            + [(f"{x.kind} sensor", x) for x in self.sensors]):
            mods = part.kernel_modules(layout)
            groups.append((label, None if mods is None else list(mods), package_of(part)))
        core = [envs]
        if any(s.in_step for s in self.sensors):      # the measurement kernels (cameras on demand: none)
            from .kernels import sensors as sensor_kernels

            core.append(sensor_kernels)
        # the core's own modules are counted with the first solver: one notice per plugin
        first = next((i for i, g in enumerate(groups) if g[1] is not None), None)
        if first is None:
            groups.append((groups[0][0] if groups else "polyphys", core))
        else:
            groups[first] = (groups[first][0], groups[first][1] + core, groups[first][2])
        return load_kernel_modules(groups, layout.device)

    def _check_dt(self) -> None:
        h = self.sim_options.h
        for s in self.solvers:
            want = getattr(s.options, "dt", None)
            if want is None:
                continue
            if abs(want - h) > 1e-9 * h:
                n = self.sim_options.dt / want
                hint = (f"set SimOptions(substeps={round(n)})" if abs(n - round(n)) < 1e-9 and n >= 1
                        else "its dt must divide the scene dt into an integer number of substeps")
                raise BuildError(f"solver {s.name!r} asks for dt={want} but the scene substep is "
                                 f"h = dt/substeps = {self.sim_options.dt}/{self.sim_options.substeps} "
                                 f"= {h}; {hint}")

    def _make_couplers(self) -> list:
        req = self._coupler_request
        reg = registry()
        specs = reg.all("coupler", self._plugins)
        solvers = self.solvers
        claimed: dict[tuple[str, str], str] = {}
        chosen: list[tuple[Any, Any]] = []      # (record, options)
        if req is False:
            return []
        if req is None:
            chosen = [(r, None) for r in specs if r.spec.default]
        else:
            for item in (req if isinstance(req, (list, tuple)) else [req]):
                if isinstance(item, str):
                    chosen.append((reg.get("coupler", item, self._plugins), None))
                    continue
                match = [r for r in specs if r.spec.options and isinstance(item, load_target(r.spec.options))]
                if not match:
                    raise OptionError(f"Scene(coupler={item!r}): not the options of any registered "
                                      f"coupler; couplers: {[r.name for r in specs]}")
                chosen.append((match[0], item))
        def pairs_of(rec):
            va, vb = (VIEW_PROTOCOLS[v] for v in rec.spec.couples)
            return [(a, b) for a in solvers for b in solvers
                    if (a is not b or rec.spec.self_pairs) and a.view(va) is not None and b.view(vb) is not None]

        # Who couples a pair two couplers could both couple: among default couplers the lower
        # priority value; among requested ones the coupler listed first (coupler=[SapOptions(), "legacy"]:
        # SAP takes rigid–rigid and rigid–FEM, Legacy the remaining rigid–particle pairs). The couplers
        # then run in priority order whatever the list order.
        claim_order = chosen if req is not None else sorted(chosen, key=lambda x: (x[0].spec.priority, x[0].name))
        for i, (rec, _) in enumerate(claim_order):
            if req is not None and any(r is rec for r, _ in claim_order[:i]):
                raise BuildError(f"Scene(coupler=...): coupler {rec.name!r} is listed twice; list each coupler once")
            for a, b in pairs_of(rec):
                claimed.setdefault((a.name, b.name), rec.name)
        couplers = []
        for rec, opts in sorted(chosen, key=lambda x: (x[0].spec.priority, x[0].name)):
            own = [(a, b) for a, b in pairs_of(rec) if claimed[(a.name, b.name)] == rec.name]
            if not own:
                if req is not None:
                    taken = {f"{a.name}–{b.name}": claimed[(a.name, b.name)] for a, b in pairs_of(rec)}
                    if taken:
                        raise BuildError(f"coupler {rec.name!r}: every solver pair it couples is taken by a coupler "
                                         f"listed before it ({taken}); drop it or list it first")
                    raise BuildError(f"coupler {rec.name!r} found no solver pair exposing "
                                     f"{rec.spec.couples}; solvers: {[s.name for s in solvers]}")
                continue
            cls = rec.load()
            opt_type = load_target(rec.spec.options) if rec.spec.options else cls.options_type
            couplers.append(cls(self, check_options(rec.name, opt_type, opts), rec.spec, own))
        return couplers

    # -- stepping ------------------------------------------------------------------------------
    def _require_built(self, what: str) -> None:
        if not self.built:
            raise SceneStateError(f"{what} before build: call scene.build() first")

    @contextmanager
    def _entry(self, what: str, usable: bool = True):
        """A public call that touches Warp: built, one thread at a time, the process-wide Warp lock
        held exclusively (polyphys.concurrency), and (``usable``) not after a failed step."""
        self._require_built(what)
        with self._guard.enter(what):
            if usable:
                self._check_usable(what)
            with WARP_LOCK.exclusive():
                yield

    def _check_usable(self, what: str) -> None:
        if self._broken is not None:
            raise SceneStateError(f"{what}: the scene is unusable: {self._broken}. The solver state may be "
                                  f"partly advanced; scene.reset() (all envs) or load_checkpoint() restores a "
                                  f"consistent state")

    def step(self) -> bool:
        """Advance one step (dt). Returns False when a pre-step callback skipped it.

        A step that fails midway (an exception other than the polyphys errors raised by the checks
        after a complete step) leaves the step count unchanged and marks the scene unusable until
        ``reset()`` or ``load_checkpoint()``. Calling ``step()`` while another thread is inside this
        scene raises ``SceneStateError``; different scenes may step in parallel threads."""
        self._require_built("step()")
        with self._guard.enter("step()"):
            self._check_usable("step()")
            for cb in self._pre_step_callbacks:
                if cb(self) is True:
                    return False
            for when, fn in self._recorders:
                if when == "pre":
                    fn(self)
            t0 = time.perf_counter()
            self._step_count += 1
            try:
                self.simulator.step()
            except PolyphysError:
                raise           # found by the checks after a complete step: the step happened
            except BaseException as exc:
                self._step_count -= 1
                self._broken = (f"step {int(self._step_count.max()) + 1} failed midway with "
                                f"{type(exc).__name__}: {exc}")
                self.simulator.invalidate()
                raise
            self.timings["step_s"] += time.perf_counter() - t0
            self.timings["steps"] += 1
            for when, fn in self._recorders:
                if when == "post":
                    fn(self)
            return True

    def forward(self) -> None:
        """Refresh kinematics (and contacts/forces where a solver has them) without advancing time."""
        import warp as wp

        with self._entry("forward()"), wp.ScopedDevice(self.layout.device):
            for s in self.solvers:
                s.forward()

    def get_time(self, envs_idx=None):
        """Per-env time = step count × dt (a scalar for an unbatched scene)."""
        self._require_built("get_time()")
        envs = self._envs_idx(envs_idx)
        t = self._step_count[envs] * self.sim_options.dt
        return float(t[0]) if not self.batched else t

    def get_step_count(self, envs_idx=None):
        self._require_built("get_step_count()")
        envs = self._envs_idx(envs_idx)
        c = self._step_count[envs].copy()
        return int(c[0]) if not self.batched else c

    def set_global_env_offset(self, offset: int) -> None:
        """Declare this scene's envs to be envs ``offset … offset + n_envs − 1`` of a larger batch
        (a ScenePool worker's share): the per-env random streams of the sensors' noise and drift are
        keyed by that global index, so a pool of scenes draws what one scene of all the envs draws
        (docs/sensors.md, "Measurement models"). Default 0; may be set before or after build."""
        if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)) or not 0 <= int(offset) < 2**31 - 2**24:
            raise OptionError(f"set_global_env_offset(offset={offset!r}): expected an int in [0, {2**31 - 2**24})")
        with self._guard.enter("set_global_env_offset()"), WARP_LOCK.exclusive():
            self._global_env_offset = int(offset)
            if self.sensor_hub is not None:
                self.sensor_hub.env_base.fill_(self._global_env_offset)

    def read_sensors(self, envs_idx=None, ground_truth: bool = False) -> dict:
        """Every sensor's reading of the last step: {full name ("entity/sensor"): Reading} (sensors
        with ``in_step = False``, such as cameras rendered on demand, have none)."""
        with self._entry("read_sensors()"):
            if self.sensor_hub is None:
                return {}
            sensors = self.sensor_hub.sensors            # those evaluated in the step (in_step)
            readings = self.sensor_hub.read_many(sensors, envs_idx, ground_truth)
            return {s.full_name: r for s, r in zip(sensors, readings, strict=True)}

    def sensor(self, full_name: str):
        """The sensor named ``"entity/sensor"`` (or a scene-level sensor's own name)."""
        for s in self.sensors:
            if s.full_name == full_name:
                return s
        raise OptionError(f"scene has no sensor {full_name!r}; sensors: {[s.full_name for s in self.sensors]}")

    def _envs_idx(self, envs_idx) -> np.ndarray:
        return arrays.normalize_envs_idx(envs_idx, self.layout.n_envs, self.batched)

    # -- state ---------------------------------------------------------------------------------
    def get_state(self) -> dict:
        """Per-solver states (NumPy copies) and step counts; refreshes kinematics first."""
        with self._entry("get_state()"):
            self.forward()
            return {
                "solvers": {s.name: s.get_state() for s in self.solvers},
                "couplers": {c.name: c.get_state() for c in self.couplers},
                "sensors": self.sensor_hub.get_state() if self.sensor_hub is not None else {},
                "step_count": self._step_count.copy(),
            }

    def reset(self, state: dict | None = None, envs_idx=None) -> None:
        """Restore the registered initial state (or ``state``, which is then registered), for all
        envs or only ``envs_idx``; zero their step counts; restart couplers and sensors.

        ``state`` is validated whole before anything is written (every solver's and coupler's
        arrays: shapes, real numbers, finite in the storage precision); a refused state changes
        nothing. A reset of all envs also makes a scene usable again after a failed step."""
        # a reset of every env is allowed on an unusable scene (it restores a consistent state)
        with self._entry("reset()", usable=envs_idx is not None):
            if envs_idx is not None:
                self._require("reset_envs", "reset(envs_idx=...) needs isolated per-env reset")
            envs = self._envs_idx(envs_idx)
            import warp as wp

            with wp.ScopedDevice(self.layout.device):
                if state is not None:
                    checked = self._check_state(state, None if envs_idx is None else envs)
                    sensor_state = self._check_sensor_state(state.get("sensors"), "reset(state=...)", OptionError)
                    for p, vals in checked:
                        p.set_state(None, None if envs_idx is None else envs, checked=vals)
                    if self.sensor_hub is not None:
                        if sensor_state:
                            self.sensor_hub.set_state(sensor_state, envs)
                        else:
                            self.sensor_hub.reset(envs)
                    if envs_idx is None:
                        for p in [*self.solvers, *self.couplers]:
                            p.register_initial()
                else:
                    for p in [*self.solvers, *self.couplers]:
                        p.reset(None if envs_idx is None else envs)
                    if self.sensor_hub is not None:
                        self.sensor_hub.reset(envs)
            self._step_count[envs] = 0
            if envs_idx is None:
                self._broken = None

    def _check_state(self, state: dict, envs) -> list:
        """[(solver or coupler, validated arrays)] for ``reset(state=...)``; OptionError naming the
        solver, the array and the problem, before anything is written."""
        if not isinstance(state, dict) or not isinstance(state.get("solvers"), dict):
            raise OptionError(f"reset(state=...): expected a dict from scene.get_state(), got "
                              f"{type(state).__name__}{'' if not isinstance(state, dict) else ' without solvers'}")
        have, want = set(state["solvers"]), {s.name for s in self.solvers}
        if have != want:
            raise OptionError(f"reset(state=...): state holds solvers {sorted(have)}, this scene has "
                              f"{sorted(want)}")
        couplers = state.get("couplers", {})
        if not isinstance(couplers, dict):
            raise OptionError(f"reset(state=...): state['couplers'] is {type(couplers).__name__}; expected a dict")
        out = [(s, s.check_state(state["solvers"][s.name], envs, OptionError, f"reset(state=...): solver {s.name!r}"))
               for s in self.solvers]
        out += [(c, c.check_state(couplers.get(c.name, {}), envs, OptionError, f"reset(state=...): coupler {c.name!r}"))
                for c in self.couplers]
        return out

    def _check_sensor_state(self, state, what: str, error: type, required: bool = False) -> dict | None:
        """The sensor hub's state arrays from ``state`` checked whole (names, shapes, real numbers)
        before anything is written; None when the scene has no sensors or ``state`` holds none (then
        the sensors are reset). ``error`` names what is wrong."""
        if self.sensor_hub is None:
            return None
        if not state:
            if required:
                raise error(f"{what}: no sensor state, but this scene has sensors {[s.full_name for s in self.sensors]}")
            return None
        if not isinstance(state, dict):
            raise error(f"{what}: sensor state is {type(state).__name__}; expected a dict from scene.get_state()")
        out = {}
        for k, dst in self.sensor_hub.state_arrays().items():
            if k not in state:
                raise error(f"{what}: sensor state lacks {k!r}; it holds {sorted(state)}")
            src = np.asarray(state[k])
            want = tuple(dst.shape) + tuple(getattr(dst.dtype, "_shape_", ()))
            if src.shape not in (tuple(dst.shape), want) or src.dtype.kind not in "biuf":
                raise error(f"{what}: sensor state {k!r} is {src.dtype}{list(src.shape)}; this scene needs "
                            f"shape {list(dst.shape)} of real numbers")
            out[k] = src
        return out

    def _reset_envs_after_nan(self, envs: np.ndarray) -> None:
        for s in [*self.solvers, *self.couplers]:
            s.reset(envs)
        if self.sensor_hub is not None:
            self.sensor_hub.reset(envs)
        for e in envs:
            self.nan_envs.append((int(self._step_count[e]), int(e)))
        self._step_count[envs] = 0

    # -- checkpoints ---------------------------------------------------------------------------
    def layout_digest(self) -> str:
        """A digest of what the scene is made of: a checkpoint only loads into the same scene."""
        desc = {
            "solvers": [s.name for s in self.solvers],
            "couplers": [c.name for c in self.couplers],
            "entities": [[e.solver.name, type(e.morph).__name__, repr(e.morph), repr(e.material)]
                         for e in self.entities],
            "n_envs": self.n_envs,
            "precision": self.sim_options.precision,
            "dt": self.sim_options.dt,
            "substeps": self.sim_options.substeps,
            "state": {s.name: {k: [list(a.shape), str(a.dtype)] for k, a in s.state_arrays().items()}
                      for s in self.solvers},
        }
        if self.sensor_hub is not None:       # absent without sensors: older checkpoints keep loading
            desc["sensors"] = self.sensor_hub.describe()
        return hashlib.sha256(json.dumps(desc, sort_keys=True, default=str).encode()).hexdigest()

    def _metadata(self) -> dict:
        from . import __version__

        return {
            "format": CHECKPOINT_FORMAT,
            "polyphys_version": __version__,
            "plugins": {p.name: registry().get(k, p.name).provider.version
                        for k, group in (("solver", self.solvers), ("coupler", self.couplers))
                        for p in group},
            "layout_digest": self.layout_digest(),
            "n_envs": self.n_envs,
            "precision": self.sim_options.precision,
            "device": self.sim_options.device,
        }

    def save_checkpoint(self, path: str | os.PathLike) -> str:
        """Write every solver's and coupler's full data, step counts and metadata to ``path``.

        The file is an ``.npz`` whose metadata carries a SHA-256 digest of every array (names,
        dtypes, shapes, bytes), so damage and edits are detected on load. It is written to a
        temporary file in the same folder and renamed over ``path``: a crash or a full disk never
        leaves a half-written checkpoint under that name. A non-finite state (left by
        ``nan_policy="raise"``) is refused with ``CheckpointError``: it could not be loaded."""
        with self._entry("save_checkpoint()"):
            self._require("checkpoint", "save_checkpoint needs every solver and coupler to checkpoint")
            data: dict[str, np.ndarray] = {"__step_count__": self._step_count.copy()}
            for group, prefix in ((self.solvers, "solver"), (self.couplers, "coupler")):
                for p in group:
                    dump = p.dump()
                    # the file must load again: no non-finite state (left by nan_policy="raise", say)
                    p.check_load(dump, f"save_checkpoint({os.fspath(path)!r}): {prefix} {p.name!r}")
                    for k, v in dump.items():
                        data[f"{prefix}/{p.name}/{k}"] = np.asarray(v)
            if self.sensor_hub is not None:
                for k, v in self.sensor_hub.dump().items():
                    data[f"sensors/{k}"] = np.asarray(v)
            meta = {**self._metadata(), "digest": _content_digest(data)}
            data["__meta__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
            path = os.fspath(path)
            folder = os.path.dirname(os.path.abspath(path))
            fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
            try:
                with os.fdopen(fd, "wb") as fh:
                    np.savez(fh, **data)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(tmp, path)
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise
            return path

    def load_checkpoint(self, path: str | os.PathLike) -> None:
        """Restore a checkpoint written by ``save_checkpoint`` for this same scene.

        Atomic: the whole file is read and verified first (zip structure, metadata, content
        digest, that it was written for this scene, every array's name, dtype and shape, finite
        states, valid step counts); a file that fails any check raises ``CheckpointError`` naming
        what is wrong and the scene is left exactly as it was, step counts included. Loading also
        makes a scene usable again after a failed step."""
        with self._entry("load_checkpoint()", usable=False):
            self._require("checkpoint", "load_checkpoint needs every solver and coupler to checkpoint")
            path = os.fspath(path)
            data, meta = _read_checkpoint(path)
            mine = self._metadata()
            for key in ("n_envs", "precision", "layout_digest"):
                if meta.get(key) != mine[key]:
                    raise CheckpointError(
                        f"checkpoint {path} was written for another scene: {key} = {meta.get(key)!r}, this "
                        f"scene has {mine[key]!r} (checkpoint from polyphys {meta.get('polyphys_version')}, "
                        f"plugins {meta.get('plugins')})")
            counts = data.pop("__step_count__", None)
            n = self.layout.n_envs
            if counts is None or counts.dtype != np.int64 or counts.shape != (n,) or (counts < 0).any():
                raise CheckpointError(
                    f"checkpoint {path}: step counts {_describe(counts)} are not {n} non-negative int64 values")
            checked = []
            for group, prefix in ((self.solvers, "solver"), (self.couplers, "coupler")):
                for p in group:
                    pre = f"{prefix}/{p.name}/"
                    mine_data = {k[len(pre):]: data.pop(k) for k in list(data) if k.startswith(pre)}
                    checked.append((p, mine_data, p.check_load(mine_data, f"checkpoint {path}: {prefix} {p.name!r}")))
            sensor_data = {k[8:]: data.pop(k) for k in list(data) if k.startswith("sensors/")}
            if self.sensor_hub is not None:
                self._check_sensor_state({k[6:]: v for k, v in sensor_data.items() if k.startswith("state/")},
                                         f"checkpoint {path}", CheckpointError, required=True)
            elif sensor_data:
                raise CheckpointError(f"checkpoint {path}: holds sensor state but this scene has no sensors")
            if data:
                raise CheckpointError(f"checkpoint {path}: entries {sorted(data)[:5]} belong to no solver or "
                                      f"coupler of this scene")
            import warp as wp

            backup = [(p, p.dump()) for p, _, _ in checked]
            backup_counts = self._step_count.copy()
            backup_sensors = self.sensor_hub.dump() if self.sensor_hub is not None else None
            with wp.ScopedDevice(self.layout.device):
                try:
                    for p, raw, ok in checked:
                        p.load(raw, checked=ok)
                    if self.sensor_hub is not None:
                        self.sensor_hub.load(sensor_data)
                    self._step_count[:] = counts
                except BaseException as exc:
                    # a plugin refused what it had accepted in check_load: put everything back
                    for p, d in backup:
                        p.load(d, checked=_dump_groups(d))
                    if backup_sensors is not None:
                        self.sensor_hub.load(backup_sensors)
                    self._step_count[:] = backup_counts
                    if isinstance(exc, PolyphysError):
                        raise CheckpointError(f"checkpoint {path}: {exc}; the scene is unchanged") from exc
                    raise
            self._broken = None

    def __repr__(self):
        state = f"built n_envs={self.n_envs}" if self.built else "not built"
        return f"<Scene {state} solvers={[s.name for s in self.solvers]} entities={len(self.entities)}>"


def _out_of_memory(exc: BaseException) -> bool:
    """A MemoryError, or numpy's/Warp's way of saying an array cannot be that large."""
    if isinstance(exc, MemoryError):
        return True
    msg = str(exc)
    return (isinstance(exc, ValueError) and ("array is too big" in msg or "Maximum allowed size exceeded" in msg)) \
        or (isinstance(exc, RuntimeError) and msg.startswith("Failed to allocate"))


def _dump_groups(dump: dict[str, np.ndarray]) -> dict[str, dict[str, np.ndarray]]:
    """A solver's own ``dump()`` split as ``check_load`` returns it (restoring it needs no check)."""
    out: dict[str, dict[str, np.ndarray]] = {"state": {}, "initial": {}, "extra": {}}
    for key, v in dump.items():
        head, _, name = key.partition("/")
        out[head][name] = v
    if not out["initial"]:
        del out["initial"]
    return out


def _content_digest(data: dict[str, np.ndarray]) -> str:
    """SHA-256 over every array: name, dtype, shape and bytes, in sorted name order."""
    h = hashlib.sha256()
    for k in sorted(data):
        a = np.ascontiguousarray(data[k])
        h.update(json.dumps([k, a.dtype.str, list(a.shape)]).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _describe(a) -> str:
    if a is None:
        return "(missing)"
    a = np.asarray(a)
    return f"{a.dtype}{list(a.shape)} {a.ravel()[:4].tolist()}"


def _read_checkpoint(path: str) -> tuple[dict[str, np.ndarray], dict]:
    """Every array of a checkpoint file and its metadata, verified (CheckpointError otherwise)."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot read the checkpoint ({type(exc).__name__}: {exc})") from None
    try:
        with np.load(io.BytesIO(raw), allow_pickle=False) as npz:
            if not hasattr(npz, "files"):
                raise ValueError("a single .npy array, not an .npz archive")
            data = {k: npz[k] for k in npz.files}
    except Exception as exc:    # zipfile, zlib, EOF, format and pickle errors alike: the file is damaged
        raise CheckpointError(f"{path}: not a polyphys checkpoint, or a damaged/truncated one "
                              f"({type(exc).__name__}: {exc})") from None
    meta_arr = data.pop("__meta__", None)
    try:
        if meta_arr is None or meta_arr.dtype != np.uint8 or meta_arr.ndim != 1:
            raise ValueError("no __meta__ entry")
        meta = json.loads(meta_arr.tobytes().decode("utf-8"))
        if not isinstance(meta, dict):
            raise ValueError("__meta__ is not a JSON object")
    except (ValueError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{path}: not a polyphys checkpoint (metadata: {exc})") from None
    fmt = meta.get("format")
    if fmt != CHECKPOINT_FORMAT:
        raise CheckpointError(f"{path}: checkpoint format {fmt!r}; this polyphys reads format {CHECKPOINT_FORMAT} "
                              f"(format 1 files carry no content digest: save them again with this version)")
    if meta.get("digest") != _content_digest(data):
        raise CheckpointError(f"{path}: content digest mismatch: the arrays were changed after the file was "
                              f"written, or the file is damaged")
    return data, meta
