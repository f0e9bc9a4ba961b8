"""The browser viewer (viser): replay of a recording or a live scene.

One :class:`Viewer` serves one source. Geometry is sent once per layout (which envs are shown); each
frame then only moves instances: every geom is one batched mesh whose instances are the shown envs
(so 64 humanoids cost as many scene nodes as one), every particle set one point cloud, every surface
one mesh, contacts one point cloud plus one arrow set. docs/viewer.md describes the controls.
"""

from __future__ import annotations

import socket
import threading
import time

import numpy as np

from ..errors import OptionError
from .content import Content, check_fields, env_spacing, frame_bbox, geom_world_poses, grid_offsets, primitive_mesh

# viridis at 9 stops (the perceptually uniform map of matplotlib; values from its published table)
_VIRIDIS = np.array([[68, 1, 84], [71, 44, 122], [59, 81, 139], [44, 113, 142], [33, 144, 141],
                     [39, 173, 129], [92, 200, 99], [170, 220, 50], [253, 231, 37]], dtype=np.float64)
CONTACT_COLOR = (230, 20, 20)
MAX_GRID_POINTS = 4_000_000      # particles sent per frame in the grid layout (more envs are cut)


def colormap(values: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """(n,) values -> (n, 3) uint8 viridis colours over [lo, hi]."""
    v = np.asarray(values, dtype=np.float64)
    t = np.clip((v - lo) / (hi - lo), 0.0, 1.0) if hi > lo else np.zeros_like(v)
    x = t * (len(_VIRIDIS) - 1)
    i = np.minimum(x.astype(int), len(_VIRIDIS) - 2)
    f = (x - i)[:, None]
    return (_VIRIDIS[i] * (1 - f) + _VIRIDIS[i + 1] * f).astype(np.uint8)


def _rgb255(c) -> tuple:
    return tuple(int(round(255 * max(0.0, min(1.0, float(x))))) for x in tuple(c)[:3])


def port_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


class Viewer:
    """A viser server showing ``content``; frames come from ``recording`` (replay) or ``reader``
    (live, with ``scene``).

    :param port: the port to serve on; when it is taken the next free one is used and
        :attr:`port` says which (``strict_port=True`` raises instead).
    :param color_by: ``"material"`` (one colour per entity) or a particle field.
    :param env: the env shown first; ``grid=True`` shows up to ``grid_max`` envs side by side.
    :param shadows: shadows of the default lights (off: cheaper for software WebGL).
    """

    def __init__(self, content: Content, *, recording=None, scene=None, reader=None, host: str = "127.0.0.1",
                 port: int = 8080, strict_port: bool = False, color_by: str = "material", env: int = 0,
                 grid: bool = False, grid_max: int = 64, contacts: bool = True, force_scale: float | None = None,
                 title: str | None = None, max_fps: float = 30.0, shadows: bool = True, verbose: bool = False):
        from ._extras import require

        viser = require("viser", "viewer")
        if (recording is None) == (reader is None):
            raise OptionError("Viewer: give either recording= (replay) or reader= (live)")
        if isinstance(port, bool) or not isinstance(port, (int, np.integer)) or not 0 <= port <= 65535:
            raise OptionError(f"port = {port!r}: must be an integer in 0..65535")
        self.content = content
        self.recording = recording
        self.reader = reader
        self.scene = scene
        self.live = reader is not None
        self.n_envs = content.n_envs
        if isinstance(env, bool) or not isinstance(env, (int, np.integer)) or not 0 <= env < self.n_envs:
            raise OptionError(f"env = {env!r}: the scene has envs 0..{self.n_envs - 1}")
        if isinstance(grid_max, bool) or not isinstance(grid_max, (int, np.integer)) or grid_max < 1:
            raise OptionError(f"grid_max = {grid_max!r}: must be an integer >= 1")
        fields = check_fields(content, color_by, recorded=not self.live) if color_by != "material" else []
        self.color_by = fields[0] if fields else "material"
        self.requested_port = int(port)
        if port and not port_free(host, int(port)):
            if strict_port:
                raise OptionError(f"port {port} on {host} is in use; choose another with --port, or drop "
                                  f"--strict-port to take the next free one")
            self.port_note = f"port {port} is in use; serving on the next free port"
        else:
            self.port_note = ""
        self.server = viser.ViserServer(host=host, port=int(port), label=title or content.scene_name,
                                        verbose=verbose)
        self.port = int(self.server.get_port())
        self.host = host
        if self.port_note:
            self.port_note = f"port {port} is in use; serving on port {self.port}"
        self.url = f"http://{host}:{self.port}/"
        self.env = int(env)
        self.grid = bool(grid) and self.n_envs > 1
        self.grid_max = int(grid_max)
        self.show_contacts = bool(contacts)
        self._has_contacts = bool(reader.contacts) if reader is not None else False
        self.show_collision = False
        self.max_fps = float(max_fps)
        self.force_scale = force_scale
        self._lock = threading.RLock()
        self._nodes: dict = {}
        self._contact_nodes: dict = {}
        self._frame: dict | None = None
        self._last_push = 0.0
        self._frames_pushed = 0
        self.record_index = 0
        self.playing = False
        self.paused = False
        self.step_rate = 0.0
        self._rate_mark = None
        self._status_at = 0.0
        self.fps = 0.0
        self._closed = False
        try:
            self.server.scene.set_up_direction("+z")
            self.server.scene.configure_default_lights(enabled=True, cast_shadow=bool(shadows))
            self._first_frame()
            self._setup_camera()
            self._build_gui()
            self._rebuild_nodes()
            self._push(self._frame)
        except BaseException:
            self.server.stop()                 # do not keep the port of a viewer that failed to start
            raise

    # -- frames ------------------------------------------------------------------------------------
    def _first_frame(self) -> None:
        self._frame = self.recording.frame(0) if not self.live else self.reader.read()
        self.bbox = frame_bbox(self.content, self._frame)
        self.spacing = env_spacing(self.bbox)

    def _setup_camera(self) -> None:
        lo, hi = self.bbox
        if self.grid:                          # frame every drawn env
            off = self.offsets()
            lo, hi = lo + off.min(0), hi + off.max(0)
        center = 0.5 * (lo + hi)
        size = max(float(np.max(hi - lo)), 0.3)
        cam = self.server.initial_camera
        cam.look_at = tuple(float(x) for x in center)
        cam.position = tuple(float(x) for x in center + np.array([1.6, -1.6, 1.1]) * size)
        cam.up = (0.0, 0.0, 1.0)

    def shown_envs(self) -> np.ndarray:
        if not self.grid:
            return np.array([self.env])
        n = min(self.n_envs, self.grid_max)
        per_env = sum(p.n for p in self.content.particles)
        if per_env:
            n = max(1, min(n, MAX_GRID_POINTS // per_env))
        return np.arange(n)

    def offsets(self) -> np.ndarray:
        envs = self.shown_envs()
        return grid_offsets(len(envs), self.spacing) if self.grid else np.zeros((1, 3), np.float32)

    # -- scene nodes -------------------------------------------------------------------------------
    def _rebuild_nodes(self) -> None:
        with self._lock:
            for h in list(self._nodes.values()) + list(self._contact_nodes.values()):
                h.remove()
            self._nodes.clear()
            self._contact_nodes.clear()
            sc = self.server.scene
            envs = self.shown_envs()
            n = len(envs)
            ident_q = np.tile(np.array([1.0, 0, 0, 0], np.float32), (n, 1))
            zero_p = np.zeros((n, 3), np.float32)
            for bi, b in enumerate(self.content.bodies):
                for gi, g in enumerate(b.geoms):
                    if g.role == "collision" and not self.show_collision:
                        continue
                    if g.mesh >= 0:
                        v, f = self.content.meshes[g.mesh]
                    else:
                        v, f = primitive_mesh(g)
                    alpha = float(g.rgba[3]) if len(g.rgba) > 3 else 1.0
                    self._nodes[("g", bi, gi)] = sc.add_batched_meshes_simple(
                        f"/bodies/{bi}_{_safe(b.name)}/{gi}_{_safe(g.name)}", np.asarray(v, np.float32),
                        np.asarray(f, np.uint32), ident_q, zero_p, batched_colors=_rgb255(g.rgba), lod="off",
                        opacity=alpha if alpha < 1.0 else None, side="double" if g.type == "plane" else "front",
                        cast_shadow=g.type != "plane")
            for pi, p in enumerate(self.content.particles):
                self._nodes[("p", pi)] = sc.add_point_cloud(
                    f"/particles/{pi}_{_safe(p.name)}", np.zeros((n * p.n, 3), np.float32), _rgb255(p.color),
                    point_size=float(2.0 * p.radius), point_shape="circle", precision="float32")
            for si, s in enumerate(self.content.surfaces):
                tris = np.asarray(s.triangles, np.uint32)
                faces = np.concatenate([tris + k * s.n_verts for k in range(n)]) if n > 1 else tris
                self._nodes[("s", si)] = sc.add_mesh_simple(
                    f"/surfaces/{si}_{_safe(s.name)}", np.zeros((n * s.n_verts, 3), np.float32), faces,
                    color=_rgb255(s.color), side="double", flat_shading=False)
            for ci, c in enumerate(self.content.cameras):
                for k in range(n):
                    self._nodes[("c", ci, k)] = sc.add_camera_frustum(
                        f"/cameras/{ci}_{_safe(c.name)}/{k}", fov=np.radians(c.fov_y), aspect=c.aspect,
                        scale=0.1, color=(40, 40, 40))

    def _push(self, frame: dict | None) -> None:
        """Move every node to ``frame`` (the shown envs, laid out)."""
        if frame is None:
            return
        with self._lock:
            envs = self.shown_envs()
            off = self.offsets()
            with self.server.atomic():
                for bi, b in enumerate(self.content.bodies):
                    gp, gq = geom_world_poses(frame[f"b{bi}.pos"][envs], frame[f"b{bi}.quat"][envs], b.geoms)
                    gp = gp + off[:, None, :]
                    for gi in range(len(b.geoms)):
                        h = self._nodes.get(("g", bi, gi))
                        if h is not None:
                            h.batched_positions = np.ascontiguousarray(gp[:, gi])
                            h.batched_wxyzs = np.ascontiguousarray(gq[:, gi])
                self.field_range = None
                for pi, p in enumerate(self.content.particles):
                    h = self._nodes[("p", pi)]
                    pts = frame[f"p{pi}.pos"][envs] + off[:, None, :]
                    h.points = np.ascontiguousarray(pts.reshape(-1, 3), dtype=np.float32)
                    key = f"p{pi}.f.{self.color_by}"
                    if self.color_by != "material" and key in frame:
                        vals = np.asarray(frame[key][envs]).reshape(-1)
                        lo, hi = float(np.nanmin(vals)), float(np.nanmax(vals))
                        self.field_range = (lo, hi) if self.field_range is None else (
                            min(lo, self.field_range[0]), max(hi, self.field_range[1]))
                        h.colors = colormap(vals, lo, hi)
                    else:
                        h.colors = np.array(_rgb255(p.color), np.uint8)
                for si in range(len(self.content.surfaces)):
                    v = frame[f"s{si}.verts"][envs] + off[:, None, :]
                    self._nodes[("s", si)].vertices = np.ascontiguousarray(v.reshape(-1, 3), dtype=np.float32)
                for ci in range(len(self.content.cameras)):
                    cp, cq = frame[f"c{ci}.pos"][envs] + off, frame[f"c{ci}.quat"][envs]
                    for k in range(len(envs)):
                        h = self._nodes[("c", ci, k)]
                        h.position = tuple(float(x) for x in cp[k])
                        h.wxyz = tuple(float(x) for x in cq[k])
                self._push_contacts(frame, envs, off)
            self._frames_pushed += 1

    def _push_contacts(self, frame: dict, envs: np.ndarray, off: np.ndarray) -> None:
        for h in self._contact_nodes.values():
            h.remove()
        self._contact_nodes.clear()
        if not self.show_contacts or "contact.pos" not in frame or len(frame["contact.pos"]) == 0:
            return
        where = {int(e): k for k, e in enumerate(envs)}
        sel = np.array([int(e) in where for e in frame["contact.env"]], dtype=bool)
        if not sel.any():
            return
        slot = np.array([where[int(e)] for e in frame["contact.env"][sel]])
        p = frame["contact.pos"][sel] + off[slot]
        f = frame["contact.force"][sel]
        sc = self.server.scene
        r = max(0.004, 0.01 * float(np.max(self.bbox[1] - self.bbox[0])))
        self._contact_nodes["pts"] = sc.add_point_cloud("/contacts/points", p.astype(np.float32), CONTACT_COLOR,
                                                        point_size=2 * r, point_shape="circle", precision="float32")
        fmax = float(np.max(np.linalg.norm(f, axis=1)))
        if fmax > 0:
            scale = self.force_scale if self.force_scale else 0.25 * float(np.max(self.bbox[1] - self.bbox[0])) / fmax
            seg = np.stack([p, p + f * scale], axis=1).astype(np.float32)
            self._contact_nodes["arrows"] = sc.add_arrows("/contacts/forces", seg, (240, 120, 0),
                                                          shaft_radius=0.4 * r, head_radius=r, head_length=2 * r)

    # -- GUI ---------------------------------------------------------------------------------------
    def _build_gui(self) -> None:
        gui = self.server.gui
        self.status = gui.add_markdown(self._status_text())
        if not self.live:
            n = self.recording.n_records
            self.slider = gui.add_slider("record", min=0, max=max(n - 1, 1), step=1, initial_value=0,
                                         disabled=n < 2)
            self.play = gui.add_checkbox("play", initial_value=False)
            self.play_fps = gui.add_slider("play fps", min=1, max=60, step=1, initial_value=20)

            @self.slider.on_update
            def _(_):
                self.show_record(int(self.slider.value))

            @self.play.on_update
            def _(_):
                self.playing = bool(self.play.value)
        else:
            self.pause_box = gui.add_checkbox("pause", initial_value=False)

            @self.pause_box.on_update
            def _(_):
                self.paused = bool(self.pause_box.value)

        if self.n_envs > 1:
            self.env_select = gui.add_dropdown("env", options=[str(i) for i in range(self.n_envs)],
                                               initial_value=str(self.env))
            self.grid_box = gui.add_checkbox(f"grid of envs (up to {self.grid_max})", initial_value=self.grid)

            @self.env_select.on_update
            def _(_):
                self.set_env(int(self.env_select.value))

            @self.grid_box.on_update
            def _(_):
                self.set_grid(bool(self.grid_box.value))

        fields = self.content.field_names(recorded=not self.live)
        if self.content.particles:
            self.color_select = gui.add_dropdown("colour by", options=["material", *fields],
                                                 initial_value=self.color_by)

            @self.color_select.on_update
            def _(_):
                self.set_color_by(self.color_select.value)

        if any(b.has_contacts for b in self.content.bodies):
            self.contacts_box = gui.add_checkbox("contacts and forces", initial_value=self.show_contacts)

            @self.contacts_box.on_update
            def _(_):
                self.set_contacts(bool(self.contacts_box.value))

        if any(g.role == "collision" for b in self.content.bodies for g in b.geoms):
            self.collision_box = gui.add_checkbox("collision geoms", initial_value=False)

            @self.collision_box.on_update
            def _(_):
                self.show_collision = bool(self.collision_box.value)
                self._rebuild_nodes()
                self._push(self._frame)

        if self.content.skipped:
            gui.add_markdown("not drawn: " + "; ".join(self.content.skipped))

    def _status_text(self) -> str:
        if self.live:
            st = "paused" if self.paused else f"{self.step_rate:,.1f} steps/s"
            if self.n_envs > 1 and not self.paused:
                st += f" ({self.step_rate * self.n_envs:,.0f} env-steps/s)"
            return f"**live** — {st}, view {self.fps:.1f} fps"
        k = self.record_index
        r = self.recording
        return (f"**replay** — record {k}/{r.n_records - 1}: step {int(r.steps[k])}, "
                f"t = {float(r.times[k]):.4g} s")

    def _refresh_status(self, force: bool = True) -> None:
        now = time.perf_counter()
        if not force and now - self._status_at < 0.25:      # the status line at most 4 times a second
            return
        self._status_at = now
        text = self._status_text()
        if self.color_by != "material" and getattr(self, "field_range", None) is not None:
            lo, hi = self.field_range
            text += f"  \n{self.color_by}: {lo:.4g} (purple) … {hi:.4g} (yellow)"
        self.status.content = text

    # -- controls (GUI callbacks and the Python API) -------------------------------------------------
    def show_record(self, k: int) -> None:
        """Replay: show record ``k``."""
        if self.live:
            raise OptionError("show_record: a live viewer shows the scene's current state")
        n = self.recording.n_records
        if not 0 <= int(k) < n:
            raise OptionError(f"record {k}: the recording has records 0..{n - 1}")
        with self._lock:
            self.record_index = int(k)
            self._sync_widget("slider", self.record_index)
            self._frame = self.recording.frame(self.record_index)
            self._push(self._frame)
            self._refresh_status()

    def _sync_widget(self, name: str, value) -> None:
        """Show a change made from Python in the page's widget too."""
        w = getattr(self, name, None)
        if w is not None and w.value != value:
            w.value = value

    def set_env(self, env: int) -> None:
        if not 0 <= int(env) < self.n_envs:
            raise OptionError(f"env = {env!r}: the scene has envs 0..{self.n_envs - 1}")
        with self._lock:
            self.env = int(env)
            self._sync_widget("env_select", str(self.env))
            if not self.grid:
                self._push(self._frame)

    def set_grid(self, grid: bool) -> None:
        with self._lock:
            self.grid = bool(grid) and self.n_envs > 1
            self._sync_widget("grid_box", self.grid)
            self._rebuild_nodes()
            self._push(self._frame)

    def set_contacts(self, show: bool) -> None:
        """Draw contact points and forces or not; live, the contacts are not even read when hidden
        (their readback is most of a rigid scene's frame cost, benchmarks/bench_viewer.py)."""
        with self._lock:
            self.show_contacts = bool(show)
            self._sync_widget("contacts_box", self.show_contacts)
            if self.live:
                self.reader.contacts = self.show_contacts and self._has_contacts
                self._frame = self.reader.read()
            self._push(self._frame)

    def set_color_by(self, field: str) -> None:
        if field != "material":
            check_fields(self.content, field, recorded=not self.live)
            if self.live:
                self.reader.fields = sorted(set(self.reader.fields) | {field})
        with self._lock:
            self.color_by = field
            self._sync_widget("color_select", field)
            if self.live:
                self._frame = self.reader.read()
            self._push(self._frame)
            self._refresh_status()

    # -- live ----------------------------------------------------------------------------------------
    def update(self, force: bool = False) -> bool:
        """Live: push the scene's current state if 1/max_fps has passed since the last push (or
        ``force``). Returns whether a frame was sent. While the GUI's pause box is ticked this call
        waits, so a script that calls it after every step pauses with it."""
        if not self.live:
            raise OptionError("update(): only a live viewer follows the scene")
        while self.paused and not self._closed:
            self._refresh_status()
            time.sleep(0.05)
        now = time.perf_counter()
        self._measure_rate(now)
        if not force and now - self._last_push < 1.0 / self.max_fps:
            return False
        with self._lock:
            self._frame = self.reader.read()
            self._push(self._frame)
        if self._last_push:
            inst = 1.0 / max(now - self._last_push, 1e-9)
            self.fps = 0.8 * self.fps + 0.2 * inst if self.fps else inst
        self._last_push = now
        self._refresh_status(force=False)
        return True

    def _measure_rate(self, now: float) -> None:
        """Steps per second of the scene over windows of at least half a second."""
        if self.scene is None:
            return
        steps = int(np.max(self.scene.get_step_count()))
        if self._rate_mark is None or steps < self._rate_mark[1]:
            self._rate_mark = (now, steps)
        elif now - self._rate_mark[0] >= 0.5:
            self.step_rate = (steps - self._rate_mark[1]) / (now - self._rate_mark[0])
            self._rate_mark = (now, steps)

    def run_live(self, steps: int | None = None, duration: float | None = None) -> int:
        """Step the scene while clients watch (until ``steps`` steps or ``duration`` seconds, or
        forever); the GUI shows the step rate. Returns the number of steps taken."""
        if not self.live or self.scene is None:
            raise OptionError("run_live(): needs a live viewer with its scene")
        done = 0
        t0 = time.perf_counter()
        while not self._closed:
            if steps is not None and done >= steps:
                break
            if duration is not None and time.perf_counter() - t0 >= duration:
                break
            if self.paused:
                self.update()
                self._rate_mark = None
                continue
            self.scene.step()
            done += 1
            self.update()
        return done

    # -- replay loop -----------------------------------------------------------------------------------
    def serve(self, duration: float | None = None) -> None:
        """Block (replay: advancing records while ``play`` is ticked) until ``duration`` seconds pass
        or Ctrl-C."""
        t0 = time.perf_counter()
        while not self._closed:
            if duration is not None and time.perf_counter() - t0 >= duration:
                return
            if not self.live and self.playing and self.recording.n_records > 1:
                k = (self.record_index + 1) % self.recording.n_records
                self.slider.value = k          # the browser's slider follows
                if self.record_index != k:
                    self.show_record(k)
                time.sleep(1.0 / float(self.play_fps.value))
            else:
                time.sleep(0.05)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.server.stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in str(name)) or "_"
