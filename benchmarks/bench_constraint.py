"""Constraint stage benchmark: polyphys ConstraintStage (rows + Newton/CG solve, one thread per env,
batched) vs MuJoCo 4's constraint pipeline on the same frozen problem.

Problem: the articulated MuJoCo scene of tests/rigid_constraint/mjscenes.py (nv 17, 4 contacts incl.
one condim 6, 3 joint limits, 2 DOF frictionloss, connect + joint equality: 24-31 rows), replicated
over n_envs. Both engines build the rows (Jacobian, impedance, aref, R) and solve from a cold start
(qacc_smooth) with the same solver, cone, tolerance 1e-8 and iteration cap 100.
MuJoCo: per env mj_makeConstraint + mj_projectConstraint + mj_referenceConstraint + mj_fwdConstraint
in a Python loop over the envs (one thread; the loop overhead is part of what is measured).
polyphys: build_rows + solve launched once over all envs, replayed as a captured Warp CPU graph
(as inside the solver's captured step), on the machine's 2 cores.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "rigid_constraint"))


def _best(f, reps):
    f()
    best = 1e30
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t0)
    return best


def _case(m, d, n, solver, reps):
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


def run(quick: bool = False) -> list[dict]:
    import mjscenes as S
    import mujoco

    rows = []
    sizes = (64,) if quick else (64, 1024)
    for cone in ("pyramidal", "elliptic"):
        for solver in ("Newton", "CG"):
            m, d = S.make(cone=cone)
            m.opt.tolerance = 1e-8
            m.opt.iterations = 100
            m.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON if solver == "Newton" else mujoco.mjtSolver.mjSOL_CG
            mujoco.mj_forward(m, d)
            for n in sizes:
                tp, tm, err, iters = _case(m, d, n, solver, 3 if quick else 5)
                rows.append(dict(case=f"{cone} {solver} n_envs={n}", metric="constraint solves/s", unit="1/s",
                                 polyphys=n / tp, reference=n / tm, reference_name="MuJoCo 4.0 (loop, 1 thread)",
                                 ratio=tm / tp, notes=f"nv {m.nv}, nefc {d.nefc}, tol 1e-8; "
                                 f"max |qacc - MuJoCo| {err:.1e}; polyphys iters {iters}"))
    return rows


if __name__ == "__main__":
    for r in run(quick="--quick" in sys.argv):
        print(r)
