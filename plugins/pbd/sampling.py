"""Host-side geometry of the PBD plugin: volume sampling of morphs into particles, cloth and tet
topology (edges, bending pairs, masses), input checks, and greedy graph colouring.

All of it is NumPy, run once at build; nothing here touches Warp.
"""

from __future__ import annotations

import warnings

import numpy as np
from polyphys import morphs as M
from polyphys import sampling
from polyphys.errors import OptionError, PolyphysWarning
from polyphys.sampling import inside_mesh, inside_primitive


def to_world(morph, local: np.ndarray) -> np.ndarray:
    return sampling.to_world(morph, local)


def grid_cloth(size=(1.0, 1.0), res=(32, 32), pos=(0.0, 0.0, 1.0), euler=None) -> M.Mesh:
    """A rectangular cloth Mesh morph of res[0] x res[1] vertices spanning size (m) in its local
    x-y plane, centred at ``pos``; cells split into two triangles along alternating diagonals."""
    nx, ny = int(res[0]), int(res[1])
    if nx < 2 or ny < 2:
        raise OptionError(f"grid_cloth res = {res!r}: need at least 2 x 2 vertices")
    xs = np.linspace(-size[0] / 2, size[0] / 2, nx)
    ys = np.linspace(-size[1] / 2, size[1] / 2, ny)
    X, Y = np.meshgrid(xs, ys, indexing="xy")
    verts = np.stack([X.ravel(), Y.ravel(), np.zeros(nx * ny)], axis=1)
    faces = []
    for j in range(ny - 1):
        for i in range(nx - 1):
            a, b, c, d = j * nx + i, j * nx + i + 1, (j + 1) * nx + i, (j + 1) * nx + i + 1
            if (i + j) % 2 == 0:
                faces += [(a, b, d), (a, d, c)]
            else:
                faces += [(a, b, c), (b, d, c)]
    return M.Mesh(vertices=verts, faces=np.asarray(faces), pos=pos, euler=euler)


def sample_volume(morph, spacing: float) -> np.ndarray:
    """World positions of a cubic lattice of ``spacing`` filling the morph's volume (cell centres),
    in the morph's local frame, then placed by its pose."""
    if isinstance(morph, M.Box):
        half = np.asarray(morph.size) / 2
        lo, hi = -half, half
    elif isinstance(morph, M.Sphere):
        lo, hi = -np.full(3, morph.radius), np.full(3, morph.radius)
    elif isinstance(morph, M.Cylinder):
        r, hh = morph.radius, morph.height / 2
        lo, hi = np.array([-r, -r, -hh]), np.array([r, r, hh])
    elif isinstance(morph, M.Capsule):
        r, hh = morph.radius, morph.height / 2 + morph.radius
        lo, hi = np.array([-r, -r, -hh]), np.array([r, r, hh])
    elif isinstance(morph, M.Mesh):
        mesh = morph.load_trimesh()
        lo, hi = mesh.bounds
    else:
        raise OptionError(f"PBD cannot sample a {type(morph).__name__} morph into particles; allowed: "
                          f"Box, Sphere, Cylinder, Capsule, closed Mesh")
    n = np.floor((hi - lo) / spacing + 1e-9).astype(int)
    if np.any(n < 1):
        raise OptionError(f"{type(morph).__name__} is smaller than particle_size={spacing} along axes "
                          f"{np.nonzero(n < 1)[0].tolist()}: no particle fits")
    offs = lo + ((hi - lo) - n * spacing) / 2 + spacing / 2
    axes = [offs[k] + spacing * np.arange(n[k]) for k in range(3)]
    Z, Y, X = np.meshgrid(axes[2], axes[1], axes[0], indexing="ij")
    p = np.stack([X.ravel(), Y.ravel(), Z.ravel()], axis=1)
    if isinstance(morph, (M.Sphere, M.Cylinder, M.Capsule)):
        p = p[inside_primitive(morph, p)]
    elif isinstance(morph, M.Mesh):
        if not mesh.is_watertight:
            raise OptionError("Mesh morph for a PBD volume material must be a closed (watertight) "
                              "triangle mesh, or a tetrahedral mesh (faces (m, 4)) for Elastic")
        p = p[inside_mesh(p, np.asarray(mesh.vertices, float), np.asarray(mesh.faces, np.int64))]
    if len(p) == 0:
        raise OptionError(f"{type(morph).__name__} morph holds no particle at particle_size={spacing}")
    return to_world(morph, p)


# -- cloth ----------------------------------------------------------------------------------------
def cloth_topology(verts: np.ndarray, tris: np.ndarray, name: str):
    """Check a cloth mesh and derive its edges, bending quads and vertex areas.

    Returns (edges (E, 2), bends (B, 4) as (opposite1, opposite2, edge0, edge1), vertex_area (V,)).
    Raises on degenerate triangles; warns naming non-manifold edges (no bending across them).
    """
    tris = np.asarray(tris, dtype=np.int64)
    if tris.ndim != 2 or tris.shape[1] != 3:
        raise OptionError(f"cloth {name!r}: faces shape {tris.shape}: expected (m, 3) triangles")
    a, b, c = verts[tris[:, 0]], verts[tris[:, 1]], verts[tris[:, 2]]
    area = 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)
    scale = max(np.ptp(verts, axis=0).max(), 1e-12)
    bad = np.nonzero(area <= 1e-10 * scale * scale)[0]
    if bad.size:
        raise OptionError(f"cloth {name!r} has {bad.size} degenerate (zero-area) triangle(s) "
                          f"{bad[:10].tolist()} (vertices {tris[bad[:3]].tolist()}); every triangle "
                          f"needs three distinct, non-collinear vertices")
    used = np.zeros(len(verts), bool)
    used[tris.ravel()] = True
    if not used.all():
        raise OptionError(f"cloth {name!r}: vertices {np.nonzero(~used)[0][:10].tolist()} belong to no "
                          f"triangle; remove them")
    vertex_area = np.zeros(len(verts))
    for k in range(3):
        np.add.at(vertex_area, tris[:, k], area / 3.0)
    # edges -> incident triangles
    e = np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]])
    opp = np.concatenate([tris[:, 2], tris[:, 0], tris[:, 1]])
    e_sorted = np.sort(e, axis=1)
    uniq, inv, counts = np.unique(e_sorted, axis=0, return_inverse=True, return_counts=True)
    inv = inv.reshape(-1)
    nonmanifold = uniq[counts > 2]
    if len(nonmanifold):
        warnings.warn(f"cloth {name!r} is non-manifold: edge(s) {nonmanifold[:10].tolist()}"
                      f"{' ...' if len(nonmanifold) > 10 else ''} are shared by more than two triangles; "
                      f"no bending constraint acts across them", PolyphysWarning, stacklevel=4)
    order = np.argsort(inv, kind="stable")
    bends = []
    starts = np.concatenate([[0], np.cumsum(counts)])
    for u in np.nonzero(counts == 2)[0]:
        k0, k1 = order[starts[u]], order[starts[u] + 1]
        bends.append((opp[k0], opp[k1], e[k0, 0], e[k0, 1]))
    bends = np.asarray(bends, dtype=np.int64).reshape(-1, 4)
    return uniq.astype(np.int64), bends, vertex_area


def dihedral_angle(x: np.ndarray, bends: np.ndarray) -> np.ndarray:
    """Signed dihedral angles of bending quads (same convention as the Warp kernel)."""
    x1, x2, x3, x4 = (x[bends[:, k]] for k in range(4))
    n1 = np.cross(x3 - x1, x4 - x1)
    n2 = np.cross(x4 - x2, x3 - x2)
    n1 /= np.linalg.norm(n1, axis=1, keepdims=True)
    n2 /= np.linalg.norm(n2, axis=1, keepdims=True)
    e = x4 - x3
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    return np.arctan2(np.einsum("ij,ij->i", np.cross(n1, n2), e), np.einsum("ij,ij->i", n1, n2))


# -- tetrahedra -----------------------------------------------------------------------------------
def tet_topology(verts: np.ndarray, tets: np.ndarray, name: str):
    """Orient tets positively, reject degenerate ones. Returns (tets, rest volumes, edges)."""
    tets = np.asarray(tets, dtype=np.int64).copy()
    x = [verts[tets[:, k]] for k in range(4)]
    vol = np.einsum("ij,ij->i", np.cross(x[1] - x[0], x[2] - x[0]), x[3] - x[0]) / 6.0
    scale = max(np.ptp(verts, axis=0).max(), 1e-12)
    bad = np.nonzero(np.abs(vol) <= 1e-10 * scale ** 3)[0]
    if bad.size:
        raise OptionError(f"elastic {name!r} has {bad.size} degenerate (zero-volume) tetrahedra "
                          f"{bad[:10].tolist()} (vertices {tets[bad[:3]].tolist()}); every tet needs "
                          f"four non-coplanar vertices")
    neg = vol < 0
    tets[neg, 2], tets[neg, 3] = tets[neg, 3].copy(), tets[neg, 2].copy()
    vol = np.abs(vol)
    pairs = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    e = np.concatenate([np.sort(tets[:, list(p)], axis=1) for p in pairs])
    return tets, vol, np.unique(e, axis=0)


# -- colouring ------------------------------------------------------------------------------------
def greedy_colour(cons: np.ndarray, n_particles: int) -> tuple[np.ndarray, np.ndarray]:
    """Greedy colouring of constraints (rows of particle indices) so that no two constraints of one
    colour share a particle. Returns (order, colour_offsets): constraints sorted by colour (stable,
    so deterministic) and offsets of each colour in that order (len = n_colours + 1)."""
    m = len(cons)
    if m == 0:
        return np.zeros(0, np.int64), np.zeros(1, np.int64)
    used = [0] * n_particles            # bitmask of colours touching each particle
    colour = np.empty(m, np.int64)
    rows = cons.tolist()
    for k, row in enumerate(rows):
        mask = 0
        for p in row:
            mask |= used[p]
        c = (~mask & (mask + 1)).bit_length() - 1
        colour[k] = c
        bit = 1 << c
        for p in row:
            used[p] |= bit
    order = np.argsort(colour, kind="stable")
    counts = np.bincount(colour)
    return order, np.concatenate([[0], np.cumsum(counts)])
