"""Contract scene of the SF solver: a hot smoke blob and a jet emitter in a small open-top box."""

from polyphys import morphs

from .materials import Emitter, Smoke
from .options import SFOptions


def scene():
    opts = SFOptions(lower_bound=(0.1, -0.2, 0.0), res=(10, 8, 12), dx=0.05, open_faces=("+z",),
                     vorticity_confinement=0.5, viscosity=1e-3, max_iterations=12, tolerance=1e-4)
    blob = (morphs.Sphere(radius=0.1, pos=(0.3, 0.0, 0.15)), Smoke(density=1.0, temperature=2.0), {"name": "blob"})
    jet = (morphs.Box(size=(0.1, 0.12, 0.08), pos=(0.38, 0.0, 0.3), euler=(0.0, 0.0, 25.0)),
           Emitter(rate=2.0, heat=5.0, velocity=(0.0, 0.0, 0.5)), {"name": "jet"})

    def drive(scene, rng):
        """Give every env its own jet velocity, rate and position so env isolation is visible."""
        n = max(1, scene.n_envs)
        jet_e = scene.entities[1]
        v = rng.normal(scale=0.5, size=(n, 3))
        rate = rng.uniform(0.5, 3.0, size=n)
        pos = (0.38, 0.0, 0.3) + rng.uniform(-0.04, 0.04, size=(n, 3))
        if not scene.batched:
            v, rate, pos = v[0], rate[0], pos[0]
        jet_e.set_velocity(v)
        jet_e.set_rate(rate)
        jet_e.set_pos(pos)

    return [blob, jet], opts, drive
