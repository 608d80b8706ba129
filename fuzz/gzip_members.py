"""The fuzz kind of record files whose compressed stream is not one clean
stream: GZIP files of several members (`cat a.gz b.gz`, pigz, gzip's append
mode), and GZIP or ZLIB streams followed by other bytes.

An input is [compression byte][file bytes], as for compressed_record_file.
The mutations work on the members: the framed records are split into members
at any byte (a member boundary need not fall between records), members are
dropped, duplicated, emptied, cut short or damaged, and bytes are appended
after the last one (zeros, garbage, a partial GZIP header, a whole ZLIB
stream).

The oracle decodes the file on its own with Python's zlib: a GZIP file is
valid when it is a sequence of complete, valid members and nothing else; a
ZLIB file is exactly one complete stream. A valid file must give exactly the
records of the decompressed bytes' framing; any other file must be refused."""

import gzip
import os
import tempfile
import zlib

import treadle as td

from fuzz.base import Kind, Wrong, frame_records, split_checked_records, split_records
from fuzz.mutate import Mutator

_COMPRESSIONS = ("GZIP", "ZLIB")
_WBITS = {"GZIP": 31, "ZLIB": 15}


def inflate_all(body, compression):
    """The bytes a reader must get from `body`, or None when the file is not
    valid: for GZIP, every member in turn, for ZLIB the one stream, with no
    bytes left over and none cut short. An empty file holds nothing."""
    if compression == "":
        return body
    out, rest = bytearray(), body
    while rest:
        d = zlib.decompressobj(_WBITS[compression])
        try:
            out += d.decompress(rest)
        except zlib.error:
            return None
        if not d.eof:
            return None  # cut short
        rest = d.unused_data
        if rest and compression == "ZLIB":
            return None  # bytes after the stream
    return bytes(out)


def members_of(body, compression):
    """The decompressed bytes of each member (a ZLIB file has one), or None if invalid."""
    members, rest = [], body
    while rest:
        d = zlib.decompressobj(_WBITS[compression])
        try:
            plain = d.decompress(rest)
        except zlib.error:
            return None
        if not d.eof:
            return None
        members.append(plain)
        rest = d.unused_data
    return members


def compress_member(plain, compression, level=6):
    if compression == "GZIP":
        return gzip.compress(plain, compresslevel=level, mtime=0)
    return zlib.compress(plain, level)


def split_at(rng, plain, parts):
    cuts = sorted(rng.randrange(len(plain) + 1) for _ in range(parts - 1))
    return [plain[a:b] for a, b in zip([0] + cuts, cuts + [len(plain)])]


def _records(n, size):
    return [bytes([65 + i % 26]) * size + str(i).encode() for i in range(n)]


class GzipMembersKind(Kind):
    name = "gzip_members_record_file"

    def seeds(self):
        """Valid files (the invalid ones, a tail after the last member, are in
        fuzz/regressions/gzip_members_record_file/)."""
        small = frame_records(_records(5, 10))
        big = frame_records(_records(3, 70000))  # members over several inflate chunks
        g = lambda plain, level=6: compress_member(plain, "GZIP", level)  # noqa: E731
        z = lambda plain: compress_member(plain, "ZLIB")  # noqa: E731
        return [
            b"\x00" + g(small[:30]) + g(small[30:]),                     # a member boundary inside a record
            b"\x00" + g(small) + g(small, 1),                            # `cat a.gz a.gz`
            b"\x00" + b"".join(g(p) for p in split_at(_SeedRng(), big, 4)),
            b"\x00" + g(b"") + g(small) + g(b""),                        # empty members
            b"\x01" + z(small),
            b"\x01" + z(big),
        ]

    def mutate(self, rng, data):
        if not data:
            return bytes([rng.randrange(2)])
        compression = _COMPRESSIONS[data[0] % 2]
        body = data[1:]
        members = members_of(body, compression)
        r = rng.random()
        if members is None or r < 0.15:
            return data[:1] + self._tail_or_damage(rng, body, compression)
        if r < 0.2:
            return bytes([1 - data[0] % 2]) + body  # read with the other compression
        plain = b"".join(members)
        if r < 0.45:  # split again into members, at any byte, at mixed levels
            parts = split_at(rng, plain, rng.randrange(1, 6))
            body = b"".join(compress_member(p, compression, rng.choice([0, 1, 6, 9])) for p in parts)
        elif r < 0.6 and members:  # a member dropped, duplicated or emptied
            i = rng.randrange(len(members))
            op = rng.randrange(3)
            if op == 0:
                del members[i]
            elif op == 1:
                members.insert(i, members[i])
            else:
                members[i] = b""
            body = b"".join(compress_member(p, compression) for p in members)
        elif r < 0.75:  # the records changed (lengths that lie), then split
            records = split_records(plain)
            if records is not None and records:
                records[rng.randrange(len(records))] = Mutator(rng).damage(records[0])
                plain = frame_records(records, rng)
            body = b"".join(compress_member(p, compression) for p in split_at(rng, plain, rng.randrange(1, 4)))
        else:
            body = self._tail_or_damage(rng, body, compression)
        return data[:1] + body

    def _tail_or_damage(self, rng, body, compression):
        r = rng.random()
        if r < 0.5:
            tails = [b"\x00" * rng.randrange(1, 40), b"\x1f\x8b", b"\x1f\x8b\x08\x00", b"junk",
                     compress_member(b"", compression), compress_member(b"x" * 12, "ZLIB"),
                     compress_member(b"x" * 12, "GZIP")[:rng.randrange(1, 30)], body[:rng.randrange(len(body) + 1)]]
            return body + rng.choice(tails)
        if r < 0.7 and body:
            return body[:rng.randrange(len(body))]  # cut short
        return Mutator(rng).damage(body)

    def consume(self, data):
        if not data:
            return
        compression = _COMPRESSIONS[data[0] % 2]
        body = data[1:]
        path = _write_temp(body)
        try:
            expected = inflate_all(body, compression)
            records = split_checked_records(expected) if expected is not None else None
            try:
                got = [bytes(r.numpy()) for r in td.data.TFRecordDataset(path, compression_type=compression)]
            except td.errors.DataLossError:
                if records is not None:
                    raise Wrong(f"a valid {compression} file of {len(records)} records was refused") from None
                raise
            again = td.loom.read_schedules(path, compression_type=compression)
        finally:
            os.unlink(path)
        if got != list(again):
            raise Wrong("TFRecordDataset and read_schedules read different records")
        if records is None:
            why = "an invalid stream" if expected is None else "records whose framing is broken"
            raise Wrong(f"{len(got)} records read from a {compression} file with {why}")
        if got != records:
            raise Wrong(f"read {len(got)} records, the file's members hold {len(records)} (or different ones)")


class _SeedRng:
    """Fixed cut points for a seed (the seeds do not depend on a random state)."""

    def __init__(self):
        self._cuts = iter([1000, 70000, 150000])

    def randrange(self, _n):
        return next(self._cuts)


def _write_temp(data):
    fd, path = tempfile.mkstemp(suffix=".tfrecord")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path
