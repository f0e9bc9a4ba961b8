"""Contract scene of the MPM solver: a small elastic cube and a sand block in a coarse domain."""

from polyphys import morphs

from .materials import Elastic, Sand
from .options import MPMOptions


def scene():
    opts = MPMOptions(lower_bound=(0.0, 0.0, 0.0), upper_bound=(0.5, 0.5, 0.5), grid_density=32.0)
    cube = (morphs.Box(size=(0.1, 0.1, 0.1), pos=(0.17, 0.25, 0.25)), Elastic(E=2e3, rho=500.0),
            {"name": "jelly"})
    sand = (morphs.Box(size=(0.08, 0.08, 0.12), pos=(0.33, 0.25, 0.2)), Sand(E=1e4, friction_angle=30.0),
            {"name": "sand"})

    def drive(scene, rng):
        """Give every env a different velocity so env isolation is visible."""
        n = max(1, scene.n_envs)
        for e in scene.entities:
            v = rng.normal(scale=0.5, size=(n, 3))
            e.set_velocity(v if scene.batched else v[0])

    return [cube, sand], opts, drive
