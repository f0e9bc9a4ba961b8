"""Bias stage kernels: recursive Newton-Euler at qacc = 0 (MuJoCo's mj_rne: Coriolis, centrifugal and
gravity forces) and the generalized external forces (gravity compensation, link wrenches, a
coupler's reaction). One thread per env; native loop in kernels/bias.cpp (why: kernels/native.py).

Reads ``m``: the tree, link_gravcomp, opt.gravity; ``d``: qvel, cdof, cdofdot, cinert, cvel, link_pos,
link_xipos, xfrc_force/torque, coupling_force/torque (after the kinematics stage).
Writes ``d``: cacc_w/v, cfrc_t/f, cext_t/f, qfrc_bias, qfrc_ext.
"""

from typing import Any

import warp as wp

from ..types import overload
from . import native

wp.set_module_options({"enable_backward": False, "optimization_level": 3})

I1 = wp.array(dtype=wp.int32)
A1 = wp.array(dtype=Any)
A2 = wp.array2d(dtype=Any)


@wp.func_native(native.body(__file__, "rne_native"))
def rne_native(env: int, nl: int, n: int, gravity: Any, link_parent: I1, link_root: I1, link_dof_adr: I1,
               dof_link: I1, link_gravcomp: A1, qvel: A2, cdof_w: A2, cdof_v: A2, cdofdot_w: A2, cdofdot_v: A2,
               cinert_m: A2, cinert_mc: A2, cinert_i: A2, cvel_w: A2, cvel_v: A2, link_pos: A2, link_xipos: A2,
               xfrc_force: A2, xfrc_torque: A2, coupling_force: A2, coupling_torque: A2, cacc_w: A2, cacc_v: A2,
               cfrc_t: A2, cfrc_f: A2, cext_t: A2, cext_f: A2, qfrc_bias: A2, qfrc_ext: A2): ...


@wp.func
def rne_env(m: Any, d: Any, env: int):
    """The stage for one env: run by ``rne`` and by factorization's fused ``smooth``."""
    rne_native(env, m.nl, m.nv, m.opt.gravity, m.link_parent, m.link_root, m.link_dof_adr, m.dof_link,
               m.link_gravcomp, d.qvel, d.cdof_w, d.cdof_v, d.cdofdot_w, d.cdofdot_v, d.cinert_m, d.cinert_mc,
               d.cinert_i, d.cvel_w, d.cvel_v, d.link_pos, d.link_xipos, d.xfrc_force, d.xfrc_torque,
               d.coupling_force, d.coupling_torque, d.cacc_w, d.cacc_v, d.cfrc_t, d.cfrc_f, d.cext_t, d.cext_f,
               d.qfrc_bias, d.qfrc_ext)


@wp.kernel
def rne(m: Any, d: Any):
    rne_env(m, d, wp.tid())


overload(rne)
