"""Situations the AutoGraph reference and the tf.function guide describe,
with td in place of tf: what runs at trace time, what runs in the graph."""

import numpy as np
import pytest

import treadle as td


def test_trace_time_prints_and_graph_prints_in_a_staged_for_if_chain(capfd):
    @td.function
    def fizzbuzz(n):
        for i in td.range(1, n + 1):
            print("tracing the loop")
            if i % 15 == 0:
                print("tracing fizzbuzz")
                td.print("fizzbuzz")
            elif i % 3 == 0:
                print("tracing fizz")
                td.print("fizz")
            elif i % 5 == 0:
                print("tracing buzz")
                td.print("buzz")
            else:
                print("tracing the number")
                td.print(i)

    fizzbuzz(td.constant(5))
    out, err = capfd.readouterr()
    # Python side effects happen once, while tracing: every branch is traced.
    assert out == "tracing the loop\ntracing fizzbuzz\ntracing fizz\ntracing buzz\ntracing the number\n"
    assert err == "1\n2\nfizz\n4\nbuzz\n"
    fizzbuzz(td.constant(15))
    out, err = capfd.readouterr()
    assert out == ""  # no retrace for another tensor of the same type
    assert err.split() == ["1", "2", "fizz", "4", "buzz", "fizz", "7", "8", "fizz", "buzz", "11", "fizz", "13",
                           "14", "fizzbuzz"]


def test_python_condition_is_decided_while_tracing():
    @td.function
    def f(x, use_square):
        if use_square:
            return x * x
        return x + 1

    ops = [op.type for op in f.get_concrete_function(td.TensorSpec([], td.int32), True).graph.operations]
    assert "If" not in ops and "StatelessIf" not in ops and "Mul" in ops
    assert f(td.constant(3), True).numpy() == 9 and f(td.constant(3), False).numpy() == 4


def test_random_condition_while_loop():
    @td.function
    def coin_flips(limit):
        flips = 0
        while td.random.uniform(()) > 0.5 and flips < limit:
            flips += 1
        return flips

    results = {int(coin_flips(td.constant(50)).numpy()) for _ in range(20)}
    assert all(0 <= r <= 50 for r in results) and len(results) > 1


def test_accumulating_values_in_a_loop_with_a_tensor_array():
    @td.function
    def running_sums(xs):
        out = td.TensorArray(td.float32, size=0, dynamic_size=True)
        total = td.constant(0.0)
        for i in td.range(len(xs)):
            total += xs[i]
            out = out.write(i, total)
        return out.stack()

    xs = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    np.testing.assert_allclose(running_sums(td.constant(xs)).numpy(), np.cumsum(xs))


def test_loop_over_a_tensor_of_rows():
    @td.function
    def row_norms(m):
        norms = td.TensorArray(td.float32, size=m.shape[0])
        i = 0
        for row in m:
            norms = norms.write(i, td.sqrt(td.reduce_sum(row * row)))
            i += 1
        return norms.stack()

    m = np.array([[3.0, 4.0], [6.0, 8.0], [0.0, 1.0]], np.float32)
    np.testing.assert_allclose(row_norms(td.constant(m)).numpy(), [5.0, 10.0, 1.0])


def test_a_python_list_does_not_become_a_loop_variable():
    @td.function
    def collect(n):
        values = []
        for i in td.range(n):
            values.append(i)
        return td.stack(values)

    # The list holds a tensor of the loop body, which does not exist outside it:
    # TensorFlow's InaccessibleTensorError, a ValueError.
    with pytest.raises(td.errors.InaccessibleTensorError, match="out of scope"):
        collect(td.constant(3))


def test_shape_invariant_for_a_growing_tensor():
    @td.function
    def doubling(n):
        v = td.constant([1.0])
        for _ in td.range(n):
            td.autograph.experimental.set_loop_options(shape_invariants=[(v, td.TensorShape([None]))])
            v = td.concat([v, v * 2.0], 0)
        return v

    assert doubling(td.constant(2)).numpy().tolist() == [1.0, 2.0, 2.0, 4.0]


def test_do_not_convert_keeps_python_semantics_for_python_values():
    @td.autograph.experimental.do_not_convert
    def clip(v, hi):
        return hi if v > hi else v

    @td.function
    def f(x):
        return x + clip(3, 2)  # Python values only: fine unconverted

    assert f(td.constant(1)).numpy() == 3
