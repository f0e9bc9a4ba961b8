"""The rigid solver's host model and its device copy (MuJoCo Warp's io.put_model): the only place the
host model becomes device arrays.

``HostModel.build(entities, options)`` flattens the entities' descriptions into NumPy arrays (the
joint tree, dof tree and sparse mass-matrix layout, actuators, joint limits, frictionloss,
equalities); ``put_model`` / ``make_data`` allocate the device ``Model`` and ``Data`` structs of
types.py (smooth dynamics part); ``set_const`` completes them at qpos0 after a first forward pass —
the constants MuJoCo's mj_setConst computes (inverse weights, connect anchors, the noslip scale) —
and allocates the contact and constraint arrays, sized from the collision pipeline; ``View`` is a
partition's (or the whole batch's) pair of structs with sliced per-env arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from polyphys.description import JointType
from polyphys.errors import BuildError, OptionError
from polyphys.kinematics import JointTree, quat_mul, quat_rotate

from .codes import ConeType, EqType, IntegratorType, ResolutionType, SolverType
from .constraint import DEFAULT_SOL_PARAMS, FRICTION_FLOOR, FRICTION_FLOOR_MUJOCO
from .options import RigidOptions
from .types import DATA, MODEL, OPTION, PER_ENV_MODEL_FIELDS

EQ_ROWS = {EqType.CONNECT: 3, EqType.WELD: 6, EqType.JOINT: 1}


def _one(a: np.ndarray) -> np.ndarray:
    """a, or one zero row when a is empty (per-env arrays keep at least one column)."""
    return a if len(a) else np.zeros((1,) + np.shape(a)[1:], dtype=np.asarray(a).dtype)


@dataclass
class HostModel:
    """NumPy model of the scene's entities (MuJoCo's mjModel analogue, host side). Field meanings as
    the device ``Model`` of types.py; the extra host-only fields are documented where set."""

    tree: JointTree
    options: RigidOptions
    arrays: dict = field(default_factory=dict)
    actuator_names: list = field(default_factory=list)

    def __getattr__(self, name):
        try:
            return self.__dict__["arrays"][name]
        except KeyError:
            raise AttributeError(name) from None

    @property
    def nv(self) -> int:
        return self.tree.n_dofs

    @property
    def nl(self) -> int:
        return self.tree.n_links

    @classmethod
    def build(cls, pending, options: RigidOptions) -> HostModel:
        """pending: list of (EntityDescription, base_pos, base_quat) in entity order."""
        t = JointTree(pending)
        _place_free_joints_under_welded_links(t)
        hm = cls(tree=t, options=options)
        hm._tree_arrays(pending)
        hm._constraint_arrays(pending)
        return hm

    # -- tree, dofs, actuators ------------------------------------------------------------------
    def _tree_arrays(self, pending) -> None:
        t = self.tree
        h: dict = {}
        link_root, link_dof_adr, gravcomp, mass, com, inertia = [], [0], [], [], [], []
        springref, damping, armature, stiffness = [], [], [], []
        dof_link, dof_joint = [], []
        act = {k: [] for k in ("act_dof", "act_qadr", "act_gear", "act_gain", "act_bias", "act_ctrl_lo",
                               "act_ctrl_hi", "act_force_lo", "act_force_hi")}
        gc_scale = self.options.gravity_compensation
        for (desc, _, _), ls, js, qs, ds in zip(pending, t.entity_link_start, t.entity_joint_start, t.entity_q_start,
                                                t.entity_dof_start):
            # reference point of a link's spatial quantities: the origin of its tree's root, the
            # topmost link that moves relative to the world (links welded to the world are roots)
            welded = []
            for li, link in enumerate(desc.links):
                p = link.parent
                moving = any(desc.joints[j].type != "fixed" for j in link.joints)
                welded.append((p < 0 or welded[p]) and not moving)
                link_root.append(ls + li if (p < 0 or welded[p]) else link_root[ls + p])
                gravcomp.append(link.gravcomp * gc_scale)
                mass.append(link.inertial.mass)
                com.append(link.inertial.com)
                inertia.append(link.inertial.inertia)
                nd_link = 0
                for ji in link.joints:
                    j = desc.joints[ji]
                    springref.append(j.springref if j.type in ("revolute", "prismatic") else 0.0)
                    for _ in range(j.n_dofs):
                        dof_link.append(ls + li)
                        dof_joint.append(js + ji)
                        damping.append(j.damping)
                        armature.append(j.armature)
                        stiffness.append(j.stiffness)
                    nd_link += j.n_dofs
                link_dof_adr.append(link_dof_adr[-1] + nd_link)
            for a in desc.actuators:
                j = desc.joints[a.joint]
                act["act_dof"].append(ds + j.dof_start)
                act["act_qadr"].append(qs + j.q_start)
                act["act_gear"].append(a.gear[0])
                g = list(a.gainprm[:3]) + [0.0] * (3 - len(a.gainprm[:3]))
                act["act_gain"].append(g if a.gaintype == "affine" else [g[0], 0.0, 0.0])
                b = list(a.biasprm[:3]) + [0.0] * (3 - len(a.biasprm[:3]))
                act["act_bias"].append(b if a.biastype == "affine" else [0.0, 0.0, 0.0])
                act["act_ctrl_lo"].append(a.ctrlrange[0] if a.ctrllimited else -np.inf)
                act["act_ctrl_hi"].append(a.ctrlrange[1] if a.ctrllimited else np.inf)
                act["act_force_lo"].append(a.forcerange[0] if a.forcelimited else -np.inf)
                act["act_force_hi"].append(a.forcerange[1] if a.forcelimited else np.inf)
                self.actuator_names.append(a.name)
        # dof tree: parent dof = previous dof of the link, else the last dof of the nearest ancestor
        nd = t.n_dofs
        dof_parent = np.full(nd, -1, np.int32)
        last_dof = np.full(t.n_links, -1, np.int64)
        for l in range(t.n_links):
            p = t.link_parent[l]
            prev = last_dof[p] if p >= 0 else -1
            for d in range(link_dof_adr[l], link_dof_adr[l + 1]):
                dof_parent[d] = prev
                prev = d
            last_dof[l] = prev
        depth = np.zeros(nd, np.int64)
        for d in range(nd):
            depth[d] = 0 if dof_parent[d] < 0 else depth[dof_parent[d]] + 1
        madr = np.zeros(nd, np.int32)
        if nd:
            madr[1:] = np.cumsum(depth + 1)[:-1]
        h.update(link_root=np.asarray(link_root, np.int32), link_dof_adr=np.asarray(link_dof_adr, np.int32),
                 link_gravcomp=np.asarray(gravcomp, float), link_mass=np.asarray(mass, float),
                 link_com=np.asarray(com, float).reshape(-1, 3),
                 link_inertia=np.asarray(inertia, float).reshape(-1, 3, 3),
                 link_dof_last=last_dof.astype(np.int32),
                 joint_springref=np.asarray(springref, float),
                 dof_damping=np.asarray(damping, float), dof_armature=np.asarray(armature, float),
                 dof_stiffness=np.asarray(stiffness, float), dof_parent=dof_parent, dof_madr=madr,
                 dof_link=np.asarray(dof_link, np.int32), dof_joint=np.asarray(dof_joint, np.int32),
                 nnz=int((depth + 1).sum()), dof_depth=depth)
        ax = t.joint_axis.copy()
        nrm = np.linalg.norm(ax, axis=1)
        for ji, (typ, nn) in enumerate(zip(t.joint_type, nrm)):
            if typ in (JointType.REVOLUTE, JointType.PRISMATIC):
                if nn < 1e-12:
                    raise OptionError(f"joint {ji}: axis {ax[ji].tolist()} has zero length")
                ax[ji] /= nn
        h["joint_axis"] = ax
        # implicit midpoint branch (docs/semantics.md §R2): a free joint on a link with no other link in its tree,
        # non-Euler integrator, outside MuJoCo-compatible mode (MuJoCo has no such branch)
        mid = np.zeros(t.n_joints, np.int32)
        if self.options.integrator_code != IntegratorType.EULER and not self.options.mujoco_compatible:
            children = np.bincount(t.link_parent[t.link_parent >= 0], minlength=t.n_links)
            for ji in range(t.n_joints):
                if t.joint_type[ji] == JointType.FREE:
                    if children[int(h["dof_link"][t.joint_dof_start[ji]])] == 0:
                        mid[ji] = 1
        h["joint_midpoint"] = mid
        # MuJoCo-compatible implicitfast: the gyroscopic re-solve of a standalone free body (docs/semantics.md §R2a,
        # MuJoCo's docs "Gyroscopic derivatives for free bodies"): a free joint whose link has no descendant link
        # with a dof; 1: no child link at all, 2: only fixed-joint descendants (the kernel forms the composite body)
        gyro = np.zeros(t.n_joints, np.int32)
        if self.options.integrator_code == IntegratorType.IMPLICITFAST and self.options.mujoco_compatible:
            has_dof = np.zeros(t.n_links, bool)
            has_dof[np.asarray(h["dof_link"], int)] = True
            for ji in range(t.n_joints):
                if t.joint_type[ji] != JointType.FREE:
                    continue
                lk = int(h["dof_link"][t.joint_dof_start[ji]])
                desc = []
                for l in range(t.n_links):
                    p = int(t.link_parent[l])
                    while p >= 0 and p != lk:
                        p = int(t.link_parent[p])
                    if p == lk:
                        desc.append(l)
                if not any(has_dof[l] for l in desc):
                    gyro[ji] = 2 if desc else 1
        h["joint_gyro"] = gyro
        for k, v in act.items():
            h[k] = np.asarray(v, np.int32 if k in ("act_dof", "act_qadr") else float)
        h["act_gain"] = h["act_gain"].reshape(-1, 3)
        h["act_bias"] = h["act_bias"].reshape(-1, 3)
        # host only: (row, col) of each stored mass-matrix entry; per link the dofs that move it
        rows, cols = [], []
        for i in range(nd):
            j = i
            while j >= 0:
                rows.append(i)
                cols.append(j)
                j = dof_parent[j]
        h["m_rows"], h["m_cols"] = np.asarray(rows, np.int64), np.asarray(cols, np.int64)
        mask = np.zeros((t.n_links, nd), dtype=float)
        for l in range(t.n_links):
            j = last_dof[l]
            while j >= 0:
                mask[l, j] = 1.0
                j = dof_parent[j]
        h["link_dof_mask"] = mask
        self.arrays.update(h)

    # -- limits, frictionloss, equalities ----------------------------------------------------------
    def _constraint_arrays(self, pending) -> None:
        """Limited hinge/slide/ball joints, per-dof friction loss with its sol_params (MuJoCo's
        solref/solimp_limit, solref/solimp_friction) and the equalities of the descriptions (global
        indices; the connect anchors on link 2 are completed by set_const at qpos0)."""
        t = self.tree
        nv = t.n_dofs
        lim = dict(dof=[], qadr=[], ball=[], range=[], margin=[], sol=[], joint=[])
        floss = np.zeros(nv)
        fsol = np.tile(DEFAULT_SOL_PARAMS, (nv, 1))
        typ, obj, data, sol, active = [], [], [], [], []
        for (desc, _, _), ls, js in zip(pending, t.entity_link_start, t.entity_joint_start):
            for ji, j in enumerate(desc.joints):
                g = js + ji
                ds, qs = int(t.joint_dof_start[g]), int(t.joint_q_start[g])
                nd = j.n_dofs
                if nd and j.frictionloss > 0:
                    floss[ds:ds + nd] = j.frictionloss
                    fsol[ds:ds + nd] = tuple(j.solref_friction) + tuple(j.solimp_friction)
                if not j.limited or j.type not in ("revolute", "prismatic", "spherical"):
                    continue
                ball = j.type == "spherical"
                lim["dof"].append(ds)
                lim["qadr"].append(qs)
                lim["ball"].append(int(ball))
                lim["range"].append((0.0, max(j.range)) if ball else tuple(j.range))
                lim["margin"].append(float(j.margin))
                lim["sol"].append(tuple(j.solref_limit) + tuple(j.solimp_limit))
                lim["joint"].append(g)
            for q in getattr(desc, "equalities", []):
                o, dd = [-1, -1, -1, -1], [0.0] * 11
                if q.type in ("connect", "weld"):
                    o[:2] = [ls + q.obj1 if q.obj1 >= 0 else -1, ls + q.obj2 if q.obj2 >= 0 else -1]
                    if q.type == "connect":
                        dd[:3] = list(q.anchor)             # dd[3:6]: set_const at qpos0
                    else:
                        dd[:3] = list(q.anchor)
                        dd[3:10] = list(q.relpose)
                        dd[10] = float(q.torquescale)
                elif q.type == "joint":
                    g1 = js + q.obj1
                    g2 = js + q.obj2 if q.obj2 >= 0 else -1
                    qa1, da1 = int(t.joint_q_start[g1]), int(t.joint_dof_start[g1])
                    qa2 = int(t.joint_q_start[g2]) if g2 >= 0 else -1
                    da2 = int(t.joint_dof_start[g2]) if g2 >= 0 else -1
                    o = [qa1, qa2, da1, da2]
                    dd[:7] = [float(t.qpos0[qa1]), float(t.qpos0[qa2]) if qa2 >= 0 else 0.0, *map(float, q.polycoef)]
                else:
                    continue
                typ.append(int(EqType[q.type.upper()]))
                obj.append(o)
                data.append(dd)
                sol.append(tuple(q.solref) + tuple(q.solimp))
                active.append(int(q.active))
        nl = len(lim["dof"])
        self.arrays.update(
            lim_dof=np.asarray(lim["dof"], np.int32), lim_qadr=np.asarray(lim["qadr"], np.int32),
            lim_ball=np.asarray(lim["ball"], np.int32), lim_range=np.asarray(lim["range"], float).reshape(nl, 2),
            lim_margin=np.asarray(lim["margin"], float), lim_sol=np.asarray(lim["sol"], float).reshape(nl, 7),
            lim_joint=np.asarray(lim["joint"], np.int64),        # host only: the limited joint
            dof_frictionloss=floss, dof_sol=fsol,
            eq_type=np.asarray(typ, np.int32), eq_obj=np.asarray(obj, np.int32).reshape(-1, 4),
            eq_data=np.asarray(data, float).reshape(-1, 11), eq_sol=np.asarray(sol, float).reshape(-1, 7),
            eq_active=np.asarray(active, np.int32))

    @property
    def has_constraint_rows(self) -> bool:
        """Joint limits, frictionloss or equalities (contacts come from the collision pipeline)."""
        return bool(len(self.lim_dof) or (self.dof_frictionloss > 0).any() or len(self.eq_type))


def _place_free_joints_under_welded_links(t: JointTree) -> None:
    """A free joint's q is a world pose. JointTree composes the entity's base placement into the q of
    free joints on parentless links; an imported MJCF puts free bodies under a link for the world
    body (welded), so compose the welded chain's world pose into their q0 here too."""
    pos, quat = {}, {}
    for l in range(t.n_links):
        p = t.link_parent[l]
        if p < 0:
            pos[l], quat[l] = t.root_pos[l], t.root_quat[l]
        elif p in pos:
            pos[l] = pos[p] + quat_rotate(quat[p], t.link_pos0[l])
            quat[l] = quat_mul(quat[p], t.link_quat0[l])
        else:
            continue
        joints = range(t.link_joint_adr[l], t.link_joint_adr[l + 1])
        if any(t.joint_type[j] != JointType.FIXED for j in joints):
            if p >= 0 and len(joints) == 1 and t.joint_type[joints[0]] == JointType.FREE:
                qs = t.joint_q_start[joints[0]]
                t.qpos0[qs:qs + 3] = pos[l]
                t.qpos0[qs + 3:qs + 7] = quat[l] / np.linalg.norm(quat[l])
            del pos[l], quat[l]       # below a moving joint: not welded


# ---------------------------------------------------------------- device arrays

# Transparent huge pages for the large CPU arrays (docs/constraint.md, "Huge pages"): a per-env block sized by
# the row / contact budget starts one budget after the previous env's, so the few rows or contacts in use of
# consecutive envs lie on different 4 KiB pages; backing the arrays with 2 MiB pages keeps the step's page walks
# off the budget. False: the allocator's pages as they come (in-process A/B: benchmarks/probe_huge_pages.py).
_huge_pages = True
_HUGE = 2 << 20
_MADV_HUGEPAGE, _MADV_COLLAPSE = 14, 25     # Linux madvise(2) advice values
_madvise = None


def _advise_huge(arr) -> None:
    """Ask Linux to back the 2 MiB-aligned interior of a CPU array with transparent huge pages: MADV_HUGEPAGE
    (the THP mode "madvise" then serves the range from huge pages) and MADV_COLLAPSE (Linux ≥ 6.1: the pages
    written by the zero fill are collapsed now, not later by khugepaged). A hint only: the array's address,
    contents and layout are unchanged, and where the OS refuses (THP "never", an older kernel, no huge page
    free) the array keeps its 4 KiB pages — the same numbers, only the step's page walks differ."""
    global _madvise
    import sys

    if not _huge_pages or not sys.platform.startswith("linux") or not arr.device.is_cpu or not arr.ptr:
        return
    lo = (arr.ptr + _HUGE - 1) // _HUGE * _HUGE
    hi = (arr.ptr + arr.capacity) // _HUGE * _HUGE
    if hi <= lo:
        return
    if _madvise is None:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        libc.madvise.restype = ctypes.c_int
        _madvise = libc.madvise
    _madvise(lo, hi - lo, _MADV_HUGEPAGE)
    _madvise(lo, hi - lo, _MADV_COLLAPSE)


# The solve's scratch (types.py, "The solve's scratch"; docs/constraint.md, "The solve's scratch"): arrays that an
# env's solve (convex, signorini, noslip) or island labelling writes before it reads them and that no later stage,
# step or getter reads. On CPU, where a View's envs run one after another on the partition's thread, all the View's
# envs use one env's block: the array is a zero-stride view of it (strides[0] = 0: an env's `data + env·strides[0]`
# is the block), so the block stays in cache from env to env instead of each env's scratch starting a new stream of
# misses one row budget (or nv² values) after the previous env's. Each View gets its own block (partitions run at
# once); the Data struct's arrays are one block too (no kernel reads them on CPU: every launch takes a View's).
# False: one block per env, as every other per-env array (the in-process A/B of benchmarks/probe_scratch.py).
SCRATCH_FIELDS = ("solver_jar", "solver_jv", "solver_H", "solver_LM", "solver_grad", "solver_mgrad",
                  "solver_mgrad_old", "solver_search", "solver_ma", "solver_mv", "solver_ma0", "efc_MiJ",
                  "island_scratch", "iM", "iefc_J", "iefc_span", "iefc_type", "iefc_dim", "iefc_state", "iefc_D",
                  "iefc_R", "iefc_frictionloss", "iefc_mu", "iefc_aref", "iefc_force", "iefc_jar", "iacc_smooth",
                  "iacc", "ifrc_constraint", "igrad", "ima")
_shared_scratch = True
# The dense M d.qM (n, nv, nv) as the solve's scratch too where the convex solve writes it at each env's start
# (RigidSolver._m_in_solve) and no later reader needs it per env: the convex resolution without noslip (noslip reads
# M after the solve, in its own launch; the Signorini solve reads the smooth pass's). The SAP hand-off
# (contact_handoff.cede_contacts) gives it back a per-env array. False: per env always (the A/B and tests that read
# d.qM after a step).
_qm_scratch = True
# The smooth pass's intermediates that no later stage, step, getter or sensor reads (grep; docs/rigid.md "The smooth
# pass's intermediates"): the joint anchors and axes (kinematics), the composite inertias (CRB) and the RNE's link
# accelerations and subtree wrenches (bias). Each env's pass writes them before it reads them, within its own pass,
# so on CPU they are one env's block per View too (the same numbers; ≈ 15 % of the pass's per-env bytes no longer
# written to memory per env). False: per env (the stage tests that read them per env; benchmarks/probe_scratch.py
# --smooth). Since Round 17 (rigidhum) also the factor d.qld of M + h_D·D: read only by the solve of the same env's
# pass (the integration's factor d.qld_int, read after the constraint solve, stays per env; probe_scratch --qld).
SMOOTH_SCRATCH_FIELDS = ("joint_anchor", "joint_xaxis", "crb_m", "crb_mc", "crb_i", "cacc_w", "cacc_v", "cfrc_t",
                         "cfrc_f", "cext_t", "cext_f", "qld")
_smooth_scratch = True


# The row pool (docs/constraint.md, "The row pool"; types.py Data.efc_off): the row arrays that live across launches
# (built by make_rows, read by the labels, the solve, noslip, the contact wrenches, the readback, the
# integration's prefetch and the getters). On CPU a View's envs are built in order on its thread, so make_rows puts
# each env's rows right after the previous env's (d.efc_off[e] = adr[e] − e·max_rows) instead of at the start of
# the env's own max_rows block: the rows in use of consecutive envs are consecutive, not one row budget apart
# (the boxes use 128 of 544 rows, the humanoid 42 of 866). The allocation is unchanged (n · max_rows rows): only
# an env over its own budget can overflow, flagged as before. False: each env's rows in its own block
# (d.efc_off = 0, today's layout: the in-process A/B of benchmarks/probe_row_pool.py); CUDA and the SAP hand-off
# always take that. The island labels and their keys stay per env (indexed by the env's row, not the pool's).
ROW_POOL_FIELDS = ("efc_J", "efc_span", "efc_chain", "efc_seg", "efc_type", "efc_id", "efc_dim", "efc_pos",
                   "efc_margin", "efc_vel", "efc_aref", "efc_R", "efc_D", "efc_imp", "efc_frictionloss", "efc_mu",
                   "efc_force", "efc_state", "efc_load", "efc_dload")
_row_pool = True
# make_rows' slack in the pool (rows): an env keeps its last address while it lies at most this far past the previous
# env's new end (RigidSolver._row_slack overrides it; the A/B of benchmarks/probe_row_pool.py --slack / --variants).
# 128 (Round 17; 0 before): a count that falls by that much in the envs before it leaves an env's rows in the slots
# that held them, so they keep the "same two links, no clear" shortcut (the pile of 50: its counts change every few
# steps). Every env's offset stays ≤ 0 (an env's rows never start past its own block: a kept address is an earlier
# one, a moved one at most its block's start), so the pool needs no more rows than before.
_row_pool_slack = 128
# make_rows' head in the pool (rows, ≤ the slack): an env that has to move because the envs before it grew lands
# past the previous env's new end by an eighth of that env's count, at most this many rows, so that a later growth
# by as much moves it no more (RigidSolver._row_head overrides it). 64 (Round 17): the pile of 50's captured step
# −8 to −13 % (medians) against slack 0 and no head, the default before, −1 to −4 % against slack 64 alone where its
# envs' counts change independently; the boxes and the humanoid level (an eighth of their 128 / 42 rows: a head of
# 64 rows cost them ≈ 0.5 µs per env-step)
_row_pool_head = 64


def pool_rows_host(arr: np.ndarray, off: np.ndarray) -> np.ndarray:
    """The host copy ``arr`` (n, max_rows[, k]) of a pooled row array (ROW_POOL_FIELDS) with each env's rows
    moved to its own block (row r of env e from row e·max_rows + off[e] + r of the pool): the (n, max_rows[, k])
    arrays users see, valid up to each env's count (the rows past it belong to the next env in the pool: the
    getters mask them). off: d.efc_off (n,) on the host."""
    n, R = arr.shape[:2]
    off = np.asarray(off, np.int64)
    if not off.any():
        return arr
    flat = arr.reshape((n * R,) + arr.shape[2:])
    idx = np.arange(n, dtype=np.int64)[:, None] * R + off[:, None] + np.arange(R, dtype=np.int64)[None, :]
    return flat[np.clip(idx, 0, n * R - 1)]


def _one_env_block(shape, dtype, device):
    """A zero-stride ``shape`` view of a new zero-filled block of one env (shape[1:]); the view keeps the block
    (``scratch_block``)."""
    import warp as wp

    blk = wp.zeros((1,) + tuple(shape[1:]), dtype=dtype, device=device)
    _advise_huge(blk)
    out = wp.array(ptr=blk.ptr, shape=tuple(shape), strides=(0,) + tuple(blk.strides[1:]), dtype=dtype, device=device)
    out._pp_block = blk
    return out


def scratch_block(arr):
    """The array holding ``arr``'s memory: its one-env block for a shared scratch array, else ``arr``."""
    return getattr(arr, "_pp_block", arr)


class _Alloc:
    """Array makers for one precision and device (large CPU arrays on huge pages: ``_advise_huge``)."""

    def __init__(self, precision: str, device: str):
        import warp as wp

        self.wp = wp
        self.s = wp.float64 if precision == "64" else wp.float32
        self.npf = np.float64 if precision == "64" else np.float32
        self.V = wp.types.vector(3, self.s)
        self.Q = wp.types.quaternion(self.s)
        self.M33 = wp.types.matrix((3, 3), self.s)
        self.device = device

    def arr(self, a, dtype=None):
        dtype = self.s if dtype is None else dtype
        a = np.asarray(a)
        if dtype not in (self.wp.int32, self.wp.int64, self.wp.vec2i, self.wp.vec3i):
            a = a.astype(self.npf)
        elif dtype == self.wp.int32:
            a = a.astype(np.int32)
        out = self.wp.array(np.ascontiguousarray(a), dtype=dtype, device=self.device)
        _advise_huge(out)
        return out

    def zeros(self, shape, dtype=None):
        out = self.wp.zeros(shape, dtype=self.s if dtype is None else dtype, device=self.device)
        _advise_huge(out)
        return out

    def scratch(self, shape, dtype=None):
        """A per-env array of the solve's scratch (SCRATCH_FIELDS): on CPU (``_shared_scratch``) one env's
        block seen by every env, else zeros(shape)."""
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        if _shared_scratch and self.wp.get_device(self.device).is_cpu:
            return _one_env_block(shape, self.s if dtype is None else dtype, self.device)
        return self.zeros(shape, dtype)


def _option(o: RigidOptions, precision: str, h: float, gravity):
    """The Option struct of m.opt from the resolved RigidOptions (docs/semantics.md §R2/§R2a); noslip_scale is set
    by set_const."""
    a = _Alloc(precision, "cpu")
    opt = OPTION[precision]()
    opt.timestep = float(h)
    opt.gravity = a.V(*[a.npf(x) for x in np.asarray(gravity, float)])
    opt.integrator = int(o.integrator_code)
    opt.cone = int(ConeType[o.friction_cone.upper()])
    opt.solver = int(SolverType[o.constraint_solver.upper()])
    opt.resolution = int(ResolutionType[o.effective_resolution().upper()])
    opt.iterations = o.effective_iterations()
    opt.tolerance = float(o.effective_tolerance(precision))
    opt.ls_iterations = o.effective_ls_iterations()
    opt.ls_tolerance = float(o.ls_tolerance)
    opt.impratio = float(o.effective_impratio())
    opt.tc_floor = float(2.0 * h)
    opt.friction_floor = float(FRICTION_FLOOR_MUJOCO if o.mujoco_compatible else FRICTION_FLOOR)
    opt.mujoco_mode = int(o.mujoco_compatible)
    opt.warm_pick_lower = int(o.mujoco_compatible)
    opt.stop_needs_gradient = int(o.constraint_solver == "Newton" and not o.mujoco_compatible)
    opt.noslip_iterations = int(o.noslip_iterations)
    opt.noslip_tolerance = float(o.noslip_tolerance)
    opt.noslip_scale = 0.0
    opt.islands = int(o.effective_islands())
    return opt


def put_model(hm: HostModel, layout):
    """The device Model (all envs) of the smooth dynamics: tree, dofs, actuators, per-env parameters,
    the resolved options. The constraint tables are zero-sized placeholders until set_const."""
    a = _Alloc(layout.precision, layout.device)
    wp, n = a.wp, layout.n_envs
    t = hm.tree
    m = MODEL[layout.precision]()
    m.opt = _option(hm.options, layout.precision, layout.h, layout.gravity)
    m.nq, m.nv, m.nl, m.nj, m.na = t.n_qs, t.n_dofs, t.n_links, t.n_joints, len(hm.act_dof)
    m.nnz = int(hm.nnz)
    xyzw = lambda q: np.asarray(q)[..., [1, 2, 3, 0]]      # noqa: E731  Warp stores (x, y, z, w)
    tile = lambda v: np.broadcast_to(v, (n, *np.shape(v)))  # noqa: E731
    I32 = wp.int32
    m.link_parent = a.arr(t.link_parent, I32)
    m.link_root = a.arr(hm.link_root, I32)
    m.link_pos0 = a.arr(t.link_pos0, a.V)
    m.link_quat0 = a.arr(xyzw(t.link_quat0), a.Q)
    m.link_joint_adr = a.arr(t.link_joint_adr, I32)
    m.link_dof_adr = a.arr(hm.link_dof_adr, I32)
    m.link_dof_last = a.arr(hm.link_dof_last, I32)
    m.link_gravcomp = a.arr(hm.link_gravcomp)
    m.link_mass = a.arr(tile(hm.link_mass))
    m.link_com = a.arr(tile(hm.link_com), a.V)
    m.link_inertia = a.arr(tile(hm.link_inertia), a.M33)
    m.joint_type = a.arr(t.joint_type, I32)
    m.joint_q_start = a.arr(t.joint_q_start, I32)
    m.joint_dof_start = a.arr(t.joint_dof_start, I32)
    m.joint_pos = a.arr(t.joint_pos, a.V)
    m.joint_axis = a.arr(hm.joint_axis, a.V)
    m.joint_ref = a.arr(t.joint_ref)
    m.joint_springref = a.arr(hm.joint_springref)
    m.joint_midpoint = a.arr(_one(hm.joint_midpoint), I32)
    m.joint_gyro = a.arr(_one(hm.joint_gyro), I32)
    for k in ("dof_parent", "dof_madr", "dof_link", "dof_joint"):
        setattr(m, k, a.arr(_one(hm.arrays[k]), I32))
    m.dof_depth = a.arr(_one(hm.dof_depth.astype(np.int32)), I32)
    m.m_col = a.arr(_one(hm.m_cols.astype(np.int32)), I32)
    ndp = max(1, t.n_dofs)
    for k in ("dof_damping", "dof_armature", "dof_stiffness"):
        setattr(m, k, a.arr(tile(_one(hm.arrays[k]))))
    m.dof_kp = a.arr(np.zeros((n, ndp)))
    m.dof_kv = a.arr(np.zeros((n, ndp)))
    m.dof_force_lo = a.arr(np.full((n, ndp), -np.inf))
    m.dof_force_hi = a.arr(np.full((n, ndp), np.inf))
    m.act_dof = a.arr(_one(hm.act_dof), I32)
    m.act_qadr = a.arr(_one(hm.act_qadr), I32)
    for k in ("act_gear", "act_ctrl_lo", "act_ctrl_hi", "act_force_lo", "act_force_hi"):
        setattr(m, k, a.arr(_one(hm.arrays[k])))
    m.act_gain = a.arr(_one(hm.act_gain), a.V)
    m.act_bias = a.arr(_one(hm.act_bias), a.V)
    _put_constraint_model(m, hm, a, n, ngeom=0, max_rows=1, max_con=1)
    return m


def _put_constraint_model(m, hm: HostModel, a: _Alloc, n: int, ngeom: int, max_rows: int, max_con: int,
                          geom=None, pairs=None, invweight=None) -> None:
    """The constraint part of the Model: limits, frictionloss, equalities, inverse weights, contact
    parameter tables (geom: dict of condim, friction, sol, solmix, priority; pairs: condim,
    friction, sol)."""
    wp = a.wp
    I32 = wp.int32
    nv = hm.nv
    tile = lambda v: np.broadcast_to(v, (n, *np.shape(v)))  # noqa: E731
    nlim, neq = len(hm.lim_dof), len(hm.eq_type)
    m.nlim, m.neq, m.ngeom = nlim, neq, ngeom
    m.max_rows, m.max_con = max_rows, max_con
    lw, dw = (np.zeros((hm.nl, 2)), np.zeros(nv)) if invweight is None else invweight
    m.link_invweight = a.arr(lw.reshape(hm.nl, 2))
    m.dof_invweight = a.arr(_one(dw))
    m.dof_frictionloss = a.arr(tile(_one(hm.dof_frictionloss)))
    m.dof_sol = a.arr(tile(_one(hm.dof_sol.reshape(-1, 7))))
    m.lim_dof = a.arr(hm.lim_dof, I32)
    m.lim_qadr = a.arr(hm.lim_qadr, I32)
    m.lim_ball = a.arr(hm.lim_ball, I32)
    m.lim_range = a.arr(hm.lim_range.reshape(nlim, 2))
    m.lim_margin = a.arr(hm.lim_margin)
    m.lim_sol = a.arr(tile(_one(hm.lim_sol.reshape(-1, 7))))
    m.eq_type = a.arr(hm.eq_type, I32)
    m.eq_obj = a.arr(hm.eq_obj.reshape(neq, 4), I32)
    m.eq_data = a.arr(hm.eq_data.reshape(neq, 11))
    m.eq_sol = a.arr(tile(_one(hm.eq_sol.reshape(-1, 7))))
    g = geom or dict(condim=np.zeros(0, np.int32), friction=np.zeros((0, 3)), sol=np.zeros((0, 7)),
                     solmix=np.zeros(0), priority=np.zeros(0, np.int32))
    m.geom_sol = a.arr(g["sol"].reshape(-1, 7))
    m.geom_solmix = a.arr(g["solmix"])
    m.geom_priority = a.arr(g["priority"], I32)
    m.geom_condim = a.arr(g["condim"], I32)
    m.geom_friction = a.arr(tile(_one(g["friction"].reshape(-1, 3))))
    m.geom_friction_ratio = a.arr(np.ones((n, max(1, ngeom))))
    p = pairs or dict(condim=np.asarray([3], np.int32), friction=np.ones((1, 5)), sol=np.asarray([DEFAULT_SOL_PARAMS]),
                      solreffriction=np.zeros((1, 2)))
    m.pair_condim = a.arr(p["condim"], I32)
    m.pair_friction = a.arr(tile(p["friction"].reshape(-1, 5)))
    m.pair_sol = a.arr(p["sol"].reshape(-1, 7))
    m.pair_solreffriction = a.arr(p["solreffriction"].reshape(-1, 2))


def make_data(hm: HostModel, layout):
    """The device Data (all envs) of the smooth dynamics, at qpos0; the contact and constraint arrays
    are one-element placeholders until set_const."""
    a = _Alloc(layout.precision, layout.device)
    wp, n = a.wp, layout.n_envs
    t = hm.tree
    d = DATA[layout.precision]()
    nl, nj, ndp, na = t.n_links, max(1, t.n_joints), max(1, t.n_dofs), max(1, len(hm.act_dof))
    nnz = max(1, int(hm.nnz))
    z = a.zeros
    V, Q, M33, I32 = a.V, a.Q, a.M33, wp.int32
    xyzw = lambda q: np.asarray(q)[..., [1, 2, 3, 0]]      # noqa: E731
    d.qpos = a.arr(np.tile(_one(t.qpos0), (n, 1)))
    d.qvel = z((n, ndp))
    d.ctrl = z((n, na))
    d.dof_mode = z((n, ndp), I32)
    for k in ("dof_target_pos", "dof_target_vel", "dof_target_force", "qfrc_applied"):
        setattr(d, k, z((n, ndp)))
    for k in ("xfrc_force", "xfrc_torque", "coupling_force", "coupling_torque"):
        setattr(d, k, z((n, nl), V))
    d.root_pos = a.arr(np.broadcast_to(t.root_pos, (n, nl, 3)), V)
    d.root_quat = a.arr(np.broadcast_to(xyzw(t.root_quat), (n, nl, 4)), Q)
    for k in ("link_pos", "link_vel", "link_ang", "link_xipos", "link_com_vel", "cinert_mc", "cvel_w", "cvel_v"):
        setattr(d, k, z((n, nl), V))
    # the smooth pass's intermediates (SMOOTH_SCRATCH_FIELDS): one block per View on CPU (_smooth_scratch)
    sz = a.scratch if _smooth_scratch else z
    for k in ("crb_mc", "cacc_w", "cacc_v", "cfrc_t", "cfrc_f", "cext_t", "cext_f"):
        setattr(d, k, sz((n, nl), V))
    d.link_quat = z((n, nl), Q)
    d.joint_anchor = sz((n, nj), V)
    d.joint_xaxis = sz((n, nj), V)
    for k in ("dof_ref", "cdof_w", "cdof_v", "cdofdot_w", "cdofdot_v"):
        setattr(d, k, z((n, ndp), V))
    d.cinert_m = z((n, nl))
    d.crb_m = sz((n, nl))
    d.cinert_i = z((n, nl), M33)
    d.crb_i = sz((n, nl), M33)
    d.mass = z((n, nnz))
    d.qld = sz((n, nnz))       # the factor of M + h_D·D: read only by its own pass's solve (Round 17, rigidhum)
    d.qld_int = z((n, nnz))
    for k in ("qfrc_bias", "qfrc_ext", "qfrc_passive", "qfrc_actuator", "qfrc_control", "qfrc_smooth", "dof_dv",
              "qacc_smooth", "qacc", "qfrc_total"):
        setattr(d, k, z((n, ndp)))
    d.act_force = z((n, na))
    d.joint_mid_active = z((n, nj), I32)
    # readback stage outputs (small; allocated with the rest so that no array is added after build)
    d.snap_qpos = z((n, max(1, t.n_qs)))
    for k in ("snap_qvel", "snap_qacc", "snap_qfrc_actuator", "snap_qfrc_constraint"):
        setattr(d, k, z((n, ndp)))
    d.snap_act_force = z((n, na))
    for k in ("link_acc_ang", "link_acc", "cfrc_int_force", "cfrc_int_torque", "cfrc_ext_force", "cfrc_ext_torque"):
        setattr(d, k, z((n, nl), V))
    _make_constraint_data(d, hm, a, n, max_rows=1, max_con=1, cone_elliptic=False, signorini=False, noslip=False)
    return d


def _make_constraint_data(d, hm: HostModel, a: _Alloc, n: int, max_rows: int, max_con: int, cone_elliptic: bool,
                          signorini: bool, noslip: bool, con_geom=None, con_pair=None, con_set=None,
                          islands: bool = False, qm_scratch: bool = False) -> None:
    """The contact, row and solver arrays (one element each along unused axes: signorini and noslip
    scratch only when used). con_geom / con_pair and con_set = (pos, frame, includemargin): the
    collision pipeline's arrays (aliased)."""
    wp = a.wp
    z, I32, V, M33 = a.zeros, wp.int32, a.V, a.M33
    nv, neq, nl = max(1, hm.nv), max(1, len(hm.eq_type)), hm.nl
    R, C = max_rows, max_con
    active = np.ones((n, neq), np.int32)
    if len(hm.eq_type):
        active[:] = hm.eq_active[None]
    d.eq_active = a.arr(active, I32)
    d.qacc_warmstart = z((n, nv))
    d.ncon = z(n, I32)
    if con_set is not None:
        d.con_pos, d.con_frame, d.con_margin = con_set
        if any(x.shape[:2] != (n, C) for x in con_set):
            raise BuildError(f"rigid solver: the collision pipeline's contact arrays are not (n_envs, max_con) = {(n, C)}")
    else:
        d.con_pos = z((n, C), V)
        d.con_frame = z((n, C), M33)
        d.con_margin = z((n, C))
    d.con_dist = z((n, C))
    d.con_link = z((n, C, 2), I32)
    d.con_geom = con_geom if con_geom is not None else z((n, C, 2), I32)
    d.con_pair = con_pair if con_pair is not None else a.arr(np.full((n, C), -1), I32)
    d.con_dim = z((n, C), I32)
    d.con_friction = z((n, C, 5))
    d.con_sol = z((n, C, 7))
    d.con_solreffriction = z((n, C, 2))
    d.con_efc_adr = z((n, C), I32)
    d.nefc = z(n, I32)
    d.efc_overflow = z(n, I32)
    d.efc_off = z(n, I32)         # each env's rows in its own block until a pooled build (make_rows(pool=True))
    d.eq_acc_bias = z((n, neq, 6))
    d.efc_J = z((n, R, nv))
    d.efc_span = z((n, R, 2), I32)
    d.efc_chain = a.arr(np.full((n, R, 2), -2), I32)
    d.efc_seg = a.arr(np.full((n, R, 4), -1), I32)
    for k in ("efc_type", "efc_id", "efc_dim", "efc_state"):
        setattr(d, k, z((n, R), I32))
    for k in ("efc_pos", "efc_margin", "efc_vel", "efc_aref", "efc_R", "efc_D", "efc_imp", "efc_frictionloss",
              "efc_mu", "efc_force"):
        setattr(d, k, z((n, R)))
    for k in ("solver_jar", "solver_jv"):
        setattr(d, k, a.scratch((n, R)))
    d.efc_pad = z(n, I32)         # the zero fill is the padding: (0, INACTIVE = 0) from row 0
    Rs = R if signorini else 1
    d.efc_load = z((n, Rs))
    d.efc_dload = z((n, Rs))
    d.efc_MiJ = a.scratch((n, R, nv) if noslip else (n, 1, 1))
    # the convex solve writes each env's M at its start and nothing else reads it: one block per View (_qm_scratch)
    d.qM = a.scratch((n, nv, nv)) if qm_scratch else z((n, nv, nv))
    d.solver_H = a.scratch((n, nv, nv))
    d.solver_LM = a.scratch((n, nv, nv))
    d.qfrc_constraint = z((n, nv))
    for k in ("solver_grad", "solver_mgrad", "solver_mgrad_old", "solver_search", "solver_ma", "solver_mv",
              "solver_ma0"):
        setattr(d, k, a.scratch((n, nv)))
    d.solver_niter = z(n, I32)
    d.solver_stat = z((n, 3))
    d.solver_nhalf = z(n, I32)
    _make_island_data(d, a, n, nv, R, C, islands)
    d.noslip_niter = z(n, I32)
    d.noslip_stat = z(n)
    d.con_wrench = z((n, C, 6))
    d.con_force_world = z((n, C), V)
    d.con_torque_world = z((n, C), V)
    d.con_valid = z((n, C), I32)
    for k in ("link_contact_force", "link_contact_torque", "link_impulse_force", "link_impulse_torque"):
        setattr(d, k, z((n, nl), V))


def _make_island_data(d, a: _Alloc, n: int, nv: int, R: int, C: int, islands: bool) -> None:
    """The island labels and the gathered island problem of the convex solve (types.py, "constraint
    islands"); one element along each axis when islands are off (the solve never reads them then)."""
    I32 = a.wp.int32
    z = a.zeros
    if not islands:
        nv = R = 1
    d.nisland = z(n, I32)
    for k in ("island_niter", "dof_island", "island_dofs", "dof_idof"):
        setattr(d, k, z((n, nv), I32))
    for k in ("island_dofadr", "island_efcadr"):
        setattr(d, k, z((n, nv + 1), I32))
    for k in ("efc_island", "island_efcs"):
        setattr(d, k, z((n, R), I32))
    for k in ("iefc_type", "iefc_dim", "iefc_state"):
        setattr(d, k, a.scratch((n, R), I32))
    d.island_scratch = a.scratch((n, 3, nv + 1), I32)
    # the inputs of the last relabelling (label_islands keeps the labels while they are unchanged); −1 rows:
    # no labels yet
    d.island_key_nefc = a.wp.full(n, -1, dtype=I32, device=a.device)
    for k in ("island_key_type", "island_key_id"):
        setattr(d, k, z((n, R), I32))
    d.island_key_link = z((n, max(C, 1) if islands else 1, 2), I32)
    d.iM = a.scratch((n, nv, nv))
    d.iefc_J = a.scratch((n, R, nv))
    d.iefc_span = a.scratch((n, R, 4), I32)
    for k in ("iefc_D", "iefc_R", "iefc_frictionloss", "iefc_mu", "iefc_aref", "iefc_force", "iefc_jar"):
        setattr(d, k, a.scratch((n, R)))
    for k in ("iacc_smooth", "iacc", "ifrc_constraint", "igrad", "ima"):
        setattr(d, k, a.scratch((n, nv)))


# ---------------------------------------------------------------- constants at qpos0 (mj_setConst)

def link_jacobian(l, point, dof_parent, link_dof_last, cdof_w, cdof_v, dof_ref):
    """(6, nv) Jacobian (linear at ``point``, then angular; world frame) of link l from the motion
    subspaces of one env (NumPy, host side)."""
    nv = len(dof_parent)
    J = np.zeros((6, nv))
    d = int(link_dof_last[l]) if l >= 0 else -1
    while d >= 0:
        J[:3, d] = cdof_v[d] + np.cross(cdof_w[d], np.asarray(point) - dof_ref[d])
        J[3:, d] = cdof_w[d]
        d = int(dof_parent[d])
    return J


def invweights(M, link_com, dof_parent, link_dof_last, cdof_w, cdof_v, dof_ref, joint_dofs):
    """MuJoCo's body_invweight0 / dof_invweight0 (mj_setConst) from one env's state (use qpos0): per
    link, A = J M⁻¹ Jᵀ of the 6D Jacobian at the link CoM, invweight = (mean of the translational
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


def _rot(q):
    x, y, z, w = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def contact_tables(entities, pipe, options: RigidOptions) -> tuple[dict, dict]:
    """Per-geom contact parameters (the collision pipeline's geom order; an entity's Rigid material
    overrides its geoms' sliding friction / sol_params) and the explicit MJCF ``<contact><pair>``
    table (condim, friction (5), sol_params (7); a missing field takes MuJoCo's pair default —
    MuJoCo does not derive them from the geoms; at least one row so arrays are never empty).
    docs/semantics.md §R2: rolling friction needs torsional friction (default mode; OptionError)."""
    geoms = pipe.geoms
    condim = np.array([int(g.condim) for g in geoms], np.int32)
    fr = np.array([g.friction for g in geoms], float).reshape(-1, 3)
    sp = np.array([tuple(g.solref) + tuple(g.solimp) for g in geoms], float).reshape(-1, 7)
    for gi, ei in enumerate(pipe.geom_entity):
        mat = entities[int(ei)].material
        if mat.friction is not None:
            fr[gi, 0] = mat.friction
        if mat.sol_params is not None:
            sp[gi] = mat.sol_params
    rows = [p for e in entities for p in e.description.contact_pairs]
    dims, fri, sol, srf = [], [], [], []
    for p in rows:
        c = int(p.get("condim", 3))
        if c not in (1, 3, 4, 6):
            raise OptionError(f"contact pair {p.get('name') or (p['geom1'], p['geom2'])!r}: condim={c}; "
                              "allowed 1, 3, 4, 6")
        f = np.asarray(p.get("friction", (1.0, 1.0, 0.005, 1e-4, 1e-4)), float).reshape(-1)
        if f.size != 5:
            raise OptionError(f"contact pair {p.get('name', '')!r}: friction needs 5 values, got {f.tolist()}")
        dims.append(c)
        fri.append(f)
        sol.append(tuple(p.get("solref", DEFAULT_SOL_PARAMS[:2])) + tuple(p.get("solimp", DEFAULT_SOL_PARAMS[2:])))
        srf.append(tuple(float(v) for v in p.get("solreffriction", (0.0, 0.0))))
    pairs = dict(n=len(rows), condim=np.asarray(dims or [3], np.int32),
                 friction=np.asarray(fri or [np.ones(5)], float).reshape(-1, 5),
                 sol=np.asarray(sol or [DEFAULT_SOL_PARAMS], float).reshape(-1, 7),
                 solreffriction=np.asarray(srf or [(0.0, 0.0)], float).reshape(-1, 2))
    if not options.mujoco_compatible:
        for gi, (f, c) in enumerate(zip(fr, condim)):
            if c == 6 and f[2] > 0 and f[1] <= 0:
                g = geoms[gi]
                raise OptionError(f"geom {gi} ({getattr(g, 'name', '') or 'unnamed'}): rolling friction "
                                  f"{float(f[2])!r} with torsional friction {float(f[1])!r}; rolling requires "
                                  "torsional friction > 0 (docs/semantics.md §R2)")
        for pi in range(pairs["n"]):
            f = pairs["friction"][pi]
            if pairs["condim"][pi] == 6 and max(f[3], f[4]) > 0 and f[2] <= 0:
                raise OptionError(f"contact pair {pi}: rolling friction {f[3:].tolist()} with torsional friction "
                                  f"{float(f[2])!r}; rolling requires torsional friction > 0 (docs/semantics.md §R2)")
    geom = dict(condim=condim, friction=fr, sol=sp, solmix=np.array([g.solmix for g in geoms], float),
                priority=np.array([g.priority for g in geoms], np.int32))
    return geom, pairs


def set_const(m, d, hm: HostModel, layout, entities, pipe, mass_matrix0: np.ndarray, data0: dict) -> None:
    """Complete the Model and Data at qpos0 (after a forward pass; MuJoCo's mj_setConst) when the
    scene has constraint rows: inverse weights from M, CoMs and motion subspaces of env 0, the
    connect anchors on link 2, the noslip scale 1/trace(M), the contact parameter tables of the
    collision pipeline ``pipe`` (None: no contacts), the row budget, and the contact, row and
    solver arrays. mass_matrix0: dense M of env 0; data0: env 0's link_pos, link_quat, link_xipos,
    cdof_w, cdof_v, dof_ref (NumPy)."""
    a = _Alloc(layout.precision, layout.device)
    n, nv, o = layout.n_envs, hm.nv, hm.options
    t = hm.tree
    joint_dofs = [(int(t.joint_dof_start[j]), JointType(int(t.joint_type[j])).n_dofs) for j in range(t.n_joints)]
    lw, dw = invweights(mass_matrix0, data0["link_xipos"], hm.dof_parent, hm.link_dof_last, data0["cdof_w"][:nv],
                        data0["cdof_v"][:nv], data0["dof_ref"][:nv], joint_dofs)
    # connect: the anchor in link 2's frame is link 1's anchor at qpos0
    lp, lq = data0["link_pos"], data0["link_quat"]
    for e in range(len(hm.eq_type)):
        if hm.eq_type[e] != EqType.CONNECT:
            continue
        l1, l2 = hm.eq_obj[e, :2]
        a1 = hm.eq_data[e, :3]
        pw = lp[l1] + _rot(lq[l1]) @ a1 if l1 >= 0 else a1
        hm.eq_data[e, 3:6] = _rot(lq[l2]).T @ (pw - lp[l2]) if l2 >= 0 else pw
    if o.noslip_iterations > 0:   # noslip improvement scale 1/(meaninertia·nv) at qpos0 (MuJoCo)
        m.opt.noslip_scale = 1.0 / max(float(np.trace(mass_matrix0)), 1e-15)
    geom, pairs, max_con = None, None, 1
    per = (lambda c: 2 * (c - 1) if c > 1 else 1) if o.friction_cone == "pyramidal" else (lambda c: c)
    dims = [1]
    if pipe is not None:
        geom, pairs = contact_tables(entities, pipe, o)
        max_con = max(1, pipe.max_contacts)
        dims = list(geom["condim"]) + list(pairs["condim"])
    # rows: frictionloss dofs + contacts + one per limited hinge/slide/ball side + equality rows
    max_rows = (max(1, (max_con if pipe is not None else 0) * max([per(int(c)) for c in dims] or [1])
                    + int((hm.dof_frictionloss > 0).sum()) + 2 * len(hm.lim_dof))
                + sum(EQ_ROWS[EqType(int(k))] for k in hm.eq_type))
    _put_constraint_model(m, hm, a, n, ngeom=len(geom["condim"]) if geom else 0, max_rows=max_rows, max_con=max_con,
                          geom=geom, pairs=pairs, invweight=(lw, dw))
    con_geom = con_pair = con_set = None
    if pipe is not None:
        cg = pipe.contact_geom
        if not cg.is_contiguous:
            raise BuildError("rigid solver: the collision pipeline's contact_geom is not contiguous")
        # the pipeline's (n, K) vec2i contact geoms seen as the (n, K, 2) int32 the rows read (an
        # alias of the same memory: no copy, a captured graph keeps the pointer)
        con_geom = a.wp.array(ptr=cg.ptr, dtype=a.wp.int32, shape=(n, pipe.max_contacts, 2), device=layout.device)
        con_pair = pipe.contact_pair
        # the rows read the contact points, frames and margins from the pipeline's contact set itself
        # (aliases: the export writes each contact once, docs/collision.md "In the rigid solver (wired)")
        con_set = (pipe.contact_pos, pipe.contact_frame, pipe.contact_includemargin)
        # the pipeline's per-env arrays (contacts, candidate pool, pairs) are read in the same step: huge pages too
        for arr in vars(pipe).values():
            if isinstance(arr, a.wp.array):
                _advise_huge(arr)
    _make_constraint_data(d, hm, a, n, max_rows=max_rows, max_con=max_con, cone_elliptic=o.friction_cone == "elliptic",
                          signorini=o.effective_resolution() == "signorini", noslip=o.noslip_iterations > 0,
                          con_geom=con_geom, con_pair=con_pair, con_set=con_set, islands=o.effective_islands(),
                          qm_scratch=_qm_scratch and o.effective_resolution() != "signorini" and o.noslip_iterations == 0)


# ---------------------------------------------------------------- views

@dataclass
class View:
    """One launch domain: the Model and Data structs with the per-env arrays of envs [start, stop)."""

    m: object
    d: object
    start: int
    stop: int
    device: str
    scalar: type            # wp.float32 or wp.float64
    has_gyro: bool = False  # a standalone free joint takes integration.gyro_resolve (Model.joint_gyro, host-known)

    @property
    def n(self) -> int:
        return self.stop - self.start


def view(m, d, start: int, stop: int, precision: str, device: str) -> View:
    """A View of envs [start, stop): per-env arrays sliced (contiguous rows, as the native stage
    bodies require), shared arrays as they are; the solve's shared scratch (SCRATCH_FIELDS on CPU) one new block
    for all the View's envs."""
    vm, vd = MODEL[precision](), DATA[precision]()
    sl = slice(start, stop)
    for name in MODEL[precision].vars:
        v = getattr(m, name)
        setattr(vm, name, v[sl] if name in PER_ENV_MODEL_FIELDS else v)
    for name in DATA[precision].vars:
        arr = getattr(d, name)
        if scratch_block(arr) is not arr:      # shared scratch: the View's own block (Views run at once)
            setattr(vd, name, _one_env_block((stop - start,) + tuple(arr.shape[1:]), arr.dtype, arr.device))
        else:
            setattr(vd, name, arr[sl])
    for name in PER_ENV_MODEL_FIELDS:
        if not getattr(vm, name).is_contiguous:
            raise BuildError(f"rigid solver: Model.{name} of envs {start}..{stop} is not contiguous")
    import warp as wp

    return View(m=vm, d=vd, start=start, stop=stop, device=device, scalar=wp.float64 if precision == "64" else wp.float32,
                has_gyro=bool(m.joint_gyro.numpy().any()))


def blank_view(precision: str, n_envs: int, device: str = "cpu") -> View:
    """A View of n_envs envs whose every array has one element per axis (batch axis n_envs for the
    per-env fields), zero-filled: the starting point of a stage test that sets the fields its stage
    reads and checks the ones it writes (tests/rigid/test_rigid_stages.py,
    tests/rigid_constraint/mjscenes.py). Option and sizes default to zero."""
    import warp as wp

    s = wp.float64 if precision == "64" else wp.float32
    m, d = MODEL[precision](), DATA[precision]()
    m.opt = OPTION[precision]()
    for struct, obj, batched in ((MODEL[precision], m, PER_ENV_MODEL_FIELDS), (DATA[precision], d, None)):
        for name, var in struct.vars.items():
            t = var.type
            if not isinstance(t, wp.array):
                continue
            per_env = batched is None or name in batched
            shape = ((n_envs,) if per_env else (1,)) + (1,) * (t.ndim - 1)
            setattr(obj, name, wp.zeros(shape, dtype=t.dtype, device=device))
    return View(m=m, d=d, start=0, stop=n_envs, device=device, scalar=s)
