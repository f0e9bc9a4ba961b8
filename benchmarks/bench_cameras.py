"""Cameras: rays per second per core and depth frames per second for 64 envs × one 128×128 depth
camera, on the gymnasium humanoid on its floor and on a 97k-particle MPM cube per env, against
MuJoCo's OpenGL renderer (``mujoco.Renderer``, EGL or OSMesa: in a child process, since the GL
backend is chosen when mujoco is imported) on the same humanoid in the same run; and the cost of
the camera as a fraction of a physics step.

polyphys: the camera is an in-step ``depth_camera`` sensor fixed in the world; "frame" = the ray
tracer's work for one env (scene preparation — link poses, BVH refit, particle hash grid — and
the rays), timed alone over every env of the scene, one thread (``cpu_threads=1``, process CPU
time). The fraction of a step: (step with the camera − step without) / step without, the two
measured alternately. MuJoCo: ``update_scene`` + ``render`` of a depth image per env (the GPU-less
renderer here is Mesa's llvmpipe, which may use several threads: wall time), and ``mj_step`` per
env for its fraction. MuJoCo cannot draw MPM particles: that case has no reference.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time

from . import row

RES = 128
CAM = dict(pos=(2.0, -2.2, 1.5), lookat=(0.0, 0.0, 1.0), fov=45)
XYAXES = "0.7399 0.6727 0 -0.1116 0.1227 0.9862"      # the same camera in MuJoCo's frame (looks along -z)

_MJ = """
import json, sys, time, numpy as np, mujoco
xml, n, res, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
m = mujoco.MjModel.from_xml_path(xml)
datas = []
for i in range(n):
    d = mujoco.MjData(m)
    d.qpos[7:] += 0.01 * i
    mujoco.mj_forward(m, d)
    datas.append(d)
r = mujoco.Renderer(m, res, res)
r.enable_depth_rendering()
opt = mujoco.MjvOption(); opt.sitegroup[:] = 0
for d in datas[:2]:
    r.update_scene(d, camera="cmp", scene_option=opt); r.render()
best = 1e9
for _ in range(3):
    t0 = time.perf_counter()
    for d in datas:
        r.update_scene(d, camera="cmp", scene_option=opt)
        r.render()
    best = min(best, (time.perf_counter() - t0) / n)
d = datas[0]
t0 = time.process_time()
for _ in range(steps):
    mujoco.mj_step(m, d)
step = (time.process_time() - t0) / steps
print(json.dumps({"frame_s": best, "step_s": step}))
"""


def _humanoid_xml(folder: str) -> str | None:
    import importlib.util

    spec = importlib.util.find_spec("gymnasium")
    if not (spec and spec.origin):
        return None
    src = os.path.join(os.path.dirname(spec.origin), "envs", "mujoco", "assets", "humanoid.xml")
    if not os.path.exists(src):
        return None
    text = open(src).read()
    text = re.sub(r"<tendon>.*?</tendon>", "", text, flags=re.S)     # polyphys simulates no tendons
    cam = f'<camera name="cmp" pos="2.0 -2.2 1.5" xyaxes="{XYAXES}" fovy="45"/>'
    text = re.sub(r"(<worldbody>)", r"\1" + cam, text, count=1)
    out = os.path.join(folder, "humanoid_cam.xml")
    with open(out, "w") as fh:
        fh.write(text)
    return out


def _mujoco(xml: str, n: int, steps: int):
    for backend in ("egl", "osmesa"):
        env = dict(os.environ, MUJOCO_GL=backend, PYOPENGL_PLATFORM=backend)
        p = subprocess.run([sys.executable, "-c", _MJ, xml, str(n), str(RES), str(steps)], env=env,
                           capture_output=True, text=True, timeout=900)
        if p.returncode == 0:
            return json.loads(p.stdout.strip().splitlines()[-1]), backend
    return None, None


def _scene(build, n: int, camera: dict | None):
    scene = build()
    if camera is not None:
        scene.add_sensor("depth_camera", None, name="cam", resolution=(RES, RES), far=50.0, **camera)
    scene.build(n_envs=n)
    return scene


def _step_block(scene, steps: int) -> float:
    t0 = time.process_time()
    for _ in range(steps):
        scene.step()
    return (time.process_time() - t0) / steps


def _camera_alone(scene, k: int) -> tuple[float, float]:
    """(CPU s of the ray tracer per env, of which the scene preparation), every partition, k times."""
    g = next(g for g in scene.sensor_hub.groups if hasattr(g, "rset"))
    truth = scene.sensor_hub.truth
    best, prep = float("inf"), float("inf")
    for _ in range(3):
        t0 = time.process_time()
        for _ in range(k):
            for part in scene.layout.partitions:
                g.evaluate(part, truth[part.start:part.stop])
        best = min(best, (time.process_time() - t0) / k)
        t0 = time.process_time()
        for _ in range(k):
            for part in scene.layout.partitions:
                g.rs.prepare(part)
        prep = min(prep, (time.process_time() - t0) / k)
    n = scene.layout.n_envs
    return best / n, prep / n


def _case(label, build, cam, n, steps, k, rows, reference=None, load="", alternate=True):
    """Rows of one scene; ``alternate``: the steps with and without the camera measured in turn (both
    scenes alive), else one after the other (half the memory: the MPM case)."""
    import gc

    with_cam = _scene(build, n, cam)
    for _ in range(2):
        with_cam.step()
    if alternate:
        without = _scene(build, n, None)
        for _ in range(2):
            without.step()
        a, b = float("inf"), float("inf")
        for _ in range(3):
            a = min(a, _step_block(with_cam, steps))
            b = min(b, _step_block(without, steps))
        del without
    else:
        a = _step_block(with_cam, steps)
    frame, prep = _camera_alone(with_cam, k)
    if not alternate:
        del with_cam
        gc.collect()
        without = _scene(build, n, None)
        without.step()
        b = _step_block(without, steps)
        del without
        gc.collect()
    rays = RES * RES
    case = f"{label}, n_envs={n}, {RES}x{RES} depth"
    mj = reference or {}
    rate = (mj["frame_s"] / frame) if mj else None            # rates: polyphys / reference
    rows.append(row(case, "rays per second per core (ray tracer alone)", "rays/s", rays / frame,
                    rays / mj["frame_s"] if mj else None, mj.get("name"), ratio=rate,
                    notes=f"1 thread; scene preparation {100 * prep / frame:.0f} % of it; {load}"))
    rows.append(row(case, "depth frames per second (one env's image)", "frames/s", 1.0 / frame,
                    1.0 / mj["frame_s"] if mj else None, mj.get("name"), ratio=rate,
                    notes=f"{n} envs: {1.0 / (frame * n):.2f} frames of all envs per s"))
    pp_frac = (a - b) / b
    rows.append(row(case, "camera cost / physics step (step with − without)", "%", 100 * pp_frac,
                    100 * mj["frame_s"] / mj["step_s"] if mj else None,
                    (mj.get("name", "") + ": render / mj_step") if mj else None,
                    notes=f"step {b / n * 1e6:.0f} us per env without the camera, {a / n * 1e6:.0f} with; "
                          f"ratio > 1: polyphys's share smaller"))


def run(quick: bool = False) -> list[dict]:
    import warnings

    import polyphys
    import warp as wp
    from polyphys import morphs
    from polyphys.materials import MPM, Rigid
    from polyphys.plugins.mpm.options import MPMOptions

    wp.config.quiet = True
    try:
        load = f"load {os.getloadavg()[0]:.1f}"
    except OSError:
        load = ""
    rows: list[dict] = []
    n = 8 if quick else 64
    with tempfile.TemporaryDirectory() as tmp:
        xml = _humanoid_xml(tmp)
        if xml is None:
            rows.append(row("humanoid", "rays per second per core", "rays/s", float("nan"),
                            notes="gymnasium's humanoid.xml not installed: skipped"))
        else:
            def humanoid():
                sc = polyphys.Scene(sim=polyphys.SimOptions(dt=0.005, cpu_threads=1))
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    sc.add_entity(morphs.MJCF(file=xml), Rigid())
                return sc

            mj, backend = _mujoco(xml, n, 200)
            ref = {"frame_s": mj["frame_s"], "step_s": mj["step_s"], "name": f"mujoco.Renderer ({backend}, wall)"} \
                if mj else None
            _case("humanoid on its floor", humanoid, CAM, n, 5 if quick else 20, 3 if quick else 10, rows, ref, load)
            if mj is None:
                rows[-1]["notes"] += "; no OpenGL backend for mujoco.Renderer here (EGL, OSMesa): no reference"

    edge = 46                                  # 46³ = 97,336 particles per env
    def mpm():
        dx = 1.0 / 64
        side = 1.0
        sc = polyphys.Scene(sim=polyphys.SimOptions(dt=4e-4, substeps=2, cpu_threads=1),
                            mpm=MPMOptions(lower_bound=(-side / 2, -side / 2, 0.0), upper_bound=(side / 2, side / 2, side),
                                           grid_density=64.0))
        sc.add_entity(morphs.Box(size=(edge * dx / 2,) * 3, pos=(0.0, 0.0, 0.45)), MPM.Elastic(E=1e5, nu=0.2))
        return sc

    _case("MPM cube, 97k particles per env", mpm, dict(pos=(0.75, -0.85, 0.8), lookat=(0.0, 0.0, 0.4), fov=40),
          2 if quick else n, 1 if quick else 2, 1 if quick else 2, rows, None, load, alternate=False)
    rows[-3]["notes"] += "; MuJoCo draws no particles: no reference"
    return rows
