"""The Tool material: a rigid, velocity-driven body that pushes particle material one way and reads
back the reaction."""

from __future__ import annotations

import attrs
from polyphys.errors import OptionError
from polyphys.materials import Material
from polyphys.options import in_range, non_negative, positive


def _target(value):
    if value is None:
        return None
    if isinstance(value, str):
        value = (value,)
    try:
        out = tuple(value)
    except TypeError:
        raise OptionError(f"Tool.target = {value!r}: expected a solver name or a list of names") from None
    if not out or any(not isinstance(v, str) or not v for v in out):
        raise OptionError(f"Tool.target = {value!r}: expected a solver name or a non-empty list of names")
    return out


@attrs.define(kw_only=True)
class Tool(Material):
    """A tool: prescribed motion (the velocities you set), no mass, infinitely stiff. The Legacy
    coupler's SDF response acts on the particles (or MPM grid nodes) near it (docs/legacy.md):

    coup_friction: μ of the tangential response (0: frictionless; large: the material sticks while
    pressed); coup_restitution: e in [0, 1]; coup_softness: length (m) over which the influence
    weight exp(-d/softness) decays outside the surface.
    target: the particle solver(s) the tool acts on ("mpm", ["mpm", "sph"], ...); None: every
    solver of the scene that exposes ParticleView. Checked at build: an unknown solver, one not in
    the scene or one without particles is an error. Tools of one scene must share one target set
    (the Legacy coupler couples solver pairs, docs/tool.md).
    """

    coup_friction: float = attrs.field(default=0.5, validator=non_negative)
    coup_restitution: float = attrs.field(default=0.0, validator=in_range(0.0, 1.0))
    coup_softness: float = attrs.field(default=0.002, validator=positive)
    target: tuple | None = attrs.field(default=None, converter=_target)
