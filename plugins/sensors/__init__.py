"""Sensor plugin: IMU, force/torque, touch, contact, contact force, frame, joint, actuator and subtree
sensors on rigid bodies, a particle region sensor (docs/sensors.md), and the ray-casting sensors:
raycaster, rangefinder, depth camera, camera (docs/cameras.md).

Light module: only spec records, no Warp import. Registered through its own ``polyphys`` entry
point exactly as a third party's sensor plugin; the sensors read solvers only through core's view
protocols (``RigidSensorView``, ``ParticleStateView``/``ParticleView``).
"""

from polyphys import hookimpl
from polyphys.specs import Capabilities, SensorSpec

CAPABILITIES = Capabilities(batch=True, reset_envs=True, checkpoint=True, differentiable=False,
                            devices=("cpu", "cuda"), precisions=("32", "64"),
                            tested_devices=("cpu",), deterministic=("cpu",),
                            notes="ground truth in one launch per kind; measurement models and state in core")

_KINDS = (
    ("imu", "rigid:IMU", "accelerometer (specific force), gyro, magnetometer, velocimeter at a site"),
    ("force_torque", "rigid:ForceTorque", "interaction wrench with the parent link at a site (MuJoCo force/torque)"),
    ("touch", "rigid:Touch", "sum of positive normal contact forces in a site's zone (MuJoCo touch)"),
    ("contact", "rigid:Contact", "per link: in a contact of the solve (bool)"),
    ("contact_force", "rigid:ContactForce", "net contact wrench of a link and its impulse over the step"),
    ("frame", "rigid:FrameSensor", "pose, velocity, acceleration of a site/link/geom/CoM, relative to a frame"),
    ("joint", "rigid:JointSensor", "joint positions, velocities, actuator and constraint forces"),
    ("actuator", "rigid:ActuatorSensor", "actuator output forces"),
    ("subtree", "rigid:Subtree", "subtree CoM, linear velocity, angular momentum"),
    ("particle_region", "particles:ParticleRegion", "mean position/velocity and count of particles in a box"),
    ("raycaster", "raycast:Raycaster", "distances and hit points of a lidar, grid or custom ray pattern"),
    ("rangefinder", "raycast:Rangefinder", "distance along a site's z axis to the nearest surface (MuJoCo's)"),
    ("depth_camera", "raycast:DepthCamera", "pinhole depth images (also distance, points, normals, segmentation)"),
    ("camera", "raycast:Camera", "pinhole RGB images (also depth, segmentation, normals, points)"),
)


@hookimpl
def polyphys_sensors():
    return [SensorSpec(name=name, target=f"polyphys.plugins.sensors.{target}", capabilities=CAPABILITIES,
                       description=desc) for name, target, desc in _KINDS]
