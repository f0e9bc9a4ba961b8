// Native body of kernels/line_search.py (see kernels/native.py for the conventions).
//
// line_rows_native: first and second derivative in alpha of the sum of the convex row costs at
// jar + alpha·jv (the 1-D cost of the exact line search), added to c1_init / c2_init and written to
// out[env, 0] and out[env, 1] (the kernel's solver_stat row: scratch until the solve writes its
// final statistics).

// @func line_rows_native
    typedef decltype(+*efc_D.data) T;
    const size_t e = (size_t)env;
#define PP_R(a, t) ((t*)((char*)a.data + e * a.strides[0]))
    const int* tp_ = PP_R(efc_type, const int);
    const int* dim_ = PP_R(efc_dim, const int);
    const T* D_ = PP_R(efc_D, const T);
    const T* R_ = PP_R(efc_R, const T);
    const T* fl_ = PP_R(efc_floss, const T);
    const T* mu_ = PP_R(efc_mu, const T);
    const T* jar_ = PP_R(jar, const T);
    T* o = PP_R(out, T);
    const T half = T(0.5);

    const T* jv_ = PP_R(jv, const T);
#undef PP_R
    T c1 = c1_init;
    T c2 = c2_init;
    int i = 0;
    while (i < nrow) {
        const int tp = tp_[i];
        T d1 = T(0);
        T d2 = T(0);
        int used = 1;
        if (tp == EFC_CONTACT_ELLIPTIC) {
            const int dim = dim_[i];
            used = dim;
            const T mu = mu_[i];
            const T ax0 = alpha * jv_[i];
            const T x0 = jar_[i] + ax0;
            const T n = mu * x0;
            const T dn = mu * jv_[i];
            T tt = T(0);
            T uv = T(0);
            T vv = T(0);
            for (int j = 1; j < dim; ++j) {
                const T fj = mu_[i + j];
                const T aj = alpha * jv_[i + j];
                const T u = fj * (jar_[i + j] + aj);
                const T v = fj * jv_[i + j];
                const T u2 = u * u;
                const T uv1 = u * v;
                const T v2 = v * v;
                tt = tt + u2;
                uv = uv + uv1;
                vv = vv + v2;
            }
            const T t = wp::sqrt(tt);
            const T mt = mu * t;
            const T mn = mu * n;
            if (n >= mt || (t <= T(0) && n >= T(0))) {
                // top zone: no cost
            } else if (mn + t <= T(0) || (t <= T(0) && n < T(0))) {
                for (int j = 0; j < dim; ++j) {
                    const T aj = alpha * jv_[i + j];
                    const T x = jar_[i + j] + aj;
                    const T dj = D_[i + j];
                    const T a = dj * x * jv_[i + j];
                    const T b = dj * jv_[i + j] * jv_[i + j];
                    d1 = d1 + a;
                    d2 = d2 + b;
                }
            } else {
                const T mm = mu * mu;
                const T mm2 = mu * mu;
                const T den = mm * (T(1) + mm2);
                const T dm = D_[i] / den;
                const T nmt = n - mt;
                const T dt = uv / t;
                const T dt2 = dt * dt;
                const T ddt = (vv - dt2) / t;
                const T mdt = mu * dt;
                const T g = dn - mdt;
                d1 = dm * nmt * g;
                const T gg = g * g;
                const T nm = nmt * mu * ddt;
                d2 = dm * (gg - nm);
            }
        } else {
            const T av = alpha * jv_[i];
            const T x = jar_[i] + av;
            const T v = jv_[i];
            const T d = D_[i];
            if (tp == EFC_EQUALITY) {
                d1 = d * x * v;
                d2 = d * v * v;
            } else if (tp == EFC_FRICTION) {
                const T f = fl_[i];
                const T rf = R_[i] * f;
                if (x <= -rf) {
                    d1 = -f * v;
                } else if (x >= rf) {
                    d1 = f * v;
                } else {
                    d1 = d * x * v;
                    d2 = d * v * v;
                }
            } else if (x < T(0)) {
                d1 = d * x * v;
                d2 = d * v * v;
            }
        }
        c1 = c1 + d1;
        c2 = c2 + d2;
        i += used;
    }
    o[0] = c1;
    o[1] = c2;
