"""Convex solve stage (docs/semantics.md §R8; MuJoCo's mj_island + mj_solNewton / mj_solCG): minimizes the
regularized convex primal cost over the rows with Newton or CG, warm-started; with ``m.opt.islands`` the
rows and dofs are first labelled by constraint island and each island is solved as its own problem (its
own Hessian, line search and stopping test). Kernels: kernels/convex_solve.py."""

from __future__ import annotations

import warp as wp

from .kernels import convex_solve as K
from .model import View


def label_islands(v: View, prefetch: int = 2) -> None:
    """Constraint islands of the rows built this substep into d.nisland, d.dof_island, d.efc_island and
    the island lists (kernels/convex_solve.py ``label_islands``). ``prefetch``: on CPU, prefetch the next
    env's rows and outputs while an env is labelled (no effect on the numbers): 0 nothing, 1 into L1, 2 into
    L2 only (benchmarks/results/constraint.md, Round 11). An env whose rows' (type, id) and contacts' links
    equal those of its last relabelling keeps its labels (d.island_key_*; the same numbers by construction).
    """
    wp.launch(K.label_islands, dim=v.n, inputs=[v.m, v.d, int(prefetch)], device=v.device)


def invalidate_labels(d) -> None:
    """Forget the inputs of the last relabelling (d.island_key_nefc = −1), so the next label_islands
    relabels every env: a state write (reset, set_state, checkpoint restore) and forward() call it
    (through RigidSolver.forward). A device fill, no host sync."""
    d.island_key_nefc.fill_(-1)


def solve(v: View, qacc_warm, prefetch: int = 2, inplace: bool = True, pad_nt: bool = True, fixed6: bool = True,
          blocks: int = 48, mass_hd: float | None = None, pad_mark: bool = True, pool: bool = False,
          incremental: bool = False) -> None:
    """Solution into d.qacc_warmstart (the next warm start), forces into d.efc_force, Jᵀf into
    d.qfrc_constraint. qacc_warm: (n, nv) start (d.qacc_warmstart itself, or d.qacc_smooth for a
    cold start). ``prefetch``: on CPU, prefetch the next env's rows and M while an env is solved (no
    effect on the numbers; 0 nothing, 1 into L1, 2 into L2 only; the labelling gets the same mode). Labels
    the islands first when m.opt.islands is 1. ``inplace``: Newton solves an island whose dofs and rows are
    each one contiguous block in place, over the env's arrays, instead of gathering it into the island arrays
    (no effect on the numbers; False: always gather). ``pad_nt``: on CPU, the rows past the env's count (zero
    force, inactive) are written with non-temporal stores, whole cache lines of the unused row budget bypassing
    the cache (no effect on the numbers; benchmarks/results/constraint.md, Round 14). ``pad_mark`` (the default;
    then ``pad_nt`` is not used): only the rows from the count up to d.efc_pad, the rows previous solves wrote past
    it (the rest already hold the padding), then d.efc_pad = the count (no effect on the numbers; Round 15).
    ``pool``: the rows were built into the row pool (constraint_rows.make_rows(pool=True)): the rows past an env's
    count are the next env's, so no padding is written (``pad_mark`` and ``pad_nt`` not used); d.efc_pad = the count.
    ``fixed6``: a 6-dof island
    solved in place (a free body's) runs its Newton iterations from a copy of the loop compiled for nv = 6 (the
    same operations in the same order: no effect on the numbers; Round 14b). ``blocks``: a Newton problem whose
    M splits into at least ``blocks`` diagonal blocks (free bodies, kinematic trees; at most 64, at most 1024
    dofs) builds and factors its Hessian over the block pattern, the envelope factor's sums less the terms of
    zero blocks (no effect on the numbers but the sign of an exact zero; kernels/linalg.cpp la_blk_*); 0: never.
    48 (the default): the pile of 50 boxes without islands (one 300-dof problem of 50 blocks, from the dof tree)
    takes it; its islands do not — their blocks come from the gathered M's scanned row spans, where a free box
    with a diagonal M splits into 4 blocks (its 3 translations and its rotation block): 32 for the 8-box island,
    which the block path solved slower than the envelope factor (16, the default until Round 17: −6 µs per env
    on the pile's solve with 48, outputs byte-equal; benchmarks/results/constraint.md, Rounds 15 (pile) and 17);
    the boxes and the humanoid do not either. ``incremental`` (Newton, not the default): after an island's
    (or env's) first iteration, the rows whose state entered or left the quadratic zone update / downdate the
    last Cholesky factor by rank-1 steps (MuJoCo's incremental Hessian) instead of a new H and factor — only on
    the envelope path (not the block pattern), without elliptic rows, up to 256 dofs and rows, while at most
    nv/4 rows changed (else, or when a downdate fails, a new factor): not the same numbers (rounding).
    ``mass_hd`` (not None): the solve first writes d.qM = M + mass_hd·D of each env from d.mass and d.dof_dv
    (factorization.mass_dense's body: the same entries; only M's tree pattern, the entries off it stay zero from
    allocation), right before it reads it (the solver's substep: its smooth pass then writes no dense M; Round 15).
    The CPU prefetch of the next env's M covers its lines tree by tree (its rows over their tree's columns;
    ``prefetch`` + 4: the whole rows, as before Round 15, kept for the A/B of benchmarks/probe_smooth.py
    ``--dense-ab``), and with ``mass_hd`` its
    tree-sparse M and D."""
    if int(v.m.opt.islands):
        label_islands(v, prefetch & 3)
    pad = 3 if pool else 2 if pad_mark else int(pad_nt)
    wp.launch(K.solve_convex, dim=v.n, inputs=[v.m, v.d, qacc_warm, int(prefetch), int(inplace), pad,
                                               int(fixed6), int(blocks), int(mass_hd is not None),
                                               v.scalar(0.0 if mass_hd is None else mass_hd), int(incremental)],
               device=v.device)
