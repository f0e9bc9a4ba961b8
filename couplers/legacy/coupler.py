"""LegacyCoupler: the SDF velocity response of docs/semantics.md §C1 between RigidView and ParticleView solvers.

In ``couple(f, part)`` — after every solver's pre-coupling stage, before post-coupling — each velocity
carrier (particles, or MPM grid nodes between grid update and G2P) near or inside a rigid geom gets
the Legacy response (primitives: analytic SDFs; mesh geoms: grid SDFs the coupler builds at build
time from the triangles the rigid side lists, ``polyphys.sdf_grid``; heightfields: the closest
point on their surface triangles near the carrier, ``polyphys.kernels.sdf.sdf_hfield``); the
momentum change divided by h goes, as a force on the link and a torque about its CoM, into the
rigid solver's per-substep coupling buffer (when it accepts a reaction: a kinematic side couples
one way). The coupler keeps its own readback: the last substep's wrench per link and the impulse
summed over the substeps of the step — not a contact: ``get_contacts()`` does not show it.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import warp as wp
from polyphys.arrays import env_slice
from polyphys.errors import CapabilityError, OptionError
from polyphys.interfaces import Coupler
from polyphys.sdf_grid import build_sdf_grids, empty_sdf_grids, pack_height_fields
from polyphys.views import HeightFields, ParticleView, RigidView, SdfGrids

from .kernels.couple import apply_reaction, legacy_response, project_points
from .options import LegacyOptions


class LegacyCoupler(Coupler):
    options_type = LegacyOptions

    def kernel_modules(self, layout):
        """The coupling kernels (mesh geoms' grid SDFs are built by polyphys.sdf_grid at build)."""
        from .kernels import couple

        return [couple]

    def build(self, layout):
        self.layout = layout
        n, dev = layout.n_envs, layout.device
        self._links: dict[str, SimpleNamespace] = {}     # per rigid solver: coupler-owned buffers
        self._pairs = []
        self._grids: dict[str, SdfGrids] = {}             # per rigid solver: mesh geoms' grid SDFs
        self._hfields: dict[str, HeightFields] = {}       # per rigid solver: heightfield geoms
        for a, b in self.pairs:
            rigid, particles = a.view(RigidView), b.view(ParticleView)
            wants = getattr(rigid, "couples_with", None)     # optional: a rigid side may decline a partner
            if wants is not None and not wants(particles.name):
                continue
            geoms = rigid.rigid_geoms()
            if rigid.name not in self._grids:
                self._grids[rigid.name] = self._sdf_grids(geoms, dev)
                self._hfields[rigid.name] = self._height_fields(geoms, dev)
            n_links = self._n_links(rigid, layout)
            if rigid.name not in self._links:
                bufs = {k: wp.zeros((n, n_links), dtype=wp.vec3, device=dev)
                        for k in ("force", "torque", "impulse", "angular_impulse")}
                self._links[rigid.name] = SimpleNamespace(**bufs, n_links=n_links)
            self._pairs.append((rigid, particles, geoms, self._grids[rigid.name], self._hfields[rigid.name]))
        self._parts = {}
        for part in layout.partitions:
            views = {}
            for name, buf in self._links.items():
                views[name] = SimpleNamespace(**{k: env_slice(getattr(buf, k), part.start, part.stop)
                                                 for k in ("force", "torque", "impulse", "angular_impulse")})
            pair_views = []
            for rigid, particles, geoms, grids, hfields in self._pairs:
                links = rigid.rigid_links(part)
                carriers = particles.particle_carriers(part)
                self._check_f32(rigid, links, particles, carriers)
                pair_views.append((rigid, links, carriers, geoms, grids, hfields))
            self._parts[part.index] = SimpleNamespace(links=views, pairs=pair_views)

    def _sdf_grids(self, geoms, device) -> SdfGrids:
        """The solver's ready grids, or grid SDFs built now from its mesh geoms' triangles. Each
        grid reaches beyond the mesh bounds at least as far as the coupling acts outside the
        surface (d where exp(-d/coup_softness) = influence_cutoff), so a coupled carrier is inside it."""
        n_geoms = geoms.type.shape[0]
        if geoms.sdf_grids is not None:
            grids = geoms.sdf_grids
            if grids.geom.shape[0] != n_geoms:
                raise OptionError(f"rigid_geoms().sdf_grids.geom has {grids.geom.shape[0]} entries; "
                                  f"expected one per geom ({n_geoms})")
            return grids
        meshes = list(geoms.meshes) + [None] * (n_geoms - len(geoms.meshes))
        if not any(m is not None for m in meshes):
            return empty_sdf_grids(n_geoms, device)
        band = self._coupling_band(geoms)
        return build_sdf_grids(meshes, spacing=self.options.sdf_grid_spacing, res=self.options.sdf_grid_res,
                               band=band, device=device)

    def _coupling_band(self, geoms):
        """Per geom, how far outside its surface the response acts: d where exp(-d/coup_softness)
        = influence_cutoff."""
        softness = geoms.coup_softness.numpy().astype(float)
        return softness * np.log(1.0 / max(self.options.influence_cutoff, 1e-3))

    def _height_fields(self, geoms, device) -> HeightFields:
        """The heightfield geoms packed for the response kernel. The closest-point search reaches
        (horizontally) the coupling band, at least one cell: the SDF is exact wherever the
        response acts outside the surface (up to MAX_REACH_CELLS cells)."""
        n_geoms = geoms.type.shape[0]
        hfields = list(geoms.hfields) + [None] * (n_geoms - len(geoms.hfields))
        band = self._coupling_band(geoms) if n_geoms else 0.0
        return pack_height_fields(hfields, reach=band, device=device)

    def height_fields(self, rigid: str | None = None) -> HeightFields:
        """The packed heightfields the coupler queries for a rigid-side solver's geoms (geom
        frames; ``polyphys.sdf_grid.query_height_fields`` evaluates them on the host)."""
        return self._by_rigid(self._hfields, rigid, "height_fields")

    def sdf_grids(self, rigid: str | None = None) -> SdfGrids:
        """The packed mesh grid SDFs the coupler queries for a rigid-side solver's geoms (geom
        frames; ``polyphys.sdf_grid.query_sdf_grids`` evaluates them on the host)."""
        return self._by_rigid(self._grids, rigid, "sdf_grids")

    @staticmethod
    def _by_rigid(table, rigid, what):
        names = sorted(table)
        if rigid is None:
            if len(names) != 1:
                raise OptionError(f"{what}(rigid=None): several rigid solvers {names}; name one")
            rigid = names[0]
        if rigid not in table:
            raise OptionError(f"{what}(rigid={rigid!r}): coupled rigid solvers are {names}")
        return table[rigid]

    @staticmethod
    def _n_links(rigid, layout) -> int:
        links = rigid.rigid_links(layout.partitions[0])
        return links.pos.shape[1]

    def _check_f32(self, rigid, links, particles, carriers):
        for what, arr in (("link pos", links.pos), ("carrier pos", carriers.pos), ("carrier vel", carriers.vel)):
            if getattr(arr.dtype, "_wp_scalar_type_", None) != wp.float32:
                raise CapabilityError("legacy", "precisions=64",
                                      f"{what} of {rigid.name}/{particles.name} is {arr.dtype.__name__}; "
                                      f"the Legacy coupler runs in float32")
        if carriers.mass.dtype != wp.float32:
            raise CapabilityError("legacy", "precisions=64", "carrier mass must be float32")
        if carriers.active is None or carriers.active.dtype != wp.int32:
            raise OptionError(f"{particles.name}.particle_carriers(): active must be an int32 array")

    def preprocess(self, f, part):
        p = self._parts[part.index]
        for v in p.links.values():
            if f == 0:    # a new step: the impulse readback sums this step's substeps
                v.impulse.zero_()
                v.angular_impulse.zero_()
            v.force.zero_()
            v.torque.zero_()
        inv_h = 1.0 / self.layout.h
        for rigid, links, carriers, geoms, grids, hf in p.pairs:
            pts = carriers.points
            if pts is None or geoms.type.shape[0] == 0 or pts.pos.shape[1] == 0:
                continue
            buf = p.links[rigid.name]
            wp.launch(project_points, dim=(part.n_envs, pts.pos.shape[1]),
                      inputs=[geoms.link, geoms.type, geoms.size, geoms.pos, geoms.quat, geoms.coup_friction,
                              grids.geom, grids.values,
                              grids.origin, grids.spacing, grids.dims, grids.offset, hf.geom, hf.heights,
                              hf.shape, hf.extent, hf.offset, hf.reach, inv_h, links.pos, links.quat, links.com,
                              links.vel, links.ang, pts.mass, pts.active, pts.pos, pts.vel],
                      outputs=[buf.force, buf.torque], device=self.layout.device)

    def couple(self, f, part):
        p = self._parts[part.index]
        inv_h = 1.0 / self.layout.h
        for rigid, links, carriers, geoms, grids, hf in p.pairs:
            buf = p.links[rigid.name]
            n_carriers = carriers.pos.shape[1]
            if geoms.type.shape[0] == 0 or n_carriers == 0:
                continue
            wp.launch(legacy_response, dim=(part.n_envs, n_carriers),
                      inputs=[geoms.link, geoms.type, geoms.size, geoms.pos, geoms.quat, geoms.coup_friction,
                              geoms.coup_restitution, geoms.coup_softness, grids.geom, grids.values,
                              grids.origin, grids.spacing, grids.dims, grids.offset, hf.geom, hf.heights,
                              hf.shape, hf.extent, hf.offset, hf.reach, self.options.influence_cutoff,
                              inv_h, self.layout.h, links.pos, links.quat, links.com, links.vel, links.ang, carriers.pos,
                              carriers.mass, carriers.active, carriers.vel],
                      outputs=[buf.force, buf.torque], device=self.layout.device)
        done = set()
        for rigid, links, *_ in p.pairs:
            buf = p.links[rigid.name]
            if rigid.name in done or buf.force.shape[1] == 0:
                continue
            done.add(rigid.name)
            to_rigid = rigid.accepts_reaction and links.coupling_force is not None
            rf = links.coupling_force if to_rigid else _EMPTY[self.layout.device]
            rt = links.coupling_torque if to_rigid else _EMPTY[self.layout.device]
            wp.launch(apply_reaction, dim=buf.force.shape, inputs=[self.layout.h, buf.force, buf.torque],
                      outputs=[rf, rt, buf.impulse, buf.angular_impulse], device=self.layout.device)

    def state_arrays(self):
        out = {}
        for name, buf in self._links.items():
            for k in ("force", "torque", "impulse", "angular_impulse"):
                out[f"{name}/{k}"] = getattr(buf, k)
        return out

    # -- readback ---------------------------------------------------------------------------------
    def get_coupling_wrench(self, rigid: str | None = None, envs_idx=None) -> dict:
        """The coupling reaction on each link of a rigid-side solver (world frame, torque about the
        link CoM): ``force``/``torque`` of the last substep, tagged ``solved_at`` (the time that
        substep started), and ``impulse``/``angular_impulse`` summed as h·f over the substeps of the
        last step, over the window ``[window_start, window_end]``. Batch axis first."""
        names = sorted(self._links)
        if rigid is None:
            if len(names) != 1:
                raise OptionError(f"get_coupling_wrench(rigid=None): several rigid solvers {names}; name one")
            rigid = names[0]
        if rigid not in self._links:
            raise OptionError(f"get_coupling_wrench(rigid={rigid!r}): coupled rigid solvers are {names}")
        scene = self.scene
        envs = scene._envs_idx(envs_idx)
        buf = self._links[rigid]
        t_end = np.asarray(scene._step_count[envs] * scene.sim_options.dt, dtype=float)
        h = self.layout.h

        def out(a):
            a = a.numpy()[envs].astype(float)
            return a if scene.batched else a[0]

        tag = (lambda t: t) if scene.batched else (lambda t: float(t[0]))
        return {"force": out(buf.force), "torque": out(buf.torque), "impulse": out(buf.impulse),
                "angular_impulse": out(buf.angular_impulse), "solved_at": tag(t_end - h),
                "window_start": tag(t_end - scene.sim_options.dt), "window_end": tag(t_end),
                "frame": "world", "reference_point": "link CoM"}


class _EmptyByDevice(dict):
    def __missing__(self, device):
        arr = wp.zeros((0, 0), dtype=wp.vec3, device=device)
        self[device] = arr
        return arr


_EMPTY = _EmptyByDevice()
