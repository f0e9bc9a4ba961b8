"""Contract scene of the FEM solver: a small corotated box clamped at one end and a free
Neo-Hookean cube resting on a frictional floor (yawed, off-centre), stepped implicitly, so that
the contacts and the friction inside the Newton solve take part in the bit-exactness checks (the
explicit integrator's are in tests/fem/test_fem_api.py)."""

from polyphys import morphs

from .materials import Elastic, NeoHookean
from .options import FEMOptions


def scene():
    beam = (morphs.Box(size=(0.4, 0.1, 0.1), pos=(0.0, 0.0, 0.5)),
            Elastic(E=2e4, nu=0.3, rho=500.0, damping_mass=0.5, damping_stiffness=0.002),
            {"name": "beam", "resolution": (4, 1, 1), "fixed": lambda x: x[:, 0] < -0.199})
    cube = (morphs.Box(size=(0.1, 0.1, 0.1), pos=(0.5, -0.1, 0.0502), euler=(0, 0, 25)),
            NeoHookean(E=1e4, nu=0.4, rho=500.0), {"name": "cube", "resolution": 1})

    def drive(scene, rng):
        """A different initial velocity per env so that env isolation is visible (the cube slides
        on the floor or lifts off it)."""
        n = max(1, scene.n_envs)
        for e in scene.entities:
            v = rng.normal(scale=0.3, size=(n, e.n_vertices, 3))
            e.set_vertices_vel(v if scene.batched else v[0])

    # small iteration caps: every check steps several scenes, uncaptured ones launch each kernel from Python
    opts = FEMOptions(integrator="implicit", floor_height=0.0, friction=0.5, newton_iters=2, cg_iters=10,
                      line_search_iters=3)
    return [beam, cube], opts, drive
