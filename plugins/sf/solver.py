"""SFSolver: incompressible gas and smoke on a staggered (MAC) grid per env — stable fluids.

Substep h (all in ``substep_pre_coupling``; the gas exposes no view, so no coupler acts on it):

1. obstacles: cells inside the geoms of every RigidView solver of the scene are solid and move with
   their link (one way: the gas sees the bodies, the bodies feel nothing); fixed faces get the
   solid's (or a closed wall's zero) normal velocity;
2. advection of u, v, w, smoke density and temperature (MacCormack or semi-Lagrangian, RK2 trace);
3. emitters: density += rate·h, temperature += heat·h inside each source, jets impose their velocity;
4. forces: buoyancy and vorticity confinement; boundary conditions again;
5. viscosity (when > 0): implicit, Jacobi sweeps;
6. projection: A p = -div u by PCG (multigrid or diagonal preconditioner) with a per-env test
   max|div u| <= tolerance, a fixed cap, masked envs and an early exit by a conditional graph node;
   u -= ∇p on the free faces.

References: Stam, "Stable fluids" (SIGGRAPH 1999); Fedkiw, Stam, Jensen, "Visual simulation of
smoke" (SIGGRAPH 2001); Selle et al., "An unconditionally stable MacCormack method" (J. Sci. Comput.
2008); McAdams, Sifakis, Teran, "A parallel multigrid Poisson solver for fluids simulation on large
grids" (SCA 2010); Bridson, "Fluid simulation for computer graphics" (2015). Limits: docs/sf.md.
"""

from __future__ import annotations

import math
import warnings
from types import SimpleNamespace

import numpy as np
from polyphys import morphs as M
from polyphys.arrays import env_slice
from polyphys.errors import OptionError, PolyphysWarning, SimulationError
from polyphys.interfaces import Solver
from polyphys.views import RigidView

from .entity import EmitterEntity, SmokeEntity
from .materials import Emitter, SFMaterial, Smoke
from .options import SFOptions

FIELD_OFFSETS = {"u": (0.0, 0.5, 0.5), "v": (0.5, 0.0, 0.5), "w": (0.5, 0.5, 0.0), "cell": (0.5, 0.5, 0.5)}


class SFSolver(Solver):
    options_type = SFOptions

    def __init__(self, scene, options, spec):
        super().__init__(scene, options, spec)
        self.smokes: list[SmokeEntity] = []
        self.emitters: list[EmitterEntity] = []
        self._cap_warned: set = set()

    # -- composition ---------------------------------------------------------------------------
    def add_entity(self, morph, material, surface=None, name=None, **kwargs):
        if kwargs:
            raise OptionError(f"sf add_entity: unknown arguments {sorted(kwargs)}")
        if type(material) is SFMaterial or not isinstance(material, (Smoke, Emitter)):
            raise OptionError(f"sf add_entity: material {type(material).__name__} is not an SF material; use "
                              f"polyphys.materials.SF.Smoke or polyphys.materials.SF.Emitter")
        if not isinstance(morph, (M.Sphere, M.Box)):
            raise OptionError(f"sf add_entity: morph {type(morph).__name__} is not supported for an SF "
                              f"{type(material).__name__}; use a Sphere or a Box")
        label = name or f"sf_{len(self.entities)}"
        self._check_region(label, morph, morph.pos)
        if isinstance(material, Emitter):
            entity = EmitterEntity(self, len(self.entities), morph, material, surface, name, len(self.emitters))
            self.emitters.append(entity)
        else:
            entity = SmokeEntity(self, len(self.entities), morph, material, surface, name)
            self.smokes.append(entity)
        self.entities.append(entity)
        return entity

    def _extent(self, morph) -> np.ndarray:
        """Half extent of the morph's axis-aligned bounding box."""
        if isinstance(morph, M.Sphere):
            return np.full(3, morph.radius)
        q = morph.orientation
        rot = _quat_matrix(q)
        return np.abs(rot) @ (0.5 * np.asarray(morph.size))

    def _check_region(self, name, morph, center) -> None:
        o = self.options
        c = np.asarray(center, float)
        ext = self._extent(morph)
        lo, hi = np.asarray(o.lower_bound), np.asarray(o.upper_bound)
        tol = 1e-9 * max(1.0, float(np.abs(hi).max()))
        if np.any(c - ext < lo - tol) or np.any(c + ext > hi + tol):
            raise OptionError(
                f"SF entity {name!r}: its {type(morph).__name__} at pos {tuple(float(x) for x in c)} spans "
                f"[{_fmt(c - ext)}, {_fmt(c + ext)}], outside the SF domain lower_bound={_fmt(lo)}, "
                f"upper_bound={_fmt(hi)} (lower_bound + res·dx); move it inside or enlarge SFOptions")

    # -- build ---------------------------------------------------------------------------------
    def build(self, layout):
        import warp as wp

        self.layout = layout
        o, n, dev = self.options, layout.n_envs, layout.device
        f64 = layout.precision == "64"
        self.scalar = wp.float64 if f64 else wp.float32
        self.vec3 = wp.vec3d if f64 else wp.vec3
        self.quat = wp.quatd if f64 else wp.quat
        npf = layout.np_float
        self.npf = npf
        nx, ny, nz = o.res
        S, V3 = self.scalar, self.vec3

        def cells(dtype=S):
            return wp.zeros((n, nx, ny, nz), dtype=dtype, device=dev)

        shapes = {"u": (n, nx + 1, ny, nz), "v": (n, nx, ny + 1, nz), "w": (n, nx, ny, nz + 1)}
        # -- state --------------------------------------------------------------------------
        init = self._initial_fields()
        self.u, self.v, self.w = (wp.array(init[c].astype(npf), dtype=S, device=dev) for c in "uvw")
        self.density = wp.array(init["density"].astype(npf), dtype=S, device=dev)
        self.temperature = wp.array(init["temperature"].astype(npf), dtype=S, device=dev)
        self.pressure = cells()
        E = len(self.emitters)
        em = [e.material for e in self.emitters]
        pos = np.array([e.morph.pos for e in self.emitters], npf).reshape(E, 3)
        self.em_pos = wp.array(np.broadcast_to(pos, (n, E, 3)).copy(), dtype=V3, device=dev)
        self.em_rate = wp.array(np.tile(np.array([m.rate for m in em], npf), (n, 1)).reshape(n, E),
                                dtype=S, device=dev)
        self.em_heat = wp.array(np.tile(np.array([m.heat for m in em], npf), (n, 1)).reshape(n, E),
                                dtype=S, device=dev)
        vel = np.array([m.velocity if m.velocity is not None else (0.0, 0.0, 0.0) for m in em], npf).reshape(E, 3)
        self.em_vel = wp.array(np.broadcast_to(vel, (n, E, 3)).copy(), dtype=V3, device=dev)
        # -- model ---------------------------------------------------------------------------
        kind = np.array([0 if isinstance(e.morph, M.Sphere) else 1 for e in self.emitters], np.int32)
        flow = np.array([int(m.velocity is not None) for m in em], np.int32)
        size = np.array([(e.morph.radius, 0.0, 0.0) if isinstance(e.morph, M.Sphere)
                         else tuple(0.5 * np.asarray(e.morph.size)) for e in self.emitters], npf).reshape(E, 3)
        rot = np.array([_xyzw(e.morph.orientation) for e in self.emitters], npf).reshape(E, 4)
        self.em_kind = wp.array(kind, dtype=wp.int32, device=dev)
        self.em_flow = wp.array(flow, dtype=wp.int32, device=dev)
        self.em_size = wp.array(size, dtype=V3, device=dev)
        self.em_rot = wp.array(rot, dtype=self.quat, device=dev)
        self._any_flow = bool(flow.any())
        # -- scratch (not state: rebuilt every substep) ----------------------------------------
        self.solid = cells(wp.int32)
        self.vsolid = cells(wp.vec3)
        self.fixed = {c: wp.zeros(shapes[c], dtype=wp.int32, device=dev) for c in "uvw"}
        self.vel0 = {c: wp.zeros(shapes[c], dtype=S, device=dev) for c in "uvw"}
        self.tmp_a = {c: wp.zeros(shapes[c], dtype=S, device=dev) for c in "uvw"}
        self.tmp_b = {c: wp.zeros(shapes[c], dtype=S, device=dev) for c in "uvw"}
        self.b, self.r, self.z, self.d, self.q, self.res0 = (cells() for _ in range(6))
        # traced points (back, forward) of one staggering at a time: two buffers of the largest staggered
        # shape, viewed with each staggering's shape, each env's rows at the same stride (so partitions
        # never share memory)
        shapes["cell"] = (n, nx, ny, nz)
        per_env = max(int(np.prod(s_[1:])) for s_ in shapes.values())
        self._trace_bufs = [wp.zeros((n, per_env), dtype=V3, device=dev) for _ in range(2)]
        esz = wp.types.type_size_in_bytes(V3)

        def view(buf, shape):
            _, X, Y, Z = shape
            return wp.array(ptr=buf.ptr, shape=shape, strides=(per_env * esz, Y * Z * esz, Z * esz, esz), dtype=V3,
                            device=dev)

        self.xb, self.xf = ({c: view(buf, shape) for c, shape in shapes.items()} for buf in self._trace_bufs)
        self.tmp_a["cell"], self.tmp_b["cell"] = self.q, self.res0    # not live during advection
        use_vort = o.vorticity_confinement > 0.0
        self.omega = cells(V3) if use_vort else wp.zeros((n, 1, 1, 1), dtype=V3, device=dev)
        self.force = cells(V3)
        self.level_dims = o.level_dims() if o.pressure_solver == "mgpcg" else [o.res]
        self.ct = [cells(wp.int32)]
        self.mg_b, self.mg_x, self.mg_r = [self.r], [self.z], [self.res0]
        for dims in self.level_dims[1:]:
            self.ct.append(wp.zeros((n, *dims), dtype=wp.int32, device=dev))
            self.mg_b.append(wp.zeros((n, *dims), dtype=S, device=dev))
            self.mg_x.append(wp.zeros((n, *dims), dtype=S, device=dev))
            self.mg_r.append(wp.zeros((n, *dims), dtype=S, device=dev))
        self.part_a = wp.zeros((n, nx), dtype=S, device=dev)
        self.part_b = wp.zeros((n, nx), dtype=S, device=dev)
        self.part_d = wp.zeros((n, nx), dtype=wp.float64, device=dev)      # float64 sums
        self.part_e = wp.zeros((n, nx), dtype=wp.float64, device=dev)
        self.rz, self.alpha, self.beta, self.mean = (wp.zeros(n, dtype=wp.float64, device=dev) for _ in range(4))
        self.rmax, self.scale, self.target = (wp.zeros(n, dtype=S, device=dev) for _ in range(3))
        self.rbest = wp.zeros(n, dtype=S, device=dev)
        self.p_best = cells()
        self.cg_state = wp.zeros(n, dtype=wp.int32, device=dev)   # 0 running, 1 converged, 2 stalled
        self.improved = wp.zeros(n, dtype=wp.int32, device=dev)
        self.done = wp.zeros(n, dtype=wp.int32, device=dev)
        self.iters = wp.zeros(n, dtype=wp.int32, device=dev)
        self.cap_hit = wp.zeros(n, dtype=wp.int32, device=dev)    # device flags, read after the step
        self.cap_hit_count = np.zeros(n, dtype=np.int64)          # host: unconverged solves per env since build
        # -- constants -------------------------------------------------------------------------
        g = np.asarray(layout.gravity, float)
        up = -g / np.linalg.norm(g) if np.linalg.norm(g) > 0 else np.array([0.0, 0.0, 1.0])
        self._k = SimpleNamespace(
            lo=V3(*o.lower_bound), dx=S(o.dx), inv_dx=S(1.0 / o.dx), h=S(layout.h), neg_h=S(-layout.h),
            off={c: V3(*FIELD_OFFSETS[c]) for c in FIELD_OFFSETS},
            open_lo=wp.vec3i(*o.open_lo), open_hi=wp.vec3i(*o.open_hi),
            inv_dx2=[S(1.0 / (o.dx * 2 ** lvl) ** 2) for lvl in range(len(self.level_dims))],
            up=V3(*up.tolist()), alpha=S(o.smoke_weight), beta=S(o.thermal_buoyancy),
            ambient=S(o.ambient_temperature), eps=S(o.vorticity_confinement),
            keep_s=S(math.exp(-o.density_decay * layout.h)), keep_t=S(math.exp(-o.temperature_decay * layout.h)),
            tol=S(o.tolerance), stall=S(10.0), h_over_dx=S(layout.h / o.dx), visc_a=S(o.viscosity * layout.h / o.dx ** 2),
            minus_one=S(-1.0), one=S(1.0))
        self.viscosity_sweeps = self._viscosity_sweeps()
        self._use_forces = o.thermal_buoyancy > 0 or o.smoke_weight > 0 or use_vort
        # -- obstacles: every other solver exposing RigidView ------------------------------------
        self._rigid = self._rigid_sources(dev)
        # -- partitions ---------------------------------------------------------------------------
        self._parts = {}
        for part in layout.partitions:
            def cut(a, p=part):
                return env_slice(a, p.start, p.stop)

            self._parts[part.index] = SimpleNamespace(
                n=part.n_envs, u=cut(self.u), v=cut(self.v), w=cut(self.w), density=cut(self.density),
                temperature=cut(self.temperature), pressure=cut(self.pressure), em_pos=cut(self.em_pos),
                em_rate=cut(self.em_rate), em_heat=cut(self.em_heat), em_vel=cut(self.em_vel),
                solid=cut(self.solid), vsolid=cut(self.vsolid), fixed={c: cut(a) for c, a in self.fixed.items()},
                vel0={c: cut(a) for c, a in self.vel0.items()}, tmp_a={c: cut(a) for c, a in self.tmp_a.items()},
                tmp_b={c: cut(a) for c, a in self.tmp_b.items()}, xb={c: cut(a) for c, a in self.xb.items()},
                xf={c: cut(a) for c, a in self.xf.items()}, b=cut(self.b), r=cut(self.r), z=cut(self.z),
                d=cut(self.d), q=cut(self.q), omega=cut(self.omega), force=cut(self.force),
                ct=[cut(a) for a in self.ct], mg_b=[cut(a) for a in self.mg_b], mg_x=[cut(a) for a in self.mg_x],
                mg_r=[cut(a) for a in self.mg_r], part_a=cut(self.part_a), part_b=cut(self.part_b),
                part_d=cut(self.part_d), part_e=cut(self.part_e), scale=cut(self.scale), target=cut(self.target),
                rz=cut(self.rz), alpha=cut(self.alpha), beta=cut(self.beta), rmax=cut(self.rmax),
                mean=cut(self.mean), done=cut(self.done), rbest=cut(self.rbest), p_best=cut(self.p_best),
                cg_state=cut(self.cg_state), improved=cut(self.improved), iters=cut(self.iters), cap_hit=cut(self.cap_hit),
                count=wp.zeros(1, dtype=wp.int32, device=dev), cond=wp.zeros(1, dtype=wp.int32, device=dev),
                links=[src.view.rigid_links(part) for src in self._rigid])
        self._early_exit = o.early_exit and (wp.get_device(dev).is_cpu or wp.is_conditional_graph_supported())
        for part in layout.partitions:     # static obstacles (none): cell types once
            self._obstacles(self._parts[part.index])

    def _initial_fields(self) -> dict:
        """Initial gas: ambient temperature, no smoke, at rest, then each Smoke region in order."""
        o, n = self.options, self.layout.n_envs
        nx, ny, nz = o.res
        out = {"density": np.zeros((nx, ny, nz)), "temperature": np.full((nx, ny, nz), o.ambient_temperature),
               "u": np.zeros((nx + 1, ny, nz)), "v": np.zeros((nx, ny + 1, nz)), "w": np.zeros((nx, ny, nz + 1))}
        for e in self.smokes:
            m = e.material
            inside = self._inside(e.morph, self._points(FIELD_OFFSETS["cell"], (nx, ny, nz)))
            out["density"][inside] = m.density
            if m.temperature is not None:
                out["temperature"][inside] = m.temperature
            for a, c in enumerate("uvw"):
                shape = out[c].shape
                ins = self._inside(e.morph, self._points(FIELD_OFFSETS[c], shape))
                out[c][ins] = m.velocity[a]
        return {k: np.broadcast_to(v, (n, *v.shape)).copy() for k, v in out.items()}

    def _points(self, off, shape) -> np.ndarray:
        o = self.options
        idx = np.stack(np.meshgrid(*[np.arange(s) for s in shape], indexing="ij"), axis=-1).astype(float)
        return np.asarray(o.lower_bound) + (idx + np.asarray(off)) * o.dx

    @staticmethod
    def _inside(morph, pts) -> np.ndarray:
        d = pts - np.asarray(morph.pos)
        if isinstance(morph, M.Sphere):
            return np.linalg.norm(d, axis=-1) <= morph.radius
        local = d @ _quat_matrix(morph.orientation)           # R^T d, row vectors
        return np.all(np.abs(local) <= 0.5 * np.asarray(morph.size), axis=-1)

    def _viscosity_sweeps(self) -> int:
        o = self.options
        if o.viscosity <= 0.0:
            return 0
        if o.viscosity_iterations is not None:
            n = o.viscosity_iterations
        else:
            a = o.viscosity * self.layout.h / o.dx ** 2
            rho = 6.0 * a / (1.0 + 6.0 * a)
            n = max(1, math.ceil(math.log(1e-6) / math.log(rho)))
        return n + (n % 2)              # even: the sweeps ping-pong and end in the velocity array

    def _rigid_sources(self, dev) -> list:
        """The geoms of every other solver of the scene that exposes RigidView, packed for one kernel."""
        import warp as wp
        from polyphys.sdf_grid import build_sdf_grids, empty_sdf_grids, pack_height_fields

        out = []
        for s in self.scene.solvers:
            if s is self:
                continue
            view = s.view(RigidView)
            if view is None:
                continue
            geoms = view.rigid_geoms()
            n_geoms = geoms.type.shape[0]
            if n_geoms == 0:
                continue
            if geoms.sdf_grids is not None:
                grids = geoms.sdf_grids
            else:
                meshes = list(geoms.meshes) + [None] * (n_geoms - len(geoms.meshes))
                grids = (build_sdf_grids(meshes, spacing=0.5 * self.options.dx, band=2.0 * self.options.dx, device=dev)
                         if any(m is not None for m in meshes) else empty_sdf_grids(n_geoms, dev))
            hfields = list(geoms.hfields) + [None] * (n_geoms - len(geoms.hfields))
            hf = pack_height_fields(hfields, reach=self.options.dx, device=dev)
            out.append(SimpleNamespace(name=s.name, view=view, geoms=geoms, grids=grids, hf=hf))
        self._lo32 = wp.vec3(*self.options.lower_bound)
        return out

    def kernel_modules(self, layout):
        """The four kernel modules, with the overloads of the scene's precision only (every generic
        kernel declared: each module compiles once, before build, whatever options the scene uses)."""
        from .kernels import advection, boundary, forces, projection

        mods = [advection, boundary, forces, projection]
        for m in mods:
            m.declare_overloads(layout.precision)
        return mods

    # -- stepping --------------------------------------------------------------------------------
    def substep_pre_coupling(self, f, part):
        p = self._parts[part.index]
        if self._rigid:
            self._obstacles(p)
        self._boundary(p)
        self._advect(p)
        self._emit(p)
        if self._use_forces:
            self._forces(p)
        self._boundary(p)
        if self.viscosity_sweeps:
            self._viscosity(p)
        self._project(p)

    def _launch(self, kernel, p, dims, inputs):
        import warp as wp

        wp.launch(kernel, dim=(p.n, *dims), inputs=inputs, device=self.layout.device)

    def _obstacles(self, p):
        from .kernels import boundary as B
        from .kernels import projection as P

        cells = self.options.res
        if self._rigid:
            self._launch(B.clear_solids, p, cells, [p.solid, p.vsolid])
            for src, links in zip(self._rigid, p.links):
                g, gr, hf = src.geoms, src.grids, src.hf
                self._launch(B.mark_solids, p, cells,
                             [g.link, g.type, g.size, g.pos, g.quat, gr.geom, gr.values, gr.origin, gr.spacing,
                              gr.dims, gr.offset, hf.geom, hf.heights, hf.shape, hf.extent, hf.offset, hf.reach,
                              self._lo32, float(self.options.dx), links.pos, links.quat, links.com, links.vel,
                              links.ang, p.solid, p.vsolid])
        self._launch(P.fluid_types, p, cells, [p.solid, p.ct[0]])
        for lvl in range(1, len(self.level_dims)):
            self._launch(P.coarsen_types, p, self.level_dims[lvl], [p.ct[lvl - 1], p.ct[lvl]])

    def _boundary(self, p):
        from .kernels import boundary as B

        k = self._k
        for a, c in enumerate("uvw"):
            arr = getattr(p, c)
            self._launch(B.face_bc, p, arr.shape[1:], [a, k.open_lo, k.open_hi, p.solid, p.vsolid, arr, p.fixed[c]])

    def _advect(self, p):
        """Each staggering's points are traced once (back and, for MacCormack, forward) and every
        field stored there is sampled at the traced points: the cell scalars share their traces."""
        import warp as wp

        from .kernels import advection as A

        k, mac = self._k, self.options.advection == "maccormack"
        for c in "uvw":
            wp.copy(p.vel0[c], getattr(p, c))
        u0, v0, w0 = p.vel0["u"], p.vel0["v"], p.vel0["w"]
        conserve = self.options.conserve_density
        nx = self.options.res[0]
        if conserve:
            self._launch(A.density_totals, p, (nx,), [k.open_lo, k.open_hi, k.h_over_dx, p.density, u0, v0, w0,
                                                      p.part_a, p.part_b])
            wp.launch(A.density_target, dim=p.n, inputs=[p.part_a, p.part_b, p.target], device=self.layout.device)
        groups = [(c, [(p.vel0[c], getattr(p, c))]) for c in "uvw"]
        groups.append(("cell", [(p.density, p.density), (p.temperature, p.temperature)]))
        for c, fields in groups:
            dims, off = fields[0][0].shape[1:], k.off[c]
            xb, xf = p.xb[c], p.xf[c]
            self._launch(A.trace, p, dims, [k.lo, k.dx, k.inv_dx, off, k.h, u0, v0, w0, xb])
            if mac:
                self._launch(A.trace, p, dims, [k.lo, k.dx, k.inv_dx, off, k.neg_h, u0, v0, w0, xf])
            for src, dst in fields:
                ta, tb = p.tmp_a[c], p.tmp_b[c]
                if mac:
                    self._launch(A.sample_at, p, dims, [k.lo, k.inv_dx, off, xb, src, ta])
                    if src is dst:
                        self._launch(A.maccormack_correct, p, dims, [k.lo, k.inv_dx, off, xb, xf, src, ta, tb])
                        wp.copy(dst, tb)
                    else:
                        self._launch(A.maccormack_correct, p, dims, [k.lo, k.inv_dx, off, xb, xf, src, ta, dst])
                elif src is dst:
                    self._launch(A.sample_at, p, dims, [k.lo, k.inv_dx, off, xb, src, ta])
                    wp.copy(dst, ta)
                else:
                    self._launch(A.sample_at, p, dims, [k.lo, k.inv_dx, off, xb, src, dst])
        if conserve:
            self._launch(A.density_totals, p, (nx,), [k.open_lo, k.open_hi, k.h_over_dx, p.density, u0, v0, w0,
                                                      p.part_a, p.part_b])
            wp.launch(A.density_scale, dim=p.n, inputs=[p.part_a, p.target, p.scale], device=self.layout.device)
            self._launch(A.scale_cells, p, self.options.res, [p.scale, p.density])

    def _emit(self, p):
        from .kernels import forces as F

        k = self._k
        if not self.emitters and self.options.density_decay == 0 and self.options.temperature_decay == 0:
            return
        self._launch(F.emit_cells, p, self.options.res,
                     [k.lo, k.dx, k.h, k.keep_s, k.keep_t, k.ambient, self.em_kind, self.em_size, self.em_rot,
                      p.em_pos, p.em_rate, p.em_heat, p.density, p.temperature])
        if self._any_flow:
            for a, c in enumerate("uvw"):
                arr = getattr(p, c)
                self._launch(F.emit_faces, p, arr.shape[1:],
                             [a, k.lo, k.dx, k.off[c], self.em_kind, self.em_flow, self.em_size, self.em_rot,
                              p.em_pos, p.em_vel, arr])

    def _forces(self, p):
        from .kernels import forces as F

        k, cells = self._k, self.options.res
        if self.options.vorticity_confinement > 0:
            self._launch(F.vorticity, p, cells, [k.inv_dx, p.u, p.v, p.w, p.omega])
        self._launch(F.cell_forces, p, cells, [k.up, k.inv_dx, k.dx, k.alpha, k.beta, k.ambient, k.eps, p.density,
                                               p.temperature, p.omega, p.force])
        for a, c in enumerate("uvw"):
            arr = getattr(p, c)
            self._launch(F.add_face_force, p, arr.shape[1:], [a, k.h, p.force, arr])

    def _viscosity(self, p):
        import warp as wp

        from .kernels import forces as F

        k = self._k
        for c in "uvw":
            x, rhs, tmp = getattr(p, c), p.tmp_a[c], p.tmp_b[c]
            wp.copy(rhs, x)
            for _ in range(self.viscosity_sweeps // 2):
                self._launch(F.viscosity_jacobi, p, x.shape[1:], [k.visc_a, rhs, p.fixed[c], x, tmp])
                self._launch(F.viscosity_jacobi, p, x.shape[1:], [k.visc_a, rhs, p.fixed[c], tmp, x])

    # -- projection --------------------------------------------------------------------------------
    def _project(self, p):
        import warp as wp

        from .kernels import projection as P

        k, cells, nx = self._k, self.options.res, self.options.res[0]
        self._launch(P.divergence, p, cells, [k.inv_dx, k.minus_one, p.u, p.v, p.w, p.ct[0], p.b])
        self._remove_mean(p, p.b)
        p.done.zero_()
        self._launch(P.residual, p, cells, [k.open_lo, k.open_hi, k.inv_dx2[0], p.done, p.b, p.pressure, p.ct[0], p.r])
        self._remove_mean(p, p.r)
        self._precondition(p)
        self._remove_mean(p, p.z)
        wp.copy(p.d, p.z)
        self._launch(P.partial_dot, p, (nx,), [p.done, p.r, p.z, p.part_d])
        self._launch(P.partial_absmax, p, (nx,), [p.done, p.r, p.part_b])
        wp.launch(P.cg_start, dim=p.n, inputs=[k.tol, p.part_d, p.part_b, p.rz, p.rmax, p.rbest, p.done, p.cg_state,
                                               p.iters], device=self.layout.device)
        wp.copy(p.p_best, p.pressure)
        if self._early_exit:
            wp.launch(P.loop_start, dim=1, inputs=[p.done, p.count, p.cond], device=self.layout.device)
            wp.capture_while(p.cond, self._cg_iteration, p=p)
        else:
            for _ in range(self.options.max_iterations):
                self._cg_iteration(p)
        self._launch(P.restore_best, p, cells, [p.cg_state, p.p_best, p.pressure])
        wp.launch(P.cg_finish, dim=p.n, inputs=[p.cg_state, p.rbest, p.rmax, p.cap_hit], device=self.layout.device)
        for a, c in enumerate("uvw"):
            arr = getattr(p, c)
            self._launch(P.subtract_gradient, p, arr.shape[1:],
                         [a, k.inv_dx, k.open_lo, k.open_hi, p.pressure, p.fixed[c], arr])

    def _cg_iteration(self, p):
        import warp as wp

        from .kernels import projection as P

        k, cells, nx, dev = self._k, self.options.res, self.options.res[0], self.layout.device
        self._launch(P.apply_a, p, cells, [k.open_lo, k.open_hi, k.inv_dx2[0], p.done, p.d, p.ct[0], p.q])
        self._launch(P.partial_dot, p, (nx,), [p.done, p.d, p.q, p.part_d])
        wp.launch(P.cg_alpha, dim=p.n, inputs=[p.done, p.part_d, p.rz, p.alpha], device=dev)
        self._launch(P.cg_update, p, cells, [p.done, p.alpha, p.d, p.pressure])
        self._launch(P.residual, p, cells, [k.open_lo, k.open_hi, k.inv_dx2[0], p.done, p.b, p.pressure, p.ct[0], p.r])
        self._remove_mean(p, p.r)
        self._launch(P.partial_absmax, p, (nx,), [p.done, p.r, p.part_b])
        wp.launch(P.cg_check, dim=p.n, inputs=[k.tol, k.stall, p.part_b, p.done, p.cg_state, p.iters, p.rmax, p.rbest,
                                               p.improved], device=dev)
        self._launch(P.keep_best, p, cells, [p.improved, p.pressure, p.p_best])
        self._precondition(p)
        self._remove_mean(p, p.z)
        self._launch(P.partial_dot, p, (nx,), [p.done, p.r, p.z, p.part_d])
        wp.launch(P.cg_beta, dim=p.n, inputs=[p.done, p.part_d, p.rz, p.beta], device=dev)
        self._launch(P.cg_direction, p, cells, [p.done, p.beta, p.z, p.d])
        wp.launch(P.loop_condition, dim=1, inputs=[self.options.max_iterations, p.done, p.count, p.cond], device=dev)

    def _remove_mean(self, p, arr):
        """A closed domain (no open face): A is singular (constants on the fluid cells); keep the
        right-hand side, the residual and the preconditioned residual free of that null space (rounding
        and the coarse-level sweeps would otherwise feed the constant mode). Fluid split by obstacles
        into separate pockets is not handled (docs/sf.md)."""
        import warp as wp

        from .kernels import projection as P

        if self.options.open_faces:
            return
        self._launch(P.partial_sum_count, p, (self.options.res[0],), [arr, p.ct[0], p.part_d, p.part_e])
        wp.launch(P.finish_mean, dim=p.n, inputs=[p.part_d, p.part_e, p.mean], device=self.layout.device)
        self._launch(P.subtract_mean, p, self.options.res, [p.mean, p.ct[0], arr])

    def _precondition(self, p):
        """z = M r: one multigrid V-cycle (mgpcg) or the diagonal (pcg)."""
        from .kernels import projection as P

        k, o = self._k, self.options
        if o.pressure_solver == "pcg":
            self._launch(P.jacobi_precond, p, o.res, [k.open_lo, k.open_hi, k.inv_dx2[0], p.done, p.r, p.ct[0], p.z])
            return
        n_lvl = len(self.level_dims)

        def sweep(lvl, colors):
            nx_, ny_, nz_ = self.level_dims[lvl]
            for c in colors:
                self._launch(P.rbgs, p, (nx_, ny_, (nz_ + 1) // 2),
                             [c, k.open_lo, k.open_hi, k.inv_dx2[lvl], p.done, p.mg_b[lvl], p.ct[lvl], p.mg_x[lvl]])

        for lvl in range(n_lvl - 1):
            dims = self.level_dims[lvl]
            self._launch(P.zero_cells, p, dims, [p.done, p.mg_x[lvl]])
            for _ in range(o.mg_sweeps):
                sweep(lvl, (0, 1))
            self._launch(P.residual, p, dims, [k.open_lo, k.open_hi, k.inv_dx2[lvl], p.done, p.mg_b[lvl], p.mg_x[lvl],
                                               p.ct[lvl], p.mg_r[lvl]])
            self._launch(P.restrict, p, self.level_dims[lvl + 1], [p.done, p.mg_r[lvl], p.mg_b[lvl + 1]])
        last = n_lvl - 1
        self._launch(P.zero_cells, p, self.level_dims[last], [p.done, p.mg_x[last]])
        for _ in range(o.coarse_sweeps):
            sweep(last, (0, 1, 1, 0))
        for lvl in range(n_lvl - 2, -1, -1):
            self._launch(P.prolong_add, p, self.level_dims[lvl], [p.done, p.mg_x[lvl + 1], p.ct[lvl], p.mg_x[lvl]])
            for _ in range(o.mg_sweeps):
                sweep(lvl, (1, 0))

    # -- state -----------------------------------------------------------------------------------
    def state_arrays(self):
        return {"u": self.u, "v": self.v, "w": self.w, "density": self.density, "temperature": self.temperature,
                "pressure": self.pressure, "em_pos": self.em_pos, "em_rate": self.em_rate, "em_heat": self.em_heat,
                "em_vel": self.em_vel}

    def on_reset(self, envs_idx):
        if self._rigid:
            return
        for part in self.layout.partitions:      # cell types do not depend on the state without obstacles
            self._obstacles(self._parts[part.index])

    def check_after_step(self) -> None:
        hits = self.cap_hit.numpy().copy()
        envs = np.nonzero(hits)[0]
        if envs.size == 0:
            return
        self.cap_hit.zero_()
        self.cap_hit_count += hits
        rmax = self.rmax.numpy()
        o = self.options
        detail = ", ".join(f"env {e}: max|div u| {rmax[e]:.3g} 1/s" for e in envs[:8])
        msg = (f"SF pressure solve reached max_iterations={o.max_iterations} without max|div u| <= tolerance="
               f"{o.tolerance} 1/s in {int(envs.size)} env(s) ({detail}) during the last step; raise "
               f"SFOptions.max_iterations or the tolerance")
        if o.on_cap == "raise":
            raise SimulationError(msg)
        key = tuple(envs.tolist())
        if key not in self._cap_warned:        # once per set of envs; every hit is counted in get_solver_stats()
            self._cap_warned.add(key)
            warnings.warn(msg + " (this warning is shown once per set of envs; get_solver_stats()['cap_hits'] "
                                "counts every unconverged solve)", PolyphysWarning, stacklevel=4)

    # -- host access -----------------------------------------------------------------------------
    def _write_column(self, arr, envs: np.ndarray, col: int, values: np.ndarray) -> None:
        host = arr.numpy().copy()
        host[envs, col] = values
        arr.assign(host)

    def _get(self, arr, envs_idx):
        envs = self.scene._envs_idx(envs_idx)
        a = arr.numpy()[envs].astype(float)
        return a if self.scene.batched else a[0]

    def _set(self, arr, name, value, envs_idx):
        from polyphys.arrays import check_shape

        envs = self.scene._envs_idx(envs_idx)
        shape = tuple(arr.shape[1:])
        if self.scene.batched:
            val = np.asarray(value, dtype=float)
            if val.shape == shape:
                val = np.broadcast_to(val, (len(envs), *shape))
            val = check_shape(name, val, (len(envs), *shape))
        else:
            val = check_shape(name, value, shape)[None]
        host = arr.numpy().copy()
        host[envs] = val
        arr.assign(host)

    def get_density(self, envs_idx=None):
        """Smoke density per cell, (n_envs, nx, ny, nz) (no batch axis when n_envs=0)."""
        return self._get(self.density, envs_idx)

    def get_temperature(self, envs_idx=None):
        return self._get(self.temperature, envs_idx)

    def get_pressure(self, envs_idx=None):
        """Pressure per cell (Pa, gauge: defined up to a constant in a closed box) = ρ·p/h."""
        return self._get(self.pressure, envs_idx) * (self.options.rho / self.layout.h)

    def get_face_velocity(self, envs_idx=None) -> dict:
        """The staggered velocity components: u (…, nx+1, ny, nz) on x-faces, v on y-faces, w on z-faces."""
        return {c: self._get(getattr(self, c), envs_idx) for c in "uvw"}

    def get_velocity(self, envs_idx=None):
        """Cell-centred velocity (…, nx, ny, nz, 3): the mean of each cell's two faces per axis."""
        f = self.get_face_velocity(envs_idx)
        u, v, w = f["u"], f["v"], f["w"]
        return np.stack([0.5 * (u[..., 1:, :, :] + u[..., :-1, :, :]), 0.5 * (v[..., :, 1:, :] + v[..., :, :-1, :]),
                         0.5 * (w[..., :, :, 1:] + w[..., :, :, :-1])], axis=-1)

    def set_density(self, density, envs_idx=None):
        self._set(self.density, "density", density, envs_idx)

    def set_temperature(self, temperature, envs_idx=None):
        self._set(self.temperature, "temperature", temperature, envs_idx)

    def set_face_velocity(self, u=None, v=None, w=None, envs_idx=None):
        """Write the staggered components given (shapes as ``get_face_velocity``)."""
        for c, val in (("u", u), ("v", v), ("w", w)):
            if val is not None:
                self._set(getattr(self, c), c, val, envs_idx)

    def face_positions(self) -> dict:
        """World positions of the u, v, w storage points and of the cell centres (host arrays)."""
        nx, ny, nz = self.options.res
        shapes = {"u": (nx + 1, ny, nz), "v": (nx, ny + 1, nz), "w": (nx, ny, nz + 1), "cell": (nx, ny, nz)}
        return {c: self._points(FIELD_OFFSETS[c], s) for c, s in shapes.items()}

    def get_divergence(self, envs_idx=None):
        """div u per cell (1/s) on fluid cells (0 on solid cells), at the current state."""
        import warp as wp

        from .kernels import projection as P

        out = wp.zeros_like(self.b)
        k = self._k
        wp.launch(P.divergence, dim=(self.layout.n_envs, *self.options.res),
                  inputs=[k.inv_dx, k.one, self.u, self.v, self.w, self.ct[0], out], device=self.layout.device)
        return self._get(out, envs_idx)

    def get_solid(self, envs_idx=None):
        """Cells inside a rigid geom at the last substep (bool, (…, nx, ny, nz))."""
        return self._get(self.solid, envs_idx).astype(bool)

    def get_solver_stats(self, envs_idx=None) -> dict:
        """The last substep's pressure solve per env: ``iterations``, ``residual`` (max |b - A p| = max
        |div u| over the fluid cells after the update, 1/s), ``converged`` (max |div u| <= tolerance),
        ``stalled`` (stopped when the residual grew 10x over its best — the float32 floor, see
        docs/sf.md; the best iterate is kept), ``cap_hits`` (unconverged solves per env since
        build, every substep counted), and the options it ran with."""
        envs = self.scene._envs_idx(envs_idx)

        def out(a):
            a = a[envs]
            return a if self.scene.batched else a[0]

        return {"iterations": out(self.iters.numpy().astype(int)), "residual": out(self.rmax.numpy().astype(float)),
                "converged": out(self.cg_state.numpy() == 1), "stalled": out(self.cg_state.numpy() == 2),
                "cap_hits": out(self.cap_hit_count.copy()), "max_iterations": self.options.max_iterations,
                "tolerance": self.options.tolerance, "solver": self.options.pressure_solver,
                "levels": [tuple(d) for d in self.level_dims]}


def _quat_matrix(q) -> np.ndarray:
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _xyzw(q):
    w, x, y, z = q
    return (x, y, z, w)


def _fmt(v) -> str:
    return "(" + ", ".join(f"{x:.4g}" for x in np.asarray(v, float)) + ")"

