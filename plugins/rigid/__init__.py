"""Rigid solver plugin: articulated rigid bodies (MuJoCo-style smooth dynamics).

Light module: only spec records, no Warp import. ``RigidOptions``, ``Integrator`` and ``Rigid`` are
importable from here lazily.
"""

from polyphys import hookimpl
from polyphys.specs import Capabilities, ContractScene, MaterialSpec, SolverSpec

CAPABILITIES = Capabilities(batch=True, reset_envs=True, checkpoint=True, differentiable=False,
                            devices=("cpu", "cuda"), precisions=("32", "64"),
                            tested_devices=("cpu",), deterministic=("cpu",),
                            notes="articulated bodies (CRBA/RNE, tree LDL), contacts, joint limits, equalities, "
                                  "friction loss; Newton/CG, signorini, noslip; Euler, implicitfast, "
                                  "approximate_implicitfast; MuJoCo-compatible mode; no tendons (docs/rigid.md)")


@hookimpl
def polyphys_solvers():
    return [SolverSpec(name="rigid", target="polyphys.plugins.rigid.solver:RigidSolver",
                       options="polyphys.plugins.rigid.options:RigidOptions",
                       capabilities=CAPABILITIES, order=20,
                       contract=ContractScene(factory="polyphys.plugins.rigid.contract:scene"),
                       description="articulated rigid-body dynamics (MuJoCo-compatible smooth dynamics)")]


@hookimpl
def polyphys_materials():
    return [MaterialSpec(name="Rigid", target="polyphys.plugins.rigid.materials:Rigid", solver="rigid")]


def __getattr__(name):
    if name in ("RigidOptions", "Integrator"):
        from . import options

        return getattr(options, name)
    if name == "Rigid":
        from .materials import Rigid

        return Rigid
    raise AttributeError(name)
