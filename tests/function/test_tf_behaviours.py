"""td.function behaviours TensorFlow 2.21 has and its own tests check:
modified list and dict arguments, generator functions, methods of extension
types, packed lists of mixed integer tensors, a refused variable initializer,
and the retracing warning logged through Python logging."""

import logging

import numpy as np
import pytest

import treadle as td
from treadle.framework import variables


# ---------------------------------------------------------------- side effects on arguments

def test_appending_to_a_list_argument_raises():
    @td.function
    def append(items):
        items.append(td.constant(3))
        return items[0]

    with pytest.raises(ValueError, match=r"append\(items\) should not modify its Python input arguments\. "
                                         r"Modified argument\(s\): items"):
        append([td.constant(1), td.constant(2)])


def test_setting_a_key_of_a_dict_argument_raises():
    @td.function
    def put(d, x):
        d["b"] = x
        return x

    with pytest.raises(ValueError, match=r"Modified argument\(s\): d$"):
        put({"a": td.constant(1)}, td.constant(2))


def test_replacing_a_nested_element_raises_and_a_copy_is_allowed():
    @td.function
    def replace(pairs):
        pairs[0][1] = pairs[0][0]
        return pairs[0][1]

    with pytest.raises(ValueError, match="Modified argument"):
        replace([[td.constant(1), td.constant(2)]])

    @td.function
    def copy_then_append(items):
        mine = list(items)
        mine.append(td.constant(10))
        return td.add_n(mine)

    assert copy_then_append([td.constant(1), td.constant(2)]).numpy() == 13


# ---------------------------------------------------------------- generators

def test_a_generator_function_is_refused():
    def gen(x):
        yield x

    with pytest.raises(TypeError, match="must return zero or more Tensors or ExtensionTypes or None values; in "
                                        "compilation of .*gen.*, found return value of type generator"):
        td.function(gen)(td.constant(1))


# ---------------------------------------------------------------- extension type methods

class Scaled(td.experimental.ExtensionType):
    values: td.Tensor
    scale: float

    @td.function
    def total(self, offset):
        return td.reduce_sum(self.values) * self.scale + offset


def test_a_td_function_method_of_an_extension_type():
    a = Scaled(td.constant([1.0, 2.0]), 2.0)
    b = Scaled(td.constant([3.0, 4.0]), 2.0)
    assert a.total(td.constant(1.0)).numpy() == 7.0
    assert b.total(td.constant(1.0)).numpy() == 15.0
    # The instance is an argument (its tensors are inputs): one trace for both.
    assert Scaled.total.experimental_get_tracing_count() == 1
    assert Scaled(td.constant([1.0]), 3.0).total(td.constant(0.0)).numpy() == 3.0
    assert td.function(lambda s: s.total(td.constant(1.0)))(a).numpy() == 7.0


class Shifted(td.experimental.ExtensionType):
    values: td.Tensor

    @td.function(input_signature=[td.TensorSpec([], td.float32)])
    def plus(self, offset):
        return self.values + offset


def test_an_extension_type_method_with_an_input_signature():
    np.testing.assert_array_equal(Shifted(td.constant([1.0, 2.0])).plus(td.constant(1.0)).numpy(), [2.0, 3.0])
    np.testing.assert_array_equal(Shifted(td.constant([5.0, 6.0])).plus(2.0).numpy(), [7.0, 8.0])
    assert Shifted.plus.experimental_get_tracing_count() == 1
    with pytest.raises(TypeError, match="Binding inputs to td.function `plus` failed"):
        Shifted(td.constant([1.0])).plus(td.constant([1.0]))


# ---------------------------------------------------------------- packed lists

@pytest.mark.parametrize("staged", [False, True])
def test_concat_converts_a_packed_list_to_the_first_tensors_dtype(staged):
    def run(a, b):
        return td.concat((a, [b]), 0)

    fn = td.function(run, autograph=False) if staged else run
    out = fn(td.constant([1, 2]), td.constant(3, td.int64))
    assert out.dtype == td.int32
    np.testing.assert_array_equal(out.numpy(), [1, 2, 3])


# ---------------------------------------------------------------- variables

def test_a_refused_initial_value_leaves_no_variable_behind():
    seen = []
    variables._creation_hooks.append(seen.append)  # what td.function's hook sees of each variable
    try:
        with pytest.raises(TypeError, match="Cannot convert 'abc'"):
            td.Variable("abc", dtype=td.float32)
        with pytest.raises(ValueError, match="not compatible with shape"):
            td.Variable([1.0, 2.0], shape=[3])
        assert seen == []
        v = td.Variable([1.0, 2.0])
        assert seen == [v] and "numpy=array([1., 2.]" in repr(v)
    finally:
        variables._creation_hooks.remove(seen.append)


def test_a_variable_refused_inside_a_function_is_not_seen_by_it():
    @td.function
    def f(x):
        td.Variable([1.0, 2.0], shape=[3])
        return x

    with pytest.raises(ValueError, match="not compatible with shape"):
        f(td.constant(1.0))


# ---------------------------------------------------------------- the retracing warning

def test_retracing_is_logged_at_warning_level_not_warned(caplog, recwarn):
    @td.function
    def f(x, k):
        return x + k

    with caplog.at_level(logging.WARNING, logger="treadle"):
        for i in range(5):
            f(td.constant(1.0), float(i))
    records = [r for r in caplog.records if "triggered td.function retracing" in r.getMessage()]
    assert len(records) == 1
    assert records[0].name == "treadle" and records[0].levelno == logging.WARNING
    assert not [w for w in recwarn if "retracing" in str(w.message)]


def test_retracing_warning_at_most_twice_per_function_as_tensorflow(caplog):
    # TensorFlow warns on the 5th and 6th of frequent traces, then no more.
    @td.function
    def f(x):
        return x

    with caplog.at_level(logging.WARNING, logger="treadle"):
        for i in range(10):
            f(i)
    messages = [r.getMessage() for r in caplog.records if "triggered td.function retracing" in r.getMessage()]
    assert len(messages) == 2
    assert messages[0].startswith("5 out of the last 5 calls") and messages[1].startswith("6 out of the last 6 calls")


def test_retracing_warning_counts_only_eager_calls(caplog):
    # Calls made while an outer function traces are that function's traces:
    # the inner function traced 8 times here, only 4 of them by eager calls.
    @td.function
    def inner(x):
        return x + 1

    @td.function
    def outer(x):
        return inner(x) * 2

    with caplog.at_level(logging.WARNING, logger="treadle"):
        for i in range(4):
            inner(i)
        for i in range(4, 8):
            outer(i)
    assert inner.experimental_get_tracing_count() == 8
    assert not [r for r in caplog.records if "triggered td.function retracing" in r.getMessage()]

