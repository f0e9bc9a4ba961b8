"""Files that are valid for the tools that wrote them (issue 26): PyBullet's spherical joints and
disabled limits, visual meshes that cannot be read, leftover xacro substitutions, one warning per
note (and none printed twice by `polyphys inspect`), a robot without mass."""

import json
import os
import re
import subprocess
import sys
import warnings

import numpy as np
import polyphys
import pytest
from polyphys.errors import ImportError_, PolyphysWarning

INERTIAL = ('<inertial><origin xyz="{x} 0.01 -0.02" rpy="0.1 0.2 0.3"/><mass value="{m}"/><inertia '
            'ixx="0.02" ixy="0.001" ixz="0" iyy="0.03" iyz="0.002" izz="0.04"/></inertial>')


def _describe(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return polyphys.describe(path, **kw)


def _warnings_of(path, **kw):
    """(description, the PolyphysWarnings its load emitted)."""
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        d = polyphys.describe(path, **kw)
    return d, [w for w in rec if issubclass(w.category, PolyphysWarning)]


# -- PyBullet's spherical joints (pybullet_data humanoid.urdf) ---------------------------------------
HUMANOID = f"""<robot name="humanoid">
  <link name="base"><inertial><mass value="0"/><inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>
  <link name="root">{INERTIAL.format(x=0.0, m=6.0)}
    <collision><origin xyz="0 0.28 0"/><geometry><sphere radius="0.36"/></geometry></collision></link>
  <joint name="root" type="fixed"><parent link="base"/><child link="root"/><origin xyz="0.3 -0.2 0.9" rpy="1.5708 0 0.2"/></joint>
  <link name="chest">{INERTIAL.format(x=0.03, m=14.0)}
    <collision><origin xyz="0 0.48 0"/><geometry><sphere radius="0.44"/></geometry></collision></link>
  <joint name="chest" type="spherical"><parent link="root"/><child link="chest"/><origin xyz="0 0.236 0" rpy="0.1 0 0"/></joint>
  <link name="neck">{INERTIAL.format(x=-0.01, m=2.0)}
    <collision><origin xyz="0 0.7 0"/><geometry><sphere radius="0.41"/></geometry></collision></link>
  <joint name="neck" type="spherical"><parent link="chest"/><child link="neck"/><origin xyz="0 0.89 0"/></joint>
  <link name="right_knee">{INERTIAL.format(x=0.02, m=3.0)}
    <collision><origin xyz="0 -0.8 0" rpy="-1.5708 0 0"/><geometry><capsule radius="0.2" length="1.24"/></geometry>
    </collision></link>
  <joint name="right_knee" type="revolute"><parent link="root"/><child link="right_knee"/><origin xyz="0 -1.68 0.33"/>
    <axis xyz="0 0 1"/><limit effort="1000" lower="-3.14" upper="0" velocity="0.5"/></joint>
</robot>
"""


def test_urdf_spherical_joint_is_a_ball_joint(tmp_path):
    p = tmp_path / "humanoid.urdf"
    p.write_text(HUMANOID)
    d = _describe(str(p))
    types = {j.name: j.type for j in d.joints}
    assert types == {"chest": "spherical", "neck": "spherical", "right_knee": "revolute"}
    assert (d.n_qs, d.n_dofs) == (4 + 4 + 1, 3 + 3 + 1)
    np.testing.assert_allclose(d.qpos0()[:4], (1, 0, 0, 0))


def test_urdf_spherical_joint_matches_mujoco_urdf_compiler(tmp_path):
    """MuJoCo's URDF compiler reads PyBullet's spherical joint as a ball joint too: bodies, joint
    types and q addresses agree (static-body fusion off)."""
    mujoco = pytest.importorskip("mujoco")
    from mujoco_compare import _close, _rot_close
    from polyphys.description import quat_to_mat

    p = tmp_path / "humanoid.urdf"
    p.write_text(HUMANOID.replace('<robot name="humanoid">', '<robot name="humanoid"><mujoco><compiler '
                                  'fusestatic="false" discardvisual="false"/></mujoco>'))
    m = mujoco.MjModel.from_xml_path(str(p))
    d = _describe(str(p), merge_fixed_links=False)
    for i in range(1, m.nbody):
        lk = d.links[d.link_index(mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, i))]
        _close(lk.pos, m.body_pos[i], f"{lk.name} pos", floor=1e-3)
        _rot_close(lk.quat, m.body_quat[i], f"{lk.name} quat")
        _close(lk.inertial.mass, m.body_mass[i], f"{lk.name} mass")
        r = quat_to_mat(m.body_iquat[i])
        _close(lk.inertial.inertia, r @ np.diag(m.body_inertia[i]) @ r.T, f"{lk.name} inertia")
    moving = [j for j in d.joints if j.type != "fixed"]
    assert [{1: "spherical", 3: "revolute"}[t] for t in m.jnt_type] == [j.type for j in moving]
    assert m.nq == d.n_qs and m.nv == d.n_dofs


# -- limits -----------------------------------------------------------------------------------------
def _two_links(joint_body, jtype="revolute"):
    return (f'<robot name="r"><link name="a">{INERTIAL.format(x=0.0, m=1.0)}</link>'
            f'<link name="b">{INERTIAL.format(x=0.1, m=0.5)}</link>'
            f'<joint name="elbow" type="{jtype}"><parent link="a"/><child link="b"/>'
            f'<origin xyz="0.2 -0.1 0.3" rpy="0.3 0.2 0.1"/><axis xyz="0 0 1"/>{joint_body}</joint>'
            f'</robot>')


def test_inverted_limit_is_no_limit_with_one_warning(tmp_path):
    p = tmp_path / "inv.urdf"
    p.write_text(_two_links('<limit lower="1.2" upper="-0.7" effort="5" velocity="2"/>'))
    d, ws = _warnings_of(str(p))
    j = d.joints[d.joint_index("elbow")]
    assert not j.limited
    assert len(ws) == 1
    text = str(ws[0].message)
    assert re.search(r"lower > upper: limit disabled.*'elbow'", text)
    assert text.count("elbow") == 1 and "no <limit>" not in text


def test_limit_without_lower_upper_gives_one_note_per_joint(tmp_path):
    """minitaur.urdf: `<limit effort velocity>` only gave two contradictory notes per joint."""
    joints = "".join(
        f'<link name="l{i}">{INERTIAL.format(x=0.01 * i, m=0.3)}</link><joint name="motor{i}" '
        f'type="revolute"><parent link="a"/><child link="l{i}"/><origin xyz="0.1 {i * 0.1} 0"/>'
        f'<axis xyz="0 1 0"/><limit effort="3.5" velocity="16"/></joint>' for i in range(3))
    p = tmp_path / "m.urdf"
    p.write_text(f'<robot name="m"><link name="a">{INERTIAL.format(x=0.0, m=1.0)}</link>{joints}</robot>')
    d, ws = _warnings_of(str(p))
    assert len(ws) == 1 and not any(j.limited for j in d.joints)
    text = str(ws[0].message)
    assert "has no <limit>" not in text and "without <limit>" not in text
    for i in range(3):
        assert text.count(f"'motor{i}'") == 1
    assert re.search(r"<limit> has no lower/upper \(left unlimited\): 'motor0', 'motor1', 'motor2'", text)


def test_equal_limits_are_no_limit_with_a_note(tmp_path):
    p = tmp_path / "eq.urdf"
    p.write_text(_two_links('<limit lower="0.25" upper="0.25"/>'))
    d, ws = _warnings_of(str(p))
    assert not d.joints[0].limited and "lower == upper: limit disabled" in str(ws[0].message)


# -- visual meshes that cannot be read --------------------------------------------------------------
OBJ = ("mtllib {mtl}\nv 0 0 0\nv 0.1 0 0\nv 0 0.2 0\nv 0 0 0.3\nvt 0 0\nvt 1 0\nvt 0 1\n"
       "usemtl red\nf 1/1 3/3 2/2\nf 1/1 2/2 4/1\nusemtl blue\nf 2/2 3/3 4/1\nf 1/1 4/1 3/3\n")


def _run_without(modules, code):
    """Run ``code`` in a fresh interpreter where importing ``modules`` fails; returns its JSON."""
    pre = "".join(f"sys.modules[{m!r}] = None\n" for m in modules)
    full = "import sys, json, warnings\n" + pre + code
    out = subprocess.run([sys.executable, "-c", full], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _robot_with_meshes(tmp_path, visual, collision):
    (tmp_path / "meshes").mkdir(exist_ok=True)
    (tmp_path / "meshes" / "leg.obj").write_text(OBJ.format(mtl="leg.mtl"))
    (tmp_path / "meshes" / "gone.obj").write_text(OBJ.format(mtl="not_there.mtl"))
    (tmp_path / "meshes" / "body.dae").write_text("<COLLADA/>")
    (tmp_path / "meshes" / "leg.mtl").write_text("newmtl red\nKd 1 0 0\nmap_Kd skin.png\n"
                                                  "newmtl blue\nKd 0 0 1\n")
    p = tmp_path / "robot.urdf"
    p.write_text(f"""<robot name="r">
  <link name="base">{INERTIAL.format(x=0.0, m=1.5)}
    <visual><origin xyz="0.1 0 0.05" rpy="0 0.2 0"/><geometry><mesh filename="meshes/{visual}"/></geometry></visual>
    <collision><origin xyz="0 0 0.1"/><geometry><mesh filename="meshes/{collision}" scale="2 2 2"/></geometry></collision>
  </link>
</robot>""")
    return str(p)


def test_obj_with_mtllib_reads_without_pil(tmp_path):
    """An OBJ whose mtllib is missing (trimesh then needs PIL for a default texture) or names a
    texture: read for geometry only, in an interpreter without PIL, as visual and as collision."""
    p = _robot_with_meshes(tmp_path, visual="gone.obj", collision="leg.obj")
    res = _run_without(["PIL", "PIL.Image"], f"""
import polyphys
warnings.simplefilter("ignore")
d = polyphys.describe({p!r})
print(json.dumps([[g.role, g.mesh.vertices.tolist()] for g in d.geoms]))
""")
    roles = sorted(r for r, _ in res)
    assert roles == ["collision", "visual"]
    for role, v in res:
        s = 2.0 if role == "collision" else 1.0
        # both OBJs span 0.1 x 0.2 x 0.3 (collision scaled by 2)
        np.testing.assert_allclose(np.ptp(np.asarray(v), axis=0), np.array([0.1, 0.2, 0.3]) * s,
                                   rtol=1e-12)


def test_dae_visual_without_pycollada_is_skipped_with_a_warning(tmp_path):
    """Without pycollada a .dae visual is skipped with a note naming the package; the same file as
    collision geometry is an error naming it."""
    p = _robot_with_meshes(tmp_path, visual="body.dae", collision="leg.obj")
    res = _run_without(["collada"], f"""
import polyphys
with warnings.catch_warnings(record=True) as rec:
    warnings.simplefilter("always")
    d = polyphys.describe({p!r})
print(json.dumps({{"roles": [g.role for g in d.geoms], "mass": d.total_mass,
                  "warnings": [str(w.message) for w in rec]}}))
""")
    assert res["roles"] == ["collision"] and res["mass"] == pytest.approx(1.5)
    assert len(res["warnings"]) == 1
    assert re.search(r"visual mesh of link 'base' skipped: .*body\.dae.*pycollada", res["warnings"][0])
    q = _robot_with_meshes(tmp_path, visual="leg.obj", collision="body.dae")
    res = _run_without(["collada"], f"""
import polyphys
from polyphys.errors import ImportError_
warnings.simplefilter("ignore")
try:
    polyphys.describe({q!r})
    print(json.dumps("loaded"))
except ImportError_ as exc:
    print(json.dumps(str(exc)))
""")
    assert re.search(re.escape(q) + r":4: <mesh> .*body\.dae.*needs the pycollada package", res)


def test_missing_visual_mesh_is_skipped_with_a_warning(tmp_path):
    p = _robot_with_meshes(tmp_path, visual="nowhere.stl", collision="leg.obj")
    d, ws = _warnings_of(p)
    assert [g.role for g in d.geoms] == ["collision"]
    assert re.search(r"visual mesh of link 'base' skipped: .*nowhere\.stl.*not found", str(ws[0].message))


def test_mjcf_visual_only_mesh_that_cannot_be_read(tmp_path):
    """The MJCF sibling: a visual-only geom (contype=conaffinity=0) whose mesh cannot be read is
    skipped with a note when its mass does not count; when the body's inertia comes from it, the
    error names the mesh."""
    (tmp_path / "bad.stl").write_bytes(b"")
    base = """<mujoco><asset><mesh name="m" file="bad.stl"/></asset><worldbody>
      <body name="b" pos="0.3 -0.2 1.1" euler="10 20 30"><freejoint/>
        <geom name="hull" type="box" size="0.1 0.2 0.05"/>
        <geom name="vis" type="mesh" mesh="m" contype="0" conaffinity="0" {extra}/>
      </body></worldbody></mujoco>"""
    p = tmp_path / "v.xml"
    p.write_text(base.format(extra='mass="0"'))
    d, ws = _warnings_of(str(p))
    assert [g.name for g in d.geoms] == ["hull"]
    assert d.total_mass == pytest.approx(1000 * 0.2 * 0.4 * 0.1)
    assert re.search(r"visual-only geom 'vis' skipped: .*bad\.stl.*empty", str(ws[0].message))
    p.write_text(base.format(extra=""))
    with pytest.raises(ImportError_, match=r"bad\.stl.*empty.*inertia comes from its geoms"):
        _describe(str(p))
    p.write_text(base.format(extra="").replace('contype="0" conaffinity="0" ', ""))
    with pytest.raises(ImportError_, match=r"v\.xml:1: <mesh name='m'>.*bad\.stl.*empty \(0 bytes\)"):
        _describe(str(p))


def _erd():
    import sysconfig

    base = os.path.join(sysconfig.get_paths()["purelib"], "cmeel.prefix", "share",
                        "example-robot-data", "robots")
    return base if os.path.isdir(base) else None


def test_example_robot_data_panda_without_pycollada():
    """example-robot-data's panda.urdf has .dae visuals and .stl collisions: without pycollada it
    loads, every collision mesh kept, every visual skipped in one warning."""
    base = _erd()
    if base is None:
        pytest.skip("example-robot-data is not installed (test extra)")
    path = os.path.join(base, "panda_description", "urdf", "panda.urdf")
    res = _run_without(["collada"], f"""
import polyphys
with warnings.catch_warnings(record=True) as rec:
    warnings.simplefilter("always")
    d = polyphys.describe({path!r}, package_dirs=({base!r},))
print(json.dumps({{"roles": [g.role for g in d.geoms], "n_dofs": d.n_dofs, "mass": d.total_mass,
                  "warnings": [str(w.message) for w in rec]}}))
""")
    import xml.etree.ElementTree as ET

    root = ET.parse(path).getroot()
    n_col = len(root.findall("link/collision"))
    n_dae_vis = sum(1 for v in root.findall("link/visual")
                    if v.find("geometry/mesh") is not None
                    and v.find("geometry/mesh").get("filename").endswith(".dae"))
    assert n_dae_vis > 0 and res["roles"].count("collision") == n_col
    assert res["roles"].count("visual") == len(root.findall("link/visual")) - n_dae_vis
    assert res["n_dofs"] == 9 and res["mass"] > 0
    assert len(res["warnings"]) == 1 and res["warnings"][0].count("needs the pycollada package") == n_dae_vis


# -- xacro leftovers --------------------------------------------------------------------------------
def test_xacro_find_is_an_error_naming_the_xacro_step(tmp_path):
    p = tmp_path / "x.urdf"
    p.write_text(f'<robot name="r">\n<link name="a">{INERTIAL.format(x=0, m=1)}\n<visual><geometry>'
                 f'<mesh filename="$(find my_robot)/meshes/a.stl"/></geometry></visual></link>\n</robot>')
    with pytest.raises(ImportError_, match=re.escape(str(p)) + r":3: <mesh> filename = "
                       r"'\$\(find my_robot\)/meshes/a\.stl': unexpanded xacro substitution "
                       r"'\$\(find my_robot\)'; this URDF must be generated by xacro first"):
        _describe(str(p))
    p.write_text(f'<robot name="r"><link name="a">{INERTIAL.format(x="${l/2}", m=1)}</link></robot>')
    with pytest.raises(ImportError_, match=r"<origin> xyz = .*unexpanded xacro expression '\$\{l/2\}'"):
        _describe(str(p))
    p.write_text('<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro">\n'
                 '<xacro:property name="l" value="1"/><link name="a"/></robot>')
    with pytest.raises(ImportError_, match=re.escape(str(p)) + r":2: <\{.*xacro\}property.*a xacro element"):
        _describe(str(p))


def test_xacro_optenv_is_evaluated(tmp_path, monkeypatch):
    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "leg.obj").write_text(OBJ.format(mtl="leg.mtl"))
    p = tmp_path / "o.urdf"
    p.write_text(f'<robot name="r"><link name="a">{INERTIAL.format(x=0, m=1)}<collision><origin '
                 f'xyz="$(optenv ARM_X 0.25) -0.1 0.3"/><geometry><mesh filename="$(optenv MESHES '
                 f'meshes)/leg.obj"/></geometry></collision></link></robot>')
    monkeypatch.delenv("ARM_X", raising=False)
    monkeypatch.delenv("MESHES", raising=False)
    d, ws = _warnings_of(str(p))
    assert d.geoms[0].pos == pytest.approx((0.25, -0.1, 0.3))
    assert "$(optenv ARM_X 0.25) -> '0.25'" in str(ws[0].message)
    monkeypatch.setenv("ARM_X", "-0.5")
    d = _describe(str(p))
    assert d.geoms[0].pos == pytest.approx((-0.5, -0.1, 0.3))


# -- warnings: once, at the caller, and inspect prints them once ------------------------------------
def test_importer_warning_points_at_the_caller(tmp_path):
    p = tmp_path / "inv.urdf"
    p.write_text(_two_links('<limit lower="1" upper="-1"/>'))
    _, ws = _warnings_of(str(p))
    assert len(ws) == 1 and os.path.abspath(ws[0].filename) == os.path.abspath(__file__)


def test_inspect_prints_each_warning_once(tmp_path, capsys):
    from polyphys import cli

    p = tmp_path / "inv.urdf"
    p.write_text(_two_links('<limit lower="1" upper="-1"/>'))
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        assert cli.main(["inspect", str(p)]) == 0
    out = capsys.readouterr()
    assert not [w for w in rec if issubclass(w.category, PolyphysWarning)]
    assert out.out.count("limit disabled") == 1 and "limit disabled" not in out.err


# -- mass -------------------------------------------------------------------------------------------
def test_urdf_without_inertials_warns_total_mass_zero(tmp_path):
    p = tmp_path / "nomass.urdf"
    p.write_text('<robot name="r"><link name="a"><collision><geometry><box size="0.1 0.2 0.3"/>'
                 '</geometry></collision></link><link name="b"/><joint name="j" type="continuous">'
                 '<parent link="a"/><child link="b"/><origin xyz="0.1 0.2 0.3"/></joint></robot>')
    d, ws = _warnings_of(str(p))
    assert d.total_mass == 0.0
    assert len(ws) == 1 and "total mass 0" in str(ws[0].message)
