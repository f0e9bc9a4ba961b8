"""SF solver plugin: incompressible gas / smoke on a per-env MAC grid (Stam's stable fluids).

Materials (``polyphys.materials.SF.<Name>``): Smoke (an initial region of smoke, heat and velocity)
and Emitter (a sphere/box source with a rate, heat and velocity, settable per env). Options:
``polyphys.plugins.sf.SFOptions``. Light module: spec records only, no Warp import.
"""

from polyphys import hookimpl
from polyphys.specs import Capabilities, ContractScene, MaterialSpec, SolverSpec

CAPABILITIES = Capabilities(batch=True, reset_envs=True, checkpoint=True, differentiable=False,
                            devices=("cpu", "cuda"), precisions=("32", "64"),
                            tested_devices=("cpu",), deterministic=("cpu",),
                            notes="stable fluids on a MAC grid per env: semi-Lagrangian/MacCormack advection, "
                                  "buoyancy, vorticity confinement, viscosity, MGPCG projection with a per-env "
                                  "residual test; rigid geoms (RigidView) are moving obstacles (one way)")

MATERIALS = ("Smoke", "Emitter")


def __getattr__(name):
    if name == "SFOptions":
        from .options import SFOptions

        return SFOptions
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@hookimpl
def polyphys_solvers():
    return [SolverSpec(name="sf", target="polyphys.plugins.sf.solver:SFSolver",
                       options="polyphys.plugins.sf.options:SFOptions",
                       capabilities=CAPABILITIES, order=70,
                       contract=ContractScene(factory="polyphys.plugins.sf.contract:scene", steps=6),
                       description="stable fluids: incompressible gas and smoke on a grid")]


@hookimpl
def polyphys_materials():
    return [MaterialSpec(name=n, target=f"polyphys.plugins.sf.materials:{n}", solver="sf", family="SF")
            for n in MATERIALS]
