// Native body of kernels/row_pool.py (see kernels/native.py for the conventions).
//
// pool_rows_native: the array `a` (n, max_rows[, k]) seen from row `off` on: the same shape and strides, its
// data `off` rows (strides[1]) further. An env's rows start at row e·max_rows + efc_off[e] of the View's
// pool (model.ROW_POOL_FIELDS), so a kernel of env e that reads a[e, r] through pool_rows(a, efc_off[e])
// reads the env's row r — and a native body, whose env row is `data + e·strides[0]`, reads it too: no
// reader changes its indexing. off = 0 (the pool off, CUDA) is the array as it is. The offset is on the
// pointer, not the index (a negative index wraps in Warp's CPU indexing; a pointer moved back does not).

// @func pool_rows_native
    auto r = a;
    r.data = (decltype(a.data))((char*)a.data + (long long)off * (long long)a.strides[1]);
    return r;
