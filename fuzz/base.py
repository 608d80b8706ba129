"""What every input kind of the fuzzer shares: the outcomes a consumer can
have, the Kind interface, and TFRecord framing (record files, schedule files,
cache files)."""

import struct

import treadle as td
from treadle import _core

from fuzz.mutate import Mutator, mutate_message_bytes


class Wrong(AssertionError):
    """An accepted input gave a result that contradicts the input."""


class KnownFinding(Exception):
    """An oracle failure already reported to the code's owners, with a
    reproducer in fuzz/known/<kind>/ (see fuzz/known/README.md). Counted on
    its own ("known") so that the fuzz run in CI stays green until it is
    fixed; tests/test_fuzz_corpus.py checks that each reproducer still shows
    it, and tells whoever fixes it to move the input to fuzz/regressions/."""


REJECTIONS = (td.errors.OpError, ValueError, TypeError)
DEADLINE_S = 2.0  # every consumer runs under td.experimental.deadline


class Kind:
    name = None
    proto = None
    rejections = REJECTIONS  # what a consumer may raise for an input it refuses rightly
    deadline_s = DEADLINE_S  # the time limit of treadle's runs (None: the kind bounds its own waits)
    seconds_share = 1.0  # the share of run.py's --seconds this kind fuzzes for

    def seeds(self):
        raise NotImplementedError

    def mutate(self, rng, data):
        return mutate_message_bytes(rng, self.proto, data)

    def consume(self, data):
        raise NotImplementedError


def split_records(data):
    """The records of TFRecord bytes (None when the framing is broken)."""
    out, i = [], 0
    while i + 12 <= len(data):
        n = struct.unpack("<Q", data[i:i + 8])[0]
        if i + 16 + n > len(data):
            return None
        out.append(data[i + 12:i + 12 + n])
        i += 16 + n
    return out if i == len(data) else None


def _masked_crc(b):
    c = _core.crc32c(b)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def split_checked_records(data):
    """The records of TFRecord bytes whose framing and both checksums (of
    each length and each record) are right; None otherwise."""
    records = split_records(data)
    if records is None:
        return None
    i = 0
    for r in records:
        head = data[i:i + 8]
        if struct.unpack("<I", data[i + 8:i + 12])[0] != _masked_crc(head) or \
                struct.unpack("<I", data[i + 12 + len(r):i + 16 + len(r)])[0] != _masked_crc(r):
            return None
        i += 16 + len(r)
    return records


def frame_records(records, rng=None):
    masked = _masked_crc
    out = bytearray()
    for r in records:
        head = struct.pack("<Q", len(r))
        out += head + struct.pack("<I", masked(head)) + r + struct.pack("<I", masked(r))
    if rng is not None and records and rng.random() < 0.3:  # a length that lies, with a valid checksum
        head = struct.pack("<Q", rng.choice([2 ** 31, 2 ** 31 - 1, 2 ** 20, len(records[-1]) + 5]))
        out += head + struct.pack("<I", masked(head)) + records[-1][:8]
    return bytes(out)


def mutate_records(rng, data, mutate_record):
    """TFRecord bytes mutated a record at a time: one record changed by
    `mutate_record(rng, record)`, dropped, duplicated or swapped with
    another, and framed again (sometimes with a trailing record whose length
    lies); unframed or, one time in ten, anyway, the bytes damaged as bytes."""
    records = split_records(data)
    if records is None or rng.random() < 0.1:
        return Mutator(rng).damage(data)
    records = list(records)
    r = rng.random()
    if records and r < 0.6:
        i = rng.randrange(len(records))
        records[i] = mutate_record(rng, records[i])
    elif records and r < 0.75:
        del records[rng.randrange(len(records))]
    elif records and r < 0.9:
        records.insert(rng.randrange(len(records) + 1), records[rng.randrange(len(records))])
    elif records:
        i, j = rng.randrange(len(records)), rng.randrange(len(records))
        records[i], records[j] = records[j], records[i]
    return frame_records(records, rng)
