// Native body of kernels/convex_solve.py (see kernels/native.py for the conventions).
//
// update_rows_native: forces, states (EfcState) and the sum of the row costs at jar = J·qacc − aref
// of the convex problem (MuJoCo's mj_constraintUpdate): equality rows quadratic, frictionloss rows
// Huber-like (linear beyond ±R·frictionloss), limit and pyramidal/frictionless contact rows one-sided
// quadratic, elliptic contacts by the cone's three zones (top: no force; bottom: quadratic; middle:
// the cone cost). The sum goes to out[env, 2]. Same expressions as the line search's rows, each
// product its own statement.

// solve_prefetch_native (CPU; nothing on CUDA): the envs of a launch are solved one after another, and at
// 1024 envs the next env's rows and M left the cache when the row builder and mass_dense wrote them; ask
// for the next env's J entries over each row's recorded segments (efc_seg; else its span) (read), M (read;
// mtree: its lines tree by tree, each row over its tree's columns — the lines off the trees hold zeros the
// solve never reads —, else whole rows; with mdense, where the solve writes the dense M itself, also the
// tree-sparse M and D it is written from) and its per-row inputs and outputs now, while this env is solved;
// at most 1024 rows, M only up to 32 KB (benchmarks/results/constraint.md, Rounds 9, 14d and 15). level 2 (the default): prefetcht1, into L2 only, as the
// row builder's (Round 11: the next env's ~36 KB into the 48 KB L1 compete with this env's lines); level 1: into L1.

// @part rows
    // forces F, states S and the sum of the row costs at jar_ (returned)
    auto cs_update_rows = [&](int nrow, const int* tp_, const int* dim_, const T* D_, const T* R_, const T* fl_,
                              const T* mu_, const T* jar_, T* F, int* S) -> T {
        const T half = T(0.5);
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
        return cost;
    };
    // the vector loops of an iteration (see below)
    auto cs_line_dots = [&](int nv, const T* s, const T* mv_, const T* ma_, T& pmp_out, T& pg0_out) {
        T pmp = T(0);
        T pg0 = T(0);
        for (int j = 0; j < nv; ++j) {
            const T a = s[j] * mv_[j];
            pmp = pmp + a;
            const T b = s[j] * ma_[j];
            pg0 = pg0 + b;
        }
        pmp_out = pmp;
        pg0_out = pg0;
    };
    auto cs_step_update = [&](int nv, int nrow, T alpha, const T* s, const T* mv_, const T* jv_, T* qa, T* ma_, T* jar_) {
        for (int j = 0; j < nv; ++j) {
            const T a = alpha * s[j];
            qa[j] = qa[j] + a;
            const T b = alpha * mv_[j];
            ma_[j] = ma_[j] + b;
        }
        for (int r = 0; r < nrow; ++r) {
            const T a = alpha * jv_[r];
            jar_[r] = jar_[r] + a;
        }
    };
    auto cs_gauss_cost = [&](int nv, const T* qa, const T* qs, const T* ma_, T cost) -> T {
        const T half = T(0.5);
        for (int j = 0; j < nv; ++j) {
            const T d = qa[j] - qs[j];
            const T h = half * d;
            const T c = h * ma_[j];
            cost = cost + c;
        }
        return cost;
    };
    auto cs_sumsq = [&](int nv, const T* v) -> T {
        T s = T(0);
        for (int j = 0; j < nv; ++j) {
            const T p = v[j] * v[j];
            s = s + p;
        }
        return s;
    };
    (void)cs_update_rows; (void)cs_line_dots; (void)cs_step_update; (void)cs_gauss_cost; (void)cs_sumsq;

// @func update_rows_native
    typedef decltype(+*efc_D.data) T;
// @use convex_solve.rows
    const size_t e = (size_t)env;
#define PP_R(a, t) ((t*)((char*)a.data + e * a.strides[0]))
    PP_R(out, T)[2] = cs_update_rows(nrow, PP_R(efc_type, const int), PP_R(efc_dim, const int), PP_R(efc_D, const T),
                                     PP_R(efc_R, const T), PP_R(efc_floss, const T), PP_R(efc_mu, const T), PP_R(jar, const T),
                                     PP_R(efc_force, T), PP_R(efc_state, int));
#undef PP_R

// island_label_native: constraint islands of env e (MuJoCo's mj_island; docs/constraint.md, "Islands").
// A dof's tree is the root of its dof chain; the rows of one constraint (consecutive rows of one type
// and id) join the trees of what it acts on, as MuJoCo reads them (union-find, the lower tree index
// represents the set): a frictionloss row its dof's tree, a limit its joint's, a contact the trees of
// its two links, a connect/weld those of its two links, a joint equality those of its two dofs (the
// world, or a link welded to it, is no tree); a constraint with none of these takes the trees of the
// nonzero columns of its rows' J spans, and one with no tree at all makes the env one island of every
// dof and row (`degenerate`, solved as without islands). Islands are numbered in the order
// of their lowest tree; each island's dofs and rows are listed in ascending order (CSR lists).
// scratch rows: [0] union-find parent, [1] constrained flag, then counts / cursors, [2] island of a
// representative. dof_island holds the dof's tree until the labels are written. Kept labels: see the compare
// below (the rows' keys; a model of one tree: the row count alone). ``mode``: the labelling's prefetch argument;
// its bit 16 selects the compare before Round 17 (A/B).

// @func island_label_native
    typedef decltype(+*efc_J.data) T;
    const size_t e = (size_t)env;
#define PP_R(a, t) ((t*)((char*)a.data + e * a.strides[0]))
    int* root = PP_R(dof_island, int);
    int* uf = PP_R(scratch, int);
    int* cnt = (int*)((char*)uf + scratch.strides[1]);
    int* risl = (int*)((char*)uf + 2 * scratch.strides[1]);
    int* ei = PP_R(efc_island, int);
    int* dadr = PP_R(island_dofadr, int);
    int* dl = PP_R(island_dofs, int);
    int* di = PP_R(dof_idof, int);
    int* radr = PP_R(island_efcadr, int);
    int* rl = PP_R(island_efcs, int);
    const int* tp_ = PP_R(efc_type, const int);
    const int* id_ = PP_R(efc_id, const int);
#undef PP_R
    const char* j0 = (const char*)efc_J.data + e * efc_J.strides[0];
    const size_t rs = efc_J.strides[1];
    const char* s0 = (const char*)efc_span.data + e * efc_span.strides[0];
    const size_t ss = efc_span.strides[1];
    // the labels are kept when the inputs they are read from equal those of the env's last relabelling:
    // each row's (type, id) and the links of each contact with rows (the model's arrays are fixed). Before
    // anything is written (dof_island holds the trees while labelling)
    int* kn = (int*)((char*)key_nefc.data + e * key_nefc.strides[0]);
    int* kt = (int*)((char*)key_type.data + e * key_type.strides[0]);
    int* ki = (int*)((char*)key_id.data + e * key_id.strides[0]);
    char* kl0 = (char*)key_link.data + e * key_link.strides[0];
    // a model of one kinematic tree (every dof but dof 0 has a parent; mode bit 16 off): its labels depend on the
    // row count alone (rows: one island of every dof and row, whether each constraint joins the tree or, acting
    // on none, makes the env `degenerate`: the same lists; no rows: none), so they are kept when the count is the
    // last relabelling's, and that relabelling's count is the whole key (benchmarks/results/constraint.md,
    // Round 17 (rigidhum))
    bool one_tree = (mode & 16) == 0 && nv > 0 && *(const int*)dof_parent.data < 0;
    for (int j = 1; one_tree && j < nv; ++j)
        one_tree = *(const int*)((const char*)dof_parent.data + (size_t)j * dof_parent.strides[0]) >= 0;
    uf[nv] = 1;      // (scratch row 0's last entry, unused by the labelling: kept, for the next env's prefetch)
    if (one_tree && *kn == nrow) return;
    if (!one_tree && *kn == nrow) {
        // the rows' (type, id) against the keys in one branch-free pass (mode bit 16: row by row with the links, as
        // before), then the links of each contact with rows
        int same = 1;
        if ((mode & 16) == 0) {
            int diff = 0;
            for (int r = 0; r < nrow; ++r) diff |= (tp_[r] ^ kt[r]) | (id_[r] ^ ki[r]);
            same = diff == 0;
        }
        for (int r = 0, pt = -1, pi = -1; same && r < nrow; ++r) {
            const int tp = tp_[r], ob = id_[r];
            if ((mode & 16) != 0 && (tp != kt[r] || ob != ki[r])) { same = 0; break; }
            if (tp >= EFC_CONTACT_FRICTIONLESS && (tp != pt || ob != pi)) {
                const int* cl = (const int*)((const char*)con_link.data + e * con_link.strides[0] +
                                             (size_t)ob * con_link.strides[1]);
                const int* kl = (const int*)(kl0 + (size_t)ob * key_link.strides[1]);
                if (cl[0] != kl[0] || cl[1] != kl[1]) { same = 0; break; }
            }
            pt = tp;
            pi = ob;
        }
        if (same) return;
    }
    uf[nv] = 0;
    for (int j = 0; j < nv; ++j) {
        const int p = *(const int*)((const char*)dof_parent.data + (size_t)j * dof_parent.strides[0]);
        root[j] = p >= 0 ? root[p] : j;
        uf[j] = j;
        cnt[j] = 0;
        risl[j] = -1;
    }
    auto find = [&](int t) {
        int r = t;
        while (uf[r] != r) r = uf[r];
        while (uf[t] != r) { const int nx = uf[t]; uf[t] = r; t = nx; }
        return r;
    };
    // the trees of a link (-1: world or welded to it) and of a dof
#define PP_I1(a, i) (*(const int*)((const char*)a.data + (size_t)(i) * a.strides[0]))
    auto link_tree = [&](int l) {
        if (l < 0) return -1;
        const int dl_ = PP_I1(link_dof_last, l);
        return dl_ >= 0 ? root[dl_] : -1;
    };
    auto unite = [&](int t, int& g) {
        if (t < 0) return;
        const int a = find(t);
        if (g < 0) { g = a; return; }
        const int b = find(g);
        if (a < b) uf[b] = a;
        else if (b < a) uf[a] = b;
    };
    const char* cl0 = (const char*)con_link.data + e * con_link.strides[0];
    int degenerate = 0, scanned = 0, gtree = -1, ptype = -1, pid = -1;
    for (int r = 0; r < nrow; ++r) {
        const int tp = tp_[r], ob = id_[r];
        if (tp != ptype || ob != pid) {
            // a new constraint: its trees from what it acts on (MuJoCo's special cases), else from the
            // nonzero columns of its rows' J spans
            ptype = tp;
            pid = ob;
            gtree = -1;
            int ta = -2, tb = -2;
            if (tp == EFC_FRICTION) {
                ta = root[ob];
            } else if (tp == EFC_LIMIT) {
                ta = root[PP_I1(lim_dof, ob)];
            } else if (tp >= EFC_CONTACT_FRICTIONLESS) {
                const int* cl = (const int*)(cl0 + (size_t)ob * con_link.strides[1]);
                ta = link_tree(cl[0]);
                tb = link_tree(cl[1]);
            } else if (tp == EFC_EQUALITY) {
                const int et = PP_I1(eq_type, ob);
                const int* eo = (const int*)((const char*)eq_obj.data + (size_t)ob * eq_obj.strides[0]);
                if (et == EQ_CONNECT || et == EQ_WELD) {
                    ta = link_tree(eo[0]);
                    tb = link_tree(eo[1]);
                } else if (et == EQ_JOINT) {
                    ta = eo[2] >= 0 ? root[eo[2]] : -1;
                    tb = eo[3] >= 0 ? root[eo[3]] : -1;
                }
            }
            unite(ta, gtree);
            unite(tb, gtree);
            if (gtree < 0) {
                // scan the rows of this constraint
                scanned = 1;
                for (int rr = r; rr < nrow && tp_[rr] == tp && id_[rr] == ob; ++rr) {
                    const int* sp = (const int*)(s0 + (size_t)rr * ss);
                    const int lo = sp[0] < 0 ? 0 : sp[0];
                    const int hi = sp[1] > nv ? nv : sp[1];
                    const T* jr = (const T*)(j0 + (size_t)rr * rs);
                    for (int k = lo; k < hi; ++k)
                        if (jr[k] != T(0)) unite(root[k], gtree);
                }
            }
            if (gtree < 0) degenerate = 1;
        }
        ei[r] = gtree;
    }
#undef PP_I1
    int nisl = 0;
    if (degenerate) {
        nisl = 1;
        for (int j = 0; j < nv; ++j) { root[j] = 0; di[j] = j; dl[j] = j; }
        for (int r = 0; r < nrow; ++r) { ei[r] = 0; rl[r] = r; }
        dadr[0] = 0; dadr[1] = nv; radr[0] = 0; radr[1] = nrow;
    } else {
        // a constraint's rows share one label and consecutive constraints often do too: one find per run
        for (int r = 0, prev = -2; r < nrow; ++r) {
            if (ei[r] == prev) continue;
            prev = ei[r];
            cnt[find(prev)] = 1;
        }
        for (int j = 0; j < nv; ++j) {
            if (root[j] == j) {
                const int a = find(j);
                if (cnt[a] == 1 && risl[a] < 0) risl[a] = nisl++;
            }
        }
        for (int r = 0, prev = -2, lab = -1; r < nrow; ++r) {
            if (ei[r] != prev) { prev = ei[r]; lab = risl[find(prev)]; }
            ei[r] = lab;
        }
        for (int j = 0; j < nv; ++j) root[j] = risl[find(root[j])];
        for (int k = 0; k <= nisl; ++k) cnt[k] = 0;
        for (int j = 0; j < nv; ++j) if (root[j] >= 0) cnt[root[j]]++;
        int acc = 0;
        for (int k = 0; k < nisl; ++k) { dadr[k] = acc; acc += cnt[k]; cnt[k] = 0; }
        dadr[nisl] = acc;
        for (int j = 0; j < nv; ++j) {
            const int k = root[j];
            di[j] = -1;
            if (k >= 0) { const int c = cnt[k]++; dl[dadr[k] + c] = j; di[j] = c; }
        }
        for (int k = 0; k <= nisl; ++k) cnt[k] = 0;
        for (int r = 0; r < nrow; ++r) cnt[ei[r]]++;
        acc = 0;
        for (int k = 0; k < nisl; ++k) { radr[k] = acc; acc += cnt[k]; cnt[k] = 0; }
        radr[nisl] = acc;
        for (int r = 0; r < nrow; ++r) { const int k = ei[r]; rl[radr[k] + cnt[k]++] = r; }
    }
    *(int*)((char*)nisland.data + e * nisland.strides[0]) = nisl;
    // the inputs of these labels, for the next substep's compare (none when J was read: relabel then)
    *kn = scanned && !one_tree ? -1 : nrow;
    if (!scanned && !one_tree) {
        for (int r = 0, pt = -1, pi = -1; r < nrow; ++r) {
            const int tp = tp_[r], ob = id_[r];
            kt[r] = tp;
            ki[r] = ob;
            if (tp >= EFC_CONTACT_FRICTIONLESS && (tp != pt || ob != pi)) {
                const int* cl = (const int*)(cl0 + (size_t)ob * con_link.strides[1]);
                int* kl = (int*)(kl0 + (size_t)ob * key_link.strides[1]);
                kl[0] = cl[0];
                kl[1] = cl[1];
            }
            pt = tp;
            pi = ob;
        }
    }

// island_label_next_native: after island_label_native, the island_niter entries past the env's count
// cleared, and (prefetch = 1 into L1, 2 into L2 only; CPU) the next env's rows, contacts and label outputs
// prefetched: the labelling is one short pass per env over rows last touched by the row builder, bound by these misses.

// @func island_label_next_native
    {
        const size_t e = (size_t)env;
        const int nisl = *(const int*)((const char*)nisland.data + e * nisland.strides[0]);
        int* it = (int*)((char*)island_niter.data + e * island_niter.strides[0]);
        for (int k = nisl < 0 ? 0 : nisl; k < nv; ++k) it[k] = 0;    // (a kept count is never < 0; no write before the row)
    }
#if !defined(__CUDA_ARCH__)
    // (a model of one tree keeps its labels unless the next env's row count changed: nothing of it to prefetch)
    bool pf_one_tree = (prefetch & 16) == 0 && nv > 0 && *(const int*)dof_parent.data < 0;
    for (int j = 1; pf_one_tree && j < nv; ++j)
        pf_one_tree = *(const int*)((const char*)dof_parent.data + (size_t)j * dof_parent.strides[0]) >= 0;
    if (prefetch && !pf_one_tree && env + 1 < nefc.shape[0]) {
        const size_t e1 = (size_t)env + 1;
        int nr = *(const int*)((const char*)nefc.data + e1 * nefc.strides[0]);
        if (nr > efc_type.shape[1]) nr = efc_type.shape[1];
        int nc = *(const int*)((const char*)ncon.data + e1 * ncon.strides[0]);
        if (nc > con_link.shape[1]) nc = con_link.shape[1];
        auto pf = [&](const void* base, size_t stride, size_t bytes, int rw) {
            const char* b = (const char*)base + e1 * stride;
            for (size_t l = 0; l < bytes; l += 64) {
                if (prefetch >= 2) __builtin_prefetch(b + l, 0, 2);
                else if (rw) __builtin_prefetch(b + l, 1, 3);
                else __builtin_prefetch(b + l, 0, 3);
            }
        };
        const size_t rb = (size_t)(nr > 0 ? nr : 0) * sizeof(int), vb = (size_t)(nv + 1) * sizeof(int);
        pf(efc_type.data, efc_type.strides[0], rb, 0);
        pf(efc_id.data, efc_id.strides[0], rb, 0);
        pf(con_link.data, con_link.strides[0], (size_t)(nc > 0 ? nc : 0) * con_link.strides[1], 0);
        pf(island_niter.data, island_niter.strides[0], vb, 1);
        const int kn1 = *(const int*)((const char*)key_nefc.data + e1 * key_nefc.strides[0]);
        if ((prefetch & 16) == 0 && kn1 == nr) {
            // the next env compares its rows with its keys: its keys, and its label outputs only when this env
            // relabelled (a kept env writes none; Round 17, rigidhum; mode bit 16: the outputs alone, as before)
            pf(key_type.data, key_type.strides[0], rb, 0);
            pf(key_id.data, key_id.strides[0], rb, 0);
            pf(key_link.data, key_link.strides[0], (size_t)(nc > 0 ? nc : 0) * key_link.strides[1], 0);
            const int kept = *(const int*)((const char*)scratch.data + (size_t)env * scratch.strides[0] +
                                           (size_t)nv * scratch.strides[2]);
            if (kept) return;
        }
        pf(efc_island.data, efc_island.strides[0], rb, 1);
        pf(island_efcs.data, island_efcs.strides[0], rb, 1);
        pf(dof_island.data, dof_island.strides[0], vb, 1);
        pf(island_dofs.data, island_dofs.strides[0], vb, 1);
        pf(dof_idof.data, dof_idof.strides[0], vb, 1);
        pf(island_dofadr.data, island_dofadr.strides[0], vb, 1);
        pf(island_efcadr.data, island_efcadr.strides[0], vb, 1);
        pf(scratch.data, scratch.strides[0], 3 * scratch.strides[1], 1);
    }
#endif

// island_gather_native: island k of env e into the island arrays: its M block, qacc_smooth and qacc, and
// its rows (type, dim, D, R, frictionloss, mu, aref; J over the island's dofs, each row's nonzero segments
// over them in ispan: lo, g0, g1, hi, found while the row is written, the bounds kernels/linalg.cpp `jseg`
// finds on the compact row; the row is read over its recorded segments' [lo, hi) in seg, else its span; packed
// with the span cache, less the island's dofs in the recorded inner run of zeros [g0, g1): not written either
// where the products skip them),
// and the state of the env's evaluation at the start point (jar, forces, states, Jᵀf, gradient, M·(a − a₀):
// exact for the island, which no row outside it touches and whose M block has no coupling outside).
// With zero_rows the compact J rows are cleared first (the products scan whole rows: no span cache).
// The compact column where a row's segments start (and where its inner run of zeros ends) is found by
// bisection in the island's dof list, once per distinct bound: a contact's consecutive rows reuse it.

// @func island_gather_native
    typedef decltype(+*M.data) T;
// @use linalg.span
    const size_t e = (size_t)env;
#define PP_R(a, t) ((t*)((char*)a.data + e * a.strides[0]))
    const int* dofs = PP_R(island_dofs, const int) + d0;
    const int* rows = PP_R(island_efcs, const int) + r0;
    const int* didof = PP_R(dof_idof, const int);
    const T* qs = PP_R(qacc_smooth, const T);
    const T* qa = PP_R(qacc, const T);
    T* iqs = PP_R(iacc_smooth, T);
    T* iqa = PP_R(iacc, T);
    const int* tp = PP_R(efc_type, const int);
    const int* dm = PP_R(efc_dim, const int);
    const T* D_ = PP_R(efc_D, const T);
    const T* R_ = PP_R(efc_R, const T);
    const T* fl = PP_R(efc_floss, const T);
    const T* mu = PP_R(efc_mu, const T);
    const T* ar = PP_R(efc_aref, const T);
    const T* jar_ = PP_R(jar, const T);
    const T* f_ = PP_R(efc_force, const T);
    const int* st_ = PP_R(efc_state, const int);
    const T* qc_ = PP_R(qfrc_constraint, const T);
    const T* g_ = PP_R(grad, const T);
    const T* ma_ = PP_R(ma, const T);
    T* ijar_ = PP_R(ijar, T);
    T* if_ = PP_R(iforce, T);
    int* ist_ = PP_R(istate, int);
    T* iqc_ = PP_R(ifrc, T);
    T* ig_ = PP_R(igrad, T);
    T* ima_ = PP_R(ima, T);
    int* itp = PP_R(itype, int);
    int* idm = PP_R(idim, int);
    T* iD_ = PP_R(iD, T);
    T* iR_ = PP_R(iR, T);
    T* ifl = PP_R(ifloss, T);
    T* imu_ = PP_R(imu, T);
    T* iar = PP_R(iaref, T);
#undef PP_R
    const char* m0 = (const char*)M.data + e * M.strides[0];
    char* im0 = (char*)iM.data + e * iM.strides[0];
    // packed (the Newton path): the island's M block and J rows at row stride nd
    const size_t ims = packed != 0 ? (size_t)nd * sizeof(T) : (size_t)iM.strides[1], mms = M.strides[1];
    for (int a = 0; a < nd; ++a) {
        const int da = dofs[a];
        iqs[a] = qs[da];
        iqa[a] = qa[da];
        iqc_[a] = qc_[da];
        ig_[a] = g_[da];
        ima_[a] = ma_[da];
    }
    // M's block: d.qM holds only M's tree pattern (each dof with its ancestors, both triangles; zeros elsewhere
    // since allocation: factorization.mass_dense), so the block is zeros and, for each island dof, the entries
    // with its ancestors (dof_parent chain; an ancestor is in the dof's island) in both triangles, read from M:
    // the same entries as reading the whole block, without its cold zeros
    for (int a = 0; a < nd; ++a) {
        T* ir = (T*)(im0 + (size_t)a * ims);
        for (int b = 0; b < nd; ++b) ir[b] = T(0);
    }
    const int* dpar = (const int*)dof_parent.data;
    const size_t dps = (size_t)dof_parent.strides[0] / sizeof(int);
    for (int a = 0; a < nd; ++a) {
        const int da = dofs[a];
        const T* mr = (const T*)(m0 + (size_t)da * mms);
        T* ir = (T*)(im0 + (size_t)a * ims);
        for (int p = da; p >= 0; p = dpar[(size_t)p * dps]) {
            const int c = didof[p];
            ir[c] = mr[p];
            ((T*)(im0 + (size_t)c * ims))[a] = ((const T*)(m0 + (size_t)p * mms))[da];
        }
    }
    const char* j0 = (const char*)J.data + e * J.strides[0];
    char* ij0 = (char*)iJ.data + e * iJ.strides[0];
    const char* s0 = (const char*)span.data + e * span.strides[0];
    const char* g0p = (const char*)seg.data + e * seg.strides[0];
    const size_t g3 = (size_t)seg.strides[2] / sizeof(int);
    char* is0 = (char*)ispan.data + e * ispan.strides[0];
    const size_t ijs = packed != 0 ? (size_t)nd * sizeof(T) : (size_t)iJ.strides[1];
    T* scp = (T*)0;   // packed: the span cache (sc_mode 1) of the island's problem, as spans_fill writes it
    if (packed != 0 && sc_mode != 0) scp = (T*)(sc_mode == 1 ? (char*)sc_a.data + e * sc_a.strides[0] : (char*)0);
    if (scp) {
        // M's rows scanned over the block (spans_fill, tree = 0)
        for (int a = 0; a < nd; ++a) {
            const T* mr = (const T*)(im0 + (size_t)a * ims);
            int lo, hi;
            PP_SPAN(mr, nd, lo, hi);
            scp[2 * a] = T(lo);
            scp[2 * a + 1] = T(hi);
        }
    }
    // the two bisections below depend only on a row's recorded bounds (lo, sg1): a contact's rows (the same two
    // bodies) share them, so the last results are kept and reused for equal bounds (the same integers;
    // benchmarks/results/constraint.md, Round 17 (rigidsolve))
    int pk_lo = -1, pk_c = 0, pk_g1 = -1, pk_cs1 = 0;
    for (int q = 0; q < nr; ++q) {
        const int r = rows[q];
        itp[q] = tp[r];
        idm[q] = dm[r];
        iD_[q] = D_[r];
        iR_[q] = R_[r];
        ifl[q] = fl[r];
        imu_[q] = mu[r];
        iar[q] = ar[r];
        ijar_[q] = jar_[r];
        if_[q] = f_[r];
        ist_[q] = st_[r];
        const int* sp = (const int*)(s0 + (size_t)r * span.strides[1]);
        const int* sg = (const int*)(g0p + (size_t)r * seg.strides[1]);
        int lo = sp[0] < 0 ? 0 : sp[0];
        int hi = sp[1] > nv ? nv : sp[1];
        int sg0 = hi, sg1 = hi;     // with the span cache: the recorded inner run of zeros [sg0, sg1) (none: empty)
        if (sg[0] >= 0) {
            // the recorded segments' first and last nonzero: the island's columns outside are zeros (never
            // read: the products run over the segments below; without a span cache the row was zeroed)
            lo = sg[0];
            hi = sg[3 * g3];
            if (scp) { sg0 = sg[g3]; sg1 = sg[2 * g3]; }
        }
        const T* jr = (const T*)(j0 + (size_t)r * J.strides[1]);
        T* ir = (T*)(ij0 + (size_t)q * ijs);
        if (zero_rows != 0) for (int c = 0; c < nd; ++c) ir[c] = T(0);
        // the compact row's segments as it is written (columns ascending: dof_idof keeps the dofs' order).
        // The island's dofs inside [lo, hi) are read from its ascending dof list (the first by bisection), not
        // found by testing every column of [lo, hi) against dof_island: the same columns in the same order
        // (compact column c = the dof's index in the list), so the same entries and segments
        // (benchmarks/results/constraint.md, Round 14 (pile))
        int chi = 0, f = -1, l = -1, best = 0, a0 = 0, a1 = 0;
        int c = 0;
        if (lo == pk_lo) {
            c = pk_c;
        } else {
            int cn = nd;
            while (c < cn) {
                const int mid = (c + cn) >> 1;
                if (dofs[mid] < lo) c = mid + 1;
                else cn = mid;
            }
            pk_lo = lo;
            pk_c = c;
        }
        // packed, with the span cache: the island's dofs inside the row's recorded inner run of zeros [sg0, sg1) (a contact's two bodies'
        // chains: the island's bodies numbered between them) are skipped, not read from J — lines of the env's J
        // that nothing else of the solve touches (its products and prefetch read the recorded segments): the
        // compact bounds below follow the nonzeros' compact columns, so they are the same; the skipped columns are
        // one run of zeros, copied after all when the compact row's longest run is another (they then lie in a
        // segment the products read; benchmarks/results/constraint.md, Round 16 (pile solve))
        int cs0 = 0, cs1 = 0;   // the compact columns skipped: [cs0, cs1)
        for (int part = 0; part < 2; ++part) {
            const int ce = part == 0 ? (sg0 < sg1 ? sg0 : hi) : hi;
            if (part == 1) {
                if (!(sg0 < sg1)) break;
                cs0 = c;
                if (sg1 == pk_g1) {
                    c = pk_cs1;
                } else {
                    // (the first island dof >= sg1 from c: c <= that dof's index, as sg0 <= sg1)
                    int cn = nd;
                    while (c < cn) {
                        const int mid = (c + cn) >> 1;
                        if (dofs[mid] < sg1) c = mid + 1;
                        else cn = mid;
                    }
                    pk_g1 = sg1;
                    pk_cs1 = c;
                }
                cs1 = c;
            }
            for (; c < nd && dofs[c] < ce; ++c) {
                const T x = jr[dofs[c]];
                ir[c] = x;
                chi = c + 1;
                if (!(x == T(0))) {
                    if (f < 0) f = c;
                    else if (c - l - 1 > best) { best = c - l - 1; a0 = l + 1; a1 = c; }
                    l = c;
                }
            }
        }
        if (cs1 > cs0) {
            if (cs1 > chi) chi = cs1;
            // inside the compact row's longest run of zeros (the usual case), never read; else copied now
            if (!(best > 0 && a0 <= cs0 && cs1 <= a1))
                for (int cc = cs0; cc < cs1; ++cc) ir[cc] = jr[dofs[cc]];
        }
        int* isp = (int*)(is0 + (size_t)q * ispan.strides[1]);
        const size_t i3 = (size_t)ispan.strides[2] / sizeof(int);
        if (f < 0) {
            const int h = chi > 0 ? chi : nd;        // all zero: lo = g0 = g1 = hi
            isp[0] = h; isp[i3] = h; isp[2 * i3] = h; isp[3 * i3] = h;
        } else {
            isp[0] = f;
            isp[i3] = best > 0 ? a0 : l + 1;
            isp[2 * i3] = best > 0 ? a1 : l + 1;
            isp[3 * i3] = l + 1;
        }
        if (scp) {
            // J's row: its segments just found (spans_fill from ispan)
            scp[2 * nd + 2 * q] = T(isp[0] + 4096 * isp[i3]);
            scp[2 * nd + 2 * q + 1] = T(isp[2 * i3] + 4096 * isp[3 * i3]);
        }
    }

// island_scatter_native: island k's solution back: qacc and Jᵀf of its dofs, forces and states of its rows.

// @func island_scatter_native
    typedef decltype(+*qacc.data) T;
    const size_t e = (size_t)env;
#define PP_R(a, t) ((t*)((char*)a.data + e * a.strides[0]))
    const int* dofs = PP_R(island_dofs, const int) + d0;
    const int* rows = PP_R(island_efcs, const int) + r0;
    T* qa = PP_R(qacc, T);
    T* qc = PP_R(qfrc_constraint, T);
    const T* iqa = PP_R(iacc, const T);
    const T* iqc = PP_R(ifrc, const T);
    T* f = PP_R(efc_force, T);
    int* st = PP_R(efc_state, int);
    const T* iff = PP_R(iforce, const T);
    const int* ist = PP_R(istate, const int);
#undef PP_R
    for (int a = 0; a < nd; ++a) {
        qa[dofs[a]] = iqa[a];
        qc[dofs[a]] = iqc[a];
    }
    for (int q = 0; q < nr; ++q) {
        f[rows[q]] = iff[q];
        st[rows[q]] = ist[q];
    }

// island_inplace_start_native: an island whose dofs [fd, fd + nd) and rows [fr, fr + nr) are contiguous, solved
// in place (no gather, no scatter): the span cache (sc_mode) of the island's block — M's rows scanned over the
// block's columns, J's rows the segments make_rows recorded less fd (else `jseg` over the block's columns): the
// bounds island_gather_native + spans_fill find on the gathered copy, which holds the same entries — and the
// island's start cost (its rows' costs at the env's jar, then its Gauss term) into out[env, 2], as the gathered
// path's update_rows_native + gauss_cost (the rows' forces and states rewritten with the same values).

// @func island_inplace_start_native
    typedef decltype(+*M.data) T;
// @use linalg.jseg
// @use convex_solve.rows
    const size_t e = (size_t)env;
// @use linalg.span
    if (sc_mode != 0) {
        T* sp = (T*)(sc_mode == 1 ? (char*)sc_a.data + e * sc_a.strides[0] : (char*)sc_b.data + e * sc_b.strides[0]);
        const char* m0 = (const char*)M.data + e * M.strides[0];
        for (int a = 0; a < nd; ++a) {
            const T* mr = (const T*)(m0 + (size_t)(fd + a) * M.strides[1]) + fd;
            int lo, hi;
            PP_SPAN(mr, nd, lo, hi);
            sp[2 * a] = T(lo);
            sp[2 * a + 1] = T(hi);
        }
        const char* jq = (const char*)efc_seg.data + e * efc_seg.strides[0];
        const size_t q3 = (size_t)efc_seg.strides[2];
        const char* jj0 = (const char*)J.data + e * J.strides[0];
        for (int q = 0; q < nr; ++q) {
            const int r = fr + q;
            const char* jqr = jq + (size_t)r * efc_seg.strides[1];
            int s4[4];
            s4[0] = *(const int*)jqr;
            const T* jr = (const T*)(jj0 + (size_t)r * J.strides[1]) + fd;
            if (s4[0] >= 0 && s4[0] < *(const int*)(jqr + 3 * q3)) {
                s4[0] -= fd;
                s4[1] = *(const int*)(jqr + q3) - fd;
                s4[2] = *(const int*)(jqr + 2 * q3) - fd;
                s4[3] = *(const int*)(jqr + 3 * q3) - fd;
            } else {
                la_jseg(jr, 0, nd, nd, s4);   // no recorded segments, or an empty row (then empty here too)
            }
            sp[2 * nd + 2 * q] = T(s4[0] + 4096 * s4[1]);
            sp[2 * nd + 2 * q + 1] = T(s4[2] + 4096 * s4[3]);
        }
    }
#define PP_R(a, t) ((t*)((char*)a.data + e * a.strides[0]))
    const T rc = cs_update_rows(nr, PP_R(efc_type, const int) + fr, PP_R(efc_dim, const int) + fr, PP_R(efc_D, const T) + fr,
                                PP_R(efc_R, const T) + fr, PP_R(efc_floss, const T) + fr, PP_R(efc_mu, const T) + fr,
                                PP_R(jar, const T) + fr, PP_R(efc_force, T) + fr, PP_R(efc_state, int) + fr);
    PP_R(out, T)[2] = cs_gauss_cost(nd, PP_R(qacc, const T) + fd, PP_R(qacc_smooth, const T) + fd, PP_R(ma, const T) + fd, rc);
#undef PP_R

// The vector loops of a Newton/CG iteration (solve_iterate, update_constraint): the same operations in the
// same order as the Warp loops they replace, over raw row pointers (kernels/native.py: Warp's indexing
// costs more than these products). Scalar results go to out[env, k] for the caller to read at once.
// line_dots_native: out[0] = pᵀ(Mp), out[1] = pᵀ(M(a − a₀)) (ascending sums).
// step_update_native: qacc += α·p, ma += α·Mp, jar += α·Jp. gauss_cost_native: out[2] += Σ ½(a − a₀)·ma.
// sumsq_native: out[k] = Σ x².

// @func line_dots_native
    typedef decltype(+*search.data) T;
// @use convex_solve.rows
    const size_t e = (size_t)env;
#define PP_R(a, t) ((t*)((char*)a.data + e * a.strides[0]))
    T* o = PP_R(out, T);
    cs_line_dots(nv, PP_R(search, const T), PP_R(mv, const T), PP_R(ma, const T), o[0], o[1]);
#undef PP_R

// @func step_update_native
    typedef decltype(+*search.data) T;
// @use convex_solve.rows
    const size_t e = (size_t)env;
#define PP_R(a, t) ((t*)((char*)a.data + e * a.strides[0]))
    cs_step_update(nv, nrow, alpha, PP_R(search, const T), PP_R(mv, const T), PP_R(jv, const T), PP_R(qacc, T), PP_R(ma, T),
                   PP_R(jar, T));
#undef PP_R

// @func gauss_cost_native
    typedef decltype(+*qacc.data) T;
// @use convex_solve.rows
    const size_t e = (size_t)env;
#define PP_R(a, t) ((t*)((char*)a.data + e * a.strides[0]))
    T* o = PP_R(out, T);
    o[2] = cs_gauss_cost(nv, PP_R(qacc, const T), PP_R(qacc_smooth, const T), PP_R(ma, const T), o[2]);
#undef PP_R

// @func sumsq_native
    typedef decltype(+*x.data) T;
// @use convex_solve.rows
    const size_t e = (size_t)env;
    ((T*)((char*)out.data + e * out.strides[0]))[k] = cs_sumsq(nv, (const T*)((const char*)x.data + e * x.strides[0]));

// pad_rows_native: the rows past the env's count (nrow .. the row budget) read as inactive with zero force.
// On CPU (nt = 1) the whole 64-byte lines of that tail are written with non-temporal stores: the row budget's
// unused tail (the humanoid: 824 of 866 rows, ≈ 10 KB per env) is written every solve and read by no stage, and
// plain stores read each of its lines for ownership and leave it dirty in the cache (benchmarks/results/
// constraint.md, Round 14). The line shared with the last row, if any, takes plain stores; a store fence ends
// it. The same values (+0, STATE_INACTIVE) either way. nt = 2 (the default): only the rows from nrow up to the
// env's efc_pad (the row from which the padding is already there: the rows the previous solves wrote past this
// count), with plain stores, then efc_pad = nrow; the zero-filled arrays are the padding from row 0 at the build.
// The same values again, without a store over the unused budget per solve (Round 15). nt = 3 (the row pool,
// docs/constraint.md "The row pool"): no store, efc_pad = nrow — the rows past the count belong to the next env.

// @func pad_rows_native
    typedef decltype(+*efc_force.data) T;
    const size_t e = (size_t)env;
    T* f = (T*)((char*)efc_force.data + e * efc_force.strides[0]);
    int* st = (int*)((char*)efc_state.data + e * efc_state.strides[0]);
    const int n = (int)efc_force.shape[1];
    int* pm = (int*)((char*)efc_pad.data + e * efc_pad.strides[0]);
    {
        const int lo = nrow < 0 ? 0 : (nrow > n ? n : nrow);
        const int hi = *pm > n ? n : *pm;
        *pm = lo;         // every mode leaves the padding from the count on
        if (nt == 3) return;   // the row pool: the rows past the count are the next env's (no padding)
        if (nt == 2) {
            for (int i = lo; i < hi; ++i) {
                f[i] = T(0);
                st[i] = STATE_INACTIVE;
            }
            return;
        }
    }
#if !defined(__CUDA_ARCH__)
    if (nt == 1) {
        int i = nrow < 0 ? 0 : nrow;
        for (; i < n && ((size_t)(f + i) & 63) != 0; ++i) f[i] = T(0);
        if (sizeof(T) == 8) {
            long long* fb = (long long*)f;
            for (; i < n; ++i) __builtin_nontemporal_store(0LL, fb + i);
        } else {
            int* fb = (int*)f;
            for (; i < n; ++i) __builtin_nontemporal_store(0, fb + i);
        }
        i = nrow < 0 ? 0 : nrow;
        for (; i < n && ((size_t)(st + i) & 63) != 0; ++i) st[i] = STATE_INACTIVE;
        for (; i < n; ++i) __builtin_nontemporal_store((int)STATE_INACTIVE, st + i);
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_sfence();       // non-temporal stores are weakly ordered
#endif
        return;
    }
#endif
    for (int i = nrow; i < n; ++i) {
        f[i] = T(0);
        st[i] = STATE_INACTIVE;
    }

// newton_solve_native: the Newton iterations of one problem (an env, or one island gathered into the island
// arrays) from the state the start evaluation left (qacc, jar, forces, states, Jᵀf, gradient, ma; cost
// cost_in): solve_iterate's Newton path (kernels/convex_solve.py) in one call, the same operations in the same
// order over the same lambdas (kernels/linalg.cpp `ops`, kernels/line_search.cpp `rows`, the part `rows`
// above): H = M + Σ D·JᵀJ over the quadratic rows + the elliptic cones' middle-zone block Hessians, its
// Cholesky factor, search = −H⁻¹g, the exact line search, the step, the rows, Jᵀf, gradient and cost at the
// new point, and the stopping test. The statistics (scaled improvement, gradient, cost) go to
// out[env, 0..2], the number of iterations to niter_out[env]. sc_mode: where the row spans are cached (1: LM, 0: none).
// dof0 / row0: the problem is the block of dofs [dof0, dof0 + nv) and rows [row0, row0 + nrow) of the env's arrays
// (an island solved in place, island_inplace_start_native; 0 / 0: the env, or an island gathered). sc_mode + 8:
// when nv is 6 (a free body's island), the iterations are compiled once more with nv the constant 6 and run from
// that copy: the same code, so the same operations in the same order (the same numbers), with the nv-bounded
// loops (the Cholesky's envelope and passes, the vector loops) of a known trip count (benchmarks/results/
// constraint.md, Round 14b). sc_mode + 16·b: a problem whose M has at least b (and 2) diagonal blocks builds and
// factors H over its block pattern (kernels/linalg.cpp la_blk_*; the same numbers but the sign of an exact zero;
// Round 15 (pile)).
// sc_mode + 4096: the incremental factor (convex_solve.solve(incremental=True); not the same numbers): after the
// first iteration, the rows whose state entered / left the quadratic zone update / downdate the last envelope
// factor by rank-1 steps instead of a new H and factor (Round 17 (rigidsolve)).

// @func solve_prefetch_native
#if !defined(__CUDA_ARCH__)
    typedef decltype(+*efc_J.data) T;
    if (env + 1 < efc_J.shape[0]) {
        const size_t e1 = (size_t)env + 1;
        // the next env's rows: doff = efc_off[e + 1] − efc_off[e] rows on from its own block (the row pool; 0 without)
        const long long dn = (long long)doff;
#define PP_NX(a) ((const char*)(a).data + (long long)e1 * (a).strides[0] + dn * (a).strides[1])
        // bounded (PP_PF_*): a large env (the pile: nv 300, M 720 KB) would evict the env being solved (its whole
        // M: +6 to +15 % on the pile's step, Round 14d); up to 1024 rows (≈ 0.3 MB of J lines and per-row arrays
        // into L2; was 128): the pile's 932 rows, ≈ −1 % of its step (Round 14d)
        enum { PP_PF_ROWS = 1024, PP_PF_MBYTES = 32768 };
        int nr = *(const int*)((const char*)n_efc.data + e1 * n_efc.strides[0]);
        if (nr > efc_J.shape[1]) nr = efc_J.shape[1];
        if (nr > PP_PF_ROWS) nr = PP_PF_ROWS;
        const char* sb = PP_NX(efc_span);
        const char* jb = PP_NX(efc_J);
        const size_t ss = efc_span.strides[2];
        const char* gb = PP_NX(efc_seg);
        const size_t gs = efc_seg.strides[2];
        // level 2: prefetcht1 (L2 only), level 1: prefetcht0 / prefetchw (into L1; Round 9)
        auto hint = [&](const char* a, int rw) {
            if (level >= 2) __builtin_prefetch(a, 0, 2);
            else if (rw) __builtin_prefetch(a, 1, 3);
            else __builtin_prefetch(a, 0, 3);
        };
        auto pf = [&](const char* jr, int lo, int hi) {
            if (hi <= lo) return;
            for (size_t l = (size_t)lo * sizeof(T) & ~(size_t)63; l < (size_t)hi * sizeof(T); l += 64)
                hint(jr + l, 0);
        };
        for (int r = 0; r < nr; ++r) {
            const char* jr = jb + (size_t)r * efc_J.strides[1];
            const char* sg = gb + (size_t)r * efc_seg.strides[1];
            if (*(const int*)sg >= 0) {
                // the two segments make_rows recorded (efc_seg)
                pf(jr, *(const int*)sg, *(const int*)(sg + gs));
                pf(jr, *(const int*)(sg + 2 * gs), *(const int*)(sg + 3 * gs));
                continue;
            }
            const int* sp = (const int*)(sb + (size_t)r * efc_span.strides[1]);
            const int lo = sp[0] < 0 ? 0 : sp[0];
            const int hi = *(const int*)((const char*)sp + ss) > nv ? nv : *(const int*)((const char*)sp + ss);
            pf(jr, lo, hi);
        }
        const char* mb = (const char*)qM.data + e1 * qM.strides[0];
        if (mdense) {
            // the next env's tree-sparse M and D, from which its dense M is written at its start
            const size_t ts = sizeof(T);
            const char* s1 = (const char*)mass.data + e1 * mass.strides[0];
            for (size_t l = 0; l < (size_t)mass.shape[1] * ts; l += 64) hint(s1 + l, 0);
            const char* v1 = (const char*)dof_dv.data + e1 * dof_dv.strides[0];
            for (size_t l = 0; l < (size_t)nv * ts; l += 64) hint(v1 + l, 0);
        }
        if (mtree) {
            // M's lines tree by tree: row j of a tree [s, t) over columns [s, t) (a tree's dofs are contiguous —
            // a dof's parent precedes it, a subtree is contiguous — and M is zero between trees, so the lines
            // outside are zeros the solve never reads: the boxes' 8 trees of 6 dofs are 72 of M's 288 lines),
            // up to the same 32 KB
            size_t mbytes = 0;
            for (int s0 = 0; s0 < nv;) {
                int t0 = s0 + 1;
                while (t0 < nv && *(const int*)((const char*)dof_parent.data + (size_t)t0 * dof_parent.strides[0]) >= 0) ++t0;
                mbytes += (size_t)(t0 - s0) * (size_t)(t0 - s0) * sizeof(T);
                if (mbytes > PP_PF_MBYTES) break;
                for (int j = s0; j < t0; ++j) pf(mb + (size_t)j * qM.strides[1], s0, t0);
                s0 = t0;
            }
        } else {
            for (int j = 0; (size_t)nv * nv * sizeof(T) <= PP_PF_MBYTES && j < nv; ++j) {
                const char* mr = mb + (size_t)j * qM.strides[1];
                for (size_t l = 0; l < (size_t)nv * sizeof(T); l += 64) hint(mr + l, 0);
            }
        }
        const size_t tb = (size_t)nr * sizeof(T);
        const char* ins[4] = {
            PP_NX(efc_aref), PP_NX(efc_D),
            PP_NX(efc_R), PP_NX(efc_type)};
        for (int a = 0; a < 4; ++a)
            for (size_t l = 0; l < tb; l += 64) hint(ins[a] + l, 0);
        const char* outs[2] = {(const char*)jar.data + e1 * jar.strides[0],
                               PP_NX(efc_force)};
        for (int a = 0; a < 2; ++a)
            for (size_t l = 0; l < tb; l += 64) hint(outs[a] + l, 1);
#undef PP_NX
    }
#endif

// @func newton_solve_native
    typedef decltype(+*M.data) T;
// @use linalg.ops
// @use line_search.rows
// @use convex_solve.rows
    const size_t e = (size_t)env;
#define PP_R(a, t) ((t*)((char*)a.data + e * a.strides[0]))
    const int* tp_ = PP_R(efc_type, const int) + row0;
    const int* dim_ = PP_R(efc_dim, const int) + row0;
    const T* D_ = PP_R(efc_D, const T) + row0;
    const T* R_ = PP_R(efc_R, const T) + row0;
    const T* fl_ = PP_R(efc_floss, const T) + row0;
    const T* mu_ = PP_R(efc_mu, const T) + row0;
    int* st_ = PP_R(efc_state, int) + row0;
    T* F_ = PP_R(efc_force, T) + row0;
    const T* qs = PP_R(qacc_smooth, const T) + dof0;
    T* qa = PP_R(qacc, T) + dof0;
    T* qc = PP_R(qfrc_constraint, T) + dof0;
    T* jar_ = PP_R(jar, T) + row0;
    T* jv_ = PP_R(jv, T) + row0;
    T* g = PP_R(grad, T) + dof0;
    T* p = PP_R(search, T) + dof0;
    T* ma_ = PP_R(ma, T) + dof0;
    T* mv_ = PP_R(mv, T) + dof0;
    T* o = PP_R(out, T);
#undef PP_R
    // packed (an island gathered by island_gather_native with packed = 1): M, J and H at row stride nv
    const size_t ms = packed != 0 ? (size_t)nv * sizeof(T) : (size_t)M.strides[1];
    const char* m0 = (const char*)M.data + e * M.strides[0] + (size_t)dof0 * ms + (size_t)dof0 * sizeof(T);
    const size_t rs = packed != 0 ? (size_t)nv * sizeof(T) : (size_t)efc_J.strides[1];
    const char* j0 = (const char*)efc_J.data + e * efc_J.strides[0] + (size_t)row0 * rs + (size_t)dof0 * sizeof(T);
    char* h0 = (char*)H.data + e * H.strides[0];
    const size_t hs = packed != 0 ? (size_t)nv * sizeof(T) : (size_t)H.strides[1];
    // sc_mode + 8 (bit 3): a 6-dof problem runs the iterations with nv a compile-time 6 (below)
    const int fixed6 = (sc_mode >> 3) & 1;
    const T* spc = la_spc(LM, H, sc_mode & 7, e);
    // sc_mode + 16·b (b = sc_mode >> 4 >= 1): with the span cache and M in at least max(b, 2) and at most PP_NB
    // diagonal blocks (free bodies, trees), H is built and factored over its block pattern (la_blk_*,
    // kernels/linalg.cpp); nb = 0: the envelope factor
    int bs[PP_NB + 1];
    unsigned char cb[PP_NBCOL];
    unsigned long long bpat[PP_NB];
    int nb = 0;
    const int nb_min = (sc_mode >> 4) & 255;
    // sc_mode + 4096: incremental factor (MuJoCo's rank-1 updates): after the first iteration, the rows whose
    // state entered or left the quadratic zone update / downdate the last factor instead of a new H and factor
    // (the envelope path only, without elliptic rows, nv and nrow <= 256; not the same numbers)
    int incr = (sc_mode >> 12) & 1;
    if (nv > 256 || nrow > 256) incr = 0;
    for (int r = 0; incr && r < nrow; ++r) if (tp_[r] == EFC_CONTACT_ELLIPTIC) incr = 0;
    if (nb_min != 0 && spc != (const T*)0) {
        nb = la_blk_bounds(nv, spc, bs, cb);
        if (nb < 2 || nb < nb_min) nb = 0;
    }
    const T zero = T(0);
    const T one = T(1);
    // the iterations below run with nv a compile-time 6 for a 6-dof problem (a free body's island): the same
    // operations in the same order, with every nv-bounded loop of the linear algebra of a known trip count
    struct PPNv6 { constexpr int get() const { return 6; } };
    struct PPNvAny { int v; int get() const { return v; } };
    auto iterate = [&](auto nvc) {
    const int nv = nvc.get();
    T cost = cost_in;
    int niter = 0;
    T improvement = zero;
    int done = nrow == 0 ? 1 : 0;
    T gnorm = wp::sqrt(cs_sumsq(nv, g));
    {
        const T sg = scale * gnorm;
        if (sg < tolerance) done = 1;
    }
    int st_fac[256];
    int have_fac = 0;
    for (int it = 0; it < iterations && done == 0; ++it) {
        // incremental: the factor of the last iteration, updated by the rows that changed state
        int upd = 0;
        if (incr && nb == 0 && have_fac) {
            upd = 1;
            int nch = 0;
            for (int r = 0; r < nrow; ++r) nch += ((st_fac[r] == STATE_QUADRATIC) != (st_[r] == STATE_QUADRATIC)) ? 1 : 0;
            if (4 * nch > nv) upd = 0;       // many changes: a new factor costs less
            T vb[256];
            int kmin_all = nv;
            for (int r = 0; upd && r < nrow; ++r) {
                const int was = st_fac[r] == STATE_QUADRATIC, now = st_[r] == STATE_QUADRATIC;
                if (was == now) continue;
                const T* jr = (const T*)(j0 + (size_t)r * rs);
                int lo, g0, g1, hi;
                la_jspan(spc, nv, r, jr, lo, g0, g1, hi);
                for (int k = 0; k < nv; ++k) vb[k] = zero;
                const T sd = wp::sqrt(D_[r]);
                for (int k = lo; k < hi; ++k) {
                    if (k == g0) { k = g1 - 1; continue; }
                    vb[k] = sd * jr[k];
                }
                const T sg = now ? one : -one;
                int k0 = lo;
                while (k0 < nv && vb[k0] == zero) ++k0;
                kmin_all = k0 < kmin_all ? k0 : kmin_all;
                for (int k = k0; k < nv; ++k) {
                    const T vk = vb[k];
                    if (vk == zero) continue;
                    T* lk = (T*)(h0 + (size_t)k * hs);
                    const T lkk = lk[k];
                    const T r2 = lkk * lkk + sg * vk * vk;
                    if (!(r2 > T(1.0e-30))) { upd = 0; break; }
                    const T rr = wp::sqrt(r2);
                    const T c = rr / lkk;
                    const T sn = vk / lkk;
                    lk[k] = rr;
                    for (int i = k + 1; i < nv; ++i) {
                        T* li = (T*)(h0 + (size_t)i * hs);
                        const T lik = (li[k] + sg * sn * vb[i]) / c;
                        li[k] = lik;
                        vb[i] = c * vb[i] - sn * lik;
                    }
                }
            }
            if (upd) {
                // the rows' envelopes (L[0][i], i >= 1): each row reached by an update may now start at kmin_all
                T* l0r = (T*)h0;
                for (int i = kmin_all + 1; i < nv; ++i)
                    if (i >= 1 && l0r[i] > T(kmin_all)) l0r[i] = T(kmin_all);
                la_chol_solve(nv, h0, hs, g, p);
            }
        }
        if (!upd) {
        // H = M + Jᵀ D J over quadratic rows + cone middle-zone block Hessians
        if (nb != 0) {
            la_blk_pattern(nv, nrow, tp_, dim_, st_, spc, cb, nb, bpat);
            la_blk_hess_copy(m0, ms, h0, hs, bs, nb, bpat);
        } else {
            la_hess_copy(nv, m0, ms, h0, hs);
        }
        int i = 0;
        while (i < nrow) {
            // the quadratic rows up to the next elliptic contact in the cone's middle zone, in one call
            int i1 = i;
            while (i1 < nrow && !(tp_[i1] == EFC_CONTACT_ELLIPTIC && st_[i1] == STATE_CONE)) ++i1;
            la_hess_add_rows(nv, i, i1, st_, D_, j0, rs, h0, hs, spc);
            i = i1;
            if (i < nrow) {
                const int dim = dim_[i];
                const T mu = mu_[i];
                const T mm = mu * mu;
                const T mm2 = mu * mu;
                const T opm = one + mm2;
                const T den = mm * opm;
                const T dm = D_[i] / den;
                const T n = mu * jar_[i];
                T tt = zero;
                for (int j = 1; j < dim; ++j) {
                    const T u = mu_[i + j] * jar_[i + j];
                    const T u2 = u * u;
                    tt = tt + u2;
                }
                const T t = wp::sqrt(tt);
                const T mt = mu * t;
                const T nmt = n - mt;
                // jar-space block: dm (g gᵀ − nmt·μ/t · F(I − ûûᵀ)F), g = (μ, −μ f_j u_j / t)
                for (int a = 0; a < dim; ++a) {
                    T ga = mu;
                    T fa = zero;
                    T ua = zero;
                    if (a > 0) {
                        fa = mu_[i + a];
                        const T fj = fa * jar_[i + a];
                        ua = fj / t;
                        const T mf = -mu * fa;
                        ga = mf * ua;
                    }
                    for (int bb = 0; bb < dim; ++bb) {
                        T gb = mu;
                        T fb = zero;
                        T ub = zero;
                        if (bb > 0) {
                            fb = mu_[i + bb];
                            const T fj = fb * jar_[i + bb];
                            ub = fj / t;
                            const T mf = -mu * fb;
                            gb = mf * ub;
                        }
                        T hab = ga * gb;
                        if (a > 0 && bb > 0) {
                            const T idn = a == bb ? one : zero;
                            const T c0 = nmt * mu;
                            const T c1 = c0 / t;
                            const T c2 = c1 * fa;
                            const T c3 = c2 * fb;
                            const T uu = ua * ub;
                            const T q = idn - uu;
                            const T c4 = c3 * q;
                            hab = hab - c4;
                        }
                        hab = dm * hab;
                        la_hess_add_pair(nv, j0, rs, i + a, i + bb, hab, h0, hs, spc);
                    }
                }
                i = i + dim;
            }
        }
        if (nb != 0) {
            la_blk_chol_factor(h0, hs, bs, nb, bpat);
            la_blk_chol_solve(h0, hs, bs, nb, bpat, g, p);
        } else {
            la_chol_factor(nv, h0, hs);
            la_chol_solve(nv, h0, hs, g, p);
        }
        }
        if (incr) {
            for (int r = 0; r < nrow; ++r) st_fac[r] = st_[r];
            have_fac = 1;
        }
        for (int j = 0; j < nv; ++j) p[j] = -p[j];
        // ---- exact line search along p: derivative root of the convex 1-D cost
        la_mat_mul(nv, m0, ms, spc, p, mv_);
        T pmp, pg0;
        cs_line_dots(nv, p, mv_, ma_, pmp, pg0);
        la_jac_mul(nrow, nv, j0, rs, spc, p, jv_, 0, jv_);
        const T alpha = ls_search(nrow, ls_iterations, ls_tolerance, pg0, pmp, tp_, dim_, D_, R_, fl_, mu_, jar_, jv_);
        // ---- update: the rows at the new point (jar and ma updated incrementally, as MuJoCo does), Jᵀf,
        // gradient and cost
        cs_step_update(nv, nrow, alpha, p, mv_, jv_, qa, ma_, jar_);
        const T old = cost;
        const T rc = cs_update_rows(nrow, tp_, dim_, D_, R_, fl_, mu_, jar_, F_, st_);
        la_jac_tmul_grad(nrow, nv, 0, j0, rs, m0, ms, spc, F_, qa, qs, qc, ma_, g);
        cost = cs_gauss_cost(nv, qa, qs, ma_, rc);
        niter = niter + 1;
        const T dc = old - cost;
        improvement = scale * dc;
        const T gn = wp::sqrt(cs_sumsq(nv, g));
        gnorm = scale * gn;
        // docs/semantics.md §R8: MuJoCo's rule stops on either test; the default-mode Newton path needs both
        // (a small line-search improvement alone does not prove the gradient is small)
        if (stop_needs_gradient == 1) {
            if ((improvement < tolerance && gnorm < tolerance) || alpha == zero) done = 1;
        } else if (improvement < tolerance || gnorm < tolerance || alpha == zero) {
            done = 1;
        }
    }
    o[0] = improvement;
    o[1] = gnorm;
    o[2] = cost;
    *(int*)((char*)niter_out.data + e * niter_out.strides[0]) = niter;
    };
    if (fixed6 && nv == 6) iterate(PPNv6{});
    else iterate(PPNvAny{nv});
