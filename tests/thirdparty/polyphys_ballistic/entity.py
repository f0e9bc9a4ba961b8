"""BallisticEntity: the handle ``scene.add_entity`` returns for a Ballistic material.

Getters return NumPy copies (float64), batch axis first ((n_envs, n_particles, 3)); with n_envs=0
there is no batch axis. Setters take ``envs_idx`` and write the solver's arrays in place.
"""

from __future__ import annotations

import numpy as np
from polyphys.interfaces import Entity


class BallisticEntity(Entity):
    def __init__(self, solver, idx, morph, material, surface, name, init_pos: np.ndarray):
        super().__init__(solver, idx, morph, material, surface, name)
        self.init_pos = init_pos           # (n_particles, 3) world positions at build
        self.n_particles = len(init_pos)
        self.start = -1                    # first particle index in the solver (set at build)

    def _bind(self, start: int) -> None:
        self.start = start
        self._ps = slice(start, start + self.n_particles)

    # -- getters ---------------------------------------------------------------------------------
    def get_pos(self, envs_idx=None) -> np.ndarray:
        envs = self._envs(envs_idx)
        return self._out(self.solver.pos.numpy()[:, self._ps].astype(float), envs)

    def get_vel(self, envs_idx=None) -> np.ndarray:
        envs = self._envs(envs_idx)
        return self._out(self.solver.vel.numpy()[:, self._ps].astype(float), envs)

    def get_active(self, envs_idx=None) -> np.ndarray:
        envs = self._envs(envs_idx)
        return self._out(self.solver.active.numpy()[:, self._ps] != 0, envs)

    # -- setters ---------------------------------------------------------------------------------
    def set_pos(self, pos, envs_idx=None) -> None:
        envs = self._envs(envs_idx)
        vals = self._in("pos", pos, (self.n_particles, 3), envs)
        self.solver._write_rows(self.solver.pos, envs, self._ps, vals)

    def set_vel(self, vel, envs_idx=None) -> None:
        envs = self._envs(envs_idx)
        vals = self._in("vel", vel, (self.n_particles, 3), envs)
        self.solver._write_rows(self.solver.vel, envs, self._ps, vals)

    def set_active(self, active, envs_idx=None) -> None:
        """Inactive particles are frozen: neither integrated nor seen by couplers."""
        envs = self._envs(envs_idx)
        vals = self._in("active", active, (self.n_particles,), envs, dtype=bool)
        self.solver._write_rows(self.solver.active, envs, self._ps, vals.astype(np.int32))
