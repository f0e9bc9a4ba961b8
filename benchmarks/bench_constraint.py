"""Constrained rigid stepping: polyphys vs MuJoCo, full simulation steps with contacts (issue 6).

Scenes (one MJCF file each, loaded by both engines; polyphys in MuJoCo-compatible mode):

- ``boxes``: 8 free boxes (0.2 m cubes, 1 kg) dropped onto a plane from 0.30-0.65 m, measured
  after 1.5 s, i.e. **landed and resting** (32 box-plane contacts, 128 pyramidal rows);
- ``humanoid``: gymnasium's humanoid.xml (nv 23) laid on its back on the floor and settled for 1 s
  (floor contacts and hinge limits active; the fixed tendons of the file are not modelled by
  polyphys and have no limit, so they make no rows in MuJoCo either).

- ``pile``: 50 free boxes of generic sizes and masses (``_pile_xml``) dropped in a lattice and settled
  2 s: a heap of touching boxes (~200 contacts, ~20 constraint islands), at 1 and 64 envs.

Both engines: implicitfast, pyramidal cone, Newton, iterations 100, tolerance 1e-8, ls_iterations
50, ls_tolerance 0.01, float64, the model's timestep, one substep. The settled state (qpos, qvel and
MuJoCo's warm start) is computed once with mj_step and given to every copy of both engines.

Rows (``run``): for n_envs 64 and 1024, env-steps/s of polyphys (graph capture on, cpu_threads 1
and 2: the envs split into partitions stepped by worker threads) and of MuJoCo stepping the same
number of copies in one process — ``mujoco.rollout`` with nthread 1 and 2 and a plain ``mj_step``
loop over one MjData per copy — measured in the same run; each polyphys ratio is against MuJoCo's
best figure (> 1: polyphys faster). A CPU-time row (``time.process_time`` per env-step, one thread,
n_envs 1024; 64 in quick mode) is the figure that survives a shared machine; it is measured with
constraint islands on (the default) and off, in the same process, the three (MuJoCo, islands on, off) timed
in turn block by block so that a drift of the machine's speed does not enter the ratio; so are the pile's rows. The full run also
keeps the frozen-stage rows of the first version (rows + solve of the constraint stage alone on the
articulated test scene of tests/rigid_constraint, 64 envs, vs MuJoCo's constraint functions).

Convergence (``convergence()``; ``python -m benchmarks.bench_constraint --plot``): the humanoid on
the floor, one frozen constraint problem (rows built by polyphys at the state of the tests: on its
back, random joint angles — some past their limits — and velocities), solved by
Newton and by CG from a cold start (qacc_smooth) with iteration caps 1..N: the solver keeps no
per-iteration history, and a solve capped at k iterations from the same start is exactly the k-th
iterate of an uncapped one (the iteration is deterministic), so the residual after k iterations is
read from ``solver_stat`` of the k-capped solve. Residual: MuJoCo's stopping statistic
``scale·‖∇cost‖`` with ``scale = 1/trace(M)`` (and the improvement ``scale·Δcost``); MuJoCo's own
per-iteration statistics (``MjData.solver``) for the same state are drawn alongside. Writes
``benchmarks/results/constraint_convergence.png`` and ``.csv``.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

import numpy as np

from . import row

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "rigid_constraint"))

SOLVE = dict(iterations=100, tolerance=1e-8, ls_iterations=50, ls_tolerance=0.01)

_BOXES = """<mujoco model="boxes">
  <option timestep="0.005" integrator="implicitfast" cone="pyramidal" solver="Newton"/>
  <worldbody>
    <geom name="floor" type="plane" size="10 10 0.1"/>
{bodies}
  </worldbody>
</mujoco>
"""


def _boxes_xml() -> str:
    bodies = []
    for i in range(8):
        x, y = (i % 4) * 0.5 - 0.75, (i // 4) * 0.5 - 0.25
        bodies.append(f'    <body name="box{i}" pos="{x} {y} {0.30 + 0.05 * i:.2f}" euler="{7 * i} {5 * i} {11 * i}">'
                      f'<freejoint/><geom type="box" size="0.1 0.1 0.1" mass="1"/></body>')
    return _BOXES.format(bodies="\n".join(bodies))


PILE_N = 50


def _pile_xml(n: int = PILE_N) -> str:
    """The contact-rich scene: ``n`` free boxes (half-extents 35-55 mm, masses 0.2-0.6 kg, fixed seed)
    dropped in a 5 × 5 × 2 lattice of 0.13 m pitch with rotations up to 15°: after the settle time they
    lie on the plane and on each other."""
    rng = np.random.default_rng(7)
    bodies = []
    for i in range(n):
        gx, gy, gz = i % 5, (i // 5) % 5, i // 25
        x, y = 0.13 * gx - 0.26 + rng.uniform(-0.02, 0.02), 0.13 * gy - 0.26 + rng.uniform(-0.02, 0.02)
        z = 0.08 + 0.16 * gz + 0.01 * (i % 3)
        hx, hy, hz = rng.uniform(0.035, 0.055, 3)
        e = rng.uniform(-15, 15, 3)
        bodies.append(f'    <body name="b{i}" pos="{x:.4f} {y:.4f} {z:.4f}" euler="{e[0]:.1f} {e[1]:.1f} {e[2]:.1f}">'
                      f'<freejoint/><geom type="box" size="{hx:.4f} {hy:.4f} {hz:.4f}" '
                      f'mass="{rng.uniform(0.2, 0.6):.3f}"/></body>')
    return _BOXES.format(bodies="\n".join(bodies))


def _humanoid_path() -> str | None:
    import importlib.util

    spec = importlib.util.find_spec("gymnasium")
    if not (spec and spec.origin):
        return None
    p = os.path.join(os.path.dirname(spec.origin), "envs", "mujoco", "assets", "humanoid.xml")
    return p if os.path.exists(p) else None


def _mj_model(path, solver="Newton"):
    import mujoco

    m = mujoco.MjModel.from_xml_path(path)
    m.opt.integrator = int(mujoco.mjtIntegrator.mjINT_IMPLICITFAST)
    m.opt.solver = int(mujoco.mjtSolver.mjSOL_NEWTON if solver == "Newton" else mujoco.mjtSolver.mjSOL_CG)
    m.opt.cone = int(mujoco.mjtCone.mjCONE_PYRAMIDAL)
    m.opt.iterations = SOLVE["iterations"]
    m.opt.tolerance = SOLVE["tolerance"]
    m.opt.ls_iterations = SOLVE["ls_iterations"]
    m.opt.ls_tolerance = SOLVE["ls_tolerance"]
    m.opt.density = 0.0
    m.opt.viscosity = 0.0
    return m


def _settle(which, m, seconds):
    """MjData after ``seconds`` of mj_step from the scene's start (humanoid: on its back at 0.12 m)."""
    import mujoco

    d = mujoco.MjData(m)
    if which == "humanoid":
        d.qpos[:] = m.qpos0
        d.qpos[2] = 0.12
        d.qpos[3:7] = [np.cos(np.pi / 4), 0, np.sin(np.pi / 4), 0]
    for _ in range(int(round(seconds / m.opt.timestep))):
        mujoco.mj_step(m, d)
    return d


def _scenes(tmpdir):
    """[(name, path, settle seconds)] of the scenes available here."""
    path = os.path.join(tmpdir, "boxes.xml")
    with open(path, "w") as fh:
        fh.write(_boxes_xml())
    out = [("8 boxes resting on a plane", "boxes", path, 1.5)]
    hp = _humanoid_path()
    if hp is not None:
        out.append(("humanoid lying on the floor", "humanoid", hp, 1.0))
    return out


def _pp_scene(path, dt, n, threads, solver="Newton", capture=True, per_thread=None, **extra):
    import warnings

    import polyphys
    from polyphys import morphs
    from polyphys.plugins.rigid import RigidOptions
    from polyphys.plugins.rigid.materials import Rigid

    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=dt, precision="64", graph_capture=capture, cpu_threads=threads,
                                                   cpu_partitions_per_thread=per_thread),
                           rigid=RigidOptions.mujoco(integrator="implicitfast", constraint_solver=solver,
                                                     friction_cone="pyramidal", **SOLVE, **extra))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # the humanoid's RK4/PGS options, cameras, tendons
        ent = scene.add_entity(morphs.MJCF(file=path), Rigid())
        scene.build(n_envs=n)
    return scene, ent


def _pp_set(scene, ent, d, n):
    ent.set_qpos(np.tile(d.qpos, (n, 1)))
    ent.set_dofs_velocity(np.tile(d.qvel, (n, 1)))


def _mj_initial(m, d, n):
    import mujoco

    size = mujoco.mj_stateSize(m, mujoco.mjtState.mjSTATE_FULLPHYSICS)
    s = np.zeros(size)
    mujoco.mj_getState(m, d, s, mujoco.mjtState.mjSTATE_FULLPHYSICS)
    return np.tile(s, (n, 1)), np.tile(d.qacc_warmstart, (n, 1))


def _mujoco_rollout_block(m, d, n, nstep, threads):
    """A timed block of ``mujoco.rollout`` with ``threads`` threads: ``n`` copies, ``nstep`` steps."""
    import mujoco
    from mujoco import rollout

    state0, warm0 = _mj_initial(m, d, n)
    datas = [mujoco.MjData(m) for _ in range(threads)]
    rollout.rollout([m] * n, datas, state0, nstep=2, initial_warmstart=warm0)   # warm-up

    def block():
        rollout.rollout([m] * n, datas, state0, nstep=nstep, initial_warmstart=warm0)
    return block, n * nstep


def _mj_step_loop_rate(m, d, n, nstep, repeats):
    """env-steps/s of a plain mj_step loop over one MjData per copy (the slowest way; never the best)."""
    import mujoco

    state0, _ = _mj_initial(m, d, 1)
    datas = []
    for _ in range(n):
        dd = mujoco.MjData(m)
        mujoco.mj_setState(m, dd, state0[0], mujoco.mjtState.mjSTATE_FULLPHYSICS)
        dd.qacc_warmstart[:] = d.qacc_warmstart
        datas.append(dd)
    steps = max(2, nstep // 4)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(steps):
            for dd in datas:
                mujoco.mj_step(m, dd)
        best = min(best, time.perf_counter() - t0)
    return n * steps / best


def _pp_block(scene, n, k):
    """A timed block of polyphys: ``k`` steps of ``n`` envs (after 3 warm-up steps)."""
    for _ in range(3):
        scene.step()

    def block():
        for _ in range(k):
            scene.step()
    return block, n * k


def _interleaved_cpu(blocks, rounds):
    return _interleaved(blocks, rounds, time.process_time)


def _interleaved(blocks, rounds, clock):
    """``clock`` time (process CPU or wall) per env-step of each named ``(block, env_steps)``, the blocks
    timed in turn round after round (the order rotated each round) so that every engine sees the same
    stretches of the machine's load — timed one after the other, a drift of the machine between them (seen
    here: the same code 30 % apart minutes apart) would enter the ratio. Returns {name: (best, median)}."""
    names = list(blocks)
    times = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            block, env_steps = blocks[name]
            t0 = clock()
            block()
            times[name].append((clock() - t0) / env_steps)
    return {name: (min(t), float(np.median(t))) for name, t in times.items()}


def _mj_stats(m, d, steps=20):
    """Contacts, rows and Newton iterations per step of MuJoCo continuing from the settled state."""
    import mujoco

    dd = mujoco.MjData(m)
    mujoco.mj_setState(m, dd, _mj_initial(m, d, 1)[0][0], mujoco.mjtState.mjSTATE_FULLPHYSICS)
    dd.qacc_warmstart[:] = d.qacc_warmstart
    nc, ne, it = [], [], []
    for _ in range(steps):
        mujoco.mj_step(m, dd)
        nc.append(dd.ncon)
        ne.append(dd.nefc)
        it.append(int(dd.solver_niter[:max(1, dd.nisland)].sum()))
    return np.mean(nc), np.mean(ne), np.mean(it)


def _pp_stats(scene, steps=5):
    """Contacts, rows and Newton iterations per env and step (mean over ``steps`` more steps)."""
    d = scene.solver("rigid").data
    acc = np.zeros(3)
    for _ in range(steps):
        scene.step()
        acc += [d.ncon.numpy().mean(), d.nefc.numpy().mean(), d.solver_niter.numpy().mean()]
    return tuple(float(x) for x in acc / steps)


def _stepping_rows(quick):
    import warp as wp

    rows = []
    sizes = (64,) if quick else (64, 1024)
    repeats, rounds = (2, 2) if quick else (3, 5)
    with tempfile.TemporaryDirectory() as tmp:
        for label, which, path, settle in _scenes(tmp):
            m = _mj_model(path)
            d = _settle(which, m, settle)
            dt = float(m.opt.timestep)
            vmax = float(np.abs(d.qvel).max())
            mc, me, mi = _mj_stats(m, d)
            for n in sizes:
                nstep = max(4, int((0.05 if quick else 0.25) * 25000 / n))
                # MuJoCo's rollout (1 and 2 threads) and polyphys (1 and 2 threads) timed in turn, block by block,
                # best wall time of each: a drift of the machine's speed between them does not enter the ratios
                blocks = {f"mujoco.rollout nthread={t}": _mujoco_rollout_block(m, d, n, nstep, t) for t in (1, 2)}
                scenes = {}
                for threads in (1, 2):
                    scene, ent = _pp_scene(path, dt, n, threads)
                    _pp_set(scene, ent, d, n)
                    scenes[threads] = scene
                    blocks[threads] = _pp_block(scene, n, nstep)
                wall = _interleaved(blocks, rounds, time.perf_counter)
                ref = {name: 1.0 / wall[name][0] for name in blocks if isinstance(name, str)}
                ref["mj_step loop"] = _mj_step_loop_rate(m, d, n, nstep, repeats)
                best_name = max(ref, key=ref.get)
                for name, rate in ref.items():
                    rows.append(row(f"{label}, {n} copies", f"env-steps/s, {name}", "env-steps/s", rate, None, "",
                                    notes=f"MuJoCo reference; per step: {mc:.1f} contacts, {me:.0f} rows, "
                                          f"{mi:.2f} Newton iterations (summed over its islands)"))
                for threads, scene in scenes.items():
                    pc, pe, pi = _pp_stats(scene)
                    rate = 1.0 / wall[threads][0]
                    rows.append(row(f"{label}, n_envs={n}", f"env-steps/s, capture=on, cpu_threads={threads}",
                                    "env-steps/s", rate, ref[best_name], best_name, ratio=rate / ref[best_name],
                                    notes=f"best of {rounds} blocks interleaved with MuJoCo's; per step: {pc:.1f} "
                                          f"contacts, {pe:.0f} rows, {pi:.2f} Newton iterations; "
                                          f"settled {settle} s (max |qvel| {vmax:.1e}); ratio > 1: polyphys faster"))
                del scenes, scene, ent, blocks
            # CPU time per env-step, one thread (robust against the other processes on the machine)
            n = 64 if quick else 1024
            k = 4 if quick else 10
            rounds = 2 if quick else 6
            blocks = {"mujoco": _mujoco_rollout_block(m, d, n, k, 1)}
            scenes = {}
            for islands in (True, False):
                scene, ent = _pp_scene(path, dt, n, 1, constraint_islands=islands)
                _pp_set(scene, ent, d, n)
                scenes[islands] = scene
                blocks[islands] = _pp_block(scene, n, k)
            cpu = _interleaved_cpu(blocks, rounds)
            mj = cpu["mujoco"]
            for islands, scene in scenes.items():
                best, med = cpu[islands]
                ni = float(np.mean(scene.solver("rigid").get_islands()["count"])) if islands else 0.0
                rows.append(row(f"{label}, n_envs={n}", f"CPU time per env-step, 1 thread, islands {'on' if islands else 'off'}",
                                "us", best * 1e6, mj[0] * 1e6, "mujoco.rollout nthread=1 (CPU time)",
                                notes=f"process_time, best of {rounds} blocks interleaved with MuJoCo's (medians "
                                      f"{med * 1e6:.1f} vs {mj[1] * 1e6:.1f} us: {mj[1] / med:.2f}x); {ni:.1f} islands "
                                      "per env; ratio > 1: polyphys faster"))
            del scenes, scene, blocks
            wp.synchronize()
    return rows


def _pile_rows(quick, sizes=(1, 64), settle=2.0):
    """The pile of PILE_N boxes (``_pile_xml``, one file for both engines), settled ``settle`` s by MuJoCo:
    CPU time per env-step (one thread, capture on) at 1 and 64 envs against mujoco.rollout nthread=1,
    polyphys with constraint islands (the default) and without."""
    import mujoco
    import warp as wp

    rows = []
    rounds = 2 if quick else 5
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "pile.xml")
        with open(path, "w") as fh:
            fh.write(_pile_xml())
        m = _mj_model(path)
        settle = 0.5 if quick else settle
        d = _settle("pile", m, settle)
        dt = float(m.opt.timestep)
        mc, me, mi = _mj_stats(m, d)
        dd = mujoco.MjData(m)
        mujoco.mj_setState(m, dd, _mj_initial(m, d, 1)[0][0], mujoco.mjtState.mjSTATE_FULLPHYSICS)
        mujoco.mj_forward(m, dd)
        nisl = int(dd.nisland)
        vmax = float(np.abs(d.qvel).max())
        # contact budget: the settled pile's contacts with room for the next steps (rows: 4 per contact)
        max_con = int(2 * max(mc, 1)) + 32
        for n in sizes:
            k = max(2, int((2 if quick else 8) * 64 / max(n, 8)))
            blocks = {"mujoco": _mujoco_rollout_block(m, d, n, k, 1)}
            scenes = {}
            for islands in (True, False):
                scene, ent = _pp_scene(path, dt, n, 1, max_contacts=max_con, constraint_islands=islands)
                _pp_set(scene, ent, d, n)
                scenes[islands] = scene
                blocks[islands] = _pp_block(scene, n, k)
            cpu = _interleaved_cpu(blocks, rounds)
            mj = cpu["mujoco"]
            for islands, scene in scenes.items():
                best, med = cpu[islands]
                pc, pe, pi = _pp_stats(scene, steps=2)
                isl = scene.solver("rigid").get_islands()
                ni = float(np.mean(isl["count"])) if islands else 0.0
                rows.append(row(f"pile of {PILE_N} boxes, n_envs={n}",
                                f"CPU time per env-step, 1 thread, islands {'on' if islands else 'off'}", "us",
                                best * 1e6, mj[0] * 1e6, "mujoco.rollout nthread=1 (CPU time)",
                                notes=f"best of {rounds} blocks interleaved with MuJoCo's (medians {med * 1e6:.0f} vs "
                                      f"{mj[1] * 1e6:.0f} us: {mj[1] / med:.2f}x); polyphys per step: {pc:.1f} "
                                      f"contacts, {pe:.0f} rows, {pi:.2f} Newton iterations"
                                      f" (most of an island), {ni:.1f} islands; MuJoCo: {mc:.1f} contacts, {me:.0f} rows,"
                                      f" {mi:.2f} iterations summed over {nisl} islands; settled {settle} s "
                                      f"(max |qvel| {vmax:.1e}); ratio > 1: polyphys faster"))
            del scenes, scene, blocks
            wp.synchronize()
    return rows


# -- frozen constraint stage (first version of this benchmark) ----------------------------------

def _best(f, reps):
    f()
    best = 1e30
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t0)
    return best


def _frozen_case(m, d, n, solver, reps):
    """(polyphys seconds, MuJoCo seconds, max |qacc − MuJoCo|, polyphys iterations) for n envs."""
    import mjscenes as S
    import mujoco
    import warp as wp

    st, tree = S.stage_for(m, d, n_envs=n, solver=solver, tolerance=1e-8, iterations=100)
    s = st.scalar
    vec = {"cdof_w": st.V, "cdof_v": st.V, "dof_ref": st.V, "link_pos": st.V, "link_quat": st.Q}
    a = {k: wp.array(np.asarray(v if k != "link_quat" else v[..., [1, 2, 3, 0]]), dtype=vec.get(k, s))
         for k, v in tree.items()}
    M = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M)
    Mw = wp.array(np.repeat(M[None], n, 0), dtype=s)
    qs = wp.array(np.repeat(d.qacc_smooth[None], n, 0), dtype=s)

    def launches():
        st.build_rows(a["qpos"], a["qvel"], a["cdof_w"], a["cdof_v"], a["dof_ref"], a["link_pos"], a["link_quat"])
        st.solve(Mw, qs, qs)

    launches()  # load modules before capture
    with wp.ScopedCapture(device="cpu") as cap:
        launches()
    graph = cap.graph

    def pp():
        wp.capture_launch(graph)
        wp.synchronize()

    ds = [mujoco.MjData(m) for _ in range(n)]
    for dd in ds:
        dd.qpos[:] = d.qpos
        dd.qvel[:] = d.qvel
        mujoco.mj_forward(m, dd)

    def mj():
        for dd in ds:
            dd.qacc_warmstart[:] = dd.qacc_smooth
            mujoco.mj_makeConstraint(m, dd)
            mujoco.mj_projectConstraint(m, dd)
            mujoco.mj_referenceConstraint(m, dd)
            mujoco.mj_fwdConstraint(m, dd)

    tp, tm = _best(pp, reps), _best(mj, reps)
    err = np.abs(st.qacc.numpy()[0] - ds[0].qacc).max()
    return tp, tm, err, int(st.solver_niter.numpy()[0])


def _frozen_rows(n=64, reps=3):
    import mjscenes as S
    import mujoco

    rows = []
    for cone in ("pyramidal", "elliptic"):
        for solver in ("Newton", "CG"):
            m, d = S.make(cone=cone)
            m.opt.tolerance = 1e-8
            m.opt.iterations = 100
            m.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON if solver == "Newton" else mujoco.mjtSolver.mjSOL_CG
            mujoco.mj_forward(m, d)
            tp, tm, err, iters = _frozen_case(m, d, n, solver, reps)
            rows.append(row(f"frozen stage, {cone} {solver} n_envs={n}", "constraint solves/s", "1/s",
                            n / tp, n / tm, "MuJoCo 4 (per-env loop of its constraint functions, 1 thread)",
                            ratio=tm / tp, notes=f"nv {m.nv}, nefc {d.nefc}, cold start, tol 1e-8; "
                            f"max |qacc - MuJoCo| {err:.1e}; polyphys iters {iters}"))
    return rows


# -- convergence ---------------------------------------------------------------------------------

def _frozen_humanoid_problem(solver):
    """A 1-env polyphys humanoid lying on the floor in the state of the tests (tests/rigid_constraint
    mjscenes.humanoid: on its back, random joint angles, some past their limits, random velocities)
    with its constraint rows built (no solve yet), and the MuJoCo data of the same state."""
    import mjscenes as S
    import mujoco

    path = _humanoid_path()
    m = _mj_model(path, solver)
    d = mujoco.MjData(m)
    d0 = S.humanoid()[1]          # on its back, random joint angles (some past a limit) and velocities
    d.qpos[:] = d0.qpos
    d.qvel[:] = d0.qvel
    scene, ent = _pp_scene(path, float(m.opt.timestep), 1, 1, solver=solver, capture=False)
    _pp_set(scene, ent, d, 1)
    s = scene.solver("rigid")
    s.forward()                           # kinematics, M, qacc_smooth and the contacts of this state
    part = scene.layout.partitions[0]
    s._constraint_rows(part)              # contact parameters, dense M, rows (no solve yet)
    st = s.views[part.index]
    dd = mujoco.MjData(m)
    mujoco.mj_setState(m, dd, _mj_initial(m, d, 1)[0][0], mujoco.mjtState.mjSTATE_FULLPHYSICS)
    mujoco.mj_forward(m, dd)
    return scene, s, st, m, dd


def convergence(out_dir=None, max_iter=60):
    """Residual vs iteration for Newton and CG (polyphys, capped solves; MuJoCo, its solver stats) on
    the humanoid lying on the floor, cold start. Writes the PNG and the CSV; returns the data."""
    import mujoco
    import warp as wp

    wp.config.quiet = True
    out_dir = out_dir or os.path.join(os.path.dirname(__file__), "results")
    data = {}
    for solver in ("Newton", "CG"):
        scene, s, st, m, dd = _frozen_humanoid_problem(solver)
        from polyphys.plugins.rigid import convex_solve
        qs = s.data.qacc_smooth                          # qacc_smooth of the forward pass
        tol = st.m.opt.tolerance
        st.m.opt.tolerance = 1e-15                       # run each capped solve to its cap (or round-off)
        grad, impr, cost, niter = [], [], [], []
        cap = 100 if solver == "Newton" else max_iter
        for k in range(1, cap + 1):
            st.m.opt.iterations = k
            convex_solve.solve(st, qs)
            ni = int(st.d.solver_niter.numpy()[0])
            if ni < k:                                   # stopped on its own (round-off reached)
                break
            stat = st.d.solver_stat.numpy()[0]
            niter.append(ni)
            impr.append(float(stat[0]))
            grad.append(float(stat[1]))
            cost.append(float(stat[2]))
        st.m.opt.tolerance = tol
        # MuJoCo, same state and options, its per-iteration statistics (tolerance as the benchmark)
        m.opt.tolerance = 1e-15
        m.opt.iterations = cap
        dd.qacc_warmstart[:] = dd.qacc_smooth
        mujoco.mj_forward(m, dd)
        n_mj = int(dd.solver_niter[0])
        mj_grad = [float(x) for x in dd.solver.gradient[:n_mj]]      # island 0 (the humanoid is one)
        mj_impr = [float(x) for x in dd.solver.improvement[:n_mj]]
        data[solver] = dict(grad=grad, impr=impr, cost=cost, mj_grad=mj_grad, mj_impr=mj_impr,
                            nefc=int(st.d.nefc.numpy()[0]), mj_nefc=int(dd.nefc), mj_nisland=int(dd.nisland), tol=tol)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "constraint_convergence.csv"), "w") as fh:
        fh.write("solver,engine,iteration,gradient,improvement\n")
        for solver, v in data.items():
            for i, (g, im) in enumerate(zip(v["grad"], v["impr"]), 1):
                fh.write(f"{solver},polyphys,{i},{g:.6e},{im:.6e}\n")
            for i, (g, im) in enumerate(zip(v["mj_grad"], v["mj_impr"]), 1):
                fh.write(f"{solver},mujoco,{i},{g:.6e},{im:.6e}\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return data
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for solver, c in (("Newton", "C0"), ("CG", "C1")):
        v = data[solver]
        ax.semilogy(range(1, len(v["grad"]) + 1), v["grad"], "-o", ms=3, color=c, label=f"polyphys {solver}")
        ax.semilogy(range(1, len(v["mj_grad"]) + 1), v["mj_grad"], "--x", ms=4, color=c, alpha=0.6,
                    label=f"MuJoCo {solver}")
    ax.axhline(data["Newton"]["tol"], color="k", lw=0.8, ls=":", label="tolerance 1e-8")
    ax.set_xlabel("iteration")
    ax.set_ylabel("residual  scale·‖∇cost‖  (scale = 1/trace M)")
    ax.set_title(f"humanoid lying on the floor: one constraint solve, cold start "
                 f"({data['Newton']['nefc']} rows, pyramidal)", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "constraint_convergence.png"), dpi=120)
    plt.close(fig)
    return data


def run(quick: bool = False) -> list[dict]:
    import warp as wp

    wp.config.quiet = True
    rows = _stepping_rows(quick)
    rows += _pile_rows(quick)
    if not quick:
        rows += _frozen_rows()
    return rows


if __name__ == "__main__":
    if "--plot" in sys.argv:
        res = convergence()
        for k, v in res.items():
            print(k, "polyphys", len(v["grad"]), "iterations, final", v["grad"][-1], "| MuJoCo", len(v["mj_grad"]),
                  "final", v["mj_grad"][-1] if v["mj_grad"] else None)
    else:
        for r in run(quick="--quick" in sys.argv):
            print(r)
