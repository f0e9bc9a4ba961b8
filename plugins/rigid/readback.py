"""Readback stage of the rigid solver: MuJoCo's ``mj_rnePostConstraint`` after the last substep's
solve, and the ``RigidSensorView`` (core/views.py) that sensors read (docs/sensors.md).

Which state: MuJoCo evaluates its sensors inside ``mj_step`` after the constraint solve and before
the integration, so ``sensordata`` after a step describes the state the step started from. The
rigid solver does the same for the last substep of each step: when a sensor asked
(``request_sensor_data``), that substep runs its dynamics (``MODE_FORWARD``), collision and
constraint solve, then this stage (``rne_post_constraint``: link accelerations, ``cfrc_ext``,
``cfrc_int`` and a snapshot of qpos, qvel, qacc, actuator and constraint forces), then integrates
(``MODE_INTEGRATE``, bit-identical to the one-launch ``MODE_STEP``: a scene steps the same with or
without sensors). Every reading is therefore of the state at t_end − h (h = dt/substeps), tagged
``solved_at`` (docs/semantics.md §F1). ``qacc`` is the acceleration of that solve: the constraint solver's result
(MuJoCo's ``qacc``), or M⁻¹·qfrc_smooth without constraints; the integrator's implicit-damping
correction (Euler's eulerdamp, implicitfast) is not in it, as in MuJoCo (with
approximate_implicitfast the solve itself includes h·D, so its qacc does).

Entity getters ``get_cfrc_int``, ``get_cfrc_ext``, ``get_qfrc_constraint`` read the same arrays; the
first call of a scene without sensors switches the stage on and answers with a fresh query at the
current state (``forward()``, tagged ``query_at``). Once on, every ``forward()`` query (get_state,
checkpoints, an explicit ``scene.forward()``) refreshes these arrays with its own solve, tagged
``query_at``; the sensors' readings of the step were taken inside the step and are not affected.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from polyphys.views import RigidSensorData, RigidSensorTables

MODE_FORWARD, MODE_INTEGRATE = 1, 3


class RigidReadback:
    """Arrays and launch of the readback stage for one RigidSolver."""

    def __init__(self, solver):
        import warp as wp

        self.solver = solver
        lay, m = solver.layout, solver.model
        n, dev, s, V = lay.n_envs, lay.device, m.scalar, m.vec3
        nl, nq, nv, na = solver.n_links, max(1, solver.n_qs), max(1, solver.n_dofs), max(1, solver.n_act)
        z = lambda shape, dt: wp.zeros((n, *shape), dtype=dt, device=dev)  # noqa: E731
        self.a = SimpleNamespace(
            qpos=z((nq,), s), qvel=z((nv,), s), qacc=z((nv,), s), qfrc_actuator=z((nv,), s),
            qfrc_constraint=z((nv,), s), act_force=z((na,), s), acc_ang=z((nl,), V), acc=z((nl,), V),
            int_force=z((nl,), V), int_torque=z((nl,), V), ext_force=z((nl,), V), ext_torque=z((nl,), V))
        st = getattr(solver, "constraint", None)
        self.zero_nv = z((nv,), s)
        if st is None or solver.collision is None:       # no contacts: zero contact inputs
            self.con = SimpleNamespace(n_con=wp.zeros(n, dtype=wp.int32, device=dev), con_pos=z((1,), V),
                                       con_frame=z((1,), solver.mat33), con_wrench=z((1, 6), s),
                                       con_link=wp.full((n, 1, 2), -1, dtype=wp.int32, device=dev),
                                       link_force=z((nl,), V), link_torque=z((nl,), V),
                                       link_impulse_force=z((nl,), V), link_impulse_torque=z((nl,), V))
        else:
            self.con = st
        if st is None:
            self.rows = SimpleNamespace(n_efc=wp.zeros(n, dtype=wp.int32, device=dev),
                                        efc_type=z((1,), wp.int32), efc_id=z((1,), wp.int32), efc_force=z((1,), s),
                                        eq_type=wp.zeros(0, dtype=wp.int32, device=dev),
                                        eq_obj=wp.zeros((1, 4), dtype=wp.int32, device=dev),
                                        eq_data=wp.zeros((1, 11), dtype=s, device=dev), qfrc=self.zero_nv)
        else:
            mm = st.model
            self.rows = SimpleNamespace(n_efc=st.n_efc, efc_type=st.efc_type, efc_id=st.efc_id, efc_force=st.efc_force,
                                        eq_type=mm["eq_type"], eq_obj=mm["eq_obj"], eq_data=mm["eq_data"],
                                        qfrc=st.qfrc_constraint)
        self._views: dict = {}

    def run(self, part, qacc) -> None:
        """The stage for the envs of ``part`` (a Partition, or None: all envs) at the state of the
        last MODE_FORWARD launch; ``qacc`` the solve's acceleration (n_envs, nv)."""
        import warp as wp

        from .kernels.readback import rne_post_constraint

        sv, m, d, a, c, r = self.solver, self.solver.model, self.solver.d, self.a, self.con, self.rows
        sl = slice(0, sv.layout.n_envs) if part is None else slice(part.start, part.stop)
        x = lambda arr: arr[sl]  # noqa: E731
        st = getattr(sv, "constraint", None)
        wp.launch(rne_post_constraint, dim=sl.stop - sl.start, device=sv.layout.device, inputs=[
            sv._gravity, m.link_parent, m.link_root, m.link_dof_adr, r.eq_type, r.eq_obj, r.eq_data,
            int(sv.n_dofs), int(sv.n_act), int(st is not None and len(sv._eq_types) > 0),
            x(sv.qpos), x(sv.qvel), x(qacc), x(d.qfrc_actuator), x(r.qfrc), x(d.act_force), x(d.cdof_w),
            x(d.cdof_v), x(d.cdofdot_w), x(d.cdofdot_v), x(d.cvel_w), x(d.cvel_v), x(d.cinert_m), x(d.cinert_mc),
            x(d.cinert_i), x(d.link_pos), x(d.link_quat), x(d.link_xipos), x(d.link_ang), x(d.link_com_vel),
            x(sv.xfrc_force), x(sv.xfrc_torque), x(sv.coupling_force), x(sv.coupling_torque), x(c.link_force),
            x(c.link_torque), x(r.n_efc), x(r.efc_type), x(r.efc_id), x(r.efc_force),
            x(a.qpos), x(a.qvel), x(a.qacc), x(a.qfrc_actuator), x(a.qfrc_constraint), x(a.act_force),
            x(a.acc_ang), x(a.acc), x(a.int_force), x(a.int_torque), x(a.ext_force), x(a.ext_torque)])

    def data(self, part) -> RigidSensorData:
        v = self._views.get(part.index)
        if v is None:
            sv, d, a, c, p = self.solver, self.solver.d, self.a, self.con, self.solver.params
            x = lambda arr: arr[part.start:part.stop]  # noqa: E731
            v = self._views[part.index] = RigidSensorData(
                link_pos=x(d.link_pos), link_quat=x(d.link_quat), link_com=x(d.link_xipos), link_ang=x(d.link_ang),
                link_vel=x(d.link_com_vel), link_acc_ang=x(a.acc_ang), link_acc=x(a.acc), link_mass=x(p.link_mass),
                link_inertia=x(p.link_inertia), cfrc_int_force=x(a.int_force), cfrc_int_torque=x(a.int_torque),
                cfrc_ext_force=x(a.ext_force), cfrc_ext_torque=x(a.ext_torque), qpos=x(a.qpos), qvel=x(a.qvel),
                qacc=x(a.qacc), qfrc_actuator=x(a.qfrc_actuator), qfrc_constraint=x(a.qfrc_constraint),
                act_force=x(a.act_force), n_contacts=x(c.n_con), contact_pos=x(c.con_pos),
                contact_frame=x(c.con_frame), contact_wrench=x(c.con_wrench), contact_link=x(c.con_link),
                link_contact_force=x(c.link_force), link_contact_torque=x(c.link_torque),
                link_impulse_force=x(c.link_impulse_force), link_impulse_torque=x(c.link_impulse_torque),
                time_lag=float(sv.layout.h))
        return v


class RigidSensorViewMixin:
    """RigidSensorView of the rigid solver and the hooks its substeps call (few lines in solver.py)."""

    _readback = None
    _readback_enabled_at = None      # steps done when the stage was switched on
    _readback_query_at = None        # steps done at a getter's query (forward + stage)

    # -- RigidSensorView ----------------------------------------------------------------------------
    def request_sensor_data(self) -> None:
        if self._readback is None:
            self._readback = RigidReadback(self)
            self._readback_enabled_at = self._steps_done()
            sim = getattr(self.scene, "simulator", None)
            if sim is not None:
                sim.invalidate()         # captured graphs lack the stage: capture again

    def sensor_data(self, part) -> RigidSensorData:
        self.request_sensor_data()
        return self._readback.data(part)

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

    # -- substep hooks ------------------------------------------------------------------------------
    def _readback_last(self, f) -> bool:
        return self._readback is not None and f == self.layout.substeps - 1

    def _readback_substep(self, part) -> None:
        """The last substep without a constraint stage, split so that the stage sees its state:
        MODE_FORWARD (qacc = M⁻¹·qfrc_smooth), the stage, MODE_INTEGRATE — bit-identical to MODE_STEP."""
        pa = self._parts[part.index]
        self._launch(pa, MODE_FORWARD)
        self._readback.run(part, self.d.qacc)
        self._launch(pa, MODE_INTEGRATE, 1)

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

    def _readback_read(self, envs: np.ndarray, names) -> dict:
        done = self._steps_done()
        if (self._readback is None or done <= max(self._readback_enabled_at, 0)) and self._readback_query_at != done:
            # no step has computed it yet: switch the stage on and query the current state (with a
            # constraint stage, forward()'s query runs the stage on its solve; else qacc = M⁻¹f)
            self.request_sensor_data()
            self.forward()
            if getattr(self, "constraint", None) is None:
                self._readback.run(None, self.d.qacc)
            self._readback_query_at = done
        a = self._readback.a
        out = {k: getattr(a, src).numpy()[envs].astype(float) for k, src in names.items()}
        out.update(self._readback_tags(envs))
        return out
