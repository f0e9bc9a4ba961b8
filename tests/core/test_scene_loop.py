"""The substep loop order, the fast path, callbacks, per-env reset isolation, time."""

import numpy as np
import polyphys
import pytest
from polyphys import SimOptions, morphs
from polyphys.errors import OptionError, SceneStateError


def _scene(rec, n_envs=2, coupler=None, substeps=2, capture=False, threads=1, both=True, **kw):
    sc = polyphys.Scene(sim=SimOptions(dt=0.01, substeps=substeps, graph_capture=capture,
                                       cpu_threads=threads, **kw), coupler=coupler)
    a = sc.add_entity(morphs.Box(), material=rec.RecA())
    b = sc.add_entity(morphs.Box(), material=rec.RecB()) if both else None
    sc.build(n_envs=n_envs)
    return sc, a, b


def test_exact_substep_order_with_coupler(rec):
    sc, a, b = _scene(rec, coupler="rec_coupler")
    rec.CALLS.clear()
    sc.step()
    expected = []
    for f in range(2):
        expected += [("rec_coupler", "preprocess", f, 0), ("rec_a", "pre", f, 0), ("rec_b", "pre", f, 0),
                     ("rec_coupler", "couple", f, 0), ("rec_a", "post", f, 0), ("rec_b", "post", f, 0)]
    expected += [("rec_a", "end_step", 0), ("rec_b", "end_step", 0)]
    assert rec.CALLS == expected
    assert [c.name for c in sc.couplers] == ["rec_coupler"]


def test_fast_path_when_one_solver_and_no_coupler(rec):
    sc, a, _ = _scene(rec, both=False)
    rec.CALLS.clear()
    sc.step()
    assert rec.CALLS == [("rec_a", "fast", 0, 0), ("rec_a", "fast", 1, 0), ("rec_a", "end_step", 0)]


def test_two_solvers_without_coupler_use_both_stages(rec):
    sc, a, b = _scene(rec, coupler=False, substeps=1)
    rec.CALLS.clear()
    sc.step()
    assert rec.CALLS == [("rec_a", "pre", 0, 0), ("rec_b", "pre", 0, 0), ("rec_a", "post", 0, 0),
                         ("rec_b", "post", 0, 0), ("rec_a", "end_step", 0), ("rec_b", "end_step", 0)]


def test_pre_step_callback_true_skips_step(rec):
    sc, a, _ = _scene(rec, both=False)
    skip = {"on": True}
    sc.add_pre_step_callback(lambda s: skip["on"])
    x0 = a.get_x()
    assert sc.step() is False
    np.testing.assert_array_equal(a.get_x(), x0)
    np.testing.assert_array_equal(sc.get_step_count(), [0, 0])
    skip["on"] = False
    assert sc.step() is True
    np.testing.assert_array_equal(sc.get_time(), [0.01, 0.01])


def test_reset_envs_isolated_and_bit_exact(rec):
    sc, a, b = _scene(rec, coupler="rec_coupler")
    a.set_v(np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.25]]))
    for _ in range(10):
        sc.step()
    x1_before = a.get_x()[1].copy()
    sc.reset(envs_idx=[0])
    np.testing.assert_array_equal(a.get_x()[1], x1_before)   # env 1 untouched
    np.testing.assert_array_equal(sc.get_step_count(), [0, 10])
    a.set_v(np.array([1.0, 2.0, 3.0]), envs_idx=[0])
    traj = []
    for _ in range(50):
        sc.step()
        traj.append(a.get_x()[0].copy())
    fresh, fa, _ = _scene(rec, coupler="rec_coupler")
    fa.set_v(np.array([[1.0, 2.0, 3.0], [0, 0, 0]]))
    for i in range(50):
        fresh.step()
        np.testing.assert_array_equal(fa.get_x()[0], traj[i])


def test_unbatched_scene_has_no_batch_axis(rec):
    sc, a, _ = _scene(rec, n_envs=0, both=False)
    assert a.get_x().shape == (3,)
    assert isinstance(sc.get_time(), float)
    with pytest.raises(OptionError, match="n_envs=0"):
        sc.reset(envs_idx=[0])


@pytest.mark.parametrize("bad, match", [([2], r"\[2\]"), ([0, 0], "duplicates"), ([-1], r"\[-1\]"),
                                        (["a"], "integer"), ([[0]], "1D")])
def test_bad_envs_idx(rec, bad, match):
    sc, a, _ = _scene(rec, both=False)
    with pytest.raises(OptionError, match=match):
        sc.reset(envs_idx=bad)


def test_lifecycle_errors(rec):
    sc = polyphys.Scene(sim=SimOptions(graph_capture=False))
    with pytest.raises(SceneStateError, match="before build"):
        sc.step()
    with pytest.raises(SceneStateError, match="no entity"):
        sc.build()
    sc.add_entity(morphs.Box(), material=rec.RecA())
    sc.build(n_envs=1)
    with pytest.raises(SceneStateError, match="after build"):
        sc.add_entity(morphs.Box(), material=rec.RecA())
    with pytest.raises(SceneStateError, match="twice"):
        sc.build()


def test_most_derived_material_wins(rec):
    sc = polyphys.Scene()
    e = sc.add_entity(morphs.Box(), material=rec.RecBSub())
    assert e.solver.name == "rec_a"
    e2 = sc.add_entity(morphs.Box(), material=rec.RecB())
    assert e2.solver.name == "rec_b"


def test_unknown_material_and_solver_options(rec):
    import attrs

    @attrs.define
    class Stray(polyphys.materials.Material):
        pass

    sc = polyphys.Scene()
    with pytest.raises(OptionError, match="not owned by any registered solver.*known materials"):
        sc.add_entity(morphs.Box(), material=Stray())
    with pytest.raises(OptionError, match="unknown solver 'nosuch'.*known solvers"):
        polyphys.Scene(nosuch=object())


def test_sim_options_validation():
    with pytest.raises(OptionError, match=r"SimOptions.dt = -1.*> 0"):
        SimOptions(dt=-1)
    with pytest.raises(OptionError, match=r"SimOptions.substeps = 0"):
        SimOptions(substeps=0)
    with pytest.raises(OptionError, match=r"precision = '16'.*\['32', '64'\]"):
        SimOptions(precision="16")
    with pytest.raises(OptionError, match="device"):
        SimOptions(device="tpu")
    with pytest.raises(OptionError, match="nan_policy"):
        SimOptions(nan_policy="ignore")
    assert SimOptions(precision=64).precision == "64"


def test_morph_validation():
    with pytest.raises(OptionError, match="not both"):
        morphs.Box(quat=(1, 0, 0, 0), euler=(0, 0, 90))
    with pytest.raises(OptionError, match="must be > 0"):
        morphs.Box(size=(1, -1, 1))
    with pytest.raises(OptionError, match="expected 3 numbers"):
        morphs.Box(pos=(1, 2))
    with pytest.raises(OptionError, match="no such file"):
        morphs.MJCF(file="/nonexistent/robot.xml")
    q = morphs.Box(euler=(0, 0, 90)).orientation
    np.testing.assert_allclose(q, [np.cos(np.pi / 4), 0, 0, np.sin(np.pi / 4)], atol=1e-15)


def test_nan_in_one_env_resets_only_that_env(rec):
    sc, a, _ = _scene(rec, n_envs=3, both=False)
    host = a.solver.v.numpy()
    host[:] = [[1, 1, 1], [np.nan, 0, 0], [2, 2, 2]]
    a.solver.v.assign(host)
    x_before = a.get_x()
    with pytest.warns(UserWarning, match=r"env\(s\) \[1\]"):
        sc.step()
    x = a.get_x()
    assert np.all(np.isfinite(x))
    np.testing.assert_array_equal(x[1], np.ones(3))          # env 1 back at its initial state
    assert np.all(x[[0, 2]] != x_before[[0, 2]])              # the others advanced normally
    np.testing.assert_array_equal(sc.get_step_count(), [1, 0, 1])
    assert [e for _, e in sc.nan_envs] == [1]


def test_nan_policy_raise(rec):
    sc, a, _ = _scene(rec, n_envs=2, both=False, nan_policy="raise")
    host = a.solver.v.numpy()
    host[0, 0] = np.nan
    a.solver.v.assign(host)
    with pytest.raises(polyphys.SimulationError, match=r"env\(s\) \[0\]"):
        sc.step()


def test_device_without_support_or_hardware_is_refused(rec):
    sc = polyphys.Scene(sim=SimOptions(device="cuda"))
    sc.add_entity(morphs.Box(), material=rec.RecA())
    with pytest.raises(polyphys.CapabilityError, match="'rec_a'.*devices=cuda"):
        sc.build()


def test_forward_refreshes_without_advancing_time():
    sc = polyphys.Scene()
    box = sc.add_entity(morphs.Box(pos=(0, 0, 1)), material=polyphys.materials.Kinematic())
    sc.build(n_envs=2)
    q = box.solver.qpos.numpy()
    q[1, 2] = 5.0                              # write the raw state, bypassing the setters
    box.solver.qpos.assign(q)
    assert box.get_pos()[1, 2] == pytest.approx(1.0)     # links not refreshed yet
    sc.forward()
    assert box.get_pos()[1, 2] == pytest.approx(5.0)
    np.testing.assert_array_equal(sc.get_step_count(), [0, 0])
