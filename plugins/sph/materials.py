"""SPH materials: ``polyphys.materials.SPH.Liquid`` and ``polyphys.materials.SPH.Boundary``."""

import attrs
from polyphys.materials import Material
from polyphys.options import non_negative, positive


@attrs.define(kw_only=True)
class Liquid(Material):
    """A liquid sampled into SPH particles.

    rho: rest density (kg/m³). stiffness: Tait bulk constant B (Pa) of the WCSPH equation of state
    p = B((ρ/ρ₀)^exponent − 1) (speed of sound c₀ = √(B·exponent/ρ₀)); unused by DFSPH.
    exponent: Tait exponent γ (7 for water); unused by DFSPH. mu: dynamic viscosity (Pa·s) of the
    SPH Laplacian viscosity (ν = mu/rho). gamma: cohesion coefficient of Akinci et al. (2013)
    surface tension (0 switches it off). Defaults follow Genesis's SPH Liquid; mu = 5 Pa·s is its
    default viscosity 0.005, which Genesis applies as a kinematic coefficient (m²/s, not divided by
    the density): ν = 0.005 m²/s. SPH at centimetre particles needs viscosity of this order to damp
    particle-scale noise — water's 1e-3 Pa·s makes a resting DFSPH or WCSPH column blow up
    (docs/sph.md); the solver warns below ν = 0.01·dx·√(2|g|Δ) unless XSPH is on.
    """

    rho: float = attrs.field(default=1000.0, validator=positive)
    stiffness: float = attrs.field(default=50000.0, validator=positive)
    exponent: float = attrs.field(default=7.0, validator=positive)
    mu: float = attrs.field(default=5.0, validator=non_negative)
    gamma: float = attrs.field(default=0.01, validator=non_negative)


@attrs.define(kw_only=True)
class Boundary(Material):
    """A static SPH boundary: the morph's surface (Plane, Box, Sphere, Mesh) is sampled into
    boundary particles (Akinci et al. 2012) that the liquid cannot cross. It never moves; moving
    bodies couple through a coupler (``ParticleView``), not through this material."""
