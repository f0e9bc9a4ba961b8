"""Options of the ballistic solver: ``Scene(ballistic=BallisticOptions(...))``."""

import math

import attrs
from polyphys.errors import OptionError
from polyphys.options import Options, positive


def _finite(instance, attribute, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise OptionError(f"{type(instance).__name__}.{attribute.name} = {value!r}: must be a finite "
                          f"number")


@attrs.frozen(kw_only=True)
class BallisticOptions(Options):
    """particle_size: lattice spacing (m) at which Box/Sphere morphs are sampled; also the particle
    diameter (a particle touches the ground when its centre is particle_size/2 above it).
    ground_height: z of the ground plane (m)."""

    particle_size: float = attrs.field(default=0.05, validator=positive)
    ground_height: float = attrs.field(default=0.0, validator=_finite)


@attrs.frozen(kw_only=True)
class DragOptions(Options):
    """Options of the ``ballistic_drag`` coupler: ``Scene(coupler=DragOptions(...))``.

    radius: a particle closer than this (m) to a link's centre of mass is dragged by that link
    (by the nearest one when several are in reach).
    time_constant: τ (s) of the drag: the particle's velocity relative to the link's velocity at
    the particle decays as exp(-t/τ)."""

    radius: float = attrs.field(default=0.2, validator=positive)
    time_constant: float = attrs.field(default=0.05, validator=positive)
