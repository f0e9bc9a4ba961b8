"""polyphys-ballistic: particles under gravity that bounce on the ground plane; a sensor of them, a
coupler that drags them along with rigid bodies, and an importer of chains of rods.

This module is what the entry point ``ballistic = "polyphys_ballistic"`` names. It holds only the
hookimpls, which return inert spec records: listing plugins (``polyphys plugins``) imports neither
Warp nor the solver. The solver module is imported only when a scene adds a Ballistic entity.
"""

from polyphys import hookimpl
from polyphys.specs import Capabilities, ContractScene, CouplerSpec, ImporterSpec, MaterialSpec, SensorSpec, SolverSpec

__version__ = "0.1.0"

CAPABILITIES = Capabilities(
    batch=True, reset_envs=True, checkpoint=True, differentiable=False,
    devices=("cpu",), tested_devices=("cpu",), precisions=("32", "64"), deterministic=("cpu",),
    notes="ballistic particles, ground bounce (restitution, Coulomb friction); CUDA not tested yet",
)


@hookimpl
def polyphys_solvers():
    return [SolverSpec(
        name="ballistic",
        target="polyphys_ballistic.solver:BallisticSolver",
        options="polyphys_ballistic.options:BallisticOptions",
        capabilities=CAPABILITIES,
        contract=ContractScene(factory="polyphys_ballistic.contract:scene"),
        description="particles under gravity bouncing on a ground plane",
    )]


@hookimpl
def polyphys_materials():
    return [MaterialSpec(name="Ballistic", target="polyphys_ballistic.materials:Ballistic",
                         solver="ballistic")]


@hookimpl
def polyphys_sensors():
    # measurement models, per-env reset and checkpoints are polyphys core's: the sensor has them all
    return [SensorSpec(name="ballistic_apex", target="polyphys_ballistic.sensors:ApexSensor",
                       capabilities=CAPABILITIES, description="highest particle and largest speed")]


@hookimpl
def polyphys_couplers():
    # not a default coupler: a scene selects it, Scene(coupler="ballistic_drag")
    return [CouplerSpec(name="ballistic_drag", target="polyphys_ballistic.coupler:DragCoupler",
                        options="polyphys_ballistic.options:DragOptions", couples=("RigidView", "ParticleView"),
                        capabilities=Capabilities(batch=True, reset_envs=True, checkpoint=True, devices=("cpu",),
                                                  precisions=("32",), deterministic=("cpu",),
                                                  notes="particles dragged along by nearby rigid links"),
                        description="particles near a rigid link are dragged with it; the link feels the reaction")]


@hookimpl
def polyphys_importers():
    return [ImporterSpec(name="chain", target="polyphys_ballistic.chain:ChainImporter", morphs=("ChainFile",),
                         suffixes=(".chain",), description="a chain of rods from a small TOML file")]
