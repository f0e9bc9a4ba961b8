"""Collision detection wired into the rigid solver: raw contacts of a box on a plane, budgets through
the scene, graph capture, reset and checkpoints with collision on (plugins/rigid/solver.py)."""

import warnings

import numpy as np
import polyphys
import pytest
from polyphys import morphs
from polyphys.errors import BudgetExceededError, OptionError, PolyphysWarning
from polyphys.plugins.rigid import RigidOptions
from polyphys.plugins.rigid.materials import Rigid

HALF = 0.1   # box half edge (m)


def _scene(n_envs=2, gravity=(0, 0, 0), precision="64", capture=True, threads=None, **opts):
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, gravity=gravity, precision=precision,
                                                   graph_capture=capture, cpu_threads=threads),
                           rigid=RigidOptions(**opts))
    box = scene.add_entity(morphs.Box(size=(2 * HALF,) * 3, pos=(0, 0, 0.5)), Rigid(), name="box")
    plane = scene.add_entity(morphs.Plane(), Rigid(), name="ground")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=n_envs)
    return scene, box, plane


def _check_box_plane(c, env, z):
    """Contacts of env ``env`` for the axis-aligned box centred at height z over the plane z = 0:
    none while above, else the 4 bottom corners, depth HALF − z (exact in float64 up to rounding
    of z itself), normal from geom B to geom A. The pipeline puts the lower geom type first
    (plane before box): A = the plane (geom 1, link 1), B = the box (geom 0, link 0), so the
    normal is −z (box → plane)."""
    k = int(c["count"][env])
    if z > HALF:
        assert k == 0 and not c["valid"][env].any()
        return
    d = HALF - z
    assert k == 4 and c["valid"][env].sum() == 4
    v = c["valid"][env]
    assert np.all(c["geom_a"][env][v] == 1) and np.all(c["geom_b"][env][v] == 0)
    assert np.all(c["link_a"][env][v] == 1) and np.all(c["link_b"][env][v] == 0)
    np.testing.assert_allclose(c["normal"][env][v], np.tile([0.0, 0.0, -1.0], (4, 1)), atol=1e-12)
    np.testing.assert_allclose(c["penetration"][env][v], d, rtol=0, atol=1e-12)
    # the corners (x, y) = (±HALF, ±HALF), midway between the surfaces: z = −d/2
    p = c["position"][env][v]
    assert sorted(map(tuple, np.round(p[:, :2] / HALF).astype(int))) == [(-1, -1), (-1, 1), (1, -1),
                                                                        (1, 1)]
    np.testing.assert_allclose(p[:, :2], np.sign(p[:, :2]) * HALF, atol=1e-12)
    np.testing.assert_allclose(p[:, 2], -d / 2, atol=1e-12)


def test_box_on_plane_raw_contacts_placed():
    scene, box, _ = _scene()
    solver = scene.solver("rigid")
    assert solver.collision is not None and solver.collision.broadphase == "all_vs_all"
    scene.step()
    c = solver.get_raw_contacts()
    assert c["geom_a"].shape == (2, solver.collision.max_contacts)
    assert c["position"].shape == (2, solver.collision.max_contacts, 3)
    assert not c["valid"].any()
    box.set_pos(np.array([[0, 0, 0.09], [0, 0, 0.5]]))
    scene.step()              # no gravity, zero velocity: the pose is the same before and after
    c = solver.get_raw_contacts()
    _check_box_plane(c, 0, 0.09)
    _check_box_plane(c, 1, 0.5)
    one = solver.get_raw_contacts(envs_idx=[1])
    assert one["valid"].shape[0] == 1 and not one["valid"].any()
    # entity view: the same contacts (they all involve both entities)
    assert box.get_raw_contacts()["count"].tolist() == [4, 0]


def test_box_dropped_onto_plane_contacts_follow_its_height():
    """Falling through (no contact forces yet): each step's contacts belong to the substep-start
    configuration (MuJoCo's mj_step convention), i.e. the height read before the step."""
    scene, box, _ = _scene(n_envs=0, gravity=(0, 0, -9.81))
    box.set_pos(np.array([0.0, 0.0, 0.16]))
    solver = scene.solver("rigid")
    seen = 0
    for _ in range(20):
        z = float(box.get_pos()[2])
        scene.step()
        c = solver.get_raw_contacts()
        _check_box_plane({k: v[None] for k, v in c.items()}, 0, z)
        seen += int(c["count"])
    assert seen >= 4 * 5          # it did penetrate for several steps


def test_budget_overflow_raises_after_step_naming_env():
    scene, box, _ = _scene(max_contacts=2)
    box.set_pos(np.array([[0, 0, 0.5], [0, 0, 0.09]]))
    with pytest.raises(BudgetExceededError, match=r"max_contacts exceeded in env 1: 4 needed, budget 2"):
        scene.step()


def test_budget_overflow_warn_policy_drops_excess():
    scene, box, _ = _scene(max_contacts=2, collision_overflow="warn")
    box.set_pos(np.array([[0, 0, 0.5], [0, 0, 0.09]]))
    with pytest.warns(PolyphysWarning, match="env 1"):
        scene.step()
    assert scene.solver("rigid").get_raw_contacts()["count"].tolist() == [0, 2]


def _drive(scene, box, steps, rng):
    out = []
    for _ in range(steps):
        scene.step()
        c = scene.solver("rigid").get_raw_contacts()
        out.append((box.get_qpos().copy(), c["count"].copy(), c["position"].copy(),
                    c["normal"].copy(), c["penetration"].copy()))
    return out


def _start(box, rng, n):
    box.set_pos(np.column_stack([rng.uniform(-0.2, 0.2, n), rng.uniform(-0.2, 0.2, n),
                                 rng.uniform(0.12, 0.2, n)]))
    box.set_dofs_velocity(rng.normal(size=(n, 6)))


def _same(a, b):
    for x, y in zip(a, b):
        for u, v in zip(x, y):
            np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("broadphase", ["all_vs_all", "sweep_and_prune"])
def test_captured_equals_uncaptured_with_collision_two_partitions(broadphase):
    runs = []
    for capture in (True, False):
        scene, box, _ = _scene(n_envs=4, gravity=(0, 0, -9.81), precision="32", capture=capture,
                               threads=2, broadphase=broadphase)
        assert len(scene.solver("rigid").layout.partitions) == 2
        assert scene.solver("rigid").collision.broadphase == broadphase
        _start(box, np.random.default_rng(3), 4)
        runs.append(_drive(scene, box, 12, None))
    assert sum(int(r[1].sum()) for r in runs[0]) > 0          # contacts did occur
    _same(runs[0], runs[1])


def test_reset_and_checkpoint_bit_exact_with_collision(tmp_path):
    scene, box, _ = _scene(n_envs=2, gravity=(0, 0, -9.81))
    _start(box, np.random.default_rng(5), 2)
    first = _drive(scene, box, 6, None)
    scene.save_checkpoint(tmp_path / "c.npz")
    tail = _drive(scene, box, 6, None)
    scene.load_checkpoint(tmp_path / "c.npz")
    _same(tail, _drive(scene, box, 6, None))
    assert sum(int(r[1].sum()) for r in first + tail) > 0
    scene.reset()
    _start(box, np.random.default_rng(5), 2)
    _same(first + tail, _drive(scene, box, 12, None))


def test_no_pipeline_without_pairs_or_when_disabled():
    for opts in ({"enable_collision": False}, {"disable_constraint": True}):
        scene, _, _ = _scene(**opts)
        s = scene.solver("rigid")
        assert s.collision is None
        c = s.get_raw_contacts()
        assert c["valid"].shape == (2, 0) and c["count"].tolist() == [0, 0]
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01), rigid=RigidOptions())
    scene.add_entity(morphs.Box(size=(0.2, 0.2, 0.2), pos=(0, 0, 1)), Rigid())
    with warnings.catch_warnings():
        warnings.simplefilter("error", PolyphysWarning)      # one body: no contact warning
        scene.build(n_envs=0)
    assert scene.solver("rigid").collision is None


@pytest.mark.parametrize("field,value", [("collision_overflow", "drop"), ("broadphase", "SAP"),
                                         ("max_contacts", 0), ("max_contacts_per_pair", 9)])
def test_collision_options_rejected(field, value):
    with pytest.raises(OptionError, match=field):
        RigidOptions(**{field: value})


def test_mujoco_compatible_sums_margins():
    """MuJoCo's margin rule (summed per pair, contacts in the gap reported without rows) only in
    MuJoCo-compatible mode."""
    scene, _, _ = _scene(mujoco_compatible=True)
    c = scene.solver("rigid").collision
    assert c.margin_sum and c.gap_outside
    scene, _, _ = _scene()
    c = scene.solver("rigid").collision
    assert not c.margin_sum and not c.gap_outside


ARM_XML = """<mujoco><option gravity="0 0 0"/><worldbody>
<geom name="floor" type="plane" size="5 5 0.1"/>
<body name="box" pos="0.3 0.2 0.08" euler="0 0 30"><freejoint/>
  <geom name="b" type="box" size="0.1 0.1 0.1" mass="1"/></body>
<body name="arm" pos="-1 0 1"><joint type="hinge" axis="0 1 0"/>
  <geom name="u" type="capsule" fromto="0 0 0 0 0 -0.4" size="0.05" mass="1"/>
  <body pos="0 0 -0.4"><joint type="hinge" axis="0 1 0"/>
    <geom name="m" type="capsule" fromto="0 0 0 0.2 0 0" size="0.05" mass="1"/>
    <body pos="0.2 0 0"><joint type="hinge" axis="0 1 0"/>
      <geom name="l" type="capsule" fromto="0 0 0 -0.2 0 0.2" size="0.05" mass="1"/></body></body></body>
</worldbody></mujoco>"""


def _mjcf_scene(path, **opts):
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, precision="64", gravity=(0, 0, 0)),
                           rigid=RigidOptions.mujoco(**opts))
    scene.add_entity(morphs.MJCF(file=str(path)), Rigid())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=0)
    return scene, scene.solver("rigid")


def test_mjcf_floor_box_matches_mujoco_and_neutral_rule(tmp_path):
    """One MJCF entity: the floor–box contact (free box resting on the floor at qpos0) is kept and
    matches MuJoCo's (4 points, dist = −penetration, MuJoCo's normal geom1→geom2 = −ours); the
    arm's links u and l (same tree, not adjacent) overlap at qpos0 and are removed unless
    enable_neutral_collision."""
    mujoco = pytest.importorskip("mujoco")
    path = tmp_path / "arm.xml"
    path.write_text(ARM_XML)
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    ref = sorted((c.geom1, c.geom2, c.dist, tuple(c.frame[:3])) for c in d.contact[:d.ncon])
    scene, s = _mjcf_scene(path)
    assert s.collision.neutral_excluded.tolist() == [[2, 4]]            # u–l
    scene.step()
    c = s.get_raw_contacts()
    v = c["valid"]
    got = sorted((a, b, -p, tuple(-n)) for a, b, p, n in zip(c["geom_a"][v], c["geom_b"][v],
                                                            c["penetration"][v], c["normal"][v]))
    mj_floor_box = [r for r in ref if {r[0], r[1]} == {0, 1}]
    assert len(got) == len(mj_floor_box) == 4
    for (a, b, dist, n), (ra, rb, rdist, rn) in zip(got, mj_floor_box):
        assert (a, b) == (ra, rb)
        assert dist == pytest.approx(rdist, abs=1e-12)
        np.testing.assert_allclose(n, rn, atol=1e-12)
    scene2, s2 = _mjcf_scene(path, enable_neutral_collision=True)
    assert s2.collision.neutral_excluded.size == 0
    scene2.step()
    c2 = s2.get_raw_contacts()
    pairs = {tuple(sorted(p)) for p in zip(c2["geom_a"][c2["valid"]], c2["geom_b"][c2["valid"]])}
    assert pairs == {(0, 1), (2, 4)}


def test_neutral_rule_same_pairs_in_both_precisions():
    """dm_control's walker stands on its floor at qpos0 (feet touching, not overlapping; the walker
    hangs from the world by slide/hinge joints, so floor and feet are one tree). The neutral-overlap
    rule must keep the foot–floor pairs in float32 as in float64: the float32 rounding of the poses
    (~1e-7 m) made them overlap and removed them before the rule took a precision-scaled depth
    tolerance (plugins/rigid/collision.py, neutral_overlap_tolerance)."""
    dm_control = pytest.importorskip("dm_control")
    import os

    xml = os.path.join(os.path.dirname(dm_control.__file__), "suite", "walker.xml")
    got = {}
    for prec in ("32", "64"):
        scene = polyphys.Scene(sim=polyphys.SimOptions(precision=prec))
        scene.add_entity(morphs.MJCF(file=xml), Rigid())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PolyphysWarning)
            scene.build(n_envs=0)
        got[prec] = scene.solver("rigid").collision.neutral_excluded.tolist()
    assert got["32"] == got["64"] == []


def test_mass_off_tree_pattern_stays_zero(tmp_path):
    """factorization.mass_dense writes only M's tree pattern (each dof with its ancestors, both triangles;
    docs/rigid.md): every entry off it (two free boxes, the branching ZOO tree: siblings a/d, the box and
    ZOO blocks) must be exactly zero after build, a step with contacts, reset and checkpoint load — no other
    stage writes d.qM."""
    pytest.importorskip("mujoco")
    from rigid_mjref import ZOO, desc_from_mjmodel, no_constraint_model

    def build():
        scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, gravity=(0, 0, -9.81), precision="64"),
                               rigid=RigidOptions())
        scene.add_entity(morphs.Box(size=(0.2, 0.3, 0.16), pos=(0.3, -0.2, 0.07), euler=(4, -3, 25)), Rigid())
        scene.add_entity(morphs.Box(size=(0.12, 0.1, 0.2), pos=(-0.4, 0.5, 0.09), euler=(0, 0, -40)), Rigid())
        zoo = desc_from_mjmodel(no_constraint_model(ZOO))
        scene.add_entity(morphs.Description(description=zoo), Rigid())
        scene.add_entity(morphs.Plane(), Rigid())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PolyphysWarning)
            scene.build(n_envs=2)
        return scene

    scene = build()
    s = scene.solver("rigid")
    nv = s.n_dofs
    on = np.zeros((nv, nv), bool)
    on[s.hm.m_rows, s.hm.m_cols] = True
    on |= on.T
    assert (~on).sum() > nv                      # there are off-pattern entries (the test can fail)

    def dense_m(solver):
        # d.qM per env, or (model._qm_scratch, the convex solve writing it) one block per View: every View's block
        from polyphys.plugins.rigid.model import scratch_block

        if scratch_block(solver.data.qM) is solver.data.qM:
            return solver.data.qM.numpy()
        return np.concatenate([scratch_block(v.d.qM).numpy() for v in solver.views.values()])

    def off_zero(when):
        M = dense_m(s)
        assert np.all(M[:, ~on] == 0), when
        return M

    off_zero("build")
    for _ in range(3):
        scene.step()
    M = off_zero("step")
    assert np.all(np.isfinite(M[:, on])) and np.any(M[:, on] != 0)
    assert int(s.data.nefc.numpy().max()) > 0     # the constraint solve ran (contacts)
    path = scene.save_checkpoint(tmp_path / "m.npz")
    scene.reset()
    off_zero("reset")
    scene.step()
    off_zero("step after reset")
    scene.load_checkpoint(path)
    off_zero("checkpoint load")
    other = build()
    other.load_checkpoint(path)
    other.step()
    M = dense_m(other.solver("rigid"))
    assert np.all(M[:, ~on] == 0)


def test_more_partitions_than_threads_bit_identical_with_contacts():
    """cpu_partitions_per_thread: 2 threads taking 8 partitions of 4 envs in turn (core/simulator.py
    ``_run_parts``) give the states and contacts of one thread stepping all 32 envs, bit for bit."""
    runs = []
    for threads, per in ((1, None), (2, 4)):
        scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, gravity=(0, 0, -9.81), precision="64",
                                                       cpu_threads=threads, cpu_partitions_per_thread=per),
                               rigid=RigidOptions())
        box = scene.add_entity(morphs.Box(size=(2 * HALF,) * 3, pos=(0, 0, 0.5)), Rigid(), name="box")
        scene.add_entity(morphs.Plane(), Rigid(), name="ground")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PolyphysWarning)
            scene.build(n_envs=32)
        assert len(scene.layout.partitions) == (1 if threads == 1 else 8) and scene.layout.threads == threads
        _start(box, np.random.default_rng(11), 32)
        runs.append(_drive(scene, box, 10, None))
        if threads == 2:
            assert len({int(c) for r in runs[-1] for c in r[1]}) > 1     # envs differ in their contacts
    assert sum(int(r[1].sum()) for r in runs[0]) > 0
    _same(runs[0], runs[1])
