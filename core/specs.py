"""Inert spec records returned by plugin hooks.

A hook returns these records, never live objects: listing plugins imports no Warp module and
compiles no kernel. ``target`` ("package.module:Class") is imported only when a scene uses it.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

import attrs

DEVICES = ("cpu", "cuda")
PRECISIONS = ("32", "64")
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def _frozenset_of(allowed):
    def convert(value):
        if isinstance(value, str):
            value = (value,)
        out = frozenset(str(v) for v in value)
        bad = out - set(allowed)
        if bad:
            raise ValueError(f"unknown value(s) {sorted(bad)}; allowed: {list(allowed)}")
        return out

    return convert


@attrs.frozen(kw_only=True)
class Capabilities:
    """What a plugin promises. Every ``True`` here is exercised by the contract test.

    batch: one instance advances n_envs >= 1 environments (n_envs > 0 needs it).
    reset_envs: ``reset(envs_idx)`` touches only those envs (bit-exact isolation).
    checkpoint: ``dump()``/``load()`` continue bit-exactly on CPU.
    differentiable: gradients flow through the step (Warp tape).
    devices: the devices a scene may be built on: the plugin's kernels are written for them and
        compile for them ("cpu" by running; "cuda" by an NVRTC compile of every kernel, which needs
        no GPU: tests/core/test_contract.py).
    tested_devices: the devices on which the contract test and the plugin's tests have actually
        run (a subset of ``devices``; building on a declared but untested device warns).
    precisions: "32" and/or "64" (floating-point width of the state).
    deterministic: devices on which repeated runs are bit-identical, a subset of ``tested_devices``
        (the contract test's bit-exact checks run on them; CUDA float atomics are not).
    notes: free-form text shown by ``polyphys plugins``.
    """

    batch: bool = False
    reset_envs: bool = False
    checkpoint: bool = False
    differentiable: bool = False
    devices: frozenset = attrs.field(default=frozenset({"cpu"}), converter=_frozenset_of(DEVICES))
    tested_devices: frozenset = attrs.field(default=frozenset({"cpu"}), converter=_frozenset_of(DEVICES))
    precisions: frozenset = attrs.field(default=frozenset({"32"}), converter=_frozenset_of(PRECISIONS))
    deterministic: frozenset = attrs.field(default=frozenset({"cpu"}), converter=_frozenset_of(DEVICES))
    notes: str = ""

    def __attrs_post_init__(self):
        if not self.tested_devices <= self.devices:
            raise ValueError(f"tested_devices {sorted(self.tested_devices)} must be among devices {sorted(self.devices)}")
        if not self.deterministic <= self.tested_devices:
            raise ValueError(f"deterministic {sorted(self.deterministic)} must be among the tested devices "
                             f"{sorted(self.tested_devices)}: determinism is a tested claim")

    def to_dict(self) -> dict:
        return {
            "batch": self.batch,
            "reset_envs": self.reset_envs,
            "checkpoint": self.checkpoint,
            "differentiable": self.differentiable,
            "devices": sorted(self.devices),
            "tested_devices": sorted(self.tested_devices),
            "precisions": sorted(self.precisions),
            "deterministic": sorted(self.deterministic),
        }

    @staticmethod
    def intersect(caps: list[Capabilities]) -> Capabilities:
        """The capabilities of a composition: what every part supports."""
        if not caps:
            return Capabilities(batch=True, reset_envs=True, checkpoint=True, differentiable=True,
                                devices=DEVICES, tested_devices=DEVICES, precisions=PRECISIONS,
                                deterministic=DEVICES)
        return Capabilities(
            batch=all(c.batch for c in caps),
            reset_envs=all(c.reset_envs for c in caps),
            checkpoint=all(c.checkpoint for c in caps),
            differentiable=all(c.differentiable for c in caps),
            devices=frozenset.intersection(*[c.devices for c in caps]),
            tested_devices=frozenset.intersection(*[c.tested_devices for c in caps]),
            precisions=frozenset.intersection(*[c.precisions for c in caps]),
            deterministic=frozenset.intersection(*[c.deterministic for c in caps]),
        )


def _check_name(instance, attribute, value):
    if not _NAME.match(value):
        raise ValueError(f"{attribute.name} {value!r} must match {_NAME.pattern}")


def _check_target(instance, attribute, value):
    if value is None:
        return
    if not isinstance(value, str) or value.count(":") != 1:
        raise ValueError(f"{attribute.name} {value!r} must be 'package.module:Attribute'")


def load_target(target: str) -> Any:
    """Import ``"pkg.mod:Attr"`` and return the attribute."""
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    obj = module
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


@attrs.frozen(kw_only=True)
class ContractScene:
    """A small scene the contract test builds to exercise a solver's capabilities.

    ``factory`` ("pkg.mod:function") takes no arguments and returns ``(entities, options, drive)``:
    ``entities`` a list of ``(morph, material, add_entity kwargs)``, ``options`` the solver's options
    (or None), ``drive`` None or ``drive(scene, rng)`` called after build to give every env a
    different state (velocities, targets) through the public entity API, so that env isolation is
    visible. A fourth element, a dict of ``SimOptions`` keyword arguments (dt, substeps, ...), may
    follow (default dt=0.01, substeps=2). ``steps`` is how many steps each check runs.
    """

    factory: str = attrs.field(validator=_check_target)
    steps: int = 20


@attrs.frozen(kw_only=True)
class SolverSpec:
    name: str = attrs.field(validator=_check_name)
    target: str = attrs.field(validator=_check_target)
    capabilities: Capabilities = Capabilities()
    options: str | None = attrs.field(default=None, validator=_check_target)
    contract: ContractScene | None = None
    # solvers run in ascending (order, name): deterministic, independent of registration order
    order: int = 100
    api_version: int = 1
    description: str = ""


@attrs.frozen(kw_only=True)
class CouplerSpec:
    name: str = attrs.field(validator=_check_name)
    target: str = attrs.field(validator=_check_target)
    capabilities: Capabilities = Capabilities()
    options: str | None = attrs.field(default=None, validator=_check_target)
    # view protocol names ("RigidView", "ParticleView", ...) of the two sides it couples
    couples: tuple = ()
    # a default coupler is attached automatically to every solver pair it can couple
    default: bool = False
    priority: int = 100
    # also couple a solver with itself when it exposes both views (SAP: rigid–rigid contact of one
    # rigid solver); the pair is (solver, solver)
    self_pairs: bool = False
    api_version: int = 1
    description: str = ""


@attrs.frozen(kw_only=True)
class ImporterSpec:
    name: str = attrs.field(validator=_check_name)
    target: str = attrs.field(validator=_check_target)
    morphs: tuple = ()       # file-morph class names it reads, e.g. ("MJCF",)
    suffixes: tuple = ()     # file suffixes, e.g. (".xml",)
    capabilities: Capabilities = Capabilities(batch=True, reset_envs=True, checkpoint=True,
                                              devices=DEVICES, precisions=PRECISIONS)
    api_version: int = 1
    description: str = ""


@attrs.frozen(kw_only=True)
class SensorSpec:
    name: str = attrs.field(validator=_check_name)
    target: str = attrs.field(validator=_check_target)
    capabilities: Capabilities = Capabilities()
    api_version: int = 1
    description: str = ""


@attrs.frozen(kw_only=True)
class MaterialSpec:
    """A material class a solver owns. Reachable as ``polyphys.materials.<name>`` or, with a
    family, ``polyphys.materials.<family>.<name>``."""

    name: str
    target: str = attrs.field(validator=_check_target)
    solver: str = attrs.field(validator=_check_name)
    family: str | None = None
    api_version: int = 1


SPEC_KINDS = {
    "solver": SolverSpec,
    "coupler": CouplerSpec,
    "importer": ImporterSpec,
    "sensor": SensorSpec,
    "material": MaterialSpec,
}
