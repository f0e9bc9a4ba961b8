"""SAP coupler rigid–FEM demo (docs/sap.md, "Rigid–FEM contact"): a rigid box dropped onto a soft
FEM block resting on a rigid floor, every contact (floor–block vertices, box–block vertices) solved
by the SAP coupler in one convex problem per step. Plots the floor's normal force and the force on
the box over time, and draws a side view of the block's vertices and the box at the end.

    python examples/sap_fem_press.py OUT_DIR [--steps 160]

Writes OUT_DIR/sap_fem_press.png. The floor force settles at the total weight, the box force at the
box's weight.
"""

from __future__ import annotations

import argparse
import os

import numpy as np

G = 9.81


def build():
    import polyphys
    from polyphys import morphs
    from polyphys.couplers.sap.options import SapOptions
    from polyphys.plugins.fem import FEMOptions
    from polyphys.plugins.fem.materials import Elastic
    from polyphys.plugins.rigid.materials import Rigid

    opts = SapOptions(point_stiffness=2.0e4, dissipation_time_constant=0.01, fem_friction=0.5)
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.005, substeps=10, precision="64"), coupler=opts,
                           fem=FEMOptions())
    scene.add_entity(morphs.Plane(pos=(0.0, 0.0, 0.0)), Rigid())
    block = scene.add_entity(morphs.Box(size=(0.24, 0.2, 0.08), pos=(0.0, 0.0, 0.04), euler=(0, 0, 10)),
                             Elastic(E=1.0e5, nu=0.3, rho=1000.0, damping_mass=30.0), resolution=10, name="block")
    box = scene.add_entity(morphs.Box(size=(0.1, 0.08, 0.06), pos=(0.01, 0.0, 0.13), euler=(0, 0, 35)),
                           Rigid(rho=2000.0), name="box")
    scene.build()
    return scene, block, box


def run(steps: int):
    scene, block, box = build()
    m_box = float(box.get_links_mass().sum())
    weight = (float(block.vertex_mass.sum()) + m_box) * G
    sap = next(c for c in scene.couplers if c.name == "sap")
    t, floor, on_box, iters = [], [], [], []
    for k in range(steps):
        scene.step()
        c = sap.get_fem_contacts()
        n = c["count"]
        fz = c["force"][:n, 2]
        floor.append(float(np.sum(fz[c["geom"][:n] == 0])))
        on_box.append(float(-np.sum(fz[c["geom"][:n] == 1])))
        t.append((k + 1) * scene.sim_options.dt)
        iters.append(int(sap.get_solver_stats()["iterations_step"]))
    return (np.array(t), np.array(floor), np.array(on_box), np.array(iters), weight, m_box * G,
            block.get_vertices_pos(), box)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--steps", type=int, default=160)
    a = ap.parse_args(argv)
    os.makedirs(a.out_dir, exist_ok=True)
    t, floor, on_box, iters, weight, box_weight, verts, box = run(a.steps)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    ax1.plot(t, floor, label="floor normal force")
    ax1.plot(t, on_box, label="force on the box (z)")
    ax1.axhline(weight, color="k", ls="--", lw=0.8, label="total weight")
    ax1.axhline(box_weight, color="gray", ls=":", lw=0.8, label="box weight")
    ax1.set_xlabel("time (s)")
    ax1.set_ylabel("N (last substep)")
    ax1.legend(fontsize=8)
    ax2.scatter(verts[:, 0], verts[:, 2], s=3, c=verts[:, 1], cmap="viridis")
    # the box's corners, side view (x–z)
    from polyphys.rotations import quat_to_mat

    R = quat_to_mat(np.asarray(box.get_quat(), float))
    half = np.array([0.05, 0.04, 0.03])
    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * half
    pts = corners @ R.T + np.asarray(box.get_pos(), float)
    ax2.scatter(pts[:, 0], pts[:, 2], s=25, c="tab:red", marker="s", label="box corners")
    ax2.axhline(0.0, color="k", lw=0.8)
    ax2.set_aspect("equal")
    ax2.set_xlabel("x (m)")
    ax2.set_ylabel("z (m)")
    ax2.legend(fontsize=8, loc="upper right")
    ax2.set_title("side view at the end (vertices coloured by y)", fontsize=9)
    fig.suptitle("SAP coupler: a rigid box on a soft FEM block on a rigid floor")
    fig.tight_layout()
    path = os.path.join(a.out_dir, "sap_fem_press.png")
    fig.savefig(path, dpi=90)
    print(f"wrote {path}; final floor force {floor[-1]:.3f} N vs total weight {weight:.3f} N; force on the box "
          f"{on_box[-1]:.3f} N vs its weight {box_weight:.3f} N; SAP Newton iterations per step: mean "
          f"{iters.mean():.2f}, max {iters.max()}")
    return path, floor, on_box, weight, box_weight


if __name__ == "__main__":
    main()
