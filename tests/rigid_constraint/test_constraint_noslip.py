"""Noslip (docs/semantics.md §R8): the PGS pass over DOF frictionloss rows and pyramidal contact edge pairs after
the main solve, against MuJoCo 4's mj_solNoSlip (MuJoCo-compatible parameters, pyramidal cone,
convex contact resolution, float64), and its physics: it stops the creep of soft friction."""

import warnings

import numpy as np
import pytest
import warp as wp
from polyphys.errors import OptionError

mujoco = pytest.importorskip("mujoco")

import mjscenes as S  # noqa: E402

G = 9.81


@pytest.mark.parametrize("condim,impratio", [(3, 1.0), (6, 1.0)])
def test_noslip_matches_mujoco_at_frozen_state(condim, impratio):
    """Articulated frozen scene (free box and ball on a plane, arm with two frictionloss dofs at its
    limits, equalities; pyramidal cone): MuJoCo's main Newton solve (tolerance 1e-12) followed by
    5 noslip sweeps, against this module's Newton solve on MuJoCo's own M, J, aref, R followed by
    constraint_noslip. The main solves agree to ~1e-12 (test_constraint_mujoco); the sweeps are
    the same deterministic Gauss–Seidel sequence, so efc_force must agree to 1e-9 of the largest
    force and qacc to 1e-9 (measured: 8e-14 / 1.5e-13 N, qacc 2e-10). The pass moves the pyramid
    edge forces by 1.1 N here (the frictionloss rows stay saturated). The improvement scale
    is MuJoCo's 1/(meaninertia·nv) here (Option.noslip_scale, set at build by model.set_const)."""
    m, d = S.make(cone="pyramidal", impratio=impratio, condim=condim, condim_ball=6)
    m2, d2 = S.make(cone="pyramidal", impratio=impratio, condim=condim, condim_ball=6)   # no noslip
    m.opt.noslip_iterations = 5
    m.opt.noslip_tolerance = 1e-6
    mujoco.mj_forward(m, d)
    assert d.ncon >= 3 and np.any(d.efc_type == 6) and np.any(d.efc_type == 1)
    st = S.solve_with_mj_inputs(m, d, solver="Newton", tolerance=1e-12, iterations=100, ls_tolerance=1e-10,
                                noslip_iterations=5, noslip_tolerance=1e-6,
                                noslip_scale=1.0 / (m.stat.meaninertia * m.nv))
    n = d.nefc
    f = st.efc_force.numpy()[0, :n]
    scale = 1 + np.abs(d.efc_force).max()
    # the pass changes the forces by far more than the tolerance (so this compares the pass) ...
    assert np.abs(d.efc_force - d2.efc_force).max() > 1e-3 * scale
    # ... and both engines change them alike
    np.testing.assert_allclose(f, d.efc_force, atol=1e-9 * scale)
    np.testing.assert_allclose(st.qacc.numpy()[0], d.qacc, atol=1e-9 * (1 + np.abs(d.qacc).max()))
    qfrc = d.efc_J.reshape(n, m.nv).T @ f
    np.testing.assert_allclose(st.qfrc_constraint.numpy()[0], qfrc, atol=1e-9 * scale)
    assert 1 <= st.noslip_niter.numpy()[0] <= 5
    # frictionloss rows stay within ±frictionloss, pyramid edges non-negative
    fl = d.efc_frictionloss
    assert np.all(np.abs(f[d.efc_type == 1]) <= fl[d.efc_type == 1] + 1e-12)
    assert np.all(f[d.efc_type == 6] >= 0)


def test_noslip_nan_filled_outputs_are_rewritten():
    """qacc and qfrc_constraint NaN-filled before the pass: it writes every entry (from efc_force,
    which it starts from), and a second pass from its own result changes nothing beyond 1e-9."""
    import mujoco as mj
    m, d = S.make(cone="pyramidal", impratio=1.0, condim=3)
    st = S.solve_with_mj_inputs(m, d, tolerance=1e-12, iterations=100, noslip_iterations=5)
    q1, f1 = st.qacc.numpy().copy(), st.efc_force.numpy().copy()
    st.qacc.fill_(np.nan)
    st.qfrc_constraint.fill_(np.nan)
    M = np.zeros((m.nv, m.nv))
    mj.mj_fullM(m, d, M)
    st.noslip(wp.array(M[None], dtype=wp.float64), wp.array(d.qacc_smooth[None], dtype=wp.float64))
    assert np.all(np.isfinite(st.qacc.numpy())) and np.all(np.isfinite(st.qfrc_constraint.numpy()))
    np.testing.assert_allclose(st.qacc.numpy(), q1, atol=1e-9 * (1 + np.abs(q1).max()))
    np.testing.assert_allclose(st.efc_force.numpy(), f1, atol=1e-9 * (1 + np.abs(f1).max()))


XML = """<mujoco>
  <option timestep="0.005" integrator="Euler" cone="pyramidal" gravity="{gx} 0 {gz}"
          noslip_iterations="{ns}" noslip_tolerance="{tol}"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" friction="1 0.005 0.0001"/>
    <body name="body" pos="0 0 0.0995">
      <freejoint/>
      {geom}
    </body>
  </worldbody>
</mujoco>"""
BOX = '<geom type="box" size="0.1 0.1 0.1" mass="8" friction="1 0.005 0.0001"/>'
SPHERE = '<geom type="sphere" size="0.1" mass="8"/>'


def _run_both(tmp_path, geom, ns, tol=1e-6, deg=20.0, steps=200):
    """The same MJCF file stepped by mj_step and by polyphys in MuJoCo-compatible mode (Euler,
    pyramidal, convex, impratio 1, main tolerance 1e-8), gravity tilted by deg about y (an incline
    of deg degrees). Returns (qpos per step polyphys, MuJoCo; final qvel polyphys, MuJoCo; scene)."""
    import polyphys
    from polyphys import morphs
    from polyphys.errors import PolyphysWarning
    from polyphys.plugins.rigid import RigidOptions
    from polyphys.plugins.rigid.materials import Rigid
    th = np.deg2rad(deg)
    gx, gz = G * np.sin(th), -G * np.cos(th)
    path = tmp_path / f"body{ns}.xml"
    path.write_text(XML.format(gx=gx, gz=gz, ns=ns, tol=tol, geom=geom))
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    q_mj = []
    for _ in range(steps):
        mujoco.mj_step(m, d)
        q_mj.append(d.qpos.copy())
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.005, gravity=(gx, 0, gz), precision="64"),
                           rigid=RigidOptions.mujoco(integrator="Euler", noslip_iterations=ns, noslip_tolerance=tol))
    e = scene.add_entity(morphs.MJCF(file=str(path)), Rigid(), name="mj")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=0)
    q = []
    for _ in range(steps):
        scene.step()
        q.append(np.asarray(e.get_qpos()).copy())
    return np.array(q), np.array(q_mj), np.asarray(e.get_dofs_velocity()), d.qvel.copy(), scene


def test_noslip_rolling_sphere_matches_mujoco(tmp_path):
    """A sphere (one contact, so both engines sweep the same rows in the same order) rolls down a
    10° incline, noslip_iterations 10, noslip_tolerance 1e-6, 200 steps (1 s): the trajectory equals
    mj_step's to 1e-9 m (same rows, main solves converged alike, the same deterministic sweeps;
    measured 2.5e-15), and it rolls: x(1 s) within 2 % of (5/14)·g·sinθ·t², the rolling solid
    sphere (measured 0.4 %: the soft normal contact)."""
    q, q_mj, v, v_mj, scene = _run_both(tmp_path, SPHERE, 10, deg=10.0)
    np.testing.assert_allclose(q, q_mj, rtol=0, atol=1e-9)
    np.testing.assert_allclose(v, v_mj, rtol=0, atol=1e-9)
    assert 1 <= int(scene.solver("rigid").data.noslip_niter.numpy()[0]) <= 10
    assert q[-1, 0] == pytest.approx(5 / 14 * G * np.sin(np.deg2rad(10)), rel=0.02)


def test_noslip_box_on_incline_stops_creep_like_mujoco(tmp_path):
    """A box (μ = 1) dropped 0.5 mm into a 20° incline. Without noslip the soft pyramidal friction
    lets it creep down at a steady ~1.9 mm/s (the velocity at which −B·v of the edge rows carries
    m·g·sinθ); noslip solves the friction rows without the regularization, so the creep decays
    (a_t = −B·v_t): final speed < 1 % of the creep without it (measured 4e-12 vs 1.9e-3 m/s),
    travel < 20 % (measured 4 %). Against mj_step: without noslip to 1e-8 m (measured 5e-11). With
    it, the four corner contacts come out of the two collision pipelines in different orders and
    Gauss–Seidel is order dependent until converged (4 contacts × 2 edge pairs on 6 dofs: A is
    singular; qacc is unique only at convergence) — so noslip_tolerance is 1e-15 (100 sweeps cap)
    and the bound 1e-6 m over 1 s (measured 3.2e-8; the first step, where both start from the
    same state, agrees to 8e-13)."""
    q, q_mj, v, v_mj, _ = _run_both(tmp_path, BOX, 100, tol=1e-15)
    np.testing.assert_allclose(q[0], q_mj[0], rtol=0, atol=1e-10)
    np.testing.assert_allclose(q, q_mj, rtol=0, atol=1e-6)
    q0, q0_mj, v0, _, _ = _run_both(tmp_path, BOX, 0)
    np.testing.assert_allclose(q0, q0_mj, rtol=0, atol=1e-8)
    assert v0[0] > 1e-3                       # creeps without noslip
    assert abs(v[0]) < 0.01 * v0[0]           # noslip stops it
    assert abs(v_mj[0]) < 0.01 * v0[0]
    assert q[-1, 0] < 0.2 * q0[-1, 0]


def test_noslip_options(tmp_path):
    import polyphys
    from polyphys.plugins.rigid import RigidOptions
    o = RigidOptions(noslip_iterations=4, noslip_tolerance=1e-7)
    assert (o.noslip_iterations, o.noslip_tolerance, o.effective_resolution()) == (4, 1e-7, "convex")
    assert RigidOptions().noslip_tolerance == 1e-6
    with pytest.raises(OptionError, match="noslip_iterations=4 with friction_cone='elliptic'"):
        RigidOptions(noslip_iterations=4, friction_cone="elliptic")
    with pytest.raises(OptionError, match="noslip_iterations=4 with friction_cone='elliptic'"):
        RigidOptions(noslip_iterations=4, friction_cone="elliptic", contact_resolution="convex")
    with pytest.raises(OptionError, match="noslip_iterations"):
        RigidOptions(noslip_iterations=-1)
    with pytest.raises(OptionError, match="noslip_tolerance"):
        RigidOptions(noslip_tolerance=0.0)
    # the MJCF importer reads both from <option> (MuJoCo's defaults 0 and 1e-6 when absent)
    path = tmp_path / "o.xml"
    path.write_text(XML.format(gx=0, gz=-G, ns=7, tol=2e-7, geom=BOX))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        desc = polyphys.describe(str(path))
    assert desc.options["noslip_iterations"] == 7 and desc.options["noslip_tolerance"] == 2e-7
    path.write_text("<mujoco><worldbody/></mujoco>")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        desc = polyphys.describe(str(path))
    assert desc.options["noslip_iterations"] == 0 and desc.options["noslip_tolerance"] == 1e-6


@pytest.mark.parametrize("precision", ["32", "64"])
def test_noslip_default_mode_stops_creep(precision):
    """Default (Genesis) mode, approximate_implicitfast, pyramidal: a box (μ = 1) on a 20° incline
    creeps at ~mm/s through its soft friction without noslip and (nearly) stops with 10 noslip
    sweeps: speed after 1 s below 5 % of the creep (float32 and float64)."""
    import polyphys
    from polyphys import morphs
    from polyphys.errors import PolyphysWarning
    from polyphys.plugins.rigid import RigidOptions
    from polyphys.plugins.rigid.materials import Rigid
    th = np.deg2rad(20)
    v = {}
    for ns in (0, 10):
        scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.005, gravity=(G * np.sin(th), 0, -G * np.cos(th)),
                                                       precision=precision),
                               rigid=RigidOptions(noslip_iterations=ns))
        box = scene.add_entity(morphs.Box(size=(0.2,) * 3, pos=(0, 0, 0.099)), Rigid(friction=1.0))
        scene.add_entity(morphs.Plane(), Rigid(friction=1.0))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PolyphysWarning)
            scene.build(n_envs=0)
        for _ in range(200):
            scene.step()
        v[ns] = float(np.asarray(box.get_dofs_velocity())[0])
    assert v[0] > 1e-4
    assert abs(v[10]) < 0.05 * v[0]


PENDULUM = """<mujoco>
  <option timestep="0.005" integrator="Euler" noslip_iterations="{ns}"/>
  <worldbody>
    <body name="a" pos="0 0 1" euler="0 50 0">
      <joint name="h1" type="hinge" axis="0 1 0" frictionloss="3"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.03" mass="1" contype="0" conaffinity="0"/>
      <body name="b" pos="0.4 0 0" euler="0 -80 0">
        <joint name="h2" type="hinge" axis="0 1 0" frictionloss="1.5"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="0.7" contype="0" conaffinity="0"/>
      </body>
    </body>
  </worldbody>
</mujoco>"""


def test_noslip_dry_friction_double_pendulum_matches_mujoco(tmp_path):
    """A double pendulum with joint frictionloss 3 / 1.5 N·m (no contacts; configuration-dependent
    M), 200 steps, MuJoCo-compatible mode, noslip_iterations 0 and 50 (noslip_tolerance 1e-6: the
    sweeps stop on the tolerance, ~6 per step, with the improvement scale 1/(meaninertia·nv) taken
    at qpos0 as MuJoCo does). Both trajectories equal mj_step's to 1e-9 rad (measured 8e-16 /
    6e-16). Physics: the soft dry friction lets the lower joint creep 0.058 rad in 1 s while its
    load stays inside ±frictionloss; noslip clamps the unregularized problem instead and the joint
    does not move (< 1e-9 rad)."""
    import polyphys
    from polyphys import morphs
    from polyphys.errors import PolyphysWarning
    from polyphys.plugins.rigid import RigidOptions
    from polyphys.plugins.rigid.materials import Rigid
    moved = {}
    for ns in (0, 50):
        path = tmp_path / f"dp{ns}.xml"
        path.write_text(PENDULUM.format(ns=ns))
        m = mujoco.MjModel.from_xml_path(str(path))
        d = mujoco.MjData(m)
        q_mj = []
        for _ in range(200):
            mujoco.mj_step(m, d)
            q_mj.append(d.qpos.copy())
        scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.005, gravity=(0, 0, -G), precision="64"),
                               rigid=RigidOptions.mujoco(integrator="Euler", noslip_iterations=ns))
        e = scene.add_entity(morphs.MJCF(file=str(path)), Rigid())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PolyphysWarning)
            scene.build(n_envs=0)
        q = []
        for _ in range(200):
            scene.step()
            q.append(np.asarray(e.get_qpos()).copy())
        q = np.array(q)
        np.testing.assert_allclose(q, np.array(q_mj), rtol=0, atol=1e-9)
        moved[ns] = abs(q[-1, 1] - q[0, 1])
        if ns:
            rs = scene.solver("rigid")
            assert 1 <= int(rs.data.noslip_niter.numpy()[0]) < 50
            assert rs.model.opt.noslip_scale == pytest.approx(1 / (m.stat.meaninertia * m.nv), rel=1e-12)
    assert moved[0] > 0.01
    assert moved[50] < 1e-9
