"""The row segments make_rows records while it writes each row (efc_seg; kernels/constraint_rows.cpp, the
part `jseg` of kernels/linalg.cpp) and the convex solve reads instead of scanning J.

On MuJoCo's articulated scene at a frozen state (mjscenes.py: a tilted box and a ball on the plane, a limited
arm touching it, frictionloss, a ball limit, connect / weld / joint equalities; every row type), efc_seg is
filled with garbage first; after the build each row's recorded (lo, g0, g1, hi) must equal a NumPy scan of its
J inside its recorded span: the first and last nonzero and the longest inner run of exact zeros. The contact
normals there are the plane's (0, 0, 1), so a free body's x and y translation columns hold exact zeros
inside the contact's dof chain: the chains alone would give other bounds; the scan's are the ones that keep
the solve's products bit for bit, and the test checks such rows occur. Then the solve (Newton and CG, islands
on and off) from the recorded segments must give, byte for byte, what it gives scanning J (segments marked
unrecorded)."""

import numpy as np
import pytest

pytest.importorskip("mujoco")

import mjscenes as S  # noqa: E402


def scan_segments(J, span, nrow, nv):
    """(nrow, 4): lo, g0, g1, hi of each row inside its span [span0, span1) (clipped to [0, nv)): the first
    and last nonzero and the longest inner run of zeros (the first of equal ones); all-zero row: all four
    the clipped span's end."""
    out = np.zeros((nrow, 4), np.int64)
    for r in range(nrow):
        lo, hi = max(int(span[r, 0]), 0), min(int(span[r, 1]), nv)
        hi = max(hi, lo)
        nz = [k for k in range(lo, hi) if J[r, k] != 0]
        if not nz:
            out[r] = hi
            continue
        g0 = g1 = nz[-1] + 1
        best = 0
        for a, b in zip(nz, nz[1:]):
            if b - a - 1 > best:
                best, g0, g1 = b - a - 1, a + 1, b
        out[r] = (nz[0], g0, g1, nz[-1] + 1)
    return out


CASES = [("pyramidal", 3), ("elliptic", 3), ("elliptic", 6), ("pyramidal", 1)]


@pytest.mark.parametrize("cone,condim", CASES)
def test_recorded_segments_equal_the_scan(cone, condim):
    m, d = S.make(cone=cone, impratio=1.0, condim=condim)
    st, tree = S.stage_for(m, d, n_envs=2)
    assert d.ncon >= 3
    st.v.d.efc_seg.fill_(1 << 30)
    S.build(st, tree)
    n = int(st.n_efc.numpy()[0])
    assert n == d.nefc
    J, span, seg = st.efc_J.numpy(), st.v.d.efc_span.numpy(), st.v.d.efc_seg.numpy()
    for e in range(2):
        ref = scan_segments(J[e], span[e], n, m.nv)
        np.testing.assert_array_equal(seg[e, :n], ref)
    # rows whose dof chains hold an exact zero at their start (a free body's x / y translation under a
    # normal along z): the recorded lo lies past the span's first column there
    from polyphys.plugins.rigid.codes import ConstraintType as C

    types = st.efc_type.numpy()[0, :n]
    contact = np.isin(types, [C.CONTACT_FRICTIONLESS, C.CONTACT_PYRAMIDAL, C.CONTACT_ELLIPTIC])
    assert contact.any()
    assert (seg[0, :n, 0] > span[0, :n, 0])[contact].any()


def _solve_outputs(st, tree, M, qs, segs, solver, islands):
    import warp as wp
    from polyphys.plugins.rigid import constraint_rows

    st.opt.solver, st.opt.islands = solver, islands
    S.build(st, tree)
    if not segs:
        constraint_rows.make_rows(st._view(None), segs=False)
        assert (st.v.d.efc_seg.numpy()[:, :int(st.n_efc.numpy()[0]), 0] == -1).all()
    st.qacc.fill_(np.nan)
    st.efc_force.fill_(np.nan)
    st.qfrc_constraint.fill_(np.nan)
    s = st.scalar
    st.solve(wp.array(M, dtype=s), wp.array(qs, dtype=s), wp.array(qs, dtype=s))
    return [getattr(st, k).numpy().tobytes() for k in ("qacc", "efc_force", "qfrc_constraint", "efc_state",
                                                       "solver_niter")]


@pytest.mark.parametrize("solver", ["Newton", "CG"])
@pytest.mark.parametrize("islands", [False, True])
def test_solve_from_segments_equals_scanning(solver, islands):
    import mujoco
    import warp as wp

    m, d = S.make(cone="pyramidal", impratio=1.0, condim=3)
    st, tree = S.stage_for(m, d, n_envs=2, tolerance=1e-10, iterations=50)
    M = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M)
    M = np.repeat(M[None], 2, axis=0)
    qs = np.repeat(np.asarray(d.qacc_smooth)[None], 2, axis=0)
    got = _solve_outputs(st, tree, M, qs, True, solver, islands)
    ref = _solve_outputs(st, tree, M, qs, False, solver, islands)
    assert got == ref
    # the solve does read the recorded segments: with every row's recorded as empty its forces differ
    st.opt.solver, st.opt.islands = solver, islands
    S.build(st, tree)
    n = int(st.n_efc.numpy()[0])
    sg = st.v.d.efc_seg.numpy()
    sg[:, :n] = 0
    st.v.d.efc_seg.assign(sg)
    s = st.scalar
    st.solve(wp.array(M, dtype=s), wp.array(qs, dtype=s), wp.array(qs, dtype=s))
    assert st.efc_force.numpy().tobytes() != ref[1]
    assert np.isfinite(st.qacc.numpy()).all()
    if islands:
        assert int(st.v.d.nisland.numpy()[0]) >= 2


ROW_OUTPUTS = ("efc_J", "efc_span", "efc_chain", "efc_seg", "efc_type", "efc_id", "efc_dim", "efc_pos", "efc_margin",
               "efc_vel", "efc_aref", "efc_R", "efc_D", "efc_imp", "efc_frictionloss", "efc_mu", "con_efc_adr", "nefc",
               "efc_overflow")


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_next_env_prefetch_leaves_the_rows_unchanged(cone):
    """make_rows' next-env prefetch (kernels/constraint_rows.cpp, `prefetch` 0 / 1 / 2: none, into L1, the row
    records too into L2) is a hint: on 3 envs (the first two prefetch the next) with the per-row outputs
    NaN-filled and the records garbage-filled first, every mode writes byte for byte the same rows, and the rows
    are MuJoCo's count."""
    import warp as wp
    from polyphys.plugins.rigid import constraint_rows

    m, d = S.make(cone=cone, impratio=1.0, condim=3)
    st, tree = S.stage_for(m, d, n_envs=3)
    got = []
    for pf in (0, 1, 2, 3):
        S.build(st, tree)
        v = st._view(None)
        for name in ROW_OUTPUTS[4:16]:
            a = getattr(v.d, name)
            a.fill_(np.nan if a.dtype != wp.int32 else -7)
        v.d.efc_seg.fill_(1 << 30)
        constraint_rows.make_rows(v, prefetch=pf)
        assert int(v.d.nefc.numpy()[0]) == d.nefc
        for name in ROW_OUTPUTS[7:16]:      # every row of the build written (no NaN left)
            assert np.isfinite(getattr(v.d, name).numpy()[:, :d.nefc]).all(), name
        got.append([getattr(v.d, k).numpy().tobytes() for k in ROW_OUTPUTS])
    assert got[0] == got[1] == got[2] == got[3]



def test_next_env_prefetch_of_the_contact_parameters_leaves_the_rows_unchanged(tmp_path):
    """With the contact parameters in the launch (make_rows ``params``, the solver's own path) the next env's prefetch
    also asks for its per-env geom friction rows and its contacts' geoms and pairs (Round 17b; `prefetch` bit 32 leaves
    them out, the A/B). A pile of boxes (3 envs, different velocities) after some steps: from the same state, with the
    per-row outputs and the contact parameters NaN- or garbage-filled first, every mode (0, 2, 2 + 32, 3) writes the
    same rows and contact parameters byte for byte."""
    import warp as wp
    from polyphys.plugins.rigid import constraint_rows
    from polyphys.plugins.rigid import model as MD
    from test_constraint_rows_clear import _scene, _xml

    path = tmp_path / "pile.xml"
    path.write_text(_xml())
    n = 3
    scene, ent = _scene(str(path), n)
    s = scene.solver("rigid")
    qv = np.zeros((n, s.n_dofs))
    qv[1] = 0.3 * np.sin(np.arange(s.n_dofs))
    qv[2] = -0.2 * np.cos(np.arange(s.n_dofs))
    ent.set_dofs_velocity(qv)
    for _ in range(60):
        scene.step()
    d = s.data
    params = ("con_friction", "con_sol", "con_solreffriction", "con_dim")
    keep = ROW_OUTPUTS + params + ("efc_off",)
    state = {k: getattr(d, k).numpy().copy() for k in keep}
    assert (state["nefc"] > 0).all() and len(set(state["nefc"].tolist())) > 1
    got = []
    for pf in (0, 2, 34, 3):
        for k in keep:
            getattr(d, k).assign(state[k])
        for name in ROW_OUTPUTS[7:16] + params:
            a = getattr(d, name)
            a.fill_(np.nan if a.dtype != wp.int32 else -7)
        for part in s.layout.partitions:
            constraint_rows.make_rows(s.views[part.index], prefetch=pf, params=True, pool=s._row_pool_on(),
                                      slack=MD._row_pool_slack, head=MD._row_pool_head)
        got.append([getattr(d, k).numpy().tobytes() for k in keep])
    assert got[0] == got[1] == got[2] == got[3]
    nc = d.ncon.numpy()
    for e in range(n):
        assert np.isfinite(d.con_friction.numpy()[e, :nc[e]]).all()
