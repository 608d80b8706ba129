"""Checkpoint files under damage and races: a restore checks every entry
before it assigns any variable, a bad entry's error names the file and the
variable, and a save replaces the file atomically (a reader racing a writer,
or a writer killed mid-way, leaves the old checkpoint or the new one)."""

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import treadle as td
from treadle import saved_pb2
from treadle.io.container import KIND_CHECKPOINT, read_container, version_field, write_container

CKPT_VERSION = version_field(KIND_CHECKPOINT, 1)


def _rewrite(path, edit):
    """Applies `edit` to the file's SavedFile and writes it back with valid checksums."""
    saved = saved_pb2.SavedFile()
    saved.ParseFromString(read_container(path, CKPT_VERSION))
    edit({sv.name: sv for sv in saved.variables}, saved)
    write_container(path, CKPT_VERSION, saved.SerializeToString())


def _saved_pair(tmp_path):
    a = td.Variable(np.arange(3, dtype=np.float32))
    b = td.Variable(np.ones((2, 2), np.float32))
    path = td.train.Checkpoint(a=a, b=b).write(str(tmp_path / "ckpt"))
    fresh_a, fresh_b = td.Variable(np.zeros(3, np.float32)), td.Variable(np.zeros((2, 2), np.float32))
    return path, td.train.Checkpoint(a=fresh_a, b=fresh_b), fresh_a, fresh_b


def test_a_bad_entry_changes_no_variable(tmp_path):
    path, ckpt, a, b = _saved_pair(tmp_path)

    def wrong_shape(entries, _):  # 'b' (restored after 'a') holds a vector: its shape field agrees
        entries["b"].value.CopyFrom(td.make_tensor_proto(np.ones(5, np.float32)))
        entries["b"].shape.Clear()
        entries["b"].shape.dim.add().size = 5
    _rewrite(path, wrong_shape)
    with pytest.raises(ValueError, match=r"ckpt.*'b' holds a float32 tensor of shape \(5,\).*no variable was changed"):
        ckpt.restore(path)
    np.testing.assert_array_equal(a.numpy(), np.zeros(3))
    np.testing.assert_array_equal(b.numpy(), np.zeros((2, 2)))


@pytest.mark.parametrize("damage, message", [
    (lambda sv: setattr(sv.value, "tensor_content", b"\x00" * 7), "'b'.*cannot be decoded"),
    (lambda sv: sv.ClearField("value"), "'b' is missing"),
    (lambda sv: sv.value.ClearField("dtype"), "'b'.*cannot be decoded"),
    (lambda sv: sv.shape.dim.add(), "'b' has shape \\(2, 2\\), but the entry declares"),
])
def test_a_corrupt_entry_names_the_file_and_the_variable(tmp_path, damage, message):
    path, ckpt, a, b = _saved_pair(tmp_path)
    _rewrite(path, lambda entries, _: damage(entries["b"]))
    with pytest.raises(td.errors.DataLossError, match=f"checkpoint {path}: the value of {message}"):
        ckpt.restore(path)
    np.testing.assert_array_equal(a.numpy(), np.zeros(3))


def test_an_entry_saved_twice_is_refused(tmp_path):
    path, ckpt, a, _ = _saved_pair(tmp_path)
    _rewrite(path, lambda entries, saved: saved.variables.add().CopyFrom(entries["a"]))
    with pytest.raises(td.errors.DataLossError, match="'a' appears twice"):
        ckpt.restore(path)


def test_a_bad_slot_entry_creates_no_slot_and_changes_nothing(tmp_path):
    w = td.Variable(np.ones(2, np.float32))
    opt = td.optimizers.Adam(0.1)
    with td.GradientTape() as tape:
        loss = td.reduce_sum(w * w)
    opt.apply_gradients([(tape.gradient(loss, w), w)])
    path = td.train.Checkpoint(w=w, optimizer=opt).write(str(tmp_path / "ckpt"))
    _rewrite(path, lambda entries, _: setattr(entries["optimizer/slots/w/m"].value, "tensor_content", b"x"))
    w2, opt2 = td.Variable(np.zeros(2, np.float32)), td.optimizers.Adam(0.1)
    with pytest.raises(td.errors.DataLossError, match="'optimizer/slots/w/m'"):
        td.train.Checkpoint(w=w2, optimizer=opt2).restore(path)
    assert not opt2._slots and opt2.iterations.numpy() == 0
    np.testing.assert_array_equal(w2.numpy(), np.zeros(2))


def test_write_replaces_the_file_and_leaves_no_temporary(tmp_path):
    v = td.Variable(np.arange(4, dtype=np.float32))
    ckpt = td.train.Checkpoint(v=v)
    path = ckpt.write(str(tmp_path / "ckpt"))
    v.assign(np.full(4, 7.0, np.float32))
    ckpt.write(path)
    assert os.listdir(tmp_path) == ["ckpt"]
    mode = os.stat(path).st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    assert mode == 0o666 & ~umask  # as open() makes a file, not mkstemp's 0o600
    fresh = td.Variable(np.zeros(4, np.float32))
    td.train.Checkpoint(v=fresh).restore(path)
    np.testing.assert_array_equal(fresh.numpy(), np.full(4, 7.0))


_WRITER = textwrap.dedent("""
    import sys
    import numpy as np
    import treadle as td
    v = td.Variable(np.zeros(1 << 18, np.float32))
    ckpt = td.train.Checkpoint(v=v)
    ckpt.write(sys.argv[1])
    print("ready", flush=True)
    i = 0
    while True:
        i += 1
        v.assign(np.full(1 << 18, float(i), np.float32))
        ckpt.write(sys.argv[1])
""")


def test_readers_racing_a_writer_and_a_killed_writer_see_a_whole_checkpoint(tmp_path):
    path = str(tmp_path / "ckpt")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, path], stdout=subprocess.PIPE, env=env)
    try:
        assert writer.stdout.readline().strip() == b"ready"
        v = td.Variable(np.zeros(1 << 18, np.float32))
        for _ in range(50):  # each read is one whole checkpoint: a single value throughout
            td.train.Checkpoint(v=v).restore(path)
            values = np.unique(v.numpy())
            assert len(values) == 1
    finally:
        writer.send_signal(signal.SIGKILL)  # killed wherever it is in a write
        writer.wait()
    td.train.Checkpoint(v=v).restore(path)
    assert len(np.unique(v.numpy())) == 1
