"""Bad input: each a clear error naming the file, the element and what is allowed."""

import os
import warnings

import polyphys
import pytest
from polyphys.errors import ImportError_, OptionError


def _w(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def _load(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return polyphys.describe(path, **kw)


BODY = '<mujoco><worldbody><body name="b"><freejoint/>{}</body></worldbody></mujoco>'


def test_malformed_xml_names_file_and_line(tmp_path):
    p = _w(tmp_path, "bad.xml", '<mujoco>\n<worldbody>\n<body name="b">\n</worldbody></mujoco>')
    with pytest.raises(ImportError_, match=r"bad\.xml:4:\d+: malformed XML"):
        _load(p)
    u = _w(tmp_path, "bad.urdf", '<robot name="r">\n<link name="a">\n</robot>')
    with pytest.raises(ImportError_, match=r"bad\.urdf:3:\d+: malformed XML"):
        _load(u)


def test_missing_mesh_names_the_path(tmp_path):
    p = _w(tmp_path, "m.xml", '<mujoco><asset><mesh name="x" file="nope.stl"/></asset>'
           + BODY.format('<geom type="mesh" mesh="x"/>')[len("<mujoco>"):])
    with pytest.raises(ImportError_, match=r"nope\.stl.*not found \(looked at .*nope\.stl"):
        _load(p)
    u = _w(tmp_path, "m.urdf", '<robot name="r"><link name="a"><collision><geometry>'
           '<mesh filename="package://pkg/meshes/x.stl"/></geometry></collision></link></robot>')
    with pytest.raises(ImportError_, match=r"m\.urdf:1: <mesh> filename.*package://pkg/meshes/x\.stl.*"
                                           r"not found.*looked at"):
        _load(u)


def test_missing_include_names_the_path(tmp_path):
    p = _w(tmp_path, "i.xml", '<mujoco><include file="gone.xml"/></mujoco>')
    with pytest.raises(ImportError_, match=r"gone\.xml.*not found \(looked at .*gone\.xml"):
        _load(p)


def test_unknown_joint_and_geom_types(tmp_path):
    p = _w(tmp_path, "j.xml", BODY.format('<body name="c"><joint type="screw"/></body>'))
    with pytest.raises(ImportError_, match=r"j\.xml:1: <joint> type = 'screw': allowed .*'hinge'"):
        _load(p)
    p = _w(tmp_path, "g.xml", BODY.format('<geom type="torus" size="1"/>'))
    with pytest.raises(ImportError_, match=r"g\.xml:1: <geom> type = 'torus': allowed .*'sphere'"):
        _load(p)
    u = _w(tmp_path, "j.urdf", '<robot name="r"><link name="a"/><link name="b"/><joint name="j" '
           'type="helical"><parent link="a"/><child link="b"/></joint></robot>')
    with pytest.raises(ImportError_, match=r"j\.urdf:1: <joint name='j'> type = 'helical': allowed .*'revolute'"):
        _load(u)


def test_planar_urdf_joint_is_refused(tmp_path):
    u = _w(tmp_path, "p.urdf", '<robot name="r"><link name="a"/><link name="b"/><joint name="j" '
           'type="planar"><parent link="a"/><child link="b"/></joint></robot>')
    with pytest.raises(ImportError_, match="planar"):
        _load(u)


def test_negative_mass_and_bad_inertia(tmp_path):
    p = _w(tmp_path, "n.xml", BODY.format('<inertial mass="-1" diaginertia="1 1 1"/>'))
    with pytest.raises(ImportError_, match=r"n\.xml:1: <inertial> mass = '-1': .*must be >= 0"):
        _load(p)
    p = _w(tmp_path, "i.xml", BODY.format('<inertial mass="1" diaginertia="1 -1 1"/>'))
    with pytest.raises(ImportError_, match=r"i\.xml:1: <inertial>.*not positive definite"):
        _load(p)
    u = _w(tmp_path, "n.urdf", '<robot name="r"><link name="a"><inertial><mass value="-2"/>'
           '<inertia ixx="1" iyy="1" izz="1"/></inertial></link></robot>')
    with pytest.raises(ImportError_, match=r"n\.urdf:1: <mass> value = '-2': .*must be >= 0"):
        _load(u)
    u = _w(tmp_path, "i.urdf", '<robot name="r"><link name="a"><inertial><mass value="1"/>'
           '<inertia ixx="1" iyy="1" izz="1" ixy="5"/></inertial></link></robot>')
    with pytest.raises(ImportError_, match=r"i\.urdf:1: <inertia>.*not positive definite"):
        _load(u)


def test_urdf_cycle(tmp_path):
    links = "".join(f'<link name="{n}"/>' for n in "abc")
    joints = "".join(f'<joint name="j{p}{c}" type="fixed"><parent link="{p}"/><child link="{c}"/>'
                     f'</joint>' for p, c in (("a", "b"), ("b", "c"), ("c", "a")))
    u = _w(tmp_path, "c.urdf", f'<robot name="r">{links}{joints}</robot>')
    with pytest.raises(ImportError_, match="cycle"):
        _load(u)
    links = "".join(f'<link name="{n}"/>' for n in "rabc")
    joints = "".join(f'<joint name="j{p}{c}" type="fixed"><parent link="{p}"/><child link="{c}"/>'
                     f'</joint>' for p, c in (("a", "b"), ("b", "c"), ("c", "a")))
    u = _w(tmp_path, "c2.urdf", f'<robot name="r">{links}{joints}</robot>')
    with pytest.raises(ImportError_, match="cycle"):
        _load(u)


def test_duplicate_names(tmp_path):
    p = _w(tmp_path, "d.xml", BODY.format('<body name="b"><joint/><geom size="1"/></body>'))
    with pytest.raises(ImportError_, match="duplicate link name 'b'"):
        _load(p)
    p = _w(tmp_path, "g.xml", BODY.format('<geom name="g" size="1"/><geom name="g" size="1"/>'))
    with pytest.raises(ImportError_, match="duplicate geom name 'g'"):
        _load(p)
    u = _w(tmp_path, "d.urdf", '<robot name="r"><link name="a"/><link name="a"/></robot>')
    with pytest.raises(ImportError_, match="duplicate link name 'a'"):
        _load(u)


def test_undefined_default_class(tmp_path):
    p = _w(tmp_path, "c.xml", BODY.format('<geom class="nope" size="1"/>'))
    with pytest.raises(ImportError_, match="class 'nope'.*not defined"):
        _load(p)


def test_missing_file_is_an_option_error(tmp_path):
    with pytest.raises(OptionError, match="no such file"):
        polyphys.describe(os.path.join(str(tmp_path), "absent.xml"))


def test_triangle_inequality_is_a_warning(tmp_path):
    p = _w(tmp_path, "t.xml", BODY.format('<inertial mass="1" diaginertia="1 1 3"/>'))
    with pytest.warns(polyphys.errors.PolyphysWarning, match="triangle inequality"):
        d = polyphys.describe(p)
    assert d.links[1].inertial.inertia[2, 2] == 3.0
