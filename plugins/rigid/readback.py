"""Readback stage (MuJoCo's mj_rnePostConstraint, docs/sensors.md): after a solve, the link
accelerations, the external wrenches ``cfrc_ext`` and the interaction wrenches ``cfrc_int``, and a
snapshot (``snap_*``) of the joint quantities of the solve's state. solver.py runs it on the last
substep of a step, after the solve and the contact forces and before the integration, only once a
sensor or a readback getter asked (sensor_view.py); forward()'s constraint query runs it too.
Kernel: kernels/readback.py."""

from __future__ import annotations

import warp as wp

from .kernels import readback as K
from .model import View

# the Data fields the stage writes (a stage test fills them with NaN first)
OUTPUTS = ("snap_qpos", "snap_qvel", "snap_qacc", "snap_qfrc_actuator", "snap_qfrc_constraint", "snap_act_force",
           "link_acc_ang", "link_acc", "cfrc_int_force", "cfrc_int_torque", "cfrc_ext_force", "cfrc_ext_torque")


def rne_post_constraint(v: View, qacc) -> None:
    """The stage on the view's envs at the state of its last smooth dynamics; ``qacc`` (n, nv) of
    this view: the solve's acceleration (d.qacc_warmstart after a constraint solve, or
    M⁻¹·qfrc_smooth without one: MuJoCo's qacc; the integrator's implicit-damping correction is not
    in it, except that approximate_implicitfast's constraint solve itself uses M + h·D)."""
    wp.launch(K.rne_post_constraint, dim=v.n, inputs=[v.m, v.d, qacc], device=v.device)
