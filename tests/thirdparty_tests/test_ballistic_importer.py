"""The third-party importer of polyphys-ballistic (``chain``, docs/writing-a-plugin.md "An
importer"): a .chain file describes the same model as the equivalent MJCF read by the built-in
importer; a kinematic chain built from it places its links where the geometry says; bad files are
ImportErrors naming the file and the place. Skips when the distribution is not installed."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from ballistic_helpers import require_ballistic

ballistic = require_ballistic()

import polyphys  # noqa: E402
from polyphys.errors import ImportError_  # noqa: E402
from polyphys_ballistic.chain import ChainFile  # noqa: E402

ARM = textwrap.dedent("""
    name = "arm"
    [[link]]
    name = "upper"
    length = 0.5
    radius = 0.04
    mass = 1.2
    axis = [0, 1, 0]
    [[link]]
    name = "lower"
    length = 0.4
    radius = 0.03
    mass = 0.7
    axis = [1, 0, 1]
""")


def _inertia(m, r, L):
    return m * (3 * r * r + L * L) / 12.0, m * r * r / 2.0


def _mjcf():
    i1, k1 = _inertia(1.2, 0.04, 0.5)
    i2, k2 = _inertia(0.7, 0.03, 0.4)
    return textwrap.dedent(f"""
        <mujoco model="arm"><worldbody>
          <body name="upper" pos="0 0 0">
            <joint name="upper" type="hinge" axis="0 1 0"/>
            <inertial pos="0 0 -0.25" mass="1.2" diaginertia="{i1!r} {i1!r} {k1!r}"/>
            <geom name="upper_rod" type="capsule" size="0.04 0.25" pos="0 0 -0.25"/>
            <body name="lower" pos="0 0 -0.5">
              <joint name="lower" type="hinge" axis="1 0 1"/>
              <inertial pos="0 0 -0.2" mass="0.7" diaginertia="{i2!r} {i2!r} {k2!r}"/>
              <geom name="lower_rod" type="capsule" size="0.03 0.2" pos="0 0 -0.2"/>
            </body>
          </body>
        </worldbody></mujoco>""").strip()


@pytest.fixture
def arm(tmp_path):
    path = tmp_path / "arm.chain"
    path.write_text(ARM)
    return path


def test_registered_with_its_morph_and_suffix():
    rec = polyphys.registry().get("importer", "chain")
    assert rec.provider.distribution == "polyphys-ballistic"
    assert rec.spec.morphs == ("ChainFile",) and rec.spec.suffixes == (".chain",)


def test_describes_the_same_model_as_the_equivalent_mjcf(arm, tmp_path):
    mjcf = tmp_path / "arm.xml"
    mjcf.write_text(_mjcf())
    a = polyphys.describe(ChainFile(file=str(arm)))
    b = polyphys.describe(str(mjcf))
    # the MJCF importer's link 0 is the world body (it holds world geoms): one index further
    assert [lk.name for lk in a.links] == [lk.name for lk in b.links[1:]] == ["upper", "lower"]
    for la, lb in zip(a.links, b.links[1:], strict=True):
        assert la.parent + 1 == lb.parent
        np.testing.assert_allclose(la.pos, lb.pos, atol=1e-12)
        np.testing.assert_allclose(la.quat, lb.quat, atol=1e-12)
        assert la.inertial.mass == pytest.approx(lb.inertial.mass, rel=1e-12)
        np.testing.assert_allclose(la.inertial.com, lb.inertial.com, atol=1e-12)
        np.testing.assert_allclose(la.inertial.inertia, lb.inertial.inertia, rtol=1e-12, atol=1e-15)
    for ja, jb in zip(a.joints, b.joints, strict=True):
        assert (ja.type, ja.link + 1, ja.q_start) == (jb.type, jb.link, jb.q_start)
        np.testing.assert_allclose(ja.axis, jb.axis, atol=1e-12)       # both normalise [1, 0, 1]
        np.testing.assert_allclose(ja.pos, jb.pos, atol=1e-12)
    for ga, gb in zip(a.geoms, b.geoms, strict=True):
        assert (ga.type, ga.link + 1) == (gb.type, gb.link)
        np.testing.assert_allclose(ga.size[:2], gb.size[:2], atol=1e-12)
        np.testing.assert_allclose(ga.pos, gb.pos, atol=1e-12)
    # describe() finds the importer by the suffix too
    assert [lk.name for lk in polyphys.describe(str(arm)).links] == ["upper", "lower"]


def test_a_kinematic_chain_places_its_links_by_the_geometry(arm):
    """Joint 1 about y by q1, joint 2 about (x + z)/√2 by q2: the lower link's origin is the upper
    joint plus R_y(q1)·(0, 0, -0.5), and its frame R_y(q1)·R_axis(q2) (Rodrigues)."""
    scene = polyphys.Scene()
    ent = scene.add_entity(ChainFile(file=str(arm), pos=(0.1, -0.2, 1.5), euler=(0, 0, 90)),
                           material=polyphys.materials.Kinematic())
    scene.build()
    q = np.array([0.7, -1.1])
    ent.set_qpos(q)
    scene.forward()
    pos, quat = ent.get_links_pos(), ent.get_links_quat()

    def rot(axis, a):
        axis = np.asarray(axis, float) / np.linalg.norm(axis)
        k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
        return np.eye(3) + np.sin(a) * k + (1 - np.cos(a)) * k @ k

    base = rot((0, 0, 1), np.pi / 2)                 # euler (0, 0, 90)
    r1 = base @ rot((0, 1, 0), q[0])
    np.testing.assert_allclose(pos[0], (0.1, -0.2, 1.5), atol=1e-6)
    np.testing.assert_allclose(pos[1], np.array([0.1, -0.2, 1.5]) + r1 @ (0, 0, -0.5), atol=1e-6)
    r2 = r1 @ rot((1, 0, 1), q[1])
    w, x, y, z = quat[1]
    R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                  [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                  [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
    np.testing.assert_allclose(R, r2, atol=1e-6)     # float32 state


@pytest.mark.parametrize("text,match", [
    ("[[link]\nlength = 1", r"arm.chain: not a valid .chain \(TOML\) file: .*line 1"),
    ("name = 'x'\n", r"arm.chain: a chain needs at least one \[\[link\]\] table"),
    ("[[link]]\nlength = -1\nradius = 0.1\nmass = 1\n", r"arm.chain: link\[0\]: length = -1: must be a finite number > 0"),
    ("[[link]]\nlength = 1\nradius = 0.1\nmass = 1\nlenght = 2\n", r"link\[0\]: unknown keys \['lenght'\]"),
    ("[[link]]\nlength = 1\nradius = 0.1\nmass = 1\naxis = [0, 0, 0]\n", r"link\[0\]: axis = \[0, 0, 0\]: must be a finite"),
])
def test_bad_files_name_the_file_and_the_place(tmp_path, text, match):
    path = tmp_path / "arm.chain"
    path.write_text(text)
    with pytest.raises(ImportError_, match=match):
        polyphys.describe(ChainFile(file=str(path)))


def test_polyphys_inspect_reads_it(arm):
    out = subprocess.run([sys.executable, "-m", "polyphys", "inspect", str(arm)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("arm: 2 links, n_qs=2, n_dofs=2, total mass 1.9 kg")
