"""The Drucker–Prager return mapping and Hencky stress of MPM sand, alone, against a NumPy
transcription of Klar et al. (2016), "Drucker–Prager elastoplasticity for sand animation", §6.3.

Reference (no cohesion, no hardening, d = 3): ε = ln Σ of the trial F = U Σ Vᵀ, ε̂ = ε − tr(ε)/3.
tr ε ≥ 0 (expansion) → Σ = I (cone tip); else δγ = ‖ε̂‖ + (3λ + 2μ)/(2μ)·tr(ε)·α; δγ ≤ 0 →
elastic; else ε ← ε − δγ ε̂/‖ε̂‖. Stress (St. Venant–Kirchhoff in Hencky strain):
τ = U (2μ ε + λ tr ε) Uᵀ. The stage's outputs are NaN-filled before the launch.
"""

import math

import numpy as np
import pytest
import warp as wp
from polyphys.plugins.mpm.kernels.constitutive import SAND, kirchhoff, project_sigma
from polyphys.plugins.mpm.materials import Sand


@wp.kernel
def _sand_stage(
    # Model:
    mu: float,
    lam: float,
    par: wp.vec4,
    # Data in:
    F_in: wp.array(dtype=wp.mat33),
    # Data out:
    F_out: wp.array(dtype=wp.mat33),
    tau_out: wp.array(dtype=wp.mat33),
):
    i = wp.tid()
    U = wp.mat33()
    sig = wp.vec3()
    V = wp.mat33()
    wp.svd3(F_in[i], U, sig, V)
    s = project_sigma(SAND, mu, lam, par, sig)
    F_out[i] = U * wp.diag(s) * wp.transpose(V)
    tau_out[i] = kirchhoff(SAND, mu, lam, U, s, V)


def _reference(F, mu, lam, alpha):
    """Returns (elastic F, τ, case) per Klar et al. 2016; case 0 elastic, 1 tip, 2 cone surface."""
    U, s, Vt = np.linalg.svd(F)
    # proper rotations: a reflection is moved into the last singular value (as svd3 does)
    dU, dV = np.sign(np.linalg.det(U)), np.sign(np.linalg.det(Vt))
    U = U * np.array([1, 1, dU])
    Vt = Vt * np.array([1, 1, dV])[:, None]
    s = s * np.array([1, 1, dU * dV])
    eps = np.log(np.maximum(s, 1e-6))
    tr = eps.sum()
    dev = eps - tr / 3
    n = np.linalg.norm(dev)
    if tr >= 0:
        eps, case = np.zeros(3), 1
    else:
        dg = n + (3 * lam + 2 * mu) / (2 * mu) * tr * alpha
        if dg <= 0:
            case = 0
        else:
            eps, case = eps - dg * dev / n, 2
    Fe = U @ np.diag(np.exp(eps)) @ Vt
    tau = U @ np.diag(2 * mu * eps + lam * eps.sum()) @ U.T
    return Fe, tau, case


@pytest.mark.parametrize("phi", [25.0, 40.0])
def test_sand_return_mapping_matches_klar_reference(phi):
    mat = Sand(E=5e4, nu=0.3, friction_angle=phi)
    mu, lam, alpha = mat.mu, mat.lam, mat.alpha
    s = math.sin(math.radians(phi))
    assert alpha == pytest.approx(math.sqrt(2 / 3) * 2 * s / (3 - s), rel=1e-15)
    rng = np.random.default_rng(7)
    n = 600
    # trial F = R1 diag(σ) R2 with log-strains of up to ±10 %: compression, expansion and shear
    A = rng.normal(size=(n, 3, 3))
    Q1, _ = np.linalg.qr(A)
    Q2, _ = np.linalg.qr(rng.normal(size=(n, 3, 3)))
    Q1 *= np.sign(np.linalg.det(Q1))[:, None, None]
    Q2 *= np.sign(np.linalg.det(Q2))[:, None, None]
    e = rng.uniform(-0.1, 0.1, size=(n, 3))
    e[: n // 3] -= 0.06                                   # a third well in compression
    F = np.einsum("nij,nj,nkj->nik", Q1, np.exp(e), Q2)
    want = [_reference(f, mu, lam, alpha) for f in F]
    cases = np.array([c for _, _, c in want])
    assert all((cases == c).sum() >= 50 for c in (0, 1, 2))  # every branch exercised
    F_in = wp.array(F.astype(np.float32), dtype=wp.mat33, device="cpu")
    F_out = wp.array(np.full((n, 3, 3), np.nan, np.float32), dtype=wp.mat33, device="cpu")
    tau_out = wp.array(np.full((n, 3, 3), np.nan, np.float32), dtype=wp.mat33, device="cpu")
    wp.launch(_sand_stage, dim=n, inputs=[float(mu), float(lam), wp.vec4(alpha, 0.0, 0.0, 0.0), F_in],
              outputs=[F_out, tau_out], device="cpu")
    Fe, tau = F_out.numpy().astype(float), tau_out.numpy().astype(float)
    assert np.isfinite(Fe).all() and np.isfinite(tau).all()
    Fe_ref = np.array([f for f, _, _ in want])
    tau_ref = np.array([t for _, t, _ in want])
    # float32: svd3's Jacobi sweeps reconstruct U Σ Vᵀ to ~5e-5 where two singular values nearly
    # coincide (measured 4.6e-5 on the elastic samples, where the mapping is the identity), hence 2e-4
    # on F; τ depends on Σ and U only through ε, accurate to ~1e-5: 3e-5·(2μ + 3λ), the stress of that
    # strain error. A wrong α, cone factor (3λ + 2μ)/2μ or tip case moves ε by 1e-3..1e-1.
    assert np.abs(Fe - Fe_ref).max() <= 2e-4
    assert np.abs(tau - tau_ref).max() <= 3e-5 * (2 * mu + 3 * lam)
    # the projected stress lies in the cone ‖dev τ‖ ≤ −α tr τ (no tension), on it where it yielded
    tr = np.trace(tau_ref, axis1=1, axis2=2)
    dev = np.linalg.norm(tau_ref - tr[:, None, None] / 3 * np.eye(3), axis=(1, 2))
    assert (tr <= 1e-9).all()
    assert (dev <= -alpha * tr + 1e-9 * mu).all()
    on = cases == 2
    np.testing.assert_allclose(dev[on], -alpha * tr[on], rtol=1e-9)
