"""RigidSolver: articulated rigid-body dynamics (smooth part of MuJoCo's pipeline) over env batches.

One kernel launch per substep and partition (``kernels/dynamics.py``) when the scene has no
constraint; no per-env Python loop. With contacts (a collidable geom pair), joint limits, DOF
friction loss or equalities, the substep is MuJoCo's mj_step order: smooth dynamics (MODE_FORWARD)
→ collision → the constraint stage (plugins/rigid/constraint.py: rows, Newton/CG solve) →
integration with qfrc_smooth + qfrc_constraint (MODE_INTEGRATE: MODE_STEP reusing the forward
launch's kinematics, RNE and CRBA); see ``_constrained_substep``.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from polyphys import morphs as M
from polyphys.arrays import write_env_rows
from polyphys.description import EntityDescription, from_primitive
from polyphys.errors import BuildError, OptionError, PolyphysWarning
from polyphys.geometry import GEOM_CODES, SDF_SUPPORTED, warn_coincident_planes
from polyphys.importing import describe_morph
from polyphys.interfaces import Solver
from polyphys.kinematics import JointTree
from polyphys.views import RigidGeoms, RigidLinks

from .entity import RigidEntity
from .materials import Rigid
from .options import RigidOptions, resolve_model_options
from .readback import RigidSensorViewMixin

MODE_STEP, MODE_FORWARD, MODE_KINEMATICS, MODE_INTEGRATE = 0, 1, 2, 3
CTRL_FORCE, CTRL_POSITION, CTRL_VELOCITY = 0, 1, 2

# per-env parameters (domain randomisation): not state (reset keeps them), checkpointed as extra state
PARAMS = ("link_mass", "link_com", "link_inertia", "dof_damping", "dof_armature", "dof_stiffness",
          "dof_kp", "dof_kv", "dof_force_lo", "dof_force_hi")
STATE = ("qpos", "qvel", "ctrl", "dof_mode", "dof_target_pos", "dof_target_vel", "dof_target_force",
         "qfrc_applied", "xfrc_force", "xfrc_torque", "root_pos", "root_quat")


class RigidSolver(RigidSensorViewMixin, Solver):
    options_type = RigidOptions

    def __init__(self, scene, options, spec):
        super().__init__(scene, options, spec)
        self._pending: list = []        # (description, base_pos, base_quat)

    # -- entities ------------------------------------------------------------------------------
    def add_entity(self, morph, material, surface=None, name=None, **kwargs):
        if kwargs:
            raise OptionError(f"rigid add_entity: unknown arguments {sorted(kwargs)}")
        if not isinstance(material, Rigid):
            raise OptionError(f"rigid add_entity: material must be polyphys.materials.Rigid, got "
                              f"{type(material).__name__}")
        ename = name or f"rigid_{len(self.entities)}"
        if isinstance(morph, M.Primitive):
            desc = from_primitive(morph, name=ename, density=material.rho)
            base = ((0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0))   # the primitive's link holds its pose
        else:
            desc = describe_morph(morph, self.scene._plugins)
            if not isinstance(desc, EntityDescription):
                raise OptionError(f"morph {type(morph).__name__} did not give an EntityDescription")
            base = (morph.pos, morph.orientation)
        if not desc.links:
            raise OptionError(f"entity {ename!r}: the description has no link (nothing to simulate)")
        self._check_description(desc, ename)
        self._world_planes = warn_coincident_planes(getattr(self, "_world_planes", []), desc, *base, ename)
        self._pending.append((desc, *base))
        entity = RigidEntity(self, len(self.entities), morph, material, surface, name, desc)
        self.entities.append(entity)
        return entity

    @staticmethod
    def _check_description(desc: EntityDescription, ename: str) -> None:
        welded = []
        for link in desc.links:
            types = [desc.joints[j].type for j in link.joints]
            parent_welded = link.parent < 0 or welded[link.parent]
            welded.append(parent_welded and all(t == "fixed" for t in types))
            if "free" in types and (len(types) > 1 or not parent_welded):
                raise OptionError(f"entity {ename!r} link {link.name!r}: a free joint must be the only "
                                  f"joint of a link attached to the world (MuJoCo's rule)")
            if link.inertial.mass < 0:
                raise OptionError(f"entity {ename!r} link {link.name!r}: mass {link.inertial.mass} < 0")
        for j in desc.joints:
            if j.type in ("free", "spherical") and j.stiffness != 0.0:
                raise OptionError(f"entity {ename!r} joint {j.name!r}: stiffness on a {j.type} joint is "
                                  f"not supported (allowed: revolute/prismatic joints)")
        for a in desc.actuators:
            if a.trntype != "joint" or a.joint < 0:
                raise OptionError(f"entity {ename!r} actuator {a.name!r}: transmission {a.trntype!r} "
                                  f"({a.target!r}) is not supported; allowed: a joint")
            jt = desc.joints[a.joint].type
            if jt not in ("revolute", "prismatic"):
                raise OptionError(f"entity {ename!r} actuator {a.name!r}: acts on a {jt} joint; "
                                  f"allowed: revolute/prismatic joints")
            if a.dyntype != "none":
                raise OptionError(f"entity {ename!r} actuator {a.name!r}: dyntype {a.dyntype!r} is not "
                                  f"supported (allowed: 'none')")
            if a.gaintype not in ("fixed", "affine") or a.biastype not in ("none", "affine"):
                raise OptionError(f"entity {ename!r} actuator {a.name!r}: gaintype {a.gaintype!r} / "
                                  f"biastype {a.biastype!r} not supported (allowed: fixed/affine, "
                                  f"none/affine)")

    # -- build ---------------------------------------------------------------------------------
    def build(self, layout):
        import warnings

        import warp as wp

        from .kernels import dynamics as K

        self.layout = layout
        # MuJoCo-compatible mode: settings left at None come from the models' <option> (SPEC R2a);
        # every later read of self.options (collision, constraint stage, integrator) sees them
        self.options, notes = resolve_model_options(
            self.options, [(e.name, e.description.options) for e in self.entities],
            precision=layout.precision, h=layout.h, gravity=layout.gravity)
        for msg in notes:
            warnings.warn(msg, PolyphysWarning, stacklevel=3)
        if self.options.dt is not None and abs(self.options.dt - layout.h) > 1e-9 * layout.h:
            raise BuildError(f"RigidOptions.dt = {self.options.dt} but the scene substep is {layout.h}")
        self.tree = t = JointTree(self._pending)
        self._place_free_joints_under_welded_links(t)
        for e, ls, js, qs, ds in zip(self.entities, t.entity_link_start, t.entity_joint_start,
                                     t.entity_q_start, t.entity_dof_start):
            e._bind(ls, js, qs, ds)
        n, dev, npf = layout.n_envs, layout.device, layout.np_float
        self.n_links, self.n_joints, self.n_qs, self.n_dofs = t.n_links, t.n_joints, t.n_qs, t.n_dofs
        self._host_model()
        base = t.to_warp(n, layout.precision, dev)
        self.model = base
        s, V, Q = base.scalar, base.vec3, base.quat
        Mt = wp.types.matrix((3, 3), s)
        self.mat33 = Mt
        h = self.host
        arr = lambda a, dt: wp.array(np.ascontiguousarray(a), dtype=dt, device=dev)  # noqa: E731
        one = lambda a: a if len(a) else np.zeros((1,) + np.shape(a)[1:], dtype=a.dtype)  # noqa: E731
        base.link_root = arr(h["link_root"], wp.int32)
        base.link_dof_adr = arr(h["link_dof_adr"], wp.int32)
        base.link_gravcomp = arr(h["link_gravcomp"].astype(npf), s)
        base.joint_springref = arr(h["joint_springref"].astype(npf), s)
        base.joint_axis = arr(h["joint_axis"].astype(npf), V)
        base.dof_parent = arr(one(h["dof_parent"]), wp.int32)
        base.dof_madr = arr(one(h["dof_madr"]), wp.int32)
        base.dof_depth = arr(one(h["dof_depth"].astype(np.int32)), wp.int32)
        base.m_col = arr(one(h["m_cols"].astype(np.int32)), wp.int32)
        base.dof_link = arr(one(h["dof_link"]), wp.int32)
        base.dof_joint = arr(one(h["dof_joint"]), wp.int32)
        base.joint_midpoint = arr(one(h["joint_midpoint"]), wp.int32)
        na = len(h["act_dof"])
        self.n_act = na
        base.act_dof = arr(one(h["act_dof"]), wp.int32)
        base.act_qadr = arr(one(h["act_qadr"]), wp.int32)
        for k in ("act_gear", "act_ctrl_lo", "act_ctrl_hi", "act_force_lo", "act_force_hi"):
            setattr(base, k, arr(one(h[k]).astype(npf), s))
        base.act_gain = arr(one(h["act_gain"]).astype(npf), V)
        base.act_bias = arr(one(h["act_bias"]).astype(npf), V)
        # per-env parameters; dof- and q-indexed arrays get at least one column (a scene of static
        # bodies has no dof; Warp cannot slice a zero-width 2D array) and the kernel takes the counts
        ndp = max(1, self.n_dofs)
        tile = lambda a: np.ascontiguousarray(np.broadcast_to(a, (n, *a.shape)).astype(npf))  # noqa: E731
        nd = max(1, self.n_dofs)
        self.params = SimpleNamespace(
            link_mass=arr(tile(h["link_mass"]), s), link_com=arr(tile(h["link_com"]), V),
            link_inertia=arr(tile(h["link_inertia"]), Mt),
            dof_damping=arr(tile(one(h["dof_damping"])), s),
            dof_armature=arr(tile(one(h["dof_armature"])), s),
            dof_stiffness=arr(tile(one(h["dof_stiffness"])), s),
            dof_kp=arr(tile(np.zeros(ndp)), s), dof_kv=arr(tile(np.zeros(ndp)), s),
            dof_force_lo=arr(tile(np.full(ndp, -np.inf)), s),
            dof_force_hi=arr(tile(np.full(ndp, np.inf)), s))
        # state
        nl, nj = self.n_links, max(1, self.n_joints)
        self.qpos = arr(np.tile(one(t.qpos0), (n, 1)).astype(npf), s)
        self.qvel = wp.zeros((n, ndp), dtype=s, device=dev)
        self.ctrl = wp.zeros((n, max(1, na)), dtype=s, device=dev)
        self.dof_mode = wp.zeros((n, ndp), dtype=wp.int32, device=dev)
        self.dof_target_pos = wp.zeros((n, ndp), dtype=s, device=dev)
        self.dof_target_vel = wp.zeros((n, ndp), dtype=s, device=dev)
        self.dof_target_force = wp.zeros((n, ndp), dtype=s, device=dev)
        self.qfrc_applied = wp.zeros((n, ndp), dtype=s, device=dev)
        self.xfrc_force = wp.zeros((n, nl), dtype=V, device=dev)
        self.xfrc_torque = wp.zeros((n, nl), dtype=V, device=dev)
        # a coupler's per-substep reaction (RigidView): applied in the next MODE_STEP, then cleared
        self.coupling_force = wp.zeros((n, nl), dtype=V, device=dev)
        self.coupling_torque = wp.zeros((n, nl), dtype=V, device=dev)
        # derived
        z = lambda shape, dt: wp.zeros((n, *shape), dtype=dt, device=dev)  # noqa: E731
        nnz = max(1, int(h["nnz"]))
        self.d = SimpleNamespace(
            qacc=z((ndp,), s),
            link_pos=z((nl,), V), link_quat=z((nl,), Q), link_vel=z((nl,), V), link_ang=z((nl,), V),
            link_xipos=z((nl,), V), link_com_vel=z((nl,), V), joint_anchor=z((nj,), V), joint_xaxis=z((nj,), V),
            cinert_m=z((nl,), s), cinert_mc=z((nl,), V), cinert_i=z((nl,), Mt),
            crb_m=z((nl,), s), crb_mc=z((nl,), V), crb_i=z((nl,), Mt),
            cvel_w=z((nl,), V), cvel_v=z((nl,), V),
            cdof_w=z((nd,), V), cdof_v=z((nd,), V), cdofdot_w=z((nd,), V), cdofdot_v=z((nd,), V),
            cfrc_t=z((nl,), V), cfrc_f=z((nl,), V), cext_t=z((nl,), V), cext_f=z((nl,), V),
            mass=z((nnz,), s), qld=z((nnz,), s),
            qfrc_bias=z((ndp,), s), qfrc_passive=z((ndp,), s),
            qfrc_actuator=z((ndp,), s), qfrc_control=z((ndp,), s),
            qfrc_ext=z((ndp,), s), qfrc_smooth=z((ndp,), s),
            dof_dv=z((ndp,), s), act_force=z((max(1, na),), s),
            joint_mid_active=z((nj,), wp.int32))
        g = np.asarray(layout.gravity, dtype=float)
        self._gravity = V(*[npf(x) for x in g])
        self._h = s(layout.h)
        self._kernel = K.rigid_dynamics
        self._parts = {part.index: self._part_args(part.slice) for part in layout.partitions}
        self._all = self._part_args(slice(0, n))
        self.forward()
        self._check_masses()
        self.collision = self._build_collision(layout)
        self.constraint = None
        if self.collision is not None:
            self._collide_all()
        self._limits = self._joint_limits()
        if not self.options.disable_constraint and (self.collision is not None or self._limits["n"]
                                                    or self._limits["frictionloss"].any()
                                                    or self._limits["has_eq"]):
            self.constraint = self._build_constraint(layout)

    def _build_collision(self, layout):
        """The collision pipeline (plugins/rigid/collision.py), or None when collision is off or the
        scene has no collidable geom pair (rigid scenes without contacts pay nothing)."""
        o = self.options
        if not o.enable_collision or o.disable_constraint:
            return None
        from .collision import SAP_THRESHOLD, CollisionOptions, CollisionPipeline

        descs = [e.description for e in self.entities]
        copts = CollisionOptions(
            broadphase=o.broadphase, max_collision_pairs=o.max_collision_pairs,
            max_candidate_contacts=o.max_candidate_contacts, max_contacts=o.max_contacts,
            max_contacts_per_pair=o.max_contacts_per_pair, overflow=o.collision_overflow,
            self_collision=o.enable_self_collision, adjacent_collision=o.enable_adjacent_collision,
            neutral_collision=o.enable_neutral_collision,
            margin_combine="sum" if o.mujoco_compatible else "max",
            gap_mode="outside" if o.mujoco_compatible else "inside",
            mesh_decomposition=o.mesh_decomposition, decomposition_threshold=o.decomposition_threshold)
        # an imported asset's contype/conaffinity are local masks (SPEC R4)
        local = [isinstance(e.morph, (M.MJCF, M.URDF)) for e in self.entities]
        pipe = CollisionPipeline.from_descriptions(descs, copts, local_masks=local)
        n_collide = int(pipe.geom_collide.sum())
        if n_collide < 2 and not pipe.pairs:
            return None
        if n_collide <= 4 * SAP_THRESHOLD:          # the O(G^2) host filter is cheap here
            allowed = pipe.allowed_pairs()
            if not len(allowed) and not pipe.pairs:
                return None
            same = pipe.geom_entity[allowed[:, 0]] == pipe.geom_entity[allowed[:, 1]]
            need_neutral = bool(same.any()) and not o.enable_neutral_collision
        else:
            need_neutral = not o.enable_neutral_collision
        if need_neutral:
            self._exclude_neutral(pipe, copts, local, layout.device)
        pipe.build(layout.n_envs, layout.device, layout.precision, layout.partitions)
        return pipe

    def _joint_limits(self) -> dict:
        """Limited hinge/slide/ball joints (global indices) and per-dof friction loss with their
        sol_params (MuJoCo's solref/solimp_limit, solref/solimp_friction) from the descriptions."""
        t = self.tree
        rows = dict(dof=[], qadr=[], ball=[], range=[], margin=[], sol=[])
        floss, fsol = np.zeros(self.n_dofs), np.tile([0.02, 1.0, 0.9, 0.95, 0.001, 0.5, 2.0], (self.n_dofs, 1))
        has_eq = False
        for e, js in zip(self.entities, t.entity_joint_start):
            d = e.description
            has_eq = has_eq or bool(getattr(d, "equalities", None))
            for ji, j in enumerate(d.joints):
                g = js + ji
                ds, qs = int(t.joint_dof_start[g]), int(t.joint_q_start[g])
                nd = {"revolute": 1, "prismatic": 1, "spherical": 3, "free": 6}.get(j.type, 0)
                if nd and j.frictionloss > 0:
                    floss[ds:ds + nd] = j.frictionloss
                    fsol[ds:ds + nd] = tuple(j.solref_friction) + tuple(j.solimp_friction)
                if not j.limited or j.type not in ("revolute", "prismatic", "spherical"):
                    continue
                ball = j.type == "spherical"
                rows["dof"].append(ds)
                rows["qadr"].append(qs)
                rows["ball"].append(int(ball))
                rows["range"].append((0.0, max(j.range)) if ball else tuple(j.range))
                rows["margin"].append(float(j.margin))
                rows["sol"].append(tuple(j.solref_limit) + tuple(j.solimp_limit))
        out = {k: np.asarray(v, float) for k, v in rows.items()}
        out["n"] = len(rows["dof"])
        out["frictionloss"], out["fsol"], out["has_eq"] = floss, fsol, has_eq
        return out

    def _equalities(self) -> dict:
        """Equality constraints of the descriptions in the stage's layout (MuJoCo's eq_data):
        connect (link1, link2; anchor in link1's frame, the same point in link2's frame at qpos0),
        weld (anchor on link2, relpose of link2's anchor in link1's frame, torquescale), joint
        (qpos/dof addresses, qpos0 references, polycoef). Links/joints made global; −1: world."""
        t = self.tree
        lp = self.d.link_pos.numpy()[0].astype(float)
        lq = self.d.link_quat.numpy()[0].astype(float)          # x y z w

        def rot(q):
            x, y, z, w = q
            return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                             [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                             [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])

        typ, obj, data, sol, act = [], [], [], [], []
        for e, ls, js in zip(self.entities, t.entity_link_start, t.entity_joint_start):
            for q in getattr(e.description, "equalities", []):
                o, dd = [-1, -1, -1, -1], [0.0] * 11
                if q.type in ("connect", "weld"):
                    l1 = ls + q.obj1 if q.obj1 >= 0 else -1
                    l2 = ls + q.obj2 if q.obj2 >= 0 else -1
                    o[:2] = [l1, l2]
                    if q.type == "connect":
                        a1 = np.asarray(q.anchor, float)
                        pw = lp[l1] + rot(lq[l1]) @ a1 if l1 >= 0 else a1
                        a2 = rot(lq[l2]).T @ (pw - lp[l2]) if l2 >= 0 else pw
                        dd[:6] = [*a1, *a2]
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
                typ.append({"connect": 0, "weld": 1, "joint": 2}[q.type])
                obj.append(o)
                data.append(dd)
                sol.append(tuple(q.solref) + tuple(q.solimp))
                act.append(int(q.active))
        return dict(type=np.asarray(typ, np.int32), obj=np.asarray(obj, np.int32).reshape(-1, 4),
                    data=np.asarray(data, float).reshape(-1, 11), sol=np.asarray(sol, float).reshape(-1, 7),
                    active=np.asarray(act, np.int32))

    def _build_constraint(self, layout):
        """The contact solve (plugins/rigid/constraint.py, docs/constraint.md "Integration"): one
        ConstraintStage with fixed-size per-env buffers, its inputs mapped from the collision
        pipeline's geoms and the dynamics kernel's arrays. None when nothing moves (no dof)."""
        if self.n_dofs == 0:
            return None
        import warp as wp

        from .constraint import ConstraintStage, invweights, options_from_rigid

        o, h, t, pipe = self.options, self.host, self.tree, self.collision
        n, dev, npf, nv = layout.n_envs, layout.device, layout.np_float, self.n_dofs
        copts = options_from_rigid(o, layout.precision, layout.h)
        if o.mujoco_compatible:     # MuJoCo floors timeconst at 2·timestep, the substep here
            copts.timeconst_floor = 2.0 * layout.h
        # last dof of the nearest ancestor-or-self link with dofs (-1: world-fixed)
        adr = h["link_dof_adr"]
        link_dof_last = np.full(self.n_links, -1, np.int32)
        for l in range(self.n_links):
            p = int(t.link_parent[l])
            link_dof_last[l] = adr[l + 1] - 1 if adr[l + 1] > adr[l] else (link_dof_last[p] if p >= 0 else -1)
        # invweights at qpos0 (env 0 right after build's forward)
        Mq = self.mass_matrix(envs=np.array([0]))[0]
        if copts.noslip_iterations > 0:   # noslip improvement scale 1/(meaninertia·nv) at qpos0 (MuJoCo, seed 000 §6.3)
            copts.noslip_scale = 1.0 / max(float(np.trace(Mq)), 1e-15)
        lp = self.d.link_pos.numpy()[0].astype(float)
        dof_ref = lp[h["link_root"][h["dof_link"]]]
        ndof_of = {0: 0, 1: 1, 2: 1, 3: 3, 4: 6}
        joint_dofs = [(int(t.joint_dof_start[j]), ndof_of[int(t.joint_type[j])]) for j in range(self.n_joints)]
        lw, dw = invweights(Mq, self.d.link_xipos.numpy()[0].astype(float), h["dof_parent"], link_dof_last,
                            self.d.cdof_w.numpy()[0][:nv].astype(float), self.d.cdof_v.numpy()[0][:nv].astype(float),
                            dof_ref, joint_dofs)
        lim = self._limits
        geoms = pipe.geoms if pipe is not None else []
        condim = np.array([int(g.condim) for g in geoms], np.int32)
        pairs = self._contact_pairs() if pipe is not None else None
        per = (lambda c: 2 * (c - 1) if c > 1 else 1) if copts.cone == "pyramidal" else (lambda c: c)
        max_con = pipe.max_contacts if pipe is not None else 0
        # rows: frictionloss dofs + contacts + one per limited hinge/slide/ball (a hinge/slide
        # can only be at one side at a time; MuJoCo makes one row per active side)
        all_dims = list(condim) + (list(pairs["condim"]) if pairs is not None else [])
        max_rows = max(1, max_con * max([per(int(c)) for c in all_dims] or [1])
                       + int((lim["frictionloss"] > 0).sum()) + 2 * lim["n"])
        nl = lim["n"]
        eq = self._equalities()
        max_rows += sum({0: 3, 1: 6, 2: 1}[k] for k in eq["type"])
        st = ConstraintStage(n, nv, self.n_links, max(1, max_con), max_rows, dev, layout.precision, copts,
                             dof_parent=h["dof_parent"], link_dof_last=link_dof_last, link_invweight=lw,
                             dof_invweight=dw, dof_frictionloss=np.tile(lim["frictionloss"], (n, 1)),
                             dof_sol=lim["fsol"], lim_dof=lim["dof"].astype(np.int32),
                             lim_qadr=lim["qadr"].astype(np.int32), lim_ball=lim["ball"].astype(np.int32),
                             lim_range=lim["range"].reshape(nl, 2), lim_margin=lim["margin"],
                             lim_sol=lim["sol"].reshape(nl, 7), eq_type=eq["type"], eq_obj=eq["obj"],
                             eq_data=eq["data"], eq_sol=np.tile(eq["sol"][None], (n, 1, 1)) if len(eq["type"]) else None)
        self._eq_types = eq["type"]
        self._n_connect = int((eq["type"] <= 1).sum())    # connect/weld rows get J̇·q̇
        if len(eq["type"]):
            st.eq_active.assign(np.tile(eq["active"][None], (n, 1)).astype(np.int32))
        arr = lambda a, dt: wp.array(np.ascontiguousarray(a), dtype=dt, device=dev)  # noqa: E731
        s = self.model.scalar
        self._dof_ref = wp.zeros((n, nv), dtype=self.model.vec3, device=dev)
        self._cpu = wp.get_device(dev).is_cpu     # glue launches: one thread per env on CPU
        self._diag_add = wp.zeros((n, nv), dtype=s, device=dev)
        self._applied_saved = wp.zeros(self.qfrc_applied.shape, dtype=s, device=dev)
        self._link_root = self.model.link_root
        if pipe is None:
            return st
        # the entity's Rigid material overrides its geoms' sliding friction / sol_params when given
        fr = np.array([g.friction for g in geoms], float).reshape(-1, 3)
        sp = np.array([tuple(g.solref) + tuple(g.solimp) for g in geoms], float).reshape(-1, 7)
        for gi, ei in enumerate(pipe.geom_entity):
            mat = self.entities[int(ei)].material
            if mat.friction is not None:
                fr[gi, 0] = mat.friction
            if mat.sol_params is not None:
                sp[gi] = mat.sol_params
        self._check_rolling(fr, condim, pairs)
        self._geom_friction = arr(fr.astype(npf), s)          # model value (set_friction for all envs)
        self.geom_friction = arr(np.tile(fr[None], (n, 1, 1)).astype(npf), s)   # per env: what contacts use
        self._geom_sol = arr(sp.astype(npf), s)
        self._sol_input = {"geoms": sp.copy()}                 # setter inputs (get_sol_params)
        self._pair_condim = arr(pairs["condim"], wp.int32)
        self._pair_friction = arr(pairs["friction"].astype(npf), s)
        self._pair_sol = arr(pairs["sol"].astype(npf), s)
        self._geom_condim = arr(condim, wp.int32)
        self._geom_solmix = arr(np.array([g.solmix for g in geoms], npf), s)
        self._geom_priority = arr(np.array([g.priority for g in geoms], np.int32), wp.int32)
        self.friction_ratio = arr(np.ones((n, len(geoms)), npf), s)
        # the pipeline's (n, K) vec2i contact geoms seen as the (n, K, 2) int32 the stage reads (an
        # alias of the same memory: no copy, the captured graph keeps the pointer)
        cg = pipe.contact_geom
        assert cg.is_contiguous
        self._con_geom = wp.array(ptr=cg.ptr, dtype=wp.int32, shape=(n, pipe.max_contacts, 2), device=dev)
        self._con_geom_owner = cg
        self._con_pair = pipe.contact_pair
        return st

    def _contact_pairs(self) -> dict:
        """Explicit contact pairs of the descriptions (MJCF <contact><pair>) in the collision
        pipeline's pair order: condim (P,), friction (P, 5), sol_params (P, 7); a missing field takes
        MuJoCo's pair default (condim 3, friction (1, 1, 0.005, 1e-4, 1e-4), solref (0.02, 1), solimp
        (0.9, 0.95, 0.001, 0.5, 2)) — MuJoCo does not derive them from the geoms. At least one row
        (unused) so Warp arrays are never empty."""
        from .constraint import DEFAULT_SOL_PARAMS

        rows = [p for e in self.entities for p in e.description.contact_pairs]
        dims, fri, sol = [], [], []
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
            srf = tuple(p.get("solreffriction", (0.0, 0.0)))
            if any(v != 0 for v in srf) and self.options.friction_cone == "elliptic":
                import warnings

                from polyphys.errors import PolyphysWarning
                warnings.warn(f"contact pair {p.get('name', '')!r}: solreffriction={srf} is not supported; its "
                              "friction rows use the pair's solref", PolyphysWarning, stacklevel=3)
        return dict(n=len(rows), condim=np.asarray(dims or [3], np.int32),
                    friction=np.asarray(fri or [np.ones(5)], float).reshape(-1, 5),
                    sol=np.asarray(sol or [DEFAULT_SOL_PARAMS], float).reshape(-1, 7))

    def _check_rolling(self, friction, condim, pairs) -> None:
        """SPEC R2: rolling friction requires torsional friction — a condim-6 geom or pair with a
        rolling coefficient > 0 and a zero torsional one is an OptionError (default mode; MuJoCo-
        compatible mode keeps MuJoCo's behaviour: the zero-coefficient rows are dropped)."""
        if self.options.mujoco_compatible:
            return
        for gi, (f, c) in enumerate(zip(friction, condim)):
            if c == 6 and f[2] > 0 and f[1] <= 0:
                g = self.collision.geoms[gi]
                raise OptionError(f"geom {gi} ({getattr(g, 'name', '') or 'unnamed'}): rolling friction "
                                  f"{float(f[2])!r} with torsional friction {float(f[1])!r}; rolling requires "
                                  "torsional friction > 0 (SPEC R2)")
        for pi in range(pairs["n"]):
            f = pairs["friction"][pi]
            if pairs["condim"][pi] == 6 and max(f[3], f[4]) > 0 and f[2] <= 0:
                raise OptionError(f"contact pair {pi}: rolling friction {f[3:].tolist()} with torsional friction "
                                  f"{float(f[2])!r}; rolling requires torsional friction > 0 (SPEC R2)")

    def _constrain(self, part) -> None:
        """Contacts → rows → constrained acceleration for one partition (after MODE_FORWARD and the
        collision of the substep-start configuration); hands qfrc_constraint to the integrating
        launch through qfrc_applied (restored by _unconstrain)."""
        import warp as wp

        from .kernels import constraint_glue as G

        st, d, m, dev = self.constraint, self.d, self.model, self.layout.device
        sl = slice(part.start, part.stop)
        n, nv = part.stop - part.start, self.n_dofs
        if self.collision is not None:
            self._contacts_to_stage(part)
        st.mass_from_tree(m.dof_madr, m.dof_depth, m.m_col, d.mass, self._diag_add, part)
        if self._cpu:   # one thread per env looping over its dofs (the same values)
            wp.launch(G.dof_reference_env, dim=n, inputs=[nv, self._link_root, m.dof_link, d.link_pos[sl]],
                      outputs=[self._dof_ref[sl]], device=dev)
        else:
            wp.launch(G.dof_reference, dim=(n, nv), inputs=[self._link_root, m.dof_link, d.link_pos[sl]],
                      outputs=[self._dof_ref[sl]], device=dev)
        if self._n_connect:
            mm = st.model
            wp.launch(G.connect_bias, dim=(n, len(self._eq_types)), inputs=[
                mm["eq_type"], mm["eq_obj"], mm["eq_data"], mm["link_dof_last"], mm["dof_parent"], self.qvel[sl],
                d.cdof_w[sl], d.cdof_v[sl], d.cdofdot_w[sl], d.cdofdot_v[sl], self._dof_ref[sl], d.link_pos[sl],
                d.link_quat[sl]], outputs=[st.eq_acc_bias[sl]], device=dev)
        st.build_rows(self.qpos, self.qvel, d.cdof_w, d.cdof_v, self._dof_ref, d.link_pos, d.link_quat, part)
        st.solve(st.M, d.qacc, st.qacc, part)
        if self._cpu:
            wp.launch(G.apply_constraint_force_env, dim=n, inputs=[nv, st.qfrc_constraint[sl]],
                      outputs=[self.qfrc_applied[sl], self._applied_saved[sl]], device=dev)
            return
        wp.launch(G.apply_constraint_force, dim=(n, nv), inputs=[st.qfrc_constraint[sl]],
                  outputs=[self.qfrc_applied[sl], self._applied_saved[sl]], device=dev)

    def _contacts_to_stage(self, part) -> None:
        st = self.constraint
        self.collision.export(part, st.n_con, st.con_pos, st.con_frame, st.con_dist, st.con_margin, st.con_link)
        st.contact_params(self._con_geom, self.geom_friction, self._geom_sol, self._geom_condim,
                          self.friction_ratio, self.options.mujoco_compatible, self._geom_solmix,
                          self._geom_priority, self.layout.h, part, con_pair=self._con_pair,
                          pair_condim=self._pair_condim, pair_friction=self._pair_friction, pair_sol=self._pair_sol)

    def _unconstrain(self, part, last: int) -> None:
        import warp as wp

        from .kernels import constraint_glue as G

        sl = slice(part.start, part.stop)
        if self._cpu:
            wp.launch(G.restore_applied_env, dim=part.stop - part.start,
                      inputs=[self.n_dofs, int(last), self._applied_saved[sl]], outputs=[self.qfrc_applied[sl]],
                      device=self.layout.device)
            return
        wp.launch(G.restore_applied, dim=(part.stop - part.start, self.n_dofs),
                  inputs=[int(last), self._applied_saved[sl]], outputs=[self.qfrc_applied[sl]],
                  device=self.layout.device)

    def _constrained_substep(self, f, part) -> None:
        """MuJoCo's mj_step order: smooth dynamics (qacc_smooth) → collision → constraint solve →
        integrate with qfrc_smooth + qfrc_constraint (the kernel's Euler / implicitfast step)."""
        last = 1 if f == self.layout.substeps - 1 else 0
        pa = self._parts[part.index]
        self._launch(pa, MODE_FORWARD)
        if self.collision is not None:
            self._collide(part)
        self._constrain(part)
        if self.collision is not None:
            # per-contact wrenches, per-link net contact wrench about the link CoM (world; the
            # substep-start poses the contacts belong to) and Σ h·f over the step's substeps
            st = self.constraint
            st.contact_wrenches(part)
            st.link_wrenches(self.d.link_xipos, self.layout.h, accumulate=True, first_substep=(f == 0), part=part)
        if self._readback_last(f):          # sensors: the last substep's solve state (readback.py)
            self._readback.run(part, self.constraint.qacc)
        # MODE_STEP reusing this substep's MODE_FORWARD kinematics, RNE and CRBA (same state):
        # dof forces (qfrc_applied now carries qfrc_constraint), (M + h·D) solve, integration
        self._launch(pa, MODE_INTEGRATE, last)
        self._unconstrain(part, last)

    def _exclude_neutral(self, pipe, copts, local, device) -> None:
        """SPEC R4's neutral-overlap option (enable_neutral_collision=False): remove the pairs of one
        kinematic tree of one entity that touch at qpos0. Unlike the pipeline's own
        ``build(neutral_poses=...)`` (which takes every same-entity pair), a pair between two free
        trees, or between a free tree and the world-attached part (an MJCF floor and a free box
        resting on it), is kept: their relative placement at qpos0 is arbitrary. One float64
        all-vs-all pass of a probe pipeline on the neutral geom poses (build time only)."""
        import attrs
        from polyphys.layout import Partition

        from .collision import CollisionPipeline, set_poses_host

        tree = []                       # per geom: (entity, nearest free-joint ancestor link or -1)
        for ei, e in enumerate(self.entities):
            d = e.description
            root = []
            for li, lk in enumerate(d.links):
                free = any(d.joints[j].type == "free" for j in lk.joints)
                root.append(li if free else (root[lk.parent] if lk.parent >= 0 else -1))
            tree += [(ei, root[g.link] if g.link >= 0 else -1) for g in d.geoms]
        probe = CollisionPipeline.from_descriptions(
            [e.description for e in self.entities],
            attrs.evolve(copts, broadphase="all_vs_all", neutral_collision=True,
                         max_collision_pairs=None, max_candidate_contacts=None, max_contacts=None,
                         overflow="warn"), local_masks=local)
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            probe.build(1, device, "64")
            pos, quat = self._neutral_geom_poses(probe)
            set_poses_host(probe, pos[None], quat[None])
            probe.run(Partition(0, 0, 1))
        c = probe.contacts([0])[0]
        pairs = {(min(a, b), max(a, b)) for a, b, k in zip(c["geom_a"], c["geom_b"], c["pair"])
                 if k < 0 and tree[a] == tree[b]}
        G = pipe.n_geoms
        pipe.neutral_excluded = np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)
        keys = set(pipe.explicit_keys.tolist()) | {a * G + b for a, b in pairs}
        pipe.explicit_keys = np.array(sorted(keys), dtype=np.int64)

    def _neutral_geom_poses(self, pipe):
        """World pose (pos, quat w,x,y,z) of every geom at qpos0 (env 0 right after build)."""
        lp = self.d.link_pos.numpy()[0].astype(float)
        lq = self.d.link_quat.numpy()[0].astype(float)[:, [3, 0, 1, 2]]      # xyzw -> wxyz

        def qmul(a, b):
            w1, x1, y1, z1 = a
            w2, x2, y2, z2 = b
            return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                             w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])

        pos, quat = [], []
        for g in pipe.geoms:
            gp, gq = np.asarray(g.pos, float), np.asarray(g.quat, float)
            if g.link < 0:
                pos.append(gp)
                quat.append(gq)
                continue
            q = lq[g.link]
            r = qmul(qmul(q, np.r_[0.0, gp]), q * np.array([1.0, -1, -1, -1]))[1:]
            pos.append(lp[g.link] + r)
            quat.append(qmul(q, gq))
        return np.asarray(pos).reshape(-1, 3), np.asarray(quat).reshape(-1, 4)

    def _part_args(self, sl: slice) -> SimpleNamespace:
        m, p, d = self.model, self.params, self.d
        shared = [m.link_parent, m.link_root, m.link_pos0, m.link_quat0, m.link_joint_adr, m.link_dof_adr,
                  m.link_gravcomp, m.joint_type, m.joint_q_start, m.joint_dof_start, m.joint_pos,
                  m.joint_axis, m.joint_ref, m.joint_springref, int(self.n_dofs), m.dof_parent, m.dof_madr, m.dof_depth,
                  m.m_col, m.dof_link, m.dof_joint, m.joint_midpoint, int(self.n_act), m.act_dof,
                  m.act_qadr, m.act_gear, m.act_gain, m.act_bias, m.act_ctrl_lo, m.act_ctrl_hi, m.act_force_lo, m.act_force_hi]
        per_env = [m.root_pos, m.root_quat, p.link_mass, p.link_com, p.link_inertia, p.dof_damping,
                   p.dof_armature, p.dof_stiffness, p.dof_kp, p.dof_kv, p.dof_force_lo, p.dof_force_hi,
                   self.ctrl, self.dof_mode, self.dof_target_pos, self.dof_target_vel,
                   self.dof_target_force, self.qfrc_applied, self.xfrc_force, self.xfrc_torque,
                   self.coupling_force, self.coupling_torque,
                   self.qpos, self.qvel, d.qacc, d.link_pos, d.link_quat, d.link_vel, d.link_ang,
                   d.link_xipos, d.link_com_vel, d.joint_anchor, d.joint_xaxis, d.cinert_m, d.cinert_mc, d.cinert_i,
                   d.crb_m, d.crb_mc, d.crb_i, d.cvel_w, d.cvel_v, d.cdof_w, d.cdof_v, d.cdofdot_w,
                   d.cdofdot_v, d.cfrc_t, d.cfrc_f, d.cext_t, d.cext_f, d.mass, d.qld, d.qfrc_bias,
                   d.qfrc_passive, d.qfrc_actuator, d.qfrc_control, d.qfrc_ext, d.qfrc_smooth, d.dof_dv,
                   d.act_force, d.joint_mid_active]
        args = shared + [a[sl] for a in per_env]
        # the kernel's native stages walk each per-env row through a raw pointer (inner stride =
        # element size): every array handed to it must be contiguous
        for a in args:
            if not isinstance(a, int) and not a.is_contiguous:
                raise BuildError(f"rigid solver: a kernel array of shape {a.shape} is not contiguous")
        return SimpleNamespace(n=sl.stop - sl.start, args=args,
                               links=RigidLinks(pos=d.link_pos[sl], quat=d.link_quat[sl],
                                                com=d.link_xipos[sl], vel=d.link_com_vel[sl],
                                                ang=d.link_ang[sl], coupling_force=self.coupling_force[sl],
                                                coupling_torque=self.coupling_torque[sl]))

    @staticmethod
    def _place_free_joints_under_welded_links(t: JointTree) -> None:
        """A free joint's q is a world pose. JointTree composes the entity's base placement into the
        q of free joints on parentless links; an imported MJCF puts free bodies under a link for the
        world body (welded), so compose the welded chain's world pose into their q0 here too."""
        from polyphys.kinematics import quat_mul, quat_rotate

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
            if any(t.joint_type[j] != 0 for j in joints):
                if p >= 0 and len(joints) == 1 and t.joint_type[joints[0]] == 4:
                    qs = t.joint_q_start[joints[0]]
                    t.qpos0[qs:qs + 3] = pos[l]
                    t.qpos0[qs + 3:qs + 7] = quat[l] / np.linalg.norm(quat[l])
                del pos[l], quat[l]       # below a moving joint: not welded

    def _host_model(self) -> None:
        """Flat host arrays of everything the kernel needs beyond the JointTree."""
        t = self.tree
        h: dict = {}
        link_root, link_dof_adr, gravcomp, mass, com, inertia = [], [0], [], [], [], []
        springref, damping, armature, stiffness = [], [], [], []
        dof_link, dof_joint = [], []
        act = {k: [] for k in ("act_dof", "act_qadr", "act_gear", "act_gain", "act_bias", "act_ctrl_lo",
                               "act_ctrl_hi", "act_force_lo", "act_force_hi")}
        self.actuator_names: list = []
        gc_scale = self.options.gravity_compensation
        for (desc, _, _), ls, js, qs, ds in zip(self._pending, t.entity_link_start, t.entity_joint_start,
                                                t.entity_q_start, t.entity_dof_start):
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
                 joint_springref=np.asarray(springref, float),
                 dof_damping=np.asarray(damping, float), dof_armature=np.asarray(armature, float),
                 dof_stiffness=np.asarray(stiffness, float), dof_parent=dof_parent, dof_madr=madr,
                 dof_link=np.asarray(dof_link, np.int32), dof_joint=np.asarray(dof_joint, np.int32),
                 nnz=int((depth + 1).sum()), dof_depth=depth)
        ax = t.joint_axis.copy()
        nrm = np.linalg.norm(ax, axis=1)
        for ji, (typ, nn) in enumerate(zip(t.joint_type, nrm)):
            if typ in (1, 2):
                if nn < 1e-12:
                    raise OptionError(f"joint {ji}: axis {ax[ji].tolist()} has zero length")
                ax[ji] /= nn
        h["joint_axis"] = ax
        # implicit midpoint branch (SPEC R2): a free joint on a link with no other link in its tree,
        # non-Euler integrator, outside MuJoCo-compatible mode (MuJoCo has no such branch)
        mid = np.zeros(t.n_joints, np.int32)
        if self.options.integrator_code != 0 and not self.options.mujoco_compatible:
            children = np.bincount(t.link_parent[t.link_parent >= 0], minlength=t.n_links)
            for ji in range(t.n_joints):
                if t.joint_type[ji] == 4:
                    l = int(h["dof_link"][t.joint_dof_start[ji]])
                    if children[l] == 0:
                        mid[ji] = 1
        h["joint_midpoint"] = mid
        for k, v in act.items():
            h[k] = np.asarray(v, np.int32 if k in ("act_dof", "act_qadr") else float)
        h["act_gain"] = h["act_gain"].reshape(-1, 3)
        h["act_bias"] = h["act_bias"].reshape(-1, 3)
        # dense index of the sparse M: (row, col) of each stored entry
        rows, cols = [], []
        for i in range(nd):
            j = i
            while j >= 0:
                rows.append(i)
                cols.append(j)
                j = dof_parent[j]
        h["m_rows"], h["m_cols"] = np.asarray(rows, np.int64), np.asarray(cols, np.int64)
        # dofs that move each link: its own and its ancestors' (the dof chain from its last dof)
        mask = np.zeros((t.n_links, nd), dtype=float)
        for l in range(t.n_links):
            j = last_dof[l]
            while j >= 0:
                mask[l, j] = 1.0
                j = dof_parent[j]
        h["link_dof_mask"] = mask
        self.host = h

    def _check_masses(self) -> None:
        if self.n_dofs == 0:
            return
        diag = self.d.mass.numpy()[:, self.host["dof_madr"]]
        bad = np.argwhere(~(diag > 1e-12 * max(1.0, float(np.abs(diag).max()))))
        if bad.size:
            env, dof = bad[0]
            jn = self.host["dof_joint"][dof]
            raise BuildError(f"zero-mass moving body: dof {dof} (joint {jn}) has mass-matrix diagonal "
                             f"{diag[env, dof]:.3g} in env {env}; give the links it moves mass and "
                             f"inertia (or armature)")

    # -- stepping ------------------------------------------------------------------------------
    def _launch(self, pa, mode: int, clear_ext: int = 0) -> None:
        import warp as wp

        wp.launch(self._kernel, dim=pa.n,
                  inputs=[mode, self.options.integrator_code, clear_ext, self._h, self._gravity, *pa.args],
                  device=self.layout.device)

    def _collide(self, part) -> None:
        """Collision detection of one partition at the link poses of the substep's forward
        kinematics (computed inside the MODE_STEP launch from the substep-start qpos, as MuJoCo's
        mj_step): kernels only, graph-capturable."""
        d = self.d
        self.collision.update_poses(part, d.link_pos, d.link_quat)
        self.collision.run(part)

    def _collide_all(self) -> None:
        for part in self.layout.partitions:
            self._collide(part)

    def substep(self, f, part):
        """Fast path (no coupler): the whole substep in one launch (+ collision detection)."""
        if self.constraint is not None:
            self._constrained_substep(f, part)
            return
        last = 1 if f == self.layout.substeps - 1 else 0
        if self._readback_last(f):
            self._readback_substep(part)
        else:
            self._launch(self._parts[part.index], MODE_STEP, last)
        if self.collision is not None:
            self._collide(part)

    def substep_pre_coupling(self, f, part):
        """With a coupler: link poses and velocities at the substep start for the RigidView."""
        self._launch(self._parts[part.index], MODE_KINEMATICS)

    def substep_post_coupling(self, f, part):
        """The dynamics, with the coupler's reaction wrench added (then cleared), and integration."""
        if self.constraint is not None:
            self._constrained_substep(f, part)
            return
        last = 1 if f == self.layout.substeps - 1 else 0
        if self._readback_last(f):
            self._readback_substep(part)
        else:
            self._launch(self._parts[part.index], MODE_STEP, last)
        if self.collision is not None:
            self._collide(part)

    def check_after_step(self) -> None:
        """Collision budgets (SPEC R3): BudgetExceededError naming budget, env and count."""
        if self.collision is not None:
            self.collision.check()
        if getattr(self, "constraint", None) is not None:
            self.constraint.check()

    # -- raw contacts ---------------------------------------------------------------------------
    def get_raw_contacts(self, envs_idx=None) -> dict:
        """The contact set of the last substep (or forward) before any force, batch axis first:
        geom_a, geom_b, link_a, link_b (global indices, -1: world) (n, K) int; position (n, K, 3)
        (world, midway between the surfaces); normal (n, K, 3) (unit, from B to A); penetration
        (n, K) (> 0 when overlapping); valid (n, K) bool (slot k < the env's contact count); active
        (n, K) bool (a constraint row: False in MuJoCo 4's gap band, SPEC F2); count (n,). K = the
        max_contacts budget (0 when collision detection is off). An unbatched
        scene drops the batch axis."""
        envs = self.scene._envs_idx(envs_idx)
        out = self._raw_contacts(envs)
        if not self.scene.batched:
            return {k: v[0] for k, v in out.items()}
        return out

    def _raw_contacts(self, envs: np.ndarray) -> dict:
        n = len(envs)
        c = self.collision
        if c is None:
            z = np.zeros((n, 0), np.int32)
            return dict(geom_a=z, geom_b=z.copy(), link_a=z.copy(), link_b=z.copy(),
                        position=np.zeros((n, 0, 3)), normal=np.zeros((n, 0, 3)),
                        penetration=np.zeros((n, 0)), valid=np.zeros((n, 0), bool),
                        active=np.zeros((n, 0), bool), count=np.zeros(n, np.int32))
        cnt = c.contact_count.numpy()[envs]
        geom = c.contact_geom.numpy()[envs]
        valid = np.arange(c.max_contacts)[None, :] < cnt[:, None]
        # SPEC F2: a detected contact that is not a constraint row (MuJoCo 4's gap band) is inactive,
        # which a zero force alone would not say; the active ones come first in each env
        active = np.arange(c.max_contacts)[None, :] < c.contact_active.numpy()[envs][:, None]
        ga = np.where(valid, geom[..., 0], -1).astype(np.int32)
        gb = np.where(valid, geom[..., 1], -1).astype(np.int32)
        glink = np.array([g.link for g in c.geoms] + [-1], np.int32)   # index -1 -> -1
        pos = np.where(valid[..., None], c.contact_pos.numpy()[envs], 0.0)
        nrm = np.where(valid[..., None], c.contact_frame.numpy()[envs][:, :, 0], 0.0)
        dep = np.where(valid, c.contact_depth.numpy()[envs], 0.0)
        return dict(geom_a=ga, geom_b=gb, link_a=glink[ga], link_b=glink[gb], position=pos,
                    normal=nrm, penetration=dep, valid=valid, active=valid & active,
                    count=cnt.astype(np.int32))

    def _contact_forces(self, envs: np.ndarray) -> dict:
        """Raw contacts plus the forces of the last constraint solve (SPEC R9/F2), host side:
        force_a / torque_a (world, on geom A, torque about the contact point), force_b = −force_a,
        wrench (n, K, 6: F_n, F_t1, F_t2, T_n, T_t1, T_t2 on A in the contact frame, normal B→A),
        solved_at (the time the substep started; NaN for forward()'s query), query_at (forward()'s
        query: the current time; NaN for a step's solve) and stale (a setter changed the state since the solve)."""
        out = self._raw_contacts(envs)
        n, K = out["valid"].shape
        st = getattr(self, "constraint", None)
        if st is None or self.collision is None:
            out.update(force_a=np.zeros((n, K, 3)), force_b=np.zeros((n, K, 3)), torque_a=np.zeros((n, K, 3)),
                       wrench=np.zeros((n, K, 6)))
        else:
            st.contact_wrenches()
            v = out["valid"][..., None]
            fa = np.where(v, st.con_force_world.numpy()[envs][:, :K].astype(float), 0.0)
            out.update(force_a=fa, force_b=-fa,
                       torque_a=np.where(v, st.con_torque_world.numpy()[envs][:, :K].astype(float), 0.0),
                       wrench=np.where(v, st.con_wrench.numpy()[envs][:, :K].astype(float), 0.0))
        steps = self._steps_done()
        h = self.layout.h
        dt = h * self.layout.substeps
        if getattr(self, "_query_at", None) == steps:     # forward()'s query at the current state
            out["solved_at"] = np.full(n, np.nan)         # SPEC F1: a query is not a step's solve ...
            out["query_at"] = np.full(n, max(steps, 0) * dt)   # ... it is tagged with the query time
            out["stale"] = np.full(n, False)
            return out
        out["solved_at"] = np.full(n, max(steps, 0) * dt - h if steps > 0 else np.nan)
        out["query_at"] = np.full(n, np.nan)
        out["stale"] = np.full(n, steps <= 0 or getattr(self, "_forward_at", None) == steps)
        return out

    # -- contact parameter setters (outside the step; in place, graphs keep their pointers) -------
    def _geoms_idx(self, geoms_idx):
        G = len(self.collision.geoms) if self.collision is not None else 0
        idx = np.arange(G) if geoms_idx is None else np.atleast_1d(np.asarray(geoms_idx, np.int64))
        bad = idx[(idx < 0) | (idx >= G)]
        if bad.size:
            raise OptionError(f"geoms_idx contains {int(bad[0])}: allowed 0..{G - 1} (global geom indices)")
        return idx

    def _need_contacts(self, what):
        if getattr(self, "constraint", None) is None or self.collision is None:
            raise OptionError(f"{what}: the scene has no contact solve (no collidable geom pair, "
                              "enable_collision=False or disable_constraint=True)")

    def set_friction(self, friction, geoms_idx=None, envs_idx=None) -> None:
        """Sliding friction of geoms (global indices), each in [0.01, 5] (SPEC R5; OptionError naming
        the value and the range otherwise). envs_idx=None writes every env (and the model value);
        with envs_idx only those envs (domain randomisation): friction broadcastable to
        (len(envs), len(geoms)). Contacts mix per env: μ = max(μ_A·s_A, μ_B·s_B, 0.01). Contacts of an
        explicit MJCF <pair> use the pair's own friction instead."""
        from .constraint import check_friction

        self._need_contacts("set_friction")
        idx = self._geoms_idx(geoms_idx)
        envs = self.scene._envs_idx(envs_idx)
        check_friction(friction)
        try:
            f = np.broadcast_to(np.asarray(friction, float), (len(envs), len(idx)))
        except ValueError:
            raise OptionError(f"friction of shape {np.shape(friction)}: expected a scalar, ({len(idx)},) or "
                              f"({len(envs)}, {len(idx)}) (envs, geoms)") from None
        host = self.geom_friction.numpy()
        host[envs[:, None], idx[None, :], 0] = f
        self.geom_friction.assign(host)
        if envs_idx is None:
            model = self._geom_friction.numpy()
            model[idx, 0] = f[0]
            self._geom_friction.assign(model)

    def get_friction(self, geoms_idx=None, envs_idx=None) -> np.ndarray:
        """Per-env geom friction (sliding, torsional, rolling): (n_envs, len(geoms), 3); an unbatched
        scene drops the batch axis."""
        self._need_contacts("get_friction")
        idx = self._geoms_idx(geoms_idx)
        envs = self.scene._envs_idx(envs_idx)
        out = self.geom_friction.numpy()[envs][:, idx].astype(float)
        return out if self.scene.batched else out[0]

    def set_friction_ratio(self, ratio, geoms_idx=None, envs_idx=None) -> None:
        """Per-env friction scale of geoms (domain randomisation, SPEC R5: μ = max(μ_A·s_A, μ_B·s_B,
        0.01)); ratio broadcastable to (len(envs), len(geoms)), > 0. Default mode only (MuJoCo-
        compatible mode mixes as MuJoCo, without ratios)."""
        self._need_contacts("set_friction_ratio")
        idx = self._geoms_idx(geoms_idx)
        envs = self.scene._envs_idx(envs_idx)
        r = np.broadcast_to(np.asarray(ratio, float), (len(envs), len(idx)))
        if not np.all(np.isfinite(r) & (r > 0)):
            raise OptionError(f"friction_ratio={float(r[~(np.isfinite(r) & (r > 0))][0])!r}: must be > 0")
        self._write(self.friction_ratio, envs, idx, r)

    # sol_params (SPEC R6): one kind per call; geoms and joints shared by all envs, equalities per env
    def _sol_kind(self, geoms_idx, joints_idx, eqs_idx, what):
        given = [k for k, v in (("geoms_idx", geoms_idx), ("joints_idx", joints_idx), ("eqs_idx", eqs_idx))
                 if v is not None]
        if len(given) > 1:
            raise OptionError(f"{what}: one kind per call (geoms_idx=, joints_idx= or eqs_idx=), got {given}")
        return given[0] if given else "geoms_idx"

    @staticmethod
    def _kind_idx(idx, n, field):
        out = np.arange(n) if idx is None else np.atleast_1d(np.asarray(idx)).reshape(-1)
        if out.size and not np.issubdtype(out.dtype, np.integer):
            raise OptionError(f"{field}={idx!r}: expected integer indices")
        bad = out[(out < 0) | (out >= n)]
        if bad.size:
            raise OptionError(f"{field} contains {int(bad[0])}: allowed 0..{n - 1} (global indices)")
        return out.astype(np.int64)

    def _sol_records(self):
        """Host record of the sol_params inputs and effective values of joints (limit and
        frictionloss rows) and equalities, made on first use from the model's values."""
        rec = getattr(self, "_sol_rec", None)
        if rec is not None:
            return rec
        import warnings

        from .constraint import DEFAULT_SOL_PARAMS, legalize_sol_params

        st, t = self.constraint, self.tree
        compat, h = self.options.mujoco_compatible, self.layout.h
        lim = self._limits
        nj = self.n_joints
        jin = np.tile(np.asarray(DEFAULT_SOL_PARAMS, float), (nj, 1))
        # a joint's current value: its limit params (frictionloss params when it has no limit)
        fsol = st.model["dof_sol"].numpy().astype(float)
        lsol = st.model["lim_sol"].numpy().astype(float)
        for j in range(nj):
            if self._joint_ndof(j):
                d0 = int(t.joint_dof_start[j])
                rows = np.nonzero(lim["dof"].astype(int) == d0)[0]
                jin[j] = lsol[rows[0]] if len(rows) else fsol[d0]
        ne = len(self._eq_types)
        ein = st.model["eq_sol"].numpy()[:, :ne].astype(float) if ne else np.zeros((self.layout.n_envs, 0, 7))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            jeff = np.array([legalize_sol_params(x, compatible=compat, h=h) for x in jin]).reshape(-1, 7)
            eeff = np.array([[legalize_sol_params(x, compatible=compat, h=h) for x in row] for row in ein]
                            ).reshape(ein.shape)
            geff = np.array([legalize_sol_params(x, compatible=compat) for x in self._sol_input["geoms"]]
                            ).reshape(-1, 7) if self.collision is not None else np.zeros((0, 7))
        self._sol_rec = rec = {"joints": [jin, jeff], "eqs": [ein, eeff],
                               "geoms": [self._sol_input["geoms"] if self.collision is not None
                                         else np.zeros((0, 7)), geff]}
        return rec

    def _joint_ndof(self, j):
        return {0: 0, 1: 1, 2: 1, 3: 3, 4: 6}[int(self.tree.joint_type[j])]

    def set_sol_params(self, sol_params, geoms_idx=None, joints_idx=None, eqs_idx=None, envs_idx=None) -> None:
        """sol_params (timeconst, dampratio, dmin, dmax, width, mid, power) of one kind per call
        (SPEC R6; OptionError for two kinds):

        - geoms_idx (global geom indices; the default when no kind is given: all geoms): contact
          params, shared by all envs (envs_idx is an error), mixed per contact by SPEC R5;
        - joints_idx (global joint indices): the joint's limit rows and its dofs' frictionloss rows,
          shared by all envs; timeconst floored at 2h;
        - eqs_idx (global equality indices): per env (envs_idx); timeconst floored at 2h.

        Out-of-range values are clamped with a PolyphysWarning naming the field and the effective
        value: dmin/dmax/mid to [1e-4, 0.9999], width >= 0, power >= 1, dampratio <= 0 and a
        negative timeconst → default (MuJoCo-compatible mode keeps MuJoCo's direct (negative,
        negative) form). ``get_sol_params`` returns both the input and the effective values."""
        from .constraint import legalize_sol_params

        if getattr(self, "constraint", None) is None:
            raise OptionError("set_sol_params: the scene has no constraint solve (no contact, limit, "
                              "frictionloss or equality)")
        kind = self._sol_kind(geoms_idx, joints_idx, eqs_idx, "set_sol_params")
        compat, h = self.options.mujoco_compatible, self.layout.h
        if kind != "eqs_idx" and envs_idx is not None:
            raise OptionError(f"set_sol_params({kind}=...): geom and joint sol_params are shared by all envs; "
                              "envs_idx is only for eqs_idx (equality params are per env)")
        vals = np.asarray(sol_params, float)
        if vals.shape[-1:] != (7,):
            raise OptionError(f"sol_params of shape {vals.shape}: the last axis must hold 7 values (timeconst, "
                              "dampratio, dmin, dmax, width, mid, power)")
        rec = self._sol_records() if self.constraint is not None else None
        st = self.constraint
        if kind == "geoms_idx":
            self._need_contacts("set_sol_params(geoms_idx=)")
            idx = self._geoms_idx(geoms_idx)
            v = np.broadcast_to(vals, (len(idx), 7))
            eff = np.array([legalize_sol_params(x, field="sol_params", compatible=compat) for x in v])
            host = self._geom_sol.numpy()
            host[idx] = eff
            self._geom_sol.assign(host)
            rec["geoms"][0][idx] = v
            rec["geoms"][1][idx] = eff
            return
        if kind == "joints_idx":
            idx = self._kind_idx(joints_idx, self.n_joints, "joints_idx")
            v = np.broadcast_to(vals, (len(idx), 7))
            eff = np.array([legalize_sol_params(x, field="sol_params", compatible=compat, h=h) for x in v])
            t, lim = self.tree, self._limits
            lsol, dsol = st.model["lim_sol"].numpy(), st.model["dof_sol"].numpy()
            for j, e in zip(idx, eff):
                d0 = int(t.joint_dof_start[j])
                rows = np.nonzero(lim["dof"].astype(int) == d0)[0] if self._joint_ndof(j) else []
                lsol[rows] = e
                dsol[d0:d0 + self._joint_ndof(j)] = e
            if len(lsol):
                st.model["lim_sol"].assign(lsol)
            st.model["dof_sol"].assign(dsol)
            rec["joints"][0][idx] = v
            rec["joints"][1][idx] = eff
            return
        ne = len(self._eq_types)
        idx = self._kind_idx(eqs_idx, ne, "eqs_idx")
        envs = self.scene._envs_idx(envs_idx)
        try:
            v = np.broadcast_to(vals, (len(envs), len(idx), 7))
        except ValueError:
            raise OptionError(f"sol_params of shape {vals.shape}: expected (7,), ({len(idx)}, 7) or "
                              f"({len(envs)}, {len(idx)}, 7)") from None
        eff = np.array([legalize_sol_params(x, field="sol_params", compatible=compat, h=h)
                        for x in v.reshape(-1, 7)]).reshape(v.shape)
        write_env_rows(st.model["eq_sol"], envs, idx, eff)
        rec["eqs"][0][envs[:, None], idx[None, :]] = v
        rec["eqs"][1][envs[:, None], idx[None, :]] = eff

    def get_sol_params(self, geoms_idx=None, joints_idx=None, eqs_idx=None, envs_idx=None) -> dict:
        """{"input": ..., "effective": ...} sol_params of one kind (as set_sol_params): geoms and
        joints (k, 7); equalities (n_envs, k, 7) (no batch axis unbatched). input: the last value
        given (the model's value before any call); effective: after legalization and, for joints
        and equalities, the 2h timeconst floor (contacts then mix geoms by SPEC R5)."""
        if getattr(self, "constraint", None) is None:
            raise OptionError("get_sol_params: the scene has no constraint solve")
        kind = self._sol_kind(geoms_idx, joints_idx, eqs_idx, "get_sol_params")
        rec = self._sol_records()
        if kind == "geoms_idx":
            self._need_contacts("get_sol_params(geoms_idx=)")
            idx = self._geoms_idx(geoms_idx)
            return {"input": rec["geoms"][0][idx].copy(), "effective": rec["geoms"][1][idx].copy()}
        if kind == "joints_idx":
            idx = self._kind_idx(joints_idx, self.n_joints, "joints_idx")
            return {"input": rec["joints"][0][idx].copy(), "effective": rec["joints"][1][idx].copy()}
        idx = self._kind_idx(eqs_idx, len(self._eq_types), "eqs_idx")
        envs = self.scene._envs_idx(envs_idx)
        out = {k: rec["eqs"][i][envs][:, idx].copy() for i, k in enumerate(("input", "effective"))}
        return out if self.scene.batched else {k: v[0] for k, v in out.items()}

    def _link_contact_wrench(self, envs: np.ndarray) -> dict:
        """Per link (global index): net contact force and torque about the link CoM (world) of the
        last substep, and the impulse Σ h·f / Σ h·τ over the last step's substeps (SPEC R9/F4)."""
        st = getattr(self, "constraint", None)
        z = np.zeros((len(envs), self.n_links, 3))
        if st is None or self.collision is None:
            return dict(force=z, torque=z.copy(), impulse_force=z.copy(), impulse_torque=z.copy())
        g = lambda a: a.numpy()[envs].astype(float)  # noqa: E731
        return dict(force=g(st.link_force), torque=g(st.link_torque), impulse_force=g(st.link_impulse_force),
                    impulse_torque=g(st.link_impulse_torque))

    # -- RigidView (couplers) --------------------------------------------------------------------
    accepts_reaction = True

    def rigid_geoms(self) -> RigidGeoms:
        """Collision geoms with an analytic SDF, mesh geoms with their triangles (the coupler
        builds grid SDFs from them) and heightfield geoms with their heights (``hfield_heights``),
        their link (global index) and coupling fields."""
        if getattr(self, "_geoms", None) is None:
            import warp as wp
            from polyphys.sdf_grid import hfield_heights

            rows, meshes, hfields = [], [], []
            for e in self.entities:
                mat = e.material
                for g in e.description.geoms:
                    code = GEOM_CODES[g.type]
                    is_mesh = g.type == "mesh" and g.mesh is not None
                    hf = hfield_heights(g.hfield, f"geom {g.name!r}") if g.type == "hfield" else None
                    if g.role == "visual" or (code not in SDF_SUPPORTED and not is_mesh and hf is None):
                        continue
                    meshes.append((np.asarray(g.mesh.vertices, float), np.asarray(g.mesh.faces))
                                  if is_mesh else None)
                    hfields.append(hf)
                    size = tuple(float(x) for x in (tuple(g.size) + (0.0, 0.0, 0.0))[:3])
                    if hf is not None:
                        size = hf[1]                    # (rx, ry, z_bottom)
                    rows.append((e.link_start + g.link, code, size, g.pos, g.quat[1:] + g.quat[:1],
                                 mat.coup_friction, mat.coup_restitution, mat.coup_softness))
            dev, npf, s = self.layout.device, self.layout.np_float, self.model.scalar
            V, Q = self.model.vec3, self.model.quat
            col = list(zip(*rows)) if rows else [[]] * 8
            self._geoms = RigidGeoms(
                link=wp.array(np.asarray(col[0], np.int32), dtype=wp.int32, device=dev),
                type=wp.array(np.asarray(col[1], np.int32), dtype=wp.int32, device=dev),
                size=wp.array(np.asarray(col[2], npf).reshape(-1, 3), dtype=V, device=dev),
                pos=wp.array(np.asarray(col[3], npf).reshape(-1, 3), dtype=V, device=dev),
                quat=wp.array(np.asarray(col[4], npf).reshape(-1, 4), dtype=Q, device=dev),
                coup_friction=wp.array(np.asarray(col[5], npf), dtype=s, device=dev),
                coup_restitution=wp.array(np.asarray(col[6], npf), dtype=s, device=dev),
                coup_softness=wp.array(np.asarray(col[7], npf), dtype=s, device=dev),
                meshes=tuple(meshes), hfields=tuple(hfields))
        return self._geoms

    def rigid_links(self, part) -> RigidLinks:
        """Per-partition link frames, CoM, CoM linear velocity and angular velocity (world), and the
        coupling buffer (force at the CoM, torque about it, world) applied in post-coupling."""
        return self._parts[part.index].links

    # -- RenderView (cameras and ray sensors, docs/cameras.md) --------------------------------------
    def render_geoms(self):
        """Every geom (visual and collision) with its colour, for cameras and ray sensors."""
        from polyphys.raycast.geoms import render_geoms_of

        return render_geoms_of(self.entities, [e.link_start for e in self.entities])

    def sync_links(self, part) -> None:
        """Link frames of the end-of-step state for ``rigid_links(part)`` (inside the step they are
        those of the last substep's start): forward kinematics from qpos, launches only. Nothing the
        next step reads changes (the getters run the same refresh, ``sync_kinematics``)."""
        self._launch(self._parts[part.index], MODE_KINEMATICS)

    def _steps_done(self) -> int:
        sim = getattr(self.scene, "simulator", None)
        return -1 if sim is None else sim.n_steps

    def forward(self):
        """Kinematics and dynamics (M, bias, forces, qacc = M⁻¹f) at the current state, the contacts
        (when collision detection is on) and, as a fresh query (SPEC F1), the constraint forces at
        this state: rows and solve without integrating (``_query_constraint``), readback tagged with
        the query time (solved_at = now) and not stale. The forward() an entity setter or reset runs
        right after writing the state (``_write``) refreshes kinematics and contacts only: the forces stay
        those of the last solve, flagged stale, until the next step or forward(). Nothing the next
        step reads changes (the warm start, the step's impulse sums, qfrc_applied): a trajectory
        continues bit for bit whether or not forward() ran (get_state and checkpoints call it)."""
        self._launch(self._all, MODE_FORWARD)
        if getattr(self, "collision", None) is not None:
            self._collide_all()
        self._kin_step = self._steps_done()
        setter = getattr(self, "_written_at", None) == self._kin_step
        self._written_at = None
        if setter or getattr(self, "constraint", None) is None:
            self._forward_at = self._kin_step    # contact forces are those of the last solve: stale
            self._query_at = None
            return
        self._query_constraint()
        self._forward_at = None
        self._query_at = self._kin_step          # contact forces solved at the current state

    def _query_constraint(self) -> None:
        """forward()'s constraint query, per partition, after MODE_FORWARD and collision: contacts →
        rows → solve (cold start from qacc_smooth, so the query depends on the state alone) → contact
        and per-link wrenches (accumulate=False: the step's impulse sums are kept). The solve writes
        its result into the warm start st.qacc (state): saved before and restored after."""
        import warp as wp

        from .kernels import constraint_glue as G

        st, d, m, dev = self.constraint, self.d, self.model, self.layout.device
        if getattr(self, "_qacc_keep", None) is None:
            self._qacc_keep = wp.empty_like(st.qacc)
        wp.copy(self._qacc_keep, st.qacc)
        for part in self.layout.partitions:
            sl = slice(part.start, part.stop)
            n, nv = part.stop - part.start, self.n_dofs
            if self.collision is not None:
                self._contacts_to_stage(part)
            st.mass_from_tree(m.dof_madr, m.dof_depth, m.m_col, d.mass, self._diag_add, part)
            wp.launch(G.dof_reference, dim=(n, nv), inputs=[self._link_root, m.dof_link, d.link_pos[sl]],
                      outputs=[self._dof_ref[sl]], device=dev)
            if self._n_connect:
                mm = st.model
                wp.launch(G.connect_bias, dim=(n, len(self._eq_types)), inputs=[
                    mm["eq_type"], mm["eq_obj"], mm["eq_data"], mm["link_dof_last"], mm["dof_parent"],
                    self.qvel[sl], d.cdof_w[sl], d.cdof_v[sl], d.cdofdot_w[sl], d.cdofdot_v[sl], self._dof_ref[sl],
                    d.link_pos[sl], d.link_quat[sl]], outputs=[st.eq_acc_bias[sl]], device=dev)
            st.build_rows(self.qpos, self.qvel, d.cdof_w, d.cdof_v, self._dof_ref, d.link_pos, d.link_quat, part)
            st.solve(st.M, d.qacc, d.qacc, part)
            if self.collision is not None:
                st.contact_wrenches(part)
                st.link_wrenches(d.link_xipos, self.layout.h, accumulate=False, part=part)
            if self._readback is not None:          # the readback of this query (readback.py)
                self._readback.run(part, st.qacc)
                self._readback_query_at = self._steps_done()
        wp.copy(st.qacc, self._qacc_keep)

    def kinematics(self):
        self._launch(self._all, MODE_KINEMATICS)
        self._kin_step = self._steps_done()

    def sync_kinematics(self) -> None:
        """Refresh link poses/velocities if a step ran since they were computed (getters call it)."""
        if getattr(self, "_kin_step", None) != self._steps_done():
            self.kinematics()

    def on_reset(self, envs_idx):
        self._written_at = self._steps_done()    # a state write: refresh only, forces stale (forward)
        self.forward()

    def state_arrays(self):
        out = {k: getattr(self, k) if hasattr(self, k) else getattr(self.model, k) for k in STATE}
        if getattr(self, "collision", None) is not None and self.collision.welds:
            out["weld_active"] = self.collision.weld_active   # switchable per env at run time
        if getattr(self, "constraint", None) is not None:
            out["constraint_qacc"] = self.constraint.qacc       # the constraint solve's warm start
            if self.collision is not None:                      # readbacks of the last step
                out["contact_link_impulse_force"] = self.constraint.link_impulse_force
                out["contact_link_impulse_torque"] = self.constraint.link_impulse_torque
        return out

    def extra_state(self):
        out = {f"param/{k}": getattr(self.params, k).numpy() for k in PARAMS}
        if getattr(self, "constraint", None) is not None and self.collision is not None:
            out["param/friction_ratio"] = self.friction_ratio.numpy()
            out["param/geom_friction"] = self._geom_friction.numpy()
            out["param/geom_friction_env"] = self.geom_friction.numpy()
            out["param/geom_sol"] = self._geom_sol.numpy()
        if getattr(self, "constraint", None) is not None:
            for k in ("lim_sol", "dof_sol", "eq_sol"):
                out[f"param/{k}"] = self.constraint.model[k].numpy()
        return out

    def load_extra_state(self, data):
        for k in PARAMS:
            key = f"param/{k}"
            if key in data:
                getattr(self.params, k).assign(np.asarray(data[key]))
        if getattr(self, "constraint", None) is not None and self.collision is not None:
            for key, arr in (("param/friction_ratio", self.friction_ratio),
                             ("param/geom_friction", self._geom_friction), ("param/geom_sol", self._geom_sol),
                             ("param/geom_friction_env", self.geom_friction)):
                if key in data:
                    arr.assign(np.asarray(data[key]))
        if getattr(self, "constraint", None) is not None:
            for k in ("lim_sol", "dof_sol", "eq_sol"):
                if f"param/{k}" in data and self.constraint.model[k].shape[0]:
                    self.constraint.model[k].assign(np.asarray(data[f"param/{k}"]))
            self._sol_rec = None        # inputs read back as the loaded effective values
        self.forward()

    # -- host helpers used by the entities -----------------------------------------------------
    def _write(self, arr, envs: np.ndarray, cols, values: np.ndarray) -> None:
        """arr[envs, cols] = values (host round trip; outside the step). A write of the state or the
        link parameters marks the forward() that the entity setter runs next as its refresh (forces
        stale, no solve; see forward)."""
        if any(arr is a for a in (self.qpos, self.qvel, self.model.root_pos, self.model.root_quat)) or any(
                arr is getattr(self.params, k) for k in PARAMS):
            self._written_at = self._steps_done()
        host = arr.numpy()
        cols = np.arange(host.shape[1])[cols] if isinstance(cols, slice) else np.asarray(cols)
        host[envs[:, None], cols[None, :]] = values
        arr.assign(host)

    def mass_matrix(self, dofs: slice | None = None, envs: np.ndarray | None = None) -> np.ndarray:
        """Dense mass matrix (armature included) of the last forward/step: (n_envs, n, n) for the
        dof range ``dofs`` (default all; M is block-diagonal across entities) and ``envs``."""
        h = self.host
        dofs = slice(0, self.n_dofs) if dofs is None else dofs
        envs = np.arange(self.layout.n_envs) if envs is None else np.asarray(envs)
        n = dofs.stop - dofs.start
        rows, cols = h["m_rows"], h["m_cols"]
        sel = (rows >= dofs.start) & (rows < dofs.stop)
        out = np.zeros((len(envs), n, n))
        vals = self.d.mass.numpy()[envs][:, :len(rows)][:, sel].astype(float)
        r, c = rows[sel] - dofs.start, cols[sel] - dofs.start
        out[:, r, c] = vals
        out[:, c, r] = vals
        return out
