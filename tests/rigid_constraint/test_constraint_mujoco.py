"""The constraint model against MuJoCo 4 at a frozen state (MuJoCo-compatible parameters, float64).

Scene: free box (condim 3 or 6), free ball (condim 6), a 4-dof arm at two joint limits with DOF
frictionloss, a pendulum held by a connect equality, a free cube welded to it (torquescale 2) and a
polynomial joint equality
(tests/rigid_constraint/mjscenes.py). MuJoCo solves with tolerance 1e-12 and 1000 iterations,
so its efc_force is the unique minimizer of the regularized convex problem to ~1e-12 relative."""

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

import mjscenes as S  # noqa: E402

CASES = [("pyramidal", 1.0, 3), ("pyramidal", 5.0, 6), ("elliptic", 1.0, 3), ("elliptic", 30.0, 6),
         ("elliptic", 1.0, 4), ("elliptic", 100.0, 1)]


@pytest.mark.parametrize("cone,impratio,condim", CASES)
def test_rows_match_mujoco(cone, impratio, condim):
    """J, pos, aref, R, D per row (convex contact_resolution, the given cone and impratio) equal
    MuJoCo's to 1e-10 (float64 rounding of the same formulas; J is built along the tree from cdof)."""
    m, d = S.make(cone=cone, impratio=impratio, condim=condim)
    assert d.ncon >= 3 and m.neq == 3
    st, tree = S.stage_for(m, d)
    st.efc_aref.fill_(np.nan)
    st.efc_R.fill_(np.nan)
    S.build(st, tree)
    st.check()
    p = S.mj_order(m, d)
    n = int(st.n_efc.numpy()[0])
    assert n == d.nefc
    tp = st.efc_type.numpy()[0, :n]
    assert np.array_equal(tp, [S.MJ2PP[int(t)] for t in d.efc_type[p]])
    J = st.efc_J.numpy()[0, :n]
    np.testing.assert_allclose(J, d.efc_J.reshape(d.nefc, m.nv)[p], atol=1e-10)
    np.testing.assert_allclose(st.efc_pos.numpy()[0, :n], d.efc_pos[p], atol=1e-10)
    np.testing.assert_allclose(st.efc_R.numpy()[0, :n], d.efc_R[p], rtol=1e-10)
    np.testing.assert_allclose(st.efc_D.numpy()[0, :n], d.efc_D[p], rtol=1e-10)
    # connect and weld rows take MuJoCo 4's velocity-product term J̇·q̇ from eq_acc_bias (mjscenes)
    np.testing.assert_allclose(st.efc_aref.numpy()[0, :n], d.efc_aref[p], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(st.efc_imp.numpy()[0, :n], d.efc_KBIP[p, 2], rtol=1e-12)


@pytest.mark.parametrize("cone,impratio,condim", CASES)
def test_newton_matches_mujoco(cone, impratio, condim):
    """Newton on MuJoCo's M, qacc_smooth, J, aref, R: efc_force and qacc within 1e-6 (the unique
    minimizer; both solvers converged to tolerance 1e-12)."""
    m, d = S.make(cone=cone, impratio=impratio, condim=condim)
    st = S.solve_with_mj_inputs(m, d, solver="Newton", tolerance=1e-12, iterations=100, ls_tolerance=1e-10)
    n = d.nefc
    p = np.arange(n)  # inputs were copied in MuJoCo's own row order
    f = st.efc_force.numpy()[0, :n]
    scale = 1 + np.abs(d.efc_force).max()
    np.testing.assert_allclose(f, d.efc_force[p], atol=1e-6 * scale)
    np.testing.assert_allclose(st.qacc.numpy()[0], d.qacc, atol=1e-6)
    qfrc = d.efc_J.reshape(n, m.nv).T @ f
    np.testing.assert_allclose(st.qfrc_constraint.numpy()[0], qfrc, atol=1e-9 * scale)
    assert 0 < st.solver_niter.numpy()[0] < 100


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_cg_agrees_with_newton(cone):
    """Nonlinear CG reaches the same minimizer (more iterations; 1e-5 relative)."""
    m, d = S.make(cone=cone, impratio=1.0)
    st = S.solve_with_mj_inputs(m, d, solver="CG", tolerance=1e-14, iterations=2000, ls_tolerance=1e-10)
    scale = 1 + np.abs(d.efc_force).max()
    np.testing.assert_allclose(st.efc_force.numpy()[0, :d.nefc], d.efc_force, atol=1e-5 * scale)
    np.testing.assert_allclose(st.qacc.numpy()[0], d.qacc, atol=1e-4)


def test_full_pipeline_float32():
    """Rows built by this module and solved in float32 agree with MuJoCo's forces to float32 accuracy
    (1e-3 of the largest force: float32 rounding ~6e-8 amplified by the conditioning of M + JᵀDJ,
    whose D reaches ~1e5 against link masses ~0.3)."""
    m, d = S.make(cone="elliptic", impratio=1.0)
    st, tree = S.stage_for(m, d, precision="32", solver="Newton", tolerance=1e-6, iterations=100)
    S.build(st, tree)
    import warp as wp
    nv = m.nv
    M = np.zeros((nv, nv))
    import mujoco
    mujoco.mj_fullM(m, d, M)
    qs = wp.array(d.qacc_smooth[None], dtype=wp.float32)
    st.solve(wp.array(M[None], dtype=wp.float32), qs, qs)
    n = d.nefc
    p = S.mj_order(m, d)
    scale = np.abs(d.efc_force).max()
    f = st.efc_force.numpy()[0, :n]
    np.testing.assert_allclose(f, d.efc_force[p], atol=1e-3 * scale)


def test_batched_partitions_equal_single_env_runs():
    """Two envs holding different problems (pyramidal and elliptic rows of the same model, different
    row counts), solved per partition in one buffer: each env equals its single-env solve bit for bit,
    and a solve of env 1 alone leaves env 0 untouched."""
    import warp as wp
    from polyphys.layout import Partition
    singles = [S.solve_with_mj_inputs(*S.make(cone=c, impratio=1.0), solver="Newton", tolerance=1e-10)
               for c in ("pyramidal", "elliptic")]
    nv = singles[0].nv
    R = max(s.max_rows for s in singles)
    m, d = S.make()
    st, _ = S.stage_for(m, d, max_rows=R, solver="Newton", tolerance=1e-10)
    st2 = S.MjStage(2, nv, m.nbody, 1, R, options=st.opt, dof_parent=m.dof_parentid,
                            link_dof_last=S.link_dof_last(m), link_invweight=m.body_invweight0,
                            dof_invweight=m.dof_invweight0)
    for name in ("efc_J", "efc_type", "efc_aref", "efc_R", "efc_D", "efc_floss", "efc_mu", "efc_dim"):
        buf = getattr(st2, name).numpy()
        for e, s in enumerate(singles):
            a = getattr(s, name).numpy()[0]
            buf[e, :a.shape[0]] = a
        getattr(st2, name).assign(buf)
    st2.n_efc.assign(np.array([s.n_efc.numpy()[0] for s in singles], np.int32))
    mM = np.zeros((nv, nv))
    import mujoco
    mujoco.mj_fullM(m, d, mM)
    M = wp.array(np.stack([mM, mM]), dtype=wp.float64)
    qs = wp.array(np.stack([d.qacc_smooth, d.qacc_smooth]), dtype=wp.float64)
    st2.qacc.fill_(np.nan)
    st2.solve(M, qs, qs, part=Partition(1, 1, 2))
    assert np.isnan(st2.qacc.numpy()[0]).all()
    st2.solve(M, qs, qs, part=Partition(0, 0, 1))
    for e, s in enumerate(singles):
        assert np.array_equal(st2.qacc.numpy()[e], s.qacc.numpy()[0])
        n = s.n_efc.numpy()[0]
        assert np.array_equal(st2.efc_force.numpy()[e, :n], s.efc_force.numpy()[0, :n])


def test_warm_start_and_iteration_cap():
    """Warm start from the solution: converged at once (0 iterations, same forces); MuJoCo's
    lower-cost rule picks qacc_smooth over a bad warm start; the iteration cap is a cap."""
    import warp as wp
    m, d = S.make(cone="elliptic")
    st = S.solve_with_mj_inputs(m, d, tolerance=1e-10)
    sol = st.qacc.numpy().copy()
    nv = m.nv
    import mujoco
    mM = np.zeros((nv, nv))
    mujoco.mj_fullM(m, d, mM)
    M = wp.array(mM[None], dtype=wp.float64)
    qs = wp.array(d.qacc_smooth[None], dtype=wp.float64)
    st.solve(M, qs, wp.array(sol, dtype=wp.float64))
    assert st.solver_niter.numpy()[0] == 0
    np.testing.assert_array_equal(st.qacc.numpy(), sol)
    st.opt.iterations = 1
    st.solve(M, qs, qs)
    assert st.solver_niter.numpy()[0] == 1
    assert np.abs(st.qacc.numpy() - sol).max() > 1e-6     # one Newton step is not the answer here
    # a warm start far off: with warm_pick_lower the solve starts from qacc_smooth (same 1 step)
    one_step = st.qacc.numpy().copy()
    st.opt.warm_pick_lower = True
    st.solve(M, qs, wp.array(sol + 1e3, dtype=wp.float64))
    np.testing.assert_array_equal(st.qacc.numpy(), one_step)


def test_mass_from_tree_sparse():
    """Dense M from tree-sparse rows (row i: i and its dof ancestors) plus a diagonal term. mass_dense
    writes only that tree pattern (both triangles): the pattern entries are NaN-filled first and must
    equal MuJoCo's; the entries off it are left as allocated (zero) and must still be exactly zero
    (that they stay zero through build, steps, reset and checkpoints: tests/rigid/
    test_rigid_collision_integration.py::test_mass_off_tree_pattern_stays_zero)."""
    import mujoco
    import warp as wp
    m, d = S.make()
    st, _ = S.stage_for(m, d)
    nv = m.nv
    mM = np.zeros((nv, nv))
    mujoco.mj_fullM(m, d, mM)
    madr, depth, cols, vals = [], [], [], []
    for i in range(nv):
        madr.append(len(cols))
        chain, j = [], i
        while j >= 0:
            chain.append(j)
            j = m.dof_parentid[j]
        depth.append(len(chain) - 1)
        cols += chain
        vals += [mM[i, c] for c in chain]
    i32 = lambda x: wp.array(np.asarray(x, np.int32), dtype=wp.int32)  # noqa: E731
    add = np.linspace(0.1, 1.0, nv)[None]
    on = np.zeros((nv, nv), bool)
    for i in range(nv):
        on[i, cols[madr[i]:madr[i] + depth[i] + 1]] = True
    on |= on.T
    assert (~on).any()                                   # the model has entries off the pattern
    M0 = np.zeros((1, nv, nv))
    M0[:, on] = np.nan
    st.M.assign(M0)
    st.mass_from_tree(i32(madr), i32(depth), i32(cols), wp.array(np.asarray(vals)[None], dtype=wp.float64),
                      wp.array(add, dtype=wp.float64))
    np.testing.assert_array_equal(st.M.numpy()[0], mM + np.diag(add[0]))


def test_graph_capture_equals_uncaptured():
    """build_rows + solve recorded as a Warp graph (CPU capture) replays bit-exactly: no host sync,
    no allocation inside the launches."""
    import warp as wp
    m, d = S.make(cone="elliptic")
    st, tree = S.stage_for(m, d, solver="Newton", tolerance=1e-10)
    S.build(st, tree)
    nv = m.nv
    import mujoco
    mM = np.zeros((nv, nv))
    mujoco.mj_fullM(m, d, mM)
    M = wp.array(mM[None], dtype=wp.float64)
    qs = wp.array(d.qacc_smooth[None], dtype=wp.float64)
    st.solve(M, qs, qs)
    ref = (st.qacc.numpy().copy(), st.efc_force.numpy().copy())
    st.qacc.fill_(np.nan)
    st.efc_force.fill_(np.nan)
    st.v.d.efc_pad.fill_(st.efc_force.shape[1])     # rows past the count written outside the solve: it pads them all
    with wp.ScopedCapture(device="cpu") as cap:
        st.solve(M, qs, qs)
    wp.capture_launch(cap.graph)
    assert np.array_equal(st.qacc.numpy(), ref[0])
    assert np.array_equal(st.efc_force.numpy(), ref[1])


@pytest.mark.parametrize("fused", [False, True], ids=["alone", "fused"])
@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_contact_wrench_matches_mj_contactForce(cone, fused):
    """Full pipeline (rows built here, Newton solve) → per-contact 6D wrench in the contact frame
    equals mujoco.mj_contactForce (same sign: the wrench on side A = geom2, normal B→A) within 1e-6
    of the largest force; world frame F_w = Cᵀ F. ``fused``: the stage as the step runs it, with the
    link sums in the same launch (contact_forces.contact_link_wrench)."""
    import mujoco
    import warp as wp
    m, d = S.make(cone=cone, condim=6)
    st, tree = S.stage_for(m, d, solver="Newton", tolerance=1e-12, iterations=100, ls_tolerance=1e-10)
    S.build(st, tree)
    nv = m.nv
    mM = np.zeros((nv, nv))
    mujoco.mj_fullM(m, d, mM)
    qs = wp.array(d.qacc_smooth[None], dtype=wp.float64)
    st.solve(wp.array(mM[None], dtype=wp.float64), qs, qs)
    st.con_wrench.fill_(np.nan)
    st.con_force_world.fill_(np.nan)
    st.contact_wrenches(fused=fused)
    W = st.con_wrench.numpy()[0]
    Fw = st.con_force_world.numpy()[0]
    assert st.con_valid.numpy()[0, :d.ncon].all()
    ref = np.zeros((d.ncon, 6))
    for i in range(d.ncon):
        mujoco.mj_contactForce(m, d, i, ref[i])
    scale = np.abs(ref).max()
    np.testing.assert_allclose(W[:d.ncon], ref, atol=1e-6 * scale)
    for i in range(d.ncon):
        C = d.contact[i].frame.reshape(3, 3)
        np.testing.assert_allclose(Fw[i], C.T @ ref[i, :3], atol=1e-6 * scale)


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_humanoid_rows_and_solve(cone):
    """gymnasium humanoid lying on the floor (floor and self contacts between links with common
    ancestors, hinge limits): rows equal MuJoCo's to 1e-10. MuJoCo 4 stops this problem early
    (its qacc leaves a cost gradient ~4e-5 at tolerance 1e-12), so the solve is checked against the
    optimality conditions instead: an independent numpy gradient of the cost at our qacc is
    ~1e-12·trace(M), our cost is not above MuJoCo's, and qacc is within 1e-4 of MuJoCo's
    (|g_MuJoCo| / λ_min(M))."""
    import mujoco
    r = S.humanoid(cone)
    if r is None:
        pytest.skip("gymnasium's humanoid.xml not installed")
    m, d = r
    assert d.ncon >= 4
    st, tree = S.stage_for(m, d, max_rows=200)
    S.build(st, tree)
    p = S.mj_order(m, d)
    n = int(st.n_efc.numpy()[0])
    assert n == d.nefc
    J = d.efc_J.reshape(d.nefc, m.nv)
    np.testing.assert_allclose(st.efc_J.numpy()[0, :n], J[p], atol=1e-10)
    np.testing.assert_allclose(st.efc_aref.numpy()[0, :n], d.efc_aref[p], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(st.efc_R.numpy()[0, :n], d.efc_R[p], rtol=1e-10)
    st2 = S.solve_with_mj_inputs(m, d, tolerance=1e-12, iterations=200, ls_tolerance=1e-10)
    q = st2.qacc.numpy()[0]
    M = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M)
    np.testing.assert_allclose(q, d.qacc, atol=1e-4)
    if cone == "pyramidal":
        def cost_grad(a):
            jar = J @ a - d.efc_aref
            act = (jar < 0) | (d.efc_type == 0)
            f = np.where(act, -d.efc_D * jar, 0.0)
            da = a - d.qacc_smooth
            return 0.5 * da @ M @ da + 0.5 * np.sum(d.efc_D[act] * jar[act] ** 2), M @ da - J.T @ f
        c_ours, g_ours = cost_grad(q)
        c_mj, _ = cost_grad(d.qacc)
        assert np.abs(g_ours).max() < 1e-11 * np.trace(M)
        assert c_ours <= c_mj + 1e-12 * abs(c_mj)


def test_no_rows_gives_free_acceleration():
    """An env without rows returns qacc_smooth whatever the warm start (found by the stepping test:
    a box in flight after a bounce)."""
    import warp as wp
    m, d = S.make()
    st = S.solve_with_mj_inputs(m, d)
    st.n_efc.assign(np.zeros(1, np.int32))
    nv = m.nv
    M = wp.array(np.eye(nv)[None], dtype=wp.float64)
    qs = wp.array(np.arange(nv, dtype=float)[None], dtype=wp.float64)
    st.solve(M, qs, wp.array(np.full((1, nv), 5.0), dtype=wp.float64))
    np.testing.assert_array_equal(st.qacc.numpy()[0], np.arange(nv))
    assert not st.qfrc_constraint.numpy().any()


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_zero_spin_rolling_coefficients_add_no_support(cone):
    """condim 6 with zero torsional/rolling coefficients gives the same solution as condim 3 (their
    rows are zeroed: no phantom normal support, docs/semantics.md §R6)."""
    import mujoco
    import warp as wp
    m, d = S.make(cone=cone, condim=6, condim_ball=3)
    out = {}
    for case in ("cd3", "cd6zero"):
        st, tree = S.stage_for(m, d, solver="Newton", tolerance=1e-12, iterations=100, ls_tolerance=1e-10)
        dim = st.con_dim.numpy()
        fr = st.con_friction.numpy()
        if case == "cd3":
            dim[dim == 6] = 3
        elif case == "cd6zero":
            fr[dim == 6, 2:] = 0.0
        st.con_dim.assign(dim)
        st.con_friction.assign(fr)
        S.build(st, tree)
        nv = m.nv
        mM = np.zeros((nv, nv))
        mujoco.mj_fullM(m, d, mM)
        qs = wp.array(d.qacc_smooth[None], dtype=wp.float64)
        st.solve(wp.array(mM[None], dtype=wp.float64), qs, qs)
        assert np.isfinite(st.qacc.numpy()).all()
        out[case] = st.qacc.numpy()[0]
    assert (dim == 6).any()
    # the zeroed rows: all of J zero for the torsional/rolling rows of the condim-6 contacts
    adr = st.con_efc_adr.numpy()[0]
    J = st.efc_J.numpy()[0]
    for c in np.nonzero(dim[0] == 6)[0]:
        rows = range(adr[c] + 4, adr[c] + 10) if cone == "pyramidal" else range(adr[c] + 3, adr[c] + 6)
        assert not J[list(rows)].any()
    np.testing.assert_allclose(out["cd6zero"], out["cd3"], atol=1e-9)


def test_in_place_warm_start():
    """solve(M, qacc_smooth, st.qacc): the warm start read from the output buffer itself gives the
    same result as a copy, also with MuJoCo's lower-cost rule (warm_pick_lower)."""
    import warp as wp
    m, d = S.make(cone="pyramidal")
    st = S.solve_with_mj_inputs(m, d, tolerance=1e-10, iterations=2)
    nv = m.nv
    import mujoco
    mM = np.zeros((nv, nv))
    mujoco.mj_fullM(m, d, mM)
    M = wp.array(mM[None], dtype=wp.float64)
    qs = wp.array(d.qacc_smooth[None], dtype=wp.float64)
    for pick in (False, True):
        st.opt.warm_pick_lower = pick
        st.solve(M, qs, qs)
        warm = st.qacc.numpy().copy()
        st.solve(M, qs, wp.array(warm, dtype=wp.float64))
        ref = st.qacc.numpy().copy()
        st.qacc.assign(warm)
        st.solve(M, qs, st.qacc)
        np.testing.assert_array_equal(st.qacc.numpy(), ref)


def test_row_overflow_is_reported():
    """More rows than max_rows: rows are dropped whole (a contact keeps all its rows or none,
    con_efc_adr = −1), and check() raises naming the env and the budget — never a silent truncation."""
    from polyphys.errors import SimulationError
    m, d = S.make()
    st, tree = S.stage_for(m, d, max_rows=12)
    S.build(st, tree)
    assert st.overflow.numpy()[0] == 1
    assert int(st.n_efc.numpy()[0]) <= 12
    assert (st.con_efc_adr.numpy()[0, :d.ncon] == -1).any()
    with pytest.raises(SimulationError, match=r"max_rows=12 in env 0"):
        st.check()
