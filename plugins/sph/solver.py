"""SPHSolver: WCSPH and DFSPH liquids with a per-env counting-sort neighbour grid.

Papers: Monaghan (1994, 2005) WCSPH with the Tait equation of state (Becker & Teschner 2007);
Bender & Koschier (2015, 2017) divergence-free SPH; Akinci et al. (2012) boundary particles and
(2013) cohesion; Adami et al. (2012) extrapolated wall pressure; Monaghan (1989) XSPH.
Substep (h = dt/substeps):

WCSPH   grid → density + Tait pressure → wall pressure →
        dv = h·(g + pressure + viscosity + cohesion) + XSPH, v += dv | coupling | x += h·v, clamp into the domain.
DFSPH   grid → density + α → divergence solve (v) →
        dv = h·(g + hydrostatic wall offset + viscosity + cohesion) + XSPH, v += dv →
        constant-density solve (v) → v back to particle order | coupling | x += h·v, clamp into the domain.
The neighbour stages run in cell order on sorted copies of what they read of a neighbour
(kernels/fluid.py, docs/sph.md "Cell order"); the state stays in particle order.

The state is pos, vel, active (DFSPH also the warm-start totals of κ of both solves); densities,
pressures and the grid are recomputed from it every substep, so a checkpoint continues bit-exactly
and captured = uncaptured.
Limitations: one particle size per scene; boundaries are static (moving bodies couple through
ParticleView); free-slip walls; the DFSPH solves stop per env at the tolerance or the iteration cap;
a resting DFSPH column jitters at the divergence tolerance's velocity residual, more than a WCSPH
one in large or weakly viscous columns (docs/sph.md, validation status).
"""

from __future__ import annotations

import math
import warnings
from types import SimpleNamespace

import numpy as np
from polyphys.binsort import BinSort
from polyphys.blocks import BlockQueue
from polyphys.errors import BuildError, OptionError, PolyphysWarning
from polyphys.interfaces import Solver
from polyphys.views import ParticleCarriers

from . import sampling
from .entity import SPHBoundaryEntity, SPHEntity
from .materials import Boundary, Liquid
from .options import SPHOptions

# weight of the DFSPH warm start: the share of the last substep's κ total applied first and carried
# (SPlisHSPlasH's 0.5; see SPHSolver._solve)
WARM_START_WEIGHT = 0.5
# tag of a parallel stage that writes only worker w's particles ``part.chunk(w, N)`` (the integration):
# the next substep's cell keys may follow it worker by worker (Solver.parallel, docs/sph.md "Neighbour search")
ROWS = "sph.rows"


class SPHSolver(Solver):
    options_type = SPHOptions
    # CPU: the neighbour sort's scatter and the integration as claimed stages (polyphys.blocks: a
    # slower or descheduled core's share goes to the other workers) instead of fixed shares; the
    # switches (read at build) are there for in-process A/B (benchmarks/results/sph.md, round 15b)
    claim_sort = True
    claim_integrate = True
    # CPU, with claim_sort: the cell keys and the sort's count as a claimed stage too (BinSort.sort(...,
    # count=...): blocks taken two-ended, so the ranks keep their order; benchmarks/results/sph.md, round 16)
    claim_count = True

    def __init__(self, scene, options, spec):
        super().__init__(scene, options, spec)
        self.options = options if options is not None else SPHOptions()
        self._liquids: list[SPHEntity] = []
        self._boundaries: list[SPHBoundaryEntity] = []
        self._planes: list[tuple] = []
        self._n = 0
        self._cfl_warned = False

    # -- composition -------------------------------------------------------------------------------
    def _check_inside(self, pts: np.ndarray, what: str) -> None:
        lo, hi = np.asarray(self.options.lower_bound), np.asarray(self.options.upper_bound)
        out = ~np.all((pts >= lo) & (pts <= hi), axis=1)
        if out.any():
            first = pts[np.argmax(out)]
            raise OptionError(f"{what}: {int(out.sum())} of {len(pts)} particles lie outside the SPH "
                              f"domain [{tuple(lo)}, {tuple(hi)}] (first at {tuple(np.round(first, 6))}); "
                              f"move the morph or widen SPHOptions(lower_bound=..., upper_bound=...)")

    def add_entity(self, morph, material, surface=None, name=None, **kwargs):
        if kwargs:
            raise OptionError(f"sph add_entity: unknown arguments {sorted(kwargs)}")
        o = self.options
        idx = len(self.entities)
        if isinstance(material, Liquid):
            pts = sampling.sample_volume(morph, o.particle_size)
            label = name or f"sph_{idx}"
            self._check_inside(pts, f"SPH entity {label!r} ({type(morph).__name__})")
            entity = SPHEntity(self, idx, morph, material, surface, name, pts, self._n)
            self._n += len(pts)
            self._liquids.append(entity)
        elif isinstance(material, Boundary):
            pts = sampling.sample_surface(morph, o.particle_size, o.lower_bound, o.upper_bound)
            from polyphys import morphs as M

            if isinstance(morph, M.Plane):
                self._planes.append((morph.pos, morph.normal))
            entity = SPHBoundaryEntity(self, idx, morph, material, surface, name, pts)
            self._boundaries.append(entity)
        else:
            raise OptionError(f"the SPH solver takes SPH.Liquid or SPH.Boundary materials, got "
                              f"{type(material).__name__}")
        self.entities.append(entity)
        return entity

    def kernel_modules(self, layout):
        """The neighbour grid (with the core's BinSort kernels) and the fluid kernels (float32)."""
        from polyphys.kernels import binsort, blocks

        from .kernels import fluid, grid

        return [binsort, blocks, grid, fluid]

    # -- build ---------------------------------------------------------------------------------------
    def build(self, layout):
        import warp as wp

        from .kernels import fluid, grid

        self.layout = layout
        o = self.options
        if self._n == 0:
            raise BuildError("the SPH solver has no liquid particle: add an entity with "
                             "polyphys.materials.SPH.Liquid(...)")
        n_envs, N, dev = layout.n_envs, self._n, layout.device
        dx, H = o.particle_size, o.support
        self.dims = o.grid_dims
        self.n_cells = int(np.prod(self.dims))
        self.N = N

        # per-particle material (the same in every env)
        mats = np.zeros((N, 6))
        for e in self._liquids:
            m = e.material
            mats[e._sl] = (m.rho, m.stiffness, m.exponent, m.mu, m.gamma,
                           sampling.lattice_mass(m.rho, dx, H, o.kernel))
        pos0 = np.concatenate([e.init_pos for e in self._liquids])
        self._check_time_step(layout, mats, pos0)

        # one layer of boundary particles stands for the missing liquid only within 2·dx; beyond
        # it the walls under-support the liquid (measured: a resting column with support 3·dx
        # sank 3 cm into the floor layer and jittered at 0.4 m/s)
        if (o.box_walls or self._boundaries) and H > 2.0 * dx * (1 + 1e-9):
            raise OptionError(f"SPHOptions.support_radius = {H:g} m exceeds 2·particle_size = {2 * dx:g} m while "
                              f"the scene has walls (box_walls or SPH.Boundary entities): a wall is one "
                              f"layer of boundary particles, which stands for the missing liquid only within "
                              f"2·particle_size, and a liquid at rest sinks into it; allowed: "
                              f"support_radius <= {2 * dx:g} m, or no walls (box_walls=False and no "
                              f"SPH.Boundary)")
        # boundary particles: the domain walls and the Boundary entities, sorted by grid cell
        # the wall layer lies dx/2 outside the domain (see sampling.sample_surface)
        lo_w, hi_w = np.asarray(o.lower_bound) - dx / 2, np.asarray(o.upper_bound) + dx / 2
        parts = [sampling.box_surface(lo_w, hi_w, dx)] if o.box_walls else []
        parts += [e.boundary_points for e in self._boundaries if len(e.boundary_points)]
        bpts = np.concatenate(parts) if parts else np.zeros((0, 3))
        bvol = sampling.boundary_volumes(bpts, dx, H, o.kernel)
        if o.box_walls:
            # the box walls are one lattice layer dx/2 outside each face: every site stands for
            # one liquid lattice site, so every site gets the flat-wall volume. (Akinci's
            # V_b = c/Σ_k W_bk reads a fold as a thinner wall: face sites next to an edge got
            # 0.95-0.97 of it, corner sites 1.16, and the liquid along the edges was pushed
            # into them.)
            bvol[: len(parts[0])] = sampling.flat_wall_volume(dx, H, o.kernel)
        lo = np.asarray(o.lower_bound)
        dims = np.asarray(self.dims)
        cc = np.clip(np.floor((bpts - lo) / H).astype(np.int64), 0, dims - 1)
        bcell = (cc[:, 2] * dims[1] + cc[:, 1]) * dims[0] + cc[:, 0]
        order = np.argsort(bcell, kind="stable")
        bpts, bvol, bcell = bpts[order], bvol[order], bcell[order]
        bstart = np.searchsorted(bcell, np.arange(self.n_cells + 1)).astype(np.int32)
        self.n_boundary = len(bpts)

        f32 = np.float32
        m = fluid.Model()
        m.lower = wp.vec3(*o.lower_bound)
        m.upper = wp.vec3(*o.upper_bound)
        m.inv_cell = 1.0 / H
        m.dims = wp.vec3i(*self.dims)
        m.n_cells = self.n_cells
        m.H = H
        m.kernel = 0 if o.kernel == "cubic" else 1
        m.h = layout.h
        m.gravity = wp.vec3(*layout.gravity)
        m.xsph = o.xsph_factor
        m.omega = o.omega
        # boundary pressure (SPHOptions.boundary_pressure): b_press multiplies the liquid
        # particle's own pᵢ/ρᵢ² (DFSPH: κᵢ/ρᵢ) in the boundary term, b_extrap adds the pressure
        # extrapolated to the boundary particle (Adami et al. 2012; DFSPH: its hydrostatic part,
        # the κ increments being mirrored)
        wc = o.pressure_solver == "wcsph"
        bmode = o.boundary_pressure
        m.b_press = {"extrapolated": 1.0 if wc else 2.0, "mirrored": 2.0, "single": 1.0}[bmode]
        m.b_extrap = 1 if bmode == "extrapolated" else 0
        for k, name in enumerate(("rest_rho", "stiffness", "exponent", "mu", "gamma")):
            setattr(m, name, wp.array(mats[:, k].astype(f32), dtype=float, device=dev))
        m.b_pos = wp.array(bpts.astype(f32).reshape(-1, 3) if len(bpts) else np.zeros((1, 3), f32),
                           dtype=wp.vec3, device=dev)
        m.b_vol = wp.array(bvol.astype(f32) if len(bvol) else np.zeros(1, f32), dtype=float, device=dev)
        m.b_start = wp.array(bstart, dtype=wp.int32, device=dev)
        pl = self._planes or [((0.0, 0.0, 0.0), (0.0, 0.0, 1.0))]
        m.plane_p = wp.array(np.array([p for p, _ in pl], f32), dtype=wp.vec3, device=dev)
        m.plane_n = wp.array(np.array([n for _, n in pl], f32), dtype=wp.vec3, device=dev)
        m.n_planes = len(self._planes)
        m.nbr_cap = self._neighbour_capacity(pos0, bpts.reshape(-1, 3), H)
        # rounding margin of the cell-distance test of the neighbour scans (kernels/fluid.py,
        # row_near): float32 cell faces, gaps and r² are off by a few ulp of the coordinates
        m.cell_slack = 1e-3 * H + 16 * float(np.finfo(f32).eps) * float(
            np.abs(np.concatenate([o.lower_bound, o.upper_bound])).max() + H)
        self.model = m
        self.rest_rho_host = mats[:, 0]

        # state
        self.pos = wp.array(np.tile(pos0.astype(f32)[None], (n_envs, 1, 1)), dtype=wp.vec3, device=dev)
        self.vel = wp.zeros((n_envs, N), dtype=wp.vec3, device=dev)
        self.active = wp.ones((n_envs, N), dtype=wp.int32, device=dev)
        # DFSPH warm starts: the accumulated κ of the last density and divergence solves
        # hydrostatic start: κ = p/ρ = |g|·depth below each liquid's top, so that a liquid at rest
        # starts in equilibrium instead of dropping while the Jacobi solve builds its pressure
        k0 = np.zeros(N)
        g = np.asarray(layout.gravity, float)
        if np.linalg.norm(g) > 0 and o.pressure_solver == "dfsph":
            up = -g / np.linalg.norm(g)
            for e in self._liquids:
                hgt = e.init_pos @ up
                k0[e._sl] = np.linalg.norm(g) * (hgt.max() - hgt + 0.5 * dx)
        self.kappa_rho = wp.array(np.tile(k0.astype(f32), (n_envs, 1)), dtype=float, device=dev)
        self.kappa_div = wp.zeros((n_envs, N), dtype=float, device=dev)
        # parameters and derived per-substep arrays (not state)
        self.mass = wp.array(np.tile(mats[:, 5].astype(f32), (n_envs, 1)), dtype=float, device=dev)
        z = lambda shape, dt=float: wp.zeros(shape, dtype=dt, device=dev)  # noqa: E731
        self.n_chunks = -(-N // grid.CHUNK)
        # the neighbour grid: the core's counting sort of the particles by cell (key n_cells: inactive)
        self.binsort = BinSort(layout, N, self.n_cells + 1)
        self.blocks = BlockQueue(layout)
        cpu = wp.get_device(dev).is_cpu
        self._claim_sort, self._claim_integrate = bool(self.claim_sort) and cpu, bool(self.claim_integrate) and cpu
        self._claim_count = self._claim_sort and bool(self.claim_count)
        self.cell, self.sorted, self.start = self.binsort.key, self.binsort.order, self.binsort.start
        self.pos_sorted = z((n_envs, N), wp.vec3)      # positions in cell order (the scans read them)
        self.rho = z((n_envs, N))
        self.pressure = z((n_envs, N))
        self.alpha = z((n_envs, N))
        # what the neighbour stages read of a neighbour, in sorted order (kernels/fluid.py): velocity
        # (DFSPH: before and after the non-pressure accelerations), mass, density, pressure, p/ρ², α, κ/ρ
        self.vel_s = z((n_envs, N), wp.vec3)
        self.vel_t = z((n_envs, N) if o.pressure_solver == "dfsph" else (n_envs, 1), wp.vec3)
        self.mass_s = z((n_envs, N))
        self.rho_s = z((n_envs, N))
        self.press_s = z((n_envs, N))
        self.pr2_s = z((n_envs, N))
        self.alpha_s = z((n_envs, N))
        self.kr_s = z((n_envs, N))
        # the substep's neighbour lists, written by ``density`` (kernels/fluid.py) per sorted place:
        # count (−1: more than fit; the readers then scan the cells), the list (liquid neighbour as its
        # sorted place, boundary particle b as −b − 1) and each pair's kernel gradient factor
        self.nbrs = z((n_envs, N), wp.int32)
        self.nbr_list = z((n_envs, max(N * m.nbr_cap, 1)), wp.int32)
        self.nbr_grad = z((n_envs, max(N * m.nbr_cap, 1)))
        self.dv = z((n_envs, N), wp.vec3)
        self.kappa = z((n_envs, N))
        self.pdiv = z((n_envs, N))
        self.zeros = z((n_envs, N))
        self.err = z((n_envs, N))
        self.err_sum = z((n_envs, self.n_chunks))
        self.err_cnt = z((n_envs, self.n_chunks))
        self.done = z(n_envs, wp.int32)
        self.solve_err = z(n_envs)
        self.cfl_flag = z(n_envs, wp.int32)
        # per partition: the DFSPH solve loop's condition and iteration count (polyphys while_loop)
        self.loops = z((len(layout.partitions), 2), wp.int32)
        self._device_loops = wp.get_device(dev).is_cpu
        # wall pressures of the WCSPH Adami extrapolation (DFSPH forms its wall pressure pairwise)
        self.bp = z((n_envs, max(self.n_boundary, 1) if (wc and m.b_extrap) else 1))
        names = ("pos", "vel", "active", "kappa_rho", "kappa_div", "mass", "cell", "sorted", "start", "pos_sorted", "rho",
                 "pressure", "alpha", "vel_s", "vel_t", "mass_s", "rho_s", "press_s", "pr2_s", "alpha_s", "kr_s", "nbrs",
                 "nbr_list", "nbr_grad", "dv", "kappa", "pdiv", "zeros", "err", "err_sum", "err_cnt", "done",
                 "solve_err", "cfl_flag", "bp")
        self._parts = {p.index: SimpleNamespace(n=p.n_envs, loop=self.loops[p.index],
                                                **{k: getattr(self, k)[p.slice] for k in names})
                       for p in layout.partitions}
        self.forward()

    @staticmethod
    def _neighbour_capacity(pos: np.ndarray, bpts: np.ndarray, H: float) -> int:
        """Room per particle in the neighbour lists: 1.5 × the most liquid + boundary neighbours
        within the support any particle has at build (at least 16). A particle with more at run
        time scans the cells instead (kernels/fluid.py ``density``)."""
        from scipy.spatial import cKDTree

        if len(pos) == 0:
            return 16
        n = cKDTree(pos).query_ball_point(pos, H, return_length=True) - 1
        if len(bpts):
            n = n + cKDTree(bpts).query_ball_point(pos, H, return_length=True)
        return int(max(16, np.ceil(1.5 * n.max())))

    def _check_time_step(self, layout, mats, pos0) -> None:
        """CFL limits (Monaghan 2005): WCSPH h ≤ cfl·dx/(c₀ + v), c₀ = √(B·γ/ρ₀) — an error;
        DFSPH h ≤ cfl·dx/v — a warning. v = √(2|g|Δ) is the free-fall speed over the liquid's height
        Δ above the domain floor (along gravity)."""
        o = self.options
        dx, h = o.particle_size, layout.h
        g = np.asarray(layout.gravity, float)
        gn = float(np.linalg.norm(g))
        v = 0.0
        if gn > 0:
            up = -g / gn
            corners = np.array([[x, y, z] for x in (o.lower_bound[0], o.upper_bound[0])
                                for y in (o.lower_bound[1], o.upper_bound[1])
                                for z in (o.lower_bound[2], o.upper_bound[2])])
            drop = float((pos0 @ up).max() - (corners @ up).min())
            v = math.sqrt(2.0 * gn * max(drop, 0.0))
        hint = lambda hmax: (f"largest stable substep is {hmax:.3g} s: set SimOptions(substeps >= "  # noqa: E731
                             f"{math.ceil(layout.dt / hmax - 1e-9)}) for dt = {layout.dt}")
        if o.pressure_solver == "wcsph":
            c0 = float(np.sqrt(mats[:, 1] * mats[:, 2] / mats[:, 0]).max())
            hmax = o.cfl * dx / (c0 + v)
            if h > hmax * (1 + 1e-9):
                raise OptionError(f"SPH (WCSPH) substep h = dt/substeps = {h:.3g} s exceeds the CFL limit "
                                  f"cfl·dx/(c0 + v) with speed of sound c0 = {c0:.3g} m/s and fall speed "
                                  f"v = {v:.3g} m/s; {hint(hmax)}")
        elif v > 0:
            hmax = o.cfl * dx / v
            if h > hmax * (1 + 1e-9):
                warnings.warn(f"SPH (DFSPH) substep h = {h:.3g} s exceeds the CFL estimate cfl·dx/v "
                              f"with fall speed v = {v:.3g} m/s; {hint(hmax)}", PolyphysWarning,
                              stacklevel=4)
        # viscosity (explicit): the fastest lattice mode decays at λ = ν·viscous_rate; the update is
        # stable for h·λ ≤ 2 — warn beyond half of that
        nu = mats[:, 3] / mats[:, 0]
        if nu.max() > 0:
            hmax = 1.0 / (sampling.viscous_rate(dx, o.support, o.kernel) * float(nu.max()))
            if h > hmax * (1 + 1e-9):
                warnings.warn(f"SPH substep h = {h:.3g} s exceeds half the explicit stability limit of the "
                              f"viscosity (kinematic viscosity mu/rho = {nu.max():.3g} m²/s at particle_size "
                              f"{dx:g}); {hint(hmax)}", PolyphysWarning, stacklevel=4)
        # too little viscosity: nothing damps the particle-scale noise of the pressure forces
        # (measured: a resting column at dx = 2 cm blows up at mu = 0.1 Pa·s and below, docs/sph.md)
        nu_min = 0.01 * dx * v
        if o.xsph_factor == 0.0 and nu.min() < nu_min:
            warnings.warn(f"SPH: kinematic viscosity mu/rho = {nu.min():.3g} m²/s is below 0.01·dx·v = "
                          f"{nu_min:.3g} m²/s (particle_size {dx:g} m, fall speed v = {v:.3g} m/s): SPH at "
                          f"this resolution then has too little dissipation at the particle scale and a "
                          f"resting liquid can become unstable; raise Liquid(mu=...) (Pa·s) or set "
                          f"SPHOptions(xsph=0.5)", PolyphysWarning, stacklevel=4)

    # -- stepping --------------------------------------------------------------------------------------
    def _launch(self, kernel, dim, inputs):
        import warp as wp

        wp.launch(kernel, dim=dim, inputs=inputs, device=self.layout.device)

    def _rows(self, part, n, fn, tag=None):
        """One parallel stage: ``fn(a, b)`` launches over worker w's share [a, b) of n items."""
        def stage(w):
            a, b = part.chunk(w, n)
            if b > a:
                fn(a, b)

        self.parallel(part, stage, tag=tag)

    def _grid(self, part, p):
        """The neighbour grid: cell keys and the core's counting sort (polyphys.binsort)."""
        from .kernels import grid as G

        m = self.model
        # the cell keys of worker w's particles read only their positions, which the fixed-share
        # integration (tagged ROWS, the same shares of the N particles) wrote on worker w: no barrier
        # between (a claimed integration writes any worker's particles: a barrier). Claimed (claim_count),
        # the keys and counts are one stage of blocks (``cell_keys_claimed``), after a barrier either way.
        count = ((G.cell_keys_claimed, [m.lower, m.inv_cell, m.dims, self.n_cells], [p.pos, p.active])
                 if self._claim_count else None)
        self.binsort.sort(self, part, lambda w, a, b: self._launch(
            G.cell_keys, (p.n, b - a), [m.lower, m.inv_cell, m.dims, self.n_cells, a, p.pos, p.active, p.cell])
            if b > a else None, payload=(p.pos, p.pos_sorted), after=None if self._claim_integrate else ROWS,
            blocks=self.blocks if self._claim_sort else None, count=count)

    def _places(self, part, kernel, head, arrays, then=None):
        """A neighbour stage over the N sorted places in blocks of PLACE_BLOCK that the workers claim
        (polyphys.blocks: a particle's cost is its neighbours', unequal across the block); ``then(w)``:
        worker w's other launches of the stage (BlockQueue.stage)."""
        from .kernels import fluid as F

        n_blocks = -(-self.N // F.PLACE_BLOCK)
        p = self._parts[part.index]
        self.blocks.stage(self, part, n_blocks, lambda threads, claim, counters: self._launch(
            kernel, (p.n, threads), [*head, self.N, claim, *arrays, counters]), then)

    def _density(self, part, p):
        from .kernels import fluid as F

        wc = 1 if self.options.pressure_solver == "wcsph" else 0
        self._places(part, F.density, [self.model, wc], [p.mass, p.vel, p.active, p.start, p.sorted, p.pos_sorted, p.rho,
                                                          p.pressure, p.alpha, p.rho_s, p.press_s, p.pr2_s, p.alpha_s,
                                                          p.vel_s, p.mass_s, p.nbrs, p.nbr_list, p.nbr_grad])

    def _boundary_pressure(self, part, p):
        """WCSPH: extrapolated boundary pressures p_b (Adami et al. 2012) per env. (DFSPH forms its
        wall pressure pairwise: the solves mirror κ, ``accelerate`` adds the hydrostatic offset.)"""
        from .kernels import fluid as F

        if self.model.b_extrap and self.n_boundary:
            # blocks of BP_BLOCK boundary particles, claimed by the workers (the walls' busy parts,
            # where the liquid is, go to whichever worker is free)
            n_b = self.n_boundary
            self.blocks.stage(self, part, -(-n_b // F.BP_BLOCK), lambda threads, claim, counters: self._launch(
                F.boundary_pressure, (p.n, threads),
                [self.model, n_b, claim, p.start, p.pos_sorted, p.rho_s, p.press_s, p.bp, counters]))

    # the neighbour stages, each over sorted places (kernels/fluid.py); velocities in sorted order
    def _accelerate(self, part, p, vel_out, out_sorted: int):
        """dv (particle order) and v + dv into ``vel_out``: at sorted places (out_sorted) or particles."""
        from .kernels import fluid as F

        wc = int(self.options.pressure_solver == "wcsph")
        self._places(part, F.accelerate, [self.model, wc, out_sorted],
                     [p.active, p.start, p.sorted, p.pos_sorted, p.mass_s, p.vel_s, p.rho_s, p.pr2_s, p.nbrs, p.nbr_list,
                      p.nbr_grad, p.bp, p.kappa_rho, p.dv, vel_out])

    def _kappa_step(self, part, p, vel_s, base, total, out):
        """A Jacobi step's κ (``solve_kappa``; a claimed stage over the sorted places)."""
        from .kernels import fluid as F

        self._places(part, F.solve_kappa, [self.model], [p.done, p.active, p.start, p.sorted, p.pos_sorted, p.mass_s,
                                                         vel_s, p.nbrs, p.nbr_list, p.nbr_grad, p.rho_s, p.alpha_s, base,
                                                         p.kappa, p.kr_s, p.err, total, out])

    def _velocity_update(self, part, p, vel_s, then=None):
        """The velocity update with κ/ρ in ``kr_s`` (``solve_update``; a claimed stage over the sorted
        places; ``then(w)``: worker w's other launches of the stage)."""
        from .kernels import fluid as F

        self._places(part, F.solve_update, [self.model], [p.done, p.active, p.start, p.sorted, p.pos_sorted, p.mass_s,
                                                          p.nbrs, p.nbr_list, p.nbr_grad, p.kr_s, vel_s], then)

    def _kappa_over_rho(self, part, p, kappa, scale: float, factor: float):
        """kr_s = scale·κ/ρ in sorted order, then κ ← factor·κ."""
        from .kernels import fluid as F

        self._rows(part, self.N, lambda a, b: self._launch(
            F.kappa_over_rho, (p.n, b - a), [scale, factor, a, p.sorted, p.rho_s, p.kr_s, kappa]))

    def _scatter_vel(self, part, p, vel_s):
        from .kernels import fluid as F

        self._rows(part, self.N, lambda a, b: self._launch(F.scatter_vel, (p.n, b - a), [a, p.sorted, vel_s, p.vel]))

    def _solve(self, part, p, divergence: bool, vel_s):
        """One DFSPH solve on the sorted velocities ``vel_s``. Warm start (Bender & Koschier 2017, in
        SPlisHSPlasH's form): half of the κ total the solve reached in the last substep is applied
        first and carried, and the solve adds its increments to it — at rest the total settles to
        the whole pressure, half carried and half rebuilt by the Jacobi steps. (Restarting the
        total at 0 made it alternate between the whole pressure and nothing, so every other
        substep rebuilt all of it from the solve's residual; carrying it whole is an undamped
        integral of the density error and rings — docs/sph.md.) The solve stops per env at the
        tolerance (at least 2 density iterations) or the iteration cap. Each Jacobi step is two
        parallel stages (κ; the velocity update with the chunk sums of the error) and the
        convergence test."""
        from .kernels import grid as G

        o, ne, N = self.options, p.n, self.N
        L = self._launch
        total = p.kappa_div if divergence else p.kappa_rho
        L(G.zero_flags, ne, [p.done])
        if o.warm_start:
            self._kappa_over_rho(part, p, total, WARM_START_WEIGHT, WARM_START_WEIGHT)
            self._velocity_update(part, p, vel_s)
        else:
            from .kernels import fluid as F

            self._rows(part, N, lambda a, b: L(F.zero_rows, (ne, b - a), [a, total]))
        base, out = (p.zeros, p.pdiv) if divergence else (p.pdiv, p.pressure)
        iters = o.max_divergence_iters if divergence else o.max_density_iters
        tol = o.divergence_tol if divergence else o.density_tol

        def chunk_sums(w):
            # worker w's share of the chunk sums of the error (written by the κ stage)
            a, b = part.chunk(w, self.n_chunks)
            if b > a:
                L(G.reduce_chunks, (ne, b - a), [N, a, p.err, p.active, p.done, p.err_sum, p.err_cnt])

        min_iters = 1 if divergence else 2
        go, it = p.loop[0:1], p.loop[1:2]

        def iteration():
            self._kappa_step(part, p, vel_s, base, total, out)
            # apply the κ just accumulated before the convergence test (as SPlisHSPlasH): every κ
            # in the accumulator and in the reported pressure has acted on the velocities
            self._velocity_update(part, p, vel_s, then=chunk_sums)
            L(G.check_converged, ne, [self.n_chunks, tol, min_iters, p.err_sum, p.err_cnt, it, p.done, p.solve_err])
            L(G.loop_next, 1, [iters, p.done, it, go])

        L(G.loop_begin, 1, [iters, it, go])
        if self._device_loops:
            # stop when every env of the partition converged (a device-side loop: no launch of
            # the converged iterations, no host synchronisation)
            self.while_loop(part, go, iteration)
        else:
            # CUDA: every iteration is launched (conditional graph nodes need CUDA 12.4); an env
            # that converged skips the work — the same result
            for _ in range(iters):
                iteration()

    def _integrate(self, part, p):
        from .kernels import fluid as F

        cfl = 0.5 * self.options.support
        if self._claim_integrate:
            self.blocks.stage(self, part, -(-self.N // F.INTEGRATE_BLOCK), lambda threads, claim, counters: self._launch(
                F.integrate_blocks, (p.n, threads), [self.model, cfl, self.N, claim, p.active, p.pos, p.vel, p.cfl_flag,
                                                     counters]))
        else:
            self._rows(part, self.N, lambda a, b: self._launch(
                F.integrate, (p.n, b - a), [self.model, cfl, a, p.active, p.pos, p.vel, p.cfl_flag]), tag=ROWS)

    def substep_pre_coupling(self, f, part):
        """Stages (each split over the partition's workers, docs/sph.md "Neighbour search"): the grid, the
        densities (which also gather the velocities into cell order), the wall pressure or the
        divergence solve, the accelerations with v += dv (every stage reads the neighbours'
        velocities from the sorted copy, so the result can be written at once), the density solve
        and the velocities back into particle order."""
        p = self._parts[part.index]
        self._grid(part, p)
        self._density(part, p)
        if self.options.pressure_solver == "wcsph":
            self._boundary_pressure(part, p)
            self._accelerate(part, p, p.vel, 0)
        else:
            self._solve(part, p, True, p.vel_s)
            self._accelerate(part, p, p.vel_t, 1)
            self._solve(part, p, False, p.vel_t)
            self._scatter_vel(part, p, p.vel_t)

    def substep_post_coupling(self, f, part):
        self._integrate(part, self._parts[part.index])

    def forward(self):
        """Recompute the grid and densities (WCSPH: pressures too) at the current positions."""
        for part in self.layout.partitions:
            p = self._parts[part.index]
            self._grid(part, p)
            self._density(part, p)

    def on_reset(self, envs_idx):
        self.binsort.clear()        # a step left half done (SceneStateError until a reset) may leave counts
        self.blocks.clear()
        self.forward()

    def check_after_step(self):
        flags = self.cfl_flag.numpy().copy()
        if flags.any():
            self.cfl_flag.zero_()
            if not self._cfl_warned:
                self._cfl_warned = True
                envs = np.nonzero(flags)[0].tolist()
                vmax = float(np.linalg.norm(self.vel.numpy()[envs], axis=-1).max())
                hmax = self.options.cfl * self.options.particle_size / max(vmax, 1e-12)
                warnings.warn(f"SPH: particles in env(s) {envs} moved more than half the kernel support "
                              f"in one substep (max speed now {vmax:.3g} m/s, h = {self.layout.h:.3g} s); "
                              f"the largest stable substep is about {hmax:.3g} s: raise "
                              f"SimOptions(substeps)", PolyphysWarning, stacklevel=3)

    def state_arrays(self):
        if self.options.pressure_solver == "dfsph":
            return {"pos": self.pos, "vel": self.vel, "active": self.active,
                    "kappa_rho": self.kappa_rho, "kappa_div": self.kappa_div}
        return {"pos": self.pos, "vel": self.vel, "active": self.active}

    # -- views ---------------------------------------------------------------------------------------
    def particle_carriers(self, part) -> ParticleCarriers:
        p = self._parts[part.index]
        return ParticleCarriers(pos=p.pos, vel=p.vel, mass=p.mass, active=p.active, kind="particles")

    @property
    def boundary_positions(self) -> np.ndarray:
        """The static boundary particles (n_boundary, 3), sorted by grid cell."""
        return self.model.b_pos.numpy()[: self.n_boundary].astype(float)
