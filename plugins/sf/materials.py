"""SF materials: what an SF entity puts into the gas (initial smoke, or a continuous source).

The entity's morph (a Sphere, or a Box at any orientation) gives the region: the cells (and faces)
whose centres lie inside it.
"""

from __future__ import annotations

import attrs
from polyphys.errors import OptionError
from polyphys.materials import Material
from polyphys.options import non_negative, vec3


def _vec3(cls: str, name: str):
    def convert(value):
        if value is None:
            return None
        try:
            return vec3(value)
        except OptionError as exc:
            raise OptionError(f"{cls}.{name} = {value!r}: {exc}") from None

    return convert


def _finite(instance, attribute, value):
    import math

    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise OptionError(f"{type(instance).__name__}.{attribute.name} = {value!r}: must be a finite number")


@attrs.define(kw_only=True)
class SFMaterial(Material):
    """Base of the SF materials."""


@attrs.define(kw_only=True)
class Smoke(SFMaterial):
    """Initial gas state inside the morph: smoke ``density`` (any unit: a passive concentration),
    ``temperature`` (K, absolute or relative to SFOptions.ambient_temperature — the same scale) and
    ``velocity`` (m/s), written into the cells/faces inside at build (and restored by reset)."""

    density: float = attrs.field(default=1.0, validator=non_negative)
    temperature: float | None = attrs.field(default=None)
    velocity: tuple = attrs.field(default=(0.0, 0.0, 0.0), converter=_vec3("Smoke", "velocity"))

    @temperature.validator
    def _check_t(self, attribute, value):
        if value is not None:
            _finite(self, attribute, value)


@attrs.define(kw_only=True)
class Emitter(SFMaterial):
    """A continuous source. Every substep h, each cell inside gains ``rate``·h of smoke density and
    ``heat``·h of temperature (K/s); with ``velocity`` (m/s) set, the faces inside take that
    velocity (a jet) before the projection; None leaves the velocity alone. Rate, heat, velocity and
    the position are per env (``entity.set_rate(...)``, ``set_heat``, ``set_velocity``, ``set_pos``
    with ``envs_idx``)."""

    rate: float = attrs.field(default=1.0, validator=non_negative)
    heat: float = attrs.field(default=0.0)
    velocity: tuple | None = attrs.field(default=None, converter=_vec3("Emitter", "velocity"))

    @heat.validator
    def _check_heat(self, attribute, value):
        _finite(self, attribute, value)
