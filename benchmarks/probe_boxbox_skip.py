"""Box–box's edge-axis skip and clip pointer swap (collision_boxbox.cpp, round 17b), in-process A/B: ``python -m
benchmarks.probe_boxbox_skip [--scenes pile] [--rounds 10] [--steps 5] [--pile-n 64] [--n 1024] [--skips]``.

Throw-away copies of the box narrowphase with switches of the body compiled out (modules
``kernels/_ab_box_<tag>.py`` / ``_ab_boxbox_<tag>.*`` written next to the originals and removed at exit) stand in
for ``narrowphase_box_mujoco``: "before" (``EDGE_SKIP`` and ``CLIP_SWAP`` false: the body before round 17b),
"+ edge skip" (``CLIP_SWAP`` false), "+ clip swap" (the shipped body); ``--skips``: the edge skip off, its linear
test only (``EDGE_SKIP2`` false), both. Per scene of profile_constraint (settled states, one
thread, islands on): (1) the collide launches of each variant recorded once and replayed inside uncaptured steps,
``narrowphase_box_mujoco`` and the stage timed (µs per env, min / median); (2) one captured scene per
variant, alternated: CPU µs per env-step, min / median, and qpos equal across the variants at the end.
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import os
import pathlib
import statistics
import time

import numpy as np

from . import profile_constraint as P
from .probe_collision_launches import _build, _order

KDIR = pathlib.Path(__file__).resolve().parent.parent / "plugins" / "rigid" / "kernels"


def _off_module(precision, flags, tag):
    """A copy of the box narrowphase with the body's switches ``flags`` (one name or several) compiled out."""
    cpp = (KDIR / "collision_boxbox.cpp").read_text()
    for flag in (flags,) if isinstance(flags, str) else flags:
        assert f"constexpr bool {flag} = true;" in cpp
        cpp = cpp.replace(f"constexpr bool {flag} = true;", f"constexpr bool {flag} = false;")
    (KDIR / f"_ab_boxbox_{tag}.cpp").write_text(cpp)
    (KDIR / f"_ab_boxbox_{tag}.py").write_text((KDIR / "collision_boxbox.py").read_text())
    (KDIR / f"_ab_box_{tag}.py").write_text((KDIR / "collision_box.py").read_text().replace(
        "from .collision_boxbox import", f"from ._ab_boxbox_{tag} import"))
    for f in (f"_ab_boxbox_{tag}.cpp", f"_ab_boxbox_{tag}.py", f"_ab_box_{tag}.py"):
        atexit.register(lambda p=KDIR / f: p.unlink(missing_ok=True))
    from plugins.rigid.types import declare_overloads

    mod = importlib.import_module(f"plugins.rigid.kernels._ab_box_{tag}")
    declare_overloads([mod], precision)
    return mod.narrowphase_box_mujoco


def _swap(scene, kernel):
    col = scene.solver("rigid").collision
    i = [k.key for k in col._narrowphase].index("narrowphase_box_mujoco")
    old = col._narrowphase[i]
    col._narrowphase[i] = kernel
    return old


def _replayed(scene, n, kernels, rounds):
    import warp as wp

    col = scene.solver("rigid").collision
    orig = col.collide
    cache, acc, cur = {}, {k: {"box": [], "stage": []} for k in kernels}, [None]

    def collide(part, lp, lq, export=None):
        key = (cur[0], part.index, export is None)
        if key not in cache:
            cmds, real = [], wp.launch

            def rec(kernel, *a, **k):
                k["record_cmd"] = True
                c = real(kernel, *a, **k)
                cmds.append((kernel.key, c))
                return c

            col.cache_launches = False
            wp.launch = rec
            try:
                orig(part, lp, lq, export)
            finally:
                wp.launch = real
            for _, c in cmds:
                c.launch()
            cache[key] = cmds
            return
        t00 = time.perf_counter()
        for k, c in cache[key]:
            t0 = time.perf_counter()
            c.launch()
            if k == "narrowphase_box_mujoco":
                acc[cur[0]]["box"].append(time.perf_counter() - t0)
        acc[cur[0]]["stage"].append(time.perf_counter() - t00)

    col.collide = collide
    try:
        for r in range(rounds):
            for label in _order(r, list(kernels)):
                cur[0] = label
                _swap(scene, kernels[label])
                for _ in range(3 if n >= 256 else 12):
                    scene.step()
    finally:
        del col.collide
    return {label: {k: (min(v) / n * 1e6, statistics.median(v) / n * 1e6) for k, v in a.items()}
            for label, a in acc.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--pile-n", type=int, default=64)
    ap.add_argument("--scenes", default="pile")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--no-captured", action="store_true")
    ap.add_argument("--skips", action="store_true", help="the edge skip's two tests (clip swap on in all three)")
    args = ap.parse_args()
    import warp as wp

    wp.config.quiet = True
    for name, path, m, d, n, extra in P.settled_scenes(args.scenes.split(","), args.n, args.pile_n):
        dt = float(m.opt.timestep)
        scene, _ = _build(path, d, dt, n, False, **extra)
        prec = "64" if scene.solver("rigid").collision.model.geom_size.dtype == wp.vec3d else "32"
        col = scene.solver("rigid").collision
        on = col._narrowphase[[k.key for k in col._narrowphase].index("narrowphase_box_mujoco")]
        if args.skips:
            kernels = {"skip off": _off_module(prec, "EDGE_SKIP", "off"),
                       "linear skip": _off_module(prec, "EDGE_SKIP2", "lin"), "+ squared skip": on}
        else:
            kernels = {"before": _off_module(prec, ("EDGE_SKIP", "CLIP_SWAP"), "before"),
                       "+ edge skip": _off_module(prec, "CLIP_SWAP", "copy"), "+ clip swap": on}
        load0 = os.getloadavg()[0]
        st = _replayed(scene, n, kernels, args.rounds)
        print(f"== {name} n_envs={n}: launches replayed in uncaptured steps (µs per env, min / median), "
              f"load {load0:.2f}-{os.getloadavg()[0]:.2f}")
        for label, ks in st.items():
            print(f"   {label}: " + ", ".join(f"{k} {a:.3f} / {b:.3f}" for k, (a, b) in ks.items()), flush=True)
        if args.no_captured:
            continue
        # swapped before the first step (the captured graph records the variant's kernel)
        built = {label: _build_captured(path, d, dt, n, kern, extra) for label, kern in kernels.items()}
        res = {k: [] for k in built}
        load0 = os.getloadavg()[0]
        for r in range(args.rounds):
            for label in _order(r, list(built)):
                res[label].append(P.step_cpu_us(built[label][0], n, args.steps))
        q = [np.asarray(e.get_qpos()) for _, e in built.values()]
        same = all(np.array_equal(q[0], x) for x in q[1:])
        print(f"   captured, one scene per variant, {args.rounds} rounds of {args.steps} steps, load {load0:.2f}-"
              f"{os.getloadavg()[0]:.2f}; qpos equal: {same}")
        for label, xs in res.items():
            print(f"   {label:10s} {min(xs):9.2f} / {statistics.median(xs):9.2f} µs per env-step", flush=True)


def _build_captured(path, d, dt, n, kern, extra):
    from . import bench_constraint as B

    scene, ent = B._pp_scene(path, dt, n, 1, capture=True, constraint_islands=True, **extra)
    _swap(scene, kern)
    B._pp_set(scene, ent, d, n)
    for _ in range(3):
        scene.step()
    return scene, ent


if __name__ == "__main__":
    main()
