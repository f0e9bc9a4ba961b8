"""Legacy coupler: two-way rigid ↔ particle coupling through signed distance fields (docs/semantics.md §C1).

Couples any solver exposing ``RigidView`` with any solver exposing ``ParticleView``; a default
coupler, attached by the core to every such pair unless the scene selects couplers explicitly.
"""

from polyphys import hookimpl
from polyphys.specs import Capabilities, CouplerSpec

CAPABILITIES = Capabilities(batch=True, reset_envs=True, checkpoint=True, differentiable=False,
                            devices=("cpu", "cuda"), precisions=("32",),
                            tested_devices=("cpu",), deterministic=("cpu",),
                            notes="SDF velocity response; reaction as a per-substep wrench on the rigid link")


@hookimpl
def polyphys_couplers():
    return [CouplerSpec(name="legacy", target="polyphys.couplers.legacy.coupler:LegacyCoupler",
                        options="polyphys.couplers.legacy.options:LegacyOptions",
                        capabilities=CAPABILITIES, couples=("RigidView", "ParticleView"), default=True,
                        priority=100,
                        description="SDF-based velocity response between rigid geoms and particles")]
