// Native body of kernels/actuation.py (see kernels/native.py for the conventions).
//
// actuation_native: one env's passive, actuator and control forces (MuJoCo's mj_passive and
// mj_fwdActuation) and qfrc_smooth, with the velocity derivative D of these forces for the
// integrator (MuJoCo's mjd_passive_vel / mjd_actuator_vel):
// passive -damping·v - stiffness·(q - springref) (hinge/slide); actuators gain·ctrl + b0 + b1·len +
// b2·vel (len = gear·q; ctrl clamped to ctrlrange, force to forcerange); PD / velocity / force
// control clamped to the dof force range; D = damping, minus gear²(gain2·ctrl + bias2) of an
// actuator off its force limits, plus kv of PD/velocity control off its limits (not for Euler);
// qfrc_smooth = passive + actuator + control + applied + ext - bias.

// @func actuation_native
    typedef decltype(+*qvel.data) T;
    typedef wp::vec_t<3, T> V;
    const size_t e = (size_t)env;
#define PP_ROW(a) ((decltype(a.data))((char*)a.data + e * a.strides[0]))
    const int* dj = dof_joint.data;
    const int* jtype = joint_type.data;
    const int* jqs = joint_q_start.data;
    const T* jref = joint_ref.data;
    const T* jsref = joint_springref.data;
    const T* damp = PP_ROW(dof_damping);
    const T* stiff = PP_ROW(dof_stiffness);
    const T* kp_ = PP_ROW(dof_kp);
    const T* kv_ = PP_ROW(dof_kv);
    const T* flo = PP_ROW(dof_force_lo);
    const T* fhi = PP_ROW(dof_force_hi);
    const T* ctl = PP_ROW(ctrl);
    const int* mode = PP_ROW(dof_mode);
    const T* tpos = PP_ROW(dof_target_pos);
    const T* tvel = PP_ROW(dof_target_vel);
    const T* tfrc = PP_ROW(dof_target_force);
    const T* applied = PP_ROW(qfrc_applied);
    const T* qp = PP_ROW(qpos);
    const T* qv = PP_ROW(qvel);
    const T* bias = PP_ROW(qfrc_bias);
    const T* ext = PP_ROW(qfrc_ext);
    T* passive = PP_ROW(qfrc_passive);
    T* actf = PP_ROW(qfrc_actuator);
    T* control = PP_ROW(qfrc_control);
    T* smooth = PP_ROW(qfrc_smooth);
    T* dv = PP_ROW(dof_dv);
    T* aforce = PP_ROW(act_force);
#undef PP_ROW
    const bool implicit = integrator != INTEGRATOR_EULER;
    for (int i = 0; i < n; ++i) {
        const int jn = dj[i];
        const int jt = jtype[jn];
        T frc = -damp[i] * qv[i];
        if (jt == JOINT_REVOLUTE || jt == JOINT_PRISMATIC) frc = frc - stiff[i] * (qp[jqs[jn]] - jsref[jn]);
        passive[i] = frc;
        actf[i] = T(0);
        dv[i] = damp[i];
    }
    for (int a = 0; a < na; ++a) {
        const int i = act_dof.data[a];
        const T g = act_gear.data[a];
        const T u = wp::clamp(ctl[a], act_ctrl_lo.data[a], act_ctrl_hi.data[a]);
        const T len = g * qp[act_qadr.data[a]];
        const T vel = g * qv[i];
        const V gp = act_gain.data[a];
        const V bp = act_bias.data[a];
        const T gain = gp.c[0] + gp.c[1] * len + gp.c[2] * vel;
        T frc = gain * u + bp.c[0] + bp.c[1] * len + bp.c[2] * vel;
        const T lo = act_force_lo.data[a];
        const T hi = act_force_hi.data[a];
        frc = wp::clamp(frc, lo, hi);
        aforce[a] = frc;
        actf[i] = actf[i] + g * frc;
        if (implicit && frc > lo && frc < hi) dv[i] = dv[i] - g * g * (gp.c[2] * u + bp.c[2]);
    }
    for (int i = 0; i < n; ++i) {
        const int jn = dj[i];
        const int md = mode[i];
        T tau = tfrc[i];
        const T kv = kv_[i];
        if (md == CTRL_POSITION) {
            const T qrel = qp[jqs[jn]] - jref[jn];
            tau = kp_[i] * (tpos[i] - qrel) - kv * qv[i];
        } else if (md == CTRL_VELOCITY) {
            tau = kv * (tvel[i] - qv[i]);
        }
        tau = wp::clamp(tau, flo[i], fhi[i]);
        if (md != CTRL_FORCE && implicit && tau > flo[i] && tau < fhi[i]) dv[i] = dv[i] + kv;
        control[i] = tau;
        smooth[i] = passive[i] + actf[i] + tau + applied[i] + ext[i] - bias[i];
    }
