"""FEM materials: ``polyphys.materials.FEM.Elastic`` (linear or corotated) and ``.NeoHookean``
(stable Neo-Hookean, Smith, de Goes and Kim 2018).

E (Pa), nu (Poisson ratio), rho (kg/m³); Rayleigh damping C = damping_mass·M + damping_stiffness·K
(damping_mass in 1/s, damping_stiffness in s; K is the corotated linear stiffness, so rigid motions
are not damped by the stiffness term).
"""

from __future__ import annotations

import abc

import attrs
from polyphys.errors import OptionError
from polyphys.materials import Material
from polyphys.options import non_negative, one_of, positive


def _poisson(instance, attribute, value):
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok or not (-1.0 < value < 0.5):
        extra = (" (nu >= 0.5 is incompressible: these compressible models need nu < 0.5; use e.g. "
                 "0.45-0.49 for nearly incompressible tissue)" if ok and value >= 0.5 else "")
        raise OptionError(f"{type(instance).__name__}.nu = {value!r}: must be in (-1, 0.5){extra}")


@attrs.define(kw_only=True)
class FEMMaterial(Material, abc.ABC):
    E: float = attrs.field(default=1e5, validator=positive)
    nu: float = attrs.field(default=0.3, validator=_poisson)
    rho: float = attrs.field(default=1000.0, validator=positive)
    damping_mass: float = attrs.field(default=0.0, validator=non_negative)
    damping_stiffness: float = attrs.field(default=0.0, validator=non_negative)

    @property
    def lame(self) -> tuple[float, float]:
        """(mu, lambda) of linear elasticity."""
        mu = self.E / (2.0 * (1.0 + self.nu))
        lam = self.E * self.nu / ((1.0 + self.nu) * (1.0 - 2.0 * self.nu))
        return mu, lam

    @abc.abstractmethod
    def model_params(self) -> tuple[int, float, float]:
        """(model code, mu, lambda) the kernels use."""

@attrs.define(kw_only=True)
class Elastic(FEMMaterial):
    """Linear elasticity (model="linear": small strain, not rotation invariant) or corotated linear
    elasticity (model="corotated": Psi = mu |S - I|^2 + lambda/2 tr(S - I)^2 with F = R S)."""

    model: str = attrs.field(default="corotated", validator=one_of("linear", "corotated"))

    def model_params(self):
        mu, lam = self.lame
        return (0 if self.model == "linear" else 1), mu, lam


@attrs.define(kw_only=True)
class NeoHookean(FEMMaterial):
    """Stable Neo-Hookean (Smith et al. 2018, eq. 14): Psi = mu/2 (I_C - 3) + lambda/2 (J - alpha)^2
    - mu/2 log(I_C + 1), alpha = 1 + 3 mu / (4 lambda), with mu = 4/3 mu_L and lambda = lambda_L +
    5/6 mu_L so that it linearises to linear elasticity with E, nu (their §3.4)."""

    def model_params(self):
        mu_l, lam_l = self.lame
        if lam_l + 5.0 / 6.0 * mu_l <= 0:
            raise OptionError(f"NeoHookean.nu = {self.nu}: the stable Neo-Hookean needs lambda_L + "
                              f"5/6 mu_L > 0, i.e. nu > -0.2 approximately")
        return 2, 4.0 / 3.0 * mu_l, lam_l + 5.0 / 6.0 * mu_l
