"""Signed distance functions of primitives, in the primitive's own frame (float32).

Positive outside, negative inside; each returns the distance and the outward unit normal (the SDF
gradient). Codes as in ``polyphys.geometry`` (plane 0, sphere 1, capsule 2, cylinder 3, box 4,
ellipsoid 5). Sizes are MuJoCo half sizes.
"""

import warp as wp

GEOM_PLANE = wp.constant(0)
GEOM_SPHERE = wp.constant(1)
GEOM_CAPSULE = wp.constant(2)
GEOM_CYLINDER = wp.constant(3)
GEOM_BOX = wp.constant(4)
GEOM_ELLIPSOID = wp.constant(5)


@wp.func
def sdf_sphere(p: wp.vec3, r: float):
    return wp.length(p) - r


@wp.func
def sdf_capsule(p: wp.vec3, r: float, hl: float):
    c = wp.vec3(0.0, 0.0, wp.clamp(p[2], -hl, hl))
    return wp.length(p - c) - r


@wp.func
def sdf_cylinder(p: wp.vec3, r: float, hl: float):
    dx = wp.sqrt(p[0] * p[0] + p[1] * p[1]) - r
    dz = wp.abs(p[2]) - hl
    outside = wp.length(wp.vec2(wp.max(dx, 0.0), wp.max(dz, 0.0)))
    return outside + wp.min(wp.max(dx, dz), 0.0)


@wp.func
def sdf_box(p: wp.vec3, half: wp.vec3):
    q = wp.vec3(wp.abs(p[0]) - half[0], wp.abs(p[1]) - half[1], wp.abs(p[2]) - half[2])
    outside = wp.length(wp.vec3(wp.max(q[0], 0.0), wp.max(q[1], 0.0), wp.max(q[2], 0.0)))
    return outside + wp.min(wp.max(q[0], wp.max(q[1], q[2])), 0.0)


@wp.func
def sdf_ellipsoid(p: wp.vec3, radii: wp.vec3):
    # Inigo Quilez's bound: exact on the surface, a close estimate elsewhere
    k0 = wp.length(wp.cw_div(p, radii))
    k1 = wp.length(wp.cw_div(p, wp.cw_mul(radii, radii)))
    if k1 < 1.0e-12:
        return -wp.min(radii[0], wp.min(radii[1], radii[2]))
    return k0 * (k0 - 1.0) / k1


@wp.func
def sdf_primitive(geom_type: int, size: wp.vec3, p: wp.vec3):
    if geom_type == GEOM_PLANE:
        return p[2]
    if geom_type == GEOM_SPHERE:
        return sdf_sphere(p, size[0])
    if geom_type == GEOM_CAPSULE:
        return sdf_capsule(p, size[0], size[1])
    if geom_type == GEOM_CYLINDER:
        return sdf_cylinder(p, size[0], size[1])
    if geom_type == GEOM_BOX:
        return sdf_box(p, size)
    if geom_type == GEOM_ELLIPSOID:
        return sdf_ellipsoid(p, size)
    return 1.0e10


@wp.func
def sdf_normal(geom_type: int, size: wp.vec3, p: wp.vec3):
    """Outward unit normal: analytic for plane/sphere/capsule, central differences otherwise."""
    if geom_type == GEOM_PLANE:
        return wp.vec3(0.0, 0.0, 1.0)
    if geom_type == GEOM_SPHERE:
        if wp.length(p) > 1.0e-9:
            return wp.normalize(p)
        return wp.vec3(0.0, 0.0, 1.0)
    if geom_type == GEOM_CAPSULE:
        d = p - wp.vec3(0.0, 0.0, wp.clamp(p[2], -size[1], size[1]))
        if wp.length(d) > 1.0e-9:
            return wp.normalize(d)
        return wp.vec3(1.0, 0.0, 0.0)
    eps = 1.0e-4 * wp.max(size[0], wp.max(size[1], size[2]))
    ex = wp.vec3(eps, 0.0, 0.0)
    ey = wp.vec3(0.0, eps, 0.0)
    ez = wp.vec3(0.0, 0.0, eps)
    g = wp.vec3(sdf_primitive(geom_type, size, p + ex) - sdf_primitive(geom_type, size, p - ex),
                sdf_primitive(geom_type, size, p + ey) - sdf_primitive(geom_type, size, p - ey),
                sdf_primitive(geom_type, size, p + ez) - sdf_primitive(geom_type, size, p - ez))
    if wp.length(g) > 1.0e-12:
        return wp.normalize(g)
    return wp.vec3(0.0, 0.0, 1.0)
