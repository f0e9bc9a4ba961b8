"""Constitutive models as Warp functions: plastic return mapping and Kirchhoff stress τ = P Fᵀ.

Type codes as in plugins/mpm/materials.py. Each model takes the trial deformation gradient
F = (I + h C) F_old and returns the projected F (``project_F``), the updated plastic volume ratio
(``update_Jp``) and the Kirchhoff stress of the projected F (``kirchhoff``).
"""

import warp as wp

ELASTIC_COROTATED = wp.constant(0)
ELASTIC_NEOHOOKEAN = wp.constant(1)
ELASTOPLASTIC = wp.constant(2)
SNOW = wp.constant(3)
SAND = wp.constant(4)
LIQUID = wp.constant(5)


@wp.func
def diag3(s: wp.vec3):
    return wp.mat33(s[0], 0.0, 0.0, 0.0, s[1], 0.0, 0.0, 0.0, s[2])


@wp.func
def project_sigma(typ: int, mu: float, lam: float, par: wp.vec4, sig: wp.vec3):
    """Singular values of the elastic F after the plastic return mapping."""
    if typ == SNOW:
        lo = 1.0 - par[0]
        hi = 1.0 + par[1]
        return wp.vec3(wp.clamp(sig[0], lo, hi), wp.clamp(sig[1], lo, hi), wp.clamp(sig[2], lo, hi))
    if typ == ELASTOPLASTIC:
        # von Mises on the Hencky strain: ‖dev ε‖ <= yield/(2μ)
        eps = wp.vec3(wp.log(wp.max(sig[0], 1.0e-6)), wp.log(wp.max(sig[1], 1.0e-6)),
                      wp.log(wp.max(sig[2], 1.0e-6)))
        tr = (eps[0] + eps[1] + eps[2]) / 3.0
        dev = eps - wp.vec3(tr, tr, tr)
        n = wp.length(dev)
        dg = n - par[0] / (2.0 * mu)
        if dg > 0.0:
            eps = eps - dev * (dg / n)
            return wp.vec3(wp.exp(eps[0]), wp.exp(eps[1]), wp.exp(eps[2]))
        return sig
    if typ == SAND:
        # Drucker–Prager return mapping (Klar et al. 2016, no cohesion, no hardening)
        eps = wp.vec3(wp.log(wp.max(sig[0], 1.0e-6)), wp.log(wp.max(sig[1], 1.0e-6)),
                      wp.log(wp.max(sig[2], 1.0e-6)))
        tr = eps[0] + eps[1] + eps[2]
        if tr >= 0.0:
            return wp.vec3(1.0, 1.0, 1.0)          # expansion: project to the cone tip
        dev = eps - wp.vec3(tr / 3.0, tr / 3.0, tr / 3.0)
        n = wp.length(dev)
        dg = n + (3.0 * lam + 2.0 * mu) / (2.0 * mu) * tr * par[0]
        if dg <= 0.0 or n < 1.0e-12:
            return sig
        eps = eps - dev * (dg / n)
        return wp.vec3(wp.exp(eps[0]), wp.exp(eps[1]), wp.exp(eps[2]))
    return sig


@wp.func
def kirchhoff(typ: int, mu: float, lam: float, U: wp.mat33, sig: wp.vec3, V: wp.mat33):
    """Kirchhoff stress τ = P Fᵀ of the elastic F = U diag(sig) Vᵀ."""
    J = sig[0] * sig[1] * sig[2]
    I = wp.identity(n=3, dtype=float)
    if typ == SAND:
        # St. Venant–Kirchhoff on the Hencky strain: τ = U (2μ ε + λ tr ε) Uᵀ
        eps = wp.vec3(wp.log(wp.max(sig[0], 1.0e-6)), wp.log(wp.max(sig[1], 1.0e-6)),
                      wp.log(wp.max(sig[2], 1.0e-6)))
        tr = eps[0] + eps[1] + eps[2]
        t = eps * (2.0 * mu) + wp.vec3(lam * tr, lam * tr, lam * tr)
        return U * diag3(t) * wp.transpose(U)
    F = U * diag3(sig) * wp.transpose(V)
    if typ == ELASTIC_NEOHOOKEAN:
        return mu * (F * wp.transpose(F) - I) + lam * wp.log(wp.max(J, 1.0e-6)) * I
    # fixed corotated (elastic, von Mises, snow): τ = 2μ (F − R) Fᵀ + λ J (J − 1) I, R = U Vᵀ
    R = U * wp.transpose(V)
    return 2.0 * mu * (F - R) * wp.transpose(F) + lam * J * (J - 1.0) * I
