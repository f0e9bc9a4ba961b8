"""The typed containers of the rigid solver (plugins/rigid/types.py) document every field: the
"Fields" list of the Model, Data and Option docstrings names exactly the struct's fields, in order,
each with a shape (or dtype) and a meaning; the per-env Model fields are the ones whose documented
shape starts with n; and every code the kernels branch on is an IntEnum of codes.py."""

import enum
import re

import pytest

types = pytest.importorskip("polyphys.plugins.rigid.types")

LINE = re.compile(r"^ {8}(\w+): (.+?): (.+)$")


def _documented(doc: str) -> list:
    return [(m.group(1), m.group(2)) for m in (LINE.match(ln) for ln in doc.splitlines()) if m]


@pytest.mark.parametrize("precision", ["32", "64"])
@pytest.mark.parametrize("kind", ["MODEL", "DATA", "OPTION"])
def test_docstring_lists_every_field(kind, precision):
    struct = getattr(types, kind)[precision]
    doc = _documented(struct.__doc__)
    names = [n for n, _ in doc]
    assert names == list(struct.vars), (sorted(set(struct.vars) - set(names)), sorted(set(names) - set(struct.vars)))
    for name, shape in doc:
        assert shape.strip(), name


def test_per_env_model_fields_are_the_batched_ones():
    doc = dict(_documented(types.MODEL["64"].__doc__))
    batched = {n for n, shape in doc.items() if shape.startswith("(n,")}
    assert batched == set(types.PER_ENV_MODEL_FIELDS)


def test_data_fields_are_batched():
    for name, shape in _documented(types.DATA["64"].__doc__):
        assert shape.startswith("(n,") or shape.startswith("(n)"), (name, shape)


def test_codes_are_intenums_defined_once():
    from polyphys.plugins.rigid import codes

    for prefix, e in codes.NATIVE_CODES.items():
        assert issubclass(e, enum.IntEnum), prefix
        assert len({int(m) for m in e}) == len(e), prefix          # distinct values
    from polyphys.description import GeomType, JointType
    assert codes.JointType is JointType and codes.GeomType is GeomType
