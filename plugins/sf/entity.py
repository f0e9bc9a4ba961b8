"""SF entities: a Smoke region or an Emitter, with getters of the gas fields and per-env emitter setters."""

from __future__ import annotations

import numpy as np
from polyphys.arrays import check_shape
from polyphys.errors import OptionError
from polyphys.interfaces import Entity

AXES = {"x": 0, "y": 1, "z": 2}


class SFEntity(Entity):
    """Base of the SF entity handles. The gas fields belong to the solver (one grid per env); every
    SF entity reads them (``get_density()`` is ``scene.solver("sf").get_density()``), plus 2D slices
    for pictures (``polyphys run`` draws recorded ``*slice*`` getters as images)."""

    def get_density(self, envs_idx=None):
        return self.solver.get_density(envs_idx)

    def get_temperature(self, envs_idx=None):
        return self.solver.get_temperature(envs_idx)

    def get_velocity_field(self, envs_idx=None):
        """Cell-centred gas velocity (…, nx, ny, nz, 3) (m/s)."""
        return self.solver.get_velocity(envs_idx)

    def get_pressure(self, envs_idx=None):
        return self.solver.get_pressure(envs_idx)

    def _slice(self, field: np.ndarray, axis: str, at: float | None):
        """The 2D slice of a (…, nx, ny, nz[, c]) field through the cell row nearest ``at`` (m) on
        ``axis`` (default: the slice through this entity's centre)."""
        if not isinstance(axis, str) or axis not in AXES:
            raise OptionError(f"slice axis = {axis!r}: allowed 'x', 'y', 'z'")
        a = AXES[axis]
        o = self.solver.options
        pos = self.morph.pos[a] if at is None else float(check_shape("at", at, ()))
        if not np.isfinite(pos):
            raise OptionError(f"slice at = {at!r}: expected a finite position (m)")
        idx = int(np.floor((pos - o.lower_bound[a]) / o.dx))
        if not 0 <= idx < o.res[a]:
            raise OptionError(f"slice at {axis} = {pos}: outside the grid [{o.lower_bound[a]}, {o.upper_bound[a]}]")
        batch = 1 if self.scene.batched else 0
        return np.take(field, idx, axis=batch + a)

    def get_density_slice(self, axis: str = "y", at: float | None = None):
        """Smoke density on the plane ``axis`` = ``at`` (cells (…, n1, n2), the other two axes in
        x, y, z order)."""
        return self._slice(self.get_density(), axis, at)

    def get_temperature_slice(self, axis: str = "y", at: float | None = None):
        return self._slice(self.get_temperature(), axis, at)

    def get_solid_slice(self, axis: str = "y", at: float | None = None):
        """1 where a rigid geom covers the cell (the obstacles of the last substep), else 0."""
        return self._slice(self.solver.get_solid().astype(float), axis, at)

    def get_speed_slice(self, axis: str = "y", at: float | None = None):
        """|velocity| (cell-centred, m/s) on the plane ``axis`` = ``at``."""
        return np.linalg.norm(self._slice(self.get_velocity_field(), axis, at), axis=-1)


class SmokeEntity(SFEntity):
    """Initial smoke, heat and velocity inside the morph (written at build; restored by reset)."""


class EmitterEntity(SFEntity):
    """A source whose position, rate, heat and velocity are per env (setters take ``envs_idx``)."""

    def __init__(self, solver, idx, morph, material, surface, name, index: int):
        super().__init__(solver, idx, morph, material, surface, name)
        self.index = index            # among the solver's emitters

    def _get(self, arr, envs_idx):
        envs = self._envs(envs_idx)
        return self._out(arr.numpy()[:, self.index].astype(float), envs)

    def _set(self, arr, name, value, shape, envs_idx):
        envs = self._envs(envs_idx)
        vals = self._in(name, value, shape, envs)
        self.solver._write_column(arr, envs, self.index, vals)

    def get_pos(self, envs_idx=None):
        return self._get(self.solver.em_pos, envs_idx)

    def set_pos(self, pos, envs_idx=None):
        """Move the source (its centre, m); the whole source must stay inside the domain."""
        envs = self._envs(envs_idx)
        vals = self._in("pos", pos, (3,), envs)
        for p in vals:
            self.solver._check_region(self.name, self.morph, p)
        self.solver._write_column(self.solver.em_pos, envs, self.index, vals)

    def get_rate(self, envs_idx=None):
        return self._get(self.solver.em_rate, envs_idx)

    def set_rate(self, rate, envs_idx=None):
        """Smoke density added per second in each cell inside (>= 0)."""
        envs = self._envs(envs_idx)
        vals = self._in("rate", rate, (), envs)
        if np.any(vals < 0):
            raise OptionError(f"set_rate({rate!r}): the rate must be >= 0")
        self.solver._write_column(self.solver.em_rate, envs, self.index, vals)

    def get_heat(self, envs_idx=None):
        return self._get(self.solver.em_heat, envs_idx)

    def set_heat(self, heat, envs_idx=None):
        """Temperature added per second in each cell inside (K/s)."""
        self._set(self.solver.em_heat, "heat", heat, (), envs_idx)

    def get_velocity(self, envs_idx=None):
        """The jet velocity of this source (m/s); the gas velocity is ``get_velocity_field()``."""
        return self._get(self.solver.em_vel, envs_idx)

    def set_velocity(self, velocity, envs_idx=None):
        """The jet velocity imposed on the faces inside (only for an Emitter made with a velocity)."""
        if self.material.velocity is None:
            raise OptionError(f"emitter {self.name!r} was made with velocity=None (it does not impose a velocity); "
                              f"give Emitter(velocity=(...)) to make it a jet")
        self._set(self.solver.em_vel, "velocity", velocity, (3,), envs_idx)
