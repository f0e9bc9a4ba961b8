"""MuJoCo references for the sensor tests: model files from installed packages (gymnasium,
dm_control) with sites and <sensor> elements added by the tests, states from MuJoCo trajectories,
and the comparison of polyphys readings with MuJoCo's ``sensordata``.

Which state: MuJoCo evaluates sensors inside ``mj_step`` after the constraint solve and before the
integration, i.e. at the state the step starts from; polyphys evaluates them at the state its last
substep starts from (docs/sensors.md). With substeps = 1 both describe the state set before the
step, so the comparison sets a state, runs ``mj_forward`` in MuJoCo (what ``mj_step`` evaluates
sensors on) and one ``scene.step()`` in polyphys, and compares ``sensordata`` with ``read()``.
"""

from __future__ import annotations

import os
import warnings
import xml.etree.ElementTree as ET

import numpy as np

# a generic pose per added site: off-centre, rotated, non-unit zone sizes
SITE_POS = ((0.013, -0.021, 0.017), (-0.02, 0.011, -0.013), (0.007, 0.019, -0.023))
SITE_EULER = ((17, -31, 43), (-23, 11, 71), (37, 29, -13))


def asset(kind: str, rel: str) -> str | None:
    import importlib.util

    spec = importlib.util.find_spec("mujoco")
    if not (spec and spec.origin):
        return None
    root = os.path.dirname(os.path.dirname(spec.origin))
    p = (os.path.join(root, "gymnasium", "envs", "mujoco", "assets", rel) if kind == "gym"
         else os.path.join(root, "dm_control", rel))
    return p if os.path.exists(p) else None


def _expanded(path: str):
    """The model's XML tree with <include> files inlined and asset file paths made absolute (the
    instrumented copy is written elsewhere)."""
    base = os.path.dirname(os.path.abspath(path))
    root = ET.parse(path).getroot()
    comp = root.find("compiler")
    dirs = {k: os.path.join(base, comp.get(k)) for k in ("meshdir", "texturedir", "assetdir")
            if comp is not None and comp.get(k)}

    def inline(el, here):
        for i, child in enumerate(list(el)):
            if child.tag == "include":
                sub = ET.parse(os.path.join(here, child.get("file"))).getroot()
                el.remove(child)
                for j, grand in enumerate(list(sub)):
                    el.insert(i + j, grand)
                inline(el, here)
                return
            inline(child, here)

    inline(root, base)
    for el in root.iter():
        f = el.get("file")
        if f and not os.path.isabs(f):
            d = dirs.get("meshdir" if el.tag in ("mesh", "skin") else "texturedir", dirs.get("assetdir", base))
            el.set("file", os.path.join(d, f))
    if comp is not None:
        for k in ("meshdir", "texturedir", "assetdir"):
            comp.attrib.pop(k, None)
    return root


def instrument(path: str, n_bodies: int = 4, tight: bool = True) -> tuple[str, list]:
    """The model file with tendons removed (polyphys does not simulate them), Euler/Newton, elliptic
    cones and a tight tolerance (both engines then solve to round-off), sites on the first
    ``n_bodies`` named bodies that have joints and a <sensor> block of every supported type
    (tolerance 1e-16: both solvers iterate to round-off, the solutions agree to ~1e-12).
    Returns (xml text, sensor names in order)."""
    root = _expanded(path)
    for tag in ("tendon", "sensor", "keyframe"):
        for el in root.findall(tag):
            root.remove(el)
    for block in root.findall("actuator") + root.findall("equality"):   # tendon ones go with the tendons
        for a in list(block):
            if a.get("tendon") is not None or a.get("tendon1") is not None:
                block.remove(a)
    opt = root.find("option")
    if opt is None:
        opt = ET.SubElement(root, "option")
    for k in list(opt.attrib):
        if k in ("integrator", "solver", "iterations", "tolerance", "ls_iterations", "noslip_iterations"):
            del opt.attrib[k]
    opt.set("integrator", "Euler")
    opt.set("solver", "Newton")
    opt.set("density", "0")            # no fluid forces (polyphys does not model them)
    opt.set("viscosity", "0")
    # elliptic cones: the friction cone does not depend on the contact frame's tangents (MuJoCo and
    # polyphys choose different tangents for some geom pairs; a pyramid would then differ)
    opt.set("cone", "elliptic")
    if tight:
        opt.set("tolerance", "1e-16")
        opt.set("iterations", "400")
        opt.set("ls_iterations", "100")
    bodies = [b for b in root.iter("body") if b.get("name") and (b.find("joint") is not None
                                                                 or b.find("freejoint") is not None)]
    sens = ET.SubElement(root, "sensor")
    names = []

    def add(tag, **attrs):
        name = f"s{len(names)}_{tag}"
        ET.SubElement(sens, tag, name=name, **attrs)
        names.append(name)

    sites = []
    for i, b in enumerate(bodies[:n_bodies]):
        sname = f"site_{b.get('name') or i}"
        ET.SubElement(b, "site", name=sname, pos=" ".join(map(str, SITE_POS[i % 3])),
                      euler=" ".join(map(str, SITE_EULER[i % 3])), type="box", size="0.3 0.2 0.25")
        sites.append((sname, b.get("name")))
    comp = root.find("compiler")
    if comp is not None and comp.get("angle") == "radian":       # euler above are degrees
        for b in bodies[:n_bodies]:
            for s in b.findall("site"):
                s.set("euler", " ".join(str(np.deg2rad(float(x))) for x in s.get("euler").split()))
    for k, (s, body) in enumerate(sites):
        for tag in ("accelerometer", "gyro", "velocimeter", "magnetometer", "force", "torque", "touch"):
            add(tag, site=s)
        add("framepos", objtype="site", objname=s, reftype="site", refname=sites[k - 1][0])
        add("framequat", objtype="site", objname=s)
        add("framezaxis", objtype="xbody", objname=body, reftype="site", refname=sites[k - 1][0])
        add("framelinvel", objtype="site", objname=s, reftype="xbody", refname=sites[k - 1][1])
        add("frameangvel", objtype="body", objname=body)
        add("framelinacc", objtype="site", objname=s)
        add("frameangacc", objtype="xbody", objname=body)
        add("subtreecom", body=body)
        add("subtreelinvel", body=body)
        add("subtreeangmom", body=body)
    for j in root.iter("joint"):
        if j.get("type", "hinge") in ("hinge", "slide") and j.get("name"):
            add("jointpos", joint=j.get("name"))
            add("jointvel", joint=j.get("name"))
            add("jointactuatorfrc", joint=j.get("name"))
    for act in root.findall("actuator"):
        for a in act:
            if a.get("name"):
                add("actuatorfrc", actuator=a.get("name"))
    return ET.tostring(root, encoding="unicode"), names


def trajectory_states(m, n: int, steps: int, seed: int = 0):
    """``n`` states of MuJoCo's own trajectory under random controls (qpos, qvel, ctrl), spread over
    ``steps`` steps from the initial state."""
    import mujoco

    d = mujoco.MjData(m)
    rng = np.random.default_rng(seed)
    at = set(np.linspace(steps // n, steps, n).astype(int).tolist())
    out = []
    lo, hi = (m.actuator_ctrlrange[:, 0], m.actuator_ctrlrange[:, 1]) if m.nu else (None, None)
    for k in range(1, steps + 1):
        if m.nu:
            d.ctrl[:] = rng.uniform(np.where(m.actuator_ctrllimited, lo, -1), np.where(m.actuator_ctrllimited, hi, 1))
        mujoco.mj_step(m, d)
        if k in at:
            out.append((d.qpos.copy(), d.qvel.copy(), d.ctrl.copy()))
    return out


def compare(xml: str, names: list, states: list, tmp_path, precision="64", xfrc=None) -> dict:
    """Error per sensor name over the states — |polyphys − MuJoCo|∞ / scale with scale = max(|MuJoCo|∞,
    1 in the sensor's unit, and for force/torque sensors the model's weight M·|g| in N (N·m)): a
    force on a free body is zero up to the constraint solver's residual, which only the model's own
    force scale measures. Each state is one env of one batched scene (one polyphys step).
    ``xfrc``: optional (n_states, nbody, 6) MuJoCo xfrc_applied, applied in both."""
    import mujoco
    import polyphys
    from polyphys import morphs
    from polyphys.materials import Rigid
    from polyphys.plugins.rigid.options import RigidOptions

    path = os.path.join(str(tmp_path), "model.xml")
    with open(path, "w") as fh:
        fh.write(xml)
    m = mujoco.MjModel.from_xml_path(path)
    d = mujoco.MjData(m)
    gravity = (0.0, 0.0, 0.0) if m.opt.disableflags & int(mujoco.mjtDisableBit.mjDSBL_GRAVITY) else tuple(m.opt.gravity)
    cone = "elliptic" if m.opt.cone == int(mujoco.mjtCone.mjCONE_ELLIPTIC) else "pyramidal"
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=float(m.opt.timestep), substeps=1, precision=precision,
                                                   gravity=gravity),
                           rigid=RigidOptions.mujoco(integrator="Euler", friction_cone=cone))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ent = scene.add_entity(morphs.MJCF(file=path), Rigid())
        scene.build(n_envs=len(states))
    ent.set_qpos(np.array([s[0] for s in states]))
    ent.set_dofs_velocity(np.array([s[1] for s in states]))
    if m.nu:
        ent.set_ctrl(np.array([s[2] for s in states]))
    if xfrc is not None:        # MuJoCo body b is the importer's link b (link 0: the world body)
        links = np.arange(1, m.nbody)
        ent.apply_links_external_force(xfrc[:, 1:, :3], links_idx_local=links)
        ent.apply_links_external_torque(xfrc[:, 1:, 3:], links_idx_local=links)
    scene.step()
    weight = float(np.sum(m.body_mass) * max(np.linalg.norm(gravity), 1.0))
    errs = {}
    for k, (q, v, u) in enumerate(states):
        d.qpos[:], d.qvel[:] = q, v
        if m.nu:
            d.ctrl[:] = u
        if xfrc is not None:
            d.xfrc_applied[:] = xfrc[k]
        mujoco.mj_forward(m, d)
        for sid, name in enumerate(names):        # names in MuJoCo's sensor order
            ref = d.sensordata[m.sensor_adr[sid]:m.sensor_adr[sid] + m.sensor_dim[sid]]
            got = ent.sensors[name].read().value[k]
            floor = weight if m.sensor_type[sid] in (int(mujoco.mjtSensor.mjSENS_FORCE),
                                                     int(mujoco.mjtSensor.mjSENS_TORQUE)) else 1.0
            e = np.abs(got - ref).max() / max(np.abs(ref).max(), floor)
            errs[name] = max(errs.get(name, 0.0), float(e))
    return errs
