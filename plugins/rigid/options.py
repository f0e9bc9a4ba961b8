"""Options of the rigid solver (docs/semantics.md §R2)."""

from __future__ import annotations

import enum

import attrs
from polyphys.errors import OptionError
from polyphys.options import Options, in_range, non_negative, one_of, positive, positive_int

from .codes import IntegratorType


class Integrator(enum.Enum):
    """Time integrators of docs/semantics.md §R2 (MuJoCo names)."""

    Euler = "Euler"
    implicitfast = "implicitfast"
    approximate_implicitfast = "approximate_implicitfast"


INTEGRATOR_CODES = {Integrator.Euler: IntegratorType.EULER, Integrator.implicitfast: IntegratorType.IMPLICITFAST,
                    Integrator.approximate_implicitfast: IntegratorType.APPROXIMATE_IMPLICITFAST}


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
class RigidOptions(Options):
    """Rigid solver options: the only options class of the rigid plugin (the collision pipeline and
    the constraint stages read these fields; values left at None resolve through the
    ``effective_*`` methods, docs/semantics.md §R2/§R2a).

    integrator: "Euler", "implicitfast" or "approximate_implicitfast" (default; docs/semantics.md §R2);
    mujoco_compatible: MuJoCo's conventions where they differ from the Genesis defaults (docs/semantics.md §R2a);
    enable_collision: collision detection on/off: with it on (and disable_constraint off) and
    collidable geom pairs in the scene, contacts are detected every substep, solved by the
    constraint stage (contact forces; docs/constraint.md) and readable with ``get_contacts`` and
    ``get_raw_contacts``;
    disable_constraint: bypass every constraint (also turns collision detection off);
    broadphase: "auto", "sweep_and_prune" or "all_vs_all" (docs/collision.md);
    max_collision_pairs / max_candidate_contacts / max_contacts: the per-env collision budgets
    (docs/semantics.md §R3; None sizes them from the scene); max_contacts_per_pair: points kept per pair (1-8;
    MuJoCo-compatible mode: box-box pairs keep MuJoCo's whole set, docs/collision.md);
    collision_overflow: "raise" (BudgetExceededError after the step) or "warn" (drop the excess);
    enable_self_collision / enable_adjacent_collision / enable_neutral_collision: docs/semantics.md §R4 filters
    (pairs inside one entity; parent-child links; pairs of one entity touching at qpos0);
    collision_filtering: False turns off the contype/conaffinity, self, adjacent and exclude rules
    (the weld rule stays: geoms of one rigid body never collide), for debugging "is my pair filtered?";
    sap_axis: the sweep-and-prune axis (0 x, 1 y, 2 z);
    mesh_decomposition: non-convex mesh geoms: "auto" (convex decomposition with coacd when it is
    installed, else a warning and the convex hull), "coacd" (required) or "hull";
    decomposition_threshold: coacd's concavity threshold (0.01-1; smaller: more, tighter parts);
    mujoco_compatible also sums geom margins/gaps per pair (MuJoCo's rule; default: max) and
    detects contacts below margin + gap, reporting those in the gap without rows (MuJoCo 4.0's
    rule; default: detected below the margin, rows with margin − gap; docs/collision.md);
    gravity_compensation: scale of MJCF body ``gravcomp`` (1 = as written);
    constraint_solver, iterations, tolerance, ls_iterations, ls_tolerance: constraint solver
    settings of the contact solve (plugins/rigid/constraint.py, docs/constraint.md);
    friction_cone ("pyramidal"/"elliptic"), impratio (None: 1 pyramidal / 100 elliptic, 1 in
    MuJoCo-compatible mode), contact_resolution (None: automatic — "signorini" for elliptic + Newton
    outside MuJoCo-compatible mode, else "convex"; an explicit "signorini" anywhere else is an
    OptionError), noslip_iterations (0: off; > 0: that many PGS sweeps on the friction rows after
    the main solve, pyramidal cone only) and noslip_tolerance (1e-6, MuJoCo's): docs/semantics.md §R2/§R8,
    docs/constraint.md;
    constraint_islands: True solves the convex problem island by island — trees joined by
    constraint rows, each with its own Hessian, line search and stopping test (MuJoCo's islands;
    docs/semantics.md §R8); in effect with the convex resolution and no noslip; readable with
    ``RigidSolver.get_islands``; None (default): on, except in MuJoCo-compatible mode where the
    models' MJCF ``<flag island>`` decides (MuJoCo 4.0's default: enabled); an explicit value wins
    over the file;
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
    constraint_islands: bool | None = attrs.field(default=None,
                                                  validator=attrs.validators.optional(attrs.validators.instance_of(bool)))
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
    collision_filtering: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))
    sap_axis: int = attrs.field(default=0, validator=one_of(0, 1, 2))
    mesh_decomposition: str = attrs.field(default="auto", validator=one_of("auto", "coacd", "hull"))
    decomposition_threshold: float = attrs.field(default=0.05, validator=in_range(0.01, 1.0))

    def __attrs_post_init__(self):
        # docs/semantics.md §R2: the combinations that have no meaning
        res, cone, solver = self.contact_resolution, self.friction_cone, self.constraint_solver
        if res == "signorini" and not (cone == "elliptic" and solver == "Newton"):
            raise OptionError(f"contact_resolution='signorini' needs friction_cone='elliptic' and "
                              f"constraint_solver='Newton' (got {cone!r}, {solver!r})")
        if res == "signorini" and self.mujoco_compatible:
            raise OptionError("contact_resolution='signorini' with mujoco_compatible=True: MuJoCo-compatible mode "
                              "uses the convex resolution (docs/semantics.md §R2a); pass contact_resolution=None or 'convex'")
        if self.noslip_iterations > 0 and cone == "elliptic":
            raise OptionError(f"noslip_iterations={self.noslip_iterations} with friction_cone='elliptic': noslip "
                              "needs the pyramidal cone (docs/semantics.md §R2)")

    @property
    def integrator_code(self) -> IntegratorType:
        return INTEGRATOR_CODES[self.integrator]

    def effective_iterations(self) -> int:
        if self.iterations is not None:
            return self.iterations
        return 100 if self.mujoco_compatible else 25

    def effective_ls_iterations(self) -> int:
        return 50 if self.ls_iterations is None else self.ls_iterations

    def effective_impratio(self) -> float:
        """docs/semantics.md §R2: None → 100 for elliptic, 1 for pyramidal (MuJoCo-compatible mode: 1)."""
        if self.impratio is not None:
            return float(self.impratio)
        return 100.0 if (self.friction_cone == "elliptic" and not self.mujoco_compatible) else 1.0

    def effective_resolution(self) -> str:
        """contact_resolution None resolves by the rule of docs/semantics.md §R2 (the table of
        docs/constraint.md, "Contact resolution"): elliptic + Newton outside MuJoCo-compatible mode →
        "signorini", everything else → "convex"."""
        if self.contact_resolution is not None:
            return self.contact_resolution
        if self.friction_cone == "elliptic" and self.constraint_solver == "Newton" and not self.mujoco_compatible:
            return "signorini"
        return "convex"

    def effective_tolerance(self, precision: str) -> float:
        if self.tolerance is not None:
            return self.tolerance
        if self.mujoco_compatible:
            return 1e-8 if precision == "64" else 1e-5
        return 1e-9 if precision == "64" else 1e-6

    def effective_islands(self) -> bool:
        """Whether the convex solve runs island by island (docs/semantics.md §R8): constraint_islands (None:
        on; resolve_model_options takes the MJCF flag in MuJoCo-compatible mode), the convex resolution
        and no noslip (MuJoCo's condition: its noslip sweeps the whole env)."""
        on = True if self.constraint_islands is None else self.constraint_islands
        return bool(on and self.effective_resolution() == "convex" and self.noslip_iterations == 0)

    @classmethod
    def mujoco(cls, **kwargs) -> RigidOptions:
        """The MuJoCo-compatible preset (docs/semantics.md §R2a)."""
        kwargs.setdefault("mujoco_compatible", True)
        return cls(**kwargs)


# MJCF <option> (importer key in EntityDescription.options) → the RigidOptions field it maps to.
# Taken from the model when the user left the field at None (docs/semantics.md §R2a):
_MODEL_TAKEN = ("iterations", "tolerance", "ls_iterations", "impratio", "constraint_islands")
# Fields with a non-None default (an explicit value cannot be told from the default): the user's
# value is kept; a model value that differs gives a warning naming the field to set.
_MODEL_CHECKED = {"integrator": "integrator", "friction_cone": "cone", "constraint_solver": "solver",
                  "ls_tolerance": "ls_tolerance", "noslip_iterations": "noslip_iterations",
                  "noslip_tolerance": "noslip_tolerance", "enable_collision": "flag contact",
                  "disable_constraint": "flag constraint"}
_MJCF_ATTR = {"iterations": "iterations", "tolerance": "tolerance", "ls_iterations": "ls_iterations",
              "impratio": "impratio", "constraint_islands": "flag island", **_MODEL_CHECKED}
_MODEL_INTEGRATOR = {"euler": Integrator.Euler, "Euler": Integrator.Euler,
                     "implicitfast": Integrator.implicitfast}
F32_TOLERANCE_FLOOR = 1e-5    # MuJoCo's double-precision default 1e-8 ↔ the float32 compat default


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return abs(float(a) - float(b)) <= 1e-9 * max(abs(float(a)), abs(float(b)))
    return a == b


def _show(v):
    return v.value if isinstance(v, Integrator) else v


def resolve_model_options(options: RigidOptions, model_options, *, precision: str = "64",
                          h: float | None = None, gravity=None) -> tuple[RigidOptions, list[str]]:
    """The RigidOptions a scene runs with, given the models' MJCF ``<option>`` (docs/semantics.md §R2a). Pure.

    model_options: (entity name, ``EntityDescription.options``) pairs; empty dicts (primitives,
    URDF, hand-built descriptions) take no part. Returns (resolved options, warning messages).

    Default (Genesis) mode: the models' options are ignored; ``options`` is returned as is.
    MuJoCo-compatible mode:

    - iterations, tolerance, ls_iterations, impratio, constraint_islands left at None are taken from
      the model (the importer fills MuJoCo's defaults 100, 1e-8, 50, 1 and ``<flag island="enable">``
      — MuJoCo 4.0 leaves mjDSBL_ISLAND clear — when the file omits them). An
      explicit RigidOptions value wins. In float32 a tolerance taken from the model is floored at
      1e-5 (F32_TOLERANCE_FLOOR: MuJoCo's double default 1e-8 maps to the float32 compat default;
      a tighter file value is floored with a message). Entities whose models disagree on such a
      field, left at None, are an OptionError naming the entities, values and field to set.
    - integrator, friction_cone, constraint_solver, ls_tolerance, noslip_iterations,
      noslip_tolerance, enable_collision, disable_constraint have non-None defaults, so an explicit
      choice cannot be told from the default: the RigidOptions value is always used; a model value
      that differs gives one message naming the MJCF option, both values and the field to set.
    - dt and gravity belong to SimOptions: a model timestep different from the substep ``h`` or
      a model gravity different from ``gravity`` gives a message; the scene is not changed.
    """
    if not options.mujoco_compatible:
        return options, []
    models = [(str(name), dict(o)) for name, o in model_options if o]
    if not models:
        return options, []
    notes: list[str] = []
    taken = {}
    for field in _MODEL_TAKEN:
        if getattr(options, field) is not None:
            continue
        vals = [(name, o[field]) for name, o in models if field in o]
        if not vals:
            continue
        if any(not _same(v, vals[0][1]) for _, v in vals[1:]):
            listed = ", ".join(f"{name!r}: {v}" for name, v in vals)
            raise OptionError(f"MuJoCo-compatible mode: the models' <option {_MJCF_ATTR[field]}> differ "
                              f"({listed}); set RigidOptions.{field} to choose one")
        value = vals[0][1]
        if field == "tolerance" and precision == "32" and value < F32_TOLERANCE_FLOOR:
            if not _same(value, 1e-8):
                notes.append(f"<option tolerance={value}> of {vals[0][0]!r} is below what float32 "
                             f"reaches; using {F32_TOLERANCE_FLOOR} (set RigidOptions.tolerance to "
                             f"override, or use precision '64')")
            value = F32_TOLERANCE_FLOOR
        if field == "constraint_islands":
            taken[field] = bool(value)
        else:
            taken[field] = int(value) if field in ("iterations", "ls_iterations") else float(value)
    diffs = []
    for field, attr in _MODEL_CHECKED.items():
        mine = getattr(options, field)
        for name, o in models:
            if field not in o:
                continue
            theirs = o[field]
            if field == "integrator":
                theirs = _MODEL_INTEGRATOR.get(theirs, theirs)
            if not _same(mine, theirs):
                diffs.append(f"<option {attr}> = {_show(theirs)!r} in {name!r} but "
                             f"RigidOptions.{field} = {_show(mine)!r}")
    if diffs:
        notes.append("MuJoCo-compatible mode keeps the RigidOptions values that differ from the model "
                     "(set these fields to follow the file): " + "; ".join(diffs))
    for name, o in models:
        if h is not None and "dt" in o and not _same(float(o["dt"]), float(h)):
            notes.append(f"<option timestep> = {o['dt']} in {name!r} but the scene substep is {h} "
                         f"(SimOptions dt/substeps); the scene's is used")
        if gravity is not None and "gravity" in o and any(
                abs(float(a) - float(b)) > 1e-9 * (1.0 + abs(float(b))) for a, b in zip(o["gravity"], gravity)):
            notes.append(f"<option gravity> = {tuple(o['gravity'])} in {name!r} but SimOptions.gravity = "
                         f"{tuple(gravity)}; the scene's is used")
    return (attrs.evolve(options, **taken) if taken else options), notes
