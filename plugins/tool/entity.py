"""ToolEntity: the pose and velocity setters (per env, ``envs_idx``) and the reaction readback."""

from __future__ import annotations

import numpy as np
from polyphys.errors import OptionError
from polyphys.interfaces import Entity
from polyphys.morphs import euler_to_quat


class ToolEntity(Entity):
    """One tool: link ``index`` of the tool solver. Getters return NumPy copies, batch axis first
    (none for n_envs=0); setters take one value (broadcast) or one per env named in ``envs_idx``."""

    def __init__(self, solver, idx, morph, material, surface, name, index: int):
        super().__init__(solver, idx, morph, material, surface, name)
        self.index = index

    def _get(self, arr, envs_idx, xyzw_to_wxyz=False):
        envs = self._envs(envs_idx)
        a = arr.numpy()[:, self.index].astype(float)
        if xyzw_to_wxyz:
            a = a[..., [3, 0, 1, 2]]
        return self._out(a, envs)

    def _set(self, arr, name, value, shape, envs_idx):
        envs = self._envs(envs_idx)
        vals = self._in(name, value, shape, envs)
        self.solver._write_column(arr, envs, self.index, vals)
        return vals

    # -- pose and velocity -----------------------------------------------------------------------
    def get_pos(self, envs_idx=None):
        """Tool origin (world, m): the morph's centre (a mesh: its frame's origin)."""
        return self._get(self.solver.pos, envs_idx)

    def get_quat(self, envs_idx=None):
        """Orientation (w, x, y, z)."""
        return self._get(self.solver.quat, envs_idx, xyzw_to_wxyz=True)

    def get_vel(self, envs_idx=None):
        return self._get(self.solver.vel, envs_idx)

    def get_ang(self, envs_idx=None):
        """Angular velocity (world frame, rad/s)."""
        return self._get(self.solver.ang, envs_idx)

    def set_pos(self, pos, envs_idx=None):
        self._set(self.solver.pos, "pos", pos, (3,), envs_idx)

    def set_quat(self, quat, envs_idx=None):
        envs = self._envs(envs_idx)
        vals = self._in("quat", quat, (4,), envs)
        n = np.linalg.norm(vals, axis=1, keepdims=True)
        if np.any(n < 1e-12):
            raise OptionError("set_quat: a zero quaternion has no orientation")
        self.solver._write_column(self.solver.quat, envs, self.index, (vals / n)[:, [1, 2, 3, 0]])

    def set_euler(self, euler, envs_idx=None):
        """Orientation from extrinsic x-y-z Euler angles in degrees."""
        envs = self._envs(envs_idx)
        vals = self._in("euler", euler, (3,), envs)
        self.set_quat(np.array([euler_to_quat(e) for e in vals]), envs_idx=envs_idx)

    def set_velocity(self, velocity, envs_idx=None):
        """Linear velocity of the tool origin (world, m/s); kept until set again."""
        self._set(self.solver.vel, "velocity", velocity, (3,), envs_idx)

    def set_angular_velocity(self, angular, envs_idx=None):
        """Angular velocity (world, rad/s) about the tool origin."""
        self._set(self.solver.ang, "angular", angular, (3,), envs_idx)

    # -- reaction ------------------------------------------------------------------------------------
    def get_reaction(self, envs_idx=None) -> dict:
        """What the material exerted on the tool (world frame, torque about the tool origin):
        ``impulse``/``angular_impulse`` = Σ h·f over the substeps of the last step (N·s, N·m·s),
        ``force``/``torque`` = that impulse over dt (the step's mean, N, N·m), ``last_force``/
        ``last_torque`` the last substep's, solved at ``solved_at``; the window ``[window_start,
        window_end]``. The material's momentum changed by -impulse through the coupling."""
        s = self.solver
        scene = self.scene
        envs = self._envs(envs_idx)
        dt, h = scene.sim_options.dt, s.layout.h
        t_end = np.asarray(scene._step_count[envs] * dt, dtype=float)
        imp = self._get(s.impulse, envs_idx)
        aimp = self._get(s.angular_impulse, envs_idx)
        tag = (lambda t: t) if scene.batched else (lambda t: float(t[0]))
        return {"impulse": imp, "angular_impulse": aimp, "force": imp / dt, "torque": aimp / dt,
                "last_force": self._get(s.force, envs_idx), "last_torque": self._get(s.torque, envs_idx),
                "solved_at": tag(t_end - h), "window_start": tag(t_end - dt), "window_end": tag(t_end),
                "frame": "world", "reference_point": "tool origin"}

    def get_force(self, envs_idx=None):
        """The material's mean force on the tool over the last step (impulse / dt, N)."""
        return self.get_reaction(envs_idx)["force"]
