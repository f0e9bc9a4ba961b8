"""Contract scene of the kinematic solver: a free box moving and a fixed-base two-link arm."""

import numpy as np
from polyphys import morphs
from polyphys.description import EntityDescription, Geom, Inertial, Joint, Link

from .materials import Kinematic
from .options import KinematicOptions


def arm_description() -> EntityDescription:
    links = [Link(name="base", parent=-1, inertial=Inertial(mass=1.0, inertia=np.eye(3) * 0.01)),
             Link(name="upper", parent=0, pos=(0, 0, 0.1), joints=[0], geoms=[0],
                  inertial=Inertial(mass=1.0, inertia=np.eye(3) * 0.01)),
             Link(name="lower", parent=1, pos=(0, 0, 0.5), joints=[1],
                  inertial=Inertial(mass=1.0, inertia=np.eye(3) * 0.01))]
    joints = [Joint(name="shoulder", type="revolute", link=1, axis=(0, 1, 0)),
              Joint(name="elbow", type="spherical", link=2)]
    geoms = [Geom(name="upper_geom", type="capsule", link=1, size=(0.05, 0.25, 0))]
    return EntityDescription(name="arm", links=links, joints=joints, geoms=geoms).finalize()


def scene():
    box = (morphs.Box(size=(0.2, 0.2, 0.2), pos=(0, 0, 1.0)), Kinematic(), {"name": "box"})
    arm = (morphs.Description(description=arm_description(), pos=(1.0, 0, 0)), Kinematic(), {"name": "arm"})

    def drive(scene, rng):
        """Give every env a different motion so env isolation is visible."""
        n = max(1, scene.n_envs)
        b, a = scene.entities
        b.set_dofs_velocity(rng.normal(size=(n, 6)) if scene.batched else rng.normal(size=6))
        a.set_dofs_velocity(rng.normal(size=(n, 4)) if scene.batched else rng.normal(size=4))

    return [box, arm], KinematicOptions(), drive
