"""Contract scene of the tool solver: a rotated box tool and a capsule tool, driven per env."""

from polyphys import morphs

from .materials import Tool
from .options import ToolOptions


def scene():
    box = (morphs.Box(size=(0.2, 0.1, 0.05), pos=(0.3, -0.1, 0.4), euler=(10, 20, 30)), Tool(), {"name": "blade"})
    cap = (morphs.Capsule(radius=0.03, height=0.2, pos=(-0.2, 0.15, 0.3)), Tool(coup_friction=0.1), {"name": "rod"})

    def drive(scene, rng):
        """Every env its own linear and angular velocity, so env isolation is visible."""
        n = max(1, scene.n_envs)
        for e in scene.entities:
            v, w = rng.normal(scale=0.3, size=(n, 3)), rng.normal(scale=1.0, size=(n, 3))
            e.set_velocity(v if scene.batched else v[0])
            e.set_angular_velocity(w if scene.batched else w[0])

    return [box, cap], ToolOptions(), drive
