"""SapCoupler: the SAP contact solve of docs/sap.md between a rigid solver's pre- and post-coupling.

At build the coupler takes the contacts of every rigid solver it couples with itself
(``RigidDynamicsView.cede_contacts``): that solver then computes only the free dynamics, the dense
M + h·D and the contact Jacobians in pre-coupling. ``couple(f, part)`` launches, per rigid solver,
the per-contact parameters (kernels/sap.py ``contact_params``) and the per-env SAP solve
(``sap_solve``: one thread per env, the Newton loop with the per-env stopping rule inside, so envs
stop independently and nothing syncs with the host), which writes the generalized contact force
that post-coupling integrates with and the row forces the rigid solver's contact readback reports.
After a step, envs that hit ``max_iterations`` in any substep are reported (``on_iteration_cap``).

Rigid–FEM contact (docs/sap.md): a deformable solver exposing ``DeformableDynamicsView`` paired with
a rigid solver adds, per substep, its boundary vertices' point contacts with the rigid geoms
(kernels/fem.py: count, scan, fill, point Jacobians) to the same per-env problem, whose vertex
unknowns the solve eliminates by Schur complement; the solved vertex velocities go back into the
deformable solver's velocity array before its post-coupling integrates the positions.
"""

from __future__ import annotations

import math
import warnings
from types import SimpleNamespace

import numpy as np
import warp as wp
from polyphys.arrays import env_slice
from polyphys.description import GeomType
from polyphys.errors import BudgetExceededError, CapabilityError, OptionError, PolyphysWarning, SimulationError
from polyphys.geometry import SDF_SUPPORTED
from polyphys.interfaces import Coupler
from polyphys.sdf_grid import build_sdf_grids, empty_sdf_grids, pack_height_fields
from polyphys.views import DeformableDynamicsView, HeightFields, RigidDynamicsView, SdfGrids, SurfaceMeshView

from .kernels import fem as KF
from .kernels import sap as K
from .options import SapOptions

STATE = ("warm_v", "warm_ok")
FEM_STATE = ("warm_u", "warm_u_ok")
F = wp.float64


class SapCoupler(Coupler):
    options_type = SapOptions

    def kernel_modules(self, layout):
        """The SAP kernels (kernels/sap.py) and, per rigid solver this coupler takes the contacts of, its
        hand-off module (``RigidDynamicsView.handoff_kernel_modules``), with the overloads of the scene's
        precision: compiled with the rest before build (docs/running.md, "First run")."""
        K.declare_overloads(layout.precision)
        mods = [K]
        if any(b.view(DeformableDynamicsView) is not None for _, b in self.pairs):
            KF.declare_overloads(layout.precision)      # the rigid–FEM contact kernels
            mods.append(KF)
        for a, b in self.pairs:
            for s in {a.name: a, b.name: b}.values():
                rigid = s.view(RigidDynamicsView)
                if rigid is not None:
                    mods += [m for m in rigid.handoff_kernel_modules(layout) if m not in mods]
        return mods

    def build(self, layout):
        self.layout = layout
        K.declare_overloads(layout.precision)     # also when kernel_modules was not called: compiles nothing
        KF.declare_overloads(layout.precision)
        self._rigid = {}
        deformable = [s for s in self.scene.solvers if s.view(DeformableDynamicsView) is not None]
        for s in self.scene.solvers:
            if s.view(SurfaceMeshView) is not None and s.view(DeformableDynamicsView) is None:
                raise CapabilityError("sap", "deformable contact (SurfaceMeshView)",
                                      f"solver {s.name!r} exposes a surface mesh (cloth) but not DeformableDynamicsView: "
                                      f"the SAP coupler solves rigid–FEM contact through that view only, so its "
                                      f"bodies would pass through the rigid ones; docs/sap.md lists what is supported")
        if len(deformable) > 1:
            raise CapabilityError("sap", "FEM–FEM contact",
                                  f"solvers {[s.name for s in deformable]}: the SAP coupler solves rigid–FEM point "
                                  f"contact only; contact between deformable bodies is not implemented (docs/sap.md)")
        fem_pairs = []
        for a, b in self.pairs:
            if b.view(DeformableDynamicsView) is not None and b.view(RigidDynamicsView) is None:
                fem_pairs.append((a, b))
                continue
            if a is not b:
                raise CapabilityError("sap", "contact between two solvers",
                                      f"{a.name!r} and {b.name!r}: the SAP coupler solves the contacts of one "
                                      f"rigid solver with itself and with a deformable (FEM) solver; two rigid "
                                      f"solvers are not paired (docs/sap.md)")
        for a, _ in self.pairs:
            if a.name not in self._rigid:
                self._rigid[a.name] = self._build_rigid(a.view(RigidDynamicsView), layout)
        if not self._rigid:
            raise OptionError("SAP coupler: no rigid solver exposing RigidDynamicsView in the scene")
        if len({b.name for _, b in fem_pairs}) != len(fem_pairs):
            raise CapabilityError("sap", "one deformable solver against two rigid solvers",
                                  f"pairs {[(a.name, b.name) for a, b in fem_pairs]}: the SAP coupler solves a "
                                  f"deformable solver's contacts with one rigid solver (docs/sap.md)")
        for a, b in fem_pairs:
            self._build_fem(self._rigid[a.name], b.view(DeformableDynamicsView), layout)
            _warn_geoms_between_vertices(a.name, self._rigid[a.name].rigid.rigid_geoms(), b, layout)

    def _build_rigid(self, rigid, layout):
        o = self.options
        rigid.cede_contacts(self.name)
        p0 = layout.partitions[0]
        dyn = rigid.rigid_dynamics(p0)
        if dyn is None:
            dyn = self._no_dofs(layout.n_envs, layout)
        nv = dyn.qvel.shape[1]
        K_ = dyn.dist.shape[1]
        # the rigid solver's limit/frictionloss/equality rows (docs/sap.md, "Which rows SAP takes over")
        NR = dyn.jac.shape[1] if getattr(dyn, "row_type", None) is not None else 0
        n_geoms = dyn.geom_friction.shape[1]
        n, dev = layout.n_envs, layout.device
        geom_k = np.full(n_geoms, float(o.point_stiffness))
        geom_tau = np.full(n_geoms, float(o.dissipation_time_constant))
        for what, table, arr in (("geom_point_stiffness", o.geom_point_stiffness, geom_k),
                                 ("geom_dissipation_time_constant", o.geom_dissipation_time_constant, geom_tau)):
            for g, x in (table.items() if rigid.rigid_dynamics(p0) is not None else ()):   # no dofs: no rigid pairs
                if g >= n_geoms:
                    raise OptionError(f"SapOptions.{what}: geom {g} does not exist in rigid solver "
                                      f"{rigid.name!r} (it has {n_geoms} geoms, 0..{n_geoms - 1})")
                arr[g] = float(x)
        f64 = wp.float64

        def z(shape, dtype=f64):
            return wp.zeros(shape, dtype=dtype, device=dev)

        b = SimpleNamespace(
            rigid=rigid, nv=nv, K=K_, n_geoms=n_geoms,
            geom_k=wp.array(geom_k, dtype=f64, device=dev), geom_tau=wp.array(geom_tau, dtype=f64, device=dev),
            k=z((n, K_)), tau=z((n, K_)), mu=z((n, K_)),
            warm_v=z((n, nv)), warm_ok=z(n, wp.int32),
            lo_A=z((n, nv), wp.int32), hi_A=z((n, nv), wp.int32), lo_H=z((n, nv), wp.int32),
            LA=z((n, nv, nv)), H=z((n, nv, nv)), Z=z((n, 3, nv)), cols=z((n, K_, nv), wp.int32),
            ncols=z((n, K_), wp.int32), v=z((n, nv)), vs=z((n, nv)), dv=z((n, nv)), grad=z((n, nv)),
            tmp=z((n, nv)), vc=z((n, K_), wp.vec3d), dvc=z((n, K_), wp.vec3d), gam=z((n, K_), wp.vec3d),
            rn=z((n, K_)), rt=z((n, K_)), vhat=z((n, K_)),
            rfirst=z((n, NR), wp.int32), rlast=z((n, NR), wp.int32), rR=z((n, NR)), rvhat=z((n, NR)), rlo=z((n, NR)),
            rhi=z((n, NR)), rvc=z((n, NR)), rdvc=z((n, NR)), rgam=z((n, NR)),
            gamma=z((n, K_), wp.vec3d), iterations=z(n, wp.int32), converged=z(n, wp.int32),
            cost=z((n, o.max_iterations + 1)), residual=z(n), residual_history=z((n, o.max_iterations + 1)),
            iterations_step=z(n, wp.int32), cap_hits_step=z(n, wp.int32))
        b.parts = {}
        b.fem = None
        b.NR = NR
        b.dof = rigid.rigid_dynamics(p0) is not None
        s_ = wp.float64 if layout.precision == "64" else wp.float32
        for part in layout.partitions:
            s, t = part.start, part.stop
            d_ = rigid.rigid_dynamics(part) if b.dof else None
            if NR:
                rows = SimpleNamespace(n_rows=d_.n_rows, row_type=d_.row_type, row_pos=d_.row_pos,
                                       row_frictionloss=d_.row_frictionloss)
            else:
                # no rows handed over: row0 stays 0 and the row inputs are empty
                m_ = part.n_envs
                rows = SimpleNamespace(
                    n_rows=(d_.n_rows if d_ is not None and d_.n_rows is not None
                            else wp.zeros(m_, dtype=wp.int32, device=dev)),
                    row_type=wp.zeros((m_, 0), dtype=wp.int32, device=dev),
                    row_pos=wp.zeros((m_, 0), dtype=s_, device=dev),
                    row_frictionloss=wp.zeros((m_, 0), dtype=s_, device=dev))
            b.parts[part.index] = SimpleNamespace(rows=rows,
                dyn=rigid.rigid_dynamics(part) if b.dof else self._no_dofs(part.n_envs, layout),
                **{k: env_slice(getattr(b, k), s, t) for k in (
                    "k", "tau", "mu", "warm_v", "warm_ok", "lo_A", "hi_A", "lo_H", "LA", "H", "Z", "cols", "ncols",
                    "v", "vs", "dv", "grad",
                    "tmp", "vc", "dvc", "gam", "rn", "rt", "vhat", "rfirst", "rlast", "rR", "rvhat", "rlo", "rhi", "rvc",
                    "rdvc", "rgam", "gamma", "iterations", "converged", "cost",
                    "residual", "residual_history", "iterations_step", "cap_hits_step")})
        return b

    @staticmethod
    def _no_dofs(n, layout):
        """Empty RigidDynamics-like arrays of a rigid solver without dofs (only static geoms)."""
        s = wp.float64 if layout.precision == "64" else wp.float32
        dev = layout.device
        return SimpleNamespace(
            qvel=wp.zeros((n, 0), dtype=s, device=dev), qacc_free=wp.zeros((n, 0), dtype=s, device=dev),
            mass=wp.zeros((n, 0, 0), dtype=s, device=dev), n_contacts=wp.zeros(n, dtype=wp.int32, device=dev),
            dist=wp.zeros((n, 0), dtype=s, device=dev), jac=wp.zeros((n, 0, 0), dtype=s, device=dev),
            geom_friction=wp.zeros((n, 0, 3), dtype=s, device=dev),
            qfrc_contact=wp.zeros((n, 0), dtype=s, device=dev), contact_force=wp.zeros((n, 0), dtype=s, device=dev),
            pos=None, frame=None, geom=None, link=None, condim=None, friction=None, geom_friction_ratio=None,
            dof_parent=None, link_dof_last=None, cdof_w=None, cdof_v=None, dof_ref=None)

    def _build_fem(self, b, fem, layout):
        """Buffers of the rigid–FEM contacts of rigid solver ``b`` with deformable solver ``fem``."""
        o = self.options
        geoms = b.rigid.rigid_geoms()
        types = geoms.type.numpy()
        grids, hfields = self._geom_sdfs(b.rigid.name, geoms, layout.device)
        p0 = layout.partitions[0]
        dd = fem.deformable_dynamics(p0)
        if int(dd.body.numpy().max(initial=0)) > 0:
            raise CapabilityError("sap", "FEM–FEM contact",
                                  f"deformable solver {fem.name!r} holds several bodies: the SAP coupler solves "
                                  f"rigid–FEM point contact only, so they would pass through each other (no FEM–FEM "
                                  f"or self-contact, docs/sap.md); put one FEM body in a scene with SAP")
        n, dev, nv = layout.n_envs, layout.device, b.nv
        n_surf = dd.surface.shape[0]
        n_nodes = dd.vel.shape[1]
        cap = o.fem_max_contacts or max(1, n_surf)
        f64 = wp.float64

        def z(shape, dtype=f64):
            return wp.zeros(shape, dtype=dtype, device=dev)

        # the geom side of each rigid–FEM pair: point_stiffness / dissipation_time_constant, or the
        # per-geom tables' value for the geom's collision index (RigidGeoms.geom_index)
        gk = np.full(len(types), float(o.point_stiffness))
        gt = np.full(len(types), float(o.dissipation_time_constant))
        index = tuple(geoms.geom_index)
        if len(index) == len(types):
            for row, g in enumerate(index):
                gk[row] = float(o.geom_point_stiffness.get(g, gk[row]))
                gt[row] = float(o.geom_dissipation_time_constant.get(g, gt[row]))
        fb = SimpleNamespace(
            solver=fem, geoms=geoms, grids=grids, hfields=hfields, cap=cap, n_surf=n_surf, geom_mu=geoms.coup_friction,
            geom_k=wp.array(gk, dtype=f64, device=dev), geom_tau=wp.array(gt, dtype=f64, device=dev),
            count=z((n, n_surf), wp.int32), off_c=z((n, n_surf), wp.int32), off_v=z((n, n_surf), wp.int32),
            n_contacts=z(n, wp.int32), n_verts=z(n, wp.int32), overflow=z(n, wp.int32), overflow_step=z(n, wp.int32),
            vslot=z((n, cap), wp.int32), geom=z((n, cap), wp.int32), link=z((n, cap), wp.int32), dist=z((n, cap)),
            pos=z((n, cap), wp.vec3d), frame=z((n, cap), wp.mat33d), k=z((n, cap)), tau=z((n, cap)), mu=z((n, cap)),
            vindex=z((n, cap), wp.int32), vfirst=z((n, cap), wp.int32), vcount=z((n, cap), wp.int32),
            vmass=z((n, cap)), vminv=z((n, cap)), vus=z((n, cap), wp.vec3d),
            jac=z((n, 3 * cap, nv)), warm_u=z((n, n_nodes), wp.vec3d), warm_u_ok=z((n, n_nodes), wp.int32),
            cols=z((n, cap, nv), wp.int32), ncols=z((n, cap), wp.int32), rn=z((n, cap)), rt=z((n, cap)),
            vhat=z((n, cap)), vc=z((n, cap), wp.vec3d), dvc=z((n, cap), wp.vec3d), G=z((n, cap), wp.mat33d),
            vg=z((n, cap), wp.vec3d), vdu=z((n, cap), wp.vec3d), vHinv=z((n, cap), wp.mat33d),
            gamma=z((n, cap), wp.vec3d), vu=z((n, cap), wp.vec3d))
        keys = [k for k, a in vars(fb).items() if isinstance(a, wp.array) and k not in ("geom_mu", "geom_k", "geom_tau")]
        fb.parts = {}
        for part in layout.partitions:
            fb.parts[part.index] = SimpleNamespace(
                dd=fem.deformable_dynamics(part), links=b.rigid.rigid_links(part),
                **{k: env_slice(getattr(fb, k), part.start, part.stop) for k in keys})
        b.fem = fb
        return fb

    def _geom_sdfs(self, rigid_name, geoms, device):
        """The SDFs of the rigid geoms without an analytic one (docs/sap.md, "Rigid–FEM contact"): per
        mesh geom a grid SDF in its frame built now from the triangles ``RigidGeoms.meshes`` lists
        (polyphys.sdf_grid; ``sdf_grid_res`` / ``sdf_grid_spacing``, reaching ``fem_contact_margin``
        and at least two cells beyond the mesh bounds, so every vertex closer than the margin lies
        inside it), or the solver's ready ``RigidGeoms.sdf_grids``; the heightfield geoms packed with
        a closest-point reach of ``fem_contact_margin`` (at least one cell). A mesh geom without
        triangles or a heightfield without heights cannot be queried: CapabilityError naming it."""
        o = self.options
        types = geoms.type.numpy()
        n_geoms = len(types)
        meshes = list(geoms.meshes) + [None] * (n_geoms - len(geoms.meshes))
        hf = list(geoms.hfields) + [None] * (n_geoms - len(geoms.hfields))
        for g, t in enumerate(types):
            t = int(t)
            if t in SDF_SUPPORTED:
                continue
            if t == GeomType.MESH:
                if geoms.sdf_grids is None and meshes[g] is None:
                    raise CapabilityError("sap", "rigid–FEM contact with a mesh geom without triangles",
                                          f"rigid solver {rigid_name!r}, geom {g} (RigidGeoms row): a mesh geom "
                                          f"whose solver lists neither its triangles (RigidGeoms.meshes) nor a "
                                          f"grid SDF (RigidGeoms.sdf_grids); FEM vertices would pass through it "
                                          f"(docs/sap.md)")
            elif t == GeomType.HFIELD:
                if hf[g] is None:
                    raise CapabilityError("sap", "rigid–FEM contact with a heightfield without heights",
                                          f"rigid solver {rigid_name!r}, geom {g} (RigidGeoms row): a heightfield "
                                          f"geom without elevation data (RigidGeoms.hfields); FEM vertices would "
                                          f"pass through it (docs/sap.md)")
            else:
                raise CapabilityError("sap", "rigid–FEM contact with this geom type",
                                      f"rigid solver {rigid_name!r}, geom {g} (RigidGeoms row, type code {t}): "
                                      f"no signed distance for it (docs/sap.md)")
        if geoms.sdf_grids is not None:
            grids = geoms.sdf_grids
            if grids.geom.shape[0] != n_geoms:
                raise OptionError(f"rigid solver {rigid_name!r}: rigid_geoms().sdf_grids.geom has "
                                  f"{grids.geom.shape[0]} entries; expected one per geom ({n_geoms})")
            gi = grids.geom.numpy()
            missing = [g for g in range(n_geoms) if int(types[g]) == GeomType.MESH and int(gi[g]) < 0]
            if missing:
                raise CapabilityError("sap", "rigid–FEM contact with a mesh geom without a grid",
                                      f"rigid solver {rigid_name!r}, geom(s) {missing}: the solver's "
                                      f"RigidGeoms.sdf_grids has no grid for them (geom = -1) (docs/sap.md)")
        else:
            want = [m if int(types[g]) == GeomType.MESH else None for g, m in enumerate(meshes)]
            if any(m is not None for m in want):
                grids = build_sdf_grids(want, spacing=o.sdf_grid_spacing, res=o.sdf_grid_res,
                                        band=float(o.fem_contact_margin), device=device)
            else:
                grids = empty_sdf_grids(n_geoms, device)
        hfields = pack_height_fields([x if int(types[g]) == GeomType.HFIELD else None for g, x in enumerate(hf)],
                                     reach=float(o.fem_contact_margin), device=device)
        return grids, hfields

    def _empty_fem(self, n):
        """Zero-size rigid–FEM inputs of the solve (a rigid solver without a deformable partner)."""
        key = ("empty_fem", n)
        got = getattr(self, "_empty", {}).get(key)
        if got is not None:
            return got
        dev = self.layout.device
        i1 = wp.zeros(n, dtype=wp.int32, device=dev)
        i2, f2 = wp.zeros((n, 0), dtype=wp.int32, device=dev), wp.zeros((n, 0), dtype=wp.float64, device=dev)
        v2, m2 = wp.zeros((n, 0), dtype=wp.vec3d, device=dev), wp.zeros((n, 0), dtype=wp.mat33d, device=dev)
        f3, i3 = wp.zeros((n, 0, 0), dtype=wp.float64, device=dev), wp.zeros((n, 0, 0), dtype=wp.int32, device=dev)
        got = SimpleNamespace(n_contacts=i1, n_verts=i1, vslot=i2, dist=f2, frame=m2, jac=f3, k=f2, tau=f2, mu=f2,
                              vindex=i2, vfirst=i2, vcount=i2, vmass=f2, vminv=f2, vus=v2, warm_u=v2, warm_u_ok=i2,
                              cols=i3, ncols=i2, rn=f2, rt=f2, vhat=f2, vc=v2, dvc=v2, G=m2, vg=v2, vdu=v2, vHinv=m2,
                              gamma=v2, vu=v2)
        if not hasattr(self, "_empty"):
            self._empty = {}
        self._empty[key] = got
        return got

    def _fem_detect(self, f, b, part):
        """Contacts of the substep: count, scan, fill, point Jacobians (launches only)."""
        o, fb, dev = self.options, b.fem, self.layout.device
        q = fb.parts[part.index]
        dd, lk, g = q.dd, q.links, fb.geoms
        n = part.n_envs
        gr, hf = fb.grids, fb.hfields
        sdfs = (gr.geom, gr.values, gr.origin, gr.spacing, gr.dims, gr.offset,
                hf.geom, hf.heights, hf.shape, hf.extent, hf.offset, hf.reach)
        if f == 0:
            q.overflow_step.zero_()
        wp.launch(KF.count_contacts, dim=(n, fb.n_surf),
                  inputs=[F(o.fem_contact_margin), dd.surface, g.link, g.type, g.size, g.pos, g.quat, *sdfs,
                          lk.pos, lk.quat, dd.pos0], outputs=[q.count, q.warm_u_ok], device=dev)
        wp.launch(KF.scan_contacts, dim=n, inputs=[fb.cap, q.count],
                  outputs=[q.off_c, q.off_v, q.n_contacts, q.n_verts, q.overflow, q.overflow_step], device=dev)
        wp.launch(KF.fill_contacts, dim=(n, fb.n_surf),
                  inputs=[F(o.fem_contact_margin), F(o.fem_point_stiffness), F(o.fem_dissipation_time_constant),
                          F(o.fem_friction), fb.geom_k, fb.geom_tau, dd.surface,
                          g.link, g.type, g.size, g.pos, g.quat, fb.geom_mu, *sdfs, lk.pos, lk.quat, dd.pos0, dd.vel,
                          dd.mass, dd.fixed, q.count, q.off_c, q.off_v],
                  outputs=[q.vslot, q.geom, q.link, q.dist, q.pos, q.frame, q.k, q.tau, q.mu, q.vindex, q.vfirst,
                           q.vcount, q.vmass, q.vminv, q.vus], device=dev)
        if b.nv:
            d = b.parts[part.index].dyn
            wp.launch(KF.point_jacobian, dim=(n, fb.cap),
                      inputs=[d.dof_parent, d.link_dof_last, d.cdof_w, d.cdof_v, d.dof_ref, q.n_contacts, q.link, q.pos,
                              q.frame], outputs=[q.jac], device=dev)

    # -- the substep ------------------------------------------------------------------------------
    def couple(self, f, part):
        o = self.options
        h = self.layout.h
        for b in self._rigid.values():
            p = b.parts[part.index]
            d = p.dyn
            dev = self.layout.device
            if b.K:
                wp.launch(K.contact_params, dim=(part.n_envs, b.K),
                          inputs=[0 if o.friction_combination == "drake" else 1, b.geom_k, b.geom_tau,
                                  d.n_contacts, d.geom, d.condim, d.friction, d.geom_friction, d.geom_friction_ratio],
                          outputs=[p.k, p.tau, p.mu], device=dev)
            if b.fem is not None:
                self._fem_detect(f, b, part)
                q = b.fem.parts[part.index]
            else:
                q = self._empty_fem(part.n_envs)
            rw = p.rows
            tau_lim = h if o.limit_dissipation_time_constant is None else o.limit_dissipation_time_constant
            tau_eq = h if o.equality_dissipation_time_constant is None else o.equality_dissipation_time_constant
            wp.launch(K.sap_solve, dim=part.n_envs,
                      inputs=[F(h), F(o.near_rigid_threshold), F(o.sigma), F(o.atol), F(o.rtol), o.max_iterations,
                              0 if o.line_search == "exact" else 1, F(o.ls_alpha_max), o.ls_max_iterations,
                              F(o.ls_tolerance), F(o.ls_armijo_c), F(o.ls_rho), F(o.limit_stiffness), F(tau_lim),
                              F(o.equality_stiffness), F(tau_eq), F(o.constraint_near_rigid_threshold),
                              F(o.frictionloss_sigma),
                              d.qvel, d.qacc_free, d.mass, d.n_contacts, d.dist, d.jac, p.k, p.tau, p.mu,
                              rw.n_rows, rw.row_type, rw.row_pos, rw.row_frictionloss,
                              p.warm_v, p.warm_ok, p.lo_A, p.hi_A, p.lo_H, p.LA, p.H, p.Z, p.cols, p.ncols,
                              p.v, p.vs, p.dv, p.grad, p.tmp,
                              p.vc, p.dvc, p.gam, p.rn, p.rt, p.vhat,
                              p.rfirst, p.rlast, p.rR, p.rvhat, p.rlo, p.rhi, p.rvc, p.rdvc, p.rgam,
                              q.n_contacts, q.n_verts, q.vslot, q.dist, q.frame, q.jac, q.k, q.tau, q.mu, q.vindex,
                              q.vfirst, q.vcount, q.vmass, q.vminv, q.vus, q.warm_u, q.warm_u_ok, q.cols, q.ncols,
                              q.rn, q.rt, q.vhat, q.vc, q.dvc, q.G, q.vg, q.vdu, q.vHinv, q.gamma, q.vu],
                      outputs=[p.gamma, d.qfrc_contact, d.contact_force, p.iterations, p.converged, p.cost,
                               p.residual, p.residual_history], device=dev)
            wp.launch(K.step_stats, dim=part.n_envs, inputs=[int(f == 0), p.iterations, p.converged],
                      outputs=[p.iterations_step, p.cap_hits_step], device=dev)
            if b.fem is not None:
                wp.launch(KF.apply_velocities, dim=(part.n_envs, b.fem.cap), inputs=[q.n_verts, q.vindex, q.vu],
                          outputs=[q.dd.vel], device=dev)

    def check_after_step(self) -> None:
        """Envs whose SAP solve hit max_iterations in a substep of the last step (host sync after
        the step): a PolyphysWarning or SimulationError naming them, per ``on_iteration_cap``."""
        for name, b in self._rigid.items():
            if b.fem is None:
                continue
            over = b.fem.overflow_step.numpy()
            bad = np.nonzero(over)[0]
            if bad.size:
                raise BudgetExceededError(
                    f"SAP coupler ({name}): rigid–FEM contacts exceed SapOptions.fem_max_contacts={b.fem.cap} in "
                    f"env(s) {bad.tolist()} (by {over[bad].tolist()} in the worst substep); those contacts were "
                    f"not solved: raise fem_max_contacts")
        if self.options.on_iteration_cap == "ignore":
            return
        for name, b in self._rigid.items():
            caps = b.cap_hits_step.numpy()
            bad = np.nonzero(caps)[0]
            if bad.size:
                msg = (f"SAP coupler ({name}): the Newton solve hit max_iterations={self.options.max_iterations} "
                       f"without meeting atol/rtol in env(s) {bad.tolist()} ({caps[bad].tolist()} substep(s)); "
                       f"raise SapOptions.max_iterations or loosen rtol")
                if self.options.on_iteration_cap == "raise":
                    raise SimulationError(msg)
                warnings.warn(msg, PolyphysWarning, stacklevel=3)

    # -- state ------------------------------------------------------------------------------------
    def state_arrays(self):
        out = {}
        for name, b in self._rigid.items():
            for k in STATE:
                out[f"{name}/{k}"] = getattr(b, k)
            if b.fem is not None:
                for k in FEM_STATE:
                    out[f"{name}/{b.fem.solver.name}/{k}"] = getattr(b.fem, k)
        return out

    # -- readback ---------------------------------------------------------------------------------
    def _pick(self, rigid):
        names = sorted(self._rigid)
        if rigid is None:
            if len(names) != 1:
                raise OptionError(f"SAP coupler: several rigid solvers {names}; name one")
            rigid = names[0]
        if rigid not in self._rigid:
            raise OptionError(f"SAP coupler: rigid={rigid!r} is not coupled; coupled: {names}")
        return self._rigid[rigid]

    def get_solver_stats(self, rigid: str | None = None, envs_idx=None) -> dict:
        """Per env, of the last substep's solve: ``iterations`` (Newton steps), ``converged``
        (bool: the stopping rule held), ``residual`` (‖D·∇ℓ‖ at the end), ``cost`` and
        ``residual_history`` (ℓ and ‖D·∇ℓ‖ at the start and after each Newton step: (n,
        max_iterations + 1), −1 past the last); over the last
        step's substeps: ``iterations_step`` (sum) and ``cap_hits_step`` (substeps that hit
        max_iterations). Batch axis first (none unbatched)."""
        b = self._pick(rigid)
        scene = self.scene
        envs = scene._envs_idx(envs_idx)
        out = {"iterations": b.iterations.numpy()[envs].astype(int),
               "converged": b.converged.numpy()[envs].astype(bool),
               "residual": b.residual.numpy()[envs].astype(float),
               "cost": b.cost.numpy()[envs].astype(float),
               "residual_history": b.residual_history.numpy()[envs].astype(float),
               "iterations_step": b.iterations_step.numpy()[envs].astype(int),
               "cap_hits_step": b.cap_hits_step.numpy()[envs].astype(int)}
        return out if scene.batched else {k: v[0] for k, v in out.items()}

    def get_impulses(self, rigid: str | None = None, envs_idx=None) -> dict:
        """The last substep's contact impulses γ (N·s) per contact slot, (n, K, 3) in the contact
        frame (normal, tangent 1, tangent 2; on geom A; the rigid solver's contact slots, valid
        below ``count``), with the regularisation it used: ``R_n``, ``R_t`` (s/kg) and ``v_hat``
        (m/s), and the pair ``stiffness`` (N/m), ``tau_d`` (s), ``mu``. With limit, frictionloss or
        equality rows handed over: ``row_count`` and per row (the rigid solver's rows 0 ..
        row_count − 1, NaN beyond) ``row_gamma`` (N·s or N·m·s), ``row_R`` and ``row_v_hat``. Batch axis
        first."""
        b = self._pick(rigid)
        scene = self.scene
        envs = scene._envs_idx(envs_idx)
        count = np.concatenate([b.parts[p.index].dyn.n_contacts.numpy() for p in self.layout.partitions])[envs]
        out = {"gamma": b.gamma.numpy()[envs].astype(float), "count": count.astype(int),
               "R_n": b.rn.numpy()[envs], "R_t": b.rt.numpy()[envs], "v_hat": b.vhat.numpy()[envs],
               "stiffness": b.k.numpy()[envs], "tau_d": b.tau.numpy()[envs], "mu": b.mu.numpy()[envs]}
        valid = np.arange(b.K)[None, :] < out["count"][:, None]
        for k in ("R_n", "R_t", "v_hat", "stiffness", "tau_d", "mu"):
            out[k] = np.where(valid, out[k], math.nan)
        if b.NR:
            # the limit/frictionloss/equality rows (docs/sap.md, "Which rows SAP takes over"), rows < row_count
            rc = np.concatenate([b.parts[p.index].rows.n_rows.numpy() for p in self.layout.partitions])[envs]
            rv = np.arange(b.NR)[None, :] < rc[:, None]
            out["row_count"] = rc.astype(int)
            for k, a in (("row_gamma", b.rgam), ("row_R", b.rR), ("row_v_hat", b.rvhat)):
                out[k] = np.where(rv, a.numpy()[envs], math.nan)
        return out if scene.batched else {k: v[0] for k, v in out.items()}

    def get_fem_contacts(self, rigid: str | None = None, envs_idx=None) -> dict:
        """The last substep's rigid–FEM contacts (docs/sap.md, "Readback"), per env over the contact slots
        (valid below ``count``; NaN / −1 past it): ``vertex`` (the deformable solver's global vertex
        index), ``geom`` (RigidGeoms row of the rigid solver's ``rigid_geoms()``), ``link`` (its global
        link), ``dist`` (φ at the substep start, m), ``pos`` (contact point, world), ``frame`` (rows:
        normal from the geom to the vertex, tangent 1, tangent 2), ``impulse`` (γ in that frame, N·s, on
        the vertex; the geom's link receives the opposite at ``pos``), ``force`` (γ/h in world, on
        the vertex, N), ``stiffness``, ``tau_d``, ``mu``; ``overflow`` per env: contacts the last
        substep found beyond the capacity; ``solved_at``: the last substep's start (s) — the rigid
        solver's ``get_contacts`` convention. Batch axis first (none unbatched)."""
        b = self._pick(rigid)
        if b.fem is None:
            raise OptionError(f"get_fem_contacts(): rigid solver {b.rigid.name!r} has no deformable partner")
        fb, scene = b.fem, self.scene
        envs = scene._envs_idx(envs_idx)
        count = fb.n_contacts.numpy()[envs].astype(int)
        valid = np.arange(fb.cap)[None, :] < count[:, None]
        gam = fb.gamma.numpy()[envs].astype(float)
        frame = fb.frame.numpy()[envs].astype(float)
        gam = np.where(valid[..., None], gam, math.nan)
        out = {"count": count, "vertex": np.where(valid, fb.vindex.numpy()[envs][np.arange(len(envs))[:, None],
                                                                                    fb.vslot.numpy()[envs]], -1),
               "geom": np.where(valid, fb.geom.numpy()[envs], -1), "link": np.where(valid, fb.link.numpy()[envs], -1),
               "dist": np.where(valid, fb.dist.numpy()[envs], math.nan),
               "pos": np.where(valid[..., None], fb.pos.numpy()[envs], math.nan),
               "frame": np.where(valid[..., None, None], frame, math.nan), "impulse": gam,
               "force": np.einsum("ekij,eki->ekj", frame, gam) / self.layout.h,
               "stiffness": np.where(valid, fb.k.numpy()[envs], math.nan),
               "tau_d": np.where(valid, fb.tau.numpy()[envs], math.nan),
               "mu": np.where(valid, fb.mu.numpy()[envs], math.nan),
               "overflow": fb.overflow.numpy()[envs].astype(int)}
        steps = scene._step_count[envs]
        out["solved_at"] = np.where(steps > 0, steps * scene.sim_options.dt - self.layout.h, math.nan)
        return out if scene.batched else {k: (v[0] if isinstance(v, np.ndarray) else v) for k, v in out.items()}

    def sdf_grids(self, rigid: str | None = None) -> SdfGrids:
        """The packed grid SDFs of the mesh geoms of a rigid solver coupled with an FEM solver (geom
        frames, one per mesh geom, ``geom`` = -1 for the others; ``polyphys.sdf_grid.query_sdf_grids``
        evaluates them on the host). Interpolated distances are within (√3/2)·spacing of the exact
        ones (``polyphys.sdf_grid.interpolation_bound``)."""
        return self._fem_of(rigid, "sdf_grids").grids

    def height_fields(self, rigid: str | None = None) -> HeightFields:
        """The packed heightfield geoms of a rigid solver coupled with an FEM solver (geom frames;
        ``polyphys.sdf_grid.query_height_fields`` evaluates them on the host)."""
        return self._fem_of(rigid, "height_fields").hfields

    def _fem_of(self, rigid, what):
        b = self._pick(rigid)
        if b.fem is None:
            raise OptionError(f"{what}(): rigid solver {b.rigid.name!r} has no deformable partner")
        return b.fem


def _warn_geoms_between_vertices(rigid_name, geoms, fem_solver, layout) -> None:
    """Rigid–FEM contact tests FEM surface vertices against rigid geoms (docs/sap.md, "Rigid–FEM
    contact"), so a rigid geom narrower than the gaps between the vertices can pass through the FEM
    surface between them without any contact. Warn at build, naming the geom, when its middle
    extent (the smaller side of its thinnest cross-section: 2r for a sphere, capsule or cylinder; a
    mesh: of its bounding box in the geom frame) is below the longest edge of the FEM surface at its
    build pose."""
    mesh = fem_solver.view(SurfaceMeshView)
    if mesh is None:
        return
    surf = mesh.surface_mesh(layout.partitions[0])
    tris = np.asarray(surf.triangles.numpy()).reshape(-1, 3)
    if tris.size == 0:
        return
    x = np.asarray(surf.pos.numpy()[0], dtype=np.float64)
    edge = max(float(np.linalg.norm(x[tris[:, i]] - x[tris[:, (i + 1) % 3]], axis=1).max()) for i in range(3))
    types = geoms.type.numpy()
    sizes = np.asarray(geoms.size.numpy(), dtype=np.float64)
    names = {int(GeomType.SPHERE): "sphere", int(GeomType.CAPSULE): "capsule", int(GeomType.CYLINDER): "cylinder",
             int(GeomType.BOX): "box", int(GeomType.ELLIPSOID): "ellipsoid", int(GeomType.MESH): "mesh"}
    meshes = list(geoms.meshes) + [None] * (len(types) - len(geoms.meshes))
    for g, (t, sz) in enumerate(zip(types, sizes)):
        t = int(t)
        if t not in names or (t == GeomType.MESH and meshes[g] is None):
            continue                       # planes, heightfields (terrain-wide), meshes given as grids only
        if t == GeomType.MESH:
            v = np.asarray(meshes[g][0], dtype=np.float64).reshape(-1, 3)
            full = list(v.max(0) - v.min(0))          # its bounding box in the geom frame
        elif t == GeomType.SPHERE:
            full = [2 * sz[0]] * 3
        elif t in (GeomType.CAPSULE, GeomType.CYLINDER):
            full = [2 * sz[0], 2 * sz[0], 2 * (sz[1] + (sz[0] if t == GeomType.CAPSULE else 0.0))]
        else:
            full = list(2 * sz)
        middle = sorted(full)[1]
        if middle < edge:
            warnings.warn(
                f"SAP rigid–FEM contact: rigid solver {rigid_name!r}, geom {g} ({names[t]}, middle extent "
                f"{middle:.4g} m) is narrower than the longest edge of the FEM surface ({edge:.4g} m): contact "
                f"is tested at the FEM surface vertices only, so this geom can pass through the FEM body between "
                f"vertices; refine the FEM mesh (resolution) so its surface edges are shorter than the geom "
                f"(docs/sap.md, \"Rigid–FEM contact\")", PolyphysWarning, stacklevel=4)

