"""MJCF <sensor> import (importers/mjcf/sensors.py): supported types become polyphys sensors listed
in ``entity.sensors`` by name, noise and cutoff map onto the measurement model, and what is not
supported is named in the importer's one warning."""

import warnings

import numpy as np
import polyphys
import pytest
from polyphys import morphs
from polyphys.errors import PolyphysWarning
from polyphys.materials import Rigid

XML = """<mujoco>
  <option magnetic="0.1 0.2 -0.4"/>
  <worldbody>
    <geom type="plane" size="2 2 0.1"/>
    <body name="base" pos="0.1 0.2 0.5" euler="10 20 30">
      <freejoint/>
      <geom type="box" size="0.1 0.08 0.05" mass="1"/>
      <site name="s0" pos="0.01 0.02 0.03" euler="5 -10 15" type="box" size="0.12 0.1 0.07"/>
      <camera name="cam"/>
      <body name="link1" pos="0.1 0 0">
        <joint name="hinge" type="hinge" axis="0 1 0" range="-1 1"/>
        <geom name="g1" type="capsule" fromto="0 0 0 0.2 0 0" size="0.02" mass="0.3"/>
        <site name="s1" pos="0.2 0 0"/>
      </body>
    </body>
  </worldbody>
  <actuator><motor name="m" joint="hinge"/></actuator>
  <tendon><fixed name="t"><joint joint="hinge" coef="1"/></fixed></tendon>
  <sensor>
    <accelerometer name="acc" site="s0" noise="0.05" cutoff="30"/>
    <gyro site="s0"/>
    <magnetometer name="mag" site="s0"/>
    <touch name="touch" site="s0" cutoff="100"/>
    <force name="f" site="s1"/><torque name="t" site="s1"/>
    <framequat name="fq" objtype="site" objname="s1" reftype="site" refname="s0" noise="0.01" cutoff="1"/>
    <framepos name="com" objtype="body" objname="link1"/>
    <jointpos name="q" joint="hinge"/><jointvel name="qd" joint="hinge"/>
    <actuatorfrc name="af" actuator="m"/><jointactuatorfrc name="jaf" joint="hinge"/>
    <subtreecom name="sc" body="base"/>
    <rangefinder name="rf" site="s1"/>
    <tendonpos name="tp" tendon="t"/>
    <framequat name="bodyq" objtype="body" objname="link1"/>
    <framepos name="campos" objtype="camera" objname="cam"/>
    <clock/>
  </sensor>
</mujoco>
"""

SUPPORTED = ["acc", "gyro1", "mag", "touch", "f", "t", "fq", "com", "q", "qd", "af", "jaf", "sc", "rf",
             "cam"]     # the <camera> comes last: a camera sensor (docs/cameras.md)


@pytest.fixture
def model(tmp_path):
    p = tmp_path / "robot.xml"
    p.write_text(XML)
    return str(p)


def test_description_records_and_one_warning(model):
    with pytest.warns(PolyphysWarning) as rec:
        desc = polyphys.describe(model)
    assert [r.name for r in desc.sensors] == SUPPORTED
    kinds = {r.name: (r.kind, r.options) for r in desc.sensors}
    assert kinds["acc"] == ("imu", {"site": "s0", "outputs": ("acc",), "noise": 0.05, "limits": (-30.0, 30.0)})
    assert kinds["mag"][1]["magnetic_field"] == (0.1, 0.2, -0.4)
    assert kinds["touch"][1]["limits"] == (None, 100.0)                # positive datatype: one-sided
    assert "limits" not in kinds["fq"][1] and kinds["fq"][1]["noise"] == 0.01   # no cutoff on quaternions
    assert kinds["fq"][1]["ref_site"] == "s0" and kinds["com"][1] == {"com": "link1", "outputs": ("pos",)}
    msgs = [str(w.message) for w in rec if "sensors not modelled" in str(w.message)]
    assert len(msgs) == 1
    assert kinds["rf"] == ("rangefinder", {"site": "s1"}) and kinds["cam"][0] == "camera"
    for name in ("tp (tendonpos", "bodyq (framequat", "campos (framepos", "clock17 (clock"):
        assert name in msgs[0]


def test_scene_adds_them_to_the_entity_and_they_read(model):
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, precision="64"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        ent = scene.add_entity(morphs.MJCF(file=model), Rigid(), name="robot")
        scene.build(n_envs=2)
    assert list(ent.sensors) == SUPPORTED
    assert ent.sensors["acc"].full_name == "robot/acc" and ent.sensors["acc"].kind == "imu"
    assert ent.sensors["acc"].measurement.noise == 0.05
    ent.set_ctrl([[0.3], [-0.2]])
    scene.step()
    r = scene.read_sensors()
    assert r["robot/q"].value.shape == (2, 1) and r["robot/sc"].value.shape == (2, 3)
    np.testing.assert_allclose(r["robot/af"].value[:, 0], [0.3, -0.2])
    np.testing.assert_allclose(r["robot/jaf"].value[:, 0], [0.3, -0.2])
    assert np.all(np.abs(r["robot/acc"].value) <= 30.0)


def test_without_the_sensor_plugin_the_entity_still_loads(model):
    """Scene restricted to plugins without the sensors: the sensors of the file are named in a warning,
    the entity loads."""
    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01), plugins=["rigid", "mjcf"])
    with pytest.warns(PolyphysWarning, match=r"sensors of its model file not added .*acc \(MJCF accelerometer\)"):
        ent = scene.add_entity(morphs.MJCF(file=model), Rigid())
    assert ent.sensors == {}


@pytest.mark.parametrize("attr, value", [("noise", "abc"), ("noise", "-0.1"), ("cutoff", "nan"), ("cutoff", "")])
def test_a_bad_noise_or_cutoff_is_an_import_error_naming_file_and_line(tmp_path, attr, value):
    from polyphys.errors import ImportError_

    bad = XML.replace('<accelerometer name="acc" site="s0" noise="0.05" cutoff="30"/>',
                      f'<accelerometer name="acc" site="s0" {attr}="{value}"/>')
    p = tmp_path / "bad.xml"
    p.write_text(bad)
    line = bad[:bad.index('<accelerometer name="acc"')].count("\n") + 1
    with pytest.raises(ImportError_, match=rf"bad\.xml:{line}: <accelerometer name='acc'> {attr} ="):
        polyphys.describe(str(p))


def test_a_malformed_magnetic_option_is_an_import_error(tmp_path):
    from polyphys.errors import ImportError_

    p = tmp_path / "bad.xml"
    p.write_text(XML.replace('magnetic="0.1 0.2 -0.4"', 'magnetic="0.1 zz"'))
    with pytest.raises(ImportError_, match=r"bad\.xml:2: <option> magnetic ="):
        polyphys.describe(str(p))
