"""The rigid solver's RigidView with the Legacy coupler: an elastic MPM block thrown at a free rigid
box in zero gravity pushes it (the reaction reaches the rigid dynamics through the coupling buffer)."""

import numpy as np
import polyphys
import pytest
from polyphys import morphs
from polyphys.plugins.rigid import RigidOptions
from polyphys.plugins.rigid.materials import Rigid


def test_mpm_block_pushes_free_rigid_box_and_momentum_is_shared():
    mpm_opts = pytest.importorskip("polyphys.plugins.mpm.options")
    scene = polyphys.Scene(
        sim=polyphys.SimOptions(dt=2e-3, substeps=8, gravity=(0, 0, 0)),
        rigid=RigidOptions(enable_collision=False, disable_constraint=True),
        mpm=mpm_opts.MPMOptions(lower_bound=(-0.5, -0.5, 0.0), upper_bound=(0.5, 0.5, 1.0), grid_density=32))
    box = scene.add_entity(morphs.Box(size=(0.2, 0.2, 0.2), pos=(0.15, 0, 0.5)), Rigid(rho=300.0, coup_friction=0.0))
    blob = scene.add_entity(morphs.Box(size=(0.15, 0.15, 0.15), pos=(-0.15, 0, 0.5)),
                            polyphys.materials.MPM.Elastic())
    scene.build()
    assert [c.name for c in scene.couplers] == ["legacy"]
    blob.set_velocity([2.0, 0, 0])
    p0 = blob.get_mass() * 2.0
    for _ in range(40):
        scene.step()
    v_box = box.get_vel()
    assert v_box[0] > 0.5                                   # pushed along the throw
    assert np.abs(v_box[1:]).max() < 1e-3                   # symmetric setup: no sideways push
    p1 = box.get_links_mass()[0] * v_box[0] + blob.get_mass() * blob.get_particles_vel()[:, 0].mean()
    # the coupler moves equal and opposite impulses; MPM transfers conserve momentum up to
    # float32 round-off and the particle-grid APIC transfer: 2 % is a loose bound
    assert abs(p1 - p0) < 0.02 * p0
