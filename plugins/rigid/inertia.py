"""Inertia stage (MuJoCo's mj_crb): composite inertias and the tree-sparse mass matrix with armature.
Kernels: kernels/inertia.py."""

from __future__ import annotations

import warp as wp

from .kernels import inertia as K
from .model import View


def crb(v: View) -> None:
    wp.launch(K.crb, dim=v.n, inputs=[v.m, v.d], device=v.device)
