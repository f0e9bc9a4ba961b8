"""The row pool (plugins/rigid/model.py ``ROW_POOL_FIELDS``; docs/constraint.md, "The row pool"): on CPU make_rows
puts each env's rows right after the previous env's rows of its View (d.efc_off[e] = adr[e] − e·max_rows) instead of
at the start of the env's own row-budget block. The address is the only difference: the pooled batch steps bit for
bit as the batch of one block per env (d.efc_off = 0) and as each env alone — envs of different row counts and envs
with no rows side by side, two partitions stepped at once, Newton (pyramidal, elliptic), CG, noslip, signorini — the
getters report the same rows and forces, and an env over its own budget still raises naming the env and the
budget."""

import numpy as np
import pytest
from polyphys.errors import SimulationError

from .test_constraint_scratch import AIR, BOXES, N_ENVS, _scene, _start

OPTS = [dict(), dict(friction_cone="elliptic"), dict(constraint_solver="CG"), dict(noslip_iterations=4),
        dict(contact_resolution="signorini", friction_cone="elliptic")]
IDS = ["newton", "newton-elliptic", "cg", "noslip", "signorini"]
GETTER_KEYS = ("count", "valid", "type", "object", "contact", "force", "state", "qfrc_constraint")


def _run(pool, steps, n_envs=N_ENVS, threads=2, envs=None, slack=None, head=None, **opts):
    """qpos / qvel of each entity, the getter's rows and the warm start after each step, and each step's efc_off,
    with the row pool on or off (``RigidSolver._row_pool``; ``slack`` / ``head``: make_rows' slack and head,
    ``_row_slack`` / ``_row_head``; None: the defaults, model._row_pool_slack / _row_pool_head)."""
    scene, ents = _scene(n_envs, threads=threads, **opts)
    s = scene.solver("rigid")
    s._row_pool = pool
    if slack is not None:
        s._row_slack = slack
    if head is not None:
        s._row_head = head
    _start(ents, np.arange(N_ENVS) if envs is None else envs)
    out, offs = [], []
    for _ in range(steps):
        scene.step()
        cf = s.get_constraint_forces()
        out.append([np.asarray(e.get_qpos()).tobytes() for e in ents]
                   + [np.asarray(e.get_dofs_velocity()).tobytes() for e in ents]
                   + [np.asarray(cf[k]).tobytes() for k in GETTER_KEYS]
                   + [s.data.qacc_warmstart.numpy().tobytes()])
        offs.append((s.data.efc_off.numpy().copy(), s.data.nefc.numpy().copy()))
    return out, offs, s


@pytest.mark.parametrize("slack_head", [(0, 0), (8, 0), (8, 8), (None, None)],
                         ids=["slack0", "slack8", "slack8-head8", "default"])
@pytest.mark.parametrize("opts", OPTS, ids=IDS)
def test_pool_equals_a_block_per_env(opts, slack_head):
    """Pooled against one block per env: every step's qpos, qvel, the getter's rows (count, type, object, contact,
    force, state, Jᵀf) and the warm start byte for byte; in the pool each partition's first env starts at its
    block (off 0) and every other env right after the previous env's rows (with make_rows' slack: at most that
    many rows after — an env that moved with a head: that far or an eighth of the previous env's count after —
    at its block or before it); without it every offset is 0."""
    from polyphys.plugins.rigid import model as _model

    slack, head = slack_head
    a, offs, s = _run(True, 60, slack=slack, head=head, **opts)
    slack = _model._row_pool_slack if slack is None else slack
    head = _model._row_pool_head if head is None else head
    b, offs0, _ = _run(False, 60, **opts)
    R = s.model.max_rows
    starts = {p.start for p in s.layout.partitions}
    assert len(starts) == 2
    moved = False
    for off, nefc in offs:
        for e in range(N_ENVS):
            adr = e * R + off[e]
            if e in starts:
                assert off[e] == 0
            else:
                end = (e - 1) * R + off[e - 1] + nefc[e - 1]
                assert end <= adr <= end + slack and off[e] <= 0
            moved |= bool(off[e] != 0)
    # an env that moved because the envs before it grew lands min(head, count / 8) rows after their end (or at its
    # block)
    headed = False
    for (off0, _), (off1, nefc) in zip(offs, offs[1:]):
        for e in range(N_ENVS):
            if e in starts:
                continue
            end = off1[e - 1] + nefc[e - 1] - R
            if off0[e] < end:
                assert off1[e] == min(end + min(head, nefc[e - 1] // 8), 0)
                headed |= min(head, nefc[e - 1] // 8) > 0
    assert headed or head == 0 or slack == 0
    assert moved
    assert all((off == 0).all() for off, _ in offs0)
    nefc = offs[-1][1]
    assert len(set(nefc.tolist())) > 2 and all(nefc[e] == 0 for e in AIR)
    for k in range(60):
        assert a[k] == b[k], f"step {k}"


@pytest.mark.parametrize("opts", OPTS, ids=IDS)
def test_pooled_env_steps_as_alone(opts):
    """An env whose rows lie in the pool after neighbours with rows and without (env 5, after env 3 and the AIR env 4
    in its partition) steps bit for bit as it steps alone (qpos, qvel, its rows' forces and types)."""
    batch, _, _ = _run(True, 40, **opts)
    env = 5
    alone, _, _ = _run(True, 40, n_envs=1, threads=1, envs=np.array([env]), **opts)
    nb = len(BOXES)
    for k in range(40):
        for i in range(2 * nb):      # each entity's qpos and qvel
            got = np.frombuffer(batch[k][i], np.float64).reshape(N_ENVS, -1)[env]
            np.testing.assert_array_equal(got, np.frombuffer(alone[k][i], np.float64), err_msg=f"step {k}")
        # the getter's count, type and force of the env (the row budget is the same scene's)
        cnt = np.frombuffer(batch[k][2 * nb], np.int32)[env]
        assert cnt == np.frombuffer(alone[k][2 * nb], np.int32)[0]
        for j, dt in ((2, np.int32), (5, np.float64)):
            got = np.frombuffer(batch[k][2 * nb + j], dt).reshape(N_ENVS, -1)[env]
            np.testing.assert_array_equal(got, np.frombuffer(alone[k][2 * nb + j], dt), err_msg=f"step {k}")


def test_pool_overflow_names_the_env_and_the_budget():
    """In the pool an env over its own row budget raises after the step, naming that env and max_rows (the pool
    holds n · max_rows rows: only an env's own budget can overflow), the envs without rows not flagged."""
    scene, ents = _scene(N_ENVS, capture=False)
    s = scene.solver("rigid")
    s._row_pool = True
    _start(ents, np.arange(N_ENVS))
    for _ in range(60):
        scene.step()
    nefc = s.data.nefc.numpy()
    assert s.data.efc_off.numpy().any()
    budget = int(nefc[nefc > 0].min()) // 2
    s.model.max_rows = budget
    for v in s.views.values():
        v.m.max_rows = budget
    with pytest.raises(SimulationError, match=rf"max_rows={budget} in env (\d+)") as ex:
        scene.step()
    env = int(str(ex.value).split("in env ")[1].split(";")[0])
    ov = s.data.efc_overflow.numpy()
    assert ov[env] and env == int(np.nonzero(ov)[0][0])
    assert not any(ov[e] for e in AIR)
