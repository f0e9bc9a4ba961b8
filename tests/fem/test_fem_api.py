"""FEM API: bad input, meshes, views, batch/reset/checkpoint bit-exactness, captured = uncaptured."""

import numpy as np
import polyphys
import pytest
from polyphys import morphs
from polyphys.errors import OptionError
from polyphys.plugins.fem import FEMOptions
from polyphys.plugins.fem.contract import scene as contract_scene
from polyphys.plugins.fem.materials import Elastic, NeoHookean
from polyphys.views import ParticleView, SurfaceMeshView

TET = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1.0]])


def _build(integrator="explicit", n_envs=0, capture=True, seed=0, drive=True, precision="32", threads=None, **sim):
    ents, opts, drive_fn = contract_scene()
    opts = FEMOptions(integrator=integrator, floor_height=0.0, newton_iters=2, cg_iters=20)
    sc = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=2, graph_capture=capture, precision=precision,
                                                cpu_threads=threads, **sim), fem=opts)
    for m, mat, kw in ents:
        sc.add_entity(m, mat, **kw)
    sc.build(n_envs=n_envs)
    if drive:
        drive_fn(sc, np.random.default_rng(seed))
    return sc


def _state(sc):
    return {k: v.copy() for k, v in sc.solver("fem").get_state().items()}


# -- bad input ---------------------------------------------------------------------------------
def test_materials_reached_through_registry():
    assert polyphys.materials.FEM.Elastic is Elastic
    assert polyphys.materials.FEM.NeoHookean is NeoHookean


@pytest.mark.parametrize("nu", [0.5, 0.6, -1.0])
def test_bad_poisson_ratio(nu):
    with pytest.raises(OptionError, match=r"nu = .*\(-1, 0.5\)"):
        Elastic(nu=nu)
    with pytest.raises(OptionError, match="nu"):
        NeoHookean(nu=nu)


def test_bad_options():
    with pytest.raises(OptionError, match="integrator"):
        FEMOptions(integrator="rk4")
    with pytest.raises(OptionError, match="cg_iters"):
        FEMOptions(cg_iters=0)
    with pytest.raises(OptionError, match="planes"):
        FEMOptions(planes=[((0, 0, 0), (0, 0, 0))])
    with pytest.raises(OptionError, match="domain"):
        FEMOptions(domain=((0, 0, 0), (1, -1, 1)))
    with pytest.raises(OptionError, match="model"):
        Elastic(model="stvk")
    for bad in (0.0, -1e-3, None, float("nan")):
        with pytest.raises(OptionError, match="stick_velocity"):
            FEMOptions(stick_velocity=bad)


def _add(vertices, faces, **kw):
    sc = polyphys.Scene(fem=FEMOptions(integrator="implicit"))
    return sc.add_entity(morphs.Mesh(vertices=vertices, faces=faces), Elastic(), **kw)


def test_inverted_and_degenerate_tets_named():
    v = np.concatenate([TET, TET + [2, 0, 0]])
    with pytest.raises(OptionError, match=r"inverted .*elements \[1\]"):
        _add(v, [[0, 1, 2, 3], [4, 6, 5, 7]])
    flat = v.copy()
    flat[7] = [2.3, 0.3, 0.0]                      # coplanar with 4, 5, 6
    with pytest.raises(OptionError, match=r"degenerate .*elements \[1\]"):
        _add(flat, [[0, 1, 2, 3], [4, 5, 6, 7]])


def test_missing_meshio_is_a_clear_error(monkeypatch, tmp_path):
    import builtins

    real_import = builtins.__import__

    def no_meshio(name, *args, **kwargs):
        if name == "meshio":
            raise ImportError("No module named 'meshio'")
        return real_import(name, *args, **kwargs)

    path = tmp_path / "body.msh"
    path.write_text("not read")
    monkeypatch.setattr(builtins, "__import__", no_meshio)
    with pytest.raises(OptionError, match="optional dependency meshio"):
        polyphys.Scene(fem=FEMOptions()).add_entity(morphs.Mesh(file=str(path)), Elastic())


def test_open_surface_refused():
    import trimesh

    box = trimesh.creation.box()
    with pytest.raises(OptionError, match="not closed"):
        _add(np.asarray(box.vertices), np.asarray(box.faces)[:-2])


def test_bad_add_entity_and_setters():
    with pytest.raises(OptionError, match="unknown arguments"):
        _add(TET, [[0, 1, 2, 3]], colour=1)
    with pytest.raises(OptionError, match="fixed"):
        _add(TET, [[0, 1, 2, 3]], fixed=[7])
    with pytest.raises(OptionError, match="resolution"):
        polyphys.Scene(fem=FEMOptions()).add_entity(morphs.Box(), Elastic(), resolution=0)
    sc = _build(n_envs=2)
    beam = sc.entities[0]
    with pytest.raises(OptionError, match="shape"):
        beam.set_vertices_pos(np.zeros((2, 3, 3)))
    with pytest.raises(OptionError, match="envs_idx"):
        beam.get_vertices_pos(envs_idx=[5])


# -- meshes and views ------------------------------------------------------------------------------
def _surface_volume(pos, tris):
    a, b, c = (pos[tris[:, k]] for k in range(3))
    return np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0


@pytest.mark.parametrize("morph", [morphs.Box(size=(0.3, 0.2, 0.1), euler=(10, 20, 30)),
                                   morphs.Cylinder(radius=0.1, height=0.3), morphs.Sphere(radius=0.1),
                                   morphs.Capsule(radius=0.05, height=0.2), "sphere", "vtu"])
def test_meshes_closed_surface_and_volume(morph, tmp_path):
    import trimesh

    kw = {"resolution": 4}
    if morph == "sphere":
        s = trimesh.creation.icosphere(2, radius=0.1)
        morph = morphs.Mesh(vertices=np.asarray(s.vertices), faces=np.asarray(s.faces))
    elif morph == "vtu":
        meshio = pytest.importorskip("meshio", reason="meshio (optional) reads tet mesh files")
        from polyphys.plugins.fem.mesh import box_mesh

        v, t = box_mesh((0.2, 0.2, 0.2), 2)
        path = str(tmp_path / "cube.vtu")
        meshio.write_points_cells(path, v, [("tetra", t)])
        morph = morphs.Mesh(file=path, pos=(0, 0, 1))
        kw = {}
    sc = polyphys.Scene(fem=FEMOptions(integrator="implicit"))
    e = sc.add_entity(morph, Elastic(), **kw)
    sc.build()
    solver = sc.solver("fem")
    assert isinstance(solver, SurfaceMeshView) and isinstance(solver, ParticleView)
    part = sc.layout.partitions[0]
    surf = solver.surface_mesh(part)
    tris = surf.triangles.numpy()
    pos = surf.pos.numpy()[0]
    # outward, closed boundary: the divergence theorem gives the tet volume
    assert _surface_volume(pos, tris) == pytest.approx(e.rest_volumes.sum(), rel=1e-5)
    car = solver.particle_carriers(part)
    assert car.mass.numpy()[0].sum() == pytest.approx(e.material.rho * e.rest_volumes.sum(), rel=1e-5)
    assert car.pos.shape == (1, e.n_vertices)


# -- batch, reset, checkpoint, capture -------------------------------------------------------------
@pytest.mark.parametrize("integrator", ["explicit", "implicit"])
def test_batch_equals_single_runs(integrator):
    sc = _build(integrator, n_envs=3, seed=0)
    vel = [e.get_vertices_vel() for e in sc.entities]
    for _ in range(10):
        sc.step()
    batched = _state(sc)
    for env in range(3):
        single = _build(integrator, n_envs=0, seed=99)
        for e, v in zip(single.entities, vel):
            e.set_vertices_vel(v[env])
        for _ in range(10):
            single.step()
        s = _state(single)
        for k in s:
            assert np.array_equal(batched[k][env], s[k][0]), (k, env)


@pytest.mark.parametrize("integrator", ["explicit", "implicit"])
def test_reset_env_isolation_and_fresh_continuation(integrator):
    init = _state(_build(integrator, n_envs=2, drive=False))     # the registered initial state
    sc = _build(integrator, n_envs=2, seed=1)
    beam = sc.entities[0]
    active = np.ones((2, beam.n_elements), dtype=bool)
    active[1, 0] = False                              # per-env element flags
    beam.set_elements_active(active)
    fixed = beam.get_fixed_vertices()
    assert fixed[:, 0].all()
    for _ in range(5):
        sc.step()
    before = _state(sc)
    sc.reset(envs_idx=[0])
    after = _state(sc)
    for k in after:
        assert np.array_equal(after[k][1], before[k][1]), k          # env 1 untouched
        assert np.array_equal(after[k][0], init[k][0]), k            # env 0 restored
    assert beam.get_elements_active()[0].all()
    fresh = _build(integrator, n_envs=2, drive=False)
    for _ in range(50 if integrator == "explicit" else 10):
        sc.step()
        fresh.step()
    a, b = _state(sc), _state(fresh)
    for k in a:
        assert np.array_equal(a[k][0], b[k][0]), k


@pytest.mark.parametrize("precision", ["32", "64"])
def test_checkpoint_continues_bit_exactly(tmp_path, precision):
    sc = _build("implicit", n_envs=2, seed=2, precision=precision)
    sc.entities[1].set_fixed_vertices(np.arange(sc.entities[1].n_vertices) < 2, envs_idx=[1])
    for _ in range(3):
        sc.step()
    path = str(tmp_path / "fem.ckpt")
    sc.save_checkpoint(path)
    for _ in range(5):
        sc.step()
    ref = _state(sc)
    # the cube rests on the floor: contacts carrying friction inside the solve are part of the state
    assert (sc.solver("fem").work["contact_lam"].numpy() > 0).sum(axis=1).min() >= 1
    other = _build("implicit", n_envs=2, seed=3, precision=precision)
    other.load_checkpoint(path)
    assert other.entities[1].get_fixed_vertices()[1, :2].all()
    for _ in range(5):
        other.step()
    out = _state(other)
    for k in ref:
        assert ref[k].dtype == (np.float64 if precision == "64" and k != "active" else ref[k].dtype)
        assert np.array_equal(ref[k], out[k]), k


def test_captured_equals_uncaptured():
    a, b = _build("implicit", n_envs=2, capture=True), _build("implicit", n_envs=2, capture=False)
    for _ in range(4):
        a.step()
        b.step()
    sa, sb = _state(a), _state(b)
    for k in sa:
        assert np.array_equal(sa[k], sb[k]), k


def test_implicit_partitions_equal_one_thread():
    """Two worker threads (two env partitions, two graphs) give the one-thread result bit for bit."""
    a, b = _build("implicit", n_envs=3, threads=2), _build("implicit", n_envs=3, threads=1)
    assert len(a.layout.partitions) == 2
    for _ in range(4):
        a.step()
        b.step()
    sa, sb = _state(a), _state(b)
    for k in sa:
        assert np.array_equal(sa[k], sb[k]), k


def test_getters_shapes_unbatched_and_batched():
    sc = _build(n_envs=0)
    beam = sc.entities[0]
    assert beam.get_vertices_pos().shape == (beam.n_vertices, 3)
    assert beam.get_elements_active().shape == (beam.n_elements,)
    assert beam.get_elements_stress().shape == (beam.n_elements, 3, 3)
    # rest state: no stress up to float32 SVD roundoff (~1e-6 strain) times E = 2e4 Pa
    assert np.allclose(beam.get_elements_stress(), 0, atol=1e-5 * beam.material.E)
    sc2 = _build(n_envs=2)
    assert sc2.entities[1].get_vertices_vel().shape == (2, sc2.entities[1].n_vertices, 3)
    assert sc2.entities[0].get_elastic_energy().shape == (2,)


def test_example_scene_runs():
    """examples/fem_cantilever_jelly.toml: the jelly lands on the floor, the cantilever sags and
    its clamped end stays put."""
    import os

    from polyphys import run as runmod

    path = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "fem_cantilever_jelly.toml")
    scene, entities = runmod.build_scene(runmod.parse_file(path))[:2]
    beam, jelly = entities
    clamp = beam.get_fixed_vertices()
    x0 = beam.get_vertices_pos()
    for _ in range(25):                    # 0.5 s: the cube falls 0.4 - 0.075 m in ~0.26 s
        scene.step()
    x = beam.get_vertices_pos()
    assert np.array_equal(x[clamp], x0[clamp])
    assert x[:, 2].min() < x0[:, 2].min() - 1e-3
    assert jelly.get_vertices_pos()[:, 2].min() > -1e-5
    assert jelly.get_pos()[2] < 0.15


def test_implicit_solve_stats():
    """The readback of the last implicit solve: CG stops early once converged, Newton reduces the
    gradient, the line search accepts the full step on a mild problem; explicit has none."""
    sc = _build("implicit", n_envs=2)
    sc.step()
    st = sc.solver("fem").solve_stats()
    assert st["gradient_reduction"].shape == (2, 2) and st["cg_iterations"].shape == (2, 2)
    assert np.all(st["gradient_reduction"][:, 0] == 1.0)
    assert np.all(st["gradient_reduction"][:, 1] < 0.1)
    assert np.all((st["cg_iterations"] >= 1) & (st["cg_iterations"] <= 20))
    assert np.all(st["step"][:, 0] == 1.0)
    with pytest.raises(OptionError, match="implicit"):
        _build("explicit").solver("fem").solve_stats()


@pytest.mark.parametrize("integrator", ["implicit", "explicit"])
def test_one_env_is_bit_identical_for_1_2_3_threads_with_every_stage_split(monkeypatch, integrator):
    """The contract scene's bodies, finer (853 vertices, 3216 tets: 4 and 13 blocks of the fixed-order
    sums), one env, stepped by 1, 2 and 3 worker threads with no minimum share (so every vertex and
    element stage is split, unlike at the default grain): the same bits, contacts and friction
    included."""
    from polyphys.plugins.fem.solver import FEMSolver

    monkeypatch.setattr(FEMSolver, "grain", 1)
    ents, opts, drive = contract_scene()
    res = {"beam": (16, 5, 4), "cube": 6}
    if integrator == "explicit":
        opts = FEMOptions(integrator="explicit", floor_height=0.0, friction=0.5)
    runs = []
    for threads in (1, 2, 3):
        sc = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=2 if integrator == "implicit" else 20,
                                                    cpu_threads=threads), fem=opts)
        for m, mat, kw in ents:
            sc.add_entity(m, mat, **{**kw, "resolution": res[kw["name"]]})
        sc.build()
        s = sc.solver("fem")
        assert (s.n_vertices, s.n_elements) == (853, 3216)
        part = s.layout.partitions[0]
        assert part.workers == threads and all(s._share(part, w, s.n_vertices)[1] > s._share(part, w, s.n_vertices)[0]
                                               for w in range(threads))
        drive(sc, np.random.default_rng(4))
        states = []
        for _ in range(3):
            sc.step()
            states.append(_state(sc))
        runs.append(states)
    assert np.all(np.isfinite(runs[0][-1]["pos"]))
    for threads, states in zip((2, 3), runs[1:], strict=True):
        for step, (a, b) in enumerate(zip(runs[0], states, strict=True)):
            for k in a:
                np.testing.assert_array_equal(b[k], a[k], err_msg=f"{k}, step {step + 1}, cpu_threads={threads} vs 1")


@pytest.mark.parametrize("threads", [2, 3])
def test_nan_check_split_over_the_workers_flags_a_value_in_any_share(monkeypatch, threads):
    """The captured multi-worker step checks a big state on every worker (interfaces.Solver.nan_check,
    each worker a share of every array's columns; forced here on the contract scene by a zero threshold):
    a non-finite value in the first, a middle or the last vertex (each worker's share) is flagged, a clean
    step after the reset is not, and the step program has no serial segment left."""
    from polyphys import interfaces
    from polyphys.errors import SimulationError
    from polyphys.simulator import _Plan, _Stage

    monkeypatch.setattr(interfaces, "_PARALLEL_NAN_CHECK", 0)
    sc = _build("explicit", n_envs=1, threads=threads, nan_policy="raise")
    for _ in range(3):      # warm-up, capture, one replay
        sc.step()
    s = sc.solver("fem")
    part = s.layout.partitions[0]
    assert part.workers == threads
    plans = [seg for seg in sc.simulator._graphs[0] if isinstance(seg, _Plan)]
    assert plans and all(isinstance(seg, _Stage) for plan in plans for seg in plan.segments)
    for vertex in [0, s.n_vertices // 2, s.n_vertices - 1]:
        vel = s.vel.numpy()
        vel[0, vertex, 1] = np.nan
        s.vel.assign(vel)
        with pytest.raises(SimulationError, match=r"env\(s\) \[0\]"):
            sc.step()
        sc.reset(envs_idx=[0])
        sc.step()           # clean again: nothing flagged
        assert np.all(np.isfinite(s.pos.numpy()))


def test_two_threaded_scenes_in_two_threads_and_interpreter_exit():
    """Two scenes with two workers each (their plans on helpers parked in native code between steps),
    stepped at the same time from two Python threads, give the one-thread trajectory bit for bit, and so
    does a forked child that steps one of them; a process that exits with such scenes alive (no close)
    ends at once — the parked helpers are stopped at interpreter exit (a subprocess with a time limit)."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import sys, threading, numpy as np
        sys.path.insert(0, "tests/fem")
        from test_fem_api import _build, _state
        from polyphys.simulator import _Parked
        ref = _build("explicit", n_envs=1, threads=1)
        scenes = [_build("explicit", n_envs=1, threads=2) for _ in range(2)]
        for _ in range(12):
            ref.step()
        out = {}
        def run(i):
            for _ in range(12):
                scenes[i].step()
            out[i] = _state(scenes[i])
        ts = [threading.Thread(target=run, args=(i,)) for i in range(2)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        r = _state(ref)
        assert all(isinstance(sc.simulator._parked.get(0), _Parked) for sc in scenes)
        for i in range(2):
            for k in r:
                np.testing.assert_array_equal(out[i][k], r[k])
        import os
        pid = os.fork()          # a forked child starts its own parked helpers (the parent's threads are not in it)
        if pid == 0:
            for _ in range(3):
                scenes[0].step()
                ref.step()
            a, b = _state(scenes[0]), _state(ref)
            os._exit(0 if all(np.array_equal(a[k], b[k]) for k in a) else 3)
        assert os.waitpid(pid, 0)[1] == 0
        print("OK")
    """)
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[2]
    res = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0 and "OK" in res.stdout, res.stdout + res.stderr
