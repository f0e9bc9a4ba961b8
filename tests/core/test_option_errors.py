"""Every public options, material and morph class refuses bad keywords and values with an OptionError
that names the class, the field, the value and what is allowed (polyphys.options.CheckedMeta).

Parametrized over the registry's materials and solver/coupler options types, so a third party's
classes (tests/thirdparty, in the thirdparty tox env) are covered as well as the built-in ones.
"""

from __future__ import annotations

import attrs
import numpy as np
import polyphys
import pytest
from polyphys import morphs
from polyphys.errors import OptionError
from polyphys.options import init_fields
from polyphys.registry import registry
from polyphys.specs import load_target

TRI = dict(vertices=[[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], faces=[[0, 1, 2]])


def _public_classes() -> list:
    out = [polyphys.SimOptions, polyphys.materials.Surface]
    out += [c for c in vars(morphs).values()
            if isinstance(c, type) and issubclass(c, morphs.Morph) and attrs.has(c)]
    reg = registry()
    out += [r.load() for r in reg.all("material")]
    out += [load_target(r.spec.options) for kind in ("solver", "coupler") for r in reg.all(kind) if r.spec.options]
    return sorted(set(out), key=lambda c: (c.__module__, c.__qualname__))


CLASSES = _public_classes()


def _required(cls, tmp_path) -> dict:
    """Keyword arguments that make a valid instance of ``cls`` (most need none)."""
    if cls is morphs.Mesh:
        return dict(TRI)
    if issubclass(cls, morphs.FileMorph):
        path = tmp_path / ("m.urdf" if cls is morphs.URDF else "m.xml")
        path.write_text("<robot name='r'><link name='a'/></robot>" if cls is morphs.URDF
                        else "<mujoco><worldbody/></mujoco>")
        return {"file": str(path)}
    if cls is morphs.Description:
        return {"description": polyphys.describe(morphs.Box())}
    return {}


def _ids(c):
    return f"{c.__module__.rsplit('.', 1)[-1]}.{c.__qualname__}"


def test_the_registry_contributes_classes():
    names = {c.__qualname__ for c in CLASSES}
    assert {"SimOptions", "Box", "Sphere", "MJCF", "Surface"} <= names
    assert len(CLASSES) >= 20


@pytest.mark.parametrize("cls", CLASSES, ids=_ids)
def test_unknown_keyword_suggests_the_nearest_field(cls, tmp_path):
    base = _required(cls, tmp_path)
    cls(**base)                                     # valid as given
    fields = init_fields(cls)
    for field in fields:
        if len(field) < 4:
            continue
        typo = field + field[-1]                       # one letter too many
        with pytest.raises(OptionError) as err:
            cls(**base, **{typo: 1})
        msg = str(err.value)
        assert f"unknown field {typo!r} of {cls.__name__}" in msg
        assert f"did you mean {field!r}?" in msg
        assert str(sorted(fields)) in msg
        break
    with pytest.raises(OptionError) as err:
        cls(**base, zzqqxx_unrelated=1)
    msg = str(err.value)
    assert "did you mean" not in msg and f"allowed fields: {sorted(fields)}" in msg


@pytest.mark.parametrize("cls", CLASSES, ids=_ids)
def test_positional_arguments_are_refused_with_the_fields(cls, tmp_path):
    with pytest.raises(OptionError, match="keyword arguments only; allowed fields"):
        cls(1.0, **_required(cls, tmp_path))


@pytest.mark.parametrize("cls", CLASSES, ids=_ids)
@pytest.mark.parametrize("bad", [object(), "text", [1, 2, 3, 4, 5, 6, 7, 8, 9]], ids=["object", "str", "list9"])
def test_a_value_of_the_wrong_type_names_the_field(cls, bad, tmp_path):
    """Each field either converts the value or refuses it with an OptionError naming
    ``Class.field`` — never a bare TypeError/ValueError from attrs or a converter."""
    base = _required(cls, tmp_path)
    for field in init_fields(cls):
        if field in base or (cls is morphs.Description and field == "description"):
            continue
        try:
            cls(**{**base, field: bad})
        except OptionError as exc:
            assert field in str(exc), f"{cls.__name__}.{field}: {exc}"
        else:
            if (cls.__qualname__, field, type(bad)) in TAKES_ANY:
                continue
            pytest.fail(f"{cls.__name__}.{field} accepted {bad!r}")


# fields for which such a value is meaningful: URDF(package_dirs="folder") is one folder,
# Tool(target="mpm") one solver name (checked against the scene at build)
TAKES_ANY = {("URDF", "package_dirs", str), ("Tool", "target", str)}


@pytest.mark.parametrize("call,expected", [
    (lambda: polyphys.SimOptions(substep=2), "did you mean 'substeps'?"),
    (lambda: polyphys.materials.Rigid(density=500), "did you mean 'rho'?"),
    (lambda: morphs.Sphere(size=1), "did you mean 'radius'?"),
    (lambda: morphs.Box(size=(1, 2)), "Box.size = (1, 2): expected 3 numbers"),
    (lambda: polyphys.materials.SPH.Liquid(densty=1000), "did you mean 'rho'?"),
])
def test_the_issue_examples(call, expected):
    with pytest.raises(OptionError) as err:
        call()
    assert expected in str(err.value)


def test_attrs_type_checks_become_option_errors():
    from polyphys.plugins.rigid.options import RigidOptions
    from polyphys.plugins.sph.options import SPHOptions

    with pytest.raises(OptionError, match=r"SPHOptions.box_walls = 'yes': expected True or False, got str"):
        SPHOptions(box_walls="yes")
    with pytest.raises(OptionError, match=r"RigidOptions.mujoco_compatible = 3: expected True or False, got int"):
        RigidOptions(mujoco_compatible=3)


def test_scene_file_keys_get_the_same_suggestion(tmp_path):
    from polyphys import run as runmod

    path = tmp_path / "s.toml"
    path.write_text('[sim]\nsubstep = 2\n[[entities]]\nmorph = { type = "Box" }\nmaterial = { type = "Kinematic" }\n')
    with pytest.raises(OptionError, match=r"sim.substep = 2: unknown field 'substep' of SimOptions; did you mean "
                                          r"'substeps'\?"):
        runmod.parse_file(str(path))


def test_sensor_keywords_get_a_suggestion():
    scene = polyphys.Scene()
    box = scene.add_entity(morphs.Box(pos=(0, 0, 1)), material=polyphys.materials.Rigid())
    with pytest.raises(OptionError, match=r"'nosie': did you mean 'noise'\?.*allowed arguments"):
        scene.add_sensor("imu", box, nosie=0.1)


def test_color_is_validated():
    s = polyphys.materials.Surface(color=(1, 0, 0))
    assert s.color == (1.0, 0.0, 0.0, 1.0)
    with pytest.raises(OptionError, match=r"Surface.color = \(2, 0, 0\): expected 3 or 4 numbers"):
        polyphys.materials.Surface(color=(2, 0, 0))
    assert np.allclose(polyphys.materials.Surface().color, (0.6, 0.6, 0.6, 1.0))
