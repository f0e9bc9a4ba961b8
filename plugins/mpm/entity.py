"""MPMEntity: the particles of one sampled morph, with batch-first getters and setters."""

from __future__ import annotations

import numpy as np
from polyphys.interfaces import Entity


class MPMEntity(Entity):
    """Particles ``[start, start + n_particles)`` of the solver's particle arrays.

    Getters return NumPy copies of shape (n_envs, n_particles, ...) (no batch axis for a scene built
    with n_envs=0); setters take the same shapes (a batched scene also accepts one per-env value,
    broadcast to every env in ``envs_idx``) and write in place.
    """

    def __init__(self, solver, idx, morph, material, surface, name, init_pos: np.ndarray, vol: float):
        super().__init__(solver, idx, morph, material, surface, name)
        self.init_pos = init_pos
        self.particle_volume = vol
        self.n_particles = len(init_pos)
        self.start = -1

    @property
    def _sl(self) -> slice:
        return slice(self.start, self.start + self.n_particles)

    @property
    def particle_mass(self) -> float:
        return self.material.rho * self.particle_volume

    @property
    def mass(self) -> float:
        return self.particle_mass * self.n_particles

    def _get(self, arr, envs_idx, dtype=float):
        envs = self._envs(envs_idx)
        return self._out(np.array(arr.numpy()[:, self._sl], dtype=dtype), envs)

    def _set(self, arr, name, value, per_particle_shape, envs_idx, dtype=float):
        envs = self._envs(envs_idx)
        vals = self._in(name, value, (self.n_particles, *per_particle_shape), envs, dtype)
        self.solver._write(arr, envs, self._sl, vals)

    # -- getters -------------------------------------------------------------------------------
    def get_particles_pos(self, envs_idx=None):
        return self._get(self.solver.pos, envs_idx)

    def get_particles_vel(self, envs_idx=None):
        return self._get(self.solver.vel, envs_idx)

    def get_particles_C(self, envs_idx=None):
        """APIC affine velocity matrix C (1/s), (…, n, 3, 3)."""
        return self._get(self.solver.C, envs_idx)

    def get_particles_F(self, envs_idx=None):
        """Deformation gradient (elastic part for the plastic materials), (…, n, 3, 3)."""
        return self._get(self.solver.F, envs_idx)

    def get_particles_Jp(self, envs_idx=None):
        """Plastic volume ratio (Snow, Sand; 1 for the others), (…, n)."""
        return self._get(self.solver.Jp, envs_idx)

    def get_particles_active(self, envs_idx=None):
        return self._get(self.solver.active, envs_idx, dtype=bool)

    # -- setters -------------------------------------------------------------------------------
    def set_particles_pos(self, pos, envs_idx=None):
        """Positions (…, n, 3); they must lie inside the domain less the wall padding."""
        envs = self._envs(envs_idx)
        vals = self._in("pos", pos, (self.n_particles, 3), envs)
        self.solver._check_inside(self, vals.reshape(-1, 3))
        self.solver._write(self.solver.pos, envs, self._sl, vals)

    def set_particles_vel(self, vel, envs_idx=None):
        self._set(self.solver.vel, "vel", vel, (3,), envs_idx)

    def set_particles_C(self, C, envs_idx=None):
        self._set(self.solver.C, "C", C, (3, 3), envs_idx)

    def set_particles_F(self, F, envs_idx=None):
        self._set(self.solver.F, "F", F, (3, 3), envs_idx)

    def set_particles_Jp(self, Jp, envs_idx=None):
        self._set(self.solver.Jp, "Jp", Jp, (), envs_idx)

    def set_particles_active(self, active, envs_idx=None):
        """Per-particle flag; an inactive particle is frozen and takes no part in the transfers."""
        envs = self._envs(envs_idx)
        vals = self._in("active", active, (self.n_particles,), envs, bool).astype(np.int32)
        self.solver._write(self.solver.active, envs, self._sl, vals)

    def set_velocity(self, vel, envs_idx=None):
        """One velocity (…, 3) for every particle of the entity; C is zeroed (rigid translation)."""
        envs = self._envs(envs_idx)
        v = self._in("vel", vel, (3,), envs)
        self.solver._write(self.solver.vel, envs, self._sl,
                           np.broadcast_to(v[:, None, :], (len(envs), self.n_particles, 3)))
        self.solver._write(self.solver.C, envs, self._sl, np.zeros((len(envs), self.n_particles, 3, 3)))

    def get_mass(self) -> float:
        return self.mass
