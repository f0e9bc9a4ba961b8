"""Forward kinematics and q integration of a joint tree (shared by the kinematic and rigid solvers).

Generic over precision: ``declare_overloads(precision)`` adds the float32 or float64 overloads a scene
uses before the module loads, so a float32 scene compiles float32 code only. Joint semantics follow
MuJoCo: joints of a link apply in order; a revolute joint rotates by (q - ref) about its axis
through its anchor, a prismatic one translates by (q - ref) along its axis, a spherical one rotates by
its unit quaternion about its anchor, a free one sets the link pose from q directly. Velocities:
FREE dofs are the world linear velocity of the link origin, then the angular velocity in the link
frame; SPHERICAL dofs are the angular velocity in the link frame.
"""

from typing import Any

import warp as wp

from ..description import JointType

wp.set_module_options({"enable_backward": False})   # nothing here is differentiated


@wp.func
def quat_exp_local(q: Any, w: Any, h: Any):
    """q * exp(h*w/2): right-multiply the rotation-vector increment h*w (local frame)."""
    angle = wp.length(w) * h
    if wp.length(w) > type(h)(0.0):
        axis = wp.normalize(w)
        dq = wp.quat_from_axis_angle(axis, angle)
        return wp.normalize(q * dq)
    return q


@wp.kernel
def forward_kinematics(
    # Model:
    link_parent: wp.array(dtype=wp.int32),
    link_pos0: wp.array(dtype=Any),
    link_quat0: wp.array(dtype=Any),
    link_joint_adr: wp.array(dtype=wp.int32),
    joint_type: wp.array(dtype=wp.int32),
    joint_q_start: wp.array(dtype=wp.int32),
    joint_dof_start: wp.array(dtype=wp.int32),
    joint_pos: wp.array(dtype=Any),
    joint_axis: wp.array(dtype=Any),
    joint_ref: wp.array(dtype=Any),
    root_pos: wp.array2d(dtype=Any),
    root_quat: wp.array2d(dtype=Any),
    # Data in:
    qpos_in: wp.array2d(dtype=Any),
    qvel_in: wp.array2d(dtype=Any),
    # Data out:
    link_pos_out: wp.array2d(dtype=Any),
    link_quat_out: wp.array2d(dtype=Any),
    link_vel_out: wp.array2d(dtype=Any),
    link_ang_out: wp.array2d(dtype=Any),
):
    """Per env (one thread): world pose of every link origin, its linear velocity and angular
    velocity (world frame). Links are in topological order. root_pos/root_quat (n_envs, n_links)
    place links whose parent is the world (the entity's base placement)."""
    env = wp.tid()
    n_links = link_parent.shape[0]
    for l in range(n_links):
        p = link_parent[l]
        zero = link_pos0[l] - link_pos0[l]
        # velocity as (w, v0): v0 is the velocity of the body-fixed point at the world origin, so
        # the velocity of any point x of the link is v0 + w × x (joint terms add without ordering).
        if p < 0:
            xpos = root_pos[env, l]
            xquat = root_quat[env, l]
            w = zero
            v0 = zero
        else:
            ppos = link_pos_out[env, p]
            pquat = link_quat_out[env, p]
            xpos = ppos + wp.quat_rotate(pquat, link_pos0[l])
            xquat = pquat * link_quat0[l]
            w = link_ang_out[env, p]
            v0 = link_vel_out[env, p] - wp.cross(w, ppos)
        for j in range(link_joint_adr[l], link_joint_adr[l + 1]):
            jt = joint_type[j]
            qs = joint_q_start[j]
            ds = joint_dof_start[j]
            if jt == JointType.FREE:
                xpos = type(zero)(qpos_in[env, qs], qpos_in[env, qs + 1], qpos_in[env, qs + 2])
                xquat = wp.normalize(type(xquat)(qpos_in[env, qs + 4], qpos_in[env, qs + 5],
                                                 qpos_in[env, qs + 6], qpos_in[env, qs + 3]))
                vlin = type(zero)(qvel_in[env, ds], qvel_in[env, ds + 1], qvel_in[env, ds + 2])
                w = wp.quat_rotate(xquat, type(zero)(qvel_in[env, ds + 3], qvel_in[env, ds + 4],
                                                     qvel_in[env, ds + 5]))
                v0 = vlin - wp.cross(w, xpos)
            elif jt == JointType.REVOLUTE:
                anchor = xpos + wp.quat_rotate(xquat, joint_pos[j])
                axis = wp.quat_rotate(xquat, joint_axis[j])
                rot = wp.quat_from_axis_angle(joint_axis[j], qpos_in[env, qs] - joint_ref[j])
                xquat = wp.normalize(xquat * rot)
                xpos = anchor - wp.quat_rotate(xquat, joint_pos[j])
                wj = axis * qvel_in[env, ds]
                w = w + wj
                v0 = v0 - wp.cross(wj, anchor)
            elif jt == JointType.PRISMATIC:
                axis = wp.quat_rotate(xquat, joint_axis[j])
                xpos = xpos + axis * (qpos_in[env, qs] - joint_ref[j])
                v0 = v0 + axis * qvel_in[env, ds]
            elif jt == JointType.SPHERICAL:
                anchor = xpos + wp.quat_rotate(xquat, joint_pos[j])
                qb = wp.normalize(type(xquat)(qpos_in[env, qs + 1], qpos_in[env, qs + 2],
                                              qpos_in[env, qs + 3], qpos_in[env, qs]))
                xquat = xquat * qb
                xpos = anchor - wp.quat_rotate(xquat, joint_pos[j])
                wj = wp.quat_rotate(xquat, type(zero)(qvel_in[env, ds], qvel_in[env, ds + 1],
                                                      qvel_in[env, ds + 2]))
                w = w + wj
                v0 = v0 - wp.cross(wj, anchor)
        link_pos_out[env, l] = xpos
        link_quat_out[env, l] = xquat
        link_vel_out[env, l] = v0 + wp.cross(w, xpos)
        link_ang_out[env, l] = w


@wp.kernel
def integrate_qpos(
    # Model:
    joint_type: wp.array(dtype=wp.int32),
    joint_q_start: wp.array(dtype=wp.int32),
    joint_dof_start: wp.array(dtype=wp.int32),
    h: Any,
    # Data in:
    qvel_in: wp.array2d(dtype=Any),
    # Data in/out:
    qpos: wp.array2d(dtype=Any),
):
    """q' = q + h·v per joint; FREE/SPHERICAL quaternions by right-multiplying exp(h·ω_local)."""
    env, j = wp.tid()
    jt = joint_type[j]
    qs = joint_q_start[j]
    ds = joint_dof_start[j]
    if jt == JointType.REVOLUTE or jt == JointType.PRISMATIC:
        qpos[env, qs] = qpos[env, qs] + h * qvel_in[env, ds]
    elif jt == JointType.FREE or jt == JointType.SPHERICAL:
        qq = qs
        wd = ds
        if jt == JointType.FREE:
            for k in range(3):
                qpos[env, qs + k] = qpos[env, qs + k] + h * qvel_in[env, ds + k]
            qq = qs + 3
            wd = ds + 3
        q = wp.quaternion(qpos[env, qq + 1], qpos[env, qq + 2], qpos[env, qq + 3], qpos[env, qq])
        w = wp.vector(qvel_in[env, wd], qvel_in[env, wd + 1], qvel_in[env, wd + 2])
        q = quat_exp_local(q, w, h)
        qpos[env, qq] = q[3]
        qpos[env, qq + 1] = q[0]
        qpos[env, qq + 2] = q[1]
        qpos[env, qq + 3] = q[2]


_declared: set = set()


def declare_overloads(precision: str) -> None:
    """Add the overloads of ``precision`` ("32" or "64") to this module (once)."""
    if precision in _declared:
        return
    s = wp.float64 if precision == "64" else wp.float32
    V = wp.types.vector(3, s)
    Q = wp.types.quaternion(s)
    wp.overload(forward_kinematics, {
        "link_pos0": wp.array(dtype=V), "link_quat0": wp.array(dtype=Q),
        "joint_pos": wp.array(dtype=V), "joint_axis": wp.array(dtype=V),
        "joint_ref": wp.array(dtype=s),
        "root_pos": wp.array2d(dtype=V), "root_quat": wp.array2d(dtype=Q),
        "qpos_in": wp.array2d(dtype=s), "qvel_in": wp.array2d(dtype=s),
        "link_pos_out": wp.array2d(dtype=V), "link_quat_out": wp.array2d(dtype=Q),
        "link_vel_out": wp.array2d(dtype=V), "link_ang_out": wp.array2d(dtype=V)})
    wp.overload(integrate_qpos, {"h": s, "qvel_in": wp.array2d(dtype=s), "qpos": wp.array2d(dtype=s)})
    _declared.add(precision)
