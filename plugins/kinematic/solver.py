"""KinematicSolver: q advances by the set dof velocities; links follow by forward kinematics."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from polyphys import morphs as M
from polyphys.arrays import env_slice, write_env_rows
from polyphys.description import without_collision
from polyphys.errors import OptionError
from polyphys.importing import describe_morph
from polyphys.interfaces import Solver
from polyphys.kinematics import JointTree
from polyphys.views import RigidGeoms, RigidLinks, pack_rigid_geoms

from .entity import KinematicEntity
from .options import KinematicOptions


class KinematicSolver(Solver):
    """Exposes RigidView with ``accepts_reaction = False``: couplers move particles with it, and
    nothing pushes back (a kinematic body couples one way)."""

    options_type = KinematicOptions
    accepts_reaction = False

    def __init__(self, scene, options, spec):
        super().__init__(scene, options, spec)
        self._pending: list = []        # (description, base_pos, base_quat)
        self._geoms = None

    def add_entity(self, morph, material, surface=None, name=None, **kwargs):
        if kwargs:
            raise OptionError(f"kinematic add_entity: unknown arguments {sorted(kwargs)}")
        if isinstance(morph, M.Plane):
            raise OptionError("a Plane cannot be a kinematic entity (it is static); use a rigid plane")
        desc = describe_morph(morph, self.scene._plugins)
        if not morph.collision:           # Morph(collision=False): no geometry for the couplers
            desc = without_collision(desc)
        if isinstance(morph, M.Primitive):
            base = ((0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0))   # the primitive's link holds its pose
        else:
            base = (morph.pos, morph.orientation)
        self._pending.append((desc, *base))
        entity = KinematicEntity(self, len(self.entities), morph, material, surface, name, desc)
        self.entities.append(entity)
        return entity

    def kernel_modules(self, layout):
        """The joint-tree FK kernels of polyphys.kinematics, in the scene's precision."""
        return JointTree.kernel_modules(layout.precision)

    def build(self, layout):
        self.layout = layout
        self.tree = JointTree(self._pending)
        t = self.tree
        for e, ls, js, qs, ds in zip(self.entities, t.entity_link_start, t.entity_joint_start,
                                     t.entity_q_start, t.entity_dof_start):
            e._bind(ls, js, qs, ds)
        n, dev = layout.n_envs, layout.device
        import warp as wp

        self.model = t.to_warp(n, layout.precision, dev)
        m = self.model
        npf = layout.np_float
        self.qpos = wp.array(np.tile(t.qpos0, (n, 1)).astype(npf), dtype=m.scalar, device=dev)
        self.qvel = wp.zeros((n, t.n_dofs), dtype=m.scalar, device=dev)
        self.link_pos = wp.zeros((n, t.n_links), dtype=m.vec3, device=dev)
        self.link_quat = wp.zeros((n, t.n_links), dtype=m.quat, device=dev)
        self.link_vel = wp.zeros((n, t.n_links), dtype=m.vec3, device=dev)
        self.link_ang = wp.zeros((n, t.n_links), dtype=m.vec3, device=dev)
        self._parts = {}
        for part in layout.partitions:
            def cut(a, p=part):
                return env_slice(a, p.start, p.stop)

            pm = SimpleNamespace(**vars(m))
            pm.root_pos, pm.root_quat = cut(m.root_pos), cut(m.root_quat)
            self._parts[part.index] = SimpleNamespace(
                model=pm, qpos=cut(self.qpos), qvel=cut(self.qvel), link_pos=cut(self.link_pos),
                link_quat=cut(self.link_quat), link_vel=cut(self.link_vel), link_ang=cut(self.link_ang))
        self.forward()

    # -- stepping --------------------------------------------------------------------------------
    def substep_pre_coupling(self, f, part):
        p = self._parts[part.index]
        JointTree.launch_integrate(p.model, self.layout.h, p.qvel, p.qpos)
        JointTree.launch_fk(p.model, p.qpos, p.qvel, p.link_pos, p.link_quat, p.link_vel, p.link_ang)

    def forward(self):
        for part in self.layout.partitions:
            p = self._parts[part.index]
            JointTree.launch_fk(p.model, p.qpos, p.qvel, p.link_pos, p.link_quat, p.link_vel, p.link_ang)

    # -- RigidView ---------------------------------------------------------------------------------
    def rigid_geoms(self) -> RigidGeoms:
        """Collision geoms with an analytic SDF, mesh geoms with their triangles (the coupler
        builds grid SDFs from them) and heightfield geoms with their heights (``hfield_heights``),
        their link (global index) and coupling fields."""
        if self._geoms is None:       # the kinematic solver's coupling geometry is float32
            self._geoms = pack_rigid_geoms(self.entities, "32", self.layout.device)
        return self._geoms

    def rigid_links(self, part) -> RigidLinks:
        """Link frames and velocities of one partition. A kinematic link has no mass, so its
        reference point (``com``) is the link origin and ``vel`` the origin's velocity."""
        p = self._parts[part.index]
        return RigidLinks(pos=p.link_pos, quat=p.link_quat, com=p.link_pos, vel=p.link_vel,
                          ang=p.link_ang)

    # -- RenderView (cameras and ray sensors, docs/cameras.md) --------------------------------------
    def render_geoms(self):
        """Every geom (visual and collision) with its colour; the link frames inside and after a
        step are the end state (forward kinematics runs in pre-coupling), so no ``sync_links``."""
        from polyphys.raycast.geoms import render_geoms_of

        return render_geoms_of(self.entities, [e.link_start for e in self.entities])

    def state_arrays(self):
        return {"qpos": self.qpos, "qvel": self.qvel, "root_pos": self.model.root_pos,
                "root_quat": self.model.root_quat, "link_pos": self.link_pos,
                "link_quat": self.link_quat, "link_vel": self.link_vel, "link_ang": self.link_ang}

    # -- host access used by the entities (polyphys.articulated) ------------------------------------
    def articulated_arrays(self) -> dict:
        """The arrays of the entities' getters and setters (polyphys.articulated). A kinematic link
        has no mass: its "CoM" is its origin."""
        return {"qpos": self.qpos, "qvel": self.qvel, "link_pos": self.link_pos, "link_quat": self.link_quat,
                "link_vel": self.link_vel, "link_ang": self.link_ang, "link_com": self.link_pos,
                "root_pos": self.model.root_pos, "root_quat": self.model.root_quat}

    def sync_kinematics(self) -> None:
        """Link poses are current after every substep and setter (nothing to refresh)."""

    def _write(self, arr, envs: np.ndarray, cols, values: np.ndarray) -> None:
        """arr[envs, cols] = values (host round trip; outside the step)."""
        write_env_rows(arr, envs, cols, values)
