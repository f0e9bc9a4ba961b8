"""Signorini solve stage (docs/semantics.md §R8, the default for elliptic + Newton outside MuJoCo-compatible mode):
Newton on elliptic contact rows with the normal load latched per iteration and saturated friction
blocks. Kernel: kernels/signorini_solve.py."""

from __future__ import annotations

import warp as wp

from .kernels import signorini_solve as K
from .model import View


def solve(v: View, qacc_warm, pool: bool = False) -> None:
    """As convex_solve.solve (solution in d.qacc_warmstart, d.efc_force, d.qfrc_constraint; ``pool``: the rows
    were built into the row pool, no padding rows)."""
    wp.launch(K.solve_signorini, dim=v.n, inputs=[v.m, v.d, qacc_warm, int(pool)], device=v.device)
