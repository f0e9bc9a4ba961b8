// Native body of kernels/bias.py (see kernels/native.py for the conventions).
//
// rne_native: one env's recursive Newton-Euler pass at qacc = 0 (MuJoCo's mj_rne with flg_acc = 0)
// and the generalized external forces.
// forward pass: cacc(l) = cacc(parent) + sum of cdof_dot·qvel over the link's dofs, cacc(root) = -g;
// cfrc = I·cacc + v x* (I·v) with the link's spatial inertia I = (m, m·c, I_ref) and v = cvel;
// the external wrench of a link (cext) is the applied and coupling wrench at the CoM plus gravity
// compensation -m·g·gravcomp; backward pass: cfrc and cext accumulate towards the root;
// projection: qfrc_bias_i = cdof_i·cfrc(link(i)), qfrc_ext_i = cdof_i·cext(link(i)).

// @func rne_native
    typedef decltype(+*qvel.data) T;
    typedef wp::vec_t<3, T> V;
    typedef wp::mat_t<3, 3, T> M3;
    const size_t e = (size_t)env;
#define PP_ROW(a) ((decltype(a.data))((char*)a.data + e * a.strides[0]))
    const int* par = link_parent.data;
    const int* root = link_root.data;
    const int* dadr = link_dof_adr.data;
    const int* dl = dof_link.data;
    const T* gc = link_gravcomp.data;
    const T* qv = PP_ROW(qvel);
    const V* ddw = PP_ROW(cdofdot_w);
    const V* ddv = PP_ROW(cdofdot_v);
    const V* cw = PP_ROW(cdof_w);
    const V* cv = PP_ROW(cdof_v);
    const T* im = PP_ROW(cinert_m);
    const V* imc = PP_ROW(cinert_mc);
    const M3* ii_ = PP_ROW(cinert_i);
    const V* vw = PP_ROW(cvel_w);
    const V* vv = PP_ROW(cvel_v);
    const V* lp = PP_ROW(link_pos);
    const V* xi = PP_ROW(link_xipos);
    const V* xf = PP_ROW(xfrc_force);
    const V* xt = PP_ROW(xfrc_torque);
    const V* kf = PP_ROW(coupling_force);
    const V* kt = PP_ROW(coupling_torque);
    V* aw_ = PP_ROW(cacc_w);
    V* av_ = PP_ROW(cacc_v);
    V* ft = PP_ROW(cfrc_t);
    V* ff = PP_ROW(cfrc_f);
    V* et = PP_ROW(cext_t);
    V* ef = PP_ROW(cext_f);
    T* bias = PP_ROW(qfrc_bias);
    T* ext = PP_ROW(qfrc_ext);
#undef PP_ROW
    for (int l = 0; l < nl; ++l) {
        const int p = par[l];
        V aw = p >= 0 ? aw_[p] : V(T(0));
        V av = p >= 0 ? av_[p] : wp::neg(gravity);
        for (int d = dadr[l]; d < dadr[l + 1]; ++d) {
            aw = wp::add(aw, wp::mul(ddw[d], qv[d]));
            av = wp::add(av, wp::mul(ddv[d], qv[d]));
        }
        aw_[l] = aw;
        av_[l] = av;
    }
    for (int l = 0; l < nl; ++l) {
        const T m = im[l];
        const V mc = imc[l];
        const M3 ii = ii_[l];
        const V w = vw[l];
        const V v = vv[l];
        const V aw = aw_[l];
        const V av = av_[l];
        const V hw = wp::add(wp::mul(ii, w), wp::cross(mc, v));
        const V hv = wp::sub(wp::mul(m, v), wp::cross(mc, w));
        ft[l] = wp::add(wp::add(wp::add(wp::mul(ii, aw), wp::cross(mc, av)), wp::cross(w, hw)), wp::cross(v, hv));
        ff[l] = wp::add(wp::sub(wp::mul(m, av), wp::cross(mc, aw)), wp::cross(w, hv));
        const V c = wp::sub(xi[l], lp[root[l]]);
        const V f = wp::sub(wp::add(xf[l], kf[l]), wp::mul(gravity, m * gc[l]));
        et[l] = wp::add(wp::add(xt[l], kt[l]), wp::cross(c, f));
        ef[l] = f;
    }
    for (int l = nl - 1; l >= 0; --l) {
        const int p = par[l];
        if (p >= 0) {
            ft[p] = wp::add(ft[p], ft[l]);
            ff[p] = wp::add(ff[p], ff[l]);
            et[p] = wp::add(et[p], et[l]);
            ef[p] = wp::add(ef[p], ef[l]);
        }
    }
    for (int i = 0; i < n; ++i) {
        const int l = dl[i];
        const V aw = cw[i];
        const V av = cv[i];
        bias[i] = wp::dot(aw, ft[l]) + wp::dot(av, ff[l]);
        ext[i] = wp::dot(aw, et[l]) + wp::dot(av, ef[l]);
    }
