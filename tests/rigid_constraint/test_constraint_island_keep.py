"""Island labels kept between substeps (kernels/convex_solve.py ``label_islands``): an env whose rows'
(type, id) and contacts' links equal those of its last relabelling keeps its labels instead of
relabelling. The kept labels must equal a fresh relabelling (garbage-filled outputs, forced "changed"
compare) after every step of a landing-and-resting run, and after each host path that writes the state
or queries it (per-env reset, set_state, checkpoint restore, forward()), which must invalidate the copies:
the tests fill the labels with garbage before such a path, so labels kept across it would show."""

import warnings

import numpy as np
import polyphys
import pytest
from polyphys import morphs
from polyphys.errors import PolyphysWarning
from polyphys.plugins.rigid import RigidOptions, convex_solve
from polyphys.plugins.rigid.materials import Rigid

# three boxes at generic poses, 1 mm into the plane / the box below at build (the third stacked on the first)
BOXES = [dict(size=(0.3, 0.2, 0.25), pos=(0.7, -0.4, 0.124), euler=(0.0, 0.0, 23.0), rho=600.0),
         dict(size=(0.15, 0.35, 0.1), pos=(-1.2, 0.9, 0.049), euler=(0.0, 0.0, 10.0), rho=1500.0),
         dict(size=(0.2, 0.2, 0.2), pos=(0.72, -0.38, 0.349), euler=(0.0, 0.0, -31.0), rho=900.0)]

LABELS = ("nisland", "dof_island", "efc_island", "island_dofadr", "island_dofs", "dof_idof", "island_efcadr",
          "island_efcs")


def _scene(n_envs=2):
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.005, precision="64"), rigid=RigidOptions(constraint_islands=True))
    scene.add_entity(morphs.Plane(), Rigid())
    for b in BOXES:
        scene.add_entity(morphs.Box(size=b["size"], pos=b["pos"], euler=b["euler"]), Rigid(rho=b["rho"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=n_envs)
    return scene, scene.solver("rigid")


def _labels(rs) -> list[dict]:
    """The label outputs of each env, each list cut to its written length."""
    d = rs.data
    a = {k: getattr(d, k).numpy() for k in LABELS}
    nefc = d.nefc.numpy()
    out = []
    for e in range(len(nefc)):
        k, r = int(a["nisland"][e]), int(nefc[e])
        nd = int(a["island_dofadr"][e, k]) if k else 0
        out.append(dict(nisland=k, dof_island=a["dof_island"][e].copy(), dof_idof=a["dof_idof"][e].copy(),
                        efc_island=a["efc_island"][e, :r].copy(), island_efcs=a["island_efcs"][e, :r].copy(),
                        island_dofadr=a["island_dofadr"][e, :k + 1].copy(),
                        island_efcadr=a["island_efcadr"][e, :k + 1].copy(), island_dofs=a["island_dofs"][e, :nd].copy()))
    return out


def _garbage(rs) -> None:
    for k in LABELS:
        getattr(rs.data, k).fill_(-7 if k != "nisland" else 3)


def _fresh(rs) -> list[dict]:
    """Labels of a relabelling forced now: garbage outputs, copies invalidated."""
    _garbage(rs)
    convex_solve.invalidate_labels(rs.data)
    convex_solve.label_islands(rs.views["all"])
    return _labels(rs)


def _assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.keys() == y.keys()
        for k in x:
            np.testing.assert_array_equal(x[k], y[k], err_msg=k)


def test_kept_labels_equal_a_fresh_relabelling_every_step():
    scene, rs = _scene()
    kept = 0
    for _ in range(80):
        scene.step()
        key = rs.data.island_key_nefc.numpy().copy()
        got = _labels(rs)
        assert int(rs.data.nefc.numpy().min()) > 0      # the boxes touch from the start
        _assert_same(got, _fresh(rs))
        kept += int(np.all(key == rs.data.nefc.numpy()))
    assert kept == 80            # no constraint here needs J to be labelled: the copies are always taken
    # unchanged inputs keep the labels: garbage written over them stays through a relabelling
    _garbage(rs)
    convex_solve.label_islands(rs.views["all"])
    assert np.all(rs.data.dof_island.numpy() == -7)
    _fresh(rs)                    # leave no garbage labels behind


def _settle(scene, rs, n=40):
    for _ in range(n):
        scene.step()
    return _labels(rs)


@pytest.mark.parametrize("path", ["reset", "set_state", "checkpoint", "forward"])
def test_state_writes_and_queries_invalidate(path, tmp_path):
    scene, rs = _scene()
    _settle(scene, rs)
    state = rs.get_state()
    ckpt = scene.save_checkpoint(tmp_path / "c") if path == "checkpoint" else None
    _settle(scene, rs, 5)
    _garbage(rs)                  # labels kept across the path would stay garbage
    if path == "reset":
        scene.reset(envs_idx=[1])
    elif path == "set_state":
        rs.set_state(state)
    elif path == "checkpoint":
        scene.load_checkpoint(ckpt)
    else:
        rs.forward()
    key = rs.data.island_key_nefc.numpy()
    if path in ("reset", "set_state"):    # the state write's forward() refreshes, no query: nothing relabelled
        assert np.all(key == -1)
    else:                         # forward() (also the one after a checkpoint's extra state) relabels for its query
        assert np.all(key == rs.data.nefc.numpy())
        _assert_same(_labels(rs), _fresh(rs))
    scene.step()
    got = _labels(rs)
    _assert_same(got, _fresh(rs))


# one kinematic tree (a free torso, two hinged legs with limits, an arm): its labels depend on the row count alone
_TREE_XML = """
<mujoco>
  <worldbody>
    <geom type="plane" size="5 5 0.1"/>
    <body pos="0 0 0.45" euler="0 20 10">
      <freejoint/>
      <geom type="box" size="0.2 0.1 0.05"/>
      <body pos="0.15 0 -0.05">
        <joint type="hinge" axis="0 1 0" range="-40 40" damping="0.3"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.25" size="0.04"/>
        <body pos="0 0 -0.25"><joint type="hinge" axis="0 1 0" range="-10 60"/>
          <geom type="capsule" fromto="0 0 0 0.1 0 -0.2" size="0.035"/></body>
      </body>
      <body pos="-0.15 0 -0.05">
        <joint type="hinge" axis="1 0 0" range="-30 30"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.04"/>
      </body>
      <body pos="0 0.1 0.05">
        <joint type="hinge" axis="0 0 1"/>
        <geom type="capsule" fromto="0 0 0 0 0.3 0" size="0.03"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def _tree_scene(tmp_path, n_envs=2):
    path = tmp_path / "tree.xml"
    path.write_text(_TREE_XML.strip())
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.005, precision="64", graph_capture=False),
                           rigid=RigidOptions(constraint_islands=True))
    ent = scene.add_entity(morphs.MJCF(file=str(path)), Rigid())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=n_envs)
    qvel = np.zeros((n_envs, ent.n_dofs))
    qvel[:, 6:9] = (2.0, -1.5, 1.0)
    qvel[1:, 3:6] = (0.5, -0.8, 0.3)
    ent.set_dofs_velocity(qvel)
    return scene, scene.solver("rigid")


def test_one_tree_keeps_labels_by_row_count(tmp_path):
    """A model of one kinematic tree compares only the row count with its last relabelling's (Round 17): the kept
    labels equal a fresh relabelling by the general code (keys invalidated, garbage outputs; and with mode bit 16,
    the code before the round) after each step of a landing in which the row count and the rows' (type, id) change;
    with an unchanged count the labels are kept (garbage stays), with another count they are relabelled."""
    scene, rs = _tree_scene(tmp_path)
    d, v = rs.data, rs.views["all"]
    assert int((rs.model.dof_parent.numpy() < 0).sum()) == 1
    counts, kept, types = set(), 0, set()
    for _ in range(100):
        key = d.island_key_nefc.numpy().copy()
        scene.step()
        nefc = d.nefc.numpy().copy()
        counts.update(int(x) for x in nefc)
        types.add(d.efc_type.numpy()[0, :nefc[0]].tobytes())
        kept += int(np.sum(key == nefc))
        got = _labels(rs)
        assert np.all(d.island_key_nefc.numpy() == nefc)        # the count is the whole key, always taken
        _assert_same(got, _fresh(rs))
        _garbage(rs)
        convex_solve.invalidate_labels(d)
        convex_solve.label_islands(v, 2 | 16)
        _assert_same(got, _labels(rs))
    assert len(counts) > 3 and len(types) > 3 and 0 < kept < 200 and 0 in counts
    # an unchanged count keeps the labels (garbage written over them stays), another count relabels
    _fresh(rs)
    _garbage(rs)
    convex_solve.label_islands(v)
    assert np.all(d.dof_island.numpy() == -7)
    ref = _fresh(rs)
    _garbage(rs)
    d.island_key_nefc.assign(d.nefc.numpy() + 1)
    convex_solve.label_islands(v)
    _assert_same(_labels(rs), ref)
