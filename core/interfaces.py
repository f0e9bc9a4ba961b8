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
        """Return the EntityDescription of a file morph. Raise ``ImportError_`` for a bad file
        (``polyphys.xmlfile.Attrs`` reads typed XML attributes with file:line errors); put notes
        in ``desc.warnings`` (the core emits them and checks the description)."""


class Sensor(abc.ABC):
    """Attached to an entity (or link/site); ``step()`` runs after the physics of each step.

    ``read(envs_idx=None)`` returns a dict with ``value`` and timing metadata: ``step`` (per env),
    ``time``, and ``stage`` (which substep/stage the value belongs to)."""

    def __init__(self, scene: Scene, spec: SensorSpec, entity: Entity | None = None, **kwargs):
        self.scene = scene
        self.spec = spec
        self.entity = entity
        self.kwargs = kwargs

    def build(self, layout: Layout) -> None:
        self.layout = layout

    def step(self) -> None:
        pass

    def reset(self, envs_idx: np.ndarray) -> None:
        pass

    @abc.abstractmethod
    def read(self, envs_idx=None) -> dict:
        """The reading with its timing metadata."""


def check_options(owner: str, options_type: type, options: Any) -> Any:
    if options is None:
        return options_type()
    if not isinstance(options, options_type):
        raise OptionError(f"options for {owner!r} must be {options_type.__module__}."
                          f"{options_type.__qualname__}, got {type(options).__name__}")
    return options
