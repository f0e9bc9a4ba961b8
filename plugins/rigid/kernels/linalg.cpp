// Native bodies of kernels/linalg.py (see kernels/native.py for the conventions): the dense per-env
// loops of the constraint solvers, over raw row pointers. Every product is its own statement (no
// contraction into a fused multiply-add). Zero entries are skipped where they cannot change a
// result: a sum's leading/trailing zero terms (x + 0·y = x; PP_SPAN: the nonzero column span of a
// row), rows with zero force in Jᵀf, and in the Cholesky factor the entries left of each row's first
// nonzero (the envelope: L has no fill there). Contact rows touch only the dofs of the two bodies'
// chains, so with several bodies (8 boxes: 6 of 48 columns) this removes most of the dense work;
// the only difference from a plain dense loop is the sign of an exact zero result.
//
// The spans of M's rows (2j, 2j+1) and the nonzero segments of J's rows (2nv + 2r: lo + 4096·g0, +1:
// g1 + 4096·hi; the row's nonzeros in [lo, g0) and [g1, hi)) are put once per solve into a scratch
// matrix the chosen solver does not use (sc_mode 1: LM, Newton; 2: H, CG; 0: none, when 2(nrow + nv)
// exceeds it or nv > 4096, each product scans its rows). J's segments are those the row builder recorded
// in efc_seg while it wrote each row (the part `jseg`, or the same bounds from a contact's dof chains);
// a row without them (efc_seg[r][0] < 0: written by another writer) is scanned here with `jseg`.
//
// jac_mul_native: out = J·x (− sub when use_sub).
// jac_mul2_native: out_a = J·xa − sub and out_b = J·xb − sub in one pass over J (the warm start's pick).
// jac_tmul_grad_native: qfrc_constraint = Jᵀf; with full = 1 also ma = M·(qacc − qacc_smooth);
//   grad = ma − Jᵀf.
// mat_mul_native: out = M·x.
// spans_fill_native: the row spans of M (tree = 1: from the dof tree, dof_parent; 0: scanned) and the
//   nonzero segments of J's rows (efc_seg, recorded by make_rows; else scanned inside efc_span) into the
//   scratch matrix (sc_mode).
// chol_factor_native: in-place dense Cholesky (lower triangle); the row envelope is kept in row 0's
//   upper triangle for the solve.
// chol_solve_native: x = (L Lᵀ)⁻¹ b.
// hess_factor_solve_native: Newton's linear step over the quadratic rows, the block path (la_blk_*: H over the
//   block pattern of M's diagonal blocks and the rows' couplings, with fill) or the envelope one (stage tests).
//
// The operations themselves are the lambdas of the part `ops` (la_*, over one env's raw pointers: a
// matrix as its first row's bytes and its row stride; spc: the env's span cache or null); the bodies
// above call them, and the fused Newton solve (kernels/convex_solve.cpp newton_solve_native) calls the
// same lambdas, with the Newton Hessian's three only it uses: la_hess_copy (H = M, lower triangle),
// la_hess_add_pair (H += w·J_raᵀ J_rb, lower triangle; zero entries of J_ra skipped) and
// la_hess_add_rows (H += D_i·J_iᵀ J_i for the rows i0 <= i < i1 in the quadratic state: the same sums in
// the same order as la_hess_add_pair row by row, consecutive rows of one span together).

// @part jseg
    // the nonzero segments of a row jr inside the column span [lo, hi) that holds all its nonzeros: the
    // first and last nonzero and the longest inner run of exact zeros (the first of equal ones; a contact's
    // two bodies' dof chains with the dofs between them), so a product runs over [lo, g0) and [g1, hi) and
    // skips only exact zeros (bit for bit the same sums); empty row: lo = g0 = g1 = hi. s[0..3] = lo, g0,
    // g1, hi. Used by the row builder when it finishes a row (kernels/constraint_rows.cpp) and by spans_fill
    // for a row with none recorded.
    auto la_jseg = [](const T* jr, int lo, int hi, int nv, int* s) {
        lo = lo < 0 ? 0 : lo;
        hi = hi > nv ? nv : hi;
        if (hi < lo) hi = lo;
        while (lo < hi && jr[lo] == T(0)) ++lo;
        while (hi > lo && jr[hi - 1] == T(0)) --hi;
        int g0 = hi, g1 = hi, best = 0;
        int k = lo;
        while (k < hi) {
            if (jr[k] == T(0)) {
                const int z = k;
                while (jr[k] == T(0)) ++k;           // stops inside: jr[hi - 1] != 0
                if (k - z > best) { best = k - z; g0 = z; g1 = k; }
            } else {
                ++k;
            }
        }
        s[0] = lo; s[1] = g0; s[2] = g1; s[3] = hi;
    };

// @part span
    // PP_SPAN(r, n, lo, hi): the nonzero column span [lo, hi) of the n entries of row r
#ifndef PP_SPAN
// (one branch-free pass, min/max reductions the compiler vectorizes; an all-zero row gives lo = hi = n)
#define PP_SPAN(r, n, lo, hi) { int lo_ = (n), hi_ = 0; for (int k_ = 0; k_ < (n); ++k_) { \
    const bool nz_ = !((r)[k_] == T(0)); const int a_ = nz_ ? k_ : (n), b_ = nz_ ? k_ + 1 : 0; \
    lo_ = a_ < lo_ ? a_ : lo_; hi_ = b_ > hi_ ? b_ : hi_; } lo = lo_; hi = hi_ < lo_ ? lo_ : hi_; }
#endif

// @part ops
// @use linalg.span
#ifndef PP_CTZ
// index of the lowest set bit of a nonzero 64-bit mask
#if defined(__CUDA_ARCH__)
#define PP_CTZ(x) (__ffsll((long long)(x)) - 1)
#else
#define PP_CTZ(x) __builtin_ctzll(x)
#endif
#endif
    // the span cache of sc_mode (1: LM, 2: H, 0: none) of env e
    auto la_spc = [&](const auto& sc_a, const auto& sc_b, int sc_mode, size_t e) -> const T* {
        return sc_mode == 1 ? (const T*)((const char*)sc_a.data + e * sc_a.strides[0])
             : sc_mode == 2 ? (const T*)((const char*)sc_b.data + e * sc_b.strides[0]) : (const T*)0;
    };
    // the nonzero columns of J's row r (jr): the two segments [lo, g0) and [g1, hi) (from the cache: the
    // row's span less its longest inner run of zeros; scanned: one span, g0 = g1 = hi) / M's row j span
    auto la_jspan = [&](const T* spc, int nv, int r, const T* jr, int& lo, int& g0, int& g1, int& hi) {
        if (spc) {
            const int c0 = (int)spc[2 * nv + 2 * r], c1 = (int)spc[2 * nv + 2 * r + 1];
            lo = c0 & 4095; g0 = c0 >> 12; g1 = c1 & 4095; hi = c1 >> 12;
        } else {
            PP_SPAN(jr, nv, lo, hi);
            g0 = hi; g1 = hi;
        }
    };
    auto la_mspan = [&](const T* spc, int nv, int j, const T* mr, int& lo, int& hi) {
        if (spc) { lo = (int)spc[2 * j]; hi = (int)spc[2 * j + 1]; }
        else PP_SPAN(mr, nv, lo, hi);
    };
    // o = J·x (− sb when use_sub)
    auto la_jac_mul = [&](int nrow, int nv, const char* j0, size_t rs, const T* spc, const T* xx, const T* sb,
                          int use_sub, T* o) {
        for (int r = 0; r < nrow; ++r) {
            const T* jr = (const T*)(j0 + (size_t)r * rs);
            int lo, g0, g1, hi;
            la_jspan(spc, nv, r, jr, lo, g0, g1, hi);
            T s = T(0);
            for (int k = lo; k < g0; ++k) {
                const T p = jr[k] * xx[k];
                s = s + p;
            }
            for (int k = g1; k < hi; ++k) {
                const T p = jr[k] * xx[k];
                s = s + p;
            }
            o[r] = use_sub != 0 ? s - sb[r] : s;
        }
    };
    // oa = J·xa − sb and ob = J·xb − sb in one pass over J (each sum as la_jac_mul's)
    auto la_jac_mul2 = [&](int nrow, int nv, const char* j0, size_t rs, const T* spc, const T* xa, const T* xb, const T* sb,
                           T* oa, T* ob) {
        for (int r = 0; r < nrow; ++r) {
            const T* jr = (const T*)(j0 + (size_t)r * rs);
            int lo, g0, g1, hi;
            la_jspan(spc, nv, r, jr, lo, g0, g1, hi);
            T sa = T(0);
            T sb2 = T(0);
            for (int k = lo; k < g0; ++k) {
                const T pa = jr[k] * xa[k];
                const T pb = jr[k] * xb[k];
                sa = sa + pa;
                sb2 = sb2 + pb;
            }
            for (int k = g1; k < hi; ++k) {
                const T pa = jr[k] * xa[k];
                const T pb = jr[k] * xb[k];
                sa = sa + pa;
                sb2 = sb2 + pb;
            }
            oa[r] = sa - sb[r];
            ob[r] = sb2 - sb[r];
        }
    };
    // qc = Jᵀf; full = 1: ma = M·(qa − qs); g = ma − qc
    auto la_jac_tmul_grad = [&](int nrow, int nv, int full, const char* j0, size_t rs, const char* m0, size_t ms,
                                const T* spc, const T* f, const T* qa, const T* qs, T* qc, T* ma_, T* g) {
        // Jᵀf accumulated row by row (each column still sums its rows in ascending order)
        for (int j = 0; j < nv; ++j) qc[j] = T(0);
        for (int r = 0; r < nrow; ++r) {
            const T fr = f[r];
            if (fr == T(0)) continue;
            const T* jr = (const T*)(j0 + (size_t)r * rs);
            int lo, g0, g1, hi;
            la_jspan(spc, nv, r, jr, lo, g0, g1, hi);
            for (int j = lo; j < g0; ++j) {
                const T p = jr[j] * fr;
                qc[j] = qc[j] + p;
            }
            for (int j = g1; j < hi; ++j) {
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
                la_mspan(spc, nv, j, mr, lo, hi);
                m = T(0);
                for (int k = lo; k < hi; ++k) {
                    const T p = mr[k] * (qa[k] - qs[k]);
                    m = m + p;
                }
                ma_[j] = m;
            }
            g[j] = m - s;
        }
    };
    // y = M·x
    auto la_mat_mul = [&](int nv, const char* m0, size_t ms, const T* spc, const T* xx, T* y) {
        for (int j = 0; j < nv; ++j) {
            const T* mr = (const T*)(m0 + (size_t)j * ms);
            int lo, hi;
            la_mspan(spc, nv, j, mr, lo, hi);
            T s = T(0);
            for (int k = lo; k < hi; ++k) {
                const T p = mr[k] * xx[k];
                s = s + p;
            }
            y[j] = s;
        }
    };
    // H = M (lower triangle: all the factor reads)
    auto la_hess_copy = [&](int nv, const char* m0, size_t ms, char* h0, size_t hs) {
        for (int j = 0; j < nv; ++j) {
            const T* mr = (const T*)(m0 + (size_t)j * ms);
            T* hr = (T*)(h0 + (size_t)j * hs);
            for (int k = 0; k <= j; ++k) hr[k] = mr[k];
        }
    };
    // H += w·J_raᵀ J_rb (lower triangle; zero entries of J_ra skipped)
    auto la_hess_add_pair = [&](int nv, const char* j0, size_t rs, int ra, int rb, T w, char* h0, size_t hs,
                                const T* spc) {
        const T* ja_ = (const T*)(j0 + (size_t)ra * rs);
        const T* jb_ = (const T*)(j0 + (size_t)rb * rs);
        int alo, ag0, ag1, ahi, blo, bg0, bg1, bhi;
        la_jspan(spc, nv, ra, ja_, alo, ag0, ag1, ahi);
        la_jspan(spc, nv, rb, jb_, blo, bg0, bg1, bhi);
        for (int j = alo; j < ahi; ++j) {
            if (j == ag0) { j = ag1 - 1; continue; }     // over row a's inner run of zeros
            const T ja = ja_[j] * w;
            if (ja != T(0)) {
                T* hr = (T*)(h0 + (size_t)j * hs);
                const int kend = bhi < j + 1 ? bhi : j + 1;   // lower triangle only
                const int kmid = bg0 < kend ? bg0 : kend;
                for (int k = blo; k < kmid; ++k) {
                    const T p = ja * jb_[k];
                    hr[k] = hr[k] + p;
                }
                for (int k = bg1; k < kend; ++k) {
                    const T p = ja * jb_[k];
                    hr[k] = hr[k] + p;
                }
            }
        }
    };
    // H += D_i·J_iᵀ J_i for the quadratic rows i0 <= i < i1
    auto la_hess_add_rows = [&](int nv, int i0, int i1, const int* st_, const T* D_, const char* j0, size_t rs,
                                char* h0, size_t hs, const T* spc) {
        // consecutive quadratic rows with one span (a contact's pyramid rows: the same two bodies) are added
        // together, entry by entry: each H entry still receives its rows' products one at a time in
        // ascending row order (the same additions as row by row), with one load and store per entry
        int i = i0;
        while (i < i1) {
            if (st_[i] != STATE_QUADRATIC) { ++i; continue; }
            int lo, g0, g1, hi;
            const T* jr0 = (const T*)(j0 + (size_t)i * rs);
            la_jspan(spc, nv, i, jr0, lo, g0, g1, hi);
            const T* jrs[8];
            T ws[8];
            int nb = 0;
            int i2 = i;
            while (i2 < i1 && nb < 8) {
                if (st_[i2] != STATE_QUADRATIC) { ++i2; continue; }
                const T* jr = (const T*)(j0 + (size_t)i2 * rs);
                int lo2, g02, g12, hi2;
                la_jspan(spc, nv, i2, jr, lo2, g02, g12, hi2);
                if (lo2 != lo || hi2 != hi || g02 != g0 || g12 != g1) break;
                jrs[nb] = jr;
                ws[nb] = D_[i2];
                ++nb;
                ++i2;
            }
            i = i2;
            // per H row j: the group's nonzero factors D_b·J_bj first, then each entry of the row's segments
            // (lower triangle only: j < hi) summed over them in a register, four entries at a time (the same
            // products, each entry in ascending row order: the same sums as row by row, without an entry's
            // store and reload between the rows; benchmarks/results/constraint.md, Round 12)
            for (int j = lo; j < hi; ++j) {
                if (j == g0) { j = g1 - 1; continue; }
                T jas[8];
                const T* jbs[8];
                int nz = 0;
                for (int b = 0; b < nb; ++b) {
                    const T ja = jrs[b][j] * ws[b];
                    if (ja == T(0)) continue;
                    jas[nz] = ja;
                    jbs[nz] = jrs[b];
                    ++nz;
                }
                if (nz == 0) continue;
                T* hr = (T*)(h0 + (size_t)j * hs);
                const int kmid = g0 < j + 1 ? g0 : j + 1;
                for (int part = 0; part < 2; ++part) {
                    const int ka = part == 0 ? lo : g1;
                    const int kb = part == 0 ? kmid : j + 1;
                    int k = ka;
                    for (; k + 4 <= kb; k += 4) {
                        T a0 = hr[k], a1 = hr[k + 1], a2 = hr[k + 2], a3 = hr[k + 3];
                        for (int c = 0; c < nz; ++c) {
                            const T x = jas[c];
                            const T* jb = jbs[c] + k;
                            const T p0 = x * jb[0];
                            const T p1 = x * jb[1];
                            const T p2 = x * jb[2];
                            const T p3 = x * jb[3];
                            a0 = a0 + p0;
                            a1 = a1 + p1;
                            a2 = a2 + p2;
                            a3 = a3 + p3;
                        }
                        hr[k] = a0; hr[k + 1] = a1; hr[k + 2] = a2; hr[k + 3] = a3;
                    }
                    for (; k < kb; ++k) {
                        T a0 = hr[k];
                        for (int c = 0; c < nz; ++c) {
                            const T p0 = jas[c] * jbs[c][k];
                            a0 = a0 + p0;
                        }
                        hr[k] = a0;
                    }
                }
            }
        }
    };
    // in-place dense Cholesky (lower triangle); the row envelope kept in row 0's upper triangle
    auto la_chol_factor = [&](int nv, char* l0, size_t ls) {
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
    };
    // xx = (L Lᵀ)⁻¹ bb
    auto la_chol_solve = [&](int nv, const char* l0, size_t ls, const T* bb, T* xx) {
#define PP_L(i) ((const T*)(l0 + (size_t)(i) * ls))
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
    };
    // ---- the block-sparse factor of a Newton Hessian (la_blk_*; benchmarks/results/constraint.md, Round 15
    // (pile)). Blocks: the diagonal blocks of M (a cut at column c where no M row before c reaches c: each
    // kinematic tree, a free body's 6 dofs), found from M's row spans in the span cache; at most PP_NB of
    // them. Pattern: R[I] bit J (J < I) when block (I, J) of the factor L can be nonzero — a row in H (the
    // quadratic rows, the cones in the middle zone) whose nonzero segments touch both blocks, or fill from
    // an earlier block both rows have; built per Newton iteration (the rows' states change). The factor and
    // the solve run the envelope Cholesky's sums over the pattern's blocks only: each entry's products in
    // the same ascending column order, less terms whose factor lies in a zero block (exact zeros: x − 0 =
    // x; only the sign of an exact zero result can differ). H outside the pattern is neither written nor
    // read.
    enum { PP_NB = 64, PP_NBCOL = 1024 };
    // the blocks' starts bs[0..nb] and each column's block cb[0..nv) (nv <= PP_NBCOL); returns nb, 0 past
    // PP_NB blocks or PP_NBCOL columns
    auto la_blk_bounds = [&](int nv, const T* spc, int* bs, unsigned char* cb) -> int {
        if (nv > PP_NBCOL) return 0;
        int nb = 0, hmax = 0;
        bs[0] = 0;
        for (int j = 0; j < nv; ++j) {
            if (j > 0 && hmax <= j) {
                if (nb + 1 >= PP_NB) return 0;
                bs[++nb] = j;
            }
            cb[j] = (unsigned char)nb;
            const int hi = (int)spc[2 * j + 1];
            hmax = hi > hmax ? hi : hmax;
        }
        bs[nb + 1] = nv;
        return nb + 1;
    };
    // the blocks of a row's nonzero segments [lo, g0) and [g1, hi) (span cache words c0, c1) as a bit mask
    auto la_blk_rowmask = [&](int c0, int c1, const unsigned char* cb) -> unsigned long long {
        const int lo = c0 & 4095, g0 = c0 >> 12, g1 = c1 & 4095, hi = c1 >> 12;
        unsigned long long m = 0ull;
        if (g0 > lo) m |= (~0ull >> (63 - cb[g0 - 1])) & (~0ull << cb[lo]);
        if (hi > g1) m |= (~0ull >> (63 - cb[hi - 1])) & (~0ull << cb[g1]);
        return m;
    };
    // the factor's block pattern R[0..nb) for the rows in H (as the Hessian loop selects them)
    auto la_blk_pattern = [&](int nv, int nrow, const int* tp_, const int* dim_, const int* st_, const T* spc,
                              const unsigned char* cb, int nb, unsigned long long* R) {
        for (int b = 0; b < nb; ++b) R[b] = 0ull;
        int i = 0;
        int l0 = -1, l1 = -1;
        unsigned long long lm = 0ull, last = 0ull;
        // a row's mask from its span cache words (a contact's rows: the same words, the mask reused)
        auto rmask = [&](int r) -> unsigned long long {
            const int c0 = (int)spc[2 * nv + 2 * r], c1 = (int)spc[2 * nv + 2 * r + 1];
            if (c0 != l0 || c1 != l1) {
                l0 = c0;
                l1 = c1;
                lm = la_blk_rowmask(c0, c1, cb);
            }
            return lm;
        };
        while (i < nrow) {
            unsigned long long m = 0ull;
            if (tp_[i] == EFC_CONTACT_ELLIPTIC && st_[i] == STATE_CONE) {
                const int dim = dim_[i];
                for (int a = 0; a < dim; ++a) m |= rmask(i + a);
                i += dim;
            } else {
                if (st_[i] == STATE_QUADRATIC) m = rmask(i);
                i += 1;
            }
            // one block (or none): no coupling; the mask of the row before (a contact's next row): already in
            if ((m & (m - 1ull)) == 0ull || m == last) continue;
            last = m;
            unsigned long long mm = m;
            while (mm) {
                const int b = PP_CTZ(mm);
                mm &= mm - 1ull;
                R[b] |= m & ((1ull << b) - 1ull);
            }
        }
        // fill: L(I, J) != 0 when some K < J has L(I, K) and L(J, K) != 0 (R[J] holds only K < J, final here)
        for (int J = 0; J < nb; ++J) {
            const unsigned long long rj = R[J];
            if (rj == 0ull) continue;
            for (int I = J + 1; I < nb; ++I)
                if ((R[I] & rj) != 0ull) R[I] |= 1ull << J;
        }
    };
    // H = M over the pattern: M's diagonal blocks (lower triangle), the pattern's off-diagonal blocks zero
    auto la_blk_hess_copy = [&](const char* m0, size_t ms, char* h0, size_t hs, const int* bs, int nb,
                                const unsigned long long* R) {
        for (int I = 0; I < nb; ++I) {
            for (int j = bs[I]; j < bs[I + 1]; ++j) {
                const T* mr = (const T*)(m0 + (size_t)j * ms);
                T* hr = (T*)(h0 + (size_t)j * hs);
                unsigned long long mm = R[I];
                while (mm) {
                    const int K = PP_CTZ(mm);
                    mm &= mm - 1ull;
                    for (int k = bs[K]; k < bs[K + 1]; ++k) hr[k] = T(0);
                }
                for (int k = bs[I]; k <= j; ++k) hr[k] = mr[k];
            }
        }
    };
    // s − Σ a[k]·b[k] over the blocks of mask, ascending, then [k0, k1)
    auto la_blk_dot = [&](T s, const T* a, const T* b, unsigned long long mask, const int* bs, int k0, int k1) -> T {
        while (mask) {
            const int K = PP_CTZ(mask);
            mask &= mask - 1ull;
            for (int k = bs[K]; k < bs[K + 1]; ++k) {
                const T p = a[k] * b[k];
                s = s - p;
            }
        }
        for (int k = k0; k < k1; ++k) {
            const T p = a[k] * b[k];
            s = s - p;
        }
        return s;
    };
    // rows i0 <= i < i1 of column j (lj: row j; s: the diagonal L[j][j]): L[i][j] = (H[i][j] − Σ L[i][k]·L[j][k]) / s
    // over the blocks of mask, then [k0, j); four rows at a time (four independent sums, each in ascending k:
    // the same numbers as one row at a time, with the adds' latencies overlapped)
    auto la_blk_col = [&](char* l0, size_t ls, int i0, int i1, int j, const T* lj, T s, unsigned long long mask,
                          const int* bs, int k0) {
        int i = i0;
        for (; i + 4 <= i1; i += 4) {
            T* la = (T*)(l0 + (size_t)i * ls);
            T* lb = (T*)(l0 + (size_t)(i + 1) * ls);
            T* lc = (T*)(l0 + (size_t)(i + 2) * ls);
            T* ld = (T*)(l0 + (size_t)(i + 3) * ls);
            T ta = la[j], tb = lb[j], tc = lc[j], td = ld[j];
            auto run = [&](int k, int ke) {
                for (; k < ke; ++k) {
                    const T x = lj[k];
                    const T pa = la[k] * x;
                    const T pb = lb[k] * x;
                    const T pc = lc[k] * x;
                    const T pd = ld[k] * x;
                    ta = ta - pa;
                    tb = tb - pb;
                    tc = tc - pc;
                    td = td - pd;
                }
            };
            unsigned long long mm = mask;
            while (mm) {
                const int K = PP_CTZ(mm);
                mm &= mm - 1ull;
                run(bs[K], bs[K + 1]);
            }
            run(k0, j);
            la[j] = ta / s;
            lb[j] = tb / s;
            lc[j] = tc / s;
            ld[j] = td / s;
        }
        for (; i < i1; ++i) {
            T* li = (T*)(l0 + (size_t)i * ls);
            li[j] = la_blk_dot(li[j], li, lj, mask, bs, k0, j) / s;
        }
    };
    // in-place Cholesky (lower triangle) over the pattern (la_chol_factor's sums less the zero blocks' terms)
    auto la_blk_chol_factor = [&](char* l0, size_t ls, const int* bs, int nb, const unsigned long long* R) {
#define PP_L(i) ((T*)(l0 + (size_t)(i) * ls))
        for (int J = 0; J < nb; ++J) {
            const unsigned long long rj = R[J];
            const int b0 = bs[J], b1 = bs[J + 1];
            for (int j = b0; j < b1; ++j) {
                T* lj = PP_L(j);
                T s = la_blk_dot(lj[j], lj, lj, rj, bs, b0, j);
                s = wp::sqrt(wp::max(s, T(1.0e-30)));
                lj[j] = s;
                la_blk_col(l0, ls, j + 1, b1, j, lj, s, rj, bs, b0);
                for (int I = J + 1; I < nb; ++I) {
                    if (((R[I] >> J) & 1ull) == 0ull) continue;
                    la_blk_col(l0, ls, bs[I], bs[I + 1], j, lj, s, R[I] & rj, bs, b0);
                }
            }
        }
#undef PP_L
    };
    // xx = (L Lᵀ)⁻¹ bb over the pattern (la_chol_solve's sums less the zero blocks' terms)
    auto la_blk_chol_solve = [&](const char* l0, size_t ls, const int* bs, int nb, const unsigned long long* R,
                                 const T* bb, T* xx) {
#define PP_L(i) ((const T*)(l0 + (size_t)(i) * ls))
        for (int I = 0; I < nb; ++I) {
            for (int i = bs[I]; i < bs[I + 1]; ++i) {
                const T* li = PP_L(i);
                xx[i] = la_blk_dot(bb[i], li, xx, R[I], bs, bs[I], i) / li[i];
            }
        }
        for (int JJ = 0; JJ < nb; ++JJ) {
            const int J = nb - 1 - JJ;
            for (int ii = bs[J + 1] - 1; ii >= bs[J]; --ii) {
                T s = xx[ii];
                for (int k = ii + 1; k < bs[J + 1]; ++k) {
                    const T p = PP_L(k)[ii] * xx[k];
                    s = s - p;
                }
                for (int I = J + 1; I < nb; ++I) {
                    if (((R[I] >> J) & 1ull) == 0ull) continue;
                    for (int k = bs[I]; k < bs[I + 1]; ++k) {
                        const T p = PP_L(k)[ii] * xx[k];
                        s = s - p;
                    }
                }
                xx[ii] = s / PP_L(ii)[ii];
            }
        }
#undef PP_L
    };
    (void)la_spc; (void)la_jac_mul; (void)la_jac_mul2; (void)la_jac_tmul_grad; (void)la_mat_mul; (void)la_hess_copy;
    (void)la_hess_add_pair; (void)la_hess_add_rows; (void)la_chol_factor; (void)la_chol_solve;
    (void)la_blk_bounds; (void)la_blk_rowmask; (void)la_blk_pattern; (void)la_blk_hess_copy;
    (void)la_blk_dot; (void)la_blk_col; (void)la_blk_chol_factor; (void)la_blk_chol_solve;

// @func jac_mul_native
    typedef decltype(+*J.data) T;
// @use linalg.ops
    const size_t e = (size_t)env;
    la_jac_mul(nrow, nv, (const char*)J.data + e * J.strides[0], J.strides[1], la_spc(sc_a, sc_b, sc_mode, e),
               (const T*)((const char*)x.data + e * x.strides[0]), (const T*)((const char*)sub.data + e * sub.strides[0]),
               use_sub, (T*)((char*)out.data + e * out.strides[0]));

// @func jac_mul2_native
    typedef decltype(+*J.data) T;
// @use linalg.ops
    const size_t e = (size_t)env;
#define PP_R(a, t) ((t*)((char*)a.data + e * a.strides[0]))
    la_jac_mul2(nrow, nv, (const char*)J.data + e * J.strides[0], J.strides[1], la_spc(sc_a, sc_b, sc_mode, e), PP_R(xa, const T),
                PP_R(xb, const T), PP_R(sub, const T), PP_R(out_a, T), PP_R(out_b, T));
#undef PP_R

// @func jac_tmul_grad_native
    typedef decltype(+*J.data) T;
// @use linalg.ops
    const size_t e = (size_t)env;
#define PP_R(a, t) ((t*)((char*)a.data + e * a.strides[0]))
    la_jac_tmul_grad(nrow, nv, full, (const char*)J.data + e * J.strides[0], J.strides[1],
                     (const char*)M.data + e * M.strides[0], M.strides[1], la_spc(sc_a, sc_b, sc_mode, e),
                     PP_R(efc_force, const T), PP_R(qacc, const T), PP_R(qacc_smooth, const T), PP_R(qfrc_constraint, T),
                     PP_R(ma, T), PP_R(grad, T));
#undef PP_R

// @func mat_mul_native
    typedef decltype(+*M.data) T;
// @use linalg.ops
    const size_t e = (size_t)env;
    la_mat_mul(nv, (const char*)M.data + e * M.strides[0], M.strides[1], la_spc(sc_a, sc_b, sc_mode, e),
               (const T*)((const char*)x.data + e * x.strides[0]), (T*)((char*)out.data + e * out.strides[0]));

// @func spans_fill_native
    typedef decltype(+*M.data) T;
// @use linalg.jseg
    const size_t e = (size_t)env;
// @use linalg.span

    if (sc_mode != 0) {
        T* sp = (T*)(sc_mode == 1 ? (char*)sc_a.data + e * sc_a.strides[0] : (char*)sc_b.data + e * sc_b.strides[0]);
        if (tree != 0) {
            // M's rows from the dof tree (M is zero off its tree pattern: each dof with its ancestors and
            // descendants, docs/constraint.md): row j spans [root of j, last dof of j's subtree] (a dof's
            // parent precedes it, a subtree is contiguous); a superset of the nonzeros, so the products add
            // only exact zeros more (x + 0 = x bit for bit: a sum started at +0 never becomes −0), and M
            // itself is not read
#define PP_PAR(j) (*(const int*)((const char*)dof_parent.data + (size_t)(j) * dof_parent.strides[0]))
            for (int j = 0; j < nv; ++j) {
                const int p = PP_PAR(j);
                sp[2 * j] = p >= 0 ? sp[2 * p] : T(j);
                sp[2 * j + 1] = T(j + 1);
            }
            for (int jj = 0; jj < nv; ++jj) {
                const int j = nv - 1 - jj;
                const int p = PP_PAR(j);
                if (p >= 0 && sp[2 * j + 1] > sp[2 * p + 1]) sp[2 * p + 1] = sp[2 * j + 1];
            }
#undef PP_PAR
        } else {
            for (int j = 0; j < nv; ++j) {
                const T* mr = (const T*)((const char*)M.data + e * M.strides[0] + (size_t)j * M.strides[1]);
                int lo, hi;
                PP_SPAN(mr, nv, lo, hi);
                sp[2 * j] = T(lo);
                sp[2 * j + 1] = T(hi);
            }
        }
        // J's rows: the segments make_rows recorded (efc_seg: lo, g0, g1, hi), else (lo < 0) the scan of `jseg`
        // inside the row's recorded span
        const char* js = (const char*)efc_span.data + e * efc_span.strides[0];
        const char* jq = (const char*)efc_seg.data + e * efc_seg.strides[0];
        const size_t q3 = (size_t)efc_seg.strides[2];
        const char* jj0 = (const char*)J.data + e * J.strides[0];
        for (int r = 0; r < nrow; ++r) {
            const char* jqr = jq + (size_t)r * efc_seg.strides[1];
            int s4[4];
            s4[0] = *(const int*)jqr;
            if (s4[0] >= 0) {
                s4[1] = *(const int*)(jqr + q3);
                s4[2] = *(const int*)(jqr + 2 * q3);
                s4[3] = *(const int*)(jqr + 3 * q3);
            } else {
                const int* jsr = (const int*)(js + (size_t)r * efc_span.strides[1]);
                la_jseg((const T*)(jj0 + (size_t)r * J.strides[1]), jsr[0], jsr[1], nv, s4);
            }
            sp[2 * nv + 2 * r] = T(s4[0] + 4096 * s4[1]);       // exact in float32 too (< 2^24: nv <= 4096)
            sp[2 * nv + 2 * r + 1] = T(s4[2] + 4096 * s4[3]);
        }
    }

// @func chol_factor_native
    typedef decltype(+*L.data) T;
// @use linalg.ops
    la_chol_factor(nv, (char*)L.data + (size_t)env * L.strides[0], L.strides[1]);

// @func chol_solve_native
    typedef decltype(+*L.data) T;
// @use linalg.ops
    const size_t e = (size_t)env;
    la_chol_solve(nv, (const char*)L.data + e * L.strides[0], L.strides[1], (const T*)((const char*)b.data + e * b.strides[0]),
                  (T*)((char*)x.data + e * x.strides[0]));

// hess_factor_solve_native: Newton's linear step over one env's quadratic rows, as newton_solve_native runs it
// for a problem without cones in the middle zone: H = M + Σ D_i·J_iᵀJ_i (rows in STATE_QUADRATIC), its
// Cholesky factor in H, x = H⁻¹b. blocks = 1: over the block pattern (la_blk_*; nb_out[env] = the number of
// M's diagonal blocks, 0 when the envelope path ran: no span cache, one block or more than PP_NB); 0: the
// envelope factor. The span cache (sc_mode 1: sc) must hold the spans (spans_fill). For the stage tests.

// @func hess_factor_solve_native
    typedef decltype(+*M.data) T;
// @use linalg.ops
    const size_t e = (size_t)env;
    const T* spc = la_spc(sc, sc, sc_mode, e);
    const char* m0 = (const char*)M.data + e * M.strides[0];
    const char* j0 = (const char*)J.data + e * J.strides[0];
    char* h0 = (char*)H.data + e * H.strides[0];
    const size_t ms = M.strides[1], rs = J.strides[1], hs = H.strides[1];
#define PP_R(a, t) ((t*)((char*)a.data + e * a.strides[0]))
    const int* tp_ = PP_R(efc_type, const int);
    const int* dim_ = PP_R(efc_dim, const int);
    const int* st_ = PP_R(efc_state, const int);
    const T* D_ = PP_R(efc_D, const T);
    const T* bb = PP_R(b, const T);
    T* xx = PP_R(x, T);
#undef PP_R
    int bs[PP_NB + 1];
    unsigned char cb[PP_NBCOL];
    unsigned long long bpat[PP_NB];
    int nb = 0;
    if (blocks != 0 && spc != (const T*)0) {
        nb = la_blk_bounds(nv, spc, bs, cb);
        if (nb < 2) nb = 0;
    }
    if (nb != 0) {
        la_blk_pattern(nv, nrow, tp_, dim_, st_, spc, cb, nb, bpat);
        la_blk_hess_copy(m0, ms, h0, hs, bs, nb, bpat);
        la_hess_add_rows(nv, 0, nrow, st_, D_, j0, rs, h0, hs, spc);
        la_blk_chol_factor(h0, hs, bs, nb, bpat);
        la_blk_chol_solve(h0, hs, bs, nb, bpat, bb, xx);
    } else {
        la_hess_copy(nv, m0, ms, h0, hs);
        la_hess_add_rows(nv, 0, nrow, st_, D_, j0, rs, h0, hs, spc);
        la_chol_factor(nv, h0, hs);
        la_chol_solve(nv, h0, hs, bb, xx);
    }
    *(int*)((char*)nb_out.data + e * nb_out.strides[0]) = nb;
