"""The browser viewer and the recorded states it replays (docs/viewer.md).

- :class:`Recorder` writes a scene's drawable state (link poses, particle positions, surface
  vertices, contacts) to a states folder; ``polyphys run`` records one into ``RUN_DIR/states``.
- :class:`Recording` reads one back (memory-mapped).
- :func:`live` serves a built scene in the browser and follows it step by step
  (``scene.add_viewer(...)`` is the same); :func:`replay` serves a recording;
  :func:`open_target` does what ``polyphys view`` does with a scene file, a run folder or a model.

The browser viewer needs the ``viewer`` extra (viser), imported only when a viewer starts.
"""

from __future__ import annotations

import os

from ..errors import OptionError
from ._extras import MissingExtraError, require
from .content import Content, FrameReader, scene_content
from .recording import Recorder, Recording, StatesError, states_dir

__all__ = ["Recorder", "Recording", "Content", "FrameReader", "scene_content", "StatesError",
           "MissingExtraError", "require", "states_dir", "live", "replay", "open_target", "Viewer"]


def __getattr__(name: str):
    if name == "Viewer":
        from .server import Viewer

        return Viewer
    raise AttributeError(f"module 'polyphys.viewer' has no attribute {name!r}")


def live(scene, *, port: int = 8080, host: str = "127.0.0.1", color_by: str = "material", contacts: bool = True,
         attach: bool = True, name: str | None = None, **kwargs):
    """Serve a built scene in the browser. With ``attach`` the viewer follows every ``scene.step()``
    (at most ``max_fps`` frames a second; the GUI's pause box holds the script's loop)."""
    from .server import Viewer

    require("viser", "viewer")
    content = scene_content(scene, name or "scene")
    fields = [color_by] if color_by != "material" else []
    reader = FrameReader(scene, content, fields=fields, contacts=contacts)
    viewer = Viewer(content, reader=reader, scene=scene, host=host, port=port, color_by=color_by,
                    contacts=contacts, **kwargs)
    if attach:
        scene.add_recorder(lambda _s: viewer.update())
    return viewer


def replay(path, *, port: int = 8080, host: str = "127.0.0.1", color_by: str = "material", **kwargs):
    """Serve the recorded states of a run folder (or a states folder) in the browser."""
    from .server import Viewer

    require("viser", "viewer")
    rec = Recording(path)
    rec.check_fields(color_by if color_by != "material" else None)
    return Viewer(rec.content, recording=rec, host=host, port=port, color_by=color_by, **kwargs)


MODEL_SUFFIXES = {".xml": "MJCF", ".mjcf": "MJCF", ".urdf": "URDF"}


def build_model_scene(path: str, n_envs: int = 0):
    """A scene holding one rigid model file (MJCF keeps its own floor; a URDF gets a ground plane)."""
    import polyphys
    from polyphys import morphs

    kind = MODEL_SUFFIXES[os.path.splitext(path)[1].lower()]
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=2))
    if kind == "URDF":
        scene.add_entity(morphs.Plane(), material=polyphys.materials.Rigid(), name="ground")
    scene.add_entity(getattr(morphs, kind)(file=path), material=polyphys.materials.Rigid(),
                     name=os.path.splitext(os.path.basename(path))[0])
    scene.build(n_envs=n_envs)
    return scene


def open_target(target: str, *, n_envs: int | None = None, **kwargs):
    """``polyphys view TARGET``: a run folder (replay), a scene file (.toml, live) or a model file
    (.xml/.urdf, live). Returns the Viewer."""
    target = os.fspath(target)
    if os.path.isdir(target):
        if n_envs is not None:
            raise OptionError("--n-envs applies to a scene or model file; a run folder replays its own envs")
        return replay(target, **kwargs)
    if not os.path.exists(target):
        raise OptionError(f"view {target!r}: no such file or folder (looked at {os.path.abspath(target)})")
    ext = os.path.splitext(target)[1].lower()
    if ext == ".toml":
        from .. import run as runmod

        plan = runmod.parse_file(target)
        if n_envs is not None:
            plan.n_envs = n_envs
        scene, _ = runmod.build_scene(plan)
        return live(scene, name=plan.name, attach=False, **kwargs)
    if ext in MODEL_SUFFIXES:
        scene = build_model_scene(target, n_envs=n_envs or 0)
        return live(scene, name=os.path.basename(target), attach=False, **kwargs)
    raise OptionError(f"view {target!r}: not a run folder, scene file (.toml) or model file "
                      f"({', '.join(sorted(MODEL_SUFFIXES))})")
