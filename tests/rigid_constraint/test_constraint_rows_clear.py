"""make_rows' clear of the last build's rows (kernels/constraint_rows.cpp: a contact row records its two
links and the next build zeroes their dof chains only while the chains' column span is the row's span).

A pile of boxes falls and tumbles (contacts appear, vanish and change rows between steps; generic sizes,
poses and velocities); every 10 steps its rows must equal, bit for bit, the rows the same build makes from rows that never
held anything (J zero, spans empty, no links recorded), with every entry outside a row's span and every
padding row exactly zero, and with the nonzero segments the builds recorded (efc_seg) equal to a scan of J."""

import numpy as np
from test_constraint_row_segments import scan_segments

PILE = """<mujoco>
  <option timestep="0.004"/>
  <worldbody>
    <geom type="plane" size="5 5 0.1"/>
{bodies}
  </worldbody>
</mujoco>
"""


def _xml():
    rng = np.random.default_rng(7)
    out = []
    for i in range(6):
        x, y = rng.uniform(-0.12, 0.12, 2)
        a, b, c = rng.uniform(0, 90, 3)
        sx, sy, sz = rng.uniform(0.05, 0.11, 3)
        out.append(f'    <body pos="{x:.3f} {y:.3f} {0.12 + 0.17 * i:.3f}" euler="{a:.1f} {b:.1f} {c:.1f}"><freejoint/>'
                   f'<geom type="box" size="{sx:.3f} {sy:.3f} {sz:.3f}" mass="{0.5 + 0.2 * i}"/></body>')
    return PILE.format(bodies="\n".join(out))


def _scene(path, n):
    import polyphys
    from polyphys import morphs
    from polyphys.plugins.rigid import RigidOptions
    from polyphys.plugins.rigid.materials import Rigid

    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.004, precision="64", graph_capture=False),
                           rigid=RigidOptions.mujoco(integrator="implicitfast", friction_cone="pyramidal",
                                                     constraint_islands=False))
    ent = scene.add_entity(morphs.MJCF(file=path), Rigid())
    scene.build(n_envs=n)
    return scene, ent


def test_rows_equal_a_fresh_build(tmp_path):
    from polyphys.plugins.rigid import constraint_rows

    path = tmp_path / "pile.xml"
    path.write_text(_xml())
    n = 2
    scene, ent = _scene(str(path), n)
    solver = scene.solver("rigid")
    d = solver.data
    qv = np.zeros((n, solver.n_dofs))
    qv[1] = 0.4 * np.sin(np.arange(qv.shape[1]))
    ent.set_dofs_velocity(qv)
    nv = solver.n_dofs
    checked = 0
    for step in range(160):
        scene.step()
        if step % 10 != 9:
            continue
        # the rows the step built over the scene's history ...
        na, Ja, Sa = d.nefc.numpy().copy(), d.efc_J.numpy().copy(), d.efc_span.numpy().copy()     # CPU: numpy() is a view
        # the segments the build recorded (efc_seg) are the scan's of its rows (test_constraint_row_segments.py)
        Ga = d.efc_seg.numpy()
        for e in range(n):
            np.testing.assert_array_equal(Ga[e, :na[e]], scan_segments(Ja[e], Sa[e], int(na[e]), nv))
        # ... and the same build (the substep's kinematics and contacts are still in place) from rows
        # that never held anything: J zero, spans empty, no links recorded
        d.efc_J.zero_()
        sp = d.efc_span.numpy()
        sp[..., 0], sp[..., 1] = nv, 0
        d.efc_span.assign(sp)
        d.efc_chain.fill_(-2)
        d.nefc.zero_()
        for part in solver.layout.partitions:
            constraint_rows.make_rows(solver.views[part.index])
        nb, Jb, Sb = d.nefc.numpy(), d.efc_J.numpy(), d.efc_span.numpy()
        assert np.array_equal(na, nb)
        for e in range(n):
            r = int(na[e])
            assert np.array_equal(Ja[e, :r].view(np.uint64), Jb[e, :r].view(np.uint64)), (step, e)
            assert np.array_equal(Sa[e, :r], Sb[e, :r])
            assert not Ja[e, r:].any(), "padding rows must be zero"
            cols = np.arange(nv)
            outside = (cols[None] < Sa[e, :r, :1]) | (cols[None] >= Sa[e, :r, 1:])
            assert not Ja[e, :r][outside].any(), "entries outside a row's span must be zero"
        wide = (Sa[:, :, 1] - Sa[:, :, 0] > 6) & (np.arange(Sa.shape[1])[None] < na[:, None])
        checked += int(wide.sum())
    assert checked > 50           # box-box rows (spans wider than one box's 6 dofs) were among the checked
