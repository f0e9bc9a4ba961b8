"""Ground-truth kernels of the rigid sensors (plugins/sensors/rigid.py, docs/sensors.md).

One launch per sensor kind over (envs of the partition, sensors of that kind); every kernel reads
the ``RigidSensorData`` of the solver (core/views.py: the state of the step's last solve, world
frame, torques about link CoMs) and writes each sensor's outputs into its columns of the scene's
truth array: output k of sensor i goes to ``col[i] + slot[i, k]`` (slot −1: not asked for).

Frames: a sensor frame is a pose (pos, quat) fixed on a link (``link``, link-frame offset), or the
link's CoM (``com`` = 1: the position follows the per-env CoM; used for position-type outputs only).
``link`` −1 is the world frame. Point kinematics of a point p on a link with CoM c: v_p = v_c + ω ×
(p − c), a_p = a_c + α × (p − c) + ω × (ω × (p − c)).
"""

from typing import Any

import warp as wp

wp.set_module_options({"enable_backward": False})

SITE_SPHERE = wp.constant(0)
SITE_CAPSULE = wp.constant(1)
SITE_ELLIPSOID = wp.constant(2)
SITE_CYLINDER = wp.constant(3)
SITE_BOX = wp.constant(4)


@wp.func
def write3(truth: wp.array2d(dtype=Any), e: int, c: int, v: Any):
    truth[e, c] = v[0]
    truth[e, c + 1] = v[1]
    truth[e, c + 2] = v[2]


@wp.func
def frame_pos(link_pos: wp.array2d(dtype=Any), link_quat: wp.array2d(dtype=Any), link_com: wp.array2d(dtype=Any),
              e: int, link: int, lpos: Any, com: int):
    if link < 0:
        return lpos
    if com != 0:
        return link_com[e, link]
    return link_pos[e, link] + wp.quat_rotate(link_quat[e, link], lpos)


@wp.func
def frame_quat(link_quat: wp.array2d(dtype=Any), e: int, link: int, lquat: Any):
    if link < 0:
        return lquat
    return link_quat[e, link] * lquat


@wp.func
def point_vel(link_com: wp.array2d(dtype=Any), link_ang: wp.array2d(dtype=Any), link_vel: wp.array2d(dtype=Any),
              e: int, link: int, p: Any):
    if link < 0:
        return p * type(p[0])(0.0)
    return link_vel[e, link] + wp.cross(link_ang[e, link], p - link_com[e, link])


@wp.func
def ang_vel(link_ang: wp.array2d(dtype=Any), e: int, link: int, p: Any):
    if link < 0:
        return p * type(p[0])(0.0)
    return link_ang[e, link]


@wp.func
def point_acc(link_com: wp.array2d(dtype=Any), link_ang: wp.array2d(dtype=Any), link_acc_ang: wp.array2d(dtype=Any),
              link_acc: wp.array2d(dtype=Any), e: int, link: int, p: Any):
    if link < 0:
        return p * type(p[0])(0.0)
    r = p - link_com[e, link]
    w = link_ang[e, link]
    return link_acc[e, link] + wp.cross(link_acc_ang[e, link], r) + wp.cross(w, wp.cross(w, r))


@wp.kernel
def imu_sensor(
    # Model:
    gravity: Any,
    magnetic: wp.array(dtype=Any),
    link: wp.array(dtype=wp.int32),
    lpos: wp.array(dtype=Any),
    lquat: wp.array(dtype=Any),
    col: wp.array(dtype=wp.int32),
    slot: wp.array2d(dtype=wp.int32),
    # Data in:
    link_pos_in: wp.array2d(dtype=Any),
    link_quat_in: wp.array2d(dtype=Any),
    link_com_in: wp.array2d(dtype=Any),
    link_ang_in: wp.array2d(dtype=Any),
    link_vel_in: wp.array2d(dtype=Any),
    link_acc_ang_in: wp.array2d(dtype=Any),
    link_acc_in: wp.array2d(dtype=Any),
    # Data out:
    truth_out: wp.array2d(dtype=Any),
):
    """Outputs: acc (specific force a − g, sensor frame), gyro (ω, sensor frame), mag (the
    magnetic field in the sensor frame), vel (velocity of the sensor point, sensor frame)."""
    e, i = wp.tid()
    l = link[i]
    p = frame_pos(link_pos_in, link_quat_in, link_com_in, e, l, lpos[i], 0)
    q = frame_quat(link_quat_in, e, l, lquat[i])
    c = col[i]
    if slot[i, 0] >= 0:
        a = point_acc(link_com_in, link_ang_in, link_acc_ang_in, link_acc_in, e, l, p) - gravity
        write3(truth_out, e, c + slot[i, 0], wp.quat_rotate_inv(q, a))
    if slot[i, 1] >= 0:
        write3(truth_out, e, c + slot[i, 1], wp.quat_rotate_inv(q, ang_vel(link_ang_in, e, l, p)))
    if slot[i, 2] >= 0:
        write3(truth_out, e, c + slot[i, 2], wp.quat_rotate_inv(q, magnetic[i]))
    if slot[i, 3] >= 0:
        write3(truth_out, e, c + slot[i, 3], wp.quat_rotate_inv(q, point_vel(link_com_in, link_ang_in, link_vel_in, e, l, p)))


@wp.kernel
def force_torque_sensor(
    # Model:
    link: wp.array(dtype=wp.int32),
    lpos: wp.array(dtype=Any),
    lquat: wp.array(dtype=Any),
    col: wp.array(dtype=wp.int32),
    slot: wp.array2d(dtype=wp.int32),
    # Data in:
    link_pos_in: wp.array2d(dtype=Any),
    link_quat_in: wp.array2d(dtype=Any),
    link_com_in: wp.array2d(dtype=Any),
    cfrc_int_force_in: wp.array2d(dtype=Any),
    cfrc_int_torque_in: wp.array2d(dtype=Any),
    # Data out:
    truth_out: wp.array2d(dtype=Any),
):
    """The interaction wrench the parent exerts on the sensor's link (MuJoCo's cfrc_int), moved to
    the sensor point (T_p = T_c + (c − p) × F) and rotated into the sensor frame."""
    e, i = wp.tid()
    l = link[i]
    p = frame_pos(link_pos_in, link_quat_in, link_com_in, e, l, lpos[i], 0)
    q = frame_quat(link_quat_in, e, l, lquat[i])
    f = cfrc_int_force_in[e, l]
    c = col[i]
    if slot[i, 0] >= 0:
        write3(truth_out, e, c + slot[i, 0], wp.quat_rotate_inv(q, f))
    if slot[i, 1] >= 0:
        t = cfrc_int_torque_in[e, l] + wp.cross(link_com_in[e, l] - p, f)
        write3(truth_out, e, c + slot[i, 1], wp.quat_rotate_inv(q, t))


@wp.kernel
def frame_sensor(
    # Model:
    gravity: Any,
    link: wp.array(dtype=wp.int32),
    lpos: wp.array(dtype=Any),
    lquat: wp.array(dtype=Any),
    com: wp.array(dtype=wp.int32),
    ref_link: wp.array(dtype=wp.int32),
    ref_lpos: wp.array(dtype=Any),
    ref_lquat: wp.array(dtype=Any),
    col: wp.array(dtype=wp.int32),
    slot: wp.array2d(dtype=wp.int32),
    # Data in:
    link_pos_in: wp.array2d(dtype=Any),
    link_quat_in: wp.array2d(dtype=Any),
    link_com_in: wp.array2d(dtype=Any),
    link_ang_in: wp.array2d(dtype=Any),
    link_vel_in: wp.array2d(dtype=Any),
    link_acc_ang_in: wp.array2d(dtype=Any),
    link_acc_in: wp.array2d(dtype=Any),
    # Data out:
    truth_out: wp.array2d(dtype=Any),
):
    """Outputs (slot order): pos, quat (w x y z), xaxis, yaxis, zaxis, linvel, angvel, linacc,
    angacc of the object frame, relative to the reference frame (MuJoCo's frame* sensors: position
    and axes in the reference frame; velocities relative, with the reference's rotation, projected
    into it; accelerations in the world frame only, linacc minus gravity as MuJoCo's framelinacc)."""
    e, i = wp.tid()
    l = link[i]
    r = ref_link[i]
    p = frame_pos(link_pos_in, link_quat_in, link_com_in, e, l, lpos[i], com[i])
    q = frame_quat(link_quat_in, e, l, lquat[i])
    pr = frame_pos(link_pos_in, link_quat_in, link_com_in, e, r, ref_lpos[i], 0)
    qr = frame_quat(link_quat_in, e, r, ref_lquat[i])
    c = col[i]
    one = type(p[0])(1.0)
    zero = type(p[0])(0.0)
    if slot[i, 0] >= 0:
        write3(truth_out, e, c + slot[i, 0], wp.quat_rotate_inv(qr, p - pr))
    if slot[i, 1] >= 0:
        qq = wp.quat_inverse(qr) * q
        truth_out[e, c + slot[i, 1]] = qq[3]
        truth_out[e, c + slot[i, 1] + 1] = qq[0]
        truth_out[e, c + slot[i, 1] + 2] = qq[1]
        truth_out[e, c + slot[i, 1] + 3] = qq[2]
    for k in range(3):
        if slot[i, 2 + k] >= 0:
            ax = type(p)(zero, zero, zero)
            ax[k] = one
            write3(truth_out, e, c + slot[i, 2 + k], wp.quat_rotate_inv(qr, wp.quat_rotate(q, ax)))
    if slot[i, 5] >= 0 or slot[i, 6] >= 0:
        wr = ang_vel(link_ang_in, e, r, pr)
        vr = point_vel(link_com_in, link_ang_in, link_vel_in, e, r, pr)
        if slot[i, 5] >= 0:
            v = point_vel(link_com_in, link_ang_in, link_vel_in, e, l, p) - vr - wp.cross(wr, p - pr)
            write3(truth_out, e, c + slot[i, 5], wp.quat_rotate_inv(qr, v))
        if slot[i, 6] >= 0:
            write3(truth_out, e, c + slot[i, 6], wp.quat_rotate_inv(qr, ang_vel(link_ang_in, e, l, p) - wr))
    if slot[i, 7] >= 0:
        write3(truth_out, e, c + slot[i, 7], point_acc(link_com_in, link_ang_in, link_acc_ang_in, link_acc_in, e, l, p) - gravity)
    if slot[i, 8] >= 0:
        a = p * zero
        if l >= 0:
            a = link_acc_ang_in[e, l]
        write3(truth_out, e, c + slot[i, 8], a)


@wp.kernel
def joint_sensor(
    # Model:
    start: wp.array(dtype=wp.int32),
    q_start: wp.array(dtype=wp.int32),
    nq: wp.array(dtype=wp.int32),
    dof_start: wp.array(dtype=wp.int32),
    nv: wp.array(dtype=wp.int32),
    col: wp.array(dtype=wp.int32),
    slot: wp.array2d(dtype=wp.int32),
    # Data in:
    qpos_in: wp.array2d(dtype=Any),
    qvel_in: wp.array2d(dtype=Any),
    qfrc_actuator_in: wp.array2d(dtype=Any),
    qfrc_constraint_in: wp.array2d(dtype=Any),
    # Data out:
    truth_out: wp.array2d(dtype=Any),
):
    """Outputs: pos (the joints' q), vel (their dof velocities), actuator_force (qfrc_actuator_in on
    their dofs), constraint_force (qfrc_constraint_in on their dofs); joints start[i]..start[i+1]."""
    e, i = wp.tid()
    c = col[i]
    s0 = slot[i, 0]
    s1 = slot[i, 1]
    s2 = slot[i, 2]
    s3 = slot[i, 3]
    oq = c + s0
    ov = int(0)
    for j in range(start[i], start[i + 1]):
        if s0 >= 0:
            q0 = q_start[j]
            for k in range(nq[j]):
                truth_out[e, oq + k] = qpos_in[e, q0 + k]
            oq = oq + nq[j]
        d0 = dof_start[j]
        for k in range(nv[j]):
            if s1 >= 0:
                truth_out[e, c + s1 + ov + k] = qvel_in[e, d0 + k]
            if s2 >= 0:
                truth_out[e, c + s2 + ov + k] = qfrc_actuator_in[e, d0 + k]
            if s3 >= 0:
                truth_out[e, c + s3 + ov + k] = qfrc_constraint_in[e, d0 + k]
        ov = ov + nv[j]


@wp.kernel
def actuator_sensor(
    # Model:
    start: wp.array(dtype=wp.int32),
    act: wp.array(dtype=wp.int32),
    col: wp.array(dtype=wp.int32),
    # Data in:
    act_force_in: wp.array2d(dtype=Any),
    # Data out:
    truth_out: wp.array2d(dtype=Any),
):
    """Output: force (each actuator's scalar output force, MuJoCo's actuator_force)."""
    e, i = wp.tid()
    for j in range(start[i], start[i + 1]):
        truth_out[e, col[i] + j - start[i]] = act_force_in[e, act[j]]


@wp.kernel
def subtree_sensor(
    # Model:
    start: wp.array(dtype=wp.int32),
    links: wp.array(dtype=wp.int32),
    col: wp.array(dtype=wp.int32),
    slot: wp.array2d(dtype=wp.int32),
    # Data in:
    link_quat_in: wp.array2d(dtype=Any),
    link_com_in: wp.array2d(dtype=Any),
    link_ang_in: wp.array2d(dtype=Any),
    link_vel_in: wp.array2d(dtype=Any),
    link_mass_in: wp.array2d(dtype=Any),
    link_inertia_in: wp.array2d(dtype=Any),
    # Data out:
    truth_out: wp.array2d(dtype=Any),
):
    """Outputs over the links start[i]..start[i+1] of a subtree: com (mass-weighted CoM), linvel
    (mass-weighted CoM velocity), angmom (angular momentum about the subtree CoM: Σ I_w·ω + m·(c −
    C) × (v − V)), world frame (MuJoCo's subtreecom/linvel/angmom)."""
    e, i = wp.tid()
    l0 = links[start[i]]
    zero = link_com_in[e, l0] * type(link_mass_in[e, l0])(0.0)
    mt = type(link_mass_in[e, l0])(0.0)
    mc = zero
    mv = zero
    for j in range(start[i], start[i + 1]):
        l = links[j]
        m = link_mass_in[e, l]
        mt = mt + m
        mc = mc + link_com_in[e, l] * m
        mv = mv + link_vel_in[e, l] * m
    cc = link_com_in[e, l0]
    vv = zero
    if mt > type(mt)(1.0e-15):
        cc = mc / mt
        vv = mv / mt
    lm = zero
    for j in range(start[i], start[i + 1]):
        l = links[j]
        m = link_mass_in[e, l]
        q = link_quat_in[e, l]
        w = link_ang_in[e, l]
        iw = wp.quat_rotate(q, link_inertia_in[e, l] * wp.quat_rotate_inv(q, w))
        lm = lm + iw + wp.cross(link_com_in[e, l] - cc, link_vel_in[e, l] - vv) * m
    c = col[i]
    if slot[i, 0] >= 0:
        write3(truth_out, e, c + slot[i, 0], cc)
    if slot[i, 1] >= 0:
        write3(truth_out, e, c + slot[i, 1], vv)
    if slot[i, 2] >= 0:
        write3(truth_out, e, c + slot[i, 2], lm)


@wp.kernel
def contact_sensor(
    # Model:
    start: wp.array(dtype=wp.int32),
    links: wp.array(dtype=wp.int32),
    col: wp.array(dtype=wp.int32),
    # Data in:
    n_contacts_in: wp.array(dtype=wp.int32),
    contact_link_in: wp.array3d(dtype=wp.int32),
    # Data out:
    truth_out: wp.array2d(dtype=Any),
):
    """Output: in_contact (1 per link that is a side of a contact of the solve, else 0)."""
    e, i = wp.tid()
    one = type(truth_out[e, col[i]])(1.0)
    for j in range(start[i], start[i + 1]):
        l = links[j]
        hit = one * type(one)(0.0)
        for k in range(n_contacts_in[e]):
            if contact_link_in[e, k, 0] == l or contact_link_in[e, k, 1] == l:
                hit = one
        truth_out[e, col[i] + j - start[i]] = hit


@wp.kernel
def contact_force_sensor(
    # Model:
    link: wp.array(dtype=wp.int32),
    ref_mode: wp.array(dtype=wp.int32),
    ref_lpos: wp.array(dtype=Any),
    ref_lquat: wp.array(dtype=Any),
    local: wp.array(dtype=wp.int32),
    col: wp.array(dtype=wp.int32),
    slot: wp.array2d(dtype=wp.int32),
    # Data in:
    link_pos_in: wp.array2d(dtype=Any),
    link_quat_in: wp.array2d(dtype=Any),
    link_com_in: wp.array2d(dtype=Any),
    link_contact_force_in: wp.array2d(dtype=Any),
    link_contact_torque_in: wp.array2d(dtype=Any),
    link_impulse_force_in: wp.array2d(dtype=Any),
    link_impulse_torque_in: wp.array2d(dtype=Any),
    # Data out:
    truth_out: wp.array2d(dtype=Any),
):
    """Outputs: force, torque (net contact wrench on the link, torque about the reference point:
    ref_mode 0 the CoM, 1 the link origin, 2 the point ref_lpos of the link frame), in the world
    frame (local 0) or the reference frame's axes (local 1: the link frame rotated by ref_lquat);
    impulse, angular_impulse: Σ h·f and Σ h·τ_CoM over the step's substeps (world)."""
    e, i = wp.tid()
    l = link[i]
    f = link_contact_force_in[e, l]
    c = link_com_in[e, l]
    p = c
    if ref_mode[i] == 1:
        p = link_pos_in[e, l]
    elif ref_mode[i] == 2:
        p = link_pos_in[e, l] + wp.quat_rotate(link_quat_in[e, l], ref_lpos[i])
    t = link_contact_torque_in[e, l] + wp.cross(c - p, f)
    q = link_quat_in[e, l] * ref_lquat[i]
    if local[i] != 0:
        f = wp.quat_rotate_inv(q, f)
        t = wp.quat_rotate_inv(q, t)
    o = col[i]
    if slot[i, 0] >= 0:
        write3(truth_out, e, o + slot[i, 0], f)
    if slot[i, 1] >= 0:
        write3(truth_out, e, o + slot[i, 1], t)
    if slot[i, 2] >= 0:
        write3(truth_out, e, o + slot[i, 2], link_impulse_force_in[e, l])
    if slot[i, 3] >= 0:
        write3(truth_out, e, o + slot[i, 3], link_impulse_torque_in[e, l])


# -- touch: MuJoCo's mju_rayGeom on the site's zone ------------------------------------------------
@wp.func
def ray_quadratic(a: Any, b: Any, c: Any):
    """Smallest x >= 0 with a·x² + 2·b·x + c = 0, or −1."""
    det = b * b - a * c
    if det < type(a)(1.0e-15):
        return type(a)(-1.0)
    det = wp.sqrt(det)
    x1 = (-b - det) / a
    x2 = (-b + det) / a
    if x1 >= type(a)(0.0):
        return x1
    if x2 >= type(a)(0.0):
        return x2
    return type(a)(-1.0)


@wp.func
def ray_sphere_local(p: Any, v: Any, r2: Any):
    return ray_quadratic(wp.dot(v, v), wp.dot(v, p), wp.dot(p, p) - r2)


@wp.func
def keep_min(x: Any, sol: Any):
    if sol >= type(x)(0.0) and (x < type(x)(0.0) or sol < x):
        return sol
    return x


@wp.func
def ray_zone(typ: int, size: Any, p: Any, v: Any):
    """Distance along the ray p + x·v (zone frame) to the zone's surface, or −1 (MuJoCo's ray_*)."""
    zero = type(size[0])(0.0)
    one = type(size[0])(1.0)
    neg = -one
    if typ == SITE_SPHERE:
        return ray_sphere_local(p, v, size[0] * size[0])
    if typ == SITE_ELLIPSOID:
        s = type(size)(one / size[0], one / size[1], one / size[2])
        ps = wp.cw_mul(p, s)
        vs = wp.cw_mul(v, s)
        return ray_sphere_local(ps, vs, one)
    if typ == SITE_BOX:
        if ray_sphere_local(p, v, wp.dot(size, size)) < zero:
            return neg
        x = neg
        for i in range(3):
            if wp.abs(v[i]) > type(zero)(1.0e-15):
                for side in range(2):
                    sgn = type(zero)(2.0 * float(side) - 1.0)
                    sol = (sgn * size[i] - p[i]) / v[i]
                    if sol >= zero:
                        ok = int(1)
                        for k in range(3):
                            if k != i and wp.abs(p[k] + sol * v[k]) > size[k]:
                                ok = 0
                        if ok != 0:
                            x = keep_min(x, sol)
        return x
    # capsule, cylinder: radius size[0], half length size[1] along z
    r = size[0]
    hl = size[1]
    if typ == SITE_CAPSULE:
        bound = r + hl
    else:
        bound = wp.sqrt(r * r + hl * hl)
    if ray_sphere_local(p, v, bound * bound) < zero:
        return neg
    x = neg
    a = v[0] * v[0] + v[1] * v[1]
    if a > type(zero)(1.0e-15):
        b = v[0] * p[0] + v[1] * p[1]
        c = p[0] * p[0] + p[1] * p[1] - r * r
        det = b * b - a * c
        if det >= zero:
            det = wp.sqrt(det)
            for k in range(2):
                sol = (-b - det) / a
                if k == 1:
                    sol = (-b + det) / a
                if sol >= zero and wp.abs(p[2] + sol * v[2]) <= hl:
                    x = keep_min(x, sol)
    if typ == SITE_CYLINDER:
        if wp.abs(v[2]) > type(zero)(1.0e-15):
            for side in range(2):
                sgn = type(zero)(2.0 * float(side) - 1.0)
                sol = (sgn * hl - p[2]) / v[2]
                if sol >= zero:
                    xx = p[0] + sol * v[0]
                    yy = p[1] + sol * v[1]
                    if xx * xx + yy * yy <= r * r:
                        x = keep_min(x, sol)
        return x
    for side in range(2):
        sgn = type(zero)(2.0 * float(side) - 1.0)
        pc = p - type(p)(zero, zero, sgn * hl)
        sol = ray_sphere_local(pc, v, r * r)
        if sol >= zero and sgn * (p[2] + sol * v[2]) >= hl:
            x = keep_min(x, sol)
    return x


@wp.kernel
def touch_sensor(
    # Model:
    link: wp.array(dtype=wp.int32),
    lpos: wp.array(dtype=Any),
    lquat: wp.array(dtype=Any),
    zone_type: wp.array(dtype=wp.int32),
    zone_size: wp.array(dtype=Any),
    col: wp.array(dtype=wp.int32),
    # Data in:
    link_pos_in: wp.array2d(dtype=Any),
    link_quat_in: wp.array2d(dtype=Any),
    n_contacts_in: wp.array(dtype=wp.int32),
    contact_pos_in: wp.array2d(dtype=Any),
    contact_frame_in: wp.array2d(dtype=Any),
    contact_wrench_in: wp.array3d(dtype=Any),
    contact_link_in: wp.array3d(dtype=wp.int32),
    # Data out:
    truth_out: wp.array2d(dtype=Any),
):
    """Output: touch — Σ normal force of the contacts of the sensor's link whose normal force is
    positive and whose ray from the contact point, along the normal away from the link, meets the
    site's zone (MuJoCo's touch sensor; adhesive, non-positive normals are skipped)."""
    e, i = wp.tid()
    l = link[i]
    p0 = link_pos_in[e, l] + wp.quat_rotate(link_quat_in[e, l], lpos[i])
    q = link_quat_in[e, l] * lquat[i]
    total = zone_size[i][0] * type(zone_size[i][0])(0.0)
    for k in range(n_contacts_in[e]):
        la = contact_link_in[e, k, 0]
        lb = contact_link_in[e, k, 1]
        if la != l and lb != l:
            continue
        fn = contact_wrench_in[e, k, 0]
        if fn <= type(fn)(0.0):
            continue
        fr = contact_frame_in[e, k]
        ray = type(p0)(fr[0, 0], fr[0, 1], fr[0, 2])       # normal from B to A
        if la == l:
            ray = -ray
        pl = wp.quat_rotate_inv(q, contact_pos_in[e, k] - p0)
        vl = wp.quat_rotate_inv(q, ray)
        if ray_zone(zone_type[i], zone_size[i], pl, vl) >= type(fn)(0.0):
            total = total + fn
    truth_out[e, col[i]] = total


_declared: set = set()


def declare_overloads(precision: str) -> None:
    """The float32 ("32") or float64 ("64") overloads of this module's kernels (the sensor's
    ``kernel_modules``): a scene compiles only its own precision."""
    if precision in _declared:
        return
    s = wp.float64 if precision == "64" else wp.float32
    V = wp.types.vector(3, s)
    Q = wp.types.quaternion(s)
    M = wp.types.matrix((3, 3), s)
    a2, v2, q2, v1, q1 = (wp.array2d(dtype=s), wp.array2d(dtype=V), wp.array2d(dtype=Q), wp.array(dtype=V),
                          wp.array(dtype=Q))
    kin = {"link_pos_in": v2, "link_quat_in": q2, "link_com_in": v2, "link_ang_in": v2, "link_vel_in": v2,
           "link_acc_ang_in": v2, "link_acc_in": v2, "truth_out": a2}
    wp.overload(imu_sensor, {"gravity": V, "magnetic": v1, "lpos": v1, "lquat": q1, **kin})
    wp.overload(frame_sensor, {"gravity": V, "lpos": v1, "lquat": q1, "ref_lpos": v1, "ref_lquat": q1, **kin})
    wp.overload(force_torque_sensor, {"lpos": v1, "lquat": q1, "link_pos_in": v2, "link_quat_in": q2, "link_com_in": v2,
                                      "cfrc_int_force_in": v2, "cfrc_int_torque_in": v2, "truth_out": a2})
    wp.overload(joint_sensor, {"qpos_in": a2, "qvel_in": a2, "qfrc_actuator_in": a2, "qfrc_constraint_in": a2,
                               "truth_out": a2})
    wp.overload(actuator_sensor, {"act_force_in": a2, "truth_out": a2})
    wp.overload(subtree_sensor, {"link_quat_in": q2, "link_com_in": v2, "link_ang_in": v2, "link_vel_in": v2,
                                 "link_mass_in": a2, "link_inertia_in": wp.array2d(dtype=M), "truth_out": a2})
    wp.overload(contact_sensor, {"truth_out": a2})
    wp.overload(contact_force_sensor, {"ref_lpos": v1, "ref_lquat": q1, "link_pos_in": v2, "link_quat_in": q2,
                                       "link_com_in": v2, "link_contact_force_in": v2, "link_contact_torque_in": v2,
                                       "link_impulse_force_in": v2, "link_impulse_torque_in": v2, "truth_out": a2})
    wp.overload(touch_sensor, {"lpos": v1, "lquat": q1, "zone_size": v1, "link_pos_in": v2, "link_quat_in": q2,
                               "contact_pos_in": v2, "contact_frame_in": wp.array2d(dtype=M),
                               "contact_wrench_in": wp.array3d(dtype=s), "truth_out": a2})
    _declared.add(precision)
