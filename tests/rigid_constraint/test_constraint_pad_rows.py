"""The convex solve's padding rows (kernels/convex_solve.cpp `pad_rows_native`): the rows past an env's count read
as zero force and inactive. On CPU they are written with non-temporal stores over the whole cache lines of the
unused row budget (plain stores up to the first line boundary; ``convex_solve.solve(pad_mark=False, pad_nt=True)``);
by default (``pad_mark=True``) only the rows from the count up to d.efc_pad (the padding already holds past it; a
writer of the rows past the count other than the solve sets it to the budget, as here), then efc_pad = the count.

MuJoCo's articulated scene (mjscenes.py) at a frozen state, 3 envs with a row budget whose per-env stride is
not a multiple of the 64-byte line (so each env's tail starts at another offset inside a line); efc_force and
efc_state NaN- / garbage-filled first, then the solve: with either store kind every padding row must be +0
(all bytes zero) and inactive, and every output byte for byte the same."""

import numpy as np
import pytest

pytest.importorskip("mujoco")

import mjscenes as S  # noqa: E402


def _solve(st, M, qs, pad_nt, pad_mark=False):
    import warp as wp
    from polyphys.plugins.rigid import convex_solve

    d = st.v.d
    wp.copy(d.qM, M)
    wp.copy(d.qacc_smooth, qs)
    d.efc_force.fill_(np.nan)
    d.efc_state.fill_(7)
    d.efc_pad.fill_(d.efc_force.shape[1])         # every row past the count written here: all of them to pad
    d.qfrc_constraint.fill_(np.nan)
    wp.copy(d.qacc_warmstart, qs)
    convex_solve.solve(st._view(None), d.qacc_warmstart, pad_nt=pad_nt, pad_mark=pad_mark)
    return {k: getattr(d, k).numpy().copy() for k in ("qacc_warmstart", "efc_force", "efc_state", "qfrc_constraint",
                                                       "solver_niter", "efc_pad")}


@pytest.mark.parametrize("precision", ["64", "32"])
@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_padding_rows_zero_and_inactive(precision, cone):
    import mujoco
    import warp as wp

    m, d = S.make(cone=cone, impratio=1.0, condim=3)
    n_envs, budget = 3, 83                      # 83 rows: the env stride is no multiple of 64 bytes
    st, tree = S.stage_for(m, d, max_rows=budget, precision=precision, n_envs=n_envs, tolerance=1e-10, iterations=50)
    S.build(st, tree)
    nrow = st.n_efc.numpy()
    assert (nrow == d.nefc).all() and 0 < d.nefc < budget
    force = st.v.d.efc_force
    assert force.shape[1] == budget
    # each env's padding starts at a different offset inside a cache line
    starts = {(force.ptr + e * force.strides[0] + int(nrow[e]) * force.strides[1]) % 64 for e in range(n_envs)}
    assert len(starts) == n_envs
    M = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M)
    s = st.scalar
    M = wp.array(np.repeat(M[None], n_envs, axis=0), dtype=s)
    qs = wp.array(np.repeat(np.asarray(d.qacc_smooth)[None], n_envs, axis=0), dtype=s)
    ref = _solve(st, M, qs, False)
    for got in (_solve(st, M, qs, True), _solve(st, M, qs, False, pad_mark=True)):
        for e in range(n_envs):
            n = int(nrow[e])
            assert not got["efc_force"][e, n:].view(np.uint8).any()        # +0.0: every byte zero
            assert (got["efc_state"][e, n:] == 0).all()                     # EfcState.INACTIVE
            assert np.isfinite(got["efc_force"][e, :n]).all() and (got["efc_state"][e, :n] != 7).all()
        for k in ref:
            assert got[k].tobytes() == ref[k].tobytes(), k
        assert (got["efc_pad"] == nrow).all()          # every mode leaves the padding from the count on
        assert np.abs(got["efc_force"]).max() > 0
    # the mark: past it the rows are left alone (the padding is there), below it padded
    d = st.v.d
    keep = nrow.min() + 1
    mark = np.full(n_envs, keep, np.int32)
    wp.copy(d.qM, M)
    wp.copy(d.qacc_smooth, qs)
    d.efc_force.fill_(np.nan)
    d.efc_state.fill_(7)
    d.efc_pad.assign(np.maximum(mark, nrow))
    wp.copy(d.qacc_warmstart, qs)
    from polyphys.plugins.rigid import convex_solve

    convex_solve.solve(st._view(None), d.qacc_warmstart, pad_mark=True)
    f, stt = d.efc_force.numpy(), d.efc_state.numpy()
    for e in range(n_envs):
        n, hi = int(nrow[e]), int(max(keep, nrow[e]))
        assert not f[e, n:hi].view(np.uint8).any() and (stt[e, n:hi] == 0).all()
        assert np.isnan(f[e, hi:]).all() and (stt[e, hi:] == 7).all()
