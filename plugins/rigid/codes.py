"""Codes of the rigid solver as IntEnums: their only definition (no Warp import, so options.py and
the plugin listing stay light). Joint and geom types are core's (``polyphys.description``). Warp
kernels compare with the members directly; the native C++ stage bodies get them as constants
generated from ``NATIVE_CODES`` (kernels/native.py).
"""

from __future__ import annotations

import enum

from polyphys.description import GeomType, JointType

__all__ = ["JointType", "GeomType", "CtrlMode", "IntegratorType", "ConstraintType", "EqType", "ConeType",
           "SolverType", "ResolutionType", "EfcState", "NATIVE_CODES"]


class CtrlMode(enum.IntEnum):
    """Per-dof control mode (``control_dofs_force`` / ``_position`` / ``_velocity``)."""

    FORCE = 0
    POSITION = 1
    VELOCITY = 2


class IntegratorType(enum.IntEnum):
    """Integrators of docs/semantics.md §R2 (``RigidOptions.integrator``)."""

    EULER = 0
    IMPLICITFAST = 1
    APPROXIMATE_IMPLICITFAST = 2


class ConstraintType(enum.IntEnum):
    """Constraint row types (``efc_type``), in the order rows are built (docs/constraint.md)."""

    EQUALITY = 0
    FRICTION = 1              # DOF frictionloss
    LIMIT = 2
    CONTACT_FRICTIONLESS = 3
    CONTACT_PYRAMIDAL = 4
    CONTACT_ELLIPTIC = 5


class EqType(enum.IntEnum):
    """Equality constraint types (``eq_type``)."""

    CONNECT = 0
    WELD = 1
    JOINT = 2


class ConeType(enum.IntEnum):
    PYRAMIDAL = 0
    ELLIPTIC = 1


class SolverType(enum.IntEnum):
    CG = 0
    NEWTON = 1


class ResolutionType(enum.IntEnum):
    """Contact resolution (``RigidOptions.contact_resolution``; docs/constraint.md)."""

    CONVEX = 0
    SIGNORINI = 1


class EfcState(enum.IntEnum):
    """Row state after a solver update (``efc_state``)."""

    INACTIVE = 0          # zero force (satisfied, or a cone's top zone)
    QUADRATIC = 1         # quadratic cost (an active row; signorini: stick)
    CONE = 2              # elliptic cone middle zone (signorini: a saturated friction block)


# C++ names of the codes for the native stage bodies (kernels/native.py): prefix_MEMBER
NATIVE_CODES = {"JOINT": JointType, "GEOM": GeomType, "CTRL": CtrlMode, "INTEGRATOR": IntegratorType,
                "EFC": ConstraintType, "EQ": EqType, "CONE": ConeType, "SOLVER": SolverType,
                "STATE": EfcState}
