"""KinematicEntity: a kinematic joint tree. Its q, dof, link and base getters and setters are core's
``ArticulatedEntity`` (shared with the rigid solver); a kinematic set_qpos keeps the velocity unless
``zero_velocity=True`` (docs/semantics.md §S4)."""

from __future__ import annotations

from polyphys.articulated import ArticulatedEntity, JointInfo  # noqa: F401  (JointInfo: re-exported)


class KinematicEntity(ArticulatedEntity):
    ZERO_VELOCITY = False           # docs/semantics.md §S4: kinematic set_qpos keeps the velocity
