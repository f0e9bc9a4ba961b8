"""Options of the kinematic solver."""

import attrs


@attrs.frozen(kw_only=True)
class KinematicOptions:
    """The kinematic solver has no tunable numerics; the class exists so that
    ``Scene(kinematic=KinematicOptions())`` is explicit and validated like any other solver's."""
