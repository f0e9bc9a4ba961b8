"""Package discovery for the remapped layout (core/ -> polyphys, plugins/ -> polyphys.plugins, ...).

setuptools' find_packages does not follow package-dir remaps, so list the packages by walking the
mapped folders: a plugin folder added later is packaged without editing this file.
"""

import os

from setuptools import setup

ROOTS = {"polyphys": "core", "polyphys.plugins": "plugins", "polyphys.couplers": "couplers",
         "polyphys.importers": "importers"}


def _packages():
    found = []
    for pkg, folder in ROOTS.items():
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__")))
            if "__init__.py" not in filenames:
                continue
            rel = os.path.relpath(dirpath, folder)
            name = pkg if rel == "." else pkg + "." + rel.replace(os.sep, ".")
            if pkg == "polyphys" and rel.split(os.sep)[0] in ("plugins", "couplers", "importers"):
                continue
            found.append(name)
    return sorted(found)


setup(packages=_packages())
