"""Mesh files read for their geometry only (vertices and triangles), shared by the importers.

Physics needs triangles, never materials or textures, so none are read: an OBJ's ``mtllib`` (whose
texture images need PIL through trimesh) is skipped, and so are a COLLADA file's images. Every
failure is an ImportError_ naming the file and the element that uses it (an empty file, a file
without triangles, non-finite vertices, faces that index no vertex, a .dae without the pycollada
package, a parse error), so that an importer can decide what a failure means: an error for a
collision or mass-bearing mesh, a warning and a skipped geom for a visual-only one
(docs/importers.md, "Meshes").
"""

from __future__ import annotations

import os

import numpy as np

from .errors import ImportError_

MESH_SUFFIXES = (".stl", ".obj", ".ply", ".off", ".glb", ".gltf", ".dae")


def _obj_geometry(path):
    from trimesh.exchange.obj import load_obj

    with open(path, "rb") as fh:
        out = load_obj(fh, skip_materials=True, group_material=False)
    parts = list(out.get("geometry", {}).values()) if "geometry" in out else [out]
    vs, fs, base = [], [], 0
    for part in parts:
        v = np.asarray(part.get("vertices", np.zeros((0, 3))), dtype=float).reshape(-1, 3)
        f = np.asarray(part.get("faces", np.zeros((0, 3))), dtype=np.int64).reshape(-1, 3)
        vs.append(v)
        fs.append(f + base)
        base += len(v)
    if not vs:
        return np.zeros((0, 3)), np.zeros((0, 3), np.int64)
    return np.concatenate(vs), np.concatenate(fs)


def read_mesh(path: str, what: str, need_faces: bool = True):
    """``(vertices (n, 3) float64, faces (m, 3) int64)`` of a mesh file, geometry only.

    ``what`` starts every error message (``file:line: <geom name='x'>``). ``need_faces=False``
    accepts a file with vertices but no triangles (MJCF makes its convex hull)."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in MESH_SUFFIXES:
        raise ImportError_(f"{what}: mesh file type {ext!r} of {path!r} is not readable; allowed "
                           f"{' '.join(MESH_SUFFIXES)}")
    try:
        size = os.path.getsize(path)
    except OSError as exc:
        raise ImportError_(f"{what}: cannot read mesh {path!r}: {exc}") from None
    if size == 0:
        raise ImportError_(f"{what}: mesh file {path!r} is empty (0 bytes)")
    if ext == ".dae":
        try:
            import collada  # noqa: F401
        except ImportError:
            raise ImportError_(f"{what}: mesh {path!r} is a COLLADA (.dae) file, which needs the "
                               f"pycollada package (pip install pycollada)") from None
    try:
        if ext == ".obj":
            v, f = _obj_geometry(path)
        else:
            import trimesh

            tm = trimesh.load(path, force="mesh", process=False)
            v = np.asarray(getattr(tm, "vertices", np.zeros((0, 3))), dtype=float).reshape(-1, 3)
            f = np.asarray(getattr(tm, "faces", np.zeros((0, 3))), dtype=np.int64).reshape(-1, 3)
    except ImportError_:
        raise
    except Exception as exc:   # a parser's own error on a damaged file, whatever its type
        raise ImportError_(f"{what}: cannot read mesh {path!r}: {type(exc).__name__}: "
                           f"{str(exc)[:200]}") from None
    if len(v) == 0:
        raise ImportError_(f"{what}: mesh {path!r} has no vertices")
    if not np.all(np.isfinite(v)):
        raise ImportError_(f"{what}: mesh {path!r} has vertices that are not finite (NaN or inf)")
    if len(f) == 0:
        if need_faces:
            raise ImportError_(f"{what}: mesh {path!r} has no triangles ({len(v)} vertices)")
    elif f.min() < 0 or f.max() >= len(v):
        raise ImportError_(f"{what}: mesh {path!r} has faces that index vertices outside "
                           f"[0, {len(v)})")
    return v, f
