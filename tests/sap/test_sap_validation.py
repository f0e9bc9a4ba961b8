"""SAP coupler, rigid–rigid physics against closed forms (docs/sap.md, "Validation").

Scenes (sapscenes.py): a plane off the origin, tilted about x for the inclines, and a 0.2×0.3×0.1 m
box (500 kg/m³, 3 kg) yawed 25° in it; the plane is rigid (stiffness inf) so each of the box's four
corner contacts has the box's point stiffness k = 1e4 N/m; τ_d = 0.01 s; h = 2.5 ms.
"""

import math

import numpy as np
import pytest
from sapscenes import G, plane_and_box, sap

H = 0.01 / 4


@pytest.mark.parametrize("precision", ["64", "32"])
def test_box_rests_with_weight_and_compliant_penetration(precision):
    """Dropped 1 mm onto the plane, after 1 s: Σ normal force = m·g (0.1 %) and each corner's
    penetration = m·g/(4k) (1 %) — the linear compliant law f_n = k·(−φ) at rest. The tolerance
    covers float32 rounding of the force sum (~1e-6 relative) with room."""
    scene, box, info = plane_and_box(precision=precision, lift=0.001)
    for _ in range(100):
        scene.step()
    c = box.get_contacts()
    assert len(c["penetration"]) == 4
    fn = c["force_a"] @ info["normal"]          # force on geom A (the plane: listed first)
    weight = info["mass"] * G
    assert abs(abs(fn.sum()) / weight - 1.0) < 1e-3
    np.testing.assert_allclose(c["penetration"], weight / (4 * info["k"]), rtol=0.01)
    st = sap(scene).get_solver_stats()
    assert st["converged"] and st["cap_hits_step"] == 0


def test_sphere_penetration_is_weight_over_stiffness():
    """One point contact: penetration = m·g/k (1 %) and normal force m·g (0.1 %)."""
    scene, ball, info = plane_and_box(sphere=0.07, lift=0.002)
    for _ in range(100):
        scene.step()
    c = ball.get_contacts()
    assert len(c["penetration"]) == 1
    weight = info["mass"] * G
    assert abs(abs(c["force_a"][0] @ info["normal"]) / weight - 1.0) < 1e-3
    assert abs(c["penetration"][0] / (weight / info["k"]) - 1.0) < 0.01


def test_incline_20deg_sticks_with_the_regularisation_creep():
    """20°, μ = 0.5 (tan 20° = 0.36 < μ): the box sticks. SAP's friction is regularised, γ_t =
    −v_t/R_t in stiction, so a stuck box creeps at exactly v = m·g·sinθ·h / Σ_i (1/R_t,i) (the
    tangential impulses balance gravity's). The measured speed over the second half-second matches
    it to 5 %, and the box moves less than that speed × 0.5 s × 1.05 in that time."""
    scene, box, info = plane_and_box(incline=20.0, mu=0.5)
    p0 = box.get_pos().copy()
    xs = []
    for _ in range(100):
        scene.step()
        xs.append((box.get_pos() - p0) @ info["downhill"])
    imp = sap(scene).get_impulses()
    n = imp["count"]
    assert n == 4 and np.allclose(imp["mu"][:n], 0.5)
    v_creep = info["mass"] * G * math.sin(math.radians(20.0)) * H / np.sum(1.0 / imp["R_t"][:n])
    moved = xs[-1] - xs[49]
    assert moved > 0
    assert abs(moved / 0.5 / v_creep - 1.0) < 0.05
    assert moved < 1.05 * v_creep * 0.5
    assert v_creep < 1e-5          # a creep, not a slide: 10 µm/s for these parameters


def test_incline_35deg_slides_as_coulomb():
    """35°, μ = 0.5 (tan 35° = 0.70 > μ): the box slides with a = g(sinθ − μcosθ); after 1 s it
    has moved g(sinθ − μcosθ)t²/2 within 2 % (SAP's sliding impulse is exactly μγ_n; the rest is
    the compliant normal and the time discretisation)."""
    scene, box, info = plane_and_box(incline=35.0, mu=0.5)
    p0 = box.get_pos().copy()
    for _ in range(100):
        scene.step()
    th = math.radians(35.0)
    want = G * (math.sin(th) - 0.5 * math.cos(th)) / 2.0
    got = (box.get_pos() - p0) @ info["downhill"]
    assert abs(got / want - 1.0) < 0.02


def test_dropped_box_ground_impulse():
    """A box touching the plane at 1 m/s downward: the ground's impulse over the next 1 s (Σ h·f
    over every substep, the rigid solver's per-link readback) = m·g·t + m·v_impact within 0.5 %
    (the box is at rest by then: momentum balance)."""
    scene, box, info = plane_and_box(lift=0.0, tau=0.02)
    v0 = 1.0
    box.set_dofs_velocity(np.array([0.0, 0.0, -v0, 0.0, 0.0, 0.0]))
    total = np.zeros(3)
    for _ in range(100):
        scene.step()
        total += box.get_links_net_contact_wrench()["impulse_force"][0]
    want = info["mass"] * (G * 1.0 + v0)
    assert abs(total[2] / want - 1.0) < 0.005
    assert abs(box.get_vel()[2]) < 1e-3


def test_sphere_rolls_without_slipping():
    """A 7 cm sphere on a 15° incline, μ = 0.5 (rolling needs μ ≥ (2/7)·tanθ = 0.077): after 1 s it
    has rolled (5/7)·g·sinθ·t²/2 within 2 %."""
    scene, ball, info = plane_and_box(incline=15.0, mu=0.5, sphere=0.07)
    p0 = ball.get_pos().copy()
    for _ in range(100):
        scene.step()
    want = 5.0 / 7.0 * G * math.sin(math.radians(15.0)) / 2.0
    got = (ball.get_pos() - p0) @ info["downhill"]
    assert abs(got / want - 1.0) < 0.02


def test_three_box_stack_stands():
    """Three 0.2×0.25×0.1 m boxes (400 kg/m³) stacked at different yaws, k = 1e5 N/m per geom: after
    0.5 s of settling, they stand 3 s with every box moving < 1 mm."""
    import polyphys
    from polyphys import morphs as M
    from polyphys.couplers.sap.options import SapOptions
    from polyphys.options import SimOptions
    from polyphys.plugins.rigid.materials import Rigid
    from sapscenes import INF

    o = SapOptions(point_stiffness=1e5, geom_point_stiffness={0: INF}, dissipation_time_constant=0.01)
    scene = polyphys.Scene(sim=SimOptions(dt=0.01, substeps=4, precision="64"), coupler=o)
    scene.add_entity(morph=M.Plane(pos=(0.3, -0.2, 0.05)), material=Rigid())
    boxes = [scene.add_entity(morph=M.Box(size=(0.2, 0.25, 0.1), pos=(0.33, -0.18, 0.1 + 0.1 * i),
                                          euler=(0, 0, 10 + 17 * i)), material=Rigid(rho=400.0))
             for i in range(3)]
    scene.build()
    for _ in range(50):
        scene.step()
    p0 = np.array([b.get_pos() for b in boxes])
    for _ in range(300):
        scene.step()
    p1 = np.array([b.get_pos() for b in boxes])
    assert np.abs(p1 - p0).max() < 1e-3
    assert p1[2, 2] > p1[1, 2] + 0.09 > p1[0, 2] + 0.18          # still stacked
