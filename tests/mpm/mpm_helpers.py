"""Shared helpers of the MPM tests: small scenes and conserved quantities."""

import math
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


# Martin & Moyce (1952), "An experimental study of the collapse of liquid columns on a rigid
# horizontal plane", Phil. Trans. R. Soc. A 244: surge front of a column of width a = 2.25 in and
# height 2a (n² = 2), dimensionless front Z = x/a against T = t·sqrt(2g/a) (their table, as used in
# SPH/MPM dam-break validations).
MARTIN_MOYCE_T = np.array([0.41, 0.84, 1.19, 1.43, 1.63, 1.83, 1.98, 2.20, 2.32, 2.51, 2.65, 2.83, 2.98, 3.11])
MARTIN_MOYCE_Z = np.array([1.11, 1.22, 1.44, 1.67, 1.89, 2.11, 2.33, 2.56, 2.78, 3.00, 3.22, 3.44, 3.67, 3.89])


def dam_break_front(dens: float, T_end: float, a: float = 0.1):
    """Column a wide, 2a tall, 0.05 m thick between free-slip walls (a slab: the flow is 2D), weakly
    compressible water (sound speed ≈ 20 m/s, 10x the front speed sqrt(2 g · 2a)), 8 particles per
    cell at grid_density ``dens``; runs to T = t·sqrt(2g/a) = T_end. Returns (T, Z) per step, Z =
    x_front/a, the front measured from the -x wall (x = 0 of the experiment)."""
    g = 9.81
    dx = 1 / dens
    pad = 3 * dx
    water = M.Liquid(E=1.44e6, nu=0.2, rho=1000.0)
    # cells between the walls (the grid of the original set-up, 0.6 x (0.05 m + 2 cells) x 0.25 m with
    # its 3-cell wall layers inside, less those layers)
    nx = math.ceil(0.6 * dens - 1e-9) - 6
    ny = math.ceil(0.05 * dens + 8 - 1e-9) - 6
    nz = math.ceil(0.25 * dens + 3 - 1e-9) - 6
    opts = MPMOptions(lower_bound=(pad, pad, pad), upper_bound=(pad + nx * dx, pad + ny * dx, pad + nz * dx),
                      grid_density=dens, boundary="slip")
    h = 0.8 * opts.cfl_number * dx / water.wave_speed
    substeps = 4
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=h * substeps, substeps=substeps), mpm=opts)
    wall = pad
    col = scene.add_entity(morphs.Box(size=(a, 0.05, 2 * a), pos=(wall + a / 2, pad + dx + 0.025, pad + a)), water)
    scene.build()
    T, Z = [], []
    for i in range(int(T_end / math.sqrt(2 * g / a) / (h * substeps)) + 1):
        scene.step()
        T.append((i + 1) * h * substeps * math.sqrt(2 * g / a))
        Z.append((col.get_particles_pos()[:, 0].max() - wall) / a)
    return np.array(T), np.array(Z)
