"""TFRecordDataset and list_files: compression, wrong compression, truncated
and corrupt files; failing pipelines."""

import gzip
import struct
import zlib

import numpy as np
import pytest

import treadle as td
from treadle import _core
from treadle.data.readers import write_tfrecord_file

Dataset = td.data.Dataset
RECORDS = [b"record %d " % i * (i % 7 + 1) for i in range(150)]


def masked_crc(data):
    crc = _core.crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecord_bytes(records):
    out = b""
    for r in records:
        length = struct.pack("<Q", len(r))
        out += length + struct.pack("<I", masked_crc(length)) + r + struct.pack("<I", masked_crc(r))
    return out


@pytest.mark.parametrize("compression", [None, "", "GZIP", "ZLIB"])
def test_round_trip(tmp_path, compression):
    path = tmp_path / "r.tfrecord"
    write_tfrecord_file(path, RECORDS, compression)
    ds = td.data.TFRecordDataset(str(path), compression_type=compression)
    assert ds.element_spec == td.TensorSpec([], td.string)
    assert list(ds.as_numpy_iterator()) == RECORDS


def test_reads_files_compressed_by_python_gzip_and_zlib(tmp_path):
    raw = tfrecord_bytes(RECORDS)
    (tmp_path / "g").write_bytes(gzip.compress(raw))
    (tmp_path / "z").write_bytes(zlib.compress(raw))
    assert list(td.data.TFRecordDataset(str(tmp_path / "g"), "GZIP").as_numpy_iterator()) == RECORDS
    assert list(td.data.TFRecordDataset(str(tmp_path / "z"), "ZLIB").as_numpy_iterator()) == RECORDS
    # and what we write is what Python's zlib makes of it
    write_tfrecord_file(tmp_path / "w", RECORDS, "GZIP")
    assert gzip.decompress((tmp_path / "w").read_bytes()) == raw


@pytest.mark.parametrize("written, read, says", [
    ("GZIP", None, "looks GZIP-compressed but was read with compression_type=None; read it with "
                   "compression_type='GZIP'"),
    ("ZLIB", None, "looks ZLIB-compressed"),
    (None, "GZIP", "looks uncompressed but was read with compression_type='GZIP'"),
    ("GZIP", "ZLIB", "read it with compression_type='GZIP'"),
])
def test_wrong_compression_is_named(tmp_path, written, read, says):
    path = tmp_path / "r"
    write_tfrecord_file(path, RECORDS, written)
    with pytest.raises(td.errors.DataLossError, match=says.replace("(", r"\(").replace(")", r"\)")):
        list(td.data.TFRecordDataset(str(path), compression_type=read))


def test_bad_compression_type():
    with pytest.raises(ValueError, match="compression_type"):
        td.data.TFRecordDataset("x", compression_type="LZ4")


def test_truncated_plain_file_yields_the_good_records_then_fails(tmp_path):
    raw = tfrecord_bytes(RECORDS)
    (tmp_path / "t").write_bytes(raw[:-5])
    got = []
    with pytest.raises(td.errors.DataLossError, match="truncated record .* \\(record 149"):
        for r in td.data.TFRecordDataset(str(tmp_path / "t")):
            got.append(r.numpy())
    assert got == RECORDS[:149]


def test_truncated_gzip_file(tmp_path):
    (tmp_path / "t").write_bytes(gzip.compress(tfrecord_bytes(RECORDS))[:200])
    with pytest.raises(td.errors.DataLossError, match="truncated GZIP stream"):
        list(td.data.TFRecordDataset(str(tmp_path / "t"), "GZIP"))


def test_corrupt_record_and_huge_length(tmp_path):
    raw = bytearray(tfrecord_bytes(RECORDS[:3]))
    raw[20] ^= 0xFF  # inside the first record's data
    (tmp_path / "c").write_bytes(bytes(raw))
    with pytest.raises(td.errors.DataLossError, match="data's checksum"):
        list(td.data.TFRecordDataset(str(tmp_path / "c")))
    length = struct.pack("<Q", 1 << 40)
    (tmp_path / "h").write_bytes(length + struct.pack("<I", masked_crc(length)) + b"xx")
    with pytest.raises(td.errors.DataLossError, match="more than the limit"):
        list(td.data.TFRecordDataset(str(tmp_path / "h")))


def test_missing_file_and_empty_list(tmp_path):
    with pytest.raises(td.errors.NotFoundError, match="nope"):
        list(td.data.TFRecordDataset(str(tmp_path / "nope")))
    with pytest.raises(td.errors.InvalidArgumentError, match="empty"):
        td.data.TFRecordDataset([])


def test_empty_file_has_no_records(tmp_path):
    (tmp_path / "e").write_bytes(b"")
    for compression in (None, "GZIP", "ZLIB"):
        assert list(td.data.TFRecordDataset(str(tmp_path / "e"), compression)) == []


def test_several_files_in_order_and_interleaved(tmp_path):
    for k in range(3):
        write_tfrecord_file(tmp_path / f"f{k}", [b"%d-%d" % (k, i) for i in range(3)])
    names = [str(tmp_path / f"f{k}") for k in range(3)]
    assert list(td.data.TFRecordDataset(names).as_numpy_iterator())[:4] == [b"0-0", b"0-1", b"0-2", b"1-0"]
    out = list(td.data.TFRecordDataset(names, num_parallel_reads=2).as_numpy_iterator())
    assert out[:4] == [b"0-0", b"1-0", b"0-1", b"1-1"] and sorted(out) == sorted(
        b"%d-%d" % (k, i) for k in range(3) for i in range(3))
    # file names from a dataset, as from list_files
    files = Dataset.list_files(str(tmp_path / "f*"), shuffle=False)
    assert list(files.as_numpy_iterator()) == [n.encode() for n in names]
    assert len(list(td.data.TFRecordDataset(files))) == 9


def test_list_files_shuffles_by_default_and_errors(tmp_path):
    for k in range(20):
        (tmp_path / f"x{k:02d}").write_bytes(b"")
    pattern = str(tmp_path / "x*")
    ordered = sorted(list(Dataset.list_files(pattern, shuffle=False).as_numpy_iterator()))
    shuffled = list(Dataset.list_files(pattern, seed=4).as_numpy_iterator())
    assert sorted(shuffled) == ordered and shuffled != ordered
    with pytest.raises(td.errors.InvalidArgumentError, match="no files match"):
        Dataset.list_files(str(tmp_path / "nothing*"))


def test_failing_map_reaches_the_consumer_at_its_element():
    def check(x):
        if int(x) == 3:
            raise ValueError("element 3 is bad")
        return x

    for ds in (Dataset.range(6).map(lambda x: td.py_function(check, [x], td.int64)),
               Dataset.range(6).map(lambda x: td.py_function(check, [x], td.int64)).prefetch(2),
               Dataset.range(6).map(lambda x: td.py_function(check, [x], td.int64), num_parallel_calls=3)):
        got = []
        with pytest.raises(ValueError, match="element 3 is bad"):
            for x in ds:
                got.append(int(x))
        assert got == [0, 1, 2]


def test_graph_error_in_map():
    # statically wrong: the trace fails at map(), as in TensorFlow
    with pytest.raises(ValueError, match="reshape"):
        Dataset.from_tensor_slices([[1.0, 2.0]]).map(lambda x: td.reshape(x, [3]))
    # wrong only for one element: that element fails when it runs
    ds = Dataset.from_generator(lambda: iter([[1.0, 2.0, 3.0], [1.0]]),
                                output_signature=td.TensorSpec([None], td.float32))
    it = iter(ds.map(lambda x: td.reshape(x, [3])))
    np.testing.assert_array_equal(next(it).numpy(), [1.0, 2.0, 3.0])
    with pytest.raises(td.errors.InvalidArgumentError, match="reshape"):
        next(it)


def test_map_that_raises_while_tracing_fails_at_map():
    def bad(x):
        raise RuntimeError("cannot trace this")

    with pytest.raises(RuntimeError, match="cannot trace this"):
        Dataset.range(3).map(bad)


def test_the_loom_record_reader_names_a_compressed_file(tmp_path):
    # the reader behind `treadle loom run` and LoomScheduleReader reads plain files only; it says why it fails
    write_tfrecord_file(tmp_path / "g", RECORDS, "GZIP")
    write_tfrecord_file(tmp_path / "z", RECORDS, "ZLIB")
    with pytest.raises(td.errors.DataLossError, match="looks GZIP-compressed"):
        _core.read_records(str(tmp_path / "g"))
    with pytest.raises(td.errors.DataLossError, match="looks ZLIB-compressed"):
        _core.read_records(str(tmp_path / "z"))
