"""Shared helpers of the polyphys-ballistic tests (importable by name: tests/conftest.py puts this
folder on sys.path). ``require_ballistic()`` skips the calling module when the distribution is not
installed: tests/thirdparty is on sys.path too, so an import alone would not tell."""

from __future__ import annotations

import importlib.metadata as md
from pathlib import Path

import numpy as np
import pytest

DIST = "polyphys-ballistic"


SOURCE = Path(__file__).resolve().parent.parent / "thirdparty"


def installed() -> bool:
    """True when polyphys-ballistic is installed in the environment (editable or not).

    Metadata found in the source folder itself (a ``polyphys_ballistic.egg-info`` a build left in
    tests/thirdparty, seen because tests/thirdparty is on sys.path) is not an install: a fresh
    interpreter would not find the plugin."""
    try:
        dist = md.distribution(DIST)
    except md.PackageNotFoundError:
        return False
    return Path(str(dist.locate_file(""))).resolve() != SOURCE


def require_ballistic():
    """Skip the calling test module unless polyphys-ballistic is installed (with its entry point)."""
    if not installed():
        pytest.skip(f"{DIST} is not installed (pip install -e tests/thirdparty)", allow_module_level=True)
    return pytest.importorskip("polyphys_ballistic")


def composed_scene(n_envs=2, precision="32", graph_capture=True, cpu_threads=None, dt=0.01, substeps=2):
    """A kinematic box next to two ballistic particle bodies (box, sphere) in one scene.

    ``coupler=False``: the two solvers are composed side by side; no coupler acts between them, so the
    expectations below do not depend on which couplers are installed."""
    import polyphys
    from polyphys import morphs
    from polyphys_ballistic.options import BallisticOptions

    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=dt, substeps=substeps, precision=precision,
                                                   graph_capture=graph_capture, cpu_threads=cpu_threads),
                           coupler=False, ballistic=BallisticOptions(particle_size=0.1))
    box = scene.add_entity(morphs.Box(size=(0.2, 0.2, 0.2), pos=(-1.0, 0.0, 0.5)),
                           polyphys.materials.Kinematic(), name="paddle")
    block = scene.add_entity(morphs.Box(size=(0.3, 0.3, 0.3), pos=(0.0, 0.0, 0.16)),
                             polyphys.materials.Ballistic(restitution=0.6, friction=0.3), name="block")
    ball = scene.add_entity(morphs.Sphere(radius=0.15, pos=(1.0, 0.0, 0.4)),
                            polyphys.materials.Ballistic(rho=500.0, restitution=0.9), name="ball")
    scene.build(n_envs=n_envs)
    return scene, box, block, ball


def drive(scene, seed: int) -> None:
    """Give every env its own kinematic box velocity and particle velocities."""
    rng = np.random.default_rng(seed)
    n = max(1, scene.n_envs)
    box, block, ball = scene.entities
    lead = (n,) if scene.batched else ()
    box.set_dofs_velocity(rng.normal(size=(*lead, 6)))
    block.set_vel(rng.normal(size=(*lead, block.n_particles, 3)))
    ball.set_vel(rng.normal(size=(*lead, ball.n_particles, 3)))


def states_equal(a: dict, b: dict, env=None) -> bool:
    """Bit-for-bit equality of two scene.get_state() dicts (optionally of one env row)."""
    for name in a["solvers"]:
        for k, va in a["solvers"][name].items():
            vb = b["solvers"][name][k]
            if env is not None:
                va, vb = va[env], vb[env]
            if va.shape != vb.shape or va.tobytes() != vb.tobytes():
                return False
    return True
