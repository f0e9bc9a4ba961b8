"""Damaged and physically invalid model files (issue 19): every outcome is a load whose description
is finite and physically valid, or an ImportError_ naming file, line, element and attribute.

The bad value sits on a known line of a multi-line file, in a body placed off the origin and
rotated, so the line number in the message is checked, not just the file name."""

import os
import re
import warnings

import numpy as np
import polyphys
import pytest
from polyphys.description import description_problems
from polyphys.errors import ImportError_

MJCF = """<mujoco model="m">
  <default><default class="bad">{default}</default></default>
  <worldbody>
    <body name="b" pos="0.31 -0.22 1.13" euler="10 20 30" {body_attr}>
      <freejoint/>
      <geom name="g0" type="box" size="0.1 0.2 0.05"/>
      <body name="c" pos="0.1 0.05 -0.2">
        {line8}
        <geom name="g1" type="capsule" fromto="0 0 0 0.2 0.1 0" size="0.03"/>
      </body>
    </body>
  </worldbody>
  {tail}
</mujoco>
"""
LINE = 8      # the line holding the element under test


def _mjcf(tmp_path, line8="", default="", body_attr="", tail="", name="m.xml"):
    p = tmp_path / name
    p.write_text(MJCF.format(line8=line8, default=default, body_attr=body_attr, tail=tail))
    return str(p)


def _describe(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return polyphys.describe(path, **kw)


def _raises(path, line, tag, attr, more=""):
    """ImportError_ 'path:line: <tag ...> attr = ...' (the value is quoted as written)."""
    pat = re.escape(path) + rf":{line}: <{tag}[^>]*> {attr}( = |: ).*{more}"
    with pytest.raises(ImportError_, match=pat):
        _describe(path)


MJCF_BAD = [
    # (element on line 8, tag, attribute, what the message says)
    ('<joint name="j" stiffness="abc"/>', "joint", "stiffness", "not a number"),
    ('<joint name="j" margin=""/>', "joint", "margin", "expected one number"),
    ('<joint name="j" axis="nan 0 1"/>', "joint", "axis", "not a finite number"),
    ('<joint name="j" axis="inf 0 1"/>', "joint", "axis", "not a finite number"),
    ('<joint name="j" axis="0 0 0"/>', "joint", "axis", "non-zero"),
    ('<joint name="j" stiffness="nan"/>', "joint", "stiffness", "not a finite number"),
    ('<joint name="j" armature="-0.3"/>', "joint", "armature", ">= 0"),
    ('<joint name="j" frictionloss="-2"/>', "joint", "frictionloss", ">= 0"),
    ('<joint name="j" damping="-1"/>', "joint", "damping", ">= 0"),
    ('<joint name="j" range="1 -1" limited="true"/>', "joint", "range", "lower > upper"),
    ('<joint name="j" springdamper="-1 1"/>', "joint", "springdamper", "both be > 0"),
    ('<geom name="x" type="box" size="1e308 1 1"/>', "geom", "size", "float32 range"),
    ('<geom name="x" type="box" size="1e20 1e20 1e20"/>', "geom", "size", "overflow float32"),
    ('<geom name="x" size="nan"/>', "geom", "size", "not a finite number"),
    ('<geom name="x" size="0"/>', "geom", "size", "positive size"),
    ('<geom name="x" type="capsule" size="0.1"/>', "geom", "size", "positive size"),
    ('<geom name="x" size="0.1" density="nan"/>', "geom", "density", "not a finite number"),
    ('<geom name="x" size="0.1" density="-5"/>', "geom", "density", ">= 0"),
    ('<geom name="x" size="0.1" friction="-1"/>', "geom", "friction", ">= 0"),
    ('<geom name="x" size="0.1" condim="2.5"/>', "geom", "condim", "not an integer"),
    ('<geom name="x" size="0.1" condim="2"/>', "geom", "condim", "allowed values"),
    ('<geom name="x" size="0.1" quat="0 0 0 0"/>', "geom", "quat", "non-zero"),
    ('<geom name="x" size="0.1" axisangle="0 0 0 1"/>', "geom", "axisangle", "non-zero"),
    ('<geom name="x" size="0.1" pos="1 2"/>', "geom", "pos", "expected 3 numbers"),
    ('<inertial mass="inf" diaginertia="1 1 1"/>', "inertial", "mass", "not a finite number"),
    ('<inertial mass="1" diaginertia="1e308 1e308 1e308"/>', "inertial", "diaginertia",
     "float32 range"),
    ('<site name="s" size="-0.1"/>', "site", "size", ">= 0"),
]


@pytest.mark.parametrize("element,tag,attr,says", MJCF_BAD, ids=[c[0] for c in MJCF_BAD])
def test_mjcf_bad_value_names_file_line_element_attribute(tmp_path, element, tag, attr, says):
    _raises(_mjcf(tmp_path, line8=element), LINE, tag, attr, says)


def test_mjcf_bad_body_and_actuator_values(tmp_path):
    _raises(_mjcf(tmp_path, body_attr='gravcomp="nan"'), 4, "body", "gravcomp", "finite")
    tail = '<actuator>\n<motor name="m" joint="j" gear="inf"/>\n</actuator>'
    _raises(_mjcf(tmp_path, line8='<joint name="j"/>', tail=tail), 14, "motor", "gear", "finite")
    tail = '<actuator>\n<motor name="m" joint="j" ctrlrange="1 -1" ctrllimited="true"/>\n</actuator>'
    _raises(_mjcf(tmp_path, line8='<joint name="j"/>', tail=tail), 14, "motor", "ctrlrange",
            "lower > upper")
    tail = '<option timestep="-0.01"/>'
    _raises(_mjcf(tmp_path, tail=tail), 13, "option", "timestep", "> 0")


def test_mjcf_bad_default_names_where_the_default_was_written(tmp_path):
    """A bad value inherited from a default class: the message points at the default's line and
    names the element that uses it."""
    p = _mjcf(tmp_path, default='<joint damping="-4"/>', line8='<joint name="j" class="bad"/>')
    with pytest.raises(ImportError_, match=re.escape(p) + r":2: <joint> \(default of "
                       + re.escape(p) + r":8: <joint name='j'>\) damping = '-4'"):
        _describe(p)


def test_mjcf_included_file_errors_name_the_included_file(tmp_path):
    inc = tmp_path / "part.xml"
    inc.write_text('<mujoco>\n<worldbody>\n<body name="p">\n<joint stiffness="x1"/>\n'
                   '<geom size="0.1"/></body></worldbody></mujoco>')
    p = tmp_path / "main.xml"
    p.write_text('<mujoco>\n<include file="part.xml"/>\n</mujoco>')
    with pytest.raises(ImportError_, match=re.escape(str(inc)) + r":4: <joint> stiffness = 'x1'"):
        _describe(str(p))


URDF = """<?xml version="1.0"?>
<robot name="r">
  <link name="base">
    <inertial><origin xyz="0.01 0.02 0.03" rpy="0.1 0.2 0.3"/><mass value="2"/>
      <inertia ixx="0.02" ixy="0.001" ixz="0" iyy="0.03" iyz="0" izz="0.04"/></inertial>
  </link>
  <link name="arm">
    {line8}
    <collision><geometry><box size="0.1 0.2 0.3"/></geometry></collision>
  </link>
  <joint name="j" type="revolute"><parent link="base"/><child link="arm"/>
    <origin xyz="0.2 -0.1 0.3" rpy="0.3 0.2 0.1"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1"/>
    {line14}
  </joint>
</robot>
"""


def _urdf(tmp_path, line8="", line14="", name="r.urdf"):
    p = tmp_path / name
    p.write_text(URDF.format(line8=line8, line14=line14))
    return str(p)


URDF_BAD = [
    ('<inertial><mass value="abc"/></inertial>', 8, "mass", "value", "not a number"),
    ('<inertial><mass value="inf"/></inertial>', 8, "mass", "value", "not a finite number"),
    ('<inertial><mass value="1"/><inertia ixx="nan"/></inertial>', 8, "inertia", "ixx", "finite"),
    ('<collision><geometry><sphere/></geometry></collision>', 8, "sphere", "radius", "required"),
    ('<collision><geometry><sphere radius="0"/></geometry></collision>', 8, "sphere", "radius",
     "> 0"),
    ('<collision><geometry><cylinder radius="0.1" length="-1"/></geometry></collision>', 8,
     "cylinder", "length", "> 0"),
    ('<collision><geometry><box size="1 nan 1"/></geometry></collision>', 8, "box", "size",
     "finite"),
    ('<collision><origin xyz="0 0 abc"/><geometry><sphere radius="1"/></geometry></collision>', 8,
     "origin", "xyz", "not a number"),
    ('<dynamics damping="-1"/>', 14, "dynamics", "damping", ">= 0"),
    ('<dynamics friction="nan"/>', 14, "dynamics", "friction", "finite"),
    ('<mimic joint="j" multiplier="inf"/>', 14, "mimic", "multiplier", "finite"),
]


@pytest.mark.parametrize("element,line,tag,attr,says", URDF_BAD, ids=[c[0] for c in URDF_BAD])
def test_urdf_bad_value_names_file_line_element_attribute(tmp_path, element, line, tag, attr, says):
    kw = {"line14": element} if line == 14 else {"line8": element}
    _raises(_urdf(tmp_path, **kw), line, tag, attr, says)


def test_urdf_bad_axis_and_limit(tmp_path):
    p = tmp_path / "a.urdf"
    p.write_text(URDF.format(line8="", line14="").replace('<axis xyz="0 1 0"/>', '<axis xyz="nan 1 0"/>'))
    _raises(str(p), 12, "axis", "xyz", "finite")
    p.write_text(URDF.format(line8="", line14="").replace('<axis xyz="0 1 0"/>', '<axis xyz="0 0 0"/>'))
    _raises(str(p), 12, "axis", "xyz", "non-zero")
    p.write_text(URDF.format(line8="", line14="").replace('upper="1"', 'upper="x"'))
    _raises(str(p), 13, "limit", "upper", "not a number")


def _stl(path, data=b""):
    path.write_bytes(data)
    return str(path)


def test_empty_and_garbage_collision_meshes_are_errors(tmp_path):
    """A 0-byte or unparsable mesh used for collision (or mass) is an ImportError_ naming the geom
    element and the mesh file; before, a 0-byte STL loaded as a mesh without vertices."""
    empty = _stl(tmp_path / "empty.stl")
    p = _urdf(tmp_path, line8=f'<collision><geometry><mesh filename="{empty}"/></geometry></collision>')
    with pytest.raises(ImportError_, match=re.escape(p) + r":8: <mesh>.*empty\.stl.*empty \(0 bytes\)"):
        _describe(p)
    junk = _stl(tmp_path / "junk.stl", b"solid x\nfacet normal 1 2\n\xff\xfe")
    p = _urdf(tmp_path, line8=f'<collision><geometry><mesh filename="{junk}"/></geometry></collision>')
    with pytest.raises(ImportError_, match=re.escape(p) + r":8: <mesh>.*junk\.stl"):
        _describe(p)
    tail = f'<asset>\n<mesh name="e" file="{empty}"/>\n</asset>'
    p = _mjcf(tmp_path, line8='<geom name="x" type="mesh" mesh="e"/>', tail=tail)
    with pytest.raises(ImportError_, match=re.escape(p) + r":14: <mesh name='e'>.*empty \(0 bytes\)"):
        _describe(p)


def _chain_pos(n, step, quat_step):
    from polyphys.description import quat_to_mat

    pos, rot = np.zeros(3), np.eye(3)
    for _ in range(n):
        pos = pos + rot @ np.asarray(step)
        rot = rot @ quat_to_mat(quat_step)
    return pos


@pytest.mark.parametrize("depth", [900, pytest.param(3000, marks=pytest.mark.validate)])
def test_deep_body_chains_load(tmp_path, depth):
    """Chains 900 and 3000 bodies deep (RecursionError before) load in order; the deepest body's
    world position equals the composed offsets (each body rotated 1 degree about z)."""
    from polyphys.importers.mjcf.importer import world_poses

    step = (0.011, -0.004, 0.021)
    c, s = np.cos(np.radians(0.5)), np.sin(np.radians(0.5))
    chain = "".join(f'<body name="d{i}" pos="{step[0]} {step[1]} {step[2]}" euler="0 0 1">'
                    f'<joint name="j{i}"/><geom size="0.01"/>' for i in range(depth))
    p = tmp_path / "deep.xml"
    p.write_text(f"<mujoco><worldbody>{chain}{'</body>' * depth}</worldbody></mujoco>")
    d = _describe(str(p))
    assert d.n_links == depth + 1 and [j.name for j in d.joints] == [f"j{i}" for i in range(depth)]
    wpos, _ = world_poses(d)
    np.testing.assert_allclose(wpos[-1], _chain_pos(depth, step, (c, 0, 0, s)), rtol=1e-9)
    links = "".join(f'<link name="l{i}"><inertial><mass value="0.1"/><inertia ixx="1e-4" '
                    f'iyy="1e-4" izz="1e-4"/></inertial></link>' for i in range(depth + 1))
    joints = "".join(f'<joint name="j{i}" type="continuous"><parent link="l{i}"/><child '
                     f'link="l{i + 1}"/><origin xyz="{step[0]} {step[1]} {step[2]}" '
                     f'rpy="0 0 {np.radians(1.0)}"/></joint>' for i in range(depth))
    u = tmp_path / "deep.urdf"
    u.write_text(f'<robot name="r">{links}{joints}</robot>')
    d = _describe(str(u))
    assert d.n_links == depth + 1 and d.n_dofs == depth
    wpos, _ = world_poses(d)
    np.testing.assert_allclose(wpos[-1], _chain_pos(depth, step, (c, 0, 0, s)), rtol=1e-9)


ENC_BODY = ('<mujoco model="{name}"><worldbody><body name="{name}" pos="0.3 -0.2 1" euler="5 6 7">'
            '<freejoint/><geom size="0.1"/></body></worldbody></mujoco>')


@pytest.mark.parametrize("encoding,declare", [("utf-16", False), ("utf-16-le", False),
                                              ("utf-16-be", True), ("utf-32", False),
                                              ("utf-8-sig", False), ("latin-1", True),
                                              ("shift_jis", True), ("cp1252", True)])
def test_odd_encodings_load(tmp_path, encoding, declare):
    """Files in any encoding Python knows load, with their non-ASCII names intact."""
    name = "b\u00e9" if encoding not in ("shift_jis",) else "\u30dc\u30c7\u30a3"
    text = ENC_BODY.format(name=name)
    if declare:
        text = f'<?xml version="1.0" encoding="{encoding}"?>\n' + text
    p = tmp_path / "enc.xml"
    p.write_bytes(text.encode(encoding))
    d = _describe(str(p))
    assert d.name == name and d.links[1].name == name
    assert d.links[1].pos == pytest.approx((0.3, -0.2, 1.0))


def test_bad_encodings_are_errors(tmp_path):
    p = tmp_path / "e.xml"
    p.write_bytes(b'<?xml version="1.0" encoding="klingon"?>\n<mujoco/>')
    with pytest.raises(ImportError_, match=re.escape(str(p)) + r":1: .*encoding='klingon'.*unknown"):
        _describe(str(p))
    p.write_bytes(b'<?xml version="1.0" encoding="utf\x008"?>\n<mujoco/>')
    with pytest.raises(ImportError_, match=re.escape(str(p)) + r":1: .*encoding='utf\\x008'.*unknown"):
        _describe(str(p))
    p.write_bytes(b'<mujoco>\n<worldbody>\n<body name="\xff\xfe"/></worldbody></mujoco>')
    with pytest.raises(ImportError_, match=re.escape(str(p)) + r":3: text is not valid UTF-8"):
        _describe(str(p))
    p.write_bytes("<mujoco/>".encode("utf-16")[:-1])
    with pytest.raises(ImportError_, match=re.escape(str(p)) + r": file is UTF-16"):
        _describe(str(p))


def test_truncated_file_names_file_and_line(tmp_path):
    text = MJCF.format(line8="", default="", body_attr="", tail="")
    p = tmp_path / "t.xml"
    p.write_text(text[: text.index("<geom name=\"g1\"") + 10])
    with pytest.raises(ImportError_, match=re.escape(str(p)) + r":9:\d+: malformed XML"):
        _describe(str(p))


def test_every_loaded_description_is_valid(tmp_path):
    """A file that loads gives a description with no problem (what the core checks)."""
    d = _describe(_mjcf(tmp_path, line8='<joint name="j" axis="0 3 4" range="-30 45" armature="0.1"/>'))
    assert description_problems(d) == []
    j = d.joints[d.joint_index("j")]
    assert j.axis == pytest.approx((0.0, 0.6, 0.8)) and j.range == pytest.approx(np.radians([-30, 45]))


def test_validator_catches_what_an_importer_lets_through(tmp_path):
    """A third-party importer's description goes through the same check: NaN axis, negative
    armature, infinite mass, a zero-size sphere and a non-unit quaternion are reported with the
    file name (and the src location the importer recorded)."""
    from polyphys.description import EntityDescription, Geom, Inertial, Joint, Link

    d = EntityDescription(name="x", source="f")
    d.links.append(Link(name="a", pos=(0.3, 0.1, 1.0), quat=(1.0, 0.1, 0.0, 0.0),
                        inertial=Inertial(mass=float("inf")), src="f.xml:3: <body name='a'>"))
    d.joints.append(Joint(name="j", type="revolute", link=0, axis=(np.nan, 0.0, 1.0), armature=-1.0))
    d.links[0].joints.append(0)
    d.geoms.append(Geom(name="g", type="sphere", link=0, size=(0.0, 0.0, 0.0)))
    d.finalize()
    probs = "\n".join(description_problems(d))
    for expect in (r"f\.xml:3: <body name='a'> link 'a' quat = .*unit length",
                   r"link 'a' mass = inf: not finite", r"joint 'j' axis = \(nan, 0, 1\): not finite",
                   r"joint 'j' armature = -1: must be >= 0", r"geom 'g' size = .*positive size"):
        assert re.search(expect, probs), (expect, probs)


def test_third_party_importer_output_is_checked_and_errors_name_the_file(tmp_path):
    """An importer registered by a third party: its OptionError without the file name, and its
    description with a NaN, both become ImportError_ naming the file."""
    import attrs
    from polyphys import hookimpl
    from polyphys.specs import ImporterSpec

    @attrs.define(kw_only=True)
    class Nonsense(polyphys.morphs.FileMorph):
        mode: str = "nan"

    class Plugin:
        @hookimpl
        def polyphys_importers(self):
            return [ImporterSpec(name="nonsense", target="nonsense_importer:NonsenseImporter",
                                 morphs=("Nonsense",), suffixes=(".nonsense",))]

    p = tmp_path / "model.nonsense"
    p.write_text("anything")
    name = polyphys.register(Plugin(), name="nonsense-test")
    try:
        with pytest.raises(ImportError_, match=re.escape(str(p)) + r": importer 'nonsense' gave a "
                           r"description .*joint 'hinge' axis = \(nan, 0, 1\): not finite"):
            _describe(Nonsense(file=str(p)))
        with pytest.raises(ImportError_, match=re.escape(str(p)) + r": bad thing in the file"):
            _describe(Nonsense(file=str(p), mode="option_error"))
    finally:
        polyphys.unregister(name)


def test_no_raw_exception_for_any_attribute_of_a_real_file(tmp_path):
    """Every attribute of the gymnasium ant replaced by 'abc' or NaN (alternately): an ImportError_ naming the
    file, a line and an element, or a load (attributes the importer does not read, names)."""
    import importlib.util

    spec = importlib.util.find_spec("gymnasium")
    if spec is None:
        pytest.skip("gymnasium is not installed (test extra)")
    src = os.path.join(list(spec.submodule_search_locations)[0], "envs", "mujoco", "assets", "ant.xml")
    text = open(src).read()
    attrs = list(re.finditer(r'(\s)([A-Za-z_]+)="([^"]*)"', text))
    assert len(attrs) > 50
    n_err = 0
    for k, m in enumerate(attrs):
        bad = ("abc", "nan")[k % 2]
        p = tmp_path / "ant.xml"
        p.write_text(text[:m.start(3)] + bad + text[m.end(3):])
        try:
            d = _describe(str(p))
        except ImportError_ as exc:
            # the attribute's own line, or the line of what refers to it (a renamed joint
            # named by an actuator), or the core check's location
            assert re.match(re.escape(str(p)) + r"(:\d+: <\w+|: importer 'mjcf')", str(exc)), str(exc)
            n_err += 1
            continue
        assert description_problems(d) == []
    assert n_err > len(attrs) // 2   # most attributes are numbers
