"""Contract scene of the rigid solver: a free box and a fixed-base arm (revolute + spherical joint)
with a PD-controlled shoulder."""

import numpy as np
from polyphys import morphs
from polyphys.description import EntityDescription, Geom, Inertial, Joint, Link

from .materials import Rigid
from .options import RigidOptions


def arm_description() -> EntityDescription:
    links = [Link(name="base"),
             Link(name="upper", parent=0, pos=(0, 0, 0.1), joints=[0],
                  inertial=Inertial(mass=1.0, com=(0, 0, 0.25), inertia=np.diag([0.02, 0.02, 0.002]))),
             Link(name="lower", parent=1, pos=(0, 0, 0.5), joints=[1],
                  inertial=Inertial(mass=0.5, com=(0.1, 0, 0.1), inertia=np.diag([0.01, 0.012, 0.005])))]
    joints = [Joint(name="shoulder", type="revolute", link=1, axis=(0, 1, 0), damping=0.1, armature=0.01),
              Joint(name="elbow", type="spherical", link=2, damping=0.05)]
    geoms = [Geom(name="upper_geom", type="capsule", link=1, size=(0.05, 0.25, 0))]
    return EntityDescription(name="arm", links=links, joints=joints, geoms=geoms).finalize()


def scene():
    box = (morphs.Box(size=(0.2, 0.3, 0.1), pos=(0, 0, 1.0), euler=(10, 20, 30)), Rigid(rho=500.0),
           {"name": "box"})
    arm = (morphs.Description(description=arm_description(), pos=(1.0, 0, 0)), Rigid(), {"name": "arm"})

    def drive(scene, rng):
        """Different velocities and joint torques per env so that env isolation is visible."""
        n = max(1, scene.n_envs)
        b, a = scene.entities
        shape = (lambda k: (n, k)) if scene.batched else (lambda k: (k,))
        b.set_dofs_velocity(rng.normal(size=shape(6)))
        a.set_dofs_velocity(rng.normal(size=shape(4)))
        a.control_dofs_force(rng.uniform(-1, 1, size=shape(1)), dofs_idx_local=[0])

    return [box, arm], RigidOptions(integrator="implicitfast", enable_collision=False,
                                    disable_constraint=True), drive
