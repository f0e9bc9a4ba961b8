// Native bodies of kernels/linalg.py (see kernels/native.py for the conventions): the dense per-env
// loops of the constraint solvers, over raw row pointers. Every product is its own statement (no
// contraction into a fused multiply-add). Zero entries are skipped where they cannot change a
// result: a sum's leading/trailing zero terms (x + 0·y = x; PP_SPAN: the nonzero column span of a
// row), rows with zero force in Jᵀf, and in the Cholesky factor the entries left of each row's first
// nonzero (the envelope: L has no fill there). Contact rows touch only the dofs of the two bodies'
// chains, so with several bodies (8 boxes: 6 of 48 columns) this removes most of the dense work;
// the only difference from a plain dense loop is the sign of an exact zero result.
//
// The spans of M's rows (2j, 2j+1) and of J's rows (2nv + 2r, +1) are computed once per solve into a
// scratch matrix the chosen solver does not use (sc_mode 1: LM, Newton; 2: H, CG; 0: none, when
// 2(nrow + nv) > nv², each product scans its rows).
//
// jac_mul_native: out = J·x (− sub when use_sub).
// jac_tmul_grad_native: qfrc_constraint = Jᵀf; with full = 1 also ma = M·(qacc − qacc_smooth);
//   grad = ma − Jᵀf.
// mat_mul_native: out = M·x.
// spans_fill_native: the row spans of M (scanned) and of J (efc_span, recorded by make_rows) into the
//   scratch matrix (sc_mode).
// hess_copy_native: H = M (lower triangle).
// hess_add_pair_native: H += w·J_raᵀ J_rb (lower triangle; zero entries of J_ra skipped).
// hess_add_rows_native: H += D_i·J_iᵀ J_i for the rows i0 <= i < i1 in the quadratic state: the same sums
//   in the same order as hess_add_pair row by row, in one call (a call per row cost more than its products).
// chol_factor_native: in-place dense Cholesky (lower triangle); the row envelope is kept in row 0's
//   upper triangle for the solve.
// chol_solve_native: x = (L Lᵀ)⁻¹ b.

// @func jac_mul_native
    typedef decltype(+*J.data) T;
    const size_t e = (size_t)env;
#ifndef PP_SPAN
// (one branch-free pass, min/max reductions the compiler vectorizes; an all-zero row gives lo = hi = n)
#define PP_SPAN(r, n, lo, hi) { int lo_ = (n), hi_ = 0; for (int k_ = 0; k_ < (n); ++k_) { \
    const bool nz_ = !((r)[k_] == T(0)); const int a_ = nz_ ? k_ : (n), b_ = nz_ ? k_ + 1 : 0; \
    lo_ = a_ < lo_ ? a_ : lo_; hi_ = b_ > hi_ ? b_ : hi_; } lo = lo_; hi = hi_ < lo_ ? lo_ : hi_; }
#endif

    const T* spc = sc_mode == 1 ? (const T*)((const char*)sc_a.data + e * sc_a.strides[0])
                 : sc_mode == 2 ? (const T*)((const char*)sc_b.data + e * sc_b.strides[0]) : (const T*)0;
#define PP_JSPAN(r, jr, lo, hi) { if (spc) { lo = (int)spc[2 * nv + 2 * (r)]; hi = (int)spc[2 * nv + 2 * (r) + 1]; } \
    else PP_SPAN(jr, nv, lo, hi); }
#define PP_MSPAN(j, mr, lo, hi) { if (spc) { lo = (int)spc[2 * (j)]; hi = (int)spc[2 * (j) + 1]; } \
    else PP_SPAN(mr, nv, lo, hi); }

    const size_t rs = J.strides[1];
    const char* j0 = (const char*)J.data + e * J.strides[0];
    const T* xx = (const T*)((const char*)x.data + e * x.strides[0]);
    const T* sb = (const T*)((const char*)sub.data + e * sub.strides[0]);
    T* o = (T*)((char*)out.data + e * out.strides[0]);
    for (int r = 0; r < nrow; ++r) {
        const T* jr = (const T*)(j0 + (size_t)r * rs);
        int lo, hi;
        PP_JSPAN(r, jr, lo, hi);
        T s = T(0);
        for (int k = lo; k < hi; ++k) {
            const T p = jr[k] * xx[k];
            s = s + p;
        }
        o[r] = use_sub != 0 ? s - sb[r] : s;
    }

// @func jac_tmul_grad_native
    typedef decltype(+*J.data) T;
    const size_t e = (size_t)env;
#ifndef PP_SPAN
// (one branch-free pass, min/max reductions the compiler vectorizes; an all-zero row gives lo = hi = n)
#define PP_SPAN(r, n, lo, hi) { int lo_ = (n), hi_ = 0; for (int k_ = 0; k_ < (n); ++k_) { \
    const bool nz_ = !((r)[k_] == T(0)); const int a_ = nz_ ? k_ : (n), b_ = nz_ ? k_ + 1 : 0; \
    lo_ = a_ < lo_ ? a_ : lo_; hi_ = b_ > hi_ ? b_ : hi_; } lo = lo_; hi = hi_ < lo_ ? lo_ : hi_; }
#endif

    const T* spc = sc_mode == 1 ? (const T*)((const char*)sc_a.data + e * sc_a.strides[0])
                 : sc_mode == 2 ? (const T*)((const char*)sc_b.data + e * sc_b.strides[0]) : (const T*)0;
#define PP_JSPAN(r, jr, lo, hi) { if (spc) { lo = (int)spc[2 * nv + 2 * (r)]; hi = (int)spc[2 * nv + 2 * (r) + 1]; } \
    else PP_SPAN(jr, nv, lo, hi); }
#define PP_MSPAN(j, mr, lo, hi) { if (spc) { lo = (int)spc[2 * (j)]; hi = (int)spc[2 * (j) + 1]; } \
    else PP_SPAN(mr, nv, lo, hi); }

    const size_t rs = J.strides[1];
    const size_t ms = M.strides[1];
    const char* j0 = (const char*)J.data + e * J.strides[0];
    const char* m0 = (const char*)M.data + e * M.strides[0];
    const T* f = (const T*)((const char*)efc_force.data + e * efc_force.strides[0]);
    const T* qa = (const T*)((const char*)qacc.data + e * qacc.strides[0]);
    const T* qs = (const T*)((const char*)qacc_smooth.data + e * qacc_smooth.strides[0]);
    T* qc = (T*)((char*)qfrc_constraint.data + e * qfrc_constraint.strides[0]);
    T* ma_ = (T*)((char*)ma.data + e * ma.strides[0]);
    T* g = (T*)((char*)grad.data + e * grad.strides[0]);
    // Jᵀf accumulated row by row (each column still sums its rows in ascending order)
    for (int j = 0; j < nv; ++j) qc[j] = T(0);
    for (int r = 0; r < nrow; ++r) {
        const T fr = f[r];
        if (fr == T(0)) continue;
        const T* jr = (const T*)(j0 + (size_t)r * rs);
        int lo, hi;
        PP_JSPAN(r, jr, lo, hi);
        for (int j = lo; j < hi; ++j) {
            const T p = jr[j] * fr;
            qc[j] = qc[j] + p;
        }
    }
    for (int j = 0; j < nv; ++j) {
        const T s = qc[j];
        T m = ma_[j];
        if (full == 1) {
            const T* mr = (const T*)(m0 + (size_t)j * ms);
            int lo, hi;
            PP_MSPAN(j, mr, lo, hi);
            m = T(0);
            for (int k = lo; k < hi; ++k) {
                const T p = mr[k] * (qa[k] - qs[k]);
                m = m + p;
            }
            ma_[j] = m;
        }
        g[j] = m - s;
    }

// @func mat_mul_native
    typedef decltype(+*M.data) T;
    const size_t e = (size_t)env;
#ifndef PP_SPAN
// (one branch-free pass, min/max reductions the compiler vectorizes; an all-zero row gives lo = hi = n)
#define PP_SPAN(r, n, lo, hi) { int lo_ = (n), hi_ = 0; for (int k_ = 0; k_ < (n); ++k_) { \
    const bool nz_ = !((r)[k_] == T(0)); const int a_ = nz_ ? k_ : (n), b_ = nz_ ? k_ + 1 : 0; \
    lo_ = a_ < lo_ ? a_ : lo_; hi_ = b_ > hi_ ? b_ : hi_; } lo = lo_; hi = hi_ < lo_ ? lo_ : hi_; }
#endif

    const T* spc = sc_mode == 1 ? (const T*)((const char*)sc_a.data + e * sc_a.strides[0])
                 : sc_mode == 2 ? (const T*)((const char*)sc_b.data + e * sc_b.strides[0]) : (const T*)0;
#define PP_JSPAN(r, jr, lo, hi) { if (spc) { lo = (int)spc[2 * nv + 2 * (r)]; hi = (int)spc[2 * nv + 2 * (r) + 1]; } \
    else PP_SPAN(jr, nv, lo, hi); }
#define PP_MSPAN(j, mr, lo, hi) { if (spc) { lo = (int)spc[2 * (j)]; hi = (int)spc[2 * (j) + 1]; } \
    else PP_SPAN(mr, nv, lo, hi); }

    const size_t ms = M.strides[1];
    const char* m0 = (const char*)M.data + e * M.strides[0];
    const T* xx = (const T*)((const char*)x.data + e * x.strides[0]);
    T* y = (T*)((char*)out.data + e * out.strides[0]);
    for (int j = 0; j < nv; ++j) {
        const T* mr = (const T*)(m0 + (size_t)j * ms);
        int lo, hi;
        PP_MSPAN(j, mr, lo, hi);
        T s = T(0);
        for (int k = lo; k < hi; ++k) {
            const T p = mr[k] * xx[k];
            s = s + p;
        }
        y[j] = s;
    }

// @func spans_fill_native
    typedef decltype(+*M.data) T;
    const size_t e = (size_t)env;
#ifndef PP_SPAN
// (one branch-free pass, min/max reductions the compiler vectorizes; an all-zero row gives lo = hi = n)
#define PP_SPAN(r, n, lo, hi) { int lo_ = (n), hi_ = 0; for (int k_ = 0; k_ < (n); ++k_) { \
    const bool nz_ = !((r)[k_] == T(0)); const int a_ = nz_ ? k_ : (n), b_ = nz_ ? k_ + 1 : 0; \
    lo_ = a_ < lo_ ? a_ : lo_; hi_ = b_ > hi_ ? b_ : hi_; } lo = lo_; hi = hi_ < lo_ ? lo_ : hi_; }
#endif

    if (sc_mode != 0) {
        T* sp = (T*)(sc_mode == 1 ? (char*)sc_a.data + e * sc_a.strides[0] : (char*)sc_b.data + e * sc_b.strides[0]);
        for (int j = 0; j < nv; ++j) {
            const T* mr = (const T*)((const char*)M.data + e * M.strides[0] + (size_t)j * M.strides[1]);
            int lo, hi;
            PP_SPAN(mr, nv, lo, hi);
            sp[2 * j] = T(lo);
            sp[2 * j + 1] = T(hi);
        }
        // J's rows: the spans make_rows recorded (a superset of the nonzero columns; empty: lo = hi)
        const char* js = (const char*)efc_span.data + e * efc_span.strides[0];
        for (int r = 0; r < nrow; ++r) {
            const int* jsr = (const int*)(js + (size_t)r * efc_span.strides[1]);
            int lo = jsr[0] < 0 ? 0 : jsr[0];
            int hi = jsr[1] > nv ? nv : jsr[1];
            if (hi < lo) hi = lo;
            sp[2 * nv + 2 * r] = T(lo);
            sp[2 * nv + 2 * r + 1] = T(hi);
        }
    }

// @func hess_copy_native
    typedef decltype(+*M.data) T;
    const size_t e = (size_t)env;
#ifndef PP_SPAN
// (one branch-free pass, min/max reductions the compiler vectorizes; an all-zero row gives lo = hi = n)
#define PP_SPAN(r, n, lo, hi) { int lo_ = (n), hi_ = 0; for (int k_ = 0; k_ < (n); ++k_) { \
    const bool nz_ = !((r)[k_] == T(0)); const int a_ = nz_ ? k_ : (n), b_ = nz_ ? k_ + 1 : 0; \
    lo_ = a_ < lo_ ? a_ : lo_; hi_ = b_ > hi_ ? b_ : hi_; } lo = lo_; hi = hi_ < lo_ ? lo_ : hi_; }
#endif

    const size_t ms = M.strides[1];
    const size_t hs = H.strides[1];
    const char* m0 = (const char*)M.data + e * M.strides[0];
    char* h0 = (char*)H.data + e * H.strides[0];
    for (int j = 0; j < nv; ++j) {
        const T* mr = (const T*)(m0 + (size_t)j * ms);
        T* hr = (T*)(h0 + (size_t)j * hs);
        for (int k = 0; k <= j; ++k) hr[k] = mr[k];   // lower triangle: all the factor reads
    }

// @func hess_add_pair_native
    typedef decltype(+*J.data) T;
    const size_t e = (size_t)env;
#ifndef PP_SPAN
// (one branch-free pass, min/max reductions the compiler vectorizes; an all-zero row gives lo = hi = n)
#define PP_SPAN(r, n, lo, hi) { int lo_ = (n), hi_ = 0; for (int k_ = 0; k_ < (n); ++k_) { \
    const bool nz_ = !((r)[k_] == T(0)); const int a_ = nz_ ? k_ : (n), b_ = nz_ ? k_ + 1 : 0; \
    lo_ = a_ < lo_ ? a_ : lo_; hi_ = b_ > hi_ ? b_ : hi_; } lo = lo_; hi = hi_ < lo_ ? lo_ : hi_; }
#endif

    const T* spc = sc_mode == 1 ? (const T*)((const char*)sc_a.data + e * sc_a.strides[0])
                 : sc_mode == 2 ? (const T*)((const char*)sc_b.data + e * sc_b.strides[0]) : (const T*)0;
#define PP_JSPAN(r, jr, lo, hi) { if (spc) { lo = (int)spc[2 * nv + 2 * (r)]; hi = (int)spc[2 * nv + 2 * (r) + 1]; } \
    else PP_SPAN(jr, nv, lo, hi); }
#define PP_MSPAN(j, mr, lo, hi) { if (spc) { lo = (int)spc[2 * (j)]; hi = (int)spc[2 * (j) + 1]; } \
    else PP_SPAN(mr, nv, lo, hi); }

    const size_t rs = J.strides[1];
    const size_t hs = H.strides[1];
    const T* ja_ = (const T*)((const char*)J.data + e * J.strides[0] + (size_t)ra * rs);
    const T* jb_ = (const T*)((const char*)J.data + e * J.strides[0] + (size_t)rb * rs);
    char* h0 = (char*)H.data + e * H.strides[0];
    int alo, ahi, blo, bhi;
    PP_JSPAN(ra, ja_, alo, ahi);
    PP_JSPAN(rb, jb_, blo, bhi);
    for (int j = alo; j < ahi; ++j) {
        const T ja = ja_[j] * w;
        if (ja != T(0)) {
            T* hr = (T*)(h0 + (size_t)j * hs);
            const int kend = bhi < j + 1 ? bhi : j + 1;   // lower triangle only
            for (int k = blo; k < kend; ++k) {
                const T p = ja * jb_[k];
                hr[k] = hr[k] + p;
            }
        }
    }

// @func hess_add_rows_native
    typedef decltype(+*J.data) T;
    const size_t e = (size_t)env;
#ifndef PP_SPAN
// (one branch-free pass, min/max reductions the compiler vectorizes; an all-zero row gives lo = hi = n)
#define PP_SPAN(r, n, lo, hi) { int lo_ = (n), hi_ = 0; for (int k_ = 0; k_ < (n); ++k_) { \
    const bool nz_ = !((r)[k_] == T(0)); const int a_ = nz_ ? k_ : (n), b_ = nz_ ? k_ + 1 : 0; \
    lo_ = a_ < lo_ ? a_ : lo_; hi_ = b_ > hi_ ? b_ : hi_; } lo = lo_; hi = hi_ < lo_ ? lo_ : hi_; }
#endif

    const T* spc = sc_mode == 1 ? (const T*)((const char*)sc_a.data + e * sc_a.strides[0])
                 : sc_mode == 2 ? (const T*)((const char*)sc_b.data + e * sc_b.strides[0]) : (const T*)0;
    const size_t rs = J.strides[1];
    const size_t hs = H.strides[1];
    const char* j0 = (const char*)J.data + e * J.strides[0];
    char* h0 = (char*)H.data + e * H.strides[0];
    const int* st_ = (const int*)((const char*)efc_state.data + e * efc_state.strides[0]);
    const T* D_ = (const T*)((const char*)efc_D.data + e * efc_D.strides[0]);
    // consecutive quadratic rows with one span (a contact's pyramid rows: the same two bodies) are added
    // together, entry by entry: each H entry still receives its rows' products one at a time in
    // ascending row order (the same additions as row by row), with one load and store per entry
    int i = i0;
    while (i < i1) {
        if (st_[i] != STATE_QUADRATIC) { ++i; continue; }
        int lo, hi;
        const T* jr0 = (const T*)(j0 + (size_t)i * rs);
        if (spc) { lo = (int)spc[2 * nv + 2 * i]; hi = (int)spc[2 * nv + 2 * i + 1]; }
        else PP_SPAN(jr0, nv, lo, hi);
        const T* jrs[8];
        T ws[8];
        int nb = 0;
        int i2 = i;
        while (i2 < i1 && nb < 8) {
            if (st_[i2] != STATE_QUADRATIC) { ++i2; continue; }
            const T* jr = (const T*)(j0 + (size_t)i2 * rs);
            int lo2, hi2;
            if (spc) { lo2 = (int)spc[2 * nv + 2 * i2]; hi2 = (int)spc[2 * nv + 2 * i2 + 1]; }
            else PP_SPAN(jr, nv, lo2, hi2);
            if (lo2 != lo || hi2 != hi) break;
            jrs[nb] = jr;
            ws[nb] = D_[i2];
            ++nb;
            ++i2;
        }
        i = i2;
        for (int j = lo; j < hi; ++j) {
            T ja[8];
            int any = 0;
            for (int b = 0; b < nb; ++b) { ja[b] = jrs[b][j] * ws[b]; any |= (ja[b] != T(0)); }
            if (!any) continue;
            T* hr = (T*)(h0 + (size_t)j * hs);
            for (int k = lo; k <= j; ++k) {          // lower triangle only (j < hi)
                T h = hr[k];
                for (int b = 0; b < nb; ++b) {
                    if (ja[b] != T(0)) {
                        const T p = ja[b] * jrs[b][k];
                        h = h + p;
                    }
                }
                hr[k] = h;
            }
        }
    }

// @func chol_factor_native
    typedef decltype(+*L.data) T;
    const size_t e = (size_t)env;
#ifndef PP_SPAN
// (one branch-free pass, min/max reductions the compiler vectorizes; an all-zero row gives lo = hi = n)
#define PP_SPAN(r, n, lo, hi) { int lo_ = (n), hi_ = 0; for (int k_ = 0; k_ < (n); ++k_) { \
    const bool nz_ = !((r)[k_] == T(0)); const int a_ = nz_ ? k_ : (n), b_ = nz_ ? k_ + 1 : 0; \
    lo_ = a_ < lo_ ? a_ : lo_; hi_ = b_ > hi_ ? b_ : hi_; } lo = lo_; hi = hi_ < lo_ ? lo_ : hi_; }
#endif

    const size_t ls = L.strides[1];
    char* l0 = (char*)L.data + e * L.strides[0];
#define PP_L(i) ((T*)(l0 + (size_t)(i) * ls))
    // envelope: first nonzero of each row of the lower triangle (L stays zero left of it)
    int first_buf[256];
    const bool env_ok = nv <= 256;
    if (env_ok) {
        for (int i = 0; i < nv; ++i) {
            const T* li = PP_L(i);
            int f0 = i;                      // first nonzero left of the diagonal (branch-free min)
            for (int k = 0; k < i; ++k) {
                const int a = li[k] == T(0) ? i : k;
                f0 = a < f0 ? a : f0;
            }
            first_buf[i] = f0;
        }
    }
    // column j's last row that can be nonzero: the largest i with min(first[i..nv)) <= j (rows past it
    // are all left of their envelope at column j and were skipped one by one before)
    int cend_buf[256];
    if (env_ok) {
        int k = nv - 1;
        int m = nv;
        for (int jj = 0; jj < nv; ++jj) {
            const int j = nv - 1 - jj;
            while (k > j) {
                const int mk = first_buf[k] < m ? first_buf[k] : m;
                if (mk <= j) break;
                m = mk;
                --k;
            }
            cend_buf[j] = k;
        }
    }
    for (int j = 0; j < nv; ++j) {
        T* lj = PP_L(j);
        const int fj = env_ok ? first_buf[j] : 0;
        T s = lj[j];
        for (int k = fj; k < j; ++k) {
            const T p = lj[k] * lj[k];
            s = s - p;
        }
        s = wp::sqrt(wp::max(s, T(1.0e-30)));
        lj[j] = s;
        const int iend = env_ok ? cend_buf[j] : nv - 1;
        for (int i = j + 1; i <= iend; ++i) {
            const int fi = env_ok ? first_buf[i] : 0;
            if (fi > j) continue;            // L[i, j] = 0: left of row i's envelope
            T* li = PP_L(i);
            T t = li[j];
            for (int k = (fi > fj ? fi : fj); k < j; ++k) {
                const T p = li[k] * lj[k];
                t = t - p;
            }
            li[j] = t / s;
        }
    }
    // the envelope kept for the solve in row 0's upper triangle (L[0][i] = first nonzero of row i,
    // i >= 1; row 0 starts at 0): no reader of L uses its upper triangle
    {
        T* l0r = PP_L(0);
        for (int i = 1; i < nv; ++i) l0r[i] = T(env_ok ? first_buf[i] : 0);
    }
#undef PP_L

// @func chol_solve_native
    typedef decltype(+*L.data) T;
    const size_t e = (size_t)env;
#ifndef PP_SPAN
// (one branch-free pass, min/max reductions the compiler vectorizes; an all-zero row gives lo = hi = n)
#define PP_SPAN(r, n, lo, hi) { int lo_ = (n), hi_ = 0; for (int k_ = 0; k_ < (n); ++k_) { \
    const bool nz_ = !((r)[k_] == T(0)); const int a_ = nz_ ? k_ : (n), b_ = nz_ ? k_ + 1 : 0; \
    lo_ = a_ < lo_ ? a_ : lo_; hi_ = b_ > hi_ ? b_ : hi_; } lo = lo_; hi = hi_ < lo_ ? lo_ : hi_; }
#endif

    const size_t ls = L.strides[1];
    const char* l0 = (const char*)L.data + e * L.strides[0];
#define PP_L(i) ((const T*)(l0 + (size_t)(i) * ls))
    const T* bb = (const T*)((const char*)b.data + e * b.strides[0]);
    T* xx = (T*)((char*)x.data + e * x.strides[0]);
    // row envelope stored by the factor in L[0][1..nv) (entries left of it are exact zeros);
    // column i's last nonzero row: the largest k with first[k] <= i (from the suffix minimum of first)
    int first_buf[256];
    int cend_buf[256];
    const bool env_ok = nv <= 256;
    if (env_ok) {
        first_buf[0] = 0;
        for (int i = 1; i < nv; ++i) first_buf[i] = (int)PP_L(0)[i];
        int k = nv - 1;
        int m = nv;                 // min of first[k'] over k' > k (none yet)
        for (int ii = 0; ii < nv; ++ii) {
            const int i = nv - 1 - ii;
            // largest k with min(first[k..nv)) <= i; the suffix minimum is nondecreasing in k
            while (k > i) {
                const int mk = first_buf[k] < m ? first_buf[k] : m;
                if (mk <= i) break;
                m = mk;
                --k;
            }
            cend_buf[i] = k;
        }
    }
    for (int i = 0; i < nv; ++i) {
        const T* li = PP_L(i);
        T s = bb[i];
        for (int k = env_ok ? first_buf[i] : 0; k < i; ++k) {
            const T p = li[k] * xx[k];
            s = s - p;
        }
        xx[i] = s / li[i];
    }
    for (int ii = 0; ii < nv; ++ii) {
        const int i = nv - 1 - ii;
        T s = xx[i];
        const int kend = env_ok ? cend_buf[i] : nv - 1;
        for (int k = i + 1; k <= kend; ++k) {
            if (env_ok && first_buf[k] > i) continue;     // L[k, i] = 0: left of row k's envelope
            const T p = PP_L(k)[i] * xx[k];
            s = s - p;
        }
        xx[i] = s / PP_L(i)[i];
    }
#undef PP_L
