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

from .rotations import mat_to_quat, quat_to_mat  # noqa: F401  (re-exported: the importers use them)
from .rotations import quat_mul_tuple as quat_mul


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
    src: str = ""                    # where the source file wrote it ("file:line: <body ...>")


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
    src: str = ""

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
    # rendering only (docs/cameras.md): None, or a checker texture (rgb1 (3,), rgb2 (3,), square side
    # in m) whose colours multiply ``rgba`` (an MJCF material's checker texture)
    texture: Any = None
    src: str = ""


@attrs.define(kw_only=True)
class Site:
    name: str
    link: int
    pos: tuple = attrs.field(default=(0.0, 0.0, 0.0), converter=_f3)
    quat: tuple = attrs.field(default=IDENTITY_QUAT, converter=_f4)
    type: str = "sphere"
    size: tuple = (0.01, 0.0, 0.0)
    src: str = ""


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
    src: str = ""


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
    src: str = ""


@attrs.define(kw_only=True)
class SensorRecord:
    """A sensor declared in a model file, as the importer mapped it to a polyphys sensor kind: the
    scene adds it (``scene.add_sensor(kind, entity, name=name, **options)``) with the entity and
    lists it in ``entity.sensors`` (docs/sensors.md, "MJCF")."""

    name: str
    kind: str                        # a registered sensor kind: "imu", "force_torque", "frame", ...
    options: dict = attrs.field(factory=dict)    # add_sensor keywords (site=..., outputs=..., noise=...)
    source: str = ""                 # what the file declared, e.g. "MJCF accelerometer"


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
    sensors: list = attrs.field(factory=list)            # SensorRecord
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
    if isinstance(morph, M.Plane):
        geom.quat = _quat_z_to(morph.normal)      # the plane geom is z = 0 of its frame: turn z to the normal
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


def _quat_z_to(n) -> tuple:
    """The shortest-arc unit quaternion (w, x, y, z) turning +z onto the unit vector ``n`` (a half turn
    about x for n = -z)."""
    n = np.asarray(n, dtype=float)
    n = n / np.linalg.norm(n)
    c = float(n[2])
    if c < -1.0 + 1e-12:
        return (0.0, 1.0, 0.0, 0.0)
    w = np.sqrt(0.5 * (1.0 + c))
    axis = np.cross((0.0, 0.0, 1.0), n) / (2.0 * w)       # sin(θ/2)·(z × n)/|z × n| = (z × n)/(2 cos(θ/2))
    return (float(w), float(axis[0]), float(axis[1]), float(axis[2]))


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
    # work on the tensor divided by its largest entry: entries near the double range (1e308) would
    # overflow in the differences and the eigen decomposition
    s0 = float(np.max(np.abs(i)))
    n = i / s0 if s0 > 0 else i
    if np.max(np.abs(n - n.T)) > 1e-9 * max(1.0, 1.0 / s0 if s0 > 0 else 1.0):
        raise OptionError(f"{where}: inertia {i.tolist()} is not symmetric")
    ev_n = np.linalg.eigvalsh(0.5 * (n + n.T))
    scale_n = max(float(np.max(np.abs(ev_n))), 1e-300)
    with np.errstate(over="ignore"):
        ev = ev_n * s0 if s0 > 0 else ev_n
    # round-off allowance: relative 1e-9, plus 1e-15 kg·m² absolute (files that write a zero
    # tensor with a 1e-20 stray entry)
    if ev_n[0] < -1e-9 * scale_n - (1e-15 / s0 if s0 > 0 else 1e-15):
        raise OptionError(f"{where}: inertia {i.tolist()} is not positive definite (principal "
                          f"moments {ev.tolist()}); every principal moment must be >= 0")
    scale = scale_n
    ev = ev_n if s0 > 0 else ev
    a, b, c = ev
    if a + b < c - 1e-6 * scale:
        with np.errstate(over="ignore"):
            shown = (ev * s0 if s0 > 0 else ev).tolist()
        msg = (f"{where}: principal moments {shown} violate the triangle inequality "
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


# -- validation: every description an importer returns (docs/importers.md, "Errors") -----------------
FLOAT32_MAX = float(np.finfo(np.float32).max)
# sizes that must be positive per geom type (MuJoCo refuses a zero or negative one too)
_POSITIVE_SIZES = {"sphere": 1, "capsule": 2, "cylinder": 2, "ellipsoid": 3, "box": 3}


class _Problems(list):
    """Collects ``where field = value: reason`` lines; stops adding after ``limit``."""

    def __init__(self, limit):
        super().__init__()
        self.limit = limit
        self.more = 0

    def add(self, msg):
        if len(self) < self.limit:
            self.append(msg)
        else:
            self.more += 1


def _label(kind, obj):
    src = getattr(obj, "src", "") or ""
    name = getattr(obj, "name", "")
    return f"{src} {kind} {name!r}".strip() if src else f"{kind} {name!r}"


def _fmt(value):
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return repr(value)
    if arr.ndim == 0:
        return f"{float(arr):g}"
    if arr.size > 6:
        bad = arr[~np.isfinite(arr)] if not np.all(np.isfinite(arr)) else arr[np.argmax(np.abs(arr))]
        return f"<{arr.size} values, e.g. {np.ravel(bad)[0]:g}>"
    return "(" + ", ".join(f"{v:g}" for v in arr.ravel()) + ")"


def _numbers(out, lbl, field, value, n=None, ge=None, gt=None):
    """Finite, representable in float32 (the default precision), and within bounds; False if not."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        out.add(f"{lbl} {field} = {value!r}: not numbers")
        return False
    if n is not None and arr.size != n:
        out.add(f"{lbl} {field} = {_fmt(value)}: expected {n} numbers, got {arr.size}")
        return False
    if arr.size == 0:
        return True
    if not np.all(np.isfinite(arr)):
        out.add(f"{lbl} {field} = {_fmt(value)}: not finite; every number must be finite")
        return False
    if float(np.max(np.abs(arr))) > FLOAT32_MAX:
        out.add(f"{lbl} {field} = {_fmt(value)}: beyond the float32 range (|x| <= {FLOAT32_MAX:.3g}) "
                f"of polyphys' default precision")
        return False
    if ge is not None and np.any(arr < ge):
        out.add(f"{lbl} {field} = {_fmt(value)}: must be >= {ge:g}")
        return False
    if gt is not None and np.any(arr <= gt):
        out.add(f"{lbl} {field} = {_fmt(value)}: must be > {gt:g}")
        return False
    return True


def _unit(out, lbl, field, value, n):
    if _numbers(out, lbl, field, value, n):
        norm = float(np.linalg.norm(np.asarray(value, dtype=float)))
        if abs(norm - 1.0) > 1e-6:
            out.add(f"{lbl} {field} = {_fmt(value)}: must have unit length (|{field}| = {norm:g})")


def _index(out, lbl, field, value, n, allow_world=True):
    lo = -1 if allow_world else 0
    if not isinstance(value, (int, np.integer)) or not lo <= int(value) < n:
        out.add(f"{lbl} {field} = {value!r}: not an index in [{lo}, {n})")


def _bulk(out, items, kind, field, n=None, ge=None, gt=None, unit=False, get=None):
    """Check one numeric field of many items at once (finite, float32 range, bounds, unit length);
    only the items that fail are looked at one by one, for their message. Returns the indices of
    the items that passed."""
    if not items:
        return []
    vals = [get(it) if get is not None else getattr(it, field) for it in items]
    try:
        arr = np.asarray(vals, dtype=float).reshape(len(items), -1 if n is None else n)
    except (TypeError, ValueError):   # a wrong type or size somewhere: look at each item
        ok = np.zeros(len(items), bool)
    else:
        with np.errstate(invalid="ignore", over="ignore"):
            ok = np.isfinite(arr).all(1) & (np.abs(arr) <= FLOAT32_MAX).all(1)
            if ge is not None:
                ok &= (arr >= ge).all(1)
            if gt is not None:
                ok &= (arr > gt).all(1)
            if unit:
                ok &= np.abs(np.linalg.norm(arr, axis=1) - 1.0) <= 1e-6
    for i in np.flatnonzero(~ok):
        lbl = _label(kind, items[i])
        if unit:
            _unit(out, lbl, field, vals[i], n)
        else:
            _numbers(out, lbl, field, vals[i], n, ge=ge, gt=gt)
    return list(np.flatnonzero(ok))


def _inertias(out, links):
    """Mass and inertia of every link: finite, mass >= 0, inertia symmetric and positive
    semi-definite (batched; check_inertial words the failures)."""
    from .errors import OptionError

    good = set(_bulk(out, links, "link", "mass", ge=0.0, get=lambda lk: lk.inertial.mass))
    good &= set(_bulk(out, links, "link", "com", 3, get=lambda lk: lk.inertial.com))
    good &= set(_bulk(out, links, "link", "inertia", 9, get=lambda lk: lk.inertial.inertia))
    idx = sorted(good)
    if not idx:
        return
    t = np.array([np.asarray(links[i].inertial.inertia, float).reshape(3, 3) for i in idx])
    s0 = np.abs(t).reshape(len(idx), 9).max(1)
    scale = np.where(s0 > 0, s0, 1.0)
    nt = t / scale[:, None, None]
    sym = np.abs(nt - nt.transpose(0, 2, 1)).reshape(len(idx), 9).max(1) <= 1e-9 * np.maximum(1.0, 1.0 / scale)
    ev = np.linalg.eigvalsh(0.5 * (nt + nt.transpose(0, 2, 1)))
    psd = ev[:, 0] >= -1e-9 * np.maximum(np.abs(ev).max(1), 1e-300) - 1e-15 / scale
    for k in np.flatnonzero(~(sym & psd)):
        lk = links[idx[k]]
        try:
            check_inertial(lk.inertial, f"{_label('link', lk)} inertial", strict_triangle=False)
        except OptionError as exc:
            out.add(str(exc))


def description_problems(desc: EntityDescription, limit: int = 20) -> list:
    """Everything in ``desc`` that is not finite or not physically valid, one line each (at most
    ``limit``, then a count): non-finite numbers or numbers beyond float32, negative masses,
    inertias that are not positive semi-definite, axes and quaternions that are not unit vectors,
    negative stiffness/damping/armature/frictionloss/friction/density, non-positive primitive
    sizes, inverted limits, meshes without triangles or with faces that index no vertex, indices
    that point nowhere. Items carry ``src`` (file:line) where their importer recorded it. Fields
    are checked in bulk (NumPy over all items); only failing items are examined one by one."""
    out = _Problems(limit)
    nl, nj, ng = len(desc.links), len(desc.joints), len(desc.geoms)
    links = desc.links
    _bulk(out, links, "link", "pos", 3)
    _bulk(out, links, "link", "quat", 4, unit=True)
    _bulk(out, links, "link", "gravcomp")
    _inertias(out, links)
    joints = desc.joints
    for j in joints:
        _index(out, _label("joint", j), "link", j.link, nl, allow_world=False)
    _bulk(out, joints, "joint", "pos", 3)
    hinge = [j for j in joints if j.type in ("revolute", "prismatic")]
    _bulk(out, hinge, "joint", "axis", 3, unit=True)
    _bulk(out, [j for j in joints if j.type not in ("revolute", "prismatic")], "joint", "axis", 3)
    for i in _bulk(out, joints, "joint", "range", 2):
        j = joints[i]
        if j.limited and j.range[0] > j.range[1]:
            out.add(f"{_label('joint', j)} range = {_fmt(j.range)}: lower > upper")
    for field in ("ref", "springref", "margin"):
        _bulk(out, joints, "joint", field)
    for field in ("stiffness", "damping", "armature", "frictionloss"):
        _bulk(out, joints, "joint", field, ge=0.0)
    for field, n in (("solref_limit", 2), ("solimp_limit", 5), ("solref_friction", 2),
                     ("solimp_friction", 5)):
        _bulk(out, joints, "joint", field, n)
    geoms = desc.geoms
    for g in geoms:
        lbl = _label("geom", g)
        _index(out, lbl, "link", g.link, nl, allow_world=False)
        if g.type not in GEOM_TYPES:
            out.add(f"{lbl} type = {g.type!r}: allowed {GEOM_TYPES}")
        if g.condim not in (1, 3, 4, 6):
            out.add(f"{lbl} condim = {g.condim!r}: allowed 1, 3, 4, 6")
    for i in _bulk(out, geoms, "geom", "size", 3):
        g = geoms[i]
        k = _POSITIVE_SIZES.get(g.type, 0)
        if k and min(float(v) for v in list(g.size)[:k]) <= 0:
            out.add(f"{_label('geom', g)} size = {_fmt(g.size)}: a {g.type} needs {k} positive "
                    f"size(s)")
        elif g.type == "plane" and min(float(v) for v in g.size) < 0:
            out.add(f"{_label('geom', g)} size = {_fmt(g.size)}: plane sizes must be >= 0 (0: "
                    f"infinite)")
    _bulk(out, geoms, "geom", "pos", 3)
    _bulk(out, geoms, "geom", "quat", 4, unit=True)
    _bulk(out, geoms, "geom", "friction", 3, ge=0.0)
    _bulk(out, geoms, "geom", "solref", 2)
    _bulk(out, geoms, "geom", "solimp", 5)
    _bulk(out, geoms, "geom", "solmix", ge=0.0)
    _bulk(out, geoms, "geom", "density", ge=0.0)
    _bulk(out, geoms, "geom", "margin")
    _bulk(out, geoms, "geom", "gap")
    _bulk(out, geoms, "geom", "rgba", 4)
    for g in geoms:
        lbl = _label("geom", g)
        if g.type == "mesh" and g.mesh is None:
            out.add(f"{lbl}: a mesh geom without mesh data")
        if g.mesh is not None:
            v = np.asarray(g.mesh.vertices)
            f = np.asarray(g.mesh.faces)
            if v.ndim != 2 or v.shape[1] != 3 or len(v) == 0:
                out.add(f"{lbl} mesh vertices: shape {v.shape}, expected (n >= 1, 3)")
            elif f.ndim != 2 or f.shape[1] != 3 or len(f) == 0:
                out.add(f"{lbl} mesh faces: shape {f.shape}, expected (m >= 1, 3) triangles")
            elif _numbers(out, lbl, "mesh vertices", v):
                if not np.issubdtype(f.dtype, np.integer) or f.min() < 0 or f.max() >= len(v):
                    out.add(f"{lbl} mesh faces index vertices outside [0, {len(v)})")
        if g.texture is not None:
            t = g.texture
            if not (isinstance(t, (tuple, list)) and len(t) == 3):
                out.add(f"{lbl} texture = {t!r}: expected (rgb1, rgb2, square side in m)")
            elif _numbers(out, lbl, "texture rgb1", t[0], 3, ge=0.0) and _numbers(out, lbl, "texture rgb2", t[1], 3,
                                                                                    ge=0.0):
                _numbers(out, lbl, "texture square", t[2], 1, gt=0.0)
        if g.hfield is not None and isinstance(g.hfield, dict):
            if _numbers(out, lbl, "hfield size", g.hfield.get("size", ()), 4):
                hs = g.hfield["size"]
                if hs[0] <= 0 or hs[1] <= 0 or hs[2] < 0 or hs[3] < 0:
                    out.add(f"{lbl} hfield size = {_fmt(hs)}: x and y radii must be > 0, "
                            f"elevation and base >= 0")
            if "data" in g.hfield:
                _numbers(out, lbl, "hfield data", g.hfield["data"])
    sites = desc.sites
    for st in sites:
        _index(out, _label("site", st), "link", st.link, nl, allow_world=False)
    _bulk(out, sites, "site", "pos", 3)
    _bulk(out, sites, "site", "quat", 4, unit=True)
    _bulk(out, sites, "site", "size")
    acts = desc.actuators
    for a in acts:
        _index(out, _label("actuator", a), "joint", a.joint, nj)
    _bulk(out, acts, "actuator", "gear", 6)
    for field in ("ctrlrange", "forcerange"):
        for i in _bulk(out, acts, "actuator", field, 2):
            a = acts[i]
            r = getattr(a, field)
            if getattr(a, field.replace("range", "limited")) and r[0] > r[1]:
                out.add(f"{_label('actuator', a)} {field} = {_fmt(r)}: lower > upper")
    _bulk(out, acts, "actuator", "gainprm")
    _bulk(out, acts, "actuator", "biasprm")
    eqs = desc.equalities
    for e in eqs:
        lbl = _label("equality", e)
        n = nj if e.type == "joint" else nl
        _index(out, lbl, "obj1", e.obj1, n, allow_world=False)
        _index(out, lbl, "obj2", e.obj2, n)
    for field, n in (("anchor", 3), ("relpose", 7), ("polycoef", 5), ("torquescale", None),
                     ("solref", 2), ("solimp", 5)):
        _bulk(out, eqs, "equality", field, n)
    for kf in desc.keyframes:
        lbl = f"keyframe {kf.name!r}"
        _numbers(out, lbl, "time", kf.time)
        for field in ("qpos", "qvel", "ctrl"):
            if getattr(kf, field) is not None:
                _numbers(out, lbl, field, getattr(kf, field))
    for k, p in enumerate(desc.contact_pairs):
        lbl = f"contact pair {p.get('name') or k!r}"
        _index(out, lbl, "geom1", p.get("geom1"), ng, allow_world=False)
        _index(out, lbl, "geom2", p.get("geom2"), ng, allow_world=False)
        for key, val in p.items():
            if key in ("geom1", "geom2", "name"):
                continue
            _numbers(out, lbl, key, val, ge=0.0 if key == "friction" else None)
    for a, b in desc.contact_excludes:
        _index(out, "contact exclude", "body", a, nl)
        _index(out, "contact exclude", "body", b, nl)
    for name, (li, pos, quat) in desc.frames.items():
        _index(out, f"frame {name!r}", "link", li, nl, allow_world=False)
        _numbers(out, f"frame {name!r}", "pos", pos, 3)
        _unit(out, f"frame {name!r}", "quat", quat, 4)
    opts = desc.options
    if "dt" in opts:
        _numbers(out, "option", "timestep", opts["dt"], gt=0.0)
    if "gravity" in opts:
        _numbers(out, "option", "gravity", opts["gravity"], 3)
    for key in ("tolerance", "ls_tolerance", "noslip_tolerance", "impratio", "iterations",
                "ls_iterations", "noslip_iterations"):
        if key in opts:
            _numbers(out, "option", key, opts[key], ge=0.0)
    if out.more:
        out.append(f"... and {out.more} more")
    return list(out)


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


# -- the file-morph options every importer applies (fixed, scale, visual, convexify) ----------------
def apply_fixed(desc, fixed, roots):
    """A file morph's ``fixed`` (docs/importers.md): True removes the free joints of the root links
    ``roots`` (indices); False gives jointless roots one (first in q order); None leaves the file's
    choice. Joint references (actuators, equalities, tendons) and keyframes follow. Shared by the
    importers (MJCF: roots are the world body's children; URDF: the parentless links)."""
    if fixed is None:
        return
    desc.finalize()
    old = {id(j): (j.q_start, j.dof_start) for j in desc.joints}
    if fixed:
        drop = {ji for r in roots for ji in desc.links[r].joints if desc.joints[ji].type == "free"}
        if not drop:
            return
        order = [ji for lk in desc.links for ji in lk.joints if ji not in drop]
    else:
        added = False
        for r in roots:
            if not desc.links[r].joints:
                desc.joints.append(Joint(name=f"{desc.links[r].name}_root", type="free", link=r))
                desc.links[r].joints.insert(0, len(desc.joints) - 1)
                added = True
        if not added:
            return
        order = [ji for lk in desc.links for ji in lk.joints]
    remap = {o: n for n, o in enumerate(order)}
    desc.joints = [desc.joints[i] for i in order]
    for lk in desc.links:
        lk.joints = [remap[j] for j in lk.joints if j in remap]
    for a in desc.actuators:
        if a.trntype == "joint":
            a.joint = remap.get(a.joint, -1)
    desc.equalities = [e for e in desc.equalities if e.type != "joint"
                       or (e.obj1 in remap and (e.obj2 == -1 or e.obj2 in remap))]
    for e in desc.equalities:
        if e.type == "joint":
            e.obj1, e.obj2 = remap[e.obj1], (remap[e.obj2] if e.obj2 >= 0 else -1)
    for t in desc.tendons:
        if "joints" in t:
            t["joints"] = [(remap[j], c) for j, c in t["joints"] if j in remap]
    desc.finalize()
    for kf in desc.keyframes:
        q, v = desc.qpos0(), np.zeros(desc.n_dofs)
        for j in desc.joints:
            if id(j) in old:
                oq, od = old[id(j)]
                if kf.qpos is not None:
                    q[j.q_start:j.q_start + j.n_qs] = kf.qpos[oq:oq + j.n_qs]
                if kf.qvel is not None:
                    v[j.dof_start:j.dof_start + j.n_dofs] = kf.qvel[od:od + j.n_dofs]
        kf.qpos = q if kf.qpos is not None else None
        kf.qvel = v if kf.qvel is not None else None


def apply_scale(desc, s):
    """A file morph's ``scale`` s, at constant density (docs/semantics.md §S3): lengths × s (positions,
    sizes, meshes, prismatic ranges and references, contact margins, torsional/rolling friction
    coefficients, sites, anchors, frames, keyframe translations), masses × s³, inertias × s⁵."""
    if s == 1.0:
        return
    for lk in desc.links:
        lk.pos = tuple(np.asarray(lk.pos) * s)
        lk.inertial = Inertial(mass=lk.inertial.mass * s ** 3, com=np.asarray(lk.inertial.com) * s,
                               inertia=lk.inertial.inertia * s ** 5)
    for j in desc.joints:
        j.pos = tuple(np.asarray(j.pos) * s)
        if j.type == "prismatic":
            j.range = tuple(v * s for v in j.range)
            j.ref *= s
            j.springref *= s
    for g in desc.geoms:
        g.pos = tuple(np.asarray(g.pos) * s)
        g.size = tuple(v * s for v in g.size)
        # lengths too: contact margin/gap and the torsional/rolling friction coefficients (m)
        g.margin, g.gap = g.margin * s, g.gap * s
        g.friction = (g.friction[0], g.friction[1] * s, g.friction[2] * s)
        if g.hfield is not None:
            g.hfield = dict(g.hfield, size=tuple(v * s for v in g.hfield["size"]))
        if g.mesh is not None:
            g.mesh = MeshData(vertices=g.mesh.vertices * s, faces=g.mesh.faces, name=g.mesh.name,
                              file=g.mesh.file)
    for st in desc.sites:
        st.pos = tuple(np.asarray(st.pos) * s)
        st.size = tuple(v * s for v in st.size)
    for p in desc.contact_pairs:
        for key in ("margin", "gap"):
            if key in p:
                p[key] *= s
        if "friction" in p:
            f = p["friction"]
            p["friction"] = (f[0], f[1], f[2] * s, f[3] * s, f[4] * s)
    for e in desc.equalities:
        e.anchor = tuple(np.asarray(e.anchor) * s)
        e.relpose = tuple(np.asarray(e.relpose[:3]) * s) + tuple(e.relpose[3:])
    for name, (li, pos, quat) in list(desc.frames.items()):
        desc.frames[name] = (li, tuple(np.asarray(pos) * s), quat)
    for kf in desc.keyframes:
        if kf.qpos is not None:
            for j in desc.joints:
                if j.type == "prismatic":
                    kf.qpos[j.q_start] *= s
                elif j.type == "free":
                    kf.qpos[j.q_start:j.q_start + 3] *= s


def apply_geometry_options(desc, morph):
    """visual=False drops visual-only geoms; convexify replaces collision meshes by their hull.
    (The morph's ``collision`` flag is the solver's business: geoms keep their roles.)"""
    if morph.convexify:
        import trimesh

        for g in desc.geoms:
            if g.mesh is not None and g.role != "visual":
                hull = trimesh.Trimesh(g.mesh.vertices, g.mesh.faces, process=False).convex_hull
                g.mesh = MeshData(vertices=np.asarray(hull.vertices), faces=np.asarray(hull.faces),
                                  name=g.mesh.name + "_hull", file=g.mesh.file)
    if not morph.visual:
        drop_visual_geoms(desc)


def drop_visual_geoms(desc):
    """Remove the visual-only geoms, renumbering the links' geom lists and the contact pairs."""
    keep = [i for i, g in enumerate(desc.geoms) if g.role != "visual"]
    remap = {old: new for new, old in enumerate(keep)}
    desc.geoms = [desc.geoms[i] for i in keep]
    for lk in desc.links:
        lk.geoms = [remap[i] for i in lk.geoms if i in remap]
    desc.contact_pairs = [p for p in desc.contact_pairs
                          if p["geom1"] in remap and p["geom2"] in remap]
    for p in desc.contact_pairs:
        p["geom1"], p["geom2"] = remap[p["geom1"]], remap[p["geom2"]]
