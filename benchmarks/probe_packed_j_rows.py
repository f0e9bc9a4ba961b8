# ruff: noqa  (a prototype probe, reverted with the prototype: Round 10 of benchmarks/results/constraint.md)
"""PROTOTYPE (Round 10, benchmarks/results/constraint.md): make_rows relaunched (PYTHONPATH=.; N SCENES SAMPLES): A dense (main), B dense + pack (prototype), C = the builder's dense rows in ONE block shared
by all envs (env stride 0: hot in cache, as a per-env scratch would be) + pack: emulates a builder that writes
only the packed rows. C's values are not valid (rows of the previous env left in it): timing only."""
import os
import sys
import time

import warp as wp

wp.config.quiet = True
from polyphys.plugins.rigid import constraint_rows as CR

from benchmarks import bench_constraint as B
from benchmarks import profile_constraint as P


def setup(path, d, dt, n, islands, packed, **extra):
    CR.PACKED_J = packed
    scene = P.polyphys_scene(path, d, dt, n, constraint_islands=islands, **extra)
    got = {}
    o2 = CR.make_rows
    def g2(*a, **k):
        if "ra" not in got:
            got["ra"], got["rk"] = a, k
        return o2(*a, **k)
    CR.make_rows = g2
    try:
        scene.step()
    finally:
        CR.make_rows = o2
    return scene, got

def t_rows(got, n, reps, packed):
    CR.PACKED_J = packed
    wp.synchronize(); t0 = time.process_time()
    for _ in range(reps):
        CR.make_rows(*got["ra"], **got["rk"])
    wp.synchronize()
    return (time.process_time() - t0) / (reps * n) * 1e6

n = int(sys.argv[1]); scenes = sys.argv[2].split(","); S = int(sys.argv[3])
for name, path, settle, flags in P.scenes(scenes):
    m = B._mj_model(path)
    d = B._settle("humanoid" if name == "humanoid" else name, m, settle)
    nn = 64 if flags.get("pile") else n
    extra = {}
    if flags.get("pile"):
        mc, _, _ = B._mj_stats(m, d)
        extra["max_contacts"] = int(2 * max(mc, 1)) + 32
    G = {k: setup(path, d, float(m.opt.timestep), nn, True, k != "A", **extra) for k in "ABC"}
    vC = G["C"][1]["ra"][0]
    J = vC.d.efc_J
    keep = J
    vC.d.efc_J = wp.array(ptr=J.ptr, dtype=J.dtype, shape=J.shape, strides=(0, J.strides[1], J.strides[2]),
                          device=J.device, copy=False)
    res = {k: [] for k in "ABC"}
    reps = max(3, 5 * 1024 // nn // 8)
    orders = ["ABC", "CBA", "BCA", "ACB"]
    for s in range(S):
        for k in orders[s % 4]:
            res[k].append(t_rows(G[k][1], nn, reps, k != "A"))
    CR.PACKED_J = False
    def med(r):
        return sorted(r)[len(r) // 2]
    print(f"{name} n={nn} make_rows µs/env: " + " | ".join(f"{k} min {min(res[k]):.2f} med {med(res[k]):.2f}" for k in "ABC")
          + f"; load {os.getloadavg()[0]:.2f}", flush=True)
