"""Kinematic solver plugin: entities whose poses are set and propagated by forward kinematics.

No dynamics and no contact forces: q advances by the dof velocities you set (q' = q + h·v), and the
links follow by FK. Light module: only spec records, no Warp import.
"""

from polyphys import hookimpl
from polyphys.specs import Capabilities, ContractScene, MaterialSpec, SolverSpec

CAPABILITIES = Capabilities(batch=True, reset_envs=True, checkpoint=True, differentiable=False,
                            devices=("cpu", "cuda"), precisions=("32", "64"),
                            tested_devices=("cpu",), deterministic=("cpu",),
                            notes="poses set and propagated by forward kinematics; no forces; no float atomics "
                                  "(CUDA expected deterministic, not yet run)")


@hookimpl
def polyphys_solvers():
    return [SolverSpec(name="kinematic", target="polyphys.plugins.kinematic.solver:KinematicSolver",
                       options="polyphys.plugins.kinematic.options:KinematicOptions",
                       capabilities=CAPABILITIES, order=10,
                       contract=ContractScene(factory="polyphys.plugins.kinematic.contract:scene"),
                       description="prescribed motion of joint trees (no dynamics)")]


@hookimpl
def polyphys_materials():
    return [MaterialSpec(name="Kinematic", target="polyphys.plugins.kinematic.materials:Kinematic",
                         solver="kinematic")]
