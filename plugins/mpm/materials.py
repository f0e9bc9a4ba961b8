"""MPM materials (``polyphys.materials.MPM.<Name>``): elastic, von Mises elasto-plastic, snow,
Drucker–Prager sand and weakly compressible liquid.

Every material has Young's modulus ``E`` (Pa), Poisson's ratio ``nu`` in [0, 0.5) and density
``rho`` (kg/m³); Lamé parameters μ = E/(2(1+ν)), λ = Eν/((1+ν)(1−2ν)). The constitutive models and
their parameters are described in docs/mpm.md.
"""

from __future__ import annotations

import abc
import math

import attrs
from polyphys.errors import OptionError
from polyphys.materials import Material
from polyphys.options import in_range, one_of, positive

# type codes used by the kernels (kernels/transfer.py)
ELASTIC_COROTATED = 0
ELASTIC_NEOHOOKEAN = 1
ELASTOPLASTIC = 2
SNOW = 3
SAND = 4
LIQUID = 5


@attrs.define(kw_only=True)
class MPMMaterial(Material, abc.ABC):
    """Base of the MPM materials (not registered itself: use one of the subclasses)."""

    E: float = attrs.field(default=1e6, validator=positive)
    nu: float = attrs.field(default=0.2, validator=in_range(0.0, 0.5, hi_open=True))
    rho: float = attrs.field(default=1000.0, validator=positive)

    @property
    def mu(self) -> float:
        return self.E / (2.0 * (1.0 + self.nu))

    @property
    def lam(self) -> float:
        return self.E * self.nu / ((1.0 + self.nu) * (1.0 - 2.0 * self.nu))

    @property
    def wave_speed(self) -> float:
        """P-wave speed sqrt((λ+2μ)/ρ) (m/s): sets the explicit stability limit."""
        return math.sqrt((self.lam + 2.0 * self.mu) / self.rho)

    @abc.abstractmethod
    def _code(self) -> tuple[int, tuple]:
        """Kernel encoding of the material: (type code, (p0, p1, p2, p3))."""


@attrs.define(kw_only=True)
class Elastic(MPMMaterial):
    """Hyperelastic solid. ``model``: "corotated" (fixed corotated, Stomakhin et al. 2012) or
    "neohookean"."""

    model: str = attrs.field(default="corotated", validator=one_of("corotated", "neohookean"))

    def _code(self):
        return (ELASTIC_COROTATED if self.model == "corotated" else ELASTIC_NEOHOOKEAN), (0.0, 0.0, 0.0, 0.0)


@attrs.define(kw_only=True)
class ElastoPlastic(MPMMaterial):
    """Fixed-corotated elasticity with von Mises plasticity on the Hencky strain: the deviatoric
    Hencky strain is returned to the yield surface ‖dev ε‖ = yield_stress/(2μ) (Pa)."""

    yield_stress: float = attrs.field(default=1e4, validator=positive)

    def _code(self):
        return ELASTOPLASTIC, (self.yield_stress, 0.0, 0.0, 0.0)


@attrs.define(kw_only=True)
class Snow(MPMMaterial):
    """Stomakhin et al. (2013): singular values of F clamped to [1−theta_c, 1+theta_s], plastic
    volume ratio Jp hardens μ and λ by exp(hardening·(1−Jp))."""

    E: float = attrs.field(default=1.4e5, validator=positive)
    rho: float = attrs.field(default=400.0, validator=positive)
    theta_c: float = attrs.field(default=2.5e-2, validator=in_range(0.0, 1.0, lo_open=True, hi_open=True))
    theta_s: float = attrs.field(default=7.5e-3, validator=positive)
    hardening: float = attrs.field(default=10.0, validator=in_range(0.0, 100.0))

    def _code(self):
        return SNOW, (self.theta_c, self.theta_s, self.hardening, 0.0)


@attrs.define(kw_only=True)
class Sand(MPMMaterial):
    """Drucker–Prager elasto-plasticity on the Hencky strain (Klar et al. 2016) with a constant
    friction angle φ (degrees) and no cohesion: the cone ‖dev τ‖ ≤ −α tr τ.

    ``cone`` says what φ is matched to:
    - "compression" (default, Klar et al.): the Mohr–Coulomb triaxial-compression meridian,
      α = √(2/3)·2 sin φ/(3 − sin φ). Steady simple shear (a surface avalanche) then stops at
      tan β = 3α/√2: the angle of repose is 29.6° for φ = 25°, 43.4° for φ = 40°.
    - "shear": steady simple shear stops at tan φ, α = √2·tan φ/3, so the angle of repose of a
      poured heap is φ (docs/mpm.md). φ ≤ 60° (above, α would exceed √(2/3) and an unconfined
      column could stand without cohesion).
    """

    E: float = attrs.field(default=3.537e5, validator=positive)
    nu: float = attrs.field(default=0.3, validator=in_range(0.0, 0.5, hi_open=True))
    rho: float = attrs.field(default=2200.0, validator=positive)
    friction_angle: float = attrs.field(default=35.0, validator=in_range(0.0, 90.0, lo_open=True,
                                                                         hi_open=True))
    cone: str = attrs.field(default="compression", validator=one_of("compression", "shear"))

    def __attrs_post_init__(self):
        if self.cone == "shear" and self.friction_angle > 60.0:
            raise OptionError(f"Sand.friction_angle = {self.friction_angle!r} with cone='shear': must be in "
                              f"(0, 60] (α = √2·tan φ/3 would exceed √(2/3))")

    @property
    def alpha(self) -> float:
        if self.cone == "shear":
            return math.sqrt(2.0) * math.tan(math.radians(self.friction_angle)) / 3.0
        s = math.sin(math.radians(self.friction_angle))
        return math.sqrt(2.0 / 3.0) * 2.0 * s / (3.0 - s)

    def _code(self):
        return SAND, (self.alpha, 0.0, 0.0, 0.0)


@attrs.define(kw_only=True)
class Liquid(MPMMaterial):
    """Weakly compressible liquid: Kirchhoff pressure from J alone, τ = λ·J(J−1)·I (μ unused,
    F reset to J^(1/3)·I each substep). The default (E=1e6, ν=0.2) gives a sound speed
    sqrt(λ/ρ) ≈ 17 m/s: density varies by ~ρgH/λ ≈ 1 % in a 30 cm column."""

    E: float = attrs.field(default=1e6, validator=positive)

    def _code(self):
        return LIQUID, (0.0, 0.0, 0.0, 0.0)

    @property
    def wave_speed(self) -> float:
        return math.sqrt(self.lam / self.rho)
