"""URDF importer plugin: URDF robots -> EntityDescription (package:// meshes, fixed-link merging)."""

from polyphys import hookimpl
from polyphys.specs import ImporterSpec


@hookimpl
def polyphys_importers():
    return [ImporterSpec(name="urdf", target="polyphys.importers.urdf.importer:URDFImporter",
                         morphs=("URDF",), suffixes=(".urdf",),
                         description="URDF robots (links, joints, meshes via package://)")]
