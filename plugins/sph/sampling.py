"""Host-side sampling: morphs into liquid particles (cubic lattice) and boundary surfaces into
boundary particles (surface grid), Akinci boundary volumes, and the lattice-calibrated mass.

Everything is deterministic (no random sampling except trimesh's seeded even surface sampling).
"""

from __future__ import annotations

import math

import numpy as np
from polyphys import morphs as M
from polyphys.errors import OptionError
from polyphys.sampling import inside_mesh, inside_primitive
from polyphys.sampling import to_world as _to_world


# -- smoothing kernels (NumPy mirrors of kernels/fluid.py) ---------------------------------------
def kernel_w(r: np.ndarray, H: float, kind: str) -> np.ndarray:
    q = np.asarray(r, dtype=float) / H
    out = np.zeros_like(q)
    if kind == "wendland":
        s = 21.0 / (2.0 * math.pi * H ** 3)
        a = np.clip(1.0 - q, 0.0, None)
        return s * a ** 4 * (1.0 + 4.0 * q)
    s = 8.0 / (math.pi * H ** 3)
    inner = q <= 0.5
    outer = (q > 0.5) & (q < 1.0)
    out[inner] = s * (6.0 * q[inner] ** 3 - 6.0 * q[inner] ** 2 + 1.0)
    out[outer] = s * 2.0 * (1.0 - q[outer]) ** 3
    return out


def lattice_mass(rho: float, dx: float, H: float, kind: str) -> float:
    """Mass that gives an interior particle of the dx-lattice exactly density rho.

    m = ρ₀/Σ_k W(|k·dx|): the lattice sum differs from 1/dx³ by a few percent for a support of
    2dx, so m = ρ₀dx³ would start the liquid off its rest density and set it in motion."""
    n = int(math.ceil(H / dx)) + 1
    k = np.arange(-n, n + 1, dtype=float) * dx
    X, Y, Z = np.meshgrid(k, k, k, indexing="ij")
    r = np.sqrt(X ** 2 + Y ** 2 + Z ** 2)
    return rho / float(kernel_w(r, H, kind).sum())


# -- frames --------------------------------------------------------------------------------------

def _axis(n: int, dx: float) -> np.ndarray:
    return (np.arange(n) - (n - 1) / 2.0) * dx


def _lattice(extent: np.ndarray, dx: float) -> np.ndarray:
    """A cubic lattice of spacing dx centred at 0 filling the box of full size ``extent``."""
    n = [max(1, int(math.floor(e / dx + 1e-6))) for e in extent]
    g = np.meshgrid(*[_axis(k, dx) for k in n], indexing="ij")
    return np.stack([a.reshape(-1) for a in g], axis=1)


# -- liquids -------------------------------------------------------------------------------------
def sample_volume(morph, dx: float) -> np.ndarray:
    """Particle centres (n, 3) filling ``morph`` on a lattice of spacing dx, in world coordinates.

    Box: ⌊size/dx⌋ particles per axis, centred in the box (the liquid's volume is the lattice's,
    n·dx per axis). Sphere/Cylinder/Capsule: the lattice points inside the shape. Mesh: the lattice
    points inside the (watertight) mesh."""
    if isinstance(morph, M.Box):
        local = _lattice(np.asarray(morph.size), dx)
    elif isinstance(morph, M.Sphere):
        r = morph.radius
        local = _lattice(np.full(3, 2 * r + dx), dx)
        local = local[inside_primitive(morph, local)]
    elif isinstance(morph, M.Cylinder):
        r = morph.radius
        local = _lattice(np.array([2 * r + dx, 2 * r + dx, morph.height]), dx)
        local = local[inside_primitive(morph, local)]
    elif isinstance(morph, M.Capsule):
        r = morph.radius
        local = _lattice(np.array([2 * r + dx, 2 * r + dx, morph.height + 2 * r + dx]), dx)
        local = local[inside_primitive(morph, local)]
    elif isinstance(morph, M.Mesh):
        mesh = morph.load_trimesh()
        if not mesh.is_watertight:
            raise OptionError("Mesh morph for an SPH liquid must be watertight (closed) to be filled "
                              "with particles")
        lo, hi = mesh.bounds
        n = [max(1, int(math.floor((hi[k] - lo[k]) / dx))) for k in range(3)]
        g = np.meshgrid(*[lo[k] + (np.arange(n[k]) + 0.5) * dx for k in range(3)], indexing="ij")
        local = np.stack([a.reshape(-1) for a in g], axis=1)
        local = local[inside_mesh(local, np.asarray(mesh.vertices, float), np.asarray(mesh.faces, np.int64))]
    else:
        raise OptionError(f"an SPH Liquid cannot be sampled from a {type(morph).__name__} morph; "
                          f"allowed: Box, Sphere, Cylinder, Capsule, Mesh")
    if len(local) == 0:
        raise OptionError(f"{type(morph).__name__} morph is smaller than particle_size = {dx}: it "
                          f"holds no particle")
    return _to_world(morph, local)


# -- boundaries ----------------------------------------------------------------------------------
def _rect(center, u, v, su, sv, dx) -> np.ndarray:
    nu = max(1, int(round(su / dx)) + 1)
    nv = max(1, int(round(sv / dx)) + 1)
    a = np.linspace(-su / 2, su / 2, nu)
    b = np.linspace(-sv / 2, sv / 2, nv)
    A, B = np.meshgrid(a, b, indexing="ij")
    return np.asarray(center) + A.reshape(-1, 1) * np.asarray(u) + B.reshape(-1, 1) * np.asarray(v)


def box_surface(lo, hi, dx) -> np.ndarray:
    """Boundary particles on the six faces of the axis-aligned box [lo, hi] (spacing ≈ dx)."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    c, s = (lo + hi) / 2, hi - lo
    e = np.eye(3)
    pts = []
    for ax in range(3):
        u, v = (ax + 1) % 3, (ax + 2) % 3
        for side in (lo[ax], hi[ax]):
            cc = c.copy()
            cc[ax] = side
            pts.append(_rect(cc, e[u], e[v], s[u], s[v], dx))
    return np.unique(np.round(np.concatenate(pts), 9), axis=0)


def _plane_basis(n):
    n = np.asarray(n, float)
    t = np.array([1.0, 0, 0]) if abs(n[0]) < 0.9 else np.array([0, 1.0, 0])
    u = np.cross(n, t)
    u /= np.linalg.norm(u)
    return u, np.cross(n, u)


def sample_surface(morph, dx: float, lo, hi) -> np.ndarray:
    """Boundary particles of a static morph, clipped to the domain box.

    The layer lies dx/2 inside the solid (behind a plane, inside a box, sphere or mesh): the
    liquid's particle centres then rest dx/2 from the surface, as on the liquid's own lattice, and
    a particle clamped onto the surface never coincides with a boundary particle."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    if isinstance(morph, M.Plane):
        n = np.asarray(morph.normal)
        u, v = _plane_basis(n)
        centre = (lo + hi) / 2
        p0 = np.asarray(morph.pos)
        foot = centre - np.dot(centre - p0, n) * n - 0.5 * dx * n
        size = 2 * np.linalg.norm(hi - lo) + 2 * dx
        pts = _rect(foot, u, v, size, size, dx)
    elif isinstance(morph, M.Box):
        half = np.maximum(np.asarray(morph.size) / 2 - 0.5 * dx, 0.0)
        pts = _to_world(morph, box_surface(-half, half, dx))
    elif isinstance(morph, M.Sphere):
        r = max(morph.radius - 0.5 * dx, 0.5 * dx)
        n = max(8, int(math.ceil(4 * math.pi * r * r / (dx * dx))))
        k = np.arange(n) + 0.5
        phi = np.arccos(1 - 2 * k / n)
        th = math.pi * (1 + 5 ** 0.5) * k
        local = r * np.stack([np.cos(th) * np.sin(phi), np.sin(th) * np.sin(phi), np.cos(phi)], axis=1)
        pts = _to_world(morph, local)
    elif isinstance(morph, M.Mesh):
        import trimesh

        mesh = morph.load_trimesh()
        count = max(8, int(math.ceil(mesh.area / (dx * dx))))
        local, face = trimesh.sample.sample_surface_even(mesh, count, radius=0.8 * dx, seed=0)
        local = np.asarray(local) - 0.5 * dx * np.asarray(mesh.face_normals)[face]
        pts = _to_world(morph, local)
    else:
        raise OptionError(f"an SPH Boundary cannot be sampled from a {type(morph).__name__} morph; "
                          f"allowed: Plane, Box, Sphere, Mesh")
    tol = 1e-9 + 1e-6 * dx
    keep = np.all((pts >= lo - 0.5 * dx - tol) & (pts <= hi + 0.5 * dx + tol), axis=1)
    return pts[keep]


def wall_calibration(dx: float, H: float, kind: str) -> float:
    """Factor c on the Akinci volumes so that a liquid lattice particle dx/2 from a flat wall (whose
    boundary layer lies dx/2 behind the wall) has exactly the rest density.

    Akinci's V_b = 1/Σ_k W_bk makes one boundary layer count as a full liquid where it lies; a
    lattice particle one spacing away then sees more than ρ₀ and a liquid at rest is blown off the
    walls. Scaling by c (≈ 0.7 for the cubic spline at H = 2dx, where one layer of lattice volume
    dx³ is exact) removes that start-up jolt."""
    vol, v = _flat_wall(dx, H, kind)
    return vol / v


def viscous_rate(dx: float, H: float, kind: str) -> float:
    """λ/ν: the decay rate per unit kinematic viscosity of the fastest mode of the SPH Laplacian
    viscosity 2(d+2)ν Σⱼ Vⱼ(vᵢⱼ·xᵢⱼ)/(|xᵢⱼ|²+0.01H²)∇Wᵢⱼ on a lattice of spacing dx — the
    checkerboard velocity field (−1)^(i+j+k) along one axis. The explicit update is stable for
    h·λ ≤ 2 (cubic spline at H = 2dx: h ≤ 0.206·dx²/ν)."""
    n = int(math.ceil(H / dx)) + 1
    a = np.arange(-n, n + 1)
    grid = np.stack(np.meshgrid(a, a, a, indexing="ij"), -1).reshape(-1, 3)
    odd = grid.sum(1) % 2 == 1
    d = grid * dx
    r = np.linalg.norm(d, axis=1)
    keep = odd & (r > 0) & (r < H)
    d, r = d[keep], r[keep]
    eps = 1e-7 * dx
    dw = (kernel_w(r + eps, H, kind) - kernel_w(r - eps, H, kind)) / (2 * eps)
    vol = lattice_mass(1.0, dx, H, kind)
    return float(20.0 * np.sum(vol * d[:, 0] ** 2 * np.abs(dw) / (r * (r ** 2 + 0.01 * H * H))))


def flat_wall_volume(dx: float, H: float, kind: str) -> float:
    """The calibrated volume of a boundary particle in an infinite flat wall of spacing dx
    (``boundary_volumes`` of a site far from any edge)."""
    return _flat_wall(dx, H, kind)[0]


def _flat_wall(dx: float, H: float, kind: str) -> tuple[float, float]:
    """(calibrated volume, Akinci volume 1/Σ_k W_bk) of a site of an infinite flat wall of spacing
    dx: the calibrated volume gives a liquid lattice particle dx/2 from the wall (the boundary
    layer dx/2 behind it, on the lattice's x, y grid) exactly the rest density."""
    n = int(math.ceil(H / dx)) + 2
    a = np.arange(-n, n + 1) * dx
    B = np.stack(np.meshgrid(a, a, [-dx / 2], indexing="ij"), -1).reshape(-1, 3)
    F = np.stack(np.meshgrid(a, a, dx / 2 + np.arange(n) * dx, indexing="ij"), -1).reshape(-1, 3)
    x = np.array([0.0, 0.0, dx / 2])
    m = lattice_mass(1.0, dx, H, kind)
    rho_f = float((m * kernel_w(np.linalg.norm(F - x, axis=1), H, kind)).sum())
    w_b = float(kernel_w(np.linalg.norm(B - x, axis=1), H, kind).sum())
    return max(1.0 - rho_f, 0.0) / w_b, float(_akinci(B, H, kind)[len(B) // 2])


def _akinci(pts: np.ndarray, H: float, kind: str) -> np.ndarray:
    from scipy.spatial import cKDTree

    tree = cKDTree(pts)
    pairs = tree.query_pairs(H, output_type="ndarray")
    w0 = float(kernel_w(np.zeros(1), H, kind)[0])
    s = np.full(len(pts), w0)
    if len(pairs):
        w = kernel_w(np.linalg.norm(pts[pairs[:, 0]] - pts[pairs[:, 1]], axis=1), H, kind)
        np.add.at(s, pairs[:, 0], w)
        np.add.at(s, pairs[:, 1], w)
    return 1.0 / s


def boundary_volumes(pts: np.ndarray, dx: float, H: float, kind: str) -> np.ndarray:
    """Akinci et al. (2012) volumes V_b = c/Σ_k W(x_b − x_k) over the boundary particles (self
    included), with the flat-wall calibration c of ``wall_calibration``."""
    if len(pts) == 0:
        return np.zeros(0)
    return wall_calibration(dx, H, kind) * _akinci(pts, H, kind)
