"""The contract test helpers: run any registered solver through what its capabilities promise.

Each check builds the small scene the solver's spec names (``SolverSpec.contract``) and compares
states bit for bit (``get_state()`` dicts). Used by tests/core/test_contract.py for every
registered solver, a third party's included; plugin authors can call the checks directly.
"""

from __future__ import annotations

import numpy as np

from .errors import PolyphysError
from .options import SimOptions
from .registry import Registered
from .specs import load_target


class ContractFailure(PolyphysError, AssertionError):
    pass


def build_scene(rec: Registered, n_envs: int, seed: int = 0, drive: bool = True, **sim):
    """Build the solver's contract scene; ``drive`` gives every env a different state."""
    from .scene import Scene

    made = load_target(rec.spec.contract.factory)()
    entities, options, drive_fn = made[:3]
    scene_sim = dict(made[3]) if len(made) > 3 and made[3] else {}
    scene_sim.setdefault("dt", 0.01)
    scene_sim.setdefault("substeps", 2)
    sim = {**scene_sim, **sim}
    kw = {rec.name: options} if options is not None else {}
    scene = Scene(sim=SimOptions(**sim), **kw)
    for morph, material, add_kw in entities:
        scene.add_entity(morph, material=material, **(add_kw or {}))
    scene.build(n_envs=n_envs)
    if drive and drive_fn is not None:
        drive_fn(scene, np.random.default_rng(seed))
    return scene


def solver_state(scene, name: str) -> dict:
    return scene.solver(name).get_state()


def assert_states_equal(a: dict, b: dict, what: str, rows_a=slice(None), rows_b=slice(None)) -> None:
    if set(a) != set(b):
        raise ContractFailure(f"{what}: state keys differ: {sorted(a)} vs {sorted(b)}")
    for k in a:
        x, y = np.asarray(a[k])[rows_a], np.asarray(b[k])[rows_b]
        if x.shape != y.shape or not np.array_equal(x, y, equal_nan=True):
            diff = np.nan if x.shape != y.shape else float(np.nanmax(np.abs(x.astype(float) - y.astype(float))))
            raise ContractFailure(f"{what}: state {k!r} differs (shapes {x.shape} vs {y.shape}, "
                                  f"max |diff| {diff})")


def _steps(scene, n):
    for _ in range(n):
        scene.step()


def check_batch_shapes(rec: Registered, device: str = "cpu") -> None:
    for n_envs, n in ((0, 1), (3, 3)):
        sc = build_scene(rec, n_envs, device=device)
        for k, arr in sc.solver(rec.name).state_arrays().items():
            if arr.shape[0] != n:
                raise ContractFailure(f"state array {k!r} has batch size {arr.shape[0]} for n_envs={n_envs}; "
                                      f"expected {n}")
        if sc.capabilities().batch is False:
            break


def check_batch_equals_singles(rec: Registered, n: int = 3, device: str = "cpu") -> None:
    steps = rec.spec.contract.steps
    batched = build_scene(rec, n, graph_capture=False, cpu_threads=1, device=device)
    start = solver_state(batched, rec.name)
    _steps(batched, steps)
    end = solver_state(batched, rec.name)
    for i in range(n):
        single = build_scene(rec, 1, drive=False, graph_capture=False, cpu_threads=1, device=device)
        st = single.get_state()
        st["solvers"][rec.name] = {k: v[i:i + 1] for k, v in start.items()}
        single.reset(st)
        _steps(single, steps)
        assert_states_equal(end, solver_state(single, rec.name), f"n_envs={n} env {i} vs a single-env run",
                            rows_a=slice(i, i + 1))


def check_reset_isolation(rec: Registered, device: str = "cpu") -> None:
    steps = rec.spec.contract.steps
    sc = build_scene(rec, 2, device=device)
    _steps(sc, steps)
    before = solver_state(sc, rec.name)
    sc.reset(envs_idx=[0])
    after = solver_state(sc, rec.name)
    assert_states_equal(before, after, "reset(envs_idx=[0]) touched env 1", rows_a=slice(1, 2), rows_b=slice(1, 2))
    fresh = build_scene(rec, 2, drive=False, device=device)
    for i in range(steps):
        sc.step()
        fresh.step()
        assert_states_equal(solver_state(sc, rec.name), solver_state(fresh, rec.name),
                            f"env 0 after reset vs a fresh scene, step {i + 1}", rows_a=slice(0, 1), rows_b=slice(0, 1))


def check_checkpoint(rec: Registered, path, device: str = "cpu") -> None:
    steps = rec.spec.contract.steps
    n = 2 if _batch(rec) else 0
    sc = build_scene(rec, n, device=device)
    _steps(sc, steps // 2)
    sc.save_checkpoint(path)
    _steps(sc, steps)
    ref = solver_state(sc, rec.name)
    sc.load_checkpoint(path)
    _steps(sc, steps)
    assert_states_equal(ref, solver_state(sc, rec.name), "continuation after load_checkpoint")
    other = build_scene(rec, n, drive=False, device=device)
    other.load_checkpoint(path)
    _steps(other, steps)
    assert_states_equal(ref, solver_state(other, rec.name), "checkpoint loaded into a new scene")


def check_capture(rec: Registered, device: str = "cpu") -> None:
    steps = rec.spec.contract.steps
    n = 2 if _batch(rec) else 0
    a = build_scene(rec, n, graph_capture=False, device=device)
    b = build_scene(rec, n, graph_capture=True, device=device)
    _steps(a, steps)
    _steps(b, steps)
    assert_states_equal(solver_state(a, rec.name), solver_state(b, rec.name), "captured vs uncaptured")


def check_threads(rec: Registered, device: str = "cpu") -> None:
    steps = rec.spec.contract.steps
    a = build_scene(rec, 3, cpu_threads=1, device=device)
    b = build_scene(rec, 3, cpu_threads=2, device=device)
    _steps(a, steps)
    _steps(b, steps)
    assert_states_equal(solver_state(a, rec.name), solver_state(b, rec.name), "cpu_threads=2 vs 1")


def check_threads_one_env(rec: Registered, device: str = "cpu") -> None:
    """One env stepped by 1, 2 and 3 worker threads (a solver may split a stage's elements across
    them, core/simulator.py): the same trajectory bit for bit, captured and uncaptured."""
    steps = rec.spec.contract.steps
    n = 1 if _batch(rec) else 0
    ref = None
    for capture in (True, False):
        for threads in ((1, 2, 3) if capture else (2, 3)):
            sc = build_scene(rec, n, cpu_threads=threads, graph_capture=capture, device=device)
            states = []
            for _ in range(steps):
                sc.step()
                states.append(solver_state(sc, rec.name))
            if ref is None:
                ref = states
                continue
            for i, (a, b) in enumerate(zip(ref, states, strict=True)):
                assert_states_equal(a, b, f"one env, cpu_threads={threads} ({'captured' if capture else 'uncaptured'}) "
                                          f"vs cpu_threads=1, step {i + 1}")


def check_precision(rec: Registered, precision: str, device: str = "cpu") -> None:
    import warp as wp

    sc = build_scene(rec, 2 if _batch(rec) else 0, precision=precision, device=device)
    _steps(sc, 2)
    want = wp.float64 if precision == "64" else wp.float32
    for k, arr in sc.solver(rec.name).state_arrays().items():
        st = getattr(arr.dtype, "_wp_scalar_type_", arr.dtype)
        if st in (wp.float32, wp.float64) and st != want:
            raise ContractFailure(f"precision {precision}: state {k!r} is {st.__name__}")
        if st in (wp.float32, wp.float64) and not np.all(np.isfinite(arr.numpy())):
            raise ContractFailure(f"precision {precision}: state {k!r} is not finite after 2 steps")


def _batch(rec: Registered) -> bool:
    return rec.spec.capabilities.batch


def check_kernel_modules(rec: Registered, device: str = "cpu") -> None:
    """The Warp modules a solver declares in ``kernel_modules(layout)`` (compiled before build,
    docs/running.md "First run") are the ones its first step launches, with every overload declared:
    none is compiled again by that step. Checked in each declared precision."""
    from .startup import rebuilt_modules

    for precision in sorted(rec.spec.capabilities.precisions):
        sc = build_scene(rec, 0, precision=precision, device=device)
        sc.step()
        mine = [r for r in sc.kernel_loads if r.owner == rec.name]
        problems = rebuilt_modules(mine, sc.layout.device)
        if problems:
            raise ContractFailure(f"precision {precision}: " + "; ".join(problems))


def checks_for(rec: Registered, device: str = "cpu") -> list[str]:
    """The checks a solver's declared capabilities call for on ``device``.

    The bit-exact checks (batch = singles, reset isolation, checkpoint, capture, threads) run on the
    devices the solver declares deterministic; on another declared device only the batch shapes, the
    declared kernel modules and the precision (dtype, finite state) are checked.
    """
    caps = rec.spec.capabilities
    exact = device in caps.deterministic
    out = ["batch_shapes", "kernel_modules"] + (["capture"] if exact else [])
    if caps.batch and exact:
        out.append("batch_equals_singles")
        if device == "cpu":
            out.append("threads")
    if exact and device == "cpu":
        out.append("threads_one_env")
    if caps.reset_envs and exact:
        out.append("reset_isolation")
    if caps.checkpoint and exact:
        out.append("checkpoint")
    out += [f"precision_{p}" for p in sorted(caps.precisions)]
    return out


def run_check(rec: Registered, check: str, tmp_path=None, device: str = "cpu") -> None:
    if check.startswith("precision_"):
        return check_precision(rec, check.split("_")[1], device=device)
    if check == "checkpoint":
        return check_checkpoint(rec, tmp_path / f"{rec.name}.npz", device=device)
    return globals()[f"check_{check}"](rec, device=device)
