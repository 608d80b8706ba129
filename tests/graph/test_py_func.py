"""PyFunc: graph nodes calling back into Python through the dispatcher the
front end registers."""

import threading

import numpy as np
import pytest

import treadle as td
from treadle import _core

from graph_testlib import F32, F64, I32, Func, GraphBuilder, run, tensor, types

CALLBACKS = {}


def dispatch(token, args):
    return CALLBACKS[token](*args)


@pytest.fixture(autouse=True)
def dispatcher():
    previous = _core._set_py_func_dispatcher(dispatch)
    yield
    _core._set_py_func_dispatcher(previous)
    CALLBACKS.clear()


def py_func_graph(token, tout, n_inputs=1, dtype=F32):
    g = GraphBuilder()
    names = [g.placeholder(f"x{i}", dtype, [None]) for i in range(n_inputs)]
    g.node("call", "PyFunc", names, token=token, Tout=types(*tout))
    return g, names


def test_callback_sees_tensors_and_returns_results():
    seen = []

    def fn(a, b):
        seen.append((type(a), a.dtype, b.numpy().tolist()))
        return [td.constant(a.numpy() * 2 + b.numpy()), td.constant(np.int32(a.numpy().size))]

    CALLBACKS["f"] = fn
    g, names = py_func_graph("f", [F32, I32], n_inputs=2)
    g.unary("Neg", "call", "neg")
    exe = g.executable(names, ["neg", "call:1"])
    neg, size = run(exe, np.array([1, 2], np.float32), np.array([10, 20], np.float32))
    np.testing.assert_array_equal(neg, [-12, -24])
    assert size == 2
    assert seen == [(_core.EagerTensor, td.float32, [10.0, 20.0])]
    assert exe.output_signature == [(td.float32, None), (td.int32, None)]


def test_python_exception_propagates_unchanged():
    class Boom(Exception):
        pass

    def fn(a):
        raise Boom("the callback failed with detail 42")

    CALLBACKS["bad"] = fn
    g, names = py_func_graph("bad", [F32])
    exe = g.executable(names, ["call"])
    with pytest.raises(Boom, match="detail 42") as info:
        run(exe, np.ones(2, np.float32))
    assert "fn" in "".join(str(tb.name) for tb in info.traceback)
    # The executable stays usable.
    CALLBACKS["bad"] = lambda a: [a]
    np.testing.assert_array_equal(run(exe, np.ones(2, np.float32))[0], [1, 1])


def test_exception_inside_a_loop_body_propagates():
    def fn(i):
        if int(i.numpy()) == 2:
            raise ValueError("stop at two")
        return [i]

    CALLBACKS["check"] = fn
    g = GraphBuilder()
    cond = g.function("cond", [("i", I32)], [("r", 5)])
    cond.const("ten", np.int32(10))
    cond.binary("Less", "i", "ten", "lt")
    cond.ret(r="lt")
    body = g.function("body", [("i", I32)], [("j", I32)], stateful=True)
    body.const("one", np.int32(1))
    body.node("checked", "PyFunc", ["i"], token="check", Tout=types(I32))
    body.binary("AddV2", "checked", "one", "j")
    body.ret(j="j")
    g.placeholder("i", I32, [])
    g.node("loop", "While", ["i"], T=types(I32), cond=Func("cond"), body=Func("body"))
    exe = g.executable(["i"], ["loop"])
    with pytest.raises(ValueError, match="stop at two"):
        run(exe, np.int32(0))
    assert run(exe, np.int32(3))[0] == 10


@pytest.mark.parametrize("result,message", [
    (lambda a: [td.constant(np.float64(1))], "result 0 has dtype float64 but Tout says float32"),
    (lambda a: [a, a], "returned 2 values but Tout lists 1"),
    (lambda a: [1.0], "result 0 is 1.0, not a tensor"),
    (lambda a: a, "where a list of 1 tensors was expected"),
])
def test_bad_results(result, message):
    CALLBACKS["r"] = result
    g, names = py_func_graph("r", [F32])
    exe = g.executable(names, ["call"])
    with pytest.raises(td.errors.InvalidArgumentError, match=message):
        run(exe, np.ones(2, np.float32))


def test_no_outputs_and_unused_call_still_runs():
    calls = []
    CALLBACKS["log"] = lambda a: calls.append(a.numpy().tolist())
    g, names = py_func_graph("log", [])
    g.unary("Neg", "x0", "y")
    exe = g.executable(names, ["y"])
    run(exe, np.array([1.0, 2.0], np.float32))
    assert calls == [[1.0, 2.0]]


def test_no_dispatcher():
    _core._set_py_func_dispatcher(None)
    g, names = py_func_graph("f", [F32])
    exe = g.executable(names, ["call"])
    with pytest.raises(td.errors.FailedPreconditionError, match="no Python function dispatcher"):
        run(exe, np.ones(1, np.float32))


def test_threads_calling_python_through_one_executable():
    CALLBACKS["sq"] = lambda a: [td.constant(a.numpy() ** 2)]
    g = GraphBuilder()
    g.placeholder("x", F64, [None])
    g.node("sq", "PyFunc", ["x"], token="sq", Tout=types(F64))
    g.unary("Exp", "sq", "e")
    exe = g.executable(["x"], ["e"])
    errors = []

    def worker(seed):
        rng = np.random.RandomState(seed)
        try:
            for _ in range(100):
                x = rng.randn(rng.randint(1, 9))
                np.testing.assert_allclose(run(exe, x)[0], np.exp(x ** 2))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_py_func_eagerly():
    CALLBACKS["twice"] = lambda a: [td.constant(a.numpy() * 2)]
    (out,) = _core.execute(_core.lookup_op("PyFunc"), [tensor(np.array([1, 2], np.int32))],
                           {"token": "twice", "Tout": [td.int32]})
    np.testing.assert_array_equal(out.numpy(), [2, 4])
