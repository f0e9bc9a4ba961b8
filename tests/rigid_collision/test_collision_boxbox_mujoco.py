"""Box–box contacts in MuJoCo-compatible mode are MuJoCo 4.0's (docs/collision.md, "Box–box in
MuJoCo-compatible mode"): the same contact set as mj_collision on the same two boxes — count,
positions, normals and distances — matched as sets (each MuJoCo contact to a distinct one of ours).

Poses are generic: boxes with unequal, non-unit half-sizes, off the origin, rotated; three families
— nearly parallel (face–face manifolds of 3–8 points), a small relative tilt (face–edge: the incident
face crosses the reference face), free rotations (edge–edge single points and tilted faces) — each
inside the overlap and within the margin band. Both sides are closed-form in float64; the clipping
divides by differences of vertex distances, so points agree to ~1e-12 × size (tolerance 1e-9 m for
boxes of 0.1–0.6 m). The default mode keeps the polyphys collider (pruned to max_contacts_per_pair),
checked against the exact separating-axis depth in test_collision_mujoco.py.
"""

import numpy as np
import pytest
from collision_helpers import mujoco_contacts, mujoco_model, random_quat, run_pairs
from polyphys.plugins.rigid import RigidOptions

mujoco = pytest.importorskip("mujoco")

TOL = 1e-9


def _tilt(q, rng, scale):
    """q rotated by a small random rotation (axis-angle of the given scale)."""
    w = rng.normal(size=3) * scale
    a = np.linalg.norm(w)
    dq = np.concatenate([[np.cos(a / 2)], np.sin(a / 2) * w / a])
    w0, v0 = dq[0], dq[1:]
    w1, v1 = q[0], q[1:]
    return np.concatenate([[w0 * w1 - v0 @ v1], w0 * v1 + w1 * v0 + np.cross(v0, v1)])


def _cases(rng, n, margin):
    """n (size1, size2, poses) families, 8 poses each: parallel, tilted, free."""
    out = []
    for k in range(n):
        s1 = tuple(rng.uniform(0.1, 0.6, 3))
        s2 = tuple(rng.uniform(0.1, 0.6, 3))
        reach = np.linalg.norm(s1) + np.linalg.norm(s2)
        poses = []
        for i in range(8):
            p1 = rng.uniform(-2.0, 2.0, 3)
            q1 = random_quat(rng)
            kind = (k + i) % 3
            q2 = q1.copy() if kind == 0 else (_tilt(q1, rng, 0.15) if kind == 1 else random_quat(rng))
            d = rng.normal(size=3)
            p2 = p1 + d / np.linalg.norm(d) * reach * rng.uniform(0.3, 0.95)
            poses.append((p1, q1, p2, q2))
        out.append((s1, s2, poses))
    return out


def _match(ours, theirs):
    """Each MuJoCo contact (dist, normal 1→2, pos) to a distinct one of ours: the largest mismatch."""
    assert len(ours["depth"]) == len(theirs)
    used, worst = set(), 0.0
    for dist, nrm, pos, _, _ in theirs:
        err = [max(np.abs(ours["pos"][j] - pos).max(), np.abs(-ours["normal"][j] - nrm).max(),
                   abs(-ours["depth"][j] - dist)) if j not in used else np.inf for j in range(len(theirs))]
        j = int(np.argmin(err))
        assert err[j] <= TOL, (ours, theirs)
        used.add(j)
        worst = max(worst, err[j])
    return worst


@pytest.mark.parametrize("margin", [0.0, 0.03])
def test_box_box_contact_set_is_mujocos(margin):
    rng = np.random.default_rng(7 if margin else 3)
    counts, worst, compared = [], 0.0, 0
    for s1, s2, poses in _cases(rng, 8, margin):
        m, d = mujoco_model("box", s1, "box", s2, margin)
        for precision, opts in (("64", RigidOptions.mujoco()),):  # float64: MuJoCo is double
            pipe, ours = run_pairs("box", s1, "box", s2, poses, precision, margin, options=opts)
            for pose, c in zip(poses, ours):
                theirs = mujoco_contacts(m, d, pose)
                assert all(x[3] == 0 and x[4] == 1 for x in theirs)      # geom 1 = A, geom 2 = B
                np.testing.assert_array_equal(c["geom_a"], 0)
                worst = max(worst, _match(c, theirs))
                if theirs:
                    counts.append(len(theirs))
                    compared += 1
    counts = np.bincount(counts, minlength=9)
    print(f"[measured] margin {margin}: {compared} box pairs in contact, contacts per pair {counts.tolist()}, "
          f"largest mismatch {worst:.1e}")
    assert compared >= 30
    # every kind of configuration took part: edge-edge (1 point), face-edge (2-3), face-face (>= 4)
    assert counts[1] >= 3 and counts[2:4].sum() >= 3 and counts[4:].sum() >= 10


def test_default_mode_keeps_the_pruned_manifold():
    """The default (Genesis) mode is unchanged: at most max_contacts_per_pair points per pair, from
    the polyphys collider (a resting face-face pair of two rotated boxes: its 4 corners, where
    MuJoCo's collider, through the MuJoCo-compatible mode, gives the clipped polygon's 8 vertices)."""
    s1, s2 = (0.4, 0.3, 0.2), (0.35, 0.25, 0.15)
    q = np.array([np.cos(0.3), 0.0, 0.0, np.sin(0.3)])
    q2 = np.array([np.cos(0.3 + np.pi / 8), 0.0, 0.0, np.sin(0.3 + np.pi / 8)])
    pose = (np.array([0.7, -0.2, 0.5]), q, np.array([0.7, -0.2, 0.5 + 0.2 + 0.15 - 0.01]), q2)
    _, (dflt,) = run_pairs("box", s1, "box", s2, [pose], "64", 0.0, options=RigidOptions())
    _, (mj,) = run_pairs("box", s1, "box", s2, [pose], "64", 0.0, options=RigidOptions.mujoco())
    m, d = mujoco_model("box", s1, "box", s2, 0.0)
    theirs = mujoco_contacts(m, d, pose)
    assert len(theirs) == 8 and len(mj["depth"]) == 8 and len(dflt["depth"]) == 4
    _match(mj, theirs)
    # float32 runs the same collider: the same 8 points to float32 rounding of 1 m coordinates
    _, (m32,) = run_pairs("box", s1, "box", s2, [pose], "32", 0.0, options=RigidOptions.mujoco())
    assert len(m32["depth"]) == 8
    for _, _nrm, pos, _, _ in theirs:
        assert np.abs(m32["pos"] - pos).max(axis=1).min() <= 1e-5


PILE = """<mujoco>
  <option timestep="0.005" integrator="implicitfast" cone="pyramidal" solver="Newton"/>
  <worldbody>
    <geom name="floor" type="plane" size="10 10 0.1"/>
{bodies}
  </worldbody>
</mujoco>
"""


def _pile_xml(n=50):
    """n free boxes of generic sizes (35-55 mm half-extents) and masses dropped in a 5 x 5 x 2 lattice
    with rotations up to 15 degrees (benchmarks/bench_constraint.py's pile)."""
    rng = np.random.default_rng(7)
    bodies = []
    for i in range(n):
        gx, gy, gz = i % 5, (i // 5) % 5, i // 25
        x, y = 0.13 * gx - 0.26 + rng.uniform(-0.02, 0.02), 0.13 * gy - 0.26 + rng.uniform(-0.02, 0.02)
        z = 0.08 + 0.16 * gz + 0.01 * (i % 3)
        hx, hy, hz = rng.uniform(0.035, 0.055, 3)
        e = rng.uniform(-15, 15, 3)
        bodies.append(f'<body name="b{i}" pos="{x:.4f} {y:.4f} {z:.4f}" euler="{e[0]:.1f} {e[1]:.1f} {e[2]:.1f}">'
                      f'<freejoint/><geom type="box" size="{hx:.4f} {hy:.4f} {hz:.4f}" '
                      f'mass="{rng.uniform(0.2, 0.6):.3f}"/></body>')
    return PILE.format(bodies="\n".join(bodies))


def test_settled_pile_has_mujocos_contacts(tmp_path):
    """50 boxes settled 2 s by MuJoCo into a heap: at that state (2 envs) the MuJoCo-compatible
    contact set equals mj_forward's — the count per env, and every contact (geoms, position, normal,
    distance) matched as sets to 1e-9. The contact budget sized below the count raises
    BudgetExceededError (never a silently shortened set)."""
    import warnings

    import polyphys
    from polyphys import morphs
    from polyphys.errors import BudgetExceededError, PolyphysWarning
    from polyphys.plugins.rigid.materials import Rigid

    path = tmp_path / "pile.xml"
    path.write_text(_pile_xml())
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    for _ in range(400):
        mujoco.mj_step(m, d)
    mujoco.mj_forward(m, d)
    n_bb = sum(1 for c in d.contact[:d.ncon] if c.geom1 > 0)

    def scene_at(max_contacts=None, envs=2):
        scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.005, precision="64"),
                               rigid=RigidOptions.mujoco(integrator="implicitfast", max_contacts=max_contacts))
        ent = scene.add_entity(morphs.MJCF(file=str(path)), Rigid())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PolyphysWarning)
            scene.build(n_envs=envs)
        ent.set_qpos(np.tile(d.qpos, (envs, 1)))
        ent.set_dofs_velocity(np.tile(d.qvel, (envs, 1)))
        scene.forward()
        return scene

    raw = scene_at().solver("rigid").get_raw_contacts()
    print(f"[measured] settled pile: MuJoCo {d.ncon} contacts ({n_bb} box-box), polyphys {raw['count'].tolist()}")
    assert n_bb > 50                                   # a heap: most contacts are between boxes
    np.testing.assert_array_equal(raw["count"], d.ncon)
    for e in range(2):
        k = int(raw["count"][e])
        ours = {"pos": raw["position"][e, :k], "normal": raw["normal"][e, :k], "depth": raw["penetration"][e, :k]}
        g = np.stack([raw["geom_a"][e, :k], raw["geom_b"][e, :k]], axis=1)
        for pair in {tuple(x) for x in g}:
            sel = np.all(g == pair, axis=1)
            theirs = [(float(c.dist), np.array(c.frame[:3]), np.array(c.pos), 0, 1) for c in d.contact[:d.ncon]
                      if (int(c.geom1), int(c.geom2)) == pair]
            _match({key: v[sel] for key, v in ours.items()}, theirs)
    short = scene_at(max_contacts=d.ncon - 1, envs=1)
    with pytest.raises(BudgetExceededError, match=f"max_contacts exceeded in env 0: {d.ncon} needed, budget {d.ncon - 1}"):
        short.step()                                   # the budget is checked after the step
