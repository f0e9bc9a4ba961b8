"""Pipeline tests: filtering rules (docs/semantics.md §R4), both broadphases agree, budgets and their errors,
partitions, link → geom poses, bad input."""

import numpy as np
import pytest
import warp as wp
from collision_helpers import geom
from polyphys.description import EntityDescription, Geom, Joint, Link
from polyphys.errors import BudgetExceededError, OptionError, PolyphysWarning
from polyphys.layout import Partition
from polyphys.plugins.rigid import RigidOptions
from polyphys.plugins.rigid.collision import CollisionPipeline, set_poses_host


def _run(pipe, pos, n_envs=1, precision="64", parts=None):
    pipe.build(n_envs, "cpu", precision, partitions=parts)
    G = pipe.n_geoms
    pos = np.broadcast_to(np.asarray(pos, float).reshape(-1, G, 3), (n_envs, G, 3))
    quat = np.zeros((n_envs, G, 4))
    quat[..., 0] = 1
    set_poses_host(pipe, pos, quat)
    for p in parts or (Partition(0, 0, n_envs),):
        pipe.run(p)
    return pipe


def _pairs(pipe, env=0):
    c = pipe.contacts([env])[0]
    return sorted({(int(a), int(b)) for a, b in zip(c["geom_a"], c["geom_b"])})


def _spheres(n, **kw):
    return [geom("sphere", (0.5,), i, **kw) for i in range(n)]


def test_contype_conaffinity_rule():
    g = [geom("sphere", (0.5,), 0, contype=1, conaffinity=1),
         geom("sphere", (0.5,), 1, contype=2, conaffinity=2),
         geom("sphere", (0.5,), 2, contype=1, conaffinity=2)]
    for bp in ("all_vs_all", "sweep_and_prune"):
        pipe = CollisionPipeline(g, [0, 1, 2], [-1] * 3, [True] * 3, RigidOptions(broadphase=bp))
        _run(pipe, np.zeros((3, 3)))
        # (0,1): 1&2 = 0 and 2&1 = 0 -> no; (0,2): 1&1 -> yes; (1,2): 2&2 -> yes
        assert _pairs(pipe) == [(0, 2), (1, 2)], bp
        # with filtering off every pair of different bodies collides
        pipe = CollisionPipeline(g, [0, 1, 2], [-1] * 3, [True] * 3,
                                 RigidOptions(broadphase=bp, collision_filtering=False))
        _run(pipe, np.zeros((3, 3)))
        assert _pairs(pipe) == [(0, 1), (0, 2), (1, 2)]


def test_same_link_fixed_weld_and_adjacent():
    # links: 0 free root, 1 child of 0 without joint (welded), 2 child of 0 with a joint,
    # 3 fixed to the world, 4 fixed to the world, 5 moving child of fixed link 3
    parent = [-1, 0, 0, -1, -1, 3]
    moves = [True, False, True, False, False, True]
    g = [geom("sphere", (0.5,), lk) for lk in (0, 0, 1, 2, 3, 4, 5)]
    g.append(geom("plane", (0, 0, 1), -1))
    for bp in ("all_vs_all", "sweep_and_prune"):
        for adjacent in (False, True):
            pipe = CollisionPipeline(g, [0] * 8, parent, moves,
                                     RigidOptions(broadphase=bp, enable_adjacent_collision=adjacent))
            _run(pipe, np.zeros((8, 3)))
            got = set(_pairs(pipe))
            # same link (0,1) and welded child (0/1 with 2) never; fixed-fixed (4,5) and
            # world plane with fixed links never
            for bad in [(0, 1), (0, 2), (1, 2), (4, 5), (4, 7), (5, 7)]:
                assert tuple(sorted(bad)) not in {tuple(sorted(p)) for p in got}, (bad, got)
            # parent-child moving: link 2 is a child of weld group 0 (geoms 0,1,2)
            adj = {(0, 3), (1, 3), (2, 3)}
            assert adj <= {tuple(sorted(p)) for p in got} if adjacent else not (
                adj & {tuple(sorted(p)) for p in got})
            # a moving child of a world-fixed link collides with it (MuJoCo's world exception)
            assert (4, 6) in {tuple(sorted(p)) for p in got}
            # the plane collides with the moving spheres (plane is geom 7, type 0 first)
            assert (7, 0) in got or (0, 7) in {tuple(sorted(p)) for p in got}


def test_self_collision_and_local_masks():
    g = _spheres(4, contype=0, conaffinity=0)
    ent = [0, 0, 1, 1]
    # entity 0 and 1: local masks 0 -> nothing inside an entity; across entities the global
    # masks (1, 1) apply
    pipe = CollisionPipeline(g, ent, [-1] * 4, [True] * 4, local_masks=[True, True])
    _run(pipe, np.zeros((4, 3)))
    assert _pairs(pipe) == [(0, 2), (0, 3), (1, 2), (1, 3)]
    # without local masks the zero masks apply everywhere
    pipe = CollisionPipeline(g, ent, [-1] * 4, [True] * 4)
    _run(pipe, np.zeros((4, 3)))
    assert _pairs(pipe) == []
    # self collision off: only pairs across entities
    pipe = CollisionPipeline(_spheres(4), ent, [-1] * 4, [True] * 4,
                             RigidOptions(enable_self_collision=False, broadphase="sweep_and_prune"))
    _run(pipe, np.zeros((4, 3)))
    assert _pairs(pipe) == [(0, 2), (0, 3), (1, 2), (1, 3)]


def test_excludes_and_explicit_pairs_from_descriptions():
    def desc(name):
        links = [Link(name=f"{name}a", joints=[0], geoms=[0]),
                 Link(name=f"{name}b", parent=0, joints=[1], geoms=[1]),
                 Link(name=f"{name}c", parent=1, joints=[2], geoms=[2])]
        joints = [Joint(name=f"{name}j{i}", type="free" if i == 0 else "revolute", link=i)
                  for i in range(3)]
        geoms = [Geom(name=f"{name}g{i}", type="sphere", link=i, size=(0.5, 0, 0),
                      contype=0 if i == 2 else 1) for i in range(3)]
        return EntityDescription(name=name, links=links, joints=joints, geoms=geoms).finalize()

    d = desc("e")
    d.contact_excludes = [(0, 2)]
    d.contact_pairs = [{"geom1": 2, "geom2": 1, "margin": 0.3, "gap": 0.1}]
    for bp in ("all_vs_all", "sweep_and_prune"):
        pipe = CollisionPipeline.from_descriptions([d], RigidOptions(broadphase=bp))
        _run(pipe, [[0, 0, 0], [0, 0, 0.5], [0, 0, 1.0]])
        c = pipe.contacts()[0]
        # (0,1) adjacent, (0,2) excluded (and masks), (1,2) only through the explicit pair,
        # even though (1,2) are parent and child and geom 2 has contype 0
        assert _pairs(pipe) == [(2, 1)] or _pairs(pipe) == [(1, 2)]
        assert c["pair"].tolist() == [0]
        assert abs(c["includemargin"][0] - 0.2) < 1e-12
    # the same geoms far apart but within the pair margin: a contact with negative depth
    pipe = CollisionPipeline.from_descriptions([d])
    _run(pipe, [[0, 0, 0], [0, 0, 5], [0, 0, 6.2]])
    c = pipe.contacts()[0]
    assert len(c["depth"]) == 1 and abs(c["depth"][0] + 0.2) < 1e-12


@pytest.mark.filterwarnings("ignore:collision. no narrowphase routine")
def test_sweep_and_prune_equals_all_vs_all_random_scene():
    rng = np.random.default_rng(3)
    n = 90
    types = rng.choice(["sphere", "capsule", "box", "cylinder"], size=n)
    g = [geom(t, tuple(rng.uniform(0.1, 0.3, size=3)), i,
              contype=int(rng.integers(1, 4)), conaffinity=int(rng.integers(1, 4)))
         for i, t in enumerate(types)]
    g.append(geom("plane", (0, 0, 1), -1))
    g.append(geom("sphere", (0.2,), 0))           # a second geom on link 0
    parent = [-1] + [int(rng.integers(-1, i)) for i in range(1, n)]
    moves = list(rng.random(n) < 0.8)
    ent = [i % 3 for i in range(n + 2)]
    n_envs = 3
    pos = rng.uniform(-1.5, 1.5, size=(n_envs, n + 2, 3))
    quat = rng.normal(size=(n_envs, n + 2, 4))
    quat /= np.linalg.norm(quat, axis=-1, keepdims=True)
    out = {}
    for bp in ("all_vs_all", "sweep_and_prune"):
        pipe = CollisionPipeline(g, ent, parent, moves, RigidOptions(broadphase=bp),
                                 local_masks=[False, True, False], excludes=[(3, 5), (7, -1)])
        pipe.build(n_envs, "cpu", "64", partitions=(Partition(0, 0, 2), Partition(1, 2, 3)))
        set_poses_host(pipe, pos, quat)
        pipe.run(Partition(0, 0, 2))
        pipe.run(Partition(1, 2, 3))
        pipe.check()
        out[bp] = [sorted(zip(c["geom_a"].tolist(), c["geom_b"].tolist(),
                              np.round(c["depth"], 12).tolist())) for c in pipe.contacts()]
        # every dynamic pair found is allowed by the reference filter
        allowed = {tuple(p) for p in pipe.allowed_pairs().tolist()}
        for c in pipe.contacts():
            for a, b in zip(c["geom_a"], c["geom_b"]):
                assert (min(a, b), max(a, b)) in allowed
    assert out["all_vs_all"] == out["sweep_and_prune"]
    assert sum(len(x) for x in out["all_vs_all"]) > 20


def test_budget_overflow_raises_names_budget_env_count():
    # env 0 separated, env 1 all four spheres overlap (6 pairs)
    pos = np.stack([np.arange(4)[:, None] * np.array([5.0, 0, 0]), np.zeros((4, 3))])
    pipe = CollisionPipeline(_spheres(4), [0, 1, 2, 3], [-1] * 4, [True] * 4,
                             RigidOptions(max_collision_pairs=2))
    _run(pipe, pos, n_envs=2)
    with pytest.raises(BudgetExceededError, match=r"max_collision_pairs exceeded in env 1: 6 needed, budget 2"):
        pipe.check()
    # candidates: the octagon of two square faces has 8 points
    q = np.array([[1, 0, 0, 0], [np.cos(np.pi / 8), 0, 0, np.sin(np.pi / 8)]])
    for name, opts, need in (("max_candidate_contacts", dict(max_candidate_contacts=5), 8),
                             ("max_contacts", dict(max_contacts=3), 4)):
        g = [geom("box", (0.5, 0.5, 0.1), 0), geom("box", (0.5, 0.5, 0.1), 1)]
        pipe = CollisionPipeline(g, [0, 1], [-1, -1], [True, True], RigidOptions(**opts))
        pipe.build(1, "cpu", "64")
        set_poses_host(pipe, [[[0, 0, 0], [0, 0, 0.18]]], q[None])
        pipe.run(Partition(0, 0, 1))
        with pytest.raises(BudgetExceededError, match=rf"{name} exceeded in env 0: {need} needed"):
            pipe.check()
    # warn-and-drop: a warning, and the usable count is clamped to the budget
    pipe = CollisionPipeline(g, [0, 1], [-1, -1], [True, True],
                             RigidOptions(max_contacts=3, collision_overflow="warn"))
    pipe.build(1, "cpu", "64")
    set_poses_host(pipe, [[[0, 0, 0], [0, 0, 0.18]]], q[None])
    pipe.run(Partition(0, 0, 1))
    with pytest.warns(PolyphysWarning, match="max_contacts"):
        pipe.check()
    assert int(pipe.contact_count.numpy()[0]) == 0 or int(pipe.contact_count.numpy()[0]) <= 3


def test_outputs_written_and_deterministic():
    """NaN-filled outputs: every reported contact is finite; a second run gives equal bits."""
    g = [geom("plane", (0, 0, 1), -1)] + [geom("box", (0.2, 0.2, 0.2), i) for i in range(5)]
    pipe = CollisionPipeline(g, [0] * 6, [-1] * 5, [True] * 5)
    pipe.build(2, "cpu", "32")
    for a in (pipe.contact_pos, pipe.contact_frame, pipe.contact_depth):
        a.fill_(float("nan"))
    rng = np.random.default_rng(0)
    pos = rng.uniform(-0.3, 0.3, size=(2, 6, 3))
    q = rng.normal(size=(2, 6, 4))
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    set_poses_host(pipe, pos, q)
    pipe.run(Partition(0, 0, 2))
    pipe.check()
    a = pipe.contacts()
    assert sum(len(c["depth"]) for c in a) > 0
    for c in a:
        for k in ("pos", "frame", "depth"):
            assert np.all(np.isfinite(c[k]))
        np.testing.assert_allclose(np.einsum("kij,klj->kil", c["frame"], c["frame"]),
                                   np.broadcast_to(np.eye(3), c["frame"].shape), atol=1e-5)
    pipe.run(Partition(0, 0, 2))
    b = pipe.contacts()
    for x, y in zip(a, b):
        for k in x:
            np.testing.assert_array_equal(x[k], y[k])


def test_update_poses_from_links():
    """Geom offsets on links: geom pose = link pose ∘ geom local pose."""
    g = [Geom(name="a", type="sphere", link=0, size=(0.3, 0, 0), pos=(1.0, 0, 0)),
         Geom(name="b", type="sphere", link=1, size=(0.3, 0, 0), pos=(0, 0, 0.5),
              quat=(0.0, 1.0, 0.0, 0.0))]
    pipe = CollisionPipeline(g, [0, 1], [-1, -1], [True, True]).build(1, "cpu", "64")
    # link 0 at origin turned 90 deg about z: geom a at (0, 1, 0); link 1 at (0, 1.5, -0.5)
    lq = np.array([[[np.cos(np.pi / 4), 0, 0, np.sin(np.pi / 4)], [1, 0, 0, 0]]])
    lpos = wp.array(np.array([[[0, 0, 0], [0, 1.5, -0.5]]]), dtype=wp.vec3d)
    lquat = wp.array(lq[..., [1, 2, 3, 0]], dtype=wp.quatd)
    pipe.update_poses(Partition(0, 0, 1), lpos, lquat)
    pipe.run(Partition(0, 0, 1))
    np.testing.assert_allclose(pipe.geom_xpos.numpy()[0], [[0, 1, 0], [0, 1.5, 0]], atol=1e-12)
    c = pipe.contacts()[0]
    assert abs(c["depth"][0] - 0.1) < 1e-12


def test_bad_input():
    with pytest.raises(OptionError, match=r"RigidOptions.broadphase = 'sap'"):
        RigidOptions(broadphase="sap")
    with pytest.raises(OptionError, match="max_contacts"):
        RigidOptions(max_contacts=0)
    with pytest.raises(OptionError, match="collision_overflow"):
        RigidOptions(collision_overflow="ignore")
    with pytest.raises(OptionError, match="geom_entity"):
        CollisionPipeline(_spheres(2), [0], [-1, -1], [True, True])
    with pytest.raises(OptionError, match="link 5 out of range"):
        CollisionPipeline([geom("sphere", (0.5,), 5)], [0], [-1], [True])
    with pytest.raises(OptionError, match="contact pair"):
        CollisionPipeline(_spheres(2), [0, 0], [-1, -1], [True, True], pairs=[{"geom1": 0, "geom2": 0}])
    pipe = CollisionPipeline(_spheres(2), [0, 0], [-1, -1], [True, True])
    with pytest.raises(OptionError, match="precision"):
        pipe.build(1, "cpu", "16")


def test_hfield_and_meshless_geoms_warn_and_do_not_collide():
    hf = Geom(name="h", type="hfield", link=1, size=(1, 1, 0.1))
    mesh = Geom(name="m", type="mesh", link=2, size=(0, 0, 0))      # no mesh data
    with pytest.warns(PolyphysWarning, match=r"heightfield .*\['h', 'm'\] do not collide"):
        pipe = CollisionPipeline([geom("sphere", (0.5,), 0), hf, mesh], [0, 1, 2], [-1] * 3,
                                 [True] * 3)
    _run(pipe, np.zeros((3, 3)))
    assert _pairs(pipe) == []



@pytest.mark.parametrize("bp", ["all_vs_all", "sweep_and_prune"])
def test_captured_graph_equals_direct_run(bp):
    """run() is graph-capturable (no host sync, no allocation): a graph captured once and
    replayed after the poses change gives the same contacts as a direct run."""
    g = [geom("plane", (0, 0, 1), -1)] + [geom(t, (0.2, 0.15, 0.1), i) for i, t in
                                          enumerate(["sphere", "box", "capsule", "box", "sphere"])]
    parts = (Partition(0, 0, 2), Partition(1, 2, 3))

    def make():
        pipe = CollisionPipeline(g, [0] * 6, [-1] * 5, [True] * 5, RigidOptions(broadphase=bp))
        pipe.build(3, "cpu", "64", partitions=parts)
        return pipe

    def poses(k):
        r = np.random.default_rng(k)
        q = r.normal(size=(3, 6, 4))
        return r.uniform(-0.3, 0.3, size=(3, 6, 3)), q / np.linalg.norm(q, axis=-1, keepdims=True)

    a, b = make(), make()
    set_poses_host(a, *poses(0))
    for p in parts:
        a.run(p)                                # loads the modules
    graphs = []
    for p in parts:
        with wp.ScopedCapture(device="cpu", force_module_load=False) as cap:
            a.run(p)
        graphs.append(cap.graph)
    for k in (1, 2):
        set_poses_host(a, *poses(k))
        set_poses_host(b, *poses(k))
        for gr in graphs:
            wp.capture_launch(gr)
        for p in parts:
            b.run(p)
        ca, cb = a.contacts(), b.contacts()
        assert sum(len(c["depth"]) for c in ca) > 0
        for x, y in zip(ca, cb):
            for key in x:
                np.testing.assert_array_equal(x[key], y[key])


def test_neutral_overlap_option():
    """Pairs of one entity overlapping in the neutral configuration are removed unless
    neutral_collision; pairs across entities and pairs not overlapping there stay."""
    g = _spheres(3)
    ent = [0, 0, 1]
    neutral = (np.array([[0, 0, 0], [0.5, 0, 0], [0.9, 0, 0]]), np.tile([1.0, 0, 0, 0], (3, 1)))
    now = np.zeros((3, 3))
    pipe = CollisionPipeline(g, ent, [-1] * 3, [True] * 3)
    pipe.build(1, "cpu", "64", neutral_poses=neutral)
    assert pipe.neutral_excluded.tolist() == [[0, 1]]
    _run(pipe, now)     # rebuilds with the exclusion kept
    assert _pairs(pipe) == [(0, 2), (1, 2)]
    pipe = CollisionPipeline(g, ent, [-1] * 3, [True] * 3, RigidOptions(enable_neutral_collision=True))
    pipe.build(1, "cpu", "64", neutral_poses=neutral)
    _run(pipe, now)
    assert _pairs(pipe) == [(0, 1), (0, 2), (1, 2)]
    with pytest.raises(OptionError, match="neutral_poses"):
        CollisionPipeline(g, ent, [-1] * 3, [True] * 3).build(1, "cpu", "64",
                                                              neutral_poses=(np.zeros((2, 3)), np.zeros((3, 4))))


def test_export_to_constraint_arrays():
    """export() writes the contact set into a constraint builder's layout: dist = -depth, the
    links of the geoms, the count clamped to the receiving capacity."""
    g = [geom("plane", (0, 0, 1), -1)] + [Geom(name=f"s{i}", type="sphere", link=i, size=(0.5, 0, 0))
                                          for i in range(3)]
    pipe = CollisionPipeline(g, [0] * 4, [-1] * 3, [True] * 3)
    _run(pipe, [[0, 0, 0], [0, 0, 0.4], [3, 0, 0.45], [3.8, 0, 0.45]], n_envs=2)
    E, C = 2, 2
    n_con = wp.zeros(E, dtype=wp.int32)
    pos = wp.zeros((E, C), dtype=wp.vec3d)
    frame = wp.zeros((E, C), dtype=wp.mat33d)
    dist = wp.zeros((E, C), dtype=wp.float64)
    marg = wp.zeros((E, C), dtype=wp.float64)
    link = wp.zeros((E, C, 2), dtype=wp.int32)
    pipe.export(Partition(0, 0, 2), n_con, pos, frame, dist, marg, link)
    c = pipe.contacts([1])[0]
    assert len(c["depth"]) == 4 and n_con.numpy().tolist() == [2, 2]
    np.testing.assert_array_equal(dist.numpy()[1], -c["depth"][:2])
    np.testing.assert_array_equal(frame.numpy()[1], c["frame"][:2])
    np.testing.assert_array_equal(pos.numpy()[1], c["pos"][:2])
    lk = np.array([g[i].link for i in range(4)])
    np.testing.assert_array_equal(link.numpy()[1], np.stack([lk[c["geom_a"][:2]], lk[c["geom_b"][:2]]], 1))


@pytest.mark.parametrize("bp", ["all_vs_all", "sweep_and_prune"])
def test_equality_weld_switched_per_env(bp):
    """No contact across an active weld; switching it off in one env restores that env's
    contacts only (docs/semantics.md §R4: also welds made at run time)."""
    def desc():
        links = [Link(name="a", joints=[0], geoms=[0]), Link(name="b", joints=[1], geoms=[1])]
        joints = [Joint(name=f"j{i}", type="free", link=i) for i in range(2)]
        geoms = [Geom(name=f"g{i}", type="sphere", link=i, size=(0.5, 0, 0)) for i in range(2)]
        d = EntityDescription(name="w", links=links, joints=joints, geoms=geoms).finalize()
        from polyphys.description import Equality

        d.equalities = [Equality(name="weld", type="weld", obj1=0, obj2=1)]
        return d

    pipe = CollisionPipeline.from_descriptions([desc()], RigidOptions(broadphase=bp))
    _run(pipe, np.zeros((2, 3)), n_envs=2)
    assert _pairs(pipe, 0) == [] and _pairs(pipe, 1) == []
    pipe.set_weld_active([0], envs_idx=[1])
    pipe.run(Partition(0, 0, 2))
    assert _pairs(pipe, 0) == [] and _pairs(pipe, 1) == [(0, 1)]
    with pytest.raises(OptionError, match="set_weld_active"):
        pipe.set_weld_active([1, 1])


@pytest.mark.parametrize("fused", [False, True])
def test_export_into_the_pipelines_own_arrays(fused):
    """The rigid solver's layout: con_pos / con_frame / con_margin are the pipeline's contact_pos /
    contact_frame / contact_includemargin themselves. export (and collide's fused prune + export on CPU)
    then writes only the count, dist = -depth and the links; the shared arrays hold the contact set the
    pipeline reports, and an export into separate arrays still copies everything (as before)."""
    g = [geom("plane", (0, 0, 1), -1)] + [geom("box", (0.2, 0.15, 0.1), i) for i in range(3)]
    pipe = CollisionPipeline(g, [0] * 4, [-1] * 3, [True] * 3, RigidOptions(mujoco_compatible=True))
    E = 2
    pipe.build(E, "cpu", "64")
    rng = np.random.default_rng(3)
    lpos = np.array([[[0.31, -0.2, 0.12], [0.62, 0.05, 0.09], [0.5, -0.1, 0.3]]] * E) + rng.uniform(-0.02, 0.02, (E, 3, 3))
    lq = rng.normal(size=(E, 3, 4)) * [0.15, 0.15, 0.15, 1.0]      # (x, y, z, w), near upright
    lq /= np.linalg.norm(lq, axis=-1, keepdims=True)
    link_pos = wp.array(lpos, dtype=wp.vec3d)
    link_quat = wp.array(lq, dtype=wp.quatd)
    C = pipe.max_contacts
    n_con = wp.array(np.full(E, -7), dtype=wp.int32)
    dist = wp.array(np.full((E, C), np.nan), dtype=wp.float64)
    link = wp.array(np.full((E, C, 2), -9), dtype=wp.int32)
    shared = (n_con, pipe.contact_pos, pipe.contact_frame, dist, pipe.contact_includemargin, link)
    part = Partition(0, 0, E)
    if fused:
        pipe.collide(part, link_pos, link_quat, shared)
    else:
        pipe.collide(part, link_pos, link_quat)
        pipe.export(part, *shared)
    own = [wp.zeros((E, C), dtype=wp.vec3d), wp.zeros((E, C), dtype=wp.mat33d), wp.zeros((E, C), dtype=wp.float64)]
    sep = (wp.zeros(E, dtype=wp.int32), own[0], own[1], wp.zeros((E, C), dtype=wp.float64), own[2],
           wp.zeros((E, C, 2), dtype=wp.int32))
    pipe.export(part, *sep)
    lk = np.array([x.link for x in g])
    for e, c in enumerate(pipe.contacts()):
        k = len(c["depth"])
        assert k > 0 and int(n_con.numpy()[e]) == k
        np.testing.assert_array_equal(dist.numpy()[e, :k], -c["depth"])
        np.testing.assert_array_equal(link.numpy()[e, :k], np.stack([lk[c["geom_a"]], lk[c["geom_b"]]], 1))
        assert np.all(link.numpy()[e, k:] == -9) and np.all(np.isnan(dist.numpy()[e, k:]))
        np.testing.assert_array_equal(own[0].numpy()[e, :k], c["pos"])
        np.testing.assert_array_equal(own[1].numpy()[e, :k], c["frame"])
        np.testing.assert_array_equal(own[2].numpy()[e, :k], c["includemargin"])
        np.testing.assert_array_equal(sep[3].numpy()[e, :k], -c["depth"])


def test_rigid_solver_reads_the_pipelines_contact_set():
    """The rigid solver's Data aliases the contact points, frames, margins, geoms and pairs of its
    collision pipeline (one copy of the contact set); after a step the exported count, dist and links
    match the pipeline's set."""
    import polyphys
    from polyphys import morphs
    from polyphys.plugins.rigid.materials import Rigid

    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, precision="64", graph_capture=False), rigid=RigidOptions())
    scene.add_entity(morphs.Plane(), Rigid())
    scene.add_entity(morphs.Box(size=(0.3, 0.2, 0.1), pos=(0.2, -0.1, 0.049), euler=(0, 0, 17)), Rigid())
    scene.build(n_envs=2)
    s = scene.solver("rigid")
    scene.step()
    c, d = s.collision, s.data
    for a, b in ((d.con_pos, c.contact_pos), (d.con_frame, c.contact_frame), (d.con_margin, c.contact_includemargin),
                 (d.con_pair, c.contact_pair)):
        assert a.ptr == b.ptr and a.shape == b.shape
    assert d.con_geom.ptr == c.contact_geom.ptr
    lk = np.array([g.link for g in c.geoms])
    for e, con in enumerate(c.contacts()):
        k = len(con["depth"])
        assert k == 4 and int(d.ncon.numpy()[e]) == k
        np.testing.assert_array_equal(d.con_dist.numpy()[e, :k], -con["depth"])
        np.testing.assert_array_equal(d.con_link.numpy()[e, :k], np.stack([lk[con["geom_a"]], lk[con["geom_b"]]], 1))


def test_prune_export_prefetch_changes_nothing():
    """prune_export's write prefetch of the next env's contact rows (kernels/collision_driver.cpp; on from
    collision.PREFETCH_MIN_ENVS envs on CPU) moves no value: with the next envs' counts of the last call wrong
    (the boxes are lifted off the plane in every third, then every second env between calls: envs lose and regain
    their plane contacts) the contact set, the exported count,
    dist and links (NaN / −7 / −9 filled first) equal the run without it byte for byte."""
    from polyphys.plugins.rigid.collision import PREFETCH_MIN_ENVS

    g = [geom("plane", (0, 0, 1), -1)] + [geom("box", (0.2, 0.15, 0.1), i) for i in range(3)]
    E = PREFETCH_MIN_ENVS + 37
    pipe = CollisionPipeline(g, [0] * 4, [-1] * 3, [True] * 3, RigidOptions(mujoco_compatible=True))
    pipe.build(E, "cpu", "64")
    small = CollisionPipeline(g, [0] * 4, [-1] * 3, [True] * 3, RigidOptions(mujoco_compatible=True))
    small.build(2, "cpu", "64")
    assert pipe._prefetch == 1 and small._prefetch == 0
    rng = np.random.default_rng(5)
    C = pipe.max_contacts
    part = Partition(0, 0, E)

    def poses(lift):
        lpos = np.array([[[0.31, -0.2, 0.12], [0.62, 0.05, 0.09], [0.5, -0.1, 0.3]]] * E) + rng.uniform(-0.02, 0.02, (E, 3, 3))
        lpos[:, :, 2] += lift[:, None]
        lq = rng.normal(size=(E, 3, 4)) * [0.15, 0.15, 0.15, 1.0]
        lq /= np.linalg.norm(lq, axis=-1, keepdims=True)
        return wp.array(lpos, dtype=wp.vec3d), wp.array(lq, dtype=wp.quatd)

    def run(prefetch, lp, lq):
        pipe._prefetch = prefetch
        n_con = wp.array(np.full(E, -7), dtype=wp.int32)
        dist = wp.array(np.full((E, C), np.nan), dtype=wp.float64)
        link = wp.array(np.full((E, C, 2), -9), dtype=wp.int32)
        for a in (pipe.contact_pos, pipe.contact_frame, pipe.contact_depth, pipe.contact_includemargin):
            a.fill_(float("nan"))
        pipe.contact_geom.fill_(-5)
        pipe.contact_pair.fill_(-5)
        pipe.collide(part, lp, lq, (n_con, pipe.contact_pos, pipe.contact_frame, dist, pipe.contact_includemargin, link))
        return [a.numpy().tobytes() for a in (n_con, dist, link, pipe.contact_count, pipe.contact_pos, pipe.contact_frame,
                                               pipe.contact_depth, pipe.contact_includemargin, pipe.contact_geom,
                                               pipe.contact_pair)]

    before = None
    for lift in (np.zeros(E), np.where(np.arange(E) % 3 == 0, 5.0, 0.0), np.where(np.arange(E) % 2 == 0, 0.0, 5.0)):
        lp, lq = poses(lift)
        outs = []
        for prefetch in (1, 0, 1):
            outs.append(run(prefetch, lp, lq))
            counts = pipe.contact_count.numpy().copy()
        assert outs[0] == outs[1] == outs[2]
        assert counts.max() >= 8
        if before is not None:
            assert (counts != before).mean() > 0.3      # the stale counts the prefetch reads were wrong
        before = counts
