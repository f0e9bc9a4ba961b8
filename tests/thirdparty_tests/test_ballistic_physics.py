"""Physics of the ballistic solver: each kernel stage against a NumPy reference (outputs NaN-filled
first), and whole drops against the analytic bounce (height, time, restitution, friction)."""

import numpy as np
import pytest
from ballistic_helpers import require_ballistic

require_ballistic()

import polyphys  # noqa: E402
from polyphys import morphs  # noqa: E402

G = 9.81


# -- stage tests -------------------------------------------------------------------------------------
def _bounce_reference(x, v, active, e, mu, h, floor):
    """NumPy statement of advance_and_bounce's documented semantics (float64)."""
    xn, vn_out = x + v * h, v.copy()
    hit = (active != 0) & (xn[..., 2] < floor) & (v[..., 2] < 0)
    lift = (active != 0) & (xn[..., 2] < floor) & ~hit
    vn = -v[..., 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.clip((x[..., 2] - floor) / (vn * h), 0.0, 1.0)
        vt_len = np.linalg.norm(v[..., :2], axis=-1)
        scale = np.where(vt_len > 0, np.maximum(0.0, 1 - mu * (1 + e) * vn / vt_len), 1.0)
    vt = v[..., :2] * scale[..., None]
    rest = (1 - s) * h
    bounced_x = np.concatenate([x[..., :2] + v[..., :2] * (s * h)[..., None] + vt * rest[..., None],
                                (floor + e * vn * rest)[..., None]], axis=-1)
    bounced_v = np.concatenate([vt, (e * vn)[..., None]], axis=-1)
    xn = np.where(hit[..., None], bounced_x, xn)
    vn_out = np.where(hit[..., None], bounced_v, vn_out)
    xn[..., 2] = np.where(lift, floor, xn[..., 2])
    frozen = active == 0
    xn[frozen], vn_out[frozen] = x[frozen], v[frozen]
    return xn, vn_out


def _cases():
    """Rows (n_envs=2, n=7): above the floor; crossing with sliding; crossing stopped by friction;
    below the floor moving down; below moving up; inactive below the floor; straight down."""
    floor = 0.05
    x = np.array([[0, 0, 1.0], [0, 0, 0.06], [0, 0, 0.055], [0, 0, 0.02], [0, 0, 0.03], [0, 0, 0.0],
                  [1, 2, 0.051]])
    v = np.array([[1, 2, -3.0], [2, -1, -4.0], [0.1, 0.0, -3.0], [0.5, 0, -1.0], [0, 0.5, 0.2],
                  [0, 0, -1.0], [0, 0, -2.0]])
    x = np.stack([x, x + [0.5, 0, 0]])
    v = np.stack([v, v * 0.5])
    active = np.array([[1, 1, 1, 1, 1, 0, 1]] * 2, dtype=np.int32)
    e = np.array([0.5, 0.8, 0.3, 0.0, 0.5, 0.5, 1.0])
    mu = np.array([0.2, 0.1, 2.0, 0.4, 0.1, 0.1, 0.0])
    return x, v, active, e, mu, 0.01, floor


@pytest.mark.parametrize("precision", ["32", "64"])
def test_advance_and_bounce_stage_matches_reference(precision):
    import warp as wp
    from polyphys_ballistic.kernels import advance_and_bounce

    s = wp.float64 if precision == "64" else wp.float32
    npf = np.float64 if precision == "64" else np.float32
    V = wp.types.vector(3, s)
    x, v, active, e, mu, h, floor = _cases()
    pos_out = wp.array(np.full(x.shape, np.nan, npf), dtype=V, device="cpu")     # poison the outputs
    vel_out = wp.array(np.full(v.shape, np.nan, npf), dtype=V, device="cpu")
    wp.launch(advance_and_bounce, dim=x.shape[:2],
              inputs=[s(h), s(floor), wp.array(e.astype(npf), dtype=s), wp.array(mu.astype(npf), dtype=s),
                      wp.array(active, dtype=wp.int32), wp.array(x.astype(npf), dtype=V),
                      wp.array(v.astype(npf), dtype=V)],
              outputs=[pos_out, vel_out], device="cpu")
    rx, rv = _bounce_reference(x, v, active, e[None], mu[None], h, floor)
    # tolerance: float32 rounding of O(1) values (a few ulp, 1e-6) or float64 (1e-12)
    tol = 1e-12 if precision == "64" else 2e-6
    np.testing.assert_allclose(pos_out.numpy(), rx, atol=tol)
    np.testing.assert_allclose(vel_out.numpy(), rv, atol=tol)
    # hand-checked case: env 0 row 6 reaches the floor after s = 0.001/(2·0.01) = 5% of the substep,
    # leaves at e·2 = 2 m/s for the remaining 95%
    np.testing.assert_allclose(pos_out.numpy()[0, 6], [1, 2, floor + 2.0 * 0.95 * h], atol=tol)
    np.testing.assert_allclose(vel_out.numpy()[0, 6], [0, 0, 2.0], atol=tol)
    # friction never reverses the sliding direction (row 2: μ = 2 stops it), inactive rows are frozen
    assert np.all(vel_out.numpy()[:, 2, :2] == 0)
    assert np.array_equal(pos_out.numpy()[:, 5], x[:, 5].astype(npf))


@pytest.mark.parametrize("precision", ["32", "64"])
def test_integrate_velocity_stage(precision):
    import warp as wp
    from polyphys_ballistic.kernels import integrate_velocity

    s = wp.float64 if precision == "64" else wp.float32
    npf = np.float64 if precision == "64" else np.float32
    V = wp.types.vector(3, s)
    rng = np.random.default_rng(0)
    v = rng.normal(size=(3, 5, 3))
    active = (rng.random((3, 5)) > 0.3).astype(np.int32)
    out = wp.array(np.full(v.shape, np.nan, npf), dtype=V)
    wp.launch(integrate_velocity, dim=(3, 5), inputs=[V(0.0, 0.0, -G), s(0.01), wp.array(active),
                                                      wp.array(v.astype(npf), dtype=V)], outputs=[out])
    want = v + np.where(active[..., None] != 0, [0, 0, -G * 0.01], 0.0)
    np.testing.assert_allclose(out.numpy(), want, atol=1e-12 if precision == "64" else 1e-6)


# -- whole drops against the analytic bounce ---------------------------------------------------------
D = 0.05                 # particle size (m): the particle's centre touches the floor at z = D/2
DT, SUBSTEPS = 0.002, 4
H_SUB = DT / SUBSTEPS


def _drop(z0, restitution, friction=0.0, u=0.0, steps=600, precision="32", ground_height=0.0):
    """One particle (a Box of one lattice cell) dropped from rest at z0 with horizontal speed u;
    returns (t, pos, vel) after every step."""
    from polyphys_ballistic.options import BallisticOptions

    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=DT, substeps=SUBSTEPS, precision=precision),
                           ballistic=BallisticOptions(particle_size=D, ground_height=ground_height))
    p = scene.add_entity(morphs.Box(size=(D, D, D), pos=(0.0, 0.0, z0)),
                         polyphys.materials.Ballistic(restitution=restitution, friction=friction))
    scene.build(n_envs=0)
    assert p.n_particles == 1
    p.set_vel([[u, 0.0, 0.0]])
    pos, vel = [], []
    for _ in range(steps):
        scene.step()
        pos.append(p.get_pos()[0])
        vel.append(p.get_vel()[0])
    return DT * np.arange(1, steps + 1), np.array(pos), np.array(vel)


@pytest.mark.parametrize("precision", ["32", "64"])
def test_drop_bounce_height_and_times_are_analytic(precision):
    z0, e = 1.0, 0.7
    fall = z0 - D / 2                        # the centre falls this far before touching
    t, pos, vel = _drop(z0, e, steps=600, precision=precision)
    t_hit = np.sqrt(2 * fall / G)            # 0.446 s
    v_hit = np.sqrt(2 * G * fall)            # 4.37 m/s
    # Tolerances from the integrator, not from a run: symplectic Euler lags the exact free fall by
    # g·h·t/2 in position, so the impact speed is off by at most g·h and the impact time by ~h; the
    # time is observed once per step (dt). The apex after the bounce moves by at most
    # v·δv/g <= v_hit·h on the way down and again on the way up; sampling it once per step misses at
    # most g·dt²/8. Float32 rounding (1e-7 relative) is far below all of these.
    up = np.nonzero(vel[:, 2] > 0)[0]
    k1 = up[0]                                           # first step ending after the bounce
    assert abs(t[k1] - t_hit) <= DT + H_SUB
    assert np.all(pos[:, 2] >= D / 2 - 1e-6)             # never below the floor
    # just after the bounce: e·v_hit less gravity since the impact (impact speed and the start of
    # gravity after it are each known to g·h)
    np.testing.assert_allclose(vel[k1, 2], e * v_hit - G * (t[k1] - t_hit), atol=2 * G * H_SUB)
    down_again = np.nonzero(vel[k1:, 2] < 0)[0][0] + k1
    k2 = np.nonzero(vel[down_again:, 2] > 0)[0][0] + down_again    # second bounce
    apex = pos[k1:k2, 2].max() - D / 2
    assert abs(apex - e ** 2 * fall) <= 2 * v_hit * H_SUB + G * DT ** 2 / 8
    # time between the two bounces: 2·e·v_hit/g (each impact time known to DT + h)
    assert abs((t[k2] - t[k1]) - 2 * e * v_hit / G) <= 2 * (DT + H_SUB)


def test_bounce_friction_removes_mu_times_normal_impulse():
    z0, e, u = 0.5, 0.5, 1.0
    fall = z0 - D / 2
    v_hit = np.sqrt(2 * G * fall)
    t, pos, vel = _drop(z0, e, friction=0.1, u=u, steps=200)
    k1 = np.nonzero(vel[:, 2] > 0)[0][0]
    assert np.all(vel[:k1, 0] == np.float32(u))           # no friction in flight
    # Coulomb: tangential impulse = μ·(1+e)·m·v_hit; v_hit is known to g·h (see the drop test)
    expected = u - 0.1 * (1 + e) * v_hit
    assert abs(vel[k1, 0] - expected) <= 0.1 * (1 + e) * G * H_SUB + 1e-6
    # a large μ stops the sliding exactly and never reverses it
    t, pos, vel = _drop(z0, e, friction=1.0, u=u, steps=200)
    k1 = np.nonzero(vel[:, 2] > 0)[0][0]
    assert np.all(vel[k1:, 0] == 0.0) and np.all(pos[k1:, 0] == pos[k1, 0])


def test_zero_restitution_comes_to_rest_on_the_ground_height():
    t, pos, vel = _drop(0.6, 0.0, steps=200, ground_height=0.3)
    # falls 0.275 m in 0.24 s, then stays exactly on the floor: each substep's g·h is cancelled
    rest = t > 0.3
    assert np.all(pos[rest, 2] == np.float32(0.3 + D / 2)) and np.all(vel[rest] == 0.0)
