"""Every registered solver is run through what its capabilities promise (DESIGN "contract test").

The contract runs on every declared device present here; the bit-exact checks run on the devices a
solver declares deterministic. A declared device that is absent (no GPU) is reported as skipped, and
the claim that the kernels compile for it is checked by an NVRTC compile, which needs no GPU.
"""

import importlib
import pkgutil

import pytest
from polyphys import contract, registry


def _present(device: str) -> bool:
    if device == "cpu":
        return True
    import warp as wp

    wp.init()
    return wp.is_cuda_available()


def _cases():
    cases = []
    for rec in registry().all("solver"):
        if rec.spec.contract is None:
            cases.append(pytest.param(rec.name, "cpu", "declares_contract_scene", id=f"{rec.name}-contract"))
            continue
        for device in sorted(rec.spec.capabilities.devices):
            marks = () if _present(device) else pytest.mark.skip(
                reason=f"declared device {device!r} is not present here (its kernels are compile-checked only)")
            for check in contract.checks_for(rec, device):
                cases.append(pytest.param(rec.name, device, check, id=f"{rec.name}-{device}-{check}", marks=marks))
    return cases


@pytest.mark.parametrize("solver, device, check", _cases())
def test_contract(solver, device, check, tmp_path):
    rec = registry().get("solver", solver)
    if check == "declares_contract_scene":
        pytest.fail(f"solver {solver!r} ({rec.provider.distribution}) names no contract scene: its "
                    f"capabilities cannot be tested")
    contract.run_check(rec, check, tmp_path, device=device)


def test_capability_claims_are_consistent():
    for kind in ("solver", "coupler", "importer", "sensor"):
        for rec in registry().all(kind):
            caps = rec.spec.capabilities
            assert caps.tested_devices <= caps.devices, rec.name
            assert caps.deterministic <= caps.tested_devices, rec.name


def test_kinematic_declares_what_issue_promises():
    caps = registry().get("solver", "kinematic").spec.capabilities
    assert caps.batch and caps.reset_envs and caps.checkpoint
    assert caps.precisions == {"32", "64"} and caps.devices == {"cpu", "cuda"}


def _cuda_claims():
    return [pytest.param(kind, rec.name, id=f"{kind}-{rec.name}")
            for kind in ("solver", "coupler") for rec in registry().all(kind)
            if "cuda" in rec.spec.capabilities.devices and rec.provider.distribution == "polyphys"]


@pytest.mark.slow
@pytest.mark.parametrize("kind, name", _cuda_claims())
def test_kernels_compile_for_declared_cuda(kind, name):
    """A plugin declaring "cuda" compiles every kernel for it (NVRTC to PTX, sm_90; no GPU needed).

    Generic kernels compile for the overloads the plugin registers or its contract scene launches
    (both precisions); the shared core kernels (polyphys.kernels) are compiled with each plugin.
    """
    import warp as wp
    from warp._src import context as wpctx

    wp.config.quiet = True
    wp.init()
    core = getattr(getattr(wpctx, "runtime", None), "core", None)
    if core is None or not core.wp_is_cuda_enabled():
        pytest.skip("this Warp build has no CUDA compiler (NVRTC)")
    rec = registry().get(kind, name)
    pkg = rec.spec.target.split(":")[0].rsplit(".", 1)[0]
    top = importlib.import_module(pkg)
    for info in pkgutil.walk_packages(top.__path__, pkg + "."):
        importlib.import_module(info.name)
    if kind == "solver" and rec.spec.contract is not None:
        for precision in sorted(rec.spec.capabilities.precisions):
            contract.build_scene(rec, 2, precision=precision).step()
    compiled, failed = [], []
    for mod_name, module in list(wpctx.user_modules.items()):
        if not (mod_name.startswith(pkg + ".") or mod_name.startswith("polyphys.kernels.")):
            continue
        try:
            wp.compile_aot_module(module, arch=90, use_ptx=True)
            compiled.append(mod_name)
        except RuntimeError as e:
            if "No compilable kernels" not in str(e):
                failed.append(f"{mod_name}: {str(e)[:300]}")
    assert not failed, "\n".join(failed)
    assert compiled, f"{name}: no kernel module compiled"
