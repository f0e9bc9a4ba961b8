"""Readback stage kernel: MuJoCo's ``mj_rnePostConstraint`` after the solve — link accelerations,
the external wrenches ``cfrc_ext`` and the interaction wrenches ``cfrc_int`` from the solved
acceleration and the constraint forces — and a snapshot of the joint quantities of the same state.
One thread per env walks its links (tree passes); native loop in kernels/readback.cpp (why:
kernels/native.py; in Warp code this stage cost a quarter of the whole smooth dynamics of a humanoid
at 1024 envs).

Reads ``m``: link_parent, link_root, link_dof_adr, eq_type/eq_obj/eq_data, opt.gravity; ``d``: qpos,
qvel, qfrc_actuator, qfrc_constraint, act_force, the kinematics outputs (cdof, cdofdot, cvel,
cinert, link_pos/quat/xipos/ang/com_vel), xfrc_force/torque, coupling_force/torque,
link_contact_force/torque (stage contact_forces), nefc, efc_type, efc_id, efc_force, and the
solve's acceleration ``qacc_in``. Writes ``d``: snap_qpos, snap_qvel, snap_qacc, snap_qfrc_actuator,
snap_qfrc_constraint, snap_act_force, link_acc_ang, link_acc, cfrc_int_force/torque,
cfrc_ext_force/torque (per link, world frame, torques about the link CoM, CoM accelerations without
gravity: the ``RigidSensorData`` conventions of core/views.py). tests/sensors/test_readback.py runs
the stage alone against MuJoCo's mj_rnePostConstraint.
"""

from typing import Any

import warp as wp

from ..types import overload
from . import native
from .row_pool import pool_rows2

wp.set_module_options({"enable_backward": False, "optimization_level": 3})

I1 = wp.array(dtype=wp.int32)
I2 = wp.array2d(dtype=wp.int32)
A2 = wp.array2d(dtype=Any)


@wp.func_native(native.body(__file__, "rne_post_constraint_native"))
def rne_post_constraint_native(env: int, gravity: Any, link_parent: I1, link_root: I1, link_dof_adr: I1, eq_type: I1,
                               eq_obj: I2, eq_data: A2, neq: int, n_dofs: int, n_act: int, qpos_in: A2, qvel_in: A2,
                               qacc_in: A2, qfrc_actuator_in: A2, qfrc_constraint_in: A2, act_force_in: A2,
                               cdof_w: A2, cdof_v: A2, cdofdot_w: A2, cdofdot_v: A2, cvel_w: A2, cvel_v: A2,
                               cinert_m: A2, cinert_mc: A2, cinert_i: A2, link_pos: A2, link_quat: A2, link_com: A2,
                               link_ang: A2, link_vel: A2, xfrc_force_in: A2, xfrc_torque_in: A2,
                               coupling_force_in: A2, coupling_torque_in: A2, contact_force_in: A2,
                               contact_torque_in: A2, n_efc: I1, efc_type: I2, efc_id: I2, efc_force: A2,
                               qpos_out: A2, qvel_out: A2, qacc_out: A2, qfrc_actuator_out: A2,
                               qfrc_constraint_out: A2, act_force_out: A2, acc_ang_out: A2, acc_out: A2,
                               int_force_out: A2, int_torque_out: A2, ext_force_out: A2, ext_torque_out: A2): ...


@wp.kernel
def rne_post_constraint(m: Any, d: Any, qacc_in: wp.array2d(dtype=Any)):
    env = wp.tid()
    off = d.efc_off[env]      # the env's rows at its address in the row pool (kernels/row_pool.py)
    rne_post_constraint_native(
        env, m.opt.gravity, m.link_parent, m.link_root, m.link_dof_adr, m.eq_type, m.eq_obj, m.eq_data, m.neq, m.nv,
        m.na, d.qpos, d.qvel, qacc_in, d.qfrc_actuator, d.qfrc_constraint, d.act_force, d.cdof_w, d.cdof_v,
        d.cdofdot_w, d.cdofdot_v, d.cvel_w, d.cvel_v, d.cinert_m, d.cinert_mc, d.cinert_i, d.link_pos, d.link_quat,
        d.link_xipos, d.link_ang, d.link_com_vel, d.xfrc_force, d.xfrc_torque, d.coupling_force, d.coupling_torque,
        d.link_contact_force, d.link_contact_torque, d.nefc, pool_rows2(d.efc_type, off), pool_rows2(d.efc_id, off),
        pool_rows2(d.efc_force, off), d.snap_qpos,
        d.snap_qvel, d.snap_qacc, d.snap_qfrc_actuator, d.snap_qfrc_constraint, d.snap_act_force, d.link_acc_ang,
        d.link_acc, d.cfrc_int_force, d.cfrc_int_torque, d.cfrc_ext_force, d.cfrc_ext_torque)


overload(rne_post_constraint, qacc_in=lambda s: wp.array2d(dtype=s))
