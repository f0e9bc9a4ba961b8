"""SFSolver.kernel_modules (docs/running.md, "First run"; docs/sf.md, "Performance"): the four SF
kernel modules, with each generic kernel's overload of the scene's precision declared before build,
are the ones the steps launch, and none is compiled again after it was loaded — whichever stages the
options switch on (obstacles, jets, decay, density conservation, viscosity, vorticity, MacCormack or
semi-Lagrangian advection, multigrid or diagonal preconditioner, closed or open domain)."""

import polyphys
import pytest
from polyphys import morphs
from polyphys.startup import rebuilt_modules
from sf_helpers import Emitter, Smoke, center, make_scene

PKG = "polyphys.plugins.sf.kernels."
RES, DX = (12, 10, 14), 0.05

CONFIGS = {
    "closed-mgpcg-maccormack": dict(open_faces=(), conserve_density=True, viscosity=1e-3, vorticity_confinement=0.5,
                                    density_decay=0.1, temperature_decay=0.2, thermal_buoyancy=1.0, smoke_weight=0.2,
                                    max_iterations=10),
    "open-pcg-semi_lagrangian": dict(open_faces=("+z", "-x"), advection="semi_lagrangian", pressure_solver="pcg",
                                     early_exit=False, max_iterations=80),
}


@pytest.fixture
def launched(monkeypatch):
    """The Warp modules of every kernel launched from now on."""
    import warp as wp

    seen = set()
    launch = wp.launch

    def recording(kernel, *args, **kwargs):
        seen.add(kernel.module.name)
        return launch(kernel, *args, **kwargs)

    monkeypatch.setattr(wp, "launch", recording)
    return seen


@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("precision", ["32", "64"])
def test_declared_modules_are_the_launched_ones(launched, precision, config):
    entities = [
        (morphs.Box(size=(0.2, 0.15, 0.2), pos=center(RES, DX), euler=(10.0, 0.0, 0.0)),
         Smoke(density=1.0, temperature=3.0, velocity=(0.1, 0.2, -0.3)), {}),
        (morphs.Sphere(radius=0.08, pos=center(RES, DX, (0.6, 0.5, 0.3))),
         Emitter(rate=2.0, heat=5.0, velocity=(0.0, 0.2, 0.5)), {}),
        (morphs.Box(size=(0.1, 0.12, 0.14), pos=center(RES, DX, (0.35, 0.45, 0.6)), euler=(0.0, 0.0, 20.0)),
         polyphys.materials.Kinematic(), {}),
    ]
    sc, _ = make_scene(n_envs=2, res=RES, dx=DX, precision=precision, entities=entities, **CONFIGS[config])
    sc.build()
    for _ in range(3):
        sc.step()
    sf = next(s for s in sc.solvers if s.name == "sf")
    sf.get_divergence()
    loads = [r for r in sc.kernel_loads if r.owner == "sf" and r.name.startswith(PKG)]
    declared = {r.name for r in loads}
    assert declared == {PKG + m for m in ("advection", "boundary", "forces", "projection")}
    assert all(r.status != "lazy" for r in loads), [(r.name, r.status, r.note) for r in loads]
    ran = {m for m in launched if m.startswith(PKG)}
    assert ran == declared, f"launched, not declared: {sorted(ran - declared)}; declared, not launched: {sorted(declared - ran)}"
    assert rebuilt_modules(loads, sc.layout.device) == []
