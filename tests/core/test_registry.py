"""The core's entry-point loader: sorting, de-duplication, conflicts, failures, strict mode, opt-outs."""

import os
import subprocess
import sys
import textwrap

import polyphys
import pytest
from polyphys.errors import OptionError, PluginConflictError, PluginLoadError, PluginLoadWarning
from polyphys.registry import reset_registry


def _fake_dist(root, dist, version, eps, modules):
    """Write an installed-distribution stub (dist-info with entry points) and its modules."""
    info = root / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text("[polyphys]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()))
    for name, src in modules.items():
        (root / f"{name}.py").write_text(textwrap.dedent(src))


SOLVER_MOD = """
import polyphys
from polyphys.specs import SolverSpec

@polyphys.hookimpl
def polyphys_solvers():
    return [SolverSpec(name="{name}", target="{mod}:Solver")]
"""


@pytest.fixture
def fresh(monkeypatch):
    def make(*paths):
        for p in paths:
            monkeypatch.syspath_prepend(str(p))
        return reset_registry()

    yield make
    for var in ("POLYPHYS_STRICT_PLUGINS", "POLYPHYS_DISABLE_PLUGINS", "POLYPHYS_DISABLE_PLUGIN_AUTOLOAD"):
        monkeypatch.delenv(var, raising=False)
    reset_registry()


def test_same_name_from_two_distributions_is_an_error_naming_both(tmp_path, fresh):
    _fake_dist(tmp_path, "fake-a", "1.0", {"dupa": "fake_mod_a"},
               {"fake_mod_a": SOLVER_MOD.format(name="dup", mod="fake_mod_a")})
    _fake_dist(tmp_path, "fake-b", "2.0", {"dupb": "fake_mod_b"},
               {"fake_mod_b": SOLVER_MOD.format(name="dup", mod="fake_mod_b")})
    reg = fresh(tmp_path)
    with pytest.raises(PluginConflictError, match=r"fake-a 1.0.*fake-b 2.0"):
        reg.all("solver")


def test_same_distribution_and_target_twice_counts_once(tmp_path, fresh):
    a, b = tmp_path / "site1", tmp_path / "site2"
    mod = {"fake_mod_c": SOLVER_MOD.format(name="once", mod="fake_mod_c")}
    _fake_dist(a, "fake-c", "1.0", {"once": "fake_mod_c"}, mod)
    _fake_dist(b, "fake-c", "1.0", {"once": "fake_mod_c"}, {})   # stray metadata, same target
    reg = fresh(a, b)
    names = [r.name for r in reg.all("solver")]
    assert names.count("once") == 1


def test_broken_plugin_warns_with_details_or_raises_in_strict_mode(tmp_path, fresh, monkeypatch):
    _fake_dist(tmp_path, "fake-broken", "0.3", {"broken": "fake_mod_broken"},
               {"fake_mod_broken": "raise RuntimeError('boom at import')\n"})
    reg = fresh(tmp_path)
    with pytest.warns(PluginLoadWarning, match=r"'broken' = 'fake_mod_broken'.*fake-broken 0.3.*boom at import"):
        solvers = [r.name for r in reg.all("solver")]
    assert "kinematic" in solvers                      # one broken plugin does not kill the others
    monkeypatch.setenv("POLYPHYS_STRICT_PLUGINS", "1")
    reg = fresh()
    with pytest.raises(PluginLoadError, match="fake-broken 0.3.*boom at import"):
        reg.all("solver")


def test_entry_points_load_in_sorted_order(tmp_path, fresh):
    _fake_dist(tmp_path, "fake-z", "1.0", {"zz": "fake_mod_z"}, {"fake_mod_z": SOLVER_MOD.format(name="zz", mod="fake_mod_z")})
    _fake_dist(tmp_path, "fake-y", "1.0", {"aa": "fake_mod_y"}, {"fake_mod_y": SOLVER_MOD.format(name="aa", mod="fake_mod_y")})
    reg = fresh(tmp_path)
    names = [r.name for r in reg.all("solver")]
    assert names == sorted(names)
    eps = [p.entry_point for p in reg._providers.values()]
    assert eps == sorted(eps)


def test_disable_plugins_and_autoload(fresh, monkeypatch):
    monkeypatch.setenv("POLYPHYS_DISABLE_PLUGINS", "kinematic")
    reg = fresh()
    assert "kinematic" not in [r.name for r in reg.all("solver")]
    monkeypatch.delenv("POLYPHYS_DISABLE_PLUGINS")
    monkeypatch.setenv("POLYPHYS_DISABLE_PLUGIN_AUTOLOAD", "1")
    reg = fresh()
    assert reg.all("solver") == []
    with pytest.raises(OptionError, match="autoloading is disabled"):
        reg.get("solver", "kinematic")
    with pytest.raises(AttributeError, match="no material or family 'Kinematic'"):
        polyphys.materials.Kinematic


def test_scene_plugins_restricts(fresh):
    fresh()
    with pytest.raises(OptionError, match="unknown solver 'kinematic'"):
        polyphys.Scene(plugins=["pbd"], kinematic=None)
    # a name that no installed plugin has is an error naming it (not an empty scene that later
    # reports "known materials: []")
    with pytest.raises(OptionError, match=r"unknown plugin name\(s\) \['nothing'\]; installed plugins: .*'kinematic'"):
        polyphys.Scene(plugins=["nothing"])
    sc = polyphys.Scene(plugins=["kinematic"])
    sc.add_entity(polyphys.morphs.Box(), material=polyphys.materials.Kinematic())


def test_register_in_process_and_name_clash(fresh):
    fresh()

    class P:
        @polyphys.hookimpl
        def polyphys_solvers(self):
            return [polyphys.SolverSpec(name="inproc", target="x.y:Z")]

    p = P()
    polyphys.register(p, name="inproc")
    rec = polyphys.registry().get("solver", "inproc")
    assert rec.provider.distribution == "<in-process>"
    with pytest.raises(PluginConflictError, match="already registered"):
        polyphys.register(P(), name="inproc")
    polyphys.unregister(p)
    with pytest.raises(OptionError, match="unknown solver 'inproc'"):
        polyphys.registry().get("solver", "inproc")


def test_hook_returning_wrong_type_is_rejected(fresh):
    fresh()

    class Bad:
        @polyphys.hookimpl
        def polyphys_solvers(self):
            return ["not a spec"]

    b = Bad()
    polyphys.register(b, name="bad")
    try:
        with pytest.raises(PluginLoadError, match="returned str.*SolverSpec"):
            polyphys.registry().all("solver")
    finally:
        polyphys.unregister(b)


@pytest.mark.parametrize("couples", [("RigidView",), ("RigidView", "ParticelView"), "RigidView", (1, 2)])
def test_coupler_couples_are_validated_at_registration(fresh, couples):
    fresh()

    class BadCoupler:
        @polyphys.hookimpl
        def polyphys_couplers(self):
            return [polyphys.CouplerSpec(name="badc", target="a.b:C", couples=couples)]

    b = BadCoupler()
    polyphys.register(b, name="badc")
    try:
        with pytest.raises(PluginLoadError, match=r"coupler 'badc'.*couples = .*expected two view protocol names.*"
                                                  r"'ParticleView'.*'RigidView'"):
            polyphys.registry().all("coupler")
    finally:
        polyphys.unregister(b)


def test_spec_validation():
    with pytest.raises(ValueError, match="must match"):
        polyphys.SolverSpec(name="Bad Name", target="a.b:C")
    with pytest.raises(ValueError, match="package.module:Attribute"):
        polyphys.SolverSpec(name="ok", target="a.b.C")
    with pytest.raises(ValueError, match="unknown value"):
        polyphys.Capabilities(devices=("tpu",))


def _run_py(code, **env):
    e = dict(os.environ)
    e.update(env)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_import_polyphys_is_cheap():
    code = ("import sys, polyphys; "
            "print(sorted({m.split('.')[0] for m in sys.modules if m.startswith(('warp', 'trimesh', 'scipy'))}),"
            " sorted(m for m in sys.modules if m.startswith(('polyphys.plugins', 'polyphys.couplers', 'polyphys.importers'))))")
    assert _run_py(code) == "[] []"


def test_listing_plugins_imports_no_warp_and_no_solver_module():
    code = ("import sys, polyphys; rows = polyphys.registry().plugin_rows(); "
            "print(len(rows) > 0, any(m.startswith('warp') for m in sys.modules), "
            "any(m.endswith(('.solver', '.kernels')) for m in sys.modules if m.startswith('polyphys')))")
    assert _run_py(code) == "True False False"


def test_core_imports_no_plugin_module():
    """Import every core module with autoload off: none of plugins/, couplers/, importers/ loads."""
    code = textwrap.dedent("""
        import importlib, pathlib, sys, polyphys
        root = pathlib.Path(polyphys.__file__).parent
        skip = {'plugins', 'couplers', 'importers'}          # the wheel nests them under polyphys/
        for f in sorted(root.rglob('*.py')):
            rel = f.relative_to(root).with_suffix('')
            if rel.parts[0] in skip or rel.name == '__main__':
                continue
            parts = rel.parts[:-1] if rel.name == '__init__' else rel.parts
            importlib.import_module('.'.join(('polyphys',) + parts))
        bad = [m for m in sys.modules if m.startswith(('polyphys.plugins.', 'polyphys.couplers.', 'polyphys.importers.'))]
        print(bad)
    """)
    assert _run_py(code, POLYPHYS_DISABLE_PLUGIN_AUTOLOAD="1") == "[]"


def test_core_source_has_no_plugin_import():
    import pathlib
    import re

    core = pathlib.Path(polyphys.__file__).parent
    pat = re.compile(r"^\s*(from|import)\s+polyphys\.(plugins|couplers|importers)", re.M)
    nested = {"plugins", "couplers", "importers"}        # an installed wheel nests them under polyphys/
    offenders = [str(p) for p in core.rglob("*.py")
                 if p.relative_to(core).parts[0] not in nested and pat.search(p.read_text())]
    assert offenders == []
