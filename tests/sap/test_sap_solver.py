"""SAP coupler, the convex solve itself (docs/sap.md): monotone cost, a unique solution reached from
different warm starts, both line searches, per-env iteration-cap reporting."""

import re
import warnings

import numpy as np
import pytest
from polyphys.couplers.sap.options import SapOptions
from polyphys.errors import PolyphysWarning, SimulationError
from sapscenes import INF, plane_and_box, sap


def _opts(**kw):
    base = dict(point_stiffness=1.0e4, geom_point_stiffness={0: INF}, dissipation_time_constant=0.005,
                geom_dissipation_time_constant={0: 0.005})
    base.update(kw)
    return SapOptions(**base)


def _sliding_tilted(options):
    """A box tilted 10° about its long axis hitting the 20°-inclined plane at a slant, spinning: a
    frozen state where contacts stick, slide and separate, so Newton takes several iterations."""
    scene, box, info = plane_and_box(incline=20.0, mu=0.5, yaw=40.0, lift=0.0005, options=options)
    box.set_dofs_velocity(np.array([0.8, -0.3, -0.6, 1.5, -2.0, 3.0]))
    return scene, box


def _solve_from(scene, state, warm_v=None):
    """One step from ``state``; the coupler's warm start: cold (v*) or ``warm_v``."""
    scene.reset(state)
    c = sap(scene)
    b = c._rigid["rigid"]
    if warm_v is not None:
        b.warm_v.assign(warm_v)
        b.warm_ok.fill_(1)
    else:
        b.warm_ok.zero_()
    scene.step()
    return c.get_impulses(), c.get_solver_stats()


@pytest.mark.parametrize("line_search", ["exact", "backtracking"])
def test_cost_decreases_monotonically(line_search):
    """At a frozen state, ℓ(v_k) never increases over the Newton iterations (both line searches
    are descent methods on a convex cost); the tolerance is float64 round-off of ℓ's sum."""
    scene, box = _sliding_tilted(_opts(line_search=line_search, rtol=1e-10, atol=1e-14))
    state = scene.get_state()
    _, st = _solve_from(scene, state)
    cost = st["cost"][st["cost"] >= 0]
    assert st["iterations"] >= 3, st["iterations"]
    assert st["converged"]
    assert np.all(np.diff(cost) <= 1e-12 * abs(cost[0]) + 1e-15)
    assert cost[-1] < cost[0]


def test_unique_solution_from_different_warm_starts():
    """Cold start (v*) and a random warm start reach the same impulses: ℓ is strictly convex in v,
    the impulses are a function of v. Stopped at rtol 1e-10, they agree to 1e-7 of the largest."""
    scene, box = _sliding_tilted(_opts(rtol=1e-10, atol=1e-14))
    state = scene.get_state()
    imp_a, st_a = _solve_from(scene, state)
    rng = np.random.default_rng(3)
    imp_b, st_b = _solve_from(scene, state, warm_v=rng.normal(scale=2.0, size=(1, 6)))
    n = imp_a["count"]
    assert n >= 1 and n == imp_b["count"]
    ga, gb = imp_a["gamma"][:n], imp_b["gamma"][:n]
    scale = np.abs(ga).max()
    assert scale > 0
    np.testing.assert_allclose(gb, ga, atol=1e-7 * scale)
    assert st_a["converged"] and st_b["converged"]


def test_line_searches_agree():
    """Exact and backtracking line search: the same fixed point (1e-7 of the largest impulse)."""
    out = []
    for ls in ("exact", "backtracking"):
        scene, box = _sliding_tilted(_opts(line_search=ls, rtol=1e-10, atol=1e-14))
        imp, st = _solve_from(scene, scene.get_state())
        out.append(imp["gamma"][:imp["count"]])
    np.testing.assert_allclose(out[1], out[0], atol=1e-7 * np.abs(out[0]).max())


def test_iteration_cap_is_reported_per_env():
    """max_iterations = 1 with a strict tolerance: the envs that did not converge are named after the
    step (a PolyphysWarning; SimulationError with on_iteration_cap='raise'), and counted in
    get_solver_stats."""
    opts = _opts(max_iterations=1, rtol=1e-12, atol=1e-16)
    scene, box, info = plane_and_box(incline=20.0, mu=0.5, lift=0.0005, options=opts, n_envs=2)
    box.set_dofs_velocity(np.array([0.8, -0.3, -0.6, 1.5, -2.0, 3.0]), envs_idx=[1])
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        for _ in range(3):
            scene.step()
    msgs = [str(w.message) for w in rec if issubclass(w.category, PolyphysWarning) and "max_iterations" in str(w.message)]
    assert msgs
    named = [int(x) for x in re.search(r"env\(s\) \[([0-9, ]+)\]", msgs[-1]).group(1).split(",")]
    assert 1 in named
    st = sap(scene).get_solver_stats()
    assert st["cap_hits_step"][1] >= 1
    scene2, box2, _ = plane_and_box(incline=20.0, mu=0.5, lift=0.0005,
                                    options=_opts(max_iterations=1, rtol=1e-12, atol=1e-16, on_iteration_cap="raise"))
    box2.set_dofs_velocity(np.array([0.8, -0.3, -0.6, 1.5, -2.0, 3.0]))
    with pytest.raises(SimulationError, match="max_iterations=1"):
        for _ in range(3):
            scene2.step()
