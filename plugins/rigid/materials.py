"""The Rigid material."""

from __future__ import annotations

import attrs
from polyphys.materials import Material
from polyphys.options import in_range, non_negative, positive


def _sol_params(value):
    from polyphys.errors import OptionError

    if value is None:
        return None
    try:
        vals = tuple(float(x) for x in value)
    except (TypeError, ValueError, OverflowError):
        vals = ()
    if len(vals) != 7 or isinstance(value, (str, bytes)):
        raise OptionError(f"Rigid.sol_params = {value!r}: expected 7 numbers (timeconst, dampratio, "
                          f"dmin, dmax, width, mid, power)")
    return vals


@attrs.define(kw_only=True)
class Rigid(Material):
    """A rigid body material.

    rho: density (kg/m³) used for primitive morphs (imported models keep their own masses);
    friction: sliding friction coefficient in [0.01, 5] (None: the model's own, 1.0 for primitives);
    sol_params: contact solver parameters (timeconst, dampratio, dmin, dmax, width, mid, power),
    None for the defaults (docs/semantics.md §R6);
    coup_friction, coup_restitution, coup_softness: parameters a coupler reads (RigidGeoms view).
    """

    rho: float = attrs.field(default=1000.0, validator=positive)
    friction: float | None = attrs.field(default=None,
                                         validator=attrs.validators.optional(in_range(0.01, 5.0)))
    sol_params: tuple | None = attrs.field(default=None, converter=_sol_params)
    coup_friction: float = attrs.field(default=0.1, validator=non_negative)
    coup_restitution: float = attrs.field(default=0.0, validator=in_range(0.0, 1.0))
    coup_softness: float = attrs.field(default=0.002, validator=non_negative)
