"""Kinematics stage (MuJoCo's mj_kinematics + mj_comPos + mj_comVel): link frames, CoMs, spatial
inertias, joint motion subspaces cdof and velocities about each tree's reference point. Kernels:
kernels/kinematics.py (what each reads and writes)."""

from __future__ import annotations

import warp as wp

from .kernels import kinematics as K
from .model import View


def kinematics(v: View) -> None:
    wp.launch(K.kinematics, dim=v.n, inputs=[v.m, v.d], device=v.device)
