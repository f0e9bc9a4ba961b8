"""The Ballistic material: what one entity's particles are made of."""

import attrs
from polyphys.materials import Material
from polyphys.options import in_range, non_negative, positive


@attrs.define(kw_only=True)
class Ballistic(Material):
    """Particles of density ``rho`` (kg/m³; a particle's mass is rho · particle_size³).

    restitution: e in [0, 1], the ratio of the normal speed after and before a bounce.
    friction: Coulomb coefficient μ >= 0; a bounce removes at most μ·(1 + e)·v_n of tangential speed.
    """

    rho: float = attrs.field(default=1000.0, validator=positive)
    restitution: float = attrs.field(default=0.5, validator=in_range(0.0, 1.0))
    friction: float = attrs.field(default=0.0, validator=non_negative)
