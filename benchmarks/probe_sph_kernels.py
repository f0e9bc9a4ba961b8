"""SPH kernel variants against the solver's kernels on a live scene's arrays (issue 25, round 17).

``python -m benchmarks.probe_sph_kernels [N] [--rounds=R] [--variant=NAME ...]``: builds the WCSPH dam break
(a variant ``*-dfsph``: DFSPH; ``bench_sph._pp_scene``, n_envs 1, ``cpu_threads`` 1), runs a few steps, records
the launches of one
uncaptured substep, then for each variant (a copy of plugins/sph/kernels/fluid.py with a change, loaded as
its own Warp module, ``VARIANTS``) relaunches the recorded launch of each kernel the variant changes with
the same inputs, alternating the solver's kernel and the variant's R rounds (thread CPU time; a CPU launch
runs on the calling thread), and checks that every array the launch writes ends bit for bit the same.
Variant ``main``: the kernels as on the main branch (the A/B of this branch's kernels). The solves' launches
are replayed with the env's ``done`` flag cleared (the recorded one is that of a converged solve).
"""

from __future__ import annotations

import importlib.util
import re
import sys
import time
from pathlib import Path

import numpy as np

FLUID = Path(__file__).resolve().parents[1] / "plugins" / "sph" / "kernels" / "fluid.py"


def _main_source(src):
    """The kernels as on main (``git show main:...``): the A/B of a branch's change."""
    import subprocess

    return subprocess.run(["git", "show", "main:plugins/sph/kernels/fluid.py"], cwd=FLUID.parents[3], check=True,
                          capture_output=True, text=True).stdout


def _o3(src):
    return src.replace('wp.set_module_options({"enable_backward": False})',
                       'wp.set_module_options({"enable_backward": False, "optimization_level": 3})')


def _sub(old, new, count=1):
    def edit(src):
        assert src.count(old) >= count, old
        return src.replace(old, new)
    return edit


def _chain(*edits):
    def edit(src):
        for e in edits:
            src = e(src)
        return src
    return edit


# diagnostics (not the same results): what a part of density's scan costs
_NOLIST = _chain(_sub("""                        if nl < cap:
                            list_out[env, base + nl] = k
                            grad_out[env, base + nl] = f
""", ""), _sub("""                    if nl < cap:
                        list_out[env, base + nl] = -k - 1
                        grad_out[env, base + nl] = f
""", ""))
_MASSDIRECT = _sub("mj = mass_in[env, sorted_in[env, k]]", "mj = mass_in[env, k]")
_SCANONLY = _sub("""                if r2 < H2:
                    r = wp.sqrt(r2)
                    mj = mass_in[env, sorted_in[env, k]]""", """                rho += r2
                if r2 < 0.0:
                    r = wp.sqrt(r2)
                    mj = mass_in[env, sorted_in[env, k]]""")

def _same(src):
    return src


_WHILE_DENSITY = _chain(_sub("""            for k in range(start_in[env, row[0]], start_in[env, row[1] + 1]):
                d = xi - spos_in[env, k]            # positions in cell order: a streaming read
                r2 = wp.dot(d, d)
                if r2 < H2:
                    r = wp.sqrt(r2)
                    mj = mass_in[env, sorted_in[env, k]]""", """            k = int(start_in[env, row[0]])
            k_end = start_in[env, row[1] + 1]
            while k < k_end:
                d = xi - spos_in[env, k]            # positions in cell order: a streaming read
                r2 = wp.dot(d, d)
                if r2 < H2:
                    r = wp.sqrt(r2)
                    mj = mass_in[env, sorted_in[env, k]]"""), _sub("""                        if nl < cap:
                            list_out[env, base + nl] = k
                            grad_out[env, base + nl] = f
                        nl += 1
""", """                        if nl < cap:
                            list_out[env, base + nl] = k
                            grad_out[env, base + nl] = f
                        nl += 1
                k += 1
"""))


_NONNEG = _chain(_sub("k = int(start_in[env, row[0]])", "k = wp.max(start_in[env, row[0]], 0)"),
                 _sub("k = int(m.b_start[row[0]])", "k = wp.max(m.b_start[row[0]], 0)"))


_NOBRANCH_W = _sub("""    else:
        if q <= 0.5:
            w = s * (6.0 * q * q * q - 6.0 * q * q + 1.0)
            dw = s_h * (18.0 * q * q - 12.0 * q)
        else:
            a = 1.0 - q
            w = s * 2.0 * a * a * a
            dw = s_h * (-6.0 * a * a)
""", """    else:
        a = 1.0 - q
        inner = q <= 0.5
        w = wp.where(inner, s * (6.0 * q * q * q - 6.0 * q * q + 1.0), s * 2.0 * a * a * a)
        dw = wp.where(inner, s_h * (18.0 * q * q - 12.0 * q), s_h * (-6.0 * a * a))
""")


# diagnostic: XSPH's kernel value from a stored per-pair value (here the gradient factor: timing only)
_W_STORED = _sub("xs -= (2.0 * mj / (rhoi + rhoj)) * kernel_w(r, m.H, m.kernel) * vij",
                 "xs -= (2.0 * mj / (rhoi + rhoj)) * f * vij")


# diagnostic: density specialised to WCSPH and the cubic spline (the run-time switches as constants)
_SPECIAL = _chain(_sub("""                    if wcsph == 0:                  # α (DFSPH only) needs the gradients""",
                       """                    if wp.static(False):"""),
                  _sub("""                    if wcsph == 0:
                        gb += psi * (d * f)""", """                    if wp.static(False):
                        gb += psi * (d * f)"""),
                  _sub("""    w = float(0.0)
    dw = float(0.0)
    if kind == KERNEL_WENDLAND:""", """    w = float(0.0)
    dw = float(0.0)
    if wp.static(False):"""))


# the mass through the sorted index, that index from max(., 0) too (drops its wrap)
_MASS_MAX = _sub("mj = mass_in[env, sorted_in[env, k]]", "mj = mass_in[env, wp.max(sorted_in[env, k], 0)]")


VARIANTS = {"main": (_main_source, ("density", "accelerate", "boundary_pressure")),
            "main-dfsph": (_main_source, ("density", "accelerate", "solve_kappa", "solve_update")),
            "while": (_WHILE_DENSITY, ("density",)),
            "nonneg": (_NONNEG, ("density", "boundary_pressure")),
            "nobranch_w": (_NOBRANCH_W, ("density",)),
            "w_stored": (_W_STORED, ("accelerate",)),
            "special": (_SPECIAL, ("density",)),
            "mass_max": (_MASS_MAX, ("density",)),
            "o3": (_o3, ("density", "accelerate", "boundary_pressure")),
            "nolist": (_NOLIST, ("density",)),
            "massdirect": (_MASSDIRECT, ("density",)),
            "scanonly": (_SCANONLY, ("density",))}


def _load_variant(name, edit):
    src = FLUID.read_text()
    if edit is _main_source:
        src = _main_source(src)
        edit = _same
    src = re.sub(r"@wp\.struct\nclass Model:.*?\n\n\n", "from polyphys.plugins.sph.kernels.fluid import Model\n\n\n",
                 src, count=1, flags=re.S)
    src = edit(src)
    path = Path(f"/tmp/sph_variant_{name}.py")
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(f"polyphys.plugins.sph.kernels._v_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def _record(scene):
    import warp as wp

    sim = scene.simulator
    rec = []
    orig = wp.launch

    def rec_launch(kernel, *args, **kw):
        rec.append((kernel, kw.get("dim"), list(kw.get("inputs") or []), kw.get("device")))
        return orig(kernel, *args, **kw)

    cap = sim.graph_capture
    sim.graph_capture = False
    wp.launch = rec_launch
    try:
        scene.step()
    finally:
        wp.launch = orig
        sim.graph_capture = cap
    first = {}
    for k, dim, inputs, dev in rec:
        first.setdefault(k.key, (k, dim, inputs, dev))
    return first


def _arrays(inputs):
    import warp as wp

    return [a for a in inputs if isinstance(a, wp.array)]


def main(argv) -> None:
    import warp as wp

    from .bench_sph import _pp_scene

    n = int(next((a for a in argv if a.isdigit()), 20000))
    rounds = int(next((a.split("=")[1] for a in argv if a.startswith("--rounds=")), 10))
    names = [a.split("=")[1] for a in argv if a.startswith("--variant=")] or list(VARIANTS)
    with open("/proc/loadavg") as f:
        print("load at start", " ".join(f.read().split()[:3]), flush=True)
    solver = "dfsph" if any(v.endswith("dfsph") for v in names) else "wcsph"
    scene, _ = _pp_scene(n, 1, solver, 1)
    for _ in range(10):
        scene.step()
    first = _record(scene)
    for name in names:
        edit, kernels = VARIANTS[name]
        mod = _load_variant(name, edit)
        for kname in kernels:
            k0, dim, inputs, dev = first[kname]
            k1 = getattr(mod, kname)
            if kname.startswith("solve_"):
                inputs[3].zero_()                   # done_in: the env's solve not converged, so the launch works
            arrs = _arrays(inputs)
            before = [a.numpy().copy() for a in arrs]
            outs = {}
            for tag, k in (("base", k0), ("variant", k1)):
                for a, b in zip(arrs, before):
                    a.assign(b)
                wp.launch(k, dim=dim, inputs=inputs, device=dev)
                outs[tag] = [a.numpy().copy() for a in arrs]
            diff = [j for j, (x, y) in enumerate(zip(outs["base"], outs["variant"]))
                    if not np.array_equal(x.view(np.uint8), y.view(np.uint8))]
            same = "yes" if not diff else f"no (arrays {diff} of {len(arrs)})"
            t = {"base": [], "variant": []}
            for r in range(rounds):
                for tag, k in ((("base", k0), ("variant", k1)) if r % 2 == 0 else (("variant", k1), ("base", k0))):
                    t0 = time.thread_time()
                    wp.launch(k, dim=dim, inputs=inputs, device=dev)
                    t[tag].append(1e3 * (time.thread_time() - t0))
            b, v = np.array(t["base"]), np.array(t["variant"])
            print(f"{name:12s} {kname:18s} base {b.min():7.2f} / {np.median(b):7.2f}  variant {v.min():7.2f} / "
                  f"{np.median(v):7.2f} ms (min / median)  variant/base {v.min() / b.min():.3f} / "
                  f"{np.median(v) / np.median(b):.3f}  bit-identical: {same}", flush=True)
    with open("/proc/loadavg") as f:
        print("load at end", " ".join(f.read().split()[:3]), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
