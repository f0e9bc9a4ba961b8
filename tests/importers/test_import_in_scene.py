"""An imported MJCF model placed in a scene: forward kinematics of the description (kinematic
solver, float64) puts every body where MuJoCo's mj_forward puts it, for a random configuration."""

import os
import warnings

import numpy as np
import polyphys
import pytest
from polyphys import morphs

mujoco = pytest.importorskip("mujoco")
gymnasium = pytest.importorskip("gymnasium")


def test_imported_ant_fk_matches_mujoco():
    path = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", "ant.xml")
    model = mujoco.MjModel.from_xml_path(path)
    data = mujoco.MjData(model)
    rng = np.random.default_rng(0)
    qpos = model.qpos0.copy()
    qpos[:3] = (0.1, -0.2, 0.7)
    quat = rng.normal(size=4)
    qpos[3:7] = quat / np.linalg.norm(quat)
    qpos[7:] += rng.uniform(-0.5, 0.5, size=model.nq - 7)
    data.qpos[:] = qpos
    mujoco.mj_forward(model, data)

    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, precision="64"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ent = scene.add_entity(morph=morphs.MJCF(file=path),
                               material=polyphys.materials.Kinematic())
    scene.build(n_envs=0)
    ent.set_qpos(qpos)
    scene.step()   # zero velocity: the step refreshes FK and keeps q
    np.testing.assert_allclose(ent.get_qpos(), qpos, atol=1e-12)
    # float64 FK along a 4-link chain: round-off ~1e-15; 1e-9 leaves room for the solver's own
    # quaternion normalisation
    np.testing.assert_allclose(ent.get_links_pos(), data.xpos, atol=1e-9)
    q = ent.get_links_quat()
    dots = np.abs(np.sum(q * data.xquat, axis=1))
    np.testing.assert_allclose(dots, 1.0, atol=1e-9)
