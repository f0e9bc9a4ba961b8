"""The ``chain`` importer: a chain of rods described in a small TOML file (suffix ``.chain``).

    name = "arm"                # optional, default: the file's stem
    [[link]]                    # one table per rod, from the base down
    name = "upper"
    length = 0.5                # m: the rod hangs along -z from its joint
    radius = 0.04               # m
    mass = 1.2                  # kg
    axis = [0, 1, 0]            # its revolute joint's axis (link frame), at the rod's top end

Each rod is a link whose frame sits at its joint; the first joint is at the entity's origin (the
solver places it at the morph's ``pos`` and orientation, as for any model file), each next one at
the previous rod's lower end. Its mass is spread as a solid cylinder of the rod's
radius and length (centre of mass halfway down); it collides as a capsule of that radius along the
rod. An importer needs no physics engine: it returns an ``EntityDescription``, which polyphys then
checks (finite, physically valid) and any solver that takes descriptions (``rigid``, ``kinematic``)
simulates.
"""

from __future__ import annotations

import os
import sys

import attrs
import numpy as np
from polyphys.description import EntityDescription, Geom, Inertial, Joint, Link
from polyphys.errors import ImportError_
from polyphys.interfaces import Importer
from polyphys.morphs import FileMorph

if sys.version_info >= (3, 11):
    import tomllib
else:   # Python 3.10
    import tomli as tomllib

LINK_KEYS = ("name", "length", "radius", "mass", "axis")


@attrs.define(kw_only=True)
class ChainFile(FileMorph):
    """A ``.chain`` file (what ``ChainImporter`` reads); placed like any morph (``pos``, ``euler``/``quat``)."""


class ChainImporter(Importer):
    def load(self, morph) -> EntityDescription:
        path = morph.file
        try:
            with open(path, "rb") as fh:
                data = tomllib.load(fh)
        except tomllib.TOMLDecodeError as exc:       # its message names the line and column
            raise ImportError_(f"{path}: not a valid .chain (TOML) file: {exc}") from None
        links = data.get("link")
        if not isinstance(links, list) or not links:
            raise ImportError_(f"{path}: a chain needs at least one [[link]] table")
        name = data.get("name", os.path.splitext(os.path.basename(path))[0])
        desc = EntityDescription(name=str(name), source=os.path.abspath(path))
        parent_length = 0.0
        for i, spec in enumerate(links):
            where = f"{path}: link[{i}]"
            unknown = sorted(set(spec) - set(LINK_KEYS))
            if unknown:
                raise ImportError_(f"{where}: unknown keys {unknown}; allowed: {list(LINK_KEYS)}")
            length, radius, mass = (_positive(where, spec, k) for k in ("length", "radius", "mass"))
            axis = _axis(where, spec.get("axis", (0.0, 1.0, 0.0)))
            link_name = str(spec.get("name", f"link{i}"))
            s = morph.scale                          # a scaled chain keeps its density: mass × s³
            length, radius, mass = length * s, radius * s, mass * s**3
            ixx = mass * (3 * radius**2 + length**2) / 12.0
            izz = mass * radius**2 / 2.0
            desc.links.append(Link(
                name=link_name, parent=i - 1, pos=(0.0, 0.0, -parent_length),
                inertial=Inertial(mass=mass, com=(0.0, 0.0, -length / 2), inertia=np.diag([ixx, ixx, izz])),
                joints=[i], geoms=[i], src=where))
            desc.joints.append(Joint(name=link_name, type="revolute", link=i, axis=axis, src=where))
            desc.geoms.append(Geom(name=f"{link_name}_rod", type="capsule", link=i, size=(radius, length / 2, 0.0),
                                   pos=(0.0, 0.0, -length / 2), density=mass / (np.pi * radius**2 * length),
                                   src=where))
            parent_length = length
        return desc.finalize()


def _positive(where: str, spec: dict, key: str) -> float:
    value = spec.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or value <= 0:
        raise ImportError_(f"{where}: {key} = {value!r}: must be a finite number > 0")
    return float(value)


def _axis(where: str, value) -> tuple:
    try:
        a = np.asarray(value, dtype=float).reshape(3)
    except (TypeError, ValueError):
        raise ImportError_(f"{where}: axis = {value!r}: expected 3 numbers") from None
    n = float(np.linalg.norm(a))
    if not np.isfinite(n) or n < 1e-12:
        raise ImportError_(f"{where}: axis = {value!r}: must be a finite, non-zero vector")
    return tuple(float(x) / n for x in a)
