"""SF stages against NumPy: outputs poisoned with NaN first, then compared with a reference."""

import numpy as np
import pytest
import warp as wp
from polyphys.plugins.sf.kernels import advection as A
from polyphys.plugins.sf.kernels import forces as F
from polyphys.plugins.sf.kernels import projection as P

from .sf_helpers import LO, make_scene

RES = (7, 6, 5)


def arr(a, dtype=wp.float32):
    return wp.array(np.ascontiguousarray(a), dtype=dtype, device="cpu")


def nan_like(shape, dtype=wp.float32):
    return arr(np.full(shape, np.nan, np.float32 if dtype == wp.float32 else np.float64), dtype)


def np_laplacian(x, ct, open_lo, open_hi, inv_dx2):
    """(A x) per cell: for fluid cells diag·x - Σ fluid neighbours, diag counting fluid neighbours and
    open domain faces; 0 on non-fluid cells."""
    out = np.zeros_like(x)
    n = x.shape
    for idx in np.ndindex(*n):
        if not ct[idx]:
            continue
        diag, off = 0, 0.0
        for a in range(3):
            for s in (-1, 1):
                nb = list(idx)
                nb[a] += s
                if 0 <= nb[a] < n[a]:
                    if ct[tuple(nb)]:
                        diag += 1
                        off += x[tuple(nb)]
                elif (open_lo if s < 0 else open_hi)[a]:
                    diag += 1
        out[idx] = (diag * x[idx] - off) * inv_dx2
    return out


def test_divergence_matches_numpy():
    rng = np.random.default_rng(0)
    nx, ny, nz = RES
    u, v, w = rng.normal(size=(2, nx + 1, ny, nz)), rng.normal(size=(2, nx, ny + 1, nz)), rng.normal(size=(2, nx, ny, nz + 1))
    ct = (rng.uniform(size=(2, *RES)) > 0.2).astype(np.int32)
    out = nan_like((2, *RES))
    inv_dx = 1.0 / 0.07
    wp.launch(P.divergence, dim=(2, *RES), inputs=[wp.float32(inv_dx), wp.float32(-1.0), arr(u), arr(v), arr(w),
                                                    arr(ct, wp.int32), out])
    ref = -((u[:, 1:] - u[:, :-1]) + (v[:, :, 1:] - v[:, :, :-1]) + (w[..., 1:] - w[..., :-1])) * inv_dx
    np.testing.assert_allclose(out.numpy(), np.where(ct == 1, ref, 0.0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("open_lo, open_hi", [((0, 0, 0), (0, 0, 0)), ((1, 0, 0), (0, 0, 1))])
def test_operator_and_residual_match_numpy(open_lo, open_hi):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, *RES))
    b = rng.normal(size=(2, *RES))
    ct = (rng.uniform(size=(2, *RES)) > 0.25).astype(np.int32)
    inv_dx2 = 1.0 / 0.05 ** 2
    done = arr(np.array([0, 0], np.int32), wp.int32)
    q, r = nan_like((2, *RES)), nan_like((2, *RES))
    common = [wp.vec3i(*open_lo), wp.vec3i(*open_hi), wp.float32(inv_dx2), done]
    wp.launch(P.apply_a, dim=(2, *RES), inputs=[*common, arr(x), arr(ct, wp.int32), q])
    wp.launch(P.residual, dim=(2, *RES), inputs=[*common, arr(b), arr(x), arr(ct, wp.int32), r])
    for e in range(2):
        ref = np_laplacian(x[e], ct[e], open_lo, open_hi, inv_dx2)
        np.testing.assert_allclose(q.numpy()[e], ref, rtol=1e-5, atol=1e-2)
        np.testing.assert_allclose(r.numpy()[e], np.where(ct[e] == 1, b[e] - ref, 0.0), rtol=1e-5, atol=1e-2)
    # a done env is skipped: its outputs stay untouched (NaN)
    q2 = nan_like((2, *RES))
    wp.launch(P.apply_a, dim=(2, *RES), inputs=[*common[:3], arr(np.array([0, 1], np.int32), wp.int32), arr(x),
                                                 arr(ct, wp.int32), q2])
    assert np.isfinite(q2.numpy()[0]).all() and np.isnan(q2.numpy()[1]).all()


def test_restriction_is_the_transpose_of_prolongation_over_8():
    rng = np.random.default_rng(2)
    fine, coarse = (2, 7, 6, 5), (2, 4, 3, 3)
    rf = rng.normal(size=fine)
    xc = rng.normal(size=coarse)
    ct = np.ones(fine, np.int32)
    done = arr(np.zeros(2, np.int32), wp.int32)
    bc = nan_like(coarse)
    wp.launch(P.restrict, dim=coarse, inputs=[done, arr(rf), bc])
    xf = arr(np.zeros(fine, np.float32))
    wp.launch(P.prolong_add, dim=fine, inputs=[done, arr(xc), arr(ct, wp.int32), xf])
    # <R rf, xc> = <rf, P xc> / 8
    np.testing.assert_allclose((bc.numpy() * xc).sum(), (rf * xf.numpy()).sum() / 8.0, rtol=1e-5)
    i, j, k = np.indices(fine[1:])
    np.testing.assert_array_equal(xf.numpy()[1], xc[1][i // 2, j // 2, k // 2].astype(np.float32))


@pytest.mark.parametrize("open_faces", [(), ("+z", "-x")])
def test_multigrid_preconditioner_is_symmetric_positive(open_faces):
    """The V-cycle (red-black GS forward before, backward after the coarse correction; restriction =
    prolongationᵀ/8) is a symmetric positive operator: <y, M x> = <M y, x>, <x, M x> > 0 (float64)."""
    import polyphys
    from polyphys import morphs

    res, dx = (12, 10, 9), 0.05
    sc, _ = make_scene(res=res, dx=dx, precision="64", open_faces=open_faces, entities=[
        (morphs.Sphere(radius=0.06, pos=tuple(np.asarray(LO) + [0.2, 0.2, 0.2])), polyphys.materials.SF.Smoke(), {}),
        (morphs.Box(size=(0.12, 0.1, 0.14), pos=tuple(np.asarray(LO) + [0.35, 0.3, 0.25]), euler=(15, 0, 30)),
         polyphys.materials.Kinematic(), {})])
    sc.build()
    s = sc.solver("sf")
    part = s._parts[0]
    s._obstacles(part)
    ct = part.ct[0].numpy()[0].astype(bool)
    assert (~ct).sum() >= 8 and len(s.level_dims) >= 2
    rng = np.random.default_rng(3)

    def M(vec):
        part.done.zero_()
        part.r.assign(np.where(ct, vec, 0.0)[None])
        part.z.fill_(float("nan"))
        s._precondition(part)
        z = part.z.numpy()[0].copy()        # numpy() of a CPU array is a view: copy it
        assert np.isfinite(z).all()
        return z

    x, y = rng.normal(size=res) * ct, rng.normal(size=res) * ct
    mx, my = M(x), M(y)
    assert (y * mx).sum() == pytest.approx((my * x).sum(), rel=1e-10)
    for _ in range(3):
        v = rng.normal(size=res) * ct
        assert (v * M(v)).sum() > 0


def test_semi_lagrangian_is_exact_for_a_linear_field_and_uniform_flow():
    nx, ny, nz = RES
    dx, h = 0.1, 0.05
    lo = np.array(LO)
    vel = np.array([0.3, -0.2, 0.5])
    u = np.full((1, nx + 1, ny, nz), vel[0])
    v = np.full((1, nx, ny + 1, nz), vel[1])
    w = np.full((1, nx, ny, nz + 1), vel[2])
    idx = np.stack(np.indices(RES), -1)
    x = lo + (idx + 0.5) * dx
    g = np.array([1.5, -0.7, 2.0])
    f = (x @ g)[None]
    out = nan_like((1, *RES))
    wp.launch(A.advect_sl, dim=(1, *RES), inputs=[wp.vec3(*lo), wp.float32(dx), wp.float32(1 / dx), wp.vec3(0.5, 0.5, 0.5),
                                                 wp.float32(h), arr(u), arr(v), arr(w), arr(f), out])
    ref = (x - h * vel) @ g
    interior = (slice(1, nx - 1), slice(1, ny - 1), slice(1, nz - 1))    # the trace stays inside the stencil
    np.testing.assert_allclose(out.numpy()[0][interior], ref[interior], rtol=1e-5, atol=1e-5)


def test_maccormack_creates_no_new_extrema():
    rng = np.random.default_rng(4)
    nx, ny, nz = RES
    dx, h = 0.1, 0.2
    f = (rng.uniform(size=(1, *RES)) > 0.6).astype(np.float32)     # a sharp field: worst case for overshoot
    u, v, w = (rng.normal(scale=0.4, size=s) for s in ((1, nx + 1, ny, nz), (1, nx, ny + 1, nz), (1, nx, ny, nz + 1)))
    lo, off = wp.vec3(*LO), wp.vec3(0.5, 0.5, 0.5)
    model = [lo, wp.float32(dx), wp.float32(1 / dx), off]
    U, V, W, Fa = arr(u), arr(v), arr(w), arr(f)
    fwd, bwd, out = nan_like(f.shape), nan_like(f.shape), nan_like(f.shape)
    xb, xf = (arr(np.full((1, *RES, 3), np.nan, np.float32), wp.vec3) for _ in range(2))
    wp.launch(A.trace, dim=(1, *RES), inputs=[*model, wp.float32(h), U, V, W, xb])
    wp.launch(A.trace, dim=(1, *RES), inputs=[*model, wp.float32(-h), U, V, W, xf])
    wp.launch(A.sample_at, dim=(1, *RES), inputs=[lo, wp.float32(1 / dx), off, xb, Fa, fwd])
    wp.launch(A.advect_sl, dim=(1, *RES), inputs=[*model, wp.float32(h), U, V, W, Fa, bwd])
    np.testing.assert_array_equal(fwd.numpy(), bwd.numpy())      # trace + sample = the fused step
    wp.launch(A.advect_sl, dim=(1, *RES), inputs=[*model, wp.float32(-h), U, V, W, fwd, bwd])
    wp.launch(A.maccormack_correct, dim=(1, *RES), inputs=[lo, wp.float32(1 / dx), off, xb, xf, Fa, fwd, out])
    o = out.numpy()
    raw = fwd.numpy() + 0.5 * (f - bwd.numpy())
    assert raw.max() > 1.0 + 1e-3 or raw.min() < -1e-3       # the unlimited correction does overshoot here
    assert o.min() >= 0.0 and o.max() <= 1.0


def test_vorticity_of_a_linear_shear_is_exact():
    nx, ny, nz = RES
    dx = 0.1
    lo = np.array(LO)
    # u = a·y, v = b·z, w = c·x: ω = (∂w/∂y - ∂v/∂z, ∂u/∂z - ∂w/∂x, ∂v/∂x - ∂u/∂y) = (-b, -c, -a)
    a, b, c = 0.7, -1.3, 0.4
    pu = lo + (np.stack(np.indices((nx + 1, ny, nz)), -1) + [0, 0.5, 0.5]) * dx
    pv = lo + (np.stack(np.indices((nx, ny + 1, nz)), -1) + [0.5, 0, 0.5]) * dx
    pw = lo + (np.stack(np.indices((nx, ny, nz + 1)), -1) + [0.5, 0.5, 0]) * dx
    out = arr(np.full((1, *RES, 3), np.nan, np.float32), wp.vec3)
    wp.launch(F.vorticity, dim=(1, *RES), inputs=[wp.float32(1 / dx), arr(a * pu[None, ..., 1]), arr(b * pv[None, ..., 2]),
                                                 arr(c * pw[None, ..., 0]), out])
    np.testing.assert_allclose(out.numpy()[0].reshape(-1, 3), np.tile([-b, -c, -a], (nx * ny * nz, 1)), atol=1e-4)
