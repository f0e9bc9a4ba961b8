// Native bodies of kernels/factorization.py (see kernels/native.py for the conventions).
//
// ldl_solve_native: (M + hd·D) = Lᵀ·diag·L along the dof tree (MuJoCo's mj_factorI on one env's
// tree-sparse rows: row i holds (i, parent(i), parent(parent(i)), ...), so the entries of an
// ancestor's row are the tail of any descendant's row and every loop is a contiguous run; no
// fill-in), then x = (M + hd·D)⁻¹ f by the three triangular/diagonal solves (mj_solveLD). The inner
// update dst[s] -= q[s]·tmp reads row k and writes an ancestor's row (disjoint ranges).
//
// mass_dense_native: the dense symmetric (M + hd·D) (n × n) from the tree-sparse rows, for the
// constraint solver.
//
// ld_solve_native: x = (Lᵀ·diag·L)⁻¹ f from a factor already in qld (mj_solveLD); on CPU (prefetch 1 / 2) it
// first prefetches the next env's factor, force and result into L1 / L2.
//
// crb_factor_native: one env's inertia stage (inertia.cpp's part ``crb``), then ldl_solve_native, (hd_int
// >= 0) the factor of M + hd_int·D into qld_int for the integration's ld_solve_native (copied from the first
// where it is the same matrix, else factored in the same pass as the first: the part ``factor_pair``), and (dense = 1)
// mass_dense_native: the same parts in one pass while the env's values are in cache; on CPU it first
// prefetches the next env's inputs and outputs (its M's tree pattern included).

// @part factor
    typedef decltype(+*mass.data) T;
    const int* madr = dof_madr.data;
    const int* dep = dof_depth.data;
    const int* col = m_col.data;
    const int nnz = (int)m_col.shape[0];
    T* q = (T*)((char*)qld.data + (size_t)env * qld.strides[0]);
    const T* mm = (const T*)((char*)mass.data + (size_t)env * mass.strides[0]);
    const T* dv = (const T*)((char*)dof_dv.data + (size_t)env * dof_dv.strides[0]);
    for (int a = 0; a < nnz; ++a) q[a] = mm[a];
    for (int i = 0; i < n; ++i) q[madr[i]] += hd * dv[i];
    for (int k = n - 1; k >= 0; --k) {
        // k ends a root chain of 6 dofs (a free joint on a world-parented link; dofs k-5..k at depths 0..5,
        // each the parent of the next): the block's rows eliminated with constant offsets, the same operations
        // in the same order as the general loop below. Its descendants, if any, have higher indices and were
        // eliminated before, as in the general loop (docs/rigid.md, factorization)
        bool chain6 = k >= 5 && dep[k] == 5 && dep[k - 5] == 0;
        for (int j = 0; chain6 && j < 5; ++j) chain6 = dep[k - j] == 5 - j && col[madr[k - j] + 1] == k - j - 1;
        if (chain6) {
            T* b = q + madr[k - 5];
            for (int r = 5; r >= 0; --r) {
                const int akk = r * (r + 1) / 2;
                const int kend = akk + 1 + r;
                const T inv = T(1) / b[akk];
                for (int aki = akk + 1; aki < kend; ++aki) {
                    const T tmp = b[aki] * inv;
                    const int c = r - (aki - akk);
                    T* dst = b + (c * (c + 1) / 2 - aki);
                    for (int s = aki; s < kend; ++s) dst[s] -= b[s] * tmp;
                    b[aki] = tmp;
                }
            }
            k -= 5;
            continue;
        }
        const int akk = madr[k];
        const int kend = akk + 1 + dep[k];
        const T inv = T(1) / q[akk];
        for (int aki = akk + 1; aki < kend; ++aki) {
            const T tmp = q[aki] * inv;
            T* dst = q + (madr[col[aki]] - aki);
            for (int s = aki; s < kend; ++s) dst[s] -= q[s] * tmp;
            q[aki] = tmp;
        }
    }

// @part factor_pair
    // The factors of M + hd·D into qld and of M + hd_int·D into qld_int in one pass over the tree: the same
    // operations in the same order on each matrix as the part ``factor`` run twice (so the same numbers), with
    // the index work (row addresses, depths, the root-chain test) done once and the two matrices' independent
    // dependency chains interleaved
    typedef decltype(+*mass.data) T;
    const int* madr = dof_madr.data;
    const int* dep = dof_depth.data;
    const int* col = m_col.data;
    const int nnz = (int)m_col.shape[0];
    T* q = (T*)((char*)qld.data + (size_t)env * qld.strides[0]);
    T* p = (T*)((char*)qld_int.data + (size_t)env * qld_int.strides[0]);
    const T* mm = (const T*)((const char*)mass.data + (size_t)env * mass.strides[0]);
    const T* dv = (const T*)((const char*)dof_dv.data + (size_t)env * dof_dv.strides[0]);
    for (int a = 0; a < nnz; ++a) {
        q[a] = mm[a];
        p[a] = mm[a];
    }
    for (int i = 0; i < n; ++i) {
        q[madr[i]] += hd * dv[i];
        p[madr[i]] += hd_int * dv[i];
    }
    for (int k = n - 1; k >= 0; --k) {
        bool chain6 = k >= 5 && dep[k] == 5 && dep[k - 5] == 0;
        for (int j = 0; chain6 && j < 5; ++j) chain6 = dep[k - j] == 5 - j && col[madr[k - j] + 1] == k - j - 1;
        if (chain6) {
            T* b = q + madr[k - 5];
            T* c2 = p + madr[k - 5];
            for (int r = 5; r >= 0; --r) {
                const int akk = r * (r + 1) / 2;
                const int kend = akk + 1 + r;
                const T inv = T(1) / b[akk];
                const T inv2 = T(1) / c2[akk];
                for (int aki = akk + 1; aki < kend; ++aki) {
                    const T tmp = b[aki] * inv;
                    const T tmp2 = c2[aki] * inv2;
                    const int c = r - (aki - akk);
                    const int o = c * (c + 1) / 2 - aki;
                    T* dst = b + o;
                    T* dst2 = c2 + o;
                    for (int s = aki; s < kend; ++s) {
                        dst[s] -= b[s] * tmp;
                        dst2[s] -= c2[s] * tmp2;
                    }
                    b[aki] = tmp;
                    c2[aki] = tmp2;
                }
            }
            k -= 5;
            continue;
        }
        const int akk = madr[k];
        const int kend = akk + 1 + dep[k];
        const T inv = T(1) / q[akk];
        const T inv2 = T(1) / p[akk];
        for (int aki = akk + 1; aki < kend; ++aki) {
            const T tmp = q[aki] * inv;
            const T tmp2 = p[aki] * inv2;
            const int o = madr[col[aki]] - aki;
            T* dst = q + o;
            T* dst2 = p + o;
            for (int s = aki; s < kend; ++s) {
                dst[s] -= q[s] * tmp;
                dst2[s] -= p[s] * tmp2;
            }
            q[aki] = tmp;
            p[aki] = tmp2;
        }
    }

// @part solve
    typedef decltype(+*qld.data) T;
    const int* madr = dof_madr.data;
    const int* dep = dof_depth.data;
    const int* col = m_col.data;
    const T* q = (const T*)((const char*)qld.data + (size_t)env * qld.strides[0]);
    const T* f = (const T*)((char*)qfrc.data + (size_t)env * qfrc.strides[0]);
    T* x = (T*)((char*)qacc.data + (size_t)env * qacc.strides[0]);
    // the dofs k-5..k a root chain of 6 (as in the factor): its rows with constant offsets, same operations, same order
    auto chain6 = [&](int k) {
        bool c = k >= 5 && k < n && dep[k] == 5 && dep[k - 5] == 0;
        for (int j = 0; c && j < 5; ++j) c = dep[k - j] == 5 - j && col[madr[k - j] + 1] == k - j - 1;
        return c;
    };
    for (int i = 0; i < n; ++i) x[i] = f[i];
    for (int i = n - 1; i >= 0; --i) {          // x <- L^-T x
        if (chain6(i)) {
            const T* b = q + madr[i - 5];
            T* xb = x + (i - 5);
            for (int r = 5; r >= 0; --r) {
                const T xi = xb[r];
                for (int t = 1; t <= r; ++t) xb[r - t] -= b[r * (r + 1) / 2 + t] * xi;
            }
            i -= 5;
            continue;
        }
        const T xi = x[i];
        const int e = madr[i] + 1 + dep[i];
        for (int a = madr[i] + 1; a < e; ++a) x[col[a]] -= q[a] * xi;
    }
    for (int i = 0; i < n; ++i) x[i] /= q[madr[i]];   // x <- D^-1 x
    for (int i = 0; i < n; ++i) {                // x <- L^-1 x
        if (chain6(i + 5)) {
            const T* b = q + madr[i];
            T* xb = x + i;
            for (int r = 0; r <= 5; ++r) {
                T xi = xb[r];
                for (int t = 1; t <= r; ++t) xi -= b[r * (r + 1) / 2 + t] * xb[r - t];
                xb[r] = xi;
            }
            i += 5;
            continue;
        }
        T xi = x[i];
        const int e = madr[i] + 1 + dep[i];
        for (int a = madr[i] + 1; a < e; ++a) xi -= q[a] * x[col[a]];
        x[i] = xi;
    }

// @func ldl_solve_native
    {
// @use factorization.prefetch_ldl
    }
    {
// @use factorization.factor
    }
    {
// @use factorization.solve
    }

// @func ld_solve_native
    {
// @use factorization.prefetch_solve
    }
    {
// @use factorization.solve
    }

// @part prefetch_solve
    // CPU: the next env's factor, force and result rows (prefetch 1: into L1; 2: into L2 only)
#if !defined(__CUDA_ARCH__)
    if (prefetch && env + 1 < qld.shape[0]) {
        const size_t e1 = (size_t)env + 1;
        const size_t ts = sizeof(*qld.data), nn = (size_t)n * ts, nz = (size_t)m_col.shape[0] * ts;
        const char* q1 = (const char*)qld.data + e1 * qld.strides[0];
        const char* f1 = (const char*)qfrc.data + e1 * qfrc.strides[0];
        const char* x1 = (const char*)qacc.data + e1 * qacc.strides[0];
        if (prefetch >= 2) {
            for (size_t l = 0; l < nz; l += 64) __builtin_prefetch(q1 + l, 0, 2);
            for (size_t l = 0; l < nn; l += 64) __builtin_prefetch(f1 + l, 0, 2);
            for (size_t l = 0; l < nn; l += 64) __builtin_prefetch(x1 + l, 0, 2);
        } else {
            for (size_t l = 0; l < nz; l += 64) __builtin_prefetch(q1 + l, 0, 3);
            for (size_t l = 0; l < nn; l += 64) __builtin_prefetch(f1 + l, 0, 3);
            for (size_t l = 0; l < nn; l += 64) __builtin_prefetch(x1 + l, 1, 3);
        }
    }
#endif

// @part prefetch_ldl
    // CPU: the next env's rows of the factor and solve (inputs and outputs)
#if !defined(__CUDA_ARCH__)
    if (env + 1 < mass.shape[0]) {
        const size_t e1 = (size_t)env + 1;
        const size_t ts = sizeof(*mass.data), nn = (size_t)n * ts, nz = (size_t)m_col.shape[0] * ts;
        const char* in[3] = {(const char*)mass.data + e1 * mass.strides[0],
                             (const char*)dof_dv.data + e1 * dof_dv.strides[0], (const char*)qfrc.data + e1 * qfrc.strides[0]};
        const size_t inb[3] = {nz, nn, nn};
        for (int a = 0; a < 3; ++a)
            for (size_t l = 0; l < inb[a]; l += 64) __builtin_prefetch(in[a] + l, 0, 3);
        const char* q1 = (const char*)qld.data + e1 * qld.strides[0];
        const char* x1 = (const char*)qacc.data + e1 * qacc.strides[0];
        for (size_t l = 0; l < nz; l += 64) __builtin_prefetch(q1 + l, 1, 3);
        for (size_t l = 0; l < nn; l += 64) __builtin_prefetch(x1 + l, 1, 3);
    }
#endif

// @part dense
    typedef decltype(+*mass.data) T;
    const size_t e = (size_t)env;
    const size_t ms = M_out.strides[1];
    char* m0 = (char*)M_out.data + e * M_out.strides[0];
    const T* mm = (const T*)((const char*)mass.data + e * mass.strides[0]);
    const T* dv = (const T*)((const char*)dof_dv.data + e * dof_dv.strides[0]);
#define PP_M(i, j) (((T*)(m0 + (size_t)(i) * ms))[j])
    // only the tree pattern (each dof and its ancestors, both triangles) is written: the entries off it
    // are zero since d.qM was allocated and nothing else writes d.qM (clearing all nv² entries every
    // substep cost more than the solve's use of M for a pile of 50 free bodies: nv 300)
    for (int i = 0; i < n; ++i) {
        const int adr = dof_madr.data[i];
        const int end = adr + dof_depth.data[i] + 1;
        for (int a = adr; a < end; ++a) {
            const int j = m_col.data[a];
            PP_M(i, j) = mm[a];
            PP_M(j, i) = mm[a];
        }
        PP_M(i, i) = PP_M(i, i) + hd * dv[i];
    }
#undef PP_M

// @func mass_dense_native
// @use factorization.dense

// @part prefetch_next
    // CPU: the next env's inputs (kinematics outputs, D, the force) and outputs (CRB, the two sparse rows,
    // qacc, and with dense its M's tree pattern, both triangles): each env's pass is bound by these misses.
    // prefetch 1: into L1 (prefetcht0 / prefetchw); 2: into L2 only (prefetcht1), so the next env's lines do
    // not push the current env's out of L1 (benchmarks/results/constraint.md, Round 11)
#if !defined(__CUDA_ARCH__)
    if (prefetch && env + 1 < mass.shape[0]) {
        const size_t e1 = (size_t)env + 1;
        auto pf = [&](const void* base, size_t stride, size_t bytes, int rw) {
            const char* b = (const char*)base + e1 * stride;
            for (size_t l = 0; l < bytes; l += 64) {
                if (prefetch >= 2) __builtin_prefetch(b + l, 0, 2);
                else if (rw) __builtin_prefetch(b + l, 1, 3);
                else __builtin_prefetch(b + l, 0, 3);
            }
        };
        const size_t ts = sizeof(*mass.data);
        const size_t nn = (size_t)n, ll = (size_t)nl, nz = (size_t)m_col.shape[0];
        pf(cdof_w.data, cdof_w.strides[0], nn * 3 * ts, 0);
        pf(cdof_v.data, cdof_v.strides[0], nn * 3 * ts, 0);
        pf(cinert_m.data, cinert_m.strides[0], ll * ts, 0);
        pf(cinert_mc.data, cinert_mc.strides[0], ll * 3 * ts, 0);
        pf(cinert_i.data, cinert_i.strides[0], ll * 9 * ts, 0);
        pf(armature.data, armature.strides[0], nn * ts, 0);
        pf(dof_dv.data, dof_dv.strides[0], nn * ts, 0);
        pf(qfrc.data, qfrc.strides[0], nn * ts, 0);
        pf(crb_m.data, crb_m.strides[0], ll * ts, 1);
        pf(crb_mc.data, crb_mc.strides[0], ll * 3 * ts, 1);
        pf(crb_i.data, crb_i.strides[0], ll * 9 * ts, 1);
        pf(mass.data, mass.strides[0], nz * ts, 1);
        pf(qld.data, qld.strides[0], nz * ts, 1);
        pf(qacc.data, qacc.strides[0], nn * ts, 1);
        if (hd_int >= decltype(hd_int)(0)) pf(qld_int.data, qld_int.strides[0], nz * ts, 1);
        if (dense) {
            const char* m1 = (const char*)M_out.data + e1 * M_out.strides[0];
            const size_t ms = M_out.strides[1];
            for (int i = 0; i < n; ++i) {
                const int adr = dof_madr.data[i];
                const int end = adr + dof_depth.data[i] + 1;
                for (int a = adr; a < end; ++a) {
                    const int j = m_col.data[a];
                    const char* a1 = m1 + (size_t)i * ms + (size_t)j * ts;
                    const char* a2 = m1 + (size_t)j * ms + (size_t)i * ts;
                    if (prefetch >= 2) {
                        __builtin_prefetch(a1, 0, 2);
                        __builtin_prefetch(a2, 0, 2);
                    } else {
                        __builtin_prefetch(a1, 1, 3);
                        __builtin_prefetch(a2, 1, 3);
                    }
                }
            }
        }
    }
#endif

// @func crb_factor_native
    {
// @use factorization.prefetch_next
    }
    {
        const bool crb_general = false;
// @use inertia.crb
    }
    // the integration's M + hd_int·D (hd_int >= 0) factored now too, while M is in cache (ld_solve_native solves
    // with it). When hd_int == hd, or D is zero on every dof of this env (hd, hd_int >= 0: both products are then
    // the same signed zero), M + hd_int·D is M + hd·D bit for bit, and so is its factor: copied, not recomputed;
    // else both factors in one pass (the part factor_pair; prefetch bit 16: one after the other, the A/B of
    // benchmarks/results/constraint.md, Round 17 (rigidhum))
    bool int_same = false;
    if (hd_int >= decltype(hd_int)(0)) {
        typedef decltype(+*mass.data) T;
        const T* dv_e = (const T*)((const char*)dof_dv.data + (size_t)env * dof_dv.strides[0]);
        int_same = hd_int == hd;
        if (!int_same) {
            int_same = true;
            for (int i = 0; i < n; ++i) int_same = int_same && dv_e[i] == T(0);
        }
    }
    const bool int_pair = hd_int >= decltype(hd_int)(0) && !int_same && (prefetch & 16) == 0;
    if (int_pair) {
// @use factorization.factor_pair
    } else {
// @use factorization.factor
    }
    {
// @use factorization.solve
    }
    if (hd_int >= decltype(hd_int)(0) && !int_pair) {
        typedef decltype(+*mass.data) T;
        if (int_same) {
            const T* q0 = (const T*)((const char*)qld.data + (size_t)env * qld.strides[0]);
            T* q1 = (T*)((char*)qld_int.data + (size_t)env * qld_int.strides[0]);
            for (int a = 0; a < (int)m_col.shape[0]; ++a) q1[a] = q0[a];
        } else {
            const auto hd = hd_int;
            const auto& qld = qld_int;
// @use factorization.factor
        }
    }
    if (dense) {
// @use factorization.dense
    }
