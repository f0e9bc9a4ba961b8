"""The interfaces a plugin implements: Solver, Coupler, Importer, Sensor, and the Entity handle.

The core owns orchestration (DESIGN "Scene and substep loop"); these classes only answer the calls
the core makes. A solver declares its full dynamic state in ``state_arrays()``: reset, per-env
reset, get/set state, dump/load and the NaN check are then implemented here once, generically, so
every solver gets isolated per-env reset and bit-exact checkpoints by construction.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any

import numpy as np

from . import arrays
from .errors import CheckpointError, OptionError
from .options import NoOptions

if TYPE_CHECKING:
    from .layout import Layout, Partition
    from .scene import Scene
    from .specs import CouplerSpec, SensorSpec, SolverSpec


class Entity:
    """Handle returned by ``scene.add_entity``. Solvers subclass it with their getters/setters.

    Getters return NumPy copies with the batch axis first (none when the scene has n_envs=0).
    """

    def __init__(self, solver: Solver, idx: int, morph: Any, material: Any, surface: Any = None,
                 name: str | None = None):
        self.solver = solver
        self.idx = idx                  # index among the solver's entities
        self.uid = -1                   # index among the scene's entities (set by the scene)
        self.morph = morph
        self.material = material
        self.surface = surface
        self.name = name or f"{solver.name}_{idx}"
        self.sensors: dict = {}         # name -> Sensor attached to this entity (scene.add_sensor, MJCF <sensor>)

    @property
    def scene(self) -> Scene:
        return self.solver.scene

    # helpers for subclasses -----------------------------------------------------------------
    def _envs(self, envs_idx) -> np.ndarray:
        return self.scene._envs_idx(envs_idx)

    def _out(self, arr: np.ndarray, envs: np.ndarray | None = None) -> np.ndarray:
        """Select envs and drop the batch axis for an unbatched scene."""
        if envs is not None:
            arr = arr[envs]
        if not self.scene.batched:
            return arr[0]
        return arr

    def _in(self, name: str, value, per_env_shape: tuple, envs: np.ndarray, dtype=float) -> np.ndarray:
        """Validate a setter value: (len(envs), *per_env_shape) batched; per_env_shape unbatched.

        A batched scene also accepts one per-env value, broadcast to every env named."""
        if not self.scene.batched:
            return arrays.check_shape(name, value, per_env_shape, dtype)[None]
        arr = np.asarray(value, dtype=dtype) if not isinstance(value, np.ndarray) else value
        if arr.shape == tuple(per_env_shape):
            arr = np.broadcast_to(arr, (len(envs), *per_env_shape))
        return arrays.check_shape(name, arr, (len(envs), *per_env_shape), dtype)

    def __repr__(self):
        return f"<{type(self).__name__} {self.name!r} solver={self.solver.name} morph={type(self.morph).__name__}>"


class Solver(abc.ABC):
    """Base class of every solver plugin.

    Lifecycle: ``add_entity`` (before build) -> ``build(layout)`` -> per substep
    ``substep_pre_coupling(f, part)`` and ``substep_post_coupling(f, part)`` (or the fast path
    ``substep(f, part)`` when it is the only solver and no coupler is active) -> ``end_step(part)``.
    ``f`` is the substep index within the step; ``part`` the env partition to advance (launch on the
    partition's views of your arrays). Nothing in these methods may synchronise with the host or
    branch on device data: the step is captured as a Warp graph.
    """

    options_type: type = NoOptions

    def __init__(self, scene: Scene, options: Any, spec: SolverSpec):
        self.scene = scene
        self.options = options
        self.spec = spec
        self.name = spec.name
        self.capabilities = spec.capabilities
        self.entities: list[Entity] = []
        self.layout: Layout | None = None
        self._initial: dict[str, Any] | None = None

    # -- required --------------------------------------------------------------------------------
    @abc.abstractmethod
    def add_entity(self, morph, material, surface=None, **kwargs) -> Entity:
        """Take an entity (before build); return its handle."""

    @abc.abstractmethod
    def build(self, layout: Layout) -> None:
        """Allocate every array for ``layout`` (they are never reallocated afterwards)."""

    @abc.abstractmethod
    def substep_pre_coupling(self, f: int, part: Partition) -> None:
        """First half of substep ``f`` for the envs of ``part`` (before the couplers act)."""

    @abc.abstractmethod
    def state_arrays(self) -> dict[str, Any]:
        """The complete dynamic state as batch-first, contiguous Warp arrays (n_envs, ...).

        Everything a bit-exact continuation needs belongs here (warm starts and caches included);
        parameters that never change during a step do not."""

    # -- optional --------------------------------------------------------------------------------
    def substep_post_coupling(self, f: int, part: Partition) -> None:
        """Second half of a substep, after the couplers acted on the exposed views."""

    def substep(self, f: int, part: Partition) -> None:
        """Fast path (no coupler): by default the two halves back to back."""
        self.substep_pre_coupling(f, part)
        self.substep_post_coupling(f, part)

    def end_step(self, part: Partition) -> None:
        """After the last substep of a step (clear per-step external forces, ...)."""

    def forward(self) -> None:
        """Refresh derived quantities (kinematics, contacts, forces) at the current state."""

    def check_after_step(self) -> None:
        """Read device-side flags after a step and raise (BudgetExceededError, ...)."""

    def on_reset(self, envs_idx: np.ndarray) -> None:
        """Called after state rows were restored: clear caches that are not state."""

    def extra_state(self) -> dict[str, np.ndarray]:
        """Host-side state (NumPy) that a checkpoint must also hold."""
        return {}

    def load_extra_state(self, data: dict[str, np.ndarray]) -> None:
        pass

    def view(self, protocol: type) -> Any | None:
        """This solver as the given view protocol, or None if it does not expose it."""
        return self if isinstance(self, protocol) else None

    # -- generic state handling (do not override unless you must) --------------------------------
    @property
    def device(self) -> str:
        return self.layout.device

    def register_initial(self) -> None:
        """Remember the current state as the one ``reset()`` restores."""
        import warp as wp

        self._initial = {k: wp.clone(a) for k, a in self.state_arrays().items()}

    def get_state(self) -> dict[str, np.ndarray]:
        return {k: a.numpy().copy() for k, a in self.state_arrays().items()}

    def set_state(self, state: dict[str, np.ndarray], envs_idx: np.ndarray | None = None) -> None:
        import warp as wp

        current = self.state_arrays()
        missing = set(current) - set(state)
        if missing:
            raise CheckpointError(f"state for solver {self.name!r} lacks {sorted(missing)}")
        n = self.layout.n_envs
        envs = np.arange(n) if envs_idx is None else np.asarray(envs_idx)
        mask = arrays.env_mask_array(envs, n, self.device)
        for k, dst in current.items():
            src = np.asarray(state[k])
            if src.shape != tuple(dst.numpy().shape):
                raise CheckpointError(f"state {self.name}.{k} has shape {src.shape}; this scene "
                                      f"needs {dst.numpy().shape}")
            tmp = wp.array(src, dtype=dst.dtype, device=self.device)
            arrays.copy_envs(dst, tmp, mask)
        self.on_reset(envs)

    def reset(self, envs_idx: np.ndarray | None = None) -> None:
        if self._initial is None:
            raise RuntimeError(f"solver {self.name!r} has no registered initial state")
        n = self.layout.n_envs
        envs = np.arange(n) if envs_idx is None else np.asarray(envs_idx)
        mask = arrays.env_mask_array(envs, n, self.device)
        current = self.state_arrays()
        for k, dst in current.items():
            arrays.copy_envs(dst, self._initial[k], mask)
        self.on_reset(envs)

    def dump(self) -> dict[str, np.ndarray]:
        out = {f"state/{k}": v for k, v in self.get_state().items()}
        out.update({f"extra/{k}": np.asarray(v) for k, v in self.extra_state().items()})
        if self._initial is not None:
            out.update({f"initial/{k}": a.numpy() for k, a in self._initial.items()})
        return out

    def load(self, data: dict[str, np.ndarray]) -> None:
        import warp as wp

        state = {k[6:]: v for k, v in data.items() if k.startswith("state/")}
        self.set_state(state)
        initial = {k[8:]: v for k, v in data.items() if k.startswith("initial/")}
        if initial:
            cur = self.state_arrays()
            self._initial = {k: wp.array(initial[k], dtype=cur[k].dtype, device=self.device)
                             for k in cur}
        self.load_extra_state({k[6:]: v for k, v in data.items() if k.startswith("extra/")})

    def nan_check(self, part: Partition, flags) -> None:
        """Flag envs of ``part`` whose float state is not finite (inside the captured step)."""
        cache = self.__dict__.setdefault("_nan_views", {})
        if part.index not in cache:
            cache[part.index] = (arrays.finite_check_views(
                [arrays.env_slice(a, part.start, part.stop) for a in self.state_arrays().values()]), flags[part.start:part.stop])
        views, part_flags = cache[part.index]
        arrays.flag_nonfinite(views, part_flags)


class Coupler(abc.ABC):
    """Base class of couplers: acts on the views two solvers expose, between their stages."""

    options_type: type = NoOptions

    def __init__(self, scene: Scene, options: Any, spec: CouplerSpec, pairs: list[tuple]):
        self.scene = scene
        self.options = options
        self.spec = spec
        self.name = spec.name
        self.capabilities = spec.capabilities
        self.pairs = pairs              # [(solver_a, solver_b), ...] this coupler owns
        self.layout: Layout | None = None

    def build(self, layout: Layout) -> None:
        self.layout = layout

    def preprocess(self, f: int, part: Partition) -> None:
        pass

    @abc.abstractmethod
    def couple(self, f: int, part: Partition) -> None:
        """Act on the views of the owned solver pairs (between pre- and post-coupling)."""

    def state_arrays(self) -> dict[str, Any]:
        return {}

    # generic state handling, as for solvers
    register_initial = Solver.register_initial
    get_state = Solver.get_state
    set_state = Solver.set_state
    reset = Solver.reset
    dump = Solver.dump
    load = Solver.load
    device = Solver.device
    extra_state = Solver.extra_state
    load_extra_state = Solver.load_extra_state
    on_reset = Solver.on_reset


class Importer(abc.ABC):
    """Turns a file morph into an EntityDescription. Must not need any physics engine."""

    @abc.abstractmethod
    def load(self, morph) -> Any:
        """Return the EntityDescription of a file morph."""


class Sensor:
    """A sensor attached to an entity (a link, site, joint, region ... of it); docs/sensors.md.

    ``scene.add_sensor(kind, entity, name=..., **kwargs)`` constructs it (validating the arguments;
    the measurement-model keywords ``noise, bias, drift, resolution, limits, delay, delay_buffer,
    seed`` are the base class's). ``build(layout)`` runs after the solvers are built: resolve names,
    find the views it needs (``entity.solver.view(...)``), set ``fields`` — its outputs as
    ``(name, width, datatype)`` with datatype ``real``, ``positive``, ``quat``, ``axis`` or ``bool``
    — and ``stage``/``time_lag``. Inside the captured step (after the last substep) the scene's
    SensorHub calls ``bind()`` (columns are known then) and ``make_group(...).evaluate(part,
    truth)``: the sensor writes its ground truth into its columns ``[column, column + dim)`` of
    ``truth`` (the partition's rows), by kernel launches only. The measurement models, the sensor
    state (delay buffers, drift, noise counters), per-env reset, checkpoints and the time tags of
    ``read()`` are the core's.

    stage: ``"solve"`` — the values belong to the state a solve was made at, ``time_lag`` seconds
    before the step's end (rigid: the start of the last substep), tagged ``solved_at``; ``"end"`` —
    a query of the state after the step, tagged ``query_at`` (docs/semantics.md §F1).
    """

    stage: str = "end"

    def __init__(self, scene: Scene, spec: SensorSpec, entity: Entity | None = None, *, name: str | None = None,
                 noise=0.0, bias=0.0, drift=0.0, resolution=0.0, limits=None, delay=0, delay_buffer=None,
                 seed=0):
        from .sensors import MeasurementModel

        self.scene = scene
        self.spec = spec
        self.kind = spec.name
        self.entity = entity
        self.name = name if name is not None else spec.name
        self.capabilities = spec.capabilities
        self.full_name = f"{entity.name}/{self.name}" if entity is not None else self.name
        self.measurement = MeasurementModel.create(repr(self.full_name), noise=noise, bias=bias, drift=drift,
                                                   resolution=resolution, limits=limits, delay=delay,
                                                   delay_buffer=delay_buffer, seed=seed)
        self.fields: list = []          # [(output name, width, datatype)], set by build
        self.time_lag = 0.0
        self.layout: Layout | None = None
        self.column = -1                # first column in the scene's sensor arrays (set by the hub)
        self.index = -1
        self._hub = None

    # -- what a sensor implements ------------------------------------------------------------------
    def build(self, layout: Layout) -> None:
        """Resolve names and views, set ``fields`` (and ``stage``/``time_lag``), allocate parameters."""
        self.layout = layout

    def bind(self) -> None:
        """After the scene gave this sensor its columns (``self.column``): allocate the parameter
        arrays ``evaluate`` launches with (nothing is allocated inside the step)."""

    def group_key(self) -> Any:
        """Sensors with equal keys are evaluated by one group (``make_group``); default: alone."""
        return ("single", id(self))

    @classmethod
    def make_group(cls, sensors: list, layout: Layout):
        """The group evaluating ``sensors`` (equal ``group_key``); default: each ``evaluate`` in turn."""
        from .sensors import SensorGroup

        return SensorGroup(sensors, layout)

    def evaluate(self, part: Partition, truth) -> None:
        """Write this sensor's ground truth for the envs of ``part`` (launches only; see the class doc).
        Needed unless the sensor's group evaluates its members itself."""
        raise NotImplementedError(f"sensor kind {self.kind!r} has no evaluate() and no group that evaluates it")

    # -- the rest is the core's -------------------------------------------------------------------
    @property
    def dim(self) -> int:
        return sum(w for _, w, _ in self.fields)

    def field_slices(self) -> dict:
        out, c = {}, 0
        for name, w, _ in self.fields:
            out[name] = slice(c, c + w)
            c += w
        return out

    def _check_fields(self) -> None:
        from .sensors import DATATYPES

        if not self.fields:
            raise OptionError(f"sensor {self.full_name!r} ({self.kind}): build() set no outputs (fields)")
        for name, width, dtype in self.fields:
            if dtype not in DATATYPES or int(width) < 1 or (dtype == "quat" and width != 4) or (
                    dtype == "axis" and width != 3):
                raise OptionError(f"sensor {self.full_name!r} output {name!r}: width {width}, datatype {dtype!r}: "
                                  f"allowed datatypes {DATATYPES} (quat: width 4, axis: width 3)")
        if self.stage not in ("solve", "end"):
            raise OptionError(f"sensor {self.full_name!r}: stage = {self.stage!r}; allowed 'solve' or 'end'")

    def _check_measurement(self, noise, bias, drift, resolution, lo, hi) -> None:
        """Quaternion and axis outputs take noise (an angle) and delay only; bool outputs delay only."""
        for name, sl in self.field_slices().items():
            dtype = next(d for n, _, d in self.fields if n == name)
            if dtype == "real" or dtype == "positive":
                continue
            given = {"noise": noise, "bias": bias, "drift": drift, "resolution": resolution}
            if dtype == "bool":
                allowed = ()
            else:
                allowed = ("noise",)
            for key, arr in given.items():
                if arr is not None and key not in allowed and np.any(np.asarray(arr)[sl] != 0):
                    raise OptionError(f"sensor {self.full_name!r}: {key} on output {name!r} ({dtype}): a {dtype} "
                                      f"output takes {'noise (an angle, rad) and ' if allowed else ''}delay only")
            if lo is not None and (np.isfinite(np.asarray(lo)[sl]).any() or np.isfinite(np.asarray(hi)[sl]).any()):
                raise OptionError(f"sensor {self.full_name!r}: limits on output {name!r} ({dtype}): a {dtype} output "
                                  f"takes {'noise (an angle, rad) and ' if allowed else ''}delay only")

    def _require_hub(self, what: str):
        if self._hub is None:
            from .errors import SceneStateError

            raise SceneStateError(f"sensor {self.full_name!r}: {what} before scene.build()")
        return self._hub

    def read(self, envs_idx=None):
        """The measured reading (noise, bias, drift, quantization, saturation, delay applied) of the
        last step, with its time tags: a :class:`polyphys.sensors.Reading`."""
        return self._require_hub("read()").read(self, envs_idx, ground_truth=False)

    def read_ground_truth(self, envs_idx=None):
        """The exact value of the last step (no measurement model, no delay), with its time tags."""
        return self._require_hub("read_ground_truth()").read(self, envs_idx, ground_truth=True)

    def set_noise(self, noise, envs_idx=None) -> None:
        """Per-env noise standard deviation (domain randomisation): as the ``noise`` argument."""
        self._require_hub("set_noise()").set_param(self, "noise", noise, envs_idx)

    def set_bias(self, bias, envs_idx=None) -> None:
        """Per-env constant bias: as the ``bias`` argument."""
        self._require_hub("set_bias()").set_param(self, "bias", bias, envs_idx)

    def set_delay(self, delay, envs_idx=None) -> None:
        """Per-env delay in steps, at most the sensor's ``delay_buffer``."""
        self._require_hub("set_delay()").set_param(self, "delay", delay, envs_idx)

    def __repr__(self):
        return f"<{type(self).__name__} {self.full_name!r} kind={self.kind}>"


def check_options(owner: str, options_type: type, options: Any) -> Any:
    if options is None:
        return options_type()
    if not isinstance(options, options_type):
        raise OptionError(f"options for {owner!r} must be {options_type.__module__}."
                          f"{options_type.__qualname__}, got {type(options).__name__}")
    return options
