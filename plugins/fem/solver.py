"""FEMSolver: linear tetrahedra with explicit (symplectic Euler) or implicit (backward Euler) steps.

All entities share one vertex array (n_envs, n_vertices) and one element list; the mesh and the
material parameters are the same in every env, positions, velocities, element ``active`` flags and
fixed-vertex flags are per env. See docs/fem.md for the physics and the tolerances.
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
from polyphys import morphs as M
from polyphys.blocks import BlockQueue
from polyphys.errors import OptionError, PolyphysWarning
from polyphys.interfaces import Solver
from polyphys.rotations import quat_to_mat
from polyphys.views import DeformableDynamics, ParticleCarriers, SurfaceMesh

from . import mesh as fem_mesh
from .entity import FEMEntity
from .materials import FEMMaterial
from .options import FEMOptions


class ScalarLayout:
    """Offsets of the per-env float64 scalars of the implicit solver (one buffer, one zeroing)."""

    def __init__(self, K: int, J: int, L: int):
        self.K, self.J, self.L = K, J, L
        self.e0 = 0                       # E0[k]
        self.et = K                       # Et[k, t]
        self.rz = K + K * L               # rz[k, j], j = 0..J
        self.pap = self.rz + K * (J + 1)  # pAp[k, j], j = 0..J-1
        self.step = self.pap + K * J      # accepted step length of Newton iteration k
        self.width = self.step + K


class FEMSolver(Solver):
    """Tetrahedral FEM. Explicit: v += h (f/m + g), x += h v (symplectic Euler), stable for h below
    ~ the smallest edge over the P-wave speed. Implicit: backward Euler as the minimisation of the
    incremental potential (Newton + block-Jacobi-PCG + backtracking line search; fixed iteration
    counts, device-side masking per env). Static planes / the domain box: explicit, after the
    position update (Coulomb at the velocity level); implicit, inside the solve (filtered contact
    directions and a lagged, smoothed Coulomb friction potential, as in Incremental Potential
    Contact).

    References: Smith, de Goes, Kim, "Stable Neo-Hookean Flesh Simulation", ACM TOG 2018;
    Sifakis & Barbič, "FEM simulation of 3D deformable solids", SIGGRAPH course 2012;
    Li et al., "Incremental Potential Contact", ACM TOG 2020 (friction).
    Limitations: linear tets lock in bending and near incompressibility; no self-collision; no
    contact between FEM bodies. float32 or float64.
    """

    options_type = FEMOptions
    # least items (vertices or elements) per worker's share of a parallel stage (_share); tests lower
    # it so that a small mesh splits every stage
    grain = 1024
    # elements or vertices per claimed block of the explicit stages on several workers (polyphys.blocks):
    # a few microseconds of work per claim
    claim_run = 256

    @property
    def _run(self) -> int:
        """Elements or vertices per thread of the explicit kernels (explicit_forces_nh and the vertex
        stages): a run of 16 on CPU (a Warp CPU thread's bookkeeping is ~1/5 of an element's work),
        one on CUDA (docs/fem.md)."""
        return 16 if str(self.layout.device).startswith("cpu") else 1

    def __init__(self, scene, options, spec):
        super().__init__(scene, options, spec)
        self._pending: list = []

    # -- entities --------------------------------------------------------------------------------
    def add_entity(self, morph, material, surface=None, name=None, resolution=None, fixed=None, **kwargs):
        """Add a deformable body. ``resolution``: cells along the longest edge (Box, voxelized
        surfaces), three ints (Box), or cells across the diameter (Cylinder). ``fixed``: vertices
        held in place in every env: local indices, a boolean mask, a function of the rest
        positions (n, 3) returning a mask, or {"lower": xyz, "upper": xyz} (a world box)."""
        if kwargs:
            raise OptionError(f"fem add_entity: unknown arguments {sorted(kwargs)}; allowed: resolution, "
                              f"fixed")
        if not isinstance(material, FEMMaterial):
            raise OptionError(f"fem add_entity: material must be a polyphys.materials.FEM material, got "
                              f"{type(material).__name__}")
        if isinstance(morph, M.Plane):
            raise OptionError("a Plane cannot be an FEM body; use FEMOptions(planes=...) or floor_height")
        label = name or f"fem_{len(self.entities)}"
        v_local, tets = fem_mesh.morph_tets(morph, resolution)
        v_local = np.asarray(v_local, dtype=float)
        tets = np.asarray(tets, dtype=np.int64)
        used = np.unique(tets)
        if len(used) < len(v_local):      # drop vertices no tet uses (they would have no mass)
            remap = -np.ones(len(v_local), dtype=np.int64)
            remap[used] = np.arange(len(used))
            v_local, tets = v_local[used], remap[tets]
        R = quat_to_mat(morph.orientation)
        verts = v_local @ R.T + np.asarray(morph.pos)
        vol = fem_mesh.validate_tets(verts, tets, f"entity {label!r} ({type(morph).__name__})")
        mask = np.zeros(len(verts), dtype=bool)
        if getattr(morph, "fixed", False):
            mask[:] = True
        if fixed is not None:
            mask |= _fixed_mask(fixed, verts, label)
        entity = FEMEntity(self, len(self.entities), morph, material, surface, name, verts, tets, vol,
                           fem_mesh.boundary_triangles(tets), mask)
        self.entities.append(entity)
        return entity

    def kernel_modules(self, layout):
        """The kernel modules of the scene's precision; the implicit integrator's only when it is used."""
        from polyphys.kernels import blocks

        from . import kernels

        elastic, implicit = kernels.load(layout.precision)
        return [blocks, elastic] + ([implicit] if self.options.integrator == "implicit" else [])

    # -- build -----------------------------------------------------------------------------------
    def build(self, layout):
        import warp as wp

        from . import kernels

        self.layout = layout
        self.blocks = BlockQueue(layout)
        # kernel modules of this precision (imported before the first, uncaptured, step)
        self.K, self.I = kernels.load(layout.precision)
        S, vec3, mat33 = self.K.S, self.K.vec3, self.K.mat33
        self._types = (S, vec3, mat33)
        n, dev = layout.n_envs, layout.device
        opts = self.options
        v0, tets, vol, tris, mask0 = [], [], [], [], []
        per_elem = {k: [] for k in ("model", "mu", "lam", "mu_lin", "lam_lin", "beta")}
        alpha_v, rho_v = [], []
        nv = ne = 0
        for e in self.entities:
            e._bind(nv, ne)
            v0.append(e.rest_vertices)
            tets.append(e.elements + nv)
            tris.append(e.surface_triangles + nv)
            vol.append(e.rest_volumes)
            mask0.append(e._fixed0)
            code, mu, lam = e.material.model_params()
            mu_l, lam_l = e.material.lame
            m = len(e.elements)
            for k, val in zip(per_elem, (code, mu, lam, mu_l, lam_l, e.material.damping_stiffness)):
                per_elem[k].append(np.full(m, val))
            alpha_v.append(np.full(e.n_vertices, e.material.damping_mass))
            rho_v.append(np.full(m, e.material.rho))
            nv += e.n_vertices
            ne += m
        self.n_vertices, self.n_elements = nv, ne
        v0 = np.concatenate(v0)
        tets = np.concatenate(tets)
        vol = np.concatenate(vol)
        P = {k: np.concatenate(v) for k, v in per_elem.items()}
        rho = np.concatenate(rho_v)
        # lumped mass: a quarter of each tet's mass to each of its vertices
        mass = np.zeros(nv)
        np.add.at(mass, tets.reshape(-1), np.repeat(rho * vol / 4.0, 4))
        x = v0[tets]
        Dm = np.transpose(x[:, 1:] - x[:, :1], (0, 2, 1))
        dm_inv = np.linalg.inv(Dm)
        self._check_cfl(x, P, rho)
        diag_k = _rest_stiffness_diagonal(tets, dm_inv, vol, P["mu_lin"], P["lam_lin"], nv)

        f32 = layout.np_float
        W = lambda a, dt=S: wp.array(np.ascontiguousarray(a), dtype=dt, device=dev)  # noqa: E731
        self.model = SimpleNamespace(
            tets=W(tets.astype(np.int32), wp.vec4i), dm_inv=W(dm_inv.astype(f32), mat33),
            rest_vol=W(vol.astype(f32)), model=W(P["model"].astype(np.int32), wp.int32),
            mu=W(P["mu"].astype(f32)), lam=W(P["lam"].astype(f32)), mu_lin=W(P["mu_lin"].astype(f32)),
            lam_lin=W(P["lam_lin"].astype(f32)), beta=W(P["beta"].astype(f32)),
            mass=W(mass.astype(f32)), inv_mass=W((1.0 / mass).astype(f32)),
            alpha=W(np.concatenate(alpha_v).astype(f32)), diag_k=W(diag_k.astype(f32), vec3))
        planes = opts.all_planes()
        self.model.plane_point = W(np.array([p for p, _ in planes], dtype=f32).reshape(-1, 3), vec3)
        self.model.plane_normal = W(np.array([q for _, q in planes], dtype=f32).reshape(-1, 3), vec3)
        self.triangles = W(np.concatenate(tris).astype(np.int32).reshape(-1, 3), wp.int32)
        # the gather order of the element corners (e, c): vertex by vertex, each vertex's elements
        # ascending. Element stages write corner (e, c)'s nodal vector at corner_slot[e][c]; vertex i
        # sums positions v_start[i]..v_start[i+1] (kernels.elastic.corner_sum)
        corner_of = tets.reshape(-1)
        order = np.argsort(corner_of, kind="stable")
        slot = np.empty_like(order)
        slot[order] = np.arange(len(order))
        self.model.corner_slot = W(slot.reshape(-1, 4).astype(np.int32), wp.vec4i)
        self.model.v_start = W(np.concatenate([[0], np.cumsum(np.bincount(corner_of, minlength=nv))]).astype(np.int32),
                               wp.int32)
        # every element undamped Neo-Hookean: the explicit forces take explicit_forces_nh, with Dm⁻¹Dm⁻ᵀ
        # and (Vμ, λ/(36V), λα/6) per element (α = 1 + 3μ/(4λ), kernels.elastic.nh_alpha)
        self.nh_only = bool(opts.integrator == "explicit" and (P["model"] == 2).all() and (P["beta"] == 0).all())
        if self.nh_only:
            self.model.gram = W(np.einsum("eij,ekj->eik", dm_inv, dm_inv).astype(f32), mat33)
            mu_e, lam_e = P["mu"], P["lam"]
            coef = np.stack([vol * mu_e, lam_e / (36.0 * vol), lam_e * (1.0 + 0.75 * mu_e / lam_e) / 6.0], axis=1)
            self.model.nh_coef = W(coef.astype(f32), vec3)
        self.has_beta = bool((P["beta"] > 0).any())
        # Jacobi preconditioner diagonal: M/h² + αM/h + (1 + β/h) diag(K_rest)
        self.kscale = 1.0 + float(P["beta"].max()) / layout.h

        # state
        self.pos = W(np.tile(v0.astype(f32), (n, 1, 1)), vec3)
        self.vel = wp.zeros((n, nv), dtype=vec3, device=dev)
        self.active = W(np.ones((n, ne), dtype=np.int32), wp.int32)
        # per-env model data (not state; checkpointed through extra_state)
        self.fixed = W(np.tile(np.concatenate(mask0).astype(np.int32), (n, 1)), wp.int32)
        self.mass_env = W(np.tile(mass.astype(f32), (n, 1)))
        self.carrier_active = W(np.ones((n, nv), dtype=np.int32), wp.int32)
        # work arrays
        self.force = wp.zeros((n, nv), dtype=vec3, device=dev)
        self.pos_n = wp.zeros((n, nv), dtype=vec3, device=dev)
        # the elements' nodal vectors (force, gradient or Hessian product) in the gather order
        self.corner = wp.zeros((n, 4 * ne), dtype=vec3, device=dev)
        if opts.integrator == "implicit":
            self.sl = ScalarLayout(opts.newton_iters, opts.cg_iters, opts.line_search_iters)
            # contacts of the current substep: plane normal, normal force λ of the Newton iterate and
            # the friction potential's Hessian block (rebuilt every substep: not state)
            self.work = {k: wp.zeros((n, nv), dtype=vec3, device=dev)
                         for k in ("step_hat", "disp", "grad", "d", "r", "z", "p", "ap", "contact_n")}
            self.work["contact_lam"] = wp.zeros((n, nv), dtype=S, device=dev)
            self.work["fric_h"] = wp.zeros((n, nv), dtype=mat33, device=dev)
            # per-element Hessian data of the current Newton iterate (see gradient_elements)
            self.hess = [wp.zeros((n, ne), dtype=mat33, device=dev) for _ in range(4)]
            self.rot_n = wp.zeros((n, ne), dtype=mat33, device=dev)
            self.rot_n.assign(np.tile(np.eye(3, dtype=f32), (n, ne, 1, 1)))
            self.scal = wp.zeros((n, self.sl.width), dtype=wp.float64, device=dev)
            # block sums of a stage's vertex / element terms (kernels/implicit.py, finish_sum)
            rb = self.K.RED_BLOCK
            self.red_v = wp.zeros((n, -(-nv // rb)), dtype=wp.float64, device=dev)
            self.red_e = wp.zeros((n, -(-ne // rb)), dtype=wp.float64, device=dev)
        self._parts = {}
        for part in layout.partitions:
            s = part.slice
            p = SimpleNamespace(n=part.n_envs, pos=self.pos[s], vel=self.vel[s], active=self.active[s],
                                fixed=self.fixed[s], force=self.force[s], pos_n=self.pos_n[s],
                                mass=self.mass_env[s], carrier_active=self.carrier_active[s], corner=self.corner[s])
            if opts.integrator == "implicit":
                for k, a in self.work.items():
                    setattr(p, k, a[s])
                p.rot_n, p.scal, p.red_v, p.red_e = self.rot_n[s], self.scal[s], self.red_v[s], self.red_e[s]
                p.hess = [a[s] for a in self.hess]
            self._parts[part.index] = p
        self._readback = None

    def _check_cfl(self, x, P, rho):
        """``cfl_dt`` = min altitude / P-wave speed (reduced by stiffness damping); warn when an
        explicit step exceeds it."""
        # smallest altitude of each tet: 3 V / largest face area (a Kuhn tet's is 0.71× its edge)
        faces = x[:, [[1, 2, 3], [0, 2, 3], [0, 1, 3], [0, 1, 2]]]            # (m, 4, 3, 3)
        area = 0.5 * np.linalg.norm(np.cross(faces[:, :, 1] - faces[:, :, 0], faces[:, :, 2] - faces[:, :, 0]),
                                    axis=-1).max(axis=1)
        vol = np.abs(np.linalg.det(x[:, 1:] - x[:, :1])) / 6.0
        cp = np.sqrt((P["lam_lin"] + 2 * P["mu_lin"]) / rho)
        h0 = 3.0 * vol / area / cp
        # stiffness damping shrinks the explicit limit: h < (2/w)(sqrt(1 + z²) - z), z = beta w / 2,
        # with w ~ 2 / h0 the highest element frequency: h < h0 (sqrt(1 + z²) - z), z = beta / h0
        zeta = P["beta"] / h0
        self.cfl_dt = float((h0 * (np.sqrt(1.0 + zeta ** 2) - zeta)).min())
        h = self.layout.h
        if self.options.integrator == "explicit" and h > self.cfl_dt:
            warnings.warn(f"FEM explicit step h = {h:.3g} s exceeds the CFL estimate {self.cfl_dt:.3g} s "
                          f"(smallest tet altitude / P-wave speed): it will likely blow up; raise SimOptions.substeps "
                          f"or use FEMOptions(integrator='implicit')", PolyphysWarning, stacklevel=4)

    # -- stepping --------------------------------------------------------------------------------
    def _share(self, part, w: int, n: int) -> tuple[int, int]:
        """Worker w's share of n vertices or elements: whole blocks of RED_BLOCK items (a block's
        sum is one worker's), at least ``grain`` items per worker (docs/fem.md, "Threads")."""
        rb = self.K.RED_BLOCK
        a, b = part.chunk(w, -(-n // rb), max(1, self.grain // rb))
        return min(a * rb, n), min(b * rb, n)

    def _stage(self, part, *work) -> None:
        """One parallel stage: for each (n, fn) of ``work``, worker w launches ``fn(a, b)`` over its
        share [a, b) of n items."""
        def stage(w):
            for n, fn in work:
                a, b = self._share(part, w, n)
                if b > a:
                    fn(a, b)

        self.parallel(part, stage)

    def _claimed(self, part, n: int, launch) -> None:
        """One parallel stage over n vertices or elements in runs: ``launch(dim, run, claim, counters)``
        launches a run kernel. One worker: runs of ``_run``, thread c the run c; several: runs of
        ``claim_run`` that the workers claim, one thread per worker (polyphys.blocks: the stage ends
        when the items are done, whichever worker was slower). A run's items have the same operations
        either way."""
        ch = self._run if part.workers == 1 else self.claim_run
        p = self._parts[part.index]
        self.blocks.stage(self, part, -(-n // ch), lambda threads, claim, counters: launch((p.n, threads), ch, claim,
                                                                                           counters))

    def on_reset(self, envs_idx):
        self.blocks.clear()       # a step left half done may leave claim counters

    def substep(self, f, part):
        """Fast path (no coupler). Explicit: the element stage, then one vertex stage that updates
        the velocity and the position (explicit_vertex_step: the two halves' operations, fused)."""
        import warp as wp

        if self.options.integrator == "implicit":
            super().substep(f, part)
            return
        K = self.K
        p, m, h = self._parts[part.index], self.model, self.layout.h
        g = self._types[1](*self.layout.gravity)
        self._explicit_forces(part, p)
        self._claimed(part, self.n_vertices, lambda dim, ch, claim, counters: wp.launch(
            K.explicit_vertex_step, dim=dim,
            inputs=[m.inv_mass, m.alpha, g, h, p.fixed, m.v_start, m.plane_point, m.plane_normal,
                    float(self.options.friction), 0, self.n_vertices, ch, claim, p.corner, p.force],
            outputs=[p.pos, p.vel, p.force, counters], device=self.layout.device))

    def _explicit_forces(self, part, p):
        import warp as wp

        K, m, dev = self.K, self.model, self.layout.device
        if self.nh_only:
            self._claimed(part, self.n_elements, lambda dim, ch, claim, counters: wp.launch(
                K.explicit_forces_nh, dim=dim,
                inputs=[m.tets, m.gram, m.nh_coef, m.corner_slot, 0, self.n_elements, ch, p.pos, p.active, claim],
                outputs=[p.corner, counters], device=dev))
        else:
            self._stage(part, (self.n_elements, lambda a, b: wp.launch(
                K.explicit_forces, dim=(p.n, b - a), inputs=[m.tets, m.dm_inv, m.rest_vol, m.model, m.mu, m.lam,
                                                             m.mu_lin, m.lam_lin, m.beta, m.corner_slot, a, p.pos, p.vel,
                                                             p.active],
                outputs=[p.corner], device=dev)))

    def substep_pre_coupling(self, f, part):
        import warp as wp

        K = self.K
        p, m, h, dev = self._parts[part.index], self.model, self.layout.h, self.layout.device
        g = self._types[1](*self.layout.gravity)
        if self.options.integrator == "implicit":
            self._implicit_solve(part, p, g, h)
            return
        self._explicit_forces(part, p)
        self._claimed(part, self.n_vertices, lambda dim, ch, claim, counters: wp.launch(
            K.explicit_velocity, dim=dim,
            inputs=[m.inv_mass, m.alpha, g, h, p.fixed, m.v_start, 0, self.n_vertices, ch, claim, p.corner, p.force],
            outputs=[p.vel, p.force, counters], device=dev))

    def substep_post_coupling(self, f, part):
        import warp as wp

        K = self.K
        p, m = self._parts[part.index], self.model
        base = p.pos_n if self.options.integrator == "implicit" else p.pos
        self._claimed(part, self.n_vertices, lambda dim, ch, claim, counters: wp.launch(
            K.integrate_positions, dim=dim,
            inputs=[self.layout.h, p.fixed, m.plane_point, m.plane_normal, float(self.options.friction), 0,
                    self.n_vertices, ch, claim, base],
            outputs=[p.pos, p.vel, counters], device=self.layout.device))

    def _implicit_solve(self, part, p, g, h):
        """One backward-Euler substep (kernels/implicit.py). Vertex and element stages split over the
        partition's workers; sums finish on the partition's thread (finish_sum, line_search_accept)."""
        import warp as wp

        I = self.I
        m, o, sl, dev = self.model, self.options, self.sl, self.layout.device
        nv, ne = self.n_vertices, self.n_elements
        ct2, nt2 = float(o.cg_tol) ** 2, float(o.newton_tol) ** 2
        proj = int(o.project_hessian)
        mu_f, stick = float(o.friction), float(o.stick_velocity) * h
        kscale = self.kscale
        mat = [m.tets, m.dm_inv, m.rest_vol, m.model, m.mu, m.lam, m.mu_lin, m.lam_lin, m.beta]
        L = lambda kernel, n, inputs, outputs: wp.launch(kernel, dim=(p.n, n), inputs=inputs, outputs=outputs,  # noqa: E731
                                                         device=dev)

        def finish(slot, red):
            wp.launch(I.finish_sum, dim=p.n, inputs=[slot], outputs=[red, p.scal], device=dev)

        wp.launch(I.zero_scalars, dim=(p.n, sl.width), inputs=[], outputs=[p.scal], device=dev)
        self._stage(part, (nv, lambda a, b: L(I.begin_substep, b - a, [h, g, p.fixed, m.plane_point, m.plane_normal, a,
                                                                       p.vel],
                                              [p.pos, p.pos_n, p.step_hat, p.disp, p.contact_n, p.contact_lam])))
        if self.has_beta:
            self._stage(part, (ne, lambda a, b: L(I.rotations_at_start, b - a, [m.tets, m.dm_inv, m.model, a, p.pos_n],
                                                  [p.rot_n])))
        rz0 = sl.rz
        for k in range(sl.K):
            e0, rz_k, pap_k, step_k = sl.e0 + k, sl.rz + k * (sl.J + 1), sl.pap + k * sl.J, sl.step + k
            self._stage(part,
                        (nv, lambda a, b: L(I.gradient_vertices, b - a, [m.mass, m.alpha, g, h, a, p.step_hat, p.disp],
                                            [p.grad, p.red_v])),
                        (ne, lambda a, b: L(I.gradient_elements, b - a,
                                            [*mat, h, proj, m.corner_slot, a, p.pos, p.pos_n, p.rot_n, p.active],
                                            [p.corner, p.red_e, *p.hess])))
            finish(e0, p.red_v)
            finish(e0, p.red_e)

            def grad_and_contacts(a, b, k=k):
                L(I.gather_gradient, b - a, [m.v_start, a, p.corner], [p.grad])
                L(I.contact_friction, b - a, [mu_f, stick, int(k == 0), a, p.step_hat, p.disp],
                  [p.grad, p.contact_n, p.contact_lam, p.fric_h, p.red_v])

            self._stage(part, (nv, grad_and_contacts))
            finish(e0, p.red_v)
            self._stage(part, (nv, lambda a, b: L(I.cg_init, b - a, [m.mass, m.alpha, m.diag_k, kscale, h, p.fixed, a,
                                                                     p.grad, p.contact_n, p.fric_h],
                                                  [p.r, p.z, p.p, p.d, p.ap, p.red_v])))
            finish(rz_k, p.red_v)
            for j in range(sl.J):
                self._stage(part, (ne, lambda a, b, k=k, j=j, rz_k=rz_k: L(
                    I.hessian_product, b - a, [*mat, h, k, j, rz_k, rz0, ct2, nt2, proj, m.corner_slot, a, *p.hess,
                                               p.rot_n, p.active, p.p, p.scal], [p.corner])))
                self._stage(part, (nv, lambda a, b, k=k, j=j, rz_k=rz_k: L(
                    I.cg_curvature, b - a, [m.mass, m.alpha, h, p.fixed, k, j, rz_k, rz0, ct2, nt2, m.v_start, a, p.p,
                                            p.contact_n, p.fric_h, p.corner, p.scal],
                    [p.ap, p.red_v])))
                finish(pap_k + j, p.red_v)
                self._stage(part, (nv, lambda a, b, k=k, j=j, rz_k=rz_k, pap_k=pap_k: L(
                    I.cg_update, b - a, [m.mass, m.alpha, m.diag_k, kscale, h, k, j, rz_k, rz0, pap_k, ct2, nt2, a, p.p,
                                         p.ap, p.contact_n, p.fric_h, p.scal], [p.d, p.r, p.z, p.red_v])))
                finish(rz_k + j + 1, p.red_v)
                if j + 1 < sl.J:
                    self._stage(part, (nv, lambda a, b, k=k, j=j, rz_k=rz_k: L(
                        I.cg_direction, b - a, [k, j, rz_k, rz0, ct2, nt2, a, p.z, p.scal], [p.p, p.ap])))
            for t in range(sl.L):
                s, et = 0.5 ** t, sl.et + k * sl.L + t
                self._stage(part,
                            (nv, lambda a, b, s=s, step_k=step_k: L(
                                I.trial_energy_vertices, b - a, [m.mass, m.alpha, g, h, mu_f, stick, s, step_k, a, p.d,
                                                                 p.step_hat, p.disp, p.contact_n, p.contact_lam,
                                                                 p.scal], [p.red_v])),
                            (ne, lambda a, b, s=s, step_k=step_k: L(
                                I.trial_energy_elements, b - a, [*mat, h, s, step_k, a, p.pos, p.d, p.pos_n, p.rot_n,
                                                                 p.active, p.scal], [p.red_e])))
                finish(et, p.red_v)
                finish(et, p.red_e)
                wp.launch(I.line_search_accept, dim=p.n, inputs=[s, e0, et, step_k], outputs=[p.scal], device=dev)
            self._stage(part, (nv, lambda a, b, step_k=step_k: L(I.apply_step, b - a, [step_k, a, p.d, p.scal],
                                                                  [p.pos, p.disp])))
        self._stage(part, (nv, lambda a, b: L(I.end_substep, b - a, [h, p.fixed, a, p.disp], [p.vel])))

    def solve_stats(self) -> dict:
        """Diagnostics of the implicit solve of the last substep, per env (host readback; call it
        between steps): ``gradient_reduction`` (n_envs, newton_iters): preconditioned gradient norm at
        the start of each Newton iteration over the first one's (0 where an env had already stopped);
        ``cg_iterations`` (n_envs, newton_iters): CG iterations that ran; ``step`` (n_envs,
        newton_iters): accepted line-search step (0: no decrease found, no move)."""
        if self.options.integrator != "implicit":
            raise OptionError("solve_stats(): only the implicit integrator iterates; FEMOptions(integrator="
                              f"{self.options.integrator!r})")
        sl, sc = self.sl, self.scal.numpy()
        rz = sc[:, sl.rz:sl.pap].reshape(-1, sl.K, sl.J + 1)
        pap = sc[:, sl.pap:sl.step].reshape(-1, sl.K, sl.J)
        with np.errstate(divide="ignore", invalid="ignore"):
            red = np.sqrt(np.where(rz[:, :1, 0] > 0, rz[:, :, 0] / rz[:, :1, 0], 0.0))
        return {"gradient_reduction": red, "cg_iterations": (pap != 0).sum(axis=2),
                "step": sc[:, sl.step:sl.step + sl.K].copy()}

    # -- state -----------------------------------------------------------------------------------
    def state_arrays(self):
        return {"pos": self.pos, "vel": self.vel, "active": self.active}

    def extra_state(self):
        return {"fixed": self.fixed.numpy()}

    def load_extra_state(self, data):
        if "fixed" in data:
            self.fixed.assign(np.asarray(data["fixed"], dtype=np.int32))

    # -- views -----------------------------------------------------------------------------------
    def particle_carriers(self, part):
        """ParticleView over the vertices: a coupler may change ``vel`` between the velocity update
        (pre-coupling) and the position update (post-coupling)."""
        p = self._parts[part.index]
        return ParticleCarriers(pos=p.pos, vel=p.vel, mass=p.mass, active=p.carrier_active, kind="particles")

    def deformable_dynamics(self, part):
        """DeformableDynamicsView (the SAP coupler's rigid–FEM contact, docs/sap.md): positions at the
        substep start (explicit: ``pos``, implicit: ``pos_n``; post-coupling integrates x = that + h·v),
        the free velocities the coupler may change, lumped masses, fixed flags, the boundary vertices
        and each vertex's entity."""
        import warp as wp

        p = self._parts[part.index]
        if getattr(self, "_surface_ids", None) is None:
            dev = self.layout.device
            body = np.concatenate([np.full(e.n_vertices, i, np.int32) for i, e in enumerate(self.entities)])
            self._surface_ids = (wp.array(np.unique(self.triangles.numpy()).astype(np.int32), dtype=wp.int32, device=dev),
                                 wp.array(body, dtype=wp.int32, device=dev))
        implicit = self.options.integrator == "implicit"
        return DeformableDynamics(pos0=p.pos_n if implicit else p.pos, vel=p.vel, mass=p.mass, fixed=p.fixed,
                                  surface=self._surface_ids[0], body=self._surface_ids[1],
                                  velocity_update=self.options.integrator)

    def surface_mesh(self, part):
        """SurfaceMeshView: the boundary triangles (outward oriented) over the shared vertex array."""
        p = self._parts[part.index]
        return SurfaceMesh(pos=p.pos, vel=p.vel, triangles=self.triangles)

    # -- readbacks (outside the step) ---------------------------------------------------------------
    def element_fields(self):
        """(F, P, psi) of every element in every env, as NumPy arrays (the state's precision)."""
        import warp as wp

        K = self.K
        S, _, mat33 = self._types
        n, ne, dev = self.layout.n_envs, self.n_elements, self.device
        if self._readback is None:
            self._readback = (wp.zeros((n, ne), dtype=mat33, device=dev),
                              wp.zeros((n, ne), dtype=mat33, device=dev),
                              wp.zeros((n, ne), dtype=S, device=dev))
        Fa, Pa, psi = self._readback
        m = self.model
        wp.launch(K.element_stress, dim=(n, ne), inputs=[m.tets, m.dm_inv, m.model, m.mu, m.lam, self.pos],
                  outputs=[Fa, Pa, psi], device=dev)
        return Fa.numpy(), Pa.numpy(), psi.numpy()

    def _write(self, arr, envs: np.ndarray, cols: slice, values: np.ndarray) -> None:
        host = arr.numpy()
        host[envs[:, None], np.arange(host.shape[1])[cols]] = values
        arr.assign(host)



def _fixed_mask(fixed, verts, label) -> np.ndarray:
    n = len(verts)
    if isinstance(fixed, dict):
        keys = set(fixed) - {"lower", "upper"}
        if keys or not fixed:
            raise OptionError(f"entity {label!r}: fixed = {fixed!r}: a table takes 'lower' and/or 'upper' "
                              f"corners (world, m) of the box whose vertices are held")
        lo = np.asarray(fixed.get("lower", (-np.inf,) * 3), dtype=float).reshape(3)
        hi = np.asarray(fixed.get("upper", (np.inf,) * 3), dtype=float).reshape(3)
        out = np.all((verts >= lo) & (verts <= hi), axis=1)
        if not out.any():
            raise OptionError(f"entity {label!r}: fixed = {fixed!r}: no vertex lies in that box")
        return out
    if callable(fixed):
        out = np.asarray(fixed(verts.copy()))
        if out.shape != (n,):
            raise OptionError(f"entity {label!r}: fixed(rest_positions) returned shape {out.shape}; expected "
                              f"({n},) booleans")
        return out.astype(bool)
    arr = np.asarray(fixed)
    if arr.dtype == bool:
        if arr.shape != (n,):
            raise OptionError(f"entity {label!r}: fixed mask has shape {arr.shape}; expected ({n},)")
        return arr
    if arr.size and (not np.issubdtype(arr.dtype, np.integer) or arr.min() < 0 or arr.max() >= n):
        raise OptionError(f"entity {label!r}: fixed = {fixed!r}: expected vertex indices in 0..{n - 1}, a "
                          f"({n},) boolean mask or a function of the rest positions")
    out = np.zeros(n, dtype=bool)
    out[arr.reshape(-1).astype(np.int64)] = True
    return out


def _rest_stiffness_diagonal(tets, dm_inv, vol, mu, lam, nv) -> np.ndarray:
    """Diagonal of the linear-elastic rest stiffness, per vertex and axis (Jacobi preconditioner):
    K_aa,ii = V (μ |∇N_a|² + (μ + λ) (∇N_a)_i²)."""
    grads = np.empty((len(tets), 4, 3))
    grads[:, 1:] = dm_inv                       # rows of Dm⁻¹ are ∇N_1..∇N_3
    grads[:, 0] = -dm_inv.sum(axis=1)
    val = vol[:, None, None] * (mu[:, None, None] * (grads ** 2).sum(-1, keepdims=True)
                                + (mu + lam)[:, None, None] * grads ** 2)
    out = np.zeros((nv, 3))
    np.add.at(out, tets.reshape(-1), val.reshape(-1, 3))
    return out

