"""Actuation stage kernels: passive, actuator and control forces, qfrc_smooth and the integrator's
velocity derivative D (MuJoCo's mj_passive + mj_fwdActuation + mjd_*_vel). One thread per env;
native loop in kernels/actuation.cpp (why: kernels/native.py).

Reads ``m``: dof/joint/actuator constants, dof_damping/stiffness/kp/kv/force range, opt.integrator;
``d``: qpos, qvel, ctrl, dof_mode, dof targets, qfrc_applied, qfrc_bias, qfrc_ext (after the bias stage).
Writes ``d``: qfrc_passive, qfrc_actuator, qfrc_control, qfrc_smooth, dof_dv, act_force.
"""

from typing import Any

import warp as wp

from ..types import overload
from . import native

wp.set_module_options({"enable_backward": False, "optimization_level": 3})

I1 = wp.array(dtype=wp.int32)
I2 = wp.array2d(dtype=wp.int32)
A1 = wp.array(dtype=Any)
A2 = wp.array2d(dtype=Any)


@wp.func_native(native.body(__file__, "actuation_native"))
def actuation_native(env: int, n: int, na: int, integrator: int, dof_joint: I1, joint_type: I1, joint_q_start: I1,
                     joint_ref: A1, joint_springref: A1, act_dof: I1, act_qadr: I1, act_gear: A1, act_gain: A1,
                     act_bias: A1, act_ctrl_lo: A1, act_ctrl_hi: A1, act_force_lo: A1, act_force_hi: A1,
                     dof_damping: A2, dof_stiffness: A2, dof_kp: A2, dof_kv: A2, dof_force_lo: A2, dof_force_hi: A2,
                     ctrl: A2, dof_mode: I2, dof_target_pos: A2, dof_target_vel: A2, dof_target_force: A2,
                     qfrc_applied: A2, qpos: A2, qvel: A2, qfrc_bias: A2, qfrc_ext: A2, qfrc_passive: A2,
                     qfrc_actuator: A2, qfrc_control: A2, qfrc_smooth: A2, dof_dv: A2, act_force: A2): ...


@wp.func
def actuation_env(m: Any, d: Any, env: int):
    """The stage for one env: run by ``actuation`` and by factorization's fused ``smooth``."""
    actuation_native(env, m.nv, m.na, m.opt.integrator, m.dof_joint, m.joint_type, m.joint_q_start, m.joint_ref,
                     m.joint_springref, m.act_dof, m.act_qadr, m.act_gear, m.act_gain, m.act_bias, m.act_ctrl_lo,
                     m.act_ctrl_hi, m.act_force_lo, m.act_force_hi, m.dof_damping, m.dof_stiffness, m.dof_kp,
                     m.dof_kv, m.dof_force_lo, m.dof_force_hi, d.ctrl, d.dof_mode, d.dof_target_pos,
                     d.dof_target_vel, d.dof_target_force, d.qfrc_applied, d.qpos, d.qvel, d.qfrc_bias, d.qfrc_ext,
                     d.qfrc_passive, d.qfrc_actuator, d.qfrc_control, d.qfrc_smooth, d.dof_dv, d.act_force)


@wp.kernel
def actuation(m: Any, d: Any):
    actuation_env(m, d, wp.tid())


overload(actuation)
