"""PBDOptions: the numerics of the PBD solver (iterations, domain, static colliders)."""

from __future__ import annotations

import math

import attrs
from polyphys.errors import OptionError
from polyphys.options import Options, in_range, non_negative, planes, positive, positive_int, vec3


def _spheres(value):
    out = []
    if isinstance(value, (str, bytes, dict)) or (value is not None and not hasattr(value, "__iter__")):
        raise OptionError(f"PBDOptions.static_spheres = {value!r}: expected a list of ((cx, cy, cz), radius) pairs")
    for k, item in enumerate(value or ()):
        try:
            c, r = item
            c, r = vec3(c), float(r)
        except (TypeError, ValueError, OverflowError, OptionError):
            raise OptionError(f"PBDOptions.static_spheres[{k}] = {item!r}: expected ((cx, cy, cz), radius)") \
                from None
        if not (r > 0 and math.isfinite(r)):
            raise OptionError(f"PBDOptions.static_spheres[{k}] radius = {r!r}: must be > 0")
        out.append((c, r))
    return tuple(out)


@attrs.frozen(kw_only=True)
class PBDOptions(Options):
    """Options of the PBD solver (``Scene(pbd=PBDOptions(...))``).

    iterations: constraint iterations per substep (substeps come from ``SimOptions.substeps``;
        XPBD converges best with many substeps and few iterations, Macklin et al. 2019).
    dt: optional solver substep; must equal SimOptions.dt / substeps (checked at build).
    lower_bound, upper_bound: the domain box (m). Particles are kept inside it (its six faces are
        static planes with friction) and the neighbour grid covers it.
    planes: extra static planes ``((px, py, pz), (nx, ny, nz))``; particles stay on the normal side.
    static_spheres: static spheres ``((cx, cy, cz), radius)`` particles stay outside of.
    boundary_friction: Coulomb coefficient of the box, planes and spheres.
    relaxation: successive over-relaxation factor of the averaged (Jacobi) contact corrections.
    damping: velocity damping rate (1/s): v *= max(0, 1 - damping * h) each substep.
    fluid_cfm: relative regularisation of the PBF density constraint (epsilon of Macklin & Müller
        2013, relative to the constraint's gradient norm).
    """

    iterations: int = attrs.field(default=4, validator=positive_int)
    dt: float | None = attrs.field(default=None, validator=positive)
    lower_bound: tuple = attrs.field(default=(-1.0, -1.0, 0.0), converter=vec3)
    upper_bound: tuple = attrs.field(default=(1.0, 1.0, 2.0), converter=vec3)
    planes: tuple = attrs.field(default=(), converter=planes)
    static_spheres: tuple = attrs.field(default=(), converter=_spheres)
    boundary_friction: float = attrs.field(default=0.3, validator=non_negative)
    relaxation: float = attrs.field(default=1.0, validator=in_range(0.0, 2.0, lo_open=True))
    damping: float = attrs.field(default=0.0, validator=non_negative)
    fluid_cfm: float = attrs.field(default=1e-3, validator=non_negative)

    def __attrs_post_init__(self):
        bad = [k for k in range(3) if not self.upper_bound[k] > self.lower_bound[k]]
        if bad:
            raise OptionError(f"PBDOptions: upper_bound {self.upper_bound} must exceed lower_bound "
                              f"{self.lower_bound} on every axis (fails on axis {bad})")
