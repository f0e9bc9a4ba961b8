"""polyphys.plugins.pbd: extended position-based dynamics (XPBD) for cloth, elastic bodies, granular
particles and position-based fluids.

Light module: only spec records, no Warp import. ``PBDOptions`` is re-exported lazily so that
``from polyphys.plugins.pbd import PBDOptions`` works without importing Warp.
"""

from polyphys import hookimpl
from polyphys.specs import Capabilities, ContractScene, MaterialSpec, SolverSpec

CAPABILITIES = Capabilities(
    batch=True, reset_envs=True, checkpoint=True, differentiable=False,
    devices=("cpu",), precisions=("32",), deterministic=("cpu",),
    notes="XPBD (graph-coloured Gauss-Seidel for mesh constraints, Jacobi with ordered gathers for "
          "contacts and fluids: no float atomics); float32 only; CUDA not yet run on a GPU, so not "
          "declared")

MATERIALS = ("Cloth", "Elastic", "Particle", "Liquid")


@hookimpl
def polyphys_solvers():
    return [SolverSpec(name="pbd", target="polyphys.plugins.pbd.solver:PBDSolver",
                       options="polyphys.plugins.pbd.options:PBDOptions",
                       capabilities=CAPABILITIES, order=40,
                       contract=ContractScene(factory="polyphys.plugins.pbd.contract:scene"),
                       description="XPBD cloth, elastic bodies, granular particles, PBF liquids")]


@hookimpl
def polyphys_materials():
    return [MaterialSpec(name=n, target=f"polyphys.plugins.pbd.materials:{n}", solver="pbd",
                         family="PBD") for n in MATERIALS]


def __getattr__(name):
    if name == "PBDOptions":
        from .options import PBDOptions

        return PBDOptions
    if name in MATERIALS:
        from . import materials

        return getattr(materials, name)
    if name == "grid_cloth":
        from .sampling import grid_cloth

        return grid_cloth
    raise AttributeError(f"module 'polyphys.plugins.pbd' has no attribute {name!r}")
