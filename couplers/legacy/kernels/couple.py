"""The Legacy velocity response (docs/semantics.md §C1), one thread per velocity carrier."""

import warp as wp
from polyphys.description import GeomType
from polyphys.kernels.sdf import sdf_grid_query, sdf_hfield, sdf_normal, sdf_primitive

wp.set_module_options({"enable_backward": False})   # nothing here is differentiated


@wp.func
def geom_distance(
    g: int,
    pl: wp.vec3,
    geom_type: wp.array(dtype=wp.int32),
    geom_size: wp.array(dtype=wp.vec3),
    geom_grid: wp.array(dtype=wp.int32),
    grid_values: wp.array(dtype=float),
    grid_origin: wp.array(dtype=wp.vec3),
    grid_spacing: wp.array(dtype=float),
    grid_dims: wp.array(dtype=wp.vec3i),
    grid_offset: wp.array(dtype=wp.int32),
    geom_hfield: wp.array(dtype=wp.int32),
    hfield_heights: wp.array(dtype=float),
    hfield_shape: wp.array(dtype=wp.vec2i),
    hfield_extent: wp.array(dtype=wp.vec4),
    hfield_offset: wp.array(dtype=wp.int32),
    hfield_reach: wp.array(dtype=float),
):
    """(d, n) of geom g at pl (geom frame): the analytic SDF of a primitive (n left 0: the caller
    asks sdf_normal only where it acts), the packed grid of a mesh, the closest surface point of a
    heightfield; d = 1e10 for a mesh or heightfield without data."""
    d = float(1.0e10)
    nl = wp.vec3(0.0)
    if geom_type[g] == GeomType.MESH:
        gi = geom_grid[g]
        if gi >= 0:
            r = sdf_grid_query(grid_values, grid_origin[gi], grid_spacing[gi], grid_dims[gi], grid_offset[gi], pl)
            d = r[0]
            nl = wp.vec3(r[1], r[2], r[3])
    elif geom_type[g] == GeomType.HFIELD:
        hi = geom_hfield[g]
        if hi >= 0:
            r = sdf_hfield(hfield_heights, hfield_offset[hi], hfield_shape[hi], hfield_extent[hi],
                           hfield_reach[hi], pl)
            d = r[0]
            nl = wp.vec3(r[1], r[2], r[3])
    else:
        d = sdf_primitive(geom_type[g], geom_size[g], pl)
    return wp.vec4(d, nl[0], nl[1], nl[2])


@wp.kernel
def legacy_response(
    # Model:
    geom_link: wp.array(dtype=wp.int32),
    geom_type: wp.array(dtype=wp.int32),
    geom_size: wp.array(dtype=wp.vec3),
    geom_pos: wp.array(dtype=wp.vec3),
    geom_quat: wp.array(dtype=wp.quat),
    geom_friction: wp.array(dtype=float),
    geom_restitution: wp.array(dtype=float),
    geom_softness: wp.array(dtype=float),
    geom_grid: wp.array(dtype=wp.int32),
    grid_values: wp.array(dtype=float),
    grid_origin: wp.array(dtype=wp.vec3),
    grid_spacing: wp.array(dtype=float),
    grid_dims: wp.array(dtype=wp.vec3i),
    grid_offset: wp.array(dtype=wp.int32),
    geom_hfield: wp.array(dtype=wp.int32),
    hfield_heights: wp.array(dtype=float),
    hfield_shape: wp.array(dtype=wp.vec2i),
    hfield_extent: wp.array(dtype=wp.vec4),
    hfield_offset: wp.array(dtype=wp.int32),
    hfield_reach: wp.array(dtype=float),
    influence_cutoff: float,
    inv_h: float,
    h: float,
    # Data in:
    link_pos_in: wp.array2d(dtype=wp.vec3),
    link_quat_in: wp.array2d(dtype=wp.quat),
    link_com_in: wp.array2d(dtype=wp.vec3),
    link_vel_in: wp.array2d(dtype=wp.vec3),
    link_ang_in: wp.array2d(dtype=wp.vec3),
    carrier_pos_in: wp.array2d(dtype=wp.vec3),
    carrier_mass_in: wp.array2d(dtype=float),
    carrier_active_in: wp.array2d(dtype=wp.int32),
    # Data in/out:
    carrier_vel: wp.array2d(dtype=wp.vec3),
    # Data out (accumulated):
    force_out: wp.array2d(dtype=wp.vec3),
    torque_out: wp.array2d(dtype=wp.vec3),
):
    """For each geom in turn: d = SDF at the carrier (analytic for primitives, the packed grid
    ``geom_grid[g]`` for meshes, the closest point on the nearby surface triangles of heightfield
    ``geom_hfield[g]``), weight w = min(exp(-d/softness), 1); when
    d <= 0 or w > cutoff and the carrier approaches the surface (v_n < 0 relative to the rigid
    point velocity): v_n' = -e·v_n, |v_t'| = max(0, |v_t| + μ·v_n) along v_t, the new velocity is
    blended with the old by w, and the reaction -m·Δv/h (force on the link, torque about its CoM)
    is accumulated."""
    env, i = wp.tid()
    if carrier_active_in.shape[0] > 0:
        if carrier_active_in[env, i] == 0:
            return
    m = carrier_mass_in[env, i]
    if m <= 0.0:
        return
    x = carrier_pos_in[env, i]
    v = carrier_vel[env, i]
    changed = wp.int32(0)
    for g in range(geom_type.shape[0]):
        l = geom_link[g]
        lq = link_quat_in[env, l]
        gq = lq * geom_quat[g]
        gp = link_pos_in[env, l] + wp.quat_rotate(lq, geom_pos[g])
        pl = wp.quat_rotate_inv(gq, x - gp)
        r = geom_distance(g, pl, geom_type, geom_size, geom_grid, grid_values, grid_origin, grid_spacing,
                          grid_dims, grid_offset, geom_hfield, hfield_heights, hfield_shape, hfield_extent,
                          hfield_offset, hfield_reach)
        d = r[0]
        nl = wp.vec3(r[1], r[2], r[3])
        w = wp.min(wp.exp(-d / geom_softness[g]), 1.0)
        near = d <= 0.0 or w > influence_cutoff
        # speculative: beyond the band, a carrier that would cross the surface within this substep
        # (d + h·v_n < 0) is slowed to arrive at it, so nothing tunnels through a body thinner than
        # its travel per substep (docs/legacy.md, "Thin bodies and fast material")
        com = link_com_in[env, l]
        v_rigid = link_vel_in[env, l] + wp.cross(link_ang_in[env, l], x - com)
        rv = v - v_rigid
        if near or d < h * wp.length(rv):
            if geom_type[g] != GeomType.MESH and geom_type[g] != GeomType.HFIELD:
                nl = sdf_normal(geom_type[g], geom_size[g], pl)
            n = wp.quat_rotate(gq, nl)
            vn = wp.dot(rv, n)
            v_new = v
            acted = wp.int32(0)
            if near and vn < 0.0:
                vt = rv - vn * n
                vt_len = wp.length(vt)
                scale = 0.0
                if vt_len > 1.0e-12:
                    scale = wp.max(0.0, vt_len + geom_friction[g] * vn) / vt_len
                rv_new = vt * scale - geom_restitution[g] * vn * n
                v_new = w * (v_rigid + rv_new) + (1.0 - w) * v
                acted = wp.int32(1)
            elif not near and d + h * vn < 0.0:
                v_new = v - (vn + d * inv_h) * n
                acted = wp.int32(1)
            if acted != 0:
                f = -(m * inv_h) * (v_new - v)
                wp.atomic_add(force_out, env, l, f)
                wp.atomic_add(torque_out, env, l, wp.cross(x - com, f))
                v = v_new
                changed = wp.int32(1)
    if changed != 0:
        carrier_vel[env, i] = v


@wp.kernel
def project_points(
    # Model:
    geom_link: wp.array(dtype=wp.int32),
    geom_type: wp.array(dtype=wp.int32),
    geom_size: wp.array(dtype=wp.vec3),
    geom_pos: wp.array(dtype=wp.vec3),
    geom_quat: wp.array(dtype=wp.quat),
    geom_friction: wp.array(dtype=float),
    geom_grid: wp.array(dtype=wp.int32),
    grid_values: wp.array(dtype=float),
    grid_origin: wp.array(dtype=wp.vec3),
    grid_spacing: wp.array(dtype=float),
    grid_dims: wp.array(dtype=wp.vec3i),
    grid_offset: wp.array(dtype=wp.int32),
    geom_hfield: wp.array(dtype=wp.int32),
    hfield_heights: wp.array(dtype=float),
    hfield_shape: wp.array(dtype=wp.vec2i),
    hfield_extent: wp.array(dtype=wp.vec4),
    hfield_offset: wp.array(dtype=wp.int32),
    hfield_reach: wp.array(dtype=float),
    inv_h: float,
    # Data in:
    link_pos_in: wp.array2d(dtype=wp.vec3),
    link_quat_in: wp.array2d(dtype=wp.quat),
    link_com_in: wp.array2d(dtype=wp.vec3),
    link_vel_in: wp.array2d(dtype=wp.vec3),
    link_ang_in: wp.array2d(dtype=wp.vec3),
    point_mass_in: wp.array2d(dtype=float),
    point_active_in: wp.array2d(dtype=wp.int32),
    # Data in/out:
    point_pos: wp.array2d(dtype=wp.vec3),
    point_vel: wp.array2d(dtype=wp.vec3),
    # Data out (accumulated):
    force_out: wp.array2d(dtype=wp.vec3),
    torque_out: wp.array2d(dtype=wp.vec3),
):
    """The material points behind grid-node carriers (MPM particles, before P2G): a point inside a
    geom (d < 0) is moved to its surface along the SDF normal, x -= d·n, and its velocity relative
    to the rigid point velocity loses the part into the surface (with the geom's Coulomb friction on
    the tangential part, as the C1 response (docs/semantics.md) with e = 0); the reaction -m·Δv/h is
    accumulated (the move itself carries no momentum). The grid-node response keeps material out
    of bodies only up to the quadratic kernel's reach: nodes inside a body also carry material
    from outside it, and material crept up to a cell into bodies (docs/legacy.md, "Material inside
    bodies")."""
    env, i = wp.tid()
    if point_active_in[env, i] == 0:
        return
    m = point_mass_in[env, i]
    if m <= 0.0:
        return
    x = point_pos[env, i]
    v = point_vel[env, i]
    changed = wp.int32(0)
    for g in range(geom_type.shape[0]):
        l = geom_link[g]
        lq = link_quat_in[env, l]
        gq = lq * geom_quat[g]
        gp = link_pos_in[env, l] + wp.quat_rotate(lq, geom_pos[g])
        pl = wp.quat_rotate_inv(gq, x - gp)
        r = geom_distance(g, pl, geom_type, geom_size, geom_grid, grid_values, grid_origin, grid_spacing,
                          grid_dims, grid_offset, geom_hfield, hfield_heights, hfield_shape, hfield_extent,
                          hfield_offset, hfield_reach)
        d = r[0]
        if d < 0.0:
            nl = wp.vec3(r[1], r[2], r[3])
            if geom_type[g] != GeomType.MESH and geom_type[g] != GeomType.HFIELD:
                nl = sdf_normal(geom_type[g], geom_size[g], pl)
            n = wp.quat_rotate(gq, nl)
            x = x - d * n
            com = link_com_in[env, l]
            v_rigid = link_vel_in[env, l] + wp.cross(link_ang_in[env, l], x - com)
            rv = v - v_rigid
            vn = wp.dot(rv, n)
            changed = wp.int32(1)
            if vn < 0.0:
                # the C1 response (docs/semantics.md) without restitution: normal part removed, Coulomb friction on the
                # tangential part, |v_t'| = max(0, |v_t| + μ·v_n)
                vt = rv - vn * n
                vt_len = wp.length(vt)
                scale = 0.0
                if vt_len > 1.0e-12:
                    scale = wp.max(0.0, vt_len + geom_friction[g] * vn) / vt_len
                v_new = v_rigid + vt * scale
                f = -(m * inv_h) * (v_new - v)
                wp.atomic_add(force_out, env, l, f)
                wp.atomic_add(torque_out, env, l, wp.cross(x - com, f))
                v = v_new
    if changed != 0:
        point_pos[env, i] = x
        point_vel[env, i] = v


@wp.kernel
def apply_reaction(
    # Model:
    h: float,
    # Data in:
    force_in: wp.array2d(dtype=wp.vec3),
    torque_in: wp.array2d(dtype=wp.vec3),
    # Data out:
    rigid_force_out: wp.array2d(dtype=wp.vec3),
    rigid_torque_out: wp.array2d(dtype=wp.vec3),
    impulse_out: wp.array2d(dtype=wp.vec3),
    angular_impulse_out: wp.array2d(dtype=wp.vec3),
):
    """Add this substep's reaction to the rigid solver's coupling buffer and the step's impulse."""
    env, l = wp.tid()
    f = force_in[env, l]
    t = torque_in[env, l]
    if rigid_force_out.shape[0] > 0:
        rigid_force_out[env, l] = rigid_force_out[env, l] + f
        rigid_torque_out[env, l] = rigid_torque_out[env, l] + t
    impulse_out[env, l] = impulse_out[env, l] + h * f
    angular_impulse_out[env, l] = angular_impulse_out[env, l] + h * t
