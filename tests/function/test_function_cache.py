"""The td.function trace cache: misses that do not scan earlier traces, a
least-recently-used bound, no per-call keys with reduce_retracing, and
TensorFlow's excessive-retracing warning naming its cause."""

import gc
import logging
import weakref

import numpy as np
import pytest

import treadle as td
from treadle.function import function_type, retracing
from treadle.function.polymorphic_function import MAX_TRACES


def _empty(n):
    """A float32 tensor of shape (0, n): a new shape per n, no data."""
    return td.constant(np.zeros((0, n), np.float32))


@pytest.fixture
def subtype_checks(monkeypatch):
    """Counts FunctionType.is_subtype_of calls (the work of a scan)."""
    counter = {"n": 0}
    original = function_type.FunctionType.is_subtype_of

    def counted(self, other):
        counter["n"] += 1
        return original(self, other)
    monkeypatch.setattr(function_type.FunctionType, "is_subtype_of", counted)
    return counter


def test_a_miss_does_not_scan_the_earlier_traces(subtype_checks):
    @td.function
    def f(x):
        return x + 1.0

    work = {}
    for n in range(1, 301):
        subtype_checks["n"] = 0
        f(_empty(n))
        work[n] = subtype_checks["n"]
    assert f.experimental_get_tracing_count() == 300
    assert work[300] == work[10]


def test_the_cache_is_bounded_and_evicts_the_least_recently_used():
    @td.function
    def f(x):
        return x * 2.0

    f._max_traces = 16
    hot = _empty(1000)
    f(hot)
    first = f._concrete_functions[0]
    cold = weakref.ref(f.get_concrete_function(_empty(2000)))
    for n in range(1, 41):
        f(_empty(n))
        f(hot)  # a fast-path hit: keeps its trace recently used
    assert len(f._cache) <= 16 and len(f._concrete_functions) == len(f._cache)
    assert len(f._fast_cache) <= 16
    assert f._concrete_functions[0] is first  # never evicted
    count = f.experimental_get_tracing_count()
    f(hot)
    assert f.experimental_get_tracing_count() == count
    gc.collect()
    assert cold() is None  # evicted and freed
    f(_empty(2000))
    assert f.experimental_get_tracing_count() == count + 1  # an evicted type traces again
    np.testing.assert_array_equal(f(td.constant([1.0, 2.0])).numpy(), [2.0, 4.0])


def test_the_bound_is_documented():
    assert MAX_TRACES == 1024
    assert "MAX_TRACES" in td.function.__doc__ or "1024" in td.function.__doc__


def test_reduce_retracing_keeps_no_per_call_keys():
    @td.function(reduce_retracing=True)
    def f(x):
        return x * 2.0

    for n in range(1, 201):
        np.testing.assert_array_equal(f(td.constant(np.arange(n, dtype=np.float32))).numpy(),
                                      np.arange(n, dtype=np.float32) * 2)
    assert f.experimental_get_tracing_count() == 2  # (1,), then (None,)
    assert len(f._cache) == 2
    assert len(f._cache._exact) == 2 and len(f._cache._last_use) == 2
    assert len(f._fast_cache) <= 1


def test_input_signature_with_unknown_dims_keeps_no_per_call_keys():
    @td.function(input_signature=[td.TensorSpec([None], td.float32)])
    def f(x):
        return x + 1.0

    for n in range(1, 101):
        f(td.constant(np.zeros(n, np.float32)))
    assert len(f._fast_cache) == 0 and len(f._cache) == 1


# ---------------------------------------------------------------- the retracing warning

@pytest.fixture
def _warnings_of(caplog):
    """The retracing warnings logged (at WARNING level, logger "treadle", as
    TensorFlow logs them) while fn runs."""
    def run(fn):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="treadle"):
            fn()
        return [r.getMessage() for r in caplog.records
                if r.name == "treadle" and r.levelno == logging.WARNING and "retracing" in r.getMessage()]
    return run


def test_warning_names_a_tensor_argument_whose_shape_changes(_warnings_of):
    @td.function
    def f(x, scale):
        return x * scale

    def calls():
        for n in range(1, 6):
            f(_empty(n), scale=2.0)
    messages = _warnings_of(calls)
    assert len(messages) == 1
    assert "5 out of the last 5 calls to" in messages[0]
    assert "argument 'x', a tensor whose shape changed from (0, 4) to (0, 5)" in messages[0]
    assert "reduce_retracing=True" in messages[0]


def test_warning_names_a_python_argument_whose_value_changes(_warnings_of):
    @td.function
    def f(x, k):
        return x + k

    def calls():
        for i in range(5):
            f(td.constant(1.0), float(i))
    [message] = _warnings_of(calls)
    assert "argument 'k', a Python value that changed from 3.0 to 4.0" in message


def test_no_warning_when_traces_are_rare_among_calls(_warnings_of):
    @td.function
    def f(x):
        return x + 1.0

    def calls():
        for n in range(1, 8):
            for _ in range(3):
                f(_empty(n))  # one trace every three calls: fewer than 5 in any 10
    assert _warnings_of(calls) == []


def test_warning_for_a_td_function_created_in_a_loop(_warnings_of):
    def body(x):
        return x + 1.0

    def calls():
        for _ in range(retracing.THRESHOLD):
            td.function(body)(td.constant(1.0))
    [message] = _warnings_of(calls)
    assert "5 td.functions were made of" in message and "cause (1)" in message


def test_methods_traced_once_per_instance_do_not_warn(_warnings_of):
    class Model:
        @td.function
        def __call__(self, x):
            return x * 2.0

    def calls():
        for _ in range(8):
            Model()(td.constant(1.0))
    assert _warnings_of(calls) == []


def test_get_concrete_function_traces_do_not_warn(_warnings_of):
    # As in TensorFlow: only calls count towards the warning, so asking for
    # many concrete functions (as td.loom.autobatch does for its cells) is not
    # "5 out of the last 1 calls".
    @td.function
    def f(x):
        return x + 1.0

    def concretes():
        for n in range(1, 8):
            f.get_concrete_function(td.TensorSpec([n], td.float32))
    assert _warnings_of(concretes) == []

    def body(x):
        return x + 1.0

    def created_and_asked():
        for _ in range(retracing.THRESHOLD):
            td.function(body).get_concrete_function(td.TensorSpec([2], td.float32))
    assert _warnings_of(created_and_asked) == []


def test_a_traced_autobatch_cell_of_many_signatures_does_not_warn(_warnings_of):
    @td.function
    def cell(*xs):
        return td.add_n(list(xs))

    def walk(n):
        return cell(*[td.constant([1.0, 2.0]) * float(i) for i in range(n)])

    def run():
        out = td.loom.autobatch(walk)(list(range(1, 8)))
        np.testing.assert_allclose(out.numpy()[:, 0], [sum(range(n)) for n in range(1, 8)])
    assert _warnings_of(run) == []
