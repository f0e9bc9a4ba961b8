"""Shared helpers of the MPM tests: small scenes and conserved quantities."""

import warnings

import attrs
import numpy as np
import polyphys
from polyphys import morphs
from polyphys.plugins.mpm import MPMOptions

M = polyphys.materials.MPM


# The domain's lower corner in these tests: a generic point, not the origin (a grid that ignores
# lower_bound, or walls placed relative to the origin, fail here). Entity positions given to make_scene
# are relative to it; read-back positions are absolute (subtract LO).
LO = np.array((-0.17, 0.23, -0.11))


def make_scene(entities, *, dt=2e-3, substeps=1, gravity=(0.0, 0.0, -9.81), n_envs=0, graph_capture=True,
               size=(0.5, 0.5, 0.5), **opts):
    """A scene over the domain [LO, LO + size] (walls on its faces); each entity (morph, material,
    kwargs) is placed at LO + morph.pos."""
    opts.setdefault("lower_bound", tuple(LO))
    opts.setdefault("upper_bound", tuple(LO + np.asarray(size)))
    opts.setdefault("grid_density", 32.0)
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=dt, substeps=substeps, gravity=gravity,
                                                   graph_capture=graph_capture, nan_policy="raise"),
                           mpm=MPMOptions(**opts))
    ents = [scene.add_entity(attrs.evolve(m, pos=tuple(LO + np.asarray(m.pos))), material=mat, **kw)
            for m, mat, kw in entities]
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # a test scene must not trigger resolution/CFL/alignment warnings
        scene.build(n_envs=n_envs)
    return scene, ents


def totals(scene):
    """Linear momentum, angular momentum about the domain corner LO (APIC affine term included) and
    kinetic energy of every particle of the MPM solver, per env (float64)."""
    s = scene.solver("mpm")
    m = s.particle_mass()
    x = s.pos.numpy().astype(np.float64) - LO
    v = s.vel.numpy().astype(np.float64)
    C = s.C.numpy().astype(np.float64)
    P = np.einsum("p,epi->ei", m, v)
    # APIC: L_p = x_p × m_p v_p + m_p dx²/4 (C_zy − C_yz, C_xz − C_zx, C_yx − C_xy)   (Jiang et al. 2015)
    d = s.options.dx ** 2 / 4.0
    aff = np.stack([C[..., 2, 1] - C[..., 1, 2], C[..., 0, 2] - C[..., 2, 0], C[..., 1, 0] - C[..., 0, 1]], -1)
    L = np.einsum("p,epi->ei", m, np.cross(x, v) + d * aff)
    K = 0.5 * np.einsum("p,epi,epi->e", m, v, v)
    return P, L, K


def corotated_energy(F, mu, lam, vol):
    """Σ V ψ(F), ψ = μ Σ(σ_i − 1)² + λ/2 (J − 1)² (fixed corotated)."""
    sig = np.linalg.svd(F.astype(np.float64), compute_uv=False)
    det = np.linalg.det(F.astype(np.float64))
    # signed smallest singular value (inversion) as the solver's svd3 gives it
    sig[..., -1] *= np.sign(det)
    return float(np.sum(vol * (mu * np.sum((sig - 1.0) ** 2, -1) + 0.5 * lam * (det - 1.0) ** 2)))


def cube(size=0.1, pos=(0.25, 0.25, 0.25), material=None, name=None):
    return (morphs.Box(size=(size,) * 3, pos=pos), material or M.Elastic(E=1e4), {"name": name} if name else {})
