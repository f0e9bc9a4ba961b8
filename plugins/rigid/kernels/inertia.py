"""Inertia stage kernels: composite rigid bodies and the tree-sparse mass matrix (MuJoCo's mj_crb),
armature included. One thread per env; native loop in kernels/inertia.cpp (why: kernels/native.py).

Reads ``m``: link_parent, the dof tree, dof_armature; ``d``: cdof, cinert (after the kinematics stage).
Writes ``d``: crb_m/mc/i, mass. ``general`` = 1: every dof through the general loop (no closed-form block of
a free joint; the reference of the block's test).
"""

from typing import Any

import warp as wp

from ..types import overload
from . import native

wp.set_module_options({"enable_backward": False, "optimization_level": 3})

I1 = wp.array(dtype=wp.int32)
A2 = wp.array2d(dtype=Any)


@wp.func_native(native.body(__file__, "crb_native"))
def crb_native(env: int, nl: int, n: int, general: int, link_parent: I1, dof_link: I1, dof_madr: I1, dof_depth: I1, m_col: I1,
               armature: A2, cdof_w: A2, cdof_v: A2, cinert_m: A2, cinert_mc: A2, cinert_i: A2, crb_m: A2,
               crb_mc: A2, crb_i: A2, mass: A2): ...


@wp.kernel
def crb(m: Any, d: Any, general: int):
    env = wp.tid()
    crb_native(env, m.nl, m.nv, general, m.link_parent, m.dof_link, m.dof_madr, m.dof_depth, m.m_col, m.dof_armature,
               d.cdof_w, d.cdof_v, d.cinert_m, d.cinert_mc, d.cinert_i, d.crb_m, d.crb_mc, d.crb_i, d.mass)


overload(crb)
