"""SAP coupler demo (docs/sap.md): a cube dropped onto a box resting on a plane, the contacts
solved by the SAP coupler (convex compliant contact, Drake's parameters). Plots the ground's normal
force and each box's height over time, and prints the SAP iterations per step.

    python examples/sap_boxes.py OUT_DIR [--steps 150]

Writes OUT_DIR/sap_boxes.png. The ground force settles at the total weight of both.
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
    from polyphys.plugins.rigid.materials import Rigid

    opts = SapOptions(point_stiffness=2e5, geom_point_stiffness={0: float("inf")}, dissipation_time_constant=0.01)
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=4, precision="64"), coupler=opts)
    scene.add_entity(morphs.Plane(pos=(0.0, 0.0, 0.0)), Rigid())
    boxes = [scene.add_entity(morphs.Box(size=(0.3, 0.2, 0.1), pos=(0.02, 0.01, 0.05), euler=(0, 0, 15)),
                              Rigid(rho=500.0, friction=0.6), name="base")]
    boxes.append(scene.add_entity(morphs.Box(size=(0.15, 0.15, 0.15), pos=(0.03, 0.0, 0.5), euler=(0, 0, 40)),
                                  Rigid(rho=400.0, friction=0.6), name="dropped"))
    scene.build()
    return scene, boxes


def run(steps: int):
    scene, boxes = build()
    weight = sum(float(b.get_links_mass().sum()) for b in boxes) * G
    sap = next(c for c in scene.couplers if c.name == "sap")
    t, ground, heights, iters = [], [], [], []
    for k in range(steps):
        scene.step()
        c = boxes[0].get_contacts()              # the base box's contacts: ground (geom 0) and the cube
        fz = float(np.sum(np.where(c["geom_a"] == 0, -c["force_a"][:, 2], 0.0))
                   + np.sum(np.where(c["geom_b"] == 0, c["force_a"][:, 2], 0.0)))
        t.append((k + 1) * scene.sim_options.dt)
        ground.append(fz)
        heights.append([float(b.get_pos()[2]) for b in boxes])
        iters.append(int(sap.get_solver_stats()["iterations_step"]))
    return np.array(t), np.array(ground), np.array(heights), np.array(iters), weight


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--steps", type=int, default=150)
    a = ap.parse_args(argv)
    os.makedirs(a.out_dir, exist_ok=True)
    t, ground, heights, iters, weight = run(a.steps)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    ax1.plot(t, ground, label="ground normal force (last substep)")
    ax1.axhline(weight, color="k", ls="--", lw=0.8, label="total weight")
    ax1.set_ylabel("N")
    ax1.legend()
    for i, name in enumerate(("base", "dropped")):
        ax2.plot(t, heights[:, i], label=name)
    ax2.set_xlabel("time (s)")
    ax2.set_ylabel("height (m)")
    ax2.legend()
    fig.suptitle("SAP coupler: a cube dropped on a box")
    fig.tight_layout()
    path = os.path.join(a.out_dir, "sap_boxes.png")
    fig.savefig(path, dpi=90)
    print(f"wrote {path}; final ground force {ground[-1]:.3f} N vs weight {weight:.3f} N; "
          f"SAP Newton iterations per step: mean {iters.mean():.2f}, max {iters.max()}")
    return path, ground, weight


if __name__ == "__main__":
    main()
