"""The contact parameters inside make_rows' launch (``make_rows(params=True)``, the solver's own path; the
kernel contact_params' native body, kernels/constraint_rows.cpp ``contact_params_native``).

A few boxes of different friction, solref / solimp, solmix and priority fall onto a plane (generic sizes and
poses, 3 envs with different velocities); after some steps the parameters (con_friction, con_sol,
con_solreffriction, con_dim: NaN / garbage-filled first) and the rows that make_rows(params=True) writes must
equal, byte for byte, the separate contact_params launch followed by make_rows, in MuJoCo's and the default
contact mixing."""

import numpy as np
import pytest

XML = """<mujoco>
  <option timestep="0.004" integrator="implicitfast"/>
  <worldbody>
    <geom type="plane" size="5 5 0.1" friction="0.8 0.02 0.001" solref="0.015 0.9" solmix="0.5"/>
{bodies}
  </worldbody>
</mujoco>
"""


def _xml():
    rng = np.random.default_rng(3)
    out = []
    for i in range(4):
        x, y = rng.uniform(-0.3, 0.3, 2)
        a, b, c = rng.uniform(0, 90, 3)
        sx, sy, sz = rng.uniform(0.05, 0.1, 3)
        f = rng.uniform(0.3, 1.2)
        extra = ' priority="1"' if i == 2 else ""
        out.append(f'    <body pos="{x:.3f} {y:.3f} {0.1 + 0.08 * i:.3f}" euler="{a:.1f} {b:.1f} {c:.1f}"><freejoint/>'
                   f'<geom type="box" size="{sx:.3f} {sy:.3f} {sz:.3f}" friction="{f:.3f} 0.01 0.0002" '
                   f'solref="{0.01 + 0.01 * i:.3f} {0.7 + 0.1 * i:.2f}" solimp="0.8 0.95 0.002 0.4 {2 + i}" '
                   f'solmix="{0.3 + 0.5 * i:.2f}" condim="{3 if i % 2 else 4}"{extra}/></body>')
    return XML.format(bodies="\n".join(out))


FIELDS = ("con_friction", "con_sol", "con_solreffriction", "con_dim", "nefc", "efc_J", "efc_span", "efc_seg", "efc_type",
          "efc_id", "efc_dim", "efc_pos", "efc_margin", "efc_vel", "efc_aref", "efc_R", "efc_D", "efc_imp",
          "efc_frictionloss", "efc_mu", "con_efc_adr")


@pytest.mark.parametrize("mode", ["mujoco", "default"])
def test_params_inside_make_rows_equal_the_separate_stage(tmp_path, mode):
    import polyphys
    import warp as wp
    from polyphys import morphs
    from polyphys.plugins.rigid import RigidOptions, constraint_rows
    from polyphys.plugins.rigid.materials import Rigid

    path = tmp_path / "boxes.xml"
    path.write_text(_xml())
    opts = (RigidOptions.mujoco(integrator="implicitfast", friction_cone="pyramidal") if mode == "mujoco"
            else RigidOptions())
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.004, precision="64", graph_capture=False), rigid=opts)
    ent = scene.add_entity(morphs.MJCF(file=str(path)), Rigid())
    n = 3
    scene.build(n_envs=n)
    solver = scene.solver("rigid")
    d = solver.data
    qv = np.zeros((n, solver.n_dofs))
    qv[1] = 0.3 * np.sin(np.arange(qv.shape[1]))
    qv[2] = -0.2 * np.cos(np.arange(qv.shape[1]))
    ent.set_dofs_velocity(qv)
    for _ in range(60):
        scene.step()
    assert d.ncon.numpy().min() >= 2

    def run(fused):
        for name in ("con_friction", "con_sol", "con_solreffriction"):
            getattr(d, name).fill_(np.nan)
        d.con_dim.fill_(-7)
        for part in solver.layout.partitions:
            v = solver.views[part.index]
            if not fused:
                constraint_rows.contact_params(v)
            constraint_rows.make_rows(v, params=fused)
        wp.synchronize()
        nc = d.ncon.numpy()
        for e in range(n):     # every contact's parameters written
            assert np.isfinite(d.con_friction.numpy()[e, :nc[e]]).all()
            assert np.isfinite(d.con_sol.numpy()[e, :nc[e]]).all()
            assert (d.con_dim.numpy()[e, :nc[e]] >= 1).all()
        return [getattr(d, k).numpy().tobytes() for k in FIELDS]

    sep = run(False)
    fused = run(True)
    for k, a, b in zip(FIELDS, sep, fused):
        assert a == b, k
    # the fused launch does write them: without params the NaN-filled parameters stay
    for name in ("con_friction",):
        getattr(d, name).fill_(np.nan)
    for part in solver.layout.partitions:
        constraint_rows.make_rows(solver.views[part.index], params=False)
    assert np.isnan(d.con_friction.numpy()[0, 0]).all()
