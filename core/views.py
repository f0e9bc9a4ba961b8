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
    (``polyphys.sdf`` GEOM_* constants), size (MuJoCo half sizes), local pose, and the Rigid
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


def pack_rigid_geoms(entities, precision: str = "32", device=None) -> RigidGeoms:
    """The RigidGeoms of articulated entities (each with ``description``, ``material`` with the
    coup_* fields, and ``link_start``, the global index of its first link): every non-visual geom
    with an analytic SDF, every mesh geom (with its triangles) and every heightfield geom (with its
    heights), in entity and description order. The rigid and kinematic solvers' ``rigid_geoms``."""
    import numpy as np
    import warp as wp

    from .geometry import GEOM_CODES, SDF_SUPPORTED
    from .sdf_grid import hfield_heights

    rows, meshes, hfields = [], [], []
    for e in entities:
        mat = e.material
        for g in e.description.geoms:
            code = GEOM_CODES[g.type]
            is_mesh = g.type == "mesh" and g.mesh is not None
            hf = hfield_heights(g.hfield, f"geom {g.name!r}") if g.type == "hfield" else None
            if g.role == "visual" or (code not in SDF_SUPPORTED and not is_mesh and hf is None):
                continue
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
        meshes=tuple(meshes), hfields=tuple(hfields))


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
