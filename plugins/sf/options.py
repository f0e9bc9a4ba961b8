"""Options of the SF (stable fluids) solver: the grid, the numerics and the gas parameters."""

from __future__ import annotations

import math

import attrs
from polyphys.errors import OptionError
from polyphys.options import Options, non_negative, one_of, positive, positive_int, vec3

FACES = ("-x", "+x", "-y", "+y", "-z", "+z")
ADVECTION = ("maccormack", "semi_lagrangian")
PRESSURE_SOLVERS = ("mgpcg", "pcg")


def _res(value):
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value, value, value)
    try:
        out = tuple(value)
    except TypeError:
        raise OptionError(f"SFOptions.res = {value!r}: expected an integer or 3 integers (cells along x, y, z)") \
            from None
    if len(out) != 3 or any(isinstance(v, bool) or not isinstance(v, int) for v in out):
        raise OptionError(f"SFOptions.res = {value!r}: expected an integer or 3 integers (cells along x, y, z)")
    if any(v <= 0 for v in out):
        raise OptionError(f"SFOptions.res = {value!r}: the grid resolution must be >= 1 cell along every axis")
    return out


def _lower(value):
    try:
        return vec3(value)
    except OptionError as exc:
        raise OptionError(f"SFOptions.lower_bound = {value!r}: {exc}") from None


def _faces(value):
    if isinstance(value, str):
        value = (value,)
    try:
        out = tuple(value)
    except TypeError:
        raise OptionError(f"SFOptions.open_faces = {value!r}: expected a list of faces from {list(FACES)}") from None
    bad = [v for v in out if v not in FACES]
    if bad:
        raise OptionError(f"SFOptions.open_faces = {value!r}: unknown face(s) {bad}; allowed: {list(FACES)}")
    if len(set(out)) != len(out):
        raise OptionError(f"SFOptions.open_faces = {value!r}: a face is listed twice")
    return tuple(f for f in FACES if f in out)


def _opt_positive_int(instance, attribute, value):
    if value is not None:
        positive_int(instance, attribute, value)


@attrs.frozen(kw_only=True)
class SFOptions(Options):
    """Stable-fluids solver options (``Scene(sf=SFOptions(...))``).

    Grid: ``res`` cells (nx, ny, nz) (an int: a cube) of edge ``dx`` (m) from ``lower_bound``; every
    env has its own staggered (MAC) grid over the same box. The domain walls are closed (free-slip:
    zero normal velocity) except the ``open_faces`` ("-x", "+x", ..., "+z"), where the pressure is
    zero outside and the gas may flow in and out.

    Advection: "maccormack" (default; Selle et al. 2008, with the min/max limiter) or
    "semi_lagrangian" (Stam 1999), both with an RK2 back-trace, of the velocity and of the passive
    scalars (smoke density, temperature). Neither conserves the scalar's total (interpolation at
    the back-traced point; docs/sf.md measures the drift): ``conserve_density`` (default True)
    rescales each env's advected density so that its total equals the total before advection less
    what the flow carried out through the open faces in the substep (exact to rounding in a closed
    box; a global, not a local, correction). The temperature is not corrected.

    Forces: buoyancy (Fedkiw et al. 2001) f = (thermal_buoyancy·(T - ambient_temperature) -
    smoke_weight·density)·up, up = -gravity/|gravity| (+z without gravity), in m/s²; vorticity
    confinement f = vorticity_confinement·dx·(N × ω); viscosity (m²/s, 0: inviscid) implicitly by
    ``viscosity_iterations`` Jacobi sweeps (None: as many as take the worst error mode down by
    1e-6, from the Jacobi contraction 6a/(1+6a), a = viscosity·h/dx²). density_decay and
    temperature_decay (1/s) damp the scalars by exp(-decay·h) per substep.

    Projection: pressure_solver "mgpcg" (conjugate gradients preconditioned by one geometric
    multigrid V-cycle, McAdams et al. 2010) or "pcg" (diagonal preconditioner). Each env stops when
    the largest |divergence| over its fluid cells is at most ``tolerance`` (1/s); ``max_iterations``
    is a cap — an env that reaches it unconverged is flagged on the device and, after the step,
    ``on_cap`` = "warn" (default) warns naming the envs and residuals, "raise" raises
    SimulationError. ``early_exit`` stops the iteration loop once every env of a partition has
    converged (Warp conditional graph node, ``wp.capture_while``); off, the full cap is run with
    converged envs masked. Results are identical either way. mg_levels: None (coarsen until a side
    has at most 4 cells) or a count; mg_sweeps: red-black Gauss-Seidel sweeps before and after each
    coarse correction; coarse_sweeps: symmetric sweeps on the coarsest level.

    rho: the gas density (kg/m³), only to report pressure in Pa (the solve is in velocity units).
    """

    lower_bound: tuple = attrs.field(default=(0.0, 0.0, 0.0), converter=_lower)
    res: tuple = attrs.field(default=(32, 32, 32), converter=_res)
    dx: float = attrs.field(default=1.0 / 32.0, validator=positive)
    open_faces: tuple = attrs.field(default=(), converter=_faces)
    advection: str = attrs.field(default="maccormack", validator=one_of(*ADVECTION))
    smoke_weight: float = attrs.field(default=0.0, validator=non_negative)
    thermal_buoyancy: float = attrs.field(default=1.0, validator=non_negative)
    ambient_temperature: float = attrs.field(default=0.0)
    conserve_density: bool = attrs.field(default=True)
    vorticity_confinement: float = attrs.field(default=0.0, validator=non_negative)
    viscosity: float = attrs.field(default=0.0, validator=non_negative)
    viscosity_iterations: int | None = attrs.field(default=None, validator=_opt_positive_int)
    density_decay: float = attrs.field(default=0.0, validator=non_negative)
    temperature_decay: float = attrs.field(default=0.0, validator=non_negative)
    pressure_solver: str = attrs.field(default="mgpcg", validator=one_of(*PRESSURE_SOLVERS))
    max_iterations: int = attrs.field(default=50, validator=positive_int)
    tolerance: float = attrs.field(default=1e-3, validator=positive)
    early_exit: bool = attrs.field(default=True)
    on_cap: str = attrs.field(default="warn", validator=one_of("warn", "raise"))
    mg_levels: int | None = attrs.field(default=None, validator=_opt_positive_int)
    mg_sweeps: int = attrs.field(default=2, validator=positive_int)
    coarse_sweeps: int = attrs.field(default=16, validator=positive_int)
    rho: float = attrs.field(default=1.2, validator=positive)

    @ambient_temperature.validator
    def _check_ambient(self, attribute, value):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise OptionError(f"SFOptions.ambient_temperature = {value!r}: must be a finite number")

    @early_exit.validator
    @conserve_density.validator
    def _check_bool(self, attribute, value):
        if not isinstance(value, bool):
            raise OptionError(f"SFOptions.{attribute.name} = {value!r}: must be True or False")

    @property
    def upper_bound(self) -> tuple:
        return tuple(lo + n * self.dx for lo, n in zip(self.lower_bound, self.res))

    @property
    def n_cells(self) -> int:
        nx, ny, nz = self.res
        return nx * ny * nz

    @property
    def open_lo(self) -> tuple:
        return tuple(int(f"-{a}" in self.open_faces) for a in "xyz")

    @property
    def open_hi(self) -> tuple:
        return tuple(int(f"+{a}" in self.open_faces) for a in "xyz")

    def level_dims(self) -> list:
        """Cell counts of the multigrid levels, finest first (halved, rounded up, per axis)."""
        dims = [self.res]
        while True:
            if self.mg_levels is not None and len(dims) >= self.mg_levels:
                break
            if self.mg_levels is None and max(dims[-1]) <= 4:
                break
            nxt = tuple((n + 1) // 2 for n in dims[-1])
            if nxt == dims[-1]:
                break
            dims.append(nxt)
        return dims
