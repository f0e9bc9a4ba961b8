"""RigidSolver: articulated rigid bodies over env batches (MuJoCo's pipeline, docs/semantics.md §R1).

This module orders the stages; each stage is its own module (host launch functions) with its
kernels in kernels/<stage>.py (docs/rigid.md, "Internals"). Per substep and partition:

    kinematics → bias (RNE) → actuation (passive, actuators, control) → inertia (CRBA) + factorization
    (one launch, factorization.crb_factor_solve; with constraint rows it also writes the solve's dense M)
    without constraint rows: (M + h·D)⁻¹·qfrc_smooth → integration, then collision (the next
    substep's contacts are detected at the start of that substep's constrained pipeline; an
    unconstrained scene with contacts only reads them)
    with constraint rows: qacc_smooth → collision → constraint rows → convex or
    signorini solve → noslip → contact forces (with one substep and no in-step reader: after the step, at
    the first host read, _wrench_sync) → [readback] → integration (total force, (M + h·D) solve,
    integrate: one launch, integration.post_solve)

[readback] (readback.py: MuJoCo's mj_rnePostConstraint for sensors) runs on the last substep of a
step only once a sensor or a readback getter asked (sensor_view.py); without constraint rows that
substep then solves M⁻¹·qfrc_smooth for it before the integration's (M + h·D) solve. The stages
before and after it compute the same values either way: a scene steps bit-identically with and
without sensors.

Model and Data (types.py) are built by model.py; a partition's View holds its slice of every
per-env array. Kernel launches only inside a step (graph-capturable): no host sync, no allocation.
"""

from __future__ import annotations

import numpy as np
from polyphys import morphs as M
from polyphys.description import EntityDescription, from_primitive, without_collision
from polyphys.errors import BuildError, OptionError, PolyphysWarning, SimulationError
from polyphys.geometry import warn_coincident_planes
from polyphys.importing import describe_morph
from polyphys.interfaces import Solver
from polyphys.views import RigidGeoms, RigidLinks, pack_rigid_geoms

from . import (
    actuation,
    bias,
    collision,
    constraint_rows,
    contact_forces,
    contact_handoff,
    contacts,
    convex_solve,
    factorization,
    integration,
    kinematics,
    noslip,
    parameters,
    readback,
    signorini_solve,
)
from . import model as _model
from .codes import IntegratorType
from .entity import RigidEntity
from .materials import Rigid
from .model import HostModel, make_data, pool_rows_host, put_model, scratch_block, set_const, view
from .options import RigidOptions, resolve_model_options
from .sensor_view import RigidSensorViewMixin
from .types import declare_overloads

# per-env model parameters (domain randomisation): not state (reset keeps them), checkpointed as extra state
PARAMS = ("link_mass", "link_com", "link_inertia", "dof_damping", "dof_armature", "dof_stiffness",
          "dof_kp", "dof_kv", "dof_force_lo", "dof_force_hi")
STATE = ("qpos", "qvel", "ctrl", "dof_mode", "dof_target_pos", "dof_target_vel", "dof_target_force",
         "qfrc_applied", "xfrc_force", "xfrc_torque", "root_pos", "root_quat")


def _stage_modules() -> list:
    """Every stage kernel module of the solver (plugins/rigid/kernels; docs/rigid.md, "Internals")."""
    import importlib

    return [importlib.import_module(f"{__package__}.kernels.{name}") for name in STAGE_MODULES]


STAGE_MODULES = ("kinematics", "bias", "inertia", "actuation", "factorization", "integration", *collision.COLLISION_MODULES,
                 "constraint_rows", "convex_solve", "signorini_solve", "noslip", "contact_forces",
                 "readback", "contact_handoff")


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
        if not morph.collision:           # Morph(collision=False): its geoms collide with nothing
            desc = without_collision(desc)
        self._check_description(desc, ename)
        self._world_planes = warn_coincident_planes(getattr(self, "_world_planes", []), desc, *base, ename)
        self._pending.append((desc, *base))
        self._collision_plan = (None, None)      # kernel_modules' plan (build reuses it) is stale
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
    def kernel_modules(self, layout):
        """The stage kernel modules this scene will launch, compiled in parallel before ``build``
        (docs/running.md, "First run"): the smooth stages and the integration always; the collision
        modules of its pipeline (collision.scene_kernel_modules: the driver, and the broadphase and
        narrowphase modules its geom type pairs need) when a geom pair can collide; the constraint
        rows, the solve of the resolved contact resolution, noslip and the contact forces when the
        scene can have constraint rows; the readback when a sensor reads this solver. An estimate
        from the descriptions (a module declared here but never launched costs its compile once; one
        launched but not declared compiles at its first launch). Each module holds the overloads of
        the scene's precision only (types.declare_overloads) (the neutral-overlap
        probe at build runs in it too, on the collision modules listed)."""
        from .kernels import constraint_rows as k_rows
        from .kernels import contact_forces as k_forces
        from .kernels import convex_solve as k_convex
        from .kernels import factorization as k_factorization
        from .kernels import integration as k_integration
        from .kernels import kinematics as k_kinematics
        from .kernels import noslip as k_noslip
        from .kernels import readback as k_readback
        from .kernels import signorini_solve as k_signorini

        # the smooth stages (kinematics, bias, actuation, inertia) run inside factorization's fused launch
        # (factorization.smooth): kernels/bias.py, actuation.py and inertia.py are not launched by a step;
        # kernels/kinematics.py is, by the getters' refresh of the end-of-step link frames (sync_kinematics)
        # and where a coupler takes the link poses before the dynamics (substep_pre_coupling): declared so
        # a first run's getters do not compile it serially; the SAP hand-off declares the separate stages
        # (handoff_kernel_modules)
        mods = [k_factorization, k_integration, k_kinematics]
        o, _ = resolve_model_options(self.options, [(e.name, e.description.options) for e in self.entities],
                                     precision=layout.precision, h=layout.h, gravity=layout.gravity)
        descs = [e.description for e in self.entities]
        names, probe, plan = collision.scene_kernel_modules(self.entities, o)
        self._collision_plan = (o, plan)         # build makes its pipeline from it (no second mesh decomposition)
        collide = bool(names)
        mods += collision.import_kernel_modules(names + [n for n in probe if n not in names])
        rows = any(j.limited or j.frictionloss > 0 for d in descs for j in d.joints) or any(d.equalities for d in descs)
        if not o.disable_constraint and sum(d.n_dofs for d in descs) > 0 and (collide or rows):
            mods += [k_rows, k_signorini if o.effective_resolution() == "signorini" else k_convex]
            if o.noslip_iterations > 0:
                mods.append(k_noslip)
            if collide:
                mods.append(k_forces)
        if any(getattr(s, "in_step", True) and getattr(s, "entity", None) is e
               for s in getattr(self.scene, "sensors", ()) for e in self.entities):      # cameras on demand: no
            mods.append(k_readback)
        declare_overloads(mods, layout.precision)
        return mods

    def build(self, layout):
        import warnings

        self.layout = layout
        # every stage module gets the scene's precision's overloads before its first launch (also those
        # kernel_modules did not declare, or when it was not called): declaring compiles nothing
        declare_overloads(_stage_modules(), layout.precision)
        # MuJoCo-compatible mode: settings left at None come from the models' <option> (docs/semantics.md §R2a);
        # every later read of self.options (collision, constraint stages, integrator) sees them
        self.options, notes = resolve_model_options(
            self.options, [(e.name, e.description.options) for e in self.entities],
            precision=layout.precision, h=layout.h, gravity=layout.gravity)
        for msg in notes:
            warnings.warn(msg, PolyphysWarning, stacklevel=3)
        if self.options.dt is not None and abs(self.options.dt - layout.h) > 1e-9 * layout.h:
            raise BuildError(f"RigidOptions.dt = {self.options.dt} but the scene substep is {layout.h}")
        self.hm = hm = HostModel.build(self._pending, self.options)
        self.tree = t = hm.tree
        for e, ls, js, qs, ds in zip(self.entities, t.entity_link_start, t.entity_joint_start,
                                     t.entity_q_start, t.entity_dof_start):
            e._bind(ls, js, qs, ds)
        self.n_links, self.n_joints, self.n_qs, self.n_dofs = t.n_links, t.n_joints, t.n_qs, t.n_dofs
        self.n_act = len(hm.act_dof)
        self.actuator_names = hm.actuator_names
        n, prec, dev = layout.n_envs, layout.precision, layout.device
        self.model, self.data = put_model(hm, layout), make_data(hm, layout)
        self.views = {"all": view(self.model, self.data, 0, n, prec, dev)}
        self._smooth(self.views["all"], 0.0, self.data.qacc)        # at qpos0: M, cdof, poses
        self._check_masses()
        d0 = {k: getattr(self.data, k).numpy()[0].astype(float)
              for k in ("link_pos", "link_quat", "link_xipos", "cdof_w", "cdof_v", "dof_ref")}
        plan_options, plan = getattr(self, "_collision_plan", (None, None))
        self._collision_plan = (None, None)      # used once: building the pipeline changes it
        self.collision = collision.scene_pipeline(self.entities, self.options, layout, d0["link_pos"], d0["link_quat"],
                                                  plan=plan if plan_options == self.options else None)
        self.n_pairs = 0
        self.has_constraint = (not self.options.disable_constraint and self.n_dofs > 0
                               and (self.collision is not None or hm.has_constraint_rows))
        if self.has_constraint:
            set_const(self.model, self.data, hm, layout, self.entities, self.collision,
                      self.mass_matrix(envs=np.array([0]))[0], d0)
            if self.collision is not None:
                self.n_pairs = sum(len(e.description.contact_pairs) for e in self.entities)
                self.geom_friction0 = self.model.geom_friction.numpy()[0].astype(float)   # the model's value
                self.geom_sol0 = self.model.geom_sol.numpy().astype(float)                 # setter inputs
        self._n_connect = int((hm.eq_type <= 1).sum())      # connect/weld rows get J̇·q̇
        # docs/semantics.md §R2: approximate_implicitfast solves the constraint problem with M + h·D_v (the solve's
        # acceleration is the step's); Euler and implicitfast solve with M and correct afterwards
        self._approx = self.options.integrator_code == IntegratorType.APPROXIMATE_IMPLICITFAST
        self._hd_solve = layout.h if self._approx else 0.0
        self.views["all"] = view(self.model, self.data, 0, n, prec, dev)
        self._links = {}
        for part in layout.partitions:
            self.views[part.index] = v = view(self.model, self.data, part.start, part.stop, prec, dev)
            self._links[part.index] = RigidLinks(
                pos=v.d.link_pos, quat=v.d.link_quat, com=v.d.link_xipos, vel=v.d.link_com_vel, ang=v.d.link_ang,
                coupling_force=v.d.coupling_force, coupling_torque=v.d.coupling_torque)
        self._sol_rec = None
        # the contact + link wrench stage on demand (_wrench_sync): in every substep with several substeps
        # (the step's impulse sums need each one) or in-step sensors (they read it, or sync_links inside the
        # step), else from the first readback request on (request_sensor_data) and otherwise after the step
        self._wrench_at = {}
        in_step_sensors = any(getattr(s, "in_step", True) for s in getattr(self.scene, "sensors", ()))
        self._wrench_on_since = -1 if layout.substeps > 1 or in_step_sensors or self._readback_on else None
        self.forward()

    # -- the stage order -------------------------------------------------------------------------
    def _smooth(self, v, hd: float, qacc_out, dense: bool = False, hd_int: float | None = None) -> None:
        """Smooth dynamics at the view's state: kinematics, bias forces, dof forces, mass matrix and
        qacc_out = (M + hd·D)⁻¹·qfrc_smooth (``dense``: also the dense M + hd·D of the constraint solve,
        factorization.mass_dense; ``hd_int``: also the factor of M + hd_int·D for the integration's
        factorization.ld_solve). The mass matrix, its factors and the dense M are one launch
        (factorization.crb_factor_solve: inertia.crb + factor_solve + mass_dense, the same numbers); the
        actuation stage reads none of them, so it runs before. The four stages are one launch
        (factorization.smooth: each stage's per-env function in turn, the same numbers as the four launches;
        ``_fused_smooth`` False: the four launches, kept for the A/B of benchmarks/results/constraint.md)."""
        if getattr(self, "_fused_smooth", True):
            factorization.smooth(v, hd, v.d.qfrc_smooth, qacc_out, dense, hd_int=hd_int)
            return
        kinematics.kinematics(v)
        bias.rne(v)
        actuation.actuation(v)
        factorization.crb_factor_solve(v, hd, v.d.qfrc_smooth, qacc_out, dense, hd_int=hd_int)

    def _collide(self, part, export: bool = False) -> None:
        """Collision detection of one partition at the link poses of the substep's kinematics (the
        substep-start configuration, as MuJoCo's mj_step): kernels only, graph-capturable. ``export``:
        also hand the contacts to the constraint builder's arrays (CollisionPipeline.collide fuses the
        launches), for a caller that builds rows from them next."""
        d = self.data
        out = (d.ncon, d.con_pos, d.con_frame, d.con_dist, d.con_margin, d.con_link) if export else None
        self.collision.collide(part, d.link_pos, d.link_quat, out)

    def _constraint_rows(self, part, exported: bool = False, dense_done: bool = False) -> None:
        """Contacts → dense M → contact parameters + rows (one launch), for one partition (after the smooth stages
        and the collision of its envs; ``exported``: _collide(part, export=True) already exported them;
        ``dense_done``: the smooth pass already wrote the dense M, ``_smooth(..., dense=True)``)."""
        d, v = self.data, self.views[part.index]
        if self.collision is not None:
            if not exported:
                self.collision.export(part, d.ncon, d.con_pos, d.con_frame, d.con_dist, d.con_margin, d.con_link)
        if not dense_done:
            factorization.mass_dense(v, self._hd_solve)
        if self._n_connect:
            constraint_rows.connect_bias(v, len(self.hm.eq_type))
        # the contact parameters inside the rows' launch (constraint_rows.contact_params' body: the same numbers)
        constraint_rows.make_rows(v, params=self.collision is not None, pool=self._row_pool_on(),
                                  slack=getattr(self, "_row_slack", _model._row_pool_slack),
                                  head=getattr(self, "_row_head", _model._row_pool_head))

    def _row_pool_on(self) -> bool:
        """Whether make_rows builds into the row pool (model._row_pool; docs/constraint.md, "The row pool"): on CPU
        (a View's envs built in order) while the solver solves its own contacts (the SAP hand-off's coupler writes
        each env's rows in its own block). ``_row_pool`` on the solver overrides the module's switch (the A/B)."""
        on = getattr(self, "_row_pool", None)
        on = _model._row_pool if on is None else on
        return bool(on) and self._contact_owner is None and str(self.layout.device).startswith("cpu")

    def _m_in_solve(self) -> bool:
        """Whether the substep's convex solve writes the dense M itself (convex_solve.solve ``mass_hd``) instead
        of the smooth pass (the Signorini solve reads the smooth pass's). Always where d.qM is one block per View
        (model._qm_scratch): an env's M exists only inside its solve there."""
        if self.options.effective_resolution() == "signorini":
            return False
        return getattr(self, "_dense_in_solve", True) or scratch_block(self.data.qM) is not self.data.qM

    def _solve(self, v, qacc_warm, dense: bool = False) -> None:
        """The constraint solve of the view's envs; ``dense``: the convex solve writes the dense M + h·D first
        (``_m_in_solve``)."""
        pool = self._row_pool_on()
        if self.options.effective_resolution() == "signorini":
            signorini_solve.solve(v, qacc_warm, pool=pool)
        else:
            # the padding rows past the count only where previous solves wrote (d.efc_pad); with a contact owner
            # (the SAP hand-off writes efc_force outside the solve) over the whole budget; none in the row pool
            convex_solve.solve(v, qacc_warm, mass_hd=self._hd_solve if dense else None,
                               pad_mark=self._pad_mark and self._contact_owner is None, pool=pool)
        if self.options.noslip_iterations > 0:
            noslip.noslip(v)

    def _constrained_substep(self, f, part) -> None:
        """MuJoCo's mj_step order: smooth dynamics (qacc_smooth) → collision → constraint solve →
        integration (docs/semantics.md §R2): Euler / implicitfast solve the constraint problem with M and integrate
        (M + h·D)⁻¹(qfrc_smooth + qfrc_constraint); approximate_implicitfast solves it with M + h·D
        and integrates the solve's acceleration."""
        last = f == self.layout.substeps - 1
        v = self.views[part.index]
        # the integration's M + h·D is factored in the smooth pass too (unless the solve already used it)
        in_solve = self._m_in_solve()
        self._smooth(v, self._hd_solve, v.d.qacc_smooth, dense=not in_solve,
                     hd_int=None if self._approx else self.layout.h)
        if self.collision is not None:
            self._collide(part, export=True)
        self._constraint_rows(part, exported=True, dense_done=True)
        self._solve(v, v.d.qacc_warmstart, dense=in_solve)
        if self.collision is not None and self._wrench_on_since is not None:
            # per-contact wrenches, per-link net contact wrench about the link CoM (world; the
            # substep-start poses the contacts belong to) and Σ h·f over the step's substeps; with one
            # substep and no in-step reader _wrench_sync computes it after the step, when first read
            contact_forces.contact_link_wrench(v, contact_forces.RESTART if f == 0 else contact_forces.ACCUMULATE)
        if last and self._readback_on:       # sensors: the state of the last substep's solve
            readback.rne_post_constraint(v, v.d.qacc_warmstart)
        # total force → (M + h·D)⁻¹ solve from the factor of _smooth (+ gyroscopic re-solve), or the solve's
        # acceleration (approximate_implicitfast) → integrate: one launch (integration.post_solve, the same numbers)
        integration.post_solve(v, last, solve=not self._approx)

    def _wrench_lazy(self) -> bool:
        """Whether the last step ran without the contact + link wrench stage (one substep, no in-step reader)."""
        if self.collision is None or not getattr(self, "has_constraint", False) or self._contact_owner is not None:
            return False
        s = getattr(self, "_wrench_on_since", -1)
        return self._steps_done() > 0 and not (s is not None and self._steps_done() > s)

    def _wrench_sync(self, parts=None) -> None:
        """The contact + link wrench stage of the last step, computed now if the step skipped it: with one
        substep it runs after the solve from the solve's rows and forces, the contacts and the link CoMs of
        the substep start, all untouched until the next step, the kinematics stage (which moves the CoMs to
        the end of the step) or a state write; so every host path that does one of those or reads the
        wrenches calls this first (forward, kinematics, sync_links, state_arrays: reset, checkpoints,
        get_state; the link wrench getter). The same launch as the substep's (RESTART: the impulse sum of a
        one-substep step is h·wrench): the same numbers as a step that ran it."""
        if not self._wrench_lazy():
            return
        done = self._steps_done()
        parts = self.layout.partitions if parts is None else parts
        todo = [p for p in parts if self._wrench_at.get(p.index) != done]
        if not todo:
            return
        if len(todo) == len(self.layout.partitions):
            contact_forces.contact_link_wrench(self.views["all"], contact_forces.RESTART)
        else:
            for p in todo:
                contact_forces.contact_link_wrench(self.views[p.index], contact_forces.RESTART)
        for p in todo:
            self._wrench_at[p.index] = done

    def _wrench_keep_on(self) -> None:
        """Run the wrench stage in every substep from the next step on (request_sensor_data: the readback and
        the sensors read it inside the step); captured graphs lack it: capture again. The step before is still
        synced on demand (_wrench_lazy: the switch counts from the next step)."""
        if getattr(self, "_wrench_on_since", -1) is None:
            self._wrench_on_since = self._steps_done()
            sim = getattr(self.scene, "simulator", None)
            if sim is not None:
                sim.invalidate()

    def _free_substep(self, f, part) -> None:
        """No constraint rows: one (M + h·D) solve and the integration (+ collision detection). With
        the readback on, the last substep solves M⁻¹·qfrc_smooth for it first (MuJoCo's qacc)."""
        v = self.views[part.index]
        last = f == self.layout.substeps - 1
        if last and self._readback_on:
            self._smooth(v, 0.0, v.d.qacc_smooth)
            readback.rne_post_constraint(v, v.d.qacc_smooth)
            factorization.factor_solve(v, self.layout.h, v.d.qfrc_smooth, v.d.qacc)
        else:
            self._smooth(v, self.layout.h, v.d.qacc)
        integration.gyro_resolve(v, v.d.qfrc_smooth)
        integration.integrate(v, last, v.d.qfrc_smooth)
        if self.collision is not None:
            self._collide(part)

    def _substep(self, f, part) -> None:
        if self.has_constraint:
            self._constrained_substep(f, part)
        else:
            self._free_substep(f, part)

    def substep(self, f, part):
        """Fast path (no coupler): the whole substep."""
        self._substep(f, part)

    def substep_pre_coupling(self, f, part):
        """With a coupler: link poses and velocities at the substep start for the RigidView (with
        the contacts ceded to a coupler: the free dynamics and contact Jacobians, contact_handoff.py)."""
        if self._contact_owner is not None:
            contact_handoff.pre_coupling(self, part)
            return
        kinematics.kinematics(self.views[part.index])

    def substep_post_coupling(self, f, part):
        """The dynamics, with the coupler's reaction wrench added (then cleared), and integration
        (the same stages as ``substep``: the kinematics of pre-coupling are recomputed, unchanged)."""
        if self._contact_owner is not None:
            contact_handoff.post_coupling(self, f, part)
            return
        self._substep(f, part)

    def check_after_step(self) -> None:
        """Collision budgets (docs/semantics.md §R3): BudgetExceededError naming budget, env and count; constraint
        row budget: SimulationError naming the env."""
        if self.collision is not None:
            self.collision.check()
        if self.has_constraint:
            ov = self.data.efc_overflow.numpy()
            if ov.any():
                e = int(np.nonzero(ov)[0][0])
                raise SimulationError(f"constraint rows exceed max_rows={self.model.max_rows} in env {e}; raise max_rows")

    # -- forward and kinematics queries ----------------------------------------------------------
    def _steps_done(self) -> int:
        sim = getattr(self.scene, "simulator", None)
        return -1 if sim is None else sim.n_steps

    def forward(self):
        """Kinematics and dynamics (M, bias, forces, qacc = M⁻¹f) at the current state, the contacts
        (when collision detection is on) and, as a fresh query (docs/semantics.md §F1), the constraint forces at
        this state: rows and solve without integrating (``_query_constraint``), readback tagged with
        the query time (solved_at = now) and not stale. The forward() an entity setter or reset runs
        right after writing the state (``_write``) refreshes kinematics and contacts only: the forces stay
        those of the last solve, flagged stale, until the next step or forward(). Nothing the next
        step reads changes (the warm start, the step's impulse sums, qfrc_applied): a trajectory
        continues bit for bit whether or not forward() ran (get_state and checkpoints call it)."""
        import warp as wp

        self._wrench_sync()         # before the kinematics moves the link CoMs it reads
        v = self.views["all"]
        convex_solve.invalidate_labels(self.data)    # a state write or query: relabel the islands
        self._smooth(v, getattr(self, "_hd_solve", 0.0) if getattr(self, "has_constraint", False) else 0.0,
                     self.data.qacc_smooth)
        wp.copy(self.data.qacc, self.data.qacc_smooth)
        if getattr(self, "collision", None) is not None:
            for part in self.layout.partitions:
                self._collide(part)
        self._kin_step = self._steps_done()
        setter = getattr(self, "_written_at", None) == self._kin_step
        self._written_at = None
        if setter or not getattr(self, "has_constraint", False) or self._contact_owner is not None:
            self._forward_at = self._kin_step    # contact forces are those of the last solve: stale
            self._query_at = None
            return
        self._query_constraint()
        self._forward_at = None
        self._query_at = self._kin_step          # contact forces solved at the current state

    def _query_constraint(self) -> None:
        """forward()'s constraint query, per partition, after the smooth stages and collision:
        contacts → rows → solve (cold start from qacc_smooth, so the query depends on the state
        alone) → contact and per-link wrenches (the step's impulse sums are kept) → the readback
        stage once it is on (tagged query_at). The solve writes its result into the warm start
        d.qacc_warmstart (state): saved before and restored after."""
        import warp as wp

        d = self.data
        if getattr(self, "_qacc_keep", None) is None:
            self._qacc_keep = wp.empty_like(d.qacc_warmstart)
        wp.copy(self._qacc_keep, d.qacc_warmstart)
        for part in self.layout.partitions:
            v = self.views[part.index]
            in_solve = self._m_in_solve()       # the convex solve writes the dense M (a scratch block: per env)
            self._constraint_rows(part, dense_done=in_solve)
            self._solve(v, v.d.qacc_smooth, dense=in_solve)
            if self.collision is not None:
                contact_forces.contact_link_wrench(v, contact_forces.NONE)
            if self._readback_on:
                readback.rne_post_constraint(v, v.d.qacc_warmstart)
        if self._readback_on:
            self._readback_query_at = self._steps_done()
        wp.copy(d.qacc_warmstart, self._qacc_keep)

    def kinematics(self):
        self._wrench_sync()
        kinematics.kinematics(self.views["all"])
        self._kin_step = self._steps_done()

    def sync_kinematics(self) -> None:
        """Refresh link poses/velocities if a step ran since they were computed (getters call it)."""
        if getattr(self, "_kin_step", None) != self._steps_done():
            self.kinematics()

    def on_reset(self, envs_idx):
        # state_arrays() ran _wrench_sync before the write; the written impulse sums are the state now
        if getattr(self, "_wrench_at", None) is not None:
            self._wrench_at = {p.index: self._steps_done() for p in self.layout.partitions}
        self._written_at = self._steps_done()    # a state write: refresh only, forces stale (forward)
        self.forward()

    # -- state and checkpoints -------------------------------------------------------------------
    def state_arrays(self):
        if getattr(self, "_wrench_at", None) is not None:
            self._wrench_sync()     # the impulse sums are state: computed before a read or a write
        d = self.data
        out = {k: getattr(d, k) for k in STATE}
        if getattr(self, "collision", None) is not None and self.collision.welds:
            out["weld_active"] = self.collision.weld_active   # switchable per env at run time
        if getattr(self, "has_constraint", False):
            out["constraint_qacc"] = d.qacc_warmstart          # the constraint solve's warm start
            if self.collision is not None:                     # readbacks of the last step
                out["contact_link_impulse_force"] = d.link_impulse_force
                out["contact_link_impulse_torque"] = d.link_impulse_torque
        return out

    def extra_state(self):
        m = self.model
        out = {f"param/{k}": getattr(m, k).numpy() for k in PARAMS}
        if self.has_constraint and self.collision is not None:
            out["param/friction_ratio"] = m.geom_friction_ratio.numpy()
            out["param/geom_friction"] = self.geom_friction0.copy()
            out["param/geom_friction_env"] = m.geom_friction.numpy()
            out["param/geom_sol"] = m.geom_sol.numpy()
        if self.has_constraint:
            for k in ("lim_sol", "dof_sol", "eq_sol"):
                out[f"param/{k}"] = getattr(m, k).numpy()
        return out

    def load_extra_state(self, data):
        m = self.model
        for k in PARAMS:
            key = f"param/{k}"
            if key in data:
                getattr(m, k).assign(np.asarray(data[key]))
        if self.has_constraint and self.collision is not None:
            for key, arr in (("param/friction_ratio", m.geom_friction_ratio), ("param/geom_sol", m.geom_sol),
                             ("param/geom_friction_env", m.geom_friction)):
                if key in data:
                    arr.assign(np.asarray(data[key]))
            if "param/geom_friction" in data:
                self.geom_friction0 = np.asarray(data["param/geom_friction"], float).copy()
        if self.has_constraint:
            for k in ("lim_sol", "dof_sol", "eq_sol"):
                if f"param/{k}" in data:
                    getattr(m, k).assign(np.asarray(data[f"param/{k}"]))
            self._sol_rec = None        # inputs read back as the loaded effective values
        self.forward()

    # -- host helpers used by the entities -----------------------------------------------------
    def articulated_arrays(self) -> dict:
        """The arrays of the entities' q, dof, link and base getters and setters (polyphys.articulated)."""
        d = self.data
        return {"qpos": d.qpos, "qvel": d.qvel, "link_pos": d.link_pos, "link_quat": d.link_quat,
                "link_vel": d.link_vel, "link_ang": d.link_ang, "link_com": d.link_xipos, "root_pos": d.root_pos,
                "root_quat": d.root_quat}

    def _write(self, arr, envs: np.ndarray, cols, values: np.ndarray) -> None:
        """arr[envs, cols] = values (host round trip; outside the step). A write of the state or the
        link parameters marks the forward() that the entity setter runs next as its refresh (forces
        stale, no solve; see forward)."""
        d, m = self.data, self.model
        if any(arr is a for a in (d.qpos, d.qvel, d.root_pos, d.root_quat)) or any(
                arr is getattr(m, k) for k in PARAMS):
            self._written_at = self._steps_done()
        host = arr.numpy()
        cols = np.arange(host.shape[1])[cols] if isinstance(cols, slice) else np.asarray(cols)
        host[envs[:, None], cols[None, :]] = values
        arr.assign(host)

    def mass_matrix(self, dofs: slice | None = None, envs: np.ndarray | None = None) -> np.ndarray:
        """Dense mass matrix (armature included) of the last forward/step: (n_envs, n, n) for the
        dof range ``dofs`` (default all; M is block-diagonal across entities) and ``envs``."""
        hm = self.hm
        dofs = slice(0, self.n_dofs) if dofs is None else dofs
        envs = np.arange(self.layout.n_envs) if envs is None else np.asarray(envs)
        n = dofs.stop - dofs.start
        rows, cols = hm.m_rows, hm.m_cols
        sel = (rows >= dofs.start) & (rows < dofs.stop)
        out = np.zeros((len(envs), n, n))
        vals = self.data.mass.numpy()[envs][:, :len(rows)][:, sel].astype(float)
        r, c = rows[sel] - dofs.start, cols[sel] - dofs.start
        out[:, r, c] = vals
        out[:, c, r] = vals
        return out

    def _check_masses(self) -> None:
        if self.n_dofs == 0:
            return
        diag = self.data.mass.numpy()[:, self.hm.dof_madr]
        bad = np.argwhere(~(diag > 1e-12 * max(1.0, float(np.abs(diag).max()))))
        if bad.size:
            env, dof = bad[0]
            jn = self.hm.dof_joint[dof]
            raise BuildError(f"zero-mass moving body: dof {dof} (joint {jn}) has mass-matrix diagonal "
                             f"{diag[env, dof]:.3g} in env {env}; give the links it moves mass and "
                             f"inertia (or armature)")

    # -- contacts and contact parameters (contacts.py, parameters.py) -----------------------------
    def get_raw_contacts(self, envs_idx=None) -> dict:
        """The contact set of the last substep (or forward) before any force, batch axis first:
        geom_a, geom_b, link_a, link_b (global indices, -1: world) (n, K) int; position (n, K, 3)
        (world, midway between the surfaces); normal (n, K, 3) (unit, from B to A); penetration
        (n, K) (> 0 when overlapping); valid (n, K) bool (slot k < the env's contact count); active
        (n, K) bool (a constraint row: False in MuJoCo 4's gap band, docs/semantics.md §F2); count (n,). K = the
        max_contacts budget (0 when collision detection is off). An unbatched
        scene drops the batch axis."""
        envs = self.scene._envs_idx(envs_idx)
        out = contacts.raw_contacts(self, envs)
        if not self.scene.batched:
            return {k: v[0] for k, v in out.items()}
        return out

    def _raw_contacts(self, envs: np.ndarray) -> dict:
        return contacts.raw_contacts(self, envs)

    def _contact_forces(self, envs: np.ndarray) -> dict:
        return contacts.contact_forces_host(self, envs)

    def _link_contact_wrench(self, envs: np.ndarray) -> dict:
        return contacts.link_contact_wrench_host(self, envs)

    def set_friction(self, friction, geoms_idx=None, envs_idx=None) -> None:
        """Sliding friction of geoms (global indices), each in [0.01, 5] (docs/semantics.md §R5; OptionError naming
        the value and the range otherwise). envs_idx=None writes every env (and the model value);
        with envs_idx only those envs (domain randomisation): friction broadcastable to
        (len(envs), len(geoms)). Contacts mix per env: μ = max(μ_A·s_A, μ_B·s_B, 0.01). Contacts of an
        explicit MJCF <pair> use the pair's own friction instead."""
        parameters.set_friction(self, friction, geoms_idx, envs_idx)

    def get_friction(self, geoms_idx=None, envs_idx=None) -> np.ndarray:
        """Per-env geom friction (sliding, torsional, rolling): (n_envs, len(geoms), 3); an unbatched
        scene drops the batch axis."""
        return parameters.get_friction(self, geoms_idx, envs_idx)

    def set_friction_ratio(self, ratio, geoms_idx=None, envs_idx=None) -> None:
        """Per-env friction scale of geoms (domain randomisation, docs/semantics.md §R5: μ = max(μ_A·s_A, μ_B·s_B,
        0.01)); ratio broadcastable to (len(envs), len(geoms)), > 0. Default mode only (MuJoCo-
        compatible mode mixes as MuJoCo, without ratios)."""
        parameters.set_friction_ratio(self, ratio, geoms_idx, envs_idx)

    def set_pair_friction(self, friction, pairs_idx=None, envs_idx=None) -> None:
        """Friction of explicit contact pairs (MJCF ``<contact><pair>``, in entity order): the 5
        coefficients (sliding, sliding, torsional, rolling, rolling), broadcastable to (len(envs),
        len(pairs), 5); sliding in [0.01, 5] (docs/semantics.md §R5), the others >= 0. envs_idx=None: every env.
        A pair's contacts use it times the larger friction_ratio of its two geoms (default mode)."""
        parameters.set_pair_friction(self, friction, pairs_idx, envs_idx)

    def get_pair_friction(self, pairs_idx=None, envs_idx=None) -> np.ndarray:
        """Per-env friction of explicit contact pairs: (n_envs, len(pairs), 5); unbatched: no batch axis."""
        return parameters.get_pair_friction(self, pairs_idx, envs_idx)

    def set_sol_params(self, sol_params, geoms_idx=None, joints_idx=None, eqs_idx=None, envs_idx=None) -> None:
        """sol_params (timeconst, dampratio, dmin, dmax, width, mid, power) of one kind per call
        (docs/semantics.md §R6; OptionError for two kinds):

        - geoms_idx (global geom indices; the default when no kind is given: all geoms): contact
          params, shared by all envs (envs_idx is an error), mixed per contact by docs/semantics.md §R5;
        - joints_idx (global joint indices): the joint's limit rows and its dofs' frictionloss rows,
          per env (envs_idx); timeconst floored at 2h;
        - eqs_idx (global equality indices): per env (envs_idx); timeconst floored at 2h.

        Out-of-range values are clamped with a PolyphysWarning naming the field and the effective
        value: dmin/dmax/mid to [1e-4, 0.9999], width >= 0, power >= 1, dampratio <= 0 and a
        negative timeconst → default (MuJoCo-compatible mode keeps MuJoCo's direct (negative,
        negative) form). ``get_sol_params`` returns both the input and the effective values."""
        parameters.set_sol_params(self, sol_params, geoms_idx, joints_idx, eqs_idx, envs_idx)

    def get_sol_params(self, geoms_idx=None, joints_idx=None, eqs_idx=None, envs_idx=None) -> dict:
        """{"input": ..., "effective": ...} sol_params of one kind (as set_sol_params): geoms (k, 7);
        joints and equalities (n_envs, k, 7) (no batch axis unbatched). input: the last value
        given (the model's value before any call); effective: after legalization and, for joints
        and equalities, the 2h timeconst floor (contacts then mix geoms by docs/semantics.md §R5)."""
        return parameters.get_sol_params(self, geoms_idx, joints_idx, eqs_idx, envs_idx)

    # -- constraint rows and forces ------------------------------------------------------------------
    def get_constraint_forces(self, envs_idx=None) -> dict:
        """The rows of the last constraint solve (a step's last substep, or forward()'s query) and
        their forces, batch axis first (docs/semantics.md §F1; no batch axis unbatched). R = the row budget:

        - ``count`` (n,): rows built; ``valid`` (n, R): row < count;
        - ``type`` (n, R) int: ``ConstraintType`` (polyphys.plugins.rigid.codes: EQUALITY,
          FRICTION (dof frictionloss), LIMIT, CONTACT_FRICTIONLESS, CONTACT_PYRAMIDAL,
          CONTACT_ELLIPTIC), −1 beyond count;
        - ``object`` (n, R) int: what the row belongs to — the global equality index, dof index,
          limited joint's global index or contact slot (as ``get_raw_contacts``), −1 beyond count;
        - ``contact`` (n, R) int: the contact slot of a contact row, else −1;
        - ``force`` (n, R): the row force (N or N·m; a pyramidal row holds one pyramid edge;
          elliptic rows the normal, then the friction components in the contact frame);
        - ``state`` (n, R) int: ``EfcState`` (0 inactive, 1 quadratic, 2 cone middle zone);
        - ``qfrc_constraint`` (n, nv): Jᵀ·force, the generalized constraint force (N or N·m).
        A scene without a constraint solve has R = 0 and zero qfrc_constraint."""
        from .codes import ConstraintType

        envs = self.scene._envs_idx(envs_idx)
        n = len(envs)
        if not self.has_constraint:
            z = np.zeros((n, 0), np.int32)
            out = dict(count=np.zeros(n, np.int32), valid=np.zeros((n, 0), bool), type=z, object=z.copy(),
                       contact=z.copy(), force=np.zeros((n, 0)), state=z.copy(), qfrc_constraint=np.zeros((n, self.n_dofs)))
        else:
            d = self.data
            cnt = d.nefc.numpy()[envs].astype(np.int32)
            R = d.efc_type.shape[1]
            valid = np.arange(R)[None, :] < cnt[:, None]
            off = d.efc_off.numpy()
            rows = lambda a: pool_rows_host(a.numpy(), off)[envs]      # noqa: E731 (each env's rows, row pool)
            tp = np.where(valid, rows(d.efc_type), -1).astype(np.int32)
            ident = rows(d.efc_id)
            lim_joint = np.append(self.hm.lim_joint, -1)
            obj = np.where(tp == ConstraintType.LIMIT, lim_joint[np.clip(ident, 0, len(lim_joint) - 1)], ident)
            obj = np.where(valid, obj, -1).astype(np.int32)
            is_con = valid & (tp >= ConstraintType.CONTACT_FRICTIONLESS)
            out = dict(count=cnt, valid=valid, type=tp, object=obj,
                       contact=np.where(is_con, ident, -1).astype(np.int32),
                       force=np.where(valid, rows(d.efc_force).astype(float), 0.0),
                       state=np.where(valid, rows(d.efc_state), 0).astype(np.int32),
                       qfrc_constraint=d.qfrc_constraint.numpy()[envs][:, :self.n_dofs].astype(float))
        return out if self.scene.batched else {k: v[0] for k, v in out.items()}

    def get_islands(self, envs_idx=None) -> dict:
        """The constraint islands of the last convex solve (docs/semantics.md §R8; MuJoCo's nisland,
        dof_island, solver_niter per island), batch axis first (none unbatched):

        - ``enabled`` (bool): the solve runs island by island (``RigidOptions.constraint_islands``, the
          convex resolution and no noslip); when False the counts are 0 and ``dof_island`` is −1;
        - ``count`` (n,) int: islands of the last solve (0: no constraint rows);
        - ``niter`` (n, n_dofs) int: Newton/CG iterations each island took (entries ≥ count are 0);
        - ``dof_island`` (n, n_dofs) int: the island of each dof, −1 for a dof in none (it takes the
          unconstrained acceleration).
        Islands are numbered in the order of their lowest dof."""
        envs = self.scene._envs_idx(envs_idx)
        n, nd = len(envs), self.n_dofs
        on = bool(self.has_constraint and self.hm.options.effective_islands())
        if not on:
            out = dict(count=np.zeros(n, np.int32), niter=np.zeros((n, nd), np.int32),
                       dof_island=np.full((n, nd), -1, np.int32))
        else:
            d = self.data
            cnt = d.nisland.numpy()[envs].astype(np.int32)
            out = dict(count=cnt, niter=d.island_niter.numpy()[envs][:, :nd].astype(np.int32),
                       dof_island=np.where(cnt[:, None] > 0, d.dof_island.numpy()[envs][:, :nd], -1).astype(np.int32))
        res = out if self.scene.batched else {k: v[0] for k, v in out.items()}
        res["enabled"] = on
        return res

    # -- RigidView (couplers) --------------------------------------------------------------------
    accepts_reaction = True

    def rigid_geoms(self) -> RigidGeoms:
        """Collision geoms with an analytic SDF, mesh geoms with their triangles (the coupler
        builds grid SDFs from them) and heightfield geoms with their heights (``hfield_heights``),
        their link (global index) and coupling fields."""
        if getattr(self, "_geoms", None) is None:
            self._geoms = pack_rigid_geoms(self.entities, self.layout.precision, self.layout.device)
        return self._geoms

    def rigid_links(self, part) -> RigidLinks:
        """Per-partition link frames, CoM, CoM linear velocity and angular velocity (world), and the
        coupling buffer (force at the CoM, torque about it, world) applied in post-coupling."""
        return self._links[part.index]

    # -- RigidDynamicsView (a coupler's own contact solve: SAP, docs/sap.md) -------------------------
    _contact_owner = None       # the coupler that solves this solver's contacts (cede_contacts)
    _pad_mark = True            # convex_solve.solve(pad_mark=): False pads the whole row budget (in-process A/B)
    _dyn = None                 # per partition: the RigidDynamics handed to it

    def cede_contacts(self, owner: str) -> None:
        """Hand the contacts to coupler ``owner``: from now on every substep computes free dynamics
        and contact Jacobians in pre-coupling and integrates with the coupler's contact force in
        post-coupling (contact_handoff.py); CapabilityError for a model it cannot hand over."""
        contact_handoff.cede(self, owner)

    def rigid_dynamics(self, part):
        """The RigidDynamics arrays of ``part`` (valid between pre- and post-coupling); None for a solver
        without dofs (its geoms are static: ``cede_contacts`` handed nothing over)."""
        return None if self._dyn is None else self._dyn[part.index]

    def handoff_kernel_modules(self, layout):
        """The module the hand-off stages launch beyond ``kernel_modules(layout)``: the contact Jacobian
        kernels (kernels/contact_handoff.py), in the scene's precision; called by the coupler that will
        take the contacts, before build; and the kinematics, bias and actuation modules, which the hand-off
        launches one by one (the solver's own pass runs them inside factorization.smooth). The other hand-off
        stages launch the factorization, collision,
        constraint-row, contact-force and readback modules, which ``kernel_modules`` declares for a scene
        with collision (``cede_contacts`` refuses one without)."""
        from .kernels import actuation as k_actuation
        from .kernels import bias as k_bias
        from .kernels import contact_handoff as k_handoff
        from .kernels import kinematics as k_kinematics

        mods = [k_handoff, k_kinematics, k_bias, k_actuation]     # the hand-off launches the smooth stages one by one
        declare_overloads(mods, layout.precision)
        return mods

    # -- RenderView (cameras and ray sensors, docs/cameras.md) --------------------------------------
    def render_geoms(self):
        """Every geom (visual and collision) with its colour, for cameras and ray sensors."""
        from polyphys.raycast.geoms import render_geoms_of

        return render_geoms_of(self.entities, [e.link_start for e in self.entities])

    def sync_links(self, part) -> None:
        """Link frames of the end-of-step state for ``rigid_links(part)`` (inside the step they are
        those of the last substep's start): the kinematics stage from qpos, launches only. Nothing the
        next step reads changes (its first stage recomputes them; the getters run the same refresh,
        ``sync_kinematics``). The wrench stage of the last step runs first when it was skipped (_wrench_sync;
        never inside a step: a scene with in-step sensors runs it in every substep)."""
        self._wrench_sync([part])
        kinematics.kinematics(self.views[part.index])
