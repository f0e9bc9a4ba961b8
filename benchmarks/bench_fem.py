"""FEM throughput: element·substeps/s for ~10k and ~100k linear tets, explicit and implicit, n_envs 1
and 8, graph capture on, against a NumPy/SciPy implementation of the same scene measured in the
same run (no other FEM engine is installable here: Newton and Genesis are not in this environment).

Scene: a box of linear-elastic tets (model="linear", E=1e6, nu=0.3, rho=1000) clamped at one end,
sagging under gravity. Explicit: symplectic Euler, 1 substep per step. Implicit: backward Euler with
2 Newton iterations of 20 Jacobi-PCG iterations and 3 line-search trials (polyphys); the reference
solves the same linear system once per step with SciPy's CG (20 iterations, Jacobi) on a
pre-assembled sparse matrix — less work than Newton + line search, so the implicit ratio is
conservative. References run one env; their n_envs=8 time is 8× the one-env time (NumPy has no
batch dimension here).
"""

from __future__ import annotations

import numpy as np

from . import row, time_steps

E, NU, RHO, H = 1e6, 0.3, 1000.0, 1e-4
SIZES = {"10k": (24, 9, 8), "100k": (52, 18, 18)}       # cells; 6 tets per cell


def _scene(res, integrator, n_envs):
    import polyphys
    from polyphys import morphs
    from polyphys.plugins.fem import FEMOptions
    from polyphys.plugins.fem.materials import Elastic

    dt = H if integrator == "explicit" else 1e-2
    opts = FEMOptions(integrator=integrator, newton_iters=2, cg_iters=20, line_search_iters=3)
    sc = polyphys.Scene(sim=polyphys.SimOptions(dt=dt, substeps=1, cpu_threads=1), fem=opts)
    size = np.asarray(res, dtype=float) * 0.01
    body = sc.add_entity(morphs.Box(size=tuple(size), pos=(size[0] / 2, 0, 1)),
                         Elastic(E=E, nu=NU, rho=RHO, model="linear"), resolution=res,
                         fixed=lambda x: x[:, 0] < 1e-6)
    sc.build(n_envs=n_envs)
    return sc, body


class _NumpyFEM:
    """The same linear-elastic tet model, vectorized NumPy (explicit) / SciPy sparse (implicit)."""

    def __init__(self, body, integrator):
        import scipy.sparse as sp

        X, T = body.rest_vertices, body.elements
        self.T = T
        self.x = X.copy()
        self.v = np.zeros_like(X)
        Dm = np.transpose(X[T][:, 1:] - X[T][:, :1], (0, 2, 1))
        self.Dinv = np.linalg.inv(Dm)
        self.vol = np.abs(np.linalg.det(Dm)) / 6
        self.m = body.vertex_mass
        self.free = ~body.get_fixed_vertices().reshape(-1, len(X))[0]
        self.mu = E / (2 * (1 + NU))
        self.lam = E * NU / ((1 + NU) * (1 - 2 * NU))
        self.g = np.array([0, 0, -9.81])
        self.integrator = integrator
        if integrator == "implicit":
            self.h = 1e-2
            B = np.empty((len(T), 4, 3))
            B[:, 1:] = self.Dinv
            B[:, 0] = -self.Dinv.sum(axis=1)
            mu, lam = self.mu, self.lam
            # K_ab = V (mu (gb·ga) I + mu gb ga^T + lam ga gb^T)
            Kab = self.vol[:, None, None, None, None] * (
                mu * np.einsum("eak,ebk->eab", B, B)[..., None, None] * np.eye(3)
                + mu * np.einsum("ebi,eaj->eabij", B, B) + lam * np.einsum("eai,ebj->eabij", B, B))
            rows = (3 * T[:, :, None, None, None] + np.arange(3)[None, None, None, :, None])
            cols = (3 * T[:, None, :, None, None] + np.arange(3)[None, None, None, None, :])
            rows, cols = np.broadcast_to(rows, Kab.shape), np.broadcast_to(cols, Kab.shape)
            n = 3 * len(X)
            K = sp.csr_matrix((Kab.ravel(), (rows.ravel(), cols.ravel())), shape=(n, n))
            free = np.repeat(self.free, 3)
            self.fi = np.nonzero(free)[0]
            A = K + sp.diags(np.repeat(self.m, 3) / self.h ** 2)
            self.A = A[self.fi][:, self.fi].tocsr()
            self.K = K
            self.Minv_diag = 1.0 / self.A.diagonal()

    def forces(self):
        x = self.x[self.T]
        F = np.transpose(x[:, 1:] - x[:, :1], (0, 2, 1)) @ self.Dinv
        eps = 0.5 * (F + np.transpose(F, (0, 2, 1))) - np.eye(3)
        P = 2 * self.mu * eps + self.lam * np.trace(eps, axis1=1, axis2=2)[:, None, None] * np.eye(3)
        Hm = -self.vol[:, None, None] * P @ np.transpose(self.Dinv, (0, 2, 1))
        f = np.zeros_like(self.x)
        cols = np.transpose(Hm, (0, 2, 1))
        for a in range(3):
            np.add.at(f, self.T[:, a + 1], cols[:, a])
        np.add.at(f, self.T[:, 0], -cols.sum(axis=1))
        return f

    def step(self):
        if self.integrator == "explicit":
            f = self.forces()
            self.v[self.free] += H * (f[self.free] / self.m[self.free, None] + self.g)
            self.x[self.free] += H * self.v[self.free]
            return
        from scipy.sparse.linalg import LinearOperator, cg

        # backward Euler, linear: (M/h² + K) dx = M/h v... written for the displacement increment
        h = self.h
        rhs_full = (np.repeat(self.m, 3) / h * self.v.ravel() + np.repeat(self.m, 3) * np.tile(self.g, len(self.x))
                    + self.forces().ravel())
        P = LinearOperator(self.A.shape, matvec=lambda r: self.Minv_diag * r)
        dx, _ = cg(self.A, rhs_full[self.fi], maxiter=20, M=P)
        d = np.zeros(self.x.size)
        d[self.fi] = dx
        d = d.reshape(-1, 3)
        self.x += d
        self.v = d / h


def run(quick: bool = False) -> list[dict]:
    import warp as wp

    wp.config.log_level = getattr(wp, "LOG_WARNING", 30)
    rows = []
    sizes = ["10k"] if quick else ["10k", "100k"]
    envs = (1,) if quick else (1, 8)
    for size in sizes:
        res = SIZES[size]
        for integrator in ("explicit", "implicit"):
            ref = None
            for n in envs:
                sc, body = _scene(res, integrator, n)
                ne = body.n_elements
                t = time_steps(sc.step, min_time=0.2 if quick else 1.0, min_steps=2,
                               warmup=2, repeats=2 if quick else 3)
                if ref is None:
                    ref_sim = _NumpyFEM(body, integrator)
                    ref = time_steps(ref_sim.step, min_time=0.2 if quick else 1.0, min_steps=2, warmup=1,
                                     repeats=2 if quick else 3)
                rate, ref_rate = ne * n / t, ne * n / (ref * n)
                rows.append(row(f"{integrator}, {ne} tets, n_envs={n}", "element-substeps/s", "elem*steps/s",
                                rate, ref_rate,
                                "NumPy vectorized" if integrator == "explicit" else "SciPy sparse CG (linear)",
                                ratio=rate / ref_rate,
                                notes="graph capture on, 1 thread; ratio > 1: polyphys faster"
                                      + ("" if n == 1 else "; reference = 1-env time × n_envs")))
    return rows


if __name__ == "__main__":
    for r in run(quick=True):
        print(r)
