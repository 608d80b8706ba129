"""The C types td.loom.autobatch records with: the round's growable int64
arrays (read by NumPy when a round is planned), the per-example Value whose
`src` a pending value keeps as C fields, and td.function's call slot, which
offers each call to the recording interceptor before any Python frame."""

import functools
import weakref

import numpy as np
import pytest

import treadle as td
from treadle.framework import tensor as tensor_module
from treadle.function import polymorphic_function
from treadle.function._call import register_c_interceptor
from treadle.loom.autobatch._record import Int64s, Round, Value, store_rows
from treadle.loom.autobatch.values import PENDING, STORED, VAR_ROW, VARIABLE, row_code

pytestmark = pytest.mark.filterwarnings("ignore:.*td.functions were made of")


def test_int64s_appends_indexes_and_reads_as_numpy():
    a = Int64s((0,))
    for x in (5, -7, 2**40):
        a.append(x)
    for x in range(200):  # past the first capacity
        a.append(x)
    assert len(a) == 204
    assert (a[0], a[1], a[2], a[3], a[-1]) == (0, 5, -7, 2**40, 199)
    view = np.asarray(a, np.int64)
    np.testing.assert_array_equal(view, [0, 5, -7, 2**40] + list(range(200)))
    with pytest.raises(IndexError):
        a[204]
    with pytest.raises(IndexError):
        a[-205]
    del view
    a.extend(np.arange(300, dtype=np.int64) * 3)  # an array at once, past the capacity again
    assert len(a) == 504 and a[204] == 0 and a[-1] == 897
    with pytest.raises(ValueError):
        a.extend(np.arange(3, dtype=np.int32))  # int64 only: no silent conversion


def test_int64s_cannot_grow_while_numpy_views_it():
    a = Int64s(range(64))  # full: the next append reallocates
    view = np.asarray(a)
    with pytest.raises(BufferError, match="cannot grow while NumPy views them"):
        a.append(1)
    del view
    a.append(1)
    assert len(a) == 65 and a[64] == 1


def test_round_numbers_groups_by_type_shape_kind_and_variable():
    r = Round()
    ts, var = object(), object()
    assert r.group(ts, VAR_ROW, var) == 0
    assert r.group(ts, VAR_ROW, None) == 1
    assert r.group(ts, VAR_ROW, var) == 0
    assert len(r) == 0 and list(np.asarray(r.arg_splits)) == [0]


def test_value_src_of_every_kind_round_trips():
    marker = object()
    pending = Value(None, 3, (PENDING, 9, 1, marker, (9 << 8) | 1), td.float32, (2,), 0)
    assert pending.src == (PENDING, 9, 1, marker, (9 << 8) | 1)
    assert pending._example == 3
    pending.src = (STORED, marker, 4, -5)  # what a round does with the values it keeps
    assert pending.src == (STORED, marker, 4, -5)
    shared = Value(None, None, (VARIABLE, marker), td.float32, (2,))
    assert shared._example is None and shared.src == (VARIABLE, marker)
    assert isinstance(shared, td.Tensor)
    assert shared.dtype == td.float32 and shared.shape.as_list() == [2]


def test_store_rows_number_values_as_stored_rows_with_their_argument_codes():
    marker = object()
    values = [Value(None, k, (PENDING, k, 0, marker, k << 8), td.float32, (2,), 0) for k in range(3)]
    store_rows(values, range(3), marker, 7)  # a round's values kept as rows 7, 8 and 9 of a column
    assert [v.src for v in values] == [(STORED, marker, row, row_code(row)) for row in (7, 8, 9)]
    assert [v._example for v in values] == [0, 1, 2]


def test_recorded_outputs_name_their_node_and_the_round():
    emb = td.Variable(np.arange(6.0).reshape(3, 2))
    seen = []

    @td.function
    def cell(a, b):
        return a + b, a * b

    def fn(i):
        row = td.gather(emb, i)
        s, p = cell(row, row)   # the general path: it fills the fast path's cache
        s2, p2 = cell(s, p)     # the fast path
        seen.append((row.src, s.src, p2.src))
        return s2 + p2

    out = td.loom.autobatch(fn)([0, 2])
    row = np.arange(6.0).reshape(3, 2)[[0, 2]]
    s, p = 2 * row, row * row
    np.testing.assert_allclose(out.numpy(), (s + p) + s * p)
    for (row_src, s_src, p2_src) in seen:
        assert row_src[0] == VAR_ROW
        assert s_src[0] == PENDING and s_src[2] == 0 and s_src[4] == (s_src[1] << 8)
        assert p2_src[0] == PENDING and p2_src[2] == 1 and p2_src[3] is s_src[3]
        assert p2_src[4] == (p2_src[1] << 8) | 1


def test_function_call_is_offered_to_the_last_interceptor_first():
    @td.function
    def double(x):
        return 2 * x

    calls = []

    def decline(function, args, kwargs):
        calls.append((function, args, kwargs))
        return NotImplemented

    def answer(function, args, kwargs):
        return "answered"

    polymorphic_function.call_interceptors.append(decline)
    try:
        assert double(td.constant(3.0)).numpy() == 6.0
        assert double(x=td.constant(1.0)).numpy() == 2.0
        polymorphic_function.call_interceptors.append(answer)
        try:
            assert double(td.constant(3.0)) == "answered"
        finally:
            polymorphic_function.call_interceptors.remove(answer)
    finally:
        polymorphic_function.call_interceptors.remove(decline)
    assert [c[0] for c in calls] == [double, double]
    assert calls[1][2].keys() == {"x"}
    assert double(td.constant(4.0)).numpy() == 8.0


def test_every_way_of_calling_a_function_reaches_the_interceptor_with_the_same_arguments():
    # A call from Python code comes in by vectorcall (the arguments as a C
    # array); the interceptor still gets a tuple and a dictionary, as a call
    # through the type's call slot gives them.
    @td.function
    def add(x, y=1.0):
        return x + y

    seen = []

    def record(function, args, kwargs):
        seen.append((function, args, kwargs))
        return "recorded"

    a, b = td.constant(1.0), td.constant(2.0)
    polymorphic_function.call_interceptors.append(record)
    try:
        results = [add(a, b), add(a, y=b), add(*[a], **{"y": b}), functools.partial(add, a)(b),
                   add.__call__(a, b), type(add).__call__(add, a, y=b)]
    finally:
        polymorphic_function.call_interceptors.remove(record)
    assert results == ["recorded"] * 6
    assert [(f, len(args), sorted(kwargs)) for f, args, kwargs in seen] == [
        (add, 2, []), (add, 1, ["y"]), (add, 1, ["y"]), (add, 2, []), (add, 2, []), (add, 1, ["y"])]
    assert all(args[0] is a and (args[1:] or (kwargs["y"],))[0] is b for _, args, kwargs in seen)
    assert add(a, y=b).numpy() == 3.0 and add(a).numpy() == 2.0


def test_a_subclass_of_function_that_defines_its_call_is_called_through_it():
    class Counted(polymorphic_function.Function):
        calls = 0

        def __call__(self, *args, **kwargs):
            Counted.calls += 1
            return super().__call__(*args, **kwargs)

    counted = Counted(lambda x: x * 2.0)
    assert counted(td.constant(2.0)).numpy() == 4.0
    assert counted(x=td.constant(1.5)).numpy() == 3.0
    assert Counted.calls == 2


def test_the_recording_hook_called_from_c_and_from_python_records_alike():
    # Function.__call__ calls autobatch's hook through its C function
    # (register_c_interceptor); called as a Python object, or with keyword
    # arguments (the general path), it records alike.
    @td.function
    def double(x):
        return x * 2.0

    def fn(x):
        hook = polymorphic_function.call_interceptors[-1]
        v = td.constant(x)
        return double(v) + hook(double, (v,), {}) + double(x=v)
    out = td.loom.autobatch(fn)([np.array([1.0, 2.0]), np.array([3.0, -1.0])])
    np.testing.assert_allclose(out.numpy(), 6.0 * np.array([[1.0, 2.0], [3.0, -1.0]]), rtol=1e-12)
    with pytest.raises(TypeError, match="register_c_interceptor takes a type"):
        register_c_interceptor(object(), None)


def test_examples_that_wait_and_examples_that_finish_share_greenlets_in_order():
    # A greenlet whose example finished runs the next one; examples that
    # wait keep theirs. Every result must still be its own example's.
    w = td.Variable(np.array([[0.5, -1.0], [2.0, 0.25]]))

    @td.function
    def step(x):
        return td.tanh(td.linalg.matvec(w, x, transpose_a=True))

    def fn(i):
        x = step(td.constant([float(i), 1.0], dtype=td.float64))
        n = 0
        while i % 3 == 0 and float(x[0]) > -0.9 and n < 2 + i:  # reads: this example waits, round by round
            x = step(x) - 0.5
            n += 1
        return x

    def numpy_fn(i):
        m = np.array([[0.5, -1.0], [2.0, 0.25]])
        x = np.tanh(np.array([float(i), 1.0]) @ m)
        n = 0
        while i % 3 == 0 and x[0] > -0.9 and n < 2 + i:
            x = np.tanh(x @ m) - 0.5
            n += 1
        return x

    examples = list(range(10))
    out = td.loom.autobatch(fn)(examples)
    np.testing.assert_allclose(out.numpy(), np.stack([numpy_fn(i) for i in examples]), rtol=1e-12)


def test_an_error_after_finished_examples_names_its_example():
    @td.function
    def double(x):
        return 2.0 * x

    def fn(i):
        y = double(td.constant([float(i)]))
        if i == 4:
            raise KeyError("no such node")
        return y

    with pytest.raises(KeyError) as info:
        td.loom.autobatch(fn)(range(6))
    assert any("example 4" in note for note in info.value.__notes__)


def test_values_carry_no_instance_dictionary_yet_are_tensors_that_weak_references_reach():
    # td.Tensor declares no instance dictionary, so the values recording
    # makes by the thousand carry none; they stay weakly referenceable
    # (td.custom_gradient keys its outputs by weak reference).
    seen = []

    @td.custom_gradient
    def scaled(x):
        return x * 3.0, lambda dy: dy * 3.0

    def fn(x):
        v = td.constant(x)
        seen.append(v)
        return scaled(v)
    xs = [np.array([1.0, -2.0]), np.array([0.5, 4.0])]
    out = td.loom.autobatch(fn)(xs)
    np.testing.assert_allclose(out.numpy(), 3.0 * np.stack(xs), rtol=1e-12)
    v = seen[0]
    assert isinstance(v, td.Tensor) and not hasattr(v, "__dict__")
    assert weakref.ref(v)() is v
    with pytest.raises(AttributeError):
        v.note = 1


def test_a_value_has_every_operator_of_the_tensor_table_and_they_record_as_on_tensors():
    # Value is a C type registered as a td.Tensor, not a Python subclass: it
    # defines each operator of the table treadle/ops installs on td.Tensor.
    assert issubclass(Value, td.Tensor)
    missing = [d for d in tensor_module._operator_dunders + ["__getitem__"] if d not in vars(Value)]
    assert not missing, missing
    m = np.array([[1.0, -2.0], [0.5, 3.0]])

    def fn(x):
        v = td.constant(x)
        positive = v > 0.0
        return [v + 1.5, 1.5 + v, v - 2.0, 2.0 - v, v * 3.0, 3.0 * v, v / 2.0, 2.0 / v, v // 0.75, 5.0 // v,
                v % 0.75, 5.0 % v, v ** 2.0, 2.0 ** v, v @ v, m @ v, -v, abs(v), v[0], v[:, 1],
                td.cast(positive & (v < 2.0), td.float64), td.cast(positive | (v >= 2.0), td.float64),
                td.cast(~positive, td.float64), td.cast(v <= 1.0, td.float64), td.cast(v == v, td.float64),
                td.cast(v != 1.0, td.float64)]

    def numpy_fn(x):
        positive = x > 0.0
        return [x + 1.5, 1.5 + x, x - 2.0, 2.0 - x, x * 3.0, 3.0 * x, x / 2.0, 2.0 / x, x // 0.75, 5.0 // x,
                x % 0.75, 5.0 % x, x ** 2.0, 2.0 ** x, x @ x, m @ x, -x, abs(x), x[0], x[:, 1],
                positive & (x < 2.0), positive | (x >= 2.0), ~positive, x <= 1.0, x == x, x != 1.0]
    xs = [np.array([[1.0, -2.5], [0.3, 2.0]]), np.array([[-1.25, 4.0], [1.0, 0.6]])]
    out = td.loom.autobatch(fn)(xs)
    expected = [np.stack(column) for column in zip(*[numpy_fn(x) for x in xs])]
    assert len(out) == len(expected)
    for got, want in zip(out, expected):
        np.testing.assert_allclose(got.numpy(), want.astype(np.float64), rtol=1e-12)


def test_values_are_unhashable_tensors_with_references_and_one_example_s_shape():
    seen = []

    def fn(x):
        v = td.constant(x)
        seen.append((v.dtype, v.shape.as_list(), v.ndim, len(v), repr(v), str(v), v.ref() == v.ref(),
                     v.ref().deref() is v, v.get_shape().as_list()))
        with pytest.raises(TypeError, match="unhashable"):
            hash(v)
        return v * 2.0
    td.loom.autobatch(fn)([np.array([1.0, 2.0, 3.0])])
    (dtype, shape, ndim, n, r, s, same_ref, deref, static), = seen
    assert (dtype, shape, ndim, n, same_ref, deref, static) == (td.float64, [3], 1, 3, True, True, [3])
    assert r == s == "<td.loom.autobatch value (example 0) shape=(3,) dtype=float64>"
