"""Helpers for comparing the rigid solver with MuJoCo: an EntityDescription built directly from a
compiled ``mujoco.MjModel`` (bodies, joints, inertia, actuators), so the comparison does not depend on
the MJCF importer, and a scene built from it."""

from __future__ import annotations

import os

import numpy as np
from polyphys.description import Actuator, EntityDescription, Inertial, Joint, Link

_JTYPE = {0: "free", 1: "spherical", 2: "prismatic", 3: "revolute"}


def quat_to_mat(q):
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def desc_from_mjmodel(m) -> EntityDescription:
    import mujoco

    links, joints, acts = [], [], []
    for b in range(1, m.nbody):
        r = quat_to_mat(m.body_iquat[b])
        inertia = r @ np.diag(m.body_inertia[b]) @ r.T
        link = Link(name=mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b) or f"body{b}",
                    parent=int(m.body_parentid[b]) - 1, pos=m.body_pos[b], quat=m.body_quat[b],
                    inertial=Inertial(mass=float(m.body_mass[b]), com=m.body_ipos[b], inertia=inertia),
                    gravcomp=float(m.body_gravcomp[b]))
        for j in range(m.body_jntadr[b], m.body_jntadr[b] + m.body_jntnum[b]):
            t = _JTYPE[int(m.jnt_type[j])]
            d = m.jnt_dofadr[j]
            q = m.jnt_qposadr[j]
            joints.append(Joint(name=mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j) or f"joint{j}",
                                type=t, link=b - 1, pos=m.jnt_pos[j], axis=m.jnt_axis[j],
                                ref=float(m.qpos0[q]) if t in ("revolute", "prismatic") else 0.0,
                                springref=float(m.qpos_spring[q]) if t in ("revolute", "prismatic") else 0.0,
                                stiffness=float(m.jnt_stiffness[j]), damping=float(m.dof_damping[d]),
                                armature=float(m.dof_armature[d])))
            link.joints.append(len(joints) - 1)
        links.append(link)
    names = {j.name: i for i, j in enumerate(joints)}
    for a in range(m.nu):
        jn = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, m.actuator_trnid[a, 0])
        acts.append(Actuator(name=mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_ACTUATOR, a) or f"act{a}",
                             joint=names[jn], target=jn, gear=tuple(m.actuator_gear[a]),
                             ctrllimited=bool(m.actuator_ctrllimited[a]),
                             ctrlrange=tuple(m.actuator_ctrlrange[a]),
                             forcelimited=bool(m.actuator_forcelimited[a]),
                             forcerange=tuple(m.actuator_forcerange[a]),
                             gainprm=tuple(m.actuator_gainprm[a]), biasprm=tuple(m.actuator_biasprm[a]),
                             gaintype=("fixed", "affine")[int(m.actuator_gaintype[a])],
                             biastype=("none", "affine")[int(m.actuator_biastype[a])]))
    return EntityDescription(name="mj", links=links, joints=joints, actuators=acts).finalize()


def no_constraint_model(xml: str, integrator: int | None = None):
    """Compile ``xml`` with constraints, contacts and fluid forces off (what polyphys models here)."""
    import mujoco

    m = mujoco.MjModel.from_xml_string(xml) if xml.lstrip().startswith("<") else \
        mujoco.MjModel.from_xml_path(xml)
    m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    m.opt.density = 0.0
    m.opt.viscosity = 0.0
    m.opt.wind[:] = 0.0
    if integrator is not None:
        m.opt.integrator = integrator
    return m


def make_scene(m, integrator="Euler", n_envs=0, precision="64", mjcf_file=None):
    """A polyphys scene of model ``m``: from ``desc_from_mjmodel(m)``, or through the MJCF importer
    when ``mjcf_file`` is given (the same model as a file)."""
    import mujoco
    import polyphys
    from polyphys import morphs
    from polyphys.plugins.rigid.materials import Rigid
    from polyphys.plugins.rigid.options import RigidOptions

    gravity = tuple(m.opt.gravity)
    if m.opt.disableflags & int(mujoco.mjtDisableBit.mjDSBL_GRAVITY):
        gravity = (0.0, 0.0, 0.0)
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=float(m.opt.timestep), precision=precision,
                                                   gravity=gravity, graph_capture=False),
                           rigid=RigidOptions(integrator=integrator, mujoco_compatible=True,
                                              enable_collision=False, disable_constraint=True))
    morph = (morphs.MJCF(file=mjcf_file) if mjcf_file is not None
             else morphs.Description(description=desc_from_mjmodel(m)))
    ent = scene.add_entity(morph, Rigid())
    scene.build(n_envs=n_envs)
    return scene, ent


def gym_asset(name: str) -> str | None:
    """Path of a gymnasium MuJoCo asset if the files are installed (no import needed)."""
    import importlib.util
    import site

    roots = list(site.getsitepackages())
    spec = importlib.util.find_spec("mujoco")
    if spec and spec.origin:
        roots.append(os.path.dirname(os.path.dirname(spec.origin)))
    for r in roots:
        p = os.path.join(r, "gymnasium", "envs", "mujoco", "assets", name)
        if os.path.exists(p):
            return p
    return None


def dm_asset(rel: str) -> str | None:
    import importlib.util

    spec = importlib.util.find_spec("mujoco")
    if not (spec and spec.origin):
        return None
    p = os.path.join(os.path.dirname(os.path.dirname(spec.origin)), "dm_control", rel)
    return p if os.path.exists(p) else None


# every joint type, several joints on one body, damping, armature, stiffness, gravcomp, all
# actuator shortcuts with gear/ctrlrange/forcerange
ZOO = """
<mujoco>
  <option timestep="0.002" gravity="0.3 -0.2 -9.81"/>
  <worldbody>
    <body name="base" pos="0.1 0.2 1.0" euler="10 20 30">
      <freejoint name="root"/>
      <inertial pos="0.01 -0.02 0.03" mass="2.0" fullinertia="0.05 0.04 0.03 0.001 -0.002 0.003"/>
      <body name="a" pos="0.2 0 0" quat="0.9 0.1 0.3 0.2">
        <joint name="hinge_a" type="hinge" axis="0.2 1 0.3" pos="-0.05 0 0" damping="0.3" armature="0.02"
               stiffness="2.0" springref="0.3" ref="0.1"/>
        <inertial pos="0.1 0.01 0" mass="0.7" diaginertia="0.01 0.02 0.015"/>
        <body name="b" pos="0.2 0.05 0">
          <joint name="ball_b" type="ball" pos="0 0.01 0" damping="0.1" armature="0.01"/>
          <inertial pos="0.05 0 0.02" quat="0.8 0.2 0.1 0.3" mass="0.4" diaginertia="0.004 0.005 0.006"/>
          <body name="c" pos="0.1 0 0" gravcomp="0.5">
            <joint name="slide_c" type="slide" axis="1 0.5 0" damping="1.0" stiffness="5"/>
            <joint name="hinge_c" type="hinge" axis="0 0 1" pos="0.02 0 0" damping="0.05"/>
            <inertial pos="0.03 0 0" mass="0.3" diaginertia="0.002 0.003 0.001"/>
          </body>
        </body>
      </body>
      <body name="d" pos="-0.2 0 0">
        <joint name="hinge_d" type="hinge" axis="1 0 0" armature="0.05"/>
        <inertial pos="0 0 -0.1" mass="0.5" diaginertia="0.003 0.003 0.001"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor joint="hinge_a" gear="2.0" ctrllimited="true" ctrlrange="-1 1"/>
    <position joint="hinge_d" kp="20" kv="1.5" forcelimited="true" forcerange="-3 3"/>
    <velocity joint="slide_c" kv="4"/>
    <general joint="hinge_c" gaintype="affine" gainprm="1.5 0.2 -0.3" biastype="affine"
             biasprm="0.1 -0.5 -0.2" gear="1.5"/>
  </actuator>
</mujoco>
"""

# childless free bodies (the LDL factor's fixed-offset path: a root chain of 6 dofs whose subtree is
# itself), between a free body with a child and a hinge on the world, at generic poses and inertias
FREE_BODIES = """
<mujoco>
  <option timestep="0.002" gravity="0.2 0.1 -9.81"/>
  <worldbody>
    <body name="arm" pos="-0.4 0.1 0.9">
      <joint name="shoulder" type="hinge" axis="0.3 1 0.1" damping="0.2"/>
      <inertial pos="0.1 0 0" mass="0.8" diaginertia="0.01 0.02 0.015"/>
    </body>
    <body name="box1" pos="0.3 -0.2 0.5" euler="15 -25 40">
      <freejoint/>
      <inertial pos="0.02 0.01 -0.03" mass="1.3" fullinertia="0.02 0.03 0.025 0.002 -0.001 0.003"/>
    </body>
    <body name="carrier" pos="0.0 0.5 0.7" euler="-10 5 70">
      <freejoint/>
      <inertial pos="0 0 0" mass="2.1" diaginertia="0.05 0.04 0.03"/>
      <body name="flap" pos="0.15 0 0">
        <joint name="flap" type="hinge" axis="0 0.6 0.8" armature="0.01"/>
        <inertial pos="0.05 0 0" mass="0.3" diaginertia="0.002 0.003 0.001"/>
      </body>
    </body>
    <body name="box2" pos="-0.6 -0.7 1.3" quat="0.7 0.2 -0.4 0.5">
      <freejoint/>
      <inertial pos="-0.01 0.04 0.0" mass="0.45" fullinertia="0.004 0.006 0.005 -0.0005 0.0007 0.0002"/>
    </body>
  </worldbody>
</mujoco>
"""

PENDULUM = """
<mujoco>
  <option timestep="0.001" gravity="0 0 -9.81"/>
  <worldbody>
    <body name="bob" pos="0 0 0">
      <joint name="pin" type="hinge" axis="0 1 0"/>
      <inertial pos="0 0 -1" mass="1" diaginertia="1e-12 1e-12 1e-12"/>
    </body>
  </worldbody>
</mujoco>
"""


# a URDF arm (revolute with damping, prismatic, continuous; rotated inertial frames): MuJoCo reads
# URDF too, so the URDF importer + solver are compared with MuJoCo's own URDF compiler
URDF_ARM = """<robot name="arm">
  <link name="base">
    <inertial>
      <origin xyz="0 0 0.05"/><mass value="2.0"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.02"/>
    </inertial>
  </link>
  <link name="upper">
    <inertial>
      <origin xyz="0 0 0.2" rpy="0.1 0.2 0.3"/><mass value="1.0"/>
      <inertia ixx="0.02" ixy="0.001" ixz="0" iyy="0.021" iyz="0" izz="0.004"/>
    </inertial>
  </link>
  <link name="slider">
    <inertial>
      <origin xyz="0.05 0 0"/><mass value="0.5"/><inertia ixx="0.001" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.002"/>
    </inertial>
  </link>
  <link name="tip">
    <inertial>
      <origin xyz="0 0.02 0"/><mass value="0.2"/><inertia ixx="0.0005" ixy="0" ixz="0" iyy="0.0005" iyz="0" izz="0.0005"/>
    </inertial>
  </link>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="upper"/><origin xyz="0 0 0.1" rpy="0 0 0.5"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="10" velocity="5"/><dynamics damping="0.1"/>
  </joint>
  <joint name="slide" type="prismatic">
    <parent link="upper"/><child link="slider"/><origin xyz="0 0 0.4"/><axis xyz="1 0 0"/>
    <limit lower="-0.2" upper="0.2" effort="10" velocity="1"/>
  </joint>
  <joint name="wrist" type="continuous">
    <parent link="slider"/><child link="tip"/><origin xyz="0.1 0 0" rpy="0.3 0 0"/><axis xyz="0 0 1"/>
  </joint>
</robot>
"""
