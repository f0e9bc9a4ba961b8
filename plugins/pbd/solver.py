"""PBDSolver: extended position-based dynamics (Macklin, Müller, Chentanez 2016) for cloth, elastic
bodies, granular particles and position-based fluids (Macklin & Müller 2013).

Per substep h = dt / substeps:
  pre-coupling   v += g h for free particles (the coupler may then change v)
  post-coupling  x_prev = x, x += v h; per-env neighbour grid; λ = 0; ``iterations`` times:
                 distance, bending, volume constraints (one launch per graph colour), cloth tethers,
                 shape matching,
                 PBF λ, contact + fluid gather (Jacobi), apply + static boundaries;
                 v = (x - x_prev) / h (· damping); XSPH viscosity.
State (docs/semantics.md §S8): pos, vel, free — x_prev, λ and the grid are rebuilt every substep, so these three
arrays are everything a bit-exact continuation needs.

Limitations: float32 only; no vorticity confinement or surface tension; the liquid density sees only
liquid neighbours (solid boundaries act through contacts); shape matching uses one cluster per
elastic body and a per-iteration stiffness, not an XPBD compliance.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from polyphys import morphs as M
from polyphys.arrays import write_env_rows
from polyphys.binsort import BinSort
from polyphys.blocks import BlockQueue
from polyphys.errors import OptionError
from polyphys.interfaces import Solver
from polyphys.views import ParticleCarriers, SurfaceMesh, SurfaceMeshView

from . import materials as mat
from . import sampling
from .entity import PBDEntity, check_particle_indices
from .options import PBDOptions

KIND = {"cloth": 0, "elastic": 1, "granular": 2, "liquid": 3}
TETHERS = 4          # long-range attachments per cloth vertex (to its nearest initially pinned ones)
# least items per worker's share of a cheap particle stage (a parallel stage costs a barrier, tens of
# microseconds); stages with more work per item use a quarter of it
GRAIN = 4096
# least room per particle in the neighbour lists (``PBDSolver._neighbour_capacity``): a settled
# pile of equal spheres has at most ~25 neighbours within one cell (3 radii), an impact up to ~80
MIN_NEIGHBOUR_CAPACITY = 64
# tag of the row-local stages (prediction, boundaries, velocity update: each worker reads and writes
# only its own particles' rows): a run of them is one segment of the captured program, one barrier
# (Solver.parallel, docs/pbd.md "Threads")
ROWS = "pbd.rows"


def _lattice_kernel_sum(d: float, h: float) -> float:
    """Σ_j W_poly6(|x_j|, h) over a cubic lattice of spacing d (self included): the density an
    interior particle of unit mass sees in the sampled rest configuration."""
    k = int(np.ceil(h / d))
    r = np.arange(-k, k + 1) * d
    X, Y, Z = np.meshgrid(r, r, r, indexing="ij")
    r2 = X ** 2 + Y ** 2 + Z ** 2
    w = 315.0 / (64.0 * np.pi * h ** 9) * np.clip(h * h - r2, 0, None) ** 3
    return float(w.sum())


class PBDSolver(Solver):
    options_type = PBDOptions
    # least items per worker's share of a parallel stage (``_rows``); tests lower it so that a small
    # scene splits every stage
    grain = GRAIN

    def __init__(self, scene, options, spec):
        super().__init__(scene, options, spec)
        self._recs: list[dict] = []

    # -- entities --------------------------------------------------------------------------------
    def add_entity(self, morph, material, surface=None, name=None, pinned=None, particles=None,
                   edges=None, jitter=0.0, **kwargs):
        """Add a PBD entity.

        :param pinned: local particle indices that start pinned (free = False) in every env.
        :param particles: (n, 3) particle positions in the morph's frame instead of sampling the
            morph's volume (Particle, Liquid, shape-matched Elastic).
        :param edges: (m, 2) local index pairs joined by XPBD distance constraints (Particle only;
            compliance ``material.edge_compliance``).
        :param jitter: sample at spacing particle_size·(1 + jitter) and displace each particle by
            up to ``jitter`` x particle_size/2 along each axis (uniform, seeded by the entity's
            index: deterministic), so that a sampled block is not a perfectly stacked lattice and
            no two particles start overlapping. Allowed in [0, 0.5).
        """
        if kwargs:
            raise OptionError(f"pbd add_entity: unknown arguments {sorted(kwargs)}; allowed: pinned, "
                              f"particles, edges, jitter")
        if isinstance(jitter, bool) or not isinstance(jitter, (int, float)) or not 0.0 <= jitter < 0.5:
            raise OptionError(f"pbd add_entity jitter = {jitter!r}: must be a number in [0, 0.5)")
        self._jitter = float(jitter)
        if self.layout is not None:
            raise OptionError("pbd add_entity after scene.build()")
        name = name or f"pbd_{len(self.entities)}"
        if isinstance(morph, M.Plane):
            raise OptionError("a Plane cannot be a PBD entity; use PBDOptions(planes=...) for static planes")
        if particles is not None and isinstance(material, mat.Cloth):
            raise OptionError("particles=... is not allowed for Cloth: give a triangle Mesh morph")
        if edges is not None and not isinstance(material, mat.Particle):
            raise OptionError(f"edges=... is only allowed for PBD.Particle, not {type(material).__name__}")
        if isinstance(material, mat.Cloth):
            rec = self._cloth(morph, material, name)
        elif isinstance(material, mat.Elastic):
            rec = self._elastic(morph, material, name, particles)
        elif isinstance(material, (mat.Particle, mat.Liquid)):
            rec = self._particles(morph, material, name, particles, edges)
        else:
            raise OptionError(f"PBD solver cannot take material {type(material).__name__}; allowed: "
                              f"PBD.Cloth, PBD.Elastic, PBD.Particle, PBD.Liquid")
        n = len(rec["pos"])
        pin = np.zeros(0, np.int64) if pinned is None else check_particle_indices(pinned, n, name, "pinned")
        rec["pinned"] = pin
        if rec["kind"] == "cloth" and material.tethers and len(pin):
            # the (up to) TETHERS nearest initially pinned vertices of each vertex, by rest distance
            # (the geodesic distance of a flat sheet; an upper bound for a curved one would be
            # longer, so a tether never pulls a curved cloth tighter than its rest shape)
            d = np.linalg.norm(rec["pos"][:, None, :] - rec["pos"][pin][None, :, :], axis=2)
            k = min(TETHERS, len(pin))
            near = np.argsort(d, axis=1, kind="stable")[:, :k]
            anchor = np.full((n, TETHERS), -1, np.int64)
            length = np.zeros((n, TETHERS))
            anchor[:, :k] = pin[near]
            length[:, :k] = np.take_along_axis(d, near, axis=1)
            anchor[pin] = -1
            rec["tethers"] = (anchor, length)
        self._check_inside(rec["pos"], name)
        entity = PBDEntity(self, len(self.entities), morph, material, surface, name, rec["kind"], n, pin)
        if rec["kind"] == "cloth":
            entity._triangles = rec["tris"]
        self._recs.append(rec)
        self.entities.append(entity)
        return entity

    def _check_inside(self, pos, name):
        lo, hi = np.asarray(self.options.lower_bound), np.asarray(self.options.upper_bound)
        out = np.any((pos < lo) | (pos > hi), axis=1)
        if out.any():
            raise OptionError(f"entity {name!r}: {int(out.sum())} particle(s) lie outside the PBD domain "
                              f"box lower_bound={tuple(lo)}, upper_bound={tuple(hi)} (e.g. "
                              f"{pos[np.argmax(out)].round(4).tolist()}); enlarge PBDOptions bounds")

    @staticmethod
    def _base(kind, pos, mass, radius, m):
        n = len(pos)
        return {"kind": kind, "pos": np.asarray(pos, float), "mass": np.asarray(mass, float),
                "radius": np.full(n, radius), "friction": np.full(n, m.friction),
                "self_collide": np.ones(n, np.int32), "rest_density": np.ones(n),
                "viscosity": np.zeros(n), "dist": [], "bends": None, "tets": None, "body": None,
                "tris": np.zeros((0, 3), np.int64), "spacing": None, "tethers": None}

    def _cloth(self, morph, m, name):
        if not isinstance(morph, M.Mesh) or (morph.faces is not None and morph.faces.shape[1] != 3):
            raise OptionError(f"cloth {name!r} needs a triangle Mesh morph (faces (m, 3)), got "
                              f"{type(morph).__name__}")
        tm = morph.load_trimesh()
        verts = sampling.to_world(morph, np.asarray(tm.vertices, float))
        tris = np.asarray(tm.faces, np.int64)
        edges, bends, varea = sampling.cloth_topology(verts, tris, name)
        rec = self._base("cloth", verts, m.rho * varea, m.thickness / 2, m)
        rec["self_collide"][:] = int(m.self_collision)
        rest = np.linalg.norm(verts[edges[:, 0]] - verts[edges[:, 1]], axis=1)
        rec["dist"].append((edges, rest, np.full(len(edges), m.stretch_compliance)))
        rec["bends"] = (bends, sampling.dihedral_angle(verts, bends), np.full(len(bends), m.bending_compliance))
        rec["tris"] = tris
        return rec

    def _elastic(self, morph, m, name, particles):
        if isinstance(morph, M.Mesh) and morph.faces is not None and morph.faces.shape[1] == 4:
            v = np.asarray(morph.vertices, float)
            if not morph.file_meshes_are_zup:
                v = np.stack([v[:, 0], -v[:, 2], v[:, 1]], axis=1)
            verts = sampling.to_world(morph, v * np.asarray(morph.scale))
            tets, vol, edges = sampling.tet_topology(verts, morph.faces, name)
            used = np.zeros(len(verts), bool)
            used[tets.ravel()] = True
            if not used.all():
                raise OptionError(f"elastic {name!r}: vertices {np.nonzero(~used)[0][:10].tolist()} "
                                  f"belong to no tetrahedron; remove them")
            vmass = np.zeros(len(verts))
            for k in range(4):
                np.add.at(vmass, tets[:, k], m.rho * vol / 4.0)
            rest = np.linalg.norm(verts[edges[:, 0]] - verts[edges[:, 1]], axis=1)
            radius = min(m.particle_size / 2, 0.5 * rest.min())
            rec = self._base("elastic", verts, vmass, radius, m)
            rec["dist"].append((edges, rest, np.full(len(edges), m.stretch_compliance)))
            rec["tets"] = (tets, vol, np.full(len(tets), m.volume_compliance))
            return rec
        pos = self._sample(morph, m, name, particles)
        d = m.particle_size
        rec = self._base("elastic", pos, np.full(len(pos), m.rho * d ** 3), d / 2, m)
        rec["body"] = m.shape_stiffness
        return rec

    def _sample(self, morph, m, name, particles):
        if particles is not None:
            p = np.asarray(particles, dtype=float)
            if p.ndim != 2 or p.shape[1] != 3 or len(p) == 0 or not np.all(np.isfinite(p)):
                raise OptionError(f"entity {name!r}: particles= must be a finite (n >= 1, 3) array, got "
                                  f"shape {p.shape}")
            return sampling.to_world(morph, p)
        pos = sampling.sample_volume(morph, m.particle_size * (1.0 + self._jitter))
        if self._jitter:
            rng = np.random.default_rng(len(self.entities))
            pos = pos + rng.uniform(-1.0, 1.0, pos.shape) * (self._jitter * m.particle_size / 2)
        return pos

    def _particles(self, morph, m, name, particles, edges):
        pos = self._sample(morph, m, name, particles)
        d = m.particle_size
        if isinstance(m, mat.Liquid):
            rec = self._base("liquid", pos, np.zeros(len(pos)), d / 2, m)   # mass set at build
            rec["rest_density"][:] = m.rho
            rec["viscosity"][:] = m.viscosity
            rec["spacing"] = d
            return rec
        rec = self._base("granular", pos, np.full(len(pos), m.rho * d ** 3), d / 2, m)
        if edges is not None:
            e = np.asarray(edges)
            if e.ndim != 2 or e.shape[1] != 2 or not np.issubdtype(e.dtype, np.integer):
                raise OptionError(f"entity {name!r}: edges= must be an (m, 2) integer array, got {e.shape}")
            check_particle_indices(e, len(pos), name, "edges")
            if np.any(e[:, 0] == e[:, 1]):
                raise OptionError(f"entity {name!r}: edges {e[e[:, 0] == e[:, 1]][:5].tolist()} join a "
                                  f"particle to itself")
            rest = np.linalg.norm(pos[e[:, 0]] - pos[e[:, 1]], axis=1)
            rec["dist"].append((e.astype(np.int64), rest, np.full(len(e), m.edge_compliance)))
        return rec

    # -- build -----------------------------------------------------------------------------------
    def build(self, layout):
        import warp as wp

        self.layout = layout
        opts = self.options
        recs = self._recs
        starts = np.cumsum([0] + [len(r["pos"]) for r in recs])
        for e, s in zip(self.entities, starts):
            e.start = int(s)
        N = int(starts[-1])
        cat = lambda key: np.concatenate([r[key] for r in recs])   # noqa: E731
        host = {k: cat(k) for k in ("pos", "mass", "radius", "friction", "self_collide", "rest_density",
                                    "viscosity")}
        host["kind"] = np.concatenate([np.full(len(r["pos"]), KIND[r["kind"]]) for r in recs])
        host["group"] = np.concatenate([np.full(len(r["pos"]), k) for k, r in enumerate(recs)])
        # liquids: one smoothing radius h = 2 · (largest liquid spacing); mass calibrated so that an
        # interior particle of the sampled lattice has exactly the rest density
        spacings = [r["spacing"] for r in recs if r["kind"] == "liquid"]
        self.fluid_h = 2.0 * max(spacings) if spacings else 0.0
        for r, s in zip(recs, starts):
            if r["kind"] == "liquid":
                n = len(r["pos"])
                host["mass"][s:s + n] = r["rest_density"][0] / _lattice_kernel_sum(r["spacing"], self.fluid_h)
        inv_mass = np.where(host["mass"] > 0, 1.0 / np.maximum(host["mass"], 1e-300), 0.0)
        self.host = host
        # constraints, global indices, coloured
        dist = [(c + s, rest, comp) for r, s in zip(recs, starts) for (c, rest, comp) in r["dist"]]
        dcon = np.concatenate([d[0] for d in dist]) if dist else np.zeros((0, 2), np.int64)
        drest = np.concatenate([d[1] for d in dist]) if dist else np.zeros(0)
        dcomp = np.concatenate([d[2] for d in dist]) if dist else np.zeros(0)
        bends = [(r["bends"][0] + s, *r["bends"][1:]) for r, s in zip(recs, starts) if r["bends"] is not None]
        bcon = np.concatenate([b[0] for b in bends]) if bends else np.zeros((0, 4), np.int64)
        brest = np.concatenate([b[1] for b in bends]) if bends else np.zeros(0)
        bcomp = np.concatenate([b[2] for b in bends]) if bends else np.zeros(0)
        tets = [(r["tets"][0] + s, *r["tets"][1:]) for r, s in zip(recs, starts) if r["tets"] is not None]
        tcon = np.concatenate([t[0] for t in tets]) if tets else np.zeros((0, 4), np.int64)
        trest = np.concatenate([t[1] for t in tets]) if tets else np.zeros(0)
        tcomp = np.concatenate([t[2] for t in tets]) if tets else np.zeros(0)
        dord, self._dcol = sampling.greedy_colour(dcon, N)
        bord, self._bcol = sampling.greedy_colour(bcon, N)
        tord, self._tcol = sampling.greedy_colour(tcon, N)
        dcon, drest, dcomp = dcon[dord], drest[dord], dcomp[dord]
        bcon, brest, bcomp = bcon[bord], brest[bord], bcomp[bord]
        tcon, trest, tcomp = tcon[tord], trest[tord], tcomp[tord]
        self.n_dist, self.n_bend, self.n_tet = len(dcon), len(bcon), len(tcon)
        n_lam = self.n_dist + self.n_bend + self.n_tet
        # shape-matched bodies
        bodies = [(s, len(r["pos"]), r["body"]) for r, s in zip(recs, starts) if r["body"] is not None]
        rest_off = np.zeros((N, 3))
        body_ref, body_inv_mass = [], []
        for s, n, _ in bodies:
            p, m = host["pos"][s:s + n], host["mass"][s:s + n]
            rest_off[s:s + n] = p - (m[:, None] * p).sum(0) / m.sum()
            # the kernel sums relative to the particle nearest the rest centre of mass (float32
            # sums of absolute positions bias the centre; kernels/constraints.py shape_match)
            body_ref.append(s + int(np.argmin(np.linalg.norm(rest_off[s:s + n], axis=1))))
            body_inv_mass.append(1.0 / m.sum())
        self.n_bodies = len(bodies)
        teth_a = np.full((N, TETHERS), -1, np.int64)
        teth_l = np.zeros((N, TETHERS))
        for r, s in zip(recs, starts):
            if r["tethers"] is not None:
                a, ln = r["tethers"]
                n = len(r["pos"])
                teth_a[s:s + n] = np.where(a >= 0, a + s, -1)
                teth_l[s:s + n] = ln
        self.has_tethers = bool((teth_a >= 0).any())
        tris = np.concatenate([r["tris"] + s for r, s in zip(recs, starts)]) if recs else np.zeros((0, 3))
        self.n_tris = len(tris)
        # neighbour grid over the domain box
        lo, hi = np.asarray(opts.lower_bound), np.asarray(opts.upper_bound)
        # the neighbour lists are built once per substep (after the prediction) and hold every pair
        # within one cell: the cell is the PBF smoothing radius or 1.5 x the largest contact distance
        # (a pair may close that margin during the constraint iterations and still be listed)
        cell = max(3.0 * host["radius"].max(), self.fluid_h)
        dims = np.maximum(1, np.ceil((hi - lo) / cell).astype(np.int64))
        tsize = 64
        while tsize < 2 * N:
            tsize *= 2
        # cells keyed densely (x fastest: a scan reads 9 rows of three consecutive cells) while the
        # domain has at most 16 cells per particle (+ 65536), else by a hash into 2N..4N buckets
        n_cells = int(np.prod(dims.astype(float)))
        dense = n_cells <= 16 * N + 65536
        self._grid = SimpleNamespace(cell=cell, inv_cell=1.0 / cell, dims=wp.vec3i(*[int(min(d, 2**30)) for d in dims]),
                                     mask=tsize - 1, lower=wp.vec3(*lo), upper=wp.vec3(*hi), dense=int(dense),
                                     n_keys=n_cells if dense else tsize)
        self.has_liquid = bool(np.any(host["kind"] == 3))
        self.has_contacts = self._needs_contacts(recs)
        ne, dev = layout.n_envs, layout.device
        f32, i32 = np.float32, np.int32

        def arr(a, dtype):
            return wp.array(np.ascontiguousarray(a), dtype=dtype, device=dev)

        self.model = SimpleNamespace(
            inv_mass0=arr(inv_mass.astype(f32), wp.float32), mass=arr(host["mass"].astype(f32), wp.float32),
            radius=arr(host["radius"].astype(f32), wp.float32), friction=arr(host["friction"].astype(f32), wp.float32),
            kind=arr(host["kind"].astype(i32), wp.int32), group=arr(host["group"].astype(i32), wp.int32),
            self_collide=arr(host["self_collide"].astype(i32), wp.int32),
            rest_pos=arr(host["pos"].astype(f32), wp.vec3), rest_density=arr(host["rest_density"].astype(f32), wp.float32),
            viscosity=arr(host["viscosity"].astype(f32), wp.float32),
            d_i=arr(dcon[:, 0].astype(i32), wp.int32), d_j=arr(dcon[:, 1].astype(i32), wp.int32),
            d_rest=arr(drest.astype(f32), wp.float32), d_comp=arr(dcomp.astype(f32), wp.float32),
            b_quad=arr(bcon.astype(i32).reshape(-1, 4), wp.vec4i), b_rest=arr(brest.astype(f32), wp.float32),
            b_comp=arr(bcomp.astype(f32), wp.float32),
            t_quad=arr(tcon.astype(i32).reshape(-1, 4), wp.vec4i), t_rest=arr(trest.astype(f32), wp.float32),
            t_comp=arr(tcomp.astype(f32), wp.float32),
            body_start=arr(np.array([b[0] for b in bodies], i32), wp.int32),
            body_count=arr(np.array([b[1] for b in bodies], i32), wp.int32),
            body_ref=arr(np.array(body_ref, i32), wp.int32),
            body_inv_mass=arr(np.array(body_inv_mass, f32), wp.float32),
            body_stiff=arr(np.array([b[2] for b in bodies], f32), wp.float32),
            rest_offset=arr(rest_off.astype(f32), wp.vec3),
            plane_p=arr(np.array([p for p, _ in opts.planes], f32).reshape(-1, 3), wp.vec3),
            plane_n=arr(np.array([n for _, n in opts.planes], f32).reshape(-1, 3), wp.vec3),
            sphere_c=arr(np.array([c for c, _ in opts.static_spheres], f32).reshape(-1, 3), wp.vec3),
            sphere_r=arr(np.array([r for _, r in opts.static_spheres], f32), wp.float32),
            tris=arr(tris.astype(i32).reshape(-1, 3), wp.int32),
            teth_anchor=arr(teth_a.reshape(-1).astype(i32), wp.int32),
            teth_len=arr(teth_l.reshape(-1).astype(f32), wp.float32),
            mass2d=arr(np.tile(host["mass"].astype(f32), (ne, 1)), wp.float32),
        )
        # state (docs/semantics.md §S8) and per-substep scratch; never reallocated after build
        free0 = np.ones(N, i32)
        for r, s in zip(recs, starts):
            free0[s + r["pinned"]] = 0
        self.pos = arr(np.tile(host["pos"].astype(f32), (ne, 1, 1)), wp.vec3)
        self.vel = wp.zeros((ne, N), dtype=wp.vec3, device=dev)
        self.free = arr(np.tile(free0, (ne, 1)), wp.int32)
        self.pos_prev = wp.zeros((ne, N), dtype=wp.vec3, device=dev)
        self.pos_pred = wp.zeros((ne, N), dtype=wp.vec3, device=dev)
        self.vel_tmp = wp.zeros((ne, N), dtype=wp.vec3, device=dev)
        self.delta = wp.zeros((ne, N), dtype=wp.vec3, device=dev)
        self.lam = wp.zeros((ne, max(n_lam, 1)), dtype=wp.float32, device=dev)
        self.lam_fluid = wp.zeros((ne, N), dtype=wp.float32, device=dev)
        self.cell_ijk = wp.zeros((ne, N), dtype=wp.vec3i, device=dev)
        # the grid: the core's counting sort of the particles by cell key (polyphys.binsort), with the
        # positions copied in key order; key k's particles are sorted_idx[cell_start[k]:cell_start[k + 1]]
        self.binsort = BinSort(layout, N, self._grid.n_keys if self.has_contacts else 1)
        self.blocks = BlockQueue(layout)
        self.cell_start, self.sorted_idx = self.binsort.start, self.binsort.order
        self.pos_sorted = wp.zeros((ne, N), dtype=wp.vec3, device=dev)
        # per-substep neighbour lists (kernels/neighbors.py build_neighbors): room for twice the
        # most neighbours any particle has within one cell at build (a particle with more scans the
        # grid instead: nothing is dropped)
        self.nbr_cap = self._neighbour_capacity(host["pos"], cell) if self.has_contacts else 1
        self.nbr_count = wp.zeros((ne, N), dtype=wp.int32, device=dev)
        self.nbr_list = wp.zeros((ne, max(N * self.nbr_cap, 1)), dtype=wp.int32, device=dev)
        self.n_particles, self.n_lam = N, n_lam
        self._parts = {}
        for part in layout.partitions:
            s = part.slice
            self._parts[part.index] = SimpleNamespace(
                n=part.n_envs, **{k: getattr(self, k)[s] for k in (
                    "pos", "vel", "free", "pos_prev", "pos_pred", "vel_tmp", "delta", "lam", "lam_fluid", "cell_ijk",
                    "cell_start", "sorted_idx", "pos_sorted", "nbr_count", "nbr_list")}, mass2d=self.model.mass2d[s])

    @staticmethod
    def _neighbour_capacity(pos: np.ndarray, cell: float) -> int:
        """Room per particle in the neighbour lists: twice the most neighbours within one cell any
        particle has at build, and at least ``MIN_NEIGHBOUR_CAPACITY``. A particle with more at run
        time scans the grid instead, with the same result (kernels/neighbors.py), but that scan
        gathers every candidate's position at random in each iteration: at the impact of the
        granular benchmark block (a jittered lattice with 7 neighbours on average, 11 at most) the
        under-iterated contacts let particles overlap to 38 neighbours on average and 84 at most,
        and with room for 22 two thirds of the particles scanned, which tripled the contact stage's
        time (docs/pbd.md)."""
        from scipy.spatial import cKDTree

        counts = cKDTree(pos).query_ball_point(pos, cell, return_length=True) - 1
        most = int(counts.max()) if len(counts) else 0
        return int(max(MIN_NEIGHBOUR_CAPACITY, 2 * most))

    @staticmethod
    def _needs_contacts(recs) -> bool:
        """Particle contacts are needed unless the scene is one cloth without self-collision or one
        elastic body (whose own particles never collide with each other)."""
        n = sum(len(r["pos"]) for r in recs)
        lone = len(recs) == 1 and (recs[0]["kind"] == "elastic" or
                                   (recs[0]["kind"] == "cloth" and not recs[0]["self_collide"].any()))
        return n >= 2 and not lone

    def kernel_modules(self, layout):
        """Integration and constraint kernels; the neighbour grid (with the core's BinSort kernels)
        only when particles can touch."""
        from polyphys.kernels import binsort, blocks

        from .kernels import constraints, integrate, neighbors

        return [integrate, constraints] + ([binsort, blocks, neighbors] if self._needs_contacts(self._recs) else [])

    # -- stepping --------------------------------------------------------------------------------
    def _claimed(self, part, kernel, head, arrays, outputs):
        """A particle stage over the N particles in blocks of ITEM_BLOCK that the workers claim
        (polyphys.blocks: a particle's cost is its neighbours' count, which varies over the scene)."""
        import warp as wp

        from .kernels import neighbors as NB

        p, N = self._parts[part.index], self.n_particles
        self.blocks.stage(self, part, -(-N // NB.ITEM_BLOCK), lambda threads, claim, counters: wp.launch(
            kernel, dim=(p.n, threads), inputs=[*head, N, claim, *arrays], outputs=[*outputs, counters],
            device=self.layout.device))

    def _rows(self, part, n, fn, per_item=1, local=False, tag=None):
        """One parallel stage: ``fn(a, b)`` launches over worker w's share [a, b) of n items (shares
        of at least ``self.grain // per_item`` items: a small stage runs on fewer workers; a stage
        with ``per_item`` times the work per item splits sooner). ``local``: the stage reads and
        writes only its own items' rows (of the particle arrays over the shares of N, or of the
        multipliers), so it may follow a run of such stages (tagged ROWS) worker by worker with no
        barrier (Solver.parallel's ``after``); ``tag`` alone: tagged, not following.

        A stage that fits in one share (one worker, or n < 2 grains) is launched here, on the
        partition's own thread, as worker 0's share would be: it joins the serial graph with the
        launches around it, so a run of small stages (the colours of a small cloth) costs no barrier
        each (benchmarks/results/pbd.md, round 17c); the same launches in the same order."""
        grain = max(1, self.grain // per_item)
        if part.workers == 1 or n < 2 * grain:
            if n > 0:
                fn(0, n)
            return

        def stage(w):
            a, b = part.chunk(w, n, grain)
            if b > a:
                fn(a, b)

        self.parallel(part, stage, tag=ROWS if local else tag, after=ROWS if local else None)

    def _colours(self, part, kernel, cols, per_item, inputs, outputs):
        """The colours ``cols`` of one constraint kind with a ``*_range`` kernel (one thread per env
        looping over a range of constraints, kernels/constraints.py): when every colour fits in one
        share (one worker, or colours under 2 grains: a small cloth), one launch runs all colours in
        order (the same updates in the same order as colour by colour); otherwise one stage per
        colour, each worker looping over its share."""
        import warp as wp

        p, dev = self._parts[part.index], self.layout.device
        sizes = np.diff(cols)
        if not len(sizes) or cols[-1] == cols[0]:
            return
        L = lambda k0, k1: wp.launch(kernel, dim=p.n, inputs=[k0, k1, *inputs], outputs=outputs,  # noqa: E731
                                     device=dev)
        if part.workers == 1 or (sizes < 2 * max(1, self.grain // per_item)).all():
            L(int(cols[0]), int(cols[-1]))
            return
        for c in range(len(sizes)):
            a0 = int(cols[c])
            self._rows(part, int(sizes[c]), lambda a, b, a0=a0: L(a0 + a, a0 + b), per_item)

    def substep_pre_coupling(self, f, part):
        import warp as wp

        from .kernels.integrate import predict_velocity

        p, m, lay = self._parts[part.index], self.model, self.layout
        self._rows(part, self.n_particles, lambda a, b: wp.launch(
            predict_velocity, dim=p.n, inputs=[m.inv_mass0, wp.vec3(*lay.gravity), float(lay.h), a, b, p.free],
            outputs=[p.vel], device=lay.device), local=True)

    def build_grid(self, part) -> None:
        """The substep's neighbour grid and lists at the current positions (kernels/neighbors.py):
        cell keys and the core's counting sort with the positions in key order, then each
        particle's list. Stages split over the partition's workers."""
        import warp as wp

        from .kernels import neighbors as NB

        p, g, dev = self._parts[part.index], self._grid, self.layout.device
        N = self.n_particles
        key, _, _ = self.binsort.views(part)
        # the keys of worker w's particles read only their positions: after row-local stages (ROWS)
        # over the same shares, no barrier is needed before them
        same = part.chunks(N, self.grain) == part.chunks(N)
        self.binsort.sort(self, part, lambda w, a, b: wp.launch(
            NB.cell_keys, dim=(p.n, b - a), inputs=[g.dense, g.mask, g.lower, g.inv_cell, g.dims, a, p.pos],
            outputs=[p.cell_ijk, key], device=dev) if b > a else None, payload=(p.pos, p.pos_sorted),
            after=ROWS if same else None)
        self._claimed(part, NB.build_neighbors, [g.cell * g.cell, self.nbr_cap, g.dense, g.dims, g.mask, g.lower, g.inv_cell],
                      [p.pos, p.cell_ijk, p.cell_start, p.sorted_idx, p.pos_sorted], [p.nbr_count, p.nbr_list])

    def substep_post_coupling(self, f, part):
        """Every stage is split over the partition's workers (docs/pbd.md, "Threads"): a colour's
        constraints share no particle, so a colour splits freely; the particle stages gather."""
        import warp as wp

        from .kernels import constraints as C
        from .kernels import integrate as I
        from .kernels import neighbors as NB

        p, m, lay, g, o = self._parts[part.index], self.model, self.layout, self._grid, self.options
        dev, N, h = lay.device, self.n_particles, float(lay.h)
        inv_h2 = 1.0 / (h * h)
        L = lambda kernel, n, inputs, outputs: wp.launch(kernel, dim=(p.n, n), inputs=inputs,  # noqa: E731
                                                         outputs=outputs, device=dev)
        R = lambda kernel, inputs, outputs: wp.launch(kernel, dim=p.n, inputs=inputs, outputs=outputs,  # noqa: E731
                                                      device=dev)     # a range kernel: one thread per env
        self._rows(part, N, lambda a, b: R(I.predict_position, [h, a, b, p.vel], [p.pos, p.pos_prev, p.pos_pred]),
                   local=True)
        if self.n_lam:
            self._rows(part, self.n_lam, lambda a, b: wp.launch(I.zero_lambda, dim=p.n, inputs=[a, b], outputs=[p.lam],
                                                                device=dev), local=True)
        grid = [p.cell_ijk, p.cell_start, p.sorted_idx]
        nbrs = [p.nbr_count, p.nbr_list]
        if self.has_contacts:
            self.build_grid(part)
        lam_off_b, lam_off_t = self.n_dist, self.n_dist + self.n_bend
        for _ in range(o.iterations):
            self._colours(part, C.solve_distance_range, self._dcol, 1,
                          [0, m.d_i, m.d_j, m.d_rest, m.d_comp, m.inv_mass0, inv_h2, p.free], [p.pos, p.lam])
            self._colours(part, C.solve_bending_range, self._bcol, 4,
                          [lam_off_b, m.b_quad, m.b_rest, m.b_comp, m.inv_mass0, inv_h2, p.free], [p.pos, p.lam])
            for c in range(len(self._tcol) - 1):
                a0, b0 = int(self._tcol[c]), int(self._tcol[c + 1])
                self._rows(part, b0 - a0, lambda a, b, a0=a0: L(
                    C.solve_volume, b - a, [a0 + a, lam_off_t, m.t_quad, m.t_rest, m.t_comp, m.inv_mass0, inv_h2,
                                            p.free], [p.pos, p.lam]), 4)
            if self.has_tethers:
                self._rows(part, N, lambda a, b: L(C.solve_tethers, b - a,
                                                   [TETHERS, m.teth_anchor, m.teth_len, m.inv_mass0, a, p.free], [p.pos]))
            if self.n_bodies:
                self._rows(part, self.n_bodies, lambda a, b: L(
                    C.shape_match, b - a, [m.body_start, m.body_count, m.body_ref, m.body_inv_mass, m.body_stiff,
                                           m.rest_offset, m.mass, m.inv_mass0, a, p.free], [p.pos]), self.grain)
            if self.has_liquid:
                self._rows(part, N, lambda a, b: L(
                    NB.fluid_lambda, b - a, [m.kind, m.mass, m.inv_mass0, m.rest_density, self.fluid_h, o.fluid_cfm,
                                             g.dense, g.dims, g.mask, self.nbr_cap, a, p.free, p.pos, *grid, *nbrs],
                    [p.lam_fluid]), 4)
            if self.has_contacts:
                self._claimed(part, NB.particle_gather, [m.kind, m.group, m.self_collide, m.rest_pos, m.radius, m.friction,
                                                         m.mass, m.inv_mass0, m.rest_density, self.fluid_h,
                                                         g.cell * g.cell, o.relaxation, g.dense, g.dims, g.mask,
                                                         self.nbr_cap],
                              [p.free, p.pos, p.pos_prev, p.lam_fluid, *grid, *nbrs], [p.delta])
            # row-local, but it may not follow the stage before it worker by worker (the contact
            # gather reads every particle's position): tagged, not after
            self._rows(part, N, lambda a, b: R(
                I.apply_and_bound, [m.inv_mass0, m.radius, g.lower, g.upper, m.plane_p, m.plane_n, m.sphere_c,
                                    m.sphere_r, o.boundary_friction, a, b, p.free, p.pos_prev, p.delta], [p.pos]),
                       tag=ROWS)
        damp = max(0.0, 1.0 - o.damping * h)
        if self.has_liquid:
            self._rows(part, N, lambda a, b: R(I.update_velocity, [1.0 / h, damp, a, b, p.pos, p.pos_pred, p.vel],
                                               [p.vel_tmp]), local=True)
            self._rows(part, N, lambda a, b: L(
                NB.xsph_viscosity, b - a, [m.kind, m.mass, m.rest_density, m.viscosity, self.fluid_h, g.dense, g.dims,
                                           g.mask, self.nbr_cap, a, p.pos, p.vel_tmp, *grid, *nbrs], [p.vel]),
                4)
        else:
            self._rows(part, N, lambda a, b: R(I.update_velocity, [1.0 / h, damp, a, b, p.pos, p.pos_pred, p.vel],
                                               [p.vel]), local=True)

    def on_reset(self, envs_idx):
        if self.has_contacts:
            self.binsort.clear()    # a step left half done (SceneStateError until a reset) may leave counts
        self.blocks.clear()

    def state_arrays(self):
        return {"pos": self.pos, "vel": self.vel, "free": self.free}

    # -- views -----------------------------------------------------------------------------------
    def particle_carriers(self, part) -> ParticleCarriers:
        """Every particle; ``active`` is the free flag (a coupler leaves pinned particles alone)."""
        p = self._parts[part.index]
        return ParticleCarriers(pos=p.pos, vel=p.vel, mass=p.mass2d, active=p.free)

    def surface_mesh(self, part) -> SurfaceMesh:
        """Cloth triangles (global particle indices) with the particles' pos/vel."""
        p = self._parts[part.index]
        return SurfaceMesh(pos=p.pos, vel=p.vel, triangles=self.model.tris)

    def view(self, protocol):
        if protocol is SurfaceMeshView and not any(e.kind == "cloth" for e in self.entities):
            return None
        return super().view(protocol)

    # -- host access used by the entities ----------------------------------------------------------
    def write_rows(self, arr, envs: np.ndarray, cols: slice, values: np.ndarray) -> None:
        """arr[envs, cols] = values (host round trip; outside the step)."""
        write_env_rows(arr, envs, cols, values)
