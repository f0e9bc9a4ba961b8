"""The convex solve writes the dense M it reads (convex_solve.solve ``mass_hd``; benchmarks/results/constraint.md,
Round 15): the solver's substep leaves d.qM to the solve, which writes M + h_D·D from the tree-sparse M at each
env's start (factorization.mass_dense's body), instead of the smooth pass writing it for every env long before
the solve reads it.

- the stage: with every entry of M's tree pattern in d.qM NaN-filled (the entries off it are zero since
  allocation, as the solve expects) and the solve's outputs NaN-filled, ``solve(mass_hd=h_D)`` writes d.qM byte for
  byte as factorization.mass_dense and gives byte for byte the outputs of the solve over the dense M written
  first; fails when the solve does not write the pattern (NaN reaches the solution);
- the step: the substep with the dense M written by the solve and by the smooth pass (``_dense_in_solve``) gives
  byte-identical states, d.qM and contact forces step by step (three trees of 6, 8 and 3 dofs: a free box, a free
  body with two hinged flaps, a hinge chain; Newton and CG, pyramidal and elliptic, approximate_implicitfast
  (h_D = h) and implicitfast (h_D = 0), islands on and off); and with d.qM one block per View (model._qm_scratch,
  the default: the solve's scratch) the same states and forces, step by step and in forward()'s query.
"""

import warnings

import numpy as np
import polyphys
import pytest
import warp as wp
from polyphys import morphs
from polyphys.errors import PolyphysWarning
from polyphys.plugins.rigid import RigidOptions
from polyphys.plugins.rigid.materials import Rigid

_XML = """
<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom type="plane" size="5 5 0.1"/>
    <body name="a" pos="0.05 -0.1 0.12" euler="0 0 17"><freejoint/><geom type="box" size="0.2 0.15 0.12" density="600"/></body>
    <body name="t" pos="1.5 0.3 0.1" euler="0 0 -25"><freejoint/><geom type="box" size="0.3 0.2 0.1" density="500"/>
      <body name="f1" pos="0.3 0 0"><joint type="hinge" axis="0 1 0" damping="0.3"/>
        <geom type="box" size="0.15 0.1 0.05" pos="0.15 0 0" density="300"/></body>
      <body name="f2" pos="-0.3 0 0"><joint type="hinge" axis="0.2 1 0"/>
        <geom type="box" size="0.15 0.1 0.05" pos="-0.15 0 0" density="300"/></body>
    </body>
    <body name="c" pos="-1.2 0.4 0.5">
      <joint type="hinge" axis="1 0 0" damping="0.2"/><geom type="capsule" fromto="0 0 0 0 0.3 0" size="0.05"/>
      <body pos="0 0.3 0"><joint type="hinge" axis="0 0 1"/><geom type="capsule" fromto="0 0 0 0 0.3 -0.2" size="0.05"/>
        <body pos="0 0.3 -0.2"><joint type="hinge" axis="1 0 0"/><geom type="sphere" size="0.08"/></body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def _scene(tmp_path, n_envs=2, **opts):
    path = tmp_path / "trees.xml"
    path.write_text(_XML.strip())
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.005, graph_capture=False), rigid=RigidOptions(**opts))
    ent = scene.add_entity(morphs.MJCF(file=str(path)), Rigid())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=n_envs)
    qvel = np.zeros((n_envs, ent.n_dofs))
    qvel[:, 12:14] = (0.8, -0.5)          # the flaps swing, the chain turns
    qvel[1:, 14:17] = (0.4, -0.3, 0.6)
    ent.set_dofs_velocity(qvel)
    return scene, ent


def _pattern(s):
    nv = s.model.nv
    p = np.zeros((nv, nv), bool)
    p[s.hm.m_rows, s.hm.m_cols] = p[s.hm.m_cols, s.hm.m_rows] = True
    return p


_OUTS = ("qacc_warmstart", "efc_force", "efc_state", "qfrc_constraint", "solver_niter", "solver_stat")


@pytest.mark.parametrize("integrator", ["approximate_implicitfast", "implicitfast"])
@pytest.mark.parametrize("solver", ["Newton", "CG"])
def test_solve_writes_dense_m_stage(tmp_path, integrator, solver, monkeypatch):
    from polyphys.plugins.rigid import convex_solve, factorization
    from polyphys.plugins.rigid import model as M

    monkeypatch.setattr(M, "_qm_scratch", False)   # d.qM per env: each env's M is read back below
    scene, _ = _scene(tmp_path, integrator=integrator, constraint_solver=solver)
    for _ in range(30):
        scene.step()
    s = scene.solver("rigid")
    d, v = s.data, s.views["all"]
    hd = s._hd_solve
    assert (hd > 0) == (integrator == "approximate_implicitfast")
    pattern = _pattern(s)
    assert int(d.nefc.numpy().min()) > 0

    def run(mass_hd):
        for k in ("qacc_warmstart", "efc_force", "qfrc_constraint", "solver_stat"):
            a = getattr(d, k)
            a.assign(np.full(a.shape, np.nan, a.numpy().dtype))
        convex_solve.solve(v, wp.clone(d.qacc_smooth), mass_hd=mass_hd)
        return {k: getattr(d, k).numpy().copy() for k in _OUTS}

    factorization.mass_dense(v, hd)
    want_m = d.qM.numpy().copy()
    assert not want_m[:, ~pattern].any() and (want_m[:, pattern] != 0).any()
    ref = run(None)
    qm = want_m.copy()
    qm[:, pattern] = np.nan
    d.qM.assign(qm)
    got = run(hd)
    assert d.qM.numpy().tobytes() == want_m.tobytes()
    for k in _OUTS:
        assert got[k].tobytes() == ref[k].tobytes(), k
    assert np.isfinite(got["qacc_warmstart"]).all()
    # without the write the NaN pattern reaches the solution
    d.qM.assign(qm)
    assert not np.isfinite(run(None)["qacc_warmstart"]).all()


@pytest.mark.parametrize("solver,cone,integrator,islands", [
    ("Newton", "pyramidal", "approximate_implicitfast", True),
    ("Newton", "elliptic", "implicitfast", True),
    ("Newton", "pyramidal", "implicitfast", False),
    ("CG", "pyramidal", "approximate_implicitfast", True),
])
def test_dense_m_in_solve_step_bit_identical(tmp_path, solver, cone, integrator, islands):
    opts = dict(constraint_solver=solver, friction_cone=cone, integrator=integrator, constraint_islands=islands,
                contact_resolution="convex")
    from polyphys.plugins.rigid import model as M

    c, ec = _scene(tmp_path, **opts)      # the default: d.qM one block per View (model._qm_scratch)
    M._qm_scratch = False                 # a, b: d.qM per env, so that it can be compared
    try:
        a, ea = _scene(tmp_path, **opts)
        b, eb = _scene(tmp_path, **opts)
    finally:
        M._qm_scratch = True
    sa, sb, sc = a.solver("rigid"), b.solver("rigid"), c.solver("rigid")
    sb._dense_in_solve = False            # the smooth pass writes the dense M (before Round 15)
    sc._dense_in_solve = False            # no effect where d.qM is a block: the solve must write it
    assert M.scratch_block(sc.data.qM) is not sc.data.qM and M.scratch_block(sa.data.qM) is sa.data.qM
    assert all(v.d.qM.strides[0] == 0 for v in sc.views.values())
    assert sa._m_in_solve() and not sb._m_in_solve() and sc._m_in_solve()
    for step in range(60):
        a.step()
        b.step()
        c.step()
        for k in ("qpos", "qvel", "qM", "efc_force", "qfrc_constraint"):
            assert getattr(sa.data, k).numpy().tobytes() == getattr(sb.data, k).numpy().tobytes(), (step, k)
        for k in ("qpos", "qvel", "efc_force", "qfrc_constraint", "qacc_warmstart"):
            assert getattr(sa.data, k).numpy().tobytes() == getattr(sc.data, k).numpy().tobytes(), (step, k)
    assert int(sa.data.nefc.numpy().min()) > 0
    # forward()'s constraint query (the solve writes each env's M there too): the same forces
    a.solver("rigid").forward()
    c.solver("rigid").forward()
    for k in ("efc_force", "qfrc_constraint"):
        assert getattr(sa.data, k).numpy().tobytes() == getattr(sc.data, k).numpy().tobytes(), k
