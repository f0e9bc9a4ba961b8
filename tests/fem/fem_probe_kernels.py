"""A probe kernel for the tests: P(F), Psi(F) and dP(F)[dF] of the FEM constitutive models."""

import warp as wp
from polyphys.plugins.fem.kernels.elastic import energy_density, nh_hessian_cache, nh_projected_diff, stress, stress_diff


@wp.kernel
def probe_models(
    # Model:
    model: int,
    mu: float,
    lam: float,
    # Data in:
    F_in: wp.array(dtype=wp.mat33),
    dF_in: wp.array(dtype=wp.mat33),
    # Data out:
    P_out: wp.array(dtype=wp.mat33),
    psi_out: wp.array(dtype=float),
    dP_out: wp.array(dtype=wp.mat33),
):
    i = wp.tid()
    F = F_in[i]
    P_out[i] = stress(model, mu, lam, F)
    psi_out[i] = energy_density(model, mu, lam, F)
    dP_out[i] = stress_diff(model, mu, lam, F, dF_in[i])


@wp.kernel
def probe_nh_projected(
    # Model:
    mu: float,
    lam: float,
    # Data in:
    F_in: wp.array(dtype=wp.mat33),
    dF_in: wp.array(dtype=wp.mat33),
    # Data out:
    dP_out: wp.array(dtype=wp.mat33),
):
    i = wp.tid()
    U, V, Ap, TF = nh_hessian_cache(mu, lam, F_in[i])
    dP_out[i] = nh_projected_diff(U, V, Ap, TF, dF_in[i])
