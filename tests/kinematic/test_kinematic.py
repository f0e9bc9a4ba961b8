"""Kinematic plugin: FK stage vs an independent NumPy reference, velocities vs finite differences,
q integration, docs/semantics.md §S4 getters/setters and bad input."""

import numpy as np
import polyphys
import pytest
import warp as wp
from polyphys import SimOptions, morphs
from polyphys.description import EntityDescription, Inertial, Joint, Link
from polyphys.errors import OptionError
from polyphys.kinematics import JointTree, euler_to_quat, quat_mul, quat_rotate, quat_to_euler


def chain_description():
    """A 4-link chain exercising every joint type, two joints on one link and non-trivial frames."""
    q45 = (np.cos(np.pi / 8), 0, np.sin(np.pi / 8), 0)
    links = [Link(name="root", parent=-1, pos=(0.1, 0.2, 0.3), joints=[0]),
             Link(name="a", parent=0, pos=(0, 0.3, 0), quat=q45, joints=[1, 2]),
             Link(name="b", parent=1, pos=(0.2, 0, 0.1), joints=[3]),
             Link(name="c", parent=2, pos=(0, 0, 0.4), quat=(0, 1, 0, 0), joints=[4])]
    for lk in links:
        lk.inertial = Inertial(mass=1.0, inertia=np.eye(3))
    joints = [Joint(name="free", type="free", link=0),
              Joint(name="hinge1", type="revolute", link=1, pos=(0.05, 0, 0), axis=(0, 0, 1), ref=0.2),
              Joint(name="slide", type="prismatic", link=1, axis=(1, 0, 0)),
              Joint(name="ball", type="spherical", link=2, pos=(0, 0.1, 0)),
              Joint(name="hinge2", type="revolute", link=3, axis=(0.6, 0.8, 0))]
    return EntityDescription(name="chain", links=links, joints=joints).finalize()


def reference_fk(desc, q):
    """Independent NumPy FK of one configuration (MuJoCo's rules)."""
    pos, quat = [], []
    for link in desc.links:
        if link.parent < 0:
            xp, xq = np.array(link.pos), np.array(link.quat)
        else:
            xp = pos[link.parent] + quat_rotate(quat[link.parent], link.pos)
            xq = quat_mul(quat[link.parent], link.quat)
        for ji in link.joints:
            j = desc.joints[ji]
            s = j.q_start
            if j.type == "free":
                xp, xq = q[s:s + 3], q[s + 3:s + 7] / np.linalg.norm(q[s + 3:s + 7])
            elif j.type == "revolute":
                anchor = xp + quat_rotate(xq, j.pos)
                ang = q[s] - j.ref
                ax = np.array(j.axis) / np.linalg.norm(j.axis)
                xq = quat_mul(xq, np.r_[np.cos(ang / 2), np.sin(ang / 2) * ax])
                xp = anchor - quat_rotate(xq, j.pos)
            elif j.type == "prismatic":
                xp = xp + quat_rotate(xq, j.axis) * (q[s] - j.ref)
            elif j.type == "spherical":
                anchor = xp + quat_rotate(xq, j.pos)
                xq = quat_mul(xq, q[s:s + 4] / np.linalg.norm(q[s:s + 4]))
                xp = anchor - quat_rotate(xq, j.pos)
        pos.append(xp)
        quat.append(xq)
    return np.array(pos), np.array(quat)


def random_q(desc, rng):
    q = desc.qpos0()
    q[0:3] = rng.normal(size=3)
    q[3:7] = rng.normal(size=4)
    q[7] = rng.normal()
    q[8] = rng.normal()
    q[9:13] = rng.normal(size=4)
    q[13] = rng.normal()
    return q


@pytest.mark.parametrize("precision", ["32", "64"])
def test_fk_stage_matches_reference_with_nan_filled_outputs(precision):
    desc = chain_description()
    tree = JointTree([(desc, (0, 0, 0), (1, 0, 0, 0))])
    n_envs = 4
    m = tree.to_warp(n_envs, precision, "cpu")
    rng = np.random.default_rng(0)
    qs = np.stack([random_q(desc, rng) for _ in range(n_envs)])
    s = m.scalar
    qpos = wp.array(qs, dtype=s)
    qvel = wp.zeros((n_envs, desc.n_dofs), dtype=s)
    outs = [wp.array(np.full((n_envs, 4, 3), np.nan), dtype=m.vec3),
            wp.array(np.full((n_envs, 4, 4), np.nan), dtype=m.quat),
            wp.array(np.full((n_envs, 4, 3), np.nan), dtype=m.vec3),
            wp.array(np.full((n_envs, 4, 3), np.nan), dtype=m.vec3)]
    JointTree.launch_fk(m, qpos, qvel, *outs)
    tol = 1e-12 if precision == "64" else 2e-5    # float32 rounding over a 4-link chain of ~1 m
    for e in range(n_envs):
        rp, rq = reference_fk(desc, qs[e])
        p = outs[0].numpy()[e]
        q = outs[1].numpy()[e][:, [3, 0, 1, 2]]
        np.testing.assert_allclose(p, rp, atol=tol)
        # quaternions are equal up to sign
        assert np.allclose(np.abs(np.sum(q * rq, axis=1)), 1.0, atol=tol)
    assert np.all(outs[2].numpy() == 0) and np.all(outs[3].numpy() == 0)


def test_link_velocities_match_finite_differences():
    desc = chain_description()
    tree = JointTree([(desc, (0, 0, 0), (1, 0, 0, 0))])
    m = tree.to_warp(1, "64", "cpu")
    rng = np.random.default_rng(1)
    q0 = random_q(desc, rng)
    q0[3:7] /= np.linalg.norm(q0[3:7])
    q0[9:13] /= np.linalg.norm(q0[9:13])
    v = rng.normal(size=desc.n_dofs)
    out = [wp.zeros((1, 4), dtype=m.vec3), wp.zeros((1, 4), dtype=m.quat),
           wp.zeros((1, 4), dtype=m.vec3), wp.zeros((1, 4), dtype=m.vec3)]
    JointTree.launch_fk(m, wp.array(q0[None], dtype=wp.float64), wp.array(v[None], dtype=wp.float64), *out)
    lin, ang = out[2].numpy()[0], out[3].numpy()[0]
    eps = 1e-6

    def integrate(dt):
        qa = wp.array(q0[None].copy(), dtype=wp.float64)
        JointTree.launch_integrate(m, dt, wp.array(v[None], dtype=wp.float64), qa)
        return reference_fk(desc, qa.numpy()[0])

    (p1, r1), (p0, r0) = integrate(eps), integrate(-eps)
    np.testing.assert_allclose((p1 - p0) / (2 * eps), lin, atol=1e-6)
    for li in range(4):
        dq = quat_mul(np.r_[r0[li][0], -r0[li][1:]], r1[li])      # r0⁻¹ r1 = exp(ω_body 2ε)
        dq *= np.sign(dq[0])
        w_body = 2 * dq[1:] / (2 * eps)
        np.testing.assert_allclose(quat_rotate(r0[li], w_body), ang[li], atol=1e-5)


def _scene(n_envs=2, precision="32", **kw):
    sc = polyphys.Scene(sim=SimOptions(dt=0.01, substeps=2, precision=precision, **kw))
    box = sc.add_entity(morphs.Box(size=(0.2, 0.2, 0.2), pos=(0, 0, 1)), material=polyphys.materials.Kinematic())
    chain = sc.add_entity(morphs.Description(description=chain_description(), pos=(1, 0, 0)),
                          material=polyphys.materials.Kinematic())
    sc.build(n_envs=n_envs)
    return sc, box, chain


def test_free_body_moves_by_its_velocity():
    sc, box, _ = _scene(precision="64")
    box.set_dofs_velocity([[1.0, 0, 0, 0, 0, np.pi], [0, 0, -1, 0, 0, 0]])
    for _ in range(100):
        sc.step()
    np.testing.assert_allclose(box.get_pos(), [[1, 0, 1], [0, 0, 0]], atol=1e-12)
    # a half turn about z: q = (0, 0, 0, ±1)
    np.testing.assert_allclose(np.abs(box.get_quat()[0]), [0, 0, 0, 1], atol=1e-12)
    np.testing.assert_allclose(sc.get_time(), [1.0, 1.0])


def test_set_qpos_keeps_velocity_and_updates_links():
    sc, box, chain = _scene()
    box.set_dofs_velocity([1.0, 0, 0, 0, 0, 0])
    box.set_qpos([0, 0, 2, 1, 0, 0, 0])
    np.testing.assert_allclose(box.get_dofs_velocity()[:, 0], [1, 1])       # kept (docs/semantics.md §S4)
    np.testing.assert_allclose(box.get_links_pos()[:, 0], [[0, 0, 2]] * 2)
    box.set_qpos([0, 0, 3, 1, 0, 0, 0], envs_idx=[1], zero_velocity=True)
    np.testing.assert_allclose(box.get_dofs_velocity()[:, 0], [1, 0])
    np.testing.assert_allclose(box.get_pos()[:, 2], [2, 3])


def test_dofs_position_semantics():
    sc, box, chain = _scene(n_envs=0, precision="64")
    q = chain.get_qpos()
    assert q.shape == (chain.n_qs,) and chain.n_qs == 14 and chain.n_dofs == 12
    dp = chain.get_dofs_position()
    assert dp[6] == pytest.approx(q[7] - 0.2)            # revolute reports q - ref
    e = np.array([0.1, -0.2, 0.3])
    chain.set_dofs_position(e, dofs_idx_local=[8, 9, 10])
    np.testing.assert_allclose(chain.get_qpos()[9:13], euler_to_quat(e), atol=1e-12)
    np.testing.assert_allclose(quat_to_euler(euler_to_quat(e)), e, atol=1e-12)
    assert [j.name for j in chain.joints] == ["free", "hinge1", "slide", "ball", "hinge2"]
    assert chain.joints[3].q_start - chain.q_start == 9 and chain.joints[3].dof_idx_local == [8, 9, 10]


def test_bad_input_names_expected_shape():
    sc, box, chain = _scene()
    with pytest.raises(OptionError, match=r"qpos has shape \(2, 3\); expected \(2, 7\)"):
        box.set_qpos(np.zeros((2, 3)))
    with pytest.raises(OptionError, match="NaN/inf"):
        box.set_dofs_velocity([np.nan, 0, 0, 0, 0, 0])
    with pytest.raises(OptionError, match=r"dofs_idx_local contains \[12\]"):
        chain.get_dofs_velocity(dofs_idx_local=[12])
    with pytest.raises(OptionError, match="zero quaternion"):
        box.set_qpos([0, 0, 0, 0, 0, 0, 0])
    with pytest.raises(OptionError, match=r"envs_idx contains \[5\]"):
        box.get_pos(envs_idx=[5])


def test_fixed_base_set_pos_per_env():
    sc = polyphys.Scene()
    arm = sc.add_entity(morphs.Box(size=(1, 1, 1), fixed=True), material=polyphys.materials.Kinematic())
    sc.build(n_envs=3)
    assert arm.n_qs == 0
    arm.set_pos([5.0, 0, 0], envs_idx=[2])
    np.testing.assert_allclose(arm.get_pos(), [[0, 0, 0], [0, 0, 0], [5, 0, 0]])


def test_free_body_under_a_static_world_link_takes_the_entity_placement():
    """MJCF puts free bodies under the world body (a jointless root link): the entity's pos/euler
    must still place them."""
    links = [Link(name="world", parent=-1),
             Link(name="body", parent=0, pos=(0, 0, 1.0), joints=[0], inertial=Inertial(mass=1.0, inertia=np.eye(3)))]
    desc = EntityDescription(name="m", links=links, joints=[Joint(name="root", type="free", link=1)]).finalize()
    sc = polyphys.Scene()
    e = sc.add_entity(morphs.Description(description=desc, pos=(2.0, 0, 0), euler=(0, 0, 90)),
                      material=polyphys.materials.Kinematic())
    sc.build()
    np.testing.assert_allclose(e.get_links_pos()[1], [2.0, 0, 1.0], atol=1e-6)
    np.testing.assert_allclose(np.abs(e.get_qpos()[3:7]), [np.cos(np.pi / 4), 0, 0, np.sin(np.pi / 4)], atol=1e-6)
