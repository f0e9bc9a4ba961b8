"""Scene: entities, solvers and couplers composed through the registry, and the user-facing loop.

``Scene.step()``: pre-step callbacks (one returning True skips the step) -> pre-step recorders ->
``Simulator.step()`` -> sensors -> recorders.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from . import arrays
from .errors import BuildError, CapabilityError, CheckpointError, OptionError, PolyphysWarning, SceneStateError
from .interfaces import Entity, check_options
from .layout import Layout, split_envs
from .morphs import Morph
from .options import SimOptions
from .registry import registry
from .specs import Capabilities, load_target
from .views import VIEW_PROTOCOLS

CHECKPOINT_FORMAT = 1


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
        self._plugins = frozenset(plugins) if plugins is not None else None
        reg = registry()
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
        self._step_count: np.ndarray | None = None
        self.nan_envs: list[tuple[int, int]] = []      # (step, env) of every NaN reset
        self.timings = {"build_s": 0.0, "step_s": 0.0, "steps": 0}

    # -- composition ---------------------------------------------------------------------------
    def _solver_for(self, name: str):
        if name in self._solvers:
            return self._solvers[name]
        rec = registry().get("solver", name, self._plugins)
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
        entity = solver.add_entity(morph, material, surface, name=name, **kwargs)
        entity.uid = len(self.entities)
        self.entities.append(entity)
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

    def add_sensor(self, name: str, entity: Entity | None = None, **kwargs):
        if self.built:
            raise SceneStateError("add_sensor after build: add sensors before scene.build()")
        rec = registry().get("sensor", name, self._plugins)
        sensor = rec.load()(self, rec.spec, entity, **kwargs)
        self.sensors.append(sensor)
        return sensor

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
        if isinstance(n_envs, bool) or not isinstance(n_envs, (int, np.integer)) or n_envs < 0:
            raise OptionError(f"build(n_envs={n_envs!r}): must be an integer >= 0 (0: no batch axis)")
        if not self._solvers:
            raise SceneStateError("scene.build() with no entity: add at least one entity first")
        t0 = time.perf_counter()
        sim = self.sim_options
        n_envs = int(n_envs)
        if n_envs > 0:
            self._require("batch", f"n_envs={n_envs} needs a batched solver (use n_envs=0)")
        self._require("precisions", "set SimOptions(precision=...) to a supported one", sim.precision)
        self._require("devices", f"SimOptions(device={sim.device!r})", sim.device_kind)
        import warp as wp

        wp.init()
        if sim.device_kind == "cuda" and not wp.is_cuda_available():
            raise OptionError(f"SimOptions(device={sim.device!r}): no CUDA device is available here; "
                              f"use device='cpu'")
        self._check_dt()
        n = max(1, n_envs)
        self.layout = Layout(n_envs=n, batched=n_envs > 0, device=sim.device, precision=sim.precision,
                             dt=sim.dt, substeps=sim.substeps, gravity=sim.gravity,
                             partitions=split_envs(n, sim.threads_for(n)))
        self.batched, self.n_envs = n_envs > 0, n_envs
        with wp.ScopedDevice(sim.device):
            for s in self.solvers:
                s.layout = self.layout
                s.build(self.layout)
            self.couplers = self._make_couplers()
            self._require("precisions", "set SimOptions(precision=...) to one every coupler supports",
                          sim.precision)
            self._require("devices", f"SimOptions(device={sim.device!r})", sim.device_kind)
            self._warn_untested_device(sim.device_kind)
            for c in self.couplers:
                c.build(self.layout)
            for sensor in self.sensors:
                sensor.build(self.layout)
            for p in [*self.solvers, *self.couplers]:
                p.register_initial()
        from .simulator import Simulator

        self.simulator = Simulator(self, self.solvers, self.couplers, self.layout, sim.graph_capture,
                                   sim.nan_policy)
        self._step_count = np.zeros(n, dtype=np.int64)
        self.built = True
        self.timings["build_s"] = time.perf_counter() - t0

    def _warn_untested_device(self, kind: str) -> None:
        untested = [getattr(p, "name", type(p).__name__) for p in self._parts()
                    if kind not in p.capabilities.tested_devices]
        if untested:
            warnings.warn(f"device {kind!r}: the kernels of {untested} compile for it but their tests have "
                          f"never run there (Capabilities.tested_devices)", PolyphysWarning, stacklevel=3)

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
        couplers = []
        for rec, opts in sorted(chosen, key=lambda x: (x[0].spec.priority, x[0].name)):
            va, vb = (VIEW_PROTOCOLS[v] for v in rec.spec.couples)
            pairs = [(a, b) for a in solvers for b in solvers
                     if a is not b and a.view(va) is not None and b.view(vb) is not None]
            own = []
            for a, b in pairs:
                key = (a.name, b.name)
                if key in claimed:
                    if req is None:
                        continue      # a default coupler of lower priority yields
                    raise BuildError(f"solver pair {key} is claimed by couplers {claimed[key]!r} and "
                                     f"{rec.name!r}; select one")
                claimed[key] = rec.name
                own.append((a, b))
            if not own:
                if req is not None:
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

    def step(self) -> bool:
        """Advance one step (dt). Returns False when a pre-step callback skipped it."""
        self._require_built("step()")
        for cb in self._pre_step_callbacks:
            if cb(self) is True:
                return False
        for when, fn in self._recorders:
            if when == "pre":
                fn(self)
        t0 = time.perf_counter()
        self._step_count += 1
        self.simulator.step()
        self.timings["step_s"] += time.perf_counter() - t0
        self.timings["steps"] += 1
        for sensor in self.sensors:
            sensor.step()
        for when, fn in self._recorders:
            if when == "post":
                fn(self)
        return True

    def forward(self) -> None:
        """Refresh kinematics (and contacts/forces where a solver has them) without advancing time."""
        self._require_built("forward()")
        import warp as wp

        with wp.ScopedDevice(self.layout.device):
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

    def _envs_idx(self, envs_idx) -> np.ndarray:
        return arrays.normalize_envs_idx(envs_idx, self.layout.n_envs, self.batched)

    # -- state ---------------------------------------------------------------------------------
    def get_state(self) -> dict:
        """Per-solver states (NumPy copies) and step counts; refreshes kinematics first."""
        self._require_built("get_state()")
        self.forward()
        return {
            "solvers": {s.name: s.get_state() for s in self.solvers},
            "couplers": {c.name: c.get_state() for c in self.couplers},
            "step_count": self._step_count.copy(),
        }

    def reset(self, state: dict | None = None, envs_idx=None) -> None:
        """Restore the registered initial state (or ``state``, which is then registered), for all
        envs or only ``envs_idx``; zero their step counts; restart couplers and sensors."""
        self._require_built("reset()")
        if envs_idx is not None:
            self._require("reset_envs", "reset(envs_idx=...) needs isolated per-env reset")
        envs = self._envs_idx(envs_idx)
        import warp as wp

        with wp.ScopedDevice(self.layout.device):
            if state is not None:
                self._check_state(state)
                for s in self.solvers:
                    s.set_state(state["solvers"][s.name], envs)
                for c in self.couplers:
                    c.set_state(state["couplers"].get(c.name, {}), envs)
                if envs_idx is None:
                    for p in [*self.solvers, *self.couplers]:
                        p.register_initial()
            else:
                for p in [*self.solvers, *self.couplers]:
                    p.reset(envs)
            for sensor in self.sensors:
                sensor.reset(envs)
        self._step_count[envs] = 0

    def _check_state(self, state: dict) -> None:
        if not isinstance(state, dict) or "solvers" not in state:
            raise OptionError("reset(state=...): expected a dict from scene.get_state()")
        have, want = set(state["solvers"]), {s.name for s in self.solvers}
        if have != want:
            raise OptionError(f"reset(state=...): state holds solvers {sorted(have)}, this scene has "
                              f"{sorted(want)}")

    def _reset_envs_after_nan(self, envs: np.ndarray) -> None:
        for s in [*self.solvers, *self.couplers]:
            s.reset(envs)
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
        """Write every solver's and coupler's full data, step counts and metadata to ``path``."""
        self._require_built("save_checkpoint()")
        self._require("checkpoint", "save_checkpoint needs every solver and coupler to checkpoint")
        data: dict[str, np.ndarray] = {"__step_count__": self._step_count}
        for group, prefix in ((self.solvers, "solver"), (self.couplers, "coupler")):
            for p in group:
                for k, v in p.dump().items():
                    data[f"{prefix}/{p.name}/{k}"] = np.asarray(v)
        data["__meta__"] = np.frombuffer(json.dumps(self._metadata()).encode(), dtype=np.uint8)
        path = os.fspath(path)
        with open(path, "wb") as fh:
            np.savez(fh, **data)
        return path

    def load_checkpoint(self, path: str | os.PathLike) -> None:
        """Restore a checkpoint written by ``save_checkpoint`` for this same scene."""
        self._require_built("load_checkpoint()")
        self._require("checkpoint", "load_checkpoint needs every solver and coupler to checkpoint")
        path = os.fspath(path)
        try:
            npz = np.load(path, allow_pickle=False)
            meta = json.loads(bytes(npz["__meta__"]).decode())
        except (OSError, ValueError, KeyError) as exc:
            raise CheckpointError(f"{path}: not a polyphys checkpoint ({exc})") from None
        mine = self._metadata()
        for key in ("format", "n_envs", "precision", "layout_digest"):
            if meta.get(key) != mine[key]:
                raise CheckpointError(
                    f"checkpoint {path} was written for another scene: {key} = {meta.get(key)!r}, this "
                    f"scene has {mine[key]!r} (checkpoint from polyphys {meta.get('polyphys_version')}, "
                    f"plugins {meta.get('plugins')})")
        import warp as wp

        with wp.ScopedDevice(self.layout.device):
            for group, prefix in ((self.solvers, "solver"), (self.couplers, "coupler")):
                for p in group:
                    pre = f"{prefix}/{p.name}/"
                    p.load({k[len(pre):]: npz[k] for k in npz.files if k.startswith(pre)})
        self._step_count[:] = npz["__step_count__"]

    def __repr__(self):
        state = f"built n_envs={self.n_envs}" if self.built else "not built"
        return f"<Scene {state} solvers={[s.name for s in self.solvers]} entities={len(self.entities)}>"
