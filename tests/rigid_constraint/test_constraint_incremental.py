"""convex_solve.solve(incremental=True): after the first Newton iteration of a problem, the rows whose state
entered or left the quadratic zone update / downdate the last Cholesky factor (MuJoCo's incremental Hessian)
instead of a new H and factor (kernels/convex_solve.cpp newton_solve_native; benchmarks/results/constraint.md,
Round 17 (rigidsolve)). Not the same numbers as a new factor (rounding), so the checks are tolerances: the same
minimum, the same active set and iteration counts."""

from __future__ import annotations

import numpy as np
import pytest


def _stack(islands, precision):
    from test_constraint_islands import BOX_A, BOX_B, _boxes
    stacked = dict(size=(0.2, 0.25, 0.15), pos=(0.7, -0.4, 0.75), euler=(0.0, 0.0, 12.0), rho=500.0)
    top = dict(size=(0.12, 0.1, 0.1), pos=(0.72, -0.38, 1.0), euler=(0.0, 8.0, 40.0), rho=900.0)
    scene, ents = _boxes([BOX_A, BOX_B, stacked, top], islands=islands, n_envs=2, precision=precision,
                         friction_cone="pyramidal", contact_resolution="convex")
    ents[2].set_dofs_velocity(np.array([[0.3, 0.0, 0.0, 0.0, 0.2, 0.0], [0.0, -0.4, 0.0, 0.5, 0.0, 0.1]]))
    for _ in range(60):
        scene.step()
    return scene


@pytest.mark.parametrize("islands,precision", [(True, "64"), (False, "64"), (True, "32")])
def test_incremental_factor_reaches_the_same_solution(islands, precision):
    """convex_solve.solve run alone from qacc_smooth (a cold start: several Newton iterations, rows changing
    state between them) with its outputs NaN-filled (ints −7), incremental and not, on four boxes (a stack of
    three and one apart; 2 envs): qacc, forces, Jᵀf and the cost agree to the solver's tolerance, the rows'
    states and the iteration counts are the same, every output is written, and the incremental run's numbers
    are not the new factor's bytes (the updates ran)."""
    import warp as wp
    from polyphys.plugins.rigid import convex_solve
    scene = _stack(islands, precision)
    s = scene.solver("rigid")
    d, v = s.data, s.views["all"]
    warm = wp.clone(d.qacc_smooth)
    outs = ("qacc_warmstart", "efc_force", "efc_state", "qfrc_constraint", "solver_niter", "island_niter", "solver_stat")
    got = {}
    for inc in (False, True):
        for k in ("qacc_warmstart", "efc_force", "qfrc_constraint", "solver_stat"):
            a = getattr(d, k)
            a.assign(np.full(a.shape, np.nan, a.numpy().dtype))
        for k in ("efc_state", "solver_niter", "island_niter"):
            a = getattr(d, k)
            a.assign(np.full(a.shape, -7, np.int32))
        convex_solve.solve(v, warm, mass_hd=s._hd_solve, incremental=inc)
        got[inc] = {k: getattr(d, k).numpy().copy() for k in outs}
    a, b = got[False], got[True]
    nefc = d.nefc.numpy()
    tol = 1e-9 if precision == "64" else 2e-4
    for e in range(2):
        n = nefc[e]
        assert np.isfinite(b["qacc_warmstart"][e]).all() and np.isfinite(b["efc_force"][e, :n]).all()
        assert np.array_equal(a["efc_state"][e, :n], b["efc_state"][e, :n])
        fs = max(1.0, np.abs(a["efc_force"][e, :n]).max())
        assert np.abs(a["efc_force"][e, :n] - b["efc_force"][e, :n]).max() <= tol * fs
        qs = max(1.0, np.abs(a["qacc_warmstart"][e]).max())
        assert np.abs(a["qacc_warmstart"][e] - b["qacc_warmstart"][e]).max() <= tol * qs
        cs = max(1.0, abs(a["solver_stat"][e, 2]))
        assert abs(a["solver_stat"][e, 2] - b["solver_stat"][e, 2]) <= tol * cs
    assert np.array_equal(a["solver_niter"], b["solver_niter"])
    assert np.array_equal(a["island_niter"], b["island_niter"])
    assert (a["solver_niter"] > 1).any()                 # later iterations exist
    assert a["qacc_warmstart"].tobytes() != b["qacc_warmstart"].tobytes()   # and the updates ran
