"""ToolSolver: velocity-driven tools exposed as RigidView with ``accepts_reaction = True``.

Each tool is one rigid link with one geom (a primitive or a mesh), its pose and velocity per env.
``substep_pre_coupling`` advances every pose by the set velocities (pos += h·v, quat = exp(h·ω) ⊗
quat); the coupler then acts (the built-in Legacy coupler, unchanged: the SDF velocity response of
docs/legacy.md on MPM grid nodes or SPH/PBD particles) and writes its reaction — the force the
material exerts on the tool, the torque about the tool origin — into this solver's per-substep
coupling buffer; ``substep_post_coupling`` adds h·f to the step's impulse readback and clears the
buffer. The motion is prescribed, so the reaction moves nothing: a one-way coupling whose reaction
is still measured. Limits: docs/tool.md.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from polyphys import morphs as M
from polyphys.arrays import env_slice
from polyphys.errors import OptionError
from polyphys.geometry import GEOM_CODES
from polyphys.interfaces import Solver
from polyphys.views import ParticleView, RigidGeoms, RigidLinks

from .entity import ToolEntity
from .materials import Tool
from .options import ToolOptions

PRIMITIVES = (M.Box, M.Sphere, M.Capsule, M.Cylinder, M.Mesh)


class ToolSolver(Solver):
    options_type = ToolOptions
    accepts_reaction = True

    def __init__(self, scene, options, spec):
        super().__init__(scene, options, spec)
        self._geoms = None

    # -- composition ---------------------------------------------------------------------------
    def add_entity(self, morph, material, surface=None, name=None, **kwargs):
        if kwargs:
            raise OptionError(f"tool add_entity: unknown arguments {sorted(kwargs)}")
        if not isinstance(material, Tool):
            raise OptionError(f"tool add_entity: material {type(material).__name__} is not polyphys.materials.Tool")
        if not isinstance(morph, PRIMITIVES) or isinstance(morph, M.Plane):
            raise OptionError(f"tool add_entity: morph {type(morph).__name__} cannot be a tool; use Box, Sphere, "
                              f"Capsule, Cylinder or Mesh")
        label = name or f"tool_{len(self.entities)}"
        if material.target is not None:
            from polyphys.registry import registry

            known = sorted(r.name for r in registry().all("solver"))
            for t in material.target:
                if t not in known:
                    raise OptionError(f"tool {label!r}: Tool.target = {list(material.target)}: no solver {t!r} is "
                                      f"registered; registered solvers: {known}")
        entity = ToolEntity(self, len(self.entities), morph, material, surface, name, len(self.entities))
        self.entities.append(entity)
        return entity

    def _geom_row(self, e):
        m = e.morph
        if isinstance(m, M.Box):
            return "box", tuple(0.5 * np.asarray(m.size)), None
        if isinstance(m, M.Sphere):
            return "sphere", (m.radius, 0.0, 0.0), None
        if isinstance(m, M.Capsule):
            return "capsule", (m.radius, 0.5 * m.height, 0.0), None
        if isinstance(m, M.Cylinder):
            return "cylinder", (m.radius, 0.5 * m.height, 0.0), None
        tm = m.load_trimesh()
        return "mesh", (0.0, 0.0, 0.0), (np.asarray(tm.vertices, float), np.asarray(tm.faces))

    # -- build ---------------------------------------------------------------------------------
    def build(self, layout):
        import warp as wp

        self.layout = layout
        self._check_targets()
        n, T, dev = layout.n_envs, len(self.entities), layout.device
        f64 = layout.precision == "64"
        S = wp.float64 if f64 else wp.float32
        V3, Q = (wp.vec3d, wp.quatd) if f64 else (wp.vec3, wp.quat)
        npf = layout.np_float
        pos = np.array([e.morph.pos for e in self.entities], npf).reshape(T, 3)
        quat = np.array([_xyzw(e.morph.orientation) for e in self.entities], npf).reshape(T, 4)
        self.pos = wp.array(np.broadcast_to(pos, (n, T, 3)).copy(), dtype=V3, device=dev)
        self.quat = wp.array(np.broadcast_to(quat, (n, T, 4)).copy(), dtype=Q, device=dev)
        self.vel, self.ang, self.force, self.torque, self.impulse, self.angular_impulse = (
            wp.zeros((n, T), dtype=V3, device=dev) for _ in range(6))
        # the coupler's per-substep buffers (float32, as the Legacy coupler writes them; zero between
        # substeps, so not state)
        self.coupling_force = wp.zeros((n, T), dtype=wp.vec3, device=dev)
        self.coupling_torque = wp.zeros((n, T), dtype=wp.vec3, device=dev)
        self._h = S(layout.h)
        self._parts = {}
        for part in layout.partitions:
            def cut(a, p=part):
                return env_slice(a, p.start, p.stop)

            self._parts[part.index] = SimpleNamespace(
                n=part.n_envs, pos=cut(self.pos), quat=cut(self.quat), vel=cut(self.vel), ang=cut(self.ang),
                force=cut(self.force), torque=cut(self.torque), impulse=cut(self.impulse),
                angular_impulse=cut(self.angular_impulse), coupling_force=cut(self.coupling_force),
                coupling_torque=cut(self.coupling_torque))

    def _check_targets(self) -> None:
        """Every target names a solver of this scene that exposes ParticleView; all tools share one
        target set (the coupler couples solver pairs)."""
        by_name = {s.name: s for s in self.scene.solvers}
        particles = sorted(n for n, s in by_name.items() if s.view(ParticleView) is not None)
        sets = set()
        for e in self.entities:
            tgt = e.material.target
            sets.add(None if tgt is None else frozenset(tgt))
            for t in tgt or ():
                if t not in by_name:
                    raise OptionError(f"tool {e.name!r}: Tool.target names solver {t!r}, which is not in this scene "
                                      f"(no entity uses it); particle solvers in the scene: {particles}")
                if t not in particles:
                    raise OptionError(f"tool {e.name!r}: Tool.target names solver {t!r}, which has no particles "
                                      f"(it does not expose ParticleView); particle solvers in the scene: {particles}")
        if len(sets) > 1:
            shown = sorted("all" if s is None else str(sorted(s)) for s in sets)
            raise OptionError(f"tools of one scene must share one Tool.target (the coupler couples solver pairs); "
                              f"found {shown}")
        self._targets = next(iter(sets)) if sets else None

    def couples_with(self, solver_name: str) -> bool:
        """Whether a coupler should couple this solver with particle solver ``solver_name`` (the
        tools' ``target``; None: every one). Read by the Legacy coupler at build."""
        return self._targets is None or solver_name in self._targets

    # -- stepping --------------------------------------------------------------------------------
    def substep_pre_coupling(self, f, part):
        import warp as wp

        from .kernels import pose

        p = self._parts[part.index]
        dim = (p.n, len(self.entities))
        if f == 0:
            wp.launch(pose.begin_step, dim=dim, inputs=[p.impulse, p.angular_impulse], device=self.layout.device)
        wp.launch(pose.integrate_pose, dim=dim, inputs=[self._h, p.vel, p.ang, p.pos, p.quat], device=self.layout.device)

    def substep_post_coupling(self, f, part):
        import warp as wp

        from .kernels import pose

        p = self._parts[part.index]
        wp.launch(pose.take_reaction, dim=(p.n, len(self.entities)),
                  inputs=[self._h, p.coupling_force, p.coupling_torque, p.force, p.torque, p.impulse,
                          p.angular_impulse], device=self.layout.device)

    def state_arrays(self):
        return {"pos": self.pos, "quat": self.quat, "vel": self.vel, "ang": self.ang, "force": self.force,
                "torque": self.torque, "impulse": self.impulse, "angular_impulse": self.angular_impulse}

    # -- RigidView -------------------------------------------------------------------------------------
    def rigid_geoms(self) -> RigidGeoms:
        """One geom per tool, in its link's frame (identity), with the tool's coupling fields; a mesh
        tool lists its triangles (the coupler builds a grid SDF)."""
        if self._geoms is None:
            import warp as wp

            rows, meshes = [], []
            for e in self.entities:
                kind, size, mesh = self._geom_row(e)
                m = e.material
                rows.append((e.index, GEOM_CODES[kind], size, m.coup_friction, m.coup_restitution, m.coup_softness))
                meshes.append(mesh)
            dev, f32, T = self.layout.device, np.float32, len(rows)
            col = list(zip(*rows)) if rows else [[]] * 6
            self._geoms = RigidGeoms(
                link=wp.array(np.asarray(col[0], np.int32), dtype=wp.int32, device=dev),
                type=wp.array(np.asarray(col[1], np.int32), dtype=wp.int32, device=dev),
                size=wp.array(np.asarray(col[2], f32).reshape(-1, 3), dtype=wp.vec3, device=dev),
                pos=wp.zeros(T, dtype=wp.vec3, device=dev),
                quat=wp.array(np.tile(np.array([0, 0, 0, 1], f32), (T, 1)), dtype=wp.quat, device=dev),
                coup_friction=wp.array(np.asarray(col[3], f32), dtype=wp.float32, device=dev),
                coup_restitution=wp.array(np.asarray(col[4], f32), dtype=wp.float32, device=dev),
                coup_softness=wp.array(np.asarray(col[5], f32), dtype=wp.float32, device=dev),
                meshes=tuple(meshes))
        return self._geoms

    def rigid_links(self, part) -> RigidLinks:
        """Tool frames of one partition; ``com`` is the tool origin (torques are about it), and the
        coupling buffers take the coupler's reaction."""
        p = self._parts[part.index]
        return RigidLinks(pos=p.pos, quat=p.quat, com=p.pos, vel=p.vel, ang=p.ang, coupling_force=p.coupling_force,
                          coupling_torque=p.coupling_torque)

    # -- host access -----------------------------------------------------------------------------
    def _write_column(self, arr, envs: np.ndarray, col: int, values: np.ndarray) -> None:
        host = arr.numpy().copy()
        host[envs, col] = values
        arr.assign(host)


def _xyzw(q):
    w, x, y, z = q
    return (x, y, z, w)
