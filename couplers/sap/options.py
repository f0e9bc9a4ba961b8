"""Options of the SAP coupler (docs/sap.md), named and defaulted as Drake's SAP contact model."""

from __future__ import annotations

import math

import attrs
from polyphys.errors import OptionError
from polyphys.options import Options, in_range, non_negative, one_of, positive, positive_int


def _stiffness(instance, attribute, value):
    """> 0; +inf (a rigid geometry: the pair takes the other side's stiffness) is allowed."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or value <= 0:
        raise OptionError(f"{type(instance).__name__}.{attribute.name} = {value!r}: must be a number > 0 "
                          f"(N/m; inf for a rigid geometry)")


def _per_geom(check):
    def validate(instance, attribute, value):
        if not isinstance(value, dict):
            raise OptionError(f"{type(instance).__name__}.{attribute.name} = {value!r}: must be a dict "
                              f"{{global geom index: value}}")
        for g, x in value.items():
            if isinstance(g, bool) or not isinstance(g, int) or g < 0:
                raise OptionError(f"{type(instance).__name__}.{attribute.name}: key {g!r} must be a global geom "
                                  f"index (int >= 0)")
            check(instance, attribute, x)
    return validate


def _time_constant_or_step(instance, attribute, value):
    """None (the substep h, Drake's choice for limits and holonomic constraints) or a finite number > 0 (s)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise OptionError(f"{type(instance).__name__}.{attribute.name} = {value!r}: must be None (the substep h) "
                          f"or a finite number > 0 (s)")


def _tolerance(instance, attribute, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise OptionError(f"{type(instance).__name__}.{attribute.name} = {value!r}: a tolerance must be a "
                          f"finite number > 0")


@attrs.frozen(kw_only=True)
class SapOptions(Options):
    """Compliant point contact (Castro, Permenter, Han 2022; Drake's parameterisation):

    point_stiffness (N/m): a geometry's point contact stiffness, default for every geom;
    geom_point_stiffness: {global geom index: N/m} overrides (inf: rigid). A pair's stiffness is
    the series combination k = k_A·k_B/(k_A + k_B) (one side inf: the other's).
    dissipation_time_constant (s): a geometry's linear dissipation time constant τ_d (Drake's
    ``relaxation_time``, default 0.1 s); geom_dissipation_time_constant: overrides. A pair's τ_d
    is the sum τ_A + τ_B (Drake's rule). The normal force of a contact is f_n = k·(−φ − τ_d·v_n)
    at the end of the step (φ: signed distance, v_n: separation speed), clamped at 0.
    friction_combination: "drake" (μ = 2μ_Aμ_B/(μ_A + μ_B) of the geoms' sliding friction ×
    friction_ratio) or "rigid" (the rigid solver's own mixing, docs/semantics.md §R5).
    near_rigid_threshold (β, dimensionless, default 1): a contact stiffer than the step can resolve
    is regularised to R_n = β²/(4π²)·w (w: its Delassus diagonal estimate) instead of
    1/(h·k·(h + τ_d)); sigma (dimensionless, default 1e-3): the friction regularisation R_t = σ·w.
    atol (same unit as the mass-weighted momentum, √(kg)·m/s), rtol (dimensionless): stop an env's
    Newton iteration when ‖D·∇ℓ‖ ≤ atol + rtol·max(‖D·A·v‖, ‖D·Jᵀγ‖), D = diag(A)^(-1/2)
    (Drake's defaults 1e-14 and 1e-6). max_iterations: Newton iterations per substep; an env that
    hits it is reported (``get_solver_stats``; ``on_iteration_cap``: "warn" (default), "raise", or
    "ignore" — still counted). line_search: "exact" (the 1-D convex cost minimised by safeguarded
    Newton on its derivative, to ls_tolerance relative to the initial slope) or "backtracking"
    (Armijo with ls_armijo_c, ls_rho); ls_alpha_max (Drake 1.5) and ls_max_iterations bound both.

    Rigid–FEM point contact (docs/sap.md, "Rigid–FEM contact"): a boundary vertex of a deformable
    solver against a rigid geom. The pair's stiffness is the series combination of the geom's
    stiffness (``geom_point_stiffness`` of its collision geom index, else ``point_stiffness``) and
    fem_point_stiffness (N/m per vertex, default inf: the geom's alone); τ_d the sum of the geom's
    (``geom_dissipation_time_constant``, else ``dissipation_time_constant``) and
    fem_dissipation_time_constant (s); μ Drake's 2μ_Aμ_B/(μ_A +
    μ_B) of the geom's Rigid material ``coup_friction`` and fem_friction. fem_contact_margin (m): a
    vertex closer than this to a geom is a contact (0: overlapping only). fem_max_contacts: contact
    slots per env (None: one per boundary vertex); a step that finds more raises
    BudgetExceededError naming the env (the extra contacts of that substep were not solved).
    Rigid mesh geoms get a grid SDF in the geom frame built at build time (polyphys.sdf_grid), as the
    Legacy coupler's: sdf_grid_res (cells along the longest side of the mesh's bounding box, default
    64: spacing h = side / res) or sdf_grid_spacing (m, overrides sdf_grid_res). The interpolated φ
    and normal are exact where the SDF is linear over a grid cell (near a face, away from edges and
    the medial axis) and φ is within (√3/2)·h of the exact distance everywhere else; choose h well
    below the expected penetration's scale where contact happens at mesh edges or curved parts.

    The rigid solver's own constraint rows in the same problem (docs/sap.md, "Which rows SAP takes
    over"): limit_stiffness (N/m or N·m/rad, default inf: near-rigid) and
    limit_dissipation_time_constant (s, None: the substep h, as Drake) of joint limits, a
    unilateral compliant constraint (Drake's SapLimitConstraint); equality_stiffness and
    equality_dissipation_time_constant the same for connect, weld and joint equalities, bilateral
    holonomic constraints (SapHolonomicConstraint); constraint_near_rigid_threshold (β of these
    rows, default 0.1, Drake's value for limits and couplers): R = max(β²/(4π²)·w, 1/(h·k·(h +
    τ))). frictionloss_sigma (dimensionless, default 1e-3): the regularisation R = σ·w of DOF
    frictionloss, a box constraint |γ| ≤ h·frictionloss; a joint held by friction creeps at most
    σ·w·h·frictionloss (rad/s or m/s; w = 1/I for a lone joint of inertia I).
    """

    point_stiffness: float = attrs.field(default=1.0e6, validator=_stiffness)
    geom_point_stiffness: dict = attrs.field(factory=dict, validator=_per_geom(_stiffness))
    dissipation_time_constant: float = attrs.field(default=0.1, validator=non_negative)
    geom_dissipation_time_constant: dict = attrs.field(factory=dict, validator=_per_geom(non_negative))
    friction_combination: str = attrs.field(default="drake", validator=one_of("drake", "rigid"))
    near_rigid_threshold: float = attrs.field(default=1.0, validator=positive)
    sigma: float = attrs.field(default=1.0e-3, validator=positive)
    atol: float = attrs.field(default=1.0e-14, validator=_tolerance)
    rtol: float = attrs.field(default=1.0e-6, validator=_tolerance)
    max_iterations: int = attrs.field(default=100, validator=positive_int)
    on_iteration_cap: str = attrs.field(default="warn", validator=one_of("warn", "raise", "ignore"))
    line_search: str = attrs.field(default="exact", validator=one_of("exact", "backtracking"))
    ls_alpha_max: float = attrs.field(default=1.5, validator=positive)
    ls_max_iterations: int = attrs.field(default=40, validator=positive_int)
    ls_tolerance: float = attrs.field(default=1.0e-8, validator=_tolerance)
    ls_armijo_c: float = attrs.field(default=1.0e-4, validator=in_range(0.0, 1.0, lo_open=True, hi_open=True))
    ls_rho: float = attrs.field(default=0.8, validator=in_range(0.0, 1.0, lo_open=True, hi_open=True))
    fem_point_stiffness: float = attrs.field(default=math.inf, validator=_stiffness)
    fem_dissipation_time_constant: float = attrs.field(default=0.0, validator=non_negative)
    fem_friction: float = attrs.field(default=0.5, validator=non_negative)
    fem_contact_margin: float = attrs.field(default=0.0, validator=non_negative)
    fem_max_contacts: int | None = attrs.field(default=None, validator=attrs.validators.optional(positive_int))
    sdf_grid_res: int = attrs.field(default=64, validator=positive_int)
    sdf_grid_spacing: float | None = attrs.field(default=None, validator=attrs.validators.optional(positive))
    limit_stiffness: float = attrs.field(default=math.inf, validator=_stiffness)
    limit_dissipation_time_constant: float | None = attrs.field(default=None, validator=_time_constant_or_step)
    equality_stiffness: float = attrs.field(default=math.inf, validator=_stiffness)
    equality_dissipation_time_constant: float | None = attrs.field(default=None, validator=_time_constant_or_step)
    constraint_near_rigid_threshold: float = attrs.field(default=0.1, validator=positive)
    frictionloss_sigma: float = attrs.field(default=1.0e-3, validator=positive)
