"""Cameras and ray specifications (docs/cameras.md): pinhole intrinsics from a field of view or a K
matrix, poses (position with a quaternion or a look-at point), lights and shading, the validated
:class:`RaySpec` every ray sensor is made of, and :class:`Camera`, a camera rendered on demand
(videos, ``polyphys render``, scripts).

Frames: a camera's frame is OpenCV's — x right, y down, z forward (the optical axis); quaternions are
(w, x, y, z) of that frame in its parent frame (the world, a link or a site).
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from ..errors import OptionError
from .scene import Mount, RaySet, quat_to_rot, ray_scene, rot_to_quat

OUTPUTS = ("rgb", "depth", "distance", "segmentation", "normals", "points")
WIDTH = {"rgb": 3, "depth": 1, "distance": 1, "segmentation": 1, "normals": 3, "points": 3}
SEGMENTATION = ("entity", "link", "geom")
MAX_PIXELS = 16_777_216          # per camera (4096 x 4096)


def _finite(owner, key, value, n):
    try:
        a = np.asarray(value, float).reshape(n)
    except (TypeError, ValueError):
        raise OptionError(f"{owner}: {key} = {value!r}: expected {n} numbers") from None
    if not np.all(np.isfinite(a)):
        raise OptionError(f"{owner}: {key} = {value!r}: must be finite")
    return a


def _number(owner, key, value, lo=None, hi=None, lo_open=False, allow_inf=False):
    if isinstance(value, bool):
        raise OptionError(f"{owner}: {key} = {value!r}: expected a number")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise OptionError(f"{owner}: {key} = {value!r}: expected a number") from None
    if math.isnan(v) or (math.isinf(v) and not allow_inf):
        raise OptionError(f"{owner}: {key} = {value!r}: must be finite")
    if lo is not None and (v < lo or (lo_open and v <= lo)):
        rng = f"> {lo}" if lo_open else f">= {lo}"
        raise OptionError(f"{owner}: {key} = {value!r}: must be {rng}" + (f" and < {hi}" if hi is not None else ""))
    if hi is not None and v >= hi:
        raise OptionError(f"{owner}: {key} = {value!r}: must be < {hi}" + (f" and > {lo}" if lo is not None else ""))
    return v


def unit_quat(owner, key, q) -> np.ndarray:
    q = _finite(owner, key, q, 4)
    n = np.linalg.norm(q)
    if n < 1e-9:
        raise OptionError(f"{owner}: {key} = {tuple(q)}: a quaternion (w, x, y, z) must be non-zero")
    return q / n


def lookat_rot(owner, pos, lookat, up) -> np.ndarray:
    """Rotation (columns x right, y down, z forward: OpenCV) of a camera at ``pos`` looking at ``lookat``
    with ``up`` pointing up in the image."""
    f = np.asarray(lookat, float) - np.asarray(pos, float)
    if np.linalg.norm(f) < 1e-9:
        raise OptionError(f"{owner}: lookat = {tuple(lookat)} equals pos: the camera needs a direction")
    f /= np.linalg.norm(f)
    r = np.cross(f, np.asarray(up, float))
    if np.linalg.norm(r) < 1e-9:
        raise OptionError(f"{owner}: up = {tuple(up)} is parallel to the viewing direction {tuple(f.round(6))}: "
                          f"give another up vector")
    r /= np.linalg.norm(r)
    d = np.cross(f, r)
    return np.stack([r, d, f], axis=1)


def intrinsics(owner, resolution, fov=None, K=None):
    """(width, height, K (3, 3), vertical fov in degrees) from ``resolution`` = (width, height) and a
    vertical field of view ``fov`` (degrees, square pixels, principal point at the centre) or ``K``."""
    try:
        w, h = (int(x) for x in resolution)
        ok = all(float(x) == int(x) for x in resolution)
    except (TypeError, ValueError):
        raise OptionError(f"{owner}: resolution = {resolution!r}: expected (width, height), two integers >= 1") from None
    if not ok or w < 1 or h < 1:
        raise OptionError(f"{owner}: resolution = {resolution!r}: expected (width, height), two integers >= 1")
    if w * h > MAX_PIXELS:
        raise OptionError(f"{owner}: resolution = {resolution!r}: {w * h} pixels; at most {MAX_PIXELS} per camera")
    if K is not None:
        if fov is not None:
            raise OptionError(f"{owner}: give fov or K, not both (fov = {fov!r})")
        try:
            Km = np.asarray(K, float).reshape(3, 3)
        except (TypeError, ValueError):
            raise OptionError(f"{owner}: K = {K!r}: expected a 3 x 3 matrix [[fx, s, cx], [0, fy, cy], [0, 0, 1]]") from None
        if not np.all(np.isfinite(Km)) or not (Km[0, 0] > 0 and Km[1, 1] > 0) or not np.allclose(Km[2], (0, 0, 1)) \
                or Km[1, 0] != 0:
            raise OptionError(f"{owner}: K = {Km.tolist()}: expected [[fx, s, cx], [0, fy, cy], [0, 0, 1]] with "
                              f"fx, fy > 0, finite")
        fov_y = math.degrees(2.0 * math.atan(0.5 * h / Km[1, 1]))
        return w, h, Km, fov_y
    fov = 45.0 if fov is None else fov
    fov = _number(owner, "fov", fov, 0.0, 180.0, lo_open=True)
    fy = 0.5 * h / math.tan(math.radians(fov) / 2.0)
    Km = np.array([[fy, 0.0, w / 2.0], [0.0, fy, h / 2.0], [0.0, 0.0, 1.0]])
    return w, h, Km, fov


def pinhole_dirs(w: int, h: int, K) -> np.ndarray:
    """(h·w, 3) ray directions in the camera frame through pixel centres, row-major (row 0 at the top):
    K⁻¹ (u + ½, v + ½, 1), z = 1, so a hit at distance t along the unit ray has depth t·z/|d|."""
    u, v = np.meshgrid(np.arange(w) + 0.5, np.arange(h) + 0.5)
    pix = np.stack([u.ravel(), v.ravel(), np.ones(w * h)], axis=1)
    return pix @ np.linalg.inv(np.asarray(K, float)).T


@attrs.define
class Light:
    """A light: ``type`` "directional" (``dir``: the direction the light travels) or "point" (``pos``);
    ``color`` (rgb) times ``intensity``; ``frame`` "world" or "camera" (``dir``/``pos`` in the camera
    frame: a headlight)."""

    type: str = "directional"
    dir: tuple = (0.0, 0.0, -1.0)
    pos: tuple = (0.0, 0.0, 3.0)
    color: tuple = (1.0, 1.0, 1.0)
    intensity: float = 1.0
    frame: str = "world"


DEFAULT_LIGHTS = (Light(dir=(-0.35, -0.25, -1.0), intensity=0.65),
                  Light(dir=(0.0, 0.0, 1.0), intensity=0.25, frame="camera"))
DEFAULT_BACKGROUND = (0.80, 0.86, 0.92)
DEFAULT_AMBIENT = (0.22, 0.22, 0.22)


def make_light(owner, value, i) -> Light:
    key = f"lights[{i}]"
    if isinstance(value, Light):
        value = attrs.asdict(value)
    if not isinstance(value, dict):
        raise OptionError(f"{owner}: {key} = {value!r}: expected a table {{type, dir|pos, color, intensity, frame}}")
    allowed = ("type", "dir", "pos", "color", "intensity", "frame")
    for k in value:
        if k not in allowed:
            raise OptionError(f"{owner}: {key}.{k} = {value[k]!r}: unknown key; allowed {list(allowed)}")
    lt = value.get("type", "directional")
    if lt not in ("directional", "point"):
        raise OptionError(f"{owner}: {key}.type = {lt!r}: allowed 'directional' or 'point'")
    fr = value.get("frame", "world")
    if fr not in ("world", "camera"):
        raise OptionError(f"{owner}: {key}.frame = {fr!r}: allowed 'world' or 'camera'")
    d = _finite(owner, f"{key}.dir", value.get("dir", (0.0, 0.0, -1.0)), 3)
    if lt == "directional" and np.linalg.norm(d) < 1e-9:
        raise OptionError(f"{owner}: {key}.dir = {tuple(d)}: must be non-zero")
    col = _finite(owner, f"{key}.color", value.get("color", (1.0, 1.0, 1.0)), 3)
    if (col < 0).any():
        raise OptionError(f"{owner}: {key}.color = {tuple(col)}: must be >= 0")
    inten = _number(owner, f"{key}.intensity", value.get("intensity", 1.0), 0.0)
    return Light(type=lt, dir=tuple(d), pos=tuple(_finite(owner, f"{key}.pos", value.get("pos", (0, 0, 3)), 3)),
                 color=tuple(col), intensity=inten, frame=fr)


@attrs.define
class Shading:
    """How an RGB image is lit: ambient + Σ lights · max(0, n·l) (hard shadows), times the surface
    colour; background colour where nothing is hit; particles coloured by ``particle_color``
    ("material": their entity's colour; "speed", or another particle field that the entity getters
    ``get_particles_<field>`` give, through the colour map over ``color_range``)."""

    ambient: tuple = DEFAULT_AMBIENT
    lights: tuple = DEFAULT_LIGHTS
    shadows: bool = True
    background: tuple = DEFAULT_BACKGROUND
    particle_color: str = "material"
    color_range: Any = None


def make_shading(owner, ambient=None, lights=None, shadows=True, background=None, particle_color="material",
                 color_range=None) -> Shading:
    amb = _finite(owner, "ambient", DEFAULT_AMBIENT if ambient is None else ambient, 3)
    bg = _finite(owner, "background", DEFAULT_BACKGROUND if background is None else background, 3)
    if (amb < 0).any():
        raise OptionError(f"{owner}: ambient = {ambient!r}: must be >= 0")
    if lights is None:
        ls = DEFAULT_LIGHTS
    else:
        if isinstance(lights, (dict, Light)) or not hasattr(lights, "__iter__"):
            raise OptionError(f"{owner}: lights = {lights!r}: expected a list of lights ([] for none)")
        ls = tuple(make_light(owner, v, i) for i, v in enumerate(lights))
    if not isinstance(shadows, bool):
        raise OptionError(f"{owner}: shadows = {shadows!r}: expected true or false")
    if not isinstance(particle_color, str) or not particle_color:
        raise OptionError(f"{owner}: particle_color = {particle_color!r}: expected 'material', 'speed' or the name "
                          f"of a particle field (entity getter get_particles_<name>)")
    cr = None
    if color_range is not None:
        cr = tuple(_finite(owner, "color_range", color_range, 2))
        if not cr[0] < cr[1]:
            raise OptionError(f"{owner}: color_range = {color_range!r}: expected (lo, hi) with lo < hi")
    return Shading(ambient=tuple(amb), lights=ls, shadows=shadows, background=tuple(bg), particle_color=particle_color,
                   color_range=cr)


@attrs.define
class RaySpec:
    """A validated ray sensor: its mount request (resolved against a scene by :meth:`mount_in`), the
    rays in its own frame, range (rays start at ``min_range`` and reach ``max_range``), the value of a
    ray that hits nothing (``no_hit``: distance and depth; points NaN, normals 0, segmentation −1,
    rgb the background), whether the rays ignore the geoms of the link it is mounted on
    (``exclude_parent``), spin (rad per sensor tick about its z axis), segmentation mode and shading."""

    owner: str
    dirs: np.ndarray
    origins: Any = None
    entity: Any = None
    link: Any = None
    site: Any = None
    pos: np.ndarray = attrs.field(factory=lambda: np.zeros(3))
    rot: np.ndarray = attrs.field(factory=lambda: np.eye(3))
    min_range: float = 0.0
    max_range: float = 100.0
    no_hit: float = math.inf
    exclude_parent: bool = False
    spin: float = 0.0
    segmentation: str = "entity"
    shading: Shading = attrs.field(factory=Shading)
    mount: Mount | None = None
    bound_scene: Any = attrs.field(default=None, repr=False, eq=False)

    def mount_in(self, scene) -> None:
        rs = ray_scene(scene)
        self.mount = rs.resolve_mount(self.owner, self.entity, self.link, self.site, self.pos, self.rot)
        self.bound_scene = scene


def make_range(owner, min_range, max_range):
    lo = _number(owner, "min_range", min_range, 0.0)
    hi = _number(owner, "max_range", max_range, 0.0, lo_open=True, allow_inf=True)
    if not lo < hi:
        raise OptionError(f"{owner}: min_range = {lo}, max_range = {hi}: min_range must be < max_range")
    return lo, min(hi, 1.0e29)


def make_pose(owner, entity, link, site, pos, quat, lookat, up, offset_pos, offset_quat):
    """(pos, rot) of a sensor in its parent frame: the world (no entity; ``pos`` with ``quat`` or
    ``lookat``/``up``), or a link/site of ``entity`` (``offset_pos``/``offset_quat`` in that frame)."""
    if entity is None:
        if offset_pos is not None or offset_quat is not None:
            raise OptionError(f"{owner}: offset_pos/offset_quat place a sensor on a link or site of an entity; a "
                              f"sensor fixed in the world takes pos with quat or lookat")
        p = _finite(owner, "pos", (0.0, 0.0, 1.0) if pos is None else pos, 3)
        if lookat is not None:
            if quat is not None:
                raise OptionError(f"{owner}: give quat or lookat, not both")
            return p, lookat_rot(owner, p, _finite(owner, "lookat", lookat, 3), _finite(owner, "up", up, 3))
        return p, quat_to_rot(unit_quat(owner, "quat", (1.0, 0.0, 0.0, 0.0) if quat is None else quat))
    if pos is not None or quat is not None or lookat is not None:
        raise OptionError(f"{owner}: a sensor on entity {entity.name!r} is placed by offset_pos/offset_quat in its link "
                          f"or site frame (pos/quat/lookat are for a sensor fixed in the world)")
    p = _finite(owner, "offset_pos", (0.0, 0.0, 0.0) if offset_pos is None else offset_pos, 3)
    q = unit_quat(owner, "offset_quat", (1.0, 0.0, 0.0, 0.0) if offset_quat is None else offset_quat)
    return p, quat_to_rot(q)


def camera_outputs(owner, outputs, default, allowed=OUTPUTS) -> tuple:
    outs = default if outputs is None else ((outputs,) if isinstance(outputs, str) else tuple(outputs))
    if not outs or len(set(outs)) != len(outs) or any(o not in allowed for o in outs):
        raise OptionError(f"{owner}: outputs = {outputs!r}: allowed a non-empty selection without repeats of "
                          f"{list(allowed)}")
    return outs


class Camera:
    """A pinhole camera rendered on demand (videos, ``polyphys render``, scripts): ``render(scene)``.

    Placed fixed in the world (``pos`` with ``quat`` or ``lookat``/``up``) or on an entity's ``link``
    or ``site`` (``offset_pos``/``offset_quat``); intrinsics from ``fov`` (vertical, degrees) or ``K``;
    ``outputs`` among rgb, depth (along the optical axis), distance (along the ray), segmentation,
    normals (world), points (world); ``near``/``far``: the ray range; ``no_hit``: the depth/distance
    of an empty pixel; shading keywords as :func:`make_shading`. The camera sensors of
    ``polyphys.plugins.sensors`` are made of the same parts, evaluated inside the step.
    """

    def __init__(self, resolution=(320, 240), fov=None, K=None, *, pos=None, quat=None, lookat=None,
                 up=(0.0, 0.0, 1.0), entity=None, link=None, site=None, offset_pos=None, offset_quat=None,
                 outputs=("rgb",), near=0.0, far=100.0, no_hit=math.inf, segmentation="entity", ambient=None,
                 lights=None, shadows=True, background=None, particle_color="material", color_range=None,
                 name="camera"):
        owner = f"camera {name!r}"
        self.name = name
        self.width, self.height, self.K, self.fov_y = intrinsics(owner, resolution, fov, K)
        self.outputs = camera_outputs(owner, outputs, ("rgb",))
        if segmentation not in SEGMENTATION:
            raise OptionError(f"{owner}: segmentation = {segmentation!r}: allowed {list(SEGMENTATION)}")
        lo, hi = make_range(owner, near, far)
        p, R = make_pose(owner, entity, link, site, pos, quat, lookat, up, offset_pos, offset_quat)
        self.spec = RaySpec(owner=owner, dirs=pinhole_dirs(self.width, self.height, self.K), entity=entity, link=link,
                            site=site, pos=p, rot=R, min_range=lo, max_range=hi,
                            no_hit=_number(owner, "no_hit", no_hit, allow_inf=True), segmentation=segmentation,
                            shading=make_shading(owner, ambient, lights, shadows, background, particle_color,
                                                 color_range))
        self._bound = None          # a Renderer

    @property
    def resolution(self) -> tuple:
        return (self.width, self.height)

    def columns(self) -> tuple[dict, int]:
        return image_columns(self.outputs, self.width, self.height)

    def _renderer(self, scene, outputs=None) -> Renderer:
        outs = self.outputs if outputs is None else camera_outputs(self.spec.owner, outputs, self.outputs)
        if self._bound is None or self._bound.scene is not scene or self._bound.outputs != outs:
            self._bound = Renderer(scene, self.spec, outs, self.width, self.height)
        return self._bound

    def get_pose(self, scene, envs_idx=None):
        """World (pos (n, 3), quat (n, 4) w x y z) of the camera frame now (no env axis unbatched)."""
        return self._renderer(scene).get_pose(envs_idx)

    def render(self, scene, envs_idx=None, color_range=None, grow_range=False, outputs=None) -> dict:
        """Render the scene's current state: {output: array} with shapes (n, H, W) or (n, H, W, 3)
        (no env axis for an unbatched scene); rgb in [0, 1]; ``outputs`` default: the camera's."""
        return self._renderer(scene, outputs).render(envs_idx, color_range, grow_range)


def auto_camera(scene, env: int = 0, resolution=(480, 360), fov=40.0, **kw) -> Camera:
    """A camera framing env ``env``'s content as it is now: looking at the centre of its bounding
    box from the direction (1, −1.2, 0.8) (x right-front, z up) far enough for the box's bounding
    sphere to fit the vertical field of view (infinite planes are not framed)."""
    import warp as wp

    rs = ray_scene(scene)
    with wp.ScopedDevice(rs.device):
        rs.prepare_all()
    b = rs.bounds(env)
    lo, hi = (np.array([-1.0, -1.0, 0.0]), np.array([1.0, 1.0, 1.0])) if b is None else b
    c = 0.5 * (lo + hi)
    r = max(0.5 * float(np.linalg.norm(hi - lo)), 0.05)
    w, h = resolution
    half = math.radians(fov) / 2 * min(1.0, w / h)
    dist = 1.15 * r / math.sin(half)
    d = np.array([1.0, -1.2, 0.8])
    d /= np.linalg.norm(d)
    return Camera(resolution=resolution, fov=fov, pos=tuple(c + dist * d), lookat=tuple(c), **kw)


def image_columns(outputs, width: int, height: int) -> tuple[dict, int]:
    """{output: first column} of a camera's outputs laid out one after another, and the total."""
    cols, c = {}, 0
    for o in outputs:
        cols[o] = c
        c += WIDTH[o] * width * height
    return cols, c


class Renderer:
    """On-demand rendering of one camera spec on one scene: its own RaySet and output buffer."""

    def __init__(self, scene, spec: RaySpec, outputs, width: int, height: int):
        import warp as wp

        self.scene, self.spec, self.outputs, self.width, self.height = scene, spec, tuple(outputs), width, height
        if spec.mount is None or spec.bound_scene is not scene:
            spec.mount_in(scene)
        self.rs = rs = ray_scene(scene)
        self.cols, D = image_columns(outputs, width, height)
        self.range = None
        with wp.ScopedDevice(rs.device):
            self.rset = RaySet(rs, [spec], [self.cols])
            self.out = wp.zeros((rs.n_envs, D), dtype=wp.float32, device=rs.device)

    def get_pose(self, envs_idx=None):
        envs = self.scene._envs_idx(envs_idx)
        p, R = self.rset.world_poses()
        pos = p[envs, 0].astype(float)
        quat = np.stack([rot_to_quat(R[e, 0]) for e in envs])
        return (pos, quat) if self.scene.batched else (pos[0], quat[0])

    def render(self, envs_idx=None, color_range=None, grow_range=False) -> dict:
        """Images of ``envs_idx``; particles coloured by a field take ``color_range``, else the
        spec's, else the field's range now (``grow_range``: the union with the earlier calls')."""
        import warp as wp

        scene, rs, rset = self.scene, self.rs, self.rset
        envs = scene._envs_idx(envs_idx)
        want = {int(e) for e in envs}
        parts = [p for p in rs.layout.partitions if any(p.start <= e < p.stop for e in want)]
        sh = self.spec.shading
        with wp.ScopedDevice(rs.device):
            for part in parts:
                rs.prepare(part)
            if rs.n_particles and sh.particle_color != "material":
                if sh.particle_color == "speed":
                    v = np.linalg.norm(rs.p_vel.numpy().reshape(rs.n_envs, rs.n_particles, 3)[envs], axis=2)
                    drawn = rs.particle_drawn.numpy() != 0
                    v = v[:, drawn]
                    auto = (float(v.min()), float(v.max())) if v.size else (0.0, 1.0)
                else:
                    auto = rs.upload_field(sh.particle_color, self.spec.owner)
                if grow_range and self.range is not None:
                    auto = (min(auto[0], self.range[0]), max(auto[1], self.range[1]))
                auto = auto if auto[1] > auto[0] else (auto[0], auto[0] + 1.0)
                self.range = auto
                rng = color_range or sh.color_range or auto
                rset.update_shading(0, rng)
            elif color_range is not None:
                rset.update_shading(0, color_range)
            for part in parts:
                rset.poses(part)
                inside = [e for e in range(part.start, part.stop) if e in want]
                a, b = min(inside), max(inside) + 1
                rset.cast(part, self.out[a:b], env_offset=a - part.start, n_rows=b - a)
        data = self.out.numpy()[envs]
        res = {}
        for o in self.outputs:
            c, wdt = self.cols[o], WIDTH[o]
            img = data[:, c:c + wdt * self.width * self.height].reshape(len(envs), self.height, self.width, wdt)
            res[o] = img[..., 0] if wdt == 1 else img
        if not scene.batched:
            res = {k: v[0] for k, v in res.items()}
        return res


def to_uint8(rgb) -> np.ndarray:
    """An rgb image in [0, 1] as uint8."""
    return np.clip(np.round(np.asarray(rgb, float) * 255.0), 0, 255).astype(np.uint8)
