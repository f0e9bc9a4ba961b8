"""Integration stage (docs/semantics.md §R2; MuJoCo's mj_Euler / mj_implicit): semi-implicit Euler, the implicit
midpoint branch of free bodies, the gyroscopic re-solve of standalone free bodies (MuJoCo-compatible implicitfast,
§R2a) and the total force of the integrating solve after a constraint solve; ``post_solve``: the constrained
substep's tail (total force, solve, integration) in one launch. Kernels: kernels/integration.py."""

from __future__ import annotations

import warp as wp

from .kernels import integration as K
from .model import View


def gyro_resolve(v: View, qfrc) -> None:
    """MuJoCo-compatible implicitfast (docs/semantics.md §R2, MuJoCo's docs "Gyroscopic derivatives for free
    bodies"): after the (M + h·D) solve into d.qacc, re-solve each standalone free joint's decoupled 6×6 block
    with h·∂qfrc_bias/∂v added, for the same force qfrc. No launch when the model has no such joint."""
    if v.has_gyro:
        wp.launch(K.gyro_resolve, dim=v.n, inputs=[v.m, v.d, qfrc], device=v.device)


def total_force(v: View) -> None:
    """d.qfrc_total = passive + actuator + control + (applied + constraint) + ext − bias."""
    wp.launch(K.total_force, dim=v.n, inputs=[v.m, v.d], device=v.device)


def integrate(v: View, clear_ext: bool, qfrc) -> None:
    """Advance qpos/qvel by one substep with d.qacc; qfrc: the force d.qacc was solved with (the
    midpoint bodies re-derive their CoM wrench from it). clear_ext: the last substep of a step
    (external wrenches and applied forces last one step)."""
    wp.launch(K.integrate, dim=v.n, inputs=[v.m, v.d, int(bool(clear_ext)), qfrc], device=v.device)


def post_solve(v: View, clear_ext: bool, solve: bool, prefetch: int = 1) -> None:
    """The tail of a constrained substep in one launch (kernels/integration.py ``post_solve``, the same numbers as
    the separate launches): total_force(v); then with ``solve`` factorization.ld_solve(v, d.qfrc_total, d.qacc,
    prefetch) and gyro_resolve(v, d.qfrc_total), else (approximate_implicitfast) d.qacc = d.qacc_warmstart; then
    integrate(v, clear_ext, d.qfrc_total)."""
    wp.launch(K.post_solve, dim=v.n, inputs=[v.m, v.d, int(bool(clear_ext)), int(bool(solve)), int(bool(v.has_gyro)),
                                            int(prefetch)], device=v.device)
