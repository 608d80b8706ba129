"""enumerate, zip, map and filter over datasets inside td.function, as
TensorFlow's AutoGraph: each is one staged loop over the dataset (enumerate
a dataset's enumerate() with int64 indices, zip a Dataset.zip, map and filter
the dataset's), never a Python loop unrolled while tracing. enumerate and
zip of dataset iterators are staged too (TensorFlow unrolls those without
end)."""

import pytest

import treadle as td

VALUES = [10, 20, 30]


def _dataset():
    return td.data.Dataset.from_tensor_slices(VALUES)


def _loop_count(f, *args):
    return [op.type for op in f.get_concrete_function(*args).graph.operations].count("While")


def weighted_by_index(ds, start):
    total = td.constant(0, td.int64)
    for i, x in enumerate(ds, start):
        total += i * td.cast(x, td.int64)
    return total


def weighted_by_index_closed_over():
    total = td.constant(0, td.int64)
    for i, x in enumerate(DATASET):
        total += i * td.cast(x, td.int64)
    return total


DATASET = _dataset()


def test_enumerate_of_a_dataset_is_one_staged_loop_with_int64_indices():
    f = td.function(weighted_by_index_closed_over)
    assert f().numpy() == 0 * 10 + 1 * 20 + 2 * 30
    assert f().dtype == td.int64
    assert _loop_count(f) == 1
    g = td.function(weighted_by_index)
    assert g(_dataset(), 5).numpy() == 5 * 10 + 6 * 20 + 7 * 30  # a dataset argument
    assert g(_dataset().take(2), 5).numpy() == 5 * 10 + 6 * 20
    assert g.experimental_get_tracing_count() == 1  # traced per element_spec, as a dataset argument is
    assert _loop_count(g, _dataset(), 5) == 1


def indices_seen(ds):
    seen = td.TensorArray(td.int64, size=0, dynamic_size=True, element_shape=())
    for i, _ in enumerate(ds):
        seen = seen.write(td.cast(i, td.int32), i)
    return seen.stack()


def test_the_index_is_a_tensor_the_body_can_use():
    assert td.function(indices_seen)(_dataset()).numpy().tolist() == [0, 1, 2]
    assert td.function(indices_seen)(td.data.Dataset.range(0)).numpy().tolist() == []


def enumerate_an_iterator(ds):
    it = iter(ds)
    first = next(it)
    total = td.cast(first, td.int64)
    for i, x in enumerate(it, 1):
        total += i * td.cast(x, td.int64)
    return total


def test_enumerate_of_an_iterator_continues_where_it_is():
    f = td.function(enumerate_an_iterator)
    assert f(_dataset()).numpy() == 10 + 1 * 20 + 2 * 30
    assert _loop_count(f, _dataset()) == 1


def stop_after_index(ds, n):
    total = td.constant(0, td.int64)
    for i, x in enumerate(ds):
        if i >= n:
            break
        total += td.cast(x, td.int64)
    return total


def test_break_on_the_index_stops_the_loop():
    f = td.function(stop_after_index)
    assert f(_dataset(), td.constant(1, td.int64)).numpy() == 10
    assert f(_dataset(), td.constant(5, td.int64)).numpy() == 60


def products_in_step(a, b):
    total = td.constant(0)
    for x, y in zip(a, b):
        total += x * y
    return total


def test_zip_of_datasets_is_one_loop_ending_with_the_shortest():
    f = td.function(products_in_step)
    assert f(_dataset(), _dataset().map(lambda v: v + 1)).numpy() == 10 * 11 + 20 * 21 + 30 * 31
    assert f(_dataset(), _dataset().take(2)).numpy() == 10 * 10 + 20 * 20
    assert _loop_count(f, _dataset(), _dataset()) == 1


def index_and_pairs(a, b):
    total = td.constant(0)
    for i, (x, y) in enumerate(zip(iter(a), b)):
        total += x * td.cast(i, td.int32) + y
    return total


def test_enumerate_of_a_zip_of_an_iterator_and_a_dataset():
    assert td.function(index_and_pairs)(_dataset(), _dataset().take(2)).numpy() == (10 * 0 + 10) + (20 * 1 + 20)


def zip_with_a_list(ds):
    total = td.constant(0)
    for x, y in zip(ds, [1, 2, 3]):
        total += x * y
    return total


def test_zip_with_a_python_list_stays_pythons_zip():
    # As in TensorFlow: unrolled over the list; the fourth pull from the
    # dataset (before the list is found exhausted) ends the sequence.
    with pytest.raises(td.errors.OutOfRangeError, match="End of sequence"):
        td.function(zip_with_a_list)(_dataset())


def zip_of_an_enumerate(ds):
    for _ in zip(enumerate(iter(ds)), iter(ds)):
        pass


def test_zip_of_an_iterators_enumerate_says_what_to_write_instead():
    with pytest.raises(NotImplementedError, match=r"enumerate\(zip\(a, b\)\)"):
        td.function(zip_of_an_enumerate)(_dataset())


def doubled_sum():
    total = td.constant(0)
    for x in map(lambda v: v * 2, DATASET):
        total += x
    return total


def large_sum():
    total = td.constant(0)
    for x in filter(lambda v: v > 10, DATASET):
        total += x
    return total


def test_map_and_filter_of_a_dataset_are_the_datasets_own():
    assert td.function(doubled_sum)().numpy() == 120
    assert td.function(large_sum)().numpy() == 50
    assert _loop_count(td.function(doubled_sum)) == 1


def python_builtins_on_lists():
    pairs = list(zip([1, 2], "ab"))
    return pairs, list(enumerate("xy", 3)), list(map(abs, [-1, 2])), list(filter(None, [0, 1, 2]))


def test_on_python_values_they_are_pythons_builtins():
    assert td.function(python_builtins_on_lists)() == python_builtins_on_lists()


def map_an_argument(ds):
    total = td.constant(0)
    for x in map(lambda v: v * 2, ds):
        total += x
    return total


def filter_an_iterator(ds):
    total = td.constant(0)
    for x in filter(lambda v: v > 10, iter(ds)):
        total += x
    return total


def test_map_and_filter_of_what_the_function_cannot_transform_say_so():
    with pytest.raises(NotImplementedError, match=r"map\(\) over a dataset iterator, or over a dataset passed"):
        td.function(map_an_argument)(_dataset())
    with pytest.raises(NotImplementedError, match=r"filter\(\) over a dataset iterator"):
        td.function(filter_an_iterator)(_dataset())
