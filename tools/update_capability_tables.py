"""Regenerate the capability tables in README.md and docs/capabilities.md from the registry.

Only plugins of the polyphys distribution are listed (an installed third-party plugin is not ours
to document). Run: python tools/update_capability_tables.py
"""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ("README.md", "docs/capabilities.md")
PATTERN = re.compile(r"(<!-- capabilities:begin -->\n)(.*?)(<!-- capabilities:end -->)", re.S)


def builtin_table() -> str:
    from polyphys import registry
    from polyphys.cli import plugins_markdown

    rows = [r for r in registry().plugin_rows() if r["distribution"] == "polyphys"]
    ours = {r["name"] for r in rows if r["kind"] == "solver"}
    lines = plugins_markdown(rows).strip().splitlines()
    keep = [ln for ln in lines if not (ln.startswith("| `polyphys.materials.")
                                       and ln.rsplit("`", 2)[-2] not in ours)]
    return "\n".join(keep)


def main() -> None:
    table = builtin_table()
    for doc in DOCS:
        path = ROOT / doc
        text = path.read_text()
        path.write_text(PATTERN.sub(lambda m: m.group(1) + table + "\n" + m.group(3), text))
        print(f"updated {doc}")


if __name__ == "__main__":
    main()
