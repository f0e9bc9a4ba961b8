// Native body of kernels/line_search.py (see kernels/native.py for the conventions).
//
// Part `rows` (lambdas over one env's raw row pointers; the native Newton solve, kernels/convex_solve.cpp,
// calls them inside its loop): ls_rows, the first and second derivative in alpha of the sum of the convex
// row costs at jar + alpha·jv (the 1-D cost of the exact line search) added to c1_init / c2_init; ls_search,
// the exact line search over them (the bracketing of kernels/line_search.py, whose Warp loop is kept for
// the signorini rows).
//
// line_search_native: ls_search for a Warp caller (the CG loop), alpha to out[env, 0] (the kernel's
// solver_stat row: scratch until the solve writes its final statistics).

// @part rows
    // (c1, c2) += the rows' first and second alpha-derivatives of the cost at jar + alpha·jv
    auto ls_rows = [&](int nrow, const int* tp_, const int* dim_, const T* D_, const T* R_, const T* fl_, const T* mu_,
                       const T* jar_, const T* jv_, T alpha, T c1_init, T c2_init, T& c1_out, T& c2_out) {
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
        c1_out = c1;
        c2_out = c2;
    };
    // the step alpha >= 0 along the direction whose Gauss terms are pg0 = pᵀM(a − a₀) and pmp = pᵀMp (jv = J·p);
    // 0 when the slope at 0 is not negative (the Warp exact_line_search, kernels/line_search.py)
    auto ls_search = [&](int nrow, int ls_iterations, T ls_tolerance, T pg0, T pmp, const int* tp_, const int* dim_,
                         const T* D_, const T* R_, const T* fl_, const T* mu_, const T* jar_, const T* jv_) -> T {
        const T zero = T(0);
        const T half = T(0.5);
        T gtol = zero;
        T lo = zero;
        T hi = -T(1);
        T alpha = T(1);
        for (int ls = 0; ls < ls_iterations; ++ls) {
            const T ap = alpha * pmp;
            T c1, c2;
            ls_rows(nrow, tp_, dim_, D_, R_, fl_, mu_, jar_, jv_, alpha, pg0 + ap, pmp, c1, c2);
            if (ls == 0) {
                // the slope at 0 for the bracket and the tolerance
                T d0, d0b;
                ls_rows(nrow, tp_, dim_, D_, R_, fl_, mu_, jar_, jv_, zero, pg0, zero, d0, d0b);
                gtol = ls_tolerance * wp::abs(d0);
                if (d0 >= zero) {
                    alpha = zero;
                    break;
                }
            }
            if (wp::abs(c1) <= gtol) break;
            if (c1 < zero) lo = alpha;
            else hi = alpha;
            const T q = c1 / wp::max(c2, T(1.0e-30));
            T nxt = alpha - q;
            if (hi >= zero) {
                if (nxt <= lo || nxt >= hi) {
                    const T s = lo + hi;
                    nxt = half * s;
                }
            } else if (nxt <= lo) {
                nxt = T(2) * alpha;
            }
            if (nxt == alpha) break;
            alpha = nxt;
        }
        return alpha;
    };
    (void)ls_rows; (void)ls_search;

// @func line_search_native
    typedef decltype(+*efc_D.data) T;
// @use line_search.rows
    const size_t e = (size_t)env;
#define PP_R(a, t) ((t*)((char*)a.data + e * a.strides[0]))
    PP_R(out, T)[0] = ls_search(nrow, ls_iterations, ls_tolerance, pg0, pmp, PP_R(efc_type, const int), PP_R(efc_dim, const int),
                                PP_R(efc_D, const T), PP_R(efc_R, const T), PP_R(efc_floss, const T), PP_R(efc_mu, const T),
                                PP_R(jar, const T), PP_R(jv, const T));
#undef PP_R
