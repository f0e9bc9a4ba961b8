"""Sensor readings, measurement models and the scene's sensor state (docs/sensors.md).

Every sensor of a scene writes its ground truth into its columns of one batch-first (n_envs, D)
array inside the captured step (sensors of one kind in one launch: ``Sensor.make_group``); one
measurement launch then adds bias, random-walk drift and Gaussian noise, quantizes, saturates and
delays every column of every env (``polyphys.kernels.sensors``). The delay buffers, drift values and
random-number counters are scene state: per-env reset clears exactly the named envs', checkpoints
and ``scene.get_state()`` carry them, so a restored run continues with bit-identical readings.

A plugin's sensor only computes ground truth; the measurement models, state and time tags come
from here, so a third-party sensor has them too.
"""

from __future__ import annotations

import math
import zlib
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from . import arrays
from .errors import CheckpointError, OptionError

if TYPE_CHECKING:
    from .interfaces import Sensor
    from .layout import Layout, Partition

DATATYPES = ("real", "positive", "quat", "axis", "bool")
_COL = {"real": 0, "positive": 1, "quat": 2, "axis": 3, "bool": 4}
_TAIL = 5
MEASUREMENT_KEYS = ("noise", "bias", "drift", "resolution", "limits", "delay", "delay_buffer", "seed")


def _components(owner: str, field: str, value, nonneg: bool):
    """A scalar, a sequence or a {output: value} dict, finite (and >= 0 when ``nonneg``)."""
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise OptionError(f"sensor {owner}: {field} = {value!r}: dict keys must be output names")
            _components(owner, f"{field}[{k!r}]", v, nonneg)
        return dict(value)
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise OptionError(f"sensor {owner}: {field} = {value!r}: must be a number, a sequence of numbers "
                          f"(one per component) or a dict {{output: value}}") from None
    if arr.ndim > 1:
        raise OptionError(f"sensor {owner}: {field} = {value!r}: must be a number or a 1D sequence")
    if not np.all(np.isfinite(arr)):
        raise OptionError(f"sensor {owner}: {field} = {value!r}: must be finite")
    if nonneg and (arr < 0).any():
        raise OptionError(f"sensor {owner}: {field} = {value!r}: must be >= 0 (a standard deviation or a "
                          f"step size; 0 turns it off)")
    return float(arr) if arr.ndim == 0 else tuple(float(x) for x in arr)


@attrs.frozen(kw_only=True)
class MeasurementModel:
    """What a sensor adds to the ground truth, per component (docs/sensors.md).

    noise: standard deviation of zero-mean Gaussian noise (the reading's unit; for quaternion and
        unit-axis outputs an angle in rad: the value is rotated about a random axis, as MuJoCo does).
    bias: a constant offset. drift: a random walk, standard deviation per √s (unit·s^-1/2): each step
        adds N(0, drift²·dt). resolution: quantization step (0: none). limits: (lo, hi) saturation.
    delay: the reading is the measurement of ``delay`` steps ago; ``delay_buffer`` (default: delay)
        is the largest delay ``set_delay`` may set later. seed: the noise streams' seed (per sensor;
        per env and per component streams derive from it).
    Each of noise, bias, drift, resolution takes a number, one value per component, or a dict
    {output name: value}; limits takes (lo, hi) with lo and hi in the same forms.
    """

    noise: Any = 0.0
    bias: Any = 0.0
    drift: Any = 0.0
    resolution: Any = 0.0
    limits: Any = None
    delay: int = 0
    delay_buffer: int = 0
    seed: int = 0

    @classmethod
    def create(cls, owner: str, noise=0.0, bias=0.0, drift=0.0, resolution=0.0, limits=None, delay=0,
               delay_buffer=None, seed=0) -> MeasurementModel:
        for key, v in (("delay", delay), ("delay_buffer", delay_buffer), ("seed", seed)):
            if v is None and key == "delay_buffer":
                continue
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise OptionError(f"sensor {owner}: {key} = {v!r}: must be an integer >= 0"
                                  + (" (steps)" if key != "seed" else ""))
        buf = int(delay) if delay_buffer is None else int(delay_buffer)
        if delay > buf:
            raise OptionError(f"sensor {owner}: delay = {delay!r}: longer than the delay buffer "
                              f"(delay_buffer = {buf}); allowed 0..{buf} steps (raise delay_buffer)")
        if limits is not None:
            if not isinstance(limits, (tuple, list)) or len(limits) != 2:
                raise OptionError(f"sensor {owner}: limits = {limits!r}: must be (lo, hi)")
            lo = _components(owner, "limits[0]", limits[0], False) if limits[0] is not None else -math.inf
            hi = _components(owner, "limits[1]", limits[1], False) if limits[1] is not None else math.inf
            limits = (lo, hi)
        return cls(noise=_components(owner, "noise", noise, True), bias=_components(owner, "bias", bias, False),
                   drift=_components(owner, "drift", drift, True),
                   resolution=_components(owner, "resolution", resolution, True), limits=limits,
                   delay=int(delay), delay_buffer=buf, seed=int(seed))


def expand(sensor: Sensor, field: str, value, default: float) -> np.ndarray:
    """A measurement value (number, per-component sequence or {output: value}) as (dim,)."""
    dim = sensor.dim
    out = np.full(dim, float(default))
    if value is None:
        return out
    if isinstance(value, dict):
        offsets = sensor.field_slices()
        for k, v in value.items():
            if k not in offsets:
                raise OptionError(f"sensor {sensor.full_name!r}: {field} names output {k!r}; its outputs: "
                                  f"{list(offsets)}")
            sl = offsets[k]
            arr = np.asarray(v, float)
            if arr.ndim and arr.shape != (sl.stop - sl.start,):
                raise OptionError(f"sensor {sensor.full_name!r}: {field}[{k!r}] = {v!r}: expected a number "
                                  f"or {sl.stop - sl.start} values")
            out[sl] = arr
        return out
    arr = np.asarray(value, float)
    if arr.ndim == 0:
        out[:] = arr
        return out
    if arr.shape != (dim,):
        raise OptionError(f"sensor {sensor.full_name!r}: {field} = {value!r}: expected a number, {dim} values "
                          f"(one per component of {[f[0] for f in sensor.fields]}) or a dict {{output: value}}")
    return arr.copy()


@attrs.frozen
class Reading:
    """One sensor's reading for the envs asked (batch axis first; none for an unbatched scene).

    value: (n, dim) — ``fields`` gives each output's part (``reading["acc"]``). step: the env step
    count now; reading_step: the step whose state the value describes (step − the delay applied);
    solved_at: the time of the state the value was computed at when that is a step's solve (the
    start of the step's last substep, docs/semantics.md §F1), else NaN; query_at: the time of the state when the
    value is a query of the state after a step (particle sensors), else NaN. Before an env's first
    step since build or reset there is no reading: value NaN, times NaN, reading_step −1.
    """

    value: Any
    fields: dict
    step: Any
    reading_step: Any
    solved_at: Any
    query_at: Any
    ground_truth: bool = False

    def __getitem__(self, key):
        return self.fields[key]


class SensorGroup:
    """Sensors evaluated together in the captured step. The default calls each member's
    ``evaluate``; a plugin returns its own group from ``Sensor.make_group`` to evaluate all sensors
    of a kind in one launch. Groups run in ascending ``order`` (then in the order their first
    sensor was added): a group that changes what others read (ray casting refreshes rigid link
    frames to the end state) runs last."""

    order: int = 0

    def __init__(self, sensors: list, layout: Layout):
        self.sensors = sensors
        self.layout = layout

    def evaluate(self, part: Partition, truth) -> None:
        """Write the ground truth of every member for the envs of ``part``: ``truth`` is the
        partition's rows (n_part, D); member s owns columns [s.column, s.column + s.dim)."""
        for s in self.sensors:
            s.evaluate(part, truth)


class SensorHub:
    """The scene's sensors: columns, groups, measurement arrays and sensor state."""

    def __init__(self, scene, sensors: list, layout: Layout):
        import warp as wp

        self.scene, self.layout = scene, layout
        for s in sensors:
            s.build(layout)
            if s.in_step:
                s._check_fields()
        self.sensors = sensors = [s for s in sensors if s.in_step]    # the others are used on demand
        col = 0
        for i, s in enumerate(sensors):
            s.index, s.column, s._hub = i, col, self
            col += s.dim
        self.dim = D = col
        for s in sensors:
            s.bind()
        groups: dict = {}
        for s in sensors:
            groups.setdefault(s.group_key(), []).append(s)
        self.groups = sorted((type(m[0]).make_group(m, layout) for m in groups.values()),
                             key=lambda g: getattr(g, "order", 0))
        n, dev, npf = layout.n_envs, layout.device, layout.np_float
        s_t = layout.float_type
        ctype, csens, cseed, cdrift, cres, clo, chi = [], [], [], [], [], [], []
        noise, bias = np.zeros(D), np.zeros(D)
        for s in sensors:
            m = s.measurement
            types = []
            for _, width, dtype in s.fields:
                types += [_COL[dtype]] + [_TAIL if dtype in ("quat", "axis") else _COL[dtype]] * (width - 1)
            ctype += types
            csens += [s.index] * s.dim
            ss = np.random.SeedSequence([m.seed, zlib.crc32(s.full_name.encode())])
            cseed += [int(x) for x in ss.generate_state(s.dim, np.uint32).view(np.int32)]
            sl = slice(s.column, s.column + s.dim)
            noise[sl] = expand(s, "noise", m.noise, 0.0)
            bias[sl] = expand(s, "bias", m.bias, 0.0)
            cdrift += list(expand(s, "drift", m.drift, 0.0))
            cres += list(expand(s, "resolution", m.resolution, 0.0))
            lo, hi = (None, None) if m.limits is None else m.limits
            lo_arr, hi_arr = expand(s, "limits[0]", lo, -math.inf), expand(s, "limits[1]", hi, math.inf)
            if (lo_arr > hi_arr).any():
                raise OptionError(f"sensor {s.full_name!r}: limits = {m.limits!r}: lo must be <= hi")
            clo += list(lo_arr)
            chi += list(hi_arr)
            s._check_measurement(noise[sl], bias[sl], np.asarray(cdrift[-s.dim:]), np.asarray(cres[-s.dim:]),
                                 lo_arr, hi_arr)
        self.buffer_len = L = max([s.measurement.delay_buffer for s in sensors] + [0]) + 1
        arr = lambda a, dt: wp.array(np.ascontiguousarray(a), dtype=dt, device=dev)  # noqa: E731
        self.col_type = arr(np.asarray(ctype, np.int32), wp.int32)
        self._plain_host = np.zeros(D, np.int32)
        self.col_plain = arr(self._plain_host, wp.int32)
        self.col_sensor = arr(np.asarray(csens, np.int32), wp.int32)
        self.col_seed = arr(np.asarray(cseed, np.int32), wp.int32)
        # the global index of this scene's env 0 (Scene.set_global_env_offset): read by the kernel from
        # the device, so setting it after a step was captured still takes effect
        self.env_base = wp.zeros(1, dtype=wp.int32, device=dev)
        self.col_drift = arr(np.asarray(cdrift, npf), s_t)
        self.col_resolution = arr(np.asarray(cres, npf), s_t)
        self.col_lo = arr(np.asarray(clo, npf), s_t)
        self.col_hi = arr(np.asarray(chi, npf), s_t)
        self.noise = arr(np.tile(noise.astype(npf), (n, 1)), s_t)
        self.bias = arr(np.tile(bias.astype(npf), (n, 1)), s_t)
        self.delay = arr(np.tile(np.asarray([s.measurement.delay for s in sensors], np.int32), (n, 1)), wp.int32)
        self.truth = wp.zeros((n, D), dtype=s_t, device=dev)
        self.measured = wp.zeros((n, D), dtype=s_t, device=dev)
        # state
        self.drift = wp.zeros((n, D), dtype=s_t, device=dev)
        self.buffer = wp.zeros((n, L, D), dtype=s_t, device=dev)
        self.head = wp.zeros(n, dtype=wp.int32, device=dev)
        self.count = wp.zeros(n, dtype=wp.int32, device=dev)
        self.tick = wp.zeros(n, dtype=wp.int32, device=dev)
        self._sqrt_dt = s_t(math.sqrt(layout.dt))
        self._parts: dict = {}
        for s in sensors:
            self._update_plain(s)

    def _update_plain(self, sensor: Sensor) -> None:
        """Mark the sensor's columns plain (the reading is the truth: no noise, bias, drift,
        quantization, saturation in any env, and no delay buffer) so the measurement copies them."""
        sl = slice(sensor.column, sensor.column + sensor.dim)
        plain = ((self.noise.numpy()[:, sl] == 0).all(axis=0) & (self.bias.numpy()[:, sl] == 0).all(axis=0)
                 & (self.col_drift.numpy()[sl] == 0) & (self.col_resolution.numpy()[sl] == 0)
                 & np.isinf(self.col_lo.numpy()[sl]) & np.isinf(self.col_hi.numpy()[sl])
                 & (sensor.measurement.delay_buffer == 0))
        self._plain_host[sl] = plain.astype(np.int32)
        self.col_plain.assign(self._plain_host)

    # -- inside the captured step --------------------------------------------------------------
    def _part(self, part: Partition):
        p = self._parts.get(part.index)
        if p is None:
            sl = slice(part.start, part.stop)
            p = self._parts[part.index] = {k: getattr(self, k)[sl] for k in (
                "truth", "measured", "noise", "bias", "delay", "drift", "buffer", "head", "count", "tick")}
        return p

    def ticks(self, part: Partition):
        """The partition's per-env count of measured steps (Warp int32 array, never rewound by a reset:
        the sensors' own clock, carried by checkpoints); during ``evaluate`` it counts the steps
        before this one."""
        return self._part(part)["tick"]

    def evaluate(self, part: Partition) -> None:
        """Ground truth of every group, then the measurement models, for the envs of ``part``."""
        import warp as wp

        from .kernels import sensors as K

        if not self.sensors:
            return
        p = self._part(part)
        for g in self.groups:
            g.evaluate(part, p["truth"])
        wp.launch(K.sensor_measure, dim=part.n_envs, device=self.layout.device, inputs=[
            part.start, self.env_base, self._sqrt_dt, self.col_type, self.col_plain, self.col_sensor, self.col_seed,
            self.col_drift, self.col_resolution, self.col_lo, self.col_hi, p["noise"], p["bias"], p["delay"], p["truth"],
            p["head"], p["count"], p["tick"], p["drift"], p["buffer"], p["measured"]])

    # -- readings (outside the step) -----------------------------------------------------------
    def read(self, sensor: Sensor, envs_idx=None, ground_truth: bool = False) -> Reading:
        return self.read_many([sensor], envs_idx, ground_truth)[0]

    def read_many(self, sensors: list, envs_idx=None, ground_truth: bool = False) -> list:
        """Readings of ``sensors`` from one host copy of the arrays."""
        scene = self.scene
        envs = scene._envs_idx(envs_idx)
        src = (self.truth if ground_truth else self.measured).numpy()[envs]
        count = self.count.numpy()[envs].astype(np.int64)
        delays = self.delay.numpy()[envs].astype(np.int64)
        step = scene._step_count[envs].astype(np.int64)
        none = count == 0
        nan = np.full(len(envs), np.nan)
        out = []
        for sensor in sensors:
            c0 = sensor.column
            value = src[:, c0:c0 + sensor.dim].astype(float)
            k = np.zeros(len(envs), np.int64) if ground_truth else np.minimum(delays[:, sensor.index],
                                                                                np.maximum(count - 1, 0))
            rstep = np.where(none, -1, step - k)
            t = np.where(none, np.nan, rstep * self.layout.dt - sensor.time_lag)
            solved_at, query_at = (t, nan.copy()) if sensor.stage == "solve" else (nan.copy(), t)
            value[none] = np.nan
            if all(dt == "bool" for _, _, dt in sensor.fields):
                value = np.where(np.isnan(value), 0.0, value) > 0.5
            shapes = sensor.field_shapes
            fields = {name: value[:, sl].reshape((len(envs),) + tuple(shapes.get(name, (sl.stop - sl.start,))))
                      for name, sl in sensor.field_slices().items()}
            st, rs = step.copy(), rstep
            if not scene.batched:
                value, fields = value[0], {k_: v[0] for k_, v in fields.items()}
                st, rs, solved_at, query_at = int(step[0]), int(rstep[0]), float(solved_at[0]), float(query_at[0])
            out.append(Reading(value=value, fields=fields, step=st, reading_step=rs, solved_at=solved_at,
                               query_at=query_at, ground_truth=ground_truth))
        return out

    # -- per-env measurement parameters (outside the step) --------------------------------------
    def set_param(self, sensor: Sensor, field: str, value, envs_idx=None) -> None:
        envs = self.scene._envs_idx(envs_idx)
        if field == "delay":
            v = np.asarray(value)
            if v.ndim > 1 or not np.issubdtype(v.dtype, np.integer) or (v.ndim == 1 and len(v) != len(envs)):
                raise OptionError(f"sensor {sensor.full_name!r}: set_delay({value!r}): expected an integer "
                                  f"number of steps, or one per env named ({len(envs)})")
            v = np.broadcast_to(v, (len(envs),))
            bad = v[(v < 0) | (v > sensor.measurement.delay_buffer)]
            if bad.size:
                raise OptionError(f"sensor {sensor.full_name!r}: delay = {int(bad[0])}: allowed 0.."
                                  f"{sensor.measurement.delay_buffer} steps (the delay_buffer given to "
                                  f"add_sensor)")
            arrays.write_env_rows(self.delay, envs, [sensor.index], v.reshape(-1, 1).astype(np.int32))
            return
        nonneg = field == "noise"
        _components(sensor.full_name, field, value, nonneg)
        sl = slice(sensor.column, sensor.column + sensor.dim)
        vals = expand(sensor, field, value, 0.0)
        if field == "noise":
            sensor._check_measurement(vals, np.zeros_like(vals), None, None, None, None)
        else:
            sensor._check_measurement(np.zeros_like(vals), vals, None, None, None, None)
        arrays.write_env_rows(getattr(self, field), envs, sl, np.tile(vals, (len(envs), 1)))
        self._update_plain(sensor)

    # -- state -----------------------------------------------------------------------------------
    def state_arrays(self) -> dict:
        """Everything a restored scene needs to read and continue exactly as the saved one: the last
        readings (truth and measured: what ``read()`` returns until the next step), delay buffers,
        drift, reading counts and the noise clock."""
        return {"truth": self.truth, "measured": self.measured, "drift": self.drift, "buffer": self.buffer,
                "head": self.head, "count": self.count, "tick": self.tick}

    def param_arrays(self) -> dict:
        return {"noise": self.noise, "bias": self.bias, "delay": self.delay}

    def reset(self, envs: np.ndarray) -> None:
        """Clear the named envs' delay buffers, drift and reading counts (their noise streams go on:
        the draw counter is not rewound, so an episode after a reset sees new noise)."""
        if not self.sensors:          # none evaluated in the step (cameras on demand): no rows to clear
            return
        import warp as wp

        from .kernels import sensors as K

        mask = arrays.env_mask_array(np.asarray(envs), self.layout.n_envs, self.layout.device)
        wp.launch(K.sensor_reset_rows, dim=self.layout.n_envs, inputs=[mask],
                  outputs=[self.head, self.count, self.drift, self.buffer], device=self.layout.device)

    def get_state(self) -> dict:
        return {k: a.numpy().copy() for k, a in self.state_arrays().items()}

    def set_state(self, state: dict, envs: np.ndarray) -> None:
        import warp as wp

        cur = self.state_arrays()
        missing = set(cur) - set(state)
        if missing:
            raise CheckpointError(f"sensor state lacks {sorted(missing)}")
        mask = arrays.env_mask_array(np.asarray(envs), self.layout.n_envs, self.layout.device)
        for k, dst in cur.items():
            src = np.asarray(state[k])
            if src.shape != tuple(dst.shape):
                raise CheckpointError(f"sensor state {k} has shape {src.shape}; this scene needs {tuple(dst.shape)}")
            arrays.copy_envs(dst, wp.array(src, dtype=dst.dtype, device=self.layout.device), mask)

    def dump(self) -> dict:
        out = {f"state/{k}": v for k, v in self.get_state().items()}
        out.update({f"param/{k}": a.numpy().copy() for k, a in self.param_arrays().items()})
        return out

    def load(self, data: dict) -> None:
        self.set_state({k[6:]: v for k, v in data.items() if k.startswith("state/")},
                       np.arange(self.layout.n_envs))
        for k, a in self.param_arrays().items():
            if f"param/{k}" in data:
                a.assign(np.asarray(data[f"param/{k}"]))
        for s in self.sensors:
            self._update_plain(s)

    def describe(self) -> list:
        """(full name, kind, outputs) of every sensor: part of the scene's layout digest."""
        return [[s.full_name, s.kind, [list(f) for f in s.fields], s.measurement.delay_buffer] for s in self.sensors]
