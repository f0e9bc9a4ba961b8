"""FEM physics validation against analytic results and conservation laws (float32 state).

Tolerances: positions are float32 (unit roundoff u = 6e-8); a deformation gradient from vertex
differences of a unit-size mesh with cells of 1/4 carries a relative error of a few u·|x|/|Δx| ~ 1e-6,
which bounds every stress comparison below (float64 is not supported: see docs/fem.md).
"""

import numpy as np
import polyphys
import pytest
from fem_helpers import lame, linear_energy, linear_P, snh_P_diag
from polyphys import morphs
from polyphys.plugins.fem import FEMOptions
from polyphys.plugins.fem.materials import Elastic, NeoHookean
from scipy.spatial.transform import Rotation


def _scene(opts, dt, substeps=1, gravity=(0.0, 0.0, -9.81), **sim):
    return polyphys.Scene(sim=polyphys.SimOptions(dt=dt, substeps=substeps, gravity=gravity, **sim), fem=opts)


@pytest.mark.parametrize("pose", [((0, 0, 0), None), ((0.37, -0.21, 0.52), (20, 35, -10))],
                         ids=["origin", "offset-rotated"])
def test_patch_test_constant_stress(pose):
    """Irregular linear-elastic mesh; boundary vertices fixed on an affine (uniform-strain) map,
    interior vertices displaced off it: the static solve brings them back onto the affine map and
    every element carries the analytic constant stress 2 mu eps + lam tr(eps) I. The mesh also sits
    at a generic pose (the map acts about its centre in the world frame: F = A whatever the pose)."""
    rng = np.random.default_rng(1)
    from polyphys.plugins.fem.mesh import box_mesh

    v, t = box_mesh((1.0, 1.0, 1.0), 4)
    interior = np.all(np.abs(v) < 0.49, axis=1)
    v[interior] += rng.uniform(-0.06, 0.06, size=(interior.sum(), 3))     # irregular, still valid
    A = np.eye(3) + np.array([[0.010, 0.004, -0.002], [0.003, -0.006, 0.005], [0.001, 0.002, 0.008]])
    E, nu = 1e6, 0.3
    sc = _scene(FEMOptions(integrator="implicit", newton_iters=2, cg_iters=300, cg_tol=1e-7), dt=10.0,
                gravity=(0, 0, 0))
    body = sc.add_entity(morphs.Mesh(vertices=v, faces=t, pos=pose[0], euler=pose[1]),
                         Elastic(E=E, nu=nu, rho=100.0, model="linear"), fixed=~interior)
    sc.build()
    X = body.rest_vertices
    c = np.asarray(pose[0], float)
    target = c + (X - c) @ A.T
    start = target.copy()
    start[interior] += rng.normal(scale=0.01, size=(interior.sum(), 3))
    body.set_vertices_pos(start)
    for _ in range(3):
        sc.step()
    pos = body.get_vertices_pos()
    # displacement error: CG stops at a 1e-7 relative residual; float32 positions ~ 1e-7
    assert np.abs(pos - target).max() < 2e-6
    mu, lam = lame(E, nu)
    P_exact = linear_P(np.broadcast_to(A, (1, 3, 3)), mu, lam)[0]
    P = body.get_elements_stress()
    # stress error ~ E · (position error / cell size) = 1e6 · 2e-6 / 0.2 ~ 10 Pa vs |P| ~ 1e4 Pa
    assert np.abs(P - P_exact).max() < 1e-3 * np.abs(P_exact).max()
    assert np.isfinite(P).all() and P.shape == (body.n_elements, 3, 3)


@pytest.mark.parametrize("precision", ["32", "64"])
@pytest.mark.parametrize("stretch, pose", [(1.3, ((0, 0, 0), None)), (0.8, ((0.31, -0.44, 0.27), (33, -12, 50)))],
                         ids=["origin", "offset-rotated"])
def test_neo_hookean_uniaxial_stretch(stretch, pose, precision):
    """Homogeneous uniaxial stretch F = diag(s, b, b), b solving P22 = 0 (uniaxial stress):
    every element's P equals the analytic stable Neo-Hookean law (the deformation is affine, so
    exactly representable on the tet mesh: only roundoff separates the two)."""
    from scipy.optimize import brentq

    E, nu = 1e5, 0.35
    b = brentq(lambda b: snh_P_diag(stretch, b, b, E, nu)[1], 0.5, 1.5, xtol=1e-15)
    sc = _scene(FEMOptions(), dt=1e-4, precision=precision)
    body = sc.add_entity(morphs.Box(size=(1.0, 1.0, 1.0), pos=pose[0], euler=pose[1]), NeoHookean(E=E, nu=nu),
                         resolution=4)
    sc.build()
    X = body.rest_vertices
    c = np.asarray(pose[0], float)
    body.set_vertices_pos(c + (X - c) * np.array([stretch, b, b]))      # F = diag(s, b, b) in the world frame
    P = body.get_elements_stress()
    P_exact = np.diag(snh_P_diag(stretch, b, b, E, nu))
    scale = np.abs(P_exact).max()
    # float64: the 1e-6 (roundoff is ~1e-15). float32: F carries ~1e-7 relative error
    # (positions of size <= 0.65, cell 0.25), amplified by the bulk modulus over the stress scale
    # (lam/|P| ~ 2): 2e-6 relative to the stress scale bounds it (measured 1.5e-7 and 3.3e-7); the
    # rounding of a position grows with its size, so the bound scales with the largest |x| over 0.65
    err = np.abs(P - P_exact).max() / scale
    size = max(1.0, np.abs(body.get_vertices_pos()).max() / 0.65)
    assert err < (1e-6 if precision == "64" else 2e-6 * size), err
    assert abs(P_exact[1, 1]) < 1e-9 * scale          # the lateral faces really are traction free


def test_implicit_energy_never_increases_at_10x_cfl():
    """Zero damping, backward Euler at 10× the explicit CFL step: total energy is non-increasing
    (exact for a convex energy: Psi_n >= Psi_{n+1} + grad·(x_n - x_{n+1}) gives
    E_n >= E_{n+1} + ½|v_{n+1} - v_n|²_M)."""
    E, nu, rho = 1e4, 0.3, 1000.0
    mat = Elastic(E=E, nu=nu, rho=rho, model="linear")
    size, res = 0.2, 4
    mu, lam = lame(E, nu)
    cfl = (size / res) / np.sqrt((lam + 2 * mu) / rho)
    h = 10 * cfl
    sc = _scene(FEMOptions(integrator="implicit", newton_iters=2, cg_iters=200, cg_tol=1e-6), dt=h,
                gravity=(0, 0, 0))
    body = sc.add_entity(morphs.Box(size=(size, size, size)), mat, resolution=res)
    sc.build()
    X = body.rest_vertices
    v0 = np.stack([X[:, 1], -X[:, 0], 0.5 * X[:, 2]], axis=1) * 5.0       # twist + stretch
    body.set_vertices_vel(v0)
    energies = [linear_energy(body, body.get_vertices_pos(), body.get_vertices_vel())[0]]
    for _ in range(30):
        sc.step()
        energies.append(linear_energy(body, body.get_vertices_pos(), body.get_vertices_vel())[0])
    e = np.array(energies)
    # float32: strains resolved to ~1e-7 absolute, energy to ~2·1e-7/strain(~1e-2) ~ 2e-5 relative
    assert np.all(np.diff(e) <= 2e-5 * e[0]), np.diff(e) / e[0]
    assert e[-1] < 0.99 * e[0]       # backward Euler dissipates at this step


def test_explicit_energy_bounded():
    """Zero damping, symplectic Euler at 0.2× CFL: the energy oscillates about its initial value
    (symplectic: a nearby modified energy is conserved) within 2 % and does not drift."""
    E, nu, rho = 1e4, 0.3, 1000.0
    size, res = 0.2, 2
    mu, lam = lame(E, nu)
    cfl = (size / res) / np.sqrt((lam + 2 * mu) / rho)
    h = 0.2 * cfl
    sc = _scene(FEMOptions(), dt=10 * h, substeps=10, gravity=(0, 0, 0))
    body = sc.add_entity(morphs.Box(size=(size, size, size)), Elastic(E=E, nu=nu, rho=rho, model="linear"),
                         resolution=res)
    sc.build()
    X = body.rest_vertices
    body.set_vertices_vel(np.stack([X[:, 1], -X[:, 0], 0.5 * X[:, 2]], axis=1) * 5.0)
    e = [linear_energy(body, body.get_vertices_pos(), body.get_vertices_vel())[0]]
    for _ in range(60):
        sc.step()
        e.append(linear_energy(body, body.get_vertices_pos(), body.get_vertices_vel())[0])
    e = np.array(e)
    # the modified energy differs from E by O((h·omega_max)²); h = 0.2 CFL gives (0.2·2)²/8 ~ 2 %
    # (measured 1.6 % peak, 0.9 % after 600 substeps: it oscillates, it does not drift)
    assert np.abs(e / e[0] - 1).max() < 0.02, np.abs(e / e[0] - 1).max()


def test_implicit_equilibrium_equals_explicit():
    """A clamped soft beam sagging under gravity with Rayleigh damping: the rest state of the
    implicit solver (large steps) equals the explicit one (small steps)."""
    mat = Elastic(E=2e4, nu=0.3, rho=1000.0, damping_mass=8.0, damping_stiffness=0.0, model="corotated")
    rests = {}
    for integ, dt, sub, steps in (("explicit", 0.01, 4, 300), ("implicit", 0.05, 1, 60)):
        opts = FEMOptions(integrator=integ, newton_iters=4, cg_iters=100, cg_tol=1e-6)
        sc = _scene(opts, dt=dt, substeps=sub)
        b = sc.add_entity(morphs.Box(size=(0.3, 0.05, 0.05), pos=(0.15, 0, 0.5)), mat, resolution=(6, 1, 1),
                          fixed=lambda x: x[:, 0] < 1e-6)
        sc.build()
        for _ in range(steps):
            sc.step()
        rests[integ] = b.get_vertices_pos()
        assert np.abs(b.get_vertices_vel()).max() < 1e-3          # at rest
    sag = 0.5 - rests["explicit"][:, 2].min()
    assert sag > 0.01
    # both converge to the same static equilibrium: a residual motion |v| < 1e-3 m/s of the lowest
    # mode (omega ~ sqrt(g / sag) ~ 6 rad/s) is an amplitude < v/omega ~ 2e-4 m (measured 1e-5 m)
    assert np.abs(rests["explicit"] - rests["implicit"]).max() < 2e-4


def test_planes_friction_and_domain():
    """A cube dropped on the floor stops there (no penetration); a sliding cube with friction
    slows down while a frictionless one keeps its tangential speed; the domain box holds."""
    mat = Elastic(E=5e4, nu=0.3, rho=500.0, damping_mass=1.0)
    out = {}
    for mu in (0.0, 0.5):
        sc = _scene(FEMOptions(floor_height=0.0, friction=mu, domain=((-1, -1, -1), (5, 1, 2))),
                    dt=0.01, substeps=8)
        b = sc.add_entity(morphs.Box(size=(0.1, 0.1, 0.1), pos=(0, 0, 0.06)), mat, resolution=1)
        sc.build()
        b.set_vertices_vel(np.tile([1.0, 0.0, 0.0], (b.n_vertices, 1)))
        for _ in range(30):
            sc.step()
        x = b.get_vertices_pos()
        assert x[:, 2].min() >= -1e-6
        out[mu] = b.get_vertices_vel()[:, 0].mean()
    assert out[0.0] > 0.7
    assert out[0.5] < 0.2 * out[0.0]


@pytest.mark.validate
@pytest.mark.parametrize("n_thick", [6, 8])
def test_cantilever_euler_bernoulli(n_thick):
    """Clamped cantilever under its own weight, L/t = 10, tip deflection 1.5 % of L (linear regime):
    within 10 % of Euler-Bernoulli delta = 3 rho g L⁴ / (2 E t²). Measured: 6 through the thickness
    0.931, 8: 0.960 (linear tets lock in bending; the error shrinks with refinement)."""
    L, t, E, rho, g = 1.0, 0.1, 1e8, 1000.0, 9.81
    sc = _scene(FEMOptions(integrator="implicit", newton_iters=1, cg_iters=400 * n_thick, cg_tol=1e-6,
                           line_search_iters=2), dt=1.0)
    b = sc.add_entity(morphs.Box(size=(L, t, t), pos=(L / 2, 0, 1)), Elastic(E=E, nu=0.3, rho=rho, model="linear"),
                      resolution=(10 * n_thick, n_thick, n_thick), fixed=lambda x: x[:, 0] < 1e-9)
    sc.build()
    for _ in range(3):
        sc.step()
    x = b.get_vertices_pos()
    tip = 1.0 - x[np.abs(x[:, 0] - L) < 1e-5][:, 2].mean()
    eb = 3 * rho * g * L ** 4 / (2 * E * t ** 2)
    assert abs(tip / eb - 1) < 0.10, tip / eb


def test_domain_box_holds_and_inactive_elements_exert_no_force():
    """A cube thrown at the domain's +x wall stays inside it; in env 1 every element of a clamped
    beam is deactivated and its free vertices fall freely (symplectic Euler: z = z0 - g h² n(n+1)/2)
    while env 0's beam hangs from its clamp."""
    sc = _scene(FEMOptions(domain=((-1, -1, -1), (0.2, 1, 2)), friction=0.0), dt=0.01, substeps=10)
    cube = sc.add_entity(morphs.Box(size=(0.1, 0.1, 0.1), pos=(0, 0, 1)), Elastic(E=5e4, rho=500.0), resolution=1)
    beam = sc.add_entity(morphs.Box(size=(0.3, 0.05, 0.05), pos=(0.0, 0.5, 1.0)),
                         Elastic(E=1e5, rho=500.0, damping_mass=2.0), resolution=(6, 1, 1),
                         fixed=lambda x: x[:, 0] < -0.1499)
    sc.build(n_envs=2)
    cube.set_vertices_vel(np.tile([3.0, 0.0, 0.0], (cube.n_vertices, 1)))
    active = np.ones((2, beam.n_elements), dtype=bool)
    active[1] = False
    beam.set_elements_active(active)
    z0 = beam.get_vertices_pos()[:, :, 2]
    n = 20
    for _ in range(n):
        sc.step()
    assert cube.get_vertices_pos()[..., 0].max() <= 0.2 + 1e-6
    free = ~beam.get_fixed_vertices()[1]
    z = beam.get_vertices_pos()[:, :, 2]
    h, k = 0.01 / 10, 10 * n
    # free vertices of env 1 (mass damping alpha = 2/s also acts): v_k = (v_{k-1} - g h)/(1 + h alpha)
    v, zz = 0.0, 0.0
    for _ in range(k):
        v = (v - 9.81 * h) / (1 + 2.0 * h)
        zz += h * v
    assert np.allclose(z[1, free] - z0[1, free], zz, atol=1e-5)
    assert np.mean(z[0] - z0[0]) > 0.5 * zz            # env 0 is held up by its elastic elements


def test_implicit_floor_contact_rests_and_releases():
    """Implicit contact (filtered Newton directions, released when the gradient pulls off): a
    damped Neo-Hookean cube dropped tilted on a floor with friction μ = 0.6 lands and settles without
    crushing any element (friction applied to the velocity after the solve left corner elements at
    J = 0.71 at rest), and an undamped cube dropped flat bounces off it (the contact lets go)."""
    FEM = polyphys.materials.FEM
    landing = {}
    for integ, sub, steps in (("explicit", 40, 20), ("implicit", 2, 80)):
        sc = _scene(FEMOptions(integrator=integ, newton_iters=3, cg_iters=40, floor_height=0.0, friction=0.6),
                    dt=0.02, substeps=sub)
        jelly = sc.add_entity(morphs.Box(size=(0.15,) * 3, pos=(0.0, 0.0, 0.4), euler=(20, 10, 0)),
                              FEM.NeoHookean(E=2e4, nu=0.45, rho=1000.0, damping_stiffness=0.005), resolution=3)
        sc.build()
        Jmin = []
        for _ in range(steps):
            sc.step()
            Jmin.append(np.linalg.det(jelly.get_elements_deformation_gradient()).min())
        landing[integ] = min(Jmin[:20])               # it lands at t = 0.25 s, step 12
    # the landing compresses the edge it lands on, no deeper than the time-converged explicit
    # solution (h = 0.5 ms; backward Euler dissipates). 0.01: that reference's own step error
    # (min J 0.572, 0.569, 0.568 at h = 1, 0.5, 0.25 ms). Measured: implicit 0.673. (Frictionless:
    # 0.724 and 0.798, the reference matching the 1-D shock estimate 0.721 of a flat landing at
    # 2.4 m/s; the friction that keeps the edge from sliding adds to its compression.)
    assert landing["implicit"] > landing["explicit"] - 0.01, landing
    J = np.linalg.det(jelly.get_elements_deformation_gradient())
    # static sag rho g H / E ~ 7 % at the bottom fibre: every element stays well away from collapse
    assert J.min() > 0.9 and J.max() < 1.1
    assert np.abs(jelly.get_vertices_vel()).max() < 0.02
    assert 0.06 < jelly.get_pos()[2] < 0.075
    assert jelly.get_vertices_pos()[:, 2].min() > -1e-5

    sc = _scene(FEMOptions(integrator="implicit", floor_height=0.0, friction=0.0), dt=0.01, substeps=4)
    cube = sc.add_entity(morphs.Box(size=(0.1,) * 3, pos=(0, 0, 0.3)), FEM.Elastic(E=1e5, nu=0.3, rho=500.0),
                         resolution=2)
    sc.build()
    z = []
    for _ in range(60):
        sc.step()
        z.append(cube.get_pos()[2])
    z = np.array(z)
    low = int(np.argmin(z[:40]))
    assert z[low] < 0.05 and z[low:].max() > z[low] + 0.015      # lifts off again after impact


def test_neo_hookean_hard_impact_with_default_caps():
    """A very soft Neo-Hookean cube (c_p ~ 6 m/s) hits the floor on a corner at 4 m/s with h = 20 ms,
    the default friction (0.5) and the default 3 Newton × 50 CG iterations: with the projected
    Hessian it bounces and stays sane (the exact, indefinite Hessian inverted elements and diverged
    here, and so did friction applied to the velocity after the solve). Measured min J during the
    impact: 0.32 (0.30 frictionless)."""
    FEM = polyphys.materials.FEM
    sc = _scene(FEMOptions(integrator="implicit", floor_height=0.0), dt=0.02, nan_policy="raise")
    c = sc.add_entity(morphs.Box(size=(0.2,) * 3, pos=(0, 0, 1.0), euler=(30, 40, 0)),
                      FEM.NeoHookean(E=1e4, nu=0.45), resolution=4)
    sc.build()
    Jmin = 1.0
    for _ in range(60):
        sc.step()
        Jmin = min(Jmin, np.linalg.det(c.get_elements_deformation_gradient()).min())
    J = np.linalg.det(c.get_elements_deformation_gradient())
    assert Jmin > 0.1 and J.min() > 0.5 and J.max() < 1.2
    assert np.abs(c.get_vertices_vel()).max() < 3.0
    assert 0.05 < c.get_pos()[2] < 0.15


@pytest.mark.parametrize("integrator, substeps, precision", [("explicit", 8, "32"), ("implicit", 1, "32"),
                                                          ("implicit", 1, "64")])
def test_sliding_block_decelerates_at_mu_g(integrator, substeps, precision):
    """A 0.12 x 0.08 x 0.06 m block (3 x 2 x 2 cells, yawed 30°) settled on a floor at z = 0.13 m,
    launched at 1.5 m/s along an oblique direction with Coulomb friction μ = 0.4: while it slides its
    mean velocity falls at μg (the friction force is μ times the normal force, which carries the
    block's weight). 10 %: the issue's bound (half the friction fails it); the elastic block rocks a
    little as it starts. Measured: explicit 0.997, implicit 1.000 (0.25 before the friction went
    into the Newton solve: its contacts' friction saw each vertex's own weight only)."""
    mu, g, v0 = 0.4, 9.81, 1.5
    sc = _scene(FEMOptions(integrator=integrator, floor_height=0.13, friction=mu), dt=0.01, substeps=substeps,
                precision=precision)
    b = sc.add_entity(morphs.Box(size=(0.12, 0.08, 0.06), pos=(0.37, -0.21, 0.16), euler=(0, 0, 30)),
                      Elastic(E=5e4, nu=0.3, rho=500.0), resolution=(3, 2, 2))
    sc.build()
    for _ in range(10):                 # settle on the floor
        sc.step()
    d = np.array([np.cos(0.4), np.sin(0.4), 0.0])
    b.set_vertices_vel(np.tile(v0 * d, (b.n_vertices, 1)))
    v = []
    for _ in range(40):
        sc.step()
        v.append(b.get_vertices_vel().mean(0) @ d)
    v, t = np.array(v), 0.01 * np.arange(1, 41)
    sliding = (v > 0.2) & (v < v0 - 0.1)
    assert sliding.sum() >= 10
    decel = -np.polyfit(t[sliding], v[sliding], 1)[0]
    assert abs(decel / (mu * g) - 1) < 0.1, decel / (mu * g)
    assert b.get_vertices_pos()[:, 2].min() >= 0.13 - 1e-6


def _block_on_incline(theta_deg, mu, steps, integrator="implicit", substeps=1, **opts):
    """A 0.12 x 0.08 x 0.06 m elastic block (3 x 2 x 2 cells) on a plane through (0.3, -0.2, 0.1)
    tilted by theta about a horizontal axis at 25° yaw, the block turned 40° about the plane normal
    and off the plane point, released 0.1 mm above the plane. Returns the times, the centre of mass
    and mean vertex velocity along the steepest descent, and the extreme J and plane distance."""
    th = np.radians(theta_deg)
    tilt = Rotation.from_rotvec(th * np.array([np.cos(np.radians(25)), np.sin(np.radians(25)), 0.0]))
    n, p0, size = tilt.apply([0.0, 0.0, 1.0]), np.array([0.3, -0.2, 0.1]), np.array([0.12, 0.08, 0.06])
    centre = p0 + tilt.apply([0.05, -0.03, 0.0]) + (size[2] / 2 + 1e-4) * n
    q = (tilt * Rotation.from_euler("z", 40, degrees=True)).as_quat()          # (x, y, z, w)
    sc = _scene(FEMOptions(integrator=integrator, planes=[(tuple(p0), tuple(n))], friction=mu, **opts), dt=0.01,
                substeps=substeps)
    b = sc.add_entity(morphs.Box(size=tuple(size), pos=tuple(centre), quat=(q[3], q[0], q[1], q[2])),
                      Elastic(E=5e4, nu=0.3, rho=500.0), resolution=(3, 2, 2))
    sc.build()
    down = np.array([0.0, 0.0, -1.0]) + n[2] * n
    down /= np.linalg.norm(down)
    s, v, Jmin, dmin = [], [], 1.0, np.inf
    for _ in range(steps):
        sc.step()
        s.append(b.get_pos() @ down)
        v.append(b.get_vertices_vel().mean(0) @ down)
        Jmin = min(Jmin, np.linalg.det(b.get_elements_deformation_gradient()).min())
        dmin = min(dmin, ((b.get_vertices_pos() - p0) @ n).min())
    return 0.01 * np.arange(1, steps + 1), np.array(s), np.array(v), Jmin, dmin


@pytest.mark.parametrize("integrator, substeps", [("explicit", 8), ("implicit", 1)])
@pytest.mark.parametrize("theta, mu", [(20.0, 0.6), (35.0, 0.4)], ids=["sticks", "slides"])
def test_block_on_incline_sticks_or_slides(theta, mu, integrator, substeps):
    """A block on a tilted plane (generic pose, see _block_on_incline).

    tanθ < μ (20°, μ = 0.6): it sticks. Explicit (exact Coulomb at the velocity level): over the
    last 0.5 s its centre moves less than the static shear offset ρgH²/G of the whole block (0.9 mm;
    measured 0.02 mm; 7 mm when the position step was taken with the velocity before friction).
    Implicit: the smoothed friction (IPC) only reaches μλ at a tangential
    speed ε_v; below it the force is μλ f₁(v/ε_v), f₁(r) = 2r - r². In steady creep the block moves
    as a whole, so every contact slips at the same v and Σμλ f₁ = Mg sinθ, Σλ = Mg cosθ give
    v* = ε_v (1 - √(1 - tanθ/μ)) (0.373 ε_v here; never above ε_v). ε_v = 2 mm/s (not the default)
    so that the option is the one in effect. 10 %: the solve's convergence at 3 Newton iterations
    (measured 1.00). Half the friction (μ = 0.3 < tanθ) slides at 0.6 m/s² instead.
    tanθ > μ (35°, μ = 0.4): it slides with a = g (sinθ - μ cosθ) = 2.41 m/s², within 10 % (the
    issue's bound; measured 1.000; frictionless would be 5.63 m/s², half the friction 4.02).
    Both: no vertex behind the plane, and J stays within 2 % of 1 (the static strain ρgH/E is
    0.6 %)."""
    g, eps_v = 9.81, 2e-3
    th = np.radians(theta)
    t, s, v, Jmin, dmin = _block_on_incline(theta, mu, 100, integrator, substeps, stick_velocity=eps_v)
    if np.tan(th) < mu and integrator == "explicit":
        rho, H, G = 500.0, 0.06, 5e4 / (2 * 1.3)
        assert abs(s[-1] - s[49]) < rho * g * H ** 2 / G, s[-1] - s[49]
    elif np.tan(th) < mu:
        v_star = eps_v * (1 - np.sqrt(1 - np.tan(th) / mu))
        creep = (s[-1] - s[49]) / (t[-1] - t[49])
        assert abs(creep / v_star - 1) < 0.1, (creep, v_star)
    else:
        late = t > 0.2
        a = np.polyfit(t[late], v[late], 1)[0]
        a_exp = g * (np.sin(th) - mu * np.cos(th))
        assert abs(a / a_exp - 1) < 0.1, a / a_exp
    assert dmin > -1e-6
    assert Jmin > 0.98, Jmin
