"""Rigid–FEM point contact in the SAP coupler (docs/sap.md, "Rigid–FEM contact").

Scenes at generic poses (floors off the origin, bodies yawed, non-unit sizes); tolerances derived
in each test from the physics (linear elasticity, the contact compliance, float64 rounding).
"""

from __future__ import annotations

import math

import numpy as np
import polyphys
import pytest
from polyphys import morphs as M
from polyphys.couplers.sap.options import SapOptions
from polyphys.errors import CapabilityError
from polyphys.options import SimOptions
from polyphys.plugins.rigid.materials import Rigid

fem = pytest.importorskip("polyphys.plugins.fem")
from polyphys.plugins.fem import FEMOptions  # noqa: E402
from polyphys.plugins.fem.materials import Elastic  # noqa: E402

G = 9.81
FLOOR = (0.11, -0.07, 0.03)        # a point of the floor plane (off the origin)


def _scene(dt, substeps, *, opts, gravity=(0.0, 0.0, -G), integrator="explicit", fem_opts=None):
    fo = fem_opts or FEMOptions(integrator=integrator)
    return polyphys.Scene(sim=SimOptions(dt=dt, substeps=substeps, precision="64", gravity=gravity), coupler=opts,
                          fem=fo)


def _cube_on_floor(integrator="explicit", res=8, n_envs=0, L=0.13, E=1.0e5, nu=0.3, rho=1000.0, k=2.0e4, tau=0.01,
                   dt=0.005, substeps=20, alpha=20.0):
    """A soft cube (yawed 30°) resting on a fixed rigid plane, bottom face at the plane."""
    opts = SapOptions(point_stiffness=k, dissipation_time_constant=tau, fem_friction=0.0)
    scene = _scene(dt, substeps, opts=opts, integrator=integrator,
                   fem_opts=FEMOptions(integrator=integrator, newton_iters=3, cg_iters=50, cg_tol=1e-6))
    scene.add_entity(morph=M.Plane(pos=FLOOR), material=Rigid())
    centre = (FLOOR[0] + 0.04, FLOOR[1] + 0.02, FLOOR[2] + L / 2)
    cube = scene.add_entity(morph=M.Box(size=(L, L, L), pos=centre, euler=(0.0, 0.0, 30.0)),
                            material=Elastic(E=E, nu=nu, rho=rho, model="linear", damping_mass=alpha), resolution=res)
    scene.build(n_envs=n_envs)
    return scene, cube, np.asarray(centre)


def _sap(scene):
    return next(c for c in scene.couplers if c.name == "sap")


@pytest.mark.parametrize("integrator", ["explicit", pytest.param("implicit", marks=pytest.mark.validate)])
def test_soft_cube_settles_on_a_rigid_floor(integrator):
    """Σ normal contact force = weight within 1 %; the CoM sag = ρgL²/(3E) (the exact linear-elastic
    uniaxial solution σ_zz = −ρg(L − z) on a frictionless base: u_z = −ρg(Lz − z²/2)/E, averaged over
    the height) plus the contacts' own penetration (mean −φ of the bottom contacts), within 5 %
    (linear tets on an 8-cell mesh: the quadratic u_z is resolved to O((L/8)²/L²) ~ 1.6 %).

    The FEM's mass damping α acts on v* before the coupling (v* = (v + h·a)/(1 + hα)), so at rest
    the contact impulse per substep is m·g·h/(1 + hα): the force sum is compared with W/(1 + hα)
    (hα = 0.005 here).

    Implicit FEM: the contact solve linearises the backward-Euler step by M alone (docs/sap.md), so the
    equilibrium carries an extra O(h²·f_contact/m_vertex) deformation at the bottom (~1.4 % of the sag
    at h = 0.25 ms; measured +1.9 %); explicit: measured within 0.1 %. ~2 min (validate)."""
    L, E, rho, alpha, h = 0.13, 1.0e5, 1000.0, 20.0, 0.005 / 20
    scene, cube, centre = _cube_on_floor(integrator, alpha=alpha)
    for _ in range(120):         # 0.6 s: mass damping 20/s decays the axial mode (~120 rad/s) by e^-6
        scene.step()
    sap = _sap(scene)
    c = sap.get_fem_contacts()
    n = c["count"]
    assert c["overflow"] == 0 and n > 0
    weight = rho * L ** 3 * G
    fz = np.nansum(c["force"][:n, 2])
    assert abs(fz - weight / (1 + h * alpha)) < 0.01 * weight, (fz, weight)
    pen = float(np.mean(-c["dist"][:n]))
    sag = centre[2] - cube.get_pos()[2]
    expected = rho * G * L ** 2 / (3 * E) + pen
    assert abs(sag - expected) < 0.05 * expected, (sag, expected, pen)
    # at rest: the vertices do not move
    assert np.abs(cube.get_vertices_vel()).max() < 1e-3


def test_rigid_box_rests_on_fem_slab():
    """A rigid box on an FEM slab held at its bottom: Σ normal force on the box = its weight within 1 %."""
    opts = SapOptions(point_stiffness=2.0e4, dissipation_time_constant=0.01, fem_friction=0.5)
    scene = _scene(0.005, 10, opts=opts)
    scene.add_entity(morph=M.Plane(pos=(FLOOR[0], FLOOR[1], FLOOR[2] - 0.05)), material=Rigid())
    sx, sy, sz = 0.36, 0.28, 0.06
    base = (FLOOR[0] + 0.02, FLOOR[1] - 0.03, FLOOR[2])
    slab = scene.add_entity(morph=M.Box(size=(sx, sy, sz), pos=(base[0], base[1], base[2] + sz / 2),
                                        euler=(0.0, 0.0, 20.0)),
                            material=Elastic(E=1.0e5, nu=0.3, rho=1000.0, damping_mass=40.0), resolution=12,
                            fixed={"upper": (np.inf, np.inf, base[2] + 1e-6)})
    bs = (0.1, 0.08, 0.05)
    rho_b = 500.0
    box = scene.add_entity(morph=M.Box(size=bs, pos=(base[0] + 0.01, base[1] + 0.02, base[2] + sz + bs[2] / 2),
                                       euler=(0.0, 0.0, 35.0)), material=Rigid(rho=rho_b))
    scene.build()
    for _ in range(120):
        scene.step()
    c = _sap(scene).get_fem_contacts()
    n = c["count"]
    weight = rho_b * np.prod(bs) * G
    fz = -np.nansum(c["force"][:n, 2])      # the box receives the opposite of the vertices' force
    assert c["overflow"] == 0 and n > 0
    assert abs(fz - weight) < 0.01 * weight, (fz, weight)
    assert np.abs(box.get_vel()).max() < 1e-3
    assert np.abs(slab.get_vertices_vel()).max() < 1e-3
    # the contact Jacobian rows R·P against the rigid entity's own point Jacobian at the contact
    # point; the box moves < 1e-3 m/s, so its pose changes < 1e-6 m within the substep between the two
    fb = _sap(scene)._rigid["rigid"].fem
    jac = fb.jac.numpy()[0]
    on_box = np.nonzero(c["link"][:n] == box.link_start)[0]
    assert on_box.size == n
    for k in on_box:
        want = c["frame"][k] @ box.get_jacobian(0, point=c["pos"][k])[:3]
        np.testing.assert_allclose(jac[3 * k:3 * k + 3], want, atol=1e-6)


def _impact_scene(n_envs=0):
    opts = SapOptions(point_stiffness=5.0e4, dissipation_time_constant=0.002, fem_friction=0.4)
    scene = _scene(0.004, 8, opts=opts, gravity=(0.0, 0.0, 0.0))
    scene.add_entity(morph=M.Plane(pos=(0.0, 0.0, -1.0)), material=Rigid())     # far away: no contact
    block = scene.add_entity(morph=M.Box(size=(0.1, 0.08, 0.07), pos=(0.03, -0.02, 0.11), euler=(0.0, 0.0, 15.0)),
                             material=Elastic(E=1.0e5, nu=0.3, rho=1000.0), resolution=5)
    box = scene.add_entity(morph=M.Box(size=(0.09, 0.07, 0.06), pos=(0.16, 0.0, 0.12), euler=(10.0, 0.0, 25.0)),
                           material=Rigid(rho=800.0))
    scene.build(n_envs=n_envs)
    v0 = np.zeros((block.n_vertices, 3))
    v0[:, 0] = 0.8
    block.set_vertices_vel(v0 if n_envs == 0 else np.broadcast_to(v0, (n_envs,) + v0.shape).copy())
    return scene, block, box


def _momentum(block, box):
    m = block.vertex_mass
    p_fem = (block.get_vertices_vel() * m[:, None]).sum(axis=-2)
    mb = float(np.asarray(box.get_links_mass()).reshape(-1)[0])
    return p_fem + mb * box.get_vel(relative=False)


def test_momentum_is_conserved_through_an_fem_rigid_impact():
    """Gravity off: an FEM block hits a free rigid box. Total linear momentum (Σ m v of the
    vertices + the box's m v_com) is conserved to float64 rounding (equal and opposite impulses
    from the Jacobian form; the rigid side integrates J_rᵀγ, the vertices m⁻¹Rᵀγ)."""
    scene, block, box = _impact_scene()
    p0 = _momentum(block, box)
    hit = False
    for _ in range(60):
        scene.step()
        c = _sap(scene).get_fem_contacts()
        hit = hit or c["count"] > 0
    p1 = _momentum(block, box)
    assert hit
    scale = np.linalg.norm(p0)
    assert np.abs(box.get_vel(relative=False)).max() > 0.05    # the box was pushed
    assert np.linalg.norm(p1 - p0) < 1e-10 * scale, (p0, p1)


def test_two_fem_bodies_are_refused():
    opts = SapOptions()
    scene = _scene(0.005, 10, opts=opts)
    scene.add_entity(morph=M.Plane(pos=FLOOR), material=Rigid())
    for x in (0.0, 0.3):
        scene.add_entity(morph=M.Box(size=(0.1, 0.1, 0.1), pos=(x, 0.0, 0.2)), material=Elastic(), resolution=2)
    with pytest.raises(CapabilityError, match="FEM–FEM"):
        scene.build()


def test_batch_equals_single_runs_reset_and_checkpoint(tmp_path):
    """n_envs = 2 (the second env's block pushed slower) equals two single runs bit for bit; a
    checkpoint taken mid-impact continues bit-exactly (the vertex warm start is part of it); a
    per-env reset leaves the other env bit-identical and clears that env's vertex warm start."""
    def run(scene, block, steps):
        for _ in range(steps):
            scene.step()
        return block.get_vertices_pos().copy()

    scene, block, box = _impact_scene(n_envs=2)
    v = block.get_vertices_vel()
    v[1] *= 0.5
    block.set_vertices_vel(v)
    both = run(scene, block, 25)
    for e in range(2):
        s1, b1, _ = _impact_scene()
        if e == 1:
            b1.set_vertices_vel(b1.get_vertices_vel() * 0.5)
        np.testing.assert_array_equal(run(s1, b1, 25), both[e])
    # checkpoint continuation mid-contact
    touching = np.nonzero(_sap(scene).get_fem_contacts()["count"] > 0)[0]
    assert touching.size > 0
    path = scene.save_checkpoint(tmp_path / "sapfem.ckpt")
    want = run(scene, block, 10)
    other, oblock, _ = _impact_scene(n_envs=2)
    other.load_checkpoint(path)
    np.testing.assert_array_equal(run(other, oblock, 10), want)
    # per-env reset of an env in contact: its vertex warm start is cleared, the other env untouched
    third, tblock, _ = _impact_scene(n_envs=2)
    third.load_checkpoint(path)
    fb = _sap(third)._rigid["rigid"].fem
    e = int(touching[0])
    assert fb.warm_u_ok.numpy()[e].any()
    keep_ok = fb.warm_u_ok.numpy()[1 - e].copy()
    keep = tblock.get_vertices_pos()[1 - e].copy()
    third.reset(envs_idx=[e])
    assert not fb.warm_u_ok.numpy()[e].any()
    np.testing.assert_array_equal(fb.warm_u_ok.numpy()[1 - e], keep_ok)
    np.testing.assert_array_equal(tblock.get_vertices_pos()[1 - e], keep)


def test_bad_fem_options():
    with pytest.raises(Exception, match="fem_point_stiffness"):
        SapOptions(fem_point_stiffness=0.0)
    with pytest.raises(Exception, match="fem_max_contacts"):
        SapOptions(fem_max_contacts=0)
    assert math.isinf(SapOptions().fem_point_stiffness)


def test_sap_and_legacy_split_the_pairs_in_list_order():
    """The FEM solver exposes ParticleView too, so SAP and Legacy could both couple rigid–FEM: the
    coupler listed first takes it (docs/sap.md, "Selection"). [SAP, legacy]: SAP couples rigid–rigid
    and rigid–FEM, Legacy rigid–MPM only; [legacy, SAP]: Legacy couples rigid–FEM and rigid–MPM, SAP
    rigid–rigid; a coupler listed twice is refused."""
    from polyphys.errors import BuildError
    from polyphys.plugins.mpm.options import MPMOptions

    def build(coupler):
        scene = polyphys.Scene(sim=SimOptions(dt=0.005, substeps=10), coupler=coupler, fem=FEMOptions(),
                               mpm=MPMOptions(lower_bound=(-1, -1, -0.5), upper_bound=(1, 1, 1.5), grid_density=16))
        scene.add_entity(morph=M.Plane(pos=FLOOR), material=Rigid())
        scene.add_entity(morph=M.Box(size=(0.1, 0.1, 0.1), pos=(0.3, 0.1, 0.2), euler=(0, 0, 25)), material=Elastic(),
                         resolution=2)
        scene.add_entity(morph=M.Box(size=(0.1, 0.12, 0.1), pos=(-0.3, 0.0, 0.3)), material=polyphys.materials.MPM.Elastic())
        scene.build()
        return {c.name: sorted((a.name, b.name) for a, b in c.pairs) for c in scene.couplers}

    got = build([SapOptions(), "legacy"])
    assert got["sap"] == [("rigid", "fem"), ("rigid", "rigid")]
    assert ("rigid", "mpm") in got["legacy"] and ("rigid", "fem") not in got["legacy"]
    got = build(["legacy", SapOptions()])
    assert got["sap"] == [("rigid", "rigid")]
    assert {("rigid", "fem"), ("rigid", "mpm")} <= set(got["legacy"])
    with pytest.raises(BuildError, match="listed twice"):
        build([SapOptions(), "legacy", "sap"])


def test_float32_scene_with_rigid_and_fem_contacts_in_one_problem():
    """float32: a soft cube (6 cells) on the floor next to a rigid box resting on it, two envs (rigid
    rows and FEM vertices in the same per-env problem): the cube's Σ normal force = W/(1 + hα)
    within 1 % in both envs, equal envs, and the box's ground force = its weight within 1 %."""
    L, h, alpha = 0.13, 0.005 / 20, 20.0
    opts = SapOptions(point_stiffness=2.0e4, dissipation_time_constant=0.01, fem_friction=0.0)
    scene = polyphys.Scene(sim=SimOptions(dt=0.005, substeps=20, precision="32"), coupler=opts, fem=FEMOptions())
    scene.add_entity(morph=M.Plane(pos=FLOOR), material=Rigid())
    bs, rho_b = (0.1, 0.08, 0.05), 500.0
    box = scene.add_entity(morph=M.Box(size=bs, pos=(0.5, 0.0, FLOOR[2] + bs[2] / 2), euler=(0.0, 0.0, 20.0)),
                           material=Rigid(rho=rho_b))
    scene.add_entity(morph=M.Box(size=(L, L, L), pos=(0.15, -0.05, FLOOR[2] + L / 2), euler=(0.0, 0.0, 30.0)),
                     material=Elastic(E=1.0e5, nu=0.3, rho=1000.0, model="linear", damping_mass=alpha), resolution=6)
    scene.build(n_envs=2)
    for _ in range(120):
        scene.step()
    c = _sap(scene).get_fem_contacts()
    w = 1000.0 * L ** 3 * G / (1 + h * alpha)
    f = [np.nansum(c["force"][e, :c["count"][e], 2]) for e in range(2)]
    assert f[0] == f[1]
    assert abs(f[0] - w) < 0.01 * w, (f, w)
    ground = box.get_contacts()
    fz = np.abs(ground["force_a"][0][:, 2]).sum()
    wb = rho_b * np.prod(bs) * G
    assert abs(fz - wb) < 0.01 * wb, (fz, wb)


def test_per_geom_tables_apply_to_rigid_fem_pairs():
    """geom_point_stiffness / geom_dissipation_time_constant of the floor's collision geom (0) set the
    geom side of its rigid–FEM pairs: k = series(k_geom, fem_point_stiffness), τ_d = τ_geom +
    fem_dissipation_time_constant (readback), and the solve used them: at rest (v_n ~ 0) each
    contact's force is k·(−φ), so Σ k_c·(−φ_c) = Σ f_n within 1 %."""
    k_geom, k_fem, tau_geom, tau_fem = 5.0e3, 2.0e4, 0.004, 0.003
    opts = SapOptions(point_stiffness=1.0e6, geom_point_stiffness={0: k_geom}, dissipation_time_constant=0.05,
                      geom_dissipation_time_constant={0: tau_geom}, fem_point_stiffness=k_fem,
                      fem_dissipation_time_constant=tau_fem, fem_friction=0.0)
    scene = _scene(0.005, 20, opts=opts)
    scene.add_entity(morph=M.Plane(pos=FLOOR), material=Rigid())
    L = 0.1
    scene.add_entity(morph=M.Box(size=(L, L, L), pos=(FLOOR[0] + 0.03, FLOOR[1] - 0.01, FLOOR[2] + L / 2),
                                 euler=(0.0, 0.0, 25.0)),
                     material=Elastic(E=1.0e5, nu=0.3, rho=1000.0, model="linear", damping_mass=20.0), resolution=5)
    scene.build()
    for _ in range(80):
        scene.step()
    c = _sap(scene).get_fem_contacts()
    n = c["count"]
    assert n > 0
    np.testing.assert_allclose(c["stiffness"][:n], k_geom * k_fem / (k_geom + k_fem), rtol=1e-12)
    np.testing.assert_allclose(c["tau_d"][:n], tau_geom + tau_fem, rtol=1e-12)
    fz = np.nansum(c["force"][:n, 2])
    spring = np.sum(c["stiffness"][:n] * -c["dist"][:n])
    assert fz > 0 and abs(spring - fz) < 0.01 * fz, (spring, fz)


@pytest.mark.parametrize("box_size,warns", [((0.035, 0.05, 0.03), True), ((0.3, 0.24, 0.2), False)])
def test_geom_narrower_than_the_fem_surface_edges_warns(box_size, warns):
    """Contact is tested at FEM surface vertices only (docs/sap.md): a rigid geom narrower than the
    surface's longest edge can pass between the vertices, so the build warns naming it; a geom whose
    middle extent exceeds every surface edge builds silently."""
    import warnings

    from polyphys.errors import PolyphysWarning

    opts = SapOptions(point_stiffness=2.0e4, dissipation_time_constant=0.01)
    scene = _scene(0.005, 10, opts=opts)
    scene.add_entity(morph=M.Plane(pos=(FLOOR[0], FLOOR[1], FLOOR[2] - 0.05)), material=Rigid())
    sx, sy, sz = 0.36, 0.28, 0.06           # resolution 3: surface edges up to ~0.18 m (cell diagonals)
    scene.add_entity(morph=M.Box(size=(sx, sy, sz), pos=(FLOOR[0], FLOOR[1], FLOOR[2] + sz / 2), euler=(0.0, 0.0, 20.0)),
                     material=Elastic(E=1.0e5, nu=0.3, rho=1000.0), resolution=3,
                     fixed={"upper": (np.inf, np.inf, FLOOR[2] + 1e-6)})
    scene.add_entity(morph=M.Box(size=box_size, pos=(FLOOR[0] + 0.03, FLOOR[1] - 0.02, FLOOR[2] + 0.3),
                                 euler=(10.0, 0.0, 35.0)), material=Rigid(rho=500.0))
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        scene.build()
    hits = [w for w in rec if issubclass(w.category, PolyphysWarning) and "narrower" in str(w.message)]
    assert len(hits) == (1 if warns else 0), [str(w.message) for w in rec]
    if warns:
        assert "geom 1 (box" in str(hits[0].message)
