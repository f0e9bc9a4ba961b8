// Native bodies of kernels/contact_forces.py (see kernels/native.py for the conventions): the per-contact
// and per-link loops over raw per-env rows, with Warp's own vector functions (wp::add, wp::mul, wp::cross)
// so that every result is the one the Warp loops they replace computed.
//
// contact_wrench_native: per contact slot the 6D wrench on side A in the contact frame (pyramidal edges
// recombined), its world force and torque, and the valid flag (docs of the kernel contact_wrench).
// link_contact_wrench_native: the net contact wrench per link and its impulse sums (kernel
// link_contact_wrench).
// contact_link_wrench_native: both for one env in one pass (the parts ``wrench`` then ``link``: the same
// source, so the same numbers), the link sums reading the world wrenches just written; on CPU it first
// prefetches the next env's contact rows and link rows (prefetch = 1: into L1; 2: into L2 only, prefetcht1).

// @part wrench
    typedef decltype(+*efc_force.data) T;
    typedef wp::vec_t<3, T> V;
    typedef wp::mat_t<3, 3, T> M3;
    const size_t e = (size_t)env;
#define PP_R(a, t) ((t*)((char*)a.data + e * a.strides[0]))
    int* valid = PP_R(con_valid, int);
    const int* adr_ = PP_R(con_efc_adr, const int);
    const int* dim_ = PP_R(con_dim, const int);
    const int* tp_ = PP_R(efc_type, const int);
    const T* F = PP_R(efc_force, const T);
    const M3* frame = PP_R(con_frame, const M3);
    V* fw = PP_R(con_force_world, V);
    V* tw = PP_R(con_torque_world, V);
#undef PP_R
    const char* w0 = (const char*)con_wrench.data + e * con_wrench.strides[0];
    const char* mu0 = (const char*)con_friction.data + e * con_friction.strides[0];
    for (int c = 0; c < C; ++c) {
        if (c >= nc && valid[c] == 0) continue;
        T* w = (T*)(w0 + (size_t)c * con_wrench.strides[1]);
        const T* mu = (const T*)(mu0 + (size_t)c * con_friction.strides[1]);
        const T zero = mu[0] * T(0);
        for (int j = 0; j < 6; ++j) w[j] = zero;
        valid[c] = 0;
        int adr = -1;
        if (c < nc) adr = adr_[c];
        if (adr >= 0) {
            valid[c] = 1;
            const int dim = dim_[c];
            if (tp_[adr] == EFC_CONTACT_PYRAMIDAL) {
                for (int j = 0; j < 2 * (dim - 1); ++j) w[0] = w[0] + F[adr + j];
                for (int k = 1; k < dim; ++k) {
                    const T df = F[adr + 2 * (k - 1)] - F[adr + 2 * (k - 1) + 1];
                    w[k] = mu[k - 1] * df;
                }
            } else {
                for (int j = 0; j < dim; ++j) w[j] = F[adr + j];
            }
        }
        const M3 fr = frame[c];
        V f(zero, zero, zero);
        V t(zero, zero, zero);
        for (int k = 0; k < 3; ++k) {
            const V ax(fr.data[k][0], fr.data[k][1], fr.data[k][2]);
            f = wp::add(f, wp::mul(w[k], ax));
            t = wp::add(t, wp::mul(w[3 + k], ax));
        }
        fw[c] = f;
        tw[c] = t;
    }

// @func contact_wrench_native
// @use contact_forces.wrench

// @part link
    typedef decltype(+h) T;
    typedef wp::vec_t<3, T> V;
    const size_t e = (size_t)env;
#define PP_R(a, t) ((t*)((char*)a.data + e * a.strides[0]))
    const V* xi = PP_R(link_xipos, const V);
    V* LF = PP_R(link_contact_force, V);
    V* LT = PP_R(link_contact_torque, V);
    V* IF = PP_R(link_impulse_force, V);
    V* IT = PP_R(link_impulse_torque, V);
    const int* valid = PP_R(con_valid, const int);
    const V* fw = PP_R(con_force_world, const V);
    const V* tw = PP_R(con_torque_world, const V);
    const V* cp = PP_R(con_pos, const V);
#undef PP_R
    const char* cl0 = (const char*)con_link.data + e * con_link.strides[0];
    for (int l = 0; l < nl; ++l) {
        LF[l] = wp::mul(wp::mul(xi[l], h), T(0));
        LT[l] = wp::mul(wp::mul(xi[l], h), T(0));
    }
    for (int c = 0; c < nc; ++c) {
        if (valid[c] == 0) continue;
        const V f = fw[c];
        const V t = tw[c];
        const V p = cp[c];
        const int* cl = (const int*)(cl0 + (size_t)c * con_link.strides[1]);
        const int la = cl[0];
        const int lb = cl[1];
        if (la >= 0) {
            LF[la] = wp::add(LF[la], f);
            LT[la] = wp::add(wp::add(LT[la], t), wp::cross(wp::sub(p, xi[la]), f));
        }
        if (lb >= 0) {
            LF[lb] = wp::sub(LF[lb], f);
            LT[lb] = wp::sub(wp::sub(LT[lb], t), wp::cross(wp::sub(p, xi[lb]), f));
        }
    }
    if (accumulate == 1) {
        for (int l = 0; l < nl; ++l) {
            IF[l] = wp::add(IF[l], wp::mul(h, LF[l]));
            IT[l] = wp::add(IT[l], wp::mul(h, LT[l]));
        }
    } else if (accumulate == 2) {
        for (int l = 0; l < nl; ++l) {
            IF[l] = wp::mul(h, LF[l]);
            IT[l] = wp::mul(h, LT[l]);
        }
    }

// @func link_contact_wrench_native
// @use contact_forces.link

// @part prefetch_next
#if !defined(__CUDA_ARCH__)
    if (prefetch && env + 1 < ncon.shape[0]) {
        const size_t e1 = (size_t)env + 1;
        // bounded: a large env's next contacts (a pile) would evict the env being computed; HW prefetch streams them
        enum { PP_PF_CONTACTS = 64 };
        int nc1 = *(const int*)((const char*)ncon.data + e1 * ncon.strides[0]);
        if (nc1 > C) nc1 = C;
        if (nc1 > PP_PF_CONTACTS) nc1 = PP_PF_CONTACTS;
        auto pf = [&](const void* base, size_t stride, size_t bytes, int rw) {
            const char* b = (const char*)base + e1 * stride;
            for (size_t l = 0; l < bytes; l += 64) {
                if (prefetch >= 2) __builtin_prefetch(b + l, 0, 2);
                else if (rw) __builtin_prefetch(b + l, 1, 3);
                else __builtin_prefetch(b + l, 0, 3);
            }
        };
        const size_t ts = sizeof(*efc_force.data), c1 = (size_t)(nc1 > 0 ? nc1 : 0), ll = (size_t)nl;
        pf(con_valid.data, con_valid.strides[0], c1 * sizeof(int), 1);
        pf(con_efc_adr.data, con_efc_adr.strides[0], c1 * sizeof(int), 0);
        pf(con_dim.data, con_dim.strides[0], c1 * sizeof(int), 0);
        pf(con_frame.data, con_frame.strides[0], c1 * 9 * ts, 0);
        pf(con_friction.data, con_friction.strides[0], c1 * con_friction.strides[1], 0);
        pf(con_wrench.data, con_wrench.strides[0], c1 * con_wrench.strides[1], 1);
        pf(con_force_world.data, con_force_world.strides[0], c1 * 3 * ts, 1);
        pf(con_torque_world.data, con_torque_world.strides[0], c1 * 3 * ts, 1);
        pf(con_pos.data, con_pos.strides[0], c1 * 3 * ts, 0);
        pf(con_link.data, con_link.strides[0], c1 * con_link.strides[1], 0);
        pf(link_xipos.data, link_xipos.strides[0], ll * 3 * ts, 0);
        pf(link_contact_force.data, link_contact_force.strides[0], ll * 3 * ts, 1);
        pf(link_contact_torque.data, link_contact_torque.strides[0], ll * 3 * ts, 1);
        if (accumulate != 0) {
            pf(link_impulse_force.data, link_impulse_force.strides[0], ll * 3 * ts, 1);
            pf(link_impulse_torque.data, link_impulse_torque.strides[0], ll * 3 * ts, 1);
        }
    }
#endif

// @part prefetch_forces
    // CPU, after this env's pass (the next env's con_efc_adr line, prefetched before it, has arrived): the
    // next env's contact row forces from its first contact's row, 2(condim - 1) = 4 rows per contact
#if !defined(__CUDA_ARCH__)
    if (prefetch && env + 1 < ncon.shape[0]) {
        const size_t e1 = (size_t)env + 1;
        const int nc1 = *(const int*)((const char*)ncon.data + e1 * ncon.strides[0]);
        const int a0 = nc1 > 0 ? *(const int*)((const char*)con_efc_adr.data + e1 * con_efc_adr.strides[0]) : -1;
        if (a0 >= 0 && a0 < efc_force.shape[1]) {
            const size_t ts = sizeof(*efc_force.data);
            size_t tb = (size_t)(nc1 < C ? (nc1 < 64 ? nc1 : 64) : C) * 4 * ts;
            const size_t room = (size_t)(efc_force.shape[1] - a0) * ts;
            if (tb > room) tb = room;
            // (doff: the next env's rows' offset from this env's in the row pool, efc_off[e + 1] − efc_off[e]; 0 without)
            const char* fb = (const char*)efc_force.data + (long long)e1 * efc_force.strides[0]
                             + (long long)doff * efc_force.strides[1] + (size_t)a0 * ts;
            for (size_t l = 0; l < tb; l += 64) {
                if (prefetch >= 2) __builtin_prefetch(fb + l, 0, 2);
                else __builtin_prefetch(fb + l, 0, 3);
            }
        }
    }
#endif

// @func contact_link_wrench_native
    {
// @use contact_forces.prefetch_next
    }
    {
        const int nc = *(const int*)((const char*)ncon.data + (size_t)env * ncon.strides[0]);
// @use contact_forces.wrench
    }
    {
        const int nc = *(const int*)((const char*)ncon.data + (size_t)env * ncon.strides[0]);
// @use contact_forces.link
    }
    {
// @use contact_forces.prefetch_forces
    }
