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


# ------------------------------------------------------------------ items 6, 7, 15: interleave as TensorFlow's

class CountingSource:
    """A Python source that counts the elements read from it."""

    def __init__(self, n, bad_at=None):
        self.n, self.bad_at, self.read = n, bad_at, 0

    def dataset(self):
        def gen():
            for i in range(self.n):
                self.read += 1
                if i == self.bad_at:
                    raise ValueError(f"input element {i} is bad")
                yield i
        return td.data.Dataset.from_generator(gen, output_signature=td.TensorSpec([], td.int64))


def test_item06_interleave_over_an_empty_dataset_is_empty():
    ds = td.data.Dataset.range(0).interleave(lambda x: td.data.Dataset.from_tensors(x).repeat(3), cycle_length=2)
    assert ds.element_spec == td.TensorSpec([], td.int64)
    assert list(ds) == []
    ds = td.data.Dataset.from_tensor_slices(np.zeros([0, 2], np.float32)).interleave(
        lambda x: td.data.Dataset.from_tensor_slices(x), cycle_length=3, num_parallel_calls=2)
    assert ds.element_spec == td.TensorSpec([], td.float32)
    assert list(ds) == []


def test_item06_element_spec_is_traced_without_reading_the_input():
    source = CountingSource(5)
    concrete_calls = []

    def map_func(x):
        if not isinstance(x, td.Tensor) or hasattr(x, "numpy"):
            concrete_calls.append(x)
        return td.data.Dataset.from_tensors(td.cast(x, td.float32)).repeat(2)

    ds = source.dataset().interleave(map_func, cycle_length=2)
    assert ds.element_spec == td.TensorSpec([], td.float32)
    assert source.read == 0
    assert [float(v) for v in ds] == [0, 1, 0, 1, 2, 3, 2, 3, 4, 4]
    assert source.read == 5


def test_item07_interleave_opens_its_cycle_lazily_as_tensorflow():
    # TensorFlow reads an input element only when the cycle reaches an empty
    # slot: take(5) of cycle_length=4, block_length=3 opens slots 0 and 1 only.
    source = CountingSource(10, bad_at=2)
    opened = []

    def map_func(x):
        opened.append(x)
        return td.data.Dataset.from_tensors(x).repeat(3)

    ds = source.dataset().interleave(map_func, cycle_length=4, block_length=3).take(5)
    assert ds.element_spec == td.TensorSpec([], td.int64)
    assert [int(v) for v in ds] == [0, 0, 0, 1, 1]
    assert source.read == 2
    assert [int(x) for x in opened if hasattr(x, "numpy")] == [0, 1]
    # Iterated further, the bad input element is met where TensorFlow meets it.
    with pytest.raises(ValueError, match="input element 2 is bad"):
        list(source.dataset().interleave(map_func, cycle_length=4, block_length=3))


def _tf_interleave(inputs, make, cycle, block):
    """TensorFlow's documented sequential interleave, in plain Python."""
    inputs, slots, out, at = iter(inputs), [None] * cycle, [], 0
    done = False
    while not done or any(s is not None for s in slots):
        if slots[at] is None and not done:
            x = next(inputs, None)
            if x is None:
                done = True
            else:
                slots[at] = iter(make(x))
        if slots[at] is not None:
            taken = 0
            while taken < block:
                v = next(slots[at], None)
                if v is None:
                    slots[at] = None
                    break
                out.append(v)
                taken += 1
        at = (at + 1) % cycle
    return out


@pytest.mark.parametrize("cycle, block, threads", [(1, 1, None), (2, 1, None), (3, 2, None), (4, 3, None),
                                                   (7, 1, None), (3, 2, 2), (4, 1, 3)])
def test_item07_interleave_order_is_tensorflows(cycle, block, threads):
    lengths = [3, 0, 5, 1, 4, 2, 0, 6, 1]
    make = lambda i: [100 * i + k for k in range(lengths[i])]  # noqa: E731
    lengths_t = td.constant(lengths, td.int64)
    ds = td.data.Dataset.range(len(lengths)).interleave(
        lambda i: td.data.Dataset.from_tensor_slices(td.range(td.gather(lengths_t, i)) + 100 * i),
        cycle_length=cycle, block_length=block, num_parallel_calls=threads)
    assert [int(v) for v in ds] == _tf_interleave(range(len(lengths)), make, cycle, block)


def test_item15_interleave_allocates_only_the_slots_it_opens():
    # 2^24 slots on a 3-element input: memory follows the 3 open datasets.
    ds = td.data.Dataset.range(3).interleave(lambda x: td.data.Dataset.from_tensors(x).repeat(2),
                                             cycle_length=1 << 24)
    assert [int(v) for v in ds] == [0, 1, 2, 0, 1, 2]
    ds = td.data.Dataset.range(3).interleave(lambda x: td.data.Dataset.from_tensors(x),
                                             cycle_length=1 << 24, num_parallel_calls=2)
    assert sorted(int(v) for v in ds) == [0, 1, 2]


@pytest.mark.parametrize("cycle", [(1 << 24) + 1, 1 << 28, 1 << 62])
def test_item15_cycle_length_beyond_the_bound_is_a_clear_error(cycle):
    with pytest.raises(td.errors.InvalidArgumentError, match=f"cycle_length {cycle} is more than the 16777216"):
        td.data.Dataset.range(3).interleave(lambda x: td.data.Dataset.from_tensors(x), cycle_length=cycle)


# ------------------------------------------------------------------ subprocess scripts

def run_script(code, timeout=120, env=None):
    """Runs `code` in a fresh interpreter (the repository's and this
    directory's modules importable); returns the CompletedProcess. A hang
    fails the test at the timeout, with what the script printed."""
    full_env = dict(os.environ, PYTHONPATH=os.pathsep.join([HERE, ROOT, os.environ.get("PYTHONPATH", "")]))
    full_env.update(env or {})
    try:
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                              env=full_env, cwd=ROOT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the script hung ({timeout} s); it printed:\n{e.stdout}\n{e.stderr}")


# ------------------------------------------------------------------ item 11: errors above a prefetch of Python

PREFETCH_ERRORS = """
import treadle as td
Dataset = td.data.Dataset

def forever():
    i = 0
    while True:
        yield i
        i += 1

def bad():
    raise ValueError("the source cannot start")

def bad_map_func(x):
    if hasattr(x, "numpy"):
        raise ValueError("map_func refuses a concrete element")
    return Dataset.from_tensors(x)

PYINF = Dataset.from_generator(forever, output_signature=td.TensorSpec([], td.int64))
BAD = Dataset.from_generator(bad, output_signature=td.TensorSpec([], td.int64))
cases = {
    "zip": lambda: Dataset.zip((PYINF.prefetch(2), BAD)).map(lambda a, b: a + b),
    "interleave": lambda: PYINF.prefetch(2).interleave(bad_map_func, cycle_length=2),
    "parallel interleave": lambda: PYINF.prefetch(2).interleave(bad_map_func, cycle_length=2, num_parallel_calls=2),
    "nested prefetch": lambda: Dataset.zip((PYINF.prefetch(2).prefetch(2), BAD.prefetch(1))).prefetch(1),
    "concatenate": lambda: PYINF.prefetch(2).take(3).concatenate(BAD).map(lambda x: x).prefetch(2),
}
for name, make in cases.items():
    for attempt in range(3):
        try:
            for _ in make():
                pass
            print(name, "finished")
        except ValueError as e:
            print(name, "raised", e)
print("usable", [int(x) for x in PYINF.prefetch(2).take(3)])
"""


def test_item11_errors_building_iterators_above_a_prefetch_of_python_do_not_deadlock():
    r = run_script(PREFETCH_ERRORS, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.splitlines()
    assert lines[-1] == "usable [0, 1, 2]"
    assert len(lines) == 16 and all(" raised " in line for line in lines[:-1]), lines


# ------------------------------------------------------------------ item 13: Ctrl-C while a buffer fills

SHUFFLE_INTERRUPT = """
import os, signal, threading, time
import treadle as td
sent = []
def send():
    sent.append(time.perf_counter())
    os.kill(os.getpid(), signal.SIGINT)
for name, ds in [("shuffle", td.data.Dataset.range(10 ** 8).shuffle(10 ** 7)),
                 ("filter", td.data.Dataset.range(2 ** 62).filter(lambda x: x < 0)),
                 ("skip", td.data.Dataset.range(2 ** 62).skip(2 ** 61))]:
    sent.clear()
    threading.Timer(0.3, send).start()
    try:
        next(iter(ds))
        print(name, "finished")
    except KeyboardInterrupt:
        print(name, "interrupted %.4f" % (time.perf_counter() - sent[0]))
print(int(next(iter(td.data.Dataset.range(10).shuffle(4, seed=1).filter(lambda x: x >= 0)))) >= 0)
"""


def test_item13_ctrl_c_interrupts_a_filling_shuffle_buffer_within_100_ms():
    r = run_script(SHUFFLE_INTERRUPT, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.splitlines()
    assert lines[-1] == "True"
    for line in lines[:-1]:
        name, word, latency = line.split()
        assert word == "interrupted" and float(latency) < 0.1, line
