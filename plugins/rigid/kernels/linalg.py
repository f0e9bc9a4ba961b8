"""Dense per-env linear algebra of the constraint solvers (native loops in kernels/linalg.cpp; why:
kernels/native.py): J·x, Jᵀf with the gradient, M·x, row spans and a dense Cholesky factor/solve (the
Newton Hessian M + Σ w·JᵀJ is built inside the native Newton solve, kernels/convex_solve.cpp, over its block
pattern for a problem of many blocks; `hess_factor_solve` runs that linear step alone for the stage tests). @wp.funcs
over one env's rows (``env``), called by the solve kernels.
"""

from typing import Any

import warp as wp

from . import native

wp.set_module_options({"enable_backward": False})

A2 = wp.array2d(dtype=Any)
A3 = wp.array3d(dtype=Any)
I3 = wp.array3d(dtype=wp.int32)
I2 = wp.array2d(dtype=wp.int32)
I1 = wp.array(dtype=wp.int32)


@wp.func_native(native.body(__file__, "jac_mul_native"))
def jac_mul(env: int, nrow: int, nv: int, J: A3, x: A2, sub: A2, use_sub: int, out: A2, sc_a: A3, sc_b: A3,
            sc_mode: int): ...


@wp.func_native(native.body(__file__, "jac_mul2_native"))
def jac_mul2(env: int, nrow: int, nv: int, J: A3, xa: A2, xb: A2, sub: A2, out_a: A2, out_b: A2, sc_a: A3, sc_b: A3,
             sc_mode: int): ...


@wp.func_native(native.body(__file__, "jac_tmul_grad_native"))
def jac_tmul_grad(env: int, nrow: int, nv: int, full: int, J: A3, efc_force: A2, M: A3, qacc: A2, qacc_smooth: A2,
                  qfrc_constraint: A2, ma: A2, grad: A2, sc_a: A3, sc_b: A3, sc_mode: int): ...


@wp.func_native(native.body(__file__, "mat_mul_native"))
def mat_mul(env: int, nv: int, M: A3, x: A2, out: A2, sc_a: A3, sc_b: A3, sc_mode: int): ...


@wp.func_native(native.body(__file__, "spans_fill_native"))
def spans_fill(env: int, nrow: int, nv: int, efc_span: I3, efc_seg: I3, J: A3, M: A3, sc_a: A3, sc_b: A3, sc_mode: int,
               dof_parent: I1, tree: int): ...


@wp.func_native(native.body(__file__, "chol_factor_native"))
def cholesky_factor_native(env: int, nv: int, L: A3): ...


@wp.func_native(native.body(__file__, "chol_solve_native"))
def cholesky_solve_native(env: int, nv: int, L: A3, b: A2, x: A2): ...


@wp.func
def cholesky_factor(nv: int, env: int, L: wp.array3d(dtype=Any)):
    """In-place dense Cholesky (lower triangle) of the symmetric matrix stored in L[env]."""
    cholesky_factor_native(env, nv, L)


@wp.func
def cholesky_solve(nv: int, env: int, L: wp.array3d(dtype=Any), b: wp.array2d(dtype=Any), x: wp.array2d(dtype=Any)):
    """x = (L Lᵀ)⁻¹ b (L: the factor of cholesky_factor)."""
    cholesky_solve_native(env, nv, L, b, x)


@wp.func_native(native.body(__file__, "hess_factor_solve_native"))
def hess_factor_solve(env: int, nv: int, nrow: int, M: A3, J: A3, efc_type: I2, efc_dim: I2, efc_state: I2, efc_D: A2,
                      sc: A3, sc_mode: int, blocks: int, H: A3, b: A2, x: A2, nb_out: I1): ...
