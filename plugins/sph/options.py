"""Options of the SPH solver (plain attrs, validated at construction; no Warp import)."""

from __future__ import annotations

import attrs
from polyphys.errors import OptionError
from polyphys.options import Options, in_range, non_negative, one_of, positive, positive_int, vec3

# a cubic-spline or Wendland support below 1.5 particle spacings has under ~15 neighbours: the
# density estimate then misses a large part of the kernel and the liquid clumps or explodes
MIN_SUPPORT_FACTOR = 1.5
MAX_CELLS = 1 << 24
# default XSPH ε of DFSPH (SPHOptions.xsph = None)
DFSPH_XSPH = 0.1


@attrs.frozen(kw_only=True)
class SPHOptions(Options):
    """Options of the SPH solver.

    pressure_solver: "dfsph" (Bender & Koschier 2015: divergence-free and constant-density solves,
    incompressible to ``density_tol``) or "wcsph" (Tait equation of state, weakly compressible).
    particle_size: particle spacing dx (m); every liquid is sampled on a cubic lattice of this
    spacing and boundaries on a surface grid of it. kernel: "cubic" (cubic spline) or "wendland"
    (Wendland C2). support_radius: kernel support H (m); None: 2·particle_size (about 33 neighbours); at
    least 1.5·particle_size, and at most 2·particle_size in a scene with walls (one boundary layer).
    lower_bound/upper_bound: the domain box (m); its six faces are walls of boundary particles when
    ``box_walls`` and particles are clamped into it (no particle ever leaves it).
    xsph: XSPH velocity smoothing ε per substep (0 = off); None: 0.1 for DFSPH (SPlisHSPlasH-like
    XSPH; without it a resting DFSPH column jitters at 0.021 m/s and one at water's viscosity blows
    up — docs/sph.md), 0 for WCSPH. ``xsph_factor`` is the value used. cfl: Courant number of the
    time-step checks.
    density_tol: DFSPH mean density error tolerance (fraction of rest density); divergence_tol:
    DFSPH tolerance of the mean density change over one substep (1e-4: the velocity residual a
    looser solve leaves, ~tol·dx/h per substep, is what keeps a resting column jittering — 1e-3
    gave 0.089 m/s on the still column of docs/sph.md, 1e-4 0.018 m/s). max_density_iters,
    max_divergence_iters: iteration caps (each env stops as soon as it has converged).
    omega: relaxation of the DFSPH Jacobi steps (1 as in the paper; lower is slower but damps).
    boundary_pressure: the pressure a boundary particle b exerts on the liquid.
    "extrapolated" (default): the liquid's pressure carried to the boundary particle's own depth
    (Adami et al. 2012, static wall) — WCSPH: p_b = (Σ_f p_f W_bf + g·Σ_f ρ_f(x_b − x_f)W_bf)/Σ_f W_bf;
    DFSPH, whose pressure only exists inside its solves: pairwise, p_b = pᵢ + ρᵢ g·(x_b − xᵢ) for
    liquid particle i (the solves mirror κ, κ_b = κᵢ, and the hydrostatic offset acts with
    gravity, bounded so that p_b ≥ 0); "mirrored": p_b = pᵢ (Akinci et al. 2012); "single": only
    the liquid particle's own term pᵢ/ρᵢ² (as SPlisHSPlasH's DFSPH with Akinci boundaries).
    warm_start: start each DFSPH solve by applying half of the κ total of the last substep's solve
    and carrying it (Bender & Koschier 2017 in SPlisHSPlasH's form); False: every solve from 0.
    dt: the substep this solver wants (None: the scene's); must equal dt/substeps of the scene.
    """

    pressure_solver: str = attrs.field(default="dfsph", validator=one_of("dfsph", "wcsph"))
    particle_size: float = attrs.field(default=0.02, validator=positive)
    kernel: str = attrs.field(default="cubic", validator=one_of("cubic", "wendland"))
    support_radius: float | None = attrs.field(default=None, validator=positive)
    lower_bound: tuple = attrs.field(default=(-0.5, -0.5, 0.0), converter=vec3)
    upper_bound: tuple = attrs.field(default=(0.5, 0.5, 1.0), converter=vec3)
    box_walls: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))
    xsph: float | None = attrs.field(default=None, validator=in_range(0.0, 1.0))
    cfl: float = attrs.field(default=0.4, validator=in_range(0.0, 1.0, lo_open=True))
    density_tol: float = attrs.field(default=1e-3, validator=positive)
    divergence_tol: float = attrs.field(default=1e-4, validator=positive)
    max_density_iters: int = attrs.field(default=40, validator=positive_int)
    max_divergence_iters: int = attrs.field(default=10, validator=positive_int)
    omega: float = attrs.field(default=1.0, validator=in_range(0.0, 1.0, lo_open=True))
    boundary_pressure: str = attrs.field(default="extrapolated",
                                         validator=one_of("extrapolated", "mirrored", "single"))
    warm_start: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))
    dt: float | None = attrs.field(default=None, validator=non_negative)

    def __attrs_post_init__(self):
        lo, hi = self.lower_bound, self.upper_bound
        bad = [k for k in range(3) if not hi[k] > lo[k]]
        if bad:
            raise OptionError(f"SPHOptions.upper_bound = {hi} must exceed lower_bound = {lo} on every "
                              f"axis (fails on axis {bad})")
        H = self.support
        if H < MIN_SUPPORT_FACTOR * self.particle_size:
            raise OptionError(f"SPHOptions.support_radius = {self.support_radius!r} is too small for "
                              f"particle_size = {self.particle_size}: the kernel must reach at least "
                              f"{MIN_SUPPORT_FACTOR}·particle_size = "
                              f"{MIN_SUPPORT_FACTOR * self.particle_size:g} m (2·particle_size is usual)")
        dims = self.grid_dims
        if dims[0] * dims[1] * dims[2] > MAX_CELLS:
            raise OptionError(f"SPHOptions: the domain {lo}..{hi} holds {dims} = "
                              f"{dims[0] * dims[1] * dims[2]} neighbour cells of size {H:g} m per env; "
                              f"at most {MAX_CELLS} are allowed: shrink the domain or enlarge "
                              f"particle_size")

    @property
    def xsph_factor(self) -> float:
        if self.xsph is not None:
            return self.xsph
        return DFSPH_XSPH if self.pressure_solver == "dfsph" else 0.0

    @property
    def support(self) -> float:
        return self.support_radius if self.support_radius is not None else 2.0 * self.particle_size

    @property
    def grid_dims(self) -> tuple[int, int, int]:
        import math

        return tuple(max(1, math.ceil((self.upper_bound[k] - self.lower_bound[k]) / self.support - 1e-9))
                     for k in range(3))
