"""Placement of the row builder's arrays (benchmarks/results/constraint.md, "Round 11 (rows)"): make_rows on the
same state with its output arrays at different addresses, as an in-process A/B (timing only; the layout, the
strides the kernels see aside, and the numbers are the same).

The builder writes ~16 per-env arrays (efc_J, span, chain, seg and 12 per-row arrays). Each is one CPU
allocation (posix_memalign, 64-byte aligned); large ones come from mmap and so start at the same offset in
a 4 KiB page, which puts row r of every array into the same L1 set (48 KiB, 12-way: 64 sets of 64 bytes).
Variants (one scene, one captured make_rows View; the arrays copied into fresh memory, the View's struct
pointing at the copies):

- ``as-is``: the arrays where the build left them (their offsets mod 4096 are printed);
- ``same``: every written array at offset 0 mod 4096 (the worst case: all rows alias);
- ``stagger``: array k at offset k·320 mod 4096 (5 cache lines apart: no two arrays' rows share a set);
- ``pad``: as ``same``, each env's stride one cache line longer (only where rows are wider than a line);
- ``huge``: the written arrays in memory madvise'd for transparent huge pages (the machine's THP mode is
  ``madvise``: Warp's allocations get 4 KiB pages); ``huge-all``: also the arrays the builder reads.

Before timing, one make_rows of each variant is checked to write byte for byte the same rows.

Variants of the rows themselves: ``pfK`` (make_rows' prefetch mode K), ``sep`` (the contact_params launch, then
make_rows) / ``fuse1`` (make_rows(params=True)); ``main`` (contact_params, then make_rows with Round 10's
prefetch) / ``here`` (make_rows(params=True) with the default prefetch). ``--steps N``: whole steps instead,
main's rows path (separate contact_params, prefetch 1) vs this one, two scenes of the same state in one process.

    PYTHONPATH=. python benchmarks/probe_row_layout.py [--n 1024] [--scenes boxes,humanoid,pile] [--samples 12]
        [--kinds as-is,same,stagger,pad,huge,huge-all,sor,pf0,pf1,pf2,sep,fuse1] [--clock process|thread|wall]
        [--steps 10]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import warp as wp

from benchmarks import profile_constraint as P

wp.config.quiet = True

WRITTEN = ("efc_J", "efc_span", "efc_chain", "efc_seg", "efc_type", "efc_id", "efc_dim", "efc_pos", "efc_margin",
           "efc_vel", "efc_aref", "efc_R", "efc_D", "efc_imp", "efc_frictionloss", "efc_mu")
_KEEP = []


def relocate(x, off, pad=0):
    """A copy of the (contiguous) array x whose data starts at `off` mod 4096 and whose env stride is
    `pad` bytes longer."""
    s0 = x.strides[0] + pad
    nbytes = s0 * x.shape[0] + 8192
    back = wp.empty(nbytes, dtype=wp.uint8, device="cpu")
    _KEEP.append(back)
    start = back.ptr + ((off - back.ptr) % 4096)
    y = wp.array(ptr=start, shape=x.shape, strides=(s0,) + tuple(x.strides[1:]), dtype=x.dtype, device="cpu")
    y.numpy()[...] = x.numpy()
    return y


def relocate_huge(x):
    """A copy of the (contiguous) array x in anonymous memory madvise'd for transparent huge pages (2 MiB)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    big = 2 << 20
    nbytes = x.strides[0] * x.shape[0]
    size = (nbytes + big - 1) // big * big
    raw = libc.mmap(None, size + big, 3, 0x22, -1, 0)
    start = (raw + big - 1) // big * big
    libc.madvise(start, size, 14)
    y = wp.array(ptr=start, shape=x.shape, strides=x.strides, dtype=x.dtype, device="cpu")
    y.numpy()[...] = x.numpy()
    return y


ROW_FIELDS = ("efc_pos", "efc_margin", "efc_vel", "efc_aref", "efc_R", "efc_D", "efc_imp", "efc_frictionloss", "efc_mu",
              "efc_type", "efc_id", "efc_dim", "efc_span", "efc_chain", "efc_seg")
ROW_SLOTS = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14)      # 8-byte slot of each (seg: slots 14-15)


def struct_of_rows(vd, nd):
    """The per-row arrays (and span, chain, seg) as strided views into one (n, R, 16) block of 8-byte slots: a
    row's fields in two cache lines."""
    x = vd.efc_pos
    n, r = x.shape
    k = 16
    back = wp.zeros(n * r * k * 8 + 4096, dtype=wp.uint8, device="cpu")
    _KEEP.append(back)
    base = (back.ptr + 4095) // 4096 * 4096
    for name, slot in zip(ROW_FIELDS, ROW_SLOTS):
        a = getattr(vd, name)
        strides = (r * k * 8, k * 8) + tuple(a.strides[2:])
        y = wp.array(ptr=base + slot * 8, shape=a.shape, strides=strides, dtype=a.dtype, device="cpu")
        y.numpy()[...] = a.numpy()
        setattr(nd, name, y)


READ = ("cdof_w", "cdof_v", "dof_ref", "qvel", "con_pos", "con_frame", "con_dist", "con_margin", "con_link", "con_dim",
        "con_friction", "con_sol", "con_solreffriction", "con_efc_adr", "nefc", "efc_overflow", "ncon")


def variant(vd, kind, dstruct):
    """A Data struct equal to vd with the written arrays relocated per `kind`."""
    nd = dstruct()
    for name in dstruct.vars:
        setattr(nd, name, getattr(vd, name))
    if kind.startswith("as-is") or kind.startswith("pf") or kind.startswith("fuse") or kind in ("sep", "main", "here"):
        return nd
    if kind == "sor":
        struct_of_rows(vd, nd)
        return nd
    for k, name in enumerate(WRITTEN):
        x = getattr(vd, name)
        if kind == "same":
            setattr(nd, name, relocate(x, 0))
        elif kind == "stagger":
            setattr(nd, name, relocate(x, (k * 320) % 4096))
        elif kind == "pad":
            setattr(nd, name, relocate(x, 0, 64 if x.strides[0] > 64 else 0))
        elif kind.startswith("huge"):
            setattr(nd, name, relocate_huge(x))
    if kind == "huge-all":
        for name in READ:
            setattr(nd, name, relocate_huge(getattr(vd, name)))
    return nd


def capture_rows_view(path, d, dt, n, **extra):
    from polyphys.plugins.rigid import constraint_rows as CR

    scene = P.polyphys_scene(path, d, dt, n, constraint_islands=True, **extra)
    got = {}
    o = CR.make_rows

    def rows(v, h=0.0, segs=True, prefetch=2, params=False):
        got.setdefault("rows", (v, h))
        return o(v, h, segs, prefetch, params)

    CR.make_rows = rows
    try:
        scene.step()
    finally:
        CR.make_rows = o
    return scene, got["rows"]


CLOCK = {"process": time.process_time, "thread": time.thread_time, "wall": time.perf_counter,
         "user": lambda: os.times().user, "system": lambda: os.times().system}
TIMER = ["process"]


def pf_of(kind):
    """The make_rows prefetch mode of a variant: ``pfK`` (arrays as allocated), else the default."""
    return int(kind[2:]) if kind.startswith("pf") else (1 if kind == "main" else 2)


def params_of(kind):
    """``sep``: the contact_params launch, then make_rows; ``fuseK``: make_rows(params=K) (the parameters inside)."""
    return int(kind[4:]) if kind.startswith("fuse") else {"sep": -1, "main": -1, "here": 1}.get(kind, 0)


def t_rows(v, h, reps, n, pf=2, params=0):
    from polyphys.plugins.rigid import constraint_rows as CR

    clock = CLOCK[TIMER[0]]
    wp.synchronize()
    t0 = clock()
    for _ in range(reps):
        if params < 0:
            CR.contact_params(v)
        CR.make_rows(v, h, True, pf, max(params, 0))
    wp.synchronize()
    return (clock() - t0) / (reps * n) * 1e6


def t_step(scene, kind, steps, n):
    """steps whole steps of scene with the rows built as variant `kind` (``main``: the contact_params launch,
    then make_rows with Round 10's prefetch; ``here``: the defaults); CPU µs per env-step."""
    from polyphys.plugins.rigid import constraint_rows as CR

    o_rows, o_params = CR.make_rows, CR.contact_params
    if kind == "main":
        def rows(v, h=0.0, segs=True, prefetch=2, params=False):
            if params:
                o_params(v)
            return o_rows(v, h, segs, 1, False)
        CR.make_rows = rows
    clock = CLOCK[TIMER[0]]
    try:
        wp.synchronize()
        t0 = clock()
        for _ in range(steps):
            scene.step()
        wp.synchronize()
    finally:
        CR.make_rows, CR.contact_params = o_rows, o_params
    return (clock() - t0) / (steps * n) * 1e6


def main_steps(a):
    """Whole steps, two scenes of the same settled state in one process (``main`` vs ``here``), ABBA."""
    for name, path, m, d, n, extra in P.settled_scenes(a.scenes.split(","), a.n, a.pile_n):
        sc = {k: P.polyphys_scene(path, d, float(m.opt.timestep), n, constraint_islands=True, **extra)
              for k in ("main", "here")}
        res = {k: [] for k in sc}
        for s in range(a.samples):
            for k in (("main", "here") if s % 2 == 0 else ("here", "main")):
                res[k].append(t_step(sc[k], k, a.steps, n))
        q = {k: sc[k].solver("rigid").data.qpos.numpy().tobytes() for k in sc}
        line = "   ".join(f"{k} {min(r):7.2f} / {sorted(r)[len(r) // 2]:7.2f}" for k, r in res.items())
        print(f"{name} n={n} whole step µs/env-step (min / med of {a.samples} × {a.steps} steps): {line}; "
              f"qpos byte-identical {q['main'] == q['here']}; load {os.getloadavg()[0]:.2f}", flush=True)


def main():
    from polyphys.plugins.rigid.model import DATA, View

    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--pile-n", type=int, default=64)
    ap.add_argument("--scenes", default="boxes,humanoid")
    ap.add_argument("--samples", type=int, default=12)
    ap.add_argument("--kinds", default="as-is,same,stagger,pad")
    ap.add_argument("--clock", default="process", choices=sorted(CLOCK))
    ap.add_argument("--steps", type=int, default=0, help="> 0: time whole steps (main vs here) instead")
    a = ap.parse_args()
    TIMER[0] = a.clock
    if a.steps > 0:
        return main_steps(a)
    kinds = a.kinds.split(",")
    for name, path, m, d, n, extra in P.settled_scenes(a.scenes.split(","), a.n, a.pile_n):
        scene, (v, h) = capture_rows_view(path, d, float(m.opt.timestep), n, **extra)
        prec = "64" if v.scalar == wp.float64 else "32"
        offs = {k: getattr(v.d, k).ptr % 4096 for k in WRITTEN}
        print(f"{name} n={n}: rows per env {v.d.efc_J.shape[1]}, nv {v.d.efc_J.shape[2]}, env stride of a per-row array "
              f"{v.d.efc_pos.strides[0]} B; offsets mod 4096 as allocated: {sorted(set(offs.values()))}", flush=True)
        views = {}
        for k in kinds:
            nd = variant(v.d, k, DATA[prec])
            views[k] = View(m=v.m, d=nd, start=v.start, stop=v.stop, device=v.device, scalar=v.scalar)
        from polyphys.plugins.rigid import constraint_rows as CR

        if os.path.exists("/proc/self/smaps_rollup"):
            hp = [x for x in open("/proc/self/smaps_rollup") if x.startswith("AnonHugePages")]
            th = [x.split()[1] for x in open("/proc/self/status") if x.startswith("Threads")]
            print(f"  process {hp[0].strip() if hp else 'AnonHugePages: ?'}; threads {th}", flush=True)
        ref = None
        for k in kinds:
            if params_of(k) < 0:
                CR.contact_params(views[k])
            CR.make_rows(views[k], h, True, pf_of(k), max(params_of(k), 0))
            wp.synchronize()
            out = b"".join(getattr(views[k].d, f).numpy().tobytes() for f in WRITTEN)
            ref = out if ref is None else ref
            if out != ref:
                for f in WRITTEN:
                    x, y = getattr(views[k].d, f).numpy(), getattr(views[kinds[0]].d, f).numpy()
                    if x.tobytes() != y.tobytes():
                        bad = np.argwhere(~((x == y) | (np.isnan(x) & np.isnan(y))))
                        print(f"    {f} differs at {len(bad)} entries, first {bad[:3].tolist()}: {x[tuple(bad[0])]} vs "
                              f"{y[tuple(bad[0])]}", flush=True)
            print(f"  {k}: rows byte-identical to {kinds[0]}: {out == ref}", flush=True)
        reps = max(3, 5 * 1024 // n // 8)
        res = {k: [] for k in kinds}
        for s in range(a.samples):
            order = kinds if s % 2 == 0 else kinds[::-1]
            for k in order:
                res[k].append(t_rows(views[k], h, reps, n, pf_of(k), params_of(k)))
        import resource
        ru = resource.getrusage(resource.RUSAGE_SELF)
        t_rows(views[kinds[0]], h, reps, n, pf_of(kinds[0]), params_of(kinds[0]))
        ru2 = resource.getrusage(resource.RUSAGE_SELF)
        print(f"  one sample: minor faults {ru2.ru_minflt - ru.ru_minflt}, major {ru2.ru_majflt - ru.ru_majflt}, "
              f"involuntary switches {ru2.ru_nivcsw - ru.ru_nivcsw}, utime {1e6 * (ru2.ru_utime - ru.ru_utime) / (reps * n):.2f} "
              f"stime {1e6 * (ru2.ru_stime - ru.ru_stime) / (reps * n):.2f} µs/env", flush=True)
        line = "   ".join(f"{k} {min(r):6.2f} / {sorted(r)[len(r) // 2]:6.2f}" for k, r in res.items())
        print(f"  make_rows µs/env (min / med of {a.samples}): {line}; load {os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    main()
