"""Inertia stage (MuJoCo's mj_crb): composite inertias and the tree-sparse mass matrix with armature.
Kernels: kernels/inertia.py."""

from __future__ import annotations

import warp as wp

from .kernels import inertia as K
from .model import View


def crb(v: View, general: bool = False) -> None:
    """d.crb_* and d.mass at the kinematics stage's cdof and cinert. A free joint on a root link takes its 6×6
    block in closed form (kernels/inertia.cpp, the same values as the general loop; docs/rigid.md, "Inertia");
    ``general``: every dof through the general loop (the reference of that path's test)."""
    wp.launch(K.crb, dim=v.n, inputs=[v.m, v.d, int(general)], device=v.device)
