"""MJCF ``<sensor>`` elements -> polyphys sensor records (docs/sensors.md, "MJCF").

Each supported MuJoCo sensor becomes a ``SensorRecord`` (a polyphys sensor kind and its
``add_sensor`` keywords) in ``EntityDescription.sensors``; the scene adds them with the entity and
lists them in ``entity.sensors`` under the MJCF name (``<type><index>`` when unnamed, index counted
over all sensors of the file as MuJoCo does). ``noise`` becomes the Gaussian noise of the
measurement model; ``cutoff`` its saturation (MuJoCo's: ±cutoff on real outputs, at most cutoff on
the touch sensor, none on quaternion/axis outputs). Sensors and attributes polyphys does not model
are named in the importer's one warning.
"""

from __future__ import annotations

from polyphys.description import SensorRecord
from polyphys.xmlfile import Attrs

_IMU = {"accelerometer": "acc", "gyro": "gyro", "velocimeter": "vel", "magnetometer": "mag"}
_FRAME = {"framepos": "pos", "framequat": "quat", "framexaxis": "xaxis", "frameyaxis": "yaxis",
          "framezaxis": "zaxis", "framelinvel": "linvel", "frameangvel": "angvel", "framelinacc": "linacc",
          "frameangacc": "angacc"}
_SUBTREE = {"subtreecom": "com", "subtreelinvel": "linvel", "subtreeangmom": "angmom"}
_JOINT = {"jointpos": "pos", "jointvel": "vel", "jointactuatorfrc": "actuator_force", "ballangvel": "vel"}
_AXIS_LIKE = ("quat", "xaxis", "yaxis", "zaxis")
_WHY = {
    "camprojection": "not modelled (cameras: docs/cameras.md)",
    "ballquat": "quaternion noise of a ball joint's q is not modelled (use a frame sensor's quat)",
    "tendonpos": "no tendons", "tendonvel": "no tendons", "tendonactuatorfrc": "no tendons",
    "tendonlimitpos": "no tendons", "tendonlimitvel": "no tendons", "tendonlimitfrc": "no tendons",
    "actuatorpos": "actuator length not exposed", "actuatorvel": "actuator velocity not exposed",
    "jointlimitpos": "joint-limit rows not exposed", "jointlimitvel": "joint-limit rows not exposed",
    "jointlimitfrc": "joint-limit rows not exposed", "clock": "use the reading's time tags",
    "user": "user sensors need MuJoCo callbacks", "plugin": "MuJoCo sensor plugins",
}
_IGNORED_ATTRS = ("name", "noise", "cutoff", "user")


def _magnetic(root) -> tuple:
    for el in root.findall("option"):
        if el.get("magnetic"):
            return tuple(Attrs(el).reals("magnetic", n=3))
    return (0.0, -0.5, 0.0)


def parse_sensors(root, desc, notes: list) -> None:
    """Append a SensorRecord to ``desc.sensors`` per supported element of every ``<sensor>`` of
    ``root``; name the rest (and ignored attributes) in one line of ``notes``."""
    unsupported, index = [], 0
    mag = _magnetic(root)
    for block in root.findall("sensor"):
        for el in block:
            tag, a = el.tag, el.attrib
            name = a.get("name") or f"{tag}{index}"
            index += 1
            rec, why = _convert(tag, a, name, mag)
            if rec is None:
                unsupported.append(f"{name} ({tag}: {why})")
                continue
            at = Attrs(el)      # a malformed or negative number is an ImportError_ naming file:line
            noise, cutoff = at.real("noise", 0.0, ge=0.0), at.real("cutoff", 0.0, ge=0.0)
            out = rec.options.get("outputs", ())
            if noise > 0:
                rec.options["noise"] = noise
            if cutoff > 0 and not (set(out) & set(_AXIS_LIKE)):
                rec.options["limits"] = (None, cutoff) if tag == "touch" else (-cutoff, cutoff)
            extra = sorted(k for k, v in a.items() if k not in _IGNORED_ATTRS and k not in rec.source_attrs
                           and not _zero(v))
            if extra:
                unsupported.append(f"{name} ({tag}: attributes {extra} ignored)")
            desc.sensors.append(SensorRecord(name=name, kind=rec.kind, options=rec.options,
                                             source=f"MJCF {tag}"))
    if unsupported:
        notes.append("sensors not modelled by polyphys (left out or simplified): " + ", ".join(unsupported))


def _zero(v: str) -> bool:
    """An attribute left at MuJoCo's zero default (e.g. ``user="0 0"``) is not worth a note."""
    try:
        return all(float(t) == 0.0 for t in v.split())
    except ValueError:
        return False


class _Rec:
    def __init__(self, kind, options, attrs):
        self.kind, self.options, self.source_attrs = kind, options, attrs


def _frame_obj(objtype, objname, output, prefix=""):
    """MuJoCo object (type, name) -> frame keywords, or (None, reason)."""
    if objtype == "site":
        return {f"{prefix}site": objname}, None
    if objtype == "xbody":
        return {f"{prefix}link": objname}, None
    if objtype == "geom":
        return {f"{prefix}geom": objname}, None
    if objtype == "body":
        # MuJoCo's "body" frame is the inertial frame (CoM, principal axes); polyphys keeps link frames
        # and no principal axes: the CoM point is supported, its orientation is not
        if prefix or output in _AXIS_LIKE:
            return None, "the inertial (principal-axes) frame of a body is not modelled; use xbody or a site"
        return {"com": objname}, None
    return None, f"object type {objtype!r} not supported (site, xbody, geom, body)"


def _convert(tag, a, name, mag):
    if tag in _IMU:
        if "site" not in a:
            return None, "needs site="
        opts = {"site": a["site"], "outputs": (_IMU[tag],)}
        if tag == "magnetometer":
            opts["magnetic_field"] = mag
        return _Rec("imu", opts, ("site",)), None
    if tag in ("force", "torque"):
        if "site" not in a:
            return None, "needs site="
        return _Rec("force_torque", {"site": a["site"], "outputs": (tag,)}, ("site",)), None
    if tag == "rangefinder":
        if "site" not in a:
            return None, "needs site= (a rangefinder on a camera is not supported)"
        return _Rec("rangefinder", {"site": a["site"]}, ("site",)), None
    if tag == "touch":
        if "site" not in a:
            return None, "needs site="
        return _Rec("touch", {"site": a["site"]}, ("site",)), None
    if tag in _FRAME:
        out = _FRAME[tag]
        objtype, objname = a.get("objtype"), a.get("objname")
        if objtype is None or objname is None:
            return None, "needs objtype= and objname="
        opts, why = _frame_obj(objtype, objname, out)
        if opts is None:
            return None, why
        if a.get("reftype") or a.get("refname"):
            if not (a.get("reftype") and a.get("refname")):
                return None, "reftype and refname go together"
            if out in ("linacc", "angacc"):
                return None, "no reference frame for accelerations (MuJoCo ignores it too)"
            ref, why = _frame_obj(a["reftype"], a["refname"], out, prefix="ref_")
            if ref is None:
                return None, why
            opts.update(ref)
        opts["outputs"] = (out,)
        return _Rec("frame", opts, ("objtype", "objname", "reftype", "refname")), None
    if tag in _JOINT:
        if "joint" not in a:
            return None, "needs joint="
        return _Rec("joint", {"joints": [a["joint"]], "outputs": (_JOINT[tag],)}, ("joint",)), None
    if tag == "actuatorfrc":
        if "actuator" not in a:
            return None, "needs actuator="
        return _Rec("actuator", {"actuators": [a["actuator"]]}, ("actuator",)), None
    if tag in _SUBTREE:
        if "body" not in a:
            return None, "needs body="
        return _Rec("subtree", {"link": a["body"], "outputs": (_SUBTREE[tag],)}, ("body",)), None
    return None, _WHY.get(tag, "not supported")
