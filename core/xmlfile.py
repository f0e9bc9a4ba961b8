"""XML reading shared by the built-in importers: tolerant of the mess real files carry.

A trailing NUL byte, a byte-order mark or blank lines before ``<?xml`` (files MuJoCo or pybullet
accept) are cleaned with a note; malformed XML raises ImportError_ naming the file and line.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from .errors import ImportError_


def read_xml(path: str, notes: list) -> ET.Element:
    """Parse ``path`` and return its root element; append what was cleaned to ``notes``."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise ImportError_(f"cannot read {path!r}: {exc}") from None
    text = raw
    if b"\x00" in text:
        text = text.replace(b"\x00", b"")
        notes.append(f"{path}: removed NUL bytes from the file")
    if text.startswith(b"\xef\xbb\xbf"):
        text = text[3:]
    stripped = text.lstrip()
    if len(stripped) != len(text):
        notes.append(f"{path}: removed {len(text) - len(stripped)} blank characters before the "
                     f"XML declaration")
        text = stripped
    try:
        return ET.fromstring(text)
    except ET.ParseError as exc:
        line, col = getattr(exc, "position", (0, 0))
        # position counts lines of the cleaned text; blank lines removed above are added back
        removed = raw[: len(raw) - len(raw.lstrip())].count(b"\n")
        raise ImportError_(f"{path}:{line + removed}:{col}: malformed XML: {exc}") from None
