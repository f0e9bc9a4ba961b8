"""Entities of a joint tree (docs/semantics.md §S1-§S4): the getters and setters the rigid and kinematic solvers
share, defined once.

``ArticulatedEntity`` holds a description bound to the solver's flat joint tree (``_bind``) and
implements q, dofs-position, dofs-velocity, link and base access. The solver supplies its arrays
through ``articulated_arrays()`` (a dict: qpos, qvel (n_envs, n_qs / n_dofs); link_pos, link_quat
(x, y, z, w), link_vel (origin velocity), link_ang, link_com (n_envs, n_links), all world;
root_pos, root_quat: the per-env placement of links whose parent is the world), ``tree`` (a
``JointTree``), ``_write(arr, envs, cols, values)``, ``forward()`` and ``sync_kinematics()``.
The solvers differ only in the velocity rule of docs/semantics.md §S4: ``ZERO_VELOCITY`` is the default of
``zero_velocity`` in ``set_qpos`` / ``set_dofs_position`` / ``set_pos`` / ``set_quat`` (rigid True,
kinematic False). Getters return NumPy copies, batch axis first (none for n_envs = 0).
"""

from __future__ import annotations

import numpy as np

from . import arrays
from .description import EntityDescription
from .errors import OptionError
from .interfaces import Entity
from .kinematics import quat_mul, quat_rotate


class JointInfo:
    """A joint with its global and entity-local q/dof indices."""

    def __init__(self, desc_joint, q_start: int, dof_start: int, q_local: int, dof_local: int):
        self.name = desc_joint.name
        self.type = desc_joint.type
        self.n_qs, self.n_dofs = desc_joint.n_qs, desc_joint.n_dofs
        self.q_start, self.dof_start = q_start, dof_start
        self.q_idx_local = list(range(q_local, q_local + self.n_qs))
        self.dof_idx_local = list(range(dof_local, dof_local + self.n_dofs))
        self.q_idx = list(range(q_start, q_start + self.n_qs))
        self.dof_idx = list(range(dof_start, dof_start + self.n_dofs))

    def __repr__(self):
        return f"<Joint {self.name!r} {self.type} q_start={self.q_start} dof_start={self.dof_start}>"


class ArticulatedEntity(Entity):
    """An entity whose state is a joint tree's q and dof velocities (see the module docstring)."""

    ZERO_VELOCITY = True

    def __init__(self, solver, idx, morph, material, surface, name, desc: EntityDescription):
        super().__init__(solver, idx, morph, material, surface, name)
        self.description = desc
        self.n_qs, self.n_dofs, self.n_links = desc.n_qs, desc.n_dofs, desc.n_links
        # the base link: link 0, except for an imported MJCF whose link 0 is MuJoCo's world body
        # (massless, joint-less): then its first child (the robot's root body)
        self.base_link = 0
        l0 = desc.links[0] if desc.links else None
        if (l0 is not None and l0.name == "world" and not l0.joints and l0.inertial.mass == 0.0
                and len(desc.links) > 1):
            children = [i for i, lk in enumerate(desc.links) if lk.parent == 0]
            if children:
                self.base_link = children[0]

    def _bind(self, link_start, joint_start, q_start, dof_start):
        self.link_start, self.joint_start = link_start, joint_start
        self.q_start, self.dof_start = q_start, dof_start
        self.joints = [JointInfo(j, q_start + j.q_start, dof_start + j.dof_start, j.q_start, j.dof_start)
                       for j in self.description.joints]
        self._qs = slice(q_start, q_start + self.n_qs)
        self._ds = slice(dof_start, dof_start + self.n_dofs)
        self._ls = slice(link_start, link_start + self.n_links)

    @property
    def links(self):
        return [lk.name for lk in self.description.links]

    def get_joint(self, name: str) -> JointInfo:
        for j in self.joints:
            if j.name == name:
                return j
        raise OptionError(f"entity {self.name!r} has no joint {name!r}; joints: {[j.name for j in self.joints]}")

    # -- helpers ---------------------------------------------------------------------------------
    def _a(self, name):
        return self.solver.articulated_arrays()[name]

    def _zero_velocity(self, value, method: str) -> bool:
        """zero_velocity of a setter: None gives the solver's rule (docs/semantics.md §S4); else True
        or False (checked before the setter writes anything)."""
        if value is None:
            return self.ZERO_VELOCITY
        if not isinstance(value, (bool, np.bool_)):
            raise OptionError(f"{type(self).__name__}.{method}(): zero_velocity = {arrays.short_repr(value)}: "
                              f"expected True or False (None: the solver's rule, docs/semantics.md §S4)")
        return bool(value)

    def _local_idx(self, idx, n: int, what: str) -> np.ndarray:
        if idx is None:
            return np.arange(n)
        arr = arrays.as_index_list(what, idx)
        if arr.size and not np.issubdtype(arr.dtype, np.integer):
            raise OptionError(f"{what} = {idx!r}: expected integer indices")
        bad = arr[(arr < 0) | (arr >= n)]
        if bad.size:
            raise OptionError(f"{what} contains {bad.tolist()}: allowed 0..{n - 1} for entity {self.name!r}")
        if len(np.unique(arr)) != arr.size:
            raise OptionError(f"{what} = {arr.tolist()}: duplicate indices")
        return arr.astype(np.int64)

    def _read(self, arr, cols: slice, idx, envs):
        a = arr.numpy()[:, cols]
        if idx is not None:
            a = a[:, idx]
        return self._out(a.astype(float), envs)

    def _normalize_quats(self, vals):
        vals = vals.copy()
        for j in self.joints:
            if j.type in ("free", "spherical"):
                a = j.q_idx_local[0] + (3 if j.type == "free" else 0)
                q = vals[:, a:a + 4]
                n = np.linalg.norm(q, axis=1, keepdims=True)
                if np.any(n < 1e-12):
                    raise OptionError(f"qpos of joint {j.name!r}: a zero quaternion has no orientation")
                vals[:, a:a + 4] = q / n
        return vals

    # -- q and dofs ------------------------------------------------------------------------------
    def get_qpos(self, envs_idx=None):
        """Generalized coordinates in q order (MuJoCo's qpos order for an MJCF model)."""
        return self._read(self._a("qpos"), self._qs, None, self._envs(envs_idx))

    def set_qpos(self, qpos, envs_idx=None, zero_velocity: bool | None = None):
        """Write q (quaternions normalised). zero_velocity (default: the solver's rule, docs/semantics.md §S4 —
        rigid zeroes the velocity, kinematic keeps it)."""
        zero = self._zero_velocity(zero_velocity, "set_qpos")
        envs = self._envs(envs_idx)
        vals = self._normalize_quats(self._in("qpos", qpos, (self.n_qs,), envs))
        self.solver._write(self._a("qpos"), envs, self._qs, vals)
        if zero:
            self.solver._write(self._a("qvel"), envs, self._ds, np.zeros((len(envs), self.n_dofs)))
        self.solver.forward()

    def get_dofs_position(self, dofs_idx_local=None, envs_idx=None):
        """docs/semantics.md §S4: revolute/prismatic q − ref; free (x, y, z, three angles); spherical three angles."""
        envs = self._envs(envs_idx)
        idx = self._local_idx(dofs_idx_local, self.n_dofs, "dofs_idx_local")
        full = self.solver.tree.dofs_position(self._a("qpos").numpy().astype(float))
        return self._out(full[:, self._ds][:, idx], envs)

    def set_dofs_position(self, position, dofs_idx_local=None, envs_idx=None, zero_velocity: bool | None = None):
        """Write dofs positions (the form of get_dofs_position); zero_velocity as set_qpos (those
        dofs only)."""
        zero = self._zero_velocity(zero_velocity, "set_dofs_position")
        envs = self._envs(envs_idx)
        idx = self._local_idx(dofs_idx_local, self.n_dofs, "dofs_idx_local")
        vals = self._in("position", position, (len(idx),), envs)
        qpos = self._a("qpos").numpy().astype(float)
        dofs = self.solver.tree.dofs_position(qpos)
        dofs[np.ix_(envs, self._ds.start + idx)] = vals
        new = self.solver.tree.qpos_from_dofs_position(dofs, qpos)
        self.solver._write(self._a("qpos"), envs, self._qs, new[envs][:, self._qs])
        if zero:
            self.solver._write(self._a("qvel"), envs, self._ds.start + idx, np.zeros((len(envs), len(idx))))
        self.solver.forward()

    def get_dofs_velocity(self, dofs_idx_local=None, envs_idx=None):
        """Dof velocities in MuJoCo's qvel convention (free: world linear velocity of the link
        origin, then angular velocity in the link frame; spherical: local angular velocity)."""
        idx = self._local_idx(dofs_idx_local, self.n_dofs, "dofs_idx_local")
        return self._read(self._a("qvel"), self._ds, idx, self._envs(envs_idx))

    def set_dofs_velocity(self, velocity, dofs_idx_local=None, envs_idx=None):
        envs = self._envs(envs_idx)
        idx = self._local_idx(dofs_idx_local, self.n_dofs, "dofs_idx_local")
        vals = self._in("velocity", velocity, (len(idx),), envs)
        self.solver._write(self._a("qvel"), envs, self._ds.start + idx, vals)
        self.solver.forward()

    # -- links -----------------------------------------------------------------------------------
    def _links(self, arr, links_idx_local, envs_idx, xyzw_to_wxyz=False):
        """Rows of a (n_envs, n_links, ...) array (or the name of an articulated array) for this
        entity's links, after refreshing the solver's link kinematics if a step ran since."""
        self.solver.sync_kinematics()
        envs = self._envs(envs_idx)
        idx = self._local_idx(links_idx_local, self.n_links, "links_idx_local")
        arr = self._a(arr) if isinstance(arr, str) else arr
        a = arr.numpy()[:, self._ls][:, idx].astype(float)
        if xyzw_to_wxyz:
            a = a[..., [3, 0, 1, 2]]
        return self._out(a, envs)

    def get_links_pos(self, links_idx_local=None, envs_idx=None):
        """Link frame origins (world)."""
        return self._links("link_pos", links_idx_local, envs_idx)

    def get_links_quat(self, links_idx_local=None, envs_idx=None):
        """Link orientations (world, w x y z)."""
        return self._links("link_quat", links_idx_local, envs_idx, True)

    def get_links_vel(self, links_idx_local=None, envs_idx=None):
        """Linear velocity of each link origin (world frame)."""
        return self._links("link_vel", links_idx_local, envs_idx)

    def get_links_ang(self, links_idx_local=None, envs_idx=None):
        """Angular velocity of each link (world frame)."""
        return self._links("link_ang", links_idx_local, envs_idx)

    # -- base ------------------------------------------------------------------------------------
    def get_pos(self, envs_idx=None, relative: bool = True):
        """Base link: relative=True its origin (the author frame), relative=False its CoM (the
        solver's inertia-aligned origin, docs/semantics.md §S2; a kinematic link has no mass: its origin)."""
        return self._links("link_pos" if relative else "link_com", [self.base_link], envs_idx)[..., 0, :]

    def get_quat(self, envs_idx=None):
        return self._links("link_quat", [self.base_link], envs_idx, True)[..., 0, :]

    def get_vel(self, envs_idx=None, relative: bool = True):
        """Linear velocity of the base origin (relative=True) or of its CoM (relative=False):
        they differ by ω × d (docs/semantics.md §S2)."""
        v = self._links("link_vel", [self.base_link], envs_idx)[..., 0, :]
        if relative:
            return v
        w = self.get_ang(envs_idx)
        d = self.get_pos(envs_idx, relative=False) - self.get_pos(envs_idx, relative=True)
        return v + np.cross(w, d)

    def get_ang(self, envs_idx=None):
        return self._links("link_ang", [self.base_link], envs_idx)[..., 0, :]

    def _free_root(self):
        root = self.description.links[self.base_link]
        if root.joints and self.description.joints[root.joints[0]].type == "free":
            return self.joints[root.joints[0]]
        return None

    def set_pos(self, pos, envs_idx=None, zero_velocity: bool | None = None):
        """Move the base origin to ``pos``: a free root's q, or a fixed base's placement (the
        entity's root placement moves so that the base origin lands at pos)."""
        zero = self._zero_velocity(zero_velocity, "set_pos")
        envs = self._envs(envs_idx)
        vals = self._in("pos", pos, (3,), envs)
        fr = self._free_root()
        if fr is not None:
            self.solver._write(self._a("qpos"), envs, slice(fr.q_start, fr.q_start + 3), vals)
            if zero:
                self.solver._write(self._a("qvel"), envs, self._ds, np.zeros((len(envs), self.n_dofs)))
        else:
            li = self.link_start
            root_pos = self._a("root_pos")
            rp = root_pos.numpy()[envs, li].astype(float)
            rp = rp + vals - np.asarray(self.get_pos(envs_idx), float).reshape(len(envs), 3)
            self.solver._write(root_pos, envs, slice(li, li + 1), rp.reshape(len(envs), 1, 3))
        self.solver.forward()

    def set_quat(self, quat, envs_idx=None, zero_velocity: bool | None = None):
        """Turn the base to ``quat`` (w x y z): a free root's q, or a fixed base's placement
        (rotated about the base origin)."""
        zero = self._zero_velocity(zero_velocity, "set_quat")
        envs = self._envs(envs_idx)
        vals = self._in("quat", quat, (4,), envs)
        n = np.linalg.norm(vals, axis=1, keepdims=True)
        if np.any(n < 1e-12):
            raise OptionError("set_quat: a zero quaternion has no orientation")
        vals = vals / n
        fr = self._free_root()
        if fr is not None:
            self.solver._write(self._a("qpos"), envs, slice(fr.q_start + 3, fr.q_start + 7), vals)
            if zero:
                self.solver._write(self._a("qvel"), envs, self._ds, np.zeros((len(envs), self.n_dofs)))
        else:
            li = self.link_start
            root_pos, root_quat = self._a("root_pos"), self._a("root_quat")
            pb = np.asarray(self.get_pos(envs_idx), float).reshape(len(envs), 3)
            qb = np.asarray(self.get_quat(envs_idx), float).reshape(len(envs), 4)
            delta = quat_mul(vals, qb * np.array([1.0, -1.0, -1.0, -1.0]))
            rp = root_pos.numpy()[envs, li].astype(float)
            rq = root_quat.numpy()[envs, li].astype(float)[:, [3, 0, 1, 2]]
            rq = quat_mul(delta, rq)
            rq /= np.linalg.norm(rq, axis=1, keepdims=True)
            rp = pb + quat_rotate(delta, rp - pb)
            self.solver._write(root_pos, envs, slice(li, li + 1), rp.reshape(len(envs), 1, 3))
            self.solver._write(root_quat, envs, slice(li, li + 1), rq[:, [1, 2, 3, 0]].reshape(len(envs), 1, 4))
        self.solver.forward()
