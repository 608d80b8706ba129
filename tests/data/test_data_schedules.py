"""Schedules from files into a loom through td.data: TFRecordDataset ->
batch(k) -> one merged schedule, eagerly and inside a td.function;
compressed schedule files; foreign schedule objects."""

import numpy as np
import pytest

import treadle as td

VEC = td.loom.TypeShape("float64", (3,))


class Add(td.loom.LoomOp):
    def __init__(self):
        super().__init__([VEC, VEC], [VEC])

    def instantiate_batch(self, inputs):
        return [inputs[0] + inputs[1]]


def make_loom():
    x = td.Variable(np.array([1.0, 2.0, 3.0]), name="x")
    return td.loom.Loom(named_tensors={"x": x}, named_ops={"add": Add()})


def schedules(loom, n):
    """Schedule i computes x + i + i (depth 2) so each output says which schedule it came from."""
    out = []
    for i in range(n):
        w = loom.make_weaver()
        c = w(np.full(3, float(i)))
        w.add_output(w.add(w.add(w.x, c), c))
        out.append(w.serialize())
    return out


def expected(indices):
    return np.array([[1.0 + 2 * i, 2.0 + 2 * i, 3.0 + 2 * i] for i in indices])


@pytest.mark.parametrize("compression", [None, "GZIP"])
def test_schedule_files_batched_into_the_loom_eagerly(tmp_path, compression):
    loom = make_loom()
    td.loom.write_schedules(tmp_path / "a", schedules(loom, 5), compression_type=compression)
    td.loom.write_schedules(tmp_path / "b", schedules(loom, 10)[5:], compression_type=compression)
    ds = td.data.TFRecordDataset([str(tmp_path / "a"), str(tmp_path / "b")], compression_type=compression).batch(4)
    assert ds.element_spec == td.TensorSpec([None], td.string)
    outputs = [loom.output_tensor(VEC, batch).numpy() for batch in ds]
    assert [len(o) for o in outputs] == [4, 4, 2]
    np.testing.assert_allclose(np.concatenate(outputs), expected(range(10)))


def test_schedule_batches_inside_a_function(tmp_path):
    loom = make_loom()
    td.loom.write_schedules(tmp_path / "s", schedules(loom, 6), compression_type="GZIP")

    @td.function
    def step(batch):
        return td.reduce_sum(loom.output_tensor(VEC, batch), axis=1)

    ds = td.data.TFRecordDataset(str(tmp_path / "s"), compression_type="GZIP").batch(3, drop_remainder=True)
    sums = np.concatenate([step(b).numpy() for b in ds.prefetch(1)])
    np.testing.assert_allclose(sums, expected(range(6)).sum(axis=1))
    assert len(step.pretty_printed_concrete_signatures().split("\n\n")) == 1  # one trace for every batch


def test_read_schedules_with_wrong_compression_says_so(tmp_path):
    loom = make_loom()
    td.loom.write_schedules(tmp_path / "s", schedules(loom, 2), compression_type="GZIP")
    assert td.loom.read_schedules(tmp_path / "s", compression_type="GZIP") == schedules(loom, 2)
    with pytest.raises(td.errors.DataLossError, match="looks GZIP-compressed.*compression_type='GZIP'"):
        td.loom.read_schedules(tmp_path / "s")


class ForeignStringTensor:
    """Stands for a TensorFlow string tensor: has a dtype and numpy()."""

    def __init__(self, value):
        self._value = value
        self.dtype = "string"

    def numpy(self):
        return self._value


class DLPackOnly:
    """An object that speaks only DLPack (as a tensor of another library would)."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def test_foreign_schedule_objects():
    loom = make_loom()
    msgs = schedules(loom, 3)
    want = expected(range(3))
    np.testing.assert_allclose(loom.output_tensor(VEC, np.array(msgs, dtype=object)).numpy(), want)
    np.testing.assert_allclose(loom.output_tensor(VEC, ForeignStringTensor(np.array(msgs, dtype=object))).numpy(),
                               want)
    np.testing.assert_allclose(loom.output_tensor(VEC, ForeignStringTensor(msgs[1])).numpy(), want[1:2])
    as_uint8 = np.frombuffer(msgs[2], dtype=np.uint8)
    np.testing.assert_allclose(loom.output_tensor(VEC, as_uint8).numpy(), want[2:])  # DLPack / array
    np.testing.assert_allclose(loom.output_tensor(VEC, DLPackOnly(as_uint8)).numpy(), want[2:])
    np.testing.assert_allclose(loom.output_tensor(VEC, bytearray(msgs[0])).numpy(), want[:1])  # buffer protocol
    np.testing.assert_allclose(loom.output_tensor(VEC, memoryview(msgs[0])).numpy(), want[:1])
    np.testing.assert_allclose(loom.output_tensor(VEC, [ForeignStringTensor(m) for m in msgs]).numpy(), want)
    with pytest.raises(TypeError, match="bytes objects"):
        loom.output_tensor(VEC, np.zeros(3, np.float32))
    with pytest.raises(TypeError, match="loom schedule must be"):
        loom.output_tensor(VEC, 3.5)
