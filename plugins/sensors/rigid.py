"""Rigid-body sensors: imu, force_torque, touch, contact, contact_force, frame, joint, actuator,
subtree (docs/sensors.md). They read any solver exposing ``polyphys.views.RigidSensorView`` — never
a solver plugin — so a third-party rigid solver that exposes the view gets all of them.

Every reading belongs to the state of the solver's last solve in the step (``stage = "solve"``,
tagged ``solved_at`` = step end − ``time_lag``; the rigid solver: the start of the last substep,
MuJoCo's convention). Sensors of one kind on one solver are evaluated by one kernel launch
(``RigidGroup``; kernels in kernels/rigid.py).
"""

from __future__ import annotations

import numpy as np
from polyphys.errors import OptionError
from polyphys.interfaces import Sensor
from polyphys.sensors import SensorGroup
from polyphys.views import RigidSensorView

SITE_TYPES = {"sphere": 0, "capsule": 1, "ellipsoid": 2, "cylinder": 3, "box": 4}
IDENTITY = (1.0, 0.0, 0.0, 0.0)


def _vec(owner, key, value, n):
    try:
        arr = np.asarray(value, float).reshape(n)
    except (TypeError, ValueError):
        raise OptionError(f"sensor {owner}: {key} = {value!r}: expected {n} numbers") from None
    if not np.all(np.isfinite(arr)):
        raise OptionError(f"sensor {owner}: {key} = {value!r}: must be finite")
    return arr


def _qmul(a, b):
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def _qrot(q, v):
    p = _qmul(_qmul(q, np.r_[0.0, v]), np.asarray(q) * [1.0, -1, -1, -1])
    return p[1:]


class Frame:
    """A sensor frame resolved against an entity: a pose on a link (link-frame offset) or its CoM."""

    def __init__(self, link=-1, pos=(0.0, 0.0, 0.0), quat=IDENTITY, com=0, zone="sphere", size=(0.0, 0.0, 0.0),
                 what="world"):
        self.link, self.pos, self.quat, self.com = int(link), np.asarray(pos, float), np.asarray(quat, float), com
        self.zone, self.size, self.what = zone, np.asarray(size, float), what


class RigidSensor(Sensor):
    """Common part of the rigid sensors: outputs, the RigidSensorView, frame resolution, grouping."""

    stage = "solve"
    OUTPUTS: dict = {}               # output name -> (width, datatype), in slot order
    DEFAULT: tuple = ()

    def __init__(self, scene, spec, entity=None, *, outputs=None, **common):
        super().__init__(scene, spec, entity, **common)
        if entity is None:
            raise OptionError(f"sensor {self.full_name!r} ({self.kind}): needs entity=... (the rigid entity it "
                              f"is attached to)")
        outs = self.DEFAULT if outputs is None else outputs
        if isinstance(outs, str):
            outs = (outs,)
        outs = tuple(outs)
        bad = [o for o in outs if o not in self.OUTPUTS]
        if bad or not outs or len(set(outs)) != len(outs):
            raise OptionError(f"sensor {self.full_name!r} ({self.kind}): outputs = {outputs!r}: allowed a non-empty "
                              f"selection without repeats of {list(self.OUTPUTS)}")
        self.outputs = outs

    def kernel_modules(self, layout):
        """The rigid sensors' ground-truth kernels, in the scene's precision."""
        from .kernels import rigid as K

        K.declare_overloads(layout.precision)
        return [K]

    # -- build ------------------------------------------------------------------------------------
    def build(self, layout):
        super().build(layout)
        solver = self.entity.solver
        view = solver.view(RigidSensorView)
        if view is None:
            raise OptionError(f"sensor {self.full_name!r} ({self.kind}): entity {self.entity.name!r} belongs to solver "
                              f"{solver.name!r}, which does not expose the RigidSensorView this sensor reads; allowed: "
                              f"entities of a solver exposing polyphys.views.RigidSensorView (e.g. rigid)")
        self.view = view
        self.tables = view.sensor_tables(self.entity)
        view.request_sensor_data()
        self.time_lag = float(view.sensor_data(layout.partitions[0]).time_lag)
        self.resolve()
        self.fields = [(o, self.width(o), self.OUTPUTS[o][1]) for o in self.outputs]

    def resolve(self) -> None:
        """Resolve the kind's names (subclasses)."""

    def width(self, output: str) -> int:
        return self.OUTPUTS[output][0]

    def slots(self) -> list:
        """Per output in slot order: its column offset within the sensor, or −1."""
        off = {}
        c = 0
        for o in self.outputs:
            off[o] = c
            c += self.width(o)
        return [off.get(o, -1) for o in self.OUTPUTS]

    def group_key(self):
        return (type(self), id(self.view))

    @classmethod
    def make_group(cls, sensors, layout):
        return cls.GROUP(sensors, layout)

    # -- names ------------------------------------------------------------------------------------
    def _pick(self, table: str, value):
        names = getattr(self.tables, table)
        if value not in names:
            what = table[:-1]
            raise OptionError(f"sensor {self.full_name!r} ({self.kind}): {what} = {value!r}: entity "
                              f"{self.entity.name!r} has no such {what}; its {table}: {sorted(names)}")
        return names[value]

    def frame(self, prefix: str = "", *, site=None, link=None, geom=None, com=None, offset_pos=None,
              offset_quat=None, required=True) -> Frame:
        """The frame named by exactly one of site=, link= (the link frame), geom=, com= (the link's CoM)."""
        given = {k: v for k, v in (("site", site), ("link", link), ("geom", geom), ("com", com)) if v is not None}
        if len(given) != 1:
            if not given and not required:
                return Frame()
            keys = [f"{prefix}{k}" for k in ("site", "link", "geom", "com")]
            raise OptionError(f"sensor {self.full_name!r} ({self.kind}): give exactly one of {keys}; got "
                              f"{ {prefix + k: v for k, v in given.items()} }")
        (kind, name), = given.items()
        if kind == "link" or kind == "com":
            fr = Frame(self._pick("links", name), com=int(kind == "com"), what=f"{kind} {name!r}")
        else:
            li, pos, quat, typ, size = self._pick("sites" if kind == "site" else "geoms", name)
            fr = Frame(li, pos, quat, zone=typ, size=size, what=f"{kind} {name!r}")
        if offset_pos is not None or offset_quat is not None:
            op = _vec(self.full_name, "offset_pos", offset_pos if offset_pos is not None else (0, 0, 0), 3)
            oq = _vec(self.full_name, "offset_quat", offset_quat if offset_quat is not None else IDENTITY, 4)
            oq = oq / np.linalg.norm(oq)
            fr.pos = fr.pos + _qrot(fr.quat, op)
            fr.quat = _qmul(fr.quat, oq)
        return fr


class RigidGroup(SensorGroup):
    """Sensors of one kind on one solver: parameters packed per sensor, one launch per partition."""

    def __init__(self, sensors, layout):
        super().__init__(sensors, layout)
        import warp as wp

        self.view = sensors[0].view
        s = layout.float_type
        self.V = wp.types.vector(3, s)
        self.Q = wp.types.quaternion(s)
        self.dev = layout.device
        self.n = len(sensors)
        self.col = self.ints([x.column for x in sensors])
        self.slot = self.ints(np.asarray([x.slots() for x in sensors], np.int32).reshape(self.n, -1))
        self.pack(sensors)

    def ints(self, a):
        import warp as wp

        return wp.array(np.ascontiguousarray(np.asarray(a, np.int32)), dtype=wp.int32, device=self.dev)

    def vecs(self, a):
        import warp as wp

        return wp.array(np.asarray(a, self.layout.np_float).reshape(-1, 3), dtype=self.V, device=self.dev)

    def quats(self, a):
        import warp as wp

        q = np.asarray(a, float).reshape(-1, 4)[:, [1, 2, 3, 0]]          # w x y z -> Warp's x y z w
        return wp.array(q.astype(self.layout.np_float), dtype=self.Q, device=self.dev)

    def pack(self, sensors) -> None:
        """Build the per-sensor parameter arrays (subclasses)."""

    def evaluate(self, part, truth):
        import warp as wp

        d = self.view.sensor_data(part)
        wp.launch(self.KERNEL, dim=(part.n_envs, self.n), inputs=self.inputs(d), outputs=[truth], device=self.dev)


# -- imu ----------------------------------------------------------------------------------------------
class _ImuGroup(RigidGroup):
    def pack(self, sensors):
        from .kernels import rigid as K

        self.KERNEL = K.imu_sensor
        self.link = self.ints([x.fr.link for x in sensors])
        self.lpos = self.vecs([x.fr.pos for x in sensors])
        self.lquat = self.quats([x.fr.quat for x in sensors])
        self.magnetic = self.vecs([x.magnetic for x in sensors])
        self.gravity = self.V(*[self.layout.np_float(g) for g in self.layout.gravity])

    def inputs(self, d):
        return [self.gravity, self.magnetic, self.link, self.lpos, self.lquat, self.col, self.slot, d.link_pos,
                d.link_quat, d.link_com, d.link_ang, d.link_vel, d.link_acc_ang, d.link_acc]


class IMU(RigidSensor):
    """An IMU at a site (or a link frame, with an optional offset): ``acc`` — accelerometer, the
    specific force a − g of the sensor point in the sensor frame (a box at rest reads +g up, free
    fall reads 0; MuJoCo's accelerometer); ``gyro`` — angular velocity in the sensor frame;
    ``mag`` — magnetometer, ``magnetic_field`` (world, default MuJoCo's (0, −0.5, 0)) in the sensor
    frame; ``vel`` — velocimeter, the point's linear velocity in the sensor frame."""

    OUTPUTS = {"acc": (3, "real"), "gyro": (3, "real"), "mag": (3, "real"), "vel": (3, "real")}
    DEFAULT = ("acc", "gyro")
    GROUP = _ImuGroup

    def __init__(self, scene, spec, entity=None, *, site=None, link=None, offset_pos=None, offset_quat=None,
                 magnetic_field=(0.0, -0.5, 0.0), outputs=None, **common):
        super().__init__(scene, spec, entity, outputs=outputs, **common)
        self._where = dict(site=site, link=link, offset_pos=offset_pos, offset_quat=offset_quat)
        self.magnetic = _vec(self.full_name, "magnetic_field", magnetic_field, 3)

    def resolve(self):
        self.fr = self.frame(**self._where)


# -- force_torque -------------------------------------------------------------------------------------
class _FTGroup(RigidGroup):
    def pack(self, sensors):
        from .kernels import rigid as K

        self.KERNEL = K.force_torque_sensor
        self.link = self.ints([x.fr.link for x in sensors])
        self.lpos = self.vecs([x.fr.pos for x in sensors])
        self.lquat = self.quats([x.fr.quat for x in sensors])

    def inputs(self, d):
        return [self.link, self.lpos, self.lquat, self.col, self.slot, d.link_pos, d.link_quat, d.link_com,
                d.cfrc_int_force, d.cfrc_int_torque]


class ForceTorque(RigidSensor):
    """A force/torque sensor at a site: the interaction wrench between the site's link and its
    parent — the wrench the parent exerts on the link, carrying the link's whole subtree (MuJoCo's
    cfrc_int from the post-solve Newton–Euler pass) — moved to the site point and rotated into the
    site frame (MuJoCo's ``force``/``torque`` sensors: a payload hanging still from the site reads
    m·g upward, in site axes)."""

    OUTPUTS = {"force": (3, "real"), "torque": (3, "real")}
    DEFAULT = ("force", "torque")
    GROUP = _FTGroup

    def __init__(self, scene, spec, entity=None, *, site=None, link=None, offset_pos=None, offset_quat=None,
                 outputs=None, **common):
        super().__init__(scene, spec, entity, outputs=outputs, **common)
        self._where = dict(site=site, link=link, offset_pos=offset_pos, offset_quat=offset_quat)

    def resolve(self):
        self.fr = self.frame(**self._where)


# -- touch --------------------------------------------------------------------------------------------
class _TouchGroup(RigidGroup):
    def pack(self, sensors):
        from .kernels import rigid as K

        self.KERNEL = K.touch_sensor
        self.link = self.ints([x.fr.link for x in sensors])
        self.lpos = self.vecs([x.fr.pos for x in sensors])
        self.lquat = self.quats([x.fr.quat for x in sensors])
        self.zone_type = self.ints([SITE_TYPES[x.fr.zone] for x in sensors])
        self.zone_size = self.vecs([x.fr.size for x in sensors])

    def inputs(self, d):
        return [self.link, self.lpos, self.lquat, self.zone_type, self.zone_size, self.col, d.link_pos, d.link_quat,
                d.n_contacts, d.contact_pos, d.contact_frame, d.contact_wrench, d.contact_link]


class Touch(RigidSensor):
    """A touch sensor on a site's zone (its type and size; sphere, capsule, ellipsoid, cylinder or
    box): the sum of the positive normal forces of the contacts of the site's link whose ray from the
    contact point along the normal, away from the link, meets the zone (MuJoCo's rule; contacts
    inside the zone always count; adhesive, non-positive normals are skipped). N, >= 0."""

    OUTPUTS = {"touch": (1, "positive")}
    DEFAULT = ("touch",)
    GROUP = _TouchGroup

    def __init__(self, scene, spec, entity=None, *, site=None, outputs=None, **common):
        super().__init__(scene, spec, entity, outputs=outputs, **common)
        if site is None:
            raise OptionError(f"sensor {self.full_name!r} (touch): site = None: name the site whose zone it covers")
        self._site = site

    def resolve(self):
        self.fr = self.frame(site=self._site)
        if self.fr.zone not in SITE_TYPES:
            raise OptionError(f"sensor {self.full_name!r} (touch): site {self._site!r} has type {self.fr.zone!r}; "
                              f"allowed zone types: {list(SITE_TYPES)}")


# -- contact / contact_force ----------------------------------------------------------------------------
class _ContactGroup(RigidGroup):
    def pack(self, sensors):
        from .kernels import rigid as K

        self.KERNEL = K.contact_sensor
        starts, links = [0], []
        for x in sensors:
            links += x.link_ids
            starts.append(len(links))
        self.start, self.links = self.ints(starts), self.ints(links)

    def inputs(self, d):
        return [self.start, self.links, self.col, d.n_contacts, d.contact_link]


class Contact(RigidSensor):
    """Per named link (default: all links of the entity) whether it is a side of a contact of the
    solve (a constraint row; a contact in the gap band is not): bool."""

    OUTPUTS = {"in_contact": (1, "bool")}
    DEFAULT = ("in_contact",)
    GROUP = _ContactGroup

    def __init__(self, scene, spec, entity=None, *, links=None, outputs=None, **common):
        super().__init__(scene, spec, entity, outputs=outputs, **common)
        self._links = [links] if isinstance(links, str) else links

    def resolve(self):
        names = list(self.tables.links) if self._links is None else list(self._links)
        if not names:
            raise OptionError(f"sensor {self.full_name!r} (contact): links = {self._links!r}: name at least one link")
        self.link_names = names
        self.link_ids = [self._pick("links", n) for n in names]

    def width(self, output):
        return len(self.link_ids)


class _ContactForceGroup(RigidGroup):
    def pack(self, sensors):
        from .kernels import rigid as K

        self.KERNEL = K.contact_force_sensor
        self.link = self.ints([x.link_id for x in sensors])
        self.ref_mode = self.ints([x.ref_mode for x in sensors])
        self.ref_lpos = self.vecs([x.ref_pos for x in sensors])
        self.ref_lquat = self.quats([x.ref_quat for x in sensors])
        self.local = self.ints([int(x.frame_name == "local") for x in sensors])

    def inputs(self, d):
        return [self.link, self.ref_mode, self.ref_lpos, self.ref_lquat, self.local, self.col, self.slot, d.link_pos,
                d.link_quat, d.link_com, d.link_contact_force, d.link_contact_torque, d.link_impulse_force,
                d.link_impulse_torque]


class ContactForce(RigidSensor):
    """The net contact wrench on a link (docs/semantics.md §F2/§F3): ``force`` and ``torque`` about ``ref`` —
    ``"com"`` (default), ``"origin"`` (the link frame's origin) or a site name (its point) — in the
    ``frame`` ``"world"`` (default) or ``"local"`` (the link's axes; a site's axes with a site ref);
    ``impulse`` / ``angular_impulse``: Σ h·f and Σ h·τ (about the CoM) over the step's substeps
    (docs/semantics.md §F4), world frame only. The force is the last substep's solve (``solved_at``); the impulse
    covers the whole step [t − dt, t]."""

    OUTPUTS = {"force": (3, "real"), "torque": (3, "real"), "impulse": (3, "real"), "angular_impulse": (3, "real")}
    DEFAULT = ("force", "torque")
    GROUP = _ContactForceGroup

    def __init__(self, scene, spec, entity=None, *, link=None, ref="com", frame="world", outputs=None, **common):
        super().__init__(scene, spec, entity, outputs=outputs, **common)
        if link is None:
            raise OptionError(f"sensor {self.full_name!r} (contact_force): link = None: name the link")
        if frame not in ("world", "local"):
            raise OptionError(f"sensor {self.full_name!r} (contact_force): frame = {frame!r}: allowed 'world' or 'local'")
        if frame != "world" and ("impulse" in self.outputs or "angular_impulse" in self.outputs):
            raise OptionError(f"sensor {self.full_name!r} (contact_force): frame = {frame!r} with impulse outputs: "
                              f"an impulse sums forces over the substeps of a step in the world frame (the link "
                              f"turns meanwhile); allowed: frame='world'")
        if ref != "com" and "angular_impulse" in self.outputs:
            raise OptionError(f"sensor {self.full_name!r} (contact_force): ref = {ref!r} with angular_impulse: the "
                              f"angular impulse is summed about the moving CoM; allowed: ref='com'")
        self._link, self.ref, self.frame_name = link, ref, frame

    def resolve(self):
        self.link_id = self._pick("links", self._link)
        self.ref_pos, self.ref_quat = np.zeros(3), np.asarray(IDENTITY)
        if self.ref == "com":
            self.ref_mode = 0
        elif self.ref == "origin":
            self.ref_mode = 1
        else:
            if not isinstance(self.ref, str) or self.ref not in self.tables.sites:
                raise OptionError(f"sensor {self.full_name!r} (contact_force): ref = {self.ref!r}: allowed 'com', "
                                  f"'origin' or a site of link {self._link!r}; entity sites: {sorted(self.tables.sites)}")
            li, pos, quat, _, _ = self.tables.sites[self.ref]
            if li != self.link_id:
                raise OptionError(f"sensor {self.full_name!r} (contact_force): ref = {self.ref!r}: that site is on "
                                  f"another link; allowed: a site of link {self._link!r}")
            self.ref_mode, self.ref_pos, self.ref_quat = 2, pos, quat


# -- frame --------------------------------------------------------------------------------------------
class _FrameGroup(RigidGroup):
    def pack(self, sensors):
        from .kernels import rigid as K

        self.KERNEL = K.frame_sensor
        self.link = self.ints([x.obj.link for x in sensors])
        self.lpos = self.vecs([x.obj.pos for x in sensors])
        self.lquat = self.quats([x.obj.quat for x in sensors])
        self.com = self.ints([x.obj.com for x in sensors])
        self.ref_link = self.ints([x.ref.link for x in sensors])
        self.ref_lpos = self.vecs([x.ref.pos for x in sensors])
        self.ref_lquat = self.quats([x.ref.quat for x in sensors])
        self.gravity = self.V(*[self.layout.np_float(g) for g in self.layout.gravity])

    def inputs(self, d):
        return [self.gravity, self.link, self.lpos, self.lquat, self.com, self.ref_link, self.ref_lpos, self.ref_lquat, self.col,
                self.slot, d.link_pos, d.link_quat, d.link_com, d.link_ang, d.link_vel, d.link_acc_ang, d.link_acc]


class FrameSensor(RigidSensor):
    """Pose, velocity and acceleration of a frame — one of ``site=``, ``link=`` (the link frame),
    ``geom=`` or ``com=`` (a link's CoM: position-type outputs only), with an optional
    ``offset_pos``/``offset_quat`` — relative to a reference frame (``ref_site=``, ``ref_link=``,
    ``ref_geom=``; default the world), MuJoCo's frame* sensors: pos, xaxis/yaxis/zaxis in the
    reference frame; quat (w x y z) relative; linvel (with the reference's rotation) and angvel,
    projected into the reference frame; linacc (acceleration minus gravity, as MuJoCo: a body at
    rest reads +g upward, free fall 0) and angacc, world frame, no reference."""

    OUTPUTS = {"pos": (3, "real"), "quat": (4, "quat"), "xaxis": (3, "axis"), "yaxis": (3, "axis"),
               "zaxis": (3, "axis"), "linvel": (3, "real"), "angvel": (3, "real"), "linacc": (3, "real"),
               "angacc": (3, "real")}
    DEFAULT = ("pos", "quat")
    GROUP = _FrameGroup

    def __init__(self, scene, spec, entity=None, *, site=None, link=None, geom=None, com=None, offset_pos=None,
                 offset_quat=None, ref_site=None, ref_link=None, ref_geom=None, outputs=None, **common):
        super().__init__(scene, spec, entity, outputs=outputs, **common)
        self._obj = dict(site=site, link=link, geom=geom, com=com, offset_pos=offset_pos, offset_quat=offset_quat)
        self._ref = dict(site=ref_site, link=ref_link, geom=ref_geom)
        has_ref = any(v is not None for v in self._ref.values())
        if has_ref and ("linacc" in self.outputs or "angacc" in self.outputs):
            raise OptionError(f"sensor {self.full_name!r} (frame): outputs {self.outputs} with a reference frame: "
                              f"linacc/angacc are world-frame (MuJoCo's framelinacc/frameangacc take no reference); "
                              f"allowed: no ref_* for them")
        if com is not None and set(self.outputs) & {"quat", "xaxis", "yaxis", "zaxis"}:
            raise OptionError(f"sensor {self.full_name!r} (frame): com = {com!r} with orientation outputs: a CoM is "
                              f"a point; allowed outputs for com=: pos, linvel, angvel, linacc, angacc")

    def resolve(self):
        self.obj = self.frame(**self._obj)
        self.ref = self.frame("ref_", **self._ref, required=False)


# -- joint / actuator ---------------------------------------------------------------------------------
JOINT_NQ = {"fixed": 0, "revolute": 1, "prismatic": 1, "spherical": 4, "free": 7}
JOINT_NV = {"fixed": 0, "revolute": 1, "prismatic": 1, "spherical": 3, "free": 6}


class _JointGroup(RigidGroup):
    def pack(self, sensors):
        from .kernels import rigid as K

        self.KERNEL = K.joint_sensor
        starts, qs, nq, ds, nv = [0], [], [], [], []
        for x in sensors:
            for typ, q0, d0 in x.joint_rows:
                qs.append(q0)
                nq.append(JOINT_NQ[typ])
                ds.append(d0)
                nv.append(JOINT_NV[typ])
            starts.append(len(qs))
        self.start, self.qs, self.nq, self.ds, self.nv = (self.ints(a) for a in (starts, qs, nq, ds, nv))

    def inputs(self, d):
        return [self.start, self.qs, self.nq, self.ds, self.nv, self.col, self.slot, d.qpos, d.qvel, d.qfrc_actuator,
                d.qfrc_constraint]


class JointSensor(RigidSensor):
    """Joint quantities of the named joints (default: every joint of the entity with a dof), each
    output the joints' values in order: ``pos`` (their q: 1 per hinge/slide, 4 per ball (w x y z),
    7 per free joint), ``vel`` (dof velocities), ``actuator_force`` (qfrc_actuator on their dofs,
    MuJoCo's jointactuatorfrc), ``constraint_force`` (qfrc_constraint on their dofs)."""

    OUTPUTS = {"pos": (0, "real"), "vel": (0, "real"), "actuator_force": (0, "real"), "constraint_force": (0, "real")}
    DEFAULT = ("pos", "vel")
    GROUP = _JointGroup

    def __init__(self, scene, spec, entity=None, *, joints=None, outputs=None, **common):
        super().__init__(scene, spec, entity, outputs=outputs, **common)
        self._joints = [joints] if isinstance(joints, str) else joints

    def resolve(self):
        names = [n for n, (t, _, _) in self.tables.joints.items() if JOINT_NV[t]] if self._joints is None \
            else list(self._joints)
        if not names:
            raise OptionError(f"sensor {self.full_name!r} (joint): joints = {self._joints!r}: no joint with a dof")
        self.joint_names = names
        self.joint_rows = [self._pick("joints", n) for n in names]

    def width(self, output):
        table = JOINT_NQ if output == "pos" else JOINT_NV
        return sum(table[t] for t, _, _ in self.joint_rows)


class _ActuatorGroup(RigidGroup):
    def pack(self, sensors):
        from .kernels import rigid as K

        self.KERNEL = K.actuator_sensor
        starts, ids = [0], []
        for x in sensors:
            ids += x.act_ids
            starts.append(len(ids))
        self.start, self.act = self.ints(starts), self.ints(ids)

    def inputs(self, d):
        return [self.start, self.act, self.col, d.act_force]


class ActuatorSensor(RigidSensor):
    """``force``: the scalar output force of each named actuator (default: all of the entity's), as
    MuJoCo's actuator_force (gain·ctrl + bias, clamped to the force range)."""

    OUTPUTS = {"force": (0, "real")}
    DEFAULT = ("force",)
    GROUP = _ActuatorGroup

    def __init__(self, scene, spec, entity=None, *, actuators=None, outputs=None, **common):
        super().__init__(scene, spec, entity, outputs=outputs, **common)
        self._acts = [actuators] if isinstance(actuators, str) else actuators

    def resolve(self):
        names = list(self.tables.actuators) if self._acts is None else list(self._acts)
        if not names:
            raise OptionError(f"sensor {self.full_name!r} (actuator): actuators = {self._acts!r}: the entity has no "
                              f"actuator")
        self.actuator_names = names
        self.act_ids = [self._pick("actuators", n) for n in names]

    def width(self, output):
        return len(self.act_ids)


# -- subtree ------------------------------------------------------------------------------------------
class _SubtreeGroup(RigidGroup):
    def pack(self, sensors):
        from .kernels import rigid as K

        self.KERNEL = K.subtree_sensor
        starts, links = [0], []
        for x in sensors:
            links += x.subtree
            starts.append(len(links))
        self.start, self.links = self.ints(starts), self.ints(links)

    def inputs(self, d):
        return [self.start, self.links, self.col, self.slot, d.link_quat, d.link_com, d.link_ang, d.link_vel,
                d.link_mass, d.link_inertia]


class Subtree(RigidSensor):
    """The subtree rooted at ``link`` (the link and all its descendants): ``com`` (mass-weighted CoM),
    ``linvel`` (its velocity), ``angmom`` (angular momentum about the subtree CoM), world frame —
    MuJoCo's subtreecom, subtreelinvel, subtreeangmom."""

    OUTPUTS = {"com": (3, "real"), "linvel": (3, "real"), "angmom": (3, "real")}
    DEFAULT = ("com", "linvel", "angmom")
    GROUP = _SubtreeGroup

    def __init__(self, scene, spec, entity=None, *, link=None, outputs=None, **common):
        super().__init__(scene, spec, entity, outputs=outputs, **common)
        if link is None:
            raise OptionError(f"sensor {self.full_name!r} (subtree): link = None: name the subtree's root link")
        self._link = link

    def resolve(self):
        root = self._pick("links", self._link)
        parent = np.asarray(self.tables.link_parent)
        inside = np.zeros(len(parent), bool)
        inside[root] = True
        for lk in range(root + 1, len(parent)):       # links come after their parent
            if parent[lk] >= 0 and inside[parent[lk]]:
                inside[lk] = True
        self.subtree = [int(x) for x in np.nonzero(inside)[0]]
