"""Worker process of the Hypothesis fuzz tests of scene files and public setters (issue 19, item 7).

``python fuzz_worker.py scenes|setters EXAMPLES SEED`` runs Hypothesis with EXAMPLES examples and
prints one JSON line: how many inputs were tried, the outcomes (``ok``: a valid result; an error
class name: a refusal by a polyphys error) and, when the property failed, the minimal failing
input with its traceback. The property: **a valid result or a polyphys error** (a subclass of
``polyphys.errors.PolyphysError``) — never another exception, never a crash. It runs in a
subprocess with an address-space limit (``RLIMIT_AS``): a fuzzed size that asks for terabytes meets
a MemoryError (which must come back as a polyphys error) instead of the machine's memory, and a
crash fails the parent test instead of killing pytest.

scenes: a few small valid scene files (kinematic, rigid, MPM, PBD, SPH, the bundled default scene)
are mutated structurally (a value replaced by a hostile one — NaN, inf, 1e308, huge or negative
integers, strings, booleans, lists, tables —, a key deleted or invented, a table replaced) or as
text (truncated, bytes inserted, binary, another encoding); each is parsed, built, stepped twice
and recorded by ``polyphys.run.run_file``. ``run.n_envs`` is kept out of [5, 2**31): a valid count of
that size is a real request for memory, which the worker does not have.

setters: every public get_/set_/control_/apply_ method of the entities of every contract scene
(batched and unbatched) is called with hostile or perturbed arguments (the getter's value with a
scalar replaced, the wrong shape, complex, strings, dicts, ragged lists, 1e39, huge/negative/
duplicate indices). A call given a number beyond the float32 storage must refuse it; then the scene
steps once and must end finite (the NaN policy resets an env whose state overflowed).
"""

from __future__ import annotations

import collections
import inspect
import json
import math
import os
import resource
import sys
import tempfile
import traceback
import warnings
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))

MEMORY_LIMIT = 8 * 2**30
OUTCOMES: collections.Counter = collections.Counter()
FOUND: list[dict] = []           # distinct failures (kind + message head), with one input each


# -- hostile values ----------------------------------------------------------------------------------
SPECIAL = [0, -1, 1, 2**31, 2**63, -2**63, 2**70, 1e308, -1e308, 1e-320, 3.5e38, 1e39, float("nan"),
           float("inf"), -float("inf"), 0.5, "", "nope", "1.0", True, False, [], {}, [0, 0], [1, 2, 3],
           [1e30] * 3, [[1, 2], [3]], {"a": 1}]

scalars = st.one_of(
    st.sampled_from(SPECIAL),
    st.integers(-2**70, 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
    st.booleans(),
)
hostile = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                        st.dictionaries(st.text(max_size=4), inner, max_size=3)),
                       max_leaves=8)


# -- scene files ---------------------------------------------------------------------------------
def _base_scenes() -> list[dict]:
    from polyphys.registry import registry

    try:
        import tomllib as toml
    except ModuleNotFoundError:  # Python 3.10
        import tomli as toml
    from polyphys.run import default_scene_path

    have = {r.name for r in registry().all("solver")}
    sim = {"dt": 0.01, "substeps": 2}
    out = []
    if "kinematic" in have:
        out.append({"scene": {"name": "kin"}, "sim": dict(sim), "entities": [
            {"name": "box", "morph": {"type": "Box", "size": [0.2, 0.1, 0.3], "pos": [0.1, 0.2, 1.0],
                                      "euler": [10, 20, 30]},
             "material": {"type": "Kinematic"}, "init": {"set_dofs_velocity": [0.5, 0, 0.2, 0, 0, 1.5]}},
            {"morph": {"type": "Sphere", "radius": 0.1, "pos": [0, 1, 0.5]}, "material": {"type": "Kinematic"}}],
            "run": {"n_envs": 2, "steps": 3, "record": ["get_pos", "get_quat"]}})
    if "rigid" in have:
        out.append({"scene": {"name": "rigid"}, "sim": dict(sim), "solvers": {"rigid": {"iterations": 10}},
                    "entities": [
                        {"name": "ground", "morph": {"type": "Plane"}, "material": {"type": "Rigid"}},
                        {"name": "box", "morph": {"type": "Box", "size": [0.2, 0.2, 0.1], "pos": [0, 0, 0.2],
                                                  "euler": [5, 10, 0]},
                         "material": {"type": "Rigid", "rho": 500.0},
                         "init": {"set_dofs_velocity": [0.1, 0, 0, 0, 0, 1.0]}},
                        {"morph": {"type": "Capsule", "radius": 0.05, "height": 0.2, "pos": [0.5, 0, 0.3]},
                         "material": {"type": "Rigid"}}],
                    "run": {"n_envs": 0, "steps": 3, "record": ["get_pos"]}})
    if "mpm" in have:
        out.append({"scene": {"name": "mpm"}, "sim": {"dt": 0.004, "substeps": 2},
                    "solvers": {"mpm": {"lower_bound": [0, 0, 0], "upper_bound": [0.4, 0.4, 0.4],
                                        "grid_density": 24.0}},
                    "entities": [{"name": "jelly", "morph": {"type": "Box", "size": [0.1, 0.1, 0.1],
                                                             "pos": [0.2, 0.2, 0.2]},
                                  "material": {"type": "MPM.Elastic", "E": 2e3, "rho": 500.0},
                                  "record": ["get_particles_pos"]}],
                    "run": {"n_envs": 1, "steps": 2}})
    if "pbd" in have:
        out.append({"scene": {"name": "pbd"}, "sim": dict(sim),
                    "solvers": {"pbd": {"lower_bound": [-0.2, -0.2, 0], "upper_bound": [0.2, 0.2, 0.4],
                                        "iterations": 2}},
                    "entities": [{"name": "sand", "morph": {"type": "Box", "size": [0.05, 0.05, 0.05],
                                                            "pos": [0, 0, 0.1]},
                                  "material": {"type": "PBD.Particle"}, "record": ["get_particles_pos"]}],
                    "run": {"n_envs": 2, "steps": 2}})
    if "sph" in have:
        out.append({"scene": {"name": "sph"}, "sim": dict(sim),
                    "solvers": {"sph": {"particle_size": 0.05, "lower_bound": [0, 0, 0],
                                        "upper_bound": [0.4, 0.3, 0.4]}},
                    "entities": [{"name": "water", "morph": {"type": "Box", "size": [0.2, 0.2, 0.1],
                                                             "pos": [0.12, 0.15, 0.06]},
                                  "material": {"type": "SPH.Liquid"}, "record": ["get_particles_pos"]}],
                    "run": {"n_envs": 0, "steps": 2}})
    with open(default_scene_path(), "rb") as fh:
        out.append(toml.load(fh))
    return out


def _toml_key(k: str) -> str:
    if k and all(c.isalnum() or c in "_-" for c in k):
        return k
    return json.dumps(k)


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=True)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_toml_key(str(k))} = {_toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(type(v))


def to_toml(doc: dict) -> str:
    """A TOML document: scalars first, then [tables], then [[arrays of tables]]."""
    lines = []
    for k, v in doc.items():
        if not isinstance(v, dict) and not (isinstance(v, list) and v and all(isinstance(x, dict) for x in v)):
            lines.append(f"{_toml_key(k)} = {_toml_value(v)}")
    for k, v in doc.items():
        if isinstance(v, dict):
            lines.append(f"[{_toml_key(k)}]")
            lines += [f"{_toml_key(str(kk))} = {_toml_value(vv)}" for kk, vv in v.items()]
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for item in v:
                lines.append(f"[[{_toml_key(k)}]]")
                lines += [f"{_toml_key(str(kk))} = {_toml_value(vv)}" for kk, vv in item.items()]
    return "\n".join(lines) + "\n"


def _paths(doc, prefix=()):
    """Every (path, value) of a nested dict/list document."""
    yield prefix, doc
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, (*prefix, i))


def _set(doc, path, value, delete=False):
    import copy

    doc = copy.deepcopy(doc)
    node = doc
    for p in path[:-1]:
        node = node[p]
    if delete:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return doc


@st.composite
def scene_inputs(draw, bases):
    base = draw(st.sampled_from(range(len(bases))))
    doc = bases[base]
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p, _ in _paths(doc) if p]
        path = draw(st.sampled_from(paths))
        op = draw(st.sampled_from(["replace", "replace", "replace", "delete", "invent"]))
        if op == "delete":
            doc = _set(doc, path, None, delete=True)
        elif op == "invent":
            parent = path[:-1]
            node = doc
            for p in parent:
                node = node[p]
            if isinstance(node, dict):
                doc = _set(doc, (*parent, draw(st.sampled_from(["x", "spam", "_secret", "type", "n_envs"]))),
                           draw(hostile))
        else:
            doc = _set(doc, path, draw(hostile))
    # a valid n_envs of millions is a real request for memory, not a defect (see the docstring)
    run = doc.get("run") if isinstance(doc, dict) else None
    if isinstance(run, dict) and isinstance(run.get("n_envs"), int) and not isinstance(run["n_envs"], bool) \
            and 4 < run["n_envs"] < 2**31:
        run["n_envs"] = 3
    try:
        text = to_toml(doc)
    except TypeError:
        text = "x = 1\n"
    raw = text.encode()
    how = draw(st.sampled_from(["text"] * 6 + ["truncate", "insert", "binary", "utf16"]))
    if how == "truncate":
        raw = raw[:draw(st.integers(0, len(raw)))]
    elif how == "insert":
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + draw(st.binary(min_size=1, max_size=4)) + raw[at:]
    elif how == "binary":
        raw = draw(st.binary(max_size=64))
    elif how == "utf16":
        raw = text.encode("utf-16")
    return raw


def _record(outcome: str) -> None:
    OUTCOMES[outcome] += 1


def _found(kind: str, exc: BaseException, given_input) -> None:
    tb = traceback.extract_tb(exc.__traceback__)
    where = f"{Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else "?"
    key = f"{kind}: {type(exc).__name__} at {where}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"
    if all(f["key"].split(": ", 2)[:2] != key.split(": ", 2)[:2] for f in FOUND):   # one per kind and place
        FOUND.append({"key": key, "input": repr(given_input)[:1500], "traceback": traceback.format_exc()[-2500:]})


def fuzz_scenes(n: int, seed: int) -> None:
    from polyphys.errors import PolyphysError
    from polyphys.run import run_file

    bases = _base_scenes()
    tmp = tempfile.mkdtemp(prefix="fuzz_scenes_")

    @settings(max_examples=n, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate])
    @given(scene_inputs(bases))
    def prop(raw):
        path = os.path.join(tmp, "scene.toml")
        with open(path, "wb") as fh:
            fh.write(raw)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = run_file(path, out_dir=os.path.join(tmp, "out"), steps=2, progress=False, plot=False)
        except PolyphysError as exc:
            _record(type(exc).__name__)
            return
        except BaseException as exc:
            _record("RAW " + type(exc).__name__)
            _found("scene file", exc, raw)
            return
        _record("ok")
        assert res.summary["steps"] == 2

    _run_seeded(prop, seed)


# -- setters -----------------------------------------------------------------------------------------
def _setter_scenes() -> list:
    import fault_scenes

    out = []
    for name in fault_scenes.scene_names():
        if not name.startswith("contract:"):
            continue
        for n_envs in (0, 2):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    sc = fault_scenes.build(name, n_envs, 2)
            except Exception:       # a solver without batch support: n_envs=2 is refused
                continue
            sc.step()
            out.append((f"{name} n_envs={n_envs}", sc, sc.get_state()))
    return out


def _methods(entity) -> list[str]:
    return sorted(n for n in dir(entity) if n.split("_")[0] in ("get", "set", "control", "apply")
                  and callable(getattr(entity, n)))


@st.composite
def perturbed(draw, like):
    """A value derived from ``like`` (a getter's result): a scalar replaced, reshaped, cast."""
    a = np.array(like, dtype=float, copy=True)
    op = draw(st.sampled_from(["same", "scalar", "scalar", "shape", "complex", "strings", "list", "scale"]))
    if op == "scalar" and a.size:
        a.reshape(-1)[draw(st.integers(0, a.size - 1))] = draw(st.sampled_from(
            [np.nan, np.inf, -np.inf, 1e39, -1e39, 3.4e38, 1e308, 1e-45, 0.0, -1.0, 1e6]))
        return a
    if op == "shape":
        return np.zeros(draw(st.lists(st.integers(0, 4), max_size=3)))
    if op == "complex":
        return a.astype(complex) + 1j
    if op == "strings":
        return a.astype(str)
    if op == "list":
        return a.tolist()
    if op == "scale":
        return a * draw(st.sampled_from([0.0, -1.0, 1e3, 1e20, 1e40]))
    return a


def _arg_value(draw, entity, method: str, param: inspect.Parameter):
    name = param.name
    if name == "envs_idx":
        return draw(st.one_of(st.none(), st.sampled_from([[0], [1], [0, 1], [1, 0], [0, 0], [2], [-1], 5,
                                                          [0.5], "0", [[0]], []]), hostile))
    if name.endswith("_idx_local") or name.endswith("_idx") or name == "link_idx_local":
        return draw(st.one_of(st.none(), st.sampled_from([[0], 0, [0, 0], [99], [-1], [1.5], "a", [[0]]]),
                              st.lists(st.integers(-3, 12), max_size=4), hostile))
    if method.startswith(("set_", "control_", "apply_")):
        getter = getattr(entity, "get_" + method.split("_", 1)[1], None)
        like = None
        if getter is not None:
            try:
                like = getter()
            except Exception:
                like = None
        if like is not None and np.asarray(like).dtype.kind in "biuf" and draw(st.booleans()):
            return draw(perturbed(like))
    if param.default is not inspect.Parameter.empty and draw(st.booleans()):
        return param.default
    return draw(st.one_of(hostile, st.lists(st.floats(-10, 10), min_size=1, max_size=8)))


@st.composite
def setter_calls(draw, scenes):
    label, scene, state = draw(st.sampled_from(scenes))
    entity = draw(st.sampled_from(scene.entities))
    method = draw(st.sampled_from(_methods(entity)))
    sig = inspect.signature(getattr(entity, method))
    args = {}
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.default is not inspect.Parameter.empty and draw(st.integers(0, 3)) == 0:
            continue          # left at its default
        args[p.name] = _arg_value(draw, entity, method, p)
    return label, scene, state, entity, method, args


def fuzz_setters(n: int, seed: int) -> None:
    from polyphys.errors import PolyphysError

    scenes = _setter_scenes()

    @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck),
              phases=[Phase.generate])
    @given(setter_calls(scenes))
    def prop(call):
        label, scene, state, entity, method, args = call
        what = f"{label} {entity.name}.{method}(**{args!r})"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    getattr(entity, method)(**args)
                    _record("ok")
                    # a number beyond the float32 storage must have been refused, not stored as inf
                    # (a finite value whose consequences overflow — a huge velocity times a lever arm
                    # in forward kinematics — is the NaN policy's: checked after the step below)
                    if method.startswith(("set_", "control_", "apply_")) and _largest(args) > np.finfo(np.float32).max:
                        raise AssertionError(f"{what} was accepted with a value beyond the float32 storage")
                except PolyphysError as exc:
                    _record(type(exc).__name__)
                except BaseException as exc:
                    _record("RAW " + type(exc).__name__)
                    _found(f"{type(entity).__name__}.{method}", exc, what)
                    return
                try:
                    scene.step()
                except PolyphysError as exc:        # nan_policy='reset' by default: should not happen
                    _record("step " + type(exc).__name__)
                    _found("step after " + method, exc, what)
                    return
                bad = [f"{p.name}.{k}" for p in [*scene.solvers, *scene.couplers]
                       for k, v in p.get_state().items() if v.dtype.kind == "f" and not np.all(np.isfinite(v))]
                if bad:
                    raise AssertionError(f"non-finite state {bad} after a step following {what}")
        except BaseException as exc:
            _record("RAW " + type(exc).__name__)
            _found("step after " + method, exc, what)
        finally:
            scene.reset(state=state)

    _run_seeded(prop, seed)


def _largest(value) -> float:
    """The largest finite magnitude among the numbers in ``value`` (nested lists, dicts, arrays)."""
    if isinstance(value, dict):
        return max((_largest(v) for v in value.values()), default=0.0)
    if isinstance(value, (list, tuple)):
        return max((_largest(v) for v in value), default=0.0)
    if isinstance(value, int) and not isinstance(value, bool):
        return float(abs(value)) if abs(value) < 2**1000 else 1e308
    try:
        a = np.asarray(value)
    except Exception:
        return 0.0
    if a.dtype.kind == "O":     # a ragged list or objects: look inside (a 0-d one holds no number)
        return 0.0 if a.ndim == 0 else max((_largest(v) for v in a.ravel()), default=0.0)
    if a.dtype.kind not in "iuf" or a.size == 0:
        return 0.0
    a = a.astype(np.float64)
    a = np.abs(a[np.isfinite(a)])
    return float(a.max()) if a.size else 0.0


def _run_seeded(prop, seed: int) -> None:
    from hypothesis import seed as hseed

    hseed(seed)(prop)()


def main(argv: list[str]) -> int:
    mode, n, seed = argv[0], int(argv[1]), int(argv[2])
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = MEMORY_LIMIT if hard == resource.RLIM_INFINITY else min(MEMORY_LIMIT, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    warnings.simplefilter("ignore")
    (fuzz_scenes if mode == "scenes" else fuzz_setters)(n, seed)
    print(json.dumps({"mode": mode, "tried": sum(OUTCOMES.values()), "outcomes": dict(OUTCOMES.most_common()),
                      "found": FOUND}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
