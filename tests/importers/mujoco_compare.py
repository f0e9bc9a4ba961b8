"""Compare an imported EntityDescription with MuJoCo's compiled model of the same file.

Tolerance: relative error 1e-6 of each quantity (scaled by the largest reference entry of that
quantity, so near-zero entries of a vector or tensor are judged against its size). Both sides
compute in float64 from the same decimal text, so disagreements far above 1e-12 are real. Meshes:
MuJoCo stores mesh vertices in float32 (model.mesh_vert is float32), so mesh-derived volumes and
inertias carry a relative rounding of ~6e-8 per coordinate, amplified for thin or nearly flat
shapes; MESH_RTOL = 1e-5 covers that and is used only for bodies with mesh geoms.
"""

from __future__ import annotations

import numpy as np
from polyphys.description import quat_to_mat

RTOL = 1e-6
MESH_RTOL = 1e-5
JNT = {0: "free", 1: "spherical", 2: "prismatic", 3: "revolute"}
GEOM = {0: "plane", 1: "hfield", 2: "sphere", 3: "capsule", 4: "ellipsoid", 5: "cylinder", 6: "box",
        7: "mesh", 8: "sdf"}


def _close(a, b, what, rtol=RTOL, floor=1e-9):
    a = np.asarray(a, float)
    b = np.asarray(b, float)
    assert a.shape == b.shape, f"{what}: shape {a.shape} != {b.shape}"
    tol = rtol * max(float(np.max(np.abs(b))) if b.size else 0.0, floor)
    err = float(np.max(np.abs(a - b))) if a.size else 0.0
    assert err <= tol, f"{what}: polyphys {a.tolist()} vs MuJoCo {b.tolist()} (error {err:.3g} > {tol:.3g})"


def _rot_close(qa, qb, what, rtol=RTOL):
    _close(quat_to_mat(qa), quat_to_mat(qb), what + " (rotation)", rtol=rtol, floor=1.0)


def _inv(pos, quat):
    r = quat_to_mat(quat)
    return -r.T @ np.asarray(pos), np.asarray([quat[0], -quat[1], -quat[2], -quat[3]])


def compare(desc, m, mujoco):
    name = lambda t, i: mujoco.mj_id2name(m, t, i)  # noqa: E731
    OBJ = mujoco.mjtObj
    assert desc.n_links == m.nbody, f"bodies: {desc.n_links} != {m.nbody}"
    assert desc.n_qs == m.nq and desc.n_dofs == m.nv, (desc.n_qs, m.nq, desc.n_dofs, m.nv)
    mesh_bodies = {int(m.geom_bodyid[g]) for g in range(m.ngeom) if m.geom_type[g] == 7}
    for i, lk in enumerate(desc.links):
        w = f"body {i} {lk.name!r}"
        if i > 0:
            assert lk.parent == m.body_parentid[i], f"{w}: parent {lk.parent} != {m.body_parentid[i]}"
            mn = name(OBJ.mjOBJ_BODY, i)
            if mn:
                assert mn == lk.name, f"{w}: MuJoCo name {mn!r}"
        _close(lk.pos, m.body_pos[i], f"{w} pos", floor=1e-3)
        _rot_close(lk.quat, m.body_quat[i], f"{w} quat")
        rt = MESH_RTOL if i in mesh_bodies else RTOL
        _close(lk.inertial.mass, m.body_mass[i], f"{w} mass", rtol=rt)
        if m.body_mass[i] > 0:
            _close(lk.inertial.com, m.body_ipos[i], f"{w} CoM", rtol=rt, floor=1e-3)
            r = quat_to_mat(m.body_iquat[i])
            ref = r @ np.diag(m.body_inertia[i]) @ r.T
            _close(lk.inertial.inertia, ref, f"{w} CoM inertia (body frame)", rtol=rt)
    assert len(desc.joints) == m.njnt
    for ji, j in enumerate(desc.joints):
        w = f"joint {ji} {j.name!r}"
        assert j.type == JNT[int(m.jnt_type[ji])], f"{w}: type {j.type} vs {m.jnt_type[ji]}"
        assert j.link == m.jnt_bodyid[ji], f"{w}: body {j.link} vs {m.jnt_bodyid[ji]}"
        assert j.q_start == m.jnt_qposadr[ji] and j.dof_start == m.jnt_dofadr[ji], w
        if j.type != "free":
            _close(j.pos, m.jnt_pos[ji], f"{w} pos", floor=1e-3)
        if j.type in ("revolute", "prismatic"):
            _close(j.axis, m.jnt_axis[ji], f"{w} axis", floor=1.0)
            _close(j.ref, m.qpos0[m.jnt_qposadr[ji]], f"{w} ref", floor=1.0)
        assert bool(j.limited) == bool(m.jnt_limited[ji]), f"{w}: limited {j.limited}"
        if j.limited:
            _close(j.range, m.jnt_range[ji], f"{w} range", floor=1.0)
        d = m.jnt_dofadr[ji]
        _close(j.damping, m.dof_damping[d], f"{w} damping", floor=1.0)
        _close(j.armature, m.dof_armature[d], f"{w} armature", floor=1.0)
        _close(j.frictionloss, m.dof_frictionloss[d], f"{w} frictionloss", floor=1.0)
        _close(j.stiffness, m.jnt_stiffness[ji], f"{w} stiffness", floor=1.0)
        if j.type in ("revolute", "prismatic"):
            _close(j.springref, m.qpos_spring[m.jnt_qposadr[ji]], f"{w} springref", floor=1.0)
    assert len(desc.geoms) == m.ngeom
    for gi, g in enumerate(desc.geoms):
        w = f"geom {gi} {g.name!r}"
        assert g.type == GEOM[int(m.geom_type[gi])], f"{w}: type {g.type}"
        assert g.link == m.geom_bodyid[gi], f"{w}: body {g.link} vs {m.geom_bodyid[gi]}"
        pos, quat = m.geom_pos[gi], m.geom_quat[gi]
        if g.type == "mesh":
            # MuJoCo re-centres a mesh at its CoM on its principal axes and moves the geom
            # frame by that offset: undo it to get the frame the file wrote
            mid = m.geom_dataid[gi]
            ip, iq = _inv(m.mesh_pos[mid], m.mesh_quat[mid])
            pos = pos + quat_to_mat(quat) @ ip
            from polyphys.description import quat_mul
            quat = quat_mul(quat, iq)
        rt = MESH_RTOL if g.type == "mesh" else RTOL
        _close(g.pos, pos, f"{w} pos", rtol=rt, floor=1e-3)
        _rot_close(g.quat, quat, f"{w} quat", rtol=rt)
        if g.type not in ("mesh", "hfield"):
            _close(g.size, m.geom_size[gi], f"{w} size", floor=1e-3)
        if g.type == "hfield" and g.hfield.get("data") is not None:
            hid = m.geom_dataid[gi]
            nr, nc = m.hfield_nrow[hid], m.hfield_ncol[hid]
            ref = m.hfield_data[m.hfield_adr[hid]:m.hfield_adr[hid] + nr * nc].reshape(nr, nc)
            _close(g.hfield["data"], ref, f"{w} hfield data", rtol=1e-6, floor=1.0)
            _close(g.hfield["size"], m.hfield_size[hid], f"{w} hfield size", floor=1e-3)
        assert (g.contype, g.conaffinity, g.condim, g.priority, g.group) == (
            m.geom_contype[gi], m.geom_conaffinity[gi], m.geom_condim[gi], m.geom_priority[gi],
            m.geom_group[gi]), w
        _close(g.friction, m.geom_friction[gi], f"{w} friction", floor=1.0)
        _close(g.solref, m.geom_solref[gi], f"{w} solref", floor=1.0)
        _close(g.solimp, m.geom_solimp[gi], f"{w} solimp", floor=1.0)
        _close([g.margin, g.gap, g.solmix], [m.geom_margin[gi], m.geom_gap[gi], m.geom_solmix[gi]],
               f"{w} margin/gap/solmix", floor=1.0)
    assert len(desc.sites) == m.nsite
    for si, st in enumerate(desc.sites):
        w = f"site {si} {st.name!r}"
        assert st.link == m.site_bodyid[si], w
        _close(st.pos, m.site_pos[si], f"{w} pos", floor=1e-3)
        _rot_close(st.quat, m.site_quat[si], f"{w} quat")
        _close(st.size, m.site_size[si], f"{w} size", floor=1e-3)
    assert len(desc.actuators) == m.nu
    for ai, a in enumerate(desc.actuators):
        w = f"actuator {ai} {a.name!r}"
        _close(a.gear, m.actuator_gear[ai], f"{w} gear", floor=1.0)
        assert bool(a.ctrllimited) == bool(m.actuator_ctrllimited[ai]), f"{w} ctrllimited"
        if a.ctrllimited:
            _close(a.ctrlrange, m.actuator_ctrlrange[ai], f"{w} ctrlrange", floor=1.0)
        assert bool(a.forcelimited) == bool(m.actuator_forcelimited[ai]), f"{w} forcelimited"
        if a.forcelimited:
            _close(a.forcerange, m.actuator_forcerange[ai], f"{w} forcerange", floor=1.0)
        _close(a.gainprm, m.actuator_gainprm[ai], f"{w} gainprm", floor=1.0)
        _close(a.biasprm, m.actuator_biasprm[ai], f"{w} biasprm", floor=1.0)
        if a.trntype == "joint":
            assert a.joint == m.actuator_trnid[ai, 0], w
    _close(desc.options["dt"], m.opt.timestep, "timestep")
    _close(desc.options["gravity"], m.opt.gravity, "gravity", floor=1.0)
    _close(desc.options["impratio"], m.opt.impratio, "impratio", floor=1.0)
    eqs = [e for e in desc.equalities]
    assert len(eqs) <= m.neq
    for ei, e in enumerate(eqs):
        # the file's supported equalities come first in MuJoCo's order; unsupported ones are
        # reported, not imported, so compare only while the types agree
        w = f"equality {ei} {e.name!r}"
        assert {0: "connect", 1: "weld", 2: "joint"}.get(int(m.eq_type[ei])) == e.type, w
        assert (e.obj1, max(e.obj2, 0) if e.type != "joint" else e.obj2) == (
            m.eq_obj1id[ei], m.eq_obj2id[ei]), w
        _close(e.solref, m.eq_solref[ei], f"{w} solref", floor=1.0)
        _close(e.solimp, m.eq_solimp[ei], f"{w} solimp", floor=1.0)
        if e.type == "joint":
            _close(e.polycoef, m.eq_data[ei, :5], f"{w} polycoef", floor=1.0)
        else:
            _close(e.anchor, m.eq_data[ei, :3], f"{w} anchor", floor=1e-3)
        if e.type == "weld":
            _close(e.relpose[:3], m.eq_data[ei, 3:6], f"{w} relpose pos", floor=1e-3)
            _rot_close(e.relpose[3:], m.eq_data[ei, 6:10], f"{w} relpose quat")
            _close(e.torquescale, m.eq_data[ei, 10], f"{w} torquescale", floor=1.0)
    assert len(desc.keyframes) == m.nkey
    for k, kf in enumerate(desc.keyframes):
        if kf.qpos is not None:
            _close(kf.qpos, m.key_qpos[k], f"key {k} qpos", floor=1.0)
