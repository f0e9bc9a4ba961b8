"""Constraint parameters of the rigid solver (host side, docs/semantics.md §R5-§R7): the impedance, reference
acceleration and regularization of a row, the legalization of sol_params and the mixing rules of
contact parameters, as plain NumPy/Python functions (the setters use them; tests check the device
stages against them). The stages themselves: constraint_rows.py, convex_solve.py,
signorini_solve.py, noslip.py (docs/constraint.md).

Parameter semantics (docs/semantics.md §R5-§R7, MuJoCo's solref/solimp): ``sol_params = (timeconst, dampratio,
dmin, dmax, width, mid, power)``; ``(timeconst, dampratio)`` is MuJoCo's solref (both <= 0: direct
stiffness −timeconst and damping −dampratio), ``(dmin, dmax, width, mid, power)`` its solimp.
"""

from __future__ import annotations

import warnings

import numpy as np
from polyphys.errors import OptionError, PolyphysWarning

MINVAL = 1e-15          # mjMINVAL
MINIMP, MAXIMP = 1e-4, 0.9999
DEFAULT_SOL_PARAMS = (0.02, 1.0, 0.9, 0.95, 0.001, 0.5, 2.0)   # MuJoCo's default solref/solimp
FRICTION_FLOOR = 0.01           # default (Genesis) mode, docs/semantics.md §R5
FRICTION_FLOOR_MUJOCO = 1e-5    # mjMINMU



# ------------------------------------------------------------------ parameter functions (host)

def impedance(sol, pos, margin=0.0):
    """I(pos) of MuJoCo's getimpedance for sol_params ``sol`` (7) at constraint position pos."""
    dmin, dmax, width, mid, power = (float(v) for v in sol[2:7])
    if dmin == dmax or width <= MINVAL:
        return 0.5 * (dmin + dmax)
    x = abs((pos - margin) / width)
    if x >= 1:
        return dmax
    if x <= 0:
        return dmin
    if power == 1:
        y = x
    elif x <= mid:
        y = x ** power / mid ** (power - 1)
    else:
        y = 1 - (1 - x) ** power / (1 - mid) ** (power - 1)
    return dmin + y * (dmax - dmin)


def ref_coefficients(sol):
    """(K, B) of a_ref = −B·v − K·I·(pos − margin): standard K = 1/(dmax²·tc²·ζ²), B = 2/(dmax·tc);
    direct (tc, ζ <= 0): K = −tc/dmax², B = −ζ/dmax."""
    tc, dr, dmax = float(sol[0]), float(sol[1]), float(sol[3])
    k = 1 / max(MINVAL, dmax * dmax * tc * tc * dr * dr) if tc > 0 else -tc / max(MINVAL, dmax * dmax)
    b = 2 / max(MINVAL, dmax * tc) if dr > 0 else -dr / max(MINVAL, dmax)
    return k, b


def reference_acceleration(sol, pos, vel, margin=0.0, friction_row=False):
    """a_ref of one row; friction rows (frictionloss, tangential/torsional/rolling) have K = 0."""
    k, b = ref_coefficients(sol)
    if friction_row:
        k = 0.0
    return -b * vel - k * impedance(sol, pos, margin) * (pos - margin)


def regularization(imp, invweight):
    """R = W·(1 − I)/I (floored at MINVAL), the base of docs/semantics.md §R7."""
    return max(MINVAL, (1 - imp) * invweight / imp)


def contact_regularization(sol, dist, margin, friction, condim, cone, impratio, tran, rot):
    """R per row of one contact (docs/semantics.md §R7, MuJoCo's mj_makeImpedance).

    elliptic: R_n = W_t(1−I)/I, R_t = R_n/impratio, torsional/rolling R_j = R_t·μ₀²/μ_j²;
    pyramidal (2(condim−1) rows): R = 2·μ_reg²·W_t(1+μ₀²)(1−I)/I with μ_reg² = μ₀²/impratio
    (the (1+μ²) factor is MuJoCo's diagApprox of the first pyramid edge, with the raw μ₀)."""
    imp = impedance(sol, dist, margin)
    if condim == 1:
        return [regularization(imp, tran)]
    if cone == "elliptic":
        rn = regularization(imp, tran)
        rt = rn / max(MINVAL, impratio)
        return [rn] + [rt * friction[0] ** 2 / friction[j] ** 2 for j in range(condim - 1)]
    r0 = regularization(imp, tran + friction[0] ** 2 * tran)
    mu2 = friction[0] ** 2 / max(MINVAL, impratio)
    return [2 * mu2 * r0] * (2 * (condim - 1))


def check_friction(value, field="friction"):
    """set_friction's range (docs/semantics.md §R5): every coefficient in [0.01, 5], else OptionError naming the
    field, the value and the range."""
    v = np.atleast_1d(np.asarray(value, float))
    bad = v[(v < 0.01) | (v > 5.0) | ~np.isfinite(v)]
    if bad.size:
        raise OptionError(f"{field}={float(bad[0])!r} is outside the allowed range [0.01, 5]")
    return value


def legalize_sol_params(sol, field="sol_params", compatible=False, h=None):
    """Effective sol_params (docs/semantics.md §R6): dmin/dmax/mid clamped to [1e-4, 0.9999], width >= 0, power >= 1,
    dampratio > 0; a negative timeconst (direct stiffness) is kept in MuJoCo-compatible mode, else
    replaced by the default with a warning; with h (joint/equality setters) timeconst is floored at
    2h. Each change warns naming the field and the effective value."""
    s = [float(v) for v in sol]
    if len(s) != 7:
        raise OptionError(f"{field} must have 7 entries (timeconst, dampratio, dmin, dmax, width, mid, "
                          f"power), got {len(s)}")
    names = ("timeconst", "dampratio", "dmin", "dmax", "width", "mid", "power")
    out = list(s)
    if compatible:
        if (s[0] > 0) != (s[1] > 0):
            out[0], out[1] = DEFAULT_SOL_PARAMS[0], DEFAULT_SOL_PARAMS[1]
    else:
        if s[0] <= 0:
            out[0] = DEFAULT_SOL_PARAMS[0]
        if s[1] <= 0:
            out[1] = DEFAULT_SOL_PARAMS[1]
    for i in (2, 3, 5):
        out[i] = min(MAXIMP, max(MINIMP, s[i]))
    out[4] = max(0.0, s[4])
    out[6] = max(1.0, s[6])
    if h is not None and out[0] > 0:     # joint/equality setters: timeconst floored at 2h
        out[0] = max(out[0], 2.0 * h)
    for i, n in enumerate(names):
        if out[i] != s[i]:
            warnings.warn(f"{field}.{n}={s[i]!r} out of range; effective value {out[i]!r}", PolyphysWarning,
                          stacklevel=2)
    return tuple(out)


def floor_timeconst(sol, h):
    """timeconst floored at 2h (h = substep), only for the standard (positive) parameterization."""
    s = list(sol)
    if s[0] > 0:
        s[0] = max(s[0], 2.0 * h)
    return tuple(s)


def mix_friction(mu_a, mu_b, ratio_a=1.0, ratio_b=1.0, floor=FRICTION_FLOOR):
    """Default mode (docs/semantics.md §R5): μ = max(μ_A·s_A, μ_B·s_B, floor), per component (sliding,
    torsional, rolling)."""
    a = np.asarray(mu_a, float) * ratio_a
    b = np.asarray(mu_b, float) * ratio_b
    return np.maximum(np.maximum(a, b), floor)


def mix_sol_params(sol_a, sol_b, h):
    """Default mode (docs/semantics.md §R5): componentwise mean, then timeconst floored at 2h."""
    m = 0.5 * (np.asarray(sol_a, float) + np.asarray(sol_b, float))
    return np.asarray(floor_timeconst(m, h))


def mix_mujoco(fa, fb, sol_a, sol_b, solmix_a=1.0, solmix_b=1.0, priority_a=0, priority_b=0,
               floor=FRICTION_FLOOR_MUJOCO):
    """MuJoCo-compatible mode (mj_contactParam): higher priority wins outright; else friction is the
    elementwise max (3 → 5 components: sliding, sliding, torsional, rolling, rolling), solref is
    solmix-weighted (elementwise min when either is direct), solimp solmix-weighted.
    Returns (friction5, sol_params7)."""
    fa, fb = np.asarray(fa, float), np.asarray(fb, float)
    sa, sb = np.asarray(sol_a, float), np.asarray(sol_b, float)
    if priority_a != priority_b:
        fri, sol = (fa, sa) if priority_a > priority_b else (fb, sb)
    else:
        if solmix_a >= MINVAL and solmix_b >= MINVAL:
            mix = solmix_a / (solmix_a + solmix_b)
        elif solmix_a < MINVAL and solmix_b < MINVAL:
            mix = 0.5
        else:
            mix = 0.0 if solmix_a < MINVAL else 1.0
        ref = mix * sa[:2] + (1 - mix) * sb[:2] if (sa[0] > 0 and sb[0] > 0) else np.minimum(sa[:2], sb[:2])
        imp = mix * sa[2:] + (1 - mix) * sb[2:]
        fri = np.maximum(fa, fb)
        sol = np.concatenate([ref, imp])
    f5 = np.maximum(floor, np.array([fri[0], fri[0], fri[1], fri[2], fri[2]]))
    return f5, sol


__all__ = ["check_friction", "impedance", "ref_coefficients", "reference_acceleration", "regularization",
           "contact_regularization", "legalize_sol_params", "floor_timeconst", "mix_friction", "mix_sol_params",
           "mix_mujoco"]
