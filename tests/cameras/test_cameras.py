"""Ray-casting sensors and cameras against float64 analytic references (docs/cameras.md).

Tolerances: every image is float32; a distance t computed in float32 from float32 poses is within a
few ulp(t) (t < 4 m here, the cameras' far limit: ~1e-6 m) of the exact one, so 1e-5 m (the issue's
figure) is a bound with margin. Silhouettes are compared pixel by pixel except where an edge passes within 1e-3 pixel of the
pixel centre (``unambiguous``): there float32 rounding may decide either way.
"""

import math
import warnings

import numpy as np
import polyphys
import pytest
import ray_reference as ref
from polyphys import SimOptions, morphs
from polyphys.errors import OptionError, PolyphysWarning
from polyphys.materials import Rigid
from polyphys.raycast import Camera, intrinsics, lookat_rot

TOL = 1e-5
FAR = 4.0      # the cameras' range: float32 round-off of a distance grows with it (and with grazing angles)
RAYCAST = "polyphys.kernels.raycast"      # the ray tracer's kernel module

ROBOT = """<mujoco>
  <worldbody>
    <body name="base" pos="0.05 0.42 0.55" euler="12 -20 33">
      <geom name="shell" type="ellipsoid" size="0.16 0.1 0.07"/>
      <body name="arm" pos="0.05 -0.2 0.02" euler="30 10 -15">
        <geom name="rod" type="capsule" size="0.04 0.09"/>
        <geom name="tip" type="box" pos="0 0 0.14" size="0.05 0.03 0.04"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def _primitives_scene(tmp_path, n_envs=0):
    """A tilted plane, a sphere, a box, a capsule, a cylinder (generic poses, non-unit sizes) and an
    MJCF body pair (ellipsoid; capsule and box on a second link); gravity off: nothing moves."""
    xml = tmp_path / "robot.xml"
    xml.write_text(ROBOT)
    scene = polyphys.Scene(sim=SimOptions(dt=0.01, gravity=(0.0, 0.0, 0.0), precision="64"))
    scene.add_entity(morphs.Plane(pos=(0.1, -0.05, 0.02), normal=(0.05, -0.08, 1.0)), Rigid(), name="floor")
    scene.add_entity(morphs.Sphere(radius=0.21, pos=(0.35, 0.28, 0.41), fixed=True), Rigid(), name="ball")
    scene.add_entity(morphs.Box(size=(0.3, 0.18, 0.24), pos=(-0.32, 0.31, 0.37), euler=(23, -37, 51), fixed=True),
                     Rigid(), name="box")
    scene.add_entity(morphs.Capsule(radius=0.09, height=0.34, pos=(-0.25, -0.33, 0.35), euler=(61, 17, -29),
                                    fixed=True), Rigid(), name="capsule")
    scene.add_entity(morphs.Cylinder(radius=0.11, height=0.2, pos=(0.33, -0.3, 0.3), euler=(-40, 25, 10),
                                     fixed=True), Rigid(), name="cylinder")
    scene.add_entity(morphs.MJCF(file=str(xml)), Rigid(), name="robot")
    return scene


def _check_image(K, w, h, pos, R, shapes, depth, dist, seg=None, seg_ids=None, far=FAR):
    o, d, cosz = ref.pinhole(K, w, h, pos, R)
    t, j = ref.closest(o, d, shapes)
    ok = ref.unambiguous(K, w, h, pos, R, shapes) & (np.abs(t - far) > 1e-4)
    j = np.where(t > far, -1, j)
    t = np.where(t > far, np.inf, t)
    assert ok.mean() > 0.98                              # the comparison covers the image
    depth, dist = depth.reshape(-1), dist.reshape(-1)
    hit = j >= 0
    np.testing.assert_array_equal(np.isfinite(dist)[ok], hit[ok])          # silhouettes to the pixel
    m = ok & hit
    assert m.sum() > 0.5 * w * h
    assert np.abs(dist[m] - t[m]).max() < TOL
    assert np.abs(depth[m] - t[m] * cosz[m]).max() < TOL
    if seg is not None:
        want = np.where(hit, np.asarray([seg_ids[x] for x in j]), -1)
        np.testing.assert_array_equal(seg.reshape(-1)[ok], want[ok])
    return ok


def test_depth_and_segmentation_are_exact_against_analytic_geometry(tmp_path):
    """Two in-step cameras (one from fov with lookat, one from a K matrix looking down, rotated) and
    an on-demand camera: depth, distance and segmentation (geom, link, entity) pixel by pixel."""
    scene = _primitives_scene(tmp_path)
    oblique = scene.add_sensor("camera", None, name="oblique", resolution=(96, 72), fov=55, pos=(0.95, -1.15, 1.5),
                               lookat=(0.0, 0.05, 0.3), outputs=("depth", "distance", "segmentation"),
                               segmentation="geom", far=FAR)
    Kd = [[70.0, 0.0, 41.0], [0.0, 72.0, 30.5], [0.0, 0.0, 1.0]]
    above = scene.add_sensor("depth_camera", None, name="above", resolution=(80, 64), K=Kd, pos=(0.07, -0.04, 2.2),
                             lookat=(0.02, 0.03, 0.0), up=(0.3, 1.0, 0.0),
                             outputs=("depth", "distance", "segmentation"), segmentation="link", far=FAR)
    scene.build()
    scene.step()
    shapes = ref.rigid_shapes(scene)
    assert sorted(s[3] for s in shapes) == ["box", "box", "capsule", "capsule", "cylinder", "ellipsoid", "plane",
                                             "sphere"]
    for cam, key in ((oblique, 0), (above, 2)):
        r = cam.read()
        assert r["depth"].shape == (cam.height, cam.width) and r.query_at == pytest.approx(0.01)
        names = {v: k for k, v in cam.segmentation_names().items()}
        ids = [names[s[key]] for s in shapes]
        w, h, K, _ = intrinsics("t", cam.resolution, None if cam is above else 55.0, Kd if cam is above else None)
        R = lookat_rot("t", cam._pos, (0.0, 0.05, 0.3) if cam is oblique else (0.02, 0.03, 0.0),
                       (0, 0, 1) if cam is oblique else (0.3, 1.0, 0.0))
        _check_image(K, w, h, cam._pos, R, shapes, r["depth"], r["distance"], r["segmentation"], ids)
    # on demand, segmentation by entity
    cam = Camera(resolution=(64, 48), fov=60, pos=(-1.2, 0.9, 1.3), lookat=(0.0, 0.0, 0.35),
                 outputs=("depth", "distance", "segmentation"), segmentation="entity", far=FAR)
    img = cam.render(scene)
    w, h, K, _ = intrinsics("t", (64, 48), 60.0)
    R = lookat_rot("t", np.array([-1.2, 0.9, 1.3]), (0.0, 0.0, 0.35), (0, 0, 1))
    _check_image(K, w, h, np.array([-1.2, 0.9, 1.3]), R, shapes, img["depth"], img["distance"], img["segmentation"],
                 [s[1] for s in shapes])


def test_mesh_box_and_primitive_box_give_the_same_image(tmp_path):
    """A box given as 12 triangles (a wp.Mesh) and the primitive box at the same generic pose: the
    same depth, normals and mask."""
    import trimesh

    size, pos, euler = (0.42, 0.25, 0.31), (0.11, -0.07, 0.43), (17, -28, 63)
    tm = trimesh.creation.box(extents=size)
    out = {}
    for kind in ("primitive", "mesh"):
        scene = polyphys.Scene(sim=SimOptions(dt=0.01, gravity=(0.0, 0.0, 0.0)))
        morph = morphs.Box(size=size, pos=pos, euler=euler, fixed=True) if kind == "primitive" else \
            morphs.Mesh(vertices=np.asarray(tm.vertices), faces=np.asarray(tm.faces), pos=pos, euler=euler, fixed=True)
        scene.add_entity(morph, Rigid())
        scene.build()
        cam = Camera(resolution=(80, 60), fov=50, pos=(0.9, -0.8, 0.95), lookat=pos, outputs=("depth", "normals"))
        out[kind] = cam.render(scene)
    a, b = out["primitive"], out["mesh"]
    ha, hb = np.isfinite(a["depth"]), np.isfinite(b["depth"])
    # the two tests differ only at float32 round-off: at most a pixel or two right on an edge
    assert (ha != hb).sum() <= 2 and ha.sum() > 400
    both = ha & hb
    assert np.abs(a["depth"][both] - b["depth"][both]).max() < TOL
    same_face = np.abs(a["normals"] - b["normals"]).max(-1) < 1e-4
    assert same_face[both].mean() > 0.99           # a face's normal, both ways (edges may pick either face)


def test_heightfield_is_its_triangulated_surface(tmp_path):
    """A heightfield whose samples lie on one tilted plane: every ray within its footprint hits that
    plane (the triangulation is exact for a plane)."""
    nr, nc = 6, 9
    x = np.linspace(-0.4, 0.4, nc)
    y = np.linspace(-0.3, 0.3, nr)
    X, Y = np.meshgrid(x, y)
    Z = 0.1 + 0.15 * (X + 0.4) + 0.08 * (Y + 0.3)            # in [0.1, 0.268]; MuJoCo normalises elevation
    zmax = Z.max()
    elev = " ".join(f"{v:.9f}" for v in Z[::-1].ravel())     # the XML lists the +y row first
    xml = tmp_path / "hf.xml"
    xml.write_text(f"""<mujoco><asset><hfield name="h" nrow="{nr}" ncol="{nc}" size="0.4 0.3 {zmax:.9f} 0.05"
      elevation="{elev}"/></asset><worldbody><geom type="hfield" hfield="h" pos="0.02 -0.03 0.0"/></worldbody>
      </mujoco>""")
    scene = polyphys.Scene(sim=SimOptions(dt=0.01, gravity=(0.0, 0.0, 0.0)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.add_entity(morphs.MJCF(file=str(xml)), Rigid())
    scene.build()
    pos = np.array([0.3, -0.6, 0.9])
    cam = Camera(resolution=(64, 48), fov=45, pos=tuple(pos), lookat=(0.0, 0.0, 0.15), outputs=("distance",))
    dist = cam.render(scene)["distance"].reshape(-1)
    w, h, K, _ = intrinsics("t", (64, 48), 45.0)
    o, d, _ = ref.pinhole(K, w, h, pos, lookat_rot("t", pos, (0.0, 0.0, 0.15), (0, 0, 1)))
    # normalised elevation: heights are (Z - Z.min) / span * zmax
    zn = (Z - Z.min()) / (Z.max() - Z.min()) * zmax
    a, b = zn[0, 1] - zn[0, 0], zn[1, 0] - zn[0, 0]
    sx, sy = 0.8 / (nc - 1), 0.6 / (nr - 1)
    n = np.array([-a / sx, -b / sy, 1.0])
    n /= np.linalg.norm(n)
    p0 = np.array([0.02 - 0.4, -0.03 - 0.3, zn[0, 0]])
    t = (p0 - o) @ n / (d @ n)
    p = o + d * t[:, None]
    inside = (np.abs(p[:, 0] - 0.02) < 0.4 - 1e-4) & (np.abs(p[:, 1] + 0.03) < 0.3 - 1e-4) & (t > 0)
    assert inside.sum() > 300
    assert np.abs(dist[inside] - t[inside]).max() < TOL


def test_lidar_in_a_room_and_the_no_hit_value(tmp_path):
    """A room of boxes without a ceiling: every lidar ray hits the inner face of a wall or the floor
    at the analytic distance; rays leaving through the open top read the no-hit value (inf by default,
    −1 when asked) with NaN points; a spinning pattern turns by 2π·spin·dt per step."""
    L, W, H, th = 4.0, 3.0, 2.5, 0.1
    walls = [((0, 0, -th / 2), (L / 2 + th, W / 2 + th, th / 2)),
             ((L / 2 + th / 2, 0, H / 2), (th / 2, W / 2 + th, H / 2)),
             ((-L / 2 - th / 2, 0, H / 2), (th / 2, W / 2 + th, H / 2)),
             ((0, W / 2 + th / 2, H / 2), (L / 2, th / 2, H / 2)), ((0, -W / 2 - th / 2, H / 2), (L / 2, th / 2, H / 2))]
    geoms = "".join(f'<geom type="box" pos="{p[0]} {p[1]} {p[2]}" size="{s[0]} {s[1]} {s[2]}"/>' for p, s in walls)
    xml = tmp_path / "room.xml"
    xml.write_text(f"<mujoco><worldbody>{geoms}</worldbody></mujoco>")
    scene = polyphys.Scene(sim=SimOptions(dt=0.02, gravity=(0.0, 0.0, 0.0)))
    scene.add_entity(morphs.MJCF(file=str(xml)), Rigid(), name="room")
    pos = np.array([0.37, -0.21, 1.13])
    q = np.array([math.cos(0.2), 0.1 * math.sin(0.2), 0.05 * math.sin(0.2), math.sin(0.2)])
    q /= np.linalg.norm(q)
    pattern = {"type": "lidar", "h_fov": 360, "h_rays": 72, "v_fov": [-40, 60], "v_rays": 11}
    lid = scene.add_sensor("raycaster", None, name="lidar", pos=tuple(pos), quat=tuple(q), pattern=pattern,
                           outputs=("distance", "points"))
    short = scene.add_sensor("raycaster", None, name="short", pos=tuple(pos), quat=tuple(q), pattern=pattern,
                             max_range=2.0, no_hit=-1.0)
    spin = scene.add_sensor("raycaster", None, name="spin", pos=tuple(pos), quat=tuple(q), spin=1.5,
                            pattern={"type": "lidar", "h_fov": 30, "h_rays": 7, "v_fov": [-10, 10], "v_rays": 3})
    scene.build()
    R = ref.quat_rot(q)
    inner = [(np.array([0, 0, 0.0]), np.array([0, 0, 1.0]))] + [
        (np.array([s * L / 2, 0, 0]), np.array([-s, 0, 0.0])) for s in (1, -1)] + [
        (np.array([0, s * W / 2, 0]), np.array([0, -s, 0.0])) for s in (1, -1)]

    def analytic(dl):
        d = dl @ R.T
        ts = []
        for p0, n in inner:
            den = d @ n
            with np.errstate(divide="ignore", invalid="ignore"):
                t = (p0 - pos) @ n / den
            ts.append(np.where((den < 0) & (t > 0), t, np.inf))
        t = np.min(ts, axis=0)
        pts = pos + d * t[:, None]
        return np.where(pts[:, 2] <= H, t, np.inf), d       # the nearest inner plane is the face hit

    for step in range(3):
        scene.step()
        r = lid.read()
        assert r["distance"].shape == (11, 72) and r["points"].shape == (11, 72, 3)
        dl = lid.pattern[0]
        t, d = analytic(dl)
        dist, pts = r["distance"].reshape(-1), r["points"].reshape(-1, 3)
        hit = np.isfinite(t)
        assert 0 < (~hit).sum() < hit.sum()                     # some rays leave through the open top
        np.testing.assert_array_equal(np.isfinite(dist), hit)
        assert np.abs(dist[hit] - t[hit]).max() < TOL
        assert np.abs(pts[hit] - (pos + d[hit] * t[hit, None])).max() < TOL
        assert np.isposinf(dist[~hit]).all() and np.isnan(pts[~hit]).all()
        s = short.read()["distance"].reshape(-1)
        far = ~hit | (t > 2.0)
        assert (s[far] == -1.0).all() and np.abs(s[~far] - t[~far]).max() < TOL
        # the spinning sector: the pattern turned about the sensor z by 2π·1.5·dt per step before this one
        a = 2 * math.pi * 1.5 * 0.02 * step
        Rz = np.array([[math.cos(a), -math.sin(a), 0], [math.sin(a), math.cos(a), 0], [0, 0, 1]])
        ts, _ = analytic(spin.pattern[0] @ Rz.T)
        got = spin.read()["distance"].reshape(-1)
        assert np.isfinite(ts).all() and np.abs(got - ts).max() < TOL


def test_rangefinder_ignores_its_own_link_and_reads_minus_one_on_a_miss(tmp_path):
    """MuJoCo's rangefinder: along the site's +z, its body's geoms ignored, −1 without a hit."""
    xml = tmp_path / "rf.xml"
    xml.write_text("""<mujoco><worldbody><geom type="plane" size="0 0 1"/>
      <body name="b" pos="0.1 0.2 0.7" euler="0 20 0"><geom type="sphere" size="0.1"/>
        <site name="down" euler="180 0 0"/><site name="up"/></body></worldbody>
      <sensor><rangefinder name="rf" site="down"/><rangefinder name="rf_up" site="up"/></sensor></mujoco>""")
    scene = polyphys.Scene(sim=SimOptions(dt=0.01, gravity=(0.0, 0.0, 0.0)))
    robot = scene.add_entity(morphs.MJCF(file=str(xml)), Rigid())
    scene.build()
    # cast in the step: the ray tracer's module is declared (compiled with the others before build), once
    from polyphys.startup import rebuilt_modules

    loads = [r for r in scene.kernel_loads if r.name == RAYCAST]
    assert [r.owner for r in loads] == ["rangefinder sensor"]
    scene.step()
    assert rebuilt_modules(loads, scene.layout.device) == []
    down = robot.sensors["rf"].read().value[0]
    assert down == pytest.approx(0.7 / math.cos(math.radians(20)), abs=TOL)   # through its own sphere
    assert robot.sensors["rf_up"].read().value[0] == -1.0


def test_particles_are_spheres_found_through_the_grid():
    """Particles of an MPM entity moved to a random cloud: every pixel's distance equals the closest
    entering hit of a brute-force test against all spheres (radius: half the spacing the ray tracer
    took), mask included."""
    from polyphys.materials import MPM
    from polyphys.plugins.mpm.options import MPMOptions
    from polyphys.raycast.scene import ray_scene

    scene = polyphys.Scene(sim=SimOptions(dt=1e-3, substeps=2, gravity=(0.0, 0.0, 0.0)),
                           mpm=MPMOptions(lower_bound=(-0.5, -0.5, 0.0), upper_bound=(0.5, 0.5, 1.0), grid_density=24.0))
    jelly = scene.add_entity(morphs.Box(size=(0.3, 0.3, 0.3), pos=(0.0, 0.0, 0.4)), MPM.Elastic())
    scene.build()
    n = jelly.get_particles_pos().shape[0]
    rng = np.random.default_rng(3)
    cloud = rng.uniform((-0.3, -0.25, 0.2), (0.25, 0.3, 0.6), size=(n, 3))
    jelly.set_particles_pos(cloud)
    pos = np.array([0.8, -0.7, 0.9])
    cam = Camera(resolution=(64, 48), fov=50, pos=tuple(pos), lookat=(0.0, 0.0, 0.4), outputs=("distance", "segmentation"))
    img = cam.render(scene)
    r = float(ray_scene(scene).pm.radius.numpy()[0])
    assert 0.0 < r < 0.05
    w, h, K, _ = intrinsics("t", (64, 48), 50.0)
    R = lookat_rot("t", pos, (0.0, 0.0, 0.4), (0, 0, 1))
    o, d, _ = ref.pinhole(K, w, h, pos, R)
    P = jelly.get_particles_pos()
    t, _ = ref.t_spheres(o, d, P, np.full(len(P), r))
    dist = img["distance"].reshape(-1)
    hit = np.isfinite(t)
    # a ray grazing a sphere within float32 round-off may go either way
    graze = np.zeros(len(t), bool)
    for du, dv in ((1e-3, 0), (-1e-3, 0), (0, 1e-3), (0, -1e-3)):
        o2, d2, _ = ref.pinhole(K, w, h, pos, R, du, dv)
        t2, _ = ref.t_spheres(o2, d2, P, np.full(len(P), r))
        graze |= np.isfinite(t2) != hit
    ok = ~graze
    assert hit.sum() > 300 and ok.mean() > 0.98
    np.testing.assert_array_equal(np.isfinite(dist)[ok], hit[ok])
    m = ok & hit
    assert np.abs(dist[m] - t[m]).max() < TOL
    assert (img["segmentation"].reshape(-1)[m] == jelly.uid).all()


def test_fem_surface_is_drawn_as_its_triangles():
    """An FEM box: the camera sees its boundary triangles (brute-force Möller–Trumbore in float64)."""
    from polyphys.materials import FEM

    scene = polyphys.Scene(sim=SimOptions(dt=1e-3, gravity=(0.0, 0.0, 0.0)))
    body = scene.add_entity(morphs.Box(size=(0.3, 0.2, 0.25), pos=(0.05, -0.02, 0.3), euler=(10, 20, 30)),
                            FEM.Elastic())
    scene.build()
    pos = np.array([0.6, -0.7, 0.8])
    cam = Camera(resolution=(64, 48), fov=45, pos=tuple(pos), lookat=(0.05, -0.02, 0.3), outputs=("distance",))
    dist = cam.render(scene)["distance"].reshape(-1)
    w, h, K, _ = intrinsics("t", (64, 48), 45.0)
    R = lookat_rot("t", pos, (0.05, -0.02, 0.3), (0, 0, 1))
    V, F = body.get_vertices_pos(), np.asarray(body.surface_triangles)
    o, d, _ = ref.pinhole(K, w, h, pos, R)
    t, _ = ref.t_triangles(o, d, V, F)
    hit = np.isfinite(t)
    graze = np.zeros(len(t), bool)
    for du, dv in ((1e-3, 0), (-1e-3, 0), (0, 1e-3), (0, -1e-3)):
        o2, d2, _ = ref.pinhole(K, w, h, pos, R, du, dv)
        graze |= np.isfinite(ref.t_triangles(o2, d2, V, F)[0]) != hit
    ok = ~graze
    assert hit.sum() > 300
    np.testing.assert_array_equal(np.isfinite(dist)[ok], hit[ok])
    m = ok & hit
    assert np.abs(dist[m] - t[m]).max() < TOL


def test_camera_on_a_rotating_link_equals_a_fixed_camera_at_its_pose(tmp_path):
    """A camera attached to a spinning link (hinge about a generic axis, gravity off): after each step
    its in-step image equals an on-demand image from a camera fixed in the world at the pose the link
    getters give (end-of-step state) composed with the offset; the view really changes."""
    xml = tmp_path / "arm.xml"
    xml.write_text(ROBOT.replace('<body name="arm" pos="0.05 -0.2 0.02" euler="30 10 -15">',
                                 '<body name="arm" pos="0.05 -0.2 0.02" euler="30 10 -15">'
                                 '<joint name="spin" type="hinge" axis="0.3 0.2 1" damping="0"/>'))
    scene = _primitives_scene(tmp_path)
    spinner = scene.add_entity(morphs.MJCF(file=str(xml), pos=(0.0, 0.0, 0.6)), Rigid(), name="spinner")
    off_p, off_q = np.array([0.02, -0.03, 0.25]), np.array([0.1, 0.97, 0.15, 0.1])     # looking down the link
    off_q /= np.linalg.norm(off_q)
    cam = scene.add_sensor("camera", spinner, name="cam", link="arm", offset_pos=tuple(off_p), offset_quat=tuple(off_q),
                           resolution=(64, 48), fov=70, outputs=("depth", "segmentation"))
    scene.build()
    spinner.set_dofs_velocity([4.0])
    prev = None
    links = [lk.name for lk in spinner.description.links]
    for _ in range(3):
        scene.step()
        r = cam.read()
        lp = spinner.get_links_pos()[links.index("arm")]
        lq = spinner.get_links_quat()[links.index("arm")]
        Rl = ref.quat_rot(lq)
        fixed = Camera(resolution=(64, 48), fov=70, pos=tuple(lp + Rl @ off_p),
                       quat=tuple(_qmul(lq, off_q)), outputs=("depth", "segmentation"))
        img = fixed.render(scene)
        a, b = np.isfinite(r["depth"]), np.isfinite(img["depth"])
        assert (a != b).sum() <= 2 and (r["segmentation"] != img["segmentation"]).sum() <= 2
        both = a & b
        assert both.sum() > 1000
        assert np.abs(r["depth"][both] - img["depth"][both]).max() < 1e-4
        if prev is not None:
            assert np.abs(np.nan_to_num(prev, posinf=0) - np.nan_to_num(r["depth"], posinf=0)).max() > 0.05
        prev = r["depth"].copy()


def _qmul(a, b):
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def _swap_scene(tmp_path, place=True):
    from polyphys.materials import MPM
    from polyphys.plugins.mpm.options import MPMOptions

    scene = polyphys.Scene(sim=SimOptions(dt=2e-3, substeps=4, gravity=(0.0, 0.0, -9.81)),
                           mpm=MPMOptions(lower_bound=(-0.4, -0.4, 0.0), upper_bound=(0.4, 0.4, 0.8), grid_density=20.0))
    scene.add_entity(morphs.Plane(), Rigid(), name="floor")
    ball = scene.add_entity(morphs.Sphere(radius=0.08, pos=(0.1, 0.1, 0.5)), Rigid(), name="ball")
    jelly = scene.add_entity(morphs.Box(size=(0.16, 0.16, 0.16), pos=(-0.1, -0.05, 0.3)), MPM.Elastic(), name="jelly")
    cam = scene.add_sensor("camera", None, name="cam", resolution=(48, 36), fov=50, pos=(0.8, -0.7, 0.7),
                           lookat=(0.0, 0.0, 0.3), outputs=("rgb", "depth", "segmentation"))
    scene.build(n_envs=2)
    if place:           # different states in the two envs (not the registered initial state)
        ball.set_pos([[0.12, 0.1, 0.5], [-0.15, 0.2, 0.35]])
        p = jelly.get_particles_pos()
        jelly.set_particles_pos(np.stack([p[0], p[1] + [0.05, 0.1, 0.02]]))
    return scene, cam


def test_swapping_two_envs_states_swaps_their_images_bit_for_bit(tmp_path):
    """Env k's image depends only on env k's state: the same scene with the two envs' states swapped
    gives the two images swapped, bit for bit (rigid bodies and particles)."""
    scene, cam = _swap_scene(tmp_path)
    st = scene.get_state()
    scene.step()
    a = cam.read()
    assert not np.array_equal(a["depth"][0], a["depth"][1])

    def swapped(x):
        if isinstance(x, dict):
            return {k: swapped(v) for k, v in x.items()}
        x = np.asarray(x)
        return x[[1, 0]] if x.ndim >= 1 and x.shape[0] == 2 else x

    scene2, cam2 = _swap_scene(tmp_path)
    scene2.reset(swapped(st))
    scene2.step()
    b = cam2.read()
    for k in ("rgb", "depth", "segmentation"):
        np.testing.assert_array_equal(a[k][0], b[k][1])
        np.testing.assert_array_equal(a[k][1], b[k][0])


def test_per_env_reset_and_checkpoint_of_a_scene_with_cameras(tmp_path):
    """Per-env reset: env 0 has no reading until its next step (NaN), env 1 keeps its image; after a
    step env 0's image equals a fresh scene's (its built state). A checkpoint continues with
    bit-identical images."""
    scene, cam = _swap_scene(tmp_path)
    for _ in range(3):
        scene.step()
    path = scene.save_checkpoint(tmp_path / "ck.npz")
    for _ in range(2):
        scene.step()
    want = cam.read()
    scene2, cam2 = _swap_scene(tmp_path)
    scene2.load_checkpoint(path)
    for _ in range(2):
        scene2.step()
    got = cam2.read()
    for k in ("rgb", "depth", "segmentation"):
        np.testing.assert_array_equal(want[k], got[k])
    before = cam.read()
    scene.reset(envs_idx=[0])
    r = cam.read()
    assert np.isnan(r["depth"][0]).all() and r.reading_step[0] == -1
    np.testing.assert_array_equal(r["depth"][1], before["depth"][1])
    scene.step()
    fresh, cf = _swap_scene(tmp_path, place=False)     # reset restores the state registered at build
    fresh.step()
    np.testing.assert_array_equal(cam.read()["depth"][0], cf.read()["depth"][0])


def test_bad_input_is_refused_with_the_field_and_value(tmp_path):
    scene = _primitives_scene(tmp_path)
    for kw, needle in ((dict(resolution=(0, 10)), r"resolution = \(0, 10\)"), (dict(resolution=(-4, 3)), "resolution"),
                       (dict(resolution=(10.5, 3)), "resolution"), (dict(fov=0), "fov = 0"),
                       (dict(fov=-30), "fov = -30"), (dict(fov=180), "fov = 180"),
                       (dict(K=[[0, 0, 1], [0, 1, 1], [0, 0, 1]]), "K ="), (dict(fov=40, K=np.eye(3)), "fov or K"),
                       (dict(outputs=("rgb", "colour")), "outputs"), (dict(segmentation="body"), "segmentation"),
                       (dict(max_range=0.0), "max_range"), (dict(lights=[{"type": "spot"}]), "lights.0..type|type = 'spot'")):
        with pytest.raises(OptionError, match=needle):
            scene.add_sensor("camera", None, pos=(1, 1, 1), lookat=(0, 0, 0), **kw)
    scene.add_sensor("camera", None, name="noisy", pos=(1, 1, 1), lookat=(0, 0, 0), outputs=("depth", "segmentation"),
                     noise={"segmentation": 0.1})
    with pytest.raises(OptionError, match="noise on output 'segmentation'"):
        scene.build()
    scene = _primitives_scene(tmp_path)
    robot = scene.entities[-1]
    scene.add_sensor("camera", robot, name="lost", link="no_such_link")
    with pytest.raises(OptionError, match=r"link = 'no_such_link'.*its links: \['world', 'base', 'arm'\]"):
        scene.build()
    with pytest.raises(OptionError, match="pattern.type = 'cone'"):
        polyphys.Scene().add_sensor("raycaster", None, pattern={"type": "cone"})
    with pytest.raises(OptionError, match="pattern.v_rays = 0"):
        polyphys.Scene().add_sensor("raycaster", None, pattern={"type": "lidar", "v_rays": 0})


def test_unwritable_video_path_fails_before_the_run(tmp_path):
    from polyphys.run import SceneFileError, parse_string, run_plan

    blocker = tmp_path / "file"
    blocker.write_text("x")
    text = """[[entities]]
morph = { type = "Sphere", radius = 0.1, pos = [0, 0, 1] }
material = { type = "Rigid" }
[run]
steps = 2
video = { fps = 10, file = "clip.mp4" }
"""
    plan = parse_string(text)
    with pytest.raises(OptionError, match=r"run.video.file = .*clip.mp4.*cannot be written"):
        run_plan(plan, out_dir=str(blocker / "sub"), progress=False, plot=False)
    for bad, needle in (('video = { fps = 0 }', "run.video.fps = 0"), ('video = { file = "a.avi" }', "run.video.file"),
                        ('video = { camera = { zoom = 2 } }', "run.video.camera.zoom"),
                        ('video = { rate = 2 }', "run.video.rate")):
        with pytest.raises(SceneFileError, match=needle):
            parse_string(text.replace('video = { fps = 10, file = "clip.mp4" }', bad))


def test_viewer_draws_camera_sensors_from_their_pose(tmp_path):
    """The viewer's camera protocol: fov_y, resolution and get_pose() (OpenCV frame) of a camera
    sensor; the pose of an attached camera follows its link."""
    from polyphys.viewer.content import FrameReader, scene_content

    scene = _primitives_scene(tmp_path)
    robot = scene.entities[-1]
    scene.add_sensor("camera", None, name="world_cam", resolution=(64, 32), fov=40, pos=(1.0, -1.0, 1.0),
                     lookat=(0.0, 0.0, 0.3))
    scene.add_sensor("depth_camera", robot, name="arm_cam", link="arm", offset_pos=(0.0, 0.0, 0.3), resolution=(32, 32))
    scene.build()
    content = scene_content(scene)
    cams = {c.name: c for c in content.cameras}
    assert cams["world_cam"].fov_y == pytest.approx(40.0) and cams["world_cam"].aspect == pytest.approx(2.0)
    frame = FrameReader(scene, content).read()
    i = [c.name for c in content.cameras].index("world_cam")
    np.testing.assert_allclose(frame[f"c{i}.pos"][0], [1.0, -1.0, 1.0], atol=1e-6)
    R = ref.quat_rot(frame[f"c{i}.quat"][0])
    np.testing.assert_allclose(R[:, 2], -np.array([1.0, -1.0, 0.7]) / np.linalg.norm([1.0, -1.0, 0.7]), atol=1e-6)
    j = [c.name for c in content.cameras].index("arm_cam")
    links = [lk.name for lk in robot.description.links]
    lp, lq = robot.get_links_pos()[links.index("arm")], robot.get_links_quat()[links.index("arm")]
    np.testing.assert_allclose(frame[f"c{j}.pos"][0], lp + ref.quat_rot(lq) @ [0, 0, 0.3], atol=1e-6)


@pytest.fixture
def launched_modules(monkeypatch):
    """The Warp modules of every kernel launched from now on."""
    import warp as wp

    seen = set()
    launch = wp.launch

    def recording(kernel, *args, **kwargs):
        seen.add(kernel.module.name)
        return launch(kernel, *args, **kwargs)

    monkeypatch.setattr(wp, "launch", recording)
    return seen


def test_mjcf_cameras_import_as_on_demand_cameras(tmp_path, launched_modules):
    """An MJCF <camera> becomes a camera sensor (not evaluated in the step; ``render()``) looking
    along −z of its MuJoCo frame; its fovy and resolution carry over; a depth rendered from it
    equals a world camera's at the same pose. Until it renders, the scene launches (and declares
    for the first-run compile) no ray-casting kernel (docs/running.md, "First run")."""
    xml = tmp_path / "c.xml"
    xml.write_text("""<mujoco><worldbody><geom type="plane" size="0 0 1"/>
      <body name="b" pos="0.2 -0.1 1.2" euler="10 -5 30"><camera name="eye" fovy="50" resolution="40 30"
        pos="0.01 0.02 0.03" euler="5 6 7"/><geom type="sphere" size="0.05" pos="0 0 0.2"/></body>
      </worldbody></mujoco>""")
    scene = polyphys.Scene(sim=SimOptions(dt=0.01, gravity=(0.0, 0.0, 0.0)))
    robot = scene.add_entity(morphs.MJCF(file=str(xml)), Rigid())
    eye = robot.sensors["eye"]
    assert eye.kind == "camera" and not eye.in_step and eye.resolution == (40, 30) and eye.fov_y == 50.0
    scene.build()
    scene.step()
    assert RAYCAST not in launched_modules
    assert RAYCAST not in {r.name for r in scene.kernel_loads}
    with pytest.raises(polyphys.errors.SceneStateError, match="in_step = False"):
        eye.read()
    img = eye.render(outputs=("depth",))["depth"]
    assert RAYCAST in launched_modules
    pos, quat = eye.get_pose()
    R = ref.quat_rot(quat)
    # MuJoCo's camera looks along its −z; the body is level-ish so the floor fills the view below it
    import mujoco

    m = mujoco.MjModel.from_xml_path(str(xml))
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    np.testing.assert_allclose(pos, d.cam_xpos[0], atol=1e-6)
    np.testing.assert_allclose(R[:, 2], -d.cam_xmat[0].reshape(3, 3)[:, 2], atol=1e-6)
    np.testing.assert_allclose(R[:, 0], d.cam_xmat[0].reshape(3, 3)[:, 0], atol=1e-6)
    same = Camera(resolution=(40, 30), fov=50, pos=tuple(pos), quat=tuple(quat), outputs=("depth",)).render(scene)
    np.testing.assert_allclose(img, same["depth"], rtol=0, atol=1e-5)    # two float32 paths to one pose


def test_images_do_not_depend_on_the_thread_count(tmp_path):
    """cpu_threads = 2 splits the envs into two partitions, each with its own BVHs, hash grid and
    captured graph: the images equal one thread's bit for bit."""
    imgs = []
    for threads in (1, 2):
        from polyphys.materials import MPM
        from polyphys.plugins.mpm.options import MPMOptions

        scene = polyphys.Scene(sim=SimOptions(dt=2e-3, substeps=4, cpu_threads=threads),
                               mpm=MPMOptions(lower_bound=(-0.4, -0.4, 0.0), upper_bound=(0.4, 0.4, 0.8),
                                              grid_density=20.0))
        scene.add_entity(morphs.Plane(), Rigid())
        ball = scene.add_entity(morphs.Sphere(radius=0.08, pos=(0.1, 0.1, 0.5)), Rigid())
        scene.add_entity(morphs.Box(size=(0.16, 0.16, 0.16), pos=(-0.1, -0.05, 0.3)), MPM.Elastic())
        cam = scene.add_sensor("camera", None, resolution=(40, 30), pos=(0.8, -0.7, 0.7), lookat=(0.0, 0.0, 0.3),
                               outputs=("rgb", "depth", "segmentation"))
        scene.build(n_envs=3)
        ball.set_pos([[0.1, 0.1, 0.5], [-0.1, 0.15, 0.4], [0.0, -0.2, 0.3]])
        for _ in range(3):
            scene.step()
        assert len(scene.layout.partitions) == threads
        imgs.append(cam.read())
    for k in ("rgb", "depth", "segmentation"):
        np.testing.assert_array_equal(imgs[0][k], imgs[1][k])


def test_particles_of_a_solver_without_entity_getters_are_still_drawn(monkeypatch):
    """A particle solver whose entities offer no particle getters (a third-party solver exposing
    only its view): all its particles are drawn as one object, the same image as with getters."""
    from polyphys.materials import MPM
    from polyphys.plugins.mpm.entity import MPMEntity
    from polyphys.plugins.mpm.options import MPMOptions

    def scene_img():
        scene = polyphys.Scene(sim=SimOptions(dt=1e-3, substeps=2, gravity=(0.0, 0.0, 0.0)),
                               mpm=MPMOptions(lower_bound=(-0.5, -0.5, 0.0), upper_bound=(0.5, 0.5, 1.0),
                                              grid_density=24.0))
        scene.add_entity(morphs.Box(size=(0.3, 0.3, 0.3), pos=(0.0, 0.0, 0.4)), MPM.Elastic())
        scene.build()
        return Camera(resolution=(48, 36), fov=50, pos=(0.8, -0.7, 0.9), lookat=(0.0, 0.0, 0.4),
                      outputs=("distance",)).render(scene)["distance"]

    a = scene_img()
    monkeypatch.delattr(MPMEntity, "get_particles_pos")
    b = scene_img()
    assert np.isfinite(a).sum() > 100
    np.testing.assert_array_equal(a, b)


def test_a_camera_does_not_change_the_physics():
    """The ray group brings rigid link frames to the end of the step (sync_links); the next step
    computes them again from qpos, so a scene steps bit for bit the same with or without cameras
    (the gymnasium humanoid falling on its floor: contacts and limits)."""
    import os

    import gymnasium

    xml = os.path.join(os.path.dirname(gymnasium.__file__), "envs/mujoco/assets/humanoid.xml")
    out = []
    for with_cam in (False, True):
        scene = polyphys.Scene(sim=SimOptions(dt=0.005))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PolyphysWarning)
            hum = scene.add_entity(morphs.MJCF(file=xml), Rigid())
        if with_cam:
            scene.add_sensor("depth_camera", hum, link="torso", offset_pos=(0.3, 0.0, 0.0), resolution=(16, 12))
            scene.add_sensor("imu", hum, link="torso")
        scene.build(n_envs=2)
        hum.set_dofs_velocity(np.tile(np.linspace(-0.5, 0.5, hum.n_dofs), (2, 1)))
        for _ in range(40):
            scene.step()
        out.append((hum.get_qpos(), hum.get_dofs_velocity()))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])
