"""Columns of one attempt's seconds packed into one compressed blob, and back.

A column is a list with one value per second: whole numbers ("i", exact), other numbers kept to 0.01 of their unit
("c": sysbench prints two decimals, so its figures come back exactly as parsed), numbers too large or not finite
for that ("f", 8-byte floats as stored), text ("s"), or lists of numbers of any length ("l": a host's per-core
figures, kept to 0.01). None may stand anywhere. Numbers are stored as the change from the second before, zigzag
coded and split into byte planes before zlib, so a figure that changes little or not at all costs next to nothing.

The blob: b"BS1", then zlib of (header length, 4 bytes little-endian; the header as JSON: the row count and, per
column, its name, type, byte length and the indices of its Nones; the columns' bytes one after the other)."""
from __future__ import annotations

import json
import math
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

MAGIC = b"BS1"
CENTI = 100
# A number kept to 0.01 must fit an int64 with room for its changes: above this it is stored as a float.
_CENTI_LIMIT = 2 ** 60 / CENTI


class PackError(ValueError):
    """A blob that is not a packing of this format, or a column of a shape it cannot hold."""


def _planes(values: np.ndarray) -> bytes:
    # The i-th bytes of every value together: the high bytes of small changes are zero runs zlib folds away.
    return values.view(np.uint8).reshape(-1, 8).T.tobytes()


def _unplanes(data: bytes, n: int) -> np.ndarray:
    return np.frombuffer(data, dtype=np.uint8).reshape(8, n).T.copy().view(np.uint64).reshape(n)


def _deltas(whole: np.ndarray) -> bytes:
    changes = np.diff(whole, prepend=np.int64(0))
    zigzag = ((changes << 1) ^ (changes >> 63)).astype(np.uint64)
    return _planes(zigzag)


def _undeltas(data: bytes, n: int) -> np.ndarray:
    zigzag = _unplanes(data, n)
    changes = (zigzag >> np.uint64(1)).astype(np.int64) ^ -((zigzag & np.uint64(1)).astype(np.int64))
    return np.cumsum(changes, dtype=np.int64)


def _number_type(values: Sequence[Any]) -> str:
    known = [v for v in values if v is not None]
    for v in known:
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise PackError(f"not a number: {v!r}")
    if all(isinstance(v, int) for v in known) and all(abs(v) < 2 ** 62 for v in known):
        return "i"
    if all(math.isfinite(v) and abs(v) < _CENTI_LIMIT for v in known):
        return "c"
    return "f"


def _filled(values: Sequence[Any]) -> tuple[list[Any], list[int]]:
    """The values with each None replaced by the value before it (0 at the start), so that a gap costs no change;
    and where the Nones were."""
    nulls, out, last = [], [], 0
    for i, v in enumerate(values):
        if v is None:
            nulls.append(i)
            out.append(last)
        else:
            out.append(v)
            last = v
    return out, nulls


def _numbers_encode(values: Sequence[Any], kind: str) -> bytes:
    if kind == "i":
        return _deltas(np.asarray(values, dtype=np.int64))
    if kind == "c":
        return _deltas(np.rint(np.asarray(values, dtype=np.float64) * CENTI).astype(np.int64))
    return _planes(np.asarray(values, dtype=np.float64).view(np.uint64))


def _numbers_decode(data: bytes, n: int, kind: str) -> list[Any]:
    if kind == "i":
        return _undeltas(data, n).tolist()
    if kind == "c":
        return (_undeltas(data, n) / CENTI).tolist()
    return _unplanes(data, n).view(np.float64).tolist()


def _column_type(values: Sequence[Any]) -> str:
    known = [v for v in values if v is not None]
    if known and all(isinstance(v, str) for v in known):
        return "s"
    if known and all(isinstance(v, list | tuple) for v in known):
        return "l"
    return _number_type(values)


def pack(columns: Mapping[str, Sequence[Any]]) -> bytes:
    """The columns (all of one length) as one blob; PackError naming the column that holds what it cannot."""
    lengths = {len(v) for v in columns.values()}
    if len(lengths) > 1:
        raise PackError(f"columns of different lengths: {sorted(lengths)}")
    n = lengths.pop() if lengths else 0
    header: dict[str, Any] = {"n": n, "c": []}
    parts: list[bytes] = []
    for name, values in columns.items():
        try:
            kind = _column_type(values)
            filled, nulls = _filled(values)
            entry: dict[str, Any] = {"name": name, "type": kind, "nulls": nulls}
            if kind == "s":
                entry["text"] = [v if v is not None else "" for v in values]
                data = b""
            elif kind == "l":
                items = [list(v) if v is not None else [] for v in values]
                flat = [x for item in items for x in item]
                entry["inner"] = _number_type(flat)
                lengths_data = _numbers_encode([len(item) for item in items], "i")
                data = lengths_data + _numbers_encode(flat, entry["inner"])
                entry["flat"] = len(flat)
            else:
                data = _numbers_encode(filled, kind)
        except (PackError, TypeError, OverflowError) as exc:
            raise PackError(f"column {name!r}: {exc}") from exc
        entry["bytes"] = len(data)
        header["c"].append(entry)
        parts.append(data)
    head = json.dumps(header, separators=(",", ":")).encode()
    return MAGIC + zlib.compress(len(head).to_bytes(4, "little") + head + b"".join(parts), 6)


def unpack(blob: bytes) -> dict[str, list[Any]]:
    """The columns a blob of pack() holds, in their order."""
    if not blob.startswith(MAGIC):
        raise PackError("not a packing of seconds (its first bytes differ)")
    try:
        raw = zlib.decompress(blob[len(MAGIC):])
        size = int.from_bytes(raw[:4], "little")
        header = json.loads(raw[4:4 + size])
    except (zlib.error, ValueError) as exc:
        raise PackError(f"a damaged packing of seconds: {exc}") from exc
    n, offset = header["n"], 4 + size
    out: dict[str, list[Any]] = {}
    for entry in header["c"]:
        data = raw[offset:offset + entry["bytes"]]
        offset += entry["bytes"]
        kind = entry["type"]
        if kind == "s":
            values: list[Any] = list(entry["text"])
        elif kind == "l":
            lengths = _numbers_decode(data[:8 * n], n, "i")
            flat = _numbers_decode(data[8 * n:], entry["flat"], entry["inner"])
            values, at = [], 0
            for length in lengths:
                values.append(flat[at:at + length])
                at += length
        else:
            values = _numbers_decode(data, n, kind)
        for i in entry["nulls"]:
            values[i] = None
        out[entry["name"]] = values
    return out
