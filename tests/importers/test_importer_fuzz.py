"""Fuzzing both importers with damaged copies of real model files (docs/importers.md, "Errors").

Real files from installed packages (gymnasium's and dm_control's MuJoCo models, example-robot-data's
URDFs) plus two small hand-written models with meshes are mutated by hypothesis: garbled
attribute values (text, empty, NaN, inf, negative, huge, subnormal, too many numbers), numbers
scaled by 0, -1 or 1e30, removed attributes and elements, truncation, re-encoding (UTF-16/32 with
and without a byte-order mark, Latin-1, Shift-JIS), stray bytes, body chains thousands deep,
missing, empty, garbage or truncated mesh files. The property, for every input:

    polyphys.describe(file) returns a description with no problem in
    ``description_problems`` (finite, physically valid), or raises ImportError_ naming the file.

Any other exception (ValueError, OverflowError, RecursionError, LinAlgError, ...) fails. CI runs a
bounded, derandomized number of examples (a few tens of seconds); ``tox -e validate`` many more.
"""

from __future__ import annotations

import collections
import os
import re
import shutil
import sysconfig
import warnings

import polyphys
import pytest
from polyphys.description import description_problems
from polyphys.errors import ImportError_

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies
given, settings, HealthCheck = hypothesis.given, hypothesis.settings, hypothesis.HealthCheck


def _package_dir(name):
    import importlib.util

    spec = importlib.util.find_spec(name)
    return list(spec.submodule_search_locations)[0] if spec and spec.submodule_search_locations \
        else None


ERD_BASE = os.path.join(sysconfig.get_paths()["purelib"], "cmeel.prefix", "share",
                        "example-robot-data", "robots")

# a hand-written MJCF exercising what the real files above do not: mesh assets, an include,
# defaults, frames, equality, keyframes, hfield
OWN_MJCF = """<mujoco model="own">
  <compiler angle="radian" meshdir="meshes"/>
  <option timestep="0.004" gravity="0.1 0 -9.7"/>
  <include file="parts.xml"/>
  <default><geom friction="0.8"/><default class="soft"><joint stiffness="2" damping="0.1"/></default></default>
  <asset>
    <mesh name="tet" file="tet.stl" scale="1 2 1"/>
    <mesh name="cube" file="cube.obj"/>
    <hfield name="h" nrow="2" ncol="2" size="1 1 0.2 0.1" elevation="0 1 2 3"/>
  </asset>
  <worldbody>
    <geom type="plane" size="3 3 0.1"/>
    <geom type="hfield" hfield="h" pos="2 0 0"/>
    <body name="a" pos="0.3 -0.2 1.1" euler="0.1 0.2 0.3">
      <freejoint/>
      <geom name="ga" type="mesh" mesh="tet"/>
      <geom name="vis" type="mesh" mesh="cube" contype="0" conaffinity="0" mass="0"/>
      <frame pos="0.1 0 0" quat="0.9 0.1 0.2 0.1">
        <body name="b" pos="0 0.2 0">
          <joint name="hb" class="soft" axis="0 1 1" range="-1 1"/>
          <geom name="gb" type="capsule" fromto="0 0 0 0.2 0.1 0" size="0.03"/>
          <inertial pos="0.01 0 0" mass="0.4" diaginertia="0.01 0.02 0.025"/>
          <site name="s" pos="0 0 0.1"/>
        </body>
      </frame>
    </body>
  </worldbody>
  <equality><connect body1="b" anchor="0 0 0.1"/></equality>
  <actuator><position joint="hb" kp="10" ctrlrange="-1 1"/></actuator>
  <keyframe><key qpos="0.3 -0.2 1.1 1 0 0 0 0.2"/></keyframe>
</mujoco>
"""
OWN_PARTS = '<mujoco><default class="extra"><geom rgba="1 0 0 1"/></default></mujoco>'
OWN_URDF = """<?xml version="1.0"?>
<robot name="own">
  <link name="base">
    <inertial><origin xyz="0.01 0 0.02" rpy="0.1 0 0"/><mass value="2"/>
      <inertia ixx="0.02" ixy="0.001" ixz="0.0005" iyy="0.03" iyz="0.002" izz="0.04"/></inertial>
    <collision><origin xyz="0 0 0.05"/><geometry><mesh filename="meshes/tet.stl" scale="2 2 2"/></geometry></collision>
    <visual><geometry><mesh filename="meshes/cube.obj"/></geometry></visual>
  </link>
  <link name="arm">
    <inertial><mass value="0.5"/><inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial>
    <collision><geometry><cylinder radius="0.03" length="0.2"/></geometry></collision>
  </link>
  <link name="tip">
    <inertial><mass value="0.1"/><inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="2e-5"/></inertial>
    <collision><geometry><sphere radius="0.02"/></geometry></collision>
  </link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="arm"/>
    <origin xyz="0.02 0 0.03" rpy="0 0.3 1.0"/><axis xyz="0 2 0"/>
    <limit lower="-0.5" upper="1.2" effort="1" velocity="1"/><dynamics damping="0.05" friction="0.01"/></joint>
  <joint name="j2" type="prismatic"><parent link="arm"/><child link="tip"/>
    <origin xyz="0 0 0.2"/><axis xyz="1 0 0"/><limit lower="0" upper="0.04"/>
    <mimic joint="j1" multiplier="0.5" offset="0.01"/></joint>
</robot>
"""
OBJ = ("mtllib cube.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nv 0 0 1\nv 1 0 1\nv 0 1 1\nv 1 1 1\n"
       "vt 0 0\nusemtl skin\nf 1 3 4 2\nf 5 6 8 7\nf 1 2 6 5\nf 3 7 8 4\nf 1 5 7 3\nf 2 4 8 6\n")


def _write_own(root):
    import trimesh

    (root / "meshes").mkdir(parents=True, exist_ok=True)
    trimesh.Trimesh([[0, 0, 0], [0.1, 0, 0], [0, 0.1, 0], [0, 0, 0.1]],
                    [[0, 2, 1], [0, 1, 3], [1, 2, 3], [0, 3, 2]]).export(str(root / "meshes" / "tet.stl"))
    (root / "meshes" / "cube.obj").write_text(OBJ)
    (root / "meshes" / "cube.mtl").write_text("newmtl skin\nKd 1 1 1\nmap_Kd skin.png\n")
    (root / "own.xml").write_text(OWN_MJCF)
    (root / "parts.xml").write_text(OWN_PARTS)
    (root / "own.urdf").write_text(OWN_URDF)


def _sources():
    """(kind, path, package_dirs) of the files mutated: small, quick real files first."""
    out = []
    g = _package_dir("gymnasium")
    if g:
        d = os.path.join(g, "envs", "mujoco", "assets")
        for n in ("ant.xml", "hopper.xml", "half_cheetah.xml", "walker2d.xml", "reacher.xml",
                  "inverted_double_pendulum.xml", "swimmer.xml", "humanoid.xml", "pusher.xml"):
            if os.path.isfile(os.path.join(d, n)):
                out.append(("mjcf", os.path.join(d, n)))
    dm = _package_dir("dm_control")
    if dm:
        d = os.path.join(dm, "suite")
        for n in ("cartpole.xml", "acrobot.xml", "cheetah.xml", "finger.xml", "walker.xml",
                  "hopper.xml", "pendulum.xml", "point_mass.xml", "reacher.xml", "humanoid.xml",
                  "manipulator.xml", "fish.xml", "ball_in_cup.xml"):
            if os.path.isfile(os.path.join(d, n)):
                out.append(("mjcf", os.path.join(d, n)))
    for n in ("simple_humanoid_description/urdf/simple_humanoid_classical.urdf",
              "double_pendulum_description/urdf/double_pendulum_simple.urdf",
              "hector_description/robots/quadrotor_base.urdf"):
        if os.path.isfile(os.path.join(ERD_BASE, n)):
            out.append(("urdf", os.path.join(ERD_BASE, n)))
    return out


SOURCES = _sources()
# files whose meshes take a second or more to read: only in the long run
HEAVY = [("urdf", os.path.join(ERD_BASE, n)) for n in ("solo_description/robots/solo12.urdf",
                                                         "z1_description/urdf/z1.urdf")
         if os.path.isfile(os.path.join(ERD_BASE, n))]
STATS = collections.Counter()


@pytest.fixture(scope="module", autouse=True)
def _report(request):
    """After the module: how many inputs the fuzz tests tried and what came of them (shown in the
    terminal; the figures go in the issue's note)."""
    yield
    if STATS:
        rep = request.config.pluginmanager.get_plugin("terminalreporter")
        if rep is not None:
            rep.write_line(f"importer fuzz: {dict(STATS)}")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A folder holding the hand-written models, dm_control's shared includes (the suite files
    include ./common/*.xml), and broken mesh files the mutations point at."""
    root = tmp_path_factory.mktemp("fuzz")
    _write_own(root)
    dm = _package_dir("dm_control")
    if dm and os.path.isdir(os.path.join(dm, "suite", "common")):
        shutil.copytree(os.path.join(dm, "suite", "common"), root / "common")
    (root / "broken").mkdir()
    (root / "broken" / "empty.stl").write_bytes(b"")
    (root / "broken" / "garbage.stl").write_bytes(b"solid x\nfacet normal nan nan\nendsolid\x00\xff")
    (root / "broken" / "garbage.obj").write_text("v 1 2\nv nan 0 0\nf 1 2 9\nf a b c\n")
    (root / "broken" / "flat.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\n")
    tet = (root / "meshes" / "tet.stl").read_bytes()
    (root / "broken" / "truncated.stl").write_bytes(tet[: len(tet) // 2])
    (root / "broken" / "fake.dae").write_text("<COLLADA><library_geometries/></COLLADA>")
    (root / "broken" / "huge.obj").write_text("v 1e300 0 0\nv 0 1e300 0\nv 0 0 1e300\nv 0 0 0\n"
                                              "f 1 2 3\nf 1 3 4\nf 1 4 2\nf 2 4 3\n")
    return root


def _all_sources(workdir, heavy=False):
    own = [("mjcf", str(workdir / "own.xml")), ("urdf", str(workdir / "own.urdf"))]
    return SOURCES + own + (HEAVY if heavy else [])


VALUES = ["abc", "", " ", "nan", "NaN", "-nan", "inf", "-inf", "-1", "-0.5", "0", "-0", "1e308",
          "-1e308", "1e39", "3.5e38", "1e-320", "1e400", "1 2 3 4 5 6 7 8 9 10 11", "1,2", "0x10",
          "true", "\u00e9t\u00e9", "1_0", "1e", ".", "+-1", "2.5", "1e30 1e30 1e30", "0 0 0 0",
          "-1 -1 -1", "nan nan nan", "\x7f", "\x00", "a\x00b"]
_ATTR = re.compile(r'(\s)([A-Za-z_:][\w:.-]*)\s*=\s*(["\'])(.*?)\3', re.S)
_NUM = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
ENCODINGS = ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-8-sig", "latin-1", "shift_jis",
             "cp1252"]
BROKEN = ["missing.stl", "empty.stl", "garbage.stl", "garbage.obj", "flat.obj", "truncated.stl",
          "fake.dae", "huge.obj"]


@st.composite
def mutations(draw):
    """A list of 1-3 edits (each a tuple) applied in order to a file's text."""
    edits = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["value", "value", "value", "number", "drop_attr",
                                     "drop_element", "truncate", "encoding", "bytes", "deep",
                                     "mesh"]))
        if kind == "value":
            edits.append((kind, draw(st.integers(0, 10_000)),
                          draw(st.one_of(st.sampled_from(VALUES), st.text(max_size=8)))))
        elif kind == "number":
            edits.append((kind, draw(st.integers(0, 10_000)),
                          draw(st.sampled_from(["0", "-1", "1e30", "1e300", "nan", "1e-30"]))))
        elif kind in ("drop_attr", "drop_element"):
            edits.append((kind, draw(st.integers(0, 10_000)), None))
        elif kind == "truncate":
            edits.append((kind, draw(st.floats(0.0, 1.0)), None))
        elif kind == "encoding":
            edits.append((kind, draw(st.sampled_from(ENCODINGS)), draw(st.booleans())))
        elif kind == "bytes":
            edits.append((kind, draw(st.floats(0.0, 1.0)), draw(st.binary(min_size=1, max_size=4))))
        elif kind == "deep":
            edits.append((kind, draw(st.sampled_from([50, 900, 3000])), None))
        else:
            edits.append((kind, draw(st.integers(0, 10_000)), draw(st.sampled_from(BROKEN))))
    return edits


def _apply(text, kind_file, edits, broken_dir):
    """The mutated file contents (bytes) and a short label of what was done."""
    data = None
    labels = []
    for kind, a, b in edits:
        if data is not None:     # already bytes: only byte edits apply
            if kind == "truncate":
                data = data[: int(len(data) * a)]
            elif kind == "bytes":
                k = int(len(data) * a)
                data = data[:k] + b + data[k:]
            labels.append(kind)
            continue
        labels.append(kind)
        if kind in ("value", "number", "drop_attr"):
            ms = list(_ATTR.finditer(text))
            if not ms:
                continue
            m = ms[a % len(ms)]
            if kind == "drop_attr":
                text = text[:m.start()] + m.group(1) + text[m.end():]
                continue
            if kind == "value":
                val = b
            else:
                nums = list(_NUM.finditer(m.group(4)))
                if not nums:
                    continue
                n = nums[a % len(nums)]
                num = float(n.group(0)) * (float(b) if b not in ("0", "nan") else 1.0)
                rep = b if b in ("0", "nan") else repr(num)
                val = m.group(4)[:n.start()] + rep + m.group(4)[n.end():]
            q = m.group(3)
            val = val.replace(q, "")
            text = text[:m.start(4)] + val + text[m.end(4):]
        elif kind == "drop_element":
            ms = list(re.finditer(r"<(\w+)[^<>]*/>", text))
            if ms:
                m = ms[a % len(ms)]
                text = text[:m.start()] + text[m.end():]
        elif kind == "truncate":
            text = text[: int(len(text) * a)]
        elif kind == "bytes":
            data = text.encode("utf-8")
            k = int(len(data) * a)
            data = data[:k] + b + data[k:]
        elif kind == "encoding":
            body = re.sub(r"^\s*<\?xml[^>]*\?>", "", text)
            if b:   # with a declaration naming the encoding
                body = f'<?xml version="1.0" encoding="{a}"?>\n' + body
            try:
                data = body.encode(a)
            except UnicodeEncodeError:
                data = body.encode(a, errors="replace")
        elif kind == "deep":
            if kind_file == "mjcf":
                chain = "".join(f'<body name="deep{i}" pos="0 0 0.01"><joint/><geom size="0.01"/>'
                                for i in range(a)) + "</body>" * a
                text = re.sub(r"<worldbody>", "<worldbody>" + chain, text, count=1)
            else:
                m = re.search(r'<link name="([^"]+)"', text)
                if m:
                    parent = m.group(1)
                    extra = []
                    for i in range(a):
                        extra.append(f'<link name="deep{i}"><inertial><mass value="0.1"/><inertia '
                                     f'ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0" iyz="0"/>'
                                     f'</inertial></link><joint name="deepj{i}" type="revolute">'
                                     f'<parent link="{parent}"/><child link="deep{i}"/>'
                                     f'<limit lower="-1" upper="1"/></joint>')
                        parent = f"deep{i}"
                    text = text.replace("</robot>", "".join(extra) + "</robot>")
        elif kind == "mesh":
            ms = [m for m in _ATTR.finditer(text) if m.group(2) in ("file", "filename")
                  and m.group(4).lower().endswith((".stl", ".obj", ".dae", ".msh"))]
            if ms:
                m = ms[a % len(ms)]
                text = text[:m.start(4)] + os.path.join(str(broken_dir), b) + text[m.end(4):]
    if data is None:
        data = text.encode("utf-8")
    return data, "+".join(labels)


def _check(path, kind_file, data, label):
    with open(path, "wb") as fh:
        fh.write(data)
    kw = {"package_dirs": (ERD_BASE,)} if kind_file == "urdf" else {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            desc = polyphys.describe(path, **kw)
    except ImportError_ as exc:
        assert os.path.basename(path) in str(exc), f"{label}: error without the file name: {exc}"
        STATS["error"] += 1
        STATS["error with line"] += bool(re.search(re.escape(os.path.basename(path)) + r":\d+", str(exc)))
        return
    problems = description_problems(desc)
    assert not problems, f"{label}: loaded with problems {problems}"
    STATS["load"] += 1


def _fuzz(workdir, source_index, edits, heavy=False):
    sources = _all_sources(workdir, heavy)
    # MJCF and URDF alike often, whatever the number of files of each kind
    kinds = [[s for s in sources if s[0] == k] for k in ("mjcf", "urdf")]
    pool = kinds[source_index % 2] or sources
    kind_file, src = pool[(source_index // 2) % len(pool)]
    with open(src, encoding="utf-8") as fh:
        text = fh.read()
    data, label = _apply(text, kind_file, edits, workdir / "broken")
    # in the work folder, next to dm_control's ./common includes and the own models' meshes/
    suffix = ".xml" if kind_file == "mjcf" else ".urdf"
    path = os.path.join(str(workdir), f"fuzzed_{os.path.basename(src)}{suffix}")
    STATS["inputs"] += 1
    STATS[f"inputs {kind_file}"] += 1
    _check(path, kind_file, data, f"{os.path.basename(src)} [{label}]")


_COMMON = dict(deadline=None, database=None, suppress_health_check=list(HealthCheck))


@settings(max_examples=200, derandomize=True, **_COMMON)
@given(source=st.integers(0, 1000), edits=mutations())
def test_fuzz_importers_ci(workdir, source, edits):
    """CI: 200 derandomized damaged files (about 12 s of CPU here)."""
    _fuzz(workdir, source, edits)


@pytest.mark.validate
@settings(max_examples=4000, **_COMMON)
@given(source=st.integers(0, 1000), edits=mutations())
def test_fuzz_importers_long(workdir, source, edits):
    """tox -e validate: 4000 random damaged files, meshes of real robots included."""
    _fuzz(workdir, source, edits, heavy=True)
