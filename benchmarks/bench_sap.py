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

FEM cube on a rigid floor (``fem_cube(quick)``, also in ``run``): a 0.13 m cube (E 1e5 Pa, ν 0.3,
ρ 1000 kg/m³, linear elasticity, mass damping α 20/s, yawed 30°, off the origin) on a rigid floor, a
structured tet mesh of 8 cells per edge (729 vertices, 3072 tets: the FEM plugin's ``box_mesh``).
polyphys: explicit (symplectic Euler) FEM, dt 5 ms with 20 substeps (h 0.25 ms, the explicit step's
stability needs it), float64, graph capture, one CPU thread; SAP point contact of the boundary
vertices against the plane, point stiffness 2e4 N/m per vertex, τ_d 0.01 s, μ 0.5. Drake 1.51: the
same tets (written to a VTK file, registered with ``DeformableModel.RegisterDeformableBody``),
``DeformableBodyConfig`` with the same E, ν, ρ, kLinear, mass damping 20/s, dt 5 ms (its implicit
FEM step, one step per dt), SAP; the floor a 1 × 1 × 0.1 m box welded to the world with the same
point stiffness (per contact point), relaxation time and friction. Both settle for 0.6 s before
timing; the rows report each engine's Σ contact force / weight and centre-of-mass height at the end
(the COM of both from the same tets, volume-weighted: uniform density).

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


# -- FEM cube on a rigid floor -----------------------------------------------------------------------
_CUBE = dict(L=0.13, E=1.0e5, nu=0.3, rho=1000.0, alpha=20.0, k=2.0e4, tau=0.01, mu=0.5, res=8, dt=0.005,
             substeps=20, floor=(0.11, -0.07, 0.03), settle=0.6)


def _tet_com(x, tets):
    """Centre of mass of a uniform-density tet mesh at vertex positions ``x`` (volume-weighted)."""
    d = x[tets]
    vol = np.einsum("ij,ij->i", np.cross(d[:, 1] - d[:, 0], d[:, 2] - d[:, 0]), d[:, 3] - d[:, 0])
    return (d.mean(axis=1) * vol[:, None]).sum(axis=0) / vol.sum()


def _fem_cube_scene(n_envs: int):
    import polyphys
    from polyphys import morphs
    from polyphys.couplers.sap.options import SapOptions
    from polyphys.plugins.fem import FEMOptions
    from polyphys.plugins.fem.materials import Elastic
    from polyphys.plugins.rigid.materials import Rigid

    c = _CUBE
    sc = polyphys.Scene(sim=polyphys.SimOptions(dt=c["dt"], substeps=c["substeps"], precision="64", cpu_threads=1),
                        coupler=SapOptions(point_stiffness=c["k"], dissipation_time_constant=c["tau"],
                                           fem_friction=c["mu"]),
                        fem=FEMOptions(integrator="explicit"))
    fl = c["floor"]
    sc.add_entity(morphs.Plane(pos=fl), Rigid(coup_friction=c["mu"]))
    L = c["L"]
    cube = sc.add_entity(morphs.Box(size=(L, L, L), pos=(fl[0] + 0.04, fl[1] + 0.02, fl[2] + L / 2), euler=(0, 0, 30)),
                         Elastic(E=c["E"], nu=c["nu"], rho=c["rho"], model="linear", damping_mass=c["alpha"]),
                         resolution=c["res"])
    sc.build(n_envs=n_envs)
    for _ in range(round(c["settle"] / c["dt"])):
        sc.step()
    return sc, cube


def _fem_cube_rest(sc, cube):
    """Env 0 at the end: (Σ contact force_z / weight, COM height above the floor, contact count)."""
    c = _CUBE
    sap = next(cp for cp in sc.couplers if cp.name == "sap")
    con = sap.get_fem_contacts(envs_idx=[0])
    n = int(con["count"][0])
    weight = c["rho"] * c["L"] ** 3 * 9.81
    fz = float(np.nansum(con["force"][0, :n, 2]))
    x = cube.get_vertices_pos(envs_idx=[0])[0]
    return fz / weight, _tet_com(x, cube.elements)[2] - c["floor"][2], n


def _write_vtk(path, verts, tets):
    with open(path, "w") as fh:
        fh.write("# vtk DataFile Version 3.0\npolyphys FEM cube\nASCII\nDATASET UNSTRUCTURED_GRID\n")
        fh.write(f"POINTS {len(verts)} double\n")
        fh.writelines(f"{x:.17g} {y:.17g} {z:.17g}\n" for x, y, z in verts)
        fh.write(f"CELLS {len(tets)} {5 * len(tets)}\n")
        fh.writelines(f"4 {a} {b} {c} {d}\n" for a, b, c, d in tets)
        fh.write(f"CELL_TYPES {len(tets)}\n" + "10\n" * len(tets))


def _drake_fem_cube(verts, tets, quick: bool):
    """Drake's deformable FEM + SAP on the same tets: (seconds per step, CPU seconds per step,
    force/weight, COM height, contact polygons)."""
    import os
    import tempfile

    from pydrake.all import (
        AddContactMaterial,
        AddMultibodyPlant,
        AddRigidHydroelasticProperties,
        Box,
        CoulombFriction,
        DeformableBodyConfig,
        DiagramBuilder,
        GeometryInstance,
        MaterialModel,
        Mesh,
        MultibodyPlantConfig,
        ProximityProperties,
        RigidTransform,
        Simulator,
    )

    c = _CUBE
    h, fl = c["dt"], c["floor"]
    b = DiagramBuilder()
    plant, _ = AddMultibodyPlant(MultibodyPlantConfig(time_step=h, discrete_contact_approximation="sap"), b)
    fp = ProximityProperties()
    AddContactMaterial(dissipation=None, point_stiffness=c["k"], friction=CoulombFriction(c["mu"], c["mu"]),
                       properties=fp)
    fp.AddProperty("material", "relaxation_time", c["tau"])
    AddRigidHydroelasticProperties(0.05, fp)     # the floor's surface mesh for deformable contact
    plant.RegisterCollisionGeometry(plant.world_body(), RigidTransform([fl[0], fl[1], fl[2] - 0.05]), Box(1.0, 1.0, 0.1),
                                    "floor", fp)
    cfg = DeformableBodyConfig()
    cfg.set_youngs_modulus(c["E"])
    cfg.set_poissons_ratio(c["nu"])
    cfg.set_mass_density(c["rho"])
    cfg.set_mass_damping_coefficient(c["alpha"])
    cfg.set_material_model(MaterialModel.kLinear)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "cube.vtk")
        _write_vtk(path, verts, tets)
        gi = GeometryInstance(RigidTransform(), Mesh(path), "cube")
        dp = ProximityProperties()
        AddContactMaterial(friction=CoulombFriction(c["mu"], c["mu"]), properties=dp)
        gi.set_proximity_properties(dp)
        dm = plant.mutable_deformable_model()
        body = dm.RegisterDeformableBody(gi, cfg, 1.0)
        plant.Finalize()
        sim = Simulator(b.Build())
    ctx = plant.GetMyContextFromRoot(sim.get_mutable_context())
    t = [c["settle"]]
    sim.AdvanceTo(t[0])

    def step():
        t[0] += h
        sim.AdvanceTo(t[0])

    sec = time_steps(step, min_time=0.3 if quick else 1.0, min_steps=3, warmup=1, repeats=2 if quick else 3)
    t0, steps = time.process_time(), 3 if quick else 10
    for _ in range(steps):
        step()
    cpu = (time.process_time() - t0) / steps
    x = np.asarray(dm.GetPositions(ctx, body))      # 3 × n_vertices
    x = x.T if x.shape[0] == 3 else x.reshape(-1, 3)
    cr = plant.get_contact_results_output_port().Eval(ctx)
    fz = sum(float(cr.deformable_contact_info(i).F_Ac_W().translational()[2]) for i in range(cr.num_deformable_contacts()))
    polys = sum(cr.deformable_contact_info(i).contact_mesh().num_faces() for i in range(cr.num_deformable_contacts()))
    weight = c["rho"] * c["L"] ** 3 * 9.81
    return sec, cpu, fz / weight, _tet_com(x, tets)[2] - fl[2], polys


def fem_cube(quick: bool = False) -> list[dict]:
    """FEM cube on a rigid floor: polyphys (explicit FEM + SAP) at n_envs 1 and 16 vs Drake's deformable
    FEM + SAP stepping one env (module docstring)."""
    c = _CUBE
    rows, per = [], {}
    L, E, rho = c["L"], c["E"], c["rho"]
    sag = rho * 9.81 * L ** 2 / (3 * E)       # linear-elastic CoM sag on a frictionless base (tests/sap/test_sap_fem.py)
    for n in (1, 16):
        sc, cube = _fem_cube_scene(n)
        sec = time_steps(sc.step, warmup=2, min_time=0.3 if quick else 1.0, min_steps=3, repeats=2 if quick else 3)
        cpu = _cpu_per_env_step(sc, n, steps=5 if quick else 10)
        fw, zc, nc = _fem_cube_rest(sc, cube)
        per[n] = (sec, cpu, fw, zc, nc)
        verts, tets = cube.rest_vertices, cube.elements
        del sc, cube
    note = (f"{len(verts)} vertices, {len(tets)} tets; polyphys explicit FEM, dt 5 ms × 20 substeps; "
            "Drake implicit FEM, one step per 5 ms")
    try:
        import pydrake.all  # noqa: F401
        d_sec, d_cpu, d_fw, d_zc, d_polys = _drake_fem_cube(verts, tets, quick)
    except ImportError as exc:
        d_sec = d_cpu = d_fw = d_zc = d_polys = None
        note += f"; Drake not installed ({exc}): pip install drake"
    ref = "Drake 1.51 deformable FEM + SAP (1 env)"
    for n, (sec, cpu, fw, zc, nc) in per.items():
        case = f"FEM cube on a floor, n_envs={n}"
        rows.append(row(case, "env-steps/s", "env*steps/s", n / sec, None if d_sec is None else 1.0 / d_sec,
                        ref if d_sec else "", ratio=None if d_sec is None else n * d_sec / sec, notes=note))
        rows.append(row(case, "CPU time per env-step", "ms", cpu * 1e3, None if d_cpu is None else d_cpu * 1e3,
                        ref if d_sec else "", notes="time.process_time; polyphys 1 thread"))
        rows.append(row(case, "Σ contact force_z / weight (env 0)", "-", fw, d_fw, ref if d_sec else "",
                        notes=f"polyphys {nc} vertex contacts; " + (f"Drake {d_polys} contact polygons; " if d_sec else "") +
                              "polyphys expects "
                              f"1/(1 + hα) = {1 / (1 + c['dt'] / c['substeps'] * c['alpha']):.4f}"))
        rows.append(row(case, "COM height above the floor (env 0)", "mm", zc * 1e3, None if d_zc is None else d_zc * 1e3,
                        ref if d_sec else "", notes=f"rest L/2 = {L / 2 * 1e3:.1f} mm; frictionless linear-elastic "
                                                    f"sag ρgL²/(3E) = {sag * 1e3:.3f} mm"))
    return rows


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
    rows += fem_cube(quick)
    return rows


if __name__ == "__main__":
    import os
    import sys

    if "--fem-cube" in sys.argv:
        for r in fem_cube("--quick" in sys.argv):
            print(r)
    if "--plot" in sys.argv:
        c, r = convergence(os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
        print("iterations", len(r) - 1, "cost", c, "gradient", r)
