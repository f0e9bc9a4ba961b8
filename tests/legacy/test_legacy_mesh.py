"""Mesh geoms couple through their grid SDFs like the equivalent primitives (analytic SDFs).

The coupler builds a grid SDF per mesh geom at build time (polyphys.sdf_grid); a mesh box gives
the same SDF as the primitive box to float32 wherever the SDF is linear over a grid cell (near a
face), a faceted sphere within (√3/2)·h + its facet error. So a mesh body must respond like the
primitive: the §C1 response at influence weight 1 to float32, the momentum a free body takes
from particles, and an MPM block's rest height and weight on a fixed body.
"""

import numpy as np
import polyphys
import pytest
import trimesh
from polyphys import SimOptions, morphs


def _ballistic():
    return pytest.importorskip("polyphys_ballistic")


def _mesh(tm, **kw):
    return morphs.Mesh(vertices=np.asarray(tm.vertices), faces=np.asarray(tm.faces), **kw)


def test_spec_c1_response_on_a_kinematic_mesh_box_equals_the_primitive_box():
    _ballistic()
    from polyphys_ballistic.options import BallisticOptions

    tm = trimesh.creation.box(extents=(1.0, 1.0, 0.2))
    out = []
    for body in (morphs.Box(size=(1.0, 1.0, 0.2), pos=(0, 0, 1.0)), _mesh(tm, pos=(0, 0, 1.0))):
        sc = polyphys.Scene(sim=SimOptions(dt=0.01, substeps=1, gravity=(0, 0, 0)),
                            ballistic=BallisticOptions(particle_size=0.01, ground_height=-10.0))
        sc.add_entity(body, material=polyphys.materials.Kinematic(coup_friction=0.3, coup_restitution=0.5))
        part = sc.add_entity(morphs.Box(size=(0.01, 0.01, 0.01), pos=(0.0, 0.0, 1.099)),
                             material=polyphys.materials.Ballistic())
        sc.build()
        part.set_vel(np.tile((0.7, -0.2, -1.5), (part.get_vel().shape[0], 1)))
        sc.step()
        out.append(part.get_vel()[0])
    grids = sc.couplers[0].sdf_grids()
    assert grids.geom.numpy().tolist() == [0]
    # a particle 1 mm inside the top face: v_n' = −e·v_n, |v_t'| = |v_t| + μ·v_n, exactly as the box
    np.testing.assert_allclose(out[1], out[0], rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(out[0][2], 0.75, rtol=1e-6)


def test_free_mesh_body_takes_the_same_momentum_as_the_primitive():
    """Ballistic particles hit a free rigid box off-centre (gravity off). The mesh's vertices are
    offset from its frame origin, so its link frame is not at the CoM: the coupler's torque about
    the CoM and the geom frame must both be right for the bodies to agree."""
    _ballistic()
    pytest.importorskip("polyphys.plugins.rigid")
    from polyphys.plugins.rigid import RigidOptions
    from polyphys.plugins.rigid.materials import Rigid
    from polyphys_ballistic.options import BallisticOptions

    tm = trimesh.creation.box(extents=(0.3, 0.2, 0.1))
    tm.vertices += (0.05, 0.0, 0.0)
    c, s = np.cos(np.radians(20.0)), np.sin(np.radians(20.0))
    bodies = (morphs.Box(size=(0.3, 0.2, 0.1), pos=(0.05, 0.0, 0.5), euler=(0, 0, 20)),
              # frame origin so that the offset vertices land where the primitive box is
              _mesh(tm, pos=(0.05 - 0.05 * c, -0.05 * s, 0.5), euler=(0, 0, 20)))
    out = []
    for body in bodies:
        sc = polyphys.Scene(sim=SimOptions(dt=0.005, substeps=4, gravity=(0, 0, 0)),
                            rigid=RigidOptions(enable_collision=False),
                            ballistic=BallisticOptions(particle_size=0.02, ground_height=-10.0))
        box = sc.add_entity(body, Rigid(rho=300.0, coup_friction=0.3, coup_restitution=0.2))
        part = sc.add_entity(morphs.Box(size=(0.1, 0.1, 0.06), pos=(0.1, 0.03, 0.6)),
                             material=polyphys.materials.Ballistic())
        sc.build()
        part.set_vel(np.tile((0.3, 0.0, -1.5), (part.get_vel().shape[0], 1)))
        for _ in range(30):
            sc.step()
        out.append((box.get_vel(relative=False), box.get_ang(), box.get_pos(relative=False)))
    (v0, w0, x0), (v1, w1, x1) = out
    assert np.linalg.norm(v0) > 0.3 and np.linalg.norm(w0) > 1.0      # a real, off-centre hit
    # the same SDF to float32 near the faces: measured differences ~4e-6 relative
    np.testing.assert_allclose(v1, v0, rtol=0, atol=1e-3 * np.linalg.norm(v0))
    np.testing.assert_allclose(w1, w0, rtol=0, atol=1e-3 * np.linalg.norm(w0))
    np.testing.assert_allclose(x1, x0, atol=1e-5)


@pytest.mark.parametrize("shape", ["box", "sphere"])
def test_mpm_block_rests_on_a_mesh_body_like_on_the_primitive(shape):
    """An elastic MPM block (0.16 × 0.16 × 0.08 m, grid 32/m) dropped 2 cm onto a fixed rigid body:
    a box rotated 30° about z, narrower than the block (its edges and corners under the block), or
    a sphere (icosphere, 642 vertices). Over 0.1 s after 0.3 s of settling, the block's mean
    height on the mesh equals that on the primitive within a grid cell (measured: box 3.8e-5 m,
    sphere 5.1e-4 m; dx = 3.1e-2 m), and the coupling impulse the body receives matches within
    3 % (measured: box 0.06 %, sphere 1.2 %; the faceted sphere's grid SDF is within
    (√3/2)·h + 4.5e-4 m of the analytic one), both near the block's weight (measured 1.008 and
    0.97: on the sphere the block still settles)."""
    pytest.importorskip("polyphys.plugins.mpm.options")
    pytest.importorskip("polyphys.plugins.rigid")
    from polyphys.plugins.mpm.options import MPMOptions
    from polyphys.plugins.rigid.materials import Rigid

    g, dt, settle, window, dx = 9.81, 2e-3, 150, 50, 1.0 / 32
    if shape == "box":
        tm = trimesh.creation.box(extents=(0.12, 0.12, 0.1))
        kw = dict(pos=(0, 0, 0.15), euler=(0, 0, 30), fixed=True)
        bodies, top = (morphs.Box(size=(0.12, 0.12, 0.1), **kw), _mesh(tm, **kw)), 0.2
    else:
        tm = trimesh.creation.icosphere(subdivisions=3, radius=0.08)
        kw = dict(pos=(0, 0, 0.15), fixed=True)
        bodies, top = (morphs.Sphere(radius=0.08, **kw), _mesh(tm, **kw)), 0.23
    res = []
    for body in bodies:
        # E = 1e5, rho = 1000: c ≈ 10.5 m/s, CFL 0.5·dx/c ≈ 1.5e-3 s ≫ h = 2.5e-4 s
        sc = polyphys.Scene(sim=SimOptions(dt=dt, substeps=8, gravity=(0, 0, -g)),
                            mpm=MPMOptions(lower_bound=(-0.3125, -0.3125, 0.0), upper_bound=(0.3125, 0.3125, 0.5),
                                           grid_density=1.0 / dx))
        sc.add_entity(body, Rigid(rho=300.0))
        blob = sc.add_entity(morphs.Box(size=(0.16, 0.16, 0.08), pos=(0, 0, top + 0.06)),
                             polyphys.materials.MPM.Elastic(E=1e5))
        sc.build()
        impulse, heights = 0.0, []
        for i in range(settle + window):
            sc.step()
            if i >= settle:
                impulse += float(np.asarray(sc.couplers[0].get_coupling_wrench()["impulse"]).reshape(-1, 3)[0, 2])
                heights.append(blob.get_particles_pos()[:, 2].mean())
        res.append((np.mean(heights), -impulse / (window * dt) / (blob.get_mass() * g)))
    (z0, f0), (z1, f1) = res
    assert sc.couplers[0].sdf_grids().geom.numpy().tolist() == [0]
    assert abs(f0 - 1.0) < 0.1 and abs(f1 - 1.0) < 0.1, (f0, f1)        # the body carries the block
    assert abs(z1 - z0) < dx, (z0, z1)
    assert abs(f1 / f0 - 1.0) < 0.03, (f0, f1)


def test_solver_supplied_grids_are_used_as_given(monkeypatch):
    """A rigid-side solver may hand ready grids in RigidGeoms.sdf_grids: the coupler queries them
    instead of building its own; a geom index of the wrong length is refused."""
    _ballistic()
    import attrs
    from polyphys.errors import OptionError
    from polyphys.plugins.kinematic.solver import KinematicSolver
    from polyphys.sdf_grid import build_sdf_grids
    from polyphys_ballistic.options import BallisticOptions

    tm = trimesh.creation.box(extents=(1.0, 1.0, 0.2))
    original = KinematicSolver.rigid_geoms
    given = {}

    def with_grids(self):
        geoms = original(self)
        grids = given.get("grids")
        if grids is None:
            grids = given["grids"] = build_sdf_grids(geoms.meshes, spacing=0.05, device=self.layout.device)
        return attrs.evolve(geoms, sdf_grids=grids)

    monkeypatch.setattr(KinematicSolver, "rigid_geoms", with_grids)

    def scene():
        sc = polyphys.Scene(sim=SimOptions(dt=0.01, substeps=1, gravity=(0, 0, 0)),
                            ballistic=BallisticOptions(particle_size=0.01, ground_height=-10.0))
        sc.add_entity(_mesh(tm, pos=(0, 0, 1.0)), material=polyphys.materials.Kinematic(coup_restitution=0.5))
        part = sc.add_entity(morphs.Box(size=(0.01, 0.01, 0.01), pos=(0.0, 0.0, 1.099)),
                             material=polyphys.materials.Ballistic())
        sc.build()
        return sc, part

    sc, part = scene()
    assert sc.couplers[0].sdf_grids() is given["grids"]
    part.set_vel(np.tile((0.0, 0.0, -1.5), (part.get_vel().shape[0], 1)))
    sc.step()
    np.testing.assert_allclose(part.get_vel()[0], [0.0, 0.0, 0.75], atol=1e-5)
    given["grids"] = build_sdf_grids([None, None], device="cpu")           # two entries, one geom
    with pytest.raises(OptionError, match="sdf_grids.geom has 2 entries; expected one per geom"):
        scene()
