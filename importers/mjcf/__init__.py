"""MJCF importer plugin: MuJoCo XML files -> EntityDescription (never imports MuJoCo)."""

from polyphys import hookimpl
from polyphys.specs import ImporterSpec


@hookimpl
def polyphys_importers():
    return [ImporterSpec(name="mjcf", target="polyphys.importers.mjcf.importer:MJCFImporter",
                         morphs=("MJCF",), suffixes=(".xml", ".mjcf"),
                         description="MuJoCo MJCF (includes, defaults, frames, meshes, actuators)")]
