"""Hand-written MJCF covering the importer's features, compared with MuJoCo's compiler, plus the
morph options (scale, fixed, visual), tolerant reading and the inspect summary."""

import json
import os
import warnings

import numpy as np
import polyphys
import pytest
from polyphys.description import describe_to_dict
from polyphys.errors import PolyphysWarning

FEATURES = """<mujoco model="features">
  <compiler angle="radian" eulerseq="zyx" meshdir="meshes" autolimits="true"/>
  <option timestep="0.004" gravity="0 0 -9.7" integrator="implicitfast" cone="elliptic"
          impratio="10" iterations="20" wind="1 0 0"/>
  <size nkey="2"/>
  <include file="defaults.xml"/>
  <default><site size="0.02"/></default>
  <asset>
    <mesh name="tet" file="tet.stl" scale="1 2 1"/>
    <mesh file="tet2.obj" scale="0.5 0.5 0.5"/>
    <hfield name="bumps" nrow="2" ncol="3" size="1 2 0.3 0.1" elevation="0 1 2 3 4 5"/>
    <mesh name="boxmesh" vertex="0 0 0 1 0 0 0 1 0 1 1 0 0 0 1 1 0 1 0 1 1 1 1 1"/>
  </asset>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <geom name="terrain" type="hfield" hfield="bumps" pos="3 0 0"/>
    <body name="base" pos="0 0 1" euler="0.1 0.2 0.3" childclass="arm" gravcomp="0.5">
      <freejoint name="root"/>
      <geom name="torso" type="capsule" fromto="0 0 0 0.3 0.1 0.2" size="0.05"/>
      <geom name="m1" type="mesh" mesh="tet" pos="0.1 0 0" axisangle="0 0 1 0.5"/>
      <geom name="hull" type="mesh" mesh="boxmesh" density="500" group="2"/>
      <geom name="objgeom" type="mesh" mesh="tet2" pos="0 0.1 0" mass="0.3"/>
      <site name="s0" pos="0 0 0.1"/>
      <frame pos="0.2 0 0" xyaxes="0 1 0 -1 0 0">
        <body name="upper" pos="0 0 0.1" zaxis="0 1 1">
          <joint name="shoulder" type="hinge" axis="1 1 0" range="-1 1" damping="0.3"/>
          <joint name="twist" class="soft" type="hinge"/>
          <geom name="ua" type="cylinder" size="0.04 0.2" friction="0.7"/>
          <geom name="ub" type="box" size="0.1 0.05 0.02" pos="0 0 0.3" mass="2"/>
          <body name="lower" pos="0 0 0.4" quat="0.9 0.1 0 0.2">
            <joint name="slide" type="slide" axis="0 0 1" range="-0.1 0.2"/>
            <joint name="ball" type="ball"/>
            <inertial pos="0.01 0.02 0.03" mass="1.5" fullinertia="0.03 0.02 0.025 0.001 -0.002 0.003"/>
            <geom name="el" type="ellipsoid" size="0.1 0.05 0.04" class="light"/>
            <geom name="sp" type="sphere" size="0.05" pos="0 0 0.1" priority="2" solmix="0.5"
                  margin="0.01" gap="0.005" condim="6"/>
          </body>
        </body>
      </frame>
    </body>
  </worldbody>
  <contact>
    <exclude body1="base" body2="upper"/>
    <pair geom1="sp" geom2="floor" friction="0.9 0.9 0.01 0.001 0.001"/>
  </contact>
  <equality>
    <joint joint1="shoulder" joint2="twist" polycoef="0 0.5 0 0 0"/>
    <connect body1="lower" body2="base" anchor="0 0 0.1"/>
    <weld body1="lower" body2="base" anchor="0.1 0 0" torquescale="2" solref="0.05 1"/>
    <weld body1="upper" relpose="0.1 0.2 0.3 0.9 0 0.1 0"/>
    <weld body1="upper" body2="world" active="false"/>
  </equality>
  <tendon>
    <fixed name="t"><joint joint="shoulder" coef="1"/><joint joint="twist" coef="-1"/></fixed>
  </tendon>
  <actuator>
    <motor name="m" joint="shoulder" gear="2" ctrlrange="-1 1"/>
    <position name="p" joint="slide" kp="50" kv="3"/>
    <velocity name="v" joint="twist" class="soft"/>
    <general name="g" joint="shoulder" gainprm="3" biastype="affine" biasprm="0 -1 -0.1" forcerange="-5 5"/>
  </actuator>
  <sensor><jointpos joint="shoulder"/></sensor>
</mujoco>
"""

DEFAULTS = """<mujoco>
  <default>
    <geom density="800" friction="1 0.01 0.001" rgba="1 0 0 1"/>
    <joint armature="0.01"/>
    <default class="arm">
      <joint damping="0.1" frictionloss="0.02" stiffness="1" springref="0.1"/>
      <geom friction="0.5"/>
      <default class="soft">
        <joint axis="0 1 0" range="-0.5 0.5" armature="0.05"/>
        <velocity kv="7" ctrlrange="-2 2"/>
      </default>
      <default class="light"><geom density="100"/></default>
    </default>
  </default>
</mujoco>
"""


def _write_model(d, text=FEATURES):
    import trimesh

    os.makedirs(os.path.join(d, "meshes"), exist_ok=True)
    tet = trimesh.Trimesh([[0, 0, 0], [0.2, 0, 0], [0, 0.15, 0], [0.02, 0.03, 0.25]],
                          [[0, 2, 1], [0, 1, 3], [1, 2, 3], [0, 3, 2]])
    tet.export(os.path.join(d, "meshes", "tet.stl"))
    tet.export(os.path.join(d, "meshes", "tet2.obj"))
    with open(os.path.join(d, "defaults.xml"), "w") as fh:
        fh.write(DEFAULTS)
    path = os.path.join(d, "features.xml")
    with open(path, "w") as fh:
        fh.write(text)
    return path


def _describe(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return polyphys.describe(path, **kw)


def test_features_match_mujoco(tmp_path):
    mujoco = pytest.importorskip("mujoco")
    from mujoco_compare import compare

    path = _write_model(str(tmp_path))
    compare(_describe(path), mujoco.MjModel.from_xml_path(path), mujoco)


def test_features_parsed(tmp_path):
    path = _write_model(str(tmp_path))
    with pytest.warns(PolyphysWarning) as rec:
        desc = polyphys.describe(path)
    text = " ".join(str(w.message) for w in rec)
    assert len(rec) == 1, "unsupported elements are reported in one warning"
    for word in ("tendon fixed", "wind"):
        assert word in text
    assert [(r.kind, r.options) for r in desc.sensors] == [("joint", {"joints": ["shoulder"], "outputs": ("pos",)})]
    assert desc.options["dt"] == 0.004 and desc.options["friction_cone"] == "elliptic"
    assert desc.options["integrator"] == "implicitfast" and desc.options["impratio"] == 10
    assert desc.links[desc.link_index("base")].gravcomp == 0.5
    assert desc.contact_excludes == [(desc.link_index("base"), desc.link_index("upper"))]
    assert desc.contact_pairs[0]["friction"] == (0.9, 0.9, 0.01, 0.001, 0.001)
    assert [e.type for e in desc.equalities] == ["joint", "connect", "weld", "weld", "weld"]
    assert desc.equalities[3].obj2 == desc.equalities[4].obj2 == -1   # the world
    assert not desc.equalities[4].active
    assert desc.tendons[0]["joints"] == [(desc.joint_index("shoulder"), 1.0),
                                         (desc.joint_index("twist"), -1.0)]
    sp = desc.geoms[[g.name for g in desc.geoms].index("sp")]
    assert (sp.priority, sp.condim, sp.solmix, sp.margin, sp.gap) == (2, 6, 0.5, 0.01, 0.005)
    twist = desc.joints[desc.joint_index("twist")]
    assert twist.axis == (0.0, 1.0, 0.0) and twist.armature == 0.05 and twist.damping == 0.1
    vel = desc.actuators[2]
    assert vel.gainprm[0] == 7 and vel.biasprm[2] == -7 and vel.ctrlrange == (-2.0, 2.0)
    assert len(desc.keyframes) == 2
    np.testing.assert_allclose(desc.keyframes[0].qpos, desc.qpos0())


def test_scale_and_fixed(tmp_path):
    path = _write_model(str(tmp_path))
    d1 = _describe(path)
    d2 = _describe(path, scale=2.0)
    for a, b in zip(d1.links, d2.links):
        np.testing.assert_allclose(b.inertial.mass, a.inertial.mass * 8, rtol=1e-12)
        np.testing.assert_allclose(b.inertial.inertia, a.inertial.inertia * 32, rtol=1e-12,
                                   atol=1e-15)
        np.testing.assert_allclose(b.pos, np.asarray(a.pos) * 2, rtol=1e-12)
        np.testing.assert_allclose(b.inertial.com, np.asarray(a.inertial.com) * 2, rtol=1e-12)
    for a, b in zip(d1.geoms, d2.geoms):
        np.testing.assert_allclose(b.size, np.asarray(a.size) * 2, rtol=1e-12)
        assert (b.margin, b.gap) == (a.margin * 2, a.gap * 2)
        np.testing.assert_allclose(b.friction, np.asarray(a.friction) * (1, 2, 2), rtol=1e-12)
        if a.mesh is not None:
            np.testing.assert_allclose(b.mesh.vertices, a.mesh.vertices * 2, rtol=1e-12)
    np.testing.assert_allclose(d2.equalities[1].anchor, np.asarray(d1.equalities[1].anchor) * 2)
    np.testing.assert_allclose(d2.keyframes[0].qpos[:3], d1.keyframes[0].qpos[:3] * 2)
    slide = d2.joints[d2.joint_index("slide")]
    assert slide.range == pytest.approx((-0.2, 0.4))
    fixed = _describe(path, fixed=True)
    assert fixed.n_qs == d1.n_qs - 7 and "root" not in [j.name for j in fixed.joints]
    acts = {a.name: fixed.joints[a.joint].name for a in fixed.actuators}
    assert acts == {"m": "shoulder", "p": "slide", "v": "twist", "g": "shoulder"}
    # keyframes lose the removed joint's coordinates, keep the rest
    np.testing.assert_allclose(fixed.keyframes[0].qpos, d1.keyframes[0].qpos[7:])
    assert fixed.tendons[0]["joints"] == [(fixed.joint_index("shoulder"), 1.0),
                                          (fixed.joint_index("twist"), -1.0)]


def test_unfixed_base_gets_free_joint(tmp_path):
    p = tmp_path / "arm.xml"
    p.write_text('<mujoco><worldbody><body name="b"><geom size="0.1"/><body name="c">'
                 '<joint name="j"/><geom size="0.1" pos="0 0 0.2"/></body></body></worldbody>'
                 '</mujoco>')
    p.write_text(p.read_text().replace("</worldbody>", "</worldbody><keyframe><key qpos='0.3'/>"
                                       "</keyframe><actuator><motor joint='j'/></actuator>"))
    d = _describe(str(p), fixed=False)
    assert [j.type for j in d.joints] == ["free", "revolute"] and d.n_qs == 8
    assert d.joints[1].q_start == 7 and d.actuators[0].joint == 1
    np.testing.assert_allclose(d.keyframes[0].qpos, [0, 0, 0, 1, 0, 0, 0, 0.3])


def test_visual_geoms_can_be_dropped(tmp_path):
    p = tmp_path / "v.xml"
    p.write_text('<mujoco><worldbody><body name="b"><freejoint/>'
                 '<geom name="c" size="0.1"/><geom name="v" size="0.2" contype="0" conaffinity="0"/>'
                 '</body></worldbody></mujoco>')
    full = _describe(str(p))
    assert [g.role for g in full.geoms] == ["both", "visual"]
    lean = _describe(str(p), visual=False)
    assert [g.name for g in lean.geoms] == ["c"]
    # the visual geom's mass still counts (MuJoCo does the same)
    assert lean.total_mass == pytest.approx(full.total_mass)


def test_messy_file_loads_with_warning(tmp_path):
    p = tmp_path / "messy.xml"
    p.write_bytes(b"\n\n  \n<?xml version='1.0'?>\n<mujoco><worldbody><body name='b'><freejoint/>"
                  b"<geom size='0.1'/></body></worldbody></mujoco>\n\x00")
    with pytest.warns(PolyphysWarning, match="NUL"):
        d = polyphys.describe(str(p))
    assert d.n_qs == 7
    assert any("blank" in w for w in d.warnings)


def test_describe_to_dict_json(tmp_path):
    path = _write_model(str(tmp_path))
    out = json.loads(json.dumps(describe_to_dict(_describe(path))))
    for key in ("total_mass", "n_qs", "n_dofs", "links", "joints", "geoms", "actuators", "warnings"):
        assert key in out
    assert out["links"][0] == {**out["links"][0], "name": "world", "parent": None, "mass": 0.0}
    j = {j["name"]: j for j in out["joints"]}
    assert (j["root"]["q_start"], j["root"]["dof_start"]) == (0, 0)
    assert (j["shoulder"]["q_start"], j["shoulder"]["dof_start"]) == (7, 6)
    assert out["n_qs"] == 7 + 1 + 1 + 1 + 4 and out["n_dofs"] == 6 + 1 + 1 + 1 + 3


def test_convexify_mjcf_meshes(tmp_path):
    import trimesh

    ell = trimesh.util.concatenate([trimesh.creation.box((0.2, 0.05, 0.05)),
                                    trimesh.creation.box((0.05, 0.2, 0.05))])
    ell.export(str(tmp_path / "ell.stl"))
    p = tmp_path / "c.xml"
    p.write_text('<mujoco><asset><mesh file="ell.stl"/></asset><worldbody><body name="b">'
                 '<freejoint/><geom type="mesh" mesh="ell"/></body></worldbody></mujoco>')
    plain = _describe(str(p))
    hull = _describe(str(p), convexify=True)
    t0 = trimesh.Trimesh(plain.geoms[0].mesh.vertices, plain.geoms[0].mesh.faces)
    t1 = trimesh.Trimesh(hull.geoms[0].mesh.vertices, hull.geoms[0].mesh.faces)
    assert t1.is_convex and t1.volume == pytest.approx(t0.convex_hull.volume)
    # mass properties stay those of the mesh as written (MuJoCo's legacy rule)
    assert hull.total_mass == pytest.approx(plain.total_mass)


@pytest.mark.parametrize("compiler", [
    'boundmass="0.5" boundinertia="0.02"',
    'balanceinertia="true"',
    'inertiafromgeom="true" inertiagrouprange="1 2"',
    'inertiafromgeom="false"',
    'settotalmass="3" angle="degree" eulerseq="XYZ"',
])
def test_compiler_mass_settings_match_mujoco(tmp_path, compiler):
    mujoco = pytest.importorskip("mujoco")
    from mujoco_compare import compare

    p = tmp_path / "c.xml"
    p.write_text(f"""<mujoco><compiler {compiler}/><worldbody>
      <body name="a" pos="0 0 1" euler="10 20 30"><freejoint/>
        <inertial pos="0.1 0 0" mass="0.1" diaginertia="0.001 0.002 0.0025"/>
        <geom type="box" size="0.1 0.2 0.3" group="1"/>
        <body name="b" pos="0 0 -0.5"><joint axis="0 1 0" range="-30 30"/>
          <inertial pos="0 0 -0.2" mass="0.3" diaginertia="0.01 0.01 0.001"/>
          <geom type="capsule" fromto="0 0 0 0 0 -0.4" size="0.05" group="2"/>
          <geom type="sphere" size="0.1" group="3"/>
        </body>
        <body name="c" pos="0.5 0 0"><joint type="slide"/>
          <inertial pos="0 0 0" mass="1" fullinertia="0.01 0.01 0.005 0.001 0 0"/>
          <geom type="ellipsoid" size="0.1 0.05 0.05"/>
        </body>
      </body></worldbody></mujoco>""")
    compare(_describe(str(p)), mujoco.MjModel.from_xml_path(str(p)), mujoco)
