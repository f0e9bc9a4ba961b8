"""Newton's block-sparse Hessian factor (kernels/linalg.cpp `la_blk_*`, `hess_factor_solve_native`): with M in
diagonal blocks (free bodies, trees) H = M + Σ D·JᵀJ is built and factored over its block pattern — M's blocks,
the blocks two quadratic rows' segments couple and the fill from eliminating in the given order. The factor's
entries inside the pattern must equal the envelope factor's bit for bit (the same sums less exact-zero terms;
np.array_equal: the sign of an exact zero may differ) and NumPy's Cholesky to rounding, NumPy's factor must be
zero outside the pattern (the pattern holds every nonzero), H outside the pattern must stay NaN (neither written
nor read: H and x are NaN-filled first), and the solution must equal the envelope path's and NumPy's. Env 2's M
is one dense block: the envelope path runs (nb 0)."""

from typing import Any

import numpy as np
import pytest
import warp as wp
from polyphys.plugins.rigid.codes import ConstraintType, EfcState
from polyphys.plugins.rigid.kernels import linalg as L

SIZES = (6, 6, 3, 6, 2)               # M's diagonal blocks (a 3- and a 2-dof tree among free bodies)
# each row's blocks (one segment over consecutive blocks, or two segments) and state
ROWS = [((0, 2), 1), ((0, 2), 1), ((0, 4), 1), ((1, 3), 1), ((1, 3), 0), ((2, 3), 1), ((3,), 1), ((1, 4), 0),
        ((0, 4), 1), ((2, 3), 1)]


@wp.kernel
def _factor(nrow: wp.array(dtype=wp.int32), nv: int, M: wp.array3d(dtype=Any), J: wp.array3d(dtype=Any),
            span: wp.array3d(dtype=wp.int32), seg: wp.array3d(dtype=wp.int32), tp: wp.array2d(dtype=wp.int32),
            dim: wp.array2d(dtype=wp.int32), st: wp.array2d(dtype=wp.int32), D: wp.array2d(dtype=Any),
            dof_parent: wp.array(dtype=wp.int32), sc: wp.array3d(dtype=Any), b: wp.array2d(dtype=Any),
            Hb: wp.array3d(dtype=Any), xb: wp.array2d(dtype=Any), nbb: wp.array(dtype=wp.int32),
            He: wp.array3d(dtype=Any), xe: wp.array2d(dtype=Any), nbe: wp.array(dtype=wp.int32)):
    env = wp.tid()
    L.spans_fill(env, nrow[env], nv, span, seg, J, M, sc, sc, 1, dof_parent, 0)
    L.hess_factor_solve(env, nv, nrow[env], M, J, tp, dim, st, D, sc, 1, 1, Hb, b, xb, nbb)
    L.hess_factor_solve(env, nv, nrow[env], M, J, tp, dim, st, D, sc, 1, 0, He, b, xe, nbe)


def _pattern(nb, rows, states):
    """The factor's block pattern (lower blocks, diagonal included) from the quadratic rows, with fill."""
    P = np.eye(nb, dtype=bool)
    for blocks, s in zip(rows, states):
        if s != int(EfcState.QUADRATIC):
            continue
        for a in blocks:
            for c in blocks:
                P[max(a, c), min(a, c)] = True
    for j in range(nb):
        for i in range(j + 1, nb):
            if np.any(P[i, :j] & P[j, :j]):
                P[i, j] = True
    return P


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_block_factor_equals_envelope_and_numpy(dtype):
    rng = np.random.default_rng(11)
    n, nb, nv, R = 3, len(SIZES), sum(SIZES), len(ROWS)
    bs = np.concatenate([[0], np.cumsum(SIZES)])
    M = np.zeros((n, nv, nv))
    for e in range(n):
        for k in range(nb):
            A = rng.normal(size=(SIZES[k], SIZES[k]))
            M[e, bs[k]:bs[k + 1], bs[k]:bs[k + 1]] = A @ A.T + SIZES[k] * np.eye(SIZES[k])
    M[:, 7, 6] = M[:, 6, 7] = 0.0                      # a zero inside a block (a tree's sibling dofs)
    A = rng.normal(size=(nv, nv))
    M[2] = A @ A.T + nv * np.eye(nv)                   # env 2: one dense block
    J = np.zeros((n, R, nv))
    for r, (blocks, _) in enumerate(ROWS):
        for k in blocks:
            J[:, r, bs[k]:bs[k + 1]] = rng.normal(size=(n, SIZES[k]))
    J[:, 0, bs[0] + 2] = 0.0                           # exact zeros inside a row's block
    J[:, 5, bs[2]:bs[2] + 2] = 0.0                     # a row starting late in its first block
    st = np.array([[s for _, s in ROWS]] * n, dtype=np.int32)
    st[1, 2] = int(EfcState.INACTIVE)                  # env 1: the (0, 4) coupling from row 8 only
    D = rng.uniform(0.5, 3.0, size=(n, R))
    b = rng.normal(size=(n, nv))
    nrow = np.array([R, R, R], dtype=np.int32)
    dev = "cpu"
    wt = wp.dtype_from_numpy(np.dtype(dtype))
    arr = lambda a: wp.array(np.asarray(a).astype(dtype), dtype=wt, device=dev)  # noqa: E731
    iarr = lambda a: wp.array(np.asarray(a, dtype=np.int32), dtype=wp.int32, device=dev)  # noqa: E731
    nanm = lambda: arr(np.full((n, nv, nv), np.nan))  # noqa: E731
    nanv = lambda: arr(np.full((n, nv), np.nan))  # noqa: E731
    Hb, He, xb, xe = nanm(), nanm(), nanv(), nanv()
    nbb, nbe = iarr(np.full(n, -7)), iarr(np.full(n, -7))
    span = iarr(np.tile(np.array([0, nv]), (n, R, 1)))
    seg = iarr(np.full((n, R, 4), -1))                 # no segments recorded: spans_fill scans each row
    tp = iarr(np.full((n, R), int(ConstraintType.CONTACT_PYRAMIDAL)))
    sc = arr(np.full((n, nv, nv), np.nan))
    wp.launch(_factor, dim=n, inputs=[iarr(nrow), nv, arr(M), arr(J), span, seg, tp, iarr(np.ones((n, R))), iarr(st),
                                      arr(D), iarr(np.full(nv, -1)), sc, arr(b), Hb, xb, nbb, He, xe, nbe], device=dev)
    Hb, He, xb, xe = Hb.numpy(), He.numpy(), xb.numpy(), xe.numpy()
    assert list(nbb.numpy()) == [nb, nb, 0] and list(nbe.numpy()) == [0, 0, 0]
    eps = np.finfo(dtype).eps
    Md, Jd, Dd, bd = (a.astype(dtype).astype(np.float64) for a in (M, J, D, b))
    low = np.tril(np.ones((nv, nv), dtype=bool))
    for e in range(n):
        q = st[e] == int(EfcState.QUADRATIC)
        Hd = Md[e] + (Jd[e, q].T * Dd[e, q]) @ Jd[e, q]
        Ld = np.linalg.cholesky(Hd)
        x = np.linalg.solve(Hd, bd[e])
        scale = np.abs(Hd).max()
        # the solution: the envelope path's (bit for bit up to the sign of a zero) and NumPy's to rounding
        assert np.array_equal(xb[e], xe[e])
        assert np.all(np.abs(xb[e] - x) <= 1e3 * nv * eps * np.abs(x).max())
        if e == 2:
            assert np.array_equal(np.where(low, Hb[e], 0.0), np.where(low, He[e], 0.0))
            continue
        P = _pattern(nb, [blk for blk, _ in ROWS], st[e])
        inside = low & P.repeat(SIZES, 0).repeat(SIZES, 1)
        # inside the pattern: the envelope factor's entries, NumPy's to rounding; outside: NaN (never written),
        # and NumPy's factor is zero there (the pattern holds every nonzero)
        assert np.array_equal(Hb[e][inside], He[e][inside])
        assert np.all(np.abs(Hb[e][inside] - Ld[inside]) <= 1e3 * nv * eps * np.sqrt(scale))
        assert np.all(np.isnan(Hb[e][~inside]))
        assert np.all(np.abs(Ld[low & ~inside]) <= 1e-12 * np.sqrt(scale))
        assert not P.all()                             # the case has zero blocks
        if e == 0:
            assert P[4, 2] and not any(set(blk) == {2, 4} for blk, _ in ROWS)   # fill (through block 0)


@pytest.mark.parametrize("cone,precision,islands", [("pyramidal", "64", False), ("elliptic", "64", False),
                                                    ("pyramidal", "32", False), ("pyramidal", "64", True)])
def test_solve_with_block_factor_equals_envelope(cone, precision, islands):
    """convex_solve.solve run alone from qacc_smooth with every output and the solver scratch NaN-filled (ints
    −7): Newton over the block pattern for every problem of 2 blocks or more (``blocks=2``) gives what the
    envelope factor gives (``blocks=0``) — qacc, forces, states, Jᵀf, iteration counts and statistics — byte for
    byte, on three boxes (a stack of two and one apart; 2 envs at different poses) without islands (one 18-dof
    problem of 3 blocks; both cones; float64 and float32) and with islands (the stack's 12-dof island of 2
    blocks, gathered); the solve iterated."""
    import warp as wp
    from polyphys.plugins.rigid import convex_solve
    from test_constraint_islands import BOX_A, BOX_B, _boxes
    stacked = dict(size=(0.2, 0.25, 0.15), pos=(0.7, -0.4, 0.75), euler=(0.0, 0.0, 12.0), rho=500.0)
    scene, ents = _boxes([BOX_A, BOX_B, stacked], islands=islands, n_envs=2, precision=precision, friction_cone=cone,
                         contact_resolution="convex")
    ents[2].set_dofs_velocity(np.array([[0.3, 0.0, 0.0, 0.0, 0.2, 0.0], [0.0, -0.4, 0.0, 0.5, 0.0, 0.1]]))
    for _ in range(60):
        scene.step()
    s = scene.solver("rigid")
    d, v = s.data, s.views["all"]
    warm = wp.clone(d.qacc_smooth)
    floats = ("qacc_warmstart", "efc_force", "qfrc_constraint", "solver_stat", "solver_jar", "solver_jv", "solver_grad",
              "solver_search", "solver_ma", "solver_mv", "solver_H", "solver_LM", "iM", "iefc_J", "iacc", "igrad", "ima",
              "iefc_force", "iefc_jar", "ifrc_constraint")
    outs = ("qacc_warmstart", "efc_force", "efc_state", "qfrc_constraint", "solver_niter", "island_niter", "solver_stat")
    got = {}
    for blocks in (2, 0):
        for k in floats:
            a = getattr(d, k)
            a.assign(np.full(a.shape, np.nan, a.numpy().dtype))
        for k in ("efc_state", "solver_niter", "island_niter", "iefc_span", "iefc_state"):
            a = getattr(d, k)
            a.assign(np.full(a.shape, -7, np.int32))
        # each env's dense M written by the solve, as in the step (d.qM is one block per View: model._qm_scratch)
        convex_solve.solve(v, warm, blocks=blocks, mass_hd=s._hd_solve)
        got[blocks] = {k: getattr(d, k).numpy().copy() for k in outs}
    for k in outs:
        assert got[2][k].tobytes() == got[0][k].tobytes(), k
    nefc = d.nefc.numpy()
    for e in range(2):
        assert np.isfinite(got[2]["qacc_warmstart"][e]).all()
        assert np.isfinite(got[2]["efc_force"][e, :nefc[e]]).all()
    assert (got[2]["solver_niter"] > 0).all()
    if islands:
        assert (d.nisland.numpy() == 2).all()
