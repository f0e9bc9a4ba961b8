"""Contract scene of the SPH solver: a small block of liquid in a small box, DFSPH."""

from polyphys import morphs

from .materials import Liquid
from .options import SPHOptions


def scene():
    opts = SPHOptions(particle_size=0.05, lower_bound=(0, 0, 0), upper_bound=(0.4, 0.3, 0.4),
                      max_density_iters=8, max_divergence_iters=4)
    # 0.2 x 0.2 x 0.1 m (4 x 4 x 2 particles): its fall speed keeps h = 0.01 s within the CFL estimate
    water = (morphs.Box(size=(0.2, 0.2, 0.1), pos=(0.12, 0.15, 0.06)), Liquid(gamma=0.01), {"name": "water"})

    def drive(scene, rng):
        """A different random velocity field in every env, so env isolation is visible."""
        e = scene.entities[0]
        n = max(1, scene.n_envs)
        v = rng.normal(scale=0.3, size=(n, e.n_particles, 3))
        e.set_particles_vel(v if scene.batched else v[0])

    return [water], opts, drive
