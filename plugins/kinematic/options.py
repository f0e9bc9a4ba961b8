"""Options of the kinematic solver."""

import attrs
from polyphys.options import Options


@attrs.frozen(kw_only=True)
class KinematicOptions(Options):
    """The kinematic solver has no tunable numerics; the class exists so that
    ``Scene(kinematic=KinematicOptions())`` is explicit and validated like any other solver's."""
