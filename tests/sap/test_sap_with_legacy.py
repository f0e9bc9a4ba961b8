"""SAP next to the Legacy coupler: SAP owns the rigid solver's contacts, Legacy couples the same rigid
solver to MPM (docs/sap.md). The Legacy reaction still reaches the rigid body: a free box hit by an
elastic MPM block (gravity off, the ground far below both) conserves total linear momentum to
float32 round-off, as without SAP (tests/legacy/test_legacy_rigid_mpm.py)."""

import numpy as np
import polyphys
import pytest
from polyphys import morphs

pytest.importorskip("polyphys.plugins.mpm.options")


def test_legacy_reaction_reaches_a_rigid_solver_whose_contacts_sap_owns():
    from polyphys.couplers.sap.options import SapOptions
    from polyphys.plugins.mpm.options import MPMOptions
    from polyphys.plugins.rigid.materials import Rigid

    scene = polyphys.Scene(
        sim=polyphys.SimOptions(dt=2e-3, substeps=8, gravity=(0, 0, 0)),
        mpm=MPMOptions(lower_bound=(-1, -1, -0.5), upper_bound=(1, 1, 1.5), grid_density=32),
        coupler=[SapOptions(), "legacy"])
    scene.add_entity(morphs.Plane(pos=(0.0, 0.0, -0.3)), Rigid())
    box = scene.add_entity(morphs.Box(size=(0.2, 0.2, 0.2), pos=(0.15, 0.02, 0.5), euler=(0, 0, 20)),
                           Rigid(rho=300.0, coup_friction=0.3, coup_restitution=0.2))
    blob = scene.add_entity(morphs.Box(size=(0.15, 0.15, 0.15), pos=(-0.15, 0, 0.53)),
                            polyphys.materials.MPM.Elastic())
    scene.build()
    assert sorted(c.name for c in scene.couplers) == ["legacy", "sap"]
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
    for _ in range(40):
        scene.step()
        worst = max(worst, np.abs(momentum()[0] - p0).max())
    assert box.get_vel()[0] > 0.3                     # they did collide: the box carries a real share
    assert worst < 1e-4 * scale                       # float32 round-off of the exchanges
