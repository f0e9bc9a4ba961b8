"""Legacy coupler (docs/semantics.md §C1) with the third-party particle plugin and a kinematic rigid side.

Runs where the polyphys-ballistic distribution is installed (`tox -e thirdparty`): the coupler names
no particular solver, so a third party's ParticleView couples unchanged.
"""

import numpy as np
import polyphys
import pytest
from polyphys import SimOptions, morphs

ballistic = pytest.importorskip("polyphys_ballistic")


def _scene(mu, e, box_vel=None, particle_pos=(0.0, 0.0, 1.099), particle_vel=(0.7, -0.2, -1.5),
           gravity=(0.0, 0.0, 0.0), euler=None, substeps=1, n_envs=0, softness=0.002):
    from polyphys_ballistic.options import BallisticOptions

    sc = polyphys.Scene(sim=SimOptions(dt=0.01, substeps=substeps, gravity=gravity),
                        ballistic=BallisticOptions(particle_size=0.01, ground_height=-10.0))
    box = sc.add_entity(morphs.Box(size=(1.0, 1.0, 0.2), pos=(0, 0, 1.0), euler=euler),
                        material=polyphys.materials.Kinematic(coup_friction=mu, coup_restitution=e,
                                                              coup_softness=softness))
    part = sc.add_entity(morphs.Box(size=(0.01, 0.01, 0.01), pos=particle_pos),
                         material=ballistic.materials.Ballistic() if hasattr(ballistic, "materials")
                         else polyphys.materials.Ballistic())
    sc.build(n_envs=n_envs)
    if box_vel is not None:
        box.set_dofs_velocity(box_vel)
    part.set_vel(np.tile(particle_vel, (part.get_vel().shape[-2], 1)) if n_envs == 0 else
                 np.tile(particle_vel, (n_envs, part.get_vel().shape[-2], 1)))
    return sc, box, part


@pytest.mark.parametrize("e", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("mu", [0.0, 0.3, 2.0])
def test_spec_c1_response_at_influence_one(mu, e):
    """A particle inside the box (d < 0, weight 1) approaching the top face (normal +z)."""
    sc, box, part = _scene(mu, e)
    assert [c.name for c in sc.couplers] == ["legacy"]      # attached by default: views match
    v = np.array([0.7, -0.2, -1.5])
    sc.step()
    v_new = part.get_vel()[0]
    vn, vt = v[2], v[:2]
    vt_len = np.linalg.norm(vt)
    want_t = vt * max(0.0, vt_len + mu * vn) / vt_len
    np.testing.assert_allclose(v_new[2], -e * vn, rtol=1e-6, atol=1e-6)        # float32 arithmetic
    np.testing.assert_allclose(v_new[:2], want_t, rtol=1e-6, atol=1e-6)


def test_relative_velocity_of_a_moving_rigid_body():
    """The response acts on the velocity relative to the rigid point velocity v + ω × r."""
    sc, box, part = _scene(0.0, 1.0, box_vel=[0.0, 0.0, 2.0, 0.0, 0.0, 0.0])
    sc.step()
    # relative normal velocity -1.5 - 2.0 = -3.5 -> +3.5: absolute 2.0 + 3.5
    np.testing.assert_allclose(part.get_vel()[0], [0.7, -0.2, 5.5], rtol=1e-6)


def test_outgoing_and_far_particles_are_untouched():
    sc, box, part = _scene(0.5, 0.5, particle_vel=(0.3, 0.0, 1.0))            # leaving: v_n > 0
    sc.step()
    np.testing.assert_allclose(part.get_vel()[0], [0.3, 0.0, 1.0])
    sc, box, part = _scene(0.5, 0.5, particle_pos=(0, 0, 1.5))                # 0.4 m above: w ≈ 0
    sc.step()
    np.testing.assert_allclose(part.get_vel()[0], [0.7, -0.2, -1.5])


def test_kinematic_side_couples_one_way_and_readback_is_the_momentum_change():
    sc, box, part = _scene(0.3, 0.5)
    m = part.solver.mass.numpy()[0, 0]
    v0 = np.array([0.7, -0.2, -1.5])
    sc.step()
    v1 = part.get_vel()[0]
    np.testing.assert_allclose(box.get_pos(), [0, 0, 1.0])                      # took no reaction
    w = sc.couplers[0].get_coupling_wrench()
    np.testing.assert_allclose(w["impulse"][0], -m * (v1 - v0), rtol=1e-5)     # Σ h·f = -Δ(mv)
    np.testing.assert_allclose(w["force"][0], -m * (v1 - v0) / 0.01, rtol=1e-5)
    r = np.array([0.0, 0.0, 1.099]) - np.array([0, 0, 1.0])
    np.testing.assert_allclose(w["torque"][0], np.cross(r, w["force"][0]), rtol=1e-5, atol=1e-9)
    assert w["solved_at"] == pytest.approx(0.0) and w["window_end"] == pytest.approx(0.01)


@pytest.mark.parametrize("mu, slides", [(0.0, True), (2.0, False)])
def test_incline_friction_zero_slides_high_holds(mu, slides):
    """A particle resting on a 30° incline under gravity: μ = 0 slides down with g·sin30°; μ = 2 >
    tan 30° holds it (the tangential speed it gains each substep is removed)."""
    theta = np.radians(30.0)
    n = np.array([np.sin(theta), 0.0, np.cos(theta)])        # top normal of a box rotated 30° about y
    p0 = np.array([0.0, 0.0, 1.0]) + n * 0.099
    sc, box, part = _scene(mu, 0.0, particle_pos=tuple(p0), particle_vel=(0, 0, 0),
                           gravity=(0, 0, -9.81), euler=(0, 30, 0), substeps=4)
    for _ in range(20):
        sc.step()
    disp = part.get_pos()[0] - p0
    along = disp - n * np.dot(disp, n)
    t = 0.2
    if slides:
        # each substep removes only the normal part of g·h: the motion along the slope is exact
        # symplectic Euler of g·sinθ, within a few % of the continuous g·sinθ·t²/2
        assert np.linalg.norm(along) == pytest.approx(9.81 * np.sin(theta) * t * t / 2, rel=0.05)
    else:
        assert np.linalg.norm(along) < 1e-3
    assert abs(np.dot(disp, n)) < 2e-3                        # neither sinks in nor flies off


def test_per_env_reset_of_a_coupled_scene(tmp_path):
    sc, box, part = _scene(0.3, 0.5, n_envs=2)
    box.set_dofs_velocity([0, 0, 1.0, 0, 0, 0], envs_idx=[1])
    for _ in range(5):
        sc.step()
    pb, vb = part.get_pos()[1].copy(), part.get_vel()[1].copy()
    sc.reset(envs_idx=[0])
    np.testing.assert_array_equal(part.get_pos()[1], pb)
    np.testing.assert_array_equal(part.get_vel()[1], vb)
    np.testing.assert_array_equal(box.get_pos()[0], [0, 0, 1.0])
    path = sc.save_checkpoint(tmp_path / "c.npz")
    for _ in range(3):
        sc.step()
    ref = part.get_vel()
    sc.load_checkpoint(path)
    for _ in range(3):
        sc.step()
    np.testing.assert_array_equal(part.get_vel(), ref)
