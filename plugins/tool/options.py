"""Options of the tool solver."""

import attrs


@attrs.frozen(kw_only=True)
class ToolOptions:
    """The tool solver has no tunable numerics (poses advance by the set velocities, exactly); the
    class exists so that ``Scene(tool=ToolOptions())`` is explicit and validated like any other
    solver's."""
