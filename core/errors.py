"""Exceptions raised by polyphys. Every message names the field, the value and what is allowed."""


class PolyphysError(Exception):
    """Base class of every polyphys error."""


class OptionError(PolyphysError, ValueError):
    """An option, argument or input array has a value that is not allowed."""


class BuildError(PolyphysError):
    """The scene cannot be built as described (conflicting dt, a solver pair claimed twice, ...)."""


class SceneStateError(PolyphysError, RuntimeError):
    """A call that is not allowed in the scene's current lifecycle stage (step before build, ...)."""


class CapabilityError(PolyphysError):
    """An operation needs a capability that a plugin in the scene does not declare."""

    def __init__(self, plugin: str, capability: str, detail: str = ""):
        self.plugin = plugin
        self.capability = capability
        msg = f"plugin {plugin!r} does not support capability {capability!r}"
        super().__init__(msg + (f": {detail}" if detail else ""))


class PluginLoadError(PolyphysError):
    """A plugin entry point failed to load (raised in strict mode, warned otherwise)."""


class PluginLoadWarning(UserWarning):
    """A plugin entry point failed to load and was skipped."""


class PluginConflictError(PolyphysError):
    """Two distributions provide a plugin with the same name."""


class CheckpointError(PolyphysError):
    """A checkpoint does not match the scene it is loaded into, or is malformed."""


class SimulationError(PolyphysError, RuntimeError):
    """A device-side condition found after a step (budget overflow, NaN with nan_policy='raise')."""


class BudgetExceededError(SimulationError):
    """A fixed-size buffer (contacts, pairs, ...) overflowed in a step; names budget, env and count."""


class ImportError_(PolyphysError):
    """A model file could not be imported (malformed XML, missing mesh, ...)."""


class PolyphysWarning(UserWarning):
    """A condition the user should know of (a clamped value, an unsupported element, ...)."""


class WorkerError(PolyphysError):
    """A distributed worker (a Ray actor of ``polyphys.distributed``) raised; the message names the
    worker, its node and host, the call, and carries the worker's own traceback."""

    def __init__(self, message: str, *, worker: int | None = None, cause_type: str = "",
                 remote_traceback: str = ""):
        super().__init__(message)
        self.worker = worker
        self.cause_type = cause_type
        self.remote_traceback = remote_traceback


class WorkerLostError(PolyphysError):
    """Distributed workers were lost (node died, process killed, timed out) more often than the
    pool's ``max_recoveries`` allows, or a lost worker could not be rebuilt."""
