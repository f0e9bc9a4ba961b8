"""Convex solve stage (docs/semantics.md §R8; MuJoCo's mj_solNewton / mj_solCG): minimizes the regularized convex
primal cost over the rows with Newton or CG, warm-started. Kernel: kernels/convex_solve.py."""

from __future__ import annotations

import warp as wp

from .kernels import convex_solve as K
from .model import View


def solve(v: View, qacc_warm) -> None:
    """Solution into d.qacc_warmstart (the next warm start), forces into d.efc_force, Jᵀf into
    d.qfrc_constraint. qacc_warm: (n, nv) start (d.qacc_warmstart itself, or d.qacc_smooth for a
    cold start)."""
    wp.launch(K.solve_convex, dim=v.n, inputs=[v.m, v.d, qacc_warm], device=v.device)
