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
