"""View protocols: how a coupler sees a solver without knowing which solver it is.

A coupler couples any two solvers exposing the protocols it names (``CouplerSpec.couples``); the
built-in Legacy coupler therefore works with a third-party particle solver unchanged. Arrays are
batch-first Warp arrays; per-partition methods return views restricted to ``part``'s envs.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import attrs


@attrs.frozen
class ParticleCarriers:
    """Velocity carriers of one partition: particles (SPH, PBD) or grid nodes (MPM between its grid
    update and G2P). pos/vel: (n_envs_part, n) vec3; mass: (n_envs_part, n) float; active:
    (n_envs_part, n) int32 (0 = skip). A coupler may change ``vel`` in ``couple``."""

    pos: Any
    vel: Any
    mass: Any
    active: Any
    kind: str = "particles"          # or "grid_nodes"


@runtime_checkable
class ParticleView(Protocol):
    def particle_carriers(self, part) -> ParticleCarriers:
        """The carriers the coupler acts on during ``couple(f, part)``."""


@attrs.frozen
class RigidGeoms:
    """Static geometry a coupler queries (same for every env): per geom its link, type code
    (``polyphys.sdf`` GEOM_* constants), size (MuJoCo half sizes), local pose, and the Rigid
    material's coupling fields (coup_friction, coup_restitution, coup_softness)."""

    link: Any            # wp.array(int32, n_geoms), index into the link arrays
    type: Any            # wp.array(int32)
    size: Any            # wp.array(vec3)
    pos: Any             # wp.array(vec3) in the link frame
    quat: Any            # wp.array(quat) in the link frame
    coup_friction: Any   # wp.array(float)
    coup_restitution: Any
    coup_softness: Any
    sdf_grids: Any = None    # mesh SDF grids (wp.Volume ids or arrays), or None


@attrs.frozen
class RigidLinks:
    """Per-partition link state: pos/quat of the link frame, CoM position, linear velocity of the
    CoM and angular velocity (world), and the per-substep coupling wrench buffer (force, torque
    about the CoM, world) the solver applies in its post-coupling stage and then clears."""

    pos: Any
    quat: Any
    com: Any
    vel: Any
    ang: Any
    coupling_force: Any = None
    coupling_torque: Any = None


@runtime_checkable
class RigidView(Protocol):
    accepts_reaction: bool

    def rigid_geoms(self) -> RigidGeoms: ...

    def rigid_links(self, part) -> RigidLinks: ...


@attrs.frozen
class SurfaceMesh:
    """Per-partition boundary triangles: vertex pos/vel (n_envs_part, n_verts) vec3 and the
    triangle index array (n_tris, 3) shared by every env."""

    pos: Any
    vel: Any
    triangles: Any


@runtime_checkable
class SurfaceMeshView(Protocol):
    def surface_mesh(self, part) -> SurfaceMesh: ...


VIEW_PROTOCOLS = {"ParticleView": ParticleView, "RigidView": RigidView, "SurfaceMeshView": SurfaceMeshView}
