"""FEMEntity: getters and setters of one deformable body (docs/semantics.md §S4, §S8).

Vertex arrays are (n_envs, n_vertices, 3), element arrays (n_envs, n_elements); no batch axis for a
scene built with n_envs=0. Getters copy, setters write in place (outside the step).
"""

from __future__ import annotations

import numpy as np
from polyphys.errors import OptionError
from polyphys.interfaces import Entity


class FEMEntity(Entity):
    def __init__(self, solver, idx, morph, material, surface, name, verts, tets, vol, tris, fixed0):
        super().__init__(solver, idx, morph, material, surface, name)
        self.rest_vertices = verts            # world placement at build (n, 3) float64
        self.elements = tets                  # (m, 4) local vertex indices
        self.rest_volumes = vol               # (m,)
        self.surface_triangles = tris         # (k, 3) local vertex indices, outward
        self._fixed0 = fixed0
        self.n_vertices, self.n_elements = len(verts), len(tets)

    def _bind(self, v_start: int, e_start: int) -> None:
        self.v_start, self.e_start = v_start, e_start
        self._vs = slice(v_start, v_start + self.n_vertices)
        self._es = slice(e_start, e_start + self.n_elements)

    def _require_built(self):
        if self.solver.layout is None:
            raise OptionError(f"entity {self.name!r}: state getters/setters need scene.build() first")

    def _get(self, arr, cols: slice, envs_idx):
        self._require_built()
        envs = self._envs(envs_idx)
        host = arr.numpy()[:, cols]
        return self._out(host.astype(float) if host.dtype.kind == "f" else host.copy(), envs)

    # -- vertices --------------------------------------------------------------------------------
    def get_vertices_pos(self, envs_idx=None) -> np.ndarray:
        return self._get(self.solver.pos, self._vs, envs_idx)

    def get_vertices_vel(self, envs_idx=None) -> np.ndarray:
        return self._get(self.solver.vel, self._vs, envs_idx)

    def get_pos(self, envs_idx=None) -> np.ndarray:
        """Centre of mass of the body (lumped vertex masses), (n_envs, 3)."""
        self._require_built()
        envs = self._envs(envs_idx)
        m = self.vertex_mass
        x = self.solver.pos.numpy()[:, self._vs].astype(float)
        return self._out((x * m[:, None]).sum(axis=1) / m.sum(), envs)

    def set_vertices_pos(self, pos, envs_idx=None) -> None:
        self._require_built()
        envs = self._envs(envs_idx)
        vals = self._in("pos", pos, (self.n_vertices, 3), envs)
        self.solver._write(self.solver.pos, envs, self._vs, vals)

    def set_vertices_vel(self, vel, envs_idx=None) -> None:
        self._require_built()
        envs = self._envs(envs_idx)
        vals = self._in("vel", vel, (self.n_vertices, 3), envs)
        self.solver._write(self.solver.vel, envs, self._vs, vals)

    def get_fixed_vertices(self, envs_idx=None) -> np.ndarray:
        """Boolean mask (n_envs, n_vertices) of the vertices held in place."""
        return self._get(self.solver.fixed, self._vs, envs_idx).astype(bool)

    def set_fixed_vertices(self, fixed, envs_idx=None) -> None:
        """Hold vertices in place per env: a boolean mask (n_vertices,) (or one per env). A fixed
        vertex keeps its position (move it with set_vertices_pos) and has zero velocity."""
        self._require_built()
        envs = self._envs(envs_idx)
        vals = self._in("fixed", fixed, (self.n_vertices,), envs, dtype=bool)
        self.solver._write(self.solver.fixed, envs, self._vs, vals.astype(np.int32))

    # -- elements --------------------------------------------------------------------------------
    def get_elements_active(self, envs_idx=None) -> np.ndarray:
        return self._get(self.solver.active, self._es, envs_idx).astype(bool)

    def set_elements_active(self, active, envs_idx=None) -> None:
        """Per-env element flags: an inactive element exerts no force (cut/removed material)."""
        self._require_built()
        envs = self._envs(envs_idx)
        vals = self._in("active", active, (self.n_elements,), envs, dtype=bool)
        self.solver._write(self.solver.active, envs, self._es, vals.astype(np.int32))

    def get_elements_stress(self, envs_idx=None) -> np.ndarray:
        """First Piola-Kirchhoff stress P (n_envs, n_elements, 3, 3) in Pa at the current positions
        (computed for inactive elements too)."""
        self._require_built()
        _, P, _ = self.solver.element_fields()
        return self._out(P[:, self._es].astype(float), self._envs(envs_idx))

    def get_elements_deformation_gradient(self, envs_idx=None) -> np.ndarray:
        self._require_built()
        F, _, _ = self.solver.element_fields()
        return self._out(F[:, self._es].astype(float), self._envs(envs_idx))

    def get_elastic_energy(self, envs_idx=None) -> np.ndarray:
        """Strain energy Σ V Ψ(F) (J) of the active elements, per env."""
        self._require_built()
        _, _, psi = self.solver.element_fields()
        act = self.solver.active.numpy()[:, self._es]
        e = (psi[:, self._es].astype(float) * act * self.rest_volumes).sum(axis=1)
        return self._out(e, self._envs(envs_idx))

    @property
    def vertex_mass(self) -> np.ndarray:
        """Lumped vertex masses (kg)."""
        self._require_built()
        return self.solver.model.mass.numpy()[self._vs].astype(float)
