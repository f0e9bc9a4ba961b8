"""A deliberately wrong third-party importer for test_importer_robustness: its output must still be
checked by the core (polyphys.importing), and its errors must get the file name."""

from polyphys.description import EntityDescription, Inertial, Joint, Link
from polyphys.errors import OptionError


class NonsenseImporter:
    name = "nonsense"

    def load(self, morph):
        if morph.mode == "option_error":
            raise OptionError("bad thing in the file")
        d = EntityDescription(name="nonsense", source=morph.file)
        d.links.append(Link(name="a", pos=(0.2, -0.1, 0.5), inertial=Inertial(mass=1.0, inertia=[
            [0.1, 0, 0], [0, 0.1, 0], [0, 0, 0.1]])))
        d.joints.append(Joint(name="hinge", type="revolute", link=0, axis=(float("nan"), 0.0, 1.0)))
        d.links[0].joints.append(0)
        return d.finalize()
