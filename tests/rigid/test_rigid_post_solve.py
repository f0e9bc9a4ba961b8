"""The tail of a constrained substep in one launch (plugins/rigid/integration.py ``post_solve``, kernels/integration.py):
total force → the integration's (M + h·D)⁻¹ solve (+ the gyroscopic re-solve) or the solve's acceleration →
integrate must give bit for bit what the separate launches give (the same functions per env in the same order).
Outputs filled with NaN first; default mode (approximate_implicitfast: the solve's acceleration, a free box in the air
on the implicit midpoint branch) and MuJoCo-compatible implicitfast (the solve from the smooth pass's factor and the
gyroscopic re-solve of standalone free bodies: every dof re-solved, so post_solve skips the (M + h·D) solve; and with
a hinged pendulum added, whose dof the re-solve does not cover)."""

import warnings

import numpy as np
import polyphys
import pytest
import warp as wp
from polyphys import morphs
from polyphys.errors import PolyphysWarning
from polyphys.plugins.rigid import RigidOptions
from polyphys.plugins.rigid import factorization as FZ
from polyphys.plugins.rigid import integration as IN
from polyphys.plugins.rigid.materials import Rigid

OUT = ("qfrc_total", "qacc", "qpos", "qvel", "joint_mid_active", "coupling_force", "coupling_torque", "xfrc_force",
       "xfrc_torque", "qfrc_applied")


# a hinged pendulum next to the boxes: dofs the gyroscopic re-solve does not cover, so post_solve must not skip the
# (M + h·D) solve (it skips it only where the re-solve covers every dof)
PENDULUM = """<mujoco><worldbody><body pos="1.1 -0.9 1.3" euler="10 -20 30"><joint type="hinge" axis="0.3 1 0.2"
  damping="0.05"/><geom type="capsule" fromto="0 0 0 0.25 0.1 -0.3" size="0.04"/></body></worldbody></mujoco>"""


@pytest.mark.parametrize("mode", ["default", "mujoco", "mujoco-mixed"])
def test_post_solve_equals_separate_launches(mode, tmp_path):
    opts = RigidOptions() if mode == "default" else RigidOptions.mujoco(integrator="implicitfast")
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, gravity=(0, 0, -9.81), precision="64", graph_capture=False),
                           rigid=opts)
    boxes = [scene.add_entity(morphs.Box(size=(0.3, 0.2, 0.14), pos=(0.4, -0.3, 0.06), euler=(8, -5, 30)), Rigid()),
             scene.add_entity(morphs.Box(size=(0.16, 0.22, 0.1), pos=(0.43, -0.28, 0.28), euler=(-4, 6, 70)), Rigid()),
             scene.add_entity(morphs.Box(size=(0.1, 0.2, 0.3), pos=(-1.2, 0.7, 1.5), euler=(20, 40, 10)), Rigid())]
    scene.add_entity(morphs.Plane(), Rigid())
    if mode == "mujoco-mixed":
        (tmp_path / "pendulum.xml").write_text(PENDULUM)
        scene.add_entity(morphs.MJCF(file=str(tmp_path / "pendulum.xml")), Rigid())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=3)
    rng = np.random.default_rng(3)
    for b in boxes:
        b.set_dofs_velocity(rng.normal(scale=0.1, size=(3, 6)))
    for _ in range(4):
        scene.step()
    s = scene.solver("rigid")
    assert s.has_constraint and (s._approx == (mode == "default")) and (s.views["all"].has_gyro == (mode != "default"))
    gyro_dofs = s.model.joint_gyro.numpy()[s.model.dof_joint.numpy()] != 0
    assert gyro_dofs.all() == (mode == "mujoco")          # mixed: a dof outside the re-solve
    boxes[2].apply_links_external_force(rng.normal(size=(3, 1, 3)), links_idx_local=[0])    # cleared by clear_ext
    d = s.data
    for part in scene.layout.partitions:      # the substep up to its solve (solver._constrained_substep)
        pv = s.views[part.index]
        s._smooth(pv, s._hd_solve, pv.d.qacc_smooth, dense=True, hd_int=None if s._approx else scene.layout.h)
        s._collide(part, export=True)
        s._constraint_rows(part, exported=True, dense_done=True)
        s._solve(pv, pv.d.qacc_warmstart)
    v = s.views["all"]
    assert int(d.nefc.numpy().min()) > 0
    snap = {k: getattr(d, k).numpy().copy() for k in OUT}

    def run(fn):
        for k in OUT:
            getattr(d, k).assign(snap[k])
        d.qfrc_total.fill_(np.nan)
        d.qacc.fill_(np.nan)
        fn()
        wp.synchronize()
        return {k: getattr(d, k).numpy().copy() for k in OUT}

    def separate():
        IN.total_force(v)
        if s._approx:
            wp.copy(d.qacc, d.qacc_warmstart)
        else:
            FZ.ld_solve(v, d.qfrc_total, d.qacc)
            IN.gyro_resolve(v, d.qfrc_total)
        IN.integrate(v, True, d.qfrc_total)

    ref = run(separate)
    got = run(lambda: IN.post_solve(v, True, solve=not s._approx))
    for k in OUT:
        np.testing.assert_array_equal(got[k], ref[k], err_msg=k)     # NaN where NaN: padding columns beyond nv
    for k in ("qfrc_total", "qacc"):
        assert np.isfinite(ref[k][:, :s.n_dofs]).all(), k
    assert not np.array_equal(ref["qpos"], snap["qpos"])           # it integrated
    if mode == "default":
        assert ref["joint_mid_active"].any()                        # the box in the air: implicit midpoint
