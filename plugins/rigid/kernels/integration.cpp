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

// @func gyro_resolve_native
// The gyroscopic re-solve of MuJoCo-compatible implicitfast (docs/semantics.md §R2; MuJoCo's docs,
// "Gyroscopic derivatives for free bodies"): for each standalone free joint (joint_gyro), the 6×6 block
// of M + h·D on its dofs (decoupled from every other dof), plus h·∂qfrc_bias/∂v, is solved for the
// joint's acceleration with the force qfrc_in (Gaussian elimination, partial pivoting), overwriting qacc
// there. Dofs: v (origin velocity, world), w (body rates, link frame); with R the link rotation, c the
// CoM (link frame), m, I the mass and inertia about the CoM (link frame), the velocity part of the bias is
// F = m·R·(w × (w × c)) on v and w × I·w + m·c × (w × (w × c)) on w, so with G = (w·c)·1 + w·cᵀ − 2·c·wᵀ
// (= ∂(w × (w × c))/∂w): ∂/∂v = 0, ∂F/∂w = m·R·G, ∂τ/∂w = [w]×·I − [I·w]× + m·[c]×·G. Exact zeros skipped (the same
// values; docs/rigid.md, "Gyroscopic re-solve"): c = 0 (no G terms), a zero below the pivot (no row update).
    typedef decltype(+*qvel.data) T;
    typedef wp::vec_t<3, T> V;
    typedef wp::mat_t<3, 3, T> M3;
    typedef wp::quat_t<T> Q;
    const size_t e = (size_t)env;
#define PP_ROW(a) ((decltype(a.data))((char*)a.data + e * a.strides[0]))
    const T* ms = PP_ROW(mass);
    const T* dv = PP_ROW(dof_dv);
    const T* lm = PP_ROW(link_mass);
    const V* lc = PP_ROW(link_com);
    const M3* li = PP_ROW(link_inertia);
    const T* qp = PP_ROW(qpos);
    const T* qv = PP_ROW(qvel);
    const T* f = PP_ROW(qfrc_in);
    T* qa = PP_ROW(qacc);
    const int nj = (int)joint_gyro.shape[0];
    for (int j = 0; j < nj; ++j) {
        if (joint_gyro.data[j] == 0) continue;
        const int ds = joint_dof_start.data[j];
        const int qs = joint_q_start.data[j];
        const int lk = dof_link.data[ds];
        T a[6][6];
        T b[6];
        // M + h·D on the block: row i of the tree-sparse M holds its ancestors' columns (all inside the block)
        for (int r = 0; r < 6; ++r)
            for (int k = 0; k < 6; ++k) a[r][k] = T(0);
        for (int r = 0; r < 6; ++r) {
            const int i = ds + r;
            const int adr = dof_madr.data[i];
            for (int k = 0; k <= dof_depth.data[i]; ++k) {
                const int c = m_col.data[adr + k] - ds;
                a[r][c] = ms[adr + k];
                a[c][r] = ms[adr + k];
            }
            a[r][r] += h * dv[i];
            b[r] = f[i];
        }
        const V w(qv[ds + 3], qv[ds + 4], qv[ds + 5]);
        V c = lc[lk];
        M3 I = li[lk];
        T m = lm[lk];
        if (joint_gyro.data[j] == 2) {
            // fixed-joint descendants move with the link: the composite body (CoM and inertia about it, link frame)
            const V* xp = PP_ROW(link_pos);
            const Q* xq = PP_ROW(link_quat);
            const V* xi = PP_ROW(link_xipos);
            const Q q0 = xq[lk];
            const V x0 = xp[lk];
            const int nl = (int)link_parent.shape[0];
            T mt = T(0);
            V mc(T(0));
            for (int l = 0; l < nl; ++l) {
                int p = l;
                while (p >= 0 && p != lk) p = link_parent.data[p];
                if (p != lk) continue;
                const V cl = wp::quat_rotate_inv(q0, wp::sub(xi[l], x0));
                mt += lm[l];
                mc = wp::add(mc, wp::mul(cl, lm[l]));
            }
            const V cc = wp::div(mc, mt);
            M3 Ic(T(0));
            for (int l = 0; l < nl; ++l) {
                int p = l;
                while (p >= 0 && p != lk) p = link_parent.data[p];
                if (p != lk) continue;
                const V d = wp::sub(wp::quat_rotate_inv(q0, wp::sub(xi[l], x0)), cc);
                const M3 Rl = wp::quat_to_matrix(wp::mul(wp::quat_inverse(q0), xq[l]));
                const M3 Il = wp::mul(wp::mul(Rl, li[l]), wp::transpose(Rl));
                const M3 par = wp::sub(wp::mul(wp::identity<3, T>(), wp::dot(d, d)), wp::outer(d, d));
                Ic = wp::add(Ic, wp::add(Il, wp::mul(par, lm[l])));
            }
            c = cc;
            I = Ic;
            m = mt;
        }
        if (c.c[0] == T(0) && c.c[1] == T(0) && c.c[2] == T(0)) {
            // the CoM at the link origin: G, ∂F/∂w and the m·[c]×·G term are exact (signed) zeros, so adding them
            // changes no value (only, at most, the sign of an exact zero): ∂τ/∂w = [w]×·I − [I·w]× alone
            const M3 dT = wp::sub(wp::mul(wp::skew(w), I), wp::skew(wp::mul(I, w)));
            for (int r = 0; r < 3; ++r)
                for (int k = 0; k < 3; ++k) a[3 + r][3 + k] += h * dT.data[r][k];
        } else {
            const Q qr = wp::normalize(Q(qp[qs + 4], qp[qs + 5], qp[qs + 6], qp[qs + 3]));
            const M3 R = wp::quat_to_matrix(qr);
            const M3 G = wp::sub(wp::add(wp::mul(wp::identity<3, T>(), wp::dot(w, c)), wp::outer(w, c)),
                                 wp::mul(wp::outer(c, w), T(2)));
            const M3 dF = wp::mul(wp::mul(R, G), m);
            const M3 dT = wp::add(wp::sub(wp::mul(wp::skew(w), I), wp::skew(wp::mul(I, w))), wp::mul(wp::mul(wp::skew(c), G), m));
            for (int r = 0; r < 3; ++r)
                for (int k = 0; k < 3; ++k) {
                    a[r][3 + k] += h * dF.data[r][k];
                    a[3 + r][3 + k] += h * dT.data[r][k];
                }
        }
        // Gaussian elimination with partial pivoting
        for (int p = 0; p < 6; ++p) {
            int piv = p;
            for (int r = p + 1; r < 6; ++r)
                if (wp::abs(a[r][p]) > wp::abs(a[piv][p])) piv = r;
            if (piv != p) {
                for (int k = 0; k < 6; ++k) {
                    const T t = a[p][k];
                    a[p][k] = a[piv][k];
                    a[piv][k] = t;
                }
                const T t = b[p];
                b[p] = b[piv];
                b[piv] = t;
            }
            for (int r = p + 1; r < 6; ++r) {
                // an exact zero below the pivot (a free body's translation rows when its CoM is the link origin): the
                // multiplier is ±0 and the update changes no value (only, at most, the sign of an exact zero)
                if (a[r][p] == T(0)) continue;
                const T l = a[r][p] / a[p][p];
                for (int k = p; k < 6; ++k) a[r][k] -= l * a[p][k];
                b[r] -= l * b[p];
            }
        }
        for (int p = 5; p >= 0; --p) {
            T s = b[p];
            for (int k = p + 1; k < 6; ++k) s -= a[p][k] * b[k];
            b[p] = s / a[p][p];
        }
        for (int r = 0; r < 6; ++r) qa[ds + r] = b[r];
    }
#undef PP_ROW
