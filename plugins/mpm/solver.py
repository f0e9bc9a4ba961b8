"""MPMSolver: MLS-MPM with APIC transfers (quadratic B-splines) on a dense grid per env.

Substep (h = dt/substeps): ``substep_pre_coupling`` = clear grid, P2G (with the plastic return
mapping and the stress), grid update (gravity, walls, planes); the grid nodes are then exposed as
``ParticleView`` carriers (kind "grid_nodes") so a coupler can change their velocity;
``substep_post_coupling`` = G2P and advection. References: Hu et al., "A moving least squares
material point method with displacement discontinuity and two-way rigid body coupling" (SIGGRAPH
2018); Jiang et al., "The affine particle-in-cell method" (SIGGRAPH 2015); constitutive models in
materials.py. Limitations: docs/mpm.md.
"""

from __future__ import annotations

import math
import warnings
from types import SimpleNamespace

import numpy as np
from polyphys.blocks import BlockQueue
from polyphys.errors import BuildError, OptionError, PolyphysWarning
from polyphys.interfaces import Solver
from polyphys.views import ParticleCarriers

from .entity import MPMEntity
from .materials import MPMMaterial
from .options import MPMOptions
from .sampling import sample

# tag of the G2P stage: the next substep's clear-and-stress stage may follow it worker by worker
# (Solver.parallel, docs/mpm.md "Threads")
G2P = "mpm.g2p"
# slots between two workers' entries of the per-env speed maximum: 16 values (64 bytes or more), a
# cache line apart
VMAX_STRIDE = 16

class MPMSolver(Solver):
    options_type = MPMOptions
    # nodes per block of the grid update (polyphys.blocks: several workers claim the blocks, one
    # worker runs a thread per block; docs/mpm.md "Threads")
    claim_nodes = 512
    # CPU: P2G's stress stage and G2P over blocks of particles that the workers claim (kernels/transfer.py
    # p2g_stress_blocks — each block also sorts its particles by slab for the scatter — and g2p_blocks),
    # instead of a fixed share per worker; read at build (False: the shares, kept to compare against;
    # benchmarks/results/mpm.md, round 15)
    claim_stress = True

    def __init__(self, scene, options, spec):
        super().__init__(scene, options, spec)
        self._clamp_warned = False
        self._speed_warned = False

    # -- composition ---------------------------------------------------------------------------
    def add_entity(self, morph, material, surface=None, name=None, **kwargs):
        if kwargs:
            raise OptionError(f"mpm add_entity: unknown arguments {sorted(kwargs)}")
        if type(material) is MPMMaterial or not isinstance(material, MPMMaterial):
            raise OptionError(f"mpm add_entity: material {type(material).__name__} is not an MPM material; "
                              f"use polyphys.materials.MPM.Elastic/ElastoPlastic/Snow/Sand/Liquid")
        pos, vol = sample(morph, self.options.spacing)
        entity = MPMEntity(self, len(self.entities), morph, material, surface, name, pos, vol)
        self._check_inside(entity, pos)
        self.entities.append(entity)
        return entity

    def _safe_box(self):
        """The walls' surfaces: the region particles may occupy (MPMOptions.wall_lower/wall_upper)."""
        o = self.options
        return np.asarray(o.wall_lower), np.asarray(o.wall_upper)

    def _check_inside(self, entity, pos: np.ndarray) -> None:
        a, b = self._safe_box()
        tol = 1e-6 * self.options.dx
        out = np.any((pos < a - tol) | (pos > b + tol), axis=1)
        if out.any():
            o = self.options
            walls = "" if np.allclose(a, o.lower_bound) and np.allclose(b, o.upper_bound) else (
                f" (walls at [{_fmt(a)}, {_fmt(b)}]: the domain widened to whole cells of dx = {o.dx:.4g} m)")
            raise OptionError(
                f"MPM entity {entity.name!r}: {int(out.sum())} of {len(pos)} particles lie outside the MPM "
                f"domain lower_bound={o.lower_bound}, upper_bound={o.upper_bound}{walls}; particles span "
                f"[{_fmt(pos.min(0))}, {_fmt(pos.max(0))}]. Move the entity or enlarge the domain")

    def _check_alignment(self) -> None:
        o = self.options
        a, b = np.asarray(o.wall_lower), np.asarray(o.wall_upper)
        off = np.abs(a - np.asarray(o.lower_bound)) > 1e-9 * o.dx
        if off.any():
            axes = [("x", "y", "z")[k] for k in np.nonzero(off)[0]]
            cells = [f"{(hb - la) * o.grid_density:.4g}" for la, hb in zip(o.lower_bound, o.upper_bound)]
            warnings.warn(
                f"MPMOptions: (upper_bound − lower_bound)·grid_density = ({', '.join(cells)}) is not a whole "
                f"number of cells on axis {', '.join(axes)}; the walls are placed half the remainder outside "
                f"each bound, at [{_fmt(a)}, {_fmt(b)}] (grid centred on the domain). Choose bounds a whole "
                f"number of cells dx = {o.dx:.4g} m apart to put the walls on the bounds",
                PolyphysWarning, stacklevel=4)

    # -- build ---------------------------------------------------------------------------------
    def build(self, layout):
        import warp as wp

        self.layout = layout
        o, h = self.options, layout.h
        self._check_resolution()
        self._check_alignment()
        self._check_cfl(h)
        start = 0
        for e in self.entities:
            e.start = start
            start += e.n_particles
        n_p = start
        self.n_particles = n_p
        n, dev = layout.n_envs, layout.device
        f64 = layout.precision == "64"
        scalar, npf = (wp.float64, np.float64) if f64 else (wp.float32, np.float32)
        vec3, mat33, vec4 = (wp.vec3d, wp.mat33d, wp.vec4d) if f64 else (wp.vec3, wp.mat33, wp.vec4)
        self._types = (scalar, vec3, mat33)
        cells = o.n_cells
        self.n_nodes_axis = tuple(c + 1 for c in cells)
        nx, ny, nz = self.n_nodes_axis
        self.n_nodes = nx * ny * nz

        # model: per-particle material parameters, shared by every env
        typ = np.zeros(n_p, np.int32)
        mu, lam, mass, vol = (np.zeros(n_p, npf) for _ in range(4))
        par = np.zeros((n_p, 4), npf)
        for e in self.entities:
            code, p = e.material._code()
            s = e._sl
            typ[s], mu[s], lam[s] = code, e.material.mu, e.material.lam
            par[s] = p
            mass[s], vol[s] = e.particle_mass, e.particle_volume
        f = lambda a, dt=scalar: wp.array(a, dtype=dt, device=dev)  # noqa: E731
        self.model = SimpleNamespace(p_type=f(typ, wp.int32), p_mu=f(mu), p_lam=f(lam),
                                     p_par=f(par, vec4), p_mass=f(mass), p_vol=f(vol))
        # per-env particle masses: the material points a coupler sees (particle_carriers().points)
        self.p_mass2d = wp.array(np.broadcast_to(mass, (n, n_p)).copy(), dtype=scalar, device=dev)
        planes = o.planes
        self.plane_pos = wp.array(np.array([p for p, _ in planes], npf).reshape(-1, 3), dtype=vec3, device=dev)
        self.plane_nrm = wp.array(np.array([q for _, q in planes], npf).reshape(-1, 3), dtype=vec3, device=dev)

        # state
        init = np.concatenate([e.init_pos for e in self.entities]).astype(npf)
        self.pos = wp.array(np.broadcast_to(init, (n, n_p, 3)).copy(), dtype=vec3, device=dev)
        self.vel = wp.zeros((n, n_p), dtype=vec3, device=dev)
        self.C = wp.zeros((n, n_p), dtype=mat33, device=dev)
        eye = np.broadcast_to(np.eye(3, dtype=npf), (n, n_p, 3, 3)).copy()
        self.F = wp.array(eye, dtype=mat33, device=dev)
        self.Jp = wp.array(np.ones((n, n_p), npf), dtype=scalar, device=dev)
        self.active = wp.array(np.ones((n, n_p), np.int32), dtype=wp.int32, device=dev)

        # grid (scratch: cleared every substep, so not state)
        self.grid_mv = wp.zeros((n, self.n_nodes), dtype=vec3, device=dev)
        self.grid_m = wp.zeros((n, self.n_nodes), dtype=scalar, device=dev)
        self.grid_v = wp.zeros((n, self.n_nodes), dtype=vec3, device=dev)
        self.grid_active = wp.zeros((n, self.n_nodes), dtype=wp.int32, device=dev)
        # Σ w m (x_p − x_i) per node: the nodes' material centroids, computed only while a coupler reads
        # the nodes (particle_carriers() was called); empty otherwise (docs/legacy.md)
        self.grid_mx = wp.zeros((n, self.n_nodes), dtype=vec3, device=dev)
        self._grid_mx_empty = wp.zeros((0, 0), dtype=vec3, device=dev)
        self._centroids = False
        lo = np.asarray(o.grid_origin, np.float64)
        idx = np.indices(self.n_nodes_axis).reshape(3, -1).T
        node_pos = (lo + idx * o.dx).astype(npf)
        self.grid_pos = wp.array(np.broadcast_to(node_pos, (n, self.n_nodes, 3)).copy(), dtype=vec3,
                                 device=dev)
        # P2G scratch: each particle's affine momentum matrix and slab, the per-worker particle counts
        # per slab and each worker's slab range (kernels/transfer.py: the race-free scatter)
        n_w = layout.max_workers
        self.n_slabs = (nx - 3) // 2 + 1           # slab = base x-layer // SLAB (2 cells)
        self.affine = wp.zeros((n, n_p), dtype=mat33, device=dev)
        self.slab = wp.zeros((n, n_p), dtype=wp.int32, device=dev)
        # the slab-sorted lists come per claimed block of the stress stage (CPU, claim_stress) or per
        # worker's share: a list's slab counts and run ends per row, where each list starts (``lists_lo``)
        from .kernels import transfer

        self._claim_stress = bool(self.claim_stress) and wp.get_device(dev).is_cpu
        if self._claim_stress:
            self.n_stress_blocks = -(-n_p // transfer.STRESS_BLOCK)
            lists_lo = [b * transfer.STRESS_BLOCK for b in range(self.n_stress_blocks)]
        n_lists = self.n_stress_blocks if self._claim_stress else n_w
        self.slab_counts = wp.zeros((n, n_lists, self.n_slabs), dtype=wp.int32, device=dev)
        self.slab_ranges = wp.zeros((n, n_w), dtype=wp.vec2i, device=dev)
        # each worker's share of the particles sorted by slab (order[a:b] for the share [a, b)) and,
        # per share and slab, where its run ends in that list (CPU: the scatter reads only its slabs)
        self.slab_order = wp.zeros((n, n_p), dtype=wp.int32, device=dev)
        self.slab_cursor = wp.zeros((n, n_lists, self.n_slabs), dtype=wp.int32, device=dev)
        # the scatter's colours: even slabs, then odd ones (a fixed order on CPU); one pass on CUDA,
        # whose float atomics have no fixed order anyway
        self._colours = (0, 1) if wp.get_device(dev).is_cpu else (-1,)
        # device flags read after each step (not state); the fastest particle per env and worker, each
        # (env, worker) slot on a cache line of its own: G2P updates its slot for every particle, and
        # two workers (or two partitions' envs) updating one line would pass it back and forth
        self.clamp_flags = wp.zeros(n, dtype=wp.int32, device=dev)
        self.vmax = wp.zeros((n, n_w * VMAX_STRIDE), dtype=scalar, device=dev)

        dx = float(o.dx)
        edge_lo, edge_hi = lo + dx, lo + (np.asarray(self.n_nodes_axis) - 2) * dx
        # particles are held on the wall surface (wall_surface=True) or only at the grid's edge
        wall_lo, wall_hi = self._safe_box() if o.wall_surface else (edge_lo, edge_hi)
        self._consts = SimpleNamespace(
            lo=vec3(*lo.tolist()), dx=scalar(dx), inv_dx=scalar(o.grid_density), h=scalar(h),
            gravity=vec3(*layout.gravity), boundary=wp.vec3i(*o.wall_boundaries),
            friction=scalar(o.friction), x_min=vec3(*edge_lo.tolist()), x_max=vec3(*edge_hi.tolist()),
            wall_lo=vec3(*np.asarray(wall_lo, npf).tolist()), wall_hi=vec3(*np.asarray(wall_hi, npf).tolist()))
        self.blocks = BlockQueue(layout)
        self._parts = {}
        for part in layout.partitions:
            s = part.slice
            self._parts[part.index] = SimpleNamespace(
                n=part.n_envs, pos=self.pos[s], vel=self.vel[s], C=self.C[s], F=self.F[s], Jp=self.Jp[s],
                active=self.active[s], grid_mv=self.grid_mv[s], grid_m=self.grid_m[s],
                grid_v=self.grid_v[s], grid_active=self.grid_active[s], grid_pos=self.grid_pos[s],
                grid_mx=self.grid_mx[s], p_mass2d=self.p_mass2d[s], affine=self.affine[s], slab=self.slab[s],
                slab_counts=self.slab_counts[s], slab_ranges=self.slab_ranges[s], slab_order=self.slab_order[s],
                slab_cursor=self.slab_cursor[s],
                # where each worker's share of the particles (and so its slab-sorted list) starts
                share_lo=wp.array(np.array(lists_lo if self._claim_stress else [part.chunk(q, n_p)[0] for q in range(n_w)],
                                           np.int32), dtype=wp.int32, device=dev),
                clamp_flags=self.clamp_flags[s], vmax=self.vmax[s])

    def _check_resolution(self) -> None:
        o = self.options
        ratio = o.dx / o.spacing
        if ratio > 3.0 or ratio < 1.0:
            warnings.warn(
                f"MPMOptions: grid_density {o.grid_density} (dx = {o.dx:.4g} m) is "
                f"{'too coarse' if ratio > 3 else 'too fine'} for particle_size {o.spacing:.4g} m "
                f"({ratio ** 3:.3g} particles per cell; 8 is usual). Recommended grid_density = "
                f"{0.5 / o.spacing:.4g} (dx = 2·particle_size)", PolyphysWarning, stacklevel=4)

    def max_stable_substep(self) -> float:
        """The elastic-wave limit h_max = cfl_number·dx/max(c) over this solver's materials."""
        c = max(e.material.wave_speed for e in self.entities)
        return self.options.cfl_number * self.options.dx / c

    def _check_cfl(self, h: float) -> None:
        o = self.options
        if o.cfl_check == "off" or not self.entities:
            return
        h_max = self.max_stable_substep()
        if h <= h_max:
            return
        e = max(self.entities, key=lambda e: e.material.wave_speed)
        n_min = math.ceil(self.layout.dt / h_max)
        msg = (f"MPM substep h = dt/substeps = {h:.4g} s exceeds the largest stable substep {h_max:.4g} s "
               f"(cfl_number {o.cfl_number} · dx {o.dx:.4g} m / wave speed {e.material.wave_speed:.4g} m/s "
               f"of entity {e.name!r}); use SimOptions(substeps>={n_min}) for dt={self.layout.dt}, or "
               f"a lower E, or a coarser grid")
        if o.cfl_check == "error":
            raise BuildError(msg)
        warnings.warn(msg, PolyphysWarning, stacklevel=4)

    def kernel_modules(self, layout):
        """The grid and transfer kernels, with the overloads of the scene's precision only."""
        from polyphys.kernels import blocks

        from .kernels import grid, transfer

        grid.declare_overloads(layout.precision)
        transfer.declare_overloads(layout.precision)
        return [blocks, grid, transfer]

    # -- stepping --------------------------------------------------------------------------------
    def substep_pre_coupling(self, f, part):
        """Clear the grid and P2G's stress stage (over each worker's share of the nodes and the
        particles), P2G's scatter (even slabs, then odd: kernels/transfer.py), the grid update."""
        import warp as wp

        from .kernels import grid, transfer

        p, k, m, o = self._parts[part.index], self._consts, self.model, self.options
        nx, ny, nz = self.n_nodes_axis
        n_p, n_nodes = self.n_particles, self.n_nodes
        mx = p.grid_mx if self._centroids else self._grid_mx_empty

        def clear_and_stress(w):
            a, b = part.chunk(w, n_nodes)
            if b > a:
                wp.launch(grid.clear_grid, dim=(p.n, b - a), inputs=[a], outputs=[p.grid_mv, p.grid_m, mx])
            wp.launch(transfer.clear_counts, dim=(p.n, self.n_slabs), inputs=[w], outputs=[p.slab_counts])
            a, b = part.chunk(w, n_p)
            if b > a:
                wp.launch(transfer.p2g_stress, dim=(p.n, b - a),
                          inputs=[m.p_type, m.p_mu, m.p_lam, m.p_par, m.p_mass, m.p_vol, k.lo, k.inv_dx, ny, nz,
                                  n_nodes, k.h, a, w, p.pos, p.C, p.active],
                          outputs=[p.F, p.Jp, p.affine, p.slab, p.slab_counts])
                if self._colours[0] >= 0:
                    # this share's particles sorted by slab, for the scatter (kernels/transfer.py)
                    wp.launch(transfer.slab_starts, dim=p.n, inputs=[w, p.slab_counts], outputs=[p.slab_cursor])
                    wp.launch(transfer.slab_place, dim=(p.n, b - a), inputs=[a, w, p.slab],
                              outputs=[p.slab_cursor, p.slab_order])

        if self._claim_stress:
            # CPU: the stress stage's blocks claimed by the workers (a worker on a slower or busier core
            # takes fewer), each block also sorted by slab for the scatter; then worker w's share of the
            # grid clear. Claimed blocks read any particle G2P moved: a barrier after G2P.
            def clear(w):
                a, b = part.chunk(w, n_nodes)
                if b > a:
                    wp.launch(grid.clear_grid, dim=(p.n, b - a), inputs=[a], outputs=[p.grid_mv, p.grid_m, mx])

            self.blocks.stage(self, part, self.n_stress_blocks, lambda threads, claim, counters: wp.launch(
                transfer.p2g_stress_blocks, dim=(p.n, threads),
                inputs=[m.p_type, m.p_mu, m.p_lam, m.p_par, m.p_mass, m.p_vol, k.lo, k.inv_dx, ny, nz, n_nodes, k.h,
                        n_p, claim, p.pos, p.C, p.active],
                outputs=[p.F, p.Jp, p.affine, p.slab, p.slab_counts, p.slab_cursor, p.slab_order, counters]), then=clear)
        else:
            # after G2P (tagged G2P) worker by worker: the stress stage reads the positions and C of the
            # same particles, which G2P wrote on this worker; G2P reads neither the grid masses and
            # momenta nor the slab counts and stress outputs this stage writes (docs/mpm.md "Threads")
            self.parallel(part, clear_and_stress, after=G2P)
        for colour in self._colours:
            def scatter(w, colour=colour):
                if colour < 0:
                    if w == 0:   # one pass over every particle (CUDA)
                        wp.launch(transfer.p2g_scatter, dim=(p.n, n_p),
                                  inputs=[m.p_mass, k.lo, k.inv_dx, k.dx, ny, nz, p.slab, p.pos, p.vel, p.affine],
                                  outputs=[p.grid_mv, p.grid_m, mx])
                    return
                if colour == self._colours[0]:
                    # the ranges of the partition's workers (the shares' path: one row of counts per worker
                    # of the layout's largest partition, as before)
                    n_ranges = part.workers if self._claim_stress else p.slab_counts.shape[1]
                    wp.launch(transfer.slab_ranges, dim=p.n, inputs=[w, n_ranges, p.slab_counts], outputs=[p.slab_ranges])
                wp.launch(transfer.p2g_scatter_slabs, dim=(p.n, (self.n_slabs + 1 - colour) // 2),
                          inputs=[m.p_mass, k.lo, k.inv_dx, k.dx, ny, nz, w, colour, p.share_lo, p.slab_ranges,
                                  p.slab_counts, p.slab_cursor, p.slab_order, p.pos, p.vel, p.affine],
                          outputs=[p.grid_mv, p.grid_m, mx])

            self.parallel(part, scatter)

        model = [k.lo, k.dx, nx, ny, nz, o.boundary_padding, int(o.wall_surface), k.boundary, k.friction,
                 self.plane_pos, self.plane_nrm, k.gravity, k.h]
        ch = self.claim_nodes
        self.blocks.stage(self, part, -(-n_nodes // ch), lambda threads, claim, counters: wp.launch(
            grid.grid_update_blocks, dim=(p.n, threads), inputs=[*model, n_nodes, ch, claim, p.grid_mv, p.grid_m, mx],
            outputs=[p.grid_v, p.grid_active, p.grid_pos, counters]))

    def substep_post_coupling(self, f, part):
        """G2P and advection over claimed blocks of the particles (CPU, ``claim_stress``) or each worker's
        share."""
        import warp as wp

        from .kernels import transfer

        p, k = self._parts[part.index], self._consts
        nx, ny, nz = self.n_nodes_axis

        if self._claim_stress:
            # blocks of particles claimed by the workers, as the stress stage (nothing follows G2P worker by
            # worker on this path); a particle's speed goes to the slot of the worker that claimed it
            self.blocks.stage(self, part, self.n_stress_blocks, lambda threads, claim, counters: wp.launch(
                transfer.g2p_blocks, dim=(p.n, threads),
                inputs=[k.lo, k.inv_dx, k.dx, ny, nz, k.h, k.x_min, k.x_max, k.wall_lo, k.wall_hi, self.n_particles,
                        VMAX_STRIDE, claim, p.grid_v, p.active],
                outputs=[p.pos, p.vel, p.C, p.clamp_flags, p.vmax, counters]))
            return

        def g2p(w):
            a, b = part.chunk(w, self.n_particles)
            if b > a:
                wp.launch(transfer.g2p, dim=(p.n, b - a),
                          inputs=[k.lo, k.inv_dx, k.dx, ny, nz, k.h, k.x_min, k.x_max, k.wall_lo, k.wall_hi, a,
                                  w * VMAX_STRIDE, p.grid_v, p.active],
                          outputs=[p.pos, p.vel, p.C, p.clamp_flags, p.vmax])

        self.parallel(part, g2p, tag=G2P)

    def on_reset(self, envs_idx):
        self.blocks.clear()       # a step left half done may leave claim counters

    def particle_carriers(self, part) -> ParticleCarriers:
        """Grid nodes between the grid update and G2P: pos (the node's material centroid
        x̄ = x_i + Σ w m (x_p − x_i)/m_i: where its material is, so a coupler acts at the rigid
        surface rather than up to 1.5 cells ahead of the material; the lattice position where the
        node carries no mass), vel (changed by a coupler), mass, active (1 where the node carries
        mass). Asking for the carriers switches the centroid accumulation in P2G on."""
        self._centroids = True
        p = self._parts[part.index]
        points = ParticleCarriers(pos=p.pos, vel=p.vel, mass=p.p_mass2d, active=p.active, kind="particles")
        return ParticleCarriers(pos=p.grid_pos, vel=p.grid_v, mass=p.grid_m, active=p.grid_active,
                                kind="grid_nodes", points=points)

    def particle_state(self, part) -> ParticleCarriers:
        """ParticleStateView (sensors): the particles themselves after the step (their mass is per
        particle, not per env: None here; ``particle_mass`` has it)."""
        p = self._parts[part.index]
        return ParticleCarriers(pos=p.pos, vel=p.vel, mass=None, active=p.active, kind="particles")

    def state_arrays(self):
        return {"pos": self.pos, "vel": self.vel, "C": self.C, "F": self.F, "Jp": self.Jp,
                "active": self.active}

    def check_after_step(self) -> None:
        clamped = self.clamp_flags.numpy()
        vmax = self.vmax.numpy().max(axis=1)
        envs = np.nonzero(clamped)[0]
        if envs.size:
            if not self._clamp_warned:
                warnings.warn(f"MPM: particles in env(s) {envs.tolist()} reached the edge of the grid and "
                              f"were held there; enlarge MPMOptions lower_bound/upper_bound",
                              PolyphysWarning, stacklevel=4)
                self._clamp_warned = True
            self.clamp_flags.zero_()
        h, dx = self.layout.h, self.options.dx
        fast = np.nonzero(vmax * h > dx)[0]
        if fast.size and not self._speed_warned:
            e = int(fast[0])
            warnings.warn(f"MPM: in env {e} a particle moved at {vmax[e]:.4g} m/s, more than one cell "
                          f"(dx = {dx:.4g} m) per substep h = {h:.4g} s; the largest stable substep at that "
                          f"speed is dx/v = {dx / vmax[e]:.4g} s (raise SimOptions.substeps)",
                          PolyphysWarning, stacklevel=4)
            self._speed_warned = True
        self.vmax.zero_()

    # -- host access used by the entities ------------------------------------------------------------
    def _write(self, arr, envs: np.ndarray, cols: slice, values: np.ndarray) -> None:
        """arr[envs, cols] = values (host round trip; outside the step)."""
        host = arr.numpy().copy()
        host[envs, cols] = values
        arr.assign(host)

    # -- diagnostics used by tests and examples ------------------------------------------------------
    def particle_mass(self) -> np.ndarray:
        return self.model.p_mass.numpy().astype(float)

    def particle_volume(self) -> np.ndarray:
        return self.model.p_vol.numpy().astype(float)


def _fmt(v) -> str:
    return "(" + ", ".join(f"{x:.4g}" for x in np.asarray(v, float)) + ")"
