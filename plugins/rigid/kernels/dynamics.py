"""Smooth articulated-body dynamics of the rigid solver: one thread per env.

One kernel, ``rigid_dynamics``, does a whole substep for one env, following MuJoCo's pipeline
(``mj_kinematics``, ``mj_comPos``, ``mj_crb``, ``mj_comVel``, ``mj_rne``, ``mj_passive``,
``mj_fwdActuation``, ``mj_factorI``/``mj_solveLD``, ``mj_Euler``/``mj_implicit``):

1. forward kinematics: link frames, joint anchors/axes, CoM, inertia in the world frame;
2. spatial quantities about a per-tree reference point (the tree root's origin): composite-style
   inertia ``(m, m·c, I_ref)``, joint motion subspaces ``cdof`` (angular, linear), link velocities
   ``cvel`` and ``cdof_dot = cvel × cdof``;
3. mass matrix by the composite-rigid-body algorithm, armature added, stored tree-sparse (row ``i``
   holds ``M[i, j]`` for ``j`` = i and its dof ancestors, MuJoCo's layout);
4. bias forces (gravity, Coriolis, centrifugal) by recursive Newton-Euler, and the forces of
   gravity compensation and external link wrenches through the same backward pass;
5. passive joint damping/stiffness, MJCF actuators, per-dof PD/velocity/force control;
6. ``(M + h·D)`` factorised as LᵀDL along the tree (no dense inverse, no fill-in), solved for qacc;
7. (mode STEP) ``v' = v + h·a``, ``q' = q ⊕ h·v'`` (quaternions right-multiplied by exp(h·ω)).

Like MuJoCo's mj_step, a step leaves the derived arrays at the state the last substep started from;
the solver refreshes link poses lazily (mode KINEMATICS) when a getter needs them.

``D`` depends on the integrator (SPEC R2): Euler uses the passive damping only (MuJoCo's
eulerdamp), implicitfast and approximate_implicitfast also the velocity derivative of the actuator
and PD forces. With no constraint solve in between, the three formulations of SPEC R2 reduce to one
solve with ``M + h·D``.

Stages 1-2, 4, 3, 5, 6 and 7 (but the implicit-midpoint branch) are ``wp.func_native`` snippets:
plain C++ over raw per-env row pointers of the same arrays (Warp's CPU indexing costs a stride
computation and a negative-index fix-up per access; see docs/rigid.md, Performance). They take
each per-env row as contiguous, as the solver's (n_envs, k) arrays and their partition slices are.

Spatial vectors are pairs of vec3 (angular, linear) for motions and (torque, force) for forces, both
about the tree's reference point.
"""

from typing import Any

import warp as wp

# forward simulation only (not differentiable): no adjoint code, half the compile time; -O3
# (Warp compiles CPU kernels at -O2 by default; -O3 measured ~4 % faster here)
wp.set_module_options({"enable_backward": False, "optimization_level": 3})

JOINT_FIXED = wp.constant(0)
JOINT_REVOLUTE = wp.constant(1)
JOINT_PRISMATIC = wp.constant(2)
JOINT_SPHERICAL = wp.constant(3)
JOINT_FREE = wp.constant(4)

MODE_STEP = wp.constant(0)       # full substep: dynamics and integration
MODE_FORWARD = wp.constant(1)    # dynamics at the current state (qacc = M⁻¹f), no time advance
MODE_KINEMATICS = wp.constant(2)  # link poses and velocities only
# MODE_STEP right after a MODE_FORWARD launch at the same state (the constrained substep): the
# kinematics, RNE and CRBA outputs of that launch are reused (nothing they depend on changed in
# between; qfrc_applied, which carries the constraint force, only enters the dof forces)
MODE_INTEGRATE = wp.constant(3)

CTRL_FORCE = wp.constant(0)
CTRL_POSITION = wp.constant(1)
CTRL_VELOCITY = wp.constant(2)

INTEGRATOR_EULER = wp.constant(0)


# -- LᵀDL factorisation and solve (step 6) as native C++ over raw row pointers ------------------
# Warp's CPU array indexing recomputes `base + i·stride₀ + j·stride₁` with a negative-index fix-up
# on every access (~17 instructions per update of the inner loop); this loop is MuJoCo's
# mj_factorI / mj_solveLD on one env's contiguous rows, in plain C++ (compiles for CPU and CUDA). The
# inner update dst[s] -= q[s]·tmp reads row k and writes an ancestor's row (disjoint ranges).
_LDL_SNIPPET = """
    typedef {T} T;
    const int* madr = dof_madr.data;
    const int* dep = dof_depth.data;
    const int* col = m_col.data;
    const int nnz = (int)m_col.shape[0];
    T* q = (T*)((char*)qld.data + (size_t)env * qld.strides[0]);
    const T* mm = (const T*)((char*)mass.data + (size_t)env * mass.strides[0]);
    const T* dv = (const T*)((char*)dof_dv.data + (size_t)env * dof_dv.strides[0]);
    const T* f = (const T*)((char*)qfrc.data + (size_t)env * qfrc.strides[0]);
    T* x = (T*)((char*)qacc.data + (size_t)env * qacc.strides[0]);
    for (int a = 0; a < nnz; ++a) q[a] = mm[a];
    for (int i = 0; i < n; ++i) q[madr[i]] += hd * dv[i];
    for (int k = n - 1; k >= 0; --k) {
        const int akk = madr[k];
        const int kend = akk + 1 + dep[k];
        const T inv = T(1) / q[akk];
        for (int aki = akk + 1; aki < kend; ++aki) {
            const T tmp = q[aki] * inv;
            T* dst = q + (madr[col[aki]] - aki);
            for (int s = aki; s < kend; ++s) dst[s] -= q[s] * tmp;
            q[aki] = tmp;
        }
    }
    for (int i = 0; i < n; ++i) x[i] = f[i];
    for (int i = n - 1; i >= 0; --i) {          // x <- L^-T x
        const T xi = x[i];
        const int e = madr[i] + 1 + dep[i];
        for (int a = madr[i] + 1; a < e; ++a) x[col[a]] -= q[a] * xi;
    }
    for (int i = 0; i < n; ++i) x[i] /= q[madr[i]];   // x <- D^-1 x
    for (int i = 0; i < n; ++i) {                // x <- L^-1 x
        T xi = x[i];
        const int e = madr[i] + 1 + dep[i];
        for (int a = madr[i] + 1; a < e; ++a) xi -= q[a] * x[col[a]];
        x[i] = xi;
    }
"""


def _ldl_solve_signature(s):
    A2 = wp.array2d(dtype=s)
    I1 = wp.array(dtype=wp.int32)

    def ldl_solve(env: wp.int32, n: wp.int32, hd: s, dof_madr: I1, dof_depth: I1, m_col: I1, mass: A2,
                  dof_dv: A2, qfrc: A2, qld: A2, qacc: A2):
        ...

    return ldl_solve


ldl_solve = wp.func_native(_LDL_SNIPPET.replace("{T}", "double"))(_ldl_solve_signature(wp.float64))
ldl_solve = wp.func_native(_LDL_SNIPPET.replace("{T}", "float"))(_ldl_solve_signature(wp.float32))


# -- kinematics, spatial inertia, motion subspaces and velocities (steps 1-2), native ----------
# 1. link frames: joints of a link in order (free: q is the pose; revolute rotates about its anchor
#    by q − ref; prismatic translates by q − ref; spherical rotates about its anchor), the link
#    quaternion normalised once after its joints as MuJoCo; CoM and world inertia;
# 2. about the tree's reference point ref (the root link's origin): inertia (m, m·c, I_ref), motion
#    subspaces cdof (MuJoCo mj_comPos: ball/free rotations along the final frame's axes, free
#    translations the world axes), velocities cvel and cdof_dot = cvel × cdof (mj_comVel: free-joint
#    translations first, with zero cdof_dot), link velocities at the origin and CoM
_KIN_SNIPPET = """
    typedef {T} T;
    typedef wp::vec_t<3, T> V;
    typedef wp::quat_t<T> Q;
    typedef wp::mat_t<3, 3, T> M3;
    const size_t e = (size_t)env;
#define PP_ROW(a) ((decltype(a.data))((char*)a.data + e * a.strides[0]))
    const int* par = link_parent.data;
    const int* root = link_root.data;
    const V* pos0 = link_pos0.data;
    const Q* quat0 = link_quat0.data;
    const int* jadr = link_joint_adr.data;
    const int* jtype = joint_type.data;
    const int* jqs = joint_q_start.data;
    const int* jds = joint_dof_start.data;
    const V* jpos = joint_pos.data;
    const V* jaxis = joint_axis.data;
    const T* jref = joint_ref.data;
    const V* rpos = PP_ROW(root_pos);
    const Q* rquat = PP_ROW(root_quat);
    const T* lmass = PP_ROW(link_mass);
    const V* lcom = PP_ROW(link_com);
    const M3* linert = PP_ROW(link_inertia);
    const T* qp = PP_ROW(qpos);
    const T* qv = PP_ROW(qvel);
    V* lp = PP_ROW(link_pos);
    Q* lq = PP_ROW(link_quat);
    V* lvel = PP_ROW(link_vel);
    V* lang = PP_ROW(link_ang);
    V* xi = PP_ROW(link_xipos);
    V* lcv = PP_ROW(link_com_vel);
    V* anc = PP_ROW(joint_anchor);
    V* xax = PP_ROW(joint_xaxis);
    T* im = PP_ROW(cinert_m);
    V* imc = PP_ROW(cinert_mc);
    M3* ii = PP_ROW(cinert_i);
    V* vw = PP_ROW(cvel_w);
    V* vv = PP_ROW(cvel_v);
    V* cw = PP_ROW(cdof_w);
    V* cv = PP_ROW(cdof_v);
    V* cdw = PP_ROW(cdofdot_w);
    V* cdv = PP_ROW(cdofdot_v);
#undef PP_ROW
    const V zero(T(0));
    for (int l = 0; l < nl; ++l) {
        const int p = par[l];
        V xpos;
        Q xquat;
        if (p < 0) {
            xpos = rpos[l];
            xquat = rquat[l];
        } else {
            const Q pq = lq[p];
            xpos = wp::add(lp[p], wp::quat_rotate(pq, pos0[l]));
            xquat = wp::mul(pq, quat0[l]);
        }
        const int j0 = jadr[l];
        const int j1 = jadr[l + 1];
        for (int j = j0; j < j1; ++j) {
            const int jt = jtype[j];
            const int qs = jqs[j];
            if (jt == 4) {
                xpos = V(qp[qs], qp[qs + 1], qp[qs + 2]);
                xquat = wp::normalize(Q(qp[qs + 4], qp[qs + 5], qp[qs + 6], qp[qs + 3]));
                anc[j] = xpos;
            } else if (jt == 1) {
                const V anchor = wp::add(xpos, wp::quat_rotate(xquat, jpos[j]));
                xax[j] = wp::quat_rotate(xquat, jaxis[j]);
                const Q rot = wp::quat_from_axis_angle(jaxis[j], qp[qs] - jref[j]);
                xquat = wp::mul(xquat, rot);
                xpos = wp::sub(anchor, wp::quat_rotate(xquat, jpos[j]));
                anc[j] = anchor;
            } else if (jt == 2) {
                const V axis = wp::quat_rotate(xquat, jaxis[j]);
                xax[j] = axis;
                xpos = wp::add(xpos, wp::mul(axis, qp[qs] - jref[j]));
                anc[j] = wp::add(xpos, wp::quat_rotate(xquat, jpos[j]));
            } else if (jt == 3) {
                const V anchor = wp::add(xpos, wp::quat_rotate(xquat, jpos[j]));
                const Q qb = wp::normalize(Q(qp[qs + 1], qp[qs + 2], qp[qs + 3], qp[qs]));
                xquat = wp::mul(xquat, qb);
                xpos = wp::sub(anchor, wp::quat_rotate(xquat, jpos[j]));
                anc[j] = anchor;
            }
        }
        xquat = wp::normalize(xquat);    // once per link, after its joints (MuJoCo mj_kinematics)
        lp[l] = xpos;
        lq[l] = xquat;
        const V ref = lp[root[l]];
        const M3 R = wp::quat_to_matrix(xquat);
        const V xipos = wp::add(xpos, wp::mul(R, lcom[l]));
        xi[l] = xipos;
        const T m = lmass[l];
        const V c = wp::sub(xipos, ref);
        const M3 sk = wp::skew(c);
        im[l] = m;
        imc[l] = wp::mul(m, c);
        ii[l] = wp::sub(wp::mul(wp::mul(R, linert[l]), wp::transpose(R)), wp::mul(m, wp::mul(sk, sk)));
        // motion subspaces about ref
        for (int j = j0; j < j1; ++j) {
            const int jt = jtype[j];
            const int ds = jds[j];
            const V anchor = anc[j];
            if (jt == 1) {
                const V a = xax[j];
                cw[ds] = a;
                cv[ds] = wp::cross(a, wp::sub(ref, anchor));
            } else if (jt == 2) {
                cw[ds] = zero;
                cv[ds] = xax[j];
            } else if (jt == 3 || jt == 4) {
                int r0 = ds;
                if (jt == 4) {
                    for (int k = 0; k < 3; ++k) {
                        V ek = zero;
                        ek.c[k] = T(1);
                        cw[ds + k] = zero;
                        cv[ds + k] = ek;
                    }
                    r0 = ds + 3;
                }
                for (int k = 0; k < 3; ++k) {
                    const V a(R.data[0][k], R.data[1][k], R.data[2][k]);
                    cw[r0 + k] = a;
                    cv[r0 + k] = wp::cross(a, wp::sub(ref, anchor));
                }
            }
        }
        // velocities
        V w = zero;
        V v = zero;
        if (p >= 0) {
            w = vw[p];
            v = vv[p];
        }
        for (int j = j0; j < j1; ++j) {
            const int jt = jtype[j];
            const int ds = jds[j];
            int nrot = 0;
            int r0 = ds;
            if (jt == 4) {
                for (int k = 0; k < 3; ++k) {
                    cdw[ds + k] = zero;
                    cdv[ds + k] = zero;
                    v = wp::add(v, wp::mul(cv[ds + k], qv[ds + k]));
                }
                nrot = 3;
                r0 = ds + 3;
            } else if (jt == 3) {
                nrot = 3;
            } else if (jt == 1 || jt == 2) {
                nrot = 1;
            }
            V dw = zero;
            V dv = zero;
            for (int k = 0; k < nrot; ++k) {
                const int d = r0 + k;
                const V aw = cw[d];
                const V av = cv[d];
                cdw[d] = wp::cross(w, aw);
                cdv[d] = wp::add(wp::cross(w, av), wp::cross(v, aw));
                dw = wp::add(dw, wp::mul(aw, qv[d]));
                dv = wp::add(dv, wp::mul(av, qv[d]));
            }
            w = wp::add(w, dw);
            v = wp::add(v, dv);
        }
        vw[l] = w;
        vv[l] = v;
        lang[l] = w;
        lvel[l] = wp::add(v, wp::cross(w, wp::sub(xpos, ref)));
        lcv[l] = wp::add(v, wp::cross(w, wp::sub(xipos, ref)));
    }
"""


def _kin_signature(s):
    A1 = wp.array(dtype=s)
    A2 = wp.array2d(dtype=s)
    V = wp.types.vector(3, s)
    Q = wp.types.quaternion(s)
    V1 = wp.array(dtype=V)
    V2 = wp.array2d(dtype=V)
    Q1 = wp.array(dtype=Q)
    Q2 = wp.array2d(dtype=Q)
    M2 = wp.array2d(dtype=wp.types.matrix((3, 3), s))
    I1 = wp.array(dtype=wp.int32)

    def kinematics(env: wp.int32, nl: wp.int32, link_parent: I1, link_root: I1, link_pos0: V1, link_quat0: Q1,
                   link_joint_adr: I1, joint_type: I1, joint_q_start: I1, joint_dof_start: I1, joint_pos: V1,
                   joint_axis: V1, joint_ref: A1, root_pos: V2, root_quat: Q2, link_mass: A2, link_com: V2,
                   link_inertia: M2, qpos: A2, qvel: A2, link_pos: V2, link_quat: Q2, link_vel: V2,
                   link_ang: V2, link_xipos: V2, link_com_vel: V2, joint_anchor: V2, joint_xaxis: V2,
                   cinert_m: A2, cinert_mc: V2, cinert_i: M2, cvel_w: V2, cvel_v: V2, cdof_w: V2, cdof_v: V2,
                   cdofdot_w: V2, cdofdot_v: V2):
        ...

    return kinematics


kinematics = wp.func_native(_KIN_SNIPPET.replace("{T}", "double"))(_kin_signature(wp.float64))
kinematics = wp.func_native(_KIN_SNIPPET.replace("{T}", "float"))(_kin_signature(wp.float32))


# -- RNE (step 4), native like ldl_solve ------------------------------------------------------
# forward pass: cacc(l) = cacc(parent) + Σ cdof_dot·qvel, cacc(root) = −g (held in cext meanwhile);
# cfrc = I·cacc + v ×* (I·v) with the link inertia I = (m, m·c, I_ref) and v = cvel; the external
# wrench of a link is the applied/coupling wrench at the CoM and gravity compensation −m·g·gravcomp;
# backward pass: cfrc, cext and the composite inertia crb accumulate towards the root
_RNE_SNIPPET = """
    typedef {T} T;
    typedef wp::vec_t<3, T> V;
    typedef wp::mat_t<3, 3, T> M3;
    const size_t e = (size_t)env;
#define PP_ROW(a) ((decltype(a.data))((char*)a.data + e * a.strides[0]))
    const int* par = link_parent.data;
    const int* root = link_root.data;
    const int* dadr = link_dof_adr.data;
    const T* gc = link_gravcomp.data;
    const T* qv = PP_ROW(qvel);
    const V* ddw = PP_ROW(cdofdot_w);
    const V* ddv = PP_ROW(cdofdot_v);
    const T* im = PP_ROW(cinert_m);
    const V* imc = PP_ROW(cinert_mc);
    const M3* ii_ = PP_ROW(cinert_i);
    const V* vw = PP_ROW(cvel_w);
    const V* vv = PP_ROW(cvel_v);
    const V* lp = PP_ROW(link_pos);
    const V* xi = PP_ROW(link_xipos);
    const V* xf = PP_ROW(xfrc_force);
    const V* xt = PP_ROW(xfrc_torque);
    const V* kf = PP_ROW(coupling_force);
    const V* kt = PP_ROW(coupling_torque);
    V* ft = PP_ROW(cfrc_t);
    V* ff = PP_ROW(cfrc_f);
    V* et = PP_ROW(cext_t);
    V* ef = PP_ROW(cext_f);
    T* bm = PP_ROW(crb_m);
    V* bmc = PP_ROW(crb_mc);
    M3* bi = PP_ROW(crb_i);
#undef PP_ROW
    for (int l = 0; l < nl; ++l) {
        const int p = par[l];
        V aw = p >= 0 ? et[p] : V(T(0));
        V av = p >= 0 ? ef[p] : wp::neg(gravity);
        for (int d = dadr[l]; d < dadr[l + 1]; ++d) {
            aw = wp::add(aw, wp::mul(ddw[d], qv[d]));
            av = wp::add(av, wp::mul(ddv[d], qv[d]));
        }
        et[l] = aw;
        ef[l] = av;
    }
    for (int l = 0; l < nl; ++l) {
        const T m = im[l];
        const V mc = imc[l];
        const M3 ii = ii_[l];
        const V w = vw[l];
        const V v = vv[l];
        const V aw = et[l];
        const V av = ef[l];
        const V hw = wp::add(wp::mul(ii, w), wp::cross(mc, v));
        const V hv = wp::sub(wp::mul(m, v), wp::cross(mc, w));
        ft[l] = wp::add(wp::add(wp::add(wp::mul(ii, aw), wp::cross(mc, av)), wp::cross(w, hw)), wp::cross(v, hv));
        ff[l] = wp::add(wp::sub(wp::mul(m, av), wp::cross(mc, aw)), wp::cross(w, hv));
        const V c = wp::sub(xi[l], lp[root[l]]);
        const V f = wp::sub(wp::add(xf[l], kf[l]), wp::mul(gravity, m * gc[l]));
        et[l] = wp::add(wp::add(xt[l], kt[l]), wp::cross(c, f));
        ef[l] = f;
        bm[l] = m;
        bmc[l] = mc;
        bi[l] = ii;
    }
    for (int l = nl - 1; l >= 0; --l) {
        const int p = par[l];
        if (p >= 0) {
            ft[p] = wp::add(ft[p], ft[l]);
            ff[p] = wp::add(ff[p], ff[l]);
            et[p] = wp::add(et[p], et[l]);
            ef[p] = wp::add(ef[p], ef[l]);
            bm[p] = bm[p] + bm[l];
            bmc[p] = wp::add(bmc[p], bmc[l]);
            bi[p] = wp::add(bi[p], bi[l]);
        }
    }
"""


def _rne_signature(s):
    A1 = wp.array(dtype=s)
    A2 = wp.array2d(dtype=s)
    V = wp.types.vector(3, s)
    V2 = wp.array2d(dtype=V)
    M2 = wp.array2d(dtype=wp.types.matrix((3, 3), s))
    I1 = wp.array(dtype=wp.int32)

    def rne(env: wp.int32, nl: wp.int32, gravity: V, link_parent: I1, link_root: I1, link_dof_adr: I1,
            link_gravcomp: A1, qvel: A2, cdofdot_w: V2, cdofdot_v: V2, cinert_m: A2, cinert_mc: V2,
            cinert_i: M2, cvel_w: V2, cvel_v: V2, link_pos: V2, link_xipos: V2, xfrc_force: V2,
            xfrc_torque: V2, coupling_force: V2, coupling_torque: V2, cfrc_t: V2, cfrc_f: V2, cext_t: V2,
            cext_f: V2, crb_m: A2, crb_mc: V2, crb_i: M2):
        ...

    return rne


rne = wp.func_native(_RNE_SNIPPET.replace("{T}", "double"))(_rne_signature(wp.float64))
rne = wp.func_native(_RNE_SNIPPET.replace("{T}", "float"))(_rne_signature(wp.float32))


# -- passive, actuator and control forces, velocity derivative D (step 5), native --------------
# passive −damping·v − stiffness·(q − springref) (revolute/prismatic); actuators
# gain·ctrl + b0 + b1·len + b2·vel (len = gear·q, ctrl and force clamped); PD/velocity/force control
# clamped to the dof force range; D = damping, minus gear²(gain₂·ctrl + bias₂) of an actuator off its
# force limits (MuJoCo's mjd_actuator_vel), plus kv of PD/velocity control off its limits (not Euler)
_FRC_SNIPPET = """
    typedef {T} T;
    typedef wp::vec_t<3, T> V;
    const size_t e = (size_t)env;
#define PP_ROW(a) ((decltype(a.data))((char*)a.data + e * a.strides[0]))
    const int* dj = dof_joint.data;
    const int* jtype = joint_type.data;
    const int* jqs = joint_q_start.data;
    const T* jref = joint_ref.data;
    const T* jsref = joint_springref.data;
    const T* damp = PP_ROW(dof_damping);
    const T* stiff = PP_ROW(dof_stiffness);
    const T* kp_ = PP_ROW(dof_kp);
    const T* kv_ = PP_ROW(dof_kv);
    const T* flo = PP_ROW(dof_force_lo);
    const T* fhi = PP_ROW(dof_force_hi);
    const T* ctrl = PP_ROW(ctrl_in);
    const int* mode = PP_ROW(dof_mode_in);
    const T* tpos = PP_ROW(dof_target_pos_in);
    const T* tvel = PP_ROW(dof_target_vel_in);
    const T* tfrc = PP_ROW(dof_target_force_in);
    const T* applied = PP_ROW(qfrc_applied_in);
    const T* qp = PP_ROW(qpos);
    const T* qv = PP_ROW(qvel);
    const T* bias = PP_ROW(qfrc_bias);
    const T* ext = PP_ROW(qfrc_ext);
    T* passive = PP_ROW(qfrc_passive);
    T* actf = PP_ROW(qfrc_actuator);
    T* control = PP_ROW(qfrc_control);
    T* smooth = PP_ROW(qfrc_smooth);
    T* dv = PP_ROW(dof_dv);
    T* aforce = PP_ROW(act_force);
#undef PP_ROW
    const bool implicit = integrator != 0;
    for (int i = 0; i < n; ++i) {
        const int jn = dj[i];
        const int jt = jtype[jn];
        T frc = -damp[i] * qv[i];
        if (jt == 1 || jt == 2) frc = frc - stiff[i] * (qp[jqs[jn]] - jsref[jn]);
        passive[i] = frc;
        actf[i] = T(0);
        dv[i] = damp[i];
    }
    for (int a = 0; a < na; ++a) {
        const int i = act_dof.data[a];
        const T g = act_gear.data[a];
        const T u = wp::clamp(ctrl[a], act_ctrl_lo.data[a], act_ctrl_hi.data[a]);
        const T len = g * qp[act_qadr.data[a]];
        const T vel = g * qv[i];
        const V gp = act_gain.data[a];
        const V bp = act_bias.data[a];
        const T gain = gp.c[0] + gp.c[1] * len + gp.c[2] * vel;
        T frc = gain * u + bp.c[0] + bp.c[1] * len + bp.c[2] * vel;
        const T lo = act_force_lo.data[a];
        const T hi = act_force_hi.data[a];
        frc = wp::clamp(frc, lo, hi);
        aforce[a] = frc;
        actf[i] = actf[i] + g * frc;
        if (implicit && frc > lo && frc < hi) dv[i] = dv[i] - g * g * (gp.c[2] * u + bp.c[2]);
    }
    for (int i = 0; i < n; ++i) {
        const int jn = dj[i];
        const int md = mode[i];
        T tau = tfrc[i];
        const T kv = kv_[i];
        if (md == 1) {
            const T qrel = qp[jqs[jn]] - jref[jn];
            tau = kp_[i] * (tpos[i] - qrel) - kv * qv[i];
        } else if (md == 2) {
            tau = kv * (tvel[i] - qv[i]);
        }
        tau = wp::clamp(tau, flo[i], fhi[i]);
        if (md != 0 && implicit && tau > flo[i] && tau < fhi[i]) dv[i] = dv[i] + kv;
        control[i] = tau;
        smooth[i] = passive[i] + actf[i] + tau + applied[i] + ext[i] - bias[i];
    }
"""


def _frc_signature(s):
    A1 = wp.array(dtype=s)
    A2 = wp.array2d(dtype=s)
    V1 = wp.array(dtype=wp.types.vector(3, s))
    I1 = wp.array(dtype=wp.int32)
    I2 = wp.array2d(dtype=wp.int32)

    def dof_forces(env: wp.int32, n: wp.int32, na: wp.int32, integrator: wp.int32, dof_joint: I1,
                   joint_type: I1, joint_q_start: I1, joint_ref: A1, joint_springref: A1, act_dof: I1,
                   act_qadr: I1, act_gear: A1, act_gain: V1, act_bias: V1, act_ctrl_lo: A1, act_ctrl_hi: A1,
                   act_force_lo: A1, act_force_hi: A1, dof_damping: A2, dof_stiffness: A2, dof_kp: A2,
                   dof_kv: A2, dof_force_lo: A2, dof_force_hi: A2, ctrl_in: A2, dof_mode_in: I2,
                   dof_target_pos_in: A2, dof_target_vel_in: A2, dof_target_force_in: A2,
                   qfrc_applied_in: A2, qpos: A2, qvel: A2, qfrc_bias: A2, qfrc_ext: A2, qfrc_passive: A2,
                   qfrc_actuator: A2, qfrc_control: A2, qfrc_smooth: A2, dof_dv: A2, act_force: A2):
        ...

    return dof_forces


dof_forces = wp.func_native(_FRC_SNIPPET.replace("{T}", "double"))(_frc_signature(wp.float64))
dof_forces = wp.func_native(_FRC_SNIPPET.replace("{T}", "float"))(_frc_signature(wp.float32))


# -- CRBA rows and generalized bias/external forces (step 3), native like ldl_solve ------------
# for dof i on link l: f = I_crb(l)·cdof_i (torque ft, force ff), M[i, j] = cdof_j·f for j = i and
# its dof ancestors (the row's columns m_col), armature on the diagonal; bias_i = cdof_i·cfrc(l),
# ext_i = cdof_i·cext(l)
_CRBA_SNIPPET = """
    typedef {T} T;
    typedef wp::vec_t<3, T> V;
    typedef wp::mat_t<3, 3, T> M3;
    const int* madr = dof_madr.data;
    const int* dep = dof_depth.data;
    const int* col = m_col.data;
    const int* dl = dof_link.data;
    const size_t e = (size_t)env;
    const T* arm = (const T*)((char*)armature.data + e * armature.strides[0]);
    const V* cw = (const V*)((char*)cdof_w.data + e * cdof_w.strides[0]);
    const V* cv = (const V*)((char*)cdof_v.data + e * cdof_v.strides[0]);
    const V* ft_ = (const V*)((char*)cfrc_t.data + e * cfrc_t.strides[0]);
    const V* ff_ = (const V*)((char*)cfrc_f.data + e * cfrc_f.strides[0]);
    const V* et_ = (const V*)((char*)cext_t.data + e * cext_t.strides[0]);
    const V* ef_ = (const V*)((char*)cext_f.data + e * cext_f.strides[0]);
    const T* cm = (const T*)((char*)crb_m.data + e * crb_m.strides[0]);
    const V* cmc = (const V*)((char*)crb_mc.data + e * crb_mc.strides[0]);
    const M3* ci = (const M3*)((char*)crb_i.data + e * crb_i.strides[0]);
    T* bias = (T*)((char*)qfrc_bias.data + e * qfrc_bias.strides[0]);
    T* ext = (T*)((char*)qfrc_ext.data + e * qfrc_ext.strides[0]);
    T* mm = (T*)((char*)mass.data + e * mass.strides[0]);
    for (int i = 0; i < n; ++i) {
        const int l = dl[i];
        const V aw = cw[i];
        const V av = cv[i];
        bias[i] = wp::dot(aw, ft_[l]) + wp::dot(av, ff_[l]);
        ext[i] = wp::dot(aw, et_[l]) + wp::dot(av, ef_[l]);
        const V mc = cmc[l];
        const V ft = wp::add(wp::mul(ci[l], aw), wp::cross(mc, av));
        const V ff = wp::sub(wp::mul(cm[l], av), wp::cross(mc, aw));
        const int a0 = madr[i];
        const int a1 = a0 + 1 + dep[i];
        for (int a = a0; a < a1; ++a) {
            const int j = col[a];
            mm[a] = wp::dot(cw[j], ft) + wp::dot(cv[j], ff);
        }
        mm[a0] += arm[i];
    }
"""


def _crba_signature(s):
    A2 = wp.array2d(dtype=s)
    V2 = wp.array2d(dtype=wp.types.vector(3, s))
    M2 = wp.array2d(dtype=wp.types.matrix((3, 3), s))
    I1 = wp.array(dtype=wp.int32)

    def crba(env: wp.int32, n: wp.int32, dof_link: I1, dof_madr: I1, dof_depth: I1, m_col: I1, armature: A2,
             cdof_w: V2, cdof_v: V2, cfrc_t: V2, cfrc_f: V2, cext_t: V2, cext_f: V2, crb_m: A2, crb_mc: V2,
             crb_i: M2, qfrc_bias: A2, qfrc_ext: A2, mass: A2):
        ...

    return crba


crba = wp.func_native(_CRBA_SNIPPET.replace("{T}", "double"))(_crba_signature(wp.float64))
crba = wp.func_native(_CRBA_SNIPPET.replace("{T}", "float"))(_crba_signature(wp.float32))


# -- integration (step 7), native -----------------------------------------------------------
# clears the one-substep coupling wrench (and, on the last substep, the one-step applied forces);
# flags the free joints of the implicit midpoint branch this substep (eligible, and no damping,
# armature or PD/velocity control on their dofs in this env) and integrates every other dof:
# v' = v + h·a; q' = q + h·v' (revolute, prismatic, free translation); quaternions right-multiplied by
# exp(h·ω/2) as MuJoCo's mju_quatIntegrate (normalised before and after)
_INT_SNIPPET = """
    typedef {T} T;
    typedef wp::vec_t<3, T> V;
    typedef wp::quat_t<T> Q;
    const size_t e = (size_t)env;
#define PP_ROW(a) ((decltype(a.data))((char*)a.data + e * a.strides[0]))
    const int* jmid = joint_midpoint.data;
    const int* jtype = joint_type.data;
    const int* jqs = joint_q_start.data;
    const int* jds = joint_dof_start.data;
    const int* dj = dof_joint.data;
    const T* damp = PP_ROW(dof_damping);
    const T* arm = PP_ROW(dof_armature);
    const int* mode = PP_ROW(dof_mode_in);
    const T* qa = PP_ROW(qacc);
    T* qp = PP_ROW(qpos);
    T* qv = PP_ROW(qvel);
    int* act = PP_ROW(joint_mid_active);
    V* kf = PP_ROW(coupling_force);
    V* kt = PP_ROW(coupling_torque);
    V* xf = PP_ROW(xfrc_force);
    V* xt = PP_ROW(xfrc_torque);
    T* applied = PP_ROW(qfrc_applied);
#undef PP_ROW
    const V zero(T(0));
    for (int l = 0; l < nl; ++l) {
        kf[l] = zero;
        kt[l] = zero;
    }
    if (clear_ext != 0) {
        for (int l = 0; l < nl; ++l) {
            xf[l] = zero;
            xt[l] = zero;
        }
        for (int i = 0; i < n; ++i) applied[i] = T(0);
    }
    const int nj = (int)joint_type.shape[0];
    for (int j = 0; j < nj; ++j) {
        int use = 0;
        if (jmid[j] != 0) {
            use = 1;
            for (int k = 0; k < 6; ++k) {
                const int d = jds[j] + k;
                if (damp[d] != T(0) || arm[d] != T(0) || mode[d] != 0) use = 0;
            }
        }
        act[j] = use;
    }
    for (int i = 0; i < n; ++i)
        if (act[dj[i]] == 0) qv[i] = qv[i] + h * qa[i];
    for (int j = 0; j < nj; ++j) {
        if (act[j] != 0) continue;
        const int jt = jtype[j];
        const int qs = jqs[j];
        const int ds = jds[j];
        if (jt == 1 || jt == 2) {
            qp[qs] = qp[qs] + h * qv[ds];
        } else if (jt == 3 || jt == 4) {
            int qq = qs;
            int wd = ds;
            if (jt == 4) {
                for (int k = 0; k < 3; ++k) qp[qs + k] = qp[qs + k] + h * qv[ds + k];
                qq = qs + 3;
                wd = ds + 3;
            }
            Q qr = wp::normalize(Q(qp[qq + 1], qp[qq + 2], qp[qq + 3], qp[qq]));
            const V wv(qv[wd], qv[wd + 1], qv[wd + 2]);
            const T nw = wp::length(wv);
            if (nw > T(0)) {
                const Q dq = wp::quat_from_axis_angle(wp::div(wv, nw), nw * h);
                qr = wp::normalize(wp::mul(qr, dq));
            }
            qp[qq] = qr.w;
            qp[qq + 1] = qr.x;
            qp[qq + 2] = qr.y;
            qp[qq + 3] = qr.z;
        }
    }
"""


def _int_signature(s):
    A2 = wp.array2d(dtype=s)
    V2 = wp.array2d(dtype=wp.types.vector(3, s))
    I1 = wp.array(dtype=wp.int32)
    I2 = wp.array2d(dtype=wp.int32)

    def integrate(env: wp.int32, n: wp.int32, nl: wp.int32, h: s, clear_ext: wp.int32, joint_midpoint: I1,
                  joint_type: I1, joint_q_start: I1, joint_dof_start: I1, dof_joint: I1, dof_damping: A2,
                  dof_armature: A2, dof_mode_in: I2, qacc: A2, qpos: A2, qvel: A2, joint_mid_active: I2,
                  coupling_force: V2, coupling_torque: V2, xfrc_force: V2, xfrc_torque: V2, qfrc_applied: A2):
        ...

    return integrate


integrate = wp.func_native(_INT_SNIPPET.replace("{T}", "double"))(_int_signature(wp.float64))
integrate = wp.func_native(_INT_SNIPPET.replace("{T}", "float"))(_int_signature(wp.float32))


@wp.kernel
def rigid_dynamics(
    mode: wp.int32,
    integrator: wp.int32,
    clear_ext: wp.int32,
    h: Any,
    gravity: Any,
    # Model:
    link_parent: wp.array(dtype=wp.int32),
    link_root: wp.array(dtype=wp.int32),
    link_pos0: wp.array(dtype=Any),
    link_quat0: wp.array(dtype=Any),
    link_joint_adr: wp.array(dtype=wp.int32),
    link_dof_adr: wp.array(dtype=wp.int32),
    link_gravcomp: wp.array(dtype=Any),
    joint_type: wp.array(dtype=wp.int32),
    joint_q_start: wp.array(dtype=wp.int32),
    joint_dof_start: wp.array(dtype=wp.int32),
    joint_pos: wp.array(dtype=Any),
    joint_axis: wp.array(dtype=Any),
    joint_ref: wp.array(dtype=Any),
    joint_springref: wp.array(dtype=Any),
    n_dofs: wp.int32,
    dof_parent: wp.array(dtype=wp.int32),
    dof_madr: wp.array(dtype=wp.int32),
    dof_depth: wp.array(dtype=wp.int32),
    m_col: wp.array(dtype=wp.int32),
    dof_link: wp.array(dtype=wp.int32),
    dof_joint: wp.array(dtype=wp.int32),
    joint_midpoint: wp.array(dtype=wp.int32),
    n_act: wp.int32,
    act_dof: wp.array(dtype=wp.int32),
    act_qadr: wp.array(dtype=wp.int32),
    act_gear: wp.array(dtype=Any),
    act_gain: wp.array(dtype=Any),
    act_bias: wp.array(dtype=Any),
    act_ctrl_lo: wp.array(dtype=Any),
    act_ctrl_hi: wp.array(dtype=Any),
    act_force_lo: wp.array(dtype=Any),
    act_force_hi: wp.array(dtype=Any),
    # Model, per env (domain randomisation):
    root_pos: wp.array2d(dtype=Any),
    root_quat: wp.array2d(dtype=Any),
    link_mass: wp.array2d(dtype=Any),
    link_com: wp.array2d(dtype=Any),
    link_inertia: wp.array2d(dtype=Any),
    dof_damping: wp.array2d(dtype=Any),
    dof_armature: wp.array2d(dtype=Any),
    dof_stiffness: wp.array2d(dtype=Any),
    dof_kp: wp.array2d(dtype=Any),
    dof_kv: wp.array2d(dtype=Any),
    dof_force_lo: wp.array2d(dtype=Any),
    dof_force_hi: wp.array2d(dtype=Any),
    # Data in (state):
    ctrl_in: wp.array2d(dtype=Any),
    dof_mode_in: wp.array2d(dtype=wp.int32),
    dof_target_pos_in: wp.array2d(dtype=Any),
    dof_target_vel_in: wp.array2d(dtype=Any),
    dof_target_force_in: wp.array2d(dtype=Any),
    qfrc_applied_in: wp.array2d(dtype=Any),
    xfrc_force_in: wp.array2d(dtype=Any),
    xfrc_torque_in: wp.array2d(dtype=Any),
    coupling_force_in: wp.array2d(dtype=Any),
    coupling_torque_in: wp.array2d(dtype=Any),
    # Data in/out (state):
    qpos: wp.array2d(dtype=Any),
    qvel: wp.array2d(dtype=Any),
    qacc_out: wp.array2d(dtype=Any),
    # Data out (derived):
    link_pos_out: wp.array2d(dtype=Any),
    link_quat_out: wp.array2d(dtype=Any),
    link_vel_out: wp.array2d(dtype=Any),
    link_ang_out: wp.array2d(dtype=Any),
    link_xipos_out: wp.array2d(dtype=Any),
    link_com_vel_out: wp.array2d(dtype=Any),
    joint_anchor_out: wp.array2d(dtype=Any),
    joint_xaxis_out: wp.array2d(dtype=Any),
    cinert_m: wp.array2d(dtype=Any),
    cinert_mc: wp.array2d(dtype=Any),
    cinert_i: wp.array2d(dtype=Any),
    crb_m: wp.array2d(dtype=Any),
    crb_mc: wp.array2d(dtype=Any),
    crb_i: wp.array2d(dtype=Any),
    cvel_w: wp.array2d(dtype=Any),
    cvel_v: wp.array2d(dtype=Any),
    cdof_w: wp.array2d(dtype=Any),
    cdof_v: wp.array2d(dtype=Any),
    cdofdot_w: wp.array2d(dtype=Any),
    cdofdot_v: wp.array2d(dtype=Any),
    cfrc_t: wp.array2d(dtype=Any),
    cfrc_f: wp.array2d(dtype=Any),
    cext_t: wp.array2d(dtype=Any),
    cext_f: wp.array2d(dtype=Any),
    mass_out: wp.array2d(dtype=Any),
    qld_out: wp.array2d(dtype=Any),
    qfrc_bias_out: wp.array2d(dtype=Any),
    qfrc_passive_out: wp.array2d(dtype=Any),
    qfrc_actuator_out: wp.array2d(dtype=Any),
    qfrc_control_out: wp.array2d(dtype=Any),
    qfrc_ext_out: wp.array2d(dtype=Any),
    qfrc_smooth_out: wp.array2d(dtype=Any),
    dof_dv_out: wp.array2d(dtype=Any),
    act_force_out: wp.array2d(dtype=Any),
    joint_mid_active: wp.array2d(dtype=wp.int32),
):
    env = wp.tid()
    n_links = link_parent.shape[0]
    s0 = type(h)(0.0)
    s1 = type(h)(1.0)
    zero = gravity * s0

    # -- 1-2. kinematics, spatial inertia, motion subspaces, velocities (native, see kinematics)
    if mode != MODE_INTEGRATE:
        kinematics(env, n_links, link_parent, link_root, link_pos0, link_quat0, link_joint_adr, joint_type,
                   joint_q_start, joint_dof_start, joint_pos, joint_axis, joint_ref, root_pos, root_quat,
                   link_mass, link_com, link_inertia, qpos, qvel, link_pos_out, link_quat_out, link_vel_out,
                   link_ang_out, link_xipos_out, link_com_vel_out, joint_anchor_out, joint_xaxis_out, cinert_m,
                   cinert_mc, cinert_i, cvel_w, cvel_v, cdof_w, cdof_v, cdofdot_w, cdofdot_v)

    if mode == MODE_KINEMATICS:
        return

    # -- 4. RNE, composite inertia, external link forces (native, see rne) ---------------------
    if mode != MODE_INTEGRATE:
        rne(env, n_links, gravity, link_parent, link_root, link_dof_adr, link_gravcomp, qvel, cdofdot_w,
            cdofdot_v, cinert_m, cinert_mc, cinert_i, cvel_w, cvel_v, link_pos_out, link_xipos_out,
            xfrc_force_in, xfrc_torque_in, coupling_force_in, coupling_torque_in, cfrc_t, cfrc_f, cext_t,
            cext_f, crb_m, crb_mc, crb_i)

        # -- 3. mass matrix (CRBA), bias and external generalized forces (native, see crba) -----
        crba(env, n_dofs, dof_link, dof_madr, dof_depth, m_col, dof_armature, cdof_w, cdof_v, cfrc_t, cfrc_f,
             cext_t, cext_f, crb_m, crb_mc, crb_i, qfrc_bias_out, qfrc_ext_out, mass_out)

    # -- 5. passive, actuator and control forces; velocity derivative D (native, see dof_forces) -
    dof_forces(env, n_dofs, n_act, integrator, dof_joint, joint_type, joint_q_start, joint_ref,
               joint_springref, act_dof, act_qadr, act_gear, act_gain, act_bias, act_ctrl_lo, act_ctrl_hi,
               act_force_lo, act_force_hi, dof_damping, dof_stiffness, dof_kp, dof_kv, dof_force_lo,
               dof_force_hi, ctrl_in, dof_mode_in, dof_target_pos_in, dof_target_vel_in,
               dof_target_force_in, qfrc_applied_in, qpos, qvel, qfrc_bias_out, qfrc_ext_out,
               qfrc_passive_out, qfrc_actuator_out, qfrc_control_out, qfrc_smooth_out, dof_dv_out,
               act_force_out)

    # -- 6. (M + h·D) = Lᵀ·diag·L along the tree (MuJoCo mj_factorI), solve for qacc ----------
    integrating = mode == MODE_STEP or mode == MODE_INTEGRATE
    hd = h
    if not integrating:
        hd = s0
    # row i of the tree-sparse storage holds (i, parent(i), parent(parent(i)), ...): the entries of
    # an ancestor's row are the tail of the row of any of its descendants, so every loop is a
    # contiguous run (no walk along dof_parent); native loops over raw row pointers (see ldl_solve)
    ldl_solve(env, n_dofs, hd, dof_madr, dof_depth, m_col, mass_out, dof_dv_out, qfrc_smooth_out,
              qld_out, qacc_out)

    if not integrating:
        return

    # a coupler's reaction lasts one substep; external wrenches and applied dof forces one step
    # -- 7. semi-implicit Euler: v' = v + h·a, q' = q ⊕ h·v' (native, see integrate), except the
    # free bodies of the implicit midpoint branch (SPEC R2), integrated below
    integrate(env, n_dofs, n_links, h, clear_ext, joint_midpoint, joint_type, joint_q_start, joint_dof_start,
              dof_joint, dof_damping, dof_armature, dof_mode_in, qacc_out, qpos, qvel, joint_mid_active,
              coupling_force_in, coupling_torque_in, xfrc_force_in, xfrc_torque_in, qfrc_applied_in)
    n_joints = joint_type.shape[0]
    for j in range(n_joints):
        qs = joint_q_start[j]
        ds = joint_dof_start[j]
        if joint_mid_active[env, j] != 0:
            l = dof_link[ds]
            tl = zero
            ta = zero
            for k in range(3):
                tl[k] = (qfrc_smooth_out[env, ds + k] + qfrc_bias_out[env, ds + k])
                ta[k] = (qfrc_smooth_out[env, ds + 3 + k] + qfrc_bias_out[env, ds + 3 + k])
            pos = type(zero)(qpos[env, qs], qpos[env, qs + 1], qpos[env, qs + 2])
            qr = wp.normalize(wp.quaternion(qpos[env, qs + 4], qpos[env, qs + 5], qpos[env, qs + 6],
                                            qpos[env, qs + 3]))
            vo = type(zero)(qvel[env, ds], qvel[env, ds + 1], qvel[env, ds + 2])
            wb = type(zero)(qvel[env, ds + 3], qvel[env, ds + 4], qvel[env, ds + 5])
            m = link_mass[env, l]
            cb = link_com[env, l]
            ib = link_inertia[env, l]
            doff = wp.quat_rotate(qr, cb)
            # generalized forces on (v_origin, ω_body) as a wrench at the CoM, plus gravity
            fw = tl + gravity * m
            tb = ta + wp.quat_rotate_inv(qr, wp.cross(tl, doff))
            wwo = wp.quat_rotate(qr, wb)
            vc = vo + wp.cross(wwo, doff) + fw * (h / m)
            # Euler's equations by implicit midpoint: 2I(x − ω) = h·τ − h·x × I·x, Newton on x
            x = wb
            # stop at round-off: 1e-13 relative in float64, 1e-5 in float32 (1 + 1e-10 == 1 there)
            tol = type(h)(1e-13)
            if s1 + type(h)(1e-10) == s1:
                tol = type(h)(1e-5)
            scale = wp.length(ib * wb) * type(h)(2.0) + wp.length(tb) * h + type(h)(1e-30)
            for _it in range(12):
                gres = ib * (x - wb) * type(h)(2.0) - tb * h + wp.cross(x, ib * x) * h
                if wp.length(gres) <= tol * scale:
                    break
                jac = ib * type(h)(2.0) + (wp.skew(x) * ib - wp.skew(ib * x)) * h
                dx = wp.inverse(jac) * gres
                alpha = s1
                gn = wp.length(gres)
                for _bt in range(6):
                    xn = x - dx * alpha
                    g2 = ib * (xn - wb) * type(h)(2.0) - tb * h + wp.cross(xn, ib * xn) * h
                    if wp.length(g2) < gn:
                        break
                    alpha = alpha * type(h)(0.5)
                x = x - dx * alpha
            wb_new = x * type(h)(2.0) - wb
            # Cayley rotation by h·x keeps R·I·ω exactly (torque-free) and the kinetic energy
            hv = x * (h * type(h)(0.5))
            qc = wp.normalize(wp.quaternion(hv[0], hv[1], hv[2], s1))
            qn = wp.normalize(qr * qc)
            com_new = pos + doff + vc * h
            d_new = wp.quat_rotate(qn, cb)
            pos_new = com_new - d_new
            vo_new = vc - wp.cross(wp.quat_rotate(qn, wb_new), d_new)
            for k in range(3):
                qpos[env, qs + k] = pos_new[k]
                qvel[env, ds + k] = vo_new[k]
                qvel[env, ds + 3 + k] = wb_new[k]
            qpos[env, qs + 3] = qn[3]
            qpos[env, qs + 4] = qn[0]
            qpos[env, qs + 5] = qn[1]
            qpos[env, qs + 6] = qn[2]

def _overloads():
    for s in (wp.float32, wp.float64):
        V = wp.types.vector(3, s)
        Q = wp.types.quaternion(s)
        M = wp.types.matrix((3, 3), s)
        a1 = lambda t: wp.array(dtype=t)      # noqa: E731
        a2 = lambda t: wp.array2d(dtype=t)    # noqa: E731
        sig = {"h": s, "gravity": V,
               "link_pos0": a1(V), "link_quat0": a1(Q), "link_gravcomp": a1(s),
               "joint_pos": a1(V), "joint_axis": a1(V), "joint_ref": a1(s), "joint_springref": a1(s),
               "act_gear": a1(s), "act_gain": a1(V), "act_bias": a1(V), "act_ctrl_lo": a1(s),
               "act_ctrl_hi": a1(s), "act_force_lo": a1(s), "act_force_hi": a1(s),
               "root_pos": a2(V), "root_quat": a2(Q), "link_mass": a2(s), "link_com": a2(V),
               "link_inertia": a2(M)}
        for k in ("dof_damping", "dof_armature", "dof_stiffness", "dof_kp", "dof_kv", "dof_force_lo",
                  "dof_force_hi", "ctrl_in", "dof_target_pos_in", "dof_target_vel_in",
                  "dof_target_force_in", "qfrc_applied_in", "qpos", "qvel", "qacc_out", "cinert_m",
                  "crb_m", "mass_out", "qld_out", "qfrc_bias_out", "qfrc_passive_out",
                  "qfrc_actuator_out", "qfrc_control_out", "qfrc_ext_out", "qfrc_smooth_out",
                  "dof_dv_out", "act_force_out"):
            sig[k] = a2(s)
        for k in ("xfrc_force_in", "xfrc_torque_in", "coupling_force_in", "coupling_torque_in",
                  "link_com_vel_out", "link_pos_out", "link_vel_out", "link_ang_out",
                  "link_xipos_out", "joint_anchor_out", "joint_xaxis_out", "cinert_mc", "crb_mc", "cvel_w", "cvel_v",
                  "cdof_w", "cdof_v", "cdofdot_w", "cdofdot_v", "cfrc_t", "cfrc_f", "cext_t", "cext_f"):
            sig[k] = a2(V)
        sig["link_quat_out"] = a2(Q)
        sig["cinert_i"] = a2(M)
        sig["crb_i"] = a2(M)
        wp.overload(rigid_dynamics, sig)


_overloads()
