"""td.data sources and inspection against tf.data's documented behaviour."""

import collections

import numpy as np
import pytest

import treadle as td

Dataset = td.data.Dataset


def values(ds):
    return list(ds.as_numpy_iterator())


def test_from_tensor_slices_tuple_and_dict():
    ds = Dataset.from_tensor_slices(([1, 2, 3], ["a", "b", "c"]))
    assert ds.element_spec == (td.TensorSpec([], td.int32), td.TensorSpec([], td.string))
    assert values(ds) == [(1, b"a"), (2, b"b"), (3, b"c")]
    ds = Dataset.from_tensor_slices({"a": [1, 2], "b": [[1.0, 2.0], [3.0, 4.0]]})
    out = values(ds)
    assert [o["a"] for o in out] == [1, 2]
    np.testing.assert_array_equal(out[1]["b"], [3.0, 4.0])
    assert ds.element_spec["b"] == td.TensorSpec([2], td.float32)


def test_from_tensor_slices_list_is_one_tensor_and_namedtuple_kept():
    # tf.data: a list is a tensor, a tuple is structure.
    ds = Dataset.from_tensor_slices([[1, 2], [3, 4]])
    assert ds.element_spec == td.TensorSpec([2], td.int32)
    Point = collections.namedtuple("Point", "x y")
    out = values(Dataset.from_tensor_slices(Point(np.arange(2), np.arange(2) * 10)))
    assert isinstance(out[0], Point) and out[1].y == 10


def test_from_tensor_slices_errors():
    with pytest.raises(ValueError, match="first dimensions differ"):
        Dataset.from_tensor_slices(([1, 2], [1, 2, 3]))
    with pytest.raises(ValueError, match="scalar"):
        Dataset.from_tensor_slices(3)


def test_from_tensors_is_one_element():
    ds = Dataset.from_tensors([1, 2, 3])
    assert len(ds) == 1 and ds.element_spec == td.TensorSpec([3], td.int32)
    np.testing.assert_array_equal(values(ds)[0], [1, 2, 3])


def test_range_like_python_range():
    assert values(Dataset.range(5)) == [0, 1, 2, 3, 4]
    assert values(Dataset.range(2, 5)) == [2, 3, 4]
    assert values(Dataset.range(1, 5, 2)) == [1, 3]
    assert values(Dataset.range(1, 5, -2)) == []
    assert values(Dataset.range(5, 1, -2)) == [5, 3]
    ds = Dataset.range(1, 5, 2, output_type=td.int32)
    assert ds.element_spec == td.TensorSpec([], td.int32) and values(ds) == [1, 3]
    assert Dataset.range(5).element_spec.dtype == td.int64
    assert int(Dataset.range(1, 10, 3).cardinality()) == 3


def test_from_generator_with_output_signature():
    def gen():
        for i in range(1, 4):
            yield i, [1] * i

    ds = Dataset.from_generator(gen, output_signature=(td.TensorSpec([], td.int64),
                                                       td.TensorSpec([None], td.int64)))
    out = values(ds)
    assert [o[0] for o in out] == [1, 2, 3]
    np.testing.assert_array_equal(out[2][1], [1, 1, 1])
    assert int(ds.cardinality()) == td.data.UNKNOWN_CARDINALITY
    assert len(values(ds)) == 3


def test_from_generator_args_and_output_types():
    def gen(stop):
        yield from range(int(stop))

    ds = Dataset.from_generator(gen, output_types=td.int32, args=(3,))
    assert values(ds) == [0, 1, 2]


def test_from_generator_mismatch_is_an_error_at_that_element():
    def gen():
        yield [1, 2]
        yield [1, 2, 3]

    ds = Dataset.from_generator(gen, output_signature=td.TensorSpec([2], td.int32))
    it = iter(ds)
    np.testing.assert_array_equal(next(it).numpy(), [1, 2])
    with pytest.raises(td.errors.InvalidArgumentError, match=r"shape \(3,\)"):
        next(it)
    ds = Dataset.from_generator(lambda: iter(["x"]), output_signature=td.TensorSpec([], td.int32))
    with pytest.raises(td.errors.InvalidArgumentError, match="int32"):
        values(ds)


def test_zip_and_concatenate():
    a, b = Dataset.range(1, 4), Dataset.range(4, 7)
    assert values(Dataset.zip((a, b))) == [(1, 4), (2, 5), (3, 6)]
    assert values(Dataset.zip(a, b)) == [(1, 4), (2, 5), (3, 6)]
    c = Dataset.range(7, 13).batch(2)
    out = values(Dataset.zip((a, b, c)))
    assert len(out) == 3 and list(out[2][2]) == [11, 12]
    assert values(Dataset.zip((a, Dataset.range(13, 15)))) == [(1, 13), (2, 14)]
    d = values(Dataset.zip({"x": a, "y": b}))
    assert d[0] == {"x": 1, "y": 4}
    assert values(a.concatenate(b)) == [1, 2, 3, 4, 5, 6]
    with pytest.raises(TypeError):
        a.concatenate(Dataset.from_tensor_slices(["a"]))


def test_concatenate_relaxes_shapes():
    a = Dataset.from_tensors([1, 2])
    b = Dataset.from_tensors([1, 2, 3])
    assert a.concatenate(b).element_spec == td.TensorSpec([None], td.int32)


def test_cardinality_constants_and_len():
    assert td.data.INFINITE_CARDINALITY == -1 and td.data.UNKNOWN_CARDINALITY == -2
    ds = Dataset.range(42)
    assert int(ds.cardinality()) == 42 and len(ds) == 42
    assert int(ds.repeat().cardinality()) == td.data.INFINITE_CARDINALITY
    assert int(ds.filter(lambda x: True).cardinality()) == td.data.UNKNOWN_CARDINALITY
    with pytest.raises(TypeError, match="infinite"):
        len(ds.repeat())
    with pytest.raises(TypeError, match="unknown"):
        len(ds.filter(lambda x: True))
    assert int(td.data.experimental.cardinality(ds)) == 42


@pytest.mark.parametrize("build, expected", [
    (lambda: Dataset.range(10).batch(3), 4),
    (lambda: Dataset.range(10).batch(3, drop_remainder=True), 3),
    (lambda: Dataset.range(10).repeat(3), 30),
    (lambda: Dataset.range(10).repeat(0), 0),
    (lambda: Dataset.range(10).take(3), 3),
    (lambda: Dataset.range(10).take(30), 10),
    (lambda: Dataset.range(10).take(-1), 10),
    (lambda: Dataset.range(10).skip(3), 7),
    (lambda: Dataset.range(10).skip(30), 0),
    (lambda: Dataset.range(10).skip(-1), 0),
    (lambda: Dataset.range(10).repeat().take(5), 5),
    (lambda: Dataset.range(10).repeat().skip(5), -1),
    (lambda: Dataset.range(10).repeat().batch(4), -1),
    (lambda: Dataset.range(10).shuffle(3).map(lambda x: x).prefetch(1).cache(), 10),
    (lambda: Dataset.range(10).batch(2).unbatch(), -2),  # the batch dimension is not static
    (lambda: Dataset.range(10).batch(2, drop_remainder=True).unbatch(), 10),
    (lambda: Dataset.from_tensor_slices(np.zeros((3, 4, 2))).unbatch(), 12),
    (lambda: Dataset.zip((Dataset.range(3), Dataset.range(5))), 3),
    (lambda: Dataset.zip((Dataset.range(3), Dataset.range(5).repeat())), 3),
    (lambda: Dataset.range(3).concatenate(Dataset.range(5)), 8),
    (lambda: Dataset.range(3).concatenate(Dataset.range(5).repeat()), -1),
    (lambda: Dataset.range(3).enumerate(), 3),
    (lambda: Dataset.range(3).take_while(lambda x: x < 2), -2),
    (lambda: Dataset.range(3).filter(lambda x: x < 2).take(0), 0),
])
def test_cardinality_rules(build, expected):
    assert int(build().cardinality()) == expected


def test_iteration_protocol():
    ds = Dataset.range(2)
    it = iter(ds)
    assert it.element_spec == ds.element_spec
    assert int(next(it)) == 0 and int(it.get_next()) == 1
    with pytest.raises(StopIteration):
        next(it)
    with pytest.raises(td.errors.OutOfRangeError):
        it.get_next()
    # each iter() starts over
    assert [int(x) for x in ds] == [0, 1] and [int(x) for x in ds] == [0, 1]
    elem = next(iter(Dataset.from_tensors(1.5)))
    assert isinstance(elem, td.Tensor) and elem.dtype == td.float32
