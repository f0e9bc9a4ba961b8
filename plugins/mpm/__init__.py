"""MPM solver plugin: MLS-MPM with APIC transfers on a dense grid per env (Warp).

Materials (``polyphys.materials.MPM.<Name>``): Elastic (fixed corotated / neo-Hookean),
ElastoPlastic (von Mises), Snow (Stomakhin et al. 2013), Sand (Drucker–Prager, Klar et al. 2016),
Liquid (weakly compressible). Options: ``polyphys.plugins.mpm.MPMOptions``. Light module: spec
records only, no Warp import (``MPMOptions`` is imported lazily on first access).
"""

from polyphys import hookimpl
from polyphys.specs import Capabilities, ContractScene, MaterialSpec, SolverSpec

CAPABILITIES = Capabilities(batch=True, reset_envs=True, checkpoint=True, differentiable=False,
                            devices=("cpu", "cuda"), precisions=("32", "64"),
                            tested_devices=("cpu",), deterministic=("cpu",),
                            notes="MLS-MPM/APIC, quadratic B-splines, dense grid per env; grid nodes "
                                  "exposed as ParticleView; CUDA sums use float atomics (not bit-exact)")

MATERIALS = ("Elastic", "ElastoPlastic", "Snow", "Sand", "Liquid")


def __getattr__(name):
    if name == "MPMOptions":
        from .options import MPMOptions

        return MPMOptions
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@hookimpl
def polyphys_solvers():
    return [SolverSpec(name="mpm", target="polyphys.plugins.mpm.solver:MPMSolver",
                       options="polyphys.plugins.mpm.options:MPMOptions",
                       capabilities=CAPABILITIES, order=50,
                       contract=ContractScene(factory="polyphys.plugins.mpm.contract:scene", steps=10),
                       description="material point method: elastic, plastic, snow, sand, liquid")]


@hookimpl
def polyphys_materials():
    return [MaterialSpec(name=n, target=f"polyphys.plugins.mpm.materials:{n}", solver="mpm", family="MPM")
            for n in MATERIALS]
