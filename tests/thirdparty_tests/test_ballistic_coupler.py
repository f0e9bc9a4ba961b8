"""The third-party coupler of polyphys-ballistic (``ballistic_drag``, docs/writing-a-plugin.md "A
coupler"): its two kernels against NumPy (outputs NaN-filled first), the exact exponential drag
toward a moving kinematic body, momentum conservation with a free rigid body, and the capability
check. Skips when the distribution is not installed."""

import math

import numpy as np
import pytest
from ballistic_helpers import require_ballistic

ballistic = require_ballistic()

import polyphys  # noqa: E402
import warp as wp  # noqa: E402
from polyphys import morphs  # noqa: E402
from polyphys.errors import CapabilityError, OptionError  # noqa: E402
from polyphys_ballistic import kernels_drag as K  # noqa: E402
from polyphys_ballistic.options import BallisticOptions, DragOptions  # noqa: E402

NO_GRAVITY = (0.0, 0.0, 0.0)


def test_registered_and_validated():
    rec = polyphys.registry().get("coupler", "ballistic_drag")
    assert rec.provider.distribution == "polyphys-ballistic"
    assert rec.spec.couples == ("RigidView", "ParticleView") and not rec.spec.default
    with pytest.raises(OptionError, match=r"DragOptions.time_constant = -1: must be a finite number > 0"):
        DragOptions(time_constant=-1)
    with pytest.raises(OptionError, match=r"did you mean 'radius'\?"):
        DragOptions(raduis=0.1)


def _numpy_drag(radius, decay, inv_h, com, vel, ang, pos, pvel, mass, active):
    """The documented semantics (kernels_drag.py) for one env, in float64."""
    n_links, n = com.shape[0], pos.shape[0]
    force, torque, out = np.zeros((n_links, 3)), np.zeros((n_links, 3)), pvel.copy()
    for p in range(n):
        d = np.linalg.norm(pos[p] - com, axis=1)
        best, best_d = -1, radius
        for k in range(n_links):
            if d[k] < best_d:
                best, best_d = k, d[k]
        if not active[p] or best < 0:
            continue
        u = vel[best] + np.cross(ang[best], pos[p] - com[best])
        dv = (u - pvel[p]) * (1 - decay)
        out[p] = pvel[p] + dv
        fp = -mass[p] * dv * inv_h
        force[best] += fp
        torque[best] += np.cross(pos[p] - com[best], fp)
    return force, torque, out


def test_kernels_match_numpy_on_random_states():
    rng = np.random.default_rng(3)
    n_envs, n_links, n = 3, 4, 50
    com = rng.uniform(-1, 1, (n_envs, n_links, 3))
    vel, ang = rng.normal(size=(n_envs, n_links, 3)), rng.normal(size=(n_envs, n_links, 3))
    pos = rng.uniform(-1.3, 1.3, (n_envs, n, 3))          # some particles out of every link's reach
    pvel, mass = rng.normal(size=(n_envs, n, 3)), rng.uniform(0.1, 2.0, (n_envs, n))
    active = (rng.uniform(size=(n_envs, n)) > 0.2).astype(np.int32)
    radius, decay, inv_h = 0.9, math.exp(-0.002 / 0.05), 500.0
    f32 = lambda a, t=wp.vec3: wp.array(a.astype(np.float32), dtype=t)  # noqa: E731
    args = [f32(com), f32(vel), f32(ang), f32(pos)]
    force = wp.array(np.full((n_envs, n_links, 3), np.nan, np.float32), dtype=wp.vec3)
    torque = wp.array(np.full((n_envs, n_links, 3), np.nan, np.float32), dtype=wp.vec3)
    wp.launch(K.drag_reaction, dim=(n_envs, n_links),
              inputs=[radius, decay, inv_h, *args, f32(pvel), f32(mass, float), wp.array(active, dtype=wp.int32)],
              outputs=[force, torque])
    vout = wp.array(np.full((n_envs, n, 3), np.nan, np.float32), dtype=wp.vec3)
    wp.launch(K.drag_particles, dim=(n_envs, n),
              inputs=[radius, decay, *args, wp.array(active, dtype=wp.int32), f32(pvel)], outputs=[vout])
    dragged = 0
    for e in range(n_envs):
        rf, rt, rv = _numpy_drag(radius, decay, inv_h, com[e], vel[e], ang[e], pos[e].astype(np.float32).astype(float),
                                 pvel[e], mass[e], active[e])
        dragged += int((np.abs(rv - pvel[e]).sum(axis=1) > 0).sum())
        # float32 inputs: relative error ~1e-6 of the largest term (inv_h·m·|Δv| ~ 1e3)
        np.testing.assert_allclose(force.numpy()[e], rf, rtol=1e-5, atol=1e-3)
        np.testing.assert_allclose(torque.numpy()[e], rt, rtol=1e-5, atol=2e-3)
        np.testing.assert_allclose(vout.numpy()[e], rv, rtol=1e-5, atol=1e-5)
    assert 20 < dragged < n_envs * n           # both branches are exercised


def _scene(material, coupler=("ballistic_drag",), tau=0.05, n_envs=2, substeps=4, precision="32", gravity=NO_GRAVITY):
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=substeps, gravity=gravity, precision=precision),
                           coupler=DragOptions(radius=0.5, time_constant=tau) if coupler else False,
                           ballistic=BallisticOptions(particle_size=0.1, ground_height=-100.0))
    body = scene.add_entity(morphs.Box(size=(0.2, 0.3, 0.25), pos=(0.3, -0.2, 1.0), euler=(10, 20, 30)),
                            material, name="body")
    cloud = scene.add_entity(morphs.Box(size=(0.2, 0.2, 0.2), pos=(0.32, -0.18, 1.02)),
                             polyphys.materials.Ballistic(), name="cloud")
    scene.build(n_envs=n_envs)
    return scene, body, cloud


def test_velocity_relaxes_exactly_exponentially_toward_a_moving_kinematic_body():
    """dv/dt = -(v - u)/τ with u the body's constant velocity: v(t) = u + (v0 - u)·exp(-t/τ) at every
    step (the kernel applies the exact decay per substep; float32 error only)."""
    scene, body, cloud = _scene(polyphys.materials.Kinematic())
    u = np.array([[0.4, -0.2, 0.1], [-0.3, 0.5, 0.0]])
    body.set_dofs_velocity(np.concatenate([u, np.zeros((2, 3))], axis=1))
    v0 = np.random.default_rng(1).normal(size=(2, cloud.n_particles, 3))
    cloud.set_vel(v0)
    tau = 0.05
    for step in range(1, 16):
        scene.step()
        expect = u[:, None, :] + (v0 - u[:, None, :]) * math.exp(-0.01 * step / tau)
        np.testing.assert_allclose(cloud.get_vel(), expect, rtol=0, atol=2e-6 * np.abs(v0).max())
    assert np.abs(cloud.get_vel() - u[:, None, :]).max() < 0.1 * np.abs(v0 - u[:, None, :]).max()


def test_a_free_rigid_body_takes_the_reaction_momentum_is_conserved():
    """No gravity, no contact: the only force between the body and the particles is the drag, so
    the total linear momentum stays what it was (float32 error of the two integrators)."""
    scene, body, cloud = _scene(polyphys.materials.Rigid(rho=200.0))
    rng = np.random.default_rng(2)
    cloud.set_vel(rng.normal(size=(2, cloud.n_particles, 3)))
    m_body = 200.0 * 0.2 * 0.3 * 0.25
    m_p = 1000.0 * 0.1**3

    def momentum():
        return m_body * body.get_vel() + m_p * cloud.get_vel().sum(axis=1)

    p0 = momentum()
    scene.step()
    coupler = scene.couplers[0]
    r = coupler.get_reaction()
    assert np.abs(r["force"]).max() > 0.1          # the body is being pushed
    for _ in range(20):
        scene.step()
    np.testing.assert_allclose(momentum(), p0, rtol=0, atol=1e-5 * np.abs(p0).max() + 1e-6)
    assert np.abs(body.get_vel()).max() > 1e-3     # and it moved


def test_float64_scenes_are_refused_naming_the_coupler():
    with pytest.raises(CapabilityError, match=r"plugin 'ballistic_drag' does not support capability 'precisions=64'"):
        _scene(polyphys.materials.Kinematic(), precision="64")


def test_without_the_coupler_the_particles_keep_their_velocity():
    scene, body, cloud = _scene(polyphys.materials.Kinematic(), coupler=None)
    body.set_dofs_velocity(np.broadcast_to([1.0, 0, 0, 0, 0, 0], (2, 6)))
    cloud.set_vel(np.zeros((2, cloud.n_particles, 3)))
    scene.step()
    assert not scene.couplers and np.all(cloud.get_vel() == 0)
