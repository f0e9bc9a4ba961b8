// Native body of kernels/convex_solve.py (see kernels/native.py for the conventions).
//
// update_rows_native: forces, states (EfcState) and the sum of the row costs at jar = J·qacc − aref
// of the convex problem (MuJoCo's mj_constraintUpdate): equality rows quadratic, frictionloss rows
// Huber-like (linear beyond ±R·frictionloss), limit and pyramidal/frictionless contact rows one-sided
// quadratic, elliptic contacts by the cone's three zones (top: no force; bottom: quadratic; middle:
// the cone cost). The sum goes to out[env, 2]. Same expressions as the line search's rows, each
// product its own statement.

// @func update_rows_native
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

    T* F = PP_R(efc_force, T);
    int* S = PP_R(efc_state, int);
#undef PP_R
    T cost = T(0);
    int i = 0;
    while (i < nrow) {
        const int tp = tp_[i];
        if (tp == EFC_CONTACT_ELLIPTIC) {
            const int dim = dim_[i];
            const T mu = mu_[i];
            const T n = mu * jar_[i];
            T tt = T(0);
            for (int j = 1; j < dim; ++j) {
                const T u = mu_[i + j] * jar_[i + j];
                const T u2 = u * u;
                tt = tt + u2;
            }
            const T t = wp::sqrt(tt);
            const T mt = mu * t;
            const T mn = mu * n;
            if (n >= mt || (t <= T(0) && n >= T(0))) {
                for (int j = 0; j < dim; ++j) {
                    F[i + j] = T(0);
                    S[i + j] = STATE_INACTIVE;
                }
            } else if (mn + t <= T(0) || (t <= T(0) && n < T(0))) {
                for (int j = 0; j < dim; ++j) {
                    const T x = jar_[i + j];
                    F[i + j] = -D_[i + j] * x;
                    S[i + j] = STATE_QUADRATIC;
                    const T c = half * D_[i + j] * x * x;
                    cost = cost + c;
                }
            } else {
                const T mm = mu * mu;
                const T mm2 = mu * mu;
                const T den = mm * (T(1) + mm2);
                const T dm = D_[i] / den;
                const T nmt = n - mt;
                const T c = half * dm * nmt * nmt;
                cost = cost + c;
                F[i] = -dm * nmt * mu;
                S[i] = STATE_CONE;
                for (int j = 1; j < dim; ++j) {
                    const T fj = mu_[i + j];
                    F[i + j] = dm * nmt * mu / t * fj * fj * jar_[i + j];
                    S[i + j] = STATE_CONE;
                }
            }
            i += dim;
        } else {
            const T x = jar_[i];
            const T d = D_[i];
            T f = T(0);
            int st = STATE_INACTIVE;
            if (tp == EFC_EQUALITY) {
                f = -d * x;
                st = STATE_QUADRATIC;
                const T c = half * d * x * x;
                cost = cost + c;
            } else if (tp == EFC_FRICTION) {
                const T fl = fl_[i];
                const T rf = R_[i] * fl;
                if (x <= -rf) {
                    f = fl;
                    const T a = fl * x;
                    const T b = half * rf * fl;
                    cost = cost - a;
                    cost = cost - b;
                } else if (x >= rf) {
                    f = -fl;
                    const T a = fl * x;
                    const T b = half * rf * fl;
                    cost = cost + a;
                    cost = cost - b;
                } else {
                    f = -d * x;
                    st = STATE_QUADRATIC;
                    const T c = half * d * x * x;
                    cost = cost + c;
                }
            } else if (x < T(0)) {
                f = -d * x;
                st = STATE_QUADRATIC;
                const T c = half * d * x * x;
                cost = cost + c;
            }
            F[i] = f;
            S[i] = st;
            i += 1;
        }
    }
    o[2] = cost;
