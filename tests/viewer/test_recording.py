"""Recorded states (polyphys.viewer.Recorder / Recording, `polyphys run` → RUN_DIR/states) and the
USD export of a run: the stage's values are the recorded ones, and the recorded ones are the
scene's getters at that step."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import polyphys
import pytest
from polyphys import morphs
from polyphys.errors import OptionError
from polyphys.viewer import Recorder, Recording, StatesError
from viewer_scenes import run_scene, write_scene


@pytest.fixture(scope="module")
def batched_run(tmp_path_factory):
    """The shared composed scene (2 envs), 30 steps, states every 10 steps, via run_plan."""
    return run_scene(tmp_path_factory.mktemp("vrun"), steps=30, every=10)


def _rigid_scene(n_envs=3):
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=2))
    scene.add_entity(morphs.Plane(), material=polyphys.materials.Rigid(), name="floor")
    box = scene.add_entity(morphs.Box(size=(0.3, 0.2, 0.1), pos=(0.3, -0.2, 0.6), euler=(25, -10, 40)),
                           material=polyphys.materials.Rigid(rho=500.0), name="box",
                           surface=polyphys.materials.Surface(color=(0.9, 0.1, 0.1, 1.0)))
    scene.build(n_envs=n_envs)
    if n_envs:
        box.set_dofs_velocity(np.array([[0.5 * e, -0.3, 0.0, 0.0, 1.0 * e, 0.0] for e in range(n_envs)]))
    return scene, box


def test_recorder_frames_equal_the_getters_at_each_step(tmp_path):
    scene, box = _rigid_scene(3)
    expect_pos, expect_quat, contacts = [], [], []
    with Recorder(scene, tmp_path / "states", every=2):
        expect_pos.append(box.get_links_pos())
        expect_quat.append(box.get_links_quat())
        for i in range(1, 61):
            scene.step()
            if i % 2 == 0:
                expect_pos.append(box.get_links_pos())
                expect_quat.append(box.get_links_quat())
                c = box.get_contacts(is_padded=True)
                contacts.append(int(c["valid_mask"].sum()))
    r = Recording(tmp_path)                        # the run folder's parent of states/ is accepted too
    assert r.n_records == 31
    assert r.steps.tolist() == list(range(0, 61, 2))
    np.testing.assert_allclose(r.times, r.steps * 0.01, rtol=0, atol=1e-12)
    for k in range(r.n_records):
        f = r.frame(k)
        # float32 storage of float getters: equal to float32 rounding
        np.testing.assert_allclose(f["b1.pos"], expect_pos[k], rtol=0, atol=1e-6 * (1 + np.abs(expect_pos[k])).max())
        np.testing.assert_allclose(f["b1.quat"], expect_quat[k], rtol=0, atol=1e-6)
    # the box lands on the floor: contacts recorded, counted once (box-floor, not twice)
    counts = np.diff(r.contact_offsets)
    assert counts[1:].tolist() == contacts
    assert counts[-1] > 0
    f = r.frame(r.n_records - 1)
    assert set(np.unique(f["contact.env"]).tolist()) <= {0, 1, 2}
    assert np.all(f["contact.force"][:, 2] > 0) or np.all(f["contact.force"][:, 2] < 0)
    meta = json.load(open(tmp_path / "states" / "meta.json"))
    assert meta["complete"] and meta["n_records"] == 31
    g = r.content.bodies[1].geoms[0]
    assert g.type == "box" and np.allclose(g.size, (0.15, 0.1, 0.05)) and np.allclose(g.rgba[:3], (0.9, 0.1, 0.1))


def test_run_records_states_the_viewer_replays(batched_run):
    res = batched_run
    st = res.summary["states"]
    assert st["n_records"] == 4 and st["every"] == 10 and st["bytes"] > 0
    r = Recording(res.out_dir)
    assert r.content.n_envs == 2 and r.content.batched
    assert [b.name for b in r.content.bodies] == ["floor", "platform", "box"]
    (jelly,) = r.content.particles
    assert jelly.name == "jelly" and jelly.recorded_fields == ["vel"]
    # the same run's trajectories (get_pos of the box) equal the recorded link 0 pose
    traj = res.trajectories["box/get_pos"]
    np.testing.assert_allclose(r.arrays["b2.pos"][:, :, 0], traj, rtol=0, atol=1e-6)
    assert r.arrays["p0.pos"].shape == (4, 2, jelly.n, 3)
    assert r.arrays["p0.f.vel"].shape == (4, 2, jelly.n)
    # env 1's box was thrown sideways: the envs differ
    assert abs(r.arrays["b2.pos"][-1, 1, 0, 1] - r.arrays["b2.pos"][-1, 0, 0, 1]) > 0.1


def test_states_options_and_errors(tmp_path):
    from polyphys import run

    path = write_scene(tmp_path, steps=2, every=1)
    text = open(path).read()
    off = tmp_path / "off.toml"
    off.write_text(text.replace('fields = ["vel"]', "enabled = false"))
    res = run.run_plan(run.parse_file(off), out_dir=tmp_path / "off", progress=False, plot=False)
    assert "states" not in res.files and res.summary["states"] is None
    with pytest.raises(StatesError, match=r"no recorded states .*\[run.states\] enabled = false"):
        Recording(tmp_path / "off")
    with pytest.raises(StatesError, match="no such run folder"):
        Recording(tmp_path / "missing")
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace('fields = ["vel"]', 'fields = ["temperature"]'))
    with pytest.raises(run.SceneFileError, match=r"run.states: colour by 'temperature': unknown field.*'vel'"):
        run.run_plan(run.parse_file(bad), out_dir=tmp_path / "bad", progress=False, plot=False)
    bad.write_text(text.replace('fields = ["vel"]', "evry = 3"))
    with pytest.raises(run.SceneFileError, match=r"run.states.evry = 3: unknown key"):
        run.parse_file(bad)
    scene, _ = _rigid_scene(0)
    with pytest.raises(OptionError, match=r"Recorder\(every=0\)"):
        Recorder(scene, tmp_path / "x", every=0)


def test_unknown_colour_field_of_a_recording(batched_run):
    r = Recording(batched_run.out_dir)
    assert r.check_fields("vel") == ["vel"]
    with pytest.raises(OptionError, match=r"colour by 'Jp': unknown field; fields recorded in this run: "
                                          r"\['material', 'vel'\]"):
        r.check_fields("Jp")


# -- USD ------------------------------------------------------------------------------------------
def test_usd_stage_holds_the_recorded_states(batched_run, tmp_path):
    pxr = pytest.importorskip("pxr", reason="usd-core is not installed (pip install 'polyphys[usd]')")
    from polyphys.usd_export import export_usd
    from pxr import Gf, Usd, UsdGeom

    del pxr
    out = tmp_path / "run.usd"
    info = export_usd(batched_run.out_dir, out)
    r = Recording(batched_run.out_dir)
    stage = Usd.Stage.Open(str(out))
    assert stage is not None
    assert UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.z
    assert UsdGeom.GetStageMetersPerUnit(stage) == 1.0
    assert stage.GetTimeCodesPerSecond() == pytest.approx(100.0)
    assert info["envs"] == [0, 1]
    offsets = {}
    for e in (0, 1):
        env = stage.GetPrimAtPath(f"/World/env_{e}")
        assert env.IsValid()
        offsets[e] = np.array(UsdGeom.Xformable(env).ComputeLocalToWorldTransform(0).ExtractTranslation())
        link = stage.GetPrimAtPath(f"/World/env_{e}/box/box")
        assert link.IsValid(), [str(p.GetPath()) for p in stage.Traverse()]
        xf = UsdGeom.Xformable(link)
        for k, step in enumerate(r.steps):
            m = xf.ComputeLocalToWorldTransform(Usd.TimeCode(int(step)))
            p, q = r.arrays["b2.pos"][k, e, 0], r.arrays["b2.quat"][k, e, 0]
            # translate and orient are authored from the float32 record: equal after float rounding
            np.testing.assert_allclose(np.array(m.ExtractTranslation()) - offsets[e], p, rtol=0, atol=2e-6)
            rot = np.array(Gf.Matrix3d(m.ExtractRotationMatrix()))          # row-vector convention: R^T
            w, x, y, z = (float(v) for v in q)
            R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                          [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                          [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
            np.testing.assert_allclose(rot.T, R, rtol=0, atol=2e-6)
        box = stage.GetPrimAtPath(f"/World/env_{e}/box/box/box_geom")
        assert box.GetTypeName() == "Cube"
        pts = UsdGeom.Points(stage.GetPrimAtPath(f"/World/env_{e}/jelly"))
        for k, step in enumerate(r.steps):
            got = np.array(pts.GetPointsAttr().Get(Usd.TimeCode(int(step))))
            assert got.shape == (r.content.particles[0].n, 3)
            np.testing.assert_array_equal(got, r.arrays["p0.pos"][k, e])
            w = np.array(pts.GetWidthsAttr().Get(Usd.TimeCode(int(step))))
            assert w.shape == (1,) and w[0] == pytest.approx(2 * r.content.particles[0].radius)
    assert np.linalg.norm(offsets[1] - offsets[0]) >= 1.0          # envs laid out on a grid
    # one env only: at the origin, no other env
    one = export_usd(batched_run.out_dir, tmp_path / "env1.usda", envs=1)
    st1 = Usd.Stage.Open(str(tmp_path / "env1.usda"))
    assert one["envs"] == [1] and not st1.GetPrimAtPath("/World/env_0").IsValid()
    with pytest.raises(OptionError, match=r"env = 5: the run has envs 0..1"):
        export_usd(batched_run.out_dir, tmp_path / "x.usd", envs=5)
    with pytest.raises(OptionError, match=r"must end in .usd"):
        export_usd(batched_run.out_dir, tmp_path / "x.obj")


def test_usd_surface_mesh_points_match(tmp_path):
    pytest.importorskip("pxr", reason="usd-core is not installed (pip install 'polyphys[usd]')")
    from polyphys.usd_export import export_usd
    from pxr import Usd, UsdGeom

    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=4))
    cloth = scene.add_entity(morphs.Mesh(file=_write_quad(tmp_path), pos=(0.1, -0.05, 0.5), euler=(10, 0, 20)),
                             material=polyphys.materials.PBD.Cloth(), name="cloth")
    scene.build(n_envs=0)
    with Recorder(scene, tmp_path / "states", every=1):
        for _ in range(3):
            scene.step()
    r = Recording(tmp_path)
    (s,) = r.content.surfaces
    assert s.n_verts == cloth.n_particles and len(s.triangles) == len(cloth.get_triangles())
    export_usd(tmp_path, tmp_path / "cloth.usd")
    stage = Usd.Stage.Open(str(tmp_path / "cloth.usd"))
    mesh = UsdGeom.Mesh(stage.GetPrimAtPath("/World/env_0/cloth"))
    assert len(mesh.GetFaceVertexIndicesAttr().Get()) == 3 * len(s.triangles)
    for k, step in enumerate(r.steps):
        np.testing.assert_array_equal(np.array(mesh.GetPointsAttr().Get(Usd.TimeCode(int(step)))),
                                      r.arrays["s0.verts"][k, 0])


def _write_quad(folder) -> str:
    n = 6
    xs = np.linspace(-0.2, 0.2, n)
    v = np.array([[x, y, 0.0] for y in xs for x in xs])
    f = []
    for j in range(n - 1):
        for i in range(n - 1):
            a = j * n + i
            f += [(a, a + 1, a + n + 1), (a, a + n + 1, a + n)]
    path = os.path.join(os.fspath(folder), "quad.obj")
    with open(path, "w") as fh:
        fh.writelines(f"v {x} {y} {z}\n" for x, y, z in v)
        fh.writelines(f"f {a + 1} {b + 1} {c + 1}\n" for a, b, c in f)
    return path


def test_cli_export_usd_and_errors(batched_run, tmp_path):
    pytest.importorskip("pxr", reason="usd-core is not installed (pip install 'polyphys[usd]')")
    exe = [sys.executable, "-m", "polyphys"]
    p = subprocess.run([*exe, "export-usd", batched_run.out_dir, str(tmp_path / "o.usd")], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "2 env(s), 4 time codes" in p.stdout
    p = subprocess.run([*exe, "export-usd", str(tmp_path), str(tmp_path / "o2.usd")], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 2 and "no recorded states" in p.stderr


def test_missing_extra_names_it(monkeypatch):
    from polyphys.viewer import MissingExtraError, require

    monkeypatch.setitem(sys.modules, "viser", None)        # `import viser` now raises ImportError
    with pytest.raises(MissingExtraError, match=r"pip install 'polyphys\[viewer\]'"):
        require("viser", "viewer")
    monkeypatch.setitem(sys.modules, "pxr", None)
    from polyphys.usd_export import export_usd

    with pytest.raises(MissingExtraError, match=r"pip install 'polyphys\[usd\]'"):
        export_usd("anything", "x.usd")


def test_importing_polyphys_imports_no_viewer_dependency():
    code = ("import sys, polyphys, polyphys.viewer, polyphys.cli; "
            "print(sorted(m for m in ('viser', 'pxr', 'selenium', 'warp') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_a_recording_cut_short_reads_its_whole_records(tmp_path):
    """A run that died mid-write: meta.json not marked complete, the last record half written."""
    scene, _ = _rigid_scene(2)
    with Recorder(scene, tmp_path / "states", every=1):
        for _ in range(4):
            scene.step()
    meta_path = tmp_path / "states" / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["complete"] = False
    meta_path.write_text(json.dumps(meta))
    pos = tmp_path / "states" / "b1.pos.bin"
    pos.write_bytes(pos.read_bytes()[:-10])              # the 5th record of one array is cut
    r = Recording(tmp_path)
    assert r.n_records == 4 and r.steps.tolist() == [0, 1, 2, 3]
    assert r.frame(3)["b1.pos"].shape == (2, 1, 3)


def test_fem_surface_recorded_and_exported_for_every_env(tmp_path):
    pytest.importorskip("pxr", reason="usd-core is not installed (pip install 'polyphys[usd]')")
    from polyphys.usd_export import export_usd
    from pxr import Usd, UsdGeom

    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=4))
    body = scene.add_entity(morphs.Box(size=(0.2, 0.1, 0.12), pos=(0.1, 0.2, 0.5), euler=(15, 0, 30)),
                            material=polyphys.materials.FEM.Elastic(), name="jelly")
    scene.build(n_envs=2)
    with Recorder(scene, tmp_path / "states"):
        for _ in range(2):
            scene.step()
    r = Recording(tmp_path)
    (s,) = r.content.surfaces
    assert s.n_verts == body.n_vertices and np.array_equal(s.triangles, body.surface_triangles)
    np.testing.assert_allclose(r.frame(2)["s0.verts"], body.get_vertices_pos(), rtol=0, atol=1e-6)
    export_usd(tmp_path, tmp_path / "fem.usd")
    stage = Usd.Stage.Open(str(tmp_path / "fem.usd"))
    for e in (0, 1):
        mesh = UsdGeom.Mesh(stage.GetPrimAtPath(f"/World/env_{e}/jelly"))
        assert len(mesh.GetPointsAttr().Get(2)) == body.n_vertices
        assert np.array_equal(np.array(mesh.GetFaceVertexIndicesAttr().Get()).reshape(-1, 3), body.surface_triangles)
