"""Constraint rows stage (MuJoCo's mj_makeConstraint + mj_makeImpedance + mj_referenceConstraint;
docs/semantics.md §R5-§R7, docs/constraint.md): per-contact parameters from the geoms, the J̇·q̇ of connect/weld
equalities, and the rows (equality, DOF frictionloss, contact, joint limit) with their Jacobians,
impedance, reference acceleration and regularization. Kernels: kernels/constraint_rows.py."""

from __future__ import annotations

import warp as wp

from .kernels import constraint_rows as K
from .model import View


def contact_params(v: View, prefetch: bool = True) -> None:
    """Per-contact friction, sol_params and condim from the geoms or explicit pairs. ``prefetch``: on CPU,
    prefetch the next env's contact rows (no effect on the numbers)."""
    wp.launch(K.contact_params, dim=v.n, inputs=[v.m, v.d, int(prefetch)], device=v.device)


def connect_bias(v: View, neq: int) -> None:
    if neq:
        wp.launch(K.connect_bias, dim=(v.n, neq), inputs=[v.m, v.d], device=v.device)


def make_rows(v: View, lim_window_h: float = 0.0, segs: bool = True, prefetch: int = 2, params: bool = False,
              pool: bool = False, slack: int = 0, head: int = 0) -> None:
    """The rows; ``lim_window_h`` = h > 0 adds Drake's limit activation window (the SAP hand-off,
    docs/sap.md "Which rows SAP takes over"), 0 (the solver's own solve): the joint margin only.
    ``segs``: record each row's nonzero segments in d.efc_seg while it is written (the convex solve reads
    them instead of scanning J, docs/constraint.md); False marks them unrecorded (the solve scans J: the
    same numbers, the reference of the tests and benchmarks). ``prefetch`` (CPU; no effect on the numbers): while
    an env's contact rows are built, 0 prefetches nothing, 1 the next env's first 128 rows, kinematics and contacts
    into L1 (Round 10), 3 also its row records (span, links, segments), up to 1024 rows, and the inputs of the
    equality, frictionloss and limit rows (qpos, per-env frictionloss and limit parameters) and, with ``params``, what
    the contact parameters read (its per-env geom friction and friction_ratio, its contacts' geoms and pairs: Round
    17b), all into L2 (Rounds 11 and 14c), 2 (default, Round 16) as 3 without the next env's rows: instead the env's
    own rows and contacts a few dozen rows ahead of the contact loop (benchmarks/results/constraint.md); bits 16
    and 32 (A/Bs of Round 17b, the same numbers): the general per-axis loop for a condim-3 pyramidal contact's values,
    and none of the contact parameters' prefetch. ``params``: first the contact
    parameters of ``contact_params`` (the same native body and numbers) in the same launch, while each env's
    contacts are in cache. ``pool`` (CPU only: a View's envs are built in order): each env's rows right after the
    previous env's in the View's pool (d.efc_off; docs/constraint.md, "The row pool"), no padding rows; False: each
    env's rows in its own block of the row budget (d.efc_off = 0), the rows past its count back to the cleared
    state. ``slack`` (with the pool): an env keeps its last address while that lies at most ``slack`` rows past the
    previous env's new end (0: always right after it); ``head`` (≤ ``slack``, larger is taken as ``slack``): an env that
    has to move lands that many rows past the previous env's new end (at most at its own block's start), not right at
    it, so that a later growth of the envs before it by up to ``head`` rows leaves it where it is."""
    if pool and not wp.get_device(v.device).is_cpu:
        raise ValueError(f"make_rows: pool=True needs a CPU View (envs built in order), got device {v.device!r}")
    wp.launch(K.make_rows, dim=v.n, inputs=[v.m, v.d, v.scalar(lim_window_h), int(segs), int(prefetch), int(params),
                                            int(pool) * (1 + int(slack)), int(pool) * min(int(head), int(slack))],
              device=v.device)
