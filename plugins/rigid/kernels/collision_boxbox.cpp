// Native body of collision_boxbox.py's box-box collider (loader: native.py).

// @func box_box_mujoco_native
    // MuJoCo 4.0's box-box collider (collision_boxbox.py's module docstring; docs/collision.md, "Box-box in
    // MuJoCo-compatible mode") with the pair's points stored into the env's candidate block (as
    // collision_driver._store). The same operations in the same order as the Warp function it replaced, each
    // with Warp's own function (wp::mul, wp::add, wp::abs, wp::normalize, ...), so every value is that function's
    // bit for bit (checked on the pile of 50 boxes; the stage against MuJoCo:
    // tests/rigid_collision/test_collision_boxbox_native.py); the clipped polygon and the accepted vertices are
    // plain arrays here instead of 12x3 matrices passed and returned by value (benchmarks/results/constraint.md,
    // Round 14 (collision)).
    typedef decltype(+margin) T;
    constexpr bool EDGE_SKIP = true;   // the edge-axis skip below (false: every axis normalised, as before)
    constexpr bool EDGE_SKIP2 = true;  // its squared test (benchmarks/probe_boxbox_skip.py compiles each out)
    constexpr bool CLIP_SWAP = true;   // a clip's output becomes the polygon by a pointer swap (false: copied back)
    typedef wp::vec_t<3, T> V;
    typedef wp::mat_t<3, 3, T> M;
    const int MAXV = 12;              // a quadrilateral clipped by 4 half-planes has at most 8 vertices; slack for round-off
    const T zero = wp::sub(margin, margin);
    const T one = wp::add(zero, T(1.0));
    const T half = T(0.5);
    const T minval = T(1e-15);
    const bool f32 = wp::add(one, T(1e-10)) == one;
    V pts[MAXV];
    T dst[MAXV];
    V nrm = V(zero, zero, one);
    int cnt = 0;
    auto collide = [&]() {
        const V p21 = wp::mul(wp::transpose(rot1), wp::sub(pos2, pos1));
        const V p12 = wp::mul(wp::transpose(rot2), wp::sub(pos1, pos2));
        const M rot = wp::mul(wp::transpose(rot1), rot2);
        // stage 1: face axes of box 1, of box 2, then edge-cross axes
        T sep_best = f32 ? T(-3.0e38) : T(-1.0e300);
        int code = -1;
        for (int i = 0; i < 3; ++i) {
            const T r2 = wp::add(wp::add(wp::mul(wp::abs(rot.data[i][0]), size2.c[0]), wp::mul(wp::abs(rot.data[i][1]), size2.c[1])),
                                 wp::mul(wp::abs(rot.data[i][2]), size2.c[2]));
            const T sep = wp::sub(wp::sub(wp::abs(p21.c[i]), size1.c[i]), r2);
            if (sep > margin) return;     // separated along this axis: no contact
            if (sep > sep_best) {
                sep_best = sep;
                code = i;
            }
        }
        for (int j = 0; j < 3; ++j) {
            const T r1 = wp::add(wp::add(wp::mul(wp::abs(rot.data[0][j]), size1.c[0]), wp::mul(wp::abs(rot.data[1][j]), size1.c[1])),
                                 wp::mul(wp::abs(rot.data[2][j]), size1.c[2]));
            const T sep = wp::sub(wp::sub(wp::abs(p12.c[j]), size2.c[j]), r1);
            if (sep > margin) return;
            if (sep > sep_best) {
                sep_best = sep;
                code = 3 + j;
            }
        }
        const T sep_face = sep_best;
        const int code_face = code;
        // EDGE_SKIP: an edge axis whose separation is provably <= sep_face (<= margin) neither separates nor
        // wins; its unnormalised separation su = |a.p| - rr1 - rr2 (a not unit: sep = su / |a|, |a| <= 1 up to
        // round-off, so sep <= su where su < 0) decides that without the square root and the division. err bounds
        // the round-off of both evaluations (< 30 ulps of the terms' magnitudes; 64 taken) plus an absolute term for
        // underflow; inf / NaN never skip. Skipped or not, the result is the same (collision_boxbox.py).
        const T ulp = f32 ? T(1.1920928955078125e-07) : T(2.220446049250313e-16);
        const T err = wp::add(wp::mul(wp::mul(T(64.0), ulp),
                                      wp::add(wp::add(wp::add(wp::abs(p21.c[0]), wp::abs(p21.c[1])), wp::abs(p21.c[2])),
                                              wp::mul(T(2.0), wp::add(wp::add(wp::add(size1.c[0], size1.c[1]), size1.c[2]),
                                                                      wp::add(wp::add(size2.c[0], size2.c[1]), size2.c[2]))))),
                              f32 ? T(1e-30) : T(1e-300));
        for (int i = 0; i < 3; ++i) {
            for (int j = 0; j < 3; ++j) {
                const int i1 = (i + 1) % 3, i2 = (i + 2) % 3;
                T a1 = wp::neg(rot.data[i2][j]);
                T a2 = rot.data[i1][j];
                const T n2 = wp::add(wp::mul(a1, a1), wp::mul(a2, a2));
                if (EDGE_SKIP && n2 >= T(1e-16)) {
                    const int j1 = (j + 1) % 3, j2 = (j + 2) % 3;
                    const T ru1 = wp::add(wp::mul(size1.c[i1], wp::abs(a1)), wp::mul(size1.c[i2], wp::abs(a2)));
                    const T bu1 = wp::add(wp::mul(a1, rot.data[i1][j1]), wp::mul(a2, rot.data[i2][j1]));
                    const T bu2 = wp::add(wp::mul(a1, rot.data[i1][j2]), wp::mul(a2, rot.data[i2][j2]));
                    const T ru2 = wp::add(wp::mul(size2.c[j1], wp::abs(bu1)), wp::mul(size2.c[j2], wp::abs(bu2)));
                    const T su = wp::add(wp::sub(wp::sub(wp::abs(wp::add(wp::mul(a1, p21.c[i1]), wp::mul(a2, p21.c[i2]))), ru1), ru2), err);
                    if (su < zero && su < sep_face) continue;
                    // sep <= su / |a| (su < 0): below sep_face also where su / |a| <= sep_face - err, tested squared
                    // (no square root): su^2 >= (sep_face - err)^2 n2 with 64 ulps for the squares' and |a|'s
                    // round-off; su kept away from underflow
                    const T w = wp::sub(sep_face, err);
                    if (EDGE_SKIP2 && w < zero && su < (f32 ? T(-1e-18) : T(-1e-150)) &&
                        wp::mul(su, su) >= wp::mul(wp::mul(wp::mul(w, w), n2), wp::add(one, wp::mul(T(64.0), ulp))))
                        continue;
                }
                if (n2 >= T(1e-16)) {
                    const T inv = wp::div(one, wp::sqrt(n2));
                    a1 = wp::mul(a1, inv);
                    a2 = wp::mul(a2, inv);
                    const T rr1 = wp::add(wp::mul(size1.c[i1], wp::abs(a1)), wp::mul(size1.c[i2], wp::abs(a2)));
                    const int j1 = (j + 1) % 3, j2 = (j + 2) % 3;
                    const T b1 = wp::add(wp::mul(a1, rot.data[i1][j1]), wp::mul(a2, rot.data[i2][j1]));
                    const T b2 = wp::add(wp::mul(a1, rot.data[i1][j2]), wp::mul(a2, rot.data[i2][j2]));
                    const T rr2 = wp::add(wp::mul(size2.c[j1], wp::abs(b1)), wp::mul(size2.c[j2], wp::abs(b2)));
                    const T sep = wp::sub(wp::sub(wp::abs(wp::add(wp::mul(a1, p21.c[i1]), wp::mul(a2, p21.c[i2]))), rr1), rr2);
                    if (sep > margin) return;     // separated
                    if (wp::sub(sep, wp::mul(T(1e-6), wp::abs(sep))) > sep_best && sep > sep_face) {
                        sep_best = sep;
                        code = 6 + 3 * i + j;
                    }
                }
            }
        }
        if (code < 0) return;
        // an edge axis within ~8 degrees of the best face axis and not 5 % deeper gives way to the face
        if (code >= 6) {
            const int i = (code - 6) / 3, j = (code - 6) % 3;
            V ax(zero, zero, zero);
            ax.c[(i + 1) % 3] = wp::neg(rot.data[(i + 2) % 3][j]);
            ax.c[(i + 2) % 3] = rot.data[(i + 1) % 3][j];
            ax = wp::normalize(ax);
            T fd = zero;
            if (code_face < 3) {
                fd = wp::abs(ax.c[code_face]);
            } else {
                const int f = code_face - 3;
                fd = wp::abs(wp::add(wp::add(wp::mul(ax.c[0], rot.data[0][f]), wp::mul(ax.c[1], rot.data[1][f])),
                                     wp::mul(ax.c[2], rot.data[2][f])));
            }
            if (fd > T(0.99) && sep_best < wp::add(wp::add(sep_face, wp::mul(T(0.05), wp::abs(sep_face))), minval)) {
                code = code_face;
                sep_best = sep_face;
            }
        }
        if (code >= 6) {
            // stage 2a: edge-edge, one point
            const int i = (code - 6) / 3, j = (code - 6) % 3;
            const int i1 = (i + 1) % 3, i2 = (i + 2) % 3, j1 = (j + 1) % 3, j2 = (j + 2) % 3;
            V ax(zero, zero, zero);
            ax.c[i1] = wp::neg(rot.data[i2][j]);
            ax.c[i2] = rot.data[i1][j];
            ax = wp::normalize(ax);
            if (wp::dot(ax, p21) < zero) ax = wp::neg(ax);
            const V a2v = wp::mul(wp::transpose(rot), ax);
            const T amb = T(1e-9);
            int amb1 = -1;
            if (wp::abs(ax.c[i1]) < amb) amb1 = i1;
            else if (wp::abs(ax.c[i2]) < amb) amb1 = i2;
            int amb2 = -1;
            if (wp::abs(a2v.c[j1]) < amb) amb2 = j1;
            else if (wp::abs(a2v.c[j2]) < amb) amb2 = j2;
            const V d2(rot.data[0][j], rot.data[1][j], rot.data[2][j]);
            const T b = d2.c[i];
            const T den = wp::sub(one, wp::mul(b, b));
            T best = f32 ? T(3.0e38) : T(1.0e300);
            V w1 = wp::mul(p21, zero);
            V w2 = wp::mul(p21, zero);
            const int n1 = amb1 >= 0 ? 2 : 1;
            const int n2v = amb2 >= 0 ? 2 : 1;
            for (int v1 = 0; v1 < n1; ++v1) {
                for (int v2 = 0; v2 < n2v; ++v2) {
                    V c1(zero, zero, zero);
                    c1.c[i1] = size1.c[i1];
                    if (ax.c[i1] < zero) c1.c[i1] = wp::neg(size1.c[i1]);
                    c1.c[i2] = size1.c[i2];
                    if (ax.c[i2] < zero) c1.c[i2] = wp::neg(size1.c[i2]);
                    if (amb1 >= 0 && v1 == 1) c1.c[amb1] = wp::neg(c1.c[amb1]);
                    V cc(zero, zero, zero);
                    cc.c[j1] = size2.c[j1];
                    if (a2v.c[j1] >= zero) cc.c[j1] = wp::neg(size2.c[j1]);
                    cc.c[j2] = size2.c[j2];
                    if (a2v.c[j2] >= zero) cc.c[j2] = wp::neg(size2.c[j2]);
                    if (amb2 >= 0 && v2 == 1) cc.c[amb2] = wp::neg(cc.c[amb2]);
                    const V c2 = wp::add(wp::mul(rot, cc), p21);
                    const V e = wp::sub(c2, c1);
                    const T d1e = e.c[i];
                    const T d2e = wp::dot(d2, e);
                    T s = zero;
                    if (den >= minval) s = wp::div(wp::sub(d1e, wp::mul(b, d2e)), den);
                    s = wp::clamp(s, wp::neg(size1.c[i]), size1.c[i]);
                    const T t = wp::clamp(wp::sub(wp::mul(b, s), d2e), wp::neg(size2.c[j]), size2.c[j]);
                    s = wp::clamp(wp::add(d1e, wp::mul(b, t)), wp::neg(size1.c[i]), size1.c[i]);
                    V es(zero, zero, zero);
                    es.c[i] = s;
                    const V q1 = wp::add(c1, es);
                    const V q2 = wp::add(c2, wp::mul(d2, t));
                    const V g = wp::sub(q2, q1);
                    const T gg = wp::dot(g, g);
                    if (gg < best) {
                        best = gg;
                        w1 = q1;
                        w2 = q2;
                    }
                }
            }
            const T dist = wp::dot(wp::sub(w2, w1), ax);
            if (dist <= margin) {
                const V mid = wp::mul(wp::add(w1, w2), half);
                pts[0] = wp::add(wp::mul(rot1, mid), pos1);
                dst[0] = dist;
                nrm = wp::mul(rot1, ax);
                cnt = 1;
            }
            return;
        }
        // stage 2b: face; reference box = owner of the face, incident box = the other
        const bool ref1 = code < 3;
        int a = code;
        V sref = size1, sinc = size2, pref = pos1, posoi = p21;
        M mref = rot1, rinc = rot;
        if (!ref1) {
            a = code - 3;
            sref = size2;
            sinc = size1;
            pref = pos2;
            mref = rot2;
            posoi = p12;
            rinc = wp::transpose(rot);
        }
        T sgn = one;
        if (posoi.c[a] < zero) sgn = wp::neg(one);
        int binc = 0;
        for (int k2 = 1; k2 < 3; ++k2)
            if (wp::abs(rinc.data[a][k2]) > wp::abs(rinc.data[a][binc])) binc = k2;
        T tinc = one;
        if (wp::mul(sgn, rinc.data[a][binc]) > zero) tinc = wp::neg(one);
        const int axx = (a + 1) % 3, ayy = (a + 2) % 3, bu = (binc + 1) % 3, bv = (binc + 2) % 3;
        V cx(zero, zero, zero), du(zero, zero, zero), dv(zero, zero, zero);
        for (int r = 0; r < 3; ++r) {
            const int c = r == 0 ? axx : (r == 1 ? ayy : a);
            cx.c[r] = wp::add(posoi.c[c], wp::mul(wp::mul(tinc, sinc.c[binc]), rinc.data[c][binc]));
            du.c[r] = wp::mul(sinc.c[bu], rinc.data[c][bu]);
            dv.c[r] = wp::mul(sinc.c[bv], rinc.data[c][bv]);
        }
        cx.c[2] = wp::sub(wp::mul(sgn, cx.c[2]), sref.c[a]);
        du.c[2] = wp::mul(du.c[2], sgn);
        dv.c[2] = wp::mul(dv.c[2], sgn);
        V buf_a[MAXV], buf_b[MAXV];
        V* poly = buf_a;                  // the polygon; out: the clip's output, then the polygon (pointers swapped)
        V* out = buf_b;
        for (int k2 = 0; k2 < 4; ++k2) {
            const T su = (k2 == 1 || k2 == 2) ? wp::neg(one) : one;
            const T sv = k2 >= 2 ? wp::neg(one) : one;
            poly[k2] = V(wp::add(wp::add(cx.c[0], wp::mul(su, du.c[0])), wp::mul(sv, dv.c[0])),
                         wp::add(wp::add(cx.c[1], wp::mul(su, du.c[1])), wp::mul(sv, dv.c[1])),
                         wp::add(wp::add(cx.c[2], wp::mul(su, du.c[2])), wp::mul(sv, dv.c[2])));
        }
        int nv = 4;
        // Sutherland-Hodgman against one side plane: keep sign * v[coord] <= limit (collision_boxbox._clip_half)
        auto clip = [&](int coord, T sign, T limit) {
            const T zc = wp::sub(limit, limit);
            bool inside = true;
            for (int k2 = 0; k2 < nv; ++k2)
                if (wp::sub(wp::mul(sign, poly[k2].c[coord]), limit) > zc) inside = false;
            if (inside) return;
            int nout = 0;
            for (int k2 = 0; k2 < nv; ++k2) {
                const int k1 = k2 + 1 == nv ? 0 : k2 + 1;
                const V p = poly[k2];
                const V q = poly[k1];
                const T dp = wp::sub(wp::mul(sign, p.c[coord]), limit);
                const T dq = wp::sub(wp::mul(sign, q.c[coord]), limit);
                if (dp <= zc && nout < MAXV) out[nout++] = p;
                if ((dp < zc) != (dq < zc) && dp != dq && nout < MAXV) {
                    const T t = wp::div(dp, wp::sub(dp, dq));
                    out[nout++] = wp::add(p, wp::mul(wp::sub(q, p), t));
                }
            }
            if (CLIP_SWAP) {
                V* const t = poly;
                poly = out;
                out = t;
            } else {
                for (int k2 = 0; k2 < nout; ++k2) poly[k2] = out[k2];
            }
            nv = nout;
        };
        clip(0, one, sref.c[axx]);
        clip(0, wp::neg(one), sref.c[axx]);
        clip(1, one, sref.c[ayy]);
        clip(1, wp::neg(one), sref.c[ayy]);
        const T dupe2 = wp::mul(T(1e-14), wp::add(wp::mul(sref.c[axx], sref.c[axx]), wp::mul(sref.c[ayy], sref.c[ayy])));
        const T nsgn = ref1 ? sgn : wp::neg(sgn);
        nrm = wp::mul(V(mref.data[0][a], mref.data[1][a], mref.data[2][a]), nsgn);
        V* acc = out;                     // the accepted vertices (reference-face coordinates); out is free now
        for (int k2 = 0; k2 < nv; ++k2) {
            const V v = poly[k2];
            if (v.c[2] <= margin) {
                bool dupe = false;
                for (int q = 0; q < cnt; ++q) {
                    const T dx = wp::sub(acc[q].c[0], v.c[0]);
                    const T dy = wp::sub(acc[q].c[1], v.c[1]);
                    if (wp::add(wp::mul(dx, dx), wp::mul(dy, dy)) < dupe2) dupe = true;
                }
                if (!dupe) {
                    acc[cnt] = v;
                    V pc(zero, zero, zero);
                    pc.c[axx] = v.c[0];
                    pc.c[ayy] = v.c[1];
                    pc.c[a] = wp::mul(sgn, wp::add(sref.c[a], wp::mul(half, v.c[2])));
                    pts[cnt] = wp::add(wp::mul(mref, pc), pref);
                    dst[cnt] = v.c[2];
                    cnt += 1;
                }
            }
        }
    };
    collide();
    // the pair's block of the env's candidate points (collision_driver._reserve)
    int start = 0, stored = 0;
    if (cnt > 0) {
        const int used = wp::atomic_add(cand_count_out, env, cnt);
        if (used + cnt <= (int)cand_pos_out.shape[0] / (int)cand_count_out.shape[0]) {
            start = wp::atomic_add(cand_pool_out, 0, cnt);
            stored = cnt;
        }
    }
    for (int i = 0; i < stored; ++i) {
        *wp::address(cand_pos_out, start + i) = pts[i];
        *wp::address(cand_normal_out, start + i) = nrm;
        *wp::address(cand_dist_out, start + i) = dst[i];
    }
    *wp::address(pair_cand_out, env, k) = wp::vec2i(start, stored);
