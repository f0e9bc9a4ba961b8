"""Passive and actuation stage (MuJoCo's mj_passive + mj_fwdActuation): joint damping and springs,
MJCF actuators, per-dof PD / velocity / force control, qfrc_smooth, and the velocity derivative D
the integrators use (docs/semantics.md §R2). Kernels: kernels/actuation.py."""

from __future__ import annotations

import warp as wp

from .kernels import actuation as K
from .model import View


def actuation(v: View) -> None:
    wp.launch(K.actuation, dim=v.n, inputs=[v.m, v.d], device=v.device)
