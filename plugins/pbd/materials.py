"""Materials of the PBD solver: ``polyphys.materials.PBD.Cloth``, ``.Elastic``, ``.Particle``,
``.Liquid``.

Compliances are XPBD compliances (inverse stiffness, Macklin et al. 2016): 0 is rigid. Distance
compliance is in m/N, bending compliance in rad/(N·m), volume compliance in m³/N.
"""

import attrs
from polyphys.materials import Material
from polyphys.options import boolean, in_range, non_negative, positive


@attrs.define(kw_only=True)
class PBDMaterial(Material):
    """Common fields: friction (Coulomb, particle contacts; a pair uses the mean of its two)."""

    friction: float = attrs.field(default=0.3, validator=non_negative)


@attrs.define(kw_only=True)
class Cloth(PBDMaterial):
    """A triangle-mesh cloth (Mesh morph). rho: areal density (kg/m²); thickness: collision
    diameter of its particles (m); stretch/bending compliance: XPBD compliances of the edge
    distance and dihedral bending constraints; self_collision: particle-particle contact
    between non-adjacent vertices of this cloth; tethers: long-range attachments (Kim, Chentanez
    & Müller 2012) from every vertex to its (up to 4) nearest initially pinned vertices, which
    keep it within its rest distance of them while they stay pinned (removes the stretch that
    Gauss-Seidel leaves in long hanging chains)."""

    rho: float = attrs.field(default=0.2, validator=positive)
    thickness: float = attrs.field(default=0.004, validator=positive)
    stretch_compliance: float = attrs.field(default=0.0, validator=non_negative)
    bending_compliance: float = attrs.field(default=1.0, validator=non_negative)
    self_collision: bool = attrs.field(default=True, validator=boolean)
    tethers: bool = attrs.field(default=True, validator=boolean)


@attrs.define(kw_only=True)
class Elastic(PBDMaterial):
    """An elastic body. From a tetrahedral Mesh morph (faces (m, 4)): edge distance constraints
    (stretch_compliance) and tet volume constraints (volume_compliance). From any other volume
    morph: particles sampled at ``particle_size`` spacing held by shape matching (Müller 2005)
    with ``shape_stiffness`` in (0, 1] per iteration. rho: density (kg/m³)."""

    rho: float = attrs.field(default=1000.0, validator=positive)
    particle_size: float = attrs.field(default=0.02, validator=positive)
    stretch_compliance: float = attrs.field(default=0.0, validator=non_negative)
    volume_compliance: float = attrs.field(default=0.0, validator=non_negative)
    shape_stiffness: float = attrs.field(default=1.0, validator=in_range(0.0, 1.0, lo_open=True))


@attrs.define(kw_only=True)
class Particle(PBDMaterial):
    """Granular particles sampled at ``particle_size`` spacing (the particle diameter). Each has
    mass rho · particle_size³. Optional ``edges=`` at add_entity turn them into a mass-spring
    system held by XPBD distance constraints of ``edge_compliance``."""

    rho: float = attrs.field(default=1800.0, validator=positive)
    particle_size: float = attrs.field(default=0.02, validator=positive)
    edge_compliance: float = attrs.field(default=0.0, validator=non_negative)


@attrs.define(kw_only=True)
class Liquid(PBDMaterial):
    """A position-based fluid (Macklin & Müller 2013): particles at ``particle_size`` spacing,
    rest density rho (kg/m³), smoothing radius 2 · particle_size, XSPH viscosity coefficient
    ``viscosity`` (dimensionless, 0..1)."""

    rho: float = attrs.field(default=1000.0, validator=positive)
    particle_size: float = attrs.field(default=0.02, validator=positive)
    viscosity: float = attrs.field(default=0.01, validator=in_range(0.0, 1.0))
    friction: float = attrs.field(default=0.0, validator=non_negative)
