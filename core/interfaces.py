"""The interfaces a plugin implements: Solver, Coupler, Importer, Sensor, and the Entity handle.

The core owns orchestration (DESIGN "Scene and substep loop"); these classes only answer the calls
the core makes. A solver declares its full dynamic state in ``state_arrays()``: reset, per-env
reset, get/set state, dump/load and the NaN check are then implemented here once, generically, so
every solver gets isolated per-env reset and bit-exact checkpoints by construction.
"""

from __future__ import annotations

import abc
import functools
import inspect
from typing import TYPE_CHECKING, Any

import numpy as np

from . import arrays
from .errors import CheckpointError, OptionError, SceneStateError
from .options import NoOptions

if TYPE_CHECKING:
    from .layout import Layout, Partition
    from .scene import Scene
    from .specs import CouplerSpec, SensorSpec, SolverSpec


def _entity_call(fn):
    """Wrap a public Entity (or Sensor) method: before build, a failure for want of the solver's arrays is a
    ``SceneStateError``; after build, the call holds the scene (one thread at a time) and the
    process-wide Warp lock (polyphys.concurrency), and is refused on a scene made unusable by a
    failed step."""
    name = fn.__name__
    sig = inspect.signature(fn)
    flags = [p.name for p in sig.parameters.values() if isinstance(p.default, bool)]

    @functools.wraps(fn)
    def call(self, *args, **kwargs):
        scene = self.scene
        what = f"{type(self).__name__}.{name}()"
        if flags:   # parameters with a True/False default take True or False (not a truthy array)
            try:
                bound = sig.bind(self, *args, **kwargs).arguments
            except TypeError:
                bound = {}
            for k in flags:
                if k in bound and not isinstance(bound[k], (bool, np.bool_)):
                    raise OptionError(f"{what}: {k} = {arrays.short_repr(bound[k])}: expected True or False")
        if not getattr(scene, "built", True):
            try:
                return fn(self, *args, **kwargs)
            except (AttributeError, TypeError) as exc:   # the solver's arrays exist only after build
                raise SceneStateError(f"{what} before build: call scene.build() first") from exc
        guard = getattr(scene, "_guard", None)
        if guard is None:
            return fn(self, *args, **kwargs)
        from .concurrency import WARP_LOCK

        with guard.enter(what):
            scene._check_usable(what)
            with WARP_LOCK.exclusive():
                return fn(self, *args, **kwargs)

    call._polyphys_entity_call = True
    return call


class Entity:
    """Handle returned by ``scene.add_entity``. Solvers subclass it with their getters/setters.

    Getters return NumPy copies with the batch axis first (none when the scene has n_envs=0).
    Every public method of a subclass is wrapped once, here (``__init_subclass__``): called before
    build it raises ``SceneStateError`` where it needs the built arrays, and after build it holds
    the scene and the Warp lock (docs/architecture.md, "Threads").
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for k, v in list(vars(cls).items()):
            if not k.startswith("_") and inspect.isfunction(v) and not getattr(v, "_polyphys_entity_call", False):
                setattr(cls, k, _entity_call(v))

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

        A batched scene also accepts one per-env value, broadcast to every env named. Every setter
        goes through here: the value must be real numbers (not strings, dicts, complex or ragged
        lists), of the shape, finite, and for float values finite in the scene's storage precision
        (float32 unless SimOptions(precision="64")): an ``OptionError`` names the field and value."""
        storage = None
        if np.dtype(dtype).kind == "f":
            storage = np.float64 if getattr(self.scene.sim_options, "precision", "32") == "64" else np.float32
        if not self.scene.batched:
            return arrays.check_shape(name, value, per_env_shape, dtype, storage)[None]
        arr = arrays.as_numeric(name, value, dtype)
        if arr.shape == tuple(per_env_shape):
            arr = np.broadcast_to(arr, (len(envs), *per_env_shape))
        return arrays.check_shape(name, arr, (len(envs), *per_env_shape), dtype, storage, shown=value)

    def _warn_once(self, key: str, message: str) -> None:
        """A PolyphysWarning about this entity, once per ``key`` (a soft default the user may not
        expect), attributed to the user's line."""
        warned = self.__dict__.setdefault("_warned", set())
        if key in warned:
            return
        warned.add(key)
        import warnings

        from .errors import PolyphysWarning
        from .importing import _user_stacklevel

        warnings.warn(PolyphysWarning(f"entity {self.name!r}: {message} (warned once)"), stacklevel=_user_stacklevel())

    def __repr__(self):
        return f"<{type(self).__name__} {self.name!r} solver={self.solver.name} morph={type(self.morph).__name__}>"


# state values per partition from which the NaN check is split across the partition's workers: a
# parallel stage of a captured step costs a native barrier (~5 µs on two idle workers, docs/architecture.md
# "Threads within a partition"), less than half the check of 64k values (FEM explicit 100k: 134k values,
# 44 µs on worker 0 alone, 16-21 µs per worker split; benchmarks/results/fem.md, round 12)
_PARALLEL_NAN_CHECK = 1 << 16


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

    def parallel(self, part: Partition, stage, tag=None, after=None) -> None:
        """One parallel stage over the workers of ``part``: ``stage(w)`` issues worker ``w``'s
        launches (usually over its share ``part.chunk(w, n)`` of the elements); every worker's
        launches are done when this returns (a barrier). Inside a step the workers run at once (and
        each worker's share is captured into a graph of its own); elsewhere one after another.
        Workers of one stage must not write the same memory, and the results must not depend on
        ``part.workers`` (docs/architecture.md, "Threads within a partition").

        ``tag`` (any hashable) names this stage. ``after=tag`` declares that this stage may follow
        the stage so tagged worker by worker, with no barrier between them: worker ``w``'s share
        reads, of what that stage writes, only what worker ``w`` wrote, and writes nothing that
        another worker's share of that stage reads or writes. When the stage so tagged is the last
        thing captured before this one (no launch, loop or other stage in between), both are one
        segment of the captured program: each worker replays its two shares in turn, one barrier
        after them. Otherwise (or uncaptured) the stages run with a barrier between them — the
        same results either way."""
        from .simulator import run_stage

        run_stage(part, stage, tag, after)

    def while_loop(self, part: Partition, cond, body) -> None:
        """``body()`` while ``cond[0] != 0`` — a device-side loop inside the captured step (an
        iterative solve that stops at its tolerance): ``cond`` is a one-element int32 Warp array,
        updated by the body's last launch; the body may contain parallel stages. See
        ``polyphys.simulator.run_loop`` (one worker: ``wp.capture_while``; CUDA capture then needs
        conditional graph nodes)."""
        from .simulator import run_loop

        run_loop(part, cond, body)

    def kernel_modules(self, layout: Layout) -> list | None:
        """The Warp kernel modules (Python modules) this solver launches in this scene, after its
        entities were added and before ``build``. Declare here the overloads of generic kernels for
        ``layout.precision``: the core compiles the modules missing from the kernel cache in
        parallel, with one notice for the solver (docs/running.md, "First run"). None (the
        default): not declared — each module compiles at its first launch, one after another."""
        return None

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

    def check_state(self, state: dict, envs_idx: np.ndarray | None = None, error: type = OptionError,
                    what: str | None = None) -> dict[str, np.ndarray]:
        """Validate a state dict (as ``get_state()`` returns) before anything is written: exactly
        the keys of ``state_arrays()``, each a real numeric array of the array's shape, and on the
        env rows that will be written, finite in the storage precision (a non-finite state would
        become the state the NaN policy resets to) and, for integer arrays, integral and in range.
        Returns the values in the storage dtype. Raises ``error`` naming the array and the problem."""
        what = what or f"state of {self.name!r}"
        if not isinstance(state, dict):
            raise error(f"{what}: expected a dict of arrays (from get_state()), got {type(state).__name__}")
        current = self.state_arrays()
        missing, extra = sorted(set(current) - set(state)), sorted(set(state) - set(current))
        if missing:
            raise error(f"{what} lacks {missing}")
        if extra:
            raise error(f"{what} has unknown entries {extra}; this scene's {self.name!r} state is "
                        f"{sorted(current)}")
        n = self.layout.n_envs
        envs = np.arange(n) if envs_idx is None else np.asarray(envs_idx)
        out = {}
        for k, dst in current.items():
            want = dst.numpy()
            try:
                src = np.asarray(state[k])
            except Exception as exc:    # ragged lists, objects numpy cannot hold
                raise error(f"{what}.{k}: not an array ({type(exc).__name__}: {exc})") from None
            if src.dtype.kind not in "biuf":
                raise error(f"{what}.{k} has dtype {src.dtype}: expected real numbers (stored as "
                            f"{want.dtype})")
            if src.shape != want.shape:
                raise error(f"{what}.{k} has shape {src.shape}; this scene needs {want.shape}")
            with np.errstate(over="ignore", invalid="ignore"):
                vals = src.astype(want.dtype)
            rows, vrows = src[envs], vals[envs]
            if want.dtype.kind == "f":
                bad = ~np.isfinite(vrows)
                if bad.any():
                    at = np.argwhere(bad)[0]
                    raise error(f"{what}.{k}: value {rows[tuple(at)].item()!r} at env {envs[at[0]]}, index "
                                f"{tuple(int(i) for i in at[1:])} is not finite in {want.dtype} storage; "
                                f"every value must be finite (|x| <= {np.finfo(want.dtype).max:.4g})")
            elif not np.array_equal(vrows.astype(np.float64), rows.astype(np.float64)):
                bad = vrows.astype(np.float64) != rows.astype(np.float64)
                at = np.argwhere(bad)[0]
                info = np.iinfo(want.dtype)
                raise error(f"{what}.{k}: value {rows[tuple(at)].item()!r} at env {envs[at[0]]} is not an integer "
                            f"in [{info.min}, {info.max}] ({want.dtype} storage)")
            out[k] = vals
        return out

    def set_state(self, state: dict[str, np.ndarray], envs_idx: np.ndarray | None = None,
                  checked: dict[str, np.ndarray] | None = None) -> None:
        """Write ``state`` into the env rows ``envs_idx`` (all envs by default). ``checked``: the
        result of ``check_state`` when the caller validated already."""
        import warp as wp

        vals = checked if checked is not None else self.check_state(state, envs_idx, CheckpointError)
        n = self.layout.n_envs
        envs = np.arange(n) if envs_idx is None else np.asarray(envs_idx)
        mask = arrays.env_mask_array(envs, n, self.device)
        for k, dst in self.state_arrays().items():
            tmp = wp.array(vals[k], dtype=dst.dtype, device=self.device)
            arrays.copy_envs(dst, tmp, mask)
        self.on_reset(envs)

    def reset(self, envs_idx: np.ndarray | None = None) -> None:
        if self._initial is None:
            raise SceneStateError(f"solver {self.name!r} has no registered initial state (reset before build?)")
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

    def check_load(self, data: dict[str, np.ndarray], what: str) -> dict[str, dict[str, np.ndarray]]:
        """Validate what ``dump()`` wrote before ``load`` writes anything (``CheckpointError``
        naming the entry): the state and initial state as ``check_state`` does (finite, exact
        shapes; the dtype must be the storage dtype), the host extras with the names, shapes and
        dtypes of this scene's ``extra_state()``, and no unknown entry."""
        groups: dict[str, dict[str, np.ndarray]] = {"state": {}, "initial": {}, "extra": {}}
        for key, v in data.items():
            head, _, name = key.partition("/")
            if head not in groups or not name:
                raise CheckpointError(f"{what}: unknown entry {key!r} (expected state/..., initial/..., extra/...)")
            groups[head][name] = v
        out = {}
        cur = {k: a.numpy() for k, a in self.state_arrays().items()}
        for head in ("state", "initial"):
            if head == "initial" and not groups["initial"]:
                continue
            for k, v in groups[head].items():
                if k in cur and np.asarray(v).dtype != cur[k].dtype:
                    raise CheckpointError(f"{what}: {head}/{k} has dtype {np.asarray(v).dtype}; this scene "
                                          f"stores {cur[k].dtype}")
            out[head] = self.check_state(groups[head], None, CheckpointError, f"{what}: {head}")
        want = {k: np.asarray(v) for k, v in self.extra_state().items()}
        got = groups["extra"]
        if set(got) != set(want):
            raise CheckpointError(f"{what}: host extras {sorted(got)}; this scene has {sorted(want)}")
        for k, v in got.items():
            v = np.asarray(v)
            if v.shape != want[k].shape or v.dtype != want[k].dtype:
                raise CheckpointError(f"{what}: extra/{k} is {v.dtype}{list(v.shape)}; this scene needs "
                                      f"{want[k].dtype}{list(want[k].shape)}")
        out["extra"] = got
        return out

    def load(self, data: dict[str, np.ndarray], checked: dict | None = None) -> None:
        """Restore what ``dump()`` wrote (``checked``: the result of ``check_load`` when the caller
        validated already)."""
        import warp as wp

        checked = checked if checked is not None else self.check_load(data, f"checkpoint data of {self.name!r}")
        self.set_state(checked["state"], checked=checked["state"])
        if "initial" in checked:
            cur = self.state_arrays()
            self._initial = {k: wp.array(checked["initial"][k], dtype=cur[k].dtype, device=self.device)
                             for k in cur}
        self.load_extra_state(checked["extra"])

    def nan_check(self, part: Partition, flags) -> None:
        """Flag envs of ``part`` whose float state is not finite (inside the captured step)."""
        cache = self.__dict__.setdefault("_nan_views", {})
        if part.index not in cache:
            cache[part.index] = (arrays.finite_check_views(
                [arrays.env_slice(a, part.start, part.stop) for a in self.state_arrays().values()]), flags[part.start:part.stop])
        views, part_flags = cache[part.index]
        if part.workers == 1 or sum(v.size for v in views) < _PARALLEL_NAN_CHECK:
            arrays.flag_nonfinite(views, part_flags)
            return
        # a big state: each worker checks its share of every array's columns (a flag is only ever
        # set to 1)
        self.parallel(part, lambda w: arrays.flag_nonfinite(
            [v[:, a:b] for v in views for a, b in [part.chunk(w, v.shape[1])] if b > a], part_flags))


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

    def kernel_modules(self, layout: Layout) -> list | None:
        """As ``Solver.kernel_modules``: the Warp modules this coupler launches (None: undeclared)."""
        return None

    # generic state handling, as for solvers
    register_initial = Solver.register_initial
    get_state = Solver.get_state
    check_state = Solver.check_state
    set_state = Solver.set_state
    reset = Solver.reset
    dump = Solver.dump
    check_load = Solver.check_load
    load = Solver.load
    device = Solver.device
    extra_state = Solver.extra_state
    load_extra_state = Solver.load_extra_state
    on_reset = Solver.on_reset


class Importer(abc.ABC):
    """Turns a file morph into an EntityDescription. Must not need any physics engine."""

    @abc.abstractmethod
    def load(self, morph) -> Any:
        """Return the EntityDescription of a file morph. Raise ``ImportError_`` for a bad file
        (``polyphys.xmlfile.Attrs`` reads typed XML attributes with file:line errors); put notes
        in ``desc.warnings`` (the core emits them and checks the description)."""


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
    #: False: not evaluated inside the step (no readings; e.g. a camera rendered on demand)
    in_step: bool = True
    #: whether ``polyphys run`` stores the readings in trajectories.npz (images go to videos instead)
    trajectory: bool = True

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
        self.field_shapes: dict = {}    # output name -> per-env shape of its reading (default (width,))
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

    def kernel_modules(self, layout: Layout) -> list | None:
        """As ``Solver.kernel_modules``: the Warp modules this sensor launches (None: undeclared)."""
        return None

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

            if not self.in_step and self.layout is not None:
                raise SceneStateError(f"sensor {self.full_name!r}: {what}: the sensor is not evaluated inside the step "
                                      f"(in_step = False), so it has no readings")
            raise SceneStateError(f"sensor {self.full_name!r}: {what} before scene.build()")
        return self._hub

    @_entity_call
    def read(self, envs_idx=None):
        """The measured reading (noise, bias, drift, quantization, saturation, delay applied) of the
        last step, with its time tags: a :class:`polyphys.sensors.Reading`."""
        return self._require_hub("read()").read(self, envs_idx, ground_truth=False)

    @_entity_call
    def read_ground_truth(self, envs_idx=None):
        """The exact value of the last step (no measurement model, no delay), with its time tags."""
        return self._require_hub("read_ground_truth()").read(self, envs_idx, ground_truth=True)

    @_entity_call
    def set_noise(self, noise, envs_idx=None) -> None:
        """Per-env noise standard deviation (domain randomisation): as the ``noise`` argument."""
        self._require_hub("set_noise()").set_param(self, "noise", noise, envs_idx)

    @_entity_call
    def set_bias(self, bias, envs_idx=None) -> None:
        """Per-env constant bias: as the ``bias`` argument."""
        self._require_hub("set_bias()").set_param(self, "bias", bias, envs_idx)

    @_entity_call
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
