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


def world_planes(desc, base_pos=(0.0, 0.0, 0.0), base_quat=(1.0, 0.0, 0.0, 0.0)) -> list:
    """The collision planes of an entity that are fixed in the world: ``[(unit normal (3,), offset d,
    geom name)]`` with the plane n·x = d, for plane geoms on links welded to the world (no joint, or
    fixed joints only, up to the world), the entity placed at ``base_pos``/``base_quat``."""
    import numpy as np

    from .kinematics import quat_mul, quat_rotate

    pose: list = []          # per link: (pos, quat) in the world, or None when the link can move
    out = []
    for link in desc.links:
        welded = all(desc.joints[j].type == "fixed" for j in link.joints)
        parent = (np.asarray(base_pos, float), np.asarray(base_quat, float)) if link.parent < 0 else pose[link.parent]
        if not welded or parent is None:
            pose.append(None)
            continue
        p = parent[0] + quat_rotate(parent[1], link.pos)
        q = quat_mul(parent[1], link.quat)
        pose.append((p, q))
        for gi in link.geoms:
            g = desc.geoms[gi]
            if g.type != "plane" or g.role == "visual":
                continue
            gp = p + quat_rotate(q, g.pos)
            n = quat_rotate(quat_mul(q, g.quat), (0.0, 0.0, 1.0))
            n = n / np.linalg.norm(n)
            out.append((n, float(n @ gp), g.name))
    return out


def warn_coincident_planes(known: list, desc, base_pos, base_quat, entity: str) -> list:
    """Warn (PolyphysWarning) when a world plane of ``desc`` coincides with one already in the scene
    (``known``, as returned): two floors at one place double every contact with it — an MJCF model
    that brings its own floor plus a ``morphs.Plane``, say. Returns ``known`` with this entity's
    planes added. Coincident: normals within 1e-6 and offsets within 1e-6 m."""
    import warnings

    import numpy as np

    from .errors import PolyphysWarning
    from .importing import _user_stacklevel

    mine = [(n, d, g, entity) for n, d, g in world_planes(desc, base_pos, base_quat)]
    for n, d, g, _ in mine:
        for n0, d0, g0, e0 in known:
            if float(np.dot(n, n0)) > 1.0 - 1e-6 and abs(d - d0) < 1e-6:
                warnings.warn(PolyphysWarning(
                    f"entity {entity!r}: plane {g!r} coincides with plane {g0!r} of entity {e0!r} (normal "
                    f"{np.round(n, 6).tolist()}, offset {d:.6g} m): every contact with the floor would be counted "
                    f"twice; leave one of them out (an MJCF model may bring its own floor)"), stacklevel=_user_stacklevel())
    return known + mine
