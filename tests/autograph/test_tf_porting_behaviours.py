"""Behaviours that code ported from TensorFlow relies on, each checked eagerly
(plain Python) and inside td.function against TensorFlow's documented result:

- a loop over a tensor that defines a variable used after it, and runs no
  iteration, fails when the graph runs with TensorFlow's error
  (`InvalidArgumentError`, "loop must iterate at least once to initialize"),
  which is also Python's (`UnboundLocalError`);
- AUTOGRAPH_STRICT_CONVERSION=1 makes a function AutoGraph cannot convert (a
  generator) an error, as in TensorFlow;
- an iterator over a distributed dataset passed to a td.function is pulled
  from where it is, and loops over distributed input check their variables'
  shapes like a while loop (shape invariants included);
- a conditional expression on a tensor whose two values differ in structure
  raises TensorFlow's ValueError."""

import numpy as np
import pytest

import treadle as td


def defined_only_in_loop(n):
    i = 0
    while i < n:
        v = td.zeros([2]) + td.cast(i, td.float32)
        i += 1
    return v


def test_loop_that_defines_a_variable_runs_when_it_iterates():
    assert np.array_equal(defined_only_in_loop(td.constant(2)).numpy(), [1.0, 1.0])
    assert np.array_equal(td.function(defined_only_in_loop)(td.constant(2)).numpy(), [1.0, 1.0])


def test_loop_that_defines_a_variable_and_runs_no_iteration():
    with pytest.raises(UnboundLocalError):  # Python, eagerly
        defined_only_in_loop(td.constant(0))
    f = td.function(defined_only_in_loop)
    with pytest.raises(td.errors.InvalidArgumentError, match="loop must iterate at least once to initialize 'v'"):
        f(td.constant(0))
    with pytest.raises(UnboundLocalError, match="'v' is assigned only inside this loop"):
        f(td.constant(0))
    assert np.array_equal(f(td.constant(1)).numpy(), [0.0, 0.0])  # the same trace, when it iterates


def counting_generator(n):
    for i in range(n):
        yield i


def calls_a_generator(n):
    return sum(counting_generator(n))


def test_strict_conversion_refuses_generators(monkeypatch):
    assert calls_a_generator(3) == 3
    with pytest.raises(TypeError, match="found return value of type generator"):
        td.function(counting_generator)(2)  # without strict conversion: TensorFlow's TypeError
    assert td.function(calls_a_generator)(3) == 3  # the generator runs unconverted
    monkeypatch.setenv("AUTOGRAPH_STRICT_CONVERSION", "1")
    with pytest.raises(NotImplementedError, match="generators"):
        td.function(counting_generator)(2)


CPU = td.config.list_physical_devices("CPU")[0]


@pytest.fixture
def two_replicas():
    td.config.set_logical_device_configuration(CPU, [td.config.LogicalDeviceConfiguration()] * 2)
    strategy = td.distribute.MirroredStrategy()
    dataset = td.data.Dataset.from_tensor_slices(td.reshape(td.range(12), (3, 4)))
    yield strategy, lambda: strategy.experimental_distribute_dataset(dataset)
    td.config.set_logical_device_configuration(CPU, None)


def sum_rows(strategy, iterable):
    s = 0
    for shares in iterable:
        s = s * 10 + strategy.reduce("SUM", shares, axis=0)
    return s


def test_distributed_iterator_argument_continues_where_it_is(two_replicas):
    strategy, make = two_replicas
    eager = iter(make())
    next(eager)
    traced = iter(make())
    next(traced)
    assert int(sum_rows(strategy, eager)) == 22 * 10 + 38
    assert int(td.function(sum_rows)(strategy, traced)) == 22 * 10 + 38


def grows_per_row(iterable):
    t = td.constant([1])
    for _ in iterable:
        t = td.concat([t, [1]], 0)
    return t


def grows_with_invariant(iterable):
    t = td.constant([1])
    for _ in iterable:
        td.autograph.experimental.set_loop_options(shape_invariants=[(t, td.TensorShape([None]))])
        t = td.concat([t, [1]], 0)
    return t


def test_loop_over_distributed_input_checks_shapes(two_replicas):
    _, make = two_replicas
    assert grows_per_row(make()).shape == [4]  # Python: any shape
    with pytest.raises(ValueError, match=r"'t' has shape \(1,\) before the loop, but shape \(2,\) after"):
        td.function(grows_per_row)(make())
    assert np.array_equal(td.function(grows_with_invariant)(make()).numpy(), grows_with_invariant(make()).numpy())


def unstack_or_empty(x):
    return td.unstack(x) if td.size(x) > 0 else []


def test_conditional_expression_with_two_structures():
    assert len(unstack_or_empty(td.constant([1.0, 2.0]))) == 2
    with pytest.raises(ValueError, match="must return the same nested structure in both branches"):
        td.function(unstack_or_empty)(td.constant([1.0]))


def test_strict_conversion_refuses_a_function_without_source(monkeypatch):
    namespace = {}
    exec("def no_source(x):\n    return x + 1\n", namespace)  # noqa: S102 - a function whose source cannot be read
    with pytest.warns(td.autograph.AutoGraphWarning, match="could not transform"):
        assert int(td.function(namespace["no_source"])(td.constant(1))) == 2
    exec("def no_source(x):\n    return x + 1\n", namespace)  # noqa: S102 - a new function object
    monkeypatch.setenv("AUTOGRAPH_STRICT_CONVERSION", "1")
    with pytest.raises(NotImplementedError, match="AUTOGRAPH_STRICT_CONVERSION"):
        td.function(namespace["no_source"])(td.constant(1))
