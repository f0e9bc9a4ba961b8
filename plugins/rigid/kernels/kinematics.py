"""Kinematics stage kernels: link frames, spatial inertia, motion subspaces, velocities (one thread
per env; MuJoCo's mj_kinematics + mj_comPos + mj_comVel). The loop is native C++
(kernels/kinematics.cpp; why: kernels/native.py).

Reads ``m``: the tree, link_mass/com/inertia; ``d``: qpos, qvel, root_pos, root_quat.
Writes ``d``: link_pos, link_quat, link_vel, link_ang, link_xipos, link_com_vel, joint_anchor,
joint_xaxis, dof_ref, cinert_m/mc/i, cvel_w/v, cdof_w/v, cdofdot_w/v.
"""

from typing import Any

import warp as wp

from ..types import overload
from . import native

wp.set_module_options({"enable_backward": False, "optimization_level": 3})

I1 = wp.array(dtype=wp.int32)
A1 = wp.array(dtype=Any)
A2 = wp.array2d(dtype=Any)


@wp.func_native(native.body(__file__, "kinematics_native"))
def kinematics_native(env: int, nl: int, link_parent: I1, link_root: I1, link_pos0: A1, link_quat0: A1,
                      link_joint_adr: I1, link_dof_adr: I1, joint_type: I1, joint_q_start: I1, joint_dof_start: I1,
                      joint_pos: A1, joint_axis: A1, joint_ref: A1, root_pos: A2, root_quat: A2, link_mass: A2,
                      link_com: A2, link_inertia: A2, qpos: A2, qvel: A2, link_pos: A2, link_quat: A2, link_vel: A2,
                      link_ang: A2, link_xipos: A2, link_com_vel: A2, joint_anchor: A2, joint_xaxis: A2, dof_ref: A2,
                      cinert_m: A2, cinert_mc: A2, cinert_i: A2, cvel_w: A2, cvel_v: A2, cdof_w: A2, cdof_v: A2,
                      cdofdot_w: A2, cdofdot_v: A2): ...


@wp.func
def kinematics_env(m: Any, d: Any, env: int):
    """The stage for one env: run by ``kinematics`` and by factorization's fused ``smooth``."""
    kinematics_native(env, m.nl, m.link_parent, m.link_root, m.link_pos0, m.link_quat0, m.link_joint_adr,
                      m.link_dof_adr, m.joint_type, m.joint_q_start, m.joint_dof_start, m.joint_pos, m.joint_axis,
                      m.joint_ref, d.root_pos, d.root_quat, m.link_mass, m.link_com, m.link_inertia, d.qpos, d.qvel,
                      d.link_pos, d.link_quat, d.link_vel, d.link_ang, d.link_xipos, d.link_com_vel, d.joint_anchor,
                      d.joint_xaxis, d.dof_ref, d.cinert_m, d.cinert_mc, d.cinert_i, d.cvel_w, d.cvel_v, d.cdof_w,
                      d.cdof_v, d.cdofdot_w, d.cdofdot_v)


@wp.kernel
def kinematics(m: Any, d: Any):
    kinematics_env(m, d, wp.tid())


overload(kinematics)
