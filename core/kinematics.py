"""Host side of a joint tree shared by solvers that use forward kinematics (kinematic, rigid).

``JointTree`` concatenates entity descriptions into flat link/joint arrays (links in topological
order, q and dof ranges per entity) and launches the FK kernels of ``kernels/fk.py``.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from .description import EntityDescription, JointType
from .rotations import euler_to_quat, quat_mul, quat_rotate, quat_to_euler  # noqa: F401  (re-exported)

JOINT_CODES = {t.name.lower(): t for t in JointType}     # description type name -> JointType


class JointTree:
    """Flat arrays of every link and joint of a solver's entities.

    :param entities: list of ``(EntityDescription, base_pos, base_quat)``; the base placement is
        composed with the pose of every link whose parent is the world.
    """

    def __init__(self, entities: list[tuple[EntityDescription, tuple, tuple]]):
        parent, pos0, quat0, joint_adr = [], [], [], [0]
        jtype, jq, jd, jpos, jaxis, jref = [], [], [], [], [], []
        root_pos, root_quat = [], []
        self.entity_link_start, self.entity_joint_start = [], []
        self.entity_q_start, self.entity_dof_start = [], []
        qpos0 = []
        nl = nj = nq = nd = 0
        for desc, bpos, bquat in entities:
            self.entity_link_start.append(nl)
            self.entity_joint_start.append(nj)
            self.entity_q_start.append(nq)
            self.entity_dof_start.append(nd)
            bpos, bquat = np.asarray(bpos, float), np.asarray(bquat, float)
            q0 = desc.qpos0()
            # world pose of every link at the reference configuration while no joint has moved it:
            # a free joint whose ancestors are all jointless (MJCF bodies under the world body) starts
            # at the entity placement composed with that chain
            static_pos, static_quat, static_chain = [], [], []
            for link in desc.links:
                if link.parent < 0:
                    static_pos.append(bpos + quat_rotate(bquat, link.pos))
                    static_quat.append(quat_mul(bquat, link.quat))
                    static_chain.append(True)
                else:
                    pp, pq = static_pos[link.parent], static_quat[link.parent]
                    static_pos.append(pp + quat_rotate(pq, link.pos))
                    static_quat.append(quat_mul(pq, link.quat))
                    static_chain.append(static_chain[link.parent] and not desc.links[link.parent].joints)
            for li_local, link in enumerate(desc.links):
                parent.append(link.parent + nl if link.parent >= 0 else -1)
                pos0.append(link.pos)
                quat0.append(link.quat)
                if link.parent < 0:
                    root_pos.append(bpos + quat_rotate(bquat, link.pos))
                    root_quat.append(quat_mul(bquat, link.quat))
                else:
                    root_pos.append(np.zeros(3))
                    root_quat.append(np.array([1.0, 0, 0, 0]))
                for ji in link.joints:
                    j = desc.joints[ji]
                    jtype.append(JOINT_CODES[j.type])
                    jq.append(j.q_start + nq)
                    jd.append(j.dof_start + nd)
                    jpos.append(j.pos)
                    jaxis.append(j.axis)
                    jref.append(j.ref if j.type in ("revolute", "prismatic") else 0.0)
                    if j.type == "free" and static_chain[li_local]:
                        q0[j.q_start:j.q_start + 3] = static_pos[li_local]
                        q0[j.q_start + 3:j.q_start + 7] = static_quat[li_local]
                joint_adr.append(len(jtype))
            qpos0.append(q0)
            nl += desc.n_links
            nj += len(desc.joints)
            nq += desc.n_qs
            nd += desc.n_dofs
        self.n_links, self.n_joints, self.n_qs, self.n_dofs = nl, nj, nq, nd
        self.link_parent = np.asarray(parent, np.int32)
        self.link_pos0 = np.asarray(pos0, float).reshape(-1, 3)
        self.link_quat0 = np.asarray(quat0, float).reshape(-1, 4)
        self.link_joint_adr = np.asarray(joint_adr, np.int32)
        self.joint_type = np.asarray(jtype, np.int32)
        self.joint_q_start = np.asarray(jq, np.int32)
        self.joint_dof_start = np.asarray(jd, np.int32)
        self.joint_pos = np.asarray(jpos, float).reshape(-1, 3)
        self.joint_axis = np.asarray(jaxis, float).reshape(-1, 3)
        self.joint_ref = np.asarray(jref, float)
        self.root_pos = np.asarray(root_pos, float).reshape(-1, 3)
        self.root_quat = np.asarray(root_quat, float).reshape(-1, 4)
        self.qpos0 = np.concatenate(qpos0) if qpos0 else np.zeros(0)

    # -- device arrays ----------------------------------------------------------------------------
    @staticmethod
    def kernel_modules(precision: str) -> list:
        """The Warp module of the FK kernels, with the overloads of ``precision`` declared (a solver
        returns it from ``kernel_modules(layout)``)."""
        from .kernels import fk

        fk.declare_overloads(precision)
        return [fk]

    def to_warp(self, n_envs: int, precision: str, device: str) -> SimpleNamespace:
        import warp as wp

        JointTree.kernel_modules(precision)

        s = wp.float64 if precision == "64" else wp.float32
        V, Q = wp.types.vector(3, s), wp.types.quaternion(s)
        xyzw = lambda q: np.asarray(q)[..., [1, 2, 3, 0]]   # noqa: E731  Warp stores (x, y, z, w)
        tile = lambda a: np.ascontiguousarray(np.broadcast_to(a, (n_envs, *a.shape)))  # noqa: E731
        m = SimpleNamespace(scalar=s, vec3=V, quat=Q, device=device)
        m.link_parent = wp.array(self.link_parent, dtype=wp.int32, device=device)
        m.link_pos0 = wp.array(self.link_pos0, dtype=V, device=device)
        m.link_quat0 = wp.array(xyzw(self.link_quat0), dtype=Q, device=device)
        m.link_joint_adr = wp.array(self.link_joint_adr, dtype=wp.int32, device=device)
        m.joint_type = wp.array(self.joint_type, dtype=wp.int32, device=device)
        m.joint_q_start = wp.array(self.joint_q_start, dtype=wp.int32, device=device)
        m.joint_dof_start = wp.array(self.joint_dof_start, dtype=wp.int32, device=device)
        m.joint_pos = wp.array(self.joint_pos, dtype=V, device=device)
        m.joint_axis = wp.array(self.joint_axis, dtype=V, device=device)
        m.joint_ref = wp.array(self.joint_ref, dtype=s, device=device)
        m.root_pos = wp.array(tile(self.root_pos), dtype=V, device=device)
        m.root_quat = wp.array(tile(xyzw(self.root_quat)), dtype=Q, device=device)
        return m

    @staticmethod
    def launch_fk(m, qpos, qvel, link_pos, link_quat, link_vel, link_ang) -> None:
        """One launch over the envs of the given (possibly partition-sliced) arrays."""
        import warp as wp

        from .kernels.fk import forward_kinematics

        n_envs = qpos.shape[0]
        root_pos, root_quat = m.root_pos, m.root_quat
        if root_pos.shape[0] != n_envs:
            raise ValueError("root arrays must be sliced like qpos")
        wp.launch(forward_kinematics, dim=n_envs,
                  inputs=[m.link_parent, m.link_pos0, m.link_quat0, m.link_joint_adr, m.joint_type,
                          m.joint_q_start, m.joint_dof_start, m.joint_pos, m.joint_axis, m.joint_ref,
                          root_pos, root_quat, qpos, qvel],
                  outputs=[link_pos, link_quat, link_vel, link_ang], device=m.device)

    @staticmethod
    def launch_integrate(m, h: float, qvel, qpos) -> None:
        import warp as wp

        from .kernels.fk import integrate_qpos

        n_j = m.joint_type.shape[0]
        if n_j == 0:
            return
        wp.launch(integrate_qpos, dim=(qpos.shape[0], n_j),
                  inputs=[m.joint_type, m.joint_q_start, m.joint_dof_start, m.scalar(h), qvel],
                  outputs=[qpos], device=m.device)

    # -- q <-> dofs position (host) ---------------------------------------------------------------
    def dofs_position(self, qpos: np.ndarray) -> np.ndarray:
        """docs/semantics.md §S4: revolute/prismatic q − ref; free (x, y, z, three angles); spherical three angles."""
        out = np.zeros((qpos.shape[0], self.n_dofs))
        for t, qs, ds, ref in zip(self.joint_type, self.joint_q_start, self.joint_dof_start, self.joint_ref):
            if t in (JointType.REVOLUTE, JointType.PRISMATIC):
                out[:, ds] = qpos[:, qs] - ref
            elif t == JointType.SPHERICAL:
                out[:, ds:ds + 3] = quat_to_euler(qpos[:, qs:qs + 4])
            elif t == JointType.FREE:
                out[:, ds:ds + 3] = qpos[:, qs:qs + 3]
                out[:, ds + 3:ds + 6] = quat_to_euler(qpos[:, qs + 3:qs + 7])
        return out

    def qpos_from_dofs_position(self, dofs: np.ndarray, qpos: np.ndarray) -> np.ndarray:
        out = qpos.copy()
        for t, qs, ds, ref in zip(self.joint_type, self.joint_q_start, self.joint_dof_start, self.joint_ref):
            if t in (JointType.REVOLUTE, JointType.PRISMATIC):
                out[:, qs] = dofs[:, ds] + ref
            elif t == JointType.SPHERICAL:
                out[:, qs:qs + 4] = euler_to_quat(dofs[:, ds:ds + 3])
            elif t == JointType.FREE:
                out[:, qs:qs + 3] = dofs[:, ds:ds + 3]
                out[:, qs + 3:qs + 7] = euler_to_quat(dofs[:, ds + 3:ds + 6])
        return out


