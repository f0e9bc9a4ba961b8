"""Constraint rows and the primal constraint solver of the rigid solver (one thread per env).

Two kernels, both generic over precision (float32 / float64 overloads):

``constraint_build``
    Assembles per env, in the order equality (connect, joint) → DOF frictionloss → contact → joint
    limit, dense rows ``efc_J`` (n_envs, max_rows, nv) along the kinematic tree, and per row the
    position ``efc_pos``, margin, velocity ``efc_vel = J·qvel``, impedance, reference acceleration
    ``efc_aref = -B·vel - K·I·(pos - margin)``, regularization ``efc_R`` and ``efc_D = 1/R``
    (MuJoCo's ``mj_makeImpedance`` semantics, SPEC R6-R7).

``constraint_solve``
    Minimizes, for frozen M, J, aref, R, the convex primal cost of MuJoCo
    ``½(a − a₀)ᵀM(a − a₀) + Σ s_i(J a − aref)`` with Newton (dense Cholesky of
    ``M + Jᵀ D J`` plus the elliptic cone block Hessians) or M⁻¹-preconditioned nonlinear CG
    (Hager–Zhang), an exact 1-D line search (safeguarded Newton on the derivative of the
    piecewise quadratic / cone cost), and MuJoCo's stopping rule with τ = tolerance·trace(M).
    Iteration caps are fixed; an env that has converged stops updating (device-side flag), so the
    launch is graph-capturable and needs no host sync.

Row types (``efc_type``): EQUALITY, FRICTION (DOF frictionloss), LIMIT, CONTACT_FRICTIONLESS,
CONTACT_PYRAMIDAL, CONTACT_ELLIPTIC. For an elliptic contact the normal row holds ``efc_dim`` (the
cone dimension) and ``efc_mu`` (the regularized cone slope μ·sqrt(R_t/R_n)); its friction rows
hold their friction coefficient in ``efc_mu``.
"""

from typing import Any

import warp as wp

wp.set_module_options({"enable_backward": False})

EQUALITY = wp.constant(0)
FRICTION = wp.constant(1)
LIMIT = wp.constant(2)
CONTACT_FRICTIONLESS = wp.constant(3)
CONTACT_PYRAMIDAL = wp.constant(4)
CONTACT_ELLIPTIC = wp.constant(5)

EQ_CONNECT = wp.constant(0)
EQ_WELD = wp.constant(1)
EQ_JOINT = wp.constant(2)

SOLVER_CG = wp.constant(0)
SOLVER_NEWTON = wp.constant(1)


# ---------------------------------------------------------------- parameters (SPEC R6-R7)


@wp.func
def clamp_imp(x: Any):
    return wp.min(type(x)(0.9999), wp.max(type(x)(0.0001), x))


@wp.func
def impedance(dmin: Any, dmax: Any, width: Any, mid: Any, power: Any, pos: Any, margin: Any):
    """MuJoCo's getimpedance: I(x) with x = |pos - margin| / width through the mid/power curve."""
    one = type(pos)(1.0)
    if dmin == dmax or width <= type(pos)(1.0e-15):
        return type(pos)(0.5) * (dmin + dmax)
    x = wp.abs((pos - margin) / width)
    if x >= one:
        return dmax
    if x <= type(pos)(0.0):
        return dmin
    y = x
    if power == one:
        y = x
    elif x <= mid:
        a = one / wp.pow(mid, power - one)
        y = a * wp.pow(x, power)
    else:
        b = one / wp.pow(one - mid, power - one)
        y = one - b * wp.pow(one - x, power)
    return dmin + y * (dmax - dmin)


@wp.func
def ref_stiffness(tc: Any, dr: Any, dmax: Any):
    """K of aref (standard: 1/(dmax²·tc²·ζ²); direct, tc <= 0: -tc/dmax²)."""
    mv = type(tc)(1.0e-15)
    if tc > type(tc)(0.0):
        return type(tc)(1.0) / wp.max(mv, dmax * dmax * tc * tc * dr * dr)
    return -tc / wp.max(mv, dmax * dmax)


@wp.func
def ref_damping(tc: Any, dr: Any, dmax: Any):
    """B of aref (standard: 2/(dmax·tc); direct, dampratio <= 0: -dampratio/dmax)."""
    mv = type(tc)(1.0e-15)
    if dr > type(tc)(0.0):
        return type(tc)(2.0) / wp.max(mv, dmax * tc)
    return -dr / wp.max(mv, dmax)


@wp.func
def legal_timeconst(tc: Any, dr: Any, tc_floor: Any):
    """Mixed-sign solref → MuJoCo default (0.02, 1); positive timeconst floored (2h)."""
    t = tc
    z = type(tc)(0.0)
    if (tc > z and dr <= z) or (tc <= z and dr > z):
        t = type(tc)(0.02)
    if t > type(tc)(0.0):
        t = wp.max(t, tc_floor)
    return t


@wp.func
def legal_dampratio(tc: Any, dr: Any):
    z = type(tc)(0.0)
    if (tc > z and dr <= z) or (tc <= z and dr > z):
        return type(tc)(1.0)
    return dr


@wp.func
def point_jac_add(
    dof_parent: wp.array(dtype=wp.int32),
    link_dof_last: wp.array(dtype=wp.int32),
    cdof_w: wp.array2d(dtype=Any),
    cdof_v: wp.array2d(dtype=Any),
    dof_ref: wp.array2d(dtype=Any),
    env: int,
    link: int,
    p: Any,
    axis: Any,
    rot: int,
    scale: Any,
    efc_J: wp.array3d(dtype=Any),
    row: int,
):
    """efc_J[row] += scale · axis · (velocity of point p fixed to link per dof), rot=1: angular
    (native C++ walk of the dof chain, point_jac_native)."""
    if link < 0:
        return
    point_jac_native(dof_parent, link_dof_last, cdof_w, cdof_v, dof_ref, env, link, p, axis, rot, scale, efc_J, row)


_POINT_JAC_SNIPPET = """
    typedef {T} T;
    typedef wp::vec_t<3, T> V;
    const size_t e = (size_t)env;
    const V* cw = (const V*)((const char*)cdof_w.data + e * cdof_w.strides[0]);
    const V* cv = (const V*)((const char*)cdof_v.data + e * cdof_v.strides[0]);
    const V* rf = (const V*)((const char*)dof_ref.data + e * dof_ref.strides[0]);
    T* jr = (T*)((char*)efc_J.data + e * efc_J.strides[0] + (size_t)row * efc_J.strides[1]);
    int d = link_dof_last.data[link];
    while (d >= 0) {
        const V w = cw[d];
        T val;
        if (rot == 1) {
            val = wp::dot(axis, w);
        } else {
            val = wp::dot(axis, wp::add(cv[d], wp::cross(w, wp::sub(p, rf[d]))));
        }
        const T sv = scale * val;
        jr[d] = jr[d] + sv;
        d = dof_parent.data[d];
    }
"""


def _sig_point_jac(s):
    V = wp.types.vector(3, s)
    I1 = wp.array(dtype=wp.int32)
    V2 = wp.array2d(dtype=V)

    def point_jac_native(dof_parent: I1, link_dof_last: I1, cdof_w: V2, cdof_v: V2, dof_ref: V2, env: wp.int32,
                         link: wp.int32, p: V, axis: V, rot: wp.int32, scale: s, efc_J: wp.array3d(dtype=s),
                         row: wp.int32):
        ...
    return point_jac_native


point_jac_native = wp.func_native(_POINT_JAC_SNIPPET.replace("{T}", "double"))(_sig_point_jac(wp.float64))
point_jac_native = wp.func_native(_POINT_JAC_SNIPPET.replace("{T}", "float"))(_sig_point_jac(wp.float32))


# build-side row helpers as native C++ (see the solver's native loops below for why)
_ROW_HEAD = """
    typedef {T} T;
    T* jr = (T*)((char*)efc_J.data + (size_t)env * efc_J.strides[0] + (size_t)row * efc_J.strides[1]);
"""
_ROW_CLEAR_SNIPPET = """
    for (int j = 0; j < nv; ++j) jr[j] = T(0);
"""
_ROW_DOT_SNIPPET = """
    const T* q = (const T*)((const char*)qvel.data + (size_t)env * qvel.strides[0]);
    int lo = 0;
    while (lo < nv && jr[lo] == T(0)) ++lo;
    int hi = nv;
    while (hi > lo && jr[hi - 1] == T(0)) --hi;
    T s = T(0);
    for (int j = lo; j < hi; ++j) {       // leading/trailing zero terms of the sum skipped
        const T p = jr[j] * q[j];
        s = s + p;
    }
    ((T*)((char*)out.data + (size_t)env * out.strides[0]))[row] = s;
"""


def _sig_row_clear(s):
    def row_clear_native(efc_J: wp.array3d(dtype=s), env: wp.int32, row: wp.int32, nv: wp.int32):
        ...
    return row_clear_native


def _sig_row_dot(s):
    def row_dot_native(efc_J: wp.array3d(dtype=s), qvel: wp.array2d(dtype=s), env: wp.int32, row: wp.int32,
                       nv: wp.int32, out: wp.array2d(dtype=s)):
        ...
    return row_dot_native


row_clear_native = wp.func_native(_ROW_HEAD.replace("{T}", "double") + _ROW_CLEAR_SNIPPET)(_sig_row_clear(wp.float64))
row_clear_native = wp.func_native(_ROW_HEAD.replace("{T}", "float") + _ROW_CLEAR_SNIPPET)(_sig_row_clear(wp.float32))
row_dot_native = wp.func_native(_ROW_HEAD.replace("{T}", "double") + _ROW_DOT_SNIPPET)(_sig_row_dot(wp.float64))
row_dot_native = wp.func_native(_ROW_HEAD.replace("{T}", "float") + _ROW_DOT_SNIPPET)(_sig_row_dot(wp.float32))


@wp.func
def finish_row(
    efc_J: wp.array3d(dtype=Any),
    qvel: wp.array2d(dtype=Any),
    env: int,
    row: int,
    nv: int,
    pos: Any,
    margin: Any,
    imp: Any,
    k: Any,
    b: Any,
    diag: Any,
    tp: int,
    ident: int,
    efc_type: wp.array2d(dtype=wp.int32),
    efc_id: wp.array2d(dtype=wp.int32),
    efc_pos: wp.array2d(dtype=Any),
    efc_margin: wp.array2d(dtype=Any),
    efc_vel: wp.array2d(dtype=Any),
    efc_aref: wp.array2d(dtype=Any),
    efc_R: wp.array2d(dtype=Any),
    efc_imp: wp.array2d(dtype=Any),
):
    row_dot_native(efc_J, qvel, env, row, nv, efc_vel)      # efc_vel[env, row] = J_row·qvel
    vel = efc_vel[env, row]
    efc_type[env, row] = tp
    efc_id[env, row] = ident
    efc_pos[env, row] = pos
    efc_margin[env, row] = margin
    efc_vel[env, row] = vel
    efc_imp[env, row] = imp
    efc_aref[env, row] = -b * vel - k * imp * (pos - margin)
    efc_R[env, row] = wp.max(type(pos)(1.0e-15), (type(pos)(1.0) - imp) * diag / imp)


@wp.func
def clear_row(efc_J: wp.array3d(dtype=Any), env: int, row: int, nv: int):
    row_clear_native(efc_J, env, row, nv)


@wp.func
def init_rows(
    efc_J: wp.array3d(dtype=Any),
    efc_floss: wp.array2d(dtype=Any),
    efc_mu: wp.array2d(dtype=Any),
    efc_dim: wp.array2d(dtype=wp.int32),
    efc_D: wp.array2d(dtype=Any),
    efc_R: wp.array2d(dtype=Any),
    efc_aref: wp.array2d(dtype=Any),
    env: int,
    lo: int,
    hi: int,
    nv: int,
):
    """Rows lo .. hi-1 to their cleared state (J 0, R 1, the rest 0); returns max(lo, hi)."""
    zero = type(efc_R[env, 0])(0.0)
    for i in range(lo, hi):
        clear_row(efc_J, env, i, nv)
        efc_floss[env, i] = zero
        efc_mu[env, i] = zero
        efc_dim[env, i] = 0
        efc_D[env, i] = zero
        efc_R[env, i] = type(zero)(1.0)
        efc_aref[env, i] = zero
    return wp.max(lo, hi)


@wp.kernel
def constraint_build(
    # Model:
    nv: int,
    max_rows: int,
    cone: int,
    impratio: Any,
    tc_floor: Any,
    dof_parent: wp.array(dtype=wp.int32),
    link_dof_last: wp.array(dtype=wp.int32),
    link_invweight: wp.array2d(dtype=Any),
    dof_invweight: wp.array(dtype=Any),
    dof_frictionloss: wp.array2d(dtype=Any),
    dof_sol: wp.array2d(dtype=Any),
    lim_dof: wp.array(dtype=wp.int32),
    lim_qadr: wp.array(dtype=wp.int32),
    lim_ball: wp.array(dtype=wp.int32),
    lim_range: wp.array2d(dtype=Any),
    lim_margin: wp.array(dtype=Any),
    lim_sol: wp.array2d(dtype=Any),
    eq_type: wp.array(dtype=wp.int32),
    eq_obj: wp.array2d(dtype=wp.int32),
    eq_data: wp.array2d(dtype=Any),
    eq_sol: wp.array3d(dtype=Any),
    # Data in:
    qpos: wp.array2d(dtype=Any),
    qvel: wp.array2d(dtype=Any),
    cdof_w: wp.array2d(dtype=Any),
    cdof_v: wp.array2d(dtype=Any),
    dof_ref: wp.array2d(dtype=Any),
    link_pos: wp.array2d(dtype=Any),
    link_quat: wp.array2d(dtype=Any),
    eq_active: wp.array2d(dtype=wp.int32),
    eq_acc_bias: wp.array3d(dtype=Any),
    n_con: wp.array(dtype=wp.int32),
    con_pos: wp.array2d(dtype=Any),
    con_frame: wp.array2d(dtype=Any),
    con_dist: wp.array2d(dtype=Any),
    con_margin: wp.array2d(dtype=Any),
    con_link: wp.array3d(dtype=wp.int32),
    con_dim: wp.array2d(dtype=wp.int32),
    con_friction: wp.array3d(dtype=Any),
    con_sol: wp.array3d(dtype=Any),
    # Data out:
    n_efc: wp.array(dtype=wp.int32),
    overflow: wp.array(dtype=wp.int32),
    efc_J: wp.array3d(dtype=Any),
    efc_type: wp.array2d(dtype=wp.int32),
    efc_id: wp.array2d(dtype=wp.int32),
    efc_pos: wp.array2d(dtype=Any),
    efc_margin: wp.array2d(dtype=Any),
    efc_vel: wp.array2d(dtype=Any),
    efc_aref: wp.array2d(dtype=Any),
    efc_R: wp.array2d(dtype=Any),
    efc_D: wp.array2d(dtype=Any),
    efc_imp: wp.array2d(dtype=Any),
    efc_floss: wp.array2d(dtype=Any),
    efc_mu: wp.array2d(dtype=Any),
    efc_dim: wp.array2d(dtype=wp.int32),
    con_efc_adr: wp.array2d(dtype=wp.int32),
):
    env = wp.tid()
    zero = impratio * type(impratio)(0.0)
    one = zero + type(impratio)(1.0)
    half = type(impratio)(0.5)
    row = int(0)
    over = int(0)
    # rows are initialized as they are used (clr: rows initialized so far) and the rows of the last
    # build beyond this one's count at the end, not all max_rows × nv entries of J every time
    prev = wp.min(n_efc[env], max_rows)
    clr = int(0)

    # ---- equality: connect (3 rows), joint (1 row)
    for e in range(eq_type.shape[0]):
        if eq_active[env, e] == 0:
            continue
        tc = legal_timeconst(eq_sol[env, e, 0], eq_sol[env, e, 1], tc_floor)
        dr = legal_dampratio(eq_sol[env, e, 0], eq_sol[env, e, 1])
        dmin = clamp_imp(eq_sol[env, e, 2])
        dmax = clamp_imp(eq_sol[env, e, 3])
        width = wp.max(zero, eq_sol[env, e, 4])
        mid = clamp_imp(eq_sol[env, e, 5])
        pw = wp.max(one, eq_sol[env, e, 6])
        k = ref_stiffness(tc, dr, dmax)
        b = ref_damping(tc, dr, dmax)
        if eq_type[e] == EQ_CONNECT:
            if row + 3 > max_rows:
                over = 1
                continue
            clr = init_rows(efc_J, efc_floss, efc_mu, efc_dim, efc_D, efc_R, efc_aref, env, clr, row + 3, nv)
            l1 = eq_obj[e, 0]
            l2 = eq_obj[e, 1]
            a1 = wp.vector(eq_data[e, 0], eq_data[e, 1], eq_data[e, 2])
            a2 = wp.vector(eq_data[e, 3], eq_data[e, 4], eq_data[e, 5])
            p1 = a2
            p2 = a2
            if l1 >= 0:
                p1 = link_pos[env, l1] + wp.quat_rotate(link_quat[env, l1], a1)
            else:
                p1 = a1
            if l2 >= 0:
                p2 = link_pos[env, l2] + wp.quat_rotate(link_quat[env, l2], a2)
            err = p1 - p2
            imp = impedance(dmin, dmax, width, mid, pw, wp.length(err), zero)
            diag = zero
            if l1 >= 0:
                diag = diag + link_invweight[l1, 0]
            if l2 >= 0:
                diag = diag + link_invweight[l2, 0]
            for c in range(3):
                ax = wp.vector(one, zero, zero)
                if c == 1:
                    ax = wp.vector(zero, one, zero)
                elif c == 2:
                    ax = wp.vector(zero, zero, one)
                point_jac_add(dof_parent, link_dof_last, cdof_w, cdof_v, dof_ref, env, l1, p1, ax, 0, one, efc_J, row + c)
                point_jac_add(dof_parent, link_dof_last, cdof_w, cdof_v, dof_ref, env, l2, p2, ax, 0, -one, efc_J, row + c)
                finish_row(efc_J, qvel, env, row + c, nv, err[c], zero, imp, k, b, diag, EQUALITY, e,
                           efc_type, efc_id, efc_pos, efc_margin, efc_vel, efc_aref, efc_R, efc_imp)
                # velocity-product term: aref − J̇·q̇ (the acceleration of p1 − p2 at qacc = 0)
                efc_aref[env, row + c] = efc_aref[env, row + c] - eq_acc_bias[env, e, c]
            row = row + 3
        elif eq_type[e] == EQ_WELD:
            if row + 6 > max_rows:
                over = 1
                continue
            clr = init_rows(efc_J, efc_floss, efc_mu, efc_dim, efc_D, efc_R, efc_aref, env, clr, row + 6, nv)
            wl0 = eq_obj[e, 0]
            wl1 = eq_obj[e, 1]
            wa0 = wp.vector(eq_data[e, 3], eq_data[e, 4], eq_data[e, 5])
            wa1 = wp.vector(eq_data[e, 0], eq_data[e, 1], eq_data[e, 2])
            qid = wp.quaternion(zero, zero, zero, one)
            wp0 = wa0
            wq0 = qid
            if wl0 >= 0:
                wq0 = link_quat[env, wl0]
                wp0 = link_pos[env, wl0] + wp.quat_rotate(wq0, wa0)
            wp1 = wa1
            wq1 = qid
            if wl1 >= 0:
                wq1 = link_quat[env, wl1]
                wp1 = link_pos[env, wl1] + wp.quat_rotate(wq1, wa1)
            rel = wp.quaternion(eq_data[e, 7], eq_data[e, 8], eq_data[e, 9], eq_data[e, 6])
            ts = eq_data[e, 10]
            wqq = wq0 * rel
            wq1n = wp.quat_inverse(wq1)
            wq2 = wq1n * wqq
            et = wp0 - wp1
            er = wp.vector(wq2[0], wq2[1], wq2[2]) * ts
            imp = impedance(dmin, dmax, width, mid, pw, wp.sqrt(wp.dot(et, et) + wp.dot(er, er)), zero)
            dt = zero
            dr2 = zero
            if wl0 >= 0:
                dt = dt + link_invweight[wl0, 0]
                dr2 = dr2 + link_invweight[wl0, 1]
            if wl1 >= 0:
                dt = dt + link_invweight[wl1, 0]
                dr2 = dr2 + link_invweight[wl1, 1]
            for c in range(3):
                ax = wp.vector(one, zero, zero)
                if c == 1:
                    ax = wp.vector(zero, one, zero)
                elif c == 2:
                    ax = wp.vector(zero, zero, one)
                point_jac_add(dof_parent, link_dof_last, cdof_w, cdof_v, dof_ref, env, wl0, wp0, ax, 0, one, efc_J, row + c)
                point_jac_add(dof_parent, link_dof_last, cdof_w, cdof_v, dof_ref, env, wl1, wp1, ax, 0, -one, efc_J, row + c)
                point_jac_add(dof_parent, link_dof_last, cdof_w, cdof_v, dof_ref, env, wl0, wp0, ax, 1, one, efc_J, row + 3 + c)
                point_jac_add(dof_parent, link_dof_last, cdof_w, cdof_v, dof_ref, env, wl1, wp1, ax, 1, -one, efc_J, row + 3 + c)
            # rotational rows: 0.5·ts·vec(conj(wq1) ⊗ (0, ω-column) ⊗ wq0 ⊗ relpose) per dof column
            for j in range(nv):
                axq = wp.quaternion(efc_J[env, row + 3, j], efc_J[env, row + 4, j], efc_J[env, row + 5, j], zero)
                wq3 = (wq1n * axq) * wqq
                for c in range(3):
                    efc_J[env, row + 3 + c, j] = half * ts * wq3[c]
            for c in range(6):
                ec = zero
                dg = dt
                if c < 3:
                    ec = et[c]
                else:
                    ec = er[c - 3]
                    dg = dr2
                finish_row(efc_J, qvel, env, row + c, nv, ec, zero, imp, k, b, dg, EQUALITY, e,
                           efc_type, efc_id, efc_pos, efc_margin, efc_vel, efc_aref, efc_R, efc_imp)
                efc_aref[env, row + c] = efc_aref[env, row + c] - eq_acc_bias[env, e, c]
            row = row + 6
        elif eq_type[e] == EQ_JOINT:
            if row + 1 > max_rows:
                over = 1
                continue
            clr = init_rows(efc_J, efc_floss, efc_mu, efc_dim, efc_D, efc_R, efc_aref, env, clr, row + 1, nv)
            # eq_obj: (qadr1, dof1, qadr2, dof2 packed as obj[e,0]=joint1 qadr, obj[e,1]=joint2 qadr or -1)
            q1 = eq_obj[e, 0]
            q2 = eq_obj[e, 1]
            d1 = eq_obj[e, 2]
            d2 = eq_obj[e, 3]
            # eq_data: ref1, ref2, polycoef c0..c4
            pos = qpos[env, q1] - eq_data[e, 0]
            deriv = zero
            diag = dof_invweight[d1]
            if q2 >= 0:
                dq = qpos[env, q2] - eq_data[e, 1]
                dqp = one
                poly = eq_data[e, 2]
                cf = zero
                for ci in range(3, 7):
                    cf = cf + one
                    deriv = deriv + cf * eq_data[e, ci] * dqp
                    dqp = dqp * dq
                    poly = poly + eq_data[e, ci] * dqp
                pos = pos - poly
                diag = diag + dof_invweight[d2]
            else:
                pos = pos - eq_data[e, 2]
            efc_J[env, row, d1] = one
            if q2 >= 0:
                efc_J[env, row, d2] = efc_J[env, row, d2] - deriv
            imp = impedance(dmin, dmax, width, mid, pw, pos, zero)
            finish_row(efc_J, qvel, env, row, nv, pos, zero, imp, k, b, diag, EQUALITY, e,
                       efc_type, efc_id, efc_pos, efc_margin, efc_vel, efc_aref, efc_R, efc_imp)
            row = row + 1

    # ---- DOF frictionloss (K = 0: velocity term only)
    for d in range(nv):
        fl = dof_frictionloss[env, d]
        if fl <= zero:
            continue
        if row + 1 > max_rows:
            over = 1
            continue
        clr = init_rows(efc_J, efc_floss, efc_mu, efc_dim, efc_D, efc_R, efc_aref, env, clr, row + 1, nv)
        tc = legal_timeconst(dof_sol[d, 0], dof_sol[d, 1], tc_floor)
        dr = legal_dampratio(dof_sol[d, 0], dof_sol[d, 1])
        dmax = clamp_imp(dof_sol[d, 3])
        imp = impedance(clamp_imp(dof_sol[d, 2]), dmax, wp.max(zero, dof_sol[d, 4]), clamp_imp(dof_sol[d, 5]),
                        wp.max(one, dof_sol[d, 6]), zero, zero)
        efc_J[env, row, d] = one
        finish_row(efc_J, qvel, env, row, nv, zero, zero, imp, zero, ref_damping(tc, dr, dmax), dof_invweight[d],
                   FRICTION, d, efc_type, efc_id, efc_pos, efc_margin, efc_vel, efc_aref, efc_R, efc_imp)
        efc_floss[env, row] = fl
        row = row + 1

    # ---- contacts
    for c in range(n_con[env]):
        dim = con_dim[env, c]
        nrow = dim
        if dim > 1 and cone == 0:
            nrow = 2 * (dim - 1)
        con_efc_adr[env, c] = -1
        if row + nrow > max_rows:
            over = 1
            continue
        con_efc_adr[env, c] = row
        clr = init_rows(efc_J, efc_floss, efc_mu, efc_dim, efc_D, efc_R, efc_aref, env, clr, row + nrow, nv)
        la = con_link[env, c, 0]
        lb = con_link[env, c, 1]
        p = con_pos[env, c]
        fr = con_frame[env, c]
        dist = con_dist[env, c]
        marg = con_margin[env, c]
        tc = legal_timeconst(con_sol[env, c, 0], con_sol[env, c, 1], tc_floor)
        dr = legal_dampratio(con_sol[env, c, 0], con_sol[env, c, 1])
        dmax = clamp_imp(con_sol[env, c, 3])
        imp = impedance(clamp_imp(con_sol[env, c, 2]), dmax, wp.max(zero, con_sol[env, c, 4]),
                        clamp_imp(con_sol[env, c, 5]), wp.max(one, con_sol[env, c, 6]), dist, marg)
        k = ref_stiffness(tc, dr, dmax)
        b = ref_damping(tc, dr, dmax)
        tran = zero
        rot = zero
        if la >= 0:
            tran = tran + link_invweight[la, 0]
            rot = rot + link_invweight[la, 1]
        if lb >= 0:
            tran = tran + link_invweight[lb, 0]
            rot = rot + link_invweight[lb, 1]
        # contact-frame rows (normal, t1, t2, then angular about normal, t1, t2) into rows
        # row .. row+dim-1 (elliptic / frictionless) or a scratch use of the same rows (pyramidal)
        if cone == 1 or dim == 1:
            for j in range(dim):
                ax = wp.vector(fr[j % 3, 0], fr[j % 3, 1], fr[j % 3, 2])
                r = 0
                if j >= 3:
                    r = 1
                point_jac_add(dof_parent, link_dof_last, cdof_w, cdof_v, dof_ref, env, la, p, ax, r, one, efc_J, row + j)
                point_jac_add(dof_parent, link_dof_last, cdof_w, cdof_v, dof_ref, env, lb, p, ax, r, -one, efc_J, row + j)
            if dim == 1:
                finish_row(efc_J, qvel, env, row, nv, dist, marg, imp, k, b, tran, CONTACT_FRICTIONLESS, c,
                           efc_type, efc_id, efc_pos, efc_margin, efc_vel, efc_aref, efc_R, efc_imp)
                efc_D[env, row] = one / efc_R[env, row]
            else:
                finish_row(efc_J, qvel, env, row, nv, dist, marg, imp, k, b, tran, CONTACT_ELLIPTIC, c,
                           efc_type, efc_id, efc_pos, efc_margin, efc_vel, efc_aref, efc_R, efc_imp)
                rn = efc_R[env, row]
                rt = rn / wp.max(type(zero)(1.0e-15), impratio)
                f0 = con_friction[env, c, 0]
                efc_mu[env, row] = f0 * wp.sqrt(rt / rn)
                efc_dim[env, row] = dim
                for j in range(1, dim):
                    dg = tran
                    if j >= 3:
                        dg = rot
                    finish_row(efc_J, qvel, env, row + j, nv, zero, zero, imp, zero, b, dg, CONTACT_ELLIPTIC, c,
                               efc_type, efc_id, efc_pos, efc_margin, efc_vel, efc_aref, efc_R, efc_imp)
                    fj = con_friction[env, c, j - 1]
                    efc_mu[env, row + j] = fj
                    if fj > zero:
                        efc_R[env, row + j] = rt * f0 * f0 / (fj * fj)
                    else:
                        # zero coefficient: the row is zeroed (no force, finite R)
                        efc_R[env, row + j] = rt
                        clear_row(efc_J, env, row + j, nv)
                        efc_vel[env, row + j] = zero
                        efc_aref[env, row + j] = zero
        else:
            # pyramidal: rows are built in place from the contact-frame rows; the frame rows are
            # formed one at a time in the last pyramid row pair and combined.
            f0 = con_friction[env, c, 0]
            mu2 = f0 * f0 / wp.max(type(zero)(1.0e-15), impratio)
            # normal row into row (temporary), then each pair k: (n + μ_k t_k, n − μ_k t_k)
            nax = wp.vector(fr[0, 0], fr[0, 1], fr[0, 2])
            for k2 in range(1, dim):
                r0 = row + 2 * (k2 - 1)
                ax = wp.vector(fr[(k2) % 3, 0], fr[(k2) % 3, 1], fr[(k2) % 3, 2])
                rr = 0
                if k2 >= 3:
                    rr = 1
                fk = con_friction[env, c, k2 - 1]
                for s in range(2):
                    sg = one
                    if s == 1:
                        sg = -one
                    point_jac_add(dof_parent, link_dof_last, cdof_w, cdof_v, dof_ref, env, la, p, nax, 0, one, efc_J, r0 + s)
                    point_jac_add(dof_parent, link_dof_last, cdof_w, cdof_v, dof_ref, env, lb, p, nax, 0, -one, efc_J, r0 + s)
                    point_jac_add(dof_parent, link_dof_last, cdof_w, cdof_v, dof_ref, env, la, p, ax, rr, sg * fk, efc_J, r0 + s)
                    point_jac_add(dof_parent, link_dof_last, cdof_w, cdof_v, dof_ref, env, lb, p, ax, rr, -sg * fk, efc_J, r0 + s)
                    dg = tran
                    if k2 >= 3:
                        dg = rot
                    finish_row(efc_J, qvel, env, r0 + s, nv, dist, marg, imp, k, b, tran + fk * fk * dg, CONTACT_PYRAMIDAL, c,
                               efc_type, efc_id, efc_pos, efc_margin, efc_vel, efc_aref, efc_R, efc_imp)
                    if fk <= zero:
                        # zero coefficient: the edge pair would be two extra normal rows (phantom
                        # normal support, SPEC R6) — zeroed, it carries no force
                        clear_row(efc_J, env, r0 + s, nv)
                        efc_vel[env, r0 + s] = zero
                        efc_aref[env, r0 + s] = zero
            # common R matching the elliptic friction impedance (MuJoCo): 2 μ_reg² R_first
            rpy = type(zero)(2.0) * mu2 * efc_R[env, row]
            for j in range(nrow):
                efc_R[env, row + j] = rpy
        row = row + nrow

    # ---- joint limits: hinge/slide two-sided; ball: rotation angle against max(range) (MuJoCo)
    for li in range(lim_dof.shape[0]):
        if lim_ball[li] == 1:
            qa = lim_qadr[li]
            bq = wp.vector(qpos[env, qa], qpos[env, qa + 1], qpos[env, qa + 2], qpos[env, qa + 3])
            bq = bq / wp.length(bq)
            bax = wp.vector(bq[1], bq[2], bq[3])
            sa = wp.length(bax)
            ang = zero
            if sa > zero:
                bax = bax / sa
                ang = type(zero)(2.0) * wp.atan2(sa, bq[0])
                if ang > type(zero)(3.141592653589793):
                    ang = ang - type(zero)(6.283185307179586)
            if ang < zero:
                ang = -ang
                bax = -bax
            dist = wp.max(lim_range[li, 0], lim_range[li, 1]) - ang
            if dist < lim_margin[li]:
                if row + 1 > max_rows:
                    over = 1
                    continue
                clr = init_rows(efc_J, efc_floss, efc_mu, efc_dim, efc_D, efc_R, efc_aref, env, clr, row + 1, nv)
                d = lim_dof[li]
                tc = legal_timeconst(lim_sol[li, 0], lim_sol[li, 1], tc_floor)
                dr = legal_dampratio(lim_sol[li, 0], lim_sol[li, 1])
                dmax = clamp_imp(lim_sol[li, 3])
                imp = impedance(clamp_imp(lim_sol[li, 2]), dmax, wp.max(zero, lim_sol[li, 4]), clamp_imp(lim_sol[li, 5]),
                                wp.max(one, lim_sol[li, 6]), dist, lim_margin[li])
                for c in range(3):
                    efc_J[env, row, d + c] = -bax[c]
                finish_row(efc_J, qvel, env, row, nv, dist, lim_margin[li], imp, ref_stiffness(tc, dr, dmax),
                           ref_damping(tc, dr, dmax), dof_invweight[d], LIMIT, li,
                           efc_type, efc_id, efc_pos, efc_margin, efc_vel, efc_aref, efc_R, efc_imp)
                row = row + 1
            continue
        q = qpos[env, lim_qadr[li]]
        for s in range(2):
            side = -one
            if s == 1:
                side = one
            dist = side * (lim_range[li, s] - q)
            if dist < lim_margin[li]:
                if row + 1 > max_rows:
                    over = 1
                    continue
                clr = init_rows(efc_J, efc_floss, efc_mu, efc_dim, efc_D, efc_R, efc_aref, env, clr, row + 1, nv)
                d = lim_dof[li]
                tc = legal_timeconst(lim_sol[li, 0], lim_sol[li, 1], tc_floor)
                dr = legal_dampratio(lim_sol[li, 0], lim_sol[li, 1])
                dmax = clamp_imp(lim_sol[li, 3])
                imp = impedance(clamp_imp(lim_sol[li, 2]), dmax, wp.max(zero, lim_sol[li, 4]), clamp_imp(lim_sol[li, 5]),
                                wp.max(one, lim_sol[li, 6]), dist, lim_margin[li])
                efc_J[env, row, d] = -side
                finish_row(efc_J, qvel, env, row, nv, dist, lim_margin[li], imp, ref_stiffness(tc, dr, dmax),
                           ref_damping(tc, dr, dmax), dof_invweight[d], LIMIT, li,
                           efc_type, efc_id, efc_pos, efc_margin, efc_vel, efc_aref, efc_R, efc_imp)
                row = row + 1

    for i in range(row):
        efc_D[env, i] = one / efc_R[env, i]
    # the last build's rows beyond this one's: back to the cleared state (padding reads as empty)
    init_rows(efc_J, efc_floss, efc_mu, efc_dim, efc_D, efc_R, efc_aref, env, row, prev, nv)
    n_efc[env] = row
    overflow[env] = over


# ---------------------------------------------------------------- solver


@wp.func
def row_cost(
    efc_type: wp.array2d(dtype=wp.int32),
    efc_D: wp.array2d(dtype=Any),
    efc_R: wp.array2d(dtype=Any),
    efc_floss: wp.array2d(dtype=Any),
    efc_mu: wp.array2d(dtype=Any),
    efc_dim: wp.array2d(dtype=wp.int32),
    jar: wp.array2d(dtype=Any),
    jv: wp.array2d(dtype=Any),
    env: int,
    i: int,
    alpha: Any,
):
    """Cost of row i (or elliptic contact starting at i) at jar + alpha·jv and its first two
    derivatives in alpha. Returns (cost, d1, d2, rows consumed)."""
    zero = alpha * type(alpha)(0.0)
    half = type(alpha)(0.5)
    tp = efc_type[env, i]
    if tp == CONTACT_ELLIPTIC:
        dim = efc_dim[env, i]
        mu = efc_mu[env, i]
        x0 = jar[env, i] + alpha * jv[env, i]
        n = mu * x0
        dn = mu * jv[env, i]
        tt = zero
        uv = zero
        vv = zero
        for j in range(1, dim):
            fj = efc_mu[env, i + j]
            u = fj * (jar[env, i + j] + alpha * jv[env, i + j])
            v = fj * jv[env, i + j]
            tt = tt + u * u
            uv = uv + u * v
            vv = vv + v * v
        t = wp.sqrt(tt)
        if n >= mu * t or (t <= zero and n >= zero):
            return wp.vector(zero, zero, zero, type(alpha)(dim))
        if mu * n + t <= zero or (t <= zero and n < zero):
            c = zero
            c1 = zero
            c2 = zero
            for j in range(dim):
                x = jar[env, i + j] + alpha * jv[env, i + j]
                dj = efc_D[env, i + j]
                c = c + half * dj * x * x
                c1 = c1 + dj * x * jv[env, i + j]
                c2 = c2 + dj * jv[env, i + j] * jv[env, i + j]
            return wp.vector(c, c1, c2, type(alpha)(dim))
        dm = efc_D[env, i] / (mu * mu * (type(alpha)(1.0) + mu * mu))
        nmt = n - mu * t
        dt = uv / t
        ddt = (vv - dt * dt) / t
        g = dn - mu * dt
        return wp.vector(half * dm * nmt * nmt, dm * nmt * g, dm * (g * g - nmt * mu * ddt), type(alpha)(dim))
    x = jar[env, i] + alpha * jv[env, i]
    v = jv[env, i]
    d = efc_D[env, i]
    one = type(alpha)(1.0)
    if tp == EQUALITY:
        return wp.vector(half * d * x * x, d * x * v, d * v * v, one)
    if tp == FRICTION:
        f = efc_floss[env, i]
        rf = efc_R[env, i] * f
        if x <= -rf:
            return wp.vector(-f * x - half * rf * f, -f * v, zero, one)
        if x >= rf:
            return wp.vector(f * x - half * rf * f, f * v, zero, one)
        return wp.vector(half * d * x * x, d * x * v, d * v * v, one)
    if x < zero:
        return wp.vector(half * d * x * x, d * x * v, d * v * v, one)
    return wp.vector(zero, zero, zero, one)


# -- the per-row loops of update_constraint and of the line search, native (same expressions, each
# product its own statement). Scalars go out through ``out`` (the kernel's solver_stat row: scratch
# until the solve writes its final statistics).
_ROWS_HEAD = """
    typedef {T} T;
    const size_t e = (size_t)env;
#define PP_R(a, t) ((t*)((char*)a.data + e * a.strides[0]))
    const int* tp_ = PP_R(efc_type, const int);
    const int* dim_ = PP_R(efc_dim, const int);
    const T* D_ = PP_R(efc_D, const T);
    const T* R_ = PP_R(efc_R, const T);
    const T* fl_ = PP_R(efc_floss, const T);
    const T* mu_ = PP_R(efc_mu, const T);
    const T* jar_ = PP_R(jar, const T);
    T* o = PP_R(out, T);
    const T half = T(0.5);
"""

_UPD_ROWS_SNIPPET = """
    T* F = PP_R(efc_force, T);
    int* S = PP_R(efc_state, int);
#undef PP_R
    T cost = T(0);
    int i = 0;
    while (i < nrow) {
        const int tp = tp_[i];
        if (tp == 5) {                                   // CONTACT_ELLIPTIC
            const int dim = dim_[i];
            const T mu = mu_[i];
            const T n = mu * jar_[i];
            T tt = T(0);
            for (int j = 1; j < dim; ++j) {
                const T u = mu_[i + j] * jar_[i + j];
                const T u2 = u * u;
                tt = tt + u2;
            }
            const T t = wp::sqrt(tt);
            const T mt = mu * t;
            const T mn = mu * n;
            if (n >= mt || (t <= T(0) && n >= T(0))) {
                for (int j = 0; j < dim; ++j) {
                    F[i + j] = T(0);
                    S[i + j] = 0;
                }
            } else if (mn + t <= T(0) || (t <= T(0) && n < T(0))) {
                for (int j = 0; j < dim; ++j) {
                    const T x = jar_[i + j];
                    F[i + j] = -D_[i + j] * x;
                    S[i + j] = 1;
                    const T c = half * D_[i + j] * x * x;
                    cost = cost + c;
                }
            } else {
                const T mm = mu * mu;
                const T mm2 = mu * mu;
                const T den = mm * (T(1) + mm2);
                const T dm = D_[i] / den;
                const T nmt = n - mt;
                const T c = half * dm * nmt * nmt;
                cost = cost + c;
                F[i] = -dm * nmt * mu;
                S[i] = 2;
                for (int j = 1; j < dim; ++j) {
                    const T fj = mu_[i + j];
                    F[i + j] = dm * nmt * mu / t * fj * fj * jar_[i + j];
                    S[i + j] = 2;
                }
            }
            i += dim;
        } else {
            const T x = jar_[i];
            const T d = D_[i];
            T f = T(0);
            int st = 0;
            if (tp == 0) {                               // EQUALITY
                f = -d * x;
                st = 1;
                const T c = half * d * x * x;
                cost = cost + c;
            } else if (tp == 1) {                        // FRICTION
                const T fl = fl_[i];
                const T rf = R_[i] * fl;
                if (x <= -rf) {
                    f = fl;
                    const T a = fl * x;
                    const T b = half * rf * fl;
                    cost = cost - a;
                    cost = cost - b;
                } else if (x >= rf) {
                    f = -fl;
                    const T a = fl * x;
                    const T b = half * rf * fl;
                    cost = cost + a;
                    cost = cost - b;
                } else {
                    f = -d * x;
                    st = 1;
                    const T c = half * d * x * x;
                    cost = cost + c;
                }
            } else if (x < T(0)) {
                f = -d * x;
                st = 1;
                const T c = half * d * x * x;
                cost = cost + c;
            }
            F[i] = f;
            S[i] = st;
            i += 1;
        }
    }
    o[2] = cost;
"""

_LS_ROWS_SNIPPET = """
    const T* jv_ = PP_R(jv, const T);
#undef PP_R
    T c1 = c1_init;
    T c2 = c2_init;
    int i = 0;
    while (i < nrow) {
        const int tp = tp_[i];
        T d1 = T(0);
        T d2 = T(0);
        int used = 1;
        if (tp == 5) {                                   // CONTACT_ELLIPTIC
            const int dim = dim_[i];
            used = dim;
            const T mu = mu_[i];
            const T ax0 = alpha * jv_[i];
            const T x0 = jar_[i] + ax0;
            const T n = mu * x0;
            const T dn = mu * jv_[i];
            T tt = T(0);
            T uv = T(0);
            T vv = T(0);
            for (int j = 1; j < dim; ++j) {
                const T fj = mu_[i + j];
                const T aj = alpha * jv_[i + j];
                const T u = fj * (jar_[i + j] + aj);
                const T v = fj * jv_[i + j];
                const T u2 = u * u;
                const T uv1 = u * v;
                const T v2 = v * v;
                tt = tt + u2;
                uv = uv + uv1;
                vv = vv + v2;
            }
            const T t = wp::sqrt(tt);
            const T mt = mu * t;
            const T mn = mu * n;
            if (n >= mt || (t <= T(0) && n >= T(0))) {
                // top zone: no cost
            } else if (mn + t <= T(0) || (t <= T(0) && n < T(0))) {
                for (int j = 0; j < dim; ++j) {
                    const T aj = alpha * jv_[i + j];
                    const T x = jar_[i + j] + aj;
                    const T dj = D_[i + j];
                    const T a = dj * x * jv_[i + j];
                    const T b = dj * jv_[i + j] * jv_[i + j];
                    d1 = d1 + a;
                    d2 = d2 + b;
                }
            } else {
                const T mm = mu * mu;
                const T mm2 = mu * mu;
                const T den = mm * (T(1) + mm2);
                const T dm = D_[i] / den;
                const T nmt = n - mt;
                const T dt = uv / t;
                const T dt2 = dt * dt;
                const T ddt = (vv - dt2) / t;
                const T mdt = mu * dt;
                const T g = dn - mdt;
                d1 = dm * nmt * g;
                const T gg = g * g;
                const T nm = nmt * mu * ddt;
                d2 = dm * (gg - nm);
            }
        } else {
            const T av = alpha * jv_[i];
            const T x = jar_[i] + av;
            const T v = jv_[i];
            const T d = D_[i];
            if (tp == 0) {                               // EQUALITY
                d1 = d * x * v;
                d2 = d * v * v;
            } else if (tp == 1) {                        // FRICTION
                const T f = fl_[i];
                const T rf = R_[i] * f;
                if (x <= -rf) {
                    d1 = -f * v;
                } else if (x >= rf) {
                    d1 = f * v;
                } else {
                    d1 = d * x * v;
                    d2 = d * v * v;
                }
            } else if (x < T(0)) {
                d1 = d * x * v;
                d2 = d * v * v;
            }
        }
        c1 = c1 + d1;
        c2 = c2 + d2;
        i += used;
    }
    o[0] = c1;
    o[1] = c2;
"""


def _sig_upd_rows(s):
    A2 = wp.array2d(dtype=s)
    I2 = wp.array2d(dtype=wp.int32)

    def update_rows_native(env: wp.int32, nrow: wp.int32, efc_type: I2, efc_dim: I2, efc_D: A2, efc_R: A2,
                           efc_floss: A2, efc_mu: A2, jar: A2, efc_force: A2, efc_state: I2, out: A2):
        ...
    return update_rows_native


def _sig_ls_rows(s):
    A2 = wp.array2d(dtype=s)
    I2 = wp.array2d(dtype=wp.int32)

    def line_rows_native(env: wp.int32, nrow: wp.int32, efc_type: I2, efc_dim: I2, efc_D: A2, efc_R: A2,
                         efc_floss: A2, efc_mu: A2, jar: A2, jv: A2, alpha: s, c1_init: s, c2_init: s, out: A2):
        ...
    return line_rows_native


# forces, states and Σ row costs (→ out[env, 2]) at jar; row_cost's derivatives summed onto c1/c2_init
# at jar + alpha·jv (→ out[env, 0], out[env, 1])
update_rows_native = wp.func_native(_ROWS_HEAD.replace("{T}", "double") + _UPD_ROWS_SNIPPET)(_sig_upd_rows(wp.float64))
update_rows_native = wp.func_native(_ROWS_HEAD.replace("{T}", "float") + _UPD_ROWS_SNIPPET)(_sig_upd_rows(wp.float32))
line_rows_native = wp.func_native(_ROWS_HEAD.replace("{T}", "double") + _LS_ROWS_SNIPPET)(_sig_ls_rows(wp.float64))
line_rows_native = wp.func_native(_ROWS_HEAD.replace("{T}", "float") + _LS_ROWS_SNIPPET)(_sig_ls_rows(wp.float32))


@wp.func
def update_constraint(
    nv: int,
    env: int,
    efc_J: wp.array3d(dtype=Any),
    efc_type: wp.array2d(dtype=wp.int32),
    efc_D: wp.array2d(dtype=Any),
    efc_R: wp.array2d(dtype=Any),
    efc_floss: wp.array2d(dtype=Any),
    efc_mu: wp.array2d(dtype=Any),
    efc_dim: wp.array2d(dtype=wp.int32),
    nrow: int,
    qfrc_smooth: wp.array2d(dtype=Any),
    M: wp.array3d(dtype=Any),
    qacc_smooth: wp.array2d(dtype=Any),
    qacc: wp.array2d(dtype=Any),
    efc_aref: wp.array2d(dtype=Any),
    jar: wp.array2d(dtype=Any),
    efc_force: wp.array2d(dtype=Any),
    efc_state: wp.array2d(dtype=wp.int32),
    qfrc_constraint: wp.array2d(dtype=Any),
    grad: wp.array2d(dtype=Any),
    ma: wp.array2d(dtype=Any),
    full: int,
    scratch: wp.array2d(dtype=Any),
    sc_a: wp.array3d(dtype=Any),
    sc_b: wp.array3d(dtype=Any),
    sc_mode: int,
):
    """jar = J·qacc − aref, forces, states (1 quadratic, 2 cone middle zone), qfrc_constraint = Jᵀf,
    gradient g = M·(qacc − qacc_smooth) − Jᵀf; returns the total cost. full = 0: jar and ma were
    updated incrementally by the caller (jar += α·J·p, ma += α·M·p, as MuJoCo does); full = 2: the
    cost at qacc = qacc_smooth only (no Jᵀf, no gradient)."""
    zero = qacc[env, 0] * type(qacc[env, 0])(0.0)
    half = type(zero)(0.5)
    if full >= 1:
        jac_mul(env, nrow, nv, efc_J, qacc, efc_aref, 1, jar, sc_a, sc_b, sc_mode)
    update_rows_native(env, nrow, efc_type, efc_dim, efc_D, efc_R, efc_floss, efc_mu, jar, efc_force, efc_state,
                       scratch)
    cost = scratch[env, 2]
    if full == 2:
        # cost only, at qacc = qacc_smooth (the Gauss part is exactly 0 there); gradient not formed
        return cost
    jac_tmul_grad(env, nrow, nv, full, efc_J, efc_force, M, qacc, qacc_smooth, qfrc_constraint, ma, grad, sc_a, sc_b,
                  sc_mode)
    # Gauss part ½(a − a₀)ᵀM(a − a₀)
    for j in range(nv):
        cost = cost + half * (qacc[env, j] - qacc_smooth[env, j]) * ma[env, j]
    return cost


# -- dense per-env loops as native C++ over raw row pointers (as plugins/rigid/kernels/dynamics.py):
# Warp's CPU a[env, i, j] recomputes the strided address with a negative-index fix-up on every
# access; these are the same loops, in the same order, with every product its own statement (no
# contraction into a fused multiply-add: results stay bit-identical to the Warp versions).
# Zero entries are skipped where they cannot change a result: a sum's leading/trailing zero terms
# (x + 0·y = x, PP_SPAN: the nonzero column span of a row), rows with zero force in Jᵀf, and in the
# Cholesky factor the entries left of each row's first nonzero (the envelope: L has no fill there).
# Contact rows touch only the dofs of the two bodies' chains, so with several bodies (the 8 boxes:
# 6 of 48 columns) this removes most of the dense work; the only difference is the sign of an
# exact zero result.
_NATIVE_HEAD = """
    typedef {T} T;
    const size_t e = (size_t)env;
#ifndef PP_SPAN
// (one branch-free pass, min/max reductions the compiler vectorizes; an all-zero row gives lo = hi = n)
#define PP_SPAN(r, n, lo, hi) { int lo_ = (n), hi_ = 0; for (int k_ = 0; k_ < (n); ++k_) { \\
    const bool nz_ = !((r)[k_] == T(0)); const int a_ = nz_ ? k_ : (n), b_ = nz_ ? k_ + 1 : 0; \\
    lo_ = a_ < lo_ ? a_ : lo_; hi_ = b_ > hi_ ? b_ : hi_; } lo = lo_; hi = hi_ < lo_ ? lo_ : hi_; }
#endif
"""
# the spans of M's rows (2j, 2j+1) and of J's rows (2nv + 2r, +1) are computed once per solve into a
# scratch matrix the chosen solver does not use (sc_mode 1: LM, Newton; 2: H, CG; 0: none, when
# 2(nrow + nv) > nv², each product scans its rows)
_SPAN_HEAD = """
    const T* spc = sc_mode == 1 ? (const T*)((const char*)sc_a.data + e * sc_a.strides[0])
                 : sc_mode == 2 ? (const T*)((const char*)sc_b.data + e * sc_b.strides[0]) : (const T*)0;
#define PP_JSPAN(r, jr, lo, hi) { if (spc) { lo = (int)spc[2 * nv + 2 * (r)]; hi = (int)spc[2 * nv + 2 * (r) + 1]; } \\
    else PP_SPAN(jr, nv, lo, hi); }
#define PP_MSPAN(j, mr, lo, hi) { if (spc) { lo = (int)spc[2 * (j)]; hi = (int)spc[2 * (j) + 1]; } \\
    else PP_SPAN(mr, nv, lo, hi); }
"""
_SPANS_FILL_SNIPPET = """
    if (sc_mode != 0) {
        T* sp = (T*)(sc_mode == 1 ? (char*)sc_a.data + e * sc_a.strides[0] : (char*)sc_b.data + e * sc_b.strides[0]);
        for (int j = 0; j < nv; ++j) {
            const T* mr = (const T*)((const char*)M.data + e * M.strides[0] + (size_t)j * M.strides[1]);
            int lo, hi;
            PP_SPAN(mr, nv, lo, hi);
            sp[2 * j] = T(lo);
            sp[2 * j + 1] = T(hi);
        }
        for (int r = 0; r < nrow; ++r) {
            const T* jr = (const T*)((const char*)J.data + e * J.strides[0] + (size_t)r * J.strides[1]);
            int lo, hi;
            PP_SPAN(jr, nv, lo, hi);
            sp[2 * nv + 2 * r] = T(lo);
            sp[2 * nv + 2 * r + 1] = T(hi);
        }
    }
"""

_JMUL_SNIPPET = """
    const size_t rs = J.strides[1];
    const char* j0 = (const char*)J.data + e * J.strides[0];
    const T* xx = (const T*)((const char*)x.data + e * x.strides[0]);
    const T* sb = (const T*)((const char*)sub.data + e * sub.strides[0]);
    T* o = (T*)((char*)out.data + e * out.strides[0]);
    for (int r = 0; r < nrow; ++r) {
        const T* jr = (const T*)(j0 + (size_t)r * rs);
        int lo, hi;
        PP_JSPAN(r, jr, lo, hi);
        T s = T(0);
        for (int k = lo; k < hi; ++k) {
            const T p = jr[k] * xx[k];
            s = s + p;
        }
        o[r] = use_sub != 0 ? s - sb[r] : s;
    }
"""

_JTMUL_SNIPPET = """
    const size_t rs = J.strides[1];
    const size_t ms = M.strides[1];
    const char* j0 = (const char*)J.data + e * J.strides[0];
    const char* m0 = (const char*)M.data + e * M.strides[0];
    const T* f = (const T*)((const char*)efc_force.data + e * efc_force.strides[0]);
    const T* qa = (const T*)((const char*)qacc.data + e * qacc.strides[0]);
    const T* qs = (const T*)((const char*)qacc_smooth.data + e * qacc_smooth.strides[0]);
    T* qc = (T*)((char*)qfrc_constraint.data + e * qfrc_constraint.strides[0]);
    T* ma_ = (T*)((char*)ma.data + e * ma.strides[0]);
    T* g = (T*)((char*)grad.data + e * grad.strides[0]);
    // Jᵀf accumulated row by row (each column still sums its rows in ascending order)
    for (int j = 0; j < nv; ++j) qc[j] = T(0);
    for (int r = 0; r < nrow; ++r) {
        const T fr = f[r];
        if (fr == T(0)) continue;
        const T* jr = (const T*)(j0 + (size_t)r * rs);
        int lo, hi;
        PP_JSPAN(r, jr, lo, hi);
        for (int j = lo; j < hi; ++j) {
            const T p = jr[j] * fr;
            qc[j] = qc[j] + p;
        }
    }
    for (int j = 0; j < nv; ++j) {
        const T s = qc[j];
        T m = ma_[j];
        if (full == 1) {
            const T* mr = (const T*)(m0 + (size_t)j * ms);
            int lo, hi;
            PP_MSPAN(j, mr, lo, hi);
            m = T(0);
            for (int k = lo; k < hi; ++k) {
                const T p = mr[k] * (qa[k] - qs[k]);
                m = m + p;
            }
            ma_[j] = m;
        }
        g[j] = m - s;
    }
"""

_MMUL_SNIPPET = """
    const size_t ms = M.strides[1];
    const char* m0 = (const char*)M.data + e * M.strides[0];
    const T* xx = (const T*)((const char*)x.data + e * x.strides[0]);
    T* y = (T*)((char*)out.data + e * out.strides[0]);
    for (int j = 0; j < nv; ++j) {
        const T* mr = (const T*)(m0 + (size_t)j * ms);
        int lo, hi;
        PP_MSPAN(j, mr, lo, hi);
        T s = T(0);
        for (int k = lo; k < hi; ++k) {
            const T p = mr[k] * xx[k];
            s = s + p;
        }
        y[j] = s;
    }
"""

_HCOPY_SNIPPET = """
    const size_t ms = M.strides[1];
    const size_t hs = H.strides[1];
    const char* m0 = (const char*)M.data + e * M.strides[0];
    char* h0 = (char*)H.data + e * H.strides[0];
    for (int j = 0; j < nv; ++j) {
        const T* mr = (const T*)(m0 + (size_t)j * ms);
        T* hr = (T*)(h0 + (size_t)j * hs);
        for (int k = 0; k <= j; ++k) hr[k] = mr[k];   // lower triangle: all the factor reads
    }
"""

_HPAIR_SNIPPET = """
    const size_t rs = J.strides[1];
    const size_t hs = H.strides[1];
    const T* ja_ = (const T*)((const char*)J.data + e * J.strides[0] + (size_t)ra * rs);
    const T* jb_ = (const T*)((const char*)J.data + e * J.strides[0] + (size_t)rb * rs);
    char* h0 = (char*)H.data + e * H.strides[0];
    int alo, ahi, blo, bhi;
    PP_JSPAN(ra, ja_, alo, ahi);
    PP_JSPAN(rb, jb_, blo, bhi);
    for (int j = alo; j < ahi; ++j) {
        const T ja = ja_[j] * w;
        if (ja != T(0)) {
            T* hr = (T*)(h0 + (size_t)j * hs);
            const int kend = bhi < j + 1 ? bhi : j + 1;   // lower triangle only
            for (int k = blo; k < kend; ++k) {
                const T p = ja * jb_[k];
                hr[k] = hr[k] + p;
            }
        }
    }
"""

_CHOLF_SNIPPET = """
    const size_t ls = L.strides[1];
    char* l0 = (char*)L.data + e * L.strides[0];
#define PP_L(i) ((T*)(l0 + (size_t)(i) * ls))
    // envelope: first nonzero of each row of the lower triangle (L stays zero left of it)
    int first_buf[256];
    const bool env_ok = nv <= 256;
    if (env_ok) {
        for (int i = 0; i < nv; ++i) {
            const T* li = PP_L(i);
            int f0 = i;                      // first nonzero left of the diagonal (branch-free min)
            for (int k = 0; k < i; ++k) {
                const int a = li[k] == T(0) ? i : k;
                f0 = a < f0 ? a : f0;
            }
            first_buf[i] = f0;
        }
    }
    for (int j = 0; j < nv; ++j) {
        T* lj = PP_L(j);
        const int fj = env_ok ? first_buf[j] : 0;
        T s = lj[j];
        for (int k = fj; k < j; ++k) {
            const T p = lj[k] * lj[k];
            s = s - p;
        }
        s = wp::sqrt(wp::max(s, T(1.0e-30)));
        lj[j] = s;
        for (int i = j + 1; i < nv; ++i) {
            const int fi = env_ok ? first_buf[i] : 0;
            if (fi > j) continue;            // L[i, j] = 0: left of row i's envelope
            T* li = PP_L(i);
            T t = li[j];
            for (int k = (fi > fj ? fi : fj); k < j; ++k) {
                const T p = li[k] * lj[k];
                t = t - p;
            }
            li[j] = t / s;
        }
    }
    // the envelope kept for the solve in row 0's upper triangle (L[0][i] = first nonzero of row i,
    // i >= 1; row 0 starts at 0): no reader of L uses its upper triangle
    {
        T* l0r = PP_L(0);
        for (int i = 1; i < nv; ++i) l0r[i] = T(env_ok ? first_buf[i] : 0);
    }
#undef PP_L
"""

_CHOLS_SNIPPET = """
    const size_t ls = L.strides[1];
    const char* l0 = (const char*)L.data + e * L.strides[0];
#define PP_L(i) ((const T*)(l0 + (size_t)(i) * ls))
    const T* bb = (const T*)((const char*)b.data + e * b.strides[0]);
    T* xx = (T*)((char*)x.data + e * x.strides[0]);
    // row envelope stored by the factor in L[0][1..nv) (entries left of it are exact zeros);
    // column i's last nonzero row: the largest k with first[k] <= i (from the suffix minimum of first)
    int first_buf[256];
    int cend_buf[256];
    const bool env_ok = nv <= 256;
    if (env_ok) {
        first_buf[0] = 0;
        for (int i = 1; i < nv; ++i) first_buf[i] = (int)PP_L(0)[i];
        int k = nv - 1;
        int m = nv;                 // min of first[k'] over k' > k (none yet)
        for (int ii = 0; ii < nv; ++ii) {
            const int i = nv - 1 - ii;
            // largest k with min(first[k..nv)) <= i; the suffix minimum is nondecreasing in k
            while (k > i) {
                const int mk = first_buf[k] < m ? first_buf[k] : m;
                if (mk <= i) break;
                m = mk;
                --k;
            }
            cend_buf[i] = k;
        }
    }
    for (int i = 0; i < nv; ++i) {
        const T* li = PP_L(i);
        T s = bb[i];
        for (int k = env_ok ? first_buf[i] : 0; k < i; ++k) {
            const T p = li[k] * xx[k];
            s = s - p;
        }
        xx[i] = s / li[i];
    }
    for (int ii = 0; ii < nv; ++ii) {
        const int i = nv - 1 - ii;
        T s = xx[i];
        const int kend = env_ok ? cend_buf[i] : nv - 1;
        for (int k = i + 1; k <= kend; ++k) {
            if (env_ok && first_buf[k] > i) continue;     // L[k, i] = 0: left of row k's envelope
            const T p = PP_L(k)[i] * xx[k];
            s = s - p;
        }
        xx[i] = s / PP_L(i)[i];
    }
#undef PP_L
"""


def _sig_jmul(s):
    def jac_mul(env: wp.int32, nrow: wp.int32, nv: wp.int32, J: wp.array3d(dtype=s), x: wp.array2d(dtype=s),
                sub: wp.array2d(dtype=s), use_sub: wp.int32, out: wp.array2d(dtype=s), sc_a: wp.array3d(dtype=s),
                sc_b: wp.array3d(dtype=s), sc_mode: wp.int32):
        ...
    return jac_mul


def _sig_jtmul(s):
    def jac_tmul_grad(env: wp.int32, nrow: wp.int32, nv: wp.int32, full: wp.int32, J: wp.array3d(dtype=s),
                      efc_force: wp.array2d(dtype=s), M: wp.array3d(dtype=s), qacc: wp.array2d(dtype=s),
                      qacc_smooth: wp.array2d(dtype=s), qfrc_constraint: wp.array2d(dtype=s),
                      ma: wp.array2d(dtype=s), grad: wp.array2d(dtype=s), sc_a: wp.array3d(dtype=s), sc_b: wp.array3d(dtype=s),
                      sc_mode: wp.int32):
        ...
    return jac_tmul_grad


def _sig_mmul(s):
    def mat_mul(env: wp.int32, nv: wp.int32, M: wp.array3d(dtype=s), x: wp.array2d(dtype=s),
                out: wp.array2d(dtype=s), sc_a: wp.array3d(dtype=s), sc_b: wp.array3d(dtype=s), sc_mode: wp.int32):
        ...
    return mat_mul


def _sig_spans(s):
    def spans_fill(env: wp.int32, nrow: wp.int32, nv: wp.int32, J: wp.array3d(dtype=s), M: wp.array3d(dtype=s),
                   sc_a: wp.array3d(dtype=s), sc_b: wp.array3d(dtype=s), sc_mode: wp.int32):
        ...
    return spans_fill


def _sig_hcopy(s):
    def hess_copy(env: wp.int32, nv: wp.int32, M: wp.array3d(dtype=s), H: wp.array3d(dtype=s)):
        ...
    return hess_copy


def _sig_hpair(s):
    def hess_add_pair(env: wp.int32, nv: wp.int32, ra: wp.int32, rb: wp.int32, w: s, J: wp.array3d(dtype=s),
                      H: wp.array3d(dtype=s), sc_a: wp.array3d(dtype=s), sc_b: wp.array3d(dtype=s), sc_mode: wp.int32):
        ...
    return hess_add_pair


def _sig_cholf(s):
    def chol_factor_native(env: wp.int32, nv: wp.int32, L: wp.array3d(dtype=s)):
        ...
    return chol_factor_native


def _sig_chols(s):
    def chol_solve_native(env: wp.int32, nv: wp.int32, L: wp.array3d(dtype=s), b: wp.array2d(dtype=s),
                          x: wp.array2d(dtype=s)):
        ...
    return chol_solve_native


# (each name assigned twice at module level: the second registration adds the float32 overload)
# out = J·x (− sub)
jac_mul = wp.func_native(_NATIVE_HEAD.replace("{T}", "double") + _SPAN_HEAD + _JMUL_SNIPPET)(_sig_jmul(wp.float64))
jac_mul = wp.func_native(_NATIVE_HEAD.replace("{T}", "float") + _SPAN_HEAD + _JMUL_SNIPPET)(_sig_jmul(wp.float32))
# Jᵀf, M·(a − a₀), gradient
jac_tmul_grad = wp.func_native(_NATIVE_HEAD.replace("{T}", "double") + _SPAN_HEAD + _JTMUL_SNIPPET)(_sig_jtmul(wp.float64))
jac_tmul_grad = wp.func_native(_NATIVE_HEAD.replace("{T}", "float") + _SPAN_HEAD + _JTMUL_SNIPPET)(_sig_jtmul(wp.float32))
mat_mul = wp.func_native(_NATIVE_HEAD.replace("{T}", "double") + _SPAN_HEAD + _MMUL_SNIPPET)(_sig_mmul(wp.float64))   # out = M·x
mat_mul = wp.func_native(_NATIVE_HEAD.replace("{T}", "float") + _SPAN_HEAD + _MMUL_SNIPPET)(_sig_mmul(wp.float32))
spans_fill = wp.func_native(_NATIVE_HEAD.replace("{T}", "double") + _SPANS_FILL_SNIPPET)(_sig_spans(wp.float64))
spans_fill = wp.func_native(_NATIVE_HEAD.replace("{T}", "float") + _SPANS_FILL_SNIPPET)(_sig_spans(wp.float32))
hess_copy = wp.func_native(_NATIVE_HEAD.replace("{T}", "double") + _HCOPY_SNIPPET)(_sig_hcopy(wp.float64))   # H = M
hess_copy = wp.func_native(_NATIVE_HEAD.replace("{T}", "float") + _HCOPY_SNIPPET)(_sig_hcopy(wp.float32))
# H += w·J_raᵀ J_rb (zero entries of J_ra skipped)
hess_add_pair = wp.func_native(_NATIVE_HEAD.replace("{T}", "double") + _SPAN_HEAD + _HPAIR_SNIPPET)(_sig_hpair(wp.float64))
hess_add_pair = wp.func_native(_NATIVE_HEAD.replace("{T}", "float") + _SPAN_HEAD + _HPAIR_SNIPPET)(_sig_hpair(wp.float32))
# in-place dense Cholesky
chol_factor_native = wp.func_native(_NATIVE_HEAD.replace("{T}", "double") + _CHOLF_SNIPPET)(_sig_cholf(wp.float64))
chol_factor_native = wp.func_native(_NATIVE_HEAD.replace("{T}", "float") + _CHOLF_SNIPPET)(_sig_cholf(wp.float32))
# x = (L Lᵀ)⁻¹ b
chol_solve_native = wp.func_native(_NATIVE_HEAD.replace("{T}", "double") + _CHOLS_SNIPPET)(_sig_chols(wp.float64))
chol_solve_native = wp.func_native(_NATIVE_HEAD.replace("{T}", "float") + _CHOLS_SNIPPET)(_sig_chols(wp.float32))


@wp.func
def cholesky_solve(nv: int, env: int, L: wp.array3d(dtype=Any), b: wp.array2d(dtype=Any), x: wp.array2d(dtype=Any)):
    """x = (L Lᵀ)⁻¹ b (L lower triangle of the factored matrix)."""
    chol_solve_native(env, nv, L, b, x)


@wp.func
def cholesky_factor(nv: int, env: int, L: wp.array3d(dtype=Any)):
    """In-place dense Cholesky (lower triangle) of the symmetric matrix stored in L."""
    chol_factor_native(env, nv, L)


@wp.kernel
def constraint_solve(
    # Model:
    nv: int,
    solver: int,
    iterations: int,
    tolerance: Any,
    ls_iterations: int,
    ls_tolerance: Any,
    warm_pick_lower: int,
    stop_needs_gradient: int,
    # Data in:
    M: wp.array3d(dtype=Any),
    qacc_smooth: wp.array2d(dtype=Any),
    qacc_warm: wp.array2d(dtype=Any),
    n_efc: wp.array(dtype=wp.int32),
    efc_J: wp.array3d(dtype=Any),
    efc_type: wp.array2d(dtype=wp.int32),
    efc_aref: wp.array2d(dtype=Any),
    efc_R: wp.array2d(dtype=Any),
    efc_D: wp.array2d(dtype=Any),
    efc_floss: wp.array2d(dtype=Any),
    efc_mu: wp.array2d(dtype=Any),
    efc_dim: wp.array2d(dtype=wp.int32),
    # Scratch:
    H: wp.array3d(dtype=Any),
    LM: wp.array3d(dtype=Any),
    jar: wp.array2d(dtype=Any),
    jv: wp.array2d(dtype=Any),
    grad: wp.array2d(dtype=Any),
    mgrad: wp.array2d(dtype=Any),
    mgrad_old: wp.array2d(dtype=Any),
    search: wp.array2d(dtype=Any),
    ma: wp.array2d(dtype=Any),
    mv: wp.array2d(dtype=Any),
    qfrc_smooth: wp.array2d(dtype=Any),
    # Data out:
    qacc: wp.array2d(dtype=Any),
    efc_force: wp.array2d(dtype=Any),
    efc_state: wp.array2d(dtype=wp.int32),
    qfrc_constraint: wp.array2d(dtype=Any),
    solver_niter: wp.array(dtype=wp.int32),
    solver_stat: wp.array2d(dtype=Any),
):
    env = wp.tid()
    nrow = n_efc[env]
    zero = tolerance * type(tolerance)(0.0)
    one = zero + type(tolerance)(1.0)
    half = type(tolerance)(0.5)
    trace = zero
    for j in range(nv):
        trace = trace + M[env, j, j]
    # row spans cached in the scratch matrix this solver does not use (see _SPAN_HEAD)
    sc_mode = int(0)
    if 2 * (nrow + nv) <= nv * nv:
        sc_mode = 1
        if solver == SOLVER_CG:
            sc_mode = 2
    spans_fill(env, nrow, nv, efc_J, M, LM, H, sc_mode)
    mat_mul(env, nv, M, qacc_smooth, qfrc_smooth, LM, H, sc_mode)
    scale = one / wp.max(trace, type(tolerance)(1.0e-15))
    for i in range(nrow, efc_force.shape[1]):   # padding rows read as inactive, zero force
        efc_force[env, i] = zero
        efc_state[env, i] = 0

    # warm start (optionally the lower-cost of warm and smooth, MuJoCo's rule); no rows: qacc_smooth
    # (the warm start is copied to scratch first: qacc_warm may be qacc itself, warm-started in place)
    for j in range(nv):
        search[env, j] = qacc_warm[env, j]
        qacc[env, j] = search[env, j]
        if nrow == 0:
            qacc[env, j] = qacc_smooth[env, j]
    if warm_pick_lower == 1:
        # smooth first, then the warm start: when the warm start wins (the usual case) its
        # evaluation is the one in place and no third evaluation is needed
        for j in range(nv):
            qacc[env, j] = qacc_smooth[env, j]
        c2 = update_constraint(nv, env, efc_J, efc_type, efc_D, efc_R, efc_floss, efc_mu, efc_dim, nrow, qfrc_smooth,
                               M, qacc_smooth, qacc, efc_aref, jar, efc_force, efc_state, qfrc_constraint, grad, ma, 2,
                               solver_stat, LM, H, sc_mode)
        for j in range(nv):
            qacc[env, j] = search[env, j]
            if nrow == 0:
                qacc[env, j] = qacc_smooth[env, j]
    cost = update_constraint(nv, env, efc_J, efc_type, efc_D, efc_R, efc_floss, efc_mu, efc_dim, nrow, qfrc_smooth, M,
                             qacc_smooth, qacc, efc_aref, jar, efc_force, efc_state, qfrc_constraint, grad, ma, 1, solver_stat,
                             LM, H, sc_mode)
    if warm_pick_lower == 1:
        if not (cost < c2):
            for j in range(nv):
                qacc[env, j] = qacc_smooth[env, j]
            cost = update_constraint(nv, env, efc_J, efc_type, efc_D, efc_R, efc_floss, efc_mu, efc_dim, nrow,
                                     qfrc_smooth, M, qacc_smooth, qacc, efc_aref, jar, efc_force, efc_state,
                                     qfrc_constraint, grad, ma, 1, solver_stat, LM, H, sc_mode)

    # M factor for CG preconditioning
    if solver == SOLVER_CG:
        for j in range(nv):
            for k in range(nv):
                LM[env, j, k] = M[env, j, k]
        cholesky_factor(nv, env, LM)
        cholesky_solve(nv, env, LM, grad, mgrad)
        for j in range(nv):
            search[env, j] = -mgrad[env, j]

    niter = int(0)
    gnorm = zero
    improvement = zero
    done = int(0)
    if nrow == 0:
        done = 1
    for j in range(nv):
        gnorm = gnorm + grad[env, j] * grad[env, j]
    gnorm = wp.sqrt(gnorm)
    if scale * gnorm < tolerance:
        done = 1
    for _it in range(iterations):
        if done == 1:
            continue
        if solver == SOLVER_NEWTON:
            # H = M + Jᵀ D J over quadratic rows + cone middle-zone block Hessians
            hess_copy(env, nv, M, H)
            i = int(0)
            while i < nrow:
                if efc_type[env, i] == CONTACT_ELLIPTIC and efc_state[env, i] == 2:
                    dim = efc_dim[env, i]
                    mu = efc_mu[env, i]
                    dm = efc_D[env, i] / (mu * mu * (one + mu * mu))
                    n = mu * jar[env, i]
                    tt = zero
                    for j in range(1, dim):
                        u = efc_mu[env, i + j] * jar[env, i + j]
                        tt = tt + u * u
                    t = wp.sqrt(tt)
                    nmt = n - mu * t
                    # jar-space block: dm (g gᵀ − nmt·μ/t · F(I − ûûᵀ)F), g = (μ, −μ f_j u_j / t)
                    for a in range(dim):
                        ga = mu
                        fa = zero
                        ua = zero
                        if a > 0:
                            fa = efc_mu[env, i + a]
                            ua = fa * jar[env, i + a] / t
                            ga = -mu * fa * ua
                        for bb in range(dim):
                            gb = mu
                            fb = zero
                            ub = zero
                            if bb > 0:
                                fb = efc_mu[env, i + bb]
                                ub = fb * jar[env, i + bb] / t
                                gb = -mu * fb * ub
                            hab = ga * gb
                            if a > 0 and bb > 0:
                                idn = zero
                                if a == bb:
                                    idn = one
                                hab = hab - nmt * mu / t * fa * fb * (idn - ua * ub)
                            hab = dm * hab
                            hess_add_pair(env, nv, i + a, i + bb, hab, efc_J, H, LM, H, sc_mode)
                    i = i + dim
                else:
                    if efc_state[env, i] == 1:
                        hess_add_pair(env, nv, i, i, efc_D[env, i], efc_J, H, LM, H, sc_mode)
                    i = i + 1
            cholesky_factor(nv, env, H)
            cholesky_solve(nv, env, H, grad, search)
            for j in range(nv):
                search[env, j] = -search[env, j]
        # ---- exact line search along search: derivative root of the convex 1-D cost
        mat_mul(env, nv, M, search, mv, LM, H, sc_mode)
        pmp = zero
        pg0 = zero
        snorm = zero
        for j in range(nv):
            pmp = pmp + search[env, j] * mv[env, j]
            pg0 = pg0 + search[env, j] * ma[env, j]
            snorm = snorm + search[env, j] * search[env, j]
        jac_mul(env, nrow, nv, efc_J, search, jv, 0, jv, LM, H, sc_mode)
        gtol = zero
        lo = zero
        hi = -one
        alpha = one
        for ls in range(ls_iterations):
            line_rows_native(env, nrow, efc_type, efc_dim, efc_D, efc_R, efc_floss, efc_mu, jar, jv, alpha,
                             pg0 + alpha * pmp, pmp, solver_stat)
            c1 = solver_stat[env, 0]
            c2 = solver_stat[env, 1]
            if ls == 0:
                # derivative at 0 for the bracket
                line_rows_native(env, nrow, efc_type, efc_dim, efc_D, efc_R, efc_floss, efc_mu, jar, jv, zero,
                                 pg0, zero, solver_stat)
                d0 = solver_stat[env, 0]
                gtol = ls_tolerance * wp.abs(d0)
                if d0 >= zero:
                    alpha = zero
                    break
            if wp.abs(c1) <= gtol:
                break
            if c1 < zero:
                lo = alpha
            else:
                hi = alpha
            nxt = alpha - c1 / wp.max(c2, type(tolerance)(1.0e-30))
            if hi >= zero:
                if nxt <= lo or nxt >= hi:
                    nxt = half * (lo + hi)
            elif nxt <= lo:
                nxt = type(tolerance)(2.0) * alpha
            if nxt == alpha:
                break
            alpha = nxt
        # ---- update
        for j in range(nv):
            qacc[env, j] = qacc[env, j] + alpha * search[env, j]
            ma[env, j] = ma[env, j] + alpha * mv[env, j]
        for r in range(nrow):
            jar[env, r] = jar[env, r] + alpha * jv[env, r]
        if solver == SOLVER_CG:
            for j in range(nv):
                mgrad_old[env, j] = mgrad[env, j]
                mv[env, j] = grad[env, j]
        old = cost
        cost = update_constraint(nv, env, efc_J, efc_type, efc_D, efc_R, efc_floss, efc_mu, efc_dim, nrow, qfrc_smooth,
                                 M, qacc_smooth, qacc, efc_aref, jar, efc_force, efc_state, qfrc_constraint, grad, ma, 0,
                                 solver_stat, LM, H, sc_mode)
        niter = niter + 1
        improvement = scale * (old - cost)
        gnorm = zero
        for j in range(nv):
            gnorm = gnorm + grad[env, j] * grad[env, j]
        gnorm = scale * wp.sqrt(gnorm)
        if solver == SOLVER_CG:
            cholesky_solve(nv, env, LM, grad, mgrad)
            # Hager–Zhang β (M⁻¹-preconditioned) with the CG_DESCENT lower bound
            # η = −1/(‖p‖·min(0.01, ‖g_old‖)); y = g − g_old, My = M⁻¹y
            dy = zero
            ymy = zero
            pn = zero
            gon = zero
            for j in range(nv):
                yj = grad[env, j] - mv[env, j]
                dy = dy + search[env, j] * yj
                ymy = ymy + yj * (mgrad[env, j] - mgrad_old[env, j])
                pn = pn + search[env, j] * search[env, j]
                gon = gon + mv[env, j] * mv[env, j]
            beta = zero
            if wp.abs(dy) > type(tolerance)(1.0e-30):
                num = zero
                for j in range(nv):
                    num = num + (mgrad[env, j] - mgrad_old[env, j] - type(tolerance)(2.0) * ymy / dy
                                 * search[env, j]) * grad[env, j]
                beta = num / dy
                eta = -one / wp.max(wp.sqrt(pn) * wp.min(type(tolerance)(0.01), wp.sqrt(gon)),
                                    type(tolerance)(1.0e-30))
                beta = wp.max(beta, eta)
            for j in range(nv):
                search[env, j] = -mgrad[env, j] + beta * search[env, j]
        # SPEC R8: MuJoCo's rule stops on either test; the default-mode Newton path needs both
        # (a small line-search improvement alone does not prove the gradient is small)
        if stop_needs_gradient == 1:
            if (improvement < tolerance and gnorm < tolerance) or alpha == zero:
                done = 1
        elif improvement < tolerance or gnorm < tolerance or alpha == zero:
            done = 1
    solver_niter[env] = niter
    solver_stat[env, 0] = improvement
    solver_stat[env, 1] = gnorm
    solver_stat[env, 2] = cost


_MASS_DENSE_SNIPPET = """
    typedef {T} T;
    const size_t e = (size_t)env;
    const size_t ms = M_out.strides[1];
    char* m0 = (char*)M_out.data + e * M_out.strides[0];
    const T* mass = (const T*)((const char*)mass_in.data + e * mass_in.strides[0]);
    const T* dg = (const T*)((const char*)diag_add.data + e * diag_add.strides[0]);
#define PP_M(i, j) (((T*)(m0 + (size_t)(i) * ms))[j])
    for (int i = 0; i < nv; ++i)
        for (int j = 0; j < nv; ++j) PP_M(i, j) = T(0);
    for (int i = 0; i < nv; ++i) {
        const int adr = dof_madr.data[i];
        const int end = adr + dof_depth.data[i] + 1;
        for (int a = adr; a < end; ++a) {
            const int j = m_col.data[a];
            PP_M(i, j) = mass[a];
            PP_M(j, i) = mass[a];
        }
        PP_M(i, i) = PP_M(i, i) + dg[i];
    }
#undef PP_M
"""


def _sig_mass_dense(s):
    I1 = wp.array(dtype=wp.int32)

    def mass_dense_native(env: wp.int32, nv: wp.int32, dof_madr: I1, dof_depth: I1, m_col: I1,
                          mass_in: wp.array2d(dtype=s), diag_add: wp.array2d(dtype=s), M_out: wp.array3d(dtype=s)):
        ...
    return mass_dense_native


mass_dense_native = wp.func_native(_MASS_DENSE_SNIPPET.replace("{T}", "double"))(_sig_mass_dense(wp.float64))
mass_dense_native = wp.func_native(_MASS_DENSE_SNIPPET.replace("{T}", "float"))(_sig_mass_dense(wp.float32))


@wp.kernel
def mass_dense(
    # Model:
    nv: int,
    dof_madr: wp.array(dtype=wp.int32),
    dof_depth: wp.array(dtype=wp.int32),
    m_col: wp.array(dtype=wp.int32),
    # Data in:
    mass_in: wp.array2d(dtype=Any),
    diag_add: wp.array2d(dtype=Any),
    # Data out:
    M_out: wp.array3d(dtype=Any),
):
    """Dense symmetric M (+ diag_add on the diagonal, e.g. h·D_v) from the tree-sparse rows of the
    dynamics kernel (row i: entries dof_madr[i] .. dof_madr[i] + dof_depth[i], columns m_col);
    native C++ over the env's rows (mass_dense_native)."""
    env = wp.tid()
    mass_dense_native(env, nv, dof_madr, dof_depth, m_col, mass_in, diag_add, M_out)


@wp.kernel
def contact_wrench(
    # Data in:
    n_con: wp.array(dtype=wp.int32),
    con_frame: wp.array2d(dtype=Any),
    con_dim: wp.array2d(dtype=wp.int32),
    con_friction: wp.array3d(dtype=Any),
    con_efc_adr: wp.array2d(dtype=wp.int32),
    efc_type: wp.array2d(dtype=wp.int32),
    efc_force: wp.array2d(dtype=Any),
    # Data out:
    con_wrench_out: wp.array3d(dtype=Any),
    con_force_out: wp.array2d(dtype=Any),
    con_torque_out: wp.array2d(dtype=Any),
    con_valid_out: wp.array2d(dtype=wp.int32),
):
    """Per contact the 6D wrench on side A (F_n, F_t1, F_t2, T_n, T_t1, T_t2) in the contact frame
    (pyramidal edges recombined as MuJoCo's mj_contactForce: F_n = Σ edges, F_k = μ_k (f⁺ − f⁻)),
    and in the world frame (F_w = Cᵀ F, T_w = Cᵀ T, about the contact point); side B gets the
    negation. Slots beyond n_con, and contacts without rows, are zero with valid 0 (a slot beyond
    n_con whose valid flag is already 0 was cleared by an earlier call and is skipped)."""
    env = wp.tid()
    C = con_dim.shape[1]
    nc = n_con[env]
    for c in range(C):
        if c >= nc and con_valid_out[env, c] == 0:
            continue
        zero = con_friction[env, c, 0] * type(con_friction[env, c, 0])(0.0)
        for j in range(6):
            con_wrench_out[env, c, j] = zero
        con_valid_out[env, c] = 0
        adr = int(-1)
        if c < n_con[env]:
            adr = con_efc_adr[env, c]
        fr = con_frame[env, c]
        if adr >= 0:
            con_valid_out[env, c] = 1
            dim = con_dim[env, c]
            tp = efc_type[env, adr]
            if tp == CONTACT_PYRAMIDAL:
                for j in range(2 * (dim - 1)):
                    con_wrench_out[env, c, 0] = con_wrench_out[env, c, 0] + efc_force[env, adr + j]
                for k in range(1, dim):
                    con_wrench_out[env, c, k] = con_friction[env, c, k - 1] * (
                        efc_force[env, adr + 2 * (k - 1)] - efc_force[env, adr + 2 * (k - 1) + 1])
            else:
                for j in range(dim):
                    con_wrench_out[env, c, j] = efc_force[env, adr + j]
        f = wp.vector(zero, zero, zero)
        t = wp.vector(zero, zero, zero)
        for k in range(3):
            ax = wp.vector(fr[k, 0], fr[k, 1], fr[k, 2])
            f = f + con_wrench_out[env, c, k] * ax
            t = t + con_wrench_out[env, c, 3 + k] * ax
        con_force_out[env, c] = f
        con_torque_out[env, c] = t


@wp.kernel
def link_contact_wrench(
    # Model:
    h: Any,
    accumulate: int,
    # Data in:
    n_con: wp.array(dtype=wp.int32),
    con_pos: wp.array2d(dtype=Any),
    con_link: wp.array3d(dtype=wp.int32),
    con_valid: wp.array2d(dtype=wp.int32),
    con_force: wp.array2d(dtype=Any),
    con_torque: wp.array2d(dtype=Any),
    link_com: wp.array2d(dtype=Any),
    # Data out:
    link_force_out: wp.array2d(dtype=Any),
    link_torque_out: wp.array2d(dtype=Any),
    link_impulse_f: wp.array2d(dtype=Any),
    link_impulse_t: wp.array2d(dtype=Any),
):
    """Net contact wrench per link (world frame, torque about the link CoM): A gets (F, T + (p − c)×F),
    B the negation moved to its own CoM. accumulate = 1 adds h·wrench to the impulse buffers, 2
    restarts them with it (first substep of a step) — SPEC F4: Σ h_k f_k over the substeps of a step."""
    env = wp.tid()
    nl = link_com.shape[1]
    for l in range(nl):
        link_force_out[env, l] = link_com[env, l] * h * type(h)(0.0)
        link_torque_out[env, l] = link_com[env, l] * h * type(h)(0.0)
    for c in range(n_con[env]):
        if con_valid[env, c] == 0:
            continue
        f = con_force[env, c]
        t = con_torque[env, c]
        p = con_pos[env, c]
        la = con_link[env, c, 0]
        lb = con_link[env, c, 1]
        if la >= 0:
            link_force_out[env, la] = link_force_out[env, la] + f
            link_torque_out[env, la] = link_torque_out[env, la] + t + wp.cross(p - link_com[env, la], f)
        if lb >= 0:
            link_force_out[env, lb] = link_force_out[env, lb] - f
            link_torque_out[env, lb] = link_torque_out[env, lb] - t - wp.cross(p - link_com[env, lb], f)
    if accumulate == 1:
        for l in range(nl):
            link_impulse_f[env, l] = link_impulse_f[env, l] + h * link_force_out[env, l]
            link_impulse_t[env, l] = link_impulse_t[env, l] + h * link_torque_out[env, l]
    elif accumulate == 2:   # first substep of a step: restart the sums
        for l in range(nl):
            link_impulse_f[env, l] = h * link_force_out[env, l]
            link_impulse_t[env, l] = h * link_torque_out[env, l]


def _overloads():
    for s in (wp.float32, wp.float64):
        V = wp.types.vector(3, s)
        Q = wp.types.quaternion(s)
        Mt = wp.types.matrix((3, 3), s)
        a1 = wp.array(dtype=s)
        a2 = wp.array2d(dtype=s)
        a3 = wp.array3d(dtype=s)
        wp.overload(constraint_build, {
            "impratio": s, "tc_floor": s, "link_invweight": a2, "dof_invweight": a1, "dof_frictionloss": a2,
            "dof_sol": a2, "lim_range": a2, "lim_margin": a1, "lim_sol": a2, "eq_data": a2, "eq_sol": a3,
            "qpos": a2, "qvel": a2, "cdof_w": wp.array2d(dtype=V), "cdof_v": wp.array2d(dtype=V),
            "dof_ref": wp.array2d(dtype=V), "link_pos": wp.array2d(dtype=V), "link_quat": wp.array2d(dtype=Q),
            "eq_acc_bias": a3, "con_pos": wp.array2d(dtype=V), "con_frame": wp.array2d(dtype=Mt), "con_dist": a2,
            "con_margin": a2,
            "con_friction": a3, "con_sol": a3, "efc_J": a3, "efc_pos": a2, "efc_margin": a2, "efc_vel": a2,
            "efc_aref": a2, "efc_R": a2, "efc_D": a2, "efc_imp": a2, "efc_floss": a2, "efc_mu": a2,
        })
        wp.overload(constraint_solve, {
            "tolerance": s, "ls_tolerance": s, "M": a3, "qacc_smooth": a2, "qacc_warm": a2, "efc_J": a3,
            "efc_aref": a2, "efc_R": a2, "efc_D": a2, "efc_floss": a2, "efc_mu": a2, "H": a3, "LM": a3,
            "jar": a2, "jv": a2, "grad": a2, "mgrad": a2, "mgrad_old": a2, "search": a2, "ma": a2, "mv": a2,
            "qfrc_smooth": a2, "qacc": a2, "efc_force": a2, "qfrc_constraint": a2, "solver_stat": a2,
        })
        wp.overload(mass_dense, {"mass_in": a2, "diag_add": a2, "M_out": a3})
        V2 = wp.array2d(dtype=V)
        wp.overload(link_contact_wrench, {
            "h": s, "con_pos": V2, "con_force": V2, "con_torque": V2, "link_com": V2, "link_force_out": V2,
            "link_torque_out": V2, "link_impulse_f": V2, "link_impulse_t": V2})
        wp.overload(contact_wrench, {
            "con_frame": wp.array2d(dtype=Mt), "con_friction": a3, "efc_force": a2, "con_wrench_out": a3,
            "con_force_out": wp.array2d(dtype=V), "con_torque_out": wp.array2d(dtype=V)})


_overloads()


# ---------------------------------------------------------------- signorini contact resolution
#
# SPEC R8 / seed 000 §5.3: elliptic contact rows, but each contact's friction is not the coupled
# cone program of the convex path. The normal row is a one-sided quadratic (force −D_n·x_n ≥ 0); a
# normal load ℓ is latched per Newton iteration; each friction block (sliding rows 1-2, torsional
# row 3, rolling rows 4-5) is a quadratic "stick" segment saturated at the radius μ_block·ℓ:
# f = −D·e when D‖e‖ ≤ μℓ, else f = −μℓ·e/‖e‖ (cost r‖e‖ − r²/2D: convex, C¹). ℓ stays fixed during
# the line search and is re-latched after the update, with a half step when a contact's load
# oscillates without contracting. Stopping requires both the improvement and the gradient test.


@wp.func
def sig_block(d: Any, r: Any, ee: Any, ev: Any, vv: Any):
    """Cost and its first two derivatives of one friction block along a line, from ee = ‖e‖²,
    ev = e·v, vv = ‖v‖² (e: block residual J·a − aref, v: its rate); d = D of the block rows, r the
    latched radius."""
    en = wp.sqrt(ee)
    half = type(d)(0.5)
    if d * en <= r:
        return wp.vector(half * d * ee, d * ev, d * vv)
    return wp.vector(r * en - half * r * r / d, r * ev / en, r * (vv - ev * ev / ee) / en)


@wp.func
def sig_block_size(dim: int, b: int):
    """Rows of the friction block starting at contact row b (1: sliding, 3: torsional, 4: rolling)."""
    if b == 1 and dim >= 3:
        return 2
    if b == 4:
        return 2
    return 1


@wp.func
def sig_row_cost(
    efc_type: wp.array2d(dtype=wp.int32),
    efc_D: wp.array2d(dtype=Any),
    efc_R: wp.array2d(dtype=Any),
    efc_floss: wp.array2d(dtype=Any),
    efc_mu: wp.array2d(dtype=Any),
    efc_dim: wp.array2d(dtype=wp.int32),
    efc_load: wp.array2d(dtype=Any),
    jar: wp.array2d(dtype=Any),
    jv: wp.array2d(dtype=Any),
    env: int,
    i: int,
    alpha: Any,
):
    """Signorini cost of row i (or of the contact starting at i) at jar + alpha·jv with its first
    two alpha-derivatives; returns (cost, d1, d2, rows consumed)."""
    zero = alpha * type(alpha)(0.0)
    half = type(alpha)(0.5)
    one = type(alpha)(1.0)
    tp = efc_type[env, i]
    x = jar[env, i] + alpha * jv[env, i]
    v = jv[env, i]
    d = efc_D[env, i]
    if tp == CONTACT_ELLIPTIC:
        dim = efc_dim[env, i]
        out = wp.vector(zero, zero, zero, type(alpha)(dim))
        if x < zero:
            out = wp.vector(half * d * x * x, d * x * v, d * v * v, type(alpha)(dim))
        b = int(1)
        while b < dim:
            sz = sig_block_size(dim, b)
            ee = zero
            ev = zero
            vv = zero
            for k in range(sz):
                e = jar[env, i + b + k] + alpha * jv[env, i + b + k]
                w = jv[env, i + b + k]
                ee = ee + e * e
                ev = ev + e * w
                vv = vv + w * w
            c = sig_block(efc_D[env, i + b], efc_mu[env, i + b] * efc_load[env, i], ee, ev, vv)
            out = out + wp.vector(c[0], c[1], c[2], zero)
            b = b + sz
        return out
    if tp == EQUALITY:
        return wp.vector(half * d * x * x, d * x * v, d * v * v, one)
    if tp == FRICTION:
        f = efc_floss[env, i]
        rf = efc_R[env, i] * f
        if x <= -rf:
            return wp.vector(-f * x - half * rf * f, -f * v, zero, one)
        if x >= rf:
            return wp.vector(f * x - half * rf * f, f * v, zero, one)
        return wp.vector(half * d * x * x, d * x * v, d * v * v, one)
    if x < zero:
        return wp.vector(half * d * x * x, d * x * v, d * v * v, one)
    return wp.vector(zero, zero, zero, one)


@wp.func
def sig_update(
    nv: int,
    env: int,
    efc_J: wp.array3d(dtype=Any),
    efc_type: wp.array2d(dtype=wp.int32),
    efc_D: wp.array2d(dtype=Any),
    efc_R: wp.array2d(dtype=Any),
    efc_floss: wp.array2d(dtype=Any),
    efc_mu: wp.array2d(dtype=Any),
    efc_dim: wp.array2d(dtype=wp.int32),
    efc_load: wp.array2d(dtype=Any),
    nrow: int,
    M: wp.array3d(dtype=Any),
    qacc_smooth: wp.array2d(dtype=Any),
    qacc: wp.array2d(dtype=Any),
    efc_aref: wp.array2d(dtype=Any),
    jar: wp.array2d(dtype=Any),
    efc_force: wp.array2d(dtype=Any),
    efc_state: wp.array2d(dtype=wp.int32),
    qfrc_constraint: wp.array2d(dtype=Any),
    grad: wp.array2d(dtype=Any),
    ma: wp.array2d(dtype=Any),
    full: int,
):
    """Forces, states (1 quadratic / stick, 2 saturated friction block, 0 inactive), qfrc = Jᵀf,
    gradient M(a − a₀) − Jᵀf and the total cost of the signorini problem at the latched loads.
    full = 1 recomputes jar = J·qacc − aref and ma = M(qacc − qacc_smooth); 0 uses the caller's."""
    zero = qacc[env, 0] * type(qacc[env, 0])(0.0)
    half = type(zero)(0.5)
    if full == 1:
        for i in range(nrow):
            s = zero
            for j in range(nv):
                s = s + efc_J[env, i, j] * qacc[env, j]
            jar[env, i] = s - efc_aref[env, i]
    cost = zero
    i = int(0)
    while i < nrow:
        tp = efc_type[env, i]
        x = jar[env, i]
        d = efc_D[env, i]
        f = zero
        st = 0
        if tp == CONTACT_ELLIPTIC:
            dim = efc_dim[env, i]
            if x < zero:
                f = -d * x
                st = 1
                cost = cost + half * d * x * x
            efc_force[env, i] = f
            efc_state[env, i] = st
            b = int(1)
            while b < dim:
                sz = sig_block_size(dim, b)
                ee = zero
                for k in range(sz):
                    ee = ee + jar[env, i + b + k] * jar[env, i + b + k]
                db = efc_D[env, i + b]
                r = efc_mu[env, i + b] * efc_load[env, i]
                en = wp.sqrt(ee)
                if db * en <= r:
                    cost = cost + half * db * ee
                    for k in range(sz):
                        efc_force[env, i + b + k] = -db * jar[env, i + b + k]
                        efc_state[env, i + b + k] = 1
                else:
                    cost = cost + r * en - half * r * r / db
                    for k in range(sz):
                        efc_force[env, i + b + k] = -r * jar[env, i + b + k] / en
                        efc_state[env, i + b + k] = 2
                b = b + sz
            i = i + dim
        else:
            if tp == EQUALITY:
                f = -d * x
                st = 1
                cost = cost + half * d * x * x
            elif tp == FRICTION:
                fl = efc_floss[env, i]
                rf = efc_R[env, i] * fl
                if x <= -rf:
                    f = fl
                    cost = cost - fl * x - half * rf * fl
                elif x >= rf:
                    f = -fl
                    cost = cost + fl * x - half * rf * fl
                else:
                    f = -d * x
                    st = 1
                    cost = cost + half * d * x * x
            elif x < zero:
                f = -d * x
                st = 1
                cost = cost + half * d * x * x
            efc_force[env, i] = f
            efc_state[env, i] = st
            i = i + 1
    for j in range(nv):
        s = zero
        for r2 in range(nrow):
            s = s + efc_J[env, r2, j] * efc_force[env, r2]
        qfrc_constraint[env, j] = s
        m = ma[env, j]
        if full == 1:
            m = zero
            for k in range(nv):
                m = m + M[env, j, k] * (qacc[env, k] - qacc_smooth[env, k])
            ma[env, j] = m
        grad[env, j] = m - s
    for j in range(nv):
        cost = cost + half * (qacc[env, j] - qacc_smooth[env, j]) * ma[env, j]
    return cost


@wp.func
def sig_hess_add(nv: int, env: int, efc_J: wp.array3d(dtype=Any), H: wp.array3d(dtype=Any), ra: int, rb: int,
                 w: Any):
    """H += w·J_raᵀ J_rb."""
    zero = w * type(w)(0.0)
    for j in range(nv):
        ja = efc_J[env, ra, j] * w
        if ja != zero:
            for k in range(nv):
                H[env, j, k] = H[env, j, k] + ja * efc_J[env, rb, k]


@wp.func
def sig_relatch(env: int, nrow: int, efc_type: wp.array2d(dtype=wp.int32), efc_D: wp.array2d(dtype=Any),
                efc_dim: wp.array2d(dtype=wp.int32), jar: wp.array2d(dtype=Any), efc_load: wp.array2d(dtype=Any),
                efc_dload: wp.array2d(dtype=Any)):
    """Re-latch each contact's normal load to its developed normal force max(0, −D_n·x_n); a
    change that reverses the previous one without shrinking it (non-contracting oscillation) is
    halved. Returns (largest |change|, number of halved changes)."""
    zero = jar[env, 0] * type(jar[env, 0])(0.0)
    half = type(zero)(0.5)
    big = zero
    nh = zero
    i = int(0)
    while i < nrow:
        if efc_type[env, i] == CONTACT_ELLIPTIC:
            c = wp.max(zero, -efc_D[env, i] * jar[env, i])
            dl = c - efc_load[env, i]
            dp = efc_dload[env, i]
            if dl * dp < zero and wp.abs(dl) >= wp.abs(dp):
                dl = half * dl
                nh = nh + type(zero)(1.0)
            efc_load[env, i] = efc_load[env, i] + dl
            efc_dload[env, i] = dl
            big = wp.max(big, wp.abs(dl))
            i = i + efc_dim[env, i]
        else:
            i = i + 1
    return wp.vector(big, nh)


@wp.kernel
def constraint_solve_signorini(
    # Model:
    nv: int,
    iterations: int,
    tolerance: Any,
    ls_iterations: int,
    ls_tolerance: Any,
    # Data in:
    M: wp.array3d(dtype=Any),
    qacc_smooth: wp.array2d(dtype=Any),
    qacc_warm: wp.array2d(dtype=Any),
    n_efc: wp.array(dtype=wp.int32),
    efc_J: wp.array3d(dtype=Any),
    efc_type: wp.array2d(dtype=wp.int32),
    efc_aref: wp.array2d(dtype=Any),
    efc_R: wp.array2d(dtype=Any),
    efc_D: wp.array2d(dtype=Any),
    efc_floss: wp.array2d(dtype=Any),
    efc_mu: wp.array2d(dtype=Any),
    efc_dim: wp.array2d(dtype=wp.int32),
    # Scratch:
    H: wp.array3d(dtype=Any),
    jar: wp.array2d(dtype=Any),
    jv: wp.array2d(dtype=Any),
    grad: wp.array2d(dtype=Any),
    search: wp.array2d(dtype=Any),
    ma: wp.array2d(dtype=Any),
    mv: wp.array2d(dtype=Any),
    efc_load: wp.array2d(dtype=Any),
    efc_dload: wp.array2d(dtype=Any),
    # Data out:
    qacc: wp.array2d(dtype=Any),
    efc_force: wp.array2d(dtype=Any),
    efc_state: wp.array2d(dtype=wp.int32),
    qfrc_constraint: wp.array2d(dtype=Any),
    solver_niter: wp.array(dtype=wp.int32),
    solver_stat: wp.array2d(dtype=Any),
    sig_nhalf: wp.array(dtype=wp.int32),
):
    """Newton on the signorini problem (elliptic rows as built by constraint_build): per iteration
    the Hessian M + Σ D JᵀJ (active quadratic rows, normal rows in contact, sticking blocks) +
    Σ (r/‖e‖) Jᵀ(I − êêᵀ)J (saturated blocks), Cholesky, exact line search at fixed loads, update,
    re-latch. Stops when scale·improvement < tolerance AND scale·‖g‖ < tolerance (scale = 1/trace M),
    or when the line search cannot move and the loads did not change; ``iterations`` is a cap
    (in float32 the gradient test can sit on rounding for stiff stacks: the cap then ends the solve).
    solver_stat = (improvement, gradient, cost) as the convex kernel; sig_nhalf counts the halved
    load changes of the solve."""
    env = wp.tid()
    nrow = n_efc[env]
    zero = tolerance * type(tolerance)(0.0)
    one = zero + type(tolerance)(1.0)
    half = type(tolerance)(0.5)
    trace = zero
    for j in range(nv):
        trace = trace + M[env, j, j]
    scale = one / wp.max(trace, type(tolerance)(1.0e-15))
    for i in range(nrow, efc_force.shape[1]):
        efc_force[env, i] = zero
        efc_state[env, i] = 0
        efc_load[env, i] = zero
        efc_dload[env, i] = zero
    for j in range(nv):
        search[env, j] = qacc_warm[env, j]
        qacc[env, j] = search[env, j]
        if nrow == 0:
            qacc[env, j] = qacc_smooth[env, j]
    for i in range(nrow):
        s = zero
        for j in range(nv):
            s = s + efc_J[env, i, j] * qacc[env, j]
        jar[env, i] = s - efc_aref[env, i]
        efc_load[env, i] = zero
        efc_dload[env, i] = zero
    sig_relatch(env, nrow, efc_type, efc_D, efc_dim, jar, efc_load, efc_dload)
    for i in range(nrow):
        efc_dload[env, i] = zero
    cost = sig_update(nv, env, efc_J, efc_type, efc_D, efc_R, efc_floss, efc_mu, efc_dim, efc_load, nrow, M,
                      qacc_smooth, qacc, efc_aref, jar, efc_force, efc_state, qfrc_constraint, grad, ma, 1)
    niter = int(0)
    nhalf = int(0)
    improvement = zero
    gnorm = zero
    for j in range(nv):
        gnorm = gnorm + grad[env, j] * grad[env, j]
    gnorm = scale * wp.sqrt(gnorm)
    done = int(0)
    if nrow == 0 or gnorm < tolerance:
        done = 1
    for _it in range(iterations):
        if done == 1:
            continue
        # ---- Newton direction
        for j in range(nv):
            for k in range(nv):
                H[env, j, k] = M[env, j, k]
        i = int(0)
        while i < nrow:
            if efc_type[env, i] == CONTACT_ELLIPTIC:
                dim = efc_dim[env, i]
                if efc_state[env, i] == 1:
                    sig_hess_add(nv, env, efc_J, H, i, i, efc_D[env, i])
                b = int(1)
                while b < dim:
                    sz = sig_block_size(dim, b)
                    if efc_state[env, i + b] == 1:
                        for k in range(sz):
                            sig_hess_add(nv, env, efc_J, H, i + b + k, i + b + k, efc_D[env, i + b])
                    else:
                        ee = zero
                        for k in range(sz):
                            ee = ee + jar[env, i + b + k] * jar[env, i + b + k]
                        en = wp.sqrt(ee)
                        w = efc_mu[env, i + b] * efc_load[env, i] / en
                        for ka in range(sz):
                            for kb in range(sz):
                                idn = zero
                                if ka == kb:
                                    idn = one
                                hab = w * (idn - jar[env, i + b + ka] * jar[env, i + b + kb] / ee)
                                sig_hess_add(nv, env, efc_J, H, i + b + ka, i + b + kb, hab)
                    b = b + sz
                i = i + dim
            else:
                if efc_state[env, i] == 1:
                    sig_hess_add(nv, env, efc_J, H, i, i, efc_D[env, i])
                i = i + 1
        cholesky_factor(nv, env, H)
        cholesky_solve(nv, env, H, grad, search)
        for j in range(nv):
            search[env, j] = -search[env, j]
        # ---- exact line search at the latched loads (convex piecewise 1-D cost)
        for j in range(nv):
            s = zero
            for k in range(nv):
                s = s + M[env, j, k] * search[env, k]
            mv[env, j] = s
        pmp = zero
        pg0 = zero
        for j in range(nv):
            pmp = pmp + search[env, j] * mv[env, j]
            pg0 = pg0 + search[env, j] * ma[env, j]
        for r in range(nrow):
            s = zero
            for k in range(nv):
                s = s + efc_J[env, r, k] * search[env, k]
            jv[env, r] = s
        gtol = zero
        lo = zero
        hi = -one
        alpha = one
        for ls in range(ls_iterations):
            c1 = pg0 + alpha * pmp
            c2 = pmp
            i = int(0)
            while i < nrow:
                rc = sig_row_cost(efc_type, efc_D, efc_R, efc_floss, efc_mu, efc_dim, efc_load, jar, jv, env, i, alpha)
                c1 = c1 + rc[1]
                c2 = c2 + rc[2]
                i = i + int(rc[3])
            if ls == 0:
                d0 = pg0
                i = int(0)
                while i < nrow:
                    rc = sig_row_cost(efc_type, efc_D, efc_R, efc_floss, efc_mu, efc_dim, efc_load, jar, jv, env, i,
                                      zero)
                    d0 = d0 + rc[1]
                    i = i + int(rc[3])
                gtol = ls_tolerance * wp.abs(d0)
                if d0 >= zero:
                    alpha = zero
                    break
            if wp.abs(c1) <= gtol:
                break
            if c1 < zero:
                lo = alpha
            else:
                hi = alpha
            nxt = alpha - c1 / wp.max(c2, type(tolerance)(1.0e-30))
            if hi >= zero:
                if nxt <= lo or nxt >= hi:
                    nxt = half * (lo + hi)
            elif nxt <= lo:
                nxt = type(tolerance)(2.0) * alpha
            if nxt == alpha:
                break
            alpha = nxt
        for j in range(nv):
            qacc[env, j] = qacc[env, j] + alpha * search[env, j]
            ma[env, j] = ma[env, j] + alpha * mv[env, j]
        for r in range(nrow):
            jar[env, r] = jar[env, r] + alpha * jv[env, r]
        old = cost
        # full recompute of jar and ma (not the incremental update): the loads are re-latched from jar
        cost = sig_update(nv, env, efc_J, efc_type, efc_D, efc_R, efc_floss, efc_mu, efc_dim, efc_load, nrow, M,
                          qacc_smooth, qacc, efc_aref, jar, efc_force, efc_state, qfrc_constraint, grad, ma, 1)
        improvement = scale * (old - cost)
        # ---- re-latch the loads; forces, gradient and cost at the new loads
        rl = sig_relatch(env, nrow, efc_type, efc_D, efc_dim, jar, efc_load, efc_dload)
        dmax = rl[0]
        nhalf = nhalf + int(rl[1])
        if dmax > zero:
            cost = sig_update(nv, env, efc_J, efc_type, efc_D, efc_R, efc_floss, efc_mu, efc_dim, efc_load, nrow, M,
                              qacc_smooth, qacc, efc_aref, jar, efc_force, efc_state, qfrc_constraint, grad, ma, 0)
        niter = niter + 1
        gnorm = zero
        for j in range(nv):
            gnorm = gnorm + grad[env, j] * grad[env, j]
        gnorm = scale * wp.sqrt(gnorm)
        if (improvement < tolerance and gnorm < tolerance) or (alpha == zero and dmax == zero):
            done = 1
    solver_niter[env] = niter
    solver_stat[env, 0] = improvement
    solver_stat[env, 1] = gnorm
    solver_stat[env, 2] = cost
    sig_nhalf[env] = nhalf


# ---------------------------------------------------------------- noslip (SPEC R8)


@wp.func
def ns_row_solve(nv: int, env: int, L: wp.array3d(dtype=Any), efc_J: wp.array3d(dtype=Any), r: int,
                 X: wp.array3d(dtype=Any)):
    """X[r] = M⁻¹ J_rᵀ with L the Cholesky factor of M."""
    for i in range(nv):
        s = efc_J[env, r, i]
        for k in range(i):
            s = s - L[env, i, k] * X[env, r, k]
        X[env, r, i] = s / L[env, i, i]
    for ii in range(nv):
        i = nv - 1 - ii
        s = X[env, r, i]
        for k in range(i + 1, nv):
            s = s - L[env, k, i] * X[env, r, k]
        X[env, r, i] = s / L[env, i, i]


@wp.func
def ns_dot(nv: int, env: int, efc_J: wp.array3d(dtype=Any), a: int, X: wp.array3d(dtype=Any), b: int):
    """J_a · M⁻¹ J_bᵀ (an entry of A = J M⁻¹ Jᵀ)."""
    s = efc_J[env, a, 0] * X[env, b, 0]
    for k in range(1, nv):
        s = s + efc_J[env, a, k] * X[env, b, k]
    return s


@wp.func
def ns_res(nv: int, env: int, efc_J: wp.array3d(dtype=Any), a: int, v: wp.array2d(dtype=Any),
           efc_aref: wp.array2d(dtype=Any)):
    """Unregularized residual of row a: J_a·qacc(f) − aref_a with qacc(f) = a₀ + M⁻¹Jᵀf."""
    s = efc_J[env, a, 0] * v[env, 0]
    for k in range(1, nv):
        s = s + efc_J[env, a, k] * v[env, k]
    return s - efc_aref[env, a]


@wp.kernel
def constraint_noslip(
    # Model:
    nv: int,
    iterations: int,
    tolerance: Any,
    fixed_scale: Any,
    # Data in:
    M: wp.array3d(dtype=Any),
    qacc_smooth: wp.array2d(dtype=Any),
    n_efc: wp.array(dtype=wp.int32),
    efc_J: wp.array3d(dtype=Any),
    efc_type: wp.array2d(dtype=wp.int32),
    efc_aref: wp.array2d(dtype=Any),
    efc_R: wp.array2d(dtype=Any),
    efc_floss: wp.array2d(dtype=Any),
    # Scratch:
    LM: wp.array3d(dtype=Any),
    efc_MiJ: wp.array3d(dtype=Any),
    # Data out:
    qacc: wp.array2d(dtype=Any),
    efc_force: wp.array2d(dtype=Any),
    qfrc_constraint: wp.array2d(dtype=Any),
    noslip_niter: wp.array(dtype=wp.int32),
    noslip_stat: wp.array(dtype=Any),
):
    """Noslip post-pass after the main solve (MuJoCo's mj_solNoSlip semantics): projected
    Gauss–Seidel sweeps over the DOF frictionloss rows (clamped to ±frictionloss) and the pyramidal
    contact edge pairs (the pair's sum — the normal force — held, its difference minimized over
    [−sum, sum]) on the UNREGULARIZED problem A = J M⁻¹ Jᵀ, residual J·qacc(f) − aref. A pair update
    that would raise the cost by more than 1e-10 is undone. The sweep improvement (the first sweep
    also counts ½Σ R f², the removed regularization) times scale (fixed_scale, or 1/trace M when
    0) below ``tolerance`` stops; ``iterations`` caps. Then qfrc_constraint = Jᵀf and
    qacc = qacc_smooth + M⁻¹ qfrc_constraint. Matrix-free: M⁻¹J_rᵀ per row from one Cholesky of M."""
    env = wp.tid()
    nrow = n_efc[env]
    zero = tolerance * type(tolerance)(0.0)
    one = zero + type(tolerance)(1.0)
    half = type(tolerance)(0.5)
    for j in range(nv):
        for k in range(nv):
            LM[env, j, k] = M[env, j, k]
    cholesky_factor(nv, env, LM)
    scale = fixed_scale
    if scale <= zero:
        tr = zero
        for j in range(nv):
            tr = tr + M[env, j, j]
        scale = one / wp.max(tr, type(tolerance)(1.0e-15))
    # M⁻¹Jᵀ of every row; qacc(f) = qacc_smooth + Σ_r M⁻¹J_rᵀ f_r
    for j in range(nv):
        qacc[env, j] = qacc_smooth[env, j]
    for r in range(nrow):
        ns_row_solve(nv, env, LM, efc_J, r, efc_MiJ)
        fr = efc_force[env, r]
        for j in range(nv):
            qacc[env, j] = qacc[env, j] + efc_MiJ[env, r, j] * fr
    niter = int(0)
    improvement = zero
    done = int(0)
    for it in range(iterations):
        if done == 1:
            continue
        improvement = zero
        if it == 0:
            for r in range(nrow):
                improvement = improvement + half * efc_force[env, r] * efc_force[env, r] * efc_R[env, r]
        i = int(0)
        while i < nrow:
            tp = efc_type[env, i]
            if tp == FRICTION:
                res = ns_res(nv, env, efc_J, i, qacc, efc_aref)
                a = wp.max(type(tolerance)(1.0e-15), ns_dot(nv, env, efc_J, i, efc_MiJ, i))
                old = efc_force[env, i]
                f = old - res / a
                fl = efc_floss[env, i]
                if f < -fl:
                    f = -fl
                elif f > fl:
                    f = fl
                dl = f - old
                improvement = improvement - (half * dl * dl * a + dl * res)
                efc_force[env, i] = f
                for j in range(nv):
                    qacc[env, j] = qacc[env, j] + efc_MiJ[env, i, j] * dl
                i = i + 1
            elif tp == CONTACT_PYRAMIDAL:
                k = i + 1
                r0 = ns_res(nv, env, efc_J, i, qacc, efc_aref)
                r1 = ns_res(nv, env, efc_J, k, qacc, efc_aref)
                a00 = wp.max(type(tolerance)(1.0e-10), ns_dot(nv, env, efc_J, i, efc_MiJ, i))
                a11 = wp.max(type(tolerance)(1.0e-10), ns_dot(nv, env, efc_J, k, efc_MiJ, k))
                a01 = ns_dot(nv, env, efc_J, i, efc_MiJ, k)
                a10 = ns_dot(nv, env, efc_J, k, efc_MiJ, i)
                o0 = efc_force[env, i]
                o1 = efc_force[env, k]
                b0 = r0 - (a00 * o0 + a01 * o1)
                b1 = r1 - (a10 * o0 + a11 * o1)
                mid = half * (o0 + o1)
                k1 = a00 + a11 - a01 - a10
                k0 = mid * (a00 - a11) + b0 - b1
                f0 = mid
                f1 = mid
                if k1 >= type(tolerance)(1.0e-15):
                    y = -k0 / k1
                    if y < -mid:
                        f0 = zero
                        f1 = type(tolerance)(2.0) * mid
                    elif y > mid:
                        f0 = type(tolerance)(2.0) * mid
                        f1 = zero
                    else:
                        f0 = mid + y
                        f1 = mid - y
                d0 = f0 - o0
                d1 = f1 - o1
                ch = half * (d0 * (a00 * d0 + a01 * d1) + d1 * (a10 * d0 + a11 * d1)) + d0 * r0 + d1 * r1
                if ch > type(tolerance)(1.0e-10):
                    ch = zero
                else:
                    efc_force[env, i] = f0
                    efc_force[env, k] = f1
                    for j in range(nv):
                        qacc[env, j] = qacc[env, j] + efc_MiJ[env, i, j] * d0 + efc_MiJ[env, k, j] * d1
                improvement = improvement - ch
                i = i + 2
            else:
                i = i + 1
        improvement = improvement * scale
        niter = niter + 1
        if improvement < tolerance:
            done = 1
    # map to joint space (exact, as after a dual solve)
    for j in range(nv):
        s = zero
        for r in range(nrow):
            s = s + efc_J[env, r, j] * efc_force[env, r]
        qfrc_constraint[env, j] = s
    if nrow > 0:
        for j in range(nv):
            s = zero
            for r in range(nrow):
                s = s + efc_MiJ[env, r, j] * efc_force[env, r]
            qacc[env, j] = qacc_smooth[env, j] + s
    noslip_niter[env] = niter
    noslip_stat[env] = improvement


def _overloads_signorini_noslip():
    for s in (wp.float32, wp.float64):
        a1 = wp.array(dtype=s)
        a2 = wp.array2d(dtype=s)
        a3 = wp.array3d(dtype=s)
        wp.overload(constraint_solve_signorini, {
            "tolerance": s, "ls_tolerance": s, "M": a3, "qacc_smooth": a2, "qacc_warm": a2,
            "efc_J": a3, "efc_aref": a2, "efc_R": a2, "efc_D": a2, "efc_floss": a2, "efc_mu": a2, "H": a3, "jar": a2,
            "jv": a2,
            "grad": a2, "search": a2, "ma": a2, "mv": a2, "efc_load": a2, "efc_dload": a2, "qacc": a2,
            "efc_force": a2, "qfrc_constraint": a2, "solver_stat": a2,
        })
        wp.overload(constraint_noslip, {
            "tolerance": s, "fixed_scale": s, "M": a3, "qacc_smooth": a2, "efc_J": a3, "efc_aref": a2, "efc_R": a2,
            "efc_floss": a2, "LM": a3, "efc_MiJ": a3, "qacc": a2, "efc_force": a2, "qfrc_constraint": a2,
            "noslip_stat": a1,
        })


_overloads_signorini_noslip()
