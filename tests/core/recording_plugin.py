"""An in-process test plugin that records every call the core makes, in order.

Two solvers (``rec_a`` exposing RigidView, ``rec_b`` exposing ParticleView) and a coupler
``rec_coupler`` joining them. Each solver integrates x += h·v per env with a real Warp kernel, so
reset/checkpoint/threads/capture behaviour is observable.
"""

from __future__ import annotations

import attrs
import numpy as np
import polyphys
import warp as wp
from polyphys.interfaces import Coupler, Entity, Importer, Sensor, Solver
from polyphys.materials import Material
from polyphys.specs import Capabilities, CouplerSpec, ImporterSpec, MaterialSpec, SensorSpec, SolverSpec
from polyphys.views import ParticleCarriers

CALLS: list = []
CAPS = Capabilities(batch=True, reset_envs=True, checkpoint=True, precisions=("32", "64"))


@wp.kernel
def advance(h: float, vel_in: wp.array2d(dtype=float), x: wp.array2d(dtype=float)):
    env, i = wp.tid()
    x[env, i] = x[env, i] + h * vel_in[env, i] + 0.001 * x[env, i] * x[env, i]


@wp.kernel
def advance64(h: wp.float64, vel_in: wp.array2d(dtype=wp.float64), x: wp.array2d(dtype=wp.float64)):
    env, i = wp.tid()
    x[env, i] = x[env, i] + h * vel_in[env, i] + wp.float64(0.001) * x[env, i] * x[env, i]


@attrs.define(kw_only=True)
class RecA(Material):
    pass


@attrs.define(kw_only=True)
class RecB(Material):
    pass


@attrs.define(kw_only=True)
class RecBSub(RecB):
    """Registered to rec_a although its base RecB belongs to rec_b: the most-derived class wins."""


class RecEntity(Entity):
    def get_x(self, envs_idx=None):
        return self._out(self.solver.x.numpy().astype(float), self._envs(envs_idx))

    def set_v(self, v, envs_idx=None):
        envs = self._envs(envs_idx)
        vals = self._in("v", v, (self.solver.n,), envs)
        host = self.solver.v.numpy()
        host[envs] = vals
        self.solver.v.assign(host)


class _RecSolver(Solver):
    n = 3

    def add_entity(self, morph, material, surface=None, name=None, **kw):
        CALLS.append((self.name, "add_entity"))
        e = RecEntity(self, len(self.entities), morph, material, surface, name)
        self.entities.append(e)
        return e

    def build(self, layout):
        CALLS.append((self.name, "build"))
        self.layout = layout
        dt = wp.float64 if layout.precision == "64" else wp.float32
        self.x = wp.array(np.ones((layout.n_envs, self.n)), dtype=dt)
        self.v = wp.zeros((layout.n_envs, self.n), dtype=dt)
        self.parts = {p.index: (self.x[p.slice], self.v[p.slice]) for p in layout.partitions}

    def _advance(self, part):
        x, v = self.parts[part.index]
        k = advance64 if self.layout.precision == "64" else advance
        h = wp.float64(self.layout.h) if self.layout.precision == "64" else self.layout.h
        wp.launch(k, dim=x.shape, inputs=[h, v], outputs=[x])

    def substep_pre_coupling(self, f, part):
        CALLS.append((self.name, "pre", f, part.index))
        self._advance(part)

    def substep_post_coupling(self, f, part):
        CALLS.append((self.name, "post", f, part.index))

    def substep(self, f, part):
        CALLS.append((self.name, "fast", f, part.index))
        self._advance(part)

    def end_step(self, part):
        CALLS.append((self.name, "end_step", part.index))

    def state_arrays(self):
        return {"x": self.x, "v": self.v}


class RecASolver(_RecSolver):
    accepts_reaction = True

    def rigid_geoms(self):
        return None

    def rigid_links(self, part):
        return None


class RecBSolver(_RecSolver):
    def particle_carriers(self, part):
        x, v = self.parts[part.index]
        return ParticleCarriers(pos=x, vel=v, mass=x, active=None)


class RecCoupler(Coupler):
    def preprocess(self, f, part):
        CALLS.append((self.name, "preprocess", f, part.index))

    def couple(self, f, part):
        CALLS.append((self.name, "couple", f, part.index))


@wp.kernel
def copy_x(col: int, x_in: wp.array2d(dtype=float), truth_out: wp.array2d(dtype=float)):
    """Sensor ``rec_x``: the solver's x values into the sensor's columns."""
    env, i = wp.tid()
    truth_out[env, col + i] = x_in[env, i]


class RecSensor(Sensor):
    """Reads the x values of a rec_a/rec_b entity's solver (float32 scenes)."""

    def build(self, layout):
        super().build(layout)
        CALLS.append((self.name, "sensor_build"))
        self.fields = [("x", self.entity.solver.n, "real")]

    def evaluate(self, part, truth):
        CALLS.append((self.name, "sensor_evaluate", part.index))
        x, _ = self.entity.solver.parts[part.index]
        wp.launch(copy_x, dim=x.shape, inputs=[self.column, x], outputs=[truth])


class RecImporter(Importer):
    """``.rec`` files: ``links N`` makes a chain of N unit boxes joined by revolute joints."""

    def load(self, morph):
        from polyphys.description import EntityDescription, Geom, Inertial, Joint, Link

        CALLS.append(("rec_importer", "load"))
        with open(morph.file) as fh:
            word, n = fh.read().split()
        if word != "links":
            raise polyphys.OptionError(f"expected 'links N', got {word!r}")
        desc = EntityDescription(name="rec", warnings=["a .rec note"])
        for i in range(int(n)):
            desc.links.append(Link(name=f"l{i}", parent=i - 1, pos=(0.0, 0.0, -1.0 if i else 0.0), joints=[i],
                                   geoms=[i], inertial=Inertial(mass=1.0, inertia=np.eye(3) / 6.0)))
            desc.joints.append(Joint(name=f"j{i}", type="revolute", link=i, axis=(0.0, 1.0, 0.0)))
            desc.geoms.append(Geom(name=f"g{i}", type="box", link=i, size=(0.5, 0.5, 0.5)))
        return desc.finalize()


class Plugin:
    """The plugin object registered with polyphys.register()."""

    @polyphys.hookimpl
    def polyphys_solvers(self):
        return [SolverSpec(name="rec_a", target=f"{__name__}:RecASolver", capabilities=CAPS, order=1),
                SolverSpec(name="rec_b", target=f"{__name__}:RecBSolver", capabilities=CAPS, order=2)]

    @polyphys.hookimpl
    def polyphys_couplers(self):
        return [CouplerSpec(name="rec_coupler", target=f"{__name__}:RecCoupler", capabilities=CAPS,
                            couples=("RigidView", "ParticleView"))]

    @polyphys.hookimpl
    def polyphys_materials(self):
        return [MaterialSpec(name="RecA", target=f"{__name__}:RecA", solver="rec_a"),
                MaterialSpec(name="RecB", target=f"{__name__}:RecB", solver="rec_b"),
                MaterialSpec(name="RecBSub", target=f"{__name__}:RecBSub", solver="rec_a")]

    @polyphys.hookimpl
    def polyphys_sensors(self):
        return [SensorSpec(name="rec_x", target=f"{__name__}:RecSensor", capabilities=CAPS)]

    @polyphys.hookimpl
    def polyphys_importers(self):
        return [ImporterSpec(name="rec_importer", target=f"{__name__}:RecImporter", suffixes=(".rec",))]
