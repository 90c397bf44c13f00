"""Read character vectors out of an installed R package's lazy-load data (data/Rdata.rdx + Rdata.rdb), without R.

The narrative prompt set is Jane Austen's novels as the `janeaustenr` R package ships them (Debian's
r-cran-janeaustenr, or CRAN's janeaustenr). R stores a package's data as a lazy-load database: the index
(Rdata.rdx, a gzipped serialized list: variable -> (offset, length) in Rdata.rdb) and the objects, each a 4-byte
big-endian length and a zlib stream of one serialized object (R Internals, "Serialization Formats" and "Lazy
loading"). Only what a character vector needs is read: the XDR format ("X\\n"), pairlists, symbols, references and
the vector types; anything else raises ValueError, so a changed package fails loudly instead of reading garbage.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from pathlib import Path

NILVALUE, REF, SYM, LIST, CHAR, LGL, INT, REAL, STR, VEC = 254, 255, 1, 2, 9, 10, 13, 14, 16, 19


class _Unserializer:
    def __init__(self, data: bytes):
        if data[:2] != b"X\n":
            raise ValueError("not an R serialization in XDR format")
        self.data, self.at, self.refs = data, 2, []
        version = self._int()
        self._int(), self._int()  # the writer's R version, the oldest R that reads it
        if version == 3:
            n = self._int()
            self.at += n  # the native encoding's name

    def _int(self) -> int:
        (value,) = struct.unpack_from(">i", self.data, self.at)
        self.at += 4
        return value

    def read(self):
        flags = self._int()
        kind, has_attr, has_tag = flags & 0xFF, flags & (1 << 9), flags & (1 << 10)
        if kind == NILVALUE:
            return None
        if kind == REF:
            return self.refs[(flags >> 8) - 1]
        if kind == SYM:
            symbol = ("symbol", self.read())
            self.refs.append(symbol)
            return symbol
        if kind == CHAR:
            n = self._int()
            if n == -1:
                return None  # NA_character_
            text = self.data[self.at:self.at + n].decode("utf-8")
            self.at += n
            return text
        if kind == LIST:  # a pairlist (attributes): [(tag, value), ...]
            if has_attr:
                self.read()
            tag = self.read() if has_tag else None
            head, tail = self.read(), self.read()
            return [(tag, head)] + (tail or [])
        if kind in (LGL, INT, REAL, STR, VEC):
            n = self._int()
            if kind in (LGL, INT, REAL):
                code, size = ("i", 4) if kind != REAL else ("d", 8)
                values = list(struct.unpack_from(f">{n}{code}", self.data, self.at))
                self.at += size * n
            else:
                values = [self.read() for _ in range(n)]
            if has_attr:
                attributes = {tag[1]: value for tag, value in self.read()}
                if "names" in attributes:
                    return dict(zip(attributes["names"], values))
            return values
        raise ValueError(f"R object of SEXP type {kind}: not read here")


def read_lazy_data(package_dir: Path) -> dict[str, object]:
    """Every object of the package's data/Rdata.{rdx,rdb}, by name."""
    index = _Unserializer(gzip.decompress((package_dir / "data" / "Rdata.rdx").read_bytes())).read()
    if index.get("compressed") != [1]:
        raise ValueError(f"{package_dir}: data compressed as {index.get('compressed')!r}; only zlib (1) is read here")
    blob = (package_dir / "data" / "Rdata.rdb").read_bytes()
    out = {}
    for name, (offset, length) in index["variables"].items():
        chunk = blob[offset:offset + length]
        (size,) = struct.unpack_from(">I", chunk)
        raw = zlib.decompress(chunk[4:])
        if len(raw) != size:
            raise ValueError(f"{name}: {len(raw)} bytes after zlib, the index says {size}")
        out[name] = _Unserializer(raw).read()
    return out
