"""Constraint rows stage kernels (docs/semantics.md §R5-§R7, MuJoCo's mj_makeConstraint + mj_makeImpedance +
mj_referenceConstraint; docs/constraint.md).

``contact_params`` (one thread per env): per-contact friction / sol_params / condim from the two
geoms (per-env friction and friction_ratio, docs/semantics.md §R5; MuJoCo's mj_contactParam in MuJoCo mode) or an
explicit ``<pair>`` (its per-env friction, scaled by its geoms' larger friction_ratio in the default
mode; its solreffriction). Reads ``m``: geom and pair tables, opt; ``d``: ncon, con_geom, con_pair.
Writes ``d``: con_friction, con_sol, con_solreffriction, con_dim.

``connect_bias`` (env × equality): J̇·q̇ of connect and weld rows. Reads ``d``: qvel, cdof, cdofdot,
dof_ref, link_pos, link_quat. Writes ``d.eq_acc_bias``.

``make_rows`` (one thread per env): with ``params`` = 1 first the contact parameters (``contact_params``' body, the
same numbers: the solver's own path, one launch and one pass over the contacts fewer); then rows in the order equality
(connect, weld, joint) → DOF frictionloss → contact → joint limit; dense ``efc_J`` along the kinematic tree (native
loops in kernels/constraint_rows.cpp; the whole contact section is one native call, ``contact_rows_native``), per row
the position, margin, velocity J·qvel, impedance, reference acceleration aref = −B·vel − K·I·(pos − margin),
regularization R and D = 1/R. Reads ``m``: limits, equalities, frictionloss, invweights, opt (cone, impratio,
tc_floor); ``d``: qpos, qvel, cdof_w/v, dof_ref, link_pos/quat, eq_active, eq_acc_bias, the contacts (and qacc_smooth
when ``lim_window_h`` > 0). A hinge/slide limit side gets a row while its distance is below the joint's margin; with
``lim_window_h`` = h > 0 (the contact hand-off to SAP, docs/sap.md) also while it is at most Drake's window
2h·max(|v|, |v*|), v* = v + h·qacc_smooth (the rigid solver's own path passes 0: margin only).
Writes ``d``: nefc, efc_overflow,
efc_J, efc_type, efc_id, efc_dim, efc_pos, efc_margin, efc_vel, efc_aref, efc_R, efc_D, efc_imp,
efc_frictionloss, efc_mu, con_efc_adr (``params`` = 1: also con_friction, con_sol, con_solreffriction, con_dim).
For an elliptic contact the normal row holds ``efc_dim`` (the
cone dimension) and ``efc_mu`` (the regularized cone slope μ·sqrt(R_t/R_n)); its friction rows hold
their friction coefficient in ``efc_mu``.
"""

from typing import Any

import warp as wp

from ..types import ConstraintType, EqType, overload
from . import native
from .row_pool import pool_rows2, pool_rows3

wp.set_module_options({"enable_backward": False})

# Drake's kLimitWindowFactor (MultibodyPlant's SAP driver, AddLimitConstraints): a hinge/slide limit row
# is built while the limit lies within LIMIT_WINDOW·h·max(|v|, |v*|) of the joint (docs/sap.md)
LIMIT_WINDOW = wp.constant(2.0)

I1 = wp.array(dtype=wp.int32)
A1 = wp.array(dtype=Any)
A2 = wp.array2d(dtype=Any)
A3 = wp.array3d(dtype=Any)
I3 = wp.array3d(dtype=wp.int32)
I2 = wp.array2d(dtype=wp.int32)


@wp.func_native(native.body(__file__, "point_jac_native"))
def point_jac_native(dof_parent: I1, link_dof_last: I1, cdof_w: A2, cdof_v: A2, dof_ref: A2, env: int, link: int,
                     p: Any, axis: Any, rot: int, scale: Any, efc_J: A3, efc_span: I3, row: int): ...


@wp.func_native(native.body(__file__, "contact_rows_native"))
def contact_rows_native(nv: int, max_rows: int, cone: int, impratio: Any, tc_floor: Any, env: int, row: int, clr: int,
                        dof_parent: I1, link_dof_last: I1, link_invweight: A2, cdof_w: A2, cdof_v: A2, dof_ref: A2,
                        qvel: A2, n_con: int, con_dim: I2, con_link: I3, con_pos: A2, con_frame: A2, con_dist: A2,
                        con_margin: A2, con_friction: A3, con_sol: A3, con_solreffriction: A3, con_efc_adr: I2,
                        efc_J: A3, efc_span: I3, efc_chain: I3, efc_type: I2, efc_id: I2, efc_dim: I2, efc_pos: A2,
                        efc_margin: A2, efc_vel: A2, efc_aref: A2, efc_R: A2, efc_D: A2, efc_imp: A2, efc_floss: A2, efc_mu: A2,
                        n_efc: I1, overflow: I1, efc_seg: I3, segs: int, pf: int, pf_doff: int): ...


@wp.func_native(native.body(__file__, "row_clear_native"))
def row_clear_native(efc_J: A3, efc_span: I3, efc_chain: I3, dof_parent: I1, link_dof_last: I1, env: int, row: int,
                     nv: int): ...


@wp.func_native(native.body(__file__, "row_dot_native"))
def row_dot_native(efc_J: A3, efc_span: I3, qvel: A2, env: int, row: int, nv: int, out: A2, efc_seg: I3, segs: int): ...


# ---------------------------------------------------------------- parameters (docs/semantics.md §R6-§R7)


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
def span_extend(efc_span: wp.array3d(dtype=wp.int32), env: int, row: int, lo: int, hi: int):
    """The row's nonzero column span [lo, hi) grows to include [lo, hi)."""
    efc_span[env, row, 0] = wp.min(efc_span[env, row, 0], lo)
    efc_span[env, row, 1] = wp.max(efc_span[env, row, 1], hi)


@wp.func
def point_jac_add(
    dof_parent: wp.array(dtype=wp.int32),
    link_dof_last: wp.array(dtype=wp.int32),
    efc_span: wp.array3d(dtype=wp.int32),
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
    (native C++ walk of the dof chain, point_jac_native, which also grows the row's span by the
    chain's columns)."""
    if link < 0:
        return
    point_jac_native(dof_parent, link_dof_last, cdof_w, cdof_v, dof_ref, env, link, p, axis, rot, scale, efc_J, efc_span,
                     row)


# ---------------------------------------------------------------- rows


@wp.func
def finish_row(
    efc_J: wp.array3d(dtype=Any),
    efc_span: wp.array3d(dtype=wp.int32),
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
    efc_seg: wp.array3d(dtype=wp.int32),
    segs: int,
):
    # efc_vel[env, row] = J_row·qvel; with segs = 1 the row's nonzero segments into efc_seg (while it is in cache)
    row_dot_native(efc_J, efc_span, qvel, env, row, nv, efc_vel, efc_seg, segs)
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
def clear_row(efc_J: wp.array3d(dtype=Any), efc_span: wp.array3d(dtype=wp.int32), efc_chain: wp.array3d(dtype=wp.int32),
              dof_parent: wp.array(dtype=wp.int32), link_dof_last: wp.array(dtype=wp.int32), env: int, row: int, nv: int):
    """J[row] = 0 (over its links' dof chains when efc_chain records them and the span is theirs, else over
    its span), the span empty (nv, 0), no links recorded."""
    row_clear_native(efc_J, efc_span, efc_chain, dof_parent, link_dof_last, env, row, nv)


@wp.func
def init_rows(
    efc_J: wp.array3d(dtype=Any),
    efc_span: wp.array3d(dtype=wp.int32),
    efc_chain: wp.array3d(dtype=wp.int32),
    dof_parent: wp.array(dtype=wp.int32),
    link_dof_last: wp.array(dtype=wp.int32),
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
        clear_row(efc_J, efc_span, efc_chain, dof_parent, link_dof_last, env, i, nv)
        efc_floss[env, i] = zero
        efc_mu[env, i] = zero
        efc_dim[env, i] = 0
        efc_D[env, i] = zero
        efc_R[env, i] = type(zero)(1.0)
        efc_aref[env, i] = zero
    return wp.max(lo, hi)


@wp.func_native(native.body(__file__, "rows_prefetch_native"))
def rows_prefetch_native(env: int, pf: int, qpos: A2, dof_frictionloss: A2, lim_sol: A3, params: int, ncon: I1,
                         con_geom: I3, con_pair: I2, geom_friction: A3, geom_friction_ratio: A2): ...


@wp.func_native(native.body(__file__, "contact_params_native"))
def contact_params_native(env: int, prefetch: int, mujoco_mode: int, tc_floor: Any, friction_floor: Any, ncon: I1,
                          con_geom: I3, con_pair: I2, geom_friction: A3, geom_friction_ratio: A2, geom_condim: I1,
                          geom_priority: I1, geom_sol: A2, geom_solmix: A1, pair_friction: A3, pair_solreffriction: A2,
                          pair_sol: A2, pair_condim: I1, con_friction: A3, con_sol: A3, con_solreffriction: A3,
                          con_dim: I2): ...


@wp.kernel
def contact_params(m: Any, d: Any, prefetch: int):
    """Per-contact parameters with per-env geom friction (n_envs, G, 3: sliding, torsional,
    rolling) and explicit pairs (docs/semantics.md §R5, MuJoCo's mj_contactParam / <contact><pair>).

    A contact of an explicit pair (con_pair >= 0) takes the pair's condim, 5 friction coefficients
    (per env; default mode: times the larger friction_ratio of its two geoms), sol_params and
    solreffriction outright (MuJoCo: pair_dim, pair_friction, pair_solref/solimp/solreffriction; no
    mixing), floored like any contact (friction floor; default mode: timeconst >= 2h).
    Otherwise, default mode: μ_k = max(μ_A,k·s_A, μ_B,k·s_B, floor), sol_params averaged then
    timeconst floored at 2h, condim max; MuJoCo mode: priority wins outright, else friction
    max, solref solmix-weighted (elementwise min when either is direct), solimp solmix-weighted.
    Native body: kernels/constraint_rows.cpp ``contact_params_native`` (the same operations as the Warp
    loop it replaced); ``prefetch`` = 1: on CPU the next env's contact rows are prefetched first (no
    effect on the numbers)."""
    env = wp.tid()
    contact_params_native(env, prefetch, m.opt.mujoco_mode, m.opt.tc_floor, m.opt.friction_floor, d.ncon, d.con_geom,
                          d.con_pair, m.geom_friction, m.geom_friction_ratio, m.geom_condim, m.geom_priority, m.geom_sol,
                          m.geom_solmix, m.pair_friction, m.pair_solreffriction, m.pair_sol, m.pair_condim,
                          d.con_friction, d.con_sol, d.con_solreffriction, d.con_dim)


@wp.kernel
def connect_bias(m: Any, d: Any):
    """J̇·q̇ of connect (3) and weld (6) rows (MuJoCo 4 subtracts it from aref). Translation: world
    acceleration of anchor1 − anchor2 at qacc = 0 (mj_jacDot: Σ_d (ċdof_v + ċdof_w × (p − ref) +
    cdof_w × ṗ)·q̇_d along each link's dof chain). Weld rotation: dof/dt of
    0.5·ts·vec(q̄2⊗(0, ω1−ω2)⊗q1⊗rel) at qacc = 0 (tests/rigid_constraint/mjscenes.py::weld_jdot_qvel)."""
    env, e = wp.tid()
    typ = m.eq_type[e]
    if typ == EqType.JOINT:
        return
    one = type(m.eq_data[e, 0])(1.0)
    zero = d.link_pos[env, 0] * (one - one)
    acc = zero
    w0 = zero
    w1 = zero
    al0 = zero
    al1 = zero
    for j in range(2):
        l = m.eq_obj[e, j]
        if l < 0:
            continue
        c = 3 * j
        if typ == EqType.WELD:
            c = 3 * (1 - j)
        anchor = type(zero)(m.eq_data[e, c], m.eq_data[e, c + 1], m.eq_data[e, c + 2])
        p = d.link_pos[env, l] + wp.quat_rotate(d.link_quat[env, l], anchor)
        pd = zero
        w = zero
        al = zero
        dof = m.link_dof_last[l]
        while dof >= 0:
            qd = d.qvel[env, dof]
            pd = pd + (d.cdof_v[env, dof] + wp.cross(d.cdof_w[env, dof], p - d.dof_ref[env, dof])) * qd
            w = w + d.cdof_w[env, dof] * qd
            al = al + d.cdofdot_w[env, dof] * qd
            dof = m.dof_parent[dof]
        a = zero
        dof = m.link_dof_last[l]
        while dof >= 0:
            a = a + (d.cdofdot_v[env, dof] + wp.cross(d.cdofdot_w[env, dof], p - d.dof_ref[env, dof])
                     + wp.cross(d.cdof_w[env, dof], pd)) * d.qvel[env, dof]
            dof = m.dof_parent[dof]
        if j == 0:
            acc = acc + a
            w0 = w
            al0 = al
        else:
            acc = acc - a
            w1 = w
            al1 = al
    for k in range(3):
        d.eq_acc_bias[env, e, k] = acc[k]
    if typ == EqType.WELD:
        l0 = m.eq_obj[e, 0]
        l1 = m.eq_obj[e, 1]
        q0 = d.link_quat[env, l0]
        q1 = wp.quaternion(zero[0], zero[1], zero[2], one)
        if l1 >= 0:
            q1 = d.link_quat[env, l1]
        rel = wp.quaternion(m.eq_data[e, 7], m.eq_data[e, 8], m.eq_data[e, 9], m.eq_data[e, 6])
        ts = m.eq_data[e, 10]
        q1c = wp.quat_inverse(q1)
        qq = q0 * rel
        wr = w0 - w1
        ar = al0 - al1
        half = one * type(one)(0.5)
        pw1 = wp.quaternion(w1[0], w1[1], w1[2], zero[0])
        pwr = wp.quaternion(wr[0], wr[1], wr[2], zero[0])
        pw0 = wp.quaternion(w0[0], w0[1], w0[2], zero[0])
        par = wp.quaternion(ar[0], ar[1], ar[2], zero[0])
        t = (q1c * pw1 * pwr * qq) * (-half) + q1c * par * qq + (q1c * pwr * pw0 * qq) * half
        for k in range(3):
            d.eq_acc_bias[env, e, 3 + k] = half * ts * t[k]


@wp.kernel
def make_rows(m: Any, d: Any, lim_window_h: Any, segs: int, prefetch: int, params: int, pool: int, head: int):
    env = wp.tid()
    # the env's rows in the View's pool (docs/constraint.md, "The row pool"): pool = 1 (CPU, where a View's envs
    # are built one after another in order) from where the previous env's rows end, adr[e] = adr[e − 1] +
    # count[e − 1], kept as the offset from the env's own block of the arrays' R rows (R = max_rows as allocated),
    # efc_off[e] = adr[e] − e·R; pool = 0 (CUDA, the SAP hand-off, the A/B's reference) at the env's own block, 0
    # pool − 1 (≥ 0) is the slack: an env keeps its last address while that lies at most `slack` rows past where the
    # previous env's rows end now (its rows then stay in the slots that held them, row for row, when an env before
    # it changes its count by a few rows; the slots' records then hold the same rows, which make_rows rewrites
    # without clearing them first: Round 12); an env that has to move because the rows before it grew past its last
    # address lands past the previous env's new end by an eighth of that env's count, at most `head` (≤ slack) rows,
    # so a later growth of the envs before it by that much moves it no more (Round 17; a gap of 64 rows cost the
    # boxes' 128-row envs and the humanoid's 42-row ones ≈ 0.5 µs per env-step, one of 16 nothing), at most at its
    # own block's start (every offset stays ≤ 0); one that moves because they shrank by more than the slack lands
    # right at it
    off = int(0)
    old = d.efc_off[env]
    if pool >= 1 and env > 0:
        off = d.efc_off[env - 1] + d.nefc[env - 1] - d.efc_type.shape[1]
        if old >= off and old <= off + pool - 1:
            off = old
        elif old < off and head > 0:
            off = wp.min(off + wp.min(head, d.nefc[env - 1] / 8), 0)
    d.efc_off[env] = off
    rows_prefetch_native(env, prefetch, d.qpos, m.dof_frictionloss, m.lim_sol, params, d.ncon, d.con_geom, d.con_pair,
                         m.geom_friction, m.geom_friction_ratio)
    if params != 0:
        # the contact parameters first (the kernel contact_params' body, the same numbers), so the contact rows
        # read them while they are in cache (make_rows' own next-env prefetch covers their outputs)
        contact_params_native(env, 0, m.opt.mujoco_mode, m.opt.tc_floor,
                              m.opt.friction_floor, d.ncon, d.con_geom, d.con_pair, m.geom_friction,
                              m.geom_friction_ratio, m.geom_condim, m.geom_priority, m.geom_sol, m.geom_solmix,
                              m.pair_friction, m.pair_solreffriction, m.pair_sol, m.pair_condim, d.con_friction, d.con_sol,
                              d.con_solreffriction, d.con_dim)
    # the arrays under their short names (Model: m, Data: d)
    nv = m.nv
    max_rows = m.max_rows
    cone = m.opt.cone
    impratio = m.opt.impratio
    tc_floor = m.opt.tc_floor
    dof_parent = m.dof_parent
    link_dof_last = m.link_dof_last
    link_invweight = m.link_invweight
    dof_invweight = m.dof_invweight
    dof_frictionloss = m.dof_frictionloss
    dof_sol = m.dof_sol
    lim_dof = m.lim_dof
    lim_qadr = m.lim_qadr
    lim_ball = m.lim_ball
    lim_range = m.lim_range
    lim_margin = m.lim_margin
    lim_sol = m.lim_sol
    eq_type = m.eq_type
    eq_obj = m.eq_obj
    eq_data = m.eq_data
    eq_sol = m.eq_sol
    qpos = d.qpos
    qvel = d.qvel
    qacc_smooth = d.qacc_smooth
    cdof_w = d.cdof_w
    cdof_v = d.cdof_v
    dof_ref = d.dof_ref
    link_pos = d.link_pos
    link_quat = d.link_quat
    eq_active = d.eq_active
    eq_acc_bias = d.eq_acc_bias
    n_con = d.ncon
    con_pos = d.con_pos
    con_frame = d.con_frame
    con_dist = d.con_dist
    con_margin = d.con_margin
    con_link = d.con_link
    con_dim = d.con_dim
    con_friction = d.con_friction
    con_sol = d.con_sol
    con_efc_adr = d.con_efc_adr
    n_efc = d.nefc
    overflow = d.efc_overflow
    efc_J = pool_rows3(d.efc_J, off)
    efc_span = pool_rows3(d.efc_span, off)
    efc_chain = pool_rows3(d.efc_chain, off)
    efc_seg = pool_rows3(d.efc_seg, off)
    efc_type = pool_rows2(d.efc_type, off)
    efc_id = pool_rows2(d.efc_id, off)
    efc_dim = pool_rows2(d.efc_dim, off)
    efc_pos = pool_rows2(d.efc_pos, off)
    efc_margin = pool_rows2(d.efc_margin, off)
    efc_vel = pool_rows2(d.efc_vel, off)
    efc_aref = pool_rows2(d.efc_aref, off)
    efc_R = pool_rows2(d.efc_R, off)
    efc_D = pool_rows2(d.efc_D, off)
    efc_imp = pool_rows2(d.efc_imp, off)
    efc_floss = pool_rows2(d.efc_frictionloss, off)
    efc_mu = pool_rows2(d.efc_mu, off)
    zero = impratio * type(impratio)(0.0)
    one = zero + type(impratio)(1.0)
    half = type(impratio)(0.5)
    row = int(0)
    over = int(0)
    # rows are initialized as they are used (clr: rows initialized so far) and the rows of the last
    # build beyond this one's count at the end, not all max_rows × nv entries of J every time
    prev = wp.min(n_efc[env], max_rows)
    clr = int(0)
    # the CPU prefetch of the next env's rows (contact_rows_native): in the pool they will start where this env's
    # rows end, at its count (its last count: the estimate), i.e. prev − R rows on from the next env's own block
    pf_doff = int(0)
    if pool >= 1:
        pf_doff = prev - d.efc_type.shape[1]
        if pool > 1 and env + 1 < n_efc.shape[0]:
            pf_doff = d.efc_off[env + 1] - off      # with slack: the next env most likely keeps its last address

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
        if eq_type[e] == EqType.CONNECT:
            if row + 3 > max_rows:
                over = 1
                continue
            clr = init_rows(efc_J, efc_span, efc_chain, dof_parent, link_dof_last, efc_floss, efc_mu, efc_dim, efc_D,
                            efc_R, efc_aref, env, clr, row + 3, nv)
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
                point_jac_add(dof_parent, link_dof_last, efc_span, cdof_w, cdof_v, dof_ref,
                              env, l1, p1, ax, 0, one, efc_J, row + c)
                point_jac_add(dof_parent, link_dof_last, efc_span, cdof_w, cdof_v, dof_ref,
                              env, l2, p2, ax, 0, -one, efc_J, row + c)
                finish_row(efc_J, efc_span, qvel, env, row + c, nv, err[c], zero, imp, k, b, diag, ConstraintType.EQUALITY, e,
                           efc_type, efc_id, efc_pos, efc_margin, efc_vel, efc_aref, efc_R, efc_imp, efc_seg, segs)
                # velocity-product term: aref − J̇·q̇ (the acceleration of p1 − p2 at qacc = 0)
                efc_aref[env, row + c] = efc_aref[env, row + c] - eq_acc_bias[env, e, c]
            row = row + 3
        elif eq_type[e] == EqType.WELD:
            if row + 6 > max_rows:
                over = 1
                continue
            clr = init_rows(efc_J, efc_span, efc_chain, dof_parent, link_dof_last, efc_floss, efc_mu, efc_dim, efc_D,
                            efc_R, efc_aref, env, clr, row + 6, nv)
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
                point_jac_add(dof_parent, link_dof_last, efc_span, cdof_w, cdof_v, dof_ref,
                              env, wl0, wp0, ax, 0, one, efc_J, row + c)
                point_jac_add(dof_parent, link_dof_last, efc_span, cdof_w, cdof_v, dof_ref,
                              env, wl1, wp1, ax, 0, -one, efc_J, row + c)
                point_jac_add(dof_parent, link_dof_last, efc_span, cdof_w, cdof_v, dof_ref,
                              env, wl0, wp0, ax, 1, one, efc_J, row + 3 + c)
                point_jac_add(dof_parent, link_dof_last, efc_span, cdof_w, cdof_v, dof_ref,
                              env, wl1, wp1, ax, 1, -one, efc_J, row + 3 + c)
            # rotational rows: 0.5·ts·vec(conj(wq1) ⊗ (0, ω-column) ⊗ wq0 ⊗ relpose) per dof column
            for j in range(nv):
                axq = wp.quaternion(efc_J[env, row + 3, j], efc_J[env, row + 4, j], efc_J[env, row + 5, j], zero)
                wq3 = (wq1n * axq) * wqq
                for c in range(3):
                    efc_J[env, row + 3 + c, j] = half * ts * wq3[c]
            # each rotational row mixes the three: all three get the union of their spans
            for c in range(3):
                span_extend(efc_span, env, row + 3 + c, efc_span[env, row + 3, 0], efc_span[env, row + 3, 1])
                span_extend(efc_span, env, row + 3 + c, efc_span[env, row + 4, 0], efc_span[env, row + 4, 1])
                span_extend(efc_span, env, row + 3 + c, efc_span[env, row + 5, 0], efc_span[env, row + 5, 1])
            for c in range(6):
                ec = zero
                dg = dt
                if c < 3:
                    ec = et[c]
                else:
                    ec = er[c - 3]
                    dg = dr2
                finish_row(efc_J, efc_span, qvel, env, row + c, nv, ec, zero, imp, k, b, dg, ConstraintType.EQUALITY, e,
                           efc_type, efc_id, efc_pos, efc_margin, efc_vel, efc_aref, efc_R, efc_imp, efc_seg, segs)
                efc_aref[env, row + c] = efc_aref[env, row + c] - eq_acc_bias[env, e, c]
            row = row + 6
        elif eq_type[e] == EqType.JOINT:
            if row + 1 > max_rows:
                over = 1
                continue
            clr = init_rows(efc_J, efc_span, efc_chain, dof_parent, link_dof_last, efc_floss, efc_mu, efc_dim, efc_D,
                            efc_R, efc_aref, env, clr, row + 1, nv)
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
            span_extend(efc_span, env, row, d1, d1 + 1)
            if q2 >= 0:
                efc_J[env, row, d2] = efc_J[env, row, d2] - deriv
                span_extend(efc_span, env, row, d2, d2 + 1)
            imp = impedance(dmin, dmax, width, mid, pw, pos, zero)
            finish_row(efc_J, efc_span, qvel, env, row, nv, pos, zero, imp, k, b, diag, ConstraintType.EQUALITY, e,
                       efc_type, efc_id, efc_pos, efc_margin, efc_vel, efc_aref, efc_R, efc_imp, efc_seg, segs)
            row = row + 1

    # ---- DOF frictionloss (K = 0: velocity term only)
    for dof in range(nv):
        fl = dof_frictionloss[env, dof]
        if fl <= zero:
            continue
        if row + 1 > max_rows:
            over = 1
            continue
        clr = init_rows(efc_J, efc_span, efc_chain, dof_parent, link_dof_last, efc_floss, efc_mu, efc_dim, efc_D,
                        efc_R, efc_aref, env, clr, row + 1, nv)
        tc = legal_timeconst(dof_sol[env, dof, 0], dof_sol[env, dof, 1], tc_floor)
        dr = legal_dampratio(dof_sol[env, dof, 0], dof_sol[env, dof, 1])
        dmax = clamp_imp(dof_sol[env, dof, 3])
        imp = impedance(clamp_imp(dof_sol[env, dof, 2]), dmax, wp.max(zero, dof_sol[env, dof, 4]),
                        clamp_imp(dof_sol[env, dof, 5]), wp.max(one, dof_sol[env, dof, 6]), zero, zero)
        efc_J[env, row, dof] = one
        span_extend(efc_span, env, row, dof, dof + 1)
        finish_row(efc_J, efc_span, qvel, env, row, nv, zero, zero, imp, zero, ref_damping(tc, dr, dmax), dof_invweight[dof],
                   ConstraintType.FRICTION, dof, efc_type, efc_id, efc_pos, efc_margin, efc_vel, efc_aref, efc_R, efc_imp,
                   efc_seg, segs)
        efc_floss[env, row] = fl
        row = row + 1

    # ---- contacts: one native call for the env (kernels/constraint_rows.cpp, contact_rows_native); it
    # leaves the row count in n_efc[env] and the overflow flag in overflow[env]
    contact_rows_native(nv, max_rows, cone, impratio, tc_floor, env, row, clr, dof_parent, link_dof_last, link_invweight,
                        cdof_w, cdof_v, dof_ref, qvel, n_con[env], con_dim, con_link, con_pos, con_frame, con_dist,
                        con_margin, con_friction, con_sol, d.con_solreffriction, con_efc_adr, efc_J, efc_span, efc_chain,
                        efc_type, efc_id, efc_dim, efc_pos, efc_margin, efc_vel, efc_aref, efc_R, efc_D, efc_imp, efc_floss,
                        efc_mu, n_efc, overflow, efc_seg, segs, prefetch, pf_doff)
    row_c0 = row
    row = n_efc[env]
    row_c1 = row
    if overflow[env] != 0:
        over = 1
    clr = wp.max(clr, row)

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
                clr = init_rows(efc_J, efc_span, efc_chain, dof_parent, link_dof_last, efc_floss, efc_mu, efc_dim, efc_D,
                                efc_R, efc_aref, env, clr, row + 1, nv)
                dof = lim_dof[li]
                tc = legal_timeconst(lim_sol[env, li, 0], lim_sol[env, li, 1], tc_floor)
                dr = legal_dampratio(lim_sol[env, li, 0], lim_sol[env, li, 1])
                dmax = clamp_imp(lim_sol[env, li, 3])
                imp = impedance(clamp_imp(lim_sol[env, li, 2]), dmax, wp.max(zero, lim_sol[env, li, 4]),
                                clamp_imp(lim_sol[env, li, 5]), wp.max(one, lim_sol[env, li, 6]), dist, lim_margin[li])
                for c in range(3):
                    efc_J[env, row, dof + c] = -bax[c]
                span_extend(efc_span, env, row, dof, dof + 3)
                finish_row(efc_J, efc_span, qvel, env, row, nv, dist, lim_margin[li], imp, ref_stiffness(tc, dr, dmax),
                           ref_damping(tc, dr, dmax), dof_invweight[dof], ConstraintType.LIMIT, li,
                           efc_type, efc_id, efc_pos, efc_margin, efc_vel, efc_aref, efc_R, efc_imp, efc_seg, segs)
                row = row + 1
            continue
        q = qpos[env, lim_qadr[li]]
        # Drake's activation window (lim_window_h = h > 0, the SAP hand-off only): the side whose limit
        # lies within LIMIT_WINDOW·h·max(|v|, |v*|) of q, v* = v + h·qacc_smooth the free velocity
        win = zero
        if lim_window_h > zero:
            v0 = qvel[env, lim_dof[li]]
            vs = v0 + lim_window_h * qacc_smooth[env, lim_dof[li]]
            win = type(zero)(LIMIT_WINDOW) * lim_window_h * wp.max(wp.abs(v0), wp.abs(vs))
        for s in range(2):
            side = -one
            if s == 1:
                side = one
            dist = side * (lim_range[li, s] - q)
            active = dist < lim_margin[li]
            if lim_window_h > zero and dist <= win:
                active = True
            if active:
                if row + 1 > max_rows:
                    over = 1
                    continue
                clr = init_rows(efc_J, efc_span, efc_chain, dof_parent, link_dof_last, efc_floss, efc_mu, efc_dim, efc_D,
                                efc_R, efc_aref, env, clr, row + 1, nv)
                dof = lim_dof[li]
                tc = legal_timeconst(lim_sol[env, li, 0], lim_sol[env, li, 1], tc_floor)
                dr = legal_dampratio(lim_sol[env, li, 0], lim_sol[env, li, 1])
                dmax = clamp_imp(lim_sol[env, li, 3])
                imp = impedance(clamp_imp(lim_sol[env, li, 2]), dmax, wp.max(zero, lim_sol[env, li, 4]),
                                clamp_imp(lim_sol[env, li, 5]), wp.max(one, lim_sol[env, li, 6]), dist, lim_margin[li])
                efc_J[env, row, dof] = -side
                span_extend(efc_span, env, row, dof, dof + 1)
                finish_row(efc_J, efc_span, qvel, env, row, nv, dist, lim_margin[li], imp, ref_stiffness(tc, dr, dmax),
                           ref_damping(tc, dr, dmax), dof_invweight[dof], ConstraintType.LIMIT, li,
                           efc_type, efc_id, efc_pos, efc_margin, efc_vel, efc_aref, efc_R, efc_imp, efc_seg, segs)
                row = row + 1

    # D = 1/R (the contact rows' own: contact_rows_native)
    for i in range(row_c0):
        efc_D[env, i] = one / efc_R[env, i]
    for i in range(row_c1, row):
        efc_D[env, i] = one / efc_R[env, i]
    # the last build's rows beyond this one's: back to the cleared state (padding reads as empty). In the pool
    # those slots are the next env's (it clears each slot it takes by the slot's own record, as here): no padding
    if pool == 0:
        init_rows(efc_J, efc_span, efc_chain, dof_parent, link_dof_last, efc_floss, efc_mu, efc_dim, efc_D,
                  efc_R, efc_aref, env, row, prev, nv)
    n_efc[env] = row
    overflow[env] = over


overload(contact_params)
overload(connect_bias)
overload(make_rows, lim_window_h=lambda s: s)
