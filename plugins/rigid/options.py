"""Options of the rigid solver (SPEC R2)."""

from __future__ import annotations

import enum

import attrs
from polyphys.errors import OptionError
from polyphys.options import in_range, non_negative, one_of, positive, positive_int


class Integrator(enum.Enum):
    """Time integrators of SPEC R2 (MuJoCo names)."""

    Euler = "Euler"
    implicitfast = "implicitfast"
    approximate_implicitfast = "approximate_implicitfast"


INTEGRATOR_CODES = {Integrator.Euler: 0, Integrator.implicitfast: 1, Integrator.approximate_implicitfast: 2}


def _integrator(value):
    if isinstance(value, Integrator):
        return value
    for it in Integrator:
        if isinstance(value, str) and value == it.value:
            return it
    raise OptionError(f"RigidOptions.integrator = {value!r}: allowed values are "
                      f"{[it.value for it in Integrator]} (or polyphys.plugins.rigid.Integrator)")


def _opt_positive(instance, attribute, value):
    if value is not None:
        positive(instance, attribute, value)


@attrs.frozen(kw_only=True)
class RigidOptions:
    """Rigid solver options.

    integrator: "Euler", "implicitfast" or "approximate_implicitfast" (default; SPEC R2);
    mujoco_compatible: MuJoCo's conventions where they differ from the Genesis defaults (SPEC R2a);
    enable_collision: collision detection on/off: with it on (and disable_constraint off) and
    collidable geom pairs in the scene, contacts are detected every substep and readable with
    ``get_raw_contacts`` (they produce no forces yet: the constraint solver is the next issue);
    disable_constraint: bypass every constraint (also turns collision detection off);
    broadphase: "auto", "sweep_and_prune" or "all_vs_all" (docs/collision.md);
    max_collision_pairs / max_candidate_contacts / max_contacts: the per-env collision budgets
    (SPEC R3; None sizes them from the scene); max_contacts_per_pair: points kept per pair (1-8);
    collision_overflow: "raise" (BudgetExceededError after the step) or "warn" (drop the excess);
    enable_self_collision / enable_adjacent_collision / enable_neutral_collision: SPEC R4 filters
    (pairs inside one entity; parent-child links; pairs of one entity touching at qpos0);
    mesh_decomposition: non-convex mesh geoms: "auto" (convex decomposition with coacd when it is
    installed, else a warning and the convex hull), "coacd" (required) or "hull";
    decomposition_threshold: coacd's concavity threshold (0.01-1; smaller: more, tighter parts);
    mujoco_compatible also sums geom margins/gaps per pair (MuJoCo's rule; default: max);
    gravity_compensation: scale of MJCF body ``gravcomp`` (1 = as written);
    constraint_solver, iterations, tolerance, ls_iterations, ls_tolerance: constraint solver
    settings of the contact solve (plugins/rigid/constraint.py, docs/constraint.md);
    friction_cone ("pyramidal"/"elliptic"), impratio (None: 1 pyramidal / 100 elliptic, 1 in
    MuJoCo-compatible mode), contact_resolution (None: automatic — "signorini" for elliptic + Newton
    outside MuJoCo-compatible mode, else "convex"; an explicit "signorini" anywhere else is an
    OptionError), noslip_iterations (0: off; > 0: that many PGS sweeps on the friction rows after
    the main solve, pyramidal cone only) and noslip_tolerance (1e-6, MuJoCo's): SPEC R2/R8,
    docs/constraint.md;
    dt: optional substep length the scene must match (None: the scene's dt/substeps).
    """

    integrator: Integrator = attrs.field(default=Integrator.approximate_implicitfast, converter=_integrator)
    mujoco_compatible: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    enable_collision: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))
    disable_constraint: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    gravity_compensation: float = attrs.field(default=1.0, validator=non_negative)
    constraint_solver: str = attrs.field(default="Newton", validator=one_of("Newton", "CG"))
    iterations: int | None = attrs.field(default=None, validator=attrs.validators.optional(positive_int))
    tolerance: float | None = attrs.field(default=None, validator=_opt_positive)
    ls_iterations: int | None = attrs.field(default=None,
                                            validator=attrs.validators.optional(positive_int))
    ls_tolerance: float = attrs.field(default=0.01, validator=in_range(0.0, 1.0, lo_open=True))
    friction_cone: str = attrs.field(default="pyramidal", validator=one_of("pyramidal", "elliptic"))
    impratio: float | None = attrs.field(default=None, validator=_opt_positive)
    contact_resolution: str | None = attrs.field(
        default=None, validator=attrs.validators.optional(one_of("convex", "signorini")))
    noslip_iterations: int = attrs.field(default=0, validator=[attrs.validators.instance_of(int), non_negative])
    noslip_tolerance: float = attrs.field(default=1e-6, validator=positive)
    dt: float | None = attrs.field(default=None, validator=_opt_positive)
    broadphase: str = attrs.field(default="auto",
                                  validator=one_of("auto", "sweep_and_prune", "all_vs_all"))
    max_collision_pairs: int | None = attrs.field(default=None,
                                                  validator=attrs.validators.optional(positive_int))
    max_candidate_contacts: int | None = attrs.field(
        default=None, validator=attrs.validators.optional(positive_int))
    max_contacts: int | None = attrs.field(default=None, validator=attrs.validators.optional(positive_int))
    max_contacts_per_pair: int = attrs.field(default=4, validator=[positive_int, in_range(1, 8)])
    collision_overflow: str = attrs.field(default="raise", validator=one_of("raise", "warn"))
    enable_self_collision: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))
    enable_adjacent_collision: bool = attrs.field(default=False,
                                                  validator=attrs.validators.instance_of(bool))
    enable_neutral_collision: bool = attrs.field(default=False,
                                                 validator=attrs.validators.instance_of(bool))
    mesh_decomposition: str = attrs.field(default="auto", validator=one_of("auto", "coacd", "hull"))
    decomposition_threshold: float = attrs.field(default=0.05, validator=in_range(0.01, 1.0))

    @property
    def integrator_code(self) -> int:
        return INTEGRATOR_CODES[self.integrator]

    def effective_iterations(self) -> int:
        if self.iterations is not None:
            return self.iterations
        return 100 if self.mujoco_compatible else 25

    def effective_tolerance(self, precision: str) -> float:
        if self.tolerance is not None:
            return self.tolerance
        if self.mujoco_compatible:
            return 1e-8 if precision == "64" else 1e-5
        return 1e-9 if precision == "64" else 1e-6

    @classmethod
    def mujoco(cls, **kwargs) -> RigidOptions:
        """The MuJoCo-compatible preset (SPEC R2a)."""
        kwargs.setdefault("mujoco_compatible", True)
        return cls(**kwargs)
