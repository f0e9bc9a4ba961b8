"""polyphys: a plugin-based multi-physics simulation framework.

Importing polyphys is cheap: no Warp module is compiled and no plugin is imported until a scene
needs it. Plugins (solvers, couplers, importers, sensors, materials) come through the entry-point
group ``polyphys``; see ``polyphys plugins``.
"""

from __future__ import annotations

from . import materials, morphs
from .errors import (
    BudgetExceededError,
    BuildError,
    CapabilityError,
    CheckpointError,
    OptionError,
    PluginConflictError,
    PluginLoadError,
    PolyphysError,
    SceneStateError,
    SimulationError,
)
from .hookspecs import hookimpl
from .options import SimOptions
from .registry import register, registry, unregister
from .specs import (
    Capabilities,
    ContractScene,
    CouplerSpec,
    ImporterSpec,
    MaterialSpec,
    SensorSpec,
    SolverSpec,
)
from .startup import get_verbosity, set_verbosity

__version__ = "0.1.0"

__all__ = [
    "Scene", "SimOptions", "Capabilities", "SolverSpec", "CouplerSpec", "ImporterSpec", "SensorSpec",
    "MaterialSpec", "ContractScene", "hookimpl", "register", "unregister", "registry", "describe",
    "materials", "morphs", "PolyphysError", "OptionError", "BuildError", "CapabilityError",
    "CheckpointError", "SceneStateError", "SimulationError", "BudgetExceededError",
    "PluginConflictError", "PluginLoadError", "set_verbosity", "get_verbosity", "__version__",
]


def __getattr__(name: str):
    # Scene pulls in numpy-heavy modules only; still keep it lazy so `import polyphys` stays tiny.
    if name == "Scene":
        from .scene import Scene

        return Scene
    if name == "describe":
        from .importing import describe

        return describe
    raise AttributeError(f"module 'polyphys' has no attribute {name!r}")
