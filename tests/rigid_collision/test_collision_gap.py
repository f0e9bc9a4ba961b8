"""Contact margin and gap: MuJoCo 4.0's rule in the MuJoCo-compatible mode, docs/semantics.md §R4's in the default.

MuJoCo 4.0 (changelog 4.0, "margin and gap"; measured here on the installed 4.0.0): a pair's margin
and gap are the sums of its geoms' (or an explicit pair's own); a contact is detected when the
distance is below margin + gap; its includemargin is the margin (the gap is not subtracted); a
contact with margin < distance < margin + gap is in mjData.contact with efc_address −1 (no
constraint rows, no force). polyphys: RigidOptions(mujoco_compatible=True) (summed
margins, contacts detected below margin + gap). The
default ("inside", docs/semantics.md §R4 as docs/collision.md): detection below the margin, includemargin =
margin − gap, every contact makes rows. Closed-form sphere/box–plane contacts, float64: distances
agree to rounding (1e-12).
"""

import warnings

import numpy as np
import polyphys
import pytest
from collision_helpers import geom
from polyphys import morphs
from polyphys.errors import PolyphysWarning
from polyphys.layout import Partition
from polyphys.plugins.rigid import RigidOptions
from polyphys.plugins.rigid.collision import CollisionPipeline, set_poses_host
from polyphys.plugins.rigid.materials import Rigid

mujoco = pytest.importorskip("mujoco")

R = 0.1
# (margin, gap) of plane and sphere; distances (sphere surface above the plane) in every regime:
# beyond margin + gap, in the gap, at the margin's edge, inside the margin, penetrating
GEOMS = ((0.002, 0.001), (0.001, 0.0005))            # pair margin .003, gap .0015 (summed)
DISTS = (0.0050, 0.0044, 0.0040, 0.0032, 0.0029, 0.0020, 0.0, -0.0010)
XML = """<mujoco><option timestep="0.002"/><worldbody>
  <geom name="floor" type="plane" size="2 2 .1" margin="{m1}" gap="{g1}"/>
  <body name="ball" pos="0 0 {z}"><freejoint/>
    <geom name="ball" type="sphere" size="{r}" margin="{m2}" gap="{g2}"/></body>
</worldbody>{pair}</mujoco>"""
PAIR = '<contact><pair geom1="floor" geom2="ball" margin="0.0025" gap="0.002"/></contact>'


def _mujoco(dist, pair=""):
    (m1, g1), (m2, g2) = GEOMS
    m = mujoco.MjModel.from_xml_string(XML.format(m1=m1, g1=g1, m2=m2, g2=g2, z=R + dist, r=R, pair=pair))
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    c = d.contact[:d.ncon]
    return d, [(float(c.dist[k]), float(c.includemargin[k]), bool(c.efc_address[k] >= 0)) for k in range(d.ncon)]


def _pipeline(options, pairs=None):
    (m1, g1), (m2, g2) = GEOMS
    g = [geom("plane", (0.0, 0.0, 1.0), -1, margin=m1, gap=g1), geom("sphere", (R,), 0, margin=m2, gap=g2)]
    pipe = CollisionPipeline(g, [0, 1], [-1], [True], options, pairs=pairs or [])
    n = len(DISTS)
    pipe.build(n, "cpu", "64")
    pos = np.array([[[0, 0, 0], [0, 0, R + dz]] for dz in DISTS], float)
    quat = np.tile([1.0, 0, 0, 0], (n, 2, 1))
    set_poses_host(pipe, pos, quat)
    pipe.run(Partition(0, 0, n))
    pipe.check()
    return pipe, pipe.contacts()


def _ours(c):
    return [(float(-c["depth"][k]), float(c["includemargin"][k]), bool(c["active"][k]))
            for k in range(len(c["depth"]))]


@pytest.mark.parametrize("explicit_pair", [False, True])
def test_gap_outside_matches_mujoco(explicit_pair):
    """MuJoCo-compatible mode (summed margins, the gap outside the margin): per distance the same contacts as MuJoCo 4.0 —
    present or not, dist, includemargin = margin, active (rows) or in the gap — for the geoms'
    summed margin/gap and for an explicit <pair> with its own."""
    pairs = [{"geom1": 0, "geom2": 1, "margin": 0.0025, "gap": 0.002}] if explicit_pair else None
    _, ours = _pipeline(RigidOptions(mujoco_compatible=True), pairs)
    in_gap = 0
    for dz, c in zip(DISTS, ours):
        _, mj = _mujoco(dz, PAIR if explicit_pair else "")
        mine = _ours(c)
        assert len(mine) == len(mj), (dz, mine, mj)
        for (d0, im0, a0), (d1, im1, a1) in zip(mine, mj):
            assert abs(d0 - d1) <= 1e-12 and abs(im0 - im1) <= 1e-12 and a0 == a1, (dz, mine, mj)
            in_gap += not a1
    assert in_gap >= 2                  # the gap regime was exercised


def test_gap_rule_follows_the_mode():
    """MuJoCo-compatible mode detects below margin + gap (contacts in the gap without rows); the
    default detects below the margin: different contact sets on the same distances."""
    _, a = _pipeline(RigidOptions(mujoco_compatible=True))
    _, b = _pipeline(RigidOptions())
    assert [_ours(c) for c in a] != [_ours(c) for c in b]


def test_default_gap_inside_margin():
    """The default (docs/semantics.md §R4, docs/collision.md): margin and gap are the larger of the two geoms'
    (.002, .001); a contact is detected below the margin and every contact makes rows with
    includemargin = margin − gap = .001."""
    _, ours = _pipeline(RigidOptions())
    for dz, c in zip(DISTS, ours):
        mine = _ours(c)
        assert len(mine) == (1 if dz < 0.002 else 0), (dz, mine)
        for d0, im0, a0 in mine:
            assert abs(d0 - dz) <= 1e-12 and abs(im0 - 0.001) <= 1e-15 and a0


@pytest.mark.parametrize("dz", [0.004, 0.002])
def test_gap_through_the_solver_matches_mujoco(dz, tmp_path):
    """Through the rigid solver in the MuJoCo-compatible mode (pyramidal, Euler), one step from a
    ball held dz above the floor (margin .003, gap .0015 summed), against MuJoCo's mj_forward at
    the same state: 4.0 mm is in the gap — the contact is reported, makes no rows (MuJoCo: nefc 0)
    and has zero force; 2.0 mm is inside the margin — MuJoCo's rows (4) and normal force (the
    ball is pushed toward dist = margin although it does not touch), to the solvers' tolerance
    (1e-6 relative; both stop at MuJoCo's 1e-8 criterion)."""
    (m1, g1), (m2, g2) = GEOMS
    path = tmp_path / "ball.xml"
    path.write_text(XML.format(m1=m1, g1=g1, m2=m2, g2=g2, z=R + dz, r=R, pair=""))
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.002, gravity=(0, 0, -9.81), precision="64",
                                                   graph_capture=False),
                           rigid=RigidOptions.mujoco(integrator="Euler", friction_cone="pyramidal"))
    ball = scene.add_entity(morphs.MJCF(file=str(path)), Rigid(), name="mj")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=0)
    scene.step()
    d, mj = _mujoco(dz)
    st = scene.solver("rigid").data
    c = ball.get_contacts()
    raw = scene.solver("rigid").get_raw_contacts()
    assert int(raw["count"]) == len(mj) == 1
    assert abs(-float(raw["penetration"][0]) - mj[0][0]) <= 1e-12
    assert int(st.ncon.numpy()[0]) == int(mj[0][2])
    assert int(st.nefc.numpy()[0]) == d.nefc
    fn_mj = float(d.efc_force[:d.nefc].sum())       # pyramidal: the normal force is the edges' sum
    assert len(c["wrench"]) == 1
    # docs/semantics.md §F2: the readback says whether the contact is a constraint row (MuJoCo's exclude flag)
    assert bool(c["active"][0]) == bool(mj[0][2]) and bool(raw["active"][0]) == bool(mj[0][2])
    if mj[0][2]:
        assert float(c["wrench"][0][0]) == pytest.approx(fn_mj, rel=1e-6) and fn_mj > 0
    else:
        assert d.nefc == 0 and not np.any(c["wrench"])


# -- pruning (collision_driver.prune) ------------------------------------------------------------
@pytest.mark.parametrize("precision", ["64", "32"])
def test_prune_aligned_faces_keep_four_distinct_corners(precision):
    """Two aligned 0.2 m boxes, the upper one 0.207 mm into the lower one, with pose perturbations
    of 1e-16 (the round-off of a resting stack): clipping emits corners twice and points along
    edges lying on a clip plane; pruning keeps exactly the 4 corners in every pose (the former
    4th-point rule, the largest unsigned triangle on an edge, missed a corner in 54 of these 400
    float64 poses). Corners compared to 1e-7 m (float32: 1e-4, ulps of 0.9 m coordinates)."""
    from collision_helpers import run_pairs
    H = 0.1
    rng = np.random.default_rng(0)
    poses = [(np.array([0, 0, 0.7]), np.array([1.0, 0, 0, 0]),
              np.array([*(rng.normal(size=2) * 1e-16), 0.9 - 2.07e-4]), np.array([1.0, *(rng.normal(size=3) * 1e-16)]))
             for _ in range(400)]
    _, cs = run_pairs("box", (H,) * 3, "box", (H,) * 3, poses, precision, 0.0, RigidOptions(max_contacts_per_pair=4))
    nd = 7 if precision == "64" else 4
    want = {(sx * H, sy * H) for sx in (-1, 1) for sy in (-1, 1)}
    bad = [e for e, c in enumerate(cs)
           if len(c["pos"]) != 4 or {tuple(np.round(np.asarray(p[:2], float), nd)) for p in c["pos"]} != want]
    assert not bad, (len(bad), cs[bad[0]]["pos"])


@pytest.mark.parametrize("keep", [4, 5, 6, 7])
def test_prune_octagon_keeps_distinct_candidate_points(keep):
    """A box turned 45° on an equal box: the face manifold is an octagon (8 points). With
    max_contacts_per_pair = keep (< 8) pruning writes exactly `keep` contacts, all distinct points
    of the octagon at its depth (picks 5+ by farthest-point), and the 4 of keep=4 span the largest
    share the rule guarantees: at least half the octagon's area (a triangle of the deepest, the
    farthest and the farthest from their line, plus the largest added area)."""
    from collision_helpers import axis_quat, run_pairs
    H = 0.1
    pose = (np.zeros(3), np.array([1.0, 0, 0, 0]), np.array([0, 0, 2 * H - 1e-3]), axis_quat([0, 0, 1], np.pi / 4))
    pipe, (c,) = run_pairs("box", (H,) * 3, "box", (H,) * 3, [pose], "64", 0.0,
                           RigidOptions(max_contacts_per_pair=keep))
    cand = pipe.candidates(0)[0][3]
    assert len(cand) == 8
    assert len(c["pos"]) == keep
    d = np.linalg.norm(c["pos"][:, None] - cand[None], axis=-1).min(axis=1)
    assert d.max() <= 1e-12                                           # every contact is a candidate
    assert np.linalg.norm(c["pos"][:, None] - c["pos"][None], axis=-1)[np.triu_indices(keep, 1)].min() > 1e-3
    np.testing.assert_allclose(c["depth"], 1e-3, atol=1e-12)
    if keep == 4:
        assert _area(c["pos"][:, :2]) >= 0.5 * _area(cand[:, :2])


def _area(p):
    """Area of a convex polygon given by its vertices in any order (sorted by angle, shoelace)."""
    q = p[np.argsort(np.arctan2(*(p - p.mean(axis=0)).T[::-1]))]
    return 0.5 * abs(np.dot(q[:, 0], np.roll(q[:, 1], -1)) - np.dot(q[:, 1], np.roll(q[:, 0], -1)))


def test_float32_aligned_boxes_prefer_the_face_axis():
    """float32, aligned 0.2 m boxes anywhere (centres up to ~10 m, random yaw) with a tilt of up to
    1e-7 rad (a resting float32 stack's): an edge axis of two aligned boxes is their face axis, and
    with the former tie tolerance (1e-9 × sizes, below float32 round-off) it won at random and the
    pair got one contact (a 5-box stack in float32 lost support at step 18 and toppled); box_box now
    prefers the face axis within 64 ulps, and every pose gives the 4 corners (1e-4 m: float32
    ulps of 10 m coordinates)."""
    from collision_helpers import axis_quat, run_pairs
    from polyphys.description import quat_to_mat
    H = 0.1
    rng = np.random.default_rng(3)
    poses = []
    for _ in range(200):
        q = axis_quat([0, 0, 1], rng.uniform(0, 2 * np.pi))
        c = rng.normal(size=3) * 3
        tilt = axis_quat(rng.normal(size=3), rng.uniform(0, 1e-7))
        w1, v1, w2, v2 = q[0], q[1:], tilt[0], tilt[1:]
        q2 = np.concatenate([[w1 * w2 - v1 @ v2], w1 * v2 + w2 * v1 + np.cross(v1, v2)])
        poses.append((c, q, c + quat_to_mat(q) @ np.array([0, 0, 2 * H - 2e-4]), q2))
    _, cs = run_pairs("box", (H,) * 3, "box", (H,) * 3, poses, "32", 0.0, RigidOptions(max_contacts_per_pair=4))
    want = {(sx * H, sy * H) for sx in (-1, 1) for sy in (-1, 1)}
    bad = 0
    for (c0, q, _, _), c in zip(poses, cs):
        loc = (np.asarray(c["pos"], float) - c0) @ quat_to_mat(q)
        bad += len(loc) != 4 or {tuple(np.round(p[:2], 4)) for p in loc} != want
    assert bad == 0


def test_float32_stack_of_five_boxes_stands():
    """The 5-box stack of tests/rigid_constraint (0.2 m boxes, dt 0.01, 1 substep, default mode) in
    float32, turned 30° and away from the origin: it stands for 3 s (every box within 1 mm of its
    start horizontally, 20 contacts throughout once settled). Before the face-axis tolerance it
    toppled (0.5-0.7 m drift)."""
    H = 0.1
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, gravity=(0, 0, -9.81), precision="32"),
                           rigid=RigidOptions())
    boxes = [scene.add_entity(morphs.Box(size=(2 * H,) * 3, pos=(3.0, 2.0, H + 2 * H * i), euler=(0, 0, 30)),
                              Rigid(), name=f"b{i}") for i in range(5)]
    scene.add_entity(morphs.Plane(), Rigid())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=0)
    p0 = np.array([np.asarray(b.get_pos()) for b in boxes])
    counts = []
    for _ in range(300):
        scene.step()
        counts.append(int(scene.solver("rigid").get_raw_contacts()["count"]))
    p = np.array([np.asarray(b.get_pos()) for b in boxes])
    assert np.abs(p - p0)[:, :2].max() < 1e-3
    assert min(counts[50:]) == 20
