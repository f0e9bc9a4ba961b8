"""Stage tests of the SAP coupler's parts (outputs NaN-filled first, compared with references):

- the rigid solver's contact hand-off stage: its contact Jacobian rows against the rigid entity's
  point Jacobian (``get_jacobian``), on a scene where contacts have a moving body on both sides;
- the per-contact inverse dynamics ``project``: against a numerical minimisation of ½‖γ − y‖²_R over
  the friction cone (SciPy SLSQP), and its derivative ``project_hessian`` against central finite
  differences of ``project``, in the stiction, sliding and separation regions.
"""

import numpy as np
import polyphys
import pytest
import warp as wp
from polyphys import morphs as M
from polyphys.couplers.sap.kernels import sap as K
from polyphys.couplers.sap.options import SapOptions
from polyphys.options import SimOptions
from polyphys.plugins.rigid.materials import Rigid


@wp.kernel
def _project_many(vc: wp.array(dtype=wp.vec3d), vhat: wp.array(dtype=wp.float64), rn: wp.array(dtype=wp.float64),
                  rt: wp.array(dtype=wp.float64), mu: wp.array(dtype=wp.float64),
                  gamma_out: wp.array(dtype=wp.vec3d), G_out: wp.array(dtype=wp.mat33d)):
    i = wp.tid()
    gamma_out[i] = K.project(vc[i], vhat[i], rn[i], rt[i], mu[i])
    G_out[i] = K.project_hessian(vc[i], vhat[i], rn[i], rt[i], mu[i])


def _run_project(vc, vhat, rn, rt, mu):
    n = len(vc)
    arr = lambda x, t=wp.float64: wp.array(np.asarray(x, float), dtype=t)  # noqa: E731
    g = wp.array(np.full((n, 3), np.nan), dtype=wp.vec3d)
    G = wp.array(np.full((n, 3, 3), np.nan), dtype=wp.mat33d)
    wp.launch(_project_many, dim=n, inputs=[arr(vc, wp.vec3d), arr(vhat), arr(rn), arr(rt), arr(mu)], outputs=[g, G])
    return g.numpy(), G.numpy()


def _cases():
    rng = np.random.default_rng(7)
    rows = []
    for _ in range(60):
        rn, rt, mu = 10 ** rng.uniform(-2, 1), 10 ** rng.uniform(-4, -1), rng.uniform(0.1, 1.2)
        vc = rng.normal(size=3) * np.array([0.3, 0.05, 0.05])
        rows.append((vc, rng.normal() * 0.1, rn, rt, mu))
    return rows


def _region(y, mu, muh):
    yn, yr = y[0], np.hypot(y[1], y[2])
    if muh * yr <= -yn:
        return "separation"
    return "stiction" if yr <= mu * yn else "sliding"


def test_projection_is_the_R_norm_projection_onto_the_cone():
    from scipy.optimize import minimize

    cases = _cases()
    g, _ = _run_project(*[np.array([c[i] for c in cases]) for i in range(5)])
    seen = set()
    for (vc, vhat, rn, rt, mu), gi in zip(cases, g):
        R = np.array([rn, rt, rt])
        y = -(vc - np.array([vhat, 0.0, 0.0])) / R
        seen.add(_region(y, mu, mu * rt / rn))
        cons = {"type": "ineq", "fun": lambda x, mu=mu: mu * x[0] - np.hypot(x[1], x[2] + 1e-300)}
        res = minimize(lambda x, R=R, y=y: 0.5 * np.sum(R * (x - y) ** 2), x0=np.array([max(y[0], 0.0) + 1.0, 0.0, 0.0]),
                       constraints=[cons, {"type": "ineq", "fun": lambda x: x[0]}], method="SLSQP",
                       options={"ftol": 1e-15, "maxiter": 500})
        scale = max(np.abs(y).max(), 1e-9)
        np.testing.assert_allclose(gi, res.x, atol=2e-5 * scale)
    assert seen == {"separation", "stiction", "sliding"}


def test_project_hessian_is_minus_the_derivative_of_the_impulse():
    cases = [c for c in _cases()]
    vc = np.array([c[0] for c in cases])
    rest = [np.array([c[i] for c in cases]) for i in range(1, 5)]
    _, G = _run_project(vc, *rest)
    eps = 1e-7
    for j in range(3):
        d = np.zeros(3)
        d[j] = eps
        gp, _ = _run_project(vc + d, *rest)
        gm, _ = _run_project(vc - d, *rest)
        fd = -(gp - gm) / (2 * eps)
        scale = np.abs(G).max(axis=(1, 2))[:, None]
        err = np.abs(G[:, :, j] - fd)
        assert (err <= 1e-5 * scale + 1e-9).all(), err.max()
    np.testing.assert_allclose(G, np.transpose(G, (0, 2, 1)), atol=1e-12 * np.abs(G).max())


def test_contact_jacobian_rows_match_the_point_jacobian():
    """Two boxes stacked on a plane, at generic yaws and offsets, the upper one tilted: contacts with
    the world (link B = −1) and between the boxes (a moving body on each side)."""
    scene = polyphys.Scene(sim=SimOptions(dt=0.01, substeps=2, precision="64"), coupler=SapOptions())
    plane = scene.add_entity(M.Plane(pos=(0.2, -0.1, 0.03)), Rigid())
    lower = scene.add_entity(M.Box(size=(0.3, 0.25, 0.1), pos=(0.25, -0.05, 0.079), euler=(0, 0, 20)), Rigid())
    upper = scene.add_entity(M.Box(size=(0.12, 0.1, 0.08), pos=(0.27, -0.04, 0.16), euler=(8, -5, 55)), Rigid())
    scene.build()
    solver = next(s for s in scene.solvers if s.name == "rigid")
    d = solver.data
    d.efc_J.fill_(float("nan"))
    part = scene.layout.partitions[0]
    solver.substep_pre_coupling(0, part)
    n = int(d.ncon.numpy()[0])
    links = d.con_link.numpy()[0]
    assert n >= 5 and any(la >= 0 and lb >= 0 for la, lb in links[:n])
    J = d.efc_J.numpy()[0]
    pos, frame = d.con_pos.numpy()[0], d.con_frame.numpy()[0]
    nv = solver.n_dofs

    def point_jac(link, p):
        out = np.zeros((3, nv))
        if link < 0:
            return out
        ent = next(e for e in (plane, lower, upper) if e.link_start <= link < e.link_start + len(e.description.links))
        jl = ent.get_jacobian(link - ent.link_start, point=p)[:3]
        out[:, ent.dof_start:ent.dof_start + jl.shape[1]] = jl
        return out

    for k in range(n):
        want = frame[k] @ (point_jac(links[k, 0], pos[k]) - point_jac(links[k, 1], pos[k]))
        np.testing.assert_allclose(J[3 * k:3 * k + 3], want, atol=1e-12)
    assert np.isfinite(J[:3 * n]).all()


@pytest.mark.parametrize("precision", ["32"])
def test_contact_jacobian_float32_builds(precision):
    """The float32 overload of the hand-off kernel runs (the rest of tests/sap covers its physics)."""
    scene = polyphys.Scene(sim=SimOptions(dt=0.01, substeps=2, precision=precision), coupler=SapOptions())
    scene.add_entity(M.Plane(pos=(0.2, -0.1, 0.03)), Rigid())
    scene.add_entity(M.Box(size=(0.3, 0.25, 0.1), pos=(0.25, -0.05, 0.079), euler=(0, 0, 20)), Rigid())
    scene.build()
    scene.step()
    assert np.isfinite(next(s for s in scene.solvers if s.name == "rigid").data.efc_J.numpy()).all()


def test_contact_jacobian_rows_of_an_articulated_chain(tmp_path):
    """A two-link hinge arm (no limits: SAP owns contacts only) on a free base lying tilted on the
    plane: the rows walk each link's dof chain (free joint + hinges); compared with the point Jacobian."""
    xml = tmp_path / "arm.xml"
    xml.write_text("""<mujoco><worldbody><geom type="plane" size="2 2 .1" pos="0.1 -0.2 0.02"/>
      <body pos="0.2 0.1 0.09" euler="10 -8 30"><freejoint/><geom type="box" size=".12 .06 .05"/>
        <body pos="0.15 0 0" euler="0 25 0"><joint type="hinge" axis="0 1 0"/>
          <geom type="capsule" fromto="0 0 0 .2 0 0" size=".03"/>
          <body pos="0.2 0 0" euler="0 20 0"><joint type="hinge" axis="0 0.6 0.8"/><geom type="sphere" size=".05" pos=".05 0 0"/>
          </body></body></body></worldbody></mujoco>""")
    scene = polyphys.Scene(sim=SimOptions(dt=0.01, substeps=2, precision="64"), coupler=SapOptions())
    arm = scene.add_entity(M.MJCF(file=str(xml)), Rigid())
    scene.build()
    solver = next(s for s in scene.solvers if s.name == "rigid")
    d = solver.data
    d.efc_J.fill_(float("nan"))
    solver.substep_pre_coupling(0, scene.layout.partitions[0])
    n = int(d.ncon.numpy()[0])
    links = d.con_link.numpy()[0]
    assert n >= 2 and len({int(la) for la, lb in links[:n]} | {int(lb) for la, lb in links[:n]}) >= 3
    J = d.efc_J.numpy()[0]
    pos, frame = d.con_pos.numpy()[0], d.con_frame.numpy()[0]
    nv = solver.n_dofs

    def point_jac(link, p):
        out = np.zeros((3, nv))
        jl = arm.get_jacobian(link - arm.link_start, point=p)[:3]
        out[:, arm.dof_start:arm.dof_start + jl.shape[1]] = jl
        return out

    for k in range(n):
        want = frame[k] @ (point_jac(links[k, 0], pos[k]) - point_jac(links[k, 1], pos[k]))
        np.testing.assert_allclose(J[3 * k:3 * k + 3], want, atol=1e-12)


def test_handoff_rows_equal_the_solvers_own_rows(tmp_path):
    """The hand-off stage's limit, frictionloss and equality rows (rows 0 .. row0 − 1, built before the
    contacts) are the rigid solver's own rows at the same state (its ``forward()`` query, where they sit
    around the contact rows): Jacobian, position, type, owner and frictionloss; the contacts follow at
    row0 + 3k. Outputs NaN-filled first (every row's span set to all columns, so the rows builder's
    clearing covers the whole row, as after any contact substep)."""
    from polyphys.plugins.rigid.codes import ConstraintType

    xml = tmp_path / "arm_rows.xml"
    xml.write_text("""<mujoco><compiler angle="radian"/><worldbody><geom type="plane" size="2 2 .1" pos="0.1 -0.2 0.02"/>
      <body pos="0.2 0.1 0.09" euler="0.17 -0.14 0.52"><freejoint/><geom type="box" size=".12 .06 .05"/>
        <body name="a" pos="0.15 0 0" euler="0 0.44 0">
          <joint name="h1" type="hinge" axis="0 1 0" range="-0.05 0.3" margin="0.1"/>
          <geom type="capsule" fromto="0 0 0 .2 0 0" size=".03"/>
          <body name="b" pos="0.2 0 0" euler="0 0.35 0">
            <joint name="h2" type="hinge" axis="0 0.6 0.8" frictionloss="0.2" range="-1 1"/>
            <geom type="sphere" size=".05" pos=".05 0 0"/>
          </body></body></body></worldbody>
      <equality><joint joint1="h2" joint2="h1" polycoef="0.01 0.3 0 0 0"/>
        <connect body1="b" body2="world" anchor="0.05 0.01 0"/></equality></mujoco>""")
    scenes = []
    for coupler in (SapOptions(), None):
        kw = {"coupler": coupler} if coupler else {}
        scene = polyphys.Scene(sim=SimOptions(dt=0.01, substeps=2, precision="64"), **kw)
        scene.add_entity(M.MJCF(file=str(xml)), Rigid())
        scene.build()
        scenes.append(next(s for s in scene.solvers if s.name == "rigid"))
    sap_solver, own = scenes
    d = sap_solver.data
    nan = float("nan")
    d.efc_J.fill_(nan)
    d.efc_pos.fill_(nan)
    d.efc_frictionloss.fill_(nan)
    d.efc_type.fill_(-7)
    d.efc_id.fill_(-7)
    span = d.efc_span.numpy()
    span[..., 0], span[..., 1] = 0, sap_solver.n_dofs
    d.efc_span.assign(span)
    sap_solver.substep_pre_coupling(0, sap_solver.layout.partitions[0])
    b = int(sap_solver.rigid_dynamics(sap_solver.layout.partitions[0]).n_rows.numpy()[0])
    own.forward()
    od = own.data
    n_own = int(od.nefc.numpy()[0])
    tp = od.efc_type.numpy()[0, :n_own]
    keep = np.nonzero(tp < ConstraintType.CONTACT_FRICTIONLESS)[0]
    assert b == len(keep) and set(tp[keep].tolist()) == {ConstraintType.EQUALITY, ConstraintType.FRICTION,
                                                         ConstraintType.LIMIT}
    np.testing.assert_array_equal(d.efc_type.numpy()[0, :b], tp[keep])
    np.testing.assert_array_equal(d.efc_id.numpy()[0, :b], od.efc_id.numpy()[0, keep])
    np.testing.assert_allclose(d.efc_J.numpy()[0, :b], od.efc_J.numpy()[0, keep], rtol=0, atol=1e-14)
    np.testing.assert_allclose(d.efc_pos.numpy()[0, :b], od.efc_pos.numpy()[0, keep], rtol=0, atol=1e-14)
    np.testing.assert_array_equal(d.efc_frictionloss.numpy()[0, :b], od.efc_frictionloss.numpy()[0, keep])
    nc = int(d.ncon.numpy()[0])
    assert nc > 0 and int(d.nefc.numpy()[0]) == b + 3 * nc
    assert np.all(d.efc_type.numpy()[0, b:b + 3 * nc] == ConstraintType.CONTACT_ELLIPTIC)
    np.testing.assert_array_equal(d.con_efc_adr.numpy()[0, :nc], b + 3 * np.arange(nc))
    assert np.isfinite(d.efc_J.numpy()[0, :b + 3 * nc]).all()
