"""Constraint islands of the convex solve (docs/semantics.md §R8; MuJoCo's mj_island): trees joined by
constraint rows form independent problems, each with its own Hessian, line search and stopping test.

- two boxes far apart (different sizes and masses, one dropped tilted onto an edge) are two islands
  once both touch the plane, and each converges in exactly the iterations it takes alone: the pair
  scene's per-island iteration counts equal the one-box scenes' solver_niter step by step, and each
  box's trajectory equals its one-box trajectory bit for bit (same contacts, rows and arithmetic);
- a scene of one island (a stack of boxes, all dofs in it) is bit-identical with islands on and off;
- MuJoCo-compatible mode: the island count and the dofs' island labels equal MuJoCo's nisland and
  dof_island, and the solution its qacc, on the articulated scene of mjscenes.py and on dm_control's
  finger (two trees: the finger and the spinner with its frictionloss) at states of one and two islands.
"""

import warnings

import numpy as np
import polyphys
import pytest
import warp as wp
from polyphys import morphs
from polyphys.errors import PolyphysWarning
from polyphys.plugins.rigid import RigidOptions
from polyphys.plugins.rigid import model as M
from polyphys.plugins.rigid.materials import Rigid

# box A lands flat on a face, box B tilted onto an edge; 2.5 m apart
BOX_A = dict(size=(0.3, 0.2, 0.25), pos=(0.7, -0.4, 0.45), euler=(0.0, 0.0, 23.0), rho=600.0)
BOX_B = dict(size=(0.15, 0.35, 0.1), pos=(-1.2, 0.9, 0.5), euler=(35.0, 0.0, 10.0), rho=1500.0)


def _boxes(boxes, islands=True, n_envs=0, precision="64", **opts):
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.005, precision=precision),
                           rigid=RigidOptions(constraint_islands=islands, **opts))
    scene.add_entity(morphs.Plane(), Rigid())
    ents = [scene.add_entity(morphs.Box(size=b["size"], pos=b["pos"], euler=b["euler"]), Rigid(rho=b["rho"]))
            for b in boxes]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=n_envs)
    return scene, ents


@pytest.mark.parametrize("solver", ["Newton", "CG"])
def test_two_far_boxes_converge_as_each_alone(solver):
    pair, (ea, eb) = _boxes([BOX_A, BOX_B], constraint_solver=solver)
    one_a, (sa,) = _boxes([BOX_A], constraint_solver=solver)
    one_b, (sb,) = _boxes([BOX_B], constraint_solver=solver)
    rp, ra, rb = pair.solver("rigid"), one_a.solver("rigid"), one_b.solver("rigid")
    two, differ = 0, 0
    for _ in range(160):
        for s in (pair, one_a, one_b):
            s.step()
        isl = rp.get_islands()
        assert isl["enabled"]
        ta, tb = int(ra.data.nefc.numpy()[0]) > 0, int(rb.data.nefc.numpy()[0]) > 0
        assert isl["count"] == int(ta) + int(tb)
        # islands are numbered by their lowest dof: A's dofs (0-5) come first
        expect = [int(r.data.solver_niter.numpy()[0]) for r, t in ((ra, ta), (rb, tb)) if t]
        np.testing.assert_array_equal(isl["niter"][:isl["count"]], expect)
        lab = isl["dof_island"]
        assert np.all(lab[:6] == (0 if ta else -1)) and np.all(lab[6:] == ((1 if ta else 0) if tb else -1))
        np.testing.assert_array_equal(ea.get_qpos(), sa.get_qpos())
        np.testing.assert_array_equal(eb.get_qpos(), sb.get_qpos())
        np.testing.assert_array_equal(ea.get_dofs_velocity(), sa.get_dofs_velocity())
        np.testing.assert_array_equal(eb.get_dofs_velocity(), sb.get_dofs_velocity())
        if isl["count"] == 2:
            two += 1
            differ += int(expect[0] != expect[1])
    assert two > 60                 # both boxes rest on the plane for most of the run
    # B lands on an edge and rocks onto a face: its problem needs other iteration counts than A's
    assert differ > 0
    # without islands the pair is one problem: one iteration count for both boxes
    whole, (wa, wb) = _boxes([BOX_A, BOX_B], islands=False, constraint_solver=solver)
    for _ in range(100):
        whole.step()
    assert not whole.solver("rigid").get_islands()["enabled"]
    assert whole.solver("rigid").get_islands()["count"] == 0


def _stack(islands, n_envs=2):
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.005, precision="64"),
                           rigid=RigidOptions(constraint_islands=islands))
    scene.add_entity(morphs.Plane(), Rigid())
    for i in range(3):
        scene.add_entity(morphs.Box(size=(0.2 - 0.02 * i, 0.18, 0.15), pos=(0.31 + 0.01 * i, -0.2, 0.076 + 0.152 * i),
                                    euler=(0, 0, 9 * i)), Rigid(rho=700 + 200 * i))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=n_envs)
    return scene


def test_one_island_is_bit_identical_to_no_islands():
    on, off = _stack(True), _stack(False)
    ron, roff = on.solver("rigid"), off.solver("rigid")
    one = 0
    for _ in range(120):
        on.step()
        off.step()
        for k in ("qpos", "qvel", "efc_force", "qfrc_constraint", "solver_niter", "nefc"):
            np.testing.assert_array_equal(getattr(ron.data, k).numpy(), getattr(roff.data, k).numpy(), err_msg=k)
        isl = ron.get_islands()
        one += int(np.all(isl["count"] == 1) and np.all(isl["dof_island"] == 0))
    assert one > 100                # the stack stands: one island of all 18 dofs


# ------------------------------------------------------------------ MuJoCo's islands

def _mj_scene(path, dt, gravity, cone, **opts):
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=dt, gravity=gravity, precision="64", graph_capture=False),
                           rigid=RigidOptions.mujoco(integrator="Euler", friction_cone=cone, **opts))
    ent = scene.add_entity(morphs.MJCF(file=str(path)), Rigid(), name="mj")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=0)
    return scene, ent


def _check_against_mujoco(scene, ent, d):
    """One polyphys step solves at the state of d (the solve precedes the integration); MuJoCo's
    mj_forward solves the same problem island by island."""
    rs = scene.solver("rigid")
    ent.set_qpos(d.qpos.copy())
    ent.set_dofs_velocity(d.qvel.copy())
    scene.step()
    isl = rs.get_islands()
    assert isl["enabled"]
    assert isl["count"] == d.nisland
    np.testing.assert_array_equal(isl["dof_island"], d.dof_island)
    # each island converged: the unique minimizer to the solve tolerance
    qacc = rs.data.qacc_warmstart.numpy()[0]
    np.testing.assert_allclose(qacc, d.qacc, rtol=0, atol=1e-6 * (1 + np.abs(d.qacc).max()))
    return isl


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_islands_match_mujoco_articulated(cone, tmp_path):
    mujoco = pytest.importorskip("mujoco")
    import mjscenes as S

    m, d = S.make(cone=cone, impratio=1.0, condim=3)
    path = tmp_path / "articulated.xml"
    path.write_text(S.ARTICULATED.format(cone=cone, impratio=1.0, condim=3, condim_ball=6, solref="0.02 1").strip())
    m.opt.tolerance = 1e-12
    m.opt.iterations = 1000
    mujoco.mj_forward(m, d)
    assert d.nisland >= 2
    scene, ent = _mj_scene(path, float(m.opt.timestep), (0, 0, -9.81), cone, tolerance=1e-12, iterations=1000,
                           ls_iterations=100, ls_tolerance=1e-6)
    isl = _check_against_mujoco(scene, ent, d)
    assert np.all(isl["niter"][:isl["count"]] > 0)


def _finger():
    import os

    spec = __import__("importlib.util").util.find_spec("dm_control")
    if spec is None or not spec.origin:
        pytest.skip("dm_control not installed")
    path = os.path.join(os.path.dirname(spec.origin), "suite", "finger.xml")
    if not os.path.exists(path):
        pytest.skip("dm_control's finger.xml not found")
    return path


@pytest.mark.parametrize("touching", [False, True])
def test_islands_match_mujoco_finger(touching):
    """dm_control's finger: the finger (two limited hinges) and the spinner (a hinge with frictionloss,
    always one row) are two trees. Finger at its joint limit away from the spinner: two islands;
    fingertip pressed into the spinner: one."""
    mujoco = pytest.importorskip("mujoco")
    path = _finger()
    m = mujoco.MjModel.from_xml_path(path)
    m.opt.tolerance = 1e-12
    m.opt.iterations = 1000
    m.opt.ls_iterations = 100
    m.opt.ls_tolerance = 1e-6
    d = mujoco.MjData(m)
    rng = np.random.default_rng(5)
    if touching:
        # search for a pose of the two finger joints that presses the fingertip into the spinner
        best = None
        for _ in range(4000):
            q = np.array([rng.uniform(-1.9, 1.9), rng.uniform(-1.9, 1.9), rng.uniform(-np.pi, np.pi)])
            d.qpos[:] = q
            mujoco.mj_forward(m, d)
            if d.nisland == 1 and any(
                    {m.geom_bodyid[d.contact[c].geom1], m.geom_bodyid[d.contact[c].geom2]} ==
                    {m.body("distal").id, m.body("spinner").id} for c in range(d.ncon)):
                best = q
                break
        assert best is not None
        d.qpos[:] = best
    else:
        d.qpos[:] = [np.deg2rad(112), np.deg2rad(-60), 0.7]       # proximal past its 110° limit
    d.qvel[:] = rng.normal(scale=0.5, size=m.nv)
    mujoco.mj_forward(m, d)
    assert d.nisland == (1 if touching else 2)
    scene, ent = _mj_scene(path, float(m.opt.timestep), (0, 0, 0), "elliptic", tolerance=1e-12, iterations=1000,
                           ls_iterations=100, ls_tolerance=1e-6)
    _check_against_mujoco(scene, ent, d)


ISLAND_FLAG = """<mujoco>
  <option timestep="0.005">{flag}</option>
  <worldbody>
    <geom type="plane" size="3 3 .1"/>
    <body pos="0.7 -0.4 0.189" euler="0 0 23"><freejoint/><geom type="box" size="0.3 0.2 0.19" density="600"/></body>
    <body pos="-1.2 0.9 0.089" euler="0 0 10"><freejoint/><geom type="box" size="0.15 0.35 0.09" density="1500"/></body>
  </worldbody>
</mujoco>"""


@pytest.mark.parametrize("flag", ["", '<flag island="disable"/>', '<flag island="enable"/>'])
def test_mjcf_island_flag(tmp_path, flag):
    """MJCF <option><flag island=...>: MuJoCo-compatible mode with constraint_islands None follows
    the file (MuJoCo 4.0's default, no flag, is enabled: mjDSBL_ISLAND clear, as MuJoCo reports for
    the same file); an explicit RigidOptions.constraint_islands wins over the file; the default
    mode ignores the file (islands on). Two boxes resting far apart: two islands when on."""
    import mujoco

    path = tmp_path / "boxes.xml"
    path.write_text(ISLAND_FLAG.format(flag=flag))
    file_on = "disable" not in flag
    mjm = mujoco.MjModel.from_xml_path(str(path))
    assert bool(mjm.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_ISLAND) == (not file_on)
    mjd = mujoco.MjData(mjm)
    mujoco.mj_forward(mjm, mjd)
    assert mjd.nisland == (2 if file_on else 0)

    def run(rigid):
        scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.005, precision="64"), rigid=rigid)
        scene.add_entity(morphs.MJCF(file=str(path)), Rigid(), name="mj")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PolyphysWarning)
            scene.build(n_envs=0)
        for _ in range(3):
            scene.step()
        return scene.solver("rigid")

    for rigid, expect in ((RigidOptions.mujoco(), file_on),
                          (RigidOptions.mujoco(constraint_islands=True), True),
                          (RigidOptions.mujoco(constraint_islands=False), False),
                          (RigidOptions(), True)):
        s = run(rigid)
        isl = s.get_islands()
        assert isl["enabled"] == expect, rigid
        assert isl["count"] == (2 if expect else 0)
        if rigid.mujoco_compatible and rigid.constraint_islands is None:
            assert s.options.constraint_islands is file_on       # resolved from the file


def test_noslip_solves_the_whole_env_as_mujoco(tmp_path):
    """Noslip with islands requested (docs/semantics.md §R8): MuJoCo 4 solves islands only when
    noslip_iterations is 0 (mj_fwdConstraint's islands_supported), so on the articulated scene (two or
    more islands without noslip) both engines run the whole-env Newton solve and then the noslip sweeps
    over the whole env. polyphys reports islands off and its qacc and Jᵀf equal MuJoCo's to the solve
    tolerance; the sweeps change MuJoCo's forces by far more than that (so the sweeps are compared)."""
    mujoco = pytest.importorskip("mujoco")
    import mjscenes as S

    m, d = S.make(cone="pyramidal", impratio=1.0, condim=3)
    m2, d2 = S.make(cone="pyramidal", impratio=1.0, condim=3)
    for mm in (m, m2):
        mm.opt.tolerance = 1e-12
        mm.opt.iterations = 1000
    m.opt.noslip_iterations = 5
    path = tmp_path / "articulated.xml"
    path.write_text(S.ARTICULATED.format(cone="pyramidal", impratio=1.0, condim=3, condim_ball=6,
                                         solref="0.02 1").strip())
    mujoco.mj_forward(m, d)
    mujoco.mj_forward(m2, d2)
    assert d.nisland >= 2
    scale = 1 + np.abs(d.efc_force).max()
    assert np.abs(d.efc_force - d2.efc_force).max() > 1e-3 * scale      # noslip moved the forces
    scene, ent = _mj_scene(path, float(m.opt.timestep), (0, 0, -9.81), "pyramidal", tolerance=1e-12,
                           iterations=1000, ls_iterations=100, ls_tolerance=1e-6, constraint_islands=True,
                           noslip_iterations=5)
    rs = scene.solver("rigid")
    ent.set_qpos(d.qpos.copy())
    ent.set_dofs_velocity(d.qvel.copy())
    scene.step()
    isl = rs.get_islands()
    assert not isl["enabled"] and isl["count"] == 0
    qacc = rs.data.qacc_warmstart.numpy()[0]
    np.testing.assert_allclose(qacc, d.qacc, rtol=0, atol=1e-6 * (1 + np.abs(d.qacc).max()))
    np.testing.assert_allclose(rs.data.qfrc_constraint.numpy()[0], d.qfrc_constraint, rtol=0,
                               atol=1e-6 * (1 + np.abs(d.qfrc_constraint).max()))


def test_label_islands_stage_alone_against_numpy():
    """convex_solve.label_islands run alone (CPU prefetch off, into L1, into L2) with every output filled
    with a sentinel first, on the rows of a step of three boxes on a plane (two stacked, one apart; 2 envs
    at different poses): the islands from a NumPy union-find over the dof trees joined by each contact's
    two links, numbered by their lowest tree, dofs and rows ascending in each — nisland, dof_island
    (−1 in no island), efc_island, island_dofadr / island_dofs, dof_idof, island_efcadr / island_efcs, and
    island_niter cleared past the count."""
    from polyphys.plugins.rigid import convex_solve
    from polyphys.plugins.rigid.codes import ConstraintType

    stacked = dict(size=(0.2, 0.25, 0.15), pos=(0.7, -0.4, 0.3), euler=(0.0, 0.0, 12.0), rho=500.0)
    scene, ents = _boxes([BOX_A, stacked, BOX_B], n_envs=2)
    ents[0].set_dofs_velocity(np.array([[0.1, 0.0, 0.0, 0.0, 0.3, 0.0], [0.0, -0.2, 0.0, 0.4, 0.0, 0.1]]))
    for _ in range(120):
        scene.step()
    s = scene.solver("rigid")
    d, v, hm = s.data, s.views["all"], s.hm
    outs = ("nisland", "dof_island", "efc_island", "island_dofadr", "island_dofs", "dof_idof", "island_efcadr",
            "island_efcs", "island_niter")
    got = {}
    for pf in (2, 1, 0):
        for k in outs:
            a = getattr(d, k)
            a.assign(np.full(a.numpy().shape, -7, np.int32))
        convex_solve.invalidate_labels(d)     # a relabelling (unchanged rows would keep the labels)
        convex_solve.label_islands(v, prefetch=pf)
        got[pf] = {k: getattr(d, k).numpy().copy() for k in outs}
    for k in outs:
        np.testing.assert_array_equal(got[1][k], got[2][k])
        np.testing.assert_array_equal(got[0][k], got[2][k])
    g = got[2]
    nv = s.n_dofs
    parent = np.asarray(hm.dof_parent)
    root = np.arange(nv)
    for j in range(nv):
        if parent[j] >= 0:
            root[j] = root[parent[j]]
    link_dof_last = s.model.link_dof_last.numpy()
    nefc, eid = d.nefc.numpy(), d.efc_id.numpy()
    assert (d.efc_type.numpy()[0, :nefc[0]] >= int(ConstraintType.CONTACT_FRICTIONLESS)).all()    # contact rows only
    con_link = d.con_link.numpy()
    two = 0
    for e in range(2):
        uf = list(range(nv))

        def find(t, uf=uf):
            while uf[t] != t:
                t = uf[t]
            return t

        row_tree = []
        for r in range(nefc[e]):
            trees = [root[link_dof_last[lk]] for lk in con_link[e, eid[e, r], :2] if lk >= 0 and link_dof_last[lk] >= 0]
            a, b = find(trees[0]), find(trees[-1])
            uf[max(a, b)] = min(a, b)
            row_tree.append(trees[0])
        used = sorted({find(t) for t in row_tree})
        isl_of = {t: k for k, t in enumerate(used)}
        n = len(used)
        two += n >= 2
        assert g["nisland"][e] == n
        dof_isl = np.array([isl_of.get(find(root[j]), -1) for j in range(nv)])
        np.testing.assert_array_equal(g["dof_island"][e, :nv], dof_isl)
        efc_isl = np.array([isl_of[find(t)] for t in row_tree])
        np.testing.assert_array_equal(g["efc_island"][e, :nefc[e]], efc_isl)
        for k in range(n):
            dofs = np.nonzero(dof_isl == k)[0]
            rows = np.nonzero(efc_isl == k)[0]
            a0, a1 = g["island_dofadr"][e, k], g["island_dofadr"][e, k + 1]
            np.testing.assert_array_equal(g["island_dofs"][e, a0:a1], dofs)
            np.testing.assert_array_equal(g["dof_idof"][e, dofs], np.arange(len(dofs)))
            r0, r1 = g["island_efcadr"][e, k], g["island_efcadr"][e, k + 1]
            np.testing.assert_array_equal(g["island_efcs"][e, r0:r1], rows)
        assert (g["dof_idof"][e, :nv][dof_isl < 0] == -1).all()
        assert (g["island_niter"][e, n:nv] == 0).all()
    assert two == 2          # both envs: the stack and the lone box are separate islands


@pytest.mark.parametrize("cone,precision", [("pyramidal", "64"), ("elliptic", "64"), ("pyramidal", "32")])
def test_island_solved_in_place_equals_gathered(cone, precision):
    """convex_solve.solve run alone, cold-started from qacc_smooth, with every output and scratch array filled
    with NaN (int outputs with −7) first: Newton solving an island whose dofs and rows are contiguous blocks in
    place, over the env's arrays (``inplace=True``), gives bit for bit what gathering every island into the
    island arrays gives (``inplace=False``) — qacc, forces, states, Jᵀf, iteration counts and statistics — on
    three boxes (box A with a box stacked on it, and box B apart: the stack's dofs 0-5 and 12-17 are not
    contiguous, so it is gathered, while box B's island is solved in place; 2 envs at different poses; both
    cones, float64 and float32), and both paths were taken by an island that iterated. The next-env CPU prefetch
    (off, into L1, into L2: kernels/convex_solve.cpp) leaves every output byte-identical as well, and so does
    the in-place 6-dof island's Newton loop run from its copy compiled for nv = 6 or from the general one
    (``fixed6``; box B's island has 6 dofs and iterates in place)."""
    from polyphys.plugins.rigid import convex_solve

    stacked = dict(size=(0.2, 0.25, 0.15), pos=(0.7, -0.4, 0.75), euler=(0.0, 0.0, 12.0), rho=500.0)
    scene, ents = _boxes([BOX_A, BOX_B, stacked], n_envs=2, precision=precision, friction_cone=cone,
                         contact_resolution="convex")
    ents[1].set_dofs_velocity(np.array([[0.3, 0.0, 0.0, 0.0, 0.2, 0.0], [0.0, -0.4, 0.0, 0.5, 0.0, 0.1]]))
    for _ in range(100):
        scene.step()
    s = scene.solver("rigid")
    d, v = s.data, s.views["all"]
    assert int(s.model.opt.islands) == 1
    warm = wp.clone(d.qacc_smooth)
    floats = ("qacc_warmstart", "efc_force", "qfrc_constraint", "solver_stat", "solver_jar", "solver_jv", "solver_grad",
              "solver_search", "solver_ma", "solver_mv", "solver_H", "solver_LM", "iM", "iefc_J", "iacc", "igrad", "ima",
              "iefc_force", "iefc_jar", "ifrc_constraint")
    ints = ("efc_state", "solver_niter", "island_niter", "iefc_span", "iefc_state")
    got = {}
    for inplace, pf, fixed6 in ((False, 2, True), (True, 2, True), (True, 1, True), (True, 0, True), (True, 2, False)):
        # (the View's arrays: its scratch (model.SCRATCH_FIELDS) is its own one-env block on CPU)
        for k in floats:
            a = M.scratch_block(getattr(v.d, k))
            a.assign(np.full(a.shape, np.nan, a.numpy().dtype))
        for k in ints:
            a = M.scratch_block(getattr(v.d, k))
            a.assign(np.full(a.shape, -7, np.int32))
        # each env's dense M written by the solve, as in the step (d.qM is one block per View: model._qm_scratch)
        convex_solve.solve(v, warm, prefetch=pf, inplace=inplace, fixed6=fixed6, mass_hd=s._hd_solve)
        got[inplace, pf, fixed6] = {k: getattr(d, k).numpy().copy() for k in ("qacc_warmstart", "efc_force", "efc_state",
                                                                  "qfrc_constraint", "solver_niter", "island_niter",
                                                                  "solver_stat")}
    nefc = d.nefc.numpy()
    for key in ((True, 2, True), (True, 1, True), (True, 0, True), (True, 2, False)):
        for k, a in got[key].items():
            assert a.tobytes() == got[False, 2, True][k].tobytes(), (key, k)
    got[True] = got[True, 2, True]
    for e in range(2):
        assert np.isfinite(got[True]["qacc_warmstart"][e]).all()
        assert np.isfinite(got[True]["efc_force"][e, :nefc[e]]).all()
        assert np.isfinite(got[True]["qfrc_constraint"][e]).all()
    # which islands iterated, and whether each was contiguous (in place) or not (gathered)
    nisl, dadr, dofs = d.nisland.numpy(), d.island_dofadr.numpy(), d.island_dofs.numpy()
    radr, rows, niter = d.island_efcadr.numpy(), d.island_efcs.numpy(), got[True]["island_niter"]
    kinds = set()
    for e in range(2):
        assert nisl[e] == 2
        for k in range(nisl[e]):
            dd = dofs[e, dadr[e, k]:dadr[e, k + 1]]
            rr = rows[e, radr[e, k]:radr[e, k + 1]]
            if niter[e, k] > 0:
                contiguous = bool(dd[-1] - dd[0] == len(dd) - 1 and rr[-1] - rr[0] == len(rr) - 1)
                kinds.add(contiguous)
                if contiguous:
                    assert len(dd) == 6          # the in-place island is a free body: the nv = 6 copy ran
    assert kinds == {True, False}


_GATHER_XML = """
<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom type="plane" size="5 5 0.1"/>
    <body name="a" pos="0.05 -0.1 0.12" euler="0 0 17"><freejoint/><geom type="box" size="0.2 0.15 0.12" density="600"/></body>
    <body name="t" pos="1.5 0.3 0.1" euler="0 0 -25"><freejoint/><geom type="box" size="0.3 0.2 0.1" density="500"/>
      <body name="f1" pos="0.3 0 0"><joint type="hinge" axis="0 1 0"/>
        <geom type="box" size="0.15 0.1 0.05" pos="0.15 0 0" density="300"/></body>
      <body name="f2" pos="-0.3 0 0"><joint type="hinge" axis="0.2 1 0"/>
        <geom type="box" size="0.15 0.1 0.05" pos="-0.15 0 0" density="300"/></body>
    </body>
    <body name="b" pos="0.07 -0.08 0.355" euler="0 0 40"><freejoint/><geom type="box" size="0.1 0.12 0.12" density="400"/></body>
    <body name="c" pos="1.48 0.32 0.29" euler="0 0 10"><freejoint/><geom type="box" size="0.1 0.1 0.09" density="400"/></body>
  </worldbody>
</mujoco>
"""


def _segments(x):
    """(lo, g0, g1, hi) of a row x: first / last + 1 nonzero and its longest inner run of zeros (the first of
    equal ones; none: g0 = g1 = hi), as kernels/linalg.cpp `jseg`."""
    nz = np.nonzero(x != 0)[0]
    lo, hi = int(nz[0]), int(nz[-1]) + 1
    g0 = g1 = hi
    best, k = 0, lo
    while k < hi:
        if x[k] == 0:
            z = k
            while x[k] == 0:
                k += 1
            if k - z > best:
                best, g0, g1 = k - z, z, k
        else:
            k += 1
    return lo, g0, g1, hi


@pytest.mark.parametrize("precision", ["64", "32"])
def test_island_gather_packed_stage(tmp_path, precision, monkeypatch):
    """The gather of an island whose dofs and rows are not contiguous (kernels/convex_solve.cpp
    island_gather_native, Newton: packed): with the island arrays and the span cache NaN-filled first, the
    convex solve (iterations 0, tolerance 0: every island is gathered, none iterates) leaves the last island's
    M block at row stride nd equal to d.qM at its dofs (a free body with two hinged flaps: sibling dofs whose
    entry is zero, the ancestors' entries in both triangles), its J rows at row stride nd equal to efc_J at
    its rows and dofs over each row's two nonzero segments, its row segments (iefc_span) and the span cache (M's rows'
    spans, J's rows' packed segments) equal NumPy's, on 2 envs at different states, with J NaN inside each row's
    recorded inner run of zeros (efc_seg: the gather skips the island's dofs there; some rows have them). Fails
    with the gather at the island arrays' own strides, without the transposed ancestor entries, or reading J
    inside the run (before Round 16)."""
    from polyphys.plugins.rigid import convex_solve

    path = tmp_path / "gather.xml"
    path.write_text(_GATHER_XML.strip())
    from polyphys.plugins.rigid import model as M

    monkeypatch.setattr(M, "_qm_scratch", False)   # d.qM per env: the solve below reads each env's after the step
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.005, precision=precision, graph_capture=False),
                           rigid=RigidOptions(constraint_islands=True, constraint_solver="Newton"))
    ent = scene.add_entity(morphs.MJCF(file=str(path)), Rigid())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        scene.build(n_envs=2)
    qvel = np.zeros((2, ent.n_dofs))
    qvel[1, 12:14] = (0.8, -0.5)          # env 1: the flaps swing
    qvel[1, 14:17] = (0.1, -0.2, 0.0)
    ent.set_dofs_velocity(qvel)
    for _ in range(25):
        scene.step()
    s = scene.solver("rigid")
    d = s.data
    # J inside each row's recorded inner run of zeros (efc_seg [g0, g1): exact zeros no product reads) set to NaN:
    # the gather must not read it (it skips the island's dofs there), so everything below is as with the zeros
    J = d.efc_J.numpy().copy()
    seg = d.efc_seg.numpy()
    Jn = J.copy()
    for e in range(2):
        for r in range(int(d.nefc.numpy()[e])):
            lo_, g0_, g1_, hi_ = seg[e, r]
            if lo_ >= 0:
                assert not J[e, r, g0_:g1_].any()
                Jn[e, r, g0_:g1_] = np.nan
    d.efc_J.assign(Jn)
    # each env solved alone in a View of its own, its island arrays read from that View's scratch block (on CPU one
    # block for all a View's envs: model.SCRATCH_FIELDS)
    iM, iJ, ispan, LM = [], [], [], []
    for e in range(2):
        v = M.view(s.model, d, e, e + 1, precision, "cpu")
        blk = {k: M.scratch_block(getattr(v.d, k)) for k in ("iM", "iefc_J", "solver_LM", "solver_H", "iefc_span")}
        for k in ("iM", "iefc_J", "solver_LM", "solver_H"):
            blk[k].assign(np.full(blk[k].shape, np.nan, blk[k].numpy().dtype))
        blk["iefc_span"].assign(np.full(blk["iefc_span"].shape, -7, np.int32))
        it0, tol0 = int(v.m.opt.iterations), float(v.m.opt.tolerance)
        v.m.opt.iterations = 0
        v.m.opt.tolerance = 0.0
        try:
            convex_solve.solve(v, wp.clone(d.qacc_smooth[e:e + 1]), inplace=False)
        finally:
            v.m.opt.iterations = it0
            v.m.opt.tolerance = tol0
        for out, k in ((iM, "iM"), (iJ, "iefc_J"), (ispan, "iefc_span"), (LM, "solver_LM")):
            out.append(blk[k].numpy()[0].copy())
    qM = d.qM.numpy()
    nisl, dadr, dofs_all = d.nisland.numpy(), d.island_dofadr.numpy(), d.island_dofs.numpy()
    radr, rows_all = d.island_efcadr.numpy(), d.island_efcs.numpy()
    for e in range(2):
        assert nisl[e] == 2
        k = nisl[e] - 1
        dofs = dofs_all[e, dadr[e, k]:dadr[e, k + 1]]
        rows = rows_all[e, radr[e, k]:radr[e, k + 1]]
        nd, nr = len(dofs), len(rows)
        # what the test claims: the island holds the flapped body (siblings 12 and 13) and is not contiguous
        assert {12, 13} <= set(dofs.tolist()) and dofs[-1] - dofs[0] != nd - 1 and nr > 0
        want_m = qM[e][np.ix_(dofs, dofs)]
        assert want_m[list(dofs).index(12), list(dofs).index(13)] == 0
        np.testing.assert_array_equal(iM[e].ravel()[:nd * nd].reshape(nd, nd), want_m)
        cj = iJ[e].ravel()[:nr * nd].reshape(nr, nd)
        sc = LM[e].ravel()
        for a in range(nd):
            nz = np.nonzero(want_m[a] != 0)[0]
            assert (sc[2 * a], sc[2 * a + 1]) == (nz[0], nz[-1] + 1)
        skipped = 0
        for q in range(nr):
            x = J[e, rows[q], dofs]
            lo, g0, g1, hi = _segments(x)
            np.testing.assert_array_equal(cj[q, lo:g0], x[lo:g0])
            np.testing.assert_array_equal(cj[q, g1:hi], x[g1:hi])
            assert tuple(ispan[e][q]) == (lo, g0, g1, hi)
            assert (sc[2 * nd + 2 * q], sc[2 * nd + 2 * q + 1]) == (lo + 4096 * g0, g1 + 4096 * hi)
            s0, s1 = seg[e, rows[q], 1], seg[e, rows[q], 2]
            skipped += any(s0 <= dof < s1 for dof in dofs)
        assert skipped > 0
