"""Turning model files into EntityDescriptions through the registered importers.

Every importer, a third party's included, goes through ``describe_morph``, which owns what all of
them share (docs/importers.md, "Errors" and "Warnings"):

- an error raised by an importer names the file: an ImportError_ or OptionError whose text lacks the
  file name gets it as a prefix (an OptionError from an importer becomes an ImportError_: it is the
  file that is wrong); a RecursionError (a file nested deeper than the importer can walk) becomes an
  ImportError_ too;
- the description is checked once (``description.description_problems``): every number finite and
  representable in float32, masses and inertias physical, axes and quaternions unit, sizes,
  frictions, stiffness/damping/armature/frictionloss and densities in range, indices valid; any
  problem is an ImportError_ naming the file and, where the importer recorded it, the line;
- the description's ``warnings`` are emitted once, as one PolyphysWarning attributed to the caller's
  line (not a line inside polyphys); importers record notes in ``desc.warnings`` and do not warn.
"""

from __future__ import annotations

import os
import sys
import warnings

from . import morphs as M
from .errors import ImportError_, OptionError, PolyphysWarning
from .registry import registry

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))


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


def _user_stacklevel() -> int:
    """The ``stacklevel`` that makes a warning point at the first frame outside polyphys."""
    frame = sys._getframe(1)     # the caller, which calls warnings.warn: stacklevel 1
    level = 1
    while frame is not None and _in_polyphys(os.path.abspath(frame.f_code.co_filename)):
        frame = frame.f_back
        level += 1
    return level


def _in_polyphys(filename: str) -> bool:
    """Whether a source file belongs to the polyphys distribution (core, plugins, couplers,
    importers: in an editable install these are sibling folders, in a wheel one package)."""
    pkg = sys.modules.get("polyphys")
    roots = {_PKG_DIR}
    for sub in ("plugins", "couplers", "importers"):
        mod = sys.modules.get(f"polyphys.{sub}")
        for p in getattr(mod, "__path__", []) or []:
            roots.add(os.path.abspath(p))
    if pkg is not None:
        for p in getattr(pkg, "__path__", []) or []:
            roots.add(os.path.abspath(p))
    return any(filename == r or filename.startswith(r + os.sep) for r in roots)


def _with_file(exc: Exception, path: str) -> str:
    msg = str(exc)
    return msg if (path in msg or os.path.basename(path) in msg) else f"{path}: {msg}"


def load_file_morph(morph, plugins=None):
    """The checked EntityDescription of a file morph (errors name the file; see the module doc).
    Does not emit the description's warnings (``describe_morph`` does)."""
    from .description import description_problems

    rec = importer_for(morph, plugins)
    path = os.path.abspath(morph.file)
    try:
        desc = rec.load()().load(morph)
    except ImportError_ as exc:
        msg = _with_file(exc, path)
        if msg == str(exc):
            raise
        raise ImportError_(msg) from exc
    except OptionError as exc:
        raise ImportError_(_with_file(exc, path)) from exc
    except RecursionError:
        raise ImportError_(f"{path}: importer {rec.name!r}: the file nests elements deeper than the "
                           f"importer can follow (Python's recursion limit "
                           f"{sys.getrecursionlimit()})") from None
    problems = description_problems(desc)
    if problems:
        raise ImportError_(f"{path}: importer {rec.name!r} gave a description that is not finite or "
                           f"not physically valid: " + "; ".join(problems))
    return desc


def describe_morph(morph, plugins=None):
    """EntityDescription of any morph: file morphs through an importer, primitives directly."""
    from .description import from_primitive

    if isinstance(morph, M.Description):
        return morph.description
    if isinstance(morph, M.FileMorph):
        desc = load_file_morph(morph, plugins)
        if desc.warnings:
            path = os.path.abspath(morph.file)
            warnings.warn(PolyphysWarning(f"{path}: " + "; ".join(str(w) for w in desc.warnings)),
                          stacklevel=_user_stacklevel())
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
        # a third-party importer's suffix: a plain FileMorph, which importer_for matches by suffix
        known = {s.lower() for r in registry().all("importer") for s in r.spec.suffixes}
        if suffix not in known:
            raise OptionError(f"describe({path!r}): unknown suffix {suffix!r}; allowed .xml/.mjcf (MJCF), "
                              f".urdf (URDF), the suffixes of the installed importers {sorted(known)}, or "
                              f"pass a morph")
        cls = M.FileMorph
    return describe_morph(cls(file=path, **morph_options))
