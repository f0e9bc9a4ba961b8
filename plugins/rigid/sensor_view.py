"""The rigid solver's ``RigidSensorView`` (core/views.py) and the readback getters (docs/sensors.md).

Which state: MuJoCo evaluates its sensors inside ``mj_step`` after the constraint solve and before
the integration, so ``sensordata`` after a step describes the state the step started from. The
rigid solver does the same for the last substep of each step: once a sensor asked
(``request_sensor_data``), that substep runs the readback stage (readback.py) after its solve and
contact forces and before its integration. Without constraint rows the substep then computes
M⁻¹·qfrc_smooth (MuJoCo's qacc) for the stage before the (M + h·D) solve of the integration, which
is unchanged: a scene steps bit-identically with and without sensors. Every reading is of the state
at t_end − h (h = dt/substeps), tagged ``solved_at`` (docs/semantics.md §F1).

Entity getters ``get_cfrc_int``, ``get_cfrc_ext``, ``get_qfrc_constraint`` read the same arrays; the
first call of a scene without sensors switches the stage on and answers with a fresh query at the
current state (``forward()``, tagged ``query_at``). Once on, every ``forward()`` constraint query
(get_state, checkpoints, an explicit ``scene.forward()``) refreshes these arrays with its own solve,
tagged ``query_at``; the sensors' readings of the step were taken inside the step and are not
affected.
"""

from __future__ import annotations

import numpy as np
from polyphys.views import RigidSensorData, RigidSensorTables


class RigidSensorViewMixin:
    """RigidSensorView of the rigid solver and the readback state its substeps consult."""

    _readback_on = False
    _readback_enabled_at = None      # steps done when the stage was switched on
    _readback_query_at = None        # steps done at a query that ran the stage (forward + stage)

    # -- RigidSensorView ----------------------------------------------------------------------------
    def request_sensor_data(self) -> None:
        if not self._readback_on:
            self._readback_on = True
            self._readback_enabled_at = self._steps_done()
            self._wrench_keep_on()       # the stage reads the link contact wrenches: every substep computes them
            self._sensor_views = {}
            sim = getattr(self.scene, "simulator", None)
            if sim is not None:
                sim.invalidate()         # captured graphs lack the stage: capture again

    def sensor_data(self, part) -> RigidSensorData:
        self.request_sensor_data()
        out = self._sensor_views.get(part.index)
        if out is None:
            v = self.views[part.index]
            d, m = v.d, v.m
            out = self._sensor_views[part.index] = RigidSensorData(
                link_pos=d.link_pos, link_quat=d.link_quat, link_com=d.link_xipos, link_ang=d.link_ang,
                link_vel=d.link_com_vel, link_acc_ang=d.link_acc_ang, link_acc=d.link_acc, link_mass=m.link_mass,
                link_inertia=m.link_inertia, cfrc_int_force=d.cfrc_int_force, cfrc_int_torque=d.cfrc_int_torque,
                cfrc_ext_force=d.cfrc_ext_force, cfrc_ext_torque=d.cfrc_ext_torque, qpos=d.snap_qpos,
                qvel=d.snap_qvel, qacc=d.snap_qacc, qfrc_actuator=d.snap_qfrc_actuator,
                qfrc_constraint=d.snap_qfrc_constraint, act_force=d.snap_act_force, n_contacts=d.ncon,
                contact_pos=d.con_pos, contact_frame=d.con_frame, contact_wrench=d.con_wrench,
                contact_link=d.con_link, link_contact_force=d.link_contact_force,
                link_contact_torque=d.link_contact_torque, link_impulse_force=d.link_impulse_force,
                link_impulse_torque=d.link_impulse_torque, time_lag=float(self.layout.h))
        return out

    def sensor_tables(self, entity) -> RigidSensorTables:
        desc, ls = entity.description, entity.link_start

        def pose(li, pos, quat, typ="sphere", size=(0.0, 0.0, 0.0)):
            size = tuple(float(x) for x in (tuple(size) + (0.0, 0.0, 0.0))[:3])
            return (ls + li, np.asarray(pos, float), np.asarray(quat, float), typ, np.asarray(size))

        sites = {s.name: pose(s.link, s.pos, s.quat, s.type, s.size) for s in desc.sites}
        for name, (li, pos, quat) in desc.frames.items():       # links merged into another (URDF)
            sites.setdefault(name, pose(li, pos, quat))
        geoms = {g.name: pose(g.link, g.pos, g.quat, g.type, g.size) for g in desc.geoms if g.name}
        joints = {j.name: (j.type, entity.q_start + j.q_start, entity.dof_start + j.dof_start) for j in desc.joints}
        acts = {a.name: entity._as.start + i for i, a in enumerate(desc.actuators)}
        return RigidSensorTables(links={lk.name: ls + i for i, lk in enumerate(desc.links)}, sites=sites,
                                 geoms=geoms, joints=joints, actuators=acts,
                                 link_parent=np.asarray(self.tree.link_parent, np.int64))

    # -- entity getters ------------------------------------------------------------------------------
    def _readback_tags(self, envs: np.ndarray) -> dict:
        steps = self.scene._step_count[envs].astype(float)
        dt, h = self.layout.dt, self.layout.h
        nan = np.full(len(envs), np.nan)
        stale = np.full(len(envs), getattr(self, "_forward_at", None) == self._steps_done()
                        and self._readback_query_at != self._steps_done())
        if self._readback_query_at == self._steps_done():
            return dict(solved_at=nan, query_at=steps * dt, stale=stale)
        return dict(solved_at=np.where(steps > 0, steps * dt - h, np.nan), query_at=nan, stale=stale)

    def _readback_read(self, envs: np.ndarray, names: dict) -> dict:
        """{key: Data field} of the readback for ``envs`` with the time tags."""
        from . import readback

        done = self._steps_done()
        if (not self._readback_on or done <= max(self._readback_enabled_at, 0)) and self._readback_query_at != done:
            # no step has computed it yet: switch the stage on and query the current state (with
            # constraint rows, forward()'s query runs the stage on its solve; else qacc = M⁻¹f)
            self.request_sensor_data()
            self.forward()
            if not self.has_constraint:
                readback.rne_post_constraint(self.views["all"], self.data.qacc_smooth)
            self._readback_query_at = done
        d = self.data
        out = {k: getattr(d, src).numpy()[envs].astype(float) for k, src in names.items()}
        out.update(self._readback_tags(envs))
        return out
