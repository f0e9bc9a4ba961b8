"""``python -m benchmarks [--quick] [--only NAME ...] [--markdown FILE] [--json FILE] [--list]``."""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import pkgutil
import sys
import time
import traceback

from . import ROW_KEYS, machine_info

HERE = os.path.dirname(os.path.abspath(__file__))


def discover() -> list[str]:
    """Names (without the ``bench_`` prefix) of every ``benchmarks/bench_*.py`` module, sorted."""
    return sorted(m.name[len("bench_"):] for m in pkgutil.iter_modules([HERE])
                  if m.name.startswith("bench_"))


def _num(x) -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    ax = abs(x)
    if ax == 0:
        return "0"
    if ax >= 1e5 or ax < 1e-3:
        return f"{x:.3e}"
    return f"{x:.4g}"


def _ratio(x) -> str:
    return "-" if x is None else f"{x:.2f}x"


def check_rows(name: str, rows) -> list[dict]:
    if not isinstance(rows, list):
        raise TypeError(f"bench_{name}.run() returned {type(rows).__name__}, expected a list of dicts")
    for i, r in enumerate(rows):
        missing = [k for k in ROW_KEYS if not isinstance(r, dict) or k not in r]
        if missing:
            raise TypeError(f"bench_{name}.run() row {i} lacks keys {missing}; rows need {list(ROW_KEYS)}")
    return rows


def table(rows: list[dict]) -> list[list[str]]:
    return [[r["module"], r["case"], r["metric"], _num(r["polyphys"]), _num(r["reference"]),
             r["reference_name"] or "-", _ratio(r["ratio"]), r["unit"], r["notes"]] for r in rows]


HEADERS = ["module", "case", "metric", "polyphys", "reference", "ref. name", "ratio", "unit", "notes"]


def format_text(rows: list[dict]) -> str:
    cells = table(rows)
    widths = [len(h) for h in HEADERS]
    for c in cells:
        widths = [max(w, len(x)) for w, x in zip(widths, c, strict=True)]
    widths[-1] = len(HEADERS[-1])            # notes: not padded
    line = lambda c: "  ".join(x.ljust(w) for x, w in zip(c, widths, strict=True)).rstrip()  # noqa: E731
    return "\n".join([line(HEADERS), line(["-" * w for w in widths]), *(line(c) for c in cells)])


def format_markdown(rows: list[dict], info: dict, failures: list[str], quick: bool) -> str:
    out = ["# polyphys benchmarks", "",
           f"Machine: {info['cpu']}, {info['cores']} cores ({info['usable_cores']} usable, load "
           f"{info['load_1min']}), {info['os']}; Python {info['python']}, polyphys {info['polyphys']}, "
           f"Warp {info['warp']}, NumPy {info['numpy']}, MuJoCo {info['mujoco']}. "
           f"Mode: {'quick' if quick else 'full'}. Ratio: reference / polyphys for times, "
           f"polyphys / reference for rates (> 1: polyphys faster).", "",
           "| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    out += ["| " + " | ".join(c.replace("|", "/") for c in cells) + " |" for cells in table(rows)]
    if failures:
        out += ["", "Failed modules:", ""] + [f"- {f}" for f in failures]
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    p.add_argument("--quick", action="store_true", help="short runs (each module < 60 s)")
    p.add_argument("--only", action="append", default=None, metavar="NAME",
                   help="run only bench_NAME (repeatable)")
    p.add_argument("--markdown", metavar="FILE", help="also write the table as Markdown")
    p.add_argument("--json", metavar="FILE", help="also write rows and machine info as JSON")
    p.add_argument("--list", action="store_true", help="list the benchmark modules and exit")
    args = p.parse_args(argv)
    names = discover()
    if args.list:
        print("\n".join(names))
        return 0
    if args.only:
        unknown = [n for n in args.only if n.removeprefix("bench_") not in names]
        if unknown:
            print(f"benchmarks: error: --only {unknown}: no such benchmark module; known: {names}",
                  file=sys.stderr)
            return 2
        names = [n for n in names if n in {o.removeprefix("bench_") for o in args.only}]
    info = machine_info()
    print("machine: " + ", ".join(f"{k}={v}" for k, v in info.items()), flush=True)
    rows, failures = [], []
    for name in names:
        t0 = time.perf_counter()
        print(f"running bench_{name} ({'quick' if args.quick else 'full'}) ...", file=sys.stderr, flush=True)
        try:
            mod = importlib.import_module(f"benchmarks.bench_{name}")
            got = check_rows(name, mod.run(quick=args.quick))
        except Exception as exc:   # one broken module must not stop the others
            msg = f"bench_{name}: {type(exc).__name__}: {exc}"
            failures.append(msg)
            print(f"FAILED {msg}", file=sys.stderr)
            traceback.print_exc(file=sys.stderr)
            continue
        for r in got:
            rows.append({"module": name, **r})
        print(f"  bench_{name}: {len(got)} rows in {time.perf_counter() - t0:.1f} s", file=sys.stderr,
              flush=True)
    print()
    print(format_text(rows) if rows else "no results")
    if failures:
        print("\nfailed modules:\n" + "\n".join(f"  {f}" for f in failures))
    if args.markdown:
        with open(args.markdown, "w") as fh:
            fh.write(format_markdown(rows, info, failures, args.quick))
        print(f"\nmarkdown: {args.markdown}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"machine": info, "quick": args.quick, "rows": rows, "failures": failures}, fh, indent=2)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
