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

// pyramid_rows_native: the 2(dim − 1) pyramid rows of one contact between links la and lb at p (frame fr:
// row 0 the normal n, rows 1, 2 the tangents; friction f_k = con_friction[env, c, k − 1]): for the edge pair
// k the rows row + 2(k − 1) (sign +1) and the next (sign −1), each J = n_a − n_b ± f_k·(t_a − t_b) where
// t_k = fr[k mod 3] (k ≥ 3: angular). Four dof-chain walks per contact (la normal, lb normal, la tangents,
// lb tangents), each computing a dof's point velocity once for every row: per row and entry the same
// additions in the same order as one point_jac_native walk per term (n_a, −n_b, f·t_a, −f·t_b).

// @func pyramid_rows_native
    typedef decltype(+*efc_J.data) T;
    typedef wp::vec_t<3, T> V;
    const size_t e = (size_t)env;
    const V* cw = (const V*)((const char*)cdof_w.data + e * cdof_w.strides[0]);
    const V* cv = (const V*)((const char*)cdof_v.data + e * cdof_v.strides[0]);
    const V* rf = (const V*)((const char*)dof_ref.data + e * dof_ref.strides[0]);
    const T* fric = (const T*)((const char*)con_friction.data + e * con_friction.strides[0]
                               + (size_t)c * con_friction.strides[1]);
    const int nr = 2 * (dim - 1);
    T* jr[10];
    int* sp[10];
    for (int q = 0; q < nr; ++q) {
        jr[q] = (T*)((char*)efc_J.data + e * efc_J.strides[0] + (size_t)(row + q) * efc_J.strides[1]);
        sp[q] = (int*)((char*)efc_span.data + e * efc_span.strides[0] + (size_t)(row + q) * efc_span.strides[1]);
    }
    const V nax(fr.data[0][0], fr.data[0][1], fr.data[0][2]);
    V axk[5];
    T fk[5];
    for (int k = 1; k < dim; ++k) {
        axk[k - 1] = V(fr.data[k % 3][0], fr.data[k % 3][1], fr.data[k % 3][2]);
        fk[k - 1] = fric[k - 1];
    }
    const T one = T(1);
    for (int w = 0; w < 4; ++w) {
        const int link = (w & 1) == 0 ? la : lb;
        if (link < 0) continue;
        int d = link_dof_last.data[link];
        if (d < 0) continue;
        for (int q = 0; q < nr; ++q)
            if (d + 1 > sp[q][1]) sp[q][1] = d + 1;
        int first = d;
        const T sgn = (w & 1) == 0 ? one : -one;
        while (d >= 0) {
            first = d;
            const V wd = cw[d];
            const V pv = wp::add(cv[d], wp::cross(wd, wp::sub(p, rf[d])));
            if (w < 2) {
                const T sv = sgn * wp::dot(nax, pv);
                for (int q = 0; q < nr; ++q) jr[q][d] = jr[q][d] + sv;
            } else {
                for (int k = 1; k < dim; ++k) {
                    const T val = k >= 3 ? wp::dot(axk[k - 1], wd) : wp::dot(axk[k - 1], pv);
                    const T s0 = sgn * fk[k - 1];         // the pair's + row: scale ±f (a − b)
                    const T s1 = -sgn * fk[k - 1];        // its − row
                    const T v0 = s0 * val;
                    const T v1 = s1 * val;
                    T* a0 = jr[2 * (k - 1)];
                    T* a1 = jr[2 * (k - 1) + 1];
                    a0[d] = a0[d] + v0;
                    a1[d] = a1[d] + v1;
                }
            }
            d = dof_parent.data[d];
        }
        for (int q = 0; q < nr; ++q)
            if (first < sp[q][0]) sp[q][0] = first;
    }
