// Native body of kernels/inertia.py (see kernels/native.py for the conventions).
//
// crb_native: one env's composite-rigid-body algorithm (MuJoCo's mj_crb). Composite inertias
// crb(l) = cinert(l) + sum of crb(children); for dof i on link l: f = crb(l)·cdof_i (torque ft,
// force ff), M[i, j] = cdof_j·f for j = i and its dof ancestors (the row's columns m_col,
// tree-sparse: row i at dof_madr[i], dof_depth[i] + 1 entries, MuJoCo's layout), armature added on
// the diagonal; a free joint on a root link (its cdof exactly (0, e_k) / (a_k, 0)) has its 6 × 6 block in
// closed form, the same values (below; general != 0 in crb_native: every dof through the general loop).
// The loop is the part ``crb`` (used by crb_native here and by the fused crb_factor_native of
// kernels/factorization.cpp: one source).

// @part crb
    typedef decltype(+*cinert_m.data) T;
    typedef wp::vec_t<3, T> V;
    typedef wp::mat_t<3, 3, T> M3;
    const int* par = link_parent.data;
    const int* madr = dof_madr.data;
    const int* dep = dof_depth.data;
    const int* col = m_col.data;
    const int* dl = dof_link.data;
    const size_t e = (size_t)env;
#define PP_ROW(a) ((decltype(a.data))((char*)a.data + e * a.strides[0]))
    const T* arm = PP_ROW(armature);
    const V* cw = PP_ROW(cdof_w);
    const V* cv = PP_ROW(cdof_v);
    const T* im = PP_ROW(cinert_m);
    const V* imc = PP_ROW(cinert_mc);
    const M3* ii = PP_ROW(cinert_i);
    T* bm = PP_ROW(crb_m);
    V* bmc = PP_ROW(crb_mc);
    M3* bi = PP_ROW(crb_i);
    T* mm = PP_ROW(mass);
#undef PP_ROW
    for (int l = 0; l < nl; ++l) {
        bm[l] = im[l];
        bmc[l] = imc[l];
        bi[l] = ii[l];
    }
    for (int l = nl - 1; l >= 0; --l) {
        const int p = par[l];
        if (p >= 0) {
            bm[p] = bm[p] + bm[l];
            bmc[p] = wp::add(bmc[p], bmc[l]);
            bi[p] = wp::add(bi[p], bi[l]);
        }
    }
    for (int i = 0; i < n; ++i) {
        const int l = dl[i];
        // dofs i..i+5 a free joint on a root link (one link; depths 0..5, each the parent of the next; cdof exactly
        // (0, e_k) for the translations and (a_k, 0) for the rotations, as the kinematics stage writes them about the
        // link's own origin): the block's 21 entries in closed form. The general loop below computes, per entry,
        // dot(cw_j, ft) + dot(cv_j, ff) with ft = crb_i·cw_i + mc × cv_i, ff = crb_m·cv_i − mc × cw_i; with these
        // exact zeros and units every term it adds besides the ones kept here is an exact (signed) zero or an exact
        // product by 1, so the values are the same bit for bit (only the sign of an exact zero may differ)
        bool free6 = !crb_general && i + 5 < n && dep[i] == 0;
        for (int k = 1; free6 && k < 6; ++k) free6 = dep[i + k] == k && col[madr[i + k] + 1] == i + k - 1 && dl[i + k] == l;
        for (int k = 0; free6 && k < 3; ++k) {
            const V a = cw[i + k], b = cv[i + k], c = cv[i + 3 + k];
            free6 = a.c[0] == T(0) && a.c[1] == T(0) && a.c[2] == T(0) && c.c[0] == T(0) && c.c[1] == T(0) && c.c[2] == T(0)
                && b.c[k] == T(1) && b.c[(k + 1) % 3] == T(0) && b.c[(k + 2) % 3] == T(0);
        }
        if (free6) {
            const T m = bm[l];
            const V mc = bmc[l];
            const M3 I = bi[l];
            for (int r = 0; r < 3; ++r) {
                T* row = mm + madr[i + r];          // columns i + r, i + r - 1, ..., i
                row[0] = m + arm[i + r];
                for (int t = 1; t <= r; ++t) row[t] = T(0);
            }
            for (int r = 3; r < 6; ++r) {
                const V a = cw[i + r];
                const V ft = wp::mul(I, a);
                const V g = wp::cross(mc, a);
                T* row = mm + madr[i + r];
                for (int c = r; c >= 3; --c) row[r - c] = wp::dot(cw[i + c], ft);
                row[0] += arm[i + r];
                for (int c = 2; c >= 0; --c) row[r - c] = -g.c[c];
            }
            i += 5;
            continue;
        }
        const V aw = cw[i];
        const V av = cv[i];
        const V mc = bmc[l];
        const V ft = wp::add(wp::mul(bi[l], aw), wp::cross(mc, av));
        const V ff = wp::sub(wp::mul(bm[l], av), wp::cross(mc, aw));
        const int a0 = madr[i];
        const int a1 = a0 + 1 + dep[i];
        for (int a = a0; a < a1; ++a) {
            const int j = col[a];
            mm[a] = wp::dot(cw[j], ft) + wp::dot(cv[j], ff);
        }
        mm[a0] += arm[i];
    }

// @func crb_native
    const bool crb_general = general != 0;
// @use inertia.crb
