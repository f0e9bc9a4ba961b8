"""Contact forces stage (docs/semantics.md §R9, §F2, §F4): per-contact 6D wrenches from the row forces, and per link
the net contact wrench about its CoM with its impulse Σ h·f over a step. Kernels:
kernels/contact_forces.py."""

from __future__ import annotations

import warp as wp

from .kernels import contact_forces as K
from .model import View

RESTART, ACCUMULATE, NONE = 2, 1, 0


def contact_wrench(v: View) -> None:
    wp.launch(K.contact_wrench, dim=v.n, inputs=[v.m, v.d], device=v.device)


def link_contact_wrench(v: View, accumulate: int) -> None:
    """accumulate: NONE (a query: the step's impulse sums kept), ACCUMULATE (add h·wrench),
    RESTART (the first substep of a step: the sums restart with it)."""
    wp.launch(K.link_contact_wrench, dim=v.n, inputs=[v.m, v.d, int(accumulate)], device=v.device)


def contact_link_wrench(v: View, accumulate: int, prefetch: int = 2) -> None:
    """contact_wrench(v) then link_contact_wrench(v, accumulate) in one launch (the same numbers).
    ``prefetch``: on CPU, prefetch the next env's contact and link rows (no effect on the numbers): 0 nothing,
    1 into L1, 2 into L2 only (benchmarks/results/constraint.md, Round 11)."""
    wp.launch(K.contact_link_wrench, dim=v.n, inputs=[v.m, v.d, int(accumulate), int(prefetch)], device=v.device)
