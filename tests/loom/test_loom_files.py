"""Schedules in TFRecord files (checksums, corruption, TensorFlow's reader),
td.save / td.load of a loom, and the `treadle loom` command."""

import struct

import numpy as np
import pytest

import treadle as td
from treadle import _core, cli
from treadle.loom import trees as tree_utils
from loom_testlib import VEC3, TreeLSTMWeights, random_tree, tree_lstm_loom, vector_loom


def crc32c_bitwise(data):
    """An independent (bit-by-bit) CRC-32C to check the C++ tables against."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def test_crc32c():
    assert _core.crc32c(b"123456789") == 0xE3069283  # the standard check value
    assert _core.crc32c(b"") == 0
    rng = np.random.default_rng(0)
    for n in [1, 7, 8, 9, 63, 64, 65, 1000]:
        data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        assert _core.crc32c(data) == crc32c_bitwise(data)
        assert _core.crc32c(data[n // 2:], _core.crc32c(data[:n // 2])) == _core.crc32c(data)


def tfrecord_bytes(records):
    """The TFRecord layout, written independently of the C++ writer."""
    out = b""
    for r in records:
        length = struct.pack("<Q", len(r))
        out += length + struct.pack("<I", masked(crc32c_bitwise(length))) + r
        out += struct.pack("<I", masked(crc32c_bitwise(r)))
    return out


def vector_schedules(loom, n):
    msgs = []
    for i in range(n):
        w = loom.make_weaver()
        w.add_output(w.add(w.x, w(np.full(3, float(i)))))
        msgs.append(w.serialize())
    return msgs


def test_write_read_round_trip_in_tfrecord_layout(tmp_path):
    loom, _, _ = vector_loom()
    msgs = vector_schedules(loom, 5)
    path = tmp_path / "s.tfrecord"
    td.loom.write_schedules(path, msgs[:4] + [loom.deserialize_weaver(msgs[4])])
    assert path.read_bytes() == tfrecord_bytes(msgs)
    assert td.loom.read_schedules(path) == msgs
    (tmp_path / "empty").write_bytes(b"")
    assert td.loom.read_schedules(tmp_path / "empty") == []
    x = loom.named_tensors["x"].numpy()
    out = loom.output_tensor(VEC3, td.loom.read_schedules(path))
    np.testing.assert_allclose(out.numpy(), [x + i for i in range(5)])


def test_corrupt_and_truncated_files(tmp_path):
    loom, _, _ = vector_loom()
    good = tfrecord_bytes(vector_schedules(loom, 3))
    path = tmp_path / "bad"
    cases = {
        "truncated record header": good[:len(good) // 3 * 0 + 5],
        "truncated record at byte offset": good[:-2],
        "the data's checksum does not match": good[:20] + bytes([good[20] ^ 1]) + good[21:],
        "the length's checksum does not match": bytes([good[0] ^ 4]) + good[1:],
    }
    for pattern, data in cases.items():
        path.write_bytes(data)
        with pytest.raises(td.errors.DataLossError, match=pattern):
            td.loom.read_schedules(path)
    huge = struct.pack("<Q", 1 << 40)
    path.write_bytes(huge + struct.pack("<I", masked(crc32c_bitwise(huge))) + b"x" * 8)
    with pytest.raises(td.errors.DataLossError, match="claims 1099511627776 bytes, more than the limit"):
        td.loom.read_schedules(path)
    with pytest.raises(td.errors.NotFoundError):
        td.loom.read_schedules(tmp_path / "missing")
    # A record that is intact but not a WeaverMessage of this loom.
    path.write_bytes(tfrecord_bytes([b"\x01\x02garbage"]))
    with pytest.raises(td.errors.DataLossError, match="not a serialized WeaverMessage"):
        loom(td.loom.read_schedules(path))


def test_tensorflow_reads_ours_and_we_read_theirs(tmp_path):
    tf = pytest.importorskip("tensorflow")
    loom, _, _ = vector_loom()
    msgs = vector_schedules(loom, 3)
    ours = tmp_path / "ours.tfrecord"
    td.loom.write_schedules(ours, msgs)
    assert [r.numpy() for r in tf.data.TFRecordDataset(str(ours))] == msgs
    theirs = tmp_path / "theirs.tfrecord"
    with tf.io.TFRecordWriter(str(theirs)) as writer:
        for m in msgs:
            writer.write(m)
    assert td.loom.read_schedules(theirs) == msgs


def tree_loom_and_schedules(n_trees=10):
    w = TreeLSTMWeights()
    loom = tree_lstm_loom(w)
    rng = np.random.default_rng(5)
    trees = [random_tree(rng, int(rng.integers(1, 7)), 50) for _ in range(n_trees)]
    msgs = []
    for t in trees:
        weaver = loom.make_weaver()
        weaver.weave_trees(*tree_utils.tree_arrays([t]), "leaf", "node", w.embed_ts, root_outputs=[1])
        msgs.append(weaver.serialize())
    return w, loom, msgs


def test_save_and_load_a_loom(tmp_path):
    w, loom, msgs = tree_loom_and_schedules()
    want = loom.output_tensor(w.h_ts, msgs).numpy()
    path = tmp_path / "tree.loom"
    td.save(loom, str(path))
    loaded = td.load(str(path))
    assert isinstance(loaded, td.loom.Loom)
    assert loaded.type_shapes == loom.type_shapes and loaded.fingerprint == loom.fingerprint
    np.testing.assert_allclose(loaded.output_tensor(w.h_ts, msgs).numpy(), want)
    # The loaded loom weaves too, and its variables are variables again.
    weaver = loaded.make_weaver()
    c, h = weaver.node(*weaver.leaf(weaver.batch_input(w.embed_ts, 3)),
                       *weaver.leaf(weaver.batch_input(w.embed_ts, 4)))
    weaver.add_output(h)
    assert loaded(weaver)[w.h_ts].shape == (1, w.hidden)
    assert any(isinstance(v, td.Variable) for v in loaded.named_tensors.values()) or loaded._captures
    loaded._batch_inputs[w.embed_ts].assign(np.zeros((50, 6)))
    assert not np.allclose(loaded.output_tensor(w.h_ts, msgs).numpy(), want)


def test_load_rejects_corrupt_loom_files(tmp_path):
    loom, _, _ = vector_loom()
    path = tmp_path / "v.loom"
    td.save(loom, str(path))
    data = path.read_bytes()
    path.write_bytes(data[:-10])
    with pytest.raises(td.errors.DataLossError, match="truncated"):
        td.load(str(path))
    path.write_bytes(data[:30] + bytes([data[30] ^ 0xFF]) + data[31:])
    with pytest.raises(td.errors.DataLossError, match="checksum"):
        td.load(str(path))
    with pytest.raises(ValueError, match="dry_run"):
        td.save(vector_loom(dry_run=True)[0], str(tmp_path / "d.loom"))


def test_cli_runs_a_saved_loom_over_a_schedule_file(tmp_path, capsys):
    w, loom, msgs = tree_loom_and_schedules(23)
    td.save(loom, str(tmp_path / "tree.loom"))
    td.loom.write_schedules(tmp_path / "s.tfrecord", msgs)
    out_dir = tmp_path / "out"
    assert cli.main(["loom", "run", str(tmp_path / "tree.loom"), str(tmp_path / "s.tfrecord"),
                     "-o", str(out_dir), "-b", "5"]) == 0
    captured = capsys.readouterr()
    assert "ran 23 schedules" in captured.out and "100.0%" in captured.err
    name = f"outputs_{w.h_ts.tag}" if w.h_ts.tag else f"outputs_{loom.type_shapes.index(w.h_ts)}"
    np.testing.assert_allclose(np.load(out_dir / f"{name}.npy"),
                               loom.output_tensor(w.h_ts, msgs).numpy(), rtol=1e-12)
    assert cli.main(["loom", "info", str(tmp_path / "s.tfrecord")]) == 0
    assert "23 schedules" in capsys.readouterr().out
