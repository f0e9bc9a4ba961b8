"""SF (stable fluids) throughput: cell-updates/s (cells × envs × substeps per second) of a hot smoke
plume at 64³ and 128³, n_envs 1 and 8, graph capture on, against a Taichi CPU implementation of the
same algorithm on the same scene in the same run.

Scene: a cube of side 1 m (res³ cells), closed walls but an open top, a spherical emitter near the
floor (rate 1/s, heat 10 K/s), thermal buoyancy 1 m/s²/K, vorticity confinement 0.3, h = 0.01 s,
MacCormack advection of u, v, w, density and temperature with the RK2 trace, MGPCG projection
(red-black Gauss-Seidel V-cycle, 2 sweeps, 16 coarse sweeps, piecewise-constant prolongation,
levels down to 4³, the true residual recomputed each iteration). The Taichi reference does the same
arithmetic per substep with an env axis on every field; it runs the number of CG iterations
polyphys needed (its mean over the timed steps) so both do the same work (it does not test
convergence itself; polyphys's per-env test and early exit are included in its time). Differences
that favour Taichi: it fuses the trace into the sampling kernels (polyphys stores the traced points
once per staggering), and it uses every core for one env (polyphys runs one partition per core:
n_envs = 1 runs on one core). polyphys's density-conservation correction is off (not in the
reference). Compilation and kernel loading are excluded (warm-up steps).
"""

# no `from __future__ import annotations`: Taichi reads the kernels' annotations as objects

import math

import numpy as np

from . import row, time_steps

H = 0.01
RATE, HEAT, BETA, EPS = 1.0, 10.0, 1.0, 0.3
SRC, SRC_R = (0.5, 0.5, 0.15), 0.1


def _polyphys(res, n_envs):
    import polyphys
    from polyphys import morphs
    from polyphys.plugins.sf.options import SFOptions

    o = SFOptions(res=(res,) * 3, dx=1.0 / res, open_faces=("+z",), vorticity_confinement=EPS, thermal_buoyancy=BETA,
                  tolerance=1e-3, max_iterations=40, conserve_density=False)
    sc = polyphys.Scene(sim=polyphys.SimOptions(dt=H, substeps=1), sf=o)
    sc.add_entity(morphs.Sphere(radius=SRC_R, pos=SRC), material=polyphys.materials.SF.Emitter(rate=RATE, heat=HEAT))
    sc.build(n_envs=n_envs)
    return sc


class _TaichiSF:
    """The same stable-fluids substep in Taichi, batched over envs (float32 fields, float64 dots)."""

    def __init__(self, res: int, n_envs: int, iters: int):
        import taichi as ti

        self.ti = ti
        N, E = res, n_envs
        dx = 1.0 / N
        inv_dx = float(N)
        f32 = ti.f32
        self.iters = iters
        shp = {"u": (E, N + 1, N, N), "v": (E, N, N + 1, N), "w": (E, N, N, N + 1), "c": (E, N, N, N)}
        off = {"u": (0.0, 0.5, 0.5), "v": (0.5, 0.0, 0.5), "w": (0.5, 0.5, 0.0), "c": (0.5, 0.5, 0.5)}
        F = {k: ti.field(f32, shape=s) for k, s in shp.items()}                 # current u, v, w, density
        F0 = {k: ti.field(f32, shape=s) for k, s in shp.items()}                # advection sources
        FW = {k: ti.field(f32, shape=s) for k, s in shp.items()}                # forward step
        T, T0, TW = (ti.field(f32, shape=shp["c"]) for _ in range(3))
        force = ti.Vector.field(3, f32, shape=shp["c"])
        omega = ti.Vector.field(3, f32, shape=shp["c"])
        dims = [(N, N, N)]
        while max(dims[-1]) > 4:
            dims.append(tuple((n + 1) // 2 for n in dims[-1]))
        L = len(dims)
        xs = [ti.field(f32, shape=(E, *d)) for d in dims]       # V-cycle unknowns (level 0: z)
        bs = [ti.field(f32, shape=(E, *d)) for d in dims]       # right-hand sides (level 0: r)
        rs = [ti.field(f32, shape=(E, *d)) for d in dims]       # residuals
        cts = [ti.field(ti.i32, shape=(E, *d)) for d in dims]
        p, bb, d, q = (ti.field(f32, shape=shp["c"]) for _ in range(4))
        rz, rz_new, dq, rmax = (ti.field(ti.f64, shape=E) for _ in range(4))
        u, v, w, s = F["u"], F["v"], F["w"], F["c"]
        u0, v0, w0 = F0["u"], F0["v"], F0["w"]

        @ti.func
        def sample(f, b, g):
            gx = ti.math.clamp(g[0], 0.0, f.shape[1] - 1.0)
            gy = ti.math.clamp(g[1], 0.0, f.shape[2] - 1.0)
            gz = ti.math.clamp(g[2], 0.0, f.shape[3] - 1.0)
            i0, j0, k0 = ti.min(int(gx), f.shape[1] - 1), ti.min(int(gy), f.shape[2] - 1), ti.min(int(gz), f.shape[3] - 1)
            i1, j1, k1 = ti.min(i0 + 1, f.shape[1] - 1), ti.min(j0 + 1, f.shape[2] - 1), ti.min(k0 + 1, f.shape[3] - 1)
            tx, ty, tz = gx - i0, gy - j0, gz - k0
            c00 = f[b, i0, j0, k0] * (1 - tx) + f[b, i1, j0, k0] * tx
            c10 = f[b, i0, j1, k0] * (1 - tx) + f[b, i1, j1, k0] * tx
            c01 = f[b, i0, j0, k1] * (1 - tx) + f[b, i1, j0, k1] * tx
            c11 = f[b, i0, j1, k1] * (1 - tx) + f[b, i1, j1, k1] * tx
            return (c00 * (1 - ty) + c10 * ty) * (1 - tz) + (c01 * (1 - ty) + c11 * ty) * tz

        @ti.func
        def minmax(f, b, g):
            gx = ti.math.clamp(g[0], 0.0, f.shape[1] - 1.0)
            gy = ti.math.clamp(g[1], 0.0, f.shape[2] - 1.0)
            gz = ti.math.clamp(g[2], 0.0, f.shape[3] - 1.0)
            i0, j0, k0 = ti.min(int(gx), f.shape[1] - 1), ti.min(int(gy), f.shape[2] - 1), ti.min(int(gz), f.shape[3] - 1)
            lo_, hi_ = f[b, i0, j0, k0], f[b, i0, j0, k0]
            for a, c, e in ti.static(ti.ndrange(2, 2, 2)):
                val = f[b, ti.min(i0 + a, f.shape[1] - 1), ti.min(j0 + c, f.shape[2] - 1), ti.min(k0 + e, f.shape[3] - 1)]
                lo_, hi_ = ti.min(lo_, val), ti.max(hi_, val)
            return lo_, hi_

        @ti.func
        def vel(b, x):
            g = x * inv_dx
            return ti.Vector([sample(u0, b, ti.Vector([g[0], g[1] - 0.5, g[2] - 0.5])),
                              sample(v0, b, ti.Vector([g[0] - 0.5, g[1], g[2] - 0.5])),
                              sample(w0, b, ti.Vector([g[0] - 0.5, g[1] - 0.5, g[2]]))])

        @ti.func
        def trace(b, x, hh):
            return x - hh * vel(b, x - 0.5 * hh * vel(b, x))

        @ti.kernel
        def copy(dst: ti.template(), src: ti.template()):
            for I in ti.grouped(dst):
                dst[I] = src[I]

        @ti.kernel
        def forward(src: ti.template(), dst: ti.template(), src2: ti.template(), dst2: ti.template(),
                    o: ti.template(), two: ti.template()):
            for b, i, j, k in src:
                x = (ti.Vector([i, j, k]) + ti.Vector(o)) * dx
                g = trace(b, x, H) * inv_dx - ti.Vector(o)
                dst[b, i, j, k] = sample(src, b, g)
                if ti.static(two):
                    dst2[b, i, j, k] = sample(src2, b, g)

        @ti.kernel
        def correct(src: ti.template(), fw: ti.template(), dst: ti.template(), o: ti.template()):
            for b, i, j, k in src:
                x = (ti.Vector([i, j, k]) + ti.Vector(o)) * dx
                gb = trace(b, x, H) * inv_dx - ti.Vector(o)
                gf = trace(b, x, -H) * inv_dx - ti.Vector(o)
                val = fw[b, i, j, k] + 0.5 * (src[b, i, j, k] - sample(fw, b, gf))
                lo_, hi_ = minmax(src, b, gb)
                dst[b, i, j, k] = ti.math.clamp(val, lo_, hi_)

        @ti.kernel
        def emit():
            for b, i, j, k in s:
                x = (ti.Vector([i, j, k]) + 0.5) * dx
                if (x - ti.Vector(SRC)).norm() <= SRC_R:
                    s[b, i, j, k] += RATE * H
                    T[b, i, j, k] += HEAT * H

        @ti.func
        def cvel(b, i, j, k):
            return 0.5 * ti.Vector([u[b, i, j, k] + u[b, i + 1, j, k], v[b, i, j, k] + v[b, i, j + 1, k],
                                    w[b, i, j, k] + w[b, i, j, k + 1]])

        @ti.kernel
        def vorticity():
            for b, i, j, k in omega:
                ia, ib_ = ti.max(i - 1, 0), ti.min(i + 1, N - 1)
                ja, jb = ti.max(j - 1, 0), ti.min(j + 1, N - 1)
                ka, kb = ti.max(k - 1, 0), ti.min(k + 1, N - 1)
                ddx = (cvel(b, ib_, j, k) - cvel(b, ia, j, k)) * inv_dx / (ib_ - ia)
                ddy = (cvel(b, i, jb, k) - cvel(b, i, ja, k)) * inv_dx / (jb - ja)
                ddz = (cvel(b, i, j, kb) - cvel(b, i, j, ka)) * inv_dx / (kb - ka)
                omega[b, i, j, k] = ti.Vector([ddy[2] - ddz[1], ddz[0] - ddx[2], ddx[1] - ddy[0]])

        @ti.kernel
        def forces():
            for b, i, j, k in force:
                f = ti.Vector([0.0, 0.0, BETA * T[b, i, j, k]])
                ia, ib_ = ti.max(i - 1, 0), ti.min(i + 1, N - 1)
                ja, jb = ti.max(j - 1, 0), ti.min(j + 1, N - 1)
                ka, kb = ti.max(k - 1, 0), ti.min(k + 1, N - 1)
                g = ti.Vector([(omega[b, ib_, j, k].norm() - omega[b, ia, j, k].norm()) / (ib_ - ia),
                               (omega[b, i, jb, k].norm() - omega[b, i, ja, k].norm()) / (jb - ja),
                               (omega[b, i, j, kb].norm() - omega[b, i, j, ka].norm()) / (kb - ka)]) * inv_dx
                gl = g.norm()
                if gl > 1e-12 * inv_dx:
                    f += EPS * dx * (g / gl).cross(omega[b, i, j, k])
                force[b, i, j, k] = f

        @ti.kernel
        def add_force(f: ti.template(), a: ti.template()):
            for b, i, j, k in f:
                idx = ti.Vector([i, j, k])
                n = N
                acc, c = 0.0, 0
                if idx[a] > 0:
                    nb = idx
                    nb[a] -= 1
                    acc += force[b, nb[0], nb[1], nb[2]][a]
                    c += 1
                if idx[a] < n:
                    acc += force[b, i, j, k][a]
                    c += 1
                f[b, i, j, k] += H * acc / c

        @ti.kernel
        def bc(f: ti.template(), a: ti.template(), open_hi: ti.template()):
            for b, i, j, k in f:
                idx = ti.Vector([i, j, k])
                if idx[a] == 0 or (idx[a] == N and not ti.static(open_hi)):
                    f[b, i, j, k] = 0.0

        @ti.func
        def lap(x, ct, b, i, j, k):
            nx_, ny_, nz_ = ct.shape[1], ct.shape[2], ct.shape[3]
            diag, off_ = 0, 0.0
            if i > 0 and ct[b, i - 1, j, k]:
                diag += 1
                off_ += x[b, i - 1, j, k]
            if i < nx_ - 1 and ct[b, i + 1, j, k]:
                diag += 1
                off_ += x[b, i + 1, j, k]
            if j > 0 and ct[b, i, j - 1, k]:
                diag += 1
                off_ += x[b, i, j - 1, k]
            if j < ny_ - 1 and ct[b, i, j + 1, k]:
                diag += 1
                off_ += x[b, i, j + 1, k]
            if k > 0 and ct[b, i, j, k - 1]:
                diag += 1
                off_ += x[b, i, j, k - 1]
            if k < nz_ - 1:
                if ct[b, i, j, k + 1]:
                    diag += 1
                    off_ += x[b, i, j, k + 1]
            else:
                diag += 1                  # open top: p = 0 outside
            return diag, off_

        @ti.kernel
        def divergence():
            for b, i, j, k in bb:
                bb[b, i, j, k] = -((u[b, i + 1, j, k] - u[b, i, j, k]) + (v[b, i, j + 1, k] - v[b, i, j, k])
                                   + (w[b, i, j, k + 1] - w[b, i, j, k])) * inv_dx

        @ti.kernel
        def residual(bf: ti.template(), x: ti.template(), ct: ti.template(), out: ti.template(), s2: ti.template()):
            for b, i, j, k in x:
                dg, of = lap(x, ct, b, i, j, k)
                out[b, i, j, k] = bf[b, i, j, k] - (dg * x[b, i, j, k] - of) * s2

        @ti.kernel
        def apply_a():
            for b, i, j, k in q:
                dg, of = lap(d, cts[0], b, i, j, k)
                q[b, i, j, k] = (dg * d[b, i, j, k] - of) * inv_dx * inv_dx

        @ti.kernel
        def gs(x: ti.template(), bf: ti.template(), ct: ti.template(), color: ti.template(), s2: ti.template()):
            for b, i, j, k in x:
                if (i + j + k) % 2 == color:
                    dg, of = lap(x, ct, b, i, j, k)
                    if dg > 0:
                        x[b, i, j, k] = (bf[b, i, j, k] / s2 + of) / dg

        @ti.kernel
        def zero(x: ti.template()):
            for I in ti.grouped(x):
                x[I] = 0.0

        @ti.kernel
        def restrict(rf: ti.template(), bc_: ti.template()):
            for b, i, j, k in bc_:
                acc = 0.0
                for a, c, e in ti.static(ti.ndrange(2, 2, 2)):
                    fi, fj, fk = 2 * i + a, 2 * j + c, 2 * k + e
                    if fi < rf.shape[1] and fj < rf.shape[2] and fk < rf.shape[3]:
                        acc += rf[b, fi, fj, fk]
                bc_[b, i, j, k] = acc * 0.125

        @ti.kernel
        def prolong(xc: ti.template(), xf: ti.template()):
            for b, i, j, k in xf:
                xf[b, i, j, k] += xc[b, i // 2, j // 2, k // 2]

        @ti.kernel
        def fill(ct: ti.template()):
            for I in ti.grouped(ct):
                ct[I] = 1

        @ti.kernel
        def dot(a: ti.template(), c: ti.template(), out: ti.template()):
            for b in out:
                out[b] = 0.0
            for b, i, j, k in a:
                out[b] += ti.cast(a[b, i, j, k], ti.f64) * ti.cast(c[b, i, j, k], ti.f64)

        @ti.kernel
        def absmax():
            for b in rmax:
                rmax[b] = 0.0
            for b, i, j, k in bs[0]:
                ti.atomic_max(rmax[b], ti.cast(ti.abs(bs[0][b, i, j, k]), ti.f64))

        @ti.kernel
        def update_p():
            for b, i, j, k in p:
                p[b, i, j, k] += ti.cast(rz[b] / dq[b], f32) * d[b, i, j, k]

        @ti.kernel
        def update_d():
            for b, i, j, k in d:
                d[b, i, j, k] = xs[0][b, i, j, k] + ti.cast(rz_new[b] / rz[b], f32) * d[b, i, j, k]

        @ti.kernel
        def grad(f: ti.template(), a: ti.template()):
            for b, i, j, k in f:
                idx = ti.Vector([i, j, k])
                if idx[a] > 0 and idx[a] < N:
                    nb = idx
                    nb[a] -= 1
                    f[b, i, j, k] -= (p[b, i, j, k] - p[b, nb[0], nb[1], nb[2]]) * inv_dx
                elif idx[a] == N and a == 2:      # open top
                    f[b, i, j, k] -= (0.0 - p[b, i, j, N - 1]) * inv_dx

        for ct in cts:
            fill(ct)
        s2 = [inv_dx * inv_dx / 4 ** lvl for lvl in range(L)]

        def vcycle():
            for lvl in range(L - 1):
                zero(xs[lvl])
                for _ in range(2):
                    gs(xs[lvl], bs[lvl], cts[lvl], 0, s2[lvl])
                    gs(xs[lvl], bs[lvl], cts[lvl], 1, s2[lvl])
                residual(bs[lvl], xs[lvl], cts[lvl], rs[lvl], s2[lvl])
                restrict(rs[lvl], bs[lvl + 1])
            zero(xs[L - 1])
            for _ in range(16):
                for c in (0, 1, 1, 0):
                    gs(xs[L - 1], bs[L - 1], cts[L - 1], c, s2[L - 1])
            for lvl in range(L - 2, -1, -1):
                prolong(xs[lvl + 1], xs[lvl])
                for _ in range(2):
                    gs(xs[lvl], bs[lvl], cts[lvl], 1, s2[lvl])
                    gs(xs[lvl], bs[lvl], cts[lvl], 0, s2[lvl])

        def substep():
            for k in ("u", "v", "w"):
                copy(F0[k], F[k])
            copy(F0["c"], s)
            copy(T0, T)
            for k in ("u", "v", "w"):
                forward(F0[k], FW[k], F0[k], FW[k], off[k], False)
                correct(F0[k], FW[k], F[k], off[k])
            forward(F0["c"], FW["c"], T0, TW, off["c"], True)
            correct(F0["c"], FW["c"], s, off["c"])
            correct(T0, TW, T, off["c"])
            emit()
            vorticity()
            forces()
            for k, a in (("u", 0), ("v", 1), ("w", 2)):
                add_force(F[k], a)
                bc(F[k], a, a == 2)
            divergence()
            residual(bb, p, cts[0], bs[0], s2[0])
            vcycle()
            copy(d, xs[0])
            dot(bs[0], xs[0], rz)
            for _ in range(self.iters):
                apply_a()
                dot(d, q, dq)
                update_p()
                residual(bb, p, cts[0], bs[0], s2[0])
                absmax()
                vcycle()
                dot(bs[0], xs[0], rz_new)
                update_d()
                copy(rz, rz_new)
            for k, a in (("u", 0), ("v", 1), ("w", 2)):
                grad(F[k], a)

        self.substep = substep

    def step(self):
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
    sizes = [64] if quick else [64, 128]
    why_not = _taichi_available()
    for res in sizes:
        for n_envs in (1, 8):
            sc = _polyphys(res, n_envs)
            solver = sc.solver("sf")
            iters = []

            def step(sc=sc, solver=solver, iters=iters):
                sc.step()
                iters.append(float(np.mean(solver.get_solver_stats()["iterations"])))

            t = time_steps(step, min_time=0.3 if quick else 2.0, min_steps=2, warmup=3, repeats=2 if quick else 3)
            cells = res ** 3 * n_envs
            rate = cells / t
            mean_iters = float(np.mean(iters[3:])) if len(iters) > 3 else float(np.mean(iters))
            ref, notes = None, f"polyphys mean CG iterations {mean_iters:.1f}; cpu partitions {len(sc.layout.partitions)}"
            if why_not is None:
                import taichi as ti

                ti.init(arch=ti.cpu, default_fp=ti.f32, offline_cache=True)
                ts = _TaichiSF(res, n_envs, max(1, math.ceil(mean_iters)))
                t_ref = time_steps(ts.step, min_time=0.3 if quick else 2.0, min_steps=2, warmup=2,
                                   repeats=2 if quick else 3)
                ref = cells / t_ref
                notes += f"; Taichi {'.'.join(map(str, ti.__version__))} CPU runs {ts.iters} CG iterations"
                ti.reset()
            else:
                notes += "; " + why_not
            rows.append(row(f"sf smoke plume {res}^3, n_envs={n_envs}", "cell-updates/s", "1/s", rate, ref,
                            "taichi stable fluids (CPU)" if ref is not None else "",
                            None if ref is None else rate / ref, notes))
            del sc
    return rows


if __name__ == "__main__":
    import json
    import sys

    for r in run(quick="--quick" in sys.argv):
        print(json.dumps(r))
