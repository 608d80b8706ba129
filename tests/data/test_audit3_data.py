"""Regression tests of the third reliability audit: the td.data items. Each
test is named test_itemNN_... after the audit's item it checks."""

import gzip
import os
import signal
import struct
import subprocess
import sys
import threading
import zlib

import numpy as np
import pytest

import treadle as td
from treadle import _core

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _masked_crc(b):
    c = _core.crc32c(b)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _framed(records):
    out = b""
    for r in records:
        head = struct.pack("<Q", len(r))
        out += head + struct.pack("<I", _masked_crc(head)) + r + struct.pack("<I", _masked_crc(r))
    return out


def _read_both(path, compression):
    got = [bytes(r.numpy()) for r in td.data.TFRecordDataset(str(path), compression_type=compression)]
    assert td.loom.read_schedules(str(path), compression_type=compression) == got
    return got


RECORDS = [b"record %d " % i * (i + 1) for i in range(20)]


# ------------------------------------------------------------------ item 3: GZIP members, trailing bytes

def test_item03_concatenated_gzip_files_are_read_to_the_end(tmp_path):
    a, b = tmp_path / "a.gz", tmp_path / "b.gz"
    a.write_bytes(gzip.compress(_framed(RECORDS[:7])))
    b.write_bytes(gzip.compress(_framed(RECORDS[7:])))
    both = tmp_path / "ab.gz"
    both.write_bytes(a.read_bytes() + b.read_bytes())  # cat a.gz b.gz
    assert _read_both(both, "GZIP") == RECORDS


def test_item03_gzip_append_mode(tmp_path):
    path = tmp_path / "appended.gz"
    for i in range(0, 20, 5):
        with gzip.open(path, "ab") as f:
            f.write(_framed(RECORDS[i:i + 5]))
    assert _read_both(path, "GZIP") == RECORDS


def test_item03_members_split_inside_records_over_inflate_chunks(tmp_path):
    big = [bytes([65 + i]) * 90000 for i in range(4)] + RECORDS
    plain = _framed(big)
    cuts = [0, 5, 100000, 100001, 250000, len(plain)]
    members = [gzip.compress(plain[a:b], compresslevel=1 + i % 9) for i, (a, b) in enumerate(zip(cuts, cuts[1:]))]
    members.insert(2, gzip.compress(b""))  # an empty member
    path = tmp_path / "pigz-like.gz"
    path.write_bytes(b"".join(members))
    assert _read_both(path, "GZIP") == big


@pytest.mark.parametrize("tail, fragment", [
    (b"garbage!", "not another GZIP member"),
    (b"\x00" * 8, "not another GZIP member"),
    (b"\x1f\x8b\x08", "truncated GZIP stream"),
])
def test_item03_bytes_after_the_last_gzip_member_are_data_loss(tmp_path, tail, fragment):
    path = tmp_path / "tail.gz"
    path.write_bytes(gzip.compress(_framed(RECORDS)) + tail)
    with pytest.raises(td.errors.DataLossError, match=fragment):
        _read_both(path, "GZIP")


@pytest.mark.parametrize("tail", [b"\x00", b"garbage", zlib.compress(_framed(RECORDS[:2]))])
def test_item03_bytes_after_a_zlib_stream_are_data_loss(tmp_path, tail):
    path = tmp_path / "tail.zlib"
    good = zlib.compress(_framed(RECORDS))
    path.write_bytes(good + tail)
    with pytest.raises(td.errors.DataLossError, match=f"after the end of the ZLIB stream, from byte offset {len(good)}"):
        list(td.data.TFRecordDataset(str(path), compression_type="ZLIB"))
    with pytest.raises(td.errors.DataLossError, match="after the end of the ZLIB stream"):
        td.loom.read_schedules(str(path), compression_type="ZLIB")
    path.write_bytes(good)
    assert _read_both(path, "ZLIB") == RECORDS
