"""PBDEntity: getters and setters of docs/semantics.md §S8 (pos, vel, free) for one PBD entity's particles."""

from __future__ import annotations

import numpy as np
from polyphys import arrays
from polyphys.errors import OptionError, SceneStateError
from polyphys.interfaces import Entity


class PBDEntity(Entity):
    """Particles of one cloth, elastic body, granular body or liquid. Getters return NumPy copies
    with the batch axis first: ``(n_envs, n_particles, 3)`` (no batch axis when n_envs=0)."""

    def __init__(self, solver, idx, morph, material, surface, name, kind: str, n: int, pinned):
        super().__init__(solver, idx, morph, material, surface, name)
        self.kind = kind
        self.n_particles = n
        self.pinned = pinned               # local indices fixed in the initial state
        self.start = -1                    # first particle in the solver's arrays (set at build)

    @property
    def _sl(self) -> slice:
        if self.start < 0:
            raise SceneStateError(f"entity {self.name!r}: particle state exists after scene.build()")
        return slice(self.start, self.start + self.n_particles)

    def _local_idx(self, idx, what="particles_idx_local") -> np.ndarray:
        if idx is None:
            return np.arange(self.n_particles)
        return check_particle_indices(idx, self.n_particles, self.name, what)

    # -- getters ----------------------------------------------------------------------------------
    def get_particles_pos(self, envs_idx=None) -> np.ndarray:
        envs = self._envs(envs_idx)
        return self._out(self.solver.pos.numpy()[:, self._sl].astype(float), envs)

    def get_particles_vel(self, envs_idx=None) -> np.ndarray:
        envs = self._envs(envs_idx)
        return self._out(self.solver.vel.numpy()[:, self._sl].astype(float), envs)

    def get_particles_free(self, envs_idx=None) -> np.ndarray:
        """Per particle: True if it moves, False if pinned (docs/semantics.md §S8 ``free`` flag)."""
        envs = self._envs(envs_idx)
        return self._out(self.solver.free.numpy()[:, self._sl] != 0, envs)

    def get_mass(self) -> np.ndarray:
        """Mass of each particle (kg), the same in every env."""
        return self.solver.host["mass"][self._sl].copy()

    def get_triangles(self) -> np.ndarray:
        """Cloth triangles (local vertex indices)."""
        if self.kind != "cloth":
            raise OptionError(f"entity {self.name!r} is {self.kind}, not cloth: it has no triangles")
        return self._triangles.copy()

    def get_particles_density(self, envs_idx=None) -> np.ndarray:
        """Liquid only: SPH density of each particle (poly6 kernel, the solver's smoothing radius,
        liquid neighbours of every liquid entity), computed on the host from current positions."""
        if self.kind != "liquid":
            raise OptionError(f"entity {self.name!r} is {self.kind}: density is defined for Liquid")
        from scipy.spatial import cKDTree

        envs = self._envs(envs_idx)
        s = self.solver
        host = s.host
        liq = np.nonzero(host["kind"] == 3)[0]
        hr = s.fluid_h
        mine = np.arange(self.start, self.start + self.n_particles)
        pos = s.pos.numpy()
        out = np.zeros((len(envs), self.n_particles))
        coef = 315.0 / (64.0 * np.pi * hr ** 9)
        for a, e in enumerate(envs):
            tree = cKDTree(pos[e, liq])
            pairs = tree.query_ball_point(pos[e, mine], hr)
            for k, nb in enumerate(pairs):
                d2 = np.sum((pos[e, liq[nb]] - pos[e, mine[k]]) ** 2, axis=1)
                out[a, k] = np.sum(host["mass"][liq[nb]] * coef * np.clip(hr * hr - d2, 0, None) ** 3)
        return self._out(out, None) if not self.scene.batched else out

    # -- setters ----------------------------------------------------------------------------------
    def set_particles_pos(self, pos, envs_idx=None) -> None:
        """Write positions (n_particles, 3) per env; velocities are kept."""
        envs = self._envs(envs_idx)
        vals = self._in("pos", pos, (self.n_particles, 3), envs)
        self.solver.write_rows(self.solver.pos, envs, self._sl, vals)

    def set_particles_vel(self, vel, envs_idx=None) -> None:
        envs = self._envs(envs_idx)
        vals = self._in("vel", vel, (self.n_particles, 3), envs)
        self.solver.write_rows(self.solver.vel, envs, self._sl, vals)

    def set_particles_free(self, free, particles_idx_local=None, envs_idx=None) -> None:
        """Pin (False) or release (True) particles, per particle and per env. ``free`` is one value
        per index in ``particles_idx_local`` (default: every particle), or a single bool. A pinned
        particle keeps its position (set it with set_particles_pos to move it) and has zero
        velocity."""
        envs = self._envs(envs_idx)
        idx = self._local_idx(particles_idx_local)
        free = arrays.as_numeric("free", free, bool)
        if free.ndim == 0:
            free = np.full(len(idx), bool(free))
        vals = self._in("free", free, (len(idx),), envs, dtype=bool).astype(np.int32)
        host = self.solver.free.numpy()
        cols = self.start + idx
        host[np.ix_(envs, cols)] = vals
        self.solver.free.assign(host)
        if not np.all(vals):
            v = self.solver.vel.numpy()
            pinned = vals == 0
            sub = v[np.ix_(envs, cols)]
            sub[pinned] = 0.0
            v[np.ix_(envs, cols)] = sub
            self.solver.vel.assign(v)


def check_particle_indices(idx, n: int, name: str, what: str) -> np.ndarray:
    arr = arrays.as_index_list(what, idx)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise OptionError(f"{what} = {idx!r}: expected integer particle indices")
    bad = arr[(arr < 0) | (arr >= n)]
    if bad.size:
        raise OptionError(f"{what} contains {bad[:10].tolist()}: entity {name!r} has {n} particles, "
                          f"allowed indices are 0..{n - 1}")
    return arr.astype(np.int64)
