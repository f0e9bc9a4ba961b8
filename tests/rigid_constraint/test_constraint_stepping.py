"""The constraint stage inside a time loop: MuJoCo supplies the smooth dynamics and contacts
(mj_forward), this module builds rows and solves (warm-started from its own last qacc), MuJoCo's
mj_Euler integrates. Compared with MuJoCo stepping itself (mj_step, same model)."""

import numpy as np
import pytest
import warp as wp

mujoco = pytest.importorskip("mujoco")

import mjscenes as S  # noqa: E402

BOX = """
<mujoco>
  <option timestep="0.002" cone="{cone}" tolerance="1e-12" iterations="200" ls_iterations="100"/>
  <worldbody>
    <geom type="plane" size="2 2 .1" friction="0.8 0.005 0.0001"/>
    <body pos="0 0 0.11" euler="4 3 0">
      <freejoint/>
      <geom type="box" size=".1 .1 .1" mass="1.0"/>
    </body>
  </worldbody>
</mujoco>
"""


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_box_drop_and_rest_matches_mujoco(cone):
    """A 1 kg box dropped 1 cm onto a plane, 250 steps (0.5 s): the trajectory equals mj_step's to
    1e-6 (both solve the same convex problems to 1e-12; differences are round-off amplified by
    contact switching), every substep's per-link contact wrench satisfies Newton–Euler for the box,
    and at rest the summed normal force equals m·g within 0.5 %."""
    m = mujoco.MjModel.from_xml_string(BOX.format(cone=cone))
    d_ref, d = mujoco.MjData(m), mujoco.MjData(m)
    nv = m.nv
    warm = None
    for _ in range(250):
        mujoco.mj_step(m, d_ref)
        mujoco.mj_forward(m, d)
        st, tree = S.stage_for(m, d, max_rows=40, solver="Newton", tolerance=1e-12, iterations=100,
                               ls_tolerance=1e-10)
        S.build(st, tree)
        M = np.zeros((nv, nv))
        mujoco.mj_fullM(m, d, M)
        qs = wp.array(d.qacc_smooth[None], dtype=wp.float64)
        qw = qs if warm is None else wp.array(warm[None], dtype=wp.float64)
        st.solve(wp.array(M[None], dtype=wp.float64), qs, qw)
        warm = st.qacc.numpy()[0].copy()
        # Newton–Euler balance of the box (body 1, CoM at its origin) per substep, from the contact
        # wrenches alone: m·a = ΣF + m·g, I·ω̇ + ω×Iω = R ᵀΣT_com (local frame) — to 1e-9 relative
        st.contact_wrenches()
        st.link_wrenches(wp.array(d.xipos[None], dtype=st.V), h=m.opt.timestep, accumulate=True)
        F = st.link_force.numpy()[0, 1]
        T = st.link_torque.numpy()[0, 1]
        mass = m.body_mass[1]
        np.testing.assert_allclose(mass * warm[:3], F + mass * m.opt.gravity, atol=1e-9 * (1 + np.abs(F).max()))
        R = d.xmat[1].reshape(3, 3)
        w = d.qvel[3:6]
        Iw = m.body_inertia[1] * w
        np.testing.assert_allclose(m.body_inertia[1] * warm[3:6] + np.cross(w, Iw), R.T @ T,
                                   atol=1e-9 * (1 + np.abs(T).max()))
        np.testing.assert_allclose(st.link_force.numpy()[0, 0], -F, atol=1e-12 * (1 + np.abs(F).max()))
        d.qacc[:] = warm
        mujoco.mj_Euler(m, d)
    np.testing.assert_allclose(d.qpos, d_ref.qpos, atol=1e-6)
    np.testing.assert_allclose(d.qvel, d_ref.qvel, atol=1e-6)
    st.contact_wrenches()
    # impulse over a 'step' of 3 substeps at the rest state: restart, then two additions → 3·h·F
    for k in range(3):
        st.link_wrenches(wp.array(d.xipos[None], dtype=st.V), h=m.opt.timestep, accumulate=True, first_substep=k == 0)
    np.testing.assert_allclose(st.link_impulse_force.numpy()[0, 1], 3 * m.opt.timestep * st.link_force.numpy()[0, 1],
                               rtol=1e-14)
    n = int(st.n_con.numpy()[0])
    assert n == 4
    fz = st.con_force_world.numpy()[0, :n, 2].sum()
    assert fz == pytest.approx(1.0 * 9.81, rel=5e-3)
