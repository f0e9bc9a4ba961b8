"""EntityDescription: the solver-agnostic model an importer returns.

Conventions (DESIGN "Data conventions"): SI units, quaternions (w, x, y, z), angles in radians.
Bodies keep the frames of the source file (no inertia alignment), so for an MJCF file the q and dof
order equals MuJoCo's qpos/qvel order. Geom sizes follow MuJoCo's convention (half sizes):
sphere (r,), capsule/cylinder (r, half_length), box (hx, hy, hz), ellipsoid (rx, ry, rz),
plane (hx, hy, grid spacing; 0 = infinite).
"""

from __future__ import annotations

import enum
from typing import Any

import attrs
import numpy as np


class JointType(enum.IntEnum):
    """Joint type codes: the only definition (host code, core's and the solvers' Warp kernels, which
    compare with the members directly). ``JointType.from_name("free")`` maps a description's type."""

    FIXED = 0
    REVOLUTE = 1
    PRISMATIC = 2
    SPHERICAL = 3
    FREE = 4

    @classmethod
    def from_name(cls, name: str) -> JointType:
        return cls[name.upper()]

    @property
    def n_qs(self) -> int:
        return (0, 1, 1, 4, 7)[self]

    @property
    def n_dofs(self) -> int:
        return (0, 1, 1, 3, 6)[self]


class GeomType(enum.IntEnum):
    """Geometry type codes: the only definition (host code and every Warp kernel that branches on a
    geom type: SDFs, collision, couplers). ``GeomType.from_name("box")`` maps a description's type."""

    PLANE = 0
    SPHERE = 1
    CAPSULE = 2
    CYLINDER = 3
    BOX = 4
    ELLIPSOID = 5
    MESH = 6
    HFIELD = 7

    @classmethod
    def from_name(cls, name: str) -> GeomType:
        return cls[name.upper()]


JOINT_TYPES = tuple(t.name.lower() for t in JointType)
JOINT_NQ = {t.name.lower(): t.n_qs for t in JointType}
JOINT_NDOF = {t.name.lower(): t.n_dofs for t in JointType}
GEOM_TYPES = tuple(t.name.lower() for t in GeomType)

IDENTITY_QUAT = (1.0, 0.0, 0.0, 0.0)


def _f3(v):
    return tuple(float(x) for x in np.asarray(v, dtype=float).reshape(3))


def _f4(v):
    return tuple(float(x) for x in np.asarray(v, dtype=float).reshape(4))


@attrs.define(kw_only=True)
class Inertial:
    """Mass properties in the link frame: CoM position and the inertia tensor about the CoM."""

    mass: float = 0.0
    com: tuple = attrs.field(default=(0.0, 0.0, 0.0), converter=_f3)
    inertia: np.ndarray = attrs.field(factory=lambda: np.zeros((3, 3)),
                                      converter=lambda a: np.asarray(a, dtype=float).reshape(3, 3))


@attrs.define(kw_only=True)
class MeshData:
    """Triangles in the geom frame (already scaled)."""

    vertices: np.ndarray
    faces: np.ndarray
    name: str = ""
    file: str | None = None


@attrs.define(kw_only=True)
class Link:
    name: str
    parent: int = -1                 # index into links; -1 is the world
    pos: tuple = attrs.field(default=(0.0, 0.0, 0.0), converter=_f3)    # in the parent frame
    quat: tuple = attrs.field(default=IDENTITY_QUAT, converter=_f4)
    inertial: Inertial = attrs.field(factory=Inertial)
    joints: list = attrs.field(factory=list)     # joint indices, applied in order
    geoms: list = attrs.field(factory=list)      # geom indices
    sites: list = attrs.field(factory=list)
    gravcomp: float = 0.0


@attrs.define(kw_only=True)
class Joint:
    name: str
    type: str
    link: int
    pos: tuple = attrs.field(default=(0.0, 0.0, 0.0), converter=_f3)    # anchor in the link frame
    axis: tuple = attrs.field(default=(0.0, 0.0, 1.0), converter=_f3)   # in the link frame
    limited: bool = False
    range: tuple = (0.0, 0.0)
    ref: float = 0.0                 # q of the reference configuration (MuJoCo qpos0)
    springref: float = 0.0
    stiffness: float = 0.0
    damping: float = 0.0
    armature: float = 0.0
    frictionloss: float = 0.0
    solref_limit: tuple = (0.02, 1.0)
    solimp_limit: tuple = (0.9, 0.95, 0.001, 0.5, 2.0)
    solref_friction: tuple = (0.02, 1.0)
    solimp_friction: tuple = (0.9, 0.95, 0.001, 0.5, 2.0)
    margin: float = 0.0
    q_start: int = -1                # filled by EntityDescription.finalize()
    dof_start: int = -1

    def __attrs_post_init__(self):
        if self.type not in JOINT_TYPES:
            from .errors import OptionError

            raise OptionError(f"joint {self.name!r}: type {self.type!r} not in {JOINT_TYPES}")

    @property
    def n_qs(self) -> int:
        return JOINT_NQ[self.type]

    @property
    def n_dofs(self) -> int:
        return JOINT_NDOF[self.type]


@attrs.define(kw_only=True)
class Geom:
    name: str
    type: str
    link: int
    size: tuple = (0.0, 0.0, 0.0)
    pos: tuple = attrs.field(default=(0.0, 0.0, 0.0), converter=_f3)
    quat: tuple = attrs.field(default=IDENTITY_QUAT, converter=_f4)
    role: str = "both"               # "collision", "visual" or "both"
    contype: int = 1
    conaffinity: int = 1
    condim: int = 3
    friction: tuple = (1.0, 0.005, 0.0001)
    solref: tuple = (0.02, 1.0)
    solimp: tuple = (0.9, 0.95, 0.001, 0.5, 2.0)
    solmix: float = 1.0
    priority: int = 0
    margin: float = 0.0
    gap: float = 0.0
    group: int = 0
    density: float = 1000.0
    rgba: tuple = (0.5, 0.5, 0.5, 1.0)
    mesh: MeshData | None = None
    hfield: Any = None


@attrs.define(kw_only=True)
class Site:
    name: str
    link: int
    pos: tuple = attrs.field(default=(0.0, 0.0, 0.0), converter=_f3)
    quat: tuple = attrs.field(default=IDENTITY_QUAT, converter=_f4)
    type: str = "sphere"
    size: tuple = (0.01, 0.0, 0.0)


@attrs.define(kw_only=True)
class Actuator:
    """MuJoCo's actuator model: force = gain·ctrl + bias0 + bias1·q + bias2·qdot (on the joint,
    times gear). ``type`` records the shortcut it came from (motor/position/velocity/general)."""

    name: str
    type: str = "general"
    joint: int = -1                  # transmission target (joint index); -1 for unsupported ones
    target: str = ""                 # the transmission as written (joint/tendon/site name)
    trntype: str = "joint"
    gear: tuple = (1.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    ctrllimited: bool = False
    ctrlrange: tuple = (0.0, 0.0)
    forcelimited: bool = False
    forcerange: tuple = (0.0, 0.0)
    gainprm: tuple = (1.0,) + (0.0,) * 9
    biasprm: tuple = (0.0,) * 10
    dyntype: str = "none"
    gaintype: str = "fixed"
    biastype: str = "none"


@attrs.define(kw_only=True)
class Equality:
    name: str
    type: str                        # "connect", "weld" or "joint"
    obj1: int = -1                   # link (connect/weld) or joint (joint) index
    obj2: int = -1                   # -1: the world
    anchor: tuple = (0.0, 0.0, 0.0)
    relpose: tuple = (0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0)
    torquescale: float = 1.0
    polycoef: tuple = (0.0, 1.0, 0.0, 0.0, 0.0)
    solref: tuple = (0.02, 1.0)
    solimp: tuple = (0.9, 0.95, 0.001, 0.5, 2.0)
    active: bool = True


@attrs.define(kw_only=True)
class Keyframe:
    name: str
    time: float = 0.0
    qpos: np.ndarray | None = None
    qvel: np.ndarray | None = None
    ctrl: np.ndarray | None = None


@attrs.define(kw_only=True)
class EntityDescription:
    """Links in topological order (a parent before its children), joints, geoms and the rest."""

    name: str = "entity"
    links: list = attrs.field(factory=list)
    joints: list = attrs.field(factory=list)
    geoms: list = attrs.field(factory=list)
    sites: list = attrs.field(factory=list)
    actuators: list = attrs.field(factory=list)
    equalities: list = attrs.field(factory=list)
    keyframes: list = attrs.field(factory=list)
    contact_excludes: list = attrs.field(factory=list)   # (link_a, link_b)
    contact_pairs: list = attrs.field(factory=list)      # dicts: geom1, geom2 and pair parameters
    tendons: list = attrs.field(factory=list)            # parsed and reported, not simulated
    options: dict = attrs.field(factory=dict)            # suggested SimOptions/RigidOptions values
    defaults: dict = attrs.field(factory=dict)
    warnings: list = attrs.field(factory=list)
    source: str | None = None
    # frames of links lumped into another link (URDF merge_fixed_links): name -> (link, pos, quat)
    frames: dict = attrs.field(factory=dict)

    def finalize(self) -> EntityDescription:
        """Assign q_start/dof_start in link order then joint order (MuJoCo's qpos order) and check
        the tree. Returns self."""
        from .errors import OptionError

        q = d = 0
        seen = set()
        for li, link in enumerate(self.links):
            if link.parent >= li:
                raise OptionError(f"link {link.name!r} (index {li}) has parent {link.parent}: links "
                                  f"must come after their parent")
            if link.name in seen:
                raise OptionError(f"duplicate link name {link.name!r}")
            seen.add(link.name)
            for ji in link.joints:
                j = self.joints[ji]
                if j.link != li:
                    raise OptionError(f"joint {j.name!r} lists link {j.link}, but link {li} owns it")
                j.q_start, j.dof_start = q, d
                q += j.n_qs
                d += j.n_dofs
        return self

    @property
    def n_links(self) -> int:
        return len(self.links)

    @property
    def n_qs(self) -> int:
        return sum(j.n_qs for j in self.joints)

    @property
    def n_dofs(self) -> int:
        return sum(j.n_dofs for j in self.joints)

    @property
    def total_mass(self) -> float:
        return float(sum(link.inertial.mass for link in self.links))

    def qpos0(self) -> np.ndarray:
        """The reference configuration (MuJoCo's qpos0) in q order."""
        out = np.zeros(self.n_qs)
        for link in self.links:
            for ji in link.joints:
                j = self.joints[ji]
                if j.type in ("revolute", "prismatic"):
                    out[j.q_start] = j.ref
                elif j.type == "spherical":
                    out[j.q_start:j.q_start + 4] = (1.0, 0.0, 0.0, 0.0)
                elif j.type == "free":
                    out[j.q_start:j.q_start + 3] = link.pos
                    out[j.q_start + 3:j.q_start + 7] = link.quat
        return out

    def link_index(self, name: str) -> int:
        for i, link in enumerate(self.links):
            if link.name == name:
                return i
        raise KeyError(f"no link named {name!r}; links: {[lk.name for lk in self.links]}")

    def joint_index(self, name: str) -> int:
        for i, j in enumerate(self.joints):
            if j.name == name:
                return i
        raise KeyError(f"no joint named {name!r}; joints: {[j.name for j in self.joints]}")


def without_collision(desc: EntityDescription) -> EntityDescription:
    """The description with every geom visual-only and no explicit contact pair: what
    ``Morph(collision=False)`` means (the entity's geometry takes part in no collision — contacts,
    and the geometry a coupler sees — while its links, joints and mass properties are unchanged)."""
    return attrs.evolve(desc, geoms=[attrs.evolve(g, role="visual") for g in desc.geoms], contact_pairs=[])


def from_primitive(morph, name: str = "entity", density: float = 1000.0) -> EntityDescription:
    """A one-link description of a primitive morph: a free root joint unless ``morph.fixed``.

    Mass properties of the solid shape at ``density`` (a plane has none). The link frame is the
    morph's frame; the root sits at ``morph.pos`` with ``morph.orientation``.
    """
    from . import morphs as M

    geom_type, size, mass, com, inertia = _primitive_mass(morph, density)
    link = Link(name=name, parent=-1, pos=morph.pos, quat=morph.orientation,
                inertial=Inertial(mass=mass, com=com, inertia=inertia))
    desc = EntityDescription(name=name, links=[link], source=type(morph).__name__)
    geom = Geom(name=f"{name}_geom", type=geom_type, link=0, size=size, density=density)
    if isinstance(morph, M.Mesh):
        tm = morph.load_trimesh()
        geom.mesh = MeshData(vertices=np.asarray(tm.vertices), faces=np.asarray(tm.faces),
                             file=morph.file)
    desc.geoms.append(geom)
    link.geoms.append(0)
    if not morph.fixed:
        desc.joints.append(Joint(name=f"{name}_root", type="free", link=0))
        link.joints.append(0)
    return desc.finalize()


def _primitive_mass(morph, rho):
    from . import morphs as M

    if isinstance(morph, M.Plane):
        return "plane", (0.0, 0.0, 1.0), 0.0, np.zeros(3), np.zeros((3, 3))
    if isinstance(morph, M.Box):
        a, b, c = morph.size
        m = rho * a * b * c
        inertia = np.diag([m * (b * b + c * c), m * (a * a + c * c), m * (a * a + b * b)]) / 12.0
        return "box", (a / 2, b / 2, c / 2), m, np.zeros(3), inertia
    if isinstance(morph, M.Sphere):
        r = morph.radius
        m = rho * 4.0 / 3.0 * np.pi * r**3
        return "sphere", (r, 0.0, 0.0), m, np.zeros(3), np.eye(3) * 0.4 * m * r * r
    if isinstance(morph, M.Cylinder):
        r, h = morph.radius, morph.height
        m = rho * np.pi * r * r * h
        ixx = m * (3 * r * r + h * h) / 12.0
        return "cylinder", (r, h / 2, 0.0), m, np.zeros(3), np.diag([ixx, ixx, 0.5 * m * r * r])
    if isinstance(morph, M.Capsule):
        r, h = morph.radius, morph.height
        mc = rho * np.pi * r * r * h
        ms = rho * 4.0 / 3.0 * np.pi * r**3
        izz = 0.5 * mc * r * r + 0.4 * ms * r * r
        # hemispheres: own inertia plus parallel axis to their centroids (3r/8 from the flat face)
        ixx = (mc * (3 * r * r + h * h) / 12.0
               + ms * (0.4 * r * r + h * h / 4.0 + 3.0 * h * r / 8.0))
        return "capsule", (r, h / 2, 0.0), mc + ms, np.zeros(3), np.diag([ixx, ixx, izz])
    if isinstance(morph, M.Mesh):
        tm = morph.load_trimesh()
        if tm.is_volume:
            tm.density = rho
            m = float(tm.mass)
            com = np.asarray(tm.center_mass)
            inertia = np.asarray(tm.moment_inertia)   # about the CoM, in the mesh frame
            return "mesh", (0.0, 0.0, 0.0), m, com, inertia
        return "mesh", (0.0, 0.0, 0.0), 0.0, np.zeros(3), np.zeros((3, 3))
    raise TypeError(f"not a primitive morph: {type(morph).__name__}")


# -- rotation and mass-property helpers shared by the importers ------------------------------------
def quat_to_mat(q) -> np.ndarray:
    """Unit quaternion (w, x, y, z) -> 3x3 rotation matrix."""
    w, x, y, z = (float(v) for v in np.asarray(q, dtype=float).reshape(4))
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def mat_to_quat(m) -> tuple:
    """3x3 rotation matrix -> unit quaternion (w, x, y, z) with w >= 0 (Shepperd's method)."""
    m = np.asarray(m, dtype=float)
    tr = m[0, 0] + m[1, 1] + m[2, 2]
    if tr > 0:
        s = 2.0 * np.sqrt(tr + 1.0)
        q = [0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s]
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        q = [(m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s]
    elif m[1, 1] > m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
        q = [(m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s]
    else:
        s = 2.0 * np.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
        q = [(m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s]
    q = np.asarray(q)
    q = q / np.linalg.norm(q)
    if q[0] < 0:
        q = -q
    return tuple(float(v) for v in q)


def quat_mul(a, b) -> tuple:
    aw, ax, ay, az = (float(v) for v in a)
    bw, bx, by, bz = (float(v) for v in b)
    return (aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw)


def compose(pos_a, quat_a, pos_b, quat_b) -> tuple:
    """Pose a∘b: frame b given in frame a, returned in a's parent frame."""
    p = np.asarray(pos_a, float) + quat_to_mat(quat_a) @ np.asarray(pos_b, float)
    q = np.asarray(quat_mul(quat_a, quat_b))
    return tuple(float(v) for v in p), tuple(float(v) for v in q / np.linalg.norm(q))


def inertial_in_frame(inertial: Inertial, pos, quat) -> Inertial:
    """``inertial`` given in a child frame at (pos, quat) expressed in the parent frame."""
    r = quat_to_mat(quat)
    return Inertial(mass=inertial.mass, com=np.asarray(pos, float) + r @ np.asarray(inertial.com),
                    inertia=r @ inertial.inertia @ r.T)


def combine_inertials(parts) -> Inertial:
    """Exact sum of rigid mass properties given in one frame (parallel-axis theorem)."""
    parts = list(parts)
    m = float(sum(p.mass for p in parts))
    if m > 0:
        com = sum(p.mass * np.asarray(p.com) for p in parts) / m
    else:   # massless parts may still carry rotational inertia (files write such links)
        com = np.zeros(3)
    inertia = np.zeros((3, 3))
    for p in parts:
        d = np.asarray(p.com) - com
        inertia += p.inertia + p.mass * (np.dot(d, d) * np.eye(3) - np.outer(d, d))
    return Inertial(mass=m, com=com, inertia=inertia)


def check_inertial(inertial: Inertial, where: str, strict_triangle: bool = True) -> str | None:
    """Raise OptionError for a negative mass or an inertia that is not positive semi-definite
    (names ``where``). Returns a warning text when the principal moments violate A + B >= C and
    ``strict_triangle`` is False (raises when it is True)."""
    from .errors import OptionError

    if not np.isfinite(inertial.mass) or inertial.mass < 0:
        raise OptionError(f"{where}: mass = {inertial.mass!r}: must be a finite number >= 0")
    i = inertial.inertia
    if not np.all(np.isfinite(i)):
        raise OptionError(f"{where}: inertia {i.tolist()} is not finite")
    if np.max(np.abs(i - i.T)) > 1e-9 * max(1.0, np.max(np.abs(i))):
        raise OptionError(f"{where}: inertia {i.tolist()} is not symmetric")
    ev = np.linalg.eigvalsh(0.5 * (i + i.T))
    scale = max(float(np.max(np.abs(ev))), 1e-300)
    # round-off allowance: relative 1e-9, plus 1e-15 kg·m² absolute (files that write a zero
    # tensor with a 1e-20 stray entry)
    if ev[0] < -1e-9 * scale - 1e-15:
        raise OptionError(f"{where}: inertia {i.tolist()} is not positive definite (principal "
                          f"moments {ev.tolist()}); every principal moment must be >= 0")
    a, b, c = ev
    if a + b < c - 1e-6 * scale:
        msg = (f"{where}: principal moments {ev.tolist()} violate the triangle inequality "
               f"A + B >= C (no rigid body has such an inertia)")
        if strict_triangle:
            raise OptionError(msg)
        return msg
    return None


def mesh_mass_properties(vertices, faces, shell: bool = False, mode: str = "exact"):
    """Volume (or area for ``shell``), CoM and inertia about the CoM per unit density of a
    triangle mesh.

    ``mode="exact"``: signed tetrahedra from the origin (exact for any closed, consistently
    oriented mesh; the divergence theorem). ``mode="legacy"``: MuJoCo's default ("legacy") rule,
    unsigned pyramids from the area-weighted face centroid (for the CoM) and then from the CoM (for
    volume and inertia); equal to exact for convex meshes. ``shell``: a thin surface of unit areal
    density.
    """
    v = np.asarray(vertices, dtype=float)
    f = np.asarray(faces, dtype=np.int64)
    a, b, c = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    cross = np.cross(b - a, c - a)
    area = 0.5 * np.linalg.norm(cross, axis=1)
    cen = (a + b + c) / 3.0
    if shell:
        w = area
        total = float(w.sum())
        com = (w[:, None] * cen).sum(0) / total
        div = 12.0
    elif mode == "legacy":
        facecen = (area[:, None] * cen).sum(0) / area.sum()
        w = np.abs(np.einsum("ni,ni->n", cen - facecen, cross)) / 6.0
        com = (w[:, None] * (0.75 * cen + 0.25 * facecen)).sum(0) / w.sum()
        w = np.abs(np.einsum("ni,ni->n", cen - com, cross)) / 6.0
        total = float(w.sum())
        div = 20.0
    elif mode == "exact":
        w = np.einsum("ni,ni->n", a, np.cross(b, c)) / 6.0
        total = float(w.sum())
        com = (w[:, None] * (a + b + c) / 4.0).sum(0) / total
        w = np.einsum("ni,ni->n", cen - com, cross) / 6.0
        div = 20.0
    else:
        raise ValueError(f"mesh_mass_properties mode = {mode!r}; allowed 'exact', 'legacy'")
    a, b, c = a - com, b - com, c - com
    s = a + b + c
    # second moment: tetrahedron with apex at the CoM vol/20 * (sum v v^T + s s^T); triangle
    # shell area/12 * (the same)
    cov = (np.einsum("n,ni,nj->ij", w / div, a, a) + np.einsum("n,ni,nj->ij", w / div, b, b)
           + np.einsum("n,ni,nj->ij", w / div, c, c) + np.einsum("n,ni,nj->ij", w / div, s, s))
    inertia = np.trace(cov) * np.eye(3) - cov
    return total, com, inertia


def describe_to_dict(desc: EntityDescription) -> dict:
    """A JSON-ready summary of a description (what ``polyphys inspect --json`` prints)."""
    def _l(x):
        return [float(v) for v in np.asarray(x, dtype=float).reshape(-1)]

    links = [{"name": lk.name, "parent": (desc.links[lk.parent].name if lk.parent >= 0 else None),
              "mass": float(lk.inertial.mass), "pos": _l(lk.pos), "quat": _l(lk.quat),
              "com": _l(lk.inertial.com), "joints": [desc.joints[j].name for j in lk.joints]}
             for lk in desc.links]
    joints = [{"name": j.name, "type": j.type, "link": desc.links[j.link].name,
               "q_start": int(j.q_start), "dof_start": int(j.dof_start), "n_qs": j.n_qs,
               "n_dofs": j.n_dofs, "axis": _l(j.axis),
               "range": (_l(j.range) if j.limited else None)} for j in desc.joints]
    geoms = [{"name": g.name, "type": g.type, "link": desc.links[g.link].name, "role": g.role,
              "size": _l(g.size), "pos": _l(g.pos), "quat": _l(g.quat)} for g in desc.geoms]
    acts = [{"name": a.name, "type": a.type, "target": a.target, "trntype": a.trntype,
             "joint": (desc.joints[a.joint].name if a.joint >= 0 else None), "gear": _l(a.gear),
             "ctrlrange": (_l(a.ctrlrange) if a.ctrllimited else None)} for a in desc.actuators]
    return {"name": desc.name, "source": desc.source, "total_mass": desc.total_mass,
            "n_links": desc.n_links, "n_qs": desc.n_qs, "n_dofs": desc.n_dofs, "links": links,
            "joints": joints, "geoms": geoms, "actuators": acts,
            "equalities": [{"name": e.name, "type": e.type} for e in desc.equalities],
            "tendons": [t.get("name", "") for t in desc.tendons],
            "options": {k: (list(v) if isinstance(v, tuple) else v) for k, v in desc.options.items()},
            "warnings": list(desc.warnings)}
