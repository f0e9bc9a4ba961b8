import numpy as np
import polyphys
import pytest
from polyphys import morphs


@pytest.fixture
def make_scene():
    """A small block of liquid in a small box; returns (scene, entity)."""
    from polyphys.plugins.sph import Liquid, SPHOptions

    def make(n_envs=0, solver="dfsph", graph_capture=True, substeps=2, dt=0.004, gamma=0.0, **opts):
        kw = dict(pressure_solver=solver, particle_size=0.04, lower_bound=(0, 0, 0),
                  upper_bound=(0.4, 0.24, 0.32), max_density_iters=6, max_divergence_iters=3)
        kw.update(opts)
        scene = polyphys.Scene(sim=polyphys.SimOptions(dt=dt, substeps=substeps,
                                                       graph_capture=graph_capture),
                               sph=SPHOptions(**kw))
        water = scene.add_entity(morphs.Box(size=(0.16, 0.16, 0.2), pos=(0.1, 0.12, 0.1)),
                                 material=Liquid(gamma=gamma, stiffness=2000.0), name="water")
        scene.build(n_envs=n_envs)
        return scene, water

    return make


def random_velocities(scene, water, seed=0):
    rng = np.random.default_rng(seed)
    n = max(1, scene.n_envs)
    v = rng.normal(scale=0.3, size=(n, water.n_particles, 3))
    water.set_particles_vel(v if scene.batched else v[0])
