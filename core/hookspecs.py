"""Hook specifications of polyphys.

A plugin is a module (or object) with ``@hookimpl`` functions, registered through the entry-point
group ``polyphys`` or in-process with ``polyphys.register(obj)``. Every hook returns a list of inert
spec records (``polyphys.specs``); no hook runs inside the substep loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from .specs import CouplerSpec, ImporterSpec, MaterialSpec, SensorSpec, SolverSpec

hookspec = pluggy.HookspecMarker("polyphys")
hookimpl = pluggy.HookimplMarker("polyphys")

API_VERSION = 1


@hookspec
def polyphys_solvers() -> list[SolverSpec]:
    """Return the solvers this plugin provides.

    :return: ``SolverSpec`` records. The core validates each record, rejects a name that another
        distribution also provides (naming both), and imports ``target`` only when a scene adds an
        entity whose material the solver owns. ``contract`` names the small scene on which the
        contract test exercises every declared capability.
    """


@hookspec
def polyphys_couplers() -> list[CouplerSpec]:
    """Return the couplers this plugin provides.

    :return: ``CouplerSpec`` records. ``couples`` names the two view protocols the coupler joins; a
        coupler marked ``default`` is attached by the core to every solver pair that exposes those
        views unless the scene selects couplers explicitly.
    """


@hookspec
def polyphys_importers() -> list[ImporterSpec]:
    """Return the model-file importers this plugin provides.

    :return: ``ImporterSpec`` records. The core picks an importer for a file morph by the morph's
        class name (``morphs``) or the file suffix (``suffixes``) and calls
        ``Importer.load(morph) -> EntityDescription``. The core then checks the description
        (finite and physically valid, ``polyphys.description.description_problems``), prefixes
        errors with the file name, and emits ``desc.warnings`` as one PolyphysWarning (importers do
        not warn themselves); see docs/importers.md, "Errors" and "Warnings".
    """


@hookspec
def polyphys_sensors() -> list[SensorSpec]:
    """Return the sensors this plugin provides.

    :return: ``SensorSpec`` records; ``scene.add_sensor(name, ...)`` imports ``target``.
    """


@hookspec
def polyphys_materials() -> list[MaterialSpec]:
    """Return the material classes this plugin provides and the solver that owns each.

    :return: ``MaterialSpec`` records. Classes become reachable as ``polyphys.materials.<name>`` (or
        ``polyphys.materials.<family>.<name>``); a scene dispatches an entity to the solver owning the
        most-derived registered class in the material's MRO.
    """
