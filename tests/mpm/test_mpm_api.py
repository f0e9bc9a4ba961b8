"""MPM API: options and material validation, bad input, getters/setters, batch, reset, checkpoint,
capture, the grid-node ParticleView, and stage-by-stage NaN-filled outputs."""

import math

import numpy as np
import polyphys
import pytest
from mpm_helpers import LO, M, cube, make_scene
from polyphys import morphs
from polyphys.errors import BuildError, OptionError, PolyphysWarning
from polyphys.plugins.mpm import MPMOptions
from polyphys.plugins.mpm.sampling import sample
from polyphys.sampling import winding_number
from polyphys.views import ParticleView


# -- options and materials ---------------------------------------------------------------------
@pytest.mark.parametrize("kw, words", [
    ({"boundary": "bouncy"}, ["boundary", "bouncy", "sticky"]),
    ({"boundary": ("slip", "sticky")}, ["boundary", "triple", "x, y and z"]),
    ({"grid_density": 0}, ["grid_density", "> 0"]),
    ({"lower_bound": (0, 0, 1), "upper_bound": (1, 1, 0.5)}, ["lower_bound", "upper_bound"]),
    ({"boundary_padding": 1}, ["boundary_padding", ">= 3"]),
    ({"friction": -1.0}, ["friction", ">= 0"]),
    ({"planes": [((0, 0, 0), (0, 0, 0))]}, ["planes", "non-zero"]),
    ({"lower_bound": (0, 0, 0), "upper_bound": (0.03, 1, 1), "grid_density": 32}, ["cells", "grid_density"]),
    ({"cfl_check": "maybe"}, ["cfl_check", "error"]),
    ({"lower_bound": (0, 0)}, ["lower_bound", "3 finite numbers"]),
])
def test_options_errors_name_field_and_allowed(kw, words):
    with pytest.raises(OptionError) as exc:
        MPMOptions(**kw)
    for w in words:
        assert w in str(exc.value)


@pytest.mark.parametrize("make, words", [
    (lambda: M.Elastic(E=-1.0), ["Elastic.E", "-1.0", "> 0"]),
    (lambda: M.Elastic(nu=0.5), ["nu", "0.5", "[0.0, 0.5)"]),
    (lambda: M.Elastic(model="hooke"), ["model", "hooke", "corotated"]),
    (lambda: M.Sand(friction_angle=95.0), ["friction_angle", "95.0"]),
    (lambda: M.Sand(cone="plane"), ["cone", "plane", "compression", "shear"]),
    (lambda: M.Sand(friction_angle=70.0, cone="shear"), ["friction_angle", "70.0", "shear", "60"]),
    (lambda: M.Snow(theta_c=1.5), ["theta_c", "1.5"]),
    (lambda: M.ElastoPlastic(yield_stress=0.0), ["yield_stress", "> 0"]),
    (lambda: M.Liquid(rho=0), ["rho", "> 0"]),
])
def test_material_errors(make, words):
    with pytest.raises(OptionError) as exc:
        make()
    for w in words:
        assert w in str(exc.value)


def test_materials_registered_in_family():
    assert set(dir(polyphys.materials.MPM)) >= {"Elastic", "ElastoPlastic", "Snow", "Sand", "Liquid"}
    s = M.Sand(friction_angle=30.0)
    assert s.alpha == pytest.approx(math.sqrt(2 / 3) * 2 * 0.5 / 2.5)


@pytest.mark.parametrize("phi", [25.0, 40.0])
def test_sand_cone_matches(phi):
    # steady simple shear with equal normal stresses (a surface avalanche): ‖dev τ‖ = √2·τ, p = σ, so the
    # cone ‖dev τ‖ ≤ 3αp stops the flow at tan β = 3α/√2. "shear" puts β at φ; Klar's "compression"
    # cone (the default) through the Mohr–Coulomb triaxial-compression meridian puts it 3–5° above
    shear, comp = M.Sand(friction_angle=phi, cone="shear"), M.Sand(friction_angle=phi)
    assert math.degrees(math.atan(3 * shear.alpha / math.sqrt(2))) == pytest.approx(phi, rel=1e-12)
    s = math.sin(math.radians(phi))
    assert comp.alpha == pytest.approx(math.sqrt(2 / 3) * 2 * s / (3 - s), rel=1e-12)
    beta = math.degrees(math.atan(3 * comp.alpha / math.sqrt(2)))
    assert beta == pytest.approx({25.0: 29.6, 40.0: 43.4}[phi], abs=0.05)
    e = M.Elastic(E=1e4, nu=0.25)
    assert e.mu == pytest.approx(4000.0) and e.lam == pytest.approx(4000.0)


# -- bad input at build ------------------------------------------------------------------------
def test_particles_outside_domain_name_entity_and_bounds():
    scene = polyphys.Scene(mpm=MPMOptions(lower_bound=(-0.3, -0.2, 0.1), upper_bound=(0.2, 0.3, 0.6), grid_density=32))
    with pytest.raises(OptionError) as exc:
        scene.add_entity(morphs.Box(size=(0.1, 0.1, 0.1), pos=(0.05, 0.1, 0.58)), M.Elastic(), name="lid")
    msg = str(exc.value)
    assert "'lid'" in msg and "upper_bound=(0.2, 0.3, 0.6)" in msg and "0.6217" in msg and "walls at" not in msg
    # a domain that is not a whole number of cells: the error gives the walls' exact position
    scene = polyphys.Scene(mpm=MPMOptions(lower_bound=(-0.3, -0.3, 0.0), upper_bound=(0.3, 0.3, 0.6), grid_density=32))
    with pytest.raises(OptionError) as exc:
        scene.add_entity(morphs.Box(size=(0.1, 0.1, 0.1), pos=(0.3, 0.0, 0.3)), M.Elastic(), name="side")
    assert "walls at [(-0.3125, -0.3125, -0.0125), (0.3125, 0.3125, 0.6125)]" in str(exc.value)


def test_domain_is_the_region_between_the_walls():
    # issue 26: the usable region is [lower_bound, upper_bound] itself (the wall layers lie outside
    # it) and the grid is centred on it. A sand bed resting on the floor z = lower_bound is accepted,
    # at a generic, non-zero lower corner
    o = MPMOptions(lower_bound=(-0.37, 0.21, -0.13), upper_bound=(0.13, 0.71, 0.245), grid_density=32)
    assert o.inner_cells == (16, 16, 12) and o.n_cells == (22, 22, 18)
    assert np.allclose(o.wall_lower, o.lower_bound) and np.allclose(o.wall_upper, o.upper_bound)
    assert np.allclose(o.grid_origin, np.asarray(o.lower_bound) - 3 / 32)
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=2e-3), mpm=o)
    bed = scene.add_entity(morphs.Box(size=(0.5, 0.5, 0.125), pos=(-0.12, 0.46, -0.0675)), M.Sand(E=5e4))
    scene.build()
    z = bed.get_particles_pos()[:, 2]
    assert z.min() == pytest.approx(-0.13 + 1 / 128, abs=1e-6)       # lattice half a spacing above the floor
    # ±0.3 m at 32 cells per metre is 19.2 cells: the grid is centred, the walls 0.4 cell outside each bound
    # (was: usable box [(-0.2062, -0.2062, 0.0938), (0.2313, 0.2313, 0.5312)], off-centre)
    o = MPMOptions(lower_bound=(-0.3, -0.3, 0.0), upper_bound=(0.3, 0.3, 0.6), grid_density=32)
    assert o.inner_cells == (20, 20, 20)
    assert np.allclose(o.wall_lower, (-0.3125, -0.3125, -0.0125)) and np.allclose(o.wall_upper, (0.3125, 0.3125, 0.6125))
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=2e-3), mpm=o)
    scene.add_entity(morphs.Box(size=(0.6, 0.6, 0.1), pos=(0.0, 0.0, 0.05)), M.Sand(E=5e4))
    with pytest.warns(PolyphysWarning, match=r"not a whole number of cells on axis x, y, z.*\(-0.3125, -0.3125, -0.0125\)"):
        scene.build()
    x = scene.solver("mpm").grid_pos.numpy()[0]
    assert np.allclose(x.min(0)[:2], -x.max(0)[:2], atol=1e-7)       # centred on the domain


def test_set_particles_pos_outside_domain_raises():
    scene, (e,) = make_scene([cube()])
    p = e.get_particles_pos()
    p[0] = (0.25, 0.25, 2.0)
    with pytest.raises(OptionError, match="outside the MPM domain"):
        e.set_particles_pos(p)


def test_coarse_grid_warns_with_recommended_density():
    scene = polyphys.Scene(mpm=MPMOptions(lower_bound=(0, 0, 0), upper_bound=(0.5, 0.5, 0.5), grid_density=16,
                                          particle_size=0.01))
    scene.add_entity(morphs.Box(size=(0.05, 0.05, 0.05), pos=(0.25, 0.25, 0.25)), M.Elastic(E=1e3))
    with pytest.warns(PolyphysWarning, match=r"too coarse.*Recommended grid_density = 50"):
        scene.build()


def test_cfl_violation_gives_largest_stable_substep():
    mat = M.Elastic(E=1e7, rho=1000.0)
    c = math.sqrt((mat.lam + 2 * mat.mu) / mat.rho)
    h_max = 0.5 * (1 / 32) / c
    def build(check):
        scene = polyphys.Scene(sim=polyphys.SimOptions(dt=1e-2, substeps=2),
                               mpm=MPMOptions(lower_bound=(0, 0, 0), upper_bound=(0.5, 0.5, 0.5),
                                              grid_density=32, cfl_check=check))
        scene.add_entity(morphs.Box(size=(0.1,) * 3, pos=(0.25,) * 3), mat, name="stiff")
        scene.build()
        return scene
    with pytest.raises(BuildError) as exc:
        build("error")
    msg = str(exc.value)
    assert f"{h_max:.4g}" in msg and "'stiff'" in msg and f"substeps>={math.ceil(1e-2 / h_max)}" in msg
    with pytest.warns(PolyphysWarning, match="largest stable substep"):
        scene = build("warn")
    assert scene.solver("mpm").max_stable_substep() == pytest.approx(h_max)


def test_wrong_morph():
    scene = polyphys.Scene(mpm=MPMOptions())
    with pytest.raises(OptionError, match="samples Box, Sphere"):
        scene.add_entity(morphs.Plane(), M.Elastic())


def test_float64_matches_float32_and_keeps_its_dtype():
    # the same kernels in float64: a cube hitting the floor agrees with float32 to float32 rounding
    # (measured 2e-7 m over 20 steps; bound 1e-5 m), and every float state array is float64
    runs = {}
    for prec in ("32", "64"):
        scene = polyphys.Scene(sim=polyphys.SimOptions(dt=2e-3, substeps=2, precision=prec),
                               mpm=MPMOptions(lower_bound=tuple(LO), upper_bound=tuple(LO + 0.5), grid_density=32,
                                              boundary="separate", friction=0.3))
        e = scene.add_entity(morphs.Box(size=(0.1,) * 3, pos=tuple(LO + (0.25, 0.25, 0.16 - 3 / 32))), M.Elastic(E=5e4))
        scene.build()
        e.set_velocity((0.3, 0.0, -2.0))
        for _ in range(20):
            scene.step()
        runs[prec] = (scene, e.get_particles_pos(), e.get_particles_vel())
    assert np.abs(runs["32"][1] - runs["64"][1]).max() < 1e-5
    # it did hit the floor: launched down at 2 m/s, free flight would end at -2 - g·0.04 s = -2.39 m/s;
    # only the floor can turn the mean velocity upward (measured +1.72 m/s). With the default
    # wall_surface=True the material feels the wall from the wall-surface node z = lower_bound (reach
    # 1.5 dx), about 0.5-0.6 dx above the old contact, and particles are held on that surface: none
    # below it (measured lowest 0.65 dx above it; the old free surface node let it sink 0.55 dx below)
    assert runs["64"][2][:, 2].mean() > 0.0
    assert runs["64"][1][:, 2].min() >= LO[2] - 1e-9
    for k, a in runs["64"][0].solver("mpm").state_arrays().items():
        assert a.numpy().dtype in (np.float64, np.int32), k


def test_setter_shape_errors():
    scene, (e,) = make_scene([cube()], n_envs=2)
    with pytest.raises(OptionError, match=rf"expected \(2, {e.n_particles}, 3\)"):
        e.set_particles_vel(np.zeros((3, e.n_particles, 3)))


# -- sampling ----------------------------------------------------------------------------------
def test_sampling_volumes():
    s = 0.01
    pos, vol = sample(morphs.Box(size=(0.1, 0.2, 0.05), pos=(1, 2, 3), euler=(0, 0, 90)), s)
    assert len(pos) == 10 * 20 * 5 and vol == pytest.approx(1e-6)
    assert np.allclose(pos.mean(0), (1, 2, 3)) and np.ptp(pos[:, 0]) == pytest.approx(0.19)  # rotated
    for morph, exact in [(morphs.Sphere(radius=0.1), 4 / 3 * math.pi * 0.1 ** 3),
                         (morphs.Cylinder(radius=0.08, height=0.1), math.pi * 0.08 ** 2 * 0.1),
                         (morphs.Capsule(radius=0.05, height=0.1), math.pi * 0.05 ** 2 * (0.1 + 4 / 3 * 0.05))]:
        pos, vol = sample(morph, s)
        # a lattice count approximates the volume to about (surface area · s/2)/V: a few percent here
        assert len(pos) * vol == pytest.approx(exact, rel=0.06), type(morph).__name__


def test_mesh_sampling_by_winding_number():
    import trimesh

    sph = trimesh.creation.icosphere(subdivisions=1, radius=0.1)
    pos, vol = sample(morphs.Mesh(vertices=sph.vertices, faces=sph.faces, pos=(0.5, 0.5, 0.5)), 0.01)
    # lattice count × spacing³ ≈ the mesh volume (boundary cells: a few percent at 10 cells per radius)
    assert len(pos) * vol == pytest.approx(sph.volume, rel=0.05) and vol == pytest.approx(0.01 ** 3)
    assert np.allclose(pos.mean(0), (0.5, 0.5, 0.5), atol=2e-3)
    w = winding_number(np.array([[0.0, 0, 0], [0.2, 0, 0]]), sph.vertices, sph.faces)
    assert w[0] == pytest.approx(1.0, abs=1e-6) and w[1] == pytest.approx(0.0, abs=1e-6)


# -- state, batch, reset, checkpoint -----------------------------------------------------------
def _two_bodies(n_envs, graph_capture=True):
    scene, ents = make_scene([cube(0.08, (0.17, 0.25, 0.25), M.Elastic(E=1e4)),
                              cube(0.08, (0.33, 0.25, 0.2), M.Snow(E=1e4))], n_envs=n_envs,
                             dt=4e-3, substeps=2, graph_capture=graph_capture)
    return scene, ents


def _drive(scene, ents, seed=0):
    rng = np.random.default_rng(seed)
    n = max(1, scene.n_envs)
    for e in ents:
        v = rng.normal(scale=0.7, size=(n, 3))
        e.set_velocity(v if scene.batched else v[0])


def _state(scene):
    return scene.solver("mpm").get_state()


def _equal(a, b, rows_a=slice(None), rows_b=slice(None)):
    assert set(a) == {"pos", "vel", "C", "F", "Jp", "active"}
    for k in a:
        assert np.array_equal(a[k][rows_a], b[k][rows_b]), k


def test_getters_shapes_and_setters_write_in_place():
    scene, (a, b) = _two_bodies(3)
    n = a.n_particles
    assert a.get_particles_pos().shape == (3, n, 3)
    assert a.get_particles_F(envs_idx=[1]).shape == (1, n, 3, 3)
    assert a.get_particles_Jp().shape == (3, n) and a.get_particles_active().dtype == bool
    ptr = scene.solver("mpm").vel.ptr
    a.set_particles_vel(np.ones((n, 3)), envs_idx=[2])           # one per-env value broadcast
    assert scene.solver("mpm").vel.ptr == ptr
    v = a.get_particles_vel()
    assert np.all(v[2] == 1.0) and np.all(v[:2] == 0.0) and np.all(b.get_particles_vel() == 0.0)
    a.set_particles_active(np.zeros(n, bool), envs_idx=[0])
    scene.step()
    assert np.array_equal(a.get_particles_pos()[0], a.init_pos.astype(np.float32))   # frozen
    single, (s,) = make_scene([cube()])
    assert s.get_particles_pos().shape == (s.n_particles, 3)
    assert s.get_particles_C().shape == (s.n_particles, 3, 3)


def test_batch_equals_single_runs():
    batched, ents = _two_bodies(3, graph_capture=False)
    _drive(batched, ents)
    start = _state(batched)
    for _ in range(8):
        batched.step()
    end = _state(batched)
    for i in range(3):
        single, _ = _two_bodies(1, graph_capture=False)
        st = single.get_state()
        st["solvers"]["mpm"] = {k: v[i:i + 1] for k, v in start.items()}
        single.reset(st)
        for _ in range(8):
            single.step()
        _equal(end, _state(single), slice(i, i + 1))


def test_reset_one_env_is_isolated_and_fresh():
    scene, ents = _two_bodies(2)
    _drive(scene, ents)
    for _ in range(10):
        scene.step()
    before = _state(scene)
    scene.reset(envs_idx=[0])
    _equal(before, _state(scene), slice(1, 2), slice(1, 2))          # env 1 untouched, bit for bit
    fresh, _ = _two_bodies(2)
    for _ in range(50):                                              # C, F, Jp included
        scene.step()
        fresh.step()
    _equal(_state(scene), _state(fresh), slice(0, 1), slice(0, 1))
    assert not np.array_equal(_state(scene)["vel"][1], _state(fresh)["vel"][1])


def test_checkpoint_continues_bit_exactly(tmp_path):
    scene, ents = _two_bodies(2)
    _drive(scene, ents)
    for _ in range(5):
        scene.step()
    path = scene.save_checkpoint(tmp_path / "mpm.npz")
    for _ in range(10):
        scene.step()
    ref = _state(scene)
    other, _ = _two_bodies(2)
    other.load_checkpoint(path)
    for _ in range(10):
        other.step()
    _equal(ref, _state(other))


def test_captured_equals_uncaptured():
    a, ea = _two_bodies(2, graph_capture=True)
    b, eb = _two_bodies(2, graph_capture=False)
    _drive(a, ea)
    _drive(b, eb)
    for _ in range(10):
        a.step()
        b.step()
    _equal(_state(a), _state(b))


# -- the grid-node ParticleView and stage outputs -------------------------------------------------
def _fill_nan(arr):
    import warp as wp

    host = arr.numpy()
    host[...] = np.nan if np.issubdtype(host.dtype, np.floating) else -7
    arr.assign(host)
    wp.synchronize()


def test_grid_nodes_are_the_particle_view_and_g2p_reads_them():
    scene, (e,) = make_scene([cube()], n_envs=2)
    s = scene.solver("mpm")
    assert isinstance(s, ParticleView) and s.view(ParticleView) is s
    part = scene.layout.partitions[0]
    import warp as wp

    for a in (s.grid_v, s.grid_active):         # the pre-coupling stage writes every node
        _fill_nan(a)
    s.substep_pre_coupling(0, part)
    car = s.particle_carriers(part)
    assert car.kind == "grid_nodes"
    m, v, act, x = car.mass.numpy(), car.vel.numpy(), car.active.numpy(), car.pos.numpy()
    assert np.all(np.isfinite(v)) and set(np.unique(act)) == {0, 1}
    assert np.array_equal(act == 1, m > 0)
    # node mass sums to the particle mass; node positions are the lattice lo + idx·dx
    assert m[0].sum() == pytest.approx(e.mass, rel=1e-5)
    assert np.allclose(x[0, 1], LO - 3 / 32 + (0, 0, 1 / 32)) and x.shape == (part.n_envs, s.n_nodes, 3)
    # a coupler changes grid velocities between the stages: G2P must carry them to the particles
    car.vel.assign(np.broadcast_to(np.array([0.0, 0.5, 0.0], np.float32), v.shape).copy())
    for a in (s.vel, s.C):
        _fill_nan(a)
    s.substep_post_coupling(0, part)
    wp.synchronize()
    vel = e.get_particles_vel()[part.slice]
    assert np.allclose(vel, (0, 0.5, 0), atol=1e-6) and np.abs(e.get_particles_C()[part.slice]).max() < 1e-3


def test_static_plane_holds_a_block():
    # a 20°-tilted sticky plane through (0.25, 0.25, 0.2): the block falls onto it and stops there
    n = (math.sin(math.radians(20)), 0.0, math.cos(math.radians(20)))
    scene, (e,) = make_scene([cube(0.06, (0.25, 0.25, 0.32), M.ElastoPlastic(E=1e4, yield_stress=300.0))], dt=4e-3, substeps=2,
                             planes=[(tuple(LO + (0.25, 0.25, 0.2)), n)])
    dmin = []
    for _ in range(100):
        scene.step()
        p = e.get_particles_pos().astype(float) - LO
        dmin.append(((p - (0.25, 0.25, 0.2)) @ np.array(n)).min())
    # held by the plane: sticky nodes behind it stop particles whose stencil (1.5 dx) reaches them;
    # the plastic block squashes and stops. The condition acts on nodes, so a
    # particle may sink up to half a cell (dx/2) past the plane before the nodes stop it
    assert -0.5 / 32 < min(dmin) and dmin[-1] < 2 / 32
    assert np.linalg.norm(e.get_particles_vel().mean(0)) < 0.05


def test_per_axis_wall_boundaries():
    # boundary = (bx, by, bz): a block sliding along x at 0.5 m/s on the floor keeps its speed over
    # free-slip z walls ("sticky" x/y walls it does not reach) and is stopped by a sticky floor
    assert MPMOptions(boundary=["slip", "separate", "sticky"]).wall_boundaries == (1, 2, 0)
    assert MPMOptions(boundary="slip").wall_boundaries == (1, 1, 1)
    vx = {}
    for floor in ("slip", "sticky"):
        scene, (e,) = make_scene([cube(0.06, (0.2, 0.25, 0.031), M.Elastic(E=1e4))], dt=4e-3, substeps=2,
                                 boundary=("sticky", "sticky", floor))
        e.set_velocity((0.5, 0.0, 0.0))
        for _ in range(10):
            scene.step()
        vx[floor] = float(e.get_particles_vel()[:, 0].mean())
    # slip floor: nothing acts along x (gravity is along z, the x walls are 0.1 m away): 0.5 within
    # the float32 rounding; sticky floor: the bottom layer is held, the block is slowed and tips
    assert abs(vx["slip"] - 0.5) < 1e-4
    assert vx["sticky"] < 0.45


@pytest.mark.parametrize("coupled", [True, False])
def test_legacy_coupler_acts_on_grid_nodes(coupled):
    # a jelly cube dropped on a fixed kinematic sphere: with the default (Legacy) coupler acting on
    # the grid nodes between grid update and G2P it rests on the sphere (top at z = 0.25); with
    # coupler=False it falls through to the floor (z = lower_bound = 0)
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=4e-3, substeps=4), coupler=None if coupled else False,
                           mpm=MPMOptions(lower_bound=(0, 0, 0), upper_bound=(0.5, 0.5, 0.5), grid_density=32))
    scene.add_entity(morphs.Sphere(radius=0.05, pos=(0.25, 0.25, 0.2)), polyphys.materials.Kinematic())
    e = scene.add_entity(morphs.Box(size=(0.1,) * 3, pos=(0.25, 0.25, 0.35)), M.Elastic(E=1e4))
    scene.build()
    assert bool(scene.couplers) == coupled
    for _ in range(60):
        scene.step()
    z = e.get_particles_pos()[:, 2]
    if coupled:
        assert z.min() > 0.2
    else:
        assert z.min() < 0.15
