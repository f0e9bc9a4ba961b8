"""The explicit element-force stage against NumPy: every element's nodal forces, written at its
corners in the gather order and summed per vertex, equal -Σₑ Vₑ P(Fₑ) Dm⁻ᵀ (float64 reference) for
the general kernel and the undamped Neo-Hookean one (explicit_forces_nh), with inactive elements
contributing nothing. Outputs are NaN-filled before the launch."""

import numpy as np
import polyphys
import pytest
import warp as wp
from fem_helpers import defgrad, snh_params, volumes
from polyphys import morphs
from polyphys.plugins.fem import FEMOptions
from polyphys.plugins.fem.materials import Elastic, NeoHookean

E, NU = 2e5, 0.35


def _snh_P(F, mu, lam, alpha):
    ic = (F ** 2).sum(axis=(1, 2))
    J = np.linalg.det(F)
    cof = J[:, None, None] * np.transpose(np.linalg.inv(F), (0, 2, 1))
    return mu * (1 - 1 / (ic + 1))[:, None, None] * F + (lam * (J - alpha))[:, None, None] * cof


def _reference_forces(body, pos, active):
    """-Σₑ Vₑ P(Fₑ) Dm⁻ᵀ per vertex in float64 (stable Neo-Hookean), active elements only."""
    rest, tets = body.rest_vertices, body.elements
    X = rest[tets]
    Dinv = np.linalg.inv(np.transpose(X[:, 1:] - X[:, :1], (0, 2, 1)))
    H = volumes(rest, tets)[:, None, None] * _snh_P(defgrad(rest, pos, tets), *snh_params(E, NU)) \
        @ np.transpose(Dinv, (0, 2, 1))
    H[~active] = 0.0
    f = np.zeros_like(pos)
    for c in range(3):
        np.add.at(f, tets[:, c + 1], -H[:, :, c])
    np.add.at(f, tets[:, 0], H.sum(axis=2))
    # per-element force scale: V (μ + λ) |Dm⁻¹| — float32 evaluates P to ~1e-6 of it
    scale = (volumes(rest, tets) * sum(snh_params(E, NU)[:2]) * np.linalg.norm(Dinv, axis=(1, 2))).max()
    return f, scale


@pytest.mark.parametrize("kernel,run", [("explicit_forces", 1), ("explicit_forces_nh", 1), ("explicit_forces_nh", 7)])
def test_explicit_forces_stage_matches_numpy(kernel, run):
    sc = polyphys.Scene(sim=polyphys.SimOptions(dt=1e-4, substeps=1), fem=FEMOptions(integrator="explicit"))
    body = sc.add_entity(morphs.Box(size=(0.3, 0.12, 0.08), pos=(0.4, -0.2, 0.7), euler=(20.0, -35.0, 50.0)),
                         NeoHookean(E=E, nu=NU, rho=900.0), resolution=(5, 3, 2))
    sc.build(n_envs=2)
    s = sc.solver("fem")
    assert s.nh_only                 # an undamped Neo-Hookean mesh takes the specialised kernel in a step
    rng = np.random.default_rng(3)
    rest = body.rest_vertices
    pos = rest + 0.004 * rng.normal(size=(2, *rest.shape))        # ~15 % strains, no inversion
    pos[1] = (rest - rest.mean(0)) @ np.diag([1.1, 0.95, 0.9]) + rest.mean(0) + 0.002 * rng.normal(size=rest.shape)
    body.set_vertices_pos(pos)
    active = rng.random((2, body.n_elements)) > 0.2
    body.set_elements_active(active)
    m, ne = s.model, s.n_elements
    s.corner.fill_(float("nan"))
    if kernel == "explicit_forces_nh":
        # a run of `run` elements per thread (7: the last thread's run is short)
        inputs = [m.tets, m.gram, m.nh_coef, m.corner_slot, 0, ne, run, s.pos, s.active, 0]
    else:
        inputs = [m.tets, m.dm_inv, m.rest_vol, m.model, m.mu, m.lam, m.mu_lin, m.lam_lin, m.beta, m.corner_slot, 0,
                  s.pos, s.vel, s.active]
    outputs = [s.corner, s.blocks.counters] if kernel == "explicit_forces_nh" else [s.corner]
    wp.launch(getattr(s.K, kernel), dim=(2, -(-ne // run)), inputs=inputs, outputs=outputs, device="cpu")
    corner = s.corner.numpy().astype(float)
    assert np.isfinite(corner).all()                 # every corner written (zeros for inactive elements)
    start = m.v_start.numpy()
    pos = body.get_vertices_pos().astype(float)     # the float32 state: the reference sees its rounding
    for env in range(2):
        got = np.add.reduceat(corner[env], start[:-1], axis=0)
        want, scale = _reference_forces(body, pos[env], active[env])
        # float32 arithmetic on P's terms (~1e2 operations of relative error 6e-8)
        assert np.abs(got - want).max() < 1e-5 * scale


def test_damped_or_mixed_meshes_take_the_general_kernel():
    for mats in ([NeoHookean(E=E, nu=NU, damping_stiffness=1e-3)], [NeoHookean(E=E, nu=NU), Elastic(E=E, nu=NU)]):
        sc = polyphys.Scene(sim=polyphys.SimOptions(dt=1e-4, substeps=1), fem=FEMOptions(integrator="explicit"))
        for i, mat in enumerate(mats):
            sc.add_entity(morphs.Box(size=(0.1, 0.1, 0.1), pos=(0.3 * i, 0, 1)), mat, resolution=2)
        sc.build()
        assert not sc.solver("fem").nh_only


@pytest.mark.parametrize("material", [NeoHookean(E=1e5, nu=0.3), Elastic(E=1e5, nu=0.3, damping_stiffness=1e-3)],
                         ids=["neohookean", "linear_damped"])
def test_fused_explicit_substep_equals_the_two_halves(material):
    """Without couplers the explicit substep runs explicit_vertex_step (velocity and position in one
    pass); with the two halves (a coupler's path) a body thrown onto a frictional floor takes the
    same bits."""
    def run(fast):
        sc = polyphys.Scene(sim=polyphys.SimOptions(dt=2e-3, substeps=10),
                            fem=FEMOptions(integrator="explicit", floor_height=0.0, friction=0.4))
        b = sc.add_entity(morphs.Box(size=(0.2, 0.1, 0.1), pos=(0.1, -0.3, 0.06), euler=(10, 20, 30)), material,
                          resolution=(6, 3, 3))
        sc.build(n_envs=2)
        assert sc.simulator.fast_path
        sc.simulator.fast_path = fast
        b.set_vertices_vel(np.tile([0.5, 0.2, -1.0], (b.n_vertices, 1)))
        for _ in range(30):
            sc.step()
        return b.get_vertices_pos(), b.get_vertices_vel()

    (x1, v1), (x2, v2) = run(True), run(False)
    assert np.isfinite(x1).all() and x1[..., 2].min() < 1e-6          # it reached the floor
    np.testing.assert_array_equal(x1, x2)
    np.testing.assert_array_equal(v1, v2)
