"""Contract scene: what the generic contract test builds to exercise the declared capabilities."""

from polyphys import morphs

from .materials import Ballistic
from .options import BallisticOptions


def scene():
    """A box and a sphere of particles just above the ground; ``drive`` gives every env its own
    velocities so that env isolation is visible, and some particles bounce within a few steps."""
    block = (morphs.Box(size=(0.3, 0.3, 0.3), pos=(0.0, 0.0, 0.2)),
             Ballistic(restitution=0.6, friction=0.3), {"name": "block"})
    ball = (morphs.Sphere(radius=0.15, pos=(1.0, 0.0, 0.3)),
            Ballistic(rho=500.0, restitution=0.9), {"name": "ball"})

    def drive(scene, rng):
        for ent in scene.entities:
            shape = (max(1, scene.n_envs), ent.n_particles, 3) if scene.batched else (ent.n_particles, 3)
            ent.set_vel(rng.normal(size=shape))

    return [block, ball], BallisticOptions(particle_size=0.1), drive
