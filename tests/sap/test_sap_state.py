"""SAP coupler state: n_envs = N equals N single runs, per-env reset, checkpoint continuation
(bit-exact on CPU; the warm start is part of the coupler's state)."""

import numpy as np
from sapscenes import plane_and_box, sap

KICKS = np.array([[0.8, -0.3, -0.6, 1.5, -2.0, 3.0], [0.0, 0.0, -0.4, 0.0, 0.0, 0.0], [-0.5, 0.7, 0.0, 0.3, 0.2, -1.0]])


def _run(n_envs, steps, kick_rows, scene_box=None):
    scene, box, _ = scene_box or plane_and_box(incline=20.0, mu=0.5, lift=0.0005, n_envs=n_envs)
    box.set_dofs_velocity(KICKS[kick_rows] if n_envs else KICKS[kick_rows[0]])
    traj = []
    for _ in range(steps):
        scene.step()
        traj.append(np.concatenate([np.atleast_2d(box.get_pos()), np.atleast_2d(box.get_quat())], axis=1))
    return scene, box, np.stack(traj, axis=1)


def test_batch_equals_single_runs():
    _, _, batch = _run(3, 15, [0, 1, 2])
    for e in range(3):
        _, _, single = _run(0, 15, [e])
        np.testing.assert_array_equal(batch[e], single[0])


def test_reset_env_is_isolated_and_clears_the_warm_start():
    scene, box, _ = _run(3, 8, [0, 1, 2])
    ref_scene, ref_box, _ = _run(3, 8, [0, 1, 2])
    c = sap(scene)
    assert c._rigid["rigid"].warm_ok.numpy().tolist() == [1, 1, 1]
    scene.reset(envs_idx=[1])
    assert c._rigid["rigid"].warm_ok.numpy().tolist() == [1, 0, 1]
    for _ in range(6):
        scene.step()
        ref_scene.step()
    a = np.concatenate([box.get_pos(), box.get_quat()], axis=1)
    b = np.concatenate([ref_box.get_pos(), ref_box.get_quat()], axis=1)
    np.testing.assert_array_equal(a[[0, 2]], b[[0, 2]])
    # env 1 restarted from the initial state (no kick) with a cold solve: as a fresh unkicked env
    fresh, fbox, _ = plane_and_box(incline=20.0, mu=0.5, lift=0.0005, n_envs=3)
    for _ in range(6):
        fresh.step()
    np.testing.assert_array_equal(a[1], np.concatenate([fbox.get_pos(), fbox.get_quat()], axis=1)[1])


def test_checkpoint_continues_bit_exactly(tmp_path):
    scene, box, _ = _run(2, 10, [0, 2])
    path = scene.save_checkpoint(tmp_path / "sap.ckpt")
    warm = sap(scene)._rigid["rigid"].warm_v.numpy().copy()
    for _ in range(10):
        scene.step()
    want = np.concatenate([box.get_pos(), box.get_quat(), box.get_dofs_velocity()], axis=1)
    other, obox, _ = plane_and_box(incline=20.0, mu=0.5, lift=0.0005, n_envs=2)
    other.load_checkpoint(path)
    np.testing.assert_array_equal(sap(other)._rigid["rigid"].warm_v.numpy(), warm)
    for _ in range(10):
        other.step()
    got = np.concatenate([obox.get_pos(), obox.get_quat(), obox.get_dofs_velocity()], axis=1)
    np.testing.assert_array_equal(got, want)


def test_contact_readback_before_and_after_the_first_solve():
    """Right after build no SAP solve has run: the rigid readback lists the contacts with zero forces,
    flagged stale (not the rigid solver's own query at build); after a step it reports SAP's forces,
    tagged with the last substep's start."""
    scene, box, info = plane_and_box()
    c = box.get_contacts()
    assert len(c["penetration"]) == 4 and c["stale"] and not np.any(c["force_a"])
    scene.step()
    c = box.get_contacts()
    assert not c["stale"] and abs(c["solved_at"] - (0.01 - 0.0025)) < 1e-12
    assert abs(abs(c["force_a"] @ info["normal"]).sum() / (info["mass"] * 9.81) - 1.0) < 1e-3


def test_captured_step_equals_uncaptured():
    """The SAP step (hand-off stages, per-env Newton kernel, stats) replays as a Warp graph: the same
    trajectory bit for bit as launching it from Python."""
    import polyphys
    from polyphys import morphs as M
    from polyphys.couplers.sap.options import SapOptions
    from polyphys.options import SimOptions
    from polyphys.plugins.rigid.materials import Rigid

    out = []
    for capture in (True, False):
        scene = polyphys.Scene(sim=SimOptions(dt=0.01, substeps=4, precision="64", graph_capture=capture),
                               coupler=SapOptions(point_stiffness=1e4))
        scene.add_entity(morph=M.Plane(pos=(0.3, -0.2, 0.05), euler=(20.0, 0.0, 0.0)), material=Rigid(friction=0.5))
        box = scene.add_entity(morph=M.Box(size=(0.2, 0.3, 0.1), pos=(0.37, -0.25, 0.16), euler=(20.0, 0.0, 25.0)),
                               material=Rigid(rho=500.0, friction=0.5))
        scene.build(n_envs=2)
        box.set_dofs_velocity(KICKS[:2])
        for _ in range(12):
            scene.step()
        out.append(np.concatenate([box.get_pos(), box.get_quat(), box.get_dofs_velocity()], axis=1))
    np.testing.assert_array_equal(out[0], out[1])
