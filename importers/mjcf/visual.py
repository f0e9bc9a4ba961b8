"""MJCF rendering elements -> polyphys (docs/cameras.md, "MJCF"): ``<material>`` and ``<texture>`` give
geom colours and checker textures; ``<camera>`` becomes a ``camera`` sensor record (rendered on
demand: ``in_step = False``).

Colours follow MuJoCo: a geom with a material takes the material's rgba unless its own rgba
(directly or from its default class) is set; a texture's colours multiply that rgba. Builtin
``checker`` 2d textures become a checker (rgb1, rgb2) whose period is 1/texrepeat m with
``texuniform`` and the geom's extent (2·size[0]) / texrepeat without; ``flat`` textures their rgb1.
Gradient, skybox and file textures keep the plain colour (named in the importer's warning).

A camera's frame in MuJoCo looks along −z with y up; polyphys cameras use OpenCV's frame (x right,
y down, z forward): the same x, y and z negated — a rotation by π about x.
"""

from __future__ import annotations

import numpy as np
from polyphys.description import SensorRecord
from polyphys.errors import ImportError_

DEFAULT_RGBA = (0.5, 0.5, 0.5, 1.0)
DEFAULT_RESOLUTION = (320, 240)      # MuJoCo's default resolution is 1 x 1: a renderer picks the size


def _floats(text, n, what):
    try:
        v = [float(x) for x in str(text).split()]
    except ValueError:
        raise ImportError_(f"{what} = {text!r}: expected {n} numbers") from None
    if len(v) != n:
        raise ImportError_(f"{what} = {text!r}: expected {n} numbers")
    return v


def read_texture(ctx, a) -> None:
    """Remember a named <texture>'s builtin pattern and colours."""
    name = a.get("name")
    if not name:
        if a.get("type") != "skybox":
            ctx.unsupported["unnamed texture"] += 1
        else:
            ctx.unsupported["texture skybox"] += 1
        return
    ctx.textures[name] = dict(a)


def read_material(ctx, a) -> None:
    """Remember a named <material>'s attributes (``a`` merged over its default class)."""
    name = a.get("name")
    if not name:
        ctx.unsupported["unnamed material"] += 1
        return
    ctx.materials[name] = dict(a)


def geom_look(ctx, a, size, what):
    """(rgba, texture or None) of a geom from its attributes (merged over its class) and material."""
    explicit = "rgba" in a
    rgba = tuple(_floats(a["rgba"], 4, f"{what} rgba")) if explicit else DEFAULT_RGBA
    mname = a.get("material")
    if not mname:
        return rgba, None
    if mname not in ctx.materials:
        raise ImportError_(f"{ctx.file}: {what} uses material {mname!r}, which is not defined; materials: "
                           f"{sorted(ctx.materials)}")
    mat = ctx.materials[mname]
    mrgba = tuple(_floats(mat.get("rgba", "1 1 1 1"), 4, f"material {mname!r} rgba"))
    if not explicit or rgba == DEFAULT_RGBA:
        rgba = mrgba
    tname = mat.get("texture")
    if not tname:
        return rgba, None
    tex = ctx.textures.get(tname)
    if tex is None:
        raise ImportError_(f"{ctx.file}: material {mname!r} uses texture {tname!r}, which is not defined")
    builtin = tex.get("builtin", "none")
    rgb1 = np.asarray(_floats(tex.get("rgb1", "0.8 0.8 0.8"), 3, f"texture {tname!r} rgb1"))
    rgb2 = np.asarray(_floats(tex.get("rgb2", "0.5 0.5 0.5"), 3, f"texture {tname!r} rgb2"))
    if builtin == "flat":
        return tuple(np.r_[np.asarray(rgba[:3]) * rgb1, rgba[3]]), None
    if builtin == "checker" and tex.get("type", "cube") == "2d":
        rep = _floats(mat.get("texrepeat", "1 1"), 2, f"material {mname!r} texrepeat")[0]
        if rep <= 0:
            return rgba, None
        if mat.get("texuniform", "false") == "true" or size[0] <= 0:
            period = 1.0 / rep
        else:
            period = 2.0 * size[0] / rep
        # a builtin checker image holds 2 x 2 squares per repetition
        return rgba, (tuple(rgb1), tuple(rgb2), 0.5 * period)
    ctx.unsupported[f"texture {builtin if builtin != 'none' else 'file'} (plain colour used)"] += 1
    return rgba, None


def mj_to_cv(q) -> tuple:
    """Quaternion (w, x, y, z) of the OpenCV camera frame from MuJoCo's camera frame quaternion."""
    w, x, y, z = q
    # q ⊗ (0, 1, 0, 0): a rotation by π about the camera's x axis
    return (-x, w, z, -y)


def camera_record(ctx, a, li, link_name, pos, quat, index) -> SensorRecord:
    """A ``camera`` sensor record (in_step False) of a <camera> on link ``li``."""
    name = a.get("name") or f"camera{index}"
    what = f"camera {name!r}"
    mode = a.get("mode", "fixed")
    if mode != "fixed":
        ctx.unsupported[f"camera mode {mode} (imported as fixed)"] += 1
    res = tuple(int(round(v)) for v in _floats(a.get("resolution", "1 1"), 2, f"{what} resolution"))
    if res == (1, 1):
        res = DEFAULT_RESOLUTION
    opts = {"link": link_name if li != 0 else None, "offset_pos": tuple(float(v) for v in pos),
            "offset_quat": mj_to_cv(quat), "resolution": res, "in_step": False}
    if "sensorsize" in a:
        ss = _floats(a["sensorsize"], 2, f"{what} sensorsize")
        if "focalpixel" in a:
            fx, fy = _floats(a["focalpixel"], 2, f"{what} focalpixel")
        else:
            f = _floats(a.get("focal", "0 0"), 2, f"{what} focal")
            fx, fy = f[0] / ss[0] * res[0], f[1] / ss[1] * res[1]
        if not (fx > 0 and fy > 0):
            raise ImportError_(f"{ctx.file}: {what}: sensorsize needs focal or focalpixel > 0")
        for k in ("principal", "principalpixel"):
            if k in a and any(v != 0 for v in _floats(a[k], 2, f"{what} {k}")):
                ctx.unsupported[f"camera {k} (principal point kept at the image centre)"] += 1
        opts["K"] = ((fx, 0.0, res[0] / 2), (0.0, fy, res[1] / 2), (0.0, 0.0, 1.0))
    else:
        opts["fov"] = float(a.get("fovy", 45.0))
    for k in ("ipd", "target", "orthographic"):
        if k in a and a[k] not in ("false", "0", ""):
            ctx.unsupported[f"camera {k}"] += 1
    return SensorRecord(name=name, kind="camera", options=opts, source="MJCF camera")
