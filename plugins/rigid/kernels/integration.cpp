// Native body of kernels/integration.py (see kernels/native.py for the conventions).
//
// integrate_native: clears the one-substep coupling wrench (and, on the last substep of a step, the
// one-step external wrenches and applied dof forces); flags the free joints that take the implicit
// midpoint branch this substep (joint_midpoint, no damping, armature or PD/velocity control on their
// dofs in this env, and no constraint row on them this substep (docs/semantics.md §R2): integrated by the Warp code
// of kernels/integration.py) and integrates every
// other dof: v' = v + h·a; q' = q + h·v' (hinge, slide, free translation); quaternions
// right-multiplied by exp(h·w/2) as MuJoCo's mju_quatIntegrate (normalised before and after).

// @func integrate_native
    typedef decltype(+*qvel.data) T;
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
    const int* mode = PP_ROW(dof_mode);
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
    const int nrow = ((const int*)nefc.data)[e];
    for (int j = 0; j < nj; ++j) {
        int use = 0;
        if (jmid[j] != 0) {
            use = 1;
            for (int k = 0; k < 6; ++k) {
                const int d = jds[j] + k;
                if (damp[d] != T(0) || arm[d] != T(0) || mode[d] != CTRL_FORCE) use = 0;
            }
            // a constraint row on the body this substep (a contact, an equality): not free
            for (int r = 0; r < nrow && use; ++r) {
                const T* jr = (const T*)((const char*)efc_J.data + e * efc_J.strides[0] + (size_t)r * efc_J.strides[1]);
                for (int k = 0; k < 6; ++k)
                    if (jr[jds[j] + k] != T(0)) use = 0;
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
        if (jt == JOINT_REVOLUTE || jt == JOINT_PRISMATIC) {
            qp[qs] = qp[qs] + h * qv[ds];
        } else if (jt == JOINT_SPHERICAL || jt == JOINT_FREE) {
            int qq = qs;
            int wd = ds;
            if (jt == JOINT_FREE) {
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
