"""make_rows' clear of the last build's rows (kernels/constraint_rows.cpp: a contact row records its two
links and the next build zeroes their dof chains only while the chains' column span is the row's span).

A pile of boxes falls and tumbles (contacts appear, vanish and change rows between steps; generic sizes,
poses and velocities); every 10 steps its rows must equal, bit for bit, the rows the same build makes from rows that never
held anything (J zero, spans empty, no links recorded), with every entry outside a row's span and every
padding row exactly zero, and with the nonzero segments the builds recorded (efc_seg) equal to a scan of J.
A row of resting boxes with more than 128 rows per env checks that the next-env prefetch of up to 1024 rows leaves
the rows unchanged. Each test runs with the row pool (docs/constraint.md, "The row pool": the rows read through
model.pool_rows_host; no padding rows) and with a block per env (RigidSolver._row_pool = False: padding rows zero)."""

import numpy as np
import pytest
from polyphys.plugins.rigid.model import pool_rows_host
from test_constraint_row_segments import scan_segments

PILE = """<mujoco>
  <option timestep="0.004"/>
  <worldbody>
    <geom type="plane" size="5 5 0.1"/>
{bodies}
  </worldbody>
</mujoco>
"""


def _xml():
    rng = np.random.default_rng(7)
    out = []
    for i in range(6):
        x, y = rng.uniform(-0.12, 0.12, 2)
        a, b, c = rng.uniform(0, 90, 3)
        sx, sy, sz = rng.uniform(0.05, 0.11, 3)
        out.append(f'    <body pos="{x:.3f} {y:.3f} {0.12 + 0.17 * i:.3f}" euler="{a:.1f} {b:.1f} {c:.1f}"><freejoint/>'
                   f'<geom type="box" size="{sx:.3f} {sy:.3f} {sz:.3f}" mass="{0.5 + 0.2 * i}"/></body>')
    return PILE.format(bodies="\n".join(out))


def _rows(d, name):
    """d.<name> (n, max_rows[, k]) with each env's rows in its own block (the row pool: gathered by d.efc_off)."""
    return pool_rows_host(getattr(d, name).numpy(), d.efc_off.numpy())


def _scene(path, n, pool=True):
    import polyphys
    from polyphys import morphs
    from polyphys.plugins.rigid import RigidOptions
    from polyphys.plugins.rigid.materials import Rigid

    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.004, precision="64", graph_capture=False),
                           rigid=RigidOptions.mujoco(integrator="implicitfast", friction_cone="pyramidal",
                                                     constraint_islands=False))
    ent = scene.add_entity(morphs.MJCF(file=path), Rigid())
    scene.build(n_envs=n)
    scene.solver("rigid")._row_pool = pool
    return scene, ent


@pytest.mark.parametrize("pool", [True, False], ids=["pool", "block-per-env"])
def test_rows_equal_a_fresh_build(tmp_path, pool):
    from polyphys.plugins.rigid import constraint_rows

    path = tmp_path / "pile.xml"
    path.write_text(_xml())
    n = 2
    scene, ent = _scene(str(path), n, pool)
    solver = scene.solver("rigid")
    d = solver.data
    qv = np.zeros((n, solver.n_dofs))
    qv[1] = 0.4 * np.sin(np.arange(qv.shape[1]))
    ent.set_dofs_velocity(qv)
    nv = solver.n_dofs
    checked = 0
    for step in range(160):
        scene.step()
        if step % 10 != 9:
            continue
        # the rows the step built over the scene's history ...
        na, Ja, Sa = d.nefc.numpy().copy(), _rows(d, "efc_J").copy(), _rows(d, "efc_span").copy()  # CPU: a view
        # the segments the build recorded (efc_seg) are the scan's of its rows (test_constraint_row_segments.py)
        Ga = _rows(d, "efc_seg")
        for e in range(n):
            np.testing.assert_array_equal(Ga[e, :na[e]], scan_segments(Ja[e], Sa[e], int(na[e]), nv))
        # ... and the same build (the substep's kinematics and contacts are still in place) from rows
        # that never held anything: J zero, spans empty, no links recorded
        d.efc_J.zero_()
        sp = d.efc_span.numpy()
        sp[..., 0], sp[..., 1] = nv, 0
        d.efc_span.assign(sp)
        d.efc_chain.fill_(-2)
        # (the pool's addresses come from the counts of the envs before: the rebuild's are this build's)
        off = d.efc_off.numpy().copy()
        if not pool:
            d.nefc.zero_()
        for part in solver.layout.partitions:
            constraint_rows.make_rows(solver.views[part.index], pool=pool)
        assert np.array_equal(d.efc_off.numpy(), off)
        nb, Jb, Sb = d.nefc.numpy(), _rows(d, "efc_J"), _rows(d, "efc_span")
        assert np.array_equal(na, nb)
        for e in range(n):
            r = int(na[e])
            assert np.array_equal(Ja[e, :r].view(np.uint64), Jb[e, :r].view(np.uint64)), (step, e)
            assert np.array_equal(Sa[e, :r], Sb[e, :r])
            if not pool:        # (in the pool the rows past the count are the next env's)
                assert not Ja[e, r:].any(), "padding rows must be zero"
            cols = np.arange(nv)
            outside = (cols[None] < Sa[e, :r, :1]) | (cols[None] >= Sa[e, :r, 1:])
            assert not Ja[e, :r][outside].any(), "entries outside a row's span must be zero"
        wide = (Sa[:, :, 1] - Sa[:, :, 0] > 6) & (np.arange(Sa.shape[1])[None] < na[:, None])
        checked += int(wide.sum())
    assert checked > 50           # box-box rows (spans wider than one box's 6 dofs) were among the checked


def _row_xml():
    """14 boxes of generic sizes, turned about z, resting on the plane a little apart (4 corner contacts each:
    56 pyramidal condim-3 contacts, 224 rows, more than the 128 rows the row builder's next-env prefetch covered
    before Round 14c), two of them carrying a third box (box-box contacts between bodies far apart in the tree)."""
    rng = np.random.default_rng(11)
    out = []
    for i in range(14):
        sx, sy, sz = rng.uniform(0.05, 0.08, 3)
        x, y = -1.2 + 0.22 * (i % 7), -0.3 + 0.6 * (i // 7)
        out.append(f'    <body pos="{x:.3f} {y:.3f} {sz - 0.001:.4f}" euler="0 0 {rng.uniform(0, 90):.1f}"><freejoint/>'
                   f'<geom type="box" size="{sx:.3f} {sy:.3f} {sz:.3f}" mass="{0.4 + 0.05 * i}"/></body>')
    for i in (0, 9):
        x, y = -1.2 + 0.22 * (i % 7), -0.3 + 0.6 * (i // 7)
        out.append(f'    <body pos="{x + 0.01:.3f} {y - 0.01:.3f} 0.19" euler="3 -2 17"><freejoint/>'
                   f'<geom type="box" size="0.04 0.05 0.03" mass="0.3"/></body>')
    return PILE.format(bodies="\n".join(out))


def _moving_rows_scene(tmp_path, n, pool=True):
    """The scene of _row_xml with n envs, envs 1.. given different small velocities, after 3 steps."""
    path = tmp_path / "row.xml"
    path.write_text(_row_xml())
    scene, ent = _scene(str(path), n, pool)
    solver = scene.solver("rigid")
    qv = np.zeros((n, solver.n_dofs))
    qv[1] = 0.05 * np.sin(np.arange(qv.shape[1]))
    qv[2] = -0.03 * np.cos(np.arange(qv.shape[1]))
    ent.set_dofs_velocity(qv)
    for _ in range(3):
        scene.step()
    return solver, solver.data


@pytest.mark.parametrize("pool", [True, False], ids=["pool", "block-per-env"])
def test_next_env_prefetch_past_128_rows_leaves_the_rows_unchanged(tmp_path, pool):
    """make_rows' next-env prefetch of up to 1024 rows (kernels/constraint_rows.cpp, `prefetch` 3; mode 1 keeps 128,
    mode 0 none) and its lookahead in the env (mode 2, the default since Round 16) are hints: on 3 envs (the first two
    prefetch the next) with more than 128 rows each, the per-row outputs NaN-filled and the segment records
    garbage-filled first, every mode writes byte for byte the same rows."""
    import warp as wp
    from polyphys.plugins.rigid import constraint_rows
    from test_constraint_row_segments import ROW_OUTPUTS

    n = 3
    solver, d = _moving_rows_scene(tmp_path, n, pool)
    got = []
    for pf in (0, 1, 2, 3):
        for name in ROW_OUTPUTS[4:16]:
            a = getattr(d, name)
            a.fill_(np.nan if a.dtype != wp.int32 else -7)
        d.efc_seg.fill_(1 << 30)
        for part in solver.layout.partitions:
            constraint_rows.make_rows(solver.views[part.index], prefetch=pf, pool=pool)
        na = d.nefc.numpy()
        assert (na > 128).all(), na
        for name in ROW_OUTPUTS[7:16]:      # every row of the build written (no NaN left)
            x = _rows(d, name)
            for e in range(n):
                assert np.isfinite(x[e, :na[e]]).all(), name
        got.append([getattr(d, k).numpy().tobytes() for k in ROW_OUTPUTS])
    assert got[0] == got[1] == got[2] == got[3]


@pytest.mark.parametrize("pool", [True, False], ids=["pool", "block-per-env"])
def test_solve_next_env_prefetch_past_128_rows_leaves_the_solution_unchanged(tmp_path, pool):
    """The convex solve's next-env prefetch of up to 1024 rows (kernels/convex_solve.cpp solve_prefetch_native, 128
    before Round 14d; `prefetch` 1 into L1, 2 into L2, 0 none) is a hint: on the 3 envs above (> 128 rows each, the
    first two prefetch the next), cold-started from qacc_smooth with every output NaN-filled (int outputs −7) first,
    every mode gives byte for byte the same solution, forces, states, Jᵀf, iteration counts and statistics."""
    import warp as wp
    from polyphys.plugins.rigid import convex_solve

    n = 3
    solver, d = _moving_rows_scene(tmp_path, n, pool)
    assert (d.nefc.numpy() > 128).all(), d.nefc.numpy()
    warm = wp.clone(d.qacc_smooth)
    outs = ("qacc_warmstart", "efc_force", "efc_state", "qfrc_constraint", "solver_niter", "solver_stat")
    got = []
    for pf in (0, 1, 2):
        for k in outs:
            a = getattr(d, k)
            a.fill_(np.nan if a.dtype != wp.int32 else -7)
        for part in solver.layout.partitions:
            # each env's dense M written by the solve, as in the step (d.qM one block per View: model._qm_scratch)
            convex_solve.solve(solver.views[part.index], warm, prefetch=pf, mass_hd=solver._hd_solve, pool=pool)
        nefc = d.nefc.numpy()
        for e in range(n):
            assert np.isfinite(d.qacc_warmstart.numpy()[e]).all()
            assert np.isfinite(_rows(d, "efc_force")[e, :nefc[e]]).all()
        assert (d.solver_niter.numpy() > 0).all()
        got.append([getattr(d, k).numpy().tobytes() for k in outs])
    assert got[0] == got[1] == got[2]
