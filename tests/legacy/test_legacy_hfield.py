"""Heightfield geoms couple through the Legacy coupler (terrain under MPM sand, PBD, SPH particles).

A heightfield is the solid below its triangulated surface (every cell cut along its (r, c)-(r+1,
c+1) diagonal, as MuJoCo and the rigid collision do) down to its base z = -size[3].
``polyphys.kernels.sdf.sdf_hfield`` returns the distance to the closest point of the surface
triangles of the cells within a horizontal ``reach`` of the query point, combined with the
footprint walls and base: exact wherever |d| <= reach (the closest surface point then lies within
reach horizontally), and |d| > reach beyond it. Checked here against a brute-force exact distance
to the closed triangulated solid; then coupled: particles on a flat heightfield respond exactly as
on the equivalent box (docs/semantics.md §C1), rest on it like on the box, and slide down a sloped heightfield
with coup_friction 0 (held with a high value).
"""

import numpy as np
import polyphys
import pytest
import trimesh
from polyphys import SimOptions, morphs
from polyphys.errors import OptionError

# -- exact reference: brute-force distance to the closed triangulated solid (float64) ---------------


def _solid_triangles(z, rx, ry, zb):
    """Top triangles (MuJoCo's split), the four walls down to the base, the base."""
    nr, nc = z.shape
    x, y = np.linspace(-rx, rx, nc), np.linspace(-ry, ry, nr)

    def top(r, c):
        return (x[c], y[r], z[r, c])

    def bot(r, c):
        return (x[c], y[r], -zb)

    t = []
    for r in range(nr - 1):
        for c in range(nc - 1):
            t.append((top(r, c), top(r, c + 1), top(r + 1, c + 1)))
            t.append((top(r, c), top(r + 1, c + 1), top(r + 1, c)))
    ring = ([(0, c) for c in range(nc)] + [(r, nc - 1) for r in range(1, nr)]
            + [(nr - 1, c) for c in range(nc - 2, -1, -1)] + [(r, 0) for r in range(nr - 2, -1, -1)])
    for a, b in zip(ring[:-1], ring[1:]):
        t.append((top(*a), bot(*a), bot(*b)))
        t.append((top(*a), bot(*b), top(*b)))
    t.append((bot(0, 0), bot(nr - 1, 0), bot(nr - 1, nc - 1)))
    t.append((bot(0, 0), bot(nr - 1, nc - 1), bot(0, nc - 1)))
    return np.asarray(t, float)


def _surface_height(z, rx, ry, px, py):
    nr, nc = z.shape
    u, v = (px + rx) / (2 * rx / (nc - 1)), (py + ry) / (2 * ry / (nr - 1))
    c, r = np.clip(np.floor(u).astype(int), 0, nc - 2), np.clip(np.floor(v).astype(int), 0, nr - 2)
    fu, fv = u - c, v - r
    z00, z01, z10, z11 = z[r, c], z[r, c + 1], z[r + 1, c], z[r + 1, c + 1]
    return np.where(fu >= fv, z00 + fu * (z01 - z00) + fv * (z11 - z01), z00 + fv * (z10 - z00) + fu * (z11 - z10))


def _exact_sdf(z, rx, ry, zb, pts):
    tris = _solid_triangles(z, rx, ry, zb)
    best = np.full(len(pts), np.inf)
    for tri in tris:
        q = trimesh.triangles.closest_point(np.repeat(tri[None], len(pts), 0), pts)
        best = np.minimum(best, np.linalg.norm(pts - q, axis=1))
    inside = ((np.abs(pts[:, 0]) <= rx) & (np.abs(pts[:, 1]) <= ry) & (pts[:, 2] >= -zb)
              & (pts[:, 2] <= _surface_height(z, rx, ry, pts[:, 0], pts[:, 1])))
    return np.where(inside, -best, best)


RX, RY, ZB, NR, NC = 0.5, 0.4, 0.2, 9, 11
_X, _Y = np.meshgrid(np.linspace(-RX, RX, NC), np.linspace(-RY, RY, NR))
TERRAINS = {"flat": np.zeros((NR, NC)),
            "slope": 0.3 * (_X + RX),                                      # 16.7° planar slope
            "bumpy": 0.05 * np.sin(7 * _X) * np.cos(5 * _Y) + 0.05}        # ridges, valleys, saddles


@pytest.mark.parametrize("name", list(TERRAINS))
def test_hfield_sdf_matches_the_exact_distance(name):
    """2000 random points around and inside a 1.0 × 0.8 m heightfield (0.1 m cells, base 0.2 m),
    also beside and below it. Within reach (0.1 m here) the SDF equals the exact distance to the
    triangulated solid to float32 (bound 1e-6 m: ~10 ε32 at coordinates ≤ 1 m; measured 9e-8 on
    all three); beyond reach |d| > reach with the right sign. Normals vs central differences of
    the exact distance where that is differentiable (|∇| = 1): measured 2e-6."""
    from polyphys.sdf_grid import pack_height_fields, query_height_fields

    z = TERRAINS[name]
    reach = 0.1
    hf = pack_height_fields([None, (z, (RX, RY, ZB))], reach=reach, device="cpu")
    assert hf.geom.numpy().tolist() == [-1, 0]
    pts = np.random.default_rng(1).uniform((-0.7, -0.6, -0.4), (0.7, 0.6, 0.6), (2000, 3))
    d, n = query_height_fields(hf, 0, pts)
    ex = _exact_sdf(z, RX, RY, ZB, pts)
    near = np.abs(ex) <= reach
    assert near.sum() > 400 and (~near).sum() > 400
    assert np.abs(d[near] - ex[near]).max() <= 1e-6
    assert (np.abs(d[~near]) > reach - 1e-6).all()
    assert (np.sign(d) == np.sign(ex)).all()
    np.testing.assert_allclose(np.linalg.norm(n, axis=1), 1.0, atol=1e-5)
    sel = near & (np.abs(ex) > 1e-3)
    e = 1e-5
    g = np.stack([(_exact_sdf(z, RX, RY, ZB, pts[sel] + e * ax) - _exact_sdf(z, RX, RY, ZB, pts[sel] - e * ax)) / (2 * e)
                  for ax in np.eye(3)], 1)
    smooth = np.abs(np.linalg.norm(g, axis=1) - 1.0) < 1e-4        # not straddling a kink of the SDF
    assert smooth.sum() > 0.9 * sel.sum()
    assert np.abs(n[sel][smooth] - g[smooth]).max() <= 1e-4
    if name == "slope":
        # why not the vertical distance: above the slope it overstates the distance by 1/cos θ
        vert = pts[:, 2] - _surface_height(z, RX, RY, pts[:, 0], pts[:, 1])
        top = near & (np.abs(pts[:, 0]) < 0.3) & (np.abs(pts[:, 1]) < 0.2) & (vert > 0.01)
        assert top.sum() >= 10
        vert = vert[top]
        np.testing.assert_allclose(d[top], vert * np.cos(np.arctan(0.3)), rtol=1e-5)


def test_hfield_heights_input_errors():
    from polyphys.sdf_grid import hfield_heights, pack_height_fields

    assert hfield_heights(None) is None and hfield_heights({"size": (1, 1, 1, 1)}) is None
    z, ext = hfield_heights({"size": (0.5, 0.4, 0.2, 0.1), "data": np.array([[0.0, 1.0], [0.5, 0.25]])})
    np.testing.assert_allclose(z, [[0.0, 0.2], [0.1, 0.05]])
    assert ext == (0.5, 0.4, 0.1)
    with pytest.raises(OptionError, match="geom 'g': heightfield data has shape \\(1, 3\\); needs at least 2 x 2"):
        hfield_heights({"size": (1, 1, 1, 1), "data": np.zeros((1, 3))}, "geom 'g'")
    with pytest.raises(OptionError, match="bottom size\\[3\\] = -0.5: the base z = 0.5 must lie below"):
        hfield_heights({"size": (1, 1, 1, -0.5), "data": np.zeros((2, 2))})
    with pytest.raises(OptionError, match="size \\(rx, ry\\) = \\(0.0, 1.0\\)"):
        hfield_heights({"size": (0, 1, 1, 1), "data": np.zeros((2, 2))})
    # reach: at least one cell, at most MAX_REACH_CELLS cells
    hf = pack_height_fields([(np.zeros((3, 5)), (1.0, 1.0, 0.1))] * 2, reach=[0.0, 100.0], device="cpu")
    np.testing.assert_allclose(hf.reach.numpy(), [0.5, 4.0])


# -- coupled --------------------------------------------------------------------------------------


def _ballistic():
    return pytest.importorskip("polyphys_ballistic")


def _hfield_mjcf(tmp_path, data, rx, ry, ztop, zb, pos, name="terrain"):
    """A world-body hfield geom; elevation rows as the XML lists them (+y row first)."""
    rows = np.asarray(data, float)[::-1]
    elev = " ".join(repr(float(v)) for v in rows.reshape(-1))
    nr, nc = rows.shape
    path = tmp_path / f"{name}.xml"
    path.write_text(f'<mujoco><asset><hfield name="h" nrow="{nr}" ncol="{nc}" size="{rx} {ry} {ztop} {zb}" '
                    f'elevation="{elev}"/></asset><worldbody><geom name="hf" type="hfield" hfield="h" '
                    f'pos="{pos[0]} {pos[1]} {pos[2]}"/></worldbody></mujoco>')
    return morphs.MJCF(file=str(path))


def _scene(body, material, particles, vel, gravity=(0.0, 0.0, 0.0), substeps=1, extra=None):
    from polyphys_ballistic.options import BallisticOptions

    sc = polyphys.Scene(sim=SimOptions(dt=0.01, substeps=substeps, gravity=gravity),
                        ballistic=BallisticOptions(particle_size=0.01, ground_height=-10.0), **(extra or {}))
    sc.add_entity(body, material=material)
    part = sc.add_entity(particles, material=polyphys.materials.Ballistic())
    sc.build()
    part.set_vel(np.tile(vel, (part.get_vel().shape[0], 1)))
    return sc, part


@pytest.mark.parametrize("face", ["top", "wall"])
@pytest.mark.parametrize("mu, e", [(0.3, 0.5), (0.0, 1.0), (2.0, 0.0)])
def test_spec_c1_on_a_flat_hfield_equals_the_box(tmp_path, mu, e, face):
    """A particle 1 mm under a flat heightfield's surface (weight 1), 13/27 mm off a cell corner, or
    1 mm inside its +x wall 5 cm under the surface: the same response as at the top face or the
    side face of the equivalent box (the same footprint, from the surface down to the base), bit
    for bit — and v_n' = −e·v_n, |v_t'| = max(0, |v_t| + μ·v_n)."""
    _ballistic()
    out = []
    terrain = _hfield_mjcf(tmp_path, np.zeros((5, 5)), 0.5, 0.5, 0.1, 0.2, (0, 0, 1.0))
    pos, v, n = {"top": ((0.013, 0.027, 0.999), (0.7, -0.2, -1.5), 2),
                 "wall": ((0.499, 0.027, 0.95), (-1.5, 0.2, 0.7), 0)}[face]
    for body in (morphs.Box(size=(1.0, 1.0, 0.2), pos=(0, 0, 0.9)), terrain):
        sc, part = _scene(body, polyphys.materials.Kinematic(coup_friction=mu, coup_restitution=e),
                          morphs.Box(size=(0.01, 0.01, 0.01), pos=pos), v)
        sc.step()
        out.append(part.get_vel()[0])
    assert sc.couplers[0].height_fields().geom.numpy().tolist() == [0]
    np.testing.assert_array_equal(out[1], out[0])
    v = np.array(v)
    vt = np.delete(v, n)
    want = np.insert(vt * max(0.0, np.linalg.norm(vt) + mu * v[n]) / np.linalg.norm(vt), n, -e * v[n])
    np.testing.assert_allclose(out[1], want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("side", ["kinematic", "rigid"])
def test_particles_rest_on_a_flat_hfield_like_on_the_box(tmp_path, side):
    """A 5 × 5 × 3 block of particles (1 cm apart) dropped 5 cm under gravity (e = 0, μ = 0.3) onto
    a flat heightfield (0.1 m cells; the block spans cell edges and diagonals) and onto the
    equivalent box, on the kinematic and on the rigid (fixed terrain) side: after 0.5 s the
    particles lie where they lie on the box (measured: identical) and have stopped, the lowest
    layer within one particle spacing of the surface (the Legacy response stops approaching
    carriers inside the influence band: d <= softness·ln 10 = 4.6 mm)."""
    _ballistic()
    if side == "rigid":
        pytest.importorskip("polyphys.plugins.rigid")
        from polyphys.plugins.rigid.materials import Rigid
        mat = Rigid(coup_friction=0.3, coup_restitution=0.0)
        box = morphs.Box(size=(1.0, 1.0, 0.2), pos=(0, 0, 0.9), fixed=True)
    else:
        mat = polyphys.materials.Kinematic(coup_friction=0.3, coup_restitution=0.0)
        box = morphs.Box(size=(1.0, 1.0, 0.2), pos=(0, 0, 0.9))
    terrain = _hfield_mjcf(tmp_path, np.zeros((11, 11)), 0.5, 0.5, 0.1, 0.2, (0, 0, 1.0))
    res = []
    for body in (box, terrain):
        sc, part = _scene(body, mat, morphs.Box(size=(0.05, 0.05, 0.03), pos=(0.1, -0.1, 1.07)),
                          (0.2, 0.0, 0.0), gravity=(0, 0, -9.81), substeps=4)
        for _ in range(50):
            sc.step()
        res.append((part.get_pos(), part.get_vel()))
    (x0, v0), (x1, v1) = res
    np.testing.assert_allclose(x1, x0, atol=1e-6)
    np.testing.assert_allclose(v1, v0, atol=1e-6)
    low = x1[:, 2].min()
    assert 1.0 - 1e-3 < low < 1.0 + 0.01, low
    assert np.abs(v1[:, 2]).max() < 0.05                 # resting: only this substep's g·h left


@pytest.mark.parametrize("mu, slides", [(0.0, True), (2.0, False)])
def test_particle_slides_down_a_sloped_hfield_without_friction(tmp_path, mu, slides):
    """A planar 30° heightfield slope (9 × 6 samples, rises along x): a particle placed on it (in a
    cell's interior, 1 mm from the surface) under gravity slides down g·sinθ·t²/2 with μ = 0 (the
    response removes only the normal part of g·h; it crosses cell edges and diagonals, where the
    coplanar triangles give the same normal) and is held by μ = 2 > tan 30°."""
    _ballistic()
    th = np.radians(30.0)
    rx, nc = 0.5, 9
    ztop = 2 * rx * np.tan(th)
    data = np.tile(np.linspace(0.0, 1.0, nc), (6, 1))
    terrain = _hfield_mjcf(tmp_path, data, rx, 0.5, ztop, 0.2, (0, 0, 1.0))
    n = np.array([-np.sin(th), 0.0, np.cos(th)])          # up the slope is +x
    x0 = 0.3
    p0 = np.array([x0, 0.013, 1.0 + ztop * (x0 + rx) / (2 * rx)]) + n * 1e-3
    sc, part = _scene(terrain, polyphys.materials.Kinematic(coup_friction=mu, coup_restitution=0.0),
                      morphs.Box(size=(0.01, 0.01, 0.01), pos=tuple(p0)), (0.0, 0.0, 0.0),
                      gravity=(0, 0, -9.81), substeps=4)
    for _ in range(20):
        sc.step()
    disp = part.get_pos()[0] - p0
    along = disp - n * np.dot(disp, n)
    t = 0.2
    if slides:
        # symplectic Euler of g·sinθ: within a few % of the continuous g·sinθ·t²/2
        assert np.linalg.norm(along) == pytest.approx(9.81 * np.sin(th) * t * t / 2, rel=0.05)
        assert along[0] < 0 and abs(along[1]) < 1e-5            # straight down the slope
    else:
        assert np.linalg.norm(along) < 1e-3
    assert abs(np.dot(disp, n)) < 2e-3                          # neither sinks in nor flies off


def test_mpm_block_rests_on_a_flat_hfield_like_on_the_box(tmp_path):
    """An elastic MPM block (0.16 × 0.16 × 0.08 m, grid 32/m: the carriers are grid nodes) dropped
    2 cm onto a fixed flat rigid heightfield (0.6 × 0.6 m, 0.05 m cells, base 0.1 m) and onto the
    equivalent fixed box: over 0.1 s after 0.3 s of settling the block's mean height agrees within
    one MPM grid cell and the coupling impulse on the terrain within 3 % (the bounds of mesh bodies
    in test_legacy_mesh.py), both near the block's weight. Measured: equal to the last bit (the
    flat heightfield's SDF equals the box's in the face interiors, and walls and base are out of
    reach of the block), weight carried 0.998."""
    pytest.importorskip("polyphys.plugins.mpm.options")
    pytest.importorskip("polyphys.plugins.rigid")
    from polyphys.plugins.mpm.options import MPMOptions
    from polyphys.plugins.rigid.materials import Rigid

    g, dt, settle, window, dx = 9.81, 2e-3, 150, 50, 1.0 / 32
    bodies = (morphs.Box(size=(0.6, 0.6, 0.1), pos=(0, 0, 0.1), fixed=True),
              _hfield_mjcf(tmp_path, np.zeros((13, 13)), 0.3, 0.3, 0.1, 0.1, (0, 0, 0.15)))
    res = []
    for body in bodies:
        # E = 1e5, rho = 1000: c ≈ 10.5 m/s, CFL 0.5·dx/c ≈ 1.5e-3 s ≫ h = 2.5e-4 s
        sc = polyphys.Scene(sim=SimOptions(dt=dt, substeps=8, gravity=(0, 0, -g)),
                            mpm=MPMOptions(lower_bound=(-0.3125, -0.3125, 0.0), upper_bound=(0.3125, 0.3125, 0.5),
                                           grid_density=1.0 / dx))
        sc.add_entity(body, Rigid(rho=300.0))
        blob = sc.add_entity(morphs.Box(size=(0.16, 0.16, 0.08), pos=(0.013, -0.027, 0.21)),
                             polyphys.materials.MPM.Elastic(E=1e5))
        sc.build()
        impulse, heights = 0.0, []
        for i in range(settle + window):
            sc.step()
            if i >= settle:
                impulse += float(np.asarray(sc.couplers[0].get_coupling_wrench()["impulse"]).reshape(-1, 3)[0, 2])
                heights.append(blob.get_particles_pos()[:, 2].mean())
        res.append((np.mean(heights), -impulse / (window * dt) / (blob.get_mass() * g)))
    (z0, f0), (z1, f1) = res
    assert sc.couplers[0].height_fields().geom.numpy().tolist() == [0]
    assert abs(f0 - 1.0) < 0.1 and abs(f1 - 1.0) < 0.1, (f0, f1)
    assert abs(z1 - z0) < dx, (z0, z1)
    assert abs(f1 / f0 - 1.0) < 0.03, (f0, f1)


def test_mpm_sand_slides_down_a_sloped_hfield_without_friction_and_is_held_with(tmp_path):
    """A sand block (0.1 × 0.1 × 0.06 m, Drucker–Prager φ = 35°, grid 32/m) dropped 3.5 cm onto a
    fixed rigid 20° heightfield slope (7 × 5 samples, 0.1 m cells). coup_friction 0: the terrain
    pushes only along its normal, so the sand's mean velocity along the slope grows at g·sinθ
    (between 0.1 and 0.3 s, after landing, before its front leaves the terrain: measured 3.3555 vs
    3.3552 m/s², bound 2 %). coup_friction 2: the base nodes lose their tangential velocity; after
    the block has collapsed to its repose shape it moves 6 mm from 0.2 to 0.4 s (μ = 0: 0.13 m
    from 0.1 to 0.3 s) and creeps at 0.016 m/s (bounds 5 % of the frictionless distance, 0.03 m/s)."""
    pytest.importorskip("polyphys.plugins.mpm.options")
    pytest.importorskip("polyphys.plugins.rigid")
    from polyphys.plugins.mpm.options import MPMOptions
    from polyphys.plugins.rigid.materials import Rigid

    g, dt, dx = 9.81, 2e-3, 1.0 / 32
    th, rx, z0, xc = np.radians(20.0), 0.3, 0.1, 0.12
    ztop = 2 * rx * np.tan(th)
    down = np.array([-np.cos(th), 0.0, -np.sin(th)])
    res = {}
    for mu in (0.0, 2.0):
        # E = 3.5e5, rho = 2200: c ≈ 15 m/s, CFL 0.5·dx/c ≈ 1e-3 s ≫ h = 2.5e-4 s; the domain's
        # walls stay clear of the spreading sand; bounds a whole number of cells apart (walls on them)
        sc = polyphys.Scene(sim=SimOptions(dt=dt, substeps=8, gravity=(0, 0, -g)),
                            mpm=MPMOptions(lower_bound=(-0.55, -0.34375, 0.0), upper_bound=(0.45, 0.34375, 0.59375),
                                           grid_density=1.0 / dx))
        terrain = _hfield_mjcf(tmp_path, np.tile(np.linspace(0.0, 1.0, 7), (5, 1)), rx, 0.25, ztop, 0.1,
                               (0, 0, z0), name=f"slope{mu}")
        sc.add_entity(terrain, Rigid(coup_friction=mu, coup_restitution=0.0))
        zs = z0 + ztop * (xc + 0.05 + rx) / (2 * rx) + 0.035           # 3.5 cm above its upper edge
        blob = sc.add_entity(morphs.Box(size=(0.1, 0.1, 0.06), pos=(xc, 0.0, zs)), polyphys.materials.MPM.Sand())
        sc.build()
        rec = {}
        for i in range(1, 201 if mu else 151):
            sc.step()
            if i in (50, 100, 150, 200):
                rec[i] = (blob.get_particles_pos().mean(0) @ down, blob.get_particles_vel().mean(0) @ down)
        res[mu] = rec
    a = (res[0.0][150][1] - res[0.0][50][1]) / (100 * dt)
    assert a == pytest.approx(g * np.sin(th), rel=0.02)
    slid = res[0.0][150][0] - res[0.0][50][0]                 # 0.2 s each
    held = res[2.0][200][0] - res[2.0][100][0]
    assert slid > 0.1 and abs(held) < 0.05 * slid, (slid, held)
    assert abs(res[2.0][200][1]) < 0.03
