"""Factorization stage kernels: LᵀDL of M + hd·D along the dof tree and the solve for the
acceleration (MuJoCo's mj_factorI + mj_solveLD), and the dense matrix the constraint solver uses.
One thread per env; native loops in kernels/factorization.cpp (why: kernels/native.py).

``factor_solve`` reads ``m``: the dof tree; ``d``: mass, dof_dv and the force ``qfrc_in``; writes
``d.qld`` and ``qacc_out``. ``mass_dense`` reads ``d``: mass, dof_dv; writes ``d.qM`` = M + hd·D
(only the tree pattern: the entries off it stay zero from allocation).
``crb_factor_solve`` is the inertia stage (kernels/inertia.py ``crb``), ``factor_solve``, with ``hd_int``
>= 0 the factor of M + hd_int·D into ``d.qld_int`` and, with ``dense`` = 1, ``mass_dense`` in one launch
(the same native parts, so the same numbers): the solver's smooth pass uses it (one pass over each env's
M instead of three or four). ``ld_solve`` is qacc_out = (M + hd_int·D)⁻¹·qfrc_in from ``d.qld_int`` (the
integration's solve after the constraint solve, MuJoCo's mj_solveLD without a new factorization).
``hd`` is 0 (M itself), or the substep h (M + h·D: the integrator's implicit damping, docs/semantics.md §R2).
"""

from typing import Any

import warp as wp

from ..types import overload
from . import native
from .actuation import actuation_env
from .bias import rne_env
from .kinematics import kinematics_env

wp.set_module_options({"enable_backward": False, "optimization_level": 3})

I1 = wp.array(dtype=wp.int32)
A2 = wp.array2d(dtype=Any)
A3 = wp.array3d(dtype=Any)


@wp.func_native(native.body(__file__, "ldl_solve_native"))
def ldl_solve_native(env: int, n: int, hd: Any, dof_madr: I1, dof_depth: I1, m_col: I1, mass: A2, dof_dv: A2,
                     qfrc: A2, qld: A2, qacc: A2): ...


@wp.func_native(native.body(__file__, "ld_solve_native"))
def ld_solve_native(env: int, n: int, prefetch: int, dof_madr: I1, dof_depth: I1, m_col: I1, qld: A2, qfrc: A2, qacc: A2): ...


@wp.func_native(native.body(__file__, "mass_dense_native"))
def mass_dense_native(env: int, n: int, hd: Any, dof_madr: I1, dof_depth: I1, m_col: I1, mass: A2,
                      dof_dv: A2, M_out: A3): ...


@wp.func_native(native.body(__file__, "crb_factor_native"))
def crb_factor_native(env: int, nl: int, n: int, hd: Any, hd_int: Any, dense: int, prefetch: int, link_parent: I1,
                      dof_link: I1, dof_madr: I1, dof_depth: I1, m_col: I1, armature: A2, cdof_w: A2, cdof_v: A2,
                      cinert_m: A2, cinert_mc: A2, cinert_i: A2, dof_dv: A2, qfrc: A2, crb_m: A2, crb_mc: A2,
                      crb_i: A2, mass: A2, qld: A2, qacc: A2, qld_int: A2, M_out: A3): ...


@wp.kernel
def factor_solve(m: Any, d: Any, hd: Any, qfrc_in: wp.array2d(dtype=Any), qacc_out: wp.array2d(dtype=Any)):
    env = wp.tid()
    ldl_solve_native(env, m.nv, hd, m.dof_madr, m.dof_depth, m.m_col, d.mass, d.dof_dv, qfrc_in, d.qld, qacc_out)


@wp.kernel
def mass_dense(m: Any, d: Any, hd: Any):
    env = wp.tid()
    mass_dense_native(env, m.nv, hd, m.dof_madr, m.dof_depth, m.m_col, d.mass, d.dof_dv, d.qM)


@wp.kernel
def ld_solve(m: Any, d: Any, prefetch: int, qfrc_in: wp.array2d(dtype=Any), qacc_out: wp.array2d(dtype=Any)):
    env = wp.tid()
    ld_solve_native(env, m.nv, prefetch, m.dof_madr, m.dof_depth, m.m_col, d.qld_int, qfrc_in, qacc_out)


@wp.func
def crb_factor_env(m: Any, d: Any, env: int, hd: Any, hd_int: Any, dense: int, prefetch: int, qfrc_in: wp.array2d(dtype=Any),
                   qacc_out: wp.array2d(dtype=Any)):
    """``crb_factor_solve`` for one env: run by that kernel and by the fused ``smooth``."""
    crb_factor_native(env, m.nl, m.nv, hd, hd_int, dense, prefetch, m.link_parent, m.dof_link, m.dof_madr, m.dof_depth, m.m_col,
                      m.dof_armature, d.cdof_w, d.cdof_v, d.cinert_m, d.cinert_mc, d.cinert_i, d.dof_dv, qfrc_in,
                      d.crb_m, d.crb_mc, d.crb_i, d.mass, d.qld, qacc_out, d.qld_int, d.qM)


@wp.kernel
def crb_factor_solve(m: Any, d: Any, hd: Any, hd_int: Any, dense: int, prefetch: int, qfrc_in: wp.array2d(dtype=Any),
                     qacc_out: wp.array2d(dtype=Any)):
    crb_factor_env(m, d, wp.tid(), hd, hd_int, dense, prefetch, qfrc_in, qacc_out)


@wp.kernel
def smooth(m: Any, d: Any, hd: Any, hd_int: Any, dense: int, prefetch: int, qfrc_in: wp.array2d(dtype=Any),
           qacc_out: wp.array2d(dtype=Any)):
    """The smooth stages of one env in one launch: kinematics, bias (RNE), actuation, crb_factor_solve (each
    stage module's per-env function, so the same numbers as the four launches)."""
    env = wp.tid()
    kinematics_env(m, d, env)
    rne_env(m, d, env)
    actuation_env(m, d, env)
    crb_factor_env(m, d, env, hd, hd_int, dense, prefetch, qfrc_in, qacc_out)


overload(factor_solve, hd=lambda s: s, qfrc_in=lambda s: wp.array2d(dtype=s), qacc_out=lambda s: wp.array2d(dtype=s))
overload(mass_dense, hd=lambda s: s)
overload(ld_solve, qfrc_in=lambda s: wp.array2d(dtype=s), qacc_out=lambda s: wp.array2d(dtype=s))
overload(crb_factor_solve, hd=lambda s: s, hd_int=lambda s: s, qfrc_in=lambda s: wp.array2d(dtype=s),
         qacc_out=lambda s: wp.array2d(dtype=s))
overload(smooth, hd=lambda s: s, hd_int=lambda s: s, qfrc_in=lambda s: wp.array2d(dtype=s),
         qacc_out=lambda s: wp.array2d(dtype=s))
