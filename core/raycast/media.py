"""Writing images and videos: PNG with the standard library (zlib), videos through imageio — mp4
with imageio-ffmpeg, a GIF when ffmpeg is not there (docs/cameras.md, "Videos")."""

from __future__ import annotations

import os
import struct
import zlib

import numpy as np

from ..errors import OptionError


def _rgb8(image) -> np.ndarray:
    a = np.asarray(image)
    if a.dtype != np.uint8:
        a = np.clip(np.round(np.asarray(a, float) * 255.0), 0, 255).astype(np.uint8)
    if a.ndim == 2:
        a = np.repeat(a[:, :, None], 3, axis=2)
    if a.ndim != 3 or a.shape[2] not in (3, 4):
        raise OptionError(f"image of shape {np.shape(image)}: expected (H, W), (H, W, 3) or (H, W, 4)")
    return np.ascontiguousarray(a)


def check_writable(path: str, what: str) -> str:
    """Create the parent folder of ``path`` and check a file can be written there; an OptionError
    naming ``what`` and the path otherwise."""
    path = os.fspath(path)
    parent = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(parent, exist_ok=True)
        if os.path.isdir(path):
            raise OSError(f"{path!r} is a folder")
        with open(path, "ab"):
            pass
    except OSError as exc:
        raise OptionError(f"{what} = {path!r}: cannot be written ({exc})") from None
    return path


def write_png(path, image) -> str:
    """Write an rgb (H, W, 3) image in [0, 1] (or uint8; grey (H, W) too) as an 8-bit PNG."""
    a = _rgb8(image)
    h, w, c = a.shape
    raw = b"".join(b"\x00" + a[r].tobytes() for r in range(h))

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2 if c == 3 else 6, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))
    path = check_writable(path, "png path")
    with open(path, "wb") as fh:
        fh.write(png)
    return path


def depth_to_rgb(depth, lo=None, hi=None) -> np.ndarray:
    """A depth image as grey levels (near white, far black; no hit black)."""
    d = np.asarray(depth, float)
    fin = np.isfinite(d)
    if not fin.any():
        return np.zeros(d.shape + (3,))
    lo = float(d[fin].min()) if lo is None else lo
    hi = float(d[fin].max()) if hi is None else hi
    g = np.where(fin, 1.0 - (d - lo) / max(hi - lo, 1e-12), 0.0)
    return np.repeat(np.clip(g, 0, 1)[..., None], 3, axis=-1)


class VideoWriter:
    """Frames to an mp4 (imageio-ffmpeg) or, without ffmpeg, a GIF next to the requested path.

    Needs the optional extra ``video`` (imageio, imageio-ffmpeg); ``path`` is checked for writing
    when the writer is made, so a bad path fails before a long run."""

    def __init__(self, path, fps: float):
        from ..viewer._extras import require

        self.imageio = require("imageio", "video")
        path = os.fspath(path)
        if not (isinstance(fps, (int, float)) and not isinstance(fps, bool) and fps > 0):
            raise OptionError(f"video fps = {fps!r}: must be a number > 0")
        self.fps = float(fps)
        ext = os.path.splitext(path)[1].lower()
        self.format = "gif" if ext == ".gif" else "mp4"
        if self.format == "mp4":
            try:
                import imageio_ffmpeg  # noqa: F401
            except ImportError:
                self.format = "gif"
                path = os.path.splitext(path)[0] + ".gif"
        self.path = check_writable(path, "video path")
        self.n_frames = 0
        self._frames: list = []
        self._writer = None
        if self.format == "mp4":
            self._writer = self.imageio.get_writer(self.path, format="FFMPEG", mode="I", fps=self.fps,
                                                   codec="libx264", quality=8, macro_block_size=1,
                                                   ffmpeg_log_level="error")

    def append(self, image) -> None:
        a = _rgb8(image)[..., :3]
        if self._writer is not None:
            h, w = a.shape[:2]
            if h % 2 or w % 2:      # yuv420p needs even sides
                a = np.pad(a, ((0, h % 2), (0, w % 2), (0, 0)), mode="edge")
            self._writer.append_data(a)
        else:
            self._frames.append(a)
        self.n_frames += 1

    def close(self) -> str:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        elif self._frames:
            self.imageio.mimsave(self.path, self._frames, format="GIF", duration=1000.0 / self.fps, loop=0)
            self._frames = []
        return self.path
