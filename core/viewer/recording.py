"""Recorded states: what ``polyphys run`` writes and what the viewer replays and USD exports.

A recording is a folder (``RUN_DIR/states/``, docs/viewer.md "Recording format"):

- ``meta.json``: format version, the scene's static content (bodies with their geoms, particle sets,
  surfaces, cameras; :meth:`Content.to_meta`), and per array its dtype and per-record shape;
- one raw little-endian file per frame array, ``<key>.bin``, records back to back (float32 link poses,
  particle positions, surface vertices, particle fields; ``step.bin`` int64, ``time.bin`` float64),
  appended while the run goes, so memory stays flat whatever the run length; read back with
  ``numpy.memmap``;
- contacts, whose count changes per step, as flat ``contact.{pos,force,env}.bin`` with the per-record
  counts in ``contact.count.bin``;
- static arrays as ``.npy``: ``mesh<k>.verts/.faces`` (mesh and heightfield geoms),
  ``surface<i>.tris`` (surface triangles).
"""

from __future__ import annotations

import json
import os

import numpy as np

from ..errors import OptionError, PolyphysError
from .content import Content, FrameReader, check_fields, scene_content

FORMAT = 1
META = "meta.json"
STATES_DIR = "states"


class StatesError(PolyphysError, ValueError):
    """A run folder without (usable) recorded states."""


class Recorder:
    """Records a built scene's drawable state into a states folder.

    ``Recorder(scene, path, every=1)`` records the current state at once and then after every
    ``every``-th step (it registers itself as a post-step recorder of the scene), until
    :meth:`close`. ``attach=False`` leaves the calls to you (:meth:`record`), which is how
    ``polyphys run`` records at its own cadence.

    :param fields: particle getters to record for colouring (``"vel"`` → ``get_particles_vel``, stored
        as speed); an unknown name raises, naming the known ones.
    :param contacts: record contact points and forces of entities with ``get_contacts``.
    """

    def __init__(self, scene, path, every: int = 1, fields=(), contacts: bool = True, attach: bool = True,
                 name: str = "scene", record_now: bool = True):
        if isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 1:
            raise OptionError(f"Recorder(every={every!r}): must be an integer >= 1")
        self.scene = scene
        self.path = os.fspath(path)
        self.every = int(every)
        self.content: Content = scene_content(scene, name)
        self.reader = FrameReader(scene, self.content, fields=fields, contacts=contacts)
        for p in self.content.particles:
            p.recorded_fields = [f for f in self.reader.fields if f in p.fields]
        self.n_records = 0
        self._files: dict[str, object] = {}
        self._shapes: dict[str, list] = {}
        self._dtypes: dict[str, str] = {}
        self._closed = False
        os.makedirs(self.path, exist_ok=True)
        for fname in os.listdir(self.path):          # a fresh recording: no stale arrays of a former run
            if fname.endswith(".bin") or fname.endswith(".npy") or fname == META:
                os.remove(os.path.join(self.path, fname))
        for k, (v, f) in enumerate(self.content.meshes):
            np.save(os.path.join(self.path, f"mesh{k}.verts.npy"), np.asarray(v, np.float32))
            np.save(os.path.join(self.path, f"mesh{k}.faces.npy"), np.asarray(f, np.int32))
        for i, s in enumerate(self.content.surfaces):
            np.save(os.path.join(self.path, f"surface{i}.tris.npy"), np.asarray(s.triangles, np.int32))
        self._write_meta(complete=False)
        if record_now:
            self.record()
        if attach:
            scene.add_recorder(self._on_step)

    # -- writing -----------------------------------------------------------------------------------
    def _on_step(self, scene) -> None:
        if self._closed:
            return
        if int(np.max(scene.get_step_count())) % self.every == 0:
            self.record()

    def _append(self, key: str, arr: np.ndarray, per_record: bool = True) -> None:
        a = np.asarray(arr)
        if not a.flags.c_contiguous:
            a = a.copy()
        fh = self._files.get(key)
        if fh is None:
            fh = self._files[key] = open(os.path.join(self.path, f"{key}.bin"), "ab")
            self._dtypes[key] = a.dtype.str
            self._shapes[key] = list(a.shape) if per_record else list(a.shape[1:])
        elif per_record and list(a.shape) != self._shapes[key]:
            raise StatesError(f"recording {key}: shape changed from {self._shapes[key]} to {list(a.shape)}")
        fh.write(a.tobytes())

    def record(self, step: int | None = None, time: float | None = None) -> None:
        """Append the scene's current state as one record (step and time default to the scene's)."""
        if self._closed:
            raise StatesError(f"recording {self.path} is closed")
        frame = self.reader.read()
        if step is None:
            step = int(np.max(self.scene.get_step_count()))
        if time is None:
            time = float(np.max(self.scene.get_time()))
        self._append("step", np.array([step], np.int64)[0])
        self._append("time", np.array([time], np.float64)[0])
        for k, v in frame.items():
            if k.startswith("contact."):
                continue
            self._append(k, np.asarray(v))
        if self.reader.contacts:
            self._append("contact.count", np.array([len(frame["contact.env"])], np.int64)[0])
            self._append("contact.pos", np.asarray(frame["contact.pos"], np.float32).reshape(-1, 3), per_record=False)
            self._append("contact.force", np.asarray(frame["contact.force"], np.float32).reshape(-1, 3),
                         per_record=False)
            self._append("contact.env", np.asarray(frame["contact.env"], np.int32), per_record=False)
        self.n_records += 1
        if self.n_records == 1:
            self._write_meta(complete=False)     # the arrays' shapes: a run that dies stays readable

    def _write_meta(self, complete: bool) -> None:
        meta = {"format": FORMAT, "complete": complete, "n_records": self.n_records, "every": self.every,
                "contacts": bool(self.reader.contacts) if hasattr(self, "reader") else False,
                "arrays": {k: {"dtype": self._dtypes[k], "shape": self._shapes[k],
                               "ragged": k in ("contact.pos", "contact.force", "contact.env")}
                           for k in self._shapes},
                "content": self.content.to_meta()}
        tmp = os.path.join(self.path, META + ".tmp")
        with open(tmp, "w") as fh:
            json.dump(meta, fh, indent=1)
        os.replace(tmp, os.path.join(self.path, META))

    def close(self) -> str:
        """Flush the arrays and write meta.json; returns the folder. Idempotent."""
        if not self._closed:
            for fh in self._files.values():
                fh.close()
            self._closed = True
            self._write_meta(complete=True)
        return self.path

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def nbytes(self) -> int:
        return sum(os.path.getsize(os.path.join(self.path, f)) for f in os.listdir(self.path))


# -- reading --------------------------------------------------------------------------------------
def states_dir(path) -> str:
    """The states folder of a run folder (or the states folder itself); StatesError if none."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise StatesError(f"{path}: no such run folder (looked at {os.path.abspath(path)})")
    for cand in (path, os.path.join(path, STATES_DIR)):
        if os.path.isfile(os.path.join(cand, META)):
            return cand
    raise StatesError(f"{path}: no recorded states (no {STATES_DIR}/{META}); `polyphys run` records them "
                      f"unless [run.states] enabled = false, and a script records them with "
                      f"polyphys.viewer.Recorder(scene, path)")


class Recording:
    """A states folder opened for reading (arrays memory-mapped)."""

    def __init__(self, path):
        self.path = states_dir(path)
        with open(os.path.join(self.path, META)) as fh:
            try:
                meta = json.load(fh)
            except json.JSONDecodeError as exc:
                raise StatesError(f"{self.path}/{META}: not valid JSON ({exc})") from None
        if meta.get("format") != FORMAT:
            raise StatesError(f"{self.path}: states format {meta.get('format')!r}; this polyphys reads {FORMAT}")
        self.meta = meta
        cm = meta["content"]
        meshes = [(np.load(os.path.join(self.path, f"mesh{k}.verts.npy")),
                   np.load(os.path.join(self.path, f"mesh{k}.faces.npy"))) for k in range(cm["n_meshes"])]
        tris = [np.load(os.path.join(self.path, f"surface{i}.tris.npy")) for i in range(len(cm["surfaces"]))]
        self.content = Content.from_meta(cm, meshes, tris)
        arrays = meta["arrays"]
        if "step" not in arrays:
            raise StatesError(f"{self.path}: the recording holds no record (the run stopped before its "
                              f"first recorded step)")
        n = self._rows(arrays["step"], "step")
        if meta.get("complete"):
            n = min(n, int(meta["n_records"]))
        for key, spec in arrays.items():            # an unfinished run: the records every array holds
            if not spec.get("ragged") and int(np.prod(spec["shape"], dtype=np.int64)) > 0:
                n = min(n, self._rows(spec, key))
        self.arrays: dict[str, np.ndarray] = {}
        for key, spec in arrays.items():
            if not spec.get("ragged"):
                self.arrays[key] = self._map(key, spec, n)
        if "contact.count" in arrays:
            counts = np.asarray(self.arrays["contact.count"][:n], dtype=np.int64)
            avail = min(self._rows(spec, k) for k, spec in arrays.items() if spec.get("ragged"))
            while n > 0 and int(counts[:n].sum()) > avail:
                n -= 1
            for key, spec in arrays.items():
                if spec.get("ragged"):
                    self.arrays[key] = self._map(key, spec, int(counts[:n].sum()))
        if n == 0:
            raise StatesError(f"{self.path}: the recording holds no complete record")
        self.n_records = n
        self.steps = np.asarray(self.arrays["step"][:n])
        self.times = np.asarray(self.arrays["time"][:n])
        if "contact.count" in self.arrays:
            self.contact_offsets = np.concatenate([[0], np.cumsum(self.arrays["contact.count"][:n])])
        else:
            self.contact_offsets = None

    def _rows(self, spec: dict, key: str) -> int:
        """Whole rows (records, or contacts for the ragged arrays) the file of ``key`` holds."""
        path = os.path.join(self.path, f"{key}.bin")
        size = os.path.getsize(path) if os.path.exists(path) else 0
        per = np.dtype(spec["dtype"]).itemsize * int(np.prod(spec["shape"], dtype=np.int64))
        return int(size // per) if per else 0

    def _map(self, key: str, spec: dict, n: int) -> np.ndarray:
        shape = (n, *spec["shape"])
        if n == 0 or int(np.prod(shape)) == 0:
            return np.zeros(shape, dtype=np.dtype(spec["dtype"]))
        return np.memmap(os.path.join(self.path, f"{key}.bin"), dtype=np.dtype(spec["dtype"]), mode="r",
                         shape=shape)

    @property
    def has_contacts(self) -> bool:
        return self.contact_offsets is not None

    def frame(self, k: int) -> dict:
        """Record k as a frame dict (the keys FrameReader.read() returns)."""
        if not 0 <= k < self.n_records:
            raise OptionError(f"record {k}: the recording has records 0..{self.n_records - 1}")
        out = {key: np.asarray(a[k]) for key, a in self.arrays.items()
               if key not in ("step", "time") and not key.startswith("contact.")}
        if self.has_contacts:
            a, b = int(self.contact_offsets[k]), int(self.contact_offsets[k + 1])
            out["contact.pos"] = np.asarray(self.arrays["contact.pos"][a:b])
            out["contact.force"] = np.asarray(self.arrays["contact.force"][a:b])
            out["contact.env"] = np.asarray(self.arrays["contact.env"][a:b])
        return out

    def check_fields(self, fields) -> list:
        return check_fields(self.content, fields, recorded=True)

    def nbytes(self) -> int:
        return sum(os.path.getsize(os.path.join(self.path, f)) for f in os.listdir(self.path))
