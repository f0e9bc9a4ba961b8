"""SPH solver plugin: weakly compressible (WCSPH, Tait equation of state) and divergence-free
(DFSPH, Bender & Koschier 2015) liquids in Warp, with a per-env uniform-grid neighbour search and
Akinci et al. (2012) boundary particles.

Light module: spec records only (``SPHOptions`` and the materials are plain attrs classes, no Warp).
"""

from polyphys import hookimpl
from polyphys.specs import Capabilities, ContractScene, MaterialSpec, SolverSpec

from .materials import Boundary, Liquid
from .options import SPHOptions

__all__ = ["SPHOptions", "Liquid", "Boundary", "CAPABILITIES"]

CAPABILITIES = Capabilities(batch=True, reset_envs=True, checkpoint=True, differentiable=False,
                            devices=("cpu", "cuda"), precisions=("32",),
                            tested_devices=("cpu",), deterministic=("cpu",),
                            notes="WCSPH/DFSPH liquids; per-env counting-sort grid; Akinci boundaries")


@hookimpl
def polyphys_solvers():
    return [SolverSpec(name="sph", target="polyphys.plugins.sph.solver:SPHSolver",
                       options="polyphys.plugins.sph.options:SPHOptions",
                       capabilities=CAPABILITIES, order=40,
                       contract=ContractScene(factory="polyphys.plugins.sph.contract:scene", steps=10),
                       description="SPH liquids (WCSPH, DFSPH) with boundary particles")]


@hookimpl
def polyphys_materials():
    return [MaterialSpec(name="Liquid", target="polyphys.plugins.sph.materials:Liquid", solver="sph",
                         family="SPH"),
            MaterialSpec(name="Boundary", target="polyphys.plugins.sph.materials:Boundary", solver="sph",
                         family="SPH")]
