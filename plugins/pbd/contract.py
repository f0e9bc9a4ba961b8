"""Contract scene of the PBD solver: a small cloth pinned at two corners, a granular block, a liquid
block and a shape-matched elastic ball, all in one domain box, so that every stage runs."""

from polyphys import morphs

from .materials import Cloth, Elastic, Liquid, Particle
from .options import PBDOptions
from .sampling import grid_cloth


def scene():
    ents = [
        (grid_cloth(size=(0.2, 0.2), res=(5, 5), pos=(0.0, 0.0, 0.3)), Cloth(), {"name": "cloth", "pinned": [0, 4]}),
        (morphs.Box(size=(0.06, 0.06, 0.06), pos=(0.0, 0.0, 0.1)), Particle(), {"name": "sand"}),
        (morphs.Box(size=(0.06, 0.06, 0.06), pos=(0.12, 0.0, 0.05)), Liquid(), {"name": "water"}),
        (morphs.Sphere(radius=0.03, pos=(-0.12, 0.0, 0.1)), Elastic(), {"name": "ball"}),
    ]
    opts = PBDOptions(iterations=2, lower_bound=(-0.25, -0.25, 0.0), upper_bound=(0.25, 0.25, 0.5))

    def drive(scene, rng):
        """A different velocity per env for every entity, and a different pinning of the cloth."""
        n = max(1, scene.n_envs)
        for e in scene.entities:
            if e.solver.name != "pbd":
                continue
            v = rng.normal(scale=0.3, size=(n, e.n_particles, 3))
            e.set_particles_vel(v if scene.batched else v[0])
        cloth = scene.entities[0]
        if scene.batched and n > 1:
            cloth.set_particles_free([True], particles_idx_local=[0], envs_idx=[1])

    return ents, opts, drive
