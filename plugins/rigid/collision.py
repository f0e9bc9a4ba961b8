"""Collision detection for the rigid solver: AABBs → broadphase → narrowphase → per-pair pruning.

Standalone host-side pipeline (the rigid solver calls it every substep; see docs/collision.md):

    pipe = CollisionPipeline.from_descriptions(descriptions, RigidOptions())
    pipe.build(n_envs, device, precision)
    pipe.update_poses(part, link_xpos, link_xquat)    # or fill pipe.geom_xpos / pipe.geom_xquat
    pipe.run(part)                                    # kernels only: graph-capturable
    # or both (+ the export into a constraint builder's arrays) in fewer launches:
    # pipe.collide(part, link_xpos, link_xquat, (n_con, con_pos, con_frame, con_dist, con_margin, con_link))
    ...
    pipe.check()                                      # after the step: budgets (host sync)
    pipe.contacts(envs_idx)                           # host readback of the raw contact set

Outputs per env (device arrays, (n_envs, max_contacts)): ``contact_count`` (n_envs,) usable
count, ``contact_geom`` (geom A, geom B), ``contact_pos`` (world, midway between the surfaces),
``contact_frame`` (rows: normal from B to A, tangent 1, tangent 2), ``contact_depth``
(penetration, > 0 when overlapping), ``contact_includemargin`` (the contact makes constraint rows
when depth >= −includemargin: margin − gap by default, margin in MuJoCo-compatible mode),
``contact_pair`` (explicit pair index or −1), ``contact_active`` (n_envs,) the contacts handed to
the constraint builder (the first ones; in MuJoCo-compatible mode the contacts in the gap follow).
Settings: the collision fields of RigidOptions (broadphase, budgets, filters, mesh decomposition;
``mujoco_compatible`` selects MuJoCo's margin/gap rules).

Filtering (docs/semantics.md §R4), in this order: visual-only geoms never collide; a pair passes the global
contype/conaffinity rule ((ta & ab) or (tb & aa)); inside one entity whose description has local
masks, the entity's own masks must pass as well and ``enable_self_collision`` must be on; geoms of one
weld group never collide (same link, links welded without a joint between them, two links fixed to
the world); parent–child weld groups do not collide unless ``enable_adjacent_collision`` (MuJoCo's
filterparent, the world excepted); ``contact_excludes`` (link pairs) of a description remove a pair;
``contact_pairs`` of a description are always tested with their own margin/gap and replace the
dynamic pair of the same two geoms.
"""

from __future__ import annotations

import math
import threading
import warnings
from collections import Counter
from types import SimpleNamespace

import attrs
import numpy as np
from polyphys.description import Geom, MeshData, quat_to_mat
from polyphys.errors import BudgetExceededError, OptionError, PolyphysWarning

from .codes import GeomType
from .options import RigidOptions

# Type pairs (lower code first) with a narrowphase routine: analytic in
# kernels/collision_primitive.py, or GJK + EPA in kernels/collision_convex.py.
SUPPORTED_PAIRS = frozenset({
    ("plane", "sphere"), ("plane", "capsule"), ("plane", "cylinder"), ("plane", "box"),
    ("plane", "ellipsoid"), ("sphere", "sphere"), ("sphere", "capsule"), ("sphere", "cylinder"),
    ("sphere", "box"), ("capsule", "capsule"), ("capsule", "box"), ("box", "box"),
    # GJK + EPA (kernels/collision_convex.py)
    ("sphere", "ellipsoid"), ("capsule", "cylinder"), ("capsule", "ellipsoid"),
    ("cylinder", "cylinder"), ("cylinder", "box"), ("cylinder", "ellipsoid"), ("box", "ellipsoid"),
    ("ellipsoid", "ellipsoid"),
    # convex meshes (their convex hull): plane–mesh by hull vertices, the rest by GJK + EPA
    ("plane", "mesh"), ("sphere", "mesh"), ("capsule", "mesh"), ("cylinder", "mesh"),
    ("box", "mesh"), ("ellipsoid", "mesh"), ("mesh", "mesh")})
NO_COLLISION_TYPES = ("hfield",)
# pairs with an analytic routine (the family modules below; the others: kernels/collision_gjk.narrowphase_convex)
ANALYTIC_PAIRS = frozenset({
    ("plane", "sphere"), ("plane", "capsule"), ("plane", "cylinder"), ("plane", "box"),
    ("plane", "ellipsoid"), ("plane", "mesh"), ("sphere", "sphere"), ("sphere", "capsule"),
    ("sphere", "cylinder"), ("sphere", "box"), ("capsule", "capsule"), ("capsule", "box"),
    ("box", "box")})

# The narrowphase kernel modules of the analytic pairs (kernels/<name>.py), one per pair family: a
# scene compiles and launches only those of the type pairs it can produce (docs/collision.md, "Kernel
# modules"), in this order; the other pairs of SUPPORTED_PAIRS are in kernels/collision_gjk.py.
NARROWPHASE_FAMILIES = {
    "collision_plane": frozenset({("plane", "sphere"), ("plane", "capsule"), ("plane", "cylinder"),
                                  ("plane", "box"), ("plane", "ellipsoid"), ("plane", "mesh")}),
    "collision_sphere": frozenset({("sphere", "sphere"), ("sphere", "capsule"), ("sphere", "cylinder"),
                                   ("sphere", "box")}),
    "collision_capsule": frozenset({("capsule", "capsule")}),
    "collision_box": frozenset({("capsule", "box"), ("box", "box")}),
}
# every collision kernel module (kernels/<name>.py)
COLLISION_MODULES = ("collision_driver", "collision_sap", *NARROWPHASE_FAMILIES, "collision_gjk")


def collision_modules(pair_types, broadphase: str) -> list[str]:
    """The collision kernel modules (names in kernels/) a pipeline launches for these geom type pairs
    (lower type first) and its resolved ``broadphase``: the driver; the sweep-and-prune module; the
    family module of each analytic pair; the GJK + EPA module for the other supported pairs."""
    types = set(pair_types) & SUPPORTED_PAIRS
    names = ["collision_driver"] + (["collision_sap"] if broadphase == "sweep_and_prune" else [])
    names += [name for name, fam in NARROWPHASE_FAMILIES.items() if types & fam]
    if types - ANALYTIC_PAIRS:
        names.append("collision_gjk")
    return names


# prune_export's write prefetch of the next env's contact rows is used from this many envs: the humanoid at 1024
# envs −0.5 to −0.6 µs per env of prune_export in the step (−30 to −37 %), the 8 boxes at 1024 no change, the pile
# of 50 boxes at 64 envs (whose contact rows stay in cache) +4 % (benchmarks/results/constraint.md, Round 14)
PREFETCH_MIN_ENVS = 256

# CollisionPipeline.collide's recorded launches: the calls (partition and arrays) kept per pipeline (a caller passing
# new arrays each call starts over), and the list the calling thread is recording into (None: not recording)
MAX_RECORDED_CALLS = 64
_RECORDING = threading.local()


def import_kernel_modules(names) -> list:
    """The kernel modules (kernels/<name>.py) of these names, imported."""
    import importlib

    return [importlib.import_module(f"{__package__}.kernels.{name}") for name in names]


# Most raw points one routine emits (box–box clipping and box–plane: 8).
MAX_RAW_POINTS = 8

# Collidable geoms per env above which broadphase="auto" uses sweep-and-prune: the measured
# crossover on CPU (benchmarks/bench_collision.py; benchmarks/results/collision.md): all-vs-all
# over the build-filtered pair list is faster at 128 spheres, equal at 256, 2x slower at 512.
SAP_THRESHOLD = 256

# Dynamic pairs in the build-filtered list from which the all-vs-all broadphase on the CPU grid finds
# the AABB overlaps by sort-and-sweep (collision_driver.broadphase_list_sorted: the same pairs in the
# same order) instead of testing every listed pair; at most SORTED_MAX_GEOMS geoms (its (G, G) pair
# index). Measured: benchmarks/results/constraint.md, "Round 11 (collision)".
SORTED_MIN_PAIRS = 200
SORTED_MAX_GEOMS = 1024


def _hull_vertices(g: Geom) -> np.ndarray:
    """Vertices of the convex hull of a mesh geom (geom frame)."""
    import trimesh

    v = np.asarray(g.mesh.vertices, dtype=float).reshape(-1, 3)
    try:
        return np.asarray(trimesh.convex.convex_hull(v).vertices, dtype=float)
    except Exception as exc:  # degenerate (flat) meshes: qhull fails
        raise OptionError(f"geom {g.name!r}: the convex hull of its mesh cannot be computed "
                          f"({exc}); a collision mesh must enclose a volume") from None


def _hfield_grid(g: Geom):
    """Validated grid of a heightfield geom: (x (ncol,), y (nrow,), z (nrow, ncol), bottom)."""
    hf = g.hfield
    data = np.asarray(hf["data"], dtype=float)
    if data.ndim != 2 or min(data.shape) < 2:
        raise OptionError(f"geom {g.name!r}: heightfield data has shape {data.shape}; needs at "
                          f"least 2 x 2 samples")
    rx, ry, ztop, zbot = (float(v) for v in tuple(hf["size"])[:4])
    if zbot <= 0 and data.min() * ztop <= -zbot:
        raise OptionError(f"geom {g.name!r}: heightfield bottom size[3] = {zbot}; must be > 0 "
                          f"(the prisms need a volume under the surface)")
    nr, nc = data.shape
    return np.linspace(-rx, rx, nc), np.linspace(-ry, ry, nr), data * ztop, zbot


def _hfield_cells(nr: int, nc: int) -> list:
    """The grid triangles as (row, col) vertex triples, counter-clockwise seen from +z: every cell
    split along its (r, c)-(r+1, c+1) diagonal (MuJoCo's triangulation), lower-right triangle
    first."""
    out = []
    for r in range(nr - 1):
        for c in range(nc - 1):
            out.append(((r, c), (r, c + 1), (r + 1, c + 1)))
            out.append(((r, c), (r + 1, c + 1), (r + 1, c)))
    return out


def _hfield_prisms(g: Geom) -> list:
    """A heightfield as convex pieces (geom frame): every grid triangle (_hfield_cells) extruded
    from the surface down to the bottom plane z = -size[3] (MuJoCo's prisms); vertices 0-2 are the
    top triangle (counter-clockwise seen from +z), 3-5 the bottom. Data: ``g.hfield["data"]``
    (nrow, ncol) in [0, 1], row 0 at -y, column 0 at -x; heights data × size[2]; the grid spans
    [-size[0], size[0]] × [-size[1], size[1]]."""
    x, y, z, zbot = _hfield_grid(g)
    out = []
    for tri in _hfield_cells(*z.shape):
        top = np.array([[x[j], y[i], z[i, j]] for i, j in tri])
        bot = top.copy()
        bot[:, 2] = -zbot
        out.append(np.concatenate([top, bot]))
    return out


CONE_SLOTS = 8      # normals of a grid vertex's cone: up to 6 triangles + 2 boundary walls


def _sphere_hull(normals) -> list:
    """The corners of the convex cone spanned by unit vectors (3-tuples, all in one open
    hemisphere), counter-clockwise seen from outside: gnomonic projection about their mean
    direction, then a 2-D convex hull (monotone chain); duplicates (within 1e-12) merged. Plain
    floats: called once per grid vertex on a handful of vectors."""
    u = []
    for n in normals:
        if not any(abs(n[0] - v[0]) + abs(n[1] - v[1]) + abs(n[2] - v[2]) <= 1e-12 for v in u):
            u.append(tuple(n))
    if len(u) <= 1:
        return u
    m = [sum(v[k] for v in u) for k in range(3)]
    lm = math.sqrt(m[0] ** 2 + m[1] ** 2 + m[2] ** 2)
    m = [x / lm for x in m]
    a = (1.0, 0.0, 0.0) if abs(m[0]) < 0.9 else (0.0, 1.0, 0.0)

    def cross3(x, y):
        return (x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2], x[0] * y[1] - x[1] * y[0])

    e1 = cross3(m, a)
    l1 = math.sqrt(e1[0] ** 2 + e1[1] ** 2 + e1[2] ** 2)
    e1 = (e1[0] / l1, e1[1] / l1, e1[2] / l1)
    e2 = cross3(m, e1)
    dot = lambda x, y: x[0] * y[0] + x[1] * y[1] + x[2] * y[2]  # noqa: E731
    P = [(dot(n, e1) / dot(n, m), dot(n, e2) / dot(n, m)) for n in u]
    order = sorted(range(len(u)), key=lambda i: P[i])

    def turn(o, a_, b):
        return ((P[a_][0] - P[o][0]) * (P[b][1] - P[o][1])
                - (P[a_][1] - P[o][1]) * (P[b][0] - P[o][0]))

    lower, upper = [], []
    for i in order:
        while len(lower) >= 2 and turn(lower[-2], lower[-1], i) <= 1e-14:
            lower.pop()
        lower.append(i)
    for i in reversed(order):
        while len(upper) >= 2 and turn(upper[-2], upper[-1], i) <= 1e-14:
            upper.pop()
        upper.append(i)
    hull = lower[:-1] + upper[:-1]
    if len(hull) < 2:           # all collinear and equal after merging
        hull = [order[0], order[-1]]
    return [u[i] for i in hull]


def _hfield_cones(g: Geom):
    """Surface normal cones of a heightfield's prisms, for the internal-edge correction
    (kernels/collision_hfield.py). Per prism (order of _hfield_prisms): ``face`` (P, 4, 3) — the
    top normal, then per top edge k (vertices k, k+1) the normal that edge may add: the
    neighbour triangle's normal when the edge is convex (the neighbour falls away below this
    triangle's plane), the outward horizontal normal of the boundary wall on the heightfield's
    border, else the top normal itself (flat or concave edge: only this face's normal);
    ``vcone`` (P, 3) the cone index of each top vertex; ``cones`` (V, CONE_SLOTS, 3) and
    ``ncone`` (V,) — per grid vertex the corners of the convex cone of the normals of every
    triangle and boundary wall meeting there (counter-clockwise seen from outside). All in the
    heightfield's frame."""
    x, y, z, _ = _hfield_grid(g)
    nr, nc = z.shape
    tris = _hfield_cells(nr, nc)
    T = np.array(tris, dtype=np.int64)                               # (P, 3, 2): (row, col)
    V = np.stack([x[T[..., 1]], y[T[..., 0]], z[T[..., 0], T[..., 1]]], axis=-1)   # (P, 3, 3)
    nrm = np.cross(V[:, 1] - V[:, 0], V[:, 2] - V[:, 0])
    nrm /= np.linalg.norm(nrm, axis=1, keepdims=True)
    vid = T[..., 0] * nc + T[..., 1]                                 # (P, 3) grid vertex ids
    edges = {}
    for ti in range(len(tris)):
        for k in range(3):
            a_, b_ = int(vid[ti, k]), int(vid[ti, (k + 1) % 3])
            edges.setdefault((min(a_, b_), max(a_, b_)), []).append(ti)
    face = np.zeros((len(tris), 4, 3))
    face[:, 0] = nrm
    nl = nrm.tolist()
    Vl = V.tolist()
    tol = 1e-12 * (1.0 + float(np.abs(z).max()))
    walls = {}
    for ti in range(len(tris)):
        for k in range(3):
            a_, b_ = int(vid[ti, k]), int(vid[ti, (k + 1) % 3])
            other = [o for o in edges[(min(a_, b_), max(a_, b_))] if o != ti]
            if not other:                       # border: the prism's side wall is a real face
                pa, pb = Vl[ti][k], Vl[ti][(k + 1) % 3]
                dx, dy = pb[0] - pa[0], pb[1] - pa[1]
                ln = math.hypot(dx, dy)
                w = (dy / ln, -dx / ln, 0.0)                 # right of a ccw edge: outwards
                face[ti, k + 1] = w
                walls.setdefault(a_, []).append(w)
                walls.setdefault(b_, []).append(w)
                continue
            o = other[0]
            far = [Vl[o][j] for j in range(3) if int(vid[o, j]) not in (a_, b_)][0]
            pa, n = Vl[ti][k], nl[ti]
            drop = (far[0] - pa[0]) * n[0] + (far[1] - pa[1]) * n[1] + (far[2] - pa[2]) * n[2]
            face[ti, k + 1] = nl[o] if drop < -tol else nl[ti]
    inc = {}
    for ti in range(len(tris)):
        for k in range(3):
            inc.setdefault(int(vid[ti, k]), []).append(nl[ti])
    cones = np.zeros((nr * nc, CONE_SLOTS, 3))
    ncone = np.zeros(nr * nc, dtype=np.int32)
    for v, ns in inc.items():
        h = _sphere_hull(ns + walls.get(v, []))
        cones[v, :len(h)] = h
        ncone[v] = len(h)
    return face, vid.astype(np.int32), cones, ncone


def _decompose_mesh(g: Geom, options) -> list | None:
    """Convex parts (vertex arrays, geom frame) of a non-convex mesh geom, or None when the mesh is
    convex or the options ask for the convex hull (see RigidOptions.mesh_decomposition)."""
    import trimesh

    v = np.asarray(g.mesh.vertices, dtype=float).reshape(-1, 3)
    f = np.asarray(g.mesh.faces, dtype=np.int64).reshape(-1, 3)
    mode = options.mesh_decomposition
    if mode == "hull" or not len(f):
        return None
    tm = trimesh.Trimesh(v, f, process=True)
    hull_vol = trimesh.convex.convex_hull(v).volume
    if tm.is_convex or (tm.is_volume and abs(tm.volume - hull_vol) <= 1e-6 * hull_vol):
        return None
    try:
        import coacd
    except ImportError:
        if mode == "coacd":
            raise OptionError(f"geom {g.name!r}: RigidOptions.mesh_decomposition = 'coacd' "
                              f"but the coacd package is not installed (pip install coacd); "
                              f"allowed without it: 'auto', 'hull'") from None
        warnings.warn(f"collision: geom {g.name!r} is a non-convex mesh and coacd is not installed"
                      f" (pip install coacd): it collides as its convex hull (a bowl collides as a"
                      f" filled bowl)", PolyphysWarning, stacklevel=4)
        return None
    coacd.set_log_level("error")
    trimesh.repair.fix_normals(tm)       # closed and manifold: no remeshing (costs time, accuracy)
    parts = coacd.run_coacd(coacd.Mesh(np.asarray(tm.vertices), np.asarray(tm.faces)),
                            threshold=options.decomposition_threshold, seed=0,
                            preprocess_mode="off" if tm.is_volume else "auto")
    return [np.asarray(pv, dtype=float) for pv, _ in parts]


def _convex_parts(g: Geom, options):
    """The convex pieces replacing geom ``g`` in the narrowphase, or None (g collides as is)."""
    if g.role == "visual":
        return None
    if g.type == "hfield" and g.hfield is not None and "data" in g.hfield:
        return _hfield_prisms(g)
    if g.type == "mesh" and g.mesh is not None:
        return _decompose_mesh(g, options)
    return None


def _half_extents(g: Geom, hull=None) -> np.ndarray:
    """Half extents of the geom's local AABB (centred at its origin)."""
    s = np.asarray(g.size, dtype=float)
    t = g.type
    if t == "mesh":
        return np.abs(_hull_vertices(g) if hull is None else hull).max(axis=0)
    if t == "sphere":
        return np.array([s[0]] * 3)
    if t == "capsule":
        return np.array([s[0], s[0], s[0] + s[1]])
    if t == "cylinder":
        return np.array([s[0], s[0], s[1]])
    if t in ("box", "ellipsoid"):
        return s[:3].copy()
    if t == "plane":
        return np.zeros(3)
    raise OptionError(f"geom {g.name!r}: type {t!r} has no collision support yet (supported: "
                      f"plane, sphere, capsule, cylinder, box, ellipsoid)")


class CollisionPipeline:
    """Per-env collision detection over fixed-size buffers (see the module docstring).

    geoms: Geom records whose ``link`` is a global link index (-1: the world); geom_entity: entity
    index per geom; link_parent: global parent per link (-1: world); link_moves: per link, True
    when a joint with dofs connects it to its parent; local_masks: per entity, whether its geoms'
    contype/conaffinity are local masks (applied within the entity only; across entities the
    ``global_masks`` pair of that entity is used, default (1, 1)); excludes: (link, link) pairs;
    pairs: dicts with geom1, geom2 (global) and optional margin, gap; welds: equality welds
    (link, link or -1 for the world, active at start): while a weld is active in an env (the
    per-env device array ``weld_active``, set with ``set_weld_active`` or written by the solver),
    the two welded links' groups do not collide in that env.
    """

    # collide() on the CPU grid with the all-vs-all broadphase: the geom poses, AABBs and broadphase of each env in
    # one launch (kernels/collision_driver.poses_aabb_broadphase[_sorted]); False: two launches (A/B switch)
    fused_broadphase = True
    # collide() records its launches and replays them when called again with the same arrays (A/B switch)
    cache_launches = True
    # pruning skips the duplicate search of a plane–box pair whose corners are provably apart (collision_driver._prune_at;
    # the same contacts) (A/B switch)
    corners_apart = True

    def __init__(self, geoms, geom_entity, link_parent, link_moves, options=None, *,
                 local_masks=None, global_masks=None, excludes=(), pairs=(), welds=()):
        self.options = options if options is not None else RigidOptions()
        if not isinstance(self.options, RigidOptions):
            raise OptionError(f"CollisionPipeline options = {options!r}: must be RigidOptions")
        # MuJoCo-compatible mode: margins/gaps summed per pair, contacts detected below margin + gap
        # (those in the gap make no rows: MuJoCo 4.0); default: max, detected below the margin
        self.margin_sum = self.options.mujoco_compatible
        self.gap_outside = self.options.mujoco_compatible
        self.geoms = list(geoms)
        G = len(self.geoms)
        self.n_geoms = G
        self.geom_entity = np.asarray(geom_entity, dtype=np.int32).reshape(-1)
        if self.geom_entity.shape[0] != G:
            raise OptionError(f"geom_entity has {self.geom_entity.shape[0]} entries, expected one "
                              f"per geom ({G})")
        self.link_parent = np.asarray(link_parent, dtype=np.int64).reshape(-1)
        self.link_moves = np.asarray(link_moves, dtype=bool).reshape(-1)
        L = self.link_parent.shape[0]
        if self.link_moves.shape[0] != L:
            raise OptionError(f"link_moves has {self.link_moves.shape[0]} entries, expected one per "
                              f"link ({L})")
        n_ent = int(self.geom_entity.max()) + 1 if G else 0
        local_masks = [False] * n_ent if local_masks is None else list(local_masks)
        global_masks = [(1, 1)] * n_ent if global_masks is None else list(global_masks)
        for g in self.geoms:
            if not -1 <= g.link < L:
                raise OptionError(f"geom {g.name!r}: link {g.link} out of range [-1, {L})")
        # non-convex meshes and heightfields: convex pieces appended as internal mesh geoms of the
        # same link (geom_orig names the geom a contact reports); the original stops colliding
        self.n_user_geoms = G
        self.geom_orig = np.arange(G, dtype=np.int32)
        self.decomposed = {}              # user geom -> list of its internal part indices
        self.part_prism = {}              # internal part index -> heightfield prism index
        prism_face, prism_vcone, cones, ncone = [], [], [], []
        self._part_hull = {}
        self._part_offset = {}
        ent = list(self.geom_entity)
        for gi in range(G):
            g = self.geoms[gi]
            parts = _convex_parts(g, self.options)
            if not parts:
                continue
            R = quat_to_mat(np.asarray(g.quat, dtype=float))
            idx = []
            hf = g.type == "hfield"
            if hf:                        # cones for the internal-edge correction
                face, vcone, cone, nc_ = _hfield_cones(g)
                p0 = sum(len(x) for x in prism_face)
                prism_vcone.append(vcone + sum(len(x) for x in cones))
                prism_face.append(face)
                cones.append(cone)
                ncone.append(nc_)
            for k, pv in enumerate(parts):
                c = 0.5 * (pv.min(axis=0) + pv.max(axis=0))
                pj = len(self.geoms)
                self.geoms.append(attrs.evolve(
                    g, name=f"{g.name}#{k}", type="mesh", hfield=None,
                    mesh=MeshData(vertices=pv - c, faces=np.zeros((0, 3), dtype=np.int64)),
                    pos=tuple(np.asarray(g.pos, dtype=float) + R @ c)))
                self._part_hull[pj] = pv - c
                self._part_offset[pj] = c
                ent.append(self.geom_entity[gi])
                idx.append(pj)
                if hf:
                    self.part_prism[pj] = p0 + k
            self.decomposed[gi] = idx
        self.prism_face = (np.concatenate(prism_face) if prism_face
                           else np.zeros((0, 4, 3)))
        self.prism_vcone = (np.concatenate(prism_vcone) if prism_vcone
                            else np.zeros((0, 3), dtype=np.int32))
        self.cones = np.concatenate(cones) if cones else np.zeros((0, CONE_SLOTS, 3))
        self.ncone = np.concatenate(ncone) if ncone else np.zeros(0, dtype=np.int32)
        if self.decomposed:
            G = len(self.geoms)
            self.n_geoms = G
            self.geom_entity = np.asarray(ent, dtype=np.int32)
            self.geom_orig = np.concatenate([self.geom_orig, np.concatenate(
                [[gi] * len(ix) for gi, ix in self.decomposed.items()]).astype(np.int32)])
        # weld groups: a link without a moving joint belongs to its parent's group; -1 = world
        weld = np.full(L, -1, dtype=np.int64)
        for lk in range(L):
            p = self.link_parent[lk]
            if p >= lk:
                raise OptionError(f"link {lk}: parent {p} must come before it")
            weld[lk] = lk if self.link_moves[lk] else (weld[p] if p >= 0 else -1)
        wparent = np.array([weld[self.link_parent[w]] if self.link_parent[w] >= 0 else -1
                            for w in range(L)], dtype=np.int64)
        gl = np.array([g.link for g in self.geoms], dtype=np.int64)
        self.geom_weld = np.where(gl >= 0, weld[np.maximum(gl, 0)], -1)
        gw = self.geom_weld
        self.geom_weld_parent = np.where(gw >= 0, wparent[np.maximum(gw, 0)], -1)
        self.geom_type = np.array([GeomType.from_name(g.type) for g in self.geoms], dtype=np.int32)
        def _collides(g):
            return g.role != "visual" and g.type not in NO_COLLISION_TYPES and not (
                g.type == "mesh" and gi_of[id(g)] in self.decomposed) and not (
                g.type == "mesh" and g.mesh is None)

        gi_of = {id(g): i for i, g in enumerate(self.geoms)}
        self.geom_collide = np.array([_collides(g) for g in self.geoms], dtype=np.int32)
        skipped = [g.name for i, g in enumerate(self.geoms) if g.role != "visual"
                   and not _collides(g) and i not in self.decomposed]
        if skipped:
            warnings.warn(f"collision: heightfield geoms without elevation data and mesh geoms "
                          f"without mesh data cannot collide; {skipped[:8]}"
                          f"{' ...' if len(skipped) > 8 else ''} do not collide",
                          PolyphysWarning, stacklevel=2)
        # convex hulls of the mesh geoms (geom frame), one vertex array for all
        self.mesh_vert = np.zeros((0, 3))
        self.mesh_range = {}
        hulls = []
        for gi, g in enumerate(self.geoms):
            if g.type == "mesh" and self.geom_collide[gi]:
                hv = self._part_hull[gi] if gi in self._part_hull else _hull_vertices(g)
                self.mesh_range[gi] = (sum(len(h) for h in hulls), len(hv))
                hulls.append(hv)
        if hulls:
            self.mesh_vert = np.concatenate(hulls)
        ct = np.array([int(g.contype) for g in self.geoms], dtype=np.int64)
        ca = np.array([int(g.conaffinity) for g in self.geoms], dtype=np.int64)
        lm = np.array([bool(local_masks[e]) for e in self.geom_entity], dtype=bool)
        gm = np.array([global_masks[e] for e in self.geom_entity], dtype=np.int64).reshape(G, 2)
        full = np.int64(-1)
        self.geom_contype = np.where(lm, gm[:, 0], ct).astype(np.int32)
        self.geom_conaffinity = np.where(lm, gm[:, 1], ca).astype(np.int32)
        self.geom_local_contype = np.where(lm, ct, full).astype(np.int32)
        self.geom_local_conaffinity = np.where(lm, ca, full).astype(np.int32)
        self.weld_base = L + 1
        ex = set()
        for a, b in excludes:
            wa, wb = weld[a] + 1 if a >= 0 else 0, weld[b] + 1 if b >= 0 else 0
            ex.add(min(wa, wb) * self.weld_base + max(wa, wb))
        self.exclude_keys = np.array(sorted(ex), dtype=np.int64)
        self.welds = []
        for w in welds:
            a, b = int(w[0]), int(w[1])
            if not (-1 <= a < L and -1 <= b < L):
                raise OptionError(f"weld {w!r}: links must be in [-1, {L})")
            self.welds.append((int(weld[a]) if a >= 0 else -1, int(weld[b]) if b >= 0 else -1,
                               bool(w[2]) if len(w) > 2 else True))
        self.pairs = []
        for p in pairs:
            g1, g2 = int(p["geom1"]), int(p["geom2"])
            Gu = self.n_user_geoms
            if not (0 <= g1 < Gu and 0 <= g2 < Gu) or g1 == g2:
                raise OptionError(f"contact pair {p!r}: geom1/geom2 must be two different geom "
                                  f"indices in [0, {Gu})")
            a, b = self.geoms[g1], self.geoms[g2]
            comb = (lambda x, y: x + y) if self.margin_sum else max
            self.pairs.append({"geom1": g1, "geom2": g2,
                               "margin": float(p.get("margin", comb(a.margin, b.margin))),
                               "gap": float(p.get("gap", comb(a.gap, b.gap)))})
        # explicit pairs on the internal geoms (a decomposed geom's pair applies to its parts)
        self.explicit_internal = np.array(
            [[a, b, i] for i, p in enumerate(self.pairs)
             for a in self.decomposed.get(p["geom1"], [p["geom1"]])
             for b in self.decomposed.get(p["geom2"], [p["geom2"]])], dtype=np.int64).reshape(-1, 3)
        self.explicit_keys = np.array(sorted({min(a, b) * G + max(a, b)
                                              for a, b, _ in self.explicit_internal}),
                                      dtype=np.int64)
        self.neutral_excluded = np.zeros((0, 2), dtype=np.int64)
        self.half = np.array([_half_extents(g, self._part_hull.get(i)) if self.geom_collide[i]
                              else np.zeros(3)
                              for i, g in enumerate(self.geoms)]).reshape(G, 3)
        self._unsupported_warned = False
        self.built = False

    # -- construction from descriptions ---------------------------------------------------------
    @classmethod
    def from_descriptions(cls, descriptions, options=None, *, local_masks=None,
                          global_masks=None):
        """Flatten EntityDescriptions (each placed in the world by its root links) into one
        pipeline; geom, link indices are global in the order given."""
        geoms, ent, parent, moves, excludes, pairs, welds = [], [], [], [], [], [], []
        lo = go = 0
        for e, d in enumerate(descriptions):
            for lk in d.links:
                parent.append(lk.parent + lo if lk.parent >= 0 else -1)
                moves.append(any(d.joints[j].type != "fixed" for j in lk.joints))
            for g in d.geoms:
                geoms.append(attrs.evolve(g, link=g.link + lo if g.link >= 0 else -1))
                ent.append(e)
            for a, b in d.contact_excludes:
                excludes.append((a + lo, b + lo))
            for eq in d.equalities:
                if eq.type == "weld" and eq.obj1 >= 0:
                    welds.append((eq.obj1 + lo, eq.obj2 + lo if eq.obj2 >= 0 else -1,
                                  bool(eq.active)))
            for p in d.contact_pairs:
                q = dict(p)
                q["geom1"], q["geom2"] = int(p["geom1"]) + go, int(p["geom2"]) + go
                pairs.append(q)
            lo += len(d.links)
            go += len(d.geoms)
        return cls(geoms, ent, parent, moves, options, local_masks=local_masks,
                   global_masks=global_masks, excludes=excludes, pairs=pairs, welds=welds)

    # -- filtering (reference numpy form; the device form is in kernels/collision_driver.py) ----
    def pair_allowed(self, ga, gb) -> np.ndarray:
        """Whether the dynamic (broadphase) pairs (ga[i], gb[i]) pass the filters."""
        ga = np.asarray(ga, dtype=np.int64)
        gb = np.asarray(gb, dtype=np.int64)
        o = self.options
        ok = (self.geom_collide[ga] != 0) & (self.geom_collide[gb] != 0) & (ga != gb)
        ok &= ~((self.geom_type[ga] == GeomType.PLANE) & (self.geom_type[gb] == GeomType.PLANE))
        if o.collision_filtering:
            ok &= (((self.geom_contype[ga] & self.geom_conaffinity[gb]) != 0)
                   | ((self.geom_contype[gb] & self.geom_conaffinity[ga]) != 0))
            same = self.geom_entity[ga] == self.geom_entity[gb]
            local = (((self.geom_local_contype[ga] & self.geom_local_conaffinity[gb]) != 0)
                     | ((self.geom_local_contype[gb] & self.geom_local_conaffinity[ga]) != 0))
            ok &= ~same | (local & o.enable_self_collision)
        wa, wb = self.geom_weld[ga], self.geom_weld[gb]
        ok &= wa != wb
        if o.collision_filtering and not o.enable_adjacent_collision:
            ok &= ~((self.geom_weld_parent[ga] == wb) & (wb >= 0))
            ok &= ~((self.geom_weld_parent[gb] == wa) & (wa >= 0))
        if o.collision_filtering and self.exclude_keys.size:
            k = (np.minimum(wa, wb) + 1) * self.weld_base + np.maximum(wa, wb) + 1
            ok &= ~np.isin(k, self.exclude_keys)
        if self.explicit_keys.size:
            k = np.minimum(ga, gb) * self.n_geoms + np.maximum(ga, gb)
            ok &= ~np.isin(k, self.explicit_keys)
        return ok

    def allowed_pairs(self) -> np.ndarray:
        """All dynamic pairs that pass the filters, (n, 2), ga < gb."""
        G = self.n_geoms
        if G < 2:
            return np.zeros((0, 2), dtype=np.int64)
        ga, gb = np.triu_indices(G, 1)
        m = self.pair_allowed(ga, gb)
        return np.stack([ga[m], gb[m]], axis=1)

    # -- build ------------------------------------------------------------------------------------
    def build(self, n_envs: int, device=None, precision: str = "32", partitions=None,
              neutral_poses=None):
        """Allocate the per-env buffers and per-partition views. ``partitions``: the layout's
        Partition tuple (default: one partition of all envs). ``neutral_poses``: (pos (G, 3),
        quat (G, 4) as w, x, y, z) of every geom in the neutral configuration (qpos0), for the
        ``enable_neutral_collision`` option."""
        import warp as wp
        from polyphys.layout import Partition

        from .types import declare_overloads

        if precision not in ("32", "64"):
            raise OptionError(f"precision = {precision!r}: allowed '32', '64'")
        if not isinstance(n_envs, int) or n_envs < 1:
            raise OptionError(f"n_envs = {n_envs!r}: must be an integer >= 1")
        o = self.options
        G = self.n_geoms
        if neutral_poses is not None and not o.enable_neutral_collision:
            self._exclude_neutral(neutral_poses, device, precision)
        S = wp.float64 if precision == "64" else wp.float32
        npf = np.float64 if precision == "64" else np.float32
        V = wp.types.vector(3, S)
        Q = wp.types.quaternion(S)
        M = wp.types.matrix((3, 3), S)
        self.n_envs, self.device, self.precision = n_envs, device, precision
        self._cpu = wp.get_device(device).is_cpu
        # prune_export prefetches the next env's contact rows for writing (CPU, from PREFETCH_MIN_ENVS envs:
        # kernels/collision_driver.cpp)
        self._prefetch = 1 if self._cpu and n_envs >= PREFETCH_MIN_ENVS else 0
        self.scalar = S
        n_collide = int(self.geom_collide.sum())
        bp = o.broadphase
        if bp == "auto":
            bp = "sweep_and_prune" if n_collide > SAP_THRESHOLD else "all_vs_all"
        self.broadphase = bp
        # static pair lists
        if bp == "all_vs_all":
            allowed = self.allowed_pairs()
            n_allowed = allowed.shape[0]
            dyn = np.concatenate([allowed, -np.ones((n_allowed, 1), dtype=np.int64)], axis=1)
        else:
            dyn = np.zeros((0, 3), dtype=np.int64)
            n_allowed = n_collide * (n_collide - 1) // 2
        expl = self.explicit_internal
        types = self.pair_types(dyn[:, :2] if bp == "all_vs_all" else None)
        self._warn_unsupported(types)
        # the kernel modules this pipeline launches (the neutral-overlap probe, built above, launched its own)
        self.kernel_module_names = collision_modules(types, bp)
        # their overloads of this precision only (a second precision in the same process adds its own)
        declare_overloads(import_kernel_modules(self.kernel_module_names), precision)
        self._needs_convex = "collision_gjk" in self.kernel_module_names
        # MuJoCo-compatible mode: box-box is MuJoCo 4.0's collider (narrowphase_box_mujoco), its points
        # kept whole by prune (docs/collision.md, "Box-box in MuJoCo-compatible mode")
        self._boxbox_mujoco = 1 if o.mujoco_compatible else 0
        fams = [mod.__name__.rsplit("_", 1)[1] for mod in
                import_kernel_modules([n for n in self.kernel_module_names if n in NARROWPHASE_FAMILIES])]
        self._narrowphase = [getattr(mod, "narrowphase_" + fam + ("_mujoco" if fam == "box" and o.mujoco_compatible else ""))
                             for mod, fam in zip(import_kernel_modules([n for n in self.kernel_module_names
                                                                        if n in NARROWPHASE_FAMILIES]), fams)]
        # budgets sized from the scene (docs/collision.md)
        n_possible = n_allowed + len(self.explicit_internal)
        self.max_pairs = o.max_collision_pairs or max(1, min(n_possible, 8 * G + 64))
        self.max_cand = o.max_candidate_contacts or MAX_RAW_POINTS * self.max_pairs
        self.max_contacts = o.max_contacts or max(1, min(self.max_cand, 8 * G + 64))
        f = lambda a, dt: wp.array(np.asarray(a), dtype=dt, device=device)  # noqa: E731
        m = SimpleNamespace()
        m.geom_type = f(self.geom_type, wp.int32)
        m.geom_collide = f(self.geom_collide, wp.int32)
        sizes = np.array([(tuple(g.size) + (0.0, 0.0, 0.0))[:3] for g in self.geoms],
                         dtype=float).reshape(G, 3)
        for gi, (adr, num) in self.mesh_range.items():
            sizes[gi] = (adr, num, 0.0)          # a mesh's "size": its hull's vertex range
        m.geom_size = f(sizes.astype(npf), V)
        m.mesh_vert = f((self.mesh_vert if len(self.mesh_vert) else np.zeros((1, 3))).astype(npf), V)
        gp = np.full(G, -1, dtype=np.int32)
        for pj, pr in self.part_prism.items():
            gp[pj] = pr
        m.geom_prism = f(gp, wp.int32)
        one = lambda a, shape: a if len(a) else np.zeros(shape)  # noqa: E731
        m.prism_nrm = f(one(self.prism_face, (1, 4, 3)).astype(npf), V)
        m.prism_vcone = f(one(self.prism_vcone, (1, 3)).astype(np.int32), wp.vec3i)
        m.cone_nrm = f(one(self.cones, (1, CONE_SLOTS, 3)).astype(npf), V)
        m.cone_cnt = f(one(self.ncone, (1,)).astype(np.int32), wp.int32)
        m.geom_half = f(self.half.astype(npf), V)
        # contacts in the gap (MuJoCo-compatible mode, MuJoCo 4.0): detection (AABBs, broadphase, narrowphase) below
        # margin + gap; prune gets the force margins (geom_fmargin / pair_fmargin)
        self._gap_out = 1 if self.gap_outside else 0
        g_margin = np.array([g.margin for g in self.geoms], dtype=npf)
        g_gap = np.array([g.gap for g in self.geoms], dtype=npf)
        m.geom_fmargin = f(g_margin, S)
        m.geom_margin = f(g_margin + g_gap, S) if self._gap_out else m.geom_fmargin
        m.geom_gap = f(g_gap, S)
        m.geom_link = f(np.array([g.link for g in self.geoms], dtype=np.int32), wp.int32)
        m.geom_pos = f(np.array([g.pos for g in self.geoms], dtype=npf).reshape(G, 3), V)
        m.geom_quat = f(np.array([(q[1], q[2], q[3], q[0]) for q in (g.quat for g in self.geoms)],
                                 dtype=npf).reshape(G, 4), Q)
        for name in ("geom_contype", "geom_conaffinity", "geom_local_contype",
                     "geom_local_conaffinity"):
            setattr(m, name, f(getattr(self, name), wp.int32))
        m.geom_entity = f(self.geom_entity, wp.int32)
        m.geom_orig = f(self.geom_orig, wp.int32)
        m.geom_weld = f(self.geom_weld.astype(np.int32), wp.int32)
        m.geom_weld_parent = f(self.geom_weld_parent.astype(np.int32), wp.int32)
        m.exclude_keys = f(self.exclude_keys if o.collision_filtering else np.zeros(0, np.int64), wp.int64)
        m.explicit_keys = f(self.explicit_keys, wp.int64)
        m.flags = ((1 if o.enable_self_collision else 0) | (2 if o.enable_adjacent_collision else 0)
                   | (4 if o.collision_filtering else 0))
        p_margin = np.array([p["margin"] for p in self.pairs] or [0.0], dtype=npf)
        p_gap = np.array([p["gap"] for p in self.pairs] or [0.0], dtype=npf)
        m.pair_fmargin = f(p_margin, S)
        m.pair_margin = f(p_margin + p_gap, S) if self._gap_out else m.pair_fmargin
        m.pair_gap = f(p_gap, S)
        # contacts in the gap exist only with gap outside the margin and some gap > 0
        self._split = bool(self._gap_out and (np.any(g_gap > 0) or np.any(p_gap > 0)))
        m.pair_list = f(np.concatenate([dyn, expl]).astype(np.int32).reshape(-1, 3), wp.vec3i)
        m.explicit_list = f(expl.astype(np.int32).reshape(-1, 3), wp.vec3i)
        # the all-vs-all list by sort-and-sweep on the CPU grid (broadphase_list_sorted)
        self._sorted_bp = bool(bp == "all_vs_all" and self._cpu and n_allowed >= SORTED_MIN_PAIRS
                               and G <= SORTED_MAX_GEOMS)
        self._n_dyn = n_allowed
        if self._sorted_bp:
            index = np.full((G, G), -1, dtype=np.int32)
            index[dyn[:, 0], dyn[:, 1]] = np.arange(n_allowed, dtype=np.int32)
            m.pair_index = f(index, wp.int32)
            sweep_geoms = np.flatnonzero(self.geom_collide).astype(np.int32)
        m.weld_pairs = f(np.array([w[:2] for w in self.welds] or np.zeros((0, 2)),
                                  dtype=np.int32).reshape(-1, 2), wp.vec2i)
        wa0 = np.zeros((n_envs, max(1, len(self.welds))), dtype=np.int32)   # >= 1 column
        wa0[:, :len(self.welds)] = [w[2] for w in self.welds]
        self.weld_active = wp.array(wa0, dtype=wp.int32, device=device)
        self.model = m
        self._msum = 1 if self.margin_sum else 0
        n, P, C, K_ = n_envs, self.max_pairs, self.max_cand, self.max_contacts
        z = lambda shape, dt: wp.zeros(shape, dtype=dt, device=device)  # noqa: E731
        self.geom_xpos = z((n, G), V)
        self.geom_xquat = wp.array(np.tile(np.array([0, 0, 0, 1], dtype=npf), (n, G, 1)),
                                   dtype=Q, device=device) if G else z((n, G), Q)
        self.geom_xmat = z((n, G), M)
        self.aabb_lo = z((n, G), V)
        self.aabb_hi = z((n, G), V)
        self.pair_count = z(n, wp.int32)
        self.pairs_buf = z((n, P), wp.vec3i)
        self.pair_cand = z((n, P), wp.vec2i)
        self.cand_count = z(n, wp.int32)
        # the candidate pool (docs/collision.md, "The candidate pool"): C points per env, one array, each
        # partition's envs fill their slice in launch order; pair_cand holds each pair's block in it
        self.cand_pos = z(n * C, V)
        self.cand_normal = z(n * C, V)
        self.cand_dist = z(n * C, S)
        self.contact_raw = z(n, wp.int32)
        self.contact_count = z(n, wp.int32)
        self.contact_geom = z((n, K_), wp.vec2i)
        self.contact_pos = z((n, K_), V)
        self.contact_frame = z((n, K_), M)
        self.contact_depth = z((n, K_), S)
        self.contact_includemargin = z((n, K_), S)
        self.contact_pair = z((n, K_), wp.int32)
        self.contact_active = z(n, wp.int32) if self._split else self.contact_count
        if partitions is None:
            partitions = (Partition(0, 0, n_envs),)
        self._parts = {}
        self._partitions = tuple(partitions)
        for part in partitions:
            v = SimpleNamespace()
            sl = slice(part.start, part.stop)
            for name in ("weld_active", "geom_xpos", "geom_xquat", "geom_xmat", "aabb_lo", "aabb_hi",
                         "pair_count", "pairs_buf", "pair_cand", "cand_count", "contact_raw", "contact_count",
                         "contact_geom", "contact_pos", "contact_frame", "contact_depth",
                         "contact_includemargin", "contact_pair", "contact_active"):
                setattr(v, name, getattr(self, name)[sl])
            for name in ("cand_pos", "cand_normal", "cand_dist"):
                setattr(v, name, getattr(self, name)[part.start * C:part.stop * C])
            v.cand_pool = z(1, wp.int32)             # the points taken from the partition's pool so far
            v.n = part.stop - part.start
            if self._sorted_bp:
                v.sweep_order = f(np.tile(sweep_geoms, (v.n, 1)), wp.int32)
                v.sweep_key = z((v.n, sweep_geoms.size), S)
                v.sweep_found = z((v.n, (n_allowed + 15) // 16), wp.int32)
                v.sweep_lo = z((v.n, sweep_geoms.size), V)
                v.sweep_hi = z((v.n, sweep_geoms.size), V)
            if bp == "sweep_and_prune":
                cnt = v.n * G
                v.keys = z(2 * max(cnt, 1), wp.float32)
                v.values = z(2 * max(cnt, 1), wp.int32)
                v.seg_start = f(np.arange(v.n, dtype=np.int32) * G, wp.int32)
                v.seg_end = f(np.arange(1, v.n + 1, dtype=np.int32) * G, wp.int32)
            self._parts[part.index] = v
        self._launches = {}                 # collide's recorded launches per (partition, arrays)
        self.built = True
        return self

    def _exclude_neutral(self, neutral_poses, device, precision):
        """Remove the pairs of one entity in contact at the neutral poses (docs/semantics.md §R4's
        neutral-initial-overlap option): one all-vs-all pass on those poses, in the pipeline's precision."""
        pos, quat = (np.asarray(a, dtype=float) for a in neutral_poses)
        G = self.n_geoms
        if pos.shape != (G, 3) or quat.shape != (G, 4):
            raise OptionError(f"neutral_poses: expected pos ({G}, 3) and quat ({G}, 4), got "
                              f"{pos.shape} and {quat.shape}")
        probe = CollisionPipeline.__new__(CollisionPipeline)
        probe.__dict__.update(self.__dict__)
        probe.options = attrs.evolve(self.options, broadphase="all_vs_all", enable_neutral_collision=True,
                                     max_collision_pairs=None, max_candidate_contacts=None,
                                     max_contacts=None, collision_overflow="warn")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            probe.build(1, device, precision)
            set_poses_host(probe, pos[None], quat[None])
            from polyphys.layout import Partition

            probe.run(Partition(0, 0, 1))
        c = probe.contacts([0])[0]
        same = self.geom_entity[c["geom_a"]] == self.geom_entity[c["geom_b"]]
        keep = same & (c["pair"] < 0) & (c["depth"] > neutral_overlap_tolerance(pos, precision))
        pairs = {(min(a, b), max(a, b)) for a, b in zip(c["geom_a"][keep], c["geom_b"][keep])}
        self.neutral_excluded = np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)
        keys = set(self.explicit_keys.tolist()) | {a * G + b for a, b in pairs}
        self.explicit_keys = np.array(sorted(keys), dtype=np.int64)

    def pair_types(self, pairs) -> set:
        """The geom type pairs (lower type first) the pipeline can produce: those of ``pairs`` (the
        all-vs-all pair list, (n, 2) geom indices) or, for ``None`` (sweep-and-prune), every pair of
        the collidable types present; with the explicit pairs' in both cases."""
        types = set()
        if pairs is not None:
            for a, b in pairs:
                ta, tb = sorted((self.geoms[a].type, self.geoms[b].type), key=lambda t: GeomType.from_name(t))
                types.add((ta, tb))
        else:
            count = Counter(g.type for g, c in zip(self.geoms, self.geom_collide) if c)
            present = sorted(count, key=lambda t: GeomType.from_name(t))
            for i, ta in enumerate(present):
                for tb in present[i:]:
                    if ta != tb or (count[ta] >= 2 and ta != "plane"):
                        types.add((ta, tb))
        for a, b, _ in self.explicit_internal:
            ta, tb = sorted((self.geoms[a].type, self.geoms[b].type), key=lambda t: GeomType.from_name(t))
            types.add((ta, tb))
        return types

    def _warn_unsupported(self, types):
        """Warn once about type pairs that can collide but have no routine yet (their contacts are
        not generated)."""
        missing = sorted(types - SUPPORTED_PAIRS)
        self.convex_pairs = sorted((types & SUPPORTED_PAIRS) - ANALYTIC_PAIRS)
        self.unsupported_pairs = missing
        if missing:
            warnings.warn(f"collision: no narrowphase routine yet for geom type pairs {missing}; "
                          f"such pairs produce no contacts (supported: {sorted(SUPPORTED_PAIRS)})",
                          PolyphysWarning, stacklevel=3)

    # -- per substep --------------------------------------------------------------------------------
    def set_weld_active(self, active, envs_idx=None):
        """Switch equality welds per env (host setter, in place): ``active`` (n_welds,) or
        (len(envs_idx), n_welds) of 0/1."""
        envs = np.arange(self.n_envs) if envs_idx is None else np.atleast_1d(envs_idx).astype(int)
        a = np.asarray(active, dtype=np.int32)
        nw = len(self.welds)
        if a.shape not in ((nw,), (len(envs), nw)):
            raise OptionError(f"set_weld_active: shape {a.shape}, expected ({nw},) or "
                              f"({len(envs)}, {nw})")
        cur = self.weld_active.numpy()
        cur[envs, :nw] = a
        self.weld_active.assign(cur)

    def _slots(self, n, width):
        """(launch dim, slot_stride) of a per-slot stage (kernels/collision_driver.py, "Launch
        grids"): on CPU one thread per env looping over its used slots (the per-thread cost of the
        unused ones dominated: 126 pair slots for the humanoid's 27 pairs, 208 contact slots for its
        10 contacts), elsewhere one thread per slot. The same order of the per-env atomic counters:
        bit-identical."""
        if self._cpu:
            return (n, 1), 1
        return (n, width), max(width, 1)

    def update_poses(self, part, link_xpos, link_xquat):
        """geom_xpos/geom_xquat of the partition from world link poses ((n_envs, n_links) arrays
        of the whole batch; the partition's rows are used)."""
        import warp as wp

        from .kernels import collision_driver as K

        v = self._parts[part.index]
        m = self.model
        dim, st = self._slots(v.n, self.n_geoms)
        wp.launch(K.geom_poses, dim=dim,
                  inputs=[m.geom_link, m.geom_pos, m.geom_quat, st, link_xpos[part.start:part.stop],
                          link_xquat[part.start:part.stop]],
                  outputs=[v.geom_xpos, v.geom_xquat], device=self.device)

    def run(self, part, geom_xpos=None, geom_xquat=None):
        """Launch the pipeline for one partition (no host sync, no allocation). geom_xpos /
        geom_xquat: (n_envs, n_geoms) arrays of the whole batch; default: the pipeline's own
        (filled by update_poses)."""
        import warp as wp

        from .kernels import collision_driver as K

        v = self._parts[part.index]
        m = self.model
        G, n, dev = self.n_geoms, v.n, self.device
        xpos = v.geom_xpos if geom_xpos is None else geom_xpos[part.start:part.stop]
        xquat = v.geom_xquat if geom_xquat is None else geom_xquat[part.start:part.stop]
        dim, st = self._slots(n, G)
        wp.launch(K.aabb_update, dim=dim, inputs=[m.geom_type, m.geom_half, m.geom_margin, st, xpos, xquat],
                  outputs=[v.geom_xmat, v.aabb_lo, v.aabb_hi, v.pair_count, v.cand_count,
                           v.contact_raw, v.cand_pool], device=dev)
        self._detect(part, xpos, None)

    def collide(self, part, link_xpos, link_xquat, export=None):
        """``update_poses`` + ``run`` (+ ``export`` into ``export`` = (n_con, con_pos, con_frame,
        con_dist, con_margin, con_link), the arguments of ``export``) in fewer launches, with the
        same results bit for bit: the geom poses and the AABBs in one kernel (``poses_aabb``; on the
        CPU grid with the all-vs-all broadphase also the broadphase: ``poses_aabb_broadphase[_sorted]``);
        on the CPU launch grid without contacts in the gap, pruning, the counts and the export in one
        (``prune_export``), elsewhere the separate launches. Kernels only (graph-capturable).

        The launches of a call are recorded (``wp.launch(..., record_cmd=True)``) and replayed by the
        next call with the same partition and the same arrays (their pointers, shapes and strides),
        without packing the arguments again (≈ 0.1 ms per launch on the CPU: docs/collision.md, "Launch
        replay"); ``cache_launches = False`` launches each time. Not with sweep-and-prune (its sort is
        not a recorded launch)."""
        key = None
        if self.cache_launches and self.broadphase != "sweep_and_prune":
            key = (part.index, part.start, part.stop, self.fused_broadphase, self.corners_apart) + tuple(
                (a.ptr, a.shape, a.strides) for a in (link_xpos, link_xquat) + (tuple(export) if export else ()))
            cmds = self._launches.get(key)
            if cmds is not None:
                for c in cmds:
                    c.launch()
                return
            if len(self._launches) >= MAX_RECORDED_CALLS:      # a caller passing new arrays each call
                self._launches.clear()
            _RECORDING.cmds = []
        try:
            self._collide_launches(part, link_xpos, link_xquat, export)
        finally:
            rec, _RECORDING.cmds = getattr(_RECORDING, "cmds", None), None
        if key is not None:
            self._launches[key] = rec

    def _launch(self, kernel, **kw):
        """``wp.launch`` of collide's kernels (and run's / export's): while collide records (in this thread: the
        partitions of a step may run in several), as a recorded command launched at once and kept for the replay."""
        import warp as wp

        rec = getattr(_RECORDING, "cmds", None)
        if rec is None:
            wp.launch(kernel, **kw)
            return
        cmd = wp.launch(kernel, record_cmd=True, **kw)
        cmd.launch()
        rec.append(cmd)

    def _collide_launches(self, part, link_xpos, link_xquat, export):
        """collide's launches (recorded when collide records)."""
        from .kernels import collision_driver as K

        v = self._parts[part.index]
        m = self.model
        lp, lq = link_xpos[part.start:part.stop], link_xquat[part.start:part.stop]
        if self.fused_broadphase and self._cpu and self.n_geoms and self.broadphase == "all_vs_all":
            # CPU grid: the poses, the AABBs and the all-vs-all broadphase of each env in one launch
            if self._sorted_bp:
                self._launch(K.poses_aabb_broadphase_sorted, dim=v.n,
                             inputs=[m.geom_link, m.geom_pos, m.geom_quat, m.geom_type, m.geom_half, m.geom_margin,
                                     m.pair_list, self._n_dyn, m.pair_index, m.pair_margin, self._msum, m.geom_weld,
                                     m.weld_pairs, lp, lq, v.weld_active],
                             outputs=[v.sweep_order, v.sweep_key, v.sweep_found, v.sweep_lo, v.sweep_hi, v.geom_xpos,
                                      v.geom_xquat, v.geom_xmat, v.aabb_lo, v.aabb_hi, v.pair_count, v.cand_count,
                                      v.contact_raw, v.cand_pool, v.pairs_buf, v.pair_cand], device=self.device)
            else:
                self._launch(K.poses_aabb_broadphase, dim=v.n,
                             inputs=[m.geom_link, m.geom_pos, m.geom_quat, m.geom_type, m.geom_half, m.geom_margin,
                                     m.pair_list, m.pair_margin, self._msum, m.geom_weld, m.weld_pairs, lp, lq,
                                     v.weld_active],
                             outputs=[v.geom_xpos, v.geom_xquat, v.geom_xmat, v.aabb_lo, v.aabb_hi, v.pair_count,
                                      v.cand_count, v.contact_raw, v.cand_pool, v.pairs_buf, v.pair_cand],
                             device=self.device)
            self._detect(part, v.geom_xpos, export, broadphase=False)
            return
        dim, st = self._slots(v.n, self.n_geoms)
        self._launch(K.poses_aabb, dim=dim,
                     inputs=[m.geom_link, m.geom_pos, m.geom_quat, m.geom_type, m.geom_half, m.geom_margin, st, lp, lq],
                     outputs=[v.geom_xpos, v.geom_xquat, v.geom_xmat, v.aabb_lo, v.aabb_hi, v.pair_count,
                              v.cand_count, v.contact_raw, v.cand_pool], device=self.device)
        self._detect(part, v.geom_xpos, export)

    def _detect(self, part, xpos, export, broadphase: bool = True):
        """The stages after the AABBs: broadphase (unless ``broadphase`` is False: collide's fused launch
        ran it), narrowphase, pruning, counts (and the export when ``export`` is given)."""
        import warp as wp

        from .kernels import collision_driver as K

        v = self._parts[part.index]
        m = self.model
        G, n, dev = self.n_geoms, v.n, self.device
        if G == 0:
            self._launch(K.finalize_counts, dim=n, inputs=[v.contact_raw, self.max_contacts],
                         outputs=[v.contact_count], device=dev)
            if export is not None:
                self.export(part, *export)
            return
        if self._sorted_bp:
            if broadphase:
                self._launch(K.broadphase_list_sorted, dim=n,
                             inputs=[m.pair_list, self._n_dyn, m.pair_index, m.geom_type, m.geom_margin, m.pair_margin,
                                     self._msum, m.geom_weld, m.weld_pairs, v.weld_active, xpos, v.geom_xmat, v.aabb_lo,
                                     v.aabb_hi],
                             outputs=[v.sweep_order, v.sweep_key, v.sweep_found, v.sweep_lo, v.sweep_hi, v.pairs_buf,
                                      v.pair_count, v.pair_cand],
                             device=dev)
        elif self.broadphase == "all_vs_all":
            if broadphase and m.pair_list.shape[0]:
                dim, st = self._slots(n, m.pair_list.shape[0])
                self._launch(K.broadphase_list, dim=dim,
                             inputs=[m.pair_list, m.geom_type, m.geom_margin, m.pair_margin, self._msum, m.geom_weld,
                                     m.weld_pairs, st, v.weld_active, xpos, v.geom_xmat, v.aabb_lo, v.aabb_hi],
                             outputs=[v.pairs_buf, v.pair_count, v.pair_cand], device=dev)
        else:
            from .kernels import collision_sap as S

            ax = self.options.sap_axis
            self._launch(S.sap_keys, dim=(n, G), inputs=[v.aabb_lo, ax], outputs=[v.keys, v.values],
                         device=dev)
            wp.utils.segmented_sort_pairs(v.keys, v.values, n * G, v.seg_start, v.seg_end)
            self._launch(S.sap_sweep, dim=(n, G),
                         inputs=[m.geom_type, m.geom_collide, m.geom_contype, m.geom_conaffinity,
                                 m.geom_local_contype, m.geom_local_conaffinity, m.geom_entity,
                                 m.geom_weld, m.geom_weld_parent, m.flags, self.weld_base,
                                 m.exclude_keys, m.explicit_keys, ax, m.weld_pairs, m.geom_margin, self._msum,
                                 v.weld_active, v.keys, v.values, xpos, v.geom_xmat, v.aabb_lo, v.aabb_hi],
                         outputs=[v.pairs_buf, v.pair_count, v.pair_cand], device=dev)
            if m.explicit_list.shape[0]:
                dim, st = self._slots(n, m.explicit_list.shape[0])
                self._launch(K.broadphase_list, dim=dim,
                             inputs=[m.explicit_list, m.geom_type, m.geom_margin, m.pair_margin, self._msum, m.geom_weld,
                                     m.weld_pairs, st, v.weld_active, xpos, v.geom_xmat, v.aabb_lo, v.aabb_hi],
                             outputs=[v.pairs_buf, v.pair_count, v.pair_cand], device=dev)
        # the narrowphase: one launch per pair family the scene has (each handles its own pairs)
        dim, st = self._slots(n, self.max_pairs)
        for kernel in self._narrowphase:
            self._launch(kernel, dim=dim,
                         inputs=[m.geom_type, m.geom_size, m.geom_margin, m.pair_margin, self._msum, m.mesh_vert, st,
                                 xpos, v.geom_xmat, v.pairs_buf, v.pair_count],
                         outputs=[v.pair_cand, v.cand_pos, v.cand_normal, v.cand_dist, v.cand_count, v.cand_pool],
                         device=dev)
        if self._needs_convex:
            from .kernels import collision_gjk

            self._launch(collision_gjk.narrowphase_convex, dim=(n, self.max_pairs),
                         inputs=[m.geom_type, m.geom_size, m.geom_margin, m.pair_margin, self._msum,
                                 m.mesh_vert, m.geom_prism, m.prism_nrm, m.prism_vcone, m.cone_nrm,
                                 m.cone_cnt, xpos,
                                 v.geom_xmat, v.pairs_buf, v.pair_count],
                         outputs=[v.pair_cand, v.cand_pos, v.cand_normal, v.cand_dist, v.cand_count, v.cand_pool],
                         device=dev)
        if export is not None and self._cpu and not self._split:
            s = slice(part.start, part.stop)
            self._launch(K.prune_export, dim=n,
                         inputs=[m.geom_orig, m.geom_type, self._boxbox_mujoco, m.geom_fmargin, m.geom_gap, m.pair_fmargin,
                                 m.pair_gap, self._msum, self._gap_out, self.options.max_contacts_per_pair,
                                 self.max_contacts, m.geom_link, self._copy_set(*export), self._prefetch,
                                 1 if self.corners_apart else 0, m.geom_size, xpos, v.pairs_buf, v.pair_count,
                                 v.pair_cand, v.cand_pos, v.cand_normal, v.cand_dist],
                         outputs=[v.contact_raw, v.contact_count, v.contact_geom, v.contact_pos, v.contact_frame,
                                  v.contact_depth, v.contact_includemargin, v.contact_pair]
                         + [a[s] for a in export], device=dev)
            return
        self._launch(K.prune, dim=dim,
                     inputs=[m.geom_orig, m.geom_type, self._boxbox_mujoco, m.geom_fmargin, m.geom_gap, m.pair_fmargin,
                             m.pair_gap, self._msum,
                             self._gap_out, self.options.max_contacts_per_pair, st, 1 if self.corners_apart else 0,
                             m.geom_size, xpos, v.pairs_buf, v.pair_count,
                             v.pair_cand, v.cand_pos, v.cand_normal, v.cand_dist],
                     outputs=[v.contact_raw, v.contact_geom, v.contact_pos, v.contact_frame,
                              v.contact_depth, v.contact_includemargin, v.contact_pair], device=dev)
        self._launch(K.finalize_counts, dim=n, inputs=[v.contact_raw, self.max_contacts],
                     outputs=[v.contact_count], device=dev)
        if self._split:
            self._launch(K.split_inactive, dim=n, inputs=[v.contact_count],
                         outputs=[v.contact_active, v.contact_geom, v.contact_pos, v.contact_frame,
                                  v.contact_depth, v.contact_includemargin, v.contact_pair], device=dev)
        if export is not None:
            self.export(part, *export)

    def export(self, part, n_con, con_pos, con_frame, con_dist, con_margin, con_link):
        """Copy the partition's contacts into a constraint builder's arrays (whole-batch arrays,
        (n_envs, C[, 2]); C may be smaller than max_contacts: the count is clamped to it):
        n_con, pos, frame (rows: normal B→A, t1, t2), dist = −depth, margin = includemargin, and
        the links of geoms A and B (−1: world); only the active contacts (``contact_active``: with
        MuJoCo-compatible mode the contacts in the gap make no rows). Kernels only (graph-capturable)."""
        from .kernels import collision_driver as K

        v = self._parts[part.index]
        s = slice(part.start, part.stop)
        dim, st = self._slots(v.n, self.max_contacts)
        self._launch(K.export_contacts, dim=dim,
                     inputs=[self.model.geom_link, st, self._copy_set(n_con, con_pos, con_frame, con_dist, con_margin,
                                                                      con_link), v.contact_active, v.contact_geom, v.contact_pos,
                             v.contact_frame, v.contact_depth, v.contact_includemargin],
                     outputs=[n_con[s], con_pos[s], con_frame[s], con_dist[s], con_margin[s],
                              con_link[s]], device=self.device)

    def _copy_set(self, n_con, con_pos, con_frame, con_dist, con_margin, con_link) -> int:
        """0 when the export's pos / frame / margin arrays are this pipeline's contact_pos /
        contact_frame / contact_includemargin themselves (same memory and shape: the rigid solver's
        Data aliases them at build, docs/collision.md), so the export writes only the count, dist
        and links; 1 (copy them) otherwise."""
        same = all(a.ptr == b.ptr and a.shape == b.shape and a.strides == b.strides for a, b in
                   ((con_pos, self.contact_pos), (con_frame, self.contact_frame),
                    (con_margin, self.contact_includemargin)))
        return 0 if same else 1

    # -- after the step ---------------------------------------------------------------------------
    def overflow(self) -> list:
        """[(budget name, env, needed, budget)] for every exceeded budget (host sync)."""
        out = []
        for name, counter, cap in (("max_collision_pairs", self.pair_count, self.max_pairs),
                                   ("max_candidate_contacts", self.cand_count, self.max_cand),
                                   ("max_contacts", self.contact_raw, self.max_contacts)):
            c = counter.numpy()
            for e in np.nonzero(c > cap)[0]:
                out.append((name, int(e), int(c[e]), int(cap)))
        return out

    def check(self):
        """Raise BudgetExceededError (policy "raise") or warn (policy "warn") for exceeded budgets.
        A later stage's count is a lower bound when an earlier stage overflowed."""
        over = self.overflow()
        if not over:
            return
        name, env, need, cap = over[0]
        later = " (at least; an earlier stage also overflowed)" if any(
            o[1] == env for o in over[: over.index(over[0])]) else ""
        msg = (f"collision budget {name} exceeded in env {env}: {need}{later} needed, budget {cap}; "
               f"raise RigidOptions.{name} (or set collision_overflow='warn' to drop the excess)")
        if len(over) > 1:
            msg += "; also " + ", ".join(f"{n} in env {e}: {c} needed (budget {b})"
                                         for n, e, c, b in over[1:6])
        if self.options.collision_overflow == "raise":
            raise BudgetExceededError(msg)
        warnings.warn(msg + " — the excess contacts were dropped", PolyphysWarning, stacklevel=2)

    def contacts(self, envs_idx=None) -> list:
        """Host readback of the contact set: one dict of numpy arrays per env (geom_a, geom_b,
        pos, normal (B→A), frame, depth, includemargin, pair, active: whether it makes constraint
        rows — False for a contact in the gap in MuJoCo-compatible mode)."""
        envs = range(self.n_envs) if envs_idx is None else [int(e) for e in np.atleast_1d(envs_idx)]
        cnt = self.contact_count.numpy()
        act = self.contact_active.numpy()
        arrs = {k: getattr(self, "contact_" + k).numpy() for k in
                ("geom", "pos", "frame", "depth", "includemargin", "pair")}
        out = []
        for e in envs:
            if not 0 <= e < self.n_envs:
                raise OptionError(f"envs_idx contains {e}: allowed 0..{self.n_envs - 1}")
            k = int(cnt[e])
            out.append({"geom_a": arrs["geom"][e, :k, 0].copy(), "geom_b": arrs["geom"][e, :k, 1].copy(),
                        "pos": arrs["pos"][e, :k].copy(), "normal": arrs["frame"][e, :k, 0].copy(),
                        "frame": arrs["frame"][e, :k].copy(), "depth": arrs["depth"][e, :k].copy(),
                        "includemargin": arrs["includemargin"][e, :k].copy(),
                        "pair": arrs["pair"][e, :k].copy(), "active": np.arange(k) < act[e]})
        return out

    def candidates(self, env: int = 0) -> list:
        """The narrowphase output of one env per stored pair (MuJoCo's convention: normal from
        geom1 to geom2, signed distance): [(geom1, geom2, normal, points (k,3), dists (k,))]."""
        npairs = min(int(self.pair_count.numpy()[env]), self.max_pairs)
        pairs = self.pairs_buf.numpy()[env]
        pc = self.pair_cand.numpy()[env]
        # the blocks are positions in the pool of env's partition
        base = next(p.start for p in self._partitions if p.start <= env < p.stop) * self.max_cand
        pos, nrm, dist = (a.numpy()[base:] for a in (self.cand_pos, self.cand_normal, self.cand_dist))
        out = []
        for k in range(npairs):
            s, c = int(pc[k, 0]), int(pc[k, 1])
            out.append((int(pairs[k, 0]), int(pairs[k, 1]),
                        nrm[s] if c else None, pos[s:s + c].copy(), dist[s:s + c].copy()))
        return out


def set_poses_host(pipe: CollisionPipeline, pos, quat):
    """Write geom world poses (n_envs, n_geoms, 3) / (n_envs, n_geoms, 4 as w, x, y, z) from the
    host (tests and tools; not for the step). Poses of the user geoms only (n_user_geoms) are
    accepted too: the internal convex parts of decomposed geoms follow their geom."""
    Gu = pipe.n_user_geoms
    if Gu != pipe.n_geoms and np.size(pos) == pipe.n_envs * Gu * 3:
        pos = np.asarray(pos, dtype=float).reshape(pipe.n_envs, Gu, 3)
        quat = np.asarray(quat, dtype=float).reshape(pipe.n_envs, Gu, 4)
        o = pipe.geom_orig
        pos, quat = pos[:, o].copy(), quat[:, o].copy()
        for pj, c in pipe._part_offset.items():
            for e in range(pipe.n_envs):
                pos[e, pj] += quat_to_mat(quat[e, pj] / np.linalg.norm(quat[e, pj])) @ c
    pos = np.asarray(pos, dtype=float).reshape(pipe.n_envs, pipe.n_geoms, 3)
    quat = np.asarray(quat, dtype=float).reshape(pipe.n_envs, pipe.n_geoms, 4)
    npf = np.float64 if pipe.precision == "64" else np.float32
    pipe.geom_xpos.assign(pos.astype(npf))
    pipe.geom_xquat.assign(quat[..., [1, 2, 3, 0]].astype(npf))


# ---------------------------------------------------------------- the rigid solver's pipeline

def scene_pipeline(entities, options: RigidOptions, layout, link_pos0: np.ndarray, link_quat0: np.ndarray,
                   plan=None):
    """The collision pipeline of a rigid scene, built for the layout, or None when collision is off
    or no geom pair can collide (rigid scenes without contacts pay nothing). entities: the solver's
    entities (description, morph, material); link_pos0 / link_quat0 (x, y, z, w): env 0's link
    poses at qpos0 (the neutral-overlap rule). An imported asset's contype/conaffinity are local
    masks (docs/semantics.md §R4). ``plan``: the one ``scene_kernel_modules`` returned for these
    entities and options, not used yet (the pipeline is then not made again: a non-convex mesh's
    decomposition runs once)."""
    if plan is None:
        plan = _scene_plan(entities, options)
    if plan is None:
        return None
    pipe, local, need_neutral = plan
    if need_neutral:
        _exclude_neutral_trees(pipe, entities, local, layout.device, link_pos0, link_quat0, layout.precision)
    pipe.build(layout.n_envs, layout.device, layout.precision, layout.partitions)
    return pipe


def _scene_plan(entities, options: RigidOptions):
    """(unbuilt pipeline, local masks, whether the neutral-overlap probe runs) of a rigid scene, or
    None when no pipeline is needed (scene_pipeline)."""
    from polyphys import morphs as M

    o = options
    if not o.enable_collision or o.disable_constraint:
        return None
    descs = [e.description for e in entities]
    local = [isinstance(e.morph, (M.MJCF, M.URDF)) for e in entities]
    pipe = CollisionPipeline.from_descriptions(descs, o, local_masks=local)
    n_collide = int(pipe.geom_collide.sum())
    if n_collide < 2 and not pipe.pairs:
        return None
    if n_collide <= 4 * SAP_THRESHOLD:          # the O(G^2) host filter is cheap here
        allowed = pipe.allowed_pairs()
        if not len(allowed) and not pipe.pairs:
            return None
        same = pipe.geom_entity[allowed[:, 0]] == pipe.geom_entity[allowed[:, 1]]
        need_neutral = bool(same.any()) and not o.enable_neutral_collision
    else:
        need_neutral = not o.enable_neutral_collision
    return pipe, local, need_neutral


def scene_kernel_modules(entities, options: RigidOptions) -> tuple[list, list, tuple | None]:
    """The collision kernel modules (names in kernels/) building and stepping this rigid scene launch,
    those the neutral-overlap probe launches at build, in the scene's precision (empty without a probe),
    and the scene's plan for ``scene_pipeline``. The scene's: none without a pipeline; else the
    driver, the sweep-and-prune broadphase when ``broadphase`` resolves to it, the narrowphase
    family module of each analytic type pair the pipeline can produce and the GJK + EPA module for
    the other pairs (``collision_modules``). The type pairs: those of the build-filtered pair list
    before the neutral-overlap rule (the probe runs on that list, all-vs-all), or every pair of the
    collidable types present under sweep-and-prune (an estimate: a type pair whose geoms are never
    near still compiles its module, once)."""
    plan = _scene_plan(entities, options)
    if plan is None:
        return [], [], None
    pipe, _, need_neutral = plan
    bp = options.broadphase
    if bp == "auto":
        bp = "sweep_and_prune" if int(pipe.geom_collide.sum()) > SAP_THRESHOLD else "all_vs_all"
    small = int(pipe.geom_collide.sum()) <= 4 * SAP_THRESHOLD      # _scene_plan's host filter
    allowed = pipe.pair_types(pipe.allowed_pairs() if bp == "all_vs_all" or small else None)
    names = collision_modules(allowed if bp == "all_vs_all" else pipe.pair_types(None), bp)
    probe = collision_modules(allowed, "all_vs_all") if need_neutral else []
    return names, probe, plan


def _exclude_neutral_trees(pipe, entities, local, device, link_pos0, link_quat0, precision: str) -> None:
    """docs/semantics.md §R4's neutral-overlap option (enable_neutral_collision=False): remove the pairs of one
    kinematic tree of one entity that touch at qpos0. Unlike the pipeline's own
    ``build(neutral_poses=...)`` (which takes every same-entity pair), a pair between two free
    trees, or between a free tree and the world-attached part (an MJCF floor and a free box
    resting on it), is kept: their relative placement at qpos0 is arbitrary. One all-vs-all pass of
    a probe pipeline on the neutral geom poses, in the scene's precision — the precision of those
    poses (the scene's forward kinematics at qpos0): a float64 probe of float32 poses removed the same
    pairs (build time only; the probe launches the kernels the scene compiles anyway)."""
    from polyphys.layout import Partition

    tree = []                       # per geom: (entity, nearest free-joint ancestor link or -1)
    for ei, e in enumerate(entities):
        d = e.description
        root = []
        for lk in d.links:
            free = any(d.joints[j].type == "free" for j in lk.joints)
            root.append(len(root) if free else (root[lk.parent] if lk.parent >= 0 else -1))
        tree += [(ei, root[g.link] if g.link >= 0 else -1) for g in d.geoms]
    probe_opts = attrs.evolve(pipe.options, broadphase="all_vs_all", enable_neutral_collision=True,
                              max_collision_pairs=None, max_candidate_contacts=None, max_contacts=None,
                              collision_overflow="warn")
    probe = CollisionPipeline.from_descriptions([e.description for e in entities], probe_opts, local_masks=local)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        probe.build(1, device, precision)
        pos, quat = _neutral_geom_poses(probe, link_pos0, link_quat0)
        set_poses_host(probe, pos[None], quat[None])
        probe.run(Partition(0, 0, 1))
    c = probe.contacts([0])[0]
    tol = neutral_overlap_tolerance(pos, precision)
    pairs = {(min(a, b), max(a, b)) for a, b, k, d in zip(c["geom_a"], c["geom_b"], c["pair"], c["depth"])
             if k < 0 and tree[a] == tree[b] and d > tol}
    G = pipe.n_geoms
    pipe.neutral_excluded = np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)
    keys = set(pipe.explicit_keys.tolist()) | {a * G + b for a, b in pairs}
    pipe.explicit_keys = np.array(sorted(keys), dtype=np.int64)


def neutral_overlap_tolerance(geom_pos, precision: str) -> float:
    """Depth (m) a pair must exceed at qpos0 to count as overlapping for the neutral-overlap rule: 64
    roundings of the scene's precision at the scene's coordinate scale. Geoms that merely touch at
    qpos0 (an MJCF walker's feet on its floor) then keep their contact in float32 as in float64,
    where the rounding of the poses alone made them overlap by ~1e-7 m; a pair only within the
    contact margin never counts."""
    eps = float(np.finfo(np.float64 if str(precision) == "64" else np.float32).eps)
    scale = max(1.0, float(np.max(np.abs(geom_pos))) if np.size(geom_pos) else 1.0)
    return 64.0 * eps * scale


def _neutral_geom_poses(pipe, link_pos0, link_quat0):
    """World pose (pos, quat w, x, y, z) of every geom from its link's pose (x, y, z, w storage)."""
    lp = np.asarray(link_pos0, float)
    lq = np.asarray(link_quat0, float)[:, [3, 0, 1, 2]]      # xyzw -> wxyz

    def qmul(a, b):
        w1, x1, y1, z1 = a
        w2, x2, y2, z2 = b
        return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                         w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])

    pos, quat = [], []
    for g in pipe.geoms:
        gp, gq = np.asarray(g.pos, float), np.asarray(g.quat, float)
        if g.link < 0:
            pos.append(gp)
            quat.append(gq)
            continue
        q = lq[g.link]
        r = qmul(qmul(q, np.r_[0.0, gp]), q * np.array([1.0, -1, -1, -1]))[1:]
        pos.append(lp[g.link] + r)
        quat.append(qmul(q, gq))
    return np.asarray(pos).reshape(-1, 3), np.asarray(quat).reshape(-1, 4)


__all__ = ["CollisionPipeline", "scene_pipeline", "SUPPORTED_PAIRS", "SAP_THRESHOLD",
           "set_poses_host", "quat_to_mat"]
