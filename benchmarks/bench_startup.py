"""First run: seconds from the command to the first completed step with an empty Warp kernel cache,
and where they go, per Warp module.

Each case runs in a fresh subprocess (``python -m benchmarks.bench_startup --child CASE``) with
``WARP_CACHE_PATH`` pointing at an empty temporary folder, so every kernel module compiles:

- **cold, parallel**: the default (modules compiled on every usable core);
- **cold, serial**: ``POLYPHYS_COMPILE_WORKERS=1`` — the reference of the parallel row (ratio =
  parallel speed-up) and the per-module breakdown (Warp's own ``Module ... took N ms`` lines, with
  ``POLYPHYS_VERBOSITY=verbose``: each line is one module's code generation + native compile +
  load, one after another);
- **warm**: the same case again on the now-filled cache (what a run after ``polyphys warmup`` sees).

The clock starts in the parent right before the subprocess is spawned (interpreter start-up and
``import polyphys`` included) and stops when the first ``scene.step()`` returns. Cases: the bundled
default scene; with ``quick=False`` also every ``examples/*.toml`` and the gymnasium ant and humanoid
(rigid, 16 envs). The machine load (1-minute average) is given with every figure: a loaded machine
compiles proportionally slower, the ratios are the robust figures.

``python -m benchmarks.bench_startup [CASE ...]`` prints the rows of the named cases (``--list``);
the serial breakdown is made for the default scene, the ant and the humanoid only (it costs a third cold run).
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from . import row

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODULE_LINE = re.compile(r"Module (\S+) (?:[0-9a-f]{7} )?load on device '(\S+)' took ([0-9.]+) ms\s+\((\w+)\)")


def _gym_xml(name: str) -> str:
    import gymnasium

    return os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", f"{name}.xml")


def cases(quick: bool) -> list[str]:
    out = ["default"]
    if not quick:
        out += [f"example:{os.path.basename(p)}" for p in sorted(glob.glob(os.path.join(ROOT, "examples", "*.toml")))]
        out += ["gym:ant", "gym:humanoid"]
    return out


def _build(case: str):
    """The scene of ``case``, built (child process)."""
    from polyphys import run as runmod

    if case == "default":
        return runmod.build_scene(runmod.parse_file(runmod.default_scene_path()))[0]
    if case.startswith("example:"):
        return runmod.build_scene(runmod.parse_file(os.path.join(ROOT, "examples", case.split(":", 1)[1])))[0]
    if case.startswith("gym:"):
        import polyphys
        from polyphys import morphs

        scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=2))
        scene.add_entity(morphs.MJCF(file=_gym_xml(case.split(":", 1)[1])), material=polyphys.materials.Rigid())
        scene.build(n_envs=16)
        return scene
    raise SystemExit(f"unknown case {case!r}; cases: {cases(False)}")


def _child(case: str) -> None:
    t_import = time.time()
    import polyphys  # noqa: F401

    t_build = time.time()
    scene = _build(case)
    t_step = time.time()
    scene.step()
    t_done = time.time()
    import resource

    ru = resource.getrusage(resource.RUSAGE_SELF)
    loads = [{"name": r.name, "owner": r.owner, "status": r.status, "seconds": r.seconds}
             for r in getattr(scene, "kernel_loads", [])]
    print("BENCH_RESULT " + json.dumps({"import_s": t_build - t_import, "build_s": t_step - t_build,
                                        "first_step_s": t_done - t_step, "done": t_done, "cpu_s": ru.ru_utime + ru.ru_stime,
                                        "loads": loads}), flush=True)


def measure(case: str, cache: str, workers: int | None = None, verbose: bool = False, timeout: float = 1800) -> dict:
    """Run ``case`` in a subprocess on the kernel cache ``cache``; seconds from spawn to first step."""
    env = dict(os.environ, WARP_CACHE_PATH=cache, PYTHONDONTWRITEBYTECODE="1")
    env.pop("POLYPHYS_COMPILE_WORKERS", None)
    if workers is not None:
        env["POLYPHYS_COMPILE_WORKERS"] = str(workers)
    env["POLYPHYS_VERBOSITY"] = "verbose" if verbose else "normal"
    load0 = os.getloadavg()[0]
    t0 = time.time()
    p = subprocess.run([sys.executable, "-m", "benchmarks.bench_startup", "--child", case], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=timeout)
    out = p.stdout + p.stderr
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("BENCH_RESULT ")), None)
    if p.returncode != 0 or line is None:
        raise RuntimeError(f"case {case!r} failed (exit {p.returncode}):\n{out[-3000:]}")
    res = json.loads(line[len("BENCH_RESULT "):])
    res["total_s"] = res["done"] - t0
    res["load"] = round((load0 + os.getloadavg()[0]) / 2, 1)
    res["modules"] = [{"name": m.group(1), "seconds": float(m.group(3)) / 1e3, "status": m.group(4)}
                      for m in MODULE_LINE.finditer(out)]
    res["notices"] = [ln for ln in p.stderr.splitlines() if ln.startswith("compiling ")]
    return res


def run_case(case: str, breakdown: bool = True) -> list[dict]:
    rows = []
    tmp = tempfile.mkdtemp(prefix="polyphys-startup-")
    try:
        cold = os.path.join(tmp, "parallel")
        par = measure(case, cold)
        warm = measure(case, cold)
        ser = measure(case, os.path.join(tmp, "serial"), workers=1, verbose=True) if breakdown else None
        ser_cpu = f" (serial: {ser['cpu_s']:.1f} s)" if ser else ""
        rows.append(row(case, "command to first step, empty kernel cache", "s", par["total_s"],
                        ser["total_s"] if ser else None, "same, modules compiled one at a time" if ser else "",
                        notes=f"load {par['load']}/{ser['load'] if ser else '-'}; CPU time {par['cpu_s']:.1f} s{ser_cpu}; "
                              f"build {par['build_s']:.1f} s, "
                              f"first step {par['first_step_s']:.1f} s, import {par['import_s']:.1f} s; "
                              f"ratio = parallel speed-up"))
        rows.append(row(case, "command to first step, filled kernel cache", "s", warm["total_s"], par["total_s"],
                        "same with an empty cache", notes=f"load {warm['load']}; first step {warm['first_step_s']:.2f} s, "
                                                          f"import {warm['import_s']:.1f} s"))
        if ser:
            owners = {r["name"]: r["owner"] for r in ser["loads"]}
            for m in sorted(ser["modules"], key=lambda m: -m["seconds"]):
                if m["status"] != "compiled":
                    continue
                rows.append(row(case, f"compile {m['name']}", "s", m["seconds"],
                                notes=f"load {ser['load']}; declared by {owners[m['name']]!r}" if m["name"] in owners
                                else f"load {ser['load']}; compiled at its first launch (not declared)"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


BREAKDOWN = ("default", "gym:ant", "gym:humanoid")     # cases that also get the serial per-module breakdown


def run(quick: bool = False) -> list[dict]:
    rows = []
    for case in cases(quick):
        rows += run_case(case, breakdown=case in BREAKDOWN)
    return rows


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        _child(argv[1])
        return 0
    if argv[:1] == ["--list"]:
        print("\n".join(cases(False)))
        return 0
    from .__main__ import format_text

    rows = []
    for case in argv or cases(True):
        rows += [{"module": "startup", **r} for r in run_case(case, breakdown=case in BREAKDOWN)]
    print(format_text(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
