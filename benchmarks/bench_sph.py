"""SPH benchmark: polyphys WCSPH/DFSPH vs Taichi WCSPH/DFSPH (same algorithms) on the same dam break.

Case: a water block of n ≈ 20k (or 100k) particles (dx = 1 cm) collapsing in a closed tank, cubic
spline with support 2dx, Tait EOS B = 50 kPa, γ = 7, μ = 1 Pa·s, dt = 1 ms (one substep; WCSPH's
CFL limit 0.4·dx/(c₀ + v) = 1.85e-4 s is met by 6 substeps for WCSPH).
Metric: particle-substeps per second, graph capture on (polyphys), after warm-up. Per-core rows follow
(polyphys cpu_threads 1 against each Taichi reference on one CPU thread, with polyphys' per-kernel
times per substep from ``stage_times`` in the notes), then thread scaling rows (n_envs 1,
cpu_threads 1 -> 2: wall clock and critical path, ``benchmarks.scaling_rows``).

References: ``taichi`` (PyPI, CPU backend, all cores), measured once per size at n_envs 1. It is
the fastest alternative that installs here (Genesis, whose SPH is Taichi-based, is not installable
offline). Taichi has no batch axis: at n_envs 8 no reference is measured. Neither reference has
boundary particles: walls are a clamp of the positions into the tank (velocity into a wall zeroed).
- ``_taichi``: the same WCSPH (6 substeps) — density, Tait pressure, the same pressure and
  viscosity forces, a cell-linked list rebuilt every substep.
- ``_taichi_dfsph``: the same DFSPH as polyphys (1 substep): ρ and α, a divergence solve, gravity +
  viscosity, a density solve (tol 1e-4 / 1e-3, caps 10 / 40, at least 2 density iterations, warm
  start = half the last substep's κ total, Jacobi κ from the predicted compression, applied after
  each step), x += h·v with the clamp; no XSPH (polyphys DFSPH applies its default ε = 0.1 inside
  the viscosity loop it runs anyway). The convergence test reads the mean error on the host after
  every Jacobi step (polyphys tests on the device inside its captured graph). The totals start at
  0 (polyphys starts the density solve's at the hydrostatic κ). The iteration counts differ with
  the walls: on the first 60 substeps of the 20k block polyphys did 6.5 Jacobi steps per substep
  (both solves), the reference 3.9 (measured 2026-11-30); polyphys' boundary particles also add
  work to every neighbour loop. The rows' notes give the reference's mean counts in the timed run.
  Checked 2026-11-30 on an 8×8×16 block, 300 substeps: finite, off-wall particles with a full
  neighbourhood at 0.998–0.999 ρ₀ on average (max 1.0007 ρ₀), mean compression 2e-4–2e-3 ρ₀
  (particles clamped onto a wall pile up, up to 1.09 ρ₀; polyphys ≤ 1.01 ρ₀ with its boundary
  particles).
"""

from __future__ import annotations

import math
import time
from types import SimpleNamespace

import numpy as np

from . import scaling_rows, threads_note

DX, RHO, B, GAMMA, MU = 0.01, 1000.0, 50000.0, 7.0, 1.0


def _block(n_target: int):
    """Column dims (nx, ny, nz) with nx·ny·nz ≈ n_target, height 2× width, depth = width."""
    a = int(round((n_target / 2) ** (1 / 3)))
    return a, a, 2 * a


def _pp(n_target: int, n_envs: int, solver: str):
    scene, pps = _pp_scene(n_target, n_envs, solver)
    return scene.step, pps


def _pp_scene(n_target: int, n_envs: int, solver: str, threads=None):
    import polyphys
    from polyphys import morphs
    from polyphys.plugins.sph import Liquid, SPHOptions

    nx, ny, nz = _block(n_target)
    a = nx * DX
    sub = 6 if solver == "wcsph" else 1
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=1e-3, substeps=sub, cpu_threads=threads),
                           sph=SPHOptions(pressure_solver=solver, particle_size=DX, lower_bound=(0, 0, 0),
                                          upper_bound=(4 * a, ny * DX, 2.2 * a)))
    w = scene.add_entity(morphs.Box(size=(a, ny * DX, nz * DX), pos=(a / 2, ny * DX / 2, nz * DX / 2)),
                         material=Liquid(mu=MU, gamma=0.0))
    scene.build(n_envs=n_envs)
    return scene, w.n_particles * n_envs * sub


def _taichi_tank(n_target: int, h: float, threads: int | None = None):
    """What both Taichi references share: ``ti.init`` (``threads``: its CPU thread count; None: all
    cores), the block and tank of ``_pp``, the lattice
    mass (as polyphys), position and velocity fields, a capped cell list rebuilt by ``build``, the
    cubic spline ``w_cubic`` / ``grad_w``, and ``integrate`` (x += h·v, clamped into the tank with
    the velocity into a wall zeroed)."""
    import taichi as ti
    from polyphys.plugins.sph import sampling

    kw = {} if threads is None else {"cpu_max_num_threads": int(threads)}
    ti.init(arch=ti.cpu, offline_cache=True, log_level=ti.ERROR, **kw)
    nx, ny, nz = _block(n_target)
    a = nx * DX
    n = nx * ny * nz
    H = 2 * DX
    lo = np.zeros(3)
    hi = np.array([4 * a, ny * DX, 2.2 * a])
    dims = np.ceil((hi - lo) / H).astype(int)
    top = [int(d) - 1 for d in dims]
    cap = 64
    x = ti.Vector.field(3, ti.f32, n)
    v = ti.Vector.field(3, ti.f32, n)
    cnt = ti.field(ti.i32, tuple(dims))
    cell = ti.field(ti.i32, tuple(dims) + (cap,))
    g = np.stack(np.meshgrid(*[(np.arange(k) + 0.5) * DX for k in (nx, ny, nz)], indexing="ij"), -1)
    x.from_numpy(g.reshape(-1, 3).astype(np.float32))

    @ti.func
    def w_cubic(r):
        q = r / H
        s = 8.0 / (math.pi * H ** 3)
        out = 0.0
        if q <= 0.5:
            out = s * (6 * q ** 3 - 6 * q ** 2 + 1)
        elif q < 1.0:
            out = s * 2 * (1 - q) ** 3
        return out

    @ti.func
    def grad_w(d, r):
        """∇ᵢW(xᵢ − xⱼ), d = xᵢ − xⱼ, r = |d| (0 at r = 0 and beyond the support)."""
        q = r / H
        s = 8.0 / (math.pi * H ** 3)
        dw = 0.0
        if r > 1e-9 * H:
            if q <= 0.5:
                dw = s / H * (18 * q * q - 12 * q)
            elif q < 1.0:
                dw = s / H * (-6 * (1 - q) ** 2)
        return d * (dw / ti.max(r, 1e-12))

    @ti.func
    def cell_of(pos):
        c = ti.cast(ti.floor(pos / H), ti.i32)
        return ti.max(ti.min(c, ti.Vector(top)), 0)

    @ti.func
    def in_grid(cc):
        return (cc >= 0).all() and (cc <= ti.Vector(top)).all()

    @ti.kernel
    def build():
        for I in ti.grouped(cnt):
            cnt[I] = 0
        for i in range(n):
            c = cell_of(x[i])
            k = ti.atomic_add(cnt[c], 1)
            if k < cap:
                cell[c, k] = i

    @ti.kernel
    def integrate():
        for i in range(n):
            y = x[i] + h * v[i]
            for ax in ti.static(range(3)):
                if y[ax] < lo[ax]:
                    y[ax] = lo[ax]
                    v[i][ax] = ti.max(v[i][ax], 0.0)
                if y[ax] > hi[ax]:
                    y[ax] = hi[ax]
                    v[i][ax] = ti.min(v[i][ax], 0.0)
            x[i] = y

    return SimpleNamespace(ti=ti, n=n, H=H, cap=cap, mass=sampling.lattice_mass(RHO, DX, H, "cubic"), x=x, v=v,
                           cnt=cnt, cell=cell, w_cubic=w_cubic, grad_w=grad_w, cell_of=cell_of,
                           in_grid=in_grid, build=build, integrate=integrate)


def _taichi(n_target: int, threads: int | None = None):
    h = 1e-3 / 6
    tank = _taichi_tank(n_target, h, threads)
    ti, n, H, cap, mass, x, v = tank.ti, tank.n, tank.H, tank.cap, tank.mass, tank.x, tank.v
    cnt, cell, w_cubic, grad_w = tank.cnt, tank.cell, tank.w_cubic, tank.grad_w
    cell_of, in_grid, build, integrate = tank.cell_of, tank.in_grid, tank.build, tank.integrate
    rho = ti.field(ti.f32, n)
    p = ti.field(ti.f32, n)

    @ti.kernel
    def density():
        for i in range(n):
            c = cell_of(x[i])
            r_i = 0.0
            for o in ti.static(ti.grouped(ti.ndrange((-1, 2), (-1, 2), (-1, 2)))):
                cc = c + o
                if in_grid(cc):
                    for k in range(ti.min(cnt[cc], cap)):
                        r = (x[i] - x[cell[cc, k]]).norm()
                        if r < H:
                            r_i += mass * w_cubic(r)
            rho[i] = r_i
            p[i] = ti.max(B * ((r_i / RHO) ** GAMMA - 1.0), 0.0)

    @ti.kernel
    def forces():
        for i in range(n):
            c = cell_of(x[i])
            acc = ti.Vector([0.0, 0.0, -9.81])
            pi = p[i] / rho[i] ** 2
            for o in ti.static(ti.grouped(ti.ndrange((-1, 2), (-1, 2), (-1, 2)))):
                cc = c + o
                if in_grid(cc):
                    for k in range(ti.min(cnt[cc], cap)):
                        j = cell[cc, k]
                        d = x[i] - x[j]
                        r = d.norm()
                        if 1e-9 < r < H:
                            gw = grad_w(d, r)
                            acc -= mass * (pi + p[j] / rho[j] ** 2) * gw
                            acc += 10 * MU / rho[i] * mass / rho[j] * (v[i] - v[j]).dot(d) / (
                                r * r + 0.01 * H * H) * gw
            v[i] += h * acc

    def step():
        for _ in range(6):
            build()
            density()
            forces()
            integrate()
        ti.sync()

    step.stages = {"build": build, "density": density, "forces": forces, "integrate": integrate}
    return step, n * 6



def _taichi_dfsph(n_target: int, threads: int | None = None):
    """Taichi DFSPH of polyphys' algorithm (plugins/sph/solver.py ``_solve``,
    ``substep_pre_coupling``): per substep the cell list, ρᵢ and αᵢ = ρᵢ/(|Σⱼ mⱼ∇Wᵢⱼ|² + Σⱼ|mⱼ∇Wᵢⱼ|²);
    a divergence solve; gravity + viscosity; a density solve; x += h·v with the wall clamp. Each
    solve applies half of the κ total it reached in the last substep (warm start, the total carrying
    that half), then Jacobi steps κᵢ = max(ρᵢ + h·Σⱼ mⱼ(vᵢ − vⱼ)·∇Wᵢⱼ − ρ₀, 0)·αᵢ/h², each applied
    as vᵢ −= h·Σⱼ mⱼ(κᵢ/ρᵢ + κⱼ/ρⱼ)∇Wᵢⱼ, until the mean compression error over the particles is
    ≤ tol (read on the host after each step). Totals start at 0 (polyphys starts the density solve's
    at the hydrostatic κ, which a block released from rest does not need). No boundary particles: walls by the
    clamp, as in ``_taichi``. ``step.fields`` = (x, v, rho) and ``step.iters`` = the last substep's
    (divergence, density) iteration counts are there for checks."""
    h = 1e-3
    tank = _taichi_tank(n_target, h, threads)
    ti, n, H, cap, mass, x, v = tank.ti, tank.n, tank.H, tank.cap, tank.mass, tank.x, tank.v
    cnt, cell, w_cubic, grad_w = tank.cnt, tank.cell, tank.w_cubic, tank.grad_w
    cell_of, in_grid, build, integrate = tank.cell_of, tank.in_grid, tank.build, tank.integrate
    rho = ti.field(ti.f32, n)
    alpha = ti.field(ti.f32, n)
    kappa = ti.field(ti.f32, n)
    tot_div = ti.field(ti.f32, n)
    tot_rho = ti.field(ti.f32, n)
    err = ti.field(ti.f32, ())

    @ti.kernel
    def density_alpha():
        for i in range(n):
            c = cell_of(x[i])
            r_i = 0.0
            gsum = ti.Vector([0.0, 0.0, 0.0])
            gsq = 0.0
            for o in ti.static(ti.grouped(ti.ndrange((-1, 2), (-1, 2), (-1, 2)))):
                cc = c + o
                if in_grid(cc):
                    for k in range(ti.min(cnt[cc], cap)):
                        d = x[i] - x[cell[cc, k]]
                        r = d.norm()
                        if r < H:
                            r_i += mass * w_cubic(r)
                            gw = mass * grad_w(d, r)
                            gsum += gw
                            gsq += gw.dot(gw)
            rho[i] = r_i
            den = gsum.dot(gsum) + gsq
            a_i = 0.0
            if den > 1e-6:
                a_i = r_i / den
            alpha[i] = a_i

    # kernels over a given field are made per field (this module's postponed annotations hide
    # ti.template() from Taichi)
    def make_apply(k):
        @ti.kernel
        def apply():
            """vᵢ −= h·Σⱼ mⱼ(kᵢ/ρᵢ + kⱼ/ρⱼ)∇Wᵢⱼ."""
            for i in range(n):
                c = cell_of(x[i])
                ki = k[i] / rho[i]
                dv = ti.Vector([0.0, 0.0, 0.0])
                for o in ti.static(ti.grouped(ti.ndrange((-1, 2), (-1, 2), (-1, 2)))):
                    cc = c + o
                    if in_grid(cc):
                        for kk in range(ti.min(cnt[cc], cap)):
                            j = cell[cc, kk]
                            d = x[i] - x[j]
                            r = d.norm()
                            if r < H and j != i:
                                dv -= (ki + k[j] / rho[j]) * grad_w(d, r)
                v[i] += h * mass * dv

        return apply

    def make_halve(t):
        @ti.kernel
        def halve():
            for i in range(n):
                t[i] *= 0.5

        return halve

    def make_jacobi(t):
        @ti.kernel
        def jacobi():
            """κᵢ from the density predicted by the current velocities; total += κ; err = Σ e/ρ₀."""
            err[None] = 0.0
            for i in range(n):
                c = cell_of(x[i])
                drho = 0.0
                for o in ti.static(ti.grouped(ti.ndrange((-1, 2), (-1, 2), (-1, 2)))):
                    cc = c + o
                    if in_grid(cc):
                        for kk in range(ti.min(cnt[cc], cap)):
                            j = cell[cc, kk]
                            d = x[i] - x[j]
                            r = d.norm()
                            if r < H and j != i:
                                drho += mass * (v[i] - v[j]).dot(grad_w(d, r))
                e = ti.max(rho[i] + h * drho - RHO, 0.0)
                kap = e * alpha[i] / (h * h)
                kappa[i] = kap
                t[i] += kap
                err[None] += e / RHO

        return jacobi

    @ti.kernel
    def forces():
        for i in range(n):
            c = cell_of(x[i])
            acc = ti.Vector([0.0, 0.0, -9.81])
            for o in ti.static(ti.grouped(ti.ndrange((-1, 2), (-1, 2), (-1, 2)))):
                cc = c + o
                if in_grid(cc):
                    for k in range(ti.min(cnt[cc], cap)):
                        j = cell[cc, k]
                        d = x[i] - x[j]
                        r = d.norm()
                        if 1e-9 < r < H:
                            acc += 10 * MU / rho[i] * mass / rho[j] * (v[i] - v[j]).dot(d) / (
                                r * r + 0.01 * H * H) * grad_w(d, r)
            v[i] += h * acc

    apply_kappa = make_apply(kappa)
    solvers = {id(t): (make_halve(t), make_apply(t), make_jacobi(t)) for t in (tot_div, tot_rho)}

    def solve(t, tol, max_iters, min_iters):
        halve, apply_total, jacobi = solvers[id(t)]
        halve()
        apply_total()
        it = 0
        while True:
            jacobi()
            apply_kappa()
            it += 1
            if it >= max_iters or (it >= min_iters and err[None] / n <= tol):
                return it

    def step():
        build()
        density_alpha()
        i_div = solve(tot_div, 1e-4, 10, 1)
        forces()
        i_rho = solve(tot_rho, 1e-3, 40, 2)
        integrate()
        ti.sync()
        step.iters = (i_div, i_rho)
        step.div_iters += i_div
        step.density_iters += i_rho
        step.n_substeps += 1

    step.fields = (x, v, rho)
    step.iters = (0, 0)
    step.div_iters = step.density_iters = step.n_substeps = 0
    return step, n

def _rate(step, budget_s: float, min_steps: int = 2) -> float:
    step()
    step()
    best = 0.0
    for _ in range(2):
        k, t0 = 0, time.perf_counter()
        while k < min_steps or time.perf_counter() - t0 < budget_s / 2:
            step()
            k += 1
        best = max(best, k / (time.perf_counter() - t0))
    return best


def stage_times(scene, steps: int = 2) -> dict:
    """Milliseconds per substep of each kernel of ``scene``'s step, uncaptured: a CPU launch runs
    synchronously on the calling thread, so the thread CPU time around each ``wp.launch`` is the
    kernel's (CPU time, not wall time: it does not count what other processes take of the core).
    ``steps`` steps with ``warp.launch`` wrapped by the timer; {kernel name: (ms per substep,
    launches per substep)}, slowest first. The scene's state advances; later steps replay its graph."""
    import warp as wp

    sim = scene.simulator
    acc, cnt = {}, {}
    orig = wp.launch

    def timed(kernel, *args, **kw):
        t0 = time.thread_time()
        out = orig(kernel, *args, **kw)
        acc[kernel.key] = acc.get(kernel.key, 0.0) + time.thread_time() - t0
        cnt[kernel.key] = cnt.get(kernel.key, 0) + 1
        return out

    capture = sim.graph_capture
    sim.graph_capture = False
    wp.launch = timed
    try:
        for _ in range(steps):
            scene.step()
    finally:
        wp.launch = orig
        sim.graph_capture = capture
    k = steps * scene.layout.substeps
    return {name: (1e3 * t / k, cnt[name] / k) for name, t in sorted(acc.items(), key=lambda kv: -kv[1])}


def _stage_note(st: dict, top: int = 6) -> str:
    total = sum(t for t, _ in st.values())
    parts = [f"{name} {t:.2f}" + (f" ({n:.1f}x)" if n > 1.05 else "") for name, (t, n) in list(st.items())[:top]]
    return f"CPU time per substep, 1 thread, uncaptured: {total:.2f} ms = " + ", ".join(parts) + " ms (launches per substep)"


def _reference(make, n: int, budget: float):
    """(particle-substeps/s, the step function) of a Taichi reference, or (None, the reason)."""
    try:
        tstep, tps = make(n)
        return _rate(tstep, budget) * tps, tstep
    except Exception as exc:  # noqa: BLE001 - the reference is optional
        return None, f"taichi unavailable: {exc}"


def run(quick: bool = False) -> list[dict]:
    sizes = [20_000] if quick else [20_000, 100_000]
    envs = [1] if quick else [1, 8]
    budget = 3.0 if quick else 10.0
    rows = []
    for n in sizes:
        wc, wc_step = _reference(_taichi, n, budget)
        df, df_step = _reference(_taichi_dfsph, n, budget)
        refs = {"wcsph": (wc, "taichi WCSPH", "taichi CPU (all cores), same WCSPH, cell list" if wc else wc_step)}
        if df:
            k = max(df_step.n_substeps, 1)
            df_note = ("taichi CPU (all cores), same DFSPH (tol 1e-3 / 1e-4, caps 40 + 10, warm start "
                       "half the last total), cell list, walls by clamping (no boundary particles), "
                       "host-side convergence checks; from the same initial block for its own time budget, "
                       f"mean iterations/substep {df_step.div_iters / k:.1f} divergence + "
                       f"{df_step.density_iters / k:.1f} density")
        else:
            df_note = df_step
        refs["dfsph"] = (df, "taichi DFSPH", df_note)
        for n_envs in envs:
            for solver in ("wcsph", "dfsph"):
                step, pps = _pp(n, n_envs, solver)
                val = _rate(step, budget) * pps
                r, r_name, r_note = refs[solver]
                if n_envs != 1:
                    r, r_note = None, "no batched alternative (Taichi has no batch axis)"
                rows.append({"case": f"dam break {n // 1000}k particles, n_envs={n_envs}, {solver}",
                             "metric": "particle-substeps/s (graph capture on)", "unit": "particle-substeps/s",
                             "polyphys": val, "reference": r,
                             "reference_name": r_name if r is not None else "",
                             "ratio": (val / r) if r else None,
                             "notes": f"{r_note}; {threads_note(step.__self__)}"})
        # one core each: polyphys cpu_threads=1 against Taichi on one CPU thread (the per-core speed of
        # issue 25), with polyphys' per-kernel times (``stage_times``) in the notes
        for solver, make in (("wcsph", _taichi), ("dfsph", _taichi_dfsph)):
            one, pps = _pp_scene(n, 1, solver, 1)
            val = _rate(one.step, budget) * pps
            ref, ref_step = _reference(lambda n, make=make: make(n, 1), n, budget)
            st = stage_times(one)
            rows.append({"case": f"dam break {n // 1000}k particles, n_envs=1, {solver}, one thread each",
                         "metric": "particle-substeps/s (graph capture on), per core", "unit": "particle-substeps/s",
                         "polyphys": val, "reference": ref,
                         "reference_name": f"taichi {solver.upper()} (1 thread)" if ref else "",
                         "ratio": (val / ref) if ref else None,
                         "notes": f"polyphys cpu_threads=1, taichi cpu_max_num_threads=1; {_stage_note(st)}"})
            one.simulator.close()
        # one big scene on 1 and 2 threads (every stage split over the workers, docs/sph.md)
        for solver in ("wcsph", "dfsph"):
            one, pps = _pp_scene(n, 1, solver, 1)
            rows += scaling_rows(lambda t, solver=solver, one=one, n=n: one if t == 1 else _pp_scene(n, 1, solver, t)[0],
                                 f"sph dam break {n // 1000}k, n_envs=1, {solver}", pps, "particle-substeps/s",
                                 quick=quick)
    return rows


if __name__ == "__main__":
    for row in run(quick=True):
        print(row)
