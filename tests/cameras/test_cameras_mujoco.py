"""Depth images against MuJoCo's OpenGL renderer (``mujoco.Renderer`` on EGL or OSMesa, docs/cameras.md,
"Validation"): the same MJCF file, the same camera, the same state.

MuJoCo draws spheres, capsules, cylinders and ellipsoids as tessellated meshes (its default quality:
numslices 28, numstacks 16 — a sphere's facets lie up to r·(1 − cos(π/32)) ≈ 0.5 % of r inside it),
reads depth back from a 24-bit buffer, and rasterizes pixel centres as we cast rays through them. So
depths agree to well within 1 % away from silhouettes (the issue's bound); pixels within one pixel of
a depth discontinuity in either image are left out (a tessellated outline is not the analytic one).
"""

import os
import re
import warnings

import numpy as np
import polyphys
import pytest
from polyphys import SimOptions, morphs
from polyphys.errors import PolyphysWarning
from polyphys.materials import Rigid

pytestmark = pytest.mark.validate

PRIMS = """<mujoco>
  <asset><mesh name="tet" vertex="0 0 0  0.3 0 0  0 0.25 0  0.05 0.05 0.3"/></asset>
  <worldbody>
    <geom type="plane" size="3 3 0.1" pos="0 0 0"/>
    <geom type="sphere" size="0.21" pos="0.35 0.28 0.41"/>
    <geom type="box" size="0.15 0.09 0.12" pos="-0.32 0.31 0.37" euler="23 -37 51"/>
    <geom type="capsule" size="0.09 0.17" pos="-0.25 -0.33 0.35" euler="61 17 -29"/>
    <geom type="cylinder" size="0.11 0.1" pos="0.33 -0.3 0.3" euler="-40 25 10"/>
    <geom type="ellipsoid" size="0.16 0.1 0.07" pos="0.05 0.42 0.15" euler="12 -20 33"/>
    <geom type="mesh" mesh="tet" pos="-0.05 -0.05 0.05" euler="5 10 40"/>
    <camera name="cmp" pos="1.1 -1.3 1.4" xyaxes="0.76 0.65 0 -0.33 0.39 0.86" fovy="50" resolution="160 120"/>
  </worldbody>
</mujoco>
"""


_RENDER = """
import sys, numpy as np, mujoco
xml, qpos, w, h, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
m = mujoco.MjModel.from_xml_path(xml)
d = mujoco.MjData(m)
if qpos != "-":
    d.qpos[:] = np.load(qpos)
mujoco.mj_forward(m, d)
r = mujoco.Renderer(m, h, w)
opt = mujoco.MjvOption()
opt.sitegroup[:] = 0
r.enable_depth_rendering()
r.update_scene(d, camera="cmp", scene_option=opt)
np.save(out, np.asarray(r.render(), float))
r.close()
"""


def _run_mujoco(backend, *args):
    """MuJoCo's renderer in a child process: MUJOCO_GL picks the GL backend when mujoco is imported,
    and this process may have imported mujoco already."""
    import subprocess
    import sys

    env = dict(os.environ, MUJOCO_GL=backend, PYOPENGL_PLATFORM=backend)
    return subprocess.run([sys.executable, "-c", _RENDER, *map(str, args)], env=env, capture_output=True, text=True,
                          timeout=600)


def _mujoco_renderer(tmp_path):
    xml = tmp_path / "probe.xml"
    xml.write_text("<mujoco><worldbody><geom size='.1'/><camera name='cmp' pos='0 0 1'/></worldbody></mujoco>")
    for backend in ("egl", "osmesa"):
        if _run_mujoco(backend, xml, "-", 8, 8, tmp_path / "probe.npy").returncode == 0:
            return backend
    return None


def _humanoid(tmp_path):
    import gymnasium

    src = os.path.join(os.path.dirname(gymnasium.__file__), "envs/mujoco/assets/humanoid.xml")
    text = open(src).read()
    cam = '<camera name="cmp" pos="1.3 -1.5 1.3" xyaxes="0.7557 0.6549 0 -0.0979 0.1129 0.9888" fovy="45" resolution="320 240"/>'
    text = re.sub(r"(<worldbody>)", r"\1" + cam, text, count=1)
    p = tmp_path / "humanoid_cmp.xml"
    p.write_text(text)
    return str(p)


def _compare(xml, backend, tmp_path, qpos_fn=None):
    import mujoco

    m = mujoco.MjModel.from_xml_path(xml)
    scene = polyphys.Scene(sim=SimOptions(dt=0.005, precision="64"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        ent = scene.add_entity(morphs.MJCF(file=xml), Rigid())
    scene.build()
    qfile = "-"
    if qpos_fn is not None:
        q = qpos_fn(m)
        ent.set_qpos(q)
        qfile = tmp_path / "qpos.npy"
        np.save(qfile, q)
    cam = ent.sensors["cmp"]
    w, h = cam.resolution
    ours = cam.render(outputs=("depth",))["depth"]
    proc = _run_mujoco(backend, xml, qfile, w, h, tmp_path / "mj.npy")
    assert proc.returncode == 0, proc.stderr
    theirs = np.load(tmp_path / "mj.npy")
    far = m.stat.extent * m.vis.map.zfar
    hit_mj = theirs < 0.999 * far
    hit_pp = np.isfinite(ours)

    def edges(z, hit):
        zz = np.where(hit, z, 1e6)
        e = ~hit.copy()
        for dy in (-1, 0, 1):
            for dx in (-1, 0, 1):
                s = np.roll(np.roll(zz, dy, 0), dx, 1)
                e |= np.abs(s - zz) > 0.02 * np.minimum(s, zz)
        e[0], e[-1], e[:, 0], e[:, -1] = True, True, True, True
        return e

    inner = ~edges(ours, hit_pp) & ~edges(theirs, hit_mj)
    rel = np.abs(ours[inner] - theirs[inner]) / theirs[inner]
    mismatch = (hit_pp != hit_mj) & ~(edges(ours, hit_pp) | edges(theirs, hit_mj))
    return rel, inner, mismatch, ours, theirs


@pytest.fixture(scope="module")
def backend(tmp_path_factory):
    b = _mujoco_renderer(tmp_path_factory.mktemp("probe"))
    if b is None:
        pytest.skip("no OpenGL backend for mujoco.Renderer here (EGL or OSMesa)")
    return b


def test_primitives_depth_matches_mujoco(tmp_path, backend):
    xml = tmp_path / "prims.xml"
    xml.write_text(PRIMS)
    rel, inner, mismatch, ours, theirs = _compare(str(xml), backend, tmp_path)
    assert inner.mean() > 0.5                    # the sky (a quarter of the image) is no pixel of either
    assert rel.max() < 0.01 and np.median(rel) < 1e-3
    assert mismatch.sum() == 0


def test_humanoid_depth_matches_mujoco(tmp_path, backend):
    def pose(m):
        rng = np.random.default_rng(5)
        q = m.qpos0.copy()
        q[7:] += rng.uniform(-0.4, 0.4, m.nq - 7)          # a generic pose of every hinge
        q[2] += 0.05
        return q

    rel, inner, mismatch, ours, theirs = _compare(_humanoid(tmp_path), backend, tmp_path, pose)
    assert inner.mean() > 0.45                   # the sky above the horizon is no pixel of either
    assert rel.max() < 0.01
    assert mismatch.sum() == 0
