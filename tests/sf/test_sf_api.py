"""SF solver: bad input, getters/setters, per-env emitters, the iteration-cap report."""

import numpy as np
import polyphys
import pytest
from polyphys import morphs
from polyphys.errors import OptionError, PolyphysWarning, SimulationError
from polyphys.plugins.sf.options import SFOptions

from .sf_helpers import LO, Emitter, Smoke, center, make_scene, random_solenoidal


@pytest.mark.parametrize("res", [0, -3, (8, 0, 8), (8, 8, -1)])
def test_grid_resolution_must_be_positive(res):
    with pytest.raises(OptionError, match=r"SFOptions.res .*>= 1 cell"):
        SFOptions(res=res)


@pytest.mark.parametrize("kw, match", [({"res": (8, 8)}, "3 integers"), ({"res": (8.0, 8, 8)}, "3 integers"),
                                       ({"dx": 0.0}, "SFOptions.dx"), ({"open_faces": ("+w",)}, "unknown face"),
                                       ({"advection": "upwind"}, "SFOptions.advection"),
                                       ({"max_iterations": 0}, "max_iterations"), ({"tolerance": -1.0}, "tolerance"),
                                       ({"pressure_solver": "sor"}, "pressure_solver"), ({"early_exit": 1}, "early_exit")])
def test_bad_options_name_field_and_value(kw, match):
    with pytest.raises(OptionError, match=match):
        SFOptions(**kw)


def test_emitter_outside_the_domain_is_refused():
    # the domain is LO + (12, 10, 14)·0.05 = x in [0.13, 0.73]; a sphere at x = 0.7 with r = 0.05 pokes out
    with pytest.raises(OptionError, match=r"SF entity 'src'.*outside the SF domain"):
        make_scene(entities=[(morphs.Sphere(radius=0.05, pos=(0.7, 0.0, 0.3)), Emitter(), {"name": "src"})])
    # a rotated box whose corner leaves the domain although its centre and half size along x fit
    with pytest.raises(OptionError, match="outside the SF domain"):
        make_scene(entities=[(morphs.Box(size=(0.5, 0.1, 0.1), pos=(0.43, 0.0, 0.4), euler=(0, 0, 60)),
                              Emitter(), {})])
    sc, (e,) = make_scene(n_envs=2, entities=[(morphs.Sphere(radius=0.05, pos=center((12, 10, 14), 0.05)),
                                               Emitter(), {})])
    sc.build(n_envs=2)
    with pytest.raises(OptionError, match="outside the SF domain"):
        e.set_pos([0.5, 0.0, 0.72], envs_idx=[1])


def test_wrong_morph_and_material():
    with pytest.raises(OptionError, match="use a Sphere or a Box"):
        make_scene(entities=[(morphs.Cylinder(radius=0.05, height=0.1, pos=center((12, 10, 14), 0.05)), Emitter(), {})])
    with pytest.raises(OptionError, match="Emitter.rate"):
        Emitter(rate=-1.0)
    with pytest.raises(OptionError, match="Smoke.velocity"):
        Smoke(velocity=(1.0, 2.0))


def test_field_getters_shapes_and_smoke_region():
    res, dx = (12, 10, 14), 0.05
    c = center(res, dx, (0.3, 0.6, 0.4))
    sc, (blob, src) = make_scene(n_envs=3, entities=[
        (morphs.Box(size=(0.2, 0.15, 0.1), pos=c, euler=(0, 0, 30)), Smoke(density=2.0, temperature=3.0,
                                                                           velocity=(0.1, -0.2, 0.3)), {}),
        (morphs.Sphere(radius=0.06, pos=center(res, dx, (0.7, 0.5, 0.5))), Emitter(rate=0.0), {})])
    sc.build(n_envs=3)
    s = sc.solver("sf")
    assert s.get_density().shape == (3, *res) and s.get_velocity().shape == (3, *res, 3)
    f = s.get_face_velocity()
    assert f["u"].shape == (3, 13, 10, 14) and f["v"].shape == (3, 12, 11, 14) and f["w"].shape == (3, 12, 10, 15)
    # the smoke fills exactly the cells whose centre lies in the rotated box
    P = s.face_positions()["cell"] - np.asarray(c)
    th = np.radians(30.0)
    local = np.stack([np.cos(th) * P[..., 0] + np.sin(th) * P[..., 1], -np.sin(th) * P[..., 0] + np.cos(th) * P[..., 1],
                      P[..., 2]], -1)
    inside = np.all(np.abs(local) <= np.array([0.1, 0.075, 0.05]), -1)
    d = s.get_density()
    assert inside.sum() > 10
    np.testing.assert_array_equal(d[1], np.where(inside, 2.0, 0.0))
    np.testing.assert_array_equal(s.get_temperature()[2], np.where(inside, 3.0, 0.0))
    assert blob.get_density_slice("z").shape == (3, 12, 10)
    assert src.get_speed_slice("x", at=0.4).shape == (3, 10, 14)
    with pytest.raises(OptionError, match="outside the grid"):
        blob.get_density_slice("x", at=2.0)
    sc0, _ = make_scene()
    sc0.build()
    assert sc0.solver("sf").get_density().shape == (12, 10, 14)


def test_emitter_adds_rate_h_per_cell_inside_and_setters_honour_envs_idx():
    res, dx, dt = (12, 10, 14), 0.05, 0.02
    c = center(res, dx, (0.4, 0.5, 0.3))
    sc, (src,) = make_scene(n_envs=3, res=res, dx=dx, dt=dt, gravity=(0, 0, 0), entities=[
        (morphs.Box(size=(0.16, 0.12, 0.1), pos=c, euler=(10, 0, 35)), Emitter(rate=2.0, heat=4.0), {})])
    sc.build(n_envs=3)
    s = sc.solver("sf")
    src.set_rate([0.5, 3.0], envs_idx=[0, 2])
    src.set_heat(1.5, envs_idx=[1])
    np.testing.assert_allclose(src.get_rate(), [0.5, 2.0, 3.0])
    np.testing.assert_allclose(src.get_heat(), [4.0, 1.5, 4.0])
    sc.step()
    P = s.face_positions()["cell"] - np.asarray(c)
    R = np.asarray(_rot(src.morph.orientation))
    inside = np.all(np.abs(P @ R) <= np.array([0.08, 0.06, 0.05]), -1)
    d, t = s.get_density(), s.get_temperature()
    # still gas, no buoyancy: one substep adds exactly rate·h in every cell inside, nothing elsewhere
    for e, (rate, heat) in enumerate([(0.5, 4.0), (2.0, 1.5), (3.0, 4.0)]):
        np.testing.assert_allclose(d[e], np.where(inside, rate * dt, 0.0), rtol=1e-6)
        np.testing.assert_allclose(t[e], np.where(inside, heat * dt, 0.0), rtol=1e-6)
    with pytest.raises(OptionError, match="rate must be >= 0"):
        src.set_rate(-1.0)
    with pytest.raises(OptionError, match="velocity=None"):
        src.set_velocity([0, 0, 1.0])
    src.set_pos(np.array(c) + [0.05, 0.0, 0.0], envs_idx=[2])
    np.testing.assert_allclose(src.get_pos()[2], np.array(c) + [0.05, 0, 0], atol=1e-6)
    np.testing.assert_allclose(src.get_pos()[0], c, atol=1e-6)


def _rot(q):
    w, x, y, z = q
    return [[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]]


def test_jet_sets_its_velocity_per_env():
    res, dx = (12, 10, 14), 0.05
    c = center(res, dx, (0.5, 0.5, 0.3))
    sc, (jet,) = make_scene(n_envs=2, gravity=(0, 0, 0), open_faces=("+z",), entities=[
        (morphs.Sphere(radius=0.08, pos=c), Emitter(rate=1.0, velocity=(0.0, 0.0, 1.0)), {})])
    sc.build(n_envs=2)
    jet.set_velocity([0.0, 0.0, 0.0], envs_idx=[1])
    for _ in range(5):
        sc.step()
    w = sc.solver("sf").get_velocity()[..., 2]
    assert w[0].max() > 0.3 and np.abs(w[1]).max() < 1e-6


def test_iteration_cap_is_reported_per_env_never_silent():
    rng = np.random.default_rng(3)
    sc, _ = make_scene(n_envs=3, max_iterations=1, tolerance=1e-7, pressure_solver="pcg", gravity=(0, 0, 0))
    sc.build(n_envs=3)
    s = sc.solver("sf")
    f = random_solenoidal(s, rng, scale=1.0)
    s.set_face_velocity(**f, envs_idx=[1])            # envs 0 and 2 stay at rest: they converge at once
    with pytest.warns(PolyphysWarning, match=r"max_iterations=1 .* in 1 env\(s\) \(env 1:"):
        sc.step()
    st = s.get_solver_stats()
    np.testing.assert_array_equal(st["converged"], [True, False, True])
    np.testing.assert_array_equal(st["iterations"], [0, 1, 0])
    assert st["residual"][1] > 1e-7
    sc.step()                                          # the same env again: counted (the warning is not repeated)
    np.testing.assert_array_equal(s.get_solver_stats()["cap_hits"], [0, 2, 0])
    sc2, _ = make_scene(n_envs=2, max_iterations=1, tolerance=1e-7, on_cap="raise", gravity=(0, 0, 0))
    sc2.build(n_envs=2)
    sc2.solver("sf").set_face_velocity(**random_solenoidal(sc2.solver("sf"), rng), envs_idx=[0])
    with pytest.raises(SimulationError, match=r"env 0:"):
        sc2.step()


@pytest.mark.parametrize("solver", ["mgpcg", "pcg"])
def test_early_exit_gives_the_same_bits_as_the_full_cap(solver):
    temperature = np.random.default_rng(5).uniform(0, 1, size=(2, 12, 10, 14))
    states = []
    for early in (True, False):
        sc, _ = make_scene(n_envs=2, early_exit=early, pressure_solver=solver, max_iterations=200, tolerance=1e-3,
                           vorticity_confinement=0.3)
        sc.build(n_envs=2)
        s = sc.solver("sf")
        s.set_face_velocity(**random_solenoidal(s, np.random.default_rng(7)))
        s.set_temperature(temperature)
        for _ in range(3):
            sc.step()
        st = s.get_solver_stats()
        assert st["converged"].all() and (st["iterations"] > 0).all()
        states.append(s.get_state())
    for k in states[0]:
        np.testing.assert_array_equal(states[0][k], states[1][k], err_msg=k)


def test_material_namespace():
    assert polyphys.materials.SF.Emitter is Emitter and polyphys.materials.SF.Smoke is Smoke
    assert SFOptions(lower_bound=LO, res=(4, 5, 6), dx=0.5).upper_bound == pytest.approx((2.13, 2.23, 3.05))
