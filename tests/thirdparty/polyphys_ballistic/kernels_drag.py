"""Warp kernels of the ``ballistic_drag`` coupler (coupler.py), float32.

A particle p within ``radius`` of a link's centre of mass c is dragged toward the velocity the
link's rigid motion has at the particle, u = v_c + ω × (x_p - c): over a substep h its relative
velocity decays exactly as dv/dt = -(v - u)/τ does, v ← u + (v - u)·exp(-h/τ). The momentum
m_p·Δv it gains is taken from the link: a force -m_p·Δv/h at x_p, i.e. that force on the CoM and
the torque (x_p - c) × force about it. Two launches, no atomics: the reaction per link (one thread
per env and link, summing its particles in index order), then the velocities (one thread per env
and particle); both find a particle's link with ``nearest_link``.
"""

import warp as wp

wp.set_module_options({"enable_backward": False})


@wp.func
def nearest_link(x: wp.vec3, link_com: wp.array2d(dtype=wp.vec3), env: int, n_links: int, radius: float):
    """The index of the link whose CoM is nearest to x within ``radius``, or -1."""
    best = wp.int32(-1)
    best_d = radius
    for k in range(n_links):
        d = wp.length(x - link_com[env, k])
        if d < best_d:
            best = k
            best_d = d
    return best


@wp.kernel
def drag_reaction(
    # Model:
    radius: float,
    decay: float,
    inv_h: float,
    # Data in:
    link_com_in: wp.array2d(dtype=wp.vec3),
    link_vel_in: wp.array2d(dtype=wp.vec3),
    link_ang_in: wp.array2d(dtype=wp.vec3),
    pos_in: wp.array2d(dtype=wp.vec3),
    vel_in: wp.array2d(dtype=wp.vec3),
    mass_in: wp.array2d(dtype=float),
    active_in: wp.array2d(dtype=wp.int32),
    # Data out:
    force_out: wp.array2d(dtype=wp.vec3),
    torque_out: wp.array2d(dtype=wp.vec3),
):
    """Per env and link: the force and torque (about the CoM) the dragged particles exert on it."""
    env, link = wp.tid()
    n_links = link_com_in.shape[1]
    c = link_com_in[env, link]
    f = wp.vec3(0.0)
    t = wp.vec3(0.0)
    for p in range(pos_in.shape[1]):
        x = pos_in[env, p]
        if active_in[env, p] != 0 and nearest_link(x, link_com_in, env, n_links, radius) == link:
            u = link_vel_in[env, link] + wp.cross(link_ang_in[env, link], x - c)
            dv = (u - vel_in[env, p]) * (1.0 - decay)
            fp = -mass_in[env, p] * dv * inv_h
            f = f + fp
            t = t + wp.cross(x - c, fp)
    force_out[env, link] = f
    torque_out[env, link] = t


@wp.kernel
def drag_particles(
    # Model:
    radius: float,
    decay: float,
    # Data in:
    link_com_in: wp.array2d(dtype=wp.vec3),
    link_vel_in: wp.array2d(dtype=wp.vec3),
    link_ang_in: wp.array2d(dtype=wp.vec3),
    pos_in: wp.array2d(dtype=wp.vec3),
    active_in: wp.array2d(dtype=wp.int32),
    vel_in: wp.array2d(dtype=wp.vec3),
    # Data out:
    vel_out: wp.array2d(dtype=wp.vec3),
):
    """Per env and particle: v ← u + (v - u)·exp(-h/τ) toward the nearest link in reach."""
    env, p = wp.tid()
    v = vel_in[env, p]
    x = pos_in[env, p]
    link = nearest_link(x, link_com_in, env, link_com_in.shape[1], radius)
    if active_in[env, p] != 0 and link >= 0:
        u = link_vel_in[env, link] + wp.cross(link_ang_in[env, link], x - link_com_in[env, link])
        v = u + (v - u) * decay
    vel_out[env, p] = v


@wp.kernel
def add_reaction(
    # Data in:
    force_in: wp.array2d(dtype=wp.vec3),
    torque_in: wp.array2d(dtype=wp.vec3),
    # Data out:
    coupling_force_out: wp.array2d(dtype=wp.vec3),
    coupling_torque_out: wp.array2d(dtype=wp.vec3),
):
    """Add this substep's reaction to the rigid solver's per-substep coupling buffer."""
    env, link = wp.tid()
    coupling_force_out[env, link] = coupling_force_out[env, link] + force_in[env, link]
    coupling_torque_out[env, link] = coupling_torque_out[env, link] + torque_in[env, link]
