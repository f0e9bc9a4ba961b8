"""MPM throughput: particle-substeps/s for 10k and 100k particles at n_envs 1 and 16, graph capture
on, against Taichi's CPU backend running the classic MLS-MPM (Hu et al. 2018, as in Taichi's
mpm88/mpm99/mpm3d examples) on the same scene in the same run; plus state memory per particle.

Scene: an elastic cube (fixed corotated, E=1e5, nu=0.2, rho=1000) falling in a box at 8 particles
per cell, h = 2e-4 s, sticky walls of 3 cells, quadratic B-splines, APIC. The Taichi kernel below
does the same work per substep (grid clear, P2G with F update, SVD and corotated stress, grid update
with gravity and walls, G2P with C) with an env axis on every field, so n_envs=16 is one batched
launch there too. Taichi uses all cores it sees (parallel for loops over particles; P2G with
atomics); polyphys uses ``cpu_threads`` = the cores too: envs split over partitions, and with one env
each stage's particles or nodes split over the workers (P2G's scatter by slab colouring, docs/mpm.md).
Taichi's JIT compilation and polyphys's kernel load are excluded (warm-up steps). Thread-scaling rows
(n_envs = 1, cpu_threads 1 -> 2): wall clock and critical path (``benchmarks.critical_path``).
"""

from __future__ import annotations

import math
import os

import numpy as np

from . import row, scaling_rows, threads_note, time_steps

E, NU, RHO = 1e5, 0.2, 1000.0
H = 2e-4
SIZES = {"10k": 22, "100k": 46}        # particles per cube edge: 22³ = 10.6k, 46³ = 97k


def _domain(n_edge):
    """Grid density and domain (a cube 2.5× the block's edge, block 2 particles per cell)."""
    density = 64.0
    dx = 1.0 / density
    edge = n_edge * dx / 2
    side = math.ceil(2.5 * edge / dx + 6) * dx
    return density, side, edge


def _polyphys(n_edge, n_envs, substeps=4, threads=None):
    import polyphys
    from polyphys import morphs
    from polyphys.plugins.mpm import MPMOptions

    density, side, edge = _domain(n_edge)
    sc = polyphys.Scene(sim=polyphys.SimOptions(dt=H * substeps, substeps=substeps, cpu_threads=threads),
                        mpm=MPMOptions(lower_bound=(0, 0, 0), upper_bound=(side,) * 3,
                                       grid_density=density))
    e = sc.add_entity(morphs.Box(size=(edge,) * 3, pos=(side / 2,) * 3),
                      polyphys.materials.MPM.Elastic(E=E, nu=NU, rho=RHO))
    sc.build(n_envs=n_envs)
    return sc, e


class _TaichiMPM:
    """Classic MLS-MPM in Taichi (3D, corotated elastic), batched over envs."""

    def __init__(self, pos: np.ndarray, n_envs: int, density: float, side: float, p_vol: float):
        import taichi as ti

        self.ti = ti
        n_p = len(pos)
        n_grid = int(round(side * density)) + 1
        dx, inv_dx = 1.0 / density, density
        mu0, lam0 = E / (2 * (1 + NU)), E * NU / ((1 + NU) * (1 - 2 * NU))
        p_mass = RHO * p_vol
        self.x = ti.Vector.field(3, float, shape=(n_envs, n_p))
        self.v = ti.Vector.field(3, float, shape=(n_envs, n_p))
        self.C = ti.Matrix.field(3, 3, float, shape=(n_envs, n_p))
        self.F = ti.Matrix.field(3, 3, float, shape=(n_envs, n_p))
        self.grid_v = ti.Vector.field(3, float, shape=(n_envs, n_grid, n_grid, n_grid))
        self.grid_m = ti.field(float, shape=(n_envs, n_grid, n_grid, n_grid))
        self.x.from_numpy(np.broadcast_to(pos.astype(np.float32), (n_envs, n_p, 3)).copy())
        self.F.from_numpy(np.broadcast_to(np.eye(3, dtype=np.float32), (n_envs, n_p, 3, 3)).copy())
        x, v, C, F, grid_v, grid_m = self.x, self.v, self.C, self.F, self.grid_v, self.grid_m
        bound = 3

        @ti.kernel
        def substep():
            for I in ti.grouped(grid_m):
                grid_v[I] = ti.Vector.zero(float, 3)
                grid_m[I] = 0.0
            for b, p in x:
                Xp = x[b, p] * inv_dx
                base = int(Xp - 0.5)
                fx = Xp - base
                w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1) ** 2, 0.5 * (fx - 0.5) ** 2]
                F[b, p] = (ti.Matrix.identity(float, 3) + H * C[b, p]) @ F[b, p]
                U, sig, V = ti.svd(F[b, p])
                J = sig[0, 0] * sig[1, 1] * sig[2, 2]
                stress = 2 * mu0 * (F[b, p] - U @ V.transpose()) @ F[b, p].transpose() + \
                    ti.Matrix.identity(float, 3) * lam0 * J * (J - 1)
                stress = (-H * p_vol * 4 * inv_dx * inv_dx) * stress
                affine = stress + p_mass * C[b, p]
                for i, j, k in ti.static(ti.ndrange(3, 3, 3)):
                    offset = ti.Vector([i, j, k])
                    dpos = (offset - fx) * dx
                    weight = w[i][0] * w[j][1] * w[k][2]
                    grid_v[b, base + offset] += weight * (p_mass * v[b, p] + affine @ dpos)
                    grid_m[b, base + offset] += weight * p_mass
            for b, i, j, k in grid_m:
                if grid_m[b, i, j, k] > 0:
                    gv = grid_v[b, i, j, k] / grid_m[b, i, j, k]
                    gv[2] -= H * 9.81
                    if i < bound or i > n_grid - 1 - bound or j < bound or j > n_grid - 1 - bound \
                            or k < bound or k > n_grid - 1 - bound:
                        gv = ti.Vector.zero(float, 3)
                    grid_v[b, i, j, k] = gv
            for b, p in x:
                Xp = x[b, p] * inv_dx
                base = int(Xp - 0.5)
                fx = Xp - base
                w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1) ** 2, 0.5 * (fx - 0.5) ** 2]
                new_v = ti.Vector.zero(float, 3)
                new_C = ti.Matrix.zero(float, 3, 3)
                for i, j, k in ti.static(ti.ndrange(3, 3, 3)):
                    offset = ti.Vector([i, j, k])
                    dpos = (offset - fx) * dx
                    weight = w[i][0] * w[j][1] * w[k][2]
                    g_v = grid_v[b, base + offset]
                    new_v += weight * g_v
                    new_C += 4 * inv_dx * inv_dx * weight * g_v.outer_product(dpos)
                v[b, p] = new_v
                C[b, p] = new_C
                x[b, p] += H * new_v

        self.substep = substep

    def step(self, substeps):
        for _ in range(substeps):
            self.substep()
        self.ti.sync()


def _taichi_available() -> str | None:
    try:
        import taichi  # noqa: F401
    except Exception as exc:       # not installed, or no wheel for this Python
        return f"taichi not importable: {exc}"
    return None


def run(quick: bool = False) -> list[dict]:
    rows = []
    substeps = 4
    sizes = ["10k"] if quick else ["10k", "100k"]
    why_not = _taichi_available()
    ti_ready = False
    for size in sizes:
        n_edge = SIZES[size]
        for n_envs in (1, 16):
            sc, e = _polyphys(n_edge, n_envs, substeps)
            n_p = e.n_particles
            t = time_steps(sc.step, min_time=0.3 if quick else 1.0, min_steps=2, warmup=2,
                           repeats=2 if quick else 3)
            rate = n_p * n_envs * substeps / t
            ref, notes = None, ""
            solver = sc.solver("mpm")
            grid_bytes = solver.n_nodes * (12 + 4 + 12 + 4 + 12)      # mv, m, v, active, node pos
            if why_not is None:
                import taichi as ti

                if not ti_ready:
                    ti.init(arch=ti.cpu, default_fp=ti.f32, offline_cache=True)
                    ti_ready = True
                density, side, edge = _domain(n_edge)
                tm = _TaichiMPM(e.init_pos, n_envs, density, side, e.particle_volume)
                t_ref = time_steps(lambda tm=tm: tm.step(substeps), min_time=0.3 if quick else 1.0, min_steps=2,
                                   warmup=2, repeats=2 if quick else 3)
                ref = n_p * n_envs * substeps / t_ref
                notes = (f"Taichi {'.'.join(map(str, ti.__version__))} CPU ({os.cpu_count()} threads: its "
                         f"default), same scene, batched fields")
                ti.reset()
                ti_ready = False
            else:
                notes = why_not
            rows.append(row(f"mpm elastic cube {size} ({n_p} particles), n_envs={n_envs}",
                            "particle-substeps/s", "1/s", rate, ref,
                            "taichi MLS-MPM (CPU)" if ref is not None else "",
                            None if ref is None else rate / ref,
                            notes + f"; grid {solver.n_nodes} nodes/env; {threads_note(sc)}"))
            if n_envs == 1:
                state = sum(a.numpy().nbytes for a in solver.state_arrays().values())
                model = sum(getattr(solver.model, k).numpy().nbytes for k in vars(solver.model))
                rows.append(row(f"mpm memory {size}", "state bytes per particle per env", "B",
                                state / n_p, notes=f"+ model {model / n_p:.0f} B/particle shared by envs, "
                                                   f"+ grid {grid_bytes / 1e6:.1f} MB per env "
                                                   f"({grid_bytes / n_p:.0f} B/particle here)"))
            sc.simulator.close()
            del sc
        rows += scaling_rows(lambda t, n_edge=n_edge: _polyphys(n_edge, 1, substeps, t)[0],
                             f"mpm elastic cube {size}, n_envs=1", SIZES[size] ** 3 * substeps, "particle-substeps/s",
                             quick=quick)
    return rows


if __name__ == "__main__":
    import json
    import sys

    for r in run(quick="--quick" in sys.argv):
        print(json.dumps(r))
