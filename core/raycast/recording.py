"""Videos of ``polyphys run`` (``[run] video = {...}``) and pictures of saved states (``polyphys
render``): which camera, which env, how often (docs/cameras.md, "Videos and pictures").

The camera is a camera sensor of the scene (named by its full name), a table of :class:`Camera`
keywords, or — when none is named — an automatic one framing the scene at the start. Frames are
rendered outside the step from the state after every k-th step, k = max(1, round(1 / (fps · dt))),
so the video plays at about the simulated speed.
"""

from __future__ import annotations

import math
import os

import numpy as np

from ..errors import OptionError
from .camera import Camera, auto_camera
from .media import VideoWriter, check_writable, depth_to_rgb, write_png

VIDEO_KEYS = ("camera", "fps", "env", "file")
CAMERA_KEYS = ("resolution", "fov", "K", "pos", "quat", "lookat", "up", "entity", "link", "site", "offset_pos",
               "offset_quat", "near", "far", "ambient", "lights", "shadows", "background", "particle_color",
               "color_range")
DEFAULT_FPS = 30.0
DEFAULT_RESOLUTION = (480, 360)


def check_video_table(source: str, value) -> dict | None:
    """``[run] video``: true (an automatic camera at 30 fps), false/absent (none) or a table
    {camera, fps, env, file}; errors name the key and the value (nothing is built yet)."""
    def err(key, v, allowed):
        return OptionError(f"{source}: run.video{key} = {v!r}: {allowed}")

    if value is None or value is False:
        return None
    if value is True:
        value = {}
    if not isinstance(value, dict):
        raise err("", value, "expected true, false or a table {camera, fps, env, file}")
    for k in value:
        if k not in VIDEO_KEYS:
            raise err(f".{k}", value[k], f"unknown key; allowed keys: {list(VIDEO_KEYS)}")
    out = dict(value)
    fps = out.get("fps", DEFAULT_FPS)
    if isinstance(fps, bool) or not isinstance(fps, (int, float)) or not (math.isfinite(fps) and fps > 0):
        raise err(".fps", fps, "must be a number > 0 (frames per second)")
    out["fps"] = float(fps)
    env = out.get("env", 0)
    if isinstance(env, bool) or not isinstance(env, int) or env < 0:
        raise err(".env", env, "must be an env index >= 0")
    f = out.get("file", "video.mp4")
    if not isinstance(f, str) or os.path.splitext(f)[1].lower() not in (".mp4", ".gif"):
        raise err(".file", f, "must be a file name ending in .mp4 or .gif")
    cam = out.get("camera")
    if cam is not None and not isinstance(cam, (str, dict)):
        raise err(".camera", cam, "must be the full name of a camera sensor (\"entity/name\") or a table of camera "
                                  "keywords")
    if isinstance(cam, dict):
        for k in cam:
            if k not in CAMERA_KEYS:
                raise err(f".camera.{k}", cam[k], f"unknown key; allowed keys: {list(CAMERA_KEYS)}")
    return out


def _tuples(v):
    if isinstance(v, list):
        return tuple(_tuples(x) for x in v)
    if isinstance(v, dict):
        return {k: _tuples(x) for k, x in v.items()}
    return v


def make_camera(scene, camera, env: int = 0, source: str = "camera", entities: dict | None = None):
    """A renderable camera: ``camera`` a camera sensor's full name (or a sensor object), a dict of
    :class:`Camera` keywords (``entity`` names an entity of ``entities``), or None (automatic)."""
    if camera is None:
        return auto_camera(scene, env, resolution=DEFAULT_RESOLUTION)
    if isinstance(camera, str):
        names = [s.full_name for s in scene.sensors if callable(getattr(s, "render", None))]
        if camera not in names:
            raise OptionError(f"{source} = {camera!r}: the scene has no camera sensor of that name; camera sensors: "
                              f"{names}")
        return scene.sensor(camera)
    if isinstance(camera, dict):
        kw = _tuples(dict(camera))
        if "entity" in kw:
            ents = entities or {e.name: e for e in scene.entities}
            if kw["entity"] not in ents:
                raise OptionError(f"{source}.entity = {kw['entity']!r}: no such entity; entities: {sorted(ents)}")
            kw["entity"] = ents[kw["entity"]]
        kw.setdefault("resolution", DEFAULT_RESOLUTION)
        try:
            return Camera(name="video", **kw)
        except TypeError as exc:
            raise OptionError(f"{source}: {exc}") from None
    return camera


def render_rgb(scene, cam, env: int, grow_range: bool = False) -> np.ndarray:
    """One rgb image (H, W, 3) of env ``env`` from a Camera or a camera sensor."""
    envs = [env] if scene.batched else None
    if isinstance(cam, Camera):
        img = cam.render(scene, envs_idx=envs, grow_range=grow_range)["rgb"]
    else:
        img = cam.render(envs_idx=envs, outputs=("rgb",))["rgb"]
    return img[0] if scene.batched else img


class Video:
    """The video of a run: camera, writer, frame interval; ``maybe_frame(step)`` after each step."""

    def __init__(self, scene, spec: dict, out_dir: str, source: str, entities: dict | None = None):
        dt = scene.sim_options.dt
        self.env = spec.get("env", 0)
        n = max(1, scene.n_envs)
        if self.env >= n:
            raise OptionError(f"{source}: run.video.env = {self.env}: the scene has {n} env(s)")
        self.every = max(1, round(1.0 / (spec["fps"] * dt)))
        self.scene = scene
        self.writer = VideoWriter(os.path.join(out_dir, spec.get("file", "video.mp4")), spec["fps"])
        self.camera = make_camera(scene, spec.get("camera"), self.env, f"{source}: run.video.camera", entities)

    def maybe_frame(self, step: int) -> None:
        if step % self.every == 0:
            self.writer.append(render_rgb(self.scene, self.camera, self.env, grow_range=True))

    def close(self) -> str:
        return self.writer.close()

    def summary(self) -> dict:
        return {"file": self.writer.path, "format": self.writer.format, "frames": self.writer.n_frames,
                "fps": self.writer.fps, "every_steps": self.every,
                "camera": getattr(self.camera, "full_name", getattr(self.camera, "name", "camera")),
                "env": self.env}


SEG_PALETTE = np.array([[0.90, 0.45, 0.10], [0.12, 0.47, 0.71], [0.17, 0.63, 0.17], [0.84, 0.15, 0.16],
                        [0.58, 0.40, 0.74], [0.55, 0.34, 0.29], [0.89, 0.47, 0.76], [0.74, 0.74, 0.13],
                        [0.09, 0.75, 0.81], [0.50, 0.50, 0.50]])


def picture(scene, cam, env: int, output: str) -> np.ndarray:
    """An rgb picture of one output: rgb as is, depth/distance as grey (near light), segmentation with
    one colour per id (black: nothing), normals mapped from [−1, 1] to [0, 1]."""
    envs = [env] if scene.batched else None
    if isinstance(cam, Camera):
        img = cam.render(scene, envs_idx=envs, outputs=(output,))[output]
    else:
        img = cam.render(envs_idx=envs, outputs=(output,))[output]
    img = img[0] if scene.batched else img
    if output == "rgb":
        return img
    if output in ("depth", "distance"):
        return depth_to_rgb(img)
    if output == "segmentation":
        ids = np.asarray(img, np.int64)
        out = SEG_PALETTE[np.mod(ids, len(SEG_PALETTE))]
        out[ids < 0] = 0.0
        return out
    return 0.5 * (np.asarray(img) + 1.0)


def render_checkpoint(checkpoint: str, scene_file: str | None = None, camera=None, env: int = 0,
                      out: str | None = None, output: str = "rgb", resolution=None) -> dict:
    """``polyphys render``: build the scene of ``scene_file`` (default: the run folder's
    summary.json names it), load ``checkpoint`` into it, render one picture, write a PNG."""
    import json

    from ..run import build_scene, parse_file

    checkpoint = os.fspath(checkpoint)
    if not os.path.isfile(checkpoint):
        raise OptionError(f"checkpoint = {checkpoint!r}: no such file")
    if scene_file is None:
        summ = os.path.join(os.path.dirname(os.path.abspath(checkpoint)), "summary.json")
        try:
            with open(summ) as fh:
                scene_file = json.load(fh)["scene"]["file"]
        except (OSError, ValueError, KeyError):
            raise OptionError(f"checkpoint {checkpoint!r}: no scene given and no summary.json of a run next to it "
                              f"naming one; pass --scene SCENE.toml") from None
    if output not in ("rgb", "depth", "distance", "segmentation", "normals"):
        raise OptionError(f"output = {output!r}: allowed 'rgb', 'depth', 'distance', 'segmentation', 'normals'")
    out = out or os.path.splitext(checkpoint)[0] + ".png"
    check_writable(out, "png path")
    plan = parse_file(scene_file)
    scene, _ = build_scene(plan)
    scene.load_checkpoint(checkpoint)
    n = max(1, scene.n_envs)
    if not (isinstance(env, int) and 0 <= env < n):
        raise OptionError(f"env = {env!r}: the scene has {n} env(s)")
    if camera is None:
        cam = auto_camera(scene, env, resolution=tuple(resolution) if resolution else DEFAULT_RESOLUTION,
                          outputs=(output,))
    else:
        cam = make_camera(scene, camera, env, "camera")
    img = picture(scene, cam, env, output)
    path = write_png(out, img)
    step = scene.get_step_count()
    return {"path": path, "scene": scene_file, "env": env, "step": int(np.asarray(step).reshape(-1)[env]),
            "resolution": (img.shape[1], img.shape[0]), "output": output}
