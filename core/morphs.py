"""Morphs: what an entity's shape is made of (primitive shapes, mesh files, model files).

A morph carries geometry and the entity's initial placement; it knows nothing of physics. Every
field is validated at construction with an error that names the field, the value and what is
allowed. Angles are degrees (extrinsic x-y-z Euler), quaternions (w, x, y, z), sizes full lengths.
"""

from __future__ import annotations

import math
import os

import attrs
import numpy as np

from .arrays import as_numeric
from .errors import OptionError
from .options import CheckedMeta
from .rotations import euler_deg_to_quat, quat_mul_tuple


def _where(instance, field) -> str:
    return f"{type(instance).__name__}.{field.name}"


def _vec(n: int, optional: bool = False):
    """Converter to a tuple of n finite floats; errors name the class, the field and the value."""
    def convert(value, instance, field):
        if value is None and optional:
            return None
        where = _where(instance, field)
        arr = as_numeric(where, value, float).reshape(-1)
        if arr.shape != (n,):
            raise OptionError(f"{where} = {value!r}: expected {n} numbers (got shape {np.shape(value)})")
        if not np.all(np.isfinite(arr)):
            raise OptionError(f"{where} = {value!r}: expected {n} finite numbers")
        return tuple(float(x) for x in arr)

    return attrs.Converter(convert, takes_self=True, takes_field=True)


def _opt_vec(n: int):
    return _vec(n, optional=True)


def _number(value, instance, field) -> float:
    """Converter to one finite float; errors name the class, the field and the value."""
    where = _where(instance, field)
    arr = as_numeric(where, value, float)
    if arr.shape != () or not np.isfinite(arr):
        raise OptionError(f"{where} = {value!r}: expected one finite number")
    return float(arr)


_float = attrs.Converter(_number, takes_self=True, takes_field=True)


def _bool(instance, attribute, value):
    if not isinstance(value, (bool, np.bool_)):
        raise OptionError(f"{_where(instance, attribute)} = {value!r}: expected True or False")


def _opt_bool(instance, attribute, value):
    if value is not None:
        _bool(instance, attribute, value)


def _positive(instance, attribute, value):
    vals = value if isinstance(value, tuple) else (value,)
    if any(not (v > 0) for v in vals):
        raise OptionError(f"{type(instance).__name__}.{attribute.name} = {value!r}: must be > 0")


# one definition of each rotation helper: polyphys.rotations (re-exported here for existing callers)
euler_to_quat = euler_deg_to_quat
quat_mul = quat_mul_tuple


def _normalize_quat(q):
    n = math.sqrt(sum(x * x for x in q))
    if n < 1e-12:
        raise OptionError(f"quat = {q!r}: a zero quaternion has no orientation")
    return tuple(x / n for x in q)


@attrs.define(kw_only=True)
class Morph(metaclass=CheckedMeta):
    """Base of every morph: placement of the entity's root in the world.

    ``quat`` and ``euler`` are two spellings of one orientation: giving both raises.
    """

    pos: tuple = attrs.field(default=(0.0, 0.0, 0.0), converter=_vec(3))
    euler: tuple | None = attrs.field(default=None, converter=_opt_vec(3))
    quat: tuple | None = attrs.field(default=None, converter=_opt_vec(4))
    visualization: bool = attrs.field(default=True, validator=_bool)
    collision: bool = attrs.field(default=True, validator=_bool)

    def __attrs_post_init__(self):
        if self.euler is not None and self.quat is not None:
            raise OptionError(f"{type(self).__name__}: give either quat={self.quat} or "
                              f"euler={self.euler}, not both")
        if self.quat is not None:
            self.quat = _normalize_quat(self.quat)

    @property
    def orientation(self) -> tuple[float, float, float, float]:
        """The root orientation as a unit quaternion (w, x, y, z)."""
        if self.quat is not None:
            return self.quat
        if self.euler is not None:
            return euler_to_quat(self.euler)
        return (1.0, 0.0, 0.0, 0.0)


@attrs.define(kw_only=True)
class Primitive(Morph):
    """A single-shape morph. ``fixed=True`` welds it to the world (no root joint)."""

    fixed: bool = attrs.field(default=False, validator=_bool)


@attrs.define(kw_only=True)
class Plane(Primitive):
    """An infinite plane through ``pos`` with the given normal; always fixed."""

    normal: tuple = attrs.field(default=(0.0, 0.0, 1.0), converter=_vec(3))
    fixed: bool = attrs.field(default=True, validator=_bool)

    def __attrs_post_init__(self):
        super().__attrs_post_init__()
        if not self.fixed:
            raise OptionError("Plane.fixed = False: a plane is always fixed")
        n = np.linalg.norm(self.normal)
        if n < 1e-12:
            raise OptionError(f"Plane.normal = {self.normal}: must be a non-zero vector")
        self.normal = tuple(float(x) / n for x in self.normal)


@attrs.define(kw_only=True)
class Box(Primitive):
    """A box with full edge lengths ``size`` centred at ``pos``."""

    size: tuple = attrs.field(default=(1.0, 1.0, 1.0), converter=_vec(3), validator=_positive)


@attrs.define(kw_only=True)
class Sphere(Primitive):
    radius: float = attrs.field(default=0.5, converter=_float, validator=_positive)


@attrs.define(kw_only=True)
class Capsule(Primitive):
    """A capsule along local z: cylinder part of length ``height`` plus two hemispheres."""

    radius: float = attrs.field(default=0.25, converter=_float, validator=_positive)
    height: float = attrs.field(default=1.0, converter=_float, validator=_positive)


@attrs.define(kw_only=True)
class Cylinder(Primitive):
    """A cylinder along local z of full ``height``."""

    radius: float = attrs.field(default=0.25, converter=_float, validator=_positive)
    height: float = attrs.field(default=1.0, converter=_float, validator=_positive)


def _scale(value, instance, field):
    if np.ndim(value) == 0 and not isinstance(value, (str, bytes, dict)):
        value = (value, value, value)
    out = _vec(3).converter(value, instance, field)
    if any(v <= 0 for v in out):
        raise OptionError(f"{_where(instance, field)} = {value!r}: every factor must be > 0")
    return out


_scale3 = attrs.Converter(_scale, takes_self=True, takes_field=True)


def _existing_file(instance, attribute, value):
    if value is None:
        return
    if not isinstance(value, (str, os.PathLike)):
        raise OptionError(f"{type(instance).__name__}.{attribute.name} = {value!r}: expected a file path (a string)")
    if not os.path.isfile(value):
        raise OptionError(f"{type(instance).__name__}.{attribute.name} = {value!r}: no such file "
                          f"(looked at {os.path.abspath(value)})")


@attrs.define(kw_only=True)
class Mesh(Primitive):
    """A triangle mesh file (anything trimesh reads), or in-memory ``vertices``/``faces``."""

    file: str | None = attrs.field(default=None, validator=_existing_file)
    vertices: np.ndarray | None = None
    faces: np.ndarray | None = None
    scale: tuple = attrs.field(default=(1.0, 1.0, 1.0), converter=_scale3)
    file_meshes_are_zup: bool = attrs.field(default=True, validator=_bool)
    convexify: bool = attrs.field(default=False, validator=_bool)

    def __attrs_post_init__(self):
        super().__attrs_post_init__()
        if (self.file is None) == (self.vertices is None):
            raise OptionError("Mesh: give exactly one of file=... or vertices=/faces=")
        if self.vertices is not None:
            v = as_numeric("Mesh.vertices", self.vertices, float)
            f = as_numeric("Mesh.faces", self.faces, np.int64) if self.faces is not None else None
            if v.ndim != 2 or v.shape[1] != 3:
                raise OptionError(f"Mesh.vertices shape {v.shape}: expected (n, 3)")
            if not np.all(np.isfinite(v)):
                raise OptionError("Mesh.vertices contains NaN/inf: vertices must be finite")
            if f is None or f.ndim != 2 or f.shape[1] not in (3, 4):
                raise OptionError(f"Mesh.faces shape {None if f is None else f.shape}: expected "
                                  f"(m, 3) triangles or (m, 4) tetrahedra")
            if f.size and (f.min() < 0 or f.max() >= len(v)):
                raise OptionError(f"Mesh.faces index range [{f.min()}, {f.max()}] outside "
                                  f"[0, {len(v) - 1}]")
            self.vertices, self.faces = v, f

    def load_trimesh(self):
        """The mesh as a trimesh.Trimesh in the morph's local frame (scale and z-up applied)."""
        import trimesh

        from .meshfile import MESH_SUFFIXES, read_mesh

        if self.file is not None and os.path.splitext(self.file)[1].lower() in MESH_SUFFIXES:
            # geometry only: materials and textures (PIL through trimesh) are never read
            mesh = trimesh.Trimesh(*read_mesh(self.file, f"Mesh.file = {self.file!r}"), process=False)
        elif self.file is not None:
            mesh = trimesh.load(self.file, force="mesh", process=False)
        else:
            mesh = trimesh.Trimesh(self.vertices, self.faces, process=False)
        v = np.asarray(mesh.vertices, dtype=float)
        if not self.file_meshes_are_zup:
            v = np.stack([v[:, 0], -v[:, 2], v[:, 1]], axis=1)   # (X,Y,Z) -> (X,-Z,Y)
        v = v * np.asarray(self.scale)
        return trimesh.Trimesh(v, np.asarray(mesh.faces), process=False)


def _paths(value, instance, field) -> tuple:
    items = (value,) if isinstance(value, (str, os.PathLike)) else value
    try:
        items = tuple(items)
    except TypeError:
        raise OptionError(f"{_where(instance, field)} = {value!r}: expected a list of folder paths") from None
    if not all(isinstance(p, (str, os.PathLike)) for p in items):
        raise OptionError(f"{_where(instance, field)} = {value!r}: expected a list of folder paths (strings)")
    return items


@attrs.define(kw_only=True)
class FileMorph(Morph):
    """A model file turned into an EntityDescription by a registered importer."""

    file: str = attrs.field(default="", validator=_existing_file)
    scale: float = attrs.field(default=1.0, converter=_float, validator=_positive)
    fixed: bool | None = attrs.field(default=None, validator=_opt_bool)   # None: as the file says
    file_meshes_are_zup: bool = attrs.field(default=True, validator=_bool)
    convexify: bool = attrs.field(default=False, validator=_bool)
    visual: bool = attrs.field(default=True, validator=_bool)   # keep visual geometry (separate from collision)


@attrs.define(kw_only=True)
class MJCF(FileMorph):
    """A MuJoCo XML model."""


@attrs.define(kw_only=True)
class URDF(FileMorph):
    """A URDF robot. ``package_dirs`` resolve ``package://`` mesh paths; ``merge_fixed_links``
    lumps links joined by fixed joints (masses and inertias combined exactly)."""

    package_dirs: tuple = attrs.field(default=(), converter=attrs.Converter(
        lambda v, inst, f: _paths(v, inst, f), takes_self=True, takes_field=True))
    merge_fixed_links: bool = attrs.field(default=True, validator=_bool)


@attrs.define(kw_only=True)
class Description(Morph):
    """An entity from an in-memory EntityDescription (built by hand or by ``polyphys.describe``)."""

    description: object = None

    def __attrs_post_init__(self):
        super().__attrs_post_init__()
        from .description import EntityDescription

        if not isinstance(self.description, EntityDescription):
            raise OptionError(f"Description.description = {type(self.description).__name__}: "
                              f"expected an EntityDescription")


PRIMITIVES = (Plane, Box, Sphere, Capsule, Cylinder, Mesh)
