"""Constraint stage of the rigid solver (host side): parameters, mixing rules, row buffers, solve.

Standalone and graph-capturable: ``ConstraintStage`` owns fixed-size per-env buffers allocated once;
``build_rows`` and ``solve`` each launch one kernel over the envs of a partition (no host sync, no
allocation), so the solver can call them inside its captured substep. See docs/constraint.md for
the integration sequence.

Parameter semantics (SPEC R5-R7, MuJoCo's solref/solimp): ``sol_params = (timeconst, dampratio,
dmin, dmax, width, mid, power)``; ``(timeconst, dampratio)`` is MuJoCo's solref (both <= 0: direct
stiffness −timeconst and damping −dampratio), ``(dmin, dmax, width, mid, power)`` its solimp.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass

import numpy as np
import warp as wp
from polyphys.errors import OptionError, PolyphysWarning

MINVAL = 1e-15          # mjMINVAL
MINIMP, MAXIMP = 1e-4, 0.9999
DEFAULT_SOL_PARAMS = (0.02, 1.0, 0.9, 0.95, 0.001, 0.5, 2.0)   # MuJoCo's default solref/solimp
FRICTION_FLOOR = 0.01           # default (Genesis) mode, SPEC R5
FRICTION_FLOOR_MUJOCO = 1e-5    # mjMINMU

SOLVERS = {"CG": 0, "Newton": 1}
CONES = {"pyramidal": 0, "elliptic": 1}
EQ_TYPES = {"connect": 0, "weld": 1, "joint": 2}


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
    """R = W·(1 − I)/I (floored at MINVAL), the base of SPEC R7."""
    return max(MINVAL, (1 - imp) * invweight / imp)


def contact_regularization(sol, dist, margin, friction, condim, cone, impratio, tran, rot):
    """R per row of one contact (SPEC R7, MuJoCo's mj_makeImpedance).

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
    """set_friction's range (SPEC R5): every coefficient in [0.01, 5], else OptionError naming the
    field, the value and the range."""
    v = np.atleast_1d(np.asarray(value, float))
    bad = v[(v < 0.01) | (v > 5.0) | ~np.isfinite(v)]
    if bad.size:
        raise OptionError(f"{field}={float(bad[0])!r} is outside the allowed range [0.01, 5]")
    return value


def legalize_sol_params(sol, field="sol_params", compatible=False, h=None):
    """Effective sol_params (SPEC R6): dmin/dmax/mid clamped to [1e-4, 0.9999], width >= 0, power >= 1,
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
    """Default mode (SPEC R5): μ = max(μ_A·s_A, μ_B·s_B, floor), per component (sliding,
    torsional, rolling)."""
    a = np.asarray(mu_a, float) * ratio_a
    b = np.asarray(mu_b, float) * ratio_b
    return np.maximum(np.maximum(a, b), floor)


def mix_sol_params(sol_a, sol_b, h):
    """Default mode (SPEC R5): componentwise mean, then timeconst floored at 2h."""
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


# ------------------------------------------------------------------ invweights (host, at build)

def link_jacobian(l, point, dof_parent, link_dof_last, cdof_w, cdof_v, dof_ref):
    """(6, nv) Jacobian (linear at ``point``, then angular; world frame) of link l from the motion
    subspaces of one env (numpy, host side)."""
    nv = len(dof_parent)
    J = np.zeros((6, nv))
    d = int(link_dof_last[l]) if l >= 0 else -1
    while d >= 0:
        J[:3, d] = cdof_v[d] + np.cross(cdof_w[d], np.asarray(point) - dof_ref[d])
        J[3:, d] = cdof_w[d]
        d = int(dof_parent[d])
    return J


def invweights(M, link_com, dof_parent, link_dof_last, cdof_w, cdof_v, dof_ref, joint_dofs):
    """MuJoCo's body_invweight0 / dof_invweight0 (mj_setConst) from one env's state (use qpos0):
    per link, A = J M⁻¹ Jᵀ of the 6D Jacobian at the link CoM, invweight = (mean of the translational
    diagonal, mean of the rotational diagonal) (0 for links without dofs); per dof, the diagonal of
    M⁻¹, averaged over each joint's dofs — free joints over their 3 translational and their 3
    rotational dofs separately, ball joints over their 3. joint_dofs: list of (first dof, n dofs).
    Returns (link_invweight (n_links, 2), dof_invweight (nv,))."""
    Minv = np.linalg.inv(np.asarray(M, float))
    nl = len(link_dof_last)
    lw = np.zeros((nl, 2))
    for l in range(nl):
        if link_dof_last[l] < 0:
            continue
        J = link_jacobian(l, link_com[l], dof_parent, link_dof_last, cdof_w, cdof_v, dof_ref)
        A = J @ Minv @ J.T
        lw[l] = [np.trace(A[:3, :3]) / 3, np.trace(A[3:, 3:]) / 3]
    dg = np.diag(Minv).copy()
    dw = dg.copy()
    for start, n in joint_dofs:
        if n == 6:
            dw[start:start + 3] = dg[start:start + 3].mean()
            dw[start + 3:start + 6] = dg[start + 3:start + 6].mean()
        elif n == 3:
            dw[start:start + 3] = dg[start:start + 3].mean()
    return lw, dw


# ------------------------------------------------------------------ device stage

def _pad_cols(a, n):
    a = np.asarray(a, float)
    a = a.reshape(len(a), -1) if a.size else np.zeros((len(a), n))
    return np.pad(a, ((0, 0), (0, n - a.shape[1])))


@dataclass
class ConstraintOptions:
    """Solver settings (the RigidOptions fields of SPEC R2 they come from)."""
    solver: str = "Newton"          # constraint_solver
    cone: str = "pyramidal"         # friction_cone
    iterations: int = 25
    tolerance: float = 1e-9
    ls_iterations: int = 50
    ls_tolerance: float = 0.01
    impratio: float = 1.0
    timeconst_floor: float = 0.0    # 2h in the default mode (h = substep), 2·timestep in MuJoCo mode
    warm_pick_lower: bool = False   # MuJoCo-compatible: lower-cost of qacc_warm and qacc_smooth
    resolution: str = "convex"      # contact_resolution: "convex" or "signorini" (elliptic + Newton only)
    noslip_iterations: int = 0      # noslip PGS sweeps after the main solve (0: off; pyramidal only)
    noslip_tolerance: float = 1e-6  # noslip stop: scale·improvement of a sweep below this (MuJoCo's default)
    noslip_scale: float = 0.0       # noslip improvement scale; 0: 1/trace(M) of the env (MuJoCo: 1/(meaninertia·nv))

    def __post_init__(self):
        if self.solver not in SOLVERS:
            raise OptionError(f"constraint_solver={self.solver!r}; allowed: {sorted(SOLVERS)}")
        if self.cone not in CONES:
            raise OptionError(f"friction_cone={self.cone!r}; allowed: {sorted(CONES)}")
        if self.resolution not in ("convex", "signorini"):
            raise OptionError(f"contact_resolution={self.resolution!r}; allowed: 'convex', 'signorini'")
        if self.resolution == "signorini" and not (self.cone == "elliptic" and self.solver == "Newton"):
            raise OptionError(f"contact_resolution='signorini' needs friction_cone='elliptic' and "
                              f"constraint_solver='Newton' (got {self.cone!r}, {self.solver!r})")
        if int(self.noslip_iterations) < 0:
            raise OptionError(f"noslip_iterations={self.noslip_iterations!r}; must be an integer >= 0")
        if int(self.noslip_iterations) > 0 and self.cone == "elliptic":
            raise OptionError(f"noslip_iterations={self.noslip_iterations} with friction_cone='elliptic': noslip "
                              "needs the pyramidal cone (SPEC R2)")
        if not self.noslip_tolerance > 0:
            raise OptionError(f"noslip_tolerance={self.noslip_tolerance!r}; must be > 0")
        for f in ("iterations", "ls_iterations"):
            if int(getattr(self, f)) < 1:
                raise OptionError(f"{f}={getattr(self, f)!r}; must be an integer >= 1")
        for f in ("tolerance", "ls_tolerance", "impratio"):
            if not getattr(self, f) > 0:
                raise OptionError(f"{f}={getattr(self, f)!r}; must be > 0")


def options_from_rigid(rigid_options, precision, h):
    """ConstraintOptions from RigidOptions (SPEC R2/R2a), read by field name so fields the rigid
    options do not have yet fall back to their SPEC defaults: constraint_solver, friction_cone,
    iterations, tolerance, ls_iterations, ls_tolerance, impratio, contact_resolution,
    noslip_iterations, noslip_tolerance, mujoco_compatible. h: the substep (2h timeconst floor).

    contact_resolution None resolves by the seed's table: elliptic + Newton outside MuJoCo-compatible
    mode → signorini, everything else → convex. Errors (SPEC R2, OptionError naming the field):
    elliptic + noslip; an explicit contact_resolution='signorini' outside elliptic + Newton or in
    MuJoCo-compatible mode (MuJoCo has no signorini)."""
    g = lambda n, dflt=None: getattr(rigid_options, n, dflt)  # noqa: E731
    compat = bool(g("mujoco_compatible", False))
    solver = g("constraint_solver", "Newton")
    cone = g("friction_cone", "pyramidal")
    if cone not in CONES:
        raise OptionError(f"friction_cone={cone!r}; allowed: {sorted(CONES)}")
    noslip = g("noslip_iterations", 0) or 0
    if isinstance(noslip, bool) or int(noslip) != noslip or noslip < 0:
        raise OptionError(f"noslip_iterations={noslip!r}; must be an integer >= 0")
    noslip = int(noslip)
    if noslip > 0 and cone == "elliptic":
        raise OptionError(f"noslip_iterations={noslip} with friction_cone='elliptic': noslip needs the "
                          "pyramidal cone (SPEC R2)")
    res = g("contact_resolution", None)
    if res not in (None, "convex", "signorini"):
        raise OptionError(f"contact_resolution={res!r}; allowed: 'convex', 'signorini' or None (automatic)")
    if res == "signorini" and not (cone == "elliptic" and solver == "Newton"):
        raise OptionError(f"contact_resolution='signorini' needs friction_cone='elliptic' and "
                          f"constraint_solver='Newton' (got {cone!r}, {solver!r})")
    if res == "signorini" and compat:
        raise OptionError("contact_resolution='signorini' with mujoco_compatible=True: MuJoCo-compatible mode "
                          "uses the convex resolution (SPEC R2a); pass contact_resolution=None or 'convex'")
    if res is None:
        res = "signorini" if (cone == "elliptic" and solver == "Newton" and not compat) else "convex"
    impratio = g("impratio", None)
    if impratio is None:
        impratio = 1.0 if compat else default_impratio(cone)
    tol = g("tolerance", None)
    if tol is None:
        tol = default_tolerance(precision, compat)
    iters = g("iterations", None) or (100 if compat else 25)
    ls_iters = g("ls_iterations", None) or 50
    ns_tol = g("noslip_tolerance", None)
    return ConstraintOptions(solver=solver, cone=cone, iterations=int(iters), tolerance=float(tol),
                             ls_iterations=int(ls_iters), ls_tolerance=float(g("ls_tolerance", 0.01)),
                             impratio=float(impratio), timeconst_floor=2.0 * h, warm_pick_lower=compat,
                             resolution=res, noslip_iterations=noslip,
                             noslip_tolerance=float(1e-6 if ns_tol is None else ns_tol))


class ConstraintStage:
    """Fixed-size per-env constraint buffers and the two launches (build rows, solve).

    Model (static, given at construction; numpy): ``dof_parent`` (nv), ``link_dof_last`` (n_links:
    the deepest dof whose motion moves the link, −1 for world-fixed links), ``link_invweight``
    (n_links, 2: translational, rotational; MuJoCo's body_invweight0), ``dof_invweight`` (nv),
    ``dof_frictionloss`` (n_envs, nv), ``dof_sol`` (nv, 7), limits (``lim_dof`` (first dof),
    ``lim_qadr`` (first qpos), ``lim_ball`` (1: ball joint, limited on its rotation angle against
    max(range); 0: hinge/slide, two-sided), ``lim_range`` (nl, 2), ``lim_margin``, ``lim_sol`` (nl, 7)), equalities (``eq_type``
    (connect 0 / weld 1 / joint 2), ``eq_obj`` (neq, 4): connect/weld (link1, link2 (−1: world), -, -),
    joint (qadr1, qadr2 or −1, dof1, dof2); ``eq_data`` (neq, ≤ 11): connect (anchor1, anchor2 in
    link frames), weld (anchor on link2, anchor on link1, relpose quaternion w x y z, torquescale)
    — MuJoCo's eq_data layout —, joint (ref1, ref2, c0..c4); ``eq_sol`` (n_envs, neq, 7)).
    """

    def __init__(self, n_envs, nv, n_links, max_contacts, max_rows, device="cpu", precision="64",
                 options: ConstraintOptions | None = None, *, dof_parent, link_dof_last, link_invweight,
                 dof_invweight, dof_frictionloss=None, dof_sol=None, lim_dof=(), lim_qadr=(), lim_ball=None,
                 lim_range=None,
                 lim_margin=None, lim_sol=None, eq_type=(), eq_obj=None, eq_data=None, eq_sol=None):
        self.opt = options or ConstraintOptions()
        self.n_envs, self.nv, self.max_rows, self.max_contacts = n_envs, nv, max_rows, max_contacts
        self.device = device
        s = wp.float64 if precision == "64" else wp.float32
        self.scalar = s
        npf = np.float64 if precision == "64" else np.float32
        self.V = wp.types.vector(3, s)
        self.Q = wp.types.quaternion(s)
        self.Mt = wp.types.matrix((3, 3), s)
        E, nl, neq = n_envs, len(lim_dof), len(eq_type)

        def arr(x, dtype=s, shape=None):
            if x is None:
                return wp.zeros(shape, dtype=dtype, device=device)
            if dtype in (wp.int32,):
                return wp.array(np.asarray(x, np.int32).reshape(shape) if shape else np.asarray(x, np.int32),
                                dtype=dtype, device=device)
            return wp.array(np.asarray(x, npf).reshape(shape) if shape else np.asarray(x, npf), dtype=dtype,
                            device=device)

        dsol = np.tile(DEFAULT_SOL_PARAMS, (nv, 1)) if dof_sol is None else dof_sol
        self.model = dict(
            dof_parent=arr(dof_parent, wp.int32, (nv,)), link_dof_last=arr(link_dof_last, wp.int32, (n_links,)),
            link_invweight=arr(link_invweight, s, (n_links, 2)), dof_invweight=arr(dof_invweight, s, (nv,)),
            dof_frictionloss=arr(np.zeros((E, nv)) if dof_frictionloss is None else dof_frictionloss, s, (E, nv)),
            dof_sol=arr(dsol, s, (nv, 7)), lim_dof=arr(lim_dof, wp.int32, (nl,)),
            lim_qadr=arr(lim_qadr, wp.int32, (nl,)),
            lim_ball=arr(np.zeros(nl) if lim_ball is None else lim_ball, wp.int32, (nl,)),
            lim_range=arr(np.zeros((nl, 2)) if lim_range is None else lim_range, s, (nl, 2)),
            lim_margin=arr(np.zeros(nl) if lim_margin is None else lim_margin, s, (nl,)),
            lim_sol=arr(np.zeros((nl, 7)) if lim_sol is None else lim_sol, s, (nl, 7)),
            eq_type=arr(eq_type, wp.int32, (neq,)),
            eq_obj=arr(np.zeros((neq, 4)) if eq_obj is None else eq_obj, wp.int32, (neq, 4)),
            eq_data=arr(_pad_cols(np.zeros((neq, 11)) if eq_data is None else eq_data, 11), s, (neq, 11)),
            # per-env arrays keep at least one column: Warp cannot slice a zero-width array per
            # partition (the kernel takes the count from eq_type)
            eq_sol=arr(np.zeros((E, max(neq, 1), 7)) if eq_sol is None or neq == 0 else eq_sol, s,
                       (E, max(neq, 1), 7)),
        )
        z = lambda *sh, dt=s: wp.zeros(sh, dtype=dt, device=device)  # noqa: E731
        C, R = max_contacts, max_rows
        # contact inputs (written by the collision stage / the solver)
        self.eq_active = wp.array(np.ones((E, max(neq, 1)), np.int32), dtype=wp.int32, device=device)
        # J̇·q̇ of each connect (world acceleration of p1 − p2 at qacc = 0); zero unless the caller fills it
        self.eq_acc_bias = wp.zeros((E, max(neq, 1), 6), dtype=s, device=device)
        self.n_con = z(E, dt=wp.int32)
        self.con_pos = z(E, C, dt=self.V)
        self.con_frame = z(E, C, dt=self.Mt)
        self.con_dist = z(E, C)
        self.con_margin = z(E, C)
        self.con_link = z(E, C, 2, dt=wp.int32)
        self.con_dim = z(E, C, dt=wp.int32)
        self.con_friction = z(E, C, 5)
        self.con_sol = z(E, C, 7)
        self.con_efc_adr = z(E, C, dt=wp.int32)
        # contact readback (after solve): wrench on side A in the contact frame and the world frame
        self.con_wrench = z(E, C, 6)
        self.con_force_world = z(E, C, dt=self.V)
        self.con_torque_world = z(E, C, dt=self.V)
        self.con_valid = z(E, C, dt=wp.int32)
        # per-link net contact wrench (world, about the link CoM) and its impulse over a step
        self.link_force = z(E, n_links, dt=self.V)
        self.link_torque = z(E, n_links, dt=self.V)
        self.link_impulse_force = z(E, n_links, dt=self.V)
        self.link_impulse_torque = z(E, n_links, dt=self.V)
        # rows
        self.n_efc = z(E, dt=wp.int32)
        self.overflow = z(E, dt=wp.int32)
        self.efc_J = z(E, R, nv)
        self.efc_type = z(E, R, dt=wp.int32)
        self.efc_id = z(E, R, dt=wp.int32)
        self.efc_dim = z(E, R, dt=wp.int32)
        self.efc_state = z(E, R, dt=wp.int32)
        for n in ("efc_pos", "efc_margin", "efc_vel", "efc_aref", "efc_R", "efc_D", "efc_imp", "efc_floss",
                  "efc_mu", "efc_force", "jar", "jv"):
            setattr(self, n, z(E, R))
        # solver
        self.M = z(E, nv, nv)
        self.H = z(E, nv, nv)
        self.LM = z(E, nv, nv)
        for n in ("grad", "mgrad", "mgrad_old", "search", "ma", "mv", "qfrc_smooth", "qacc", "qfrc_constraint"):
            setattr(self, n, z(E, nv))
        self.solver_niter = z(E, dt=wp.int32)
        self.solver_stat = z(E, 3)
        # signorini: latched normal load and its last change per contact (at the normal row)
        if self.opt.resolution == "signorini":
            self.efc_load = z(E, R)
            self.efc_dload = z(E, R)
            self.sig_nhalf = z(E, dt=wp.int32)     # halved load changes in the last solve
        # noslip: M⁻¹Jᵀ per row, sweeps used and the last sweep's scaled improvement
        if self.opt.noslip_iterations > 0:
            self.efc_MiJ = z(E, R, nv)
            self.noslip_niter = z(E, dt=wp.int32)
            self.noslip_stat = z(E)

    # -- launches (part: slice of envs; whole batch when None)
    def _sl(self, a, part):
        return a if part is None else a[part.start:part.stop]

    def build_rows(self, qpos, qvel, cdof_w, cdof_v, dof_ref, link_pos, link_quat, part=None):
        """Rows for the current state. Inputs (n_envs, ...): qpos, qvel; cdof_w/cdof_v (nv, vec3): motion
        subspace of each dof (angular; linear velocity of the body-fixed point at dof_ref);
        link_pos/link_quat (n_links): link frame poses (for connect anchors). Contacts are read
        from the con_* buffers, the connect velocity-product term J̇·q̇ from eq_acc_bias (fill them
        first)."""
        m, o, sl = self.model, self.opt, functools.partial(self._sl, part=part)
        n = self.n_envs if part is None else part.stop - part.start
        s = self.scalar
        wp.launch(_K.constraint_build, dim=n, device=self.device, inputs=[
            self.nv, self.max_rows, CONES[o.cone], s(o.impratio), s(o.timeconst_floor),
            m["dof_parent"], m["link_dof_last"], m["link_invweight"], m["dof_invweight"], sl(m["dof_frictionloss"]),
            m["dof_sol"], m["lim_dof"], m["lim_qadr"], m["lim_ball"], m["lim_range"], m["lim_margin"], m["lim_sol"], m["eq_type"],
            m["eq_obj"], m["eq_data"], sl(m["eq_sol"]),
            sl(qpos), sl(qvel), sl(cdof_w), sl(cdof_v), sl(dof_ref), sl(link_pos), sl(link_quat), sl(self.eq_active),
            sl(self.eq_acc_bias),
            sl(self.n_con), sl(self.con_pos), sl(self.con_frame), sl(self.con_dist), sl(self.con_margin),
            sl(self.con_link), sl(self.con_dim), sl(self.con_friction), sl(self.con_sol),
            sl(self.n_efc), sl(self.overflow), sl(self.efc_J), sl(self.efc_type), sl(self.efc_id), sl(self.efc_pos),
            sl(self.efc_margin), sl(self.efc_vel), sl(self.efc_aref), sl(self.efc_R), sl(self.efc_D),
            sl(self.efc_imp), sl(self.efc_floss), sl(self.efc_mu), sl(self.efc_dim), sl(self.con_efc_adr)])

    def contact_params(self, con_geom, geom_friction, geom_sol, geom_condim, friction_ratio, mujoco_mode=False,
                       geom_solmix=None, geom_priority=None, h=0.0, part=None, con_pair=None, pair_condim=None,
                       pair_friction=None, pair_sol=None):
        """Fill con_friction (5), con_sol (7) and con_dim of the n_con contacts from their geoms
        con_geom (n_envs, max_contacts, 2: geom of A, geom of B) by SPEC R5 (default mode: friction
        max of μ·friction_ratio with the 0.01 floor, sol_params averaged then timeconst floored at
        2h) or MuJoCo's mj_contactParam (mujoco_mode: priority, solmix, 1e-5 floor). Geom arrays are
        Warp arrays: geom_friction (G, 3) shared or (n_envs, G, 3) per env, geom_sol (G, 7),
        geom_condim (G,) int32, friction_ratio (n_envs, G); geom_solmix (G,) / geom_priority (G,)
        int32 for MuJoCo mode. Explicit pairs: con_pair (n_envs, max_contacts) int32 (pair index or
        −1) with pair_condim (P,) int32, pair_friction (P, 5), pair_sol (P, 7): a pair's contacts take
        its parameters outright (MuJoCo's <contact><pair>)."""
        sl = functools.partial(self._sl, part=part)
        n = self.n_envs if part is None else part.stop - part.start
        s = self.scalar
        G = geom_friction.shape[-2]
        if geom_solmix is None:
            geom_solmix = wp.array(np.ones(G), dtype=s, device=self.device)
        if geom_priority is None:
            geom_priority = wp.zeros(G, dtype=wp.int32, device=self.device)
        floor = s(FRICTION_FLOOR_MUJOCO if mujoco_mode else FRICTION_FLOOR)
        from polyphys.plugins.rigid.kernels import constraint_glue as _G

        if geom_friction.ndim == 2:      # shared friction seen per env (host copy: standalone use, not the solver's step)
            geom_friction = wp.array(np.broadcast_to(geom_friction.numpy(), (self.n_envs, G, 3)).copy(), dtype=s,
                                     device=self.device)
        if con_pair is None:
            if getattr(self, "_no_pair", None) is None:
                self._no_pair = wp.array(np.full((self.n_envs, self.max_contacts), -1, np.int32), dtype=wp.int32,
                                         device=self.device)
            con_pair = self._no_pair
        if pair_condim is None:
            pair_condim = wp.zeros(1, dtype=wp.int32, device=self.device)
            pair_friction = wp.zeros((1, 5), dtype=s, device=self.device)
            pair_sol = wp.zeros((1, 7), dtype=s, device=self.device)
        wp.launch(_G.contact_params_env, dim=n, device=self.device, inputs=[
            int(mujoco_mode), s(2.0 * h), floor, geom_sol, geom_solmix, geom_priority, geom_condim, pair_condim,
            pair_friction, pair_sol, sl(geom_friction), sl(friction_ratio), sl(self.n_con), sl(con_geom),
            sl(con_pair), sl(self.con_friction), sl(self.con_sol), sl(self.con_dim)])

    def mass_from_tree(self, dof_madr, dof_depth, m_col, mass, diag_add, part=None):
        """Fill self.M (n_envs, nv, nv) from the dynamics kernel's tree-sparse mass rows, adding
        diag_add (n_envs, nv; h·D_v for approximate_implicitfast, zeros otherwise) on the diagonal."""
        sl = functools.partial(self._sl, part=part)
        n = self.n_envs if part is None else part.stop - part.start
        wp.launch(_K.mass_dense, dim=n, device=self.device, inputs=[
            self.nv, dof_madr, dof_depth, m_col, sl(mass), sl(diag_add), sl(self.M)])

    def solve(self, M, qacc_smooth, qacc_warm, part=None):
        """Solve for qacc (n_envs, nv) given the dense mass matrix M (n_envs, nv, nv) (the one the
        integrator uses: with h·D_v added for approximate_implicitfast), the unconstrained
        acceleration and a warm start. Outputs in self.qacc, self.efc_force, self.qfrc_constraint.
        Dispatch: opt.resolution "convex" (constraint_solve) or "signorini" (constraint_solve_signorini);
        with opt.noslip_iterations > 0 the noslip pass (constraint_noslip) follows and rewrites them."""
        o = self.opt
        if o.resolution == "signorini":
            self._solve_signorini(M, qacc_smooth, qacc_warm, part)
        else:
            self._solve_convex(M, qacc_smooth, qacc_warm, part)
        if o.noslip_iterations > 0:
            self.noslip(M, qacc_smooth, part)

    def noslip(self, M, qacc_smooth, part=None):
        """The noslip pass alone (SPEC R8; ``solve`` runs it after the main solve when
        opt.noslip_iterations > 0): Gauss–Seidel on the frictionloss rows and pyramidal edge pairs
        of the unregularized problem, starting from efc_force; rewrites efc_force, qacc and
        qfrc_constraint (noslip_niter, noslip_stat: sweeps used, last scaled improvement)."""
        o, sl, s = self.opt, functools.partial(self._sl, part=part), self.scalar
        n = self.n_envs if part is None else part.stop - part.start
        wp.launch(_K.constraint_noslip, dim=n, device=self.device, inputs=[
            self.nv, int(o.noslip_iterations), s(o.noslip_tolerance), s(o.noslip_scale), sl(M), sl(qacc_smooth),
            sl(self.n_efc), sl(self.efc_J), sl(self.efc_type), sl(self.efc_aref), sl(self.efc_R),
            sl(self.efc_floss), sl(self.LM), sl(self.efc_MiJ), sl(self.qacc), sl(self.efc_force),
            sl(self.qfrc_constraint), sl(self.noslip_niter), sl(self.noslip_stat)])

    def _solve_signorini(self, M, qacc_smooth, qacc_warm, part):
        """Newton on the signorini problem (kernels/constraint_solve.py constraint_solve_signorini)."""
        o, sl, s = self.opt, functools.partial(self._sl, part=part), self.scalar
        n = self.n_envs if part is None else part.stop - part.start
        wp.launch(_K.constraint_solve_signorini, dim=n, device=self.device, inputs=[
            self.nv, int(o.iterations), s(o.tolerance), int(o.ls_iterations), s(o.ls_tolerance), sl(M),
            sl(qacc_smooth), sl(qacc_warm), sl(self.n_efc), sl(self.efc_J), sl(self.efc_type), sl(self.efc_aref),
            sl(self.efc_R), sl(self.efc_D), sl(self.efc_floss), sl(self.efc_mu), sl(self.efc_dim), sl(self.H),
            sl(self.jar), sl(self.jv), sl(self.grad), sl(self.search), sl(self.ma), sl(self.mv), sl(self.efc_load),
            sl(self.efc_dload), sl(self.qacc), sl(self.efc_force), sl(self.efc_state), sl(self.qfrc_constraint),
            sl(self.solver_niter), sl(self.solver_stat), sl(self.sig_nhalf)])

    def _solve_convex(self, M, qacc_smooth, qacc_warm, part):
        o, sl, s = self.opt, functools.partial(self._sl, part=part), self.scalar
        n = self.n_envs if part is None else part.stop - part.start
        wp.launch(_K.constraint_solve, dim=n, device=self.device, inputs=[
            self.nv, SOLVERS[o.solver], int(o.iterations), s(o.tolerance), int(o.ls_iterations), s(o.ls_tolerance),
            int(o.warm_pick_lower), int(o.solver == "Newton" and not o.warm_pick_lower),
            sl(M), sl(qacc_smooth), sl(qacc_warm), sl(self.n_efc), sl(self.efc_J),
            sl(self.efc_type), sl(self.efc_aref), sl(self.efc_R), sl(self.efc_D), sl(self.efc_floss), sl(self.efc_mu),
            sl(self.efc_dim), sl(self.H), sl(self.LM), sl(self.jar), sl(self.jv), sl(self.grad), sl(self.mgrad),
            sl(self.mgrad_old), sl(self.search), sl(self.ma), sl(self.mv), sl(self.qfrc_smooth),
            sl(self.qacc), sl(self.efc_force), sl(self.efc_state), sl(self.qfrc_constraint), sl(self.solver_niter),
            sl(self.solver_stat)])

    def contact_wrenches(self, part=None):
        """Fill con_wrench (contact frame, (F_n, F_t1, F_t2, T_n, T_t1, T_t2) on side A),
        con_force_world / con_torque_world (world frame, about the contact point) and con_valid
        from efc_force. Side B's wrench is the full negation."""
        sl = functools.partial(self._sl, part=part)
        n = self.n_envs if part is None else part.stop - part.start
        wp.launch(_K.contact_wrench, dim=n, device=self.device, inputs=[
            sl(self.n_con), sl(self.con_frame), sl(self.con_dim), sl(self.con_friction), sl(self.con_efc_adr),
            sl(self.efc_type), sl(self.efc_force), sl(self.con_wrench), sl(self.con_force_world),
            sl(self.con_torque_world), sl(self.con_valid)])

    def link_wrenches(self, link_com, h=0.0, accumulate=False, first_substep=False, part=None):
        """Fill link_force / link_torque (world frame, torque about link_com (n_envs, n_links, vec3))
        from the contact wrenches (call contact_wrenches first); accumulate=True also adds h times
        them to link_impulse_force / link_impulse_torque, first_substep=True restarts those sums
        (SPEC F4: the step's impulse is Σ h·f over its substeps)."""
        sl = functools.partial(self._sl, part=part)
        n = self.n_envs if part is None else part.stop - part.start
        wp.launch(_K.link_contact_wrench, dim=n, device=self.device, inputs=[
            self.scalar(h), 2 if first_substep else int(bool(accumulate)), sl(self.n_con), sl(self.con_pos),
            sl(self.con_link), sl(self.con_valid),
            sl(self.con_force_world), sl(self.con_torque_world), sl(link_com), sl(self.link_force),
            sl(self.link_torque), sl(self.link_impulse_force), sl(self.link_impulse_torque)])

    def check(self):
        """Host check (outside the captured step): raise naming the env when a row buffer overflowed."""
        from polyphys.errors import SimulationError
        ov = self.overflow.numpy()
        if ov.any():
            e = int(np.nonzero(ov)[0][0])
            raise SimulationError(f"constraint rows exceed max_rows={self.max_rows} in env {e}; raise max_rows")


def default_tolerance(precision="64", mujoco_compatible=False):
    """SPEC R2: 1e-6 (f32) / 1e-9 (f64); MuJoCo-compatible mode 1e-5 / 1e-8."""
    if mujoco_compatible:
        return 1e-5 if precision == "32" else 1e-8
    return 1e-6 if precision == "32" else 1e-9


def default_impratio(cone):
    """SPEC R2: 100 for elliptic, 1 for pyramidal (default mode)."""
    return 100.0 if cone == "elliptic" else 1.0


from polyphys.plugins.rigid.kernels import constraint_solve as _K  # noqa: E402

__all__ = ["check_friction", "ConstraintOptions", "ConstraintStage", "impedance", "ref_coefficients", "reference_acceleration",
           "regularization", "contact_regularization", "legalize_sol_params", "floor_timeconst", "mix_friction",
           "mix_sol_params", "mix_mujoco", "default_tolerance", "default_impratio",
           "options_from_rigid", "invweights", "link_jacobian"]
