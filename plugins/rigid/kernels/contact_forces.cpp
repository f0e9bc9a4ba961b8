// Native bodies of kernels/contact_forces.py (see kernels/native.py for the conventions): the per-contact
// and per-link loops over raw per-env rows, with Warp's own vector functions (wp::add, wp::mul, wp::cross)
// so that every result is the one the Warp loops they replace computed.
//
// contact_wrench_native: per contact slot the 6D wrench on side A in the contact frame (pyramidal edges
// recombined), its world force and torque, and the valid flag (docs of the kernel contact_wrench).
// link_contact_wrench_native: the net contact wrench per link and its impulse sums (kernel
// link_contact_wrench).

// @func contact_wrench_native
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

// @func link_contact_wrench_native
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
