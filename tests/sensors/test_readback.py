"""The rigid readback stage alone (plugins/rigid/readback.py, kernels/readback.py) against MuJoCo's
mj_rnePostConstraint at a frozen state: every output NaN-filled first, then one run of the stage on
the state of a ``forward()`` query (dynamics, contacts and constraint solve, no integration); cacc,
cfrc_int and cfrc_ext converted to the view's conventions (per link, world frame, torque about the
link CoM, true CoM acceleration), 1e-9 relative on the model's force/acceleration scale (both
solves run to round-off; float64)."""

import warnings

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

import polyphys  # noqa: E402
from polyphys import morphs  # noqa: E402
from polyphys.materials import Rigid  # noqa: E402
from polyphys.plugins.rigid import readback  # noqa: E402
from polyphys.plugins.rigid.options import RigidOptions  # noqa: E402
from test_sensors_mujoco import ARTICULATED, _articulated_states  # noqa: E402


def _mujoco_per_link(m, d):
    """MuJoCo's cacc / cfrc_int / cfrc_ext as (CoM acceleration without gravity, angular
    acceleration, force and torque about the CoM), world frame, per body."""
    mujoco.mj_rnePostConstraint(m, d)
    out = {k: np.zeros((m.nbody, 3)) for k in ("acc", "acc_ang", "int_f", "int_t", "ext_f", "ext_t")}
    for b in range(1, m.nbody):
        ref = d.subtree_com[m.body_rootid[b]]
        c = d.xipos[b]
        vel = np.zeros(6)
        mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_BODY, b, vel, 0)
        ang, lin = d.cacc[b, :3], d.cacc[b, 3:]
        out["acc_ang"][b] = ang
        out["acc"][b] = lin + np.cross(ang, c - ref) + np.cross(vel[:3], vel[3:]) + m.opt.gravity
        for key, w in (("int", d.cfrc_int[b]), ("ext", d.cfrc_ext[b])):
            out[f"{key}_f"][b] = w[3:]
            out[f"{key}_t"][b] = w[:3] + np.cross(ref - c, w[3:])
    return out


@pytest.mark.parametrize("cone, constrained", [("pyramidal", True), ("elliptic", True), ("pyramidal", False)])
def test_readback_stage_alone_matches_mj_rnePostConstraint(cone, constrained, tmp_path):
    """constrained: the stage on forward()'s query (constraint solve); without constraints
    (disable_constraint, MuJoCo's mjDSBL_CONSTRAINT): the stage inside a step of one substep, on the
    M⁻¹·qfrc_smooth the last substep solves for it before its (M + h·D) integration."""
    xml = ARTICULATED.format(cone=cone)
    path = tmp_path / "a.xml"
    path.write_text(xml)
    m = mujoco.MjModel.from_xml_path(str(path))
    if not constrained:
        m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    d = mujoco.MjData(m)
    q, v, u = _articulated_states(m, 1)[0]
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=float(m.opt.timestep), precision="64"),
                           rigid=RigidOptions.mujoco(integrator="Euler", friction_cone=cone,
                                                     disable_constraint=not constrained))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ent = scene.add_entity(morphs.MJCF(file=str(path)), Rigid())
        scene.build()
    if not constrained:       # joint damping: the implicit (M + h·D) of the integration must not leak in
        damping = np.linspace(0.2, 0.8, m.nv)
        ent.set_dofs_damping(damping)
        m.dof_damping[:] = damping
    ent.set_qpos(q)
    ent.set_dofs_velocity(v)
    ent.set_ctrl(u)
    xfrc = np.array([[1.0, 2.0, 3.0], [0.1, 0.2, 0.3]])
    ent.apply_links_external_force(xfrc[:1], links_idx_local=[1])
    ent.apply_links_external_torque(xfrc[1:], links_idx_local=[1])
    d.qpos[:], d.qvel[:], d.ctrl[:] = q, v, u
    d.xfrc_applied[1] = xfrc.ravel()
    mujoco.mj_forward(m, d)
    ref = _mujoco_per_link(m, d)

    sv = scene.solver("rigid")
    sv.request_sensor_data()
    a = sv.data
    for name in readback.OUTPUTS:
        getattr(a, name).fill_(np.nan)
    if constrained:
        sv.forward()      # the query: dynamics, contacts, constraint solve, then the stage on its qacc
    else:
        assert not sv.has_constraint
        scene.step()      # one substep: the readback of the state the step started from
    np.testing.assert_allclose(a.snap_qacc.numpy()[0], d.qacc, rtol=0, atol=1e-9 * np.abs(d.qacc).max())
    np.testing.assert_allclose(a.snap_qfrc_constraint.numpy()[0], d.qfrc_constraint, rtol=0,
                               atol=1e-9 * np.abs(d.qfrc_constraint).max())
    np.testing.assert_allclose(a.snap_qpos.numpy()[0], q, rtol=0, atol=1e-15)     # set_qpos normalizes quaternions
    weight = float(m.body_mass.sum() * 9.81)
    for key, got, scale in (("acc", a.link_acc, 9.81), ("acc_ang", a.link_acc_ang, 9.81),
                            ("int_f", a.cfrc_int_force, weight), ("int_t", a.cfrc_int_torque, weight),
                            ("ext_f", a.cfrc_ext_force, weight), ("ext_t", a.cfrc_ext_torque, weight)):
        g = got.numpy()[0][1:]
        assert np.all(np.isfinite(g)), key
        np.testing.assert_allclose(g, ref[key][1:], rtol=0, atol=1e-9 * max(scale, np.abs(ref[key]).max()),
                                   err_msg=key)
    # the getters read the same arrays (a query before any step: query_at = 0; after the step:
    # solved_at = the start of its last substep, 0)
    w = ent.get_cfrc_int()
    np.testing.assert_allclose(w["force"][1:], ref["int_f"][1:], rtol=0, atol=1e-9 * weight)
    assert w["query_at" if constrained else "solved_at"] == 0.0
