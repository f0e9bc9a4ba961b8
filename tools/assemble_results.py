"""Assemble benchmarks/RESULTS.md from the per-topic reports in benchmarks/results/*.md.

Each topic's owner records its measured figures (with the machine, the load and the reference
measured in the same run) in benchmarks/results/<topic>.md; this script stitches them, in a fixed
order, under one index. Run: python tools/assemble_results.py
"""

import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
ORDER = ["core", "rigid", "collision", "mpm", "sph", "pbd", "fem"]


def main() -> None:
    res = ROOT / "benchmarks" / "results"
    files = sorted(res.glob("*.md"), key=lambda p: (ORDER.index(p.stem) if p.stem in ORDER else 99, p.stem))
    out = ["# Benchmark results", "",
           "Measured with `python -m benchmarks` (or `tox -e bench`) on this project's machine: 2 CPU cores, "
           "no GPU (no device was lent to this task, so there are no CUDA figures). Every ratio compares "
           "polyphys with a reference measured in the same run; each section states its reference and the "
           "machine load at the time. Per-topic sources: `benchmarks/results/<topic>.md`.", ""]
    out += [f"- [{p.stem}](#{p.stem})" for p in files] + [""]
    for p in files:
        out += [f'<a id="{p.stem}"></a>', "", p.read_text().strip(), ""]
    (ROOT / "benchmarks" / "RESULTS.md").write_text("\n".join(out))
    print(f"wrote benchmarks/RESULTS.md from {[p.name for p in files]}")


if __name__ == "__main__":
    main()
