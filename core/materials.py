"""Material and Surface base classes, and the ``polyphys.materials`` namespace.

Plugins register their material classes with ``polyphys_materials()``; this module resolves
``polyphys.materials.Rigid`` or ``polyphys.materials.MPM.Elastic`` lazily through the registry, so
importing polyphys imports no plugin.
"""

from __future__ import annotations

import attrs

from .options import CheckedMeta


@attrs.define(kw_only=True)
class Material(metaclass=CheckedMeta):
    """Base of every material. A scene dispatches an entity to the solver that owns the most-derived
    registered material class in ``type(material).__mro__``."""


@attrs.define(kw_only=True)
class Surface(metaclass=CheckedMeta):
    """How an entity looks (colour); no physics."""

    color: tuple = attrs.field(default=(0.6, 0.6, 0.6, 1.0), converter=attrs.Converter(
        lambda v, inst, f: _color(v, inst, f), takes_self=True, takes_field=True))


def _color(value, instance, field) -> tuple:
    """RGB or RGBA in [0, 1] -> an RGBA tuple; errors name the field and the value."""
    import numpy as np

    from .arrays import as_numeric
    from .errors import OptionError

    where = f"{type(instance).__name__}.{field.name}"
    arr = as_numeric(where, value, float).reshape(-1)
    if arr.shape not in ((3,), (4,)) or not np.all(np.isfinite(arr)) or arr.min() < 0 or arr.max() > 1:
        raise OptionError(f"{where} = {value!r}: expected 3 or 4 numbers (RGB or RGBA) in [0, 1]")
    return tuple(float(x) for x in arr) + ((1.0,) if arr.shape == (3,) else ())


class _Family:
    """``polyphys.materials.<Family>``: the registered materials of one family."""

    def __init__(self, family: str):
        self._family = family

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        from .registry import registry

        for rec in registry().all("material"):
            if rec.spec.family == self._family and rec.name == name:
                return rec.load()
        known = sorted(r.name for r in registry().all("material") if r.spec.family == self._family)
        raise AttributeError(f"polyphys.materials.{self._family} has no material {name!r}; "
                             f"registered: {known}")

    def __dir__(self):
        from .registry import registry

        return sorted(r.name for r in registry().all("material") if r.spec.family == self._family)

    def __repr__(self):
        return f"<material family {self._family}>"


def lookup(name: str):
    """``polyphys.materials.<name>``: a registered material class or family."""
    from .registry import registry

    recs = registry().all("material")
    for rec in recs:
        if rec.spec.family is None and rec.name == name:
            return rec.load()
    if any(rec.spec.family == name for rec in recs):
        return _Family(name)
    known = sorted({r.spec.family or r.name for r in recs})
    raise AttributeError(f"polyphys.materials has no material or family {name!r}; registered: {known}")


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    return lookup(name)
