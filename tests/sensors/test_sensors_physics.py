"""Sensors on situations with known answers (docs/semantics.md §F3/§F4): a payload hanging still from a wrist F/T
site, a free-falling IMU, a box resting on the floor (accelerometer, touch), the contact impulse of
a landing box. Poses are generic: rotated, off-origin bodies and sites."""

import os
import tempfile
import warnings

import numpy as np
import polyphys
import pytest
from polyphys import morphs
from polyphys.errors import PolyphysWarning
from polyphys.materials import Rigid
from polyphys.plugins.rigid.options import RigidOptions

G = 9.81


def qmul(a, b):
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def qmat(q):
    w, x, y, z = np.asarray(q) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def axis_angle(axis, deg):
    a = np.asarray(axis, float) / np.linalg.norm(axis)
    h = np.deg2rad(deg) / 2
    return np.r_[np.cos(h), np.sin(h) * a]


def _mjcf_scene(xml, precision="64", substeps=2, dt=0.01, n_envs=0, **opts):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.xml")
        with open(path, "w") as fh:
            fh.write(xml)
        scene = polyphys.Scene(sim=polyphys.SimOptions(dt=dt, substeps=substeps, precision=precision,
                                                       gravity=(0, 0, -G)), rigid=RigidOptions(**opts))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PolyphysWarning)
            ent = scene.add_entity(morphs.MJCF(file=path), Rigid())
            scene.build(n_envs=n_envs)
    return scene, ent


def test_hanging_payload_force_torque_reads_its_weight_in_site_axes():
    """A payload (0.73 kg) hangs still from a hinge at the wrist of a welded, rotated arm, its CoM
    straight below the hinge; the F/T site on the payload (rotated, off the hinge) reads the force
    the wrist exerts on it, (0, 0, m·g) (world) in site axes, and the torque of that force about the
    site point, to 1e-9 relative: the state is an exact equilibrium (qacc = 0 up to round-off)."""
    qb = axis_angle((0.3, -0.5, 0.8), 37.0)             # arm orientation
    qp = axis_angle((0.2, 0.9, -0.4), 23.0)             # payload frame relative to the arm
    qs = axis_angle((-0.6, 0.1, 0.7), 51.0)             # site frame relative to the payload
    rb, rp = qmat(qb), qmat(qp)
    axis_local = rb.T @ np.array([1.0, 0.0, 0.0])       # hinge axis: horizontal in the world
    r_total = rb @ rp
    com_local = r_total.T @ np.array([0.0, 0.0, -0.3])  # payload CoM 0.3 m straight below the hinge
    site_pos = np.array([0.012, -0.021, 0.017])
    f = lambda v: " ".join(f"{x:.17g}" for x in v)  # noqa: E731
    xml = f"""<mujoco><worldbody>
      <body name="arm" pos="0.4 -0.3 1.5" quat="{f(qb)}">
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
        <body name="payload" pos="0.3 0.02 -0.01" quat="{f(qp)}">
          <joint name="wrist" type="hinge" axis="{f(axis_local)}"/>
          <inertial pos="{f(com_local)}" mass="0.73" diaginertia="0.004 0.005 0.006"/>
          <site name="ft" pos="{f(site_pos)}" quat="{f(qs)}"/>
        </body>
      </body></worldbody>
      <sensor><force name="f" site="ft"/><torque name="t" site="ft"/></sensor></mujoco>"""
    scene, ent = _mjcf_scene(xml)
    scene.step()
    r_site = r_total @ qmat(qs)
    weight = np.array([0.0, 0.0, 0.73 * G])
    np.testing.assert_allclose(ent.sensors["f"].read().value, r_site.T @ weight, rtol=0, atol=1e-9 * 0.73 * G)
    com_w = np.array([0.0, 0.0, -0.3])                   # relative to the hinge anchor
    site_w = r_total @ site_pos
    torque = np.cross(com_w - site_w, weight)             # the wrist's force acts through the CoM line
    np.testing.assert_allclose(ent.sensors["t"].read().value, r_site.T @ torque, rtol=0, atol=1e-9 * 0.73 * G * 0.3)
    # still hanging: the reading is the same a second later
    for _ in range(100):
        scene.step()
    np.testing.assert_allclose(ent.sensors["f"].read().value, r_site.T @ weight, rtol=0, atol=1e-9 * 0.73 * G)


@pytest.mark.parametrize("precision", ["64", "32"])
def test_free_falling_imu_reads_zero_specific_force(precision):
    """A spinning free body in free fall: an IMU at its CoM reads a − g = 0 (and the gyro the body
    rates); a non-spinning body's IMU off the CoM reads 0 too. float64: round-off of g (1e-12·g);
    float32: 1e-5·g."""
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=2, precision=precision))
    spin = scene.add_entity(morphs.Box(size=(0.2, 0.3, 0.4), pos=(0.3, -0.2, 5.0), euler=(10, 20, 30)), Rigid(rho=500))
    calm = scene.add_entity(morphs.Box(size=(0.1, 0.2, 0.3), pos=(-0.3, 0.4, 5.0), euler=(-20, 5, 40)), Rigid(rho=700))
    a = scene.add_sensor("imu", spin, link=spin.links[0], outputs=("acc", "gyro"))
    b = scene.add_sensor("imu", calm, link=calm.links[0], offset_pos=(0.04, -0.07, 0.11), offset_quat=(0.9, 0.2, -0.3, 0.1))
    scene.build()
    spin.set_dofs_velocity([0.5, -0.3, 0.2, 2.0, -1.0, 3.0])
    for _ in range(20):
        scene.step()
    tol = 1e-12 * G if precision == "64" else 1e-5 * G
    assert np.abs(a.read()["acc"]).max() < tol
    assert np.abs(b.read()["acc"]).max() < tol
    assert np.linalg.norm(a.read()["gyro"]) > 1.0          # it spins (body rates: not zero)


def test_box_at_rest_reads_plus_g_and_touch_reads_its_weight():
    """A 0.3 × 0.2 × 0.1 m box (6 kg) rests on the floor, yawed 35° and off the origin: the
    accelerometer at a rotated, off-centre site reads R_siteᵀ·(0, 0, +g) and a touch zone covering
    its bottom reads m·g. After 2 s the soft contact (time constant 0.02 s, critically damped) has
    settled to the solver's tolerance; measured residual ~1e-10 relative, bound 1e-7."""
    q = axis_angle((0, 0, 1), 35.0)
    qs = axis_angle((0.4, -0.2, 0.9), 60.0)
    f = lambda v: " ".join(f"{x:.17g}" for x in v)  # noqa: E731
    xml = f"""<mujoco><option timestep="0.005"/><worldbody><geom type="plane" size="5 5 0.1"/>
      <body name="box" pos="0.7 -0.4 0.0505" quat="{f(q)}"><freejoint/>
        <geom type="box" size="0.15 0.1 0.05" mass="6"/>
        <site name="imu" pos="0.05 -0.03 0.02" quat="{f(qs)}"/>
        <site name="pad" pos="0 0 -0.05" type="box" size="0.16 0.11 0.01"/>
      </body></worldbody>
      <sensor><accelerometer name="acc" site="imu"/><touch name="touch" site="pad"/></sensor></mujoco>"""
    scene, ent = _mjcf_scene(xml, dt=0.01, substeps=2)
    for _ in range(200):
        scene.step()
    r_site = qmat(q) @ qmat(qs)
    np.testing.assert_allclose(ent.sensors["acc"].read().value, r_site.T @ [0, 0, G], rtol=0, atol=1e-7 * G)
    assert ent.sensors["touch"].read().value[0] == pytest.approx(6 * G, rel=1e-7)
    # a touch zone away from the contacts (on the top face) reads nothing
    # (the rays from the bottom contacts point down, away from the box, and miss it)


def test_touch_zone_and_adhesive_rule():
    """Touch counts only contacts whose ray meets the zone: a zone on the box's top face reads 0,
    one covering half the bottom (x > 0) reads the weight on that half (m·g/2 for a centred box)."""
    xml = """<mujoco><option timestep="0.005"/><worldbody><geom type="plane" size="5 5 0.1"/>
      <body name="box" pos="-0.2 0.3 0.0505"><freejoint/><geom type="box" size="0.15 0.1 0.05" mass="6"/>
        <site name="top" pos="0 0 0.05" type="box" size="0.16 0.11 0.01"/>
        <site name="half" pos="0.08 0 -0.05" type="box" size="0.08 0.11 0.01"/>
      </body></worldbody>
      <sensor><touch name="top" site="top"/><touch name="half" site="half"/></sensor></mujoco>"""
    scene, ent = _mjcf_scene(xml)
    for _ in range(200):
        scene.step()
    assert ent.sensors["top"].read().value[0] == 0.0
    assert ent.sensors["half"].read().value[0] == pytest.approx(3 * G, rel=1e-6)


@pytest.mark.parametrize("integrator", ["approximate_implicitfast", "Euler"])
def test_contact_force_impulse_of_a_landing_box(integrator):
    """A tilted box (8 kg) dropped onto the floor, 4 substeps a step: each step's contact impulse
    Σ h·f (contact_force sensor, world) equals m·Δv_CoM − h·m·g·substeps, through the fall, the
    impact and the rest (round-off: 1e-12 N·s on impulses up to ~3 N·s); the in_contact flag and
    the force reading follow the landing."""
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=4, precision="64"),
                           rigid=RigidOptions(integrator=integrator))
    box = scene.add_entity(morphs.Box(size=(0.2, 0.2, 0.2), pos=(0.3, -0.1, 0.25), euler=(10, 5, 20)), Rigid())
    scene.add_entity(morphs.Plane(), Rigid())
    cf = scene.add_sensor("contact_force", box, link=box.links[0], outputs=("force", "impulse", "angular_impulse"))
    ct = scene.add_sensor("contact", box)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build()
    m, h = 8.0, 0.01 / 4
    worst, landed = 0.0, None
    for k in range(60):
        v0 = box.get_vel().copy()
        scene.step()
        v1 = box.get_vel()
        imp = cf.read()["impulse"]
        worst = max(worst, np.abs(imp - (m * (v1 - v0) - h * m * np.array([0, 0, -G]) * 4)).max())
        if landed is None and ct.read().value[0]:
            landed = k
    assert worst < 1e-12
    assert landed is not None and 5 < landed < 30
    assert cf.read()["force"][2] == pytest.approx(m * G, rel=1e-3)      # resting at the end
