"""The convex solve's warm-start evaluation computed by the row builder (make_rows with pre_jar,
kernels/constraint_rows.cpp rows_jar_native; docs/constraint.md).

A pile of boxes (generic sizes, poses, velocities) tumbles; every 10 steps, from the state in place:
- make_rows(pre_jar=True), with solver_jar and efc_jar_smooth filled with NaN first, must write
  J·qacc_warmstart − aref and J·qacc_smooth − aref equal, bit for bit, to the sequential sum over each
  row's span in ascending columns (each product rounded, then added; the solve's jac_mul order);
- the solve reading them (solve(pre_jar=True)) must give bit for bit the solve that recomputes them
  (rows rebuilt without pre_jar, solve(pre_jar=False)) from the same warm start: qacc, forces, states.
Pyramidal cone; MuJoCo mode (warm start from the lower-cost of warm and smooth) and the default mode
(the warm start alone), islands on and off, float64 and float32."""

import numpy as np
import pytest

from .test_constraint_rows_clear import _xml


def _scene(path, n, precision, islands, mujoco):
    import polyphys
    from polyphys import morphs
    from polyphys.plugins.rigid import RigidOptions
    from polyphys.plugins.rigid.materials import Rigid

    if mujoco:
        ro = RigidOptions.mujoco(integrator="implicitfast", friction_cone="pyramidal", constraint_islands=islands)
    else:
        ro = RigidOptions(constraint_islands=islands)
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.004, precision=precision, graph_capture=False), rigid=ro)
    ent = scene.add_entity(morphs.MJCF(file=path), Rigid())
    scene.build(n_envs=n)
    return scene, ent


def _jar_ref(J, span, aref, x, nrow, T):
    out = np.empty(nrow, dtype=T)
    for r in range(nrow):
        s = T(0)
        for k in range(max(span[r, 0], 0), min(span[r, 1], J.shape[1])):
            p = T(J[r, k]) * T(x[k])
            s = T(s + p)
        out[r] = T(s - T(aref[r]))
    return out


@pytest.mark.parametrize("precision,islands,mujoco", [("64", False, True), ("64", True, True), ("32", True, False)])
def test_prejar_equals_the_solve_s_own(tmp_path, precision, islands, mujoco):
    from polyphys.plugins.rigid import constraint_rows, convex_solve

    T = np.float64 if precision == "64" else np.float32
    U = np.uint64 if precision == "64" else np.uint32
    path = tmp_path / "pile.xml"
    path.write_text(_xml())
    n = 2
    scene, ent = _scene(str(path), n, precision, islands, mujoco)
    solver = scene.solver("rigid")
    assert solver.options.effective_resolution() != "signorini"
    pick = int(solver.model.opt.warm_pick_lower)
    assert pick == int(mujoco)
    d = solver.data
    qv = np.zeros((n, solver.n_dofs))
    qv[1] = 0.4 * np.sin(np.arange(qv.shape[1]))
    ent.set_dofs_velocity(qv)
    rows_checked = 0
    for step in range(120):
        scene.step()
        if step % 10 != 9:
            continue
        warm = d.qacc_warmstart.numpy().copy()
        runs = []
        for pre in (True, False):
            d.qacc_warmstart.assign(warm)
            d.solver_jar.fill_(np.nan)
            d.efc_jar_smooth.fill_(np.nan)
            for part in solver.layout.partitions:
                constraint_rows.make_rows(solver.views[part.index], pre_jar=pre)
            if pre:
                na, J, S, A = d.nefc.numpy(), d.efc_J.numpy(), d.efc_span.numpy(), d.efc_aref.numpy()
                jw, js, qs = d.solver_jar.numpy(), d.efc_jar_smooth.numpy(), d.qacc_smooth.numpy()
                for e in range(n):
                    r = int(na[e])
                    ref = _jar_ref(J[e], S[e], A[e], warm[e], r, T)
                    assert np.array_equal(jw[e, :r].view(U), ref.view(U)), (step, e)
                    if pick:
                        ref = _jar_ref(J[e], S[e], A[e], qs[e], r, T)
                        assert np.array_equal(js[e, :r].view(U), ref.view(U)), (step, e)
                    rows_checked += r
            for part in solver.layout.partitions:
                v = solver.views[part.index]
                convex_solve.solve(v, v.d.qacc_warmstart, pre_jar=pre)
            runs.append([a.numpy().copy() for a in (d.qacc_warmstart, d.efc_force, d.efc_state, d.qfrc_constraint)])
        for k, (a, b) in enumerate(zip(*runs)):
            assert not np.isnan(a.astype(np.float64)).any()
            assert np.array_equal(a.view(U) if a.dtype == T else a, b.view(U) if b.dtype == T else b), \
                (step, k, np.nonzero(a != b), a[a != b], b[a != b])
        d.qacc_warmstart.assign(runs[0][0])
    assert rows_checked > 100
