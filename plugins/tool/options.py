"""Options of the tool solver."""

import attrs
from polyphys.options import Options


@attrs.frozen(kw_only=True)
class ToolOptions(Options):
    """The tool solver has no tunable numerics (poses advance by the set velocities, exactly); the
    class exists so that ``Scene(tool=ToolOptions())`` is explicit and validated like any other
    solver's."""
