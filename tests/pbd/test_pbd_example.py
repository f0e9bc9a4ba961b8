"""The example scene examples/pbd_cloth_drape.toml builds and runs (a shortened run), with an
assertion about its result."""

import os

import numpy as np
from polyphys import run

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "pbd_cloth_drape.toml")


def test_cloth_drape_example_runs():
    plan = run.parse_file(EXAMPLE)
    scene, (cloth, sand) = run.build_scene(plan)
    x0 = cloth.get_particles_pos()
    for _ in range(20):
        scene.step()
    x = cloth.get_particles_pos()
    # the cloth fell onto the sphere (centre z 0.2, radius 0.2): its centre rests on the top, its
    # free edges hang lower, and nothing went through the sphere
    assert x[:, 2].max() < x0[:, 2].max()
    centre = np.argmin(np.linalg.norm(x0[:, :2] - [-0.3, 0.0], axis=1))
    assert abs(x[centre, 2] - 0.4) < 0.01
    assert np.linalg.norm(x - [-0.3, 0.0, 0.2], axis=1).min() > 0.2 - 1e-3
    assert sand.get_particles_pos()[:, 2].max() < 0.35      # the block sank/collapsed
