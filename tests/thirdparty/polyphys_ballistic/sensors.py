"""The ``ballistic_apex`` sensor: per env, the highest particle of a Ballistic entity and the
largest particle speed.

A sensor computes ground truth only: ``build`` says what it outputs (``fields``) and finds the
solver's view; ``evaluate`` writes this step's values into its columns of the scene's truth array,
inside the captured step (kernel launches only). polyphys core adds the measurement models (noise,
bias, drift, resolution, limits, delay), keeps their state through reset and checkpoints, and tags
each reading with its step and time.
"""

from __future__ import annotations

import numpy as np
import warp as wp
from polyphys.errors import OptionError
from polyphys.interfaces import Sensor
from polyphys.views import ParticleView

from . import kernels_sensor


class ApexSensor(Sensor):
    """``height``: the highest particle centre (m); ``speed``: the largest particle speed (m/s), of
    the entity's active particles, after the step (a query of the end state: ``query_at``)."""

    stage = "end"

    def __init__(self, scene, spec, entity=None, **common):
        super().__init__(scene, spec, entity, **common)   # name and the measurement keywords
        if entity is None or entity.solver.name != "ballistic":
            raise OptionError(f"sensor {self.full_name!r} (ballistic_apex): entity = {entity!r}: "
                              f"allowed: an entity with a Ballistic material")

    def kernel_modules(self, layout):
        """The Warp module this sensor launches, with the overload of the scene's precision."""
        kernels_sensor.declare_overloads(layout.precision)
        return [kernels_sensor]

    def build(self, layout):
        """After the solvers are built: the view to read and the outputs (name, width, datatype)."""
        super().build(layout)
        self.view = self.entity.solver.view(ParticleView)
        self.fields = [("height", 1, "real"), ("speed", 1, "real")]

    def bind(self):
        """The scene has given this sensor its columns: the kernel's parameters, allocated once."""
        e, dev = self.entity, self.layout.device
        self.params = [wp.array(np.array([v], np.int32), dtype=wp.int32, device=dev)
                       for v in (e.start, e.n_particles, self.column)]

    def evaluate(self, part, truth):
        """This step's ground truth of the envs of ``part`` into ``truth`` (the partition's rows)."""
        c = self.view.particle_carriers(part)
        wp.launch(kernels_sensor.apex_sensor, dim=(part.n_envs, 1), inputs=[*self.params, c.active, c.pos, c.vel],
                  outputs=[truth], device=self.layout.device)
