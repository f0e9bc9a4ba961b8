"""MJCF (MuJoCo XML) -> EntityDescription, without MuJoCo.

Follows MuJoCo's compiler where it decides a number: default classes (nested, childclass),
includes, frames, orientation specifiers (quat, axisangle, euler with eulerseq, xyaxes, zaxis),
angle units, fromto, autolimits, inertia from geoms (primitive formulas as in MuJoCo's
mjCGeom::SetInertia, meshes by signed tetrahedra), boundmass/boundinertia, balanceinertia,
settotalmass. Bodies keep their frames; link 0 is MuJoCo's world body, so link i is MuJoCo body i
and the q/dof order is MuJoCo's qpos/qvel order.
"""

from __future__ import annotations

import math
import os
import warnings
from collections import Counter

import numpy as np
from polyphys.description import (
    Actuator,
    EntityDescription,
    Equality,
    Geom,
    Inertial,
    Joint,
    Keyframe,
    Link,
    MeshData,
    Site,
    check_inertial,
    combine_inertials,
    compose,
    inertial_in_frame,
    mat_to_quat,
    mesh_mass_properties,
    quat_mul,
    quat_to_mat,
)
from polyphys.errors import ImportError_, OptionError, PolyphysWarning
from polyphys.xmlfile import read_xml

from .sensors import parse_sensors

JOINT_MAP = {"hinge": "revolute", "slide": "prismatic", "ball": "spherical", "free": "free"}
GEOM_TYPES = ("plane", "hfield", "sphere", "capsule", "ellipsoid", "cylinder", "box", "mesh", "sdf")
ACTUATOR_TAGS = ("general", "motor", "position", "velocity", "intvelocity", "damper", "cylinder",
                 "muscle", "adhesion", "plugin")
SUPPORTED_ACTUATORS = ("general", "motor", "position", "velocity")
DEFAULT_TAGS = ("joint", "geom", "site", "mesh", "equality", "tendon", "pair", "camera", "light",
                "material", "inertial", "hfield", "texture") + ACTUATOR_TAGS
RENDERING = ("camera", "light", "texture", "material", "visual", "statistic", "skin")
PARTIAL = ("size", "friction", "solimp", "solref", "rgba", "polycoef", "gear", "gainprm",
           "biasprm", "dynprm", "solimplimit", "solreflimit", "solimpfriction", "solreffriction")
SOLREF = (0.02, 1.0)
SOLIMP = (0.9, 0.95, 0.001, 0.5, 2.0)


def _floats(text, n=None, what="value"):
    try:
        vals = [float(x) for x in str(text).split()]
    except ValueError:
        raise ImportError_(f"{what} = {text!r}: expected numbers") from None
    if n is not None and len(vals) != n:
        raise ImportError_(f"{what} = {text!r}: expected {n} numbers, got {len(vals)}")
    return vals


# MuJoCo's <pair> defaults (mjsPair): condim, 5 friction coefficients (sliding ×2, torsional,
# rolling ×2), solref, solreffriction (0 0: use solref), solimp, margin, gap
PAIR_DEFAULTS = {"condim": 3, "friction": (1.0, 1.0, 0.005, 0.0001, 0.0001), "solref": (0.02, 1.0),
                 "solreffriction": (0.0, 0.0), "solimp": (0.9, 0.95, 0.001, 0.5, 2.0), "margin": 0.0,
                 "gap": 0.0}


def _pad(vals, n, fill):
    vals = list(vals)[:n]
    return tuple(vals + list(fill[len(vals):n]))


def _z2quat(vec):
    """MuJoCo's mjuu_z2quat: the minimal rotation taking +z to ``vec``."""
    v = np.asarray(vec, float)
    axis = np.cross([0.0, 0.0, 1.0], v)
    s = np.linalg.norm(axis)
    if s < 1e-10:
        axis = np.array([1.0, 0.0, 0.0])
    else:
        axis = axis / s
    ang = math.atan2(s, v[2])
    return (math.cos(ang / 2),) + tuple(float(a) * math.sin(ang / 2) for a in axis)


def _read_msh(path, what):
    """MuJoCo's legacy binary mesh: int32 nvert, nnormal, ntexcoord, nface; float32 vertices,
    normals, texcoords; int32 faces."""
    raw = np.fromfile(path, dtype=np.uint8)
    if raw.size < 16:
        raise ImportError_(f"{what}: {path!r} is too short for a .msh header")
    nv, nn, nt, nf = (int(x) for x in raw[:16].view(np.int32))
    need = 16 + 4 * (3 * nv + 3 * nn + 2 * nt + 3 * nf)
    if min(nv, nn, nt, nf) < 0 or raw.size != need:
        raise ImportError_(f"{what}: {path!r} has {raw.size} bytes, its header "
                           f"({nv}, {nn}, {nt}, {nf}) needs {need}")
    v = raw[16:16 + 12 * nv].view(np.float32).reshape(nv, 3).astype(float)
    off = 16 + 4 * (3 * nv + 3 * nn + 2 * nt)
    f = raw[off:off + 12 * nf].view(np.int32).reshape(nf, 3).astype(np.int64)
    return v, (f if nf else None)


def _png_gray8(path, what):
    """The samples of a PNG file as MuJoCo reads a heightfield image (lodepng, decoded to 8-bit
    grey): grey as is (1/2/4-bit scaled to 0..255, 16-bit: the high byte), RGB(A) and palette
    images by their red channel, alpha ignored; (height, width) uint8, the image's top row
    first. Non-interlaced PNGs (the usual); a minimal reader on zlib (no imaging dependency)."""
    import struct
    import zlib

    with open(path, "rb") as fh:
        buf = fh.read()
    if buf[:8] != b"\x89PNG\r\n\x1a\n":
        raise ImportError_(f"{what}: file {path!r} is not a PNG (bad signature)")
    pos, ihdr, plte, idat = 8, None, None, []
    while pos + 8 <= len(buf):
        n, typ = struct.unpack(">I4s", buf[pos:pos + 8])
        data = buf[pos + 8:pos + 8 + n]
        if len(data) < n or pos + 12 + n > len(buf):
            raise ImportError_(f"{what}: file {path!r}: PNG chunk {typ!r} is truncated")
        if struct.unpack(">I", buf[pos + 8 + n:pos + 12 + n])[0] != zlib.crc32(typ + data):
            raise ImportError_(f"{what}: file {path!r}: PNG chunk {typ!r} fails its CRC check")
        if typ == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", data[:13])
        elif typ == b"PLTE":
            plte = np.frombuffer(data, np.uint8).reshape(-1, 3)
        elif typ == b"IDAT":
            idat.append(data)
        elif typ == b"IEND":
            break
        pos += 12 + n
    else:
        raise ImportError_(f"{what}: file {path!r}: PNG is truncated (ends before its IEND "
                           f"chunk)")
    if ihdr is None or not idat:
        raise ImportError_(f"{what}: file {path!r}: PNG without IHDR or image data")
    w, h, depth, color, _, _, interlace = ihdr
    chans = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}.get(color)
    ok_depth = {0: (1, 2, 4, 8, 16), 2: (8, 16), 3: (1, 2, 4, 8), 4: (8, 16), 6: (8, 16)}
    if chans is None or depth not in ok_depth[color]:
        raise ImportError_(f"{what}: file {path!r}: PNG colour type {color} with bit depth "
                           f"{depth} is not valid")
    if interlace:
        raise ImportError_(f"{what}: file {path!r}: interlaced (Adam7) PNGs are not supported; "
                           f"save the image without interlacing")
    if w < 1 or h < 1:
        raise ImportError_(f"{what}: file {path!r}: PNG has zero size ({w} x {h})")
    try:
        raw = zlib.decompress(b"".join(idat))
    except zlib.error as exc:
        raise ImportError_(f"{what}: file {path!r}: PNG image data is corrupt ({exc})") from None
    bpp = max(1, chans * depth // 8)                 # bytes per pixel for the filters
    stride = (w * chans * depth + 7) // 8
    if len(raw) < h * (stride + 1):
        raise ImportError_(f"{what}: file {path!r}: PNG image data is short ({len(raw)} bytes, "
                           f"{h * (stride + 1)} expected for {w} x {h})")
    img = np.zeros((h, stride), np.uint8)
    prev = np.zeros(stride, np.int32)
    for r in range(h):
        ft = raw[r * (stride + 1)]
        line = np.frombuffer(raw, np.uint8, stride, r * (stride + 1) + 1).astype(np.int32)
        if ft == 0:
            cur = line
        elif ft == 2:
            cur = (line + prev) & 255
        elif ft in (1, 3, 4):
            cur = line.copy()
            for i in range(stride):
                a = cur[i - bpp] if i >= bpp else 0
                if ft == 1:
                    cur[i] = (cur[i] + a) & 255
                elif ft == 3:
                    cur[i] = (cur[i] + ((a + prev[i]) >> 1)) & 255
                else:
                    b, c = prev[i], (prev[i - bpp] if i >= bpp else 0)
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pr = a if (pa <= pb and pa <= pc) else (b if pb <= pc else c)
                    cur[i] = (cur[i] + pr) & 255
        else:
            raise ImportError_(f"{what}: file {path!r}: PNG row {r} has unknown filter type {ft}")
        img[r] = cur
        prev = cur
    if depth < 8:
        bits = np.unpackbits(img, axis=1).reshape(h, -1)[:, :w * depth].reshape(h, w, depth)
        vals = (bits * (1 << np.arange(depth - 1, -1, -1))).sum(axis=2)
        if color == 3:
            samples = vals[..., None]
        else:
            return (vals * 255 // ((1 << depth) - 1)).astype(np.uint8)
    elif depth == 16:
        samples = img.reshape(h, w, chans, 2)[..., 0]          # the high byte
    else:
        samples = img.reshape(h, w, chans)
    if color == 3:
        if plte is None:
            raise ImportError_(f"{what}: file {path!r}: palette PNG without a PLTE chunk")
        idx = samples[..., 0].astype(np.int64)
        if idx.max() >= len(plte):
            raise ImportError_(f"{what}: file {path!r}: palette index {idx.max()} beyond its "
                               f"{len(plte)} colours")
        return plte[idx, 0].copy()
    return samples[..., 0].astype(np.uint8)


def _hfield_file(path, what):
    """Elevation samples of an MJCF ``<hfield file=...>`` as MuJoCo reads them: a ``.png`` (any
    case) through _png_gray8, its top image row at +y; anything else MuJoCo's binary format —
    int32 nrow, int32 ncol, then nrow*ncol float32 (native little-endian), row 0 at -y. Returns
    (nrow, ncol) float32, row 0 at -y, not yet normalised."""
    if path.lower().endswith(".png"):
        return _png_gray8(path, what)[::-1].astype(np.float32)
    with open(path, "rb") as fh:
        buf = fh.read()
    if len(buf) < 8:
        raise ImportError_(f"{what}: file {path!r} is {len(buf)} bytes: too short for the binary "
                           f"heightfield header (int32 nrow, int32 ncol); a PNG needs the .png "
                           f"extension")
    nr, nc = (int(v) for v in np.frombuffer(buf[:8], "<i4"))
    if nr < 1 or nc < 1:
        raise ImportError_(f"{what}: file {path!r}: binary heightfield header gives nrow = {nr}, "
                           f"ncol = {nc}; both must be positive")
    if len(buf) != 8 + 4 * nr * nc:
        raise ImportError_(f"{what}: file {path!r} is {len(buf)} bytes; a binary heightfield of "
                           f"{nr} x {nc} has {8 + 4 * nr * nc} (8 header + 4 per float32 sample)")
    data = np.frombuffer(buf, "<f4", nr * nc, 8).reshape(nr, nc)
    if not np.isfinite(data).all():
        raise ImportError_(f"{what}: file {path!r}: elevation samples include NaN or infinity")
    return data.astype(np.float32)


def _hfield_normalise(raw):
    """MuJoCo's compile step, in float32 as there: data - min, divided by (max - min) when that
    exceeds mjMINVAL (1e-15); heights are then data × size[2]."""
    d = np.asarray(raw, np.float32)
    lo, hi = d.min(), d.max()
    d = d - lo
    if float(hi - lo) > 1e-15:
        d = d / np.float32(hi - lo)
    return d.astype(np.float64)


class _Ctx:
    def __init__(self, morph):
        self.morph = morph
        self.file = os.path.abspath(morph.file)
        self.dir = os.path.dirname(self.file)
        self.notes: list[str] = []
        self.unsupported: Counter = Counter()
        self.compiler = {"angle": "degree", "eulerseq": "xyz", "autolimits": "true",
                         "inertiafromgeom": "auto", "inertiagrouprange": "0 5", "boundmass": "0",
                         "boundinertia": "0", "settotalmass": "-1", "balanceinertia": "false",
                         "fitaabb": "false", "strippath": "false", "meshdir": "", "assetdir": "",
                         "coordinate": "local", "fusestatic": "false", "discardvisual": "false"}
        self.classes: dict[str, dict] = {}
        self.meshes: dict[str, dict] = {}
        self.hfields: dict[str, dict] = {}

    # -- compiler settings --------------------------------------------------------------------
    @property
    def degree(self):
        return self.compiler["angle"].lower() == "degree"

    def angle(self, v):
        return v * math.pi / 180.0 if self.degree else v

    def flag(self, key):
        return self.compiler[key].lower() == "true"

    def orient(self, a, what):
        """Quaternion from the orientation attributes of an element (None if it has none)."""
        keys = [k for k in ("quat", "axisangle", "euler", "xyaxes", "zaxis") if k in a]
        if not keys:
            return None
        if len(keys) > 1:
            raise ImportError_(f"{what}: several orientation specifiers {keys}; MuJoCo allows one")
        k = keys[0]
        if k == "quat":
            q = np.asarray(_floats(a[k], 4, f"{what} quat"))
            n = np.linalg.norm(q)
            if n < 1e-12:
                raise ImportError_(f"{what}: quat = {a[k]!r} is zero")
            return tuple(q / n)
        if k == "axisangle":
            v = _floats(a[k], 4, f"{what} axisangle")
            ax = np.asarray(v[:3])
            ax = ax / np.linalg.norm(ax)
            ang = self.angle(v[3])
            return (math.cos(ang / 2),) + tuple(ax * math.sin(ang / 2))
        if k == "euler":
            e = [self.angle(x) for x in _floats(a[k], 3, f"{what} euler")]
            seq = self.compiler["eulerseq"]
            if len(seq) != 3 or any(c not in "xyzXYZ" for c in seq):
                raise ImportError_(f"compiler eulerseq = {seq!r}: expected 3 of x/y/z/X/Y/Z")
            q = (1.0, 0.0, 0.0, 0.0)
            for ang, c in zip(e, seq):
                r = [math.cos(ang / 2), 0.0, 0.0, 0.0]
                r["xyz".index(c.lower()) + 1] = math.sin(ang / 2)
                q = quat_mul(q, r) if c.islower() else quat_mul(r, q)
            return q
        if k == "xyaxes":
            v = np.asarray(_floats(a[k], 6, f"{what} xyaxes"))
            x = v[:3] / np.linalg.norm(v[:3])
            y = v[3:] - x * np.dot(x, v[3:])
            y = y / np.linalg.norm(y)
            z = np.cross(x, y)
            return mat_to_quat(np.stack([x, y, z], axis=1))
        return _z2quat(np.asarray(_floats(a[k], 3, f"{what} zaxis")))

    # -- defaults -------------------------------------------------------------------------------
    def attrs(self, el, cls):
        """Attributes of ``el`` merged over its default class."""
        tag = el.tag
        name = el.get("class", cls)
        if name not in self.classes:
            raise ImportError_(f"{self.file}: <{tag} name={el.get('name')!r}> uses default class "
                               f"{name!r}, which is not defined; classes: {sorted(self.classes)}")
        out = dict(self.classes[name].get(tag, {}))
        for key, val in el.attrib.items():
            if key in PARTIAL and key in out:
                # MuJoCo reads as many numbers as given; the rest keep the class's values
                new, old = val.split(), out[key].split()
                val = " ".join(new + old[len(new):])
            out[key] = val
        return out

    def read_defaults(self, el, parent):
        name = el.get("class")
        if name is None:
            raise ImportError_(f"{self.file}: nested <default> without a class attribute")
        if name in self.classes:
            raise ImportError_(f"{self.file}: duplicate default class {name!r}")
        base = self.classes[parent]
        self.classes[name] = {k: (list(v) if k == "_actuators" else dict(v))
                              for k, v in base.items()}
        self.merge_defaults(el, name)

    def merge_defaults(self, el, name):
        """Apply a <default> element's settings to class ``name``, then read its sub-classes."""
        cls = self.classes[name]
        cls.setdefault("_actuators", [])
        for child in el:
            if child.tag == "default":
                continue
            if child.tag not in DEFAULT_TAGS:
                raise ImportError_(f"{self.file}: unknown element <{child.tag}> in default class "
                                   f"{name!r}; allowed: {DEFAULT_TAGS}")
            if child.tag in ACTUATOR_TAGS:
                cls["_actuators"].append((child.tag, dict(child.attrib)))
            else:
                d = cls.setdefault(child.tag, {})
                for key, val in child.attrib.items():
                    if key in PARTIAL and key in d:
                        new, old = val.split(), d[key].split()
                        val = " ".join(new + old[len(new):])
                    d[key] = val
        for child in el:
            if child.tag == "default":
                self.read_defaults(child, name)


class MJCFImporter:
    """``load(morph: polyphys.morphs.MJCF) -> EntityDescription``."""

    name = "mjcf"

    def load(self, morph) -> EntityDescription:
        ctx = _Ctx(morph)
        root = read_xml(ctx.file, ctx.notes)
        if root.tag != "mujoco":
            raise ImportError_(f"{ctx.file}: root element is <{root.tag}>, expected <mujoco>")
        self._expand_includes(ctx, root, ctx.dir, [ctx.file])
        desc = EntityDescription(name=root.get("model", os.path.splitext(os.path.basename(
            ctx.file))[0]), source=ctx.file)
        self.ctx, self.desc = ctx, desc

        for el in root.findall("compiler"):
            ctx.compiler.update(el.attrib)
        if ctx.compiler["coordinate"] != "local":
            raise ImportError_(f"{ctx.file}: compiler coordinate = {ctx.compiler['coordinate']!r}; "
                               f"only 'local' exists (MuJoCo removed 'global')")
        ctx.classes["main"] = {"_actuators": []}
        for el in root.findall("default"):
            if el.get("class", "main") == "main":
                # the top-level class (several top-level <default>s, e.g. from includes, add up)
                ctx.merge_defaults(el, "main")
            else:
                ctx.read_defaults(el, "main")
        desc.defaults = {name: {("actuators" if k == "_actuators" else k): v
                                for k, v in cls.items()} for name, cls in ctx.classes.items()}
        self._options(root)
        for el in root.findall("asset"):
            self._assets(el)

        # bodies: link 0 is the world body
        self.names = {"link": set(), "joint": set(), "geom": set(), "site": set()}
        desc.links.append(Link(name="world", parent=-1))
        self.names["link"].add("world")
        self.springdamper = {}    # id(Joint) -> (timeconst, dampratio)
        self.explicit = {}        # link index -> Inertial from <inertial>
        self.geom_mass = []       # per geom: (mass, com in link frame, inertia about com) or None
        for wb in root.findall("worldbody"):
            self._children(wb, 0, "main", (0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0))
        self._group_by_link()
        self._inertia()
        if self.springdamper:
            self._springdamper()
        for el in root.findall("contact"):
            self._contact(el)
        for el in root.findall("equality"):
            self._equality(el)
        for el in root.findall("tendon"):
            self._tendon(el)
        for el in root.findall("actuator"):
            self._actuators(el)
        desc.finalize()
        for el in root.findall("keyframe"):
            self._keyframes(el)
        nkey = max([int(el.get("nkey", 0)) for el in root.findall("size")] + [0])
        while len(desc.keyframes) < nkey:   # <size nkey>: keys at qpos0
            desc.keyframes.append(Keyframe(name="", qpos=desc.qpos0(), qvel=np.zeros(desc.n_dofs),
                                           ctrl=np.zeros(len(desc.actuators))))
        parse_sensors(root, desc, ctx.notes)        # <sensor> -> desc.sensors (sensors.py)
        for tag in ("deformable", "extension", "custom", "visual", "statistic"):
            for el in root.findall(tag):
                ctx.unsupported[tag] += 1
                if tag == "deformable":
                    for child in el:
                        ctx.unsupported[f"deformable {child.tag}"] += 1
        self._apply_morph(morph)
        self._report()
        return desc

    # -- includes -------------------------------------------------------------------------------
    def _expand_includes(self, ctx, el, base, stack):
        i = 0
        while i < len(el):
            child = el[i]
            if child.tag == "include":
                fname = child.get("file")
                if not fname:
                    raise ImportError_(f"{stack[-1]}: <include> without a file attribute")
                tried = [os.path.join(base, fname), os.path.join(ctx.dir, fname)]
                path = next((p for p in tried if os.path.isfile(p)), None)
                if path is None:
                    raise ImportError_(f"{stack[-1]}: included file {fname!r} not found (looked "
                                       f"at {sorted(set(os.path.abspath(p) for p in tried))})")
                path = os.path.abspath(path)
                if path in stack:
                    raise ImportError_(f"{stack[-1]}: include cycle {stack + [path]}")
                sub = read_xml(path, ctx.notes)
                self._expand_includes(ctx, sub, os.path.dirname(path), stack + [path])
                el.remove(child)
                kids = list(sub) if sub.tag == "mujoco" else [sub]
                for k, node in enumerate(kids):
                    el.insert(i + k, node)
                i += len(kids)
            else:
                self._expand_includes(ctx, child, base, stack)
                i += 1

    # -- <option> ---------------------------------------------------------------------------------
    def _options(self, root):
        ctx, opts = self.ctx, {}
        o = {}
        for el in root.findall("option"):
            o.update(el.attrib)
            for fl in el.findall("flag"):
                o.update({"flag_" + k: v for k, v in fl.attrib.items()})
        opts["dt"] = float(o.get("timestep", 0.002))
        opts["gravity"] = tuple(_floats(o.get("gravity", "0 0 -9.81"), 3, "option gravity"))
        integ = o.get("integrator", "Euler")
        imap = {"Euler": "euler", "implicitfast": "implicitfast", "implicit": "implicitfast",
                "RK4": "euler"}
        if integ not in imap:
            raise ImportError_(f"option integrator = {integ!r}; allowed {tuple(imap)}")
        if integ in ("RK4", "implicit"):
            ctx.notes.append(f"option integrator={integ} is not modelled; suggesting "
                             f"{imap[integ]!r}")
        opts["integrator"] = imap[integ]
        cone = o.get("cone", "pyramidal")
        if cone not in ("pyramidal", "elliptic"):
            raise ImportError_(f"option cone = {cone!r}; allowed ('pyramidal', 'elliptic')")
        opts["friction_cone"] = cone
        solver = o.get("solver", "Newton")
        if solver not in ("Newton", "CG", "PGS"):
            raise ImportError_(f"option solver = {solver!r}; allowed ('Newton', 'CG', 'PGS')")
        if solver == "PGS":
            ctx.notes.append("option solver=PGS is not modelled; suggesting 'Newton'")
        opts["constraint_solver"] = "CG" if solver == "CG" else "Newton"
        opts["iterations"] = int(o.get("iterations", 100))
        opts["tolerance"] = float(o.get("tolerance", 1e-8))
        opts["ls_iterations"] = int(o.get("ls_iterations", 50))
        opts["ls_tolerance"] = float(o.get("ls_tolerance", 0.01))
        opts["noslip_iterations"] = int(o.get("noslip_iterations", 0))
        opts["noslip_tolerance"] = float(o.get("noslip_tolerance", 1e-6))
        opts["impratio"] = float(o.get("impratio", 1.0))
        for key in ("density", "viscosity"):
            if float(o.get(key, 0.0)) != 0.0:
                ctx.notes.append(f"option {key}={o[key]} (fluid forces) is not modelled")
        for key in ("wind",):          # magnetic: the magnetometer sensors' field (sensors.py)
            if key in o and any(v != 0.0 for v in _floats(o[key])):
                ctx.notes.append(f"option {key}={o[key]!r} is not modelled")
        if o.get("flag_contact", "enable") == "disable":
            opts["enable_collision"] = False
        if o.get("flag_constraint", "enable") == "disable":
            opts["disable_constraint"] = True
        self.desc.options = opts

    # -- <asset> ----------------------------------------------------------------------------------
    def _assets(self, el):
        ctx = self.ctx
        for a in el:
            if a.tag == "mesh":
                at = dict(ctx.classes["main"].get("mesh", {}))
                if a.get("class"):
                    at = dict(ctx.classes.get(a.get("class"), {}).get("mesh", {}))
                at.update(a.attrib)
                name = at.get("name")
                if not name:
                    if "file" not in at:
                        raise ImportError_(f"{ctx.file}: <mesh> without name or file")
                    name = os.path.splitext(os.path.basename(at["file"]))[0]
                if name in ctx.meshes:
                    raise ImportError_(f"{ctx.file}: duplicate mesh name {name!r}")
                ctx.meshes[name] = at
            elif a.tag == "hfield":
                name = a.get("name") or os.path.splitext(os.path.basename(a.get("file", "")))[0]
                ctx.hfields[name] = dict(a.attrib)
            elif a.tag in ("texture", "material"):
                ctx.unsupported[a.tag] += 1
            else:
                ctx.unsupported["asset " + a.tag] += 1

    def _mesh_path(self, fname, what):
        ctx = self.ctx
        if ctx.flag("strippath"):
            fname = os.path.basename(fname)
        if os.path.isabs(fname):
            tried = [fname]
        else:
            d = ctx.compiler.get("meshdir") or ctx.compiler.get("assetdir") or ""
            tried = [os.path.join(ctx.dir, d, fname)]
        for p in tried:
            if os.path.isfile(p):
                return p
        raise ImportError_(f"{ctx.file}: {what}: file {fname!r} not found (looked at "
                           f"{[os.path.abspath(p) for p in tried]})")

    def _load_mesh(self, name, what):
        ctx = self.ctx
        if name not in ctx.meshes:
            raise ImportError_(f"{ctx.file}: {what} uses mesh {name!r}, which is not defined; "
                               f"meshes: {sorted(ctx.meshes)}")
        at = ctx.meshes[name]
        if "_data" in at:
            return at["_data"]
        import trimesh

        path = None
        if "file" in at:
            path = self._mesh_path(at["file"], f"mesh {name!r}")
            ext = os.path.splitext(path)[1].lower()
            if ext not in (".stl", ".obj", ".ply", ".off", ".glb", ".gltf", ".dae", ".msh"):
                raise ImportError_(f"{ctx.file}: mesh {name!r}: file type {ext!r} of {path!r} is "
                                   f"not readable here; allowed .stl .obj .msh .ply .off .glb .gltf "
                                   f".dae")
            if ext == ".msh":
                v, f = _read_msh(path, f"{ctx.file}: mesh {name!r}")
            else:
                try:
                    tm = trimesh.load(path, force="mesh", process=False)
                except Exception as exc:
                    raise ImportError_(f"{ctx.file}: mesh {name!r}: cannot read {path!r}: "
                                       f"{exc}") from None
                v = np.asarray(tm.vertices, dtype=float)
                f = np.asarray(tm.faces, dtype=np.int64)
            if not ctx.morph.file_meshes_are_zup:
                v = np.stack([v[:, 0], -v[:, 2], v[:, 1]], axis=1)
        elif "vertex" in at:
            v = np.asarray(_floats(at["vertex"], what=f"mesh {name!r} vertex")).reshape(-1, 3)
            f = (np.asarray(_floats(at["face"]), dtype=np.int64).reshape(-1, 3) if "face" in at
                 else None)
        else:
            raise ImportError_(f"{ctx.file}: mesh {name!r} has neither file nor vertex data")
        if "refpos" in at:
            v = v - np.asarray(_floats(at["refpos"], 3))
        if "refquat" in at:
            v = v @ quat_to_mat(_floats(at["refquat"], 4))
        scale = np.asarray(_floats(at.get("scale", "1 1 1"), 3, f"mesh {name!r} scale"))
        v = v * scale
        if f is not None and np.prod(scale) < 0:
            f = f[:, [0, 2, 1]]     # a mirroring scale flips the faces back outward (as MuJoCo)
        if f is None or len(f) == 0:
            hull = trimesh.Trimesh(v, process=False).convex_hull
            v, f = np.asarray(hull.vertices), np.asarray(hull.faces)
        mode = at.get("inertia", "legacy")
        if mode not in ("legacy", "exact", "convex", "shell"):
            raise ImportError_(f"mesh {name!r} inertia = {mode!r}; allowed legacy/exact/convex/shell")
        at["_data"] = (v, f, path)
        return at["_data"]

    def _mesh_props(self, name, shell):
        ctx = self.ctx
        at = ctx.meshes[name]
        key = "_props_shell" if shell else "_props"
        if key not in at:
            v, f, _ = self._load_mesh(name, f"mesh {name!r}")
            mode = "shell" if shell else at.get("inertia", "legacy")
            if mode == "convex":
                import trimesh

                hull = trimesh.Trimesh(v, f, process=False).convex_hull
                v, f = np.asarray(hull.vertices), np.asarray(hull.faces)
            vol, com, inertia = mesh_mass_properties(
                v, f, shell=(mode == "shell"), mode="legacy" if mode == "legacy" else "exact")
            if vol <= 0:
                raise ImportError_(f"{ctx.file}: mesh {name!r}: volume {vol:g} <= 0 "
                                       f"(misoriented or open triangles)")
            at[key] = (vol, com, inertia)
        return at[key]

    # -- bodies -----------------------------------------------------------------------------------
    def _uname(self, kind, name, fallback):
        if not name:
            return fallback
        if name in self.names[kind]:
            raise ImportError_(f"{self.ctx.file}: duplicate {kind} name {name!r}")
        self.names[kind].add(name)
        return name

    def _children(self, el, li, cls, fpos, fquat):
        """Children of a body (or frame) element into link ``li``; (fpos, fquat) is the frame's
        pose in the link frame."""
        ctx = self.ctx
        for child in el:
            tag = child.tag
            if tag == "body":
                self._body(child, li, cls, fpos, fquat)
            elif tag == "frame":
                pos = _floats(child.get("pos", "0 0 0"), 3, "frame pos")
                q = ctx.orient(child.attrib, f"frame {child.get('name')!r}") or (1.0, 0, 0, 0)
                p2, q2 = compose(fpos, fquat, pos, q)
                self._children(child, li, child.get("childclass", cls), p2, q2)
            elif tag in ("joint", "freejoint"):
                self._joint(child, li, cls, fpos, fquat)
            elif tag == "geom":
                self._geom(child, li, cls, fpos, fquat)
            elif tag == "site":
                self._site(child, li, cls, fpos, fquat)
            elif tag == "inertial":
                if li == 0:
                    raise ImportError_(f"{ctx.file}: <inertial> in the worldbody")
            elif tag in ("camera", "light"):
                ctx.unsupported[tag] += 1
            elif tag in ("composite", "flexcomp", "replicate", "plugin", "attach"):
                ctx.unsupported[f"body {tag}"] += 1
            else:
                raise ImportError_(f"{ctx.file}: unknown element <{tag}> in a body; allowed body, "
                                   f"frame, joint, freejoint, geom, site, inertial, camera, light")

    def _body(self, el, parent, cls, fpos, fquat):
        ctx, desc = self.ctx, self.desc
        li = len(desc.links)
        name = self._uname("link", el.get("name"), f"body{li}")
        pos = _floats(el.get("pos", "0 0 0"), 3, f"body {name!r} pos")
        q = ctx.orient(el.attrib, f"body {name!r}") or (1.0, 0.0, 0.0, 0.0)
        pos, q = compose(fpos, fquat, pos, q)
        link = Link(name=name, parent=parent, pos=pos, quat=q,
                    gravcomp=float(el.get("gravcomp", 0.0)))
        if el.get("mocap", "false") == "true":
            ctx.unsupported["mocap body (treated as fixed)"] += 1
        desc.links.append(link)
        cls = el.get("childclass", cls)
        if cls not in ctx.classes:
            raise ImportError_(f"{ctx.file}: body {name!r} childclass {cls!r} is not defined")
        ine = el.find("inertial")
        if ine is not None:
            self.explicit[li] = self._explicit_inertial(ine, name)
        self._children(el, li, cls, (0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0))

    def _explicit_inertial(self, el, name):
        ctx = self.ctx
        a = el.attrib
        if "mass" not in a:
            raise ImportError_(f"{ctx.file}: body {name!r} <inertial> without mass")
        mass = float(a["mass"])
        if mass < 0:
            raise OptionError(f"{ctx.file}: body {name!r} <inertial mass={a['mass']}>: mass must be "
                              f">= 0")
        pos = _floats(a.get("pos", "0 0 0"), 3, f"body {name!r} inertial pos")
        q = ctx.orient(a, f"body {name!r} inertial") or (1.0, 0.0, 0.0, 0.0)
        if "fullinertia" in a:
            xx, yy, zz, xy, xz, yz = _floats(a["fullinertia"], 6, f"body {name!r} fullinertia")
            inertia = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        elif "diaginertia" in a:
            inertia = np.diag(_floats(a["diaginertia"], 3, f"body {name!r} diaginertia"))
        else:
            raise ImportError_(f"{ctx.file}: body {name!r} <inertial> needs diaginertia or "
                               f"fullinertia")
        r = quat_to_mat(q)
        ine = Inertial(mass=mass, com=pos, inertia=r @ inertia @ r.T)
        msg = check_inertial(ine, f"body {name!r} inertial", strict_triangle=False)
        if msg:
            ctx.notes.append(msg)
        return ine

    def _joint(self, el, li, cls, fpos, fquat):
        ctx, desc = self.ctx, self.desc
        if li == 0:
            raise ImportError_(f"{ctx.file}: joint {el.get('name')!r} in the worldbody")
        if el.tag == "freejoint":
            a = {"type": "free", **el.attrib}
        else:
            a = ctx.attrs(el, cls)
        jt = a.get("type", "hinge")
        if jt not in JOINT_MAP:
            raise ImportError_(f"{ctx.file}: joint {a.get('name')!r} type = {jt!r}; allowed "
                               f"{tuple(JOINT_MAP)}")
        ji = len(desc.joints)
        name = self._uname("joint", a.get("name"), f"joint{ji}")
        typ = JOINT_MAP[jt]
        pos = np.asarray(fpos) + quat_to_mat(fquat) @ np.asarray(_floats(a.get("pos", "0 0 0"), 3))
        axis = np.asarray(_floats(a.get("axis", "0 0 1"), 3, f"joint {name!r} axis"))
        n = np.linalg.norm(axis)
        if n < 1e-10:
            raise ImportError_(f"{ctx.file}: joint {name!r} axis = {a.get('axis')!r} is zero")
        axis = quat_to_mat(fquat) @ (axis / n)
        ang = typ in ("revolute", "spherical")
        conv = ctx.angle if ang else (lambda v: v)
        rng = tuple(conv(v) for v in _floats(a.get("range", "0 0"), 2, f"joint {name!r} range"))
        limited = self._limited(a.get("limited", "auto"), rng, f"joint {name!r}")
        j = Joint(name=name, type=typ, link=li, pos=pos, axis=axis, limited=limited, range=rng,
                  ref=conv(float(a.get("ref", 0.0))) if typ in ("revolute", "prismatic") else 0.0,
                  springref=conv(float(a.get("springref", 0.0))),
                  stiffness=float(a.get("stiffness", 0.0)), damping=float(a.get("damping", 0.0)),
                  armature=float(a.get("armature", 0.0)),
                  frictionloss=float(a.get("frictionloss", 0.0)),
                  solref_limit=_pad(_floats(a.get("solreflimit", "")), 2, SOLREF),
                  solimp_limit=_pad(_floats(a.get("solimplimit", "")), 5, SOLIMP),
                  solref_friction=_pad(_floats(a.get("solreffriction", "")), 2, SOLREF),
                  solimp_friction=_pad(_floats(a.get("solimpfriction", "")), 5, SOLIMP),
                  margin=float(a.get("margin", 0.0)))
        if typ == "free" and el.tag == "joint":
            j.axis = (0.0, 0.0, 1.0)
        if "springdamper" in a:
            tc, dr = _floats(a["springdamper"], 2, f"joint {name!r} springdamper")
            if tc > 0 and dr > 0:
                self.springdamper[id(j)] = (tc, dr)
        desc.joints.append(j)
        desc.links[li].joints.append(ji)

    def _limited(self, val, rng, what):
        if val in ("true", "1"):
            return True
        if val in ("false", "0"):
            return False
        if val != "auto":
            raise ImportError_(f"{self.ctx.file}: {what} limited = {val!r}; allowed true/false/auto")
        if not self.ctx.flag("autolimits"):
            return False
        return rng[0] < rng[1]

    def _geom(self, el, li, cls, fpos, fquat):
        ctx, desc = self.ctx, self.desc
        a = ctx.attrs(el, cls)
        gi = len(desc.geoms)
        name = self._uname("geom", a.get("name"), f"geom{gi}")
        gt = a.get("type", "sphere")
        if gt not in GEOM_TYPES:
            raise ImportError_(f"{ctx.file}: geom {name!r} type = {gt!r}; allowed {GEOM_TYPES}")
        what = f"geom {name!r}"
        size = list(_pad(_floats(a.get("size", "0 0 0"), what=f"{what} size"), 3, (0, 0, 0)))
        pos = np.asarray(_floats(a.get("pos", "0 0 0"), 3, f"{what} pos"))
        q = ctx.orient(a, what) or (1.0, 0.0, 0.0, 0.0)
        if "fromto" in a and gt in ("capsule", "cylinder", "box", "ellipsoid"):
            ft = np.asarray(_floats(a["fromto"], 6, f"{what} fromto"))
            vec = ft[:3] - ft[3:]   # MuJoCo orients +z from the 'to' end towards 'from'
            if np.linalg.norm(vec) < 1e-10:
                raise ImportError_(f"{ctx.file}: {what} fromto = {a['fromto']!r} has zero length")
            pos = 0.5 * (ft[:3] + ft[3:])
            q = _z2quat(vec)
            if gt in ("capsule", "cylinder"):
                size[1] = 0.5 * float(np.linalg.norm(vec))
            else:
                size[2] = 0.5 * float(np.linalg.norm(vec))
                if len(str(a.get("size", "")).split()) == 1:
                    size[1] = size[0]      # MuJoCo: one size for a fromto box/ellipsoid
        mesh = hfield = None
        vol_props = None
        shell = a.get("shellinertia", "false") == "true"
        if gt == "mesh" or ("mesh" in a and gt != "hfield"):
            if "mesh" not in a:
                raise ImportError_(f"{ctx.file}: {what} has type mesh but no mesh attribute")
            v, f, path = self._load_mesh(a["mesh"], what)
            vol, mcom, minert = self._mesh_props(a["mesh"], shell)
            if gt == "mesh":
                mesh = MeshData(vertices=v, faces=f, name=a["mesh"], file=path)
                vol_props = (vol, mcom, minert)
            else:
                # a primitive fitted to the mesh (MuJoCo's equivalent-inertia box, or the AABB)
                pos, q, size = self._fit(gt, v, vol, mcom, minert, pos, q, a)
        elif gt == "hfield":
            hn = a.get("hfield")
            if hn not in ctx.hfields:
                raise ImportError_(f"{ctx.file}: {what} uses hfield {hn!r}, which is not defined")
            hfield = dict(ctx.hfields[hn])
            hs = _floats(hfield.get("size", "1 1 1 1"), 4, f"hfield {hn!r} size")
            hfield["size"] = tuple(hs)
            if "elevation" in hfield:
                nr, nc = int(hfield.get("nrow", 0)), int(hfield.get("ncol", 0))
                elev = np.asarray(_floats(hfield["elevation"], nr * nc, f"hfield {hn!r} "
                                          f"elevation ({nr}x{nc})"))
                # as MuJoCo's hfield_data: normalised to [0, 1] (heights are data × size[2]),
                # row 0 at -y (the XML lists the +y row first)
                span = elev.max() - elev.min()
                hfield["data"] = ((elev - elev.min()) / span if span > 0 else
                                  np.zeros_like(elev)).reshape(nr, nc)[::-1].copy()
            elif "file" in hfield:
                if int(hfield.get("nrow", 0)) or int(hfield.get("ncol", 0)):
                    raise ImportError_(f"{ctx.file}: hfield {hn!r} gives both file and "
                                       f"nrow/ncol; the file sets the grid (MuJoCo refuses "
                                       f"both too)")
                path = self._mesh_path(hfield["file"], f"hfield {hn!r}")
                raw = _hfield_file(path, f"{ctx.file}: hfield {hn!r}")
                hfield["data"] = _hfield_normalise(raw)
            size = hs[:3]
        elif gt == "sdf":
            ctx.unsupported["geom type sdf"] += 1
        pos, q = compose(fpos, fquat, pos, q)
        friction = _pad(_floats(a.get("friction", "1 0.005 0.0001"), what=f"{what} friction"), 3,
                        (1.0, 0.005, 0.0001))
        contype, conaff = int(a.get("contype", 1)), int(a.get("conaffinity", 1))
        g = Geom(name=name, type=gt, link=li, size=tuple(size), pos=pos, quat=q,
                 role="visual" if (contype == 0 and conaff == 0) else "both",
                 contype=contype, conaffinity=conaff, condim=int(a.get("condim", 3)),
                 friction=friction, solref=_pad(_floats(a.get("solref", "")), 2, SOLREF),
                 solimp=_pad(_floats(a.get("solimp", "")), 5, SOLIMP),
                 solmix=float(a.get("solmix", 1.0)), priority=int(a.get("priority", 0)),
                 margin=float(a.get("margin", 0.0)), gap=float(a.get("gap", 0.0)),
                 group=int(a.get("group", 0)), density=float(a.get("density", 1000.0)),
                 rgba=_pad(_floats(a.get("rgba", "0.5 0.5 0.5 1")), 4, (0.5, 0.5, 0.5, 1.0)),
                 mesh=mesh, hfield=hfield)
        if g.condim not in (1, 3, 4, 6):
            raise ImportError_(f"{ctx.file}: {what} condim = {g.condim}; allowed 1, 3, 4, 6")
        desc.geoms.append(g)
        desc.links[li].geoms.append(gi)
        self.geom_mass.append(self._geom_inertial(g, a, vol_props, shell))

    def _fit(self, gt, v, vol, mcom, minert, pos, q, a):
        ctx = self.ctx
        ev, evec = np.linalg.eigh(minert)
        if np.linalg.det(evec) < 0:
            evec[:, 2] = -evec[:, 2]
        size = [0.0, 0.0, 0.0]
        if ctx.flag("fitaabb"):
            lv = (v - mcom) @ evec
            lo, hi = lv.min(0), lv.max(0)
            cen = 0.5 * (lo + hi)
            mpos = mcom + evec @ cen
            half = hi - cen
            if gt == "sphere":
                size[0] = float(np.max(np.linalg.norm(lv - cen, axis=1)))
            elif gt in ("capsule", "cylinder"):
                size[0] = float(np.max(np.linalg.norm((lv - cen)[:, :2], axis=1)))
                size[1] = float(half[2])
            else:
                size = [float(x) for x in half]
        else:
            m = vol   # unit density: box of equal principal moments
            b = [math.sqrt(max(0.0, 6 * (ev[1] + ev[2] - ev[0]) / m)) / 2,
                 math.sqrt(max(0.0, 6 * (ev[0] + ev[2] - ev[1]) / m)) / 2,
                 math.sqrt(max(0.0, 6 * (ev[0] + ev[1] - ev[2]) / m)) / 2]
            mpos = mcom
            if gt == "sphere":
                size[0] = sum(b) / 3
            elif gt == "capsule":
                size[0] = (b[0] + b[1]) / 2
                size[1] = max(0.0, b[2] - size[0] / 2)
            elif gt == "cylinder":
                size[0] = (b[0] + b[1]) / 2
                size[1] = b[2]
            else:
                size = b
        scale = float(a.get("fitscale", 1.0))
        size = [s * scale for s in size]
        p2, q2 = compose(pos, q, mpos, mat_to_quat(evec))
        ctx.notes.append(f"geom type {gt} fitted to mesh {a['mesh']!r} (principal axes chosen up "
                         f"to sign)")
        return p2, q2, size

    def _geom_inertial(self, g, a, vol_props, shell):
        """(mass, com, inertia about com) of a geom in the link frame, as MuJoCo computes it."""
        if g.type in ("plane", "hfield", "sdf"):
            return None
        s = g.size
        if g.type == "mesh":
            vol, mcom, minert = vol_props
            base = (mcom, minert)   # per unit density
        else:
            r = s[0]
            if g.type == "sphere":
                vol = 4.0 / 3.0 * math.pi * r ** 3
                if shell:
                    vol = 4 * math.pi * r * r
                    inert = np.eye(3) * 2.0 / 3.0 * vol * r * r
                else:
                    inert = np.eye(3) * 0.4 * vol * r * r
            elif g.type == "capsule":
                h = 2 * s[1]
                vs = 4.0 / 3.0 * math.pi * r ** 3
                vc = math.pi * r * r * h
                vol = vs + vc
                ixx = vc * (3 * r * r + h * h) / 12 + vs * (0.4 * r * r + h * h / 4 + 3 * h * r / 8)
                inert = np.diag([ixx, ixx, vc * r * r / 2 + vs * 0.4 * r * r])
            elif g.type == "cylinder":
                h = 2 * s[1]
                vol = math.pi * r * r * h
                ixx = vol * (3 * r * r + h * h) / 12
                inert = np.diag([ixx, ixx, vol * r * r / 2])
            elif g.type == "ellipsoid":
                vol = 4.0 / 3.0 * math.pi * s[0] * s[1] * s[2]
                inert = np.diag([vol * (s[1] ** 2 + s[2] ** 2) / 5, vol * (s[0] ** 2 + s[2] ** 2) / 5,
                                 vol * (s[0] ** 2 + s[1] ** 2) / 5])
            else:  # box
                vol = 8 * s[0] * s[1] * s[2]
                inert = np.diag([vol * (s[1] ** 2 + s[2] ** 2) / 3, vol * (s[0] ** 2 + s[2] ** 2) / 3,
                                 vol * (s[0] ** 2 + s[1] ** 2) / 3])
            if shell and g.type != "sphere":
                self.ctx.unsupported[f"shellinertia on {g.type}"] += 1
            base = (np.zeros(3), inert)
        if "mass" in a:
            mass = float(a["mass"])
            if mass < 0:
                raise OptionError(f"{self.ctx.file}: geom {g.name!r} mass = {mass}: must be >= 0")
            rho = mass / vol if vol > 0 else 0.0
        else:
            rho = g.density
            mass = rho * vol
        if mass < 0:
            raise OptionError(f"{self.ctx.file}: geom {g.name!r} mass {mass} (density {rho}) is "
                              f"negative")
        local = Inertial(mass=mass, com=base[0], inertia=rho * base[1])
        return inertial_in_frame(local, g.pos, g.quat)

    def _group_by_link(self):
        """MuJoCo numbers joints, geoms and sites body by body (document order inside a body)."""
        desc = self.desc
        for kind in ("joints", "geoms", "sites"):
            items = getattr(desc, kind)
            order = [i for lk in desc.links for i in getattr(lk, kind)]
            remap = {old: new for new, old in enumerate(order)}
            setattr(desc, kind, [items[i] for i in order])
            for lk in desc.links:
                setattr(lk, kind, [remap[i] for i in getattr(lk, kind)])
            if kind == "geoms":
                self.geom_mass = [self.geom_mass[i] for i in order]

    def _springdamper(self):
        """MuJoCo's springdamper=(timeconst, dampratio): stiffness and damping from the
        effective dof inertia 1/(M⁻¹)ᵢᵢ at qpos0 (the as-written pose), like solref:
        k = m/(tc²·dr²), b = 2m/tc."""
        desc = self.desc.finalize()
        nv = desc.n_dofs
        wpos, wrot = world_poses(desc)
        # motion subspace of every dof: (angular, linear at the world origin)
        cols = []
        for li, lk in enumerate(desc.links):
            for ji in lk.joints:
                j = desc.joints[ji]
                anchor = wpos[li] + wrot[li] @ np.asarray(j.pos)
                if j.type == "revolute":
                    w = wrot[li] @ np.asarray(j.axis)
                    cols.append((li, w, -np.cross(w, anchor)))
                elif j.type == "prismatic":
                    cols.append((li, np.zeros(3), wrot[li] @ np.asarray(j.axis)))
                else:
                    if j.type == "free":
                        for k in range(3):
                            cols.append((li, np.zeros(3), np.eye(3)[k]))
                    for k in range(3):
                        w = wrot[li][:, k]
                        cols.append((li, w, -np.cross(w, anchor)))
        anc = []
        for li in range(len(desc.links)):
            chain, p = set(), li
            while p >= 0:
                chain.add(p)
                p = desc.links[p].parent
            anc.append(chain)
        M = np.zeros((nv, nv))
        for b, lk in enumerate(desc.links):
            m = lk.inertial.mass
            if m <= 0:
                continue
            c = wpos[b] + wrot[b] @ np.asarray(lk.inertial.com)
            ic = wrot[b] @ lk.inertial.inertia @ wrot[b].T
            jv = np.zeros((3, nv))
            jw = np.zeros((3, nv))
            for d, (li, w, v0) in enumerate(cols):
                if li in anc[b]:
                    jw[:, d] = w
                    jv[:, d] = v0 + np.cross(w, c)
            M += m * jv.T @ jv + jw.T @ ic @ jw
        for j in desc.joints:
            M[range(j.dof_start, j.dof_start + j.n_dofs),
              range(j.dof_start, j.dof_start + j.n_dofs)] += j.armature
        minv = np.linalg.inv(M)
        for j in desc.joints:
            if id(j) in self.springdamper:
                tc, dr = self.springdamper[id(j)]
                meff = 1.0 / minv[j.dof_start, j.dof_start]
                j.stiffness = meff / (tc * tc * dr * dr)
                j.damping = 2.0 * meff / tc

    def _inertia(self):
        """Body mass properties as MuJoCo's compiler sets them."""
        ctx, desc = self.ctx, self.desc
        mode = ctx.compiler["inertiafromgeom"]
        if mode not in ("true", "false", "auto"):
            raise ImportError_(f"compiler inertiafromgeom = {mode!r}; allowed true/false/auto")
        glo, ghi = (int(x) for x in _floats(ctx.compiler["inertiagrouprange"], 2))
        bmass = float(ctx.compiler["boundmass"])
        binert = float(ctx.compiler["boundinertia"])
        for li, link in enumerate(desc.links):
            if li == 0:
                continue
            explicit = self.explicit.get(li)
            parts = [self.geom_mass[gi] for gi in link.geoms
                     if self.geom_mass[gi] is not None and glo <= desc.geoms[gi].group <= ghi]
            if (mode == "true" and (parts or explicit is None)) or (mode == "auto"
                                                                   and explicit is None):
                # MuJoCo: "true" keeps an explicit <inertial> when no geom falls in the group range
                ine = combine_inertials(parts)
            else:
                ine = explicit if explicit is not None else Inertial()
            if bmass > 0 or binert > 0:
                ine.mass = max(ine.mass, bmass)
                if binert > 0:
                    ev, evec = np.linalg.eigh(ine.inertia)
                    ine.inertia = evec @ np.diag(np.maximum(ev, binert)) @ evec.T
            if ctx.flag("balanceinertia"):
                ev, evec = np.linalg.eigh(ine.inertia)
                if ev[0] + ev[1] < ev[2]:
                    ine.inertia = np.eye(3) * ev.mean()
            link.inertial = ine
        # MuJoCo refuses moving bodies without mass or inertia; polyphys's kinematic solver does
        # not need mass, so this is a note (a dynamic solver will refuse such a body at build)
        for li, link in enumerate(desc.links):
            if li and link.joints and (link.inertial.mass <= 0
                                       or np.max(np.abs(link.inertial.inertia)) <= 0):
                ctx.notes.append(f"body {link.name!r} has joints but no mass/inertia")
        total_target = float(ctx.compiler["settotalmass"])
        if total_target > 0:
            total = sum(lk.inertial.mass for lk in desc.links)
            if total > 0:
                s = total_target / total
                for lk in desc.links:
                    lk.inertial.mass *= s
                    lk.inertial.inertia = lk.inertial.inertia * s

    def _site(self, el, li, cls, fpos, fquat):
        ctx, desc = self.ctx, self.desc
        a = ctx.attrs(el, cls)
        name = self._uname("site", a.get("name"), f"site{len(desc.sites)}")
        size = list(_pad(_floats(a.get("size", "0.005 0.005 0.005")), 3, (0.005, 0.005, 0.005)))
        pos = _floats(a.get("pos", "0 0 0"), 3, f"site {name!r} pos")
        q = ctx.orient(a, f"site {name!r}") or (1.0, 0.0, 0.0, 0.0)
        st = a.get("type", "sphere")
        if "fromto" in a:
            ft = np.asarray(_floats(a["fromto"], 6))
            vec = ft[:3] - ft[3:]
            pos, q = 0.5 * (ft[:3] + ft[3:]), _z2quat(vec)
            size[1 if st in ("capsule", "cylinder") else 2] = 0.5 * float(np.linalg.norm(vec))
        pos, q = compose(fpos, fquat, pos, q)
        desc.sites.append(Site(name=name, link=li, pos=pos, quat=q, type=st, size=tuple(size)))
        desc.links[li].sites.append(len(desc.sites) - 1)

    # -- contact, equality, tendon, actuator, keyframe ------------------------------------------
    def _link_of(self, name, what):
        try:
            return self.desc.link_index(name)
        except KeyError:
            raise ImportError_(f"{self.ctx.file}: {what} names body {name!r}, which does not "
                               f"exist") from None

    def _geom_of(self, name, what):
        for i, g in enumerate(self.desc.geoms):
            if g.name == name:
                return i
        raise ImportError_(f"{self.ctx.file}: {what} names geom {name!r}, which does not exist")

    def _joint_of(self, name, what):
        try:
            return self.desc.joint_index(name)
        except KeyError:
            raise ImportError_(f"{self.ctx.file}: {what} names joint {name!r}, which does not "
                               f"exist") from None

    def _contact(self, el):
        ctx, desc = self.ctx, self.desc
        for c in el:
            if c.tag == "exclude":
                desc.contact_excludes.append((self._link_of(c.get("body1"), "contact exclude"),
                                              self._link_of(c.get("body2"), "contact exclude")))
            elif c.tag == "pair":
                a = ctx.attrs(c, "main")
                g1 = self._geom_of(a.get("geom1"), "contact pair")
                g2 = self._geom_of(a.get("geom2"), "contact pair")
                # every field, MuJoCo's pair defaults where neither the element nor its class
                # gives one (MuJoCo does not derive a pair's parameters from its geoms; a partial
                # vector keeps the defaults of the entries it omits)
                p = {"geom1": g1, "geom2": g2, "name": a.get("name", "")}
                for key, dflt in PAIR_DEFAULTS.items():
                    if key in a:
                        vals = _floats(a[key])
                        p[key] = vals[0] if not isinstance(dflt, tuple) else _pad(vals, len(dflt), dflt)
                    else:
                        p[key] = dflt
                p["condim"] = int(p["condim"])
                desc.contact_pairs.append(p)
            else:
                raise ImportError_(f"{ctx.file}: unknown element <{c.tag}> in <contact>; allowed "
                                   f"exclude, pair")

    def _equality(self, el):
        ctx, desc = self.ctx, self.desc
        for e in el:
            a = {**ctx.classes.get(e.get("class", "main"), {}).get("equality", {}), **e.attrib}
            name = a.get("name", f"eq{len(desc.equalities)}")
            common = dict(name=name, solref=_pad(_floats(a.get("solref", "")), 2, SOLREF),
                          solimp=_pad(_floats(a.get("solimp", "")), 5, SOLIMP),
                          active=a.get("active", "true") == "true")
            if e.tag in ("connect", "weld") and ("body1" in a):
                b1 = self._link_of(a["body1"], f"equality {name!r}")
                b2 = self._link_of(a["body2"], f"equality {name!r}") if "body2" in a else -1
                b2 = -1 if b2 == 0 else b2     # the world body is "-1: the world"
                anchor = tuple(_pad(_floats(a.get("anchor", "0 0 0")), 3, (0, 0, 0)))
                eq = Equality(type=e.tag, obj1=b1, obj2=b2, anchor=anchor, **common)
                if e.tag == "weld":
                    rel = _pad(_floats(a.get("relpose", "0 1 0 0 0 0 0")), 7, (0, 1, 0, 0, 0, 0, 0))
                    if not any(rel[3:]):
                        # MuJoCo: a zero quaternion means "as in the reference pose": body2's
                        # anchor point and orientation in body1's frame at qpos0
                        wpos, wrot = world_poses(self.desc)
                        p2 = wpos[b2] if b2 >= 0 else np.zeros(3)
                        r2 = wrot[b2] if b2 >= 0 else np.eye(3)
                        r1 = wrot[b1]
                        pos = r1.T @ (p2 + r2 @ np.asarray(anchor) - wpos[b1])
                        rel = tuple(pos) + mat_to_quat(r1.T @ r2)
                    else:
                        qn = np.asarray(rel[3:]) / np.linalg.norm(rel[3:])
                        rel = tuple(rel[:3]) + tuple(qn)
                    eq.relpose = tuple(float(x) for x in rel)
                    eq.torquescale = float(a.get("torquescale", 1.0))
                desc.equalities.append(eq)
            elif e.tag == "joint":
                j1 = self._joint_of(a["joint1"], f"equality {name!r}")
                j2 = self._joint_of(a["joint2"], f"equality {name!r}") if "joint2" in a else -1
                desc.equalities.append(Equality(
                    type="joint", obj1=j1, obj2=j2,
                    polycoef=_pad(_floats(a.get("polycoef", "0 1 0 0 0")), 5, (0, 1, 0, 0, 0)),
                    **common))
            elif e.tag in ("connect", "weld", "tendon", "flex"):
                ctx.unsupported[f"equality {e.tag}" + (" (site-based)" if "site1" in a else "")] += 1
            else:
                raise ImportError_(f"{ctx.file}: unknown equality <{e.tag}>; allowed connect, "
                                   f"weld, joint, tendon, flex")

    def _tendon(self, el):
        ctx, desc = self.ctx, self.desc
        for t in el:
            entry = {"name": t.get("name", f"tendon{len(desc.tendons)}"), "type": t.tag,
                     "attrs": dict(t.attrib)}
            if t.tag == "fixed":
                entry["joints"] = [(self._joint_of(j.get("joint"), "fixed tendon"),
                                    float(j.get("coef", 1.0))) for j in t if j.tag == "joint"]
            else:
                entry["path"] = [(c.tag, dict(c.attrib)) for c in t]
            desc.tendons.append(entry)
            ctx.unsupported[f"tendon {t.tag}"] += 1

    def _actuators(self, el):
        ctx, desc = self.ctx, self.desc
        for e in el:
            if e.tag not in ACTUATOR_TAGS:
                raise ImportError_(f"{ctx.file}: unknown actuator <{e.tag}>; allowed {ACTUATOR_TAGS}")
            cls = e.get("class", "main")
            if cls not in ctx.classes:
                raise ImportError_(f"{ctx.file}: actuator {e.get('name')!r} uses undefined class "
                                   f"{cls!r}")
            st = {"gaintype": "fixed", "gainprm": [1.0] + [0.0] * 9, "biastype": "none",
                  "biasprm": [0.0] * 10, "dyntype": "none", "dynprm": [1.0] + [0.0] * 9,
                  "gear": [1.0, 0, 0, 0, 0, 0], "ctrlrange": [0.0, 0.0],
                  "forcerange": [0.0, 0.0], "ctrllimited": "auto", "forcelimited": "auto"}
            for tag, at in ctx.classes[cls]["_actuators"]:
                self._apply_actuator(st, tag, at)
            self._apply_actuator(st, e.tag, dict(e.attrib))
            name = e.get("name", f"actuator{len(desc.actuators)}")
            trn = [k for k in ("joint", "jointinparent", "tendon", "site", "body", "cranksite")
                   if k in e.attrib]
            if len(trn) != 1:
                raise ImportError_(f"{ctx.file}: actuator {name!r} needs exactly one transmission "
                                   f"(joint/jointinparent/tendon/site/body/cranksite), got {trn}")
            trntype = trn[0]
            target = e.get(trntype)
            jidx = -1
            if trntype in ("joint", "jointinparent"):
                jidx = self._joint_of(target, f"actuator {name!r}")
            else:
                ctx.unsupported[f"actuator transmission {trntype}"] += 1
            if e.tag not in SUPPORTED_ACTUATORS:
                ctx.unsupported[f"actuator {e.tag}"] += 1
            ctrlrange = tuple(st["ctrlrange"])
            forcerange = tuple(st["forcerange"])
            act = Actuator(name=name, type=e.tag, joint=jidx, target=target,
                           trntype="joint" if trntype == "jointinparent" else trntype,
                           gear=tuple(st["gear"]),
                           ctrllimited=self._limited(st["ctrllimited"], ctrlrange,
                                                     f"actuator {name!r} ctrl"),
                           ctrlrange=ctrlrange,
                           forcelimited=self._limited(st["forcelimited"], forcerange,
                                                      f"actuator {name!r} force"),
                           forcerange=forcerange, gainprm=tuple(st["gainprm"]),
                           biasprm=tuple(st["biasprm"]), dyntype=st["dyntype"],
                           gaintype=st["gaintype"], biastype=st["biastype"])
            if st["dyntype"] != "none":
                ctx.unsupported[f"actuator dyntype {st['dyntype']}"] += 1
            desc.actuators.append(act)

    def _apply_actuator(self, st, tag, a):
        """MuJoCo's actuator shortcuts applied over the current default state."""
        for key in ("ctrllimited", "forcelimited"):
            if key in a:
                st[key] = a[key]
        for key, n in (("ctrlrange", 2), ("forcerange", 2)):
            if key in a:
                st[key] = _floats(a[key], n, f"actuator {key}")
        if "gear" in a:
            new = _floats(a["gear"], what="actuator gear")
            st["gear"] = new[:6] + st["gear"][len(new):]
        if tag == "general":
            for key in ("gaintype", "biastype", "dyntype"):
                if key in a:
                    st[key] = a[key]
            for key in ("gainprm", "biasprm", "dynprm"):
                if key in a:
                    vals = _floats(a[key], what=f"actuator {key}")
                    st[key] = vals[:10] + st[key][len(vals):]
        elif tag == "motor":
            st.update(gaintype="fixed", biastype="none", dyntype="none")
            st["gainprm"] = [1.0] + [0.0] * 9
            st["biasprm"] = [0.0] * 10
        elif tag == "position":
            kp = float(a.get("kp", st["gainprm"][0]))
            st["gainprm"] = [kp] + [0.0] * 9
            kv = float(a["kv"]) if "kv" in a else -st["biasprm"][2]
            if "dampratio" in a:
                self.ctx.unsupported["position actuator dampratio"] += 1
            st["biasprm"] = [0.0, -kp, -kv] + [0.0] * 7
            st.update(gaintype="fixed", biastype="affine")
            tc = float(a.get("timeconst", 0.0))
            st["dyntype"] = "filterexact" if tc > 0 else "none"
            if tc > 0:
                st["dynprm"] = [tc] + [0.0] * 9
        elif tag == "velocity":
            kv = float(a.get("kv", st["gainprm"][0]))
            st["gainprm"] = [kv] + [0.0] * 9
            st["biasprm"] = [0.0, 0.0, -kv] + [0.0] * 7
            st.update(gaintype="fixed", biastype="affine", dyntype="none")
        # the shortcuts below are recorded with MuJoCo's parameters but not simulated (reported)
        elif tag == "intvelocity":
            kp = float(a.get("kp", st["gainprm"][0]))
            kv = float(a.get("kv", 0.0))
            st["gainprm"] = [kp] + [0.0] * 9
            st["biasprm"] = [0.0, -kp, -kv] + [0.0] * 7
            st.update(gaintype="fixed", biastype="affine", dyntype="integrator")
        elif tag == "damper":
            kv = float(a.get("kv", 0.0))
            st["gainprm"] = [0.0, 0.0, -kv] + [0.0] * 7
            st["biasprm"] = [0.0] * 10
            st.update(gaintype="affine", biastype="none", dyntype="none")
        elif tag == "cylinder":
            area = float(a.get("area", 1.0))
            if "diameter" in a:
                area = math.pi / 4 * float(a["diameter"]) ** 2
            bias = _floats(a.get("bias", "0 0 0"), 3, "cylinder bias")
            st["gainprm"] = [area] + [0.0] * 9
            st["biasprm"] = list(bias) + [0.0] * 7
            st["dynprm"] = [float(a.get("timeconst", 1.0))] + [0.0] * 9
            st.update(gaintype="fixed", biastype="affine", dyntype="filter")
        elif tag == "muscle":
            prm = (_floats(a.get("range", "0.75 1.05"), 2, "muscle range")
                   + [float(a.get(k, d)) for k, d in (("force", -1), ("scale", 200), ("lmin", 0.5),
                                                      ("lmax", 1.6), ("vmax", 1.5),
                                                      ("fpmax", 1.3), ("fvmax", 1.2))])
            st["gainprm"] = prm + [0.0]
            st["biasprm"] = prm + [0.0]
            st["dynprm"] = (_floats(a.get("timeconst", "0.01 0.04"), 2, "muscle timeconst")
                            + [float(a.get("tausmooth", 0.0))] + [0.0] * 7)
            st.update(gaintype="muscle", biastype="muscle", dyntype="muscle")
        elif tag == "adhesion":
            st["gainprm"] = [float(a.get("gain", st["gainprm"][0]))] + [0.0] * 9
            st["biasprm"] = [0.0] * 10
            st.update(gaintype="fixed", biastype="none", dyntype="none")

    def _keyframes(self, el):
        desc = self.desc
        for k in el:
            if k.tag != "key":
                raise ImportError_(f"{self.ctx.file}: unknown element <{k.tag}> in <keyframe>")
            kf = Keyframe(name=k.get("name", f"key{len(desc.keyframes)}"),
                          time=float(k.get("time", 0.0)))
            for key, n in (("qpos", desc.n_qs), ("qvel", desc.n_dofs), ("ctrl", len(desc.actuators))):
                if key in k.attrib:
                    vals = np.asarray(_floats(k.get(key)))
                    if len(vals) != n:
                        raise ImportError_(f"{self.ctx.file}: keyframe {kf.name!r} {key} has "
                                           f"{len(vals)} values, the model has {n}")
                    setattr(kf, key, vals)
            for key in ("mpos", "mquat", "act"):
                if key in k.attrib:
                    self.ctx.unsupported[f"keyframe {key}"] += 1
            desc.keyframes.append(kf)

    # -- morph options and the report -----------------------------------------------------------
    def _apply_morph(self, morph):
        desc = self.desc
        apply_fixed(desc, morph.fixed, roots=[i for i, lk in enumerate(desc.links) if lk.parent == 0])
        apply_scale(desc, morph.scale)
        apply_geometry_options(desc, morph)
        desc.finalize()

    def _report(self):
        ctx, desc = self.ctx, self.desc
        items = list(ctx.notes)
        if ctx.unsupported:
            items.append("not modelled by polyphys (kept out of the simulation): " + ", ".join(
                f"{k} x{v}" for k, v in sorted(ctx.unsupported.items())))
        desc.warnings.extend(items)
        if items:
            warnings.warn(PolyphysWarning(f"{ctx.file}: " + "; ".join(items)), stacklevel=3)


def world_poses(desc):
    """World position and rotation matrix of every link at qpos0 (the pose the file wrote)."""
    wpos, wrot = [], []
    for lk in desc.links:
        r = quat_to_mat(lk.quat)
        if lk.parent < 0:
            wpos.append(np.asarray(lk.pos, float))
            wrot.append(r)
        else:
            wpos.append(wpos[lk.parent] + wrot[lk.parent] @ np.asarray(lk.pos, float))
            wrot.append(wrot[lk.parent] @ r)
    return wpos, wrot


# -- post-passes shared in spirit with the URDF importer (kept here: plugins do not import each
#    other) ---------------------------------------------------------------------------------------
def apply_fixed(desc, fixed, roots):
    """fixed=True removes the free joints of the root links; False gives jointless roots one
    (first in q order). Joint references (actuators, equalities, tendons) and keyframes follow."""
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
    """Constant-density scaling: lengths × s, masses × s³, inertias × s⁵."""
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
        keep = [i for i, g in enumerate(desc.geoms) if g.role != "visual"]
        remap = {old: new for new, old in enumerate(keep)}
        desc.geoms = [desc.geoms[i] for i in keep]
        for lk in desc.links:
            lk.geoms = [remap[i] for i in lk.geoms if i in remap]
        desc.contact_pairs = [p for p in desc.contact_pairs
                              if p["geom1"] in remap and p["geom2"] in remap]
        for p in desc.contact_pairs:
            p["geom1"], p["geom2"] = remap[p["geom1"]], remap[p["geom2"]]
