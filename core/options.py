"""Option classes (attrs, validated at construction) and the validators plugins reuse.

Every validator raises OptionError naming the class, the field, the value and what is allowed.
"""

from __future__ import annotations

import math
import os

import attrs

from .errors import OptionError


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
class SimOptions:
    """Scene-wide simulation options.

    dt: step length (s); substeps: N substeps of h = dt/N each; gravity (m/s², Z-up);
    precision: "32" or "64"; device: "cpu" or "cuda" (or "cuda:N");
    graph_capture: capture the whole step as a Warp graph on first step and replay it;
    cpu_threads: on CPU, envs are split into this many partitions stepped by worker threads
    (None: the cores available, capped at n_envs); results are bit-identical for any count;
    nan_policy: "reset" (a non-finite env is reset and flagged, others untouched) or "raise".
    """

    dt: float = attrs.field(default=0.01, validator=[required, positive])
    substeps: int = attrs.field(default=1, validator=[required, positive_int])
    gravity: tuple = attrs.field(default=(0.0, 0.0, -9.81), converter=vec3)
    precision: str = attrs.field(default="32", converter=precision_str, validator=one_of("32", "64"))
    device: str = attrs.field(default="cpu")
    graph_capture: bool = attrs.field(default=True, validator=boolean)
    cpu_threads: int | None = attrs.field(default=None, validator=positive_int)
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
        if self.device_kind != "cpu":
            return 1
        wanted = self.cpu_threads if self.cpu_threads is not None else _default_threads()
        return max(1, min(wanted, n_envs))


@attrs.frozen(kw_only=True)
class NoOptions:
    """Options of a plugin that has none."""
