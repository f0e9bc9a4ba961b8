"""MJCF ``<hfield file=...>``: elevation from a PNG image or MuJoCo's binary format, read as MuJoCo
reads it (row order, grey conversion, float32 normalisation to [0, 1]); checked sample for sample
against MuJoCo's compiled model (hfield_data, hfield_nrow/ncol) on files written here. Bad files
raise an error naming the file and the defect."""

import struct
import warnings
import zlib

import numpy as np
import polyphys
import pytest
from polyphys.errors import ImportError_, PolyphysWarning

XML = """<mujoco><compiler meshdir="{meshdir}"/><asset>
<hfield name="h" file="{file}" size="1.5 1 0.4 0.2"/></asset>
<worldbody><geom name="terrain" type="hfield" hfield="h"/>
<body pos="0 0 1"><freejoint/><geom type="sphere" size="0.1"/></body></worldbody></mujoco>"""


def _chunk(t, d):
    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if (pa <= pb and pa <= pc) else (b if pb <= pc else c)


def write_png(path, rows, color, depth, palette=None):
    """A PNG of packed sample rows (uint8 arrays, one per image row, top first); row r uses
    filter type r % 5 (None, Sub, Up, Average, Paeth) so that every unfilter path is read."""
    rows = [np.asarray(r, np.uint8) for r in rows]
    chans = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[color]
    bpp = max(1, chans * depth // 8)
    h = len(rows)
    w = len(rows[0]) * 8 // (chans * depth)
    raw = b""
    prev = np.zeros(len(rows[0]), np.int32)
    for r, line in enumerate(rows):
        cur = line.astype(np.int32)
        ft = r % 5
        out = np.zeros_like(cur)
        for i in range(len(cur)):
            a = cur[i - bpp] if i >= bpp else 0
            c = prev[i - bpp] if i >= bpp else 0
            pred = (0, a, prev[i], (a + prev[i]) >> 1, _paeth(a, prev[i], c))[ft]
            out[i] = (cur[i] - pred) & 255
        raw += bytes([ft]) + out.astype(np.uint8).tobytes()
        prev = cur
    data = b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color, 0, 0, 0))
    if palette is not None:
        data += _chunk(b"PLTE", np.asarray(palette, np.uint8).tobytes())
    data += _chunk(b"IDAT", zlib.compress(raw)) + _chunk(b"IEND", b"")
    path.write_bytes(data)


def write_bin(path, data, header=None):
    data = np.asarray(data, np.float32)
    nr, nc = data.shape if header is None else header
    path.write_bytes(struct.pack("<ii", nr, nc) + data.tobytes())


def _ours_and_mujoco(tmp_path, fname, meshdir=""):
    mujoco = pytest.importorskip("mujoco")
    xml = tmp_path / "m.xml"
    xml.write_text(XML.format(file=fname, meshdir=meshdir))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        desc = polyphys.describe(str(xml))
    g = [g for g in desc.geoms if g.type == "hfield"][0]
    m = mujoco.MjModel.from_xml_path(str(xml))
    nr, nc = int(m.hfield_nrow[0]), int(m.hfield_ncol[0])
    return g, m.hfield_data[:nr * nc].reshape(nr, nc).astype(np.float64), m


def _check(g, ref, m):
    # same samples bit for bit (both float32 arithmetic: data - min, / (max - min))
    assert g.hfield["data"].shape == ref.shape
    np.testing.assert_array_equal(g.hfield["data"], ref)
    np.testing.assert_allclose(g.hfield["size"], m.hfield_size[0], rtol=0, atol=1e-15)
    assert g.hfield["data"].min() == 0.0 and g.hfield["data"].max() == 1.0


rng = np.random.default_rng(5)


@pytest.mark.parametrize("kind", ["grey8", "grey16", "grey4", "grey_alpha", "rgb", "rgba16",
                                  "palette"])
def test_png_matches_mujoco(tmp_path, kind):
    h, w = 7, 9
    if kind == "grey8":
        rows, color, depth, pal = rng.integers(0, 256, (h, w)), 0, 8, None
    elif kind == "grey16":
        rows = rng.integers(0, 65536, (h, w)).astype(">u2").view(np.uint8).reshape(h, 2 * w)
        color, depth, pal = 0, 16, None
    elif kind == "grey4":
        v = rng.integers(0, 16, (h, 10))                              # 10 columns: 5 bytes a row
        rows, color, depth, pal = (v[:, 0::2] << 4) | v[:, 1::2], 0, 4, None
    elif kind == "grey_alpha":
        rows, color, depth, pal = rng.integers(0, 256, (h, 2 * w)), 4, 8, None
    elif kind == "rgb":
        rows, color, depth, pal = rng.integers(0, 256, (h, 3 * w)), 2, 8, None
    elif kind == "rgba16":
        rows, color, depth, pal = rng.integers(0, 256, (h, 8 * w)), 6, 16, None
    else:
        rows, color, depth = rng.integers(0, 12, (h, w)), 3, 8
        pal = rng.integers(0, 256, (12, 3))
    write_png(tmp_path / "t.PNG", rows, color, depth, pal)
    g, ref, m = _ours_and_mujoco(tmp_path, "t.PNG")
    _check(g, ref, m)
    # orientation: the image's top row is the +y row (MuJoCo flips the image)
    if kind == "grey8":
        top = rows[0].astype(float)
        np.testing.assert_allclose(g.hfield["data"][-1], (top - rows.min()) / np.ptp(rows),
                                   rtol=0, atol=1e-7)


def test_binary_matches_mujoco_and_meshdir(tmp_path):
    """MuJoCo's binary format (row 0 at -y, no flip) found through compiler meshdir; heights
    reach the collision pipeline (a prism top equals data × size[2])."""
    data = rng.normal(size=(5, 8)) * 3.0
    (tmp_path / "terrain").mkdir()
    write_bin(tmp_path / "terrain" / "t.bin", data)
    g, ref, m = _ours_and_mujoco(tmp_path, "t.bin", meshdir="terrain")
    _check(g, ref, m)
    d32 = data.astype(np.float32)
    np.testing.assert_allclose(g.hfield["data"][0], (d32[0] - d32.min()) / np.ptp(d32), atol=1e-6)
    from polyphys.plugins.rigid.collision import _hfield_prisms

    p0 = _hfield_prisms(g)[0]           # cell (0, 0), vertices (0,0), (0,1), (1,1): top z
    np.testing.assert_allclose(p0[:3, 2], [ref[0, 0] * 0.4, ref[0, 1] * 0.4, ref[1, 1] * 0.4])


def test_constant_file_gives_zero_heights(tmp_path):
    mujoco = pytest.importorskip("mujoco")  # noqa: F841
    write_bin(tmp_path / "flat.bin", np.full((3, 4), 2.5))
    g, ref, m = _ours_and_mujoco(tmp_path, "flat.bin")
    assert np.all(g.hfield["data"] == 0) and np.all(ref == 0)


def _load(tmp_path, fname, extra=""):
    xml = tmp_path / "bad.xml"
    xml.write_text(XML.format(file=fname, meshdir="").replace('size="1.5', extra + ' size="1.5'))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolyphysWarning)
        return polyphys.describe(str(xml))


def test_bad_files_raise_naming_file_and_defect(tmp_path):
    cases = []
    write_bin(tmp_path / "short.bin", np.zeros((3, 4)), header=(3, 5))
    cases.append(("short.bin", "short.bin.*56 bytes.*3 x 5 has 68"))
    write_bin(tmp_path / "neg.bin", np.zeros(2).reshape(1, 2), header=(-1, 2))
    cases.append(("neg.bin", "neg.bin.*nrow = -1.*must be positive"))
    (tmp_path / "tiny.bin").write_bytes(b"\x01\x00")
    cases.append(("tiny.bin", "tiny.bin.*too short"))
    write_bin(tmp_path / "nan.bin", np.array([[0.0, np.nan], [1.0, 2.0]]))
    cases.append(("nan.bin", "nan.bin.*NaN"))
    (tmp_path / "junk.png").write_bytes(b"not a png at all")
    cases.append(("junk.png", "junk.png.*not a PNG"))
    write_png(tmp_path / "ok.png", np.zeros((2, 3)), 0, 8)
    good = (tmp_path / "ok.png").read_bytes()
    (tmp_path / "crc.png").write_bytes(good[:20] + bytes([good[20] ^ 1]) + good[21:])
    cases.append(("crc.png", "crc.png.*CRC"))
    (tmp_path / "cut.png").write_bytes(good[:40])
    cases.append(("cut.png", "cut.png.*truncated"))
    # an IDAT that is not zlib data
    ihdr = _chunk(b"IHDR", struct.pack(">IIBBBBB", 3, 2, 8, 0, 0, 0, 0))
    (tmp_path / "zlib.png").write_bytes(b"\x89PNG\r\n\x1a\n" + ihdr + _chunk(b"IDAT", b"xxxx")
                                        + _chunk(b"IEND", b""))
    cases.append(("zlib.png", "zlib.png.*corrupt"))
    ihdr = _chunk(b"IHDR", struct.pack(">IIBBBBB", 3, 2, 8, 0, 0, 0, 1))
    (tmp_path / "adam7.png").write_bytes(b"\x89PNG\r\n\x1a\n" + ihdr + _chunk(
        b"IDAT", zlib.compress(b"\x00" * 8)) + _chunk(b"IEND", b""))
    cases.append(("adam7.png", "adam7.png.*interlaced"))
    cases.append(("missing.bin", "missing.bin.*not found"))
    for fname, pattern in cases:
        with pytest.raises(ImportError_, match=pattern):
            _load(tmp_path, fname)
    with pytest.raises(ImportError_, match="both file and nrow/ncol"):
        _load(tmp_path, "ok.png", extra='nrow="2" ncol="3"')
