// Native bodies of kernels/constraint_rows.py (see kernels/native.py for the conventions): the
// per-row loops over one env's dofs.
//
// point_jac_native: efc_J[row] += scale · axis · (velocity of the point p fixed to `link` per dof)
// along the link's dof chain (rot = 1: the angular velocity instead).
// row_clear_native: efc_J[row] = 0.
// row_dot_native: out[row] = efc_J[row]·qvel (leading/trailing zero terms of the sum skipped).

// @func point_jac_native
    typedef decltype(+*efc_J.data) T;
    typedef wp::vec_t<3, T> V;
    const size_t e = (size_t)env;
    const V* cw = (const V*)((const char*)cdof_w.data + e * cdof_w.strides[0]);
    const V* cv = (const V*)((const char*)cdof_v.data + e * cdof_v.strides[0]);
    const V* rf = (const V*)((const char*)dof_ref.data + e * dof_ref.strides[0]);
    T* jr = (T*)((char*)efc_J.data + e * efc_J.strides[0] + (size_t)row * efc_J.strides[1]);
    int d = link_dof_last.data[link];
    while (d >= 0) {
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

// @func row_clear_native
    typedef decltype(+*efc_J.data) T;
    T* jr = (T*)((char*)efc_J.data + (size_t)env * efc_J.strides[0] + (size_t)row * efc_J.strides[1]);
    for (int j = 0; j < nv; ++j) jr[j] = T(0);

// @func row_dot_native
    typedef decltype(+*efc_J.data) T;
    T* jr = (T*)((char*)efc_J.data + (size_t)env * efc_J.strides[0] + (size_t)row * efc_J.strides[1]);
    const T* q = (const T*)((const char*)qvel.data + (size_t)env * qvel.strides[0]);
    int lo = 0;
    while (lo < nv && jr[lo] == T(0)) ++lo;
    int hi = nv;
    while (hi > lo && jr[hi - 1] == T(0)) --hi;
    T s = T(0);
    for (int j = lo; j < hi; ++j) {       // leading/trailing zero terms of the sum skipped
        const T p = jr[j] * q[j];
        s = s + p;
    }
    ((T*)((char*)out.data + (size_t)env * out.strides[0]))[row] = s;
