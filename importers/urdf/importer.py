"""URDF -> EntityDescription.

Link frames are URDF's (the child link frame is the joint frame); joint origins become link poses
relative to the parent link; inertials become (mass, CoM, inertia about the CoM in the link frame).
Links are ordered depth first from the root, children in document order of their joints.
``merge_fixed_links`` lumps a link joined by a fixed joint into its parent: masses add, the CoM
is the mass-weighted mean and the inertias combine by the parallel-axis theorem (exact), geoms and
children are re-posed into the parent frame, and the lumped link's frame stays reachable in
``desc.frames``.
"""

from __future__ import annotations

import math
import os
import warnings

import numpy as np
from polyphys.description import (
    EntityDescription,
    Equality,
    Geom,
    Inertial,
    Joint,
    Link,
    MeshData,
    check_inertial,
    combine_inertials,
    compose,
    inertial_in_frame,
    quat_mul,
)
from polyphys.errors import ImportError_, OptionError, PolyphysWarning
from polyphys.xmlfile import read_xml

JOINT_MAP = {"revolute": "revolute", "continuous": "revolute", "prismatic": "prismatic",
             "fixed": "fixed", "floating": "free"}


def _floats(text, n, what):
    try:
        vals = [float(x) for x in str(text).split()]
    except ValueError:
        raise ImportError_(f"{what} = {text!r}: expected {n} numbers") from None
    if len(vals) != n:
        raise ImportError_(f"{what} = {text!r}: expected {n} numbers, got {len(vals)}")
    return vals


def rpy_to_quat(rpy):
    """URDF fixed-axis roll, pitch, yaw: R = Rz(yaw)·Ry(pitch)·Rx(roll)."""
    r, p, y = rpy
    qx = (math.cos(r / 2), math.sin(r / 2), 0.0, 0.0)
    qy = (math.cos(p / 2), 0.0, math.sin(p / 2), 0.0)
    qz = (math.cos(y / 2), 0.0, 0.0, math.sin(y / 2))
    return quat_mul(qz, quat_mul(qy, qx))


def _origin(el, what):
    o = el.find("origin") if el is not None else None
    if o is None:
        return (0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0)
    xyz = _floats(o.get("xyz", "0 0 0"), 3, f"{what} origin xyz")
    rpy = _floats(o.get("rpy", "0 0 0"), 3, f"{what} origin rpy")
    return tuple(xyz), rpy_to_quat(rpy)


class URDFImporter:
    """``load(morph: polyphys.morphs.URDF) -> EntityDescription``."""

    name = "urdf"

    def load(self, morph) -> EntityDescription:
        self.morph = morph
        self.file = os.path.abspath(morph.file)
        self.notes: list[str] = []
        root = read_xml(self.file, self.notes)
        if root.tag != "robot":
            raise ImportError_(f"{self.file}: root element is <{root.tag}>, expected <robot>")
        links = {}
        for el in root.findall("link"):
            name = el.get("name")
            if not name:
                raise ImportError_(f"{self.file}: <link> without a name")
            if name in links:
                raise ImportError_(f"{self.file}: duplicate link name {name!r}")
            links[name] = el
        if not links:
            raise ImportError_(f"{self.file}: no <link> elements")
        joints, child_of, children = {}, {}, {n: [] for n in links}
        for el in root.findall("joint"):
            name = el.get("name")
            if not name:
                raise ImportError_(f"{self.file}: <joint> without a name")
            if name in joints:
                raise ImportError_(f"{self.file}: duplicate joint name {name!r}")
            jt = el.get("type")
            if jt == "planar":
                raise ImportError_(f"{self.file}: joint {name!r} type 'planar' is not supported "
                                   f"(polyphys joints: {tuple(JOINT_MAP)}); model it as two "
                                   f"prismatic joints and a revolute joint")
            if jt not in JOINT_MAP:
                raise ImportError_(f"{self.file}: joint {name!r} type = {jt!r}; allowed "
                                   f"{tuple(JOINT_MAP)}")
            p, c = el.find("parent"), el.find("child")
            if p is None or c is None:
                raise ImportError_(f"{self.file}: joint {name!r} needs <parent> and <child>")
            pl, cl = p.get("link"), c.get("link")
            for lk in (pl, cl):
                if lk not in links:
                    raise ImportError_(f"{self.file}: joint {name!r} names link {lk!r}, which "
                                       f"does not exist")
            if cl in child_of:
                raise ImportError_(f"{self.file}: link {cl!r} is the child of two joints "
                                   f"({child_of[cl]!r} and {name!r}); URDF links form a tree")
            joints[name] = el
            child_of[cl] = name
            children[pl].append(name)
        roots = [n for n in links if n not in child_of]
        if len(roots) != 1:
            if not roots:
                raise ImportError_(f"{self.file}: the links form a cycle (every link is some "
                                   f"joint's child); URDF links must form a tree")
            raise ImportError_(f"{self.file}: {len(roots)} root links {roots}; a URDF has one")
        # a cycle not through the root leaves links unreachable from it
        reach, stack = set(), [roots[0]]
        while stack:
            n = stack.pop()
            reach.add(n)
            stack.extend(joints[j].find("child").get("link") for j in children[n])
        if len(reach) != len(links):
            bad = sorted(set(links) - reach)
            raise ImportError_(f"{self.file}: links {bad} form a cycle not connected to the root "
                               f"link {roots[0]!r}; URDF links must form a tree")

        desc = EntityDescription(name=root.get("name", "robot"), source=self.file)
        self.desc = desc
        self._mimic = []
        root_name = roots[0]
        # a massless, geometry-free root called "world" is the world itself
        world_root = (root_name == "world" and links[root_name].find("inertial") is None
                      and not links[root_name].findall("visual")
                      and not links[root_name].findall("collision"))
        order = []

        def visit(name, parent_idx, jname):
            li = len(desc.links)
            el = links[name]
            if jname is None:
                pos, quat = (0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0)
            else:
                pos, quat = _origin(joints[jname], f"joint {jname!r}")
            link = Link(name=name, parent=parent_idx, pos=pos, quat=quat,
                        inertial=self._inertial(el, name))
            desc.links.append(link)
            order.append(name)
            if jname is not None:
                self._joint(joints[jname], li)
            for ch in children[name]:
                visit(joints[ch].find("child").get("link"), li, ch)
            self._geoms(el, li)

        if world_root:
            for ch in children[root_name]:
                visit(joints[ch].find("child").get("link"), -1, ch)
        else:
            visit(root_name, -1, None)
        # geoms were appended after children: regroup per link in link order
        order_g = [gi for lk in desc.links for gi in lk.geoms]
        remap = {old: new for new, old in enumerate(order_g)}
        desc.geoms = [desc.geoms[i] for i in order_g]
        for lk in desc.links:
            lk.geoms = [remap[i] for i in lk.geoms]
        self._mimics(joints)
        if morph.merge_fixed_links:
            self._merge_fixed()
        self._fixed(morph.fixed)
        self._scale(morph.scale)
        if not morph.visual:
            keep = [i for i, g in enumerate(desc.geoms) if g.role != "visual"]
            remap = {old: new for new, old in enumerate(keep)}
            desc.geoms = [desc.geoms[i] for i in keep]
            for lk in desc.links:
                lk.geoms = [remap[i] for i in lk.geoms if i in remap]
        desc.finalize()
        if self.notes:
            desc.warnings.extend(self.notes)
            warnings.warn(PolyphysWarning(f"{self.file}: " + "; ".join(self.notes)), stacklevel=3)
        return desc

    # -- elements ---------------------------------------------------------------------------------
    def _inertial(self, el, name):
        ine = el.find("inertial")
        if ine is None:
            return Inertial()
        m = ine.find("mass")
        mass = float(m.get("value", 0.0)) if m is not None else 0.0
        if not mass >= 0:
            raise OptionError(f"{self.file}: link {name!r} mass = {mass!r}: must be >= 0")
        i = ine.find("inertia")
        vals = {k: 0.0 for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
        if i is not None:
            for k in vals:
                vals[k] = float(i.get(k, 0.0))
        t = np.array([[vals["ixx"], vals["ixy"], vals["ixz"]],
                      [vals["ixy"], vals["iyy"], vals["iyz"]],
                      [vals["ixz"], vals["iyz"], vals["izz"]]])
        pos, quat = _origin(ine, f"link {name!r} inertial")
        out = inertial_in_frame(Inertial(mass=mass, inertia=t), pos, quat)
        msg = check_inertial(out, f"{self.file}: link {name!r} inertial", strict_triangle=False)
        if msg:
            self.notes.append(msg)
        return out

    def _joint(self, el, li):
        desc = self.desc
        name = el.get("name")
        jt = JOINT_MAP[el.get("type")]
        axis = np.array([1.0, 0.0, 0.0])
        a = el.find("axis")
        if a is not None:
            axis = np.asarray(_floats(a.get("xyz", "1 0 0"), 3, f"joint {name!r} axis"))
        n = np.linalg.norm(axis)
        if jt in ("revolute", "prismatic"):
            if n < 1e-10:
                raise ImportError_(f"{self.file}: joint {name!r} axis {axis.tolist()} is zero")
            axis = axis / n
        lim = el.find("limit")
        limited = el.get("type") in ("revolute", "prismatic") and lim is not None
        rng = (0.0, 0.0)
        if limited and lim.get("lower") is None and lim.get("upper") is None:
            limited = False      # <limit effort=... velocity=...> only: no position limits
            self.notes.append(f"joint {name!r}: <limit> without lower/upper; left unlimited")
        if limited:
            rng = (float(lim.get("lower", 0.0)), float(lim.get("upper", 0.0)))
            if rng[0] > rng[1]:
                raise ImportError_(f"{self.file}: joint {name!r} limit lower {rng[0]} > upper "
                                   f"{rng[1]}")
            limited = rng[0] < rng[1]
        elif el.get("type") in ("revolute", "prismatic"):
            self.notes.append(f"joint {name!r} ({el.get('type')}) has no <limit>; left unlimited")
        dyn = el.find("dynamics")
        damping = float(dyn.get("damping", 0.0)) if dyn is not None else 0.0
        friction = float(dyn.get("friction", 0.0)) if dyn is not None else 0.0
        j = Joint(name=name, type=jt, link=li, axis=axis if jt != "free" else (0, 0, 1),
                  limited=limited, range=rng, damping=damping, frictionloss=friction)
        desc.joints.append(j)
        desc.links[li].joints.append(len(desc.joints) - 1)
        mim = el.find("mimic")
        if mim is not None:
            self._mimic.append((name, mim))

    def _mimics(self, joints):
        for name, mim in self._mimic:
            target = mim.get("joint")
            if target not in joints:
                self.notes.append(f"joint {name!r} mimics {target!r}, which does not exist: "
                                  f"mimic ignored")
                continue
            self.desc.equalities.append(Equality(
                name=f"mimic_{name}", type="joint", obj1=self.desc.joint_index(name),
                obj2=self.desc.joint_index(target),
                polycoef=(float(mim.get("offset", 0.0)), float(mim.get("multiplier", 1.0)),
                          0.0, 0.0, 0.0)))
            self.notes.append(f"joint {name!r} mimics {target!r}: kept as a joint equality "
                              f"(q = offset + multiplier*q_{target})")

    def _geoms(self, el, li):
        desc = self.desc
        lname = el.get("name")
        for role in ("collision", "visual"):
            for k, g in enumerate(el.findall(role)):
                gname = g.get("name") or f"{lname}_{role}{k}"
                pos, quat = _origin(g, f"link {lname!r} {role}")
                geo = g.find("geometry")
                if geo is None or len(geo) == 0:
                    raise ImportError_(f"{self.file}: link {lname!r} {role} without <geometry>")
                shape = geo[0]
                mesh = None
                what = f"link {lname!r} {role}"
                if shape.tag == "box":
                    size = tuple(v / 2 for v in _floats(shape.get("size"), 3, f"{what} box size"))
                    gt = "box"
                elif shape.tag == "sphere":
                    gt, size = "sphere", (float(shape.get("radius")), 0.0, 0.0)
                elif shape.tag in ("cylinder", "capsule"):
                    gt = shape.tag
                    size = (float(shape.get("radius")), float(shape.get("length")) / 2, 0.0)
                elif shape.tag == "mesh":
                    gt, size = "mesh", (0.0, 0.0, 0.0)
                    mesh = self._mesh(shape, what)
                else:
                    raise ImportError_(f"{self.file}: {what}: unknown geometry <{shape.tag}>; "
                                       f"allowed box, sphere, cylinder, capsule, mesh")
                desc.geoms.append(Geom(name=gname, type=gt, link=li, size=size, pos=pos,
                                       quat=quat, role=role, mesh=mesh,
                                       contype=1 if role == "collision" else 0,
                                       conaffinity=1 if role == "collision" else 0))
                desc.links[li].geoms.append(len(desc.geoms) - 1)

    def _mesh_path(self, fname, what):
        tried = []
        if fname.startswith("package://"):
            rest = fname[len("package://"):]
            pkg, _, rel = rest.partition("/")
            dirs = list(self.morph.package_dirs)
            # also every ancestor of the URDF file (a package is often the file's grandparent)
            d = os.path.dirname(self.file)
            while True:
                dirs.append(d)
                up = os.path.dirname(d)
                if up == d:
                    break
                d = up
            for d in dirs:
                tried.append(os.path.join(d, pkg, rel))
                if os.path.basename(os.path.normpath(d)) == pkg:
                    tried.append(os.path.join(d, rel))
        elif fname.startswith("file://"):
            tried.append(fname[len("file://"):])
        elif os.path.isabs(fname):
            tried.append(fname)
        else:
            tried.append(os.path.join(os.path.dirname(self.file), fname))
        for p in tried:
            if os.path.isfile(p):
                return p
        shown = tried[:6] + ([f"... {len(tried) - 6} more"] if len(tried) > 6 else [])
        raise ImportError_(f"{self.file}: {what}: mesh {fname!r} not found (looked at {shown}; "
                           f"pass package_dirs=... for package:// paths)")

    def _mesh(self, shape, what):
        import trimesh

        fname = shape.get("filename", "")
        path = self._mesh_path(fname, what)
        try:
            tm = trimesh.load(path, force="mesh", process=False)
        except Exception as exc:
            raise ImportError_(f"{self.file}: {what}: cannot read mesh {path!r}: {exc} (.dae needs "
                               f"the pycollada package)") from None
        v = np.asarray(tm.vertices, dtype=float)
        if not self.morph.file_meshes_are_zup:
            v = np.stack([v[:, 0], -v[:, 2], v[:, 1]], axis=1)
        scale = shape.get("scale")
        if scale:
            s = [float(x) for x in scale.split()]
            v = v * np.asarray(s if len(s) == 3 else s * 3)
        f = np.asarray(tm.faces, dtype=np.int64)
        if self.morph.convexify:
            hull = trimesh.Trimesh(v, f, process=False).convex_hull
            v, f = np.asarray(hull.vertices), np.asarray(hull.faces)
        return MeshData(vertices=v, faces=f, name=os.path.basename(path), file=path)

    # -- post-passes ------------------------------------------------------------------------------
    def _merge_fixed(self):
        """Lump every non-root link that hangs on a fixed joint into its parent (exactly)."""
        desc = self.desc
        merged_into = {}
        keep = []
        new_index = {}
        # pose of each link in its surviving ancestor's frame
        pose = {}
        for li, lk in enumerate(desc.links):
            fixed = (lk.parent >= 0 and all(desc.joints[j].type == "fixed" for j in lk.joints))
            if fixed:
                tgt = merged_into.get(lk.parent, lk.parent)
                ppos, pquat = pose.get(lk.parent, ((0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0)))
                pos, quat = compose(ppos, pquat, lk.pos, lk.quat)
                merged_into[li] = tgt
                pose[li] = (pos, quat)
                host = desc.links[tgt]
                host.inertial = combine_inertials([host.inertial,
                                                   inertial_in_frame(lk.inertial, pos, quat)])
                for gi in lk.geoms:
                    g = desc.geoms[gi]
                    g.pos, g.quat = compose(pos, quat, g.pos, g.quat)
                    g.link = tgt
                    host.geoms.append(gi)
                desc.frames[lk.name] = (tgt, pos, quat)
            else:
                if lk.parent >= 0 and lk.parent in merged_into:
                    ppos, pquat = pose[lk.parent]
                    lk.pos, lk.quat = compose(ppos, pquat, lk.pos, lk.quat)
                    lk.parent = merged_into[lk.parent]
                new_index[li] = len(keep)
                keep.append(lk)
        if not merged_into:
            return
        for li in merged_into:
            merged_into[li] = new_index[merged_into[li]]
        for lk in keep:
            if lk.parent >= 0:
                lk.parent = new_index[lk.parent]
        for name, (tgt, pos, quat) in desc.frames.items():
            desc.frames[name] = (new_index[tgt], pos, quat)
        # drop fixed joints, renumber links on joints and geoms
        jkeep = [ji for ji, j in enumerate(desc.joints) if j.type != "fixed"]
        jmap = {old: new for new, old in enumerate(jkeep)}
        for j in desc.joints:
            j.link = new_index.get(j.link, -1)
        desc.joints = [desc.joints[i] for i in jkeep]
        for lk in keep:
            lk.joints = [jmap[j] for j in lk.joints if j in jmap]
        for g in desc.geoms:
            g.link = new_index.get(g.link, g.link) if g.link in new_index else g.link
        desc.links = keep
        for li, lk in enumerate(desc.links):
            for gi in lk.geoms:
                desc.geoms[gi].link = li
        order = [gi for lk in desc.links for gi in lk.geoms]
        remap = {old: new for new, old in enumerate(order)}
        desc.geoms = [desc.geoms[i] for i in order]
        for lk in desc.links:
            lk.geoms = [remap[i] for i in lk.geoms]
        desc.equalities = [e for e in desc.equalities if e.type != "joint"
                           or (e.obj1 in jmap and e.obj2 in jmap)]
        for e in desc.equalities:
            if e.type == "joint":
                e.obj1, e.obj2 = jmap[e.obj1], jmap[e.obj2]
        self.notes.append(f"merged {len(merged_into)} fixed link(s) into their parents: "
                          f"{sorted(desc.frames)} (frames kept in desc.frames)")

    def _fixed(self, fixed):
        """URDF roots are fixed to the world unless a floating joint says otherwise; fixed=False
        adds a free joint to a jointless root, fixed=True removes a root free joint."""
        desc = self.desc
        roots = [i for i, lk in enumerate(desc.links) if lk.parent == -1]
        if fixed is False:
            for r in roots:
                if not desc.links[r].joints:
                    desc.joints.append(Joint(name=f"{desc.links[r].name}_root", type="free",
                                             link=r))
                    desc.links[r].joints.insert(0, len(desc.joints) - 1)
            order = [ji for lk in desc.links for ji in lk.joints]
            jmap = {old: new for new, old in enumerate(order)}
            desc.joints = [desc.joints[i] for i in order]
            for lk in desc.links:
                lk.joints = [jmap[j] for j in lk.joints]
            for e in desc.equalities:
                if e.type == "joint":
                    e.obj1, e.obj2 = jmap[e.obj1], jmap[e.obj2]
        elif fixed is True:
            for r in roots:
                for ji in list(desc.links[r].joints):
                    if desc.joints[ji].type == "free":
                        desc.joints[ji].type = "fixed"

    def _scale(self, s):
        if s == 1.0:
            return
        desc = self.desc
        for lk in desc.links:
            lk.pos = tuple(np.asarray(lk.pos) * s)
            lk.inertial = Inertial(mass=lk.inertial.mass * s ** 3,
                                   com=np.asarray(lk.inertial.com) * s,
                                   inertia=lk.inertial.inertia * s ** 5)
        for j in desc.joints:
            j.pos = tuple(np.asarray(j.pos) * s)
            if j.type == "prismatic":
                j.range = tuple(v * s for v in j.range)
        for g in desc.geoms:
            g.pos = tuple(np.asarray(g.pos) * s)
            g.size = tuple(v * s for v in g.size)
            if g.mesh is not None:
                g.mesh = MeshData(vertices=g.mesh.vertices * s, faces=g.mesh.faces,
                                  name=g.mesh.name, file=g.mesh.file)
        for name, (li, pos, quat) in list(desc.frames.items()):
            desc.frames[name] = (li, tuple(np.asarray(pos) * s), quat)

