// Native body of kernels/readback.py (see kernels/native.py for the conventions).
//
// rne_post_constraint_native: one env's MuJoCo mj_rnePostConstraint after the solve, and a snapshot
// of the joint quantities of the same state.
// (1) cfrc_ext (world, torque about the link CoM): applied and coupling wrenches at the CoM, the
//     net contact wrench, connect/weld forces at their anchors (a weld's rotational rows as the
//     torque Jᵀ·f: rows ½·ts·vec(q2⁻¹ ⊗ (0, ω1 − ω2) ⊗ q1 ⊗ relpose), kernels/constraint_rows.py);
//     gravity compensation is a passive force, not an external wrench (MuJoCo);
// (2) forward pass: spatial acceleration about the tree's reference point (the world's: (0, −g)),
//     body wrench I·a + v ×* I·v, cfrc_int = body − external (about the point);
// (3) backward pass: a link's wrench carries its subtree (moved to the parent's reference point:
//     a parent and child in different trees, e.g. a link welded to the world and the moving tree
//     below it, have different points);
// (4) per-link conventions: torque about the CoM, CoM acceleration a = a_point + α × (c − point)
//     + ω × v_c + g (spatial to classical, the −g offset removed).

// @func rne_post_constraint_native
    typedef decltype(+*qpos_in.data) T;
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
    if (neq > 0) {
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
            if (et[r] != EFC_EQUALITY) { ++r; continue; }            // not an equality row
            const int q = eid[r];
            const int tp = etype[q];
            if (tp != EQ_CONNECT && tp != EQ_WELD) { ++r; continue; } // joint equality: no wrench
            const T* dq = edata + q * dstride;
            const int l1 = eobj[q * ostride];
            const int l2 = eobj[q * ostride + 1];
            const V f(ef[r], ef[r + 1], ef[r + 2]);
            V tq(T(0));
            const int o1 = tp == EQ_WELD ? 3 : 0;
            const int o2 = tp == EQ_WELD ? 0 : 3;
            if (tp == EQ_WELD) {
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
            r += tp == EQ_WELD ? 6 : 3;
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
