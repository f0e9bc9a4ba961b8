"""``polyphys export-usd RUN_DIR out.usd``: a run's recorded states as a USD stage (docs/viewer.md).

Layout of the stage (Z up, metres; time code = the scene's step number, timeCodesPerSecond = 1/dt,
so a stage plays at the simulated speed):

- ``/World`` (default prim) › ``env_<e>`` (an Xform; with every env exported, translated onto a grid)
- › ``<body>/<link>``: an Xform per link with time-sampled ``translate`` (double3) and ``orient``
  (quatf) = the recorded link pose at each recorded step; its geoms are children with a static local
  transform: ``Cube`` (scaled to the box half sizes), ``Sphere``, ``Capsule``, ``Cylinder`` (Z axis) or
  ``Mesh`` (mesh, heightfield, plane), with displayColor/displayOpacity from the geom's rgba;
- › ``<particle set>``: ``Points`` with time-sampled positions and widths (one constant width per
  time code: the particle spacing);
- › ``<surface>``: ``Mesh`` with static triangles and time-sampled points.

Needs the ``usd`` extra (usd-core), imported only here.
"""

from __future__ import annotations

import os
import time

import numpy as np

from .errors import OptionError
from .viewer._extras import require
from .viewer.content import PLANE_DEFAULT_HALF, env_spacing, frame_bbox, grid_offsets
from .viewer.recording import Recording


def _name(s: str, used: set) -> str:
    out = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in str(s)) or "_"
    if out[0].isdigit():
        out = "_" + out
    base, k = out, 1
    while out in used:
        out = f"{base}_{k}"
        k += 1
    used.add(out)
    return out


def export_usd(run_dir, out_path, envs="all", every: int = 1, progress=None) -> dict:
    """Write the recorded states of ``run_dir`` to ``out_path`` (.usd/.usdc binary, .usda text).

    :param envs: ``"all"`` (laid out on a grid) or one env index (at the origin).
    :param every: export every k-th record.
    :return: a summary {path, bytes, seconds, n_time_codes, envs, prims}.
    """
    require("pxr", "usd")
    from pxr import Gf, Sdf, Usd, UsdGeom, Vt

    t0 = time.perf_counter()
    rec = Recording(run_dir)
    c = rec.content
    out_path = os.fspath(out_path)
    if os.path.splitext(out_path)[1].lower() not in (".usd", ".usda", ".usdc"):
        raise OptionError(f"export-usd {out_path!r}: the file name must end in .usd, .usdc or .usda")
    if isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 1:
        raise OptionError(f"every = {every!r}: must be an integer >= 1")
    if envs == "all":
        env_list = list(range(c.n_envs))
    else:
        if isinstance(envs, bool) or not isinstance(envs, (int, np.integer)) or not 0 <= envs < c.n_envs:
            raise OptionError(f"env = {envs!r}: the run has envs 0..{c.n_envs - 1} (or 'all')")
        env_list = [int(envs)]
    records = list(range(0, rec.n_records, every))
    if records[-1] != rec.n_records - 1:
        records.append(rec.n_records - 1)
    steps = [int(rec.steps[k]) for k in records]
    grid = len(env_list) > 1
    f0 = rec.frame(0)
    spacing = env_spacing(frame_bbox(c, f0, 0)) if grid else 0.0
    offsets = grid_offsets(len(env_list), spacing) if grid else np.zeros((1, 3), np.float32)

    d = os.path.dirname(os.path.abspath(out_path))
    os.makedirs(d, exist_ok=True)
    stage = Usd.Stage.CreateNew(out_path)
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    stage.SetTimeCodesPerSecond(1.0 / c.dt)
    stage.SetFramesPerSecond(1.0 / c.dt)
    stage.SetStartTimeCode(steps[0])
    stage.SetEndTimeCode(steps[-1])
    world = UsdGeom.Xform.Define(stage, "/World")
    stage.SetDefaultPrim(world.GetPrim())
    world.GetPrim().SetCustomDataByKey("polyphys:scene", c.scene_name)
    n_prims = 0
    rec_idx = np.asarray(records)
    deferred = []            # (attribute path, value of the i-th exported record) written through Sdf below

    def color(prim, rgba):
        prim.CreateDisplayColorAttr(Vt.Vec3fArray([Gf.Vec3f(*[float(x) for x in rgba[:3]])]))
        if len(rgba) > 3 and float(rgba[3]) < 1.0:
            prim.CreateDisplayOpacityAttr(Vt.FloatArray([float(rgba[3])]))

    def mesh_prim(path, verts, faces):
        m = UsdGeom.Mesh.Define(stage, path)
        m.CreatePointsAttr(Vt.Vec3fArray.FromNumpy(np.asarray(verts, np.float32)))
        f = np.asarray(faces, np.int32)
        m.CreateFaceVertexCountsAttr(Vt.IntArray.FromNumpy(np.full(len(f), 3, np.int32)))
        m.CreateFaceVertexIndicesAttr(Vt.IntArray.FromNumpy(f.reshape(-1)))
        m.CreateSubdivisionSchemeAttr(UsdGeom.Tokens.none)
        return m

    if True:
        for slot, e in enumerate(env_list):
            used: set = set()
            env_path = f"/World/env_{e}"
            env_x = UsdGeom.Xform.Define(stage, env_path)
            if grid:
                env_x.AddTranslateOp().Set(Gf.Vec3d(*[float(x) for x in offsets[slot]]))
            for bi, b in enumerate(c.bodies):
                bpath = f"{env_path}/{_name(b.name, used)}"
                UsdGeom.Xform.Define(stage, bpath)
                lused: set = set()
                link_paths = []
                pos = np.asarray(rec.arrays[f"b{bi}.pos"][rec_idx, e], np.float64)    # (R, L, 3)
                quat = np.asarray(rec.arrays[f"b{bi}.quat"][rec_idx, e], np.float64)  # (R, L, 4)
                for li, lname in enumerate(b.link_names):
                    lp = f"{bpath}/{_name(lname, lused)}"
                    x = UsdGeom.Xform.Define(stage, lp)
                    top = x.AddTranslateOp(UsdGeom.XformOp.PrecisionDouble)
                    rop = x.AddOrientOp(UsdGeom.XformOp.PrecisionFloat)
                    deferred.append((top.GetAttr().GetPath(), [Gf.Vec3d(*p) for p in pos[:, li].tolist()].__getitem__))
                    deferred.append((rop.GetAttr().GetPath(), [Gf.Quatf(*q) for q in quat[:, li].tolist()].__getitem__))
                    link_paths.append(lp)
                    n_prims += 1
                gused: set = set()
                for g in b.geoms:
                    gp = f"{link_paths[g.link]}/{_name(g.name or g.type, gused)}"
                    prim = _geom_prim(stage, gp, g, c, mesh_prim)
                    gx = UsdGeom.Xformable(prim)
                    gx.AddTranslateOp().Set(Gf.Vec3d(*[float(v) for v in g.pos]))
                    gx.AddOrientOp().Set(Gf.Quatf(*[float(v) for v in g.quat]))
                    if g.type in ("box", "ellipsoid"):
                        gx.AddScaleOp().Set(Gf.Vec3f(*[float(v) for v in g.size[:3]]))
                    color(UsdGeom.Gprim(prim), g.rgba)
                    if g.role == "collision":
                        UsdGeom.Imageable(prim).CreatePurposeAttr(UsdGeom.Tokens.guide)
                    n_prims += 1
            for pi, p in enumerate(c.particles):
                pts = UsdGeom.Points.Define(stage, f"{env_path}/{_name(p.name, used)}")
                pa = pts.CreatePointsAttr()
                wa = pts.CreateWidthsAttr()
                pts.SetWidthsInterpolation(UsdGeom.Tokens.constant)
                arr = rec.arrays[f"p{pi}.pos"]
                width = Vt.FloatArray([float(2.0 * p.radius)])
                deferred.append((pa.GetPath(), _points(arr, rec_idx, e)))       # read when written: flat memory
                deferred.append((wa.GetPath(), lambda i, w=width: w))
                color(pts, p.color)
                n_prims += 1
            for si, sf in enumerate(c.surfaces):
                m = mesh_prim(f"{env_path}/{_name(sf.name, used)}", rec.arrays[f"s{si}.verts"][0, e], sf.triangles)
                m.CreateDoubleSidedAttr(True)
                arr = rec.arrays[f"s{si}.verts"]
                deferred.append((m.GetPointsAttr().GetPath(), _points(arr, rec_idx, e)))
                color(m, sf.color)
                n_prims += 1
    layer = stage.GetRootLayer()
    with Sdf.ChangeBlock():          # layer-level writes: a third of the cost of UsdAttribute.Set
        for path, value in deferred:
            for i, s in enumerate(steps):
                layer.SetTimeSample(path, float(s), value(i))
    layer.Save()
    return {"path": out_path, "bytes": os.path.getsize(out_path), "seconds": time.perf_counter() - t0,
            "n_time_codes": len(steps), "envs": env_list, "prims": n_prims, "spacing": spacing}


def _points(arr, rec_idx, env):
    """value(i): the Vt.Vec3fArray of record rec_idx[i], env ``env`` of a (records, envs, n, 3) array."""
    from pxr import Vt

    return lambda i: Vt.Vec3fArray.FromNumpy(np.ascontiguousarray(arr[int(rec_idx[i]), env], np.float32))


def _geom_prim(stage, path, g, content, mesh_prim):
    from pxr import UsdGeom

    s = tuple(g.size) + (0.0, 0.0, 0.0)
    if g.type == "box":
        p = UsdGeom.Cube.Define(stage, path)
        p.CreateSizeAttr(2.0)                 # a 2 m cube scaled by the half sizes
    elif g.type == "sphere":
        p = UsdGeom.Sphere.Define(stage, path)
        p.CreateRadiusAttr(float(s[0]))
    elif g.type == "capsule":
        p = UsdGeom.Capsule.Define(stage, path)
        p.CreateRadiusAttr(float(s[0]))
        p.CreateHeightAttr(float(2 * s[1]))
        p.CreateAxisAttr(UsdGeom.Tokens.z)
    elif g.type == "cylinder":
        p = UsdGeom.Cylinder.Define(stage, path)
        p.CreateRadiusAttr(float(s[0]))
        p.CreateHeightAttr(float(2 * s[1]))
        p.CreateAxisAttr(UsdGeom.Tokens.z)
    elif g.mesh >= 0:
        v, f = content.meshes[g.mesh]
        p = mesh_prim(path, v, f)
    elif g.type == "plane":
        hx = s[0] if s[0] > 0 else PLANE_DEFAULT_HALF
        hy = s[1] if s[1] > 0 else PLANE_DEFAULT_HALF
        v = np.array([[-hx, -hy, 0], [hx, -hy, 0], [hx, hy, 0], [-hx, hy, 0]], np.float32)
        p = mesh_prim(path, v, np.array([[0, 1, 2], [0, 2, 3]]))
        p.CreateDoubleSidedAttr(True)
    else:                                     # ellipsoid: a unit sphere scaled per axis
        p = UsdGeom.Sphere.Define(stage, path)
        p.CreateRadiusAttr(1.0)
    return p.GetPrim()
