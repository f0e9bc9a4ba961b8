"""Host readback of contacts and contact forces (docs/semantics.md §R9, §F1, §F2, §F4): the raw contact set of the
collision pipeline, per-contact forces and wrenches of the last solve with their time tags, and the
per-link net contact wrench. Getters copy (outside the step); the public API is the solver's
``get_raw_contacts`` and the entity's ``get_contacts`` / ``get_links_net_contact_wrench``."""

from __future__ import annotations

import numpy as np

from . import contact_forces


def raw_contacts(solver, envs: np.ndarray) -> dict:
    """geom_a, geom_b, link_a, link_b (global, -1: none/world), position, normal (B→A), penetration,
    valid, active (a constraint row: False in MuJoCo 4's gap band, docs/semantics.md §F2), count; batch axis first."""
    n = len(envs)
    c = solver.collision
    if c is None:
        z = np.zeros((n, 0), np.int32)
        return dict(geom_a=z, geom_b=z.copy(), link_a=z.copy(), link_b=z.copy(), position=np.zeros((n, 0, 3)),
                    normal=np.zeros((n, 0, 3)), penetration=np.zeros((n, 0)), valid=np.zeros((n, 0), bool),
                    active=np.zeros((n, 0), bool), count=np.zeros(n, np.int32))
    cnt = c.contact_count.numpy()[envs]
    geom = c.contact_geom.numpy()[envs]
    valid = np.arange(c.max_contacts)[None, :] < cnt[:, None]
    # docs/semantics.md §F2: a detected contact that is not a constraint row (MuJoCo 4's gap band) is inactive,
    # which a zero force alone would not say; the active ones come first in each env
    active = np.arange(c.max_contacts)[None, :] < c.contact_active.numpy()[envs][:, None]
    ga = np.where(valid, geom[..., 0], -1).astype(np.int32)
    gb = np.where(valid, geom[..., 1], -1).astype(np.int32)
    glink = np.array([g.link for g in c.geoms] + [-1], np.int32)   # index -1 -> -1
    pos = np.where(valid[..., None], c.contact_pos.numpy()[envs], 0.0)
    nrm = np.where(valid[..., None], c.contact_frame.numpy()[envs][:, :, 0], 0.0)
    dep = np.where(valid, c.contact_depth.numpy()[envs], 0.0)
    return dict(geom_a=ga, geom_b=gb, link_a=glink[ga], link_b=glink[gb], position=pos, normal=nrm, penetration=dep,
                valid=valid, active=valid & active, count=cnt.astype(np.int32))


def contact_forces_host(solver, envs: np.ndarray) -> dict:
    """Raw contacts plus the forces of the last constraint solve: force_a / torque_a (world, on geom
    A, torque about the contact point), force_b = −force_a, wrench (n, K, 6: F_n, F_t1, F_t2, T_n,
    T_t1, T_t2 on A in the contact frame, normal B→A), solved_at (the time the substep started; NaN
    for forward()'s query), query_at (forward()'s query: the current time; NaN for a step's solve)
    and stale (a setter changed the state since the solve)."""
    out = raw_contacts(solver, envs)
    n, K = out["valid"].shape
    if not solver.has_constraint or solver.collision is None:
        out.update(force_a=np.zeros((n, K, 3)), force_b=np.zeros((n, K, 3)), torque_a=np.zeros((n, K, 3)),
                   wrench=np.zeros((n, K, 6)))
    else:
        contact_forces.contact_wrench(solver.views["all"])
        d = solver.data
        v = out["valid"][..., None]
        fa = np.where(v, d.con_force_world.numpy()[envs][:, :K].astype(float), 0.0)
        out.update(force_a=fa, force_b=-fa,
                   torque_a=np.where(v, d.con_torque_world.numpy()[envs][:, :K].astype(float), 0.0),
                   wrench=np.where(v, d.con_wrench.numpy()[envs][:, :K].astype(float), 0.0))
    steps = solver._steps_done()
    h = solver.layout.h
    dt = h * solver.layout.substeps
    if getattr(solver, "_query_at", None) == steps:   # forward()'s query at the current state
        out["solved_at"] = np.full(n, np.nan)         # docs/semantics.md §F1: a query is not a step's solve ...
        out["query_at"] = np.full(n, max(steps, 0) * dt)   # ... it is tagged with the query time
        out["stale"] = np.full(n, False)
        return out
    out["solved_at"] = np.full(n, max(steps, 0) * dt - h if steps > 0 else np.nan)
    out["query_at"] = np.full(n, np.nan)
    out["stale"] = np.full(n, steps <= 0 or getattr(solver, "_forward_at", None) == steps)
    return out


def link_contact_wrench_host(solver, envs: np.ndarray) -> dict:
    """Per link (global index): net contact force and torque about the link CoM (world) of the last
    substep, and the impulse Σ h·f / Σ h·τ over the last step's substeps (docs/semantics.md §R9/§F4)."""
    z = np.zeros((len(envs), solver.n_links, 3))
    if not solver.has_constraint or solver.collision is None:
        return dict(force=z, torque=z.copy(), impulse_force=z.copy(), impulse_torque=z.copy())
    solver._wrench_sync()            # a step that skipped the stage: computed now (the same numbers)
    d = solver.data
    g = lambda a: a.numpy()[envs].astype(float)  # noqa: E731
    return dict(force=g(d.link_contact_force), torque=g(d.link_contact_torque), impulse_force=g(d.link_impulse_force),
                impulse_torque=g(d.link_impulse_torque))
