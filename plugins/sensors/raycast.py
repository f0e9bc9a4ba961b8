"""Ray-casting sensors: ``raycaster`` (lidar, grid and custom patterns), ``rangefinder`` (MuJoCo's),
``depth_camera`` and ``camera`` (RGB, depth, segmentation, normals) — docs/cameras.md.

They are built from the ray tracer of core (``polyphys.raycast``), which reads the solvers through
core's view protocols (``RenderView``, ``SurfaceMeshView``, ``ParticleStateView``/``ParticleView``).
Every ray sensor of a scene is cast in one launch per env partition inside the captured step
(``_RayGroup``: all envs, all sensors, all rays), after the other sensors (it brings rigid link
frames to the end state of the step). Readings describe the state after the step (``stage = "end"``,
tagged ``query_at``) and take the measurement models, reset and checkpoint rules of every sensor.
"""

from __future__ import annotations

import math

import numpy as np
from polyphys.errors import OptionError
from polyphys.interfaces import Sensor
from polyphys.raycast.camera import (
    SEGMENTATION,
    WIDTH,
    RaySpec,
    Renderer,
    camera_outputs,
    image_columns,
    intrinsics,
    make_pose,
    make_range,
    make_shading,
    pinhole_dirs,
)
from polyphys.raycast.scene import RaySet, ray_scene, rot_to_quat
from polyphys.sensors import SensorGroup

LIDAR_FRAME = "x forward, y left, z up"


class _RayGroup(SensorGroup):
    """Every ray sensor of the scene: one RaySet, one launch per partition (after the scene's
    geometry is brought to the partition's current state)."""

    order = 100          # last: ray casting refreshes rigid link frames to the end state

    def __init__(self, sensors, layout):
        super().__init__(sensors, layout)
        scene = sensors[0].scene
        self.rs = ray_scene(scene)
        specs, cols = [], []
        for s in sensors:
            specs.append(s.spec)
            off, c = {}, s.column
            for name, width, _ in s.fields:
                off[name] = c
                c += width
            cols.append(off)
        self.rset = RaySet(self.rs, specs, cols)
        self.rs.build_structures()          # now, not inside the captured step
        self.hub = sensors[0]._hub

    def evaluate(self, part, truth):
        self.rs.prepare(part)
        self.rset.poses(part)
        self.rset.cast(part, truth, tick=self.hub.ticks(part))


class RaySensor(Sensor):
    """Common part: the pose (fixed in the world, or on a link/site of an entity), range, no-hit value,
    outputs; the RaySpec the ray tracer casts; grouping of all ray sensors into one launch."""

    stage = "end"
    OUTPUTS: dict = {}                  # output -> width per ray
    DEFAULT: tuple = ()
    NO_HIT = math.inf

    def __init__(self, scene, spec, entity=None, *, link=None, site=None, offset_pos=None, offset_quat=None,
                 pos=None, quat=None, lookat=None, up=(0.0, 0.0, 1.0), min_range=0.0, max_range=100.0, no_hit=None,
                 exclude_parent=False, outputs=None, in_step=True, **common):
        super().__init__(scene, spec, entity, **common)
        owner = f"sensor {self.full_name!r} ({self.kind})"
        self.owner = owner
        self.outputs = camera_outputs(owner, outputs, self.DEFAULT, tuple(self.OUTPUTS))
        if not isinstance(in_step, bool):
            raise OptionError(f"{owner}: in_step = {in_step!r}: expected true or false")
        if not isinstance(exclude_parent, bool):
            raise OptionError(f"{owner}: exclude_parent = {exclude_parent!r}: expected true or false")
        self.in_step = in_step
        self.min_range, self.max_range = make_range(owner, min_range, max_range)
        nh = self.NO_HIT if no_hit is None else no_hit
        try:
            self.no_hit = float(nh)
        except (TypeError, ValueError):
            raise OptionError(f"{owner}: no_hit = {no_hit!r}: expected a number (inf allowed)") from None
        if math.isnan(self.no_hit):
            raise OptionError(f"{owner}: no_hit = nan: NaN means 'no reading yet'; give a number or inf")
        self._pos, self._rot = make_pose(owner, entity, link, site, pos, quat, lookat, up, offset_pos, offset_quat)
        self._where = dict(entity=entity, link=link, site=site)
        self.exclude_parent = exclude_parent

    # -- what subclasses give ----------------------------------------------------------------------
    def rays(self) -> tuple[np.ndarray, np.ndarray | None, tuple]:
        """(directions (n, 3), origins (n, 3) or None, per-env shape of one output channel)."""
        raise NotImplementedError

    def shading(self):
        return make_shading(self.owner)

    def segmentation_mode(self) -> str:
        return "entity"

    def spin_rate(self) -> float:
        return 0.0

    # -- build --------------------------------------------------------------------------------------
    def make_spec(self) -> RaySpec:
        dirs, origins, _ = self.rays()
        return RaySpec(owner=self.owner, dirs=dirs, origins=origins, pos=self._pos, rot=self._rot,
                       min_range=self.min_range, max_range=self.max_range, no_hit=self.no_hit,
                       exclude_parent=self.exclude_parent, segmentation=self.segmentation_mode(),
                       shading=self.shading(), **self._where)

    def build(self, layout):
        super().build(layout)
        self.spec = self.make_spec()
        self.spec.spin = 2.0 * math.pi * self.spin_rate() * layout.dt      # rad per step (sensor tick)
        self.spec.mount_in(self.scene)
        _, _, shape = self.rays()
        n = int(np.prod(shape))
        self.fields = [(o, WIDTH[o] * n, "real") for o in self.outputs]
        self.field_shapes = {o: tuple(shape) + ((WIDTH[o],) if WIDTH[o] > 1 else ()) for o in self.outputs}
        self._renderer = None

    def kernel_modules(self, layout):
        """The ray tracer's kernels (polyphys.kernels.raycast) when the sensor is cast inside the step;
        none for one used on demand (``in_step = False``, e.g. an MJCF camera): its first picture
        compiles them, and a scene that takes none never does."""
        from polyphys.kernels import raycast

        return [raycast] if self.in_step else []

    def group_key(self):
        return ("raycast",)

    @classmethod
    def make_group(cls, sensors, layout):
        return _RayGroup(sensors, layout)

    def _check_measurement(self, noise, bias, drift, resolution, lo, hi) -> None:
        super()._check_measurement(noise, bias, drift, resolution, lo, hi)
        sl = self.field_slices().get("segmentation")
        if sl is None:
            return
        for key, arr in (("noise", noise), ("bias", bias), ("drift", drift), ("resolution", resolution)):
            if arr is not None and np.any(np.asarray(arr)[sl] != 0):
                raise OptionError(f"{self.owner}: {key} on output 'segmentation': ids take no measurement model "
                                  f"(delay only)")
        if lo is not None and (np.isfinite(np.asarray(lo)[sl]).any() or np.isfinite(np.asarray(hi)[sl]).any()):
            raise OptionError(f"{self.owner}: limits on output 'segmentation': ids take no measurement model "
                              f"(delay only)")

    # -- pose (the viewer draws a camera's frustum from it) ----------------------------------------
    def _require_built(self, what):
        if getattr(self, "spec", None) is None or self.spec.mount is None:
            from polyphys.errors import SceneStateError

            raise SceneStateError(f"sensor {self.full_name!r}: {what} before scene.build()")

    def get_pose(self, envs_idx=None):
        """World pose of the sensor frame now: (pos (n, 3), quat (n, 4) w x y z); no env axis for an
        unbatched scene. Cameras: OpenCV's frame (x right, y down, z forward)."""
        self._require_built("get_pose()")
        if self._renderer is None:
            self._renderer = _PoseOnly(self.scene, self.spec)
        return self._renderer.get_pose(envs_idx)

    def segmentation_names(self) -> dict:
        """{id: name} of this sensor's segmentation ids (entity names, "entity/link", "entity/geom");
        −1: nothing hit."""
        self._require_built("segmentation_names()")
        return ray_scene(self.scene).segmentation_names(self.segmentation_mode())


class _PoseOnly:
    def __init__(self, scene, spec):
        self.scene = scene
        self.rset = RaySet(ray_scene(scene), [spec], [{}])

    def get_pose(self, envs_idx=None):
        envs = self.scene._envs_idx(envs_idx)
        p, R = self.rset.world_poses()
        pos = p[envs, 0].astype(float)
        quat = np.stack([rot_to_quat(R[e, 0]) for e in envs])
        return (pos, quat) if self.scene.batched else (pos[0], quat[0])


# -- raycaster -------------------------------------------------------------------------------------------
def _int(owner, key, v, lo=1):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
        raise OptionError(f"{owner}: {key} = {v!r}: must be an integer >= {lo}")
    return int(v)


def _pos(owner, key, v):
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise OptionError(f"{owner}: {key} = {v!r}: expected a number") from None
    if not (math.isfinite(x) and x > 0):
        raise OptionError(f"{owner}: {key} = {v!r}: must be > 0")
    return x


def make_pattern(owner: str, pattern) -> tuple[np.ndarray, np.ndarray | None, tuple]:
    """Rays of a raycaster pattern in the sensor frame (x forward, y left, z up): (dirs, origins, shape).

    ``{"type": "lidar", "h_fov": 360, "h_rays": 360, "v_fov": [-15, 15], "v_rays": 16}`` — elevation rows
    from the top (v_fov[1]) down, azimuth columns from −h_fov/2 (a full 360° circle has no duplicate
    ray at +180°); ``{"type": "grid", "size": [sx, sy], "spacing": s, "direction": [0, 0, -1]}`` —
    parallel rays from a grid of origins on the sensor's xy plane (rows along y from +sy/2, columns
    along x from −sx/2); ``{"type": "custom", "directions": [[...], ...], "origins": [[...], ...]}``."""
    if isinstance(pattern, str):
        pattern = {"type": pattern}
    if not isinstance(pattern, dict) or "type" not in pattern:
        raise OptionError(f"{owner}: pattern = {pattern!r}: expected a table with type = 'lidar', 'grid' or 'custom'")
    kind = pattern["type"]
    allowed = {"lidar": ("type", "h_fov", "h_rays", "v_fov", "v_rays"),
               "grid": ("type", "size", "spacing", "direction"),
               "custom": ("type", "directions", "origins")}
    if kind not in allowed:
        raise OptionError(f"{owner}: pattern.type = {kind!r}: allowed {list(allowed)}")
    for k in pattern:
        if k not in allowed[kind]:
            raise OptionError(f"{owner}: pattern.{k} = {pattern[k]!r}: unknown key for a {kind} pattern; allowed "
                              f"{list(allowed[kind])}")
    if kind == "lidar":
        hf = _pos(owner, "pattern.h_fov", pattern.get("h_fov", 360.0))
        if hf > 360.0:
            raise OptionError(f"{owner}: pattern.h_fov = {hf}: at most 360 degrees")
        nh = _int(owner, "pattern.h_rays", pattern.get("h_rays", 360))
        vf = pattern.get("v_fov", (-15.0, 15.0))
        try:
            vlo, vhi = (float(x) for x in vf)
        except (TypeError, ValueError):
            raise OptionError(f"{owner}: pattern.v_fov = {vf!r}: expected [lowest, highest] elevation in degrees") \
                from None
        if not (-90.0 <= vlo <= vhi <= 90.0):
            raise OptionError(f"{owner}: pattern.v_fov = {vf!r}: expected -90 <= lowest <= highest <= 90 degrees")
        nv = _int(owner, "pattern.v_rays", pattern.get("v_rays", 16))
        if hf >= 360.0:
            az = -180.0 + np.arange(nh) * 360.0 / nh
        else:
            az = np.array([0.0]) if nh == 1 else -hf / 2 + np.arange(nh) * hf / (nh - 1)
        el = np.array([(vlo + vhi) / 2]) if nv == 1 else vhi - np.arange(nv) * (vhi - vlo) / (nv - 1)
        A, E = np.meshgrid(np.radians(az), np.radians(el))
        d = np.stack([np.cos(E) * np.cos(A), np.cos(E) * np.sin(A), np.sin(E)], -1).reshape(-1, 3)
        return d, None, (nv, nh)
    if kind == "grid":
        size = pattern.get("size", (1.0, 1.0))
        try:
            sx, sy = (float(x) for x in size)
        except (TypeError, ValueError):
            raise OptionError(f"{owner}: pattern.size = {size!r}: expected [sx, sy] in m") from None
        if not (sx >= 0 and sy >= 0 and math.isfinite(sx) and math.isfinite(sy)):
            raise OptionError(f"{owner}: pattern.size = {size!r}: expected [sx, sy] >= 0 in m")
        sp = _pos(owner, "pattern.spacing", pattern.get("spacing", 0.1))
        nx, ny = int(math.floor(sx / sp + 1e-9)) + 1, int(math.floor(sy / sp + 1e-9)) + 1
        if nx * ny > 16_777_216:
            raise OptionError(f"{owner}: pattern size {size!r} with spacing {sp}: {nx * ny} rays; at most 16777216")
        xs = -(nx - 1) * sp / 2 + np.arange(nx) * sp
        ys = (ny - 1) * sp / 2 - np.arange(ny) * sp
        X, Y = np.meshgrid(xs, ys)
        o = np.stack([X, Y, np.zeros_like(X)], -1).reshape(-1, 3)
        dvec = np.asarray(pattern.get("direction", (0.0, 0.0, -1.0)), float).reshape(-1)
        if dvec.shape != (3,) or not np.isfinite(dvec).all() or np.linalg.norm(dvec) < 1e-9:
            raise OptionError(f"{owner}: pattern.direction = {pattern.get('direction')!r}: a non-zero vector (x, y, z)")
        return np.tile(dvec / np.linalg.norm(dvec), (len(o), 1)), o, (ny, nx)
    dirs = pattern.get("directions")
    try:
        d = np.asarray(dirs, float).reshape(-1, 3)
    except (TypeError, ValueError):
        raise OptionError(f"{owner}: pattern.directions = {dirs!r}: expected a list of (x, y, z) directions") from None
    if len(d) == 0 or not np.isfinite(d).all() or (np.linalg.norm(d, axis=1) < 1e-9).any():
        raise OptionError(f"{owner}: pattern.directions: expected at least one finite, non-zero (x, y, z) direction")
    o = pattern.get("origins")
    if o is not None:
        try:
            o = np.asarray(o, float).reshape(-1, 3)
        except (TypeError, ValueError):
            raise OptionError(f"{owner}: pattern.origins = {o!r}: expected a list of (x, y, z) points") from None
        if o.shape != d.shape or not np.isfinite(o).all():
            raise OptionError(f"{owner}: pattern.origins: expected one finite (x, y, z) point per direction "
                              f"({len(d)}), got shape {o.shape}")
    return d / np.linalg.norm(d, axis=1, keepdims=True), o, (len(d),)


class Raycaster(RaySensor):
    """Rays of a pattern from a sensor frame (``LIDAR_FRAME``): ``distance`` along each ray and the
    world hit ``points``; a ray that hits nothing within [min_range, max_range] reads ``no_hit``
    (default inf) and NaN points. ``spin`` (revolutions per second) turns the pattern about the
    sensor's z axis by 2π·spin·dt per step (a spinning lidar sweeping its sector)."""

    OUTPUTS = {"distance": 1, "points": 3}
    DEFAULT = ("distance",)

    def __init__(self, scene, spec, entity=None, *, pattern="lidar", spin=0.0, **kw):
        super().__init__(scene, spec, entity, **kw)
        self.pattern = make_pattern(self.owner, pattern)
        try:
            self.spin = float(spin)
        except (TypeError, ValueError):
            raise OptionError(f"{self.owner}: spin = {spin!r}: expected a number (revolutions per second)") from None
        if not math.isfinite(self.spin):
            raise OptionError(f"{self.owner}: spin = {spin!r}: must be finite")

    def rays(self):
        return self.pattern

    def spin_rate(self):
        return self.spin


class Rangefinder(RaySensor):
    """MuJoCo's rangefinder: the distance along the +z axis of a site (or link frame) to the nearest
    surface, ignoring the geoms of the link it sits on; −1 when nothing is hit (MuJoCo's value)."""

    OUTPUTS = {"distance": 1}
    DEFAULT = ("distance",)
    NO_HIT = -1.0

    def __init__(self, scene, spec, entity=None, *, max_range=math.inf, exclude_parent=True, **kw):
        super().__init__(scene, spec, entity, max_range=max_range, exclude_parent=exclude_parent, **kw)

    def rays(self):
        return np.array([[0.0, 0.0, 1.0]]), None, (1,)


class Camera(RaySensor):
    """A pinhole camera (OpenCV frame: x right, y down, z forward) with ``resolution`` = (width,
    height) and ``fov`` (vertical, degrees) or ``K``: ``rgb`` (H, W, 3) in [0, 1], ``depth`` (H, W)
    along the optical axis, ``distance`` along each pixel's ray, ``segmentation`` (ids of the
    ``segmentation`` mode: entity uid, scene link id or geom id; −1 nothing; ``segmentation_names()``
    names them), ``normals`` (H, W, 3; world), ``points`` (H, W, 3; world). ``depth_camera`` is the
    same sensor with ``depth`` as its default output. ``in_step = False``: not evaluated inside the
    step (no readings), rendered on demand by ``render()`` (MJCF cameras import so)."""

    OUTPUTS = WIDTH
    DEFAULT = ("rgb",)
    trajectory = False

    def __init__(self, scene, spec, entity=None, *, resolution=(128, 128), fov=None, K=None, segmentation="entity",
                 ambient=None, lights=None, shadows=True, background=None, particle_color="material",
                 color_range=None, near=None, far=None, **kw):
        if near is not None:
            kw["min_range"] = near
        if far is not None:
            kw["max_range"] = far
        super().__init__(scene, spec, entity, **kw)
        self.width, self.height, self.K, self.fov_y = intrinsics(self.owner, resolution, fov, K)
        if segmentation not in SEGMENTATION:
            raise OptionError(f"{self.owner}: segmentation = {segmentation!r}: allowed {list(SEGMENTATION)}")
        self.segmentation = segmentation
        self._shading = make_shading(self.owner, ambient, lights, shadows, background, particle_color, color_range)

    @property
    def resolution(self) -> tuple:
        return (self.width, self.height)

    def rays(self):
        return pinhole_dirs(self.width, self.height, self.K), None, (self.height, self.width)

    def shading(self):
        return self._shading

    def segmentation_mode(self):
        return self.segmentation

    def render(self, envs_idx=None, outputs=None, color_range=None) -> dict:
        """Render the current state now (outside the step): {output: (n, H, W[, 3])} (no env axis for
        an unbatched scene); ``outputs`` default: the sensor's."""
        self._require_built("render()")
        outs = self.outputs if outputs is None else camera_outputs(self.owner, outputs, self.outputs, tuple(WIDTH))
        key = ("render", outs)
        if self._renderer is None or getattr(self._renderer, "key", None) != key:
            self._renderer = Renderer(self.scene, self.spec, outs, self.width, self.height)
            self._renderer.key = key
        return self._renderer.render(envs_idx, color_range)

    def read_image(self, output=None, envs_idx=None, ground_truth=False):
        """One output of the last step's reading as images, (n, H, W[, 3])."""
        out = output or self.outputs[0]
        r = self.read_ground_truth(envs_idx) if ground_truth else self.read(envs_idx)
        if out not in r.fields:
            raise OptionError(f"{self.owner}: output {out!r} is not among its outputs {list(self.outputs)}")
        return r[out]


class DepthCamera(Camera):
    DEFAULT = ("depth",)


__all__ = ["Camera", "DepthCamera", "Rangefinder", "Raycaster", "image_columns", "make_pattern", "LIDAR_FRAME"]
