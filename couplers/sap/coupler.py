"""SapCoupler: the SAP contact solve of docs/sap.md between a rigid solver's pre- and post-coupling.

At build the coupler takes the contacts of every rigid solver it couples with itself
(``RigidDynamicsView.cede_contacts``): that solver then computes only the free dynamics, the dense
M + h·D and the contact Jacobians in pre-coupling. ``couple(f, part)`` launches, per rigid solver,
the per-contact parameters (kernels/sap.py ``contact_params``) and the per-env SAP solve
(``sap_solve``: one thread per env, the Newton loop with the per-env stopping rule inside, so envs
stop independently and nothing syncs with the host), which writes the generalized contact force
that post-coupling integrates with and the row forces the rigid solver's contact readback reports.
After a step, envs that hit ``max_iterations`` in any substep are reported (``on_iteration_cap``).
"""

from __future__ import annotations

import math
import warnings
from types import SimpleNamespace

import numpy as np
import warp as wp
from polyphys.arrays import env_slice
from polyphys.errors import CapabilityError, OptionError, PolyphysWarning, SimulationError
from polyphys.interfaces import Coupler
from polyphys.views import RigidDynamicsView, SurfaceMeshView

from .kernels import sap as K
from .options import SapOptions

STATE = ("warm_v", "warm_ok")
F = wp.float64


class SapCoupler(Coupler):
    options_type = SapOptions

    def kernel_modules(self, layout):
        """The SAP kernels (kernels/sap.py) and, per rigid solver this coupler takes the contacts of, its
        hand-off module (``RigidDynamicsView.handoff_kernel_modules``), with the overloads of the scene's
        precision: compiled with the rest before build (docs/running.md, "First run")."""
        K.declare_overloads(layout.precision)
        mods = [K]
        for a, b in self.pairs:
            for s in {a.name: a, b.name: b}.values():
                rigid = s.view(RigidDynamicsView)
                if rigid is not None:
                    mods += [m for m in rigid.handoff_kernel_modules(layout) if m not in mods]
        return mods

    def build(self, layout):
        self.layout = layout
        K.declare_overloads(layout.precision)     # also when kernel_modules was not called: compiles nothing
        self._rigid = {}
        for s in self.scene.solvers:
            if s.view(SurfaceMeshView) is not None:
                raise CapabilityError("sap", "deformable contact (SurfaceMeshView)",
                                      f"solver {s.name!r} exposes a surface mesh (FEM, cloth): the SAP coupler does "
                                      f"not solve rigid–FEM, FEM–FEM or FEM self-contact yet, so its bodies would "
                                      f"pass through the rigid ones; docs/sap.md lists what is supported")
        for a, b in self.pairs:
            if a is not b:
                raise CapabilityError("sap", "contact between two solvers",
                                      f"{a.name!r} and {b.name!r}: the SAP coupler solves the contacts of one "
                                      f"rigid solver with itself (rigid–rigid); pairing solvers (rigid–FEM, "
                                      f"two rigid solvers) is not implemented (docs/sap.md)")
            if a.name not in self._rigid:
                self._rigid[a.name] = self._build_rigid(a.view(RigidDynamicsView), layout)
        if not self._rigid:
            raise OptionError("SAP coupler: no rigid solver exposing RigidDynamicsView in the scene")

    def _build_rigid(self, rigid, layout):
        o = self.options
        rigid.cede_contacts(self.name)
        p0 = layout.partitions[0]
        dyn = rigid.rigid_dynamics(p0)
        nv = dyn.qvel.shape[1]
        K_ = dyn.dist.shape[1]
        n_geoms = dyn.geom_friction.shape[1]
        n, dev = layout.n_envs, layout.device
        geom_k = np.full(n_geoms, float(o.point_stiffness))
        geom_tau = np.full(n_geoms, float(o.dissipation_time_constant))
        for what, table, arr in (("geom_point_stiffness", o.geom_point_stiffness, geom_k),
                                 ("geom_dissipation_time_constant", o.geom_dissipation_time_constant, geom_tau)):
            for g, x in table.items():
                if g >= n_geoms:
                    raise OptionError(f"SapOptions.{what}: geom {g} does not exist in rigid solver "
                                      f"{rigid.name!r} (it has {n_geoms} geoms, 0..{n_geoms - 1})")
                arr[g] = float(x)
        f64 = wp.float64

        def z(shape, dtype=f64):
            return wp.zeros(shape, dtype=dtype, device=dev)

        b = SimpleNamespace(
            rigid=rigid, nv=nv, K=K_, n_geoms=n_geoms,
            geom_k=wp.array(geom_k, dtype=f64, device=dev), geom_tau=wp.array(geom_tau, dtype=f64, device=dev),
            k=z((n, K_)), tau=z((n, K_)), mu=z((n, K_)),
            warm_v=z((n, nv)), warm_ok=z(n, wp.int32),
            lo_A=z((n, nv), wp.int32), hi_A=z((n, nv), wp.int32), lo_H=z((n, nv), wp.int32),
            LA=z((n, nv, nv)), H=z((n, nv, nv)), Z=z((n, 3, nv)), cols=z((n, K_, nv), wp.int32),
            ncols=z((n, K_), wp.int32), v=z((n, nv)), vs=z((n, nv)), dv=z((n, nv)), grad=z((n, nv)),
            tmp=z((n, nv)), vc=z((n, K_), wp.vec3d), dvc=z((n, K_), wp.vec3d), gam=z((n, K_), wp.vec3d),
            rn=z((n, K_)), rt=z((n, K_)), vhat=z((n, K_)),
            gamma=z((n, K_), wp.vec3d), iterations=z(n, wp.int32), converged=z(n, wp.int32),
            cost=z((n, o.max_iterations + 1)), residual=z(n), residual_history=z((n, o.max_iterations + 1)),
            iterations_step=z(n, wp.int32), cap_hits_step=z(n, wp.int32))
        b.parts = {}
        for part in layout.partitions:
            s, t = part.start, part.stop
            b.parts[part.index] = SimpleNamespace(
                dyn=rigid.rigid_dynamics(part),
                **{k: env_slice(getattr(b, k), s, t) for k in (
                    "k", "tau", "mu", "warm_v", "warm_ok", "lo_A", "hi_A", "lo_H", "LA", "H", "Z", "cols", "ncols",
                    "v", "vs", "dv", "grad",
                    "tmp", "vc", "dvc", "gam", "rn", "rt", "vhat", "gamma", "iterations", "converged", "cost",
                    "residual", "residual_history", "iterations_step", "cap_hits_step")})
        return b

    # -- the substep ------------------------------------------------------------------------------
    def couple(self, f, part):
        o = self.options
        h = self.layout.h
        for b in self._rigid.values():
            p = b.parts[part.index]
            d = p.dyn
            dev = self.layout.device
            wp.launch(K.contact_params, dim=(part.n_envs, b.K),
                      inputs=[0 if o.friction_combination == "drake" else 1, b.geom_k, b.geom_tau,
                              d.n_contacts, d.geom, d.condim, d.friction, d.geom_friction, d.geom_friction_ratio],
                      outputs=[p.k, p.tau, p.mu], device=dev)
            wp.launch(K.sap_solve, dim=part.n_envs,
                      inputs=[F(h), F(o.near_rigid_threshold), F(o.sigma), F(o.atol), F(o.rtol), o.max_iterations,
                              0 if o.line_search == "exact" else 1, F(o.ls_alpha_max), o.ls_max_iterations,
                              F(o.ls_tolerance), F(o.ls_armijo_c), F(o.ls_rho),
                              d.qvel, d.qacc_free, d.mass, d.n_contacts, d.dist, d.jac, p.k, p.tau, p.mu,
                              p.warm_v, p.warm_ok, p.lo_A, p.hi_A, p.lo_H, p.LA, p.H, p.Z, p.cols, p.ncols,
                              p.v, p.vs, p.dv, p.grad, p.tmp,
                              p.vc, p.dvc, p.gam, p.rn, p.rt, p.vhat],
                      outputs=[p.gamma, d.qfrc_contact, d.contact_force, p.iterations, p.converged, p.cost,
                               p.residual, p.residual_history], device=dev)
            wp.launch(K.step_stats, dim=part.n_envs, inputs=[int(f == 0), p.iterations, p.converged],
                      outputs=[p.iterations_step, p.cap_hits_step], device=dev)

    def check_after_step(self) -> None:
        """Envs whose SAP solve hit max_iterations in a substep of the last step (host sync after
        the step): a PolyphysWarning or SimulationError naming them, per ``on_iteration_cap``."""
        if self.options.on_iteration_cap == "ignore":
            return
        for name, b in self._rigid.items():
            caps = b.cap_hits_step.numpy()
            bad = np.nonzero(caps)[0]
            if bad.size:
                msg = (f"SAP coupler ({name}): the Newton solve hit max_iterations={self.options.max_iterations} "
                       f"without meeting atol/rtol in env(s) {bad.tolist()} ({caps[bad].tolist()} substep(s)); "
                       f"raise SapOptions.max_iterations or loosen rtol")
                if self.options.on_iteration_cap == "raise":
                    raise SimulationError(msg)
                warnings.warn(msg, PolyphysWarning, stacklevel=3)

    # -- state ------------------------------------------------------------------------------------
    def state_arrays(self):
        out = {}
        for name, b in self._rigid.items():
            for k in STATE:
                out[f"{name}/{k}"] = getattr(b, k)
        return out

    # -- readback ---------------------------------------------------------------------------------
    def _pick(self, rigid):
        names = sorted(self._rigid)
        if rigid is None:
            if len(names) != 1:
                raise OptionError(f"SAP coupler: several rigid solvers {names}; name one")
            rigid = names[0]
        if rigid not in self._rigid:
            raise OptionError(f"SAP coupler: rigid={rigid!r} is not coupled; coupled: {names}")
        return self._rigid[rigid]

    def get_solver_stats(self, rigid: str | None = None, envs_idx=None) -> dict:
        """Per env, of the last substep's solve: ``iterations`` (Newton steps), ``converged``
        (bool: the stopping rule held), ``residual`` (‖D·∇ℓ‖ at the end), ``cost`` and
        ``residual_history`` (ℓ and ‖D·∇ℓ‖ at the start and after each Newton step: (n,
        max_iterations + 1), −1 past the last); over the last
        step's substeps: ``iterations_step`` (sum) and ``cap_hits_step`` (substeps that hit
        max_iterations). Batch axis first (none unbatched)."""
        b = self._pick(rigid)
        scene = self.scene
        envs = scene._envs_idx(envs_idx)
        out = {"iterations": b.iterations.numpy()[envs].astype(int),
               "converged": b.converged.numpy()[envs].astype(bool),
               "residual": b.residual.numpy()[envs].astype(float),
               "cost": b.cost.numpy()[envs].astype(float),
               "residual_history": b.residual_history.numpy()[envs].astype(float),
               "iterations_step": b.iterations_step.numpy()[envs].astype(int),
               "cap_hits_step": b.cap_hits_step.numpy()[envs].astype(int)}
        return out if scene.batched else {k: v[0] for k, v in out.items()}

    def get_impulses(self, rigid: str | None = None, envs_idx=None) -> dict:
        """The last substep's contact impulses γ (N·s) per contact slot, (n, K, 3) in the contact
        frame (normal, tangent 1, tangent 2; on geom A; the rigid solver's contact slots, valid
        below ``count``), with the regularisation it used: ``R_n``, ``R_t`` (s/kg) and ``v_hat``
        (m/s), and the pair ``stiffness`` (N/m), ``tau_d`` (s), ``mu``. Batch axis first."""
        b = self._pick(rigid)
        scene = self.scene
        envs = scene._envs_idx(envs_idx)
        count = np.concatenate([b.parts[p.index].dyn.n_contacts.numpy() for p in self.layout.partitions])[envs]
        out = {"gamma": b.gamma.numpy()[envs].astype(float), "count": count.astype(int),
               "R_n": b.rn.numpy()[envs], "R_t": b.rt.numpy()[envs], "v_hat": b.vhat.numpy()[envs],
               "stiffness": b.k.numpy()[envs], "tau_d": b.tau.numpy()[envs], "mu": b.mu.numpy()[envs]}
        valid = np.arange(b.K)[None, :] < out["count"][:, None]
        for k in ("R_n", "R_t", "v_hat", "stiffness", "tau_d", "mu"):
            out[k] = np.where(valid, out[k], math.nan)
        return out if scene.batched else {k: v[0] for k, v in out.items()}
