"""SapCoupler.kernel_modules (docs/running.md, "First run"; docs/sap.md): in a SAP scene the Warp
modules the rigid solver and the SAP coupler declare before build — the rigid stage modules, the
rigid solver's contact hand-off module (declared for the coupler that takes its contacts) and the SAP
kernels, with the generic ones' overloads of the scene's precision — are the ones its build and first
steps launch, and none is compiled again after it was loaded."""

import pytest
from polyphys.startup import rebuilt_modules
from sapscenes import plane_and_box

PKGS = ("polyphys.plugins.rigid.kernels.", "polyphys.couplers.sap.kernels.")


@pytest.fixture
def launched(monkeypatch):
    """The Warp modules of every kernel launched from now on (the stages call ``wp.launch``)."""
    import warp as wp

    seen = set()
    launch = wp.launch

    def recording(kernel, *args, **kwargs):
        seen.add(kernel.module.name)
        return launch(kernel, *args, **kwargs)

    monkeypatch.setattr(wp, "launch", recording)
    return seen


@pytest.mark.parametrize("precision", ["64", "32"])
def test_declared_modules_are_the_launched_ones(launched, precision):
    scene, _, _ = plane_and_box(incline=20.0, mu=0.5, lift=0.0005, n_envs=2, precision=precision)
    for _ in range(3):
        scene.step()
    loads = [r for r in scene.kernel_loads if r.owner in ("rigid", "sap coupler")]
    declared = {r.name for r in loads if r.name.startswith(PKGS)}
    assert {"polyphys.plugins.rigid.kernels.contact_handoff", "polyphys.couplers.sap.kernels.sap"} <= declared
    ran = {m for m in launched if m.startswith(PKGS)}
    assert ran == declared, f"launched, not declared: {sorted(ran - declared)}; declared, not launched: {sorted(declared - ran)}"
    assert rebuilt_modules(loads, scene.layout.device) == []
