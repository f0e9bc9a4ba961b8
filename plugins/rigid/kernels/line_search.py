"""The exact line search of the constraint solvers (convex Newton/CG and signorini).

Along the search direction p the cost is a convex piecewise-smooth function of the step alpha; its
derivative is monotone. ``exact_line_search`` finds its root by safeguarded Newton steps inside a
bracket [lo, hi] (doubling alpha while no upper bound is known), stopping when |slope| falls under
ls_tolerance × |slope at 0| (MuJoCo's mj_lineSearch criterion) or when the step stops changing. The
convex rows' search is native (kernels/line_search.cpp, lambdas ``ls_rows`` / ``ls_search``: the native
Newton solve calls them inside its loop, CG through ``line_search_native``); the signorini rows at
their latched loads (``sig_row_cost``) take the same bracketing written here in Warp — the two loops
are twins (the same statements in the same order), each checked bit for bit against its former self by
tools/rigid_trajectories.py.
"""

from typing import Any

import warp as wp

from ..types import ConstraintType
from . import native

wp.set_module_options({"enable_backward": False})

I2 = wp.array2d(dtype=wp.int32)
A2 = wp.array2d(dtype=Any)


@wp.func_native(native.body(__file__, "line_search_native"))
def line_search_native(env: int, nrow: int, ls_iterations: int, ls_tolerance: Any, pg0: Any, pmp: Any, efc_type: I2,
                       efc_dim: I2, efc_D: A2, efc_R: A2, efc_floss: A2, efc_mu: A2, jar: A2, jv: A2, out: A2): ...


# ---------------------------------------------------------------- signorini rows (docs/semantics.md §R8)


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
    if tp == ConstraintType.CONTACT_ELLIPTIC:
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
    if tp == ConstraintType.EQUALITY:
        return wp.vector(half * d * x * x, d * x * v, d * v * v, one)
    if tp == ConstraintType.FRICTION:
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
def line_slope(env: int, nrow: int, efc_type: wp.array2d(dtype=wp.int32), efc_dim: wp.array2d(dtype=wp.int32),
               efc_D: wp.array2d(dtype=Any), efc_R: wp.array2d(dtype=Any), efc_floss: wp.array2d(dtype=Any),
               efc_mu: wp.array2d(dtype=Any), efc_load: wp.array2d(dtype=Any), jar: wp.array2d(dtype=Any),
               jv: wp.array2d(dtype=Any), alpha: Any, c1: Any, c2: Any):
    """(c1, c2) plus the signorini rows' first and second alpha-derivatives of the cost at jar + alpha·jv."""
    s1 = c1
    s2 = c2
    i = int(0)
    while i < nrow:
        rc = sig_row_cost(efc_type, efc_D, efc_R, efc_floss, efc_mu, efc_dim, efc_load, jar, jv, env, i, alpha)
        s1 = s1 + rc[1]
        s2 = s2 + rc[2]
        i = i + int(rc[3])
    return wp.vector(s1, s2)


@wp.func
def exact_line_search(env: int, nrow: int, signorini: int, ls_iterations: int, ls_tolerance: Any, pg0: Any, pmp: Any,
                      efc_type: wp.array2d(dtype=wp.int32), efc_dim: wp.array2d(dtype=wp.int32),
                      efc_D: wp.array2d(dtype=Any), efc_R: wp.array2d(dtype=Any), efc_floss: wp.array2d(dtype=Any),
                      efc_mu: wp.array2d(dtype=Any), efc_load: wp.array2d(dtype=Any), jar: wp.array2d(dtype=Any),
                      jv: wp.array2d(dtype=Any), scratch: wp.array2d(dtype=Any)):
    """The step alpha >= 0 along the direction whose Gauss terms are pg0 = pᵀM(a − a₀) and pmp = pᵀMp
    (jv = J·p); 0 when the slope at 0 is not negative. The convex rows' search is native (line_search_native,
    the same bracketing as below over the convex rows, kernels/line_search.cpp)."""
    if signorini == 0:
        line_search_native(env, nrow, ls_iterations, ls_tolerance, pg0, pmp, efc_type, efc_dim, efc_D, efc_R, efc_floss,
                           efc_mu, jar, jv, scratch)
        return scratch[env, 0]
    zero = type(pg0)(0.0)
    one = type(pg0)(1.0)
    half = type(pg0)(0.5)
    gtol = zero
    lo = zero
    hi = -one
    alpha = one
    for ls in range(ls_iterations):
        c = line_slope(env, nrow, efc_type, efc_dim, efc_D, efc_R, efc_floss, efc_mu, efc_load, jar, jv, alpha,
                       pg0 + alpha * pmp, pmp)
        c1 = c[0]
        c2 = c[1]
        if ls == 0:
            # the slope at 0 for the bracket and the tolerance
            d0 = line_slope(env, nrow, efc_type, efc_dim, efc_D, efc_R, efc_floss, efc_mu, efc_load, jar, jv, zero,
                            pg0, zero)[0]
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
        nxt = alpha - c1 / wp.max(c2, type(pg0)(1.0e-30))
        if hi >= zero:
            if nxt <= lo or nxt >= hi:
                nxt = half * (lo + hi)
        elif nxt <= lo:
            nxt = type(pg0)(2.0) * alpha
        if nxt == alpha:
            break
        alpha = nxt
    return alpha
