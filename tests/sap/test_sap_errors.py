"""SAP coupler: bad input gives a clear polyphys error naming the field, the value and what is allowed."""

import math

import polyphys
import pytest
from polyphys import morphs as M
from polyphys.couplers.sap.options import SapOptions
from polyphys.errors import BuildError, CapabilityError, OptionError
from polyphys.options import SimOptions
from polyphys.plugins.kinematic.materials import Kinematic
from polyphys.plugins.rigid.materials import Rigid


@pytest.mark.parametrize("field, value, words", [
    ("point_stiffness", 0.0, "must be a number > 0"),
    ("point_stiffness", -1.0e4, "must be a number > 0"),
    ("point_stiffness", math.nan, "must be a number > 0"),
    ("geom_point_stiffness", {0: 0.0}, "must be a number > 0"),
    ("geom_point_stiffness", {-1: 1.0e4}, "global geom index"),
    ("dissipation_time_constant", -0.1, ">= 0"),
    ("atol", 0.0, "tolerance must be a finite number > 0"),
    ("rtol", -1e-6, "tolerance must be a finite number > 0"),
    ("ls_tolerance", 0.0, "tolerance must be a finite number > 0"),
    ("near_rigid_threshold", 0.0, "> 0"),
    ("sigma", -1.0, "> 0"),
    ("max_iterations", 0, ""),
    ("friction_combination", "max", "allowed values"),
    ("line_search", "newton", "allowed values"),
    ("limit_stiffness", 0.0, "must be a number > 0"),
    ("limit_stiffness", math.nan, "must be a number > 0"),
    ("equality_stiffness", -5.0, "must be a number > 0"),
    ("limit_dissipation_time_constant", 0.0, "None (the substep h) or a finite number > 0"),
    ("equality_dissipation_time_constant", -0.01, "None (the substep h) or a finite number > 0"),
    ("equality_dissipation_time_constant", math.inf, "None (the substep h) or a finite number > 0"),
    ("constraint_near_rigid_threshold", 0.0, "> 0"),
    ("frictionloss_sigma", -1e-3, "> 0"),
])
def test_bad_options(field, value, words):
    with pytest.raises(OptionError, match=field) as e:
        SapOptions(**{field: value})
    assert words in str(e.value)


def _scene(options=None):
    return polyphys.Scene(sim=SimOptions(dt=0.01, substeps=2), coupler=options or SapOptions())


def test_unknown_geom_index_at_build():
    scene = _scene(SapOptions(geom_point_stiffness={7: 1.0e5}))
    scene.add_entity(morph=M.Plane(), material=Rigid())
    scene.add_entity(morph=M.Box(size=(0.1, 0.1, 0.1), pos=(0, 0, 0.2)), material=Rigid())
    with pytest.raises(OptionError, match=r"geom_point_stiffness: geom 7 does not exist .* 2 geoms"):
        scene.build()


def test_sap_without_a_rigid_dynamics_solver():
    """A kinematic entity exposes RigidView but not RigidDynamicsView: nothing for SAP to couple."""
    scene = _scene()
    scene.add_entity(morph=M.Box(size=(0.1, 0.1, 0.1), pos=(0, 0, 0.2)), material=Kinematic())
    with pytest.raises(BuildError, match=r"coupler 'sap' found no solver pair exposing \('RigidDynamicsView'"):
        scene.build()


def test_joint_limits_are_handed_over(tmp_path):
    """Limit, frictionloss and equality rows join SAP's problem (docs/sap.md, "Which rows SAP takes
    over"): the model builds and the hand-off exposes its rows' arrays."""
    xml = tmp_path / "hinge.xml"
    xml.write_text("""<mujoco><worldbody><geom type="plane" size="1 1 .1"/>
      <body pos="0.1 0.2 0.5"><joint type="hinge" axis="0 1 0" range="-30 30" limited="true" frictionloss="0.1"/>
      <geom type="box" size=".1 .05 .02" pos="0.1 0 0"/></body></worldbody></mujoco>""")
    scene = _scene()
    scene.add_entity(morph=M.MJCF(file=str(xml)), material=Rigid())
    scene.build()
    rigid = next(s for s in scene.solvers if s.name == "rigid")
    dyn = rigid.rigid_dynamics(scene.layout.partitions[0])
    assert dyn.row_type is not None and dyn.n_rows is not None and dyn.row_frictionloss is not None


def test_condim_above_3_is_refused(tmp_path):
    xml = tmp_path / "torsion.xml"
    xml.write_text("""<mujoco><worldbody><geom type="plane" size="1 1 .1"/>
      <body pos="0.1 0.2 0.5"><freejoint/><geom type="sphere" size=".05" condim="4"/></body></worldbody></mujoco>""")
    scene = _scene()
    scene.add_entity(morph=M.MJCF(file=str(xml)), material=Rigid())
    with pytest.raises(CapabilityError, match="condim 4"):
        scene.build()


def test_collision_off_is_refused():
    scene = _scene()
    scene.add_entity(morph=M.Box(size=(0.1, 0.1, 0.1), pos=(0, 0, 0.2), collision=False), material=Rigid())
    with pytest.raises(CapabilityError, match="no contacts to hand over|no contact data"):
        scene.build()


def test_cloth_in_a_sap_scene_is_refused():
    """A surface-mesh solver without DeformableDynamicsView (PBD cloth) and the SAP coupler: the
    coupler would not see its bodies, so it raises rather than letting them pass through rigid ones."""
    pbd = pytest.importorskip("polyphys.plugins.pbd")
    from polyphys.plugins.pbd.materials import Cloth

    scene = _scene()
    scene.add_entity(morph=M.Plane(), material=Rigid())
    scene.add_entity(pbd.grid_cloth(size=(0.2, 0.2), res=(5, 5)), Cloth())
    with pytest.raises(CapabilityError, match="DeformableDynamicsView"):
        scene.build()
