"""FEM solver plugin: linear tetrahedra, linear/corotated/stable Neo-Hookean elasticity, explicit
symplectic Euler or implicit backward Euler (Newton + Jacobi-PCG + line search) in Warp.

Light module: spec records and the (attrs-only) options class; no Warp import.
"""

from polyphys import hookimpl
from polyphys.specs import Capabilities, ContractScene, MaterialSpec, SolverSpec

from .options import FEMOptions

__all__ = ["FEMOptions"]

CAPABILITIES = Capabilities(batch=True, reset_envs=True, checkpoint=True, differentiable=False,
                            devices=("cpu", "cuda"), precisions=("32", "64"),
                            tested_devices=("cpu",), deterministic=("cpu",),
                            notes="linear tets; explicit symplectic Euler or implicit backward Euler "
                                  "(Newton-PCG); float atomics make CUDA's implicit block sums order-dependent")


@hookimpl
def polyphys_solvers():
    return [SolverSpec(name="fem", target="polyphys.plugins.fem.solver:FEMSolver",
                       options="polyphys.plugins.fem.options:FEMOptions",
                       capabilities=CAPABILITIES, order=60,
                       contract=ContractScene(factory="polyphys.plugins.fem.contract:scene", steps=10),
                       description="tetrahedral FEM elasticity (explicit or implicit)")]


@hookimpl
def polyphys_materials():
    return [MaterialSpec(name="Elastic", target="polyphys.plugins.fem.materials:Elastic",
                         solver="fem", family="FEM"),
            MaterialSpec(name="NeoHookean", target="polyphys.plugins.fem.materials:NeoHookean",
                         solver="fem", family="FEM")]
