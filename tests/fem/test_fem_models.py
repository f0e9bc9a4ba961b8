"""Constitutive models stage by stage: P = dPsi/dF and dP = dP/dF[dF] against central differences,
and zero stress at rest / under rotation. Outputs are NaN-filled before the launch."""

import numpy as np
import pytest
import warp as wp
from fem_probe_kernels import probe_models

MU, LAM = 1.0, 1.5          # unit-scale moduli: float32 differences resolve ~1e-7 relative


def _run(model, F, dF):
    n = len(F)
    P = wp.array(np.full((n, 3, 3), np.nan, np.float32), dtype=wp.mat33)
    psi = wp.array(np.full(n, np.nan, np.float32), dtype=float)
    dP = wp.array(np.full((n, 3, 3), np.nan, np.float32), dtype=wp.mat33)
    wp.launch(probe_models, dim=n, inputs=[model, MU, LAM, wp.array(F.astype(np.float32), dtype=wp.mat33),
                                           wp.array(dF.astype(np.float32), dtype=wp.mat33)],
              outputs=[P, psi, dP], device="cpu")
    return P.numpy().astype(float), psi.numpy().astype(float), dP.numpy().astype(float)


def _samples(n=16, seed=0):
    rng = np.random.default_rng(seed)
    F = np.eye(3) + 0.25 * rng.normal(size=(n, 3, 3))
    F[np.linalg.det(F) < 0.3] = np.eye(3)
    return F, rng.normal(size=(n, 3, 3))


@pytest.mark.parametrize("model", [0, 1, 2], ids=["linear", "corotated", "neohookean"])
def test_stress_is_energy_gradient(model):
    F, _ = _samples()
    P, _, _ = _run(model, F, np.zeros_like(F))
    # the corotated energy goes through a float32 SVD (psi to ~1e-6): a wider step keeps its
    # roundoff/eps below the tolerance (truncation O(eps²) ~ 1e-4 then)
    eps = 1e-2 if model == 1 else 1e-3
    fd = np.zeros_like(F)
    for a in range(3):
        for b in range(3):
            E = np.zeros((3, 3))
            E[a, b] = eps
            _, pp, _ = _run(model, F + E, F * 0)
            _, pm, _ = _run(model, F - E, F * 0)
            fd[:, a, b] = (pp - pm) / (2 * eps)
    # central difference: O(eps²) truncation ~1e-6, float32 roundoff of psi (~1)/eps ~ 1e-4
    assert np.isfinite(P).all()
    assert np.abs(fd - P).max() < 1e-3 * max(1.0, np.abs(P).max())


@pytest.mark.parametrize("model", [0, 2], ids=["linear", "neohookean"])
def test_stress_differential_matches_finite_difference(model):
    """The exact Hessian-vector product (linear, Neo-Hookean). The corotated one holds R fixed by
    design (checked at rest below, where dR does not contribute to a symmetric dF)."""
    F, dF = _samples(seed=1)
    _, _, dP = _run(model, F, dF)
    eps = 1e-3
    Pp, _, _ = _run(model, F + eps * dF, dF)
    Pm, _, _ = _run(model, F - eps * dF, dF)
    fd = (Pp - Pm) / (2 * eps)
    assert np.isfinite(dP).all()
    assert np.abs(fd - dP).max() < 2e-3 * max(1.0, np.abs(dP).max())


@pytest.mark.parametrize("model", [0, 1, 2], ids=["linear", "corotated", "neohookean"])
def test_rest_state_and_linearisation(model):
    """P(I) = 0, Psi(I) = 0 and dP(I)[dF] = mu_L (dF + dFᵀ) + lam_L tr(dF) I: every model linearises
    to linear elasticity with the same (mu_L, lam_L) (Neo-Hookean through its reparametrisation)."""
    _, dF = _samples(seed=2)
    dF = 0.5 * (dF + np.transpose(dF, (0, 2, 1)))            # symmetric: no rotation part
    I = np.broadcast_to(np.eye(3), dF.shape).copy()
    mu_l, lam_l = MU, LAM
    if model == 2:       # the kernel takes Smith's (mu, lam): map back to Lamé
        mu_l, lam_l = 0.75 * MU, LAM - 5.0 / 8.0 * MU
    P, psi, dP = _run(model, I, dF)
    # float32 SVD of the corotated model resolves the rotation to ~1e-6: P(I) ~ mu·1e-6
    assert np.abs(P).max() < 5e-6 and np.abs(psi).max() < 1e-6
    expect = mu_l * (dF + np.transpose(dF, (0, 2, 1))) + lam_l * np.trace(dF, axis1=1, axis2=2)[:, None, None] * np.eye(3)
    assert np.abs(dP - expect).max() < 1e-5 * np.abs(expect).max()


def test_corotated_rotation_invariance():
    from scipy.spatial.transform import Rotation

    R = Rotation.from_euler("xyz", [30, -50, 70], degrees=True).as_matrix()
    F, _ = _samples(seed=3)
    P, psi, _ = _run(1, F, F * 0)
    P2, psi2, _ = _run(1, R @ F, F * 0)
    assert np.abs(psi2 - psi).max() < 1e-5 * max(1.0, np.abs(psi).max())
    assert np.abs(P2 - R @ P).max() < 1e-5 * max(1.0, np.abs(P).max())
    Pr, psir, _ = _run(1, np.broadcast_to(R, F.shape).copy(), F * 0)
    assert np.abs(Pr).max() < 1e-5 and np.abs(psir).max() < 1e-6


def _run_projected(F, dF):
    from fem_probe_kernels import probe_nh_projected

    out = wp.array(np.full((len(F), 3, 3), np.nan, np.float32), dtype=wp.mat33)
    wp.launch(probe_nh_projected, dim=len(F), inputs=[MU, LAM, wp.array(F.astype(np.float32), dtype=wp.mat33),
                                                      wp.array(dF.astype(np.float32), dtype=wp.mat33)],
              outputs=[out], device="cpu")
    return out.numpy().astype(float)


def test_neo_hookean_projected_hessian():
    """Smith et al.'s analytic eigensystem: where every eigenvalue is positive (a rotated, slightly
    stretched state) the projected Hessian equals the exact one; for strong deformations (some
    inverted) it stays symmetric and positive semi-definite while the exact one is indefinite."""
    from scipy.spatial.transform import Rotation

    rng = np.random.default_rng(4)
    R = Rotation.random(16, random_state=4).as_matrix()
    F = R @ (1.05 * np.eye(3) + 0.01 * rng.normal(size=(16, 3, 3)))
    dF = rng.normal(size=(16, 3, 3))
    _, _, exact = _run(2, F, dF)
    proj = _run_projected(F, dF)
    assert np.isfinite(proj).all()
    assert np.abs(proj - exact).max() < 1e-5 * np.abs(exact).max()     # float32 SVD/eig roundoff

    F = np.eye(3) + 0.6 * rng.normal(size=(256, 3, 3))
    dF, a = rng.normal(size=(256, 3, 3)), rng.normal(size=(256, 3, 3))
    assert (np.linalg.det(F) < 0).any()
    _, _, exact = _run(2, F, dF)
    proj = _run_projected(F, dF)
    quad = np.einsum("nij,nij->n", dF, proj)
    assert np.einsum("nij,nij->n", dF, exact).min() < 0                # the exact one is indefinite
    assert quad.min() >= -1e-5 * np.abs(quad).max()
    sym = np.einsum("nij,nij->n", a, proj) - np.einsum("nij,nij->n", dF, _run_projected(F, a))
    assert np.abs(sym).max() < 1e-5 * np.abs(quad).max()
