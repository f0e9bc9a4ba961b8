"""KinematicEntity: getters and setters of docs/semantics.md §S1–§S4 for a kinematic joint tree."""

from __future__ import annotations

import numpy as np
from polyphys import arrays
from polyphys.description import EntityDescription
from polyphys.errors import OptionError
from polyphys.interfaces import Entity


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


class KinematicEntity(Entity):
    def __init__(self, solver, idx, morph, material, surface, name, desc: EntityDescription):
        super().__init__(solver, idx, morph, material, surface, name)
        self.description = desc
        self.n_qs, self.n_dofs, self.n_links = desc.n_qs, desc.n_dofs, desc.n_links

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

    # -- indices ---------------------------------------------------------------------------------
    def _local_idx(self, idx, n: int, what: str) -> np.ndarray:
        if idx is None:
            return np.arange(n)
        arr = arrays.as_index_list(what, idx)
        if arr.size and not np.issubdtype(arr.dtype, np.integer):
            raise OptionError(f"{what} = {idx!r}: expected integer indices")
        bad = arr[(arr < 0) | (arr >= n)]
        if bad.size:
            raise OptionError(f"{what} contains {bad.tolist()}: allowed 0..{n - 1} for entity {self.name!r}")
        return arr.astype(np.int64)

    # -- q and dofs ------------------------------------------------------------------------------
    def get_qpos(self, envs_idx=None):
        envs = self._envs(envs_idx)
        return self._out(self.solver.qpos.numpy()[:, self._qs].astype(float), envs)

    def set_qpos(self, qpos, envs_idx=None, zero_velocity: bool = False):
        """Kinematic set_qpos keeps the velocity unless zero_velocity=True (docs/semantics.md §S4)."""
        envs = self._envs(envs_idx)
        vals = self._in("qpos", qpos, (self.n_qs,), envs)
        vals = self._normalize_quats(vals)
        self.solver._write_rows(self.solver.qpos, envs, self._qs, vals)
        if zero_velocity:
            self.solver._write_rows(self.solver.qvel, envs, self._ds, np.zeros((len(envs), self.n_dofs)))
        self.solver.forward()

    def _normalize_quats(self, vals):
        for j in self.joints:
            if j.type in ("free", "spherical"):
                a = j.q_idx_local[0] + (3 if j.type == "free" else 0)
                q = vals[:, a:a + 4]
                n = np.linalg.norm(q, axis=1, keepdims=True)
                if np.any(n < 1e-12):
                    raise OptionError(f"qpos of joint {j.name!r}: a zero quaternion has no orientation")
                vals = vals.copy()
                vals[:, a:a + 4] = q / n
        return vals

    def get_dofs_position(self, dofs_idx_local=None, envs_idx=None):
        envs = self._envs(envs_idx)
        idx = self._local_idx(dofs_idx_local, self.n_dofs, "dofs_idx_local")
        full = self.solver.tree.dofs_position(self.solver.qpos.numpy().astype(float))
        return self._out(full[:, self._ds][:, idx], envs)

    def set_dofs_position(self, position, dofs_idx_local=None, envs_idx=None):
        envs = self._envs(envs_idx)
        idx = self._local_idx(dofs_idx_local, self.n_dofs, "dofs_idx_local")
        vals = self._in("position", position, (len(idx),), envs)
        qpos = self.solver.qpos.numpy().astype(float)
        dofs = self.solver.tree.dofs_position(qpos)
        dofs[np.ix_(envs, self._ds.start + idx)] = vals
        new = self.solver.tree.qpos_from_dofs_position(dofs, qpos)
        self.solver._write_rows(self.solver.qpos, envs, self._qs, new[envs][:, self._qs])
        self.solver.forward()

    def get_dofs_velocity(self, dofs_idx_local=None, envs_idx=None):
        envs = self._envs(envs_idx)
        idx = self._local_idx(dofs_idx_local, self.n_dofs, "dofs_idx_local")
        return self._out(self.solver.qvel.numpy()[:, self._ds][:, idx].astype(float), envs)

    def set_dofs_velocity(self, velocity, dofs_idx_local=None, envs_idx=None):
        envs = self._envs(envs_idx)
        idx = self._local_idx(dofs_idx_local, self.n_dofs, "dofs_idx_local")
        vals = self._in("velocity", velocity, (len(idx),), envs)
        cols = self._ds.start + idx
        host = self.solver.qvel.numpy()
        host[np.ix_(envs, cols)] = vals
        self.solver.qvel.assign(host)
        self.solver.forward()

    # -- links -----------------------------------------------------------------------------------
    def _links(self, arr, links_idx_local, envs_idx, xyzw_to_wxyz=False):
        envs = self._envs(envs_idx)
        idx = self._local_idx(links_idx_local, self.n_links, "links_idx_local")
        a = arr.numpy()[:, self._ls][:, idx].astype(float)
        if xyzw_to_wxyz:
            a = a[..., [3, 0, 1, 2]]
        return self._out(a, envs)

    def get_links_pos(self, links_idx_local=None, envs_idx=None):
        return self._links(self.solver.link_pos, links_idx_local, envs_idx)

    def get_links_quat(self, links_idx_local=None, envs_idx=None):
        return self._links(self.solver.link_quat, links_idx_local, envs_idx, True)

    def get_links_vel(self, links_idx_local=None, envs_idx=None):
        """Linear velocity of each link origin (world frame)."""
        return self._links(self.solver.link_vel, links_idx_local, envs_idx)

    def get_links_ang(self, links_idx_local=None, envs_idx=None):
        """Angular velocity of each link (world frame)."""
        return self._links(self.solver.link_ang, links_idx_local, envs_idx)

    # -- base ------------------------------------------------------------------------------------
    def get_pos(self, envs_idx=None, relative: bool = True):
        """Base link origin. A kinematic link has no inertia-aligned solver origin: relative=True
        and False both give the author origin."""
        return self._links(self.solver.link_pos, [0], envs_idx)[..., 0, :]

    def get_quat(self, envs_idx=None):
        return self._links(self.solver.link_quat, [0], envs_idx, True)[..., 0, :]

    def get_vel(self, envs_idx=None):
        return self._links(self.solver.link_vel, [0], envs_idx)[..., 0, :]

    def get_ang(self, envs_idx=None):
        return self._links(self.solver.link_ang, [0], envs_idx)[..., 0, :]

    def _free_root(self):
        root = self.description.links[0]
        if root.joints and self.description.joints[root.joints[0]].type == "free":
            return self.joints[root.joints[0]]
        return None

    def set_pos(self, pos, envs_idx=None):
        """Move the base: a free root's q, or a fixed base's placement."""
        envs = self._envs(envs_idx)
        vals = self._in("pos", pos, (3,), envs)
        fr = self._free_root()
        if fr is not None:
            self.solver._write_rows(self.solver.qpos, envs, slice(fr.q_start, fr.q_start + 3), vals)
        else:
            li = self.link_start
            self.solver._write_rows(self.solver.model.root_pos, envs, slice(li, li + 1),
                                    vals.reshape(len(envs), 1, 3))
        self.solver.forward()

    def set_quat(self, quat, envs_idx=None):
        envs = self._envs(envs_idx)
        vals = self._in("quat", quat, (4,), envs)
        n = np.linalg.norm(vals, axis=1, keepdims=True)
        if np.any(n < 1e-12):
            raise OptionError("set_quat: a zero quaternion has no orientation")
        vals = vals / n
        fr = self._free_root()
        if fr is not None:
            self.solver._write_rows(self.solver.qpos, envs, slice(fr.q_start + 3, fr.q_start + 7), vals)
        else:
            li = self.link_start
            self.solver._write_rows(self.solver.model.root_quat, envs, slice(li, li + 1),
                                    vals[:, [1, 2, 3, 0]].reshape(len(envs), 1, 4))
        self.solver.forward()
