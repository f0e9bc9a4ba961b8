"""The per-env blocks of the rows and the solve (plugins/rigid/model.py ``SCRATCH_FIELDS``; docs/constraint.md,
"The solve's scratch"): on CPU the solve's scratch is one env's block per View (a zero-stride view: every env of a
partition reads and writes the same block), which gives the numbers of one block per env bit for bit — with envs
of different row counts and envs with no rows side by side, two partitions stepped at once, gathered and in-place
islands, CG, noslip and signorini. And the batch is env-independent: an env among neighbours with more, fewer or no
rows steps as it steps alone, and an env over the row budget still raises, naming the env and the budget."""

import warnings

import numpy as np
import polyphys
import pytest
from polyphys import morphs
from polyphys.errors import PolyphysWarning, SimulationError
from polyphys.plugins.rigid import RigidOptions
from polyphys.plugins.rigid import model as M
from polyphys.plugins.rigid.materials import Rigid

# a box with a box stacked on it (the stack's dofs 0-5 and 12-17 are not contiguous: its island is gathered) and a
# box apart (its island solved in place)
BOXES = [dict(size=(0.3, 0.2, 0.25), pos=(0.7, -0.4, 0.2), euler=(5.0, -3.0, 23.0), rho=600.0),
         dict(size=(0.15, 0.35, 0.1), pos=(-1.2, 0.9, 0.12), euler=(0.0, 8.0, 10.0), rho=1500.0),
         dict(size=(0.2, 0.2, 0.2), pos=(0.72, -0.38, 0.55), euler=(11.0, 0.0, -31.0), rho=900.0)]
N_ENVS = 6
AIR = (1, 4)        # envs whose boxes start 5 m up: no contact, no row, for the first steps


def _scene(n_envs: int, shared: bool = True, threads: int = 2, capture: bool = True, **opts):
    M._shared_scratch = shared
    try:
        scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.004, precision="64", cpu_threads=threads,
                                                       graph_capture=capture),
                               rigid=RigidOptions(constraint_islands=True, **opts))
        scene.add_entity(morphs.Plane(), Rigid())
        ents = [scene.add_entity(morphs.Box(size=b["size"], pos=b["pos"], euler=b["euler"]), Rigid(rho=b["rho"]))
                for b in BOXES]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PolyphysWarning)
            scene.build(n_envs=n_envs)
    finally:
        M._shared_scratch = True
    return scene, ents


def _start(ents, envs):
    """Each env's start: a spin of its own, the boxes of the AIR envs lifted 5 m (``envs``: the batch's env ids)."""
    rng = np.random.default_rng(11)
    vel = [np.concatenate([rng.normal(0, 0.3, (N_ENVS, 3)), rng.normal(0, 2.0, (N_ENVS, 3))], 1) for _ in ents]
    for e, b, v in zip(ents, BOXES, vel):
        pos = np.tile(np.asarray(b["pos"], float), (N_ENVS, 1))
        pos[list(AIR), 2] += 5.0
        e.set_pos(pos[envs])
        e.set_dofs_velocity(v[envs])


def _record(scene, ents, steps):
    s = scene.solver("rigid")
    out = []
    for _ in range(steps):
        scene.step()
        d = s.data
        out.append([np.asarray(e.get_qpos()).tobytes() for e in ents] + [np.asarray(e.get_dofs_velocity()).tobytes()
                                                                          for e in ents]
                   + [d.nefc.numpy().tobytes(), d.efc_force.numpy().tobytes(), d.qacc_warmstart.numpy().tobytes()])
    return out, s.data.nefc.numpy()


@pytest.mark.parametrize("opts", [dict(), dict(friction_cone="elliptic"), dict(constraint_solver="CG"),
                                  dict(noslip_iterations=4),
                                  dict(contact_resolution="signorini", friction_cone="elliptic")],
                         ids=["newton", "newton-elliptic", "cg", "noslip", "signorini"])
def test_shared_scratch_equals_a_block_per_env(opts):
    runs = {}
    for shared in (True, False):
        scene, ents = _scene(N_ENVS, shared, **opts)
        s = scene.solver("rigid")
        parts = [p.index for p in s.layout.partitions]
        assert len(parts) == 2
        for name in M.SCRATCH_FIELDS:
            blocks = [M.scratch_block(getattr(s.views[i].d, name)).ptr for i in parts]
            if shared:
                # one block per View (the partitions run at once), seen by each of its envs
                assert all(getattr(s.views[i].d, name).strides[0] == 0 for i in parts), name
                assert len(set(blocks)) == len(blocks), name
            else:
                assert all(getattr(s.views[i].d, name).strides[0] > 0 for i in parts), name
        _start(ents, np.arange(N_ENVS))
        runs[shared] = _record(scene, ents, 60)
    (a, nefc), (b, _) = runs[True], runs[False]
    # at the end the envs' row counts differ, the AIR envs have none
    assert len(set(nefc.tolist())) > 2 and all(nefc[e] == 0 for e in AIR)
    assert all(a[i] == b[i] for i in range(len(a)))


def test_env_steps_as_alone_among_neighbours_with_other_row_counts():
    """Envs of different row counts (resting stacks, spinning boxes, boxes in the air: no rows) stepped as one batch
    over two partitions equal each env stepped alone, bit for bit."""
    scene, ents = _scene(N_ENVS)
    _start(ents, np.arange(N_ENVS))
    batch, nefc = _record(scene, ents, 60)
    assert len(set(nefc.tolist())) > 2 and all(nefc[e] == 0 for e in AIR)
    nb = len(BOXES)
    for env in (0, 1, 3):
        one, ents1 = _scene(1, threads=1)
        _start(ents1, np.array([env]))
        alone, _ = _record(one, ents1, 60)
        for k in range(60):
            for i in range(2 * nb):      # each entity's qpos and qvel
                got = np.frombuffer(batch[k][i], np.float64).reshape(N_ENVS, -1)[env]
                np.testing.assert_array_equal(got, np.frombuffer(alone[k][i], np.float64), err_msg=f"env {env} step {k}")


def test_row_budget_overflow_names_the_env_and_the_budget():
    """An env over the row budget raises after the step, naming that env and max_rows; the envs within it (those in
    the air: no rows) are not flagged. (The budget lowered in the Model structs of the launches: make_rows flags an
    env whose rows pass it, the arrays keep their size.)"""
    scene, ents = _scene(N_ENVS, capture=False)
    _start(ents, np.arange(N_ENVS))
    s = scene.solver("rigid")
    for _ in range(60):
        scene.step()
    nefc = s.data.nefc.numpy()
    assert all(nefc[e] == 0 for e in AIR) and all(nefc[e] > 2 for e in range(N_ENVS) if e not in AIR)
    budget = int(nefc[nefc > 0].min()) // 2     # the envs with rows pass it, whatever their next count
    s.model.max_rows = budget
    for v in s.views.values():
        v.m.max_rows = budget
    with pytest.raises(SimulationError, match=rf"max_rows={budget} in env (\d+)") as ex:
        scene.step()
    env = int(str(ex.value).split("in env ")[1].split(";")[0])
    ov = s.data.efc_overflow.numpy()
    assert ov[env] and env == int(np.nonzero(ov)[0][0])
    assert not any(ov[e] for e in AIR)


def test_contact_budget_overflow_names_the_env_and_the_budget():
    """A contact budget below one env's contact count raises naming that env and the budget (the env with the
    stack needs the most contacts; the AIR envs none)."""
    from polyphys.errors import BudgetExceededError

    scene, ents = _scene(N_ENVS, max_contacts=6, collision_overflow="raise")
    _start(ents, np.arange(N_ENVS))
    with pytest.raises(BudgetExceededError, match=r"max_contacts exceeded in env (\d+): \d+ needed, budget 6") as ex:
        for _ in range(60):
            scene.step()
    env = int(ex.value.args[0].split("in env ")[1].split(":")[0])
    assert env not in AIR


def test_padding_from_the_mark_equals_padding_the_budget():
    """The convex solve pads only the rows from the count up to d.efc_pad (the rows earlier solves wrote past it):
    every step's efc_force and efc_state, past the counts too, byte for byte those of padding the whole budget, with
    row counts that rise and fall (boxes landing, spinning, in the air)."""
    runs = []
    for mark in (True, False):
        scene, ents = _scene(N_ENVS)
        s = scene.solver("rigid")
        s._pad_mark = mark
        s._row_pool = False     # the padding is that of a block per env (the row pool has none)
        _start(ents, np.arange(N_ENVS))
        counts, out = [], []
        for _ in range(60):
            scene.step()
            counts.append(s.data.nefc.numpy().copy())
            out.append((s.data.efc_force.numpy().tobytes(), s.data.efc_state.numpy().tobytes()))
        runs.append(out)
        if mark:
            assert (s.data.efc_pad.numpy() == s.data.nefc.numpy()).all()
            dec = [e for e in range(N_ENVS) if any(counts[k + 1][e] < counts[k][e] for k in range(59))]
            assert dec                          # some env's count fell: rows to pad below the mark
    assert runs[0] == runs[1]
