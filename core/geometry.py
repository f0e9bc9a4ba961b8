"""Geometry type codes shared by the rigid-side solvers and couplers (no Warp import).

The codes index ``description.GEOM_TYPES``; ``polyphys.kernels.sdf`` evaluates signed distances of
each primitive in its own frame (MuJoCo half sizes: sphere (r), capsule/cylinder (r, half length)
along z, box (hx, hy, hz), ellipsoid (rx, ry, rz), plane: the z = 0 plane with normal +z).
"""

from .description import GEOM_TYPES

GEOM_CODES = {name: i for i, name in enumerate(GEOM_TYPES)}
GEOM_PLANE = GEOM_CODES["plane"]
GEOM_SPHERE = GEOM_CODES["sphere"]
GEOM_CAPSULE = GEOM_CODES["capsule"]
GEOM_CYLINDER = GEOM_CODES["cylinder"]
GEOM_BOX = GEOM_CODES["box"]
GEOM_ELLIPSOID = GEOM_CODES["ellipsoid"]
GEOM_MESH = GEOM_CODES["mesh"]
GEOM_HFIELD = GEOM_CODES["hfield"]
SDF_SUPPORTED = frozenset({GEOM_PLANE, GEOM_SPHERE, GEOM_CAPSULE, GEOM_CYLINDER, GEOM_BOX, GEOM_ELLIPSOID})
