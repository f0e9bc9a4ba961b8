"""BallisticSolver: particles under gravity that bounce on the ground plane.

Per substep h (symplectic Euler): ``substep_pre_coupling`` adds g·h to every active particle's
velocity; a coupler may then change the velocities (ParticleView); ``substep_post_coupling`` moves
the particles by v·h and bounces those that reach the ground (kernels.advance_and_bounce).
No particle–particle interaction: envs and particles are independent.

This module is imported only when a scene adds a Ballistic entity, so it may import Warp at the top
(importing compiles nothing: a kernel module compiles on its first launch, into Warp's cache).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import warp as wp
from polyphys.errors import OptionError
from polyphys.interfaces import Solver
from polyphys.views import ParticleCarriers

from . import kernels
from .entity import BallisticEntity
from .options import BallisticOptions
from .sampling import sample_morph


class BallisticSolver(Solver):
    options_type = BallisticOptions

    # -- before build: entities ------------------------------------------------------------------
    def add_entity(self, morph, material, surface=None, name=None, **kwargs):
        if kwargs:
            raise OptionError(f"ballistic add_entity: unknown arguments {sorted(kwargs)}; it takes "
                              f"morph, material, surface, name")
        pos = sample_morph(morph, self.options.particle_size)
        entity = BallisticEntity(self, len(self.entities), morph, material, surface, name, pos)
        self.entities.append(entity)
        return entity

    # -- before build: the kernel modules this scene launches -------------------------------------
    def kernel_modules(self, layout):
        """Declared before build so that polyphys compiles them (in parallel with other plugins'
        modules, with one notice) before the first launch; overloads of the scene's precision only."""
        kernels.declare_overloads(layout.precision)
        return [kernels]

    # -- build: allocate every array once --------------------------------------------------------
    def build(self, layout):
        self.layout = layout
        n_envs, dev, npf = layout.n_envs, layout.device, layout.np_float
        s = layout.float_type
        V = wp.types.vector(3, s)
        start, pos0, mass, e, mu = 0, [], [], [], []
        vol = self.options.particle_size ** 3
        for ent in self.entities:
            ent._bind(start)
            start += ent.n_particles
            pos0.append(ent.init_pos)
            m = ent.material
            mass.append(np.full(ent.n_particles, m.rho * vol))
            e.append(np.full(ent.n_particles, m.restitution))
            mu.append(np.full(ent.n_particles, m.friction))
        self.n_particles = n = start
        tile = lambda a: np.ascontiguousarray(np.broadcast_to(a, (n_envs, *a.shape)))  # noqa: E731
        # state (n_envs, n): every array a bit-exact continuation needs
        self.pos = wp.array(tile(np.concatenate(pos0).astype(npf)), dtype=V, device=dev)
        self.vel = wp.zeros((n_envs, n), dtype=V, device=dev)
        self.active = wp.ones((n_envs, n), dtype=wp.int32, device=dev)
        # model: constant during a step
        self.mass = wp.array(tile(np.concatenate(mass).astype(npf)), dtype=s, device=dev)
        self.restitution = wp.array(np.concatenate(e).astype(npf), dtype=s, device=dev)
        self.friction = wp.array(np.concatenate(mu).astype(npf), dtype=s, device=dev)
        self.gravity = V(*layout.gravity)
        self.h = s(layout.h)
        self.floor_z = s(self.options.ground_height + 0.5 * self.options.particle_size)
        # per-partition views, made once: a step launches only on its own partition's envs
        self._parts = {}
        for part in layout.partitions:
            sl = part.slice
            self._parts[part.index] = SimpleNamespace(
                pos=self.pos[sl], vel=self.vel[sl], active=self.active[sl], mass=self.mass[sl])

    def state_arrays(self):
        return {"pos": self.pos, "vel": self.vel, "active": self.active}

    # -- stepping (captured in a Warp graph: no host sync, no allocation) -------------------------
    def substep_pre_coupling(self, f, part):
        p = self._parts[part.index]
        wp.launch(kernels.integrate_velocity, dim=(part.n_envs, self.n_particles),
                  inputs=[self.gravity, self.h, p.active, p.vel], outputs=[p.vel],
                  device=self.layout.device)

    def substep_post_coupling(self, f, part):
        p = self._parts[part.index]
        wp.launch(kernels.advance_and_bounce, dim=(part.n_envs, self.n_particles),
                  inputs=[self.h, self.floor_z, self.restitution, self.friction, p.active, p.pos,
                          p.vel],
                  outputs=[p.pos, p.vel], device=self.layout.device)

    # -- views -----------------------------------------------------------------------------------
    def particle_carriers(self, part) -> ParticleCarriers:
        """ParticleView: this partition's particles; a coupler may change ``vel`` in couple()."""
        p = self._parts[part.index]
        return ParticleCarriers(pos=p.pos, vel=p.vel, mass=p.mass, active=p.active)

    # -- host access used by the entities (outside the step) -------------------------------------
    def _write_rows(self, arr, envs: np.ndarray, cols: slice, values: np.ndarray) -> None:
        """arr[envs, cols] = values, in place: graphs keep pointing at the same memory."""
        host = arr.numpy()
        host[envs[:, None], np.arange(host.shape[1])[cols]] = values
        arr.assign(host)
