"""Per-stage CPU time of one env-step, polyphys vs MuJoCo, on the scenes of bench_constraint (boxes,
humanoid, pile): ``python -m benchmarks.profile_constraint [--n 1024] [--steps 10] [--scenes boxes,humanoid,pile]``.

polyphys: graph capture off, one thread; each stage's host launch function (solver.py's stage order) is
wrapped by a timer (``time.process_time`` after ``wp.synchronize``; CPU launches run synchronously), so
the table shows where the step's time goes per env. MuJoCo: its own stage timers (``MjData.timer``,
mjTIMER_*; enabled by a native CLOCK_MONOTONIC callback compiled here with the system C compiler, since a
Python callback would cost more than the stages it times) over ``mujoco.rollout`` (one thread, one
MjData) of the same number of copies. MuJoCo's timers are wall clock (a process-CPU clock is a system
call per reading), so on a loaded machine they are scaled by (rollout CPU time / timed STEP) to CPU
shares. Rounds alternate the engines; per stage the least of the rounds is kept.
Both from the same settled state as bench_constraint. The Python overhead of an uncaptured step (the
sum of the stages vs the step) is listed as its own line.
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import os
import subprocess
import tempfile
import time

from . import bench_constraint as B

_STAGES = [
    ("kinematics", "kinematics", "kinematics"),
    ("bias", "rne", "bias (RNE)"),
    ("inertia", "crb", "inertia (CRB)"),
    ("actuation", "actuation", "actuation/passive"),
    ("factorization", "factor_solve", "factor + solve (M+hD)"),
    ("factorization", "mass_dense", "dense M for the solve"),
    ("factorization", "crb_factor_solve", "CRB + factor + solve (+ dense M), fused"),
    ("factorization", "smooth", "kinematics + RNE + actuation + CRB + factor + solve (+ dense M), fused"),
    ("factorization", "ld_solve", "integration solve (M+hD) from the smooth pass's factor"),
    ("constraint_rows", "contact_params", "contact parameters"),
    ("constraint_rows", "connect_bias", "connect bias"),
    ("constraint_rows", "make_rows", "constraint rows"),
    ("convex_solve", "label_islands", "island labels"),
    ("convex_solve", "solve", "convex solve (incl. labels)"),
    ("signorini_solve", "solve", "signorini solve"),
    ("noslip", "noslip", "noslip"),
    ("contact_forces", "contact_wrench", "contact wrenches"),
    ("contact_forces", "link_contact_wrench", "link contact wrenches"),
    ("contact_forces", "contact_link_wrench", "contact + link contact wrenches, fused"),
    ("readback", "rne_post_constraint", "readback RNE"),
    ("integration", "total_force", "total force"),
    ("integration", "integrate", "integration"),
    ("integration", "gyro_resolve", "gyro re-solve (standalone free bodies)"),
    ("integration", "post_solve", "total force + (M+hD) solve + integration, fused"),
]


def _wrap(acc, key, fn):
    import warp as wp

    def timed(*a, **k):
        wp.synchronize()
        t0 = time.process_time()
        out = fn(*a, **k)
        wp.synchronize()
        acc[key] += time.process_time() - t0
        return out

    return timed


def polyphys_scene(path, d, dt, n, **extra):
    """A polyphys scene of the benchmark (graph capture off, one thread) at the settled state, stepped 3 times."""
    scene, ent = B._pp_scene(path, dt, n, 1, capture=False, **extra)
    B._pp_set(scene, ent, d, n)
    for _ in range(3):
        scene.step()
    return scene


def polyphys_profile(scene, n, steps):
    """{stage: µs of CPU time per env-step} over ``steps`` steps of ``scene``, and the step's total."""
    import importlib

    import warp as wp

    acc = collections.defaultdict(float)
    saved = []
    for mod, attr, label in _STAGES:
        mm = importlib.import_module(f"polyphys.plugins.rigid.{mod}")
        fn = getattr(mm, attr, None)
        if fn is None:
            continue
        saved.append((mm, attr, fn))
        setattr(mm, attr, _wrap(acc, label, fn))
    col = scene.solver("rigid").collision
    if col is not None:
        for attr, label in (("update_poses", "collision: geom poses"), ("run", "collision: detection"),
                            ("export", "collision: export"),
                            ("collide", "collision: poses + detection + export (fused)")):
            fn = getattr(col, attr, None)
            if fn is None:          # a revision without CollisionPipeline.collide
                continue
            saved.append((col, attr, None))
            setattr(col, attr, _wrap(acc, label, fn))
    try:
        wp.synchronize()
        t0 = time.process_time()
        for _ in range(steps):
            scene.step()
        wp.synchronize()
        total = time.process_time() - t0
    finally:
        for obj, attr, fn in saved:
            if fn is None:
                delattr(obj, attr)
            else:
                setattr(obj, attr, fn)
    per = {k: v / (steps * n) * 1e6 for k, v in acc.items()}
    coll = [v for k, v in per.items() if k.startswith("collision: ")]
    if coll:
        # the whole collision stage, comparable across revisions that split it into different launches
        # (with contacts in the gap the fused path's export is also in "collision: export")
        per["collision: total"] = sum(coll)
    if "convex solve (incl. labels)" in per:
        per["convex solve (incl. labels)"] -= per.get("island labels", 0.0)
        per["convex solve"] = per.pop("convex solve (incl. labels)")
    return per, total / (steps * n) * 1e6


def _native_clock():
    """A ctypes pointer to a native monotonic clock (vDSO, no system call) (µs) for mjcb_time, or None without a C compiler."""
    src = "#include <time.h>\ndouble pp_now(void){struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);" \
          " return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;}\n"
    tmp = tempfile.mkdtemp()
    c, so = os.path.join(tmp, "clock.c"), os.path.join(tmp, "libclock.so")
    with open(c, "w") as fh:
        fh.write(src)
    try:
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", so, c], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    lib = ctypes.CDLL(so)
    return ctypes.CFUNCTYPE(ctypes.c_double)(("pp_now", lib))


def _mujoco_cpu(m, d, n, steps, repeats):
    """Least CPU seconds per env-step of ``mujoco.rollout`` (one thread, one MjData, no timers) over ``repeats``
    blocks of ``n`` copies × ``steps`` steps (bench_constraint's rollout block)."""
    block, count = B._mujoco_rollout_block(m, d, n, steps, 1)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        block()
        best = min(best, (time.process_time() - t0) / count)
    return best


def mujoco_profile(m, d, n, steps):
    """{MuJoCo timer: µs per env-step} over mj_step of n copies from the settled state, and the total."""
    import mujoco

    clock = _native_clock()
    if clock is None:
        return {}, float("nan")
    from mujoco import rollout

    state0, warm0 = B._mj_initial(m, d, n)
    dd = mujoco.MjData(m)
    mujoco.set_mjcb_time(clock)
    try:
        rollout.rollout([m] * n, [dd], state0, nstep=2, initial_warmstart=warm0)
        for i in range(int(mujoco.mjtTimer.mjNTIMER)):
            dd.timer[i].duration = 0
            dd.timer[i].number = 0
        rollout.rollout([m] * n, [dd], state0, nstep=steps, initial_warmstart=warm0)
    finally:
        mujoco.set_mjcb_time(None)
    datas = [dd]
    out = {"rollout CPU time (no timers)": _mujoco_cpu(m, d, n, steps, 2) * 1e6}
    for i in range(int(mujoco.mjtTimer.mjNTIMER)):
        name = mujoco.mjtTimer(i).name.replace("mjTIMER_", "")
        out[name] = sum(dd.timer[i].duration for dd in datas) / (steps * n)
    return out, out["STEP"]


def scenes(which):
    tmp = tempfile.mkdtemp()
    out = []
    if "boxes" in which:
        p = os.path.join(tmp, "boxes.xml")
        open(p, "w").write(B._boxes_xml())
        out.append(("boxes", p, 1.5, {}))
    if "humanoid" in which:
        hp = B._humanoid_path()
        if hp:
            out.append(("humanoid", hp, 1.0, {}))
    if "pile" in which:
        p = os.path.join(tmp, "pile.xml")
        open(p, "w").write(B._pile_xml())
        out.append(("pile", p, 2.0, {"pile": True}))
    return out


def settled_scenes(which, n, pile_n):
    """For each scene of ``which``: (name, MJCF path, MuJoCo model, its settled MjData, the env count — ``pile_n``
    for the pile, else ``n`` — and the polyphys scene options the probes add: the pile's contact budget, twice
    MuJoCo's contact count at rest plus 32)."""
    for name, path, settle, flags in scenes(which):
        m = B._mj_model(path)
        d = B._settle("humanoid" if name == "humanoid" else name, m, settle)
        extra = {}
        if flags.get("pile"):
            mc, _, _ = B._mj_stats(m, d)
            extra["max_contacts"] = int(2 * max(mc, 1)) + 32
        yield name, path, m, d, (pile_n if flags.get("pile") else n), extra


def step_cpu_us(scene, n, steps) -> float:
    """CPU µs per env-step of ``steps`` scene steps (the probes' in-process A/B sample)."""
    import warp as wp

    wp.synchronize()
    t0 = time.process_time()
    for _ in range(steps):
        scene.step()
    wp.synchronize()
    return (time.process_time() - t0) / (steps * n) * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--pile-n", type=int, default=64)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--scenes", default="boxes,humanoid,pile")
    ap.add_argument("--islands", default="on,off")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    import warp as wp

    wp.config.quiet = True
    print("load:", os.getloadavg())
    for name, path, m, d, n, extra in settled_scenes(args.scenes.split(","), args.n, args.pile_n):
        dt = float(m.opt.timestep)
        isl = args.islands.split(",")
        pp = {i: polyphys_scene(path, d, dt, n, constraint_islands=(i == "on"), **extra) for i in isl}
        # rounds alternating the engines and configurations; per stage the least of the rounds (the load of
        # the other processes on the machine only ever adds)
        mj, pr, loads = {}, {i: ({}, float("inf")) for i in isl}, []
        for _ in range(args.rounds):
            loads.append(os.getloadavg()[0])
            r, _tot = mujoco_profile(m, d, n, args.steps)
            mj = {k: min(v, mj.get(k, float("inf"))) for k, v in r.items()}
            for i in isl:
                per, tot = polyphys_profile(pp[i], n, args.steps)
                best, btot = pr[i]
                pr[i] = ({k: min(v, best.get(k, float("inf"))) for k, v in per.items()}, min(btot, tot))
        print(f"\n== {name}, n_envs {n}, {args.steps} steps x {args.rounds} rounds (least per stage); "
              f"load {min(loads):.1f}-{max(loads):.1f}")
        step = mj.get("STEP", float("nan"))
        cpu = mj.get("rollout CPU time (no timers)", float("nan"))
        print(f"MuJoCo: rollout CPU time {cpu:.2f} µs per env-step; timers (wall clock, µs per env-step; "
              f"x {cpu / step:.2f} = CPU share):")
        print("   " + "  ".join(f"{k} {v:.2f}" for k, v in mj.items() if v and not k.startswith("rollout")))
        for i in isl:
            per, tot = pr[i]
            print(f"-- polyphys islands {i}: total {tot:.2f} µs per env-step (capture off), stages sum "
                  f"{sum(v for k, v in per.items() if k != 'collision: total'):.2f}")
            for k, v in sorted(per.items(), key=lambda kv: -kv[1]):
                if v > 0.005:
                    print(f"   {k:32s} {v:8.2f}")


if __name__ == "__main__":
    main()
