"""docs/semantics.md §R8 stopping rule of the convex Newton path in the default mode: the solve stops only when the
scaled line-search improvement AND the scaled gradient are below the tolerance (or the line search
cannot move: alpha = 0, improvement exactly 0), or at the iteration cap — MuJoCo's rule (either test)
stays in the MuJoCo-compatible mode."""

import warnings

import polyphys
from polyphys import morphs
from polyphys.plugins.rigid.materials import Rigid
from polyphys.plugins.rigid.options import RigidOptions


def _stack(**opts):
    s = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=1, precision="64"), rigid=RigidOptions(**opts))
    s.add_entity(morphs.Plane(), Rigid())
    for i in range(3):
        s.add_entity(morphs.Box(size=(0.2, 0.2, 0.2), pos=(0.01 * i, 0, 0.1 + 0.2 * i + 0.002 * i),
                                euler=(0, 0, 7 * i)), Rigid())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s.build(n_envs=2)
    return s


def test_default_newton_stops_on_both_tests():
    s = _stack()
    rs = s.solver("rigid")
    st, opt = rs.data, rs.model.opt
    tol, cap = opt.tolerance, opt.iterations
    assert rs.options.constraint_solver == "Newton" and not opt.warm_pick_lower and opt.stop_needs_gradient
    checked = 0
    for _ in range(120):
        s.step()
        niter, stat = st.solver_niter.numpy(), st.solver_stat.numpy()
        for e in range(2):
            if niter[e] == 0 or niter[e] >= cap:
                continue
            improvement, gnorm = stat[e, 0], stat[e, 1]
            assert (improvement < tol and gnorm < tol) or improvement == 0.0, (improvement, gnorm, tol)
            checked += 1
    assert checked > 50          # the stack lands and the contact solve runs on most steps
