"""Collision detection cost: broadphase + narrowphase (polyphys's CollisionPipeline.run) for
1k, 10k and 50k spheres or boxes in one env and for 1024 envs × 16 bodies, against MuJoCo's
mj_collision on the same scene in the same run (MuJoCo: one env per call, so the batched case is
1024 calls). Also the sweep-and-prune vs all-vs-all cost at small sizes (where "auto" switches).

Scene: n geoms of size 0.05 (sphere radius, box half edge) placed uniformly at random in a cube
whose edge grows as n^(1/3), so every geom has a few neighbours (contacts grow ∝ n), plus a ground
plane. Times are seconds per pipeline run on CPU after warm-up (kernel compilation excluded);
contacts per second = contacts found / time. The exponent is the least-squares slope of
log(time) against log(n).
"""

from __future__ import annotations

import time

import numpy as np

from . import row, time_steps

R = 0.05


def _scene(n, kind, seed=0):
    rng = np.random.default_rng(seed)
    side = 0.16 * n ** (1 / 3)
    pos = rng.uniform(0, side, size=(n, 3))
    pos[:, 2] += R * 0.8
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return pos, q


def _pipeline(n, kind, n_envs=1, broadphase="auto"):
    from polyphys.description import Geom
    from polyphys.layout import Partition
    from polyphys.plugins.rigid import RigidOptions
    from polyphys.plugins.rigid.collision import CollisionPipeline, set_poses_host

    size = (R, 0, 0) if kind == "sphere" else (R, R, R)
    geoms = [Geom(name="ground", type="plane", link=-1, size=(0, 0, 1))]
    geoms += [Geom(name=f"g{i}", type=kind, link=i, size=size) for i in range(n)]
    pipe = CollisionPipeline(geoms, [0] * (n + 1), [-1] * n, [True] * n,
                             RigidOptions(broadphase=broadphase, max_collision_pairs=12 * n + 64))
    pipe.build(n_envs, "cpu", "32")
    pos = np.zeros((n_envs, n + 1, 3))
    quat = np.zeros((n_envs, n + 1, 4))
    quat[:, 0, 0] = 1
    for e in range(n_envs):
        pos[e, 1:], quat[e, 1:] = _scene(n, kind, seed=e)
    set_poses_host(pipe, pos, quat)
    part = Partition(0, 0, n_envs)

    def step():
        pipe.run(part)
        import warp as wp

        wp.synchronize()

    step()
    pipe.check()
    ncon = int(pipe.contact_count.numpy().sum())
    return step, ncon, pipe.broadphase


def _mujoco(n, kind, n_envs=1):
    import mujoco

    size = f"{R}" if kind == "sphere" else f"{R} {R} {R}"
    bodies = "".join(f'<body><freejoint/><geom type="{kind}" size="{size}"/></body>' for _ in range(n))
    m = mujoco.MjModel.from_xml_string(
        f'<mujoco><size memory="{max(64, n // 10)}M"/><worldbody><geom type="plane" size="0 0 1"/>'
        f'{bodies}</worldbody></mujoco>')
    datas = []
    for e in range(n_envs):
        d = mujoco.MjData(m)
        pos, q = _scene(n, kind, seed=e)
        d.qpos[:] = np.concatenate([pos, q], axis=1).reshape(-1)
        mujoco.mj_kinematics(m, d)
        datas.append(d)

    def step():
        for d in datas:
            mujoco.mj_collision(m, d)

    step()
    return step, int(sum(d.ncon for d in datas))


def run(quick: bool = False) -> list[dict]:
    rows = []
    sizes = [500, 2000] if quick else [1000, 10000, 50000]
    for kind in ("sphere", "box"):
        times = []
        for n in sizes:
            step, ncon, bp = _pipeline(n, kind)
            t = time_steps(step, min_time=0.1 if quick else 0.3, min_steps=2, warmup=1, repeats=2)
            times.append(t)
            ref = ref_con = None
            if n <= 10000:
                mstep, ref_con = _mujoco(n, kind)
                ref = time_steps(mstep, min_time=0.2, min_steps=2, warmup=1, repeats=2)
            rows.append(row(f"{n} {kind}es, 1 env" if kind == "box" else f"{n} {kind}s, 1 env",
                            "time per collision pass", "s", t, ref, "MuJoCo mj_collision",
                            notes=f"{bp}; {ncon} contacts (MuJoCo {ref_con}); "
                                  f"{ncon / t:.3g} contacts/s"))
        slope = float(np.polyfit(np.log(sizes), np.log(times), 1)[0])
        rows.append(row(f"{kind}: growth with n", "exponent of time ~ n^k", "-", slope,
                        notes=f"fit over n = {sizes}"))
    # batched: 1024 envs x 16 boxes
    n_envs = 64 if quick else 1024
    step, ncon, bp = _pipeline(16, "box", n_envs)
    t = time_steps(step, min_time=0.2, min_steps=2, warmup=1, repeats=2)
    mstep, ref_con = _mujoco(16, "box", n_envs)
    ref = time_steps(mstep, min_time=0.2, min_steps=2, warmup=1, repeats=2)
    rows.append(row(f"{n_envs} envs x 16 boxes", "time per collision pass", "s", t, ref,
                    "MuJoCo mj_collision, one call per env", notes=f"{bp}; {ncon} contacts "
                    f"(MuJoCo {ref_con}); {ncon / t:.3g} contacts/s"))
    # broadphase crossover (one env): sweep-and-prune vs all-vs-all
    for n in ([128, 512] if quick else [32, 128, 256, 512, 1024]):
        ts = {}
        for bp in ("all_vs_all", "sweep_and_prune"):
            step, _, _ = _pipeline(n, "sphere", 1, bp)
            ts[bp] = time_steps(step, min_time=0.1, min_steps=5, warmup=2, repeats=3)
        rows.append(row(f"{n} spheres, 1 env", "sweep_and_prune time", "s", ts["sweep_and_prune"],
                        ts["all_vs_all"], "all_vs_all (polyphys)",
                        notes="ratio > 1: sweep-and-prune faster"))
    return rows


if __name__ == "__main__":
    t0 = time.time()
    for r in run(quick=True):
        print(r)
    print(f"{time.time() - t0:.1f} s")
