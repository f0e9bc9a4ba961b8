"""Turning model files into EntityDescriptions through the registered importers."""

from __future__ import annotations

import os

from . import morphs as M
from .errors import OptionError
from .registry import registry


def importer_for(morph, plugins=None):
    """The registered importer for a file morph: by morph class name, then by file suffix."""
    recs = registry().all("importer", plugins)
    names = [c.__name__ for c in type(morph).__mro__]
    for cname in names:
        for rec in recs:
            if cname in rec.spec.morphs:
                return rec
    suffix = os.path.splitext(getattr(morph, "file", "") or "")[1].lower()
    for rec in recs:
        if suffix and suffix in rec.spec.suffixes:
            return rec
    raise OptionError(f"no registered importer reads {type(morph).__name__} files "
                      f"(suffix {suffix!r}); importers: "
                      f"{[(r.name, r.spec.morphs, r.spec.suffixes) for r in recs]}")


def describe_morph(morph, plugins=None):
    """EntityDescription of any morph: file morphs through an importer, primitives directly."""
    from .description import from_primitive

    if isinstance(morph, M.Description):
        return morph.description
    if isinstance(morph, M.FileMorph):
        rec = importer_for(morph, plugins)
        desc = rec.load()().load(morph)
        return desc
    if isinstance(morph, M.Primitive):
        return from_primitive(morph)
    raise OptionError(f"cannot describe morph {type(morph).__name__}")


def describe(file, **morph_options):
    """``polyphys.describe("robot.xml", scale=2.0)`` -> EntityDescription (no scene needed)."""
    if isinstance(file, M.Morph):
        if morph_options:
            raise OptionError("describe(morph, ...): pass options on the morph itself")
        return describe_morph(file)
    path = os.fspath(file)
    suffix = os.path.splitext(path)[1].lower()
    cls = {".xml": M.MJCF, ".mjcf": M.MJCF, ".urdf": M.URDF}.get(suffix)
    if cls is None:
        raise OptionError(f"describe({path!r}): unknown suffix {suffix!r}; allowed .xml/.mjcf (MJCF), "
                          f".urdf (URDF), or pass a morph")
    return describe_morph(cls(file=path, **morph_options))
