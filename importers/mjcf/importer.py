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
    apply_fixed,
    apply_geometry_options,
    apply_scale,
    check_inertial,
    combine_inertials,
    compose,
    inertial_in_frame,
    mat_to_quat,
    mesh_mass_properties,
    quat_mul,
    quat_to_mat,
)
from polyphys.errors import ImportError_, OptionError
from polyphys.meshfile import read_mesh
from polyphys.xmlfile import FLOAT32_MAX, Attrs, read_xml, where

from .sensors import parse_sensors
from .visual import camera_record, geom_look, read_material, read_texture

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
MAX_KEYFRAMES = 100_000   # <size nkey>: more would only exhaust memory


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
            if len(data) < 13:
                raise ImportError_(f"{what}: file {path!r}: PNG IHDR chunk has {len(data)} bytes, "
                                   f"13 expected")
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
        self.compiler_src: dict = {}      # compiler attribute -> the <compiler> element that set it
        self.classes: dict[str, dict] = {}
        # default class -> tag -> attribute -> the element that wrote it (errors name its line)
        self.class_src: dict[str, dict] = {}
        self.meshes: dict[str, Attrs] = {}
        self.mesh_cache: dict[tuple, tuple] = {}   # (mesh name, what) -> loaded data
        self.hfields: dict[str, Attrs] = {}
        self.textures: dict[str, Attrs] = {}     # visual.py
        self.materials: dict[str, Attrs] = {}

    # -- compiler settings --------------------------------------------------------------------
    def read_compiler(self, root):
        els = root.findall("compiler")
        for el in els:
            self.compiler.update(el.attrib)
            self.compiler_src.update({k: el for k in el.attrib})
        a = Attrs(els[-1] if els else root, self.compiler, self.compiler_src)
        self.c = a
        a.choice("coordinate", "local", ("local",))
        self.degree = a.choice("angle", "degree", ("degree", "radian")) == "degree"
        seq = a["eulerseq"]
        if len(seq) != 3 or any(c not in "xyzXYZ" for c in seq):
            raise a.error("eulerseq", "expected 3 of x/y/z/X/Y/Z")
        for key in ("autolimits", "balanceinertia", "fitaabb", "strippath", "fusestatic",
                    "discardvisual"):
            a.boolean(key, False)
        a.choice("inertiafromgeom", "auto", ("true", "false", "auto"))
        groups = a.reals("inertiagrouprange", n=2)
        if any(v != int(v) for v in groups):
            raise a.error("inertiagrouprange", "expected two integers")
        self.inertia_groups = [int(v) for v in groups]
        self.boundmass = a.real("boundmass", ge=0.0)
        self.boundinertia = a.real("boundinertia", ge=0.0)
        self.settotalmass = a.real("settotalmass")

    def angle(self, v):
        return v * math.pi / 180.0 if self.degree else v

    def flag(self, key):
        return self.c.boolean(key, False)

    def orient(self, a: Attrs):
        """Quaternion from the orientation attributes of an element (None if it has none)."""
        keys = [k for k in ("quat", "axisangle", "euler", "xyaxes", "zaxis") if k in a]
        if not keys:
            return None
        if len(keys) > 1:
            raise a.error(keys[1], f"several orientation specifiers {keys}; MuJoCo allows one")
        k = keys[0]
        if k == "quat":
            q = np.asarray(a.reals(k, n=4))
            n = np.linalg.norm(q)
            if not n > 1e-12 or not np.isfinite(n):
                raise a.error(k, "a quaternion must have a non-zero, finite length")
            return tuple(q / n)
        if k == "axisangle":
            v = a.reals(k, n=4)
            ax = np.asarray(v[:3])
            n = np.linalg.norm(ax)
            if not n > 1e-12 or not np.isfinite(n):
                raise a.error(k, "the axis must have a non-zero, finite length")
            ax = ax / n
            ang = self.angle(v[3])
            return (math.cos(ang / 2),) + tuple(ax * math.sin(ang / 2))
        if k == "euler":
            e = [self.angle(x) for x in a.reals(k, n=3)]
            seq = self.compiler["eulerseq"]
            q = (1.0, 0.0, 0.0, 0.0)
            for ang, c in zip(e, seq):
                r = [math.cos(ang / 2), 0.0, 0.0, 0.0]
                r["xyz".index(c.lower()) + 1] = math.sin(ang / 2)
                q = quat_mul(q, r) if c.islower() else quat_mul(r, q)
            return q
        if k == "xyaxes":
            v = np.asarray(a.reals(k, n=6))
            nx = np.linalg.norm(v[:3])
            if not nx > 1e-12 or not np.isfinite(nx):
                raise a.error(k, "the x axis must have a non-zero, finite length")
            x = v[:3] / nx
            y = v[3:] - x * np.dot(x, v[3:])
            ny = np.linalg.norm(y)
            if not ny > 1e-12 * max(1.0, float(np.linalg.norm(v[3:]))) or not np.isfinite(ny):
                raise a.error(k, "the y axis must not be zero or parallel to the x axis")
            y = y / ny
            z = np.cross(x, y)
            return mat_to_quat(np.stack([x, y, z], axis=1))
        z = np.asarray(a.reals(k, n=3))
        nz = np.linalg.norm(z)
        if not nz > 1e-12 or not np.isfinite(nz):
            raise a.error(k, "the z axis must have a non-zero, finite length")
        return _z2quat(z / nz)

    # -- defaults -------------------------------------------------------------------------------
    def attrs(self, el, cls) -> Attrs:
        """Attributes of ``el`` merged over its default class (each knows where it was written)."""
        tag = el.tag
        name = el.get("class", cls)
        if name not in self.classes:
            raise ImportError_(f"{where(el)}: uses default class {name!r}, which is not defined; "
                               f"classes: {sorted(self.classes)}")
        out = dict(self.classes[name].get(tag, {}))
        origin = dict(self.class_src[name].get(tag, {}))
        for key, val in el.attrib.items():
            if key in PARTIAL and key in out:
                # MuJoCo reads as many numbers as given; the rest keep the class's values
                new, old = val.split(), out[key].split()
                val = " ".join(new + old[len(new):])
            out[key] = val
            origin[key] = el
        return Attrs(el, out, origin)

    def read_defaults(self, top):
        """Every class of a top-level <default> (nested classes, depth first, without recursion)."""
        stack = [(top, None)]
        while stack:
            el, parent = stack.pop()
            name = el.get("class", "main") if parent is None else el.get("class")
            if parent is None and name == "main":
                # the top-level class (several top-level <default>s, e.g. from includes, add up)
                self.classes.setdefault("main", {"_actuators": []})
                self.class_src.setdefault("main", {})
            else:
                if name is None:
                    raise ImportError_(f"{where(el)}: nested <default> without a class attribute")
                if name in self.classes:
                    raise ImportError_(f"{where(el)}: duplicate default class {name!r}")
                base = parent or "main"
                self.classes[name] = {k: (list(v) if k == "_actuators" else dict(v))
                                      for k, v in self.classes[base].items()}
                self.class_src[name] = {k: dict(v) for k, v in self.class_src[base].items()}
            self.merge_defaults(el, name)
            stack.extend((child, name) for child in reversed(list(el)) if child.tag == "default")

    def merge_defaults(self, el, name):
        """Apply a <default> element's settings (not its sub-classes) to class ``name``."""
        cls = self.classes[name]
        src = self.class_src[name]
        cls.setdefault("_actuators", [])
        for child in el:
            if child.tag == "default":
                continue
            if child.tag not in DEFAULT_TAGS:
                raise ImportError_(f"{where(child)}: unknown element in default class {name!r}; "
                                   f"allowed: {DEFAULT_TAGS}")
            if child.tag in ACTUATOR_TAGS:
                cls["_actuators"].append((child.tag, Attrs(child)))
            else:
                d = cls.setdefault(child.tag, {})
                o = src.setdefault(child.tag, {})
                for key, val in child.attrib.items():
                    if key in PARTIAL and key in d:
                        new, old = val.split(), d[key].split()
                        val = " ".join(new + old[len(new):])
                    d[key] = val
                    o[key] = child


class MJCFImporter:
    """``load(morph: polyphys.morphs.MJCF) -> EntityDescription``."""

    name = "mjcf"

    def load(self, morph) -> EntityDescription:
        ctx = _Ctx(morph)
        root = read_xml(ctx.file, ctx.notes)
        if root.tag != "mujoco":
            raise ImportError_(f"{where(root)}: root element is <{root.tag}>, expected <mujoco>")
        self._expand_includes(ctx, root)
        model = Attrs(root).text("model", os.path.splitext(os.path.basename(ctx.file))[0])
        desc = EntityDescription(name=model, source=ctx.file)
        self.ctx, self.desc = ctx, desc

        ctx.read_compiler(root)
        ctx.classes["main"] = {"_actuators": []}
        ctx.class_src["main"] = {}
        for el in root.findall("default"):
            ctx.read_defaults(el)
        desc.defaults = {name: {("actuators" if k == "_actuators" else k):
                                ([(t, dict(a)) for t, a in v] if k == "_actuators" else v)
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
        self.cameras = []         # camera sensor records (visual.py)
        self.skipped = {}         # link index -> [(error, group, massless)] of skipped visual geoms
        for wb in root.findall("worldbody"):
            self._walk(wb)
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
        nkey = max([Attrs(el).integer("nkey", 0, ge=0, le=MAX_KEYFRAMES)
                    for el in root.findall("size")] + [0])
        while len(desc.keyframes) < nkey:   # <size nkey>: keys at qpos0
            desc.keyframes.append(Keyframe(name="", qpos=desc.qpos0(), qvel=np.zeros(desc.n_dofs),
                                           ctrl=np.zeros(len(desc.actuators))))
        parse_sensors(root, desc, ctx.notes)        # <sensor> -> desc.sensors (sensors.py)
        desc.sensors.extend(self.cameras)           # <camera> -> camera sensors (visual.py)
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
    def _expand_includes(self, ctx, root, base=None, chain=None):
        """Replace every <include> by the included file's children (relative to the including
        file; cycles refused). The tree is walked with an explicit stack (no recursion limit);
        only nested include files recurse."""
        base = ctx.dir if base is None else base
        chain = (ctx.file,) if chain is None else chain
        stack = [root]
        while stack:
            el = stack.pop()
            i = 0
            while i < len(el):
                child = el[i]
                if child.tag != "include":
                    stack.append(child)
                    i += 1
                    continue
                fname = child.get("file")
                if not fname:
                    raise ImportError_(f"{where(child)}: <include> without a file attribute")
                tried = [os.path.join(base, fname), os.path.join(ctx.dir, fname)]
                path = next((p for p in tried if os.path.isfile(p)), None)
                if path is None:
                    raise ImportError_(f"{where(child)}: included file {fname!r} not found (looked "
                                       f"at {sorted(set(os.path.abspath(p) for p in tried))})")
                path = os.path.abspath(path)
                if path in chain:
                    raise ImportError_(f"{where(child)}: include cycle {list(chain) + [path]}")
                sub = read_xml(path, ctx.notes)
                self._expand_includes(ctx, sub, os.path.dirname(path), chain + (path,))
                el.remove(child)
                kids = list(sub) if sub.tag == "mujoco" else [sub]
                for k, node in enumerate(kids):
                    el.insert(i + k, node)
                i += len(kids)

    # -- <option> ---------------------------------------------------------------------------------
    def _options(self, root):
        ctx, opts = self.ctx, {}
        vals, origin = {}, {}
        last = root
        for el in root.findall("option"):
            last = el
            vals.update(el.attrib)
            origin.update({k: el for k in el.attrib})
            for fl in el.findall("flag"):
                vals.update({"flag_" + k: v for k, v in fl.attrib.items()})
                origin.update({"flag_" + k: fl for k in fl.attrib})
        o = Attrs(last, vals, origin)
        opts["dt"] = o.real("timestep", 0.002, gt=0.0)
        opts["gravity"] = tuple(o.reals("gravity", (0.0, 0.0, -9.81), n=3))
        imap = {"Euler": "euler", "implicitfast": "implicitfast", "implicit": "implicitfast",
                "RK4": "euler"}
        integ = o.choice("integrator", "Euler", tuple(imap))
        if integ in ("RK4", "implicit"):
            ctx.notes.append(f"option integrator={integ} is not modelled; suggesting "
                             f"{imap[integ]!r}")
        opts["integrator"] = imap[integ]
        opts["friction_cone"] = o.choice("cone", "pyramidal", ("pyramidal", "elliptic"))
        solver = o.choice("solver", "Newton", ("Newton", "CG", "PGS"))
        if solver == "PGS":
            ctx.notes.append("option solver=PGS is not modelled; suggesting 'Newton'")
        opts["constraint_solver"] = "CG" if solver == "CG" else "Newton"
        opts["iterations"] = o.integer("iterations", 100, ge=0)
        opts["tolerance"] = o.real("tolerance", 1e-8, ge=0.0)
        opts["ls_iterations"] = o.integer("ls_iterations", 50, ge=0)
        opts["ls_tolerance"] = o.real("ls_tolerance", 0.01, ge=0.0)
        opts["noslip_iterations"] = o.integer("noslip_iterations", 0, ge=0)
        opts["noslip_tolerance"] = o.real("noslip_tolerance", 1e-6, ge=0.0)
        opts["impratio"] = o.real("impratio", 1.0, gt=0.0)
        for key in ("density", "viscosity"):
            if o.real(key, 0.0, ge=0.0) != 0.0:
                ctx.notes.append(f"option {key}={o[key]} (fluid forces) is not modelled")
        for key in ("wind",):          # magnetic: the magnetometer sensors' field (sensors.py)
            if key in o and any(v != 0.0 for v in o.reals(key, n=3)):
                ctx.notes.append(f"option {key}={o[key]!r} is not modelled")
        for key in [k for k in o if k.startswith("flag_")]:
            o.choice(key, "enable", ("enable", "disable"))
        if o.get("flag_contact", "enable") == "disable":
            opts["enable_collision"] = False
        if o.get("flag_constraint", "enable") == "disable":
            opts["disable_constraint"] = True
        # MuJoCo 4.0: islands on unless <flag island="disable"/> (mjDSBL_ISLAND); always recorded, so
        # MuJoCo-compatible mode follows the file when RigidOptions.constraint_islands is None
        opts["constraint_islands"] = o.get("flag_island", "enable") != "disable"
        self.desc.options = opts

    # -- <asset> ----------------------------------------------------------------------------------
    def _assets(self, el):
        ctx = self.ctx
        for a in el:
            if a.tag == "mesh":
                cls = a.get("class", "main")
                if cls not in ctx.classes:
                    raise ImportError_(f"{where(a)}: uses default class {cls!r}, which is not "
                                       f"defined; classes: {sorted(ctx.classes)}")
                at = ctx.attrs(a, cls)
                name = at.get("name")
                if not name:
                    if "file" not in at:
                        raise ImportError_(f"{where(a)}: <mesh> without name or file")
                    name = os.path.splitext(os.path.basename(at["file"]))[0]
                if name in ctx.meshes:
                    raise ImportError_(f"{where(a)}: duplicate mesh name {name!r}")
                at.choice("inertia", "legacy", ("legacy", "exact", "convex", "shell"))
                ctx.meshes[name] = at
            elif a.tag == "hfield":
                at = Attrs(a)
                name = at.get("name") or os.path.splitext(os.path.basename(at.get("file", "")))[0]
                ctx.hfields[name] = at
            elif a.tag == "texture":
                read_texture(ctx, Attrs(a))
            elif a.tag == "material":
                read_material(ctx, ctx.attrs(a, "main"))
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
        raise ImportError_(f"{what}: file {fname!r} not found (looked at "
                           f"{[os.path.abspath(p) for p in tried]})")

    def _load_mesh(self, name, what):
        """(vertices, faces, path) of a mesh asset, scaled and posed as MuJoCo's compiler does."""
        ctx = self.ctx
        if name not in ctx.meshes:
            raise ImportError_(f"{what}: uses mesh {name!r}, which is not defined; meshes: "
                               f"{sorted(ctx.meshes)}")
        at = ctx.meshes[name]
        if (name, "data") in ctx.mesh_cache:
            return ctx.mesh_cache[(name, "data")]
        import trimesh

        path = None
        mwhere = at.where()
        if "file" in at:
            path = self._mesh_path(at["file"], f"{at.where('file')} file")
            ext = os.path.splitext(path)[1].lower()
            fwhere = f"{at.where('file')} file = {at['file']!r}"
            if ext == ".msh":
                v, f = _read_msh(path, fwhere)
            else:
                v, f = read_mesh(path, fwhere, need_faces=False)
            if not ctx.morph.file_meshes_are_zup:
                v = np.stack([v[:, 0], -v[:, 2], v[:, 1]], axis=1)
        elif "vertex" in at:
            v = np.asarray(at.reals("vertex"))
            if len(v) == 0 or len(v) % 3:
                raise at.error("vertex", f"{len(v)} numbers: expected a positive multiple of 3")
            v = v.reshape(-1, 3)
            f = None
            if "face" in at:
                fl = at.reals("face")
                if len(fl) % 3 or any(x != int(x) or not 0 <= x < len(v) for x in fl):
                    raise at.error("face", f"expected triangles of vertex indices in [0, {len(v)})")
                f = np.asarray(fl, dtype=np.int64).reshape(-1, 3)
        else:
            raise ImportError_(f"{mwhere}: mesh {name!r} has neither file nor vertex data")
        if "refpos" in at:
            v = v - np.asarray(at.reals("refpos", n=3))
        if "refquat" in at:
            q = np.asarray(at.reals("refquat", n=4))
            if not np.linalg.norm(q) > 1e-12:
                raise at.error("refquat", "a quaternion must have a non-zero length")
            v = v @ quat_to_mat(q / np.linalg.norm(q))
        scale = np.asarray(at.reals("scale", (1.0, 1.0, 1.0), n=3))
        if np.any(scale == 0):
            raise at.error("scale", "a zero scale flattens the mesh; every factor must be non-zero")
        v = v * scale
        if f is not None and np.prod(scale) < 0:
            f = f[:, [0, 2, 1]]     # a mirroring scale flips the faces back outward (as MuJoCo)
        if f is None or len(f) == 0:
            try:
                hull = trimesh.Trimesh(v, process=False).convex_hull
            except Exception as exc:   # qhull refuses flat or too few points
                raise ImportError_(f"{mwhere}: mesh {name!r} has no faces and its {len(v)} vertices "
                                   f"have no convex hull ({type(exc).__name__})") from None
            v, f = np.asarray(hull.vertices), np.asarray(hull.faces)
            if len(f) == 0:
                raise ImportError_(f"{mwhere}: mesh {name!r} has no faces and its {len(v)} "
                                   f"vertices span no volume")
        ctx.mesh_cache[(name, "data")] = (v, f, path)
        return v, f, path

    def _mesh_props(self, name, shell):
        ctx = self.ctx
        at = ctx.meshes[name]
        key = (name, "props_shell" if shell else "props")
        if key not in ctx.mesh_cache:
            v, f, _ = self._load_mesh(name, at.where())
            mode = "shell" if shell else at.get("inertia", "legacy")
            if mode == "convex":
                import trimesh

                hull = trimesh.Trimesh(v, f, process=False).convex_hull
                v, f = np.asarray(hull.vertices), np.asarray(hull.faces)
            with np.errstate(all="ignore"):
                vol, com, inertia = mesh_mass_properties(
                    v, f, shell=(mode == "shell"), mode="legacy" if mode == "legacy" else "exact")
            if not vol > 0 or not np.isfinite(vol):
                raise ImportError_(f"{at.where()}: mesh {name!r}: volume {vol:g} is not positive "
                                   f"(misoriented, open or degenerate triangles)")
            if not (np.all(np.isfinite(com)) and np.all(np.isfinite(inertia))):
                raise ImportError_(f"{at.where()}: mesh {name!r}: its mass properties are not "
                                   f"finite (vertices too large)")
            ctx.mesh_cache[key] = (vol, com, inertia)
        return ctx.mesh_cache[key]

    # -- bodies -----------------------------------------------------------------------------------
    def _uname(self, kind, name, fallback, el):
        if not name:
            return fallback
        if name in self.names[kind]:
            raise ImportError_(f"{where(el)}: duplicate {kind} name {name!r}")
        self.names[kind].add(name)
        return name

    def _walk(self, worldbody):
        """The bodies under <worldbody> in document order, depth first (MuJoCo's body order), with
        an explicit stack: a chain of any depth loads (no recursion limit). A <frame> passes its
        pose and childclass to what it holds."""
        ctx = self.ctx
        stack = [(iter(worldbody), 0, "main", (0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0))]
        while stack:
            it, li, cls, fpos, fquat = stack[-1]
            child = next(it, None)
            if child is None:
                stack.pop()
                continue
            tag = child.tag
            if tag == "body":
                new, ccls = self._body(child, li, cls, fpos, fquat)
                stack.append((iter(child), new, ccls, (0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0)))
            elif tag == "frame":
                fa = Attrs(child)
                pos = fa.reals("pos", (0.0, 0.0, 0.0), n=3)
                q = ctx.orient(fa) or (1.0, 0, 0, 0)
                p2, q2 = compose(fpos, fquat, pos, q)
                fcls = child.get("childclass", cls)
                if fcls not in ctx.classes:
                    raise fa.error("childclass", "this default class is not defined")
                stack.append((iter(child), li, fcls, p2, q2))
            elif tag in ("joint", "freejoint"):
                self._joint(child, li, cls, fpos, fquat)
            elif tag == "geom":
                self._geom(child, li, cls, fpos, fquat)
            elif tag == "site":
                self._site(child, li, cls, fpos, fquat)
            elif tag == "inertial":
                if li == 0:
                    raise ImportError_(f"{where(child)}: <inertial> in the worldbody")
            elif tag == "camera":
                a = ctx.attrs(child, cls)
                cpos, cq = compose(fpos, fquat, a.reals("pos", (0.0, 0.0, 0.0), n=3), ctx.orient(a) or (1.0, 0.0, 0.0, 0.0))
                self.cameras.append(camera_record(ctx, a, li, self.desc.links[li].name, cpos, cq, len(self.cameras)))
            elif tag == "light":
                ctx.unsupported[tag] += 1
            elif tag in ("composite", "flexcomp", "replicate", "plugin", "attach"):
                ctx.unsupported[f"body {tag}"] += 1
            else:
                raise ImportError_(f"{where(child)}: unknown element in a body; allowed body, "
                                   f"frame, joint, freejoint, geom, site, inertial, camera, light")

    def _body(self, el, parent, cls, fpos, fquat):
        """Append the link of a <body>; returns (its index, the class its children use)."""
        ctx, desc = self.ctx, self.desc
        a = Attrs(el)
        li = len(desc.links)
        name = self._uname("link", el.get("name"), f"body{li}", el)
        pos = a.reals("pos", (0.0, 0.0, 0.0), n=3)
        q = ctx.orient(a) or (1.0, 0.0, 0.0, 0.0)
        pos, q = compose(fpos, fquat, pos, q)
        link = Link(name=name, parent=parent, pos=pos, quat=q, gravcomp=a.real("gravcomp", 0.0),
                    src=where(el))
        if a.boolean("mocap", False):
            ctx.unsupported["mocap body (treated as fixed)"] += 1
        desc.links.append(link)
        cls = el.get("childclass", cls)
        if cls not in ctx.classes:
            raise a.error("childclass", "this default class is not defined")
        ine = el.findall("inertial")
        if len(ine) > 1:
            raise ImportError_(f"{where(ine[1])}: a body has at most one <inertial>")
        if ine:
            self.explicit[li] = self._explicit_inertial(ine[0])
        return li, cls

    def _explicit_inertial(self, el):
        ctx = self.ctx
        a = Attrs(el)
        mass = a.real("mass", ge=0.0)
        pos = a.reals("pos", (0.0, 0.0, 0.0), n=3)
        q = ctx.orient(a) or (1.0, 0.0, 0.0, 0.0)
        if "fullinertia" in a and "diaginertia" in a:
            raise a.error("fullinertia", "give diaginertia or fullinertia, not both")
        if "fullinertia" in a:
            xx, yy, zz, xy, xz, yz = a.reals("fullinertia", n=6)
            inertia = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        elif "diaginertia" in a:
            inertia = np.diag(a.reals("diaginertia", n=3))
        else:
            raise ImportError_(f"{where(el)}: <inertial> needs diaginertia or fullinertia")
        r = quat_to_mat(q)
        ine = Inertial(mass=mass, com=pos, inertia=r @ inertia @ r.T)
        try:
            msg = check_inertial(ine, f"{where(el)}", strict_triangle=False)
        except OptionError as exc:
            raise ImportError_(str(exc)) from None
        if msg:
            ctx.notes.append(msg)
        return ine

    def _joint(self, el, li, cls, fpos, fquat):
        ctx, desc = self.ctx, self.desc
        if li == 0:
            raise ImportError_(f"{where(el)}: a joint in the worldbody")
        if el.tag == "freejoint":
            a = Attrs(el, {"type": "free", **el.attrib})
        else:
            a = ctx.attrs(el, cls)
        jt = a.choice("type", "hinge", tuple(JOINT_MAP))
        ji = len(desc.joints)
        name = self._uname("joint", a.get("name"), f"joint{ji}", el)
        typ = JOINT_MAP[jt]
        pos = np.asarray(fpos) + quat_to_mat(fquat) @ np.asarray(a.reals("pos", (0.0, 0.0, 0.0), n=3))
        axis = np.asarray(a.reals("axis", (0.0, 0.0, 1.0), n=3))
        n = np.linalg.norm(axis)
        if not n >= 1e-10 or not np.isfinite(n):
            raise a.error("axis", "the axis must have a non-zero, finite length")
        axis = quat_to_mat(fquat) @ (axis / n)
        ang = typ in ("revolute", "spherical")
        conv = ctx.angle if ang else (lambda v: v)
        rng = tuple(conv(v) for v in a.reals("range", (0.0, 0.0), n=2))
        limited = self._limited(a, "limited", "range", rng)
        j = Joint(name=name, type=typ, link=li, pos=pos, axis=axis, limited=limited, range=rng,
                  ref=conv(a.real("ref", 0.0)) if typ in ("revolute", "prismatic") else 0.0,
                  springref=conv(a.real("springref", 0.0)),
                  stiffness=a.real("stiffness", 0.0, ge=0.0), damping=a.real("damping", 0.0, ge=0.0),
                  armature=a.real("armature", 0.0, ge=0.0),
                  frictionloss=a.real("frictionloss", 0.0, ge=0.0),
                  solref_limit=_pad(a.reals("solreflimit", (), max_n=2), 2, SOLREF),
                  solimp_limit=_pad(a.reals("solimplimit", (), max_n=5), 5, SOLIMP),
                  solref_friction=_pad(a.reals("solreffriction", (), max_n=2), 2, SOLREF),
                  solimp_friction=_pad(a.reals("solimpfriction", (), max_n=5), 5, SOLIMP),
                  margin=a.real("margin", 0.0), src=where(el))
        if typ == "free" and el.tag == "joint":
            j.axis = (0.0, 0.0, 1.0)
        if "springdamper" in a:
            tc, dr = a.reals("springdamper", n=2)
            if tc > 0 and dr > 0:
                self.springdamper[id(j)] = (tc, dr)
            elif tc != 0 or dr != 0:
                raise a.error("springdamper", "timeconst and dampratio must both be > 0 (or both 0: "
                                              "no spring)")
        desc.joints.append(j)
        desc.links[li].joints.append(ji)

    def _limited(self, a: Attrs, key, range_key, rng):
        """MuJoCo's limited=true/false/auto; auto follows compiler autolimits (limited when the
        range is given and non-empty). A limited range must have lower <= upper."""
        val = a.choice(key, "auto", ("true", "false", "auto", "1", "0"))
        if val in ("true", "1"):
            limited = True
        elif val in ("false", "0"):
            limited = False
        elif not self.ctx.flag("autolimits"):
            limited = False
        else:
            limited = rng[0] < rng[1]
            if range_key in a and rng[0] > rng[1]:
                limited = True     # an inverted range given with autolimits: MuJoCo refuses it
        if limited and rng[0] > rng[1]:
            raise a.error(range_key, "lower > upper; a limited range needs lower <= upper")
        return limited

    def _geom(self, el, li, cls, fpos, fquat):
        ctx, desc = self.ctx, self.desc
        a = ctx.attrs(el, cls)
        gi = len(desc.geoms)
        name = self._uname("geom", a.get("name"), f"geom{gi}", el)
        gt = a.choice("type", "sphere", GEOM_TYPES)
        what = where(el)
        size = list(_pad(a.reals("size", (0.0, 0.0, 0.0), max_n=3), 3, (0, 0, 0)))
        pos = np.asarray(a.reals("pos", (0.0, 0.0, 0.0), n=3))
        q = ctx.orient(a) or (1.0, 0.0, 0.0, 0.0)
        contype = a.integer("contype", 1)
        conaff = a.integer("conaffinity", 1)
        group = a.integer("group", 0)
        visual_only = contype == 0 and conaff == 0
        if "fromto" in a and gt in ("capsule", "cylinder", "box", "ellipsoid"):
            ft = np.asarray(a.reals("fromto", n=6))
            vec = ft[:3] - ft[3:]   # MuJoCo orients +z from the 'to' end towards 'from'
            if not np.linalg.norm(vec) >= 1e-10:
                raise a.error("fromto", "the two points are too close (zero length)")
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
        shell = a.boolean("shellinertia", False)
        fitted = False
        if gt == "mesh" or ("mesh" in a and gt != "hfield"):
            if "mesh" not in a:
                raise a.error("mesh", "a mesh geom needs a mesh attribute")
            try:
                v, f, path = self._load_mesh(a["mesh"], what)
                vol, mcom, minert = self._mesh_props(a["mesh"], shell)
            except ImportError_ as exc:
                if not visual_only:
                    raise
                # a visual-only geom never fails the import: skipped with a note (its mass is
                # needed only if the body's inertia comes from it; _inertia checks)
                ctx.notes.append(f"visual-only geom {name!r} skipped: {exc}")
                massless = ("mass" in a and a.real("mass", ge=0.0) == 0.0) or (
                    "mass" not in a and a.real("density", 1000.0, ge=0.0) == 0.0)
                self.skipped.setdefault(li, []).append((exc, group, massless))
                return
            if gt == "mesh":
                mesh = MeshData(vertices=v, faces=f, name=a["mesh"], file=path)
                vol_props = (vol, mcom, minert)
            else:
                # a primitive fitted to the mesh (MuJoCo's equivalent-inertia box, or the AABB)
                pos, q, size = self._fit(gt, v, vol, mcom, minert, pos, q, a)
                fitted = True
        elif gt == "hfield":
            hfield, size = self._hfield(a, what)
        elif gt == "sdf":
            ctx.unsupported["geom type sdf"] += 1
        k = {"sphere": 1, "capsule": 2, "cylinder": 2, "ellipsoid": 3, "box": 3}.get(gt, 0)
        if k and not fitted and min(size[:k]) <= 0:
            raise a.error("size", f"a {gt} needs {k} positive size(s); got {size[:k]} (MuJoCo "
                                  f"refuses a zero or negative size)")
        if gt == "plane" and min(size) < 0:
            raise a.error("size", "plane sizes must be >= 0 (0: infinite)")
        pos, q = compose(fpos, fquat, pos, q)
        friction = _pad(a.reals("friction", (1.0, 0.005, 0.0001), max_n=3, ge=0.0), 3,
                        (1.0, 0.005, 0.0001))
        rgba, texture = geom_look(ctx, a, size)
        g = Geom(name=name, type=gt, link=li, size=tuple(size), pos=pos, quat=q,
                 role="visual" if visual_only else "both",
                 contype=contype, conaffinity=conaff,
                 condim=a.integer("condim", 3, allowed=(1, 3, 4, 6)),
                 friction=friction, solref=_pad(a.reals("solref", (), max_n=2), 2, SOLREF),
                 solimp=_pad(a.reals("solimp", (), max_n=5), 5, SOLIMP),
                 solmix=a.real("solmix", 1.0, ge=0.0), priority=a.integer("priority", 0),
                 margin=a.real("margin", 0.0), gap=a.real("gap", 0.0),
                 group=group, density=a.real("density", 1000.0, ge=0.0),
                 rgba=rgba, texture=texture, mesh=mesh, hfield=hfield, src=what)
        desc.geoms.append(g)
        desc.links[li].geoms.append(gi)
        self.geom_mass.append(self._geom_inertial(g, a, vol_props, shell))

    def _hfield(self, a, what):
        """The hfield dict of an hfield geom (size, and the normalised heights in ``data``)."""
        ctx = self.ctx
        hn = a.get("hfield")
        if hn not in ctx.hfields:
            raise a.error("hfield", f"hfield {hn!r} is not defined; hfields: {sorted(ctx.hfields)}")
        h = ctx.hfields[hn]
        hfield = dict(h)
        hs = h.reals("size", n=4, ge=0.0)
        if min(hs[:3]) <= 0:
            raise h.error("size", "radius x, radius y and elevation z must be > 0 (base >= 0)")
        hfield["size"] = tuple(hs)
        nr, nc = h.integer("nrow", 0, ge=0), h.integer("ncol", 0, ge=0)
        if "elevation" in h:
            if nr * nc == 0:
                raise h.error("elevation", "needs nrow and ncol > 0")
            elev = np.asarray(h.reals("elevation", n=nr * nc))
            # as MuJoCo's hfield_data: normalised to [0, 1] (heights are data × size[2]),
            # row 0 at -y (the XML lists the +y row first)
            span = elev.max() - elev.min()
            hfield["data"] = ((elev - elev.min()) / span if span > 0 else
                              np.zeros_like(elev)).reshape(nr, nc)[::-1].copy()
        elif "file" in h:
            if nr or nc:
                raise h.error("file", "gives both file and nrow/ncol; the file sets the grid "
                                      "(MuJoCo refuses both too)")
            path = self._mesh_path(h["file"], f"{h.where('file')} file")
            raw = _hfield_file(path, h.where())
            hfield["data"] = _hfield_normalise(raw)
        return hfield, hs[:3]

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
        scale = a.real("fitscale", 1.0, gt=0.0)
        size = [s * scale for s in size]
        p2, q2 = compose(pos, q, mpos, mat_to_quat(evec))
        ctx.notes.append(f"geom type {gt} fitted to mesh {a['mesh']!r} (principal axes chosen up "
                         f"to sign)")
        return p2, q2, size

    def _geom_inertial(self, g, a, vol_props, shell):
        """(mass, com, inertia about com) of a geom in the link frame, as MuJoCo computes it.
        Sizes or densities so large that the mass properties overflow are an error."""
        if g.type in ("plane", "hfield", "sdf"):
            return None
        with np.errstate(all="ignore"):
            out = self._geom_inertial_raw(g, a, vol_props, shell)
        if not (abs(out.mass) <= FLOAT32_MAX and np.max(np.abs(out.inertia)) <= FLOAT32_MAX):
            key = "mass" if "mass" in a else ("density" if "density" in a else "size")
            raise a.error(key, f"the geom's mass properties overflow float32 (mass {out.mass:g}, "
                               f"inertia up to {np.max(np.abs(out.inertia)):g}) with size "
                               f"{list(g.size)} and density {g.density:g}")
        return out

    def _geom_inertial_raw(self, g, a, vol_props, shell):
        s = [np.float64(x) for x in g.size]   # numpy scalars overflow to inf, never raise
        if g.type == "mesh":
            vol, mcom, minert = vol_props
            base = (mcom, minert)   # per unit density
        else:
            r = s[0]
            if g.type == "sphere":
                vol = 4.0 / 3.0 * math.pi * r * r * r
                if shell:
                    vol = 4 * math.pi * r * r
                    inert = np.eye(3) * 2.0 / 3.0 * vol * r * r
                else:
                    inert = np.eye(3) * 0.4 * vol * r * r
            elif g.type == "capsule":
                h = 2 * s[1]
                vs = 4.0 / 3.0 * math.pi * r * r * r
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
            mass = a.real("mass", ge=0.0)
            rho = mass / vol if vol > 0 else 0.0
        else:
            rho = g.density
            mass = rho * vol
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
        try:
            minv = np.linalg.inv(M)
        except np.linalg.LinAlgError:
            minv = None
        for j in desc.joints:
            if id(j) in self.springdamper:
                tc, dr = self.springdamper[id(j)]
                if minv is None or not minv[j.dof_start, j.dof_start] > 0:
                    raise ImportError_(f"{j.src}: springdamper on joint {j.name!r} needs the "
                                       f"joint's effective inertia, but the mass matrix at qpos0 "
                                       f"is singular (massless bodies)")
                meff = 1.0 / minv[j.dof_start, j.dof_start]
                j.stiffness = meff / (tc * tc * dr * dr)
                j.damping = 2.0 * meff / tc

    def _inertia(self):
        """Body mass properties as MuJoCo's compiler sets them."""
        ctx, desc = self.ctx, self.desc
        mode = ctx.compiler["inertiafromgeom"]
        glo, ghi = ctx.inertia_groups
        bmass, binert = ctx.boundmass, ctx.boundinertia
        for li, link in enumerate(desc.links):
            if li == 0:
                continue
            explicit = self.explicit.get(li)
            parts = [self.geom_mass[gi] for gi in link.geoms
                     if self.geom_mass[gi] is not None and glo <= desc.geoms[gi].group <= ghi]
            skipped = [exc for exc, grp, massless in self.skipped.get(li, [])
                       if glo <= grp <= ghi and not massless]
            if (mode == "true" and (parts or skipped or explicit is None)) or (mode == "auto"
                                                                               and explicit is None):
                # MuJoCo: "true" keeps an explicit <inertial> when no geom falls in the group range
                if skipped:
                    raise ImportError_(f"{skipped[0]} -- the body's inertia comes from its geoms, "
                                       f"so this mesh is needed (give the body an <inertial>, or "
                                       f"the geom mass=\"0\")")
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
        total_target = ctx.settotalmass
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
        name = self._uname("site", a.get("name"), f"site{len(desc.sites)}", el)
        size = list(_pad(a.reals("size", (0.005, 0.005, 0.005), max_n=3, ge=0.0), 3,
                         (0.005, 0.005, 0.005)))
        pos = a.reals("pos", (0.0, 0.0, 0.0), n=3)
        q = ctx.orient(a) or (1.0, 0.0, 0.0, 0.0)
        st = a.choice("type", "sphere", ("sphere", "capsule", "ellipsoid", "cylinder", "box"))
        if "fromto" in a:
            ft = np.asarray(a.reals("fromto", n=6))
            vec = ft[:3] - ft[3:]
            if not np.linalg.norm(vec) >= 1e-10:
                raise a.error("fromto", "the two points are too close (zero length)")
            pos, q = 0.5 * (ft[:3] + ft[3:]), _z2quat(vec)
            size[1 if st in ("capsule", "cylinder") else 2] = 0.5 * float(np.linalg.norm(vec))
        pos, q = compose(fpos, fquat, pos, q)
        desc.sites.append(Site(name=name, link=li, pos=pos, quat=q, type=st, size=tuple(size),
                               src=where(el)))
        desc.links[li].sites.append(len(desc.sites) - 1)

    # -- contact, equality, tendon, actuator, keyframe ------------------------------------------
    def _link_of(self, a: Attrs, key):
        name = a.get(key)
        if name is None:
            raise a.error(key, "required attribute is missing")
        try:
            return self.desc.link_index(name)
        except KeyError:
            raise a.error(key, "no body has this name") from None

    def _geom_of(self, a: Attrs, key):
        name = a.get(key)
        if name is None:
            raise a.error(key, "required attribute is missing")
        for i, g in enumerate(self.desc.geoms):
            if g.name == name:
                return i
        raise a.error(key, "no geom has this name")

    def _joint_of(self, a: Attrs, key):
        name = a.get(key)
        if name is None:
            raise a.error(key, "required attribute is missing")
        try:
            return self.desc.joint_index(name)
        except KeyError:
            raise a.error(key, "no joint has this name") from None

    def _contact(self, el):
        ctx, desc = self.ctx, self.desc
        for c in el:
            if c.tag == "exclude":
                a = Attrs(c)
                desc.contact_excludes.append((self._link_of(a, "body1"), self._link_of(a, "body2")))
            elif c.tag == "pair":
                a = ctx.attrs(c, "main")
                g1 = self._geom_of(a, "geom1")
                g2 = self._geom_of(a, "geom2")
                # every field, MuJoCo's pair defaults where neither the element nor its class
                # gives one (MuJoCo does not derive a pair's parameters from its geoms; a partial
                # vector keeps the defaults of the entries it omits)
                p = {"geom1": g1, "geom2": g2, "name": a.get("name", "")}
                for key, dflt in PAIR_DEFAULTS.items():
                    if key == "condim":
                        p[key] = a.integer(key, dflt, allowed=(1, 3, 4, 6))
                    elif isinstance(dflt, tuple):
                        vals = a.reals(key, (), max_n=len(dflt),
                                       ge=0.0 if key == "friction" else None)
                        p[key] = _pad(vals, len(dflt), dflt)
                    else:
                        p[key] = a.real(key, dflt)
                desc.contact_pairs.append(p)
            else:
                raise ImportError_(f"{where(c)}: unknown element in <contact>; allowed exclude, "
                                   f"pair")

    def _equality(self, el):
        ctx, desc = self.ctx, self.desc
        for e in el:
            cls = e.get("class", "main")
            if cls not in ctx.classes:
                raise ImportError_(f"{where(e)}: uses default class {cls!r}, which is not defined")
            src = {k: v for k, v in ctx.class_src[cls].get("equality", {}).items()}
            vals = dict(ctx.classes[cls].get("equality", {}))
            vals.update(e.attrib)
            src.update({k: e for k in e.attrib})
            a = Attrs(e, vals, src)
            name = a.get("name", f"eq{len(desc.equalities)}")
            common = dict(name=name, solref=_pad(a.reals("solref", (), max_n=2), 2, SOLREF),
                          solimp=_pad(a.reals("solimp", (), max_n=5), 5, SOLIMP),
                          active=a.boolean("active", True), src=where(e))
            if e.tag in ("connect", "weld") and ("body1" in a):
                b1 = self._link_of(a, "body1")
                b2 = self._link_of(a, "body2") if "body2" in a else -1
                b2 = -1 if b2 == 0 else b2     # the world body is "-1: the world"
                anchor = tuple(a.reals("anchor", (0.0, 0.0, 0.0), n=3))
                eq = Equality(type=e.tag, obj1=b1, obj2=b2, anchor=anchor, **common)
                if e.tag == "weld":
                    rel = a.reals("relpose", (0, 1, 0, 0, 0, 0, 0), n=7)
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
                    eq.torquescale = a.real("torquescale", 1.0, ge=0.0)
                desc.equalities.append(eq)
            elif e.tag == "joint":
                j1 = self._joint_of(a, "joint1")
                j2 = self._joint_of(a, "joint2") if "joint2" in a else -1
                desc.equalities.append(Equality(
                    type="joint", obj1=j1, obj2=j2,
                    polycoef=_pad(a.reals("polycoef", (), max_n=5), 5, (0, 1, 0, 0, 0)),
                    **common))
            elif e.tag in ("connect", "weld", "tendon", "flex"):
                ctx.unsupported[f"equality {e.tag}" + (" (site-based)" if "site1" in a else "")] += 1
            else:
                raise ImportError_(f"{where(e)}: unknown equality; allowed connect, weld, joint, "
                                   f"tendon, flex")

    def _tendon(self, el):
        ctx, desc = self.ctx, self.desc
        for t in el:
            entry = {"name": t.get("name", f"tendon{len(desc.tendons)}"), "type": t.tag,
                     "attrs": dict(t.attrib)}
            if t.tag == "fixed":
                entry["joints"] = []
                for j in t:
                    if j.tag == "joint":
                        ja = Attrs(j)
                        entry["joints"].append((self._joint_of(ja, "joint"), ja.real("coef", 1.0)))
            else:
                entry["path"] = [(c.tag, dict(c.attrib)) for c in t]
            desc.tendons.append(entry)
            ctx.unsupported[f"tendon {t.tag}"] += 1

    def _actuators(self, el):
        ctx, desc = self.ctx, self.desc
        for e in el:
            if e.tag not in ACTUATOR_TAGS:
                raise ImportError_(f"{where(e)}: unknown actuator; allowed {ACTUATOR_TAGS}")
            cls = e.get("class", "main")
            if cls not in ctx.classes:
                raise ImportError_(f"{where(e)}: uses undefined default class {cls!r}")
            st = {"gaintype": "fixed", "gainprm": [1.0] + [0.0] * 9, "biastype": "none",
                  "biasprm": [0.0] * 10, "dyntype": "none", "dynprm": [1.0] + [0.0] * 9,
                  "gear": [1.0, 0, 0, 0, 0, 0], "ctrlrange": [0.0, 0.0],
                  "forcerange": [0.0, 0.0], "ctrllimited": "auto", "forcelimited": "auto"}
            origin = {}   # setting -> the Attrs that last set it (errors name its line)
            for tag, at in ctx.classes[cls]["_actuators"]:
                self._apply_actuator(st, tag, at, origin)
            ea = Attrs(e)
            self._apply_actuator(st, e.tag, ea, origin)
            name = e.get("name", f"actuator{len(desc.actuators)}")
            trn = [k for k in ("joint", "jointinparent", "tendon", "site", "body", "cranksite")
                   if k in e.attrib]
            if len(trn) != 1:
                raise ImportError_(f"{where(e)}: an actuator needs exactly one transmission "
                                   f"(joint/jointinparent/tendon/site/body/cranksite), got {trn}")
            trntype = trn[0]
            target = e.get(trntype)
            jidx = -1
            if trntype in ("joint", "jointinparent"):
                jidx = self._joint_of(ea, trntype)
            else:
                ctx.unsupported[f"actuator transmission {trntype}"] += 1
            if e.tag not in SUPPORTED_ACTUATORS:
                ctx.unsupported[f"actuator {e.tag}"] += 1
            lim = {}
            for key in ("ctrl", "force"):
                rng = st[f"{key}range"]
                la = origin.get(f"{key}limited", ea)
                ra = origin.get(f"{key}range", ea)
                val = st[f"{key}limited"]
                if val not in ("true", "false", "auto", "1", "0"):
                    raise la.error(f"{key}limited", "allowed values are 'true', 'false', 'auto'")
                limited = (val in ("true", "1") or (val == "auto" and ctx.flag("autolimits")
                                                    and rng[0] < rng[1]))
                if val == "auto" and ctx.flag("autolimits") and f"{key}range" in ra \
                        and rng[0] > rng[1]:
                    limited = True
                if limited and rng[0] > rng[1]:
                    raise ra.error(f"{key}range", "lower > upper; a limited range needs lower <= "
                                                  "upper")
                lim[key] = limited
            act = Actuator(name=name, type=e.tag, joint=jidx, target=target,
                           trntype="joint" if trntype == "jointinparent" else trntype,
                           gear=tuple(st["gear"]), ctrllimited=lim["ctrl"],
                           ctrlrange=tuple(st["ctrlrange"]), forcelimited=lim["force"],
                           forcerange=tuple(st["forcerange"]), gainprm=tuple(st["gainprm"]),
                           biasprm=tuple(st["biasprm"]), dyntype=st["dyntype"],
                           gaintype=st["gaintype"], biastype=st["biastype"], src=where(e))
            if st["dyntype"] != "none":
                ctx.unsupported[f"actuator dyntype {st['dyntype']}"] += 1
            desc.actuators.append(act)

    def _apply_actuator(self, st, tag, a: Attrs, origin):
        """MuJoCo's actuator shortcuts applied over the current default state."""
        for key in ("ctrllimited", "forcelimited"):
            if key in a:
                st[key] = a[key]
                origin[key] = a
        for key in ("ctrlrange", "forcerange"):
            if key in a:
                st[key] = a.reals(key, n=2)
                origin[key] = a
        if "gear" in a:
            new = a.reals("gear", max_n=6)
            st["gear"] = new + st["gear"][len(new):]
        if tag == "general":
            st["gaintype"] = a.choice("gaintype", st["gaintype"], ("fixed", "affine", "muscle",
                                                                   "user"))
            st["biastype"] = a.choice("biastype", st["biastype"], ("none", "affine", "muscle",
                                                                   "user"))
            st["dyntype"] = a.choice("dyntype", st["dyntype"], ("none", "integrator", "filter",
                                                                "filterexact", "muscle", "user"))
            for key in ("gainprm", "biasprm", "dynprm"):
                if key in a:
                    vals = a.reals(key, max_n=10)
                    st[key] = vals + st[key][len(vals):]
        elif tag == "motor":
            st.update(gaintype="fixed", biastype="none", dyntype="none")
            st["gainprm"] = [1.0] + [0.0] * 9
            st["biasprm"] = [0.0] * 10
        elif tag == "position":
            kp = a.real("kp", st["gainprm"][0])
            st["gainprm"] = [kp] + [0.0] * 9
            kv = a.real("kv") if "kv" in a else -st["biasprm"][2]
            if "dampratio" in a:
                a.real("dampratio", ge=0.0)
                self.ctx.unsupported["position actuator dampratio"] += 1
            st["biasprm"] = [0.0, -kp, -kv] + [0.0] * 7
            st.update(gaintype="fixed", biastype="affine")
            tc = a.real("timeconst", 0.0, ge=0.0)
            st["dyntype"] = "filterexact" if tc > 0 else "none"
            if tc > 0:
                st["dynprm"] = [tc] + [0.0] * 9
        elif tag == "velocity":
            kv = a.real("kv", st["gainprm"][0])
            st["gainprm"] = [kv] + [0.0] * 9
            st["biasprm"] = [0.0, 0.0, -kv] + [0.0] * 7
            st.update(gaintype="fixed", biastype="affine", dyntype="none")
        # the shortcuts below are recorded with MuJoCo's parameters but not simulated (reported)
        elif tag == "intvelocity":
            kp = a.real("kp", st["gainprm"][0])
            kv = a.real("kv", 0.0)
            st["gainprm"] = [kp] + [0.0] * 9
            st["biasprm"] = [0.0, -kp, -kv] + [0.0] * 7
            st.update(gaintype="fixed", biastype="affine", dyntype="integrator")
        elif tag == "damper":
            kv = a.real("kv", 0.0, ge=0.0)
            st["gainprm"] = [0.0, 0.0, -kv] + [0.0] * 7
            st["biasprm"] = [0.0] * 10
            st.update(gaintype="affine", biastype="none", dyntype="none")
        elif tag == "cylinder":
            area = a.real("area", 1.0, ge=0.0)
            if "diameter" in a:
                area = math.pi / 4 * a.real("diameter", ge=0.0) ** 2
            bias = a.reals("bias", (0.0, 0.0, 0.0), n=3)
            st["gainprm"] = [area] + [0.0] * 9
            st["biasprm"] = list(bias) + [0.0] * 7
            st["dynprm"] = [a.real("timeconst", 1.0, ge=0.0)] + [0.0] * 9
            st.update(gaintype="fixed", biastype="affine", dyntype="filter")
        elif tag == "muscle":
            prm = (a.reals("range", (0.75, 1.05), n=2)
                   + [a.real(k, d) for k, d in (("force", -1.0), ("scale", 200.0), ("lmin", 0.5),
                                                ("lmax", 1.6), ("vmax", 1.5), ("fpmax", 1.3),
                                                ("fvmax", 1.2))])
            st["gainprm"] = prm + [0.0]
            st["biasprm"] = prm + [0.0]
            st["dynprm"] = (a.reals("timeconst", (0.01, 0.04), n=2)
                            + [a.real("tausmooth", 0.0, ge=0.0)] + [0.0] * 7)
            st.update(gaintype="muscle", biastype="muscle", dyntype="muscle")
        elif tag == "adhesion":
            st["gainprm"] = [a.real("gain", st["gainprm"][0], ge=0.0)] + [0.0] * 9
            st["biasprm"] = [0.0] * 10
            st.update(gaintype="fixed", biastype="none", dyntype="none")

    def _keyframes(self, el):
        desc = self.desc
        for k in el:
            if k.tag != "key":
                raise ImportError_(f"{where(k)}: unknown element in <keyframe>; allowed key")
            a = Attrs(k)
            kf = Keyframe(name=a.get("name", f"key{len(desc.keyframes)}"), time=a.real("time", 0.0))
            for key, n in (("qpos", desc.n_qs), ("qvel", desc.n_dofs), ("ctrl", len(desc.actuators))):
                if key in a:
                    vals = np.asarray(a.reals(key))
                    if len(vals) != n:
                        raise a.error(key, f"{len(vals)} values, the model has {n}")
                    setattr(kf, key, vals)
            for key in ("mpos", "mquat", "act"):
                if key in a:
                    self.ctx.unsupported[f"keyframe {key}"] += 1
            desc.keyframes.append(kf)

    # -- morph options and the report -----------------------------------------------------------
    def _apply_morph(self, morph):
        desc = self.desc
        apply_fixed(desc, morph.fixed, roots=[i for i, lk in enumerate(desc.links) if lk.parent == 0])
        apply_scale(desc, morph.scale)
        if morph.scale != 1.0:
            for rec in desc.sensors:
                if rec.kind == "camera":
                    rec.options["offset_pos"] = tuple(float(v) * morph.scale for v in rec.options["offset_pos"])
        apply_geometry_options(desc, morph)
        desc.finalize()

    def _report(self):
        """Notes and what is not modelled go to ``desc.warnings``; the core emits them as one
        PolyphysWarning per load (polyphys.importing)."""
        ctx, desc = self.ctx, self.desc
        items = list(ctx.notes)
        if ctx.unsupported:
            items.append("not modelled by polyphys (kept out of the simulation): " + ", ".join(
                f"{k} x{v}" for k, v in sorted(ctx.unsupported.items())))
        desc.warnings.extend(items)


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
