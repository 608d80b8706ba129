"""A traced function is held once, by the C++ graph builder: the Executable
is made from it directly, and the protobuf C++ writes on request describes the
same graph (loading it back computes the same values)."""

import numpy as np
import pytest

import treadle as td
from treadle import _core


def _traced(fn, *args):
    return td.function(fn).get_concrete_function(*args)


def _mixed(x, y):
    z = td.tanh(x) * 0.5 + y
    w = td.cond(td.reduce_sum(z) > 0.0, lambda: z * 2.0, lambda: z - 1.0)
    i = td.constant(0)
    _, acc = td.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a + w), (i, td.zeros_like(w)))
    return acc, td.reduce_max(z, axis=1)


ARGS = (td.constant(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)),
        td.constant(np.full((2, 3), 0.25, np.float32)))


def test_function_def_loads_back_and_computes_the_same():
    cf = _traced(_mixed, *ARGS)
    direct = [t.numpy() for t in td.nest.flatten(cf(*ARGS))]
    data = cf.library_graph_def().SerializeToString()
    exe = _core.Executable.from_function(data, cf.name)
    loaded = [t.numpy() for t in exe.run(list(ARGS))]
    for a, b in zip(direct, loaded):
        np.testing.assert_array_equal(a, b)
    x, y = (t.numpy() for t in ARGS)
    z = np.tanh(x) * 0.5 + y
    w = z * 2.0 if z.sum() > 0 else z - 1.0
    np.testing.assert_allclose(direct[0], 3 * w, rtol=1e-6)
    np.testing.assert_allclose(direct[1], z.max(axis=1), rtol=1e-6)


def test_function_def_lists_library_functions_once():
    cf = _traced(_mixed, *ARGS)
    names = [f.signature.name for f in cf.library_graph_def().library.function]
    assert names[0] == cf.name
    assert len(names) == len(set(names)) == 5  # the function, two branches, cond and body


def test_as_graph_def_runs_as_a_graph():
    graph = _traced(_mixed, *ARGS).graph
    gd = graph.as_graph_def()
    placeholders = [n.name for n in gd.node if n.op == "Placeholder"]
    assert placeholders == [t.op.name for t in graph.inputs]
    outputs = [t.name for t in graph.outputs]
    exe = _core.Executable(gd.SerializeToString(), placeholders, outputs)
    got = exe.run(list(ARGS))
    want = _traced(_mixed, *ARGS)(*ARGS)
    np.testing.assert_array_equal(got[0].numpy(), want[0].numpy())
    np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())


def test_node_attrs_are_the_canonical_ones():
    graph = _traced(lambda x: td.reduce_sum(x, axis=0), ARGS[0]).graph
    op = next(op for op in graph.get_operations() if op.type == "Sum")
    assert op.attrs["keep_dims"] is False  # the default, filled in once by the registry
    node = next(n for n in graph.as_graph_def().node if n.name == op.name)
    assert node.attr["keep_dims"].b is False and node.attr["keep_dims"].HasField("b")


def test_a_failed_op_takes_no_name():
    @td.function
    def f(x):
        with pytest.raises((TypeError, ValueError, td.errors.InvalidArgumentError)):
            td.matmul(x, td.constant([1.0, 2.0]))  # rank 1: refused while tracing
        return td.matmul(x, x, transpose_b=True)

    graph = f.get_concrete_function(ARGS[0]).graph
    assert [op.name for op in graph.get_operations() if op.type == "MatMul"] == ["MatMul"]


def test_set_shape_narrows_what_later_ops_see():
    @td.function(input_signature=[td.TensorSpec([None], td.float32)])
    def f(x):
        y = td.tanh(x)
        y.set_shape([3])
        z = y * 2.0
        assert z.shape.as_list() == [3]
        return z

    np.testing.assert_allclose(f(td.constant([0.0, 1.0, -1.0])).numpy(), 2 * np.tanh([0.0, 1.0, -1.0]), rtol=1e-6)
    # A shape set wrongly is an error when the graph runs, not a wrong answer.
    with pytest.raises(td.errors.InvalidArgumentError, match=r"set to \(3,\) \(Tensor.set_shape\)"):
        f(td.constant([0.0, 1.0]))


def test_a_function_returning_a_tensor_of_another_graph_is_refused():
    from treadle.framework.func_graph import FuncGraph
    from treadle.function.concrete_function import finish_function
    outer = FuncGraph("outer")
    with outer:
        x = outer.add_placeholder(td.float32, [2])
    inner = FuncGraph("inner")
    with pytest.raises(ValueError, match="not a tensor of its graph"):
        finish_function(inner, "inner_fn", [x])
