"""Tool solver plugin: velocity-driven tools (a primitive or a mesh per tool, a pose per env) that act
on MPM/PBD/SPH material through the Legacy coupler and read back the reaction the material exerts.

Light module: spec records only, no Warp import.
"""

from polyphys import hookimpl
from polyphys.specs import Capabilities, ContractScene, MaterialSpec, SolverSpec

CAPABILITIES = Capabilities(batch=True, reset_envs=True, checkpoint=True, differentiable=False,
                            devices=("cpu", "cuda"), precisions=("32", "64"),
                            tested_devices=("cpu",), deterministic=("cpu",),
                            notes="velocity-driven tools exposed as RigidView (accepts_reaction: the coupling "
                                  "reaction is read back, the motion is prescribed); couple through Legacy")


@hookimpl
def polyphys_solvers():
    return [SolverSpec(name="tool", target="polyphys.plugins.tool.solver:ToolSolver",
                       options="polyphys.plugins.tool.options:ToolOptions",
                       capabilities=CAPABILITIES, order=15,
                       contract=ContractScene(factory="polyphys.plugins.tool.contract:scene", steps=10),
                       description="velocity-driven tools acting on particle material, with reaction readback")]


@hookimpl
def polyphys_materials():
    return [MaterialSpec(name="Tool", target="polyphys.plugins.tool.materials:Tool", solver="tool")]
