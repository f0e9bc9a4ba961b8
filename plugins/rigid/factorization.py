"""Factorization stage (MuJoCo's mj_factorM/mj_factorI + mj_solveM/mj_solveLD): the LᵀDL factor of
M + hd·D along the dof tree and qacc = (M + hd·D)⁻¹·qfrc; the dense M + hd·D of the constraint
solve. hd = 0 (M itself) or the substep h (the integrator's implicit damping). Kernels:
kernels/factorization.py."""

from __future__ import annotations

import warp as wp
from polyphys.errors import OptionError

from .kernels import factorization as K
from .model import View


def factor_solve(v: View, hd: float, qfrc, qacc_out) -> None:
    """d.qld = LᵀDL(M + hd·D); qacc_out = (M + hd·D)⁻¹·qfrc (qfrc, qacc_out: (n, nv) of this view)."""
    wp.launch(K.factor_solve, dim=v.n, inputs=[v.m, v.d, v.scalar(hd), qfrc, qacc_out],
              device=v.device)


def mass_dense(v: View, hd: float) -> None:
    """d.qM = M + hd·D (dense, for the constraint solve). Only M's tree pattern is written; the entries off it
    are zero since d.qM was allocated (nothing writes them: this body is also the one the convex solve runs
    with ``mass_hd`` and the smooth pass's with ``dense``; docs/rigid.md)."""
    wp.launch(K.mass_dense, dim=v.n, inputs=[v.m, v.d, v.scalar(hd)], device=v.device)


def crb_factor_solve(v: View, hd: float, qfrc, qacc_out, dense: bool, hd_int: float | None = None,
                     prefetch: int = 2) -> None:
    """inertia.crb, then factor_solve(v, hd, qfrc, qacc_out), (``hd_int`` not None) the LᵀDL factor of
    M + hd_int·D into d.qld_int for ``ld_solve``, and (``dense``) mass_dense(v, hd), in one launch with the
    same numbers (one pass over each env's M while it is in cache; where M + hd_int·D is bit for bit M + hd·D —
    hd_int == hd, or D = 0 on the env's every dof — the second factor is the first's, copied). ``prefetch``: on
    CPU, prefetch the next env's inputs and outputs while an env is computed (no effect on the numbers): 0
    nothing, 1 into L1 (prefetcht0 / prefetchw), 2 into L2 only (prefetcht1; the default)."""
    if hd_int is not None and not hd_int >= 0.0:
        raise OptionError(f"factorization.crb_factor_solve: hd_int={hd_int}; allowed: a step >= 0, or None for no second factor")
    wp.launch(K.crb_factor_solve, dim=v.n,
              inputs=[v.m, v.d, v.scalar(hd), v.scalar(-1.0 if hd_int is None else hd_int), int(dense), int(prefetch),
                      qfrc, qacc_out], device=v.device)


def smooth(v: View, hd: float, qfrc, qacc_out, dense: bool, hd_int: float | None = None, prefetch: int = 2) -> None:
    """kinematics.kinematics(v), bias.rne(v), actuation.actuation(v) and crb_factor_solve(v, hd, qfrc, qacc_out,
    dense, hd_int, prefetch) in one launch (each stage's per-env function, so the same numbers; one launch
    instead of four: benchmarks/results/constraint.md, Round 13). The solver's smooth pass."""
    if hd_int is not None and not hd_int >= 0.0:
        raise OptionError(f"factorization.smooth: hd_int={hd_int}; allowed: a step >= 0, or None for no second factor")
    wp.launch(K.smooth, dim=v.n,
              inputs=[v.m, v.d, v.scalar(hd), v.scalar(-1.0 if hd_int is None else hd_int), int(dense), int(prefetch),
                      qfrc, qacc_out], device=v.device)


def ld_solve(v: View, qfrc, qacc_out, prefetch: int = 1) -> None:
    """qacc_out = (M + hd_int·D)⁻¹·qfrc from the factor d.qld_int that crb_factor_solve(..., hd_int=...) wrote
    this substep (the same numbers as factor_solve(v, hd_int, qfrc, qacc_out) on the same M). ``prefetch``: on
    CPU, prefetch the next env's factor, force and result (no effect on the numbers): 0 nothing, 1 into L1
    (the default: an env's pass is small, and L2 measured no faster; benchmarks/results/constraint.md,
    Round 11), 2 into L2 only."""
    wp.launch(K.ld_solve, dim=v.n, inputs=[v.m, v.d, int(prefetch), qfrc, qacc_out], device=v.device)
