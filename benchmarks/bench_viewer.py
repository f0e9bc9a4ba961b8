"""Viewer and USD export: frames per second in live mode and what limits them, export time and size.

Live mode (``polyphys.viewer.live`` stepping the scene, a frame pushed after every step, no frame
skipped): gymnasium's humanoid.xml at n_envs=64 shown as a grid of all 64 envs, and a 100k-particle
MPM cube (one env). A frame costs the scene step, reading the drawable state through the entity
getters (``FrameReader.read``) and pushing it to the viser server (``Viewer._push``: geom poses,
particle positions and colours serialised for the websocket). The rows give each part per frame
and the frames/s of the three together; the reference is the step alone (the ratio is the share
of the frame rate the viewer leaves). Measured server-side with no browser attached: a browser
renders on its own thread/GPU and drops frames it cannot draw, it does not slow the server.

Export: a 1000-step run of the bundled default scene (MPM jelly of 800 particles, rigid box,
kinematic platform) recorded every step, and of the humanoid at n_envs=4: seconds to write the
.usd (crate) and its size; the reference is the size of the recording it was made from.
"""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np

from . import row, time_steps


def _humanoid_path() -> str | None:
    import importlib.util

    spec = importlib.util.find_spec("gymnasium")
    if not (spec and spec.origin):
        return None
    p = os.path.join(os.path.dirname(spec.origin), "envs", "mujoco", "assets", "humanoid.xml")
    return p if os.path.exists(p) else None


def _humanoid_scene(n_envs):
    import polyphys
    from polyphys import morphs

    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=2))
    scene.add_entity(morphs.MJCF(file=_humanoid_path()), material=polyphys.materials.Rigid(), name="humanoid")
    scene.build(n_envs=n_envs)
    return scene


def _mpm_scene(n_edge):
    import polyphys
    from polyphys import morphs
    from polyphys.plugins.mpm import MPMOptions

    density = 64.0
    dx = 1.0 / density
    edge = n_edge * dx / 2
    side = np.ceil(2.5 * edge / dx + 6) * dx
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=4e-4, substeps=4),
                           mpm=MPMOptions(lower_bound=(0, 0, 0), upper_bound=(side,) * 3, grid_density=density))
    scene.add_entity(morphs.Box(size=(edge,) * 3, pos=(side / 2, side / 2, side / 2)),
                     polyphys.materials.MPM.Elastic(E=1e5, nu=0.2, rho=1000.0), name="cube")
    scene.build(n_envs=0)
    return scene


def _live_rows(label, scene, grid, color_by, quick):
    from polyphys import viewer as pv

    v = pv.live(scene, port=0, attach=False, grid=grid, grid_max=64, color_by=color_by, shadows=False,
                max_fps=1e9, name=label)
    try:
        min_time, repeats = (0.2, 2) if quick else (0.6, 3)
        t_step = time_steps(scene.step, min_time=min_time, repeats=repeats)
        t_read = time_steps(v.reader.read, min_time=min_time, repeats=repeats)
        t_read_nc = None
        if v.reader.contacts:
            v.reader.contacts = False
            t_read_nc = time_steps(v.reader.read, min_time=min_time, repeats=repeats)
            v.reader.contacts = True
        frame = v.reader.read()
        t_push = time_steps(lambda: v._push(frame), min_time=min_time, repeats=repeats)
        n = 0
        t0 = time.perf_counter()
        n = v.run_live(duration=1.0 if quick else 3.0)
        fps = n / (time.perf_counter() - t0)
        shown = len(v.shown_envs())
        payload = sum(np.asarray(a).nbytes for a in frame.values() if a is not None)
    finally:
        v.close()
    parts = {"step": t_step, "read state": t_read, "push to viser": t_push}
    limit = max(parts, key=parts.get)
    notes = (f"{shown} env(s) drawn; per frame: step {t_step * 1e3:.2f} ms, read {t_read * 1e3:.2f} ms, push "
             f"{t_push * 1e3:.2f} ms (limit: {limit}); frame state {payload / 1e6:.2f} MB")
    out = [row(label, "live frames/s (a frame every step)", "1/s", fps, 1.0 / t_step, "steps/s without viewer",
               ratio=fps * t_step, notes=notes),
           row(label, "read state per frame", "ms", t_read * 1e3, t_step * 1e3, "step time",
               notes="contacts included" if t_read_nc is not None else "")]
    if t_read_nc is not None:
        out.append(row(label, "read state per frame, contacts hidden", "ms", t_read_nc * 1e3, t_step * 1e3,
                       "step time", notes="the page's contacts box off: contacts are not read"))
    out.append(row(label, "push to viser per frame", "ms", t_push * 1e3, t_step * 1e3, "step time"))
    return out


def _export_rows(label, scene, steps, quick):
    from polyphys.usd_export import export_usd
    from polyphys.viewer import Recorder

    with tempfile.TemporaryDirectory() as d:
        rec = Recorder(scene, os.path.join(d, "states"), every=1, attach=False)
        t0 = time.perf_counter()
        for _ in range(steps):
            scene.step()
            rec.record()
        rec.close()
        t_run = time.perf_counter() - t0
        rec_bytes = rec.nbytes()
        info = export_usd(d, os.path.join(d, "run.usd"))
    return [row(f"{label}, {steps} steps", "USD export time", "s", info["seconds"], t_run,
                "run + record time", notes=f"{info['n_time_codes']} time codes, {info['prims']} prims"),
            row(f"{label}, {steps} steps", "USD file size", "MB", info["bytes"] / 1e6, rec_bytes / 1e6,
                "recorded states size", ratio=rec_bytes / info["bytes"],
                notes="ratio = recording / USD size (crate .usd)")]


def run(quick: bool = False) -> list[dict]:
    import warp as wp
    from polyphys.viewer import require

    require("viser", "viewer")
    wp.config.log_level = getattr(wp, "LOG_WARNING", 30)
    rows = []
    hum = _humanoid_path()
    n_envs = 16 if quick else 64
    if hum is not None:
        rows += _live_rows(f"humanoid.xml, n_envs={n_envs}, grid of all envs", _humanoid_scene(n_envs), True,
                           "material", quick)
    n_edge = 22 if quick else 46
    rows += _live_rows(f"mpm cube {n_edge ** 3} particles, coloured by speed", _mpm_scene(n_edge), False, "vel",
                       quick)
    from polyphys import run as runmod

    steps = 100 if quick else 1000
    plan = runmod.parse_file(runmod.default_scene_path())
    scene, _ = runmod.build_scene(plan)
    rows += _export_rows("default scene (MPM jelly 800 particles, box, platform), 1 env", scene, steps, quick)
    if hum is not None:
        rows += _export_rows("humanoid.xml, n_envs=4", _humanoid_scene(4), steps, quick)
    return rows


if __name__ == "__main__":
    import sys

    from . import __main__ as harness

    sys.exit(harness.main(["--only", "viewer"] + sys.argv[1:]))
