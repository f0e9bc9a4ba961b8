"""Post-solve readback of the rigid solver (plugins/rigid/readback.py): MuJoCo's
``mj_rnePostConstraint`` — link accelerations ``cacc``, external wrenches ``cfrc_ext`` and the
interaction wrenches ``cfrc_int`` from the solved qacc and the constraint forces — and a snapshot of
the joint quantities at the same state. One thread per env walks its links (tree passes).

Spatial quantities of the dynamics kernel refer to a per-tree point (the tree root's origin, see
kernels/dynamics.py); a parent and child in different trees (a link welded to the world and the
moving tree below it) have different points, so a child's wrench is moved to its parent's point
before it is added, and the outputs are converted to per-link conventions: accelerations of the
link CoM (true acceleration, gravity not included), wrenches with the torque about the link CoM,
world frame (core/views.py, RigidSensorData). Row types and equality codes are those of
kernels/constraint_solve.py (EQUALITY = 0; connect 0, weld 1).

The per-env body is native C++ over raw row pointers (``_READBACK_SNIPPET``), as the dynamics
kernel's stages (kernels/dynamics.py): Warp's CPU indexing recomputes strides and a negative-index
fix-up on every access, and this stage is ~1200 accesses per env of a humanoid — in Warp code it
cost a quarter of the dynamics kernel (measured with 1024 envs). tests/sensors/test_readback.py runs
the stage alone against MuJoCo's mj_rnePostConstraint.
"""

from typing import Any

import warp as wp

wp.set_module_options({"enable_backward": False})

# per env: (1) cfrc_ext (world, torque about the link CoM): applied and coupling wrenches at the
# CoM, the net contact wrench, connect/weld forces at their anchors (a weld's rotational rows as
# the torque Jᵀ·f: rows ½·ts·vec(q2⁻¹ ⊗ (0, ω1 − ω2) ⊗ q1 ⊗ relpose), kernels/constraint_solve.py);
# gravity compensation is a passive force, not an external wrench (MuJoCo); (2) forward pass:
# spatial acceleration about the tree's point (the world's: (0, −g)), body wrench I·a + v ×* I·v,
# cfrc_int = body − external (about the point); (3) backward pass: a link's wrench carries its
# subtree (moved to the parent's point); (4) per-link conventions: torque about the CoM, CoM
# acceleration a = a_point + α × (c − point) + ω × v_c + g (spatial to classical, −g offset removed)
_READBACK_SNIPPET = """
    typedef {T} T;
    typedef wp::vec_t<3, T> V;
    typedef wp::quat_t<T> Q;
    typedef wp::mat_t<3, 3, T> M3;
    const size_t e = (size_t)env;
#define PP_ROW(a) ((decltype(a.data))((char*)a.data + e * a.strides[0]))
    const int nl = (int)link_parent.shape[0];
    const int* par = link_parent.data;
    const int* root = link_root.data;
    const int* dadr = link_dof_adr.data;
    const T* qp = PP_ROW(qpos_in);
    const T* qv = PP_ROW(qvel_in);
    const T* qa = PP_ROW(qacc_in);
    const T* qfa = PP_ROW(qfrc_actuator_in);
    const T* qfc = PP_ROW(qfrc_constraint_in);
    const T* af = PP_ROW(act_force_in);
    const V* cw = PP_ROW(cdof_w);
    const V* cv = PP_ROW(cdof_v);
    const V* cdw = PP_ROW(cdofdot_w);
    const V* cdv = PP_ROW(cdofdot_v);
    const V* vw = PP_ROW(cvel_w);
    const V* vv = PP_ROW(cvel_v);
    const T* im = PP_ROW(cinert_m);
    const V* imc = PP_ROW(cinert_mc);
    const M3* ii = PP_ROW(cinert_i);
    const V* lp = PP_ROW(link_pos);
    const Q* lq = PP_ROW(link_quat);
    const V* lc = PP_ROW(link_com);
    const V* la = PP_ROW(link_ang);
    const V* lv = PP_ROW(link_vel);
    const V* xf = PP_ROW(xfrc_force_in);
    const V* xt = PP_ROW(xfrc_torque_in);
    const V* kf = PP_ROW(coupling_force_in);
    const V* kt = PP_ROW(coupling_torque_in);
    const V* cf = PP_ROW(contact_force_in);
    const V* ct = PP_ROW(contact_torque_in);
    T* o_qp = PP_ROW(qpos_out);
    T* o_qv = PP_ROW(qvel_out);
    T* o_qa = PP_ROW(qacc_out);
    T* o_qfa = PP_ROW(qfrc_actuator_out);
    T* o_qfc = PP_ROW(qfrc_constraint_out);
    T* o_af = PP_ROW(act_force_out);
    V* aw_ = PP_ROW(acc_ang_out);
    V* av_ = PP_ROW(acc_out);
    V* inf_ = PP_ROW(int_force_out);
    V* int_ = PP_ROW(int_torque_out);
    V* exf = PP_ROW(ext_force_out);
    V* ext = PP_ROW(ext_torque_out);
    const int nq = (int)qpos_in.shape[1];
    for (int i = 0; i < nq; ++i) o_qp[i] = qp[i];
    for (int d = 0; d < n_dofs; ++d) {
        o_qv[d] = qv[d];
        o_qa[d] = qa[d];
        o_qfa[d] = qfa[d];
        o_qfc[d] = qfc[d];
    }
    for (int a = 0; a < n_act; ++a) o_af[a] = af[a];
    for (int l = 0; l < nl; ++l) {
        exf[l] = wp::add(wp::add(xf[l], kf[l]), cf[l]);
        ext[l] = wp::add(wp::add(xt[l], kt[l]), ct[l]);
    }
    if (has_rows != 0) {
        const int ne = n_efc.data[e];
        const int* et = PP_ROW(efc_type);
        const int* eid = PP_ROW(efc_id);
        const T* ef = PP_ROW(efc_force);
        const int* etype = eq_type.data;
        const int* eobj = eq_obj.data;
        const T* edata = eq_data.data;
        const int ostride = (int)(eq_obj.strides[0] / sizeof(int));
        const int dstride = (int)(eq_data.strides[0] / sizeof(T));
        int r = 0;
        while (r < ne) {
            if (et[r] != 0) { ++r; continue; }                       // not an equality row
            const int q = eid[r];
            const int tp = etype[q];
            if (tp != 0 && tp != 1) { ++r; continue; }               // joint equality: no wrench
            const T* dq = edata + q * dstride;
            const int l1 = eobj[q * ostride];
            const int l2 = eobj[q * ostride + 1];
            const V f(ef[r], ef[r + 1], ef[r + 2]);
            V tq(T(0));
            const int o1 = tp == 1 ? 3 : 0;
            const int o2 = tp == 1 ? 0 : 3;
            if (tp == 1) {
                const Q qi(T(0), T(0), T(0), T(1));
                const Q q1 = l1 >= 0 ? lq[l1] : qi;
                const Q q2 = l2 >= 0 ? lq[l2] : qi;
                const Q rel(dq[7], dq[8], dq[9], dq[6]);
                const Q qq = wp::mul(q1, rel);
                const Q q2n = wp::quat_inverse(q2);
                const T half = T(0.5) * dq[10];
                for (int k = 0; k < 3; ++k) {
                    const Q ax(k == 0 ? T(1) : T(0), k == 1 ? T(1) : T(0), k == 2 ? T(1) : T(0), T(0));
                    const Q w = wp::mul(wp::mul(q2n, ax), qq);
                    tq.c[k] = half * (w.x * ef[r + 3] + w.y * ef[r + 4] + w.z * ef[r + 5]);
                }
            }
            if (l1 >= 0) {
                const V p1 = wp::add(lp[l1], wp::quat_rotate(lq[l1], V(dq[o1], dq[o1 + 1], dq[o1 + 2])));
                exf[l1] = wp::add(exf[l1], f);
                ext[l1] = wp::add(wp::add(ext[l1], tq), wp::cross(wp::sub(p1, lc[l1]), f));
            }
            if (l2 >= 0) {
                const V p2 = wp::add(lp[l2], wp::quat_rotate(lq[l2], V(dq[o2], dq[o2 + 1], dq[o2 + 2])));
                exf[l2] = wp::sub(exf[l2], f);
                ext[l2] = wp::sub(wp::sub(ext[l2], tq), wp::cross(wp::sub(p2, lc[l2]), f));
            }
            r += tp == 1 ? 6 : 3;
        }
    }
    for (int l = 0; l < nl; ++l) {
        const int p = par[l];
        const V ref = lp[root[l]];
        V aw(T(0));
        V av = wp::neg(gravity);
        if (p >= 0) {
            aw = aw_[p];
            av = wp::add(av_[p], wp::cross(aw, wp::sub(ref, lp[root[p]])));
        }
        for (int d = dadr[l]; d < dadr[l + 1]; ++d) {
            aw = wp::add(aw, wp::add(wp::mul(cdw[d], qv[d]), wp::mul(cw[d], qa[d])));
            av = wp::add(av, wp::add(wp::mul(cdv[d], qv[d]), wp::mul(cv[d], qa[d])));
        }
        aw_[l] = aw;
        av_[l] = av;
        const T m = im[l];
        const V mc = imc[l];
        const M3 I = ii[l];
        const V w = vw[l];
        const V v = vv[l];
        const V hw = wp::add(wp::mul(I, w), wp::cross(mc, v));
        const V hv = wp::sub(wp::mul(v, m), wp::cross(mc, w));
        const V ft = wp::add(wp::add(wp::add(wp::mul(I, aw), wp::cross(mc, av)), wp::cross(w, hw)), wp::cross(v, hv));
        const V ff = wp::add(wp::sub(wp::mul(av, m), wp::cross(mc, aw)), wp::cross(w, hv));
        const V efl = exf[l];
        const V etl = wp::add(ext[l], wp::cross(wp::sub(lc[l], ref), efl));
        inf_[l] = wp::sub(ff, efl);
        int_[l] = wp::sub(ft, etl);
    }
    for (int l = nl - 1; l >= 0; --l) {
        const int p = par[l];
        if (p >= 0) {
            const V f = inf_[l];
            inf_[p] = wp::add(inf_[p], f);
            int_[p] = wp::add(wp::add(int_[p], int_[l]), wp::cross(wp::sub(lp[root[l]], lp[root[p]]), f));
        }
    }
    for (int l = 0; l < nl; ++l) {
        const V ref = lp[root[l]];
        const V c = lc[l];
        int_[l] = wp::add(int_[l], wp::cross(wp::sub(ref, c), inf_[l]));
        av_[l] = wp::add(wp::add(wp::add(av_[l], wp::cross(aw_[l], wp::sub(c, ref))), wp::cross(la[l], lv[l])), gravity);
    }
#undef PP_ROW
"""


def _readback_signature(s):
    A2 = wp.array2d(dtype=s)
    V = wp.types.vector(3, s)
    V2 = wp.array2d(dtype=V)
    Q2 = wp.array2d(dtype=wp.types.quaternion(s))
    M2 = wp.array2d(dtype=wp.types.matrix((3, 3), s))
    I1 = wp.array(dtype=wp.int32)
    I2 = wp.array2d(dtype=wp.int32)

    def readback(env: wp.int32, gravity: V, link_parent: I1, link_root: I1, link_dof_adr: I1, eq_type: I1,
                 eq_obj: I2, eq_data: A2, n_dofs: wp.int32, n_act: wp.int32, has_rows: wp.int32, qpos_in: A2,
                 qvel_in: A2, qacc_in: A2, qfrc_actuator_in: A2, qfrc_constraint_in: A2, act_force_in: A2,
                 cdof_w: V2, cdof_v: V2, cdofdot_w: V2, cdofdot_v: V2, cvel_w: V2, cvel_v: V2, cinert_m: A2,
                 cinert_mc: V2, cinert_i: M2, link_pos: V2, link_quat: Q2, link_com: V2, link_ang: V2,
                 link_vel: V2, xfrc_force_in: V2, xfrc_torque_in: V2, coupling_force_in: V2, coupling_torque_in: V2,
                 contact_force_in: V2, contact_torque_in: V2, n_efc: I1, efc_type: I2, efc_id: I2, efc_force: A2,
                 qpos_out: A2, qvel_out: A2, qacc_out: A2, qfrc_actuator_out: A2, qfrc_constraint_out: A2,
                 act_force_out: A2, acc_ang_out: V2, acc_out: V2, int_force_out: V2, int_torque_out: V2,
                 ext_force_out: V2, ext_torque_out: V2):
        ...

    return readback


readback = wp.func_native(_READBACK_SNIPPET.replace("{T}", "double"))(_readback_signature(wp.float64))
readback = wp.func_native(_READBACK_SNIPPET.replace("{T}", "float"))(_readback_signature(wp.float32))


@wp.kernel
def rne_post_constraint(
    # Model:
    gravity: Any,
    link_parent: wp.array(dtype=wp.int32),
    link_root: wp.array(dtype=wp.int32),
    link_dof_adr: wp.array(dtype=wp.int32),
    eq_type: wp.array(dtype=wp.int32),
    eq_obj: wp.array2d(dtype=wp.int32),
    eq_data: wp.array2d(dtype=Any),
    n_dofs: wp.int32,
    n_act: wp.int32,
    has_rows: wp.int32,
    # Data in (the state the last solve belongs to):
    qpos_in: wp.array2d(dtype=Any),
    qvel_in: wp.array2d(dtype=Any),
    qacc_in: wp.array2d(dtype=Any),
    qfrc_actuator_in: wp.array2d(dtype=Any),
    qfrc_constraint_in: wp.array2d(dtype=Any),
    act_force_in: wp.array2d(dtype=Any),
    cdof_w_in: wp.array2d(dtype=Any),
    cdof_v_in: wp.array2d(dtype=Any),
    cdofdot_w_in: wp.array2d(dtype=Any),
    cdofdot_v_in: wp.array2d(dtype=Any),
    cvel_w_in: wp.array2d(dtype=Any),
    cvel_v_in: wp.array2d(dtype=Any),
    cinert_m_in: wp.array2d(dtype=Any),
    cinert_mc_in: wp.array2d(dtype=Any),
    cinert_i_in: wp.array2d(dtype=Any),
    link_pos_in: wp.array2d(dtype=Any),
    link_quat_in: wp.array2d(dtype=Any),
    link_com_in: wp.array2d(dtype=Any),
    link_ang_in: wp.array2d(dtype=Any),
    link_vel_in: wp.array2d(dtype=Any),
    xfrc_force_in: wp.array2d(dtype=Any),
    xfrc_torque_in: wp.array2d(dtype=Any),
    coupling_force_in: wp.array2d(dtype=Any),
    coupling_torque_in: wp.array2d(dtype=Any),
    contact_force_in: wp.array2d(dtype=Any),
    contact_torque_in: wp.array2d(dtype=Any),
    n_efc_in: wp.array(dtype=wp.int32),
    efc_type_in: wp.array2d(dtype=wp.int32),
    efc_id_in: wp.array2d(dtype=wp.int32),
    efc_force_in: wp.array2d(dtype=Any),
    # Data out:
    qpos_out: wp.array2d(dtype=Any),
    qvel_out: wp.array2d(dtype=Any),
    qacc_out: wp.array2d(dtype=Any),
    qfrc_actuator_out: wp.array2d(dtype=Any),
    qfrc_constraint_out: wp.array2d(dtype=Any),
    act_force_out: wp.array2d(dtype=Any),
    acc_ang_out: wp.array2d(dtype=Any),
    acc_out: wp.array2d(dtype=Any),
    int_force_out: wp.array2d(dtype=Any),
    int_torque_out: wp.array2d(dtype=Any),
    ext_force_out: wp.array2d(dtype=Any),
    ext_torque_out: wp.array2d(dtype=Any),
):
    e = wp.tid()
    readback(e, gravity, link_parent, link_root, link_dof_adr, eq_type, eq_obj, eq_data, n_dofs, n_act, has_rows,
             qpos_in, qvel_in, qacc_in, qfrc_actuator_in, qfrc_constraint_in, act_force_in, cdof_w_in, cdof_v_in,
             cdofdot_w_in, cdofdot_v_in, cvel_w_in, cvel_v_in, cinert_m_in, cinert_mc_in, cinert_i_in, link_pos_in,
             link_quat_in, link_com_in, link_ang_in, link_vel_in, xfrc_force_in, xfrc_torque_in, coupling_force_in,
             coupling_torque_in, contact_force_in, contact_torque_in, n_efc_in, efc_type_in, efc_id_in, efc_force_in,
             qpos_out, qvel_out, qacc_out, qfrc_actuator_out, qfrc_constraint_out, act_force_out, acc_ang_out,
             acc_out, int_force_out, int_torque_out, ext_force_out, ext_torque_out)


def _overloads():
    for s in (wp.float32, wp.float64):
        V = wp.types.vector(3, s)
        Q = wp.types.quaternion(s)
        M = wp.types.matrix((3, 3), s)
        a2, v2 = wp.array2d(dtype=s), wp.array2d(dtype=V)
        sig = {"gravity": V, "eq_data": a2, "link_quat_in": wp.array2d(dtype=Q), "cinert_i_in": wp.array2d(dtype=M)}
        for k in ("qpos_in", "qvel_in", "qacc_in", "qfrc_actuator_in", "qfrc_constraint_in", "act_force_in",
                  "cinert_m_in", "efc_force_in", "qpos_out", "qvel_out", "qacc_out", "qfrc_actuator_out",
                  "qfrc_constraint_out", "act_force_out"):
            sig[k] = a2
        for k in ("cdof_w_in", "cdof_v_in", "cdofdot_w_in", "cdofdot_v_in", "cvel_w_in", "cvel_v_in", "cinert_mc_in",
                  "link_pos_in", "link_com_in", "link_ang_in", "link_vel_in", "xfrc_force_in", "xfrc_torque_in",
                  "coupling_force_in", "coupling_torque_in", "contact_force_in", "contact_torque_in", "acc_ang_out", "acc_out",
                  "int_force_out", "int_torque_out", "ext_force_out", "ext_torque_out"):
            sig[k] = v2
        wp.overload(rne_post_constraint, sig)


_overloads()
