"""The contact rows' native body (kernels/constraint_rows.cpp ``contact_rows_native``) against the Warp
functions it shares with the other rows (kernels/constraint_rows.py: impedance, ref_stiffness,
ref_damping, legal_timeconst, legal_dampratio, clamp_imp): the two copies must agree bit for bit.

Scene: the articulated scene of mjscenes.py (box, ball, arm, equalities) at its frozen state, its
contacts given per-contact sol params that walk every branch of the impedance curve (x below and above
``mid``, power 1, dmin = dmax, zero width, x past the width), a mixed-sign solref (→ MuJoCo's default),
a direct (negative) solref and a solreffriction; pyramidal and elliptic cones, float64 and float32.
A Warp kernel here evaluates each contact's imp, K, B, the rows' R and aref (from the rows' own
J·qvel) and μ with the Warp functions, in make_rows' order of operations."""

from typing import Any

import numpy as np
import pytest
import warp as wp

mujoco = pytest.importorskip("mujoco")

import mjscenes as S  # noqa: E402
from polyphys.plugins.rigid.kernels import constraint_rows as K  # noqa: E402

# per-contact (solref 2, solimp 5) cycling over the contacts: each row one branch of impedance()
SOLS = np.array([
    [0.02, 1.0, 0.9, 0.95, 0.001, 0.5, 2.0],      # MuJoCo's default (x past the width or below)
    [0.03, 0.7, 0.2, 0.97, 0.5, 0.3, 3.0],        # wide: x below mid
    [0.015, 1.3, 0.1, 0.99, 0.2, 0.05, 2.5],      # x above mid
    [0.02, 1.0, 0.3, 0.8, 0.4, 0.5, 1.0],         # power 1
    [0.02, 1.0, 0.9, 0.9, 0.1, 0.5, 2.0],         # dmin = dmax
    [0.02, 1.0, 0.5, 0.95, 0.0, 0.5, 2.0],        # zero width
    [0.02, -1.0, 0.9, 0.95, 0.001, 0.5, 2.0],     # mixed-sign solref -> (0.02, 1)
    [-800.0, -30.0, 0.85, 0.95, 0.3, 0.4, 2.0],   # direct stiffness / damping
])


@wp.kernel
def _expected(n_con: int, impratio: Any, tc_floor: Any, cone: int, con_dim: wp.array2d(dtype=wp.int32),
              con_link: wp.array3d(dtype=wp.int32), con_dist: wp.array2d(dtype=Any), con_margin: wp.array2d(dtype=Any),
              con_sol: wp.array3d(dtype=Any), con_friction: wp.array3d(dtype=Any),
              con_srf: wp.array3d(dtype=Any), link_invweight: wp.array2d(dtype=Any),
              con_efc_adr: wp.array2d(dtype=wp.int32), efc_vel: wp.array2d(dtype=Any),
              imp_out: wp.array2d(dtype=Any), aref_out: wp.array2d(dtype=Any), R_out: wp.array2d(dtype=Any),
              mu_out: wp.array2d(dtype=Any)):
    c = wp.tid()
    if c >= n_con:
        return
    zero = impratio * type(impratio)(0.0)
    one = zero + type(impratio)(1.0)
    tiny = type(impratio)(1.0e-15)
    sol0 = con_sol[0, c, 0]
    sol1 = con_sol[0, c, 1]
    tc = K.legal_timeconst(sol0, sol1, tc_floor)
    dr = K.legal_dampratio(sol0, sol1)
    dmax = K.clamp_imp(con_sol[0, c, 3])
    dist = con_dist[0, c]
    marg = con_margin[0, c]
    imp = K.impedance(K.clamp_imp(con_sol[0, c, 2]), dmax, wp.max(zero, con_sol[0, c, 4]),
                      K.clamp_imp(con_sol[0, c, 5]), wp.max(one, con_sol[0, c, 6]), dist, marg)
    k = K.ref_stiffness(tc, dr, dmax)
    b = K.ref_damping(tc, dr, dmax)
    tran = zero
    rot = zero
    for s in range(2):
        lk = con_link[0, c, s]
        if lk >= 0:
            tran = tran + link_invweight[lk, 0]
            rot = rot + link_invweight[lk, 1]
    dim = con_dim[0, c]
    adr = con_efc_adr[0, c]
    f0 = con_friction[0, c, 0]
    if cone == 0 and dim > 1:
        nrow = 2 * (dim - 1)
        mu2 = f0 * f0 / wp.max(tiny, impratio)
        dg = tran
        r_first = wp.max(tiny, (one - imp) * (tran + con_friction[0, c, 0] * con_friction[0, c, 0] * dg) / imp)
        for r in range(nrow):
            imp_out[0, adr + r] = imp
            fk = con_friction[0, c, r // 2]
            aref = -b * efc_vel[0, adr + r] - k * imp * (dist - marg)
            if fk <= zero:
                aref = zero
            aref_out[0, adr + r] = aref
            R_out[0, adr + r] = type(zero)(2.0) * mu2 * r_first
    else:
        imp_out[0, adr] = imp
        aref_out[0, adr] = -b * efc_vel[0, adr] - k * imp * (dist - marg)
        rn = wp.max(tiny, (one - imp) * tran / imp)
        R_out[0, adr] = rn
        if dim > 1:
            rt = rn / wp.max(tiny, impratio)
            mu_out[0, adr] = f0 * wp.sqrt(rt / rn)
            bf = b
            s0 = con_srf[0, c, 0]
            s1 = con_srf[0, c, 1]
            if s0 != zero or s1 != zero:
                bf = K.ref_damping(K.legal_timeconst(s0, s1, tc_floor), K.legal_dampratio(s0, s1), dmax)
            for j in range(1, dim):
                dg = tran
                if j >= 3:
                    dg = rot
                imp_out[0, adr + j] = imp
                fj = con_friction[0, c, j - 1]
                mu_out[0, adr + j] = fj
                if fj > zero:
                    aref_out[0, adr + j] = -bf * efc_vel[0, adr + j] - zero * imp * (zero - zero)
                    R_out[0, adr + j] = rt * f0 * f0 / (fj * fj)
                else:
                    aref_out[0, adr + j] = zero
                    R_out[0, adr + j] = rt


for _s in (wp.float32, wp.float64):
    wp.overload(_expected, {"impratio": _s, "tc_floor": _s, "con_dist": wp.array2d(dtype=_s),
                            "con_margin": wp.array2d(dtype=_s), "con_sol": wp.array3d(dtype=_s),
                            "con_friction": wp.array3d(dtype=_s), "con_srf": wp.array3d(dtype=_s),
                            "link_invweight": wp.array2d(dtype=_s), "efc_vel": wp.array2d(dtype=_s),
                            "imp_out": wp.array2d(dtype=_s), "aref_out": wp.array2d(dtype=_s),
                            "R_out": wp.array2d(dtype=_s), "mu_out": wp.array2d(dtype=_s)})


def _expected_rows(v, n):
    """imp, aref, R and mu of every contact row by the Warp functions (_expected), NaN elsewhere."""
    s = v.d.efc_R.dtype
    exp = {k: wp.full(v.d.efc_R.shape, np.nan, dtype=s, device=v.device) for k in ("imp", "aref", "R", "mu")}
    wp.launch(_expected, dim=n, device=v.device,
              inputs=[n, s(v.m.opt.impratio), s(v.m.opt.tc_floor), int(v.m.opt.cone), v.d.con_dim, v.d.con_link,
                      v.d.con_dist, v.d.con_margin, v.d.con_sol, v.d.con_friction, v.d.con_solreffriction,
                      v.m.link_invweight, v.d.con_efc_adr, v.d.efc_vel],
              outputs=[exp["imp"], exp["aref"], exp["R"], exp["mu"]])
    return exp


@pytest.mark.parametrize("precision", ["64", "32"])
@pytest.mark.parametrize("cone,impratio,condim", [("pyramidal", 5.0, 6), ("elliptic", 30.0, 6), ("elliptic", 1.0, 3)])
def test_contact_rows_native_equal_warp_functions(cone, impratio, condim, precision):
    m, d = S.make(cone=cone, impratio=impratio, condim=condim)
    st, tree = S.stage_for(m, d, precision=precision)
    n = d.ncon
    assert n >= 3
    sol = st.con_sol.numpy()
    sol[0] = SOLS[np.arange(n) % len(SOLS)]
    st.con_sol.assign(sol)
    srf = st.con_solreffriction.numpy()
    srf[0, 1] = [0.05, 0.6]                      # one contact with its own solreffriction
    st.con_solreffriction.assign(srf)
    for a in (st.efc_imp, st.efc_aref, st.efc_R, st.efc_mu):
        a.fill_(np.nan)
    S.build(st, tree)
    st.check()
    v = st.v
    nrows = int(v.d.nefc.numpy()[0])
    exp = _expected_rows(v, n)
    tp = v.d.efc_type.numpy()[0, :nrows]
    rows = np.nonzero(tp >= 3)[0]                 # the contact rows (ConstraintType.CONTACT_*)
    assert len(rows) >= 3 * 2
    for name, got in (("imp", v.d.efc_imp), ("aref", v.d.efc_aref), ("R", v.d.efc_R)):
        g, e = got.numpy()[0, rows], exp[name].numpy()[0, rows]
        assert np.isfinite(e).all(), name
        assert np.array_equal(g.view(np.uint8), e.view(np.uint8)), (name, g, e)
    if cone == "elliptic":
        g, e = v.d.efc_mu.numpy()[0, rows], exp["mu"].numpy()[0, rows]
        assert np.array_equal(g.view(np.uint8), e.view(np.uint8)), ("mu", g, e)


@pytest.mark.parametrize("precision", ["64", "32"])
@pytest.mark.parametrize("cone,impratio,condim", [("pyramidal", 5.0, 3), ("elliptic", 1.0, 3)])
def test_contact_rows_native_reuses_parameters_bit_for_bit(cone, impratio, condim, precision):
    """The native body computes what depends on a contact's 7 parameters alone (legalized solref, K, B, the
    impedance curve's coefficient) once per run of consecutive contacts with the same parameter bits: contacts
    in pairs sharing a set whose ``mid`` splits the pair (one x below mid, one above: both coefficients of the
    curve), consecutive sets differing in mid, power and solref (the last two only in a zero timeconst's sign). Every contact's
    imp, aref and R equal the Warp functions' from scratch bit for bit; it fails when a change of parameters does not
    reset the cached coefficients (checked)."""
    m, d = S.make(cone=cone, impratio=impratio, condim=condim)
    st, tree = S.stage_for(m, d, precision=precision)
    n = d.ncon
    assert n >= 4
    dist = st.con_dist.numpy()[0, :n]
    marg = st.con_margin.numpy()[0, :n]
    x = np.abs(dist - marg)
    sets = [(0.03, 0.7, 0.2, 0.97, 0.4, 2.0), (0.015, 1.3, 0.1, 0.99, 0.6, 2.5), (0.0, 1.0, 0.3, 0.9, 0.5, 3.0),
            (-0.0, 1.0, 0.3, 0.9, 0.5, 3.0)]
    sol = st.con_sol.numpy()
    below = above = 0
    for c in range(n):
        p = c // 2
        tc, dr, dmin, dmax, mid, power = sets[p % len(sets)]
        pair = [i for i in (2 * p, 2 * p + 1) if i < n]
        # x1/w + x2/w = 2·mid: one of the pair at or below mid, the other above (a lone contact at mid/2)
        width = (x[pair[0]] / (0.5 * mid)) if len(pair) == 1 else (x[pair[0]] + x[pair[-1]]) / (2.0 * mid)
        xc = x[c] / width
        below += xc <= mid
        above += mid < xc < 1.0
        sol[0, c] = [tc, dr, dmin, dmax, width, mid, power]
    assert below >= 2 and above >= 1
    st.con_sol.assign(sol)
    for a in (st.efc_imp, st.efc_aref, st.efc_R):
        a.fill_(np.nan)
    S.build(st, tree)
    st.check()
    v = st.v
    exp = _expected_rows(v, n)
    nrows = int(v.d.nefc.numpy()[0])
    rows = np.nonzero(v.d.efc_type.numpy()[0, :nrows] >= 3)[0]
    assert len(rows) >= 2 * n
    for name, got in (("imp", v.d.efc_imp), ("aref", v.d.efc_aref), ("R", v.d.efc_R)):
        g, e = got.numpy()[0, rows], exp[name].numpy()[0, rows]
        assert np.isfinite(e).all(), name
        assert np.array_equal(g.view(np.uint8), e.view(np.uint8)), (name, g, e)
