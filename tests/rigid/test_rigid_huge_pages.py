"""Large CPU arrays on transparent huge pages (plugins/rigid/model.py ``_advise_huge``; docs/constraint.md,
"Huge pages"): the advice changes neither an array's address, layout nor contents, so a run with it equals a
run without it bit for bit; and where Linux offers transparent huge pages (mode "madvise" or "always",
MADV_COLLAPSE: Linux ≥ 6.1) the row Jacobians of a batch are backed by huge pages after the build."""

import os
import platform
import warnings

import numpy as np
import polyphys
import pytest
from polyphys import morphs
from polyphys.errors import PolyphysWarning
from polyphys.plugins.rigid import RigidOptions
from polyphys.plugins.rigid import model as M
from polyphys.plugins.rigid.materials import Rigid

# three boxes at generic poses dropped onto a plane (the third lands on the first), one spun
BOXES = [dict(size=(0.3, 0.2, 0.25), pos=(0.7, -0.4, 0.2), euler=(5.0, -3.0, 23.0), rho=600.0),
         dict(size=(0.15, 0.35, 0.1), pos=(-1.2, 0.9, 0.12), euler=(0.0, 8.0, 10.0), rho=1500.0),
         dict(size=(0.2, 0.2, 0.2), pos=(0.72, -0.38, 0.55), euler=(11.0, 0.0, -31.0), rho=900.0)]
N_ENVS = 320     # efc_J (n_envs, max_rows, nv): 320 × 192 × 18 float64 ≈ 8.8 MB: several whole 2 MiB extents


def _run(huge: bool, steps: int = 40):
    M._huge_pages = huge
    try:
        scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.004, precision="64"), rigid=RigidOptions(constraint_islands=True))
        scene.add_entity(morphs.Plane(), Rigid())
        ents = [scene.add_entity(morphs.Box(size=b["size"], pos=b["pos"], euler=b["euler"]), Rigid(rho=b["rho"]))
                for b in BOXES]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PolyphysWarning)
            scene.build(n_envs=N_ENVS)
    finally:
        M._huge_pages = True
    rng = np.random.default_rng(3)
    for e in ents:       # a different spin per env
        e.set_dofs_velocity(np.concatenate([rng.normal(0, 0.3, (N_ENVS, 3)), rng.normal(0, 2.0, (N_ENVS, 3))], 1))
    for _ in range(steps):
        scene.step()
    return scene, ents


def _huge_kb(ptr: int, nbytes: int) -> int:
    """AnonHugePages (kB) of the mappings of /proc/self/smaps overlapping [ptr, ptr + nbytes)."""
    total, inside = 0, False
    for line in open("/proc/self/smaps"):
        head = line.split()[0]
        if "-" in head and ":" not in head:
            lo, hi = (int(x, 16) for x in head.split("-"))
            inside = lo < ptr + nbytes and ptr < hi
        elif inside and line.startswith("AnonHugePages:"):
            total += int(line.split()[1])
    return total


def test_huge_page_advice_leaves_the_numbers_unchanged():
    a, ea = _run(True)
    b, eb = _run(False)
    ra, rb = a.solver("rigid"), b.solver("rigid")
    assert int(ra.data.ncon.numpy().sum()) > N_ENVS        # contacts made in the run
    for x, y in zip(ea, eb):
        assert np.array_equal(np.asarray(x.get_qpos()), np.asarray(y.get_qpos()))
        assert np.array_equal(np.asarray(x.get_dofs_velocity()), np.asarray(y.get_dofs_velocity()))
    for k in ("efc_J", "efc_force", "efc_D", "con_pos"):
        assert getattr(ra.data, k).numpy().tobytes() == getattr(rb.data, k).numpy().tobytes(), k


def _thp_mode() -> str:
    try:
        txt = open("/sys/kernel/mm/transparent_hugepage/enabled").read()
    except OSError:
        return "none"
    return txt[txt.index("[") + 1:txt.index("]")]


def _kernel_at_least(major: int, minor: int) -> bool:
    try:
        v = tuple(int(x) for x in platform.release().split("-")[0].split(".")[:2])
    except ValueError:
        return False
    return v >= (major, minor)


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps") or _thp_mode() not in ("madvise", "always")
                    or not _kernel_at_least(6, 1), reason="needs Linux ≥ 6.1 with transparent huge pages")
def test_row_jacobians_are_on_huge_pages():
    scene, _ = _run(True, steps=2)
    J = scene.solver("rigid").data.efc_J
    assert J.capacity >= 2 * M._HUGE
    if _huge_kb(J.ptr, J.capacity) >= 2048:
        return
    # none: either the build did not advise the array, or the kernel refused to collapse (no free huge page on a
    # busy machine). Collapse it here: if the kernel does it now, the build should have — fail; if it refuses, skip.
    import ctypes
    import errno

    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    lo = (J.ptr + M._HUGE - 1) // M._HUGE * M._HUGE
    hi = (J.ptr + J.capacity) // M._HUGE * M._HUGE
    libc.madvise(lo, hi - lo, M._MADV_HUGEPAGE)
    if libc.madvise(lo, hi - lo, M._MADV_COLLAPSE) != 0:
        pytest.skip(f"the kernel refused MADV_COLLAPSE ({errno.errorcode.get(ctypes.get_errno(), '?')})")
    pytest.fail("efc_J had no huge page after the build, though the kernel collapses it on request "
                f"({_huge_kb(J.ptr, J.capacity)} kB now)")
