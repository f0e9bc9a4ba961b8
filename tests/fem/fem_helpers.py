"""NumPy (float64) references for the FEM tests: deformation gradients, stresses, energies."""

import numpy as np


def lame(E, nu):
    return E / (2 * (1 + nu)), E * nu / ((1 + nu) * (1 - 2 * nu))


def defgrad(rest, pos, tets):
    """F per element (m, 3, 3) from rest and current vertex positions."""
    X, x = rest[tets], pos[tets]
    Dm = np.transpose(X[:, 1:] - X[:, :1], (0, 2, 1))
    Ds = np.transpose(x[:, 1:] - x[:, :1], (0, 2, 1))
    return Ds @ np.linalg.inv(Dm)


def linear_psi(F, mu, lam):
    eps = 0.5 * (F + np.transpose(F, (0, 2, 1))) - np.eye(3)
    tr = np.trace(eps, axis1=1, axis2=2)
    return mu * (eps ** 2).sum(axis=(1, 2)) + 0.5 * lam * tr ** 2


def linear_P(F, mu, lam):
    eps = 0.5 * (F + np.transpose(F, (0, 2, 1))) - np.eye(3)
    return 2 * mu * eps + lam * np.trace(eps, axis1=1, axis2=2)[:, None, None] * np.eye(3)


def snh_params(E, nu):
    """Stable Neo-Hookean (Smith et al. 2018) parameters from E, nu: (mu, lambda, alpha)."""
    mu_l, lam_l = lame(E, nu)
    mu, lam = 4.0 / 3.0 * mu_l, lam_l + 5.0 / 6.0 * mu_l
    return mu, lam, 1.0 + 0.75 * mu / lam


def snh_P_diag(a, b, c, E, nu):
    """Analytic P of the stable Neo-Hookean for F = diag(a, b, c) (diagonal entries)."""
    mu, lam, alpha = snh_params(E, nu)
    ic = a * a + b * b + c * c
    J = a * b * c
    k = mu * (1 - 1 / (ic + 1))
    return np.array([k * a + lam * (J - alpha) * b * c, k * b + lam * (J - alpha) * a * c,
                     k * c + lam * (J - alpha) * a * b])


def volumes(rest, tets):
    X = rest[tets]
    return np.linalg.det(np.transpose(X[:, 1:] - X[:, :1], (0, 2, 1))) / 6.0


def linear_energy(entity, pos, vel, gravity=(0, 0, 0)):
    """Kinetic + linear elastic (+ gravity) energy in float64 from float32 state (one env)."""
    mat = entity.material
    mu, lam = lame(mat.E, mat.nu)
    rest, tets = entity.rest_vertices, entity.elements
    F = defgrad(rest, pos, tets)
    el = (linear_psi(F, mu, lam) * volumes(rest, tets)).sum()
    m = entity.vertex_mass
    ke = 0.5 * (m[:, None] * vel ** 2).sum()
    pe = -(m[:, None] * (pos - rest) * np.asarray(gravity)).sum()
    return ke + el + pe, ke, el
