"""Legacy coupler between the rigid solver and MPM: total linear momentum is conserved.

A free rigid box (rotated, with friction and restitution on the coupling) is hit by an elastic MPM
block thrown at it off-centre, gravity off, no ground, domain walls > 0.6 m from both bodies.
Every exchange is equal and opposite (the coupler's reaction −m·Δv/h on the link; P2G/G2P transfers
conserve momentum), so the only drift is float32 round-off.
"""

import numpy as np
import polyphys
import pytest
from polyphys import morphs

pytest.importorskip("polyphys.plugins.mpm.options")
pytest.importorskip("polyphys.plugins.rigid")

STEPS, SUBSTEPS = 60, 8


def test_rigid_box_and_mpm_block_conserve_total_linear_momentum():
    from polyphys.plugins.mpm.options import MPMOptions
    from polyphys.plugins.rigid import RigidOptions
    from polyphys.plugins.rigid.materials import Rigid

    scene = polyphys.Scene(
        sim=polyphys.SimOptions(dt=2e-3, substeps=SUBSTEPS, gravity=(0, 0, 0)),
        rigid=RigidOptions(enable_collision=False),
        mpm=MPMOptions(lower_bound=(-1, -1, -0.5), upper_bound=(1, 1, 1.5), grid_density=32))
    box = scene.add_entity(morphs.Box(size=(0.2, 0.2, 0.2), pos=(0.15, 0.02, 0.5), euler=(0, 0, 20)),
                           Rigid(rho=300.0, coup_friction=0.3, coup_restitution=0.2))
    blob = scene.add_entity(morphs.Box(size=(0.15, 0.15, 0.15), pos=(-0.15, 0, 0.53)),
                            polyphys.materials.MPM.Elastic())
    scene.build()
    assert [c.name for c in scene.couplers] == ["legacy"]
    blob.set_velocity([2.0, 0.3, -0.2])
    n = blob.get_particles_vel().shape[0]
    mp = blob.get_mass() / n
    mb = float(box.get_links_mass()[0])

    def momentum():
        vb = box.get_vel().astype(np.float64)
        vp = blob.get_particles_vel().astype(np.float64)
        return mb * vb + mp * vp.sum(0), mb * np.abs(vb).sum() + mp * np.abs(vp).sum()

    p0, scale = momentum()
    worst = 0.0
    for _ in range(STEPS):
        scene.step()
        worst = max(worst, np.abs(momentum()[0] - p0).max())
    assert box.get_vel()[0] > 0.5                     # they did collide: the box carries a real share
    # Bound: each substep sums/moves the momentum through float32 values (P2G scatter, grid update,
    # coupler reaction, G2P, rigid integration), each contributing at most a few ulps relative to
    # Σ|m v|; 4·ε32 per substep accumulated linearly over STEPS·SUBSTEPS substeps. Measured ~2e-6 N·s
    # (|p0| ≈ 6.8 N·s), the bound ≈ 1.1e-3 N·s.
    bound = 4 * np.finfo(np.float32).eps * STEPS * SUBSTEPS * scale
    assert worst < bound, (worst, bound)


def test_plate_ground_contact_impulse_carries_plate_and_mpm_block_weight():
    """A rigid plate on a fixed rigid ground plane under an elastic MPM block: once settled (0.4 s),
    the plate–ground contact impulse (Σ of the plate's per-step net contact impulse) averaged over
    0.3 s equals (plate + block) weight within 2 % — the block's weight reaches the plate only
    through the Legacy coupler. Measured 1.0013 (window 0.4–0.7 s).

    The plate is 0.1 m thick (3.2 cells): with a plate thinner than ~2 cells the block's grid nodes
    cross the plate's mid-plane, see the SDF normal flip and the block sinks through (measured)."""
    from polyphys.plugins.mpm.options import MPMOptions
    from polyphys.plugins.rigid.materials import Rigid

    g, dt, settle, window = 9.81, 2e-3, 200, 150
    # E = 1e5, rho = 1000: c ≈ 10.5 m/s, CFL h_max = 0.5·dx/c ≈ 1.5e-3 s ≫ h = 2.5e-4 s
    scene = polyphys.Scene(
        sim=polyphys.SimOptions(dt=dt, substeps=8, gravity=(0, 0, -g)),
        mpm=MPMOptions(lower_bound=(-0.5, -0.5, -0.3), upper_bound=(0.5, 0.5, 0.7), grid_density=32))
    scene.add_entity(morphs.Plane(), Rigid(), name="ground")
    plate = scene.add_entity(morphs.Box(size=(0.4, 0.4, 0.1), pos=(0, 0, 0.05)), Rigid(rho=300.0))
    blob = scene.add_entity(morphs.Box(size=(0.15, 0.15, 0.15), pos=(0, 0, 0.185)),
                            polyphys.materials.MPM.Elastic(E=1e5))
    scene.build()
    weight = (float(plate.get_links_mass()[0]) + blob.get_mass()) * g
    impulse = 0.0
    for i in range(settle + window):
        scene.step()
        if i >= settle:
            impulse += float(np.asarray(plate.get_links_net_contact_wrench()["impulse_force"]).reshape(-1, 3)[0, 2])
    assert abs(plate.get_pos()[2] - 0.05) < 1e-3                # the plate rests on the ground
    # the block rests on the plate's top face: its lowest material points on it (the coupler holds
    # them on the surface, docs/legacy.md), not hovering a grid cell above it (0.1 mm: float32
    # rounding of the projection and one substep's creep at the measured 0.02 m/s)
    top = plate.get_pos()[2] + 0.05
    assert abs(blob.get_particles_pos()[:, 2].min() - top) < 1e-4
    ratio = impulse / (window * dt) / weight
    assert abs(ratio - 1.0) < 0.02, ratio


def test_symmetric_drop_stays_on_its_axis():
    """Issue 26: the default scene (a rigid box dropped on the centre of an MPM jelly resting on a
    kinematic platform) is mirror-symmetric in x and y, so the box must stay on the z axis. With the
    grid's extra fraction of a cell all at the upper end (a ±0.3 m domain at 32 cells/m is 19.2
    cells), the node lattice was 0.4 cell off-centre, the coupling pushed the box sideways and it
    ended at (0.018, 0.028) m. Now the grid is centred on the domain; what is left is float32 rounding
    (1e-7 relative), amplified by the contact over 500 substeps: bound dx/32 ≈ 1 mm, a thirtieth of
    the 0.4-cell offset's scale that moved it 2.8 cm (measured after the fix: 7e-5 m)."""
    from polyphys.errors import PolyphysWarning
    from polyphys.plugins.mpm.options import MPMOptions
    from polyphys.plugins.rigid.materials import Rigid

    dx = 1 / 32
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=5),
                           mpm=MPMOptions(lower_bound=(-0.3, -0.3, 0.0), upper_bound=(0.3, 0.3, 0.6),
                                          grid_density=1 / dx, boundary="slip"))
    scene.add_entity(morphs.Box(size=(0.4, 0.4, 0.05), pos=(0, 0, 0.1), fixed=True),
                     polyphys.materials.Kinematic(coup_friction=0.5))
    jelly = scene.add_entity(morphs.Box(size=(0.16, 0.16, 0.12), pos=(0, 0, 0.19)),
                             polyphys.materials.MPM.Elastic(E=1e4, nu=0.3, rho=400.0))
    box = scene.add_entity(morphs.Box(size=(0.06, 0.06, 0.06), pos=(0, 0, 0.45)), Rigid(rho=300.0))
    with pytest.warns(PolyphysWarning, match="not a whole number of cells"):
        scene.build()
    for _ in range(100):
        scene.step()
    assert box.get_pos()[2] < 0.3                           # it landed on the jelly (top at 0.25 m)
    assert np.abs(box.get_pos()[:2]).max() < dx / 32, box.get_pos()
    assert np.abs(jelly.get_particles_pos()[:, :2].mean(0)).max() < dx / 32


def test_rigid_box_dropped_on_sand_rests_on_its_surface_and_no_sand_enters_it():
    """Issue 26: a rigid box (ρ 800) dropped from 0.4 m onto MPM sand stopped ~1 cm above the sand's
    surface with no crater: the coupler acted on grid nodes at their lattice positions, and a node
    inside the box carries mass from sand up to 1.5 cells below it. The nodes are now seen at their
    material centroid and the material points behind them are kept out of bodies (docs/legacy.md).

    Crater depth against a penetration-resistance estimate: a shallow footing of width B on sand
    (φ = 35°) bears q_u = ρ g (B/2) N_γ, N_γ = 2 (N_q + 1) tan φ, N_q = e^(π tan φ) tan²(45° + φ/2)
    (Vesic 1973: 48.0); the impact energy m g H then digs δ = m g H/(q_u A − m g) (3.3 mm here).
    The coupler treats material points like particles: their centres meet the surface, the
    material's top half-spacing overlaps it. So the box's bottom ends between one coupling band
    (coup_softness·ln 10) above the sand surface (the top particle centres + half a spacing, away
    from the box) and δ + half a spacing + one band below it (measured 4.9 mm below; it was 11 mm
    above). No sand point is inside the box by more than one substep's travel at any step end."""
    from polyphys.plugins.mpm.options import MPMOptions
    from polyphys.plugins.rigid.materials import Rigid

    g, dt, substeps, dx = 9.81, 2e-3, 4, 1 / 32
    sp = dx / 2
    rho_s, phi = 1600.0, np.radians(35.0)
    B, Hb, rho_b, z_drop = 0.12, 0.06, 800.0, 0.4
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=dt, substeps=substeps),
                           mpm=MPMOptions(lower_bound=(-0.1875, -0.21875, 0.0), upper_bound=(0.21875, 0.1875, 0.4375),
                                          grid_density=1 / dx, boundary="sticky"))
    scene.add_entity(morphs.Plane(), Rigid())
    bed = scene.add_entity(morphs.Box(size=(0.40625, 0.40625, 0.09375), pos=(0.015625, -0.015625, 0.046875)),
                           polyphys.materials.MPM.Sand(E=3.537e5, nu=0.3, rho=rho_s, friction_angle=35.0))
    box = scene.add_entity(morphs.Box(size=(B, B, Hb), pos=(0.023, -0.031, z_drop), euler=(0, 0, 17)),
                           Rigid(rho=rho_b))
    scene.build()
    band = 0.002 * np.log(10.0)                      # Rigid's default coup_softness, cutoff 0.1
    worst, v_prev = 0.0, 0.0
    r_box = np.linalg.norm([B / 2, B / 2, Hb / 2])
    for _ in range(150):
        scene.step()
        c, q = box.get_pos(), box.get_quat()
        R = _quat_mat(q)
        local = (bed.get_particles_pos() - c) @ R                  # box frame
        depth = np.min(np.array([B / 2, B / 2, Hb / 2]) - np.abs(local), axis=1)
        # a point is moved out of the box at the start of each substep; within the substep the point
        # and the box's surface approach by at most h·(|v_point| + |v_box| + |ω| r) (speeds sampled
        # at the step's two ends: their sum bounds the speed within it)
        v = np.linalg.norm(bed.get_particles_vel(), axis=1).max() + np.linalg.norm(box.get_vel())
        w = np.linalg.norm(box.get_ang()) * r_box
        worst = max(worst, depth.max() / (dt / substeps * (v + v_prev + w) + 1e-7))
        v_prev = v
    assert worst <= 1.0, worst
    depth_rest = depth.max()
    assert abs(box.get_vel()[2]) < 0.05                            # at rest
    p = bed.get_particles_pos()
    far = np.linalg.norm(p[:, :2] - box.get_pos()[:2], axis=1) > B
    surface = np.quantile(p[far, 2], 0.99) + sp / 2
    bottom = box.get_pos()[2] - Hb / 2
    Nq = np.exp(np.pi * np.tan(phi)) * np.tan(np.pi / 4 + phi / 2) ** 2
    q_u = rho_s * g * B / 2 * 2 * (Nq + 1) * np.tan(phi)
    m = rho_b * B * B * Hb
    delta = m * g * (z_drop - Hb / 2 - surface) / (q_u * B * B - m * g)
    assert -band <= surface - bottom <= delta + sp / 2 + band, (surface, bottom, delta)
    assert depth_rest <= 1e-5, depth_rest                           # at rest: none inside (float32)


def _quat_mat(q):
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


@pytest.mark.parametrize("thickness", [0.01, 0.03])
def test_thin_plate_stops_a_fast_block(thickness):
    """A fixed rigid plate a third of a grid cell to one cell thick (tilted, off-centre) stops an
    elastic MPM block thrown down at 3 m/s: no material point gets through. The grid-node response
    alone let it through (the nodes straddling the plate see the far face's normal past its
    mid-plane: 100 % passed a 3 cm plate); the speculative part of the response (a carrier that
    would cross the surface within the substep is slowed to reach it) and the material-point
    projection keep every point on the near side (docs/legacy.md)."""
    from polyphys.plugins.mpm.options import MPMOptions
    from polyphys.plugins.rigid.materials import Rigid

    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=2e-3, substeps=8),
                           mpm=MPMOptions(lower_bound=(-0.25, -0.25, 0), upper_bound=(0.25, 0.25, 0.5), grid_density=32))
    plate = scene.add_entity(morphs.Box(size=(0.3, 0.3, thickness), pos=(0.011, -0.007, 0.2), euler=(4, -3, 10),
                                        fixed=True), Rigid())
    blob = scene.add_entity(morphs.Box(size=(0.12, 0.12, 0.12), pos=(0, 0, 0.3)), polyphys.materials.MPM.Elastic(E=1e5))
    scene.build()
    blob.set_velocity((0.0, 0.0, -3.0))
    R = _quat_mat(plate.get_quat())
    h = 2e-3 / 8
    v_prev = 3.0
    for _ in range(100):
        scene.step()
        local = (blob.get_particles_pos() - plate.get_pos()) @ R
        under = np.all(np.abs(local[:, :2]) < 0.15, axis=1)
        v = max(v_prev, np.abs(blob.get_particles_vel()).max())
        # none past the mid-plane; inside the top face by at most one substep's travel (the
        # points are moved out at the start of each substep)
        assert local[under, 2].min() >= thickness / 2 - h * v * np.sqrt(3), local[under, 2].min()
        v_prev = np.abs(blob.get_particles_vel()).max()
