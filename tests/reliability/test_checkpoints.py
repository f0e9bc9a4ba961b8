"""Checkpoint tampering (issue 19, item 3): a damaged, truncated, foreign or edited file raises
CheckpointError naming what is wrong and leaves the scene exactly as it was (state and step counts);
saving is atomic; a non-finite state is refused by load_checkpoint and reset(state=...).

Before the fix: BadZipFile/EOFError/KeyError/ValueError escaped, a CRC error met after the solvers
were restored left the step counts behind, and edited values (qpos += 1, NaN, negative or
fractional step counts, another dtype) loaded silently.
"""

from __future__ import annotations

import json
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
from polyphys.errors import CheckpointError, OptionError

sys.path.insert(0, str(Path(__file__).parent))
import fault_scenes  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _scene():
    names = fault_scenes.scene_names()
    name = "contract:rigid" if "contract:rigid" in names else names[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fault_scenes.build(name, 2, 2)


def _snapshot(scene) -> dict:
    out = {f"{p.name}.{k}": v for p in fault_scenes.state_owners(scene) for k, v in p.get_state().items()}
    out.update({f"{p.name}.initial.{k}": a.numpy().copy() for p in fault_scenes.state_owners(scene)
                for k, a in (p._initial or {}).items()})
    out["step_count"] = scene.get_step_count()
    return out


def _assert_same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k], equal_nan=True), k


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A checkpoint after 3 steps, its arrays, and a scene stepped 5 further steps (another state)."""
    path = tmp_path_factory.mktemp("ck") / "ck.npz"
    scene = _scene()
    for _ in range(3):
        scene.step()
    scene.save_checkpoint(path)
    for _ in range(5):
        scene.step()
    with np.load(path) as npz:
        arrays = {k: npz[k] for k in npz.files}
    return scene, path, arrays


def _write_npz(path, arrays: dict, redigest: bool) -> None:
    """Write ``arrays`` as a checkpoint; ``redigest``: recompute the content digest (a forged file
    that passes the digest, so the checks behind it must catch the change)."""
    arrays = dict(arrays)
    meta = json.loads(arrays.pop("__meta__").tobytes().decode())
    if redigest:
        from polyphys.scene import _content_digest

        meta["digest"] = _content_digest(arrays)
    arrays["__meta__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


def _refused(scene, path, match: str) -> None:
    before = _snapshot(scene)
    with pytest.raises(CheckpointError, match=match):
        scene.load_checkpoint(path)
    _assert_same(before, _snapshot(scene))


def _qpos_key(arrays):
    return next(k for k in arrays if k.endswith("state/qpos") or k.endswith("state/pos"))


def test_roundtrip_still_bit_exact(saved, tmp_path):
    scene, path, _ = saved
    ref = _scene()
    for _ in range(3):
        ref.step()
    scene.load_checkpoint(path)
    for _ in range(4):
        scene.step()
        ref.step()
    _assert_same(_snapshot(ref), _snapshot(scene))


@pytest.mark.parametrize("cut", [0, 10, 100, 0.5, -1])
def test_truncated_files_are_refused(saved, tmp_path, cut):
    scene, path, _ = saved
    data = path.read_bytes()
    n = int(len(data) * cut) if isinstance(cut, float) else (len(data) + cut if cut < 0 else cut)
    bad = tmp_path / "cut.npz"
    bad.write_bytes(data[:n])
    _refused(scene, bad, "not a polyphys checkpoint, or a damaged/truncated one")


def test_flipped_bytes_are_refused(saved, tmp_path):
    """Every 97th byte position flipped in turn (CRC errors, broken headers, changed values):
    always a CheckpointError, never another exception, and the scene unchanged."""
    scene, path, _ = saved
    data = bytearray(path.read_bytes())
    bad = tmp_path / "flip.npz"
    current = scene.save_checkpoint(tmp_path / "current.npz")
    before = _snapshot(scene)
    scene.load_checkpoint(path)
    original = _snapshot(scene)
    scene.load_checkpoint(current)
    refused = 0
    for pos in range(0, len(data), 97):
        mutated = bytearray(data)
        mutated[pos] ^= 0xFF
        bad.write_bytes(bytes(mutated))
        try:
            scene.load_checkpoint(bad)
        except CheckpointError:
            refused += 1        # the usual outcome
        else:                   # a byte the zip format ignores (a timestamp, padding): the same data
            _assert_same(original, _snapshot(scene))
            scene.load_checkpoint(current)
        _assert_same(before, _snapshot(scene))
    assert refused > 0.8 * (len(data) / 97)


def test_foreign_files_are_refused(saved, tmp_path):
    scene, _, _ = saved
    text = tmp_path / "text.npz"
    text.write_text("not a checkpoint")
    _refused(scene, text, "not a polyphys checkpoint")
    npy = tmp_path / "one.npz"
    np.save(open(npy, "wb"), np.arange(4))
    _refused(scene, npy, "not a polyphys checkpoint")
    plain = tmp_path / "plain.npz"
    np.savez(plain, a=np.arange(3))
    _refused(scene, plain, r"not a polyphys checkpoint \(metadata: no __meta__")
    zf = tmp_path / "zip.npz"
    with zipfile.ZipFile(zf, "w") as z:
        z.writestr("readme.txt", "hello")
    _refused(scene, zf, "not a polyphys checkpoint")
    pickled = tmp_path / "obj.npz"
    np.savez(pickled, __meta__=np.array([{"a": 1}], dtype=object))
    _refused(scene, pickled, "not a polyphys checkpoint")
    _refused(scene, tmp_path / "missing.npz", "cannot read the checkpoint")
    _refused(scene, tmp_path, "cannot read the checkpoint")


@pytest.mark.parametrize("edit", ["qpos+1", "nan", "step-5", "step1.5", "dtype64"])
def test_edited_values_fail_the_content_digest(saved, tmp_path, edit):
    scene, _, arrays = saved
    arrays = dict(arrays)
    q = _qpos_key(arrays)
    if edit == "qpos+1":
        arrays[q] = arrays[q] + 1
    elif edit == "nan":
        arrays[q] = arrays[q].copy()
        arrays[q].flat[1] = np.nan
    elif edit == "step-5":
        arrays["__step_count__"] = arrays["__step_count__"] - 5
    elif edit == "step1.5":
        arrays["__step_count__"] = arrays["__step_count__"] + 0.5
    else:
        arrays[q] = arrays[q].astype(np.float64)
    bad = tmp_path / "edit.npz"
    _write_npz(bad, arrays, redigest=False)
    _refused(scene, bad, "content digest mismatch")


@pytest.mark.parametrize("edit", ["nan_state", "inf_initial", "step-5", "step1.5", "dtype64", "shape",
                                  "missing", "unknown", "format1"])
def test_forged_files_with_a_matching_digest_are_refused(saved, tmp_path, edit):
    """The digest detects damage, not intent: a file rewritten with a recomputed digest must still
    pass every structural and value check."""
    scene, _, arrays = saved
    arrays = dict(arrays)
    q = _qpos_key(arrays)
    match = {"nan_state": "not finite", "inf_initial": "initial.*not finite", "step-5": "step counts",
             "step1.5": "step counts", "dtype64": "dtype float64; this scene stores float32",
             "shape": "shape", "missing": "lacks", "unknown": "belong to no solver", "format1": "format 1"}[edit]
    if edit == "nan_state":
        arrays[q] = arrays[q].copy()
        arrays[q].flat[-1] = np.nan
    elif edit == "inf_initial":
        k = q.replace("state/", "initial/")
        arrays[k] = arrays[k].copy()
        arrays[k].flat[0] = np.inf
    elif edit == "step-5":
        arrays["__step_count__"] = arrays["__step_count__"] - 5
    elif edit == "step1.5":
        arrays["__step_count__"] = arrays["__step_count__"] + 0.5
    elif edit == "dtype64":
        arrays[q] = arrays[q].astype(np.float64)
    elif edit == "shape":
        arrays[q] = arrays[q][:, :-1]
    elif edit == "missing":
        del arrays[q]
    elif edit == "unknown":
        arrays["solver/nope/state/x"] = np.zeros(3)
    else:
        meta = json.loads(arrays["__meta__"].tobytes().decode())
        meta["format"] = 1
        arrays["__meta__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    bad = tmp_path / "forged.npz"
    _write_npz(bad, arrays, redigest=True)
    _refused(scene, bad, match)


def test_failure_while_applying_restores_everything(saved, tmp_path, monkeypatch):
    """A plugin refusing data in load() after the checks passed: the scene is put back."""
    scene, path, _ = saved
    solver = scene.solvers[-1]
    original, calls = solver.load_extra_state, []

    def refuse(data):           # refuses the checkpoint's data, accepts the restore of the old data
        calls.append(1)
        if len(calls) == 1:
            raise OptionError("injected refusal")
        original(data)

    monkeypatch.setattr(solver, "load_extra_state", refuse)
    _refused(scene, path, "injected refusal; the scene is unchanged")


def test_save_is_atomic(saved, tmp_path, monkeypatch):
    scene, path, _ = saved
    target = tmp_path / "atomic.npz"
    scene.save_checkpoint(target)
    good = target.read_bytes()

    def broken_savez(fh, **arrays):
        fh.write(b"PK\x03\x04 half a file")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez", broken_savez)
    with pytest.raises(OSError, match="No space left"):
        scene.save_checkpoint(target)
    assert target.read_bytes() == good
    assert sorted(p.name for p in tmp_path.iterdir()) == ["atomic.npz"]     # no temporary file left


def test_non_finite_state_is_not_saved(tmp_path):
    """After nan_policy='raise' the NaN stays in the state: saving it would write a file that
    load_checkpoint refuses, so save_checkpoint refuses it and writes nothing."""
    from polyphys.errors import SimulationError

    names = fault_scenes.scene_names()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scene = fault_scenes.build("contract:rigid" if "contract:rigid" in names else names[0], 2, 2,
                                   nan_policy="raise")
    arr = scene.solvers[0].state_arrays()["qvel" if "contract:rigid" in names else next(iter(
        scene.solvers[0].state_arrays()))]
    host = arr.numpy()
    host[1].reshape(-1)[0] = np.nan
    arr.assign(host)
    with pytest.raises(SimulationError, match=r"env\(s\) \[1\]"):
        scene.step()
    with pytest.raises(CheckpointError, match="save_checkpoint.*not finite"):
        scene.save_checkpoint(tmp_path / "nan.npz")
    assert list(tmp_path.iterdir()) == []


def test_reset_state_with_nan_is_refused_before_any_write(saved):
    scene, _, _ = saved
    st = scene.get_state()
    before = _snapshot(scene)
    name = next(iter(st["solvers"]))
    k = next(k for k, v in st["solvers"][name].items() if v.dtype.kind == "f")
    bad = {**st, "solvers": {**st["solvers"], name: {**st["solvers"][name]}}}
    arr = bad["solvers"][name][k].astype(np.float64)   # float64 input: checked after conversion
    arr[1].flat[0] = np.nan
    bad["solvers"][name][k] = arr
    with pytest.raises(OptionError, match=rf"{k}: value nan at env 1.*not finite in float32 storage"):
        scene.reset(state=bad)
    arr[1].flat[0] = 1e39                # finite in float64, inf in the float32 storage
    with pytest.raises(OptionError, match="not finite in float32 storage"):
        scene.reset(state=bad)
    _assert_same(before, _snapshot(scene))
    scene.reset(state=bad, envs_idx=[0])  # env 1's bad row is not written: accepted
    arr[1].flat[0] = 1.0
    bad["solvers"][name][k] = arr.astype(complex)
    with pytest.raises(OptionError, match="dtype complex128: expected real numbers"):
        scene.reset(state=bad)
    with pytest.raises(OptionError, match="expected a dict from scene.get_state"):
        scene.reset(state={"solvers": 3})


def test_digest_covers_every_array(saved):
    """The digest changes when any single entry changes (name, dtype, shape or bytes)."""
    from polyphys.scene import _content_digest

    _, _, arrays = saved
    data = {k: v for k, v in arrays.items() if k != "__meta__"}
    base = _content_digest(data)
    for k, v in data.items():
        if v.size == 0:
            continue
        changed = v.copy()
        changed.view(np.uint8).flat[0] ^= 1
        assert _content_digest({**data, k: changed}) != base, k
    k = next(iter(data))
    assert _content_digest({**{kk: vv for kk, vv in data.items() if kk != k}, k + "x": data[k]}) != base
    assert _content_digest(dict(reversed(list(data.items())))) == base      # independent of order
