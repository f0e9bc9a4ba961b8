// Native bodies of kernels/constraint_rows.py (see kernels/native.py for the conventions): the
// per-row loops over one env's dofs.
//
// point_jac_native: efc_J[row] += scale · axis · (velocity of the point p fixed to `link` per dof)
// along the link's dof chain (rot = 1: the angular velocity instead); the row's span efc_span[row]
// grows to cover the chain (dof_parent[d] < d: the chain lies in [its last dof, link_dof_last]).
// row_clear_native: efc_J[row] = 0 over the row's span efc_span[row] = [lo, hi) (every nonzero of the
//   row lies in it), then the span empty (nv, 0).
// row_dot_native: out[row] = efc_J[row]·qvel over the row's span. The span is a superset of the
//   nonzero columns: the skipped terms are exact zeros and the sum starts at +0, so it equals the sum
//   over all nv columns (and the previous scan for the first/last nonzero).

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

// @func row_clear_native
    typedef decltype(+*efc_J.data) T;
    T* jr = (T*)((char*)efc_J.data + (size_t)env * efc_J.strides[0] + (size_t)row * efc_J.strides[1]);
    int* sp = (int*)((char*)efc_span.data + (size_t)env * efc_span.strides[0] + (size_t)row * efc_span.strides[1]);
    const int lo = sp[0] < 0 ? 0 : sp[0];
    const int hi = sp[1] > nv ? nv : sp[1];
    for (int j = lo; j < hi; ++j) jr[j] = T(0);
    sp[0] = nv;
    sp[1] = 0;

// @func row_dot_native
    typedef decltype(+*efc_J.data) T;
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
    ((T*)((char*)out.data + (size_t)env * out.strides[0]))[row] = s;
