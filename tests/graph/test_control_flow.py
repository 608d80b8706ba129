"""If, While and function calls, with bodies as library functions."""

import numpy as np
import pytest

import treadle as td

from graph_testlib import BOOL, DT, F32, F64, I32, I64, STRING, Func, GraphBuilder, Shape, run, tensor, types

InvalidArgument = td.errors.InvalidArgumentError


def add_branches(g, dtype=F32):
    """then: (a, b) -> (a + b, a * b); else: (a, b) -> (a - b, b)."""
    t = g.function("then", [("a", dtype), ("b", dtype)], [("s", dtype), ("p", dtype)])
    t.binary("AddV2", "a", "b", "sum")
    t.binary("Mul", "a", "b", "prod")
    t.ret(s="sum", p="prod")
    e = g.function("else", [("a", dtype), ("b", dtype)], [("s", dtype), ("p", dtype)])
    e.binary("Sub", "a", "b", "diff")
    e.ret(s="diff", p="b")


def if_graph(cond_dtype=BOOL, cond_shape=()):
    g = GraphBuilder()
    add_branches(g)
    g.placeholder("c", cond_dtype, list(cond_shape) if cond_shape is not None else None)
    g.placeholder("a", F32, [3])
    g.placeholder("b", F32, [3])
    g.node("if", "If", ["c", "a", "b"], Tin=types(F32, F32), Tout=types(F32, F32), then_branch=Func("then"),
           else_branch=Func("else"))
    return g.executable(["c", "a", "b"], ["if", "if:1"])


def test_if_takes_both_branches():
    exe = if_graph()
    a = np.array([1, 2, 3], np.float32)
    b = np.array([4, 5, 6], np.float32)
    s, p = run(exe, np.array(True), a, b)
    np.testing.assert_array_equal(s, a + b)
    np.testing.assert_array_equal(p, a * b)
    s, p = run(exe, np.array(False), a, b)
    np.testing.assert_array_equal(s, a - b)
    np.testing.assert_array_equal(p, b)
    assert exe.num_nodes == 1


@pytest.mark.parametrize("cond_dtype,value,expected", [
    (I32, np.int32(0), False), (I32, np.int32(-3), True), (F64, np.float64(0.0), False), (F64, np.float64(0.5), True),
    (I64, np.int64(1), True), (STRING, b"", False), (STRING, b"x", True)])
def test_if_scalar_truthiness(cond_dtype, value, expected):
    exe = if_graph(cond_dtype, ())
    a, b = np.ones(3, np.float32), np.full(3, 2, np.float32)
    s, _ = run(exe, tensor(value) if cond_dtype != STRING else td.constant(value), a, b)
    np.testing.assert_array_equal(s, a + b if expected else a - b)


@pytest.mark.parametrize("shape,expected", [((0,), False), ((2,), True), ((1, 0), False), ((2, 2), True)])
def test_if_tensor_truthiness_is_non_emptiness(shape, expected):
    exe = if_graph(F32, None)
    a, b = np.ones(3, np.float32), np.full(3, 2, np.float32)
    s, _ = run(exe, np.zeros(shape, np.float32), a, b)  # zeros: only emptiness counts
    np.testing.assert_array_equal(s, a + b if expected else a - b)


def test_if_output_shapes_generalize_branches():
    g = GraphBuilder()
    t = g.function("t", [("a", F32, [2])], [("r", F32, [2])])
    t.ret(r="a")
    e = g.function("e", [("a", F32, [2])], [("r", F32, [None])])
    e.unary("Neg", "a", "n")
    e.ret(r="n")
    g.placeholder("c", BOOL, [])
    g.placeholder("a", F32, [2])
    g.node("if", "If", ["c", "a"], Tin=types(F32), Tout=types(F32), then_branch=Func("t"), else_branch=Func("e"))
    exe = g.executable(["c", "a"], ["if"])
    assert exe.output_signature == [(td.float32, (None,))]
    np.testing.assert_array_equal(run(exe, np.array(False), np.array([1, 2], np.float32))[0], [-1, -2])


def test_if_output_shapes_conflicting_with_branches_is_rejected():
    g = GraphBuilder()
    t = g.function("t", [("a", F32, [2])], [("r", F32, [2])])
    t.ret(r="a")
    g.placeholder("c", BOOL, [])
    g.placeholder("a", F32, [2])
    g.node("if", "If", ["c", "a"], Tin=types(F32), Tout=types(F32), then_branch=Func("t"), else_branch=Func("t"),
           output_shapes=[Shape([3])])
    with pytest.raises(InvalidArgument, match="output_shapes, but its function returns shape \\(2,\\)"):
        g.executable(["c", "a"], ["if"])


def counting_loop(limit_dtype=I32):
    """while i < n: i += 1; acc = acc * 2 + i (float64)."""
    g = GraphBuilder()
    cond = g.function("cond", [("i", limit_dtype), ("n", limit_dtype), ("acc", F64)], [("r", BOOL)])
    cond.binary("Less", "i", "n", "lt")
    cond.ret(r="lt")
    body = g.function("body", [("i", limit_dtype), ("n", limit_dtype), ("acc", F64)],
                      [("i2", limit_dtype), ("n2", limit_dtype), ("acc2", F64)])
    body.const("one", np.array(1, dtype=np.int32 if limit_dtype == I32 else np.int64))
    body.const("two", np.float64(2))
    body.binary("AddV2", "i", "one", "next")
    body.node("next_f", "Cast", ["next"], DstT=DT(F64))
    body.binary("Mul", "acc", "two", "doubled")
    body.binary("AddV2", "doubled", "next_f", "acc_next")
    body.ret(i2="next", n2="n", acc2="acc_next")
    g.placeholder("i", limit_dtype, [])
    g.placeholder("n", limit_dtype, [])
    g.placeholder("acc", F64, [])
    g.node("loop", "While", ["i", "n", "acc"], T=types(limit_dtype, limit_dtype, F64), cond=Func("cond"),
           body=Func("body"))
    return g.executable(["i", "n", "acc"], ["loop", "loop:1", "loop:2"])


def reference_loop(i, n, acc):
    while i < n:
        i += 1
        acc = acc * 2 + i
    return i, n, acc


@pytest.mark.parametrize("limit_dtype,np_type", [(I32, np.int32), (I64, np.int64)])
@pytest.mark.parametrize("start,limit", [(0, 10), (3, 4), (5, 5), (7, 2), (0, 100)])
def test_while_counts_and_carries_several_values(limit_dtype, np_type, start, limit):
    exe = counting_loop(limit_dtype)
    i, n, acc = run(exe, np_type(start), np_type(limit), np.float64(0.5))
    ei, en, eacc = reference_loop(start, limit, 0.5)
    assert (i, n) == (ei, en) and i.dtype == np_type
    assert acc == pytest.approx(eacc)


def test_while_zero_iterations_returns_inputs_unchanged():
    exe = counting_loop()
    i, n, acc = run(exe, np.int32(9), np.int32(3), np.float64(1.25))
    assert (i, n, acc) == (9, 3, 1.25)


def test_while_changing_shape_against_invariant():
    g = GraphBuilder()
    cond = g.function("cond", [("v", F32), ("k", I32)], [("r", BOOL)])
    cond.const("three", np.int32(3))
    cond.binary("Less", "k", "three", "lt")
    cond.ret(r="lt")
    body = g.function("body", [("v", F32), ("k", I32)], [("v2", F32), ("k2", I32)])
    body.const("one", np.int32(1))
    body.const("grid", np.ones((2, 2), np.float32))
    body.binary("AddV2", "v", "grid", "grown")  # (2,) + (2, 2) -> (2, 2)
    body.binary("AddV2", "k", "one", "k_next")
    body.ret(v2="grown", k2="k_next")
    g.placeholder("v", F32, [2])
    g.placeholder("k", I32, [])
    g.node("loop", "While", ["v", "k"], T=types(F32, I32), cond=Func("cond"), body=Func("body"),
           output_shapes=[Shape([2]), Shape([])])
    exe = g.executable(["v", "k"], ["loop"])
    with pytest.raises(InvalidArgument, match="While: in iteration 0 the body gave loop variable 0 shape \\[2,2\\], "
                                              "which does not fit its shape invariant \\(2,\\)"):
        run(exe, np.zeros(2, np.float32), np.int32(0))
    # Without an invariant the shape may change.
    g.gd.node[-1].attr["output_shapes"].list.Clear()
    g.gd.node[-1].attr["output_shapes"].list.SetInParent()
    exe = g.executable(["v", "k"], ["loop"])
    (v,) = run(exe, np.zeros(2, np.float32), np.int32(0))
    np.testing.assert_array_equal(v, np.full((2, 2), 3, np.float32))


def test_while_loop_entering_with_wrong_shape_is_rejected_at_load():
    g = GraphBuilder()
    cond = g.function("cond", [("v", F32)], [("r", BOOL)])
    cond.const("f", np.array(False))
    cond.ret(r="f")
    body = g.function("body", [("v", F32)], [("v2", F32)])
    body.ret(v2="v")
    g.placeholder("v", F32, [3])
    g.node("loop", "While", ["v"], T=types(F32), cond=Func("cond"), body=Func("body"), output_shapes=[Shape([2])])
    with pytest.raises(InvalidArgument, match="loop variable 0 enters with shape \\(3,\\), which does not fit"):
        g.executable(["v"], ["loop"])


def test_while_body_changing_dtype_is_rejected_at_load():
    g = GraphBuilder()
    cond = g.function("cond", [("v", I32)], [("r", BOOL)])
    cond.const("f", np.array(False))
    cond.ret(r="f")
    body = g.function("body", [("v", I32)], [("v2", I64)])
    body.node("c", "Cast", ["v"], DstT=DT(I64))
    body.ret(v2="c")
    g.placeholder("v", I32, [])
    g.node("loop", "While", ["v"], T=types(I32), cond=Func("cond"), body=Func("body"))
    with pytest.raises(InvalidArgument, match="function 'body' returns \\(int64\\) but the node's T is \\(int32\\)"):
        g.executable(["v"], ["loop"])


def test_while_cond_must_return_one_value():
    g = GraphBuilder()
    cond = g.function("cond", [("v", I32)], [("a", I32), ("b", I32)])
    cond.ret(a="v", b="v")
    body = g.function("body", [("v", I32)], [("v2", I32)])
    body.ret(v2="v")
    g.placeholder("v", I32, [])
    g.node("loop", "While", ["v"], T=types(I32), cond=Func("cond"), body=Func("body"))
    with pytest.raises(InvalidArgument, match="must return exactly one value, but returns 2"):
        g.executable(["v"], ["loop"])


def test_calls_and_a_function_calling_a_function():
    g = GraphBuilder()
    sq = g.function("square", [("x", F64)], [("y", F64)])
    sq.binary("Mul", "x", "x", "m")
    sq.ret(y="m")
    quad = g.function("fourth_plus", [("x", F64), ("c", F64)], [("y", F64), ("same", F64)])
    quad.node("s1", "PartitionedCall", ["x"], Tin=types(F64), Tout=types(F64), f=Func("square"))
    quad.node("s2", "StatefulPartitionedCall", ["s1"], Tin=types(F64), Tout=types(F64), f=Func("square"))
    quad.binary("AddV2", "s2", "c", "sum")
    quad.ret(y="sum", same="c")
    g.placeholder("x", F64, [None])
    g.placeholder("c", F64, [])
    g.node("call", "PartitionedCall", ["x", "c"], Tin=types(F64, F64), Tout=types(F64, F64), f=Func("fourth_plus"))
    exe = g.executable(["x", "c"], ["call", "call:1"])
    x = np.array([1.0, 2.0, -3.0])
    y, same = run(exe, x, np.float64(0.5))
    np.testing.assert_allclose(y, x ** 4 + 0.5)
    assert same == 0.5
    # The same library function run directly.
    direct = g.function_executable("fourth_plus")
    assert direct.input_signature == [(td.float64, None), (td.float64, None)]
    y, same = run(direct, x, np.float64(1))
    np.testing.assert_allclose(y, x ** 4 + 1)


def test_nested_control_flow():
    """A loop whose body branches: count up to n, adding i when i is odd."""
    g = GraphBuilder()
    odd = g.function("odd", [("acc", I32), ("i", I32)], [("r", I32)])
    odd.binary("AddV2", "acc", "i", "s")
    odd.ret(r="s")
    even = g.function("even", [("acc", I32), ("i", I32)], [("r", I32)])
    even.ret(r="acc")
    cond = g.function("cond", [("i", I32), ("n", I32), ("acc", I32)], [("r", BOOL)])
    cond.binary("Less", "i", "n", "lt")
    cond.ret(r="lt")
    body = g.function("body", [("i", I32), ("n", I32), ("acc", I32)], [("i2", I32), ("n2", I32), ("acc2", I32)])
    body.const("one", np.int32(1))
    body.const("two", np.int32(2))
    body.binary("FloorMod", "i", "two", "parity")  # an int32 condition: truthy when odd
    body.node("pick", "If", ["parity", "acc", "i"], Tin=types(I32, I32), Tout=types(I32), then_branch=Func("odd"),
              else_branch=Func("even"))
    body.binary("AddV2", "i", "one", "inc")
    body.ret(i2="inc", n2="n", acc2="pick")
    g.placeholder("n", I32, [])
    g.const("zero", np.int32(0))
    g.node("loop", "While", ["zero", "n", "zero"], T=types(I32, I32, I32), cond=Func("cond"), body=Func("body"))
    exe = g.executable(["n"], ["loop:2"])
    for n in (0, 1, 7, 20):
        assert run(exe, np.int32(n))[0] == sum(i for i in range(n) if i % 2)


def test_from_function_checks_arguments_and_declared_results():
    g = GraphBuilder()
    f = g.function("f", [("a", F32, [None])], [("b", F32, [2])])
    f.unary("Neg", "a", "n")
    f.ret(b="n")
    exe = g.function_executable("f")
    np.testing.assert_array_equal(run(exe, np.array([1, 2], np.float32))[0], [-1, -2])
    with pytest.raises(InvalidArgument, match="function 'f' result 'b' has shape \\[3\\] but the function declares "
                                              "shape \\(2,\\)"):
        run(exe, np.array([1, 2, 3], np.float32))
    with pytest.raises(InvalidArgument, match="function 'f' argument 'a' must be float32, got int32"):
        run(exe, np.array([1, 2], np.int32))
    with pytest.raises(InvalidArgument, match="function 'f' argument 'a' must have shape \\(None,\\), got shape \\[\\]"):
        run(exe, np.float32(1))


def test_function_returning_argument_and_constant():
    g = GraphBuilder()
    f = g.function("f", [("a", STRING)], [("same", STRING), ("c", I32)])
    f.const("k", np.array([4, 5], np.int32))
    f.ret(same="a", c="k")
    exe = g.function_executable("f")
    same, c = run(exe, td.constant([b"p", b"q"]))
    assert list(same) == [b"p", b"q"]
    assert list(c) == [4, 5]
    assert exe.num_nodes == 0


def test_error_inside_function_names_the_node_chain():
    g = GraphBuilder()
    inner = g.function("inner", [("a", I32), ("b", I32)], [("q", I32)])
    inner.binary("FloorDiv", "a", "b", "div")
    inner.ret(q="div")
    g.placeholder("a", I32, [])
    g.placeholder("b", I32, [])
    g.node("call", "PartitionedCall", ["a", "b"], Tin=types(I32, I32), Tout=types(I32), f=Func("inner"))
    exe = g.executable(["a", "b"], ["call"])
    with pytest.raises(InvalidArgument, match="(?s)division by zero.*node 'div' \\(FloorDiv\\) in function 'inner'.*"
                                              "node 'call' \\(PartitionedCall\\)"):
        run(exe, np.int32(1), np.int32(0))


def test_control_flow_ops_need_a_graph():
    with pytest.raises(td.errors.FailedPreconditionError, match="only run inside a graph"):
        td.raw_ops.PartitionedCall(args=[td.constant(1.0)], Tin=[td.float32], Tout=[td.float32], f="f")


def test_unused_stateful_call_still_runs(capfd):
    g = GraphBuilder()
    f = g.function("log", [("a", F32)], [("b", F32)], stateful=True)
    f.node("p", "Print", ["a"])
    f.ret(b="a").control_ret("p")
    g.placeholder("x", F32, [])
    g.node("call", "StatefulPartitionedCall", ["x"], Tin=types(F32), Tout=types(F32), f=Func("log"))
    g.unary("Neg", "x", "y")
    exe = g.executable(["x"], ["y"])
    assert run(exe, np.float32(2.5))[0] == -2.5
    assert capfd.readouterr().err == "2.5\n"


def test_unused_pure_call_is_pruned():
    g = GraphBuilder()
    f = g.function("pure", [("a", F32)], [("b", F32)])
    f.unary("Exp", "a", "e")
    f.ret(b="e")
    g.placeholder("x", F32, [])
    g.node("call", "StatefulPartitionedCall", ["x"], Tin=types(F32), Tout=types(F32), f=Func("pure"))
    g.unary("Neg", "x", "y")
    exe = g.executable(["x"], ["y"])
    assert exe.num_nodes == 1


def test_control_dependency_on_an_argument_is_harmless():
    g = GraphBuilder()
    f = g.function("f", [("a", F32)], [("b", F32)])
    f.node("n", "Neg", ["a", "^a"])
    f.ret(b="n")
    assert run(g.function_executable("f"), np.float32(2))[0] == -2


def test_many_loop_iterations():
    exe = counting_loop(I64)
    i, _, _ = run(exe, np.int64(0), np.int64(20000), np.float64(0))
    assert i == 20000
