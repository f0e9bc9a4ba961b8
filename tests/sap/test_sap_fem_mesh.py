"""Rigid mesh and heightfield geoms against FEM vertices in the SAP coupler (docs/sap.md, "Rigid–FEM
contact"): a mesh geom's φ and normal come from the grid SDF the coupler builds at build time
(polyphys.sdf_grid: exact where the SDF is linear over a grid cell, within (√3/2)·h elsewhere, h the
grid spacing), a heightfield's from the closest point on its surface triangles near the vertex.

Scenes at generic poses (floors off the origin and yawed or flipped, bodies yawed, non-unit sizes);
tolerances derived from the physics as in test_sap_fem.py.
"""

from __future__ import annotations

import attrs
import numpy as np
import polyphys
import pytest
from polyphys import morphs as M
from polyphys.couplers.sap.options import SapOptions
from polyphys.errors import CapabilityError
from polyphys.options import SimOptions
from polyphys.plugins.rigid.materials import Rigid
from polyphys.sdf_grid import interpolation_bound, query_sdf_grids

trimesh = pytest.importorskip("trimesh")
fem = pytest.importorskip("polyphys.plugins.fem")
from polyphys.plugins.fem import FEMOptions  # noqa: E402
from polyphys.plugins.fem.materials import Elastic  # noqa: E402

G = 9.81
BASE = (0.11, -0.07, 0.03)          # a point of the floor's top surface (off the origin)
F32 = 2e-6                          # float32 rounding of a grid SDF value or query point ~0.3 m from the origin


def _scene(dt, substeps, opts):
    return polyphys.Scene(sim=SimOptions(dt=dt, substeps=substeps, precision="64", gravity=(0.0, 0.0, -G)),
                          coupler=opts, fem=FEMOptions(integrator="explicit", newton_iters=3, cg_iters=50,
                                                       cg_tol=1e-6))


def _sap(scene):
    return next(c for c in scene.couplers if c.name == "sap")


def _rigid_solver(scene):
    return next(s for s in scene.solvers if s.name == "rigid")


def _hfield_mjcf(tmp_path, data, rx, ry, ztop, zb, pos, yaw_deg):
    """A world-body heightfield geom (elevation rows as the XML lists them, +y row first), yawed."""
    rows = np.asarray(data, float)[::-1]
    elev = " ".join(repr(float(v)) for v in rows.reshape(-1))
    nr, nc = rows.shape
    path = tmp_path / "terrain.xml"
    path.write_text(f'<mujoco><asset><hfield name="h" nrow="{nr}" ncol="{nc}" size="{rx} {ry} {ztop} {zb}" '
                    f'elevation="{elev}"/></asset><worldbody><geom name="hf" type="hfield" hfield="h" '
                    f'pos="{pos[0]} {pos[1]} {pos[2]}" euler="0 0 {yaw_deg}"/></worldbody></mujoco>')
    return M.MJCF(file=str(path))


def _floor(kind, tmp_path):
    """A fixed floor whose top surface is the plane z = BASE[2]: a thin box mesh (0.5 × 0.4 × 0.04 m,
    vertices off its frame origin, the frame flipped about x and yawed 25°) or a heightfield (0.6 ×
    0.5 m, 7 × 9 samples, yawed 25°) whose inner 5 × 7 samples form a flat plateau at z_top = 0.03 m
    above its frame and whose border samples are at 0 (MuJoCo rescales the elevation to [0, 1], so
    constant data would be flat at 0)."""
    if kind == "mesh":
        tm = trimesh.creation.box(extents=(0.5, 0.4, 0.04))
        tm.vertices += (0.03, -0.02, 0.0)
        # flipped about x: the mesh's top face (local z = +0.02) is its bottom; the local -z face is up
        return M.Mesh(vertices=np.asarray(tm.vertices), faces=np.asarray(tm.faces),
                      pos=(BASE[0] - 0.02, BASE[1] + 0.01, BASE[2] - 0.02), euler=(180.0, 0.0, 25.0), fixed=True)
    data = np.zeros((7, 9))
    data[1:-1, 1:-1] = 1.0
    return _hfield_mjcf(tmp_path, data, 0.3, 0.25, 0.03, 0.05, (BASE[0] - 0.02, BASE[1] + 0.01, BASE[2] - 0.03), 25.0)


@pytest.mark.parametrize("kind", ["mesh", "hfield"])
def test_soft_cube_settles_on_a_mesh_or_heightfield_floor(kind, tmp_path):
    """The soft cube of test_sap_fem.py's plane test (L 0.13 m, E 1e5 Pa, ν 0.3, yawed 30°, 8 cells per
    side, explicit FEM, mass damping α = 20/s) on a rigid mesh floor or heightfield whose top is flat:
    at rest Σ normal contact force = W/(1 + hα) within 1 % of W (the FEM's mass damping acts on v*
    before the coupling), and the CoM sag = ρgL²/(3E) + the mean contact penetration within 5 %
    (the linear-elastic uniaxial solution resolved by 8 linear tets per side to ~1.6 %), as on the
    plane: the floors' φ is exact on their flat tops (the mesh's grid SDF is linear over the cells
    there, the heightfield's closest point is in a face), so nothing but the geometry source differs."""
    L, E, rho, alpha, h = 0.13, 1.0e5, 1000.0, 20.0, 0.005 / 20
    opts = SapOptions(point_stiffness=2.0e4, dissipation_time_constant=0.01, fem_friction=0.0)
    scene = _scene(0.005, 20, opts)
    scene.add_entity(morph=_floor(kind, tmp_path), material=Rigid())
    centre = np.array((BASE[0] + 0.04, BASE[1] + 0.02, BASE[2] + L / 2))
    cube = scene.add_entity(morph=M.Box(size=(L, L, L), pos=tuple(centre), euler=(0.0, 0.0, 30.0)),
                            material=Elastic(E=E, nu=0.3, rho=rho, model="linear", damping_mass=alpha), resolution=8)
    scene.build()
    sap = _sap(scene)
    if kind == "mesh":
        assert sap.sdf_grids().geom.numpy().tolist() == [0]
    else:
        assert sap.height_fields().geom.numpy().tolist() == [0]
    for _ in range(120):         # 0.6 s: mass damping 20/s decays the axial mode (~120 rad/s) by e^-6
        scene.step()
    c = sap.get_fem_contacts()
    n = c["count"]
    assert c["overflow"] == 0 and n > 0
    # every contact is on the flat top: the normal is +z. The heightfield's normal at a vertex above a
    # cell edge or diagonal is (x − q)/|φ| from the float32 closest point q (polyphys.kernels.sdf
    # sdf_hfield), whose horizontal rounding (≤ ulp(0.5 m) = 6e-8 m in the geom frame) tilts it by up
    # to ~ulp/|φ| at the shallowest contacts (|φ| ~ 5 µm at the cube's corners: 1e-2)
    tilt = np.linalg.norm(c["frame"][:n, 0, :2], axis=1)
    allowed = 1e-5 + (0.0 if kind == "mesh" else 2.0 * 2.0 ** -24 / np.abs(c["dist"][:n]))
    assert np.all(tilt <= allowed), (tilt.max(), c["dist"][:n][np.argmax(tilt - allowed)])
    assert np.all(c["frame"][:n, 0, 2] > 0.0)
    weight = rho * L ** 3 * G
    fz = np.nansum(c["force"][:n, 2])
    assert abs(fz - weight / (1 + h * alpha)) < 0.01 * weight, (fz, weight)
    pen = float(np.mean(-c["dist"][:n]))
    sag = centre[2] - cube.get_pos()[2]
    expected = rho * G * L ** 2 / (3 * E) + pen
    assert abs(sag - expected) < 0.05 * expected, (sag, expected, pen)
    assert np.abs(cube.get_vertices_vel()).max() < 1e-3


def _quat_rotate(q, v):
    w, x, y, z = q
    u = np.array((x, y, z))
    return v + 2.0 * np.cross(u, np.cross(u, v) + w * v)


def _box_sdf(p, half):
    q = np.abs(p) - half
    return np.linalg.norm(np.maximum(q, 0.0), axis=-1) + np.minimum(q.max(axis=-1), 0.0)


def _mesh_box_on_slab(tmp_path, opts):
    """A rigid box mesh (0.1 × 0.08 × 0.05 m, written to an .obj file and loaded, yawed 35°, ρ 500) on
    an FEM slab (0.36 × 0.28 × 0.06 m, yawed 20°, held at its bottom) over a plane, off the origin."""
    scene = _scene(0.005, 10, opts)
    scene.add_entity(morph=M.Plane(pos=(BASE[0], BASE[1], BASE[2] - 0.05)), material=Rigid())
    sx, sy, sz = 0.36, 0.28, 0.06
    slab = scene.add_entity(morph=M.Box(size=(sx, sy, sz), pos=(BASE[0] + 0.02, BASE[1] - 0.03, BASE[2] + sz / 2),
                                        euler=(0.0, 0.0, 20.0)),
                            material=Elastic(E=1.0e5, nu=0.3, rho=1000.0, damping_mass=40.0), resolution=12,
                            fixed={"upper": (np.inf, np.inf, BASE[2] + 1e-6)})
    bs = np.array((0.1, 0.08, 0.05))
    path = tmp_path / "box.obj"
    trimesh.creation.box(extents=bs).export(path)
    box = scene.add_entity(morph=M.Mesh(file=str(path), pos=(BASE[0] + 0.03, BASE[1] - 0.01, BASE[2] + sz + bs[2] / 2),
                                        euler=(0.0, 0.0, 35.0)), material=Rigid(rho=500.0))
    scene.build()
    return scene, slab, box, bs


def test_rigid_mesh_box_rests_on_fem_slab(tmp_path):
    """Σ normal force on the mesh box = its weight within 1 % (as test_sap_fem.py's primitive box),
    both at rest; and each contact's φ (the grid SDF at the vertex) equals the exact distance to the
    box within the grid's bound (√3/2)·h (h: the spacing, longest side 0.1 m / sdf_grid_res 64) plus
    float32 rounding and how far both sides moved within the last substep (read back after it)."""
    opts = SapOptions(point_stiffness=2.0e4, dissipation_time_constant=0.01, fem_friction=0.5)
    scene, slab, box, bs = _mesh_box_on_slab(tmp_path, opts)
    mass = float(np.sum(box.get_links_mass()))
    np.testing.assert_allclose(mass, 500.0 * np.prod(bs), rtol=1e-6)      # the mesh's volume × ρ
    for _ in range(120):
        scene.step()
    sap = _sap(scene)
    c = sap.get_fem_contacts()
    n = c["count"]
    weight = mass * G
    fz = -np.nansum(c["force"][:n, 2])      # the box receives the opposite of the vertices' force
    assert c["overflow"] == 0 and n > 0
    assert np.all(c["link"][:n] == box.link_start)
    assert abs(fz - weight) < 0.01 * weight, (fz, weight)
    assert np.abs(box.get_vel()).max() < 1e-3
    assert np.abs(slab.get_vertices_vel()).max() < 1e-3
    # φ against the exact box distance at the vertex (x = p + φ·n/2), in the box frame
    spacing = float(sap.sdf_grids().spacing.numpy()[0])
    np.testing.assert_allclose(spacing, bs.max() / 64, rtol=1e-6)
    x = c["pos"][:n] + 0.5 * c["dist"][:n, None] * c["frame"][:n, 0]
    qc = np.array(box.get_quat(), dtype=float)
    local = np.array([_quat_rotate(qc * (1, -1, -1, -1), xi - box.get_pos()) for xi in x])
    exact = _box_sdf(local, bs / 2)
    # both sides moved since the substep start by at most (|v_box| + |ω|·r_box + |u|)·h (r_box: half diagonal)
    travel = (np.linalg.norm(box.get_vel()) + np.linalg.norm(box.get_ang()) * np.linalg.norm(bs) / 2
              + np.linalg.norm(slab.get_vertices_vel(), axis=1).max()) * 0.005 / 10
    err = np.abs(c["dist"][:n] - exact)
    assert err.max() <= interpolation_bound(spacing) + F32 + travel, (err.max(), spacing)


def test_grid_sdf_of_a_mesh_geom_is_within_its_bound(tmp_path):
    """The coupler's grid SDF of the mesh box (sdf_grid_spacing = 7 mm given: that spacing is used),
    queried at 4000 points of its grid box in the geom frame: |φ_grid − φ_exact| ≤ (√3/2)·h + float32
    rounding everywhere, and it is not exact everywhere (near the box's edges and its medial axis the
    SDF bends within a cell, where trilinear interpolation errs), so the bound is what is checked; at
    points whose cell lies within one face's linear region it is exact to float32."""
    opts = SapOptions(point_stiffness=2.0e4, dissipation_time_constant=0.01, sdf_grid_spacing=0.007,
                      fem_contact_margin=0.01)
    scene, _, _, bs = _mesh_box_on_slab(tmp_path, opts)
    grids = _sap(scene).sdf_grids()
    h = float(grids.spacing.numpy()[0])
    assert h == pytest.approx(0.007, rel=1e-6)
    origin, dims = grids.origin.numpy()[0].astype(float), grids.dims.numpy()[0]
    top = origin + (dims - 1) * h
    geoms = _rigid_solver(scene).rigid_geoms()
    g = int(np.nonzero(geoms.type.numpy() == 6)[0][0])            # the box mesh (GeomType.MESH)
    assert int(grids.geom.numpy()[g]) == 0
    v = np.asarray(geoms.meshes[g][0], dtype=float)
    lo, hi = v.min(0), v.max(0)
    assert np.all(origin <= lo - 0.01 + 1e-9) and np.all(top >= hi + 0.01 - 1e-9)   # reaches the margin
    centre, half = (lo + hi) / 2, (hi - lo) / 2
    np.testing.assert_allclose(np.sort(2 * half), np.sort(bs), rtol=1e-6)
    rng = np.random.default_rng(7)
    pts = origin + rng.random((4000, 3)) * (top - origin)
    d, nrm = query_sdf_grids(grids, 0, pts)
    exact = _box_sdf(pts - centre, half)
    err = np.abs(d - exact)
    bound = interpolation_bound(h)
    assert err.max() <= bound + F32, (err.max(), bound)
    assert err.max() > 10 * F32                  # a real interpolation error somewhere (edges, medial axis)
    # cells entirely in the +z face's linear region (above the top face, inside its footprint by a cell)
    face = ((pts[:, 2] > hi[2] + h) & np.all(np.abs(pts[:, :2] - centre[:2]) < half[:2] - h, axis=1))
    assert face.sum() > 20
    np.testing.assert_allclose(d[face], exact[face], atol=F32)
    np.testing.assert_allclose(nrm[face], np.tile((0.0, 0.0, 1.0), (face.sum(), 1)), atol=1e-4)


@pytest.mark.parametrize("drop", ["meshes", "hfields"])
def test_mesh_or_heightfield_geom_without_data_is_refused(drop, tmp_path, monkeypatch):
    """A mesh geom whose solver lists no triangles (and no grid), or a heightfield without heights,
    cannot be queried: FEM vertices would pass through it, so the build raises CapabilityError naming
    the geom instead."""
    from polyphys.plugins.rigid.solver import RigidSolver

    original = RigidSolver.rigid_geoms

    def without(self):
        return attrs.evolve(original(self), **{drop: ()})

    monkeypatch.setattr(RigidSolver, "rigid_geoms", without)
    scene = _scene(0.005, 10, SapOptions())
    scene.add_entity(morph=_floor("mesh" if drop == "meshes" else "hfield", tmp_path), material=Rigid())
    scene.add_entity(morph=M.Box(size=(0.1, 0.1, 0.1), pos=(BASE[0], BASE[1], BASE[2] + 0.06)),
                     material=Elastic(E=1.0e5, nu=0.3, rho=1000.0), resolution=3)
    what = "mesh geom without triangles" if drop == "meshes" else "heightfield without heights"
    with pytest.raises(CapabilityError, match=f"{what}.*geom 0"):
        scene.build()


@pytest.mark.parametrize("extents,warns", [((0.035, 0.05, 0.03), True), ((0.3, 0.24, 0.2), False)])
def test_mesh_narrower_than_the_fem_surface_edges_warns(extents, warns):
    """The build's narrow-geom warning (docs/sap.md, "Rigid–FEM contact") takes a mesh geom's bounding
    box in its frame: a box mesh whose middle extent (0.035 m) is below the longest surface edge of a
    resolution-3 slab (~0.18 m) is named; a 0.3 × 0.24 × 0.2 m one is not."""
    import warnings

    from polyphys.errors import PolyphysWarning

    scene = _scene(0.005, 10, SapOptions(point_stiffness=2.0e4, dissipation_time_constant=0.01))
    scene.add_entity(morph=M.Plane(pos=(BASE[0], BASE[1], BASE[2] - 0.05)), material=Rigid())
    sx, sy, sz = 0.36, 0.28, 0.06
    scene.add_entity(morph=M.Box(size=(sx, sy, sz), pos=(BASE[0], BASE[1], BASE[2] + sz / 2), euler=(0.0, 0.0, 20.0)),
                     material=Elastic(E=1.0e5, nu=0.3, rho=1000.0), resolution=3,
                     fixed={"upper": (np.inf, np.inf, BASE[2] + 1e-6)})
    tm = trimesh.creation.box(extents=extents)
    scene.add_entity(morph=M.Mesh(vertices=np.asarray(tm.vertices), faces=np.asarray(tm.faces),
                                  pos=(BASE[0] + 0.03, BASE[1] - 0.02, BASE[2] + 0.3), euler=(10.0, 0.0, 35.0)),
                     material=Rigid(rho=500.0))
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        scene.build()
    hits = [w for w in rec if issubclass(w.category, PolyphysWarning) and "narrower" in str(w.message)]
    assert len(hits) == (1 if warns else 0), [str(w.message) for w in rec]
    if warns:
        assert "geom 1 (mesh, middle extent 0.035" in str(hits[0].message)
