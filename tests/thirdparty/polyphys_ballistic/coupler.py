"""The ``ballistic_drag`` coupler: particles near a rigid body are dragged along with it, and the
body feels the reaction (kernels_drag.py has the physics).

A coupler sees solvers only through view protocols: it couples any solver exposing ``RigidView``
(rigid bodies: the built-in ``rigid`` and ``kinematic`` solvers) with any solver exposing
``ParticleView`` (here ballistic's particles, but equally SPH or PBD particles). It is not a
default coupler: a scene selects it with ``Scene(coupler="ballistic_drag")`` or
``Scene(coupler=DragOptions(...))``.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import warp as wp
from polyphys.interfaces import Coupler
from polyphys.views import ParticleView, RigidView

from . import kernels_drag
from .options import DragOptions


class DragCoupler(Coupler):
    options_type = DragOptions

    def kernel_modules(self, layout):
        return [kernels_drag]

    # -- build: per pair and partition, the views and the reaction buffers -------------------------
    def build(self, layout):
        self.layout = layout
        n, dev = layout.n_envs, layout.device
        self.decay = math.exp(-layout.h / self.options.time_constant)
        self._pairs = []
        for a, b in self.pairs:                     # (solver exposing RigidView, one exposing ParticleView)
            rigid, particles = a.view(RigidView), b.view(ParticleView)
            n_links = rigid.rigid_links(layout.partitions[0]).com.shape[1]
            buf = SimpleNamespace(force=wp.zeros((n, n_links), dtype=wp.vec3, device=dev),
                                  torque=wp.zeros((n, n_links), dtype=wp.vec3, device=dev))
            self._pairs.append((rigid, particles, buf))
        self._parts = {}
        for part in layout.partitions:
            views = []
            for rigid, particles, buf in self._pairs:
                # float32 views: the spec declares precisions=("32",), so polyphys refuses a float64
                # scene with a CapabilityError before build
                links, carriers = rigid.rigid_links(part), particles.particle_carriers(part)
                views.append(SimpleNamespace(
                    links=links, carriers=carriers, to_rigid=rigid.accepts_reaction and links.coupling_force is not None,
                    force=buf.force[part.slice], torque=buf.torque[part.slice]))
            self._parts[part.index] = views

    # -- stepping (between the solvers' pre- and post-coupling stages; captured) -------------------
    def couple(self, f, part):
        dev, o = self.layout.device, self.options
        for v in self._parts[part.index]:
            lk, c = v.links, v.carriers
            n_links, n_particles = lk.com.shape[1], c.pos.shape[1]
            if n_links == 0 or n_particles == 0:
                continue
            # the reaction first, from the velocities before the drag changes them
            wp.launch(kernels_drag.drag_reaction, dim=(part.n_envs, n_links),
                      inputs=[o.radius, self.decay, 1.0 / self.layout.h, lk.com, lk.vel, lk.ang, c.pos, c.vel,
                              c.mass, c.active],
                      outputs=[v.force, v.torque], device=dev)
            wp.launch(kernels_drag.drag_particles, dim=(part.n_envs, n_particles),
                      inputs=[o.radius, self.decay, lk.com, lk.vel, lk.ang, c.pos, c.active, c.vel],
                      outputs=[c.vel], device=dev)
            if v.to_rigid:   # a kinematic body does not accept a reaction: it moves as it is told
                wp.launch(kernels_drag.add_reaction, dim=(part.n_envs, n_links), inputs=[v.force, v.torque],
                          outputs=[lk.coupling_force, lk.coupling_torque], device=dev)

    def state_arrays(self):
        """The last substep's reaction per link (read back by ``get_reaction``)."""
        return {f"{i}/{k}": getattr(buf, k) for i, (_, _, buf) in enumerate(self._pairs) for k in ("force", "torque")}

    # -- readback (outside the step) ---------------------------------------------------------------
    def get_reaction(self, envs_idx=None) -> dict:
        """Force and torque (about each link's CoM, world frame) the particles exerted on the links of
        the first coupled rigid solver in the last substep; batch axis first."""
        scene = self.scene
        envs = scene._envs_idx(envs_idx)
        _, _, buf = self._pairs[0]
        out = {k: getattr(buf, k).numpy()[envs].astype(float) for k in ("force", "torque")}
        return out if scene.batched else {k: a[0] for k, a in out.items()}
