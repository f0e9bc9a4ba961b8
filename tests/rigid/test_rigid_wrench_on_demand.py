"""The contact + link wrench stage on demand (plugins/rigid/solver.py ``_wrench_sync``, docs/constraint.md
"Contact and link wrenches on demand"): with one substep and no in-step reader a step skips the stage and the first
host read after it (the link wrench getter, kinematics, forward, get_state, reset, checkpoints) computes it from the
solve the step left. Every reading must be bit for bit the one of a scene that runs the stage in every substep."""

import warnings

import numpy as np
import polyphys
import pytest
from polyphys import morphs
from polyphys.errors import PolyphysWarning
from polyphys.plugins.rigid import RigidOptions
from polyphys.plugins.rigid.materials import Rigid


def _scene(substeps: int, always_on: bool, capture: bool = True):
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=substeps, gravity=(0, 0, -9.81), precision="64",
                                                   graph_capture=capture),
                           rigid=RigidOptions())
    a = scene.add_entity(morphs.Box(size=(0.3, 0.2, 0.14), pos=(0.4, -0.3, 0.12), euler=(8, -5, 30)), Rigid(friction=0.7),
                         name="a")
    b = scene.add_entity(morphs.Box(size=(0.16, 0.22, 0.1), pos=(0.43, -0.28, 0.3), euler=(-4, 6, 70)), Rigid(),
                         name="b")
    scene.add_entity(morphs.Plane(), Rigid(), name="ground")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=3)
    s = scene.solver("rigid")
    if always_on:
        s._wrench_on_since = -1          # the stage in every substep (the behaviour before the stage went on demand)
    rng = np.random.default_rng(7)
    for e in (a, b):
        e.set_dofs_velocity(rng.normal(scale=0.4, size=(3, 6)))
    return scene, (a, b), s


def _same(x, y, what):
    if isinstance(x, dict):
        assert x.keys() == y.keys(), what
        for k in x:
            _same(x[k], y[k], f"{what}.{k}")
        return
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=what)


@pytest.mark.parametrize("substeps", [1, 3])
def test_wrench_on_demand_reads_as_always_on(tmp_path, substeps):
    lazy, ents_l, sl = _scene(substeps, False)
    ref, ents_r, sr = _scene(substeps, True)
    assert (sl._wrench_on_since is None) == (substeps == 1)      # several substeps: the stage runs in each

    def steps(k):
        for _ in range(k):
            lazy.step()
            ref.step()

    def wrenches(tag):
        for i, (el, er) in enumerate(zip(ents_l, ents_r)):
            _same(el.get_links_net_contact_wrench(), er.get_links_net_contact_wrench(), f"{tag} wrench {i}")

    steps(4)
    if substeps == 1:
        # the stage did not run in the step: its outputs still hold what we wrote
        sl.data.link_contact_force.fill_(np.nan)
        steps(1)
        assert np.isnan(sl.data.link_contact_force.numpy()).all()
    else:
        steps(1)
    wrenches("getter")
    assert np.abs(sr.data.link_impulse_force.numpy()).max() > 0.01      # contacts carry the boxes
    steps(2)
    _same(ents_l[0].get_contacts(), ents_r[0].get_contacts(), "contacts")
    steps(2)
    _same(ents_l[1].get_pos(), ents_r[1].get_pos(), "pos")            # kinematics first, then the wrench
    wrenches("after kinematics")
    steps(2)
    _same(lazy.get_state(), ref.get_state(), "state")
    wrenches("after get_state")
    steps(2)
    lazy.reset(envs_idx=[1])
    ref.reset(envs_idx=[1])
    wrenches("after reset")
    steps(2)
    wrenches("steps after reset")
    steps(1)
    lazy.save_checkpoint(tmp_path / "l.ckpt")
    ref.save_checkpoint(tmp_path / "r.ckpt")
    steps(3)
    lazy.load_checkpoint(tmp_path / "l.ckpt")
    ref.load_checkpoint(tmp_path / "r.ckpt")
    wrenches("after restore")
    steps(2)
    lazy.forward()
    ref.forward()
    wrenches("after forward")
    steps(2)
    for part in lazy.layout.partitions:        # a RenderView client between steps (cameras on demand)
        sl.sync_links(part)
        sl.sync_links(part)
    for part in ref.layout.partitions:
        sr.sync_links(part)
    wrenches("after sync_links")
    steps(2)
    _same(ents_l[0].get_cfrc_ext(), ents_r[0].get_cfrc_ext(), "cfrc_ext")   # the readback: the stage on from now
    assert sl._wrench_on_since is not None
    steps(3)
    wrenches("readback on")
    _same(ents_l[0].get_qpos(), ents_r[0].get_qpos(), "qpos")
    _same(ents_l[1].get_dofs_velocity(), ents_r[1].get_dofs_velocity(), "qvel")
