"""Parameter functions of the constraint stage: mixing rules (docs/semantics.md §R5), 2h floor, impedance/aref/R
(host reference functions vs MuJoCo's efc arrays), legalization warnings, option errors."""

import numpy as np
import pytest
from polyphys.errors import OptionError, PolyphysWarning
from polyphys.plugins.rigid import constraint as C

mujoco = pytest.importorskip("mujoco")

import mjscenes as S  # noqa: E402


def test_friction_mixing_spec_example():
    # docs/semantics.md §R5: A μ .2 ratio 2, B μ .6 ratio .5 → max(.4, .3) = .4 (not the mean, product or min)
    assert C.mix_friction(0.2, 0.6, 2.0, 0.5) == pytest.approx(0.4)
    # docs/semantics.md §R5: B ratio 1 → .6; both zero → the .01 floor
    assert C.mix_friction(0.2, 0.6, 2.0, 1.0) == pytest.approx(0.6)
    assert C.mix_friction(0.3, 0.2, 0.0, 0.0) == pytest.approx(0.01)
    # torsional/rolling the same way, componentwise
    np.testing.assert_allclose(C.mix_friction([0.2, 0.01, 0.0], [0.6, 0.002, 0.0], 2.0, 0.5),
                               [0.4, 0.02, 0.01])


def test_timeconst_floor_spec_example():
    # dt .006, substeps 3 → h .002; mixed timeconst .003 floored at 2h = .004
    h = 0.006 / 3
    sol = C.mix_sol_params((0.003, 1, .9, .95, .001, .5, 2), (0.003, 1, .9, .95, .001, .5, 2), h)
    assert sol[0] == pytest.approx(0.004)
    # docs/semantics.md §R5 (floor at 2h): dt .004, substeps 4 → .0015 raised to .002; substeps 8 → kept
    assert C.floor_timeconst((0.0015, 1), 0.001)[0] == pytest.approx(0.002)
    assert C.floor_timeconst((0.0015, 1), 0.0005)[0] == pytest.approx(0.0015)
    # componentwise mean, then the floor; direct (negative) parameters are not floored
    np.testing.assert_allclose(C.mix_sol_params((0.02, 1, .9, .95, .001, .5, 2), (0.04, 2, .8, .99, .003, .3, 4),
                                                0.001), (0.03, 1.5, .85, .97, .002, .4, 3))
    assert C.floor_timeconst((-1000.0, -10.0), 0.01)[0] == -1000.0


def test_mujoco_mixing_matches_mujoco():
    """mj_contactParam rules vs the contacts MuJoCo made: friction max, solmix-weighted solref/solimp."""
    import mujoco
    xml = """<mujoco><worldbody>
      <geom type="plane" size="1 1 .1" friction=".3 .01 .002" solref=".03 1.2" solimp=".8 .9 .002 .4 3" solmix="3"/>
      <body pos="0 0 .09"><freejoint/><geom type="sphere" size=".1" friction=".7 .005 .004"
        solref=".01 .8" solimp=".9 .99 .001 .6 2" solmix="1"/></body></worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    assert d.ncon == 1
    c = d.contact[0]
    f5, sol = C.mix_mujoco(m.geom_friction[0], m.geom_friction[1], np.r_[m.geom_solref[0], m.geom_solimp[0]],
                           np.r_[m.geom_solref[1], m.geom_solimp[1]], m.geom_solmix[0], m.geom_solmix[1])
    np.testing.assert_allclose(f5, c.friction, rtol=1e-15)
    np.testing.assert_allclose(sol, np.r_[c.solref, c.solimp], rtol=1e-14)
    # priority: the higher one's parameters outright
    f5p, solp = C.mix_mujoco([.3, .01, .002], [.7, .005, .004], np.arange(7.0) + 1, np.arange(7.0) + 2, 1, 1, 2, 0)
    np.testing.assert_allclose(f5p, [.3, .3, .01, .002, .002])
    np.testing.assert_allclose(solp, np.arange(7.0) + 1)


@pytest.mark.parametrize("cone,impratio", [("pyramidal", 1.0), ("elliptic", 7.0)])
def test_host_formulas_match_mujoco(cone, impratio):
    """impedance / ref_coefficients / contact_regularization (host) vs MuJoCo's efc_KBIP, efc_R, efc_aref."""
    m, d = S.make(cone=cone, impratio=impratio, condim=6)
    for i in range(d.nefc):
        if d.efc_type[i] in (6, 7) and (i == 0 or d.efc_id[i - 1] != d.efc_id[i]):
            c = d.contact[d.efc_id[i]]
            sol = C.floor_timeconst(np.r_[c.solref, c.solimp], m.opt.timestep)
            imp = C.impedance(sol, c.dist, c.includemargin)
            assert imp == pytest.approx(d.efc_KBIP[i, 2], rel=1e-13)
            k, b = C.ref_coefficients(sol)
            np.testing.assert_allclose([k, b], d.efc_KBIP[i, :2], rtol=1e-13)
            aref = C.reference_acceleration(sol, c.dist, d.efc_vel[i], c.includemargin)
            assert aref == pytest.approx(d.efc_aref[i], rel=1e-10, abs=1e-10)
            b1, b2 = m.geom_bodyid[c.geom]
            tran = m.body_invweight0[b1, 0] + m.body_invweight0[b2, 0]
            rot = m.body_invweight0[b1, 1] + m.body_invweight0[b2, 1]
            R = C.contact_regularization(sol, c.dist, c.includemargin, c.friction, c.dim, cone, impratio, tran, rot)
            np.testing.assert_allclose(R, d.efc_R[i:i + len(R)], rtol=1e-12)
            if cone == "elliptic":   # friction rows: K = 0, velocity term only
                assert C.reference_acceleration(sol, 0.0, d.efc_vel[i + 1], friction_row=True) == pytest.approx(
                    d.efc_aref[i + 1], rel=1e-12, abs=1e-12)


def test_direct_solref():
    """Negative solref = direct stiffness and damping: K = −tc/dmax², B = −ζ/dmax."""
    k, b = C.ref_coefficients((-2000.0, -30.0, .9, .95, .001, .5, 2))
    assert k == pytest.approx(2000 / .95 ** 2)
    assert b == pytest.approx(30 / .95)
    # standard: b has no dampratio, k has
    k, b = C.ref_coefficients((0.02, 0.5, .9, .95, .001, .5, 2))
    assert k == pytest.approx(1 / (.95 ** 2 * .02 ** 2 * .25))
    assert b == pytest.approx(2 / (.95 * .02))


def test_impedance_curve():
    sol = (0.02, 1, 0.5, 0.9, 0.01, 0.3, 3)
    assert C.impedance(sol, 0.0) == 0.5
    assert C.impedance(sol, -0.02) == 0.9           # beyond width: dmax
    # below mid: y = x^p / mid^(p-1); above: 1 - (1-x)^p / (1-mid)^(p-1); continuous at mid
    x = 0.2
    assert C.impedance(sol, -x * 0.01) == pytest.approx(0.5 + 0.4 * x ** 3 / 0.3 ** 2)
    lo, hi = C.impedance(sol, -0.3 * 0.01 + 1e-12), C.impedance(sol, -0.3 * 0.01 - 1e-12)
    assert lo == pytest.approx(hi, abs=1e-8)


def test_legalize_warns_with_effective_value():
    with pytest.warns(PolyphysWarning, match=r"sol_params.dmax=1.5 .* effective value 0.9999"):
        s = C.legalize_sol_params((0.02, 1, 0.9, 1.5, 0.001, 0.5, 2))
    assert s[3] == 0.9999
    with pytest.warns(PolyphysWarning) as rec:
        s = C.legalize_sol_params((-100.0, -10.0, 0.9, 0.95, 0.001, 0.5, 2))
    assert s[:2] == (0.02, 1.0)
    msgs = [str(r.message) for r in rec]
    assert any("timeconst=-100.0" in m and "effective value 0.02" in m for m in msgs)
    assert any("dampratio=-10.0" in m and "effective value 1.0" in m for m in msgs)
    with pytest.warns(PolyphysWarning, match="power"):
        assert C.legalize_sol_params((0.02, 1, 0.9, 0.95, 0.001, 0.5, 0.5))[6] == 1.0
    # MuJoCo-compatible mode keeps the direct parameterization
    assert C.legalize_sol_params((-100.0, -10.0, 0.9, 0.95, 0.001, 0.5, 2), compatible=True)[:2] == (-100.0, -10.0)
    with pytest.raises(OptionError, match="7 entries"):
        C.legalize_sol_params((0.02, 1))


def test_option_errors():
    from polyphys.plugins.rigid import RigidOptions
    for field, value in (("constraint_solver", "PGS"), ("friction_cone", "round"), ("iterations", 0),
                         ("impratio", 0)):
        with pytest.raises(OptionError, match=field):
            RigidOptions(**{field: value})
    assert RigidOptions().effective_tolerance("32") == 1e-6 and RigidOptions().effective_tolerance("64") == 1e-9
    assert RigidOptions.mujoco().effective_tolerance("64") == 1e-8
    assert RigidOptions(friction_cone="elliptic").effective_impratio() == 100
    assert RigidOptions().effective_impratio() == 1


def test_effective_solver_settings():
    """The settings the constraint stages run with (RigidOptions.effective_*, docs/semantics.md §R2/§R2a) and the
    Option struct the kernels read (model.py; timeconst floor 2h)."""
    from polyphys.plugins.rigid import RigidOptions
    from polyphys.plugins.rigid.model import _option
    o = RigidOptions()
    assert (o.constraint_solver, o.friction_cone, o.effective_impratio(), o.effective_tolerance("64"),
            o.effective_iterations(), o.effective_ls_iterations()) == ("Newton", "pyramidal", 1.0, 1e-9, 25, 50)
    opt = _option(o, "64", 0.002, (0, 0, -9.81))
    assert opt.tc_floor == pytest.approx(0.004) and not opt.warm_pick_lower and opt.stop_needs_gradient
    o = RigidOptions(friction_cone="elliptic", constraint_solver="CG")
    assert (o.effective_impratio(), o.effective_tolerance("32")) == (100.0, 1e-6)
    o = RigidOptions.mujoco(friction_cone="elliptic")
    assert (o.effective_impratio(), o.effective_tolerance("64"), o.effective_iterations()) == (1.0, 1e-8, 100)
    opt = _option(o, "32", 0.002, (0, 0, -9.81))
    assert opt.warm_pick_lower and not opt.stop_needs_gradient
    assert opt.tolerance == pytest.approx(1e-5, rel=1e-7)        # float32 struct field
    with pytest.raises(OptionError, match="noslip_iterations=3 with friction_cone='elliptic'"):
        RigidOptions(friction_cone="elliptic", noslip_iterations=3)
    with pytest.raises(OptionError, match="needs friction_cone='elliptic' and constraint_solver='Newton'"):
        RigidOptions(contact_resolution="signorini")
    assert RigidOptions(friction_cone="elliptic").effective_resolution() == "signorini"
    o = RigidOptions(friction_cone="elliptic", contact_resolution="convex")
    assert o.effective_impratio() == 100.0
    with pytest.raises(OptionError, match="contact_resolution"):
        RigidOptions(contact_resolution="exact")


@pytest.mark.parametrize("which", ["articulated", "humanoid"])
def test_invweights_match_mujoco(which):
    """link/dof invweights from M and the motion subspaces at qpos0 equal MuJoCo's body_invweight0 /
    dof_invweight0 (the W of R = W(1−I)/I), to 1e-9 relative (a dense inverse vs MuJoCo's LDL solve)."""
    import mujoco
    r = S.make() if which == "articulated" else S.humanoid()
    if r is None:
        pytest.skip("gymnasium's humanoid.xml not installed")
    m, _ = r
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)     # qpos0
    M = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M)
    ref = d.subtree_com[m.body_rootid[m.dof_bodyid]]
    jd = [(m.jnt_dofadr[j], {0: 6, 1: 3}.get(int(m.jnt_type[j]), 1)) for j in range(m.njnt)]
    from polyphys.plugins.rigid.model import invweights
    lw, dw = invweights(M, d.xipos, m.dof_parentid, S.link_dof_last(m), d.cdof[:, :3], d.cdof[:, 3:], ref, jd)
    np.testing.assert_allclose(lw, m.body_invweight0, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(dw, m.dof_invweight0, rtol=1e-9, atol=1e-12)


def test_contact_params_kernel_matches_host_rules():
    """The device mixing kernel equals the host reference functions: default mode (per-env friction
    ratio, 0.01 floor, mean + 2h floor) and MuJoCo mode (priority, solmix), and MuJoCo's own contact."""
    import warp as wp
    rng = np.random.default_rng(1)
    G, E, Cn = 4, 2, 5
    gf = rng.uniform(0.0, 1.0, (G, 3))
    gf[3] = 0.0
    gs = np.c_[rng.uniform(0.001, 0.03, G), rng.uniform(0.5, 2, G), rng.uniform(0.5, 0.9, G),
               rng.uniform(0.9, 0.99, G), rng.uniform(0.001, 0.01, G), rng.uniform(0.2, 0.8, G), rng.uniform(1, 4, G)]
    gs[2, :2] = (-500.0, -20.0)     # direct solref
    mixw = np.array([1.0, 3.0, 0.5, 2.0])
    prio = np.array([0, 0, 1, 0], np.int32)
    cd = np.array([3, 6, 4, 1], np.int32)
    ratio = rng.uniform(0.0, 2.0, (E, G))
    pairs = rng.integers(0, G, (E, Cn, 2)).astype(np.int32)
    h = 0.004
    m, d = S.make()
    st, _ = S.stage_for(m, d, n_envs=E)
    st.con_dim.assign(np.zeros((E, st.max_contacts), np.int32))
    n = min(Cn, st.max_contacts)
    st.n_con.assign(np.full(E, n, np.int32))
    cg = np.zeros((E, st.max_contacts, 2), np.int32)
    cg[:, :n] = pairs[:, :n]
    a = lambda x, dt=wp.float64: wp.array(x, dtype=dt)  # noqa: E731
    for mode in (False, True):
        st.contact_params(a(cg, wp.int32), a(gf), a(gs), a(cd, wp.int32), a(ratio), mujoco_mode=mode,
                          geom_solmix=a(mixw), geom_priority=a(prio, wp.int32), h=h)
        F, Sp, D = st.con_friction.numpy(), st.con_sol.numpy(), st.con_dim.numpy()
        for e in range(E):
            for c in range(n):
                ga, gb = cg[e, c]
                if mode:
                    f5, sol = C.mix_mujoco(gf[ga], gf[gb], gs[ga], gs[gb], mixw[ga], mixw[gb], prio[ga], prio[gb])
                else:
                    f3 = C.mix_friction(gf[ga], gf[gb], ratio[e, ga], ratio[e, gb])
                    f5 = np.array([f3[0], f3[0], f3[1], f3[2], f3[2]])
                    sol = C.mix_sol_params(gs[ga], gs[gb], h)
                np.testing.assert_allclose(F[e, c], f5, rtol=1e-14)
                np.testing.assert_allclose(Sp[e, c], sol, rtol=1e-14)
                win = cd[ga] if (mode and prio[ga] > prio[gb]) else cd[gb] if (mode and prio[gb] > prio[ga]) \
                    else max(cd[ga], cd[gb])
                assert D[e, c] == win


def test_friction_range_and_setter_floor():
    assert C.check_friction(0.5) == 0.5
    with pytest.raises(OptionError, match=r"friction=0.005 is outside the allowed range \[0.01, 5\]"):
        C.check_friction([0.5, 0.005])
    with pytest.raises(OptionError, match=r"friction=6.0"):
        C.check_friction(6.0)
    # joint/equality setters: timeconst floored at 2h, with a warning naming the effective value
    with pytest.warns(PolyphysWarning, match=r"timeconst=0.003 .* effective value 0.004"):
        assert C.legalize_sol_params((0.003, 1, .9, .95, .001, .5, 2), h=0.002)[0] == 0.004
