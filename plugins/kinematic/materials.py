"""The Kinematic material: an entity moved only by the poses and velocities you set."""

import attrs
from polyphys.materials import Material


@attrs.define(kw_only=True)
class Kinematic(Material):
    """No physical parameters: a kinematic entity has no mass and takes no force. It still moves
    particles through a coupler (one way)."""
