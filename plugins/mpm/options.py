"""Options of the MPM solver: the simulation domain, its grid and its boundary conditions."""

from __future__ import annotations

import math

import attrs
from polyphys.errors import OptionError
from polyphys.options import Options, non_negative, one_of, planes, positive, vec3

BOUNDARIES = ("sticky", "slip", "separate")


def _vec3(name):
    def convert(value):
        try:
            return vec3(value)
        except OptionError as exc:
            raise OptionError(f"MPMOptions.{name} = {value!r}: {exc}") from None

    return convert


def _check_boundary(instance, attribute, value):
    ok = value in BOUNDARIES if isinstance(value, str) else (
        isinstance(value, tuple) and len(value) == 3 and all(isinstance(v, str) and v in BOUNDARIES for v in value))
    if not ok:
        raise OptionError(f"MPMOptions.boundary = {value!r}: must be one of {', '.join(map(repr, BOUNDARIES))} "
                          f"or a triple of them for the walls normal to x, y and z")


def _boundary(value):
    return value if isinstance(value, str) or not isinstance(value, (list, tuple)) else tuple(value)


@attrs.frozen(kw_only=True)
class MPMOptions(Options):
    """MLS-MPM solver options (``Scene(mpm=MPMOptions(...))``).

    lower_bound, upper_bound: corners of the simulation domain (m): the walls' surfaces, the region
        material may occupy (particles must start inside it). Every env has its own dense grid over it
        plus ``boundary_padding`` cells of wall layer outside each face. When (upper − lower)·grid_density
        is not a whole number on an axis, the walls of that axis move out by half the remainder each
        (``wall_lower``/``wall_upper``; a warning at build says where), so walls stay on node layers and
        the grid stays centred on the domain.
    grid_density: grid cells per metre (dx = 1/grid_density).
    particle_size: lattice spacing of the particle sampler (m); None: dx/2 (8 particles per cell).
    boundary: what the domain walls (the ``boundary_padding`` cells outside the domain) and the static ``planes``
        do to a grid velocity: "sticky" (zeroed), "slip" (normal component zeroed), "separate"
        (normal component zeroed only when it points into the wall). A triple (bx, by, bz) sets the
        walls normal to x, y and z separately (planes take bz), e.g. ("slip", "slip", "sticky"):
        free-slip side walls (symmetry planes) over a no-slip floor.
    boundary_padding: width in cells of the wall layer (>= 3: the quadratic kernel reaches 1.5 cells).
    wall_surface: True (default): the node layer on the wall surface is acted on too, one-sidedly (a
        node moving into the wall is zeroed by a sticky wall, loses its normal part with ``friction``
        by a slip/separate one; a node moving away is free) and particles are held on the wall
        surface (Genesis' CubeBoundary on nodes and particles): a resting liquid keeps its volume;
        material feels the wall from 1.5 cells away (the quadratic kernel's reach). False (the old
        behaviour): the walls act on the nodes inside the wall layer only; the node layer on the wall
        surface is free, so material sinks up to ~0.5 cell into the wall layer and a resting liquid
        keeps leaking into it (docs/mpm.md, "Walls and liquid volume").
    friction: Coulomb friction coefficient of "slip"/"separate" walls and planes (0: frictionless).
    planes: static planes ((point, normal), ...); grid nodes behind a plane (on the side opposite
        to its normal) get the boundary condition above.
    cfl_check: "error" (default) or "warn" when the substep exceeds the elastic-wave limit
        h_max = cfl_number·dx/c, c = sqrt((λ+2μ)/ρ); "off" skips the check.
    cfl_number: the Courant number of that limit.
    """

    lower_bound: tuple = attrs.field(default=(-1.0, -1.0, 0.0), converter=_vec3("lower_bound"))
    upper_bound: tuple = attrs.field(default=(1.0, 1.0, 1.0), converter=_vec3("upper_bound"))
    grid_density: float = attrs.field(default=64.0, validator=positive)
    particle_size: float | None = attrs.field(default=None, validator=positive)
    boundary: str | tuple = attrs.field(default="sticky", converter=_boundary, validator=_check_boundary)
    boundary_padding: int = attrs.field(default=3)
    wall_surface: bool = attrs.field(default=True)
    friction: float = attrs.field(default=0.0, validator=non_negative)
    planes: tuple = attrs.field(default=(), converter=planes)
    cfl_check: str = attrs.field(default="error", validator=one_of("error", "warn", "off"))
    cfl_number: float = attrs.field(default=0.5, validator=positive)

    @wall_surface.validator
    def _check_wall_surface(self, attribute, value):
        if not isinstance(value, bool):
            raise OptionError(f"MPMOptions.wall_surface = {value!r}: must be True or False")

    @boundary_padding.validator
    def _check_padding(self, attribute, value):
        if isinstance(value, bool) or not isinstance(value, int) or value < 3:
            raise OptionError(f"MPMOptions.boundary_padding = {value!r}: must be an integer >= 3 (the "
                              f"quadratic B-spline reaches 1.5 cells around a particle)")

    def __attrs_post_init__(self):
        lo, hi = self.lower_bound, self.upper_bound
        if not all(a < b for a, b in zip(lo, hi)):
            raise OptionError(f"MPMOptions: lower_bound {lo} must be below upper_bound {hi} on every axis")
        n = self.inner_cells
        if min(n) < 2:
            raise OptionError(f"MPMOptions: the domain {lo}..{hi} at grid_density {self.grid_density} is "
                              f"{n} cells wide; each axis needs at least 2 cells (raise grid_density or the "
                              f"domain)")

    @property
    def wall_boundaries(self) -> tuple:
        """Boundary codes (indices in BOUNDARIES) of the walls normal to x, y, z."""
        b = (self.boundary,) * 3 if isinstance(self.boundary, str) else self.boundary
        return tuple(BOUNDARIES.index(v) for v in b)

    @property
    def dx(self) -> float:
        return 1.0 / self.grid_density

    @property
    def inner_cells(self) -> tuple:
        """Cells between the walls per axis: (upper − lower)·grid_density, rounded up to a whole
        number (a value within 1e-6 of an integer counts as that integer)."""
        out = []
        for a, b in zip(self.lower_bound, self.upper_bound):
            c = (b - a) * self.grid_density
            r = round(c)
            out.append(int(r) if abs(c - r) <= 1e-6 * max(1.0, c) else math.ceil(c))
        return tuple(out)

    @property
    def wall_lower(self) -> tuple:
        """Position of the lower walls (the surfaces material rests on): lower_bound, moved out by
        half the rounding of the cell count when (upper − lower)·grid_density is not whole, so that
        the walls stay on node layers and the grid stays centred on the domain (docs/mpm.md)."""
        return tuple(a - 0.5 * (n * self.dx - (b - a))
                     for a, b, n in zip(self.lower_bound, self.upper_bound, self.inner_cells))

    @property
    def wall_upper(self) -> tuple:
        """Position of the upper walls (see wall_lower)."""
        return tuple(w + n * self.dx for w, n in zip(self.wall_lower, self.inner_cells))

    @property
    def grid_origin(self) -> tuple:
        """Position of node (0, 0, 0): boundary_padding cells below the lower walls."""
        return tuple(w - self.boundary_padding * self.dx for w in self.wall_lower)

    @property
    def n_cells(self) -> tuple:
        """Cells of the grid per axis, wall layers included (inner_cells + 2·boundary_padding)."""
        return tuple(n + 2 * self.boundary_padding for n in self.inner_cells)

    @property
    def spacing(self) -> float:
        return self.particle_size if self.particle_size is not None else 0.5 * self.dx
