"""Options of the FEM solver (attrs only: importing this module imports no Warp)."""

from __future__ import annotations

import attrs
import numpy as np
from polyphys.errors import OptionError
from polyphys.options import Options, in_range, non_negative, one_of, planes, positive, positive_int


def _positive_number(instance, attribute, value):
    if value is None:
        raise OptionError(f"FEMOptions.{attribute.name} = None: must be a finite number > 0")
    positive(instance, attribute, value)


def _opt_box(value):
    if value is None:
        return None
    try:
        lo, hi = (tuple(float(x) for x in np.asarray(v, dtype=float).reshape(3)) for v in value)
    except (TypeError, ValueError):
        raise OptionError(f"FEMOptions.domain = {value!r}: expected ((xmin, ymin, zmin), (xmax, ymax, zmax))") \
            from None
    if not all(a < b for a, b in zip(lo, hi)):
        raise OptionError(f"FEMOptions.domain = {value!r}: every lower bound must be < its upper bound")
    return (lo, hi)


@attrs.frozen(kw_only=True)
class FEMOptions(Options):
    """Numerics and boundary conditions of the FEM solver.

    integrator: "explicit" (symplectic Euler, stable below the CFL step ~ edge / wave speed) or
        "implicit" (backward Euler solved as the minimisation of the incremental potential).
    newton_iters, cg_iters, line_search_iters: fixed iteration caps of the implicit solver (the step
        is graph-captured, so every iteration runs; an env whose residual fell below its tolerance is
        masked out on the device).
    newton_tol: an env stops Newton when its preconditioned gradient norm fell below newton_tol times
        the one at the substep's first iteration. cg_tol: relative (preconditioned) CG residual.
    project_hessian: use the Neo-Hookean Hessian projected to positive semi-definite in its analytic
        eigensystem (Smith et al. 2018 §4) instead of the exact, indefinite one.
    planes: static planes ((point), (normal)) the vertices cannot cross; the normal points to the free
        side. floor_height: shorthand for a plane z = floor_height. domain: an axis-aligned box
        ((lo), (hi)) the vertices stay in. friction: Coulomb coefficient of every plane and wall.
    stick_velocity: ε_v (m/s) of the implicit integrator's smoothed Coulomb friction (IPC, Li et al.
        2020): below this tangential speed a contact's friction is a stiff viscous ramp rather than
        the full μλ, so a block "stuck" under a tangential load creeps at most at ε_v. Smaller: truer
        sticking, stiffer Newton systems. (The explicit integrator does not use it.)
    """

    integrator: str = attrs.field(default="explicit", validator=one_of("explicit", "implicit"))
    newton_iters: int = attrs.field(default=3, validator=positive_int)
    cg_iters: int = attrs.field(default=50, validator=positive_int)
    line_search_iters: int = attrs.field(default=6, validator=positive_int)
    newton_tol: float = attrs.field(default=1e-5, validator=positive)
    cg_tol: float = attrs.field(default=1e-4, validator=in_range(0.0, 1.0, lo_open=True, hi_open=True))
    planes: tuple = attrs.field(default=(), converter=planes)
    floor_height: float | None = attrs.field(default=None, validator=attrs.validators.optional(
        attrs.validators.instance_of((int, float))))
    domain: tuple | None = attrs.field(default=None, converter=_opt_box)
    friction: float = attrs.field(default=0.5, validator=non_negative)
    stick_velocity: float = attrs.field(default=1e-3, validator=_positive_number)
    project_hessian: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))
    dt: float | None = attrs.field(default=None, validator=positive)

    def all_planes(self) -> list:
        """Every static plane (point, normal): ``planes``, the floor and the domain walls."""
        out = list(self.planes)
        if self.floor_height is not None:
            out.append(((0.0, 0.0, float(self.floor_height)), (0.0, 0.0, 1.0)))
        if self.domain is not None:
            lo, hi = self.domain
            for k in range(3):
                n = [0.0, 0.0, 0.0]
                n[k] = 1.0
                out.append((lo, tuple(n)))
                n = [0.0, 0.0, 0.0]
                n[k] = -1.0
                out.append((hi, tuple(n)))
        return out
