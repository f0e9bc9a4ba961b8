"""FEM demo: a soft corotated cantilever and a Neo-Hookean jelly cube (the scene of
examples/fem_cantilever_jelly.toml), rendered as shaded boundary triangles with matplotlib.

    python examples/fem_demo.py OUT_DIR [--steps 100]

Writes OUT_DIR/fem_demo_XXX.png (a few frames) and OUT_DIR/fem_demo_strip.png (all frames side by
side), and prints the cantilever tip sag and the cube's final height.
"""

from __future__ import annotations

import argparse
import os

import numpy as np


def build():
    import polyphys
    from polyphys import morphs
    from polyphys.plugins.fem import FEMOptions

    FEM = polyphys.materials.FEM
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.02, substeps=2),
                           fem=FEMOptions(integrator="implicit", newton_iters=3, cg_iters=40,
                                          floor_height=0.0, friction=0.6))
    beam = scene.add_entity(morphs.Box(size=(0.6, 0.08, 0.08), pos=(0.3, 0.0, 0.6)),
                            FEM.Elastic(E=2e6, nu=0.3, rho=800.0, model="corotated", damping_mass=0.2),
                            name="cantilever", resolution=(15, 2, 2), fixed=lambda x: x[:, 0] < 1e-4)
    jelly = scene.add_entity(morphs.Box(size=(0.15, 0.15, 0.15), pos=(0.9, 0.0, 0.4), euler=(20, 10, 0)),
                             FEM.NeoHookean(E=2e4, nu=0.45, rho=1000.0, damping_stiffness=0.005),
                             name="jelly", resolution=3)
    scene.build()
    return scene, [beam, jelly]


def draw(ax, entities, title):
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    light = np.array([0.3, -0.5, 0.8])
    light /= np.linalg.norm(light)
    for e, colour in zip(entities, ([0.3, 0.5, 0.9], [0.9, 0.4, 0.5])):
        x = e.get_vertices_pos()
        tri = x[e.surface_triangles]
        n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
        n /= np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-12)
        shade = 0.35 + 0.65 * np.clip(n @ light, 0, 1)
        ax.add_collection3d(Poly3DCollection(tri, facecolors=np.asarray(colour)[None] * shade[:, None],
                                             edgecolors=(0, 0, 0, 0.15), linewidths=0.2))
    ax.set_xlim(-0.05, 1.05)
    ax.set_ylim(-0.55, 0.55)
    ax.set_zlim(0.0, 0.8)
    ax.set_box_aspect((1.1, 1.1, 0.8))
    ax.view_init(elev=18, azim=-70)
    ax.set_title(title, fontsize=9)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_zticks([])


def main(argv=None):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="folder for the pictures")
    ap.add_argument("--steps", type=int, default=100)
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    scene, ents = build()
    beam, jelly = ents
    tip0 = beam.get_vertices_pos()[:, 2].min()
    shots = sorted({0, args.steps // 8, args.steps // 4, args.steps // 2, args.steps})
    strip = plt.figure(figsize=(3.2 * len(shots), 3.2))
    for i in range(args.steps + 1):
        if i in shots:
            t = scene.get_time()
            fig = plt.figure(figsize=(5, 4))
            draw(fig.add_subplot(projection="3d"), ents, f"t = {t:.2f} s")
            fig.savefig(os.path.join(args.out, f"fem_demo_{i:03d}.png"), dpi=110)
            plt.close(fig)
            ax = strip.add_subplot(1, len(shots), shots.index(i) + 1, projection="3d")
            draw(ax, ents, f"t = {t:.2f} s")
        if i < args.steps:
            scene.step()
    strip.tight_layout()
    strip.savefig(os.path.join(args.out, "fem_demo_strip.png"), dpi=110)
    sag = tip0 - beam.get_vertices_pos()[:, 2].min()
    print(f"cantilever tip sag {sag:.4f} m; jelly centre height {jelly.get_pos()[2]:.4f} m")
    assert np.isfinite(beam.get_vertices_pos()).all() and jelly.get_vertices_pos()[:, 2].min() > -1e-4
    return sag


if __name__ == "__main__":
    main()
