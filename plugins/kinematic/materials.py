"""The Kinematic material: an entity moved only by the poses and velocities you set."""

import attrs
from polyphys.materials import Material
from polyphys.options import in_range, non_negative, positive


@attrs.define(kw_only=True)
class Kinematic(Material):
    """No mass and no force response: a kinematic entity moves particles through a coupler (one
    way) and takes no reaction. The coupling fields are those of docs/semantics.md §C1:

    coup_friction: μ of the Legacy velocity response; coup_restitution: e in [0, 1];
    coup_softness: length (m) over which the SDF influence weight exp(-d/softness) decays.
    """

    coup_friction: float = attrs.field(default=0.1, validator=non_negative)
    coup_restitution: float = attrs.field(default=0.0, validator=in_range(0.0, 1.0))
    coup_softness: float = attrs.field(default=0.002, validator=positive)
