"""Sources and body forces: emitters, scalar decay, buoyancy, vorticity confinement, viscosity.

Buoyancy after Fedkiw, Stam, Jensen, "Visual simulation of smoke" (SIGGRAPH 2001): f = (β(T - T_amb)
- α·s)·up; vorticity confinement (same paper): f = ε·dx·(N × ω), N = ∇|ω|/|∇|ω||, ω the curl of
the cell-centred velocity. Cell forces reach a face as the mean of its (one or two) cells.
Viscosity: implicit (I - ν h Δ) u = u* by Jacobi sweeps; faces outside the grid mirror the face
(zero normal gradient: free-slip walls), fixed faces (walls, obstacles) are Dirichlet values.
Generic over float32/float64.
"""

from typing import Any

import warp as wp

from .sample import storage_point

wp.set_module_options({"enable_backward": False})   # nothing here is differentiated (Capabilities: differentiable=False)

EMIT_SPHERE = wp.constant(0)
EMIT_BOX = wp.constant(1)


@wp.func
def inside_emitter(kind: int, size: Any, rot: Any, center: Any, x: Any):
    d = x - center
    if kind == EMIT_SPHERE:
        return wp.length(d) <= size[0]
    p = wp.quat_rotate_inv(rot, d)
    return wp.abs(p[0]) <= size[0] and wp.abs(p[1]) <= size[1] and wp.abs(p[2]) <= size[2]


@wp.kernel
def emit_cells(
    # Model:
    lo: Any,
    dx: Any,
    h: Any,
    density_keep: Any,
    temperature_keep: Any,
    ambient: Any,
    em_kind: wp.array(dtype=wp.int32),
    em_size: wp.array(dtype=Any),
    em_rot: wp.array(dtype=Any),
    # Data in:
    em_pos_in: wp.array2d(dtype=Any),
    em_rate_in: wp.array2d(dtype=Any),
    em_heat_in: wp.array2d(dtype=Any),
    # Data in/out:
    density: wp.array4d(dtype=Any),
    temperature: wp.array4d(dtype=Any),
):
    """Decay the scalars by exp(-decay·h) (``*_keep``), then add rate·h and heat·h inside every emitter."""
    env, i, j, k = wp.tid()
    half = type(dx)(0.5)
    x = storage_point(lo, dx, type(lo)(half, half, half), i, j, k)
    s = density[env, i, j, k] * density_keep
    t = ambient + (temperature[env, i, j, k] - ambient) * temperature_keep
    for e in range(em_kind.shape[0]):
        if inside_emitter(em_kind[e], em_size[e], em_rot[e], em_pos_in[env, e], x):
            s = s + em_rate_in[env, e] * h
            t = t + em_heat_in[env, e] * h
    density[env, i, j, k] = s
    temperature[env, i, j, k] = t


@wp.kernel
def emit_faces(
    # Model:
    axis: int,
    lo: Any,
    dx: Any,
    off: Any,
    em_kind: wp.array(dtype=wp.int32),
    em_flow: wp.array(dtype=wp.int32),
    em_size: wp.array(dtype=Any),
    em_rot: wp.array(dtype=Any),
    # Data in:
    em_pos_in: wp.array2d(dtype=Any),
    em_vel_in: wp.array2d(dtype=Any),
    # Data out:
    vel_out: wp.array4d(dtype=Any),
):
    """Faces (component ``axis``) inside an emitter with a set velocity take that velocity."""
    env, i, j, k = wp.tid()
    x = storage_point(lo, dx, off, i, j, k)
    for e in range(em_kind.shape[0]):
        if em_flow[e] != 0:
            if inside_emitter(em_kind[e], em_size[e], em_rot[e], em_pos_in[env, e], x):
                vel_out[env, i, j, k] = em_vel_in[env, e][axis]


@wp.func
def cell_velocity(u: wp.array4d(dtype=Any), v: wp.array4d(dtype=Any), w: wp.array4d(dtype=Any),
                  env: int, i: int, j: int, k: int):
    a = u[env, i, j, k]
    half = type(a)(0.5)
    return wp.vector(half * (a + u[env, i + 1, j, k]), half * (v[env, i, j, k] + v[env, i, j + 1, k]),
                     half * (w[env, i, j, k] + w[env, i, j, k + 1]))


@wp.kernel
def vorticity(
    # Model:
    inv_dx: Any,
    # Data in:
    u_in: wp.array4d(dtype=Any),
    v_in: wp.array4d(dtype=Any),
    w_in: wp.array4d(dtype=Any),
    # Data out:
    omega_out: wp.array4d(dtype=Any),
):
    """ω = ∇ × (cell-centred velocity), central differences (one-sided at the grid's edge)."""
    env, i, j, k = wp.tid()
    nx = omega_out.shape[1]
    ny = omega_out.shape[2]
    nz = omega_out.shape[3]
    ia = wp.max(i - 1, 0)
    ib = wp.min(i + 1, nx - 1)
    ja = wp.max(j - 1, 0)
    jb = wp.min(j + 1, ny - 1)
    ka = wp.max(k - 1, 0)
    kb = wp.min(k + 1, nz - 1)
    zero = inv_dx * type(inv_dx)(0.0)
    ddx = cell_velocity(u_in, v_in, w_in, env, ib, j, k) - cell_velocity(u_in, v_in, w_in, env, ia, j, k)
    ddy = cell_velocity(u_in, v_in, w_in, env, i, jb, k) - cell_velocity(u_in, v_in, w_in, env, i, ja, k)
    ddz = cell_velocity(u_in, v_in, w_in, env, i, j, kb) - cell_velocity(u_in, v_in, w_in, env, i, j, ka)
    sx = zero
    sy = zero
    sz = zero
    if ib > ia:
        sx = inv_dx / type(inv_dx)(ib - ia)
    if jb > ja:
        sy = inv_dx / type(inv_dx)(jb - ja)
    if kb > ka:
        sz = inv_dx / type(inv_dx)(kb - ka)
    # ω = (∂w/∂y - ∂v/∂z, ∂u/∂z - ∂w/∂x, ∂v/∂x - ∂u/∂y)
    omega_out[env, i, j, k] = type(omega_out[env, i, j, k])(
        ddy[2] * sy - ddz[1] * sz, ddz[0] * sz - ddx[2] * sx, ddx[1] * sx - ddy[0] * sy)


@wp.kernel
def cell_forces(
    # Model:
    up: Any,
    inv_dx: Any,
    dx: Any,
    alpha: Any,
    beta: Any,
    ambient: Any,
    epsilon: Any,
    # Data in:
    density_in: wp.array4d(dtype=Any),
    temperature_in: wp.array4d(dtype=Any),
    omega_in: wp.array4d(dtype=Any),
    # Data out:
    force_out: wp.array4d(dtype=Any),
):
    """Buoyancy plus vorticity confinement per cell (m/s²)."""
    env, i, j, k = wp.tid()
    f = up * (beta * (temperature_in[env, i, j, k] - ambient) - alpha * density_in[env, i, j, k])
    zero = dx * type(dx)(0.0)
    if epsilon > zero:
        nx = omega_in.shape[1]
        ny = omega_in.shape[2]
        nz = omega_in.shape[3]
        ia = wp.max(i - 1, 0)
        ib = wp.min(i + 1, nx - 1)
        ja = wp.max(j - 1, 0)
        jb = wp.min(j + 1, ny - 1)
        ka = wp.max(k - 1, 0)
        kb = wp.min(k + 1, nz - 1)
        gx = zero
        gy = zero
        gz = zero
        if ib > ia:
            gx = (wp.length(omega_in[env, ib, j, k]) - wp.length(omega_in[env, ia, j, k])) * inv_dx / type(dx)(ib - ia)
        if jb > ja:
            gy = (wp.length(omega_in[env, i, jb, k]) - wp.length(omega_in[env, i, ja, k])) * inv_dx / type(dx)(jb - ja)
        if kb > ka:
            gz = (wp.length(omega_in[env, i, j, kb]) - wp.length(omega_in[env, i, j, ka])) * inv_dx / type(dx)(kb - ka)
        g = type(up)(gx, gy, gz)
        gl = wp.length(g)
        if gl > type(dx)(1.0e-12) * inv_dx:
            f = f + (epsilon * dx) * wp.cross(g / gl, omega_in[env, i, j, k])
    force_out[env, i, j, k] = f


@wp.kernel
def add_face_force(
    # Model:
    axis: int,
    h: Any,
    # Data in:
    force_in: wp.array4d(dtype=Any),
    # Data in/out:
    vel: wp.array4d(dtype=Any),
):
    """vel (component ``axis``) += h · mean of the adjacent cells' force."""
    env, i, j, k = wp.tid()
    n = force_in.shape[1 + axis]
    idx = i
    ai = i - 1
    aj = j
    ak = k
    if axis == 1:
        idx = j
        ai = i
        aj = j - 1
    if axis == 2:
        idx = k
        ai = i
        ak = k - 1
    f = h * h * type(h)(0.0)
    c = 0
    if idx > 0:
        f = f + force_in[env, ai, aj, ak][axis]
        c = c + 1
    if idx < n:
        f = f + force_in[env, i, j, k][axis]
        c = c + 1
    vel[env, i, j, k] = vel[env, i, j, k] + h * f / type(h)(c)


@wp.func
def _nb(x: wp.array4d(dtype=Any), env: int, i: int, j: int, k: int, si: int, sj: int, sk: int):
    # the neighbour at (si, sj, sk), or the face itself outside the grid (mirror: zero normal gradient)
    if si < 0 or si >= x.shape[1] or sj < 0 or sj >= x.shape[2] or sk < 0 or sk >= x.shape[3]:
        return x[env, i, j, k]
    return x[env, si, sj, sk]


@wp.kernel
def viscosity_jacobi(
    # Model:
    a: Any,
    # Data in:
    rhs_in: wp.array4d(dtype=Any),
    fixed_in: wp.array4d(dtype=wp.int32),
    x_in: wp.array4d(dtype=Any),
    # Data out:
    x_out: wp.array4d(dtype=Any),
):
    """One Jacobi sweep of (1 + 6a) x - a Σ x_nb = rhs, a = ν h / dx²; fixed faces keep rhs."""
    env, i, j, k = wp.tid()
    if fixed_in[env, i, j, k] != 0:
        x_out[env, i, j, k] = rhs_in[env, i, j, k]
        return
    s = (_nb(x_in, env, i, j, k, i - 1, j, k) + _nb(x_in, env, i, j, k, i + 1, j, k)
         + _nb(x_in, env, i, j, k, i, j - 1, k) + _nb(x_in, env, i, j, k, i, j + 1, k)
         + _nb(x_in, env, i, j, k, i, j, k - 1) + _nb(x_in, env, i, j, k, i, j, k + 1))
    x_out[env, i, j, k] = (rhs_in[env, i, j, k] + a * s) / (type(a)(1.0) + type(a)(6.0) * a)


_declared: set = set()


def _types(precision: str):
    """Scalar, vec3 and quat of a precision ("32" or "64"), as SFSolver.build makes them."""
    if precision == "64":
        return wp.float64, wp.vec3d, wp.quatd
    return wp.float32, wp.vec3, wp.quat


def declare_overloads(precision: str) -> None:
    """The overloads of the scene precision's types of every kernel of this module (SFSolver.kernel_modules)."""
    if precision in _declared:
        return
    s, V, Q = _types(precision)
    a2, a4, v1, v2, v4 = (wp.array2d(dtype=s), wp.array4d(dtype=s), wp.array(dtype=V), wp.array2d(dtype=V),
                          wp.array4d(dtype=V))
    wp.overload(emit_cells, {"lo": V, "dx": s, "h": s, "density_keep": s, "temperature_keep": s, "ambient": s,
                             "em_size": v1, "em_rot": wp.array(dtype=Q), "em_pos_in": v2, "em_rate_in": a2,
                             "em_heat_in": a2, "density": a4, "temperature": a4})
    wp.overload(emit_faces, {"lo": V, "dx": s, "off": V, "em_size": v1, "em_rot": wp.array(dtype=Q), "em_pos_in": v2,
                             "em_vel_in": v2, "vel_out": a4})
    wp.overload(vorticity, {"inv_dx": s, "u_in": a4, "v_in": a4, "w_in": a4, "omega_out": v4})
    wp.overload(cell_forces, {"up": V, "inv_dx": s, "dx": s, "alpha": s, "beta": s, "ambient": s, "epsilon": s,
                              "density_in": a4, "temperature_in": a4, "omega_in": v4, "force_out": v4})
    wp.overload(add_face_force, {"h": s, "force_in": v4, "vel": a4})
    wp.overload(viscosity_jacobi, {"a": s, "rhs_in": a4, "x_in": a4, "x_out": a4})
    _declared.add(precision)
