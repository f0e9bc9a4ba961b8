"""SF physics: divergence after projection, Taylor-Green viscous decay, scalar conservation, a hot
plume, a moving rigid box dragging the gas (one way through RigidView)."""

import numpy as np
import polyphys
import pytest
from polyphys import morphs

from .sf_helpers import LO, Emitter, Smoke, center, make_scene, random_solenoidal


@pytest.mark.parametrize("solver", ["mgpcg", "pcg"])
def test_divergence_below_tolerance_in_every_fluid_cell(solver):
    """Random velocities, a jet, a hot blob, an open top and a moving rotated kinematic box: after each
    step's projection max|div u| <= tolerance in every fluid cell of every env (recomputed from the
    face velocities, independently of the solver's residual)."""
    res, dx = (12, 10, 14), 0.05
    tol = 2e-4      # float32 rounding of div u: ~10·eps·|u|/dx ~ 1e-5 1/s, well under tol
    sc, (blob, jet, box) = make_scene(n_envs=2, res=res, dx=dx, open_faces=("+z",), tolerance=tol, max_iterations=80,
                                      pressure_solver=solver, vorticity_confinement=0.4, entities=[
        (morphs.Sphere(radius=0.08, pos=center(res, dx, (0.3, 0.4, 0.3))), Smoke(temperature=3.0), {}),
        (morphs.Box(size=(0.1, 0.08, 0.06), pos=center(res, dx, (0.7, 0.5, 0.2)), euler=(0, 20, 40)),
         Emitter(rate=1.0, heat=2.0, velocity=(0.3, 0.0, 0.8)), {}),
        (morphs.Box(size=(0.12, 0.1, 0.14), pos=center(res, dx, (0.35, 0.55, 0.6)), euler=(15, 0, 30)),
         polyphys.materials.Kinematic(), {})])
    sc.build(n_envs=2)
    s = sc.solver("sf")
    s.set_face_velocity(**random_solenoidal(s, np.random.default_rng(0)))
    box.set_dofs_velocity([[0.6, 0.2, -0.1, 0.0, 0.0, 1.0], [-0.3, 0.0, 0.2, 0.5, 0.0, 0.0]])
    for _ in range(4):
        sc.step()
        st = s.get_solver_stats()
        assert st["converged"].all() and (st["iterations"] > 0).all()
        div = s.get_divergence()
        solid = s.get_solid()
        assert solid.sum() > 20
        # the solver stops at max|b - A p| <= tol; the velocity update u -= ∇p then rounds each face
        # by ~eps·|u|, so the recomputed div u may exceed tol by up to 6·eps·max|u|/dx (float32)
        umax = max(np.abs(a).max() for a in s.get_face_velocity().values())
        assert np.abs(div[~solid]).max() <= tol + 6 * np.finfo(np.float32).eps * umax / dx, np.abs(div[~solid]).max()
        assert np.abs(div[~solid]).max() == pytest.approx(st["residual"].max(), rel=0.2, abs=2e-5)


def taylor_green_rate(n, advection, steps):
    nu, U, dt, L = 0.01, 0.05, 0.01, 1.0
    k = np.pi / L
    sc, _ = make_scene(res=(n, n, 1), dx=L / n, dt=dt, gravity=(0, 0, 0), viscosity=nu, thermal_buoyancy=0.0,
                       advection=advection, tolerance=1e-6, max_iterations=60,
                       entities=[(morphs.Sphere(radius=0.2 / n, pos=center((n, n, 1), L / n, (0.5, 0.5, 0.5))),
                                  Smoke(density=0.0), {})])
    sc.build()
    s = sc.solver("sf")
    P = {c: p - np.asarray(LO) for c, p in s.face_positions().items()}
    s.set_face_velocity(u=U * np.sin(k * P["u"][..., 0]) * np.cos(k * P["u"][..., 1]),
                        v=-U * np.cos(k * P["v"][..., 0]) * np.sin(k * P["v"][..., 1]))

    def energy():
        f = s.get_face_velocity()
        return (f["u"] ** 2).sum() + (f["v"] ** 2).sum()

    e0 = energy()
    for _ in range(steps):
        sc.step()
    # velocity amplitude ~ exp(-2 ν k² t): energy ~ exp(-4 ν k² t)
    return -np.log(energy() / e0) / (2 * steps * dt), 2 * nu * k * k


def test_taylor_green_vortex_decays_at_the_viscous_rate():
    """2D Taylor-Green vortex u = U sin(kx) cos(ky), v = -U cos(kx) sin(ky) in a free-slip box of side
    L = π/k (an exact Navier-Stokes solution there), 64² cells, ν = 0.01: the velocity decays at
    2νk² within 5 % (measured 0.1 % with MacCormack; semi-Lagrangian's numerical diffusion adds 1.5 %)."""
    rate, exact = taylor_green_rate(64, "maccormack", 50)
    assert rate == pytest.approx(exact, rel=0.05)
    assert rate == pytest.approx(exact, rel=0.01)      # measured 0.1 %: time-step and 2nd-order space errors


def swirl_conservation(conserve, n=16, steps=200):
    res, dx = (n, n, n), 1.0 / n
    sc, _ = make_scene(res=res, dx=dx, dt=0.02, gravity=(0, 0, 0), thermal_buoyancy=0.0, tolerance=1e-5,
                       conserve_density=conserve)
    sc.build()
    s = sc.solver("sf")
    P = {c: p - np.asarray(LO) for c, p in s.face_positions().items()}
    c0 = np.array([0.35, 0.45, 0.4])
    s.set_density(np.exp(-((P["cell"] - c0) ** 2).sum(-1) / (2 * 0.12 ** 2)))
    k, U = np.pi, 0.5
    s.set_face_velocity(u=U * np.sin(k * P["u"][..., 0]) * np.cos(k * P["u"][..., 1]),
                        v=-U * np.cos(k * P["v"][..., 0]) * np.sin(k * P["v"][..., 1]))
    d0 = s.get_density()
    for _ in range(steps):
        sc.step()
    d1 = s.get_density()
    centroid = [(P["cell"] * d[..., None]).sum((0, 1, 2)) / d.sum() for d in (d0, d1)]
    return d1.sum() / d0.sum(), np.linalg.norm(centroid[1] - centroid[0]), d1.min()


def test_passive_scalar_is_conserved_in_a_closed_box_with_maccormack():
    """A Gaussian blob of smoke stirred 200 steps by a swirl in a closed box (MacCormack): the total
    is conserved within 1 % (the per-env correction: to float32 rounding), the blob moved, no value
    went negative."""
    ratio, moved, lowest = swirl_conservation(True)
    assert abs(ratio - 1.0) < 0.01
    assert abs(ratio - 1.0) < 1e-4          # 200 corrections, each exact to float32 sums of 4096 cells
    assert moved > 0.05 and lowest >= 0.0


@pytest.mark.validate
def test_uncorrected_maccormack_conserves_within_1_percent_at_32_cells():
    """Without the correction, MacCormack alone keeps the blob's total within 1 % over 200 steps once
    the blob spans enough cells (32³: measured +0.35 %; at 16³ it drifts +3.0 %, docs/sf.md)."""
    ratio, moved, _ = swirl_conservation(False, n=32)
    assert abs(ratio - 1.0) < 0.01 and moved > 0.05


def test_open_face_outflow_is_accounted_exactly():
    """A uniform flow at exactly one cell per substep through open ±x faces shifts the smoke by one
    cell (semi-Lagrangian is exact then): the correction, which subtracts the computed outflow, must
    leave that result unchanged."""
    res, dx, dt = (12, 6, 6), 0.05, 0.05
    out = []
    for conserve in (False, True):
        sc, _ = make_scene(res=res, dx=dx, dt=dt, gravity=(0, 0, 0), thermal_buoyancy=0.0, open_faces=("-x", "+x"),
                           advection="semi_lagrangian", conserve_density=conserve, tolerance=1e-6)
        sc.build()
        s = sc.solver("sf")
        s.set_face_velocity(u=np.full((13, 6, 6), dx / dt))
        d = np.zeros(res)
        d[7:, 1:4, 2:5] = np.linspace(1.0, 2.0, 5)[:, None, None]
        s.set_density(d)
        for _ in range(3):
            sc.step()
        out.append(s.get_density())
    np.testing.assert_allclose(out[0][10:, 1:4, 2:5], np.linspace(1.0, 2.0, 5)[:2, None, None] * np.ones((2, 3, 3)),
                               rtol=1e-5)
    np.testing.assert_allclose(out[1], out[0], rtol=1e-5, atol=1e-6)


def test_hot_plume_rises_and_cold_smoke_sinks():
    """A hot emitter (heat 20 K/s, thermal_buoyancy 1 m/s²/K): the smoke's centroid rises above the
    source and the gas above it moves up; with smoke_weight and no heat, smoke sinks instead."""
    res, dx = (10, 10, 20), 0.05
    src = center(res, dx, (0.5, 0.5, 0.2))
    zs = []
    for heat, weight in ((20.0, 0.0), (0.0, 20.0)):
        sc, (e,) = make_scene(n_envs=1, res=res, dx=dx, dt=0.02, open_faces=("+z",), smoke_weight=weight,
                              thermal_buoyancy=1.0, entities=[(morphs.Sphere(radius=0.08, pos=src),
                                                               Emitter(rate=1.0, heat=heat), {})])
        sc.build(n_envs=1)
        s = sc.solver("sf")
        for _ in range(25):
            sc.step()
        d = s.get_density()[0]
        z = s.face_positions()["cell"][..., 2]
        zs.append(((d * z).sum() / d.sum(), s.get_velocity()[0][..., 2]))
    (z_hot, w_hot), (z_cold, w_cold) = zs
    col = (slice(4, 6), slice(4, 6), slice(6, 12))       # cells above the source
    assert z_hot > src[2] + 0.05 and w_hot[col].mean() > 0.2
    assert z_cold < src[2] and w_cold[col[0], col[1], slice(1, 4)].mean() < -0.05


def test_moving_rigid_box_drags_the_gas_one_way():
    """A kinematic box (rotated, off-centre) moving at 1 m/s through still gas in a closed box: the gas
    just behind it follows at most of its speed, the gas ahead is pushed forward, the displaced gas
    flows back around it (zero net volume flux: mean fluid u_x = -V_box·v/V_fluid); an env whose box
    stays still keeps its gas exactly at rest."""
    res, dx = (32, 16, 16), 1 / 32
    lo = np.asarray(LO)
    start = lo + np.array([0.2, 0.26, 0.24])
    sc, (_, box) = make_scene(n_envs=2, res=res, dx=dx, dt=0.01, gravity=(0, 0, 0), thermal_buoyancy=0.0,
                              tolerance=1e-4, entities=[
        (morphs.Sphere(radius=0.05, pos=tuple(lo + [0.8, 0.25, 0.25])), Smoke(density=0.0), {}),
        (morphs.Box(size=(0.1, 0.12, 0.14), pos=tuple(start), euler=(0, 0, 20)), polyphys.materials.Kinematic(), {})])
    sc.build(n_envs=2)
    box.set_dofs_velocity([[1.0, 0, 0, 0, 0, 0], [0.0] * 6])
    s = sc.solver("sf")
    for _ in range(30):
        sc.step()
    vel, solid = s.get_velocity(), s.get_solid()
    P = s.face_positions()["cell"]
    bx = box.get_pos()[0][0]
    assert bx == pytest.approx(start[0] + 0.3, abs=1e-5)
    col = (np.abs(P[..., 1] - start[1]) < 0.06) & (np.abs(P[..., 2] - start[2]) < 0.07)
    behind = col & (P[..., 0] < bx - 0.06) & (P[..., 0] > bx - 0.2) & ~solid[0]
    ahead = col & (P[..., 0] > bx + 0.06) & (P[..., 0] < bx + 0.2) & ~solid[0]
    assert vel[0][behind][:, 0].mean() > 0.6        # measured 0.90
    assert vel[0][ahead][:, 0].mean() > 0.15        # measured 0.29
    fluid = ~solid[0]
    expect = -solid[0].sum() / fluid.sum()          # volume balance (v = 1 m/s)
    assert vel[0][fluid][:, 0].mean() == pytest.approx(expect, rel=0.1)
    assert np.abs(vel[1]).max() == 0.0
