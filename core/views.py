"""View protocols: how a coupler or a sensor sees a solver without knowing which solver it is.

A coupler couples any two solvers exposing the protocols it names (``CouplerSpec.couples``); the
built-in Legacy coupler therefore works with a third-party particle solver unchanged. Sensors read
solvers through ``RigidSensorView`` and ``ParticleStateView`` (docs/sensors.md): a third-party rigid
solver exposing ``RigidSensorView`` gets every rigid sensor; cameras and ray-casting sensors read
``RenderView`` (docs/cameras.md). Arrays are batch-first Warp arrays;
per-partition methods return views restricted to ``part``'s envs.
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
    # for kind "grid_nodes": the material points behind the nodes (a ParticleCarriers of kind
    # "particles", the state between substeps), which a coupler may move out of rigid bodies in
    # ``preprocess`` (before P2G); None when the solver offers none
    points: Any = None


@runtime_checkable
class ParticleView(Protocol):
    def particle_carriers(self, part) -> ParticleCarriers:
        """The carriers the coupler acts on during ``couple(f, part)``."""


@runtime_checkable
class ParticleStateView(Protocol):
    def particle_state(self, part) -> ParticleCarriers:
        """The particles themselves (pos, vel, active; mass may be None) as they are after a step —
        for a solver whose ``particle_carriers`` are not its particles (MPM: grid nodes). Sensors use
        it; a solver whose carriers are its particles may omit it (sensors then read the carriers)."""


@attrs.frozen
class SdfGrids:
    """Signed distance grids packed for one kernel (built by ``polyphys.sdf_grid``), each in its
    geom's frame: grid g has ``dims[g]`` = (nx, ny, nz) node values at ``origin[g] + (i, j, k) ·
    spacing[g]``, stored flat in ``values`` from ``offset[g]`` (index offset + (i·ny + j)·nz + k);
    ``geom[i]`` is geom i's grid or -1. Queried with ``polyphys.kernels.sdf.sdf_grid_query``."""

    values: Any          # wp.array(float32, total nodes)
    origin: Any          # wp.array(vec3, n_grids)
    spacing: Any         # wp.array(float32, n_grids)
    dims: Any            # wp.array(vec3i, n_grids)
    offset: Any          # wp.array(int32, n_grids)
    geom: Any            # wp.array(int32, n_geoms)


@attrs.frozen
class HeightFields:
    """Heightfield geoms packed for one kernel (built by ``polyphys.sdf_grid.pack_height_fields``),
    each in its geom's frame as MuJoCo lays one out: hfield h has ``shape[h]`` = (nrow, ncol)
    surface heights z (m, geom frame) stored flat in ``heights`` from ``offset[h]`` (index offset +
    r·ncol + c), sample (r, c) at x = -rx + c·2rx/(ncol-1), y = -ry + r·2ry/(nrow-1) (row 0 at -y);
    ``extent[h]`` = (rx, ry, z_bottom, highest surface z) — the solid reaches down to z =
    -z_bottom; ``reach[h]``: the
    horizontal radius (m) of the neighbourhood searched for the closest surface point (the SDF is
    exact within it); ``geom[i]`` is geom i's hfield or -1. Queried with
    ``polyphys.kernels.sdf.sdf_hfield``."""

    heights: Any         # wp.array(float32, total samples)
    shape: Any           # wp.array(vec2i, n_hfields)
    extent: Any          # wp.array(vec4, n_hfields)
    offset: Any          # wp.array(int32, n_hfields)
    reach: Any           # wp.array(float32, n_hfields)
    geom: Any            # wp.array(int32, n_geoms)


@attrs.frozen
class RigidGeoms:
    """Static geometry a coupler queries (same for every env): per geom its link, type code
    (``polyphys.description.GeomType``), size (MuJoCo half sizes), local pose, and the Rigid
    material's coupling fields (coup_friction, coup_restitution, coup_softness).

    Mesh geoms (type GeomType.MESH) have no analytic SDF: the solver gives their triangles in
    ``meshes`` (per geom ``(vertices (n, 3), faces (m, 3))`` numpy arrays in the geom frame, or
    None for a primitive) and the coupler builds grid SDFs from them at build time, or it gives
    ready ``sdf_grids`` (an :class:`SdfGrids`), which a coupler then uses as they are.

    Heightfield geoms (type GeomType.HFIELD) are listed in ``hfields``: per geom ``(heights (nrow,
    ncol), (rx, ry, z_bottom))`` host arrays in the geom frame (``polyphys.sdf_grid.hfield_heights``
    makes them from a ``Geom.hfield``), or None; a coupler packs them into :class:`HeightFields`."""

    link: Any            # wp.array(int32, n_geoms), index into the link arrays
    type: Any            # wp.array(int32)
    size: Any            # wp.array(vec3)
    pos: Any             # wp.array(vec3) in the link frame
    quat: Any            # wp.array(quat) in the link frame
    coup_friction: Any   # wp.array(float)
    coup_restitution: Any
    coup_softness: Any
    sdf_grids: Any = None    # SdfGrids, or None (then built from ``meshes``)
    # per geom: (vertices, faces) host arrays in the geom frame, or None (not compared or hashed)
    meshes: tuple = attrs.field(default=(), eq=False)
    # per geom: (heights (nrow, ncol), (rx, ry, z_bottom)) host arrays in the geom frame, or None
    hfields: tuple = attrs.field(default=(), eq=False)
    # per geom: its index among all geoms of the solver's entity descriptions in order (visual ones
    # included) — the rigid solver's global collision geom index (get_contacts' geom_a/geom_b), which
    # a coupler's per-geom tables use; () when the solver does not say (host ints, not compared)
    geom_index: tuple = attrs.field(default=(), eq=False)


def pack_rigid_geoms(entities, precision: str = "32", device=None) -> RigidGeoms:
    """The RigidGeoms of articulated entities (each with ``description``, ``material`` with the
    coup_* fields, and ``link_start``, the global index of its first link): every non-visual geom
    with an analytic SDF, every mesh geom (with its triangles) and every heightfield geom (with its
    heights), in entity and description order. The rigid and kinematic solvers' ``rigid_geoms``."""
    import numpy as np
    import warp as wp

    from .geometry import GEOM_CODES, SDF_SUPPORTED
    from .sdf_grid import hfield_heights

    rows, meshes, hfields, index = [], [], [], []
    gi = -1
    for e in entities:
        mat = e.material
        for g in e.description.geoms:
            gi += 1
            code = GEOM_CODES[g.type]
            is_mesh = g.type == "mesh" and g.mesh is not None
            hf = hfield_heights(g.hfield, f"geom {g.name!r}") if g.type == "hfield" else None
            if g.role == "visual" or (code not in SDF_SUPPORTED and not is_mesh and hf is None):
                continue
            index.append(gi)
            meshes.append((np.asarray(g.mesh.vertices, float), np.asarray(g.mesh.faces)) if is_mesh else None)
            hfields.append(hf)
            size = tuple(float(x) for x in (tuple(g.size) + (0.0, 0.0, 0.0))[:3])
            if hf is not None:
                size = hf[1]                    # (rx, ry, z_bottom)
            rows.append((e.link_start + g.link, code, size, g.pos, g.quat[1:] + g.quat[:1],
                         mat.coup_friction, mat.coup_restitution, mat.coup_softness))
    s = wp.float64 if precision == "64" else wp.float32
    npf = np.float64 if precision == "64" else np.float32
    V, Q = wp.types.vector(3, s), wp.types.quaternion(s)
    col = list(zip(*rows)) if rows else [[]] * 8
    return RigidGeoms(
        link=wp.array(np.asarray(col[0], np.int32), dtype=wp.int32, device=device),
        type=wp.array(np.asarray(col[1], np.int32), dtype=wp.int32, device=device),
        size=wp.array(np.asarray(col[2], npf).reshape(-1, 3), dtype=V, device=device),
        pos=wp.array(np.asarray(col[3], npf).reshape(-1, 3), dtype=V, device=device),
        quat=wp.array(np.asarray(col[4], npf).reshape(-1, 4), dtype=Q, device=device),
        coup_friction=wp.array(np.asarray(col[5], npf), dtype=s, device=device),
        coup_restitution=wp.array(np.asarray(col[6], npf), dtype=s, device=device),
        coup_softness=wp.array(np.asarray(col[7], npf), dtype=s, device=device),
        meshes=tuple(meshes), hfields=tuple(hfields), geom_index=tuple(index))


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
class RigidDynamics:
    """What a coupler that solves the contact problem itself (SAP, docs/sap.md) reads of a rigid
    solver in one partition, valid between the solver's pre-coupling and post-coupling stages of a
    substep. Batch-first Warp arrays in the solver's precision; nv dofs, K the contact budget.

    qvel (n, nv): generalized velocities at the substep start; qacc_free (n, nv): the free
    acceleration A⁻¹·f(q, v) of every force but contact, so the free velocity is v* = qvel +
    h·qacc_free; mass (n, nv, nv): the dense, symmetric A = M + h·D (mass matrix, armature and the
    implicit joint damping) the post-coupling integration solves with. n_contacts (n,) int and per
    contact slot k < n_contacts: dist (n, K) signed distance (m, < 0: overlap), pos (n, K) vec3
    (world, midway between the surfaces), frame (n, K) mat33 (rows: normal from B to A, tangent 1,
    tangent 2), geom (n, K, 2) and link (n, K, 2) (global indices of A and B; link −1: world),
    condim (n, K) int (1: frictionless, 3: sliding friction), friction (n, K, 5) the solver's own
    mixed friction (sliding first); jac (n, R, nv) (R: the row budget): rows n_rows + 3k, +1, +2 map
    qvel to the velocity of A's contact point relative to B's along the frame's rows, rows below
    n_rows are the solver's other constraint rows (below). geom_friction (n, n_geoms, 3): per-env geom friction (sliding
    first) and geom_friction_ratio (n, n_geoms): its per-env scale (a geom's sliding μ is their
    product). qfrc_contact (n, nv): written by the coupler in ``couple``: the generalized contact
    force (impulse / h) the post-coupling integration adds to every other force; contact_force (n,
    R): the row forces (impulse / h) of every row, written by the coupler (the solver's own
    constraint-force readback reads them).

    The solver's non-contact constraint rows, built in pre-coupling (docs/sap.md, "Which rows SAP
    takes over"): n_rows (n,) int, rows 0 .. n_rows−1 of ``jac``, each with row_type (n, R) int
    (ROW_EQUALITY, ROW_FRICTION, ROW_LIMIT below), row_id (n, R) int (the global equality index, the
    dof, or the joint-limit index), row_pos (n, R) (m or rad: for a limit the distance to it, ≥ 0
    inside the range; for an equality the violation g(q), with J·qvel = ġ; 0 for frictionloss) and
    row_frictionloss (n, R) (the dof's frictionloss, N or N·m, on ROW_FRICTION rows). A limit row
    exists while the joint is within its margin of the limit; an inactive equality has no rows.
    n_rows may be None (no rows: the contacts start at row 0); the row_* arrays are None when the
    model has no such rows (n_rows then stays 0)."""

    qvel: Any
    qacc_free: Any
    mass: Any
    n_contacts: Any
    dist: Any
    pos: Any
    frame: Any
    geom: Any
    link: Any
    condim: Any
    friction: Any
    jac: Any
    geom_friction: Any
    geom_friction_ratio: Any
    qfrc_contact: Any
    contact_force: Any
    # the Jacobian of a point fixed to a link (a coupler's contacts of its own, e.g. rigid–FEM in SAP):
    # for link l and world point p, column d of the 3 × nv Jacobian (world velocity of the point) is
    # cdof_v[d] + cdof_w[d] × (p − dof_ref[d]) for every d on l's chain — d = link_dof_last[l], then
    # d = dof_parent[d] until −1 (a link without dofs: −1 at once, the Jacobian is 0) — and 0 elsewhere.
    # dof_parent (nv,), link_dof_last (n_links,) int32, same in every env; cdof_w, cdof_v, dof_ref (n,
    # nv) vec3 at the substep start's kinematics (world). Link indices are those of ``rigid_geoms().link``.
    dof_parent: Any = None
    link_dof_last: Any = None
    cdof_w: Any = None
    cdof_v: Any = None
    dof_ref: Any = None
    n_rows: Any = None
    row_type: Any = None
    row_id: Any = None
    row_pos: Any = None
    row_frictionloss: Any = None


# RigidDynamics.row_type codes: bilateral equality rows (connect 3, weld 6, joint 1 per equality), DOF
# frictionloss (one per dof), joint limits (one per active side)
ROW_EQUALITY = 0
ROW_FRICTION = 1
ROW_LIMIT = 2


@runtime_checkable
class RigidDynamicsView(RigidView, Protocol):
    """A rigid solver that can hand its contacts to a coupler's own contact solve (docs/sap.md):
    ``cede_contacts(owner)`` at the coupler's build makes every later substep compute free dynamics
    and contact Jacobians in pre-coupling (no contact forces of its own) and integrate with
    ``qfrc_contact`` in post-coupling; it raises CapabilityError for what it cannot hand over.
    ``rigid_dynamics(part)`` gives the arrays (:class:`RigidDynamics`); it is None for a solver with
    no dofs (nothing of it moves: its geoms are static obstacles, there is nothing to hand over and
    ``cede_contacts`` changes nothing). ``handoff_kernel_modules(layout)`` names the Warp modules the
    hand-off stages launch beyond the solver's own ``kernel_modules(layout)`` (with their overloads
    of the layout's precision declared); the coupler returns them from its ``kernel_modules`` so
    they compile with the rest before build (docs/running.md, "First run")."""

    def cede_contacts(self, owner: str) -> None: ...

    def rigid_dynamics(self, part) -> RigidDynamics: ...

    def handoff_kernel_modules(self, layout) -> list: ...


@attrs.frozen
class RenderGeoms:
    """Everything a camera draws of a rigid-side solver: its visual and collision geoms, static
    (host arrays, one row per geom; docs/cameras.md). link: (n,) int, the geom's link as a global
    index into the solver's link arrays (``rigid_links``); type: (n,) ``polyphys.geometry`` codes;
    size: (n, 3) MuJoCo half sizes (a heightfield: (rx, ry, z_bottom)); pos (n, 3) and quat (n, 4,
    w x y z): the pose in the link frame; rgba: (n, 4) colour (an entity's Surface colour wins over
    the model's); texture: per geom None or ``(rgb2 (3,), square (m))`` — a checker of ``rgba`` and
    ``rgb2`` with squares of that side (planes; MJCF checker textures); entity: (n,) the owning
    entity's ``uid``; entity_link: (n,) the link's index in that entity's description; name: per
    geom ``"<entity>/<geom>"``; meshes: per geom ``(vertices, faces)`` in the geom frame or None;
    hfields: per geom ``(heights (nrow, ncol), (rx, ry, z_bottom))`` or None; links: {entity uid:
    tuple of the global link index of each of the entity's description links}. Built by
    ``polyphys.raycast.geoms.render_geoms_of``."""

    link: Any
    type: Any
    size: Any
    pos: Any
    quat: Any
    rgba: Any
    entity: Any
    entity_link: Any
    name: tuple = attrs.field(default=(), eq=False)
    texture: tuple = attrs.field(default=(), eq=False)
    meshes: tuple = attrs.field(default=(), eq=False)
    hfields: tuple = attrs.field(default=(), eq=False)
    links: dict = attrs.field(factory=dict, eq=False)


@runtime_checkable
class RenderView(Protocol):
    """What ray-casting sensors and cameras read of a rigid-side solver (docs/cameras.md): every
    geom (``render_geoms``) and the link frames (``rigid_links(part).pos/.quat``). A solver whose
    link frames inside the step lag its end state (the rigid solver computes them at a substep's
    start) also offers ``sync_links(part)``: launches only, it makes ``rigid_links(part)`` describe
    the state at the end of the step. A solver exposing only ``RigidView`` is drawn from its
    ``rigid_geoms`` (collision geoms, one grey)."""

    def render_geoms(self) -> RenderGeoms: ...

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


@attrs.frozen
class RigidSensorTables:
    """One entity's named frames, joints and actuators for sensors (host side; link, q, dof and
    actuator indices global in the solver's arrays; poses in the link frame, quaternions w x y z).

    links: name -> link. sites / geoms: name -> (link, pos (3,), quat (4,), type, size (3,)) (type
    and size: MuJoCo's site/geom type and half sizes). joints: name -> (type, q_start, dof_start)
    with type one of ``polyphys.description.JOINT_TYPES``. actuators: name -> index. link_parent:
    (n_links,) parent of every link of the solver (−1: world), for subtree sensors."""

    links: dict
    sites: dict
    geoms: dict
    joints: dict
    actuators: dict
    link_parent: Any


@attrs.frozen
class RigidSensorData:
    """Per-partition arrays of the state the solver's last solve of a step belongs to (its time is
    the step's end minus ``time_lag``; the rigid solver: the start of the last substep, MuJoCo's
    convention), all world frame, batch-first (n_envs_part, ...):

    link_pos, link_quat (Warp quat x y z w): link frames; link_com: CoM (world); link_ang: angular
    velocity; link_vel: CoM linear velocity; link_acc_ang: angular acceleration; link_acc: the
    CoM's linear acceleration (true acceleration: gravity not included); link_mass (n, L) and
    link_inertia (n, L, mat33; about the CoM in the link frame): mass properties; cfrc_int_force /
    cfrc_int_torque: the wrench the parent exerts on the link through their joint (torque about the
    link CoM; MuJoCo's cfrc_int); cfrc_ext_force / cfrc_ext_torque: external wrench on the link
    (applied forces, contacts, connect/weld equalities; about the CoM; MuJoCo's cfrc_ext); qpos,
    qvel, qacc, qfrc_actuator, qfrc_constraint (n, nq or nv), act_force (n, n_actuators);
    contacts: n_contacts (n,), contact_pos (n, K, vec3), contact_frame (n, K, mat33: rows normal
    from B to A, tangent 1, tangent 2), contact_wrench (n, K, 6: F_n, F_t1, F_t2, T_n, T_t1, T_t2
    on A, contact frame), contact_link (n, K, 2: links of A and B, −1 world); link_contact_force /
    link_contact_torque: net contact wrench per link (about the CoM) and link_impulse_force /
    link_impulse_torque: its Σ h·f over the step's substeps (docs/semantics.md §F4). Arrays are never
    reallocated; entries stay valid from the end of one step to the next step."""

    link_pos: Any
    link_quat: Any
    link_com: Any
    link_ang: Any
    link_vel: Any
    link_acc_ang: Any
    link_acc: Any
    link_mass: Any
    link_inertia: Any
    cfrc_int_force: Any
    cfrc_int_torque: Any
    cfrc_ext_force: Any
    cfrc_ext_torque: Any
    qpos: Any
    qvel: Any
    qacc: Any
    qfrc_actuator: Any
    qfrc_constraint: Any
    act_force: Any
    n_contacts: Any
    contact_pos: Any
    contact_frame: Any
    contact_wrench: Any
    contact_link: Any
    link_contact_force: Any
    link_contact_torque: Any
    link_impulse_force: Any
    link_impulse_torque: Any
    time_lag: float = 0.0


@runtime_checkable
class RigidSensorView(Protocol):
    def sensor_tables(self, entity) -> RigidSensorTables:
        """Named frames/joints/actuators of one of the solver's entities."""

    def sensor_data(self, part) -> RigidSensorData:
        """The arrays sensors read for ``part`` (valid inside the step after the last substep)."""

    def request_sensor_data(self) -> None:
        """Called by a sensor at build: from now on every step fills ``sensor_data`` (the solver
        may skip that work when no sensor asked)."""


@attrs.frozen
class DeformableDynamics:
    """What a coupler that solves contact itself (SAP, docs/sap.md) reads of a deformable solver in
    one partition, valid between its pre- and post-coupling stages of a substep. Batch-first Warp
    arrays in the solver's precision over the solver's nodes (FEM: mesh vertices).

    pos0 (n, N) vec3: positions at the substep start; vel (n, N) vec3: the velocities after
    pre-coupling (the free velocity v*: every force but the coupler's), which the coupler may change
    in ``couple``; post-coupling then integrates x = pos0 + h·vel. mass (n, N): lumped node mass
    (kg); fixed (n, N) int32: 1 for a node the solver holds in place (its velocity stays 0).
    surface (S,) int32: the nodes on the boundary (contact candidates), same in every env. body (N,)
    int32: the entity each node belongs to. ``velocity_update`` names how v* was obtained: "explicit"
    (v* = v + h·M⁻¹f(x): the lumped mass is the exact linearisation of the velocity update in the
    coupler's impulses) or "implicit" (backward Euler: the exact linearisation would be M + h²K (+
    damping); a coupler using M alone treats the contact impulse explicitly with respect to the
    elastic forces, docs/sap.md)."""

    pos0: Any
    vel: Any
    mass: Any
    fixed: Any
    surface: Any
    body: Any
    velocity_update: str = "explicit"


@runtime_checkable
class DeformableDynamicsView(Protocol):
    def deformable_dynamics(self, part) -> DeformableDynamics:
        """The :class:`DeformableDynamics` arrays of ``part``."""


# a coupler whose spec names "ContactDynamicsView" pairs with a solver exposing either protocol (the
# SAP coupler: a rigid solver with itself and with deformable solvers); isinstance takes the tuple
ContactDynamicsView = (RigidDynamicsView, DeformableDynamicsView)

VIEW_PROTOCOLS = {"ParticleView": ParticleView, "RigidView": RigidView, "SurfaceMeshView": SurfaceMeshView,
                  "ParticleStateView": ParticleStateView, "RigidSensorView": RigidSensorView,
                  "RenderView": RenderView,
                  "RigidDynamicsView": RigidDynamicsView, "DeformableDynamicsView": DeformableDynamicsView,
                  "ContactDynamicsView": ContactDynamicsView}
