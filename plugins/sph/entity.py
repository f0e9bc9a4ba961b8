"""SPH entities: a liquid (a contiguous range of the solver's particles) or a static boundary."""

from __future__ import annotations

import numpy as np
from polyphys import arrays
from polyphys.interfaces import Entity


class SPHBoundaryEntity(Entity):
    """A static boundary sampled into ``n_boundary_particles`` boundary particles (no state)."""

    def __init__(self, solver, idx, morph, material, surface, name, points: np.ndarray):
        super().__init__(solver, idx, morph, material, surface, name)
        self.boundary_points = points
        self.n_boundary_particles = len(points)


class SPHEntity(Entity):
    """A liquid: particles [start, start + n_particles) of the solver (batch axis first).

    Getters return NumPy copies of shape (n_envs, n, ...) — (n, ...) for a scene built with
    n_envs=0; setters write the named envs only."""

    def __init__(self, solver, idx, morph, material, surface, name, points: np.ndarray, start: int):
        super().__init__(solver, idx, morph, material, surface, name)
        self.init_pos = points
        self.n_particles = len(points)
        self.start = start
        self._sl = slice(start, start + len(points))

    # -- getters -------------------------------------------------------------------------------
    def _get(self, arr, envs_idx, dtype=float):
        envs = self._envs(envs_idx)
        return self._out(arr.numpy()[:, self._sl].astype(dtype), envs)

    def get_particles_pos(self, envs_idx=None) -> np.ndarray:
        return self._get(self.solver.pos, envs_idx)

    def get_particles_vel(self, envs_idx=None) -> np.ndarray:
        return self._get(self.solver.vel, envs_idx)

    def get_particles_active(self, envs_idx=None) -> np.ndarray:
        return self._get(self.solver.active, envs_idx, bool)

    def get_particles_density(self, envs_idx=None) -> np.ndarray:
        """SPH density (kg/m³) of the last substep (or of ``scene.forward()``)."""
        return self._get(self.solver.rho, envs_idx)

    def get_particles_pressure(self, envs_idx=None) -> np.ndarray:
        """Pressure (Pa) of the last substep: Tait EOS (WCSPH) or Σκρ of the density solve (DFSPH)."""
        return self._get(self.solver.pressure, envs_idx)

    def get_mass(self) -> float:
        return float(self.solver.mass.numpy()[0, self._sl].sum())

    # -- setters -------------------------------------------------------------------------------
    def _set(self, arr, name, value, per, envs_idx, dtype=float):
        envs = self._envs(envs_idx)
        vals = self._in(name, value, per, envs, dtype)
        host = arr.numpy()
        host[envs[:, None], np.arange(host.shape[1])[self._sl]] = vals
        arr.assign(host)
        return vals

    def set_particles_pos(self, pos, envs_idx=None) -> None:
        """Set positions (m); every position must lie inside the solver's domain box."""
        envs = self._envs(envs_idx)
        vals = self._in("pos", pos, (self.n_particles, 3), envs)
        self.solver._check_inside(vals.reshape(-1, 3), f"set_particles_pos of {self.name!r}")
        self._set(self.solver.pos, "pos", vals, (self.n_particles, 3), envs_idx)

    def set_particles_vel(self, vel, envs_idx=None) -> None:
        self._set(self.solver.vel, "vel", vel, (self.n_particles, 3), envs_idx)

    def set_particles_active(self, active, envs_idx=None) -> None:
        """Activate (True) or deactivate (False) particles; inactive ones are skipped entirely."""
        a = arrays.as_numeric("active", active, bool)
        self._set(self.solver.active, "active", a.astype(np.int32), (self.n_particles,), envs_idx,
                  np.int32)
