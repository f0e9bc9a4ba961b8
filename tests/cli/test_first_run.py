"""What a user sees on a first run: with an empty kernel cache, one notice per plugin that compiles and
nothing from Warp (no banner, no ``Module ... took`` lines, no CUDA-driver warning); after that, no
notice at all; ``--verbose`` / ``set_verbosity("verbose")`` show Warp's lines. Timing goals are in
benchmarks/bench_startup.py, not here.

The scene is tiny (a kinematic box: the FK and env-row kernel modules) so that a cold compile stays
a few seconds; each run is a subprocess with its own temporary ``WARP_CACHE_PATH``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest

SCENE = textwrap.dedent("""
    [[entities]]
    name = "box"
    morph = { type = "Box", size = [0.2, 0.3, 0.1], pos = [0.1, -0.2, 0.5], euler = [10, 20, 30] }
    material = { type = "Kinematic" }
    init = { set_dofs_velocity = [0.5, 0.0, 0.0, 0.0, 0.0, 1.0] }
    [run]
    steps = 3
""")
NOTICE = "compiling kinematic kernels for cpu, first run only…"
WARP_WORDS = ("Warp ", "Module ", "took", "CUDA", "initialized", "Kernel cache")


def _run(args, cache, tmp_path, env_extra=None, check=True):
    env = dict(os.environ, WARP_CACHE_PATH=str(cache), PYTHONIOENCODING="utf-8")
    env.pop("POLYPHYS_VERBOSITY", None)
    env.update(env_extra or {})
    p = subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0 or not check, p.stdout + p.stderr
    return p.stdout, p.stderr


@pytest.fixture
def scene_file(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(SCENE)
    return path


def test_cli_first_run_shows_one_notice_per_plugin_and_nothing_from_warp(tmp_path, scene_file):
    cache = tmp_path / "cache"
    cmd = ["-m", "polyphys", "run", str(scene_file), "--no-plot", "--out", str(tmp_path / "out")]
    out, err = _run(cmd, cache, tmp_path)
    assert err.splitlines() == [NOTICE], err             # the one notice, nothing else on stderr
    assert not any(w in out for w in WARP_WORDS), out    # stdout: the run's own summary only
    assert "scene 'tiny'" in out
    assert any(p.name.startswith("wp_polyphys.kernels.fk_") for p in (cache / os.listdir(cache)[0]).iterdir())

    out, err = _run(cmd, cache, tmp_path)                # the cache is filled: nothing to say
    assert err == "" and not any(w in out for w in WARP_WORDS), out + err

    out, err = _run([*cmd, "--verbose"], cache, tmp_path)  # verbose: Warp's own lines
    text = out + err
    assert "Warp " in text and "Module polyphys.kernels.fk" in text and "(cached)" in text
    assert NOTICE not in text


def test_python_api_set_verbosity_quiet_hides_the_notice_and_warp_stays_quiet(tmp_path):
    code = textwrap.dedent("""
        import sys
        import polyphys
        from polyphys import morphs
        if sys.argv[1] == "quiet":
            polyphys.set_verbosity("quiet")
        scene = polyphys.Scene()
        scene.add_entity(morphs.Box(size=(0.2, 0.3, 0.1), pos=(0.1, -0.2, 0.5)), material=polyphys.materials.Kinematic())
        scene.build()
        scene.step()
        print("loads", sorted((r.name, r.owner, r.status) for r in scene.kernel_loads))
    """)
    cache = tmp_path / "cache"
    out, err = _run(["-c", code, "quiet"], cache, tmp_path)      # cold: compiles, says nothing
    assert err == "", err
    assert "('polyphys.kernels.fk', 'kinematic', 'compiled')" in out
    assert "('polyphys.kernels.envs', 'kinematic', 'compiled')" in out
    assert not any(w in out for w in WARP_WORDS if w != "took"), out
    out, err = _run(["-c", code, "normal"], cache, tmp_path)     # warm: no notice, no Warp line
    assert err == "", err
    assert "('polyphys.kernels.fk', 'kinematic', 'cached')" in out


def test_verbosity_values():
    from polyphys.errors import OptionError
    from polyphys.startup import get_verbosity, set_verbosity

    old = get_verbosity()
    try:
        set_verbosity("verbose")
        assert get_verbosity() == 2
        set_verbosity(0)
        assert get_verbosity() == 0
        with pytest.raises(OptionError, match=r"set_verbosity\(level\) = 'loud': allowed \['quiet', 'normal', 'verbose'\]"):
            set_verbosity("loud")
    finally:
        set_verbosity(old)


def test_warmup_fills_the_cache_for_a_later_run(tmp_path, scene_file):
    cache = tmp_path / "cache"
    out, err = _run(["-m", "polyphys", "warmup", "--scene", str(scene_file)], cache, tmp_path)
    assert err.splitlines() == [NOTICE], err
    assert "scene tiny (tiny.toml):" in out
    assert re.search(r"kernel modules: 2 compiled, 0 already in the cache, 0 compiled at their first launch", out), out
    out, err = _run(["-m", "polyphys", "run", str(scene_file), "--no-plot", "--out", str(tmp_path / "o")], cache, tmp_path)
    assert err == "", err                                # everything was compiled ahead of time
    out, err = _run(["-m", "polyphys", "warmup", "--scene", str(tmp_path / "nope.toml")], cache, tmp_path, check=False)
    assert "polyphys: error: warmup --scene" in err and "no such file" in err


def test_warmup_all_covers_each_solvers_precisions(tmp_path):
    """--all with only the kinematic solver enabled: its contract scene in float32 and float64 (both
    FK overloads compiled), the default scene skipped (its plugins are disabled), nothing else."""
    disabled = [r.name for kind in ("solver", "coupler", "sensor") for r in polyphys_registry().all(kind)
                if r.name != "kinematic"]
    out, err = _run(["-m", "polyphys", "warmup", "--all"], tmp_path / "cache", tmp_path,
                    env_extra={"POLYPHYS_DISABLE_PLUGINS": ",".join(disabled)})
    assert "contract scene of kinematic (float32)" in out and "contract scene of kinematic (float64)" in out
    assert "scene default: skipped" in out
    assert set(err.splitlines()) == {NOTICE}, err       # one per scene that compiles (float32, then float64)
    # each precision warmed in its own process: a later run of either precision compiles nothing (one
    # process holding both precisions' overloads in a module would cache a module no single-precision
    # run asks for)
    for precision in ("64", "32"):
        path = tmp_path / f"tiny{precision}.toml"
        path.write_text(f'[sim]\nprecision = "{precision}"\n' + SCENE)
        out, err = _run(["-m", "polyphys", "run", str(path), "--no-plot", "--out", str(tmp_path / f"o{precision}")],
                        tmp_path / "cache", tmp_path, env_extra={"POLYPHYS_DISABLE_PLUGINS": ",".join(disabled)})
        assert err == "", (precision, err)


def polyphys_registry():
    from polyphys.registry import registry

    return registry()
