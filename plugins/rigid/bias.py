"""Bias stage (MuJoCo's mj_rne at qacc = 0): Coriolis, centrifugal and gravity forces, and the
generalized external forces (gravity compensation, link wrenches, a coupler's reaction). Kernels:
kernels/bias.py."""

from __future__ import annotations

import warp as wp

from .kernels import bias as K
from .model import View


def rne(v: View) -> None:
    wp.launch(K.rne, dim=v.n, inputs=[v.m, v.d], device=v.device)
