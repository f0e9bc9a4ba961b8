"""Heightfields (convex prisms per grid cell, MuJoCo's decomposition) and non-convex meshes
(convex decomposition with coacd at build): each convex piece is an internal mesh geom of the same
link, collided by the GJK/EPA path; contacts name the user's geom."""

import sys

import numpy as np
import pytest
from polyphys.description import Geom, MeshData, quat_to_mat
from polyphys.errors import OptionError, PolyphysWarning
from polyphys.layout import Partition
from polyphys.plugins.rigid import RigidOptions
from polyphys.plugins.rigid.collision import CollisionPipeline, set_poses_host

# GJK/EPA depth tolerance: 1e-4 × size stated in docs/collision.md; on polytope faces the measured
# error is ~1e-10 (test_collision_mesh.py), so flat-face comparisons use 1e-9.
FACE_TOL = 1e-9


def hfield(data, size, name="hf"):
    return Geom(name=name, type="hfield", link=-1, size=tuple(size[:3]),
                hfield={"size": tuple(size), "data": np.asarray(data, float)})


def _run(ground, other, poses, options=None, precision="64"):
    """ground: world geom 0; other: geom 1 on a free link; poses: (pos, quat wxyz) of geom 1."""
    opts = options or RigidOptions(max_contacts_per_pair=8, mujoco_compatible=True)
    p = CollisionPipeline([ground, other], [0, 1], [-1], [True], opts)
    n = len(poses)
    p.build(n, "cpu", precision)
    pos = np.array([[np.zeros(3), np.asarray(a[0], float)] for a in poses])
    quat = np.array([[[1.0, 0, 0, 0], np.asarray(a[1], float)] for a in poses])
    set_poses_host(p, pos, quat)
    p.run(Partition(0, 0, n))
    p.check()
    return p, p.contacts()


def _deepest(c, other=1):
    """Deepest contact: (depth, normal from the ground to geom ``other``). The stored normal
    points from geom B to geom A (A: the lower type code)."""
    k = int(np.argmax(c["depth"]))
    sign = 1.0 if c["geom_a"][k] == other else -1.0
    return c["depth"][k], sign * c["normal"][k]


SPHERE = Geom(name="s", type="sphere", link=0, size=(0.1, 0, 0))
BOX = Geom(name="b", type="box", link=0, size=(0.1, 0.07, 0.05))
PLANE = Geom(name="p", type="plane", link=-1, size=(0, 0, 1))


def _rand_quat(rng):
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def _incentre(rng):
    """The incentre of a random triangle of the flat test heightfield below (5 × 6 samples over
    [-1, 1] × [-1.2, 1.2]): inradius 0.14, so a box footprint of radius < 0.13 stays inside it."""
    x, y = np.linspace(-1, 1, 5), np.linspace(-1.2, 1.2, 6)
    r, c = rng.integers(0, 5), rng.integers(0, 4)
    tri = ([(c, r), (c + 1, r + 1), (c + 1, r)], [(c, r), (c, r + 1), (c + 1, r + 1)])[rng.integers(2)]
    P = np.array([[x[j], y[i]] for j, i in tri])
    w = np.array([np.linalg.norm(P[1] - P[2]), np.linalg.norm(P[2] - P[0]),
                  np.linalg.norm(P[0] - P[1])])
    return w @ P / w.sum()


@pytest.mark.parametrize("other", [SPHERE, BOX], ids=["sphere", "box"])
def test_flat_heightfield_equals_plane(other):
    """Sphere anywhere; box with its footprint inside one triangle (anywhere:
    test_face_manifold_on_flat_heightfield_equals_plane)."""
    rng = np.random.default_rng(0)
    poses = []
    for _ in range(16):
        if other.type == "box":      # random yaw, tilt up to 8 degrees
            yaw, tilt = rng.uniform(0, 2 * np.pi), rng.uniform(0, np.radians(8))
            ax = rng.normal(size=2)
            qz = np.array([np.cos(yaw / 2), 0, 0, np.sin(yaw / 2)])
            qt = np.concatenate([[np.cos(tilt / 2)], np.sin(tilt / 2) * np.append(
                ax / np.linalg.norm(ax), 0.0)])
            w1, v1, w2, v2 = qt[0], qt[1:], qz[0], qz[1:]
            q = np.concatenate([[w1 * w2 - v1 @ v2], w1 * v2 + w2 * v1 + np.cross(v1, v2)])
            xy = _incentre(rng)
        else:
            q = np.array([1.0, 0, 0, 0])
            xy = rng.uniform(-0.6, 0.6, size=2)
        R = quat_to_mat(q)
        reach = np.abs(R) @ np.array(other.size) if other.type == "box" else 0.1
        lowest = reach if other.type == "sphere" else reach[2]
        poses.append((np.array([xy[0], xy[1], lowest - rng.uniform(0.0, 0.02)]), q))
    flat = hfield(np.full((6, 5), 0.3), (1.0, 1.2, 0.5, 0.2))     # top at z = 0.15
    ph, ch = _run(flat, other, [(p + [0, 0, 0.15], q) for p, q in poses])
    _, cp = _run(PLANE, other, poses)
    assert ph.n_geoms == 2 + 2 * 5 * 4
    for a, b in zip(ch, cp):
        assert set(a["geom_a"]) | set(a["geom_b"]) == {0, 1}      # the user's geom indices
        da, na = _deepest(a)
        db, nb = _deepest(b)
        assert abs(da - db) <= FACE_TOL, (da, db)
        assert np.linalg.norm(na - nb) <= FACE_TOL * 10
        assert na[2] > 0


def test_sloped_heightfield_normal():
    rx, ry, ztop = 1.0, 1.0, 0.4
    nc = 5
    data = np.tile(np.linspace(0, 1, nc), (4, 1))                   # z = ztop (x + rx) / 2rx
    g = hfield(data, (rx, ry, ztop, 0.3))
    slope = ztop / (2 * rx)
    n = np.array([-slope, 0.0, 1.0]) / np.hypot(slope, 1.0)
    rng = np.random.default_rng(1)
    poses = []
    depths = []
    for _ in range(12):
        x, y = rng.uniform(-0.8, 0.8), rng.uniform(-0.7, 0.7)
        d = rng.uniform(0.001, 0.01)
        surf = np.array([x, y, ztop * (x + rx) / (2 * rx)])
        poses.append((surf + n * (0.1 - d), np.array([1.0, 0, 0, 0])))
        depths.append(d)
    _, cs = _run(g, SPHERE, poses)
    for c, d in zip(cs, depths):
        dd, nn = _deepest(c)
        assert abs(dd - d) <= FACE_TOL
        assert np.linalg.norm(nn - n) <= 1e-8


def _terrain(nr=6, nc=7, seed=3):
    rng = np.random.default_rng(seed)
    return rng.uniform(0, 1, size=(nr, nc)), (1.0, 0.8, 0.3, 0.2)


def _surface_tris(data, size):
    rx, ry, zt, _ = size
    nr, nc = data.shape
    x, y = np.linspace(-rx, rx, nc), np.linspace(-ry, ry, nr)
    P = lambda i, j: np.array([x[j], y[i], data[i, j] * zt])  # noqa: E731
    tris = []
    for r in range(nr - 1):
        for c in range(nc - 1):
            tris.append((P(r, c), P(r + 1, c + 1), P(r, c + 1)))
            tris.append((P(r, c), P(r + 1, c), P(r + 1, c + 1)))
    return tris


def _closest_on_tri(p, a, b, c):
    """Ericson 5.1.5."""
    ab, ac, ap = b - a, c - a, p - a
    d1, d2 = ab @ ap, ac @ ap
    if d1 <= 0 and d2 <= 0:
        return a
    bp = p - b
    d3, d4 = ab @ bp, ac @ bp
    if d3 >= 0 and d4 <= d3:
        return b
    vc = d1 * d4 - d3 * d2
    if vc <= 0 and d1 >= 0 and d3 <= 0:
        return a + d1 / (d1 - d3) * ab
    cp = p - c
    d5, d6 = ab @ cp, ac @ cp
    if d6 >= 0 and d5 <= d6:
        return c
    vb = d5 * d2 - d1 * d6
    if vb <= 0 and d2 >= 0 and d6 <= 0:
        return a + d2 / (d2 - d6) * ac
    va = d3 * d6 - d5 * d4
    if va <= 0 and d4 - d3 >= 0 and d5 - d6 >= 0:
        return b + (d4 - d3) / ((d4 - d3) + (d5 - d6)) * (c - b)
    den = 1.0 / (va + vb + vc)
    return a + ab * vb * den + ac * vc * den


def test_heightfield_vs_terrain_mesh_and_exact_distance():
    """Random sphere positions over a random terrain: the heightfield and the same terrain given
    as a closed triangle mesh (decomposed into the same prisms by the caller) agree, and where the
    closest surface point lies inside a triangle the deepest contact equals the exact penetration
    (radius − distance to the surface) with the surface normal there."""
    data, size = _terrain()
    g = hfield(data, size)
    rng = np.random.default_rng(4)
    tris = _surface_tris(data, size)
    poses, ref = [], []
    while len(poses) < 24:
        x, y = rng.uniform(-0.8, 0.8), rng.uniform(-0.6, 0.6)
        p = np.array([x, y, 0.0])
        # height of the surface under (x, y): closest point of the vertical line on the triangles
        best = None
        for t in tris:
            a, b, c = t
            n = np.cross(b - a, c - a)
            lam = np.linalg.solve(np.array([b - a, c - a, [0, 0, 1.0]]).T, p - a)
            if lam[0] >= -1e-12 and lam[1] >= -1e-12 and lam[0] + lam[1] <= 1 + 1e-12:
                best = (a + lam[0] * (b - a) + lam[1] * (c - a), n / np.linalg.norm(n))
        surf, n = best
        n = n if n[2] > 0 else -n
        centre = surf + n * (0.1 - rng.uniform(0.001, 0.02))
        q = [_closest_on_tri(centre, *t) for t in tris]
        dist = [np.linalg.norm(centre - x) for x in q]
        k = int(np.argmin(dist))
        poses.append((centre, np.array([1.0, 0, 0, 0])))
        ref.append((0.1 - dist[k], (centre - q[k]) / dist[k], np.sort(dist)[:2]))
    _, ch = _run(g, SPHERE, poses)
    # the same prisms given as mesh geoms of one body, each convex: no decomposition involved
    from polyphys.plugins.rigid.collision import _hfield_prisms

    prisms = _hfield_prisms(g)
    geoms = [Geom(name=f"m{i}", type="mesh", link=-1, mesh=MeshData(vertices=v, faces=np.zeros(
        (0, 3), dtype=np.int64))) for i, v in enumerate(prisms)] + [attrs_evolve(SPHERE)]
    pm = CollisionPipeline(geoms, [0] * len(prisms) + [1], [-1], [True],
                           RigidOptions(max_contacts_per_pair=8, mujoco_compatible=True))
    pm.build(len(poses), "cpu", "64")
    G = len(geoms)
    pos = np.zeros((len(poses), G, 3))
    quat = np.tile([1.0, 0, 0, 0], (len(poses), G, 1))
    pos[:, -1] = [p for p, _ in poses]
    set_poses_host(pm, pos, quat)
    pm.run(Partition(0, 0, len(poses)))
    pm.check()
    cm = pm.contacts()
    n_exact = 0
    for a, b, (d, nref, _) in zip(ch, cm, ref):
        da, na = _deepest(a)
        db, nb = _deepest(b, G - 1)
        # same prisms, vertices stored relative to another origin (rounding only): depth within the
        # polytope tolerance, normal within its square root (where the optimum is an edge the
        # EPA refinement's normal is flat to first order)
        assert abs(da - db) <= FACE_TOL and np.linalg.norm(na - nb) <= 1e-6
        # the deepest prism contact never exceeds the exact penetration (each prism is a subset of
        # the terrain solid; 1e-9: the GJK/EPA tolerance on polytopes)
        assert da <= d + FACE_TOL
        if abs(da - d) <= FACE_TOL:
            assert np.linalg.norm(na - nref) <= 1e-6
            n_exact += 1
    # every centre lies above the terrain (0.08-0.099 m over it), outside the solid: the terrain is
    # the union of the prisms, so its distance from the centre is the least prism distance, and the
    # deepest sphere-prism penetration r - min_i dist(c, prism_i) is the terrain's exact one at
    # every position, near internal edges too
    assert n_exact == len(poses), n_exact


def attrs_evolve(g, **kw):
    import attrs

    return attrs.evolve(g, link=0, **kw)


def _u_channel():
    """A U-shaped channel (non-convex): profile in x-z extruded over y in [-0.3, 0.3]; walls
    x in [-0.3, -0.2] and [0.2, 0.3] up to z = 0.4, floor z in [0, 0.1]."""
    P = [(-0.3, 0), (0.3, 0), (0.3, 0.4), (0.2, 0.4), (0.2, 0.1), (-0.2, 0.1), (-0.2, 0.4),
         (-0.3, 0.4)]
    caps = [(0, 5, 6), (0, 6, 7), (0, 1, 4), (0, 4, 5), (1, 2, 3), (1, 3, 4)]
    v = np.array([[x, y, z] for y in (-0.3, 0.3) for x, z in P])
    f = list(caps) + [(a + 8, b + 8, c + 8) for a, b, c in caps]
    for i in range(8):
        j = (i + 1) % 8
        f += [(i, j, j + 8), (i, j + 8, i + 8)]
    return v, np.array(f)


def test_non_convex_mesh_decomposed_with_coacd():
    """A small sphere in the hollow of a U channel touches the inner wall (decomposed), while the
    convex hull would swallow it."""
    pytest.importorskip("coacd")
    v, f = _u_channel()
    chan = Geom(name="u", type="mesh", link=-1, mesh=MeshData(vertices=v, faces=f))
    ball = Geom(name="s", type="sphere", link=0, size=(0.05, 0, 0))
    poses = [(np.array([0.17, 0.0, 0.25]), np.array([1.0, 0, 0, 0])),      # 0.02 into the wall
             (np.array([0.0, 0.05, 0.14]), np.array([1.0, 0, 0, 0])),      # 0.01 into the floor
             (np.array([0.0, 0.0, 0.25]), np.array([1.0, 0, 0, 0]))]       # free in the hollow
    p, c = _run(chan, ball, poses)
    assert len(p.decomposed[0]) >= 3
    # coacd's parts approximate the mesh within its concavity threshold (0.05 × size); on this
    # box-like channel the part faces lie within 3e-4 of the walls (measured; tolerance 1e-3)
    d0, n0 = _deepest(c[0])
    assert abs(d0 - 0.02) <= 1e-3 and np.linalg.norm(n0 - [-1, 0, 0]) <= 1e-2
    d1, n1 = _deepest(c[1])
    assert abs(d1 - 0.01) <= 1e-3 and np.linalg.norm(n1 - [0, 0, 1]) <= 1e-2
    assert len(c[2]["depth"]) == 0
    assert set(c[0]["geom_a"]) | set(c[0]["geom_b"]) == {0, 1}
    # the convex hull instead: the sphere in the hollow is deep inside
    _, ch = _run(chan, ball, poses, RigidOptions(max_contacts_per_pair=8,
                                                     mesh_decomposition="hull"))
    assert _deepest(ch[2])[0] > 0.1


def test_non_convex_mesh_without_coacd(monkeypatch):
    monkeypatch.setitem(sys.modules, "coacd", None)                   # import coacd -> ImportError
    v, f = _u_channel()
    chan = Geom(name="u", type="mesh", link=-1, mesh=MeshData(vertices=v, faces=f))
    with pytest.warns(PolyphysWarning, match="coacd is not installed"):
        p = CollisionPipeline([chan, SPHERE], [0, 1], [-1], [True], RigidOptions())
    assert p.n_geoms == 2 and not p.decomposed
    with pytest.raises(OptionError, match="mesh_decomposition = 'coacd'"):
        CollisionPipeline([chan, SPHERE], [0, 1], [-1], [True],
                          RigidOptions(mesh_decomposition="coacd"))


def test_heightfield_bad_data():
    with pytest.raises(OptionError, match="at least 2 x 2"):
        CollisionPipeline([hfield(np.zeros((1, 4)), (1, 1, 1, 1)), SPHERE], [0, 1], [-1], [True])
    with pytest.raises(OptionError, match="bottom"):
        CollisionPipeline([hfield(np.zeros((3, 4)), (1, 1, 1, 0.0)), SPHERE], [0, 1], [-1], [True])


def test_sphere_heightfield_against_mujoco():
    """A sphere on a sloped heightfield (rows equal, so the row order and the cell diagonal do not
    matter) against MuJoCo 4.0's sphere–hfield collision on the same MJCF hfield."""
    mujoco = pytest.importorskip("mujoco")
    nr, nc, size = 4, 6, (1.0, 0.8, 0.3, 0.2)
    data = np.tile(np.linspace(0, 1, nc), (nr, 1))
    elev = " ".join(repr(float(x)) for x in data.reshape(-1))
    sz = " ".join(map(repr, size))
    m = mujoco.MjModel.from_xml_string(
        f'<mujoco><asset><hfield name="h" nrow="{nr}" ncol="{nc}" size="{sz}" elevation="{elev}"/>'
        f'</asset><worldbody><geom type="hfield" hfield="h"/><body><freejoint/>'
        f'<geom type="sphere" size="0.1"/></body></worldbody></mujoco>')
    d = mujoco.MjData(m)
    g = hfield(data, size)
    slope = size[2] / (2 * size[0])
    n = np.array([-slope, 0.0, 1.0]) / np.hypot(slope, 1.0)
    rng = np.random.default_rng(7)
    poses = []
    for _ in range(12):
        x, y = rng.uniform(-0.7, 0.7), rng.uniform(-0.5, 0.5)
        surf = np.array([x, y, size[2] * (x + size[0]) / (2 * size[0])])
        poses.append((surf + n * (0.1 - rng.uniform(0.001, 0.02)), np.array([1.0, 0, 0, 0])))
    _, cs = _run(g, SPHERE, poses)
    for (p, q), c in zip(poses, cs):
        d.qpos[:] = np.concatenate([p, q])
        mujoco.mj_forward(m, d)
        assert d.ncon >= 1
        k = int(np.argmin(d.contact.dist[:d.ncon]))
        mj_depth = -d.contact.dist[k]
        mj_n = d.contact.frame[k, :3].copy()          # geom1 (hfield) -> geom2 (sphere)
        dd, nn = _deepest(c)
        # MuJoCo stores hfield data in float32 (relative 6e-8 of the 0.3 height span); measured
        # here: depth within 7e-9, normal within 1.3e-8
        assert abs(dd - mj_depth) <= 1e-7, (dd, mj_depth)
        assert np.linalg.norm(nn - mj_n) <= 1e-6, (nn, mj_n)
        # MuJoCo also reports the neighbour prism's tilted edge contact near a cell edge; the
        # internal-edge correction drops it (the slope is planar: only the face normal exists)
        assert 1 <= len(c["depth"]) <= d.ncon
        sgn = np.where(c["geom_a"] == 1, 1.0, -1.0)[:, None]
        assert np.abs(sgn * c["normal"] - n).max() <= 1e-12


_HF_XML = """<mujoco><asset><hfield name="h" nrow="3" ncol="4" size="1 1 0.1 0.2"
  elevation="0 0 0 0 0 0 0 0 0 0 0 0"/></asset>
<worldbody>{floor}<body pos="0.2 -0.25 0.3"><freejoint/><geom type="sphere" size="0.05" mass="1"/>
</body></worldbody></mujoco>"""


def _drop_sphere(tmp_path):
    """A sphere dropped from 0.25 m onto a flat MJCF hfield and onto a plane at the same height,
    1 s through the rigid solver (MJCF import → pieces → constraints): (link position,
    penetrations) per floor."""
    import warnings

    import polyphys
    from polyphys import morphs
    from polyphys.plugins.rigid import RigidOptions
    from polyphys.plugins.rigid.materials import Rigid

    res = {}
    for name, floor in (("hfield", '<geom type="hfield" hfield="h"/>'),
                        ("plane", '<geom type="plane" size="2 2 0.1"/>')):
        path = tmp_path / f"{name}.xml"
        path.write_text(_HF_XML.format(floor=floor))
        scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, precision="64"),
                               rigid=RigidOptions.mujoco())
        scene.add_entity(morphs.MJCF(file=str(path)), Rigid())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PolyphysWarning)
            scene.build(n_envs=0)
        for _ in range(100):
            scene.step()
        s = scene.solver("rigid")
        c = s.get_raw_contacts()
        res[name] = (s.data.link_pos.numpy()[0][1], c["penetration"][c["valid"]])
    return res


def test_sphere_rests_on_mjcf_heightfield_like_on_plane(tmp_path):
    res = _drop_sphere(tmp_path)
    (ph, dh), (pp, dp) = res["hfield"], res["plane"]
    assert len(dh) == len(dp) == 1
    # same contact model and the same +z normal at rest, but the sphere still rolls from the
    # sideways kick of the internal edge at impact (see the next test): measured 3e-8
    assert abs(dh[0] - dp[0]) <= 1e-6 and abs(ph[2] - pp[2]) <= 1e-6


def test_sphere_on_heightfield_does_not_drift(tmp_path):
    res = _drop_sphere(tmp_path)
    assert np.linalg.norm(res["hfield"][0][:2] - res["plane"][0][:2]) <= 1e-3


# -- internal-edge correction and face manifolds (kernels/collision_hfield.py) --------------------

def _flat_small():
    """7 x 9 samples over [-0.6, 0.6] x [-0.45, 0.45] (0.15 m cells) at z = 0.05."""
    return hfield(np.full((7, 9), 0.5), (0.6, 0.45, 0.1, 0.2))


@pytest.mark.parametrize("precision", ["64", "32"])
def test_sphere_anywhere_on_flat_heightfield_gets_plane_contacts(precision):
    """Sphere centres over faces, near diagonals, on grid lines and at grid vertices, up to 0.03
    deep (r = 0.05), and 8 more 0.05-0.09 deep (centre below the surface): every contact is
    vertical and on the line through the centre (no torque), and the deepest equals the plane's
    penetration (float64: exactly; float32: to its rounding of the 0.6 m coordinates, 1e-6)."""
    tol = 1e-12 if precision == "64" else 1e-6
    rng = np.random.default_rng(11)
    xs = np.linspace(-0.6, 0.6, 9)
    ys = np.linspace(-0.45, 0.45, 7)
    S = Geom(name="s", type="sphere", link=0, size=(0.05, 0, 0))
    poses, deps = [], []
    for k in range(24):
        if k < 8:               # on a grid vertex (+ tiny offset), 6 prisms share it
            xy = np.array([xs[rng.integers(1, 8)], ys[rng.integers(1, 6)]]) + rng.normal(size=2) * 1e-4
        elif k < 16:            # near a cell diagonal
            c, r = rng.integers(1, 7), rng.integers(1, 5)
            t = rng.uniform(0.2, 0.8)
            xy = np.array([xs[c] + t * 0.15, ys[r] + t * 0.15]) + rng.normal(size=2) * 0.01
        else:
            xy = rng.uniform([-0.45, -0.3], [0.45, 0.3])
        d = rng.uniform(0.001, 0.03)
        poses.append((np.array([xy[0], xy[1], 0.05 + 0.05 - d]), np.array([1.0, 0, 0, 0])))
        deps.append(d)
    # deeper than the radius (the centre below the surface: a prism's minimum translation leaves
    # through a side wall, a horizontal normal before the correction)
    for d in np.random.default_rng(5).uniform(0.05, 0.09, 8):
        xy = rng.uniform([-0.4, -0.3], [0.4, 0.3])
        poses.append((np.array([xy[0], xy[1], 0.1 - d]), np.array([1.0, 0, 0, 0])))
        deps.append(d)
    _, cs = _run(_flat_small(), S, poses, precision=precision)
    for (p, _), c, d in zip(poses, cs, deps):
        sgn = np.where(c["geom_a"] == 1, 1.0, -1.0)[:, None]
        n = sgn * c["normal"]
        assert len(n) >= 1 and np.abs(n - [0, 0, 1]).max() <= tol
        assert np.abs(c["pos"][:, :2] - p[:2]).max() <= tol
        assert abs(c["depth"].max() - d) <= tol


@pytest.mark.parametrize("shape", ["box", "capsule", "cylinder"])
def test_face_manifold_on_flat_heightfield_equals_plane(shape):
    """A box (random yaw, tilt up to 8°), capsule (lying, tilted up to 8°) or cylinder (standing
    or lying, tilted up to 8°) anywhere on a flat heightfield with cells smaller than it: the
    contact set is the plane's — the box corners / capsule ends / cylinder rim or generator
    points within the margin, vertical, same depths (1e-12); a standing cylinder also gets the
    rim point opposite the deepest (its square of rim points; plane–cylinder takes the far cap's
    point instead, above the plane here). Before the face manifold each touched prism gave one
    GJK/EPA point; the clipped vertices on the flat internal edges are dropped (artefacts of the
    partition), so nothing else remains."""
    rng = np.random.default_rng(12)
    geom = {"box": Geom(name="b", type="box", link=0, size=(0.2, 0.12, 0.05)),
            "capsule": Geom(name="c", type="capsule", link=0, size=(0.04, 0.2, 0)),
            "cylinder": Geom(name="y", type="cylinder", link=0, size=(0.06, 0.1, 0))}[shape]
    poses = []
    for i in range(12):
        yaw, tilt = rng.uniform(0, 2 * np.pi), rng.uniform(0, np.radians(8))
        if shape == "capsule" or (shape == "cylinder" and i % 2):   # axis horizontal, tilted
            base = np.array([np.cos(np.pi / 4), 0, np.sin(np.pi / 4), 0])
        else:
            base = np.array([1.0, 0, 0, 0])
        qz = np.array([np.cos(yaw / 2), 0, 0, np.sin(yaw / 2)])
        ax = rng.normal(size=2)
        qt = np.concatenate([[np.cos(tilt / 2)], np.sin(tilt / 2) * np.append(ax / np.linalg.norm(ax), 0)])

        def mul(a, b):
            return np.concatenate([[a[0] * b[0] - a[1:] @ b[1:]],
                                   a[0] * b[1:] + b[0] * a[1:] + np.cross(a[1:], b[1:])])

        q = mul(qt, mul(qz, base))
        R = quat_to_mat(q)
        if shape == "box":
            low = (np.abs(R) @ np.array(geom.size))[2]
        elif shape == "capsule":
            low = 0.04 + abs(R[2, 2]) * 0.2
        else:                           # cylinder: half length along z, rim radius across
            low = abs(R[2, 2]) * 0.1 + np.sqrt(max(0.0, 1 - R[2, 2] ** 2)) * 0.06
        xy = rng.uniform([-0.3, -0.2], [0.3, 0.2])
        poses.append((np.array([xy[0], xy[1], low - rng.uniform(0.001, 0.01)]), q))
    _, ch = _run(_flat_small(), geom, [(p + [0, 0, 0.05], q) for p, q in poses])
    _, cp = _run(PLANE, geom, poses)
    for a, b in zip(ch, cp):
        sgn = np.where(a["geom_a"] == 1, 1.0, -1.0)[:, None]
        assert np.abs(sgn * a["normal"] - [0, 0, 1]).max() <= 1e-12
        np.testing.assert_allclose(a["pos"][:, 2], 0.05 - a["depth"] / 2, rtol=0, atol=1e-12)
        extra = 1 if shape == "cylinder" and len(a["depth"]) == 4 else 0
        assert len(a["depth"]) == len(b["depth"]) + extra >= 1
        for p, d in zip(b["pos"], b["depth"]):
            k = np.argmin(np.linalg.norm(a["pos"][:, :2] - p[:2], axis=1))
            assert np.linalg.norm(a["pos"][k, :2] - p[:2]) <= 1e-12 and abs(a["depth"][k] - d) <= 1e-12


def test_convex_ridge_keeps_edge_normal():
    """A roof: z = 0.2 (1 - |x|) over x in [-1, 1] (ridge along y at x = 0, 5 columns). A sphere
    above the ridge touches its edge: the correction must keep the edge normal (the ridge is a
    real convex edge, its normal cone spans both roof faces): normal = (centre - ridge point)/|…|,
    depth = r - distance to the ridge line. Beside the ridge over a face: the face normal."""
    data = np.tile(1 - np.abs(np.linspace(-1, 1, 5)), (4, 1))
    roof = hfield(data, (1.0, 0.6, 0.2, 0.2))
    S = Geom(name="s", type="sphere", link=0, size=(0.05, 0, 0))
    poses, ref = [], []
    for x, z in ((0.0, 0.245), (0.003, 0.243), (-0.004, 0.246)):
        p = np.array([x, 0.1, z])
        poses.append((p, np.array([1.0, 0, 0, 0])))
        v = p - [0, 0.1, 0.2]
        ref.append((0.05 - np.linalg.norm(v), v / np.linalg.norm(v)))
    face_n = np.array([0.2, 0, 1.0]) / np.hypot(0.2, 1.0)        # x > 0 side: dz/dx = -0.2
    surf = np.array([0.3, 0.1, 0.2 * 0.7])
    poses.append((surf + face_n * 0.045, np.array([1.0, 0, 0, 0])))
    ref.append((0.005, face_n))
    _, cs = _run(roof, S, poses)
    for c, (d, n) in zip(cs, ref):
        dd, nn = _deepest(c)
        assert abs(dd - d) <= FACE_TOL and np.linalg.norm(nn - n) <= 1e-6, (dd, d, nn, n)


def test_box_flush_on_roof_face_keeps_ridge_points():
    """A box lying flush on one face of a roof (z = 0.2 (1 - |x|)), 4 mm deep, overhanging the
    ridge by 0.1 m: its contact region is the part of its face over that roof face, so the
    manifold has the two corners on the face and the two points where the box face crosses the
    ridge (a convex edge: kept, unlike a flat edge's); a prism across the ridge may add a single
    corrected point. Every normal is in the ridge's cone (the arc between the two face normals)
    and no depth exceeds the 4 mm."""
    data = np.tile(1 - np.abs(np.linspace(-1, 1, 5)), (4, 1))
    roof = hfield(data, (1.0, 0.6, 0.2, 0.2))
    box = Geom(name="b", type="box", link=0, size=(0.2, 0.1, 0.05))
    al = np.arctan(0.2)
    nl = np.array([-np.sin(al), 0, np.cos(al)])                  # the x < 0 face
    nr = np.array([np.sin(al), 0, np.cos(al)])
    q = np.array([np.cos(-al / 2), 0, np.sin(-al / 2), 0])       # bottom face parallel to it
    d = 0.004
    c = _run(roof, box, [(np.array([-0.1, 0.05, 0.18]) + nl * (0.05 - d), q)])[1][0]
    n = np.where(c["geom_a"] == 1, 1.0, -1.0)[:, None] * c["normal"]
    # the manifold of the x < 0 prisms: the corners at -0.2 along the face and the points where
    # the box face crosses x = 0 (the ridge's column boundary), at y = 0.05 ± 0.1, depth d, nl
    u = np.array([np.cos(al), 0, np.sin(al)])                    # up the left face
    base = np.array([-0.1, 0.05, 0.18]) - nl * d                # centre of the box face
    body = c["pos"] - n * (c["depth"][:, None] / 2)              # the points on the box face
    for a in (-0.2, -base[0] / u[0]):                          # corner; where x = 0
        for y in (-0.05, 0.15):
            want = base + a * u + np.array([0, y - 0.05, 0])
            k = np.argmin(np.linalg.norm(body - want, axis=1))
            assert np.linalg.norm(body[k] - want) <= 1e-9, (a, y, body)
            assert np.linalg.norm(n[k] - nl) <= 1e-12 and abs(c["depth"][k] - d) <= 1e-12
    # every contact's normal lies in the ridge arc, and none is deeper
    for m in n:
        assert abs(m[1]) <= 1e-12 and np.cross(nl, m)[1] >= -1e-12 and np.cross(m, nr)[1] >= -1e-12
    assert c["depth"].max() <= d + 1e-12
