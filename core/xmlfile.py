"""XML reading shared by the importers: tolerant of the mess real files carry, exact about errors.

``read_xml`` returns an ElementTree whose elements remember where they were written
(``el.file``, ``el.line``; an included file's elements name that file). A trailing NUL byte, a
byte-order mark or blank lines before ``<?xml`` (files MuJoCo or pybullet accept) are cleaned with a
note; any encoding Python knows is read (UTF-16/32 with or without a byte-order mark, a declared
Latin-1 or Shift-JIS); malformed XML, text that is not valid in its encoding and unknown encodings
raise ImportError_ naming the file and line. Parsing is iterative (expat), so nesting depth is not
limited by Python's recursion limit.

``Attrs`` reads typed attribute values (numbers, vectors, integers, choices, booleans). Every value
is checked where it is read: a malformed number, a value that is not finite, beyond the float32
range (polyphys' default precision) or outside its allowed range is an ImportError_ naming file,
line, element and attribute, and for a value inherited from a default class, where that default
was written. See docs/importers.md, "Errors".
"""

from __future__ import annotations

import codecs
import re
import xml.etree.ElementTree as ET
import xml.parsers.expat

from .errors import ImportError_


class Element(ET.Element):
    """An ElementTree element that knows the file and line it was read from."""

    file: str = ""
    line: int = 0


def where(el) -> str:
    """``file:line: <tag name='x'>`` for an element (``<tag>`` alone when it has no name)."""
    name = el.get("name") if hasattr(el, "get") else None
    tag = f"<{el.tag} name={name!r}>" if name else f"<{el.tag}>"
    file = getattr(el, "file", "")
    line = getattr(el, "line", 0)
    if file and line:
        return f"{file}:{line}: {tag}"
    return f"{file}: {tag}" if file else tag


# -- reading a file --------------------------------------------------------------------------------
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"),
         (codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
         (codecs.BOM_UTF16_BE, "utf-16-be"))
# the first characters "<?" (or "<" and a letter) in a multi-byte encoding without a byte-order mark
_NO_BOM = ((b"<\x00\x00\x00", "utf-32-le"), (b"\x00\x00\x00<", "utf-32-be"),
           (b"<\x00", "utf-16-le"), (b"\x00<", "utf-16-be"))
_DECL_ENCODING = re.compile(rb"^\s*<\?xml[^>]*?encoding\s*=\s*[\"']([^\"']*)[\"']")


def _encoding(raw: bytes, path: str) -> tuple[str, int, str]:
    """(codec, bytes to skip, how it was found) for a file's raw bytes."""
    for bom, enc in _BOMS:
        if raw.startswith(bom):
            return enc, len(bom), "byte-order mark"
    head = raw.lstrip(b" \t\r\n")
    for pat, enc in _NO_BOM:
        if head.startswith(pat):
            return enc, len(raw) - len(head), "first characters"
    m = _DECL_ENCODING.match(raw[:1024])
    if m:
        name = m.group(1).decode("latin-1")
        try:
            return codecs.lookup(name).name, 0, "XML declaration"
        except (LookupError, ValueError):   # ValueError: a NUL in the name
            line = raw[:m.start(1)].count(b"\n") + 1
            raise ImportError_(f"{path}:{line}: <?xml encoding={name!r}?>: unknown encoding; "
                               f"allowed any encoding Python knows (UTF-8, UTF-16, Latin-1, ...)") from None
    return "utf-8", 0, "default"


def _decode(raw: bytes, path: str, notes: list) -> tuple[str, int]:
    """The file's text and the number of lines removed before it."""
    enc, skip, how = _encoding(raw, path)
    if enc.startswith(("utf-16", "utf-32")):
        body = raw[skip:]
        unit = 4 if enc.startswith("utf-32") else 2
        if len(body) % unit:
            raise ImportError_(f"{path}: file is {enc.upper()} ({how}) but its length after the "
                               f"byte-order mark ({len(body)} bytes) is not a multiple of {unit}: "
                               f"truncated or not {enc.upper()}")
    else:
        body = raw[skip:]
        if b"\x00" in body:
            body = body.replace(b"\x00", b"")
            notes.append(f"{path}: removed NUL bytes from the file")
    try:
        text = body.decode(enc)
    except UnicodeDecodeError as exc:
        line = body[:exc.start].decode(enc, errors="replace").count("\n") + 1
        raise ImportError_(f"{path}:{line}: text is not valid {enc.upper()} (encoding from the "
                           f"{how}): byte {body[exc.start:exc.start + 1]!r} at offset "
                           f"{exc.start + skip}: {exc.reason}") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\x00" in text:
        text = text.replace("\x00", "")
        notes.append(f"{path}: removed NUL characters from the file")
    stripped = text.lstrip()
    removed = 0
    if len(stripped) != len(text):
        removed = text[: len(text) - len(stripped)].count("\n")
        notes.append(f"{path}: removed {len(text) - len(stripped)} blank characters before the "
                     f"XML declaration")
    return stripped, removed


def _fix(name: str) -> str:
    # expat reports a namespaced name as "uri}local"; ElementTree writes "{uri}local"
    return "{" + name if "}" in name else name


def parse_xml_text(text: str, path: str, line_offset: int = 0) -> Element:
    """Parse XML text into Elements that carry ``file`` = ``path`` and their line."""
    builder = ET.TreeBuilder(element_factory=Element)
    parser = xml.parsers.expat.ParserCreate(namespace_separator="}")
    parser.buffer_text = True

    def start(tag, attrib):
        el = builder.start(_fix(tag), {_fix(k): v for k, v in attrib.items()})
        el.file = path
        el.line = parser.CurrentLineNumber + line_offset

    parser.StartElementHandler = start
    parser.EndElementHandler = lambda tag: builder.end(_fix(tag))
    parser.CharacterDataHandler = builder.data
    try:
        parser.Parse(text, True)   # a str is parsed as UTF-8 whatever its declaration says
    except xml.parsers.expat.ExpatError as exc:
        msg = xml.parsers.expat.ErrorString(exc.code)
        raise ImportError_(f"{path}:{exc.lineno + line_offset}:{exc.offset}: malformed XML: {msg} "
                           f"(line {exc.lineno + line_offset}, column {exc.offset})") from None
    return builder.close()


def read_xml(path: str, notes: list) -> Element:
    """Parse ``path`` and return its root element; append what was cleaned to ``notes``."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise ImportError_(f"cannot read {path!r}: {exc}") from None
    text, removed = _decode(raw, path, notes)
    return parse_xml_text(text, path, removed)


# -- typed attribute values ------------------------------------------------------------------------
FLOAT32_MAX = 3.4028234663852886e38   # numpy.finfo(numpy.float32).max
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\Z")
_INTEGER = re.compile(r"[+-]?\d+\Z")
_NONFINITE = re.compile(r"[+-]?(?:nan|inf|infinity)\Z", re.IGNORECASE)


def _bounds_text(ge, gt, le, lt) -> str:
    parts = []
    if gt is not None:
        parts.append(f"> {gt:g}")
    if ge is not None:
        parts.append(f">= {ge:g}")
    if lt is not None:
        parts.append(f"< {lt:g}")
    if le is not None:
        parts.append(f"<= {le:g}")
    return " and ".join(parts)


class Attrs(dict):
    """The attribute strings of one element (possibly merged over inherited defaults), with typed
    readers whose errors name the file, line, element and attribute.

    ``origin`` maps an attribute to the element that wrote it when that is not ``el`` (a default
    class), so a bad inherited value is reported where it was written.
    """

    def __init__(self, el, values=None, origin=None):
        super().__init__(el.attrib if values is None else values)
        self.el = el
        self.origin = dict(origin or {})

    # -- locations --------------------------------------------------------------------------------
    def where(self, key: str | None = None) -> str:
        """``file:line: <tag name='x'>`` of the element, naming the default that set ``key`` when
        it was inherited."""
        src = self.origin.get(key) if key is not None else None
        if src is None or src is self.el:
            return where(self.el)
        return f"{where(src)} (default of {where(self.el)})"

    def error(self, key: str, message: str) -> ImportError_:
        """An ImportError_ ``file:line: <tag name=...> key = 'value': message``."""
        if key in self:
            return ImportError_(f"{self.where(key)} {key} = {self[key]!r}: {message}")
        return ImportError_(f"{self.where()} {key}: {message}")

    # -- readers ----------------------------------------------------------------------------------
    def _number(self, key, tok, integer=False):
        if integer:
            if _INTEGER.match(tok):
                return int(tok)
            raise self.error(key, f"{tok!r} is not an integer")
        if _NUMBER.match(tok):
            v = float(tok)
            if not abs(v) <= FLOAT32_MAX:
                raise self.error(key, f"{tok} is beyond the float32 range (|x| <= {FLOAT32_MAX:.4g}) "
                                      f"of polyphys' default precision")
            return v
        if _NONFINITE.match(tok):
            raise self.error(key, f"{tok} is not a finite number; every number must be finite")
        raise self.error(key, f"{tok!r} is not a number")

    def _check(self, key, vals, ge, gt, le, lt):
        for v in vals:
            if ((ge is not None and not v >= ge) or (gt is not None and not v > gt)
                    or (le is not None and not v <= le) or (lt is not None and not v < lt)):
                raise self.error(key, f"{v:g} is not allowed; every value must be "
                                      f"{_bounds_text(ge, gt, le, lt)}")

    def text(self, key: str, default=None):
        return self.get(key, default)

    def real(self, key: str, default=None, *, ge=None, gt=None, le=None, lt=None):
        """One finite number (``default`` when absent; ``None`` default: required)."""
        if key not in self:
            if default is None:
                raise self.error(key, "required attribute is missing")
            return default
        toks = str(self[key]).split()
        if len(toks) != 1:
            raise self.error(key, f"expected one number, got {len(toks)} values")
        v = self._number(key, toks[0])
        self._check(key, (v,), ge, gt, le, lt)
        return v

    def reals(self, key: str, default=None, n=None, *, min_n=None, max_n=None, ge=None, gt=None,
              le=None, lt=None) -> list:
        """A list of finite numbers: exactly ``n`` of them, or between ``min_n`` and ``max_n``."""
        if key not in self:
            if default is None:
                raise self.error(key, "required attribute is missing")
            return list(default)
        toks = str(self[key]).split()
        if n is not None and len(toks) != n:
            raise self.error(key, f"expected {n} numbers, got {len(toks)}")
        if min_n is not None and len(toks) < min_n:
            raise self.error(key, f"expected at least {min_n} numbers, got {len(toks)}")
        if max_n is not None and len(toks) > max_n:
            raise self.error(key, f"expected at most {max_n} numbers, got {len(toks)}")
        vals = [self._number(key, t) for t in toks]
        self._check(key, vals, ge, gt, le, lt)
        return vals

    def integer(self, key: str, default=None, *, allowed=None, ge=None, le=None) -> int:
        """One integer (``allowed``: the values it may take)."""
        if key not in self:
            if default is None:
                raise self.error(key, "required attribute is missing")
            return default
        toks = str(self[key]).split()
        if len(toks) != 1:
            raise self.error(key, f"expected one integer, got {len(toks)} values")
        v = self._number(key, toks[0], integer=True)
        if allowed is not None and v not in allowed:
            raise self.error(key, f"allowed values are {', '.join(str(a) for a in allowed)}")
        self._check(key, (v,), ge, None, le, None)
        return v

    def choice(self, key: str, default, allowed) -> str:
        """One of the words ``allowed``."""
        v = self.get(key, default)
        if v not in allowed:
            raise self.error(key, f"allowed values are {', '.join(repr(a) for a in allowed)}")
        return v

    def boolean(self, key: str, default: bool) -> bool:
        """``true``/``false`` (MuJoCo also accepts 1/0)."""
        if key not in self:
            return default
        v = str(self[key]).strip().lower()
        if v in ("true", "1"):
            return True
        if v in ("false", "0"):
            return False
        raise self.error(key, "allowed values are 'true', 'false'")
