"""Scenes of the SAP coupler tests (tests/sap): a plane and boxes/spheres at generic poses."""

from __future__ import annotations

import math

import numpy as np
import polyphys
from polyphys import morphs as M
from polyphys.couplers.sap.options import SapOptions
from polyphys.options import SimOptions
from polyphys.plugins.rigid.materials import Rigid

G = 9.81
INF = float("inf")


def rot_x(deg):
    t = math.radians(deg)
    return np.array([[1, 0, 0], [0, math.cos(t), -math.sin(t)], [0, math.sin(t), math.cos(t)]])


def rot_z(deg):
    t = math.radians(deg)
    return np.array([[math.cos(t), -math.sin(t), 0], [math.sin(t), math.cos(t), 0], [0, 0, 1]])


def plane_and_box(*, incline=0.0, yaw=25.0, size=(0.2, 0.3, 0.1), rho=500.0, k=1.0e4, tau=0.01, mu=None,
                  dt=0.01, substeps=4, precision="64", n_envs=0, lift=None, origin=(0.3, -0.2, 0.05),
                  options=None, sphere=None):
    """A plane through ``origin`` tilted by ``incline`` degrees about x, and a box (or a sphere of
    radius ``sphere``) yawed by ``yaw`` degrees in the plane, resting at its equilibrium penetration
    (``lift`` > 0 places it that far above the surface instead). The plane is rigid (stiffness inf),
    so a contact's stiffness is the box's k. Returns (scene, body, info)."""
    o = options or SapOptions(point_stiffness=k, geom_point_stiffness={0: INF}, dissipation_time_constant=tau / 2,
                              geom_dissipation_time_constant={0: tau / 2})
    scene = polyphys.Scene(sim=SimOptions(dt=dt, substeps=substeps, precision=precision), coupler=o)
    R = rot_x(incline)
    normal = R @ np.array([0.0, 0.0, 1.0])
    mat = Rigid(rho=rho) if mu is None else Rigid(rho=rho, friction=mu)
    # the rigid solver orients a plane by its euler angles (it does not read Plane.normal)
    scene.add_entity(morph=M.Plane(pos=origin, euler=(incline, 0.0, 0.0)), material=mat)
    if sphere is None:
        mass = rho * size[0] * size[1] * size[2]
        n_contacts = 4
        half = size[2] / 2
    else:
        mass = rho * 4.0 / 3.0 * math.pi * sphere ** 3
        n_contacts = 1
        half = sphere
    fn = mass * G * math.cos(math.radians(incline))
    depth = fn / (n_contacts * k)
    gap = -depth if lift is None else lift
    centre = np.asarray(origin) + R @ np.array([0.07, -0.04, 0.0]) + normal * (half + gap)
    Rb = R @ rot_z(yaw)
    euler = _euler_xyz(Rb)
    if sphere is None:
        body = scene.add_entity(morph=M.Box(size=size, pos=tuple(centre), euler=euler), material=mat)
    else:
        body = scene.add_entity(morph=M.Sphere(radius=sphere, pos=tuple(centre), euler=euler), material=mat)
    scene.build(n_envs=n_envs)
    info = dict(mass=mass, normal=normal, R=R, centre0=centre, depth=depth, half=half, k=k, n_contacts=n_contacts,
                downhill=R @ np.array([0.0, -1.0, 0.0]))
    return scene, body, info


def _euler_xyz(R):
    """Extrinsic x-y-z Euler angles in degrees (R = Rz·Ry·Rx)."""
    y = math.asin(-max(-1.0, min(1.0, R[2, 0])))
    x = math.atan2(R[2, 1], R[2, 2])
    z = math.atan2(R[1, 0], R[0, 0])
    return (math.degrees(x), math.degrees(y), math.degrees(z))


def sap(scene):
    return next(c for c in scene.couplers if c.name == "sap")
