// Native body of kernels/kinematics.py (see kernels/native.py for the conventions).
//
// kinematics_native: one env's forward kinematics (MuJoCo's mj_kinematics, mj_comPos, mj_comVel).
// 1. link frames: the joints of a link in order (free: q is the pose; revolute rotates about its
//    anchor by q - ref; prismatic translates by q - ref; spherical rotates about its anchor), the link
//    quaternion normalised once after its joints (as MuJoCo); CoM and world inertia;
// 2. about the tree's reference point ref (the root link's origin, also written to dof_ref): spatial
//    inertia (m, m·c, I_ref), motion subspaces cdof (ball/free rotations along the final frame's axes,
//    free translations along the world axes), velocities cvel and cdof_dot = cvel x cdof (free-joint
//    translations first, with zero cdof_dot), link velocities at the origin and at the CoM.

// @func kinematics_native
    typedef decltype(+*qpos.data) T;
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
    const int* dadr = link_dof_adr.data;
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
    V* dref = PP_ROW(dof_ref);
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
            if (jt == JOINT_FREE) {
                xpos = V(qp[qs], qp[qs + 1], qp[qs + 2]);
                xquat = wp::normalize(Q(qp[qs + 4], qp[qs + 5], qp[qs + 6], qp[qs + 3]));
                anc[j] = xpos;
                xax[j] = jaxis[j];                 // MuJoCo: a free joint's axis, unrotated
            } else if (jt == JOINT_REVOLUTE) {
                const V anchor = wp::add(xpos, wp::quat_rotate(xquat, jpos[j]));
                xax[j] = wp::quat_rotate(xquat, jaxis[j]);
                const Q rot = wp::quat_from_axis_angle(jaxis[j], qp[qs] - jref[j]);
                xquat = wp::mul(xquat, rot);
                xpos = wp::sub(anchor, wp::quat_rotate(xquat, jpos[j]));
                anc[j] = anchor;
            } else if (jt == JOINT_PRISMATIC) {
                const V axis = wp::quat_rotate(xquat, jaxis[j]);
                xax[j] = axis;
                anc[j] = wp::add(xpos, wp::quat_rotate(xquat, jpos[j]));   // before the slide (MuJoCo)
                xpos = wp::add(xpos, wp::mul(axis, qp[qs] - jref[j]));
            } else if (jt == JOINT_SPHERICAL) {
                const V anchor = wp::add(xpos, wp::quat_rotate(xquat, jpos[j]));
                xax[j] = wp::quat_rotate(xquat, jaxis[j]);   // the frame before the ball's rotation
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
        for (int d = dadr[l]; d < dadr[l + 1]; ++d) dref[d] = ref;
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
            if (jt == JOINT_REVOLUTE) {
                const V a = xax[j];
                cw[ds] = a;
                cv[ds] = wp::cross(a, wp::sub(ref, anchor));
            } else if (jt == JOINT_PRISMATIC) {
                cw[ds] = zero;
                cv[ds] = xax[j];
            } else if (jt == JOINT_SPHERICAL || jt == JOINT_FREE) {
                int r0 = ds;
                if (jt == JOINT_FREE) {
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
            if (jt == JOINT_FREE) {
                for (int k = 0; k < 3; ++k) {
                    cdw[ds + k] = zero;
                    cdv[ds + k] = zero;
                    v = wp::add(v, wp::mul(cv[ds + k], qv[ds + k]));
                }
                nrot = 3;
                r0 = ds + 3;
            } else if (jt == JOINT_SPHERICAL) {
                nrot = 3;
            } else if (jt == JOINT_REVOLUTE || jt == JOINT_PRISMATIC) {
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
