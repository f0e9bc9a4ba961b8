# ruff: noqa  (a prototype probe, reverted with the prototype: Round 10 of benchmarks/results/constraint.md)
"""PROTOTYPE (Round 10, benchmarks/results/constraint.md): the convex solve stage relaunched from one warm start,
dense J (main) vs packed J (make_rows packs, constraint_rows.PACKED_J) vs dense J with the builder's segments,
two scenes of the same settled state in one process, variants alternated; checks the outputs bit-identical.
``python benchmarks/probe_packed_j.py N SCENES on|off SAMPLES`` (run from the repository root, PYTHONPATH=.)."""
import os
import sys
import time

import warp as wp

wp.config.quiet = True
from polyphys.plugins.rigid import constraint_rows as CR
from polyphys.plugins.rigid import convex_solve as CS

from benchmarks import bench_constraint as B
from benchmarks import profile_constraint as P


def setup(path, d, dt, n, islands, packed, **extra):
    CR.PACKED_J = packed
    scene = P.polyphys_scene(path, d, dt, n, constraint_islands=islands, **extra)
    got = {}
    o1, o2 = CS.solve, CR.make_rows
    def g1(v, qw, *a, **k):
        if "v" not in got:
            got["v"], got["qw"], got["keep"] = v, qw, wp.clone(v.d.qacc_warmstart)
        return o1(v, qw, *a, **k)
    def g2(*a, **k):
        if "ra" not in got:
            got["ra"], got["rk"] = a, k
        return o2(*a, **k)
    CS.solve, CR.make_rows = g1, g2
    try:
        scene.step()
    finally:
        CS.solve, CR.make_rows = o1, o2
    return scene, got

def t_solve(got, n, reps, packed):
    wp.synchronize(); t0 = time.process_time()
    for _ in range(reps):
        wp.copy(got["v"].d.qacc_warmstart, got["keep"])
        CS.solve(got["v"], got["qw"], True, packed)
    wp.synchronize()
    return (time.process_time() - t0) / (reps * n) * 1e6

def t_rows(got, n, reps, packed):
    CR.PACKED_J = packed
    wp.synchronize(); t0 = time.process_time()
    for _ in range(reps):
        CR.make_rows(*got["ra"], **got["rk"])
    wp.synchronize()
    return (time.process_time() - t0) / (reps * n) * 1e6

n = int(sys.argv[1]); scenes = sys.argv[2].split(","); isl = sys.argv[3] == "on"
S = int(sys.argv[4]) if len(sys.argv) > 4 else 20
for name, path, settle, flags in P.scenes(scenes):
    m = B._mj_model(path)
    d = B._settle("humanoid" if name == "humanoid" else name, m, settle)
    nn = 64 if flags.get("pile") else n
    extra = {}
    if flags.get("pile"):
        mc, _, _ = B._mj_stats(m, d)
        extra["max_contacts"] = int(2 * max(mc, 1)) + 32
    sA, A = setup(path, d, float(m.opt.timestep), nn, isl, False, **extra)
    sB, Bp = setup(path, d, float(m.opt.timestep), nn, isl, True, **extra)
    ok = True
    for f in ("qpos", "qvel", "qacc_warmstart", "efc_force", "qfrc_constraint"):
        a = getattr(A["v"].d, f).numpy(); b = getattr(Bp["v"].d, f).numpy()
        ok &= a.tobytes() == b.tobytes()
    sp = Bp["v"].d.efc_seg.numpy(); ne = Bp["v"].d.nefc.numpy()
    used = max(sum(((sp[e, r, 0] >> 12) - (sp[e, r, 0] & 4095)) + ((sp[e, r, 1] >> 12) - (sp[e, r, 1] & 4095))
                   for r in range(ne[e])) for e in range(min(nn, 16)))
    R, nv = Bp["v"].d.efc_J.shape[1:]
    print(f"{name} islands {sys.argv[3]} n={nn}: after one step bit-identical {ok}; dense J {R}x{nv} per env, "
          f"packed values used (max of 16 envs) {used}, rows {int(ne.max())}", flush=True)
    reps = max(3, 5 * 1024 // nn // 8)
    # the segments-only variant (2) on scene B: check its outputs equal too
    t_solve(Bp, nn, 1, 2)
    for f in ("qacc_warmstart", "efc_force", "qfrc_constraint"):
        ok &= getattr(A["v"].d, f).numpy().tobytes() == getattr(Bp["v"].d, f).numpy().tobytes()
    print("  variant 2 (dense J, builder's segments) bit-identical", ok)
    res = {k: [] for k in (0, 1, 2)}
    orders = [(0, 1, 2), (2, 1, 0), (1, 2, 0), (0, 2, 1)]
    for s in range(S):
        for pk in orders[s % 4]:
            res[pk].append(t_solve(Bp if pk else A, nn, reps, pk))
    def med(r):
        return sorted(r)[len(r) // 2]
    print("  solve stage µs/env: " + " | ".join(f"{['dense', 'packed', 'dense+segs'][k]} min {min(res[k]):.2f} med {med(res[k]):.2f}" for k in (0, 1, 2)))
    print("  load", os.getloadavg(), flush=True)
