"""Scenes the viewer tests share: a batched composed scene written as a scene file and run with
``polyphys run`` (so the states the tests replay are the ones the command records)."""

from __future__ import annotations

import os

from polyphys.interfaces import Sensor

SCENE = """
[scene]
name = "viewer_test"
description = "floor, kinematic platform, MPM jelly and a rotated rigid box; env 1's box is thrown sideways"

[sim]
dt = 0.01
substeps = 5

[solvers.mpm]
lower_bound = [-0.3, -0.3, 0.0]
upper_bound = [0.3, 0.3, 0.6]
grid_density = 32.0
boundary = "slip"

[[entities]]
name = "floor"
morph = { type = "Plane" }
material = { type = "Rigid" }
surface = { color = [0.2, 0.65, 0.25, 1.0] }

[[entities]]
name = "platform"
morph = { type = "Box", size = [0.4, 0.4, 0.05], pos = [0.0, 0.0, 0.1], fixed = true }
material = { type = "Kinematic", coup_friction = 0.5 }

[[entities]]
name = "jelly"
morph = { type = "Box", size = [0.16, 0.16, 0.12], pos = [0.0, 0.0, 0.19] }
material = { type = "MPM.Elastic", E = 1e4, nu = 0.3, rho = 400.0 }
surface = { color = [0.15, 0.3, 0.95, 1.0] }

[[entities]]
name = "box"
morph = { type = "Box", size = [0.09, 0.07, 0.05], pos = [0.04, -0.03, 0.45], euler = [20.0, 10.0, 30.0] }
material = { type = "Rigid", rho = 300.0 }
surface = { color = [0.95, 0.1, 0.1, 1.0] }
init = { set_dofs_velocity = { velocity = [0.0, -0.7, 0.0, 0.0, 0.0, 0.0], envs_idx = [1] } }

[run]
n_envs = 2
steps = STEPS
record_every = 10
record = ["get_pos"]

[run.states]
every = EVERY
fields = ["vel"]
"""


def write_scene(folder, steps: int = 30, every: int = 10) -> str:
    path = os.path.join(os.fspath(folder), "viewer_test.toml")
    with open(path, "w") as fh:
        fh.write(SCENE.replace("STEPS", str(steps)).replace("EVERY", str(every)))
    return path


def run_scene(folder, steps: int = 30, every: int = 10):
    from polyphys import run

    path = write_scene(folder, steps, every)
    return run.run_plan(run.parse_file(path), out_dir=os.path.join(os.fspath(folder), "run"), progress=False,
                        plot=False)


class FakeCamera(Sensor):
    """A camera-like sensor (the protocol the viewer draws frusta for: fov_y, resolution,
    get_pose) fixed at a pose per env; registered by the tests as an in-process plugin. Its reading
    (one real number per env) is never written: the viewer only asks for its pose."""

    def __init__(self, scene, spec, entity=None, pos=(1.0, -1.0, 1.0), quat=(1.0, 0.0, 0.0, 0.0), **kwargs):
        kwargs.setdefault("name", "cam")
        super().__init__(scene, spec, entity, **kwargs)
        self.fov_y, self.resolution = 60.0, (640, 480)
        self._pos, self._quat = pos, quat

    def build(self, layout):
        super().build(layout)
        self.fields = [("unused", 1, "real")]

    def evaluate(self, part, truth):
        """Nothing to measure (see the class doc)."""

    def get_pose(self, envs_idx=None):
        import numpy as np

        n = self.layout.n_envs
        pos = np.array([np.asarray(self._pos) + [0.0, 0.1 * e, 0.0] for e in range(n)])
        quat = np.tile(np.asarray(self._quat, float), (n, 1))
        return (pos, quat) if self.scene.batched else (pos[0], quat[0])


class FakeCameraPlugin:
    """``polyphys.register(FakeCameraPlugin())`` makes ``scene.add_sensor("fake_camera")`` work."""

    from polyphys import hookimpl

    @hookimpl
    def polyphys_sensors(self):
        from polyphys import Capabilities, SensorSpec

        caps = Capabilities(batch=True, reset_envs=True, checkpoint=True, devices=frozenset({"cpu", "cuda"}),
                            precisions=frozenset({"32", "64"}))
        return [SensorSpec(name="fake_camera", target="viewer_scenes:FakeCamera", capabilities=caps)]
