"""Option classes (attrs, validated at construction) and the validators plugins reuse.

Every validator raises OptionError naming the class, the field, the value and what is allowed.

``Options`` (a base class for option classes), ``polyphys.materials.Material`` and
``polyphys.morphs.Morph`` share one constructor check, ``CheckedMeta``: an unknown keyword is an
``OptionError`` listing the allowed fields with a "did you mean" suggestion (difflib, or a field's
``metadata={"synonyms": (...)}``), positional arguments are refused with the field list, and attrs'
own type checks (``attrs.validators.instance_of``/``in_``) become ``OptionError`` naming the field, the
value and what is allowed. Scene files (polyphys.run) use the same messages.
"""

from __future__ import annotations

import abc
import difflib
import math
import os

import attrs

from .errors import OptionError


def init_fields(cls) -> list[str]:
    """The keyword arguments an attrs class takes (its init fields, by their aliases)."""
    return [getattr(a, "alias", None) or a.name.lstrip("_") for a in attrs.fields(cls) if a.init]


def suggest(key: str, allowed, synonyms: dict | None = None) -> str | None:
    """The allowed name closest to ``key`` (a declared synonym first, then difflib), or None."""
    words = {a.lower(): a for a in allowed}                 # every spelling -> the field it means
    for name, syn in (synonyms or {}).items():
        for w in syn:
            words.setdefault(w.lower(), name)
    if key.lower() in words:
        return words[key.lower()]
    close = difflib.get_close_matches(key.lower(), list(words), n=1, cutoff=0.6)
    return words[close[0]] if close else None


# words users reach for, mapped to the field names polyphys uses (a suggestion is made only when
# the class has that field); a field may add its own with metadata={"synonyms": (...)}
COMMON_SYNONYMS = {
    "rho": ("density",),
    "radius": ("r", "size", "radii"),
    "size": ("extents", "dims", "dimensions"),
    "E": ("youngs_modulus", "young_modulus", "young"),
    "nu": ("poisson", "poisson_ratio", "poissons_ratio"),
    "substeps": ("n_substeps", "num_substeps"),
    "dt": ("timestep", "time_step"),
    "pos": ("position",),
    "quat": ("orientation", "rotation"),
    "file": ("path", "filename"),
}


def _synonyms(cls) -> dict:
    fields = {getattr(a, "alias", None) or a.name: a for a in attrs.fields(cls) if a.init}
    out = {name: words for name, words in COMMON_SYNONYMS.items() if name in fields}
    for name, a in fields.items():
        if a.metadata.get("synonyms"):
            out[name] = tuple(a.metadata["synonyms"]) + out.get(name, ())
    return out


def unknown_field_hint(cls, key: str) -> str:
    """"unknown field 'sise' of Box; did you mean 'size'? allowed fields: [...]"."""
    allowed = init_fields(cls)
    hint = suggest(key, allowed, _synonyms(cls))
    return (f"unknown field {key!r} of {cls.__name__}" + (f"; did you mean {hint!r}?" if hint else ";")
            + f" allowed fields: {sorted(allowed)}")


def unknown_field_message(cls, key: str) -> str:
    """``Box(sise=...)``: "Box(sise=...): unknown field 'sise' of Box; did you mean 'size'? ..."."""
    return f"{cls.__name__}({key}=...): {unknown_field_hint(cls, key)}"


def _type_name(t) -> str:
    if isinstance(t, tuple):
        return " or ".join(_type_name(x) for x in t)
    if t is bool:
        return "True or False"
    if t in (int, float):
        return "a number" if t is float else "an integer"
    return getattr(t, "__name__", repr(t))


def _attrs_error(cls, exc: Exception) -> OptionError | None:
    """attrs' instance_of / in_ validator errors (args: message, attribute, expected, value) as an
    OptionError naming the class, the field, the value and what is allowed."""
    args = getattr(exc, "args", ())
    if len(args) != 4 or not isinstance(args[1], attrs.Attribute):
        return None
    attribute, expected, value = args[1], args[2], args[3]
    name = getattr(attribute, "alias", None) or attribute.name
    if isinstance(exc, TypeError):
        allowed = f"expected {_type_name(expected)}, got {type(value).__name__}"
    else:
        allowed = f"allowed values are {sorted(expected, key=repr) if isinstance(expected, (set, frozenset)) else list(expected)}"
    return OptionError(f"{cls.__name__}.{name} = {value!r}: {allowed}")


class CheckedMeta(abc.ABCMeta):
    """Metaclass of ``Options``, ``Material`` and ``Morph``: the constructor check of the module
    docstring, done before attrs' ``__init__`` runs (so every subclass, a third party's included,
    gets it without writing anything)."""

    def __call__(cls, *args, **kwargs):
        if attrs.has(cls):
            allowed = init_fields(cls)
            if args:
                raise OptionError(f"{cls.__name__}{tuple(args)!r}: {cls.__name__} takes keyword arguments only; "
                                  f"allowed fields: {sorted(allowed)}")
            for key in kwargs:
                if key not in allowed:
                    raise OptionError(unknown_field_message(cls, key))
        try:
            return super().__call__(*args, **kwargs)
        except (TypeError, ValueError) as exc:
            if isinstance(exc, OptionError):
                raise
            err = _attrs_error(cls, exc)
            if err is None:
                raise
            raise err from None


class Options(metaclass=CheckedMeta):
    """Base of option classes (``@attrs.frozen(kw_only=True) class MyOptions(Options): ...``): unknown
    keywords and attrs type-check failures become ``OptionError`` with the allowed fields."""

    __slots__ = ()


def _where(instance, attribute):
    return f"{type(instance).__name__}.{attribute.name}"


def positive(instance, attribute, value):
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value <= 0:
        raise OptionError(f"{_where(instance, attribute)} = {value!r}: must be a finite number > 0")


def non_negative(instance, attribute, value):
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value < 0:
        raise OptionError(f"{_where(instance, attribute)} = {value!r}: must be a finite number >= 0")


def positive_int(instance, attribute, value):
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise OptionError(f"{_where(instance, attribute)} = {value!r}: must be an integer >= 1")


def in_range(lo, hi, *, lo_open=False, hi_open=False):
    def check(instance, attribute, value):
        if value is None:
            return
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        ok = ok and (value > lo if lo_open else value >= lo) and (value < hi if hi_open else value <= hi)
        if not ok:
            lb, rb = "(" if lo_open else "[", ")" if hi_open else "]"
            raise OptionError(f"{_where(instance, attribute)} = {value!r}: must be in {lb}{lo}, {hi}{rb}")

    return check


def one_of(*allowed):
    def check(instance, attribute, value):
        if value not in allowed:
            raise OptionError(f"{_where(instance, attribute)} = {value!r}: allowed values are "
                              f"{list(allowed)}")

    return check


def required(instance, attribute, value):
    """A field that must be given a value (None is not allowed)."""
    if value is None:
        raise OptionError(f"{_where(instance, attribute)} = None: a value is required")


def boolean(instance, attribute, value):
    if not isinstance(value, bool):
        raise OptionError(f"{_where(instance, attribute)} = {value!r}: expected True or False")


def seed_int(instance, attribute, value):
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
        raise OptionError(f"{_where(instance, attribute)} = {value!r}: must be an integer in [0, 2**63)")


def _vec3(value, instance=None, field=None):
    where = f"{_where(instance, field)} = " if field is not None else ""
    try:
        out = tuple(float(x) for x in value)
    except (TypeError, ValueError, OverflowError):
        raise OptionError(f"{where}{value!r}: expected 3 numbers") from None
    if isinstance(value, (str, bytes)) or len(out) != 3 or not all(math.isfinite(x) for x in out):
        raise OptionError(f"{where}{value!r}: expected 3 finite numbers")
    return out


# converter to a tuple of 3 finite floats; its errors name the class, the field and the value
vec3 = attrs.Converter(_vec3, takes_self=True, takes_field=True)


def _planes(value, instance, field):
    """((point), (normal)) pairs -> a tuple of (point, unit normal), each 3 floats."""
    where = _where(instance, field)
    if value is None:
        return ()
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
        raise OptionError(f"{where} = {value!r}: expected a list of (point (x, y, z), normal (x, y, z)) pairs")
    out = []
    for k, item in enumerate(value):
        try:
            p, n = item
        except (TypeError, ValueError):
            raise OptionError(f"{where}[{k}] = {item!r}: expected (point (x, y, z), normal (x, y, z))") from None
        p, n = _vec3(p, instance, field), _vec3(n, instance, field)
        ln = math.sqrt(sum(c * c for c in n))
        if not math.isfinite(ln) or ln < 1e-12:
            raise OptionError(f"{where}[{k}] normal {n}: must be a non-zero finite vector")
        out.append((p, tuple(c / ln for c in n)))
    return tuple(out)


# converter of static planes ((point, normal), ...) to (point3, unit normal3) tuples; errors name the
# class, the field, the item and the value (MPM, PBD and FEM options share it)
planes = attrs.Converter(_planes, takes_self=True, takes_field=True)


def precision_str(value):
    """Precision is the string "32" or "64" everywhere; 32/64 ints are accepted and converted."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    return value


def _default_threads():
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


@attrs.frozen(kw_only=True)
class SimOptions(Options):
    """Scene-wide simulation options.

    dt: step length (s); substeps: N substeps of h = dt/N each; gravity (m/s², Z-up);
    precision: "32" or "64"; device: "cpu" or "cuda" (or "cuda:N");
    graph_capture: capture the whole step as a Warp graph on first step and replay it;
    cpu_threads: on CPU, the threads a scene may use (None: the cores available): envs are split
    into min(cpu_threads, n_envs) partitions stepped by worker threads, and threads left over work
    within a partition (solvers that split a stage's elements across workers, docs/architecture.md);
    results are bit-identical for any count;
    cpu_partitions_per_thread: with at least as many envs as threads, the env partitions per thread
    (None: up to 8 while each keeps 64 envs or more, else 1): the threads take the partitions in turn
    during a step, so a thread slowed by another process takes fewer envs (results unchanged);
    nan_policy: "reset" (a non-finite env is reset and flagged, others untouched) or "raise".
    """

    dt: float = attrs.field(default=0.01, validator=[required, positive])
    substeps: int = attrs.field(default=1, validator=[required, positive_int])
    gravity: tuple = attrs.field(default=(0.0, 0.0, -9.81), converter=vec3)
    precision: str = attrs.field(default="32", converter=precision_str, validator=one_of("32", "64"))
    device: str = attrs.field(default="cpu")
    graph_capture: bool = attrs.field(default=True, validator=boolean)
    cpu_threads: int | None = attrs.field(default=None, validator=positive_int)
    cpu_partitions_per_thread: int | None = attrs.field(default=None, validator=positive_int)
    nan_policy: str = attrs.field(default="reset", validator=one_of("reset", "raise"))
    seed: int = attrs.field(default=0, validator=seed_int)

    @device.validator
    def _check_device(self, attribute, value):
        if not isinstance(value, str) or not (value == "cpu" or value == "cuda"
                                              or (value.startswith("cuda:") and value[5:].isdigit())):
            raise OptionError(f"SimOptions.device = {value!r}: allowed values are 'cpu', 'cuda', "
                              f"'cuda:N'")

    @property
    def h(self) -> float:
        return self.dt / self.substeps

    @property
    def device_kind(self) -> str:
        return "cuda" if self.device.startswith("cuda") else "cpu"

    def threads_for(self, n_envs: int) -> int:
        """Worker threads of a scene of n_envs envs (1 off the CPU); split_envs spreads them over
        the env partitions."""
        if self.device_kind != "cpu":
            return 1
        wanted = self.cpu_threads if self.cpu_threads is not None else _default_threads()
        return max(1, wanted)


@attrs.frozen(kw_only=True)
class NoOptions(Options):
    """Options of a plugin that has none."""
