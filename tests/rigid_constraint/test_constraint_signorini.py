"""Signorini contact resolution (docs/semantics.md §R2/§R8, docs/constraint.md "Contact resolution"): the
default for friction_cone="elliptic" + constraint_solver="Newton" outside MuJoCo-compatible mode. No MuJoCo
reference exists (MuJoCo has no signorini), so it is validated on physics: weight carried, penetration bounded, complementarity
(no adhesive normal force, friction inside μ·f_n), stick/slide on inclines against Coulomb's law,
the round (elliptic) cone under a diagonal push, and convergence within the iteration cap."""

import warnings

import numpy as np
import polyphys
import pytest
from polyphys import morphs
from polyphys.errors import OptionError, PolyphysWarning
from polyphys.plugins.rigid import RigidOptions
from polyphys.plugins.rigid.materials import Rigid

G = 9.81
HALF = 0.1                   # box half edge; Rigid() density 1000 → m = 8 kg
MASS = 8.0
CAP = 25                     # default iteration cap (docs/semantics.md §R2)
B = 2 / (0.95 * 0.02)        # reference damping of the default sol_params (timeconst .02 > 2h, dmax .95)


def _scene(gravity=(0, 0, -G), mu=None, z0=HALF - 1e-3, dt=0.005, precision="64", **opts):
    opts.setdefault("friction_cone", "elliptic")
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=dt, gravity=gravity, precision=precision),
                           rigid=RigidOptions(**opts))
    box = scene.add_entity(morphs.Box(size=(2 * HALF,) * 3, pos=(0, 0, z0)), Rigid(friction=mu), name="box")
    scene.add_entity(morphs.Plane(), Rigid(friction=mu), name="ground")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=0)
    return scene, box, scene.solver("rigid").data


def _wrenches(scene):
    s = scene.solver("rigid")
    s._wrench_sync()            # a one-substep step leaves the wrench stage to the first read (docs/rigid.md)
    st = s.data
    n = int(st.ncon.numpy()[0])
    return st.con_wrench.numpy()[0, :n]


def test_resolution_rules_and_option_errors():
    """docs/constraint.md's resolution table and docs/semantics.md §R2's errors, each naming the field."""
    r = RigidOptions
    o = r(friction_cone="elliptic")
    assert (o.effective_resolution(), o.effective_impratio()) == ("signorini", 100.0)
    assert r(friction_cone="elliptic", constraint_solver="CG").effective_resolution() == "convex"
    assert r().effective_resolution() == "convex"
    assert r(friction_cone="elliptic", mujoco_compatible=True).effective_resolution() == "convex"
    assert r(friction_cone="elliptic", contact_resolution="convex").effective_resolution() == "convex"
    assert r(friction_cone="elliptic", contact_resolution="signorini").effective_resolution() == "signorini"
    with pytest.raises(OptionError, match="contact_resolution='signorini' needs friction_cone='elliptic'"):
        r(contact_resolution="signorini")
    with pytest.raises(OptionError, match="contact_resolution='signorini' needs .* constraint_solver='Newton'"):
        r(friction_cone="elliptic", constraint_solver="CG", contact_resolution="signorini")
    with pytest.raises(OptionError, match="contact_resolution='signorini' with mujoco_compatible=True"):
        r(friction_cone="elliptic", contact_resolution="signorini", mujoco_compatible=True)
    with pytest.raises(OptionError, match="contact_resolution"):
        RigidOptions(contact_resolution="exact")
    with pytest.raises(OptionError, match="noslip_iterations=3 with friction_cone='elliptic'"):
        r(friction_cone="elliptic", noslip_iterations=3)


def test_box_rests_and_carries_its_weight():
    """A box dropped 4 cm onto a plane (elliptic, signorini, impratio 100), 200 steps of 5 ms: after
    settling Σ normal force = m·g within 0.5 % (docs/constraint.md's bound; measured ~1e-12), each corner m·g/4, no
    tangential force, the penetration bounded (soft contact, default sol_params: ~0.1 mm; bound
    2 mm) and steady. Complementarity at every step: no adhesive normal force (f_n ≥ 0) and
    ‖f_t‖ ≤ μ·f_n (the converged latched load equals f_n; slack 1e-6 relative). Convergence: every
    solve stops on its own test below the cap (measured ≤ 6 iterations)."""
    scene, box, st = _scene(z0=HALF + 0.04)
    mu = None
    z, its = [], []
    for _ in range(200):
        scene.step()
        z.append(float(box.get_pos()[2]))
        its.append(int(st.solver_niter.numpy()[0]))
        w = _wrenches(scene)
        if len(w):
            mu = st.con_friction.numpy()[0, :len(w), 0]
            assert np.all(w[:, 0] >= 0)
            assert np.all(np.hypot(w[:, 1], w[:, 2]) <= mu * w[:, 0] * (1 + 1e-6) + 1e-9)
    assert mu is not None
    w = _wrenches(scene)
    assert len(w) == 4
    assert w[:, 0].sum() == pytest.approx(MASS * G, rel=5e-3)
    np.testing.assert_allclose(w[:, 0], MASS * G / 4, rtol=5e-3)
    np.testing.assert_allclose(w[:, 1:3], 0, atol=1e-6)
    pen = HALF - np.array(z[-50:])
    assert np.all(pen > 0) and np.all(pen < 2e-3)
    assert np.ptp(pen) < 1e-9
    assert max(its) < CAP
    assert st.solver_stat.numpy()[0, 1] < scene.solver("rigid").model.opt.tolerance


@pytest.mark.parametrize("precision", ["32"])
def test_box_rests_float32(precision):
    """The same rest in float32 (tolerance 1e-6): Σ normal force = m·g within 0.5 %."""
    scene, box, st = _scene(precision=precision)
    for _ in range(100):
        scene.step()
    w = _wrenches(scene)
    assert w[:, 0].sum() == pytest.approx(MASS * G, rel=5e-3)
    assert int(st.solver_niter.numpy()[0]) < CAP


def _incline(deg, mu, steps=200, **opts):
    th = np.deg2rad(deg)
    scene, box, st = _scene(gravity=(G * np.sin(th), 0, -G * np.cos(th)), mu=mu, **opts)
    its, ratio, last = [], 0.0, 0.0
    for _ in range(steps):
        scene.step()
        its.append(int(st.solver_niter.numpy()[0]))
        w = _wrenches(scene)
        assert np.all(w[:, 0] >= 0)                                   # no adhesion
        ft = np.hypot(w[:, 1], w[:, 2])
        ratio = max(ratio, float((ft / np.maximum(mu * w[:, 0], 1e-300)).max()))
        last = float(np.hypot(w[:, 1].sum(), w[:, 2].sum()) / (mu * w[:, 0].sum()))
    return box, st, its, ratio, last


def test_incline_sticks_at_20_and_slides_at_35_degrees():
    """μ = 0.5 (both materials; default mode mixes by max). 20°: tan 20° = 0.36 < μ → sticks; the
    only motion is the creep of the soft friction rows: at steady creep (a = 0) each sticking block
    gives f_t = −D_t·(J a − aref) = −B·v/R_t, so 4·B·v/R_t = m·g·sinθ ⇒ v = m·g·sinθ·R_t/(4B), R_t
    the friction-row regularization the stage built (= R_n/impratio); bound 2× that (measured
    creep ~1e-5 m/s, about 1.0× the estimate). 35°: tan 35° = 0.70 > μ → slides; after 1 s the
    displacement is within 3 % of g(sinθ − μcosθ)t²/2 (measured +0.4 %), with ‖f_t‖ = μ·f_n on
    the sliding corners (ratio 1 within 1e-6) and never above. Iterations stay below the cap."""
    box, st, its, ratio, last = _incline(20, 0.5)
    v = float(np.asarray(box.get_dofs_velocity())[0])
    rt = float(st.efc_R.numpy()[0, 1])
    assert st.efc_type.numpy()[0, 0] == 5 and st.efc_dim.numpy()[0, 0] == 3
    v_est = MASS * G * np.sin(np.deg2rad(20)) * rt / (4 * B)
    assert 0 <= v < 2 * v_est
    assert float(box.get_pos()[0]) < 2 * v_est * 1.0 + 1e-3          # creep over 1 s + settling
    # per corner never outside the cone; the uphill corners carry less load (the tangential pull
    # tilts the load distribution) and saturate, the box as a whole holds: |Σf_t| < μ·Σf_n
    assert ratio <= 1 + 1e-6 and last < 0.8 and max(its) < CAP
    box, st, its, ratio, last = _incline(35, 0.5)
    th = np.deg2rad(35)
    expect = 0.5 * G * (np.sin(th) - 0.5 * np.cos(th)) * 1.0 ** 2
    assert float(box.get_pos()[0]) == pytest.approx(expect, rel=0.03)
    assert ratio == pytest.approx(1.0, abs=1e-6) and last == pytest.approx(1.0, abs=1e-6)   # all corners slide
    assert max(its) < CAP


def test_round_cone_holds_a_diagonal_push_the_pyramid_does_not():
    """A horizontal push of 0.8·μ·m·g at 45° to the contact tangent axes (gravity tilted, μ = 0.5).
    The elliptic cone (signorini) holds up to μ·f_n in every direction: the box sticks (creep as on
    the incline, bound 2× the estimate). The pyramid's limit along the diagonal is μ·f_n/√2 =
    0.71·μ·f_n < 0.8·μ·f_n: the box slides with acceleration ≳ (0.8 − 1/√2)·μ·g = 0.45 m/s²
    (the pyramid's regularized edges let it go slightly faster), so after 1 s it has moved more
    than 0.15 m. Both along the diagonal."""
    push = 0.8 * 0.5 * G
    grav = (push / np.sqrt(2), push / np.sqrt(2), -G)
    scene, box, st = _scene(gravity=grav, mu=0.5)
    for _ in range(200):
        scene.step()
    p = np.asarray(box.get_pos())[:2]
    rt = float(st.efc_R.numpy()[0, 1])
    v_est = MASS * push * rt / (4 * B)
    assert np.linalg.norm(p) < 2 * v_est + 1e-3
    assert np.linalg.norm(np.asarray(box.get_dofs_velocity())[:2]) < 2 * v_est
    assert int(st.solver_niter.numpy()[0]) < CAP
    scene, box, st = _scene(gravity=grav, mu=0.5, friction_cone="pyramidal")
    for _ in range(200):
        scene.step()
    p = np.asarray(box.get_pos())[:2]
    assert np.linalg.norm(p) > 0.15
    assert p[0] == pytest.approx(p[1], rel=1e-3)


def _state(scene, k):
    for _ in range(k):
        scene.step()
    return {n: a.numpy().copy() for n, a in scene.solver("rigid").state_arrays().items()}


def _tilted(n_envs, capture=True, threads=None):
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, gravity=(0, 0, -G), precision="64",
                                                   graph_capture=capture, cpu_threads=threads),
                           rigid=RigidOptions(friction_cone="elliptic"))
    scene.add_entity(morphs.Box(size=(2 * HALF,) * 3, pos=(0, 0, 0.25), euler=(5, 10, 0)), Rigid(), name="box")
    scene.add_entity(morphs.Plane(), Rigid(), name="ground")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=n_envs)
    return scene


def test_signorini_capture_partitions_and_checkpoint_bit_exact(tmp_path):
    """A tilted box landing (signorini path): captured two-partition stepping equals uncaptured
    single-thread stepping bit for bit, and a checkpoint taken mid-contact continues bit-exactly
    (the latched loads are scratch, rebuilt from the warm start in every solve)."""
    a = _tilted(2, capture=True, threads=2)
    b = _tilted(2, capture=False, threads=1)
    sa, sb = _state(a, 30), _state(b, 30)
    for n in sa:
        np.testing.assert_array_equal(sa[n], sb[n], err_msg=n)
    assert int(a.solver("rigid").data.ncon.numpy()[0]) > 0
    p = a.save_checkpoint(tmp_path / "mid")
    ref = _state(a, 15)
    a.load_checkpoint(p)
    again = _state(a, 15)
    for n in ref:
        np.testing.assert_array_equal(ref[n], again[n], err_msg=n)


@pytest.mark.parametrize("impratio,condim", [(1.0, 3), (30.0, 6), (100.0, 4)])
def test_signorini_fixed_point_certificate_at_a_frozen_state(impratio, condim):
    """MuJoCo's frozen articulated scene (free box sliding into the floor, ball, arm at its limits
    with frictionloss, connect/weld/joint equalities; random velocities), elliptic rows as MuJoCo
    builds them, solved cold from qacc_smooth with the signorini kernel (tolerance 1e-12). An
    independent numpy check of the fixed point it must reach: with ℓ = max(0, −D_n·x_n) at the
    returned qacc (x = J·qacc − aref), every force follows the model — normal −D_n·x_n ≥ 0, each
    friction block −D·e if D‖e‖ ≤ μ_b·ℓ else −μ_b·ℓ·e/‖e‖, equality/limit/frictionloss rows as
    usual — to 1e-9 of the largest force, and the gradient M(a − a₀) − Jᵀf vanishes (scaled by
    1/trace M: < 1e-10). No force leaves its cone. Convergence: below the 100 cap (measured 44-51
    iterations cold; 37-40 at tolerance 1e-9 — the latched load converges linearly, ~0.5 per
    iteration here; warm-started scenes need 1-6), with 1-3 halved load changes on the way."""
    mujoco = pytest.importorskip("mujoco")
    import mjscenes as S
    m, d = S.make(cone="elliptic", impratio=impratio, condim=condim)
    st = S.solve_with_mj_inputs(m, d, solver="Newton", tolerance=1e-12, iterations=100, ls_tolerance=1e-10,
                                resolution="signorini")
    nv, n = m.nv, d.nefc
    J = d.efc_J.reshape(n, nv)
    a = st.qacc_warmstart.numpy()[0]
    M = np.zeros((nv, nv))
    mujoco.mj_fullM(m, d, M)
    x = J @ a - d.efc_aref
    D = d.efc_D
    f = np.zeros(n)
    i = 0
    ncone = 0
    while i < n:
        t = d.efc_type[i]
        if t == mujoco.mjtConstraint.mjCNSTR_CONTACT_ELLIPTIC:
            c = d.contact[d.efc_id[i]]
            ell = max(0.0, -D[i] * x[i])
            f[i] = ell
            b = 1
            while b < c.dim:
                sz = 2 if (b == 1 and c.dim >= 3) or b == 4 else 1
                e = x[i + b:i + b + sz]
                r = c.friction[b - 1] * ell
                en = np.linalg.norm(e)
                f[i + b:i + b + sz] = -D[i + b] * e if D[i + b] * en <= r else -r * e / en
                b += sz
            i += c.dim
            ncone += 1
        else:
            if t == mujoco.mjtConstraint.mjCNSTR_EQUALITY:
                f[i] = -D[i] * x[i]
            elif t == mujoco.mjtConstraint.mjCNSTR_FRICTION_DOF:
                fl = d.efc_frictionloss[i]
                f[i] = np.clip(-D[i] * x[i], -fl, fl)
            elif x[i] < 0:
                f[i] = -D[i] * x[i]
            i += 1
    assert ncone >= 3
    got = st.efc_force.numpy()[0, :n]
    np.testing.assert_allclose(got, f, atol=1e-9 * np.abs(f).max())
    g = M @ (a - d.qacc_smooth) - J.T @ f
    assert np.linalg.norm(g) / np.trace(M) < 1e-10
    i = 0
    while i < n:
        if d.efc_type[i] == mujoco.mjtConstraint.mjCNSTR_CONTACT_ELLIPTIC:
            c = d.contact[d.efc_id[i]]
            assert got[i] >= 0
            assert np.linalg.norm(got[i + 1:i + 3]) <= c.friction[0] * got[i] * (1 + 1e-9) + 1e-12
            i += c.dim
        else:
            i += 1
    assert int(st.solver_niter.numpy()[0]) < 100
    assert int(st.solver_nhalf.numpy()[0]) >= 1          # the oscillation guard was exercised here


ROLLING_BALL = """<mujoco><worldbody>
  <geom name="floor" type="plane" size="5 5 0.1"/>
  <body name="ball" pos="0 0 0.0999"><freejoint/>
    <geom type="sphere" size="0.1" mass="4" condim="6" friction="1 0.005 0.01"/></body>
</worldbody></mujoco>"""


def test_rolling_resistance_stops_a_rolling_ball(tmp_path):
    """condim 6 (sliding, torsional and rolling blocks): a solid ball (r = 0.1 m) rolling at 1 m/s
    on a plane with rolling friction μ_r = 0.01 m. The rolling block saturates at μ_r·ℓ, a torque
    μ_r·m·g against the roll, the sliding block sticks (no slip): deceleration
    a = μ_r·g/(r·(1 + 2/5)) = 0.70 m/s², so it stops after v₀²/2a = 0.714 m at t = 1.43 s and then
    stays (the rolling block sticks). Within 3 % (measured −0.5 %, the soft contact's rolling
    rows), final speed < 1e-6 m/s, iterations below the cap (measured ≤ 4)."""
    path = tmp_path / "ball.xml"
    path.write_text(ROLLING_BALL)
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.005, gravity=(0, 0, -G), precision="64"),
                           rigid=RigidOptions(friction_cone="elliptic"))
    ball = scene.add_entity(morphs.MJCF(file=str(path)), Rigid())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=0)
    st = scene.solver("rigid").data
    assert scene.solver("rigid").options.effective_resolution() == "signorini"
    v0, r = 1.0, 0.1
    ball.set_dofs_velocity(np.array([v0, 0, 0, 0, v0 / r, 0]))     # rolling without slip
    its = []
    for _ in range(400):
        scene.step()
        its.append(int(st.solver_niter.numpy()[0]))
    assert st.efc_dim.numpy()[0, 0] == 6
    a = 0.01 * G / (r * 1.4)
    assert float(np.asarray(ball.get_qpos())[0]) == pytest.approx(v0 ** 2 / (2 * a), rel=0.03)
    assert np.abs(np.asarray(ball.get_dofs_velocity())[:3]).max() < 1e-6
    assert max(its) < CAP
