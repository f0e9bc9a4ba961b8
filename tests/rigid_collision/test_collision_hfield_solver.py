"""Heightfields through the rigid solver (MJCF import → prisms → internal-edge correction and face
manifolds → constraints), MuJoCo-compatible mode, float64: a box rests on a flat heightfield
carrying its weight without drifting or rocking, a sphere rolls down a planar tilted heightfield
without slipping (a = 5/7 g sin θ) like on the same tilted plane, and a dropped sphere rests where
MuJoCo puts it."""

import warnings

import numpy as np
import pytest
from polyphys.errors import PolyphysWarning

G = 9.81


def _scene(tmp_path, xml, name="m", dt=0.01):
    import polyphys
    from polyphys import morphs
    from polyphys.plugins.rigid import RigidOptions
    from polyphys.plugins.rigid.materials import Rigid

    path = tmp_path / f"{name}.xml"
    path.write_text(xml)
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=dt, precision="64", gravity=(0, 0, -G)),
                           rigid=RigidOptions.mujoco())
    body = scene.add_entity(morphs.MJCF(file=str(path)), Rigid())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=0)
    return scene, body, scene.solver("rigid"), path


def _flat(nrow, ncol, half):
    z = " ".join(["0"] * (nrow * ncol))
    return (f'<hfield name="h" nrow="{nrow}" ncol="{ncol}" size="{half} {half} 0.1 0.2" '
            f'elevation="{z}"/>')


_BOX = """<mujoco><asset>{hf}</asset><worldbody>{floor}
<body pos="{x} {y} 0.1005"><freejoint/><geom type="box" size="0.1 0.08 0.1" mass="2"/></body>
</worldbody></mujoco>"""


def test_box_rests_on_flat_heightfield_like_on_plane(tmp_path):
    """A 2 kg box settled for 1 s on a flat heightfield and on a plane at the same height: with
    0.1 m cells under its 0.2 × 0.16 m footprint (18 prisms) and with its footprint inside one
    triangle of 1 m cells (one prism: before the face manifold it got a single point and
    rocked). Same 4 corner contacts as the plane, vertical, Σ f_n = m·g, and the plane's rest
    pose; no drift or rocking."""
    res = {}
    for name, hf, floor in (("plane", _flat(3, 3, 1.0), '<geom type="plane" size="2 2 0.1"/>'),
                            ("small", _flat(9, 9, 0.4), '<geom type="hfield" hfield="h"/>'),
                            ("large", _flat(3, 3, 1.0), '<geom type="hfield" hfield="h"/>')):
        scene, box, s, _ = _scene(tmp_path, _BOX.format(hf=hf, floor=floor, x=0.013, y=0.027),
                                  name=name)
        for _ in range(60):
            scene.step()
        p0, q0 = np.asarray(box.get_pos()), np.asarray(box.get_quat())
        for _ in range(40):
            scene.step()
        s._wrench_sync()        # a one-substep step leaves the wrench stage to the first read (docs/rigid.md)
        st = s.data
        n = int(st.ncon.numpy()[0])
        fn = st.con_wrench.numpy()[0, :n, 0]
        c = s.get_raw_contacts()
        nz = c["normal"][c["valid"]]
        pos, q = np.asarray(box.get_pos()), np.asarray(box.get_quat())
        res[name] = pos, q
        assert n == 4 and np.abs(np.abs(nz[:, 2]) - 1.0).max() <= 1e-12
        # Σ normal force = m·g within 0.5 % after settling (docs/constraint.md, the validation bound) (measured 1e-10)
        assert abs(fn.sum()) == pytest.approx(2.0 * G, rel=5e-3)
        # at rest from 0.6 s on (the solver's residual tolerance 1e-8 over 0.4 s: far below 1e-8)
        assert np.linalg.norm(pos - p0) <= 1e-8 and np.linalg.norm(q - q0) <= 1e-8
        assert np.abs(np.asarray(box.get_dofs_velocity())).max() <= 1e-6
        assert 0.1 - 2e-3 < pos[2] < 0.1             # resting on its face, slightly penetrating
    # the same contacts every step as on the plane: the same pose up to rounding (measured 3e-12)
    for name in ("small", "large"):
        np.testing.assert_allclose(res[name][0], res["plane"][0], rtol=0, atol=1e-9)
        np.testing.assert_allclose(res[name][1], res["plane"][1], rtol=0, atol=1e-9)


_ROLL = """<mujoco><asset>{hf}</asset><worldbody>{floor}
<body pos="{x} 0 {z}"><freejoint/><geom type="sphere" size="{r}" mass="1"/></body>
</worldbody></mujoco>"""


def test_sphere_rolls_down_tilted_heightfield_without_slipping(tmp_path):
    """A planar slope z = ztop (x + 1) / 2 (tan θ = 0.175, θ = 9.9°) as a 6 × 11 heightfield and
    as a tilted plane: the sphere's distance along the slope after 0.5 s is ½ (5/7) g sin θ t²
    (rolling without slipping, friction 1 > (2/7) tan θ) within 3 % (the soft contact lets the
    contact creep a little and the sphere settles into the surface during the first steps), and
    the heightfield run equals the plane run (the same single face contact per step)."""
    rx, ztop, r = 1.0, 0.35, 0.05
    nc = 11
    tan = ztop / (2 * rx)
    th = np.arctan(tan)
    n = np.array([-np.sin(th), 0.0, np.cos(th)])
    x0 = 0.5
    # 0.2 mm into the surface, so that both floors report the contact from the first step
    c0 = np.array([x0, 0.0, ztop * (x0 + rx) / (2 * rx)]) + n * (r - 2e-4)
    row = " ".join(repr(float(v)) for v in np.linspace(0, 1, nc))
    hf = (f'<hfield name="h" nrow="6" ncol="{nc}" size="{rx} 0.5 {ztop} 0.2" '
          f'elevation="{" ".join([row] * 6)}"/>')
    floors = {"hfield": '<geom type="hfield" hfield="h"/>',
              "plane": f'<geom type="plane" size="2 2 0.1" pos="0 0 {ztop / 2}" '
                       f'euler="0 {-float(np.degrees(th))!r} 0"/>'}
    dist = {}
    T = 0.5
    for name, floor in floors.items():
        scene, ball, s, _ = _scene(tmp_path, _ROLL.format(hf=hf, floor=floor, x=float(c0[0]), z=float(c0[2]),
                                                          r=r), name=name, dt=0.005)
        for _ in range(int(round(T / 0.005))):
            scene.step()
        d = np.asarray(ball.get_pos()) - c0
        dist[name] = d
        c = s.get_raw_contacts()
        nz = c["normal"][c["valid"]]
        assert len(nz) == 1 and np.linalg.norm(np.abs(nz[0]) - np.abs(n)) <= 1e-9
    a = 5.0 / 7.0 * G * np.sin(th)
    along = -dist["hfield"] @ np.array([np.cos(th), 0.0, np.sin(th)])
    assert along == pytest.approx(0.5 * a * T * T, rel=0.03)
    assert abs(dist["hfield"][1]) <= 1e-9                        # straight down the slope
    # same contact every step (point, normal and depth to rounding): measured 1e-13 m apart
    np.testing.assert_allclose(dist["hfield"], dist["plane"], rtol=0, atol=1e-10)


_DROP = """<mujoco><asset><hfield name="h" nrow="3" ncol="4" size="1 1 0.1 0.2"
  elevation="0 0 0 0 0 0 0 0 0 0 0 0"/></asset>
<worldbody><geom type="{floor}" {attr}/><body pos="0.2 -0.25 0.3"><freejoint/>
<geom type="sphere" size="0.05" mass="1"/></body></worldbody></mujoco>"""


def test_sphere_drop_rests_like_mujoco(tmp_path):
    """A sphere dropped from 0.25 m onto a flat MJCF hfield (1 s, dt 0.01): the rest height
    equals MuJoCo's on the same file (same soft contact model, float32 hfield data in MuJoCo:
    1e-9), and it stays above its drop point — MuJoCo's own prisms give the neighbour prism's
    tilted edge contact at impact (0.028 m from a cell diagonal) and its sphere rolls away
    (measured 0.10 m); its plane run keeps the drop point."""
    mujoco = pytest.importorskip("mujoco")
    out = {}
    for floor, attr in (("hfield", 'hfield="h"'), ("plane", 'size="2 2 0.1"')):
        scene, ball, _, path = _scene(tmp_path, _DROP.format(floor=floor, attr=attr), name=floor)
        for _ in range(100):
            scene.step()
        m = mujoco.MjModel.from_xml_path(str(path))
        m.opt.timestep = 0.01
        d = mujoco.MjData(m)
        for _ in range(100):
            mujoco.mj_step(m, d)
        out[floor] = (np.asarray(ball.get_pos()), d.qpos[:3].copy())
    (ph, mh), (pp, mp) = out["hfield"], out["plane"]
    assert abs(ph[2] - mh[2]) <= 1e-9 and abs(pp[2] - mp[2]) <= 1e-9
    assert np.linalg.norm(ph[:2] - [0.2, -0.25]) <= 1e-9
    assert np.linalg.norm(mp[:2] - [0.2, -0.25]) <= 1e-9


_CYL = """<mujoco><asset>{hf}</asset><worldbody><geom type="hfield" hfield="h"/>
<body pos="{x} {y} 0.1005"><freejoint/><geom type="cylinder" size="0.06 0.1" mass="1.5"/></body>
</worldbody></mujoco>"""


@pytest.mark.parametrize("cells", ["small", "large"])
def test_cylinder_stands_on_flat_heightfield(tmp_path, cells):
    """A 1.5 kg cylinder (r 0.06, half length 0.1) standing on a flat heightfield, its cap over
    several 0.1 m cells or inside one 1 m triangle (one prism: a single GJK/EPA point before the
    face manifold, and it tipped): 4 rim contacts (or fewer where clipped to several prisms, at
    least 3), vertical, Σ f_n = m·g within 0.5 %, upright and at rest after 1 s."""
    hf = _flat(9, 9, 0.4) if cells == "small" else _flat(3, 3, 1.0)
    x, y = (0.013, 0.027) if cells == "small" else (0.45, -0.3)
    scene, cyl, s, _ = _scene(tmp_path, _CYL.format(hf=hf, x=x, y=y), name=cells)
    for _ in range(100):
        scene.step()
    s._wrench_sync()            # a one-substep step leaves the wrench stage to the first read (docs/rigid.md)
    st = s.data
    n = int(st.ncon.numpy()[0])
    fn = st.con_wrench.numpy()[0, :n, 0]
    nz = s.get_raw_contacts()["normal"][:n]
    assert n >= 3 and np.abs(np.abs(nz[:, 2]) - 1.0).max() <= 1e-12
    assert abs(fn.sum()) == pytest.approx(1.5 * G, rel=5e-3)
    q = np.asarray(cyl.get_quat())
    pos = np.asarray(cyl.get_pos())
    # upright and in place: vertical normals through a symmetric rim give no torque (measured
    # ~1e-12); 1e-6 leaves the solver tolerance room
    assert np.linalg.norm(q[1:]) <= 1e-6 and np.hypot(pos[0] - x, pos[1] - y) <= 1e-6
    assert np.abs(np.asarray(cyl.get_dofs_velocity())).max() <= 1e-6
    assert 0.1 - 2e-3 < pos[2] < 0.1
