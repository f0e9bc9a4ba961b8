"""SAP coupler: convex compliant contact (Castro, Permenter, Han, IEEE T-RO 2022; docs/sap.md).

Solves the contacts of a rigid solver that exposes ``RigidDynamicsView``, with itself and with the
boundary vertices of a deformable solver exposing ``DeformableDynamicsView`` (FEM), with its own convex
problem (Newton + dense per-env Cholesky + exact line search), the rigid solver computing the free
dynamics before and integrating after. Not a default coupler: select it with
``Scene(coupler="sap")`` or ``Scene(coupler=SapOptions(...))`` (a list adds others, e.g. Legacy).
"""

from polyphys import hookimpl
from polyphys.specs import Capabilities, CouplerSpec

CAPABILITIES = Capabilities(batch=True, reset_envs=True, checkpoint=True, differentiable=False,
                            devices=("cpu",), precisions=("32", "64"),
                            tested_devices=("cpu",), deterministic=("cpu",),
                            notes="SAP convex compliant point contact: rigid–rigid (one rigid solver) and "
                                  "rigid–FEM (boundary vertices against analytic-SDF rigid geoms); no FEM–FEM, FEM "
                                  "self-contact, mesh/heightfield geoms against FEM, or hydroelastic contact")


@hookimpl
def polyphys_couplers():
    return [CouplerSpec(name="sap", target="polyphys.couplers.sap.coupler:SapCoupler",
                        options="polyphys.couplers.sap.options:SapOptions",
                        capabilities=CAPABILITIES, couples=("RigidDynamicsView", "ContactDynamicsView"),
                        self_pairs=True, default=False, priority=50,
                        description="SAP convex compliant contact solve of a rigid solver's contacts")]
