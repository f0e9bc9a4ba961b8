"""Particle sensors: ``particle_region`` reads any solver exposing ``ParticleStateView`` (its
particles) or ``ParticleView`` with particle carriers (SPH, PBD, FEM vertices, third-party particle
solvers); MPM exposes its particles through ``ParticleStateView`` (docs/sensors.md)."""

from __future__ import annotations

import numpy as np
from polyphys.errors import OptionError
from polyphys.interfaces import Sensor
from polyphys.sensors import SensorGroup
from polyphys.views import ParticleStateView, ParticleView


class _RegionGroup(SensorGroup):
    def __init__(self, sensors, layout):
        super().__init__(sensors, layout)
        import warp as wp

        V = wp.types.vector(3, layout.float_type)
        dev = layout.device
        f = lambda a: wp.array(np.asarray(a, layout.np_float).reshape(-1, 3), dtype=V, device=dev)  # noqa: E731
        self.lo, self.hi = f([s.lo for s in sensors]), f([s.hi for s in sensors])
        self.col = wp.array(np.asarray([s.column for s in sensors], np.int32), dtype=wp.int32, device=dev)
        self.slot = wp.array(np.asarray([s.slots() for s in sensors], np.int32), dtype=wp.int32, device=dev)
        self.source = sensors[0].source

    def evaluate(self, part, truth):
        import warp as wp

        from .kernels.particles import region_sensor

        c = self.source(part)
        wp.launch(region_sensor, dim=(part.n_envs, len(self.sensors)), device=self.layout.device,
                  inputs=[self.lo, self.hi, self.col, self.slot, c.pos, c.vel, c.active], outputs=[truth])


class ParticleRegion(Sensor):
    """The particles of the entity's solver (every entity of that solver) inside the world box
    [lo, hi]: ``pos`` and ``vel`` — their mean position and velocity (NaN when the box is empty) —
    and ``count``. A query of the state after the step (``stage = "end"``, tagged ``query_at``)."""

    stage = "end"
    OUTPUTS = {"pos": (3, "real"), "vel": (3, "real"), "count": (1, "real")}

    def __init__(self, scene, spec, entity=None, *, lo=None, hi=None, outputs=None, **common):
        super().__init__(scene, spec, entity, **common)
        if entity is None:
            raise OptionError(f"sensor {self.full_name!r} (particle_region): needs entity=... (a particle entity)")
        try:
            self.lo = np.asarray(lo, float).reshape(3)
            self.hi = np.asarray(hi, float).reshape(3)
        except (TypeError, ValueError):
            raise OptionError(f"sensor {self.full_name!r} (particle_region): lo = {lo!r}, hi = {hi!r}: expected "
                              f"two points (x, y, z) of the box") from None
        if not (np.all(np.isfinite(self.lo)) and np.all(np.isfinite(self.hi))) or np.any(self.lo > self.hi):
            raise OptionError(f"sensor {self.full_name!r} (particle_region): lo = {lo!r}, hi = {hi!r}: finite, with "
                              f"lo <= hi componentwise")
        outs = ("pos", "vel", "count") if outputs is None else ((outputs,) if isinstance(outputs, str) else tuple(outputs))
        if not outs or len(set(outs)) != len(outs) or any(o not in self.OUTPUTS for o in outs):
            raise OptionError(f"sensor {self.full_name!r} (particle_region): outputs = {outputs!r}: allowed a "
                              f"non-empty selection without repeats of {list(self.OUTPUTS)}")
        self.outputs = outs

    def kernel_modules(self, layout):
        """The region sensor's ground-truth kernel, in the scene's precision."""
        from .kernels import particles as K

        K.declare_overloads(layout.precision)
        return [K]

    def build(self, layout):
        super().build(layout)
        solver = self.entity.solver
        st = solver.view(ParticleStateView)
        pv = solver.view(ParticleView)
        if st is not None:
            self.source = st.particle_state
        elif pv is not None and pv.particle_carriers(layout.partitions[0]).kind == "particles":
            self.source = pv.particle_carriers
        else:
            raise OptionError(f"sensor {self.full_name!r} (particle_region): entity {self.entity.name!r} belongs to "
                              f"solver {solver.name!r}, which exposes neither ParticleStateView nor a ParticleView "
                              f"of particles; allowed: entities of a particle solver (MPM, SPH, PBD, ...)")
        self.fields = [(o, *self.OUTPUTS[o]) for o in self.outputs]

    def slots(self):
        off, c = {}, 0
        for o in self.outputs:
            off[o] = c
            c += self.OUTPUTS[o][0]
        return [off.get(o, -1) for o in self.OUTPUTS]

    def group_key(self):
        return (type(self), id(self.entity.solver))

    @classmethod
    def make_group(cls, sensors, layout):
        return _RegionGroup(sensors, layout)
