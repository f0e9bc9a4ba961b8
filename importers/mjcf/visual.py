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

DEFAULT_RGBA = (0.5, 0.5, 0.5, 1.0)
DEFAULT_RESOLUTION = (320, 240)      # MuJoCo's default resolution is 1 x 1: a renderer picks the size


def _pad(vals, n, fill):
    vals = list(vals)
    return tuple(vals + list(fill[len(vals):n]))


def read_texture(ctx, a) -> None:
    """Remember a named <texture> (its attributes, ``polyphys.xmlfile.Attrs``)."""
    name = a.get("name")
    if not name:
        ctx.unsupported["texture skybox" if a.get("type") == "skybox" else "unnamed texture"] += 1
        return
    if name in ctx.textures:
        raise a.error("name", "duplicate texture name")
    ctx.textures[name] = a


def read_material(ctx, a) -> None:
    """Remember a named <material> (``a``: its attributes merged over its default class)."""
    name = a.get("name")
    if not name:
        ctx.unsupported["unnamed material"] += 1
        return
    if name in ctx.materials:
        raise a.error("name", "duplicate material name")
    ctx.materials[name] = a


def geom_look(ctx, a, size):
    """(rgba, texture or None) of a geom from its attributes (merged over its class) and material;
    errors name the file, line and attribute."""
    explicit = "rgba" in a
    rgba = _pad(a.reals("rgba", (), max_n=4, ge=0.0), 4, DEFAULT_RGBA)
    mname = a.get("material")
    if not mname:
        return rgba, None
    mat = ctx.materials.get(mname)
    if mat is None:
        raise a.error("material", f"no such material; materials: {sorted(ctx.materials)}")
    mrgba = _pad(mat.reals("rgba", (1.0, 1.0, 1.0, 1.0), max_n=4, ge=0.0), 4, (1.0, 1.0, 1.0, 1.0))
    if not explicit or rgba == DEFAULT_RGBA:
        rgba = mrgba
    tname = mat.get("texture")
    if not tname:
        return rgba, None
    tex = ctx.textures.get(tname)
    if tex is None:
        raise mat.error("texture", f"no such texture; textures: {sorted(ctx.textures)}")
    builtin = tex.get("builtin", "none")
    rgb1 = np.asarray(tex.reals("rgb1", (0.8, 0.8, 0.8), n=3, ge=0.0))
    rgb2 = np.asarray(tex.reals("rgb2", (0.5, 0.5, 0.5), n=3, ge=0.0))
    if builtin == "flat":
        return tuple(float(x) for x in np.r_[np.asarray(rgba[:3]) * rgb1, rgba[3]]), None
    if builtin == "checker" and tex.get("type", "cube") == "2d":
        rep = mat.reals("texrepeat", (1.0, 1.0), n=2)[0]
        if rep <= 0:
            return rgba, None
        if mat.boolean("texuniform", False) or size[0] <= 0:
            period = 1.0 / rep
        else:
            period = 2.0 * size[0] / rep
        # a builtin checker image holds 2 x 2 squares per repetition
        return rgba, (tuple(float(x) for x in rgb1), tuple(float(x) for x in rgb2), 0.5 * period)
    ctx.unsupported[f"texture {builtin if builtin != 'none' else 'file'} (plain colour used)"] += 1
    return rgba, None


def mj_to_cv(q) -> tuple:
    """Quaternion (w, x, y, z) of the OpenCV camera frame from MuJoCo's camera frame quaternion."""
    w, x, y, z = q
    # q ⊗ (0, 1, 0, 0): a rotation by π about the camera's x axis
    return (-x, w, z, -y)


def camera_record(ctx, a, li, link_name, pos, quat, index) -> SensorRecord:
    """A ``camera`` sensor record (in_step False) of a <camera> (attributes ``a``) on link ``li``."""
    name = a.get("name") or f"camera{index}"
    mode = a.get("mode", "fixed")
    if mode != "fixed":
        ctx.unsupported[f"camera mode {mode} (imported as fixed)"] += 1
    res = tuple(int(round(v)) for v in a.reals("resolution", (1.0, 1.0), n=2, ge=1.0))
    if res == (1, 1):
        res = DEFAULT_RESOLUTION
    opts = {"link": link_name if li != 0 else None, "offset_pos": tuple(float(v) for v in pos),
            "offset_quat": mj_to_cv(quat), "resolution": res, "in_step": False}
    if "sensorsize" in a:
        ss = a.reals("sensorsize", n=2, gt=0.0)
        if "focalpixel" in a:
            fx, fy = a.reals("focalpixel", n=2, gt=0.0)
        else:
            f = a.reals("focal", n=2, gt=0.0)
            fx, fy = f[0] / ss[0] * res[0], f[1] / ss[1] * res[1]
        for k in ("principal", "principalpixel"):
            if k in a and any(v != 0 for v in a.reals(k, n=2)):
                ctx.unsupported[f"camera {k} (principal point kept at the image centre)"] += 1
        opts["K"] = ((fx, 0.0, res[0] / 2), (0.0, fy, res[1] / 2), (0.0, 0.0, 1.0))
    else:
        opts["fov"] = a.real("fovy", 45.0, gt=0.0, lt=180.0)
    for k in ("ipd", "target", "orthographic"):
        if k in a and a[k] not in ("false", "0", ""):
            ctx.unsupported[f"camera {k}"] += 1
    return SensorRecord(name=name, kind="camera", options=opts, source="MJCF camera")
