"""Factorization stage (MuJoCo's mj_factorM/mj_factorI + mj_solveM/mj_solveLD): the LᵀDL factor of
M + hd·D along the dof tree and qacc = (M + hd·D)⁻¹·qfrc; the dense M + hd·D of the constraint
solve. hd = 0 (M itself) or the substep h (the integrator's implicit damping). Kernels:
kernels/factorization.py."""

from __future__ import annotations

import warp as wp

from .kernels import factorization as K
from .model import View


def factor_solve(v: View, hd: float, qfrc, qacc_out) -> None:
    """d.qld = LᵀDL(M + hd·D); qacc_out = (M + hd·D)⁻¹·qfrc (qfrc, qacc_out: (n, nv) of this view)."""
    wp.launch(K.factor_solve, dim=v.n, inputs=[v.m, v.d, v.scalar(hd), qfrc, qacc_out],
              device=v.device)


def mass_dense(v: View, hd: float) -> None:
    """d.qM = M + hd·D (dense, for the constraint solve). Only M's tree pattern is written; the entries off it
    are zero since d.qM was allocated (no other stage writes d.qM; docs/rigid.md)."""
    wp.launch(K.mass_dense, dim=v.n, inputs=[v.m, v.d, v.scalar(hd)], device=v.device)


def crb_factor_solve(v: View, hd: float, qfrc, qacc_out, dense: bool, prefetch: bool = True) -> None:
    """inertia.crb, then factor_solve(v, hd, qfrc, qacc_out) and (``dense``) mass_dense(v, hd), in one
    launch with the same numbers (one pass over each env's M while it is in cache). ``prefetch``: on CPU,
    prefetch the next env's inputs and outputs while an env is computed (no effect on the numbers)."""
    wp.launch(K.crb_factor_solve, dim=v.n, inputs=[v.m, v.d, v.scalar(hd), int(dense), int(prefetch), qfrc, qacc_out],
              device=v.device)
