"""The particle region sensor through the particle views: PBD (ParticleView carriers are its
particles) and MPM (ParticleStateView: its particles, not the grid nodes the coupler sees). The
reading is a query of the state after the step (query_at = t), compared with NumPy on the same
particles."""

import warnings

import numpy as np
import polyphys
import pytest
from polyphys import morphs
from polyphys.errors import PolyphysWarning


def _expected(pos, vel, lo, hi):
    inside = np.all((pos >= lo) & (pos <= hi), axis=-1)
    out = []
    for e in range(pos.shape[0]):
        k = inside[e]
        out.append(np.r_[pos[e, k].mean(0), vel[e, k].mean(0), k.sum()] if k.any() else
                   np.r_[[np.nan] * 6, 0.0])
    return np.asarray(out)


def _check(scene, ent, sensor, steps, lo, hi, rtol):
    for _ in range(steps):
        scene.step()
    r = sensor.read()
    exp = _expected(ent.get_particles_pos(), ent.get_particles_vel(), np.asarray(lo), np.asarray(hi))
    np.testing.assert_allclose(r.value, exp, rtol=rtol, atol=rtol)
    np.testing.assert_allclose(r.query_at, scene.get_time())
    assert np.all(np.isnan(r.solved_at))
    return r


def test_region_on_pbd_particles():
    """A falling block of PBD particles; the region is the lower half of the block's start: the
    count changes as the block falls through it (float32: mean agrees to 1e-5 relative)."""
    from polyphys.plugins.pbd import PBDOptions

    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=2), pbd=PBDOptions())
    ent = scene.add_entity(morphs.Box(size=(0.2, 0.3, 0.2), pos=(0.1, -0.2, 1.0)),
                           polyphys.materials.PBD.Particle(particle_size=0.04))
    lo, hi = (-0.5, -0.5, 0.7), (0.5, 0.5, 0.95)
    s = scene.add_sensor("particle_region", ent, lo=lo, hi=hi)
    scene.build(n_envs=2)
    n0 = int(_check(scene, ent, s, 1, lo, hi, 1e-5).value[0, 6])
    n1 = int(_check(scene, ent, s, 15, lo, hi, 1e-5).value[0, 6])
    assert 0 < n0 < n1                   # more particles enter the region as the block falls
    empty = _check(scene, ent, s, 60, lo, hi, 1e-5)
    assert empty.value[0, 6] == 0 and np.all(np.isnan(empty.value[0, :6]))


def test_region_on_mpm_particles_not_grid_nodes():
    from polyphys.plugins.mpm import MPMOptions

    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=2e-3, substeps=5),
                           mpm=MPMOptions(lower_bound=(0, 0, 0), upper_bound=(0.5, 0.5, 0.5), grid_density=32.0))
    ent = scene.add_entity(morphs.Box(size=(0.1, 0.1, 0.1), pos=(0.25, 0.25, 0.3)),
                           polyphys.materials.MPM.Elastic(), name="jelly")
    lo, hi = (0.2, 0.2, 0.2), (0.3, 0.3, 0.3)
    s = scene.add_sensor("particle_region", ent, lo=lo, hi=hi, outputs=("count", "vel"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=0)
    for _ in range(20):
        scene.step()
    pos, vel = ent.get_particles_pos()[None], ent.get_particles_vel()[None]
    exp = _expected(pos, vel, np.asarray(lo), np.asarray(hi))[0]
    r = s.read()
    assert r["count"][0] == exp[6] and 0 < exp[6] < pos.shape[1]        # part of the jelly is inside
    np.testing.assert_allclose(r["vel"], exp[3:6], rtol=1e-5, atol=1e-6)
    assert r["vel"][2] < -0.01                    # falling


def test_region_bad_box():
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01))
    ent = scene.add_entity(morphs.Box(size=(0.2, 0.2, 0.2), pos=(0, 0, 1.0)), polyphys.materials.PBD.Particle())
    with pytest.raises(polyphys.OptionError, match=r"lo <= hi"):
        scene.add_sensor("particle_region", ent, lo=(0, 0, 1), hi=(1, 1, 0))
