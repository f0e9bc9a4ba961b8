// Native bodies of kernels/constraint_rows.py (see kernels/native.py for the conventions): the
// per-row loops over one env's dofs.
//
// point_jac_native: efc_J[row] += scale · axis · (velocity of the point p fixed to `link` per dof)
// along the link's dof chain (rot = 1: the angular velocity instead); the row's span efc_span[row]
// grows to cover the chain (dof_parent[d] < d: the chain lies in [its last dof, link_dof_last]).
// row_clear_native: efc_J[row] = 0, then the span empty (nv, 0) and no links recorded (efc_chain -2).
//   A contact row records the two links whose dof chains it was built from (efc_chain[row] = la, lb;
//   -1: world); when the chains' column span [first dof, last dof + 1) is the row's span, only the
//   chains' entries are zeroed (the row's other span entries are zero: a contact between boxes i and
//   j of the pile spans 6|i − j| + 6 columns, its chains 12), else the whole span [lo, hi) (every
//   nonzero of a row lies in it). Another writer of a row (the SAP contact hand-off, a test filling J)
//   sets the span (or efc_chain = -2), which sends the next clear to the whole span.
// row_dot_native: out[row] = efc_J[row]·qvel over the row's span. The span is a superset of the
//   nonzero columns: the skipped terms are exact zeros and the sum starts at +0, so it equals the sum
//   over all nv columns (and the previous scan for the first/last nonzero). With segs = 1 it also records
//   the row's nonzero segments in efc_seg[row] (lo, g0, g1, hi: kernels/linalg.cpp `jseg`, over the span
//   while the row is in cache; the convex solve reads them instead of scanning J), else efc_seg[row][0] = -1
//   (none recorded: the solve scans the row).
// contact_rows_native: make_rows' contact section for one env — per contact its rows' clear, impedance,
//   reference and regularization (the Warp functions of constraint_rows.py, written with Warp's own
//   scalar/vector functions in the same order, so the results are bit for bit those of the Warp loop it
//   replaced: tools/rigid_trajectories.py), the Jacobian rows and J·qvel. A pyramidal contact's
//   2(dim − 1) rows come from one pass over each link's dof chain (each dof's point velocity and its
//   dim axis components computed once) instead of four walks per row, each entry receiving the same
//   additions in the same order (n_a, −n_b, ±μ_k t_a, ∓μ_k t_b; dofs the two chains share get all four).
//   Each such entry is computed from the cleared row's +0 and stored (no load: b's pass skips the dofs a's wrote),
//   so a row that held the same two links last build (its span their chains') is not zeroed first, only its
//   records reset (Round 12). A contact row's R and aref come from its finish and D = 1/R is written once R is
//   final (the cleared state's R = 1, D = 0, aref = 0 are not stored first).
//   J·qvel of a contact row runs over the two chains' columns in ascending order, not the whole span
//   (the span of a contact between links far apart in the tree holds mostly zeros; on the pile of 50
//   boxes nearly all of nv = 300): the skipped entries are exact zeros, so for finite qvel the sum is
//   the span's. With segs = 1 each row's nonzero segments go to efc_seg (as row_dot_native), found in the
//   same pass over the two chains' columns: the first and last nonzero and the longest run of zeros between
//   two nonzero chain columns (the columns outside the chains are exact zeros), the bounds `jseg` finds over
//   the span — an entry of a chain column that is exactly 0.0 counts as a zero in both; a row zeroed after
//   its finish gets the empty row's segments. Writes the row count to n_efc[env] and the overflow flag to
//   overflow[env] (make_rows reads both back); CPU: prefetches the next env's kinematics and first contacts and
//   (pf = 2) the env's own rows and contacts ahead of the contact loop, or (pf = 1, 3) the next env's rows (see there).

// @func point_jac_native
    typedef decltype(+*efc_J.data) T;
    typedef wp::vec_t<3, T> V;
    const size_t e = (size_t)env;
    const V* cw = (const V*)((const char*)cdof_w.data + e * cdof_w.strides[0]);
    const V* cv = (const V*)((const char*)cdof_v.data + e * cdof_v.strides[0]);
    const V* rf = (const V*)((const char*)dof_ref.data + e * dof_ref.strides[0]);
    T* jr = (T*)((char*)efc_J.data + e * efc_J.strides[0] + (size_t)row * efc_J.strides[1]);
    int d = link_dof_last.data[link];
    if (d < 0) return;
    int* sp = (int*)((char*)efc_span.data + e * efc_span.strides[0] + (size_t)row * efc_span.strides[1]);
    if (d + 1 > sp[1]) sp[1] = d + 1;
    int first = d;
    while (d >= 0) {
        first = d;
        const V w = cw[d];
        T val;
        if (rot == 1) {
            val = wp::dot(axis, w);
        } else {
            val = wp::dot(axis, wp::add(cv[d], wp::cross(w, wp::sub(p, rf[d]))));
        }
        const T sv = scale * val;
        jr[d] = jr[d] + sv;
        d = dof_parent.data[d];
    }
    if (first < sp[0]) sp[0] = first;     // the chain's columns: [first, link_dof_last]

// @part clear
    // A row's J cleared for the next build, its span emptied and its links forgotten. With the row's two
    // links recorded (ch[0] >= -1) only their dof chains are zeroed, provided the chains' column span is
    // the row's span (then no other writer touched the row: see contact_rows_native); else the whole span.
    auto clear_row_at = [](T* jr, int* sp, int* ch, size_t s2, size_t c2, int nv, const int* dlast,
                           const int* par) {
        const int lo = sp[0] < 0 ? 0 : sp[0];
        const int hi = sp[s2] > nv ? nv : sp[s2];
        bool whole = true;
        if (ch[0] >= -1 && hi > lo) {
            int clo = nv, chi = 0;
            for (int k = 0; k < 2; ++k) {
                const int l = ch[k * c2];
                int d = l >= 0 ? dlast[l] : -1;
                if (d >= 0 && d + 1 > chi) chi = d + 1;
                for (; d >= 0; d = par[d]) {
                    jr[d] = T(0);
                    if (d < clo) clo = d;
                }
            }
            whole = !(clo == lo && chi == hi);
        }
        if (whole)
            for (int j = lo; j < hi; ++j) jr[j] = T(0);
        sp[0] = nv;
        sp[s2] = 0;
        ch[0] = -2;
        ch[c2] = -2;
    };

// @func row_clear_native
    typedef decltype(+*efc_J.data) T;
// @use constraint_rows.clear
    T* jr = (T*)((char*)efc_J.data + (size_t)env * efc_J.strides[0] + (size_t)row * efc_J.strides[1]);
    int* sp = (int*)((char*)efc_span.data + (size_t)env * efc_span.strides[0] + (size_t)row * efc_span.strides[1]);
    int* ch = (int*)((char*)efc_chain.data + (size_t)env * efc_chain.strides[0] + (size_t)row * efc_chain.strides[1]);
    clear_row_at(jr, sp, ch, (size_t)efc_span.strides[2] / sizeof(int), (size_t)efc_chain.strides[2] / sizeof(int), nv,
                 link_dof_last.data, dof_parent.data);

// @func row_dot_native
    typedef decltype(+*efc_J.data) T;
// @use linalg.jseg
    const T* jr = (const T*)((const char*)efc_J.data + (size_t)env * efc_J.strides[0] + (size_t)row * efc_J.strides[1]);
    const int* sp = (const int*)((const char*)efc_span.data + (size_t)env * efc_span.strides[0]
                                 + (size_t)row * efc_span.strides[1]);
    const T* q = (const T*)((const char*)qvel.data + (size_t)env * qvel.strides[0]);
    const int lo = sp[0] < 0 ? 0 : sp[0];
    const int hi = sp[1] > nv ? nv : sp[1];
    T s = T(0);
    for (int j = lo; j < hi; ++j) {
        const T p = jr[j] * q[j];
        s = s + p;
    }
    *(T*)((char*)out.data + (size_t)env * out.strides[0] + (size_t)row * out.strides[1]) = s;
    int* sg = (int*)((char*)efc_seg.data + (size_t)env * efc_seg.strides[0] + (size_t)row * efc_seg.strides[1]);
    const size_t g3 = (size_t)efc_seg.strides[2] / sizeof(int);
    if (segs != 0) {
        int s4[4];
        la_jseg(jr, sp[0], sp[1], nv, s4);
        for (int i = 0; i < 4; ++i) sg[i * g3] = s4[i];
    } else {
        sg[0] = -1;
    }

// @func contact_rows_native
    typedef decltype(+*efc_J.data) T;
    typedef wp::vec_t<3, T> V;
    typedef wp::mat_t<3, 3, T> M3;
// @use constraint_rows.clear
// @use linalg.jseg
    const size_t e = (size_t)env;
    // prefetch bit 16 (A/B only, Round 17b): a condim-3 pyramidal contact's three axis values per dof by the general loop
    // over the axes (as before) instead of three dot products in registers; bit 32: rows_prefetch_native's A/B switch
    const bool pyr3 = (pf & 16) == 0;
    pf = pf & 15;
    // this env's rows of every array as plain pointers with element strides (locals: no reloads of the
    // array descriptors after each store)
#define PP_BASE(a, TY) ((TY*)((char*)(a).data + e * (a).strides[0]))
#define PP_ST(a, TY) ((size_t)(a).strides[1] / sizeof(TY))
    const V* const cw = PP_BASE(cdof_w, const V);
    const V* const cv = PP_BASE(cdof_v, const V);
    const V* const rf = PP_BASE(dof_ref, const V);
    const T* const qv = PP_BASE(qvel, const T);
    const int* const par = dof_parent.data;
    const int* const dlast = link_dof_last.data;
    const char* const liw = (const char*)link_invweight.data;
    const size_t liw0 = (size_t)link_invweight.strides[0], liw1 = (size_t)link_invweight.strides[1];
    const int* const c_dim = PP_BASE(con_dim, const int);
    const size_t c_dim_s = PP_ST(con_dim, int);
    const char* const c_link = (const char*)con_link.data + e * con_link.strides[0];
    const size_t c_link_s1 = (size_t)con_link.strides[1], c_link_s2 = (size_t)con_link.strides[2];
    const V* const c_pos = PP_BASE(con_pos, const V);
    const size_t c_pos_s = PP_ST(con_pos, V);
    const M3* const c_frame = PP_BASE(con_frame, const M3);
    const size_t c_frame_s = PP_ST(con_frame, M3);
    const T* const c_dist = PP_BASE(con_dist, const T);
    const size_t c_dist_s = PP_ST(con_dist, T);
    const T* const c_marg = PP_BASE(con_margin, const T);
    const size_t c_marg_s = PP_ST(con_margin, T);
    const char* const c_fric = (const char*)con_friction.data + e * con_friction.strides[0];
    const size_t c_fric_s1 = (size_t)con_friction.strides[1], fs = (size_t)con_friction.strides[2] / sizeof(T);
    const char* const c_sol = (const char*)con_sol.data + e * con_sol.strides[0];
    const size_t c_sol_s1 = (size_t)con_sol.strides[1], ss = (size_t)con_sol.strides[2] / sizeof(T);
    const char* const c_srf = (const char*)con_solreffriction.data + e * con_solreffriction.strides[0];
    const size_t c_srf_s1 = (size_t)con_solreffriction.strides[1], srs = (size_t)con_solreffriction.strides[2] / sizeof(T);
    int* const c_adr = PP_BASE(con_efc_adr, int);
    const size_t c_adr_s = PP_ST(con_efc_adr, int);
    char* const Jb = (char*)efc_J.data + e * efc_J.strides[0];
    const size_t Js = (size_t)efc_J.strides[1];
    char* const Sb = (char*)efc_span.data + e * efc_span.strides[0];
    const size_t Ss = (size_t)efc_span.strides[1], Ss2 = (size_t)efc_span.strides[2] / sizeof(int);
    char* const Gb = (char*)efc_seg.data + e * efc_seg.strides[0];
    const size_t Gs = (size_t)efc_seg.strides[1], Gs2 = (size_t)efc_seg.strides[2] / sizeof(int);
    char* const Cb = (char*)efc_chain.data + e * efc_chain.strides[0];
    const size_t Cs = (size_t)efc_chain.strides[1], Cs2 = (size_t)efc_chain.strides[2] / sizeof(int);
    int* const o_type = PP_BASE(efc_type, int);
    int* const o_id = PP_BASE(efc_id, int);
    int* const o_dim = PP_BASE(efc_dim, int);
    T* const o_pos = PP_BASE(efc_pos, T);
    T* const o_margin = PP_BASE(efc_margin, T);
    T* const o_vel = PP_BASE(efc_vel, T);
    T* const o_aref = PP_BASE(efc_aref, T);
    T* const o_R = PP_BASE(efc_R, T);
    T* const o_D = PP_BASE(efc_D, T);
    T* const o_imp = PP_BASE(efc_imp, T);
    T* const o_floss = PP_BASE(efc_floss, T);
    T* const o_mu = PP_BASE(efc_mu, T);
    const size_t it = PP_ST(efc_type, int), ii = PP_ST(efc_id, int), idm = PP_ST(efc_dim, int);
    const size_t tp_ = PP_ST(efc_pos, T), tm = PP_ST(efc_margin, T), tv = PP_ST(efc_vel, T), ta = PP_ST(efc_aref, T);
    const size_t tR = PP_ST(efc_R, T), tD = PP_ST(efc_D, T), ti = PP_ST(efc_imp, T), tf = PP_ST(efc_floss, T);
    const size_t tmu = PP_ST(efc_mu, T);
#undef PP_BASE
#undef PP_ST
    const T zero = wp::mul(impratio, T(0.0));
    const T one = wp::add(zero, T(1.0));
    const T tiny = T(1.0e-15);
    auto clamp_imp = [](T x) { return wp::min(T(0.9999), wp::max(T(0.0001), x)); };
    auto mixed = [](T tc, T dr) { return (tc > T(0.0) && dr <= T(0.0)) || (tc <= T(0.0) && dr > T(0.0)); };
    auto legal_tc = [=](T tc, T dr) {
        T t = tc;
        if (mixed(tc, dr)) t = T(0.02);
        if (t > T(0.0)) t = wp::max(t, tc_floor);
        return t;
    };
    auto legal_dr = [=](T tc, T dr) { return mixed(tc, dr) ? T(1.0) : dr; };
    auto stiffness = [=](T tc, T dr, T dmax) {
        if (tc > T(0.0)) return wp::div(T(1.0), wp::max(tiny, wp::mul(wp::mul(wp::mul(wp::mul(wp::mul(dmax, dmax), tc), tc), dr), dr)));
        return wp::div(wp::neg(tc), wp::max(tiny, wp::mul(dmax, dmax)));
    };
    auto damping = [=](T tc, T dr, T dmax) {
        if (dr > T(0.0)) return wp::div(T(2.0), wp::max(tiny, wp::mul(dmax, tc)));
        return wp::div(wp::neg(dr), wp::max(tiny, dmax));
    };
    // a contact's nonzero columns: the union of its two links' dof chains, ascending (up to PP_CHAIN
    // columns; a longer union falls back to the span); ncols = -1: not a contact's row / fallback
    enum { PP_CHAIN = 128 };
    int cols[PP_CHAIN];
    int ncols = -1;
    auto jrow = [=](int r) { return (T*)(Jb + (size_t)r * Js); };
    auto span = [=](int r) { return (int*)(Sb + (size_t)r * Ss); };
    auto chain = [=](int r) { return (int*)(Cb + (size_t)r * Cs); };
    auto seg = [=](int r) { return (int*)(Gb + (size_t)r * Gs); };
    // the row's segments recorded (segs = 1) from s4 = lo, g0, g1, hi; else none (-1: the solve scans)
    auto seg_put = [=](int r, const int* s4) {
        int* g = seg(r);
        if (segs != 0) for (int i = 0; i < 4; ++i) g[i * Gs2] = s4[i];
        else g[0] = -1;
    };
    // a row's segments by `jseg` over its span (a row zeroed by clear_row: span (nv, 0), J not read)
    auto seg_scan = [=](int r) {
        int s4[4];
        const int* sp = span(r);
        la_jseg(jrow(r), sp[0], sp[Ss2], nv, s4);
        seg_put(r, s4);
    };
    auto clear_row = [=](int r) { clear_row_at(jrow(r), span(r), chain(r), Ss2, Cs2, nv, dlast, par); };
    // one walk (elliptic / frictionless rows): J[r] += scale · axis · (velocity of p fixed to `link` per
    // dof) (rot: angular velocity), the row's span grown by the chain's columns
    auto walk = [=](int link, const V& p, const V& axis, int rot, T scale, int r) {
        if (link < 0) return;
        int d = dlast[link];
        if (d < 0) return;
        T* jr = jrow(r);
        int* sp = span(r);
        if (d + 1 > sp[Ss2]) sp[Ss2] = d + 1;
        int first = d;
        while (d >= 0) {
            first = d;
            const V w = cw[d];
            T val;
            if (rot == 1) val = wp::dot(axis, w);
            else val = wp::dot(axis, wp::add(cv[d], wp::cross(w, wp::sub(p, rf[d]))));
            const T sv = wp::mul(scale, val);
            jr[d] = wp::add(jr[d], sv);
            d = par[d];
        }
        if (first < sp[0]) sp[0] = first;
    };
    // the row's J·qvel (over its span: the columns outside hold exact zeros), type, id, pos, margin,
    // vel, imp, aref = −B·vel − K·imp·(pos − margin), R = max(1e-15, (1 − imp)·diag/imp)
    auto finish = [&](int r, T pos, T margin, T imp, T k, T b, T diag, int tp, int ident) {
        const T* jr = jrow(r);
        const int* sp = span(r);
        const int lo = sp[0] < 0 ? 0 : sp[0];
        const int hi = sp[Ss2] > nv ? nv : sp[Ss2];
        T s = T(0);
        if (ncols >= 0) {
            // the chains' columns only: the span's other entries are exact zeros, and adding the
            // (signed) zero products to the sum (+0 at the start, never −0) leaves it unchanged; the
            // segments from the same columns: first / last nonzero, the longest run of zeros between two
            // nonzero chain columns (the first of equal ones, as `jseg`)
            int f = -1, l = -1, best = 0, g0 = 0, g1 = 0;
            for (int i = 0; i < ncols; ++i) {
                const int j = cols[i];
                const T x = jr[j];
                s = wp::add(s, wp::mul(x, qv[j]));
                if (!(x == T(0))) {
                    if (f < 0) f = j;
                    else if (j - l - 1 > best) { best = j - l - 1; g0 = l + 1; g1 = j; }
                    l = j;
                }
            }
            int s4[4];
            if (f < 0) {
                const int h = hi < lo ? lo : hi;         // an all-zero row: lo = g0 = g1 = hi (as `jseg`)
                s4[0] = h; s4[1] = h; s4[2] = h; s4[3] = h;
            } else {
                s4[0] = f; s4[3] = l + 1;
                s4[1] = best > 0 ? g0 : l + 1;
                s4[2] = best > 0 ? g1 : l + 1;
            }
            seg_put(r, s4);
        } else {
            for (int j = lo; j < hi; ++j) s = wp::add(s, wp::mul(jr[j], qv[j]));
            seg_scan(r);
        }
        o_type[r * it] = tp;
        o_id[r * ii] = ident;
        o_pos[r * tp_] = pos;
        o_margin[r * tm] = margin;
        o_vel[r * tv] = s;
        o_imp[r * ti] = imp;
        o_aref[r * ta] = wp::sub(wp::mul(wp::neg(b), s), wp::mul(wp::mul(k, imp), wp::sub(pos, margin)));
        o_R[r * tR] = wp::max(tiny, wp::div(wp::mul(wp::sub(T(1.0), imp), diag), imp));
    };
#if !defined(__CUDA_ARCH__)
    // CPU: the envs of a launch run one after another, and at 1024 envs each env's rows are out of cache
    // when its turn comes; ask for the next env's first PP_PREFETCH_ROWS rows (its per-row outputs and
    // the J entries at the two ends of the spans its last build left, which the clears and walks write),
    // its kinematics and its first contacts now. Measured
    // (docs/constraint.md, Round 8): −1.5 to −3 µs per env-step on 8 boxes. PP_PREFETCH_ROWS was 128 until
    // Round 14c: the pile of 50 boxes has 932 rows, and with the next env's rows all prefetched into L2 (≈ 400 B a
    // row: 12 per-row outputs, 3 records, 4 J lines; 1024 rows ≈ 0.4 MB of the 2 MB L2) the rows stage dropped from
    // ≈ 195 to ≈ 161 µs per env (median, caches flushed before each launch) and the whole captured step 4-6 % at 64
    // envs (benchmarks/results/constraint.md, Round 14c). Scenes with ≤ 128 rows (8 boxes, the humanoid) are unchanged.
    // pf = 1 (Round 10): prefetchw / prefetcht0, i.e. into L1; pf = 2 (the default, Round 11): also the
    // next env's span / links / segment records and contact row addresses, all as prefetcht1 (into L2 only: L1 is
    // 48 KiB and the next env's lines pushed this env's out of it; a read prefetch of a line no other core holds
    // comes exclusive, so the later store needs no second request). Measured, in-process: pf 2 vs 1 −10 to −14 %
    // of make_rows on 8 boxes and the humanoid (docs/constraint.md, benchmarks/results/constraint.md Round 11).
    // Since Round 16 that mode is pf = 3 (kept for A/Bs) and pf = 2 leaves out the next env's rows for a lookahead
    // in the env (below). (The L2 of this machine's cores is 512 KB, its L1 32 KB.)
    auto pfw = [=](const char* a) {
        if (pf >= 2) __builtin_prefetch(a, 0, 2);
        else __builtin_prefetch(a, 1, 3);
    };
    auto pfr = [=](const char* a) {
        if (pf >= 2) __builtin_prefetch(a, 0, 2);
        else __builtin_prefetch(a, 0, 3);
    };
    if (pf > 0 && env + 1 < efc_J.shape[0]) {
        enum { PP_PREFETCH_ROWS = 1024 };
        const size_t e1 = (size_t)env + 1;
        // the next env's rows: pf_doff rows on from its own block as seen from here (the row pool: this env's previous
        // count − max_rows, where its rows will start if this env's count holds; 0 without the pool)
        const long long dn = (long long)pf_doff;
        int nr = *(const int*)((const char*)n_efc.data + e1 * n_efc.strides[0]);
        if (nr > max_rows) nr = max_rows;
        // pf = 1: Round 10's L1 prefetch of 128 rows as it was; pf = 3: Round 14c's 1024 rows (both kept for A/Bs);
        // pf = 2: none of the next env's rows (this env's own rows come by the lookahead below)
        const int cap = pf == 1 ? 128 : pf == 2 ? 0 : (int)PP_PREFETCH_ROWS;
        if (nr > cap) nr = cap;
        const size_t tb = (size_t)nr * sizeof(T);
        // (PP_NX: the next env's row 0 of a row array)
#define PP_NX(a) ((const char*)(a).data + (long long)e1 * (a).strides[0] + dn * (a).strides[1])
        const char* outs[12] = {
            PP_NX(efc_pos), PP_NX(efc_margin), PP_NX(efc_vel), PP_NX(efc_aref),
            PP_NX(efc_R), PP_NX(efc_D), PP_NX(efc_imp), PP_NX(efc_floss),
            PP_NX(efc_mu), PP_NX(efc_type), PP_NX(efc_id), PP_NX(efc_dim)};
        for (int a = 0; a < 12; ++a)
            for (size_t l = 0; l < tb; l += 64) pfw(outs[a] + l);
        if (pf >= 2) {
            // the per-row records the clears read (links) and the finish writes (segments), and the
            // contacts' first-row addresses
            const char* recs[3] = {PP_NX(efc_span),
                                   PP_NX(efc_chain),
                                   PP_NX(efc_seg)};
            const size_t rb[3] = {(size_t)nr * efc_span.strides[1], (size_t)nr * efc_chain.strides[1],
                                  (size_t)nr * efc_seg.strides[1]};
            for (int a = 0; a < 3; ++a)
                for (size_t l = 0; l < rb[a]; l += 64) pfw(recs[a] + l);
            const char* ab = (const char*)con_efc_adr.data + e1 * con_efc_adr.strides[0];
            const int nc = n_con < 32 ? n_con : 32;
            for (size_t l = 0; l < (size_t)nc * con_efc_adr.strides[1]; l += 64) pfw(ab + l);
        }
        // the next env's kinematics the chain walks read (dof motion subspaces, reference points, qvel) and
        // its first contacts (as many slots as this env has, at most 32): Round 10 (row segments), −2 to −14 %
        // of make_rows on the humanoid, the boxes and the pile
        {
            const size_t vb = (size_t)nv * sizeof(V);
            const char* kin[3] = {(const char*)cdof_w.data + e1 * cdof_w.strides[0],
                                  (const char*)cdof_v.data + e1 * cdof_v.strides[0],
                                  (const char*)dof_ref.data + e1 * dof_ref.strides[0]};
            for (int a = 0; a < 3; ++a)
                for (size_t l = 0; l < vb; l += 64) pfr(kin[a] + l);
            const char* qb = (const char*)qvel.data + e1 * qvel.strides[0];
            for (size_t l = 0; l < (size_t)nv * sizeof(T); l += 64) pfr(qb + l);
            const int nc = n_con < 32 ? n_con : 32;
            const char* cb[9] = {
                (const char*)con_pos.data + e1 * con_pos.strides[0], (const char*)con_frame.data + e1 * con_frame.strides[0],
                (const char*)con_dist.data + e1 * con_dist.strides[0], (const char*)con_margin.data + e1 * con_margin.strides[0],
                (const char*)con_link.data + e1 * con_link.strides[0], (const char*)con_dim.data + e1 * con_dim.strides[0],
                (const char*)con_friction.data + e1 * con_friction.strides[0],
                (const char*)con_sol.data + e1 * con_sol.strides[0],
                (const char*)con_solreffriction.data + e1 * con_solreffriction.strides[0]};
            const size_t cs[9] = {(size_t)con_pos.strides[1], (size_t)con_frame.strides[1], (size_t)con_dist.strides[1],
                                  (size_t)con_margin.strides[1], (size_t)con_link.strides[1], (size_t)con_dim.strides[1],
                                  (size_t)con_friction.strides[1], (size_t)con_sol.strides[1],
                                  (size_t)con_solreffriction.strides[1]};
            for (int a = 0; a < 9; ++a)
                for (size_t l = 0; l < (size_t)nc * cs[a]; l += 64) pfr(cb[a] + l);
        }
        const char* sb = PP_NX(efc_span);
        const char* jb = PP_NX(efc_J);
#undef PP_NX
        for (int r = 0; r < nr; ++r) {
            const int* sp = (const int*)(sb + (size_t)r * efc_span.strides[1]);
            const int lo = sp[0] < 0 ? 0 : sp[0];
            const int hi = sp[Ss2] > nv ? nv : sp[Ss2];
            if (hi <= lo) continue;
            // the span's first and last 8 entries: a contact row's two chains (free bodies: 6 dofs each)
            const char* jr = jb + (size_t)r * efc_J.strides[1];
            pfw(jr + (size_t)lo * sizeof(T));
            pfw(jr + (size_t)(lo + 7 < hi ? lo + 7 : hi - 1) * sizeof(T));
            pfw(jr + (size_t)(hi - 8 > lo ? hi - 8 : lo) * sizeof(T));
            pfw(jr + (size_t)(hi - 1) * sizeof(T));
        }
    }
    // pf = 2 (the default since Round 16): a lookahead in this env instead of the next env's rows. Ahead of the
    // contact loop, this env's rows PP_AHEAD rows on (their per-row outputs and records PP_AHEAD + 16 rows on, in
    // chunks of 8 rows, then the J lines at the two ends of each row's last span, read from those records) and its
    // contacts 8 on, all as pfw. The next env's 932 rows of the pile (≈ 400 KB) prefetched at once into the 512 KB L2
    // of this machine's cores evicted this env's rows before their use; the lookahead keeps only ≈ 50 rows in flight.
    // Measured in the step, in process (benchmarks/probe_pile_rows.py, benchmarks/results/constraint.md Round 16):
    // the rows stage −23 to −31 % (medians) on the pile at 64 envs, −12 to −14 % at 1 env, −12 to −19 % on 8 boxes,
    // −11 to −18 % on the humanoid.
    enum { PP_AHEAD = 32 };
    const bool ahead = pf == 2;
    const char* la_out[15];
    size_t la_osz[15];
    const char* la_con[10];
    size_t la_csz[10];
    int la_nr = 0, la_rec = 0, la_j = 0, la_c = 0;
    if (ahead) {
        const char* o[15] = {
            (const char*)o_pos, (const char*)o_margin, (const char*)o_vel, (const char*)o_aref, (const char*)o_R,
            (const char*)o_D, (const char*)o_imp, (const char*)o_floss, (const char*)o_mu, (const char*)o_type,
            (const char*)o_id, (const char*)o_dim, Sb, Cb, Gb};
        const size_t os[15] = {tp_ * sizeof(T), tm * sizeof(T), tv * sizeof(T), ta * sizeof(T), tR * sizeof(T),
                               tD * sizeof(T), ti * sizeof(T), tf * sizeof(T), tmu * sizeof(T), it * sizeof(int),
                               ii * sizeof(int), idm * sizeof(int), Ss, Cs, Gs};
        for (int k = 0; k < 15; ++k) { la_out[k] = o[k]; la_osz[k] = os[k]; }
        const char* cb[10] = {(const char*)c_pos, (const char*)c_frame, (const char*)c_dist, (const char*)c_marg, c_link,
                              (const char*)c_dim, c_fric, c_sol, c_srf, (const char*)c_adr};
        const size_t cs[10] = {c_pos_s * sizeof(V), c_frame_s * sizeof(M3), c_dist_s * sizeof(T), c_marg_s * sizeof(T),
                               c_link_s1, c_dim_s * sizeof(int), c_fric_s1, c_sol_s1, c_srf_s1, c_adr_s * sizeof(int)};
        for (int k = 0; k < 10; ++k) { la_con[k] = cb[k]; la_csz[k] = cs[k]; }
        la_nr = *(const int*)((const char*)n_efc.data + e * n_efc.strides[0]);      // the last build's rows
        if (la_nr > max_rows) la_nr = max_rows;
        la_rec = row - row % 8;
        la_j = row;
    }
    // the lines of [a, a + nb)
    auto pf_lines = [&](const char* a, size_t nb) {
        for (const char* p = (const char*)((size_t)a & ~(size_t)63); p < a + nb; p += 64) pfw(p);
    };
    auto look_ahead = [&](int r_at, int c_at) {
        int rt = r_at + PP_AHEAD + 16;
        if (rt > la_nr) rt = la_nr;
        for (; la_rec < rt; la_rec += 8) {
            const int r1 = la_rec + 8 < la_nr ? la_rec + 8 : la_nr;
            for (int k = 0; k < 15; ++k)
                pf_lines(la_out[k] + (size_t)la_rec * la_osz[k], (size_t)(r1 - la_rec) * la_osz[k]);
        }
        int jt = r_at + PP_AHEAD;
        if (jt > rt) jt = rt;
        for (; la_j < jt; ++la_j) {
            const int* sp = span(la_j);
            const int lo = sp[0] < 0 ? 0 : sp[0];
            const int hi = sp[Ss2] > nv ? nv : sp[Ss2];
            if (hi <= lo) continue;
            const char* jr = (const char*)jrow(la_j);
            pfw(jr + (size_t)lo * sizeof(T));
            pfw(jr + (size_t)(lo + 7 < hi ? lo + 7 : hi - 1) * sizeof(T));
            pfw(jr + (size_t)(hi - 8 > lo ? hi - 8 : lo) * sizeof(T));
            pfw(jr + (size_t)(hi - 1) * sizeof(T));
        }
        const int ct = c_at + 8 < n_con ? c_at + 8 : n_con;
        for (; la_c < ct; la_c += 4) {
            const int c1 = la_c + 4 < n_con ? la_c + 4 : n_con;
            for (int k = 0; k < 10; ++k) pf_lines(la_con[k] + (size_t)la_c * la_csz[k], (size_t)(c1 - la_c) * la_csz[k]);
        }
    };
#endif
    auto chain_cols = [&](int la, int lb) {
        int da = la >= 0 ? dlast[la] : -1;
        int db = lb >= 0 ? dlast[lb] : -1;
        int n = 0;
        // both chains run root-ward (descending); merge them from the root end: collect descending, then reverse
        int tmp[PP_CHAIN];
        while (da >= 0 || db >= 0) {
            if (n == PP_CHAIN) return -1;
            int d;
            if (da == db) {
                d = da;
                da = par[da];
                db = par[db];
            } else if (da > db) {
                d = da;
                da = par[da];
            } else {
                d = db;
                db = par[db];
            }
            tmp[n++] = d;
        }
        for (int i = 0; i < n; ++i) cols[i] = tmp[n - 1 - i];
        return n;
    };
    int over = 0;
    // the last contact's solver parameters (solref ⊕ solimp) and the values that depend on them alone
    T ps[7];
    bool have_sol = false, have_lo = false, have_hi = false;
    T q_tc = zero, q_dr = zero, q_dmax = zero, q_dmin = zero, q_width = zero, q_mid = zero, q_power = zero, q_k = zero,
      q_b = zero, q_alo = zero, q_ahi = zero;
    // `impedance` with the coefficient 1/pow(mid, power − 1) (or 1/pow(1 − mid, power − 1)) of the current parameters
    // computed once per parameter set (the same operations on the same values as the Warp function `impedance`)
    auto impedance_q = [&](T dmin, T dmax, T width, T mid, T power, T pos, T margin) {
        const T o = T(1.0);
        if (dmin == dmax || width <= tiny) return wp::mul(T(0.5), wp::add(dmin, dmax));
        const T x = wp::abs(wp::div(wp::sub(pos, margin), width));
        if (x >= o) return dmax;
        if (x <= T(0.0)) return dmin;
        T y = x;
        if (power == o) {
            y = x;
        } else if (x <= mid) {
            if (!have_lo) {
                q_alo = wp::div(o, wp::pow(mid, wp::sub(power, o)));
                have_lo = true;
            }
            y = wp::mul(q_alo, wp::pow(x, power));
        } else {
            if (!have_hi) {
                q_ahi = wp::div(o, wp::pow(wp::sub(o, mid), wp::sub(power, o)));
                have_hi = true;
            }
            y = wp::sub(o, wp::mul(q_ahi, wp::pow(wp::sub(o, x), power)));
        }
        return wp::add(dmin, wp::mul(y, wp::sub(dmax, dmin)));
    };
    for (int c = 0; c < n_con; ++c) {
#if !defined(__CUDA_ARCH__)
        if (ahead) look_ahead(row, c);
#endif
        const int dim = c_dim[c * c_dim_s];
        int nrow = dim;
        if (dim > 1 && cone == CONE_PYRAMIDAL) nrow = 2 * (dim - 1);
        c_adr[c * c_adr_s] = -1;
        if (row + nrow > max_rows) {
            over = 1;
            continue;
        }
        c_adr[c * c_adr_s] = row;
        const int la = *(const int*)(c_link + (size_t)c * c_link_s1);
        const int lb = *(const int*)(c_link + (size_t)c * c_link_s1 + c_link_s2);
        ncols = chain_cols(la, lb);
        // a pyramidal contact's rows are written by the one pass below, which stores every entry of the two chains:
        // a row that held the same two links (and whose span is their chains') needs no zeroing, only its records
        // reset (the entries outside the chains are zero: see clear_row)
        const bool pass_rows = !(cone == CONE_ELLIPTIC || dim == 1) && ncols > 0;
        const int clo = ncols > 0 ? cols[0] : 0, chi = ncols > 0 ? cols[ncols - 1] + 1 : 0;
        // rows clr .. row+nrow-1 to their cleared state (J 0, the rest 0) where the contact's rows do not write them:
        // R, aref (finish) and D (below, once R is final) are always written
        for (int i = clr; i < row + nrow; ++i) {
            int* sp0 = span(i);
            int* ch0 = chain(i);
            if (pass_rows && ch0[0] == la && ch0[Cs2] == lb && sp0[0] == clo && sp0[Ss2] == chi) {
                sp0[0] = nv;
                sp0[Ss2] = 0;
                ch0[0] = -2;
                ch0[Cs2] = -2;
            } else {
                clear_row(i);
            }
            o_floss[i * tf] = zero;
            o_mu[i * tmu] = zero;
            o_dim[i * idm] = 0;
        }
        if (row + nrow > clr) clr = row + nrow;
        const V p_cur = c_pos[c * c_pos_s];
        const M3 fr = c_frame[c * c_frame_s];
        const T dist = c_dist[c * c_dist_s];
        const T marg = c_marg[c * c_marg_s];
        const T* sol = (const T*)(c_sol + (size_t)c * c_sol_s1);
        const T* fric = (const T*)(c_fric + (size_t)c * c_fric_s1);
        // what follows from the 7 parameters alone is reused from the previous contact when they are the same bits (all the
        // contacts of a geom pair, usually of the scene): the same functions of the same values, so the same numbers
        bool same = have_sol;
        for (int i = 0; i < 7 && same; ++i) {
            const T si = sol[(size_t)i * ss];
            // bit for bit (±0, NaN), as 32-bit words through a union (no memcmp builtin under NVRTC, CUDA)
            union { T t; unsigned int w[sizeof(T) / 4]; } x, y;
            x.t = si;
            y.t = ps[i];
            for (int k = 0; k < (int)(sizeof(T) / 4); ++k) same = same && x.w[k] == y.w[k];
        }
        if (!same) {
            for (int i = 0; i < 7; ++i) ps[i] = sol[(size_t)i * ss];
            have_sol = true;
            q_tc = legal_tc(ps[0], ps[1]);
            q_dr = legal_dr(ps[0], ps[1]);
            q_dmax = clamp_imp(ps[3]);
            q_dmin = clamp_imp(ps[2]);
            q_width = wp::max(zero, ps[4]);
            q_mid = clamp_imp(ps[5]);
            q_power = wp::max(one, ps[6]);
            q_k = stiffness(q_tc, q_dr, q_dmax);
            q_b = damping(q_tc, q_dr, q_dmax);
            have_lo = false;
            have_hi = false;
        }
        const T tc = q_tc;
        const T dr = q_dr;
        const T dmax = q_dmax;
        const T imp = impedance_q(q_dmin, dmax, q_width, q_mid, q_power, dist, marg);
        const T k = q_k;
        const T b = q_b;
        T tran = zero;
        T rot = zero;
        if (la >= 0) {
            tran = wp::add(tran, *(const T*)(liw + (size_t)la * liw0));
            rot = wp::add(rot, *(const T*)(liw + (size_t)la * liw0 + liw1));
        }
        if (lb >= 0) {
            tran = wp::add(tran, *(const T*)(liw + (size_t)lb * liw0));
            rot = wp::add(rot, *(const T*)(liw + (size_t)lb * liw0 + liw1));
        }
        if (cone == CONE_ELLIPTIC || dim == 1) {
            for (int j = 0; j < dim; ++j) {
                const V ax(fr.data[j % 3][0], fr.data[j % 3][1], fr.data[j % 3][2]);
                const int r = j >= 3 ? 1 : 0;
                walk(la, p_cur, ax, r, one, row + j);
                walk(lb, p_cur, ax, r, wp::neg(one), row + j);
            }
            if (dim == 1) {
                finish(row, dist, marg, imp, k, b, tran, EFC_CONTACT_FRICTIONLESS, c);
            } else {
                finish(row, dist, marg, imp, k, b, tran, EFC_CONTACT_ELLIPTIC, c);
                const T rn = o_R[row * tR];
                const T rt = wp::div(rn, wp::max(tiny, impratio));
                const T f0 = fric[0];
                o_mu[row * tmu] = wp::mul(f0, wp::sqrt(wp::div(rt, rn)));
                o_dim[row * idm] = dim;
                // friction rows: the damping of the pair's solreffriction when given (MuJoCo), else solref's
                T bf = b;
                const T* srf = (const T*)(c_srf + (size_t)c * c_srf_s1);
                const T srf0 = srf[0];
                const T srf1 = srf[srs];
                if (srf0 != zero || srf1 != zero) bf = damping(legal_tc(srf0, srf1), legal_dr(srf0, srf1), dmax);
                for (int j = 1; j < dim; ++j) {
                    const T dg = j >= 3 ? rot : tran;
                    finish(row + j, zero, zero, imp, zero, bf, dg, EFC_CONTACT_ELLIPTIC, c);
                    const T fj = fric[(size_t)(j - 1) * fs];
                    o_mu[(row + j) * tmu] = fj;
                    if (fj > zero) {
                        o_R[(row + j) * tR] = wp::div(wp::mul(wp::mul(rt, f0), f0), wp::mul(fj, fj));
                    } else {
                        // zero coefficient: the row is zeroed (no force, finite R)
                        o_R[(row + j) * tR] = rt;
                        clear_row(row + j);
                        seg_scan(row + j);
                        o_vel[(row + j) * tv] = zero;
                        o_aref[(row + j) * ta] = zero;
                    }
                }
            }
        } else {
            const T f0 = fric[0];
            const T mu2 = wp::div(wp::mul(f0, f0), wp::max(tiny, impratio));
            // the 2(dim-1) rows (n + μ_k t_k, n − μ_k t_k) in one pass per link: per entry the same
            // additions in the same order as one walk per term (n_a, −n_b, μ_k t_a, −μ_k t_b)
            {
                T* jr[10];
                int* sp[10];
                T sa[10];            // the tangent scale of a's walk per row (sg·f_k), b's is its negative ((−sg)·f_k)
                for (int r = 0; r < nrow; ++r) {
                    jr[r] = jrow(row + r);
                    sp[r] = span(row + r);
                    const T fk = fric[(size_t)(r / 2) * fs];
                    sa[r] = (r % 2 == 0) ? fk : wp::neg(fk);
                }
                V ax[6];
                int isrot[6];
                for (int kk = 0; kk < 6; ++kk) {
                    ax[kk] = V(fr.data[kk % 3][0], fr.data[kk % 3][1], fr.data[kk % 3][2]);
                    isrot[kk] = kk >= 3 ? 1 : 0;
                }
                const int last_a = la >= 0 ? link_dof_last.data[la] : -1;
                const int last_b = lb >= 0 ? link_dof_last.data[lb] : -1;
                // the first dof the two chains share (chains run root-ward with dof_parent[d] < d): -1 if none
                int ca = last_a, cb = last_b;
                while (ca >= 0 && cb >= 0 && ca != cb) {
                    if (ca > cb) ca = par[ca]; else cb = par[cb];
                }
                const int common = (ca >= 0 && cb >= 0) ? ca : -1;
                // one dof's values: the normal (k = 0) and the axes of rows k = 1 .. dim-1
                T val[6];
                for (int side = 0; side < 2; ++side) {
                    int d = side == 0 ? last_a : last_b;
                    if (d < 0) continue;
                    for (int r = 0; r < nrow; ++r) if (d + 1 > sp[r][Ss2]) sp[r][Ss2] = d + 1;
                    int first = d;
                    while (d >= 0) {
                        first = d;
                        if (side == 1 && d == common) {           // the shared dofs: a's pass already wrote them
                            for (int dd = d; dd >= 0; dd = par[dd]) first = dd;
                            break;
                        }
                        const V w = cw[d];
                        const V pv = wp::add(cv[d], wp::cross(w, wp::sub(p_cur, rf[d])));
                        // (condim 3, pyr3: the same three dot products as the loop, without its per-axis choice of
                        // w or pv and its stack array: below)
                        if (!(pyr3 && nrow == 4))
                            for (int kk = 0; kk < dim; ++kk) val[kk] = isrot[kk] ? wp::dot(ax[kk], w) : wp::dot(ax[kk], pv);
                        const bool shared = common >= 0 && d <= common && side == 0;
                        // each entry starts from the cleared row's +0 (no chain dof is written twice: b's pass skips
                        // the shared dofs), so it is computed from +0 and stored, not loaded
#define PP_PYR_DOF(NR, val)                                                         \
                        for (int r = 0; r < (NR); ++r) {                            \
                            const int kk = 1 + r / 2;                               \
                            T x = T(0);                                             \
                            if (side == 0) {                                        \
                                x = wp::add(x, val[0]);                             \
                                if (shared) x = wp::add(x, wp::neg(val[0]));        \
                                x = wp::add(x, wp::mul(sa[r], val[kk]));            \
                                if (shared) x = wp::add(x, wp::mul(wp::neg(sa[r]), val[kk])); \
                            } else {                                                \
                                x = wp::add(x, wp::neg(val[0]));                    \
                                x = wp::add(x, wp::mul(wp::neg(sa[r]), val[kk]));   \
                            }                                                       \
                            jr[r][d] = x;                                           \
                        }
                        if (pyr3 && nrow == 4) {
                            T v3[3];
                            v3[0] = wp::dot(ax[0], pv);
                            v3[1] = wp::dot(ax[1], pv);
                            v3[2] = wp::dot(ax[2], pv);
                            PP_PYR_DOF(4, v3)
                        } else if (nrow == 4) { PP_PYR_DOF(4, val) } else { PP_PYR_DOF(nrow, val) }
#undef PP_PYR_DOF
                        d = par[d];
                    }
                    for (int r = 0; r < nrow; ++r) if (first < sp[r][0]) sp[r][0] = first;
                }
            }
            for (int k2 = 1; k2 < dim; ++k2) {
                const int r0 = row + 2 * (k2 - 1);
                const T fk = fric[(size_t)(k2 - 1) * fs];
                const T dg = k2 >= 3 ? rot : tran;
                for (int s = 0; s < 2; ++s) {
                    finish(r0 + s, dist, marg, imp, k, b, wp::add(tran, wp::mul(wp::mul(fk, fk), dg)),
                           EFC_CONTACT_PYRAMIDAL, c);
                    if (fk <= zero) {
                        // zero coefficient: the edge pair would be two extra normal rows (phantom normal
                        // support, docs/semantics.md §R6) — zeroed, it carries no force
                        clear_row(r0 + s);
                        seg_scan(r0 + s);
                        o_vel[(r0 + s) * tv] = zero;
                        o_aref[(r0 + s) * ta] = zero;
                    }
                }
            }
            // common R matching the elliptic friction impedance (MuJoCo): 2 μ_reg² R_first
            const T rpy = wp::mul(wp::mul(T(2.0), mu2), o_R[row * tR]);
            for (int j = 0; j < nrow; ++j) o_R[(row + j) * tR] = rpy;
        }
        // the rows' links: the next build's clear zeroes their chains only (clear_row); D = 1/R of the final R (as
        // make_rows' pass over the other rows)
        for (int j = 0; j < nrow; ++j) {
            int* ch = chain(row + j);
            ch[0] = la;
            ch[Cs2] = lb;
            o_D[(row + j) * tD] = wp::div(one, o_R[(row + j) * tR]);
        }
        row = row + nrow;
    }
    *(int*)((char*)n_efc.data + e * n_efc.strides[0]) = row;    // make_rows reads the count back
    *(int*)((char*)overflow.data + e * overflow.strides[0]) = over;

// @func rows_prefetch_native
    // CPU, pf >= 2: the next env's inputs of make_rows' Warp sections (equality, frictionloss, limits: qpos, the
    // per-env frictionloss and limit parameters) as L2 prefetches, issued when this env's build starts (Round 11:
    // −3 to −10 % of make_rows on the humanoid, in process; no change on the boxes).
#if !defined(__CUDA_ARCH__)
    if (pf >= 2 && env + 1 < qpos.shape[0]) {
        const size_t e1 = (size_t)env + 1;
        const char* a[3] = {(const char*)qpos.data + e1 * qpos.strides[0],
                            (const char*)dof_frictionloss.data + e1 * dof_frictionloss.strides[0],
                            (const char*)lim_sol.data + e1 * lim_sol.strides[0]};
        const size_t b[3] = {(size_t)qpos.shape[1] * qpos.strides[1],
                             (size_t)dof_frictionloss.shape[1] * dof_frictionloss.strides[1],
                             (size_t)lim_sol.shape[1] * lim_sol.strides[1]};
        for (int k = 0; k < 3; ++k)
            for (size_t l = 0; l < b[k]; l += 64) __builtin_prefetch(a[k] + l, 0, 2);
        // params = 1 (the contact parameters in the launch) and not prefetch bit 32 (Round 17b's A/B): also what the
        // parameters read of the next env that contact_rows_native's next-env prefetch leaves out — its per-env geom
        // friction and friction_ratio rows (read at the contacts' geoms) and its contacts' geoms and pairs (at most 64)
        if (params != 0 && (pf & 32) == 0) {
            int nc1 = *(const int*)((const char*)ncon.data + e1 * ncon.strides[0]);
            if (nc1 > con_geom.shape[1]) nc1 = con_geom.shape[1];
            if (nc1 > 64) nc1 = 64;
            const size_t c1 = (size_t)(nc1 > 0 ? nc1 : 0);
            const char* g[4] = {(const char*)geom_friction.data + e1 * geom_friction.strides[0],
                                (const char*)geom_friction_ratio.data + e1 * geom_friction_ratio.strides[0],
                                (const char*)con_geom.data + e1 * con_geom.strides[0],
                                (const char*)con_pair.data + e1 * con_pair.strides[0]};
            const size_t gb[4] = {(size_t)geom_friction.shape[1] * geom_friction.strides[1],
                                  (size_t)geom_friction_ratio.shape[1] * geom_friction_ratio.strides[1],
                                  c1 * con_geom.strides[1], c1 * con_pair.strides[1]};
            for (int k = 0; k < 4; ++k)
                for (size_t l = 0; l < gb[k]; l += 64) __builtin_prefetch(g[k] + l, 0, 2);
        }
    }
#endif

// @func contact_params_native
    // The per-contact parameters of one env (the kernel contact_params' docstring: explicit pairs, default
    // mode mixing, MuJoCo's mj_contactParam) over raw rows, with Warp's own scalar functions (wp::max,
    // wp::min, wp::mul, wp::add, wp::sub, wp::div), one operation per statement as the Warp loop it
    // replaces, so every value is the Warp loop's bit for bit; on CPU the next env's contact rows are
    // prefetched first.
    typedef decltype(+tc_floor) T;
    const size_t e = (size_t)env;
#define PP_AT(a, t, i) (*(t*)((char*)a.data + e * a.strides[0] + (size_t)(i) * a.strides[1]))
#define PP_AT3(a, t, i, k) (*(t*)((char*)a.data + e * a.strides[0] + (size_t)(i) * a.strides[1] + (size_t)(k) * a.strides[2]))
#define PP_M2(a, t, i, k) (*(const t*)((const char*)a.data + (size_t)(i) * a.strides[0] + (size_t)(k) * a.strides[1]))
#define PP_M1(a, t, i) (*(const t*)((const char*)a.data + (size_t)(i) * a.strides[0]))
#if !defined(__CUDA_ARCH__)
    if (prefetch && env + 1 < ncon.shape[0]) {
        const size_t e1 = e + 1;
        int nc1 = PP_M1(ncon, int, e1);
        if (nc1 > con_geom.shape[1]) nc1 = con_geom.shape[1];
        if (nc1 > 64) nc1 = 64;      // bounded, as contact_forces.cpp: a large env's rows would evict the current one
        const size_t c1 = (size_t)(nc1 > 0 ? nc1 : 0);
        const char* rd[2] = {(const char*)con_geom.data + e1 * con_geom.strides[0],
                             (const char*)con_pair.data + e1 * con_pair.strides[0]};
        const size_t rdb[2] = {c1 * con_geom.strides[1], c1 * sizeof(int)};
        for (int a = 0; a < 2; ++a)
            for (size_t l = 0; l < rdb[a]; l += 64) __builtin_prefetch(rd[a] + l, 0, 3);
        const char* wr[4] = {(const char*)con_friction.data + e1 * con_friction.strides[0],
                             (const char*)con_sol.data + e1 * con_sol.strides[0],
                             (const char*)con_solreffriction.data + e1 * con_solreffriction.strides[0],
                             (const char*)con_dim.data + e1 * con_dim.strides[0]};
        const size_t wrb[4] = {c1 * con_friction.strides[1], c1 * con_sol.strides[1], c1 * con_solreffriction.strides[1],
                               c1 * sizeof(int)};
        for (int a = 0; a < 4; ++a)
            for (size_t l = 0; l < wrb[a]; l += 64) __builtin_prefetch(wr[a] + l, 1, 3);
    }
#endif
    const T zero = wp::mul(tc_floor, T(0.0));
    const T one = wp::add(zero, T(1.0));
    const int nc = PP_M1(ncon, int, e);
    for (int c = 0; c < nc; ++c) {
        const int ga = PP_AT3(con_geom, const int, c, 0);
        const int gb = PP_AT3(con_geom, const int, c, 1);
        const int p = PP_AT(con_pair, const int, c);
        PP_AT3(con_solreffriction, T, c, 0) = zero;
        PP_AT3(con_solreffriction, T, c, 1) = zero;
        if (p >= 0) {
            T ratio = one;
            if (mujoco_mode == 0)
                ratio = wp::max(PP_AT(geom_friction_ratio, const T, ga), PP_AT(geom_friction_ratio, const T, gb));
            for (int k = 0; k < 5; ++k) {
                const T fr = wp::mul(PP_AT3(pair_friction, const T, p, k), ratio);
                PP_AT3(con_friction, T, c, k) = wp::max(fr, friction_floor);
            }
            PP_AT3(con_solreffriction, T, c, 0) = PP_M2(pair_solreffriction, T, p, 0);
            PP_AT3(con_solreffriction, T, c, 1) = PP_M2(pair_solreffriction, T, p, 1);
            for (int k = 0; k < 7; ++k) PP_AT3(con_sol, T, c, k) = PP_M2(pair_sol, T, p, k);
            if (mujoco_mode == 0 && PP_M2(pair_sol, T, p, 0) > zero)
                PP_AT3(con_sol, T, c, 0) = wp::max(PP_M2(pair_sol, T, p, 0), tc_floor);
            PP_AT(con_dim, int, c) = PP_M1(pair_condim, int, p);
            continue;
        }
        T f0 = zero, f1 = zero, f2 = zero;
        int dim = wp::max(PP_M1(geom_condim, int, ga), PP_M1(geom_condim, int, gb));
        if (mujoco_mode == 1 && PP_M1(geom_priority, int, ga) != PP_M1(geom_priority, int, gb)) {
            int g = ga;
            if (PP_M1(geom_priority, int, gb) > PP_M1(geom_priority, int, ga)) g = gb;
            f0 = PP_AT3(geom_friction, const T, g, 0);
            f1 = PP_AT3(geom_friction, const T, g, 1);
            f2 = PP_AT3(geom_friction, const T, g, 2);
            dim = PP_M1(geom_condim, int, g);
            for (int k = 0; k < 7; ++k) PP_AT3(con_sol, T, c, k) = PP_M2(geom_sol, T, g, k);
        } else {
            T sa = one, sb = one;
            if (mujoco_mode == 0) {
                sa = PP_AT(geom_friction_ratio, const T, ga);
                sb = PP_AT(geom_friction_ratio, const T, gb);
            }
            {
                const T xa = wp::mul(PP_AT3(geom_friction, const T, ga, 0), sa);
                const T xb = wp::mul(PP_AT3(geom_friction, const T, gb, 0), sb);
                f0 = wp::max(xa, xb);
            }
            {
                const T xa = wp::mul(PP_AT3(geom_friction, const T, ga, 1), sa);
                const T xb = wp::mul(PP_AT3(geom_friction, const T, gb, 1), sb);
                f1 = wp::max(xa, xb);
            }
            {
                const T xa = wp::mul(PP_AT3(geom_friction, const T, ga, 2), sa);
                const T xb = wp::mul(PP_AT3(geom_friction, const T, gb, 2), sb);
                f2 = wp::max(xa, xb);
            }
            T mix = T(0.5);
            if (mujoco_mode == 1) {
                const T ma = PP_M1(geom_solmix, T, ga);
                const T mb = PP_M1(geom_solmix, T, gb);
                const T mv = T(1.0e-15);
                if (ma >= mv && mb >= mv) {
                    const T s = wp::add(ma, mb);
                    mix = wp::div(ma, s);
                } else if (ma < mv && mb >= mv) {
                    mix = zero;
                } else if (ma >= mv && mb < mv) {
                    mix = one;
                }
            }
            const bool direct = mujoco_mode == 1 && (PP_M2(geom_sol, T, ga, 0) <= zero || PP_M2(geom_sol, T, gb, 0) <= zero);
            for (int k = 0; k < 7; ++k) {
                const T u = wp::mul(mix, PP_M2(geom_sol, T, ga, k));
                const T w = wp::sub(one, mix);
                const T x = wp::mul(w, PP_M2(geom_sol, T, gb, k));
                T v = wp::add(u, x);
                if (direct && k < 2) v = wp::min(PP_M2(geom_sol, T, ga, k), PP_M2(geom_sol, T, gb, k));
                PP_AT3(con_sol, T, c, k) = v;
            }
            if (mujoco_mode == 0 && PP_AT3(con_sol, T, c, 0) > zero)
                PP_AT3(con_sol, T, c, 0) = wp::max(PP_AT3(con_sol, T, c, 0), tc_floor);
        }
        f0 = wp::max(f0, friction_floor);
        f1 = wp::max(f1, friction_floor);
        f2 = wp::max(f2, friction_floor);
        PP_AT3(con_friction, T, c, 0) = f0;
        PP_AT3(con_friction, T, c, 1) = f0;
        PP_AT3(con_friction, T, c, 2) = f1;
        PP_AT3(con_friction, T, c, 3) = f2;
        PP_AT3(con_friction, T, c, 4) = f2;
        PP_AT(con_dim, int, c) = dim;
    }
#undef PP_AT
#undef PP_AT3
#undef PP_M2
#undef PP_M1
