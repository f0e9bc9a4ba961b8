"""The ``polyphys`` command (also ``python -m polyphys``).

``polyphys plugins [--json | --markdown]``  every registered plugin and its capabilities (imports no
                                           plugin target and no Warp module)
``polyphys run [SCENE.toml] [--out DIR] [--steps N] [--no-progress] [--no-video]``  the main job (core/run.py)
``polyphys warmup [--scene FILE | --all]``   compile kernels ahead of time into the kernel cache
``polyphys render CHECKPOINT [--scene S] [--camera C] [--env E] [--out PNG]``  a saved state as a
                                           picture (core/raycast, docs/cameras.md)
``polyphys inspect FILE [--json]``           what an importer makes of a model file
``polyphys view TARGET [--port P] ...``      the browser viewer (core/viewer): replay a run folder, or
                                           step a scene file / model file live
``polyphys export-usd RUN_DIR OUT.usd``      a run's recorded states as a USD stage (core/usd_export.py)
``polyphys sweep SWEEP.toml [--address A]``  a parameter sweep on a Ray cluster (docs/distributed.md)
``polyphys run SCENE.toml --workers N``      a batched scene file split across N Ray workers

Bad input prints one line to stderr and exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings

from .errors import PolyphysError, PolyphysWarning, WorkerError

EXIT_USAGE = 2
CAP_COLUMNS = ("batch", "reset_envs", "checkpoint", "differentiable", "devices", "tested_devices", "precisions",
               "deterministic")


class CliError(Exception):
    """Bad input to the command line: one line on stderr, exit status 2."""


# -- plugins --------------------------------------------------------------------------------------
def plugin_rows() -> list[dict]:
    from .registry import registry

    return registry().plugin_rows()


def _cap_cell(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def format_table(rows: list[dict], headers: list[str]) -> str:
    widths = [len(h) for h in headers]
    for r in rows:
        widths = [max(w, len(str(c))) for w, c in zip(widths, r, strict=True)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()  # noqa: E731
    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def plugins_table(rows: list[dict]) -> str:
    headers = ["kind", "name", "distribution", "version", *CAP_COLUMNS]
    cells = [[r["kind"], r["name"], r["distribution"], r["version"] or "-",
              *(_cap_cell(r["capabilities"][c]) for c in CAP_COLUMNS)] for r in rows]
    return format_table(cells, headers)


def plugins_markdown(rows: list[dict]) -> str:
    """The capability table for README/docs (generated from the registry)."""
    from .registry import registry

    head = ("| Plugin | Kind | Batch (n_envs > 0) | Per-env reset | Checkpoint | Differentiable | "
            "Devices (compiles for) | Tested on | Deterministic on | Precisions | Distribution |")
    out = [head, "|" + "---|" * 11]
    for r in rows:
        c = r["capabilities"]
        out.append(f"| `{r['name']}` | {r['kind']} | {_cap_cell(c['batch'])} | "
                   f"{_cap_cell(c['reset_envs'])} | {_cap_cell(c['checkpoint'])} | "
                   f"{_cap_cell(c['differentiable'])} | {', '.join(c['devices'])} | "
                   f"{', '.join(c['tested_devices'])} | {', '.join(c['deterministic'])} | "
                   f"{', '.join(c['precisions'])} | {r['distribution']} {r['version']} |")
    mats = registry().all("material")
    if mats:
        out += ["", "| Material | Solver |", "|---|---|"]
        for m in mats:
            name = (f"{m.spec.family}." if m.spec.family else "") + m.name
            out.append(f"| `polyphys.materials.{name}` | `{m.spec.solver}` |")
    return "\n".join(out)


def cmd_plugins(args) -> int:
    from .registry import registry

    rows = plugin_rows()
    if args.json:
        print(json.dumps(rows, indent=2))
    elif args.markdown:
        print(plugins_markdown(rows))
    else:
        print(plugins_table(rows) if rows else "no plugin registered")
        noted = [r for r in rows if r.get("notes")]
        if noted:
            width = max(len(f"{r['kind']} {r['name']}") for r in noted)
            print("\nnotes:")
            for r in noted:
                print(f"  {(r['kind'] + ' ' + r['name']).ljust(width)}  {r['notes']}")
        mats = registry().all("material")
        if mats:
            names = [(f"{m.spec.family}." if m.spec.family else "") + f"{m.name} ({m.spec.solver})"
                     for m in mats]
            print("\nmaterials: " + ", ".join(names))
        reg = registry()
        if not reg.autoload:
            print("\nplugin autoloading is disabled (POLYPHYS_DISABLE_PLUGIN_AUTOLOAD)")
        for msg in reg.load_failures:
            print(f"\nnot loaded: {msg}")
    return 0


# -- run ------------------------------------------------------------------------------------------
def _verbosity(args) -> None:
    """``--verbose``: Warp's own messages too; ``--quiet``: no compile notices (polyphys.startup)."""
    from .startup import set_verbosity

    if getattr(args, "verbose", False):
        set_verbosity("verbose")
    elif getattr(args, "quiet", False):
        set_verbosity("quiet")


def cmd_run(args) -> int:
    from . import run as runmod

    if args.steps is not None and args.steps < 0:
        raise CliError(f"--steps {args.steps}: must be an integer >= 0")
    if getattr(args, "workers", None) is not None:
        return cmd_run_distributed(args)
    path = args.scene if args.scene is not None else runmod.default_scene_path()
    plan = runmod.parse_file(path)
    _verbosity(args)
    progress = False if args.no_progress else sys.stderr.isatty()
    result = runmod.run_plan(plan, out_dir=args.out, steps=args.steps, progress=progress,
                             plot=not args.no_plot, video=not args.no_video)
    s = result.summary
    tm = s["timings"]
    rate = tm["env_steps_per_s"]
    print(f"scene {s['scene']['name']!r}: {len(s['scene']['entities'])} entities, solvers "
          f"{s['scene']['solvers']}, n_envs={s['n_envs']}, {s['steps']} steps "
          f"(t = {s['final_time']:.4g} s)")
    print(f"build {tm['build_s']:.2f} s, first step {tm['first_step_s']:.3f} s"
          + (f", then {tm['mean_step_s'] * 1e6:.1f} us/step, {rate:,.0f} env-steps/s" if rate else ""))
    for k, f in result.files.items():
        print(f"{k}: {f}")
    if "plot" not in result.files and not args.no_plot:
        print("plot: skipped (matplotlib not installed: pip install 'polyphys[viz]')")
    return 0


# -- warmup ---------------------------------------------------------------------------------------
def cmd_warmup(args) -> int:
    from .startup import warmup

    _verbosity(args)
    for f in args.scene or []:
        if not os.path.isfile(f):
            raise CliError(f"warmup --scene {f!r}: no such file (looked at {os.path.abspath(f)})")
    r = warmup(args.scene, everything=args.all, device=args.device)
    for label, seconds in r["scenes"]:
        print(f"{label}: {seconds:.1f} s")
    mods = r["modules"]
    by = {k: [m for m in mods if m.status == k] for k in ("compiled", "cached", "loaded", "lazy")}
    print(f"kernel modules: {len(by['compiled'])} compiled, {len(by['cached']) + len(by['loaded'])} already in "
          f"the cache, {len(by['lazy'])} compiled at their first launch; {r['seconds']:.1f} s in all")
    import warp as wp

    from .startup import init_warp

    init_warp()        # per-precision warmups ran in child processes: this one may not have started Warp yet
    print(f"kernel cache: {wp.config.kernel_cache_dir}")
    return 0


# -- render ---------------------------------------------------------------------------------------
def cmd_render(args) -> int:
    from .raycast.recording import render_checkpoint

    _verbosity(args)
    if args.resolution is not None and (len(args.resolution) != 2 or min(args.resolution) < 1):
        raise CliError(f"--resolution {args.resolution}: two integers >= 1 (width height)")
    r = render_checkpoint(args.checkpoint, scene_file=args.scene, camera=args.camera, env=args.env, out=args.out,
                          output=args.output, resolution=args.resolution)
    print(f"{r['path']}: {r['output']} of env {r['env']} at step {r['step']} ({r['resolution'][0]}x{r['resolution'][1]}), "
          f"scene {r['scene']}")
    return 0


# -- inspect --------------------------------------------------------------------------------------
def description_dict(desc) -> dict:
    """A JSON-able summary of an EntityDescription (uses ``description.describe_to_dict`` when the
    core provides it)."""
    try:
        from .description import describe_to_dict
    except ImportError:
        describe_to_dict = None
    if describe_to_dict is not None:
        return describe_to_dict(desc)
    links = desc.links
    return {
        "name": desc.name,
        "source": desc.source,
        "total_mass": desc.total_mass,
        "n_links": len(links),
        "n_qs": desc.n_qs,
        "n_dofs": desc.n_dofs,
        "links": [{"name": lk.name, "parent": links[lk.parent].name if lk.parent >= 0 else None,
                   "mass": float(lk.inertial.mass)} for lk in links],
        "joints": [{"name": j.name, "type": j.type, "link": links[j.link].name,
                    "q_start": j.q_start, "dof_start": j.dof_start} for j in desc.joints],
        "geoms": [{"name": g.name, "type": g.type, "link": links[g.link].name if g.link >= 0 else None,
                   "role": g.role} for g in desc.geoms],
        "actuators": [{"name": a.name, "type": a.type, "target": a.target} for a in desc.actuators],
        "warnings": [str(w) for w in desc.warnings],
    }


def format_description(d: dict) -> str:
    lines = [f"{d.get('name')}: {d.get('n_links', len(d.get('links', [])))} links, "
             f"n_qs={d.get('n_qs')}, n_dofs={d.get('n_dofs')}, total mass {d.get('total_mass', 0):.6g} kg"]
    if d.get("source"):
        lines.append(f"source: {d['source']}")
    lines += ["", "links:"]
    lines.append(format_table([[lk["name"], lk.get("parent") if lk.get("parent") is not None else "-",
                                f"{lk.get('mass', 0):.6g}"] for lk in d.get("links", [])],
                              ["name", "parent", "mass [kg]"]))
    if d.get("joints"):
        lines += ["", "joints:"]
        lines.append(format_table([[j["name"], j["type"], j.get("q_start"), j.get("dof_start")]
                                   for j in d["joints"]], ["name", "type", "q_start", "dof_start"]))
    if d.get("geoms"):
        lines += ["", f"geoms: {len(d['geoms'])}"]
        lines.append(format_table([[g.get("name"), g.get("type"), g.get("link"), g.get("role", "")]
                                   for g in d["geoms"]], ["name", "type", "link", "role"]))
    if d.get("actuators"):
        lines += ["", "actuators:"]
        lines.append(format_table([[a.get("name"), a.get("type"), a.get("target", "")]
                                   for a in d["actuators"]], ["name", "type", "target"]))
    for w in d.get("warnings", []):
        lines.append(f"warning: {w}")
    return "\n".join(lines)


def cmd_inspect(args) -> int:
    from .importing import describe

    if not os.path.isfile(args.file):
        raise CliError(f"inspect {args.file!r}: no such file (looked at {os.path.abspath(args.file)})")
    with warnings.catch_warnings():
        # the importer's notes are printed below, one "warning:" line each: not warned again
        warnings.simplefilter("ignore", PolyphysWarning)
        desc = describe(args.file)
    d = description_dict(desc)
    if args.json:
        print(json.dumps(d, indent=2, default=str))
    else:
        print(format_description(d))
    return 0


# -- view / export-usd (docs/viewer.md) --------------------------------------------------------------
def cmd_view(args) -> int:
    from . import viewer as viewermod

    if args.steps is not None and args.steps < 0:
        raise CliError(f"--steps {args.steps}: must be an integer >= 0")
    if args.n_envs is not None and args.n_envs < 0:
        raise CliError(f"--n-envs {args.n_envs}: must be an integer >= 0")
    _verbosity(args)
    v = viewermod.open_target(args.target, n_envs=args.n_envs, port=args.port, host=args.host,
                              strict_port=args.strict_port, color_by=args.color_by, env=args.env,
                              grid=args.grid, contacts=not args.no_contacts)
    if v.port_note:
        print(f"polyphys view: {v.port_note}", file=sys.stderr)
    mode = "live" if v.live else f"replay of {v.recording.n_records} records"
    print(f"polyphys view: {mode}, {v.n_envs} env(s): open {v.url}  (Ctrl-C stops)", flush=True)
    try:
        if v.live:
            v.paused = args.paused
            if args.paused and hasattr(v, "pause_box"):
                v.pause_box.value = True
            v.run_live(steps=args.steps, duration=args.duration)
            if args.duration is None and args.steps is not None:
                v.serve()                     # keep showing the final state
        else:
            v.serve(duration=args.duration)
    except KeyboardInterrupt:
        pass
    finally:
        v.close()
    return 0


def cmd_export_usd(args) -> int:
    from .usd_export import export_usd

    env = "all" if args.env == "all" else _env_index(args.env)
    r = export_usd(args.run_dir, args.out, envs=env, every=args.every)
    print(f"{r['path']}: {len(r['envs'])} env(s), {r['n_time_codes']} time codes, {r['prims']} prims, "
          f"{r['bytes'] / 1e6:.2f} MB in {r['seconds']:.2f} s")
    return 0


def _env_index(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise CliError(f"--env {value!r}: an env index or 'all'") from None


# -- distributed: sweep, run --workers (docs/distributed.md) ---------------------------------------
def _quiet_warp(verbose: bool) -> None:
    if verbose:
        return
    try:
        import warp as wp

        wp.config.log_level = getattr(wp, "LOG_WARNING", 30)
    except ImportError:
        pass


def cmd_run_distributed(args) -> int:
    from . import run as runmod
    from .distributed.runfile import run_file_distributed

    if args.workers < 1:
        raise CliError(f"--workers {args.workers}: must be an integer >= 1")
    _quiet_warp(args.verbose)
    path = args.scene if args.scene is not None else runmod.default_scene_path()
    progress = False if args.no_progress else sys.stderr.isatty()
    result = run_file_distributed(path, args.workers, out_dir=args.out, steps=args.steps, address=args.address,
                                  progress=progress, plot=not args.no_plot)
    s = result.summary
    tm = s["timings"]
    nodes = sorted({str(w["node_id"])[:12] for w in s["workers"]})
    print(f"scene {s['scene']['name']!r}: n_envs={s['n_envs']} on {len(s['workers'])} workers "
          f"({len(nodes)} node(s)), {s['steps']} steps (t = {s['final_time']:.4g} s)")
    rate = tm["env_steps_per_s"]
    print(f"build {tm['build_s']:.2f} s, loop {tm['loop_s']:.2f} s" + (f", {rate:,.0f} env-steps/s" if rate else ""))
    for k, f in result.files.items():
        print(f"{k}: {f}")
    return 0


def cmd_sweep(args) -> int:
    from .distributed.sweeps import run_sweep_file

    if args.workers is not None and args.workers < 1:
        raise CliError(f"--workers {args.workers}: must be an integer >= 1")
    _quiet_warp(args.verbose)
    progress = False if args.no_progress else sys.stderr.isatty()
    r = run_sweep_file(args.sweep, address=args.address, out_dir=args.out, workers=args.workers,
                       progress=progress, plot=not args.no_plot)
    s = r.summary
    print(f"sweep: {s['n_runs']} runs of {s['steps']} steps ({s['factory']}) on {s['n_workers']} workers in "
          f"{s['wall_s']:.1f} s ({s['runs_per_s']:.2f} runs/s), {s['recoveries']} worker recoveries")
    for k, f in r.files.items():
        print(f"{k}: {f}")
    if "plot" not in r.files and not args.no_plot:
        print("plot: skipped (matplotlib not installed: pip install 'polyphys[viz]')")
    return 0


def _add_distributed(sub, run_parser) -> None:
    run_parser.add_argument("--workers", type=int, default=None,
                            help="split the scene's n_envs across N Ray workers (docs/distributed.md)")
    run_parser.add_argument("--address", default=None,
                            help="with --workers: Ray cluster address, 'auto' or HOST:PORT (default: a local Ray)")
    ps = sub.add_parser("sweep", help="run a parameter sweep on a Ray cluster; write results.npz/.csv and a plot")
    ps.add_argument("sweep", help="sweep file (.toml, docs/distributed.md)")
    ps.add_argument("--address", default=None, help="Ray cluster: 'auto', HOST:PORT (default: start a local Ray)")
    ps.add_argument("--out", default=None, help="results folder (default: [sweep] out or results/<file stem>)")
    ps.add_argument("--workers", type=int, default=None, help="number of workers (default: [sweep] workers or CPUs)")
    ps.add_argument("--no-progress", action="store_true", help="no progress bar")
    ps.add_argument("--no-plot", action="store_true", help="do not write plot.png")
    ps.add_argument("--verbose", action="store_true", help="keep Warp's messages")
    ps.set_defaults(func=cmd_sweep)


# -- entry point ----------------------------------------------------------------------------------
class _Parser(argparse.ArgumentParser):
    def error(self, message):   # one line and exit 2, like every other bad input
        raise CliError(message if self.prog == "polyphys" else f"{self.prog}: {message}")


def _verbosity_flags(p) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--verbose", action="store_true", help="also show Warp's messages (banner, module loads)")
    g.add_argument("--quiet", action="store_true", help="no kernel-compilation notices")


def make_parser() -> argparse.ArgumentParser:
    from . import __version__

    p = _Parser(prog="polyphys", description="polyphys: plugin-based multi-physics simulation")
    p.add_argument("--version", action="version", version=f"polyphys {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    pp = sub.add_parser("plugins", help="list registered plugins and their capabilities")
    fmt = pp.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="JSON list of plugin objects")
    fmt.add_argument("--markdown", action="store_true", help="the capability table as Markdown")
    pp.set_defaults(func=cmd_plugins)

    pr = sub.add_parser("run", help="build and run a scene file; write a results folder")
    pr.add_argument("scene", nargs="?", default=None,
                    help="scene TOML file (default: the bundled default scene)")
    pr.add_argument("--out", default=None, help="results folder (default: results/<scene name>)")
    pr.add_argument("--steps", type=int, default=None, help="number of steps (overrides [run] steps)")
    pr.add_argument("--no-progress", action="store_true", help="no progress bar")
    pr.add_argument("--no-plot", action="store_true", help="do not write plot.png")
    pr.add_argument("--no-video", action="store_true", help="do not write the video [run] video asks for")
    _verbosity_flags(pr)
    pr.set_defaults(func=cmd_run)
    _add_distributed(sub, pr)

    pd = sub.add_parser("render", help="render a checkpoint's state to a PNG (docs/cameras.md)")
    pd.add_argument("checkpoint", help="checkpoint .npz (e.g. RUN_DIR/checkpoint.npz of a run with [run] checkpoint)")
    pd.add_argument("--scene", default=None, help="scene TOML file (default: the one named by RUN_DIR/summary.json)")
    pd.add_argument("--camera", default=None, help="full name of a camera sensor (default: a camera framing the scene)")
    pd.add_argument("--env", type=int, default=0, help="env to render (default 0)")
    pd.add_argument("--out", default=None, help="PNG path (default: the checkpoint's path with .png)")
    pd.add_argument("--output", default="rgb", help="rgb (default), depth, distance, segmentation or normals")
    pd.add_argument("--resolution", type=int, nargs=2, default=None, metavar=("W", "H"),
                    help="size of the automatic camera's picture (default 480 360)")
    pd.add_argument("--verbose", action="store_true", help="keep Warp's messages")
    pd.set_defaults(func=cmd_render)

    pw = sub.add_parser("warmup", help="compile kernels ahead of time into Warp's kernel cache")
    pw.add_argument("--scene", action="append", metavar="FILE",
                    help="a scene file to build and step once (repeatable; default: the bundled default scene)")
    pw.add_argument("--all", action="store_true",
                    help="also every solver's contract scene in each precision and every plugin kernel module")
    pw.add_argument("--device", default=None, help="device to compile for (default: each scene's own)")
    _verbosity_flags(pw)
    pw.set_defaults(func=cmd_warmup)

    pi = sub.add_parser("inspect", help="describe a model file (MJCF/URDF) through its importer")
    pi.add_argument("file")
    pi.add_argument("--json", action="store_true")
    pi.set_defaults(func=cmd_inspect)

    pv = sub.add_parser("view", help="browser viewer: replay a run folder, or run a scene/model file live")
    pv.add_argument("target", help="run folder (replay), scene file .toml or model file .xml/.urdf (live)")
    pv.add_argument("--port", type=int, default=8080, help="port (default 8080; a taken port: the next free)")
    pv.add_argument("--strict-port", action="store_true", help="fail instead of taking the next free port")
    pv.add_argument("--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1)")
    pv.add_argument("--color-by", default="material", help="'material' or a particle field (e.g. vel)")
    pv.add_argument("--env", type=int, default=0, help="env shown first")
    pv.add_argument("--grid", action="store_true", help="show the envs side by side")
    pv.add_argument("--no-contacts", action="store_true", help="hide contact points and forces")
    pv.add_argument("--n-envs", type=int, default=None, help="live: build the scene with this many envs")
    pv.add_argument("--steps", type=int, default=None, help="live: stop stepping after N steps")
    pv.add_argument("--duration", type=float, default=None, help="stop serving after this many seconds")
    pv.add_argument("--paused", action="store_true", help="live: start paused")
    _verbosity_flags(pv)
    pv.set_defaults(func=cmd_view)

    pu = sub.add_parser("export-usd", help="write a run's recorded states as a USD stage")
    pu.add_argument("run_dir", help="run folder written by `polyphys run` (or its states/ folder)")
    pu.add_argument("out", help="output file: .usd/.usdc (binary) or .usda (text)")
    pu.add_argument("--env", default="all", help="'all' (laid out on a grid, default) or one env index")
    pu.add_argument("--every", type=int, default=1, help="export every k-th record")
    pu.set_defaults(func=cmd_export_usd)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = make_parser()
    try:
        args = parser.parse_args(argv)
        if getattr(args, "func", None) is None:
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        return args.func(args)
    except BrokenPipeError:   # `polyphys plugins | head`: stop quietly
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
    except (CliError, PolyphysError, OSError) as exc:
        # a worker's error keeps its lines: they carry the worker's traceback (docs/distributed.md)
        msg = str(exc) if isinstance(exc, WorkerError) else str(exc).replace("\n", " ")
        print(f"polyphys: error: {msg}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("polyphys: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":   # pragma: no cover
    sys.exit(main())
