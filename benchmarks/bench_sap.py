"""SAP coupler throughput (issue 18, Performance): env-steps/s of 8 boxes on a plane with the SAP
coupler owning the contacts vs the rigid solver's own constraint solve (its default Newton, elliptic
or pyramidal as its options say) on the same scene, in the same run.

Scene: a plane and 8 free 0.2 m cubes (1 kg each: rho 125) dropped from 0.15-0.5 m in a 4×2 grid,
rotated 15°·i about z, settled for 1 s (both engines, each its own contact model) before timing:
32 box-plane contacts per env. dt = 4 ms, one substep, float64, graph capture on, one CPU thread.
SAP: default options (Drake's: β 1, σ 1e-3, rtol 1e-6, τ_d 0.1 s per geom) with point stiffness
1e5 N/m per geom (5e4 N/m per pair). Also reported: SAP Newton iterations per step (mean over the
envs) and the CPU time per env-step (``time.process_time``), the figure that survives a shared
machine.

Drake (pip ``drake``, the ``bench`` extra; rows skipped without it): the same 8 boxes (mass,
inertia, poses) in one MultibodyPlant with the discrete "sap" approximation, point contact, the same
stiffness, relaxation time and time step. Drake's point contact gives one point per geometry pair,
so each box carries 4 small spheres (radius 1 mm) at its bottom corners: 32 contacts, as above.
Drake steps one env at a time (no batch), so its env-steps/s is 1 / (time per step).

Convergence (``python -m benchmarks.bench_sap --plot``): the same 8 boxes at t = 0.2 s, while they
land (some sliding, some sticking, some still in the air), one SAP solve cold-started from v*: the
cost ℓ − ℓ_final and the mass-weighted gradient norm ‖D∇ℓ‖ per Newton iteration, written to
``benchmarks/results/sap_convergence.png`` and ``.csv``.
"""

from __future__ import annotations

import time

import numpy as np

from . import row, time_steps


def _scene(n_envs: int, sap: bool):
    import polyphys
    from polyphys import morphs
    from polyphys.couplers.sap.options import SapOptions
    from polyphys.plugins.rigid.materials import Rigid

    coupler = SapOptions(point_stiffness=1.0e5) if sap else False
    sc = polyphys.Scene(sim=polyphys.SimOptions(dt=0.004, substeps=1, precision="64", cpu_threads=1),
                        coupler=coupler)
    sc.add_entity(morphs.Plane(pos=(0.1, -0.05, 0.0)), Rigid())
    for i in range(8):
        x, y = (i % 4) * 0.35, (i // 4) * 0.35
        sc.add_entity(morphs.Box(size=(0.2, 0.2, 0.2), pos=(x, y, 0.15 + 0.05 * i), euler=(0, 0, 15 * i)),
                      Rigid(rho=125.0))
    sc.build(n_envs=n_envs)
    for _ in range(250):          # 1 s: landed and resting
        sc.step()
    return sc


def _drake_seconds_per_step(quick: bool):
    import math

    from pydrake.all import (
        AddContactMaterial,
        AddMultibodyPlant,
        CoulombFriction,
        DiagramBuilder,
        HalfSpace,
        MultibodyPlantConfig,
        ProximityProperties,
        RigidTransform,
        RollPitchYaw,
        Simulator,
        SpatialInertia,
        Sphere,
        UnitInertia,
    )

    h = 0.004
    b = DiagramBuilder()
    plant, _ = AddMultibodyPlant(MultibodyPlantConfig(time_step=h, discrete_contact_approximation="sap",
                                                      contact_model="point"), b)

    def props():
        p = ProximityProperties()
        AddContactMaterial(dissipation=None, point_stiffness=1.0e5, friction=CoulombFriction(1.0, 1.0), properties=p)
        p.AddProperty("material", "relaxation_time", 0.1)
        return p

    plant.RegisterCollisionGeometry(plant.world_body(), RigidTransform(), HalfSpace(), "ground", props())
    bodies = []
    for i in range(8):
        body = plant.AddRigidBody(f"box{i}", SpatialInertia(1.0, [0, 0, 0], UnitInertia.SolidBox(0.2, 0.2, 0.2)))
        for cx in (-0.1, 0.1):
            for cy in (-0.1, 0.1):
                plant.RegisterCollisionGeometry(body, RigidTransform([cx, cy, -0.1]), Sphere(1e-3), f"c{i}{cx}{cy}",
                                                props())
        bodies.append(body)
    plant.Finalize()
    sim = Simulator(b.Build())
    ctx = plant.GetMyMutableContextFromRoot(sim.get_mutable_context())
    for i, body in enumerate(bodies):
        x, y = (i % 4) * 0.35, (i // 4) * 0.35
        plant.SetFreeBodyPose(ctx, body, RigidTransform(RollPitchYaw(0, 0, math.radians(15 * i)), [x, y, 0.15 + 0.05 * i]))
    sim.AdvanceTo(1.0)                  # landed and resting, as the polyphys scenes
    t = [1.0]

    def step():
        t[0] += h
        sim.AdvanceTo(t[0])

    return time_steps(step, min_time=0.3 if quick else 1.0, min_steps=5, repeats=2 if quick else 3)


def convergence(out_dir=None, settle_steps=50):
    """Cost and gradient norm per Newton iteration of one cold-started SAP solve (env 0) while the
    boxes land, at rtol 1e-12 so that the tail shows. Returns (cost, residual) arrays."""
    import os

    import polyphys
    from polyphys import morphs
    from polyphys.couplers.sap.options import SapOptions
    from polyphys.plugins.rigid.materials import Rigid

    sc = polyphys.Scene(sim=polyphys.SimOptions(dt=0.004, substeps=1, precision="64", cpu_threads=1),
                        coupler=SapOptions(point_stiffness=1.0e5, rtol=1e-12, atol=1e-16, on_iteration_cap="ignore"))
    sc.add_entity(morphs.Plane(pos=(0.1, -0.05, 0.0)), Rigid())
    for i in range(8):
        x, y = (i % 4) * 0.35, (i // 4) * 0.35
        sc.add_entity(morphs.Box(size=(0.2, 0.2, 0.2), pos=(x, y, 0.15 + 0.05 * i), euler=(5 * i, 0, 15 * i)),
                      Rigid(rho=125.0))
    sc.build()
    for _ in range(settle_steps):
        sc.step()
    sap = next(c for c in sc.couplers if c.name == "sap")
    sap._rigid["rigid"].warm_ok.zero_()
    sc.step()
    st = sap.get_solver_stats()
    cost = st["cost"][st["cost"] >= 0]
    res = st["residual_history"][st["residual_history"] >= 0]
    if out_dir is not None:
        os.makedirs(out_dir, exist_ok=True)
        with open(os.path.join(out_dir, "sap_convergence.csv"), "w") as fh:
            fh.write("iteration,cost_minus_final,gradient_norm\n")
            for k, (c, r) in enumerate(zip(cost, res)):
                fh.write(f"{k},{c - cost[-1]:.6e},{r:.6e}\n")
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        ax.semilogy(np.arange(len(cost) - 1), np.maximum(cost[:-1] - cost[-1], 1e-300), "o-", label="ℓ − ℓ_final")
        ax.semilogy(np.arange(len(res)), res, "s-", label="‖D∇ℓ‖")
        ax.set_xlabel("Newton iteration")
        ax.set_title(f"SAP, 8 boxes landing ({int(sap.get_impulses()['count'])} contacts), cold start")
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, "sap_convergence.png"), dpi=90)
    return cost, res


def _cpu_per_env_step(sc, n_envs, steps=20):
    t0 = time.process_time()
    for _ in range(steps):
        sc.step()
    return (time.process_time() - t0) / (steps * n_envs)


def run(quick: bool = False) -> list[dict]:
    import warp as wp

    wp.config.log_level = getattr(wp, "LOG_WARNING", 30)
    rows = []
    tkw = dict(min_time=0.3 if quick else 1.0, min_steps=3, repeats=2 if quick else 3)
    for n in ((64,) if quick else (64, 1024)):
        sap = _scene(n, True)
        t_sap = time_steps(sap.step, warmup=2, **tkw)
        coupler = next(c for c in sap.couplers if c.name == "sap")
        per_step = []
        for _ in range(20):
            sap.step()
            per_step.append(coupler.get_solver_stats()["iterations_step"])
        iters = float(np.mean(per_step))
        cpu_sap = _cpu_per_env_step(sap, n)
        del sap
        own = _scene(n, False)
        t_own = time_steps(own.step, warmup=2, **tkw)
        cpu_own = _cpu_per_env_step(own, n)
        del own
        rows.append(row(f"8 boxes resting, n_envs={n}", "env-steps/s", "env*steps/s", n / t_sap, n / t_own,
                        "rigid solver's own Newton solve", ratio=(n / t_sap) / (n / t_own),
                        notes="graph capture, 1 thread, float64; ratio > 1: SAP faster"))
        rows.append(row(f"8 boxes resting, n_envs={n}", "CPU time per env-step", "us", cpu_sap * 1e6,
                        cpu_own * 1e6, "rigid solver's own Newton solve",
                        notes="time.process_time, 1 thread"))
        rows.append(row(f"8 boxes resting, n_envs={n}", "SAP Newton iterations per step", "iterations", iters,
                        notes="mean over envs and 20 steps, warm-started from the last step"))
    try:
        import pydrake.all  # noqa: F401
        t_drake = _drake_seconds_per_step(quick)
        rows.append(row("8 boxes resting (corner spheres), 1 env", "env-steps/s", "env*steps/s", n / t_sap,
                        1.0 / t_drake, "Drake SAP (one MultibodyPlant)", ratio=(n / t_sap) * t_drake,
                        notes=f"polyphys at n_envs={n} (batched, 1 thread) vs Drake stepping one env"))
    except ImportError as exc:
        rows.append(row("8 boxes resting, Drake", "env-steps/s", "env*steps/s", n / t_sap,
                        notes=f"Drake not installed ({exc}); pip install drake"))
    return rows


if __name__ == "__main__":
    import os
    import sys

    if "--plot" in sys.argv:
        c, r = convergence(os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
        print("iterations", len(r) - 1, "cost", c, "gradient", r)
