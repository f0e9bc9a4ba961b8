"""RigidOptions.mesh_decomposition / decomposition_threshold: validated, and handed to the collision
pipeline the solver builds."""

import warnings

import numpy as np
import pytest
from polyphys.errors import OptionError, PolyphysWarning
from polyphys.plugins.rigid import RigidOptions


def test_defaults_and_validation():
    r = RigidOptions()
    assert (r.mesh_decomposition, r.decomposition_threshold) == ("auto", 0.05)
    for mode in ("auto", "coacd", "hull"):
        assert RigidOptions(mesh_decomposition=mode).mesh_decomposition == mode
    with pytest.raises(OptionError, match=r"mesh_decomposition = 'vhacd'.*'auto', 'coacd', 'hull'"):
        RigidOptions(mesh_decomposition="vhacd")
    for bad in (0.0, 1.5, float("nan"), "0.1"):
        with pytest.raises(OptionError, match=r"decomposition_threshold = .*\[0.01, 1.0\]"):
            RigidOptions(decomposition_threshold=bad)


def _u_channel():
    P = [(-0.3, 0), (0.3, 0), (0.3, 0.4), (0.2, 0.4), (0.2, 0.1), (-0.2, 0.1), (-0.2, 0.4),
         (-0.3, 0.4)]
    caps = [(0, 5, 6), (0, 6, 7), (0, 1, 4), (0, 4, 5), (1, 2, 3), (1, 3, 4)]
    v = np.array([[x, y, z] for y in (-0.3, 0.3) for x, z in P])
    f = list(caps) + [(a + 8, b + 8, c + 8) for a, b, c in caps]
    for i in range(8):
        j = (i + 1) % 8
        f += [(i, j, j + 8), (i, j + 8, i + 8)]
    return v, np.array(f)


def _pipeline(**opts):
    import polyphys
    from polyphys import morphs
    from polyphys.plugins.rigid.materials import Rigid

    v, f = _u_channel()
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01), rigid=RigidOptions(**opts))
    scene.add_entity(morphs.Mesh(vertices=v, faces=f, fixed=True), Rigid())
    scene.add_entity(morphs.Sphere(radius=0.05, pos=(0.0, 0.0, 0.25)), Rigid())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=0)
    return scene.solver("rigid").collision


def test_mesh_decomposition_reaches_the_collision_geometry():
    """The U channel collides as coacd parts by default and as one convex hull with
    mesh_decomposition="hull"; a coarser threshold gives fewer parts."""
    pytest.importorskip("coacd")
    hull = _pipeline(mesh_decomposition="hull")
    assert hull.options.mesh_decomposition == "hull" and not hull.decomposed
    parts = _pipeline(mesh_decomposition="coacd", decomposition_threshold=0.02)
    assert len(parts.decomposed[0]) >= 3
    assert parts.options.decomposition_threshold == 0.02
