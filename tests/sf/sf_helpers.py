"""Small SF scenes shared by the SF tests."""

import numpy as np
import polyphys
from polyphys import morphs
from polyphys.plugins.sf.materials import Emitter, Smoke
from polyphys.plugins.sf.options import SFOptions

LO = (0.13, -0.27, 0.05)          # generic, off-origin domain corner


def make_scene(n_envs=0, res=(12, 10, 14), dx=0.05, dt=0.02, substeps=1, gravity=(0.0, 0.0, -9.81),
               entities=None, graph_capture=True, cpu_threads=None, precision="32", **opts):
    """A scene with an SF solver over a box at LO; ``entities``: [(morph, material, kwargs)], default
    one small smoke blob (an SF solver needs an entity)."""
    o = SFOptions(lower_bound=LO, res=res, dx=dx, **opts)
    sc = polyphys.Scene(sim=polyphys.SimOptions(dt=dt, substeps=substeps, gravity=gravity, graph_capture=graph_capture,
                                                cpu_threads=cpu_threads, precision=precision), sf=o)
    if entities is None:
        c = np.asarray(LO) + 0.5 * np.asarray(res) * dx
        entities = [(morphs.Sphere(radius=1.2 * dx, pos=tuple(c)), Smoke(density=0.0), {})]
    handles = [sc.add_entity(m, material=mat, **(kw or {})) for m, mat, kw in entities]
    return sc, handles


def center(res, dx, frac=(0.5, 0.5, 0.5)):
    return tuple(float(x) for x in np.asarray(LO) + np.asarray(frac) * np.asarray(res) * dx)


def random_solenoidal(s, rng, scale=0.5):
    """A divergence-free-ish random smooth field written on the faces (the projection cleans it)."""
    P = s.face_positions()
    lo = np.asarray(s.options.lower_bound)
    out = {}
    for a, c in enumerate("uvw"):
        x = P[c] - lo
        ph = rng.uniform(0, 2 * np.pi, size=3)
        out[c] = scale * np.sin(3.1 * x[..., (a + 1) % 3] + ph[0]) * np.cos(2.3 * x[..., (a + 2) % 3] + ph[1])
    return out


__all__ = ["Emitter", "Smoke", "make_scene", "center", "random_solenoidal", "LO"]
