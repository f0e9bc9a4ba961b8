"""Constitutive models as Warp functions: plastic return mapping and Kirchhoff stress τ = P Fᵀ.

Type codes as in plugins/mpm/materials.py. Each model takes the trial deformation gradient
F = (I + h C) F_old and returns the projected singular values (``project_sigma``) and the Kirchhoff
stress of the projected F (``kirchhoff``). Generic over the scalar type (float32/float64): every
literal is cast to the type of a model parameter, ``type(mu)(...)``.
"""

from typing import Any

import warp as wp

ELASTIC_COROTATED = wp.constant(0)
ELASTIC_NEOHOOKEAN = wp.constant(1)
ELASTOPLASTIC = wp.constant(2)
SNOW = wp.constant(3)
SAND = wp.constant(4)
LIQUID = wp.constant(5)


@wp.func
def log_sigma(sig: Any):
    """Hencky strain ln Σ with Σ clamped to 1e-6 (an inverted element is treated as compressed)."""
    lo = type(sig[0])(1.0e-6)
    return type(sig)(wp.log(wp.max(sig[0], lo)), wp.log(wp.max(sig[1], lo)), wp.log(wp.max(sig[2], lo)))


@wp.func
def exp3(e: Any):
    return type(e)(wp.exp(e[0]), wp.exp(e[1]), wp.exp(e[2]))


@wp.func
def project_sigma(typ: int, mu: Any, lam: Any, par: Any, sig: Any):
    """Singular values of the elastic F after the plastic return mapping."""
    one = type(mu)(1.0)
    if typ == SNOW:
        lo = one - par[0]
        hi = one + par[1]
        return type(sig)(wp.clamp(sig[0], lo, hi), wp.clamp(sig[1], lo, hi), wp.clamp(sig[2], lo, hi))
    if typ == ELASTOPLASTIC:
        # von Mises on the Hencky strain: ‖dev ε‖ <= yield/(2μ)
        eps = log_sigma(sig)
        tr = (eps[0] + eps[1] + eps[2]) / type(mu)(3.0)
        dev = eps - type(sig)(tr, tr, tr)
        n = wp.length(dev)
        dg = n - par[0] / (type(mu)(2.0) * mu)
        if dg > type(mu)(0.0):
            return exp3(eps - dev * (dg / n))
        return sig
    if typ == SAND:
        # Drucker–Prager return mapping (Klar et al. 2016, no cohesion, no hardening)
        eps = log_sigma(sig)
        tr = eps[0] + eps[1] + eps[2]
        if tr >= type(mu)(0.0):
            return type(sig)(one, one, one)        # expansion: project to the cone tip
        t3 = tr / type(mu)(3.0)
        dev = eps - type(sig)(t3, t3, t3)
        n = wp.length(dev)
        dg = n + (type(mu)(3.0) * lam + type(mu)(2.0) * mu) / (type(mu)(2.0) * mu) * tr * par[0]
        if dg <= type(mu)(0.0) or n < type(mu)(1.0e-12):
            return sig
        return exp3(eps - dev * (dg / n))
    return sig


@wp.func
def kirchhoff(typ: int, mu: Any, lam: Any, U: Any, sig: Any, V: Any):
    """Kirchhoff stress τ = P Fᵀ of the elastic F = U diag(sig) Vᵀ."""
    J = sig[0] * sig[1] * sig[2]
    one = type(mu)(1.0)
    I = wp.diag(type(sig)(one, one, one))
    if typ == SAND:
        # St. Venant–Kirchhoff on the Hencky strain: τ = U (2μ ε + λ tr ε) Uᵀ
        eps = log_sigma(sig)
        ltr = lam * (eps[0] + eps[1] + eps[2])
        t = eps * (type(mu)(2.0) * mu) + type(sig)(ltr, ltr, ltr)
        return U * wp.diag(t) * wp.transpose(U)
    F = U * wp.diag(sig) * wp.transpose(V)
    if typ == ELASTIC_NEOHOOKEAN:
        return mu * (F * wp.transpose(F) - I) + lam * wp.log(wp.max(J, type(mu)(1.0e-6))) * I
    # fixed corotated (elastic, von Mises, snow): τ = 2μ (F − R) Fᵀ + λ J (J − 1) I, R = U Vᵀ
    R = U * wp.transpose(V)
    return type(mu)(2.0) * mu * (F - R) * wp.transpose(F) + lam * J * (J - one) * I
