"""Geometry type codes shared by the rigid-side solvers and couplers (no Warp import).

The codes are ``description.GeomType`` (``GEOM_CODES`` maps the type names to them);
``polyphys.kernels.sdf`` evaluates signed distances of
each primitive in its own frame (MuJoCo half sizes: sphere (r), capsule/cylinder (r, half length)
along z, box (hx, hy, hz), ellipsoid (rx, ry, rz), plane: the z = 0 plane with normal +z).
"""

from .description import GeomType

GEOM_CODES = {t.name.lower(): t for t in GeomType}
SDF_SUPPORTED = frozenset({GeomType.PLANE, GeomType.SPHERE, GeomType.CAPSULE, GeomType.CYLINDER, GeomType.BOX,
                           GeomType.ELLIPSOID})
