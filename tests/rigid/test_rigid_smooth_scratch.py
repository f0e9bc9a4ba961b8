"""The smooth pass's intermediates one env's block per View (plugins/rigid/model.py ``SMOOTH_SCRATCH_FIELDS``,
``_smooth_scratch``; docs/rigid.md "The smooth pass's intermediates"): the joint anchors and axes, the composite
inertias and the RNE's link accelerations and subtree wrenches are written and read inside each env's smooth pass
and read by no later stage, getter or sensor, so on CPU every env of a View writes them into one block. The step
gives the numbers of one block per env bit for bit: the zoo (every joint type, actuators of every kind, springs,
damping, gravity compensation) over two partitions stepped at once, with controls, link wrenches and the readback
getters."""

import warnings

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

import polyphys  # noqa: E402
from polyphys import morphs  # noqa: E402
from polyphys.errors import PolyphysWarning  # noqa: E402
from polyphys.plugins.rigid import RigidOptions  # noqa: E402
from polyphys.plugins.rigid import model as M  # noqa: E402
from polyphys.plugins.rigid.materials import Rigid  # noqa: E402
from rigid_mjref import ZOO  # noqa: E402

N_ENVS = 5
STEPS = 40


def _scene(path, block: bool):
    M._smooth_scratch = block
    try:
        scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.002, precision="64", cpu_threads=2, graph_capture=True),
                               rigid=RigidOptions(integrator="implicitfast", mujoco_compatible=True))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PolyphysWarning)
            ent = scene.add_entity(morphs.MJCF(file=str(path)), Rigid())
            scene.build(n_envs=N_ENVS)
    finally:
        M._smooth_scratch = True
    return scene, ent


def _run(scene, ent, m):
    rng = np.random.default_rng(5)
    ent.set_dofs_velocity(rng.normal(0.0, 1.0, (N_ENVS, m.nv)))
    s = scene.solver("rigid")
    d = s.data
    f = d.xfrc_force.numpy()
    f[:, :m.nbody - 1] = rng.normal(0.0, 2.0, (N_ENVS, m.nbody - 1, 3))
    d.xfrc_force.assign(f)
    out = []
    for k in range(STEPS):
        if m.nu:
            ent.set_ctrl(rng.uniform(-1.0, 1.0, (N_ENVS, m.nu)))
        scene.step()
        out.append([np.asarray(ent.get_qpos()).tobytes(), np.asarray(ent.get_dofs_velocity()).tobytes(),
                    d.qfrc_bias.numpy().tobytes(), d.mass.numpy().tobytes()])
        if k % 10 == 9:
            r = ent.get_cfrc_int()
            out[-1] += [np.asarray(r["force"]).tobytes(), np.asarray(r["torque"]).tobytes()]
    return out


def test_smooth_intermediates_one_block_per_view_equal_a_block_per_env(tmp_path):
    path = tmp_path / "zoo.xml"
    path.write_text(ZOO)
    m = mujoco.MjModel.from_xml_string(ZOO)
    runs = {}
    for block in (True, False):
        scene, ent = _scene(path, block)
        s = scene.solver("rigid")
        parts = [p.index for p in s.layout.partitions]
        assert len(parts) == 2
        for name in M.SMOOTH_SCRATCH_FIELDS:
            arrs = [getattr(s.views[i].d, name) for i in parts]
            if block:
                # one block per View (the partitions run at once), seen by each of its envs
                assert all(a.strides[0] == 0 for a in arrs), name
                assert len({M.scratch_block(a).ptr for a in arrs}) == len(arrs), name
            else:
                assert all(a.strides[0] > 0 for a in arrs), name
        runs[block] = _run(scene, ent, m)
    a, b = runs[True], runs[False]
    assert len(a) == STEPS and all(len(x) > 4 for x in a[9::10])
    assert all(a[k] == b[k] for k in range(STEPS))
