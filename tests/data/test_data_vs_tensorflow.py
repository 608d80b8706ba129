"""td.data against tf.data itself, where TensorFlow is installed: the same
pipelines, built with each library's names, give the same elements, specs
and cardinalities; record files (plain, GZIP, ZLIB) written by one are read
by the other."""

import numpy as np
import pytest

import treadle as td

tf = pytest.importorskip("tensorflow")


def run(ds):
    return [_plain(e) for e in ds.as_numpy_iterator()]


def _plain(e):
    if isinstance(e, dict):
        return {k: _plain(v) for k, v in e.items()}
    if isinstance(e, tuple):
        return tuple(_plain(v) for v in e)
    return e.tolist() if isinstance(e, np.ndarray) else e


PIPELINES = {
    "map_filter_batch": lambda m: m.data.Dataset.range(20).map(lambda x: x * 3).filter(lambda x: x % 2 == 0)
    .batch(3),
    "batch_drop": lambda m: m.data.Dataset.range(10).batch(4, drop_remainder=True),
    "padded_batch": lambda m: m.data.Dataset.range(1, 6).map(lambda x: m.fill([x], x)).padded_batch(2),
    "padded_batch_shapes": lambda m: m.data.Dataset.range(1, 5).map(lambda x: m.fill([x], x))
    .padded_batch(3, padded_shapes=[6], padding_values=np.int64(-1)),
    "unbatch": lambda m: m.data.Dataset.from_tensor_slices([[1, 2], [3, 4], [5, 6]]).unbatch(),
    "zip_dict": lambda m: m.data.Dataset.zip({"a": m.data.Dataset.range(3), "b": m.data.Dataset.range(5, 9)}),
    "concatenate": lambda m: m.data.Dataset.range(3).concatenate(m.data.Dataset.range(7, 9)),
    "repeat_take_skip": lambda m: m.data.Dataset.range(4).repeat(3).skip(2).take(7),
    "interleave": lambda m: m.data.Dataset.range(1, 6).interleave(
        lambda x: m.data.Dataset.from_tensors(x).repeat(x), cycle_length=3, block_length=2),
    "interleave_parallel": lambda m: m.data.Dataset.range(1, 8).interleave(
        lambda x: m.data.Dataset.range(x).map(lambda y: y * 10 + x), cycle_length=3, block_length=2,
        num_parallel_calls=2),
    "batch_parallel": lambda m: m.data.Dataset.range(23).batch(5, num_parallel_calls=3),
    "batch_parallel_drop": lambda m: m.data.Dataset.range(23).map(lambda x: (x, -x)).batch(
        4, drop_remainder=True, num_parallel_calls=2),
    "enumerate": lambda m: m.data.Dataset.from_tensor_slices(["a", "b"]).enumerate(4),
    "take_while": lambda m: m.data.Dataset.range(10).take_while(lambda x: x < 6),
    "scan": lambda m: m.data.Dataset.range(6).scan(np.int64(1), lambda s, x: (s * 2, s + x)),
    "strings": lambda m: m.data.Dataset.from_tensor_slices(["x", "yy", "zzz"]).batch(2),
    "tuple_map": lambda m: m.data.Dataset.from_tensor_slices(([1.0, 2.0], [3, 4])).map(lambda a, b: (b, a * 2)),
    "cache_prefetch": lambda m: m.data.Dataset.range(5).cache().prefetch(2).map(lambda x: x + 1),
    "range_negative": lambda m: m.data.Dataset.range(10, 0, -3),
}


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_same_elements_spec_and_cardinality(name):
    ours, theirs = PIPELINES[name](td), PIPELINES[name](tf)
    assert run(ours) == run(theirs)
    assert int(ours.cardinality()) == int(theirs.cardinality())
    for a, b in zip(_leaves(ours.element_spec), tf.nest.flatten(theirs.element_spec)):
        assert a.dtype.name == b.dtype.name and a.shape.as_list() == b.shape.as_list(), (a, b)


def _leaves(spec):
    from treadle.util import nest
    return nest.flatten(spec)


def test_reduce_matches():
    f = lambda m: m.data.Dataset.range(1, 6).reduce(np.int64(1), lambda s, x: s * x)  # noqa: E731
    assert int(f(td)) == int(f(tf)) == 120


def test_shuffle_properties_match():
    # not the same RNG: the same multiset, the same window property, and a seed that replays
    ours = run(td.data.Dataset.range(40).shuffle(5, seed=3))
    theirs = run(tf.data.Dataset.range(40).shuffle(5, seed=3))
    assert sorted(ours) == sorted(theirs) == list(range(40))
    assert all(v < k + 5 for k, v in enumerate(ours)) and all(v < k + 5 for k, v in enumerate(theirs))


@pytest.mark.parametrize("compression", ["", "GZIP", "ZLIB"])
def test_record_files_both_ways(tmp_path, compression):
    records = [b"r%d" % i * (i + 1) for i in range(40)]
    theirs = str(tmp_path / "tf.tfrecord")
    with tf.io.TFRecordWriter(theirs, options=compression or None) as w:
        for r in records:
            w.write(r)
    assert run(td.data.TFRecordDataset(theirs, compression_type=compression)) == records
    from treadle.data.readers import write_tfrecord_file
    ours = str(tmp_path / "td.tfrecord")
    write_tfrecord_file(ours, records, compression)
    assert run(tf.data.TFRecordDataset(ours, compression_type=compression)) == records


def test_tensorflow_batch_of_schedule_records_runs_in_a_loom(tmp_path):
    from test_data_schedules import VEC, expected, make_loom, schedules
    loom = make_loom()
    td.loom.write_schedules(tmp_path / "s", schedules(loom, 6), compression_type="GZIP")
    batches = tf.data.TFRecordDataset(str(tmp_path / "s"), compression_type="GZIP").batch(4)
    outs = [loom.output_tensor(VEC, b).numpy() for b in batches]  # a tf.Tensor of strings, no .numpy().tolist()
    np.testing.assert_allclose(np.concatenate(outs), expected(range(6)))
