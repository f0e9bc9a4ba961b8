"""Noslip stage (docs/semantics.md §R8; MuJoCo's mj_solNoSlip): after the main solve, projected Gauss-Seidel sweeps
on the frictionloss rows and pyramidal edge pairs of the unregularized problem; rewrites
d.efc_force, d.qacc_warmstart and d.qfrc_constraint. Kernel: kernels/noslip.py."""

from __future__ import annotations

import warp as wp

from .kernels import noslip as K
from .model import View


def noslip(v: View) -> None:
    wp.launch(K.noslip, dim=v.n, inputs=[v.m, v.d], device=v.device)
