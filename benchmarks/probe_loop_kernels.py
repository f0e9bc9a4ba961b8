"""Loop-form A/B of the particle solvers' kernels on a live scene's arrays (issue 25, round 17b).

``python -m benchmarks.probe_loop_kernels SOLVER [--profile] [--step] [--restore] [--threads=T] [--rounds=R]
[--variant=NAME ...]``, SOLVER one of ``pbd`` (granular 37^3), ``mpm`` (elastic box 48 cells), ``fem`` (explicit
box 40x10x10), ``fem-implicit`` (neo-Hookean 20x5x5): builds the scene (n_envs 1, ``cpu_threads`` 1, or T for pbd),
runs a few steps and records the launches of one uncaptured step. ``--profile``: replays every recorded launch in
order, three times, and prints each kernel's thread CPU time per step (which kernel dominates). A variant (a copy
of a kernel file with an edit, loaded as its own Warp module, ``VARIANTS``) relaunches the first recorded launch of
each kernel it changes with the same inputs, alternating the solver's kernel and the variant's R rounds, and checks
that every array the launch writes ends bit for bit the same (the method of ``probe_sph_kernels``). Run on the
branch where a variant landed, its edit no longer applies. ``--restore``: every array restored before each timed
launch (a claimed launch: the claims as recorded).
"""

from __future__ import annotations

import importlib.util
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _sub(old, new, count=1):
    def edit(src):
        assert src.count(old) == count, (src.count(old), old)
        return src.replace(old, new)
    return edit


def _chain(*edits):
    def edit(src):
        for e in edits:
            src = e(src)
        return src
    return edit


_PBD_BUILD_OLD = """        for k in range(rg[0], rg[1]):
            xj = spos_in[env, k]
            d = xi - xj
            if wp.dot(d, d) >= reach2:
                continue
            j = sorted_in[env, k]
            if j == i:
                continue
            if dense == 0:
                if not in_scan_cell(dense, ci, q, cell_of(xj, lower, inv_cell, dims)):
                    continue
            if n < cap:
                nbr_list_out[env, i * cap + n] = j
            n += 1
"""
_PBD_BUILD_WHILE = """        k = wp.max(rg[0], 0)
        k_end = rg[1]
        while k < k_end:
            xj = spos_in[env, k]
            d = xi - xj
            if wp.dot(d, d) < reach2:
                j = sorted_in[env, k]
                ok = j != i
                if ok and dense == 0:
                    ok = in_scan_cell(dense, ci, q, cell_of(xj, lower, inv_cell, dims))
                if ok:
                    if n < cap:
                        nbr_list_out[env, i * cap + n] = j
                    n += 1
            k += 1
"""

_PBD_GATHER_OLD = """        for t in range(nn):
            f, c_, n_ = contact_pair(env, i, nbr_list_in[env, i * cap + t], xi, dxi, ki, gi, ri, wi, lam_i, h, reach2,
                                     kind, group, self_collide, rest_pos, radius, friction, mass, inv_mass0,
                                     free_in, pos_in, pos_prev_in, lam_in)
            acc_f += f
            acc_c += c_
            cnt += n_
"""
_PBD_GATHER_WHILE = """        base = wp.max(i * cap, 0)
        t = int(0)
        while t < nn:
            f, c_, n_ = contact_pair(env, i, nbr_list_in[env, base + t], xi, dxi, ki, gi, ri, wi, lam_i, h, reach2,
                                     kind, group, self_collide, rest_pos, radius, friction, mass, inv_mass0,
                                     free_in, pos_in, pos_prev_in, lam_in)
            acc_f += f
            acc_c += c_
            cnt += n_
            t += 1
"""

_MPM_SCATTER = _sub("""        for t in range(end - counts_in[env, q, s], end):
            scatter_particle(env, order_in[env, base + t], p_mass, lo, inv_dx, dx, ny, nz, pos_in, vel_in,
                             affine_in, grid_mv_out, grid_m_out, grid_mx_out)
""", """        t = wp.max(base + end - counts_in[env, q, s], 0)
        t_end = base + end
        while t < t_end:
            scatter_particle(env, order_in[env, t], p_mass, lo, inv_dx, dx, ny, nz, pos_in, vel_in,
                             affine_in, grid_mv_out, grid_m_out, grid_mx_out)
            t += 1
""")
_MPM_G2P = _sub("""        for p in range(b * STRESS_BLOCK, wp.min((b + 1) * STRESS_BLOCK, n_p)):
            g2p_particle(env, p, lo, inv_dx, dx, ny, nz, h, x_min, x_max, wall_lo, wall_hi, slot, grid_v_in, active_in,
                         pos_out, vel_out, C_out, flags_out, vmax_out)
""", """        p = wp.max(b * STRESS_BLOCK, 0)
        p_end = wp.min((b + 1) * STRESS_BLOCK, n_p)
        while p < p_end:
            g2p_particle(env, p, lo, inv_dx, dx, ny, nz, h, x_min, x_max, wall_lo, wall_hi, slot, grid_v_in, active_in,
                         pos_out, vel_out, C_out, flags_out, vmax_out)
            p += 1
""")
_MPM_STRESS = _sub("""        for p in range(p0, p1):
            s1 = stress_particle(env, p, p_type, p_mu, p_lam, p_par, p_mass, p_vol, lo, inv_dx, ny, nz, n_nodes, h,
                                 pos_in, C_in, active_in, F_out, Jp_out, affine_out, slab_out)
            if s1 >= 0:
                counts_out[env, b, s1] = counts_out[env, b, s1] + 1
""", """        p = wp.max(p0, 0)
        while p < p1:
            s1 = stress_particle(env, p, p_type, p_mu, p_lam, p_par, p_mass, p_vol, lo, inv_dx, ny, nz, n_nodes, h,
                                 pos_in, C_in, active_in, F_out, Jp_out, affine_out, slab_out)
            if s1 >= 0:
                counts_out[env, b, s1] = counts_out[env, b, s1] + 1
            p += 1
""")

_FEM_CORNER = _sub("""    for q in range(v_start[i], v_start[i + 1]):
        acc = acc + corner_in[env, q]
    return acc
""", """    q = wp.max(v_start[i], 0)
    q_end = v_start[i + 1]
    while q < q_end:
        acc = acc + corner_in[env, q]
        q += 1
    return acc
""")

_BINSORT_SCAN = _chain(_sub("""    if n_busy == 0:
        for k in range(k0, k1):
            start_out[env, k] = run
    elif n_busy == 1:
        for k in range(k0, k1):
            start_out[env, k] = run
            c = counts_inout[env, w1, k]
            if c != 0:
                counts_inout[env, w1, k] = wp.where(two_ended * (w1 % 2) != 0, run + c, run)
                run += c
""", """    if n_busy == 0:
        k = wp.max(k0, 0)
        while k < k1:
            start_out[env, k] = run
            k += 1
    elif n_busy == 1:
        k = wp.max(k0, 0)
        while k < k1:
            start_out[env, k] = run
            c = counts_inout[env, w1, k]
            if c != 0:
                counts_inout[env, w1, k] = wp.where(two_ended * (w1 % 2) != 0, run + c, run)
                run += c
            k += 1
"""))

_BINSORT_SCAN_MANY = _sub("""        for k in range(k0, k1):
            start_out[env, k] = run
            for w in range(n_w):""", """        k = wp.max(k0, 0)
        while k < k1:
            start_out[env, k] = run
            for w in range(n_w):""")
_BINSORT_SCAN_ALL = _chain(_BINSORT_SCAN, _BINSORT_SCAN_MANY, _sub("""                        run += c
    if b == block_in.shape[1] - 1:""", """                        run += c
            k += 1
    if b == block_in.shape[1] - 1:"""))


def _before(path):
    """The file as before round 17b (commit ca9496e): the A/B of the landed loops (variant/base = before/now)."""
    import subprocess

    def edit(src):
        return subprocess.run(["git", "show", f"ca9496e:{path}"], cwd=ROOT, check=True, capture_output=True,
                              text=True).stdout
    return edit



def _implicit_before(src):
    """implicit.py with corner_sum as before round 17b (a for-range loop), defined locally."""
    old = """

@wp.func
def corner_sum_range(env: int, i: int, v_start: wp.array(dtype=wp.int32), corner_in: wp.array2d(dtype=vec3),
                     acc: vec3):
    for q in range(v_start[i], v_start[i + 1]):
        acc = acc + corner_in[env, q]
    return acc
"""
    src = src.replace("corner_sum(env, i, v_start, corner_in,", "corner_sum_range(env, i, v_start, corner_in,")
    at = src.index("\n\n@wp.")
    return src[:at] + old + src[at:]


VARIANTS: dict = {
    "pbd_build_while": ("plugins/pbd/kernels/neighbors.py", _sub(_PBD_BUILD_OLD, _PBD_BUILD_WHILE), ("build_neighbors",)),
    "pbd_gather_while": ("plugins/pbd/kernels/neighbors.py", _sub(_PBD_GATHER_OLD, _PBD_GATHER_WHILE), ("particle_gather",)),
    "mpm_scatter_while": ("plugins/mpm/kernels/transfer.py", _MPM_SCATTER, ("p2g_scatter_slabs",)),
    "mpm_g2p_while": ("plugins/mpm/kernels/transfer.py", _MPM_G2P, ("g2p_blocks",)),
    "mpm_stress_while": ("plugins/mpm/kernels/transfer.py", _MPM_STRESS, ("p2g_stress_blocks",)),
    "fem_corner_while": ("plugins/fem/kernels/elastic.py", _FEM_CORNER, ("explicit_vertex_step",)),
    "binsort_scan_while": ("core/kernels/binsort.py", _BINSORT_SCAN, ("scan_local",)),
    "binsort_scan_all": ("core/kernels/binsort.py", _BINSORT_SCAN_ALL, ("scan_local",)),
    # the landed loops against the files before them (the variants above apply to those files only)
    "pbd_before": ("plugins/pbd/kernels/neighbors.py", _before("plugins/pbd/kernels/neighbors.py"),
                   ("build_neighbors", "particle_gather")),
    "fem_before": ("plugins/fem/kernels/elastic.py", _before("plugins/fem/kernels/elastic.py"),
                   ("explicit_vertex_step",)),
    "fem_implicit_before": ("plugins/fem/kernels/implicit.py", _implicit_before, ("gather_gradient", "cg_curvature")),
    "binsort_before": ("core/kernels/binsort.py", _before("core/kernels/binsort.py"), ("scan_local",)),
}


def _scene(solver, threads=1):
    if solver == "pbd":
        from .bench_pbd import _pp_granular_scene
        return _pp_granular_scene(37, 1, threads)
    if solver == "mpm":
        from .bench_mpm import _polyphys
        return _polyphys(48, 1, threads=1)[0]
    if solver in ("fem", "fem-implicit"):
        from .bench_fem import _scene as fem_scene
        if solver == "fem-implicit":
            return fem_scene((20, 5, 5), "implicit", 1, model="neo")[0]
        return fem_scene((40, 10, 10), "explicit", 1)[0]
    raise SystemExit(f"unknown solver {solver}")


def _load_variant(name, path, edit):
    src = edit((ROOT / path).read_text())
    p = Path(f"/tmp/loop_variant_{name}.py")
    p.write_text(src)
    mod_name = "polyphys." + path[:-3].removeprefix("core/").replace("/", ".") + f"_v_{name}"
    spec = importlib.util.spec_from_file_location(mod_name, p)
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
        rec.append((kernel, kw.get("dim"), list(kw.get("inputs") or []) + list(kw.get("outputs") or []),
                    kw.get("device")))
        return orig(kernel, *args, **kw)

    cap = sim.graph_capture
    sim.graph_capture = False
    wp.launch = rec_launch
    try:
        scene.step()
    finally:
        wp.launch = orig
        sim.graph_capture = cap
    return rec


def main(argv) -> None:
    import warp as wp

    solver = argv[0]
    rounds = int(next((a.split("=")[1] for a in argv if a.startswith("--rounds=")), 10))
    names = [a.split("=")[1] for a in argv if a.startswith("--variant=")]
    restore = "--restore" in argv
    with open("/proc/loadavg") as f:
        print("load at start", " ".join(f.read().split()[:3]), flush=True)
    scene = _scene(solver, int(next((a.split("=")[1] for a in argv if a.startswith("--threads=")), 1)))
    for _ in range(5):
        scene.step()
    rec = _record(scene)
    if "--profile" in argv:
        t = defaultdict(list)
        for _ in range(3):
            tot = defaultdict(float)
            for k, dim, inputs, dev in rec:
                t0 = time.thread_time()
                wp.launch(k, dim=dim, inputs=inputs, device=dev)
                tot[k.key] += 1e3 * (time.thread_time() - t0)
            for key, v in tot.items():
                t[key].append(v)
        count = defaultdict(int)
        for k, *_ in rec:
            count[k.key] += 1
        all_ms = sum(min(v) for v in t.values())
        for key, v in sorted(t.items(), key=lambda kv: -min(kv[1])):
            print(f"{key:40s} {count[key]:4d} launches  {min(v):8.2f} ms/step (min of 3)  {100 * min(v) / all_ms:5.1f} %")
    first = {}
    for k, dim, inputs, dev in rec:
        first.setdefault(k.key, (k, dim, inputs, dev))
    for name in names:
        path, edit, kernels = VARIANTS[name]
        mod = _load_variant(name, path, edit)
        for kname in kernels:
            k0, dim, inputs, dev = first[kname]
            k1 = getattr(mod, kname)
            arrs = [a for a in inputs if isinstance(a, wp.array)]
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
                    if restore:                     # a claimed launch: the claims (and all inputs) as recorded
                        for a, x in zip(arrs, before):
                            a.assign(x)
                    t0 = time.thread_time()
                    wp.launch(k, dim=dim, inputs=inputs, device=dev)
                    t[tag].append(1e3 * (time.thread_time() - t0))
            b, v = np.array(t["base"]), np.array(t["variant"])
            print(f"{name:12s} {kname:24s} base {b.min():7.2f} / {np.median(b):7.2f}  variant {v.min():7.2f} / "
                  f"{np.median(v):7.2f} ms (min / median)  variant/base {v.min() / b.min():.3f} / "
                  f"{np.median(v) / np.median(b):.3f}  bit-identical: {same}", flush=True)
    if "--step" in argv and names:
        _step_ab(rec, names, rounds)
    with open("/proc/loadavg") as f:
        print("load at end", " ".join(f.read().split()[:3]), flush=True)


def _step_ab(rec, names, rounds):
    """``--step``: the recorded step replayed whole, launch by launch, with the solver's kernels and with every
    named variant's kernels in their place, alternated ``rounds`` times (thread CPU time per step)."""
    import warp as wp

    swap = {}
    for name in names:
        path, edit, kernels = VARIANTS[name]
        mod = _load_variant(name, path, edit)
        for kname in kernels:
            swap[kname] = getattr(mod, kname)
    t = {"base": [], "variant": []}
    for r in range(rounds):
        for tag in (("base", "variant") if r % 2 == 0 else ("variant", "base")):
            t0 = time.thread_time()
            for k, dim, inputs, dev in rec:
                if tag == "variant":
                    k = swap.get(k.key, k)
                wp.launch(k, dim=dim, inputs=inputs, device=dev)
            t[tag].append(1e3 * (time.thread_time() - t0))
    b, v = np.array(t["base"]), np.array(t["variant"])
    print(f"whole step {'+'.join(names)}: base {b.min():7.2f} / {np.median(b):7.2f}  variant {v.min():7.2f} / "
          f"{np.median(v):7.2f} ms (min / median)  variant/base {v.min() / b.min():.3f} / "
          f"{np.median(v) / np.median(b):.3f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
