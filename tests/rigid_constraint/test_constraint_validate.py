"""Issue 6 "Validate" checks through the rigid solver's own path (scene → collision → contact
parameters → rows → solve), as opposed to the standalone stage fed with MuJoCo's inputs
(test_constraint_mujoco.py). Every MuJoCo comparison names its cone, contact_resolution (always
"convex": MuJoCo-compatible mode) and impratio. docs/constraint.md "Validation" lists the measured
numbers."""

import warnings

import numpy as np
import polyphys
import pytest
from polyphys import morphs
from polyphys.errors import PolyphysWarning
from polyphys.plugins.rigid import RigidOptions
from polyphys.plugins.rigid.materials import Rigid

mujoco = pytest.importorskip("mujoco")

import mjscenes as S  # noqa: E402

G = 9.81

# (cone, impratio, condim of the box and the arm's forearm; the ball has condim 6): the cases of
# test_constraint_mujoco.py — sliding, torsional and rolling rows in both cones
CASES = [("pyramidal", 1.0, 3), ("pyramidal", 5.0, 6), ("elliptic", 1.0, 3), ("elliptic", 30.0, 6),
         ("elliptic", 1.0, 4), ("elliptic", 100.0, 1)]

# MuJoCo efc_type → polyphys efc_type (equality, frictionloss, limit, frictionless, pyramidal, elliptic)
MJ2PP = {0: 0, 1: 1, 3: 2, 5: 3, 6: 4, 7: 5}


def _build(xml_path, dt, cone, impratio, n_envs=0, **opts):
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=dt, gravity=(0, 0, -G), precision="64", graph_capture=False),
                           rigid=RigidOptions.mujoco(integrator="Euler", friction_cone=cone, impratio=impratio,
                                                     **opts))
    ent = scene.add_entity(morphs.MJCF(file=str(xml_path)), Rigid(), name="mj")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=n_envs)
    return scene, ent


def _best(i, cands, J_pp, tp_pp, J_mj, tp_mj, flip):
    best = (np.inf, -1, 1.0)
    for j in cands:
        if MJ2PP[int(tp_mj[j])] != tp_pp[i]:
            continue
        for sg in ((1.0, -1.0) if flip[j] else (1.0,)):
            err = np.abs(J_pp[i] - sg * J_mj[j]).max()
            if err < best[0]:
                best = (err, j, sg)
    assert best[1] >= 0, f"row {i} (type {tp_pp[i]}) has no MuJoCo counterpart"
    return best


def _match_rows(st, d, nv):
    """Map each polyphys row to MuJoCo's. Contacts come out of the two collision pipelines in
    different orders: they are paired by position (same narrowphase formulas: 1e-9 m), then the
    rows of a contact by their Jacobian. A contact's A/B may be swapped (normal and tangents flip
    with it, so the row Jacobians are unchanged); an elliptic tangent axis may have the opposite
    sign (its row Jacobian and force flip). Non-contact rows (equality, frictionloss, limit) are
    paired by Jacobian. Returns the MuJoCo row and the sign of each polyphys row and the largest
    Jacobian mismatch."""
    n = d.nefc
    J_pp, tp = st.efc_J.numpy()[0, :n], st.efc_type.numpy()[0, :n]
    J_mj, tp_mj = d.efc_J.reshape(n, nv), d.efc_type
    flip = np.zeros(n, bool)
    rows_mj = {}
    for c in range(d.ncon):
        a, k = d.contact[c].efc_address, (d.efc_type[d.contact[c].efc_address] == 7)
        dim = d.contact[c].dim
        cnt = dim if k else (2 * (dim - 1) if dim > 1 else 1)
        rows_mj[c] = list(range(a, a + cnt))
        if k:
            flip[a + 1:a + cnt] = True
    nc = int(st.ncon.numpy()[0])
    pos = st.con_pos.numpy()[0, :nc]
    adr = st.con_efc_adr.numpy()[0, :nc]
    mj_pos = np.array([d.contact[c].pos for c in range(d.ncon)]).reshape(-1, 3)
    owner = {}                                   # polyphys contact row → MuJoCo contact
    for c in range(nc):
        dist = np.abs(mj_pos - pos[c]).max(axis=1)
        cm = int(np.argmin(dist))
        assert dist[cm] < 1e-9, f"contact {c} at {pos[c]} has no MuJoCo counterpart"
        for r in range(adr[c], adr[c] + len(rows_mj[cm])):
            owner[r] = cm
    contact_rows = {r for rs in rows_mj.values() for r in rs}
    free_other = set(range(n)) - contact_rows
    out, worst = [], 0.0
    for i in range(n):
        cands = set(rows_mj[owner[i]]) if i in owner else free_other
        err, j, sg = _best(i, cands, J_pp, tp, J_mj, tp_mj, flip)
        worst = max(worst, err)
        (rows_mj[owner[i]].remove(j) if i in owner else free_other.discard(j))
        out.append((j, sg))
    return out, worst


@pytest.mark.parametrize("cone,impratio,condim", CASES)
def test_frozen_state_through_the_solver_matches_mujoco(cone, impratio, condim, tmp_path):
    """The contact model at a frozen state, through RigidSolver: the articulated scene of mjscenes.py
    (free box and ball on the floor, an arm at two joint limits with frictionloss, connect/weld/joint
    equalities) imported from the same MJCF file, MuJoCo-compatible mode, float64, convex resolution,
    the case's cone and impratio, both solvers at tolerance 1e-12 (MuJoCo: 1000 iterations; polyphys
    the same). Same qpos and qvel; one polyphys step solves at exactly that state (the solve precedes
    the integration), MuJoCo's mj_forward solves the same problem. The regularized convex problem has
    one minimizer, so the constraint forces row by row (rows matched by their Jacobian) agree to the
    solve tolerance: the issue's bound 1e-6·(1 + max|f|) (measured ≤ 1e-9). Row Jacobians, aref and R
    agree to float64 rounding of the same formulas (1e-9; measured ~1e-13)."""
    m, d = S.make(cone=cone, impratio=impratio, condim=condim)
    path = tmp_path / "articulated.xml"
    path.write_text(S.ARTICULATED.format(cone=cone, impratio=impratio, condim=condim, condim_ball=6,
                                         solref="0.02 1").strip())
    scene, ent = _build(path, float(m.opt.timestep), cone, impratio, tolerance=1e-12, iterations=1000,
                        ls_iterations=100, ls_tolerance=1e-6)
    assert (ent.n_qs, ent.n_dofs) == (m.nq, m.nv)
    s = scene.solver("rigid")
    st = s.data
    st.efc_force.fill_(np.nan)                      # a stage that did not run shows up as NaN
    ent.set_qpos(d.qpos.copy())
    ent.set_dofs_velocity(d.qvel.copy())
    scene.step()
    n = int(st.nefc.numpy()[0])
    assert n == d.nefc and int(st.ncon.numpy()[0]) == d.ncon
    tp = st.efc_type.numpy()[0, :n]
    # every row kind is present: equality, frictionloss, limit, contact
    assert {0, 1, 2}.issubset(set(tp.tolist())) and ({4, 5, 3} & set(tp.tolist()))
    match, jerr = _match_rows(st, d, m.nv)
    assert jerr < 1e-9
    idx = np.array([j for j, _ in match])
    sg = np.array([s_ for _, s_ in match])
    assert sorted(idx.tolist()) == list(range(n))
    f = st.efc_force.numpy()[0, :n]
    f_mj = sg * d.efc_force[idx]
    scale = 1 + np.abs(d.efc_force).max()
    print(f"[measured] {cone}/{impratio}/{condim}: J {jerr:.1e}, force {np.abs(f - f_mj).max() / scale:.1e}, "
          f"qacc {np.abs(st.qacc_warmstart.numpy()[0] - d.qacc).max():.1e}")
    for t in sorted(set(tp.tolist())):              # per row type, so a failure names the type
        k = tp == t
        np.testing.assert_allclose(f[k], f_mj[k], rtol=0, atol=1e-6 * scale, err_msg=f"row type {t}")
    np.testing.assert_allclose(st.efc_R.numpy()[0, :n], d.efc_R[idx], rtol=1e-9)
    np.testing.assert_allclose(st.efc_aref.numpy()[0, :n], sg * d.efc_aref[idx], rtol=1e-9, atol=1e-9)
    # generalized constraint force and constrained acceleration (frame-independent)
    np.testing.assert_allclose(st.qfrc_constraint.numpy()[0], d.qfrc_constraint, rtol=0, atol=1e-6 * scale)
    np.testing.assert_allclose(st.qacc_warmstart.numpy()[0], d.qacc, rtol=0, atol=1e-6 * (1 + np.abs(d.qacc).max()))


# ------------------------------------------------------------------ default (Genesis) mode, analytic
HALF = 0.1                  # box half edge (m); Rigid() density 1000 → m = 8 kg
MASS = 8.0
MU = 0.5
B_REF = 2 / (0.95 * 0.02)   # reference-acceleration damping B = 2/(dmax·timeconst), default sol_params


def _box_on_plane(gravity, cone, mu=MU, dt=0.005, substeps=1, n_envs=0, **opts):
    kw = dict(friction_cone=cone, **opts)
    if cone == "elliptic":
        kw.setdefault("contact_resolution", "convex")
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=dt, substeps=substeps, gravity=gravity, precision="64"),
                           rigid=RigidOptions(**kw))
    box = scene.add_entity(morphs.Box(size=(2 * HALF,) * 3, pos=(0, 0, HALF - 1e-3)), Rigid(friction=mu), name="box")
    plane = scene.add_entity(morphs.Plane(), Rigid(friction=mu), name="ground")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=n_envs)
    return scene, box, plane


def _tangent_R(st):
    """R of the first tangential row of contact 0 (elliptic: R_t; pyramidal: the edge R)."""
    adr = int(st.con_efc_adr.numpy()[0, 0])
    return float(st.efc_R.numpy()[0, adr + 1])


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_incline_35_slides_20_sticks(cone):
    """A box on a plane with gravity tilted by θ (the plane stays z-up), μ = 0.5 on both materials
    (default mode: μ = max), 1 s at dt 0.005. θ = 35° (tan θ = 0.70 > μ): the box slides
    x(1 s) = g(sinθ − μcosθ)·t²/2 = 0.804 m within the issue's 3 % (measured 0.36 % pyramidal,
    0.19 % elliptic). θ = 20° (tan θ = 0.36 < μ): it sticks, i.e. only creeps by the soft friction.
    Creep bound from R_t: at steady creep (a = 0) each tangential row of the 4 contacts carries
    f = D·aref = −B·v/R (K = 0 on friction rows), so Σf = m·g·sinθ gives v ≈ m·g·sinθ·R_t/(4B)
    for the elliptic rows; the pyramidal edge pair gives f₊ − f₋ = −2Bμv/R per contact and
    μ·Σ(f₊ − f₋) = m·g·sinθ gives v ≈ m·g·sinθ·R/(8Bμ²). The estimate ignores the coupling of the
    rows through the box's rotation: bound 3× it (measured 1.1× elliptic, 1.6× pyramidal)."""
    out = {}
    for deg in (35, 20):
        th = np.deg2rad(deg)
        scene, box, _ = _box_on_plane((G * np.sin(th), 0, -G * np.cos(th)), cone)
        for k in range(200):
            scene.step()
            if k == 99:
                x_half = float(box.get_pos()[0])
        out[deg] = (float(box.get_pos()[0]), float(box.get_dofs_velocity()[0]),
                    _tangent_R(scene.solver("rigid").data), x_half)
    th = np.deg2rad(35)
    expect = 0.5 * G * (np.sin(th) - MU * np.cos(th))
    print(f"[measured] {cone} 35°: x = {out[35][0]:.5f} vs {expect:.5f} ({out[35][0] / expect - 1:+.2%})")
    assert out[35][0] == pytest.approx(expect, rel=0.03)
    x, v, R, x_half = out[20]
    th = np.deg2rad(20)
    v_est = (MASS * G * np.sin(th) * R / (4 * B_REF) if cone == "elliptic"
             else MASS * G * np.sin(th) * R / (8 * B_REF * MU ** 2))
    print(f"[measured] {cone} 20°: creep v = {v:.3e} m/s, estimate {v_est:.3e} ({v / v_est:.2f}×), "
          f"x(1 s) = {x:.2e}, x(1 s) - x(0.5 s) = {x - x_half:.2e}")
    assert 0 <= v < 3 * v_est
    assert 0 <= x - x_half < 3 * v_est * 0.5      # creep over the second half second
    # the whole displacement: the creep plus the slip while the normal force builds up at the start
    # (the box starts 1 mm deep; the contact responds within ~2 timeconst = 0.04 s, during which at
    # most g·sinθ accelerates it: ½·g·sinθ·(0.04 s)²)
    assert x < 3 * v_est * 1.0 + 0.5 * G * np.sin(th) * 0.04 ** 2


@pytest.mark.parametrize("cone", ["elliptic", "pyramidal"])
def test_cone_shape_push_at_45_degrees(cone):
    """A resting box pushed horizontally at its CoM along (t1 + t2)/√2 of the contact frame (45° to
    the tangent axes) with |F| = 0.8·μ·m·g for 1 s (default mode, dt 0.005); friction force = the
    window average (contact impulse over the last 0.5 s / 0.5 s). Elliptic cone
    (convex resolution, impratio 100): the limit is μ·f_n in every direction, so it sticks —
    creep below 3× v ≈ |F|·R_t/(4B) (derivation as the incline test; measured 1.1×), a total
    displacement below that plus the onset slip ½·0.8μg·(2 timeconst)², and the friction force read
    balances the push to 1 %. Pyramidal cone: along the diagonal the limit is μ·f_n/√2 =
    0.707·μ·m·g < |F|, so it slides along the diagonal, ½(0.8 − 1/√2)·μ·g·t² = 0.228 m in 1 s
    (measured 0.8 % more; MuJoCo 4 on the same setup 0.7 % more), with an average friction force of
    μ·m·g/√2 within 3 % (the issue's sliding tolerance). The sliding box rocks on its leading edge
    (contacts come and go, |ω| up to ~1 rad/s) in both engines: the pyramidal edges of the soft
    model also push along the normal."""
    scene, box, _ = _box_on_plane((0, 0, -G), cone)
    for _ in range(20):
        scene.step()
    st = scene.solver("rigid").data
    fr = st.con_frame.numpy()[0, 0]
    d = fr[1] + fr[2]
    d /= np.linalg.norm(d)
    assert abs(d[2]) < 1e-12                       # the tangents are horizontal (plane normal z)
    F = 0.8 * MU * MASS * G * d
    p0 = np.asarray(box.get_pos()).copy()
    imp = np.zeros(3)
    for k in range(200):
        box.apply_links_external_force(F[None], links_idx_local=[0])
        scene.step()
        if k == 99:
            p_half = np.asarray(box.get_pos()).copy()
        if k >= 100:        # contact impulse on the box over the last 0.5 s (Σ h·f, docs/semantics.md §F4)
            imp += box.get_links_net_contact_wrench()["impulse_force"][0]
    dp = np.asarray(box.get_pos()) - p0
    f_avg = imp / 0.5                               # window-average contact force
    f_t = f_avg - f_avg[2] * np.array([0, 0, 1.0])
    along = float(np.dot(dp, d))
    if cone == "elliptic":
        v_est = np.linalg.norm(F) * _tangent_R(st) / (4 * B_REF)
        v = float(np.dot(box.get_dofs_velocity()[:3], d))
        print(f"[measured] elliptic: creep {v:.2e} m/s (estimate {v_est:.2e}), friction {np.linalg.norm(f_t):.4f} N "
              f"vs push {np.linalg.norm(F):.4f} N")
        late = float(np.dot(np.asarray(box.get_pos()) - p_half, d))
        assert 0 <= v < 3 * v_est and 0 <= late < 3 * v_est * 0.5     # creep over the last 0.5 s
        # plus the onset transient: the friction rows take ~2 timeconst to respond to the push
        assert along < 3 * v_est * 1.0 + 0.5 * 0.8 * MU * G * 0.04 ** 2
        np.testing.assert_allclose(f_t, -F, rtol=0, atol=0.01 * np.linalg.norm(F))
    else:
        slide = 0.5 * (0.8 - 1 / np.sqrt(2)) * MU * G * 1.0 ** 2
        print(f"[measured] pyramidal: slid {along:.4f} m (rigid-cone {slide:.4f}), friction {np.linalg.norm(f_t):.4f} N "
              f"vs μ·m·g/√2 = {MU * MASS * G / np.sqrt(2):.4f} N")
        assert along == pytest.approx(slide, rel=0.03)          # it slides ...
        assert np.linalg.norm(dp - along * d) < 1e-3 * along    # ... along the diagonal
        assert np.linalg.norm(f_t) == pytest.approx(MU * MASS * G / np.sqrt(2), rel=0.03)
        assert np.dot(f_t, d) < 0


def _stack(dt, substeps, n=5):
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=dt, substeps=substeps, gravity=(0, 0, -G), precision="64"),
                           rigid=RigidOptions())
    boxes = [scene.add_entity(morphs.Box(size=(2 * HALF,) * 3, pos=(0, 0, HALF + 2 * HALF * i)), Rigid(), name=f"b{i}")
             for i in range(n)]
    scene.add_entity(morphs.Plane(), Rigid())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=0)
    return scene, boxes


@pytest.mark.parametrize("dt,substeps", [
    (0.01, 4),
    (0.01, 1),
])
def test_stack_of_five_boxes_stands_five_seconds(dt, substeps):
    """Five 0.2 m boxes stacked on a plane (default mode, pyramidal, approximate_implicitfast) for
    5 s: the stack stands — every box within 1 mm of its start horizontally and within 1 mm of its
    settled (t = 1 s) position at t = 5 s (the issue's drift bound; the soft contacts settle by
    ~0.5 mm per layer in the first steps), and at rest (|v| < 1e-3 m/s). Measured with 4 substeps:
    2.5e-4 m horizontal, 3e-5 m drift from 1 s to 5 s."""
    scene, boxes = _stack(dt, substeps)
    pos = lambda: np.array([np.asarray(b.get_pos()) for b in boxes])  # noqa: E731
    p0 = pos()
    for k in range(int(round(5 / dt))):
        scene.step()
        if k == int(round(1 / dt)) - 1:
            p1 = pos()
    p = pos()
    v = np.array([np.asarray(b.get_dofs_velocity()) for b in boxes])
    print(f"[measured] stack dt {dt} x{substeps}: xy {np.abs(p - p0)[:, :2].max():.2e} m, "
          f"drift 1→5 s {np.abs(p - p1).max():.2e} m, |v| {np.abs(v).max():.1e}")
    assert np.abs(p - p0)[:, :2].max() < 1e-3
    assert np.abs(p - p1).max() < 1e-3
    assert np.abs(v).max() < 1e-3


def test_aligned_box_on_box_contacts_are_four_distinct_corners():
    """Two aligned 0.2 m boxes, the upper one 0.2 mm into the lower one with a rotation and offset of
    ~1e-16 (the round-off a resting stack has): the face-face manifold is the 4 corners of the
    square. Sutherland–Hodgman clipping of two coincident squares emits each corner once or twice
    (a vertex on a clip plane within round-off), and `prune` then picks 4 of the candidates: the
    deepest, the farthest from it, the farthest from their line, and the one that makes the
    largest triangle with an edge of those three — a duplicate of the first corner makes the same
    area with the opposite edge as the missing corner does with the diagonal, and wins the tie on
    round-off. Fix (collision_driver.prune): score the 4th point by the area it adds to the hull,
    i.e. only edges it lies outside of (signed area against the triangle's normal), or drop
    candidates within a tolerance of an already selected point."""
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, gravity=(0, 0, -G), precision="64"), rigid=RigidOptions())
    a = scene.add_entity(morphs.Box(size=(2 * HALF,) * 3, pos=(0, 0, 0.7)), Rigid(), name="a")
    b = scene.add_entity(morphs.Box(size=(2 * HALF,) * 3, pos=(0, 0, 0.9)), Rigid(), name="b")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=0)
    a.set_pos([0, 0, 0.7])
    b.set_pos([-5.810325725119154e-17, 5.3125121563618916e-17, 0.9 - 2.07e-4])
    b.set_quat([1.0, 7.948910679832192e-16, -4.804459395182113e-16, -2.072657954706782e-16])
    c = scene.solver("rigid").get_raw_contacts()
    n = int(c["count"])
    assert n == 4
    corners = {tuple(np.round(p[:2], 9)) for p in c["position"][:n]}
    assert corners == {(sx * HALF, sy * HALF) for sx in (-1, 1) for sy in (-1, 1)}


def test_mixing_examples_through_the_scene():
    """docs/semantics.md §R5's examples on the contacts the solver actually builds (default mode): box μ .2 with
    friction_ratio 2, plane μ .6 with ratio .5 → μ = max(.4, .3) = .4; dt .006 with 3 substeps
    (h = .002) and timeconst .003 on both materials → mean .003, floored at 2h = .004 (the other
    sol_params averaged). Exact up to float64 rounding of a product (1e-15)."""
    sol = (0.003, 1.0, 0.9, 0.95, 0.001, 0.5, 2.0)
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.006, substeps=3, gravity=(0, 0, -G), precision="64"),
                           rigid=RigidOptions())
    scene.add_entity(morphs.Box(size=(2 * HALF,) * 3, pos=(0, 0, HALF - 1e-4)), Rigid(friction=0.2, sol_params=sol))
    scene.add_entity(morphs.Plane(), Rigid(friction=0.6, sol_params=(0.003, 1.0, 0.8, 0.99, 0.003, 0.3, 4.0)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=0)
    s = scene.solver("rigid")
    s.set_friction_ratio(2.0, geoms_idx=[0])
    s.set_friction_ratio(0.5, geoms_idx=[1])
    st = s.data
    st.con_friction.fill_(np.nan)
    st.con_sol.fill_(np.nan)
    scene.step()
    n = int(st.ncon.numpy()[0])
    assert n == 4
    np.testing.assert_allclose(st.con_friction.numpy()[0, :n, 0], 0.4, rtol=1e-15)
    np.testing.assert_allclose(st.con_sol.numpy()[0, :n], np.tile([0.004, 1.0, 0.85, 0.97, 0.002, 0.4, 3.0], (n, 1)),
                               rtol=1e-15)


def test_get_contacts_sides_masks_and_staleness():
    """get_contacts (docs/semantics.md §R9/§F2) with two boxes resting on the plane, batched (2 envs) and not:
    the normal points from B to A — the force on each box (force_a when it is A, force_b when B)
    pushes it up, and force_a·normal ≥ 0 —; valid_mask keeps exactly the 4 contacts of the asking
    box (the other box's 4 are masked, slots padded with −1/0); with_entity=other box → none;
    shapes (K,)/(n, K) with valid_mask only when batched or padded. After set_qpos the readback is
    flagged stale (the geometry is current, the forces are from the last step's solve) until the
    next step."""
    for n_envs in (0, 2):
        scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, gravity=(0, 0, -G), precision="64"),
                               rigid=RigidOptions())
        b1 = scene.add_entity(morphs.Box(size=(2 * HALF,) * 3, pos=(0, 0, HALF)), Rigid(), name="b1")
        b2 = scene.add_entity(morphs.Box(size=(2 * HALF,) * 3, pos=(1, 0, HALF)), Rigid(), name="b2")
        scene.add_entity(morphs.Plane(), Rigid(), name="ground")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PolyphysWarning)
            scene.build(n_envs=n_envs)
        for _ in range(50):
            scene.step()
        K = scene.solver("rigid").collision.max_contacts
        for box in (b1, b2):
            c = box.get_contacts(is_padded=True)
            lead = (n_envs,) if n_envs else ()
            assert c["force_a"].shape == lead + (K, 3) and c["valid_mask"].shape == lead + (K,)
            cb = {k: (v[None] if n_envs == 0 else v) for k, v in c.items() if isinstance(v, np.ndarray) and v.ndim}
            b = cb.__getitem__
            vm = b("valid_mask")
            assert vm.sum(axis=1).tolist() == [4] * max(n_envs, 1)
            for e in range(max(n_envs, 1)):
                v = vm[e]
                fa, fb, nrm, la = b("force_a")[e], b("force_b")[e], b("normal")[e], b("link_a")[e]
                f_box = np.where((la == box.link_start)[:, None], fa, fb)[v]
                assert np.all(f_box[:, 2] > 0)                       # support pushes the box up
                assert np.all(np.einsum("ij,ij->i", fa[v], nrm[v]) > 0)   # A is pushed along B→A
                np.testing.assert_allclose(f_box.sum(axis=0), [0, 0, MASS * G], rtol=0, atol=1e-6 * MASS * G)
                assert np.all(b("geom_a")[e][~v] == -1) and np.all(fa[~v] == 0)
            other = b2 if box is b1 else b1
            assert not np.atleast_2d(box.get_contacts(with_entity=other, is_padded=True)["valid_mask"]).any()
        plain = b1.get_contacts()
        if n_envs == 0:
            assert "valid_mask" not in plain and plain["force_a"].shape == (4, 3)
        else:
            assert plain["valid_mask"].shape == (2, K)
        assert not np.any(plain["stale"])
        q = np.asarray(b1.get_qpos()).copy()
        b1.set_qpos(q)
        assert np.all(b1.get_contacts()["stale"])
        scene.step()
        assert not np.any(b1.get_contacts()["stale"])


def test_forward_refreshes_contact_forces():
    """Issue 6: a readback after set_qpos is stale "until the next step or forward()"; docs/semantics.md §F1: a
    fresh query at the end state is a new forward() (tagged with the query time). After set_qpos
    moves the resting box 1 mm deeper, scene.forward() gives non-stale forces of the new state:
    the deeper soft contact pushes harder than m·g, by the amount the contact model says."""
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, gravity=(0, 0, -G), precision="64"), rigid=RigidOptions())
    box = scene.add_entity(morphs.Box(size=(2 * HALF,) * 3, pos=(0, 0, HALF)), Rigid(), name="box")
    scene.add_entity(morphs.Plane(), Rigid(), name="ground")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=0)
    for _ in range(100):
        scene.step()
    f_rest = box.get_contacts()["force_b"].sum(axis=0)[2]
    assert f_rest == pytest.approx(MASS * G, rel=5e-3)
    q = np.asarray(box.get_qpos()).copy()
    q[2] -= 1e-3
    box.set_qpos(q)
    scene.forward()
    c = box.get_contacts()
    assert not np.any(c["stale"])
    assert c["query_at"] == pytest.approx(scene.get_time()) and np.isnan(c["solved_at"])
    # the soft contact at zero velocity (default sol_params, docs/semantics.md §R6): each of the 4 corner rows
    # gives f = (aref − a_z)/R with aref = K·I·d, R = (1 − I)/(I·m) (W = 1/m), while the box
    # accelerates, m·a_z = Σf − m·g, so Σf = m·(g + K·I·d)·κ/(1 + κ), κ = 4I/(1 − I): not a static
    # spring — 1 mm deeper (I = dmax) gives 1.28·m·g (a first guess here expected > 1.5·m·g)
    from polyphys.plugins.rigid.constraint import DEFAULT_SOL_PARAMS, impedance
    tc, zeta, dmax = DEFAULT_SOL_PARAMS[0], DEFAULT_SOL_PARAMS[1], DEFAULT_SOL_PARAMS[3]
    d = float(np.mean(c["penetration"]))
    assert np.ptp(c["penetration"]) < 1e-9 and c["penetration"].shape == (4,)
    imp = impedance(DEFAULT_SOL_PARAMS, -d)
    kappa = 4 * imp / (1 - imp)
    expect = MASS * (G + imp * d / (dmax * tc * zeta) ** 2) * kappa / (1 + kappa)
    assert c["force_b"].sum(axis=0)[2] == pytest.approx(expect, rel=1e-6)      # solve tolerance 1e-9
    assert expect > 1.25 * MASS * G


BOX_XML = """<mujoco>
  <option timestep="0.005" integrator="Euler" cone="{cone}" impratio="{impratio}"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="box" pos="0 0 0.3" euler="3 2 0">
      <freejoint/>
      <geom type="box" size="0.1 0.1 0.1" mass="8"/>
    </body>
  </worldbody>
</mujoco>"""


@pytest.mark.parametrize("cone,impratio", [("elliptic", 1.0), ("elliptic", 10.0), ("pyramidal", 1.0)])
def test_box_resting_penetration_matches_mujoco(cone, impratio, tmp_path):
    """The same MJCF box (8 kg, slightly tilted) dropped on a plane, MuJoCo-compatible mode, Euler,
    float64, convex resolution, the case's cone and impratio, 2 s (MuJoCo at its default tolerance
    1e-8, polyphys the same): at rest Σ F_n = m·g within 0.5 % and the penetration within the
    issue's 10 % of MuJoCo's. Both solve the same problems, so the whole trajectory agrees to
    ~Σh²·Δf/m with Δf ≲ 1e-8·trace(M) (1e-8 m, as test_rigid_contact_forces.py derives)."""
    path = tmp_path / "box.xml"
    path.write_text(BOX_XML.format(cone=cone, impratio=impratio))
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    z_mj = []
    for _ in range(400):
        mujoco.mj_step(m, d)
        z_mj.append(float(d.qpos[2]))
    scene, ent = _build(path, 0.005, cone, impratio)
    z = []
    for _ in range(400):
        scene.step()
        z.append(float(np.asarray(ent.get_qpos())[2]))
    z, z_mj = np.array(z), np.array(z_mj)
    pen, pen_mj = HALF - z[-1], HALF - z_mj[-1]
    c = ent.get_contacts()
    fn = c["wrench"][:, 0].sum()
    print(f"[measured] {cone}/{impratio}: penetration {pen:.4e} vs MuJoCo {pen_mj:.4e}, "
          f"trajectory {np.abs(z - z_mj).max():.1e} m, ΣF_n/(m·g) - 1 = {fn / (MASS * G) - 1:.1e}")
    assert pen > 5e-5                              # resting in the soft contact (~0.1 mm)
    assert pen == pytest.approx(pen_mj, rel=0.1)
    np.testing.assert_allclose(z, z_mj, rtol=0, atol=1e-8)
    assert fn == pytest.approx(MASS * G, rel=5e-3)
