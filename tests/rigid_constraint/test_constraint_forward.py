"""RigidSolver.forward() as a fresh constraint query (docs/semantics.md §F1, issue 6): after a setter, scene.forward()
solves the contact forces at the current state without integrating (readback not stale, tagged with
the query time), and leaves everything the next step reads untouched — the warm start, the step's
impulse sums, qfrc_applied —, so a trajectory continues bit for bit whether or not forward() (or
get_state(), which calls it) ran. The query starts the solve from qacc_smooth, so it is a function of
the state alone: the same pose in a fresh scene gives the same forces bit for bit."""

import warnings

import numpy as np
import polyphys
import pytest
from polyphys import morphs
from polyphys.errors import PolyphysWarning
from polyphys.plugins.rigid import RigidOptions
from polyphys.plugins.rigid.materials import Rigid

DT = 0.01
CONES = ["elliptic", "pyramidal"]     # elliptic: the default resolution (signorini); pyramidal: convex


def _build(cone, substeps=2):
    """Two envs of a tilted box dropped on a plane with a ball on it (box–plane and ball–box contacts),
    float64, graph capture on (the default)."""
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=DT, substeps=substeps, gravity=(0, 0, -9.81), precision="64"),
                           rigid=RigidOptions(friction_cone=cone))
    box = scene.add_entity(morphs.Box(size=(0.3, 0.2, 0.1), pos=(0, 0, 0.2), euler=(8, 12, 20)), Rigid(), name="box")
    ball = scene.add_entity(morphs.Sphere(radius=0.04, pos=(0.02, 0.01, 0.32)), Rigid(rho=500.0), name="ball")
    scene.add_entity(morphs.Plane(), Rigid(), name="ground")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=2)
    return scene, box, ball


def _state(scene):
    return {k: a.numpy().copy() for k, a in scene.solver("rigid").state_arrays().items()}


def _assert_same(a, b, what):
    assert sorted(a) == sorted(b)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=f"{what}: {k}")


@pytest.mark.parametrize("cone", CONES)
def test_forward_does_not_change_the_next_steps(cone):
    """Two identical scenes, 25 steps (contacts active, warm start non-zero); in one, forward(),
    get_state() (which calls forward()) and a readback, then forward() again every 4th step; 20 more
    steps in both: every state array (warm start and impulse sums included) equal bit for bit after
    each step, and the contact readback of each step too. forward() itself keeps the warm start and
    the step's impulse sums, and its readback is the query's (not stale, query_at = now, solved_at NaN)."""
    a, box_a, _ = _build(cone)
    b, box_b, _ = _build(cone)
    for _ in range(25):
        a.step()
        b.step()
    st = b.solver("rigid").data
    assert (st.ncon.numpy() >= 2).all() and np.abs(st.qacc_warmstart.numpy()).max() > 0
    before = _state(b)
    w0 = box_b.get_links_net_contact_wrench()
    c0 = box_b.get_contacts()
    assert not c0["stale"].any() and np.allclose(c0["solved_at"], 25 * DT - DT / 2)
    b.forward()
    c1 = box_b.get_contacts()
    w1 = box_b.get_links_net_contact_wrench()
    assert not c1["stale"].any() and np.allclose(c1["query_at"], 25 * DT) and np.isnan(c1["solved_at"]).all()
    assert np.isnan(c0["query_at"]).all()
    # the query solved at the end state (new forces), the step's impulse sums and the state are kept
    assert not np.array_equal(c1["force_a"], c0["force_a"])
    assert not np.array_equal(w1["force"], w0["force"])
    for k in ("impulse_force", "impulse_torque"):
        np.testing.assert_array_equal(w1[k], w0[k], err_msg=k)
    _assert_same(before, _state(b), "forward()")
    b.get_state()
    _assert_same(before, _state(b), "get_state()")
    for i in range(20):
        if i % 4 == 0:
            b.forward()
        a.step()
        b.step()
        _assert_same(_state(a), _state(b), f"step {26 + i}")
        ca, cb = box_a.get_contacts(), box_b.get_contacts()
        for k in ("force_a", "wrench", "solved_at", "query_at", "stale", "valid_mask"):
            np.testing.assert_array_equal(ca[k], cb[k], err_msg=f"step {26 + i}: {k}")


def _pose(theta_deg, depth, x):
    """qpos of the box tilted by theta about x with its lowest edge `depth` into the plane, and of the
    ball on its top face overlapping it by `depth`."""
    th = np.radians(theta_deg)
    zc = 0.1 * abs(np.sin(th)) + 0.05 * np.cos(th) - depth
    c = np.array([x, 0.0, zc])
    box = np.r_[c, np.cos(th / 2), np.sin(th / 2), 0.0, 0.0]
    top = np.array([0.0, -np.sin(th), np.cos(th)])                 # the top face's normal
    ball = np.r_[c + top * (0.05 + 0.04 - depth), 1.0, 0.0, 0.0, 0.0]
    return box, ball


def _set(scene, box, ball):
    qb, ql = zip(_pose(10.0, 1e-3, 0.0), _pose(-6.0, 5e-4, 0.3))
    box.set_qpos(np.array(qb))
    ball.set_qpos(np.array(ql))
    box.set_dofs_velocity(np.array([[0.1, 0.0, -0.2, 0.5, 0.0, 0.0], [0.0, -0.1, -0.1, 0.0, 0.3, 0.0]]))
    ball.set_dofs_velocity(np.array([[0.0, 0.0, -0.1, 0.0, 0.0, 0.0], [0.05, 0.0, 0.0, 0.0, 0.0, 1.0]]))


READ = ("geom_a", "geom_b", "position", "normal", "penetration", "force_a", "torque_a", "wrench", "valid_mask")


@pytest.mark.parametrize("cone", CONES)
def test_forward_after_set_qpos_equals_a_fresh_scene(cone):
    """After 25 steps, set_qpos/set_dofs_velocity put the box (tilted, one edge 1 mm / 0.5 mm deep,
    moving) and the ball (overlapping the box) at a new state: the readback is stale until
    scene.forward(), then it is the query's — bit for bit the forces of the same state set in a fresh
    scene (contacts, 6D wrenches, per-link net wrench), tagged with each scene's own time. One step
    (1 substep) from that state solves the same problem warm-started: its forces agree with the
    query's to the solve tolerance (1e-9 scaled: bound 1e-6 of the largest force)."""
    a, box_a, ball_a = _build(cone, substeps=1)
    for _ in range(25):
        a.step()
    _set(a, box_a, ball_a)
    assert box_a.get_contacts()["stale"].all() and ball_a.get_contacts()["stale"].all()
    a.forward()
    b, box_b, ball_b = _build(cone, substeps=1)
    _set(b, box_b, ball_b)
    b.forward()
    for ea, eb in ((box_a, box_b), (ball_a, ball_b)):
        ca, cb = ea.get_contacts(), eb.get_contacts()
        assert not ca["stale"].any() and not cb["stale"].any()
        np.testing.assert_allclose(ca["query_at"], 25 * DT)
        np.testing.assert_array_equal(cb["query_at"], 0.0)
        assert np.isnan(ca["solved_at"]).all() and np.isnan(cb["solved_at"]).all()
        for k in READ:
            np.testing.assert_array_equal(ca[k], cb[k], err_msg=k)
        wa, wb = ea.get_links_net_contact_wrench(), eb.get_links_net_contact_wrench()
        for k in ("force", "torque"):
            np.testing.assert_array_equal(wa[k], wb[k], err_msg=k)
    cb = box_b.get_contacts()
    # contacts on the box's lower edge (2 corners) and with the ball, all pushing (F_n > 0)
    assert (cb["valid_mask"].sum(axis=1) >= 3).all()
    fz = np.where(cb["valid_mask"], cb["wrench"][..., 0], 0.0)
    assert (fz >= 0).all() and (fz.sum(axis=1) > 9.81).all()
    q_box = box_b.get_contacts()
    b.step()
    s_box = box_b.get_contacts()
    assert np.allclose(s_box["solved_at"], 0.0) and not s_box["stale"].any()
    np.testing.assert_array_equal(s_box["valid_mask"], q_box["valid_mask"])
    scale = np.abs(q_box["wrench"]).max()
    print(f"[measured] {cone}: step vs query {np.abs(s_box['wrench'] - q_box['wrench']).max() / scale:.1e} of max|f|")
    np.testing.assert_allclose(s_box["wrench"], q_box["wrench"], rtol=0, atol=1e-6 * scale)
    # reset refreshes without solving (stale until forward(); the initial pose has no contact)
    b.reset()
    assert box_b.get_contacts()["stale"].all()
    b.forward()
    c = box_b.get_contacts()
    assert not c["stale"].any() and np.array_equal(c["valid_mask"], np.zeros_like(c["valid_mask"]))
