"""Pictures of docs/cameras.md, made with the ray tracer itself: ``python tools/camera_images.py
[--only NAME ...]`` writes docs/images/cameras_*.png (a few minutes on 2 CPU cores; the MuJoCo
comparison needs an OpenGL backend for ``mujoco.Renderer``: EGL or OSMesa)."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "docs", "images")
EXAMPLES = os.path.join(ROOT, "examples")


def _save(name, panels, gap=6):
    from polyphys.raycast import write_png

    h = max(p.shape[0] for p in panels)
    row = []
    for i, p in enumerate(panels):
        p = np.asarray(p, float)
        if p.ndim == 2:
            p = np.repeat(p[..., None], 3, -1)
        if p.shape[0] < h:
            p = np.pad(p, ((0, h - p.shape[0]), (0, 0), (0, 0)), constant_values=1.0)
        row.append(p)
        if i < len(panels) - 1:
            row.append(np.ones((h, gap, 3)))
    path = write_png(os.path.join(OUT, f"cameras_{name}.png"), np.concatenate(row, 1))
    print(path)


def _viridis(x, lo, hi):
    from polyphys.raycast.scene import VIRIDIS

    c = np.asarray(VIRIDIS)
    u = np.clip(np.nan_to_num((np.asarray(x, float) - lo) / max(hi - lo, 1e-12)), 0, 1) * (len(c) - 1)
    i = np.minimum(u.astype(int), len(c) - 2)
    a = (u - i)[..., None]
    return c[i] * (1 - a) + c[i + 1] * a


def default_scene():
    """Three frames of the default scene's video (docs: "Videos")."""
    import imageio
    from polyphys.run import default_scene_path, parse_file, run_plan

    with tempfile.TemporaryDirectory() as tmp:
        res = run_plan(parse_file(default_scene_path()), out_dir=tmp, progress=False, plot=False)
        fr = [f for f in imageio.get_reader(res.files["video"])]
    _save("default", [fr[0] / 255.0, fr[10] / 255.0, fr[-1] / 255.0])


def _humanoid_xml(tmp, cam):
    import gymnasium

    src = os.path.join(os.path.dirname(gymnasium.__file__), "envs/mujoco/assets/humanoid.xml")
    text = re.sub(r"(<worldbody>)", r"\1" + cam, open(src).read(), count=1)
    path = os.path.join(tmp, "humanoid.xml")
    with open(path, "w") as fh:
        fh.write(text)
    return path


def _humanoid_scene(xml, pose_seed=5):
    import mujoco
    import polyphys
    from polyphys import morphs
    from polyphys.materials import Rigid

    m = mujoco.MjModel.from_xml_path(xml)
    rng = np.random.default_rng(pose_seed)
    q = m.qpos0.copy()
    q[7:] += rng.uniform(-0.4, 0.4, m.nq - 7)
    q[2] += 0.05
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.005, precision="64"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ent = scene.add_entity(morphs.MJCF(file=xml), Rigid())
    scene.build()
    ent.set_qpos(q)
    return scene, ent, q


def humanoid():
    """The humanoid from its MJCF camera: rgb, depth, segmentation by link, normals."""
    from polyphys.raycast.media import depth_to_rgb
    from polyphys.raycast.recording import SEG_PALETTE

    cam = '<camera name="cmp" pos="1.3 -1.5 1.3" xyaxes="0.7557 0.6549 0 -0.0979 0.1129 0.9888" fovy="45" ' \
          'resolution="320 240"/>'
    with tempfile.TemporaryDirectory() as tmp:
        from polyphys.raycast import Camera

        scene, ent, _ = _humanoid_scene(_humanoid_xml(tmp, cam))
        eye = ent.sensors["cmp"]
        pos, quat = eye.get_pose()                 # the MJCF camera's pose; segmentation by link
        img = Camera(resolution=eye.resolution, fov=eye.fov_y, pos=tuple(pos), quat=tuple(quat), segmentation="link",
                     outputs=("rgb", "depth", "segmentation", "normals")).render(scene)
    seg = np.asarray(img["segmentation"], int)
    segc = SEG_PALETTE[np.mod(seg, len(SEG_PALETTE))]
    segc[seg < 0] = 0.0
    d = np.where(img["depth"] < 6.0, img["depth"], np.nan)
    _save("humanoid", [img["rgb"], depth_to_rgb(d), segc, 0.5 * (img["normals"] + 1.0)])


_MJ = """
import sys, numpy as np, mujoco
xml, qpos, w, h, out = sys.argv[1:6]
m = mujoco.MjModel.from_xml_path(xml); d = mujoco.MjData(m)
d.qpos[:] = np.load(qpos); mujoco.mj_forward(m, d)
r = mujoco.Renderer(m, int(h), int(w)); opt = mujoco.MjvOption(); opt.sitegroup[:] = 0
r.enable_depth_rendering(); r.update_scene(d, camera="cmp", scene_option=opt)
np.save(out, np.asarray(r.render(), float))
"""


def mujoco_depth():
    """Depth of the humanoid: polyphys, MuJoCo's renderer, and their relative difference."""
    from polyphys.raycast.media import depth_to_rgb

    cam = '<camera name="cmp" pos="1.3 -1.5 1.3" xyaxes="0.7557 0.6549 0 -0.0979 0.1129 0.9888" fovy="45" ' \
          'resolution="320 240"/>'
    with tempfile.TemporaryDirectory() as tmp:
        xml = _humanoid_xml(tmp, cam)
        scene, ent, q = _humanoid_scene(xml)
        ours = ent.sensors["cmp"].render(outputs=("depth",))["depth"]
        np.save(os.path.join(tmp, "q.npy"), q)
        for backend in ("egl", "osmesa"):
            env = dict(os.environ, MUJOCO_GL=backend, PYOPENGL_PLATFORM=backend)
            p = subprocess.run([sys.executable, "-c", _MJ, xml, os.path.join(tmp, "q.npy"), "320", "240",
                                os.path.join(tmp, "mj.npy")], env=env, capture_output=True, text=True)
            if p.returncode == 0:
                break
        else:
            print("no OpenGL backend for mujoco.Renderer: mujoco picture skipped")
            return
        theirs = np.load(os.path.join(tmp, "mj.npy"))
    hit = np.isfinite(ours) & (ours < 6.0)
    rel = np.where(hit, np.abs(ours - theirs) / theirs, np.nan)
    diff = _viridis(np.log10(np.clip(rel, 1e-8, 1e-1)), -8, -1)
    diff[~hit] = 1.0
    lo, hi = float(np.nanmin(ours[hit])), float(np.nanmax(ours[hit]))
    _save("mujoco", [depth_to_rgb(np.where(hit, ours, np.nan), lo, hi),
                     depth_to_rgb(np.where(hit, theirs, np.nan), lo, hi), diff])


def particles():
    """The Legacy example after 0.3 s: MPM sand, liquid and rigid bodies; by material and by speed."""
    from polyphys.raycast import Camera
    from polyphys.run import build_scene, parse_file

    plan = parse_file(os.path.join(EXAMPLES, "legacy_sand_and_ball.toml"))
    scene, _ = build_scene(plan)
    for _ in range(60):
        scene.step()
    kw = dict(resolution=(400, 260), fov=45, pos=(0.0, -1.15, 0.75), lookat=(0.0, 0.0, 0.06))
    a = Camera(**kw).render(scene)["rgb"]
    b = Camera(particle_color="speed", **kw).render(scene)["rgb"]
    _save("particles", [a, b])


def cloth():
    """Surfaces: the PBD cloth of examples/pbd_cloth_drape.toml draped over its static sphere (a solver
    option, drawn here by a kinematic stand-in without a coupler) next to its granular pile, and the FEM
    cantilever and jelly of examples/fem_cantilever_jelly.toml (their boundary triangles)."""
    import polyphys
    from polyphys import morphs
    from polyphys.materials import Kinematic
    from polyphys.raycast import Camera
    from polyphys.run import build_scene, parse_file

    plan = parse_file(os.path.join(EXAMPLES, "pbd_cloth_drape.toml"))
    scene = polyphys.Scene(sim=plan.sim, coupler=False, **plan.solver_options)
    for ep in plan.entities:
        scene.add_entity(ep.morph, ep.material, name=ep.name, **ep.options)
    scene.add_entity(morphs.Sphere(radius=0.195, pos=(-0.3, 0.0, 0.2), fixed=True), Kinematic(),
                     surface=polyphys.materials.Surface(color=(0.6, 0.6, 0.65, 1.0)))
    scene.add_entity(morphs.Box(size=(1.4, 1.0, 0.02), pos=(0.0, 0.0, -0.01), fixed=True), Kinematic(),
                     surface=polyphys.materials.Surface(color=(0.85, 0.85, 0.82, 1.0)))
    scene.build()
    for _ in range(45):
        scene.step()
    a = Camera(resolution=(400, 260), fov=40, pos=(0.3, -1.4, 0.9), lookat=(0.0, 0.0, 0.15)).render(scene)["rgb"]
    scene, _ = build_scene(parse_file(os.path.join(EXAMPLES, "fem_cantilever_jelly.toml")))
    for _ in range(30):
        scene.step()
    b = Camera(resolution=(400, 260), fov=40, pos=(0.5, -1.6, 0.9), lookat=(0.5, 0.0, 0.3)).render(scene)["rgb"]
    _save("surfaces", [a, b])


def lidar():
    """The lidar of examples/cameras_chain_lidar.toml: its hits drawn into the film camera's image."""
    from polyphys.raycast import write_png  # noqa: F401
    from polyphys.run import build_scene, parse_file

    plan = parse_file(os.path.join(EXAMPLES, "cameras_chain_lidar.toml"))
    scene, ents = build_scene(plan)
    lid = scene.sensor("chain/lidar")
    film = scene.sensor("film")
    for _ in range(12):
        scene.step()
    pts = lid.read()["points"].reshape(-1, 3) if "points" in lid.outputs else None
    if pts is None:
        # the example records distances only: rebuild the points from the rays and the sensor pose
        d = lid.read()["distance"].reshape(-1)
        pos, quat = lid.get_pose()
        from polyphys.raycast.scene import quat_to_rot

        R = quat_to_rot(quat)
        dirs = lid.pattern[0]
        a = 2 * np.pi * 2.0 * 0.01 * 11
        Rz = np.array([[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]])
        pts = pos + (dirs @ Rz.T @ R.T) * d[:, None]
    img = film.render(outputs=("rgb",))["rgb"].copy()
    pos, quat = film.get_pose()
    from polyphys.raycast.scene import quat_to_rot

    R = quat_to_rot(quat)
    pc = (pts - pos) @ R
    ok = np.isfinite(pc).all(1) & (pc[:, 2] > 0)
    uv = pc[ok, :2] / pc[ok, 2:3] @ np.diag([film.K[0, 0], film.K[1, 1]]) + film.K[:2, 2]
    h, w = img.shape[:2]
    for u, v in uv:
        iu, iv = int(u), int(v)
        if 2 <= iu < w - 2 and 2 <= iv < h - 2:
            img[iv - 2:iv + 3, iu - 2:iu + 3] = (0.9, 0.05, 0.05)
    _save("lidar", [img])


JOBS = {"default": default_scene, "humanoid": humanoid, "mujoco": mujoco_depth, "particles": particles,
        "surfaces": cloth, "lidar": lidar}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--only", action="append", choices=sorted(JOBS))
    args = p.parse_args(argv)
    import warp as wp

    wp.config.quiet = True
    os.makedirs(OUT, exist_ok=True)
    for name in args.only or JOBS:
        JOBS[name]()


if __name__ == "__main__":
    main()
