"""URDF importer against the file's own numbers (MuJoCo's URDF compiler fuses and discards, so it
is no reference here): masses, inertias, origins, joint axes/limits/dynamics; merging fixed links
keeps the robot's total mass, CoM and inertia exactly (float64 round-off, rtol 1e-12)."""

import math
import os
import warnings
import xml.etree.ElementTree as ET

import numpy as np
import polyphys
import pytest
from polyphys.description import quat_to_mat

RTOL = 1e-12   # the importer only re-expresses the file's numbers: float64 round-off


def _rpy(r, p, y):
    cx, sx, cy, sy, cz, sz = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    rx = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    rz = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    return rz @ ry @ rx


def _origin(el):
    o = el.find("origin")
    if o is None:
        return np.zeros(3), np.eye(3)
    xyz = np.array([float(v) for v in o.get("xyz", "0 0 0").split()])
    return xyz, _rpy(*[float(v) for v in o.get("rpy", "0 0 0").split()])


def _describe(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return polyphys.describe(path, **kw)


def check_against_file(path, desc):
    """Unmerged description vs an independent reading of the URDF."""
    root = ET.parse(path).getroot()
    names = [lk.name for lk in desc.links]
    for el in root.findall("link"):
        if el.get("name") not in names:     # a bare root link named "world" is the world
            assert el.get("name") == "world" and el.find("inertial") is None
            continue
        lk = desc.links[desc.link_index(el.get("name"))]
        ine = el.find("inertial")
        if ine is None:
            assert lk.inertial.mass == 0.0
            continue
        m = float(ine.find("mass").get("value"))
        i = ine.find("inertia")
        g = {k: float(i.get(k, 0)) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
        t = np.array([[g["ixx"], g["ixy"], g["ixz"]], [g["ixy"], g["iyy"], g["iyz"]],
                      [g["ixz"], g["iyz"], g["izz"]]])
        xyz, r = _origin(ine)
        np.testing.assert_allclose(lk.inertial.mass, m, rtol=RTOL)
        np.testing.assert_allclose(lk.inertial.com, xyz, rtol=RTOL, atol=1e-15)
        np.testing.assert_allclose(lk.inertial.inertia, r @ t @ r.T, rtol=RTOL,
                                   atol=1e-12 * np.abs(t).max() + 1e-300)
    for el in root.findall("joint"):
        child = desc.links[desc.link_index(el.find("child").get("link"))]
        parent = el.find("parent").get("link")
        if parent in names:
            assert desc.links[child.parent].name == parent
        else:
            assert child.parent == -1 and parent == "world"
        xyz, r = _origin(el)
        np.testing.assert_allclose(child.pos, xyz, rtol=RTOL, atol=1e-15)
        np.testing.assert_allclose(quat_to_mat(child.quat), r, rtol=0, atol=1e-12)
        if el.get("type") == "fixed":
            assert [desc.joints[j].type for j in child.joints] == ["fixed"]   # 0 q, 0 dof
            continue
        j = desc.joints[desc.joint_index(el.get("name"))]
        ax = el.find("axis")
        axis = np.array([float(v) for v in (ax.get("xyz") if ax is not None else "1 0 0").split()])
        np.testing.assert_allclose(j.axis, axis / np.linalg.norm(axis), rtol=0, atol=1e-12)
        lim = el.find("limit")
        if (el.get("type") in ("revolute", "prismatic") and lim is not None
                and (lim.get("lower") is not None or lim.get("upper") is not None)):
            lo, hi = float(lim.get("lower", 0)), float(lim.get("upper", 0))
            assert j.limited == (lo < hi)
            if lo < hi:
                assert j.range == (lo, hi)
        if el.get("type") == "continuous":
            assert not j.limited
        dyn = el.find("dynamics")
        if dyn is not None:
            assert j.damping == float(dyn.get("damping", 0.0))
            assert j.frictionloss == float(dyn.get("friction", 0.0))


def world_mass_properties(desc):
    """Total mass, CoM and inertia about the CoM in the world at q = 0 (links' own frames)."""
    pos, rot = [], []
    for lk in desc.links:
        r = quat_to_mat(lk.quat)
        if lk.parent < 0:
            pos.append(np.asarray(lk.pos))
            rot.append(r)
        else:
            pos.append(pos[lk.parent] + rot[lk.parent] @ np.asarray(lk.pos))
            rot.append(rot[lk.parent] @ r)
    m = sum(lk.inertial.mass for lk in desc.links)
    com = sum(lk.inertial.mass * (p + r @ np.asarray(lk.inertial.com))
              for lk, p, r in zip(desc.links, pos, rot)) / m
    inertia = np.zeros((3, 3))
    for lk, p, r in zip(desc.links, pos, rot):
        d = p + r @ np.asarray(lk.inertial.com) - com
        inertia += r @ lk.inertial.inertia @ r.T + lk.inertial.mass * (d @ d * np.eye(3) - np.outer(d, d))
    return m, com, inertia


def _erd_robots():
    import sysconfig

    base = os.path.join(sysconfig.get_paths()["purelib"], "cmeel.prefix", "share",
                        "example-robot-data", "robots")
    robots = [("solo_description/robots/solo12.urdf", False),
              ("ur_description/urdf/ur5_robot.urdf", True),
              ("panda_description/urdf/panda.urdf", True)]
    return base, [(os.path.join(base, r), dae) for r, dae in robots]


ERD_BASE, ERD = _erd_robots()


@pytest.mark.skipif(not os.path.isdir(ERD_BASE), reason="example-robot-data is not installed "
                    "(test extra: pip install --no-deps example-robot-data)")
@pytest.mark.parametrize("path,dae", ERD, ids=[os.path.basename(p) for p, _ in ERD])
def test_example_robot_data(path, dae):
    if dae:
        pytest.importorskip("collada", reason="the robot's .dae visual meshes need pycollada")
    flat = _describe(path, merge_fixed_links=False)
    check_against_file(path, flat)
    merged = _describe(path)
    assert merged.n_links < flat.n_links and merged.n_dofs == flat.n_dofs
    assert [j.name for j in merged.joints] == [j.name for j in flat.joints if j.type != "fixed"]
    m1, c1, i1 = world_mass_properties(flat)
    m2, c2, i2 = world_mass_properties(merged)
    np.testing.assert_allclose(m2, m1, rtol=RTOL)
    np.testing.assert_allclose(c2, c1, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(i2, i1, rtol=1e-10, atol=1e-12 * np.abs(i1).max())
    assert len(merged.geoms) == len(flat.geoms)
    for li, _pos, _quat in merged.frames.values():
        assert merged.links[li].name in [lk.name for lk in flat.links]
    roles = {g.role for g in merged.geoms}
    assert roles == {"visual", "collision"}
    assert all(g.mesh is not None and len(g.mesh.faces) for g in merged.geoms if g.type == "mesh")


ROBOT = """<?xml version="1.0"?>
<robot name="hand">
  <link name="base">
    <inertial><origin xyz="0.01 0 0.02" rpy="0.1 0 0"/><mass value="2"/>
      <inertia ixx="0.02" ixy="0.001" ixz="0.0005" iyy="0.03" iyz="0.002" izz="0.04"/></inertial>
    <collision><origin xyz="0 0 0.05"/><geometry><box size="0.2 0.1 0.1"/></geometry></collision>
    <visual><geometry><mesh filename="package://handpkg/meshes/tet.stl" scale="2 2 2"/></geometry></visual>
  </link>
  <link name="flange">
    <inertial><mass value="0.5"/><inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial>
    <collision><geometry><sphere radius="0.03"/></geometry></collision>
  </link>
  <link name="finger1">
    <inertial><origin xyz="0 0 0.05"/><mass value="0.1"/>
      <inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="2e-5"/></inertial>
    <collision><geometry><cylinder radius="0.01" length="0.1"/></geometry></collision>
  </link>
  <link name="finger2">
    <inertial><mass value="0.1"/><inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="2e-5"/></inertial>
  </link>
  <joint name="mount" type="fixed"><parent link="base"/><child link="flange"/>
    <origin xyz="0 0 0.2" rpy="0 0.3 0"/></joint>
  <joint name="f1" type="revolute"><parent link="flange"/><child link="finger1"/>
    <origin xyz="0.02 0 0.03" rpy="0 0 1.0"/><axis xyz="0 2 0"/>
    <limit lower="-0.5" upper="1.2" effort="1" velocity="1"/><dynamics damping="0.05" friction="0.01"/></joint>
  <joint name="f2" type="prismatic"><parent link="flange"/><child link="finger2"/>
    <origin xyz="-0.02 0 0.03"/><axis xyz="1 0 0"/><limit lower="0" upper="0.04"/>
    <mimic joint="f1" multiplier="0.5" offset="0.01"/></joint>
</robot>
"""


def _write_robot(tmp_path):
    import trimesh

    pkg = tmp_path / "ws" / "handpkg"
    (pkg / "meshes").mkdir(parents=True)
    (pkg / "urdf").mkdir()
    trimesh.Trimesh([[0, 0, 0], [0.1, 0, 0], [0, 0.1, 0], [0, 0, 0.1]],
                    [[0, 2, 1], [0, 1, 3], [1, 2, 3], [0, 3, 2]]).export(str(pkg / "meshes" / "tet.stl"))
    p = pkg / "urdf" / "hand.urdf"
    p.write_text(ROBOT)
    return str(p), str(tmp_path / "ws")


def test_hand_written_robot(tmp_path):
    path, ws = _write_robot(tmp_path)
    flat = _describe(path, merge_fixed_links=False, package_dirs=(ws,))
    check_against_file(path, flat)
    assert [lk.name for lk in flat.links] == ["base", "flange", "finger1", "finger2"]
    assert [j.type for j in flat.joints] == ["fixed", "revolute", "prismatic"]
    mesh = [g for g in flat.geoms if g.type == "mesh"][0]
    assert mesh.role == "visual" and np.max(mesh.mesh.vertices) == pytest.approx(0.2)
    box = [g for g in flat.geoms if g.type == "box"][0]
    assert box.size == (0.1, 0.05, 0.05) and box.role == "collision"
    cyl = [g for g in flat.geoms if g.type == "cylinder"][0]
    assert cyl.size == (0.01, 0.05, 0.0)
    eq = flat.equalities[0]
    assert (eq.type, flat.joints[eq.obj1].name, flat.joints[eq.obj2].name) == ("joint", "f2", "f1")
    assert eq.polycoef[:2] == (0.01, 0.5)

    merged = _describe(path, package_dirs=(ws,))
    assert [lk.name for lk in merged.links] == ["base", "finger1", "finger2"]
    for a, b in zip(world_mass_properties(flat), world_mass_properties(merged)):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-15)
    li, pos, quat = merged.frames["flange"]
    assert merged.links[li].name == "base" and pos == pytest.approx((0.0, 0.0, 0.2))
    # the children now hang on base with the flange offset composed in
    f1 = merged.links[merged.link_index("finger1")]
    expect = np.array([0, 0, 0.2]) + quat_to_mat(quat) @ np.array([0.02, 0, 0.03])
    np.testing.assert_allclose(f1.pos, expect, rtol=0, atol=1e-15)
    eq = merged.equalities[0]
    assert (merged.joints[eq.obj1].name, merged.joints[eq.obj2].name) == ("f2", "f1")
    assert merged.n_qs == 2


def test_urdf_morph_options(tmp_path):
    path, ws = _write_robot(tmp_path)
    d1 = _describe(path, package_dirs=(ws,))
    free = _describe(path, package_dirs=(ws,), fixed=False)
    assert [j.type for j in free.joints] == ["free", "revolute", "prismatic"] and free.n_qs == 9
    assert free.joints[1].q_start == 7
    s = _describe(path, package_dirs=(ws,), scale=3.0)
    for a, b in zip(d1.links, s.links):
        np.testing.assert_allclose(b.inertial.mass, a.inertial.mass * 27, rtol=RTOL)
        np.testing.assert_allclose(b.inertial.inertia, a.inertial.inertia * 243, rtol=RTOL)
    assert s.joints[s.joint_index("f2")].range == pytest.approx((0.0, 0.12))
    nov = _describe(path, package_dirs=(ws,), visual=False)
    assert all(g.role == "collision" for g in nov.geoms) and len(nov.geoms) == len(d1.geoms) - 1
    # the package is found from the URDF's own location too (its grandparent is the package)
    assert _describe(path).n_links == 3
    zup = _describe(path, package_dirs=(ws,), file_meshes_are_zup=False)
    v0 = [g for g in d1.geoms if g.type == "mesh"][0].mesh.vertices
    v1 = [g for g in zup.geoms if g.type == "mesh"][0].mesh.vertices
    np.testing.assert_allclose(v1, np.stack([v0[:, 0], -v0[:, 2], v0[:, 1]], 1))


def test_floating_root_joint(tmp_path):
    p = tmp_path / "f.urdf"
    p.write_text('<robot name="r"><link name="world"/><link name="body"><inertial><mass value="1"/>'
                 '<inertia ixx="1" iyy="1" izz="1"/></inertial></link>'
                 '<joint name="float" type="floating"><parent link="world"/><child link="body"/>'
                 '</joint></robot>')
    d = _describe(str(p))
    assert [lk.name for lk in d.links] == ["body"] and d.joints[0].type == "free" and d.n_qs == 7


def test_hand_written_robot_matches_mujoco_urdf_compiler(tmp_path):
    """With static-body fusion off, MuJoCo's own URDF compiler keeps every link: its bodies,
    joints, geoms and the mimic equality equal ours (rtol 1e-6 as for MJCF)."""
    mujoco = pytest.importorskip("mujoco")
    from mujoco_compare import _close, _rot_close

    text = ROBOT.replace('<visual><geometry><mesh filename="package://handpkg/meshes/tet.stl" '
                         'scale="2 2 2"/></geometry></visual>', "")
    text = text.replace('<robot name="hand">', '<robot name="hand"><mujoco><compiler '
                        'fusestatic="false" discardvisual="false"/></mujoco>')
    p = tmp_path / "hand.urdf"
    p.write_text(text)
    m = mujoco.MjModel.from_xml_path(str(p))
    d = _describe(str(p), merge_fixed_links=False)
    assert m.nbody == d.n_links + 1              # MuJoCo adds its world body
    for i in range(1, m.nbody):
        lk = d.links[d.link_index(mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, i))]
        _close(lk.pos, m.body_pos[i], f"{lk.name} pos", floor=1e-3)
        _rot_close(lk.quat, m.body_quat[i], f"{lk.name} quat")
        _close(lk.inertial.mass, m.body_mass[i], f"{lk.name} mass")
        _close(lk.inertial.com, m.body_ipos[i], f"{lk.name} com", floor=1e-3)
        r = quat_to_mat(m.body_iquat[i])
        _close(lk.inertial.inertia, r @ np.diag(m.body_inertia[i]) @ r.T, f"{lk.name} inertia")
    moving = [j for j in d.joints if j.type != "fixed"]
    assert [{3: "revolute", 2: "prismatic"}[t] for t in m.jnt_type] == [j.type for j in moving]
    for k, j in enumerate(moving):
        _close(j.axis, m.jnt_axis[k], f"{j.name} axis", floor=1.0)
        _close(j.range, m.jnt_range[k], f"{j.name} range", floor=1.0)
        _close([j.damping, j.frictionloss], [m.dof_damping[k], m.dof_frictionloss[k]], j.name,
               floor=1.0)
    assert m.ngeom == len(d.geoms)
    for k, g in enumerate(d.geoms):
        _close(g.size, m.geom_size[k], f"{g.name} size", floor=1e-3)
    eq = d.equalities[0]
    _close(eq.polycoef, m.eq_data[0, :5], "mimic polycoef", floor=1.0)


def test_messy_urdf_loads_with_warning(tmp_path):
    from polyphys.errors import PolyphysWarning

    p = tmp_path / "messy.urdf"
    p.write_bytes(b"\r\n\n<?xml version='1.0'?>\n<robot name='r'><link name='a'><inertial>"
                  b"<mass value='1'/><inertia ixx='1' iyy='1' izz='1'/></inertial></link></robot>"
                  b"\x00\x00")
    with pytest.warns(PolyphysWarning, match="NUL"):
        d = polyphys.describe(str(p))
    assert d.total_mass == 1.0


def test_convexify_replaces_collision_meshes_by_hulls(tmp_path):
    import trimesh

    path, ws = _write_robot(tmp_path)
    # a non-convex collision mesh: two boxes in an L
    ell = trimesh.util.concatenate([trimesh.creation.box((0.2, 0.05, 0.05)),
                                    trimesh.creation.box((0.05, 0.2, 0.05))])
    ell.export(str(tmp_path / "ws" / "handpkg" / "meshes" / "ell.stl"))
    text = open(path).read().replace(
        '<collision><geometry><sphere radius="0.03"/></geometry></collision>',
        '<collision><geometry><mesh filename="package://handpkg/meshes/ell.stl"/></geometry></collision>')
    open(path, "w").write(text)
    plain = _describe(path, package_dirs=(ws,), merge_fixed_links=False)
    hull = _describe(path, package_dirs=(ws,), merge_fixed_links=False, convexify=True)
    g0 = [g for g in plain.geoms if g.role == "collision" and g.type == "mesh"][0]
    g1 = [g for g in hull.geoms if g.role == "collision" and g.type == "mesh"][0]
    t0 = trimesh.Trimesh(g0.mesh.vertices, g0.mesh.faces)
    t1 = trimesh.Trimesh(g1.mesh.vertices, g1.mesh.faces)
    assert not t0.is_convex and t1.is_convex
    assert t1.volume == pytest.approx(t0.convex_hull.volume)


def test_real_world_quirks(tmp_path):
    """Quirks found in example-robot-data: <limit> with only effort/velocity (unlimited), a mimic
    of a joint that does not exist (ignored with a note), a massless link that still has an
    inertia (kept when merging), a zero tensor with a 1e-20 stray entry (accepted)."""
    p = tmp_path / "q.urdf"
    p.write_text("""<robot name="q">
      <link name="a"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/>
      </inertial></link>
      <link name="b"><inertial><mass value="0"/><inertia ixx="0.5" ixy="0" ixz="1e-20" iyy="0.5" iyz="0"
        izz="0.5"/></inertial></link>
      <link name="c"><inertial><mass value="0.1"/><inertia ixx="0" ixy="0" ixz="1e-20" iyy="0" iyz="0"
        izz="0"/></inertial></link>
      <joint name="ab" type="fixed"><parent link="a"/><child link="b"/><origin xyz="0 0 1"/></joint>
      <joint name="bc" type="revolute"><parent link="b"/><child link="c"/><limit effort="1" velocity="1"/>
        <mimic joint="ghost"/></joint>
    </robot>""")
    with pytest.warns(polyphys.errors.PolyphysWarning, match="ghost.*ignored"):
        d = polyphys.describe(str(p))
    assert not d.joints[0].limited and not d.equalities
    np.testing.assert_allclose(d.links[0].inertial.inertia, np.eye(3) * 1.5, atol=1e-15)
    assert d.links[0].inertial.mass == 1.0


_BROKEN = {"tiago.urdf", "tiago_dual.urdf", "tiago_no_hand.urdf", "romeo_laas_small.urdf"}


def _all_erd():
    import glob

    return sorted(glob.glob(os.path.join(ERD_BASE, "*", "*", "*.urdf")))


@pytest.mark.validate
@pytest.mark.parametrize("path", _all_erd(), ids=lambda p: os.path.relpath(p, ERD_BASE))
def test_every_example_robot_data_urdf(path):
    """tox -e validate: all 70 URDFs of example-robot-data; four ship an inertia that is not
    positive semi-definite and must be refused by name, one (ur3.urdf) is an empty xacro stub."""
    pytest.importorskip("collada")
    name = os.path.basename(path)
    if name in _BROKEN:
        with pytest.raises(polyphys.errors.ImportError_, match=name.replace(".", r"\.")
                           + r":\d+: <inertia> \(link .*not positive definite"):
            _describe(path, package_dirs=(ERD_BASE,))
        return
    if name == "ur3.urdf":
        with pytest.raises(polyphys.errors.ImportError_, match="no <link>"):
            _describe(path)
        return
    flat = _describe(path, merge_fixed_links=False, package_dirs=(ERD_BASE,))
    check_against_file(path, flat)
    merged = _describe(path, package_dirs=(ERD_BASE,))
    m1, c1, i1 = world_mass_properties(flat)
    m2, c2, i2 = world_mass_properties(merged)
    np.testing.assert_allclose(m2, m1, rtol=RTOL)
    np.testing.assert_allclose(c2, c1, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(i2, i1, rtol=1e-10, atol=1e-12 * np.abs(i1).max())
