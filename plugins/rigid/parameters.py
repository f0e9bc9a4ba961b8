"""Host-side setters and getters of the contact and constraint parameters (docs/semantics.md §R5, §R6): friction,
friction_ratio and sol_params of geoms, the friction of explicit contact pairs, and sol_params of
joints (limit and frictionloss rows) and equalities (both per env). They
write the Model's arrays in place, outside the step (captured graphs keep their pointers). The
public API is the solver's (``RigidSolver.set_friction`` ...) and the entities'; these functions
take the solver.
"""

from __future__ import annotations

import warnings

import numpy as np
from polyphys.arrays import write_env_rows
from polyphys.errors import OptionError

from .codes import JointType
from .constraint import DEFAULT_SOL_PARAMS, check_friction, legalize_sol_params


def _geoms_idx(solver, geoms_idx):
    G = len(solver.collision.geoms) if solver.collision is not None else 0
    idx = np.arange(G) if geoms_idx is None else np.atleast_1d(np.asarray(geoms_idx, np.int64))
    bad = idx[(idx < 0) | (idx >= G)]
    if bad.size:
        raise OptionError(f"geoms_idx contains {int(bad[0])}: allowed 0..{G - 1} (global geom indices)")
    return idx


def need_contacts(solver, what):
    if not solver.has_constraint or solver.collision is None:
        raise OptionError(f"{what}: the scene has no contact solve (no collidable geom pair, "
                          "enable_collision=False or disable_constraint=True)")


def set_friction(solver, friction, geoms_idx=None, envs_idx=None) -> None:
    need_contacts(solver, "set_friction")
    idx = _geoms_idx(solver, geoms_idx)
    envs = solver.scene._envs_idx(envs_idx)
    check_friction(friction)
    try:
        f = np.broadcast_to(np.asarray(friction, float), (len(envs), len(idx)))
    except ValueError:
        raise OptionError(f"friction of shape {np.shape(friction)}: expected a scalar, ({len(idx)},) or "
                          f"({len(envs)}, {len(idx)}) (envs, geoms)") from None
    arr = solver.model.geom_friction
    host = arr.numpy()
    host[envs[:, None], idx[None, :], 0] = f
    arr.assign(host)
    if envs_idx is None:
        solver.geom_friction0[idx, 0] = f[0]


def get_friction(solver, geoms_idx=None, envs_idx=None) -> np.ndarray:
    need_contacts(solver, "get_friction")
    idx = _geoms_idx(solver, geoms_idx)
    envs = solver.scene._envs_idx(envs_idx)
    out = solver.model.geom_friction.numpy()[envs][:, idx].astype(float)
    return out if solver.scene.batched else out[0]


def set_friction_ratio(solver, ratio, geoms_idx=None, envs_idx=None) -> None:
    need_contacts(solver, "set_friction_ratio")
    idx = _geoms_idx(solver, geoms_idx)
    envs = solver.scene._envs_idx(envs_idx)
    r = np.broadcast_to(np.asarray(ratio, float), (len(envs), len(idx)))
    if not np.all(np.isfinite(r) & (r > 0)):
        raise OptionError(f"friction_ratio={float(r[~(np.isfinite(r) & (r > 0))][0])!r}: must be > 0")
    solver._write(solver.model.geom_friction_ratio, envs, idx, r)


def _pairs_idx(solver, pairs_idx):
    P = int(solver.n_pairs)
    idx = np.arange(P) if pairs_idx is None else np.atleast_1d(np.asarray(pairs_idx, np.int64))
    bad = idx[(idx < 0) | (idx >= P)]
    if bad.size:
        raise OptionError(f"pairs_idx contains {int(bad[0])}: allowed 0..{P - 1} (explicit contact pairs in entity order)")
    return idx


def set_pair_friction(solver, friction, pairs_idx=None, envs_idx=None) -> None:
    need_contacts(solver, "set_pair_friction")
    if not solver.n_pairs:
        raise OptionError("set_pair_friction: the scene has no explicit contact pair (MJCF <contact><pair>)")
    idx = _pairs_idx(solver, pairs_idx)
    envs = solver.scene._envs_idx(envs_idx)
    try:
        f = np.broadcast_to(np.asarray(friction, float), (len(envs), len(idx), 5))
    except ValueError:
        raise OptionError(f"pair friction of shape {np.shape(friction)}: expected (5,), ({len(idx)}, 5) or "
                          f"({len(envs)}, {len(idx)}, 5) (sliding, sliding, torsional, rolling, rolling)") from None
    check_friction(f[..., :2], field="pair friction (sliding)")
    if not np.all(np.isfinite(f) & (f >= 0)):
        raise OptionError(f"pair friction {f[~(np.isfinite(f) & (f >= 0))][0]!r}: torsional and rolling "
                          "coefficients must be finite and >= 0")
    arr = solver.model.pair_friction
    host = arr.numpy()
    host[envs[:, None], idx[None, :]] = f
    arr.assign(host)


def get_pair_friction(solver, pairs_idx=None, envs_idx=None) -> np.ndarray:
    need_contacts(solver, "get_pair_friction")
    idx = _pairs_idx(solver, pairs_idx)
    envs = solver.scene._envs_idx(envs_idx)
    out = solver.model.pair_friction.numpy()[envs][:, idx].astype(float)
    return out if solver.scene.batched else out[0]


# sol_params (docs/semantics.md §R6): one kind per call; geoms shared by all envs, joints and equalities per env
def _sol_kind(geoms_idx, joints_idx, eqs_idx, what):
    given = [k for k, v in (("geoms_idx", geoms_idx), ("joints_idx", joints_idx), ("eqs_idx", eqs_idx))
             if v is not None]
    if len(given) > 1:
        raise OptionError(f"{what}: one kind per call (geoms_idx=, joints_idx= or eqs_idx=), got {given}")
    return given[0] if given else "geoms_idx"


def _kind_idx(idx, n, field):
    out = np.arange(n) if idx is None else np.atleast_1d(np.asarray(idx)).reshape(-1)
    if out.size and not np.issubdtype(out.dtype, np.integer):
        raise OptionError(f"{field}={idx!r}: expected integer indices")
    bad = out[(out < 0) | (out >= n)]
    if bad.size:
        raise OptionError(f"{field} contains {int(bad[0])}: allowed 0..{n - 1} (global indices)")
    return out.astype(np.int64)


def _joint_ndof(solver, j):
    return JointType(int(solver.tree.joint_type[j])).n_dofs


def _sol_records(solver):
    """Host record of the sol_params inputs and effective values of joints (limit and frictionloss
    rows), equalities and geoms, made on first use from the model's values."""
    rec = getattr(solver, "_sol_rec", None)
    if rec is not None:
        return rec
    hm, m, t = solver.hm, solver.model, solver.tree
    compat, h = solver.options.mujoco_compatible, solver.layout.h
    nj, n = solver.n_joints, solver.layout.n_envs
    jin = np.tile(np.asarray(DEFAULT_SOL_PARAMS, float), (n, nj, 1))
    # a joint's current value: its limit params (frictionloss params when it has no limit), per env
    fsol = m.dof_sol.numpy().astype(float)
    lsol = m.lim_sol.numpy().astype(float)
    for j in range(nj):
        if _joint_ndof(solver, j):
            d0 = int(t.joint_dof_start[j])
            rows = np.nonzero(hm.lim_dof.astype(int) == d0)[0]
            jin[:, j] = lsol[:, rows[0]] if len(rows) else fsol[:, d0]
    ne = len(hm.eq_type)
    ein = m.eq_sol.numpy()[:, :ne].astype(float) if ne else np.zeros((solver.layout.n_envs, 0, 7))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jeff = np.array([legalize_sol_params(x, compatible=compat, h=h) for x in jin.reshape(-1, 7)]).reshape(jin.shape)
        eeff = np.array([[legalize_sol_params(x, compatible=compat, h=h) for x in row] for row in ein]
                        ).reshape(ein.shape)
        gin = solver.geom_sol0 if solver.collision is not None else np.zeros((0, 7))
        geff = np.array([legalize_sol_params(x, compatible=compat) for x in gin]).reshape(-1, 7)
    solver._sol_rec = rec = {"joints": [jin, jeff], "eqs": [ein, eeff], "geoms": [gin.copy(), geff]}
    return rec


def set_sol_params(solver, sol_params, geoms_idx=None, joints_idx=None, eqs_idx=None, envs_idx=None) -> None:
    if not solver.has_constraint:
        raise OptionError("set_sol_params: the scene has no constraint solve (no contact, limit, "
                          "frictionloss or equality)")
    kind = _sol_kind(geoms_idx, joints_idx, eqs_idx, "set_sol_params")
    compat, h = solver.options.mujoco_compatible, solver.layout.h
    if kind == "geoms_idx" and envs_idx is not None:
        raise OptionError("set_sol_params(geoms_idx=...): geom sol_params are shared by all envs; envs_idx is "
                          "for joints_idx and eqs_idx (their params are per env)")
    vals = np.asarray(sol_params, float)
    if vals.shape[-1:] != (7,):
        raise OptionError(f"sol_params of shape {vals.shape}: the last axis must hold 7 values (timeconst, "
                          "dampratio, dmin, dmax, width, mid, power)")
    rec = _sol_records(solver)
    m, hm = solver.model, solver.hm
    if kind == "geoms_idx":
        need_contacts(solver, "set_sol_params(geoms_idx=)")
        idx = _geoms_idx(solver, geoms_idx)
        v = np.broadcast_to(vals, (len(idx), 7))
        eff = np.array([legalize_sol_params(x, field="sol_params", compatible=compat) for x in v])
        host = m.geom_sol.numpy()
        host[idx] = eff
        m.geom_sol.assign(host)
        rec["geoms"][0][idx] = v
        rec["geoms"][1][idx] = eff
        return
    if kind == "joints_idx":
        idx = _kind_idx(joints_idx, solver.n_joints, "joints_idx")
        envs = solver.scene._envs_idx(envs_idx)
        try:
            v = np.broadcast_to(vals, (len(envs), len(idx), 7))
        except ValueError:
            raise OptionError(f"sol_params of shape {vals.shape}: expected (7,), ({len(idx)}, 7) or "
                              f"({len(envs)}, {len(idx)}, 7)") from None
        eff = np.array([legalize_sol_params(x, field="sol_params", compatible=compat, h=h)
                        for x in v.reshape(-1, 7)]).reshape(v.shape)
        t = solver.tree
        lsol, dsol = m.lim_sol.numpy(), m.dof_sol.numpy()
        for k, j in enumerate(idx):
            d0 = int(t.joint_dof_start[j])
            nd = _joint_ndof(solver, j)
            for r in (np.nonzero(hm.lim_dof.astype(int) == d0)[0] if nd else []):
                lsol[envs, r] = eff[:, k]
            for dd in range(d0, d0 + nd):
                dsol[envs, dd] = eff[:, k]
        if len(hm.lim_dof):
            m.lim_sol.assign(lsol)
        m.dof_sol.assign(dsol)
        rec["joints"][0][envs[:, None], idx[None, :]] = v
        rec["joints"][1][envs[:, None], idx[None, :]] = eff
        return
    ne = len(hm.eq_type)
    idx = _kind_idx(eqs_idx, ne, "eqs_idx")
    envs = solver.scene._envs_idx(envs_idx)
    try:
        v = np.broadcast_to(vals, (len(envs), len(idx), 7))
    except ValueError:
        raise OptionError(f"sol_params of shape {vals.shape}: expected (7,), ({len(idx)}, 7) or "
                          f"({len(envs)}, {len(idx)}, 7)") from None
    eff = np.array([legalize_sol_params(x, field="sol_params", compatible=compat, h=h)
                    for x in v.reshape(-1, 7)]).reshape(v.shape)
    write_env_rows(m.eq_sol, envs, idx, eff)
    rec["eqs"][0][envs[:, None], idx[None, :]] = v
    rec["eqs"][1][envs[:, None], idx[None, :]] = eff


def get_sol_params(solver, geoms_idx=None, joints_idx=None, eqs_idx=None, envs_idx=None) -> dict:
    if not solver.has_constraint:
        raise OptionError("get_sol_params: the scene has no constraint solve")
    kind = _sol_kind(geoms_idx, joints_idx, eqs_idx, "get_sol_params")
    rec = _sol_records(solver)
    if kind == "geoms_idx":
        need_contacts(solver, "get_sol_params(geoms_idx=)")
        idx = _geoms_idx(solver, geoms_idx)
        return {"input": rec["geoms"][0][idx].copy(), "effective": rec["geoms"][1][idx].copy()}
    kk, n = ("joints", solver.n_joints) if kind == "joints_idx" else ("eqs", len(solver.hm.eq_type))
    idx = _kind_idx(joints_idx if kind == "joints_idx" else eqs_idx, n, kind)
    envs = solver.scene._envs_idx(envs_idx)
    out = {k: rec[kk][i][envs][:, idx].copy() for i, k in enumerate(("input", "effective"))}
    return out if solver.scene.batched else {k: v[0] for k, v in out.items()}
